"""The experiments of He, Tappenden & Takac (2018), Figures 2-3 and 5-6, on our data.

For each data set (w8a, agaricus = mushrooms, a9a, reuters in place of rcv1, news20) and loss
(squared with y in {-1, +1} as targets, logistic), lam = 1/n unless ``--lam-scale`` says
otherwise, every method's duality-gap certificate (``history["gap"]``: the gap at (w, alpha)
when alpha is feasible, else P(w) - D(-phi'(Xw)); see docs/adfsdca.md) relative to P(0),
against epochs and against seconds:

* SDCA (``train_sdca``, exact coordinate maximisation, liblinear's loop; checked every epoch),
* dfSDCA (uniform), IS-dfSDCA (fixed importance probabilities),
* adfSDCA (exact, Algorithm 1) and adfSDCA+ with s = prob_shrink in {1, 10, 20} (Algorithm 2,
  capped step),
* mini-batch adfSDCA with b in {1, 8, 32} (Figures 5-6).

Exact adfSDCA and its mini-batches run on agaricus and the first 5,000 rows of w8a only (see
EXACT_ON: an exact epoch costs thousands of passes on the larger sets).

Each run stops at ``--epochs`` epochs, a gap below ``--tol`` relative to P(0), or after
``--budget`` seconds (exact adfSDCA costs far more than a pass per epoch on data with dense
columns: a step touches every row sharing a feature with the sampled row). Times include the
exact gap check of every epoch, which all methods pay alike.

Also measured, side by side in one run: one epoch of adfSDCA+ and of exact adfSDCA on news20
as a ratio to one ``X @ w`` (``--cost``; median of paired runs; the epoch includes the
residue pass at its start, not the gap check).

Usage::

    DUALSOLVE_DATA=... python bench/adfsdca_figures.py [--datasets w8a agaricus ...]
        [--losses squared logistic] [--epochs 40] [--budget 120] [--cost] [--quick]

Writes ``bench/results/adfsdca_figures.json`` and ``docs/img/adfsdca_<data>_<loss>.png``.
"""
import argparse
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

import datasets  # noqa: E402
import peers  # noqa: E402

import dualsolve  # noqa: E402

DATASETS = ("w8a", "agaricus", "a9a", "reuters", "news20", "w8a-5k")
# exact adfSDCA keeps every residue current: a step on row i updates the margins of every row
# sharing a feature with it (and their tree leaves), so an epoch costs about
# sum_f nnz(column f)^2 operations plus a tree update per touched row -- on w8a 251 s per
# epoch (thousands of passes), on news20 about 1,900 X @ w. Exact and mini-batch (which
# shares that cost) are run only where an epoch takes seconds: the small sets below.
EXACT_ON = ("agaricus", "w8a-5k")


def load(name):
    """CSR X and labels in {-1, +1} (agaricus is LIBSVM's mushrooms data, train part)."""
    if name == "w8a-5k":                 # the first 5,000 rows of w8a
        X, y = datasets.load("w8a")[:2]
        return X[:5000], y[:5000]
    if name == "agaricus":
        X, y = dualsolve.load_svmlight(os.path.join(datasets.data_dir(), "libsvm",
                                                    "agaricus.txt.train.xz"))
        y = np.where(y == y.max(), 1.0, -1.0)
        return X, y
    return datasets.load(name)[:2]


def methods(n, exact):
    """(label, function, keyword arguments, style) of every curve (exact adfSDCA and its
    mini-batches only if ``exact``)."""
    out = [("SDCA", dualsolve.train_sdca, dict(check_every=1, shrinking=False), "k-"),
           ("dfSDCA", dualsolve.train_dfsdca, dict(sampling="uniform"), "C7-"),
           ("IS-dfSDCA", dualsolve.train_dfsdca, dict(sampling="importance"), "C8-"),
           ("adfSDCA+ s=1", dualsolve.train_adfsdca, dict(prob_shrink=1.0), "C0:"),
           ("adfSDCA+ s=10", dualsolve.train_adfsdca, dict(prob_shrink=10.0), "C0-"),
           ("adfSDCA+ s=20", dualsolve.train_adfsdca, dict(prob_shrink=20.0), "C0--")]
    if exact:
        out.append(("adfSDCA", dualsolve.train_adfsdca, dict(variant="exact"), "C3-"))
    if exact:
        for b, st in ((8, "C2-"), (32, "C4-")):
            if b < n:
                out.append((f"adfSDCA b={b}", dualsolve.train_adfsdca,
                            dict(variant="exact", batch_size=b), st))
    return out


def run(fn, X, y, loss, lam, kw, epochs, tol, budget):
    """History (epochs, seconds, gap / P(0)) of one run, stopped by the time budget."""
    t0 = time.perf_counter()

    def stop(info):
        return time.perf_counter() - t0 > budget

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = fn(X, y, loss=loss, lam=lam, tol=tol, max_epochs=epochs, seed=0, callback=stop,
               **kw)
    h = m.history
    p0 = float(h["primal"][0])
    gap = np.asarray(h["gap"], dtype=float) / p0
    return dict(epoch=h["epoch"].tolist(), time=h["time"].tolist(), gap=gap.tolist(),
                primal=h["primal"].tolist(), n_epochs=int(m.n_epochs),
                converged=bool(m.converged))


def first_below(curve, level):
    """(epochs, seconds) at which the gap first reaches level, or None."""
    for e, t, g in zip(curve["epoch"], curve["time"], curve["gap"]):
        if np.isfinite(g) and g <= level:
            return e, t
    return None


