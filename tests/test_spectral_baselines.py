"""The SOREL paper's baselines: LSVRG, Prospect and mini-batch SGD (Ge & Jiang 2024,
section 5), their iterates and their certificates.

Oracles: dense NumPy twins (plain NumPy, a full stable argsort wherever the solvers keep a
sorted order, no dualsolve code) replaying the sampled rows, a direct ridge solve, scipy's
L-BFGS for L2-logistic regression, and the certified optimum of ``spectral_reference``
(itself checked in test_spectral_reference.py).
"""
import os
import signal
import threading
import time

import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp

from dualsolve._validation import ConvergenceWarning
from dualsolve.spectral import spectrum as make_spectrum
from dualsolve.spectral import _baselines
from dualsolve.spectral.baselines import train_lsvrg, train_prospect, train_spectral_sgd
from dualsolve.spectral.reference import spectral_reference
from dualsolve.spectral.sorel import run_traced

SPECTRA = [("superquantile", 0.5), ("extremile", 2.5), ("esrm", 2.0)]
SOLVERS = [train_lsvrg, train_prospect, train_spectral_sgd]


# ---------------------------------------------------------------------------------------
# dense twins (the methods written with NumPy, the rows taken from the solvers' traces)


def _dense(X):
    return np.asarray(X.todense()) if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def _value(m, y, loss):
    return 0.5 * (m - y) ** 2 if loss == "squared" else np.logaddexp(0.0, -y * m)


def _deriv(m, y, loss):
    return m - y if loss == "squared" else -y / (1.0 + np.exp(y * m))


class Checks:
    """The certificate of the baselines written densely: at every check the vertex
    sigma[rank(l(w))] (a stable sort started from the previous order, as the solvers'
    warm sorts) joins a running average with weights k + 1."""

    def __init__(self, X, y, sigma, lam, loss):
        self.X, self.y, self.sigma, self.lam, self.loss = X, y, sigma, lam, loss
        self.perm = np.arange(len(y))
        self.avg, self.k = None, 0

    def vertex(self, w):
        l = _value(self.X @ w, self.y, self.loss)
        self.perm = self.perm[np.argsort(l[self.perm], kind="stable")]
        v = np.empty(len(l))
        v[self.perm] = self.sigma
        return v

    def join(self, v):
        beta = 2.0 / (self.k + 2)
        self.avg = v.copy() if self.avg is None else self.avg + beta * (v - self.avg)
        self.k += 1

    def gap(self, w, v):
        """G(w, v) = [R(l) - v^T l] + ||X^T (v * phi'(Xw)) + lam w||^2 / (2 lam)."""
        m = self.X @ w
        l, g = _value(m, self.y, self.loss), _deriv(m, self.y, self.loss)
        u = self.X.T @ (v * g) + self.lam * w
        return max(float(np.sort(l) @ self.sigma - v @ l), 0.0) + u @ u / (2 * self.lam)


def lsvrg_twin(X, y, sigma, lam, step, epochs, trace, loss="squared", b=1, T=None,
               form="gradient", w0=None):
    """LSVRG (Mehta et al. 2023), nu = 0: a checkpoint (vertex lambda, anchor gradient) every
    T steps. Ties in the ranking keep the previous order (a stable sort started from it).
    Returns w_K and the certificate at w_K: its lambda (the vertex at w_K) and its gap."""
    X = _dense(X)
    n, d = X.shape
    T = n if T is None else T
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=float)
    chk = Checks(X, y, sigma, lam, loss)
    pos = 0
    for _ in range(epochs):
        m = X @ w
        dbar = _deriv(m, y, loss)
        dual = chk.vertex(w)
        gbar = X.T @ (dual * dbar)
        for _ in range(T):
            S = trace[pos:pos + b]
            pos += b
            c = (n / b) * dual[S] * (_deriv(X[S] @ w, y[S], loss) - dbar[S])
            dvec = X[S].T @ c + gbar
            if form == "gradient":
                w = w - step * (dvec + lam * w)
            else:
                w = (w - step * dvec) / (1.0 + step * lam)
    v = chk.vertex(w)
    return w, v, chk.gap(w, v)


