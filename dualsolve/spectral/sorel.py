"""``train_sorel``: SOREL for spectral risk minimisation (Ge & Jiang 2024, "SOREL: a
stochastic algorithm for spectral risks minimization"), and ``spectral_objective``.

The description of each spectral solver for the driver (``dualsolve._driver``) lives next to
its ``train_*`` function; the shared pieces (the spectrum parameters, the starting point, the
default step, the certificate's words) are here. The loop is in ``_sorel.pyx``.
"""
import dataclasses
import functools
import inspect

import numpy as np

from .._core import losses as _losses
from .._driver import Result, Solver, certified, fit, register, threshold
from .._params import Anything, Boolean, Integral, Interval, Options, Real
from .._validation import check_csr, check_labels, check_regularization
from ..model import Model, warm_start_coef, warm_start_dual
from . import _sorel
from .spectra import resolve_spectrum

__all__ = ["train_sorel", "spectral_objective"]

LOSSES = ("squared", "logistic")
FORMS = {"gradient": 0, "prox": 1}          # _sorel.pxd SOREL_GRADIENT / SOREL_PROX
SAMPLING = {"uniform": 0, "permutation": 1}  # _sorel.pxd SOREL_UNIFORM / SOREL_PERMUTATION

#: the parameters every spectral trainer takes besides the common ones
SPECTRUM_PARAMS = dict(
    spectrum=[Anything("a spectrum name or an array of n weights")],
    spectrum_param=[None, Interval(Real, None, None)],
)

#: what stop_reason == "converged" certifies: F(w) - F* <= G(w, lambda) <= tol (F(w) - G)
#: <= tol F*, the spectral gap relative to its lower bound F(w) - G on F* (the baselines say
#: which lambda, and that they rarely get there)
GAP_RULE = "spectral duality gap " + certified("G(w, lambda)", "(F(w) - G)", "F(0)", "F")
CERTIFICATE = GAP_RULE + ", lambda SOREL's dual iterate"

# The parameters every spectral-risk trainer shares (train_sorel and the baselines).
COMMON_DOC = """    X : sparse matrix/array (n, n_features)
        CSR (float32/float64, int32/int64 indices) is used without a copy.
    y : array (n,)
        Reals for ``loss="squared"``; two distinct values for ``"logistic"`` (larger = +1).
    loss : {"squared", "logistic"}
        ``(x.w - y)^2 / 2`` (the paper's experiments) or ``log(1 + exp(-y x.w))``.
    spectrum : {"erm", "superquantile" (alias "cvar"), "extremile", "esrm"} or array (n,)
        A named spectrum with ``spectrum_param`` (defaults: the paper's alpha = 0.5, r = 2.5,
        rho = 2), or explicit weights for the losses sorted ascending: nonnegative,
        nondecreasing, summing to 1 (checked, never repaired).
    spectrum_param : float, optional
    lam : float > 0, optional
        L2 strength; default 1/n (the paper's). Give ``lam`` or ``C``, not both.
    C : float > 0, optional
        liblinear's cost, ``lam = 1 / (C n)`` (sum sigma = 1 makes the risk an average-type
        loss)."""

#: the certificate, the common tail of the parameters (tol ... warm_start)
TAIL_DOC = """    tol : float >= 0
        Stop when the certified duality gap ``G(w, lambda) <= tol * (F(w) - G)`` (so that
        ``(F(w) - F*) / F* <= tol``: ``F(w) - G`` is a lower bound on F*), or when G is at the
        rounding floor, 64 ulps of ``F(0) = R_sigma(loss(0; y))`` (in ``params["f0"]``).
        ``tol=0`` runs the whole budget.
    max_epochs : int >= 0
        Ending here warns (ConvergenceWarning) with the gap reached.
    seed : int or None
        Seed of the row sampling; the same seed gives the same iterates.
    verbose : int
        1 prints one line per epoch (primal F(w), dual, gap, ..., seconds).
    callback : callable, optional
        ``callback(info)`` after every epoch (epoch 0: the start) with a dict (epoch, time,
        primal, dual, gap, the history's other columns, coef: a read-only view of w);
        return True to stop (``stop_reason="callback"``). An exception it raises reaches the
        caller after the solve has stopped; Ctrl-C stops too (``KeyboardInterrupt`` with
        the partial model in ``.model``).
    warm_start : Model or array (n_features,), optional
        The starting w (default 0); a Model also gives its ``dual`` (a lambda, projected
        onto the permutahedron of this spectrum) as the starting lambda.
    n_jobs : int or None
        Threads (default 1, -1 every core; ``docs/api.md``, "Threads"): one-vs-rest
        classes run side by side, the same model as with ``n_jobs=1``, bit for bit.
        On one problem (X of 2^18 nonzeros or more): each epoch's losses at w and its
        ``X^T (lambda * phi'(X w))`` pass (the anchor of ``train_sorel`` and
        ``train_lsvrg``, the certificate's of ``train_prospect`` and
        ``train_spectral_sgd``) in ``n_jobs`` threads (blocks of rows); the steps serial,
        except ``train_sorel``'s and ``train_lsvrg``'s batches of 1,024 nonzeros or more
        (``batch_size`` times the mean row), which step in threads when a clock finds it
        faster (features caught up and stepped by ranges of features, margins by rows:
        the serial step's bits either way). The same ``n_jobs`` gives the same model bit
        for bit."""


