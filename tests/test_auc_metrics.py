"""AUC family, part 1: the exact AUC, the surrogate's identities (Liu et al. 2020,
Proposition 1 and appendix A.1) and its closed-form optimum."""
import numpy as np
import pytest
import scipy.sparse as sp

from dualsolve.auc import auc_score, auc_surrogate_objective, auc_surrogate_optimum


def brute_auc(y, s, w=None):
    pos, neg = y > 0, ~(y > 0)
    w = np.ones_like(s) if w is None else w
    sp_, sn = s[pos][:, None], s[neg][None, :]
    ww = w[pos][:, None] * w[neg][None, :]
    return np.sum(ww * ((sp_ > sn) + 0.5 * (sp_ == sn))) / ww.sum()


def brute_pairwise(h, pos):
    return np.mean((1.0 - h[pos][:, None] + h[~pos][None, :]) ** 2)


def F_mean(h, pos, a, b, alpha, p):
    """(1/n) sum_i F(w, a, b, alpha; z_i) (Proposition 1) from the scores h."""
    F = np.where(pos, (1 - p) * (h - a) ** 2, p * (h - b) ** 2)
    F = F + 2 * (1 + alpha) * np.where(pos, -(1 - p) * h, p * h) - p * (1 - p) * alpha ** 2
    return F.mean()


# ---------------------------------------------------------------------------------------
# auc_score


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ties", [False, True])
def test_auc_matches_brute_force_and_sklearn(seed, ties):
    rng = np.random.default_rng(seed)
    n = 400
    y = (rng.random(n) < 0.3).astype(int)
    s = rng.standard_normal(n) + 0.7 * y
    if ties:
        s = np.round(s, 1)
        assert len(np.unique(s)) < n // 2
    got = auc_score(y, s)
    assert abs(got - brute_auc(y, s)) <= 1e-12
    metrics = pytest.importorskip("sklearn.metrics")
    assert abs(got - metrics.roc_auc_score(y, s)) <= 1e-12
    # labels as {-1, +1} and bool give the same value
    assert auc_score(2 * y - 1, s) == got
    assert auc_score(y.astype(bool), s) == got


def test_auc_weighted_matches_brute_force():
    rng = np.random.default_rng(5)
    n = 300
    y = rng.random(n) < 0.4
    s = np.round(rng.standard_normal(n) + y, 1)
    w = rng.random(n) * 3
    assert abs(auc_score(y, s, sample_weight=w) - brute_auc(y, s, w)) <= 1e-12
    assert auc_score(y, s, sample_weight=np.ones(n)) == pytest.approx(auc_score(y, s), abs=1e-15)
    metrics = pytest.importorskip("sklearn.metrics")
    assert abs(auc_score(y, s, sample_weight=w)
               - metrics.roc_auc_score(y, s, sample_weight=w)) <= 1e-12


def test_auc_properties():
    rng = np.random.default_rng(7)
    n = 500
    y = rng.random(n) < 0.2
    s = rng.standard_normal(n) + y
    a = auc_score(y, s)
    assert 0.5 < a < 1.0
    assert auc_score(y, np.exp(3 * s) + 1) == a               # strictly increasing map
    perm = rng.permutation(n)
    assert auc_score(y[perm], s[perm]) == a
    assert auc_score(y, -s) == pytest.approx(1 - a, abs=1e-15)
    assert auc_score(~y, s) == pytest.approx(1 - a, abs=1e-15)
    assert auc_score(y, np.full(n, 3.2)) == 0.5
    assert auc_score([0, 1], [0.0, 1.0]) == 1.0
    assert auc_score([1, 0], [0.0, 1.0]) == 0.0


def test_auc_large_n_no_overflow():
    rng = np.random.default_rng(9)
    n = 2_000_000
    y = rng.random(n) < 0.5
    s = rng.integers(0, 1000, n).astype(np.float64)   # heavy ties, independent of y
    a = auc_score(y, s)
    assert abs(a - 0.5) < 2e-3
    # the midrank formula as an independent check
    from scipy.stats import rankdata
    r = rankdata(s)
    npos = y.sum()
    ref = (r[y].sum() - npos * (npos + 1) / 2) / (npos * (n - npos))
    assert abs(a - ref) <= 1e-12


