"""Primal baselines of the linear primal-dual family (Wang & Xiao 2017 compare against them in
their figures 2 and 3): ``train_svrg`` (proximal SVRG, Xiao & Zhang 2014) and
``train_katyusha`` (Allen-Zhu 2017, the strongly convex version).

Both minimise, with ``n`` rows ``a_i`` of X and ``x`` of length ``n_features``::

    P(x) = (1/n) sum_i c_i phi(a_i.x; b_i) + (lam/2) ||x||^2 + l1 ||x||_1

(row weights ``c_i`` from ``sample_weight`` / ``class_weight``, all 1 by default) with
variance-reduced stochastic gradients of the loss part and the proximal map of the
regulariser. The loops are in ``_svrg.pyx`` (``svrg_run``); a stochastic step costs O(nnz of
the row) (the dense snapshot-gradient term is applied just in time per feature, see there).
"""
import dataclasses
import functools
import inspect
import math

from .._driver import Result, Solver, certified, fit, register, threshold
from .._params import Integral, Interval, Options, Real
from ..model import warm_start_coef
from . import _svrg

LOSSES = ("squared", "logistic", "smooth_hinge", "squared_hinge")
OPTIONS = {"I": 1, "II": 2}
MEASURES = {0: "gap", 1: "rescaled_gap", 2: "grad_norm2"}
SVRG, KATYUSHA = 0, 1                               # _svrg.pxd SVRG_METHOD_*


def _smoothness(loss, param):
    """c with phi'' <= c: the row smoothness is L_i = c ||a_i||^2."""
    if loss == "squared":
        return 1.0
    if loss == "logistic":
        return 0.25
    return 1.0 / param          # smooth hinge (width param), squared hinge (scale param)


def _engine(p, o, mon, *, method, trace=None, table_max=65536):
    n, d = p.n, p.d
    lam, l1 = p.lam, o["l1"]
    m = 2 * n if o["steps_per_epoch"] is None else o["steps_per_epoch"]
    # L_max: the largest row smoothness of the loss part, c_i times that of phi_i (0 only
    # when X has no entries; then any step works and 1 is used)
    sq = p.X.sqnorm if p.weight is None else p.weight * p.X.sqnorm
    L = _smoothness(p.loss, p.loss_param) * float(sq.max())
    if not L > 0.0:
        L = 1.0
    x = warm_start_coef(p.warm_start, d)
    tau1, option = 0.0, 0
    if method == SVRG:
        step = 0.1 / L if o["step"] is None else o["step"]
        info = dict(step=step, L=L)
    else:
        option = o["option"] or ("I" if l1 == 0.0 else "II")
        step = 1.0 / (3.0 * L) if o["step"] is None else o["step"]
        tau1 = o["tau1"]
        if tau1 is None:
            if lam == 0.0:
                raise ValueError("train_katyusha with lam = 0 needs tau1: its default "
                                 "min(sqrt(steps_per_epoch * sigma / (3 L)), 1/2) uses sigma = "
                                 "lam > 0 (the strongly convex version of Katyusha)")
            tau1 = min(math.sqrt(m * lam * step), 0.5)
        info = dict(step=step, tau1=tau1, tau2=0.5, alpha=step / tau1, option=option,
                    L=1.0 / (3.0 * step), L_max=L)
        option = OPTIONS[option]
    mon.set_coef(x)
    status, n_epochs, primal, dual, gap, measure, kind, p0, scale = _svrg.solve(
        p.X.data, p.X.indices, p.X.indptr, d, p.y, p.loss, p.loss_param, lam, l1, x, method,
        step, m, tau1, option, p.tol, p.max_epochs, p.seed, mon, trace=trace,
        table_max=table_max, weight=p.weight, n_threads=p.n_jobs)
    info.update(steps_per_epoch=m, p0=p0, scale=scale, measure=MEASURES[kind])
    return Result(status, n_epochs, coef=x, measure=measure,
                  threshold=p.tol * scale if MEASURES[kind] == "grad_norm2" else
                  threshold(primal - measure, p.tol, p0), info=info)