# ---------------------------------------------------------------------------------------
# shared by the four spectral trainers


def spectrum_setup(o, n):
    """The spectrum of the run (checked: resolve_spectrum) and its name for params."""
    sigma = resolve_spectrum(o["spectrum"], n, o["spectrum_param"])
    name = o["spectrum"] if isinstance(o["spectrum"], str) else "custom"
    return sigma, name


def smoothness(p):
    """max_i L_i: the smoothness of the losses l_i(w) = phi(x_i.w) (||x_i||^2 for squared,
    ||x_i||^2 / 4 for logistic)."""
    sqn = p.X.sqnorm if p.X.sqnorm is not None else np.zeros(1)
    return float(np.max(sqn)) * (0.25 if p.loss == "logistic" else 1.0)


def spread_step(p, sigma, steps):
    """The step cap of the primal-only baselines: 1 / (steps L_c), L_c = mean_i ||x_i -
    xbar||^2 (a quarter of it for logistic), the rows' spread around their mean; inf for a
    constant spectrum or rows that do not spread.

    An epoch of ``steps`` steps moves w by about steps * step times a gradient of the
    vertex-weighted objective; between epochs the vertex weights sigma[rank(l(w))] jump,
    and the jump's effect on that gradient scales with the spread of the rows (a shift
    common to every row, e.g. the mean of unscaled features, is weighted alike whatever the
    ranks). With steps * step * L_c well above 1 an epoch overshoots past the kinks of F and
    the iterates oscillate (the paper's appendix C); at 1, LSVRG, Prospect and SGD settled
    on the ten raw and standardised (data set, spectrum) pairs we tried (docs/spectral.md)."""
    if float(sigma.max()) == float(sigma.min()):
        return float("inf")                 # no vertex jumps: plain SVRG / SAGA / SGD
    X = p.X
    mean = np.bincount(X.indices, weights=np.asarray(X.data, dtype=np.float64),
                       minlength=p.d) / p.n
    sqn = X.sqnorm if X.sqnorm is not None else np.zeros(1)
    Lc = max(float(np.mean(sqn)) - float(mean @ mean), 0.0)
    Lc *= 0.25 if p.loss == "logistic" else 1.0
    return 1.0 / (steps * Lc) if Lc > 0 else float("inf")


def loss_scale(p):
    """The largest loss at w = 0 (>= F(0)): the scale of the divergence watch."""
    l0 = _losses.value(p.loss, np.zeros(p.n), p.y, p.loss_param)
    return float(np.max(l0))


def start(p):
    """(w_0, lambda_0, lambda given): w_0 from the warm start (zeros by default); lambda_0
    from a warm-start Model's ``dual`` when it has one of length n."""
    w = warm_start_coef(p.warm_start, p.d)
    dual = np.zeros(p.n)
    given = False
    if isinstance(p.warm_start, Model) and p.warm_start.dual is not None \
            and np.shape(p.warm_start.dual) == (p.n,):
        dual = warm_start_dual(p.warm_start, p.n)
        given = True
    return w, dual, given


def batches(o, n, name):
    """(batch_size, sampling, steps per epoch) of SOREL's loop (also LSVRG's)."""
    b = o["batch_size"]
    if b > n:
        raise ValueError(f"batch_size must be <= n = {n} (the number of rows); got {b}")
    sampling = o["sampling"]
    if sampling is None:
        sampling = "uniform" if b == 1 else "permutation"
    if sampling == "uniform" and b > 1:
        raise ValueError(f"{name}: sampling='uniform' draws one row per step; use "
                         "sampling='permutation' with batch_size > 1")
    steps_per_epoch = o["steps_per_epoch"]
    if steps_per_epoch is None:
        steps_per_epoch = n if sampling == "uniform" else n // b
    return b, sampling, steps_per_epoch


