"""``train_dfsdca`` and ``train_adfsdca``: dual-free SDCA (Shalev-Shwartz 2016; Csiba &
Richtarik 2015 for its importance sampling) and adaptive dual-free SDCA (He, Tappenden &
Takac 2018), serial or with mini-batches. The loops are in ``_dfsdca.pyx``; the methods,
their steps and the certificate are described in docs/adfsdca.md.
"""
import contextlib
import contextvars
import math

import numpy as np

from .._core import losses as _losses
from .._core import status as _status
from .._driver import Result, Solver, certified, fit, register, threshold
from .._params import Integral, Interval, Options, Real
from ..model import warm_start_dual
from . import _dfsdca

LOSSES = ("logistic", "squared", "smooth_hinge", "squared_hinge")
SAMPLING = {"uniform": 0, "importance": 1}                  # _dfsdca.pxd DF_UNIFORM, ...
VARIANT = {"plus": 2, "exact": 3}                           # DF_PLUS, DF_EXACT
BATCH_SAMPLING = {"alg3": 0, "systematic": 1}               # _core/sampler.pxd MB_*
HISTORY = ("max_kappa", "dual_kind")


def train_dfsdca(X, y, *, loss="logistic", lam=None, C=None, tol=1e-6, max_epochs=5000,
                 seed=0, verbose=0, callback=None, warm_start=None, n_jobs=1, smoothing=None,
                 sampling="uniform", check_every=1, sample_weight=None, class_weight=None):
    """Train a linear model by dual-free SDCA (dfSDCA, Shalev-Shwartz 2016), with uniform or
    fixed importance sampling (IS-dfSDCA, Csiba & Richtarik 2015).

    Solves, with ``n`` rows ``x_i`` of X and ``w`` of length ``n_features``::

        min_w  P(w) = (1/n) sum_i c_i phi(x_i.w; y_i) + (lam/2) ||w||^2

    for a smooth loss phi (``c_i = 1`` unless ``sample_weight`` / ``class_weight`` say
    otherwise). "Dual free": a pseudo-dual ``alpha`` (n) is kept together with
    ``w = X^T alpha / (lam n)``; a step on row i computes the dual residue
    ``kappa_i = alpha_i + c_i phi'(x_i.w; y_i)`` (zero for every i at the optimum, where
    ``alpha_i = -c_i phi'(x_i.w*)``) and moves ``alpha_i -= eta_i kappa_i`` and
    ``w -= eta_i kappa_i x_i / (lam n)``: one sparse dot and one sparse axpy, no conjugate.
    Each epoch makes n steps on rows drawn with replacement.

    ``sampling="uniform"`` (dfSDCA): i uniform, ``eta = n theta``,
    ``theta = lam / (lam n + Lt max_i v_i)``. ``sampling="importance"`` (IS-dfSDCA): fixed
    ``p_i ~ n lam + Lt v_i`` (an alias table, O(1) per draw),
    ``theta = n lam / sum_j (n lam + Lt v_j)`` and ``eta_i = theta / p_i``; faster when the
    row norms are uneven. Both steps are the theory's (He et al. 2018, the remarks after
    Corollary 1) and scale with the data: ``v_i = ||x_i||^2`` and the loss's smoothness
    ``Lt``; both keep ``eta_i < 1``, so every step is a convex combination of alpha_i and
    -c_i phi'(x_i.w) and never overshoots. With weights, row i's loss is ``c_i Lt`` smooth
    and every ``Lt v_i`` above (and in :func:`train_adfsdca`) becomes ``c_i Lt v_i``; rows
    of weight 0 are never drawn.

    Losses (``m = y x.w``, y in {-1, +1}) and their smoothness constants Lt:

    ``"logistic"``       log(1 + exp(-m))                                  Lt = 1/4
    ``"squared"``        (x.w - y)^2 / 2, y real                           Lt = 1
    ``"smooth_hinge"``   1 - m - s/2 if m < 1 - s; (1 - m)^2/(2s) if m < 1  Lt = 1/s
    ``"squared_hinge"``  max(0, 1 - m)^2                                   Lt = 2

    Parameters
    ----------
    X : sparse matrix/array (n, n_features)
        CSR (``csr_matrix`` or ``csr_array``, float32/float64, int32/int64 indices,
        unsorted indices allowed) is used without a copy; dense and other formats are
        converted once.
    y : array (n,)
        Reals for ``loss="squared"``; two distinct values otherwise (the larger is +1).
    loss : {"logistic", "squared", "smooth_hinge", "squared_hinge"}
    lam : float > 0, optional
        L2 strength; default ``1/n``. Give ``lam`` or ``C``, not both.
    C : float > 0, optional
        liblinear's cost: ``lam = 1 / (C n)``.
    tol : float >= 0
        Stop when the certificate G is ``<= tol * (P(w) - G)`` (``stop_reason="converged"``;
        G bounds ``P(w) - P*``, so ``(P(w) - P*) / P* <= tol``), or at the rounding floor,
        64 ulps of P(0). At every check P(w) is computed from fresh margins ``Xw``;
        the certificate is the duality gap ``P(w) - D(alpha)`` when every alpha_i lies in
        the domain of the conjugate, else ``P(w) - D(alphatilde)`` with the always
        feasible ``alphatilde = -c phi'(Xw)`` and D evaluated at
        ``X^T alphatilde / (lam n)`` (weak duality makes both upper bounds; with weights
        ``D(alpha) = -(1/n) sum_i c_i h(alpha_i / c_i) - (lam/2) ||X^T alpha / (lam n)||^2``,
        h the conjugate term of the loss, and P(0) = (1/n) sum_i c_i phi(0)). Convergence
        is certified with w recomputed from alpha. ``tol=0`` runs the whole budget.
    max_epochs : int >= 0
        Epochs of n steps; ending here warns (ConvergenceWarning) with the certificate
        reached. The default is large enough for unscaled data such as w8a with
        ``loss="squared_hinge"`` (about 1,600 uniform epochs).
    seed : int or None
        The same seed gives identical results.
    verbose : int
        1 prints one line per epoch: primal, dual, gap, max |kappa|, dual kind, seconds.
    callback : callable, optional
        ``callback(info)`` after every epoch with a dict (epoch, time, primal, dual, gap,
        max_kappa, dual_kind, coef: a read-only view of w); return True to stop
        (``stop_reason="callback"``). An exception it raises reaches the caller.
    warm_start : Model or array (n,), optional
        The pseudo-dual alpha to start from (``w`` is recomputed as
        ``X^T alpha / (lam n)``); default 0. Any real alpha is allowed, except nonzero
        values on rows of weight 0 (a ValueError).
    n_jobs : int or None
        Threads (default 1, -1 every core; ``docs/api.md``, "Threads"): one-vs-rest
        classes run side by side, the same model as with ``n_jobs=1``, bit for bit. One
        problem on X of 2^18 nonzeros or more: each check's pass over X (every
        ``check_every`` epochs) in ``n_jobs`` blocks of rows, the steps serial; the checks
        only read the iterates, so the iterates are one thread's.
    smoothing : float > 0, optional
        Width s of the smoothed hinge (``loss="smooth_hinge"`` only; default 0.5).
    sampling : {"uniform", "importance"}
        How rows are drawn (always with replacement; ``train_sdca``'s "sampling" chooses
        between a permutation and uniform draws, the same idea).
    check_every : int >= 1
        Compute P and the certificate (one or two passes over X) every this many epochs
        (and at the last one); ``history`` has NaN in between.
    sample_weight : array (n,) of reals >= 0, optional
        Row weights ``c_i``; an integer weight equals repeating the row (at the same ``C``).
        A row of weight 0 is left out (its alpha_i stays 0; it is never drawn).
    class_weight : dict label -> weight >= 0, or "balanced", optional
        Multiplies each row's weight by its class's (liblinear's ``-wi``); ``"balanced"``
        gives class c the weight ``n / (k n_c)``. With more than two classes each row keeps
        its own class's weight in every one-vs-rest problem (as in :func:`train_sdca`).

    Returns
    -------
    Model
        ``coef`` = w, ``dual`` = alpha (``w = X^T alpha / (lam n)``; at the optimum
        ``alpha_i = -phi'(x_i.w)``), ``history`` (one row per epoch, epoch 0 the start:
        epoch, time, primal, dual, gap, max_kappa = max_i |kappa_i| at w, dual_kind = 1
        when the gap is at (w, alpha), 0 when it is the alphatilde certificate; NaN for
        epochs without a check), ``stop_reason``, ``n_epochs``; ``params`` holds the
        settings, ``theta`` (the fixed theta in use) and ``p0`` = P(0).
    """
    return fit(DFSDCA, locals())