def prospect_twin(X, y, sigma, lam, step, trace, loss="squared", w0=None):
    """Prospect (Mehta et al. 2024), nu = 0, as the reference code does it: a full stable
    re-sort of the loss table after every step. Returns w, the order after every step and
    the certificate at the end (the running average of the vertices at the earlier epoch
    ends, n steps each, and at the end; its gap at w)."""
    X = _dense(X)
    n, d = X.shape
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=float)
    chk = Checks(X, y, sigma, lam, loss)
    m = X @ w
    l, gt = _value(m, y, loss), _deriv(m, y, loss)
    dual = np.empty(n)
    dual[np.argsort(l, kind="stable")] = sigma
    rho = dual.copy()
    S = X.T @ (rho * gt)
    orders = []
    for step_no, i in enumerate(trace):
        if step_no % n == 0:
            chk.join(chk.vertex(w))                      # the check at the epoch's start
        mi = X[i] @ w
        gi, li = _deriv(mi, y[i], loss), _value(mi, y[i], loss)
        cur = dual[i]
        v = (n * cur * gi - n * rho[i] * gt[i]) * X[i] + S
        w = (w - step * v) / (1.0 + step * lam)
        S = S + (cur * gi - rho[i] * gt[i]) * X[i]
        rho[i], gt[i], l[i] = cur, gi, li
        order = np.argsort(l, kind="stable")
        dual = np.empty(n)
        dual[order] = sigma
        orders.append(order)
    chk.join(chk.vertex(w))
    return w, np.array(orders), chk.avg, chk.gap(w, chk.avg)


