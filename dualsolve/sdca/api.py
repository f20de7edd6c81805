"""``train_sdca``: exact dual coordinate ascent for L2-regularised linear models on CSR."""
import numpy as np

from .._core import losses as _losses
from .._core.status import CONVERGED
from .._driver import Result, Solver, certified, fit, register, threshold
from .._params import Boolean, Integral, Interval, Options, Real
from ..model import Model, warm_start_dual
from . import _crammer_singer, _sdca
from ._sdca import DEFAULT_FOCUS
from .intercept import SMOOTH_LOSSES, solve_free_intercept

SAMPLING = {"permutation": 0, "uniform": 1}        # _sdca.pxd SAMPLE_*
MULTI_CLASS = ("ovr", "crammer_singer")
LOSSES = ("logistic", "squared_hinge", "smooth_hinge", "hinge", "squared", "epsilon_insensitive",
          "squared_epsilon_insensitive")


def train_sdca(X, y, *, loss="logistic", lam=None, C=None, tol=1e-6, max_epochs=5000, seed=0,
               verbose=0, callback=None, warm_start=None, n_jobs=1, smoothing=None, epsilon=None,
               fit_intercept=False, penalize_intercept=True, intercept_scaling=1.0,
               check_every="auto", shrinking=True, sampling="permutation", sample_weight=None,
               class_weight=None, multi_class="ovr", relaxation="auto", focus=DEFAULT_FOCUS):
    """Train an L2-regularised linear model by stochastic dual coordinate ascent (SDCA).

    Solves, with ``n`` rows and ``w`` of length ``n_features``::

        min_w  P(w) = (1/n) sum_i c_i loss(y_i, x_i.w) + (lam/2) ||w||^2

    (``c_i = 1`` unless ``sample_weight`` / ``class_weight`` say otherwise)

    through its dual ``max_a D(a) = -(lam/2)||X^T a/(lam n)||^2 - (1/n) sum_i loss*(-a_i)``,
    one coordinate at a time, exactly (closed forms; a safeguarded Newton step for logistic),
    with liblinear's loop: precomputed squared row norms, ``w`` kept incrementally, a random
    permutation of the rows each epoch and shrinking of rows stuck at a bound, and passes
    focused on the rows that still move (``focus``). Each epoch ends
    with the exact duality gap ``P(w) - D(a)`` (scores recomputed from scratch); the solver
    stops when it is ``<= tol * D(a)`` (or at the rounding floor, 64 ulps of ``P(0)``), after
    recomputing ``w`` from ``a``, so the returned gap is a certificate: ``P(w) - P* <= gap``
    and ``(P(w) - P*) / P* <= tol``.

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
        Stop when the duality gap is ``<= tol * D(a)`` (``stop_reason="converged"``: the gap
        certifies ``(P(w) - P*) / P* <= tol``, the relative suboptimality), or when it is at
        the rounding floor, 64 ulps of ``P(0)`` (a problem whose optimum is 0).
        ``tol=0`` runs the whole budget.
    max_epochs : int >= 0
        One epoch is one pass over the rows (and the focused passes before it, ``focus``);
        once shrinking has left less than half of the rows' work (with
        ``multi_class="crammer_singer"``: less than all of the rows' and classes' work),
        as many passes over them as add up to a whole pass's work. Ending here warns
        (ConvergenceWarning) with the gap reached.
    check_every : "auto" or int >= 1
        When to compute the exact duality gap (one extra pass over X). ``1``: after every
        epoch, so ``history`` has the gap of every epoch. ``k``: every k epochs. ``"auto"``:
        when the gap seen during the pass (each row's Fenchel-Young gap just before its
        step, free to compute) reaches ``tol``, and otherwise often enough that checks cost
        at most a ninth of the work; epochs without a check have NaN primal/dual/gap in
        ``history`` and the pass estimate in ``gap_estimate``. Whatever the setting, the
        solver stops only on an exact, certified gap.
    shrinking : bool
        Drop rows whose dual variable is stuck at a bound (hinge-type losses; a weighted
        row's bounds are ``c_i`` times the unweighted ones, and a row of weight 0 is
        dropped at once); they are re-checked at every gap evaluation and re-activated when
        they violate optimality.
    sampling : {"permutation", "uniform"}
        A random permutation each epoch (liblinear), or n draws with replacement.
    focus : float in [0, 1]
        Focused passes (``docs/sdca.md``): from the second epoch on, before each pass over
        the rows, passes over the rows whose last steps gained the largest part of the
        dual's rise, ``focus`` of the last pass's (``0.5``: the few rows that carry half
        of it), in a fresh random order each, for as long as one gains more per unit of
        work than the last pass over all rows did (at most 4 passes' work an epoch;
        Ctrl-C is read after each of them). Late in a solve most rows hardly move, so
        this is where the work pays: news20 binary, logistic, C = 10^4, 17 epochs (0.8 s)
        instead of 2,320 (51 s); Crammer-Singer on 20 Newsgroups, C = 1, 33 epochs (9 s)
        instead of 506 (97 s). The steps are the same exact coordinate steps, the
        certificate the same exact gap. ``params["focused_passes"]`` counts them; ``0``
        turns them off (liblinear's loop). Permutation sampling only
        (``sampling="uniform"`` makes none).
    relaxation : "auto" or float in (0, 2)
        Over-relaxed coordinate steps for the losses whose conjugate is quadratic on its
        interval (hinge, squared_hinge, smooth_hinge, squared), where the dual along one
        coordinate is a concave quadratic: the exact step from ``a0`` to ``a*`` becomes
        ``a0 + r (a* - a0)``, clipped to the dual domain (successive over-relaxation; for
        ``0 < r < 2`` every step still raises the dual). ``"auto"``: ``r = 1.75`` from epoch
        21 on, so a solve that converges in 20 epochs is exactly liblinear's (where ``r > 1``
        would slow it) and a slow, badly conditioned one gets fewer epochs (news20 binary,
        squared hinge, C = 100: 730 -> 436); from epoch 11 on with a ``warm_start``, whose
        fast components have settled (a warm path on news20: 252 -> 211 epochs), and from
        the first along a path (``regularization_path``, the estimators' ``warm_start``)
        whose last solve took more than 20 epochs (a slow neighbour). A number:
        that ``r`` from the first epoch (``1.0``: exact steps throughout). Other losses take
        ``"auto"`` or ``1.0`` only; with a free intercept (``penalize_intercept=False``)
        ``"auto"`` is exact steps.
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
    n_jobs : int or None
        Threads (default 1, -1 every core; ``docs/api.md``, "Threads"): one-vs-rest
        classes run side by side, the same model as with ``n_jobs=1``, bit for bit. One
        problem: the exact checks in threads, and on nearly orthogonal rows (TF-IDF text)
        the passes too: on wide rows each thread writes its own range of features (the
        iterates then depend on timing and the certificate is the guarantee; these passes
        are timed against one thread's and give way to it where they are not faster);
        where many rows share each feature and w is small, in blocks (CoCoA+ in threads,
        where the loss's curvature dominates a step's: bit for bit reproducible).
        The focused passes (``focus``) run in the same threads as the whole passes,
        when they have 128 rows a thread (``params["threaded_focused_passes"]`` counts
        them). ``params["threaded_epochs"]`` counts the whole passes in threads
        (an epoch can hold several, ``max_epochs``);
        ``params["threads_vs_one"]`` is the feature-owned pass's time per unit of work in
        threads over one thread's, as last measured (above 0.95 the passes ran on one
        thread; None: not timed). Crammer-Singer: the exact checks and the resyncs of W
        in threads (each thread a range of the features), the passes on one thread, so
        the iterates are one thread's.
    sample_weight : array (n,) of reals >= 0, optional
        Row weights ``c_i``; an integer weight equals repeating the row (at the same ``C``).
    class_weight : dict label -> weight >= 0, or "balanced", optional
        Multiplies each row's weight by its class's (liblinear's ``-wi``); ``"balanced"``
        gives class c the weight ``n / (k n_c)``. With more than two classes each row keeps
        its own class's weight in every one-vs-rest problem (scikit-learn's rule; liblinear
        weighs only the positive class of each).
    multi_class : {"ovr", "crammer_singer"}
        How more than two classes are learnt. ``"ovr"`` (default): one-vs-rest, k binary
        problems of the chosen loss (``dualsolve.multiclass``), ``coef`` (k, n_features).
        ``"crammer_singer"``: one problem, the Crammer-Singer multi-class SVM (liblinear
        ``-s 4``), see below; it requires ``loss="hinge"`` (its loss is a multi-class hinge;
        any other loss is a ValueError).

    Crammer-Singer (``multi_class="crammer_singer"``), k classes, ``W`` of k rows ``w_m``,
    ``e_{ym} = 0`` if m == y else 1::

        min_W  P(W) = (1/n) sum_i c_i max_m (e_{y_i m} + w_m.x_i - w_{y_i}.x_i)
                      + (lam/2) ||W||_F^2

    (liblinear's ``0.5 ||W||^2 + C sum_i max_m (...)`` divided by ``C n``, ``lam = 1/(C n)``),
    through its dual over ``a`` (n, k): ``max (1/n) sum_i a_{i y_i} - (lam/2) ||W(a)||^2``,
    ``w_m(a) = sum_i a_{im} x_i / (lam n)``, subject to ``a_{im} <= 0`` (m != y_i),
    ``a_{i y_i} <= c_i`` and ``sum_m a_{im} = 0`` for every row. Each step maximises the dual
    over one row's k variables exactly (a sort, O(k log k)) and updates W in O(k nnz(x_i));
    rows in a random permutation each epoch (or ``sampling="uniform"``). The exact gap
    ``P(W) - D(a)`` (fresh scores, compensated sums, W recomputed from ``a`` before it
    certifies) stops the solve at ``<= tol * D(a)`` (or at 64 ulps of ``P(0) = (1/n) sum_i
    c_i``, 1 without weights); ``check_every`` as above. ``sample_weight`` /
    ``class_weight`` give ``c_i``,
    which scales row i's loss and bounds its dual box (liblinear's ``-wi`` per class);
    ``fit_intercept`` appends the constant feature (``intercept`` (k,)); ``shrinking``
    drops a row's classes stuck at their bounds, and the row once one class is left, until
    the next exact check (liblinear's per-variable rule). The model: ``coef`` (k,
    n_features; Fortran-ordered, a view of the loop's feature-major W rather than a copy),
    ``intercept`` (k,), ``dual`` ``a`` (n, k), predictions the class of the largest score.
    With two classes the objective is still Crammer-Singer's (liblinear does the same), and
    the model is binary: ``coef = w_1 - w_0`` (the same predictions as the two rows),
    ``dual = 2 a[:, 1]`` (so that ``coef = X^T dual / (lam n)``; it is the binary hinge
    problem at ``lam / 2``). ``warm_start``: a Crammer-Singer Model of the same classes (or
    its ``dual`` array, (n, k)), e.g. from a nearby ``lam``; a one-vs-rest model is refused.
    The callback's ``info["coef"]`` is W (k, n_features) during the solve.

    Returns
    -------
    Model
        ``coef``, ``intercept``, ``dual`` (``w = X^T dual / (lam n)``), ``history`` (one row
        per epoch: epoch, time, primal, dual, gap, gap_estimate, n_active),
        ``stop_reason``, ``n_epochs``; ``params["p0"]`` is P(0).
    """
    return fit(SDCA, locals())


