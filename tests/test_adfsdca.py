"""Dual-free SDCA family (He, Tappenden & Takac 2018): dfSDCA, IS-dfSDCA, adfSDCA+ and
exact adfSDCA.

References: scipy L-BFGS / the ridge normal equations (tests/conftest.py), and slow NumPy
twins that replay the solver's sampled coordinates (recorded through
``dualsolve.adfsdca.api._record_coordinates``) step by step.
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import entr, expit

import dualsolve
from dualsolve._core import status as _status
from dualsolve.adfsdca import train_dfsdca, train_adfsdca
from dualsolve.adfsdca.api import _record_coordinates
from dualsolve._validation import ConvergenceWarning

METHODS = {
    "dfsdca": lambda X, y, **kw: train_dfsdca(X, y, **kw),
    "is_dfsdca": lambda X, y, **kw: train_dfsdca(X, y, sampling="importance", **kw),
    "adfsdca_plus": lambda X, y, **kw: train_adfsdca(X, y, variant="plus", **kw),
    "adfsdca_exact": lambda X, y, **kw: train_adfsdca(X, y, variant="exact", **kw),
}
LTILDE = {"logistic": 0.25, "squared": 1.0}


# ---------------------------------------------------------------------------------------
# the test problems F1-F3 (tests/helpers/adfsdca_fixtures.py)


@pytest.fixture(scope="module")
def f1(adf_fixtures):
    return adf_fixtures.make_f1(0)


@pytest.fixture(scope="module")
def f2(adf_fixtures):
    return adf_fixtures.make_f1(1, unit=True)


@pytest.fixture(scope="module")
def f3(adf_fixtures):
    return adf_fixtures.make_f3(2)


def _deriv(loss, z, y):
    return z - y if loss == "squared" else -y * expit(-y * z)


def _optimum(references, X, y, lam, loss):
    if loss == "squared":
        return references.ridge(X, y, lam)
    return references.lbfgs(X, y, lam, loss)


def _quiet(f, *a, trace=None, **kw):
    """f(*a, **kw) without ConvergenceWarnings; ``trace`` (an intp array) receives the
    sampled coordinates."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if trace is None:
            return f(*a, **kw)
        with _record_coordinates(trace):
            return f(*a, **kw)


# ---------------------------------------------------------------------------------------
# convergence to the reference optimum


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("data", ["f2", "heart"])
def test_reaches_reference_optimum(method, loss, data, request, references):
    X, y = request.getfixturevalue(data)
    n = X.shape[0]
    lam = 1.0 / n
    p_star, w_star = _optimum(references, X, y, lam, loss)
    m = METHODS[method](X, y, loss=loss, lam=lam, tol=1e-12, max_epochs=1000)
    assert m.converged
    p = references.primal(X, y, m.coef, lam, loss)
    assert abs(p - p_star) <= 1e-8 * max(1.0, abs(p_star))
    assert np.linalg.norm(m.coef - w_star) <= 1e-4 * max(1.0, np.linalg.norm(w_star))
    kappa = m.dual + _deriv(loss, X @ m.coef, y)
    assert np.abs(kappa).max() <= 1e-5
    h = m.history
    assert h["gap"][-1] <= 1e-12 * h["primal"][0]
    assert h["primal"][-1] == pytest.approx(p, rel=1e-12)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_reaches_optimum_on_sparse_binary_logistic(method, f3, references):
    X, y = f3
    lam = 1.0 / X.shape[0]
    p_star, _ = references.lbfgs(X, y, lam, "logistic")
    m = METHODS[method](X, y, loss="logistic", lam=lam, tol=1e-11, max_epochs=400)
    assert m.converged
    p = references.primal(X, y, m.coef, lam, "logistic")
    assert abs(p - p_star) <= 1e-8 * max(1.0, abs(p_star))


