"""Randomized primal-dual solvers (Wang & Xiao 2017, spec seed1): ``train_spdc``,
``train_ada_spdc``, ``train_df_spdc`` and ``train_adf_spdc``.

All four solve, with ``n`` rows ``a_i`` of X and ``x`` of length ``n_features``::

    min_x  P(x) = (1/n) sum_i phi(a_i.x; b_i) + (lam/2) ||x||^2 + l1 ||x||_1

through the saddle problem ``min_x max_y (1/n) sum_i (y_i a_i.x - phi*(y_i; b_i)) + g(x)``.
The loops are in ``_spdc.pyx``; this module validates, resolves the parameters of the
spec's section 2.6 and builds the Model.
"""
import numpy as np

from .._core import losses as _losses
from .._validation import (check_csr, check_loss_and_labels, check_positive, check_regularization, check_int, check_budget, check_seed,
                           check_choice, warn_not_converged)
from ..model import Model, make_history, warm_start_coef
from . import _spdc

_STATUS = {0: "converged", 1: "max_epochs", 2: "stopped"}
_SAMPLING = {"uniform": 0, "permutation": 1}
_RULES = {"robust": 1, "simple": 2}
_MEASURES = {0: "gap", 1: "rescaled_gap", 2: "grad_norm2"}
_LOSSES = ("squared", "logistic", "smooth_hinge")
_EUCLID, _DUAL_FREE = 0, 1


def _gamma_delta(loss, param):
    """(gamma, delta): phi is (1/gamma)-smooth and delta-strongly convex (spec 1.3)."""
    if loss == "squared":
        return 1.0, 1.0
    if loss == "logistic":
        return 4.0, 0.0
    return param, 0.0


def _train(solver, X, y, *, method, adaptive, loss, lam, l1, smoothing, batch_size, tol,
           max_epochs, delta_hat, T, rule, c_lo, c_hi, factor, sampling, eval_every, seed,
           verbose, callback, warm_start, trace=None, table_max=1 << 20):
    Xc = check_csr(X)
    n, d = Xc.shape
    loss, param, b, classes = check_loss_and_labels(
        loss, smoothing, _LOSSES, y, n, solver, "the primal-dual solvers need a smooth loss")
    lam = check_regularization(lam, None, n, allow_zero=True)
    l1 = check_positive(l1, "l1", allow_zero=True)
    tol = check_positive(tol, "tol", allow_zero=True)
    max_epochs = check_budget(max_epochs, "max_epochs", 0)
    eval_every = check_int(eval_every, "eval_every", 1)
    batch_size = check_int(batch_size, "batch_size", 1)
    if batch_size > n:
        raise ValueError(f"batch_size must be <= n = {n}; got {batch_size}")
    sampling_code = _SAMPLING[check_choice(sampling, "sampling", tuple(_SAMPLING))]
    seed = check_seed(seed)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable")
    gamma, delta = _gamma_delta(loss, param)
    sq = Xc.sqnorm
    R = float(np.sqrt(sq.max()))
    if not R > 0:
        raise ValueError("X has no nonzero entries")
    fro2 = float(sq.sum())

    if adaptive:
        T = check_int(T, "T", 1)
        rule_code = _RULES[check_choice(rule, "rule", tuple(_RULES))]
        c_lo = check_positive(c_lo, "c_lo")
        c_hi = check_positive(c_hi, "c_hi")
        if not c_lo < 1.0 < c_hi:
            raise ValueError(f"need c_lo < 1 < c_hi; got c_lo={c_lo}, c_hi={c_hi}")
        factor = check_positive(factor, "factor")
        if not factor > 1.0:
            raise ValueError(f"factor must be > 1; got {factor}")
        # an optimistic start: ||A||_F^2 / (gamma d) >= delta mu^2 (spec 5.2, pitfall 4)
        delta0 = fro2 / (gamma * d) if delta_hat is None else check_positive(delta_hat, "delta_hat")
    else:
        T, rule_code, factor, c_lo, c_hi = 10, 0, 2.0, 0.95, 1.5
        delta0 = 0.0 if delta_hat is None else check_positive(delta_hat, "delta_hat", allow_zero=True)
    if lam == 0.0 and not delta0 > 0.0:
        raise ValueError(
            f"lam = 0 needs delta_hat > 0 for {solver}: the step sizes use lam + delta_hat/n, "
            "the strong convexity of P (delta_hat estimates delta mu^2, mu^2 the smallest "
            "eigenvalue of X^T X); use the adaptive solver or give lam > 0")
    delta_min = 1e-12 * delta0 if lam == 0.0 else 0.0

    x, ydual, v = _initial_point(warm_start, Xc, b, loss, param, method, n, d)

    # stopping scale: P(0) for the gap measures, ||grad f(0)||^2 without a regulariser
    p0 = float(_losses.value(loss, 0.0, b, param).mean())
    if lam > 0.0 or l1 > 0.0:
        scale = p0
    else:
        g0 = np.asarray(Xc.source.T @ _losses.derivative(loss, 0.0, b, param)).ravel() / n
        scale = float(g0 @ g0)

    (status, n_epochs, primal, dual, gap, measure, kind, delta_final, (tau, sigma, theta),
     (n_up, n_down), rows) = _spdc._fit(
        Xc.data, Xc.indices, Xc.indptr, d, b, loss, param, lam, l1, R, method, batch_size,
        x, ydual, v, delta0, rule_code if adaptive else 0, T, c_lo, c_hi, factor, delta_min,
        tol, scale, max_epochs, eval_every, sampling_code, seed, int(verbose), callback,
        trace=trace, table_max=table_max)

    if status == 1:
        warn_not_converged(solver, n_epochs, measure, tol * scale)
    params = dict(loss=loss, loss_param=param, lam=lam, l1=l1, tol=tol, max_epochs=max_epochs,
                  batch_size=batch_size, sampling=sampling, eval_every=eval_every, seed=seed,
                  delta_hat=delta_final, delta0=delta0, tau=tau, sigma=sigma, theta=theta,
                  R=R, gamma=gamma, delta=delta, measure=_MEASURES[kind], scale=scale,
                  status=_STATUS[status], p0=p0)
    if adaptive:
        params.update(T=T, rule=rule, c_lo=c_lo, c_hi=c_hi, factor=factor,
                      n_adapt_up=n_up, n_adapt_down=n_down)
    extra = {"margins": v} if v is not None else None
    return Model(coef=x, dual=ydual, history=make_history(rows, extra_fields=("measure", "delta_hat")),
                 converged=status == 0, n_epochs=n_epochs, solver=solver, params=params,
                 classes=classes, extra=extra)


