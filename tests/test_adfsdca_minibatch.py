"""Mini-batch adfSDCA (He, Tappenden & Takac 2018, Section 6, Algorithms 3-4): the
fixed-size samplers of dualsolve._core.sampler (water-filling, Algorithm 3, systematic) and
``train_adfsdca(variant="exact", batch_size=b)`` (Algorithm 4).

References: the paper's toy example, exact mixture marginals, binomial bounds on draws,
scipy L-BFGS / the ridge normal equations, and a dense NumPy twin that replays the sampled
sets (recorded through ``dualsolve.adfsdca.api._record_coordinates``, b entries per
iteration, -1 padded).
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit

from dualsolve._core.sampler import alg3_components, minibatch_draw, sort_desc, waterfill
from dualsolve._validation import ConvergenceWarning
from dualsolve.adfsdca import train_adfsdca
from dualsolve.adfsdca.api import _record_coordinates

LTILDE = {"logistic": 0.25, "squared": 1.0}


@pytest.fixture(scope="module")
def f1(adf_fixtures):
    return adf_fixtures.make_f1(0)


@pytest.fixture(scope="module")
def f2(adf_fixtures):
    return adf_fixtures.make_f1(1, unit=True)


def _quiet(f, *a, trace=None, **kw):
    """f(*a, **kw) without ConvergenceWarnings; ``trace`` (an intp array) receives the
    sampled coordinates."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if trace is None:
            return f(*a, **kw)
        with _record_coordinates(trace):
            return f(*a, **kw)


def _deriv(loss, z, y):
    return z - y if loss == "squared" else -y * expit(-y * z)


def _waterfill_np(p, b):
    """Independent water-filling (docs/adfsdca.md): cap what exceeds 1, rescale the rest."""
    p = np.asarray(p, float)
    capped = np.zeros(p.shape[0], bool)
    while True:
        c = (b - capped.sum()) / p[~capped].sum()
        q = np.where(capped, 1.0, c * p)
        new = (q > 1.0) & ~capped
        if not new.any():
            return q
        capped |= new


def _random_q(rng, n, b, kind=None):
    """Water-filled marginals with ties (weights from a small set) and often q_i = 1."""
    kind = rng.integers(3) if kind is None else kind
    if kind == 0:
        w = rng.random(n) ** 3
    elif kind == 1:
        w = rng.choice([0.1, 0.5, 1.0, 2.0], size=n)          # many exact ties
    else:
        w = rng.random(n)
        w[rng.random(n) < 0.2] = 50.0                        # capped at 1
    q = _waterfill_np(w, b)
    return q


def _mixture_marginals(order, r, I, J, n, b):
    m = np.zeros(n)
    for rk, ik, jk in zip(r, I, J):
        m[order[:ik]] += rk
        m[order[ik:jk + 1]] += rk * (b - ik) / (jk - ik + 1)
    return m


# ---------------------------------------------------------------------------------------
# water-filling and Algorithm 3


def test_alg3_reproduces_the_toy_example():
    """He et al. 2018, Fig. 1: q = (0.8, 0.6, 0.4, 0.2), b = 2 -> r = (0.2, 0.4, 0.4):
    {1,2}; {1} plus one of {2,3}; two of {1,2,3,4} (1-based)."""
    order, r, I, J = alg3_components(np.array([0.8, 0.6, 0.4, 0.2]), 2)
    np.testing.assert_array_equal(order, [0, 1, 2, 3])
    np.testing.assert_allclose(r, [0.2, 0.4, 0.4], rtol=0, atol=1e-15)
    comps = [(set(order[:i].tolist()), set(order[i:j + 1].tolist()), 2 - i)
             for i, j in zip(I, J)]
    assert comps == [({0}, {1}, 1), ({0}, {1, 2}, 1), (set(), {0, 1, 2, 3}, 2)]


