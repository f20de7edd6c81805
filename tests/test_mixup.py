"""Kernel mixup SDCA (Obi, Saito, Sasaki & Kato, 2025; docs/mixup.md) on small real problems.

Oracles (tests/helpers/mixup_reference.py, fixture ``mixup_ref``): a slow NumPy twin of every
MixupSDCA method driven by the solver's row order, L-BFGS / Clarabel references of the kernel
objective, and weighted logistic regression (scikit-learn) for soft-label BCE.

Problems (real data): 60 rows of UCI MAGIC (bundled ``magic04``; 5 standardised
features, half per class) + 100 mixed rows, RBF gamma 0.5, lam = 1/n with n = 160; for the
linear paths 60 rows of heart_scale (13 sparse features) + 100 mixed rows.

Contract assumed where the paper leaves a choice open (docs/mixup.md):
- ``history`` has a row for epoch 0 (the initial point), as ``train_sdca``;
- with ``sampling="permutation"`` the coordinates of epoch e are ``epoch_orders(seed, m,
  E)[e]``, m = n, or n~ for decomp, whose coordinates are listed in the order of j of the
  paper's eq. 24: first j = i for y_i > -1, then j = i + n for y_i < 1;
- ``n_mix > 0`` augments with ``mixup_augment(X, y, n_mix, mixup_alpha, seed=seed)``.
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize_scalar

import dualsolve as ds
from dualsolve._core import losses as table
from dualsolve._core.rng import epoch_orders, uniform_draws

SMOOTH = ["logistic", "smooth_hinge", "squared_hinge"]
# solver keywords per variant (the twin takes the same names)
VARIANTS = {
    "naive": dict(method="naive"),
    "naive-numeric": dict(method="naive", conjugate="numeric"),
    "approx-tight": dict(method="approx", approx_grid="tight"),
    "approx-literal": dict(method="approx", approx_grid="literal"),
    "decomp": dict(method="decomp", decomp_gamma="percoord"),
    "decomp-paper": dict(method="decomp", decomp_gamma="paper"),
    "exact": dict(method="exact"),
}
PHI0_AT_0 = {"logistic": np.log(2.0), "smooth_hinge": 0.75, "squared_hinge": 1.0, "hinge": 1.0}


def fit(X, y, **kw):
    """train_mixup_sdca, reading y as soft labels unless the call mixes points itself."""
    kw.setdefault("check_every", 1)
    if not kw.get("n_mix"):
        kw.setdefault("soft_labels", True)
    kw.setdefault("sampling", "permutation")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.ConvergenceWarning)
        return ds.train_mixup_sdca(X, y, **kw)


def duals_per_epoch(X, y, epochs, **kw):
    """The solver's dual after each of the first ``epochs`` epochs (one solve per count)."""
    return np.array([fit(X, y, tol=0.0, max_epochs=e, **kw).dual for e in range(1, epochs + 1)])


def n_coords(mixup_ref, y, variant):
    return mixup_ref.decomp_coordinates(y)[3] if variant.startswith("decomp") else len(y)


class Problem:
    pass


@pytest.fixture(scope="module")
def kp(mixup_ref):
    """RBF problem: magic04 subset + mixup, its kernel matrix and cached references."""
    R = mixup_ref
    p = Problem()
    p.Xo, p.yo, p.Xnew = R.magic_problem(n_orig=60, n_features=5, seed=0, n_new=25)
    p.X, p.y, p.plan = R.mixup_numpy(p.Xo, p.yo, 100, seed=1)
    p.n = len(p.y)
    p.lam = 1.0 / p.n
    p.g = 0.5
    p.K = R.rbf_kernel(p.X, gamma=p.g)
    assert 0 < np.sum(np.abs(p.y) < 1) < p.n        # both soft and binary labels
    cache = {}

    def ref(loss, lam=None):
        lam = p.lam if lam is None else lam
        if (loss, lam) not in cache:
            cache[loss, lam] = R.lbfgs_kernel(p.K, p.y, lam, loss)
        return cache[loss, lam]
    p.ref = ref
    return p


@pytest.fixture(scope="module")
def lp(mixup_ref):
    """Linear problem: heart_scale subset (sparse) + mixup, materialised."""
    R = mixup_ref
    p = Problem()
    p.Xo, p.yo = R.heart_problem(n_orig=60, seed=0)
    p.X, p.y, _ = R.mixup_numpy(p.Xo, p.yo, 100, seed=2)
    p.n = p.X.shape[0]
    p.lam = 1.0 / p.n
    p.K = R.linear_kernel(p.X)
    return p


# ---------------------------------------------------------------------------------------
# the oracle itself


def test_oracle_losses_agree_with_the_table(mixup_ref):
    """Two independent implementations of phi, phi', h (the table is tested on its own in
    test_core_losses.py; this makes the twin's formulas trustworthy)."""
    R = mixup_ref
    rng = np.random.default_rng(0)
    y = np.r_[-1.0, 1.0, rng.uniform(-1, 1, 30)]
    s = rng.normal(scale=3, size=(len(y), 20))
    for loss in ["logistic", "smooth_hinge", "squared_hinge", "hinge", "squared"]:
        Y = np.broadcast_to(y[:, None], s.shape)
        for ours, theirs in [(R.phi_vec, table.value), (R.dphi_vec, table.derivative)]:
            np.testing.assert_allclose(ours(loss, s, Y), theirs(loss, s, Y), rtol=1e-13, atol=1e-15)
        if loss != "hinge":
            v, d, d2 = R._np_losses(loss, s, Y)
            np.testing.assert_allclose(v, R.phi_vec(loss, s, Y), rtol=1e-13, atol=1e-15)
            np.testing.assert_allclose(d, R.dphi_vec(loss, s, Y), rtol=1e-13, atol=1e-15)
            np.testing.assert_allclose(d2, R.d2phi_vec(loss, s, Y), rtol=1e-13, atol=1e-15)
        for yi in y:
            lo, hi = R.dual_domain(loss, yi)
            a = np.linspace(max(lo, -7), min(hi, 7), 23)
            np.testing.assert_allclose(R.conj_vec(loss, a, yi), table.conjugate(loss, a, yi),
                                       rtol=1e-13, atol=1e-14)


