"""AUC family, part 5: the stopping certificates (the exact objective, its gradient, the
strong-convexity bound and the Frank-Wolfe gaps against finite differences and the
closed-form optimum), "converged" meaning what it says, and the data-scaled default steps
on unscaled real data."""
import importlib.util
import pathlib
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds
from dualsolve._validation import ConvergenceWarning
from dualsolve.auc import _ppd

_spec = importlib.util.spec_from_file_location(
    "dualsolve_tests_auc_twins", pathlib.Path(__file__).parent / "helpers" / "auc_twins.py")
twins = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(twins)

TRAINERS = [ds.train_ppd_sg, ds.train_ppd_adagrad, ds.train_pga, ds.train_solam]


def quiet(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args, **kw)


def evaluate(X, y, w, lam, **kw):
    return _ppd.evaluate(*twins.csr_arrays(X), X.shape[1], np.where(y > 0, 1.0, -1.0),
                         np.ascontiguousarray(w, dtype=np.float64), lam, **kw)


def J_np(X, y, w, lam):
    """J from the pairs, in plain NumPy (independent of the engine)."""
    h = X @ w
    pos = y > 0
    p = pos.mean()
    Pn = np.mean((1.0 - h[pos][:, None] + h[~pos][None, :]) ** 2)
    return p * (1 - p) * (Pn - 1) + 0.5 * lam * w @ w


def phi_np(X, y, w, a, b, lam, R2):
    """PGA's phi(v) = max_{|alpha| <= R2} (1/n) sum_i F(v, alpha; z_i) + (lam/2)||w||^2."""
    h = X @ w
    pos = y > 0
    p = pos.mean()

    def f(al):
        F = np.where(pos, (1 - p) * (h - a) ** 2, p * (h - b) ** 2)
        F = F + 2 * (1 + al) * np.where(pos, -(1 - p) * h, p * h) - p * (1 - p) * al ** 2
        return F.mean()
    al = np.clip(h[~pos].mean() - h[pos].mean(), -R2, R2)
    return f(al) + 0.5 * lam * w @ w


@pytest.fixture(scope="module")
def small():
    X, y = twins.random_csr(11, n=120, d=9, density=0.4, p=0.3)
    return sp.csr_matrix(X), y


# ---------------------------------------------------------------------------------------
# the exact objective and its gradient


@pytest.mark.parametrize("lam", [0.0, 0.05])
def test_objective_and_gradient_against_pairs_and_finite_differences(small, lam):
    X, y = small
    rng = np.random.default_rng(0)
    for _ in range(3):
        w = rng.standard_normal(X.shape[1])
        ev = evaluate(X, y, w, lam)
        assert ev["J"] == pytest.approx(J_np(X, y, w, lam), rel=1e-12)
        Pn, J = ds.auc_surrogate_objective(X, y, w, lam=lam)
        assert J == ev["J"] and Pn == ev["pairwise"]
        eps = 1e-6
        fd = np.array([(J_np(X, y, w + eps * e, lam) - J_np(X, y, w - eps * e, lam)) / (2 * eps)
                       for e in np.eye(X.shape[1])])
        np.testing.assert_allclose(ev["grad"], fd, rtol=1e-6, atol=1e-9)
        assert ev["gnorm2"] == pytest.approx(fd @ fd, rel=1e-5)
        assert ev["measure"] == (ev["gnorm2"] / (2 * lam) if lam > 0 else np.inf)


def test_certificate_bounds_the_gap_and_vanishes_at_the_optimum(small):
    X, y = small
    lam = 0.05
    o = ds.auc_surrogate_optimum(X, y, lam)
    J_star = o.params["objective"]
    assert o.params["gap"] <= 1e-20                    # the gradient vanishes at w*
    rng = np.random.default_rng(1)
    for scale in (1.0, 1e-2, 1e-4):
        w = o.coef + scale * rng.standard_normal(X.shape[1])
        ev = evaluate(X, y, w, lam)
        assert ev["measure"] >= ev["J"] - J_star >= 0.0


