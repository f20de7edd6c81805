"""Primal baselines of the linear primal-dual family (Wang & Xiao 2017, figures 2 and 3;
spec seed1 section 4.6): ``train_svrg`` (proximal SVRG, Xiao & Zhang 2014) and
``train_katyusha`` (Allen-Zhu 2017, the strongly convex version).

Both minimise, with ``n`` rows ``a_i`` of X and ``x`` of length ``n_features``::

    P(x) = (1/n) sum_i phi(a_i.x; b_i) + (lam/2) ||x||^2 + l1 ||x||_1

with variance-reduced stochastic gradients of the loss part and the proximal map of the
regulariser. The loops are in ``_svrg.pyx``; a stochastic step costs O(nnz of the row)
(the dense snapshot-gradient term is applied just in time per feature, see there).
"""
import math
import warnings

import numpy as np

from .._validation import (check_csr, check_loss_and_labels, check_positive, check_regularization, check_int, check_budget, check_seed,
                           check_choice, ConvergenceWarning)
from ..model import Model, make_history, warm_start_coef
from . import _svrg

_STATUS = {0: "converged", 1: "max_epochs", 2: "stopped", 3: "diverged"}
_LOSSES = ("squared", "logistic", "smooth_hinge", "squared_hinge")
_OPTIONS = {"I": 1, "II": 2}


def _smoothness(loss, param):
    """c with phi'' <= c: the row smoothness is L_i = c ||a_i||^2."""
    if loss == "squared":
        return 1.0
    if loss == "logistic":
        return 0.25
    return 1.0 / param          # smooth hinge (width param), squared hinge (scale param)


def _common(solver, X, y, loss, lam, l1, smoothing, inner, tol, max_epochs, seed, callback,
            warm_start):
    Xc = check_csr(X)
    n, d = Xc.shape
    loss, param, b, classes = check_loss_and_labels(
        loss, smoothing, _LOSSES, y, n, solver,
        "variance-reduced gradient methods need a smooth loss")
    lam = check_regularization(lam, None, n, allow_zero=True)
    l1 = check_positive(l1, "l1", allow_zero=True)
    inner = 2 * n if inner is None else check_int(inner, "inner", 1)
    tol = check_positive(tol, "tol", allow_zero=True)
    max_epochs = check_budget(max_epochs, "max_epochs", 0)
    seed = check_seed(seed)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable")
    x0 = warm_start_coef(warm_start, d)
    # L_max: the largest row smoothness of the loss part (0 only when X has no entries;
    # then any step works and 1 is used)
    L = _smoothness(loss, param) * float(Xc.sqnorm.max())
    if not L > 0.0:
        L = 1.0
    return Xc, b, classes, loss, param, lam, l1, inner, tol, max_epochs, seed, x0, L


def _finish(solver, status, n_epochs, primal, p0, rows, x, classes, params):
    if status == 3:
        warnings.warn(f"{solver} diverged (the objective became {primal}) after {n_epochs} "
                      "epochs; use a smaller step", ConvergenceWarning, stacklevel=3)
    elif status == 1 and params["max_epochs"] > 0 and params["tol"] > 0:
        last = rows[-2][2] - rows[-1][2] if len(rows) > 1 else math.nan
        warnings.warn(f"{solver} stopped after max_epochs={n_epochs} with the last epoch "
                      f"changing the objective by {last:.3e} > tol * P(0) = "
                      f"{params['tol'] * p0:.3e}; increase max_epochs or tol",
                      ConvergenceWarning, stacklevel=3)
    params.update(status=_STATUS[status], p0=p0)
    return Model(coef=x, history=make_history(rows, extra_fields=("passes",)),
                 converged=status == 0, n_epochs=n_epochs, solver=solver, params=params,
                 classes=classes)


_OBJECTIVE = """
    Solves, with ``n`` rows ``a_i`` of X, targets or labels ``b_i`` and ``x`` of length
    ``n_features``::

        min_x  P(x) = (1/n) sum_i phi(a_i.x; b_i) + (lam/2) ||x||^2 + l1 ||x||_1

    (``lam >= 0``, ``l1 >= 0``). The loss part ``f(x) = (1/n) sum_i phi(a_i.x; b_i)`` enters
    through variance-reduced stochastic gradients, the regulariser through its proximal map
    ``S(v, t l1) / (1 + t lam)`` (S = soft threshold). Losses (``m = b a.x``, ``b`` in
    {-1, +1} for classification), with ``L_i = c ||a_i||^2`` the smoothness of row i and
    ``L = max_i L_i``:

    ``"squared"``        (a.x - b)^2 / 2, b real                            c = 1
    ``"logistic"``       log(1 + exp(-m))                                   c = 1/4
    ``"smooth_hinge"``   1 - m - s/2 if m < 1 - s; (1 - m)^2/(2s) if m < 1; else 0
                         (``s = smoothing``, default 0.5)                   c = 1/s
    ``"squared_hinge"``  max(0, 1 - m)^2                                    c = 2

    Every epoch computes the snapshot's full gradient (one pass over X; the per-row
    derivatives ``phi'(a_i.xs)`` are kept, n doubles, so a step evaluates one row
    derivative), then makes ``inner`` steps on rows drawn uniformly with replacement. A step
    costs O(nnz of the row): the snapshot gradient is a constant dense term between
    snapshots, applied to each feature just in time when the feature is next read, and to
    all features at the end of the epoch (O(n_features)).

    History: one row per epoch (row 0 is the starting point) with the exact primal of the
    returned iterate (the snapshot; every score recomputed, one pass over X that the next
    snapshot gradient reuses), NaN ``dual`` and ``gap`` (no dual), and ``passes``: the
    component-gradient evaluations so far divided by n (1 per snapshot, ``inner / n`` per
    epoch of steps).

    Stopping: after epoch k when ``|P_{k-1} - P_k| <= tol * P(0)``, with ``P(0)`` the
    objective at x = 0 (the mean loss at zero scores): the primal has stopped changing by
    more than ``tol`` relative to P(0) over an epoch (an absolute threshold, so a warm start
    near the optimum stops after one epoch). This is a stall test, not a certificate:
    ``P - P*`` is about the last decrease times ``rho / (1 - rho)``, rho the per-epoch
    contraction. Or after ``max_epochs`` (a ConvergenceWarning), or when the callback
    returns True, or when the objective becomes NaN/inf (status "diverged", a warning).
"""