def train_adfsdca(X, y, *, loss="logistic", lam=None, C=None, tol=1e-6, max_epochs=5000,
                  seed=0, verbose=0, callback=None, warm_start=None, n_jobs=1, smoothing=None,
                  variant="plus", prob_shrink=10.0, step_cap="auto", batch_size=1,
                  batch_sampling="alg3", check_every=1, sample_weight=None, class_weight=None):
    """Train a linear model by adaptive dual-free SDCA (He, Tappenden & Takac 2018), serial
    (adfSDCA+, Algorithm 2; adfSDCA, Algorithm 1) or with mini-batches (Algorithm 4).

    Minimises the ``P(w)`` of :func:`train_dfsdca` with its dual-free steps, drawing rows
    with adaptive probabilities from the dual residues kappa: with ``v_i = ||x_i||^2``,
    ``gamma = lam Lt`` and ``s_i = sqrt(v_i gamma + n lam^2)``, the optimal probabilities
    for the current residues are ``p*_i = s_i |kappa_i| / sum_j s_j |kappa_j|`` with the step
    ``theta = n lam^2 sum_j kappa_j^2 / (sum_j s_j |kappa_j|)^2`` (Lemma 2) and
    ``eta_i = theta / p_i``; rows with kappa_i = 0 are never drawn.

    ``variant="plus"`` (adfSDCA+, Algorithm 2): at each epoch start all residues are
    recomputed (one pass over X), a sum-tree is built over ``u_j = s_j |kappa_j|`` and theta
    is fixed for the epoch; each of the n steps draws i from the tree (O(log n)), uses the
    fresh kappa_i and the current ``p_i = u_i / sum(u)``, and then divides u_i by
    ``prob_shrink`` (the paper's s). The paper's literal algorithm diverged on every problem
    we tried, so its relaxation is capped by default: ``eta_i <= n lam / (n lam + Lt v_i)``,
    the 1-D minimiser along coordinate i for the squared loss. Cost per epoch: about one
    dfSDCA epoch plus O(n log n).

    ``variant="exact"`` (adfSDCA, Algorithm 1): p* and theta of the current residues at
    every step. The margins Xw, the residues and two sum-trees (over s_j |kappa_j| and
    kappa_j^2) are kept current through a CSC copy of X (made by the solver: nnz(X) more
    memory), so a step on row i costs O(sum over the features f of x_i of nnz(column f) +
    touched rows * log n); everything is recomputed from w at every epoch start. On
    dense-ish data a step costs about a pass over X. No step cap by default (the theory
    does not need one; eta_i > 1 happens and is fine).

    ``batch_size=b > 1`` (mini-batch adfSDCA, Algorithm 4; ``variant="exact"`` only): an
    epoch is ceil(n/b) iterations. Each iteration computes every residue at the same w, the
    ESO weights ``v'_i = min(b, omega) v_i`` (omega = the largest number of rows sharing a
    feature), ``u_i = sqrt(v'_i gamma + n lam^2) |kappa_i|``, marginals
    ``q_i = min(1, c u_i)`` water-filled to ``sum q = b``, a set S of exactly b distinct rows
    with ``P(i in S) = q_i`` and the step (75)
    ``theta = n lam^2 b sum kappa^2 / sum_i (n lam^2 + v'_i gamma) kappa_i^2 / p_i`` with
    ``p = q/b``; then every i in S moves ``alpha_i -= (theta/q_i) kappa_i`` (all computed at
    the same w) and w is updated in the order of S, so results are reproducible. When fewer
    than b residues are nonzero, their number replaces b in that iteration.
    ``batch_size=1`` runs the serial algorithm (the same iterates for the same seed).
    Mini-batches of adfSDCA+ are refused: the paper gives Algorithm 4 only with residues
    refreshed every iteration.

    Parameters
    ----------
    variant : {"plus", "exact"}
    prob_shrink : float >= 1
        adfSDCA+: a drawn row's probability is divided by this (the paper's s; 1 keeps the
        probabilities fixed for the epoch; the paper used 1, 10 and 20).
    step_cap : "auto", "coordinate", None or float > 0
        Cap ``eta_i <= c n lam / (n lam + Lt v_i)`` with c = 1 ("coordinate") or the given
        float; None: no cap (adfSDCA+ then diverges on most data: the run stops with
        ``stop_reason="diverged"``). "auto": "coordinate" for "plus", None for "exact".
        Mini-batches cap with the ESO weights ``v'_i``.
    batch_size : int in [1, n]
        Rows updated per iteration (Algorithm 4, ``variant="exact"`` only); default 1.
    batch_sampling : {"alg3", "systematic"}
        How a mini-batch with marginals q is drawn: ``"alg3"``, the paper's Algorithm 3
        (corrected; a mixture of at most n sets "the top rows + a uniform subset of a tie
        block", every b-subset of the nonzero rows possible) after an O(m) radix sort;
        ``"systematic"``, Madow's systematic sampling over a random permutation (O(m), no
        sort, the same marginals and |S| = b, which is all the convergence proof uses, but
        not every b-subset is possible).
    n_jobs : int or None
        Threads, as in :func:`train_dfsdca` (the checks in blocks of rows, the steps
        serial); with ``batch_size > 1`` also every iteration's per-row work (the residues
        and sampling weights of every row, the margins' update through the CSC copy) by
        the same blocks. Each row's values are computed as on one thread and the sums stay
        serial, so the iterates are one thread's bit for bit.

    The other parameters (X, y, loss, lam, C, tol, max_epochs, seed, verbose, callback,
    warm_start, smoothing, check_every, sample_weight, class_weight), the weighted
    objective, the certificate and the returned Model are those of :func:`train_dfsdca`
    (with weights, ``gamma = lam c_i Lt`` per row in ``s_i``, the ESO weights and the cap);
    ``params["theta"]`` is the last theta.
    """
    return fit(ADFSDCA, locals())