def _engine(p, o, mon):
    if o["multi_class"] == "crammer_singer":
        if o["fit_intercept"] and not o["penalize_intercept"]:
            raise ValueError("multi_class='crammer_singer' has a penalised intercept only "
                             "(fit_intercept=True with penalize_intercept=True, liblinear's -B)")
        return _crammer_singer_engine(p, o, mon)
    if o["fit_intercept"] and not o["penalize_intercept"]:
        return _free_intercept_engine(p, o, mon)
    bias = o["intercept_scaling"] if o["fit_intercept"] else 0.0
    alpha = initial_dual(p.warm_start, p.y, p.loss, p.loss_param, p.n, p.weight)
    w = np.zeros(p.d + (1 if o["fit_intercept"] else 0))
    mon.set_coef(w)
    check = 0 if o["check_every"] == "auto" else o["check_every"]
    # a start extrapolated along lam (regularization_path, the estimators' warm path): no
    # exact check of it (it is never optimal), and the training rows' scores x_i.w + b kept
    # as extra["margins"] (the primal-dual family's name) for the next start
    scores = np.empty(p.n) if p.path_start else None
    stats = {}
    status, n_epochs, primal, dual, gap, p0 = _sdca.solve(
        p.X.data, p.X.indices, p.X.indptr, p.d, p.y, p.loss, p.loss_param, p.lam, bias, w,
        alpha, p.tol, p.max_epochs, check, o["shrinking"], SAMPLING[o["sampling"]], p.seed,
        mon, p.X.sqnorm, weight=p.weight, n_threads=p.n_jobs, scores=scores,
        check_start=not p.path_start, stats=stats, rows_sorted=p.X.sorted_rows,
        focus=o["focus"],
        **relaxation_options(o["relaxation"], p.loss, warm=p.warm_start is not None,
                             neighbour_epochs=p.start_epochs))
    extra = {"margins": scores} if p.path_start and status == CONVERGED else {}
    info = dict(p0=p0, threaded_epochs=stats["threaded_epochs"],
                threads_vs_one=stats["threads_vs_one"], focused_passes=stats["focused_passes"],
                threaded_focused_passes=stats["threaded_focused_passes"])
    if stats["threads_vs_one"] is not None:
        pay = _sdca._threads_pay()
        mon.note(f"threads: {stats['threaded_epochs']} of {n_epochs} passes in {p.n_jobs} "
                 f"threads; their time per unit of work {stats['threads_vs_one']:.2f}x one "
                 f"thread's when last measured (above {pay:g}, the passes run on one)")
    return Result(status, n_epochs, coef=w[:p.d], intercept=w[p.d] * bias if bias else 0.0,
                  dual=alpha, measure=gap, threshold=threshold(dual, p.tol, p0),
                  info=info, extra=extra)


