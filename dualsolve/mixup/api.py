"""``train_mixup_sdca`` and ``train_kernel_sgd``: MixupSDCA (Obi, Saito, Sasaki & Kato, 2025)
and its SGD baseline, on CSR input with linear, RBF, polynomial or precomputed kernels.

The linear kernel runs on the SDCA engine of ``dualsolve.sdca`` (the same loop and loss
table as ``train_sdca``); the other kernels on the kernel loop of ``_kernel_sdca.pyx``. Both
share the step rules of ``dualsolve.sdca.steps``. See docs/mixup.md.
"""
import numpy as np

from .._core import kernels as _kernels
from .._core import losses as _losses
from .._driver import Result, Solver, certified, fit, register, threshold
from .._params import Boolean, Integral, Interval, Options, Real
from .._validation import check_csr, check_labels
from ..model import warm_start_dual
from ..sdca import _sdca
from . import _kernel_sdca
from .augment import mixup_augment
from .model import KernelModel

METHODS = ("naive", "approx", "decomp", "exact")
KERNELS = ("linear", "rbf", "poly", "precomputed")
LOSSES = ("logistic", "smooth_hinge", "squared_hinge", "hinge", "squared")
_RULE = {"exact": 0, "vanilla": 1, "approx": 2, "numeric": 3}     # steps.pxd STEP_*
SAMPLING = {"permutation": 0, "uniform": 1}