def _initial_point(warm_start, Xc, b, loss, param, method, n, d):
    """(x0, y0, v0): x0 = 0 or the warm start; v0 = A x0 (dual-free margins); y0 = phi'(A x0),
    or the warm start's dual for SPDC (checked to lie in the domain of phi*)."""
    x0, y0 = None, None
    if warm_start is not None:
        if isinstance(warm_start, Model):
            x0, y0 = warm_start.coef, warm_start.dual
        elif isinstance(warm_start, tuple) and len(warm_start) == 2:
            x0, y0 = warm_start
        else:
            raise TypeError("warm_start must be a Model or a tuple (coef, dual) (dual may be "
                            f"None); got {type(warm_start).__name__}")
        x0 = warm_start_coef(x0, d)
    x = np.zeros(d) if x0 is None else x0
    z = np.zeros(n) if x0 is None else np.asarray(Xc.source @ x, dtype=np.float64).ravel()
    v = None
    if method == _DUAL_FREE:
        v = z.copy()
        y = _losses.derivative(loss, v, b, param)
    elif y0 is not None:
        y = np.array(y0, dtype=np.float64, copy=True).ravel()
        if y.shape[0] != n:
            raise ValueError(f"warm_start has {y.shape[0]} dual variables but X has {n} rows")
        # y lies in dom phi*(.; b) iff -y lies in the domain of the table's h(.; b)
        if not np.isfinite(_losses.conjugate(loss, -y, b, param)).all():
            raise ValueError("warm_start dual variables lie outside the domain of phi* for "
                             "these labels (was it trained with another loss or labels?)")
    else:
        y = _losses.derivative(loss, z, b, param)
    return x, np.ascontiguousarray(y, dtype=np.float64), v


