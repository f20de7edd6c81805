"""The small problem every generated solver test runs on (the contract test, the relative
tol test): one per registered solver, for its first loss."""
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
