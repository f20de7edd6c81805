"""``train_ppd_sg`` and ``train_ppd_adagrad``: stagewise proximal primal-dual stochastic AUC
maximisation for a linear model (Liu, Yuan, Ying, Yang 2020; spec seed2), and the paper's
baselines ``train_pga`` (Rafique et al.'s proximally guided method, Algorithm 1) and
``train_solam``.

Validation, schedules, monitoring and the Model live here; the loops are in ``_ppd.pyx``.
"""
import math
import warnings
import numbers

import numpy as np
import scipy.sparse as sp

from .._monitor import EpochMonitor
from .._validation import (check_csr, check_labels, check_positive, check_regularization, check_int, check_budget, check_seed,
                           check_choice, ConvergenceWarning)
from ..model import Model, make_history
from . import _ppd, _solam
from .metrics import auc_score
from .surrogate import pairwise_from_scores

_HISTORY_EXTRA = ("pairwise", "val_auc")
_P_FIXED, _P_ONLINE = 0, 1

_OBJECTIVE = """
    Objective (spec seed2 sections 1.2-1.3). With rows x_i of X, labels y_i in {-1, +1},
    scores h = x.w, ``p = Pr(y = +1)`` and the per-sample saddle function

        F(w, a, b, alpha; z) = (1-p) (h - a)^2 I[y=+1] + p (h - b)^2 I[y=-1]
                             + 2 (1 + alpha) (p h I[y=-1] - (1-p) h I[y=+1])
                             - p (1-p) alpha^2,

    the solvers find the saddle point of

        min_{w, a, b} max_alpha  (1/n) sum_i F(w, a, b, alpha; z_i) + (lam/2) ||w||^2,

    which, with ``p = n+/n``, is the square-loss AUC surrogate

        min_w  J(w) = p(1-p) (P_n(w) - 1) + (lam/2) ||w||^2,
        P_n(w) = (1/(n+ n-)) sum_{i: y_i=+1} sum_{j: y_j=-1} (1 - x_i.w + x_j.w)^2,

    with ``a = mean_+(Xw)``, ``b = mean_-(Xw)``, ``alpha = b - a`` at the optimum (exactly
    ``dualsolve.auc_surrogate_optimum``). Only one sample is needed per step; no pairs.
    No intercept (P_n is invariant to a shift of the scores; a and b absorb it).
"""

_STAGES = """
    Stages k = 1..n_stages, with ``eta_k = eta0 / decay^(k-1)`` and
    ``T_k = round(T0 growth^(k-1))`` (stage 1 runs at eta0, T0): stage k starts at and is
    pulled toward its reference point ``v0 = (wbar_{k-1}, abar_{k-1}, bbar_{k-1})`` by the
    proximal term ``(1/(2 gamma)) ||v - v0||^2`` (not on alpha), makes ``T_k - 1``
    stochastic steps and returns the average ``vbar_k`` of its T_k iterates (the start
    included); then alpha is reset to its maximiser at wbar_k,
    ``alphabar_k = mean_-(X wbar_k) - mean_+(X wbar_k)`` (over all rows, or over fresh
    samples with ``alpha_reset="minibatch"``). Output: ``vbar_K``, ``alphabar_K``.
    Every step costs O(nnz of the sampled rows): the dense parts (the pull toward v0,
    the L2 term, the stage averages) are caught up per feature just in time; a stage end
    costs O(n_features + nnz(X)).
"""