def test_oracle_exact_step_agrees_with_the_table(mixup_ref):
    R = mixup_ref
    rng = np.random.default_rng(1)
    for loss in ["logistic", "smooth_hinge", "squared_hinge", "hinge", "squared"]:
        for _ in range(300):
            y = float(rng.choice([-1.0, 1.0, rng.uniform(-1, 1)]))
            lo, hi = R.dual_domain(loss, y)
            a0 = float(rng.uniform(max(lo, -3), min(hi, 3)))
            z = float(rng.normal(scale=2))
            A = float(rng.choice([0.0, 0.05, 1.0, 30.0]))
            if loss == "hinge" and A == 0.0:
                A = 0.5
            ours = R.exact_step(loss, y, z, a0, A)
            assert ours == pytest.approx(float(table.dual_step(loss, y, z, a0, A)), abs=1e-12)


# ---------------------------------------------------------------------------------------
# conjugates: closed form vs numerical sup vs the infimal convolution (eq. 6)


@pytest.mark.parametrize("loss", ["logistic", "smooth_hinge", "squared_hinge", "squared", "hinge"])
def test_conjugate_three_ways_for_random_soft_labels(mixup_ref, loss):
    """For y ~ U(-1,1) and a uniform over dom h (the squared hinge's outer branches
    included): h_closed = sup_zeta(-a zeta - phi) = inf_u (eq. 6), for the table and the
    oracle. test_core_losses checks fixed labels against a bounded sup; this adds random
    labels, the whole domain and the independent inf-convolution route."""
    R = mixup_ref
    rng = np.random.default_rng(2)
    for y in rng.uniform(-1, 1, 12):
        if loss == "squared_hinge":
            lo, hi = -(1 - y) / 0.5 - 2.0, (1 + y) / 0.5 + 2.0
        elif loss == "squared":
            lo, hi = -4.0, 4.0
        else:
            lo, hi = R.dual_domain(loss, y)
        for a in rng.uniform(lo, hi, 8):
            closed = float(table.conjugate(loss, a, y))
            assert closed == pytest.approx(R.conj(loss, a, y), abs=1e-13)
            assert closed == pytest.approx(R.conj_numeric(loss, a, y), abs=1e-9), (y, a)
            assert closed == pytest.approx(R.conj_infconv(loss, a, y), abs=1e-9), (y, a)


@pytest.mark.parametrize("g", [0.25, 1.0, 1.5])
def test_smooth_hinge_conjugate_matches_infconv_for_any_smoothing(mixup_ref, g):
    R = mixup_ref
    rng = np.random.default_rng(3)
    for y in rng.uniform(-1, 1, 8):
        for a in rng.uniform(-(1 - y) / 2, (1 + y) / 2, 6):
            assert float(table.conjugate("smooth_hinge", a, y, g)) == pytest.approx(
                R.conj_infconv("smooth_hinge", a, y, g), abs=1e-9)


def test_logistic_conjugate_at_the_domain_ends_and_near_binary_labels(mixup_ref):
    R = mixup_ref
    for y in [-1 + 1e-9, -0.5, 0.0, 0.7, 1 - 1e-9]:
        c1, c2 = (1 + y) / 2, (1 - y) / 2
        # entropy form: h = p log p + (1-p) log(1-p), p = a + c2: 0 at both ends of [-c2, c1]
        for a in (-c2, c1):
            assert float(table.conjugate("logistic", a, y)) == 0.0
        # h(0) = -min phi = -H(c1), and min h = -phi(0) = -log 2 at alpha_diamond = y/2
        assert float(table.conjugate("logistic", 0.0, y)) == pytest.approx(
            c1 * np.log(c1) + c2 * np.log(c2), abs=1e-15)
        assert float(table.conjugate("logistic", y / 2, y)) == pytest.approx(-np.log(2), abs=1e-15)
        assert float(table.conjugate("logistic", c1 + 1e-12, y)) == np.inf
        a = c1 - 1e-13
        assert float(table.conjugate("logistic", a, y)) == pytest.approx(
            R.conj_numeric("logistic", a, y), abs=1e-11)


# ---------------------------------------------------------------------------------------
# initial gap


def test_initial_gap_twin(mixup_ref, kp):
    R = mixup_ref
    c1 = (1 + kp.y) / 2
    H = -np.array([R._xlogx(p) + R._xlogx(1 - p) for p in c1])     # binary entropy, nats
    res = R.sdca_twin(kp.K, kp.y, kp.lam, "logistic", "naive", max_epochs=0)
    assert res.gap[0] == pytest.approx(np.log(2) - H.mean(), abs=1e-12)
    assert res.primal[0] == pytest.approx(np.log(2), abs=1e-15)
    for loss in SMOOTH:
        mins = [minimize_scalar(lambda s: R.phi(loss, s, yi), bounds=(-60, 60), method="bounded",
                                options=dict(xatol=1e-12)).fun for yi in kp.y]
        res = R.sdca_twin(kp.K, kp.y, kp.lam, loss, "naive", max_epochs=0)
        assert res.gap[0] == pytest.approx(PHI0_AT_0[loss] - np.mean(mins), abs=1e-9)
        # the decomposed dual starts at D~(0) = 0 (inf phi0 = 0): its gap is phi0(0)
        res = R.sdca_twin(kp.K, kp.y, kp.lam, loss, "decomp", max_epochs=0)
        assert res.gap[0] == pytest.approx(PHI0_AT_0[loss], abs=1e-14)


@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("variant", ["naive", "decomp"])
def test_initial_gap_solver(mixup_ref, kp, loss, variant):
    twin = mixup_ref.sdca_twin(kp.K, kp.y, kp.lam, loss, variant, max_epochs=0)
    m = fit(kp.K, kp.y, kernel="precomputed", loss=loss, lam=kp.lam, max_epochs=1, tol=0.0,
            **VARIANTS[variant])
    h = m.history
    assert h["epoch"][0] == 0
    assert h["gap"][0] == pytest.approx(twin.gap[0], abs=1e-12)
    assert h["primal"][0] == pytest.approx(PHI0_AT_0[loss], abs=1e-12)


