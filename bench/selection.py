"""What warm starts save, and the best C against liblinear's ``-C``.

1. ``regularization_path`` over 10 values of C on news20 binary (``bench/datasets.py``,
   the train part) against the sum of 10 cold solves at the same C and tol: seconds and
   epochs, alternating path / cold rounds (median and range). Two grids: ``2^-3 .. 2^6``
   around liblinear's default C, and liblinear ``-C``'s last ten values ``2^1 .. 2^10``
   (where a C search spends its time).
2. The best C by 5-fold cross-validation on a9a: ``dualsolve train -C`` (our stratified,
   seeded folds along liblinear's grid) beside liblinear's own ``-C`` (its random folds),
   for ``-s 0`` (logistic) and ``-s 2`` (squared hinge): the C each picks and its CV
   accuracy.

Usage::

    DUALSOLVE_DATA=... python bench/selection.py [--rounds 3] [--json out.json]
        [--grids default liblinear] [--no-best-c | --no-path]
"""
import argparse
import contextlib
import io
import json
import os
import sys
import time

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import datasets  # noqa: E402

import dualsolve as ds  # noqa: E402
from dualsolve.cli import main as cli_main  # noqa: E402

GRIDS = {"default": 2.0 ** np.arange(-3, 7),     # 10 values, 0.125 .. 64
         "liblinear": 2.0 ** np.arange(1, 11)}  # liblinear -C's last ten, 2 .. 1024


def path_vs_cold(rounds, loss, tol, grid="default"):
    CS = GRIDS[grid]
    X, y = datasets.load("news20", split="train")
    path_s, cold_s = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        path = ds.regularization_path(ds.train_sdca, X, y, Cs=CS, loss=loss, tol=tol)
        path_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        cold = [ds.train_sdca(X, y, C=C, loss=loss, tol=tol) for C in CS]
        cold_s.append(time.perf_counter() - t0)
    ratios = [a / b for a, b in zip(path_s, cold_s)]
    return dict(data="news20 (train)", loss=loss, tol=tol, grid=grid, Cs=CS.tolist(),
                path_seconds=path_s, cold_seconds=cold_s, ratio_median=float(np.median(ratios)),
                ratio_range=[min(ratios), max(ratios)],
                path_epochs=[m.n_epochs for m in path], cold_epochs=[m.n_epochs for m in cold],
                converged=[m.converged for m in path + cold])


def best_C(s):
    from liblinear import liblinearutil as llu
    X, y = ds.datasets.load("a9a")
    buf = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(buf):
        cli_main(["train", "-C", "-s", str(s), _a9a_file(X, y)])
    ours_s = time.perf_counter() - t0
    last = buf.getvalue().strip().splitlines()[-1]
    t0 = time.perf_counter()
    best = llu.train(y, X, f"-C -s {s} -q")      # (best C, best p, best accuracy)
    ll_s = time.perf_counter() - t0
    return dict(s=s, ours=last, ours_seconds=ours_s, liblinear_best_C=best[0],
                liblinear_cv_accuracy=best[2], liblinear_seconds=ll_s)


def _a9a_file(X, y):
    f = os.path.join(datasets.cache_dir(), "a9a.libsvm")
    if not os.path.exists(f):
        ds.dump_svmlight(X, y, f)
    return f


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--grids", nargs="+", choices=sorted(GRIDS), default=["default"])
    ap.add_argument("--no-best-c", action="store_true", help="skip part 2 (a9a)")
    ap.add_argument("--no-path", action="store_true", help="skip part 1 (news20)")
    args = ap.parse_args(argv)
    out = []
    runs = [] if args.no_path else [(grid, loss) for grid in args.grids
                                    for loss in ("logistic", "squared_hinge")]
    for grid, loss in runs:
        r = path_vs_cold(args.rounds, loss, 1e-6, grid)
        out.append(r)
        print(f"news20 {loss}, {grid} grid: path {np.median(r['path_seconds']):.2f} s, 10 cold "
              f"{np.median(r['cold_seconds']):.2f} s, ratio {r['ratio_median']:.2f} "
              f"({r['ratio_range'][0]:.2f}-{r['ratio_range'][1]:.2f}); epochs path "
              f"{sum(r['path_epochs'])} vs cold {sum(r['cold_epochs'])}; all converged: "
              f"{all(r['converged'])}")
    for s in () if args.no_best_c else (0, 2):
        r = best_C(s)
        out.append(r)
        print(f"a9a -s {s}: ours '{r['ours']}' ({r['ours_seconds']:.1f} s) | liblinear best C "
              f"{r['liblinear_best_C']:g}, CV accuracy {100 * r['liblinear_cv_accuracy']:.4f}% "
              f"({r['liblinear_seconds']:.1f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
