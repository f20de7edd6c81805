"""SOREL (Ge & Jiang 2024): its iterates, its certificate, its convergence.

Oracles: a direct ridge solve, a dense NumPy twin (plain NumPy + sklearn's isotonic
regression for the projection, no dualsolve code) replaying the sampled rows, and the
certified optimum of ``spectral_reference`` (itself checked in test_spectral_reference.py).
"""
import numpy as np
import pytest
import scipy.sparse as sp

from dualsolve import ConvergenceWarning

from dualsolve.spectral import spectrum as make_spectrum
from dualsolve.spectral.reference import spectral_reference
from dualsolve.spectral.sorel import run_traced, spectral_objective, train_sorel

SPECTRA = [("superquantile", 0.5), ("extremile", 2.5), ("esrm", 2.0)]


# ---------------------------------------------------------------------------------------
# the dense twin


def twin_projection(z, sigma):
    isotonic_regression = pytest.importorskip("sklearn.isotonic").isotonic_regression
    perm = np.argsort(z, kind="stable")
    s = z[perm]
    out = np.empty_like(z)
    out[perm] = s - isotonic_regression(s - sigma, increasing=True)
    return out


def sorel_twin(X, y, sigma, lam, step, c, prox_scale, epochs, trace, b=1, T=None,
               form="gradient", loss="squared", w0=None, eta_max=None, guard=True):
    """Ge & Jiang's practical SOREL (their section 5 / appendix B, mini-batches as in their
    Figure 3) written densely, the rows taken from ``trace`` in order; ``guard``: the
    dual-step guard of train_sorel (c halved once three successive dual steps alternate,
    cos < -1/2, without dying out). After the last epoch: the next dual step and the
    certificate of w_K with that lambda. Returns (w_K, lambda_{K+1}, the gap)."""
    X = np.asarray(X.todense()) if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    n, d = X.shape
    T = n // b if T is None else T
    w = np.zeros(d) if w0 is None else np.array(w0, dtype=float)

    def oracle(w):
        m = X @ w
        if loss == "squared":
            return 0.5 * (m - y) ** 2, m - y
        return np.logaddexp(0.0, -y * m), -y / (1.0 + np.exp(y * m))

    def deriv(m, yy):
        return m - yy if loss == "squared" else -yy / (1.0 + np.exp(yy * m))

    l, dbar = oracle(w)
    dual = np.empty(n)
    dual[np.argsort(l, kind="stable")] = sigma
    lprev = l
    pos = 0
    ce, steps, anti = c, [], 0
    for k in range(epochs + 1):
        theta = k / (k + 1)
        eta = ce * (k + 1) / n
        if eta_max is not None:
            eta = min(eta, eta_max)
        tau = prox_scale * n / (k + 1)
        dual_old = dual
        dual = twin_projection(dual + eta * ((1 + theta) * l - theta * lprev), sigma)
        if guard:
            s = dual - dual_old
            if steps:
                p = steps[-1]
                anti = anti + 1 if s @ s > 0 and p @ p > 0 and s @ p < -0.5 * np.sqrt(
                    (s @ s) * (p @ p)) else 0
            steps = (steps + [s])[-4:]
            if anti >= 3 and len(steps) == 4 and (np.linalg.norm(steps[-1])
                                                  >= 0.9 * np.linalg.norm(steps[0])):
                ce, anti = 0.5 * ce, 0
        if k == epochs:
            break
        lprev = l
        gbar = X.T @ (dual * dbar)
        wk = w.copy()
        for _ in range(T):
            S = trace[pos:pos + b]
            pos += b
            c_S = (n / b) * dual[S] * (deriv(X[S] @ w, y[S]) - dbar[S])
            dvec = X[S].T @ c_S + gbar
            if form == "gradient":
                w = w - step * (dvec + lam * w + (w - wk) / tau)
            else:
                w = (w - step * dvec + (step / tau) * wk) / (1 + step * lam + step / tau)
        l, dbar = oracle(w)
    # the certificate at w_K with lambda_{K+1}:
    # G = [R(l) - lambda^T l] + ||X^T (lambda * dbar) + lam w||^2 / (2 lam)
    u = X.T @ (dual * dbar) + lam * w
    return w, dual, max(float(np.sort(l) @ sigma - dual @ l), 0.0) + u @ u / (2 * lam)


