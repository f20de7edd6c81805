"""Stochastic AUC maximisation on imbalanced data (issue 6, acceptance items 2 and 3).

Test AUC against epochs and against seconds, on four imbalanced binary problems:

``w8a``          LIBSVM w8a (3.0% positive). There is no w8a test file in the data, so a fixed
                 stratified 70/30 split (seed 0) of the w8a training file; rows L2-normalised.
``news20-atheism`` 20 Newsgroups bydate, ``alt.atheism`` (the first group alphabetically) vs
                 the other 19 (4.2% positive); the ``news20`` TF-IDF uni+bigram features of
                 ``bench/datasets.py`` (rows already L2-normalised; vectorizer fitted on all
                 documents), bydate train / test split. The group of each row is rebuilt here
                 from the corpus' file list (``news20_groups``): datasets.py does not expose it.
``mammography``  bundled (``dualsolve.datasets``; 2.3% positive), stratified 70/30 split.
``ticdata``      CoIL 2000 / Caravan (6.0% positive; ``uci_classification/ticdata_coil2000``,
                 it is not in ``imbalanced/``), the challenge's own split: rows 0-5,821 train,
                 5,822-9,821 test; the 63 text-labelled columns one-hot encoded.

Dense sets (mammography, ticdata) are standardised with the training mean and standard
deviation and then divided by sqrt(n_features), so the mean squared row norm is about 1, like
the L2-normalised sparse sets, and the same step-size grids apply to all four.

Methods (``--epochs`` budget, default 40 passes over the training rows):

* PPD-SG and PPD-AdaGrad (``dualsolve.train_ppd_sg`` / ``train_ppd_adagrad``), the paper's
  practical schedule: 5 stages, ``T_k - 1 = (T0 - 1) 3^(k-1)`` steps, ``eta_k = eta0 / 3^(k-1)``
  (``decay=growth=3``), ``T0`` chosen so that the 5 stages make the budget (``T0 = n/3`` for 40
  epochs; ``max_epochs`` = the budget, ``tol=0``), prox_gamma = 1e3, exact alpha reset
  (``alpha_reset="full"``), lam = the one selected for the surrogate optimum (below); one curve
  point per stage end (``wbar_k``, placed at the stage's end in epochs).
* SOLAM (``train_solam``, lam = 0 as published), one point per epoch.
* PGA (``train_pga``): 5 stages, ``eta_k = eta0 / k``, ``T_k = T0 k^2`` (``T0 = 40 n / 55`` for
  40 epochs), prox_gamma = 1e3, no projections (its defaults R1 = R2 = None), the surrogate's
  lam; one point per stage end.
* Our logistic SDCA (``train_sdca``, no intercept, lam = c/n), test AUC of ``info["coef"]`` in
  its per-epoch callback.
* scikit-learn ``LogisticRegression(class_weight="balanced")`` (lbfgs, with intercept), one
  fit per ``max_iter`` value; "epochs" = lbfgs iterations (each needs at least one function
  and gradient evaluation, i.e. two mat-vecs). Skipped if scikit-learn is missing.
* LibAUC PESG: only if ``torch`` and ``libauc`` import (otherwise skipped with a message).
* Reference line: the exact minimiser of the square-loss surrogate
  (``auc_surrogate_optimum``, CG).

Hyperparameters: a stratified 80/20 split of the training rows (seed 1) is used as the
validation set; each grid below is run at the full budget on the 80% and the value with the
best *final* validation AUC is kept, then the method is rerun on all training rows and scored
on the test rows (``GRIDS``). The surrogate's lam is selected first (best validation AUC of the
exact optimum) and reused by PPD-SG / PPD-AdaGrad.

Times: wall seconds of the solver, including its own per-stage / per-epoch monitoring (an
objective pass for the AUC solvers, the duality-gap check for SDCA) but not the test-AUC
evaluation done in the callback (its duration is measured and subtracted).

``--cost``: one epoch (n samples) of PPD-SG on the binary ``news20`` problem (all 18,846
rows) as a ratio to one ``X @ w`` (dense random w); median over 5 alternating pairs. The
epoch is measured as (time of an 11-epoch single-stage run - time of a 1-epoch single-stage
run) / 10, which cancels the per-call fixed costs (input checks, the start and end objective
passes, the stage's setup and end passes, the alpha reset) and divides their jitter by 10;
the all-in time of a 1-epoch stage (steps + stage-end work + the monitoring pass, from
``history["time"]`` differences with growth = 1) is reported beside it.

Usage::

    DUALSOLVE_DATA=... python bench/auc_imbalanced.py [--datasets w8a news20-atheism ...]
        [--epochs 40] [--cost] [--quick]

``--datasets none`` skips the AUC experiments (e.g. with ``--cost``). Writes
``bench/results/auc_imbalanced.json`` (merged per data set; ``--quick``:
``auc_imbalanced_quick.json`` and no figures) and ``docs/img/auc_<data>.png``.
"""
import argparse
import json
import lzma
import math
import os
import sys
import tarfile
import time
import warnings

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import datasets  # noqa: E402
import peers  # noqa: E402

