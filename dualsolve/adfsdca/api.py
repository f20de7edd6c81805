"""``train_dfsdca`` and ``train_adfsdca``: dual-free (adaptive) SDCA (spec seed3).

Validation, constants and the Model live here; the loops are in ``_dfsdca.pyx``.
"""
import warnings

import numpy as np
import scipy.sparse as sp

from .._validation import (ConvergenceWarning, check_csr, check_loss_and_labels, check_positive, check_regularization, check_int, check_budget, check_seed,
                           check_choice, warn_not_converged)
from ..model import Model, make_history, warm_start_dual
from . import _dfsdca

_STATUS = {0: "converged", 1: "max_epochs", 2: "stopped"}
_SMOOTH_LOSSES = ("logistic", "squared", "smooth_hinge", "squared_hinge")
_UNIFORM, _IMPORTANCE, _PLUS, _EXACT = 0, 1, 2, 3
_HISTORY_EXTRA = ("max_kappa", "dual_kind")

_OBJECTIVE = """
    Solves, with ``n`` rows ``x_i`` of X and ``w`` of length ``n_features``::

        min_w  P(w) = (1/n) sum_i phi(x_i.w; y_i) + (lam/2) ||w||^2

    with a smooth loss phi. "Dual free": a pseudo-dual ``alpha`` (n) is kept together
    with ``w = X^T alpha / (lam n)``; a step on coordinate i computes the dual residue
    ``kappa_i = alpha_i + phi'(x_i.w; y_i)`` (zero for every i at the optimum, where
    ``alpha_i = -phi'(x_i.w*)``) and moves ``alpha_i -= eta_i kappa_i`` and
    ``w -= eta_i kappa_i x_i / (lam n)`` (O(nnz of the row)). No conjugate is used by the
    steps; alpha may leave the conjugate's domain.

    Losses (``m = y x.w``, y in {-1, +1}) and their smoothness constants Lt:

    ``"logistic"``       log(1 + exp(-m))                                  Lt = 1/4
    ``"squared"``        (x.w - y)^2 / 2, y real                           Lt = 1
    ``"smooth_hinge"``   1 - m - s/2 if m < 1 - s; (1 - m)^2/(2s) if m < 1  Lt = 1/s
    ``"squared_hinge"``  max(0, 1 - m)^2                                   Lt = 2

    With ``v_i = ||x_i||^2``, ``gamma = lam Lt``, ``s_i = sqrt(v_i gamma + n lam^2)``.
"""

_COMMON_PARAMS = """    X : sparse matrix/array (n, n_features)
        CSR (``csr_matrix`` or ``csr_array``, float32/float64, int32/int64 indices) is used
        without a copy; dense and other formats are converted once.
    y : array (n,)
        Reals for ``loss="squared"``; two distinct values otherwise (the larger is +1).
    loss : {"logistic", "squared", "smooth_hinge", "squared_hinge"}
    lam : float > 0, optional
        L2 strength; default ``1/n``.
    smoothing : float > 0, optional
        Width s of the smoothed hinge (``loss="smooth_hinge"`` only; default 0.5).
    tol : float >= 0
        Stop when the gap certificate (below) is ``<= tol * P(0)``. At every check, P(w)
        is computed from fresh margins ``Xw``; the certificate is the duality gap
        ``P(w) - D(alpha)`` when every alpha_i lies in the domain of the conjugate, else
        ``P(w) - D(alphatilde)`` with the always feasible ``alphatilde = -phi'(Xw)`` and D
        evaluated at ``X^T alphatilde / (lam n)`` (spec 5.2 item 2). Both bound
        ``P(w) - P*``. Convergence is certified with w recomputed from alpha.
    max_epochs : int >= 0
        Budget in epochs of n coordinate steps.
    check_every : int >= 1
        Compute P and the certificate (one or two passes over X) every this many epochs
        (and at the last one); history has NaN in between.
    seed : int or None
        The same seed gives identical results.
    verbose : int
        1 prints one line per epoch: primal, dual, gap, max |kappa|, dual kind, seconds.
    callback : callable, optional
        ``callback(info)`` after every epoch with a dict (epoch, time, primal, dual, gap,
        max_kappa, dual_kind, coef: a read-only view of w); return True to stop. Ctrl-C
        stops cleanly too.
    warm_start : Model or array (n,), optional
        The pseudo-dual alpha to start from (``w`` is recomputed as ``X^T alpha/(lam n)``);
        default 0.
"""

