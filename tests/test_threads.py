"""``n_jobs``: validated like every common parameter, resolved against the cores and the
OpenMP / threadpoolctl limits, and one-vs-rest classes in threads giving the model of
``n_jobs=1`` bit for bit, for every binary classifier; a callback, an exception or Ctrl-C
in one class stops them all."""
import subprocess
import sys
import warnings

import numpy as np
import pytest

import dualsolve as ds
from dualsolve import _threads
from dualsolve._core import losses, parallel
from dualsolve._driver import solvers
from solver_problems import interrupted, subprocess_env  # tests/ (see conftest.py)


def _quiet(train, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.ConvergenceWarning)
        return train(*args, **kw)


# ---------------------------------------------------------------------------------------
# the number of threads


@pytest.mark.parametrize("bad, exc", [(0, ValueError), (1.5, TypeError), ("2", TypeError),
                                      (True, TypeError)])
def test_bad_n_jobs_is_a_clear_error(bad, exc, three_classes):
    X, y = three_classes
    with pytest.raises(exc, match="^n_jobs must be"):
        ds.train_sdca(X, y, n_jobs=bad)


def test_n_jobs_resolves_against_the_limit():
    limit = _threads.thread_limit()
    assert 1 <= limit <= _threads.usable_cores()
    assert _threads.effective_n_jobs(None) == 1
    assert _threads.effective_n_jobs(1) == 1
    assert _threads.effective_n_jobs(-1) == limit
    assert _threads.effective_n_jobs(-2) == max(1, limit - 1)
    assert _threads.effective_n_jobs(-10**6) == 1
    assert _threads.effective_n_jobs(10**6) == limit      # never more than the cores


def _child(code, cwd, **env):
    """The words a child Python running ``code`` prints, with ``env`` added to its
    environment (run outside the checkout: there `import dualsolve` would find the source
    tree, whose modules may not be compiled)."""
    run = subprocess.run([sys.executable, "-c", code], env=subprocess_env(**env),
                         capture_output=True, text=True, cwd=cwd)
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def test_omp_num_threads_caps_n_jobs(tmp_path):
    """OMP_NUM_THREADS=1 (read by OpenMP at start-up, or by us without OpenMP): -1 and 8
    both mean one thread."""
    code = ("import dualsolve; from dualsolve import _threads as t; "
            "print(t.effective_n_jobs(-1), t.effective_n_jobs(8))")
    assert _child(code, tmp_path, OMP_NUM_THREADS="1") == ["1", "1"]


def test_core_round_trip_needs_two_threads(tmp_path):
    """The benchmarks' core-to-core round trip: a positive time with two threads, NaN (not
    a hang) when OpenMP gives a team of one."""
    _two_threads()
    trip = parallel.core_round_trip(2000)
    assert np.isfinite(trip) and trip > 0.0
    code = "from dualsolve._core import parallel; print(parallel.core_round_trip(2000))"
    assert _child(code, tmp_path, OMP_THREAD_LIMIT="1") == ["nan"]


def test_region_cost_needs_two_threads(tmp_path):
    """A parallel region's start and join: a positive time with two threads, NaN when
    OpenMP gives a team of one."""
    _two_threads()
    cost = parallel.region_cost(2000)
    assert np.isfinite(cost) and cost > 0.0
    code = "from dualsolve._core import parallel; print(parallel.region_cost(2000))"
    assert _child(code, tmp_path, OMP_THREAD_LIMIT="1") == ["nan"]


def test_a_team_smaller_than_asked_still_checks_every_row(tmp_path):
    """OMP_THREAD_LIMIT=1 leaves n_jobs=2 a team of one thread (as a build without OpenMP
    or a nested region does): the exact gap check must still sum every slice of the rows,
    giving the model of a full team bit for bit (it summed one slice and read the others'
    sums from uninitialised memory: wrong certificates, runs to max_epochs)."""
    code = ("import hashlib, dualsolve as ds; X, y = ds.datasets.load('heart_scale'); "
            "m = ds.train_sdca(X, y, tol=1e-10, n_jobs=2); "
            "print(m.stop_reason, m.n_epochs, hashlib.md5(m.coef.tobytes()).hexdigest())")
    out = _child(code, tmp_path, OMP_THREAD_LIMIT="1")
    import hashlib
    X, y = ds.datasets.load("heart_scale")
    m = ds.train_sdca(X, y, tol=1e-10, n_jobs=2)
    assert m.stop_reason == "converged"
    assert out == ["converged", str(m.n_epochs), hashlib.md5(m.coef.tobytes()).hexdigest()]