import dualsolve  # noqa: E402
import dualsolve.datasets as bundled  # noqa: E402

DATASETS = ("w8a", "news20-atheism", "mammography", "ticdata")
NEWS20_GROUP = "alt.atheism"

# validation grids (full budget each); the first entry is also the --quick choice
GRIDS = {
    "oracle_lam": [1e-4, 1e-3, 1e-5, 1e-6],
    "ppd_sg_eta0": [0.1, 1.0, 0.3, 0.03],
    "ppd_adagrad_eta0": [0.3, 3.0, 1.0, 0.1],
    "solam": [(1.0, 10.0), (0.1, 10.0), (10.0, 10.0), (1.0, 100.0), (0.1, 100.0), (10.0, 100.0)],
    "pga_eta0": [0.1, 1.0, 0.3, 0.03],
    "sdca_lam_n": [1.0, 0.1, 0.01],          # lam = c / n
    "lr_C": [1.0, 0.1, 10.0, 100.0],
}
GAMMA = 1e3
N_STAGES = 5
LR_MAX_ITERS = [1, 2, 5, 10, 20, 50, 100, 300, 1000]


# ------------------------------------------------------------------ data ---

def _strat_split(y, frac_test, seed):
    """Indices (train, test) of a stratified random split."""
    rng = np.random.default_rng(seed)
    tr, te = [], []
    for c in (-1.0, 1.0):
        idx = np.flatnonzero(y == c)
        rng.shuffle(idx)
        k = int(round(frac_test * idx.size))
        te.append(idx[:k])
        tr.append(idx[k:])
    return np.sort(np.concatenate(tr)), np.sort(np.concatenate(te))


def _row_normalise(X):
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    nrm = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    nrm[nrm == 0] = 1.0
    X.data /= np.repeat(nrm, np.diff(X.indptr))
    return X


def _standardise(Xtr, Xte):
    """Train-fitted standardisation, then / sqrt(d) (mean squared row norm ~ 1); CSR out."""
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    keep = sd > 0
    Xtr, Xte = (Xtr[:, keep] - mu[keep]) / sd[keep], (Xte[:, keep] - mu[keep]) / sd[keep]
    s = math.sqrt(Xtr.shape[1])
    return sp.csr_matrix(Xtr / s), sp.csr_matrix(Xte / s)


def news20_groups():
    """The newsgroup name of every row of ``datasets.load("news20")``, in its row order.

    datasets.py reads ``20news-bydate-train`` then ``-test`` with ``load_files(shuffle=False)``,
    which lists the group folders and the files in each in sorted (string) order; the same order
    is rebuilt here from the archive's member list, without extracting it.
    """
    path = datasets.data_dir() / "text" / "20news-bydate.tar.xz"
    with tarfile.open(path, "r:xz") as tf:
        names = [m.name for m in tf.getmembers() if m.isfile()]
    rows = []
    for part in ("train", "test"):
        top = f"20news-bydate-{part}"
        sel = [n.split("/") for n in names if n.split("/")[0] == top and n.count("/") == 2]
        rows.extend(sorted((g, f) for _, g, f in sel))
    return np.array([g for g, _ in rows])


