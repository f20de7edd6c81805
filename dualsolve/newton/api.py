"""``train_newton``: a primal truncated Newton method for L2-regularised linear models,
certified by the duality gap of the dual point its gradient gives."""
import numpy as np

from .._core import losses as _losses
from .._core.status import CONVERGED
from .._driver import Result, Solver, certified, fit, register, threshold
from .._params import Boolean, Interval, Integral, Real
from ..model import Model, warm_start_coef
from . import _newton

#: the differentiable losses, and the two without a gradient, solved by continuation on
#: their Moreau envelopes
LOSSES = _losses.SMOOTH_LOSSES + ("hinge", "epsilon_insensitive")


def train_newton(X, y, *, loss="logistic", lam=None, C=None, tol=1e-6, max_epochs=1000,
                 seed=0, verbose=0, callback=None, warm_start=None, n_jobs=1, smoothing=None,
                 epsilon=None, fit_intercept=False, intercept_scaling=1.0, cg_forcing=0.1,
                 max_cg=1000, sample_weight=None, class_weight=None):
    """Train an L2-regularised linear model by a primal Newton method (line search, with
    conjugate gradients on Hessian-vector products): the solver for large C.

    Solves, with ``n`` rows, ``w`` of length ``n_features`` and a differentiable loss::

        min_w  P(w) = (1/n) sum_i c_i loss(y_i, x_i.w) + (lam/2) ||w||^2

    (``c_i = 1`` unless ``sample_weight`` / ``class_weight`` say otherwise; liblinear's
    ``(1/2)||w||^2 + C sum_i c_i loss`` divided by ``C n``). Each iteration computes the
    gradient ``g = lam w + (1/n) X^T (c phi'(Xw))`` and the diagonal of the Hessian in one pass
    over X, solves ``H s = -g`` by conjugate gradients preconditioned with that diagonal until
    ``||H s + g|| <= cg_forcing ||g||`` (each product ``H v = lam v + (1/n) X^T (c phi''(Xw)
    X v)`` is one pass), and takes the longest step ``t`` in 1, 1/2, 1/4, ... that decreases P
    by Armijo's rule, evaluated on the scores ``Xw + t Xs`` without further passes. On
    narrow data (a9a, w8a: forming and factoring the Hessian ``lam I + (1/n) X^T D X``
    costs at most 50 products, at most 2048 columns), once CG would need more products in
    an iteration than that costs, one pass forms the Hessian and its Cholesky factor solves
    ``H s = -g`` exactly, in that iteration and the ones after it
    (``params["dense_steps"]`` counts them; their ``cg_iters`` is 0). Its cost hardly
    depends on C, where dual coordinate ascent (``train_sdca``) slows down (see
    ``docs/newton.md``; Lin, Weng & Keerthi, JMLR 2008, and Hsia, Chiang & Lin, ACML 2018,
    describe liblinear's trust-region and line-search versions).

    Certificate: after every iteration the dual point ``a_i = -c_i phi'(x_i.w)`` of the SDCA
    dual ``D(a) = -(lam/2)||X^T a/(lam n)||^2 - (1/n) sum_i c_i loss*(-a_i/c_i)`` is feasible,
    and ``gap = P(w) - D(a)`` (equal to ``||g||^2 / (2 lam)``, computed term by term with
    compensated sums) bounds ``P(w) - P*``. The solver stops when ``gap <= tol * D(a)`` (so
    ``(P(w) - P*) / P* <= tol``; or at the rounding floor, 64 ulps of P(0)), on scores
    recomputed from ``w``. Where CG solves every iteration (wide data), a gap within 16x of
    ``tol * D(a)`` has ``a`` polished by two passes of ``train_sdca``'s coordinate steps
    first, and a certified ``P(w) - D(a')`` ends the solve with that ``a'`` (at a small lam
    most of the gap is the dual's share, which the passes remove: an iteration saved).

    Losses (``m = y x.w``, ``y`` in {-1, +1}; regression ``y`` real): ``"logistic"``
    ``log(1 + exp(-m))`` (liblinear -s 0), ``"squared_hinge"`` ``max(0, 1 - m)^2`` (-s 2),
    ``"smooth_hinge"`` (``smoothing``), ``"squared"`` ``(y - x.w)^2 / 2``,
    ``"squared_epsilon_insensitive"`` ``max(0, |y - x.w| - epsilon)^2`` (-s 11). The
    squared hinge and squared epsilon-insensitive losses are once differentiable; their
    generalised Hessian is used, as in liblinear. ``"hinge"`` ``max(0, 1 - m)`` (-s 3) and
    ``"epsilon_insensitive"`` ``max(0, |y - x.w| - epsilon)`` (-s 13) have no gradient:
    Newton then steps on their Moreau envelope of width ``mu`` (the smooth hinge of width mu;
    the epsilon-insensitive loss made quadratic for excesses below mu), starting from mu = 1
    (the hinge) or the largest excess at the start (so that every row starts in the
    quadratic part), and narrows mu tenfold whenever the envelope's own gap
    ``||g||^2 / (2 lam)`` falls below half the gap of the true loss. The dual point
    ``a = -c phi_mu'(Xw)`` is feasible for the true loss, so the certificate, and the
    stopping rule, are those of the problem asked for (docs/newton.md).

    Parameters
    ----------
    X : sparse matrix/array (n, n_features)
        CSR (float32/float64 data, int32/int64 indices) is used without a copy.
    y : array (n,)
        Two or more classes (more: one-vs-rest), or reals for the regression losses.
    loss : str
    lam : float > 0, optional
        L2 strength; default ``1/n``. Give ``lam`` or ``C``, not both.
    C : float > 0, optional
        liblinear's cost: ``lam = 1 / (C n)``.
    tol : float >= 0
        Stop when the duality gap is ``<= tol * D(a)``: a relative suboptimality ``<= tol``;
        ``tol=0`` runs the budget.
    max_epochs : int >= 0
        Newton iterations (one "epoch" here is one iteration: a gradient pass, ``cg_iters``
        Hessian-vector products and a pass for the line search; the history's ``passes``
        column counts the passes over X).
    seed : int or None
        Unused (the method is deterministic); accepted for the common contract.
    verbose : int
        1 prints one line per iteration.
    callback : callable, optional
        ``callback(info)`` after every iteration (epoch, time, primal, dual, gap, cg_iters,
        step, passes, coef); return True to stop. An exception it raises reaches the caller
        after the solve has stopped.
    warm_start : Model or array (n_features,), optional
        Coefficients to start from (any model of the same features: e.g. from a nearby C,
        or from a few epochs of ``train_sdca``); with ``fit_intercept`` a Model's intercept
        too.
    n_jobs : int or None
        Threads (default 1, -1 every core; ``docs/api.md``, "Threads"): one-vs-rest
        classes run side by side, the same model as with ``n_jobs=1``, bit for bit. One
        problem on X of 2^18 nonzeros or more: the passes over X (gradient, Hessian
        products, scores) in ``n_jobs`` blocks of rows and CG's vector sweeps in as many
        ranges of features, each block summing into its own copy of the vectors (memory:
        ``n_jobs - 1`` copies of ``2 n_features`` floats, and on narrow X, where the
        explicit Hessian is formed, of that ``n_features^2`` matrix). The same ``n_jobs``
        gives the same model bit for bit; another count sums in another order (the same
        optimum to the certified tolerance).
    smoothing, epsilon : float, optional
        The parameter of ``"smooth_hinge"`` / of the epsilon-insensitive loss (default 0.1).
    fit_intercept : bool
        Fit an intercept as the weight of a constant feature ``intercept_scaling``,
        regularised like the others (liblinear's ``-B``).
    intercept_scaling : float > 0
    cg_forcing : float in (0, 1)
        Relative residual at which conjugate gradients stop (liblinear uses 0.1).
    max_cg : int >= 1
        Most Hessian-vector products per iteration.
    sample_weight, class_weight :
        Row weights ``c_i`` and class weights, as in ``train_sdca``.

    Returns
    -------
    Model
        ``coef``, ``intercept``, ``dual`` (the certificate's ``a``, with ``coef`` the primal
        iterate: ``-c phi'(X coef)``, or its polish), ``history`` (one row per iteration:
        epoch, time, primal, dual, gap, cg_iters, step, passes), ``stop_reason``,
        ``n_epochs``; ``params["p0"]`` is P(0).
    """
    return fit(NEWTON, locals())