# ---------------------------------------------------------------------------------------
# ERM reduction


@pytest.mark.parametrize("form", ["gradient", "prox"])
def test_erm_equals_ridge(spectral, yacht, form):
    X, y = yacht
    n = len(y)
    w = spectral.ridge(X, y, 1.0 / n)
    m = train_sorel(sp.csr_matrix(X), y, spectrum="erm", step=0.05, max_epochs=300, form=form,
                    tol=0.0)
    assert np.abs(m.coef - w).max() <= 1e-12 * np.abs(w).max()
    assert np.allclose(m.dual, 1.0 / n, rtol=0, atol=1e-15)    # lambda stays at 1/n
    Fstar = spectral.objective(X, y, w, np.full(n, 1.0 / n), 1.0 / n)
    assert m.history["primal"][-1] - Fstar <= 1e-14 * Fstar
    # the certificate closes (lambda = 1/n: the ridge gradient's norm) and is never wrong
    assert 0.0 <= m.history["gap"][-1] <= 1e-13 * Fstar
    assert np.all(m.history["dual"] <= Fstar * (1 + 1e-14))
    # the default tol stops it as soon as the gap is <= tol F(0), certified
    m2 = train_sorel(sp.csr_matrix(X), y, spectrum="erm", step=0.05, max_epochs=300, form=form)
    assert m2.stop_reason == "converged" and m2.n_epochs < 300
    assert m2.history["gap"][-1] <= 1e-8 * m2.params["f0"]
    assert m2.history["primal"][-1] - Fstar <= m2.history["gap"][-1]


def test_erm_equals_ridge_minibatch_and_sparse_float32(spectral):
    rng = np.random.default_rng(0)
    n, d = 200, 30
    X = sp.random(n, d, density=0.2, random_state=1, format="csr", dtype=np.float64)
    X.data = np.sign(X.data - 0.5) * (0.5 + X.data)
    y = X @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n)
    mu = 0.01
    w = spectral.ridge(X.toarray(), y, mu)
    m = train_sorel(X, y, spectrum="erm", lam=mu, step=0.1, batch_size=8, max_epochs=300,
                    form="prox", tol=0.0)
    assert np.abs(m.coef - w).max() <= 1e-10 * np.abs(w).max()
    X32 = X.astype(np.float32)
    X32.indices = X32.indices.astype(np.int64)
    X32.indptr = X32.indptr.astype(np.int64)
    w32 = spectral.ridge(X32.toarray().astype(np.float64), y, mu)
    m32 = train_sorel(X32, y, spectrum="erm", lam=mu, step=0.1, max_epochs=200, form="prox",
                      tol=0.0)
    assert np.abs(m32.coef - w32).max() <= 1e-10 * np.abs(w32).max()


# ---------------------------------------------------------------------------------------
# the dense twin replays the same rows


TWIN_CASES = [
    dict(kind="superquantile", b=1, form="gradient", dtype=np.float64, itype=np.int32),
    dict(kind="extremile", b=1, form="prox", dtype=np.float32, itype=np.int64),
    dict(kind="esrm", b=5, form="gradient", dtype=np.float64, itype=np.int64),
    dict(kind="superquantile", b=4, form="prox", dtype=np.float32, itype=np.int32),
    dict(kind="extremile", b=1, form="gradient", dtype=np.float64, itype=np.int32,
         sampling="permutation"),
]


