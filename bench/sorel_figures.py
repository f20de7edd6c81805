"""The experiments of Ge & Jiang (2024), "SOREL: a stochastic algorithm for spectral risks
minimization", section 5 / Figure 2 and appendix B (no mini-batches), on our copies of the
data. [code-SOREL] and [code-Prospect] are the authors' public code of SOREL and of Prospect
(Mehta et al. 2024), whose preprocessing and settings the paper follows.

Problem. Least squares, l_i(w) = (x_i.w - y_i)^2 / 2, no intercept,

    F(w) = sum_i sigma_i l_[i](w) + (lam/2) ||w||^2,     lam = 1/n,

for the spectra ESRM (rho = 2), extremile (r = 2.5) and superquantile / CVaR (alpha = 0.5),
on yacht, energy, concrete, kin8nm and power-plant (15 pairs). Preprocessing as [code-Prospect]
(the paper's section 5): an 80/20 split (scikit-learn ``train_test_split(test_size=0.2,
random_state=42)``), the training part only; X standardised with the training mean and
population std; y centred by its training mean and divided by its ddof=1 std. The data are
the bundled UCI files (``dualsolve.datasets.load``): yacht has 308 rows here (246 after the
split; the paper's UCI read drops two rows and has 244) and energy's target is the heating
load (the paper uses the cooling load). Other n match the paper: 614, 824, 6553, 7654.

Reference. ``dualsolve.spectral.spectral_reference``: dual FISTA over the permutahedron with
a certified duality gap, instead of the paper's uncertified L-BFGS.

Metric (the paper's Figure 2). Suboptimality (F(w_k) - F*) / (F(w_0) - F*), w_0 = 0, against passes and
against seconds; each method's F(w_k) is the value it reports in ``history["primal"]`` (exact,
from fresh margins). Also reported: (F - F*) / F*.

Passes. SOREL and LSVRG 2 per epoch (a full pass for the losses and the anchor
gradient, then n single-row steps); Prospect 1 per epoch plus 1 for its initial tables; SGD
(batch 64) floor(n/64) 64 / n per epoch. Objective evaluations are not counted. Seconds: the
solver's own ``history["time"]`` (single thread; it includes each method's check after every
epoch: F(w) and its certificate, which is how the solvers stop; here they run with tol=0,
the paper's fixed budgets).

Step sizes (the paper's appendix B). For each pair and method, a grid search with the paper's protocol:
seeds 1 and 2, the criterion is the training objective averaged over the last 10 epochs and
over the seeds, run for the paper's horizon (64 passes on yacht, energy, concrete; 32 on
kin8nm and power, as [code-Prospect]'s plots); the paper's alpha (our ``step``) in
{1e-4, 3e-4, ..., 3e-1} and, for SOREL, its C (our ``dual_step_scale``) in {0.01, 0.02,
0.04, 0.1, 0.2, 0.4, 1, 2, 4} (eta_k = C (k+1)/n). A run whose objective exceeds 1.5 F(w_0)
or stops being finite (``stop_reason == "diverged"``) is stopped and counts as failed
([code-Prospect]'s rule). The selected setting is then run for the full budget (1000 passes on the three small
sets, 400 on kin8nm and power) with fresh seeds 0-4, without the divergence stop: seed 0 is
plotted and gives the tables' passes and seconds (the first epoch at or below each target,
flagged when the run is above it again at its end); the tables also count how many of the
five seeds reach 1e-6 and 1e-8, and how many end below. SOREL is also run with the paper's
own (alpha, C) ([code-SOREL]'s table) for comparison. The grid is cached
(``$DUALSOLVE_CACHE``/sorel_tuning.json); its cost (runs and seconds) is reported with the
results.

The methods are an explicit list (``--methods``): SOREL (``train_sorel``; its dual-step guard,
on by default, is reported), LSVRG (``train_lsvrg``), Prospect (``train_prospect``) and SGD
(``train_spectral_sgd``, batch 64), each imported from ``dualsolve.spectral`` when it runs.

Also (``--guard-demo``, on by default): a long SOREL run on concrete / ESRM and yacht / CVaR
with the paper's uncapped schedule and with the guard (docs/img/sorel_guard.png).

Usage (one process, single-threaded BLAS)::

    export DUALSOLVE_DATA=/path/to/data OPENBLAS_NUM_THREADS=1
    python bench/sorel_figures.py                               # everything (~1.5 min from
                                                                # scratch, ~1 min with the cache)
    python bench/sorel_figures.py --methods sorel               # SOREL only
    python bench/sorel_figures.py --datasets yacht --spectra esrm --methods sorel lsvrg
    python bench/sorel_figures.py --table                       # print the tables from the JSON
    python bench/sorel_figures.py --plots-only                  # redraw the figures from it
    python bench/sorel_figures.py --quick                       # smoke run

Writes bench/results/sorel_figures.json (merged per data set, spectrum and method, so partial
runs keep the rest) and docs/img/sorel_<dataset>.png, docs/img/sorel_guard.png.
"""
import argparse
import datetime
import json
import os
import sys
import time
import warnings

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)               # the in-place build of this checkout

