"""train_sdca against liblinear, scikit-learn, snapml and cyanure, side by side in one run.

For each data set and loss (lam = 1/n unless --lam-scale says otherwise):

* P* from ``peers.reference_optimum`` (liblinear's primal Newton at eps=1e-12, polished by
  L-BFGS; certified by the gradient norm), independent of dualsolve;
* for every solver, ours included, the training time of the first run in a decreasing
  tolerance sweep whose primal suboptimality (P(w) - P*)/P* reaches the target (median of
  3 repeats of that run), printed as a ratio to liblinear's dual solver; liblinear's data
  copy into its own format is built before its timer starts;
* our epoch cost as a ratio to one ``X @ w`` (dense random w): the pass alone (gap checks
  and shrinking off; median of paired pass / mat-vec ratios over 5 alternating rounds), and
  the average epoch of the timed run (passes plus its checks, shrinking on).

Usage::

    DUALSOLVE_DATA=... python bench/sdca_vs_peers.py [reuters news20] [--loss logistic squared_hinge]
        [--lam-scale 1 0.01] [--peers ...] [--json bench/results/sdca_vs_peers.json]
"""
import argparse
import json
import os
import sys
import time
import warnings

# every solver single-threaded, and no idle BLAS threads spinning beside the timed one
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import datasets  # noqa: E402
import peers  # noqa: E402

import dualsolve  # noqa: E402

TARGETS = {"logistic": 1e-8, "squared_hinge": 1e-6, "hinge": 1e-6}
DUAL_PEER = {"logistic": "liblinear -s 7", "squared_hinge": "liblinear -s 1", "hinge": "liblinear -s 3"}


def run_ours(X, y, lam, loss, tol, max_iter=5000, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dualsolve.ConvergenceWarning)
        t0 = time.perf_counter()
        m = dualsolve.train_sdca(X, y, loss=loss, lam=lam, tol=tol, max_epochs=max_iter, seed=0, **kw)
        dt = time.perf_counter() - t0
    h = m.history
    return dict(w=m.coef, time=dt, n_iter=m.n_epochs, hit_max_iter=not m.converged,
                peer="dualsolve sdca", loss=loss, tol=tol,
                n_checks=int(np.isfinite(h["gap"]).sum()), gap=float(h["gap"][-1]))


