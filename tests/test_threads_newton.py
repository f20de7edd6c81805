"""Newton on one problem in threads (dualsolve/newton/_newton.pyx, "the team"): the passes
over X in blocks of rows and CG's sweeps in ranges of features reach the certified optimum
of one thread, and the result depends on the block count only: the same bits on every
run and with a team of one thread."""
import numpy as np
import pytest

import dualsolve as ds
from dualsolve.newton import _newton
from solver_problems import interrupted  # tests/ (see conftest.py)
from test_threads import _blocks, _fingerprint, _row_weights, _sparse_problem, _team_of_one


@pytest.fixture
def threads_on_small_x():
    """Threads for X of any size (they start at 2^18 nonzeros)."""
    old = _newton._threads_min_nnz(0)
    yield
    _newton._threads_min_nnz(old)


# narrow X (300 columns: the explicit Hessian's steps may take over from CG) and wide X
@pytest.mark.parametrize("d", [300, 200_000])
@pytest.mark.parametrize("kw", [dict(loss="logistic"), dict(loss="squared_hinge"),
                                dict(loss="logistic", fit_intercept=True),
                                dict(loss="logistic", C=1000.0), dict(loss="squared", C=10.0),
                                # (the smoothing's continuation certifies less: tol 1e-6)
                                dict(loss="hinge", tol=1e-6)])
def test_newton_in_threads_reaches_the_certified_optimum_of_one(kw, d, threads_on_small_x):
    if kw["loss"] == "hinge" and d == 300:
        pytest.skip("the hinge's continuation stalls near 4e-4 on these narrow rows, one "
                    "thread as well (the smoothing's limit, not the threads')")
    X, y = _sparse_problem(2000, d)
    kw = dict(kw)
    tol = kw.pop("tol", 1e-9)
    one = ds.train_newton(X, y, tol=tol, **kw)
    runs = [ds.train_newton(X, y, tol=tol, n_jobs=2, **kw) for _ in range(2)]
    two = runs[0]
    assert one.converged and two.converged
    P1, P2 = one.history["primal"][-1], two.history["primal"][-1]
    D1, D2 = P1 - one.history["gap"][-1], P2 - two.history["gap"][-1]
    # each certificate brackets P*: both primal values lie above the other's dual bound
    assert P2 >= D1 - 1e-15 and P1 >= D2 - 1e-15
    assert abs(P2 - P1) <= tol * P1
    np.testing.assert_allclose(two.coef, one.coef, rtol=0, atol=1e-3 * np.abs(one.coef).max())
    # the same block count: the same iterates, bit for bit
    assert _fingerprint(runs[1]) == _fingerprint(two)
    assert runs[1].intercept == two.intercept and runs[1].n_epochs == two.n_epochs


def test_weighted_newton_in_threads(threads_on_small_x):
    """Row weights, zeros included, split across the blocks like any row."""
    X, y = _sparse_problem(2000, 200_000, seed=1)
    weight = _row_weights(X.shape[0], 1, 7, scale=3.0)
    one = ds.train_newton(X, y, tol=1e-9, sample_weight=weight)
    two = ds.train_newton(X, y, tol=1e-9, sample_weight=weight, n_jobs=2)
    assert one.converged and two.converged
    P1, P2 = one.history["primal"][-1], two.history["primal"][-1]
    assert P2 >= P1 - one.history["gap"][-1] - 1e-15
    assert P1 >= P2 - two.history["gap"][-1] - 1e-15


def test_a_team_of_one_runs_every_block(tmp_path):
    """OMP_THREAD_LIMIT=1 leaves n_jobs=2 one thread, which runs both blocks: the model is
    the two threads' bit for bit."""
    if not _blocks():
        pytest.skip("one core or a serial build: n_jobs=2 runs one block")
    stop, fingerprint = _team_of_one(
        tmp_path, 2000, 200_000, 0, "ds.train_newton(X, y, tol=1e-9, n_jobs=2)",
        setup="from dualsolve.newton import _newton; _newton._threads_min_nnz(0)")
    old = _newton._threads_min_nnz(0)
    try:
        X, y = _sparse_problem(2000, 200_000)
        two = ds.train_newton(X, y, tol=1e-9, n_jobs=2)
    finally:
        _newton._threads_min_nnz(old)
    assert stop == "converged"
    assert fingerprint == _fingerprint(two)


def test_blocks_change_the_rounding_only(threads_on_small_x):
    """Two blocks sum in another order than one: the iterates differ in their last bits,
    so the test above compares two different computations (not one thread's twice)."""
    if not _blocks():
        pytest.skip("one core or a serial build: n_jobs=2 runs one block")
    X, y = _sparse_problem(2000, 200_000)
    one = ds.train_newton(X, y, tol=1e-9)
    two = ds.train_newton(X, y, tol=1e-9, n_jobs=2)
    assert _fingerprint(one) != _fingerprint(two)


def test_train_linear_hands_over_to_newton_in_threads(threads_on_small_x):
    """solver="auto" at a large C: SDCA's passes, then Newton's, both with n_jobs."""
    X, y = _sparse_problem(2000, 200_000, seed=2)
    one = ds.train_linear(X, y, C=1e4, tol=1e-8)
    two = ds.train_linear(X, y, C=1e4, tol=1e-8, n_jobs=2)
    assert one.converged and two.converged
    P1, P2 = one.history["primal"][-1], two.history["primal"][-1]
    assert abs(P2 - P1) <= 1e-8 * P1


def test_sigint_stops_newton_in_threads_within_a_second():
    X, y = _sparse_problem(20000, 200_000)          # 300,000 nonzeros: threads by default
    exc, waited = interrupted(lambda cb: ds.train_newton(X, y, C=1e6, tol=0.0,
                                                          max_epochs=2**31 - 1,
                                                          callback=cb, n_jobs=2))
    assert waited < 1.0, waited
    assert exc.model.stop_reason == "interrupted"
