"""regularization_path and cross_validate: warm-started paths reach the cold optima, folds
are stratified and reproducible, and bad input is a clear error."""
import inspect

import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds
from dualsolve._driver import prepare, solvers
from dualsolve.selection import _folds, cross_validate, regularization_path


@pytest.fixture(scope="module")
def heart():
    return ds.datasets.load("heart_scale")


def test_path_equals_cold_solves(heart):
    X, y = heart
    n = X.shape[0]
    lams = np.array([1.0, 0.1, 10.0, 0.01]) / n
    models = regularization_path(ds.train_sdca, X, y, lams=lams, loss="logistic", tol=1e-10)
    for lam, m in zip(lams, models):
        assert m.params["lam"] == lam and m.converged
        cold = ds.train_sdca(X, y, lam=lam, loss="logistic", tol=1e-10)
        # both certified to 1e-10 relative to P*: the objectives agree to that
        assert abs(m.history["primal"][-1] - cold.history["primal"][-1]) <= 2e-10
        np.testing.assert_allclose(m.coef, cold.coef, rtol=0, atol=1e-4)


def test_path_warm_starts_pay(heart):
    X, y = heart
    lams = np.geomspace(1.0, 1e-2, 8) / X.shape[0]
    path = regularization_path("sdca", X, y, lams=lams, loss="squared_hinge", tol=1e-8)
    # the budget lets every cold solve converge (tol is relative to P*: the small lams need
    # more than the default 5000 epochs cold)
    cold = [ds.train_sdca(X, y, lam=lam, loss="squared_hinge", tol=1e-8, max_epochs=200000)
            for lam in lams]
    assert all(m.converged for m in path + cold)
    assert sum(m.n_epochs for m in path) < 0.8 * sum(m.n_epochs for m in cold)


@pytest.mark.parametrize("loss, intercept", [("logistic", True), ("squared_hinge", True),
                                             ("hinge", False)])
def test_path_keeps_margins_and_skips_the_start_check(heart, loss, intercept, tmp_path):
    """The path's SDCA solves keep the training scores x_i.w + b (the next start reads
    them) and start without an exact check (epoch 0 has D only); a saved model loads."""
    X, y = heart
    lams = np.array([1.0, 0.5, 0.25]) / X.shape[0]
    models = regularization_path(ds.train_sdca, X, y, lams=lams, loss=loss, tol=1e-6,
                                 fit_intercept=intercept)
    for k, m in enumerate(models):
        assert m.converged
        np.testing.assert_allclose(m.extra["margins"], X @ m.coef + m.intercept,
                                   rtol=0, atol=1e-10)
        first = m.history[0]
        assert np.isfinite(first["dual"]) and np.isnan(first["primal"]) == (k > 0)
    m = models[-1]
    m.save(tmp_path / "m.npz")
    back = ds.load_model(tmp_path / "m.npz")
    np.testing.assert_array_equal(back.extra["margins"], m.extra["margins"])


def _start_gap(X, y, C, a, loss):
    with pytest.warns(ds.ConvergenceWarning):          # one epoch: only the start's gap matters
        m = ds.train_sdca(X, y, C=C, loss=loss, tol=1e-6, warm_start=a, max_epochs=1)
    return m.history["gap"][0] / m.history["dual"][0]


def test_squared_hinge_start_extrapolates_alpha_on_separable_rows():
    """More features than rows (separable): the squared hinge's a_i shrinks like 1/C and
    liblinear's alpha = a / lam settles, so the path extrapolates alpha; the start is far
    closer than the dual read off the extrapolated primal (measured: relative gap 1e-2
    against 1e1 and more)."""
    from dualsolve._core import losses
    from dualsolve._warm_path import _alpha_settles, extrapolated_start
    rng = np.random.default_rng(0)
    X = sp.random(150, 1500, density=0.02, random_state=1, format="csr")
    y = np.where(rng.random(150) < 0.5, -1.0, 1.0)
    Cs = [4.0, 8.0, 16.0]
    models = regularization_path(ds.train_sdca, X, y, Cs=Cs, loss="squared_hinge", tol=1e-8)
    assert _alpha_settles(models[:2])
    solver = solvers()["sdca"]
    args = inspect.signature(ds.train_sdca).bind(X, y, C=32.0, loss="squared_hinge")
    args.apply_defaults()
    p = prepare(solver, dict(args.arguments))[0]
    start, rule = extrapolated_start(models, p.lam, p, solver)
    assert rule == "alpha"
    z = 2 * (X @ models[-1].coef) - X @ models[-2].coef
    from_primal = np.clip(-losses.derivative("squared_hinge", z, y, 0.5),
                          *losses.dual_bounds("squared_hinge", y, 0.5))
    ours, primal = _start_gap(X, y, 32.0, start, "squared_hinge"), \
        _start_gap(X, y, 32.0, from_primal, "squared_hinge")
    assert ours < 0.1 * primal, (ours, primal)