def test_alg3_uniform_q_is_one_component_and_b_equals_n():
    order, r, I, J = alg3_components(np.full(10, 0.3), 3)
    assert r.tolist() == [pytest.approx(1.0, abs=1e-14)] and I[0] == 0 and J[0] == 9
    order, r, I, J = alg3_components(np.ones(6), 6)
    assert len(r) == 1 and r[0] == 1.0 and I[0] == 0 and J[0] == 5


def test_alg3_exact_marginals_on_random_q():
    """2000 random water-filled q (n <= 30, ties, q_i = 1): r >= 0,
    sum r = 1, at most n components, sum_k r_k marginal_k == q to 1e-10."""
    rng = np.random.default_rng(0)
    worst = 0.0
    n_ties = n_ones = 0
    for _ in range(2000):
        n = int(rng.integers(1, 31))
        b = int(rng.integers(1, n + 1))
        q = _random_q(rng, n, b)
        n_ties += len(np.unique(q)) < n
        n_ones += (q == 1.0).any() and b < n
        order, r, I, J = alg3_components(q, b)
        assert len(r) <= n
        assert np.all(r >= 0)
        assert abs(r.sum() - 1.0) <= 1e-12
        assert np.all(I <= b - 1) and np.all(J >= b - 1)
        m = _mixture_marginals(order, r, I, J, n, b)
        worst = max(worst, np.abs(m - q).max())
    assert worst <= 1e-10
    assert n_ties > 300 and n_ones > 100        # the hard cases were really exercised


def test_alg3_tie_tolerance_is_relative():
    """Pitfall 9: values equal up to rounding form one block (no zero-mass components),
    also when q is tiny overall (the tolerance scales with max q)."""
    q = np.array([0.5, 0.5 * (1 + 1e-15), 0.5 * (1 - 1e-15), 0.5])
    order, r, I, J = alg3_components(q, 2)
    assert len(r) == 1 and I[0] == 0 and J[0] == 3
    q = np.r_[1.0, np.full(4, 0.25)]
    order, r, I, J = alg3_components(q, 2)
    assert len(r) == 1 and I[0] == 1 and J[0] == 4 and r[0] == pytest.approx(1.0)


@pytest.mark.parametrize("sampler", ["alg3", "systematic"])
def test_draws_have_b_distinct_elements_and_marginals_q(sampler):
    """1e5 draws per case: every draw has exactly b distinct indices of positive weight;
    inclusion counts lie within 5 binomial standard deviations of N q_i (all cases jointly:
    a chi-square over the per-index z-scores), q_i = 1 always included."""
    from scipy.stats import chi2
    rng = np.random.default_rng(1)
    N = 100_000
    zs = []
    for case in range(6):
        n = int(rng.integers(5, 40))
        b = int(rng.integers(2, n))
        w = _random_q(rng, n, b, kind=case % 3) * rng.uniform(0.5, 3.0)   # ties, q_i = 1
        w[rng.integers(n)] = 0.0                              # a zero weight: never drawn
        if (w > 0).sum() < b:
            continue
        draws, q = minibatch_draw(w, b, N, seed=case, sampler=sampler)
        np.testing.assert_allclose(q[w > 0], _waterfill_np(w[w > 0], b), rtol=1e-12)
        assert draws.shape == (N, b)
        s = np.sort(draws, axis=1)
        assert np.all(s[:, 1:] != s[:, :-1])                  # distinct
        assert np.all(w[draws] > 0)
        counts = np.bincount(draws.ravel(), minlength=n)
        assert abs(q.sum() - b) <= 1e-12 * b
        np.testing.assert_array_equal(counts[q == 1.0], N)
        mid = (q > 0) & (q < 1)
        z = (counts[mid] - N * q[mid]) / np.sqrt(N * q[mid] * (1 - q[mid]))
        assert np.all(np.abs(z) <= 5.0)
        zs.append(z)
    z = np.concatenate(zs)
    assert z.shape[0] > 50
    # the sum of the z^2 is roughly chi-square (the counts are negatively correlated,
    # which only makes it smaller): the p-value must not be tiny
    assert chi2.sf((z ** 2).sum(), z.shape[0]) > 1e-3


