"""train_sdca's over-relaxed steps (``relaxation``) against independent optima."""
import numpy as np
import pytest

import dualsolve as ds
from dualsolve._warm_path import Along
from dualsolve.sdca.api import AUTO_RELAXATION, AUTO_RELAX_AFTER, WARM_RELAX_AFTER

QUADRATIC = ["hinge", "squared_hinge", "smooth_hinge", "squared"]


@pytest.mark.parametrize("loss", QUADRATIC)
@pytest.mark.parametrize("relaxation", ["auto", 1.0, 1.9])
def test_relaxed_solves_reach_the_independent_optimum(heart, references, loss, relaxation):
    """heart_scale at C = 100 (badly conditioned, hundreds of epochs): every setting
    certifies 1e-10 and its objective is the reference optimum's."""
    X, y = heart
    m = ds.train_sdca(X, y, loss=loss, C=100.0, tol=1e-10, max_epochs=100000,
                      relaxation=relaxation)
    assert m.converged
    lam = m.params["lam"]
    p_ref = references.optimum(X, y, lam, loss)
    assert references.primal(X, y, m.coef, lam, loss) == pytest.approx(p_ref, rel=1e-9)
    assert m.history["dual"][-1] <= p_ref * (1 + 1e-12)


@pytest.mark.parametrize("loss", QUADRATIC)
def test_relaxed_steps_never_lower_the_dual(heart, loss):
    """0 < r < 2 on a coordinate where the dual is a concave quadratic is still an ascent
    step (clipped to the domain): the exact dual of every epoch is non-decreasing."""
    X, y = heart
    m = ds.train_sdca(X, y, loss=loss, C=100.0, tol=0, max_epochs=60, check_every=1,
                      relaxation=1.95)
    d = m.history["dual"]
    assert np.isfinite(d).all() and d[-1] > d[1]
    assert (np.diff(d) >= -1e-13 * np.abs(d[1:])).all()


def test_auto_takes_exact_steps_for_the_first_epochs(heart):
    X, y = heart
    kw = dict(loss="squared_hinge", C=100.0, tol=0, seed=5)
    exact = ds.train_sdca(X, y, max_epochs=AUTO_RELAX_AFTER, relaxation=1.0, **kw)
    auto = ds.train_sdca(X, y, max_epochs=AUTO_RELAX_AFTER, relaxation="auto", **kw)
    np.testing.assert_array_equal(auto.dual, exact.dual)
    np.testing.assert_array_equal(auto.coef, exact.coef)
    exact = ds.train_sdca(X, y, max_epochs=AUTO_RELAX_AFTER + 1, relaxation=1.0, **kw)
    auto = ds.train_sdca(X, y, max_epochs=AUTO_RELAX_AFTER + 1, relaxation="auto", **kw)
    assert not np.array_equal(auto.dual, exact.dual)


def test_auto_relaxes_a_warm_start_sooner(heart):
    X, y = heart
    start = ds.train_sdca(X, y, loss="squared_hinge", C=50.0, max_epochs=30, tol=0)
    kw = dict(loss="squared_hinge", C=100.0, tol=0, warm_start=start)
    for epochs, same in ((WARM_RELAX_AFTER, True), (WARM_RELAX_AFTER + 1, False)):
        exact = ds.train_sdca(X, y, max_epochs=epochs, relaxation=1.0, **kw)
        auto = ds.train_sdca(X, y, max_epochs=epochs, **kw)
        assert np.array_equal(auto.dual, exact.dual) == same


def test_auto_relaxes_from_the_start_after_a_slow_neighbour(heart):
    """Along a path (the estimators' warm starts, regularization_path) a neighbour that ran
    past AUTO_RELAX_AFTER epochs makes "auto" relax from the first epoch; a faster one
    leaves the warm rule (exact steps for WARM_RELAX_AFTER epochs)."""
    X, y = heart
    kw = dict(loss="squared_hinge", C=100.0, tol=0)
    for before, relax_from_start in ((AUTO_RELAX_AFTER + 1, True), (AUTO_RELAX_AFTER, False)):
        neighbour = ds.train_sdca(X, y, loss="squared_hinge", C=50.0, tol=0,
                                  max_epochs=before)
        epochs = WARM_RELAX_AFTER
        auto = ds.train_sdca(X, y, max_epochs=epochs, warm_start=Along([neighbour]), **kw)
        other = ds.train_sdca(X, y, max_epochs=epochs, warm_start=Along([neighbour]),
                              relaxation=AUTO_RELAXATION if relax_from_start else 1.0, **kw)
        np.testing.assert_array_equal(auto.dual, other.dual)
        exact = ds.train_sdca(X, y, max_epochs=epochs, warm_start=Along([neighbour]),
                              relaxation=1.0, **kw)
        assert np.array_equal(auto.dual, exact.dual) != relax_from_start


@pytest.mark.parametrize("loss, C", [("hinge", 1.0), ("squared_hinge", 10.0)])
def test_relaxation_shortens_a_badly_conditioned_solve(heart, loss, C):
    """heart_scale's 13 correlated features: exact SDCA needs 1,500-1,600 epochs for 1e-8
    here, the auto relaxation about 1,000 (liblinear's loop: no focused passes, which
    take both to about 550 epochs)."""
    X, y = heart
    kw = dict(loss=loss, C=C, tol=1e-8, max_epochs=100000, focus=0.0)
    exact = ds.train_sdca(X, y, relaxation=1.0, **kw)
    auto = ds.train_sdca(X, y, **kw)
    assert exact.converged and auto.converged
    assert auto.n_epochs < 0.8 * exact.n_epochs


def test_weighted_rows_stay_in_their_dual_box(heart, references):
    """Hinge with row weights c_i: the relaxed step is clipped to [0, c_i] (in y a)."""
    X, y = heart
    c = np.random.default_rng(0).uniform(0.2, 3.0, size=y.size)
    m = ds.train_sdca(X, y, loss="hinge", C=1.0, tol=1e-10, max_epochs=100000,
                      sample_weight=c, relaxation=1.9)
    e = ds.train_sdca(X, y, loss="hinge", C=1.0, tol=1e-10, max_epochs=100000,
                      sample_weight=c, relaxation=1.0)
    assert m.converged and e.converged
    ya = y * m.dual
    assert ya.min() >= 0 and (ya <= c * (1 + 1e-15)).all()
    assert m.history["primal"][-1] == pytest.approx(e.history["primal"][-1], rel=1e-9)


@pytest.mark.parametrize("bad", [0.0, 2.0, -1.0, 2.5, "fast", float("nan")])
def test_relaxation_out_of_range_is_a_clear_error(heart, bad):
    X, y = heart
    with pytest.raises((ValueError, TypeError), match="relaxation"):
        ds.train_sdca(X, y, loss="hinge", relaxation=bad)


def test_relaxation_applies_only_where_the_conjugate_is_quadratic(heart, three_classes):
    X, y = heart
    for loss in ("logistic", "epsilon_insensitive", "squared_epsilon_insensitive"):
        ds.train_sdca(X, y, loss=loss, relaxation="auto", max_epochs=3, tol=0)
        ds.train_sdca(X, y, loss=loss, relaxation=1.0, max_epochs=3, tol=0)
        with pytest.raises(ValueError, match="relaxation"):
            ds.train_sdca(X, y, loss=loss, relaxation=1.5)
    X3, y3 = three_classes
    with pytest.raises(ValueError, match="relaxation"):
        ds.train_sdca(X3, y3, loss="hinge", multi_class="crammer_singer", relaxation=1.5)