# ---------------------------------------------------------------------------------------
# invariants


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_primal_dual_invariant_and_residue_identity(method, loss, f1):
    X, y = f1
    n = X.shape[0]
    lam = 1.0 / n
    # tol = 0: no certification, so w is the incrementally updated one
    m = _quiet(METHODS[method], X, y, loss=loss, lam=lam, tol=0.0, max_epochs=7, seed=3)
    assert not m.converged and m.n_epochs == 7
    w_alpha = X.T @ m.dual / (lam * n)
    assert np.abs(m.coef - w_alpha).max() <= 1e-10 * max(1.0, np.abs(m.coef).max())
    # (1/n) X^T kappa = grad P(w) when w = w(alpha)
    z = X @ w_alpha
    kappa = m.dual + _deriv(loss, z, y)
    grad = X.T @ _deriv(loss, z, y) / n + lam * w_alpha
    lhs = X.T @ kappa / n
    assert np.linalg.norm(grad) > 1e-6          # far from the optimum: a real comparison
    np.testing.assert_allclose(lhs, grad, rtol=0, atol=1e-12 * np.abs(grad).max() * 100)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_certificate_bounds_suboptimality(method, f1, references):
    X, y = f1
    lam = 1.0 / X.shape[0]
    p_star, _ = references.lbfgs(X, y, lam, "logistic")
    m = _quiet(METHODS[method], X, y, loss="logistic", lam=lam, tol=0.0, max_epochs=30)
    h = m.history
    assert np.isfinite(h["gap"]).all()
    sub = h["primal"] - p_star
    assert np.all(sub >= -1e-12)
    assert np.all(h["gap"] >= sub - 1e-12)
    assert h["gap"][-1] < 0.1 * h["gap"][0]
    assert set(np.unique(h["dual_kind"])) <= {0.0, 1.0}


def test_uniform_keeps_logistic_dual_feasible(f1):
    X, y = f1
    m = _quiet(train_dfsdca, X, y, loss="logistic", tol=0.0, max_epochs=20)
    assert np.all(m.history["dual_kind"] == 1.0)
    b = y * m.dual
    assert b.min() >= 0.0 and b.max() <= 1.0


def test_infeasible_alpha_uses_the_alphatilde_certificate(f1, references):
    """A warm start outside the logistic dual domain: the epoch-0 gap is the certificate
    P(w) - D(-phi'(Xw)), checked here against a NumPy evaluation."""
    X, y = f1
    n = X.shape[0]
    lam = 1.0 / n
    alpha = 2.0 * y          # y alpha = 2 > 1: D(alpha) = -inf
    m = _quiet(train_dfsdca, X, y, loss="logistic", lam=lam, tol=0.0, max_epochs=0,
               warm_start=alpha)
    h = m.history
    assert h["dual_kind"][0] == 0.0
    w = X.T @ alpha / (lam * n)
    z = X @ w
    at = -_deriv("logistic", z, y)
    b = y * at
    ent = entr(b) + entr(1.0 - b)
    wt = X.T @ at / (lam * n)
    d_ref = ent.mean() - 0.5 * lam * wt @ wt
    assert h["primal"][0] == pytest.approx(references.primal(X, y, w, lam, "logistic"), rel=1e-12)
    assert h["dual"][0] == pytest.approx(d_ref, rel=1e-12)
    assert h["gap"][0] == pytest.approx(h["primal"][0] - d_ref, rel=1e-10)


# ---------------------------------------------------------------------------------------
# adaptivity pays off on uneven row norms (He et al. 2018, Section 7)


def _epochs_to(f, X, y, tol, **kw):
    m = _quiet(f, X, y, loss="logistic", lam=1.0 / X.shape[0], tol=tol, max_epochs=200, **kw)
    return m.n_epochs if m.converged else 10**6


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_adaptive_needs_fewer_epochs_on_uneven_norms(seed, f1):
    X, y = f1
    uni = _epochs_to(train_dfsdca, X, y, 1e-6, seed=seed)
    imp = _epochs_to(train_dfsdca, X, y, 1e-6, seed=seed, sampling="importance")
    plus = _epochs_to(train_adfsdca, X, y, 1e-6, seed=seed, variant="plus")
    exact = _epochs_to(train_adfsdca, X, y, 1e-6, seed=seed, variant="exact")
    assert plus < uni
    assert exact <= 0.5 * uni
    assert exact <= imp
    assert imp < uni


# ---------------------------------------------------------------------------------------
# NumPy twins replaying the sampled coordinates