# ---------------------------------------------------------------------------------------
# convergence of every method; L-BFGS reference (twin first, so the oracle is trusted)


@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("variant", ["naive", "approx-tight", "approx-literal", "decomp", "exact"])
def test_twin_converges_to_the_lbfgs_optimum(mixup_ref, kp, loss, variant):
    R_star, z_star = kp.ref(loss)
    res = mixup_ref.sdca_twin(kp.K, kp.y, kp.lam, loss, tol=1e-9, max_epochs=60, seed=5,
                              **VARIANTS[variant])
    assert res.gap[-1] <= 1e-9
    # weak duality against an independent optimum, and the gap certifies the primal error
    assert -1e-12 <= res.primal[-1] - R_star <= res.gap[-1] + 1e-12
    assert res.dual[-1] <= R_star + 1e-12
    # ||f - f*||^2 <= 2 gap / lam, and K_ii = 1
    assert np.abs(res.z - z_star).max() <= np.sqrt(2 * res.gap[-1] / kp.lam) + 1e-9


@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_solver_converges_to_the_lbfgs_optimum(mixup_ref, kp, loss, variant):
    R = mixup_ref
    R_star, z_star = kp.ref(loss)
    m = fit(kp.K, kp.y, kernel="precomputed", loss=loss, lam=kp.lam, tol=1e-9, max_epochs=300,
            seed=0, **VARIANTS[variant])
    h = m.history
    gap = h["gap"][-1]
    assert m.converged
    assert m.n_epochs <= 60                       # about 15-40 epochs at lam n = 1
    assert 0 <= gap <= 1e-8
    assert gap == pytest.approx(h["primal"][-1] - h["dual"][-1], abs=1e-14)
    P = h["primal"][-1]
    assert P == pytest.approx(R_star, rel=1e-8)
    assert -1e-12 <= P - R_star <= gap + 1e-12
    # the reported dual is the alpha of f = K alpha/(lam n): its R is the history's primal
    Pa, _, _, z = R.kernel_objectives(kp.K, kp.y, kp.lam, loss, m.dual)
    assert Pa == pytest.approx(P, rel=1e-12)
    assert np.abs(z - z_star).max() <= np.sqrt(2 * gap / kp.lam) + 1e-9
    # KKT: alpha = -phi'(z) up to the dual error sqrt(2 n gap / gamma) plus the score error
    # times phi' 's Lipschitz constant 1/gamma (for decomp: the decomposed problem's gap)
    g = R.gamma_of(loss)
    bound = np.sqrt(2 * kp.n * gap / g) * (3 if variant.startswith("decomp") else 1) \
        + np.sqrt(2 * gap / kp.lam) / g
    assert np.abs(m.dual + R.dphi_vec(loss, z, kp.y)).max() <= bound + 1e-9


@pytest.mark.parametrize("variant", ["naive", "approx-tight", "decomp", "exact"])
def test_rbf_and_poly_kernels_equal_their_precomputed_matrices(mixup_ref, kp, variant):
    R = mixup_ref
    common = dict(loss="logistic", lam=kp.lam, seed=4, **VARIANTS[variant])
    a = duals_per_epoch(kp.X, kp.y, 2, kernel="rbf", kernel_gamma=kp.g, **common)
    b = duals_per_epoch(kp.K, kp.y, 2, kernel="precomputed", **common)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-11)
    Kp = R.poly_kernel(kp.X, gamma=0.3, coef0=1.0, degree=2)
    a = duals_per_epoch(kp.X, kp.y, 2, kernel="poly", kernel_gamma=0.3, coef0=1.0, degree=2, **common)
    b = duals_per_epoch(Kp, kp.y, 2, kernel="precomputed", **common)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)


def test_rbf_gamma_defaults_to_one_over_n_features(kp, mixup_ref):
    K = mixup_ref.rbf_kernel(kp.X, gamma=1.0 / kp.X.shape[1])
    a = fit(kp.X, kp.y, kernel="rbf", lam=kp.lam, max_epochs=2, tol=0.0, seed=1).dual
    b = fit(K, kp.y, kernel="precomputed", lam=kp.lam, max_epochs=2, tol=0.0, seed=1).dual
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-11)


# ---------------------------------------------------------------------------------------
# iterate by iterate: the Cython solver against the twin, same row order


def twin_atol(variant):
    """How closely the compiled duals follow the twin's. The numeric conjugate is exact only
    to its bisection's accuracy. For approx: at each epoch end both recompute the scores
    from scratch, the twin with BLAS (K @ alpha) in an order that depends on the BLAS build,
    about 4e-15 from the compiled loop's sum; the approx step's gap term is a difference of
    nearly equal numbers and carries that to 1.4e-12 within one epoch (numpy 2.4.6;
    6e-13 with a sequential sum in the twin). Epoch 1, before any recomputation, is equal
    bit for bit."""
    if variant == "naive-numeric" or variant.startswith("approx"):
        return 1e-10
    return 1e-12


