"""A step size too large for the data makes PPD-SG and PGA blow up (docs/auc.md,
anomalies): the run must stop with a ConvergenceWarning, not carry on silently."""
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
    X, y = _mammography()
    with pytest.warns(ConvergenceWarning, match="diverged"):
        m = train(X, y, eta0=1.0, gamma=1e3, lam=1e-5, n_stages=5)
    assert not m.converged
    assert len(m.history) < 6 and not np.isfinite(m.history["primal"][-1])


@pytest.mark.parametrize("train", [ds.train_ppd_sg, ds.train_pga])
def test_stable_step_gives_no_warning(train):
    X, y = _mammography()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m = train(X, y, eta0=0.05, gamma=1e3, lam=1e-5, n_stages=3)
    assert np.isfinite(m.history["primal"]).all()