_OBJECTIVE = """
    Solves, with ``n`` rows ``a_i`` of X, targets or labels ``b_i`` and ``x`` of length
    ``n_features``::

        min_x  P(x) = (1/n) sum_i phi(a_i.x; b_i) + (lam/2) ||x||^2 + l1 ||x||_1

    through the saddle point ``min_x max_y (1/n) sum_i (y_i a_i.x - phi*(y_i; b_i)) + g(x)``
    and the dual ``D(y) = -(1/n) sum_i phi*(y_i; b_i) - g*(-A^T y / n)``. ``lam = 0`` is
    allowed: P is then strongly convex from the data alone (modulus ``delta mu^2 / n``,
    ``mu^2`` the smallest eigenvalue of ``X^T X``, ``delta`` the loss's strong convexity)
    when X has full column rank, and the step sizes use ``lam + delta_hat / n``.

    Losses (``m = b a.x``, ``b`` in {-1, +1} for classification):

    ``"squared"``       (a.x - b)^2 / 2, b real           gamma = 1, delta = 1
    ``"logistic"``      log(1 + exp(-m))                   gamma = 4, delta = 0
    ``"smooth_hinge"``  1 - m - s/2 if m < 1 - s; (1 - m)^2/(2s) if m < 1; else 0
                        (``s = smoothing``, default 0.5)   gamma = s, delta = 0

    Each step samples a row k (``batch_size`` rows), updates y_k and x in O(nnz of the
    rows): the dense part of the proximal step is applied just in time per feature and the
    whole iterate is brought up to date only at evaluations.
"""

_PARAMS = """
    Parameters
    ----------
    X : sparse matrix/array (n, n_features)
        CSR (``csr_matrix`` or ``csr_array``, float32/float64, int32/int64 indices) is used
        without a copy; dense and other formats are converted once.
    y : array (n,)
        Reals for ``loss="squared"``; two distinct values otherwise (the larger is +1).
    loss : {"squared", "logistic", "smooth_hinge"}
    lam : float >= 0, optional
        L2 strength; default ``1/n``.
    l1 : float >= 0
        L1 strength (``lam > 0`` too: elastic net; ``lam = 0``: Lasso-type).
    smoothing : float > 0, optional
        Width of the smoothed hinge.
    batch_size : int >= 1
        Rows per step, m. m > 1 (Zhang & Xiao's mini-batch SPDC): the x step uses the mean
        of the m dual corrections, and the parameters replace ``n lam + Delta`` by
        ``(n lam + Delta)/m`` under the square roots and n by n/m in theta_y (equal to the
        m = 1 formulas at m = 1). An epoch is ``ceil(n/m)`` steps.
    tol : float >= 0
        Stop when the measure (below) is ``<= tol * scale``: the duality gap ``P - D``
        relative to ``P(0)`` when ``lam > 0``; when ``lam = 0`` and ``l1 > 0`` the gap with
        the dual rescaled into the domain of ``g*`` (``y * min(1, l1/||A^T y/n||_inf)``),
        also relative to ``P(0)`` and also a bound on ``P - P*``; with no regulariser at
        all (g* is the indicator of {0}, the gap is always infinite) the squared gradient
        norm ``||A^T phi'(Ax)/n||^2`` relative to its value at x = 0.
    max_epochs : int >= 0
        Budget in epochs (n sampled rows each).
    sampling : {"uniform", "permutation"}
        Rows drawn with replacement (the setting of the theory; m > 1: m distinct rows per
        step), or a random permutation per epoch cut into batches.
    eval_every : int >= 1
        Evaluate P, D and the measure (one pass over X, plus an O(d) catch-up of every
        feature) every this many epochs; history has NaN in between. Adaptation happens only
        at evaluations.
    seed : int or None
        The same seed gives bit-identical results. The row stream is
        ``dualsolve.primal_dual._spdc.index_stream(seed, n, epochs, batch_size, sampling)``.
    verbose : int
        1 prints one line per epoch: primal, dual, gap, measure, delta_hat, seconds.
    callback : callable, optional
        ``callback(info)`` after every epoch with a dict (epoch, time, primal, dual, gap,
        measure, delta_hat, coef); return True to stop. Ctrl-C stops cleanly too.
    warm_start : Model or tuple (coef, dual), optional
        Start from ``x0 = coef``. SPDC variants also take the dual (it must lie in the
        domain of phi*; None: ``y0 = phi'(A x0)``); dual-free variants start from the
        margins ``v0 = A x0`` and ``y0 = phi'(v0)``.
"""