#: relaxation="auto": the factor, and the epochs of exact steps before it (cold, warm)
AUTO_RELAXATION, AUTO_RELAX_AFTER, WARM_RELAX_AFTER = 1.75, 20, 10


def relaxation_options(value, loss, auto=True, warm=False, neighbour_epochs=0):
    """The engine's (relaxation, relax_after) for train_sdca's ``relaxation``; ``auto``
    False: "auto" means exact steps (the free intercept's rounds); ``warm``: "auto" relaxes
    after WARM_RELAX_AFTER epochs, or from the first if the path's last solve (its
    ``neighbour_epochs``) ran past AUTO_RELAX_AFTER: a slow neighbour predicts a slow solve."""
    if not _losses.conjugate_is_quadratic(loss):
        if value not in ("auto", 1.0):
            raise ValueError(f"relaxation={value!r} applies to the losses with a quadratic "
                             f"conjugate (hinge, squared_hinge, smooth_hinge, squared); "
                             f"loss={loss!r} takes 'auto' or 1.0")
        return dict(relaxation=1.0, relax_after=0)
    if value == "auto":
        if not auto:
            return dict(relaxation=1.0, relax_after=0)
        if not warm:
            return dict(relaxation=AUTO_RELAXATION, relax_after=AUTO_RELAX_AFTER)
        slow = neighbour_epochs > AUTO_RELAX_AFTER
        return dict(relaxation=AUTO_RELAXATION, relax_after=0 if slow else WARM_RELAX_AFTER)
    return dict(relaxation=float(value), relax_after=0)


