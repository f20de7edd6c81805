"""Certified reference optimum of a spectral-risk problem (the squared loss).

    F(w) = R_sigma(l(w)) + (lam/2) ||w||^2,     l_i(w) = (x_i.w - y_i)^2 / 2

is solved through its dual over the permutahedron Pi_sigma,

    D(lambda) = min_w  sum_i lambda_i l_i(w) + (lam/2) ||w||^2   (concave, grad D = l(w(lambda))),

by accelerated projected gradient ascent (FISTA with a backtracked Lipschitz estimate and
function-value restarts), with an exact dense inner solve. Every evaluated lambda gives a
primal point w(lambda) and a lower bound on F*, so the result carries a certificate.
Dense NumPy/SciPy: meant for the small data sets of the tests and benchmarks.
"""
import math

import numpy as np
import scipy.linalg as sla

from .._validation import (check_budget, check_choice, check_csr, check_labels, check_positive,
                           check_regularization)
from .projection import project_permutahedron
from .spectra import resolve_spectrum

__all__ = ["spectral_reference", "SpectralReference"]

#: refuse the dense solve above this many matrix entries (n * min(n, d))
_MAX_DENSE = 5e7


class SpectralReference:
    """Result of :func:`spectral_reference`.

    Attributes
    ----------
    coef : ndarray (d,)      the best primal point found (smallest F)
    primal : float           F(coef), an upper bound on F*
    dual : float             a certified lower bound on F*
    gap : float              primal - dual >= F(coef) - F* >= 0 (up to rounding of F itself)
    loss_weights : ndarray (n,)  the dual point lambda (in Pi_sigma) that gave ``dual``
    dist_bound : float       sqrt(2 gap / lam) >= ||coef - w*|| (lam-strong convexity)
    n_iter : int             dual iterations run
    converged : bool         gap <= tol * max(|primal|, tiny)
    sigma : ndarray (n,)     the spectrum used (ascending)
    lam : float              the L2 strength
    """

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        return (f"SpectralReference(primal={self.primal!r}, dual={self.dual!r}, "
                f"gap={self.gap:.3e}, n_iter={self.n_iter}, converged={self.converged})")


def _as_dense(X):
    Xc = check_csr(X)
    n, d = Xc.shape
    if n * min(n, d) > _MAX_DENSE:
        raise ValueError(f"X of shape {(n, d)} is too large for the dense reference solver "
                         f"(n * min(n, d) must be <= {_MAX_DENSE:.0e})")
    import scipy.sparse as sp
    A = sp.csr_matrix((np.asarray(Xc.data, dtype=np.float64), Xc.indices, Xc.indptr),
                      shape=(n, d)).toarray()
    return A, n, d


class _Squared:
    """The inner solve and the oracles for the squared loss, with the dual certificate."""

    def __init__(self, A, y, lam):
        self.A, self.y, self.lam = A, y, lam
        self.n, self.d = A.shape
        self.G = A @ A.T if self.d > self.n else None      # n x n Gram when d > n

    def solve(self, weights):
        A, y, lam = self.A, self.y, self.lam
        if self.G is None:
            H = A.T @ (weights[:, None] * A)
            H[np.diag_indices_from(H)] += lam
            try:
                w = sla.cho_solve(sla.cho_factor(H), A.T @ (weights * y))
            except np.linalg.LinAlgError:                   # weights with tiny negatives
                w = np.linalg.solve(H, A.T @ (weights * y))
        else:
            # w = A^T Lam (A A^T Lam + lam I)^{-1} y  (push-through identity)
            M = self.G * weights[None, :]
            M[np.diag_indices_from(M)] += lam
            w = A.T @ (weights * np.linalg.solve(M, y))
        # one step of iterative refinement on the optimality condition
        r = A @ w - y
        g = A.T @ (weights * r) + lam * w
        if self.G is None:
            w = w - np.linalg.solve(H, g)
        return w

    def losses(self, w):
        r = self.A @ w - self.y
        return 0.5 * r * r, r

    def lower_bound(self, weights, w, l, r):
        """L(w, weights) - ||grad_w L(w, weights)||^2 / (2 lam) <= D(weights) (lam-strong
        convexity of L(., weights)), so the bound holds whatever the accuracy of the inner
        solve."""
        g = self.A.T @ (weights * r) + self.lam * w
        return float(weights @ l + 0.5 * self.lam * (w @ w) - (g @ g) / (2.0 * self.lam))


def _primal(l, sigma, w, lam):
    return float(np.dot(sigma, np.sort(l)) + 0.5 * lam * (w @ w))