def load_problem(name):
    """(Xtr, ytr, Xte, yte, description) with y in {-1, +1}."""
    if name == "w8a":
        X, y = datasets.load("w8a")
        X = _row_normalise(X)
        tr, te = _strat_split(y, 0.3, 0)
        return (X[tr], y[tr], X[te], y[te],
                "LIBSVM w8a train file, stratified 70/30 split (seed 0), rows L2-normalised")
    if name == "news20-atheism":
        X, y20, is_train = datasets.load("news20", return_split=True)
        groups = news20_groups()
        if groups.size != X.shape[0]:
            raise RuntimeError(f"{groups.size} group names for {X.shape[0]} news20 rows")
        compsci = np.char.startswith(groups, "comp.") | np.char.startswith(groups, "sci.")
        if not np.array_equal(np.where(compsci, 1.0, -1.0), y20):
            raise RuntimeError("rebuilt newsgroup order does not match datasets.load('news20')")
        y = np.where(groups == NEWS20_GROUP, 1.0, -1.0)
        return (X[is_train], y[is_train], X[~is_train], y[~is_train],
                f"20 Newsgroups bydate, {NEWS20_GROUP} vs the other 19, news20 TF-IDF "
                "uni+bigrams (rows L2-normalised), bydate train/test split")
    if name == "mammography":
        X, y = bundled.load("mammography", dense=True)
        tr, te = _strat_split(y, 0.3, 0)
        Xtr, Xte = _standardise(X[tr], X[te])
        return (Xtr, y[tr], Xte, y[te],
                "bundled mammography, stratified 70/30 split (seed 0), standardised / sqrt(d)")
    if name == "ticdata":
        import csv
        with lzma.open(datasets.data_dir() / "uci_classification" / "ticdata_coil2000.csv.xz",
                       "rt", newline="") as f:
            rows = list(csv.reader(f))
        header, rows = rows[0], rows[1:]
        y = np.array([1.0 if r[-1] == "insurance" else -1.0 for r in rows])
        cols, n_cat = [], 0
        for j in range(len(header) - 1):
            vals = [r[j] for r in rows]
            try:
                cols.append(np.array([float(v) for v in vals])[:, None])
            except ValueError:                      # text labels: one-hot
                levels = sorted(set(vals))
                cols.append((np.array(vals)[:, None] == np.array(levels)[None, :]).astype(float))
                n_cat += 1
        Xd = np.hstack(cols)
        cat = range(n_cat)
        tr = np.arange(5822)
        te = np.arange(5822, len(y))
        Xtr, Xte = _standardise(Xd[tr], Xd[te])
        return (Xtr, y[tr], Xte, y[te],
                f"CoIL 2000 ticdata, challenge split 5,822/4,000, {len(cat)} text columns "
                "one-hot, standardised / sqrt(d)")
    raise ValueError(f"unknown data set {name!r}; choose from {DATASETS}")


# --------------------------------------------------------------- helpers ---

class Tracker:
    """Callback: AUC of info["coef"] on (X, y) per report, with its own time subtracted."""

    def __init__(self, X, y):
        self.X, self.y = X, y
        self.epoch, self.time, self.auc, self.primal = [], [], [], []
        self.spent = 0.0

    def __call__(self, info):
        t0 = time.perf_counter()
        w = info["coef"]
        s = self.X @ w
        self.auc.append(dualsolve.auc_score(self.y, s) if np.all(np.isfinite(s)) else float("nan"))
        self.epoch.append(int(info["epoch"]))
        self.primal.append(float(info.get("primal", np.nan)))
        self.time.append(float(info["time"]) - self.spent)
        self.spent += time.perf_counter() - t0
        return False


def _stage_epochs(stage_lengths, n, batch=1):
    """Cumulative passes at the end of stage k = 0..K (T_k - 1 steps of ``batch`` samples)."""
    return [0.0] + list(np.cumsum([(T - 1) * batch for T in stage_lengths]) / n)


def _stage_points(tr, ends):
    """The tracker's points at stage ends: an epoch report carries the last stage that ended
    in it (primal not NaN); place it at that stage's end (passes) instead of the epoch."""
    ends = np.asarray(ends)
    keep = [i for i, J in enumerate(tr.primal) if np.isfinite(J)]
    epochs = [float(ends[np.searchsorted(ends, tr.epoch[i] + 1e-9, side="right") - 1])
              for i in keep]
    return epochs, [tr.time[i] for i in keep], [tr.auc[i] for i in keep]


def _t0_for(budget, n, growth=3.0, stages=N_STAGES):
    return max(2, int(math.ceil(budget * n / sum(growth ** k for k in range(stages)))))


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # tol = 0: the budget stops it
        return fn(*args, **kw)