def test_alg3_draws_follow_the_toy_mixture():
    """The joint law, not only the marginals: subset frequencies of the toy example are
    {0,1}: 0.2 + 0.2, {0,2}: 0.2, and 0.4/6 for each pair from the last component."""
    draws, _ = minibatch_draw(np.array([0.8, 0.6, 0.4, 0.2]), 2, 200_000, seed=3)
    s = np.sort(draws, axis=1)
    keys, counts = np.unique(s[:, 0] * 4 + s[:, 1], return_counts=True)
    freq = dict(zip(keys.tolist(), (counts / 200_000).tolist()))
    expect = {1: 0.4 + 0.4 / 6, 2: 0.2 + 0.4 / 6, 3: 0.4 / 6, 6: 0.4 / 6, 7: 0.4 / 6,
              11: 0.4 / 6}
    assert set(freq) == set(expect)
    for k, p in expect.items():
        assert abs(freq[k] - p) <= 5 * np.sqrt(p * (1 - p) / 200_000)


def test_waterfill_sums_to_b_and_caps_at_one():
    rng = np.random.default_rng(4)
    for _ in range(500):
        n = int(rng.integers(1, 60))
        w = rng.exponential(size=n) ** 3
        w[rng.random(n) < 0.3] = 0.0
        b = int(rng.integers(1, n + 3))
        q, be = waterfill(w, b)
        m = int((w > 0).sum())
        assert be == min(b, m)
        if be == 0:
            assert np.all(q == 0)
            continue
        assert abs(q.sum() - be) <= 1e-12 * be
        assert np.all(q <= 1.0) and np.all(q[w == 0] == 0) and np.all(q[w > 0] > 0)
        free = (q < 1.0) & (w > 0)
        if free.any():          # proportional to w on the uncapped set
            ratio = q[free] / w[free]
            assert np.ptp(ratio) <= 1e-12 * ratio.max()
            capped = q == 1.0
            assert np.all(w[capped] >= w[free].max() * (1 - 1e-12))  # the capped are largest
        np.testing.assert_allclose(q[w > 0], _waterfill_np(w[w > 0], be), rtol=1e-12)


@pytest.mark.parametrize("kind", ["uniform", "ties", "wide exponents", "subnormal",
                                  "sparse"])
def test_the_radix_sort_orders_by_weight_then_index(kind):
    """Algorithm 3's sort (a radix sort of the weights' bits): the positive weights by
    value descending, equal ones by ascending index, as a comparison sort gives."""
    rng = np.random.default_rng(len(kind))
    for n in (0, 1, 2, 7, 2048, 5000):
        if kind == "uniform":
            w = rng.random(n)
        elif kind == "ties":
            w = rng.integers(0, 4, n).astype(float)
        elif kind == "wide exponents":
            w = 10.0 ** rng.uniform(-300, 300, n)
        elif kind == "subnormal":
            w = rng.integers(0, 5, n) * 5e-324
        else:
            w = np.where(rng.random(n) < 0.9, 0.0, rng.random(n))
        idx = np.flatnonzero(w > 0)
        expect = idx[np.lexsort((idx, -w[idx]))]
        np.testing.assert_array_equal(sort_desc(w), expect)


def test_sampler_wrappers_reject_bad_input():
    with pytest.raises(ValueError, match="b must"):
        waterfill(np.ones(3), 0)
    with pytest.raises(ValueError, match="q must"):
        alg3_components(np.array([0.5, 0.5, 0.5]), 2)
    with pytest.raises(ValueError, match="q must"):
        alg3_components(np.array([1.5, 0.5, 0.0]), 2)
    with pytest.raises(ValueError, match=">= 0"):
        alg3_components(np.array([1.5, 0.5, -0.0001]), 2)
    with pytest.raises(ValueError, match="sampler"):
        minibatch_draw(np.ones(3), 2, 10, sampler="madow")


# ---------------------------------------------------------------------------------------
# Algorithm 4