_RETURNS = """
    Returns
    -------
    Model
        ``coef`` = x; ``dual`` = y in the primal-dual convention: ``y_i`` lies in the domain
        of ``phi*(.; b_i)`` and ``y_i = phi'(a_i.x*; b_i)`` at the optimum, with
        ``x* = -A^T y* / (n lam)`` for a pure L2 term (SDCA's dual is ``-y``). ``history``:
        one row per epoch with epoch, time, primal, dual, gap (``+inf`` where ``g*`` is an
        indicator and ``-A^T y/n`` is outside its domain, e.g. always when lam = l1 = 0),
        measure (the stopping quantity above) and delta_hat (the estimate in use). ``params``
        holds the final tau, sigma, theta, delta_hat, R, the measure's name and its scale.
        Dual-free models also keep the margins v in ``extra["margins"]``.
"""

_ADAPT = """    delta_hat : float > 0, optional
        Initial estimate Delta of ``delta mu^2``; default ``||X||_F^2 / (gamma d)``, an
        upper bound (spec 5.2: start optimistic and let the rule come down).
    T : int >= 1
        Passes between adaptations.
    rule : {"robust", "simple"}
        Every T passes a per-pass rate is fitted by least squares through the origin on the
        log of the measures of the window (``log(G(t)/G(0))`` against t); ``r`` = the fitted
        decrease over the window. ``"robust"`` (Alg. 4, the paper's experiments):
        ``Delta *= factor`` if ``r <= c_lo * rho``, ``/= factor`` if ``r >= c_hi * rho``
        (then ``rho = r``), else unchanged; ``rho`` starts at ``theta^(T n/m)``.
        ``"simple"`` (Alg. 3): up if ``r < theta^(T n/m)``, else down. Delta never falls
        below ``1e-12`` times its start when lam = 0, and is frozen while the measure is at
        its rounding floor. Without a gap (lam = 0) the measure above is used.
    c_lo, c_hi : float
        Robust thresholds, ``c_lo < 1 < c_hi`` (0.95, 1.5).
    factor : float > 1
        Multiplicative change of Delta (2).
"""

_FIXED_DELTA = """    delta_hat : float >= 0, optional
        A known ``delta mu^2`` (the paper's "Opt-" variant when it is the true value);
        default 0. Required (> 0) when ``lam = 0``.
"""


def train_spdc(X, y, *, loss="squared", lam=None, l1=0.0, smoothing=None, batch_size=1,
               tol=1e-8, max_epochs=100, delta_hat=None, sampling="uniform", eval_every=1,
               seed=0, verbose=0, callback=None, warm_start=None):
    return _train("train_spdc", X, y, method=_EUCLID, adaptive=False, loss=loss, lam=lam,
                  l1=l1, smoothing=smoothing, batch_size=batch_size, tol=tol,
                  max_epochs=max_epochs, delta_hat=delta_hat, T=None, rule=None, c_lo=None,
                  c_hi=None, factor=None, sampling=sampling, eval_every=eval_every, seed=seed,
                  verbose=verbose, callback=callback, warm_start=warm_start)


def train_ada_spdc(X, y, *, loss="squared", lam=None, l1=0.0, smoothing=None, batch_size=1,
                   tol=1e-8, max_epochs=100, delta_hat=None, T=10, rule="robust", c_lo=0.95,
                   c_hi=1.5, factor=2.0, sampling="uniform", eval_every=1, seed=0, verbose=0,
                   callback=None, warm_start=None):
    return _train("train_ada_spdc", X, y, method=_EUCLID, adaptive=True, loss=loss, lam=lam,
                  l1=l1, smoothing=smoothing, batch_size=batch_size, tol=tol,
                  max_epochs=max_epochs, delta_hat=delta_hat, T=T, rule=rule, c_lo=c_lo,
                  c_hi=c_hi, factor=factor, sampling=sampling, eval_every=eval_every,
                  seed=seed, verbose=verbose, callback=callback, warm_start=warm_start)


def train_df_spdc(X, y, *, loss="squared", lam=None, l1=0.0, smoothing=None, batch_size=1,
                  tol=1e-8, max_epochs=100, delta_hat=None, sampling="uniform", eval_every=1,
                  seed=0, verbose=0, callback=None, warm_start=None):
    return _train("train_df_spdc", X, y, method=_DUAL_FREE, adaptive=False, loss=loss,
                  lam=lam, l1=l1, smoothing=smoothing, batch_size=batch_size, tol=tol,
                  max_epochs=max_epochs, delta_hat=delta_hat, T=None, rule=None, c_lo=None,
                  c_hi=None, factor=None, sampling=sampling, eval_every=eval_every, seed=seed,
                  verbose=verbose, callback=callback, warm_start=warm_start)


