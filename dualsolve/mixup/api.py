"""``train_mixup_sdca`` and ``train_kernel_sgd``: MixupSDCA (Obi, Saito, Sasaki & Kato, 2025)
and its SGD baseline, on CSR input with linear, RBF, polynomial or precomputed kernels.

Spec: seed0_mixup.md. The linear kernel runs on the SDCA engine of ``dualsolve.sdca`` (the
same loop and loss table as ``train_sdca``); the other kernels on the kernel loop of
``_kernel_sdca.pyx``. Both share the step rules of ``dualsolve.sdca.steps``.
"""
import numpy as np
import scipy.sparse as sp

from .._core import losses as _losses
from .._core import kernels as _kernels
from .._validation import (check_csr, check_labels, check_regularization, check_positive,
                           check_int, check_budget, check_seed, check_choice, warn_not_converged)
from .._monitor import EpochMonitor
from ..model import Model, make_history
from .model import KernelModel
from ..sdca import _sdca
from . import _kernel_sdca
from .augment import mixup_augment, MixupPlan

_METHODS = ("naive", "approx", "decomp", "exact")
_RULE = {"exact": 0, "vanilla": 1, "approx": 2, "numeric": 3}     # steps.pxd STEP_*
_SAMPLING = {"permutation": 0, "uniform": 1}
_STATUS = {0: "converged", 1: "max_epochs", 2: "stopped"}
_ALIASES = {"bce": "logistic"}


