"""Lazy dense updates (``dualsolve/_core/lazy.pxd``) against plain dense stepping.

Every closed form is compared with the recurrence it replaces, iterated step by step in
NumPy (and, for prox_pow, with a 50-digit mpmath iteration).
"""
import numpy as np
import pytest
import scipy.sparse as sp

from dualsolve._core import lazy

DIRECT_STEPS = 8   # LAZY_DIRECT_STEPS in lazy.pxd: prox_pow iterates directly up to here


# ---------------------------------------------------------------------------------------
# NumPy references


def soft(w, t):
    return np.where(w > t, w - t, np.where(w < -t, w + t, 0.0))


def F(z, tau, u, lam1, lam2):
    return soft(z - tau * u, tau * lam1) / (1.0 + tau * lam2)


def piece(z, tau, u, lam1):
    """+1 on P+, -1 on P-, 0 on Z (the piece whose formula F applies to z)."""
    w = z - tau * u
    t = tau * lam1
    return np.where(w > t, 1, np.where(w < -t, -1, 0))


def iterate_F(z, s, tau, u, lam1, lam2):
    """F^s elementwise by direct iteration, and the run-length compressed sequence of
    pieces each orbit used (encoded base 4: digit piece + 2)."""
    z = np.array(z, dtype=np.float64)
    s = np.asarray(s)
    path = np.zeros(z.shape, dtype=np.int64)
    prev = np.full(z.shape, 9)
    for k in range(int(s.max())):
        act = k < s
        p = piece(z, tau, u, lam1)
        new = act & (p != prev)
        path = np.where(new, path * 4 + (p + 2), path)
        prev = np.where(act, p, prev)
        z = np.where(act, F(z, tau, u, lam1, lam2), z)
    return z, path


def decode(code):
    names = {1: "-", 2: "Z", 3: "+"}
    out = []
    while code:
        out.append(names[code % 4])
        code //= 4
    return "".join(reversed(out))


def random_params(rng, m, smax=300):
    def lam():
        v = 10.0 ** rng.uniform(-6, 0, m)
        v[rng.random(m) < 0.25] = 0.0
        return v
    s = rng.integers(1, smax + 1, m)
    tau = 10.0 ** rng.uniform(-3, 1, m)
    lam1, lam2 = lam(), lam()
    u = rng.standard_normal(m) * 10.0 ** rng.uniform(-3, 2, m)
    z = rng.standard_normal(m) * 10.0 ** rng.uniform(-3, 3, m)
    return z, s, tau, u, lam1, lam2


# ---------------------------------------------------------------------------------------
# 1. prox_pow


def test_prox_pow_fuzz_equals_direct_iteration():
    rng = np.random.default_rng(20240601)
    m = 30000
    z, s, tau, u, lam1, lam2 = random_params(rng, m)
    got, stats = lazy.prox_pow_many(z, s, tau, u, lam1, lam2, return_stats=True)
    ref, path = iterate_F(z, s, tau, u, lam1, lam2)
    # Error relative to the orbit's scale (a monotone orbit stays between z and F^s(z)).
    # A pure relative error is meaningless where F^s(z) is a cancellation of much larger
    # terms: there the direct iteration itself is off by ~s * eps * |z| (see the mpmath
    # test below); this is the brief's "1e-12 relative, absolute near 0".
    scale = np.maximum(np.abs(ref), np.abs(z))
    err = np.abs(got - ref)
    assert np.all(err <= 1e-12 * scale), (err / scale).max()
    # where the result is not a cancellation (|ref| >= |z| / 10), plain relative error
    big = np.abs(ref) >= 0.1 * np.abs(z)
    assert np.all(err[big] <= 1e-12 * np.abs(ref[big]))
    assert np.all(got[ref == 0.0] == 0.0)        # exact zeros from the zero piece

    # coverage: every piece, every transition the monotone orbit can make, and the
    # special cases, on the closed-form path (s > DIRECT_STEPS)
    closed = s > DIRECT_STEPS
    seen = {decode(c) for c in np.unique(path[closed & (lam1 > 0)])}
    for p in ["+", "-", "Z", "+Z", "-Z", "Z+", "Z-", "+Z-", "-Z+", "+-", "-+"]:
        assert p in seen, (p, seen)
    assert seen <= {"+", "-", "Z", "+Z", "-Z", "Z+", "Z-", "+Z-", "-Z+", "+-", "-+"}
    for l1z, l2z in [(True, False), (False, True), (True, True)]:
        sel = closed & ((lam1 == 0) == l1z) & ((lam2 == 0) == l2z)
        assert sel.sum() > 500
    # O(1) work: at most 3 pieces and 3 closed-form evaluations per call; the exit-time
    # estimate needs no correction here (corrections are tested with forced errors below)
    assert stats[closed, 0].max() <= 3
    assert stats[closed, 1].max() <= 3
    assert stats[:, 2].max() == 0
    assert np.all(stats[~closed] == 0)