def test_a_team_of_one_ends_the_probing_pass_alone(tmp_path):
    """OMP_THREAD_LIMIT=1 with n_jobs=2 on wide rows: each pass probes, steps its serial
    share, finds a team of one and ends the pass on the same thread, in the same order, so
    the model is one thread's bit for bit (logistic: no shrinking to move rows)."""
    code = ("import hashlib, test_threads as t, dualsolve as ds; "
            "X, y = t._sparse_problem(4000, 200_000); "
            "m = ds.train_sdca(X, y, tol=1e-10, n_jobs=2); "
            "print(m.stop_reason, m.n_epochs, m.params['threaded_epochs'], "
            "hashlib.md5(m.coef.tobytes()).hexdigest())")
    out = _child(code, tmp_path, OMP_THREAD_LIMIT="1")
    import hashlib
    X, y = _sparse_problem(4000, 200_000)
    m = ds.train_sdca(X, y, tol=1e-10)
    assert m.stop_reason == "converged"
    assert out == ["converged", str(m.n_epochs), "0", hashlib.md5(m.coef.tobytes()).hexdigest()]


def test_threadpoolctl_limit_caps_n_jobs():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not parallel.openmp_enabled():
        pytest.skip("built without OpenMP: threadpoolctl has no OpenMP runtime of ours to limit")
    with threadpoolctl.threadpool_limits(1, user_api="openmp"):
        assert _threads.effective_n_jobs(-1) == 1


def test_model_records_the_threads(three_classes):
    X, y = three_classes
    m = _quiet(ds.train_sdca, X, y, n_jobs=-1, max_epochs=3)
    assert m.params["n_jobs"] == _threads.thread_limit()
    b = _quiet(ds.train_sdca, X, np.where(y == "a", 1, -1), max_epochs=3)
    assert b.params["n_jobs"] == 1


# ---------------------------------------------------------------------------------------
# one-vs-rest classes in threads


BINARY = sorted(name for name, s in solvers().items()
                if s.task(s.losses[0], {"soft_labels": False}) == "binary")


@pytest.mark.parametrize("name", BINARY)
def test_classes_in_threads_give_the_serial_model(name, three_classes):
    X, y = three_classes
    train = getattr(ds, "train_" + name)
    one = _quiet(train, X, y, max_epochs=20, seed=3)
    two = _quiet(train, X, y, max_epochs=20, seed=3, n_jobs=2)
    assert two.coef.tobytes() == one.coef.tobytes(), name
    if one.dual is not None:
        assert two.dual.tobytes() == one.dual.tobytes(), name
    assert two.params["class_stop_reasons"] == one.params["class_stop_reasons"]
    assert two.params["class_n_epochs"] == one.params["class_n_epochs"]
    np.testing.assert_array_equal(two.history["class"], one.history["class"])
    np.testing.assert_array_equal(two.history["gap"], one.history["gap"])


def test_a_callback_stop_in_one_class_stops_every_class(three_classes):
    X, y = three_classes

    def cb(info):
        return info["class"] == 0 and info["epoch"] == 2

    m = ds.train_sdca(X, y, callback=cb, tol=0.0, max_epochs=10**6, n_jobs=2)
    assert m.stop_reason == "callback"
    reasons = m.params["class_stop_reasons"]
    assert reasons[0] == "callback"
    # the class beside it stopped at its next epoch; a class not started has no model
    assert all(r in ("callback", None) for r in reasons[1:]), reasons


def test_a_callback_exception_in_a_thread_reaches_the_caller(three_classes):
    X, y = three_classes
    last = {}

    class Stop(Exception):
        pass

    def cb(info):
        last[info["class"]] = info["epoch"]
        if info["class"] == 1 and info["epoch"] == 1:
            raise Stop("class 1")

    with pytest.raises(Stop, match="class 1"):
        ds.train_sdca(X, y, callback=cb, tol=0.0, max_epochs=10**5, n_jobs=2)
    assert last[1] == 1
    assert all(epoch < 10**5 for epoch in last.values()), last    # the others stopped too


