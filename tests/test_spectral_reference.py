"""The certified reference optimum of spectral risk minimisation: the certificate is
valid and tight, ERM is ridge, and a brute-force epigraph
solve over all n! permutations (scipy SLSQP, no dualsolve code) agrees on tiny problems.
"""
import itertools

import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp

from dualsolve.spectral import spectrum
from dualsolve.spectral.reference import spectral_reference

SPECTRA = [("erm", None), ("superquantile", 0.5), ("extremile", 2.5), ("esrm", 2.0)]


def primal(X, y, w, sigma, lam):
    l = 0.5 * (X @ w - y) ** 2
    return float(np.dot(np.sort(sigma), np.sort(l)) + 0.5 * lam * w @ w)


@pytest.mark.parametrize("kind,param", SPECTRA)
def test_certificate_tight_on_yacht(yacht, kind, param):
    X, y = yacht
    n = len(y)
    r = spectral_reference(X, y, spectrum=kind, spectrum_param=param, lam=1.0 / n)
    assert r.converged
    assert r.primal >= r.dual
    assert r.gap == pytest.approx(r.primal - r.dual, abs=0)
    assert r.gap <= 1e-10 * abs(r.primal)
    # the reported primal is F(coef), recomputed independently
    assert primal(X, y, r.coef, r.sigma, r.lam) == pytest.approx(r.primal, rel=1e-14)
    # lambda is in the permutahedron: sum 1, majorised by sigma
    s = np.sort(r.loss_weights)[::-1].cumsum()
    t = np.sort(r.sigma)[::-1].cumsum()
    assert abs(s[-1] - 1.0) < 1e-12 and np.all(s <= t + 1e-12)


@pytest.mark.parametrize("kind,param", SPECTRA[1:])
def test_weak_duality_fuzz(yacht, kind, param):
    """The lower bound is below F at any point (random w around and far from the optimum)."""
    X, y = yacht
    n = len(y)
    r = spectral_reference(X, y, spectrum=kind, spectrum_param=param, max_iter=30, tol=0)
    rng = np.random.default_rng(0)
    for scale in (1e-6, 1e-3, 1e-1, 1.0):
        for _ in range(20):
            w = r.coef + scale * rng.standard_normal(X.shape[1])
            assert primal(X, y, w, r.sigma, r.lam) >= r.dual
    # and a stopped-early run still gives a valid (looser) certificate against the tight one
    tight = spectral_reference(X, y, spectrum=kind, spectrum_param=param)
    assert r.dual <= tight.primal + 1e-15 and r.primal >= tight.dual - 1e-15
    assert np.linalg.norm(r.coef - tight.coef) <= r.dist_bound + tight.dist_bound + 1e-12


@pytest.mark.parametrize("name", ["yacht", "energy"])
def test_erm_is_ridge(spectral, name):
    X, y = spectral.standardized(name)
    n, d = X.shape
    lam = 1.0 / n
    w = np.linalg.solve(X.T @ X / n + lam * np.eye(d), X.T @ y / n)
    r = spectral_reference(X, y, spectrum="erm", lam=lam)
    assert np.allclose(r.coef, w, rtol=0, atol=1e-12 * np.abs(w).max())
    assert r.primal == pytest.approx(0.5 * np.mean((X @ w - y) ** 2) + 0.5 * lam * w @ w,
                                     rel=1e-13)
    assert r.gap <= 1e-13 * r.primal


def test_wide_problem_and_sparse_input():
    """d > n takes the n x n (push-through) inner solve; CSR and dense input agree."""
    rng = np.random.default_rng(3)
    n, d = 15, 40
    X = rng.standard_normal((n, d))
    y = rng.standard_normal(n)
    lam = 0.05
    w = np.linalg.solve(X.T @ X / n + lam * np.eye(d), X.T @ y / n)
    r = spectral_reference(X, y, spectrum="erm", lam=lam)
    assert np.allclose(r.coef, w, atol=1e-12)
    r1 = spectral_reference(X, y, spectrum="extremile", lam=lam)
    r2 = spectral_reference(sp.csr_matrix(X), y, spectrum="extremile", lam=lam)
    assert r1.gap <= 1e-10 * r1.primal and r2.gap <= 1e-10 * r2.primal
    assert r1.primal == pytest.approx(r2.primal, rel=1e-12)


