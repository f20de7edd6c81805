"""Figures 1-3 of Wang & Xiao (ICML 2017), "Exploiting strong convexity from data with
primal-dual first-order algorithms", redone with dualsolve's primal-dual family
(docs/primal_dual.md describes the protocol and reads the results).

Every panel plots the primal suboptimality P(x) - P* (log scale) against passes over the
data, for lam in {1/n, 1e-2/n, 1e-4/n} (strong, medium, weak regularisation; 3 panels a row):

* fig1, batch methods, ridge, synthetic1: Primal AG (Nesterov on P with strong convexity
  lam, numpy, below), BPD (Delta = 0), Opt-BPD (Delta = delta mu^2, exact), Ada-BPD with the
  paper's robust rule (Alg. 4) and with the simple rule (Alg. 3, our default).
* fig2, randomized methods, ridge: synthetic1, kin8nm, power-plant (UCI; in place of the
  paper's cpuact): SVRG, Katyusha, SAGA (scikit-learn), SDCA (dualsolve's, not in the
  paper), SPDC, DF-SPDC, Ada-SPDC, ADF-SPDC, and Opt-SPDC (Delta = mu^2 exact; not in the
  paper).
* fig3, the same methods, logistic regression: synthetic2, reuters, news20 (in place of
  rcv1; built by bench/datasets.py).

Data. synthetic1: n=5000, d=3000, rows ~ N(0, Sigma), Sigma_ij = 2^(-|i-j|/2) (the paper
prints 2^(|i-j|/2), not a covariance), targets b = A x_true + 0.1 eps. synthetic2: n=5000,
d=500, Sigma_ij = 2^(-|i-j|/100),
labels sign(z + 0.5 std(z) eps), z = A x_true; x_true, eps ~ N(0, I), seed 0. kin8nm and
power-plant: the bundled UCI files (``dualsolve.datasets.load``), raw features, targets
centred and scaled to unit variance. Every matrix is row-normalised, a_i / max_j ||a_j||.

P*: ridge by a dense Cholesky solve of the normal equations in float64 (plus one step of
iterative refinement), certified by ||grad P||^2 / (2 (lam + mu^2/n)); logistic by liblinear's
primal Newton at eps=1e-12 polished by L-BFGS-B (``peers.reference_optimum``, certificate
||grad P||^2 / (2 lam)) and, as a cross-check, ``train_sdca`` to a duality gap of 1e-13 P(0)
(epoch-capped). P* is the smallest certified upper value; its uncertainty is the gap to the
largest certified lower bound. Every curve is P evaluated by this script (float64) at the
iterate each solver reports after every pass / iteration, not the solver's own value. Curves
are clipped below at max(1e-14 |P*|, 2 x the P* uncertainty); every run stops there.

Pass accounting (x axis). Batch methods and Primal AG: one iteration = one pass (one X @ x
and one X.T @ y). SPDC family: one epoch = n sampled rows = one pass. SVRG and Katyusha
(m = 2n): the solver's own count, 1 pass for the first snapshot gradient, then 3 per epoch
(2n stochastic steps + the next snapshot's full gradient; the per-row derivatives at the
snapshot are stored, so a stochastic step costs one row). SAGA: one epoch = n steps = one
pass. Objective and duality-gap evaluations are never counted, for any method (the
adaptive variants evaluate the gap after every pass; counting it would double their x axis).

SAGA is scikit-learn's (``Ridge`` / ``LogisticRegression(solver="saga")``, C = 1/(lam n),
alpha = lam n, no intercept, tol=0, its own step 1/(2 L + min(2 n lam, L))). Each point is
a separate fit from x = 0 with ``max_iter=k`` on a geometric grid of k and a fixed
random_state: sag seeds its row sampler once per fit, so the k-epoch fit is the first k
epochs of the longest one.

Usage (one process, single-threaded BLAS)::

    export DUALSOLVE_DATA=/path/to/data OPENBLAS_NUM_THREADS=1
    python bench/primal_dual_figures.py                      # all figures, ~27 min
    python bench/primal_dual_figures.py --only fig2 --datasets kin8nm power-plant
    python bench/primal_dual_figures.py --quick              # smoke run (tiny sizes/budgets)
    python bench/primal_dual_figures.py --only fig2 fig3 --lam 1e-4/n   # one panel a row

Writes bench/results/primal_dual_figures.json (merged per figure and data set, so partial
runs keep the other panels) and docs/img/primal_dual_<fig>_<dataset>.png.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402
import scipy.sparse as sp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)               # the in-place build of this checkout, not an installed copy

import datasets as text_datasets  # noqa: E402

import dualsolve  # noqa: E402
from dualsolve import datasets as bundled  # noqa: E402

LAM_SCALES = (1.0, 1e-2, 1e-4)
LAM_LABELS = {1.0: "1/n", 1e-2: "1e-2/n", 1e-4: "1e-4/n"}
FLOOR_REL = 1e-14
ROUNDING_REL = 1e-13                   # P below P* by less than this x |P*|: rounding (n ~ 1e4)
TARGETS = (1e-3, 1e-6, 1e-9)          # reductions of the initial suboptimality P(0) - P*
SEED = 0

BATCH = ("Primal AG", "BPD", "Opt-BPD", "Ada-BPD (robust)", "Ada-BPD (simple)")
RANDOM = ("SVRG", "Katyusha", "SAGA", "SDCA", "SPDC", "DF-SPDC", "Ada-SPDC", "ADF-SPDC")
# Opt-SPDC (Delta = delta mu^2 exact) is not in the paper; added to the ridge rows (mu known)
RIDGE_RANDOM = RANDOM[:5] + ("Opt-SPDC",) + RANDOM[5:]
FIGURES = {
    "fig1": dict(loss="squared", datasets=("synthetic1",), methods=BATCH,
                 title="Figure 1: batch methods, ridge regression"),
    "fig2": dict(loss="squared", datasets=("synthetic1", "kin8nm", "power-plant"),
                 methods=RIDGE_RANDOM, title="Figure 2: randomized methods, ridge regression"),
    "fig3": dict(loss="logistic", datasets=("synthetic2", "reuters", "news20"),
                 methods=RANDOM, title="Figure 3: randomized methods, logistic regression"),
}
# budgets: batch iterations, and passes for the randomized methods
BATCH_ITERS = 400
PASSES = {"synthetic1": 200, "kin8nm": 200, "power-plant": 200, "synthetic2": 200,
          "reuters": 200, "news20": 100}
QUICK = dict(batch_iters=20, passes=6, synthetic1=(600, 300), synthetic2=(600, 100))
SYNTHETIC = {"synthetic1": dict(n=5000, d=3000, scale=2.0, loss="squared"),
             "synthetic2": dict(n=5000, d=500, scale=100.0, loss="logistic")}
SDCA_EPOCHS = 300                      # cap of the SDCA cross-check of P* (logistic)

STYLE = {
    "Primal AG": dict(color="tab:gray", ls="-"),
    "BPD": dict(color="tab:blue", ls="-"),
    "Opt-BPD": dict(color="tab:green", ls="-"),
    "Ada-BPD (robust)": dict(color="tab:red", ls="-"),
    "Ada-BPD (simple)": dict(color="tab:orange", ls="--"),
    "SVRG": dict(color="tab:gray", ls="-"),
    "Katyusha": dict(color="tab:brown", ls="-"),
    "SAGA": dict(color="tab:olive", ls="-", marker="."),
    "SDCA": dict(color="black", ls=":"),
    "SPDC": dict(color="tab:blue", ls="-"),
    "Opt-SPDC": dict(color="tab:green", ls=":"),
    "DF-SPDC": dict(color="tab:cyan", ls="--"),
    "Ada-SPDC": dict(color="tab:purple", ls="-"),
    "ADF-SPDC": dict(color="tab:red", ls="--"),
}


# ------------------------------------------------------------------------------ data

class Problem:
    """A row-normalised data set: X (CSR float64), b, the loss, and (small d) a dense copy."""

    def __init__(self, name, X, b, loss, dense=None, note=""):
        self.name, self.X, self.b, self.loss = name, X, b, loss
        self.dense, self.note = dense, note
        self.n, self.d = X.shape
        self.spectrum = None           # (L^2, mu^2) of X^T X, filled on demand


def row_normalise(X):
    """a_i / max_j ||a_j|| (dense ndarray or CSR), so that R = max_i ||a_i|| = 1."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        r = float(np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).max()))
        return sp.csr_matrix(X / r)
    return X / np.linalg.norm(X, axis=1).max()


