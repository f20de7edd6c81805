"""Epochs to the certificate of a two-block dual pass for the squared hinge, in NumPy.

What a deterministic two-thread block scheme can give on a problem whose rows share their
features (reuters: 37 rows a feature on the train split), counted in epochs, not seconds:
each epoch splits the shuffled rows into two halves (or keeps one fixed split,
``--fixed``); each half steps its rows on CoCoA+'s subproblem with curvature
``sigma' ||x_i||^2 + 1/(2C)`` against ``w`` plus ``sigma'`` times its own changes, and
``--merges`` times a pass the halves' changes are added with the step in [0, 1] that
maximises the dual (exact for this loss: the dual is a concave quadratic along the summed
change). One block is liblinear's serial dual coordinate descent. A two-thread pass gives
at most 2x a serial pass's speed, so a scheme needing E epochs where one thread needs E1
cannot be more than ``2 E1 / E`` faster, before the merges' cost.

Usage::

    DUALSOLVE_DATA=... python bench/block_epochs.py [--data reuters] [--C 1] [--fixed]
"""
import argparse
import os
import sys

import numpy as np
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import datasets  # noqa: E402


def solve(X, y, C, halves, sigma, merges, tol=1e-6, max_epochs=60, seed=0):
    """Epochs until (P - D) / P <= tol (None: not within max_epochs), for liblinear's
    squared-hinge dual ``min_a 1/2 ||sum a_i y_i x_i||^2 + sum a_i^2 / (4C) - sum a_i``."""
    n, d = X.shape
    ip, ix, dv = X.indptr, X.indices, X.data
    sq = np.asarray(X.multiply(X).sum(1)).ravel()
    diag = 1.0 / (2.0 * C)
    rng = np.random.default_rng(seed)
    a, w = np.zeros(n), np.zeros(d)
    for epoch in range(1, max_epochs + 1):
        blocks = halves(rng)
        orders = [rng.permutation(b) for b in blocks]
        for m in range(merges):
            dw_all, da_all = np.zeros(d), np.zeros(n)
            for order in orders:
                dw = np.zeros(d)
                for i in order[m * len(order) // merges:(m + 1) * len(order) // merges]:
                    s, e = ip[i], ip[i + 1]
                    idx, v = ix[s:e], dv[s:e]
                    ai = a[i] + da_all[i]
                    g = y[i] * (v @ (w[idx] + sigma * dw[idx])) - 1.0 + diag * ai
                    step = max(ai - g / (sigma * sq[i] + diag), 0.0) - ai
                    if step:
                        da_all[i] += step
                        dw[idx] += step * y[i] * v
                dw_all += dw
            slope = -(w @ dw_all + diag * (a @ da_all) - da_all.sum())
            curve = dw_all @ dw_all + diag * (da_all @ da_all)
            t = min(1.0, max(0.0, slope / curve)) if curve > 0 else 0.0
            w += t * dw_all
            a += t * da_all
        margin = np.maximum(0.0, 1.0 - y * (X @ w))
        primal = 0.5 * w @ w + C * margin @ margin
        dual = -(0.5 * w @ w + 0.5 * diag * a @ a - a.sum())
        if primal - dual <= tol * primal:
            return epoch
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="reuters")
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--fixed", action="store_true", help="one split for every epoch")
    args = ap.parse_args(argv)
    X, y = datasets.load(args.data, split="train")
    X = sp.csr_matrix(X)
    n = X.shape[0]
    split = np.array_split(np.random.default_rng(1).permutation(n), 2)

    def halves(rng):
        return split if args.fixed else np.array_split(rng.permutation(n), 2)

    one = solve(X, y, args.C, lambda rng: [np.arange(n)], 1.0, 1)
    print(f"{args.data} train, squared hinge, C = {args.C:g}: one block {one} epochs")
    for merges in (1, 2, 4):
        for sigma in (1.0, 1.25, 1.5, 2.0):
            e = solve(X, y, args.C, halves, sigma, merges)
            bound = f", at most {2 * one / e:.2f}x one thread" if e else " (not within 60)"
            how = "one fixed split" if args.fixed else "a fresh split each epoch"
            print(f"  two blocks ({how}), "
                  f"{merges} merge(s) a pass, sigma' = {sigma:g}: {e} epochs{bound}",
                  flush=True)


if __name__ == "__main__":
    main()