@pytest.mark.parametrize("loss", SMOOTH + ["squared"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_iterates_equal_the_twin(mixup_ref, kp, loss, variant):
    R = mixup_ref
    seed, E = 11, 3
    orders = epoch_orders(seed, n_coords(R, kp.y, variant), E)
    twin = R.sdca_twin(kp.K, kp.y, kp.lam, loss, orders=orders, **VARIANTS[variant])
    got = duals_per_epoch(kp.K, kp.y, E, kernel="precomputed", loss=loss, lam=kp.lam,
                          seed=seed, **VARIANTS[variant])
    np.testing.assert_allclose(got, twin.alpha[1:], rtol=0, atol=twin_atol(variant))
    h = fit(kp.K, kp.y, kernel="precomputed", loss=loss, lam=kp.lam, seed=seed, tol=0.0,
            max_epochs=E, **VARIANTS[variant]).history
    np.testing.assert_allclose(h["gap"], twin.gap, rtol=1e-9, atol=1e-13)
    if loss != "squared" or not variant.startswith("decomp"):
        np.testing.assert_allclose(h["primal"], twin.primal, rtol=1e-12)


@pytest.mark.parametrize("variant", ["naive", "approx-tight", "approx-literal", "decomp", "exact"])
def test_iterates_equal_the_twin_with_a_non_default_smoothing(mixup_ref, kp, variant):
    """The loss parameter reaches every part of the step (gamma, phi0(0) in Algorithm 2's
    level set L_i, the conjugate)."""
    R = mixup_ref
    orders = epoch_orders(14, n_coords(R, kp.y, variant), 3)
    twin = R.sdca_twin(kp.K, kp.y, kp.lam, "smooth_hinge", param=0.25, orders=orders,
                       **VARIANTS[variant])
    got = duals_per_epoch(kp.K, kp.y, 3, kernel="precomputed", loss="smooth_hinge",
                          smoothing=0.25, lam=kp.lam, seed=14, **VARIANTS[variant])
    np.testing.assert_allclose(got, twin.alpha[1:], rtol=0, atol=twin_atol(variant))


def test_hinge_iterates_equal_the_twin(mixup_ref, kp):
    orders = epoch_orders(12, kp.n, 3)
    twin = mixup_ref.sdca_twin(kp.K, kp.y, kp.lam, "hinge", "exact", orders=orders)
    got = duals_per_epoch(kp.K, kp.y, 3, kernel="precomputed", loss="hinge", method="exact",
                          lam=kp.lam, seed=12)
    np.testing.assert_allclose(got, twin.alpha[1:], rtol=0, atol=1e-12)


@pytest.mark.parametrize("variant", ["naive", "exact"])
def test_uniform_sampling_iterates_equal_the_twin(mixup_ref, kp, variant):
    orders = uniform_draws(13, kp.n, 2)
    twin = mixup_ref.sdca_twin(kp.K, kp.y, kp.lam, "logistic", orders=orders, **VARIANTS[variant])
    got = duals_per_epoch(kp.K, kp.y, 2, kernel="precomputed", lam=kp.lam, seed=13,
                          sampling="uniform", **VARIANTS[variant])
    np.testing.assert_allclose(got, twin.alpha[1:], rtol=0, atol=1e-12)


def test_numeric_conjugate_gives_the_closed_form_iterates(kp):
    a = duals_per_epoch(kp.K, kp.y, 3, kernel="precomputed", lam=kp.lam, seed=2, method="naive")
    b = duals_per_epoch(kp.K, kp.y, 3, kernel="precomputed", lam=kp.lam, seed=2, method="naive",
                        conjugate="numeric")
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)


def test_twin_exact_equals_train_sdca(mixup_ref, lp):
    """Oracle check against an already-tested solver: binary labels, K = X X^T, the exact
    step and train_sdca's row order (no shrinking, no focused passes)."""
    R = mixup_ref
    K = R.linear_kernel(lp.Xo)
    for loss in ["logistic", "smooth_hinge", "squared_hinge"]:
        twin = R.sdca_twin(K, lp.yo, 1.0 / 60, loss, "exact", orders=epoch_orders(3, 60, 3))
        for e in (1, 3):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ds.ConvergenceWarning)
                m = ds.train_sdca(lp.Xo, lp.yo, loss=loss, lam=1.0 / 60, tol=0.0, max_epochs=e,
                                  check_every=1, shrinking=False, seed=3, focus=0.0)
            np.testing.assert_allclose(m.dual, twin.alpha[e], rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------
# mixup off: equivalences


def test_twin_decomp_equals_naive_for_binary_labels(mixup_ref, kp):
    """All |y| = 1: I has one coordinate per row, c = 1, n~ = n: the decomposed SDCA is
    naive SDCA with alpha~_j = y_i alpha_i on the same row sequence (the paper's Sec. VI)."""
    R = mixup_ref
    K, y = kp.K[:60, :60], kp.yo
    rows, signs, c, nt = R.decomp_coordinates(y)
    assert nt == 60 and (c == 1).all() and (signs == y[rows]).all()
    orders = epoch_orders(6, 60, 3)
    a = R.sdca_twin(K, y, 1.0 / 60, "logistic", "naive", orders=rows[orders])
    b = R.sdca_twin(K, y, 1.0 / 60, "logistic", "decomp", orders=orders)
    np.testing.assert_allclose(b.alpha, a.alpha, rtol=0, atol=1e-15)
    np.testing.assert_allclose(b.alpha_tilde, y[rows] * a.alpha[-1][rows], rtol=0, atol=1e-15)


@pytest.mark.parametrize("loss", SMOOTH)
def test_solver_decomp_and_approx_equal_naive_for_binary_labels(mixup_ref, kp, loss):
    R = mixup_ref
    K, y = kp.K[:60, :60], kp.yo
    rows = R.decomp_coordinates(y)[0]
    common = dict(kernel="precomputed", loss=loss, lam=1.0 / 60, seed=8)
    # decomp visits coordinate positions; on the rows they stand for, it is naive SDCA
    twin = R.sdca_twin(K, y, 1.0 / 60, loss, "naive", orders=rows[epoch_orders(8, 60, 3)])
    np.testing.assert_allclose(duals_per_epoch(K, y, 3, method="decomp", **common),
                               twin.alpha[1:], rtol=0, atol=1e-12)
    # approx: F~ = F for binary labels, but eq. 21 takes max(1, .): same optimum
    a = fit(K, y, method="approx", tol=1e-10, **common)
    b = fit(K, y, method="naive", tol=1e-10, **common)
    assert a.history["primal"][-1] == pytest.approx(b.history["primal"][-1], rel=1e-9)


@pytest.mark.parametrize("loss", ["logistic", "squared", "squared_hinge", "smooth_hinge", "hinge"])
def test_equals_train_sdca_when_mixup_is_off(heart, loss):
    """Linear kernel, binary labels, method='exact', same seed and permutation sampling:
    the same algorithm as train_sdca (without shrinking or focused passes), so the same
    numbers."""
    X, y = heart
    lam = 1.0 / X.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.ConvergenceWarning)
        a = ds.train_sdca(X, y, loss=loss, lam=lam, tol=0.0, max_epochs=5, check_every=1,
                          shrinking=False, sampling="permutation", seed=7, focus=0.0)
    b = fit(X, y, kernel="linear", method="exact", loss=loss, lam=lam, tol=0.0, max_epochs=5,
            n_mix=0, seed=7)
    np.testing.assert_array_equal(b.dual, a.dual)
    np.testing.assert_array_equal(b.coef, a.coef)
    np.testing.assert_allclose(b.history["primal"], a.history["primal"], rtol=1e-14)


