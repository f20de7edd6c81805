"""``train_sdca``: exact dual coordinate ascent for L2-regularised linear models on CSR."""
import numpy as np

from .._core import losses as _losses
from .._driver import Result, Solver, fit, register
from .._params import Anything, Boolean, Integral, Interval, Options, Real
from ..model import warm_start_dual
from . import _sdca
from .intercept import SMOOTH_LOSSES, solve_free_intercept

SAMPLING = {"permutation": 0, "uniform": 1}        # _sdca.pxd SAMPLE_*
LOSSES = ("logistic", "squared_hinge", "smooth_hinge", "hinge", "squared", "epsilon_insensitive",
          "squared_epsilon_insensitive")


def train_sdca(X, y, *, loss="logistic", lam=None, C=None, tol=1e-6, max_epochs=5000, seed=0,
               verbose=0, callback=None, warm_start=None, smoothing=None, epsilon=None,
               fit_intercept=False, penalize_intercept=True, intercept_scaling=1.0,
               check_every="auto", shrinking=True, sampling="permutation", sample_weight=None,
               class_weight=None):
    """Train an L2-regularised linear model by stochastic dual coordinate ascent (SDCA).

    Solves, with ``n`` rows and ``w`` of length ``n_features``::

        min_w  P(w) = (1/n) sum_i c_i loss(y_i, x_i.w) + (lam/2) ||w||^2

    (``c_i = 1`` unless ``sample_weight`` / ``class_weight`` say otherwise)

    through its dual ``max_a D(a) = -(lam/2)||X^T a/(lam n)||^2 - (1/n) sum_i loss*(-a_i)``,
    one coordinate at a time, exactly (closed forms; a safeguarded Newton step for logistic),
    with liblinear's loop: precomputed squared row norms, ``w`` kept incrementally, a random
    permutation of the rows each epoch and shrinking of rows stuck at a bound. Each epoch ends
    with the exact duality gap ``P(w) - D(a)`` (scores recomputed from scratch); the solver
    stops when it is ``<= tol * P(0)``, after recomputing ``w`` from ``a``, so the returned gap
    is a certificate: ``P(w) - P* <= gap``.

    Losses, with margin ``m = y x.w`` and ``y`` in {-1, +1}:

    ``"logistic"``       log(1 + exp(-m))                       (liblinear -s 7 / -s 0)
    ``"squared_hinge"``  max(0, 1 - m)^2                        (liblinear -s 1 / -s 2)
    ``"hinge"``          max(0, 1 - m)                          (liblinear -s 3)
    ``"smooth_hinge"``   1 - m - s/2 if m < 1 - s; (1 - m)^2/(2s) if m < 1; else 0
                         (``s = smoothing``, default 0.5)
    ``"squared"``        (y - x.w)^2 / 2, y real (ridge regression)

    Support vector regression, ``y`` real, ``e = epsilon`` (default 0.1, liblinear's ``-p``):

    ``"epsilon_insensitive"``          max(0, |y - x.w| - e)            (liblinear -s 13)
    ``"squared_epsilon_insensitive"``  max(0, |y - x.w| - e)^2          (liblinear -s 12 / -s 11)

    that is, with ``C = 1/(lam n)``, liblinear's L1-loss SVR
    ``min_w (1/2)||w||^2 + C sum_i max(0, |y_i - x_i.w| - e)`` and L2-loss SVR
    ``min_w (1/2)||w||^2 + C sum_i max(0, |y_i - x_i.w| - e)^2`` divided by ``C n``. Their
    dual terms are ``loss*(-a) = -a y + e|a|`` on ``|a| <= 1`` and ``-a y + e|a| + a^2/4``;
    each coordinate step is an exact soft threshold. Shrinking does not apply to them.

    Parameters
    ----------
    X : sparse matrix/array (n, n_features)
        CSR (``csr_matrix`` or ``csr_array``, float32/float64, int32/int64 indices, unsorted
        indices allowed) is used without a copy; dense and other formats are converted once.
    y : array (n,)
        Two distinct values for classification (the larger is the positive class ``+1``),
        reals for the regression losses (``"squared"`` and the epsilon-insensitive ones).
    loss : str
    lam : float > 0, optional
        L2 strength; default ``1/n``. Give ``lam`` or ``C``, not both.
    C : float > 0, optional
        liblinear's cost: ``lam = 1 / (C n)``.
    fit_intercept : bool
        Fit an intercept ``b`` (scores ``x.w + b``).
    penalize_intercept : bool
        True (liblinear's ``-B``): ``b = intercept_scaling * w_b`` for an implicit constant
        feature whose weight ``w_b`` is regularised like the others (X is not copied).
        False: ``b`` is free, ``min_{w,b} (1/n) sum_i c_i loss(y_i, x_i.w + b) +
        (lam/2)||w||^2`` (scikit-learn's intercept), solved exactly by rounds of SDCA at a
        fixed ``b`` and exact updates of ``b``, and certified by the duality gap of the
        joint problem (``dualsolve/sdca/intercept.py``); smooth losses only.
    intercept_scaling : float > 0
        The constant feature's value when the intercept is penalised.
    smoothing : float > 0, optional
        Width of the smoothed hinge (``loss="smooth_hinge"`` only).
    epsilon : float >= 0, optional
        Width of the insensitive zone of ``"epsilon_insensitive"`` and
        ``"squared_epsilon_insensitive"`` (those losses only); default 0.1.
    tol : float >= 0
        Stop when the duality gap is ``<= tol * P(0)`` (``stop_reason="converged"``: the gap
        certifies ``P(w) - P* <= tol * P(0)``). ``tol=0`` runs the whole budget.
    max_epochs : int >= 0
        One epoch is one pass over the rows; ending here warns (ConvergenceWarning) with
        the gap reached.
    check_every : "auto" or int >= 1
        When to compute the exact duality gap (one extra pass over X). ``1``: after every
        epoch, so ``history`` has the gap of every epoch. ``k``: every k epochs. ``"auto"``:
        when the gap seen during the pass (each row's Fenchel-Young gap just before its
        step, free to compute) reaches ``tol``, and otherwise often enough that checks cost
        at most a ninth of the work; epochs without a check have NaN primal/dual/gap in
        ``history`` and the pass estimate in ``gap_estimate``. Whatever the setting, the
        solver stops only on an exact, certified gap.
    shrinking : bool
        Drop rows whose dual variable is stuck at a bound (hinge-type losses); they are
        re-checked at every gap evaluation and re-activated when they violate optimality.
    sampling : {"permutation", "uniform"}
        A random permutation each epoch (liblinear), or n draws with replacement.
    seed : int or None
        Seed of the random row order; the same seed gives the same iterates.
    verbose : int
        1 prints one line per epoch: primal, dual, gap, active rows, seconds.
    callback : callable, optional
        ``callback(info)`` after every epoch with a dict (epoch, time, primal, dual, gap,
        gap_estimate, n_active, coef); return True to stop (``stop_reason="callback"``).
        An exception it raises reaches the caller after the solve has stopped.
    warm_start : Model or array (n,), optional
        Dual variables to start from (e.g. a model trained at a nearby ``lam``).
    sample_weight : array (n,) of reals >= 0, optional
        Row weights ``c_i``; an integer weight equals repeating the row (at the same ``C``).
    class_weight : dict label -> weight >= 0, or "balanced", optional
        Multiplies each row's weight by its class's (liblinear's ``-wi``); ``"balanced"``
        gives class c the weight ``n / (k n_c)``. With more than two classes each row keeps
        its own class's weight in every one-vs-rest problem (scikit-learn's rule; liblinear
        weighs only the positive class of each).
    More than two classes: one-vs-rest (``dualsolve.multiclass``), ``coef`` (k, n_features).

    Returns
    -------
    Model
        ``coef``, ``intercept``, ``dual`` (``w = X^T dual / (lam n)``), ``history`` (one row
        per epoch: epoch, time, primal, dual, gap, gap_estimate, n_active),
        ``stop_reason``, ``n_epochs``; ``params["p0"]`` is P(0).
    """
    return fit(SDCA, locals())


