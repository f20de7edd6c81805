"""Spectra, spectral risk and the permutahedron projection (Ge & Jiang 2024,
Table 1 and section 3), against brute force and quadrature.

References used here never call the code under test: literal Table-1 formulas, numerical
quadrature of the risk profiles, brute force over all permutations / all faces of the
permutahedron, a Lawson-Hanson NNLS solve of the projection QP, Clarabel (interior point)
and sklearn's isotonic regression.
"""
import functools
import itertools
import math

import numpy as np
import pytest
import scipy.integrate as si
import scipy.optimize as so

from dualsolve._core import isotonic
from dualsolve.spectral import (SPECTRUM_KINDS, check_spectrum, project_permutahedron,
                                spectral_risk, spectrum)

NS = [1, 2, 3, 7, 10, 244, 6553]
PARAMS = {
    "erm": [None],
    "superquantile": [1e-6, 0.01, 0.1, 0.25, 1 / 3, 0.5, 0.9, 0.999, 1.0],
    "extremile": [1.0, 1.0 + 1e-9, 1.5, 2.0, 2.5, 7.0, 50.0],
    "esrm": [1e-8, 0.1, 1.0, 2.0, 10.0, 200.0],
}
ALL_CASES = [(k, p) for k in SPECTRUM_KINDS for p in PARAMS[k]]


# ---------------------------------------------------------------------------------------
# references


def table1(kind, n, p):
    """Table 1 of the paper, literally (CVaR middle case fixed), in plain Python floats."""
    out = []
    for i in range(1, n + 1):
        if kind == "erm":
            out.append(1 / n)
        elif kind == "superquantile":
            c = math.ceil(n * (1 - p))
            out.append(1 / (n * p) if i > c else (1 - math.floor(n * p) / (n * p) if i == c else 0.0))
        elif kind == "extremile":
            out.append((i / n) ** p - ((i - 1) / n) ** p)
        else:
            out.append(math.exp(-p) * (math.exp(p * i / n) - math.exp(p * (i - 1) / n))
                       / (1 - math.exp(-p)))
    return np.array(out)


def profile(kind, p):
    if kind == "extremile":
        return lambda u: p * u ** (p - 1)
    if kind == "esrm":
        return lambda u: p * math.exp(-p * (1 - u)) / (-math.expm1(-p))
    raise ValueError(kind)


def sorted_partial_sums_ok(x, sigma, atol):
    """x in P(sigma): equal sums and the k largest of x sum to at most the k largest of sigma."""
    cx = np.cumsum(np.sort(x)[::-1])
    cs = np.cumsum(np.sort(sigma)[::-1])
    return abs(cx[-1] - cs[-1]) <= atol and np.all(cx <= cs + atol)


@functools.lru_cache(maxsize=None)
def ordered_partitions(n):
    """All ordered set partitions of range(n) as block labels 0..m-1 (block 0 = the lowest)."""
    rgs = []

    def rec(prefix, m):
        if len(prefix) == n:
            rgs.append((prefix, m))
            return
        for b in range(m + 1):
            rec(prefix + (b,), max(m, b + 1))

    rec((), 0)
    rows = []
    for s, m in rgs:
        for order in itertools.permutations(range(m)):
            rows.append([order[b] for b in s])
    return np.array(rows, dtype=np.intp)


