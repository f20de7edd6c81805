"""Randomized primal-dual solvers (Wang & Xiao 2017, "Exploiting strong convexity from data
with primal-dual first-order algorithms", ICML): ``train_spdc``, ``train_ada_spdc``,
``train_df_spdc`` and ``train_adf_spdc``.

All four solve, with ``n`` rows ``a_i`` of X and ``x`` of length ``n_features``::

    min_x  P(x) = (1/n) sum_i c_i phi(a_i.x; b_i) + (lam/2) ||x||^2 + l1 ||x||_1

(row weights ``c_i``, all 1 by default) through the saddle problem
``min_x max_y (1/n) sum_i (y_i a_i.x - c_i phi*(y_i / c_i; b_i)) + g(x)``.
The loops are in ``_spdc.pyx`` (``spdc_run``); this module describes the solvers to the
driver and resolves their parameters (docs/primal_dual.md).
"""
import dataclasses
import functools
import inspect

import numpy as np

from .._core import losses as _losses
from .._driver import Result, Solver, certified, fit, register, threshold
from .._params import Integral, Interval, Options, Real
from ..model import Model, warm_start_coef
from . import _spdc

SAMPLING = {"uniform": 0, "permutation": 1}         # _spdc.pxd SPDC_SAMPLE_*
RULES = {"robust": 1, "simple": 2, "backtracking": 3}   # _spdc.pxd ADAPT_*
MEASURES = {0: "gap", 1: "rescaled_gap", 2: "grad_norm2"}
LOSSES = ("squared", "logistic", "smooth_hinge")
EUCLID, DUAL_FREE = 0, 1                            # _spdc.pxd SPDC_EUCLID, SPDC_DUAL_FREE


def _gamma_delta(loss, param):
    """(gamma, delta): phi is (1/gamma)-smooth and delta-strongly convex."""
    if loss == "squared":
        return 1.0, 1.0
    if loss == "logistic":
        return 4.0, 0.0
    return param, 0.0


def _engine(p, o, mon, *, method, adaptive, trace=None, table_max=1 << 20):
    n, d = p.n, p.d
    batch_size = o["batch_size"]
    if batch_size > n:
        raise ValueError(f"batch_size must be <= n = {n}; got {batch_size}")
    lam, l1 = p.lam, o["l1"]
    gamma, delta = _gamma_delta(p.loss, p.loss_param)
    c = p.weight
    # with weights the theory's rows are sqrt(c_i) a_i (see _spdc.pxd, "Weights")
    sq = p.X.sqnorm if c is None else c * p.X.sqnorm
    R = float(np.sqrt(sq.max()))
    if not R > 0:
        raise ValueError("X has no nonzero entries")
    if adaptive:
        # an optimistic start: ||A||_F^2 / (gamma d) >= delta mu^2 (delta <= 1/gamma and mu^2
        # is at most the mean eigenvalue of A^T A); the rule comes down from there
        delta0 = float(sq.sum()) / (gamma * d) if o["delta_hat"] is None else o["delta_hat"]
        rule, period = RULES[o["rule"]], o["period"]
        c_lo, c_hi, factor = o["c_lo"], o["c_hi"], o["factor"]
    else:
        delta0 = 0.0 if o["delta_hat"] is None else o["delta_hat"]
        rule, period, c_lo, c_hi, factor = 0, 10, 0.95, 1.5, 2.0
    if lam == 0.0 and not delta0 > 0.0:
        raise ValueError(
            f"lam = 0 needs delta_hat > 0 for {p.solver.function_name}: the step sizes use "
            "lam + delta_hat/n, the strong convexity of P (delta_hat estimates delta mu^2, "
            "mu^2 the smallest eigenvalue of X^T X); use the adaptive solver or give lam > 0")
    delta_min = 1e-12 * delta0 if lam == 0.0 else 0.0

    b = p.y
    x, ydual, v = initial_point(p.warm_start, p.X, b, p.loss, p.loss_param, method, n, d,
                                weight=c)
    # stopping scale: P(0) for the gap measures, ||grad f(0)||^2 without a regulariser
    c1 = 1.0 if c is None else c
    p0 = float(np.mean(c1 * _losses.value(p.loss, 0.0, b, p.loss_param)))
    if lam > 0.0 or l1 > 0.0:
        scale = p0
    else:
        g0 = np.asarray(p.X.source.T @ (c1 * _losses.derivative(p.loss, 0.0, b, p.loss_param)))
        g0 = g0.ravel() / n
        scale = float(g0 @ g0)
    x_out = None
    if p.callback is not None:
        x_out = x.copy()
        mon.set_coef(x_out)
    (status, n_epochs, primal, dual, gap, measure, kind, delta_final, (tau, sigma, theta),
     (n_up, n_down)) = _spdc.solve(
        p.X.data, p.X.indices, p.X.indptr, d, b, p.loss, p.loss_param, lam, l1, R, method,
        batch_size, x, ydual, v, delta0, rule if adaptive else 0, period, c_lo, c_hi, factor,
        delta_min, p.tol, scale, p.max_epochs, o["check_every"], SAMPLING[o["sampling"]],
        p.seed, mon, x_out=x_out, trace=trace, table_max=table_max, weight=c,
        n_threads=p.n_jobs)
    if c is not None:
        ydual = c * ydual                   # eta -> the weighted problem's dual
    info = dict(p0=p0, scale=scale, measure=MEASURES[kind], delta_hat=delta_final,
                delta0=delta0, tau=tau, sigma=sigma, theta=theta, R=R, gamma=gamma,
                delta=delta)
    if adaptive:
        info.update(n_adapt_up=n_up, n_adapt_down=n_down)
    return Result(status, n_epochs, coef=x, dual=ydual, measure=measure,
                  threshold=p.tol * scale if MEASURES[kind] == "grad_norm2" else
                  threshold(primal - measure, p.tol, scale), info=info,
                  extra={"margins": v} if v is not None else {})