# ---------------------------------------------------------------------------------------
# the engine


_TRACE = contextvars.ContextVar("dualsolve_adfsdca_trace", default=None)


@contextlib.contextmanager
def _record_coordinates(trace):
    """For tests: runs inside this block write the coordinates they sample, in order, into
    ``trace`` (a 1-D contiguous intp array; mini-batches b entries per iteration, -1 padded
    when fewer rows have a nonzero residue)."""
    if not (isinstance(trace, np.ndarray) and trace.dtype == np.intp and trace.ndim == 1
            and trace.flags.c_contiguous):
        raise TypeError("trace must be a 1-D contiguous intp array")
    token = _TRACE.set(trace)
    try:
        yield trace
    finally:
        _TRACE.reset(token)


def _step_cap(step_cap, variant):
    """(the cap's factor for the engine, 0 for none; the setting that ran)."""
    if step_cap == "auto":
        step_cap = "coordinate" if variant == "plus" else None
    if step_cap is None:
        return 0.0, None
    return (1.0, step_cap) if step_cap == "coordinate" else (float(step_cap), step_cap)


def _run(p, o, mon, method, shrink=1.0, cap=0.0, batch_size=1, batch_sampling="alg3"):
    alpha = warm_start_dual(p.warm_start, p.n)
    if p.weight is not None and (alpha[p.weight == 0] != 0).any():
        raise ValueError("warm_start has nonzero pseudo-dual variables on rows of weight 0 "
                         "(sample_weight x class_weight)")
    w = np.zeros(p.d)
    mon.set_coef(w)
    status, n_epochs, primal, dual, gap, p0, theta = _dfsdca.solve(
        p.X.data, p.X.indices, p.X.indptr, p.d, p.y, p.loss, p.loss_param, p.lam, w, alpha,
        p.X.sqnorm, method, p.tol, p.max_epochs, o["check_every"], p.seed, shrink, cap,
        batch_size, BATCH_SAMPLING[batch_sampling], mon, trace=_TRACE.get(), weight=p.weight,
        n_threads=p.n_jobs)
    note = ""
    if status == _status.MAX_EPOCHS and p.tol > 0:
        note = _why_slow(p, mon.rows, uniform=method == SAMPLING["uniform"])
    return Result(status, n_epochs, coef=w, dual=alpha, measure=gap,
                  threshold=threshold(primal - gap, p.tol, p0),
                  info=dict(p0=p0, theta=theta), note=note)