def _engine(p, o, mon):
    if o["fit_intercept"] and not o["penalize_intercept"]:
        return _free_intercept_engine(p, o, mon)
    bias = o["intercept_scaling"] if o["fit_intercept"] else 0.0
    alpha = initial_dual(p.warm_start, p.y, p.loss, p.loss_param, p.n, p.weight)
    w = np.zeros(p.d + (1 if o["fit_intercept"] else 0))
    mon.set_coef(w)
    check = 0 if o["check_every"] == "auto" else o["check_every"]
    status, n_epochs, primal, dual, gap, p0 = _sdca.solve(
        p.X.data, p.X.indices, p.X.indptr, p.d, p.y, p.loss, p.loss_param, p.lam, bias, w,
        alpha, p.tol, p.max_epochs, check, o["shrinking"], SAMPLING[o["sampling"]], p.seed,
        mon, p.X.sqnorm, weight=p.weight)
    return Result(status, n_epochs, coef=w[:p.d], intercept=w[p.d] * bias if bias else 0.0,
                  dual=alpha, measure=gap, threshold=p.tol * p0, info=dict(p0=p0))


def _free_intercept_engine(p, o, mon):
    if p.loss not in SMOOTH_LOSSES:
        raise ValueError(f"penalize_intercept=False needs a smooth loss (one of "
                         f"{list(SMOOTH_LOSSES)}) for its certificate; got loss={p.loss!r} "
                         "(use penalize_intercept=True, liblinear's -B, for it)")
    alpha = initial_dual(p.warm_start, p.y, p.loss, p.loss_param, p.n, p.weight)
    w = np.zeros(p.d)
    mon.set_coef(w)
    status, n_epochs, b, gap, p0, rounds = solve_free_intercept(
        p, o, mon, _sdca.solve, alpha, w, SAMPLING[o["sampling"]])
    return Result(status, n_epochs, coef=w, intercept=b, dual=alpha, measure=gap,
                  threshold=p.tol * p0, info=dict(p0=p0, intercept_rounds=rounds))


