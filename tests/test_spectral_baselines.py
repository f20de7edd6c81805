"""The SOREL paper's baselines: LSVRG, Prospect and mini-batch SGD (spec seed4 section 2.6;
tests 12, 14, 15, 17, 18 of section 6 for these methods).

Oracles: dense NumPy twins (plain NumPy, a full stable argsort wherever the solvers keep a
sorted order, no dualsolve code) replaying the sampled rows, a direct ridge solve, scipy's
L-BFGS for L2-logistic regression, and the certified optimum of ``spectral_reference``
(itself checked in test_spectral_reference.py).
"""
import os
import signal
import threading
import time
import warnings

import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp

from dualsolve._validation import ConvergenceWarning
from dualsolve.spectral import spectrum as make_spectrum
from dualsolve.spectral import _baselines
from dualsolve.spectral.baselines import train_lsvrg, train_prospect, train_spectral_sgd
from dualsolve.spectral.reference import spectral_reference

SPECTRA = [("superquantile", 0.5), ("extremile", 2.5), ("esrm", 2.0)]
SOLVERS = [train_lsvrg, train_prospect, train_spectral_sgd]


# ---------------------------------------------------------------------------------------
# dense twins (spec 2.6 written with NumPy, the rows taken from the solvers' traces)


def _dense(X):
    return np.asarray(X.todense()) if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def _value(m, y, loss):
    return 0.5 * (m - y) ** 2 if loss == "squared" else np.logaddexp(0.0, -y * m)


def _deriv(m, y, loss):
    return m - y if loss == "squared" else -y / (1.0 + np.exp(y * m))


def lsvrg_twin(X, y, sigma, mu, alpha, epochs, trace, loss="squared", b=1, T=None,
               form="gradient", w0=None):
    """Spec 2.6 (c), nu = 0: a checkpoint (vertex lambda, anchor gradient) every T steps.
    Ties in the ranking keep the previous order (a stable sort started from it)."""
    X = _dense(X)
    n, d = X.shape
    T = n if T is None else T
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=float)
    perm = np.arange(n)
    pos = 0
    for _ in range(epochs):
        m = X @ w
        l, dbar = _value(m, y, loss), _deriv(m, y, loss)
        perm = perm[np.argsort(l[perm], kind="stable")]
        lam = np.empty(n)
        lam[perm] = sigma
        gbar = X.T @ (lam * dbar)
        for _ in range(T):
            S = trace[pos:pos + b]
            pos += b
            c = (n / b) * lam[S] * (_deriv(X[S] @ w, y[S], loss) - dbar[S])
            dvec = X[S].T @ c + gbar
            if form == "gradient":
                w = w - alpha * (dvec + mu * w)
            else:
                w = (w - alpha * dvec) / (1.0 + alpha * mu)
    return w, lam


def prospect_twin(X, y, sigma, mu, alpha, trace, loss="squared", w0=None):
    """Spec 2.6 (d), nu = 0, as the reference code does it: a full stable re-sort of the
    loss table after every step. Returns w, lambda and the order after every step."""
    X = _dense(X)
    n, d = X.shape
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=float)
    m = X @ w
    l, gt = _value(m, y, loss), _deriv(m, y, loss)
    lam = np.empty(n)
    lam[np.argsort(l, kind="stable")] = sigma
    rho = lam.copy()
    S = X.T @ (rho * gt)
    orders = []
    for i in trace:
        mi = X[i] @ w
        gi, li = _deriv(mi, y[i], loss), _value(mi, y[i], loss)
        cur = lam[i]
        v = (n * cur * gi - n * rho[i] * gt[i]) * X[i] + S
        w = (w - alpha * v) / (1.0 + alpha * mu)
        S = S + (cur * gi - rho[i] * gt[i]) * X[i]
        rho[i], gt[i], l[i] = cur, gi, li
        order = np.argsort(l, kind="stable")
        lam = np.empty(n)
        lam[order] = sigma
        orders.append(order)
    return w, lam, np.array(orders)


