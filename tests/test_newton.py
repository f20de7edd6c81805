"""train_newton (primal Newton with a duality-gap certificate) and train_linear's choice,
against independent references: the normal equations, scipy's L-BFGS, liblinear."""
import warnings

import numpy as np
import pytest
import scipy.optimize as opt
import scipy.sparse as sp

import dualsolve as ds
from dualsolve._core import losses as L
from dualsolve.linear import SWITCH_EPOCHS, switches_to_newton

SMOOTH = ["logistic", "squared_hinge", "smooth_hinge", "squared", "squared_epsilon_insensitive"]


def objective(X, y, w, lam, loss, param=None, c=None, b=0.0):
    z = X @ w + b
    v = L.value(loss, z, y, param)
    c = np.ones(len(y)) if c is None else c
    return float(c @ v / len(y) + 0.5 * lam * w @ w)


def lbfgs(X, y, lam, loss, param=None, c=None):
    """An independent optimum: scipy's L-BFGS on the primal, tight."""
    n, d = X.shape
    c = np.ones(n) if c is None else c

    def f(w):
        z = X @ w
        return (c @ L.value(loss, z, y, param) / n + 0.5 * lam * w @ w,
                X.T @ (c * L.derivative(loss, z, y, param)) / n + lam * w)
    r = opt.minimize(f, np.zeros(d), jac=True, method="L-BFGS-B",
                     options=dict(maxiter=20000, gtol=1e-13, ftol=1e-16, maxcor=30))
    return r.x, r.fun


@pytest.fixture(scope="module")
def heart():
    X, y = ds.datasets.load("heart_scale")
    return sp.csr_matrix(X), y


@pytest.fixture(scope="module")
def regression():
    X, y = ds.datasets.load("kin8nm")
    return sp.csr_matrix(X)[:2000], y[:2000]


@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("C", [1.0, 1e4])
def test_optimum_matches_lbfgs(heart, regression, loss, C):
    X, y = regression if loss in L.REGRESSION_LOSSES else heart
    n = X.shape[0]
    lam = 1.0 / (C * n)
    m = ds.train_newton(X, y, loss=loss, C=C, tol=1e-12)
    assert m.stop_reason == "converged"
    P = objective(X, y, m.coef, lam, loss, m.params["loss_param"])
    _, Pref = lbfgs(X, y, lam, loss, m.params["loss_param"])
    # ours is never meaningfully above the reference, and the reference not far below ours
    assert P <= Pref * (1 + 1e-9)
    assert Pref >= P * (1 - 1e-9)
    h = m.history[-1]
    assert h["primal"] == pytest.approx(P, rel=1e-12)
    assert P - h["gap"] <= Pref * (1 + 1e-12)       # the certificate's lower bound holds


def test_raw_power_plant_equals_the_normal_equations():
    """Ridge regression on the raw, unstandardised power-plant data, where
    max ||x_i||^2 / (lam n) = 1.1e6 and dual coordinate methods crawl: the exact solution
    of (X^T X / n + lam I) w = X^T y / n."""
    X, y = ds.datasets.load("power-plant", dense=True)
    n, d = X.shape
    lam = 1.0 / n
    w_star = np.linalg.solve(X.T @ X / n + lam * np.eye(d), X.T @ y / n)
    m = ds.train_newton(X, y, loss="squared", tol=1e-14)
    assert m.stop_reason == "converged"
    assert np.allclose(m.coef, w_star, rtol=1e-8, atol=1e-10)
    P = objective(sp.csr_matrix(X), y, m.coef, lam, "squared")
    Pstar = objective(sp.csr_matrix(X), y, w_star, lam, "squared")
    assert abs(P - Pstar) <= 1e-12 * Pstar


