"""Issue 17, item 2's table for every other threaded solver: each ``train_*`` with its
defaults, ``n_jobs=1`` against ``n_jobs=2``, alternating rounds, on three problems:

* Statlog satellite (6,435 x 36, 6 classes, each column scaled by its largest value):
  one-vs-rest, the classes side by side in the two threads (the same model bit for bit);
* a9a (32,561 x 123, 451,592 nonzeros): one binary problem, where what runs in threads is
  the solver's own (the input check on 2^18+ nonzeros for every solver; ``train_sdca``'s
  exact checks; and the blocks of rows: Newton's passes in ``train_newton`` and
  ``train_linear``, the SVRG and Katyusha snapshots, the SPDC family's evaluations, the
  dfSDCA / adfSDCA checks, SOREL's and LSVRG's losses and anchors);
* spambase (4,601 x 57): the two kernel solvers, one problem (the mixup family's kernel
  values in threads).

Each solver takes logistic loss where it has it, else its first loss (the AUC solvers:
the square loss). Run via ``python bench/threads.py --solvers [--rounds 3] [--json F]``.

``--solvers --wide``: one problem on news20 binary (the train split's 11,314 rows, 1.18M
uni+bigram features, 4.7M nonzeros), where a pass over X costs more than the O(n + d)
work around it: every solver whose one problem runs in threads (``train_sdca`` and
``train_newton`` have their own runs) for a fixed number of epochs (``tol=0``), logistic
where it has it.
"""
import lzma
import os
import time
import warnings

import numpy as np
import scipy.sparse as sp

import datasets

import dualsolve as ds
from dualsolve._core.parallel import core_round_trip
from dualsolve._driver import solvers

KERNEL = ("train_kernel_sgd", "train_mixup_sdca")


def satellite():
    """Statlog satellite, every column scaled by its largest |value| (0..1)."""
    path = os.path.join(datasets.data_dir(), "uci_classification", "satellite_statlog.csv.xz")
    with lzma.open(path, "rt") as f:
        raw = np.genfromtxt(f, delimiter=",", skip_header=1, dtype=str)
    X = raw[:, :-1].astype(np.float64)
    X /= np.abs(X).max(axis=0)
    return sp.csr_matrix(X), np.unique(raw[:, -1], return_inverse=True)[1]


def problems():
    """(name, what, X, y) of the three problems."""
    Xs, ys = satellite()
    Xa, ya = ds.datasets.load("a9a")
    Xk, yk = ds.datasets.load("spambase")
    return [("satellite", "one-vs-rest, 6 classes", Xs, ys),
            ("a9a", "one problem", Xa, ya),
            ("spambase", "one problem (kernel)", Xk, yk)]


def time_solver(name, X, y, loss, rounds, **kw):
    """Seconds of n_jobs=1 and n_jobs=2 fits, alternating, and what they returned."""
    fit = getattr(ds, name)
    seconds = {1: [], 2: []}
    models = {}
    trips = []
    for _ in range(rounds):
        trips.append(core_round_trip())
        for n_jobs in (1, 2):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                models[n_jobs] = fit(X, y, loss=loss, n_jobs=n_jobs, **kw)
                seconds[n_jobs].append(time.perf_counter() - t0)
    ratios = [a / b for a, b in zip(seconds[1], seconds[2])]
    one, two = models[1], models[2]
    return dict(seconds_1=seconds[1], seconds_2=seconds[2],
                speedup_median=float(np.median(ratios)), speedup_range=[min(ratios), max(ratios)],
                stop_reason=[one.stop_reason, two.stop_reason],
                epochs=[int(one.n_epochs), int(two.n_epochs)],
                same_coef=np.asarray(one.coef).tobytes() == np.asarray(two.coef).tobytes(),
                threaded_epochs=int(two.params.get("threaded_epochs", 0) or 0),
                round_trip_ns=trips)


def main(rounds=3, json_path=None, only=None):
    """``only``: these solvers (names), else every one."""
    out = []
    losses = {s.function_name: s.losses for s in solvers().values()}
    for data, what, X, y in problems():
        for name in sorted(losses):
            if (name in KERNEL) != (data == "spambase") or (only and name not in only):
                continue
            loss = "logistic" if "logistic" in losses[name] else losses[name][0]
            r = dict(solver=name, data=data, setting=what, loss=loss,
                     **time_solver(name, X, y, loss, rounds))
            out.append(r)
            print(f"{name:18s} {data:9s} {loss:8s} {_timings(r)}; {r['stop_reason'][1]}, "
                  f"epochs {r['epochs']}, same coef {r['same_coef']}", flush=True)
    _save(out, json_path)
    return out


def _timings(r):
    """A result's medians and speed-up, as one line's words."""
    return (f"n_jobs=1 {np.median(r['seconds_1']):7.3f} s, n_jobs=2 "
            f"{np.median(r['seconds_2']):7.3f} s, speed-up {r['speedup_median']:.2f} "
            f"({r['speedup_range'][0]:.2f}-{r['speedup_range'][1]:.2f})")


def _save(out, json_path):
    if json_path:
        import json
        with open(json_path, "w") as f:
            json.dump(out, f, indent=1)


#: --wide: (solver, epochs, its own settings) on news20 binary
WIDE = [("train_svrg", 5, {}), ("train_katyusha", 5, {}), ("train_spdc", 10, {}),
        ("train_spdc", 5, {"batch_size": 8}), ("train_spdc", 5, {"batch_size": 32}),
        ("train_ada_spdc", 10, {}), ("train_df_spdc", 10, {}), ("train_adf_spdc", 10, {}),
        ("train_dfsdca", 10, {}), ("train_adfsdca", 10, {}),
        ("train_adfsdca", 1, {"variant": "exact", "batch_size": 8}),
        ("train_adfsdca", 1, {"variant": "exact", "batch_size": 64}), ("train_sorel", 10, {}),
        ("train_sorel", 5, {"batch_size": 16}), ("train_sorel", 5, {"batch_size": 64}),
        ("train_lsvrg", 10, {}), ("train_prospect", 10, {}), ("train_spectral_sgd", 30, {}),
        ("train_ppd_sg", 30, {}), ("train_ppd_adagrad", 30, {}), ("train_pga", 30, {}),
        ("train_solam", 30, {}), ("train_bpd", 30, {}), ("train_df_bpd", 30, {}),
        ("train_ada_bpd", 30, {})]


def wide(rounds=3, json_path=None, only=None):
    """``only``: the WIDE entries of these solvers (names), else every one."""
    X, y = datasets.load("news20", split="train")
    losses = {s.function_name: s.losses for s in solvers().values()}
    out = []
    for name, epochs, own in WIDE:
        if only and name not in only:
            continue
        loss = "logistic" if "logistic" in losses[name] else losses[name][0]
        r = dict(solver=name, data="news20", setting=f"one problem, {epochs} epochs, tol 0",
                 loss=loss, settings=own, **time_solver(name, X, y, loss, rounds, tol=0.0,
                                                        max_epochs=epochs, **own))
        out.append(r)
        print(f"{name:18s} news20 {loss:8s} {epochs:3d} epochs {own or ''}: {_timings(r)}; "
              f"same coef {r['same_coef']}", flush=True)
    _save(out, json_path)
    return out