def test_logistic_path_leaves_the_primal_start_once_it_is_slow(monkeypatch):
    """Logistic (a bounded dual) starts from the extrapolated primal; a solve from it that
    takes more than SLOW_START_EPOCHS epochs moves the rest of the path to alpha's start
    (where alpha settles), recorded in each model's params["start_rule"]. Whichever start,
    every solve reaches the cold certified optimum."""
    import dualsolve._warm_path as warm_path
    rng = np.random.default_rng(0)
    X = sp.random(150, 1500, density=0.02, random_state=1, format="csr")
    y = np.where(rng.random(150) < 0.5, -1.0, 1.0)
    Cs = 2.0 ** np.arange(0, 6)
    models = regularization_path(ds.train_sdca, X, y, Cs=Cs, loss="logistic", tol=1e-9)
    rules = [m.params.get("start_rule") for m in models]
    assert rules[0] is None and rules[1] == "last"
    assert all(r == "primal" for r in rules[2:]), rules     # short solves: the primal's start
    monkeypatch.setattr(warm_path, "SLOW_START_EPOCHS", 0)   # every solve counts as slow
    models = regularization_path(ds.train_sdca, X, y, Cs=Cs, loss="logistic", tol=1e-9)
    rules = [m.params.get("start_rule") for m in models]
    assert rules[2] == "primal" and all(r == "alpha" for r in rules[3:]), rules
    for C, m in zip(Cs, models):
        cold = ds.train_sdca(X, y, C=C, loss="logistic", tol=1e-9)
        assert m.converged and cold.converged
        assert abs(m.history["primal"][-1] - cold.history["primal"][-1]) <= 2e-9 * abs(
            cold.history["primal"][-1])


def _start_for(path, X, y, lam, loss):
    """extrapolated_start for train_linear at lam after the solves ``path``."""
    from dualsolve._warm_path import extrapolated_start
    solver = solvers()["linear"]
    args = inspect.signature(ds.train_linear).bind(X, y, lam=lam, loss=loss)
    args.apply_defaults()
    p = prepare(solver, dict(args.arguments))[0]
    return extrapolated_start(path, p.lam, p, solver)


def _cold_optima(path, X, y, lams, loss, tol):
    for lam, m in zip(lams, path):
        cold = ds.train_linear(X, y, lam=lam, loss=loss, tol=tol, max_epochs=100000)
        assert m.converged and cold.converged
        assert abs(m.history["primal"][-1] - cold.history["primal"][-1]) <= 2 * tol * abs(
            cold.history["primal"][-1])


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_train_linear_path_takes_the_extrapolated_start(loss):
    """Where the path's solves end with SDCA (wide rows, small C), train_linear's SDCA
    starts from the path's extrapolation (a dual array, not the last model) and every solve
    reaches the cold certified optimum."""
    rng = np.random.default_rng(0)
    X = sp.random(150, 1500, density=0.02, random_state=1, format="csr")
    y = np.where(rng.random(150) < 0.5, -1.0, 1.0)
    lams = np.geomspace(1.0, 1e-1, 5) / X.shape[0]
    path = regularization_path(ds.train_linear, X, y, lams=lams, loss=loss, tol=1e-10,
                               max_epochs=100000)
    assert all(m.params["solver_chosen"] == "sdca" for m in path)
    _cold_optima(path, X, y, lams, loss, 1e-10)
    start, rule = _start_for(path, X, y, lams[-1] / 2, loss)
    assert isinstance(start, np.ndarray) and start.shape == (X.shape[0],)
    assert rule in ("primal", "alpha")