_OBJECTIVE = """
    Solves, with ``n`` rows ``a_i`` of X, targets or labels ``b_i`` and ``x`` of length
    ``n_features``::

        min_x  P(x) = (1/n) sum_i c_i phi(a_i.x; b_i) + (lam/2) ||x||^2 + l1 ||x||_1

    (``lam >= 0``, ``l1 >= 0``; ``c_i = 1`` unless ``sample_weight`` / ``class_weight`` say
    otherwise). The loss part ``f(x) = (1/n) sum_i c_i phi(a_i.x; b_i)`` enters
    through variance-reduced stochastic gradients, the regulariser through its proximal map
    ``S(v, t l1) / (1 + t lam)`` (S = soft threshold). Losses (``m = b a.x``, ``b`` in
    {-1, +1} for classification), with ``L_i = c_i c ||a_i||^2`` the smoothness of row i and
    ``L = max_i L_i``:

    ``"squared"``        (a.x - b)^2 / 2, b real                            c = 1
    ``"logistic"``       log(1 + exp(-m))                                   c = 1/4
    ``"smooth_hinge"``   1 - m - s/2 if m < 1 - s; (1 - m)^2/(2s) if m < 1; else 0
                         (``s = smoothing``, default 0.5)                   c = 1/s
    ``"squared_hinge"``  max(0, 1 - m)^2                                    c = 2

    An epoch is one snapshot and ``steps_per_epoch`` (default 2n) stochastic steps. The
    snapshot's pass over X gives P at the snapshot (every score recomputed), the per-row
    derivatives ``phi'(a_i.xs)`` (kept, n doubles, so a step evaluates one row derivative)
    and the full gradient ``mu`` of the loss part; then the steps draw rows uniformly with
    replacement. A step costs O(nnz of the row): the snapshot gradient is a constant dense
    term between snapshots, applied to each feature just in time when the feature is next
    read, and to all features at the end of the epoch (O(n_features)).

    Certificate (the stopping rule): the snapshot's derivatives are a dual point,
    ``y_i = c_i phi'(a_i.xs; b_i)``, of the Fenchel dual of the regularised problem

        D(y) = -(1/n) sum_i c_i phi*(y_i / c_i; b_i) - ||S(-mu, l1)||^2 / (2 lam),
        mu = X^T y / n

    (a row of weight 0 has ``y_i = 0`` and no term),

    so the duality gap ``P(xs) - D(y) >= P(xs) - P*`` costs the n conjugates and O(d) on
    top of the snapshot. The solver stops (``stop_reason="converged"``) when it is
    ``<= tol * D(y)``, so ``(P(xs) - P*) / P* <= tol`` (or at the rounding floor, 64 ulps
    of ``P(0)``, the objective at x = 0; the bound does not depend on the start, so a warm
    start near the optimum stops at once). With
    ``lam = 0`` and ``l1 > 0`` the dual is first scaled into the domain of the L1 term's
    conjugate (``s y``, ``s = min(1, l1 / ||mu||_inf)``), still a certificate; with
    ``lam = l1 = 0`` there is no dual (gap = +inf) and the test is
    ``||grad P(xs)||^2 <= tol ||grad P(0)||^2``. Otherwise the run ends at ``max_epochs``
    (a ConvergenceWarning with the measure reached), when the callback returns True, or
    with ``stop_reason="diverged"`` (a warning naming ``step``) when the objective
    becomes NaN/inf or grows far above its start.

    History: one row per epoch (row 0 is the starting point) with primal, dual, gap and
    measure (the stopping quantity: the gap, or the squared gradient norm without a
    regulariser) at the snapshot, and ``passes``: the component-gradient evaluations so far
    divided by n (1 per snapshot, ``steps_per_epoch / n`` per epoch of steps).
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
        L2 strength; default ``1/n``. Give ``lam`` or ``C``, not both.
    C : float > 0, optional
        liblinear's cost: ``lam = 1 / (C n)``.
    l1 : float >= 0
        L1 strength (``lam > 0`` too: elastic net).
    smoothing : float > 0, optional
        Width of the smoothed hinge.
"""

_WEIGHTS = """
    sample_weight : array (n,) of reals >= 0, optional
        Row weights ``c_i`` in the objective above; an integer weight equals repeating the
        row (at the same ``C``), a row of weight 0 leaves the problem. The rows are still
        drawn uniformly; the default step uses the weighted smoothness ``max_i c_i c
        ||a_i||^2``.
    class_weight : dict label -> weight >= 0, or "balanced", optional
        Multiplies each row's weight by its class's (liblinear's ``-wi``); ``"balanced"``
        gives class c the weight ``n / (k n_c)``. Classification losses only.
"""