def test_sigint_stops_classes_in_threads_within_a_second():
    rng = np.random.default_rng(0)
    import scipy.sparse as sp
    X = sp.random(4000, 200, density=0.2, random_state=1, format="csr")
    y = rng.integers(0, 3, 4000)
    exc, waited = interrupted(
        lambda cb: ds.train_sdca(X, y, tol=0.0, max_epochs=2**31 - 1, callback=cb, n_jobs=2),
        first=lambda info: info["epoch"] == 0 and info["class"] == 0)
    assert waited < 1.0, waited
    assert exc.model.stop_reason == "interrupted"
    assert set(exc.model.params["class_stop_reasons"]) <= {"interrupted", None}


# ---------------------------------------------------------------------------------------
# one SDCA problem in threads (dualsolve/sdca/_sdca.pyx: the exact checks and the resync in
# threads; the passes too on nearly orthogonal rows, "the threaded pass" and "the block
# pass")


def _sparse_problem(n, d, seed=0, per_row=15):
    """n rows of ``per_row`` random columns of d, labels from a random linear model."""
    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    cols = np.sort(rng.random((n, d)).argsort(axis=1)[:, :per_row] if d <= 1000 else
                   rng.integers(0, d, size=(n, per_row)), axis=1)
    X = sp.csr_matrix((rng.random(n * per_row), cols.ravel(), np.arange(0, n * per_row + 1,
                                                                        per_row)),
                      shape=(n, d))
    X.sum_duplicates()
    y = np.where(X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def _row_weights(n, seed, zero_every, scale=2.0):
    """Random row weights in [0, scale), every ``zero_every``-th row 0 (rows never drawn)."""
    weight = np.random.default_rng(seed).random(n) * scale
    weight[::zero_every] = 0.0
    return weight


def _int32_problem(n, d, seed=0):
    """_sparse_problem with int32 indices (the embed tests' cimported loops take those)."""
    X, y = _sparse_problem(n, d, seed)
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X, y


def _fingerprint(model):
    """The first 16 hex digits of the sha256 of ``model.coef``'s bytes."""
    import hashlib
    return hashlib.sha256(np.ascontiguousarray(model.coef).tobytes()).hexdigest()[:16]


def _team_of_one(cwd, n, d, seed, fit, setup="", per_row=15):
    """(stop reason, _fingerprint) of ``fit`` (a call's source on X, y of
    ``_sparse_problem(n, d, seed, per_row)``, e.g. "ds.train_svrg(X, y, n_jobs=2)") in a child
    whose OpenMP team is one thread: OMP_THREAD_LIMIT=1, and OMP_NUM_THREADS said, since a
    Dask cluster started in this process sets it to 1 in os.environ, which children
    inherit. ``setup``: statements run first (e.g. a private knob)."""
    code = ("import test_threads as t, dualsolve as ds; " + (setup + "; " if setup else "")
            + f"X, y = t._sparse_problem({n}, {d}, seed={seed}, per_row={per_row}); "
            f"m = {fit}; "
            "print(m.stop_reason, t._fingerprint(m))")
    stop, fingerprint = _child(code, cwd, OMP_THREAD_LIMIT="1", OMP_NUM_THREADS="2")
    return stop, fingerprint


def _blocks():
    """Whether n_jobs=2 gets two blocks here (two cores, an OpenMP build)."""
    return _threads.effective_n_jobs(2) > 1 and parallel.openmp_enabled()


# a small and a wide problem (d = 300 and 200,000 features)
@pytest.mark.parametrize("d", [300, 200_000])
@pytest.mark.parametrize("kw", [dict(loss="logistic"), dict(loss="squared_hinge"),
                                dict(loss="hinge"), dict(loss="logistic", fit_intercept=True),
                                dict(loss="squared_hinge", C=100.0)])
def test_two_threads_reach_the_certified_optimum_of_one(kw, d):
    X, y = _sparse_problem(2000, d)
    tol = 1e-8
    one = ds.train_sdca(X, y, tol=tol, max_epochs=100_000, **kw)
    two = ds.train_sdca(X, y, tol=tol, max_epochs=100_000, n_jobs=2, **kw)
    assert one.converged and two.converged
    if _threads.effective_n_jobs(2) < 2:
        pytest.skip("one core: n_jobs=2 runs one thread")
    P1, P2 = one.history["primal"][-1], two.history["primal"][-1]
    D1, D2 = P1 - one.history["gap"][-1], P2 - two.history["gap"][-1]
    # each certificate brackets P*: both primal values lie above the other's dual bound
    assert P2 >= D1 - 1e-15 and P1 >= D2 - 1e-15
    assert abs(P2 - P1) <= tol * P1
    # the model is consistent with its dual variables: coef = X^T dual / (lam n)
    lam = two.params["lam"]
    np.testing.assert_allclose(two.coef, X.T @ two.dual / (lam * X.shape[0]), rtol=1e-9,
                               atol=1e-12)
    # each reported dual is a lower bound of D(dual) from the formula (the checks certify
    # the incremental w, lowering D by the bound on its rounding drift)
    for m, D in ((one, D1), (two, D2)) if not kw.get("fit_intercept") else ():
        w_alpha = X.T @ m.dual / (lam * X.shape[0])
        exact = (-np.mean(losses.conjugate(kw["loss"], m.dual, y))
                 - 0.5 * lam * (w_alpha @ w_alpha))
        assert D <= exact + 1e-15 * m.params["p0"]


def _two_threads():
    if _threads.effective_n_jobs(2) < 2 or not parallel.openmp_enabled():
        pytest.skip("one core or a serial build: n_jobs=2 runs one thread")


def test_threaded_passes_run_on_nearly_orthogonal_rows_only():
    """The passes run in threads on sorted, nearly orthogonal rows; on coherent rows
    (a shared dense column) or unsorted indices they stay serial, and then the same seed
    and n_jobs give the same coef bit for bit."""
    _two_threads()
    X, y = _sparse_problem(4000, 200_000)
    assert ds.train_sdca(X, y, tol=1e-8, n_jobs=2).params["threaded_epochs"] > 0
    assert ds.train_sdca(X, y, tol=1e-8).params["threaded_epochs"] == 0
    shuffled = X.copy()
    first, second = shuffled.indptr[0], shuffled.indptr[1]
    shuffled.indices[first:second] = shuffled.indices[first:second][::-1].copy()
    shuffled.data[first:second] = shuffled.data[first:second][::-1].copy()
    shuffled.has_sorted_indices = False
    assert ds.train_sdca(shuffled, y, tol=1e-8, n_jobs=2).params["threaded_epochs"] == 0
    import scipy.sparse as sp
    coherent = sp.hstack([X, np.ones((X.shape[0], 1))], format="csr")
    a = ds.train_sdca(coherent, y, loss="squared_hinge", tol=1e-9, n_jobs=2, seed=5)
    b = ds.train_sdca(coherent, y, loss="squared_hinge", tol=1e-9, n_jobs=2, seed=5)
    assert a.params["threaded_epochs"] == 0
    assert a.coef.tobytes() == b.coef.tobytes() and a.n_epochs == b.n_epochs


@pytest.fixture
def threads_pay():
    """Sets the feature-owned pass's clock rule (THREADS_PAY) for a test, then restores it:
    1e300 keeps the threads on whatever this machine's cores cost, so a test of the
    threaded iterates does not depend on the hour."""
    from dualsolve.sdca import _sdca
    before = _sdca._threads_pay()
    yield _sdca._threads_pay
    _sdca._threads_pay(before)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_threaded_passes_keep_the_certificate(loss, threads_pay):
    """With threaded passes the iterates depend on timing; what holds is the documented
    guarantee: two runs with the same seed both certify tol, their primal values agree to
    tol, and each coef is X^T dual / (lam n)."""
    _two_threads()
    threads_pay(1e300)
    X, y = _sparse_problem(4000, 200_000)
    tol = 1e-9
    runs = [ds.train_sdca(X, y, loss=loss, tol=tol, n_jobs=2, seed=5) for _ in range(2)]
    for m in runs:
        assert m.converged and m.params["threaded_epochs"] > 0
        assert m.history["gap"][-1] <= tol * (m.history["primal"][-1] - m.history["gap"][-1])
        np.testing.assert_allclose(m.coef, X.T @ m.dual / (m.params["lam"] * X.shape[0]),
                                   rtol=1e-9, atol=1e-12)
    P = [m.history["primal"][-1] for m in runs]
    assert abs(P[0] - P[1]) <= tol * P[0]


def test_threaded_resync_is_the_serial_one():
    """w = X^T alpha / (lam n) summed by feature ranges in threads is the serial sum bit for
    bit: a solve certified at its warm start (no pass) returns the same coef either way."""
    _two_threads()
    X, y = _sparse_problem(4000, 200_000)
    start = ds.train_sdca(X, y, tol=1e-10, fit_intercept=True)
    one = ds.train_sdca(X, y, tol=1e-6, warm_start=start, fit_intercept=True)
    two = ds.train_sdca(X, y, tol=1e-6, warm_start=start, fit_intercept=True, n_jobs=2)
    assert one.n_epochs == two.n_epochs == 0
    assert one.coef.tobytes() == two.coef.tobytes() and one.intercept == two.intercept


def test_threaded_passes_give_way_where_one_thread_is_faster(threads_pay):
    """The feature-owned pass is timed against one thread's (its gain depends on how far
    apart the cores are): a probing pass steps an eighth of its rows on one thread, the
    next eighth in threads, and the rest the faster way; the first pass probes, and while
    the threads lose a pass probes again after 1, 2, 4, ... serial ones. Made to lose every
    comparison, a 16-pass solve probes at passes 1, 3, 6 and 11 (each partly threaded);
    made to win them, all 16 run in threads; both still reach the certified optimum of
    one thread."""
    _two_threads()
    X, y = _sparse_problem(4000, 200_000)
    budget = dict(tol=0.0, max_epochs=16, shrinking=False)
    threads_pay(0.0)
    assert ds.train_sdca(X, y, n_jobs=2, **budget).params["threaded_epochs"] == 4
    losing = ds.train_sdca(X, y, tol=1e-9, n_jobs=2)
    threads_pay(1e300)
    assert ds.train_sdca(X, y, n_jobs=2, **budget).params["threaded_epochs"] == 16
    winning = ds.train_sdca(X, y, tol=1e-9, n_jobs=2)
    one = ds.train_sdca(X, y, tol=1e-9)
    P1 = one.history["primal"][-1]
    for m in (losing, winning):
        assert m.converged and m.params["threaded_epochs"] > 0
        assert abs(m.history["primal"][-1] - P1) <= 1e-9 * P1
        # what the clock measured: threads' time per unit of work over one thread's
        assert m.params["threads_vs_one"] > 0.0
    assert one.params["threads_vs_one"] is None
    # a probe that sheds rows: the squared hinge shrinks, and the three parts of a probing
    # pass hand the active set on (every row stepped once a pass, none lost)
    threads_pay(0.0)
    hinge = ds.train_sdca(X, y, loss="squared_hinge", tol=1e-9, n_jobs=2)
    ref = ds.train_sdca(X, y, loss="squared_hinge", tol=1e-9)
    assert hinge.converged and hinge.params["threaded_epochs"] > 0
    assert abs(hinge.history["primal"][-1] - ref.history["primal"][-1]) <= (
        1e-9 * ref.history["primal"][-1])


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_focused_passes_run_in_the_threads_that_pay(loss, threads_pay):
    """The focused passes (``focus``) run feature-owned in the threads when the clock's
    last verdict keeps the whole passes there, and on one thread when it does not; either
    way the solve reaches one thread's certified optimum."""
    _two_threads()
    X, y = _sparse_problem(4000, 200_000)
    kw = dict(loss=loss, C=100.0, tol=1e-9)
    one = ds.train_sdca(X, y, **kw)
    P1 = one.history["primal"][-1]
    threads_pay(1e300)
    paying = ds.train_sdca(X, y, n_jobs=2, **kw)
    assert paying.params["threaded_focused_passes"] > 0
    threads_pay(0.0)
    losing = ds.train_sdca(X, y, n_jobs=2, **kw)
    assert losing.params["focused_passes"] > 0 and losing.params["threaded_focused_passes"] == 0
    for m in (paying, losing):
        assert m.converged
        assert abs(m.history["primal"][-1] - P1) <= 1e-9 * P1
        np.testing.assert_allclose(m.coef, X.T @ m.dual / (m.params["lam"] * X.shape[0]),
                                   rtol=1e-9, atol=1e-12)
    assert one.params["threaded_focused_passes"] == 0
    threads_pay(1e300)
    assert ds.train_sdca(X, y, n_jobs=2, focus=0.0, **kw).params["focused_passes"] == 0


def test_verbose_says_what_the_threads_did(capsys):
    """verbose=1 ends a timed threaded solve with a line on the clock's last reading; a
    solve on one thread prints none."""
    _two_threads()
    X, y = _sparse_problem(4000, 200_000)
    m = ds.train_sdca(X, y, tol=1e-6, n_jobs=2, verbose=1)
    out = capsys.readouterr().out
    assert f"threads: {m.params['threaded_epochs']} of {m.n_epochs} passes in 2 threads" in out
    assert f"{m.params['threads_vs_one']:.2f}x one thread's" in out
    ds.train_sdca(X, y, tol=1e-6, verbose=1)
    assert "threads:" not in capsys.readouterr().out


@pytest.mark.parametrize("verbose", [0, 1])
def test_wrapped_threaded_sdca_says_what_the_threads_did(verbose, capsys):
    """train_linear runs SDCA behind its own view of the monitor (the hand-over watch):
    the threads' line passes through it (it had no ``note`` and the solve raised)."""
    _two_threads()
    X, y = _sparse_problem(4000, 200_000)
    m = ds.train_linear(X, y, tol=1e-6, n_jobs=2, verbose=verbose)
    assert m.converged
    assert ("threads:" in capsys.readouterr().out) == bool(verbose)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_threads_on_coherent_rows_fall_back_and_converge(loss, threads_pay):
    """Forced onto a9a (coherence 0.45, where stale scores overshoot: the squared hinge's
    dual falls within 20 epochs), the solve still reaches the optimum of one thread: a check
    whose dual fell undoes the threaded passes since the last check and the rest is serial."""
    _two_threads()
    threads_pay(1e300)
    from dualsolve.sdca import _sdca
    X, y = ds.datasets.load("a9a")
    one = ds.train_sdca(X, y, loss=loss, tol=1e-8)
    before = _sdca._owned_limits((1e9, 1.0))
    try:
        two = ds.train_sdca(X, y, loss=loss, tol=1e-8, n_jobs=2)
    finally:
        _sdca._owned_limits(before)
    assert two.converged and two.params["threaded_epochs"] > 0
    P1, P2 = one.history["primal"][-1], two.history["primal"][-1]
    assert abs(P2 - P1) <= 1e-8 * P1
    np.testing.assert_allclose(two.coef, X.T @ two.dual / (two.params["lam"] * X.shape[0]),
                               rtol=1e-9, atol=1e-12)


def _short_rows(n=4000, d=300, seed=0):
    """Rows of unit norm sharing their 300 features (200 rows a feature, as TF-IDF text
    with a small vocabulary): too many rows a feature for feature-owned writes, few
    enough features for a copy of w per thread (the block pass)."""
    X, y = _sparse_problem(n, d, seed=seed)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1))).ravel()
    import scipy.sparse as sp
    return sp.diags(1.0 / norms) @ X, y