def sgd_twin(X, y, sigma_b, mu, alpha, trace, loss="squared", w0=None):
    """Spec 2.6 (b): batches of len(sigma_b) rows in the order of ``trace``."""
    X = _dense(X)
    b = len(sigma_b)
    w = np.zeros(X.shape[1]) if w0 is None else np.array(w0, dtype=float)
    for s in range(len(trace) // b):
        B = trace[s * b:(s + 1) * b]
        m = X[B] @ w
        lam = np.empty(b)
        lam[np.argsort(_value(m, y[B], loss), kind="stable")] = sigma_b
        w = (1.0 - alpha * mu) * w - alpha * (X[B].T @ (lam * _deriv(m, y[B], loss)))
    return w


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
    kw = dict(loss=case["loss"], spectrum=case["kind"], mu=0.02, alpha=0.02, form=form,
              batch_size=b, max_epochs=epochs, seed=11, warm_start=w0)
    m = train_lsvrg(X, y, _trace=trace, **kw)
    assert trace.min() >= 0
    Xd = X.astype(np.float64)
    w, lam = lsvrg_twin(Xd, y, sigma, 0.02, 0.02, epochs, trace, case["loss"], b=b, T=T,
                        form=form, w0=w0)
    assert _close(m.coef, w)
    assert np.array_equal(m.dual, lam)
    assert m.history["primal"][-1] == pytest.approx(spectral.objective(
        _dense(Xd), y, w, sigma, 0.02,
                                                      case["loss"]), rel=1e-12)
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
    kw = dict(loss=case["loss"], spectrum=case["kind"], mu=0.02, alpha=0.01,
              max_epochs=epochs, seed=5, warm_start=w0)
    m = train_prospect(X, y, _trace=trace, _order_trace=otrace, **kw)
    assert trace.min() >= 0
    w, lam, orders = prospect_twin(X.astype(np.float64), y, sigma, 0.02, 0.01, trace,
                                   case["loss"], w0=w0)
    assert np.array_equal(otrace, orders)
    assert _close(m.coef, w)
    assert np.array_equal(m.dual, lam)
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
    m = train_prospect(X, y, spectrum="esrm", alpha=0.003, max_epochs=2, seed=3, _trace=trace,
                       _order_trace=otrace)
    w, lam, orders = prospect_twin(X, y, make_spectrum("esrm", n), 1.0 / n, 0.003, trace)
    assert np.array_equal(otrace, orders)
    assert _close(m.coef, w)


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
    kw = dict(loss=case["loss"], spectrum=case["kind"], mu=0.02, alpha=0.05, batch_size=b,
              max_epochs=epochs, seed=9, warm_start=w0)
    m = train_spectral_sgd(X, y, _trace=trace, **kw)
    per = trace.reshape(epochs, T * b)
    assert all(len(set(r)) == T * b for r in per)          # without replacement per epoch
    sigma_b = make_spectrum(case["kind"], b)
    assert np.array_equal(m.extra["sigma_batch"], sigma_b)
    w = sgd_twin(X.astype(np.float64), y, sigma_b, 0.02, 0.05, trace, case["loss"], w0=w0)
    assert _close(m.coef, w)
    assert np.array_equal(train_spectral_sgd(X, y, **kw).coef, m.coef)


def test_sgd_batch_spectrum_of_explicit_weights(yacht):
    """Explicit weights: sigma_b has the same risk profile; for a named spectrum written
    out at b | n the profile construction gives the named b-point spectrum back."""
    X, y = yacht
    n = len(y)                                             # 308 = 4 * 77
    for kind, p in SPECTRA:
        m = train_spectral_sgd(X, y, spectrum=make_spectrum(kind, n, p), batch_size=77,
                               max_epochs=0)
        # CVaR 0.5 and the integral forms of ESRM / extremile are exact at b | n
        assert np.allclose(m.extra["sigma_batch"], make_spectrum(kind, 77, p), atol=1e-14)


# ---------------------------------------------------------------------------------------
# ERM reduction: sigma = 1/n


def test_erm_lsvrg_and_prospect_equal_ridge(spectral, yacht):
    X, y = yacht
    n = len(y)
    mu = 1.0 / n
    w = spectral.ridge(X, y, mu)
    Fstar = spectral.objective(X, y, w, np.full(n, 1.0 / n), mu)
    for f, kw in [(train_lsvrg, dict(alpha=0.05)), (train_lsvrg, dict(alpha=0.05, form="prox")),
                  (train_prospect, dict(alpha=0.04))]:
        m = f(sp.csr_matrix(X), y, spectrum="erm", max_epochs=300, seed=0, **kw)
        assert np.abs(m.coef - w).max() <= 1e-12 * np.abs(w).max(), f.__name__
        assert np.allclose(m.dual, 1.0 / n, rtol=0, atol=1e-15)
        assert m.history["primal"][-1] - Fstar <= 1e-14 * Fstar


def test_erm_logistic_prospect_equals_lbfgs():
    rng = np.random.default_rng(1)
    n, d = 150, 8
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + 0.8 * rng.standard_normal(n) > 0, 1.0, -1.0)
    mu = 0.01

    def f(w):
        m = y * (X @ w)
        return (np.logaddexp(0.0, -m).mean() + 0.5 * mu * w @ w,
                X.T @ (-y / (1.0 + np.exp(m))) / n + mu * w)
    r = so.minimize(f, np.zeros(d), jac=True, method="L-BFGS-B",
                    options=dict(gtol=1e-14, ftol=1e-16, maxiter=10000))
    for train in (train_prospect, train_lsvrg):
        m = train(X, y, loss="logistic", spectrum="erm", mu=mu, alpha=0.5, max_epochs=300)
        assert np.abs(m.coef - r.x).max() <= 1e-9 * np.abs(r.x).max(), train.__name__
        assert m.history["primal"][-1] <= r.fun * (1 + 1e-13)


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
# worst final value, LSVRG: 6.8e-5 CVaR, 1.0e-6 extremile, 1.7e-6 ESRM at alpha = 1e-3;
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
    alpha, tol = REACH[(solver, kind)]
    train = train_lsvrg if solver == "lsvrg" else train_prospect
    for seed in range(2):
        m = train(X, y, spectrum=kind, spectrum_param=param, alpha=alpha, max_epochs=400,
                  seed=seed)
        Fk = m.history["primal"]
        assert np.all(Fk >= ref.dual - 1e-15 * ref.primal)    # never below the certificate
        assert (Fk[-1] - ref.primal) / ref.primal <= tol
        Fw = spectral.objective(X, y, m.coef, ref.sigma, ref.mu)
        assert Fw == pytest.approx(Fk[-1], rel=1e-13)