def train_mixup_sdca(X, y, *, loss="logistic", lam=None, C=None, kernel="linear", gamma=None,
                     degree=3, coef0=1.0, n_mix=0, mixup_alpha=1.0, method="naive",
                     conjugate="closed", approx_grid="tight", decomp_gamma="percoord",
                     implicit=False, sampling="permutation", tol=1e-6, max_epochs=1000,
                     check_every=1, seed=0, cache_size=200, gram_dtype="auto",
                     max_gram_mb=1024, smoothing=None, soft_labels=False, verbose=0,
                     callback=None):
    """Regularised ERM with mixup in an RKHS, by SDCA (MixupSDCA; spec seed0).

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
        ``soft_labels=True``: soft labels in [-1, 1], used as they are.
    loss : {"logistic" (alias "bce"), "smooth_hinge", "squared_hinge", "hinge", "squared"}
        phi0 of the table in ``dualsolve._core.losses``: log(1+e^-s); the smoothed hinge of
        width ``smoothing`` (default 0.5); max(0, 1-s)^2 (liblinear's L2 loss; the spec's
        gamma = 1/2); max(0, 1-s) (``method="exact"`` only); (s - y)^2 / 2 (which differs
        from the spec's mixup squared loss by the constant (1-y^2)/2).
    lam : float > 0, optional
        Default 1/n (n counts the mixup points). Give lam or C.
    C : float > 0, optional
        liblinear's cost: lam = 1 / (C n).
    kernel : {"linear", "rbf", "poly", "precomputed"}
        rbf ``exp(-gamma ||x-x'||^2)``; poly ``(gamma <x,x'> + coef0)^degree``.
    gamma : float > 0, optional
        Default ``1 / n_features``.
    degree, coef0 : poly parameters.
    n_mix : int >= 0
        Mixup points to add (``dualsolve.mixup.mixup_augment`` with ``mixup_alpha``, ``seed``).
    mixup_alpha : float > 0
        Mixing ratios r ~ Beta(mixup_alpha, mixup_alpha).
    method : {"naive", "approx", "decomp", "exact"}
        naive: the SDCA step of eq. 13 with the closed-form mixup conjugate
        (``conjugate="numeric"``: found by a 1-D search, the paper's version); approx:
        eq. 21 with Algorithm 2's lower bound (``approx_grid`` "tight" or "literal", spec
        3.3); decomp: vanilla SDCA on the decomposed dual with up to two binary-label
        coordinates per point (spec 3.4; ``decomp_gamma`` "percoord" gamma/c_j or "paper"
        gamma/2); exact: exact coordinate maximisation (train_sdca's steps; the only one
        for hinge).
    implicit : bool
        Linear kernel with mixup: keep mixed rows as (a, b, r) instead of materialising them.
    sampling : {"permutation", "uniform"}
    tol : float >= 0
        Stop when the exact duality gap is <= tol * P(0).
    max_epochs : int
    check_every : 1, k or "auto"
        When to compute the exact gap (see ``train_sdca``). Default: every epoch.
    seed : int
        Seeds both the mixup points and the row order.
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
    verbose, callback : as in ``train_sdca``.

    Returns
    -------
    Model (linear kernel) or KernelModel
        ``dual`` holds one dual variable per augmented point in the ``f = sum_i a_i
        k(x_i, .) / (lam n)`` convention (for decomp: ``(n/n~)(a~_i+ + a~_i-)``);
        ``history`` the exact primal, dual and gap of the problem solved (the decomposed
        one for decomp; its optimum is the same).
    """
    loss, param = _check_loss(loss, smoothing)
    method = check_choice(method, "method", _METHODS)
    check_choice(conjugate, "conjugate", ("closed", "numeric"))
    check_choice(approx_grid, "approx_grid", ("tight", "literal"))
    check_choice(decomp_gamma, "decomp_gamma", ("percoord", "paper"))
    check_choice(kernel, "kernel", ("linear", "rbf", "poly", "precomputed"))
    sampling_code = _SAMPLING[check_choice(sampling, "sampling", tuple(_SAMPLING))]
    if loss == "hinge" and method != "exact":
        raise ValueError("loss='hinge' is not smooth: its conjugate is not strongly convex, so "
                         f"method={method!r} (eq. 13/21 steps) is undefined; use method='exact'")
    n_mix = check_int(n_mix, "n_mix", 0)
    tol = check_positive(tol, "tol", allow_zero=True)
    max_epochs = check_budget(max_epochs, "max_epochs", 0)
    check_code = 0 if check_every == "auto" else check_int(check_every, "check_every", 1)
    seed = check_seed(seed)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable")
    if not isinstance(implicit, (bool, np.bool_)):
        raise TypeError(f"implicit must be a bool; got {type(implicit).__name__}")
    _check_soft_labels(soft_labels, n_mix)

    # the augmented training set
    if kernel == "precomputed":
        if n_mix:
            raise ValueError("kernel='precomputed' takes the kernel matrix of the augmented "
                             "set: n_mix must be 0 (mix the points before computing K)")
        Kp = np.asarray(X.toarray() if sp.issparse(X) else X)
        n = Kp.shape[0] if Kp.ndim == 2 else -1
        y_aug, classes = _labels(y, n, soft_labels)
        X_orig, plan, Xc = None, None, None
    else:
        Xc = check_csr(X)
        if n_mix:
            _, classes = check_labels(y, Xc.shape[0], "binary")
            X_aug, y_aug, plan = mixup_augment(X, y, n_mix, mixup_alpha, seed,
                                               materialize=kernel == "linear" and not implicit)
        else:
            y_aug, classes = _labels(y, Xc.shape[0], soft_labels)
            X_aug, plan = Xc.source, None
        X_orig = Xc.source
    n = y_aug.shape[0]
    lam = check_regularization(lam, C, n)

    # coordinates: one per point, or the decomposition's up to two
    point = weight = None
    y_coord = y_aug
    if method == "decomp":
        plus = np.flatnonzero(y_aug > -1.0)
        minus = np.flatnonzero(y_aug < 1.0)
        n_tilde = plus.shape[0] + minus.shape[0]
        point = np.ascontiguousarray(np.concatenate([plus, minus]), dtype=np.intp)
        y_coord = np.concatenate([np.ones(plus.shape[0]), -np.ones(minus.shape[0])])
        # spec 1.7 with the erratum fixed: c_j = n~ (1 + y_j) / (2 n)
        weight = n_tilde * np.concatenate([1.0 + y_aug[plus], 1.0 - y_aug[minus]]) / (2.0 * n)
    rule = {"exact": "exact", "naive": "vanilla" if conjugate == "closed" else "numeric",
            "approx": "approx", "decomp": "vanilla"}[method]
    step = dict(step_rule=_RULE[rule], step_gamma=_losses.strong_convexity(loss, param),
                approx_tight=int(approx_grid == "tight"),
                paper_gamma=int(decomp_gamma == "paper"),
                grid=_approx_grids(loss, param, y_coord) if method == "approx" else None)
    n_coord = y_coord.shape[0]
    alpha = np.zeros(n_coord)

    if kernel == "linear":
        if implicit and n_mix:
            data = Xc
            mix = (plan.a.astype(np.intp), plan.b.astype(np.intp), plan.r.astype(np.float64))
            sqnorm = _kernels.augmented_sqnorms(X_orig, plan)
        else:
            data = check_csr(X_aug, "X")
            mix, sqnorm = None, data.sqnorm
        d = data.shape[1]
        w = np.zeros(d)
        mon = EpochMonitor(("primal", "dual", "gap", "gap_estimate", "n_active"), callback,
                           verbose, coef=w, unevaluated_nan=True)     # TRANSITION
        status, n_epochs, primal, dual, gap, p0 = _sdca.solve(
            data.data, data.indices, data.indptr, d, np.ascontiguousarray(y_coord, dtype=np.float64),
            loss, param, lam, 0.0, w, alpha, tol, max_epochs, check_code, False, sampling_code,
            seed, mon, sqnorm=sqnorm, point=point, weight=weight, mix=mix,
            **step)
        if mon.error is not None:
            raise mon.error
        status = min(status, 2)
        rows = [r[:6] for r in mon.rows]               # drop n_active (no shrinking here)
        beta = np.bincount(point, weights=alpha, minlength=n) if point is not None else alpha
    else:
        spec = _kernels.make_kernel(kernel, "auto" if gamma is None else gamma, coef0, degree,
                                    X=X_orig)
        src = _kernels.make_column_source(X_orig, plan, spec,
                                          precomputed=Kp if kernel == "precomputed" else None,
                                          gram_dtype=_gram_dtype(gram_dtype, n, max_gram_mb),
                                          max_gram_mb=max_gram_mb, cache_size=cache_size)
        status, n_epochs, primal, dual, gap, p0, rows, beta = _kernel_sdca.kernel_sdca(
            src, np.ascontiguousarray(y_coord, dtype=np.float64), loss, param, lam, alpha, tol,
            max_epochs, check_code, sampling_code, seed, int(verbose), callback, point=point,
            weight=weight, **{k: v for k, v in step.items()})
    if status == 1:
        warn_not_converged("train_mixup_sdca", n_epochs, gap, tol * p0)
    dual_points = beta * (n / n_coord)                 # f = sum_i dual_i k(x_i, .) / (lam n)
    params = dict(loss=loss, loss_param=param, lam=lam, kernel=kernel, n_mix=n_mix,
                  mixup_alpha=mixup_alpha, method=method, conjugate=conjugate,
                  approx_grid=approx_grid, decomp_gamma=decomp_gamma, implicit=bool(implicit),
                  sampling=sampling, tol=tol, max_epochs=max_epochs, check_every=check_every,
                  seed=seed, n_augmented=n, n_coordinates=n_coord, status=_STATUS[status], p0=p0,
                  soft_labels=bool(soft_labels))
    history = make_history(rows, extra_fields=("gap_estimate",))
    common = dict(dual=dual_points, history=history, converged=status == 0, n_epochs=n_epochs,
                  solver="mixup_sdca", params=params, classes=classes)
    if kernel == "linear":
        return Model(coef=w, **common)
    params.update(gamma=spec.gamma, coef0=spec.coef0, degree=spec.degree)
    return KernelModel.from_training(X_orig, plan, spec, lam * n, **common)