def sgd_twin(X, y, sigma, sigma_b, lam, step, trace, T, loss="squared", w0=None):
    """Mini-batch SGD: batches of len(sigma_b) rows in the order of ``trace``, T per epoch.
    Returns w and the certificate at the end (as prospect_twin's)."""
    X = _dense(X)
    b = len(sigma_b)
    w = np.zeros(X.shape[1]) if w0 is None else np.array(w0, dtype=float)
    chk = Checks(X, y, sigma, lam, loss)
    for s in range(len(trace) // b):
        if s % T == 0:
            chk.join(chk.vertex(w))
        B = trace[s * b:(s + 1) * b]
        m = X[B] @ w
        dual = np.empty(b)
        dual[np.argsort(_value(m, y[B], loss), kind="stable")] = sigma_b
        w = (1.0 - step * lam) * w - step * (X[B].T @ (dual * _deriv(m, y[B], loss)))
    chk.join(chk.vertex(w))
    return w, chk.avg, chk.gap(w, chk.avg)


def _random_problem(dtype=np.float64, itype=np.int32, loss="squared", n=60, d=25, seed=7):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.3, random_state=3, format="csr")
    X.data = rng.standard_normal(X.nnz)
    X = X.astype(dtype)
    X.indices = X.indices.astype(itype)
    X.indptr = X.indptr.astype(itype)
    if loss == "squared":
        y = rng.standard_normal(n)
    else:
        y = np.where(X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y, rng


TWIN_CASES = [
    dict(kind="superquantile", dtype=np.float64, itype=np.int32, loss="squared"),
    dict(kind="extremile", dtype=np.float32, itype=np.int64, loss="squared"),
    dict(kind="esrm", dtype=np.float64, itype=np.int64, loss="logistic"),
    dict(kind="superquantile", dtype=np.float32, itype=np.int32, loss="logistic"),
]


def _close(a, b, tol=1e-12):
    return np.abs(a - b).max() <= tol * max(1.0, np.abs(b).max())


@pytest.mark.parametrize("case", TWIN_CASES)
@pytest.mark.parametrize("form,b", [("gradient", 1), ("prox", 1), ("gradient", 4)])
def test_lsvrg_twin(spectral, case, form, b):
    X, y, rng = _random_problem(case["dtype"], case["itype"], case["loss"])
    n = X.shape[0]
    sigma = make_spectrum(case["kind"], n)
    epochs = 6
    T = n if b == 1 else n // b
    trace = np.full(epochs * T * b, -1, dtype=np.intp)
    w0 = 0.1 * rng.standard_normal(X.shape[1])
    kw = dict(loss=case["loss"], spectrum=case["kind"], lam=0.02, step=0.02, form=form,
              batch_size=b, max_epochs=epochs, seed=11, warm_start=w0, tol=0.0)
    m = run_traced(train_lsvrg, X, y, trace=trace, **kw)
    assert trace.min() >= 0
    Xd = X.astype(np.float64)
    w, dual, gap = lsvrg_twin(Xd, y, sigma, 0.02, 0.02, epochs, trace, case["loss"], b=b,
                              T=T, form=form, w0=w0)
    assert _close(m.coef, w)
    assert np.abs(m.dual - dual).max() <= 1e-12
    assert m.history["primal"][-1] == pytest.approx(spectral.objective(
        _dense(Xd), y, w, sigma, 0.02, case["loss"]), rel=1e-12)
    assert m.history["gap"][-1] == pytest.approx(gap, rel=1e-9)
    m2 = train_lsvrg(X, y, **kw)                   # same seed, same result
    assert np.array_equal(m2.coef, m.coef)
    if case["dtype"] == np.float64 and case["itype"] == np.int32:
        assert np.array_equal(train_lsvrg(X.toarray(), y, **kw).coef, m.coef)


@pytest.mark.parametrize("case", TWIN_CASES)
def test_prospect_twin_and_sorted_order(case):
    """Iterates equal the twin's; the maintained order equals a full stable argsort of the
    loss table after every single step."""
    X, y, rng = _random_problem(case["dtype"], case["itype"], case["loss"])
    n = X.shape[0]
    sigma = make_spectrum(case["kind"], n)
    epochs = 5
    trace = np.full(epochs * n, -1, dtype=np.intp)
    otrace = np.full((epochs * n, n), -1, dtype=np.intp)
    w0 = 0.1 * rng.standard_normal(X.shape[1])
    kw = dict(loss=case["loss"], spectrum=case["kind"], lam=0.02, step=0.01,
              max_epochs=epochs, seed=5, warm_start=w0, tol=0.0)
    m = run_traced(train_prospect, X, y, trace=trace, order_trace=otrace, **kw)
    assert trace.min() >= 0
    w, orders, dual, gap = prospect_twin(X.astype(np.float64), y, sigma, 0.02, 0.01, trace,
                                         case["loss"], w0=w0)
    assert np.array_equal(otrace, orders)
    assert _close(m.coef, w)
    assert np.abs(m.dual - dual).max() <= 1e-12
    assert m.history["gap"][-1] == pytest.approx(gap, rel=1e-9)
    assert np.isfinite(m.history["gap"][[0, -1]]).all()       # checked at 0 and the end
    assert m.params["mean_displacement"] > 0
    m2 = train_prospect(X, y, **kw)
    assert np.array_equal(m2.coef, m.coef)
    if case["dtype"] == np.float64 and case["itype"] == np.int32:
        assert np.array_equal(train_prospect(X.toarray(), y, **kw).coef, m.coef)


def test_prospect_order_on_real_data_with_ties(yacht):
    """yacht's targets repeat, so the losses at w_0 = 0 tie: the order must still be the
    stable argsort (ties by index) after every step, and the iterates the twin's."""
    X, y = yacht
    n = len(y)
    assert len(np.unique(np.abs(y))) < n
    trace = np.full(2 * n, -1, dtype=np.intp)
    otrace = np.full((2 * n, n), -1, dtype=np.intp)
    m = run_traced(train_prospect, X, y, spectrum="esrm", step=0.003, max_epochs=2, seed=3,
               tol=0.0, trace=trace, order_trace=otrace)
    w, orders, dual, gap = prospect_twin(X, y, make_spectrum("esrm", n), 1.0 / n, 0.003, trace)
    assert np.array_equal(otrace, orders)
    assert _close(m.coef, w)
    assert np.abs(m.dual - dual).max() <= 1e-12      # the tied vertices, in the same order
    assert m.history["gap"][-1] == pytest.approx(gap, rel=1e-9)


def test_reposition_matches_full_argsort_with_ties():
    """The galloping move of one entry keeps the table equal to a stable argsort, over many
    updates with heavy ties (integer losses), long and short moves, both directions."""
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 17, 200):
        l = rng.integers(0, 6, size=n).astype(float)
        m = 3000 if n > 3 else 50
        idx = rng.integers(0, n, size=m).astype(np.intp)
        vals = np.where(rng.random(m) < 0.7, rng.integers(0, 6, size=m),
                        rng.uniform(-1, 7, size=m)).astype(float)
        out, shifts = _baselines._reposition_replay(l, idx, vals)
        cur = l.copy()
        total = 0
        prev = np.argsort(cur, kind="stable")
        for s in range(m):
            cur[idx[s]] = vals[s]
            order = np.argsort(cur, kind="stable")
            assert np.array_equal(out[s], order), (n, s)
            total += abs(int(np.flatnonzero(order == idx[s])[0])
                         - int(np.flatnonzero(prev == idx[s])[0]))
            prev = order
        assert shifts == total                # the cost is the displacement, nothing more