def pass_time(X, y, lam, loss, epochs=12):
    """Median seconds of one pass alone: the epoch-to-epoch times of a run without gap
    checks (check_every beyond the run) and without shrinking, epochs 3 and later."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = dualsolve.train_sdca(X, y, loss=loss, lam=lam, tol=0, max_epochs=epochs,
                                 check_every=10 * epochs, shrinking=False)
    return float(np.median(np.diff(m.history["time"])[2:-1]))


def epoch_ratio(X, y, lam, loss, repeat=5):
    """(pass seconds, X@w seconds, median of the paired ratios), measured alternately."""
    passes, mvs = [], []
    for _ in range(repeat):
        mvs.append(peers.matvec_time(X, repeat=10))
        passes.append(pass_time(X, y, lam, loss))
    ratios = np.array(passes) / np.array(mvs)
    return float(np.median(passes)), float(np.median(mvs)), float(np.median(ratios))


def paired_ratio(ours, theirs, repeat=7):
    """Median of time ratios from alternating runs (the machine's speed drifts; pairs
    taken back to back see the same machine)."""
    ratios = []
    for _ in range(repeat):
        a = ours()
        b = theirs()
        ratios.append(a / b)
    return dict(median=float(np.median(ratios)), min=float(np.min(ratios)),
                max=float(np.max(ratios)), repeat=repeat)


def bench_one(name, X, y, lam, loss, peer_names, verbose):
    target = TARGETS[loss]
    ref = peers.reference_optimum(X, y, lam, loss, name=name)
    p_star = ref["p_star"]
    mv = peers.matvec_time(X)
    grid = peers._grid(12)
    results = {"dualsolve": peers.time_to_target(run_ours, X, y, lam, loss, p_star, target,
                                                 tol_grid=grid, verbose=verbose)}
    for p in peer_names:
        if loss in peers.PEERS[p][1]:
            results[p] = peers.time_to_target(p, X, y, lam, loss, p_star, target, verbose=verbose)
    ours = results["dualsolve"]
    base = results.get("liblinear-dual")
    paired = None
    if ours["reached"] and base and base["reached"]:
        paired = paired_ratio(lambda: run_ours(X, y, lam, loss, ours["tol"])["time"],
                              lambda: peers.run_liblinear(X, y, lam, loss, base["tol"])["time"])
    last = next((r for r in ours["runs"] if r["subopt"] <= target), ours["runs"][-1])
    epoch, mv_paired, ratio = epoch_ratio(X, y, lam, loss)
    out = dict(name=name, loss=loss, lam=lam, lam_n=lam * X.shape[0], target=target,
               p_star=p_star, ref_rel_bound=ref["rel_bound"], matvec=mv,
               pass_time=epoch, pass_matvecs=ratio, matvec_paired=mv_paired,
               epoch_with_checks=(ours["time"] / last["n_iter"]) if ours["reached"] else None,
               paired_vs_liblinear=paired, results=results)
    return out


def table(out):
    mv = out["matvec"]
    base = out["results"].get("liblinear-dual")
    base_t = base["time"] if base and base["reached"] else None
    lines = [f"### {out['name']}, {out['loss']}, lam = {out['lam_n']:g}/n, target "
             f"{out['target']:.0e} (P* = {out['p_star']:.12f}, certified to "
             f"{out['ref_rel_bound']:.0e}); X@w = {mv * 1e3:.2f} ms", "",
             "| solver | time (s) | / liblinear dual | / X@w | tol used | iterations | subopt |",
             "|---|---|---|---|---|---|---|"]
    for p, r in out["results"].items():
        label = {"dualsolve": "**dualsolve train_sdca**",
                 "liblinear-dual": DUAL_PEER[out["loss"]]}.get(p, p)
        if r["reached"]:
            ratio = f"{r['time'] / base_t:.2f}" if base_t else "-"
            lines.append(f"| {label} | {r['time']:.3f} | {ratio} | {r['time'] / mv:.0f} | "
                         f"{r['tol']:.1e} | {r['n_iter']} | {r['subopt']:.1e} |")
        else:
            lines.append(f"| {label} | not reached | - | - | - | - | best {r['subopt']:.1e} |")
    ew = out["epoch_with_checks"]
    pr = out.get("paired_vs_liblinear")
    if pr:
        lines += ["", f"Paired, alternating runs at the tolerances above: dualsolve / "
                      f"{DUAL_PEER[out['loss']]} = {pr['median']:.2f} (median of {pr['repeat']}; "
                      f"min {pr['min']:.2f}, max {pr['max']:.2f})"]
    lines += ["", f"Our epoch: pass alone {out['pass_time'] * 1e3:.1f} ms = "
                  f"{out['pass_matvecs']:.2f} X@w (paired median)"
              + (f"; average epoch of the timed run, checks included, {ew * 1e3:.1f} ms = "
                 f"{ew / mv:.2f} X@w" if ew else ""), ""]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("datasets", nargs="*", default=["reuters", "news20"])
    ap.add_argument("--loss", nargs="*", default=["logistic", "squared_hinge"])
    ap.add_argument("--lam-scale", nargs="*", type=float, default=[1.0],
                    help="lam = scale / n for each scale (default 1)")
    ap.add_argument("--peers", nargs="*",
                    default=["liblinear-dual", "liblinear-primal", "sklearn-saga", "snapml", "cyanure"])
    ap.add_argument("--json", default=None)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    allres = []
    for name in args.datasets:
        X, y = datasets.load(name)
        for scale in args.lam_scale:
            for loss in args.loss:
                out = bench_one(name, X, y, scale / X.shape[0], loss, args.peers, args.verbose)
                print(table(out), flush=True)
                allres.append(out)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(allres, f, indent=1, default=float)


if __name__ == "__main__":
    main()