def run_ppd(kind, Xtr, ytr, Xev, yev, eta0, lam, budget):
    fn = dualsolve.train_ppd_sg if kind == "ppd_sg" else dualsolve.train_ppd_adagrad
    n = Xtr.shape[0]
    tr = Tracker(Xev, yev)
    t = time.perf_counter()
    m = _quiet(fn, Xtr, ytr, step=eta0, T0=_t0_for(budget, n), prox_gamma=GAMMA, decay=3.0,
               growth=3.0, max_epochs=int(math.ceil(budget)), tol=0.0, lam=lam, seed=0,
               callback=tr)
    wall = time.perf_counter() - t - tr.spent
    epochs, seconds, auc = _stage_points(tr, _stage_epochs(m.params["stage_lengths"], n))
    return dict(epochs=epochs, seconds=seconds, auc=auc, wall=wall,
                coef_finite=bool(np.all(np.isfinite(m.coef))))


def run_solam(Xtr, ytr, Xev, yev, zeta, R, budget):
    tr = Tracker(Xev, yev)
    t = time.perf_counter()
    m = _quiet(dualsolve.train_solam, Xtr, ytr, step=zeta, R=R, lam=0.0,
               max_epochs=int(round(budget)), tol=0.0, seed=0, callback=tr)
    wall = time.perf_counter() - t - tr.spent
    return dict(epochs=[float(e) for e in tr.epoch], seconds=tr.time, auc=tr.auc, wall=wall,
                coef_finite=bool(np.all(np.isfinite(m.coef))))


def run_pga(Xtr, ytr, Xev, yev, eta0, lam, budget):
    """PGA, stage-wise with T_k = T0 k^2 steps, 5 stages filling the budget."""
    n = Xtr.shape[0]
    K = 5
    kw = dict(step=eta0, seed=0, prox_gamma=GAMMA, lam=lam, tol=0.0,
              max_epochs=int(math.ceil(budget)),
              T0=max(1, int(math.ceil(budget * n / sum(k * k for k in range(1, K + 1))))))
    tr = Tracker(Xev, yev)
    t = time.perf_counter()
    m = _quiet(dualsolve.train_pga, Xtr, ytr, callback=tr, **kw)
    wall = time.perf_counter() - t - tr.spent
    # PGA's stage_lengths count steps (not iterates)
    ends = _stage_epochs([T + 1 for T in m.params["stage_lengths"]], n)
    epochs, seconds, auc = _stage_points(tr, ends)
    return dict(epochs=epochs, seconds=seconds, auc=auc, wall=wall, kwargs=kw,
                coef_finite=bool(np.all(np.isfinite(m.coef))))


def run_sdca(Xtr, ytr, Xev, yev, c, budget):
    n = Xtr.shape[0]
    tr = Tracker(Xev, yev)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # the budget, not tol, stops it
        m = dualsolve.train_sdca(Xtr, ytr, loss="logistic", lam=c / n, tol=1e-10,
                                 max_epochs=int(round(budget)), seed=0, callback=tr)
    wall = time.perf_counter() - t - tr.spent
    return dict(epochs=[float(e) for e in tr.epoch], seconds=tr.time, auc=tr.auc, wall=wall,
                converged=bool(m.converged), coef_finite=bool(np.all(np.isfinite(m.coef))))


def _sk_lr(Xtr, ytr, C, max_iter):
    from sklearn.linear_model import LogisticRegression
    from sklearn.exceptions import ConvergenceWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        lr = LogisticRegression(C=C, class_weight="balanced", max_iter=max_iter)
        t = time.perf_counter()
        lr.fit(Xtr, ytr)
        dt = time.perf_counter() - t
    return lr, dt


def run_lr(Xtr, ytr, Xev, yev, C, max_iters):
    out = dict(epochs=[], seconds=[], auc=[], max_iter=[])
    for mi in max_iters:
        lr, dt = _sk_lr(Xtr, ytr, C, mi)
        out["epochs"].append(float(lr.n_iter_[0]))
        out["seconds"].append(dt)
        out["auc"].append(dualsolve.auc_score(yev, lr.decision_function(Xev)))
        out["max_iter"].append(mi)
    out["wall"] = out["seconds"][-1]
    return out


def _final(curve):
    aucs = [a for a in curve["auc"] if np.isfinite(a)]
    return curve["auc"][-1] if curve["auc"] else float("nan"), (max(aucs) if aucs else None)


# ------------------------------------------------------------ experiment ---

