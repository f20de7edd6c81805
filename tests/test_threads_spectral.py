"""The spectral solvers with n_jobs: each epoch's losses at w (rows apart) and its
X^T (lambda * phi'(X w)) pass (SOREL's and LSVRG's anchor, Prospect's and SGD's
certificate; blocks of rows, dualsolve/_core/blocks.pxd) in threads, the steps serial.
One thread's certified optimum, and the same bits on every run."""
import warnings

import numpy as np
import pytest

import dualsolve as ds
from test_threads import _blocks, _fingerprint, _sparse_problem, _team_of_one

N, D = 20000, 20_000            # 300,000 nonzeros: over the blocks' 2^18


@pytest.fixture(scope="module")
def problem():
    return _sparse_problem(N, D, seed=6)


@pytest.mark.parametrize("spectrum", ["superquantile", "erm"])
def test_sorel_in_threads_reaches_the_certified_optimum_of_one(spectrum, problem):
    X, y = problem
    kw = dict(loss="logistic", tol=1e-6, spectrum=spectrum)
    one = ds.train_sorel(X, y, **kw)
    runs = [ds.train_sorel(X, y, n_jobs=2, **kw) for _ in range(2)]
    two = runs[0]
    assert one.converged and two.converged
    F1, F2 = one.history["primal"][-1], two.history["primal"][-1]
    assert F2 >= F1 - one.history["gap"][-1] - 1e-15
    assert F1 >= F2 - two.history["gap"][-1] - 1e-15
    assert _fingerprint(runs[1]) == _fingerprint(two) and runs[1].n_epochs == two.n_epochs


def test_lsvrg_in_threads_follows_one_thread(problem):
    """LSVRG (no certificate at these settings within a few epochs): the same bits on
    every run, and one thread's iterates to rounding."""
    X, y = problem
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.ConvergenceWarning)
        one = ds.train_lsvrg(X, y, loss="logistic", max_epochs=20)
        runs = [ds.train_lsvrg(X, y, loss="logistic", max_epochs=20, n_jobs=2)
                for _ in range(2)]
    assert _fingerprint(runs[0]) == _fingerprint(runs[1])
    np.testing.assert_allclose(runs[0].coef, one.coef, rtol=1e-9,
                               atol=1e-12 * np.abs(one.coef).max())


def test_a_team_of_one_runs_every_anchor_block(tmp_path, problem):
    if not _blocks():
        pytest.skip("one core or a serial build: n_jobs=2 runs one block")
    stop, fingerprint = _team_of_one(
        tmp_path, N, D, 6, "ds.train_sorel(X, y, loss='logistic', tol=1e-6, n_jobs=2)")
    X, y = problem
    two = ds.train_sorel(X, y, loss="logistic", tol=1e-6, n_jobs=2)
    assert stop == "converged"
    assert fingerprint == _fingerprint(two)


@pytest.mark.parametrize("name", ["train_prospect", "train_spectral_sgd"])
def test_baselines_in_threads_take_one_threads_steps(name, problem):
    """Prospect's and SGD's iterates do not use the threaded pass's X^T (...) (only the
    certificate does) and the losses are each row's own: one thread's coef bit for bit,
    its certificates to rounding."""
    X, y = problem
    train = getattr(ds, name)
    kw = dict(loss="logistic", max_epochs=16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.ConvergenceWarning)
        one = train(X, y, **kw)
        two = train(X, y, n_jobs=2, **kw)
    assert two.params["n_jobs"] == 2 and two.n_epochs == one.n_epochs == 16
    assert _fingerprint(two) == _fingerprint(one)
    np.testing.assert_array_equal(two.history["primal"], one.history["primal"])
    checked = np.isfinite(one.history["gap"])
    assert checked.sum() == 3 and np.array_equal(checked, np.isfinite(two.history["gap"]))
    np.testing.assert_allclose(two.history["gap"][checked], one.history["gap"][checked],
                               rtol=1e-12)
    np.testing.assert_allclose(two.dual, one.dual, rtol=0, atol=0)


def test_sorel_batches_in_threads_are_the_serial_batch_steps(problem):
    """A batch of 512 rows (7,680 nonzeros, over the threshold) steps in two threads: its
    features caught up and stepped by ranges of features (each feature's updates in the
    batch's order), its margins by rows. The same bits as the batch stepped on one thread
    (the threshold out of reach), with the same n_jobs for the anchor's blocks."""
    from dualsolve._core import parallel
    X, y = problem
    kw = dict(loss="logistic", batch_size=512, max_epochs=8, tol=0.0, n_jobs=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.ConvergenceWarning)
        threaded = ds.train_sorel(X, y, **kw)
        old = parallel._batch_min_nnz(10**15)
        try:
            serial = ds.train_sorel(X, y, **kw)
        finally:
            parallel._batch_min_nnz(old)
        one = ds.train_sorel(X, y, **dict(kw, n_jobs=1))
    assert _fingerprint(threaded) == _fingerprint(serial)
    np.testing.assert_array_equal(threaded.history["primal"], serial.history["primal"])
    np.testing.assert_allclose(threaded.history["primal"], one.history["primal"], rtol=1e-9)
