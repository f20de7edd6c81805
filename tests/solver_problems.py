"""The small problem every generated solver test runs on (the contract test, the relative
tol test): one per registered solver, for its first loss."""
import os
import signal
import threading
import time
import warnings

import numpy as np
import scipy.sparse as sp

import dualsolve as ds
from dualsolve._driver import solvers

REGISTRY = {s.function_name: s for s in solvers().values()}


def problem(name, n=120, d=12, seed=0):
    """A small dense-ish problem the solver's first loss accepts: labels in {-1, +1} or
    real targets."""
    s = REGISTRY[name]
    loss = s.losses[0]
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.5)
    w = rng.standard_normal(d)
    score = X @ w + 0.5 * rng.standard_normal(n)
    regression = s.task(loss, {}) == "regression"
    y = score if regression else np.where(score > 0, 1.0, -1.0)
    return sp.csr_matrix(X), y, loss


def train(name, X, y, **kw):
    """``dualsolve.<name>(X, y, **kw)`` with its convergence warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(ds, name)(X, y, **kw)


def subprocess_env(**extra):
    """os.environ plus ``extra`` for a child Python that imports the dualsolve under test
    (installed or built in place, not another copy on the path) and these helpers."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(ds.__file__)))
    path = [root, os.path.dirname(os.path.abspath(__file__))]
    path += [p for p in [os.environ.get("PYTHONPATH")] if p]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path), **extra)


def interrupted(fit, first=lambda info: info["epoch"] == 0):
    """Run ``fit(callback)`` and send a real SIGINT 0.3 s after the callback first sees an
    epoch for which ``first(info)`` holds (so that any set-up is over). Returns (the
    KeyboardInterrupt raised, seconds from the signal to it); AssertionError if none was."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    sent = []

    def interrupt():
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.3, interrupt)

    def start_the_timer(info):
        if first(info) and not timer.is_alive() and not sent:
            timer.start()

    try:
        try:
            fit(start_the_timer)
        except KeyboardInterrupt as exc:
            return exc, time.perf_counter() - sent[0]
        raise AssertionError("the fit ended without KeyboardInterrupt")
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)
