"""``train_ppd_sg`` and ``train_ppd_adagrad``: stagewise proximal primal-dual stochastic AUC
maximisation for a linear model (Liu, Yuan, Ying & Yang, ICLR 2020), and the paper's
baselines ``train_pga`` (Rafique et al.'s proximally guided method, their Algorithm 1) and
``train_solam`` (Ying, Wen & Lyu 2016).

Each solver is described once (``dualsolve._driver.Solver``); the loops, the exact
objective and the certificates are in ``_ppd.pyx`` and ``_solam.pyx``.
"""
import math

import numpy as np
import scipy.sparse as sp

from .._driver import Result, Solver, certified, fit, register
from .._monitor import MonitorView
from .._params import Anything, Integral, Interval, Options, Real
from .._validation import check_csr
from ..model import warm_start_coef
from . import _ppd, _solam
from .metrics import auc_score

HISTORY = ("pairwise", "val_auc")

_OBJECTIVE = """
    Objective (Liu et al. 2020, Proposition 1). With rows x_i of X, labels y_i in {-1, +1},
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

_CERTIFICATE = """
    Stopping (``stop_reason="converged"``): J is a convex quadratic, lam-strongly convex
    for lam > 0, so ``J(w) - min J <= ||grad J(w)||^2 / (2 lam)``; J and its gradient are
    evaluated exactly (two passes over X, compensated sums) at every stage end, and the run
    stops when that bound B is ``<= tol * (J(w) + p(1-p) - B)``, i.e. the relative
    suboptimality of the nonnegative risk ``R = J + p(1-p) = p(1-p) P_n(w) + (lam/2)||w||^2``
    is at most tol (J is R shifted by its lower bound: ``J(0) = 0``, ``min J >= -p(1-p)``),
    or when B is at the rounding floor, 64 ulps of ``p(1-p)``. The bound is an upper bound:
    stochastic iterates typically sit
    much closer to the optimum than it certifies (their error lies in the directions of
    large curvature). ``tol=0`` or ``lam=0`` (no strong convexity, no certificate) run the
    whole budget.
"""

_STAGES = """
    Stages k = 1, 2, ...: step size ``eta_k = step / decay^(k-1)`` (the paper's eta_0 is
    ``step``) and ``round((T0 - 1) growth^(k-1))`` steps, i.e. ``T_k`` iterates counting the start (with the default T0,
    stage k lasts growth^(k-1) epochs; the paper's T_k = T0 growth^(k-1) grows the
    iterates, here the steps). Stage k starts at and is pulled toward its reference point
    ``v0 = (wbar_{k-1}, abar_{k-1}, bbar_{k-1})`` by the proximal term
    ``(1/(2 prox_gamma)) ||v - v0||^2`` (not on alpha), makes its stochastic steps and
    returns the average ``vbar_k`` of its T_k iterates (the start included); then alpha is
    reset to its maximiser at wbar_k, ``alphabar_k = mean_-(X wbar_k) - mean_+(X wbar_k)``
    (over all rows, or over fresh samples with ``alpha_reset="minibatch"``), and J and the
    certificate are evaluated at wbar_k. The budget ends the run after ``max_epochs``
    epochs: the last stage runs to the end of the budget (it takes what is left when a
    full next stage would not fit in after it). Every step costs O(nnz of the sampled
    rows): the dense parts (the pull toward v0, the L2 term, the stage averages) are caught
    up per feature just in time; a stage end costs O(n_features + nnz(X)).