def train_adf_spdc(X, y, *, loss="squared", lam=None, l1=0.0, smoothing=None, batch_size=1,
                   tol=1e-8, max_epochs=100, delta_hat=None, T=10, rule="robust", c_lo=0.95,
                   c_hi=1.5, factor=2.0, sampling="uniform", eval_every=1, seed=0, verbose=0,
                   callback=None, warm_start=None):
    return _train("train_adf_spdc", X, y, method=_DUAL_FREE, adaptive=True, loss=loss,
                  lam=lam, l1=l1, smoothing=smoothing, batch_size=batch_size, tol=tol,
                  max_epochs=max_epochs, delta_hat=delta_hat, T=T, rule=rule, c_lo=c_lo,
                  c_hi=c_hi, factor=factor, sampling=sampling, eval_every=eval_every,
                  seed=seed, verbose=verbose, callback=callback, warm_start=warm_start)


train_spdc.__doc__ = """Train a linear model by SPDC (stochastic primal-dual coordinate method).

    Zhang & Xiao's method with the parameters of Wang & Xiao 2017 (Algorithm 5, T = inf).
""" + _OBJECTIVE + """
    Each step: ``y_k = prox_{sigma phi*}(y_k + sigma a_k.xt)`` (closed forms; a safeguarded
    Newton solve for logistic), ``x = prox_{tau g}(x - tau (u + dy a_k))``, ``u += dy a_k/n``,
    ``xt = x + theta (x - x_prev)``, with Theorem 2's parameters (``R = max ||a_i||``)::

        tau   = sqrt(gamma / (n lam + Delta)) / (4R),  sigma = sqrt((n lam + Delta)/gamma) / (4R)
        theta = max( (1 - tau sigma Delta / (2n (sigma + 4 delta))) / (1 + tau lam),
                     (1 + ((n-1)/n) sigma gamma/2) / (1 + sigma gamma/2) )

    and ``Delta = delta_hat`` fixed.
""" + _PARAMS + _FIXED_DELTA + _RETURNS

train_ada_spdc.__doc__ = """Train a linear model by Ada-SPDC (SPDC with adaptive strong convexity).

    The estimate Delta of the strong convexity from data is tuned every T passes from the
    observed decrease of the duality gap (Wang & Xiao 2017, Algorithm 5 with SPDC-Adapt).
""" + _OBJECTIVE + """
    Steps and parameters as ``train_spdc`` with Delta adaptive: after each change the
    iterate is brought up to date and tau, sigma, theta recomputed.
""" + _PARAMS + _ADAPT + _RETURNS

train_df_spdc.__doc__ = """Train a linear model by DF-SPDC (dual-free SPDC).

    Wang & Xiao 2017, Algorithm 7 with T = infinity: the dual step is a Bregman step in
    margin space,
    ``v_k = (v_k + sigma a_k.xt)/(1 + sigma)``, ``y_k = phi'(v_k)``, so it needs only phi'
    (no dual proximal solve, a good fit for logistic regression).
""" + _OBJECTIVE + """
    Theorem 4's parameters (theta_x with the proven ``2n(sigma + 4)``, erratum E3)::

        tau   = sqrt(gamma / (n lam + Delta)) / (4R),  sigma = sqrt(gamma (n lam + Delta)) / (4R)
        theta = max( (1 - tau sigma Delta / (2n (sigma + 4))) / (1 + tau lam),
                     (1 + ((n-1)/n) sigma/2) / (1 + sigma/2) )

    and ``Delta = delta_hat`` fixed.
""" + _PARAMS + _FIXED_DELTA + _RETURNS

train_adf_spdc.__doc__ = """Train a linear model by ADF-SPDC (adaptive dual-free SPDC).

    DF-SPDC with the adaptive estimate Delta (Wang & Xiao 2017, Algorithm 7; the paper's
    fastest solver with weak regularisation).
""" + _OBJECTIVE + """
    Steps and parameters as ``train_df_spdc`` with Delta adaptive.
""" + _PARAMS + _ADAPT + _RETURNS
