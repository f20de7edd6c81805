"""The solver contract, generated over every ``train_*`` in ``dualsolve.__all__``: a new
solver is covered without a test of its own. What each solver promises is read from its
description in the driver's registry (``dualsolve._driver.solvers()``): its losses, and so
whether it classifies or regresses.

Per solver: bad input gets a ValueError/TypeError naming the argument (never a crash);
degenerate but valid input (an all-zero row or column, float32 data with int64 indices,
non-canonical CSR) gives the answer of the clean input; the same seed gives bitwise the
same coef; a callback can stop the run or raise into the caller; a real SIGINT stops it
within a second, with n_jobs=2 too; a warm start from a converged model stops within 2
epochs; n_jobs=2 on one problem follows one thread to rounding and repeats its bits.
"""
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds
from dualsolve._driver import solvers
from solver_problems import interrupted, problem, train  # tests/ (see conftest.py)

TRAINERS = sorted(n for n in ds.__all__ if n.startswith("train_"))
REGISTRY = {s.function_name: s for s in solvers().values()}


def test_every_trainer_is_described_and_covered():
    """The contract covers as many solvers as __all__ has train_* names, each described."""
    assert len(TRAINERS) == 24
    assert sorted(REGISTRY) == TRAINERS


def solution(m):
    return m.coef if m.coef.size else m.dual


# ---------------------------------------------------------------------------------------
# bad input: a clear error naming the argument


BAD = {
    "nan in X": (lambda X, y: (_with(X, 0, 0, np.nan), y), ValueError, "X contains NaN"),
    "inf in X": (lambda X, y: (_with(X, 1, 2, np.inf), y), ValueError, "X contains NaN"),
    "nan in y": (lambda X, y: (X, _set(y, 3, np.nan)), ValueError, "y contains NaN"),
    "inf in y": (lambda X, y: (X, _set(y, 3, np.inf)), ValueError, "y contains NaN"),
    "short y": (lambda X, y: (X, y[:-1]), ValueError, "y has 119 labels but X has 120 rows"),
    "no rows": (lambda X, y: (X[:0], y[:0]), ValueError, "X has no rows"),
}


def _with(X, i, j, v):
    A = X.toarray()
    A[i, j] = v
    return sp.csr_matrix(A)


def _set(y, i, v):
    y = y.copy()
    y[i] = v
    return y


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("name", TRAINERS)
def test_bad_data(name, case):
    X, y, loss = problem(name)
    make, exc, fragment = BAD[case]
    Xb, yb = make(X, y)
    with pytest.raises(exc, match=fragment):
        train(name, Xb, yb, loss=loss)


BAD_PARAMS = {
    "lam": (-1.0, ValueError), "tol": (-1e-3, ValueError), "max_epochs": (-1, ValueError),
    "seed": ("7", TypeError), "callback": (5, TypeError), "n_jobs": (0, ValueError),
}


@pytest.mark.parametrize("param", sorted(BAD_PARAMS))
@pytest.mark.parametrize("name", TRAINERS)
def test_bad_common_parameter(name, param):
    X, y, loss = problem(name)
    value, exc = BAD_PARAMS[param]
    with pytest.raises(exc, match=f"^{param} must be"):
        train(name, X, y, loss=loss, **{param: value})


@pytest.mark.parametrize("name", TRAINERS)
def test_one_class_is_an_error_for_a_classifier(name):
    X, y, loss = problem(name)
    if REGISTRY[name].task(loss, {}) == "regression":
        pytest.skip("a regression solver: any real targets are fine")
    with pytest.raises(ValueError, match="y has one class only"):
        train(name, X, np.ones_like(y), loss=loss)


# ---------------------------------------------------------------------------------------
# degenerate but valid input: the answer of the clean input


def _close(a, b, name):
    scale = max(np.abs(b).max(), 1e-12)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-6 * scale, err_msg=name)


@pytest.mark.parametrize("name", TRAINERS)
def test_all_zero_row_and_column(name):
    """An all-zero row and an all-zero column are valid input: a finite model, and zero
    weight on the empty column (no loss term reaches it, and every solver's iterate stays
    where its gradients and the L2 term put it)."""
    X, y, loss = problem(name)
    A = X.toarray()
    A[:, 5] = 0.0
    A[7, :] = 0.0
    m = train(name, sp.csr_matrix(A), y, loss=loss, max_epochs=50)
    values = solution(m)
    assert np.isfinite(values).all(), name
    if m.coef.size:
        assert m.coef[5] == 0.0, name