"""

_COMMON_PARAMS = """    X : sparse matrix/array (n, n_features)
        CSR (``csr_matrix`` or ``csr_array``, float32/float64, int32/int64 indices) is used
        without a copy; dense and other formats are converted once.
    y : array (n,)
        Two distinct values ({0, 1}, {-1, +1}, bool, ...); the larger is the positive class.
    loss : {"squared"}
        The pairwise square loss ``(1 - x_i.w + x_j.w)^2`` (the only one).
    lam : float >= 0, optional
        L2 strength on w (a, b not regularised); default ``1/n``.
    tol : float >= 0
        Stop when the certificate B (above) is ``<= tol * (J + p(1-p) - B)``, a relative
        suboptimality of ``J + p(1-p)`` of at most tol; 0 runs the whole budget.
    max_epochs : int >= 0
        Budget: epochs of ``ceil(n / batch_size)`` steps (n samples; the alpha resets'
        samples are extra). Ending here warns (ConvergenceWarning) with the certificate
        reached.
    seed : int or None
        The same seed gives bitwise identical results.
    verbose : int
        1 prints one line per epoch: J, the certificate (gap), P_n, validation AUC, seconds
        (NaN inside a stage).
    callback : callable, optional
        ``callback(info)`` at the start and after every epoch with a dict (epoch, time,
        primal = J, gap = the certificate, pairwise, val_auc, coef: a read-only view of the
        last stage's average); the values are NaN for an epoch in which no stage ended.
        Return True to stop (the last stage's average is returned). An exception it raises
        reaches the caller after the solve has stopped; Ctrl-C stops cleanly too
        (KeyboardInterrupt with ``.model``).
    warm_start : Model or array (n_features,), optional
        Coefficients to start from (a, b, alpha start at their maximisers for them).
    n_jobs : int or None
        Threads (default 1, -1 every core; ``docs/api.md``, "Threads"): one-vs-rest
        classes run side by side, the same model as with ``n_jobs=1``, bit for bit. On
        one problem (X of 2^18 nonzeros or more) each evaluation's pass over X (the
        scores, and the gradient in blocks of rows) runs in ``n_jobs`` threads, the steps
        serial: the iterates are one thread's, the certificate's last bits depend on
        ``n_jobs`` only.
    T0 : int, optional
        Iterates of stage 1 (T0 - 1 steps of ``batch_size`` samples); default one epoch,
        ``ceil(n / batch_size) + 1``.
    prox_gamma : float > 0 or None
        Weight of the proximal term ``(1/(2 prox_gamma)) ||v - v0||^2`` of each stage;
        None: no proximal term (the problem is convex for a linear model, so the term only
        stabilises, and it slows progress in the directions whose curvature is below
        1/prox_gamma).
    decay, growth : float >= 1
        Step-size decay and stage-length growth per stage (the paper's experiments: 3 and
        3). Default decay 1 for PPD-SG: constant steps with stage averages (the linear
        model's saddle problem is a linear stochastic recursion, so averaging removes the
        noise, Polyak-Juditsky, and a decaying step would only slow the bias down).
    batch_size : int >= 1
        Samples (drawn uniformly with replacement) per step; the gradient is their mean,
        all evaluated at the same point.
    p : None, float in (0, 1) or "online"
        Positive fraction in F's gradients: None uses n+/n; a float is taken as the known
        population value; "online" estimates p and p(1-p) from the samples seen before
        each step (Algorithm 4 of the paper; start p = 1/2, p(1-p) = 1/4). The objective
        J and the certificate always use n+/n.
    alpha_reset : {"full", "minibatch"}
        How alphabar_k is computed: over all n rows (exact; free: the stage-end evaluation
        computes the class means), or over ``round(alpha_batch growth^(k-1))`` fresh
        samples (the paper; more are drawn until both classes are present).
    alpha_batch : int >= 1
        Sample count of the first stage's minibatch reset.
    eval_set : (X_val, y_val), optional
        Validation AUC of the last stage's average recorded in ``history["val_auc"]``
        whenever a stage ends (labels as in y).
"""

_RETURNS = """
    Returns
    -------
    Model
        ``coef`` = the last stage's average wbar; ``params`` holds the settings (``step``
        and ``T0`` as used, defaults resolved), ``saddle_a``, ``saddle_b``,
        ``saddle_alpha`` (abar, bbar, alphabar of the returned stage), ``n_stages``, the
        per-stage ``etas`` and ``stage_lengths`` (T_k), ``n_steps``, ``n_samples`` (all
        samples drawn) and ``p_used`` (p, or the final online estimate); ``history`` has
        one row per epoch (0: the start) with primal = J (exact, p = n+/n), dual = NaN, gap
        = the certificate, ``pairwise`` = P_n and ``val_auc`` (NaN without eval_set, and
        in epochs without a stage end); ``stop_reason``, ``n_epochs`` (epochs begun).
        Scores: ``model.decision_function(X) = X @ w`` (a, b, alpha are not used for
        scoring).