def test_block_passes_where_the_loss_dominates_the_step():
    """Short rows sharing their features: logistic at C = 1 (a step's curvature mostly the
    conjugate's, 4 against ||x||^2 C = 1) runs its passes in blocks, CoCoA+ with sigma' =
    2; the squared hinge (1/2 against 1) and logistic at C = 100 stay serial."""
    _two_threads()
    X, y = _short_rows()
    assert ds.train_sdca(X, y, tol=1e-8, n_jobs=2).params["threaded_epochs"] > 0
    assert ds.train_sdca(X, y, tol=1e-8, C=100.0, n_jobs=2).params["threaded_epochs"] == 0
    assert ds.train_sdca(X, y, loss="squared_hinge", tol=1e-8,
                         n_jobs=2).params["threaded_epochs"] == 0


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_block_passes_are_reproducible_and_reach_the_optimum_of_one(fit_intercept):
    """The block pass depends on the seed and the thread count only: two runs give the same
    coef bit for bit; it reaches the certified optimum of one thread, its coef is
    X^T dual / (lam n), and its dual never falls from one exact check to the next
    (sigma' = threads is CoCoA+'s safe choice)."""
    _two_threads()
    X, y = _short_rows()
    tol = 1e-9
    kw = dict(tol=tol, fit_intercept=fit_intercept, seed=3)
    one = ds.train_sdca(X, y, **kw)
    runs = [ds.train_sdca(X, y, n_jobs=2, **kw) for _ in range(2)]
    assert runs[0].params["threaded_epochs"] > 0
    assert runs[0].params["threaded_focused_passes"] > 0     # (blocks too)
    assert runs[0].coef.tobytes() == runs[1].coef.tobytes()
    assert runs[0].intercept == runs[1].intercept and runs[0].n_epochs == runs[1].n_epochs
    two = runs[0]
    assert one.converged and two.converged
    P1, P2 = one.history["primal"][-1], two.history["primal"][-1]
    D1, D2 = P1 - one.history["gap"][-1], P2 - two.history["gap"][-1]
    assert P2 >= D1 - 1e-15 and P1 >= D2 - 1e-15 and abs(P2 - P1) <= tol * P1
    if not fit_intercept:
        lam = two.params["lam"]
        w_alpha = X.T @ two.dual / (lam * X.shape[0])
        np.testing.assert_allclose(two.coef, w_alpha, rtol=1e-9, atol=1e-12)
        # the checks certify the merged w as it is: the reported dual lies below D(dual)
        exact = -np.mean(losses.conjugate("logistic", two.dual, y)) - 0.5 * lam * w_alpha @ w_alpha
        assert D2 <= exact + 1e-15 * two.params["p0"]
    every = ds.train_sdca(X, y, n_jobs=2, check_every=1, **kw)
    assert every.params["threaded_epochs"] > 0
    duals = every.history["dual"][1:]
    assert np.all(np.diff(duals) >= -1e-12 * np.abs(duals[1:])), duals