# ---------------------------------------------------------------------------------------
# dual monotonicity and Lemma 2


@pytest.mark.parametrize("loss", ["logistic", "smooth_hinge"])
@pytest.mark.parametrize("variant", ["naive", "approx-tight", "approx-literal", "decomp",
                                     "decomp-paper", "exact"])
def test_dual_never_decreases(kp, loss, variant):
    m = fit(kp.K, kp.y, kernel="precomputed", loss=loss, lam=0.1 / kp.n, tol=0.0, max_epochs=25,
            seed=9, **VARIANTS[variant])
    d = m.history["dual"]
    assert len(d) == 26 and np.isfinite(d).all()
    assert (np.diff(d) >= -1e-12 * np.abs(d[:-1])).all()
    assert d[-1] > d[0]


@pytest.mark.parametrize("loss", SMOOTH)
@pytest.mark.parametrize("grid", ["tight", "literal"])
def test_lemma2_lower_bound_on_the_twin(mixup_ref, kp, loss, grid):
    """F~ <= F at every approx step (Lemma 2); the bound is not vacuous (strict somewhere),
    'tight' finds grid points, 'literal' falls back to zeta~ = 0 when e^-4 does not qualify,
    and eta lies in [sbar, 1] (eq. 21)."""
    R = mixup_ref
    res = R.sdca_twin(kp.K, kp.y, kp.lam, loss, "approx", approx_grid=grid, max_epochs=4,
                      seed=3, record_steps=True)
    soft = [s for s in res.steps if s["k"] is not None]
    assert len(soft) > 100
    F = np.array([s["F"] for s in soft])
    Ft = np.array([s["Ft"] for s in soft])
    assert (Ft <= np.maximum(F, 0) + 1e-12 * (1 + np.abs(F))).all()
    assert (Ft < F - 1e-6).any()
    ks = np.array([s["k"] for s in soft])
    if grid == "tight":
        assert (ks > 0).sum() > len(ks) // 2
    else:
        assert set(ks) <= {-1, 0}
        # (smooth hinge: -phi' = y = alpha_diamond on |zeta| <= 1 - smoothing, so e^-4
        # always qualifies in case (i) and gives the fallback's alpha~ anyway)
        if loss != "smooth_hinge":
            assert (ks == -1).any()
    sbar = kp.lam * kp.n * R.gamma_of(loss) / (1.0 + kp.lam * kp.n * R.gamma_of(loss))
    eta = np.array([s["eta"] for s in res.steps])
    assert (eta >= sbar * (1 - 1e-15)).all() and (eta <= 1.0).all()


def test_grid_and_level_set(mixup_ref):
    """Algorithm 2's ingredients: phi_mup(b) = n phi0(0) at both ends (eq. 16), the log grid
    runs from +-e^-4 to the end (eqs. 18, 20), and BCE's ends are about 2n log2/(1 -/+ y)."""
    R = mixup_ref
    n = 160
    for loss in SMOOTH + ["squared"]:
        for y in [-0.8, -0.1, 0.4, 0.9]:
            bu, bl = R.level_set_ends(loss, y, n)
            T = n * R.phi(loss, 0.0, 1.0)
            for b in (bu, bl):
                assert R.phi(loss, b, y) == pytest.approx(T, rel=1e-14)
            assert bu < 0 < bl
            assert R.grid_point(0, n, bl) == pytest.approx(np.exp(-4), rel=1e-15)
            assert R.grid_point(n, n, bl) == pytest.approx(bl, rel=1e-13)
            assert R.grid_point(n, n, bu) == pytest.approx(bu, rel=1e-13)
            if loss == "logistic":
                assert bl == pytest.approx(2 * n * np.log(2) / (1 - y), rel=1e-3)
                assert bu == pytest.approx(-2 * n * np.log(2) / (1 + y), rel=1e-3)


# ---------------------------------------------------------------------------------------
# decomposition


def test_decomp_coordinates_and_twin_consistency(mixup_ref, kp):
    R = mixup_ref
    rows, signs, c, nt = R.decomp_coordinates(kp.y)
    assert nt == 2 * kp.n - np.sum(np.abs(kp.y) == 1)
    assert (c <= 2).all() and (c > 0).all()
    # (1/n~) sum_j c_j phi0(sigma_j s) = (1/n) sum_i phi(s; y_i) for any scores
    s = np.random.default_rng(0).normal(size=kp.n)
    lhs = np.sum(c * R.phi_vec("logistic", signs * s[rows], 1.0)) / nt
    assert lhs == pytest.approx(np.mean(R.phi_vec("logistic", s, kp.y)), rel=1e-14)
    d = R.sdca_twin(kp.K, kp.y, kp.lam, "logistic", "decomp", tol=1e-13, max_epochs=200, seed=1)
    a = R.sdca_twin(kp.K, kp.y, kp.lam, "logistic", "naive", tol=1e-13, max_epochs=200, seed=1)
    assert d.gap[-1] <= 1e-13 and a.gap[-1] <= 1e-13
    assert d.primal[-1] == pytest.approx(a.primal[-1], rel=1e-12)
    assert d.dual[-1] == pytest.approx(a.dual[-1], rel=1e-12)       # max D~ = max D0 = R*
    np.testing.assert_allclose(d.alpha[-1], a.alpha[-1], rtol=0, atol=1e-5)


@pytest.mark.parametrize("loss", SMOOTH)
def test_solver_decomp_reaches_the_naive_optimum(kp, loss):
    d = fit(kp.K, kp.y, kernel="precomputed", loss=loss, lam=kp.lam, tol=1e-12, max_epochs=500,
            method="decomp")
    a = fit(kp.K, kp.y, kernel="precomputed", loss=loss, lam=kp.lam, tol=1e-12, max_epochs=500,
            method="naive")
    assert d.converged and a.converged
    assert d.params["n_coordinates"] == 2 * kp.n - np.sum(np.abs(kp.y) == 1)     # n~
    assert d.history["primal"][-1] == pytest.approx(a.history["primal"][-1], rel=1e-11)
    # alpha_i = (n/n~)(alpha~_i - alpha~_{i+n}) is the naive optimum, to about sqrt(gap)
    np.testing.assert_allclose(d.dual, a.dual, rtol=0, atol=1e-4)