def _twin(method, X, y, loss, lam, trace, epochs, s=10.0, cap=1.0):
    A = X.toarray()
    n, d = A.shape
    lt = LTILDE[loss]
    v = (A * A).sum(axis=1)
    alpha, w = np.zeros(n), np.zeros(d)
    nl = n * lam
    c = nl + lt * v
    sq = np.sqrt(v * lam * lt + n * lam * lam)
    cap_eta = cap * nl / c
    pos = 0

    def step(i, eta, kappa):
        da = -eta * kappa
        alpha[i] += da
        w[:] += da / nl * A[i]

    for _ in range(epochs):
        if method in ("plus",):
            kappa = alpha + _deriv(loss, A @ w, y)
            u = sq * np.abs(kappa)
            theta = nl * lam * (kappa @ kappa) / u.sum() ** 2
        for _t in range(n):
            i = trace[pos]
            pos += 1
            if method == "exact":
                kappa = alpha + _deriv(loss, A @ w, y)          # naive: all residues
                u = sq * np.abs(kappa)
                theta = nl * lam * (kappa @ kappa) / u.sum() ** 2
                step(i, theta * u.sum() / u[i], kappa[i])
                continue
            ki = alpha[i] + _deriv(loss, A[i] @ w, y[i])
            if method == "uniform":
                eta = lam * n / (nl + lt * v.max())
            elif method == "importance":
                p = c / c.sum()
                eta = (nl / c.sum()) / p[i]
            else:
                eta = min(theta / (u[i] / u.sum()), cap_eta[i])
            step(i, eta, ki)
            if method == "plus":
                u[i] /= s
    return w, alpha


@pytest.mark.parametrize("method,loss", [("uniform", "logistic"), ("uniform", "squared"),
                                         ("importance", "logistic"), ("plus", "logistic"),
                                         ("plus", "squared"), ("exact", "logistic"),
                                         ("exact", "squared")])
def test_numpy_twin_replays_the_iterates(method, loss, f1):
    X, y = f1
    n = X.shape[0]
    lam = 1.0 / n
    epochs = 3
    trace = np.full(epochs * n, -1, dtype=np.intp)
    if method in ("uniform", "importance"):
        f, kw = train_dfsdca, dict(sampling=method)
    else:
        f, kw = train_adfsdca, dict(variant=method)
    m = _quiet(f, X, y, loss=loss, lam=lam, tol=0.0, max_epochs=epochs, seed=5,
               trace=trace, **kw)
    assert trace.min() >= 0
    w, alpha = _twin(method, X, y, loss, lam, trace, epochs)
    rtol = 1e-12 if method in ("uniform", "importance") else 1e-9
    np.testing.assert_allclose(m.dual, alpha, rtol=0, atol=rtol * np.abs(alpha).max())
    np.testing.assert_allclose(m.coef, w, rtol=0, atol=rtol * np.abs(w).max())


def test_sampled_coordinates_follow_the_intended_law(f1):
    """Uniform draws are uniform, importance draws follow p_i ~ n lam + Lt v_i."""
    from scipy.stats import chisquare
    X, y = f1
    n = X.shape[0]
    lam = 1.0 / n
    epochs = 60
    trace = np.full(epochs * n, -1, dtype=np.intp)
    _quiet(train_dfsdca, X, y, loss="logistic", lam=lam, tol=0.0, max_epochs=epochs,
           trace=trace)
    assert trace.min() >= 0
    assert chisquare(np.bincount(trace, minlength=n)).pvalue > 1e-3
    trace.fill(-1)
    _quiet(train_dfsdca, X, y, loss="logistic", lam=lam, tol=0.0, max_epochs=epochs,
           sampling="importance", trace=trace)
    assert trace.min() >= 0
    v = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    p = n * lam + 0.25 * v
    counts = np.bincount(trace, minlength=n)
    assert chisquare(counts, p / p.sum() * trace.shape[0]).pvalue > 1e-3
    assert chisquare(counts).pvalue < 1e-6          # and not uniform