_COMMON_PARAMS = """    X : sparse matrix/array (n, n_features)
        CSR (``csr_matrix`` or ``csr_array``, float32/float64, int32/int64 indices) is used
        without a copy; dense and other formats are converted once.
    y : array (n,)
        Two distinct values ({0, 1}, {-1, +1}, bool, ...); the larger is the positive class.
    eta0 : float > 0
        Step size of stage 1.
    T0 : int >= 1, optional
        Length of stage 1 in iterates (T0 - 1 steps of ``batch_size`` samples); default
        ``ceil(n / batch_size)``.
    gamma : float > 0 or None
        Proximal parameter; None or ``np.inf``: no proximal term (the problem is convex for
        a linear model, so gamma only stabilises; small gamma slows progress).
    n_stages : int >= 1
    decay, growth : float >= 1
        Step-size decay and stage-length growth per stage (the paper: 3 and 3).
    lam : float >= 0
        L2 strength on w (a, b not regularised).
    batch_size : int >= 1
        Samples (drawn uniformly with replacement) per step; the gradient is their mean,
        all evaluated at the same point.
    p : None, float in (0, 1) or "online"
        Positive fraction in F: None uses n+/n; a float is taken as the known population
        value; "online" estimates p and p(1-p) from the samples seen before each step
        (Algorithm 4 of the paper; start p = 1/2, p(1-p) = 1/4).
    alpha_reset : {"full", "minibatch"}
        How alphabar_k is computed: over all n rows (exact, O(nnz(X))), or over
        ``round(alpha_batch growth^(k-1))`` fresh samples (the paper; more are drawn until
        both classes are present).
    alpha_batch : int >= 1
        Sample count of the first stage's minibatch reset.
    seed : int or None
        The same seed gives bitwise identical results.
    verbose : int
        1 prints one line per stage: objective J, pairwise loss P_n, validation AUC, seconds.
    callback : callable, optional
        ``callback(info)`` at the start and after every stage with a dict (epoch = stage,
        time, primal = J(wbar_k), pairwise, val_auc, coef: a read-only view of wbar_k);
        return True to stop. Ctrl-C stops cleanly too (KeyboardInterrupt is raised).
    eval_set : (X_val, y_val), optional
        Validation AUC of wbar_k recorded after every stage (labels as in y).
"""

_RETURNS = """
    Returns
    -------
    Model
        ``coef`` = wbar_K; ``params`` holds ``a``, ``b``, ``alpha`` (abar_K, bbar_K,
        alphabar_K), the settings, the per-stage ``etas`` and ``stage_lengths``,
        ``n_samples`` (all samples drawn) and ``p_used`` (p, or the final online
        estimate); ``history`` has one row per stage (0: the start, w = 0) with epoch =
        stage, time, primal = J(wbar_k) (exact, p = n+/n), dual = gap = NaN,
        ``pairwise`` = P_n(wbar_k) and ``val_auc`` (NaN without eval_set);
        ``n_epochs`` = stages run; ``converged`` = the whole schedule ran (a fixed-budget
        method: there is no tolerance). Scores: ``model.decision_function(X) = X @ w``
        (a, b, alpha are not used for scoring).
"""


def _check_eval_set(eval_set, d, classes):
    if eval_set is None:
        return None
    if not (isinstance(eval_set, (tuple, list)) and len(eval_set) == 2):
        raise TypeError("eval_set must be a pair (X_val, y_val)")
    Xv, yv = eval_set
    Xc = check_csr(Xv, name="eval_set[0]")
    if Xc.shape[1] != d:
        raise ValueError(f"eval_set[0] has {Xc.shape[1]} features but X has {d}")
    yv = np.asarray(yv).ravel()
    if yv.shape[0] != Xc.shape[0]:
        raise ValueError(f"eval_set[1] has {yv.shape[0]} labels but eval_set[0] has "
                         f"{Xc.shape[0]} rows")
    bad = ~np.isin(yv, classes)
    if bad.any():
        raise ValueError(f"eval_set[1] has labels not seen in y (e.g. {yv[bad][0]!r}); "
                         f"expected values in {classes.tolist()}")
    pos = yv == classes[1]
    if pos.all() or not pos.any():
        raise ValueError("eval_set[1] has a single class; the validation AUC needs two")
    Xs = sp.csr_matrix((Xc.data, Xc.indices, Xc.indptr), shape=Xc.shape, copy=False)
    return Xs, pos


def _check_gamma(gamma):
    if gamma is None:
        return math.inf, 0.0
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real):
        raise TypeError(f"gamma must be a real number or None; got {type(gamma).__name__}")
    gamma = float(gamma)
    if math.isnan(gamma) or gamma <= 0:
        raise ValueError(f"gamma must be > 0 (or None / inf for no proximal term); got {gamma}")
    return gamma, (0.0 if math.isinf(gamma) else 1.0 / gamma)


