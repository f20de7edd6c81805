"""The square-loss AUC surrogate of a linear model, its exact evaluation and its optimum
(spec seed2 sections 1.2-1.4).

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

from .._validation import check_csr, check_labels, check_positive, check_regularization, check_int, check_budget
from ..model import Model, make_history


def _class_moments(h, pos):
    hp, hn = h[pos], h[~pos]
    mp, mn = hp.mean(), hn.mean()
    vp = np.mean((hp - mp) ** 2)
    vn = np.mean((hn - mn) ** 2)
    return mp, mn, vp, vn


def pairwise_from_scores(h, pos):
    """P_n from scores h and a boolean positive mask, via the O(n) moment formula."""
    mp, mn, vp, vn = _class_moments(np.asarray(h, dtype=np.float64), pos)
    gap = mn - mp
    return 1.0 + vp + vn + gap * gap + 2.0 * gap


def _setup(X, y):
    Xc = check_csr(X)
    y_pm, classes = check_labels(y, Xc.shape[0], "binary")
    import scipy.sparse as sp
    Xs = sp.csr_matrix((Xc.data, Xc.indices, Xc.indptr), shape=Xc.shape, copy=False)
    return Xs, y_pm > 0, classes


def auc_surrogate_objective(X, y, w, lam=0.0):
    """Exact value of the square-loss AUC surrogate at ``w`` in O(nnz(X)).

    Returns ``(P_n, J)`` with the pairwise loss
    ``P_n(w) = (1/(n+ n-)) sum_{i in +} sum_{j in -} (1 - x_i.w + x_j.w)^2`` and the
    objective of the AUC solvers ``J(w) = p(1-p) (P_n(w) - 1) + (lam/2) ||w||^2``,
    ``p = n+/n`` (see ``dualsolve.auc.surrogate``).
    """
    Xs, pos, _ = _setup(X, y)
    lam = check_regularization(lam, None, Xs.shape[0], allow_zero=True)
    w = np.asarray(w, dtype=np.float64).ravel()
    if w.shape[0] != Xs.shape[1]:
        raise ValueError(f"w has {w.shape[0]} values but X has {Xs.shape[1]} features")
    p = pos.mean()
    Pn = pairwise_from_scores(Xs @ w, pos)
    return Pn, p * (1.0 - p) * (Pn - 1.0) + 0.5 * lam * float(w @ w)


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


def auc_surrogate_optimum(X, y, lam=0.0, *, tol=1e-12, max_iter=None):
    """The exact minimiser of the square-loss AUC surrogate of a linear model (spec seed2
    section 1.4), the reference the stochastic AUC solvers converge to.

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
    lam : float >= 0
    tol : float > 0
        CG stops when the residual norm is ``<= tol * ||mu+ - mu-||``.
    max_iter : int, optional
        Default ``10 * n_features + 100``.

    Returns
    -------
    Model
        ``coef`` = w*; ``params`` holds ``a``, ``b``, ``alpha``, ``p``, ``lam``,
        ``objective`` (J), ``pairwise`` (P_n), ``cg_iterations``; ``converged`` is CG's
        flag. No intercept (the pairwise loss is invariant to a shift of the scores).
    """
    Xs, pos, classes = _setup(X, y)
    n, d = Xs.shape
    lam = check_regularization(lam, None, n, allow_zero=True)
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
    h = Xs @ w
    a, b = h[pos].mean(), h[~pos].mean()
    Pn = pairwise_from_scores(h, pos)
    J = pq * (Pn - 1.0) + 0.5 * lam * float(w @ w)
    params = dict(a=float(a), b=float(b), alpha=float(b - a), p=p, lam=lam,
                  objective=float(J), pairwise=float(Pn), cg_iterations=int(iters), tol=tol)
    history = make_history([(0, 0.0, J, np.nan, np.nan)])
    return Model(coef=w, history=history, converged=ok, n_epochs=0,
                 solver="auc_surrogate_optimum", params=params, classes=classes)
