"""What ``n_jobs=2`` buys on this machine, time to the same certificate, alternating rounds.

1. One-vs-rest on 20 Newsgroups (``news20.multi``, 20 classes, the bydate train rows):
   ``train_sdca`` logistic (tol 1e-8) and squared hinge (tol 1e-6) at C = 1, ``n_jobs=1``
   against ``n_jobs=2`` (the classes side by side); the two models must be equal bit for
   bit.
2. One problem: ``train_sdca`` on news20 binary, reuters and IMDB, the same losses and tols
   (threaded passes where the rows allow them, ``threaded_epochs``; the exact checks and
   resyncs in two threads everywhere).
3. What a second core can give the memory traffic of a pass on this machine: streaming
   reads and random reads (gathers) of a news20-sized w, NumPy with the GIL released; and
   what moving a cache line between the two threads' cores costs, measured before and
   after every round (``dualsolve._core.parallel.core_round_trip``): the feature-owned
   pass's gain follows it, and on a shared host it changes with where the threads land.
   The speed-ups are also given by placement: rounds whose two readings are both under
   NEAR_NS (near), both at or above it (far), or one of each (mixed).
4. ``--vs-liblinear`` (issue 17's item 1; ``threads_liblinear.py``): ``train_sdca(n_jobs=2)``
   against liblinear-official's dual solver on one thread and liblinear-multicore's
   solvers with ``-m 2``, time to the same suboptimality, news20 binary and IMDB.
5. ``--solvers`` (item 2's table for every other solver; ``threads_solvers.py``): every
   ``train_*`` with its defaults, one-vs-rest on Statlog satellite and one problem on a9a
   (the kernel solvers on spambase); ``--solvers --wide``: one problem on news20 binary,
   every solver whose one problem runs in threads, a fixed number of epochs.
6. ``--newton`` (``threads_newton.py``): ``train_newton`` and ``train_linear`` on one
   problem at C = 100 and 10^4, ``n_jobs=1`` against 2, beside liblinear-multicore's
   ``-s 0`` with ``-m 1`` and ``-m 2``, news20 binary and IMDB.
7. ``--multicore-scaling``: liblinear-multicore's own speed-up on the data of the
   one-problem rows (train splits): its parallel dual coordinate descent (``-s 1``,
   ``-s 3``) with ``-m 2`` against ``-m 1``, alternating; what the peer built for these
   threads gets on this host.

Usage::

    DUALSOLVE_DATA=... python bench/threads.py [--rounds 5] [--data reuters] [--json out.json]
    DUALSOLVE_DATA=... LIBLINEAR_MULTICORE=DIR python bench/threads.py --vs-liblinear
    DUALSOLVE_DATA=... python bench/threads.py --solvers [--wide] [--only train_adfsdca ...]
        [--rounds 3] [--json out.json]
    DUALSOLVE_DATA=... LIBLINEAR_MULTICORE=DIR python bench/threads.py --newton [--C 1e4]
    DUALSOLVE_DATA=... LIBLINEAR_MULTICORE=DIR python bench/threads.py --multicore-scaling
        [--data news20 reuters] [--rounds 7] [--json out.json]
"""
import argparse
import json
import os
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import datasets  # noqa: E402

import dualsolve as ds  # noqa: E402
from dualsolve._core.parallel import core_round_trip  # noqa: E402

# a round whose round trips before and after both read under this ran with the two cores
# near each other; both at or above it, far apart (this host: ~50 ns against ~400 ns)
NEAR_NS = 150.0

RUNS = [("news20.multi", "logistic", 1e-8), ("news20.multi", "squared_hinge", 1e-6),
        ("news20", "logistic", 1e-8), ("news20", "squared_hinge", 1e-6),
        ("reuters", "logistic", 1e-8), ("reuters", "squared_hinge", 1e-6),
        ("imdb", "logistic", 1e-8), ("imdb", "squared_hinge", 1e-6)]