def run_dataset(name, budget, quick):
    def grid(key):
        return GRIDS[key][:1] if quick else GRIDS[key]

    t_all = time.perf_counter()
    Xtr, ytr, Xte, yte, desc = load_problem(name)
    itr, iva = _strat_split(ytr, 0.2, 1)
    Xf, yf, Xv, yv = Xtr[itr], ytr[itr], Xtr[iva], ytr[iva]
    n, d = Xtr.shape
    res = dict(description=desc, n_train=n, n_test=Xte.shape[0], n_features=d,
               nnz_per_row=Xtr.nnz / n, pos_train=float((ytr > 0).mean()),
               pos_test=float((yte > 0).mean()), budget_epochs=budget, selection={},
               curves={}, final={}, skipped={})
    print(f"\n== {name}: {desc}\n   train {n} x {d} ({res['pos_train']:.1%} pos), "
          f"test {Xte.shape[0]} ({res['pos_test']:.1%} pos), {Xtr.nnz / n:.1f} nnz/row",
          flush=True)

    # surrogate optimum: lam by validation AUC
    scores = {}
    for lam in grid("oracle_lam"):
        m = dualsolve.auc_surrogate_optimum(Xf, yf, lam=lam, tol=1e-8, max_iter=3000)
        scores[lam] = dualsolve.auc_score(yv, Xv @ m.coef)
    lam = max(scores, key=scores.get)
    res["selection"]["oracle_lam"] = {str(k): v for k, v in scores.items()}
    t = time.perf_counter()
    m = dualsolve.auc_surrogate_optimum(Xtr, ytr, lam=lam, tol=1e-8, max_iter=3000)
    dt = time.perf_counter() - t
    res["oracle"] = dict(lam=lam, test_auc=dualsolve.auc_score(yte, Xte @ m.coef), seconds=dt,
                         cg_iterations=int(m.params["cg_iterations"]), converged=bool(m.converged),
                         objective=float(m.params["objective"]))
    print(f"   surrogate optimum lam={lam:g}: test AUC {res['oracle']['test_auc']:.4f} "
          f"({dt:.2f} s, {m.params['cg_iterations']} CG its; val {scores})", flush=True)

    def select(label, configs, runner):
        vals = {}
        for cfg in configs:
            r = runner(Xf, yf, Xv, yv, cfg)
            a = r["auc"][-1] if r["auc"] else float("nan")
            vals[cfg] = a if np.isfinite(a) else -1.0
        best = max(vals, key=vals.get)
        res["selection"][label] = {str(k): v for k, v in vals.items()}
        r = runner(Xtr, ytr, Xte, yte, best)
        r["param"] = best if not isinstance(best, tuple) else list(best)
        res["curves"][label] = r
        last, peak = _final(r)
        res["final"][label] = dict(test_auc=last, best_test_auc=peak, seconds=r["wall"],
                                   epochs=r["epochs"][-1] if r["epochs"] else None,
                                   param=r["param"])
        print(f"   {label:12s} param={best}: final test AUC {last:.4f} (peak {peak:.4f}), "
              f"{r['wall']:.2f} s; val {vals}", flush=True)

    select("ppd_sg", grid("ppd_sg_eta0"),
           lambda X, y, Xe, ye, e: run_ppd("ppd_sg", X, y, Xe, ye, e, lam, budget))
    select("ppd_adagrad", grid("ppd_adagrad_eta0"),
           lambda X, y, Xe, ye, e: run_ppd("ppd_adagrad", X, y, Xe, ye, e, lam, budget))
    select("solam", grid("solam"),
           lambda X, y, Xe, ye, zr: run_solam(X, y, Xe, ye, zr[0], zr[1], budget))
    if hasattr(dualsolve, "train_pga"):
        select("pga", grid("pga_eta0"),
               lambda X, y, Xe, ye, e: run_pga(X, y, Xe, ye, e, lam, budget))
    else:
        res["skipped"]["pga"] = "dualsolve.train_pga is not exported"
        print("   PGA: skipped (dualsolve.train_pga is not exported)", flush=True)
    select("sdca_logistic", grid("sdca_lam_n"),
           lambda X, y, Xe, ye, c: run_sdca(X, y, Xe, ye, c, budget))
    try:
        import sklearn  # noqa: F401
        iters = [1, 10, 100] if quick else LR_MAX_ITERS
        select("sklearn_lr_balanced", grid("lr_C"),
               lambda X, y, Xe, ye, C: run_lr(X, y, Xe, ye, C,
                                              [1000] if X is Xf else iters))
    except ImportError:
        res["skipped"]["sklearn_lr_balanced"] = "scikit-learn is not installed"
        print("   sklearn LogisticRegression: skipped (scikit-learn missing)", flush=True)
    try:
        import torch  # noqa: F401
        import libauc  # noqa: F401
        res["skipped"]["libauc_pesg"] = "torch and libauc import, but no PESG adapter is written"
    except ImportError as e:
        res["skipped"]["libauc_pesg"] = f"not run: {e}"
        print(f"   LibAUC PESG: skipped ({e})", flush=True)
    res["seconds_total"] = time.perf_counter() - t_all
    return res