def train_mixup_sdca(X, y, *, loss="logistic", lam=None, C=None, tol=1e-6, max_epochs=1000,
                     seed=0, verbose=0, callback=None, warm_start=None, n_jobs=1, smoothing=None,
                     soft_labels=False, kernel="linear", kernel_gamma=None, degree=3,
                     coef0=1.0, n_mix=0, mixup_alpha=1.0, method="naive", conjugate="closed",
                     approx_grid="tight", decomp_gamma="percoord", implicit=False,
                     sampling="permutation", check_every=1, cache_size=200, gram_dtype="auto",
                     max_gram_mb=1024):
    """Regularised ERM with mixup in an RKHS, by SDCA (MixupSDCA: Obi, Saito, Sasaki & Kato,
    2025).

    Solves, over the augmented set of ``n = n_orig + n_mix`` points (originals first, then
    ``n_mix`` mixup points ``(1-r) x_a + r x_b`` with soft labels ``(1-r) y_a + r y_b``)::

        min_f  R[f] = (lam/2) ||f||_H^2 + (1/n) sum_i phi(f(x_i); y_i)
        phi(s; y) = (1+y)/2 phi0(s) + (1-y)/2 phi0(-s),     y in [-1, 1]

    through its dual ``D(a) = -(lam/2)||f_a||^2 - (1/n) sum_i phi*(-a_i; y_i)`` with
    ``f_a = sum_i a_i k(x_i, .) / (lam n)``. For the linear kernel ``f(x) = x.w`` and
    ``w = X_aug^T a / (lam n)``.

    Parameters
    ----------
    X : sparse matrix/array (n_orig, n_features), or (n, n) kernel matrix for "precomputed"
    y : array (n_orig,)
        Two classes (any two values, mapped to -1/+1; the larger value is +1). With
        ``soft_labels=True``: soft labels in [-1, 1], used as they are. More classes:
        one-vs-rest (``dualsolve.multiclass``); without mixup (``n_mix=0``) every class
        has the same points, and a dense float64 Gram matrix is built once for all.
    loss : {"logistic", "smooth_hinge", "squared_hinge", "hinge", "squared"}
        phi0 of the table in ``dualsolve._core.losses``: log(1+e^-s) (the paper's BCE); the
        smoothed hinge of width ``smoothing`` (default 0.5); max(0, 1-s)^2 (liblinear's L2
        loss; strong convexity gamma = 1/2 of its conjugate); max(0, 1-s)
        (``method="exact"`` only); (s - y)^2 / 2 (the mixup loss of phi0(s) = (1-s)^2/2
        minus the constant (1-y^2)/2).
    lam : float > 0, optional
        Default 1/n (n counts the mixup points). Give lam or C.
    C : float > 0, optional
        liblinear's cost: lam = 1 / (C n).
    kernel : {"linear", "rbf", "poly", "precomputed"}
        rbf ``exp(-kernel_gamma ||x-x'||^2)``; poly ``(kernel_gamma <x,x'> + coef0)^degree``.
    kernel_gamma : float > 0, optional
        Default ``1 / n_features``.
    degree, coef0 : poly parameters.
    n_mix : int >= 0
        Mixup points to add (``dualsolve.mixup.mixup_augment`` with ``mixup_alpha``, ``seed``).
    mixup_alpha : float > 0
        Mixing ratios r ~ Beta(mixup_alpha, mixup_alpha).
    method : {"naive", "approx", "decomp", "exact"}
        naive: the SDCA step of the paper's eq. 13 with the closed-form mixup conjugate
        (``conjugate="numeric"``: found by a 1-D search, the paper's version); approx:
        eq. 21 with Algorithm 2's lower bound (``approx_grid`` "tight": the qualifying grid
        point closest to the coordinate's optimum, or "literal": eqs. 17/19 as printed);
        decomp: vanilla SDCA on the decomposed dual with up to two binary-label
        coordinates per point (Section VI; ``decomp_gamma`` "percoord" gamma/c_j, the
        strong convexity of each weighted coordinate, or "paper" Lemma 3's gamma/2); exact:
        exact coordinate maximisation (train_sdca's steps; the only one for hinge). See
        docs/mixup.md.
    implicit : bool
        Linear kernel with mixup: keep mixed rows as (a, b, r) instead of materialising them.
    sampling : {"permutation", "uniform"}
    tol : float >= 0
        Stop when the exact duality gap is <= tol * D(a), so (P - P*) / P* <= tol, or at
        the rounding floor, 64 ulps of P(0) (``stop_reason="converged"``);
        ``tol=0`` runs the whole budget.
    max_epochs : int
    check_every : 1, k or "auto"
        When to compute the exact gap (see ``train_sdca``). Default: every epoch.
    seed : int
        Seeds both the mixup points and the row order.
    warm_start : Model or array (n,), optional
        Dual variables of the augmented points to start from (a model trained on the same
        augmented set, e.g. at a nearby lam; for ``method="decomp"`` each point's dual is
        split between its two coordinates by sign).
    n_jobs : int or None
        Threads (default 1, -1 every core; ``docs/api.md``, "Threads"): one-vs-rest
        classes run side by side, the same model as with ``n_jobs=1``, bit for bit. One
        problem whose Gram matrix is kept dense (it fits ``max_gram_mb``): its kernel
        values (an RBF kernel's exponentials) row by row in ``n_jobs`` threads, the same
        matrix for any count (columns computed on demand: one thread); the products under
        them are NumPy's BLAS (its own thread pool, which ``n_jobs`` does not set: hold it
        with ``threadpoolctl.threadpool_limits``) or scipy's, and the SDCA steps are serial.
    cache_size : float
        MB of kernel-column cache when the Gram matrix does not fit ``max_gram_mb``.
    gram_dtype : {"auto", "float64", "float32"}
        Storage of a dense Gram matrix; "auto": float64 if it fits ``max_gram_mb``, else
        float32 if that fits (a random-order column cache helps little: SDCA touches every
        column each epoch), else columns computed on demand through a ``cache_size`` MB cache.
    max_gram_mb : float
        Memory cap of the dense Gram matrix.
    soft_labels : bool, default False
        Read y as soft labels in [-1, 1] (e.g. mixed points made outside the package; -1
        and 1 are the two classes, predictions are -1 or 1). Only with ``n_mix=0``. Off, y
        must hold exactly two distinct values, which are two classes whatever they are
        ({0, 1} included).
    verbose, callback : as in ``train_sdca``; ``smoothing`` too.

    Returns
    -------
    Model (linear kernel) or KernelModel
        ``dual`` holds one dual variable per augmented point in the ``f = sum_i a_i
        k(x_i, .) / (lam n)`` convention (for decomp: ``(n/n~)(a~_i+ + a~_i-)``);
        ``history`` the exact primal, dual and gap of the problem solved (the decomposed
        one for decomp; its optimum is the same).
    """
    return fit(MIXUP_SDCA, locals())


