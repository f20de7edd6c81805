"""Prox-SVRG and Katyusha (the primal baselines of Wang & Xiao 2017's figures).

1. The lazy O(nnz) loops equal dense NumPy twins of the papers' iterations, iterate by
   iterate, with the same row stream (``dualsolve._core.rng.uniform_draws``).
2. The solvers reach P - P* <= 1e-10 against independent optima: a direct solve (ridge),
   scipy's L-BFGS(-B) (logistic, smoothed hinge, elastic net, Lasso); their duality gap
   (the certificate they stop on) bounds P - P* and equals a NumPy evaluation of the
   Fenchel dual at phi'(X x).
3. Inputs (float32 data, int64 indices, labels), bad inputs, history, stopping, callback.

The twins use NumPy only (no dualsolve code besides the row stream).
"""
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp

from dualsolve._core import status as _status
import dualsolve as ds
from dualsolve._core.rng import uniform_draws
from dualsolve.primal_dual import baselines
from dualsolve.primal_dual.baselines import train_katyusha, train_svrg


# ---------------------------------------------------------------------------------------
# NumPy twins


def soft(w, t):
    return np.sign(w) * np.maximum(np.abs(w) - t, 0.0)


def dphi(loss, s, b):
    if loss == "squared":
        return s - b
    return -b / (1.0 + np.exp(b * s))                  # logistic, b in {-1, +1}


def svrg_twin(A, b, loss, lam, l1, eta, m, epochs, idx):
    """Prox-SVRG, dense: every coordinate every step. Returns the iterate after every step
    (steps, d), the snapshots, and the number of untouched steps that moved a coordinate
    between the pieces of the soft threshold (to zero / off zero)."""
    n, d = A.shape
    x = np.zeros(d)
    xs = x.copy()
    trace, snaps, crossings = [], [], 0
    for e in range(epochs):
        gs = dphi(loss, A @ xs, b)
        mu = A.T @ gs / n
        for r in range(m):
            i = idx[e * m + r]
            g = dphi(loss, A[i] @ x, b[i]) - gs[i]
            xn = soft(x - eta * (mu + g * A[i]), eta * l1) / (1.0 + eta * lam)
            off = A[i] == 0
            crossings += np.sum(off & ((x == 0) != (xn == 0)))
            x = xn
            trace.append(x.copy())
        xs = x.copy()
        snaps.append(xs)
    return np.array(trace), np.array(snaps), crossings


def katyusha_twin(A, b, loss, lam, l1, step, tau1, option, m, epochs, idx):
    """Katyusha (Allen-Zhu 2017, Algorithm 1) as printed, dense; the snapshot is the
    weighted average sum_j (1 + alpha sigma)^j y_(j+1) / sum_j (1 + alpha sigma)^j."""
    n, d = A.shape
    tau2, alpha = 0.5, step / tau1
    w = 1.0 + alpha * lam
    y, z, xs = np.zeros(d), np.zeros(d), np.zeros(d)
    trace_z, trace_y, snaps, crossings = [], [], [], 0
    for e in range(epochs):
        gs = dphi(loss, A @ xs, b)
        mu = A.T @ gs / n
        num, den = np.zeros(d), 0.0
        for j in range(m):
            i = idx[e * m + j]
            x = tau1 * z + tau2 * xs + (1.0 - tau1 - tau2) * y
            g = mu + (dphi(loss, A[i] @ x, b[i]) - gs[i]) * A[i]
            zn = soft(z - alpha * g, alpha * l1) / (1.0 + alpha * lam)
            if option == 1:
                yn = soft(x - step * g, step * l1) / (1.0 + step * lam)
            else:
                yn = x + tau1 * (zn - z)
            off = A[i] == 0
            crossings += np.sum(off & ((z == 0) != (zn == 0)))
            z, y = zn, yn
            num += w ** j * y
            den += w ** j
            trace_z.append(z.copy())
            trace_y.append(y.copy())
        xs = num / den
        snaps.append(xs)
    return np.array(trace_z), np.array(trace_y), np.array(snaps), crossings