_TAIL = """
    tol : float >= 0
        Stop when the duality gap at the snapshot is ``<= tol * D`` (see "Certificate"
        above). ``tol = 0`` runs ``max_epochs`` epochs.
    max_epochs : int >= 0
        Epochs (snapshots); ending here warns (ConvergenceWarning) with the gap reached.
    seed : int or None
        Seed of the row draws (``dualsolve._core.rng``); the same seed gives the same
        iterates. The rows of the whole run are ``rng.uniform_draws(seed, n, .)``.
    verbose : int
        1 prints one line per epoch (primal, dual, gap, measure, passes, seconds).
    callback : callable, optional
        ``callback(info)`` after every epoch with a dict (epoch, time, primal, dual, gap,
        measure, passes, coef = the snapshot, read-only); return True to stop
        (``stop_reason="callback"``).
    warm_start : Model or array (n_features,), optional
        Starting point (e.g. ``previous_model.coef`` for a nearby ``lam``).
    n_jobs : int or None
        Threads (default 1, -1 every core; ``docs/api.md``, "Threads"): one-vs-rest
        classes run side by side, the same model as with ``n_jobs=1``, bit for bit. One
        problem on X of 2^18 nonzeros or more: each snapshot's pass over X (its full
        gradient) in ``n_jobs`` blocks of rows, the stochastic steps serial; the same
        ``n_jobs`` gives the same model bit for bit (memory: ``n_jobs - 1`` copies of the
        gradient).

    Returns
    -------
    Model
        ``coef`` (the last snapshot), ``dual`` None, ``history`` (epoch, time, primal,
        dual, gap, measure, passes), ``stop_reason``, ``n_epochs``, ``params`` (with the
        step sizes used, P(0) as ``p0`` and the measure's name).
"""


def train_svrg(X, y, *, loss="squared", lam=None, C=None, tol=1e-6, max_epochs=1000, seed=0,
               verbose=0, callback=None, warm_start=None, n_jobs=1, smoothing=None, l1=0.0,
               step=None,
               steps_per_epoch=None, sample_weight=None, class_weight=None):
    """Train a linear model by proximal SVRG (Prox-SVRG, Xiao & Zhang 2014).

    {objective}

    Epoch s, from the snapshot ``xs`` (the last iterate of the previous epoch; epoch 1 starts
    from the warm start or 0), with ``mu = grad f(xs)``: ``steps_per_epoch`` times, draw a
    row i and

        x <- prox_{{eta psi}}( x - eta (mu + (phi_i'(a_i.x) - phi_i'(a_i.xs)) a_i) ),

    ``psi = (lam/2)||.||^2 + l1 ||.||_1``; then ``xs = x``. The snapshot is the last iterate
    (the usual practice), not the average of the epoch's iterates that Xiao & Zhang's
    analysis uses. The method adapts to the strong convexity of P by itself, including
    strong convexity from the data.

    {params}
    step : float > 0, optional
        eta; default ``0.1 / L`` (Xiao & Zhang's experimental setting; their theory needs
        ``eta < 1 / (4 L)``). It scales with the data through ``L = c max_i c_i ||a_i||^2``.
    steps_per_epoch : int >= 1, optional
        Stochastic steps per epoch (the snapshot period m); default ``2 n``.
    {weights}
    {tail}"""
    return fit(SVRG_SOLVER, locals())