_PARAMS = """
    Parameters
    ----------
    X : sparse matrix/array (n, n_features)
        CSR (``csr_matrix`` or ``csr_array``, float32/float64, int32/int64 indices, unsorted
        indices allowed) is used without a copy; dense and other formats are converted once.
    y : array (n,)
        Reals for ``loss="squared"``; two distinct values otherwise (the larger is +1).
    loss : {"squared", "logistic", "smooth_hinge", "squared_hinge"}
    lam : float >= 0, optional
        L2 strength; default ``1/n``.
    l1 : float >= 0
        L1 strength (``lam > 0`` too: elastic net).
    smoothing : float > 0, optional
        Width of the smoothed hinge.
"""

_TAIL = """
    tol : float >= 0
        Stop when an epoch changes P by at most ``tol * P(0)``. ``tol = 0``: run
        ``max_epochs`` epochs (a fixed budget, e.g. for figures; no warning at the end).
    max_epochs : int >= 0
    seed : int or None
        Seed of the row draws (``dualsolve._core.rng``); the same seed gives the same
        iterates. The rows of the whole run are ``rng.random_below(seed, n, epochs * inner)``.
    verbose : int
        1 prints one line per epoch (primal, passes, seconds).
    callback : callable, optional
        ``callback(info)`` after every epoch with a dict (epoch, time, primal, dual, gap,
        passes, coef = the snapshot, read-only); return True to stop.
    warm_start : Model or array (n_features,), optional
        Starting point (e.g. ``previous_model.coef`` for a nearby ``lam``).

    Returns
    -------
    Model
        ``coef`` (the last snapshot), ``dual`` None, ``history`` (epoch, time, primal,
        dual = NaN, gap = NaN, passes), ``converged``, ``n_epochs``, ``params`` (with the
        step sizes used).
"""


def train_svrg(X, y, *, loss="squared", lam=None, l1=0.0, smoothing=None, step=None,
               inner=None, tol=1e-10, max_epochs=100, seed=0, verbose=0, callback=None,
               warm_start=None):
    """Train a linear model by proximal SVRG (Prox-SVRG, Xiao & Zhang 2014).

    {objective}

    Epoch s, from the snapshot ``xs`` (the last iterate of the previous epoch; epoch 1 starts
    from the warm start or 0), with ``mu = grad f(xs)``: ``inner`` times, draw a row i and

        x <- prox_{{eta psi}}( x - eta (mu + (phi_i'(a_i.x) - phi_i'(a_i.xs)) a_i) ),

    ``psi = (lam/2)||.||^2 + l1 ||.||_1``; then ``xs = x``. The snapshot is the last iterate
    (as in the spec, section 4.6, and the usual practice), not the average of the epoch's
    iterates that Xiao & Zhang's analysis uses. The method adapts to the strong convexity of
    P by itself, including strong convexity from the data (spec seed1 section 1.4).

    {params}
    step : float > 0, optional
        eta; default ``0.1 / L`` (Xiao & Zhang's experimental setting, spec section 4.6; their
        theory needs ``eta < 1 / (4 L)``).
    inner : int >= 1, optional
        Steps per epoch (snapshot period m); default ``2 n``.
    {tail}"""
    (Xc, b, classes, loss, param, lam, l1, inner, tol, max_epochs, seed, x, L) = _common(
        "train_svrg", X, y, loss, lam, l1, smoothing, inner, tol, max_epochs, seed, callback,
        warm_start)
    step = 0.1 / L if step is None else check_positive(step, "step")
    status, n_epochs, primal, p0, rows = _svrg._fit(
        Xc.data, Xc.indices, Xc.indptr, Xc.shape[1], b, loss, param, lam, l1, x, 0, step,
        inner, 0.0, 0, tol, max_epochs, seed, int(verbose), callback)
    params = dict(loss=loss, loss_param=param, lam=lam, l1=l1, step=step, inner=inner, L=L,
                  tol=tol, max_epochs=max_epochs, seed=seed)
    return _finish("svrg", status, n_epochs, primal, p0, rows, x, classes, params)


