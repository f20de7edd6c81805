"""What train_sdca's focused passes buy: ``focus=0`` (liblinear's loop) against the default,
time to the same certificate, one thread, alternating rounds.

For each data set, loss and C: ``train_sdca(X, y, loss=..., C=..., tol=1e-6)`` with
``focus=0.0`` and with the default, in alternating order, ``--rounds`` times; medians and
ranges of the seconds, the epochs and the focused passes, and the ratio of the two medians.
Both solves must certify, and their objectives (each within tol of P*) must agree to
2 tol: a check across the two, independent of either's own certificate.

Usage::

    DUALSOLVE_DATA=... python bench/sdca_focus.py [--data news20 imdb reuters]
        [--loss logistic squared_hinge hinge] [--C 1 100 10000] [--rounds 3]
        [--json bench/results/sdca_focus.json]
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


def _solve(X, y, loss, C, tol, focus, max_epochs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.ConvergenceWarning)
        t = time.perf_counter()
        m = ds.train_sdca(X, y, loss=loss, C=C, tol=tol, focus=focus, max_epochs=max_epochs)
        return time.perf_counter() - t, m


def compare(X, y, loss, C, tol, rounds, max_epochs):
    default = ds.train_sdca.__kwdefaults__["focus"]
    runs = {0.0: [], default: []}
    for r in range(rounds):
        for focus in ((0.0, default) if r % 2 == 0 else (default, 0.0)):
            runs[focus].append(_solve(X, y, loss, C, tol, focus, max_epochs))
    lam = 1.0 / (C * X.shape[0])
    out = {}
    for focus, got in runs.items():
        secs = [s for s, _ in got]
        m = got[-1][1]
        out["plain" if focus == 0.0 else "focused"] = dict(
            seconds=secs, median=float(np.median(secs)), epochs=m.n_epochs,
            focused_passes=m.params["focused_passes"], converged=bool(m.converged),
            objective=float(peers.primal_objective(X, y, m.coef, lam, loss)))
    p, f = out["plain"], out["focused"]
    out["ratio"] = f["median"] / p["median"]
    out["agree"] = abs(p["objective"] - f["objective"]) <= 2 * tol * min(p["objective"],
                                                                        f["objective"])
    return out


def _range(v):
    return f"{np.median(v):.3f} ({min(v):.3f}-{max(v):.3f})"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", nargs="*", default=["news20", "imdb", "reuters"])
    ap.add_argument("--loss", nargs="*", default=["logistic", "squared_hinge", "hinge"])
    ap.add_argument("--C", nargs="*", type=float, default=[1.0, 100.0, 1e4])
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-epochs", type=int, default=5000)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    results = []
    print("| data | loss | C | focus=0: s (range), epochs | focus=0.5: s (range), epochs "
          "(focused passes) | ratio | both certified, objectives agree |")
    print("|---|---|---|---|---|---|---|")
    for name in args.data:
        X, y = datasets.load(name)
        for loss in args.loss:
            for C in args.C:
                r = compare(X, y, loss, C, args.tol, args.rounds, args.max_epochs)
                p, f = r["plain"], r["focused"]
                ok = p["converged"] and f["converged"] and r["agree"]
                print(f"| {name} | {loss} | {C:g} | {_range(p['seconds'])}, {p['epochs']} | "
                      f"{_range(f['seconds'])}, {f['epochs']} ({f['focused_passes']}) | "
                      f"**{r['ratio']:.2f}** | "
                      f"{'yes' if ok else 'NO: ' + str((p['converged'], f['converged'], r['agree']))} |",
                      flush=True)
                results.append(dict(data=name, loss=loss, C=C, tol=args.tol, **r))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