@pytest.mark.parametrize("b", [2, 8, 32])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_minibatch_reaches_reference_optimum(b, loss, f2, references):
    X, y = f2
    n = X.shape[0]
    lam = 1.0 / n
    if loss == "squared":
        p_star, w_star = references.ridge(X, y, lam)
    else:
        p_star, w_star = references.lbfgs(X, y, lam, loss)
    m = train_adfsdca(X, y, loss=loss, lam=lam, variant="exact", batch_size=b, tol=1e-12,
                      max_epochs=1000)
    assert m.converged
    p = references.primal(X, y, m.coef, lam, loss)
    assert abs(p - p_star) <= 1e-8 * max(1.0, abs(p_star))
    assert np.linalg.norm(m.coef - w_star) <= 1e-4 * max(1.0, np.linalg.norm(w_star))
    assert m.params["batch_size"] == b
    assert 0.0 < m.params["theta"] <= 1.0


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_systematic_sampler_reaches_reference_optimum(loss, f2, references):
    X, y = f2
    lam = 1.0 / X.shape[0]
    if loss == "squared":
        p_star, _ = references.ridge(X, y, lam)
    else:
        p_star, _ = references.lbfgs(X, y, lam, loss)
    m = train_adfsdca(X, y, loss=loss, lam=lam, variant="exact", batch_size=8,
                      batch_sampling="systematic", tol=1e-12, max_epochs=1000)
    assert m.converged
    assert abs(references.primal(X, y, m.coef, lam, loss) - p_star) <= 1e-8 * max(1, p_star)


def test_minibatch_sparse_float32_int64(references):
    """Sparse binary rows (omega < n), float32 data and int64 indices: same optimum."""
    rng = np.random.default_rng(7)
    A = (rng.random((300, 40)) < rng.uniform(0.02, 0.2, size=300)[:, None]).astype(float)
    y = np.sign(A @ rng.standard_normal(40) + 0.3 * rng.standard_normal(300))
    y[y == 0] = 1
    X = sp.csr_matrix(A)
    lam = 1.0 / 300
    p_star, _ = references.lbfgs(X, y, lam, "logistic")
    X32 = X.astype(np.float32)
    X32.indices = X32.indices.astype(np.int64)
    X32.indptr = X32.indptr.astype(np.int64)
    m = train_adfsdca(X32, y, lam=lam, variant="exact", batch_size=16, tol=1e-12,
                      max_epochs=1000)
    assert m.converged
    assert abs(references.primal(X, y, m.coef, lam, "logistic") - p_star) <= 1e-8 * p_star
    a = _quiet(train_adfsdca, X, y, lam=lam, variant="exact", batch_size=16, tol=0.0,
               max_epochs=3, seed=2)
    Xi = X.copy()
    Xi.indices = Xi.indices.astype(np.int64)
    Xi.indptr = Xi.indptr.astype(np.int64)
    c = _quiet(train_adfsdca, Xi, y, lam=lam, variant="exact", batch_size=16, tol=0.0,
               max_epochs=3, seed=2)
    np.testing.assert_array_equal(a.coef, c.coef)


