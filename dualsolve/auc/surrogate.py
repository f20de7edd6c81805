"""The square-loss AUC surrogate of a linear model, its exact evaluation and its optimum
(Liu, Yuan, Ying & Yang 2020, Proposition 1 and its appendix A.1; docs/auc.md).

For scores ``h = Xw``, positives P and negatives N (``n+ = |P|``, ``n- = |N|``,
``p = n+/n``), the pairwise surrogate is

    P_n(w) = (1/(n+ n-)) sum_{i in P} sum_{j in N} (1 - h_i + h_j)^2
           = 1 + V+ + V- + (m- - m+)^2 + 2 (m- - m+)

with the class means m+, m- and (biased) variances V+, V- of h: O(nnz(X)), no pairs. The
saddle form solved by the stochastic methods eliminates to

    min_{a,b} max_alpha (1/n) sum_i F(w, a, b, alpha; z_i) = p(1-p) (P_n(w) - 1),

so the regularised objective of dualsolve's AUC family is

    J(w) = p(1-p) (P_n(w) - 1) + (lam/2) ||w||^2,

minimised (a, b, alpha at their closed forms ``a = m+``, ``b = m-``, ``alpha = m- - m+``).
"""
import numpy as np
import scipy.sparse as sp

from .._validation import (check_budget, check_csr, check_labels, check_positive,
                           check_regularization)
from ..model import Model, make_history
from . import _ppd


def _setup(X, y, lam):
    Xc = check_csr(X)
    y_pm, classes = check_labels(y, Xc.shape[0], "binary")
    lam = check_regularization(lam, None, Xc.shape[0], allow_zero=True)
    return Xc, y_pm, classes, lam


def _evaluate(Xc, y_pm, w, lam):
    indptr = Xc.indptr if Xc.indptr.dtype == Xc.indices.dtype else Xc.indptr.astype(Xc.indices.dtype)
    return _ppd.evaluate(Xc.data, Xc.indices, indptr, Xc.shape[1], y_pm, w, lam)


def auc_surrogate_objective(X, y, w, lam=None):
    """Exact value of the square-loss AUC surrogate at ``w`` in O(nnz(X)).

    Returns ``(P_n, J)`` with the pairwise loss
    ``P_n(w) = (1/(n+ n-)) sum_{i in +} sum_{j in -} (1 - x_i.w + x_j.w)^2`` and the
    objective of the AUC solvers ``J(w) = p(1-p) (P_n(w) - 1) + (lam/2) ||w||^2``,
    ``p = n+/n``, lam default ``1/n`` as in the solvers (see ``dualsolve.auc.surrogate``).
    Computed as the solvers' certificate is: class moments of the scores by compensated
    sums.
    """
    Xc, y_pm, _, lam = _setup(X, y, lam)
    w = np.asarray(w, dtype=np.float64).ravel()
    if w.shape[0] != Xc.shape[1]:
        raise ValueError(f"w has {w.shape[0]} values but X has {Xc.shape[1]} features")
    ev = _evaluate(Xc, y_pm, np.ascontiguousarray(w), lam)
    return ev["pairwise"], ev["J"]


def _cg(apply, rhs, tol, max_iter):
    """Conjugate gradients for a symmetric PSD operator from x = 0; stops when
    ||r|| <= tol ||rhs||. Returns (x, iterations, converged)."""
    x = np.zeros_like(rhs)
    r = rhs.copy()
    pdir = r.copy()
    rr = r @ r
    stop = (tol * np.sqrt(rhs @ rhs)) ** 2
    if rr <= stop:
        return x, 0, True
    for it in range(1, max_iter + 1):
        Ap = apply(pdir)
        pAp = pdir @ Ap
        if not pAp > 0:
            return x, it, rr <= stop
        step = rr / pAp
        x += step * pdir
        r -= step * Ap
        rr_new = r @ r
        if rr_new <= stop:
            return x, it, True
        pdir = r + (rr_new / rr) * pdir
        rr = rr_new
    return x, max_iter, False