def brute_force(X, y, sigma, lam):
    """min_{w,t} t + (lam/2)||w||^2  s.t.  t >= sum_i sigma_{pi(i)} l_i(w) for every
    permutation pi (R_sigma is the max of these n! smooth convex functions), by SLSQP."""
    n, d = X.shape
    P = np.array([sigma[list(p)] for p in itertools.permutations(range(n))])   # (n!, n)
    P = np.unique(P, axis=0)

    def losses(w):
        return 0.5 * (X @ w - y) ** 2

    def cons(v):
        return v[d] - P @ losses(v[:d])

    def cons_jac(v):
        r = X @ v[:d] - y
        J = np.empty((P.shape[0], d + 1))
        J[:, :d] = -(P * r) @ X
        J[:, d] = 1.0
        return J

    w0 = np.linalg.lstsq(X, y, rcond=None)[0] * 0.5
    v0 = np.append(w0, (P @ losses(w0)).max() + 1.0)
    res = so.minimize(lambda v: v[d] + 0.5 * lam * v[:d] @ v[:d], v0,
                      jac=lambda v: np.append(lam * v[:d], 1.0), method="SLSQP",
                      constraints=[{"type": "ineq", "fun": cons, "jac": cons_jac}],
                      options={"ftol": 1e-15, "maxiter": 1000})
    w = res.x[:d]
    return float(np.dot(sigma, np.sort(losses(w))) + 0.5 * lam * w @ w), w


@pytest.mark.parametrize("case", range(6))
def test_brute_force_tiny(case):
    rng = np.random.default_rng(100 + case)
    n, d = 6, 3
    X = rng.standard_normal((n, d))
    y = X @ rng.standard_normal(d) + rng.standard_normal(n)
    lam = 0.1
    if case < 4:
        kind, param = SPECTRA[case]
        sigma = spectrum(kind, n, param)
    elif case == 4:
        sigma = np.zeros(n)
        sigma[-1] = 1.0                                  # the maximum loss
    else:
        sigma = np.sort(rng.random(n) ** 3)              # a random spectrum
        sigma /= sigma.sum()
    F_bf, w_bf = brute_force(X, y, sigma, lam)
    r = spectral_reference(X, y, spectrum=sigma, lam=lam)
    assert r.converged and r.gap <= 1e-10 * r.primal
    assert r.primal == pytest.approx(F_bf, rel=1e-8, abs=0)
    assert r.dual <= F_bf + 1e-13                        # the certificate bounds SLSQP too
    assert np.linalg.norm(r.coef - w_bf) <= 1e-4 * (1 + np.linalg.norm(w_bf))


def test_diabetes_certified_values():
    """The certified F* of sklearn's diabetes data (our implementation notes' table)."""
    datasets = pytest.importorskip("sklearn.datasets")
    X, y = datasets.load_diabetes(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    y = (y - y.mean()) / y.std(ddof=1)
    n = len(y)
    expected = {("erm", None): 0.241293075153045, ("esrm", 2.0): 0.401169488626530,
                ("extremile", 2.5): 0.445619747855813, ("superquantile", 0.5): 0.443216905195794}
    for (kind, param), F in expected.items():
        r = spectral_reference(X, y, spectrum=kind, spectrum_param=param, lam=1.0 / n,
                               tol=1e-15)
        assert r.gap <= 1e-15 and r.primal == pytest.approx(F, abs=2e-15), kind
        assert r.dual <= F + 2e-15 and F <= r.primal + 2e-15   # F printed to 15 digits
    r = spectral_reference(X, y, spectrum="superquantile", spectrum_param=0.5 / n, lam=1.0 / n,
                           tol=1e-12)
    assert r.converged and r.primal == pytest.approx(1.3722453, abs=1e-7)


def test_bad_inputs(yacht):
    X, y = yacht
    n = len(y)
    with pytest.raises(ValueError, match="spectrum.*nondecreasing"):
        spectral_reference(X, y, spectrum=np.full(n, 1.0 / n)[::-1] + np.linspace(1e-3, -1e-3, n))
    with pytest.raises(ValueError, match="spectrum.*sum to 1"):
        spectral_reference(X, y, spectrum=np.full(n, 0.5 / n))
    with pytest.raises(ValueError, match="spectrum.*length"):
        spectral_reference(X, y, spectrum=np.full(n - 1, 1.0 / (n - 1)))
    with pytest.raises(ValueError, match="spectrum_param"):
        spectral_reference(X, y, spectrum="superquantile", spectrum_param=1.5)
    with pytest.raises(ValueError, match="lam"):
        spectral_reference(X, y, spectrum="erm", lam=0.0)
    with pytest.raises(ValueError, match="loss"):
        spectral_reference(X, y, spectrum="erm", loss="hinge")
    with pytest.raises(ValueError, match="y has"):
        spectral_reference(X, y[:-1], spectrum="erm")
