"""The loss table against independent numerical computations: values, derivatives, the
closed-form conjugates and exact coordinate steps of docs/mixup.md (soft labels y in [-1, 1])."""
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from dualsolve._core import losses

CLASSIF = ["logistic", "squared_hinge", "smooth_hinge", "hinge"]
ALL = CLASSIF + ["squared"]
rng = np.random.default_rng(0)


def labels_for(loss):
    if loss == "squared":
        return [-2.5, -1.0, 0.0, 0.3, 1.0, 4.0]
    return [-1.0, 1.0, -0.6, 0.2, 0.95]


def sup_conj(loss, a, y, param=None):
    """h(a; y) = sup_s (-a s - phi(s; y)), by bounded 1-D maximisation on a wide interval."""
    f = lambda s: a * s + losses.value(loss, s, y, param)
    best = np.inf
    for lo, hi in [(-60, 60), (-8, 8), (-3, 3)]:
        r = minimize_scalar(f, bounds=(lo, hi), method="bounded",
                            options=dict(xatol=1e-12, maxiter=2000))
        best = min(best, r.fun)
    return -best


def interior_points(loss, y, param, k=7):
    lo, hi = losses.dual_bounds(loss, np.array([y]), param)
    lo, hi = max(lo[0], -3.0), min(hi[0], 3.0)
    return np.linspace(lo, hi, k + 2)[1:-1]


@pytest.mark.parametrize("loss", ALL)
def test_conjugate_equals_numerical_sup(loss):
    for y in labels_for(loss):
        for a in interior_points(loss, y, None):
            closed = losses.conjugate(loss, a, y)
            num = sup_conj(loss, a, y)
            # hinge's sup is attained on a kink: the bounded optimiser is accurate to ~1e-9
            assert closed == pytest.approx(num, abs=1e-9 if loss != "hinge" else 5e-8), (y, a)


@pytest.mark.parametrize("g", [0.5, 1.0, 1.5, 3.0])
def test_smooth_hinge_conjugate_any_smoothing(g):
    for y in [-0.7, 0.1, 0.5, 1.0]:
        for a in interior_points("smooth_hinge", y, g):
            assert losses.conjugate("smooth_hinge", a, y, g) == pytest.approx(
                sup_conj("smooth_hinge", a, y, g), abs=1e-9)


def test_smooth_hinge_simplified_form_only_valid_for_small_smoothing():
    """|a-y| - 1 + g/2 {..} equals the clipping form for g <= 1, not for g = 1.5."""
    def simplified(a, y, g):
        c1, c2 = (1 + y) / 2, (1 - y) / 2
        extra = c1 + (a - c1) ** 2 / c2 if a >= y else c2 + (a + c2) ** 2 / c1
        return abs(a - y) - 1 + g / 2 * extra
    y = 0.3
    for g in [0.5, 1.0]:
        for a in interior_points("smooth_hinge", y, g):
            assert losses.conjugate("smooth_hinge", a, y, g) == pytest.approx(simplified(a, y, g), abs=1e-13)
    diffs = [abs(losses.conjugate("smooth_hinge", a, y, 1.5) - simplified(a, y, 1.5))
             for a in interior_points("smooth_hinge", y, 1.5)]
    assert max(diffs) > 1e-3


@pytest.mark.parametrize("loss", ALL)
def test_conjugate_is_infinite_outside_domain(loss):
    for y in labels_for(loss):
        lo, hi = losses.dual_bounds(loss, np.array([y]))
        if np.isfinite(lo[0]):
            assert losses.conjugate(loss, lo[0] - 1e-6, y) == np.inf
            assert np.isfinite(losses.conjugate(loss, lo[0], y))
        if np.isfinite(hi[0]):
            assert losses.conjugate(loss, hi[0] + 1e-6, y) == np.inf
            assert np.isfinite(losses.conjugate(loss, hi[0], y))


@pytest.mark.parametrize("loss", ALL)
def test_derivative_matches_finite_differences(loss):
    s = np.linspace(-3.1, 3.1, 41)
    for y in labels_for(loss):
        eps = 1e-6
        fd = (losses.value(loss, s + eps, y) - losses.value(loss, s - eps, y)) / (2 * eps)
        d = losses.derivative(loss, s, y)
        kinks = np.zeros_like(s, dtype=bool)
        if loss == "hinge":
            kinks = (np.abs(np.abs(s) - 1) < 1e-3)
        np.testing.assert_allclose(d[~kinks], fd[~kinks], atol=1e-6)