import datasets as bench_datasets  # noqa: E402  (the cache directory)

import dualsolve  # noqa: E402
import dualsolve.spectral as spectral  # noqa: E402

DATASETS = ("yacht", "energy", "concrete", "kin8nm", "power-plant")
SPECTRA = {"esrm": (2.0, "ESRM rho=2"), "extremile": (2.5, "extremile r=2.5"),
           "superquantile": (0.5, "superquantile alpha=0.5")}
ALPHAS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1)
CS = (0.01, 0.02, 0.04, 0.1, 0.2, 0.4, 1.0, 2.0, 4.0)
TUNE_SEEDS = (1, 2)
RUN_SEED = 0
TUNE_PASSES = {"yacht": 64, "energy": 64, "concrete": 64, "kin8nm": 32, "power-plant": 32}
PASSES = {"yacht": 1000, "energy": 1000, "concrete": 1000, "kin8nm": 400, "power-plant": 400}
RUN_SEEDS = (0, 1, 2, 3, 4)            # seed 0 is plotted; all five are summarised
TARGETS = (1e-4, 1e-6, 1e-8)
DIVERGED = 1.5                         # F > 1.5 F(w_0): a failed run ([code-Prospect])
SGD_BATCH = 64

# name -> (function in dualsolve.spectral, extra keyword arguments, tunes C, curve style)
METHODS = {
    "SOREL": ("train_sorel", {}, True, dict(color="tab:red", ls="-")),
    "LSVRG": ("train_lsvrg", {}, False, dict(color="tab:blue", ls="--")),
    "Prospect": ("train_prospect", {}, False, dict(color="tab:green", ls="-.")),
    "SGD": ("train_spectral_sgd", dict(batch_size=SGD_BATCH), False,
            dict(color="tab:gray", ls=":")),
}

# [code-SOREL] hyperparamters.py, single-sample runs: (superquantile, extremile,
# esrm); SOREL entries are (alpha, C)
PAPER = {
    "yacht": dict(SGD=(1e-1, 1e-1, 1e-1), LSVRG=(1e-3, 3e-3, 3e-3), Prospect=(3e-3, 1e-2, 1e-2),
                  SOREL=((1e-2, 0.4), (3e-2, 0.1), (3e-2, 0.1))),
    "energy": dict(SGD=(1e-1, 1e-1, 1e-1), LSVRG=(1e-3, 1e-2, 3e-2), Prospect=(3e-3, 1e-2, 3e-2),
                   SOREL=((3e-2, 1.0), (3e-2, 0.4), (3e-2, 0.4))),
    "concrete": dict(SGD=(3e-2, 3e-2, 1e-1), LSVRG=(1e-3, 3e-3, 3e-3),
                     Prospect=(1e-3, 3e-3, 3e-3), SOREL=((1e-2, 0.1),) * 3),
    "kin8nm": dict(SGD=(1e-3,) * 3, LSVRG=(1e-4,) * 3, Prospect=(1e-4,) * 3,
                   SOREL=((3e-4, 1.0), (1e-4, 2.0), (1e-4, 1.0))),
    "power-plant": dict(SGD=(1e-2,) * 3, LSVRG=(3e-4,) * 3, Prospect=(3e-4,) * 3,
                        SOREL=((3e-3, 2.0), (3e-3, 1.0), (3e-3, 1.0))),
}
_PAPER_ORDER = ("superquantile", "extremile", "esrm")
SOREL_PAPER = "SOREL (paper's alpha, C)"
LABELS = ("SOREL", SOREL_PAPER, "LSVRG", "Prospect", "SGD")      # curve / table order
STYLE = {m: v[3] for m, v in METHODS.items()}
STYLE[SOREL_PAPER] = dict(color="tab:orange", ls="--", lw=1.0)

