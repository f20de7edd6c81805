"""Mixup augmentation (Obi, Saito, Sasaki & Kato, 2025, eq. 1) and kernel columns of the
augmented set (docs/mixup.md).

Every reference here is plain NumPy on materialised rows: RBF through explicit differences
``||x_p - x_q||^2`` (never through the inner-product identity the code uses), poly and linear
through ``X_aug @ X_aug.T``.
"""
from collections import OrderedDict

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

import dualsolve
from dualsolve._core import kernels as K
from dualsolve.mixup import MixupPlan, mixup_augment

KERNELS = {
    "linear": K.make_kernel("linear"),
    "rbf": K.make_kernel("rbf", gamma=0.5),
    "poly": K.make_kernel("poly", gamma=0.3, coef0=1.0, degree=3),
}


def synthetic(n_o=60, d=5, seed=0):
    """A small problem: n_o = 60, d = 5, dense rows, two classes."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_o, d))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n_o) > 0, 1.0, -1.0)
    return sp.csr_matrix(X), y


def reference_kernel(A, B, kern):
    """Kernel between the rows of dense A and B in plain NumPy."""
    if kern.kernel == "rbf":
        d2 = np.array([((a - B) ** 2).sum(1) for a in A])     # row by row: bounded memory
        return np.exp(-kern.gamma * d2)
    lin = A @ B.T
    if kern.kernel == "poly":
        return (kern.gamma * lin + kern.coef0) ** kern.degree
    return lin


@pytest.fixture(scope="module")
def heart_mix():
    X, y = dualsolve.datasets.load("heart_scale")
    X_aug, y_aug, plan = mixup_augment(X, y, 130, seed=3)
    return X, y, X_aug, y_aug, plan


@pytest.fixture(scope="module")
def spam_mix():
    """A class-balanced spambase subset: sparse rows (most features mostly zero)."""
    X, y = dualsolve.datasets.load("spambase")
    sel = np.random.default_rng(0).choice(X.shape[0], 250, replace=False)
    X = sp.csr_matrix(X[sel] / np.abs(X[sel]).max(0).toarray().clip(1e-12))
    y = y[sel]
    X_aug, y_aug, plan = mixup_augment(X, y, 120, seed=4)
    return X, y, X_aug, y_aug, plan


# ---------------------------------------------------------------------------------------
# the generator


def test_generator_shape_originals_first_and_mixed_rows(heart_mix):
    X, y, X_aug, y_aug, plan = heart_mix
    n_o, m = X.shape[0], 130
    assert X_aug.shape == (n_o + m, X.shape[1]) and y_aug.shape == (n_o + m,)
    assert isinstance(plan, MixupPlan) and plan.n_orig == n_o and plan.n == n_o + m
    assert plan.a.dtype == np.int64 and plan.b.dtype == np.int64 and plan.r.dtype == np.float64
    assert X_aug.dtype == np.float64 and X_aug.has_sorted_indices
    Xd, Xa = X.toarray(), X_aug.toarray()
    np.testing.assert_array_equal(Xa[:n_o], Xd)
    np.testing.assert_array_equal(y_aug[:n_o], y)
    r = plan.r[:, None]
    np.testing.assert_allclose(Xa[n_o:], (1 - r) * Xd[plan.a] + r * Xd[plan.b], rtol=0, atol=1e-15)
    # no duplicate entries in any row
    X_aug2 = X_aug.copy()
    X_aug2.sum_duplicates()
    assert X_aug2.nnz == X_aug.nnz


def test_generator_labels(heart_mix):
    X, y, X_aug, y_aug, plan = heart_mix
    n_o = X.shape[0]
    ya, yb, r = y[plan.a], y[plan.b], plan.r
    ym = y_aug[n_o:]
    same = ya == yb
    assert same.any() and (~same).any()
    # same-class pairs: exactly the class, not a rounded combination
    assert np.array_equal(ym[same], ya[same])
    # other pairs: strictly inside (-1, 1) (no ratio of this draw is within 1e-12 of 0 or 1)
    assert np.minimum(r[~same], 1 - r[~same]).min() > 1e-9
    assert np.abs(ym[~same]).max() < 1.0
    # y_aug = M y_o (before snapping)
    np.testing.assert_allclose(y_aug, plan.matrix() @ y, rtol=0, atol=1e-15)


def test_generator_snaps_labels_near_one():
    X, y = synthetic()
    # a tiny alpha puts many ratios within 1e-12 of 0 or 1 (many exactly, in double)
    X_aug, y_aug, plan = mixup_augment(X, y, 2000, mixup_alpha=0.02, seed=7)
    n_o = X.shape[0]
    ya, yb, r = y[plan.a], y[plan.b], plan.r
    raw = (1 - r) * ya + r * yb
    ym = y_aug[n_o:]
    near = np.abs(raw) >= 1 - 1e-12
    assert (near & (ya != yb)).sum() > 10
    assert np.array_equal(ym[near], np.sign(raw[near]))
    assert np.array_equal(ym[~near], raw[~near])
    assert set(np.unique(ym[np.abs(ym) == 1])) <= {-1.0, 1.0}


def test_ratio_distribution_and_pairs():
    X, y = dualsolve.datasets.load("heart_scale")
    _, _, plan = mixup_augment(X, y, 100_000, seed=11, materialize=False)
    assert abs(plan.r.mean() - 0.5) < 0.01
    assert stats.kstest(plan.r, "uniform").pvalue > 1e-4          # Beta(1, 1)
    # pairs: independent and uniform over the originals
    counts = np.bincount(plan.a, minlength=X.shape[0])
    assert stats.chisquare(counts).pvalue > 1e-4
    assert abs(np.corrcoef(plan.a, plan.b)[0, 1]) < 0.02
    for alpha in (0.2, 4.0):
        _, _, p = mixup_augment(X, y, 100_000, mixup_alpha=alpha, seed=12, materialize=False)
        assert abs(p.r.mean() - 0.5) < 0.01
        assert p.r.var() == pytest.approx(1 / (4 * (2 * alpha + 1)), rel=0.03)
        assert stats.kstest(p.r, stats.beta(alpha, alpha).cdf).pvalue > 1e-4


def test_generator_is_deterministic(heart_mix):
    X, y, X_aug, y_aug, plan = heart_mix
    X2, y2, plan2 = mixup_augment(X, y, 130, seed=3)
    assert (X2 != X_aug).nnz == 0
    np.testing.assert_array_equal(y2, y_aug)
    for u, v in zip(plan[:3], plan2[:3]):
        np.testing.assert_array_equal(u, v)
    _, _, plan3 = mixup_augment(X, y, 130, seed=4)
    assert not np.array_equal(plan3.r, plan.r)
    X4, y4, plan4 = mixup_augment(X, y, 130, seed=3, materialize=False)
    assert X4 is None
    np.testing.assert_array_equal(y4, y_aug)
    np.testing.assert_array_equal(plan4.a, plan.a)


def test_generator_inputs():
    X, y = synthetic()
    y01 = (y > 0).astype(int)
    ref = mixup_augment(X, y, 50, seed=1)
    # {0, 1} and any two values map to -1 / +1 (the larger is +1)
    for labels in (y01, np.where(y > 0, 7, 3), np.where(y > 0, "b", "a")):
        out = mixup_augment(X, labels, 50, seed=1)
        np.testing.assert_array_equal(out[1], ref[1])
    # float32 data and int64 indices: the same arithmetic on the float32 values
    X32 = X.astype(np.float32)
    X32.indices = X32.indices.astype(np.int64)
    X32.indptr = X32.indptr.astype(np.int64)
    out32 = mixup_augment(X32, y, 50, seed=1)
    out64 = mixup_augment(X32.astype(np.float64), y, 50, seed=1)
    assert out32[0].dtype == np.float64
    np.testing.assert_array_equal(out32[0].toarray(), out64[0].toarray())
    # dense input, n_mix = 0
    Xd, yd, pd = mixup_augment(X.toarray(), y, 0)
    np.testing.assert_array_equal(Xd.toarray(), X.toarray())
    assert pd.n_mix == 0 and pd.matrix().shape == (60, 60)


@pytest.mark.parametrize("kw, exc, word", [
    (dict(n_mix=-1), ValueError, "n_mix"),
    (dict(n_mix=2.5), TypeError, "n_mix"),
    (dict(n_mix=5, mixup_alpha=0.0), ValueError, "mixup_alpha"),
    (dict(n_mix=5, mixup_alpha=-1.0), ValueError, "mixup_alpha"),
    (dict(n_mix=5, mixup_alpha=np.nan), ValueError, "mixup_alpha"),
    (dict(n_mix=5, seed=-3), ValueError, "seed"),
    (dict(n_mix=5, materialize="yes"), TypeError, "materialize"),
])
def test_generator_rejects_bad_arguments(kw, exc, word):
    X, y = synthetic()
    with pytest.raises(exc, match=word):
        mixup_augment(X, y, **kw)


def test_generator_rejects_bad_labels():
    X, y = synthetic()
    with pytest.raises(ValueError, match="one class only"):
        mixup_augment(X, np.ones(60), 5)
    with pytest.raises(ValueError, match="labels but X has"):
        mixup_augment(X, y[:-1], 5)
    with pytest.raises(ValueError, match="X contains NaN"):
        Xn = X.copy()
        Xn.data[3] = np.nan
        mixup_augment(Xn, y, 5)


def test_mixing_matrix_degenerate_pairs():
    """a == b and r in {0, 1}: one summed entry of weight 1 per row."""
    plan = MixupPlan(np.array([2, 3, 1, 0]), np.array([2, 4, 1, 4]),
                     np.array([0.3, 0.0, 1.0, 0.25]), 5)
    M = plan.matrix()
    assert M.shape == (9, 5) and M.has_sorted_indices
    np.testing.assert_array_equal(np.diff(M.indptr), [1] * 8 + [2])
    rows = M.toarray()
    np.testing.assert_allclose(rows[5], [0, 0, 1, 0, 0], atol=1e-16)
    np.testing.assert_array_equal(rows[6], [0, 0, 0, 1, 0])
    np.testing.assert_array_equal(rows[7], [0, 1, 0, 0, 0])
    np.testing.assert_array_equal(rows[8], [0.75, 0, 0, 0, 0.25])
    np.testing.assert_array_equal(rows[:5], np.eye(5))


# ---------------------------------------------------------------------------------------
# mixed-kernel identities


@pytest.mark.parametrize("data", ["synthetic", "heart"])
def test_mixed_kernel_identities(data, heart_mix):
    if data == "synthetic":
        X, y = synthetic()
        X_aug, _, plan = mixup_augment(X, y, 100, seed=0)
    else:
        X, _, X_aug, _, plan = heart_mix
    Xo, Xa, M = X.toarray(), X_aug.toarray(), plan.matrix()
    G = Xo @ Xo.T
    Gt = M @ (M @ G).T                  # M G M^T (G symmetric)
    ref = Xa @ Xa.T
    np.testing.assert_allclose(Gt, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    # RBF from the M G M^T distances equals RBF on the materialised points
    g = 0.5
    d2 = np.maximum(np.diag(Gt)[:, None] + np.diag(Gt)[None, :] - 2 * Gt, 0.0)
    direct = ((Xa[:, None, :] - Xa[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(np.exp(-g * d2), np.exp(-g * direct), rtol=0, atol=1e-12)
    # three-term identity for every mixed point against every augmented point x'
    n_o = X.shape[0]
    xa, xb, r = Xo[plan.a], Xo[plan.b], plan.r[:, None]
    lhs = ((Xa[n_o:, None, :] - Xa[None, :, :]) ** 2).sum(-1)
    da = ((xa[:, None, :] - Xa[None, :, :]) ** 2).sum(-1)
    db = ((xb[:, None, :] - Xa[None, :, :]) ** 2).sum(-1)
    dab = ((xa - xb) ** 2).sum(-1)[:, None]
    rhs = (1 - r) * da + r * db - r * (1 - r) * dab
    np.testing.assert_allclose(lhs, rhs, rtol=0, atol=1e-12 * direct.max())
    # the norm identity used without materialised rows
    np.testing.assert_allclose(K.augmented_sqnorms(X, plan), (Xa ** 2).sum(1), rtol=1e-13,
                               atol=1e-14)


# ---------------------------------------------------------------------------------------
# column sources


def make_source(kind, X, plan, kern, Xa):
    if kind == "dense64":
        return K.DenseGram(X, plan, kern)
    if kind == "dense32":
        return K.DenseGram(X, plan, kern, np.float32)
    if kind == "cached":
        return K.CachedColumns(X, plan, kern, cache_size=0.05)
    ref = reference_kernel(Xa, Xa, kern)
    ref = (ref + ref.T) / 2
    return K.PrecomputedGram(ref.astype(np.float32) if kind == "pre32" else ref)


@pytest.mark.parametrize("kind", ["dense64", "dense32", "cached", "pre64", "pre32"])
@pytest.mark.parametrize("kname", ["linear", "rbf", "poly"])
@pytest.mark.parametrize("data", ["heart", "spam"])
def test_column_source_matches_numpy(kind, kname, data, heart_mix, spam_mix):
    X, _, X_aug, _, plan = heart_mix if data == "heart" else spam_mix
    kern = KERNELS[kname]
    if data == "spam" and kname == "rbf":
        kern = K.make_kernel("rbf", gamma=2.0)
    Xa = X_aug.toarray()
    ref = reference_kernel(Xa, Xa, kern)
    src = make_source(kind, X, plan, kern, Xa)
    n = Xa.shape[0]
    assert src.n == n
    scale = np.abs(ref).max()
    tol = 1e-6 if kind.endswith("32") else 1e-12
    for i in np.random.default_rng(1).permutation(n):
        np.testing.assert_allclose(src.column_py(i), ref[:, i], rtol=0, atol=tol * scale)
    np.testing.assert_allclose(src.diagonal, np.diag(ref), rtol=0, atol=tol * scale)
    if kname == "rbf" and not kind.endswith("32"):
        assert np.array_equal(src.diagonal, np.ones(n))
    v = np.random.default_rng(2).normal(size=n)
    v[::3] = 0.0                                    # zeros are skipped
    kv = ref @ v
    np.testing.assert_allclose(src.matvec_py(v), kv, rtol=0, atol=tol * 10 * np.abs(kv).max())
    np.testing.assert_array_equal(src.matvec_py(np.zeros(n)), np.zeros(n))
    # column i and the diagonal agree exactly (the solver uses both)
    for i in (0, n - 1):
        assert src.column_py(i)[i] == src.diagonal[i]


def test_column_sources_cover_both_column_paths(spam_mix, heart_mix):
    """CachedColumns stores well-filled features densely and the rest as CSC: spambase
    has both kinds, heart_scale mostly dense ones; the sparse-product Gram path of
    DenseGram is used for wide sparse rows."""
    X, _, _, _, plan = spam_mix
    fill = np.diff(sp.csc_matrix(X).indptr) / X.shape[0]
    assert (fill >= 1 / 3).any() and (fill < 1 / 3).any()
    rng = np.random.default_rng(5)
    Xw = sp.random(150, 5000, density=0.01, format="csr", random_state=6)
    Xw.data = rng.normal(size=Xw.nnz)
    yw = np.where(rng.random(150) < 0.5, 1.0, -1.0)
    Xaw, _, pw = mixup_augment(Xw, yw, 80, seed=2)
    assert not K._use_dense(Xaw)
    Xd = Xaw.toarray()
    for kern in KERNELS.values():
        ref = reference_kernel(Xd, Xd, kern)
        D = K.DenseGram(Xw, pw, kern)
        C = K.CachedColumns(Xw, pw, kern)
        np.testing.assert_allclose(D.matrix, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
        for i in rng.choice(230, 40):
            np.testing.assert_allclose(C.column_py(i), ref[:, i], rtol=0, atol=1e-12 * np.abs(ref).max())


def test_no_plan_and_degenerate_plan():
    """plan=None is the originals alone; a == b, r in {0, 1} and an all-zero row work."""
    X, y = synthetic(n_o=30)
    X = X.tolil()
    X[4, :] = 0
    X = X.tocsr()
    X.eliminate_zeros()
    plan = MixupPlan(np.array([2, 3, 1, 4, 4]), np.array([2, 5, 1, 7, 4]),
                     np.array([0.3, 0.0, 1.0, 0.6, 0.5]), 30)
    Xa = (plan.matrix() @ X).toarray()
    for kern in KERNELS.values():
        ref = reference_kernel(Xa, Xa, kern)
        for src in (K.DenseGram(X, plan, kern), K.CachedColumns(X, plan, kern)):
            for i in range(35):
                np.testing.assert_allclose(src.column_py(i), ref[:, i], rtol=0, atol=1e-13 * np.abs(ref).max())
        ref0 = ref[:30, :30]
        for src in (K.DenseGram(X, None, kern), K.CachedColumns(X, None, kern)):
            assert src.n == 30
            np.testing.assert_allclose(src.column_py(4), ref0[:, 4], rtol=0, atol=1e-13)
            np.testing.assert_allclose(src.diagonal, np.diag(ref0), rtol=0, atol=1e-13 * np.abs(ref).max())


@pytest.mark.parametrize("kname", ["linear", "rbf", "poly"])
def test_single_point(kname):
    """n = 1: every source, with and without a mixed point."""
    kern = KERNELS[kname]
    X = sp.csr_matrix(np.array([[0.5, -1.0, 2.0]]))
    k11 = reference_kernel(X.toarray(), X.toarray(), kern)
    for src in (K.DenseGram(X, None, kern), K.DenseGram(X, None, kern, np.float32),
                K.CachedColumns(X, None, kern), K.PrecomputedGram(k11),
                K.PrecomputedGram(k11.astype(np.float32))):
        assert src.n == 1
        np.testing.assert_allclose(src.column_py(0), k11[0], rtol=1e-7)
        np.testing.assert_allclose(src.diagonal, k11[0], rtol=1e-7)
        np.testing.assert_allclose(src.matvec_py([2.0]), 2 * k11[0], rtol=1e-7)
    plan = MixupPlan(np.array([0]), np.array([0]), np.array([0.4]), 1)
    for src in (K.DenseGram(X, plan, kern), K.CachedColumns(X, plan, kern)):
        np.testing.assert_allclose(src.column_py(1), np.full(2, k11[0, 0]), rtol=1e-14)


def test_lru_cache_evicts_and_stays_correct(heart_mix):
    X, _, X_aug, _, plan = heart_mix
    kern = KERNELS["rbf"]
    Xa = X_aug.toarray()
    ref = reference_kernel(Xa, Xa, kern)
    n = Xa.shape[0]
    capacity = 7
    C = K.CachedColumns(X, plan, kern, cache_size=capacity * 8 * n / 2 ** 20)
    assert C.capacity == capacity
    rng = np.random.default_rng(8)
    pool = rng.choice(n, 15, replace=False)         # few distinct columns: hits and misses
    seq = np.concatenate([rng.choice(pool, 400), rng.permutation(n)])
    lru, hits, misses, evictions = OrderedDict(), 0, 0, 0
    for i in seq:
        np.testing.assert_allclose(C.column_py(i), ref[:, i], rtol=0, atol=1e-12)
        if i in lru:
            hits += 1
            lru.move_to_end(i)
        else:
            misses += 1
            if len(lru) == capacity:
                lru.popitem(last=False)
                evictions += 1
            lru[i] = True
    assert (C.hits, C.misses, C.evictions) == (hits, misses, evictions)
    assert hits > 100 and evictions > 300
    assert C.cached_columns() == list(reversed(lru))
    # matvec reads cached columns but does not insert: the working set survives a gap check
    before = C.cached_columns()
    v = rng.normal(size=n)
    np.testing.assert_allclose(C.matvec_py(v), ref @ v, rtol=0, atol=1e-11 * np.abs(ref @ v).max())
    assert C.cached_columns() == before and C.misses == misses
    # the smallest budget still holds two columns
    C2 = K.CachedColumns(X, plan, kern, cache_size=1e-9)
    assert C2.capacity == 2
    for i in rng.choice(n, 50):
        np.testing.assert_allclose(C2.column_py(i), ref[:, i], rtol=0, atol=1e-12)
    C.clear_cache()
    assert C.cached_columns() == [] and C.hits == 0
    np.testing.assert_allclose(C.column_py(5), ref[:, 5], rtol=0, atol=1e-12)


def test_cached_columns_real_data_subset():
    """magic04 (dense features, some zeros): columns from the plan equal DenseGram's."""
    X, y = dualsolve.datasets.load("magic04")
    sel = np.random.default_rng(2).choice(X.shape[0], 600, replace=False)
    X, y = X[sel], y[sel]
    kern = K.make_kernel("rbf", gamma="scale", X=X)
    _, _, plan = mixup_augment(X, y, 300, seed=5, materialize=False)
    D = K.DenseGram(X, plan, kern)
    C = K.CachedColumns(X, plan, kern, cache_size=0.1)
    for i in np.random.default_rng(3).choice(900, 200):
        np.testing.assert_allclose(C.column_py(i), D.column_py(i), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(C.diagonal, D.diagonal)
    np.testing.assert_allclose(C.sqnorms, D.sqnorms, rtol=1e-13)


# ---------------------------------------------------------------------------------------
# factory and precomputed validation


def test_factory_picks_the_source(heart_mix):
    X, _, X_aug, _, plan = heart_mix
    kern = KERNELS["rbf"]
    n = X_aug.shape[0]
    src = K.make_column_source(X, plan, kern)
    assert type(src) is K.DenseGram and src.matrix.dtype == np.float64
    src = K.make_column_source(X, plan, kern, gram_dtype=np.float32)
    assert src.matrix.dtype == np.float32
    mb = n * n * 8 / 2 ** 20
    assert type(K.make_column_source(X, plan, kern, max_gram_mb=mb)) is K.DenseGram
    src = K.make_column_source(X, plan, kern, max_gram_mb=mb * 0.99, cache_size=0.1)
    assert type(src) is K.CachedColumns and src.capacity == int(0.1 * 2 ** 20 // (8 * n))
    assert type(K.make_column_source(X, plan, kern, gram_dtype=np.float32, max_gram_mb=mb * 0.6)) is K.DenseGram
    assert src.kernel == kern
    Kp = reference_kernel(X_aug.toarray(), X_aug.toarray(), kern)
    src = K.make_column_source(X, plan, K.make_kernel("precomputed"), precomputed=Kp)
    assert type(src) is K.PrecomputedGram and np.shares_memory(src.matrix, Kp)
    with pytest.raises(ValueError, match="precomputed kernel matrix"):
        K.make_column_source(X, plan, K.make_kernel("precomputed"))
    with pytest.raises(ValueError, match="precomputed is only used"):
        K.make_column_source(X, plan, kern, precomputed=Kp)
    with pytest.raises(ValueError, match="gram_dtype"):
        K.make_column_source(X, plan, kern, gram_dtype=np.int32)
    with pytest.raises(ValueError, match="cache_size"):
        K.make_column_source(X, plan, kern, max_gram_mb=0, cache_size=0)
    with pytest.raises(TypeError, match="KernelParams"):
        K.make_column_source(X, plan, "rbf")
    with pytest.raises(ValueError, match="plan was made for"):
        K.make_column_source(X[:100], plan, kern)


def test_plan_validation(heart_mix):
    X, _, _, _, plan = heart_mix
    kern = KERNELS["linear"]
    bad_a = plan._replace(a=plan.a + X.shape[0])
    with pytest.raises(ValueError, match="index"):
        K.DenseGram(X, bad_a, kern)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        K.CachedColumns(X, plan._replace(r=plan.r * 2), kern)
    with pytest.raises(TypeError, match="MixupPlan"):
        K.CachedColumns(X, (1, 2), kern)


def test_precomputed_validation():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(30, 4))
    G = A @ A.T
    P = K.PrecomputedGram(G)
    assert np.shares_memory(P.matrix, G)
    G32 = G.astype(np.float32)
    assert np.shares_memory(K.PrecomputedGram(G32).matrix, G32)
    # Fortran order and integers are converted once (and still right)
    P = K.PrecomputedGram(np.asfortranarray(G))
    np.testing.assert_array_equal(P.column_py(3), G[:, 3])
    np.testing.assert_array_equal(K.PrecomputedGram(np.eye(3, dtype=int)).diagonal, np.ones(3))
    with pytest.raises(ValueError, match=r"precomputed must be a square.*\(30, 29\)"):
        K.PrecomputedGram(G[:, :29])
    with pytest.raises(ValueError, match="square"):
        K.PrecomputedGram(np.ones(5))
    with pytest.raises(ValueError, match=r"\(31, 31\) \(the augmented set"):
        K.PrecomputedGram(G, n=31)
    for bad, where in ((np.nan, "[2, 7]"), (np.inf, "[2, 7]")):
        B = G.copy()
        B[2, 7] = bad
        with pytest.raises(ValueError, match=r"NaN or infinity \(first at \[2, 7\]"):
            K.PrecomputedGram(B)
    B = G.copy()
    B[20, 3] = np.nan
    with pytest.raises(ValueError, match=r"first at \[20, 3\]"):
        K.PrecomputedGram(B)
    B = G.copy()
    B[1, 5] += 1e-8 * np.abs(G).max()
    with pytest.raises(ValueError, match="symmetric"):
        K.PrecomputedGram(B)
    B[1, 5] = G[1, 5] + 1e-12 * np.abs(G).max()       # within 1e-10 relative: accepted
    K.PrecomputedGram(B)
    with pytest.raises(TypeError, match="dense"):
        K.PrecomputedGram(sp.csr_matrix(G))
    with pytest.raises(TypeError, match="real numbers"):
        K.PrecomputedGram(G.astype(complex))
    with pytest.raises(ValueError, match="my_K must be a square"):
        K.PrecomputedGram(G[:3], name="my_K")
    # a large matrix goes through the tiled check (tile borders)
    A = rng.normal(size=(200, 3))
    B = A @ A.T
    B[150, 64] += 1.0
    with pytest.raises(ValueError, match="symmetric"):
        K.PrecomputedGram(B)


# ---------------------------------------------------------------------------------------
# dense kernel blocks for predictions


@pytest.mark.parametrize("kname", ["linear", "rbf", "poly"])
def test_kernel_matrix_and_augmented_kernel_matrix(kname, heart_mix):
    X, _, X_aug, _, plan = heart_mix
    kern = KERNELS[kname]
    Xd, Xa = X.toarray(), X_aug.toarray()
    new = sp.csr_matrix(Xd[::7] + 0.1)
    ref = reference_kernel(new.toarray(), Xa, kern)
    tol = 1e-12 * np.abs(ref).max()
    np.testing.assert_allclose(K.kernel_matrix(new, X_aug, kern), ref, rtol=0, atol=tol)
    sqa, sqb = (new.toarray() ** 2).sum(1), (Xa ** 2).sum(1)
    np.testing.assert_allclose(K.kernel_matrix(new, X_aug, kern, sqa=sqa, sqb=sqb), ref, rtol=0, atol=tol)
    # float32 data, int64 indices
    n32 = new.astype(np.float32)
    n32.indices = n32.indices.astype(np.int64)
    ref32 = reference_kernel(n32.toarray().astype(np.float64), Xa, kern)
    np.testing.assert_allclose(K.kernel_matrix(n32, X_aug, kern), ref32, rtol=0, atol=tol)
    # augmented points picked by index, mixed and original, repeated, unordered
    rows = np.random.default_rng(4).choice(X_aug.shape[0], 60)
    rows[:3] = [0, 300, 300]
    got = K.augmented_kernel_matrix(new, X, plan, rows, kern)
    np.testing.assert_allclose(got, ref[:, rows], rtol=0, atol=tol)
    np.testing.assert_allclose(K.augmented_kernel_matrix(new, X, plan, None, kern), ref, rtol=0, atol=tol)
    np.testing.assert_allclose(K.augmented_kernel_matrix(new, X, None, [1, 2], kern), ref[:, [1, 2]],
                               rtol=0, atol=tol)


def test_kernel_matrix_errors(heart_mix):
    X, _, X_aug, _, plan = heart_mix
    with pytest.raises(ValueError, match="features"):
        K.kernel_matrix(X[:, :5], X, KERNELS["rbf"])
    with pytest.raises(ValueError, match="sqb"):
        K.kernel_matrix(X, X, KERNELS["rbf"], sqb=np.ones(3))
    with pytest.raises(ValueError, match="precomputed"):
        K.kernel_matrix(X, X, K.make_kernel("precomputed"))
    with pytest.raises(ValueError, match=r"rows must lie in \[0, 400\)"):
        K.augmented_kernel_matrix(X, X, plan, [400], KERNELS["rbf"])
    with pytest.raises(ValueError, match="X_new has 5 features"):
        K.augmented_kernel_matrix(X[:, :5], X, plan, None, KERNELS["rbf"])


def test_make_kernel():
    X, _ = dualsolve.datasets.load("heart_scale")
    Xd = X.toarray()
    assert K.make_kernel("rbf", gamma="scale", X=X).gamma == pytest.approx(1 / (13 * Xd.var()), rel=1e-12)
    assert K.make_kernel("rbf", gamma="scale", X=Xd).gamma == pytest.approx(1 / (13 * Xd.var()), rel=1e-12)
    assert K.make_kernel("poly", gamma="auto", X=X).gamma == 1 / 13
    assert K.make_kernel("poly", gamma=2, degree=2, coef0=-1) == K.KernelParams("poly", 2.0, -1.0, 2)
    assert K.make_kernel("linear", gamma="anything") == K.KernelParams("linear", 0.0, 0.0, 1)
    with pytest.raises(ValueError, match="kernel must be one of"):
        K.make_kernel("sigmoid")
    with pytest.raises(ValueError, match="gamma must be finite and > 0"):
        K.make_kernel("rbf", gamma=0)
    with pytest.raises(ValueError, match="needs the training rows"):
        K.make_kernel("rbf")
    with pytest.raises(ValueError, match="degree"):
        K.make_kernel("poly", gamma=1.0, degree=1.5)
    with pytest.raises(ValueError, match="coef0"):
        K.make_kernel("poly", gamma=1.0, coef0=np.inf)
    # kernel_from_dot: the rbf distance is clamped at 0, poly is an integer power
    assert K.kernel_from_dots(1.0 + 1e-15, 1.0, 1.0, K.make_kernel("rbf", gamma=3.0)) == 1.0
    assert K.kernel_from_dots(-2.0, 0, 0, K.make_kernel("poly", gamma=1.0, coef0=0.5, degree=3)) == -3.375
    assert K.kernel_from_dots(2.0, 0, 0, K.make_kernel("poly", gamma=1.0, coef0=0.0, degree=0)) == 1.0


@pytest.mark.parametrize("train", ["train_mixup_sdca", "train_kernel_sgd"])
def test_the_column_cache_takes_float64_input_through_train(train):
    """The driver makes X read-only while the engine runs; the cache must still build (it
    failed with 'buffer source array is read-only' on float64 X) and give the stored
    Gram's iterates."""
    import dualsolve as ds
    X, y = ds.datasets.load("heart_scale")
    fn = getattr(ds, train)
    kw = dict(kernel="rbf", max_epochs=5, tol=0.0, seed=1)
    cached = fn(X, y, max_gram_mb=1e-6, **kw)
    stored = fn(X, y, **kw)
    np.testing.assert_allclose(cached.dual, stored.dual, rtol=1e-12, atol=1e-12)