def test_train_linear_path_goes_on_with_newton(heart):
    """Once a path's solve ends with Newton (heart: narrow rows, Newton from the start),
    the next one is Newton's from the extrapolated primal of least objective (start_rule
    "newton", a Model with coef and intercept), which is no worse than the last solution
    at the new lam; every solve reaches the cold certified optimum."""
    X, y = heart
    lams = np.geomspace(1.0, 1e-2, 5) / X.shape[0]
    path = regularization_path(ds.train_linear, X, y, lams=lams, loss="logistic", tol=1e-10,
                               fit_intercept=True)
    assert path[0].params["solver_chosen"] == "newton"
    assert [m.params.get("start_rule") for m in path[2:]] == ["newton"] * 3
    assert all(m.params["solver_chosen"] == "newton" for m in path)
    for lam, m in zip(lams, path):
        cold = ds.train_linear(X, y, lam=lam, loss="logistic", tol=1e-10, fit_intercept=True)
        assert m.converged and cold.converged
        assert abs(m.history["primal"][-1] - cold.history["primal"][-1]) <= 2e-10 * abs(
            cold.history["primal"][-1])
    lam = lams[-1] * lams[-1] / lams[-2]
    start, rule = _start_for(path, X, y, lam, "logistic")
    assert rule == "newton" and isinstance(start, ds.Model) and start.dual is None

    def objective(coef, b):
        z = y * (X @ coef + b)
        return np.mean(np.logaddexp(0.0, -z)) + 0.5 * lam * (coef @ coef + b * b)

    # the least objective of the polynomials in log lam through the last 1, 2, 3 solutions
    from dualsolve._warm_path import _lagrange
    s = np.log(lams[-3:])
    candidates = []
    for order in (1, 2, 3):
        c = _lagrange(s[-order:], np.log(lam))
        coef = sum(ck * m.coef for ck, m in zip(c, path[-order:]))
        b = sum(ck * m.intercept for ck, m in zip(c, path[-order:]))
        candidates.append(objective(coef, b))
    assert objective(start.coef, start.intercept) == pytest.approx(min(candidates), rel=1e-12)
    assert len(set(candidates)) == 3
    # a larger lam (going back down the path), SDCA-only paths: the starts as before
    assert _start_for(path, X, y, lams[0] * 2, "logistic")[1] != "newton"
    sdca_path = regularization_path(ds.train_linear, X, y, lams=lams[:3], loss="logistic",
                                    solver="sdca", max_epochs=100000)
    assert _start_for(sdca_path, X, y, lam, "logistic")[1] != "newton"


def test_train_linear_path_hands_ill_conditioned_solves_to_newton():
    """On wide rows the path's solves are SDCA's until the conditioning max c_i ||x_i||^2 /
    (gamma lam n) reaches NEWTON_CONDITION (unit rows, logistic: C / 4); from there Newton
    takes them from the start (start_rule "newton"), and every solve reaches the cold
    certified optimum. Not for the squared hinge on more columns than rows (auto never
    hands it to Newton there), nor for SDCA alone."""
    from dualsolve._warm_path import NEWTON_CONDITION
    rng = np.random.default_rng(0)
    X = sp.random(200, 2000, density=0.02, random_state=2, format="csr")
    X = sp.diags(1.0 / np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())) @ X
    y = np.where(rng.random(200) < 0.5, -1.0, 1.0)
    Cs = np.array([16.0, 64.0, 256.0, 1024.0, 4096.0])
    kappa = Cs / 4.0
    path = regularization_path(ds.train_linear, X, y, Cs=Cs, loss="logistic", tol=1e-10,
                               max_epochs=100000)
    rules = [m.params.get("start_rule") for m in path]
    assert [r == "newton" for r in rules[1:]] == list(kappa[1:] >= NEWTON_CONDITION)
    assert rules[-1] == "newton" and rules[1] != "newton"
    assert all(m.params["solver_chosen"] == "newton" for m, r in zip(path, rules)
               if r == "newton")
    _cold_optima(path, X, y, 1.0 / (Cs * X.shape[0]), "logistic", 1e-10)
    # Newton's path solves keep their rows' scores, as SDCA's do, for the next start
    for fit_intercept in (False, True):
        models = path if not fit_intercept else regularization_path(
            ds.train_linear, X, y, Cs=Cs[-3:], loss="logistic", tol=1e-8,
            fit_intercept=True, intercept_scaling=3.0, max_epochs=100000)
        newton = [m for m in models if m.params.get("start_rule") == "newton"]
        assert newton
        for m in newton:
            np.testing.assert_allclose(m.extra["margins"], X @ m.coef + m.intercept,
                                       rtol=0, atol=1e-12 * (1 + np.abs(m.coef).sum()))
    hinge = regularization_path(ds.train_linear, X, y, Cs=Cs[-2:], loss="squared_hinge",
                                tol=1e-8, max_epochs=100000)
    assert hinge[-1].params.get("start_rule") != "newton"
    sdca = regularization_path(ds.train_linear, X, y, Cs=Cs[-2:], loss="logistic",
                               solver="sdca", tol=1e-8, max_epochs=100000)
    assert sdca[-1].params.get("start_rule") != "newton"


