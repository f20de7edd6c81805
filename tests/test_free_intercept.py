"""train_sdca(fit_intercept=True, penalize_intercept=False): the exact optimum with a free
intercept, against scikit-learn and L-BFGS, with a certificate that bounds the error."""
import numpy as np
import pytest
import scipy.optimize as so

import dualsolve as ds
from dualsolve._core import losses as _losses

FREE = dict(fit_intercept=True, penalize_intercept=False)


@pytest.fixture(scope="module")
def heart():
    return ds.datasets.load("heart_scale")


def objective(X, y, w, b, lam, loss, param=None, c=None):
    n = X.shape[0]
    c = np.ones(n) if c is None else c
    yy = np.where(y > 0, 1.0, -1.0) if loss != "squared" else y
    return (np.sum(c * _losses.value(loss, X @ w + b, yy, param)) / n + 0.5 * lam * w @ w)


def lbfgs_optimum(X, y, lam, loss, param=None, c=None):
    n, d = X.shape
    c = np.ones(n) if c is None else c
    yy = np.where(y > 0, 1.0, -1.0) if loss != "squared" else y

    def f(v):
        w, b = v[:d], v[d]
        z = X @ w + b
        g = c * _losses.derivative(loss, z, yy, param) / n
        return (np.sum(c * _losses.value(loss, z, yy, param)) / n + 0.5 * lam * w @ w,
                np.r_[X.T @ g + lam * w, np.sum(g)])

    r = so.minimize(f, np.zeros(d + 1), jac=True, method="L-BFGS-B",
                    options=dict(maxiter=100000, ftol=1e-16, gtol=1e-12))
    return r.fun


def test_matches_scikit_learn_on_a9a():
    linear_model = pytest.importorskip("sklearn.linear_model")
    X, y = ds.datasets.load("a9a")
    n = X.shape[0]
    m = ds.train_sdca(X, y, loss="logistic", C=1.0, tol=1e-10, **FREE)
    assert m.converged and m.history["gap"][-1] <= 1e-10 * m.history["dual"][-1]
    lr = linear_model.LogisticRegression(C=1.0, tol=1e-10, max_iter=100000).fit(X, y)
    ours = objective(X, y, m.coef, m.intercept, 1 / n, "logistic")
    theirs = objective(X, y, lr.coef_.ravel(), lr.intercept_[0], 1 / n, "logistic")
    assert abs(ours - theirs) <= 1e-8 * theirs
    assert m.intercept == pytest.approx(lr.intercept_[0], abs=1e-3)   # a flat direction


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "smooth_hinge", "squared"])
def test_certified_optimum_against_lbfgs(heart, loss):
    X, y = heart
    if loss == "squared":
        y = y * 2.0 + 3.0                  # a target whose mean the intercept must carry
    lam = 0.1 / X.shape[0]
    # tol is relative to P*: 1e-12 of P* is below the rounding level (~1e-11) the joint
    # certificate's sums reach here; 1e-10 is above it (and within the 1e-9 checked below)
    m = ds.train_sdca(X, y, loss=loss, lam=lam, tol=1e-10, max_epochs=100000, **FREE)
    param = m.params["loss_param"]
    assert m.converged
    p_star = lbfgs_optimum(X, y, lam, loss, param)
    p = objective(X, y, m.coef, m.intercept, lam, loss, param)
    gap = m.history["gap"][-1]
    assert p - p_star <= gap + 1e-14                # the certificate bounds the error
    assert abs(p - p_star) <= 1e-9 * abs(p_star) + 1e-14


def test_weights_and_the_free_intercept(heart):
    X, y = heart
    sw = np.random.default_rng(0).integers(0, 4, X.shape[0]).astype(float)
    lam = 1.0 / X.shape[0]
    m = ds.train_sdca(X, y, lam=lam, tol=1e-12, sample_weight=sw, **FREE)
    p_star = lbfgs_optimum(X, y, lam, "logistic", c=sw)
    assert objective(X, y, m.coef, m.intercept, lam, "logistic", c=sw) == \
        pytest.approx(p_star, rel=1e-9)


def test_differs_from_the_penalised_intercept(heart):
    X, y = heart
    lam = 10.0 / X.shape[0]                           # strong: the penalty shows
    free = ds.train_sdca(X, y, lam=lam, tol=1e-10, **FREE)
    pen = ds.train_sdca(X, y, lam=lam, tol=1e-10, fit_intercept=True)
    assert objective(X, y, free.coef, free.intercept, lam, "logistic") < \
        objective(X, y, pen.coef, pen.intercept, lam, "logistic") - 1e-6


def test_warm_start_callback_and_budget(heart):
    X, y = heart
    m = ds.train_sdca(X, y, tol=1e-8, **FREE)
    again = ds.train_sdca(X, y, tol=1e-3, warm_start=m, **FREE)
    assert again.converged and again.n_epochs <= 2
    stop = ds.train_sdca(X, y, tol=1e-12, callback=lambda info: info["epoch"] == 2, **FREE)
    assert stop.stop_reason == "callback" and stop.n_epochs == 2
    with pytest.warns(ds.ConvergenceWarning, match="max_epochs=3"):
        short = ds.train_sdca(X, y, tol=1e-14, max_epochs=3, **FREE)
    assert short.stop_reason == "max_epochs" and short.n_epochs == 3


def test_one_vs_rest_has_free_intercepts(heart):
    X, y = heart
    y3 = np.where(np.asarray(X[:, 0].todense()).ravel() > 0.3, 2.0, y)
    m = ds.train_sdca(X, y3, tol=1e-8, **FREE)
    assert m.intercept.shape == (3,) and m.converged


@pytest.mark.parametrize("loss", ["hinge", "epsilon_insensitive"])
def test_nonsmooth_losses_are_refused(heart, loss):
    X, y = heart
    with pytest.raises(ValueError, match="penalize_intercept=False needs a smooth loss"):
        ds.train_sdca(X, y, loss=loss, **FREE)
