"""Newton on one problem in threads (issue 17): ``train_newton`` and
``train_linear(solver="auto")`` with ``n_jobs=1`` against ``n_jobs=2`` at a large C, beside
liblinear-multicore's ``-s 0`` (its trust-region Newton, the Hessian products in threads)
with ``-m 1`` and ``-m 2`` (``python bench/threads.py --newton``).

Logistic loss, ``lam = 1 / (C n)``; the target is a relative primal suboptimality
``(P - P*)/P* <= 1e-6``:

* **ours**: ``tol = 1e-6`` (the certificate implies the target), the suboptimality
  checked in NumPy (``peers.primal_objective``);
* **liblinear-multicore** (``ll_multicore.py``, a child process; skipped, and said so,
  without it): ``-s 0 -m k`` at the loosest ``-e`` of 1e-1 ... 1e-8 reaching the target
  (an oracle choice in its favour, found once before the rounds).

P* is the dual value of a ``train_newton`` solve at ``tol = 1e-11`` (a lower bound), so
every suboptimality is an upper bound on the true one. Rounds alternate the order; each
first reads the core-to-core round trip. The BLAS pool is held to one thread
(threads_liblinear: its spinning workers slow a threaded solve's start).
"""
import time

import numpy as np

import datasets
import ll_multicore
import peers
import report
import threads_liblinear

import dualsolve as ds
from dualsolve._core.parallel import core_round_trip

TARGET = 1e-6
OURS = ("newton", "linear")


def _pstar(X, y, C):
    m = ds.train_newton(X, y, C=C, tol=1e-11, n_jobs=2)
    if not m.converged:
        raise RuntimeError(f"P* not certified at C = {C:g}: gap {m.history['gap'][-1]:.3g}")
    return float(m.history["dual"][-1])


def _ours(X, y, C, solver, n_jobs, lam, pstar):
    fit = ds.train_newton if solver == "newton" else ds.train_linear
    t0 = time.perf_counter()
    m = fit(X, y, C=C, tol=TARGET, n_jobs=n_jobs)
    dt = time.perf_counter() - t0
    p = peers.primal_objective(X, y, m.coef, lam, "logistic")
    return dt, (p - pstar) / pstar, m


def one(data, C, rounds, multicore):
    X, y = datasets.load(data)
    y = peers._labels(y)
    lam = 1.0 / (C * X.shape[0])
    pstar = _pstar(X, y, C)
    out = dict(data=data, C=C, target=TARGET, pstar=pstar, rows=X.shape[0],
               features=X.shape[1], nnz=int(X.nnz))
    ours = {f"{s} {k}": dict(seconds=[], subopt=[]) for s in OURS for k in (1, 2)}
    mc = {}
    if ll_multicore.available(multicore):
        ladders = ll_multicore.run(multicore, data, "logistic", C, pstar, TARGET,
                                   [dict(solver=0, threads=k, ladder=threads_liblinear.EPS_LADDER)
                                    for k in (1, 2)])
        for k, runs in zip((1, 2), ladders):
            reached = runs[-1]["subopt"] <= TARGET
            mc[k] = dict(ladder=runs, seconds=[], subopt=[],
                         opts=runs[-1]["opts"] if reached else None)
        out["multicore"] = mc
    else:
        out["multicore"] = "not installed (LIBLINEAR_MULTICORE / --multicore)"
    out["round_trip_ns"] = []
    steps = list(ours) + ["multicore"]
    for r in range(rounds):
        time.sleep(0.3)
        out["round_trip_ns"].append(core_round_trip())
        for step in (steps if r % 2 == 0 else steps[::-1]):
            if step == "multicore":
                jobs = [(k, v["opts"]) for k, v in mc.items() if v["opts"]]
                if not jobs:
                    continue
                runs = ll_multicore.run(multicore, data, "logistic", C, pstar, TARGET,
                                        [dict(opts=o) for _, o in jobs])
                for (k, _), (row,) in zip(jobs, runs):
                    mc[k]["seconds"].append(row["seconds"])
                    mc[k]["subopt"].append(row["subopt"])
                continue
            solver, k = step.split()
            dt, sub, m = _ours(X, y, C, solver, int(k), lam, pstar)
            v = ours[step]
            v["seconds"].append(dt)
            v["subopt"].append(sub)
            v["converged"] = bool(m.converged)
            v["iterations"] = int(m.n_epochs)
            v["chosen"] = m.params.get("solver_chosen", solver)
            v["fingerprint"] = hash(m.coef.tobytes())
    out["ours"] = ours
    for s in OURS:
        one_, two = np.asarray(ours[f"{s} 1"]["seconds"]), np.asarray(ours[f"{s} 2"]["seconds"])
        out[f"{s} speed-up"] = report.stats(list(one_ / two))
    for k, v in mc.items():
        for s in OURS if v["seconds"] else ():
            v[f"ours {s} 2 / this"] = report.stats(
                list(np.asarray(ours[f"{s} 2"]["seconds"]) / np.asarray(v["seconds"])))
    if len(mc) == 2 and mc[1]["seconds"] and mc[2]["seconds"]:
        out["multicore speed-up"] = report.stats(
            list(np.asarray(mc[1]["seconds"]) / np.asarray(mc[2]["seconds"])))
    return out


def _line(r):
    o = r["ours"]
    med = {k: np.median(v["seconds"]) for k, v in o.items()}
    parts = [f"{r['data']} logistic C={r['C']:g} (target {r['target']:g}; core round trip "
             f"{np.median(r['round_trip_ns']):.0f} ns): train_newton {med['newton 1']:.2f} -> "
             f"{med['newton 2']:.2f} s, speed-up {report.fmt_range(r['newton speed-up'])}; "
             f"train_linear ({o['linear 2']['chosen']}) {med['linear 1']:.2f} -> "
             f"{med['linear 2']:.2f} s, {report.fmt_range(r['linear speed-up'])}; max subopt "
             f"{max(max(v['subopt']) for v in o.values()):.1e}"]
    mc = r["multicore"]
    if isinstance(mc, str):
        parts.append(f"liblinear-multicore {mc}")
    else:
        for k, v in mc.items():
            if v["seconds"]:
                parts.append(f"liblinear-multicore {v['opts']} {np.median(v['seconds']):.2f} s "
                             f"(ours n_jobs=2 / it: train_newton "
                             f"{report.fmt_range(v['ours newton 2 / this'])}, train_linear "
                             f"{report.fmt_range(v['ours linear 2 / this'])})")
            else:
                parts.append(f"liblinear-multicore -s 0 -m {k}: target not reached by its "
                             f"-e ladder")
        if r.get("multicore speed-up"):
            parts.append(f"its -m 2 speed-up {report.fmt_range(r['multicore speed-up'])}")
    return "; ".join(parts)


def main(data, Cs, rounds, multicore, json_path):
    results = []
    for d in data:
        for C in Cs:
            with threads_liblinear._blas_limit(1):
                r = one(d, C, rounds, multicore)
            report.keep(results, r, _line(r), json_path)
    return results