def test_gap_is_the_gradient_norm_and_the_dual_point_is_feasible(heart):
    X, y = heart
    n = X.shape[0]
    m = ds.train_newton(X, y, loss="logistic", C=100.0, tol=1e-3)
    lam = m.params["lam"]
    z = X @ m.coef
    g = X.T @ L.derivative("logistic", z, y) / n + lam * m.coef
    gap = m.history["gap"][-1]
    assert gap == pytest.approx(g @ g / (2 * lam), rel=1e-6)
    a = m.dual
    assert np.isfinite(L.conjugate("logistic", a, y)).all()
    w_a = X.T @ a / (lam * n)
    D = -0.5 * lam * w_a @ w_a - L.conjugate("logistic", a, y).mean()
    assert D == pytest.approx(m.history["dual"][-1], rel=1e-10)


def test_weights_equal_repeated_rows(heart):
    X, y = heart
    rng = np.random.default_rng(0)
    k = rng.integers(0, 4, X.shape[0])
    Xr = sp.csr_matrix(np.repeat(X.toarray(), k, axis=0))
    yr = np.repeat(y, k)
    lam = 1e-4
    a = ds.train_newton(X, y, lam=lam * len(yr) / len(y), sample_weight=k.astype(float),
                        tol=1e-13)
    b = ds.train_newton(Xr, yr, lam=lam, tol=1e-13)
    assert np.allclose(a.coef, b.coef, rtol=1e-7, atol=1e-9)


def test_intercept_is_a_regularised_constant_feature(heart):
    X, y = heart
    m = ds.train_newton(X, y, C=10.0, fit_intercept=True, intercept_scaling=2.0, tol=1e-12)
    Xb = sp.hstack([X, 2.0 * np.ones((X.shape[0], 1))]).tocsr()
    r = ds.train_newton(Xb, y, C=10.0, tol=1e-12)
    assert np.allclose(m.coef, r.coef[:-1], atol=1e-9)
    assert m.intercept == pytest.approx(2.0 * r.coef[-1], abs=1e-9)


def test_matches_liblinear_primal(heart):
    pytest.importorskip("liblinear")
    from liblinear import liblinearutil as llu
    X, y = heart
    for loss, s in (("logistic", 0), ("squared_hinge", 2)):
        m = ds.train_newton(X, y, loss=loss, C=100.0, tol=1e-13)
        ll = llu.train(y, X, f"-s {s} -c 100 -e 1e-10 -q")
        w = np.array([ll.w[j] for j in range(X.shape[1])]) * (1 if ll.label[0] == 1 else -1)
        lam = 1.0 / (100.0 * X.shape[0])
        assert objective(X, y, m.coef, lam, loss) <= objective(X, y, w, lam, loss) * (1 + 1e-9)
        assert np.allclose(m.coef, w, atol=1e-4 * np.abs(w).max())


def test_warm_start_from_the_optimum_stops_at_once(heart):
    X, y = heart
    first = ds.train_newton(X, y, C=1e3, tol=1e-10)
    again = ds.train_newton(X, y, C=1e3, tol=1e-10, warm_start=first)
    assert again.n_epochs == 0 and again.stop_reason == "converged"
    # and from an SDCA model of another C (its coef)
    near = ds.train_sdca(X, y, C=500.0, tol=1e-4)
    m = ds.train_newton(X, y, C=1e3, tol=1e-10, warm_start=near)
    assert m.stop_reason == "converged" and m.n_epochs < first.n_epochs


def numpy_certificate(X, y, m, loss):
    """(P(coef), D(dual)) from the formulas alone, with D(a) = mean(-h(a_i; y_i)) -
    (lam/2)||X^T a / (lam n)||^2 for the hinge (h = -a y on a y in [0, 1]) and the
    epsilon-insensitive loss (h = -a y + eps |a| on |a| <= 1): weak duality makes
    P(coef) - D(dual) an upper bound on P(coef) - P*, whatever the engine did."""
    n = X.shape[0]
    lam, eps = m.params["lam"], m.params["loss_param"]
    w, a = m.coef, m.dual
    z = X @ w
    w_a = X.T @ a / (lam * n)
    if loss == "hinge":
        assert (a * y >= 0).all() and (a * y <= 1).all()           # feasible
        P = np.maximum(0.0, 1.0 - y * z).mean()
        D = np.mean(a * y)
    else:
        assert (np.abs(a) <= 1).all()
        P = np.maximum(0.0, np.abs(z - y) - eps).mean()
        D = np.mean(a * y - eps * np.abs(a))
    return P + 0.5 * lam * w @ w, D - 0.5 * lam * w_a @ w_a


