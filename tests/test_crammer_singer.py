"""Crammer-Singer (``train_sdca(..., multi_class="crammer_singer")``, liblinear -s 4): the
optimum of an independent QP solve, liblinear's optimum on a real multi-class set, the
certificate, and the contract (seeds, callback, Ctrl-C inside an epoch, warm starts, bad
input, out of memory)."""
import os
import signal
import threading
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds
from dualsolve._core import status as _status
from dualsolve._monitor import EpochMonitor
from dualsolve.sdca import _crammer_singer

CS = dict(loss="hinge", multi_class="crammer_singer")


def cs_primal(W, X, codes, lam, b=None, c=None):
    """P(W) = (1/n) sum_i c_i max_m (e_{y_i m} + s_im - s_{i y_i}) + (lam/2) ||W||^2 with
    scores s = X W^T + b; the intercept b regularised as liblinear's -B 1 weight when given
    (``b`` is then the last column of W)."""
    Z = np.asarray(X @ W.T)
    if b is not None:
        Z = Z + b
    n, k = Z.shape
    E = np.ones((n, k))
    E[np.arange(n), codes] = 0.0
    L = (E + Z - Z[np.arange(n), codes][:, None]).max(axis=1)
    c = np.ones(n) if c is None else c
    reg = (W ** 2).sum() + (0.0 if b is None else (b ** 2).sum())
    return float((c * L).sum() / n + 0.5 * lam * reg)


def cs_qp(X, codes, k, lam, c=None):
    """The primal as a QP in (W, xi) by Clarabel: min (lam/2)||W||^2 + (1/n) sum c_i xi_i,
    xi_i >= e_{y m} + (w_m - w_y).x_i for every (i, m). Returns (W, optimum)."""
    clarabel = pytest.importorskip("clarabel")
    n, d = X.shape
    c = np.ones(n) if c is None else c
    P = sp.diags(np.r_[np.full(k * d, lam), np.zeros(n)]).tocsc()
    q = np.r_[np.zeros(k * d), c / n]
    rows, cols, vals, b = [], [], [], []
    r = 0
    for i in range(n):
        y = codes[i]
        for m in range(k):
            if m != y:
                for j in range(d):
                    rows += [r, r]
                    cols += [m * d + j, y * d + j]
                    vals += [X[i, j], -X[i, j]]
            rows.append(r)
            cols.append(k * d + i)
            vals.append(-1.0)
            b.append(0.0 if m == y else -1.0)
            r += 1
    A = sp.csc_matrix((vals, (rows, cols)), shape=(r, k * d + n))
    s = clarabel.DefaultSettings()
    s.verbose = False
    s.tol_gap_abs = s.tol_gap_rel = s.tol_feas = 1e-12
    sol = clarabel.DefaultSolver(P, q, A, np.array(b), [clarabel.NonnegativeConeT(r)], s).solve()
    assert str(sol.status) == "Solved", sol.status
    W = np.array(sol.x)[:k * d].reshape(k, d)
    return W, cs_primal(W, X, codes, lam, c=c)


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(0)
    n, d, k = 40, 5, 4
    X = rng.standard_normal((n, d))
    codes = rng.integers(0, k, n)
    codes[:k] = np.arange(k)
    return X, codes, np.array(["ant", "bee", "cat", "dog"])[codes], 0.05