@pytest.mark.parametrize("sampler", ["alg3", "systematic"])
def test_batch_size_one_is_the_serial_path(sampler, f1):
    """batch_size = 1 gives bit-identical iterates, history and sampled
    coordinates to the serial exact adfSDCA with the same seed."""
    X, y = f1
    ta = np.full(4 * X.shape[0], -1, dtype=np.intp)
    tb = ta.copy()
    a = _quiet(train_adfsdca, X, y, variant="exact", tol=0.0, max_epochs=4, seed=5, trace=ta)
    b = _quiet(train_adfsdca, X, y, variant="exact", batch_size=1, batch_sampling=sampler,
               tol=0.0, max_epochs=4, seed=5, trace=tb)
    np.testing.assert_array_equal(ta, tb)
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.dual, b.dual)
    for f in ("primal", "dual", "gap", "max_kappa"):
        np.testing.assert_array_equal(a.history[f], b.history[f])


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_primal_dual_invariant_after_aggregated_updates(loss, f1):
    X, y = f1
    n = X.shape[0]
    lam = 1.0 / n
    seen = []

    def cb(info):
        seen.append(info["coef"].copy())

    # tol = 0: no certification resync, so w is the incrementally updated one
    m = _quiet(train_adfsdca, X, y, loss=loss, lam=lam, variant="exact", batch_size=8,
               tol=0.0, max_epochs=6, seed=3, callback=cb)
    assert not m.converged and len(seen) == 7
    w_alpha = X.T @ m.dual / (lam * n)
    assert np.abs(m.coef - w_alpha).max() <= 1e-10 * max(1.0, np.abs(m.coef).max())
    np.testing.assert_array_equal(seen[-1], m.coef)
    z = X @ w_alpha
    kappa = m.dual + _deriv(loss, z, y)
    grad = X.T @ _deriv(loss, z, y) / n + lam * w_alpha
    assert np.linalg.norm(grad) > 1e-6
    np.testing.assert_allclose(X.T @ kappa / n, grad, rtol=0,
                               atol=1e-10 * np.abs(grad).max())


def _twin_minibatch(X, y, loss, lam, b, trace, iters, cap=0.0):
    """Dense NumPy Algorithm 4 replaying the sampled sets: per iteration all residues at
    the same w, water-filled q (sum b_eff), Theta_b of (75) with v' = min(b_eff, omega) v
    and p = q / b_eff, then the aggregated (Jacobi) update."""
    A = X.toarray()
    n, d = A.shape
    lt = LTILDE[loss]
    gamma = lam * lt
    v = (A * A).sum(axis=1)
    omega = (A != 0).sum(axis=0).max()
    alpha, w = np.zeros(n), np.zeros(d)
    for t in range(iters):
        S = trace[t * b:(t + 1) * b]
        S = S[S >= 0]
        kappa = alpha + _deriv(loss, A @ w, y)
        nz = kappa != 0
        be = min(b, int(nz.sum()))
        assert S.shape[0] == be and len(set(S.tolist())) == be
        vp = min(be, omega) * v
        q = np.zeros(n)
        q[nz] = _waterfill_np(np.sqrt(vp[nz] * gamma + n * lam ** 2) * np.abs(kappa[nz]), be)
        p = q / be
        # (75): n lam^2 b sum kappa^2 / sum (n lam^2 + v' gamma) kappa^2 / p
        theta = (n * lam ** 2 * be * (kappa @ kappa)
                 / np.sum((n * lam ** 2 + vp[nz] * gamma) * kappa[nz] ** 2 / p[nz]))
        assert 0 < theta <= 1 + 1e-12
        eta = theta / (be * p[S])
        if cap > 0:
            eta = np.minimum(eta, cap * n * lam / (n * lam + lt * vp[S]))
        da = -eta * kappa[S]
        alpha[S] += da
        w += A[S].T @ da / (lam * n)
    return w, alpha


@pytest.mark.parametrize("loss,b,sampler,cap", [("logistic", 8, "alg3", None),
                                                ("squared", 8, "alg3", None),
                                                ("logistic", 3, "systematic", None),
                                                ("logistic", 8, "alg3", "coordinate"),
                                                ("squared", 200, "alg3", None)])
