"""The theory behind adaptive dual-free SDCA (He, Tappenden & Takac 2018), checked exactly:
Lemma 2's optimal probabilities, the step-size bounds, and the one-step contraction
E[D(t+1)] <= (1 - theta) D(t) of Theorems 1 and 4 by enumeration on a 7-row problem, with the
mini-batch expectation taken over the components of our Algorithm 3 sampler.

The step rules used here are those of the NumPy twins in test_adfsdca*.py, which equal the
Cython iterates to 1e-12; the mini-batch sampling law is the one of
``dualsolve._core.sampler`` (water-filling + Algorithm 3 components).
"""
import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit

from dualsolve import train_dfsdca, train_adfsdca
from dualsolve._core.sampler import waterfill, alg3_components

LTILDE = {"logistic": 0.25, "squared": 1.0}


def _deriv(loss, z, y):
    return z - y if loss == "squared" else -y * expit(-y * z)


def _f4(seed):
    """F4: n = 7, d = 4, dense Gaussian rows of uneven norms, labels from a plane."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((7, 4)) * 10.0 ** rng.uniform(-0.5, 0.5, size=(7, 1))
    y = np.sign(A @ rng.standard_normal(4) + 0.3 * rng.standard_normal(7))
    y[y == 0] = 1.0
    return A, y


def _optimum(A, y, lam, loss):
    """w* by Newton's method (d = 4) to machine precision, and alpha* = -phi'(A w*)."""
    n, d = A.shape
    w = np.zeros(d)
    for _ in range(100):
        z = A @ w
        g = A.T @ _deriv(loss, z, y) / n + lam * w
        h = np.ones(n) if loss == "squared" else expit(z) * expit(-z)
        H = (A.T * h) @ A / n + lam * np.eye(d)
        step = np.linalg.solve(H, g)
        w -= step
        if np.abs(step).max() < 1e-15 * max(1.0, np.abs(w).max()):
            break
    return w, -_deriv(loss, A @ w, y)


def _potential(alpha, w, alpha_s, w_s, gamma):
    return np.sum((alpha - alpha_s) ** 2) / len(alpha) + gamma * np.sum((w - w_s) ** 2)


def _states(count, seed=0):
    """(A, y, lam, loss, alpha, w = w(alpha), alpha*, w*) for random problems and states."""
    rng = np.random.default_rng(seed)
    for k in range(count):
        loss = ("squared", "logistic")[k % 2]
        A, y = _f4(k)
        n = A.shape[0]
        lam = 10.0 ** rng.uniform(-3, 0)
        w_s, alpha_s = _optimum(A, y, lam, loss)
        alpha = alpha_s + rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 0)
        yield A, y, lam, loss, alpha, A.T @ alpha / (lam * n), alpha_s, w_s


def _theta(kappa, p, c_i, nlam2, b=1):
    """Theta_b(kappa, p) of (15) / (75): n lam^2 b sum kappa^2 / sum c_i kappa_i^2 / p_i,
    with c_i = n lam^2 + v'_i gamma, over the support of kappa."""
    on = kappa != 0
    return nlam2 * b * np.sum(kappa[on] ** 2) / np.sum(c_i[on] * kappa[on] ** 2 / p[on])


# ---------------------------------------------------------------------------------------
# Lemma 2 and the bounds on theta (tests 3 and 4)


