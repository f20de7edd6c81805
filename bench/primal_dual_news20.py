"""The randomized primal-dual solvers on news20: epoch cost and time to a target.

Two measurements, side by side in one run (logistic loss, lam = 1e-4/n by default):

* **Epoch cost** as a ratio to one ``X @ w`` (dense random w): the steps of one epoch
  alone (evaluation every ``--epochs`` epochs, so the per-epoch times in the history are
  bare passes; median over epochs 2 and later) and the average epoch with the default
  evaluation after every epoch (flush, exact ``u``, P, D and the gap). Each ratio is the
  median of ``--repeat`` alternating (solver, mat-vec) pairs. For our SVRG an "epoch" is
  one snapshot gradient plus ``2n`` stochastic steps (3 passes in gradient evaluations:
  the snapshot's per-row derivatives are stored).
* **Time to (P(w) - P*)/P* <= target** (default 1e-6) for train_spdc, train_adf_spdc,
  train_svrg, train_sdca and scikit-learn's SAGA: each solver is run at decreasing
  tolerances (its own stopping rule) until the returned w reaches the target; that run is
  repeated and the median time reported (``peers.time_to_target``, as in
  ``sdca_vs_peers.py``). P* is ``peers.reference_optimum``: liblinear's primal Newton at
  eps = 1e-12 polished by L-BFGS, certified by its gradient norm, independent of dualsolve.

Usage::

    DUALSOLVE_DATA=... python bench/primal_dual_news20.py [--lam-scale 1e-4] [--target 1e-6]
        [--solvers spdc adf_spdc svrg sdca saga] [--max-epochs spdc=400 ...] [--json bench/results/primal_dual_news20.json]
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
sys.path.insert(0, HERE)

import datasets  # noqa: E402
import peers  # noqa: E402

import dualsolve  # noqa: E402

# our solvers' stopping tolerances: duality gap <= tol * P(0) (SPDC family, SVRG, SDCA)
OUR_GRID = [10.0 ** -k for k in np.arange(4, 13.5, 0.5)]
# epoch caps of the time-to-target runs: about two minutes of work per capped run
CAPS = {"spdc": 400, "adf_spdc": 400, "svrg": 150, "sdca": 4000, "saga": 300}
SOLVERS = {
    "spdc": ("dualsolve train_spdc", dualsolve.train_spdc),
    "adf_spdc": ("dualsolve train_adf_spdc", dualsolve.train_adf_spdc),
    "svrg": ("dualsolve train_svrg", dualsolve.train_svrg),
    "sdca": ("dualsolve train_sdca", dualsolve.train_sdca),
}


def our_runner(key, max_epochs):
    """A run_<peer>-style function (X, y, lam, loss, tol, max_iter) for one of ours."""
    label, fn = SOLVERS[key]

    def run(X, y, lam, loss, tol, max_iter=max_epochs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dualsolve.ConvergenceWarning)
            t0 = time.perf_counter()
            m = fn(X, y, loss=loss, lam=lam, tol=tol, max_epochs=max_iter, seed=0)
            dt = time.perf_counter() - t0
        return dict(w=m.coef, time=dt, n_iter=m.n_epochs, hit_max_iter=not m.converged,
                    peer=label, loss=loss, tol=tol)
    return run


def epoch_times(key, X, y, lam, epochs, evaluate):
    """Median seconds per epoch from the history: bare passes (evaluate=False, epochs 2..)
    or epochs with an evaluation after each (evaluate=True)."""
    fn = SOLVERS[key][1]
    kw = {}
    if key in ("spdc", "adf_spdc"):
        kw["check_every"] = 1 if evaluate else epochs + 1
    elif key == "sdca":
        kw.update(check_every=1 if evaluate else 10 * epochs, shrinking=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = fn(X, y, loss="logistic", lam=lam, tol=0, max_epochs=epochs, seed=0, **kw)
    dt = np.diff(m.history["time"])
    return float(np.median(dt[1:] if not evaluate else dt))


def epoch_ratios(keys, X, y, lam, epochs, repeat):
    """{solver: {bare, with_eval}: (median ratio, min, max)} to one X @ w, paired."""
    out = {}
    for key in keys:
        row = {}
        for evaluate in (False, True):
            ratios = []
            if key == "svrg" and not evaluate:
                continue                      # SVRG evaluates P once per epoch in any case
            for _ in range(repeat):
                mv = peers.matvec_time(X, repeat=10)
                ratios.append(epoch_times(key, X, y, lam, epochs, evaluate) / mv)
            row["with_eval" if evaluate else "bare"] = (float(np.median(ratios)),
                                                        float(np.min(ratios)),
                                                        float(np.max(ratios)))
        out[key] = row
        print(f"  {key:<9} epoch / X@w: " + ", ".join(
            f"{k} {v[0]:.2f} ({v[1]:.2f}-{v[2]:.2f})" for k, v in row.items()), flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="news20")
    ap.add_argument("--lam-scale", type=float, default=1e-4, help="lam = scale / n")
    ap.add_argument("--target", type=float, default=1e-6)
    ap.add_argument("--solvers", nargs="+", default=["spdc", "adf_spdc", "svrg", "sdca", "saga"])
    ap.add_argument("--max-epochs", type=int, nargs="+", default=[],
                    metavar="SOLVER=N", help="epoch caps, e.g. spdc=300 (defaults: CAPS)")
    ap.add_argument("--epochs", type=int, default=8, help="epochs per epoch-cost run")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-cost", action="store_true")
    ap.add_argument("--skip-target", action="store_true")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "primal_dual_news20.json"))
    args = ap.parse_args(argv)

    X, y = datasets.load(args.data)[:2]
    n = X.shape[0]
    lam = args.lam_scale / n
    print(f"{args.data}: n={n} d={X.shape[1]} nnz={X.nnz}; logistic, lam={args.lam_scale:g}/n",
          flush=True)
    out = dict(data=args.data, n=n, d=X.shape[1], nnz=int(X.nnz), lam=lam,
               lam_scale=args.lam_scale, target=args.target)
    ours = [s for s in args.solvers if s in SOLVERS]
    if not args.skip_cost:
        print(f"epoch cost (median of {args.repeat} paired runs):", flush=True)
        out["epoch_cost"] = epoch_ratios(ours, X, y, lam, args.epochs, args.repeat)
    if not args.skip_target:
        ref = peers.reference_optimum(X, y, lam, "logistic", name=args.data)
        out["p_star"], out["p_star_rel_bound"] = ref["p_star"], ref["rel_bound"]
        print(f"P* = {ref['p_star']:.15g} (certified to {ref['rel_bound']:.1e} relative)",
              flush=True)
        caps = dict(CAPS, **{k: int(v) for k, v in (a.split("=") for a in args.max_epochs)})
        out["caps"] = caps
        results = {}
        for key in args.solvers:
            if key == "saga":
                run = peers.run_sklearn_saga
                grid = [10.0 ** -k for k in range(2, 11)]
                kw = dict(max_iter=caps[key])
            else:
                run, grid, kw = our_runner(key, caps[key]), OUR_GRID, {}
            r = peers.time_to_target(run, X, y, lam, "logistic", ref["p_star"], args.target,
                                     tol_grid=grid, repeat=3, verbose=True, **kw)
            results[key] = r
            msg = (f"{r['time']:.2f} s at tol {r['tol']:.1e} ({r['n_iter']} epochs)"
                   if r["reached"] else f"not reached (best {r['subopt']:.1e})")
            print(f"  {key:<9} time to {args.target:g}: {msg}", flush=True)
        out["time_to_target"] = results
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    if os.path.exists(args.json):       # a partial run (--skip-*, some solvers) updates the rest
        with open(args.json) as f:
            old = json.load(f)
        if old.get("data") == out["data"] and old.get("lam") == out["lam"]:
            for key in ("epoch_cost", "time_to_target"):
                if key in out and key in old:
                    out[key] = dict(old[key], **out[key])
            out = dict(old, **out)
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1, default=float)
    print("wrote", os.path.relpath(args.json))


if __name__ == "__main__":
    main()