def train_kernel_sgd(X, y, *, lr, loss="logistic", lam=None, kernel="rbf", gamma=None,
                     degree=3, coef0=1.0, n_mix=0, mixup_alpha=1.0, max_epochs=100, seed=0,
                     sampling="uniform", cache_size=200, gram_dtype="auto",
                     max_gram_mb=1024, smoothing=None, soft_labels=False, verbose=0,
                     callback=None):
    """Kernel SGD with a constant step, the baseline of the paper's Table II (spec 3.6).

    Minimises the same ``R[f]`` as :func:`train_mixup_sdca` over ``f = sum_j beta_j k(x_j, .)``:
    each step picks a point i and does ``beta <- (1 - lr lam) beta``,
    ``beta_i <- beta_i - lr phi'(f(x_i); y_i)``. ``history`` records the exact primal after
    every epoch (n steps); there is no dual, so dual and gap are NaN. ``soft_labels`` as in
    :func:`train_mixup_sdca`.
    """
    loss, param = _check_loss(loss, smoothing)
    lr = check_positive(lr, "lr")
    max_epochs = check_budget(max_epochs, "max_epochs", 0)
    n_mix = check_int(n_mix, "n_mix", 0)
    seed = check_seed(seed)
    sampling_code = _SAMPLING[check_choice(sampling, "sampling", tuple(_SAMPLING))]
    check_choice(kernel, "kernel", ("linear", "rbf", "poly"))
    _check_soft_labels(soft_labels, n_mix)
    Xc = check_csr(X)
    if n_mix:
        _, classes = check_labels(y, Xc.shape[0], "binary")
        _, y_aug, plan = mixup_augment(X, y, n_mix, mixup_alpha, seed, materialize=False)
    else:
        y_aug, classes = _labels(y, Xc.shape[0], soft_labels)
        plan = None
    n = y_aug.shape[0]
    lam = check_regularization(lam, None, n)
    spec = _kernels.make_kernel(kernel, "auto" if gamma is None else gamma, coef0, degree,
                                X=Xc.source)
    src = _kernels.make_column_source(Xc.source, plan, spec,
                                      gram_dtype=_gram_dtype(gram_dtype, n, max_gram_mb),
                                      max_gram_mb=max_gram_mb, cache_size=cache_size)
    n_epochs, rows, beta = _kernel_sdca.kernel_sgd(
        src, np.ascontiguousarray(y_aug, dtype=np.float64), loss, param, lam, lr, max_epochs,
        sampling_code, seed, int(verbose), callback)
    params = dict(loss=loss, loss_param=param, lam=lam, lr=lr, kernel=kernel, n_mix=n_mix,
                  mixup_alpha=mixup_alpha, max_epochs=max_epochs, seed=seed, sampling=sampling,
                  gamma=spec.gamma, coef0=spec.coef0, degree=spec.degree, n_augmented=n)
    history = make_history([r[:5] for r in rows])
    return KernelModel.from_training(Xc.source, plan, spec, lam * n, dual=beta * lam * n,
                                     history=history, converged=False, n_epochs=n_epochs,
                                     solver="kernel_sgd", params=params, classes=classes)