RESULTS = os.path.join(HERE, "results", "sorel_figures.json")
IMG = os.path.join(ROOT, "docs", "img")


def solver_kwargs(setting):
    """The paper's names (alpha, C) of a setting as the solvers' keywords."""
    names = dict(alpha="step", C="dual_step_scale")
    return {names[k]: v for k, v in setting.items()}


def paper_setting(dataset, method, kind):
    v = PAPER[dataset][method][_PAPER_ORDER.index(kind)]
    return dict(alpha=v[0], C=v[1]) if method == "SOREL" else dict(alpha=v)


# ------------------------------------------------------------------------------ data

def load(name):
    """The paper's preprocessing of a bundled UCI regression set: training part
    of the 80/20 split, X standardised (population std), y standardised (ddof=1)."""
    from sklearn.model_selection import train_test_split
    X, y = dualsolve.datasets.load(name, dense=True)
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.2, random_state=42)
    Xtr = (Xtr - Xtr.mean(0)) / Xtr.std(0)
    ytr = (ytr - ytr.mean()) / ytr.std(ddof=1)
    return np.ascontiguousarray(Xtr), np.ascontiguousarray(ytr)


def objective_at_zero(y, sigma):
    return float(np.dot(sigma, np.sort(0.5 * y * y)))


# -------------------------------------------------------------------------- the cache

def _cache_path():
    return os.path.join(str(bench_datasets.cache_dir()), "sorel_tuning.json")


def _read_json(path):
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {}


def _compact(obj, in_list=False):
    """Floats inside lists (the curves) to 7 significant digits, far more than any plot
    or table here reads, so the committed JSON stays small; scalars such as F* keep every
    digit."""
    if isinstance(obj, float) and in_list:
        return float(f"{obj:.7g}")
    if isinstance(obj, dict):
        return {k: _compact(v, in_list) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_compact(v, True) for v in obj]
    return obj


def _write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(_compact(obj), f, separators=(",", ":"))
    os.replace(tmp, path)


# ---------------------------------------------------------------------------- methods

def solver(method):
    fname = METHODS[method][0]
    fn = getattr(spectral, fname, None)
    if fn is None:
        raise SystemExit(f"{method}: dualsolve.spectral.{fname} is not available in this "
                         f"checkout; run the other methods (e.g. --methods sorel)")
    return fn