def test_block_passes_with_a_team_of_one(tmp_path):
    """OMP_THREAD_LIMIT=1 leaves n_jobs=2 a team of one: the block passes give way to
    serial ones and the solve still certifies the optimum."""
    code = ("import test_threads as t, dualsolve as ds; X, y = t._short_rows(); "
            "m = ds.train_sdca(X, y, tol=1e-9, n_jobs=2); "
            "print(m.stop_reason, m.params['threaded_epochs'], float(m.history['primal'][-1]))")
    stop, threaded, primal = _child(code, tmp_path, OMP_THREAD_LIMIT="1")
    X, y = _short_rows()
    one = ds.train_sdca(X, y, tol=1e-9)
    assert stop == "converged" and threaded == "0"
    assert abs(float(primal) - one.history["primal"][-1]) <= 1e-9 * float(primal)


# serial passes with threaded checks (300 features), and threaded passes (200,000)
@pytest.mark.parametrize("d", [300, 200_000])
def test_sigint_stops_a_threaded_solve_within_a_second(d):
    X, y = _sparse_problem(20000, d)
    exc, waited = interrupted(lambda cb: ds.train_sdca(X, y, tol=0.0, max_epochs=2**31 - 1,
                                                        callback=cb, n_jobs=2))
    assert waited < 1.0, waited
    assert exc.model.stop_reason == "interrupted"
    if d > 300 and _threads.effective_n_jobs(2) > 1 and parallel.openmp_enabled():
        assert exc.model.params["threaded_epochs"] > 0