def test_auc_errors():
    with pytest.raises(ValueError, match="y has one class only"):
        auc_score([1, 1, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="y has 3 distinct values"):
        auc_score([0, 1, 2], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="scores contains NaN"):
        auc_score([0, 1, 1], [0.1, np.nan, 0.3])
    with pytest.raises(ValueError, match="scores has 2 values"):
        auc_score([0, 1, 1], [0.1, 0.3])
    with pytest.raises(ValueError, match="sample_weight"):
        auc_score([0, 1, 1], [0.1, 0.2, 0.3], sample_weight=[1, -1, 1])


# ---------------------------------------------------------------------------------------
# the surrogate and its saddle form


def test_surrogate_identity():
    rng = np.random.default_rng(11)
    n = 200
    pos = rng.random(n) < 0.15
    h = rng.standard_normal(n)
    p = pos.mean()
    a, b = h[pos].mean(), h[~pos].mean()
    alpha = b - a
    pair = brute_pairwise(h, pos)
    saddle = 1.0 + F_mean(h, pos, a, b, alpha, p) / (p * (1 - p))
    assert abs(pair - saddle) <= 1e-12
    # the O(nnz) formula used by auc_surrogate_objective, through a matrix X (h = X w)
    X = sp.csr_matrix(np.diag(h))
    Pn, J = auc_surrogate_objective(X, pos, np.ones(n), lam=0.3)
    assert abs(Pn - pair) <= 1e-12 * pair
    assert J == pytest.approx(p * (1 - p) * (pair - 1) + 0.15 * n, rel=1e-12)


def test_saddle_optimality():
    rng = np.random.default_rng(12)
    n = 150
    pos = rng.random(n) < 0.3
    h = rng.standard_normal(n)
    p = pos.mean()
    a, b = h[pos].mean(), h[~pos].mean()
    alpha = b - a
    f = lambda a_, b_, al_: F_mean(h, pos, a_, b_, al_, p)
    eps = 1e-5
    for k in range(3):
        e = np.zeros(3)
        e[k] = eps
        v = np.array([a, b, alpha])
        g = (f(*(v + e)) - f(*(v - e))) / (2 * eps)
        assert abs(g) <= 1e-9                    # f is quadratic: central differences exact
        d2 = (f(*(v + e)) - 2 * f(*v) + f(*(v - e))) / eps ** 2
        if k == 2:
            assert d2 == pytest.approx(-2 * p * (1 - p), rel=1e-4)
        else:
            assert d2 > 0
    # a grid over alpha peaks at alpha*
    grid = alpha + np.linspace(-1, 1, 201)
    vals = [f(a, b, g) for g in grid]
    assert abs(grid[int(np.argmax(vals))] - alpha) < 1e-12


# ---------------------------------------------------------------------------------------
# the closed-form optimum


def make_gaussian(seed, n=1500, d=12, p=0.2):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < p, 1, -1)
    mu = 0.4 * rng.standard_normal(d)
    X = rng.standard_normal((n, d)) + np.where(y[:, None] > 0, mu, 0.0)
    return X, y


@pytest.mark.parametrize("lam", [0.0, 1e-3])
def test_optimum_matches_dense_solve(lam):
    X, y = make_gaussian(0)
    pos = y > 0
    p = pos.mean()
    m = auc_surrogate_optimum(sp.csr_matrix(X), y, lam)
    assert m.converged
    mp, mn = X[pos].mean(0), X[~pos].mean(0)
    Sp = np.cov(X[pos].T, bias=True)
    Sn = np.cov(X[~pos].T, bias=True)
    dv = mn - mp
    Q = Sp + Sn + np.outer(dv, dv)
    w_ref = np.linalg.solve(Q + lam / (2 * p * (1 - p)) * np.eye(X.shape[1]), mp - mn)
    np.testing.assert_allclose(m.coef, w_ref, rtol=1e-9, atol=1e-11)
    h = X @ m.coef
    assert m.params["saddle_a"] == pytest.approx(h[pos].mean(), rel=1e-12)
    assert m.params["saddle_alpha"] == pytest.approx(h[~pos].mean() - h[pos].mean(), rel=1e-12)
    # the objective equals the brute-force pairwise loss, and w* is a minimum of it
    Pn = brute_pairwise(h, pos)
    assert m.params["pairwise"] == pytest.approx(Pn, rel=1e-12)
    J = lambda w: p * (1 - p) * (brute_pairwise(X @ w, pos) - 1) + lam / 2 * w @ w
    assert m.params["objective"] == pytest.approx(J(m.coef), rel=1e-12)
    rng = np.random.default_rng(1)
    for _ in range(5):
        assert J(m.coef + 1e-3 * rng.standard_normal(X.shape[1])) > J(m.coef)


def test_optimum_invariances():
    X, y = make_gaussian(2, n=600, d=8)
    lam = 1e-3
    m = auc_surrogate_optimum(X, y, lam)
    # duplicating the data set leaves the optimum unchanged
    m2 = auc_surrogate_optimum(np.vstack([X, X]), np.r_[y, y], lam)
    np.testing.assert_allclose(m2.coef, m.coef, rtol=1e-9, atol=1e-12)
    # an all-zero column changes nothing; permuting columns permutes w
    m3 = auc_surrogate_optimum(np.hstack([X, np.zeros((X.shape[0], 1))]), y, lam)
    np.testing.assert_allclose(m3.coef[:-1], m.coef, rtol=1e-9, atol=1e-12)
    assert m3.coef[-1] == 0.0
    perm = np.random.default_rng(0).permutation(X.shape[1])
    m4 = auc_surrogate_optimum(X[:, perm], y, lam)
    np.testing.assert_allclose(m4.coef, m.coef[perm], rtol=1e-9, atol=1e-12)
    # labels {0,1}, {-1,1} and bool agree
    m5 = auc_surrogate_optimum(X, y > 0, lam)
    np.testing.assert_array_equal(m5.coef, m.coef)


def test_optimum_errors():
    X, y = make_gaussian(3, n=50, d=3)
    with pytest.raises(ValueError, match="y has one class only"):
        auc_surrogate_optimum(X, np.ones(50), 0.1)
    with pytest.raises(ValueError, match="y has 3 distinct"):
        auc_surrogate_optimum(X, np.arange(50) % 3, 0.1)
    with pytest.raises(ValueError, match="lam must be >= 0"):
        auc_surrogate_optimum(X, y, -1.0)
    with pytest.raises(ValueError, match="y has 49 labels"):
        auc_surrogate_optimum(X, y[:49], 0.1)
