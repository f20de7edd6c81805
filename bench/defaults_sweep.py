"""Every solver with its defaults (only the loss chosen) on real data, as a user runs it.

For each registered solver (``dualsolve._driver.solvers()``):

* classifiers (logistic loss, else the solver's first classification loss) on a9a (test
  a9a.t), w8a (seeded 70/30 split), news20 binary and reuters (``bench/datasets.py``, their
  own train/test splits): test accuracy beside liblinear's at the same lam = 1/n (its dual
  solver at eps 1e-6, the same loss); goal: within 1 point;
* the AUC solvers on the same sets: test AUC beside the square-surrogate oracle
  (``auc_surrogate_optimum``) at the same lam; goal: within 0.005;
* regression solvers (squared loss) on the raw, unstandardised kin8nm and power-plant (70/30
  split): the training objective beside the family's reference optimum at the same lam
  (ridge: the normal equations; spectral risks: ``spectral_reference``, certified); goal:
  within 1e-3 relative;
* kernel SGD (an O(n^2)-per-epoch kernel method) on 3,000-row subsamples of the
  classification sets, beside ``train_mixup_sdca`` with the same (rbf) kernel, certified.

Each run must end ``converged``, or with a ConvergenceWarning that says why; the table
shows the stop reason and the warning. Results go to ``bench/results/defaults_sweep.json``.

Usage::

    DUALSOLVE_DATA=... python bench/defaults_sweep.py [--solvers sdca spdc ...] [--data a9a ...]
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

import dualsolve as ds  # noqa: E402
from dualsolve._driver import solvers  # noqa: E402

CLASSIFICATION = ("a9a", "w8a", "news20", "reuters")
REGRESSION = ("kin8nm", "power-plant")
SUBSAMPLE = 3000


def split_70_30(n, seed=0):
    perm = np.random.default_rng(seed).permutation(n)
    k = int(0.7 * n)
    return np.sort(perm[:k]), np.sort(perm[k:])


def classification_data(name):
    if name == "a9a":
        X, y = ds.datasets.load("a9a")
        Xt, yt = ds.datasets.load("a9a.t")
        return X, y, Xt, yt
    if name == "w8a":
        X, y = ds.load_svmlight(os.path.join(datasets.data_dir(), "libsvm", "w8a.xz"))
        tr, te = split_70_30(X.shape[0])
        return X[tr], y[tr], X[te], y[te]
    X, y, is_train = datasets.load(name, return_split=True)
    return X[is_train], y[is_train], X[~is_train], y[~is_train]


def regression_data(name):
    X, y = ds.datasets.load(name)
    tr, te = split_70_30(X.shape[0])
    return X[tr], y[tr]


def objective(X, y, w, lam):
    r = X @ w - y
    return 0.5 * float(r @ r) / X.shape[0] + 0.5 * lam * float(w @ w)


def ridge_optimum(X, y, lam):
    A = X.toarray()
    n = A.shape[0]
    w = np.linalg.solve(A.T @ A / n + lam * np.eye(A.shape[1]), A.T @ y / n)
    return objective(X, y, w, lam)


def run(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        m = fn(*args, **kw)
        seconds = time.perf_counter() - t0
    said = [str(w.message) for w in caught if issubclass(w.category, ds.ConvergenceWarning)]
    return m, seconds, said


def row(solver, data, m, seconds, said, metric, value, reference, goal, ok):
    return dict(solver=solver, data=data, stop_reason=m.stop_reason, epochs=m.n_epochs,
                seconds=round(seconds, 3), metric=metric, value=value, reference=reference,
                goal=goal, ok=bool(ok), warning=said[0] if said else "")


def sweep_classifier(s, name, cache):
    loss = "logistic" if "logistic" in s.losses else next(
        l for l in s.losses if s.task(l, {}) == "binary")
    X, y, Xt, yt = cache.setdefault(name, classification_data(name))
    lam = 1.0 / X.shape[0]
    key = (name, loss)
    if key not in cache:
        ll = peers.run_liblinear(X, y, lam, loss, 1e-6)
        cache[key] = float(np.mean(np.where(Xt @ ll["w"] > 0, 1.0, -1.0) == yt))
    m, seconds, said = run(getattr(ds, s.function_name), X, y, loss=loss)
    acc = float(np.mean(m.predict(Xt) == yt))
    ref = cache[key]
    return row(s.name, f"{name} ({loss})", m, seconds, said, "test accuracy", acc, ref,
               "within 1 point of liblinear", abs(acc - ref) <= 0.01)


def sweep_auc(s, name, cache):
    X, y, Xt, yt = cache.setdefault(name, classification_data(name))
    m, seconds, said = run(getattr(ds, s.function_name), X, y)
    key = (name, "oracle", m.params["lam"])
    if key not in cache:
        oracle = ds.auc_surrogate_optimum(X, y, lam=m.params["lam"])
        cache[key] = ds.auc_score(yt, Xt @ oracle.coef)
    auc = ds.auc_score(yt, m.decision_function(Xt))
    ref = cache[key]
    return row(s.name, name, m, seconds, said, "test AUC", auc, ref,
               "within 0.005 of the oracle", abs(auc - ref) <= 0.005)


def sweep_regression(s, name, cache):
    X, y = cache.setdefault(name, regression_data(name))
    m, seconds, said = run(getattr(ds, s.function_name), X, y, loss="squared")
    lam = m.params["lam"]
    if s.family == "spectral":
        ref = ds.spectral_reference(X, y, spectrum=m.params.get("spectrum", "superquantile"),
                                    spectrum_param=m.params.get("spectrum_param"), lam=lam)
        p_star, value = ref.primal, float(m.history["primal"][-1])
    else:
        key = (name, "ridge", lam)
        if key not in cache:
            cache[key] = ridge_optimum(X, y, lam)
        p_star, value = cache[key], objective(X, y, m.coef, lam)
    rel = (value - p_star) / abs(p_star)
    return row(s.name, f"{name} (raw)", m, seconds, said, "objective rel. to optimum", rel,
               p_star, "within 1e-3", rel <= 1e-3)


def sweep_kernel_sgd(s, name, cache):
    X, y, Xt, yt = cache.setdefault(name, classification_data(name))
    rows = np.random.default_rng(0).permutation(X.shape[0])[:SUBSAMPLE]
    Xs, ys = X[rows], y[rows]
    key = (name, "mixup rbf")
    if key not in cache:
        ref = ds.train_mixup_sdca(Xs, ys, kernel="rbf", tol=1e-8, max_epochs=10000)
        cache[key] = float(np.mean(ref.predict(Xt[:5000]) == yt[:5000]))
    m, seconds, said = run(ds.train_kernel_sgd, Xs, ys)
    acc = float(np.mean(m.predict(Xt[:5000]) == yt[:5000]))
    return row(s.name, f"{name} ({SUBSAMPLE} rows)", m, seconds, said, "test accuracy", acc,
               cache[key], "within 1 point of train_mixup_sdca (rbf)",
               abs(acc - cache[key]) <= 0.01)


def plan(s, data):
    """(runner, data set) pairs for one solver."""
    if s.name == "kernel_sgd":
        return [(sweep_kernel_sgd, d) for d in data if d in CLASSIFICATION]
    if s.family == "auc":
        return [(sweep_auc, d) for d in data if d in CLASSIFICATION]
    out = []
    if any(s.task(l, {}) == "binary" for l in s.losses) and s.family != "spectral":
        out += [(sweep_classifier, d) for d in data if d in CLASSIFICATION]
    if "squared" in s.losses and s.task("squared", {}) == "regression":
        out += [(sweep_regression, d) for d in data if d in REGRESSION]
    return out


def markdown(rows):
    lines = ["| solver | data | stop | epochs | seconds | metric | ours | reference | ok |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        fmt = "{:.2e}" if "objective" in r["metric"] else "{:.4f}"
        ref = "{:.6g}".format(r["reference"]) if "objective" in r["metric"] else fmt.format(r["reference"])
        lines.append(f"| {r['solver']} | {r['data']} | {r['stop_reason']} | {r['epochs']} | "
                     f"{r['seconds']:.2f} | {r['metric']} | {fmt.format(r['value'])} | {ref} | "
                     f"{'yes' if r['ok'] else '**no**'} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--solvers", nargs="*", default=None)
    ap.add_argument("--data", nargs="*", default=list(CLASSIFICATION + REGRESSION))
    ap.add_argument("--json", default=os.path.join(HERE, "results", "defaults_sweep.json"))
    args = ap.parse_args()
    table = solvers()
    names = args.solvers or sorted(table)
    rows, cache = [], {}
    for name in names:
        for runner, data in plan(table[name], args.data):
            r = runner(table[name], data, cache)
            rows.append(r)
            print(f"{r['solver']:<16} {r['data']:<24} {r['stop_reason']:<10} {r['epochs']:>6} "
                  f"{r['seconds']:8.2f}s  {r['metric']}: {r['value']:.6g} (ref {r['reference']:.6g})"
                  f"  {'ok' if r['ok'] else 'NO'}  {r['warning'][:100]}", flush=True)
    print()
    print(markdown(rows))
    with open(args.json, "w") as fh:
        json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
