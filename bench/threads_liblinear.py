"""Issue 17, item 1: ``train_sdca(n_jobs=2)`` against liblinear on one thread and
liblinear-multicore on two (``python bench/threads.py --vs-liblinear``).

For each data set (all rows, ``lam = 1/n``, i.e. C = 1) and loss, the target is a relative
primal suboptimality ``(P - P*)/P* <= 1e-8`` (logistic) or ``1e-6`` (squared hinge):

* **ours**: ``train_sdca(C=1, tol=target, n_jobs=2)`` (its certificate implies the
  target), and ``n_jobs=1`` beside it;
* **liblinear-official** (one thread): its dual solver (``-s 7`` / ``-s 1``) at the
  loosest ``-e`` of 1e-1 ... 1e-8 that reaches the target (an oracle choice in its favour,
  found once before the rounds);
* **liblinear-multicore** with ``-m 2``: its parallel solvers for the objective (``-s 0``
  for logistic, ``-s 2`` and ``-s 1`` for the squared hinge), each at its loosest ``-e``
  reaching the target, in a child process (``ll_multicore.py``); skipped, and said so,
  without it.

P* is the dual value of a ``train_sdca`` solve at ``tol = 1e-13`` (a lower bound, the gap
checked under 1e-11 relative), so every suboptimality is an upper bound on the true one.
Rounds alternate the order; medians and ranges; the ratio is ours(n_jobs=2) / theirs.
Each round first measures the core-to-core round trip (``core_round_trip``, after a
pause): what the feature-owned pass gains follows it (docs/benchmarks.md, "Threads").
The bench's own checks (the primal objective in NumPy) call a threaded BLAS, whose idle
workers then spin for a few milliseconds on the second core, slowing the start of the
next threaded solve; so the BLAS pool is held to ``blas_threads`` threads (1 unless
``--blas-threads`` says otherwise, 0 leaves it alone; threadpoolctl, which scikit-learn
brings).
"""
import contextlib
import time

import numpy as np

import datasets
import ll_multicore
import peers
import report

import dualsolve as ds
from dualsolve._core.parallel import core_round_trip

TARGETS = {"logistic": 1e-8, "squared_hinge": 1e-6}
LL_DUAL = {"logistic": 7, "squared_hinge": 1}
MULTICORE = {"logistic": (0,), "squared_hinge": (2, 1)}
EPS_LADDER = tuple(10.0 ** -k for k in range(1, 9))


def _pstar(X, y, loss):
    m = ds.train_sdca(X, y, C=1.0, loss=loss, tol=1e-13, max_epochs=100000)
    h = m.history
    k = np.flatnonzero(np.isfinite(h["gap"]))[-1]
    dual, gap = float(h["dual"][k]), float(h["gap"][k])
    if not gap <= 1e-11 * dual:
        raise RuntimeError(f"P* not certified: gap {gap:.3g} at D {dual:.12g}")
    return dual


def _official(X, y, lam, loss, pstar, eps):
    r = peers.run_liblinear(X, y, lam, loss, eps, solver=LL_DUAL[loss])
    p = peers.primal_objective(X, y, r["w"], lam, loss)
    return r["time"], (p - pstar) / pstar


def _ours(X, y, loss, n_jobs, lam, pstar):
    t0 = time.perf_counter()
    m = ds.train_sdca(X, y, C=1.0, loss=loss, tol=TARGETS[loss], n_jobs=n_jobs)
    dt = time.perf_counter() - t0
    p = peers.primal_objective(X, y, m.coef, lam, loss)
    return dt, (p - pstar) / pstar, m


