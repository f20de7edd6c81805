"""What shrinking buys rows with weights: ``train_sdca(class_weight="balanced")`` with
``shrinking=False`` (what every weighted solve ran before shrinking took weighted rows)
against the default, time to the same certificate, one thread, alternating rounds; beside
them liblinear's dual solver with the same weights (``-wi``), whose result is timed and
measured against our certified optimum.

For each data set, loss and C: both our solves must certify ``tol``, and their objectives,
computed here in NumPy from the models, must agree to 2 tol (a check across the two,
independent of either's own certificate). liblinear runs ``-s 3`` (hinge) / ``-s 1``
(squared hinge) with ``-w1`` / ``-w-1`` set to the balanced weights, at each ``--ll-eps``;
its relative suboptimality is against the smaller of our two objectives.

Usage::

    DUALSOLVE_DATA=... python bench/weighted_shrinking.py [--data a9a w8a news20 reuters]
        [--loss hinge squared_hinge] [--C 1 100] [--rounds 3] [--ll-eps 0.1 0.001]
        [--json bench/results/weighted_shrinking.json]
"""
import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import datasets  # noqa: E402
import peers  # noqa: E402

import dualsolve as ds  # noqa: E402


def balanced(y):
    """{label: n / (2 n_label)}: scikit-learn's "balanced", liblinear's -wi."""
    labels, counts = np.unique(y, return_counts=True)
    return {float(k): len(y) / (2.0 * c) for k, c in zip(labels, counts)}


def objective(w, X, y, C, c, loss):
    """The liblinear-scaled objective ||w||^2 / 2 + C sum_i c_i phi(y_i x_i.w)."""
    m = np.where(y > 0, 1.0, -1.0) * (X @ w)
    phi = np.maximum(0.0, 1.0 - m)
    if loss == "squared_hinge":
        phi = phi * phi
    return 0.5 * float(w @ w) + C * float(c @ phi)


def _ours(X, y, loss, C, tol, shrinking, max_epochs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.ConvergenceWarning)
        t = time.perf_counter()
        m = ds.train_sdca(X, y, loss=loss, C=C, tol=tol, class_weight="balanced",
                          shrinking=shrinking, max_epochs=max_epochs)
        return time.perf_counter() - t, m


def _liblinear(X, y, loss, C, weights, eps):
    prob, _ = peers._ll_prep.get(X, y)
    s = 3 if loss == "hinge" else 1
    flags = " ".join(f"-w{int(k)} {float(v)!r}" for k, v in weights.items())
    model, _, seconds = peers._ll_train(prob, f"-s {s} -c {C!r} -e {eps!r} -B -1 {flags}")
    return seconds, peers._ll_w(model, X.shape[1])


def run(name, loss, C, rounds, tol, max_epochs, ll_eps):
    X, y = datasets.load(name, split="train")
    weights = balanced(y)
    c = np.array([weights[float(v)] for v in y])
    times = {"shrinking": [], "plain": []}
    models = {}
    for r in range(rounds):
        order = ("shrinking", "plain") if r % 2 == 0 else ("plain", "shrinking")
        for which in order:
            t, m = _ours(X, y, loss, C, tol, which == "shrinking", max_epochs)
            times[which].append(t)
            models[which] = m
    row = dict(data=name, loss=loss, C=C, tol=tol, n=X.shape[0])
    objs = {}
    for which, m in models.items():
        h = m.history
        objs[which] = objective(m.coef, X, y, C, c, loss)
        row[which] = dict(seconds=times[which], median=float(np.median(times[which])),
                          epochs=int(m.n_epochs), converged=bool(m.converged),
                          min_active=int(np.nanmin(h["n_active"])), objective=objs[which])
    p_best = min(objs.values())
    row["agree"] = bool(abs(objs["shrinking"] - objs["plain"]) <= 2 * tol * p_best)
    row["ratio"] = row["shrinking"]["median"] / row["plain"]["median"]
    row["liblinear"] = []
    for eps in ll_eps:
        seconds = []
        for _ in range(rounds):
            t, w = _liblinear(X, y, loss, C, weights, eps)
            seconds.append(t)
        row["liblinear"].append(dict(eps=eps, median=float(np.median(seconds)),
                                     seconds=seconds,
                                     rel_subopt=(objective(w, X, y, C, c, loss) - p_best)
                                     / p_best))
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", nargs="+", default=["a9a", "w8a", "news20", "reuters"])
    ap.add_argument("--loss", nargs="+", default=["hinge", "squared_hinge"])
    ap.add_argument("--C", nargs="+", type=float, default=[1.0, 100.0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--max-epochs", type=int, default=5000)
    ap.add_argument("--ll-eps", nargs="*", type=float, default=[0.1, 0.001])
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    rows = []
    print(f"{'data':<8} {'loss':<13} {'C':>6} | {'shrinking s (epochs, min active)':<34} "
          f"{'plain s (epochs)':<20} ratio agree | liblinear s (rel subopt) per -e")
    for name in args.data:
        for loss in args.loss:
            for C in args.C:
                r = run(name, loss, C, args.rounds, args.tol, args.max_epochs, args.ll_eps)
                rows.append(r)
                s, p = r["shrinking"], r["plain"]
                mark = lambda m: "" if m["converged"] else " NOT"  # noqa: E731
                ll = "  ".join(f"-e {x['eps']:g}: {x['median']:.3f} ({x['rel_subopt']:.1e})"
                               for x in r["liblinear"])
                print(f"{name:<8} {loss:<13} {C:>6g} | "
                      f"{s['median']:.3f} ({s['epochs']}, {s['min_active']}){mark(s):<16} "
                      f"{p['median']:.3f} ({p['epochs']}){mark(p):<8} "
                      f"{r['ratio']:.2f} {'yes' if r['agree'] else 'NO'} | {ll}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(rows=rows, rounds=args.rounds), f, indent=1)


if __name__ == "__main__":
    main()