_RETURNS = """
    Returns
    -------
    Model
        ``coef`` = w, ``dual`` = alpha (``w = X^T alpha / (lam n)``; at the optimum
        ``alpha_i = -phi'(x_i.w)``), ``history`` (one row per epoch, epoch 0 the start:
        epoch, time, primal, dual, gap, max_kappa = max_i |kappa_i| at w, dual_kind = 1
        when the gap is at (w, alpha), 0 when it is the alphatilde certificate; NaN for
        epochs without a check), ``converged``, ``n_epochs``; ``params`` holds the
        settings, ``theta`` (fixed methods: the theta in use; adaptive: the last one) and
        the stopping status.
"""


def _setup(X, y, loss, lam, smoothing, tol, max_epochs, check_every, seed, callback):
    Xc = check_csr(X)
    n, d = Xc.shape
    loss, param, y_int, classes = check_loss_and_labels(
        loss, smoothing, _SMOOTH_LOSSES, y, n, "dual-free SDCA", "it needs a smooth loss")
    lam = check_regularization(lam, None, n)
    tol = check_positive(tol, "tol", allow_zero=True)
    max_epochs = check_budget(max_epochs, "max_epochs", 0)
    check_every = check_int(check_every, "check_every", 1)
    seed = check_seed(seed)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable")
    return Xc, n, d, loss, param, y_int, classes, lam, tol, max_epochs, check_every, seed


def _run(solver, Xc, n, d, loss, param, y_int, classes, lam, tol, max_epochs, check_every,
         seed, method, shrink, step_cap, verbose, callback, warm_start, params, trace,
         batch_size=1, mb_sampler=0):
    alpha = warm_start_dual(warm_start, n)
    w = np.zeros(d)
    csc = None
    if method == _EXACT:
        C = sp.csr_matrix((Xc.data, Xc.indices, Xc.indptr), shape=(n, d)).tocsc()
        idx_dtype = Xc.indices.dtype
        csc = (np.ascontiguousarray(C.data, dtype=Xc.data.dtype),
               np.ascontiguousarray(C.indices, dtype=idx_dtype),
               np.ascontiguousarray(C.indptr, dtype=idx_dtype))
    indptr = Xc.indptr
    if indptr.dtype != Xc.indices.dtype:
        indptr = indptr.astype(Xc.indices.dtype)
    if trace is not None:
        if not (isinstance(trace, np.ndarray) and trace.dtype == np.intp and trace.ndim == 1
                and trace.flags.c_contiguous):
            raise TypeError("trace must be a 1-D contiguous intp array")
    status, n_epochs, primal, dual, gap, p0, theta, rows = _dfsdca._fit(
        Xc.data, Xc.indices, indptr, d, y_int, loss, param, lam, w, alpha,
        np.ascontiguousarray(Xc.sqnorm, dtype=np.float64), method, tol, max_epochs,
        check_every, seed, shrink, step_cap, int(verbose), callback, csc=csc, trace=trace,
        batch_size=batch_size, mb_sampler=mb_sampler)
    if status == 1 and not np.isfinite(gap):
        warnings.warn(f"{solver} diverged (non-finite iterates after {n_epochs} epochs); "
                      "with variant='plus' keep the default step_cap", ConvergenceWarning,
                      stacklevel=3)
    elif status == 1:
        warn_not_converged(solver, n_epochs, gap, tol * p0)
    params = dict(params, loss=loss, loss_param=param, lam=lam, tol=tol,
                  max_epochs=max_epochs, check_every=check_every, seed=seed, theta=theta,
                  p0=p0, status=_STATUS[status])
    return Model(coef=w, dual=alpha, history=make_history(rows, extra_fields=_HISTORY_EXTRA),
                 converged=status == 0, n_epochs=n_epochs, solver=solver, params=params,
                 classes=classes)


def train_dfsdca(X, y, *, loss="logistic", lam=None, smoothing=None, sampling="uniform",
                 tol=1e-6, max_epochs=100, check_every=1, seed=0, verbose=0, callback=None,
                 warm_start=None, _trace=None):
    Xc, n, d, loss, param, y_int, classes, lam, tol, max_epochs, check_every, seed = _setup(
        X, y, loss, lam, smoothing, tol, max_epochs, check_every, seed, callback)
    method = {"uniform": _UNIFORM, "importance": _IMPORTANCE}[
        check_choice(sampling, "sampling", ("uniform", "importance"))]
    return _run("dfsdca", Xc, n, d, loss, param, y_int, classes, lam, tol, max_epochs,
                check_every, seed, method, 1.0, 0.0, verbose, callback, warm_start,
                dict(sampling=sampling), _trace)