def test_path_works_for_a_primal_dual_solver(heart):
    X, y = heart
    lams = np.array([1.0, 0.1]) / X.shape[0]
    models = regularization_path(ds.train_svrg, X, y, lams=lams, loss="logistic", tol=1e-8)
    assert [m.params["lam"] for m in models] == list(lams)
    assert all(m.converged for m in models)


@pytest.mark.parametrize("classes", [2, 3])
def test_a_kernel_path_builds_its_gram_once(classes, heart, monkeypatch):
    """The Gram does not depend on lam: a path's solves (and one-vs-rest's classes in
    them) read one dense matrix, and each solve is the one it was with its own."""
    import dualsolve.mixup.api as mixup_api
    made = []
    make = mixup_api._kernels.make_column_source

    def counted(*args, **kwargs):
        made.append(1)
        return make(*args, **kwargs)

    X, y = heart
    if classes == 3:
        y = np.where(np.asarray(X[:, 0].todense()).ravel() > 0.3, 2, y)
    Cs = [0.1, 1.0, 10.0]
    cold = [ds.train_mixup_sdca(X, y, kernel="rbf", C=C, tol=1e-6) for C in Cs]
    monkeypatch.setattr(mixup_api._kernels, "make_column_source", counted)
    path = regularization_path(ds.train_mixup_sdca, X, y, Cs=Cs, kernel="rbf", tol=1e-6)
    assert len(made) == 1
    for a, b in zip(path, cold):           # both certified at 1e-6: the same objectives
        assert a.converged and b.converged
        assert a.params["lam"] == b.params["lam"]
        np.testing.assert_allclose(_final_primals(a), _final_primals(b), rtol=2e-6)


def _final_primals(model):
    """The last checked primal value of each class (one for a binary model)."""
    h = model.history
    h = h[np.isfinite(h["primal"])]
    if "class" not in h.dtype.names:
        return h["primal"][-1:]
    return np.array([h["primal"][h["class"] == c][-1] for c in np.unique(h["class"])])