def spectral_reference(X, y, *, loss="squared", spectrum, spectrum_param=None, lam=None,
                       tol=1e-14, max_iter=20000, start_weights=None):
    """Certified optimum of ``min_w R_sigma(l(w)) + (lam/2)||w||^2``.

    The objective is ``F(w) = sum_i sigma_i l_[i](w) + (lam/2)||w||^2`` with the losses
    ``l_i(w) = (x_i.w - y_i)^2 / 2`` sorted ascending and no intercept. The dual
    ``D(lambda) = min_w lambda^T l(w) + (lam/2)||w||^2`` over the permutahedron of sigma is
    maximised by FISTA (projected with :func:`project_permutahedron`, backtracked step,
    restart when D decreases). The inner minimiser ``w(lambda)`` is a dense Cholesky solve
    with one refinement step, and the lower bound at lambda is taken as
    ``L(w, lambda) - ||grad_w L(w, lambda)||^2 / (2 lam) <= D(lambda)``, so it does not
    rely on the inner solve being exact. The primal side is the best ``F(w(lambda))``
    seen. Since F is lam-strongly convex, ``||coef - w*||^2 <= 2 gap / lam``.

    Parameters
    ----------
    X : array or sparse matrix (n, d)    (made dense: small problems only)
    y : array (n,)                       real targets
    loss : "squared"                     the only loss implemented here
    spectrum : str or array (n,)
        "erm", "superquantile" (alias "cvar"), "extremile", "esrm" with ``spectrum_param``
        (defaults: the SOREL paper's 0.5, 2.5, 2.0), or explicit nondecreasing weights
        summing to 1.
    spectrum_param : float, optional
    lam : float > 0, optional             default 1/n
    tol : float >= 0
        Stop when ``gap <= tol * max(|primal|, 1e-300)``.
    max_iter : int
    start_weights : array (n,), optional  starting dual point lambda (projected); default 1/n

    Returns
    -------
    SpectralReference
        ``primal`` (upper bound), ``dual`` (certified lower bound), ``gap``, ``coef``,
        ``loss_weights``, ``dist_bound``, ``n_iter``, ``converged``, ``sigma``, ``lam``.

    The certificate is exact up to floating-point rounding in the evaluation of F and of
    the bound themselves (relative ~1e-15), and lambda lies in Pi_sigma up to the rounding
    of the projection (~1e-17 per entry).
    """
    A, n, d = _as_dense(X)
    check_choice(loss, "loss", ("squared",))
    yv, _ = check_labels(y, n, "regression")
    sigma = resolve_spectrum(spectrum, n, spectrum_param)
    lam = check_regularization(lam, None, n, "lam")
    tol = check_positive(tol, "tol", allow_zero=True)
    max_iter = check_budget(max_iter, "max_iter", 0)
    ora = _Squared(A, yv, lam)

    weights = (np.full(n, 1.0 / n) if start_weights is None
               else project_permutahedron(start_weights, sigma))
    w = ora.solve(weights)
    l, r = ora.losses(w)
    best_p, best_w = _primal(l, sigma, w, lam), w
    best_d, best_weights = ora.lower_bound(weights, w, l, r), weights
    D_weights = float(weights @ l + 0.5 * lam * (w @ w))

    z, g_z, D_z = weights, l, D_weights
    t = 1.0
    L = None
    it = 0
    converged = best_p - best_d <= tol * max(abs(best_p), 1e-300)
    while not converged and it < max_iter:
        it += 1
        if L is None:                                   # a first guess of the curvature
            probe = project_permutahedron(z + g_z / max(np.abs(g_z).max(), 1e-300) / n, sigma)
            dz = probe - z
            if np.any(dz):
                wp = ora.solve(probe)
                lp, _ = ora.losses(wp)
                L = max(np.linalg.norm(lp - g_z) / np.linalg.norm(dz), 1e-12)
            else:
                L = 1.0
        # backtracked projected gradient step from z (ascent)
        for _ in range(60):
            weights_new = project_permutahedron(z + g_z / L, sigma)
            step = weights_new - z
            w_new = ora.solve(weights_new)
            l_new, r_new = ora.losses(w_new)
            D_new = float(weights_new @ l_new + 0.5 * lam * (w_new @ w_new))
            nrm = float(step @ step)
            if nrm == 0.0:
                break
            # descent lemma for the concave D, written on gradients (robust to rounding
            # of D near the optimum): ||grad D(weights_new) - grad D(z)|| <= L ||weights_new - z||
            Lloc = float(np.linalg.norm(l_new - g_z)) / math.sqrt(nrm)
            if Lloc <= L * (1.0 + 1e-10):
                break
            L = max(2.0 * L, Lloc)
        p_new = _primal(l_new, sigma, w_new, lam)
        if p_new < best_p:
            best_p, best_w = p_new, w_new
        lb = ora.lower_bound(weights_new, w_new, l_new, r_new)
        if lb > best_d:
            best_d, best_weights = lb, weights_new
        converged = best_p - best_d <= tol * max(abs(best_p), 1e-300)
        if nrm == 0.0:                                  # stationary in Pi_sigma
            weights, D_weights = weights_new, D_new
            z, g_z, D_z = weights_new, l_new, D_new
            break
        # momentum, restarted when the dual value drops
        if D_new < D_weights:
            t = 1.0
            z_next = weights_new
        else:
            t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
            z_next = weights_new + ((t - 1.0) / t_next) * (weights_new - weights)
            t = t_next
        weights, D_weights = weights_new, D_new
        if z_next is weights_new:
            z, g_z, D_z = weights_new, l_new, D_new
        else:
            z = project_permutahedron(z_next, sigma)    # keep z in Pi_sigma (w(z) then exists)
            wz = ora.solve(z)
            g_z, _ = ora.losses(wz)
            D_z = float(z @ g_z + 0.5 * lam * (wz @ wz))
            pz = _primal(g_z, sigma, wz, lam)
            if pz < best_p:
                best_p, best_w = pz, wz
        L *= 0.9                                        # let the estimate shrink again
    gap = max(best_p - best_d, 0.0)
    return SpectralReference(coef=best_w, primal=best_p, dual=best_d, gap=gap,
                             loss_weights=best_weights, dist_bound=math.sqrt(2.0 * gap / lam),
                             n_iter=it, converged=bool(converged), sigma=sigma, lam=lam)