def initial_point(warm_start, Xc, b, loss, param, method, n, d, weight=None):
    """(x0, y0, v0) of the primal-dual solvers (also the batch ones): x0 = 0 or the warm
    start; v0 = the margins of a dual-free model, else A x0 (dual-free methods; None
    otherwise); y0 = phi'(v0) (dual-free), the warm start's dual (checked to lie in the
    domain of phi*) or phi'(A x0). With row weights c (``weight``) y0 is eta = y / c, the
    dual of the unweighted phi* (a warm start's dual is the weighted problem's y = c eta:
    it must be 0 on rows of weight 0 and y / c in the domain of phi* on the others)."""
    x0, y0, v0 = None, None, None
    if warm_start is not None:
        if isinstance(warm_start, Model):
            x0, y0 = warm_start.coef, warm_start.dual
            v0 = warm_start.extra.get("margins")
        elif isinstance(warm_start, tuple):
            if len(warm_start) != 2:
                raise ValueError("warm_start as a tuple must be (coef, dual); got "
                                 f"{len(warm_start)} entries")
            x0, y0 = warm_start
        else:
            x0 = warm_start
        x0 = warm_start_coef(x0, d)
    x = np.zeros(d) if x0 is None else x0
    z = np.zeros(n) if x0 is None else np.asarray(Xc.source @ x, dtype=np.float64).ravel()
    v = None
    if method == DUAL_FREE:
        v = z.copy()
        if v0 is not None:
            v0 = np.asarray(v0, dtype=np.float64).ravel()
            if v0.shape[0] != n or not np.isfinite(v0).all():
                raise ValueError(f"warm_start model's margins must be {n} finite values")
            v[:] = v0
        y = _losses.derivative(loss, v, b, param)
    elif y0 is not None:
        y = np.array(y0, dtype=np.float64, copy=True).ravel()
        if y.shape[0] != n:
            raise ValueError(f"warm_start has {y.shape[0]} dual variables but X has {n} rows")
        if weight is not None:
            if (y[weight == 0] != 0).any():
                raise ValueError("warm_start has nonzero dual variables on rows of weight 0")
            y = np.divide(y, weight, out=np.zeros(n), where=weight > 0)
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

        min_x  P(x) = (1/n) sum_i c_i phi(a_i.x; b_i) + (lam/2) ||x||^2 + l1 ||x||_1

    (``c_i = 1`` unless ``sample_weight`` / ``class_weight`` say otherwise) through the
    saddle point ``min_x max_y (1/n) sum_i (y_i a_i.x - c_i phi*(y_i / c_i; b_i)) + g(x)``
    and the dual ``D(y) = -(1/n) sum_i c_i phi*(y_i / c_i; b_i) - g*(-A^T y / n)`` (a row
    of weight 0 has ``y_i = 0``). With weights the dual step runs on ``eta_i = y_i / c_i``
    (the unweighted step) and ``R = max_i sqrt(c_i) ||a_i||`` in the step sizes
    (docs/primal_dual.md, "Weights"). ``lam = 0`` is
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
        L2 strength; default ``1/n``. Give ``lam`` or ``C``, not both.
    C : float > 0, optional
        liblinear's cost: ``lam = 1 / (C n)``.
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
        Stop when the measure (below) is small enough at an evaluation
        (``stop_reason="converged"``): the duality gap ``P - D <= tol * D`` when ``lam > 0``
        (a certificate: ``(P(x) - P*) / P* <= tol``; or the gap at the rounding floor, 64
        ulps of ``P(0)``); when ``lam = 0`` and ``l1 > 0`` the gap with the dual rescaled
        into the domain of ``g*`` (``y * min(1, l1/||A^T y/n||_inf)``), the same way;
        with no regulariser at all (g* is the indicator of {0}, the gap is always infinite)
        the squared gradient norm ``||A^T phi'(Ax)/n||^2`` relative to its value at x = 0
        (a test, not a certificate). ``tol = 0`` runs the whole budget.
    max_epochs : int >= 0
        Budget in epochs (n sampled rows each); ending here warns (ConvergenceWarning)
        with the measure reached.
    sampling : {"uniform", "permutation"}
        Rows drawn with replacement (the setting of the theory; m > 1: m distinct rows per
        step), or a random permutation per epoch cut into batches.
    check_every : int >= 1
        Evaluate P, D and the measure (one pass over X, plus an O(n_features) catch-up of
        every feature) every this many epochs and after the last; history has NaN in
        between. Adaptation happens only at evaluations.
    seed : int or None
        The same seed gives bit-identical results. The row stream is
        ``dualsolve.primal_dual._spdc.index_stream(seed, n, epochs, batch_size, sampling)``.
    verbose : int
        1 prints one line per epoch: primal, dual, gap, measure, delta_hat, seconds.
    callback : callable, optional
        ``callback(info)`` after every epoch with a dict (epoch, time, primal, dual, gap,
        measure, delta_hat, coef = x at the last evaluation, read-only); return True to
        stop (``stop_reason="callback"``). Ctrl-C stops cleanly too (KeyboardInterrupt
        carrying the partial model as ``exc.model``).
    warm_start : Model, array (n_features,) or tuple (coef, dual), optional
        Start from ``x0 = coef``. SPDC variants also take the dual (it must lie in the
        domain of phi*; None or an array: ``y0 = phi'(A x0)``); dual-free variants start
        from the margins ``v0`` of a dual-free model (``extra["margins"]``), else
        ``v0 = A x0``, and ``y0 = phi'(v0)``.
    n_jobs : int or None
        Threads (default 1, -1 every core; ``docs/api.md``, "Threads"): one-vs-rest
        classes run side by side, the same model as with ``n_jobs=1``, bit for bit. One
        problem on X of 2^18 nonzeros or more: each evaluation's pass over X (the
        certificate's, every ``check_every`` epochs) in ``n_jobs`` blocks of rows where
        each block's share of X is at least its copy of ``2 n_features`` floats; the
        steps serial, except mini-batches of 1,024 nonzeros or more (``batch_size`` times
        the mean row), which step in threads when a clock finds it faster (the features
        by ranges, the dual steps by rows: the serial step's bits either way); the same
        ``n_jobs`` gives the same model bit for bit (memory: ``n_jobs - 1`` copies of
        ``2 n_features`` floats).
    sample_weight : array (n,) of reals >= 0, optional
        Row weights ``c_i`` in the objective above; an integer weight equals repeating the
        row (at the same ``C``), a row of weight 0 leaves the problem (its ``y_i`` is 0).
    class_weight : dict label -> weight >= 0, or "balanced", optional
        Multiplies each row's weight by its class's (liblinear's ``-wi``); ``"balanced"``
        gives class c the weight ``n / (k n_c)``. Classification losses only.
"""

_RETURNS = """
    Returns
    -------
    Model
        ``coef`` = x; ``dual`` = y in the primal-dual convention: ``y_i`` lies in the domain
        of ``c_i phi*(. / c_i; b_i)`` and ``y_i = c_i phi'(a_i.x*; b_i)`` at the optimum, with
        ``x* = -A^T y* / (n lam)`` for a pure L2 term (SDCA's dual is ``-y``). ``history``:
        one row per epoch with epoch, time, primal, dual, gap (``+inf`` where ``g*`` is an
        indicator and ``-A^T y/n`` is outside its domain, e.g. always when lam = l1 = 0),
        measure (the stopping quantity above) and delta_hat (the estimate in use).
        ``stop_reason``, ``n_epochs``; ``params`` holds the final tau, sigma, theta,
        delta_hat (and its start delta0), R, the measure's name and its scale.
        Dual-free models also keep the margins v in ``extra["margins"]``.
"""

_ADAPT = """    delta_hat : float > 0, optional
        Initial estimate Delta of ``delta mu^2``; default ``||X||_F^2 / (gamma d)``, an
        upper bound (start optimistic and let the rule come down).
    period : int >= 1
        Epochs between adaptations (the paper's T).
    rule : {"backtracking", "robust", "simple"}
        Every ``period`` epochs a per-epoch rate is fitted by least squares through the
        origin on the log of the measures of the window (``log(G(t)/G(0))`` against t);
        ``r`` = the fitted decrease over the window and ``p(D) = theta(D)^(period n/m)``
        the decrease Theorem 2 / 4 guarantees with the parameters of ``D`` when
        ``D <= delta mu^2``. ``"backtracking"`` (the default): Algorithm 4 (below) with
        that guarantee as a check, for the squared loss (delta = 1; for delta = 0 no
        ``D > 0`` has a guarantee and the rule is Algorithm 4): if ``log r > log
        p(Delta) / c_hi`` (the rate of Delta is not delivered, so Delta overestimates
        ``delta mu^2``), Delta becomes the largest ``Delta / factor^k`` with ``log r <=
        log p / c_hi`` (one step down if none) and ``rho = r``; Algorithm 4's doubling
        needs ``log r <= log p(factor Delta) / c_hi`` too. Delta never stays where its
        guaranteed rate is not met. ``"robust"`` (Algorithm 4, the paper's experiments):
        ``Delta *= factor``
        if ``r <= c_lo * rho``, ``/= factor`` if ``r >= c_hi * rho`` (then ``rho = r``),
        else unchanged, so a slow but steady rate keeps Delta; ``rho`` starts at
        ``theta^(period n/m)``. ``"simple"`` (Algorithm 3): up if
        ``r < theta^(period n/m)``, else down. Delta never falls below ``1e-12`` times its
        start when lam = 0, and is frozen while the measure is at its rounding floor.
        Without a gap (lam = 0) the measure above is used.
    c_lo, c_hi : float
        Thresholds, ``0 < c_lo < 1 < c_hi`` (0.95, 1.5) on window ratios; c_hi also
        bounds the shortfall of a log-decrease against the guarantee (backtracking).
    factor : float > 1
        Multiplicative change of Delta (2).
"""

_FIXED_DELTA = """    delta_hat : float >= 0, optional
        A known ``delta mu^2`` (the paper's "Opt-" variant when it is the true value);
        default 0. Required (> 0) when ``lam = 0``.
"""


def train_spdc(X, y, *, loss="squared", lam=None, C=None, tol=1e-6, max_epochs=1000, seed=0,
               verbose=0, callback=None, warm_start=None, n_jobs=1, smoothing=None, l1=0.0,
               batch_size=1, delta_hat=None, sampling="uniform", check_every=1,
               sample_weight=None, class_weight=None):
    return fit(SPDC, locals())


def train_ada_spdc(X, y, *, loss="squared", lam=None, C=None, tol=1e-6, max_epochs=1000,
                   seed=0, verbose=0, callback=None, warm_start=None, n_jobs=1, smoothing=None,
                   l1=0.0, batch_size=1, delta_hat=None, period=10, rule="backtracking",
                   c_lo=0.95, c_hi=1.5, factor=2.0, sampling="uniform", check_every=1,
                   sample_weight=None, class_weight=None):
    return fit(ADA_SPDC, locals())


def train_df_spdc(X, y, *, loss="squared", lam=None, C=None, tol=1e-6, max_epochs=1000,
                  seed=0, verbose=0, callback=None, warm_start=None, n_jobs=1, smoothing=None,
                  l1=0.0,
                  batch_size=1, delta_hat=None, sampling="uniform", check_every=1,
                  sample_weight=None, class_weight=None):
    return fit(DF_SPDC, locals())


def train_adf_spdc(X, y, *, loss="squared", lam=None, C=None, tol=1e-6, max_epochs=1000,
                   seed=0, verbose=0, callback=None, warm_start=None, n_jobs=1, smoothing=None,
                   l1=0.0, batch_size=1, delta_hat=None, period=10, rule="backtracking",
                   c_lo=0.95, c_hi=1.5, factor=2.0, sampling="uniform", check_every=1,
                   sample_weight=None, class_weight=None):
    return fit(ADF_SPDC, locals())


train_spdc.__doc__ = """Train a linear model by SPDC (stochastic primal-dual coordinate method).

    Zhang & Xiao's method with the parameters of Wang & Xiao 2017 (Algorithm 5 without
    adaptation).
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

    The estimate Delta of the strong convexity from data is tuned every ``period`` epochs
    from the observed decrease of the duality gap (Wang & Xiao 2017, Algorithm 5 with
    SPDC-Adapt).
""" + _OBJECTIVE + """
    Steps and parameters as ``train_spdc`` with Delta adaptive: after each change the
    iterate is brought up to date and tau, sigma, theta recomputed.
""" + _PARAMS + _ADAPT + _RETURNS

train_df_spdc.__doc__ = """Train a linear model by DF-SPDC (dual-free SPDC).

    Wang & Xiao 2017, Algorithm 7 without adaptation: the dual step is a Bregman step in
    margin space, ``v_k = (v_k + sigma a_k.xt)/(1 + sigma)``, ``y_k = phi'(v_k)``, so it
    needs only phi' (no dual proximal solve, a good fit for logistic regression).
""" + _OBJECTIVE + """
    Theorem 4's parameters (theta_x with the ``2n(sigma + 4)`` of its proof, not the
    printed statement)::

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


# ---------------------------------------------------------------------------------------
# the descriptions

_COMMON_PARAMS = dict(
    l1=[Interval(Real, 0, None, closed="left")],
    batch_size=[Interval(Integral, 1, None)],
    sampling=[Options(*SAMPLING)],
    check_every=[Interval(Integral, 1, None)],
)
_FIXED_PARAMS = dict(_COMMON_PARAMS, delta_hat=[None, Interval(Real, 0, None, closed="left")])
#: the adaptive variants' own options (Ada-/ADF-SPDC here, Ada-BPD in batch.py; the
#: backtracking rule exists for the randomized solvers only)
ADAPT_PARAMS = dict(
    delta_hat=[None, Interval(Real, 0, None, closed="neither")],
    period=[Interval(Integral, 1, None)],
    rule=[Options("robust", "simple")],
    c_lo=[Interval(Real, 0, 1, closed="neither")],
    c_hi=[Interval(Real, 1, None, closed="neither")],
    factor=[Interval(Real, 1, None, closed="neither")],
)
_ADAPT_PARAMS = dict(_COMMON_PARAMS, **ADAPT_PARAMS)
_ADAPT_PARAMS["rule"] = [Options(*RULES)]
CERTIFICATE = ("duality gap " + certified("P(x) - D(y)", "D(y)", "P(0)") + " (lam = 0, l1 > 0: "
               "the rescaled-dual gap, likewise; lam = l1 = 0, no certificate: "
               "||grad P||^2 <= tol ||grad P(0)||^2)")
_HINT = ("lower delta_hat: the steps assume that much strong convexity from the data "
         "(delta * lambda_min(X^T X))")


def _describe(name, summary, method, adaptive):
    return register(Solver(
        name=name, family="primal_dual", summary=summary, losses=LOSSES,
        params=_ADAPT_PARAMS if adaptive else _FIXED_PARAMS,
        history=("measure", "delta_hat"), certificate=CERTIFICATE,
        engine=functools.partial(_engine, method=method, adaptive=adaptive),
        diverge_hint=_HINT, lam_zero=True, unevaluated_nan=True, weights=True))


SPDC = _describe("spdc", "stochastic primal-dual coordinate method (Zhang & Xiao; Wang & "
                 "Xiao's parameters)", EUCLID, False)
ADA_SPDC = _describe("ada_spdc", "SPDC with the strong convexity from data estimated on the "
                     "fly (Wang & Xiao)", EUCLID, True)
DF_SPDC = _describe("df_spdc", "dual-free SPDC: a Bregman dual step that needs only phi' "
                    "(Wang & Xiao)", DUAL_FREE, False)
ADF_SPDC = _describe("adf_spdc", "adaptive dual-free SPDC (Wang & Xiao)", DUAL_FREE, True)

_DESCRIPTIONS = {"train_spdc": (SPDC, train_spdc), "train_ada_spdc": (ADA_SPDC, train_ada_spdc),
                 "train_df_spdc": (DF_SPDC, train_df_spdc),
                 "train_adf_spdc": (ADF_SPDC, train_adf_spdc)}


def run_traced(name, X, y, *, trace=None, table_max=1 << 20, **kw):
    """``name(X, y, **kw)`` with the engine's test hooks: ``trace`` (a float64 array that
    receives a_k.xt for every row visited) and ``table_max`` (the longest pure-L2 catch-up
    table). For tests."""
    solver, fn = _DESCRIPTIONS[name]
    args = inspect.signature(fn).bind(X, y, **kw)
    args.apply_defaults()
    traced = dataclasses.replace(solver, engine=functools.partial(
        solver.engine, trace=trace, table_max=table_max))
    return fit(traced, dict(args.arguments))