@pytest.mark.parametrize("case", TWIN_CASES)
@pytest.mark.parametrize("b", [1, 7, 60])
def test_sgd_twin(case, b):
    X, y, rng = _random_problem(case["dtype"], case["itype"], case["loss"])
    n = X.shape[0]
    epochs = 4
    T = n // b
    trace = np.full(epochs * T * b, -1, dtype=np.intp)
    w0 = 0.1 * rng.standard_normal(X.shape[1])
    kw = dict(loss=case["loss"], spectrum=case["kind"], lam=0.02, step=0.05, batch_size=b,
              max_epochs=epochs, seed=9, warm_start=w0, tol=0.0)
    m = run_traced(train_spectral_sgd, X, y, trace=trace, **kw)
    per = trace.reshape(epochs, T * b)
    assert all(len(set(r)) == T * b for r in per)          # without replacement per epoch
    sigma_b = make_spectrum(case["kind"], b)
    assert np.array_equal(m.extra["sigma_batch"], sigma_b)
    w, dual, gap = sgd_twin(X.astype(np.float64), y, make_spectrum(case["kind"], n), sigma_b,
                            0.02, 0.05, trace, T, case["loss"], w0=w0)
    assert _close(m.coef, w)
    assert np.abs(m.dual - dual).max() <= 1e-12
    assert m.history["gap"][-1] == pytest.approx(gap, rel=1e-9)
    assert np.array_equal(train_spectral_sgd(X, y, **kw).coef, m.coef)


def test_sgd_batch_spectrum_of_explicit_weights(yacht):
    """Explicit weights: sigma_b has the same risk profile; for a named spectrum written
    out at b | n the profile construction gives the named b-point spectrum back."""
    X, y = yacht
    n = len(y)                                             # 308 = 4 * 77
    for kind, p in SPECTRA:
        m = train_spectral_sgd(X, y, spectrum=make_spectrum(kind, n, p), batch_size=77,
                               max_epochs=0, tol=0.0)
        # CVaR 0.5 and the integral forms of ESRM / extremile are exact at b | n
        assert np.allclose(m.extra["sigma_batch"], make_spectrum(kind, 77, p), atol=1e-14)


# ---------------------------------------------------------------------------------------
# ERM reduction: sigma = 1/n


def test_erm_lsvrg_and_prospect_equal_ridge(spectral, yacht):
    X, y = yacht
    n = len(y)
    lam = 1.0 / n
    w = spectral.ridge(X, y, lam)
    Fstar = spectral.objective(X, y, w, np.full(n, 1.0 / n), lam)
    for f, kw in [(train_lsvrg, dict(step=0.05)), (train_lsvrg, dict(step=0.05, form="prox")),
                  (train_prospect, dict(step=0.04))]:
        m = f(sp.csr_matrix(X), y, spectrum="erm", max_epochs=300, seed=0, tol=0.0, **kw)
        assert np.abs(m.coef - w).max() <= 1e-12 * np.abs(w).max(), f.__name__
        assert np.allclose(m.dual, 1.0 / n, rtol=0, atol=1e-15)
        assert m.history["primal"][-1] - Fstar <= 1e-14 * Fstar
        # lambda = 1/n is the dual optimum: the certificate closes
        assert 0.0 <= m.history["gap"][-1] <= 1e-13 * Fstar, f.__name__
        # and with the default tol the run stops on it, certified
        m2 = f(sp.csr_matrix(X), y, spectrum="erm", max_epochs=300, seed=0, **kw)
        assert m2.stop_reason == "converged" and m2.n_epochs < 300, f.__name__
        assert m2.history["primal"][-1] - Fstar <= m2.history["gap"][-1]