@pytest.mark.parametrize("kind,param", [("extremile", 2.5), ("esrm", 2.0)])
def test_variance_reduced_baselines_converge_on_kin8nm(spectral, kind, param):
    """kin8nm (n = 8192): the losses at the optimum are distinct enough that lambda settles,
    and both methods reach the certified optimum to ~1e-12 (observed, 3 seeds: LSVRG <= 2.5e-13
    at alpha = 1e-4, the paper's pick; Prospect <= 3.4e-11 at 1e-3) in 64 epochs. Prospect's
    maintained order moves an entry ~50 places per step here, not n = 8192."""
    X, y = spectral.standardized("kin8nm")
    n = len(y)
    ref = spectral_reference(X, y, spectrum=kind, spectrum_param=param)
    assert ref.gap <= 1e-13 * ref.primal
    for train, alpha, tol in [(train_lsvrg, 1e-4, 1e-11), (train_prospect, 1e-3, 2e-10)]:
        m = train(X, y, spectrum=kind, spectrum_param=param, alpha=alpha, max_epochs=64, seed=0)
        Fk = m.history["primal"]
        assert np.all(Fk >= ref.dual - 1e-14 * ref.primal)
        assert (Fk[-1] - ref.primal) / ref.primal <= tol, train.__name__
        dist = np.sqrt(2 * (Fk[-1] - ref.dual) / ref.mu)       # mu-strong convexity
        assert np.linalg.norm(m.coef - ref.coef) <= dist + 1e-12
        if train is train_prospect:
            assert m.params["mean_displacement"] < n / 50


@pytest.mark.parametrize("kind,param", SPECTRA)
def test_sgd_decreases_but_stalls_at_its_bias_floor(yacht, refs, kind, param):
    """Spec test 17: constant-step mini-batch SGD goes down fast, then stays above the
    optimum (its batch estimate of the subgradient is biased)."""
    X, y = yacht
    ref = refs[kind]
    m = train_spectral_sgd(X, y, spectrum=kind, spectrum_param=param, alpha=0.1,
                           max_epochs=200, seed=0)
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
        m = train(X, y, spectrum="esrm", alpha=0.002, max_epochs=6, verbose=1,
                  callback=lambda info: infos.append(dict(info)) or info["epoch"] == 3)
        assert [i["epoch"] for i in infos] == [0, 1, 2, 3]
        assert m.n_epochs == 3 and m.params["status"] == "stopped"
        assert list(m.history["epoch"]) == [0, 1, 2, 3]
        assert np.allclose(m.history["passes"], [expected[train](k) for k in range(4)])
        assert [i["passes"] for i in infos] == list(m.history["passes"])
        assert np.array_equal([i["primal"] for i in infos], m.history["primal"])
        assert np.all(np.diff(m.history["time"]) >= 0)
        assert np.isnan(m.history["dual"]).all() and np.isnan(m.history["gap"]).all()
        assert m.history["primal"][0] == pytest.approx(
            spectral.objective(X, y, np.zeros(X.shape[1]), make_spectrum("esrm", n), 1 / n),
            rel=1e-14)
        assert infos[-1]["coef"].flags.writeable is False
        assert "primal" in capsys.readouterr().out
        with pytest.raises(ZeroDivisionError):
            train(X, y, spectrum="esrm", max_epochs=3, callback=lambda info: 1 / 0)
        m0 = train(X, y, spectrum="esrm", max_epochs=0, warm_start=m)
        assert np.array_equal(m0.coef, m.coef) and m0.n_epochs == 0