def test_decomp_erratum_regression(mixup_ref, kp):
    """Eq. 23 as printed (weights 1+y_j, prefactor 1/n~) solves lam' = lam n~/(2n); the
    corrected weights c_j solve lam. The two optima are far apart on this problem."""
    R = mixup_ref
    nt = R.decomp_coordinates(kp.y)[3]
    lam2 = kp.lam * nt / (2 * kp.n)
    R1, z1 = kp.ref("logistic")
    R2, z2 = kp.ref("logistic", lam2)
    assert np.abs(z1 - z2).max() > 1e-2
    paper = R.sdca_twin(kp.K, kp.y, kp.lam, "logistic", "decomp", decomp_weights="paper",
                        tol=1e-12, max_epochs=300, seed=2)
    fixed = R.sdca_twin(kp.K, kp.y, kp.lam, "logistic", "decomp", tol=1e-12, max_epochs=300,
                        seed=2)
    np.testing.assert_allclose(paper.z, z2, atol=1e-5)
    np.testing.assert_allclose(fixed.z, z1, atol=1e-5)
    # the solver implements the corrected version
    m = fit(kp.K, kp.y, kernel="precomputed", lam=kp.lam, tol=1e-11, max_epochs=500,
            method="decomp")
    z = kp.K @ m.dual / (kp.lam * kp.n)
    np.testing.assert_allclose(z, z1, atol=1e-5)
    assert m.history["primal"][-1] == pytest.approx(R1, rel=1e-10)


# ---------------------------------------------------------------------------------------
# linear CSR path = kernel path with K = X X^T; implicit = materialised


@pytest.mark.parametrize("variant", ["naive", "approx-tight", "decomp", "exact"])
def test_linear_path_equals_precomputed_kernel(lp, variant):
    common = dict(loss="logistic", lam=lp.lam, seed=5, **VARIANTS[variant])
    a = duals_per_epoch(lp.X, lp.y, 1, kernel="linear", **common)
    b = duals_per_epoch(lp.K, lp.y, 1, kernel="precomputed", **common)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    ml = fit(lp.X, lp.y, kernel="linear", tol=1e-12, max_epochs=3000, **common)
    mk = fit(lp.K, lp.y, kernel="precomputed", tol=1e-12, max_epochs=3000, **common)
    assert ml.converged and mk.converged
    assert ml.history["gap"][-1] <= 1e-10 and mk.history["gap"][-1] <= 1e-10
    assert ml.history["primal"][-1] == pytest.approx(mk.history["primal"][-1], rel=1e-10)
    # w = X^T alpha/(lam n), to rounding for the linear model's own alpha
    w = lp.X.T @ ml.dual / (lp.lam * lp.n)
    scale = abs(lp.X).T @ np.abs(ml.dual) / (lp.lam * lp.n)
    assert (np.abs(ml.coef - w) <= 1e-12 * scale + 1e-15).all()
    np.testing.assert_allclose(ml.coef, lp.X.T @ mk.dual / (lp.lam * lp.n), rtol=0, atol=1e-6)