def train(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ds.train_sdca(X, y, **CS, **kw)


@pytest.mark.parametrize("shrinking", [True, False])
def test_matches_the_qp_optimum(small, shrinking):
    X, codes, y, lam = small
    _, best = cs_qp(X, codes, 4, lam)
    m = train(sp.csr_matrix(X), y, lam=lam, tol=1e-12, max_epochs=100000, shrinking=shrinking)
    assert m.converged and m.coef.shape == (4, 5) and m.intercept.shape == (4,)
    assert m.dual.shape == (40, 4) and m.params["multi_class"] == "crammer_singer"
    ours = cs_primal(m.coef, X, codes, lam)
    assert abs(ours - best) <= 1e-7 * best, (ours, best)
    # the history's last primal is the objective of the returned W; the gap certifies it
    last = m.history[-1]
    assert last["primal"] == pytest.approx(ours, rel=1e-12)
    assert last["gap"] >= ours - best - 1e-13 and last["gap"] <= 1e-12 * m.params["p0"]
    # the dual variables are feasible and give W
    a = m.dual
    off = a.copy()
    off[np.arange(40), codes] = 0.0
    assert (off <= 0).all() and (a[np.arange(40), codes] <= 1.0).all()
    np.testing.assert_allclose(a.sum(axis=1), 0.0, atol=1e-15)
    np.testing.assert_allclose(m.coef, a.T @ X / (lam * 40), atol=1e-13)


def test_weights_and_intercept_match_the_qp(small):
    """c_i = sample_weight * class_weight scales the loss and the dual box; fit_intercept is
    a constant feature, regularised (liblinear -B)."""
    X, codes, y, lam = small
    sw = np.random.default_rng(1).uniform(0.0, 3.0, 40)
    sw[5] = 0.0
    cw = {"ant": 2.0, "bee": 0.5, "cat": 1.0, "dog": 1.5}
    c = sw * np.array([cw[v] for v in y])
    Xb = np.column_stack([X, np.full(40, 2.0)])
    Wq, best = cs_qp(Xb, codes, 4, lam, c=c)
    m = train(sp.csr_matrix(X), y, lam=lam, tol=1e-12, max_epochs=100000, sample_weight=sw,
              class_weight=cw, fit_intercept=True, intercept_scaling=2.0)
    assert m.converged and m.params["p0"] == pytest.approx(c.mean(), rel=1e-14)
    W = np.column_stack([m.coef, m.intercept / 2.0])
    ours = cs_primal(W, Xb, codes, lam, c=c)
    assert abs(ours - best) <= 1e-7 * best, (ours, best)
    assert (m.dual[5] == 0).all()                 # a row of weight 0 stays out
    assert (m.dual[np.arange(40), codes] <= c + 1e-15).all()


def test_the_certificate_bounds_the_suboptimality(small):
    """At every checked epoch of a loose solve, gap >= P(W) - P*."""
    X, codes, y, lam = small
    _, best = cs_qp(X, codes, 4, lam)
    seen = []

    def cb(info):
        W = np.array(info["coef"])
        assert W.shape == (4, 5)
        seen.append((info["gap"], cs_primal(W, X, codes, lam)))

    train(sp.csr_matrix(X), y, lam=lam, tol=0, max_epochs=30, check_every=1, callback=cb)
    assert len(seen) == 31
    for gap, primal in seen:
        assert gap >= primal - best - 1e-12, (gap, primal, best)
    assert seen[-1][0] < 0.1 * seen[0][0]




@pytest.mark.parametrize("focus", [0.5, 1.0])
def test_focused_passes_reach_the_qp_optimum(small, focus):
    """Focused passes (``focus``, the default 0.5; docs/sdca.md) in the Crammer-Singer
    loop: the rows whose last steps gained the most get passes of their own."""
    X, codes, y, lam = small
    _, best = cs_qp(X, codes, 4, lam)
    m = train(sp.csr_matrix(X), y, lam=lam, tol=1e-12, max_epochs=100000, focus=focus)
    assert m.converged and m.params["focused_passes"] > 0
    ours = cs_primal(m.coef, X, codes, lam)
    assert abs(ours - best) <= 1e-7 * best, (ours, best)


def test_class_shrinking_reaches_the_qp_optimum():
    """Shrinking takes a class m != y_i at a_im = 0 scoring below every class that could
    rise out of row i's steps until the next exact check (liblinear's per-variable
    shrinking): with many classes and few features it happens often, and the certified
    optimum is still the QP's, with weights (a row of weight 0 included), and the same as
    without shrinking."""
    rng = np.random.default_rng(3)
    n, d, k = 120, 4, 9
    X = rng.random((n, d))
    codes = np.argmax(X @ rng.standard_normal((d, k)) + 0.5 * rng.standard_normal((n, k)),
                      axis=1)
    codes[:k] = np.arange(k)
    c = rng.uniform(0.0, 2.0, n)
    c[7] = 0.0
    lam = 1e-3
    _, best = cs_qp(X, codes, k, lam, c=c)
    kw = dict(lam=lam, tol=1e-11, max_epochs=1_000_000, sample_weight=c)
    shrunk = train(sp.csr_matrix(X), codes, **kw)
    plain = train(sp.csr_matrix(X), codes, shrinking=False, **kw)
    assert shrunk.params["shrunk_classes"] > 0 and plain.params["shrunk_classes"] == 0
    for m in (shrunk, plain):
        assert m.converged
        ours = cs_primal(m.coef, X, codes, lam, c=c)
        assert abs(ours - best) <= 1e-8 * best, (ours, best)
        assert (m.dual[7] == 0).all()
        np.testing.assert_allclose(m.dual.sum(axis=1), 0.0, atol=1e-14)


def test_shrinking_the_label_class_at_its_bound_reaches_the_qp_optimum():
    """At a small C most rows are margin violators, a_{i y_i} = c_i with the rest spread
    over the other classes; y_i then leaves the row's steps while it scores below every
    class that could rise, and the rest of the row keeps the sum -c_i (liblinear shrinks
    y_i too). The certified optimum is still the QP's, with weights and a row of weight 0,
    and every row's duals stay feasible."""
    rng = np.random.default_rng(5)
    n, d, k = 150, 4, 4
    X = rng.random((n, d))
    codes = rng.integers(0, k, n)
    codes[:k] = np.arange(k)
    c = rng.uniform(0.5, 2.0, n)
    c[11] = 0.0
    lam = 1.0
    _, best = cs_qp(X, codes, k, lam, c=c)
    kw = dict(lam=lam, tol=1e-11, max_epochs=1_000_000, sample_weight=c)
    shrunk = train(sp.csr_matrix(X), codes, **kw)
    plain = train(sp.csr_matrix(X), codes, shrinking=False, **kw)
    at_c = np.isclose(shrunk.dual[np.arange(n), codes], c)
    assert at_c.mean() > 0.9 and shrunk.params["shrunk_classes"] > 0
    for m in (shrunk, plain):
        assert m.converged
        ours = cs_primal(m.coef, X, codes, lam, c=c)
        assert abs(ours - best) <= 1e-8 * best, (ours, best)
        a = m.dual                  # (a row's sum rounds, shrinking or not: 3e-13)
        np.testing.assert_allclose(a.sum(axis=1), 0.0, atol=1e-12)
        assert (a[np.arange(n), codes] <= c * (1 + 1e-15)).all()
        off = a.copy()
        off[np.arange(n), codes] = 0.0
        assert (off <= 0.0).all() and (a[11] == 0).all()


def _text_like(n=1500, d=6000, k=5, per_row=25, seed=0):
    """Sparse unit rows of power-law features and k classes from a planted W: the regime
    (text, a large C) where late in a solve few rows still move."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, d + 1) ** 1.1
    cols = rng.choice(d, size=n * per_row, p=p / p.sum())
    X = sp.csr_matrix((rng.random(n * per_row) + 0.1,
                       (np.repeat(np.arange(n), per_row), cols)), shape=(n, d))
    X.sum_duplicates()
    X = sp.csr_matrix(sp.diags(1.0 / np.sqrt(X.multiply(X).sum(axis=1).A1)) @ X)
    scores = X @ rng.standard_normal((d, k)) + 0.3 * rng.standard_normal((n, k))
    return X, np.argmax(scores, axis=1)


def test_focused_passes_on_text_like_rows():
    """At C = 100 on sparse text-like rows the focused passes certify in under half the
    plain loop's epochs; the two certified objectives agree to the tolerance, the exact
    dual never falls from one epoch to the next, and a seed gives the same bits."""
    X, codes = _text_like()
    kw = dict(C=100.0, tol=1e-9, max_epochs=100000)
    plain = train(X, codes, focus=0.0, **kw)
    focused = train(X, codes, **kw)
    assert plain.converged and focused.converged
    assert plain.params["focused_passes"] == 0 and focused.params["focused_passes"] > 0
    assert focused.n_epochs < plain.n_epochs / 2, (focused.n_epochs, plain.n_epochs)
    lam = focused.params["lam"]
    P = [cs_primal(m.coef, X, codes, lam) for m in (plain, focused)]
    assert abs(P[0] - P[1]) <= 1e-9 * max(P)
    again = train(X, codes, **kw)
    np.testing.assert_array_equal(again.dual, focused.dual)
    every = train(X, codes, C=100.0, tol=0, max_epochs=40, check_every=1)
    d = every.history["dual"]
    assert every.params["focused_passes"] > 0 and np.isfinite(d).all()
    assert (np.diff(d) >= -1e-13 * np.abs(d[1:])).all()


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_threaded_checks_give_the_model_of_one_thread(fit_intercept):
    """With k nnz(X) of 2^18 or more the exact checks and the resyncs of W run in threads
    (W's features, the intercept's column included, split between them) and the passes on
    one thread: two threads give one thread's model bit for bit and its certificate to
    rounding, and the reported gap is P - D from NumPy."""
    X, codes = _text_like(n=3000, d=4000, k=6, per_row=20)
    assert X.nnz * 6 >= 1 << 18
    kw = dict(C=10.0, tol=1e-9, max_epochs=100000, fit_intercept=fit_intercept)
    one = train(X, codes, n_jobs=1, **kw)
    two = train(X, codes, n_jobs=2, **kw)
    assert one.converged and two.converged and one.n_epochs == two.n_epochs
    np.testing.assert_array_equal(two.coef, one.coef)
    np.testing.assert_array_equal(two.intercept, one.intercept)
    np.testing.assert_array_equal(two.dual, one.dual)
    lam = two.params["lam"]
    b = two.intercept if fit_intercept else None     # (intercept_scaling 1: the weight)
    P = cs_primal(two.coef, X, codes, lam, b=b)
    reg = (two.coef ** 2).sum() + (0.0 if b is None else (b ** 2).sum())
    D = two.dual[np.arange(len(codes)), codes].mean() - 0.5 * lam * reg
    gaps = [m.history["gap"][-1] for m in (one, two)]
    assert abs(gaps[1] - gaps[0]) <= 1e-12 * P
    assert abs(gaps[1] - (P - D)) <= 1e-12 * P, (gaps[1], P - D)


@pytest.mark.parametrize("bias", [False, True])
def test_matches_liblinear_s4(satellite, bias):
    """The acceptance of the issue: on satellite at C = 1, the primal objective of our W and
    of liblinear -s 4 -e 1e-6 agree to 1e-6 relative (measured: about 2e-9; liblinear's
    own stopping rule certifies nothing, ours stops at a certified gap of 1e-8)."""
    liblinear = pytest.importorskip("liblinear.liblinearutil")
    X, y = satellite
    classes = np.unique(y)
    codes = np.searchsorted(classes, y)
    n, d = X.shape
    C = 1.0
    m = train(X, y, C=C, tol=1e-8, max_epochs=100000, fit_intercept=bias)
    assert m.converged
    lm = liblinear.train(codes.astype(float), X,
                         f"-s 4 -c {C} -e 1e-6 -q" + (" -B 1" if bias else ""))
    labels = lm.get_labels()
    W = np.array([[lm.get_decfun_coef(j + 1, labels.index(c)) for j in range(d)]
                  for c in range(6)])
    b = np.array([lm.get_decfun_bias(labels.index(c)) for c in range(6)]) if bias else None
    lam = 1.0 / (C * n)
    ours = cs_primal(m.coef, X, codes, lam, b=m.intercept if bias else None)
    theirs = cs_primal(W, X, codes, lam, b=b)
    assert abs(ours - theirs) <= 1e-6 * theirs, (ours, theirs)
    assert ours - theirs <= m.history["gap"][-1] + 1e-12         # our certificate holds
    assert ours == pytest.approx(m.history["primal"][-1], rel=1e-12)
    np.testing.assert_array_equal(m.predict(X), classes[np.argmax(m.decision_function(X), 1)])
    assert np.mean(m.predict(X) == y) > 0.8


def test_predictions_are_the_argmax_and_seeds_are_reproducible(small):
    X, codes, y, lam = small
    Xs = sp.csr_matrix(X)
    a = train(Xs, y, lam=lam, tol=1e-6, seed=5)
    b = train(Xs, y, lam=lam, tol=1e-6, seed=5)
    c = train(Xs, y, lam=lam, tol=0, max_epochs=a.n_epochs, seed=6)
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.dual, b.dual)
    assert not np.array_equal(a.dual, c.dual)
    scores = a.decision_function(Xs)
    assert scores.shape == (40, 4)
    np.testing.assert_array_equal(a.predict(Xs), a.classes[np.argmax(scores, axis=1)])
    # float32 data and int64 indices: the same iterates when the values are float32's
    X32 = sp.csr_matrix(X.astype(np.float32))
    X64 = sp.csr_matrix(X.astype(np.float32).astype(np.float64))
    X32.indices = X32.indices.astype(np.int64)
    X32.indptr = X32.indptr.astype(np.int64)
    np.testing.assert_array_equal(train(X32, y, lam=lam, seed=2).coef,
                                  train(X64, y, lam=lam, seed=2).coef)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_coef_is_a_view_of_the_solver_w(small, tmp_path, fit_intercept):
    """coef (k, d) is the transposed view of the feature-major W the loop wrote, not a
    copy (news20: 189 MB and 0.46 s at the end of a solve); it predicts, saves and loads
    back as a C-ordered copy would."""
    X, codes, y, lam = small
    m = train(sp.csr_matrix(X), y, lam=lam, tol=1e-8, fit_intercept=fit_intercept)
    assert m.coef.shape == (4, 5)
    assert m.coef.flags.f_contiguous and not m.coef.flags.owndata
    c = np.ascontiguousarray(m.coef)
    scores = X @ c.T + m.intercept
    np.testing.assert_allclose(m.decision_function(X), scores, rtol=1e-14, atol=1e-14)
    m.save(tmp_path / "cs.npz")
    back = ds.load_model(tmp_path / "cs.npz")
    np.testing.assert_array_equal(back.coef, c)
    np.testing.assert_array_equal(back.predict(X), m.predict(X))


def test_uniform_sampling_and_no_shrinking_reach_the_same_optimum(satellite):
    X, y = satellite
    X, y = X[:600], y[:600]
    classes = np.unique(y)
    codes = np.searchsorted(classes, y)
    lam = 1.0 / 600
    ref = cs_primal(train(X, y, lam=lam, tol=1e-9, max_epochs=100000).coef, X, codes, lam)
    for kw in (dict(shrinking=False), dict(sampling="uniform"), dict(check_every=1)):
        m = train(X, y, lam=lam, tol=1e-9, max_epochs=100000, **kw)
        assert m.converged, kw
        assert cs_primal(m.coef, X, codes, lam) == pytest.approx(ref, rel=1e-8), kw


def test_two_classes_give_the_binary_model_of_the_same_problem(small):
    """Two classes: still Crammer-Singer's objective, a binary Model with coef = w_1 - w_0
    and dual = 2 a[:, 1]; it is the binary hinge problem at lam / 2."""
    X, codes, _, lam = small
    y = np.where(codes >= 2, "yes", "no")
    Xs = sp.csr_matrix(X)
    m = train(Xs, y, lam=lam, tol=1e-12, max_epochs=100000)
    assert m.converged and m.coef.shape == (5,) and list(m.classes) == ["no", "yes"]
    np.testing.assert_allclose(m.coef, X.T @ m.dual / (lam * 40), atol=1e-12)
    h = ds.train_sdca(Xs, y, loss="hinge", lam=lam / 2, tol=1e-12, max_epochs=100000)
    np.testing.assert_allclose(m.coef, h.coef, atol=1e-6)
    c2 = (y == "yes").astype(int)
    W = np.vstack([-m.coef / 2, m.coef / 2])
    assert cs_primal(W, X, c2, lam) == pytest.approx(m.history["primal"][-1], rel=1e-12)
    again = train(Xs, y, lam=lam, tol=1e-12, max_epochs=100000, warm_start=m)
    assert again.converged and again.n_epochs <= 2


def test_callback_stops_and_ovr_stays_the_default(small):
    X, codes, y, lam = small
    Xs = sp.csr_matrix(X)
    epochs = []

    def cb(info):
        epochs.append(info["epoch"])
        return info["epoch"] >= 2

    m = train(Xs, y, lam=lam, tol=0, max_epochs=50, callback=cb)
    assert epochs == [0, 1, 2] and m.stop_reason == "callback" and m.n_epochs == 2
    assert m.coef.shape == (4, 5) and len(m.history) == 3
    ovr = ds.train_sdca(Xs, y, loss="hinge", lam=lam)
    assert ovr.params["multi_class"] == "ovr"
    np.testing.assert_array_equal(
        ovr.coef, ds.train_sdca(Xs, y, loss="hinge", lam=lam, multi_class="ovr").coef)


def test_warm_starts(satellite):
    X, y = satellite
    first = train(X, y, C=1.0, tol=1e-4)
    assert first.converged
    again = train(X, y, C=1.0, tol=1e-4, warm_start=first)
    assert again.converged and again.n_epochs <= 2, again.n_epochs
    # from a nearby C: feasible (the box does not depend on C) and cheaper than cold, in
    # whole passes (with shrinking an epoch's cost varies: there, on satellite, warm takes
    # more, cheaper epochs, 509 against 451, in about half the time)
    first = train(X, y, C=1.0, tol=1e-4, shrinking=False)
    cold = train(X, y, C=2.0, tol=1e-4, shrinking=False)
    warm = train(X, y, C=2.0, tol=1e-4, warm_start=first.dual, shrinking=False)
    assert warm.converged and warm.n_epochs < cold.n_epochs


def test_sigint_inside_a_long_epoch():
    """Long epochs (1000 classes: about half a second each here); a SIGINT a quarter into
    the first one stops the solve through the engine's polls (epoch -1), long before the
    epoch's end: without them it would wait three quarters of an epoch."""
    rng = np.random.default_rng(0)
    n, d, k = 4000, 300, 1000
    X = sp.csr_matrix(rng.standard_normal((n, d)))
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)
    h = train(X, y, tol=0, max_epochs=1, check_every=1000, shrinking=False).history
    epoch = h["time"][1] - h["time"][0]        # one epoch and its final check
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    sent = []

    def interrupt():
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(epoch / 4, interrupt)

    def start(info):
        if info["epoch"] == 0:
            timer.start()

    try:
        with pytest.raises(KeyboardInterrupt) as info:
            train(X, y, tol=0, max_epochs=2**31 - 1, callback=start, shrinking=False,
                  check_every=1000)
        waited = time.perf_counter() - sent[0]
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)
    assert waited < epoch / 3, (waited, epoch)
    model = info.value.model
    assert model.stop_reason == "interrupted" and list(model.history["epoch"]) == [0]