@pytest.mark.parametrize("C", [1.0, 10.0])
def test_hinge_by_smoothing_continuation_is_certified(heart, C):
    X, y = heart
    m = ds.train_newton(X, y, loss="hinge", C=C, tol=1e-10)
    assert m.stop_reason == "converged"
    P, D = numpy_certificate(X, y, m, "hinge")
    assert P == pytest.approx(m.history["primal"][-1], rel=1e-12)
    assert P - D <= 1.01e-10 * D
    ref = ds.train_sdca(X, y, loss="hinge", C=C, tol=1e-11, max_epochs=10 ** 6)
    assert ref.stop_reason == "converged"
    assert P == pytest.approx(ref.history["primal"][-1], rel=1e-9)


@pytest.mark.parametrize("C", [1.0, 100.0, 1e4])
def test_l1_svr_on_raw_power_plant_is_certified(C):
    """liblinear -s 13's objective on the raw, unstandardised power-plant data, where
    max ||x_i||^2 / (lam n) = 1.1e6: dual coordinate descent (ours, liblinear's) stops far
    above the optimum; the continuation certifies it, checked here by weak duality."""
    X, y = ds.datasets.load("power-plant", dense=True)
    m = ds.train_newton(X, y, loss="epsilon_insensitive", epsilon=0.1, C=C, tol=1e-9)
    assert m.stop_reason == "converged"
    P, D = numpy_certificate(sp.csr_matrix(X), y, m, "epsilon_insensitive")
    assert P == pytest.approx(m.history["primal"][-1], rel=1e-12)
    assert 0.0 <= P - D <= 1.01e-9 * D
    # train_linear gets there too: narrow data (9568 x 4), Newton from the start
    auto = ds.train_linear(X, y, loss="epsilon_insensitive", epsilon=0.1, C=C, tol=1e-9)
    assert auto.params["solver_chosen"] == "newton" and auto.stop_reason == "converged"
    assert auto.history["primal"][-1] == pytest.approx(P, rel=2e-9)
    # far below where SDCA's default budget leaves it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sd = ds.train_sdca(X, y, loss="epsilon_insensitive", epsilon=0.1, C=C)
    assert sd.history["primal"][-1] > P * (1 + 1e-3)


def test_curvature_is_the_derivative_of_the_derivative():
    s = np.linspace(-3.3, 3.3, 61) + 1e-3
    h = 1e-6
    for loss in SMOOTH:
        y = np.where(np.arange(61) % 2, 1.0, -1.0) if loss not in L.REGRESSION_LOSSES \
            else np.linspace(-1, 1, 61)
        fd = (L.derivative(loss, s + h, y) - L.derivative(loss, s - h, y)) / (2 * h)
        assert np.allclose(L.curvature(loss, s, y), fd, atol=1e-5), loss
    assert (L.curvature("hinge", s, np.ones(61)) == 0).all()


# ------------------------------------------------------------------ train_linear


@pytest.fixture
def no_newton_first(monkeypatch):
    """train_linear's hand-over on the small bundled sets, which are narrow enough for
    Newton to go first (test_newton_first_on_narrow_data covers that rule)."""
    import dualsolve.linear as linear
    monkeypatch.setattr(linear, "newton_first", lambda *args: False)