def test_plus_never_draws_zero_residue_rows(adf_fixtures):
    """Rows whose residue is zero at the epoch start are not sampled in that epoch: with
    squared loss and a row with y = 0 and x = 0, kappa stays 0 for that row."""
    X, y = adf_fixtures.make_f1(4, n=50, d=5)
    X = X.toarray()
    X[7] = 0.0
    y = y.copy()
    y[7] = 0.0
    trace = np.empty(10 * 50, dtype=np.intp)
    _quiet(train_adfsdca, sp.csr_matrix(X), y, loss="squared", tol=0.0, max_epochs=10,
           trace=trace)
    assert 7 not in set(trace.tolist())
    _quiet(train_adfsdca, sp.csr_matrix(X), y, loss="squared", tol=0.0, max_epochs=10,
           variant="exact", trace=trace)
    assert 7 not in set(trace.tolist())


# ---------------------------------------------------------------------------------------
# inputs, determinism, options


@pytest.mark.parametrize("method", sorted(METHODS))
def test_float32_and_int64_input(method, f2, references):
    X, y = f2
    X32 = X.astype(np.float32)
    X64i = X.copy()
    X64i.indices = X64i.indices.astype(np.int64)
    X64i.indptr = X64i.indptr.astype(np.int64)
    lam = 1.0 / X.shape[0]
    Xref = X32.astype(np.float64)
    p_star, _ = references.lbfgs(Xref, y, lam, "logistic")
    m = METHODS[method](X32, y, loss="logistic", lam=lam, tol=1e-12, max_epochs=500)
    assert m.converged
    assert abs(references.primal(Xref, y, m.coef, lam, "logistic") - p_star) <= 1e-8 * p_star
    a = _quiet(METHODS[method], X, y, loss="logistic", lam=lam, tol=0.0, max_epochs=3, seed=9)
    b = _quiet(METHODS[method], X64i, y, loss="logistic", lam=lam, tol=0.0, max_epochs=3, seed=9)
    np.testing.assert_array_equal(a.coef, b.coef)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_deterministic_given_seed(method, f1):
    X, y = f1
    a = _quiet(METHODS[method], X, y, tol=0.0, max_epochs=4, seed=11)
    b = _quiet(METHODS[method], X, y, tol=0.0, max_epochs=4, seed=11)
    c = _quiet(METHODS[method], X, y, tol=0.0, max_epochs=4, seed=12)
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.dual, b.dual)
    assert not np.array_equal(a.coef, c.coef)


def test_other_smooth_losses(f2, references):
    X, y = f2
    lam = 1.0 / X.shape[0]
    for loss in ("smooth_hinge", "squared_hinge"):
        p_star, _ = references.lbfgs(X, y, lam, loss)
        for method in ("dfsdca", "adfsdca_plus", "adfsdca_exact"):
            m = METHODS[method](X, y, loss=loss, lam=lam, tol=1e-12, max_epochs=1000)
            assert m.converged
            assert abs(references.primal(X, y, m.coef, lam, loss) - p_star) <= 1e-8 * p_star


def test_warm_start_and_callback(f1):
    X, y = f1
    m = train_adfsdca(X, y, tol=1e-10, max_epochs=500)
    m2 = train_adfsdca(X, y, tol=1e-10, max_epochs=500, warm_start=m)
    assert m2.converged and m2.n_epochs == 0
    seen = []

    def cb(info):
        seen.append((info["epoch"], info["coef"].copy()))
        assert not info["coef"].flags.writeable
        return info["epoch"] == 3

    m3 = train_dfsdca(X, y, tol=0.0, max_epochs=50, callback=cb)
    assert m3.n_epochs == 3 and not m3.converged and m3.stop_reason == "callback"
    assert [e for e, _ in seen] == [0, 1, 2, 3]
    np.testing.assert_array_equal(seen[-1][1], m3.coef)


def test_check_every_and_history_shape(f1):
    X, y = f1
    m = _quiet(train_adfsdca, X, y, tol=0.0, max_epochs=7, check_every=3)
    h = m.history
    assert h["epoch"].tolist() == list(range(8))
    checked = np.isfinite(h["gap"])
    assert checked.tolist() == [True, False, False, True, False, False, True, True]