def test_numpy_twin_replays_minibatch_iterates(loss, b, sampler, cap, f1):
    X, y = f1
    n = X.shape[0]
    lam = 1.0 / n
    iters_per_epoch = -(-n // b)
    # two epochs of aggregated steps (b = n: one per epoch) replayed by the dense twin
    full = np.full(2 * iters_per_epoch * b, -2, dtype=np.intp)
    m = _quiet(train_adfsdca, X, y, loss=loss, lam=lam, variant="exact", batch_size=b,
               batch_sampling=sampler, step_cap=cap, tol=0.0, max_epochs=2, seed=4,
               trace=full)
    assert full.min() >= -1
    w2, alpha2 = _twin_minibatch(X, y, loss, lam, b, full, 2 * iters_per_epoch,
                                 cap=1.0 if cap else 0.0)
    np.testing.assert_allclose(m.dual, alpha2, rtol=0, atol=1e-12 * np.abs(alpha2).max())
    np.testing.assert_allclose(m.coef, w2, rtol=0, atol=1e-12 * np.abs(w2).max())
    if b == n:        # b = n: every row, every iteration (Algorithm 3 returns [n])
        assert sorted(full[:n].tolist()) == list(range(n))


def test_minibatch_epochs_comparable_to_serial(f1):
    """F1 logistic, epochs to a gap of 1e-6 for b in {2, 4, 8} within 1.5x
    of b = 1 (+1), and b = 32 still converges."""
    X, y = f1
    kw = dict(loss="logistic", variant="exact", tol=1e-6, max_epochs=300)
    e1 = train_adfsdca(X, y, **kw).n_epochs
    for b in (2, 4, 8):
        m = train_adfsdca(X, y, batch_size=b, **kw)
        assert m.converged and m.n_epochs <= 1.5 * e1 + 1
    assert train_adfsdca(X, y, batch_size=32, **kw).converged


def test_minibatch_zero_residue_rows_and_fewer_nonzero_than_b(adf_fixtures):
    """A row with x = 0 and y = 0 (squared loss) keeps kappa = 0 and is never sampled; a
    problem whose n - 1 nonzero residues are fewer than b = n samples b_eff = n - 1."""
    X, y = adf_fixtures.make_f1(4, n=12, d=5)
    A = X.toarray()
    A[7] = 0.0
    y = y.copy()
    y[7] = 0.0
    n = 12
    trace = np.full(1000 * n, -2, dtype=np.intp)
    # b = n: one (full-gradient-like) iteration per epoch, ~300 epochs here
    m = _quiet(train_adfsdca, sp.csr_matrix(A), y, loss="squared", variant="exact",
               batch_size=n, tol=1e-12, max_epochs=1000, trace=trace)
    assert m.converged
    used = trace[trace != -2].reshape(-1, n)
    assert np.all(used[:, -1] == -1)                         # b_eff = n - 1
    assert 7 not in set(used.ravel().tolist())
    assert np.all(np.sort(used[:, :-1], axis=1) == np.delete(np.arange(n), 7))


def test_minibatch_deterministic_given_seed(f1):
    X, y = f1
    a = _quiet(train_adfsdca, X, y, variant="exact", batch_size=8, tol=0.0, max_epochs=3,
               seed=11)
    b = _quiet(train_adfsdca, X, y, variant="exact", batch_size=8, tol=0.0, max_epochs=3,
               seed=11)
    c = _quiet(train_adfsdca, X, y, variant="exact", batch_size=8, tol=0.0, max_epochs=3,
               seed=12)
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.dual, b.dual)
    assert not np.array_equal(a.coef, c.coef)


def test_bad_batch_size(f1):
    X, y = f1
    n = X.shape[0]
    with pytest.raises(ValueError, match="batch_size"):
        train_adfsdca(X, y, variant="exact", batch_size=0)
    with pytest.raises(ValueError, match="batch_size"):
        train_adfsdca(X, y, variant="exact", batch_size=n + 1)
    with pytest.raises(TypeError, match="batch_size"):
        train_adfsdca(X, y, variant="exact", batch_size=2.0)
    with pytest.raises(TypeError, match="batch_size"):
        train_adfsdca(X, y, variant="exact", batch_size=True)
    with pytest.raises(ValueError, match="batch_size > 1 needs variant='exact'"):
        train_adfsdca(X, y, batch_size=4)
    with pytest.raises(ValueError, match="batch_sampling"):
        train_adfsdca(X, y, variant="exact", batch_size=4, batch_sampling="madow")
    with pytest.raises(TypeError, match="batch_sampling"):
        train_adfsdca(X, y, variant="exact", batch_size=4, batch_sampling=1)