def _engine(p, o, mon):
    bias = o["intercept_scaling"] if o["fit_intercept"] else 0.0
    w = np.zeros(p.d + (1 if bias else 0))
    w[:p.d] = warm_start_coef(p.warm_start, p.d)
    if bias and isinstance(p.warm_start, Model):
        w[p.d] = float(p.warm_start.intercept) / bias
    mon.set_coef(w[:p.d])
    dual_point = np.zeros(p.n)
    # a path's solve keeps its training rows' scores (extra["margins"], as SDCA's do): the
    # next start's extrapolation reads them instead of a pass over X
    scores = np.empty(p.n) if p.path_start else None
    status, n_epochs, passes, primal, dual, gap, p0, stalled, dense_steps = _newton.solve(
        p.X.data, p.X.indices, p.X.indptr, p.d, p.y, p.loss, p.loss_param, p.lam, bias, w,
        p.tol, p.max_epochs, o["cg_forcing"], o["max_cg"], mon, dual_point, weight=p.weight,
        scores=scores, sqnorm=p.X.sqnorm, n_threads=p.n_jobs)
    note = ""
    if stalled == _newton.STALLED_ROUNDING:
        note = ("The line search found no decrease at this precision (the gap is at the "
                "rounding level of the objective): a smaller tol cannot be certified")
    elif stalled == _newton.STALLED_SMOOTHING:
        note = (f"The smoothing continuation stopped gaining: the {p.loss} loss's gap did "
                "not drop by a tenth in 50 Newton iterations, or the narrowest envelope is "
                "solved (docs/newton.md: slow on nearly separable data); "
                + ("train_sdca, where train_linear sends the hinge, certifies it"
                   if p.loss == "hinge" else "try train_sdca"))
    return Result(status, n_epochs, coef=w[:p.d], intercept=w[p.d] * bias if bias else 0.0,
                  dual=dual_point, measure=gap, threshold=threshold(dual, p.tol, p0), note=note,
                  info=dict(p0=p0, passes=passes, dense_steps=dense_steps),
                  extra={"margins": scores} if p.path_start and status == CONVERGED else {})


NEWTON = register(Solver(
    name="newton", family="newton",
    summary="primal line-search Newton with preconditioned CG (the large-C solver)",
    losses=LOSSES,
    params=dict(fit_intercept=[Boolean()],
                intercept_scaling=[Interval(Real, 0, None, closed="neither")],
                cg_forcing=[Interval(Real, 0, 1, closed="neither")],
                max_cg=[Interval(Integral, 1, None)]),
    weights=True,
    history=("cg_iters", "step", "passes"),
    certificate="duality gap " + certified("P(w) - D(a)", "D(a)", "P(0)")
    + ", a = -phi'(Xw) (for hinge and epsilon_insensitive: -phi_mu', the derivative of the "
    "smoothing Newton steps on)",
    engine=_engine))