def speedup(name, loss, tol, rounds):
    X, y = datasets.load(name, split="train")
    seconds = {1: [], 2: []}
    models = {}
    coefs_2 = set()     # the n_jobs=2 models' coef across rounds (one: reproducible)
    trips = []          # core-to-core round trips (ns), one before each round
    trips_after = []    # and one after it
    for _ in range(rounds):
        trips.append(core_round_trip())
        for n_jobs in (1, 2):
            t0 = time.perf_counter()
            m = ds.train_sdca(X, y, C=1.0, loss=loss, tol=tol, n_jobs=n_jobs)
            seconds[n_jobs].append(time.perf_counter() - t0)
            assert m.converged, (name, loss, n_jobs, m.stop_reason)
            models[n_jobs] = m
            if n_jobs == 2:
                coefs_2.add(m.coef.tobytes())
        trips_after.append(core_round_trip())
    ratios = [a / b for a, b in zip(seconds[1], seconds[2])]
    placement = ["near" if max(a, b) < NEAR_NS else "far" if min(a, b) >= NEAR_NS else "mixed"
                 for a, b in zip(trips, trips_after)]
    by_placement = {}
    for where in ("near", "far", "mixed"):
        picked = [r for r, p in zip(ratios, placement) if p == where]
        if picked:
            by_placement[where] = dict(rounds=len(picked), speedup_median=float(np.median(picked)),
                                       speedup_range=[min(picked), max(picked)])
    return dict(data=name, loss=loss, tol=tol, rows=X.shape[0], features=X.shape[1],
                classes=int(np.unique(y).size), seconds_1=seconds[1], seconds_2=seconds[2],
                speedup_median=float(np.median(ratios)), speedup_range=[min(ratios), max(ratios)],
                same_coef=models[1].coef.tobytes() == models[2].coef.tobytes(),
                repeatable=len(coefs_2) == 1,
                threaded_epochs=int(models[2].params.get("threaded_epochs", 0)),
                epochs=[int(models[1].n_epochs), int(models[2].n_epochs)],
                round_trip_ns=trips, round_trip_after_ns=trips_after, placement=placement,
                by_placement=by_placement)


def memory_scaling(rounds):
    """Seconds of the same reads done twice in one thread and once in each of two."""
    rng = np.random.default_rng(0)
    stream = [np.ones(2 * 10**7), np.ones(2 * 10**7)]             # 160 MB each
    w = np.ones(1_664_476)                                          # news20's w, 13 MB
    idx = [rng.integers(0, w.size, 5 * 10**6) for _ in range(2)]
    out = [np.empty(5 * 10**6), np.empty(5 * 10**6)]

    def streaming(k):
        for _ in range(10):
            stream[k].sum()

    def gathering(k):
        for _ in range(5):
            np.take(w, idx[k], out=out[k])

    result = {}
    for what, work in (("streaming reads", streaming), ("random reads of w", gathering)):
        ratios = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            work(0)
            work(1)
            one = time.perf_counter() - t0
            threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            ratios.append(one / (time.perf_counter() - t0))
        result[what] = dict(speedup_median=float(np.median(ratios)),
                            speedup_range=[min(ratios), max(ratios)])
    return result


