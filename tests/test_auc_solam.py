"""AUC family, part 3: the SOLAM baseline (spec seed2 sections 2.5, 3.4; tests T4, T5)
against a dense NumPy twin replaying the same samples and against the exact optimum."""
import importlib.util
import pathlib

import numpy as np
import pytest

from dualsolve.auc import train_solam, auc_score, auc_surrogate_optimum

_spec = importlib.util.spec_from_file_location(
    "dualsolve_tests_auc_twins", pathlib.Path(__file__).parent / "helpers" / "auc_twins.py")
twins = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(twins)
grads_np, random_csr, gaussian_problem = twins.grads_np, twins.random_csr, twins.gaussian_problem


def solam_twin(X, y, trace, zeta, R):
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
        w = w - g * c * Xd[i]
        nrm = np.linalg.norm(w)
        if nrm > R:
            w *= R / nrm
        a = min(max(a - g * ga, -kR), kR)
        b = min(max(b - g * gb, -kR), kR)
        al = min(max(al + g * gal, -2 * kR), 2 * kR)
    return Sw / gbar, sa / gbar, sb / gbar, sal / gbar, p


@pytest.mark.parametrize("zeta,R", [(0.5, 100.0), (0.5, 0.3), (30.0, 1e-4)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lazy_equals_dense_twin(zeta, R, dtype):
    # (30, 1e-4): the projection shrinks sigma below 1e-9, so z is renormalised
    X, y = random_csr(8, dtype=dtype)
    n = X.shape[0]
    trace = np.full(3 * n, -1, dtype=np.intp)
    m = train_solam(X, y, zeta=zeta, R=R, n_epochs=3, seed=4, _trace=trace)
    assert (trace >= 0).all()
    w, a, b, al, p = solam_twin(X, np.where(y > 0, 1.0, -1.0), trace, zeta, R)
    assert np.abs(w).max() > 0
    assert np.linalg.norm(m.coef) <= R * (1 + 1e-12)
    scale = max(1e-300, np.abs(w).max())
    assert np.abs(m.coef - w).max() <= 1e-9 * scale
    for got, want in [(m.params["a"], a), (m.params["b"], b), (m.params["alpha"], al)]:
        assert abs(got - want) <= 1e-9 * max(abs(want), 1e-300)
    assert m.params["p_used"] == pytest.approx(p, rel=1e-14)
    assert m.n_epochs == 3 and len(m.history) == 4


def test_solam_auc_near_oracle_T5():
    X, y = gaussian_problem(0, 4000)
    Xt, yt = gaussian_problem(1, 20000)
    o = auc_surrogate_optimum(X, y, 1e-4)
    m = train_solam(X, y, zeta=0.1, R=10.0, n_epochs=5, seed=0, eval_set=(Xt, yt))
    assert m.history["val_auc"][-1] >= auc_score(yt, Xt @ o.coef) - 0.01


def test_solam_errors_and_determinism():
    X, y = random_csr(9, n=80, d=6)
    with pytest.raises(ValueError, match="y has a single class"):
        train_solam(X, np.zeros(80))
    with pytest.raises(ValueError, match="zeta must be > 0"):
        train_solam(X, y, zeta=0)
    with pytest.raises(ValueError, match="R must be > 0"):
        train_solam(X, y, R=-1.0)
    np.testing.assert_array_equal(train_solam(X, y, seed=1).coef,
                                  train_solam(X, y > 0, seed=1).coef)
