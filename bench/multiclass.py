"""One-vs-rest train_sdca against liblinear on 20 Newsgroups, 20 classes, side by side.

Data: ``news20.multi`` of ``bench/datasets.py`` (bydate split, TF-IDF uni+bigrams fitted on
the training documents). For each loss (squared hinge: liblinear ``-s 1``; logistic:
``-s 7``) at the same C: training seconds (liblinear's conversion of X into its own
format is done before its timer starts) and test accuracy, in alternating rounds; the
table gives medians and ranges. Both single-threaded.

Our tolerance is the relative duality gap (``tol`` of ``train_sdca``, a certificate per
class); liblinear's ``-e`` is its own dual stopping rule (default 0.1): the two are not
the same quantity, so the script runs ours at its default tol and liblinear at its
default eps, which is how each is used.

Usage::

    DUALSOLVE_DATA=... python bench/multiclass.py [--C 1] [--rounds 3] [--json out.json]
"""
import argparse
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

LOSSES = {"squared_hinge": 1, "logistic": 7}


def run_ours(X, y, Xt, yt, loss, C):
    t0 = time.perf_counter()
    m = ds.train_sdca(X, y, loss=loss, C=C)
    secs = time.perf_counter() - t0
    return secs, float(np.mean(m.predict(Xt) == yt)), m.stop_reason, m.n_epochs


def run_liblinear(X, y, Xt, yt, loss, C):
    from liblinear import liblinear as ll
    from liblinear import liblinearutil as llu
    prob = ll.problem(y, X)                 # liblinear's copy, outside the timer
    param = ll.parameter(f"-s {LOSSES[loss]} -c {C} -q")
    t0 = time.perf_counter()
    m = llu.train(prob, param)
    secs = time.perf_counter() - t0
    pred = np.array(llu.predict(yt, Xt, m, "-q")[0])
    return secs, float(np.mean(pred == yt)), "", 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--losses", nargs="*", default=list(LOSSES))
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    X, y, tr = datasets.load("news20.multi", return_split=True)
    Xtr, ytr, Xte, yte = X[tr], y[tr], X[~tr], y[~tr]
    print(f"news20.multi: train {Xtr.shape}, test {Xte.shape[0]}, "
          f"{len(np.unique(y))} classes, C = {args.C}")
    out = []
    for loss in args.losses:
        runs = {"dualsolve": [], "liblinear": []}
        for _ in range(args.rounds):
            for name, fn in (("dualsolve", run_ours), ("liblinear", run_liblinear)):
                runs[name].append(fn(Xtr, ytr, Xte, yte, loss, args.C))
        ratios = [a[0] / b[0] for a, b in zip(runs["dualsolve"], runs["liblinear"])]
        row = dict(loss=loss, C=args.C, liblinear_s=LOSSES[loss], ratio_median=float(np.median(ratios)),
                   ratio_range=[float(min(ratios)), float(max(ratios))])
        for name, rs in runs.items():
            secs = [r[0] for r in rs]
            row[name] = dict(seconds_median=float(np.median(secs)),
                             seconds_range=[float(min(secs)), float(max(secs))],
                             accuracy=rs[0][1], stop_reason=rs[0][2], epochs=rs[0][3])
        out.append(row)
        o, lib = row["dualsolve"], row["liblinear"]
        print(f"{loss:14s} ours {o['seconds_median']:.2f} s ({o['seconds_range'][0]:.2f}-"
              f"{o['seconds_range'][1]:.2f}) acc {100 * o['accuracy']:.2f}% "
              f"[{o['stop_reason']}, {o['epochs']} epochs over 20 classes] | liblinear -s "
              f"{LOSSES[loss]} {lib['seconds_median']:.2f} s ({lib['seconds_range'][0]:.2f}-"
              f"{lib['seconds_range'][1]:.2f}) acc {100 * lib['accuracy']:.2f}% | time ratio "
              f"{row['ratio_median']:.2f} ({row['ratio_range'][0]:.2f}-{row['ratio_range'][1]:.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
