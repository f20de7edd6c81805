"""The AUC solvers with n_jobs on one problem: each evaluation's pass over X (the scores,
each row its own, and the gradient in blocks of rows, dualsolve/_core/blocks.pxd) in
threads, the steps serial. The steps read only the evaluation's class means, whose sums
run in row order, so the iterates are one thread's bit for bit; the certificate agrees to
rounding and depends on n_jobs only."""
import types
import warnings

import numpy as np
import pytest

import dualsolve as ds
from test_threads import _blocks, _fingerprint, _sparse_problem, _team_of_one

N, D = 20000, 20_000            # 300,000 nonzeros: over the blocks' 2^18
SOLVERS = ["train_ppd_sg", "train_ppd_adagrad", "train_pga", "train_solam"]


@pytest.fixture(scope="module")
def problem():
    return _sparse_problem(N, D, seed=8)


def _fit(name, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.ConvergenceWarning)
        return getattr(ds, name)(X, y, lam=1e-4, max_epochs=6, tol=0.0, **kw)


def _certificates(model):
    """The history's certificates as a model-like object for _fingerprint."""
    return types.SimpleNamespace(coef=model.history["gap"])


@pytest.mark.parametrize("name", SOLVERS)
def test_evaluations_in_threads_keep_one_threads_iterates(name, problem):
    X, y = problem
    one = _fit(name, X, y)
    runs = [_fit(name, X, y, n_jobs=2) for _ in range(2)]
    two = runs[0]
    assert two.params["n_jobs"] == 2 and two.n_epochs == one.n_epochs == 6
    assert _fingerprint(two) == _fingerprint(one)
    np.testing.assert_array_equal(two.history["primal"], one.history["primal"])
    checked = np.isfinite(one.history["gap"])
    assert checked.sum() >= 2 and np.array_equal(checked, np.isfinite(two.history["gap"]))
    np.testing.assert_allclose(two.history["gap"][checked], one.history["gap"][checked],
                               rtol=1e-10)
    assert _fingerprint(_certificates(runs[1])) == _fingerprint(_certificates(two))


def test_a_team_of_one_gives_the_two_blocks_certificates(tmp_path, problem):
    if not _blocks():
        pytest.skip("one core or a serial build: n_jobs=2 runs one block")
    fit = ("(lambda m: __import__('types').SimpleNamespace(stop_reason=m.stop_reason, "
           "coef=m.history['gap']))(ds.train_solam(X, y, lam=1e-4, max_epochs=6, tol=0.0, "
           "n_jobs=2))")
    stop, fingerprint = _team_of_one(tmp_path, N, D, 8, fit)
    X, y = problem
    two = _fit("train_solam", X, y, n_jobs=2)
    assert stop == two.stop_reason == "max_epochs"
    assert fingerprint == _fingerprint(_certificates(two))


def test_the_evaluation_in_blocks_is_one_threads_to_rounding(problem):
    """auc_evaluate_blocks itself: two blocks give one thread's scores' statistics bit for
    bit (row order) and its gradient to rounding; a second call repeats its bits."""
    from dualsolve.auc import _ppd
    X, y = problem
    w = np.random.default_rng(1).standard_normal(D)
    args = (X.data, X.indices, X.indptr, D, y, w, 1e-4)
    one = _ppd.evaluate(*args)
    two, again = (_ppd.evaluate(*args, n_threads=2) for _ in range(2))
    assert one["blocks"] == 1 and two["blocks"] == (2 if _blocks() else 1)
    for key in ("J", "pairwise", "mean_pos", "mean_neg", "vnorm2"):
        assert two[key] == one[key], key
    np.testing.assert_allclose(two["grad"], one["grad"], rtol=1e-12,
                               atol=1e-15 * np.abs(one["grad"]).max())
    np.testing.assert_allclose(two["measure"], one["measure"], rtol=1e-12)
    np.testing.assert_array_equal(again["grad"], two["grad"])
    reference = X.T @ np.where(y > 0, 2 * np.mean(y < 0) / N * (X @ w - one["mean_pos"]
                                                                - 1 - (one["mean_neg"]
                                                                       - one["mean_pos"])),
                               2 * np.mean(y > 0) / N * (X @ w - one["mean_neg"] + 1
                                                         + (one["mean_neg"]
                                                            - one["mean_pos"]))) + 1e-4 * w
    np.testing.assert_allclose(two["grad"], reference, rtol=1e-9,
                               atol=1e-12 * np.abs(reference).max())