def ar_rows(n, d, scale, rng):
    """n rows ~ N(0, Sigma), Sigma_ij = 2^(-|i-j|/scale): a stationary AR(1) recursion."""
    rho = 2.0 ** (-1.0 / scale)
    E = rng.standard_normal((n, d))
    A = np.empty((n, d))
    A[:, 0] = E[:, 0]
    s = np.sqrt(1.0 - rho * rho)
    for j in range(1, d):
        A[:, j] = rho * A[:, j - 1] + s * E[:, j]
    return A


def synthetic(name, quick=False):
    cfg = SYNTHETIC[name]
    n, d = QUICK[name] if quick else (cfg["n"], cfg["d"])
    rng = np.random.default_rng(SEED)
    A = row_normalise(ar_rows(n, d, cfg["scale"], rng))
    z = A @ rng.standard_normal(d)
    if cfg["loss"] == "squared":
        b = z + 0.1 * rng.standard_normal(n)
        note = "b = A x_true + 0.1 eps"
    else:
        b = np.where(z + 0.5 * z.std() * rng.standard_normal(n) >= 0.0, 1.0, -1.0)
        note = "b = sign(A x_true + 0.5 std(A x_true) eps)"
    note = f"rows ~ N(0, 2^(-|i-j|/{cfg['scale']:g})), {note}"
    return Problem(name, sp.csr_matrix(A), b, cfg["loss"], dense=A, note=note)


