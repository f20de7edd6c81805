"""AUC family, part 3: the SOLAM baseline (Ying, Wen & Lyu 2016) against a dense NumPy twin
replaying the same samples and against the exact optimum; its certificate."""
import importlib.util
import pathlib
import warnings

import numpy as np
import pytest

from dualsolve.auc import train_solam, auc_score, auc_surrogate_optimum

_spec = importlib.util.spec_from_file_location(
    "dualsolve_tests_auc_twins", pathlib.Path(__file__).parent / "helpers" / "auc_twins.py")
twins = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(twins)
grads_np, random_csr, gaussian_problem = twins.grads_np, twins.random_csr, twins.gaussian_problem


def quiet(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args, **kw)


def solam_twin(X, y, trace, zeta, R, lam=0.0):
    Xd = np.asarray(X.toarray(), dtype=np.float64)
    kR = R * np.sqrt((Xd ** 2).sum(1).max())
    w, a, b, al, p = np.zeros(Xd.shape[1]), 0.0, 0.0, 0.0, 0.0
    Sw, sa, sb, sal, gbar = np.zeros_like(w), 0.0, 0.0, 0.0, 0.0
    for t, i in enumerate(trace, 1):
        p = ((t - 1) * p + float(y[i] > 0)) / t
        g = zeta / np.sqrt(t)
        c, ga, gb, gal = grads_np(Xd[i] @ w, y[i], a, b, al, p, p * (1 - p))
        gbar += g
        Sw += g * w
        sa, sb, sal = sa + g * a, sb + g * b, sal + g * al
        w = (1.0 - g * lam) * w - g * c * Xd[i]
        nrm = np.linalg.norm(w)
        if nrm > R:
            w *= R / nrm
        a = min(max(a - g * ga, -kR), kR)
        b = min(max(b - g * gb, -kR), kR)
        al = min(max(al + g * gal, -2 * kR), 2 * kR)
    return Sw / gbar, sa / gbar, sb / gbar, sal / gbar, p


@pytest.mark.parametrize("zeta,R,lam", [(0.5, 100.0, 0.0), (0.5, 0.3, 0.0), (30.0, 1e-4, 0.0),
                                        (0.5, 100.0, 0.05), (1.0, 0.3, 0.5)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lazy_equals_dense_twin(zeta, R, lam, dtype):
    # (30, 1e-4): the projection shrinks sigma below 1e-9, so z is renormalised; (1, 0.3,
    # 0.5): the L2 shrink and the projection both rescale sigma
    X, y = random_csr(8, dtype=dtype)
    n = X.shape[0]
    w_run, r, drawn = twins.run_solam(X, y, zeta=zeta, R=R, lam=lam, max_epochs=3, seed=4)
    assert len(drawn) == 3 * n == r["n_steps"]
    w, a, b, al, p = solam_twin(X, np.where(y > 0, 1.0, -1.0), drawn, zeta, R, lam)
    assert np.abs(w).max() > 0
    assert np.linalg.norm(w_run) <= R * (1 + 1e-12)
    scale = max(1e-300, np.abs(w).max())
    assert np.abs(w_run - w).max() <= 1e-9 * scale
    for got, want in [(r["a"], a), (r["b"], b), (r["alpha"], al)]:
        assert abs(got - want) <= 1e-9 * max(abs(want), 1e-300)
    assert r["p_hat"] == pytest.approx(p, rel=1e-14)
    assert r["n_epochs"] == 3
    # the public call runs the same engine
    m = quiet(train_solam, X, y, step=zeta, R=R, lam=lam, max_epochs=3, tol=0.0, seed=4)
    np.testing.assert_array_equal(m.coef, w_run)
    assert m.n_epochs == 3 and len(m.history) == 4


def test_solam_auc_near_oracle():
    X, y = gaussian_problem(0, 4000)
    Xt, yt = gaussian_problem(1, 20000)
    o = auc_surrogate_optimum(X, y, 1e-4)
    # SOLAM as published (no L2 term), 5 epochs
    m = quiet(train_solam, X, y, step=0.1, R=10.0, lam=0.0, max_epochs=5, tol=0.0, seed=0,
              eval_set=(Xt, yt))
    assert m.history["val_auc"][-1] >= auc_score(yt, Xt @ o.coef) - 0.01
    # the defaults (the oracle's lam): a data-scaled step, the ball that holds the optimum
    md = quiet(train_solam, X, y, lam=1e-4, eval_set=(Xt, yt))
    assert md.params["R"] == pytest.approx(np.sqrt(2 * 0.1 * 0.9 / 1e-4), rel=0.1)
    assert md.history["val_auc"][-1] >= auc_score(yt, Xt @ o.coef) - 0.01


def test_solam_errors_and_determinism():
    X, y = random_csr(9, n=80, d=6)
    with pytest.raises(ValueError, match="y has one class only"):
        train_solam(X, np.zeros(80))
    with pytest.raises(ValueError, match="step must be None or a real number in \\(0, inf\\)"):
        train_solam(X, y, step=0)
    with pytest.raises(ValueError, match="R must be None or a real number in \\(0, inf\\)"):
        train_solam(X, y, R=-1.0)
    with pytest.raises(ValueError, match="step \\* lam"):
        train_solam(X, y, step=10.0, lam=0.5)
    with pytest.raises(TypeError, match="zeta"):
        train_solam(X, y, zeta=1.0)                    # the step is step
    with pytest.raises(TypeError, match="n_epochs"):
        train_solam(X, y, n_epochs=5)                  # the budget is max_epochs
    np.testing.assert_array_equal(quiet(train_solam, X, y, seed=1).coef,
                                  quiet(train_solam, X, y > 0, seed=1).coef)