def train_katyusha(X, y, *, loss="squared", lam=None, l1=0.0, smoothing=None, step=None,
                   tau1=None, option=None, inner=None, tol=1e-10, max_epochs=100, seed=0,
                   verbose=0, callback=None, warm_start=None):
    """Train a linear model by Katyusha (Allen-Zhu 2017, Algorithm 1, strongly convex case).

    {objective}

    Parameters as in the spec (section 4.6): ``m = inner = 2n``, ``tau2 = 1/2``,
    ``tau1 = min(sqrt(m sigma / (3 L)), 1/2)``, ``alpha = 1 / (3 tau1 L)``, with sigma = lam
    the strong convexity of psi. Taken from the original paper (not in the spec): the
    iteration below, option I / II of the y step, and the snapshot as the weighted average
    of the epoch's y iterates with weights ``(1 + alpha sigma)^j``. Start: ``y = z = xs =
    x0``. Epoch s, with ``mu = grad f(xs)``, ``inner`` times: draw a row i and

        x  = tau1 z + tau2 xs + (1 - tau1 - tau2) y
        g  = mu + (phi_i'(a_i.x) - phi_i'(a_i.xs)) a_i
        z' = prox_{{alpha psi}}(z - alpha g)
        y' = prox_{{psi/(3L)}}(x - g/(3L))          option "I" (the one the paper analyses)
        y' = x + tau1 (z' - z)                      option "II" (the paper: "also works")

    then ``xs = sum_j (1 + alpha sigma)^j y_(j+1) / sum_j (1 + alpha sigma)^j`` over the
    epoch's steps j = 0..m-1; y and z carry over to the next epoch.

    Cost: every step is O(nnz of the row) except with option "I" and ``l1 > 0``: its y step
    soft-thresholds a mix of y and z, whose s-fold composition has no closed form, so a
    feature catches up on the steps it missed one by one (exact, but O(n_features) per step
    on average, like a dense implementation: on news20, 1.66M features, an epoch would take
    about 15 minutes instead of 1.5 seconds). Hence the default option: "I" without L1,
    "II" with ``l1 > 0``.

    {params}
    step : float > 0, optional
        ``1/(3L)``, the y step of option I (``L`` the smoothness used by the parameter
        formulas is ``1 / (3 step)``); default ``1 / (3 L_max)``.
    tau1 : float in (0, 1/2], optional
        Momentum weight; default ``min(sqrt(inner * lam * step), 1/2)`` (the formula above).
        Required when ``lam = 0`` (the strongly convex parameters need sigma = lam > 0).
    option : {{"I", "II"}}, optional
        The y step (see above); default "I" when ``l1 = 0``, "II" when ``l1 > 0``.
    inner : int >= 1, optional
        Steps per epoch m; default ``2 n``.
    {tail}"""
    (Xc, b, classes, loss, param, lam, l1, inner, tol, max_epochs, seed, x, L) = _common(
        "train_katyusha", X, y, loss, lam, l1, smoothing, inner, tol, max_epochs, seed,
        callback, warm_start)
    if option is None:
        option = "I" if l1 == 0.0 else "II"
    option_code = _OPTIONS[check_choice(option, "option", tuple(_OPTIONS))]
    step = 1.0 / (3.0 * L) if step is None else check_positive(step, "step")
    if tau1 is None:
        if lam == 0.0:
            raise ValueError("train_katyusha with lam = 0 needs tau1: its default "
                             "min(sqrt(inner * sigma / (3 L)), 1/2) uses sigma = lam > 0 (the "
                             "strongly convex version of Katyusha)")
        tau1 = min(math.sqrt(inner * lam * step), 0.5)
    else:
        tau1 = check_positive(tau1, "tau1")
        if tau1 > 0.5:
            raise ValueError(f"tau1 must be in (0, 1/2] (tau1 + tau2 <= 1 with tau2 = 1/2); "
                             f"got {tau1}")
    status, n_epochs, primal, p0, rows = _svrg._fit(
        Xc.data, Xc.indices, Xc.indptr, Xc.shape[1], b, loss, param, lam, l1, x, 1, step,
        inner, tau1, option_code, tol, max_epochs, seed, int(verbose), callback)
    params = dict(loss=loss, loss_param=param, lam=lam, l1=l1, step=step, tau1=tau1, tau2=0.5,
                  alpha=step / tau1, option=option, inner=inner, L=1.0 / (3.0 * step),
                  L_max=L, tol=tol, max_epochs=max_epochs, seed=seed)
    return _finish("katyusha", status, n_epochs, primal, p0, rows, x, classes, params)


for _f in (train_svrg, train_katyusha):
    _f.__doc__ = _f.__doc__.format(objective=_OBJECTIVE.strip(), params=_PARAMS.strip(),
                                   tail=_TAIL.strip())
del _f