"""


# ---------------------------------------------------------------------------------------
# the engines


def _pq(y):
    p = float(np.mean(np.asarray(y) > 0))
    return p * (1.0 - p)


def _indptr(Xc):
    indptr = Xc.indptr
    if indptr.dtype != Xc.indices.dtype:
        indptr = indptr.astype(Xc.indices.dtype)
    return indptr


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


class _WithValidation(MonitorView):
    """The monitor seen by the engine when there is an eval_set: fills the val_auc slot of
    every report that carries a stage end (J not NaN) with the AUC of ``coef`` (the last
    stage's average) on the validation rows."""

    def __init__(self, mon, val, coef):
        super().__init__(mon)
        self.val, self.coef = val, coef

    def report(self, epoch, values):
        if not math.isnan(values[0]) and np.isfinite(self.coef).all():
            Xv, pos = self.val
            values = values[:4] + (auc_score(pos, Xv @ self.coef),)
        return self.mon.report(epoch, values)


def _start(p, o, mon):
    """The start w (zeros or the warm start) and the engine's view of the monitor."""
    w = warm_start_coef(p.warm_start, p.d)
    mon.set_coef(w)
    val = _check_eval_set(o.get("eval_set"), p.d, p.classes)
    info = dict(eval_set=None if val is None else f"{val[0].shape[0]} rows")
    return w, (mon if val is None else _WithValidation(mon, val, w)), info


def stage_plan(method, k, eta0, T0, decay=3.0, growth=3.0):
    """(eta_k, steps of stage k) of the unbounded schedule, k >= 1, as ``ppd_run`` makes it
    (PGA: eta0 / k and T0 k^2; PPD: eta0 / decay^(k-1) and round((T0 - 1) growth^(k-1)),
    halves rounded up)."""
    if method == "pga":
        return eta0 / k, T0 * (float(k) * float(k))
    return eta0 / decay ** float(k - 1), math.floor((T0 - 1.0) * growth ** float(k - 1) + 0.5)


def _ppd_engine(method):
    def engine(p, o, mon):
        inv_gamma = 0.0 if o["prox_gamma"] is None else 1.0 / o["prox_gamma"]
        eta0 = o["step"]
        if method != "adagrad" and eta0 is not None and eta0 * (p.lam + inv_gamma) >= 1.0:
            raise ValueError(f"step * (lam + 1/prox_gamma) = {eta0 * (p.lam + inv_gamma):.6g} "
                             "must be < 1 (the pull toward the reference point would "
                             "overshoot); lower step or raise prox_gamma")
        w, ctx, info = _start(p, o, mon)
        Xc = p.X
        if eta0 is None:
            eta0 = _ppd.default_step(Xc.data, _indptr(Xc), p.y, method)
            if method != "adagrad" and eta0 * (p.lam + inv_gamma) >= 0.5:
                eta0 = 0.5 / (p.lam + inv_gamma)
        pga = method == "pga"
        decay = o.get("decay", 1.0)
        if decay is None:                      # PPD-AdaGrad: sqrt(growth), Theorem 3
            decay = math.sqrt(o["growth"])
        minibatch = not pga and o["alpha_reset"] == "minibatch"
        pv = o["p"]
        r = _ppd.solve(Xc.data, Xc.indices, _indptr(Xc), p.d, p.y, w, method, lam=p.lam,
                       eta0=eta0, T0=o["T0"] or 0.0, decay=decay,
                       growth=o.get("growth", 1.0), inv_gamma=inv_gamma,
                       delta=o.get("delta", 0.0),
                       R1=math.inf if o.get("R1") is None else o["R1"],
                       R2=math.inf if o.get("R2") is None else o["R2"],
                       batch_size=o["batch_size"],
                       p_mode="online" if pv == "online" else "fixed",
                       p=math.nan if pv is None or pv == "online" else pv,
                       alpha_batch=o["alpha_batch"] if minibatch else 0.0, tol=p.tol,
                       max_epochs=p.max_epochs, seed=p.seed, mon=ctx, n_threads=p.n_jobs)
        K = r["n_stages"]
        plan = [stage_plan(method, k, r["eta0"], r["T0"], decay, o.get("growth", 1.0))
                for k in range(1, K + 1)]
        steps = [int(s) for _, s in plan[:-1]] + ([r["last_stage_steps"]] if K else [])
        if not pga:
            info["decay"] = decay
        info.update(step=r["eta0"], T0=int(r["T0"]), n_stages=K, etas=[e for e, _ in plan],
                    stage_lengths=steps if pga else [s + 1 for s in steps],
                    n_steps=r["n_steps"], n_samples=r["n_samples"], p_used=r["p"],
                    pq_used=r["pq"], saddle_a=r["a"], saddle_b=r["b"], saddle_alpha=r["alpha"])
        return Result(r["status"], r["n_epochs"], coef=w, measure=r["measure"],
                      threshold=r["threshold"], info=info)
    return engine


def _solam_engine(p, o, mon):
    Xc = p.X
    R = o["R"]
    if R is None:
        # the ball then holds the minimiser of J: J(w*) <= J(0) = 0 and P_n >= 0 give
        # (lam/2) ||w*||^2 <= p(1-p)
        R = math.sqrt(2.0 * _pq(p.y) / p.lam) if p.lam > 0 else math.inf
    zeta = o["step"]
    if zeta is None:
        zeta = _ppd.default_step(Xc.data, _indptr(Xc), p.y, "solam")
        zeta = min(zeta, 0.5 / p.lam) if p.lam > 0 else zeta
    elif zeta * p.lam >= 1.0:
        raise ValueError(f"step * lam = {zeta * p.lam:.6g} must be < 1 (the first step's L2 "
                         "shrink would overshoot); lower step")
    w, ctx, info = _start(p, o, mon)
    r = _solam.solve(Xc.data, Xc.indices, _indptr(Xc), p.d, p.y, w, zeta=zeta, R=R,
                     lam=p.lam, tol=p.tol, max_epochs=p.max_epochs, seed=p.seed, mon=ctx,
                     n_threads=p.n_jobs)
    info.update(step=r["zeta"], R=R, kappa=r["kappa"], n_steps=r["n_steps"],
                n_samples=r["n_steps"], p_used=r["p_hat"], saddle_a=r["a"],
                saddle_b=r["b"], saddle_alpha=r["alpha"])
    return Result(r["status"], r["n_epochs"], coef=w, measure=r["measure"],
                  threshold=r["threshold"], info=info)


# ---------------------------------------------------------------------------------------
# the public functions


def train_ppd_sg(X, y, *, loss="squared", lam=None, tol=1e-3, max_epochs=100, seed=0,
                 verbose=0, callback=None, warm_start=None, n_jobs=1, step=None, T0=None,
                 prox_gamma=None, decay=1.0, growth=3.0, batch_size=1, p=None,
                 alpha_reset="full", alpha_batch=256, eval_set=None):
    return fit(PPD_SG, locals())


train_ppd_sg.__doc__ = """Stochastic AUC maximisation by PPD-SG, the proximal primal-dual
    stochastic gradient method (Algorithm 2 of Liu et al. 2020).
""" + _OBJECTIVE + _STAGES + """
    Step t of stage k on a batch B, every gradient of F at ``(w_t, a_t, b_t, alpha_t)``::

        w_{t+1}     = w_t - eta_k (mean_B grad_w F + lam w_t + (w_t - w0)/prox_gamma)
        a_{t+1}     = a_t - eta_k (mean_B dF/da + (a_t - a0)/prox_gamma)          (b alike)
        alpha_{t+1} = alpha_t + eta_k mean_B dF/dalpha
""" + _CERTIFICATE + """
    Parameters
    ----------
""" + _COMMON_PARAMS + """    step : float > 0, optional
        Step size of stage 1 (the paper's eta_0). Default ``1 / L`` with ``L = max_i 2 c_i
        (||x_i||^2 + 1)``, ``c_i = 1 - p`` for a positive row and p for a negative one: the
        largest per-sample curvature of F (in (w, a, alpha)), so that the default scales
        with the data and is stable on every row; at most ``0.5 / (lam + 1/prox_gamma)``.
        Requires ``step (lam + 1/prox_gamma) < 1``.
""" + _RETURNS


def train_ppd_adagrad(X, y, *, loss="squared", lam=None, tol=1e-3, max_epochs=100, seed=0,
                      verbose=0, callback=None, warm_start=None, n_jobs=1, step=None, T0=None,
                      prox_gamma=None, decay=None, growth=3.0, delta=1e-2, batch_size=1,
                      p=None, alpha_reset="full", alpha_batch=256, eval_set=None):
    return fit(PPD_ADAGRAD, locals())


train_ppd_adagrad.__doc__ = """Stochastic AUC maximisation by PPD-AdaGrad (Algorithm 3 of Liu
    et al. 2020 inside Algorithm 2's stages, with the proximal and L2 terms in closed form).
""" + _OBJECTIVE + _STAGES + """
    Within stage k, AdaGrad in dual-averaging form centred at the stage start
    ``u0 = (w0, a0, b0, alpha0)``, with the proximal and L2 terms kept exact inside the
    step: after m steps, with ``G_j`` the sum of the F-gradients (batch means) of
    coordinate j since the stage start and ``s_j`` the root of the sum of their squares
    (both reset at every stage)::

        w_j   = w0_j - eta_k (G_j + m lam w0_j) / (delta + s_j + m eta_k (lam + 1/prox_gamma))
        a     = a0 - eta_k G_a / (delta + s_a + m eta_k / prox_gamma)          (b alike)
        alpha = alpha0 + eta_k G'_alpha / (delta + s_alpha)                    (ascent)

    The stage average of the T_k iterates is summed per feature in closed form between
    touches (digamma differences), so a step still costs O(nnz of the sampled rows).
""" + _CERTIFICATE + """
    Parameters
    ----------
""" + _COMMON_PARAMS + """    step : float > 0, optional
        Step size of stage 1 (the paper's eta_0). Default ``4 / sqrt(L)`` with L as in
        ``train_ppd_sg``: AdaGrad divides the step by the root of the summed squared
        gradients, which scale like the rows, so ``1 / sqrt(L)`` makes the step invariant
        to a rescaling of X.
    decay : float >= 1 or None
        Step-size decay per stage; default None: ``sqrt(growth)`` (Theorem 3 of the paper
        keeps ``eta_k M_k`` constant with stage lengths ``T_k ~ M_k^2``: AdaGrad's own
        scaling already falls as 1/sqrt(t); with decay = growth the stages stall).
    delta : float > 0
        Offset of the AdaGrad scaling ``H = delta I + diag(s)``.
""" + _RETURNS


def train_pga(X, y, *, loss="squared", lam=None, tol=1e-3, max_epochs=100, seed=0,
              verbose=0, callback=None, warm_start=None, n_jobs=1, step=None, T0=None,
              prox_gamma=None,
              R1=None, R2=None, batch_size=1, p=None, eval_set=None):
    """Stochastic AUC maximisation by PGA, the proximally guided stochastic primal-dual
    method of Rafique, Liu, Lin & Yang (2018) as run by Liu et al. (2020, Algorithm 1): the
    paper's baseline for PPD-SG.
    {objective}
    Stages k = 1, 2, ... with the polynomial schedule of Algorithm 1, ``eta_k = step / k``
    and ``T_k = T0 k^2`` steps. Stage k starts at its reference point
    ``v0 = vbar_{{k-1}} = (wbar_{{k-1}}, abar_{{k-1}}, bbar_{{k-1}})`` and ``alphabar_{{k-1}}``
    (k = 1: w = 0 or the warm start, a, b, alpha at their maximisers for it) and makes T_k
    projected steps; step t on a batch B, every gradient of F at
    ``(w_t, a_t, b_t, alpha_t)``::

        v'          = v_t - eta_k (mean_B grad_v F + (lam w_t, 0, 0) + (v_t - v0)/prox_gamma)
        v_{{t+1}}     = v' min(1, R1 / ||v'||)             (ball on all of v = (w, a, b))
        alpha_{{t+1}} = clip(alpha_t + eta_k mean_B dF/dalpha, -R2, R2)

    ``vbar_k`` and ``alphabar_k`` are the averages of the T_k iterates 1..T_k (the start
    excluded). Unlike PPD-SG, alpha is averaged and carried into the next stage (no reset
    to its maximiser), the steps decay polynomially and the projections are kept. The
    budget ends the run after ``max_epochs`` epochs (the last stage runs to its end, as
    in ``train_ppd_sg``).

    Choices of dualsolve (the paper leaves them open):

    - The L2 term ``(lam/2)||w||^2`` is added to the gradient of w; with lam = 0 this is
      exactly Algorithm 1.
    - ``R1 = R2 = None`` (the default) means no projection. The paper adds the balls
      only for its analysis ("as long as R1 and R2 are sufficiently large, they should
      not affect the solution") and reports no values.
    - Output: the last stage. Algorithm 1's output, the average of a stage tau drawn
      uniformly from 1..K, is the output of a run whose budget ends at stage tau (the
      later stages do not change it): draw the budget.
    - Mini-batches (``batch_size``; the paper's experiments use 128), ``p`` and the
      sampling (uniform with replacement) are as in ``train_ppd_sg``.

    Stopping (``stop_reason="converged"``): without R1, PGA solves the saddle problem
    above, i.e. J, and stops as ``train_ppd_sg`` does, when ``||grad J(wbar)||^2 / (2 lam)
    <= tol * (J + p(1-p) - bound)`` at a stage end (an R2 that clips alpha at the solution
    changes the
    problem and then keeps that bound from holding). With R1, it solves
    ``min_{{||v|| <= R1}} phi(v)``, ``phi(v) = max_{{|alpha| <= R2}} (1/n) sum_i F(v, alpha;
    z_i) + (lam/2)||w||^2``, a convex function of v = (w, a, b) computed exactly (alpha at
    its clipped maximiser), and stops when the Frank-Wolfe gap ``grad phi(vbar).(vbar - s)
    <= tol * (J + p(1-p) - gap)``, ``s = -R1 grad phi / ||grad phi||`` (an upper bound on
    ``phi(vbar) - min phi``). ``tol=0`` runs the whole budget.

    Every step costs O(nnz of the sampled rows): w is kept as ``sigma z + tau w0``,
    so the pull toward w0, the L2 shrink and the ball projection are O(1) updates of the
    scalars sigma and tau; ``||v||`` comes from running sums; the stage average is kept
    per feature with a prefix sum of sigma (double-double). sigma is folded into z
    (O(n_features)) when it falls below 1e-6, i.e. after about
    ``14 / (eta_k (lam + 1/prox_gamma))`` steps without projections; a stage end costs
    O(n_features + nnz(X)).

    Parameters
    ----------
    X, y, loss, lam, tol, max_epochs, seed, verbose, callback, warm_start, prox_gamma,
    batch_size, p, eval_set : as in ``train_ppd_sg``
    step : float > 0, optional
        Step size of stage 1 (stage k: step / k; the paper's eta_0); default as in
        ``train_ppd_sg``. Requires ``step (lam + 1/prox_gamma) < 1``.
    T0 : int >= 1, optional
        Steps of stage 1 (stage k: T0 k^2 steps of ``batch_size`` samples); default one
        epoch, ``ceil(n / batch_size)``.
    R1 : float > 0 or None
        Radius of the ball on ``v = (w, a, b)``; None: no projection.
    R2 : float > 0 or None
        Bound on ``|alpha|``; None: no projection.

    Returns
    -------
    Model
        ``coef`` = the last stage's wbar; ``params`` holds its ``saddle_a``, ``saddle_b``,
        ``saddle_alpha`` (stage averages), the settings (``step``, ``T0`` as used),
        ``n_stages``, ``etas`` and ``stage_lengths`` (T_k: steps, and iterates averaged),
        ``n_steps``, ``n_samples``, ``p_used``; ``history`` as in ``train_ppd_sg`` (gap:
        the certificate above).
    """
    return fit(PGA, locals())


train_pga.__doc__ = train_pga.__doc__.format(objective=_OBJECTIVE)


def train_solam(X, y, *, loss="squared", lam=None, tol=1e-3, max_epochs=100, seed=0,
                verbose=0, callback=None, warm_start=None, n_jobs=1, step=None, R=None,
                eval_set=None):
    """Stochastic online AUC maximisation, SOLAM (Ying, Wen & Lyu 2016; the "OAUC" baseline
    of Liu et al. 2020).

    Saddle problem, with F as in ``train_ppd_sg`` (the constraint sets are SOLAM's; the
    L2 term is dualsolve's, lam = 0 is the original)::

        min_{||w|| <= R, |a|, |b| <= kappa R}  max_{|alpha| <= 2 kappa R}
            (1/n) sum_i F(w, a, b, alpha; z_i) + (lam/2) ||w||^2,     kappa = max_i ||x_i||,

    i.e. ``min_{||w|| <= R} J(w)``, ``J(w) = p(1-p) (P_n(w) - 1) + (lam/2) ||w||^2`` (P_n
    the pairwise square loss, p = n+/n). Step t on a row drawn uniformly with replacement,
    from the start (zeros, or the warm start projected onto the ball)::

        p_t = ((t-1) p_{t-1} + I[y=+1]) / t,        gamma_t = step / sqrt(t)
        w <- Proj((1 - gamma_t lam) w - gamma_t grad_w F),  (a, b) <- clip((a, b) - gamma_t grad F)
        alpha <- clip(alpha + gamma_t dF/dalpha)

    and the output is the gamma_t-weighted average of the iterates (pre-update). O(nnz) per
    step: the L2 shrink and the ball projection rescale w = sigma z in O(1), and the
    weighted average is kept per feature with a prefix sum of gamma_t sigma_t.

    Stopping (``stop_reason="converged"``): after every epoch of n steps, J and its
    gradient are evaluated exactly at the average wbar (inside the ball), and the run stops
    when ``B = min(||grad J||^2 / (2 lam), grad J.wbar + R ||grad J||) <= tol * (J + p(1-p) -
    B)`` (a relative suboptimality of ``J + p(1-p)`` of at most tol): both
    bound ``J(wbar) - min_{||w|| <= R} J`` (lam-strong convexity, and the Frank-Wolfe gap
    over the ball). ``tol=0`` runs the whole budget.

    Parameters
    ----------
    X, y, loss, lam, tol, seed, verbose, callback, warm_start, eval_set : as in
        ``train_ppd_sg`` (epoch = n steps)
    max_epochs : int >= 0
        Budget in epochs of n steps; history has one row per epoch.
    step : float > 0, optional
        Step size of the first sample, step t is ``step / sqrt(t)`` (the paper's zeta; the
        reference code's grid: 1, 10, 19, ..., 100, for rows of norm about 1). Default
        ``16 / L'`` with the class-balanced mean curvature of F, ``L' = 2 ((1-p)
        mean_+(||x||^2 + 1) + p mean_-(||x||^2 + 1))`` (at most ``0.5 / lam``): the steps
        fall as 1/sqrt(t) and the projections keep the iterates bounded, so the first steps
        need no margin against the largest row. Requires ``step lam < 1``.
    R : float > 0, optional
        Radius of the ball on w. Default ``sqrt(2 p(1-p) / lam)``, which holds the
        minimiser of J (``J(w*) <= J(0) = 0`` gives ``(lam/2)||w*||^2 <= p(1-p)``), so the
        ball does not change the solution; no ball when lam = 0.

    Returns
    -------
    Model
        ``coef`` = the averaged w; ``params``: ``saddle_a``, ``saddle_b``,
        ``saddle_alpha`` (averaged), ``p_used`` (the final running estimate of p),
        ``kappa``, ``step`` and ``R`` as used, the settings; ``history`` as in
        ``train_ppd_sg`` (one row per epoch).
    """
    return fit(SOLAM, locals())


# ---------------------------------------------------------------------------------------
# the descriptions

_POSITIVE = [Interval(Real, 0, None, closed="neither")]
_STEP = [None] + _POSITIVE
_P = [None, Interval(Real, 0, 1, closed="neither"), Options("online")]
_EVAL_SET = [None, Anything("a pair (X_val, y_val)")]
_PPD_PARAMS = dict(step=_STEP, T0=[None, Interval(Integral, 2, None)], prox_gamma=_STEP,
                   decay=[Interval(Real, 1, None)], growth=[Interval(Real, 1, None)],
                   batch_size=[Interval(Integral, 1, None)], p=_P,
                   alpha_reset=[Options("full", "minibatch")],
                   alpha_batch=[Interval(Integral, 1, None)], eval_set=_EVAL_SET)
#: the stop on the nonnegative risk R = J + p(1-p) (J's lower bound is -p(1-p))
_RELATIVE = (certified("B", "(R(wbar) - B)", "p(1-p)", "R")
             + ", R = J + p(1-p) = p(1-p) P_n(w) + (lam/2)||w||^2 >= 0")
_J_CERTIFICATE = ("B = g.g / (2 lam), g = grad J(wbar), at a stage end (it bounds J(wbar) - "
                  "min J: J is lam-strongly convex): " + _RELATIVE)
_COMMON = dict(family="auc", losses=("squared",), label_task=lambda loss, args: "binary",
               history=HISTORY, lam_zero=True, liblinear_c=False, unevaluated_nan=True,
               watch_growth=True, objective_scale=lambda prob: _pq(prob.y))

PPD_SG = register(Solver(
    name="ppd_sg",
    summary="PPD-SG: stagewise proximal primal-dual SGD on the square-loss AUC surrogate",
    params=_PPD_PARAMS, certificate=_J_CERTIFICATE, engine=_ppd_engine("sg"),
    diverge_hint="decrease step (its default, None, scales with the rows)", **_COMMON))

PPD_ADAGRAD = register(Solver(
    name="ppd_adagrad",
    summary="PPD-AdaGrad: stagewise proximal primal-dual AdaGrad on the AUC surrogate",
    params=dict(_PPD_PARAMS, delta=_POSITIVE, decay=[None, Interval(Real, 1, None)]),
    certificate=_J_CERTIFICATE,
    engine=_ppd_engine("adagrad"),
    diverge_hint="decrease step (its default, None, scales with the rows) or raise delta",
    **_COMMON))

PGA = register(Solver(
    name="pga",
    summary="PGA: proximally guided stochastic primal-dual baseline (polynomial stages)",
    params=dict(step=_STEP, T0=[None, Interval(Integral, 1, None)], prox_gamma=_STEP,
                R1=_STEP, R2=_STEP, batch_size=[Interval(Integral, 1, None)], p=_P,
                eval_set=_EVAL_SET),
    certificate=(_J_CERTIFICATE + "; with R1, B is the Frank-Wolfe gap g.v + R1 sqrt(g.g) of "
                 "its ball-constrained problem, g = grad phi(vbar), v = (w, a, b)"),
    engine=_ppd_engine("pga"),
    diverge_hint="decrease step (its default, None, scales with the rows)", **_COMMON))

SOLAM = register(Solver(
    name="solam",
    summary="SOLAM: projected primal-dual SGD with steps step/sqrt(t), averaged (baseline)",
    params=dict(step=_STEP, R=_STEP, eval_set=_EVAL_SET),
    certificate=("B = min(g.g / (2 lam), g.wbar + R sqrt(g.g)), g = grad J(wbar), after an "
                 "epoch (it bounds J(wbar) - min J over the R-ball): " + _RELATIVE),
    engine=_solam_engine,
    diverge_hint="decrease step (its default, None, scales with the rows)", **_COMMON))