def uci_regression(name):
    X, y = bundled.load(name, dense=True)
    A = row_normalise(X)
    b = (y - y.mean()) / y.std()
    return Problem(name, sp.csr_matrix(A), b, "squared", dense=A,
                   note="UCI, raw features, target standardised")


def text(name):
    X, y = text_datasets.load(name)
    return Problem(name, row_normalise(X), y, "logistic",
                   note="TF-IDF (bench/datasets.py), labels +-1")


def load_problem(name, quick=False):
    if name in SYNTHETIC:
        return synthetic(name, quick)
    if name in ("kin8nm", "power-plant"):
        return uci_regression(name)
    return text(name)


def spectrum(prob):
    """(L^2, mu^2) = extreme eigenvalues of X^T X, from the dense copy (mu^2 = 0 if d > n)."""
    if prob.spectrum is None:
        ev = scipy.linalg.eigvalsh(prob.dense.T @ prob.dense)
        prob.spectrum = (float(ev[-1]), max(float(ev[0]), 0.0) if prob.n >= prob.d else 0.0)
    return prob.spectrum


# ------------------------------------------------------------------ objective and P*

def objective(prob, x, lam):
    z = prob.X @ x
    if prob.loss == "squared":
        f = 0.5 * np.mean((z - prob.b) ** 2)
    else:
        f = np.mean(np.logaddexp(0.0, -prob.b * z))
    return float(f + 0.5 * lam * (x @ x))


def gradient(prob, x, lam):
    z = prob.X @ x
    if prob.loss == "squared":
        r = z - prob.b
    else:
        r = -prob.b * np.exp(-np.logaddexp(0.0, prob.b * z))
    return prob.X.T @ r / prob.n + lam * x


def ridge_reference(prob, lam):
    """Dense Cholesky solve of (A^T A/n + lam I) x = A^T b/n, one refinement step."""
    A, n = prob.dense, prob.n
    H = A.T @ A / n + lam * np.eye(prob.d)
    rhs = A.T @ prob.b / n
    c = scipy.linalg.cho_factor(H)
    x = scipy.linalg.cho_solve(c, rhs)
    x += scipy.linalg.cho_solve(c, rhs - H @ x)
    _, mu2 = spectrum(prob)
    g = gradient(prob, x, lam)
    cert = float(g @ g) / (2.0 * (lam + mu2 / n))
    p = objective(prob, x, lam)
    return dict(p_star=p, uncertainty=cert, method="Cholesky of the normal equations",
                candidates={"cholesky": dict(p=p, cert=cert)})