def train_katyusha(X, y, *, loss="squared", lam=None, C=None, tol=1e-6, max_epochs=1000,
                   seed=0, verbose=0, callback=None, warm_start=None, n_jobs=1, smoothing=None,
                   l1=0.0, step=None, tau1=None, option=None, steps_per_epoch=None,
                   sample_weight=None, class_weight=None):
    """Train a linear model by Katyusha (Allen-Zhu 2017, Algorithm 1, strongly convex case).

    {objective}

    Parameters as in Allen-Zhu's experiments: ``m = steps_per_epoch = 2n``, ``tau2 = 1/2``,
    ``tau1 = min(sqrt(m sigma / (3 L)), 1/2)``, ``alpha = 1 / (3 tau1 L)``, with sigma = lam
    the strong convexity of psi; the iteration, option I / II of the y step, and the
    snapshot as the weighted average of the epoch's y iterates with weights
    ``(1 + alpha sigma)^j``. Start: ``y = z = xs = x0``. Epoch s, with ``mu = grad f(xs)``,
    ``steps_per_epoch`` times: draw a row i and

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
        formulas is ``1 / (3 step)``); default ``1 / (3 L_max)``, ``L_max = c max_i c_i
        ||a_i||^2``.
    tau1 : float in (0, 1/2], optional
        Momentum weight; default ``min(sqrt(steps_per_epoch * lam * step), 1/2)`` (the
        formula above). Required when ``lam = 0`` (the strongly convex parameters need
        sigma = lam > 0).
    option : {{"I", "II"}}, optional
        The y step (see above); default "I" when ``l1 = 0``, "II" when ``l1 > 0``.
    steps_per_epoch : int >= 1, optional
        Stochastic steps per epoch m; default ``2 n``.
    {weights}
    {tail}"""
    return fit(KATYUSHA_SOLVER, locals())


for _f in (train_svrg, train_katyusha):
    _f.__doc__ = _f.__doc__.format(objective=_OBJECTIVE.strip(), params=_PARAMS.strip(),
                                   weights=_WEIGHTS.strip(), tail=_TAIL.strip())
del _f


# ---------------------------------------------------------------------------------------
# the descriptions

_PARAMS_SVRG = dict(
    l1=[Interval(Real, 0, None, closed="left")],
    step=[None, Interval(Real, 0, None, closed="neither")],
    steps_per_epoch=[None, Interval(Integral, 1, None)],
)
_PARAMS_KATYUSHA = dict(
    _PARAMS_SVRG,
    tau1=[None, Interval(Real, 0, 0.5, closed="right")],
    option=[None, Options(*OPTIONS)],
)
CERTIFICATE = ("duality gap " + certified("P(xs) - D(phi'(X xs))", "D(phi'(X xs))", "P(0)")
               + " at the snapshot xs (lam = 0, l1 > 0: the rescaled-dual gap, likewise; "
               "lam = l1 = 0, no certificate: ||grad P||^2 <= tol ||grad P(0)||^2)")

SVRG_SOLVER = register(Solver(
    name="svrg", family="primal_dual",
    summary="proximal SVRG (Xiao & Zhang), O(nnz) steps, certified by a duality gap",
    losses=LOSSES, params=_PARAMS_SVRG, history=("measure", "passes"),
    certificate=CERTIFICATE, engine=functools.partial(_engine, method=SVRG),
    diverge_hint="lower step (default 0.1 / L_max, L_max = c max_i c_i ||x_i||^2 the "
                 "largest row smoothness)",
    lam_zero=True, watch_growth=True, weights=True))
KATYUSHA_SOLVER = register(Solver(
    name="katyusha", family="primal_dual",
    summary="Katyusha (Allen-Zhu), accelerated SVRG, certified by a duality gap",
    losses=LOSSES, params=_PARAMS_KATYUSHA, history=("measure", "passes"),
    certificate=CERTIFICATE, engine=functools.partial(_engine, method=KATYUSHA),
    diverge_hint="lower step (the y step 1/(3L); default 1 / (3 L_max), L_max = c max_i "
                 "c_i ||x_i||^2 the largest row smoothness)",
    lam_zero=True, watch_growth=True, weights=True))

_DESCRIPTIONS = {"train_svrg": (SVRG_SOLVER, train_svrg),
                 "train_katyusha": (KATYUSHA_SOLVER, train_katyusha)}


def run_traced(name, X, y, *, trace=None, table_max=65536, **kw):
    """``name(X, y, **kw)`` with the engine's test hooks: ``trace`` (a float64 array of
    max_epochs * steps_per_epoch * k * n_features entries, k = 1 for SVRG (x), 2 for
    Katyusha (z then y), that receives the iterate after every step) and ``table_max``
    (flush at least every this many steps). For tests."""
    solver, fn = _DESCRIPTIONS[name]
    args = inspect.signature(fn).bind(X, y, **kw)
    args.apply_defaults()
    traced = dataclasses.replace(solver, engine=functools.partial(
        solver.engine, trace=trace, table_max=table_max))
    return fit(traced, dict(args.arguments))
