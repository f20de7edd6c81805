"""Crammer-Singer: train_sdca(..., multi_class="crammer_singer") against liblinear -s 4.

Data: UCI satellite (Statlog Landsat, 6 classes, 36 features) and letter (26 classes, 16
features) from ``$DUALSOLVE_DATA/uci_classification``, features scaled to [0, 1] on the
training rows; split: satellite's first 4,435 rows train, the last 2,000 test (the sizes of
the Statlog split); letter's first 16,000 rows train, the last 4,000 test (the usual split);
``news20`` (``--sets news20``): 20 Newsgroups, 20 classes, the bench's TF-IDF
(``bench/datasets.py``, ``news20.multi``), the bydate train and test parts.

For each set and C: ours at a certified relative gap ``tol`` (default 1e-8) and liblinear
``-s 4 -e EPS`` (default 1e-6; liblinear's own rule, maxG - minG over a pass, which certifies
nothing; its iteration cap is 100,000), both single-threaded, in alternating rounds (median
seconds; liblinear's conversion of X into its format outside its timer); ours once per
``--focus`` value (focused passes, docs/sdca.md; 0 is the plain loop) and ``--n-jobs``
value (its exact checks and resyncs in threads; liblinear stays on one). The primal
objective ``(1/n) sum_i max_m (e_{y_i m} + w_m.x_i - w_{y_i}.x_i) + (lam/2)||W||^2``,
``lam = 1/(C n)``, is computed here in NumPy from both W's; ``rel diff`` is
``(P_ours - P_liblinear) / P_liblinear``.

Usage::

    DUALSOLVE_DATA=... python bench/crammer_singer.py [--sets satellite letter news20]
        [--C 1 0.1] [--tol 1e-8] [--eps 1e-6] [--focus 0.5 0] [--n-jobs 1 2] [--rounds 3]
        [--json bench/results/crammer_singer.json]
"""
import argparse
import csv
import json
import lzma
import os
import platform
import time

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import dualsolve as ds  # noqa: E402

SETS = {"satellite": ("satellite_statlog.csv.xz", "classes", 4435),
        "letter": ("letter_recognition.csv.xz", "lettr", 16000)}


def load(name):
    if name == "news20":
        import sys
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import datasets
        return (datasets.load("news20.multi", split="train")
                + datasets.load("news20.multi", split="test"))
    fname, label, n_train = SETS[name]
    path = os.path.join(os.environ["DUALSOLVE_DATA"], "uci_classification", fname)
    with lzma.open(path, "rt") as f:
        rows = list(csv.reader(f))
    header, rows = rows[0], rows[1:]
    j = header.index(label)
    y = np.array([r[j] for r in rows])
    X = np.array([[float(v) for i, v in enumerate(r) if i != j] for r in rows])
    lo, hi = X[:n_train].min(0), X[:n_train].max(0)
    X = (X - lo) / np.where(hi > lo, hi - lo, 1.0)
    return (sp.csr_matrix(X[:n_train]), y[:n_train], sp.csr_matrix(X[n_train:]), y[n_train:])


def cs_primal(W, X, codes, lam):
    Z = np.asarray(X @ W.T)
    n, k = Z.shape
    E = np.ones((n, k))
    E[np.arange(n), codes] = 0.0
    L = (E + Z - Z[np.arange(n), codes][:, None]).max(axis=1)
    return float(L.mean() + 0.5 * lam * (W ** 2).sum())


def run_ours(X, y, C, tol, focus, n_jobs):
    t0 = time.perf_counter()
    m = ds.train_sdca(X, y, loss="hinge", multi_class="crammer_singer", C=C, tol=tol,
                      max_epochs=1_000_000, focus=focus, n_jobs=n_jobs)
    return time.perf_counter() - t0, m


def run_liblinear(X, codes, k, C, eps):
    from liblinear import liblinear as ll
    from liblinear import liblinearutil as llu
    prob = ll.problem(codes.astype(float), X)
    param = ll.parameter(f"-s 4 -c {C} -e {eps} -q")
    t0 = time.perf_counter()
    lm = llu.train(prob, param)
    secs = time.perf_counter() - t0
    labels = lm.get_labels()
    d = X.shape[1]
    W = np.array([[lm.get_decfun_coef(j + 1, labels.index(c)) for j in range(d)]
                  for c in range(k)])
    return secs, W


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="+", default=list(SETS),
                    choices=list(SETS) + ["news20"])
    ap.add_argument("--C", nargs="+", type=float, default=[1.0, 0.1])
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--focus", nargs="+", type=float, default=[0.5])
    ap.add_argument("--n-jobs", nargs="+", type=int, default=[1])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    rows = []
    runs = [(f, j) for f in a.focus for j in a.n_jobs]
    print("| set | C | focus | n_jobs | P ours | P liblinear | rel diff | our gap | epochs | "
          "train acc ours / lib | test acc ours / lib | s ours | s liblinear |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in a.sets:
        X, y, Xt, yt = load(name)
        classes = np.unique(y)
        codes = np.searchsorted(classes, y)
        k = len(classes)
        for C in a.C:
            lam = 1.0 / (C * X.shape[0])
            ours_t, lib_t, models = {r: [] for r in runs}, [], {}
            for _ in range(a.rounds):
                for f, j in runs:
                    t, models[f, j] = run_ours(X, y, C, a.tol, f, j)
                    ours_t[f, j].append(t)
                t, W = run_liblinear(X, codes, k, C, a.eps)
                lib_t.append(t)
            pl = cs_primal(W, X, codes, lam)
            acc = lambda Wm, A, lab: float(np.mean(classes[np.argmax(A @ Wm.T, 1)] == lab))  # noqa: E731
            for (f, j), m in models.items():
                po = cs_primal(m.coef, X, codes, lam)
                row = dict(set=name, C=C, n=X.shape[0], k=k, tol=a.tol, eps=a.eps, focus=f,
                           n_jobs=j,
                           focused_passes=m.params["focused_passes"],
                           primal_ours=po, primal_liblinear=pl, rel_diff=(po - pl) / pl,
                           gap=float(m.history["gap"][-1]), stop_reason=m.stop_reason,
                           epochs=m.n_epochs, train_acc_ours=acc(m.coef, X, y),
                           train_acc_liblinear=acc(W, X, y), test_acc_ours=acc(m.coef, Xt, yt),
                           test_acc_liblinear=acc(W, Xt, yt), seconds_ours=ours_t[f, j],
                           seconds_liblinear=lib_t)
                rows.append(row)
                print(f"| {name} | {C:g} | {f:g} | {j} | {po:.10f} | {pl:.10f} | "
                      f"{row['rel_diff']:.1e} | {row['gap']:.1e} | {m.n_epochs} | "
                      f"{row['train_acc_ours']:.4f} / {row['train_acc_liblinear']:.4f} | "
                      f"{row['test_acc_ours']:.4f} / {row['test_acc_liblinear']:.4f} | "
                      f"{np.median(ours_t[f, j]):.2f} | {np.median(lib_t):.2f} |", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(machine=platform.machine(), python=platform.python_version(),
                           rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