def test_erm_logistic_prospect_equals_lbfgs():
    rng = np.random.default_rng(1)
    n, d = 150, 8
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + 0.8 * rng.standard_normal(n) > 0, 1.0, -1.0)
    lam = 0.01

    def f(w):
        m = y * (X @ w)
        return (np.logaddexp(0.0, -m).mean() + 0.5 * lam * w @ w,
                X.T @ (-y / (1.0 + np.exp(m))) / n + lam * w)
    r = so.minimize(f, np.zeros(d), jac=True, method="L-BFGS-B",
                    options=dict(gtol=1e-14, ftol=1e-16, maxiter=10000))
    for train in (train_prospect, train_lsvrg):
        m = train(X, y, loss="logistic", spectrum="erm", lam=lam, step=0.5, max_epochs=300,
                  tol=0.0)
        assert np.abs(m.coef - r.x).max() <= 1e-9 * np.abs(r.x).max(), train.__name__
        assert m.history["primal"][-1] <= r.fun * (1 + 1e-13)
        assert m.history["dual"][-1] <= r.fun * (1 + 1e-13)
        assert m.history["gap"][-1] <= 1e-12 * r.fun


# ---------------------------------------------------------------------------------------
# spectral risks against the certified optimum


@pytest.fixture(scope="module")
def refs(yacht):
    X, y = yacht
    out = {}
    for kind, p in SPECTRA:
        ref = spectral_reference(X, y, spectrum=kind, spectrum_param=p)
        assert ref.gap <= 1e-12 * ref.primal
        out[kind] = ref
    return out


# Relative suboptimality reached after 400 epochs on yacht (observed over seeds 0-5: the
# worst final value, LSVRG: 6.8e-5 CVaR, 1.0e-6 extremile, 1.7e-6 ESRM at step = 1e-3;
# Prospect: 2.5e-4 CVaR at 1e-3, 1.5e-7 extremile and 2.1e-7 ESRM at 3e-3). With nu = 0
# lambda jumps between vertices and on this small set with tied targets neither method
# gets to machine precision (the SOREL paper's observation, reproduced), while on kin8nm
# (below) both reach ~1e-12.
REACH = {("lsvrg", "superquantile"): (1e-3, 3e-4), ("lsvrg", "extremile"): (1e-3, 3e-6),
         ("lsvrg", "esrm"): (1e-3, 5e-6), ("prospect", "superquantile"): (1e-3, 1e-3),
         ("prospect", "extremile"): (3e-3, 1e-6), ("prospect", "esrm"): (3e-3, 1e-6)}


@pytest.mark.parametrize("kind,param", SPECTRA)
@pytest.mark.parametrize("solver", ["lsvrg", "prospect"])
def test_variance_reduced_baselines_approach_reference(spectral, yacht, refs, kind, param,
                                                       solver):
    X, y = yacht
    ref = refs[kind]
    step, reach = REACH[(solver, kind)]
    train = train_lsvrg if solver == "lsvrg" else train_prospect
    for seed in range(2):
        m = train(X, y, spectrum=kind, spectrum_param=param, step=step, max_epochs=400,
                  seed=seed, tol=0.0)
        Fk = m.history["primal"]
        assert np.all(Fk >= ref.dual - 1e-15 * ref.primal)    # never below the certificate
        assert (Fk[-1] - ref.primal) / ref.primal <= reach
        Fw = spectral.objective(X, y, m.coef, ref.sigma, ref.lam)
        assert Fw == pytest.approx(Fk[-1], rel=1e-13)
        # their own certificates are valid lower bounds (never above the optimum)
        D = m.history["dual"]
        assert np.all(D[np.isfinite(D)] <= ref.primal * (1 + 1e-15))