def _check_p(p):
    if p is None:
        return None
    if isinstance(p, str):
        return check_choice(p, "p", ("online",))
    p = check_positive(p, "p")
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie in (0, 1), be None (n+/n) or 'online'; got {p}")
    return p


def _make_report(Xs, pos, lam, val, mon, solver):
    """The per-stage (per-epoch) report: exact J and P_n of w, validation AUC, monitor.
    Stops the run with a warning when w is no longer finite or J overflows (a step size
    too large for the data), instead of carrying on with meaningless iterates."""
    p = float(pos.mean())
    pq = p * (1.0 - p)

    def report(k, w, a, b, alpha):
        with np.errstate(over="ignore", invalid="ignore"):
            finite = bool(np.isfinite(w).all())
            Pn = pairwise_from_scores(Xs @ w, pos) if finite else np.inf
            J = pq * (Pn - 1.0) + 0.5 * lam * float(w @ w) if finite else np.inf
        if not math.isfinite(J):
            mon.report(k, J, np.nan, np.nan, Pn, np.nan)
            warnings.warn(f"train_{solver} diverged at stage/epoch {k} (objective {J:.3g}); "
                          "decrease eta0 (or zeta for SOLAM)", ConvergenceWarning, stacklevel=4)
            return True
        vauc = auc_score(val[1], val[0] @ w) if val is not None else np.nan
        mon.set_coef(w)
        return mon.report(k, J, np.nan, np.nan, Pn, vauc)
    return report


def _indptr(Xc):
    indptr = Xc.indptr
    if indptr.dtype != Xc.indices.dtype:
        indptr = indptr.astype(Xc.indices.dtype)
    return indptr


def _check_trace(_trace):
    if _trace is not None and not (isinstance(_trace, np.ndarray) and _trace.dtype == np.intp
                                   and _trace.ndim == 1 and _trace.flags.c_contiguous):
        raise TypeError("_trace must be a 1-D contiguous intp array")


def _check_radius(v, name):
    if v is None:
        return math.inf
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a real number or None; got {type(v).__name__}")
    v = float(v)
    if math.isnan(v) or v <= 0:
        raise ValueError(f"{name} must be > 0 (or None / inf for no projection); got {v}")
    return v


# The stage schedule is listed up front: at most this many stages, each at most 2^53
# iterations (exact in a double; years of computing).
_MAX_STAGES = 10**6
_MAX_STAGE_LENGTH = 2.0**53


def _check_stage_lengths(n_stages, T0, growth, polynomial):
    """The last stage's length, T0 growth^(K-1) or T0 K^2 (PGA), must be at most 2^53."""
    if polynomial:
        last = math.log(T0) + 2.0 * math.log(n_stages)
    else:
        last = math.log(T0) + (n_stages - 1) * math.log(growth)
    if last > math.log(_MAX_STAGE_LENGTH):
        raise ValueError(f"n_stages={n_stages} makes the last stage longer than 2^53 iterations "
                         f"(T0={T0}, {'T0 k^2' if polynomial else f'growth={growth:g}'}); "
                         "use fewer stages")