def logistic_reference(prob, lam):
    """Certified candidates: liblinear Newton + L-BFGS-B (peers.reference_optimum), and
    train_sdca to gap 1e-13 P(0). P* = min upper value; uncertainty = upper - max lower."""
    cands = {}
    try:
        import peers
        r = peers.reference_optimum(prob.X, prob.b, lam, "logistic",
                                    name=f"pdfig_{prob.name}")
        cands["liblinear Newton + L-BFGS-B"] = dict(p=objective(prob, np.asarray(r["w"]), lam),
                                                    cert=float(r["bound"]))
    except ImportError as exc:                       # liblinear not installed
        cands["liblinear Newton + L-BFGS-B"] = dict(error=repr(exc))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dualsolve.ConvergenceWarning)
        m = dualsolve.train_sdca(prob.X, prob.b, loss="logistic", lam=lam, tol=1e-13,
                                 max_epochs=SDCA_EPOCHS, check_every=10, seed=SEED)
    gaps = m.history["gap"][np.isfinite(m.history["gap"])]
    cands["train_sdca"] = dict(p=objective(prob, m.coef, lam), cert=float(gaps[-1]),
                               epochs=m.n_epochs, converged=m.converged)
    ok = {k: v for k, v in cands.items() if "p" in v}
    upper = min(v["p"] for v in ok.values())
    lower = max(v["p"] - v["cert"] for v in ok.values())
    best = min(ok, key=lambda k: ok[k]["p"])
    return dict(p_star=upper, uncertainty=max(upper - lower, 0.0), method=best,
                candidates=cands)


def reference(prob, lam):
    t0 = time.perf_counter()
    ref = ridge_reference(prob, lam) if prob.loss == "squared" else logistic_reference(prob, lam)
    ref["seconds"] = time.perf_counter() - t0
    return ref


# ---------------------------------------------------------------------------- methods

class Recorder:
    """Callback for the dualsolve solvers: evaluates P with this script's own float64
    objective at the iterate the solver reports (info["coef"]) after every pass / iteration,
    keeps the solver's own value for comparison, and stops the run once P <= stop_value."""

    def __init__(self, prob, lam, stop_value, pass_key="epoch"):
        self.prob, self.lam, self.stop_value, self.pass_key = prob, lam, stop_value, pass_key
        self.passes, self.primal, self.reported = [], [], []

    def __call__(self, info):
        p = objective(self.prob, np.asarray(info["coef"]), self.lam)
        self.passes.append(float(info[self.pass_key]))
        self.primal.append(p)
        self.reported.append(float(info["primal"]))
        return bool(p <= self.stop_value)

    def trace(self, model, delta_field=None):
        """(passes, P) with the start x0 = 0 first, plus the Delta trace of adaptive runs."""
        h = model.history
        passes, primal, rep = self.passes, self.primal, self.reported
        if not passes or passes[0] > float(h[self.pass_key][0]):
            # the solver did not call back at its starting point: add it (x0 = 0)
            passes = [float(h[self.pass_key][0])] + passes
            primal = [objective(self.prob, np.zeros(self.prob.d), self.lam)] + primal
            rep = [float(h["primal"][0])] + rep
        tr = dict(passes=np.array(passes), primal=np.array(primal), coef=model.coef)
        rep = np.array(rep)
        tr["reported_diff"] = float(np.nanmax(np.abs(rep - tr["primal"])))
        if delta_field:
            tr["delta"] = h[delta_field].astype(float)
            # Delta doublings / halvings (batch and randomized solvers name them differently)
            for up, down in (("n_increase", "n_decrease"), ("n_adapt_up", "n_adapt_down")):
                if up in model.params:
                    tr["n_up"], tr["n_down"] = int(model.params[up]), int(model.params[down])
        return tr


def run_primal_ag(prob, lam, ctx):
    """Nesterov's accelerated gradient on P with strong convexity lam (constant momentum),
    step 1/L_P, L_P = ||A||^2/n + lam; squared loss. One iteration = X @ x + X.T @ r."""
    X, b, n = prob.X, prob.b, prob.n
    L2, _ = spectrum(prob)
    LP = L2 / n + lam
    kappa = LP / lam
    beta = (np.sqrt(kappa) - 1.0) / (np.sqrt(kappa) + 1.0)
    x = np.zeros(prob.d)
    z = np.zeros(n)                  # X x_k
    zy = z.copy()                    # X y_k
    y = x.copy()
    passes, primal = [0], [objective(prob, x, lam)]
    for k in range(1, ctx["budget_batch"] + 1):
        g = X.T @ (zy - b) / n + lam * y
        x_new = y - g / LP
        z_new = X @ x_new
        y = x_new + beta * (x_new - x)
        zy = z_new + beta * (z_new - z)
        x, z = x_new, z_new
        passes.append(k)
        primal.append(float(0.5 * np.mean((z - b) ** 2) + 0.5 * lam * (x @ x)))
        if primal[-1] <= ctx["stop_value"]:
            break
    return dict(passes=np.array(passes, float), primal=np.array(primal), coef=x,
                params=dict(L_P=LP, momentum=beta))