def _why_slow(p, rows, uniform):
    """For the max_epochs warning: how the certificate moved over the second half of the run
    and what sets the rate (He et al. 2018, Theorem 1: the potential shrinks by at least
    1 - 1/(n + Lt Q/lam) per step, Q the mean squared row norm, or the largest for dfSDCA's
    uniform step)."""
    lt = _dfsdca.loss_smoothness(p.loss, p.loss_param)
    lv = lt * p.X.sqnorm if p.weight is None else lt * p.weight * p.X.sqnorm
    which, k = ("max", lv.max()) if uniform else ("mean", lv.mean())
    k /= p.lam * p.n
    gaps = [(r[0], r[4]) for r in rows if math.isfinite(r[4])]
    seen = ""
    if len(gaps) >= 2:
        e1, g1 = gaps[-1]
        e0, g0 = next(x for x in gaps if 2 * x[0] >= e1 or x is gaps[-2])
        seen = f"Over epochs {e0}-{e1} the certificate went from {g0:.3g} to {g1:.3g}; "
    return (f"{seen}Lt {which}_i ||x_i||^2 / (lam n) = {k:.3g} sets the rate (up to "
            f"{1 + k:.3g} epochs per e-fold; He et al. 2018, Theorem 1): rescaled features "
            f"or a larger lam converge faster")