def test_command_line_threads(tmp_path, capsys):
    from dualsolve.cli import main
    X, y = ds.datasets.load("heart_scale")
    y3 = np.where(y > 0, 2, 1)
    y3[np.asarray(X[:, 0].todense()).ravel() > 0.3] = 3
    data = tmp_path / "three.libsvm"
    ds.dump_svmlight(X, y3, data)
    assert main(["train", "-q", "-s", "1", "-n", "2", str(data), str(tmp_path / "m2")]) == 0
    assert main(["train", "-q", "-s", "1", str(data), str(tmp_path / "m1")]) == 0
    two, one = ds.load_model(tmp_path / "m2"), ds.load_model(tmp_path / "m1")
    assert two.coef.shape == (3, X.shape[1]) and two.coef.tobytes() == one.coef.tobytes()
    capsys.readouterr()
    assert main(["train", "-n", "0", str(data)]) == 2
    assert "-n: must be a number of threads >= 1" in capsys.readouterr().err


def test_threaded_gram_is_the_serial_one():
    """The mixup family's dense Gram matrix: kernel values in threads, entry by entry, so
    the matrix and the fit are the same bit for bit."""
    from dualsolve._core import kernels as K
    X, y = ds.datasets.load("heart_scale")
    kern = K.make_kernel("rbf", "auto", X=X)
    one = K.DenseGram(X, None, kern, np.float64, 1)
    two = K.DenseGram(X, None, kern, np.float64, 2)
    assert one.column_py(7).tobytes() == two.column_py(7).tobytes()
    a = ds.train_mixup_sdca(X, y, kernel="rbf", n_mix=100, tol=1e-8, n_jobs=1)
    b = ds.train_mixup_sdca(X, y, kernel="rbf", n_mix=100, tol=1e-8, n_jobs=2)
    assert a.dual.tobytes() == b.dual.tobytes()