def train_kernel_sgd(X, y, *, loss="logistic", lam=None, C=None, tol=1e-6, max_epochs=100,
                     seed=0, verbose=0, callback=None, warm_start=None, n_jobs=1, smoothing=None,
                     soft_labels=False, step=None, step_schedule="plateau", kernel="rbf",
                     kernel_gamma=None, degree=3,
                     coef0=1.0, n_mix=0, mixup_alpha=1.0, sampling="uniform", cache_size=200,
                     gram_dtype="auto", max_gram_mb=1024):
    """Kernel SGD, the baseline of the paper's Table II (constant step there).

    Minimises the same ``R[f]`` as :func:`train_mixup_sdca` over ``f = sum_j beta_j k(x_j, .)``:
    each step picks a point i and does ``beta <- (1 - step lam) beta``,
    ``beta_i <- beta_i - step phi'(f(x_i); y_i)``. After every epoch (n steps) ``history``
    records the exact primal ``R[f]``, and the dual and gap of the dual point
    ``a_i = -phi'(f(x_i); y_i)`` (the SDCA dual of ``train_mixup_sdca``): the gap certifies
    ``R[f] - R* <= gap``, and the run stops when it is ``<= tol * D(a)`` (or 64 ulps of R[0]).

    ``step`` : float > 0, optional
        The (first) step. Default ``1 / (L k_max + lam)``, with L the smoothness of phi0 (1/4
        logistic, 2 squared hinge, 1/smoothing smoothed hinge, 1 squared) and k_max the
        largest ``k(x_i, x_i)``: the step of a gradient method on one term. Needs
        ``step lam < 1``.
    ``step_schedule`` : {"plateau", "constant"}
        A constant step settles in a noise ball whose size grows with the step, so it
        reaches a small ``tol`` only by chance. "plateau" (default) halves the step when
        the gap has not reached a new low for 3 epochs, so the iterates go on to the
        optimum; "constant" is the paper's baseline (then the run may end at
        ``max_epochs`` with a warning giving the gap).
    The other parameters are those of :func:`train_mixup_sdca` (``kernel`` may not be
    "precomputed"; ``soft_labels`` and ``n_mix`` as there).
    """
    return fit(KERNEL_SGD, locals())


# ---------------------------------------------------------------------------------------
# the augmented training set, shared by both engines


class _Augmented:
    """The training points of a run: the original rows (CSR, or None for a precomputed K),
    the mixup plan (or None), the labels of every point, and the kernel."""

    def __init__(self, p, o, materialize):
        self.kernel = o["kernel"]
        if self.kernel == "precomputed":
            if o["n_mix"]:
                raise ValueError("kernel='precomputed' takes the kernel matrix of the augmented "
                                 "set: n_mix must be 0 (mix the points before computing K)")
            if p.n != p.d:
                raise ValueError(f"X must be the square kernel matrix of the training points "
                                 f"for kernel='precomputed'; got shape {p.X.shape}")
            self.X_orig, self.plan, self.X_aug = None, None, None
            self.K = p.X.source            # made dense by column_source, when it is needed
            self.y = p.y
            return
        self.X_orig = p.X.source
        if o["n_mix"]:
            self.X_aug, self.y, self.plan = mixup_augment(
                self.X_orig, p.y, o["n_mix"], o["mixup_alpha"], p.seed,
                materialize=materialize)
        else:
            self.X_aug, self.y, self.plan = self.X_orig, p.y, None

    @property
    def n(self):
        return self.y.shape[0]

    def kernel_params(self, o):
        gamma = "auto" if o["kernel_gamma"] is None else o["kernel_gamma"]
        return _kernels.make_kernel(self.kernel, gamma, o["coef0"], o["degree"], X=self.X_orig)

    def column_source(self, o, spec, threads=1, shared=None):
        """The kernel's columns. ``shared`` (dualsolve._driver's SharedBuild: one-vs-rest's
        classes, a regularization path's solves): without a mixup plan they all have the
        same points, so a dense float64 Gram (computed, or the precomputed one made dense
        and checked) is built once for all of them (its columns are read in place; a
        float32 Gram's go through a buffer of its own and a column cache has state: those
        each solve builds)."""
        def build(n_threads):
            return _kernels.make_column_source(
                self.X_orig, self.plan, spec,
                precomputed=self.K.toarray() if self.kernel == "precomputed" else None,
                gram_dtype=_gram_dtype(o["gram_dtype"], self.n, o["max_gram_mb"]),
                max_gram_mb=o["max_gram_mb"], cache_size=o["cache_size"], threads=n_threads)

        if shared is None or self.plan is not None:
            return build(threads)
        key = ("gram", tuple(spec), o["gram_dtype"], o["max_gram_mb"], o["cache_size"])
        # the fit's threads: the other classes wait for this build
        return shared.get(key, lambda: build(max(threads, shared.threads)),
                          keep=lambda src: isinstance(src, _kernels.StoredGram)
                          and src.matrix.dtype == np.float64)

    def kernel_model(self, p, o, spec, dual, lam):
        """Result arguments for a KernelModel over these points."""
        extra = KernelModel.training_arrays(self.X_orig, self.plan, lam * self.n)
        info = dict(kernel=spec.kernel, kernel_gamma=spec.gamma, coef0=spec.coef0,
                    degree=spec.degree, n_augmented=self.n)
        return dict(coef=np.zeros(0), dual=dual, extra=extra, info=info,
                    model_class=KernelModel)