def test_zero_row_and_duplicate_row(references, adf_fixtures):
    X, y = adf_fixtures.make_f1(6, n=60, d=8)
    A = X.toarray()
    A[5] = 0.0
    A[9] = A[10]
    y = y.copy()
    y[9] = y[10]
    X = sp.csr_matrix(A)
    lam = 1.0 / 60
    p_star, _ = references.lbfgs(X, y, lam, "logistic")
    for method in METHODS:
        m = METHODS[method](X, y, loss="logistic", lam=lam, tol=1e-12, max_epochs=1000)
        assert m.converged
        assert abs(references.primal(X, y, m.coef, lam, "logistic") - p_star) <= 1e-8 * p_star


def test_not_converged_warns_with_what_sets_the_rate(f1):
    """The max_epochs warning gives the certificate reached, how it moved over the second
    half of the run and Lt v / (lam n) (lam n = 1 here), v the largest squared row norm for
    the uniform step and the mean for the others (He et al. 2018, Theorem 1)."""
    X, y = f1
    v = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    for f, which, k in ((train_dfsdca, "max", 0.25 * v.max()),
                        (train_adfsdca, "mean", 0.25 * v.mean())):
        with pytest.warns(ConvergenceWarning) as rec:
            m = f(X, y, tol=1e-12, max_epochs=4)
        g = m.history["gap"]
        text = str(rec[0].message)
        assert text.startswith(f"{f.__name__} stopped at max_epochs=4 before its criterion "
                               f"held (gap certificate")
        # the threshold: tol times the last certified lower bound P - G (status.pxd's rule)
        lower = m.history["primal"][-1] - g[-1]
        need = _status.target(lower, 1e-12, _status.floor(m.params['p0']))
        assert need == 1e-12 * lower
        assert f": {g[-1]:.3e} > {need:.3e})" in text
        assert f"Over epochs 2-4 the certificate went from {g[2]:.3g} to {g[4]:.3g}" in text
        assert f"Lt {which}_i ||x_i||^2 / (lam n) = {k:.3g} sets the rate" in text


def test_bad_inputs(f1):
    X, y = f1
    with pytest.raises(ValueError, match="loss"):
        train_dfsdca(X, y, loss="hinge")
    with pytest.raises(TypeError, match="loss"):
        train_adfsdca(X, y, loss=3)
    with pytest.raises(ValueError, match="lam"):
        train_dfsdca(X, y, lam=-1.0)
    with pytest.raises(ValueError, match="lam"):
        train_adfsdca(X, y, lam=0.0)
    with pytest.raises(ValueError, match="sampling"):
        train_dfsdca(X, y, sampling="adaptive")
    with pytest.raises(ValueError, match="variant"):
        train_adfsdca(X, y, variant="mini")
    with pytest.raises(ValueError, match="prob_shrink must"):
        train_adfsdca(X, y, prob_shrink=0.5)
    with pytest.raises(ValueError, match="step_cap"):
        train_adfsdca(X, y, step_cap="bogus")
    with pytest.raises(ValueError, match="step_cap"):
        train_adfsdca(X, y, step_cap=-1.0)
    with pytest.raises(ValueError, match="max_epochs"):
        train_dfsdca(X, y, max_epochs=-1)
    with pytest.raises(ValueError, match="check_every"):
        train_adfsdca(X, y, check_every=0)
    with pytest.raises(TypeError, match="seed"):
        train_dfsdca(X, y, seed="a")
    with pytest.raises(ValueError, match="y has"):
        train_dfsdca(X, y[:-1])
    with pytest.raises(ValueError, match="one class only"):
        train_dfsdca(X, np.ones(X.shape[0]))
    with pytest.raises(ValueError, match="smoothing"):
        train_dfsdca(X, y, smoothing=0.3)
    with pytest.raises(TypeError, match="callback"):
        train_adfsdca(X, y, callback=3)
    with pytest.raises(ValueError, match="warm_start"):
        train_dfsdca(X, y, warm_start=np.zeros(3))
    Xn = X.toarray()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="X"):
        train_adfsdca(Xn, y)
    with pytest.raises(ValueError):
        train_dfsdca(X, y, tol=float("nan"))


