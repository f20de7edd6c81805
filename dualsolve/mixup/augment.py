"""Mixup augmentation (Obi, Saito, Sasaki & Kato, 2025, eq. 1): mixed rows, soft labels and
the mixing matrix.

A mixed example is ``x = (1-r) x_a + r x_b`` with ``y = (1-r) y_a + r y_b``. Everything about
the augmented set follows from the *plan* ``(a, b, r)``: the mixing matrix ``M`` (originals
on top as the identity, one row ``(1-r) e_a + r e_b`` per mixed example) gives
``X_aug = M X``, ``y_aug = M y`` and the augmented linear Gram ``M (X X^T) M^T``, so the kernel
code never needs the mixed rows themselves (see ``dualsolve._core.kernels``).
"""
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .._validation import check_csr, check_labels, check_int, check_positive, check_seed

__all__ = ["mixup_augment", "MixupPlan"]

# labels this close to +-1 are +-1, so the |y| = 1 code paths of the losses trigger
# (docs/mixup.md, "Problem")
_SNAP = 1e-12


class MixupPlan(NamedTuple):
    """How the mixed examples were made: mixed example ``k`` is
    ``(1 - r[k]) x[a[k]] + r[k] x[b[k]]`` and is augmented row ``n_orig + k``.

    Attributes
    ----------
    a, b : int64 arrays (n_mix,)
        Indices of the two originals (``a[k] == b[k]`` is allowed).
    r : float64 array (n_mix,)
        Mixing ratios in [0, 1].
    n_orig : int
        Number of original examples.
    """
    a: np.ndarray
    b: np.ndarray
    r: np.ndarray
    n_orig: int

    @property
    def n_mix(self):
        """Number of mixed examples."""
        return int(self.a.shape[0])

    @property
    def n(self):
        """Size of the augmented set, ``n_orig + n_mix``."""
        return int(self.n_orig) + self.n_mix

    def matrix(self):
        """The ``(n_orig + n_mix) x n_orig`` CSR mixing matrix ``M`` (float64).

        Rows ``0..n_orig-1`` are the identity; row ``n_orig + k`` is
        ``(1 - r[k]) e_a[k] + r[k] e_b[k]``. Entries of a pair with ``a == b`` are summed into
        one (so that row is ``e_a``), zero weights (``r`` in {0, 1}) are not stored, and column
        indices are sorted.
        """
        n_o, m = int(self.n_orig), self.n_mix
        k = np.arange(m, dtype=np.int64) + n_o
        rows = np.concatenate([np.arange(n_o, dtype=np.int64), k, k])
        cols = np.concatenate([np.arange(n_o, dtype=np.int64), self.a, self.b])
        vals = np.concatenate([np.ones(n_o), 1.0 - self.r, self.r])
        M = sp.coo_matrix((vals, (rows, cols)), shape=(n_o + m, n_o)).tocsr()
        M.sum_duplicates()          # a == b: (1-r) + r in one entry
        M.eliminate_zeros()         # r = 0 or 1: the unused original is not an entry
        return M


def mixup_augment(X, y, n_mix, mixup_alpha=1.0, seed=0, materialize=True):
    """Append ``n_mix`` mixup examples to ``(X, y)`` (eq. 1 of Obi et al., 2025).

    Pairs ``(a, b)`` are drawn independently and uniformly, with replacement, from the
    originals; the ratio ``r ~ Beta(mixup_alpha, mixup_alpha)``; the new example is
    ``x = (1-r) x_a + r x_b`` with label ``y = (1-r) y_a + r y_b``. A same-class pair gets
    exactly ``y_a`` (the floating-point combination may miss +-1), and any label with
    ``|y| >= 1 - 1e-12`` is snapped to ``sign(y)`` (see docs/mixup.md).

    Parameters
    ----------
    X : sparse matrix/array or array-like (n_orig, n_features)
        Anything :func:`dualsolve._validation.check_csr` accepts (float32/float64 data,
        int32/int64 indices, unsorted indices).
    y : array (n_orig,)
        Two distinct values; the larger becomes +1 and the other -1 (``{-1, +1}`` is kept).
    n_mix : int >= 0
        Number of mixed examples to append.
    mixup_alpha : float > 0
        Parameter of the symmetric Beta distribution of the ratios (1.0: uniform).
    seed : int or None
        Seed of ``numpy.random.default_rng``; the same seed gives the same plan. None draws
        a fresh seed.
    materialize : bool
        Build ``X_aug`` (False returns None for it: the kernel code works from ``X`` and the
        plan alone).

    Returns
    -------
    X_aug : csr_matrix (n_orig + n_mix, n_features), float64, or None
        ``M @ X``: the originals first, then the mixed rows; sorted indices, no duplicates.
    y_aug : float64 array (n_orig + n_mix,)
        The original labels in {-1, +1}, then the mixed labels in [-1, 1].
    plan : MixupPlan
        ``(a, b, r, n_orig)``; ``plan.matrix()`` is the mixing matrix ``M``.

    Examples
    --------
    >>> X, y = dualsolve.datasets.load("heart_scale")
    >>> X_aug, y_aug, plan = mixup_augment(X, y, n_mix=500, seed=0)
    >>> X_aug.shape[0] == X.shape[0] + 500
    True
    """
    Xc = check_csr(X, "X")
    n_o = Xc.shape[0]
    y_o, _ = check_labels(y, n_o, "binary", "y")
    n_mix = check_int(n_mix, "n_mix", 0)
    mixup_alpha = check_positive(mixup_alpha, "mixup_alpha")
    if not isinstance(materialize, (bool, np.bool_)):
        raise TypeError(f"materialize must be a bool; got {type(materialize).__name__}")
    rng = np.random.default_rng(check_seed(seed))
    a = rng.integers(0, n_o, size=n_mix, dtype=np.int64)
    b = rng.integers(0, n_o, size=n_mix, dtype=np.int64)
    r = rng.beta(mixup_alpha, mixup_alpha, size=n_mix).astype(np.float64, copy=False)
    plan = MixupPlan(a, b, r, n_o)

    ya, yb = y_o[a], y_o[b]
    y_mix = np.where(ya == yb, ya, (1.0 - r) * ya + r * yb)
    y_mix = np.where(np.abs(y_mix) >= 1.0 - _SNAP, np.sign(y_mix), y_mix)
    y_aug = np.concatenate([y_o, y_mix])

    X_aug = None
    if materialize:
        Xo = sp.csr_matrix((Xc.data, Xc.indices, Xc.indptr), shape=Xc.shape)
        X_aug = sp.csr_matrix(plan.matrix() @ Xo, dtype=np.float64)
        X_aug.sum_duplicates()      # also sorts the indices
    return X_aug, y_aug, plan