def test_divergence_warns(yacht):
    X, y = yacht
    for train, alpha in [(train_lsvrg, 5.0), (train_prospect, 5.0), (train_spectral_sgd, 5.0)]:
        with pytest.warns(ConvergenceWarning, match="diverged"):
            m = train(X, y, spectrum="extremile", alpha=alpha, max_epochs=500)
        assert m.params["status"] == "diverged" and m.n_epochs < 500
        assert not np.isfinite(m.history["primal"][-1]) or m.n_epochs < 500


def test_ctrl_c_stops_a_long_run(yacht):
    X, y = yacht
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        for train in SOLVERS:
            timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
            t0 = time.perf_counter()
            timer.start()
            try:
                with pytest.raises(KeyboardInterrupt):
                    train(X, y, spectrum="esrm", alpha=1e-3, max_epochs=10 ** 8,
                          callback=lambda info: info["time"] > 10.0)   # bounded if it fails
            finally:
                timer.cancel()
            assert time.perf_counter() - t0 < 10.0
    finally:
        signal.signal(signal.SIGINT, old)


@pytest.mark.parametrize("train", SOLVERS)
def test_bad_inputs(yacht, spectral, train):
    X, y = yacht
    n = len(y)
    spectral.assert_spectrum_input_errors(train, X, y)
    with pytest.raises(ValueError, match="loss"):
        train(X, y, spectrum="erm", loss="hinge")
    with pytest.raises(ValueError, match="two are needed|single class"):
        train(X, np.ones(n), spectrum="erm", loss="logistic")
    with pytest.raises(ValueError, match="y"):
        train(X, np.arange(n) % 3, spectrum="erm", loss="logistic")
    with pytest.raises(ValueError, match="alpha must be > 0"):
        train(X, y, spectrum="erm", alpha=-1.0)
    with pytest.raises(ValueError, match="alpha must be one of"):
        train(X, y, spectrum="erm", alpha="big")
    with pytest.raises(ValueError, match="mu must be >= 0"):
        train(X, y, spectrum="erm", mu=-1.0)
    with pytest.raises(ValueError, match="max_epochs must be >= 0"):
        train(X, y, spectrum="erm", max_epochs=-1)
    with pytest.raises(ValueError, match="warm_start"):
        train(X, y, spectrum="erm", warm_start=np.zeros(X.shape[1] + 1))
    with pytest.raises(TypeError, match="callback"):
        train(X, y, spectrum="erm", callback=3)


def test_bad_inputs_specific(yacht):
    X, y = yacht
    n = len(y)
    with pytest.raises(ValueError, match="alpha.*too large"):
        train_lsvrg(X, y, spectrum="erm", alpha=2.0 * n)
    with pytest.raises(ValueError, match="alpha.*too large"):
        train_spectral_sgd(X, y, spectrum="erm", alpha=2.0 * n)
    for train in (train_lsvrg, train_spectral_sgd):
        with pytest.raises(ValueError, match="batch_size"):
            train(X, y, spectrum="erm", batch_size=n + 1)
        with pytest.raises(ValueError, match="batch_size"):
            train(X, y, spectrum="erm", batch_size=0)
    with pytest.raises(ValueError, match="sampling"):
        train_lsvrg(X, y, spectrum="erm", batch_size=4, sampling="uniform")
    with pytest.raises(ValueError, match="form"):
        train_lsvrg(X, y, spectrum="erm", form="newton")
    # the prox form takes any alpha; batch_size defaults to min(64, n)
    train_lsvrg(X, y, spectrum="erm", alpha=2.0 * n, form="prox", max_epochs=0)
    assert train_spectral_sgd(X[:10], y[:10], max_epochs=0).params["batch_size"] == 10