def _free_intercept_engine(p, o, mon):
    if p.loss not in SMOOTH_LOSSES:
        raise ValueError(f"penalize_intercept=False needs a smooth loss (one of "
                         f"{list(SMOOTH_LOSSES)}) for its certificate; got loss={p.loss!r} "
                         "(use penalize_intercept=True, liblinear's -B, for it)")
    alpha = initial_dual(p.warm_start, p.y, p.loss, p.loss_param, p.n, p.weight)
    w = np.zeros(p.d)
    mon.set_coef(w)
    status, n_epochs, b, gap, lower, p0, rounds = solve_free_intercept(
        p, o, mon, _sdca.solve, alpha, w, SAMPLING[o["sampling"]],
        # exact steps under "auto": the joint certificate ends near its rounding level
        # (~1e-10 relative on heart_scale), which over-relaxed rounds reached less reliably
        relaxation_options(o["relaxation"], p.loss, auto=False))
    return Result(status, n_epochs, coef=w, intercept=b, dual=alpha, measure=gap,
                  threshold=threshold(lower, p.tol, p0),
                  info=dict(p0=p0, intercept_rounds=rounds))


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


def _crammer_singer_engine(p, o, mon):
    """The Crammer-Singer solve of ``train_sdca(..., multi_class="crammer_singer")``."""
    if o["relaxation"] not in ("auto", 1.0):
        raise ValueError(f"relaxation={o['relaxation']!r} does not apply to "
                         "multi_class='crammer_singer' (its row steps are exact); use 'auto'")
    if p.loss != "hinge":
        raise ValueError(f"multi_class='crammer_singer' is the multi-class hinge loss: it "
                         f"takes loss='hinge'; got loss={p.loss!r}")
    k = p.classes.shape[0]
    codes = p.codes if p.codes is not None else (p.y > 0).astype(np.intp)
    codes = np.ascontiguousarray(codes, dtype=np.intp)
    bias = o["intercept_scaling"] if o["fit_intercept"] else 0.0
    alpha = crammer_singer_dual(p.warm_start, codes, p.classes, p.weight, p.n)
    W = np.zeros((p.d + (1 if bias else 0), k))
    mon.set_coef(W[:p.d].T)
    check = 0 if o["check_every"] == "auto" else o["check_every"]
    stats = {}
    status, n_epochs, primal, dual, gap, p0 = _crammer_singer.solve(
        p.X.data, p.X.indices, p.X.indptr, p.d, codes, k, p.lam, bias, W, alpha, p.tol,
        p.max_epochs, check, SAMPLING[o["sampling"]], o["shrinking"], p.seed, mon,
        weight=p.weight, focus=o["focus"], stats=stats, n_threads=p.n_jobs)
    coef = W[:p.d].T        # a view (k, d), not a copy of W (news20: 33M doubles)
    intercept = W[p.d] * bias if bias else np.zeros(k)
    info = dict(p0=p0, focused_passes=stats["focused_passes"],
                shrunk_classes=stats["shrunk_classes"])
    if k == 2:      # the binary model of the same predictions (see the docstring)
        return Result(status, n_epochs, coef=coef[1] - coef[0],
                      intercept=float(intercept[1] - intercept[0]), dual=2.0 * alpha[:, 1],
                      measure=gap, threshold=threshold(dual, p.tol, p0), info=info)
    return Result(status, n_epochs, coef=coef, intercept=intercept, dual=alpha, measure=gap,
                  threshold=threshold(dual, p.tol, p0), info=info)


