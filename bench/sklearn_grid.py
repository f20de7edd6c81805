"""GridSearchCV over C with the scikit-learn estimator, cold against ``warm_start=True``.

news20 binary (``bench/datasets.py``, the train part), a ``Pipeline`` of ``MaxAbsScaler``
and ``dualsolve.sklearn.LinearClassifier`` (tol 1e-6), ``GridSearchCV`` over 10 values of
C (2^-3 .. 2^6, the grid of ``bench/selection.py``), 5 folds, ``refit=False``, one job
(``--no-scaler``: the classifier alone; ``--memory``: the Pipeline caches each fold's
fitted scaler, so it is fitted once per fold instead of once per candidate):
seconds of the whole search, alternating cold / warm rounds (median and range), the best C
and mean CV accuracies of both (the warm starts must not change them).

Usage::

    DUALSOLVE_DATA=... python bench/sklearn_grid.py [--rounds 3] [--json out.json]
        [--no-scaler | --memory] [--shuffle]
"""
import argparse
import json
import os
import sys
import tempfile
import time

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import datasets  # noqa: E402

CS = (2.0 ** np.arange(-3, 7)).tolist()


def search(X, y, loss, warm, scaler=True, memory=False, solver="sdca", shuffle=False):
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MaxAbsScaler
    import dualsolve.sklearn as dsk
    dsk._WARM_MODELS.clear()
    steps = [MaxAbsScaler()] if scaler else []
    with tempfile.TemporaryDirectory() as cache:
        # memory: the Pipeline caches each fold's fitted scaler (scikit-learn's way to fit
        # a transformer once per fold, not once per candidate); a fresh cache every search
        pipe = make_pipeline(*steps, dsk.LinearClassifier(loss=loss, warm_start=warm,
                                                          solver=solver),
                             memory=cache if memory else None)
        # cv=5 is StratifiedKFold without shuffling: on the train split, ordered by
        # newsgroup, each fold leaves out whole groups (--shuffle: folds of shuffled rows)
        cv = StratifiedKFold(5, shuffle=True, random_state=0) if shuffle else 5
        grid = GridSearchCV(pipe, {"linearclassifier__C": CS}, cv=cv, refit=False)
        t0 = time.perf_counter()
        grid.fit(X, y)
        return time.perf_counter() - t0, grid


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-scaler", action="store_true",
                    help="LinearClassifier alone (the rows are already unit-norm TF-IDF)")
    ap.add_argument("--memory", action="store_true",
                    help="Pipeline(memory=...): the scaler fitted once per fold")
    ap.add_argument("--losses", nargs="+", default=["logistic", "squared_hinge"])
    ap.add_argument("--solver", default="sdca", help="LinearClassifier's solver")
    ap.add_argument("--shuffle", action="store_true",
                    help="StratifiedKFold(5, shuffle=True, random_state=0) instead of cv=5")
    args = ap.parse_args(argv)
    X, y = datasets.load("news20", split="train")
    out = []
    for loss in args.losses:
        seconds = {False: [], True: []}
        grids = {}
        for _ in range(args.rounds):
            for warm in (False, True):
                t, grids[warm] = search(X, y, loss, warm, not args.no_scaler, args.memory,
                                        args.solver, args.shuffle)
                seconds[warm].append(t)
        ratios = [w / c for c, w in zip(seconds[False], seconds[True])]
        best = {w: grids[w].best_params_["linearclassifier__C"] for w in grids}
        acc = {w: grids[w].cv_results_["mean_test_score"].tolist() for w in grids}
        r = dict(data="news20 (train)", loss=loss, Cs=CS, scaler=not args.no_scaler,
                 memory=args.memory, solver=args.solver, shuffle=args.shuffle,
                 cold_seconds=seconds[False],
                 warm_seconds=seconds[True], ratio_median=float(np.median(ratios)),
                 ratio_range=[min(ratios), max(ratios)], best_C_cold=best[False],
                 best_C_warm=best[True], accuracy_cold=acc[False], accuracy_warm=acc[True])
        out.append(r)
        tag = ", no scaler" if args.no_scaler else ", cached scaler" if args.memory else ""
        tag += ", shuffled folds" if args.shuffle else ""
        print(f"news20 {loss}{tag}: cold grid {np.median(seconds[False]):.1f} s, warm grid "
              f"{np.median(seconds[True]):.1f} s, ratio {r['ratio_median']:.2f} "
              f"({r['ratio_range'][0]:.2f}-{r['ratio_range'][1]:.2f}); best C {best[False]:g} "
              f"/ {best[True]:g}; max accuracy difference "
              f"{max(abs(a - b) for a, b in zip(acc[False], acc[True])):.2e}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
