"""A step size too large for the data makes PPD-SG and PGA blow up (docs/auc.md): the run
stops with stop_reason "diverged" and a ConvergenceWarning naming the step to change, never
carries on silently; a stable step does not trip the watch."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds
from dualsolve._validation import ConvergenceWarning


def _mammography():
    X, y = ds.datasets.load("mammography")
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    X = (X - X.mean(0)) / X.std(0) / np.sqrt(X.shape[1])
    return sp.csr_matrix(X), y


@pytest.mark.parametrize("train", [ds.train_ppd_sg, ds.train_pga])
def test_divergence_stops_with_a_warning(train):
    """(PPD-AdaGrad moves a coordinate by at most step G / (delta + ||g||) <= step sqrt(t) in
    t steps: it does not blow up even at step = 100; SOLAM's iterates stay in its balls.)"""
    X, y = _mammography()
    with pytest.warns(ConvergenceWarning, match="diverged at epoch .*decrease step"):
        m = train(X, y, step=1.0, prox_gamma=1e3, lam=1e-5, max_epochs=50)
    assert m.stop_reason == "diverged" and not m.converged
    pq = (y > 0).mean() * (1 - (y > 0).mean())
    last = m.history["primal"][-1]
    assert not np.isfinite(last) or last > 1e4 * pq             # the watch's threshold
    assert m.n_epochs < 50 and m.history["epoch"][-1] == m.n_epochs


@pytest.mark.parametrize("train", [ds.train_ppd_sg, ds.train_pga])
def test_stable_step_gives_no_divergence(train):
    X, y = _mammography()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = train(X, y, step=0.05, prox_gamma=1e3, lam=1e-5, max_epochs=13)
    assert not [w for w in caught if "diverged" in str(w.message)]
    assert m.stop_reason in ("converged", "max_epochs")
    J = m.history["primal"]
    assert np.isfinite(J[~np.isnan(J)]).all()