def crammer_singer_dual(warm_start, codes, classes, weight, n):
    """The Crammer-Singer dual variables (n, k) to start from: zeros, or a warm start (a
    Crammer-Singer Model of the same classes or an (n, k) array; with two classes also the
    binary model's ``dual`` of n entries, ``2 a[:, 1]``), checked to be feasible: ``a_im <= 0``
    for m != y_i, ``a_iy <= c_i``, row sums 0 to rounding (then restored exactly through
    ``a_iy``), zeros on rows of weight 0."""
    k = classes.shape[0]
    if warm_start is None:
        return np.zeros((n, k))
    if isinstance(warm_start, Model):
        if warm_start.params.get("multi_class") != "crammer_singer":
            raise ValueError("warm_start for multi_class='crammer_singer' must be a "
                             "Crammer-Singer Model (multi_class='crammer_singer'); this one "
                             f"has multi_class={warm_start.params.get('multi_class')!r}")
        if warm_start.classes is None or not np.array_equal(warm_start.classes, classes):
            raise ValueError(f"warm_start must be a Model of the classes {classes.tolist()}; "
                             f"its classes are {None if warm_start.classes is None else warm_start.classes.tolist()}")
        if warm_start.dual is None:
            raise ValueError("warm_start model has no dual variables (saved without them?)")
        warm_start = warm_start.dual
    a = np.array(warm_start, dtype=np.float64, copy=True)
    if k == 2 and a.shape == (n,):
        a = np.column_stack([-0.5 * a, 0.5 * a])
    if a.shape != (n, k):
        raise ValueError(f"warm_start must hold ({n}, {k}) Crammer-Singer dual variables (one "
                         f"row per row of X, one column per class); got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError("warm_start contains NaN or infinity")
    c = np.ones(n) if weight is None else weight
    rows = np.arange(n)
    own = a[rows, codes]
    others = a.sum(axis=1) - own
    off = a.copy()
    off[rows, codes] = 0.0
    slack = 1e-9 * np.maximum(c, 1.0)
    if (off > 0).any() or (own > c + slack).any() or \
            (np.abs(own + others) > slack * k).any():
        raise ValueError("warm_start dual variables are not feasible for Crammer-Singer on "
                         "these labels (a_im <= 0 for the other classes, a_iy <= c_i, each row "
                         "summing to 0): was it trained on other labels or weights?")
    if weight is not None and (a[weight == 0] != 0).any():
        raise ValueError("warm_start has nonzero dual variables on rows of weight 0")
    a[rows, codes] = -others
    return a


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
                multi_class=[Options(*MULTI_CLASS)],
                relaxation=[Options("auto"), Interval(Real, 0, 2, closed="neither")],
                focus=[Interval(Real, 0, 1, closed="both")]),
    weights=True,
    history=("gap_estimate", "n_active"),
    certificate="duality gap " + certified("P(w) - D(a)", "D(a)", "P(0)"),
    engine=_engine, unevaluated_nan=True))