def test_label_identities():
    s = np.linspace(-5, 5, 101)
    for loss in CLASSIF:
        # phi(s; -1) = phi0(-s) = phi(-s; +1)
        np.testing.assert_allclose(losses.value(loss, s, -1.0), losses.value(loss, -s, 1.0), atol=1e-15)
    y = 0.4
    # BCE with a soft label is softplus(-s) + (1 - y) s / 2
    np.testing.assert_allclose(losses.value("logistic", s, y), np.logaddexp(0, -s) + (1 - y) * s / 2,
                               rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(losses.value("logistic", s, 1.0), np.logaddexp(0, -s), rtol=1e-15)
    np.testing.assert_allclose(losses.value("squared_hinge", s, 1.0), np.maximum(0, 1 - s) ** 2)
    np.testing.assert_allclose(losses.value("hinge", s, -1.0), np.maximum(0, 1 + s))
    np.testing.assert_allclose(losses.value("squared", s, 2.5), (s - 2.5) ** 2 / 2)


@pytest.mark.parametrize("loss", CLASSIF)
def test_argmin_of_conjugate_is_alpha_diamond(loss):
    """alpha_diamond = -phi'(0; y) (Algorithm 2 of the mixup paper) minimises h."""
    for y in labels_for(loss):
        ad = -losses.derivative(loss, 0.0, y)
        lo, hi = losses.dual_bounds(loss, np.array([y]))
        grid = np.linspace(max(lo[0], -4), min(hi[0], 4), 2001)
        assert losses.conjugate(loss, ad, y) <= losses.conjugate(loss, grid, y).min() + 1e-12


@pytest.mark.parametrize("loss", ALL)
def test_fenchel_young(loss):
    """F = phi(z) + h(a) + a z >= 0, with equality at a = -phi'(z)."""
    for y in labels_for(loss):
        z = rng.normal(scale=2, size=50)
        a = np.concatenate([interior_points(loss, y, None, k=50)])
        F = losses.value(loss, z, y) + losses.conjugate(loss, a, y) + a * z
        assert F.min() >= -1e-14
        a_star = -losses.derivative(loss, z, y)
        F0 = losses.value(loss, z, y) + losses.conjugate(loss, a_star, y) + a_star * z
        if loss == "hinge":   # subgradient choice is exact away from the kinks
            F0 = F0[np.abs(np.abs(z) - 1) > 1e-9]
        np.testing.assert_allclose(F0, 0, atol=1e-12)


def brute_step(loss, y, z, a0, A, param=None):
    lo, hi = losses.dual_bounds(loss, np.array([y]), param)
    lo, hi = lo[0], hi[0]
    lo = max(lo, a0 - 50.0)
    hi = min(hi, a0 + 50.0)
    f = lambda a: losses.conjugate(loss, a, y, param) + z * (a - a0) + A / 2 * (a - a0) ** 2
    r = minimize_scalar(f, bounds=(lo, hi), method="bounded", options=dict(xatol=1e-13, maxiter=5000))
    cands = [r.x, lo, hi]
    vals = [f(c) for c in cands]
    return cands[int(np.argmin(vals))], min(vals), f


@pytest.mark.parametrize("loss", ALL)
def test_exact_dual_step_beats_brute_force(loss):
    for y in labels_for(loss):
        for _ in range(25):
            z = rng.normal(scale=2.0)
            A = float(rng.choice([0.0, 0.01, 0.3, 1.0, 7.0, 300.0]))
            if loss == "hinge" and A == 0.0:
                A = 0.5
            pts = interior_points(loss, y, None, k=9)
            a0 = float(rng.choice(pts))
            a = float(losses.dual_step(loss, y, z, a0, A))
            _, best, f = brute_step(loss, y, z, a0, A)
            assert np.isfinite(f(a))
            assert f(a) <= best + 1e-12 * (1 + abs(best)), (y, z, a0, A, a)


def test_exact_steps_for_smooth_hinge_large_smoothing_soft_labels():
    for g in [1.5, 4.0]:
        for y in [-0.3, 0.6]:
            for z, a0, A in [(0.2, 0.0, 1.0), (-2.0, 0.1, 0.5), (3.0, -0.1, 10.0), (0.0, 0.0, 0.0)]:
                a = float(losses.dual_step("smooth_hinge", y, z, a0, A, g))
                _, best, f = brute_step("smooth_hinge", y, z, a0, A, g)
                assert f(a) <= best + 1e-11


def test_logistic_step_is_accurate_near_the_bounds():
    """Well-classified rows have tiny duals; the Newton step in logit space keeps them exact."""
    for y in [1.0, -1.0]:
        z = 40.0 * y            # margin 40: the optimum a has |a| ~ exp(-40)
        a = float(losses.dual_step("logistic", y, z, 0.0, 0.0))
        assert a == pytest.approx(y * np.exp(-40.0) / (1 + np.exp(-40.0)), rel=1e-13)
        a = float(losses.dual_step("logistic", y, -40.0 * y, 0.0, 0.0))
        # misclassified: |a| = 1 - 4e-18 rounds to 1 in double, but stays inside the domain
        assert abs(a) <= 1.0 and abs(a) > 1 - 1e-15


def test_zero_row_steps_reach_alpha_diamond():
    """A = 0, z = 0 (an all-zero row): the exact step lands on alpha_diamond = -phi'(0; y)."""
    for loss in ["logistic", "squared_hinge", "smooth_hinge", "squared"]:
        for y in labels_for(loss):
            a = losses.dual_step(loss, y, 0.0, 0.0, 0.0)
            assert a == pytest.approx(-losses.derivative(loss, 0.0, y), abs=1e-14)


def test_huge_scores_do_not_overflow():
    s = np.array([-1e300, -800.0, 800.0, 1e300])
    for loss in ALL:
        v = losses.value(loss, s, 1.0)
        assert not np.isnan(v).any()
    assert np.isfinite(losses.value("logistic", s[1:3], 1.0)).all()
    assert np.isfinite(losses.derivative("logistic", s, 0.3)).all()
    a = losses.dual_step("logistic", 1.0, 1e6, 0.5, 100.0)
    assert 0.0 <= a <= 1.0


def test_strong_convexity_constants():
    """h'' >= gamma on the domain, checked by second differences."""
    for loss in ["logistic", "squared_hinge", "smooth_hinge", "squared"]:
        g = losses.strong_convexity(loss)
        for y in labels_for(loss):
            a = interior_points(loss, y, None, k=200)
            h = losses.conjugate(loss, a, y)
            d2 = np.diff(h, 2) / np.diff(a)[:-1] ** 2
            assert d2.min() >= g * (1 - 1e-5), (loss, y)
    assert losses.strong_convexity("hinge") == 0.0


def test_unknown_loss_and_bad_parameter():
    with pytest.raises(ValueError, match="unknown loss"):
        losses.value("hinge2", 0.0, 1.0)
    with pytest.raises(TypeError, match="loss"):
        losses.check_loss(3)
    with pytest.raises(ValueError, match="smooth_hinge parameter"):
        losses.check_loss("smooth_hinge", -1.0)


@pytest.mark.parametrize("loss", ALL + ["epsilon_insensitive"])
def test_threaded_elementwise_calls_give_the_same_values(loss):
    """A long array in threads (each entry its own): the same bits as one thread, for
    every entry point, broadcasting included; a short one takes one thread."""
    g = np.random.default_rng(3)
    n = 3 * losses._THREADS_MIN + 7
    s = g.normal(scale=3.0, size=n)
    y = g.normal(size=n) if loss in ("squared", "epsilon_insensitive") else np.sign(
        g.normal(size=n))
    lo, hi = losses.dual_bounds(loss, y)
    a = np.clip(g.normal(size=n), lo, hi)
    A = g.uniform(0.1, 5.0, size=n)
    for call in (lambda t: losses.value(loss, s, y, threads=t),
                 lambda t: losses.derivative(loss, s, y, threads=t),
                 lambda t: losses.conjugate(loss, a, y, threads=t),
                 lambda t: losses.dual_step(loss, y, s, a, A, threads=t),
                 lambda t: losses.dual_step(loss, y, 0.0, a, 2.0, threads=t),
                 lambda t: losses.value(loss, s[:100], y[:100], threads=t)):
        one, two = call(1), call(2)
        assert np.isfinite(one).all()
        np.testing.assert_array_equal(two, one)
