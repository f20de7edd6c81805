"""Ctrl-C stops every long-running solver: a real SIGINT from a timer thread, delivered
while the compiled loop runs, must surface as KeyboardInterrupt within seconds (not be
printed as "Exception ignored" by a noexcept per-epoch hook while the run goes on)."""
import os
import signal
import threading
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds

BIG = 10 ** 8


def _problem():
    rng = np.random.default_rng(0)
    X = sp.random(2000, 300, density=0.05, format="csr", random_state=1,
                  data_rvs=rng.standard_normal)
    y = np.where(X @ rng.standard_normal(300) + 0.3 * rng.standard_normal(2000) >= 0, 1.0, -1.0)
    return X, y


RUNS = {
    "sdca": lambda X, y: ds.train_sdca(X, y, lam=1e-6, tol=0.0, max_epochs=BIG),
    "spdc": lambda X, y: ds.train_spdc(X, y, loss="logistic", lam=1e-6, tol=0.0,
                                       max_epochs=BIG),
    "adf_spdc": lambda X, y: ds.train_adf_spdc(X, y, loss="logistic", lam=1e-6, tol=0.0,
                                               max_epochs=BIG),
    "svrg": lambda X, y: ds.train_svrg(X, y, loss="logistic", lam=1e-6, tol=0.0,
                                       max_epochs=BIG),
    "adfsdca": lambda X, y: ds.train_adfsdca(X, y, lam=1e-6, tol=0.0, max_epochs=BIG),
    "sorel": lambda X, y: ds.train_sorel(X, y, loss="logistic", tol=0.0, max_epochs=BIG),
    "ppd_sg": lambda X, y: ds.train_ppd_sg(X, y, T0=BIG, tol=0.0, max_epochs=BIG),
    "ppd_adagrad": lambda X, y: ds.train_ppd_adagrad(X, y, T0=BIG, tol=0.0, max_epochs=BIG),
    "pga": lambda X, y: ds.train_pga(X, y, T0=BIG, tol=0.0, max_epochs=BIG),
    "solam": lambda X, y: ds.train_solam(X, y, tol=0.0, max_epochs=BIG),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_sigint_stops_the_run(name):
    X, y = _problem()
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    try:
        t0 = time.perf_counter()
        timer.start()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(KeyboardInterrupt):
                RUNS[name](X, y)
        assert time.perf_counter() - t0 < 20.0
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)