# ------------------------------------------------------------------ cost ---

COST_SETTINGS = dict(step=0.1, prox_gamma=GAMMA, lam=1e-5, seed=0)


def ppd_sg_run_seconds(X, y, epochs):
    """Wall time of one PPD-SG stage of epochs * n steps (the cost settings)."""
    t = time.perf_counter()
    _quiet(dualsolve.train_ppd_sg, X, y, T0=epochs * X.shape[0] + 1, max_epochs=epochs,
           tol=0.0, **COST_SETTINGS)
    return time.perf_counter() - t


def ppd_sg_epoch_seconds(X, y, epochs=11):
    """One epoch of PPD-SG steps: (an epochs-epoch stage - a 1-epoch stage) / (epochs - 1)."""
    t1 = ppd_sg_run_seconds(X, y, 1)
    return (ppd_sg_run_seconds(X, y, epochs) - t1) / (epochs - 1), t1


def measure_cost(pairs=5):
    X, y = datasets.load("news20")
    n, d = X.shape
    kw = COST_SETTINGS

    ppd_sg_run_seconds(X, y, 1)        # warm-up
    rows = []
    for i in range(pairs):
        mv = peers.matvec_time(X)
        ep, t1 = ppd_sg_epoch_seconds(X, y)
        m = _quiet(dualsolve.train_ppd_sg, X, y, T0=n + 1, max_epochs=3, tol=0.0, growth=1.0,
                   decay=1.0, **kw)
        stage = float(np.median(np.diff(m.history["time"])[1:]))
        mv2 = peers.matvec_time(X)
        mvm = 0.5 * (mv + mv2)
        rows.append(dict(matvec=mvm, run_1_epoch=t1, epoch=ep,
                         ratio=ep / mvm, stage_all_in=stage, ratio_all_in=stage / mvm))
        print(f"   pair {i}: X@w {mvm * 1e3:.2f} ms, epoch {ep * 1e3:.1f} ms -> ratio "
              f"{ep / mvm:.2f}; all-in 1-epoch stage {stage * 1e3:.1f} ms -> "
              f"{stage / mvm:.2f}", flush=True)
    out = dict(data=f"news20 binary (comp.*+sci.* vs rest), all rows: {n} x {d}, "
                    f"nnz {X.nnz} ({X.nnz / n:.1f}/row)",
               settings=dict(kw, batch_size=1, alpha_reset="full", sampling="with replacement"),
               pairs=rows,
               median_ratio=float(np.median([r["ratio"] for r in rows])),
               median_ratio_all_in=float(np.median([r["ratio_all_in"] for r in rows])),
               median_matvec_seconds=float(np.median([r["matvec"] for r in rows])),
               median_epoch_seconds=float(np.median([r["epoch"] for r in rows])),
               target=2.5)
    # context (median of 3 pairs each, same 1-vs-3-epoch differencing): PPD-SG without the
    # dense parts (gamma = None, lam = 0: nothing to catch up lazily), PPD-AdaGrad, and SOLAM
    # (its epochs include its own per-epoch objective pass)
    runs = {"ppd_sg_no_prox_no_l2": lambda E: _quiet(
                dualsolve.train_ppd_sg, X, y, T0=E * n + 1, max_epochs=E, tol=0.0, step=0.1,
                prox_gamma=None, lam=0.0, seed=0),
            "ppd_adagrad": lambda E: _quiet(
                dualsolve.train_ppd_adagrad, X, y, T0=E * n + 1, max_epochs=E, tol=0.0,
                step=0.3, prox_gamma=GAMMA, lam=1e-5, seed=0),
            "solam": lambda E: _quiet(dualsolve.train_solam, X, y, max_epochs=E, tol=0.0,
                                      lam=0.0, step=0.1, R=10.0, seed=0)}
    out["other_ratios"] = {}
    for key, fn in runs.items():
        r = []
        for _ in range(3):
            mv = peers.matvec_time(X)
            t = time.perf_counter()
            fn(1)
            t1 = time.perf_counter() - t
            t = time.perf_counter()
            fn(3)
            t3 = time.perf_counter() - t
            r.append((t3 - t1) / 2 / mv)
        out["other_ratios"][key] = float(np.median(r))
        print(f"   {key}: epoch / X@w = {np.median(r):.2f}", flush=True)
    print(f"   median ratio (epoch of steps / X@w): {out['median_ratio']:.2f}  "
          f"(all-in stage incl. stage end + monitoring: {out['median_ratio_all_in']:.2f}; "
          f"target <= 2.5)", flush=True)
    return out