@pytest.mark.parametrize("case", TWIN_CASES)
def test_twin_equals_cython(spectral, case):
    rng = np.random.default_rng(7)
    n, d = 60, 25
    X = sp.random(n, d, density=0.3, random_state=3, format="csr")
    X.data = rng.standard_normal(X.nnz)
    X = X.astype(case["dtype"])
    X.indices = X.indices.astype(case["itype"])
    X.indptr = X.indptr.astype(case["itype"])
    X.indices = X.indices.copy()
    y = rng.standard_normal(n)
    sigma = make_spectrum(case["kind"], n)
    b, epochs = case["b"], 7
    sampling = case.get("sampling", "uniform" if b == 1 else "permutation")
    T = n if sampling == "uniform" else n // b
    trace = np.full(epochs * T * b, -1, dtype=np.intp)
    w0 = 0.1 * rng.standard_normal(d)
    kw = dict(spectrum=case["kind"], lam=0.02, step=0.02, dual_step_scale=0.3, batch_size=b,
              sampling=sampling, form=case["form"], max_epochs=epochs, seed=11, warm_start=w0,
              tol=0.0)
    m = run_traced(train_sorel, X, y, trace=trace, **kw)
    assert trace.min() >= 0
    if sampling == "permutation":         # disjoint batches within an epoch
        per = trace.reshape(epochs, T * b)
        assert all(len(set(r)) == T * b for r in per)
    Xd = X.astype(np.float64)
    w, dual, gap = sorel_twin(Xd, y, sigma, 0.02, 0.02, 0.3, 20.0, epochs, trace, b=b,
                              form=case["form"], w0=w0)
    assert np.abs(m.coef - w).max() <= 1e-12 * max(1.0, np.abs(w).max())
    assert np.abs(m.dual - dual).max() <= 1e-12
    F = spectral.objective(Xd.toarray(), y, w, sigma, 0.02)
    assert m.history["primal"][-1] == pytest.approx(F, rel=1e-12)
    assert m.history["gap"][-1] == pytest.approx(gap, rel=1e-9)
    assert m.history["dual"][-1] == pytest.approx(F - gap, rel=1e-12)
    # same seed, same result; dense input gives the same output as CSR (float64 case)
    m2 = train_sorel(X, y, **kw)
    assert np.array_equal(m2.coef, m.coef)
    if case["dtype"] == np.float64 and case["itype"] == np.int32:
        m3 = train_sorel(X.toarray(), y, **kw)
        assert np.array_equal(m3.coef, m.coef)