def plot(name, loss, lam_scale, curves, styles, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for label, c in curves.items():
        g = np.maximum(np.asarray(c["gap"], dtype=float), 1e-16)
        axes[0].semilogy(c["epoch"], g, styles[label], label=label, lw=1.3)
        axes[1].semilogy(c["time"], g, styles[label], label=label, lw=1.3)
    axes[0].set_xlabel("epochs (n coordinate updates)")
    axes[1].set_xscale("log")            # exact adfSDCA costs 100-1000x the others per epoch
    axes[1].set_xlabel("seconds (gap checks included; log scale)")
    for ax in axes:
        ax.set_ylabel("duality gap / P(0)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2)
    fig.suptitle(f"{name}, {loss} loss, lam = {lam_scale:g}/n")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def epoch_cost(X, y, lam, repeat, budget):
    """Seconds of one epoch (residue pass + n steps, no gap check) / one X @ w, paired."""
    out = {}
    for label, kw in (("adfSDCA+ s=10", dict(variant="plus", prob_shrink=10)),
                      ("adfSDCA (exact)", dict(variant="exact"))):
        ratios = []
        for _ in range(repeat if kw["variant"] == "plus" else 1):   # exact: ~1 minute
            mv = peers.matvec_time(X, repeat=10)
            epochs = 4 if kw["variant"] == "plus" else 1
            t0 = time.perf_counter()

            def stop(info, t0=t0):
                return time.perf_counter() - t0 > budget

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = dualsolve.train_adfsdca(X, y, loss="logistic", lam=lam, tol=0,
                                            max_epochs=epochs, check_every=epochs + 1,
                                            seed=0, callback=stop, **kw)
            dt = np.diff(m.history["time"])
            ratios.append(float(np.median(dt)) / mv)
        out[label] = dict(median=float(np.median(ratios)), min=float(np.min(ratios)),
                          max=float(np.max(ratios)), repeat=repeat)
        print(f"  {label:<16} epoch / X@w: {out[label]['median']:.2f} "
              f"({out[label]['min']:.2f}-{out[label]['max']:.2f})", flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    ap.add_argument("--losses", nargs="+", default=["squared", "logistic"])
    ap.add_argument("--lam-scale", type=float, default=1.0)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--tol", type=float, default=1e-12)
    ap.add_argument("--budget", type=float, default=90.0, help="seconds per run")
    ap.add_argument("--cost", action="store_true", help="epoch cost on news20")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smoke run: 3 epochs, 10 s")
    ap.add_argument("--replot", action="store_true", help="only redraw the PNGs from --json")
    ap.add_argument("--exact-on", nargs="+", default=list(EXACT_ON), choices=DATASETS,
                    help="data sets on which exact adfSDCA and its mini-batches run")
    ap.add_argument("--merge", action="store_true",
                    help="update these data sets' runs in an existing --json")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "adfsdca_figures.json"))
    ap.add_argument("--img", default=os.path.join(ROOT, "docs", "img"))
    args = ap.parse_args(argv)
    if args.quick:
        args.epochs, args.budget = 3, 10.0
    out = dict(lam_scale=args.lam_scale, epochs=args.epochs, budget=args.budget, runs={})
    os.makedirs(args.img, exist_ok=True)
    if args.replot:
        with open(args.json) as f:
            saved = json.load(f)
        styles = {label: style for label, _, _, style in methods(10 ** 6, True)}
        for key, curves in saved["runs"].items():
            name, loss = key.split("/")
            plot(name, loss, saved["lam_scale"], curves, styles,
                 os.path.join(args.img, f"adfsdca_{name}_{loss}.png"))
        return
    if args.cost:
        X, y = load("news20")
        print("epoch cost on news20, logistic, lam = 1/n:", flush=True)
        out["epoch_cost_news20"] = epoch_cost(X, y, 1.0 / X.shape[0], args.repeat,
                                              args.budget)
    for name in args.datasets:
        X, y = load(name)
        n = X.shape[0]
        lam = args.lam_scale / n
        for loss in args.losses:
            print(f"{name} ({n} x {X.shape[1]}, nnz {X.nnz}), {loss}:", flush=True)
            curves, styles = {}, {}
            for label, fn, kw, style in methods(n, name in args.exact_on):
                c = run(fn, X, y, loss, lam, kw, args.epochs, args.tol, args.budget)
                curves[label], styles[label] = c, style
                hits = {f"{lv:g}": first_below(c, lv) for lv in (1e-4, 1e-8, 1e-12)}
                print(f"  {label:<15} {c['n_epochs']:>4} epochs {c['time'][-1]:7.2f} s "
                      f"gap/P0 {c['gap'][-1]:.1e}  reached (epochs, s): {hits}", flush=True)
                c["reached"] = hits
            out["runs"][f"{name}/{loss}"] = curves
            plot(name, loss, args.lam_scale, curves, styles,
                 os.path.join(args.img, f"adfsdca_{name}_{loss}.png"))
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    if args.merge and os.path.exists(args.json):
        with open(args.json) as f:
            saved = json.load(f)
        saved["runs"].update(out.pop("runs"))
        saved.update(out)
        out = saved
    with open(args.json, "w") as f:
        json.dump(out, f)
    print("wrote", os.path.relpath(args.json))


if __name__ == "__main__":
    main()