def test_solam_frank_wolfe_certificate(small):
    """With a ball that binds, min_{||w|| <= R} J is above min J; the Frank-Wolfe gap bounds
    J(w) - min over the ball (computed by projected gradient)."""
    X, y = small
    lam = 0.01
    o = ds.auc_surrogate_optimum(X, y, lam)
    R = 0.5 * np.linalg.norm(o.coef)
    w = np.zeros(X.shape[1])
    for _ in range(20000):                             # projected gradient, step 1/L
        w = w - 0.2 * evaluate(X, y, w, lam)["grad"]
        w *= min(1.0, R / np.linalg.norm(w))
    J_ball = evaluate(X, y, w, lam)["J"]
    assert J_ball > o.params["objective"] + 1e-6
    rng = np.random.default_rng(2)
    for _ in range(5):
        u = rng.standard_normal(X.shape[1])
        u *= R * rng.random() / np.linalg.norm(u)
        ev = evaluate(X, y, u, lam, R=R)
        fw = ev["gdotv"] + R * np.sqrt(ev["gnorm2"])
        assert ev["measure"] == pytest.approx(min(fw, ev["gnorm2"] / (2 * lam)), rel=1e-15)
        assert fw >= ev["J"] - J_ball - 1e-12
    # a converged SOLAM run with a binding ball: the gap certifies J(w) - min over the ball
    m = quiet(ds.train_solam, X, y, lam=lam, R=R, tol=1e-2, max_epochs=100000)
    assert m.converged
    pq = (y > 0).mean() * (1 - (y > 0).mean())
    _, J = ds.auc_surrogate_objective(X, y, m.coef, lam=lam)
    assert J - J_ball <= m.history["gap"][-1] <= 1e-2 * pq


def test_pga_ball_certificate(small):
    """With R1, PGA certifies phi over the ball ||(w, a, b)|| <= R1: phi's gradient in
    (w, a, b) (alpha at its clipped maximiser) against finite differences."""
    X, y = small
    lam, R1, R2 = 0.02, 0.8, 0.3
    rng = np.random.default_rng(3)
    w, a, b = 0.3 * rng.standard_normal(X.shape[1]), 0.1, -0.2
    # a point outside the ball is not certified
    assert np.sqrt(w @ w + a * a + b * b) > R1
    assert evaluate(X, y, w, lam, saddle=False, a=a, b=b, R=R1, R2=R2)["measure"] == np.inf
    w *= 0.5
    ev = evaluate(X, y, w, lam, saddle=False, a=a, b=b, R=R1, R2=R2)
    assert ev["J"] == pytest.approx(J_np(X, y, w, lam), rel=1e-12)     # J is still reported
    eps = 1e-6
    v = np.r_[w, a, b]
    phi = lambda v: phi_np(X, y, v[:-2], v[-2], v[-1], lam, R2)
    fd = np.array([(phi(v + eps * e) - phi(v - eps * e)) / (2 * eps) for e in np.eye(v.size)])
    gw = ev["grad"]
    ga = fd[-2:]
    np.testing.assert_allclose(gw, fd[:-2], rtol=1e-6, atol=1e-9)
    assert ev["gnorm2"] == pytest.approx(fd @ fd, rel=1e-5)
    assert ev["gdotv"] == pytest.approx(fd @ v, rel=1e-5)
    assert ev["measure"] == pytest.approx(fd @ v + R1 * np.linalg.norm(fd), rel=1e-5)
    assert ga.shape == (2,)
    # a converged run: the certificate held at tol
    m = quiet(ds.train_pga, X, y, lam=lam, R1=R1, R2=R2, tol=1e-2, max_epochs=100000)
    pq = (y > 0).mean() * (1 - (y > 0).mean())
    assert m.converged and m.history["gap"][-1] <= 1e-2 * pq


# ---------------------------------------------------------------------------------------
# "converged" means the certificate held