def _train(solver, method, X, y, eta0, T0, gamma, n_stages, decay, growth, lam, delta,
           batch_size, p, alpha_reset, alpha_batch, seed, verbose, callback, eval_set,
           _trace, R1=None, R2=None, return_="last_stage"):
    Xc = check_csr(X)
    n, d = Xc.shape
    y_pm, classes = check_labels(y, n, "binary")
    eta0 = check_positive(eta0, "eta0")
    batch_size = check_int(batch_size, "batch_size", 1)
    T0 = -(-n // batch_size) if T0 is None else check_int(T0, "T0", 1)
    gamma, inv_gamma = _check_gamma(gamma)
    n_stages = check_int(n_stages, "n_stages", 1, _MAX_STAGES)
    decay = check_positive(decay, "decay")
    growth = check_positive(growth, "growth")
    if decay < 1.0 or growth < 1.0:
        raise ValueError(f"decay and growth must be >= 1; got decay={decay}, growth={growth}")
    _check_stage_lengths(n_stages, T0, 1.0 if method == "pga" else growth, method == "pga")
    lam = check_regularization(lam, None, n, allow_zero=True)
    p = _check_p(p)
    check_choice(alpha_reset, "alpha_reset", ("full", "minibatch"))
    alpha_batch = check_int(alpha_batch, "alpha_batch", 1)
    seed = check_seed(seed)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable")
    val = _check_eval_set(eval_set, d, classes)
    R1 = _check_radius(R1, "R1")
    R2 = _check_radius(R2, "R2")
    check_choice(return_, "return_", ("last_stage", "random"))
    if method == "pga":                    # Algorithm 1: polynomial schedule, no reset
        etas = [eta0 / k for k in range(1, n_stages + 1)]
        Ts = [T0 * k * k for k in range(1, n_stages + 1)]
        ms = [0] * n_stages
    else:
        etas = [eta0 / decay ** k for k in range(n_stages)]
        Ts = [max(1, int(round(T0 * growth ** k))) for k in range(n_stages)]
        ms = ([0] * n_stages if alpha_reset == "full"
              else [max(1, int(round(alpha_batch * growth ** k))) for k in range(n_stages)])
    if method in ("sg", "pga") and eta0 * (lam + inv_gamma) >= 1.0:
        raise ValueError(f"eta0 * (lam + 1/gamma) = {eta0 * (lam + inv_gamma):.6g} must be "
                         "< 1 (the pull toward the reference point would overshoot); "
                         "lower eta0 or raise gamma")
    pos = y_pm > 0
    p_emp = float(pos.mean())
    if p is None:
        p_mode, p_val = _P_FIXED, p_emp
    elif p == "online":
        p_mode, p_val = _P_ONLINE, 0.5
    else:
        p_mode, p_val = _P_FIXED, p
    Xs = sp.csr_matrix((Xc.data, Xc.indices, Xc.indptr), shape=Xc.shape, copy=False)
    mon = EpochMonitor(callback, verbose, ("primal", "dual", "gap") + _HISTORY_EXTRA)
    report = _make_report(Xs, pos, lam, val, mon, solver)
    # PGA's theory returns the average of a stage tau drawn uniformly from 1..K (from its
    # own generator, so the sample stream does not depend on return_)
    tau = (int(np.random.default_rng(seed).integers(1, n_stages + 1))
           if return_ == "random" else n_stages)
    snap = {}

    def report_keep(k, w, a, b, alpha):
        if 0 < k <= tau:                   # stage tau, or the last one run before a stop
            snap.update(coef=w.copy(), a=a, b=b, alpha=alpha, k=k)
        return report(k, w, a, b, alpha)

    _check_trace(_trace)
    w, a, b, alpha, done, n_samples, p_fin, pq_fin, stopped = _ppd._fit(
        Xc.data, Xc.indices, _indptr(Xc), d, y_pm, method, etas, Ts, ms, lam, inv_gamma,
        delta, batch_size, p_mode, p_val, seed, report_keep if return_ == "random" else report,
        mon, _trace, R1, R2)
    if mon.error is not None:
        raise mon.error
    if snap:
        w, a, b, alpha = snap["coef"], snap["a"], snap["b"], snap["alpha"]
    params = dict(eta0=eta0, T0=T0, gamma=gamma, n_stages=n_stages, lam=lam,
                  batch_size=batch_size, p=p, seed=seed, etas=etas, stage_lengths=Ts,
                  a=float(a), b=float(b), alpha=float(alpha), n_samples=int(n_samples),
                  p_used=float(p_fin), pq_used=float(pq_fin))
    if method == "pga":
        params.update(R1=R1, R2=R2, return_=return_,
                      stage_returned=snap["k"] if snap else done)
    else:
        params.update(decay=decay, growth=growth, alpha_reset=alpha_reset,
                      alpha_batch=alpha_batch)
    if method == "adagrad":
        params["delta"] = delta
    return Model(coef=w, history=make_history(mon.rows, extra_fields=_HISTORY_EXTRA),
                 converged=done == n_stages, n_epochs=done, solver=solver, params=params,
                 classes=classes)


def train_ppd_sg(X, y, *, eta0=0.1, T0=None, gamma=1e3, n_stages=5, decay=3.0, growth=3.0,
                 lam=0.0, batch_size=1, p=None, alpha_reset="full", alpha_batch=256, seed=0,
                 verbose=0, callback=None, eval_set=None, _trace=None):
    return _train("ppd_sg", "sg", X, y, eta0, T0, gamma, n_stages, decay, growth, lam, 0.0,
                  batch_size, p, alpha_reset, alpha_batch, seed, verbose, callback, eval_set,
                  _trace)


train_ppd_sg.__doc__ = """Stochastic AUC maximisation by PPD-SG, the proximal primal-dual
    stochastic gradient method (Algorithm 2 of Liu et al. 2020; spec seed2 section 2.2).
""" + _OBJECTIVE + _STAGES + """
    Step t of stage k on a batch B, every gradient of F at ``(w_t, a_t, b_t, alpha_t)``::

        w_{t+1}     = w_t - eta_k (mean_B grad_w F + lam w_t + (w_t - w0)/gamma)
        a_{t+1}     = a_t - eta_k (mean_B dF/da + (a_t - a0)/gamma)          (b alike)
        alpha_{t+1} = alpha_t + eta_k mean_B dF/dalpha

    Requires ``eta0 (lam + 1/gamma) < 1``.

    Parameters
    ----------
""" + _COMMON_PARAMS + _RETURNS


def train_ppd_adagrad(X, y, *, eta0=0.5, T0=None, gamma=1e3, n_stages=5, decay=3.0,
                      growth=3.0, lam=0.0, delta=1e-2, batch_size=1, p=None,
                      alpha_reset="full", alpha_batch=256, seed=0, verbose=0, callback=None,
                      eval_set=None, _trace=None):
    delta = check_positive(delta, "delta")
    return _train("ppd_adagrad", "adagrad", X, y, eta0, T0, gamma, n_stages, decay, growth,
                  lam, delta, batch_size, p, alpha_reset, alpha_batch, seed, verbose,
                  callback, eval_set, _trace)


train_ppd_adagrad.__doc__ = """Stochastic AUC maximisation by PPD-AdaGrad (Algorithm 3 of Liu
    et al. 2020 inside Algorithm 2's stages; spec seed2 sections 2.3 and 3.5, the sparse
    "composite" form).
""" + _OBJECTIVE + _STAGES + """
    Within stage k, AdaGrad in dual-averaging form centred at the stage start
    ``u0 = (w0, a0, b0, alpha0)``, with the proximal and L2 terms kept exact inside the
    step: after m steps, with ``G_j`` the sum of the F-gradients (batch means) of
    coordinate j since the stage start and ``s_j`` the root of the sum of their squares
    (both reset at every stage)::

        w_j   = w0_j - eta_k (G_j + m lam w0_j) / (delta + s_j + m eta_k (lam + 1/gamma))
        a     = a0 - eta_k G_a / (delta + s_a + m eta_k / gamma)            (b alike)
        alpha = alpha0 + eta_k G'_alpha / (delta + s_alpha)                 (ascent)

    The stage average of the T_k iterates is summed per feature in closed form between
    touches (digamma differences), so a step still costs O(nnz of the sampled rows).

    Parameters
    ----------
""" + _COMMON_PARAMS + """    delta : float > 0
        Offset of the AdaGrad scaling ``H = delta I + diag(s)``.
""" + _RETURNS


def train_pga(X, y, *, eta0=0.1, T0=None, gamma=1e3, n_stages=5, lam=0.0, R1=None, R2=None,
              batch_size=1, p=None, return_="last_stage", seed=0, verbose=0, callback=None,
              eval_set=None, _trace=None):
    return _train("pga", "pga", X, y, eta0, T0, gamma, n_stages, 1.0, 1.0, lam, 0.0,
                  batch_size, p, "full", 1, seed, verbose, callback, eval_set, _trace,
                  R1=R1, R2=R2, return_=return_)


train_pga.__doc__ = """Stochastic AUC maximisation by PGA, the proximally guided stochastic
    primal-dual method of Rafique, Liu, Lin & Yang (2018) as run by Liu et al. (2020,
    Algorithm 1; spec seed2 section 2.1): the paper's baseline for PPD-SG.
""" + _OBJECTIVE + """
    Stages k = 1..n_stages with the polynomial schedule of Algorithm 1,
    ``eta_k = eta0 / k`` and ``T_k = T0 k^2``. Stage k starts at its reference point
    ``v0 = vbar_{k-1} = (wbar_{k-1}, abar_{k-1}, bbar_{k-1})`` and ``alphabar_{k-1}``
    (all zero for k = 1) and makes T_k projected steps; step t on a batch B, every
    gradient of F at ``(w_t, a_t, b_t, alpha_t)``::

        v'          = v_t - eta_k (mean_B grad_v F + (lam w_t, 0, 0) + (v_t - v0)/gamma)
        v_{t+1}     = v' min(1, R1 / ||v'||)             (ball on all of v = (w, a, b))
        alpha_{t+1} = clip(alpha_t + eta_k mean_B dF/dalpha, -R2, R2)

    ``vbar_k`` and ``alphabar_k`` are the averages of the T_k iterates 1..T_k (the start
    excluded). Unlike PPD-SG, alpha is averaged and carried into the next stage (no reset
    to its maximiser), the steps decay polynomially and the projections are kept.

    Choices of dualsolve (the paper leaves them open):

    - The L2 term ``(lam/2)||w||^2`` (spec 1.3) is added to the gradient of w; with
      lam = 0 this is exactly Algorithm 1.
    - ``R1 = R2 = None`` (the default) means no projection. The paper adds the balls
      only for its analysis ("as long as R1 and R2 are sufficiently large, they should
      not affect the solution") and reports no values.
    - Output: the last stage (``return_="last_stage"``, default, as PPD-SG), or
      Algorithm 1's ``vbar_tau`` with tau uniform in 1..n_stages
      (``return_="random"``; tau comes from ``numpy.random.default_rng(seed)``, apart
      from the sample stream). All stages run and are recorded in the history either
      way; ``params["stage_returned"]`` is the stage returned.
    - Mini-batches (``batch_size``; the paper's experiments use 128), ``p`` and the
      sampling (uniform with replacement) are as in ``train_ppd_sg``.

    Every step costs O(nnz of the sampled rows): w is kept as ``sigma z + tau w0``,
    so the pull toward w0, the L2 shrink and the ball projection are O(1) updates of the
    scalars sigma and tau; ``||v||`` comes from running sums; the stage average is kept
    per feature with a prefix sum of sigma (double-double). sigma is folded into z
    (O(n_features)) when it falls below 1e-6, i.e. after about
    ``14 / (eta_k (lam + 1/gamma))`` steps without projections; a stage end costs
    O(n_features). Requires ``eta0 (lam + 1/gamma) < 1``.

    Parameters
    ----------
    X, y : as in ``train_ppd_sg``
    eta0 : float > 0
        Step size of stage 1 (stage k: eta0 / k).
    T0 : int >= 1, optional
        Steps of stage 1 (stage k: T0 k^2 steps of ``batch_size`` samples); default
        ``ceil(n / batch_size)``.
    gamma : float > 0 or None
        Proximal parameter (None / inf: no proximal term).
    n_stages : int >= 1
    lam : float >= 0
        L2 strength on w.
    R1 : float > 0 or None
        Radius of the ball on ``v = (w, a, b)``; None: no projection.
    R2 : float > 0 or None
        Bound on ``|alpha|``; None: no projection.
    batch_size, p, seed, verbose, callback, eval_set : as in ``train_ppd_sg``
    return_ : {"last_stage", "random"}

    Returns
    -------
    Model
        ``coef`` = the returned stage's wbar; ``params`` holds its ``a``, ``b``, ``alpha``
        (stage averages), ``stage_returned``, the settings, ``etas`` and
        ``stage_lengths`` (T_k: steps, and iterates averaged), ``n_samples``,
        ``p_used``; ``history`` as in ``train_ppd_sg`` (one row per stage, the last
        stage's row last, whichever stage is returned). ``converged`` = all stages ran.
"""


def train_solam(X, y, *, zeta=0.1, R=10.0, n_epochs=5, seed=0, verbose=0, callback=None,
                eval_set=None, _trace=None):
    """Stochastic online AUC maximisation, SOLAM (Ying, Wen & Lyu 2016; the paper's OAUC
    baseline; spec seed2 section 2.5).

    Saddle problem (no L2 term; the constraint sets play its role)::

        min_{||w|| <= R, |a|, |b| <= kappa R}  max_{|alpha| <= 2 kappa R}
            (1/n) sum_i F(w, a, b, alpha; z_i),     kappa = max_i ||x_i||,

    with F as in ``train_ppd_sg`` (its minimum over (a, b) and maximum over alpha is
    ``p(1-p) (P_n(w) - 1)``, P_n the pairwise square loss). Step t on a row drawn
    uniformly with replacement, from zeros::

        p_t = ((t-1) p_{t-1} + I[y=+1]) / t,        gamma_t = zeta / sqrt(t)
        (w, a, b) <- Proj(v - gamma_t grad_v F),    alpha <- clip(alpha + gamma_t dF/dalpha)

    and the output is the gamma_t-weighted average of the iterates (pre-update). O(nnz) per
    step: the ball projection rescales w = sigma z in O(1), and the weighted average is
    kept per feature with a prefix sum of gamma_t sigma_t.

    Parameters
    ----------
    X, y : as in ``train_ppd_sg``
    zeta : float > 0
        Step-size constant (the reference code's grid: 1, 10, 19, ..., 100).
    R : float > 0
        Radius of the ball on w.
    n_epochs : int >= 1
        Budget in epochs of n steps; history has one row per epoch.
    seed, verbose, callback, eval_set : as in ``train_ppd_sg`` (epoch = epoch of n steps)

    Returns
    -------
    Model
        ``coef`` = the averaged w; ``params``: ``a``, ``b``, ``alpha`` (averaged),
        ``p_used`` (the final running estimate of p), ``kappa``, the settings;
        ``history`` as in ``train_ppd_sg`` with lam = 0.
    """
    Xc = check_csr(X)
    n, d = Xc.shape
    y_pm, classes = check_labels(y, n, "binary")
    zeta = check_positive(zeta, "zeta")
    R = check_positive(R, "R")
    n_epochs = check_budget(n_epochs, "n_epochs", 1)
    seed = check_seed(seed)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable")
    val = _check_eval_set(eval_set, d, classes)
    _check_trace(_trace)
    kappa = float(np.sqrt(Xc.sqnorm.max())) if n else 0.0
    pos = y_pm > 0
    Xs = sp.csr_matrix((Xc.data, Xc.indices, Xc.indptr), shape=Xc.shape, copy=False)
    mon = EpochMonitor(callback, verbose, ("primal", "dual", "gap") + _HISTORY_EXTRA)
    report = _make_report(Xs, pos, 0.0, val, mon, "solam")
    w, a, b, alpha, done, p_hat = _solam._fit(Xc.data, Xc.indices, _indptr(Xc), d, y_pm, zeta,
                                              R, kappa, n_epochs, seed, report, _trace)
    if mon.error is not None:
        raise mon.error
    params = dict(zeta=zeta, R=R, kappa=kappa, n_epochs=n_epochs, seed=seed, a=float(a),
                  b=float(b), alpha=float(alpha), n_samples=int(done * n), p_used=float(p_hat))
    return Model(coef=w, history=make_history(mon.rows, extra_fields=_HISTORY_EXTRA),
                 converged=done == n_epochs, n_epochs=done, solver="solam", params=params,
                 classes=classes)