@pytest.mark.parametrize("name", TRAINERS)
def test_float32_int64_and_noncanonical_csr(name):
    X, y, loss = problem(name)
    ref = train(name, X, y, loss=loss, max_epochs=5, tol=0.0, seed=3)
    X32 = sp.csr_matrix(X, dtype=np.float32)
    X32.indices = X32.indices.astype(np.int64)
    X32.indptr = X32.indptr.astype(np.int64)
    m32 = train(name, X32, y, loss=loss, max_epochs=5, tol=0.0, seed=3)
    values32 = solution(m32)
    assert np.isfinite(values32).all(), name
    # unsorted columns within the rows: the same matrix, the same iterates (to rounding)
    perm = X.copy()
    for i in range(perm.shape[0]):
        s, e = perm.indptr[i], perm.indptr[i + 1]
        perm.indices[s:e] = perm.indices[s:e][::-1]
        perm.data[s:e] = perm.data[s:e][::-1]
    perm.has_sorted_indices = False
    mp = train(name, perm, y, loss=loss, max_epochs=5, tol=0.0, seed=3)
    _close(solution(mp), solution(ref), name)


@pytest.mark.parametrize("name", TRAINERS)
def test_x_loaded_from_a_pickle_file(name, tmp_path):
    """``pickle.load`` gives a large array from a file on a ``bytes`` object, writeable for
    old pickles' sake, which numpy never makes writeable again once it is read-only: the
    driver must not lock it for the run (it did, and every solve ended in a ValueError)."""
    X, y, loss = problem(name, n=1500)
    with open(tmp_path / "X.pkl", "wb") as f:
        pickle.dump(X, f, protocol=4)
    with open(tmp_path / "X.pkl", "rb") as f:
        Xp = pickle.load(f)
    if not (isinstance(Xp.data.base, bytes) and Xp.data.flags.writeable):
        pytest.skip("this NumPy copies a pickle's large arrays")
    ref = train(name, X, y, loss=loss, max_epochs=2, tol=0.0, seed=3)
    m = train(name, Xp, y, loss=loss, max_epochs=2, tol=0.0, seed=3)
    assert solution(m).tobytes() == solution(ref).tobytes(), name
    assert Xp.data.flags.writeable and X.data.flags.writeable, name


# ---------------------------------------------------------------------------------------
# the run itself


@pytest.mark.parametrize("name", TRAINERS)
def test_same_seed_same_coef(name):
    X, y, loss = problem(name)
    a = train(name, X, y, loss=loss, max_epochs=4, tol=0.0, seed=11)
    b = train(name, X, y, loss=loss, max_epochs=4, tol=0.0, seed=11)
    assert solution(a).tobytes() == solution(b).tobytes(), name


@pytest.mark.parametrize("name", TRAINERS)
def test_callback_stops_the_run(name):
    X, y, loss = problem(name)
    epochs = []

    def cb(info):
        epochs.append(info["epoch"])
        return info["epoch"] >= 2

    m = train(name, X, y, loss=loss, max_epochs=50, tol=0.0, callback=cb)
    assert epochs == [0, 1, 2], name
    assert m.stop_reason == "callback" and not m.converged and m.n_epochs == 2, name
    assert len(m.history) == 3 and list(m.history["epoch"]) == [0, 1, 2], name


@pytest.mark.parametrize("name", TRAINERS)
def test_a_callback_exception_reaches_the_caller(name):
    X, y, loss = problem(name)

    class Stop(Exception):
        pass

    def cb(info):
        if info["epoch"] == 1:
            raise Stop("from the callback")

    with pytest.raises(Stop, match="from the callback"):
        train(name, X, y, loss=loss, max_epochs=50, tol=0.0, callback=cb)