def run_batch(solver, **kw):
    def run(prob, lam, ctx):
        rec = Recorder(prob, lam, ctx["stop_value"])
        m = solver(prob.X, prob.b, loss=prob.loss, lam=lam, tol=0.0,
                   max_epochs=ctx["budget_batch"], callback=rec, **kw)
        tr = rec.trace(m, delta_field="Delta")
        tr["params"] = {k: m.params.get(k) for k in ("delta_hat", "Delta", "L")}
        tr["params"]["stop_reason"] = m.stop_reason
        return tr
    return run


def run_opt_bpd(prob, lam, ctx):
    _, mu2 = spectrum(prob)          # squared loss: delta = 1, Delta = mu^2 = lambda_min(X^T X)
    return run_batch(dualsolve.train_bpd, delta_hat=mu2)(prob, lam, ctx)


def run_opt_spdc(prob, lam, ctx):
    _, mu2 = spectrum(prob)          # the same exact Delta for SPDC (ridge only)
    return run_pd(dualsolve.train_spdc, delta_hat=mu2)(prob, lam, ctx)


def run_pd(solver, **kw):
    def run(prob, lam, ctx):
        rec = Recorder(prob, lam, ctx["stop_value"])
        m = solver(prob.X, prob.b, loss=prob.loss, lam=lam, tol=0.0,
                   max_epochs=ctx["budget"], callback=rec, seed=SEED, **kw)
        tr = rec.trace(m, delta_field="delta_hat")
        tr["params"] = {k: m.params.get(k) for k in
                        ("delta0", "delta_hat", "tau", "sigma", "theta")}
        tr["params"]["stop_reason"] = m.stop_reason
        return tr
    return run


def run_vr(solver):
    def run(prob, lam, ctx):
        epochs = max(1, int(np.ceil((ctx["budget"] - 1) / 3.0)))
        rec = Recorder(prob, lam, ctx["stop_value"], pass_key="passes")
        m = solver(prob.X, prob.b, loss=prob.loss, lam=lam, tol=0.0, max_epochs=epochs,
                   callback=rec, seed=SEED)
        tr = rec.trace(m)
        tr["params"] = {k: m.params.get(k) for k in ("step", "steps_per_epoch", "tau1", "option")}
        tr["params"]["stop_reason"] = m.stop_reason
        return tr
    return run


def run_sdca(prob, lam, ctx):
    """dualsolve's SDCA (liblinear's dual coordinate ascent; one epoch = one pass)."""
    rec = Recorder(prob, lam, ctx["stop_value"])
    m = dualsolve.train_sdca(prob.X, prob.b, loss=prob.loss, lam=lam, tol=0.0,
                             max_epochs=ctx["budget"], callback=rec, seed=SEED, check_every=1)
    tr = rec.trace(m)
    tr["params"] = dict(stop_reason=m.stop_reason)
    return tr