@pytest.mark.parametrize("mixup_alpha", [1.0, 0.01])
@pytest.mark.parametrize("variant", ["naive", "approx-tight", "decomp", "exact"])
def test_implicit_mixed_rows_equal_materialised(lp, mixup_alpha, variant):
    """mixup_alpha = 0.01 gives ratios at or next to 0 and 1 (duplicated rows)."""
    common = dict(kernel="linear", loss="logistic", lam=1.0 / 160, n_mix=100,
                  mixup_alpha=mixup_alpha, seed=21, **VARIANTS[variant])
    a = duals_per_epoch(lp.Xo, lp.yo, 2, implicit=True, **common)
    b = duals_per_epoch(lp.Xo, lp.yo, 2, implicit=False, **common)
    assert a.shape == (2, 160)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    ma = fit(lp.Xo, lp.yo, implicit=True, tol=1e-11, max_epochs=3000, **common)
    mb = fit(lp.Xo, lp.yo, implicit=False, tol=1e-11, max_epochs=3000, **common)
    assert ma.converged and mb.converged
    np.testing.assert_allclose(ma.coef, mb.coef, rtol=0, atol=1e-7)
    assert ma.history["primal"][-1] == pytest.approx(mb.history["primal"][-1], rel=1e-11)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_n_mix_augments_with_mixup_augment(mixup_ref, kp, kernel):
    """train_mixup_sdca(X, y, n_mix, seed) = the same solve on mixup_augment(X, y, n_mix,
    seed=seed) materialised; the model predicts with the augmented points."""
    from dualsolve.mixup.augment import mixup_augment
    Xa, ya, plan = mixup_augment(kp.Xo, kp.yo, 100, mixup_alpha=1.0, seed=17)
    common = dict(kernel=kernel, kernel_gamma=kp.g, lam=kp.lam, seed=17)
    if kernel == "linear":
        common.pop("kernel_gamma")
    a = fit(kp.Xo, kp.yo, n_mix=100, mixup_alpha=1.0, tol=0.0, max_epochs=3, **common)
    b = fit(Xa, ya, n_mix=0, tol=0.0, max_epochs=3, **common)
    np.testing.assert_allclose(a.dual, b.dual, rtol=0, atol=1e-11)
    scores = a.decision_function(kp.Xnew)
    Kn = (mixup_ref.rbf_kernel(kp.Xnew, Xa, kp.g) if kernel == "rbf"
          else mixup_ref.linear_kernel(kp.Xnew, Xa))
    np.testing.assert_allclose(scores, Kn @ a.dual / (kp.lam * kp.n), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------
# linear references (scikit-learn)


def test_soft_label_bce_equals_weighted_logistic_regression(mixup_ref, lp):
    pytest.importorskip("sklearn")
    lam = 0.5 / lp.n
    m = fit(lp.X, lp.y, kernel="linear", loss="logistic", lam=lam, tol=1e-13, max_epochs=5000)
    assert m.converged
    w_ref = mixup_ref.weighted_logreg(lp.X, lp.y, lam)
    np.testing.assert_allclose(m.coef, w_ref, rtol=0, atol=1e-6)


def test_binary_bce_equals_logistic_regression(mixup_ref, lp):
    pytest.importorskip("sklearn")
    lam = 1.0 / 60
    m = fit(lp.Xo, lp.yo, kernel="linear", loss="logistic", lam=lam, tol=1e-13, max_epochs=5000)
    np.testing.assert_allclose(m.coef, mixup_ref.weighted_logreg(lp.Xo, lp.yo, lam), rtol=0, atol=1e-6)


# ---------------------------------------------------------------------------------------
# rate sanity (loose, statistical)


def test_rate_sanity(mixup_ref, kp):
    ep = {}
    for lamn in (1.0, 0.01):
        for method in ("naive", "decomp"):
            m = fit(kp.K, kp.y, kernel="precomputed", loss="logistic", lam=lamn / kp.n,
                    tol=1e-6, max_epochs=3000, method=method, seed=0)
            assert m.converged
            ep[lamn, method] = m.n_epochs
    # Theorem 1 (eq. 22), RBF and logistic: 1 + 1/(4 lam n) epochs per e-fold, 21x more at
    # lam n = 0.01 than at 1; Theorem 2 (eq. 27) allows decomp twice naive's iterations
    assert 3 <= ep[0.01, "naive"] / ep[1.0, "naive"] <= 40
    nt = mixup_ref.decomp_coordinates(kp.y)[3]
    for lamn in (1.0, 0.01):
        ratio = ep[lamn, "decomp"] * nt / (ep[lamn, "naive"] * kp.n)   # iterations
        assert 0.7 <= ratio <= 3.0


# ---------------------------------------------------------------------------------------
# hinge: exact only


def test_hinge_exact_converges_to_the_qp_optimum(mixup_ref, kp):
    pytest.importorskip("clarabel")
    m = fit(kp.K, kp.y, kernel="precomputed", loss="hinge", method="exact", lam=kp.lam,
            tol=1e-6, max_epochs=300, seed=0)
    h = m.history
    assert (np.diff(h["dual"]) >= -1e-12 * np.abs(h["dual"][:-1])).all()
    gap = h["gap"][-1]
    assert gap < 1e-3
    R_qp, _ = mixup_ref.hinge_qp_kernel(kp.K, kp.y, kp.lam)
    assert -1e-8 <= h["primal"][-1] - R_qp <= gap + 1e-8
    assert h["dual"][-1] <= R_qp + 1e-8


@pytest.mark.parametrize("method", ["naive", "approx", "decomp"])
def test_hinge_needs_the_exact_method(kp, method):
    with pytest.raises(ValueError, match="hinge"):
        fit(kp.K, kp.y, kernel="precomputed", loss="hinge", method=method, lam=kp.lam)
    with pytest.raises(ValueError, match="hinge"):
        fit(kp.Xo, kp.yo, kernel="linear", loss="hinge", method=method, lam=kp.lam)


# ---------------------------------------------------------------------------------------
# edge cases


@pytest.mark.parametrize("loss", ["logistic", "smooth_hinge", "squared_hinge", "squared"])
@pytest.mark.parametrize("variant", ["naive", "approx-tight", "decomp", "exact"])
def test_zero_rows_go_to_alpha_diamond(mixup_ref, lp, loss, variant):
    X = sp.vstack([lp.X, sp.csr_matrix((2, lp.X.shape[1]))]).tocsr()
    y = np.r_[lp.y, 1.0, 0.4]
    n = X.shape[0]
    m = fit(X, y, kernel="linear", loss=loss, lam=1.0 / n, tol=1e-10, max_epochs=3000,
            **VARIANTS[variant])
    assert m.converged
    assert np.isfinite(m.dual).all() and np.isfinite(m.coef).all()
    want = [mixup_ref.alpha_diamond(loss, 1.0), mixup_ref.alpha_diamond(loss, 0.4)]
    np.testing.assert_allclose(m.dual[-2:], want, rtol=0, atol=1e-6)


@pytest.mark.parametrize("kernel", ["linear", "rbf", "precomputed"])
def test_bad_labels_and_regularisation_are_rejected(kp, kernel):
    X = kp.K if kernel == "precomputed" else kp.X
    y = kp.y.copy()
    y[3] = 1.0000001
    with pytest.raises(ValueError):
        fit(X, y, kernel=kernel, lam=kp.lam)
    y[3] = np.nan
    with pytest.raises(ValueError):
        fit(X, y, kernel=kernel, lam=kp.lam)
    for lam in (0.0, -1.0):
        with pytest.raises(ValueError, match="lam"):
            fit(X, kp.y, kernel=kernel, lam=lam)


def test_precomputed_kernel_input_checks(kp):
    with pytest.raises(ValueError):
        fit(kp.K[:, :50], kp.y, kernel="precomputed", lam=kp.lam)        # not square
    with pytest.raises(ValueError):
        fit(kp.K, kp.y, kernel="precomputed", lam=kp.lam, n_mix=10)      # K is of the augmented set


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("variant", ["naive", "approx-tight", "decomp", "exact"])
def test_a_single_soft_labelled_example(mixup_ref, kernel, variant):
    R = mixup_ref
    x = np.array([[0.5, -1.0, 2.0]])
    y = np.array([0.3])
    lam = 0.7
    k = float(x[0] @ x[0]) if kernel == "linear" else 1.0
    # f = beta k(x, .): R = lam/2 beta^2 k + phi(beta k; y), minimised over s = beta k
    obj = lambda s: 0.5 * lam * s * s / k + R.phi("logistic", s, 0.3)
    best = minimize_scalar(obj, bounds=(-50, 50), method="bounded", options=dict(xatol=1e-12))
    kw = dict(kernel_gamma=1.0) if kernel == "rbf" else {}
    m = fit(sp.csr_matrix(x), y, kernel=kernel, lam=lam, tol=1e-12, max_epochs=1000, **kw,
            **VARIANTS[variant])
    assert m.converged and m.dual.shape == (1,)
    assert m.history["primal"][-1] == pytest.approx(best.fun, rel=1e-10)
    assert m.decision_function(x)[0] == pytest.approx(best.x, abs=1e-5)


def test_duplicated_rows_and_degenerate_mixes(mixup_ref, kp):
    """Mixed rows with r = 0 and pairs a = b duplicate an original exactly: harmless."""
    R = mixup_ref
    dup = sp.csr_matrix(kp.Xo[[0, 0, 7]])
    X = sp.vstack([kp.X, dup]).tocsr()
    y = np.r_[kp.y, kp.yo[[0, 0, 7]]]
    K = R.rbf_kernel(X, gamma=kp.g)
    lam = 1.0 / len(y)
    R_star, _ = R.lbfgs_kernel(K, y, lam, "logistic")
    for variant in ["naive", "approx-tight", "decomp", "exact"]:
        m = fit(X, y, kernel="rbf", kernel_gamma=kp.g, lam=lam, tol=1e-12, max_epochs=500,
                **VARIANTS[variant])
        assert m.converged
        assert m.history["primal"][-1] == pytest.approx(R_star, rel=1e-9)
        # equal points with equal labels have equal optimal duals
        a = m.dual
        assert abs(a[0] - a[-3]) < 1e-4 and abs(a[-3] - a[-2]) < 1e-4 and abs(a[7] - a[-1]) < 1e-4


@pytest.mark.parametrize("variant", ["naive", "approx-tight", "decomp", "exact"])
def test_huge_scores_do_not_overflow(lp, variant):
    X = lp.X * 1e3
    m = fit(X, lp.y, kernel="linear", loss="logistic", lam=1e-6 / lp.n, tol=0.0, max_epochs=5,
            **VARIANTS[variant])
    h = m.history
    assert np.isfinite(h["primal"]).all() and np.isfinite(h["dual"]).all()
    assert np.isfinite(m.dual).all() and np.isfinite(m.coef).all()
    c1, c2 = (1 + lp.y) / 2, (1 - lp.y) / 2
    assert (m.dual >= -c2).all() and (m.dual <= c1).all()
    assert np.isfinite(m.decision_function(X)).all()


# ---------------------------------------------------------------------------------------
# models: predictions on new points, save / load


@pytest.mark.parametrize("kernel", ["rbf", "poly", "precomputed"])
def test_kernel_model_predicts_and_round_trips(mixup_ref, kp, kernel, tmp_path):
    R = mixup_ref
    kw = dict(rbf=dict(kernel_gamma=kp.g), poly=dict(kernel_gamma=0.3, coef0=1.0, degree=2), precomputed={})[kernel]
    Kfun = {"rbf": lambda A, B: R.rbf_kernel(A, B, kp.g),
            "poly": lambda A, B: R.poly_kernel(A, B, gamma=0.3, coef0=1.0, degree=2)}
    if kernel == "precomputed":
        X, Knew = kp.K, R.rbf_kernel(kp.Xnew, kp.X, kp.g)
        new = Knew
    else:
        X, Knew = kp.X, Kfun[kernel](kp.Xnew, kp.X)
        new = kp.Xnew
    m = fit(X, kp.y, kernel=kernel, lam=kp.lam, tol=1e-8, max_epochs=200, **kw)
    want = Knew @ m.dual / (kp.lam * kp.n)
    np.testing.assert_allclose(m.decision_function(new), want, rtol=1e-10, atol=1e-11)
    path = tmp_path / f"{kernel}.model"
    m.save(path)
    m2 = ds.load_model(path)
    np.testing.assert_array_equal(m2.decision_function(new), m.decision_function(new))
    np.testing.assert_array_equal(m2.dual, m.dual)
    assert m2.params["kernel"] == kernel


def test_binary_kernel_model_predicts_labels(kp):
    m = fit(kp.Xo, kp.yo, kernel="rbf", kernel_gamma=kp.g, lam=1.0 / 60, tol=1e-8, max_epochs=200)
    s = m.decision_function(kp.Xnew)
    np.testing.assert_array_equal(m.predict(kp.Xnew), np.where(s > 0, 1.0, -1.0))
    # the training points are classified mostly right (a sanity check on the sign convention)
    assert np.mean(np.sign(m.decision_function(kp.Xo.toarray())) == kp.yo) > 0.7


# ---------------------------------------------------------------------------------------
# kernel SGD baseline (the paper's Sec. VII-B)


def test_kernel_sgd_decreases_the_objective(mixup_ref, kp):
    R_star, _ = kp.ref("logistic")
    E = 30
    m = ds.train_kernel_sgd(kp.X, kp.y, soft_labels=True, step=0.1, loss="logistic", lam=kp.lam, kernel="rbf",
                            kernel_gamma=kp.g, n_mix=0, max_epochs=E, seed=0)
    h = m.history
    rows = h[h["epoch"] >= 1]
    assert list(rows["epoch"]) == list(range(1, E + 1))
    P = rows["primal"]
    assert np.isfinite(P).all()
    assert P[-1] < P[0] < np.log(2)
    assert P[-1] - R_star < 0.25 * (np.log(2) - R_star)     # a NumPy SGD reaches ~0.03 of it
    assert (P >= R_star - 1e-12).all()
    # the reported primal is R of the returned model, f = K alpha/(lam n)
    Pm, _, _, _ = mixup_ref.kernel_objectives(kp.K, kp.y, kp.lam, "logistic", m.dual)
    assert Pm == pytest.approx(P[-1], rel=1e-9)


def test_kernel_sgd_with_mixup_runs_on_the_augmented_set(kp):
    m = ds.train_kernel_sgd(kp.Xo, kp.yo, step=0.1, loss="logistic", lam=kp.lam, kernel="rbf",
                            kernel_gamma=kp.g, n_mix=100, max_epochs=3, seed=0)
    assert m.dual.shape == (160,)
    assert np.isfinite(m.history["primal"]).all()
