"""Euclidean projection onto a permutahedron, the dual step of SOREL (sort, then pool adjacent
violators, as in the SOREL paper)."""
import numpy as np

from dualsolve._core.isotonic import project_sorted_sigma as _project_sorted_sigma

from .spectra import _as_1d_float

__all__ = ["project_permutahedron"]


def _as_vector(a, name):
    arr = np.asarray(a)
    if arr.dtype == np.float32 and arr.ndim == 1:       # kept in float32 (sums in double)
        arr = np.ascontiguousarray(arr)
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinity")
        return arr
    return _as_1d_float(a, name)


def project_permutahedron(v, sigma):
    """Euclidean projection of ``v`` onto the permutahedron of ``sigma``.

    The permutahedron P(sigma) is the convex hull of all permutations of sigma; for a
    spectrum sigma it is the SOREL dual feasible set {lambda : lambda = P sigma, P doubly
    stochastic}. Returns argmin_{x in P(sigma)} ||x - v||^2, computed exactly in O(n log n):
    with perm the stable ascending order of v, s = v[perm] and sigma sorted ascending,

        x[perm] = s - isotonic_nondecreasing(s - sigma)

    (one sort and one pool-adjacent-violators pass).

    Parameters
    ----------
    v : array_like, shape (n,)
        The point to project (finite).
    sigma : array_like, shape (n,)
        Any finite real vector, in any order (P(sigma) does not depend on the order); it is
        not required to be a spectrum. Use :func:`check_spectrum` to enforce one.

    Returns
    -------
    x : ndarray, shape (n,)
        float32 when v and sigma are both float32 (sums still in double), else float64.
        sum(x) = sum(sigma) and x is order-preserving: v_i <= v_j implies x_i <= x_j (up to
        rounding).
    """
    z = _as_vector(v, "v")
    s = _as_vector(sigma, "sigma")
    if z.shape[0] == 0:
        raise ValueError("v must be non-empty")
    if s.shape[0] != z.shape[0]:
        raise ValueError(f"sigma has length {s.shape[0]} but v has length {z.shape[0]}")
    if z.dtype != s.dtype:
        z = z.astype(np.float64)
        s = s.astype(np.float64)
    return _project_sorted_sigma(z, np.sort(s))