def multicore_scaling(data, rounds, path, json_path):
    import ll_multicore
    if not ll_multicore.available(path):
        raise SystemExit("liblinear-multicore not found: pip install --target DIR "
                         "liblinear-multicore, then LIBLINEAR_MULTICORE=DIR or --multicore DIR")
    out = []
    for name in data:
        for opts in ("-s 1 -e 0.1", "-s 1 -e 0.01", "-s 3 -e 0.1"):
            one, two = ll_multicore.scaling(path, name, "train", opts, rounds)
            ratios = np.array(one) / np.array(two)
            out.append(dict(data=name, opts=opts, seconds_m1=one, seconds_m2=two,
                            speedup_median=float(np.median(ratios)),
                            speedup_range=[float(ratios.min()), float(ratios.max())],
                            round_trip_ns=core_round_trip()))
            print(f"{name} liblinear-multicore {opts}: -m 1 {np.median(one):.4f} s, -m 2 "
                  f"{np.median(two):.4f} s, speed-up {np.median(ratios):.2f} "
                  f"({ratios.min():.2f}-{ratios.max():.2f}); core round trip "
                  f"{out[-1]['round_trip_ns']:.0f} ns after", flush=True)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(out, f, indent=1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", default=None)
    ap.add_argument("--vs-liblinear", action="store_true",
                    help="item 1: n_jobs=2 against liblinear and liblinear-multicore")
    ap.add_argument("--solvers", action="store_true",
                    help="every train_* with its defaults, n_jobs=1 against n_jobs=2")
    ap.add_argument("--wide", action="store_true",
                    help="--solvers: one problem on news20 binary, a fixed number of epochs")
    ap.add_argument("--only", nargs="*", default=None,
                    help="--solvers: only these solvers (e.g. train_adfsdca)")
    ap.add_argument("--newton", action="store_true",
                    help="train_newton / train_linear on one problem at a large C, n_jobs=1 "
                         "against 2, beside liblinear-multicore -s 0 -m 1 / -m 2")
    ap.add_argument("--multicore-scaling", action="store_true",
                    help="liblinear-multicore's -m 2 against its -m 1 (-s 1 and -s 3)")
    ap.add_argument("--C", nargs="*", type=float, default=[100.0, 1e4],
                    help="--newton: the values of C")
    ap.add_argument("--data", nargs="*", default=None,
                    help="data sets to run (default: every one; --vs-liblinear: news20 imdb)")
    ap.add_argument("--multicore", default=os.environ.get("LIBLINEAR_MULTICORE"),
                    help="directory holding liblinear-multicore (pip install --target DIR "
                         "liblinear-multicore); default $LIBLINEAR_MULTICORE")
    ap.add_argument("--blas-threads", type=int, default=1,
                    help="--vs-liblinear: the BLAS pool's threads during the rounds (its "
                         "spinning workers slow a threaded solve's start; 0: left alone)")
    args = ap.parse_args(argv)
    if args.vs_liblinear:
        import threads_liblinear
        threads_liblinear.main(args.data or ["news20", "imdb"], args.rounds, args.multicore,
                               args.json, args.blas_threads)
        return
    if args.newton:
        import threads_newton
        threads_newton.main(args.data or ["news20", "imdb"], args.C, args.rounds,
                            args.multicore, args.json)
        return
    if args.multicore_scaling:
        multicore_scaling(args.data or ["news20", "reuters", "imdb"], args.rounds,
                          args.multicore, args.json)
        return
    if args.solvers:
        import threads_solvers
        if args.wide:
            threads_solvers.wide(args.rounds, args.json, args.only)
        else:
            threads_solvers.main(args.rounds, args.json, args.only)
        return
    out = []
    for name, loss, tol in RUNS:
        if args.data and name not in args.data:
            continue
        r = speedup(name, loss, tol, args.rounds)
        out.append(r)
        trips = r["round_trip_ns"]
        print(f"{name} ({r['classes']} classes) {loss} tol {tol:g}: n_jobs=1 "
              f"{np.median(r['seconds_1']):.3f} s, n_jobs=2 {np.median(r['seconds_2']):.3f} s, "
              f"speed-up {r['speedup_median']:.2f} ({r['speedup_range'][0]:.2f}-"
              f"{r['speedup_range'][1]:.2f}); epochs {r['epochs']}, threaded "
              f"{r['threaded_epochs']}; same coef as n_jobs=1: {r['same_coef']}, n_jobs=2 "
              f"repeatable: {r['repeatable']}; core round trip "
              f"{np.median(trips):.0f} ns ({min(trips):.0f}-{max(trips):.0f})", flush=True)
        for where, b in r["by_placement"].items():
            print(f"    {where} ({b['rounds']} rounds): speed-up {b['speedup_median']:.2f} "
                  f"({b['speedup_range'][0]:.2f}-{b['speedup_range'][1]:.2f})", flush=True)
    mem = memory_scaling(args.rounds)
    out.append(dict(memory=mem))
    for what, r in mem.items():
        print(f"{what}: two threads {r['speedup_median']:.2f}x one "
              f"({r['speedup_range'][0]:.2f}-{r['speedup_range'][1]:.2f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