def test_folds_are_stratified_and_reproducible():
    y = np.array([0] * 50 + [1] * 30 + [2] * 20)
    f = _folds(y, 5, seed=3, stratified=True)
    np.testing.assert_array_equal(f, _folds(y, 5, seed=3, stratified=True))
    for c, count in ((0, 50), (1, 30), (2, 20)):
        np.testing.assert_array_equal(np.bincount(f[y == c], minlength=5), [count // 5] * 5)
    assert not np.array_equal(f, _folds(y, 5, seed=4, stratified=True))


def test_cross_validate_is_the_manual_loop(heart):
    X, y = heart
    scores = cross_validate(ds.train_sdca, X, y, n_folds=4, seed=1, loss="logistic", tol=1e-8)
    fold = _folds(y, 4, 1, stratified=True)
    for k in range(4):
        te = fold == k
        m = ds.train_sdca(X[~te], y[~te], loss="logistic", tol=1e-8)
        assert scores[k] == np.mean(m.predict(X[te]) == y[te])
    assert 0.75 < scores.mean() < 0.9


def test_cross_validate_over_a_path_and_regression():
    X, y = ds.datasets.load("kin8nm")
    X = sp.csr_matrix(X[:600])
    y = y[:600]
    lams = [1e-1, 1e-3]
    # tol 1e-12: a certified 1e-8 leaves w anywhere within ||w - w*||^2 <= 2 gap / lam, and
    # two such solves (warm and cold) differ in held-out error by ~1e-5 on raw kin8nm
    s = cross_validate("train_sdca", X, y, n_folds=3, loss="squared", lams=lams, tol=1e-12)
    assert s.shape == (2, 3) and np.all(s > 0)
    fold = _folds(y, 3, 0, stratified=False)
    m = ds.train_sdca(X[fold != 2], y[fold != 2], loss="squared", lam=1e-3, tol=1e-12)
    assert s[1, 2] == pytest.approx(np.mean((m.predict(X[fold == 2]) - y[fold == 2]) ** 2),
                                    rel=1e-5)


@pytest.mark.parametrize("kw, err, match", [
    (dict(n_folds=1), ValueError, "n_folds"),
    (dict(n_folds=1000), ValueError, "n_folds"),
    (dict(n_folds=2.5), TypeError, "n_folds"),
    (dict(scoring="mse"), ValueError, "scoring"),
    (dict(scoring="nope"), ValueError, "scoring"),
    (dict(seed="x"), TypeError, "seed"),
    (dict(lams=[0.1, -1.0]), ValueError, "lams"),
    (dict(warm_start=None), TypeError, "warm_start"),
])
def test_cross_validate_bad_input(heart, kw, err, match):
    X, y = heart
    with pytest.raises(err, match=match):
        cross_validate(ds.train_sdca, X, y, **kw)


def test_a_class_with_one_row_is_named(heart):
    X, y = heart
    y = y.copy()
    y[0] = 7
    with pytest.raises(ValueError, match="class 7.0 with a single row"):
        cross_validate(ds.train_sdca, X, y)


@pytest.mark.parametrize("trainer, err", [("nope", ValueError), (len, ValueError), (3, TypeError)])
def test_unknown_trainer(heart, trainer, err):
    X, y = heart
    with pytest.raises(err, match="trainer"):
        regularization_path(trainer, X, y, lams=[1.0])


def test_path_refuses_what_it_sets(heart):
    X, y = heart
    with pytest.raises(TypeError, match="C"):
        regularization_path(ds.train_sdca, X, y, lams=[1.0], C=1.0)
    with pytest.raises(ValueError, match="lams"):
        regularization_path(ds.train_sdca, X, y, lams=[])


def test_a_grid_of_C_is_liblinear_cost(heart):
    X, y = heart
    n = X.shape[0]
    by_C = regularization_path(ds.train_sdca, X, y, Cs=[0.5, 4.0], tol=1e-10)
    by_lam = regularization_path(ds.train_sdca, X, y, lams=[1 / (0.5 * n), 1 / (4.0 * n)],
                                 tol=1e-10)
    for a, b in zip(by_C, by_lam):
        assert a.params["lam"] == pytest.approx(b.params["lam"], rel=1e-15)
        np.testing.assert_allclose(a.coef, b.coef, rtol=0, atol=1e-6)
    with pytest.raises(TypeError, match="one of them"):
        regularization_path(ds.train_sdca, X, y, lams=[1.0], Cs=[1.0])


def test_warnings_point_at_the_caller(heart):
    X, y = heart
    with pytest.warns(ds.ConvergenceWarning) as rec:
        regularization_path(ds.train_sdca, X, y, Cs=[1.0], max_epochs=1, tol=1e-12)
    assert rec[0].filename == __file__
    with pytest.warns(ds.ConvergenceWarning) as rec:
        ds.train_sdca(X, y, max_epochs=1, tol=1e-12)
    assert rec[0].filename == __file__
    y3 = np.where(np.asarray(X[:, 0].todense()).ravel() > 0.3, 2.0, y)
    with pytest.warns(ds.ConvergenceWarning) as rec:
        ds.train_sdca(X, y3, max_epochs=1, tol=1e-12)
    assert {r.filename for r in rec} == {__file__}
    with pytest.warns(ds.ConvergenceWarning) as rec:
        regularization_path(ds.train_sdca, X, y3, Cs=[1.0], max_epochs=1, tol=1e-12)
    assert {r.filename for r in rec} == {__file__}