# ---------------------------------------------------------------------------------------
# cross_validate's folds in threads (dualsolve/selection.py, _threads.side_by_side)


def test_side_by_side_shares_the_workers_step_by_step():
    """Chains advance one step at a time, at most ``active`` under way, in order; results
    in each chain's order whatever the interleaving."""
    import threading
    from dualsolve._monitor import StopRequest
    lock, live, most = threading.Lock(), set(), [0]

    def chain(i, steps):
        for s in range(steps):
            with lock:
                live.add(i)
                most[0] = max(most[0], len(live))
            yield (i, s)
        with lock:
            live.discard(i)

    results, errors, interrupt = _threads.side_by_side(
        [chain(i, 3 + i) for i in range(5)], 2, StopRequest(), "test", active=3)
    assert results == [[(i, s) for s in range(3 + i)] for i in range(5)]
    assert errors == [None] * 5 and interrupt is None
    assert most[0] <= 3


def test_side_by_side_stops_every_chain_after_an_exception():
    from dualsolve._monitor import StopRequest
    stop = StopRequest()

    def chain(i):
        for s in range(100):
            if i == 1 and s == 2:
                raise RuntimeError("chain 1")
            yield s

    results, errors, _ = _threads.side_by_side([chain(i) for i in range(4)], 2, stop, "test")
    assert isinstance(errors[1], RuntimeError) and stop.reason == "callback"
    assert all(len(r) < 100 for r in results), [len(r) for r in results]