# ------------------------------------------------------------------ plot ---

STYLE = {"ppd_sg": ("PPD-SG", "C0", "o-"), "ppd_adagrad": ("PPD-AdaGrad", "C1", "s-"),
         "solam": ("SOLAM", "C2", "-"), "pga": ("PGA", "C4", "^-"),
         "sdca_logistic": ("SDCA logistic", "C3", "-"),
         "sklearn_lr_balanced": ("sklearn LR balanced", "C5", "d--")}


def plot(name, res, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, key, xlabel in ((axes[0], "epochs", "epochs (passes over the training rows)"),
                            (axes[1], "seconds", "seconds")):
        lo = []
        for label, (txt, col, st) in STYLE.items():
            c = res["curves"].get(label)
            if not c:
                continue
            x, a = np.asarray(c[key], float), np.asarray(c["auc"], float)
            ok = (x > 0) & np.isfinite(a)
            if label == "sklearn_lr_balanced" and key == "epochs":
                txt = txt + " (lbfgs its)"
            ax.plot(x[ok], a[ok], st, color=col, label=txt, ms=4, lw=1.4)
            lo.extend(a[ok].tolist())
        ax.axhline(res["oracle"]["test_auc"], color="k", ls=":", lw=1,
                   label=f"surrogate optimum (lam={res['oracle']['lam']:g})")
        ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("test AUC")
        ax.grid(alpha=0.3)
        if lo:
            top = max(max(lo), res["oracle"]["test_auc"])
            ax.set_ylim(max(min(np.percentile(lo, 10), top - 0.02) - 0.01, 0.4), top + 0.005)
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle(f"{name}: test AUC (n_train={res['n_train']}, d={res['n_features']}, "
                 f"{res['pos_train']:.1%} positive)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------ main ---

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="*", default=list(DATASETS),
                    help=f"from {DATASETS}, or 'none'")
    ap.add_argument("--epochs", type=float, default=40.0, help="budget in passes")
    ap.add_argument("--cost", action="store_true", help="measure PPD-SG epoch / X@w on news20")
    ap.add_argument("--quick", action="store_true",
                    help="4-epoch budget, first grid value only, no figures")
    args = ap.parse_args(argv)
    names = [] if args.datasets == ["none"] else args.datasets
    budget = 4.0 if args.quick else args.epochs
    out_path = os.path.join(HERE, "results",
                            "auc_imbalanced_quick.json" if args.quick else "auc_imbalanced.json")
    out = {}
    if os.path.exists(out_path):
        with open(out_path) as f:
            out = json.load(f)
    out.setdefault("datasets", {})
    out["settings"] = dict(grids={k: [list(v) if isinstance(v, tuple) else v for v in vs]
                                  for k, vs in GRIDS.items()},
                           prox_gamma=GAMMA, n_stages=N_STAGES, lr_max_iters=LR_MAX_ITERS,
                           budget_epochs=budget, quick=args.quick,
                           pga_exported=hasattr(dualsolve, "train_pga"))
    t0 = time.perf_counter()
    for name in names:
        res = run_dataset(name, budget, args.quick)
        out["datasets"][name] = res
        if not args.quick:
            plot(name, res, os.path.join(ROOT, "docs", "img", f"auc_{name}.png"))
        with open(out_path, "w") as f:
            json.dump(out, f, indent=1, default=float)
    if args.cost:
        print("\n== cost: one PPD-SG epoch on news20 vs one X @ w", flush=True)
        out["cost"] = measure_cost()
    out["seconds_last_run"] = time.perf_counter() - t0
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1, default=float)
    print(f"\nwrote {out_path} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