@pytest.mark.parametrize("s", [1.0, 10.0, 20.0])
def test_plus_beats_uniform_on_sparse_binary(s, f3, references):
    """capped adfSDCA+ after 20 epochs on F3 logistic is at least 100x closer
    to the optimum than dfSDCA (measured: ~2e-8 vs ~1e-4)."""
    X, y = f3
    lam = 1.0 / X.shape[0]
    p_star, _ = references.lbfgs(X, y, lam, "logistic")
    sub = {}
    for name, f, kw in (("uniform", train_dfsdca, {}),
                        ("plus", train_adfsdca, dict(prob_shrink=s))):
        m = _quiet(f, X, y, loss="logistic", lam=lam, tol=0.0, max_epochs=20, **kw)
        sub[name] = references.primal(X, y, m.coef, lam, "logistic") - p_star
    assert 0.0 <= sub["plus"] <= 1e-2 * sub["uniform"]


def test_verbose_prints_one_line_per_epoch(f1, capsys):
    X, y = f1
    _quiet(train_adfsdca, X, y, tol=0.0, max_epochs=3, verbose=1)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 + 4 and lines[0].split()[0] == "epoch"
    assert [int(l.split()[0]) for l in lines[1:]] == [0, 1, 2, 3]


def test_non_finite_iterates_are_reported_not_silent(f1):
    """Non-finite iterates (here forced by a warm start that overflows w) end with
    stop_reason "diverged", a warning naming the parameter to change, and the history row
    of that epoch."""
    X, y = f1
    with pytest.warns(ConvergenceWarning, match="diverged at epoch 0.*step_cap"):
        m = train_adfsdca(X, y, loss="squared", warm_start=1e308 * y, tol=1e-8, max_epochs=2)
    assert m.stop_reason == "diverged" and not m.converged and m.n_epochs == 0
    assert len(m.history) == 1 and not np.isfinite(m.history["primal"][0])


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_uncapped_plus_diverges_with_a_hint(loss, f1):
    """The paper's literal adfSDCA+ (step_cap=None) blows up on F1 (He et al. give no theory
    for Algorithm 2): the run stops at the epoch its objective leaves the divergence
    watch's range (1e4 P(0) above the start, or non-finite) with stop_reason "diverged" and
    a warning naming step_cap, instead of running its budget; the capped default
    converges."""
    X, y = f1
    with pytest.warns(ConvergenceWarning, match="diverged at epoch .*step_cap='coordinate'"):
        m = train_adfsdca(X, y, loss=loss, step_cap=None, max_epochs=500)
    h = m.history
    assert m.stop_reason == "diverged" and m.n_epochs < 500
    assert h["epoch"][-1] == m.n_epochs
    last = h["primal"][-1]
    assert not np.isfinite(last) or last - h["primal"][0] > 1e4 * m.params["p0"]
    assert np.all(h["primal"][:-1] - h["primal"][0] <= 1e4 * m.params["p0"])
    assert train_adfsdca(X, y, loss=loss).stop_reason == "converged"


# ---------------------------------------------------------------------------------------
# the solver contract beyond the default variant (tests/test_contract.py runs adfSDCA+)

VARIANTS = {"exact": dict(variant="exact"), "minibatch": dict(variant="exact", batch_size=8),
            "plus_s1": dict(prob_shrink=1.0)}