def project_brute_faces(z, sigma):
    """Exact projection onto P(sigma) by enumerating every face: an ordered partition
    (B_1, ..., B_m) fixes sum_{B_j} x to the sum of the matching slice of sorted sigma; the
    projection onto that affine set is explicit. The projection onto the polytope is the
    feasible candidate nearest to z (it is the projection onto the affine hull of its face)."""
    n = len(z)
    L = ordered_partitions(n)                              # (P, n)
    onehot = L[:, :, None] == np.arange(n)[None, None, :]  # (P, n, n): element i in block j
    sizes = onehot.sum(axis=1)                             # (P, n)
    zsum = np.einsum("pij,i->pj", onehot, z)
    cs = np.concatenate([[0.0], np.cumsum(np.sort(sigma))])
    ends = np.cumsum(sizes, axis=1)
    ssum = cs[ends] - cs[ends - sizes]
    shift = np.where(sizes > 0, (ssum - zsum) / np.maximum(sizes, 1), 0.0)
    X = z[None, :] + np.take_along_axis(shift, L, axis=1)
    cx = np.cumsum(-np.sort(-X, axis=1), axis=1)
    ct = np.cumsum(np.sort(sigma)[::-1])
    feas = np.all(cx <= ct[None, :] + 1e-11, axis=1) & (np.abs(cx[:, -1] - ct[-1]) <= 1e-11)
    d = np.where(feas, ((X - z) ** 2).sum(axis=1), np.inf)
    return X[int(np.argmin(d))]


def subset_constraints(n):
    """Rows 1_S of all nonempty proper subsets S and their sizes."""
    rows = [[1.0 if i in S else 0.0 for i in range(n)]
            for k in range(1, n) for S in itertools.combinations(range(n), k)]
    return np.array(rows).reshape(-1, n)


def project_nnls(z, sigma):
    """The QP min ||x - z||^2 s.t. sum_S x <= (|S| largest of sigma) for every subset S,
    sum x = sum sigma, solved as a least-distance program by Lawson-Hanson NNLS (exact
    active set): min ||y|| s.t. G y >= h with y = x - z."""
    n = len(z)
    A = subset_constraints(n)
    top = np.concatenate([[0.0], np.cumsum(np.sort(sigma)[::-1])])
    b = top[A.sum(axis=1).astype(int)]
    one = np.ones((1, n))
    G = np.vstack([-A, one, -one])
    h = np.concatenate([-(b - A @ z), [sigma.sum() - z.sum()], [z.sum() - sigma.sum()]])
    E = np.vstack([G.T, h[None, :]])
    f = np.zeros(n + 1)
    f[-1] = 1.0
    u, _ = so.nnls(E, f, maxiter=50 * E.shape[1])
    r = E @ u - f
    assert abs(r[-1]) > 1e-12, "LDP reported infeasible"
    return z - r[:n] / r[-1]


def project_clarabel(z, sigma):
    """min ||P sigma - z||^2 over doubly stochastic P (n^2 variables), by
    Clarabel with tight tolerances; returns P sigma."""
    clarabel = pytest.importorskip("clarabel")
    import scipy.sparse as sp
    n = len(z)
    s = np.sort(sigma)
    # x = M vec(P) with vec row-major: x_i = sum_j P_ij s_j
    M = np.kron(np.eye(n), s[None, :])
    H = sp.csc_matrix(2.0 * M.T @ M)
    q = -2.0 * M.T @ z
    rows = np.kron(np.eye(n), np.ones((1, n)))          # row sums
    cols = np.kron(np.ones((1, n)), np.eye(n))          # column sums
    Aeq = np.vstack([rows, cols])
    A = sp.csc_matrix(np.vstack([Aeq, -np.eye(n * n)]))
    b = np.concatenate([np.ones(2 * n), np.zeros(n * n)])
    st = clarabel.DefaultSettings()
    st.verbose = False
    st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = 1e-13
    st.tol_ktratio = 1e-10
    sol = clarabel.DefaultSolver(H, q, A, b, [clarabel.ZeroConeT(2 * n),
                                              clarabel.NonnegativeConeT(n * n)], st).solve()
    assert str(sol.status) in ("Solved", "AlmostSolved")
    return M @ np.asarray(sol.x)