def per_epoch_passes(method, n):
    if method in ("SOREL", "LSVRG"):
        return 2.0
    if method == "SGD":
        return (n // SGD_BATCH) * SGD_BATCH / n
    return 1.0


def epochs_for(method, n, passes):
    offset = 1.0 if method == "Prospect" else 0.0
    return max(1, int(np.ceil((passes - offset) / per_epoch_passes(method, n))))


def run(method, X, y, kind, setting, passes, seed, F0, stop_diverged=True, **extra):
    """One run; returns (model or None, seconds, failure message or None). With
    ``stop_diverged`` (the grid search) a run stops once F > 1.5 F(w_0) or not finite."""
    fn = solver(method)
    n = X.shape[0]
    param = SPECTRA[kind][0]
    kw = dict(METHODS[method][1])
    kw.update(extra)

    def stop(info):                    # [code-Prospect]'s divergence rule
        p = info["primal"]
        return bool(not np.isfinite(p) or (stop_diverged and p > DIVERGED * F0))

    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = fn(X, y, loss="squared", spectrum=kind, spectrum_param=param, lam=1.0 / n,
                   max_epochs=epochs_for(method, n, passes), seed=seed, callback=stop,
                   tol=0.0, **solver_kwargs(setting), **kw)
    except ValueError as exc:          # e.g. SOREL's gradient form with a step too large
        return None, time.perf_counter() - t0, f"rejected: {exc}"
    sec = time.perf_counter() - t0
    p = m.history["primal"]
    if (m.stop_reason == "diverged" or not np.all(np.isfinite(p))
            or (stop_diverged and p[-1] > DIVERGED * F0)):
        return m, sec, "diverged"
    return m, sec, None


def passes_of(method, m, n):
    h = m.history
    if "passes" in (h.dtype.names or ()):
        return np.asarray(h["passes"], dtype=float)
    return np.asarray(h["epoch"], dtype=float) * per_epoch_passes(method, n)


def grid(method):
    if METHODS[method][2]:
        return [dict(alpha=a, C=c) for a in ALPHAS for c in CS]
    return [dict(alpha=a) for a in ALPHAS]


def tune(method, name, X, y, kind, F0, cache, quick=False, retune=False):
    """The paper's grid search; cached per (data set, spectrum, method, horizon)."""
    horizon = TUNE_PASSES[name] if not quick else 4
    key = f"{name}|{kind}|{method}|{horizon}|{'quick' if quick else 'full'}"
    if key in cache and not retune:
        return cache[key]
    settings = grid(method)
    if quick:
        settings = settings[::7]
    rows, t_all = [], time.perf_counter()
    for s in settings:
        vals, fails = [], []
        for seed in TUNE_SEEDS:
            m, _, fail = run(method, X, y, kind, s, horizon, seed, F0)
            if fail:
                fails.append(fail)
                vals.append(np.inf)
            else:
                vals.append(float(np.mean(m.history["primal"][-10:])))
        rows.append(dict(setting=s, criterion=float(np.mean(vals)) if not fails else None,
                         failed=fails[0] if fails else None))
    ok = [r for r in rows if r["criterion"] is not None]
    best = min(ok, key=lambda r: r["criterion"])["setting"] if ok else None
    out = dict(horizon_passes=horizon, seeds=list(TUNE_SEEDS), n_settings=len(settings),
               n_runs=len(settings) * len(TUNE_SEEDS), seconds=time.perf_counter() - t_all,
               n_failed=len(rows) - len(ok), best=best, rows=rows)
    cache[key] = out
    return out


# ------------------------------------------------------------------------ summaries

def _sig(a, digits=5):
    return [None if not np.isfinite(v) else float(f"{v:.{digits}g}")
            for v in np.asarray(a, dtype=float)]


def to_targets(sub, passes, secs):
    """Per target: the first epoch at or below it (passes, seconds), and whether the run
    ends below it (``stays``; ``stays_passes``: from where on it never goes back above).
    A method that oscillates (SGD at its bias floor, LSVRG / Prospect near ties) can cross
    a target once and leave it again."""
    out = {}
    for t in TARGETS:
        hit = np.flatnonzero(sub <= t)
        if not hit.size:
            out[f"{t:g}"] = None
            continue
        above = np.flatnonzero(~(sub <= t))
        last_above = above[-1] if above.size else -1
        stays = bool(last_above < len(sub) - 1)
        out[f"{t:g}"] = dict(passes=float(passes[hit[0]]), seconds=float(secs[hit[0]]),
                             stays=stays,
                             stays_passes=float(passes[last_above + 1]) if stays else None)
    return out


def reference(name, kind, X, y, cache):
    key = f"{name}|{kind}|reference"
    if key in cache:
        return cache[key]
    t0 = time.perf_counter()
    r = spectral.spectral_reference(X, y, spectrum=kind, spectrum_param=SPECTRA[kind][0])
    out = dict(F_star=r.primal, lower=r.dual, gap=r.gap, rel_gap=r.gap / r.primal,
               n_iter=r.n_iter, converged=r.converged, seconds=time.perf_counter() - t0)
    cache[key] = out
    return out


def final_runs(method, X, y, kind, setting, budget, F0, Fs, n):
    """The selected setting for the full budget: seed 0 in full, the other RUN_SEEDS
    summarised (passes to each target, final value). No divergence stop here."""
    entry = dict(setting=setting, seeds=list(RUN_SEEDS), per_seed=[])
    for seed in RUN_SEEDS:
        m, sec, fail = run(method, X, y, kind, setting, budget, seed, F0, stop_diverged=False)
        if m is None:
            entry["per_seed"].append(dict(seed=seed, failure=fail))
            continue
        F = np.asarray(m.history["primal"], dtype=float)
        passes = passes_of(method, m, n)
        secs = np.asarray(m.history["time"], dtype=float)
        sub = (F - Fs) / (F0 - Fs)
        rel = (F - Fs) / Fs
        summary = dict(seed=seed, failure=fail, final_subopt=float(sub[-1]),
                       min_subopt=float(np.nanmin(sub)), final_rel=float(rel[-1]),
                       targets=to_targets(sub, passes, secs), seconds=sec)
        entry["per_seed"].append(summary)
        if seed != RUN_SEEDS[0]:
            continue
        entry.update(summary)
        entry.update(epochs=int(m.n_epochs), status=m.stop_reason,
                     passes=_sig(passes), time=_sig(secs), subopt=_sig(sub, 4),
                     min_rel=float(np.nanmin(rel)), max_rel_after_1e8=None)
        hit = np.flatnonzero(sub <= 1e-8)
        if hit.size:
            entry["max_rel_after_1e8"] = float(np.nanmax(rel[hit[0]:]))
        if method == "SOREL":
            eta = np.asarray(m.history["eta"][:m.n_epochs])   # the epochs run
            sched = setting["C"] * np.arange(1, len(eta) + 1) / n
            halved = np.flatnonzero(np.diff(eta / sched) < 0) + 1
            entry["guard_epochs"] = [int(k) for k in halved]
            entry["eta_final"] = float(eta[-1]) if eta.size else None
    ok = [p for p in entry["per_seed"] if "targets" in p]
    entry["seeds_reached"] = {f"{t:g}": sum(p["targets"][f"{t:g}"] is not None for p in ok)
                              for t in TARGETS}
    entry["seeds_end_below"] = {f"{t:g}": sum(p["final_subopt"] <= t for p in ok)
                                for t in TARGETS}
    entry["worst_final_subopt"] = max((p["final_subopt"] for p in ok), default=None)
    if "subopt" not in entry:
        entry["error"] = entry["per_seed"][0].get("failure")
    return entry


def run_pair(name, kind, X, y, methods, cache, results, quick=False, retune=False,
             verbose=True):
    n, d = X.shape
    sigma = spectral.spectrum(kind, n, SPECTRA[kind][0])
    F0 = objective_at_zero(y, sigma)
    ref = reference(name, kind, X, y, cache)
    Fs = ref["F_star"]
    pair = results.setdefault(name, {}).setdefault(kind, {})
    pair.update(n=n, d=d, F0=F0, reference=ref, floor=ref["gap"] / (F0 - Fs))
    pair.setdefault("methods", {})
    if verbose:
        print(f"{name} / {SPECTRA[kind][1]}: n={n}, d={d}, F* = {Fs:.15g}, certified gap "
              f"{ref['gap']:.1e} ({ref['rel_gap']:.1e} of F*, {ref['n_iter']} dual iterations, "
              f"{ref['seconds']:.1f} s)", flush=True)
    budget = PASSES[name] if not quick else 8
    for method in methods:
        tu = tune(method, name, X, y, kind, F0, cache, quick=quick, retune=retune)
        _write_json(_cache_path(), cache)
        if tu["best"] is None:
            pair["methods"][method] = dict(tuning={k: v for k, v in tu.items() if k != "rows"},
                                           error="every setting failed")
            continue
        entry = final_runs(method, X, y, kind, tu["best"], budget, F0, Fs, n)
        entry.update(paper=paper_setting(name, method, kind),
                     tuning={k: v for k, v in tu.items() if k != "rows"}, tuning_rows=tu["rows"])
        pair["methods"][method] = entry
        if method == "SOREL":          # the paper's own (alpha, C), for comparison
            e2 = final_runs(method, X, y, kind, paper_setting(name, method, kind), budget, F0,
                            Fs, n)
            e2.update(paper=paper_setting(name, method, kind))
            pair["methods"]["SOREL (paper's alpha, C)"] = e2
        if verbose:
            for lab in ([method, "SOREL (paper's alpha, C)"] if method == "SOREL" else [method]):
                e = pair["methods"][lab]
                if "subopt" not in e:
                    print(f"  {lab}: {e.get('error')}")
                    continue
                tg = "  ".join(_fmt_target(e["targets"][f"{t:g}"], e["passes"][-1])
                               for t in TARGETS)
                print(f"  {lab:9s} {_fmt_setting(e['setting']):22s} to 1e-4 / 1e-6 / 1e-8: {tg}"
                      f"  final {e['final_subopt']:.1e}; seeds reaching 1e-6: "
                      f"{e['seeds_reached']['1e-06']}/{len(RUN_SEEDS)}"
                      + (f" (tuning {tu['n_runs']} runs, {tu['seconds']:.1f} s)"
                         if lab == method else ""), flush=True)
    return pair


def _fmt_setting(s):
    return ", ".join(f"{k}={v:g}" for k, v in s.items())


def _fmt_target(t, max_passes):
    if t is None:
        return f"not reached in {max_passes:.0f} passes"
    return (f"{t['passes']:.4g} p / {t['seconds']:.3g} s"
            + ("" if t.get("stays", True) else " (left again)"))


# --------------------------------------------------------------------------- guard demo

def guard_demo(results, cache, epochs=1500, quick=False):
    """SOREL with the paper's settings for a long run, dual_step_guard off and on."""
    out = {}
    cases = (("concrete", "esrm"), ("yacht", "superquantile"))
    for name, kind in cases[:1] if quick else cases:
        X, y = load(name)
        n = len(y)
        ref = reference(name, kind, X, y, cache)
        s = paper_setting(name, "SOREL", kind)
        sigma = spectral.spectrum(kind, n, SPECTRA[kind][0])
        F0 = objective_at_zero(y, sigma)
        curves = {}
        for g in (False, True):
            m = spectral.train_sorel(X, y, spectrum=kind, spectrum_param=SPECTRA[kind][0],
                                     lam=1.0 / n, max_epochs=epochs if not quick else 50,
                                     seed=RUN_SEED, dual_step_guard=g, tol=0.0,
                                     **solver_kwargs(s))
            F = np.asarray(m.history["primal"])
            curves["guard" if g else "paper"] = dict(
                subopt=_sig((F - ref["F_star"]) / (F0 - ref["F_star"]), 4),
                eta=_sig(m.history["eta"][:m.n_epochs], 4))
        out[f"{name}|{kind}"] = dict(setting=s, epochs=epochs, **curves)
    results["_guard_demo"] = out
    return out


# ------------------------------------------------------------------------------ plots

def _clip(a, floor=1e-16):
    a = np.array([np.nan if v is None else v for v in a], dtype=float)
    return np.where(a > floor, a, floor)


def plot_dataset(name, results, methods):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no figure")
        return None
    kinds = [k for k in SPECTRA if k in results.get(name, {})]
    if not kinds:
        return None
    fig, axes = plt.subplots(2, len(kinds), figsize=(4.2 * len(kinds), 7.6), squeeze=False)
    for j, kind in enumerate(kinds):
        pair = results[name][kind]
        for method in LABELS:
            e = pair["methods"].get(method)
            if not e or "subopt" not in e:
                continue
            st = STYLE[method]
            lab = f"{method} ({_fmt_setting(e['setting'])})"
            axes[0, j].semilogy(e["passes"], _clip(e["subopt"]), label=lab, **st)
            axes[1, j].semilogy(e["time"], _clip(e["subopt"]), label=lab, **st)
        fl = pair["floor"]
        for i in range(2):
            ax = axes[i, j]
            if fl > 0:
                ax.axhline(max(fl, 1e-16), color="k", lw=0.5, ls=":")
            ax.set_ylim(1e-16, 10)
            ax.grid(True, which="major", alpha=0.3)
            ax.set_xlabel("passes" if i == 0 else "seconds")
            if j == 0:
                ax.set_ylabel("(F - F*) / (F(0) - F*)")
        axes[0, j].set_title(f"{name}, {SPECTRA[kind][1]}")
        # below the panels, so that no curve is hidden (the settings differ per spectrum)
        axes[1, j].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    fig.tight_layout()
    os.makedirs(IMG, exist_ok=True)
    path = os.path.join(IMG, f"sorel_{name}.png")
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_guard(results):
    demo = results.get("_guard_demo")
    if not demo:
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, len(demo), figsize=(5.2 * len(demo), 3.6), squeeze=False)
    for ax, (key, d) in zip(axes[0], demo.items()):
        name, kind = key.split("|")
        for lab, st in (("paper", dict(color="tab:gray", ls="-")),
                        ("guard", dict(color="tab:red", ls="--"))):
            sub = _clip(d[lab]["subopt"])
            ax.semilogy(np.arange(len(sub)), sub, label="eta_k = C(k+1)/n (paper)"
                        if lab == "paper" else "with dual_step_guard (default)", **st)
        ax.set_title(f"SOREL, {name}, {SPECTRA[kind][1]}, "
                     f"{_fmt_setting(d['setting'])}", fontsize=9)
        ax.set_xlabel("epochs")
        ax.set_ylabel("(F - F*) / (F(0) - F*)")
        ax.set_ylim(1e-16, 10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(IMG, "sorel_guard.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


# ------------------------------------------------------------------------------ tables

def _pairs(results):
    """(data set, spectrum, result) for every pair present, in the tables' order."""
    for name in DATASETS:
        for kind in SPECTRA:
            p = results.get(name, {}).get(kind)
            if p:
                yield name, kind, p


def tables(results, methods=LABELS):
    """Markdown: per data set, one row per (spectrum, method); the targets are seed 0's."""
    lines = ["Cells: passes (p) and seconds (s) at which seed 0 first reaches the target; "
             "\u2020: it is above the target again at the end of the run. Last column: of the "
             "five seeds, how many reach 1e-6 / 1e-8, and in brackets how many end below it."]
    for name in DATASETS:
        if name not in results:
            continue
        lines.append(f"\n**{name}** (n = {next(iter(results[name].values()))['n']})\n")
        lines.append("| spectrum | method | alpha, C (used; paper) | to 1e-4 | to 1e-6 | "
                     "to 1e-8 | final | (F-F*)/F* final | seeds: 1e-6; 1e-8 |")
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for kind in SPECTRA:
            pair = results[name].get(kind)
            if not pair:
                continue
            for method in methods:
                e = pair["methods"].get(method)
                if not e:
                    continue
                if "subopt" not in e:
                    lines.append(f"| {kind} | {method} | - | {e.get('error')} | | | | | |")
                    continue
                last = e["passes"][-1]
                cells = []
                for t in TARGETS:
                    v = e["targets"][f"{t:g}"]
                    cells.append(f"not reached in {last:.0f} passes" if v is None else
                                 f"{v['passes']:.4g} p, {v['seconds']:.2g} s"
                                 + ("" if v.get("stays", True) else " \u2020"))
                sel = _fmt_setting(e["setting"]).replace("alpha=", "").replace("C=", "")
                pap = _fmt_setting(e["paper"]).replace("alpha=", "").replace("C=", "")
                sr, ns = e.get("seeds_reached", {}), len(e.get("per_seed", []))
                sb = e.get("seeds_end_below", {})
                seeds = "; ".join(f"{sr.get(k)}/{ns} ({sb.get(k, '?')})"
                                  for k in ("1e-06", "1e-08"))
                lines.append(f"| {kind} | {method} | {sel}; {pap} | " + " | ".join(cells)
                             + f" | {e['final_subopt']:.1e} | {e['final_rel']:.1e} | "
                             f"{seeds} |")
    return "\n".join(lines)


def steps_table(results):
    """The selected settings per pair and method, with [code-SOREL]'s in brackets."""
    meths = [m for m in METHODS]
    lines = ["| data set | spectrum | " + " | ".join(
                 f"{m} {'(alpha, C)' if METHODS[m][2] else 'alpha'}" for m in meths) + " |",
             "|---|---|" + "---|" * len(meths)]
    for name, kind, p in _pairs(results):
        cells = []
        for m in meths:
            e = p["methods"].get(m)
            if not e or "setting" not in e:
                cells.append("-")
                continue
            fmt = lambda st: ", ".join(f"{v:g}" for v in st.values())  # noqa: E731
            cells.append(f"{fmt(e['setting'])} ({fmt(e['paper'])})")
        lines.append(f"| {name} | {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_table(results):
    """Per pair and target: the method that gets there first in passes and in seconds
    (seed 0, first crossing; SOREL = the tuned SOREL), with SOREL's own value; a dagger:
    that run is above the target again at its end."""
    meths = [m for m in METHODS]
    lines = ["| data set | spectrum | target | fewest passes | SOREL passes | "
             "fewest seconds | SOREL seconds | reached by |",
             "|---|---|---|---|---|---|---|---|"]
    for name, kind, p in _pairs(results):
        for t in TARGETS[1:]:
            got = {}
            for m in meths:
                e = p["methods"].get(m)
                v = e.get("targets", {}).get(f"{t:g}") if e else None
                if v is not None:
                    got[m] = v
            if not got:
                lines.append(f"| {name} | {kind} | {t:g} | none | | | | none |")
                continue
            bp = min(got, key=lambda m: got[m]["passes"])
            bs = min(got, key=lambda m: got[m]["seconds"])
            so = got.get("SOREL")
            dg = {m: "" if got[m].get("stays", True) else "\u2020" for m in got}
            lines.append(
                f"| {name} | {kind} | {t:g} | {bp}{dg[bp]} ({got[bp]['passes']:.4g}) | "
                f"{'-' if so is None else format(so['passes'], '.4g')} | "
                f"{bs}{dg[bs]} ({got[bs]['seconds'] * 1e3:.2g} ms) | "
                f"{'-' if so is None else format(so['seconds'] * 1e3, '.2g') + ' ms'} | "
                f"{', '.join(m + dg[m] for m in got)} |")
    return "\n".join(lines)


def reference_table(results):
    lines = ["| data set | n | spectrum | F* | certified gap / F* | dual iterations | seconds |",
             "|---|---|---|---|---|---|---|"]
    for name, kind, p in _pairs(results):
        r = p["reference"]
        lines.append(f"| {name} | {p['n']} | {kind} | {r['F_star']:.12g} | "
                     f"{r['rel_gap']:.1e} | {r['n_iter']} | {r['seconds']:.2f} |")
    return "\n".join(lines)


def print_tables(results):
    print(reference_table(results))
    print(tables(results))
    print("\nSelected settings (in brackets: [code-SOREL]'s table)\n")
    print(steps_table(results))
    print("\nWho gets there first (seed 0)\n")
    print(summary_table(results))


# ------------------------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    ap.add_argument("--spectra", nargs="+", default=list(SPECTRA), choices=list(SPECTRA))
    ap.add_argument("--methods", nargs="+", default=list(METHODS),
                    help="any of " + ", ".join(METHODS) + " (case-insensitive)")
    ap.add_argument("--retune", action="store_true", help="ignore the cached grid searches")
    ap.add_argument("--no-guard-demo", action="store_true")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--quick", action="store_true", help="smoke run: tiny grids and budgets")
    ap.add_argument("--table", action="store_true", help="print the tables from the JSON")
    ap.add_argument("--plots-only", action="store_true",
                    help="redraw the figures from the JSON (no runs)")
    args = ap.parse_args(argv)
    lower = {m.lower(): m for m in METHODS}
    try:
        methods = [lower[m.lower()] for m in args.methods]
    except KeyError as exc:
        ap.error(f"unknown method {exc}; choose from {', '.join(METHODS)}")
    results = _read_json(RESULTS)
    if args.table:
        print_tables(results)
        return
    if args.plots_only:
        for name in args.datasets:
            p = plot_dataset(name, results, list(LABELS))
            if p:
                print(f"  wrote {os.path.relpath(p, ROOT)}")
        p = plot_guard(results)
        if p:
            print(f"  wrote {os.path.relpath(p, ROOT)}")
        return
    for m in methods:                  # fail early if a method is not in this checkout
        solver(m)
    cache = _read_json(_cache_path())
    t0 = time.perf_counter()
    for name in args.datasets:
        X, y = load(name)
        for kind in args.spectra:
            run_pair(name, kind, X, y, methods, cache, results, quick=args.quick,
                     retune=args.retune)
            _write_json(_cache_path(), cache)
        if not args.quick:
            _write_json(RESULTS, _meta(results))
        if not args.no_plots and not args.quick:
            p = plot_dataset(name, results, list(LABELS))
            if p:
                print(f"  wrote {os.path.relpath(p, ROOT)}")
    if not args.no_guard_demo:
        guard_demo(results, cache, quick=args.quick)
        if not args.no_plots and not args.quick:
            p = plot_guard(results)
            if p:
                print(f"  wrote {os.path.relpath(p, ROOT)}")
    total = time.perf_counter() - t0
    if not args.quick:
        results = _meta(results)
        results["_meta"]["last_run"] = dict(argv=sys.argv[1:] if argv is None else list(argv),
                                            seconds=round(total, 1))
        _write_json(RESULTS, results)
    print(f"total {total:.0f} s")
    print_tables(results)


def _meta(results):
    results["_meta"] = dict(date=datetime.date.today().isoformat(), numpy=np.__version__,
                            dualsolve=getattr(dualsolve, "__version__", None),
                            passes=PASSES, tune_passes=TUNE_PASSES, alphas=ALPHAS, Cs=CS,
                            tune_seeds=TUNE_SEEDS, run_seed=RUN_SEED, targets=TARGETS)
    return results


if __name__ == "__main__":
    main()