def auc_surrogate_optimum(X, y, lam=None, *, tol=1e-12, max_iter=None):
    """The exact minimiser of the square-loss AUC surrogate of a linear model, the
    reference the stochastic AUC solvers converge to.

    Objective, with ``p = n+/n``, class means ``mu+``, ``mu-`` of the rows and
    ``h_i = x_i.w``::

        J(w) = p(1-p) (P_n(w) - 1) + (lam/2) ||w||^2,
        P_n(w) = (1/(n+ n-)) sum_{i in +} sum_{j in -} (1 - h_i + h_j)^2
               = 1 + w^T Q w + 2 (mu- - mu+)^T w,    Q = S+ + S- + (mu- - mu+)(mu- - mu+)^T

    (S+, S-: biased class covariances), so the minimiser solves

        (Q + lam / (2 p (1-p)) I) w* = mu+ - mu-,

    here by conjugate gradients with Q applied through X (two sparse products per
    iteration, no d x d matrix). With lam = 0 and a singular Q, CG from 0 returns the
    minimum-norm minimiser (mu+ - mu- lies in the range of Q). The saddle variables at the
    optimum are ``a* = mean_+(X w*)``, ``b* = mean_-(X w*)``, ``alpha* = b* - a*``.

    Parameters
    ----------
    X : sparse matrix/array (n, n_features)
    y : array (n,) with two distinct values (the larger is the positive class)
    lam : float >= 0, optional
        Default ``1/n``, as in the solvers.
    tol : float > 0
        CG stops when the residual norm is ``<= tol * ||mu+ - mu-||``.
    max_iter : int, optional
        Default ``10 * n_features + 100``.

    Returns
    -------
    Model
        ``coef`` = w*; ``params`` holds ``saddle_a``, ``saddle_b``, ``saddle_alpha``,
        ``p``, ``lam``, ``objective`` (J), ``pairwise`` (P_n), ``gap`` (the solvers'
        certificate at w*, ``||grad J||^2 / (2 lam)``), ``cg_iterations``;
        ``stop_reason`` is "converged" when CG reached its tolerance, else "max_epochs".
        No intercept (the pairwise loss is invariant to a shift of the scores).
    """
    Xc, y_pm, classes, lam = _setup(X, y, lam)
    Xs = sp.csr_matrix((Xc.data, Xc.indices, Xc.indptr), shape=Xc.shape, copy=False)
    pos = y_pm > 0
    n, d = Xs.shape
    tol = check_positive(tol, "tol")
    max_iter = 10 * d + 100 if max_iter is None else check_budget(max_iter, "max_iter", 1)
    n_pos = int(pos.sum())
    n_neg = n - n_pos
    p = n_pos / n
    pq = p * (1.0 - p)
    ind_pos = pos.astype(np.float64)
    mu_pos = Xs.T @ ind_pos / n_pos
    mu_neg = Xs.T @ (1.0 - ind_pos) / n_neg
    dvec = mu_neg - mu_pos
    shift = lam / (2.0 * pq)

    def apply(v):
        z = Xs @ v
        zp = z[pos].mean()
        zn = z[~pos].mean()
        r = np.where(pos, (z - zp) / n_pos, (z - zn) / n_neg)
        return Xs.T @ r + dvec * (dvec @ v) + shift * v

    w, iters, ok = _cg(apply, mu_pos - mu_neg, tol, max_iter)
    ev = _evaluate(Xc, y_pm, w, lam)
    a, b = ev["mean_pos"], ev["mean_neg"]
    params = dict(saddle_a=a, saddle_b=b, saddle_alpha=b - a, p=p, lam=lam,
                  objective=ev["J"], pairwise=ev["pairwise"], gap=ev["measure"],
                  cg_iterations=int(iters), tol=tol)
    history = make_history([(0, 0.0, ev["J"], np.nan, ev["measure"])])
    return Model(coef=w, history=history, stop_reason="converged" if ok else "max_epochs",
                 n_epochs=0, solver="auc_surrogate_optimum", params=params, classes=classes)