@pytest.mark.parametrize("kshift", [-10**6, -7, -2, -1, 1, 2, 3, 4, 9, 10**6])
def test_prox_pow_recovers_from_wrong_exit_estimates(kshift):
    """Offset every exit-time estimate: the +-1 corrections (and, for larger errors, the
    walk and bisection behind them) still find the exact exit."""
    rng = np.random.default_rng(17)
    m = 5000
    z, s, tau, u, lam1, lam2 = random_params(rng, m)
    s = s + DIRECT_STEPS
    base = lazy.prox_pow_many(z, s, tau, u, lam1, lam2)
    got, stats = lazy.prox_pow_many(z, s, tau, u, lam1, lam2, return_stats=True,
                                    _kshift=kshift)
    ref, path = iterate_F(z, s, tau, u, lam1, lam2)
    scale = np.maximum(np.abs(ref), np.abs(z))
    assert np.all(np.abs(got - ref) <= 1e-12 * scale)
    assert np.all(np.abs(got - base) <= 1e-14 * scale)
    exits = np.array([len(decode(c)) > 1 for c in path]) & (lam1 > 0)
    assert (stats[exits, 2] > 0).mean() > 0.5          # the corrections did run
    assert stats[:, 1].max() <= 3 + 2 * 64             # bisection: O(log s) at worst


def test_prox_pow_far_from_the_boundary():
    """|z| up to 1e25: the exit ratio r = (bnd - zf)/(z - zf) is far below eps, where
    1 - x rounds to 0 (the log1p(-x) form alone would give an infinite exit time)."""
    rng = np.random.default_rng(23)
    m = 3000
    z = rng.choice([-1, 1], m) * 10.0 ** rng.uniform(5, 25, m)
    s = rng.integers(DIRECT_STEPS + 1, 400, m)
    tau = 10.0 ** rng.uniform(-3, 1, m)
    lam1 = 10.0 ** rng.uniform(-3, 0, m)
    lam2 = 10.0 ** rng.uniform(-6, 0, m)
    lam2[::4] = 0.0
    u = rng.standard_normal(m)
    got, stats = lazy.prox_pow_many(z, s, tau, u, lam1, lam2, return_stats=True)
    ref, path = iterate_F(z, s, tau, u, lam1, lam2)
    scale = np.maximum(np.abs(ref), np.abs(z))
    assert np.all(np.abs(got - ref) <= 1e-12 * scale)
    assert stats[:, 1].max() <= 3 and stats[:, 2].max() == 0
    assert {"+Z-", "-Z+", "+-", "-+"} <= {decode(c) for c in np.unique(path)}


