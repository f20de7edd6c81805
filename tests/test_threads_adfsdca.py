"""dfSDCA and adfSDCA with n_jobs: each check's pass over X in blocks of rows
(dualsolve/_core/blocks.pxd), the steps serial. The certified optimum of one thread, the
same bits on every run, and one thread's iterates (the check only reads them)."""
import numpy as np
import pytest

import dualsolve as ds
from test_threads import _fingerprint, _sparse_problem

N, D = 20000, 20_000            # 300,000 nonzeros: over the blocks' 2^18


@pytest.fixture(scope="module")
def problem():
    return _sparse_problem(N, D, seed=5)


@pytest.mark.parametrize("train", [ds.train_dfsdca, ds.train_adfsdca])
@pytest.mark.parametrize("kw", [dict(loss="logistic"), dict(loss="squared", weighted=True)])
def test_checks_in_threads_reach_the_certified_optimum_of_one(train, kw, problem):
    X, y = problem
    kw = dict(kw)
    if kw.pop("weighted", False):
        weight = np.random.default_rng(5).random(N) * 2.0
        weight[::6] = 0.0
        kw["sample_weight"] = weight
    one = train(X, y, tol=1e-9, **kw)
    runs = [train(X, y, tol=1e-9, n_jobs=2, **kw) for _ in range(2)]
    two = runs[0]
    assert one.converged and two.converged
    # the checks read the iterates and never write them: the steps are one thread's, and
    # the check's sums, in another order, stop at the same epoch here
    assert two.n_epochs == one.n_epochs
    np.testing.assert_array_equal(two.coef, one.coef)
    P1, P2 = one.history["primal"][-1], two.history["primal"][-1]
    assert abs(P2 - P1) <= 1e-12 * P1
    assert abs(two.history["gap"][-1] - one.history["gap"][-1]) <= 1e-12 * P1
    assert _fingerprint(runs[1]) == _fingerprint(two)