def initial_dual(warm_start, y, loss, param, n, weight=None):
    """The dual variables to start from: zeros, or a warm start's (a Model or an array of
    n), which must lie in the dual domain of the (weighted) loss for these labels."""
    if warm_start is None:
        return np.zeros(n)
    alpha = warm_start_dual(warm_start, n)
    scaled = alpha
    if weight is not None:              # the domain of c h(a / c); a row of weight 0 has a = 0
        if (alpha[weight == 0] != 0).any():
            raise ValueError("warm_start has nonzero dual variables on rows of weight 0")
        scaled = np.divide(alpha, weight, out=np.zeros(n), where=weight > 0)
    if not np.isfinite(_losses.conjugate(loss, scaled, y, param)).all():
        raise ValueError("warm_start dual variables lie outside the dual domain of the loss "
                         "for these labels (was it trained with another loss or labels?)")
    return alpha


SDCA = register(Solver(
    name="sdca", family="sdca",
    summary="exact dual coordinate ascent with liblinear's loop (shrinking, permutations)",
    losses=LOSSES,
    params=dict(fit_intercept=[Boolean()],
                penalize_intercept=[Boolean()],
                intercept_scaling=[Interval(Real, 0, None, closed="neither")],
                check_every=[Options("auto"), Interval(Integral, 1, None)],
                shrinking=[Boolean()],
                sampling=[Options(*SAMPLING)],
                sample_weight=[None, Anything("an array of n weights")],
                class_weight=[None, Anything("a dict or 'balanced'")]),
    weights=True,
    history=("gap_estimate", "n_active"),
    certificate="duality gap P(w) - D(a) <= tol * P(0)",
    engine=_engine, unevaluated_nan=True))