def run_traced(train, X, y, *, trace=None, order_trace=None, **kw):
    """``train(X, y, **kw)`` (a spectral trainer or its name) with the engine's test hooks:
    ``trace`` (an intp array receiving the sampled rows in order) and, for Prospect,
    ``order_trace`` (an intp array (steps, n) receiving the maintained sorted order after
    every step). For tests."""
    name = train if isinstance(train, str) else train.__name__
    desc, fn = DESCRIPTIONS[name]
    private = dict(trace=trace)
    if order_trace is not None:
        private["order_trace"] = order_trace
    bound = inspect.signature(fn).bind(X, y, **kw)
    bound.apply_defaults()
    return fit(dataclasses.replace(desc, engine=functools.partial(desc.engine, **private)),
               dict(bound.arguments))


#: train_* name -> (its description, the function) (filled by the modules of the family)
DESCRIPTIONS = {}


def describe(train, certificate=CERTIFICATE, **kw):
    """Register the description of a spectral trainer (common fields filled in)."""
    desc = register(Solver(name=train.__name__[len("train_"):], family="spectral",
                           losses=LOSSES, certificate=certificate, watch_growth=True,
                           objective_scale=loss_scale, **kw))
    DESCRIPTIONS[train.__name__] = (desc, train)
    return desc


# ---------------------------------------------------------------------------------------
# the objective


def spectral_objective(X, y, w, *, loss="squared", spectrum, spectrum_param=None, lam=None,
                       C=None):
    """F(w) = sum_i sigma_i l_[i](w) + (lam/2)||w||^2 (the objective of the spectral
    trainers; losses sorted ascending, compensated sums)."""
    Xc = check_csr(X)
    n, d = Xc.shape
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}: loss must be one of {list(LOSSES)}")
    yv, _ = check_labels(y, n, "regression" if loss == "squared" else "binary")
    param = _losses.check_loss(loss, None)[1]
    sigma = resolve_spectrum(spectrum, n, spectrum_param)
    lam = check_regularization(lam, C, n, allow_zero=True)
    w = np.array(w, dtype=np.float64, copy=True).ravel()
    if w.shape[0] != d:
        raise ValueError(f"w has length {w.shape[0]} but X has {d} columns")
    return _sorel.objective(Xc.data, Xc.indices, Xc.indptr, d, yv, loss, sigma, lam, w, param)


# ---------------------------------------------------------------------------------------
# SOREL