def run_saga(prob, lam, ctx):
    """scikit-learn SAGA, one fit per point of a geometric grid of epoch counts."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression, Ridge
    n = prob.n
    grid = np.unique(np.round(np.geomspace(1, ctx["budget"], 14)).astype(int))
    passes, primal, coef = [0.0], [objective(prob, np.zeros(prob.d), lam)], np.zeros(prob.d)
    for k in grid:
        if prob.loss == "squared":
            est = Ridge(alpha=lam * n, solver="saga", fit_intercept=False, tol=0.0,
                        max_iter=int(k), random_state=SEED)
        else:
            est = LogisticRegression(solver="saga", C=1.0 / (lam * n), l1_ratio=0.0,
                                     fit_intercept=False, tol=0.0, max_iter=int(k),
                                     random_state=SEED)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(prob.X, prob.b)
        coef = np.asarray(est.coef_, dtype=float).ravel()
        if prob.loss == "logistic" and est.classes_[1] != 1:
            coef = -coef
        passes.append(float(k))
        primal.append(objective(prob, coef, lam))
        if primal[-1] <= ctx["stop_value"]:
            break
    return dict(passes=np.array(passes), primal=np.array(primal), coef=coef,
                params=dict(grid=[int(k) for k in grid], random_state=SEED))


RUNNERS = {
    "Primal AG": run_primal_ag,
    "BPD": run_batch(dualsolve.train_bpd),
    "Opt-BPD": run_opt_bpd,
    "Ada-BPD (robust)": run_batch(dualsolve.train_ada_bpd, rule="robust"),
    "Ada-BPD (simple)": run_batch(dualsolve.train_ada_bpd, rule="simple"),
    "SVRG": run_vr(dualsolve.train_svrg),
    "Katyusha": run_vr(dualsolve.train_katyusha),
    "SAGA": run_saga,
    "SDCA": run_sdca,
    "SPDC": run_pd(dualsolve.train_spdc),
    "Opt-SPDC": run_opt_spdc,
    "DF-SPDC": run_pd(dualsolve.train_df_spdc),
    "Ada-SPDC": run_pd(dualsolve.train_ada_spdc),
    "ADF-SPDC": run_pd(dualsolve.train_adf_spdc),
}


# ------------------------------------------------------------------------ one panel

def _sig(a, digits=6):
    """Round to `digits` significant digits for the JSON (NaN/inf -> None)."""
    out = []
    for v in np.asarray(a, dtype=float):
        out.append(None if not np.isfinite(v) else float(f"{v:.{digits}g}"))
    return out


def summarise(tr, p_star, p0, floor):
    """Suboptimality curve, passes to each target, and anything abnormal."""
    sub = tr["primal"] - p_star
    passes = tr["passes"]
    init = p0 - p_star
    out = dict(passes=_sig(passes), subopt=_sig(sub, 4), final=float(sub[-1]),
               best=float(np.nanmin(sub)) if np.isfinite(sub).any() else None,
               passes_run=float(passes[-1]))
    out["passes_to"] = {}
    for t in TARGETS:
        hit = np.flatnonzero(sub <= max(t * init, floor))
        out["passes_to"][f"{t:g}"] = float(passes[hit[0]]) if hit.size else None
    out["reached_floor"] = bool(np.any(sub <= floor))
    issues = []
    bad = ~np.isfinite(tr["primal"])
    if bad.any():
        issues.append(f"non-finite primal from pass {passes[np.argmax(bad)]:g}")
    finite = sub[np.isfinite(sub)]
    if finite.size and finite.max() > 10.0 * init:
        k = int(np.nanargmax(np.where(np.isfinite(sub), sub, -np.inf)))
        issues.append(f"transient: P-P* peaks at {sub[k]:.3g} at pass {passes[k]:g} "
                      f"(start {init:.3g})")
    if finite.size and finite[-1] > init:
        issues.append(f"ends above the start: P-P* = {finite[-1]:.3g} > {init:.3g}")
    tol = max(floor, ROUNDING_REL * abs(p_star))
    if finite.size and finite.min() < -tol:
        issues.append(f"below P* by {-finite.min():.3g} (beyond rounding, {tol:.3g})")
    out["issues"] = issues
    if "delta" in tr:
        out["delta"] = _sig(tr["delta"], 4)
    for k in ("n_up", "n_down"):
        if k in tr:
            out[k] = tr[k]
    return out


def run_panel(prob, fig, lam_scale, budgets, ref_cache, verbose=True, methods=None):
    lam = lam_scale / prob.n
    key = (prob.name, lam_scale)
    if key not in ref_cache:
        ref_cache[key] = reference(prob, lam)
    ref = ref_cache[key]
    p_star = ref["p_star"]
    floor = max(FLOOR_REL * abs(p_star), 2.0 * ref["uncertainty"])
    p0 = objective(prob, np.zeros(prob.d), lam)
    ctx = dict(budget=budgets["passes"], budget_batch=budgets["batch_iters"],
               stop_value=p_star + floor)
    # (L^2, mu^2) where a dense copy exists; sparse text sets have d > n, so mu = 0
    L2, mu2 = spectrum(prob) if prob.dense is not None else (None, 0.0 if prob.d > prob.n else None)
    panel = dict(lam=lam, lam_label=LAM_LABELS[lam_scale], p_star=p_star, p0=p0, floor=floor,
                 reference={k: v for k, v in ref.items()}, L2=L2, mu2=mu2,
                 data_strong_convexity_over_lam=(mu2 / prob.n / lam) if mu2 is not None else None,
                 runs={})
    if verbose:
        print(f"  lam = {LAM_LABELS[lam_scale]} = {lam:.3g}: P* = {p_star:.15g} "
              f"(+- {ref['uncertainty']:.1e}, {ref['method']}, {ref['seconds']:.1f} s); "
              f"floor {floor:.1e}", flush=True)
    best_seen = np.inf
    for name in methods or FIGURES[fig]["methods"]:
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", dualsolve.ConvergenceWarning)
                tr = RUNNERS[name](prob, lam, ctx)
        except Exception as exc:          # a failing solver is reported, not fatal
            panel["runs"][name] = dict(error=f"{type(exc).__name__}: {exc}",
                                       issues=[f"raised {type(exc).__name__}: {exc}"])
            print(f"    {name:18s} ERROR {exc}", flush=True)
            continue
        secs = time.perf_counter() - t0
        run = summarise(tr, p_star, p0, floor)
        run["seconds"] = secs
        run["params"] = tr.get("params", {})
        # the history's last primal against our own evaluation of the returned coef
        run["primal_check"] = abs(objective(prob, tr["coef"], lam) - float(tr["primal"][-1]))
        if "reported_diff" in tr:        # max |P the solver reported - P evaluated here|
            run["reported_primal_max_abs_diff"] = tr["reported_diff"]
        best_seen = min(best_seen, float(np.nanmin(tr["primal"])))
        panel["runs"][name] = run
        if verbose:
            pt = " ".join(f"{v if v is None else int(v)}" for v in run["passes_to"].values())
            print(f"    {name:18s} {secs:6.1f} s  passes {run['passes_run']:5g}  final "
                  f"{run['final']:9.2e}  passes to {'/'.join(run['passes_to'])}: {pt}"
                  + (f"  ISSUES: {'; '.join(run['issues'])}" if run["issues"] else ""),
                  flush=True)
    panel["best_any_method_minus_p_star"] = best_seen - p_star
    return panel


# ----------------------------------------------------------------------------- plots

def plot_row(fig, dsname, panels, img_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    f, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 4.2), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        floor, low = panel["floor"], np.inf
        for name, run in panel["runs"].items():
            if "subopt" not in run:
                continue
            sub = np.array([np.nan if v is None else v for v in run["subopt"]], dtype=float)
            sub = np.maximum(sub, floor)
            low = min(low, np.nanmin(sub))
            ax.semilogy(run["passes"], sub, label=name, lw=1.4, ms=4, **STYLE.get(name, {}))
        ax.axhline(floor, color="k", lw=0.6, ls=":")
        if np.isfinite(low):
            ax.set_ylim(bottom=max(floor / 3.0, low / 10.0))
        ax.set_title(f"{dsname}, lam = {panel['lam_label']}")
        ax.set_xlabel("passes over the data")
        ax.set_ylabel("P(x) - P*")
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].legend(fontsize=8, loc="lower left")
    title = f"{FIGURES[fig]['title']} ({dsname}); dotted: plot floor"
    if fig == "fig2":
        title += "; squared loss: SPDC = DF-SPDC and Ada-SPDC = ADF-SPDC (same iterates)"
    f.suptitle(title, fontsize=10)
    f.tight_layout()
    os.makedirs(img_dir, exist_ok=True)
    path = os.path.join(img_dir, f"primal_dual_{fig}_{dsname}.png")
    f.savefig(path, dpi=110)
    plt.close(f)
    return path


# ------------------------------------------------------------------------------ main

def _git_commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _load_json(path):
    if os.path.exists(path):
        with open(path) as fh:
            return json.load(fh)
    return {}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=sorted(FIGURES), nargs="*", default=None,
                    help="figures to run (default: all)")
    ap.add_argument("--datasets", nargs="*", default=None,
                    help="restrict to these data sets (default: each figure's rows)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: small synthetic data, tiny budgets, no news20 unless "
                         "asked; output to the temp directory unless --json/--img-dir")
    ap.add_argument("--json", default=None,
                    help="results file (default bench/results/primal_dual_figures.json)")
    ap.add_argument("--img-dir", default=None, help="PNG directory (default docs/img)")
    ap.add_argument("--passes", type=int, default=None,
                    help="budget of the randomized methods in passes (default: the figure's); "
                         "with --methods and --img-dir for a longer look at one panel")
    ap.add_argument("--methods", nargs="*", default=None,
                    help="only these methods (default: the figure's)")
    ap.add_argument("--lam", nargs="*", choices=[LAM_LABELS[s] for s in LAM_SCALES],
                    default=None, help="only these panels (e.g. --lam 1e-4/n); the others "
                    "are kept from the results file")
    args = ap.parse_args(argv)

    quick_dir = os.path.join(tempfile.gettempdir(), "primal_dual_figures_quick")
    default_json = (os.path.join(quick_dir, "primal_dual_figures_quick.json") if args.quick
                    else os.path.join(HERE, "results", "primal_dual_figures.json"))
    json_path = args.json or default_json
    img_dir = args.img_dir or (quick_dir if args.quick else os.path.join(ROOT, "docs", "img"))
    figs = args.only or sorted(FIGURES)

    t_start = time.perf_counter()
    commit = _git_commit()                 # at the start: the build may change during a long run
    results = _load_json(json_path)
    results.setdefault("figures", {})
    problems, ref_cache = {}, {}
    for fig in figs:
        names = [d for d in FIGURES[fig]["datasets"]
                 if (args.datasets is None or d in args.datasets)
                 and not (args.quick and args.datasets is None and d == "news20")]
        for dsname in names:
            if dsname not in problems:
                t0 = time.perf_counter()
                problems[dsname] = load_problem(dsname, args.quick)
                print(f"{dsname}: {problems[dsname].n} x {problems[dsname].d}, nnz "
                      f"{problems[dsname].X.nnz} (loaded in {time.perf_counter() - t0:.1f} s)",
                      flush=True)
            prob = problems[dsname]
            budgets = dict(passes=args.passes or (QUICK["passes"] if args.quick
                                                  else PASSES[dsname]),
                           batch_iters=QUICK["batch_iters"] if args.quick else BATCH_ITERS)
            print(f"{fig} / {dsname} ({prob.loss}; budget {budgets})", flush=True)
            t0 = time.perf_counter()
            old = {p["lam_label"]: p for p in
                   results["figures"].get(fig, {}).get(dsname, {}).get("panels", [])}
            panels = []
            for s in LAM_SCALES:
                if args.lam is None or LAM_LABELS[s] in args.lam:
                    panels.append(run_panel(prob, fig, s, budgets, ref_cache,
                                            methods=args.methods))
                elif LAM_LABELS[s] in old:
                    panels.append(old[LAM_LABELS[s]])
            png = plot_row(fig, dsname, panels, img_dir)
            results["figures"].setdefault(fig, {})[dsname] = dict(
                n=prob.n, d=prob.d, nnz=int(prob.X.nnz), loss=prob.loss, note=prob.note,
                budgets=budgets, panels=panels, seconds=time.perf_counter() - t0,
                png=os.path.relpath(png, ROOT))
            print(f"  -> {png} ({time.perf_counter() - t0:.0f} s)", flush=True)

    total = time.perf_counter() - t_start
    import sklearn
    results["meta"] = dict(
        last_command=" ".join(["python bench/primal_dual_figures.py"]
                              + list(argv if argv is not None else sys.argv[1:])),
        last_run_seconds=total, date=datetime.datetime.now().isoformat(timespec="seconds"),
        git_commit=commit, dualsolve=dualsolve.__version__,
        dualsolve_path=os.path.relpath(os.path.dirname(dualsolve.__file__), ROOT),
        numpy=np.__version__,
        sklearn=sklearn.__version__, seed=SEED, floor_rel=FLOOR_REL, targets=list(TARGETS),
        quick=bool(args.quick),
        pass_accounting=("batch and Primal AG: 1 iteration = 1 pass (X@x and X.T@y); SPDC "
                         "family: 1 epoch = n rows = 1 pass; SVRG/Katyusha: solver's count, "
                         "1 + 3 per epoch (m = 2n, stored snapshot derivatives); SAGA: 1 "
                         "epoch = 1 pass; objective/gap evaluations not counted"))
    os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
    with open(json_path, "w") as fh:
        json.dump(results, fh, indent=1)
    print(f"wrote {json_path}; total {total:.0f} s", flush=True)


if __name__ == "__main__":
    main()
