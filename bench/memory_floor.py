"""What the machine charges for a stochastic pass, beside what our solvers cost, on news20.

The epoch-cost goals of the SPDC and AUC issues are ratios to one ``X @ w``. A stochastic
solver with per-feature state cannot do better than the access pattern it needs, so this
bench times, in one process and in alternating rounds:

* ``X @ w`` (scipy, rows in storage order): the unit;
* floors from ``touch_rows`` of ``bench/memfloor.pyx`` (compiled on first use) (no solver arithmetic, same
  prefetching as the solvers, rows drawn uniformly with replacement like the solvers):
  - ``gather8_random``: the dot products of ``X @ w`` with the rows in random order (what
    random sampling alone costs);
  - ``rmw8_random``: the same, then each row's 8-byte records written back (the pattern of
    SDCA's w and of PPD-SG's scaled iterate z);
  - ``rmw16_random``: 16-byte records read and written back (the pattern of SPDC's scaled
    state (v, u): x and u = A^T y / n are both needed per feature);
* the bare epochs of ``train_spdc`` and ``train_adf_spdc`` (logistic, lam = 1e-4/n, no
  evaluation), ``train_sdca`` (logistic, no duality-gap check, no shrinking) and PPD-SG
  (the settings of ``auc_imbalanced.py --cost``: an 11-epoch stage minus a 1-epoch stage,
  over 10).

Each quantity is reported as the median (min-max) over rounds of its ratio to the mean of
the two ``X @ w`` medians taken at the start and the end of the round, and each solver also
against the floor of its own access pattern in the same round.

Usage::

    DUALSOLVE_DATA=... python bench/memory_floor.py [--rounds 5] [--json bench/results/memory_floor.json]
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
from auc_imbalanced import ppd_sg_epoch_seconds, ppd_sg_run_seconds  # noqa: E402
from primal_dual_news20 import epoch_times  # noqa: E402

from compiled import memfloor  # noqa: E402

touch_rows = memfloor().touch_rows

# solver -> the floor of its access pattern
PATTERN = {"spdc": "rmw16_random", "adf_spdc": "rmw16_random", "ppd_sg": "rmw8_random",
           "sdca": "rmw8_random"}


def floor_seconds(X, order, w, width, write):
    """One pass: a 3-pass call minus a 1-pass call, over 2 (leaves out the allocation and
    first touch of the records)."""
    ts = []
    for passes in (1, 3):
        t = time.perf_counter()
        touch_rows(X, order, width, write=write, prefetch=True, w=w, passes=passes)
        ts.append(time.perf_counter() - t)
    return (ts[1] - ts[0]) / 2


def one_round(X, y, order, w, lam, epochs):
    mv0 = peers.matvec_time(X, repeat=10)
    sec = {
        "gather8_random": floor_seconds(X, order, w, 1, False),
        "rmw8_random": floor_seconds(X, order, w, 1, True),
        "rmw16_random": floor_seconds(X, order, w, 2, True),
    }
    for key in ("spdc", "adf_spdc", "sdca"):
        sec[key] = epoch_times(key, X, y, lam, epochs, evaluate=False)
    sec["ppd_sg"] = ppd_sg_epoch_seconds(X, y)[0]
    mv = 0.5 * (mv0 + peers.matvec_time(X, repeat=10))
    return mv, sec


def summarize(rounds):
    def stats(v):
        return dict(median=float(np.median(v)), min=float(np.min(v)), max=float(np.max(v)))
    keys = list(rounds[0][1])
    out = {"matvec_seconds": stats([mv for mv, _ in rounds])}
    for k in keys:
        row = {"seconds": stats([s[k] for _, s in rounds]),
               "per_matvec": stats([s[k] / mv for mv, s in rounds])}
        if k in PATTERN:
            row["per_floor"] = stats([s[k] / s[PATTERN[k]] for _, s in rounds])
            row["floor"] = PATTERN[k]
        out[k] = row
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=5, help="epochs of the SPDC/SDCA runs")
    ap.add_argument("--lam-scale", type=float, default=1e-4, help="lam = lam_scale / n")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "memory_floor.json"))
    args = ap.parse_args(argv)

    X, y = datasets.load("news20")
    n, d = X.shape
    lam = args.lam_scale / n
    order = np.random.default_rng(0).integers(0, n, n)
    w = np.random.default_rng(1).standard_normal(d)
    print(f"news20: {n} x {d}, nnz {X.nnz}; lam = {args.lam_scale:g}/n", flush=True)
    warnings.simplefilter("ignore")
    ppd_sg_run_seconds(X, y, 1)             # warm-up (allocations, page faults)
    rounds = []
    for r in range(args.rounds):
        mv, sec = one_round(X, y, order, w, lam, args.epochs)
        rounds.append((mv, sec))
        print(f"round {r}: X@w {mv * 1e3:.1f} ms | " + "  ".join(
            f"{k} {v / mv:.2f}" for k, v in sec.items()), flush=True)
    out = summarize(rounds)
    print("\nmedian (min-max) over rounds, in X @ w; solvers also against their floor")
    for k, row in out.items():
        if k == "matvec_seconds":
            continue
        p = row["per_matvec"]
        line = f"  {k:<15} {p['median']:5.2f} ({p['min']:.2f}-{p['max']:.2f})"
        if "per_floor" in row:
            f = row["per_floor"]
            line += f"   {f['median']:.2f} ({f['min']:.2f}-{f['max']:.2f}) x {row['floor']}"
        print(line)
    m = out["matvec_seconds"]
    print(f"  X @ w: {m['median'] * 1e3:.1f} ms ({m['min'] * 1e3:.1f}-{m['max'] * 1e3:.1f})")
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as fh:
        json.dump(dict(data=f"news20 {n} x {d}, nnz {X.nnz}", lam_scale=args.lam_scale,
                       rounds=[dict(matvec=mv, seconds=s) for mv, s in rounds],
                       summary=out), fh, indent=1)
    print("wrote", os.path.relpath(args.json))


if __name__ == "__main__":
    main()
