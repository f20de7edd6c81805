"""dfSDCA and adfSDCA with n_jobs: each check's pass over X in blocks of rows
(dualsolve/_core/blocks.pxd), the steps serial. The certified optimum of one thread, the
same bits on every run, and one thread's iterates (the check only reads them). Mini-batch
adfSDCA's per-row work (margins, residues, weights, the margins' update through the CSC
copy) by the same blocks: one thread's iterates to the bit."""
import numpy as np
import pytest

import dualsolve as ds
from test_threads import _blocks, _fingerprint, _row_weights, _sparse_problem, _team_of_one

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
        kw["sample_weight"] = _row_weights(N, 5, 6)
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


@pytest.mark.parametrize("batch_size,sampling", [(8, "alg3"), (64, "systematic"),
                                                 (500, "alg3")])
@pytest.mark.parametrize("weighted", [False, True])
def test_minibatches_in_threads_are_one_threads_iterates(batch_size, sampling, weighted,
                                                         problem):
    """Every row's margin, residue and weight is computed as on one thread (each margin's
    additions in the serial order), and the sums stay serial: the same bits."""
    X, y = problem
    kw = dict(loss="logistic", variant="exact", batch_size=batch_size,
              batch_sampling=sampling, tol=0.0, max_epochs=1,
              sample_weight=_row_weights(N, 5, 6) if weighted else None)
    one = ds.train_adfsdca(X, y, **kw)             # tol = 0: the whole budget
    two = ds.train_adfsdca(X, y, n_jobs=2, **kw)
    np.testing.assert_array_equal(two.coef, one.coef)
    np.testing.assert_array_equal(two.dual, one.dual)
    assert one.coef.any()


#: rows of 150 nonzeros: an epoch's n / b iterations of O(n) each stay short
WIDE_ROWS = dict(n=2000, d=20_000, seed=5, per_row=150)
MB_FIT = dict(loss="squared", variant="exact", batch_size=16, tol=1e-5)


def test_minibatches_in_threads_reach_the_certified_optimum_of_one():
    X, y = _sparse_problem(**WIDE_ROWS)
    assert X.nnz >= 2 ** 18
    one = ds.train_adfsdca(X, y, **MB_FIT)
    two = ds.train_adfsdca(X, y, n_jobs=2, **MB_FIT)
    assert one.converged and two.converged
    np.testing.assert_array_equal(two.coef, one.coef)
    assert two.history["gap"][-1] <= 1e-5 * two.history["primal"][-1]


def test_a_team_of_one_runs_every_minibatch_block(tmp_path):
    if not _blocks():
        pytest.skip("one core or a serial build: n_jobs=2 runs one block")
    X, y = _sparse_problem(**WIDE_ROWS)
    fit = (f"ds.train_adfsdca(X, y, n_jobs=2, **{MB_FIT!r})")
    stop, fingerprint = _team_of_one(tmp_path, fit=fit, **WIDE_ROWS)
    one = ds.train_adfsdca(X, y, **MB_FIT)
    assert stop == "converged"
    assert fingerprint == _fingerprint(one)