def one(data, loss, rounds, multicore):
    X, y = datasets.load(data)
    y = peers._labels(y)
    n = X.shape[0]
    lam, target = 1.0 / n, TARGETS[loss]
    pstar = _pstar(X, y, loss)
    out = dict(data=data, loss=loss, target=target, pstar=pstar, rows=n, features=X.shape[1])
    # the official dual solver's ladder, once
    eps_ll = None
    for eps in EPS_LADDER:
        dt, sub = _official(X, y, lam, loss, pstar, eps)
        if sub <= target:
            eps_ll = eps
            break
    out["official"] = dict(solver=LL_DUAL[loss], eps=eps_ll, seconds=[], subopt=[])
    mc_jobs = []
    if ll_multicore.available(multicore):
        ladders = ll_multicore.run(multicore, data, loss, 1.0, pstar, target,
                                   [dict(solver=s, threads=2, ladder=EPS_LADDER)
                                    for s in MULTICORE[loss]])
        for s, runs in zip(MULTICORE[loss], ladders):
            reached = runs[-1]["subopt"] <= target
            out[f"multicore -s {s}"] = dict(ladder=runs, seconds=[], subopt=[],
                                            opts=runs[-1]["opts"] if reached else None)
            if reached:
                mc_jobs.append((s, runs[-1]["opts"]))
    else:
        out["multicore"] = "not installed (LIBLINEAR_MULTICORE / --multicore)"
    ours = {1: dict(seconds=[], subopt=[]), 2: dict(seconds=[], subopt=[])}
    out["round_trip_ns"] = []
    for r in range(rounds):
        time.sleep(0.3)     # the placement, not what the last BLAS call left spinning
        out["round_trip_ns"].append(core_round_trip())
        steps = ["ours2", "ours1", "official", "multicore"]
        for step in (steps if r % 2 == 0 else steps[::-1]):
            if step.startswith("ours"):
                k = int(step[-1])
                dt, sub, m = _ours(X, y, loss, k, lam, pstar)
                ours[k]["seconds"].append(dt)
                ours[k]["subopt"].append(sub)
                ours[k]["epochs"] = int(m.n_epochs)
                ours[k]["converged"] = bool(m.converged)
                ours[k]["threaded_epochs"] = int(m.params.get("threaded_epochs", 0))
            elif step == "official" and eps_ll is not None:
                dt, sub = _official(X, y, lam, loss, pstar, eps_ll)
                out["official"]["seconds"].append(dt)
                out["official"]["subopt"].append(sub)
            elif step == "multicore" and mc_jobs:
                runs = ll_multicore.run(multicore, data, loss, 1.0, pstar, target,
                                        [dict(opts=o) for _, o in mc_jobs])
                for (s, _), (row,) in zip(mc_jobs, runs):
                    out[f"multicore -s {s}"]["seconds"].append(row["seconds"])
                    out[f"multicore -s {s}"]["subopt"].append(row["subopt"])
    out["ours"] = ours
    two = np.asarray(ours[2]["seconds"])
    for key, v in out.items():
        if isinstance(v, dict) and v.get("seconds") and key != "ours":
            v["ratio"] = report.stats(list(two / np.asarray(v["seconds"])))
    return out


def _line(r):
    o2, o1 = r["ours"][2], r["ours"][1]
    parts = [f"{r['data']} {r['loss']} (target {r['target']:g}): ours n_jobs=2 "
             f"{np.median(o2['seconds']):.3f} s (max subopt {max(o2['subopt']):.1e}, "
             f"{o2['epochs']} epochs, {o2['threaded_epochs']} threaded), n_jobs=1 "
             f"{np.median(o1['seconds']):.3f} s; core round trip "
             f"{np.median(r['round_trip_ns']):.0f} ns"]
    for key, v in r.items():
        if key in ("official",) or key.startswith("multicore -s"):
            if v.get("ratio"):
                st = v["ratio"]
                who = (f"liblinear -s {v['solver']} -e {v['eps']:g} (1 thread)"
                       if key == "official" else f"liblinear-multicore {v['opts']}")
                parts.append(f"{who} {np.median(v['seconds']):.3f} s: ratio "
                             f"{report.fmt_range(st)}")
            else:
                parts.append(f"{key}: target not reached by its -e ladder")
        elif key == "multicore":
            parts.append(f"liblinear-multicore {v}")
    return "; ".join(parts)


def _blas_limit(blas_threads):
    if not blas_threads:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        print("threadpoolctl not installed: the BLAS pool is left alone")
        return contextlib.nullcontext()
    return threadpool_limits(blas_threads, user_api="blas")


def main(data, rounds, multicore, json_path, blas_threads=1):
    results = []
    for d in data:
        for loss in TARGETS:
            with _blas_limit(blas_threads):
                r = one(d, loss, rounds, multicore)
            r["blas_threads"] = blas_threads
            report.keep(results, r, _line(r), json_path)
    return results