def test_lemma2_optimal_probabilities_maximise_theta():
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(3, 30))
        kappa = rng.standard_normal(n) * 10.0 ** rng.uniform(-2, 2, size=n)
        c_i = 10.0 ** rng.uniform(-2, 2, size=n)          # n lam^2 + v_i gamma
        nlam2 = float(c_i.min()) * rng.uniform(0.1, 1.0)
        u = np.sqrt(c_i) * np.abs(kappa)
        p_star = u / u.sum()
        best = _theta(kappa, p_star, c_i, nlam2)
        closed = nlam2 * np.sum(kappa ** 2) / u.sum() ** 2       # (18)
        assert best == pytest.approx(closed, rel=1e-12)
        for p in itertools.chain(rng.dirichlet(np.ones(n), size=50), [np.full(n, 1.0 / n)]):
            assert _theta(kappa, p, c_i, nlam2) <= best * (1 + 1e-12)


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_theta_bounds_and_the_ordering_of_fixed_steps(loss, adf_fixtures):
    """theta_unif <= theta_IS = theta* <= theta(t) <= 1 along exact adfSDCA iterates, and the
    fixed steps the solvers report are theta_unif and theta_IS."""
    X, y = adf_fixtures.make_f1(4)
    n = X.shape[0]
    lam = 1.0 / n
    lt = LTILDE[loss]
    v = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    theta_unif = lam / (lam * n + lt * v.max())
    theta_star = n * lam / np.sum(n * lam + lt * v)
    assert theta_unif <= theta_star
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m_u = train_dfsdca(X, y, loss=loss, lam=lam, max_epochs=1, tol=0)
        m_is = train_dfsdca(X, y, loss=loss, lam=lam, sampling="importance", max_epochs=1,
                            tol=0)
    assert m_u.params["theta"] == pytest.approx(theta_unif, rel=1e-12)
    assert m_is.params["theta"] == pytest.approx(theta_star, rel=1e-12)
    # theta(t) of (18) along the exact iterates, observed through the epoch ends
    c_i = n * lam * lam + v * lam * lt
    alpha = None
    for epochs in range(1, 6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = train_adfsdca(X, y, loss=loss, lam=lam, variant="exact", max_epochs=epochs,
                              tol=0, seed=1)
        alpha = m.dual
        kappa = alpha + _deriv(loss, X @ m.coef, y)
        u = np.sqrt(c_i) * np.abs(kappa)
        theta_t = n * lam * lam * np.sum(kappa ** 2) / u.sum() ** 2
        assert theta_star * (1 - 1e-12) <= theta_t <= 1.0


# ---------------------------------------------------------------------------------------
# exact one-step contraction by enumeration (tests 5 and 6)


def test_serial_step_contracts_the_potential_in_expectation():
    """Theorem 1: with p* and theta of (17)-(18), E[D(t+1)] <= (1 - theta) D(t)."""
    worst = -np.inf
    for A, y, lam, loss, alpha, w, alpha_s, w_s in _states(300):
        n = A.shape[0]
        gamma = lam * LTILDE[loss]
        v = (A * A).sum(axis=1)
        kappa = alpha + _deriv(loss, A @ w, y)
        u = np.sqrt(v * gamma + n * lam * lam) * np.abs(kappa)
        p = u / u.sum()
        theta = n * lam * lam * np.sum(kappa ** 2) / u.sum() ** 2
        D = _potential(alpha, w, alpha_s, w_s, gamma)
        expected = 0.0
        for i in np.flatnonzero(p > 0):
            da = -(theta / p[i]) * kappa[i]
            a2 = alpha.copy()
            a2[i] += da
            expected += p[i] * _potential(a2, w + da / (lam * n) * A[i], alpha_s, w_s, gamma)
        worst = max(worst, (expected - (1 - theta) * D) / D)
    assert worst <= 1e-9


def _minibatch_excess(A, y, lam, loss, alpha, w, alpha_s, w_s, b, eso):
    """(E[D(t+1)] - (1 - theta_b) D(t)) / D(t) for the mini-batch step with our water-filling
    and Algorithm 3 law, enumerated exactly; eso=False drops the min(b, omega) factor."""
    n = A.shape[0]
    gamma = lam * LTILDE[loss]
    omega = int((A != 0).sum(axis=0).max())
    kappa = alpha + _deriv(loss, A @ w, y)
    b_eff = min(b, int(np.count_nonzero(kappa)))
    v = (A * A).sum(axis=1) * (min(b_eff, omega) if eso else 1)
    c_i = v * gamma + n * lam * lam
    q, b_drawn = waterfill(np.sqrt(c_i) * np.abs(kappa), b)
    assert b_drawn == b_eff and q.sum() == pytest.approx(b_eff, rel=1e-12)
    p = q / b_eff
    theta = _theta(kappa, p, c_i, n * lam * lam, b_eff)
    order, r, I, J = alg3_components(q, b_eff)
    D = _potential(alpha, w, alpha_s, w_s, gamma)
    expected, total = 0.0, 0.0
    for rk, lo, hi in zip(r, I, J):
        top, block = order[:lo], order[lo:hi + 1]
        subsets = list(itertools.combinations(block, b_eff - lo))
        for sub in subsets:
            S = np.concatenate([top, np.array(sub, dtype=top.dtype)])
            prob = rk / len(subsets)
            da = -(theta / q[S]) * kappa[S]
            a2 = alpha.copy()
            a2[S] += da
            w2 = w + (da @ A[S]) / (lam * n)
            expected += prob * _potential(a2, w2, alpha_s, w_s, gamma)
            total += prob
    assert total == pytest.approx(1.0, abs=1e-12)
    return (expected - (1 - theta) * D) / D


def test_minibatch_step_contracts_only_with_the_eso_factor():
    """Theorem 4 on F4 with b in 1..4 over the Algorithm 3 law; the negative control without
    the ESO factor (v' = v) must violate the bound on some state."""
    worst, control = -np.inf, -np.inf
    for k, state in enumerate(_states(120, seed=7)):
        b = 1 + k % 4
        worst = max(worst, _minibatch_excess(*state, b=b, eso=True))
        if b > 1:
            control = max(control, _minibatch_excess(*state, b=b, eso=False))
    assert worst <= 1e-9
    assert control > 1e-3


# ---------------------------------------------------------------------------------------
# residue concentration (test 16, the paper's Figure 4)


def test_adaptive_concentrates_residues_faster(adf_fixtures):
    X, y = adf_fixtures.make_f1(1, unit=True)
    n = X.shape[0]
    q95 = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, f, kw in (("uniform", train_dfsdca, {}),
                            ("exact", train_adfsdca, dict(variant="exact"))):
            m = f(X, y, loss="logistic", lam=1.0 / n, max_epochs=2, tol=0, seed=0, **kw)
            kappa = m.dual + _deriv("logistic", X @ m.coef, y)
            q95[name] = np.quantile(np.abs(kappa), 0.95)
    assert q95["exact"] < q95["uniform"]


# ---------------------------------------------------------------------------------------
# edge cases (test 20)

EDGE_METHODS = ((train_dfsdca, {}), (train_dfsdca, dict(sampling="importance")),
                (train_adfsdca, dict(variant="plus")), (train_adfsdca, dict(variant="exact")))


@pytest.mark.parametrize("f,kw", EDGE_METHODS)
def test_single_row_is_solved_exactly(f, kw):
    X = sp.csr_matrix(np.array([[0.5, -1.0]]))
    y = np.array([0.7])
    m = f(X, y, loss="squared", lam=0.3, tol=1e-12, max_epochs=50, **kw)
    w = np.linalg.solve(X.T @ X + 0.3 * np.eye(2), X.T @ y)
    assert m.converged
    np.testing.assert_allclose(m.coef, w, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("f,kw", EDGE_METHODS)
def test_strong_regularisation_converges_quickly_and_01_labels_map(f, kw, adf_fixtures):
    X, y = adf_fixtures.make_f1(0)
    m = f(X, y, loss="logistic", lam=1e3, tol=1e-10, max_epochs=50, **kw)
    assert m.converged and m.n_epochs <= 10
    m01 = f(X, (y > 0).astype(float), loss="logistic", lam=1e3, tol=1e-10, max_epochs=50, **kw)
    np.testing.assert_array_equal(m01.coef, m.coef)