def _dense_problem(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.5)
    y = np.where(X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return sp.csr_matrix(X), y


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variants_stop_on_the_callback_and_warm_start(variant):
    X, y = _dense_problem(120, 12)
    kw = VARIANTS[variant]
    seen = []
    m = _quiet(train_adfsdca, X, y, tol=0.0, max_epochs=50,
               callback=lambda info: seen.append(info["epoch"]) or info["epoch"] >= 2, **kw)
    assert seen == [0, 1, 2] and m.stop_reason == "callback" and m.n_epochs == 2
    first = train_adfsdca(X, y, tol=1e-3, **kw)
    assert first.stop_reason == "converged"
    again = train_adfsdca(X, y, tol=1e-3, warm_start=first, **kw)
    assert again.stop_reason == "converged" and again.n_epochs == 0


@pytest.mark.parametrize("variant", ["exact", "minibatch"])
def test_sigint_stops_a_long_exact_epoch_within_a_second(variant):
    """A dense problem makes one exact epoch cost seconds (a step touches every row): the
    engine polls the hook inside the epoch, so a real SIGINT stops it within 1 s, with the
    partial model (completed epochs counted, w == X^T alpha / (lam n))."""
    from solver_problems import interrupted    # tests/ (see conftest.py)
    X, y = _dense_problem(4000, 200)
    exc, waited = interrupted(lambda cb: _quiet(train_adfsdca, X, y, tol=0.0,
                                                max_epochs=2**31 - 1, callback=cb,
                                                **VARIANTS[variant]))
    assert waited < 1.0, waited
    m = exc.model
    assert m.stop_reason == "interrupted" and m.n_epochs == len(m.history) - 1
    w_alpha = X.T @ m.dual / (m.params["lam"] * X.shape[0])
    np.testing.assert_allclose(m.coef, w_alpha, rtol=0, atol=1e-10 * np.abs(w_alpha).max())


@pytest.mark.parametrize("method", sorted(METHODS))
def test_tol_zero_runs_the_budget_even_at_the_exact_optimum(method):
    """y = 0 with the squared loss: every residue is exactly 0 from the start. tol = 0 still
    runs every epoch (each a no-op) and ends at max_epochs; tol > 0 certifies at epoch 0."""
    X, _ = _dense_problem(40, 5)
    y = np.zeros(40)
    m = _quiet(METHODS[method], X, y, loss="squared", tol=0.0, max_epochs=4)
    assert m.stop_reason == "max_epochs" and m.n_epochs == 4 and len(m.history) == 5
    assert np.all(m.coef == 0.0) and np.all(m.history["gap"] == 0.0)
    m = METHODS[method](X, y, loss="squared", tol=1e-6, max_epochs=4)
    assert m.stop_reason == "converged" and m.n_epochs == 0


@pytest.mark.skipif(bool(__import__("os").environ.get("DUALSOLVE_ASAN")),
                    reason="RLIMIT_AS cannot be used under ASan")
def test_out_of_memory_in_the_engine_is_a_memory_error():
    """The engine's own work memory (residues, two sum-trees, the CSC copy: about 10 n
    doubles for exact adfSDCA) does not fit under an address-space limit that the Python
    side's arrays still fit: STATUS_NO_MEMORY, which the driver raises as MemoryError."""
    import subprocess
    import sys
    import tempfile
    import textwrap
    code = textwrap.dedent("""
        import resource, numpy as np, scipy.sparse as sp
        import dualsolve as ds
        from dualsolve._monitor import EpochMonitor
        from dualsolve._validation import check_csr
        from dualsolve.adfsdca import _dfsdca
        n = 4_000_000
        X = sp.csr_matrix((np.ones(n), np.zeros(n, dtype=np.int32),
                           np.arange(n + 1, dtype=np.int32)), shape=(n, 1))
        y = np.where(np.arange(n) % 2, 1.0, -1.0)
        Xc, w, alpha = check_csr(X), np.zeros(1), np.zeros(n)
        with open("/proc/self/status") as fh:
            vm = next(int(l.split()[1]) for l in fh if l.startswith("VmSize")) << 10
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        resource.setrlimit(resource.RLIMIT_AS, (vm + (100 << 20), hard))   # the engine: ~400 MB
        mon = EpochMonitor(("primal", "dual", "gap", "max_kappa", "dual_kind"))
        print("status", _dfsdca.solve(Xc.data, Xc.indices, Xc.indptr, 1, y, "logistic", 0.0,
                                      1.0 / n, w, alpha, Xc.sqnorm, 3, 0.0, 1, 1, 0, 10.0,
                                      0.0, 1, 0, mon)[:2], len(mon.rows))
        # the driver's arrays (~100 MB) fit, the engine's do not
        resource.setrlimit(resource.RLIMIT_AS, (vm + (200 << 20), hard))
        try:
            ds.train_adfsdca(X, y, variant="exact", max_epochs=1)
        except MemoryError as exc:
            print("MemoryError", exc)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "status (5, 0) 0" in proc.stdout, proc.stdout            # STATUS_NO_MEMORY, no row
    assert "MemoryError train_adfsdca ran out of memory" in proc.stdout, proc.stdout