def _dfsdca_engine(p, o, mon):
    return _run(p, o, mon, SAMPLING[o["sampling"]])


def _adfsdca_engine(p, o, mon):
    b = o["batch_size"]
    if b > p.n:
        raise ValueError(f"batch_size must be <= n = {p.n} (the number of rows); got {b}")
    if b > 1 and o["variant"] == "plus":
        raise ValueError(
            "batch_size > 1 needs variant='exact': mini-batch adfSDCA (Algorithm 4) "
            "recomputes the residues and probabilities at every iteration; the paper "
            "defines no mini-batch adfSDCA+ and its serial per-epoch probabilities "
            "already need a step cap to converge")
    cap, cap_setting = _step_cap(o["step_cap"], o["variant"])
    res = _run(p, o, mon, VARIANT[o["variant"]], o["prob_shrink"], cap, b,
               o["batch_sampling"])
    res.info["step_cap"] = cap_setting
    return res


def _p0(p):
    """P(0), the scale of the certificate's tolerance and of the divergence watch."""
    phi0 = _losses.value(p.loss, np.zeros(p.n), p.y, p.loss_param)
    return float(np.mean(phi0 if p.weight is None else p.weight * phi0))


COMMON = dict(check_every=[Interval(Integral, 1, None)])
CERTIFICATE = ("gap certificate G = P(w) - D(alpha), or P(w) - D(-phi'(Xw)) when alpha is "
               "infeasible: " + certified("G", "(P(w) - G)", "P(0)"))

DFSDCA = register(Solver(
    name="dfsdca", family="adfsdca",
    summary="dual-free SDCA with uniform or importance sampling (Shalev-Shwartz 2016)",
    losses=LOSSES,
    params=dict(sampling=[Options(*SAMPLING)], **COMMON),
    history=HISTORY,
    certificate=CERTIFICATE,
    diverge_hint="dfSDCA's steps never overshoot, so the start is the usual cause: a "
                 "warm_start whose w = X^T alpha / (lam n) overflows; otherwise rescale X "
                 "or raise lam",
    engine=_dfsdca_engine, unevaluated_nan=True, watch_growth=True, objective_scale=_p0,
    weights=True))

ADFSDCA = register(Solver(
    name="adfsdca", family="adfsdca",
    summary="adaptive dual-free SDCA: adfSDCA+, exact adfSDCA, mini-batches "
            "(He, Tappenden & Takac 2018)",
    losses=LOSSES,
    params=dict(variant=[Options(*VARIANT)],
                prob_shrink=[Interval(Real, 1, None, closed="left")],
                step_cap=[Options("auto", "coordinate"), None,
                          Interval(Real, 0, None, closed="neither")],
                batch_size=[Interval(Integral, 1, None)],
                batch_sampling=[Options(*BATCH_SAMPLING)], **COMMON),
    history=HISTORY,
    certificate=CERTIFICATE,
    diverge_hint="cap the step: step_cap='coordinate' (the default of variant='plus', "
                 "also available for 'exact') or a smaller float step_cap; a warm_start "
                 "whose w = X^T alpha / (lam n) overflows diverges too",
    engine=_adfsdca_engine, unevaluated_nan=True, watch_growth=True, objective_scale=_p0,
    weights=True))