@pytest.mark.parametrize("name", TRAINERS)
def test_stop_reason_and_converged_agree(name):
    """Ending on the budget: stop_reason "max_epochs", converged False, and a warning with
    the criterion reached, unless tol = 0 asked for the whole budget."""
    X, y, loss = problem(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.ConvergenceWarning)
        m = getattr(ds, name)(X, y, loss=loss, max_epochs=3, tol=0.0)
    assert m.stop_reason == "max_epochs" and m.converged is False and m.n_epochs == 3, name
    with pytest.warns(ds.ConvergenceWarning, match=f"train_{name[6:]} stopped at max_epochs=3 "
                                                   "before its criterion held"):
        m = getattr(ds, name)(X, y, loss=loss, max_epochs=3, tol=1e-14)
    assert m.stop_reason == "max_epochs", name


@pytest.mark.parametrize("name", TRAINERS)
def test_warm_start_from_a_converged_model_stops_within_two_epochs(name):
    """A model that met tol, warm-started at the same tol, meets it again within 2 epochs.
    tol is 1e-3, or 1e-2 / 1e-1 for a solver that cannot reach 1e-3 here (a constant-step
    SGD baseline)."""
    X, y, loss = problem(name)
    for tol in (1e-3, 1e-2, 1e-1):
        first = train(name, X, y, loss=loss, tol=tol, max_epochs=20000)
        if first.stop_reason == "converged":
            break
    assert first.stop_reason == "converged", (name, first.stop_reason, first.history[-1])
    again = train(name, X, y, loss=loss, tol=tol, max_epochs=20000, warm_start=first)
    assert again.stop_reason == "converged" and again.n_epochs <= 2, (name, again.n_epochs)


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize("name", TRAINERS)
def test_sigint_stops_within_a_second(name, n_jobs):
    """A real SIGINT while the loop runs (0.3 s after the report of epoch 0, so that the
    set-up, e.g. a Gram matrix, is over): KeyboardInterrupt within 1 s, carrying the
    partial model (stop_reason "interrupted"); with n_jobs=2 too (X has 400,000 nonzeros:
    the one-problem passes run in threads)."""
    from dualsolve import _threads
    if n_jobs > 1 and _threads.effective_n_jobs(n_jobs) < 2:
        pytest.skip("one core here: n_jobs=2 would run one thread")
    X, y, loss = problem(name, n=4000, d=200)
    exc, waited = interrupted(lambda cb: train(name, X, y, loss=loss, tol=0.0,
                                               max_epochs=2**31 - 1, callback=cb,
                                               n_jobs=n_jobs))
    assert waited < 1.0, (name, waited)
    model = getattr(exc, "model", None)
    assert model is not None and model.stop_reason == "interrupted", name


@pytest.mark.parametrize("name", TRAINERS)
def test_two_threads_follow_one_thread(name):
    """n_jobs=2 on one problem of 400,000 nonzeros (every one-problem pass in threads), 5
    epochs: the objective of every epoch is one thread's to rounding, and a second n_jobs=2
    run gives the same bits (no solver's passes here depend on timing: the rows are not
    nearly orthogonal). The certified optima of one and two threads: tests/test_threads*.py."""
    from dualsolve import _threads
    if _threads.effective_n_jobs(2) < 2:
        pytest.skip("one core here: n_jobs=2 would run one thread")
    X, y, loss = problem(name, n=4000, d=200)
    one = train(name, X, y, loss=loss, tol=0.0, max_epochs=5)
    two, again = (train(name, X, y, loss=loss, tol=0.0, max_epochs=5, n_jobs=2)
                  for _ in range(2))
    assert two.params["n_jobs"] == 2 and two.n_epochs == one.n_epochs == 5, name
    P1, P2 = one.history["primal"], two.history["primal"]
    scale = np.nanmax(np.abs(P1))
    np.testing.assert_allclose(P2, P1, rtol=1e-9, atol=1e-12 * scale, err_msg=name)
    G1, G2 = one.history["gap"], two.history["gap"]        # the certificates too
    assert np.array_equal(np.isfinite(G1), np.isfinite(G2)), name
    np.testing.assert_allclose(G2[np.isfinite(G2)], G1[np.isfinite(G1)], rtol=1e-6,
                               atol=1e-9 * scale, err_msg=name)
    assert np.array_equal(solution(again), solution(two)), name