@pytest.mark.parametrize("kind,param", [("extremile", 2.5), ("esrm", 2.0)])
def test_variance_reduced_baselines_converge_on_kin8nm(spectral, kind, param):
    """kin8nm (n = 8192): the losses at the optimum are distinct enough that lambda settles,
    and both methods reach the certified optimum to ~1e-12 (observed, 3 seeds: LSVRG <= 2.5e-13
    at step = 1e-4, the paper's pick; Prospect <= 3.4e-11 at 1e-3) in 64 epochs. Prospect's
    maintained order moves an entry ~50 places per step here, not n = 8192."""
    X, y = spectral.standardized("kin8nm")
    n = len(y)
    ref = spectral_reference(X, y, spectrum=kind, spectrum_param=param)
    assert ref.gap <= 1e-13 * ref.primal
    for train, step, reach in [(train_lsvrg, 1e-4, 1e-11), (train_prospect, 1e-3, 2e-10)]:
        m = train(X, y, spectrum=kind, spectrum_param=param, step=step, max_epochs=64, seed=0,
                  tol=0.0)
        Fk = m.history["primal"]
        assert np.all(Fk >= ref.dual - 1e-14 * ref.primal)
        assert (Fk[-1] - ref.primal) / ref.primal <= reach, train.__name__
        D = m.history["dual"]
        assert np.all(D[np.isfinite(D)] <= ref.primal * (1 + 1e-14)), train.__name__
        dist = np.sqrt(2 * (Fk[-1] - ref.dual) / ref.lam)       # lam-strong convexity
        assert np.linalg.norm(m.coef - ref.coef) <= dist + 1e-12
        if train is train_prospect:
            assert m.params["mean_displacement"] < n / 50


@pytest.mark.parametrize("kind,param", SPECTRA)
def test_sgd_decreases_but_stalls_at_its_bias_floor(yacht, refs, kind, param):
    """Constant-step mini-batch SGD goes down fast, then stays above the optimum (its batch
    estimate of the subgradient is biased)."""
    X, y = yacht
    ref = refs[kind]
    m = train_spectral_sgd(X, y, spectrum=kind, spectrum_param=param, step=0.1,
                           max_epochs=200, seed=0, tol=0.0)
    Fk = m.history["primal"]
    rel = (Fk - ref.primal) / ref.primal
    assert np.all(Fk >= ref.dual - 1e-15 * ref.primal)
    assert Fk[-1] < Fk[0] and rel[-1] <= 1e-2 and rel[-20:].mean() <= 5e-3
    assert rel[-50:].min() > 1e-6                           # a floor, no convergence


# ---------------------------------------------------------------------------------------
# API: history, passes, callback, divergence, Ctrl-C, bad input