def train_sorel(X, y, *, loss="squared", lam=None, C=None, tol=1e-8, max_epochs=1000, seed=0,
                verbose=0, callback=None, warm_start=None, n_jobs=1, spectrum="superquantile",
                spectrum_param=None, step=None, dual_step_scale=0.1, prox_scale=20.0,
                dual_step_max=None, dual_step_guard=True, batch_size=1, sampling=None,
                steps_per_epoch=None, form="gradient", dual_prox=True):
    """Train a linear model by SOREL (Ge & Jiang 2024, "SOREL: a stochastic algorithm for
    spectral risks minimization", Algorithm 1 in the practical form of their section 5 and
    appendix B), serially or with mini-batches (their Figure 3).

    Solves, with n rows ``x_i`` of X, losses ``l_i(w) = phi(x_i.w; y_i)`` sorted ascending
    ``l_[1] <= ... <= l_[n]`` and a spectrum ``sigma`` (nondecreasing, sum 1)::

        min_w  F(w) = sum_i sigma_i l_[i](w) + (lam/2) ||w||^2

    through the saddle point ``min_w max_{lambda in Pi_sigma} lambda^T l(w) + (lam/2)||w||^2``
    (Pi_sigma: the permutahedron of sigma). No intercept. Epoch k = 0, 1, ... (``theta =
    k/(k+1)``, ``eta_k = min(c (k+1)/n, dual_step_max)`` with c = ``dual_step_scale`` unless
    the guard halved it, ``tau_k = prox_scale n/(k+1)``):

    1. losses at w_k (one pass over X), then the dual step with momentum on the losses
       ``lambda <- Proj_{Pi_sigma}(lambda + eta_k ((1+theta) l(w_k) - theta l(w_{k-1})))``
       (sort + pool adjacent violators, warm-started from the previous order);
    2. the anchor ``gbar = X^T (lambda * phi'(X w_k))`` (a second pass), which also gives
       the certificate of w_k (below);
    3. ``steps_per_epoch`` variance-reduced steps on the subproblem
       ``lambda^T l(w) + (lam/2)||w||^2 + ||w - w_k||^2/(2 tau_k)``: a batch S of b rows,
       ``c_i = (n/b) lambda_i (phi'(x_i.w) - phi'(x_i.w_k))`` (all at the same w) and
       ``form="gradient"``: ``w <- w - step (sum_S c_i x_i + gbar + lam w + (w - w_k)/tau_k)``;
       ``form="prox"``: ``w <- (w - step (sum_S c_i x_i + gbar) + (step/tau_k) w_k) /
       (1 + step lam + step/tau_k)``. The dense part is applied lazily, so a step costs
       O(nnz of the rows).

    lambda starts at the vertex ``sigma[rank(l(w_0))]``. ``sigma = 1/n`` keeps lambda at
    1/n and the method is prox-SVRG for ridge.

    Certificate: for any lambda in Pi_sigma, ``F(w) - F* <= G(w, lambda) = [R_sigma(l(w)) -
    lambda^T l(w)] + ||X^T(lambda * phi'(Xw)) + lam w||^2 / (2 lam)`` (lam-strong convexity
    of the inner problem), taken at w_k with lambda_{k+1}, whose gradient term is the anchor's
    (so it costs O(n + n_features) per epoch; at epoch 0 of a warm start also with the given
    lambda). ``history["dual"]`` is ``F(w) - G``, a lower bound on the optimum; the run
    converges when ``G <= tol * (F(w) - G)`` (or G at the rounding floor of F(0)).

    Parameters
    ----------
{common}
{tail}
    step : float > 0, optional
        Primal step. Default ``1 / (2 n max(sigma) max_i L_i)`` with ``L_i = ||x_i||^2``
        (squared) or ``||x_i||^2/4`` (logistic), capped at ``0.5 / (lam + 1/tau_0)`` in the
        gradient form: ``n max(sigma) max_i L_i`` bounds the smoothness of the sampled
        components ``n lambda_i l_i``, and half its inverse is twice the prox-SVRG bound
        (a quarter): on the paper's five regression sets, raw and standardised, twice that
        bound converged as well and up to 20 times faster; four times it diverged on three
        of the ten raw pairs tried (docs/spectral.md). The paper tunes the step in
        {1e-4, ..., 3e-1} on standardised data.
    dual_step_scale : float >= 0
        c of the dual step ``eta_k = c (k+1)/n`` (the paper's C, tuned in {0.01, ..., 4}).
        Too large and lambda jumps between vertices (w oscillates); the guard then halves
        it.
    prox_scale : float > 0
        ``tau_k = prox_scale n / (k+1)`` (the paper fixes 20).
    dual_step_max : float > 0, optional
        A fixed cap on eta_k (none by default, as in the paper; the authors' mini-batch code
        freezes eta after 400 epochs).
    dual_step_guard : bool, default True
        Stop eta_k from growing past the dual step's stability limit. Without it, long runs
        with the paper's schedule leave the optimum again: eta_k = c (k+1)/n grows without
        bound, and near the optimum the dual update is an extrapolated gradient ascent on
        the dual restricted to the optimal face of Pi_sigma (the optimum of a spectral risk
        usually sits where losses of distinct rows tie), which diverges once eta_k exceeds
        about 2 / (3 L_face), L_face the dual's curvature on that face. Observed with the
        paper's tuned step sizes after 300-1500 epochs on standardised yacht (all three
        spectra), energy (extremile) and concrete (ESRM), each after reaching 1e-12 or
        better (see docs/spectral.md). The guard watches the dual steps
        s_k = lambda_{k+1} - lambda_k: when three successive pairs point in opposite
        directions (cosine < -1/2) and the alternation is not dying out, c is halved for the
        rest of the run (eta halves, then grows at half the rate; repeated when it happens
        again). A converging run has aligned dual steps, so the guard leaves it alone; early
        on it acts when c is too large (lambda jumping between vertices). ``False`` is the
        paper's method. ``history["eta"]`` records the eta_k of every epoch.
    batch_size : int in [1, n]
        b rows per step (the paper's mini-batch runs use 64).
    sampling : {"uniform", "permutation"}, optional
        "uniform": rows drawn with replacement (b = 1 only); "permutation": consecutive
        batches of a fresh random permutation per epoch (reshuffled if an epoch needs more
        than one pass). Default: "uniform" for b = 1, else "permutation".
    steps_per_epoch : int >= 1, optional
        Steps per epoch (per dual update); default n ("uniform") or floor(n/b)
        ("permutation").
    form : {"gradient", "prox"}
        The gradient step of the paper's experiments or the proximal step of Algorithm 1.
        "gradient" needs ``step (lam + 1/tau_k) < 1``: a step that fails it at epoch 0 is an
        error, and a later epoch where it fails (tau_k shrinks) takes the proximal step.
    dual_prox : bool
        False runs the paper's counterexample method (appendix C, Algorithm 2): lambda
        jumps to the vertex ``sigma[rank(l(w_k))]`` (eta = infinity) and there is no primal
        proximal term (tau = infinity); it need not converge. For experiments only.

    Returns
    -------
    Model
        ``coef`` = w, ``dual`` = the lambda of the last certificate (in Pi_sigma),
        ``history`` (one row per epoch, epoch 0 the start: epoch, time, primal = F(w_k),
        dual = F(w_k) - G, gap = G, passes = per-row gradients / n (2 per epoch with the
        defaults), eta = eta_k), ``stop_reason``, ``n_epochs``, ``params`` (settings, the
        step used, ``f0`` = F(0)); ``extra["sigma"]`` is the spectrum used.
    """
    return fit(SOREL, locals())