@pytest.mark.parametrize("grid", [None, dict(Cs=[0.1, 1.0, 10.0])])
@pytest.mark.parametrize("classes", [2, 3])
def test_cross_validate_folds_in_threads_give_the_serial_scores(grid, classes):
    X, y = ds.datasets.load("heart_scale")
    if classes == 3:
        y = np.where(np.asarray(X[:, 0].todense()).ravel() > 0.3, 2.0, y)
    grid = grid or {}
    one = ds.cross_validate(ds.train_sdca, X, y, n_folds=5, loss="logistic", tol=1e-10,
                            n_jobs=1, **grid)
    two = ds.cross_validate(ds.train_sdca, X, y, n_folds=5, loss="logistic", tol=1e-10,
                            n_jobs=2, **grid)
    assert one.tobytes() == two.tobytes()          # every solve the same, bit for bit
    assert one.shape == ((3, 5) if grid else (5,))


@pytest.mark.parametrize("bad, exc", [(0, ValueError), (1.5, TypeError)])
def test_cross_validate_bad_n_jobs_is_a_clear_error(bad, exc):
    X, y = ds.datasets.load("heart_scale")
    with pytest.raises(exc, match="^n_jobs must be"):
        ds.cross_validate(ds.train_sdca, X, y, n_jobs=bad)


def test_a_callback_exception_in_one_fold_stops_every_fold():
    X, y = ds.datasets.load("heart_scale")
    epochs = []

    class Stop(Exception):
        pass

    def cb(info):
        epochs.append(info["epoch"])
        if len(epochs) == 5:
            raise Stop("a fold")

    with pytest.raises(Stop, match="a fold"):
        ds.cross_validate(ds.train_sdca, X, y, Cs=[1.0, 10.0], tol=0.0, max_epochs=10**5,
                          callback=cb, n_jobs=2)
    assert max(epochs) < 10**5 and len(epochs) < 10**4


@pytest.mark.parametrize("classes", [2, 3])
def test_sigint_stops_folds_in_threads_within_a_second(classes):
    import scipy.sparse as sp
    rng = np.random.default_rng(0)
    X = sp.random(4000, 200, density=0.2, random_state=1, format="csr")
    y = rng.integers(0, classes, 4000)
    import threading
    lock, fired = threading.Lock(), []

    def once(info):
        # the folds call the callback from two threads: only one may start the timer
        with lock:
            if fired:
                return False
            fired.append(info["epoch"])
            return True

    exc, waited = interrupted(
        lambda cb: ds.cross_validate(ds.train_sdca, X, y, Cs=[1.0, 10.0], tol=0.0,
                                     max_epochs=2**31 - 1, callback=cb, n_jobs=2),
        first=once)
    assert waited < 1.0, waited