def test_no_memory_is_a_status():
    """A work buffer that cannot be allocated (k = 2^40 classes: 8 TB per buffer) returns
    STATUS_NO_MEMORY without touching anything."""
    k = 2 ** 40
    mon = EpochMonitor(("primal", "dual", "gap", "gap_estimate", "n_active"))
    out = _crammer_singer.solve(np.zeros(1), np.zeros(1, np.int32), np.zeros(1, np.int32), 0,
                                np.zeros(0, np.intp), k, 1.0, 0.0, np.zeros((0, k)),
                                np.zeros((0, k)), 1e-3, 10, 0, 0, True, 0, mon)
    assert out[0] == _status.NO_MEMORY and mon.rows == []


def test_bad_input(small):
    X, codes, y, lam = small
    Xs = sp.csr_matrix(X)
    with pytest.raises(ValueError, match="^multi_class must be"):
        ds.train_sdca(Xs, y, loss="hinge", multi_class="crammer")
    with pytest.raises(TypeError, match="^multi_class must be"):
        ds.train_sdca(Xs, y, loss="hinge", multi_class=1)
    with pytest.raises(ValueError, match="takes loss='hinge'; got loss='logistic'"):
        ds.train_sdca(Xs, y, multi_class="crammer_singer")
    with pytest.raises(ValueError, match="y has one class only"):
        train(Xs, np.full(40, "ant"))
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        train(sp.csr_matrix(Xn), y)
    ovr = ds.train_sdca(Xs, y, loss="hinge", lam=lam)
    with pytest.raises(ValueError, match="must be a Crammer-Singer Model"):
        train(Xs, y, lam=lam, warm_start=ovr)
    with pytest.raises(ValueError, match=r"must hold \(40, 4\)"):
        train(Xs, y, lam=lam, warm_start=np.zeros(40))
    bad = np.zeros((40, 4))
    bad[0, (codes[0] + 1) % 4] = 0.5            # a positive variable of another class
    bad[0, codes[0]] = -0.5
    with pytest.raises(ValueError, match="not feasible"):
        train(Xs, y, lam=lam, warm_start=bad)
    other = train(Xs, np.char.upper(y), lam=lam, tol=1e-2)
    with pytest.raises(ValueError, match="must be a Model of the classes"):
        train(Xs, y, lam=lam, warm_start=other)


def test_liblinear_reads_our_crammer_singer_file(tmp_path):
    liblinear = pytest.importorskip("liblinear.liblinearutil")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(150, 5))
    y = np.repeat([1.0, 2.0, 3.0], 50)
    X[np.arange(150), (y - 1).astype(int)] += 1.5
    m = ds.train_sdca(X, y, loss="hinge", multi_class="crammer_singer", tol=1e-8)
    path = str(tmp_path / "cs.liblinear")
    m.save(path, format="liblinear")
    assert open(path).readline().split() == ["solver_type", "MCSVM_CS"]
    lm = liblinear.load_model(path)
    pred = np.array(liblinear.predict(y, X, lm, "-q")[0])
    np.testing.assert_array_equal(pred, m.predict(X))