def test_auto_goes_on_with_newton_where_sdca_is_slow(heart, no_newton_first):
    X, y = heart
    m = ds.train_linear(X, y, C=1e4, tol=1e-10)
    assert m.params["solver_chosen"] == "sdca+newton" and m.stop_reason == "converged"
    k = m.params["sdca_epochs"]
    assert k >= SWITCH_EPOCHS
    # exactly: SDCA stopped after epoch k, then Newton from its w
    first = ds.train_sdca(X, y, C=1e4, tol=1e-10, callback=lambda info: info["epoch"] >= k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = ds.train_newton(X, y, C=1e4, tol=1e-10, warm_start=first.coef)
    assert np.array_equal(m.coef, ref.coef)
    assert np.array_equal(m.dual, ref.dual)
    # one history: SDCA's epochs 0..k, then Newton's iterations numbered on
    assert list(m.history["epoch"]) == list(range(k + 1)) + [k + e for e in ref.history["epoch"][1:]]
    assert np.array_equal(m.history["cg_iters"][k + 1:], ref.history["cg_iters"][1:])
    assert np.isnan(m.history["cg_iters"][:k + 1]).all()
    assert m.n_epochs == k + ref.n_epochs
    assert m.history["gap"][-1] <= 1e-10 * m.history["dual"][-1]
    # SDCA certifies a well conditioned problem alone; the hinge never switches
    assert ds.train_linear(X, y, C=0.01).params["solver_chosen"] == "sdca"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = ds.train_linear(X, y, C=1e4, loss="hinge", max_epochs=2 * SWITCH_EPOCHS)
    assert m.params["solver_chosen"] == "sdca" and m.n_epochs == 2 * SWITCH_EPOCHS


def test_squared_hinge_switches_only_with_more_rows_than_columns(no_newton_first):
    """The squared hinge goes on with Newton where X has at least as many rows as columns
    (a9a at C = 100: SDCA alone leaves 5000 epochs uncertified) and stays with SDCA where
    columns outnumber rows (nearly separable: Newton's generalised Hessian misleads)."""
    assert switches_to_newton("squared_hinge", 100, 100)
    assert not switches_to_newton("squared_hinge", 99, 100)
    assert switches_to_newton("squared", 1, 100) and switches_to_newton("logistic", 1, 100)
    assert not switches_to_newton("hinge", 100, 1)
    X, y = ds.datasets.load("a9a")
    X, y = X[:4000], y[:4000]
    lam = 1.0 / (100.0 * X.shape[0])
    m = ds.train_linear(X, y, loss="squared_hinge", C=100.0, tol=1e-8)
    assert m.params["solver_chosen"] == "sdca+newton" and m.stop_reason == "converged"
    assert m.params["sdca_epochs"] >= SWITCH_EPOCHS
    assert m.history["gap"][-1] <= 1e-8 * m.history["dual"][-1]
    w_ref, p_ref = lbfgs(X, y, lam, "squared_hinge")
    assert objective(X, y, m.coef, lam, "squared_hinge") == pytest.approx(p_ref, rel=1e-8)
    assert p_ref >= m.history["dual"][-1] * (1 - 1e-12)         # weak duality holds
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sd = ds.train_sdca(X, y, loss="squared_hinge", C=100.0, tol=1e-8, max_epochs=200)
    assert sd.stop_reason == "max_epochs"           # what the hand-over saves
    # the intercept's column counts: 13 columns + 1 against 14 rows still switches, 13 rows
    # do not; with a wide slice (more columns than rows) SDCA keeps it
    Xh, yh = ds.datasets.load("heart_scale")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rows, intercept, chosen in ((14, True, "sdca+newton"), (13, True, "sdca"),
                                        (13, False, "sdca+newton")):
            r = ds.train_linear(Xh[:rows], yh[:rows], loss="squared_hinge", C=1e4,
                                fit_intercept=intercept, max_epochs=3 * SWITCH_EPOCHS,
                                tol=1e-12)
            assert r.params["solver_chosen"] == chosen, (rows, intercept)


def test_hand_over_follows_sdcas_rate(monkeypatch):
    """The watch hands over when the pass estimates' rate predicts more than SDCA_AHEAD
    epochs to tol * D, and not while it predicts fewer."""
    from dualsolve.linear import RATE_SPAN, SDCA_AHEAD, _Watch

    class Sink:
        columns = ("primal", "dual", "gap", "gap_estimate")
        n_values = 4
        error = None

        def report(self, epoch, values):
            return 0

    def run(rate, tol=1e-6, noise=lambda e: 1.0):
        w = _Watch(tol).around(Sink())
        w.report(0, (1.0, 0.5, 0.5, float("nan")))
        for e in range(1, 200):
            estimate = 0.5 * rate ** e * noise(e)
            if w.report(e, (float("nan"), float("nan"), float("nan"), estimate)):
                return e
        return None

    # 1e-6 * 0.5 is reached from 0.5 * r^e at e = log(1e-6) / log(r)
    fast = 10.0 ** (-6 / (SWITCH_EPOCHS + SDCA_AHEAD - 5))
    slow = 10.0 ** (-6 / (SWITCH_EPOCHS + SDCA_AHEAD + 20))
    assert run(fast) is None
    assert run(slow) == SWITCH_EPOCHS
    assert run(1.0) == SWITCH_EPOCHS          # no progress: no rate
    # a pass estimate 8x the previous ones every 3rd epoch (IMDB's, logistic, C = 10^4, go
    # 2e-9, 8e-9, 1.6e-9) is noise: the rate is the smallest estimate's
    uptick = lambda e: 8.0 if e % 3 == 0 else 1.0
    assert run(fast, noise=uptick) is None
    assert run(slow, noise=uptick) == SWITCH_EPOCHS
    assert RATE_SPAN < SWITCH_EPOCHS
    # a rate reaching back to epoch 0 (no estimate there) is no rate, as above, not an error
    import dualsolve.linear as linear
    monkeypatch.setattr(linear, "SWITCH_EPOCHS", RATE_SPAN)
    assert run(fast) == RATE_SPAN


def test_auto_budget_counts_both_solvers(heart, no_newton_first):
    X, y = heart
    with pytest.warns(ds.ConvergenceWarning):
        m = ds.train_linear(X, y, C=1e4, tol=1e-14, max_epochs=SWITCH_EPOCHS + 1)
    assert m.n_epochs == SWITCH_EPOCHS + 1 and m.stop_reason == "max_epochs"
    assert m.history["epoch"][-1] == SWITCH_EPOCHS + 1
    assert m.params["solver_chosen"] == "sdca+newton" and m.params["sdca_epochs"] == SWITCH_EPOCHS
    with pytest.warns(ds.ConvergenceWarning):
        m = ds.train_linear(X, y, C=1e4, tol=1e-14, max_epochs=3)
    assert m.params["solver_chosen"] == "sdca" and m.n_epochs == 3


def test_named_solver_and_its_losses(heart):
    X, y = heart
    m = ds.train_linear(X, y, solver="sdca", C=1.0, tol=1e-10)
    ref = ds.train_sdca(X, y, C=1.0, tol=1e-10)
    assert np.array_equal(m.coef, ref.coef)
    assert set(m.history.dtype.names) >= {"gap_estimate", "cg_iters"}
    m = ds.train_linear(X, y, solver="newton", loss="hinge", tol=1e-9)
    assert m.params["solver_chosen"] == "newton" and m.stop_reason == "converged"
    with pytest.raises(ValueError, match="solver"):
        ds.train_linear(X, y, solver="lbfgs")


def test_multiclass_one_vs_rest(no_newton_first):
    X, y = ds.datasets.load("heart_scale")
    rng = np.random.default_rng(1)
    y3 = rng.integers(0, 3, len(y))
    m = ds.train_linear(X, y3, C=1e4, tol=1e-8)
    assert m.coef.shape == (3, X.shape[1])
    for c in range(3):
        r = ds.train_linear(X, np.where(y3 == c, 1.0, -1.0), C=1e4, tol=1e-8)
        assert r.params["solver_chosen"] == "sdca+newton"
        assert np.array_equal(m.coef[c], r.coef)


def test_newton_first_on_narrow_data(heart):
    """auto runs Newton from the start where the rows outnumber the columns and Newton may
    solve with the explicit Hessian; not on wide data, nor from a path's dual start."""
    from dualsolve.linear import newton_first
    X, y = heart                                    # 270 x 13
    m = ds.train_linear(X, y, C=1e4, tol=1e-10)
    assert m.params["solver_chosen"] == "newton" and m.stop_reason == "converged"
    ref = ds.train_newton(X, y, C=1e4, tol=1e-10)
    assert np.array_equal(m.coef, ref.coef) and np.array_equal(m.dual, ref.dual)
    w, p = lbfgs(X, y, 1.0 / (1e4 * X.shape[0]), "logistic")
    assert objective(X, y, m.coef, 1.0 / (1e4 * X.shape[0]), "logistic") <= p * (1 + 1e-9)
    # 12 rows and 13 columns: wide, SDCA first
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wide = ds.train_linear(X[:12], y[:12], C=1e4, tol=1e-8)
    assert wide.params["solver_chosen"] in ("sdca", "sdca+newton")
    # the intercept's column counts: 13 rows, 13 columns + 1
    assert newton_first(14, 13, X[:14].indptr, False, None)
    assert not newton_first(13, 13, X[:13].indptr, True, None)
    # a path's start (dual variables) goes to SDCA; a Model's coef to Newton
    assert not newton_first(270, 13, X.indptr, False, np.zeros(270))
    assert newton_first(270, 13, X.indptr, False, m)
    # too many columns for the explicit Hessian
    big = sp.random(5000, 3000, density=0.001, format="csr", random_state=0)
    assert not newton_first(5000, 3000, big.indptr, False, None)


def test_explicit_hessian_agrees_with_cg():
    """Newton's exact steps (the explicit Hessian's Cholesky factor, narrow data) and its CG
    steps reach the same certified optimum, checked against L-BFGS."""
    from dualsolve.newton import _newton
    X, y = ds.datasets.load("a9a")
    X, y = X[:4000], y[:4000]
    lam = 1.0 / (100.0 * X.shape[0])
    w_ref, p_ref = lbfgs(X, y, lam, "logistic")
    models = {}
    old = _newton._dense_max_columns()
    try:
        for columns in (old, 0):
            _newton._dense_max_columns(columns)
            models[columns] = ds.train_newton(X, y, C=100.0, tol=1e-9)
    finally:
        _newton._dense_max_columns(old)
    dense, cg = models[old], models[0]
    assert dense.params["dense_steps"] > 0 and cg.params["dense_steps"] == 0
    for m in (dense, cg):
        assert m.stop_reason == "converged"
        assert m.history["gap"][-1] <= 1e-9 * m.history["dual"][-1]
        assert objective(X, y, m.coef, lam, "logistic") == pytest.approx(p_ref, rel=1e-9)
    # the exact steps take no Hessian-vector products
    assert np.nansum(dense.history["cg_iters"]) < np.nansum(cg.history["cg_iters"])


def test_a_hard_cut_bounds_the_next_step_on_w8a():
    """w8a logistic at C = 100: far from the optimum the full Newton step is orders too
    long and the line search cuts it below 1/16; the next CG then stops on the step radius
    (fewer products than the cut iteration's), that step is taken whole, and the solve still
    certifies L-BFGS's optimum."""
    root = ds.datasets.data_dir()
    if root is None or not (root / "libsvm" / "w8a.xz").exists():
        pytest.skip("DUALSOLVE_DATA with libsvm/w8a.xz not set")
    X, y = ds.load_svmlight(root / "libsvm" / "w8a.xz", n_features=300)
    C = 100.0
    lam = 1.0 / (C * X.shape[0])
    m = ds.train_newton(X, y, C=C, tol=1e-9)
    assert m.stop_reason == "converged"
    steps, products = m.history["step"], m.history["cg_iters"]
    cut = np.flatnonzero(steps <= 1.0 / 16)
    assert cut.size > 0, steps
    k = cut[0]
    assert products[k + 1] < products[k] and steps[k + 1] == 1.0
    _, p_ref = lbfgs(X, y, lam, "logistic")
    P = objective(X, y, m.coef, lam, "logistic")
    assert P <= p_ref * (1 + 1e-9)
    assert p_ref >= P * (1 - 1e-9)
    assert m.history["gap"][-1] <= 1e-9 * m.history["dual"][-1]


@pytest.mark.parametrize("loss, weighted", [("logistic", False), ("squared_hinge", False),
                                            ("logistic", True)])
def test_polished_dual_certifies_without_another_iteration(loss, weighted):
    """Where CG solves each iteration (the explicit Hessian switched off, as on wide data),
    the certificate's dual point a = -c phi'(X w) is polished by SDCA's coordinate steps
    once the gap is near its target: the reported dual is then no longer a(w), and the gap
    P(coef) - D(dual), recomputed here from the formulas alone, still meets tol, with
    coef within tol of L-BFGS's optimum (weights and the intercept's constant feature
    included)."""
    from dualsolve.newton import _newton
    X, y = ds.datasets.load("a9a")
    X, y = X[:4000], y[:4000]
    n, C, tol = X.shape[0], 1000.0, 1e-4
    lam = 1.0 / (C * n)
    c = np.where(y > 0, 2.0, 0.5) if weighted else np.ones(n)
    kw = dict(sample_weight=c, fit_intercept=True, intercept_scaling=2.0) if weighted else {}
    old = _newton._dense_max_columns(0)
    try:
        m = ds.train_newton(X, y, loss=loss, C=C, tol=tol, **kw)
    finally:
        _newton._dense_max_columns(old)
    assert m.stop_reason == "converged"
    Xb = sp.hstack([X, np.full((n, 1), 2.0)]).tocsr() if weighted else X
    w = np.append(m.coef, m.intercept / 2.0) if weighted else m.coef
    a = m.dual
    assert not np.allclose(a, -c * L.derivative(loss, Xb @ w, y), rtol=0, atol=1e-9)
    h = c * L.conjugate(loss, a / c, y)
    assert np.isfinite(h).all()                                     # feasible
    w_a = Xb.T @ a / (lam * n)
    D = -0.5 * lam * w_a @ w_a - h.mean()
    P = objective(Xb, y, w, lam, loss, c=c)
    assert P - D <= tol * D
    _, p_ref = lbfgs(Xb, y, lam, loss, c=c)
    assert D <= p_ref * (1 + 1e-10) and P <= p_ref * (1 + tol)


def test_a_stalled_continuation_says_so():
    """The hinge's smoothing continuation stalls on narrow random data (2,000 x 300) at
    C = 10: the warning says the run stopped before its budget and why, and does not send
    the user to max_epochs."""
    rng = np.random.default_rng(0)
    X = sp.random(2000, 300, density=0.05, format="csr", random_state=1)
    y = np.where(X @ rng.standard_normal(300) + 0.1 * rng.standard_normal(2000) > 0, 1.0, -1.0)
    with pytest.warns(ds.ConvergenceWarning) as rec:
        m = ds.train_newton(X, y, loss="hinge", C=10.0, tol=1e-6)
    text = str(rec[0].message)
    assert m.stop_reason == "max_epochs" and m.n_epochs < 1000
    assert text.startswith(f"train_newton stopped after {m.n_epochs} epochs (max_epochs=1000)")
    assert "increase tol." in text and "max_epochs or tol" not in text
    assert "smoothing continuation stopped gaining" in text and "train_sdca" in text
    assert "rounding level" not in text
    # what the note points to: SDCA certifies the same problem
    s = ds.train_sdca(X, y, loss="hinge", C=10.0, tol=1e-6)
    assert s.converged and s.history["primal"][-1] <= m.history["primal"][-1]