def lazy_run(X, b, loss, lam, l1, method, step, m, epochs, seed, tau1=0.0, option=0,
             table_max=1 << 16):
    """The solver's own loop, recording the materialised iterate after every step without
    flushing: (steps, k, d) with k = 1 (x) or 2 (z, y)."""
    n, d = X.shape
    k = 2 if method == 1 else 1
    trace = np.full(epochs * m * k * d, np.nan)
    kw = dict(loss=loss, lam=lam, l1=l1, step=step, steps_per_epoch=m, tol=0.0,
              max_epochs=epochs, seed=seed)
    if method == 1:
        kw.update(tau1=tau1, option={1: "I", 2: "II"}[option])
    model = baselines.run_traced("train_katyusha" if method == 1 else "train_svrg", X, b,
                                 trace=trace, table_max=table_max, **kw)
    assert model.n_epochs == epochs
    return trace.reshape(epochs * m, k, d), model.coef, model.history["primal"]


@pytest.fixture(scope="module")
def sparse_problem():
    """300 x 1500 at 1% density (each feature is touched every ~100 steps, so catch-ups
    span long gaps), rows scaled to max norm 1, with an empty row and empty columns."""
    rng = np.random.default_rng(3)
    n, d = 300, 1500
    X = sp.random(n, d, density=0.01, random_state=4, format="lil")
    X[7, :] = 0
    X[:, 11] = 0
    X = sp.csr_matrix(X)
    X.data = rng.standard_normal(X.nnz)
    X = sp.csr_matrix(X.multiply(1.0 / np.sqrt(X.multiply(X).sum(1).max())))
    X.eliminate_zeros()
    assert X.getnnz(axis=1).min() == 0 and X.getnnz(axis=0).min() == 0
    b = {"squared": X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n),
         "logistic": np.where(rng.random(n) < 0.5, -1.0, 1.0)}
    return X, b


REGS = {"L2": (1e-2, 0.0), "EN": (1e-2, 5e-4), "L1": (0.0, 5e-4)}