def _labels_task(loss, args):
    """Mixup reads y as two classes, or as soft labels in [-1, 1] when asked by name."""
    return "soft" if args.get("soft_labels") else "binary"


def _samples(n, o):
    """lam's 1/n counts the mixed points too."""
    return n + o["n_mix"]


# ---------------------------------------------------------------------------------------
# MixupSDCA


def _mixup_engine(p, o, mon):
    if o["soft_labels"] and o["n_mix"]:
        raise ValueError("soft_labels=True needs n_mix=0: mixup mixes two classes, so with "
                         "n_mix > 0 y must hold two class labels")
    if p.loss == "hinge" and o["method"] != "exact":
        raise ValueError("loss='hinge' is not smooth: its conjugate is not strongly convex, so "
                         f"method={o['method']!r} (eq. 13/21 steps) is undefined; use "
                         "method='exact'")
    pts = _Augmented(p, o, materialize=o["kernel"] == "linear" and not o["implicit"])
    n = pts.n
    coords = _coordinates(pts.y, o["method"])
    y_coord, point, weight = coords
    n_coord = y_coord.shape[0]
    alpha = _initial_duals(p, coords, n)
    rule = {"exact": "exact", "naive": "vanilla" if o["conjugate"] == "closed" else "numeric",
            "approx": "approx", "decomp": "vanilla"}[o["method"]]
    step = dict(step_rule=_RULE[rule], step_gamma=_losses.strong_convexity(p.loss, p.loss_param),
                approx_tight=int(o["approx_grid"] == "tight"),
                paper_gamma=int(o["decomp_gamma"] == "paper"),
                grid=(_approx_grids(p.loss, p.loss_param, y_coord)
                      if o["method"] == "approx" else None))
    check = 0 if o["check_every"] == "auto" else o["check_every"]
    y_coord = np.ascontiguousarray(y_coord, dtype=np.float64)
    if pts.kernel == "linear":
        if o["implicit"] and pts.plan is not None:
            data = p.X
            plan = pts.plan
            mix = (plan.a.astype(np.intp), plan.b.astype(np.intp), plan.r.astype(np.float64))
            sqnorm = _kernels.augmented_sqnorms(pts.X_orig, plan)
        else:
            data = p.X if pts.plan is None else check_csr(pts.X_aug, "X")
            mix, sqnorm = None, data.sqnorm
        w = np.zeros(p.d)
        mon.set_coef(w)
        status, n_epochs, primal, dual, gap, p0 = _sdca.solve(
            data.data, data.indices, data.indptr, p.d, y_coord, p.loss, p.loss_param, p.lam,
            0.0, w, alpha, p.tol, p.max_epochs, check, False, SAMPLING[o["sampling"]], p.seed,
            mon, sqnorm=sqnorm, point=point, weight=weight, mix=mix,
            focus=0.0,      # the paper's loop (and the kernel loop's), step for step
            **step)
        beta = np.bincount(point, weights=alpha, minlength=n) if point is not None else alpha
        model = dict(coef=w)
    else:
        spec = pts.kernel_params(o)
        src = pts.column_source(o, spec, p.n_jobs, p.shared)
        status, n_epochs, primal, dual, gap, p0, beta = _kernel_sdca.kernel_sdca(
            src, y_coord, p.loss, p.loss_param, p.lam, alpha, p.tol, p.max_epochs, check,
            SAMPLING[o["sampling"]], p.seed, mon, point=point, weight=weight, **step)
    dual_points = beta * (n / n_coord)             # f = sum_i dual_i k(x_i, .) / (lam n)
    info = dict(n_augmented=n, n_coordinates=n_coord, p0=p0)
    if pts.kernel == "linear":
        return Result(status, n_epochs, coef=w, dual=dual_points, measure=gap,
                      threshold=threshold(dual, p.tol, p0), info=info)
    km = pts.kernel_model(p, o, spec, dual_points, p.lam)
    km["info"].update(info)
    return Result(status, n_epochs, measure=gap, threshold=threshold(dual, p.tol, p0), **km)


