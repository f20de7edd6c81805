"""The dual-free SDCA test problems F1-F3 (docs/adfsdca.md, "Tests"), built with NumPy;
shared by the dual-free SDCA test files (loaded by path through the ``adf_fixtures`` fixture
of conftest.py)."""
import numpy as np
import scipy.sparse as sp


def _labels(rng, X):
    w_true = rng.standard_normal(X.shape[1])
    y = np.sign(X @ w_true + 0.3 * rng.standard_normal(X.shape[0]))
    y[y == 0] = 1.0
    return y


def make_f1(seed=0, unit=False, n=200, d=20):
    """F1: dense Gaussian, 50% zeros, row norms log-uniform in [0.1, 10] (F2: unit norms)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.5)
    X[np.abs(X).sum(axis=1) == 0, 0] = 1.0
    norms = np.ones(n) if unit else 10.0 ** rng.uniform(-1, 1, size=n)
    X *= (norms / np.linalg.norm(X, axis=1))[:, None]
    return sp.csr_matrix(X), _labels(rng, X)


def make_f3(seed=0, n=2000, d=100):
    """F3: w8a-like binary sparse rows, densities uniform in [2%, 20%]."""
    rng = np.random.default_rng(seed)
    dens = rng.uniform(0.02, 0.2, size=n)
    X = (rng.random((n, d)) < dens[:, None]).astype(np.float64)
    return sp.csr_matrix(X), _labels(rng, X)