train_dfsdca.__doc__ = """Train a linear model by dual-free SDCA (Shalev-Shwartz 2016; spec
    seed3 sections 2.1-2.2).
""" + _OBJECTIVE + """
    Each epoch makes n steps. ``sampling="uniform"`` (dfSDCA): i uniform and
    ``eta = n theta``, ``theta = lam / (lam n + Lt max_i v_i)``; then ``eta < 1`` and
    every step is a convex combination of alpha_i and -phi'(x_i.w), so alpha stays in the
    conjugate's domain (y_i alpha_i in [0, 1] for logistic). ``sampling="importance"``
    (IS-dfSDCA, Csiba & Richtarik): fixed ``p_i ~ n lam + Lt v_i`` drawn from an alias
    table in O(1), ``theta = n lam / sum_j (n lam + Lt v_j)`` and ``eta_i = theta / p_i``;
    better than uniform when row norms are uneven.

    Parameters
    ----------
""" + _COMMON_PARAMS + """    sampling : {"uniform", "importance"}
""" + _RETURNS


_MB_SAMPLERS = {"alg3": 0, "systematic": 1}


def train_adfsdca(X, y, *, loss="logistic", lam=None, smoothing=None, variant="plus",
                  s=10.0, step_cap="auto", batch_size=1, mb_sampler="alg3", tol=1e-6,
                  max_epochs=100, check_every=1, seed=0, verbose=0, callback=None,
                  warm_start=None, _trace=None):
    Xc, n, d, loss, param, y_int, classes, lam, tol, max_epochs, check_every, seed = _setup(
        X, y, loss, lam, smoothing, tol, max_epochs, check_every, seed, callback)
    variant = check_choice(variant, "variant", ("plus", "exact"))
    batch_size = check_int(batch_size, "batch_size", 1)
    if batch_size > n:
        raise ValueError(f"batch_size must be <= n = {n} (the number of rows); "
                         f"got {batch_size}")
    if not isinstance(mb_sampler, str):
        raise TypeError(f"mb_sampler must be a string, one of {list(_MB_SAMPLERS)}; "
                        f"got {type(mb_sampler).__name__}")
    check_choice(mb_sampler, "mb_sampler", tuple(_MB_SAMPLERS))
    if batch_size > 1 and variant == "plus":
        raise ValueError(
            "batch_size > 1 needs variant='exact': mini-batch adfSDCA (Algorithm 4) "
            "recomputes the residues and probabilities at every iteration; the paper "
            "defines no mini-batch adfSDCA+ and its serial per-epoch probabilities "
            "already need a step cap to converge")
    shrink = check_positive(s, "s")
    if shrink < 1.0:
        raise ValueError(f"s must be >= 1 (p_i is divided by s after i is picked); got {shrink}")
    if isinstance(step_cap, str) or step_cap is None:
        check_choice(step_cap, "step_cap", ("auto", "coordinate", None))
        if step_cap == "auto":
            cap = 1.0 if variant == "plus" else 0.0
        else:
            cap = 1.0 if step_cap == "coordinate" else 0.0
    else:
        cap = check_positive(step_cap, "step_cap")
    method = _PLUS if variant == "plus" else _EXACT
    return _run("adfsdca", Xc, n, d, loss, param, y_int, classes, lam, tol, max_epochs,
                check_every, seed, method, shrink, cap, verbose, callback, warm_start,
                dict(variant=variant, s=shrink, step_cap=cap, batch_size=batch_size,
                     mb_sampler=mb_sampler), _trace, batch_size, _MB_SAMPLERS[mb_sampler])