def _coordinates(y, method):
    """(labels, point of each coordinate or None, loss weight or None): one coordinate per
    point, or for decomp one per (point, sign) with 1 + sign y > 0, weighted
    c_j = n~ (1 + y_j) / (2 n) (the decomposition of the paper's Section VI, with the weights
    that keep the objective's scale: docs/mixup.md)."""
    if method != "decomp":
        return y, None, None
    n = y.shape[0]
    plus = np.flatnonzero(y > -1.0)
    minus = np.flatnonzero(y < 1.0)
    n_tilde = plus.shape[0] + minus.shape[0]
    point = np.ascontiguousarray(np.concatenate([plus, minus]), dtype=np.intp)
    y_coord = np.concatenate([np.ones(plus.shape[0]), -np.ones(minus.shape[0])])
    weight = n_tilde * np.concatenate([1.0 + y[plus], 1.0 - y[minus]]) / (2.0 * n)
    return y_coord, point, weight


def _initial_duals(p, coords, n):
    """Zeros, or the warm start's point duals (a Model's ``dual`` or an array of n) mapped to
    the coordinates: the same point dual for one coordinate per point; for decomp, split by
    sign between the point's (+) and (-) coordinates. Each must lie in the dual domain of
    its coordinate."""
    y_coord, point, weight = coords
    n_coord = y_coord.shape[0]
    if p.warm_start is None:
        return np.zeros(n_coord)
    dual_points = warm_start_dual(p.warm_start, n)
    beta = dual_points * (n_coord / n)
    if point is None:
        alpha = beta
    else:
        sign = y_coord
        alpha = np.where(sign > 0, np.maximum(beta[point], 0.0), np.minimum(beta[point], 0.0))
    c = np.ones(n_coord) if weight is None else weight
    if not np.isfinite(c * _losses.conjugate(p.loss, alpha / c, y_coord, p.loss_param)).all():
        raise ValueError("warm_start dual variables lie outside the dual domain of the loss "
                         "for these labels (was it trained with another loss, labels or "
                         "augmented set?)")
    return np.ascontiguousarray(alpha, dtype=np.float64)


# ---------------------------------------------------------------------------------------
# kernel SGD


_SMOOTHNESS = {"logistic": lambda s: 0.25, "squared_hinge": lambda s: 2.0,
               "smooth_hinge": lambda s: 1.0 / s, "squared": lambda s: 1.0}


def _sgd_engine(p, o, mon):
    if o["kernel"] == "precomputed":
        raise ValueError("train_kernel_sgd needs the rows: kernel must be 'linear', 'rbf' or "
                         "'poly'")
    if p.loss == "hinge":
        raise ValueError("loss='hinge' has no derivative at the hinge; train_kernel_sgd needs "
                         "a smooth loss")
    if o["soft_labels"] and o["n_mix"]:
        raise ValueError("soft_labels=True needs n_mix=0: mixup mixes two classes, so with "
                         "n_mix > 0 y must hold two class labels")
    pts = _Augmented(p, o, materialize=False)
    n = pts.n
    spec = pts.kernel_params(o)
    src = pts.column_source(o, spec, p.n_jobs, p.shared)
    step = o["step"]
    if step is None:
        k_max = float(np.max(src.diagonal)) if n else 1.0
        step = 1.0 / (_SMOOTHNESS[p.loss](p.loss_param) * k_max + p.lam)
    if not step * p.lam < 1.0:
        raise ValueError(f"step * lam must be < 1 (the shrink factor 1 - step lam); got "
                         f"{step * p.lam}")
    beta0 = np.zeros(n)
    if p.warm_start is not None:
        beta0 = warm_start_dual(p.warm_start, n) / (p.lam * n)
    status, n_epochs, gap, p0, beta, last_step, dual = _kernel_sdca.kernel_sgd(
        src, np.ascontiguousarray(pts.y, dtype=np.float64), p.loss, p.loss_param, p.lam, step,
        p.tol, p.max_epochs, SAMPLING[o["sampling"]], p.seed, mon, beta0,
        o["step_schedule"] == "plateau")
    km = pts.kernel_model(p, o, spec, beta * p.lam * n, p.lam)
    km["info"].update(step=step, last_step=last_step, p0=p0)
    return Result(status, n_epochs, measure=gap, threshold=threshold(dual, p.tol, p0), **km)