def _gram_dtype(gram_dtype, n, max_gram_mb):
    check_choice(gram_dtype, "gram_dtype", ("auto", "float64", "float32"))
    if gram_dtype != "auto":
        return np.dtype(gram_dtype)
    fits64 = n * n * 8 <= float(max_gram_mb) * (1 << 20)
    return np.dtype(np.float64 if fits64 else np.float32)


def _check_loss(loss, smoothing):
    if isinstance(loss, str):
        loss = _ALIASES.get(loss, loss)
    name, _ = _losses.check_loss(loss)
    if smoothing is not None and name != "smooth_hinge":
        raise ValueError(f"smoothing applies to loss='smooth_hinge' only; got loss={name!r}")
    return _losses.check_loss(name, smoothing)


def _check_soft_labels(soft_labels, n_mix):
    if not isinstance(soft_labels, (bool, np.bool_)):
        raise TypeError(f"soft_labels must be a bool; got {type(soft_labels).__name__}")
    if soft_labels and n_mix:
        raise ValueError("soft_labels=True needs n_mix=0: mixup mixes two classes, so with "
                         "n_mix > 0 y must hold two class labels")


def _labels(y, n, soft_labels):
    """(y float64 in [-1, 1], classes): two classes mapped to -1/+1, or, asked for by name,
    soft labels used as they are (classes -1 and 1)."""
    if soft_labels:
        y_soft, _ = check_labels(y, n, "soft")
        return y_soft, np.array([-1.0, 1.0])
    return check_labels(y, n, "binary")


def _approx_grids(loss, param, y):
    """Algorithm 2's per-coordinate ends (b_u < 0 < b_l) of L_i = {zeta : phi(zeta; y_i) <=
    n phi0(0)} (spec 3.3, eq. 16), by doubling then bisection; +-1 labels are unused (F~ = F)."""
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
