"""Per-epoch cost of ``train_mixup_sdca(kernel="linear")`` against ``train_sdca`` on news20.

Target (docs/mixup.md, "Linear-kernel cost on news20"): the linear-kernel path of the mixup
solver runs on the SDCA engine of ``train_sdca``, so its pass over the data should cost no
more than 1.2x train_sdca's.

Measured here, logistic loss, lam = 1/n, seed 0, single thread:

* the pass time: a run of ``--epochs`` epochs with ``tol=0`` and ``check_every=1000`` (so no
  exact-gap check runs between epochs; both solvers follow the same check schedule), and the
  median of the epoch-to-epoch differences of the ``history`` time column over epochs
  2 .. epochs-1 (the first epoch pays first-touch costs, the last one a final gap check);
  ``train_sdca`` runs with ``shrinking=False`` (the mixup solver does not shrink);
* configurations: train_sdca (exact steps); train_mixup_sdca n_mix=0 with method exact,
  naive (eq. 13 step, closed-form conjugate) and approx (eq. 21); train_mixup_sdca exact with
  n_mix=5000 mixup rows, materialised (CSR rows ``(1-r) x_a + r x_b``) or implicit (the
  triplets (a, b, r), two sparse rows per step);
* ``--rounds`` rounds, each running every configuration once, in an order reversed every
  other round; ratios to train_sdca are paired within a round and their median is reported;
  mixup runs are also compared per row (pass time / number of rows) and per stored nonzero.

Usage::

    DUALSOLVE_DATA=... PYTHONPATH=. python bench/mixup_linear_cost.py [--rounds 9] [--epochs 30]
        [--json bench/results/mixup_linear_cost.json]
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

import dualsolve  # noqa: E402

N_MIX = 5000


def configs(X, y, lam, epochs):
    common = dict(loss="logistic", lam=lam, tol=0.0, max_epochs=epochs, check_every=1000, seed=0)
    mix = dict(common, kernel="linear", method="exact", n_mix=N_MIX, mixup_alpha=1.0)
    return {
        "train_sdca": lambda: dualsolve.train_sdca(X, y, shrinking=False, **common),
        "mixup_exact": lambda: dualsolve.train_mixup_sdca(X, y, kernel="linear", method="exact",
                                                          **common),
        "mixup_naive": lambda: dualsolve.train_mixup_sdca(X, y, kernel="linear", method="naive",
                                                          **common),
        "mixup_approx": lambda: dualsolve.train_mixup_sdca(X, y, kernel="linear", method="approx",
                                                           **common),
        "mix5000_materialised": lambda: dualsolve.train_mixup_sdca(X, y, implicit=False, **mix),
        "mix5000_implicit": lambda: dualsolve.train_mixup_sdca(X, y, implicit=True, **mix),
    }


def pass_time(model):
    t = model.history["time"]
    d = np.diff(t)[1:-1]          # epochs 2 .. E-1
    return float(np.median(d))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "mixup_linear_cost.json"))
    args = ap.parse_args()
    t0 = time.perf_counter()
    X, y = datasets.load("news20")
    n, d = X.shape
    lam = 1.0 / n
    X_aug, _, _ = dualsolve.mixup_augment(X, y, N_MIX, 1.0, seed=0)
    rows = {k: n for k in ("train_sdca", "mixup_exact", "mixup_naive", "mixup_approx")}
    rows.update(mix5000_materialised=n + N_MIX, mix5000_implicit=n + N_MIX)
    nnz = {k: X.nnz for k in rows}
    nnz.update(mix5000_materialised=X_aug.nnz, mix5000_implicit=X_aug.nnz)
    print(f"news20: {n} x {d}, nnz {X.nnz} ({X.nnz / n:.1f}/row); +{N_MIX} mixup rows: "
          f"nnz {X_aug.nnz} ({(X_aug.nnz - X.nnz) / N_MIX:.1f}/mixed row)", flush=True)
    del X_aug
    cfg = configs(X, y, lam, args.epochs)
    names = list(cfg)
    times = {k: [] for k in names}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dualsolve.ConvergenceWarning)
        for r in range(args.rounds):
            for k in (names if r % 2 == 0 else names[::-1]):
                m = cfg[k]()
                times[k].append(pass_time(m))
                del m
            print(f"round {r}: " + ", ".join(f"{k} {times[k][-1] * 1e3:.1f} ms" for k in names),
                  flush=True)
    base = np.array(times["train_sdca"])
    out = {}
    print(f"\n{'configuration':22s} {'pass (ms)':>10s} {'ns/row':>8s} {'ns/nnz':>8s} "
          f"{'paired ratio to train_sdca':>28s} {'per-row ratio':>14s} {'per-nnz ratio':>14s}")
    for k in names:
        t = np.array(times[k])
        ratio = t / base
        per_row = (t / rows[k]) / (base / n)
        per_nnz = (t / nnz[k]) / (base / X.nnz)
        out[k] = dict(pass_seconds=list(map(float, t)), median_pass=float(np.median(t)),
                      rows=rows[k], nnz=int(nnz[k]),
                      paired_ratio_median=float(np.median(ratio)),
                      paired_ratio_all=list(map(float, ratio)),
                      per_row_ratio_median=float(np.median(per_row)),
                      per_nnz_ratio_median=float(np.median(per_nnz)))
        print(f"{k:22s} {np.median(t) * 1e3:10.1f} {np.median(t) / rows[k] * 1e9:8.0f} "
              f"{np.median(t) / nnz[k] * 1e9:8.2f} {np.median(ratio):28.3f} "
              f"{np.median(per_row):14.3f} {np.median(per_nnz):14.3f}")
    imp = np.array(times["mix5000_implicit"]) / np.array(times["mix5000_materialised"])
    out["implicit_over_materialised"] = dict(paired_ratio_median=float(np.median(imp)),
                                             all=list(map(float, imp)))
    print(f"\nimplicit / materialised (paired, median): {np.median(imp):.3f}")
    ok = out["mixup_exact"]["paired_ratio_median"] <= 1.2
    print(f"acceptance (mixup exact, n_mix=0, <= 1.2x train_sdca): "
          f"{out['mixup_exact']['paired_ratio_median']:.3f} -> {'PASS' if ok else 'FAIL'}")
    wall = time.perf_counter() - t0
    print(f"whole script: {wall:.0f} s")
    with open(args.json, "w") as f:
        json.dump(dict(protocol=dict(data="news20", n=n, d=d, loss="logistic", lam="1/n",
                                     epochs=args.epochs, rounds=args.rounds, check_every=1000,
                                     tol=0.0, train_sdca_shrinking=False, n_mix=N_MIX,
                                     pass_time="median of epoch-to-epoch history times, "
                                               "epochs 2..E-1"),
                       results=out, acceptance_pass=bool(ok), wall_seconds=wall), f, indent=1)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