def _close(a, b, tol=1e-12):
    scale = max(1.0, float(np.abs(b).max()))
    return float(np.abs(a - b).max()) <= tol * scale


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("reg", list(REGS))
def test_svrg_lazy_equals_dense_twin(sparse_problem, loss, reg):
    X, bs = sparse_problem
    b = bs[loss]
    lam, l1 = REGS[reg]
    n = X.shape[0]
    epochs, m, seed, eta = 3, 2 * n, 5, 0.5
    idx = uniform_draws(seed, n, epochs * m // n).ravel()
    tr, coef, primal = lazy_run(X, b, loss, lam, l1, 0, eta, m, epochs, seed)
    tw, snaps, crossings = svrg_twin(X.toarray(), b, loss, lam, l1, eta, m, epochs, idx)
    assert np.isfinite(tr).all()
    assert _close(tr[:, 0], tw)                      # every step, untouched features lazily
    assert _close(coef, snaps[-1])
    if l1 > 0:
        assert crossings > 50                        # the piece walk was exercised
        assert (coef == 0).sum() > 100               # and the solution is sparse
    # the history's primal is the objective of each snapshot
    A = X.toarray()
    z = A @ snaps[-1]
    loss_v = 0.5 * (z - b) ** 2 if loss == "squared" else np.logaddexp(0, -b * z)
    p = loss_v.mean() + lam / 2 * snaps[-1] @ snaps[-1] + l1 * np.abs(snaps[-1]).sum()
    assert primal[-1] == pytest.approx(p, rel=1e-12)


@pytest.mark.parametrize("option", [1, 2])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("reg", list(REGS))
def test_katyusha_lazy_equals_dense_twin(sparse_problem, option, loss, reg):
    X, bs = sparse_problem
    b = bs[loss]
    lam, l1 = REGS[reg]
    n = X.shape[0]
    epochs, m, seed, step, tau1 = 3, n, 9, 0.25, 0.3
    idx = uniform_draws(seed, n, epochs * m // n).ravel()
    tr, coef, _ = lazy_run(X, b, loss, lam, l1, 1, step, m, epochs, seed, tau1, option)
    tz, ty, snaps, crossings = katyusha_twin(X.toarray(), b, loss, lam, l1, step, tau1,
                                             option, m, epochs, idx)
    assert np.isfinite(tr).all()
    assert _close(tr[:, 0], tz)
    assert _close(tr[:, 1], ty)
    assert _close(coef, snaps[-1])
    if l1 > 0:
        assert crossings > 50


@pytest.mark.parametrize("method", [0, 1])
def test_mid_epoch_flushes_and_long_epochs(sparse_problem, method):
    """Catch-up tables shorter than the epoch (a flush every 7 steps) give the same
    iterates as one table for the whole epoch, and as the twin (elastic net, logistic)."""
    X, bs = sparse_problem
    b = bs["logistic"]
    n = X.shape[0]
    lam, l1 = REGS["EN"]
    epochs, m, seed = 2, 2 * n + 13, 1
    idx = uniform_draws(seed, n, 6).ravel()
    kw = dict(tau1=0.2, option=2) if method == 1 else {}
    step = 0.2 if method == 1 else 0.5
    tr_long, coef_long, _ = lazy_run(X, b, "logistic", lam, l1, method, step, m, epochs, seed, **kw)
    tr_short, coef_short, _ = lazy_run(X, b, "logistic", lam, l1, method, step, m, epochs, seed,
                                       table_max=7, **kw)
    assert _close(tr_short, tr_long, 1e-13)
    if method == 0:
        tw, snaps, _ = svrg_twin(X.toarray(), b, "logistic", lam, l1, step, m, epochs, idx)
        assert _close(tr_long[:, 0], tw)
    else:
        tz, ty, snaps, _ = katyusha_twin(X.toarray(), b, "logistic", lam, l1, step, 0.2, 2, m,
                                         epochs, idx)
        assert _close(tr_long[:, 0], tz) and _close(tr_long[:, 1], ty)
    assert _close(coef_long, snaps[-1]) and _close(coef_short, snaps[-1])


def test_row_stream_is_the_documented_one(sparse_problem):
    """train_svrg's rows are rng.uniform_draws(seed, n, .): its coef equals the twin's."""
    X, bs = sparse_problem
    b = bs["squared"]
    n = X.shape[0]
    m = train_svrg(X, b, loss="squared", lam=1e-2, step=0.5, steps_per_epoch=n, max_epochs=2,
                   tol=0, seed=123)
    _, snaps, _ = svrg_twin(X.toarray(), b, "squared", 1e-2, 0.0, 0.5, n, 2,
                            uniform_draws(123, n, 2).ravel())
    assert _close(m.coef, snaps[-1])


# ---------------------------------------------------------------------------------------
# Convergence against independent optima


@pytest.fixture(scope="module")
def kin8nm():
    X, y = ds.datasets.load("kin8nm", dense=True)
    X = (X - X.mean(0)) / X.std(0)
    return sp.csr_matrix(X), (y - y.mean()) / y.std()


@pytest.fixture(scope="module")
def a9a_small(a9a):
    X, y = a9a
    return X[:3000], y[:3000]


def p_value(X, y, w, loss, lam, l1, smoothing=0.5):
    z = X @ w
    if loss == "squared":
        v = 0.5 * (z - y) ** 2
    elif loss == "logistic":
        v = np.logaddexp(0.0, -y * z)
    else:
        m, g = y * z, smoothing
        v = np.where(m >= 1, 0.0, np.where(m < 1 - g, 1 - m - g / 2, (1 - m) ** 2 / (2 * g)))
    return v.mean() + lam / 2 * w @ w + l1 * np.abs(w).sum()


def lbfgsb_l1(X, y, loss, lam, l1):
    """P* with an L1 term: L-BFGS-B on x = p - q, p, q >= 0 (smooth, bound-constrained)."""
    n, d = X.shape

    def f(pq):
        w = pq[:d] - pq[d:]
        z = X @ w
        if loss == "squared":
            v, dz = 0.5 * (z - y) ** 2, z - y
        else:
            v, dz = np.logaddexp(0.0, -y * z), -y / (1.0 + np.exp(y * z))
        g = X.T @ dz / n + lam * w
        val = v.mean() + lam / 2 * w @ w + l1 * pq.sum()
        return val, np.concatenate([g + l1, -g + l1])

    r = so.minimize(f, np.zeros(2 * d), jac=True, method="L-BFGS-B", bounds=[(0, None)] * (2 * d),
                    options=dict(ftol=1e-16, gtol=1e-13, maxiter=100000, maxcor=50))
    return r.fun


@pytest.mark.parametrize("solver", [train_svrg, train_katyusha])
@pytest.mark.parametrize("lam", [1e-3, 1e-5])
def test_ridge_kin8nm_matches_direct_solve(kin8nm, references, solver, lam):
    X, y = kin8nm
    p_ref, w_ref = references.ridge(X, y, lam)
    m = solver(X, y, loss="squared", lam=lam, tol=1e-14, max_epochs=200)
    assert m.converged
    p = m.history["primal"][-1]
    assert p == pytest.approx(references.primal(X, y, m.coef, lam, "squared"), rel=1e-13)
    assert p - p_ref <= 1e-10
    assert np.abs(m.coef - w_ref).max() <= 1e-5


@pytest.mark.parametrize("solver", [train_svrg, train_katyusha])
@pytest.mark.parametrize("loss", ["logistic", "smooth_hinge"])
def test_heart_matches_lbfgs(heart, references, solver, loss):
    X, y = heart
    lam = 1e-3
    p_ref, _ = references.lbfgs(X, y, lam, loss)
    m = solver(X, y, loss=loss, lam=lam, tol=1e-14, max_epochs=3000)
    assert m.converged
    assert m.history["primal"][-1] - p_ref <= 1e-10
    assert m.history["primal"][-1] - p_ref >= -1e-12


@pytest.mark.parametrize("solver,kw", [(train_svrg, {}), (train_katyusha, {}),
                                       (train_katyusha, dict(option="I"))])
def test_elastic_net_logistic_matches_lbfgsb(heart, solver, kw):
    X, y = heart
    lam, l1 = 1e-3, 5e-3
    p_ref = lbfgsb_l1(X, y, "logistic", lam, l1)
    m = solver(X, y, loss="logistic", lam=lam, l1=l1, tol=1e-14, max_epochs=3000, **kw)
    if solver is train_katyusha:
        assert m.params["option"] == kw.get("option", "II")      # the default with l1 > 0
    assert m.converged
    p = m.history["primal"][-1]
    assert p == pytest.approx(p_value(X, y, m.coef, "logistic", lam, l1), rel=1e-13)
    assert abs(p - p_ref) <= 1e-10
    if solver is train_svrg:
        # the snapshot is a prox output: exact zeros (Katyusha's is an average of iterates)
        assert 0 < (m.coef == 0).sum() < X.shape[1]


def test_lasso_kin8nm_matches_lbfgsb(kin8nm):
    """lam = 0: P is strongly convex from the data alone (n >> d); SVRG needs no parameter
    for it."""
    X, y = kin8nm
    l1 = 0.1
    p_ref = lbfgsb_l1(X.toarray(), y, "squared", 0.0, l1)
    m = train_svrg(X, y, loss="squared", lam=0.0, l1=l1, tol=1e-14, max_epochs=300)
    assert m.converged
    assert abs(m.history["primal"][-1] - p_ref) <= 1e-10
    assert (m.coef == 0).any()


@pytest.mark.parametrize("solver", [train_svrg, train_katyusha])
def test_a9a_subset_logistic_matches_lbfgs(a9a_small, references, solver):
    X, y = a9a_small
    lam = 1e-4
    p_ref, _ = references.lbfgs(X, y, lam, "logistic")
    m = solver(X, y, loss="logistic", lam=lam, tol=1e-12, max_epochs=500)
    assert m.converged       # the gap certifies P - P* <= 1e-12 P(0)
    assert m.history["primal"][-1] - p_ref <= 1e-10
    # per-epoch passes: the snapshot plus 2n steps
    np.testing.assert_allclose(np.diff(m.history["passes"]), 3.0)


def test_katyusha_lam0_needs_tau1_and_then_runs(kin8nm):
    X, y = kin8nm
    with pytest.raises(ValueError, match="tau1"):
        train_katyusha(X, y, lam=0.0, l1=1e-2)
    # tol is relative to P*: 1e-12 of it is met within the budget (1e-13 needs more)
    m = train_katyusha(X, y, lam=0.0, l1=1e-2, tau1=0.5, tol=1e-12, max_epochs=300)
    assert m.converged
    p_ref = lbfgsb_l1(X.toarray(), y, "squared", 0.0, 1e-2)
    assert abs(m.history["primal"][-1] - p_ref) <= 1e-9


# ---------------------------------------------------------------------------------------
# Inputs, history, stopping


@pytest.mark.parametrize("solver", [train_svrg, train_katyusha])
def test_float32_and_int64_inputs(heart, solver):
    X, y = heart
    X = sp.csr_matrix(X)
    kw = dict(loss="logistic", lam=1e-2, l1=1e-3, max_epochs=5, tol=0, seed=3)
    ref = solver(X, y, **kw)
    X64 = X.copy()
    X64.indices = X64.indices.astype(np.int64)
    X64.indptr = X64.indptr.astype(np.int64)
    np.testing.assert_array_equal(solver(X64, y, **kw).coef, ref.coef)
    X32 = X.astype(np.float32)
    m32 = solver(X32, y, **kw)
    np.testing.assert_array_equal(m32.coef, solver(X32.astype(np.float64), y, **kw).coef)
    assert np.abs(m32.coef - ref.coef).max() < 1e-5
    # dense input, CSC, and {0, 1} labels give the same model
    np.testing.assert_array_equal(solver(X.toarray(), y, **kw).coef, ref.coef)
    np.testing.assert_array_equal(solver(X.tocsc(), (y > 0).astype(int), **kw).coef, ref.coef)


def dual_value(X, y, w, loss, lam, l1):
    """D(phi'(X w)) of the Fenchel dual, in NumPy (logistic or squared loss): the dual point
    the solvers certify with, y_i = phi'(a_i.w), u = X^T y / n."""
    n = X.shape[0]
    z = X @ w
    g = dphi(loss, z, y)
    if loss == "squared":
        conj = 0.5 * g * g + y * g                      # phi*(g; y) for (s - y)^2 / 2
    else:
        p = -y * g                                      # in [0, 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            conj = np.where(p > 0, p * np.log(p), 0.0) + np.where(p < 1, (1 - p) * np.log1p(-p), 0.0)
    u = X.T @ g / n
    return -conj.mean() - np.sum(soft(-u, l1) ** 2) / (2 * lam)


@pytest.mark.parametrize("solver", [train_svrg, train_katyusha])
@pytest.mark.parametrize("l1", [0.0, 1e-3])
def test_the_gap_is_the_fenchel_dual_at_the_loss_derivatives(heart, references, solver, l1):
    """The history's dual is D(phi'(X xs)) computed independently, and the gap it gives
    bounds P - P* at every epoch (weak duality), down to the certificate at the end."""
    X, y = heart
    lam = 1e-2
    p_ref = references.lbfgs(X, y, lam, "logistic")[0] if l1 == 0 else \
        lbfgsb_l1(X.toarray(), y, "logistic", lam, l1)
    seen = []
    m = solver(X, y, loss="logistic", lam=lam, l1=l1, tol=1e-10, max_epochs=500,
               callback=lambda info: seen.append(info["coef"].copy()) and False)
    assert m.converged
    h = m.history
    for k in (0, 1, len(h) - 1):
        d_ref = dual_value(X, y, seen[k], "logistic", lam, l1)
        assert h["dual"][k] == pytest.approx(d_ref, rel=1e-12, abs=1e-14)
        assert h["primal"][k] == pytest.approx(p_value(X, y, seen[k], "logistic", lam, l1),
                                               rel=1e-13)
    assert np.all(h["gap"] >= h["primal"] - p_ref - 1e-13)
    np.testing.assert_allclose(h["gap"], h["primal"] - h["dual"], rtol=1e-9, atol=1e-15)
    np.testing.assert_array_equal(h["measure"], h["gap"])
    # the one rule: gap <= tol * (P - gap), the first row where it holds
    assert 0 <= h["gap"][-1] <= 1e-10 * h["dual"][-1]
    assert h["gap"][-2] > 1e-10 * h["dual"][-2]
    assert h["primal"][-1] - p_ref <= h["gap"][-1] + 1e-15


def test_history_and_model_fields(heart):
    X, y = heart
    m = train_svrg(X, y, loss="logistic", lam=1e-2, tol=1e-9, max_epochs=500)
    h = m.history
    assert m.converged and m.stop_reason == "converged"
    assert len(h) == m.n_epochs + 1 and list(h["epoch"]) == list(range(m.n_epochs + 1))
    assert np.isfinite(h["dual"]).all() and np.isfinite(h["gap"]).all()
    assert m.params["measure"] == "gap"
    assert h["primal"][0] == pytest.approx(np.log(2.0), rel=1e-15)     # x0 = 0
    n = X.shape[0]
    np.testing.assert_allclose(h["passes"], 1.0 + np.arange(len(h)) * (1.0 + 2 * n / n))
    # the stopping rule: the first epoch whose gap is <= tol * P(0)
    floor = _status.floor(m.params["p0"])
    ok = [_status.certifies(g, p - g, m.params["tol"], floor) for p, g in zip(h["primal"], h["gap"])]
    assert ok[-1] and not any(ok[:-1])
    assert m.params["step"] == pytest.approx(0.1 / m.params["L"])
    assert m.params["L"] == pytest.approx(0.25 * X.multiply(X).sum(1).max())
    np.testing.assert_array_equal(m.predict(X), np.where(X @ m.coef > 0, 1.0, -1.0))


def test_katyusha_params_follow_the_paper(heart):
    X, y = heart
    n = X.shape[0]
    lam = 1e-3
    m = train_katyusha(X, y, loss="logistic", lam=lam, max_epochs=1, tol=0)
    L = 0.25 * X.multiply(X).sum(1).max()
    p = m.params
    assert p["steps_per_epoch"] == 2 * n and p["tau2"] == 0.5 and p["option"] == "I"
    assert p["tau1"] == pytest.approx(min(np.sqrt(2 * n * lam / (3 * L)), 0.5))
    assert p["alpha"] == pytest.approx(1.0 / (3 * p["tau1"] * L))
    assert train_katyusha(X, y, loss="logistic", lam=lam, l1=1e-3, max_epochs=0).params["option"] == "II"


@pytest.mark.parametrize("solver", [train_svrg, train_katyusha])
def test_seeds_warm_start_callback(heart, solver):
    X, y = heart
    kw = dict(loss="logistic", lam=1e-2)
    a = solver(X, y, seed=7, max_epochs=4, tol=0, **kw)
    b = solver(X, y, seed=7, max_epochs=4, tol=0, **kw)
    np.testing.assert_array_equal(a.coef, b.coef)
    c = solver(X, y, seed=8, max_epochs=4, tol=0, **kw)
    assert not np.array_equal(a.coef, c.coef)
    full = solver(X, y, seed=1, tol=1e-12, max_epochs=2000, **kw)
    assert full.converged
    warm = solver(X, y, seed=2, tol=1e-9, warm_start=full, **kw)
    assert warm.converged and warm.n_epochs == 0          # certified at the start
    assert warm.history["primal"][0] == pytest.approx(full.history["primal"][-1], rel=1e-14)
    seen = []

    def cb(info):
        seen.append((info["epoch"], info["primal"], info["coef"].copy()))
        assert not info["coef"].flags.writeable
        return info["epoch"] == 3

    m = solver(X, y, callback=cb, max_epochs=50, **kw)
    assert m.n_epochs == 3 and not m.converged and m.stop_reason == "callback"
    assert [e for e, _, _ in seen] == [0, 1, 2, 3]
    np.testing.assert_array_equal(seen[-1][2], m.coef)
    z = solver(X, y, max_epochs=0, **kw)
    assert len(z.history) == 1 and not z.coef.any()


def test_callback_exception_is_raised(heart):
    X, y = heart

    def cb(info):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        train_svrg(X, y, loss="logistic", callback=cb)


def test_max_epochs_warns_and_divergence_is_reported(heart):
    X, y = heart
    with pytest.warns(ds.ConvergenceWarning, match="max_epochs"):
        m = train_svrg(X, y, loss="logistic", lam=1e-3, max_epochs=2, tol=1e-12)
    assert not m.converged and m.stop_reason == "max_epochs"
    with pytest.warns(ds.ConvergenceWarning, match="diverged at epoch 1 .*lower step"):
        m = train_svrg(X, y, loss="squared", lam=1e-3, step=1e3, max_epochs=500)
    assert m.stop_reason == "diverged" and not m.converged and m.n_epochs == 1
    assert len(m.history) == 2 and not np.isfinite(m.history["primal"][-1])


@pytest.mark.parametrize("solver", [train_svrg, train_katyusha])
def test_bad_inputs(heart, solver):
    X, y = heart
    bad = X.copy()
    bad.data[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        solver(bad, y)
    with pytest.raises(ValueError, match="labels"):
        solver(X, y[:-1])
    with pytest.raises(ValueError, match="unknown loss"):
        solver(X, y, loss="nope")
    with pytest.raises(ValueError, match="unknown loss 'hinge'"):
        solver(X, y, loss="hinge")
    with pytest.raises(TypeError, match="loss"):
        solver(X, y, loss=3)
    with pytest.raises(ValueError, match="smoothing"):
        solver(X, y, loss="logistic", smoothing=0.3)
    with pytest.raises(ValueError, match="one class only"):
        solver(X, np.ones_like(y), loss="logistic")
    for kw, exc, word in [(dict(lam=-1.0), ValueError, "lam"), (dict(l1=-1e-3), ValueError, "l1"),
                          (dict(lam=np.nan), ValueError, "lam"), (dict(step=0.0), ValueError, "step"),
                          (dict(step=np.inf), ValueError, "step"),
                          (dict(steps_per_epoch=0), ValueError, "steps_per_epoch"),
                          (dict(steps_per_epoch=2.5), TypeError, "steps_per_epoch"),
                          (dict(tol=-1.0), ValueError, "tol"),
                          (dict(max_epochs=-1), ValueError, "max_epochs"),
                          (dict(seed=-3), ValueError, "seed"),
                          (dict(callback=5), TypeError, "callback"),
                          (dict(warm_start=np.zeros(5)), ValueError, "warm_start"),
                          (dict(warm_start=np.full(X.shape[1], np.nan)), ValueError, "warm_start"),
                          (dict(warm_start="abc"), TypeError, "warm_start")]:
        with pytest.raises(exc, match=word):
            solver(X, y, loss="logistic", **kw)
    if solver is train_katyusha:
        for kw, word in [(dict(tau1=0.0), "tau1"), (dict(tau1=0.6), "tau1"),
                         (dict(option="III"), "option")]:
            with pytest.raises(ValueError, match=word):
                solver(X, y, loss="logistic", **kw)


@pytest.mark.skipif(not sys.platform.startswith("linux") or bool(os.environ.get("DUALSOLVE_ASAN")),
                    reason="RLIMIT_AS on Linux, not under AddressSanitizer")
def test_a_failed_allocation_in_the_engine_is_a_memory_error():
    """svrg_run allocates its per-feature state itself (32 or 48 bytes a feature): when
    that fails it returns STATUS_NO_MEMORY with nothing else set, and the caller gets a
    MemoryError naming the solver and the data's size (the message has no NumPy part: the
    0.5 GiB coefficient vector still fitted under the 3 GiB limit)."""
    code = textwrap.dedent('''
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        import numpy as np, scipy.sparse as sp, dualsolve as ds
        d = 1 << 26
        X = sp.csr_matrix((np.ones(3), ([0, 1, 2], [0, 1, d - 1])), shape=(3, d))
        for f in (ds.train_svrg, ds.train_katyusha):
            try:
                f(X, np.array([1.0, -1.0, 1.0]), loss="logistic", max_epochs=1)
                print("no error")
            except MemoryError as exc:
                print("MemoryError:", exc)
    ''')
    # from a neutral folder: in a checkout, the source tree would shadow the installed package
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=tempfile.gettempdir())
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 2, r.stdout
    for name, line in zip(("train_svrg", "train_katyusha"), lines):
        assert line == (f"MemoryError: {name} ran out of memory on X with 3 rows and 67108864 "
                        "features (a float64 vector of n_features takes 0.50 GiB)"), line