def _sorel_engine(p, o, mon, trace=None):
    sigma, name = spectrum_setup(o, p.n)
    b, sampling, T = batches(o, p.n, "train_sorel")
    step = sorel_step(p, o, sigma, 2.0, o["dual_prox"], "train_sorel")
    w, dual, given = start(p)
    status, n_epochs, primal, dual_value, gap, f0 = _sorel.solve(
        p.X.data, p.X.indices, p.X.indptr, p.d, p.y, p.loss, p.loss_param, sigma, p.lam, w,
        dual, given, step, o["dual_step_scale"], o["prox_scale"],
        o["dual_step_max"] or 0.0, FORMS[o["form"]], SAMPLING[sampling], b, T,
        p.max_epochs, p.tol, p.seed, not o["dual_prox"], o["dual_step_guard"], mon,
        trace=trace, n_threads=p.n_jobs)
    return Result(status, n_epochs, coef=w, dual=dual, measure=gap,
                  threshold=threshold(primal - gap, p.tol, f0),
                  info=dict(step=step, f0=f0, spectrum=name, sampling=sampling,
                            steps_per_epoch=T),
                  extra=dict(sigma=sigma))


def sorel_step(p, o, sigma, factor, prox_term, name, cap=float("inf")):
    """The primal step of SOREL's loop (also LSVRG's): the given one, checked against the
    gradient form's condition at epoch 0, or ``min(1 / (factor n max(sigma) max_i L_i),
    cap)``."""
    inv_tau0 = 1.0 / (o["prox_scale"] * p.n) if prox_term else 0.0
    step = o["step"]
    if step is None:
        L = smoothness(p)
        step = 1.0 / (factor * p.n * float(sigma.max()) * L) if L > 0 else 1.0
        step = min(step, cap)
        if o["form"] == "gradient":
            step = min(step, 0.5 / (p.lam + inv_tau0))
    elif o["form"] == "gradient" and not step * (p.lam + inv_tau0) < 1.0:
        what = "lam + 1/tau_0" if prox_term else "lam"
        raise ValueError(f"{name}: step = {step!r} is too large for form='gradient': it needs "
                         f"step ({what}) < 1, i.e. step < {1.0 / (p.lam + inv_tau0):.6g}; "
                         "use form='prox'")
    return float(step)


STEP_PARAMS = dict(
    step=[None, Interval(Real, 0, None, closed="neither")],
    batch_size=[Interval(Integral, 1, None)],
    sampling=[None, Options(*SAMPLING)],
    steps_per_epoch=[None, Interval(Integral, 1, None)],
    form=[Options(*FORMS)],
)

SOREL = describe(
    train_sorel,
    summary="SOREL: stochastic primal-dual method for spectral risks (Ge & Jiang 2024)",
    params=dict(SPECTRUM_PARAMS, **STEP_PARAMS,
                dual_step_scale=[Interval(Real, 0, None, closed="left")],
                prox_scale=[Interval(Real, 0, None, closed="neither")],
                dual_step_max=[None, Interval(Real, 0, None, closed="neither")],
                dual_step_guard=[Boolean()],
                dual_prox=[Boolean()]),
    history=("passes", "eta"),
    diverge_hint="decrease step (or dual_step_scale)",
    engine=_sorel_engine)


if train_sorel.__doc__:                     # None under python -OO
    train_sorel.__doc__ = (train_sorel.__doc__.replace("{common}", COMMON_DOC)
                           .replace("{tail}", TAIL_DOC))