def test_twin_logistic_and_eta_cap():
    rng = np.random.default_rng(5)
    n, d = 50, 8
    X = rng.standard_normal((n, d))
    y = np.where(X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    sigma = make_spectrum("esrm", n)
    epochs = 6
    trace = np.full(epochs * n, -1, dtype=np.intp)
    m = run_traced(train_sorel, X, y, loss="logistic", spectrum="esrm", lam=0.05, step=0.05,
               dual_step_scale=2.0, dual_step_max=0.1, max_epochs=epochs, tol=0.0, trace=trace)
    w, dual, gap = sorel_twin(X, y, sigma, 0.05, 0.05, 2.0, 20.0, epochs, trace, T=n,
                              loss="logistic", eta_max=0.1)
    assert np.abs(m.coef - w).max() <= 1e-12 * max(1.0, np.abs(w).max())
    assert np.abs(m.dual - dual).max() <= 1e-12
    assert m.history["gap"][-1] == pytest.approx(gap, rel=1e-9)
    assert np.all(m.history["eta"] <= 0.1)


def test_batch_one_permutation_equals_serial_stream(spectral):
    """Mini-batch SOREL with b = 1 is the serial method on the same rows."""
    X, y = spectral.standardized("yacht")
    n = len(y)
    tr1 = np.full(5 * n, -1, dtype=np.intp)
    tr2 = np.full(5 * n, -1, dtype=np.intp)
    kw = dict(spectrum="esrm", step=0.02, dual_step_scale=0.1, max_epochs=5, seed=4, tol=0.0)
    m1 = run_traced(train_sorel, X, y, batch_size=1, sampling="permutation", trace=tr1, **kw)
    w, _, _ = sorel_twin(X, y, make_spectrum("esrm", n), 1.0 / n, 0.02, 0.1, 20.0, 5, tr1, b=1)
    assert np.abs(m1.coef - w).max() <= 1e-12
    m2 = run_traced(train_sorel, X, y, batch_size=1, sampling="uniform", trace=tr2, **kw)
    assert not np.array_equal(tr1, tr2)          # a different stream, same algorithm
    w2, _, _ = sorel_twin(X, y, make_spectrum("esrm", n), 1.0 / n, 0.02, 0.1, 20.0, 5, tr2,
                          b=1, T=n)
    assert np.abs(m2.coef - w2).max() <= 1e-12


# ---------------------------------------------------------------------------------------
# convergence to the certified optimum


@pytest.mark.parametrize("kind,param", SPECTRA)
@pytest.mark.parametrize("form", ["gradient", "prox"])
def test_converges_to_reference(spectral, yacht, kind, param, form):
    X, y = yacht
    ref = spectral_reference(X, y, spectrum=kind, spectrum_param=param)
    assert ref.gap <= 1e-12 * ref.primal
    step, c = (0.03, 0.4) if kind == "superquantile" else (0.03, 0.1)
    m = train_sorel(X, y, spectrum=kind, spectrum_param=param, step=step, dual_step_scale=c,
                    max_epochs=400, form=form, seed=1, tol=0.0)
    Fk = m.history["primal"]
    assert Fk[-1] >= ref.dual - 1e-15 * ref.primal        # never below the certified bound
    assert (Fk[-1] - ref.primal) / ref.primal <= 1e-8
    assert np.all(Fk >= ref.dual - 1e-15 * ref.primal)
    assert Fk[-1] < Fk[0]
    # lambda approaches the dual optimum, w the primal one (||w - w*||^2 <= 2 gap / lam)
    assert np.abs(m.dual - ref.loss_weights).sum() <= 1e-2
    assert np.linalg.norm(m.coef - ref.coef) <= np.sqrt(2 * (Fk[-1] - ref.dual) / ref.lam) + 1e-12
    Fw = spectral.objective(X, y, m.coef, ref.sigma, ref.lam)
    assert Fw == pytest.approx(Fk[-1], rel=1e-13)
    # the certificate: a lower bound at every epoch (never above the certified optimum's
    # upper bound), closing to 1e-8 of F*
    D, G = m.history["dual"], m.history["gap"]
    assert np.all(D <= ref.primal + 1e-15 * ref.primal)
    assert np.allclose(Fk - D, G, rtol=1e-12, atol=1e-15 * ref.primal)
    assert G[-1] <= 1e-8 * ref.primal


@pytest.mark.parametrize("kind,param", SPECTRA)
def test_stops_on_the_certificate(spectral, yacht, kind, param):
    """With tol the run stops at the first epoch whose certified gap is <= tol (F - G) (so
    (F - F*) / F* <= tol), and the reference agrees: F(w) - F* <= gap; F(0) is
    R_sigma(y^2/2), the scale of the rounding floor."""
    X, y = yacht
    n = len(y)
    ref = spectral_reference(X, y, spectrum=kind, spectrum_param=param)
    tol = 1e-8
    m = train_sorel(X, y, spectrum=kind, spectrum_param=param, step=0.03, tol=tol)
    assert m.stop_reason == "converged" and m.converged
    f0 = float(make_spectrum(kind, n, param) @ np.sort(0.5 * y ** 2))
    assert m.params["f0"] == pytest.approx(f0, rel=1e-14)
    G = m.history["gap"]
    lower = m.history["primal"] - G
    assert G[-1] <= tol * lower[-1] and np.all(G[:-1] > tol * lower[:-1])
    assert (m.history["primal"][-1] - ref.dual) / ref.dual <= tol
    assert 0.0 <= m.history["primal"][-1] - ref.primal <= G[-1] + 1e-15 * ref.primal
    assert m.history["dual"][-1] <= ref.primal


@pytest.mark.parametrize("form", ["gradient", "prox"])
def test_eta_cap_keeps_long_runs_at_the_optimum(yacht, form):
    """eta_k = c (k+1)/n grows without bound; with the fixed inner budget (T = n) the
    uncapped CVaR run on yacht reaches 1e-15 by epoch 400 and is thrown off again around
    epoch 450 (observed, not a theorem). The cap (the authors' mini-batch code freezes eta
    after 400 dual steps) keeps it there."""
    X, y = yacht
    ref = spectral_reference(X, y, spectrum="superquantile")
    m = train_sorel(X, y, spectrum="superquantile", step=0.03, dual_step_scale=0.4,
                    dual_step_max=0.5, max_epochs=1000, form=form, tol=0.0)
    rel = (m.history["primal"][400:] - ref.primal) / ref.primal
    assert rel.max() <= 1e-9 and rel.min() >= -1e-13


def test_minibatch_converges(yacht):
    X, y = yacht
    ref = spectral_reference(X, y, spectrum="extremile")
    m = train_sorel(X, y, spectrum="extremile", batch_size=16, step=0.1, dual_step_scale=0.2,
                    max_epochs=400, form="prox", seed=2, tol=0.0)
    assert (m.history["primal"][-1] - ref.primal) / ref.primal <= 1e-8
    assert m.history["gap"][-1] <= 1e-8 * ref.primal


def test_distance_decreases_on_average(yacht):
    """The seed-averaged ||w_K - w*||^2 decreases from K to 2K (Ge & Jiang, Theorem 1)."""
    X, y = yacht
    ref = spectral_reference(X, y, spectrum="superquantile")

    def dist(K):
        return np.mean([np.sum((train_sorel(X, y, spectrum="superquantile", step=0.03,
                                            dual_step_scale=0.4, max_epochs=K, seed=s,
                                            tol=0.0).coef - ref.coef) ** 2)
                        for s in range(4)])
    d = [dist(K) for K in (10, 20, 40, 80, 160)]
    assert all(b < a for a, b in zip(d, d[1:])), d
    assert d[-1] < 1e-7


# ---------------------------------------------------------------------------------------
# the paper's two-sample counterexample (appendix C)


@pytest.mark.parametrize("lam", [0.01, 0.1])
def test_toy_converges_with_dual_prox(lam):
    X = np.ones((2, 1))
    y = np.array([1.0, -1.0])
    sigma = np.array([0.0, 1.0])                         # the maximum loss; w* = 0
    m = train_sorel(X, y, spectrum=sigma, lam=lam, step=0.05, dual_step_scale=0.02,
                    steps_per_epoch=200, max_epochs=300, warm_start=[0.3], seed=0, tol=0.0)
    assert abs(m.coef[0]) < 1e-6
    assert np.allclose(m.dual, [0.5, 0.5], atol=1e-6)
    assert m.history["primal"][-1] == pytest.approx(0.5, abs=1e-12)   # F(0) = 1/2
    assert m.history["gap"][-1] <= 1e-10


@pytest.mark.parametrize("lam", [0.01, 0.1])
def test_toy_oscillates_without_dual_prox(lam):
    X = np.ones((2, 1))
    y = np.array([1.0, -1.0])
    seen = []
    m = train_sorel(X, y, spectrum=[0.0, 1.0], lam=lam, step=0.05, steps_per_epoch=200,
                    max_epochs=60, warm_start=[0.3], dual_prox=False, tol=0.0,
                    callback=lambda info: seen.append(info["coef"][0]))
    w = np.array(seen[10:])
    assert np.all(np.sign(w[1:]) == -np.sign(w[:-1]))   # jumps from side to side
    assert np.mean(np.abs(w)) > 0.5 and np.all(np.abs(w) > 0.1)   # never near w* = 0
    assert np.all(m.history["primal"][10:] > 0.5 + 0.05)           # F* = 1/2
    # with the proximal terms but a large dual step the paper's method fails too (c >= 0.05
    # on this toy); the dual-step guard is what rescues it (next test)
    m2 = train_sorel(X, y, spectrum=[0.0, 1.0], lam=lam, step=0.05, dual_step_scale=2.0,
                     steps_per_epoch=200, max_epochs=300, warm_start=[0.3], dual_step_guard=False,
                     tol=0.0)
    assert abs(m2.coef[0]) > 1e-3
    eta = m2.history["eta"][:-1]                        # the eta of the 300 epochs run
    assert np.array_equal(eta, 2.0 * np.arange(1, 301) / 2)   # never capped


# ---------------------------------------------------------------------------------------
# the dual-step guard (dual_step_guard, the default)


@pytest.mark.parametrize("lam", [0.01, 0.1])
@pytest.mark.parametrize("c", [0.05, 0.2, 2.0, 20.0])
def test_guard_rescues_the_toy(lam, c):
    """Without the guard every c >= 0.05 oscillates (lambda jumps between the vertices);
    with it c is halved until the dual steps stop alternating, and the run converges."""
    X = np.ones((2, 1))
    y = np.array([1.0, -1.0])
    kw = dict(spectrum=[0.0, 1.0], lam=lam, step=0.05, dual_step_scale=c, steps_per_epoch=200,
              max_epochs=300, warm_start=[0.3], seed=0, tol=0.0)
    m0 = train_sorel(X, y, dual_step_guard=False, **kw)
    assert abs(m0.coef[0]) > 1e-3                          # the paper's schedule fails
    m = train_sorel(X, y, **kw)
    assert m.params["dual_step_guard"] is True
    assert abs(m.coef[0]) < 1e-6
    assert np.allclose(m.dual, [0.5, 0.5], atol=1e-6)
    eta, sched = m.history["eta"][:-1], c * np.arange(1, 301) / 2
    ratio = eta / sched                                    # the factor applied to c
    assert ratio[0] == 1.0 and ratio[-1] < 1.0
    assert np.all(np.diff(ratio) <= 0)                     # c only goes down ...
    assert np.all(np.isin(np.log2(ratio), np.arange(-60, 1)))   # ... by halvings


def test_twin_equals_cython_when_the_guard_acts():
    X = np.ones((2, 1))
    y = np.array([1.0, -1.0])
    epochs, T = 40, 50
    trace = np.full(epochs * T, -1, dtype=np.intp)
    m = run_traced(train_sorel, X, y, spectrum=[0.0, 1.0], lam=0.01, step=0.05,
                   dual_step_scale=2.0, steps_per_epoch=T, max_epochs=epochs, warm_start=[0.3],
                   tol=0.0, trace=trace)
    assert m.history["eta"][epochs - 1] < 2.0 * epochs / 2      # the guard acted
    w, dual, gap = sorel_twin(X, y, np.array([0.0, 1.0]), 0.01, 0.05, 2.0, 20.0, epochs,
                              trace, T=T, w0=[0.3])
    assert np.abs(m.coef - w).max() <= 1e-12 and np.abs(m.dual - dual).max() <= 1e-12
    w2, _, _ = sorel_twin(X, y, np.array([0.0, 1.0]), 0.01, 0.05, 2.0, 20.0, epochs, trace,
                          T=T, w0=[0.3], guard=False)
    assert np.abs(w2 - w).max() > 1e-3                      # and it mattered


@pytest.mark.parametrize("kind,param,step,c,left", [("esrm", 2.0, 0.03, 0.1, 600),
                                                    ("extremile", 2.5, 0.03, 0.1, 800),
                                                    ("superquantile", 0.5, 0.03, 0.4, 400)])
def test_guard_keeps_long_runs_at_the_optimum(yacht, kind, param, step, c, left):
    """The paper's schedule (eta_k = c (k+1)/n, no cap) leaves the optimum on yacht after a
    few hundred epochs once it reached 1e-13 (eta past the dual's stability limit on the
    optimal face); the guard keeps it there, and does not act before 1e-9."""
    X, y = yacht
    n = len(y)
    ref = spectral_reference(X, y, spectrum=kind, spectrum_param=param)
    kw = dict(spectrum=kind, spectrum_param=param, step=step, dual_step_scale=c,
              max_epochs=1000, seed=1, tol=0.0)
    m0 = train_sorel(X, y, dual_step_guard=False, **kw)
    rel0 = (m0.history["primal"] - ref.primal) / ref.primal
    assert rel0[:left].min() <= 1e-13 and rel0[left:].max() >= 1e-3   # reached, then left
    m = train_sorel(X, y, **kw)
    rel = (m.history["primal"] - ref.primal) / ref.primal
    assert rel[300:].max() <= 1e-8 and rel[left:].max() <= 1e-13
    eta = m.history["eta"][:-1]
    first = np.flatnonzero(eta < c * np.arange(1, 1001) / n * (1 - 1e-12))
    assert first.size and first[0] > np.flatnonzero(rel <= 1e-9)[0]  # only after 1e-9
    assert np.array_equal(m.history["primal"][:first[0] + 1],
                          m0.history["primal"][:first[0] + 1])


# ---------------------------------------------------------------------------------------
# API


def test_model_history_and_callback(spectral, yacht, capsys):
    X, y = yacht
    n = len(y)
    infos = []
    m = train_sorel(X, y, spectrum="esrm", step=0.02, max_epochs=5, verbose=1,
                    callback=lambda info: infos.append(info["epoch"]) or info["epoch"] == 3)
    assert infos == [0, 1, 2, 3] and m.n_epochs == 3 and m.stop_reason == "callback"
    assert m.history.shape == (4,) and list(m.history["epoch"]) == [0, 1, 2, 3]
    assert m.history.dtype.names == ("epoch", "time", "primal", "dual", "gap", "passes", "eta")
    assert np.allclose(m.history["passes"], 2.0 * np.arange(4))
    h = m.history
    assert np.all(h["gap"] >= 0) and np.allclose(h["primal"] - h["dual"], h["gap"], rtol=1e-12)
    assert m.history["primal"][0] == pytest.approx(spectral.objective(
        X, y, np.zeros(X.shape[1]), make_spectrum("esrm", n), 1 / n), rel=1e-14)
    assert "primal" in capsys.readouterr().out
    assert m.dual.shape == (n,) and abs(m.dual.sum() - 1) < 1e-12
    assert spectral_objective(X, y, m.coef, spectrum="esrm") == pytest.approx(
        spectral.objective(X, y, m.coef, make_spectrum("esrm", n), 1 / n), rel=1e-14)
    with pytest.raises(ZeroDivisionError):
        train_sorel(X, y, spectrum="esrm", max_epochs=3, callback=lambda info: 1 / 0)
    w = m.coef.copy()
    m2 = train_sorel(X, y, spectrum="esrm", step=0.02, max_epochs=0, warm_start=m)
    assert np.array_equal(m2.coef, w)
    # a warm start also takes the model's lambda: its certificate is the model's last one
    # (or the next dual step's, when better)
    assert m2.history["gap"][0] <= m.history["gap"][-1] * (1 + 1e-12)


def test_divergence_stops_with_the_diverged_epoch_in_the_history(yacht):
    X, y = yacht
    with pytest.warns(ConvergenceWarning, match="train_sorel diverged.*decrease step"):
        m = train_sorel(X, y, spectrum="extremile", step=0.5, form="prox", max_epochs=500)
    assert m.stop_reason == "diverged" and m.n_epochs < 500
    assert len(m.history) == m.n_epochs + 1
    last = m.history["primal"][-1]
    assert not np.isfinite(last) or last > 1e4 * m.history["primal"][0]


def test_bad_inputs(yacht, spectral):
    X, y = yacht
    n = len(y)
    spectral.assert_spectrum_input_errors(train_sorel, X, y)
    with pytest.raises(ValueError, match="spectrum_param"):
        train_sorel(X, y, spectrum=np.full(n, 1.0 / n), spectrum_param=0.5)
    with pytest.raises(ValueError, match="step"):
        train_sorel(X, y, spectrum="erm", step=-1.0)
    with pytest.raises(ValueError, match="step.*too large"):
        train_sorel(X, y, spectrum="erm", step=500.0, max_epochs=10)
    with pytest.raises(ValueError, match="batch_size"):
        train_sorel(X, y, spectrum="erm", batch_size=n + 1)
    with pytest.raises(ValueError, match="sampling"):
        train_sorel(X, y, spectrum="erm", batch_size=4, sampling="uniform")
    with pytest.raises(ValueError, match="loss"):
        train_sorel(X, y, spectrum="erm", loss="hinge")
    with pytest.raises(ValueError, match="dual_step_scale must"):
        train_sorel(X, y, spectrum="erm", dual_step_scale=-0.1)
    with pytest.raises(ValueError, match="warm_start"):
        train_sorel(X, y, spectrum="erm", warm_start=np.zeros(X.shape[1] + 1))
    with pytest.raises(ValueError, match="form"):
        train_sorel(X, y, spectrum="erm", form="newton")
    with pytest.raises(ValueError, match="two are needed|one class only"):
        train_sorel(X, np.ones(n), spectrum="erm", loss="logistic")
    with pytest.raises(ValueError, match="lam must be > 0"):
        train_sorel(X, y, spectrum="erm", lam=0.0)


def test_liblinear_c_is_the_lam_alias(yacht):
    X, y = yacht
    n = len(y)
    a = train_sorel(X, y, spectrum="esrm", lam=0.25 / n, max_epochs=3, tol=0.0)
    b = train_sorel(X, y, spectrum="esrm", C=4.0, max_epochs=3, tol=0.0)
    assert np.array_equal(a.coef, b.coef) and b.params["C"] == pytest.approx(4.0)
    with pytest.raises(ValueError, match="either lam or C"):
        train_sorel(X, y, lam=1.0, C=1.0)
