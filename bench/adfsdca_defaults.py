"""The dual-free SDCA solvers with their defaults on unscaled real data.

Every run passes only ``loss`` (lam = 1/n, tol, max_epochs and the step rules are the
defaults) and records stop_reason, epochs, seconds and:

* classification (a9a with its test file, w8a split 70/30 by
  ``np.random.default_rng(0).permutation``, news20 bydate and reuters ModApte splits from
  ``bench/datasets.py``): test accuracy, next to liblinear's (``bench/peers.py``: -s 7 / -s 1
  at C = 1/(lam n), tol 1e-6 of its own criterion) at the same lam;
* regression (the bundled raw kin8nm and power-plant, squared loss): the objective's relative
  distance to the ridge optimum of the normal equations ``(X^T X/n + lam I) w = X^T y/n``.

Usage::

    DUALSOLVE_DATA=... python bench/adfsdca_defaults.py [--sets a9a w8a ...] [--solvers ...]
        [--json bench/results/adfsdca_defaults.json]
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

import dualsolve as ds  # noqa: E402

SETS = ("a9a", "w8a", "news20", "reuters", "kin8nm", "power-plant")
CLASSIFICATION_LOSSES = ("logistic", "squared_hinge")
SOLVERS = {"dfsdca": (ds.train_dfsdca, {}), "adfsdca": (ds.train_adfsdca, {})}


def load(name):
    """(X_train, y_train, X_test, y_test) or, for regression, (X, y, None, None)."""
    if name == "a9a":
        X, y = ds.datasets.load("a9a")
        Xt, yt = ds.datasets.load("a9a.t")
        return X, y, Xt, yt
    if name in ("kin8nm", "power-plant"):
        X, y = ds.datasets.load(name)
        import scipy.sparse as sp
        return sp.csr_matrix(X), y, None, None
    import datasets
    if name == "w8a":
        X, y = datasets.load("w8a")
        perm = np.random.default_rng(0).permutation(X.shape[0])
        cut = int(0.7 * X.shape[0])
        tr, te = perm[:cut], perm[cut:]
        return X[tr], y[tr], X[te], y[te]
    X, y, is_train = datasets.load(name, return_split=True)
    return X[is_train], y[is_train], X[~is_train], y[~is_train]


def stop_reason(m):
    return getattr(m, "stop_reason", "converged" if m.converged else "max_epochs")


def run(solver, X, y, loss):
    f, kw = SOLVERS[solver]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        m = f(X, y, loss=loss, **kw)
        secs = time.perf_counter() - t0
    h = m.history
    return m, dict(solver=solver, loss=loss, stop_reason=stop_reason(m), epochs=int(m.n_epochs),
                   seconds=secs, gap_rel=float(h["gap"][-1] / h["primal"][0]),
                   primal=float(h["primal"][-1]),
                   max_primal_rise=float(np.nanmax(h["primal"]) / h["primal"][0]),
                   warnings=[str(w.message) for w in caught])


def ridge(X, y):
    n = X.shape[0]
    lam = 1.0 / n
    A = (X.T @ X).toarray() / n + lam * np.eye(X.shape[1])
    w = np.linalg.solve(A, X.T @ y / n)
    r = X @ w - y
    return 0.5 * np.mean(r * r) + 0.5 * lam * w @ w


def liblinear_accuracy(X, y, Xt, yt, loss):
    import peers
    lam = 1.0 / X.shape[0]
    res = peers.run_liblinear(X, y, lam, loss, 1e-6)
    return float(np.mean(np.where(Xt @ res["w"] > 0, 1.0, -1.0) == yt)), res["time"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    ap.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=list(SOLVERS))
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    out = []
    for name in args.sets:
        X, y, Xt, yt = load(name)
        regression = Xt is None
        for loss in (("squared",) if regression else CLASSIFICATION_LOSSES):
            if regression:
                p_star = ridge(X, y)
            else:
                ll_acc, ll_time = liblinear_accuracy(X, y, Xt, yt, loss)
            for solver in args.solvers:
                m, row = run(solver, X, y, loss)
                row["set"] = name
                if regression:
                    row["objective_rel"] = float((row["primal"] - p_star) / abs(p_star))
                    what = f"objective - P* = {row['objective_rel']:.2e} P*"
                else:
                    acc = float(np.mean(m.predict(Xt) == yt))
                    row.update(accuracy=acc, liblinear_accuracy=ll_acc,
                               liblinear_seconds=ll_time)
                    what = f"accuracy {100 * acc:.2f}% (liblinear {100 * ll_acc:.2f}%)"
                out.append(row)
                print(f"{name:12s} {loss:14s} {solver:8s} {row['stop_reason']:10s} "
                      f"{row['epochs']:4d} ep {row['seconds']:8.2f} s  gap/P0 "
                      f"{row['gap_rel']:.1e}  max P/P0 {row['max_primal_rise']:.2f}  {what}",
                      flush=True)
                for w in row["warnings"]:
                    print("    warning:", w[:300])
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