# ---------------------------------------------------------------------------------------
# helpers and the descriptions


def _gram_dtype(gram_dtype, n, max_gram_mb):
    if gram_dtype != "auto":
        return np.dtype(gram_dtype)
    fits64 = n * n * 8 <= float(max_gram_mb) * (1 << 20)
    return np.dtype(np.float64 if fits64 else np.float32)


def _approx_grids(loss, param, y):
    """Algorithm 2's per-coordinate ends (b_u < 0 < b_l) of L_i = {zeta : phi(zeta; y_i) <=
    n phi0(0)} (the paper's eq. 16), by doubling then bisection; +-1 labels are unused
    (F~ = F)."""
    n = y.shape[0]
    level = n * float(_losses.value(loss, 0.0, 1.0, param))
    soft = np.abs(y) < 1.0
    ys = y[soft]
    ends = []
    for sign in (-1.0, 1.0):
        lo = np.zeros(ys.shape[0])
        hi = np.full(ys.shape[0], sign)
        for _ in range(2100):                       # phi grows at least linearly: no overflow
            grow = _losses.value(loss, hi, ys, param) <= level
            if not grow.any():
                break
            hi = np.where(grow, 2.0 * hi, hi)
        # bisect to machine precision (the grid points depend on these ends), keeping lo
        # inside L and hi outside
        for _ in range(2200):
            mid = 0.5 * (lo + hi)
            open_ = (mid != lo) & (mid != hi)
            if not open_.any():
                break
            inside = _losses.value(loss, mid, ys, param) <= level
            lo = np.where(open_ & inside, mid, lo)
            hi = np.where(open_ & ~inside, mid, hi)
        end = np.full(n, sign)                      # unused for labels +-1
        end[soft] = lo
        ends.append(end)
    return ends[0], ends[1]


_KERNEL_PARAMS = dict(
    soft_labels=[Boolean()],
    kernel=[Options(*KERNELS)],
    kernel_gamma=[None, Interval(Real, 0, None, closed="neither")],
    degree=[Interval(Integral, 0, None)],
    coef0=[Interval(Real, None, None)],
    n_mix=[Interval(Integral, 0, None)],
    mixup_alpha=[Interval(Real, 0, None, closed="neither")],
    sampling=[Options(*SAMPLING)],
    cache_size=[Interval(Real, 0, None, closed="neither")],
    gram_dtype=[Options("auto", "float64", "float32")],
    max_gram_mb=[Interval(Real, 0, None, closed="neither")],
)

MIXUP_SDCA = register(Solver(
    name="mixup_sdca", family="mixup",
    summary="MixupSDCA: SDCA on a mixup-augmented set with soft labels, linear or kernel",
    losses=LOSSES,
    params=dict(_KERNEL_PARAMS,
                method=[Options(*METHODS)], conjugate=[Options("closed", "numeric")],
                approx_grid=[Options("tight", "literal")],
                decomp_gamma=[Options("percoord", "paper")], implicit=[Boolean()],
                check_every=[Options("auto"), Interval(Integral, 1, None)]),
    history=("gap_estimate", "n_active"),
    certificate="duality gap " + certified("P(f) - D(a)", "D(a)", "P(0)") + " on the augmented set",
    engine=_mixup_engine, label_task=_labels_task, samples=_samples, unevaluated_nan=True))

KERNEL_SGD = register(Solver(
    name="kernel_sgd", family="mixup",
    summary="kernel SGD (MixupSDCA's baseline), certified by the SDCA dual's gap",
    losses=("logistic", "smooth_hinge", "squared_hinge", "squared"),
    params=dict(_KERNEL_PARAMS, step=[None, Interval(Real, 0, None, closed="neither")],
                step_schedule=[Options("plateau", "constant")]),
    history=("step",),
    certificate=("duality gap " + certified("P(f) - D(a)", "D(a)", "P(0)")
                 + ", a_i = -phi'(f(x_i)) (the SDCA dual)"),
    engine=_sgd_engine, label_task=_labels_task, samples=_samples, watch_growth=True,
    diverge_hint="decrease step"))