def random_case(rng, n, ties=False):
    kind = rng.integers(4)
    if kind == 0:
        sigma = np.sort(rng.random(n))
    elif kind == 1:
        sigma = np.zeros(n)
        sigma[-1] = 1.0                                     # the max spectrum
    elif kind == 2:
        sigma = np.sort(rng.integers(0, 3, n).astype(float)) + 1e-3   # ties in sigma
    else:
        sigma = spectrum(["superquantile", "extremile", "esrm"][rng.integers(3)], n)
    sigma = sigma / sigma.sum()
    scale = 10.0 ** rng.uniform(-2, 1)
    z = rng.normal(size=n) * scale
    if ties and n > 1:
        z[rng.integers(n, size=n // 2)] = z[0]
    if rng.random() < 0.3:
        z = z + sigma[rng.permutation(n)]                   # near the polytope
    return z, sigma


# ---------------------------------------------------------------------------------------
# spectra


@pytest.mark.parametrize("kind,p", ALL_CASES)
def test_spectrum_is_a_spectrum(kind, p):
    for n in NS:
        s = spectrum(kind, n, p)
        assert s.dtype == np.float64 and s.shape == (n,)
        assert np.all(s >= 0)
        assert np.all(np.diff(s) >= 0), "not exactly nondecreasing"
        assert abs(math.fsum(s) - 1.0) <= 1e-12
        check_spectrum(s, n, tol=1e-12)


@pytest.mark.parametrize("kind,p", ALL_CASES)
def test_spectrum_matches_table1(kind, p):
    """The closed forms of Table 1, literally (except where the literal CVaR formula hits the
    float edge case, tested separately)."""
    if kind == "esrm" and not 1e-3 < p < 100:
        pytest.skip("the literal ESRM formula overflows (large rho) or cancels (small rho); "
                    "covered by the quadrature and degenerate-case tests")
    for n in [1, 2, 3, 7, 10, 244]:
        if kind == "superquantile" and abs(n * p - round(n * p)) < 1e-9:
            continue
        np.testing.assert_allclose(spectrum(kind, n, p), table1(kind, n, p), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("kind,p", [(k, p) for k, p in ALL_CASES if k in ("extremile", "esrm")])
def test_spectrum_equals_integral_of_profile(kind, p):
    phi = profile(kind, p)
    for n in [1, 3, 10, 57]:
        ref = np.array([si.quad(phi, (i - 1) / n, i / n, epsabs=1e-15, epsrel=1e-13)[0]
                        for i in range(1, n + 1)])
        np.testing.assert_allclose(spectrum(kind, n, p), ref, rtol=0, atol=1e-12)


def test_cvar_profile_integral():
    # sigma_i = integral of (1/alpha) 1[u >= 1 - alpha] over [(i-1)/n, i/n], exactly
    for n in [1, 4, 10, 33]:
        for a in [0.07, 0.35, 0.5, 0.77, 1.0]:
            ref = np.array([max(0.0, i / n - max((i - 1) / n, 1 - a)) / a for i in range(1, n + 1)])
            np.testing.assert_allclose(spectrum("superquantile", n, a), ref, atol=1e-12)


def test_spectrum_degenerate_cases():
    for n in [1, 2, 7, 10, 244]:
        u = np.full(n, 1.0 / n)
        np.testing.assert_array_equal(spectrum("erm", n), u)
        np.testing.assert_array_equal(spectrum("extremile", n, 1.0), u)
        np.testing.assert_allclose(spectrum("superquantile", n, 1.0), u, rtol=0, atol=1e-15)
        np.testing.assert_allclose(spectrum("esrm", n, 1e-8), u, rtol=0, atol=1e-7)
        mx = np.zeros(n)
        mx[-1] = 1.0
        for a in [1.0 / n, 0.5 / n, 1e-12, (1 - 1e-12) / n]:
            np.testing.assert_array_equal(spectrum("superquantile", n, a), mx)
        np.testing.assert_allclose(spectrum("esrm", n, 1e4), mx, rtol=0, atol=1e-15)
    # n alpha = k an integer: exactly k entries equal to 1/k
    for n, a, k in [(20, 0.25, 5), (8, 0.5, 4), (100, 0.03, 3), (3, 2 / 3, 2), (7, 3 / 7, 3)]:
        s = spectrum("superquantile", n, a)
        assert np.count_nonzero(s) == k
        np.testing.assert_array_equal(s[-k:], np.full(k, 1.0 / k))


def test_cvar_float_edge_case():
    # 10 * (1 - 0.9) = 0.9999999999999998: the unguarded formula returns the uniform spectrum
    assert math.floor(10 * (1 - 0.9)) == 0
    s = spectrum("superquantile", 10, 0.9)
    assert s[0] == 0.0
    np.testing.assert_array_equal(s[1:], np.full(9, 1 / 9))
    for n, a in [(10, 0.3), (10, 0.7), (100, 0.29), (1000, 0.001), (49, 1 / 7), (3, 1 / 3)]:
        k = round(n * a)
        s = spectrum("cvar", n, a)
        assert np.count_nonzero(s) == k, (n, a)
        np.testing.assert_array_equal(s[n - k:], np.full(k, 1.0 / k))


def test_cvar_fractional_mass():
    s = spectrum("superquantile", 10, 0.35)          # n alpha = 3.5
    np.testing.assert_allclose(s[7:], 1 / 3.5, rtol=1e-15)
    assert s[6] == pytest.approx(0.5 / 3.5, rel=1e-14)
    assert np.all(s[:6] == 0)
    assert s[6] < s[7]


def test_spectrum_defaults_and_max_weight():
    n = 200000
    assert spectrum("superquantile", 10).tolist() == spectrum("superquantile", 10, 0.5).tolist()
    assert spectrum("extremile", 10).tolist() == spectrum("extremile", 10, 2.5).tolist()
    assert spectrum("esrm", 10).tolist() == spectrum("esrm", 10, 2.0).tolist()
    assert spectrum("CVaR", 10).tolist() == spectrum("superquantile", 10).tolist()
    assert n * spectrum("superquantile", n)[-1] == pytest.approx(2.0, rel=1e-12)
    assert n * spectrum("esrm", n)[-1] == pytest.approx(2 / (1 - math.exp(-2)), rel=1e-4)
    assert n * spectrum("extremile", n)[-1] == pytest.approx(2.5, rel=1e-4)


def test_spectrum_extreme_params_finite():
    for kind, p in [("esrm", 1e3), ("esrm", 1e-300), ("extremile", 1e4), ("superquantile", 1e-300)]:
        s = spectrum(kind, 1000, p)
        assert np.all(np.isfinite(s)) and np.all(np.diff(s) >= 0)
        assert abs(math.fsum(s) - 1) < 1e-12


@pytest.mark.parametrize("args,exc,match", [
    (("median", 5), ValueError, "kind"),
    ((3, 5), TypeError, "kind"),
    (("erm", 0), ValueError, "n must be >= 1"),
    (("erm", 2.0), TypeError, "n must be an integer"),
    (("erm", True), TypeError, "n must be an integer"),
    (("erm", 5, 0.5), ValueError, "erm spectrum takes no param"),
    (("superquantile", 5, 0.0), ValueError, "alpha"),
    (("superquantile", 5, 1.5), ValueError, "alpha"),
    (("superquantile", 5, -0.1), ValueError, "alpha"),
    (("extremile", 5, 0.5), ValueError, "r"),
    (("esrm", 5, 0.0), ValueError, "rho"),
    (("esrm", 5, float("nan")), ValueError, "rho"),
    (("esrm", 5, float("inf")), ValueError, "rho"),
    (("esrm", 5, "2"), TypeError, "rho"),
])
def test_spectrum_bad_input(args, exc, match):
    with pytest.raises(exc, match=match):
        spectrum(*args)


def test_check_spectrum():
    s = spectrum("esrm", 6)
    out = check_spectrum(list(s), 6)
    assert out.dtype == np.float64 and np.array_equal(out, s)
    check_spectrum(np.array([0.1, 0.2, 0.3, 0.4]) + np.array([0, 1e-17, -1e-17, 0]), 4)
    bad = [
        ([0.5, 0.5], 3, ValueError, r"sigma has length 2 but n = 3"),
        ([0.5, 0.3, 0.2], 3, ValueError, r"sigma must be nondecreasing.*sigma\[0\]"),
        ([0.2, 0.3, 0.4], 3, ValueError, r"sigma must sum to 1"),
        ([-0.1, 0.5, 0.6], 3, ValueError, r"sigma must be nonnegative: sigma\[0\]"),
        ([0.2, np.nan, 0.8], 3, ValueError, r"sigma contains NaN"),
        ([[0.5, 0.5]], 2, ValueError, r"sigma must be 1-dimensional"),
        (["a", "b"], 2, TypeError, r"sigma must be an array of real numbers"),
        ([0.5, 0.5], 0, ValueError, r"n must be >= 1"),
    ]
    for sig, n, exc, match in bad:
        with pytest.raises(exc, match=match):
            check_spectrum(sig, n)
    with pytest.raises(ValueError, match="sum to 1"):
        check_spectrum([0.25, 0.25, 0.5 + 1e-6], 3)
    check_spectrum([0.25, 0.25, 0.5 + 1e-6], 3, tol=1e-5)


# ---------------------------------------------------------------------------------------
# spectral risk


def test_spectral_risk_against_sort_and_permutations():
    rng = np.random.default_rng(1)
    for n in range(1, 8):
        for kind, p in [("erm", None), ("superquantile", 0.4), ("extremile", 2.5), ("esrm", 2.0)]:
            s = spectrum(kind, n, p)
            l = rng.normal(size=n)
            if n > 2:
                l[1] = l[2]                                     # a tie
            direct = float(np.sum(s * np.sort(l)))
            assert spectral_risk(l, s) == pytest.approx(direct, abs=1e-15)
            brute = max(float(np.dot(s[list(pi)], l)) for pi in itertools.permutations(range(n)))
            assert spectral_risk(l, s) == pytest.approx(brute, abs=1e-12)
    l = rng.normal(size=100000)
    s = spectrum("extremile", l.size)
    assert spectral_risk(l, s) == pytest.approx(math.fsum(s * np.sort(l)), abs=1e-12)


def test_spectral_risk_identities():
    rng = np.random.default_rng(2)
    for n in [1, 2, 5, 13, 40]:
        l = np.round(rng.normal(size=n), 1)                    # ties
        for kind, p in ALL_CASES:
            s = spectrum(kind, n, p)
            delta = np.diff(np.concatenate([[0.0], s]))
            top = np.cumsum(np.sort(l)[::-1])                  # top[m-1] = sum of m largest
            ref = sum(delta[k] * top[n - k - 1] for k in range(n))
            assert spectral_risk(l, s) == pytest.approx(ref, abs=1e-12)
        for a in [0.05, 0.3, 0.5, 0.9, 1.0]:
            ru = min(t + np.maximum(l - t, 0).sum() / (n * a) for t in l)
            assert spectral_risk(l, spectrum("superquantile", n, a)) == pytest.approx(ru, abs=1e-12)
        pm = np.maximum(l[:, None], l[None, :]).sum() / n ** 2
        assert spectral_risk(l, spectrum("extremile", n, 2.0)) == pytest.approx(pm, abs=1e-12)
        for k in range(1, n + 1):
            assert spectral_risk(l, spectrum("cvar", n, k / n)) == pytest.approx(
                np.sort(l)[-k:].mean(), abs=1e-12)
        mx = np.zeros(n)
        mx[-1] = 1
        assert spectral_risk(l, mx) == l.max()


def test_spectral_risk_bad_input():
    s = spectrum("erm", 3)
    with pytest.raises(ValueError, match="losses contains NaN"):
        spectral_risk([1.0, np.nan, 2.0], s)
    with pytest.raises(ValueError, match="sigma has length 3 but n = 2"):
        spectral_risk([1.0, 2.0], s)
    with pytest.raises(ValueError, match="losses must be 1-dimensional"):
        spectral_risk(np.ones((3, 1)), s)
    with pytest.raises(ValueError, match="sigma must be nondecreasing"):
        spectral_risk([1.0, 2.0, 3.0], s[::-1] + [0.1, 0, -0.1])
    with pytest.raises(ValueError, match="losses must be non-empty"):
        spectral_risk([], [])


# ---------------------------------------------------------------------------------------
# pool adjacent violators and the sort


def test_pava_matches_sklearn():
    isotonic_regression = pytest.importorskip("sklearn.isotonic").isotonic_regression
    rng = np.random.default_rng(3)
    for n in [0, 1, 2, 3, 10, 100, 5000]:
        for _ in range(5):
            u = rng.normal(size=n)
            if n > 4:
                u[rng.integers(n, size=n // 3)] = 0.5                # ties
                u[n // 4: n // 2] = -1.0                               # a constant run
            v = isotonic.pava(u)
            assert v.shape == (n,)
            if n:
                np.testing.assert_allclose(v, isotonic_regression(u, increasing=True), atol=1e-12)
                assert np.all(np.diff(v) >= 0)
                assert math.fsum(v) == pytest.approx(math.fsum(u), abs=1e-12 * n)
    np.testing.assert_array_equal(isotonic.pava(np.arange(5.0)), np.arange(5.0))
    np.testing.assert_array_equal(isotonic.pava([3.0, 1.0]), [2.0, 2.0])


def test_argsort_stable():
    rng = np.random.default_rng(4)
    for n in [0, 1, 2, 25, 26, 1000, 70000]:
        key = rng.integers(0, max(1, n // 10), n).astype(np.float64)
        np.testing.assert_array_equal(isotonic.argsort(key), np.argsort(key, kind="stable"))
        k32 = rng.normal(size=n).astype(np.float32)
        np.testing.assert_array_equal(isotonic.argsort(k32), np.argsort(k32, kind="stable"))
        p = rng.permutation(n)                                      # warm start order
        np.testing.assert_array_equal(isotonic.argsort(key, p), p[np.argsort(key[p], kind="stable")])
    key = np.sort(rng.normal(size=1000))
    np.testing.assert_array_equal(isotonic.argsort(key, np.arange(1000)), np.arange(1000))


# ---------------------------------------------------------------------------------------
# projection onto the permutahedron


def test_projection_equals_brute_force_over_faces():
    rng = np.random.default_rng(5)
    for n in range(1, 8):
        for t in range(40 if n <= 6 else 8):
            z, sigma = random_case(rng, n, ties=t % 3 == 0)
            x = project_permutahedron(z, sigma)
            np.testing.assert_allclose(x, project_brute_faces(z, sigma), rtol=0, atol=1e-8)


def test_projection_variational_inequality_over_all_vertices():
    rng = np.random.default_rng(6)
    for n in range(1, 8):
        for t in range(30):
            z, sigma = random_case(rng, n, ties=t % 2 == 0)
            x = project_permutahedron(z, sigma)
            assert sorted_partial_sums_ok(x, sigma, 1e-12)
            V = sigma[np.array(list(itertools.permutations(range(n))))]     # all n! vertices
            gap = ((z - x)[None, :] * (V - x[None, :])).sum(axis=1).max()
            assert gap <= 1e-10 * max(1.0, np.abs(z).max())


def test_projection_equals_qp_nnls():
    rng = np.random.default_rng(7)
    for n in range(1, 8):
        for t in range(25):
            z, sigma = random_case(rng, n, ties=t % 3 == 1)
            np.testing.assert_allclose(project_permutahedron(z, sigma), project_nnls(z, sigma),
                                       rtol=0, atol=1e-8)


def test_projection_equals_qp_clarabel_doubly_stochastic():
    rng = np.random.default_rng(8)
    for n in range(1, 7):
        for t in range(6):
            z, sigma = random_case(rng, n, ties=t % 2 == 0)
            np.testing.assert_allclose(project_permutahedron(z, sigma), project_clarabel(z, sigma),
                                       rtol=0, atol=1e-8)


def test_projection_invariances():
    rng = np.random.default_rng(9)
    for n in [1, 2, 5, 7, 50, 1000]:
        for t in range(10):
            z, sigma = random_case(rng, n, ties=t % 2 == 1)
            x = project_permutahedron(z, sigma)
            assert sorted_partial_sums_ok(x, sigma, 1e-12)
            assert np.all(x >= sigma[0] - 1e-12) and np.all(x <= sigma[-1] + 1e-12)
            # shift invariance
            np.testing.assert_allclose(project_permutahedron(z + 3.7, sigma), x, atol=1e-12)
            # permutation equivariance; sigma's order does not matter
            p = rng.permutation(n)
            np.testing.assert_allclose(project_permutahedron(z[p], sigma), x[p], atol=1e-14)
            np.testing.assert_array_equal(project_permutahedron(z, sigma[rng.permutation(n)]), x)
            # idempotence, on the output and on a random point of the polytope
            np.testing.assert_allclose(project_permutahedron(x, sigma), x, atol=1e-12)
            w = rng.dirichlet(np.ones(5))
            y = sum(wk * sigma[rng.permutation(n)] for wk in w)
            np.testing.assert_allclose(project_permutahedron(y, sigma), y, atol=1e-12)
            # order preservation
            o = np.argsort(z, kind="stable")
            assert np.all(np.diff(x[o]) >= -1e-12)
            # uniform sigma gives 1/n; far along t z, the vertex sigma[rank(z)]
            np.testing.assert_allclose(project_permutahedron(z, np.full(n, 1.0 / n)), 1.0 / n,
                                       atol=1e-15)
            zd = rng.permutation(n).astype(float)                        # distinct
            vert = np.empty(n)
            vert[np.argsort(zd)] = sigma
            np.testing.assert_allclose(project_permutahedron(10.0 * zd, sigma), vert, atol=1e-12)


def test_projection_large_random():
    isotonic_regression = pytest.importorskip("sklearn.isotonic").isotonic_regression
    rng = np.random.default_rng(10)
    for n in [10, 1000, 30000, 100000]:
        sigma = spectrum(["superquantile", "extremile", "esrm"][n % 3], n)
        for z in [rng.normal(size=n) / n, rng.normal(size=n),
                  np.round(rng.normal(size=n), 2) / n]:                      # many ties
            x = project_permutahedron(z, sigma)
            assert x.dtype == np.float64 and x.shape == (n,)
            assert sorted_partial_sums_ok(x, sigma, 1e-10)
            o = np.argsort(z, kind="stable")
            ref = np.empty(n)
            ref[o] = z[o] - isotonic_regression(z[o] - sigma, increasing=True)
            np.testing.assert_allclose(x, ref, rtol=0, atol=1e-12)


def test_projection_float32():
    rng = np.random.default_rng(11)
    z = rng.normal(size=300)
    sigma = spectrum("esrm", 300)
    x64 = project_permutahedron(z, sigma)
    x32 = project_permutahedron(z.astype(np.float32), sigma.astype(np.float32))
    assert x32.dtype == np.float32
    np.testing.assert_allclose(x32, x64, atol=1e-6)
    assert project_permutahedron(z.astype(np.float32), sigma).dtype == np.float64
    assert project_permutahedron(list(z), list(sigma)).dtype == np.float64


@pytest.mark.parametrize("v,sigma,exc,match", [
    ([1.0, 2.0], [0.5, 0.2, 0.3], ValueError, "sigma has length 3 but v has length 2"),
    ([1.0, np.nan], [0.5, 0.5], ValueError, "v contains NaN"),
    ([1.0, 2.0], [np.inf, 0.5], ValueError, "sigma contains NaN or infinity"),
    (np.ones((2, 2)), [0.5, 0.5], ValueError, "v must be 1-dimensional"),
    ([1.0, 2.0], np.ones((1, 2), dtype=np.float32), ValueError, "sigma must be 1-dimensional"),
    ([], [], ValueError, "v must be non-empty"),
    (["a"], [1.0], TypeError, "v must be an array of real numbers"),
    ([1.0 + 1j], [1.0], TypeError, "v must be"),
])
def test_projection_bad_input(v, sigma, exc, match):
    with pytest.raises(exc, match=match):
        project_permutahedron(v, sigma)