def test_prox_pow_against_exact_arithmetic():
    """Closed form vs a 50-digit iteration: within a few ulps of the orbit scale, and at
    least as accurate as float64 direct iteration."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    rng = np.random.default_rng(7)
    m = 400
    z, s, tau, u, lam1, lam2 = random_params(rng, m)
    s = s + DIRECT_STEPS                                  # closed-form path only
    got = lazy.prox_pow_many(z, s, tau, u, lam1, lam2)
    direct, _ = iterate_F(z, s, tau, u, lam1, lam2)

    def exact(z, s, tau, u, l1, l2):
        z, tau, u, l1, l2 = (mp.mpf(float(v)) for v in (z, tau, u, l1, l2))
        for _ in range(int(s)):
            w, t = z - tau * u, tau * l1
            z = (w - t if w > t else (w + t if w < -t else mp.mpf(0))) / (1 + tau * l2)
        return float(z)

    ex = np.array([exact(*a) for a in zip(z, s, tau, u, lam1, lam2)])
    scale = np.maximum(np.abs(ex), np.abs(z))
    e_closed = np.abs(got - ex) / scale
    e_direct = np.abs(direct - ex) / scale
    assert e_closed.max() <= 4e-15
    assert e_closed.max() <= e_direct.max()


@pytest.mark.parametrize("lam2", [1e-6, 1e-3, 0.5])
def test_prox_pow_tiny_lam2_long_runs(lam2):
    """Tiny lam2: the fixed point -c/lam2 is huge and exits happen late; long orbits
    (s up to 5000) through all three pieces."""
    rng = np.random.default_rng(3)
    m = 400
    s = rng.integers(DIRECT_STEPS + 1, 5000, m)
    tau = 10.0 ** rng.uniform(-3, 0, m)
    lam1 = 10.0 ** rng.uniform(-3, 0, m)
    u = rng.choice([-1, 1], m) * lam1 * rng.uniform(0.0, 3.0, m)
    z = rng.standard_normal(m) * 10.0 ** rng.uniform(-1, 2, m)
    got = lazy.prox_pow_many(z, s, tau, u, lam1, lam2)
    ref, path = iterate_F(z, s, tau, u, lam1, lam2)
    scale = np.maximum(np.abs(ref), np.abs(z))
    assert np.all(np.abs(got - ref) <= 1e-12 * scale)
    seen = {decode(c) for c in np.unique(path)}
    assert {"+Z-", "-Z+"} <= seen


def test_prox_pow_exit_at_boundaries():
    """Orbits that land exactly on a piece boundary (lam2 = 0, integer arithmetic), and
    starts exactly on the boundaries bp = tau (u + lam1), bm = tau (u - lam1)."""
    tau, u, lam1 = 0.5, 0.25, 0.75          # c+ = 1, tau c+ = 0.5; bp = 0.5, bm = -0.25
    s = np.arange(1, 40)
    for z0 in [10.0, 10.5, 0.5, -0.25, 0.0, -10.0, 0.5000000000000001, -0.2500000000000001]:
        got = lazy.prox_pow_many(z0, s, tau, u, lam1, 0.0)
        ref, _ = iterate_F(np.full(s.shape, z0), s, tau, u, lam1, 0.0)
        assert np.array_equal(got, ref), z0


def test_prox_pow_special_cases_and_composition():
    rng = np.random.default_rng(11)
    m = 2000
    z, _, tau, u, lam1, lam2 = random_params(rng, m)
    # closed forms of the special cases
    s = rng.integers(DIRECT_STEPS + 1, 10**6, m)
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 40

    def l2_only(z, s, tau, u, lam2):      # a^s z - coef_s u, exactly
        if lam2 == 0:
            return float(z - mp.mpf(int(s)) * mp.mpf(tau) * u), abs(z) + abs(s * tau * u)
        ak = mp.exp(-int(s) * mp.log1p(mp.mpf(tau) * mp.mpf(lam2)))
        coef = (1 - ak) / mp.mpf(lam2)
        return float(ak * z - coef * mp.mpf(u)), abs(z) + abs(float(coef) * u)

    ref, scale = np.array([l2_only(*a) for a in zip(z, s, tau, u, lam2)]).T
    got = lazy.prox_pow_many(z, s, tau, u, 0.0, lam2)
    assert np.all(np.abs(got - ref) <= 1e-13 * scale)
    assert np.array_equal(lazy.prox_pow_many(z, s, tau, u, 0.0, 0.0), z - (s * tau) * u)
    # s = 0 and negative s are the identity
    assert np.array_equal(lazy.prox_pow_many(z, 0, tau, u, lam1, lam2), z)
    assert np.array_equal(lazy.prox_pow_many(z, -3, tau, u, lam1, lam2), z)
    # F^(s1 + s2) = F^s2 o F^s1, including gaps beyond 2^31 and 2^53
    for smax in [10**4, 2**40, 2**62]:
        s1 = rng.integers(0, smax, m)
        s2 = rng.integers(0, smax, m)
        one = lazy.prox_pow_many(z, s1 + s2, tau, u, lam1, lam2)
        two = lazy.prox_pow_many(lazy.prox_pow_many(z, s1, tau, u, lam1, lam2), s2,
                                 tau, u, lam1, lam2)
        assert np.all(np.isfinite(one)) and np.all(np.isfinite(two))
        scale = np.maximum(np.abs(one), np.abs(z))      # the orbit is monotone
        assert np.all(np.abs(one - two) <= 1e-12 * scale)
    # long runs end at the fixed point of the last piece: S(-u, lam1)/lam2 (lam2 > 0)
    sel = lam2 > 1e-3
    zf = soft(-u[sel], lam1[sel]) / lam2[sel]
    far = lazy.prox_pow_many(z[sel], 2**62, tau[sel], u[sel], lam1[sel], lam2[sel])
    assert np.allclose(far, zf, rtol=1e-12, atol=1e-300)
    # NaN propagates in O(1)
    assert np.isnan(lazy.prox_pow_many(np.nan, 2**60, 1.0, 0.1, 0.5, 0.1))
    assert np.isnan(lazy.prox_pow_many(1.0, 2**60, 1.0, np.nan, 0.5, 0.1))


def test_affine_pow():
    rng = np.random.default_rng(5)
    m = 3000
    z = rng.standard_normal(m) * 10
    c = rng.standard_normal(m)
    tau = 10.0 ** rng.uniform(-3, 1, m)
    lam2 = np.where(rng.random(m) < 0.3, 0.0, 10.0 ** rng.uniform(-8, 0, m))
    k = rng.integers(0, 200, m)
    ref = z.copy()
    for i in range(200):
        act = i < k
        ref = np.where(act, (ref - tau * c) / (1 + tau * lam2), ref)
    got = lazy.affine_pow_many(z, k, c, tau, lam2)
    scale = np.maximum(np.abs(ref), np.abs(z)) + np.abs(k * tau * c)
    assert np.all(np.abs(got - ref) <= 1e-13 * scale)
    # tiny lam2: no cancellation against the huge fixed point -c/lam2
    got = lazy.affine_pow_many(1.0, 100, 0.5, 1.0, 1e-12)
    assert got == pytest.approx(1.0 - 50.0, rel=1e-10)


# ---------------------------------------------------------------------------------------
# 2. ScaledVector


@pytest.mark.parametrize("dtype,itype", [(np.float64, np.int64), (np.float32, np.int32)])
def test_scaled_vector_equals_dense_twin(dtype, itype):
    rng = np.random.default_rng(21)
    d = 50
    w = rng.standard_normal(d)
    sv = lazy.ScaledVector(w)
    renorms = 0
    for step in range(5000):
        r = rng.random()
        c = (1e-4 if r < 0.01 else 0.0 if r < 0.0015 else -0.9 if r < 0.02
             else 1.0 + 1e-3 if r < 0.03 else rng.uniform(0.95, 1.0))
        renorms += sv.scale(c)
        w = c * w
        nnz = rng.integers(0, 6)
        ind = rng.integers(0, d, nnz).astype(itype)      # repeated indices allowed
        data = rng.standard_normal(nnz).astype(dtype)
        coef = rng.standard_normal() * 0.3
        sv.add_row(coef, data, ind)
        np.add.at(w, ind, coef * data.astype(np.float64))
        if rng.random() < 0.1:
            j = rng.integers(d)
            sv.add_at(j, 0.25)
            w[j] += 0.25
        dense_dot = float(data.astype(np.float64) @ w[ind])
        assert sv.dot_row(data, ind) == pytest.approx(dense_dot, rel=1e-11,
                                                      abs=1e-13 * np.abs(w).max())
        got = sv.to_array()
        assert np.all(np.abs(got - w) <= 1e-12 * np.maximum(np.abs(w), 1e-3 * np.abs(w).max()))
        assert sv.sqnorm == pytest.approx(w @ w, rel=1e-10)
        assert 1e-9 <= abs(sv.scale_factor) <= 1e9
    assert renorms >= 20
    assert sv.get(3) == pytest.approx(w[3], rel=1e-12, abs=1e-12 * np.abs(w).max())
    sv.renormalize()
    assert sv.scale_factor == 1.0
    np.testing.assert_allclose(sv.v, w, rtol=1e-12, atol=1e-12 * np.abs(w).max())


def test_scaled_vector_scale_is_O1_and_zero_resets():
    sv = lazy.ScaledVector(np.arange(1.0, 6.0))
    v_before = sv.v.copy()
    assert not sv.scale(0.5)
    assert np.array_equal(sv.v, v_before)        # no pass over v
    assert sv.scale_factor == 0.5
    assert sv.sqnorm == pytest.approx(0.25 * 55.0, rel=1e-15)
    assert sv.scale(1e-10)                        # leaves [1e-9, 1e9]: renormalised
    assert sv.scale_factor == 1.0
    np.testing.assert_allclose(sv.v, 0.5e-10 * np.arange(1.0, 6.0), rtol=1e-15)
    assert sv.scale(0.0)
    assert np.all(sv.v == 0) and sv.sqnorm == 0.0
    sv.add_row(2.0, np.array([1.0, 3.0]), np.array([1, 4]))
    np.testing.assert_array_equal(sv.to_array(), [0, 2, 0, 0, 6])
    with pytest.raises(IndexError):
        sv.add_row(1.0, np.array([1.0]), np.array([5]))


# ---------------------------------------------------------------------------------------
# 3. DriftJIT


def test_drift_tables():
    for a in [0.0, 0.3, 0.999, 1.0 - 1e-12, 1.0, 1.01]:
        T = 300
        la = np.log(a) if a > 0 else -np.inf
        apow, S, U = lazy.drift_tables(la, T)
        ref_a, ref_S, ref_U = [1.0], [0.0], [0.0]
        for s in range(1, T + 1):
            ref_S.append(ref_S[-1] + ref_a[-1])
            ref_a.append(ref_a[-1] * a)
            ref_U.append(ref_U[-1] + ref_S[-1])
        np.testing.assert_allclose(apow, ref_a, rtol=1e-13, atol=1e-300)
        np.testing.assert_allclose(S, ref_S, rtol=1e-13)
        np.testing.assert_allclose(U, ref_U, rtol=1e-13)
    # a = 1 - om with om tiny: log_a = log1p(-om) keeps S exact to rounding
    om = 1e-13
    _, S, _ = lazy.drift_tables(np.log1p(-om), 1000)
    s = np.arange(1001)
    np.testing.assert_allclose(S, s - om * s * (s - 1) / 2, rtol=1e-15)


def drift_dense(x0, a, b_of_t, touches, T, xsum0):
    """x <- a x + b (+ g on touched coordinates) for T steps; running sum of iterates."""
    x = x0.copy()
    xsum = xsum0.copy()
    hist = [x.copy()]
    for t in range(T):
        x = a * x + b_of_t(t)
        for j, g in touches.get(t, []):
            x[j] += g
        xsum += x
        hist.append(x.copy())
    return np.array(hist), xsum


@pytest.mark.parametrize("a,c2", [(0.97, 0.0), (1 / (1 + 0.04), 0.3), (1.0, 0.0), (0.0, 0.5)])
def test_drift_catch_up_equals_dense_stepping(a, c2):
    rng = np.random.default_rng(31)
    d, T = 25, 400
    x0 = rng.standard_normal(d)
    p = rng.standard_normal(d)
    q = rng.standard_normal(d) if c2 else None
    c1 = -0.05
    touches = {}
    for t in range(T):
        J = rng.choice(d, rng.integers(0, 3), replace=False)
        touches[t] = [(j, rng.standard_normal() * 0.1) for j in J]

    def b_of_t(t):
        return c1 * p + (c2 * q if c2 else 0.0)

    hist, xsum_ref = drift_dense(x0, a, b_of_t, touches, T, x0)
    st = lazy.DriftState(x0, a, p, c1, q, c2, T=T, track_sum=True, xsum0=x0)
    for t in range(T):
        for j, g in touches[t]:
            st.catch_up(j, t)
            assert st.x[j] == pytest.approx(hist[t][j], rel=1e-12, abs=1e-12)
            st.step(j, t, g)
        if t % 13 == 0:
            np.testing.assert_allclose(st.values(t + 1), hist[t + 1], rtol=1e-12, atol=1e-12)
    st.flush(T)
    np.testing.assert_allclose(st.x, hist[-1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(st.xsum, xsum_ref, rtol=1e-12, atol=1e-12 * np.abs(xsum_ref).max())
    with pytest.raises(ValueError):
        st.catch_up(0, 2 * T + 1)                 # beyond the tables


def test_drift_p_changes_after_catch_up_and_epochs():
    """Prospect-style: p[j] (here a running sum) changes only on touched coordinates, right
    after their catch-up; a new a each epoch after a flush (SOREL / LSVRG)."""
    rng = np.random.default_rng(41)
    d, T, epochs = 15, 120, 3
    x0 = rng.standard_normal(d)
    p0 = rng.standard_normal(d)
    st = lazy.DriftState(x0, 0.9, p0, -0.1, T=T)
    x, p = x0.copy(), p0.copy()
    for e in range(epochs):
        a = [0.9, 0.99, 1.0 / 1.3][e]
        if e:
            st.set_params(a, -0.1)
        for t in range(e * T, (e + 1) * T):
            J = rng.choice(d, 2, replace=False)
            dp = rng.standard_normal(2)
            x = a * x + (-0.1) * p               # dense step with the old p
            for j, delta in zip(J, dp):
                st.catch_up(j, t)
                st.step(j, t, 0.0)
                st.p[j] += delta                  # p changes after the catch-up and step
            p[J] += dp
        st.flush((e + 1) * T)
        np.testing.assert_allclose(st.x, x, rtol=1e-12, atol=1e-12)


def test_drift_matches_prox_pow_affine_case():
    """The affine case of prox_pow: F(z) = (z - tau u)/(1 + tau lam2) is a = 1/(1+tau lam2),
    b = -a tau u."""
    rng = np.random.default_rng(51)
    d = 40
    z = rng.standard_normal(d)
    u = rng.standard_normal(d)
    tau, lam2, T = 0.7, 0.05, 500
    a = 1 / (1 + tau * lam2)
    st = lazy.DriftState(z, a, u, -a * tau, T=T, log_a=-np.log1p(tau * lam2))
    s = rng.integers(0, T + 1, d)
    got = np.array([st.value(j, s[j]) for j in range(d)])
    ref = lazy.prox_pow_many(z, s, tau, u, 0.0, lam2)
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-14)