def test_history_passes_and_callback(spectral, yacht, capsys):
    X, y = yacht
    n = len(y)
    expected = {train_lsvrg: lambda k: 2.0 * k,
                train_prospect: lambda k: 0.0 if k == 0 else k + 1.0,
                train_spectral_sgd: lambda k: k * (n // 64) * 64 / n}
    for train in SOLVERS:
        infos = []
        m = train(X, y, spectrum="esrm", step=0.002, max_epochs=6, verbose=1,
                  callback=lambda info: infos.append(dict(info)) or info["epoch"] == 3)
        assert [i["epoch"] for i in infos] == [0, 1, 2, 3]
        assert m.n_epochs == 3 and m.stop_reason == "callback"
        assert list(m.history["epoch"]) == [0, 1, 2, 3]
        assert m.history.dtype.names == ("epoch", "time", "primal", "dual", "gap", "passes")
        assert np.allclose(m.history["passes"], [expected[train](k) for k in range(4)])
        assert [i["passes"] for i in infos] == list(m.history["passes"])
        assert np.array_equal([i["primal"] for i in infos], m.history["primal"])
        assert np.all(np.diff(m.history["time"]) >= 0)
        # the certificate, gap = primal - dual >= 0 (Prospect and SGD check it every 8
        # epochs and when the primal stalls, NaN otherwise)
        h = m.history[np.isfinite(m.history["gap"])]
        assert h["epoch"][0] == 0 and np.all(h["gap"] >= 0)
        assert np.allclose(h["primal"] - h["dual"], h["gap"])
        if train is train_lsvrg:
            assert len(h) == 4
        assert m.history["primal"][0] == pytest.approx(
            spectral.objective(X, y, np.zeros(X.shape[1]), make_spectrum("esrm", n), 1 / n),
            rel=1e-14)
        assert infos[-1]["coef"].flags.writeable is False
        assert "primal" in capsys.readouterr().out
        with pytest.raises(ZeroDivisionError):
            train(X, y, spectrum="esrm", max_epochs=3, callback=lambda info: 1 / 0)
        m0 = train(X, y, spectrum="esrm", max_epochs=0, warm_start=m)
        assert np.array_equal(m0.coef, m.coef) and m0.n_epochs == 0
        # a warm start from a model also takes its lambda (m.dual): certified at once, at
        # least as well as the model was
        g0, g = m0.history["gap"][0], m.history["gap"][-1]
        assert np.isfinite(g0) and (np.isnan(g) or g0 <= g * (1 + 1e-12))


def test_divergence_stops_with_the_diverged_epoch(yacht):
    """A step far too large: stop_reason "diverged", a warning naming the step, and the
    diverged epoch's row in the history (non-finite, or far above the start)."""
    X, y = yacht
    for train, step in [(train_lsvrg, 5.0), (train_prospect, 5.0), (train_spectral_sgd, 5.0)]:
        name = train.__name__
        with pytest.warns(ConvergenceWarning, match=f"{name} diverged.*decrease step"):
            m = train(X, y, spectrum="extremile", step=step, max_epochs=500)
        assert m.stop_reason == "diverged" and m.n_epochs < 500, name
        assert len(m.history) == m.n_epochs + 1 and m.history["epoch"][-1] == m.n_epochs
        last = m.history["primal"][-1]
        assert not np.isfinite(last) or last > 1e4 * m.history["primal"][0], name


def test_ctrl_c_stops_a_long_run(yacht):
    X, y = yacht
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        for train in SOLVERS:
            timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
            t0 = time.perf_counter()
            timer.start()
            try:
                with pytest.raises(KeyboardInterrupt) as info:
                    train(X, y, spectrum="esrm", step=1e-3, max_epochs=10 ** 8, tol=0.0,
                          callback=lambda info: info["time"] > 10.0)   # bounded if it fails
            finally:
                timer.cancel()
            assert time.perf_counter() - t0 < 10.0
            assert info.value.model.stop_reason == "interrupted"
    finally:
        signal.signal(signal.SIGINT, old)


@pytest.mark.parametrize("train", SOLVERS)
def test_bad_inputs(yacht, spectral, train):
    X, y = yacht
    n = len(y)
    spectral.assert_spectrum_input_errors(train, X, y)
    with pytest.raises(ValueError, match=f"loss.*for {train.__name__}"):
        train(X, y, spectrum="erm", loss="hinge")
    with pytest.raises(ValueError, match="two are needed|one class only"):
        train(X, np.ones(n), spectrum="erm", loss="logistic")
    m3 = train(X, np.arange(n) % 3, spectrum="erm", loss="logistic", max_epochs=1, tol=0)
    assert m3.coef.shape == (3, X.shape[1])                            # one-vs-rest
    with pytest.raises(ValueError, match="step must be None or a real number in"):
        train(X, y, spectrum="erm", step=-1.0)
    with pytest.raises(TypeError, match="step must be"):
        train(X, y, spectrum="erm", step="big")
    with pytest.raises(ValueError, match="lam must be > 0"):
        train(X, y, spectrum="erm", lam=-1.0)
    with pytest.raises(ValueError, match="max_epochs must be"):
        train(X, y, spectrum="erm", max_epochs=-1)
    with pytest.raises(ValueError, match="warm_start"):
        train(X, y, spectrum="erm", warm_start=np.zeros(X.shape[1] + 1))
    with pytest.raises(TypeError, match="callback"):
        train(X, y, spectrum="erm", callback=3)


def test_bad_inputs_specific(yacht):
    X, y = yacht
    n = len(y)
    with pytest.raises(ValueError, match="train_lsvrg: step.*too large"):
        train_lsvrg(X, y, spectrum="erm", step=2.0 * n)
    with pytest.raises(ValueError, match="train_spectral_sgd: step.*too large"):
        train_spectral_sgd(X, y, spectrum="erm", step=2.0 * n)
    for train in (train_lsvrg, train_spectral_sgd):
        with pytest.raises(ValueError, match="batch_size"):
            train(X, y, spectrum="erm", batch_size=n + 1)
        with pytest.raises(ValueError, match="batch_size"):
            train(X, y, spectrum="erm", batch_size=0)
    with pytest.raises(ValueError, match="train_lsvrg: sampling"):
        train_lsvrg(X, y, spectrum="erm", batch_size=4, sampling="uniform")
    with pytest.raises(ValueError, match="form"):
        train_lsvrg(X, y, spectrum="erm", form="newton")
    # the prox form takes any step; batch_size defaults to min(64, n)
    train_lsvrg(X, y, spectrum="erm", step=2.0 * n, form="prox", max_epochs=0)
    assert train_spectral_sgd(X[:10], y[:10], max_epochs=0).params["batch_size"] == 10