@pytest.mark.parametrize("train", TRAINERS)
def test_converged_certifies_the_objective(small, train):
    X, y = small
    lam = 0.05
    pq = (y > 0).mean() * (1 - (y > 0).mean())
    m = quiet(train, X, y, lam=lam, tol=1e-3, max_epochs=100000)
    assert m.stop_reason == "converged", m.history[-1]
    J_star = ds.auc_surrogate_optimum(X, y, lam).params["objective"]
    _, J = ds.auc_surrogate_objective(X, y, m.coef, lam=lam)
    assert 0.0 <= J - J_star <= m.history["gap"][-1] <= 1e-3 * pq
    assert m.history["primal"][-1] == pytest.approx(J, rel=1e-12)
    # tol = 0 runs the budget; lam = 0 has no certificate (its gap is inf) and never stops
    m0 = quiet(train, X, y, lam=lam, tol=0.0, max_epochs=m.n_epochs + 3)
    assert m0.stop_reason == "max_epochs" and m0.n_epochs == m.n_epochs + 3
    if train is not ds.train_solam:                    # SOLAM's default ball needs lam > 0
        mz = quiet(train, X, y, lam=0.0, tol=1e-3, max_epochs=30)
        assert mz.stop_reason == "max_epochs" and np.isinf(mz.history["gap"][-1])


@pytest.mark.parametrize("train", TRAINERS)
def test_budget_warning_gives_the_certificate_reached(small, train):
    X, y = small
    with pytest.warns(ConvergenceWarning, match=r"stopped at max_epochs=2 before its criterion "
                                                r"held \(.*lam.*: [0-9.e+-]+ > [0-9.e+-]+\)"):
        train(X, y, max_epochs=2)


@pytest.mark.parametrize("train", TRAINERS)
def test_warm_start_array_and_errors(small, train):
    X, y = small
    m = quiet(train, X, y, tol=1e-3, max_epochs=100000)
    again = quiet(train, X, y, tol=1e-3, warm_start=m.coef.copy())
    assert again.converged and again.n_epochs == 0
    with pytest.raises(ValueError, match="warm_start has 3 coefficients but X has 9 features"):
        train(X, y, warm_start=np.zeros(3))


# ---------------------------------------------------------------------------------------
# the default steps scale with the data: unscaled real data, defaults only


def _split(X, y, seed=0):
    n = X.shape[0]
    perm = np.random.default_rng(seed).permutation(n)
    tr, te = perm[:int(0.7 * n)], perm[int(0.7 * n):]
    return X[tr], y[tr], X[te], y[te]


def _defaults_reach_the_oracle(X, y, Xt, yt, bounds):
    n = X.shape[0]
    o = ds.auc_surrogate_optimum(X, y)                 # lam = 1/n, the solvers' default
    assert o.params["lam"] == 1.0 / n
    auc_star = ds.auc_score(yt, Xt @ o.coef)
    for train, bound in zip(TRAINERS, bounds):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = train(X, y)
        assert not [w for w in caught if "diverged" in str(w.message)], train.__name__
        assert m.stop_reason in ("converged", "max_epochs"), train.__name__
        auc = ds.auc_score(yt, Xt @ m.coef)
        assert abs(auc - auc_star) <= bound, (train.__name__, auc, auc_star)


def test_defaults_on_raw_a9a():
    X, y = ds.datasets.load("a9a")
    Xt, yt = ds.datasets.load("a9a.t")
    _defaults_reach_the_oracle(X, y, Xt, yt, [0.005] * 4)


def test_defaults_on_raw_mammography():
    """Unscaled features (row norms up to 29), 2.3% positives."""
    _defaults_reach_the_oracle(*_split(*ds.datasets.load("mammography")), [0.005] * 4)


def test_defaults_on_raw_w8a():
    """The reported failure: PPD-SG's old default step (0.1, fixed) diverged on w8a (binary
    rows, norms up to 10.7) to test AUC 0.47 without a warning."""
    root = ds.datasets.data_dir()
    if root is None or not (root / "libsvm" / "w8a.xz").exists():
        pytest.skip("DUALSOLVE_DATA with libsvm/w8a.xz not set")
    X, y = ds.load_svmlight(root / "libsvm" / "w8a.xz", n_features=300)
    _defaults_reach_the_oracle(*_split(X, y), [0.005] * 4)