train_adfsdca.__doc__ = """Train a linear model by adaptive dual-free SDCA (He, Tappenden &
    Takac 2018; spec seed3 sections 2.3-2.8), serial or with mini-batches.
""" + _OBJECTIVE + """
    The optimal probabilities for the current residues are
    ``p*_i = s_i |kappa_i| / sum_j s_j |kappa_j|`` with the step
    ``theta = n lam^2 sum_j kappa_j^2 / (sum_j s_j |kappa_j|)^2`` (Lemma 2) and
    ``eta_i = theta / p_i``; coordinates with kappa_i = 0 are never drawn.

    ``variant="plus"`` (adfSDCA+, Algorithm 2): at each epoch start all residues are
    recomputed (one pass over X), a sum-tree is built over ``u_j = s_j |kappa_j|`` and
    theta is fixed for the epoch; each of the n steps draws i from the tree (O(log n)),
    uses the fresh kappa_i and the current ``p_i = u_i / sum(u)``, and then divides u_i by
    ``s``. The paper's literal algorithm diverges on most problems (spec 2.5), so the
    relaxation is capped by default: ``eta_i <= n lam / (n lam + Lt v_i)``, the 1-D
    minimiser along coordinate i for the squared loss. Cost per epoch: about one dfSDCA
    epoch plus O(n log n).

    ``variant="exact"`` (adfSDCA, Algorithm 1): p* and theta of the current residues at
    every step. The margins Xw, the residues and two sum-trees (over s_j |kappa_j| and
    kappa_j^2) are kept current incrementally through a CSC copy of X (made here: this
    variant uses nnz(X) more memory), so a step on row i costs O(sum over the features f
    of x_i of nnz(column f) + touched rows * log n); everything is recomputed from w at
    every epoch start (no drift). On dense-ish data a step can cost a pass over X. No step
    cap by default (the theory does not need one; eta_i > 1 happens and is fine).

    ``batch_size=b > 1`` (mini-batch adfSDCA, Algorithm 4; ``variant="exact"`` only): an
    epoch is ceil(n/b) iterations. Each iteration computes every residue at the same w
    (margins kept current through the CSC copy, ``z = Xw`` recomputed at each epoch
    start), the ESO weights ``v'_i = min(b, omega) v_i`` (omega = the largest number of
    rows sharing a feature), ``u_i = sqrt(v'_i gamma + n lam^2) |kappa_i|``, marginals
    ``q_i = min(1, c u_i)`` water-filled to ``sum q = b``, a set S of exactly b distinct
    rows with ``P(i in S) = q_i`` and the step (75)
    ``theta = n lam^2 b sum kappa^2 / sum_i (n lam^2 + v'_i gamma) kappa_i^2 / p_i`` with
    ``p = q/b``; then every i in S moves ``alpha_i -= (theta/q_i) kappa_i`` (all computed
    at the same w: Jacobi) and w (and the margins) are updated serially in the order of
    S, so results are reproducible. When fewer than b residues are nonzero, b_eff =
    their number replaces b in that iteration (S is then every such row). Cost per
    iteration: O(n) residues + O(m log m) for sorting the m nonzero weights (none with
    ``mb_sampler="systematic"``) + O(sum over i in S, f in x_i of nnz(column f)) for the
    update of w and the margins. ``batch_size=1`` runs the serial algorithm above (same
    iterates for the same seed). Mini-batches of adfSDCA+ are rejected: the paper gives
    Algorithm 4 only with residues and probabilities refreshed every iteration, and
    adfSDCA+'s stale per-epoch probabilities already need a step cap serially (spec
    2.5); a mini-batch version would have neither theory nor a tested safeguard.

    Parameters
    ----------
""" + _COMMON_PARAMS + """    variant : {"plus", "exact"}
    s : float >= 1
        adfSDCA+ shrink factor (the paper's s; 1: probabilities fixed for the epoch).
    step_cap : "auto", "coordinate", None or float > 0
        Cap ``eta_i <= c n lam / (n lam + Lt v_i)`` with c = 1 ("coordinate") or the given
        float; None: no cap (adfSDCA+ can then diverge). "auto": "coordinate" for "plus",
        None for "exact".
        Mini-batches cap with the ESO weights: ``eta_i <= c n lam / (n lam + Lt v'_i)``.
    batch_size : int in [1, n]
        Rows updated per iteration (Algorithm 4, ``variant="exact"`` only); default 1.
    mb_sampler : {"alg3", "systematic"}
        How the mini-batch is drawn with marginals q: ``"alg3"``, the paper's Algorithm 3
        (corrected; a mixture of at most n sets "the top rows + a uniform subset of a tie
        block", every b-subset of the nonzero rows possible) after an O(m log m) sort;
        ``"systematic"``, Madow's systematic sampling over a random permutation (O(m), no
        sort, same marginals and |S| = b, which is all the convergence proof uses, but not
        every b-subset is possible).
""" + _RETURNS
