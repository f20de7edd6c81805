"""The baselines of the SOREL paper (Ge & Jiang 2024, section 5): ``train_lsvrg``,
``train_prospect`` and ``train_spectral_sgd``.

The loops are Cython (LSVRG runs on ``_sorel.sorel_run``, of which it is the no-dual-prox
special case; Prospect and SGD are in ``_baselines.pyx``, C API in ``_baselines.pxd``).

All three minimise, with losses sorted ascending ``l_[1] <= ... <= l_[n]`` and a spectrum
sigma (nonnegative, nondecreasing, sum 1)::

    F(w) = sum_i sigma_i l_[i](w) + (lam/2) ||w||^2

without smoothing (nu = 0, the SOREL paper's setting for every baseline).
"""
import textwrap

import numpy as np

from .._driver import Result, fit, threshold
from .._params import Integral, Interval
from . import _baselines, _sorel
from .sorel import (COMMON_DOC, FORMS, GAP_RULE, SAMPLING, SPECTRUM_PARAMS, STEP_PARAMS, TAIL_DOC,
                    batches, describe, smoothness, sorel_step, spectrum_setup, spread_step,
                    start)
from .spectra import spectrum as named_spectrum

__all__ = ["train_lsvrg", "train_prospect", "train_spectral_sgd"]

_OBJECTIVE_DOC = """
    Solves, with n rows ``x_i`` of X, losses ``l_i(w) = phi(x_i.w; y_i)`` sorted ascending
    ``l_[1] <= ... <= l_[n]`` and a spectrum ``sigma`` (nondecreasing, sum 1)::

        min_w  F(w) = sum_i sigma_i l_[i](w) + (lam/2) ||w||^2

    (the objective of :func:`train_sorel`; no intercept, no smoothing of the risk: nu = 0)."""

_CERTIFICATE_DOC = """
    Certificate (as :func:`train_sorel`'s): for any lambda in the permutahedron of sigma,
    ``F(w) - F* <= G(w, lambda) = [R_sigma(l(w)) - lambda^T l(w)] +
    ||X^T(lambda * phi'(Xw)) + lam w||^2 / (2 lam)``. This primal method has no lambda of
    its own; {which}. The gradient term is divided by lam (1/n by default), so the gap
    stays far above the suboptimality unless the iterates settle: with ties among the
    losses at the optimum (the superquantile's flat top), where the method itself stalls,
    or on ill-conditioned (e.g. unscaled) data, the gap does not reach small tolerances and
    the run ends at ``max_epochs`` with a warning giving the gap reached (docs/spectral.md
    has measurements)."""

# ---------------------------------------------------------------------------------------
# LSVRG


def train_lsvrg(X, y, *, loss="squared", lam=None, C=None, tol=1e-8, max_epochs=1000, seed=0,
                verbose=0, callback=None, warm_start=None, n_jobs=1, spectrum="superquantile",
                spectrum_param=None, step=None, batch_size=1, sampling=None, steps_per_epoch=None,
                form="gradient"):
    """Train a linear model by LSVRG for spectral risks (Mehta et al., AISTATS 2023, with
    nu = 0), the SOREL paper's baseline.
    {objective}

    Epoch k (``steps_per_epoch`` steps, n by default):

    1. checkpoint: the losses at w_k (one pass over X), lambda = ``sigma[rank(l(w_k))]``
       (the vertex of the permutahedron; ties by the previous order), the anchor
       ``gbar = X^T (lambda * phi'(X w_k))`` (a second pass) and the stored scalars
       ``phi'(x_i.w_k)``;
    2. ``steps_per_epoch`` steps on batches S of b rows (b = 1: i uniform):
       ``c_i = (n/b) lambda_i (phi'(x_i.w) - phi'(x_i.w_k))`` and
       ``form="gradient"``: ``w <- w - step (sum_S c_i x_i + gbar + lam w)``;
       ``form="prox"``: ``w <- (w - step (sum_S c_i x_i + gbar)) / (1 + step lam)``.
       The dense part is applied lazily: a step costs O(nnz of the rows).

    With nu = 0 this is SOREL with eta = tau = infinity and theta = 0 (its ``dual_prox=False``
    ablation), and runs on the same Cython loop. Lambda jumps between vertices, so the
    method need not converge to the minimiser when losses tie at the optimum (the SOREL
    paper observes it stalling, e.g. for CVaR).
    {certificate}

    Parameters
    ----------
{common}
{tail}
    step : float > 0, optional
        Step size. Default ``min(1 / (16 n max(sigma) max_i L_i), 1 / (T L_c))`` (T =
        ``steps_per_epoch``) with ``L_i = ||x_i||^2`` (squared) or ``||x_i||^2/4``
        (logistic), ``L_c`` the mean of ``||x_i - xbar||^2`` (a quarter for logistic; the
        cap is off for a constant spectrum), and at most ``0.5/lam`` in the gradient form.
        ``n max(sigma) max_i L_i`` bounds the smoothness of the sampled components
        ``n lambda_i l_i`` (the SVRG bound would take 1/4 of its inverse; 1/16 did better on
        the paper's standardised sets). The second term keeps an epoch from overshooting
        the kinks of F when the vertex weights jump (the oscillation of the paper's appendix
        C): without it LSVRG ends at twice the optimum on kin8nm, raw or standardised
        (docs/spectral.md). The paper tunes the step over {1e-4, 3e-4, ..., 1e-1, 3e-1}
        (appendix B) on standardised data; its picks were 1e-3 (CVaR) and 3e-3 (extremile,
        ESRM) on yacht, 1e-4 on kin8nm.
    batch_size : int in [1, n]
        b rows per step (the paper's mini-batch runs use 64).
    sampling : {"uniform", "permutation"}, optional
        "uniform" (b = 1 only): rows with replacement; "permutation": consecutive batches
        of a fresh permutation per epoch. Default: "uniform" for b = 1, else "permutation".
    steps_per_epoch : int >= 1, optional
        Steps between checkpoints; default n ("uniform", the paper's epoch length) or
        floor(n/b) ("permutation").
    form : {"gradient", "prox"}
        The reference code's gradient step (needs ``step lam < 1``) or the proximal step
        of the ridge term.

    Returns
    -------
    Model
        ``coef`` = w, ``dual`` = the lambda of the last certificate, ``history`` (one row
        per epoch, epoch 0 the start: epoch, time, primal = F(w_k), dual = F(w_k) - G,
        gap = G, passes), ``stop_reason``, ``params`` (settings, the step used, ``f0``);
        ``extra["sigma"]`` is the spectrum used. ``passes`` counts per-sample gradient
        evaluations / n: each epoch is a full gradient at the checkpoint (n) plus
        ``steps_per_epoch`` b stochastic ones, i.e. 2 per epoch by default. ``time`` includes the
        checkpoint pass, which also gives F(w_k).
    """
    return fit(LSVRG, locals())


def _lsvrg_engine(p, o, mon, trace=None):
    sigma, name = spectrum_setup(o, p.n)
    b, sampling, T = batches(o, p.n, "train_lsvrg")
    step = sorel_step(p, o, sigma, 16.0, False, "train_lsvrg",
                      cap=spread_step(p, sigma, T))
    w, dual, given = start(p)
    # LSVRG (nu = 0) is SOREL's loop with the vertex lambda and no proximal terms
    status, n_epochs, primal, dual_value, gap, f0 = _sorel.solve(
        p.X.data, p.X.indices, p.X.indptr, p.d, p.y, p.loss, p.loss_param, sigma, p.lam, w,
        dual, given, step, 0.0, 1.0, 0.0, FORMS[o["form"]], SAMPLING[sampling], b, T,
        p.max_epochs, p.tol, p.seed, True, False, mon, trace=trace, n_threads=p.n_jobs)
    return Result(status, n_epochs, coef=w, dual=dual, measure=gap,
                  threshold=threshold(primal - gap, p.tol, f0),
                  info=dict(step=step, f0=f0, spectrum=name, sampling=sampling,
                            steps_per_epoch=T),
                  extra=dict(sigma=sigma))


LSVRG = describe(
    train_lsvrg,
    certificate=(GAP_RULE + ", lambda the checkpoint's "
                 "vertex (rarely reached when losses tie at the optimum)"),
    summary="LSVRG for spectral risks without smoothing (Mehta et al. 2023)",
    params=dict(SPECTRUM_PARAMS, **STEP_PARAMS),
    history=("passes",),
    diverge_hint="decrease step",
    engine=_lsvrg_engine)


# ---------------------------------------------------------------------------------------
# Prospect


def train_prospect(X, y, *, loss="squared", lam=None, C=None, tol=1e-8, max_epochs=1000,
                   seed=0, verbose=0, callback=None, warm_start=None, n_jobs=1,
                   spectrum="superquantile",
                   spectrum_param=None, step=None):
    """Train a linear model by Prospect (Mehta et al., ICLR 2024, with nu = 0), the SOREL
    paper's baseline.
    {objective}

    SAGA-like in w with a table of losses for lambda. Start: the table of losses
    ``l_i(w_0)``, derivatives ``g_i = phi'(x_i.w_0)``, ``rho = lambda = sigma[rank(l)]`` and
    ``S = sum_i rho_i g_i x_i``. Step (i uniform; lambda_i = sigma[rank of i in the table])::

        m = x_i.w;  g = phi'(m);  v = (n lambda_i g - n rho_i g_i) x_i + S
        w <- (w - step v) / (1 + step lam)                       (prox of the ridge term)
        S += (lambda_i g - rho_i g_i) x_i;  rho_i = lambda_i;  g_i = g
        table: l_i <- phi(m), and i moves to its new rank

    The sorted order of the table is maintained, not recomputed: the changed entry moves to
    its new place (galloping search, then a shift of the entries it passes), so a step
    costs O(nnz(x_i) + displacement) rather than the reference code's O(n log n) re-sort.
    Ties are broken by sample index, so the order always equals a stable argsort of the
    table. The dense part (ridge prox, -step S) is applied lazily. An epoch is n steps,
    followed by the check (one pass over X: F(w) and the certificate).
    {certificate}

    Parameters
    ----------
{common}
{tail}
    step : float > 0, optional
        Step size. Default ``min(1 / (8 n max(sigma) max_i L_i), 1 / (n L_c))``
        (``L_i = ||x_i||^2``, or a quarter of it for logistic; ``L_c`` the mean of
        ``||x_i - xbar||^2``, a quarter for logistic, the cap off for a constant spectrum):
        half the SVRG/SAGA-type bound for the sampled components ``n lambda_i l_i``, and the
        cap of :func:`train_lsvrg` that keeps an epoch from overshooting when the vertex
        weights jump. On the raw regression sets the half bound lowers the noise floor
        (power-plant, superquantile: 4e-4 instead of 1.6e-3 after 1000 epochs); the cap
        takes kin8nm from 6e-2 to 2e-7 (docs/spectral.md). The paper tunes the step over
        {1e-4, 3e-4, ..., 1e-1, 3e-1} (appendix B) on standardised data; its picks were
        3e-3 (CVaR) and 1e-2 (extremile, ESRM) on yacht, 1e-4 on kin8nm.

    Returns
    -------
    Model
        ``coef`` = w, ``dual`` = the lambda of the last certificate, ``history`` (one row
        per epoch, epoch 0 the start: epoch, time, primal = F(w_k), dual, gap (NaN in the
        epochs without a check), passes), ``stop_reason``, ``params`` (settings, the step
        used, ``f0``, ``mean_displacement``: the average number of places an entry moved per
        step); ``extra["sigma"]`` is the spectrum used. ``passes`` counts gradient
        evaluations / n: the table build (1) plus 1 per epoch, so 0 at epoch 0 and k + 1 at
        epoch k >= 1. ``time`` includes the check after each epoch.
    """
    return fit(PROSPECT, locals())


def _prospect_engine(p, o, mon, trace=None, order_trace=None):
    sigma, name = spectrum_setup(o, p.n)
    step = o["step"]
    if step is None:
        L = smoothness(p)
        step = 1.0 / (8.0 * p.n * float(sigma.max()) * L) if L > 0 else 1.0
        step = min(step, spread_step(p, sigma, p.n))
    w, dual, given = start(p)
    status, n_epochs, primal, dual_value, gap, f0, shifts = _baselines.solve_prospect(
        p.X.data, p.X.indices, p.X.indptr, p.d, p.y, p.loss, p.loss_param, sigma, p.lam, w,
        dual, given, float(step), p.max_epochs, p.tol, p.seed, mon, trace=trace,
        order_trace=order_trace, n_threads=p.n_jobs)
    return Result(status, n_epochs, coef=w, dual=dual, measure=gap,
                  threshold=threshold(primal - gap, p.tol, f0),
                  info=dict(step=float(step), f0=f0, spectrum=name,
                            mean_displacement=shifts / max(1, n_epochs * p.n)),
                  extra=dict(sigma=sigma))


PROSPECT = describe(
    train_prospect,
    certificate=(GAP_RULE + ", lambda the average of the "
                 "vertices (rarely reached when losses tie at the optimum)"),
    summary="Prospect for spectral risks without smoothing (Mehta et al. 2024)",
    params=dict(SPECTRUM_PARAMS, step=STEP_PARAMS["step"]),
    history=("passes",),
    diverge_hint="decrease step",
    engine=_prospect_engine)


# ---------------------------------------------------------------------------------------
# mini-batch SGD


def _batch_spectrum(spectrum, spectrum_param, sigma, b):
    """The spectrum over one batch of b losses: the same family and parameter at size b;
    for explicit weights, the same risk profile, i.e. the increments of the
    piecewise-linear cumulative sum of sigma at the points k/b."""
    n = sigma.shape[0]
    if isinstance(spectrum, str):
        return named_spectrum(spectrum, b, spectrum_param)
    cum = np.concatenate(([0.0], np.cumsum(sigma)))
    cum[-1] = 1.0
    c = np.interp(np.arange(b + 1) / b, np.arange(n + 1) / n, cum)
    s = np.maximum(np.diff(c), 0.0)
    s = np.maximum.accumulate(s)           # exact monotone already; guards rounding
    return s / s.sum()


def train_spectral_sgd(X, y, *, loss="squared", lam=None, C=None, tol=1e-8, max_epochs=1000,
                       seed=0, verbose=0, callback=None, warm_start=None, n_jobs=1,
                       spectrum="superquantile", spectrum_param=None, step=None,
                       batch_size=None):
    """Train a linear model by mini-batch stochastic subgradient descent on the spectral
    risk ("SGD" of the SOREL paper's section 5; Levy et al. 2020, Mehta et al. 2023).
    {objective}

    Each epoch draws a fresh random permutation and takes floor(n/b) steps on its
    consecutive batches B of b rows (without replacement)::

        m_B = X_B w;  lambda_B = sigma_b[rank(phi(m_B))]
        w <- (1 - step lam) w - step X_B^T (lambda_B * phi'(m_B))

    where sigma_b is the b-point spectrum of the same family (e.g. superquantile 0.5 over
    64 losses: the top 32 get 1/32; for explicit weights, the same risk profile as sigma:
    the increments of the piecewise-linear cumulative sum of sigma at the points k/b).
    The estimate is biased for any non-uniform sigma, so with a constant step the method
    stalls at a bias floor above the optimum (the paper: "SGD fails to converge"). b = n is
    the full-batch subgradient method. w is kept as scale * v, so a step costs
    O(nnz of the batch + b log b). Each epoch is followed by the check (one pass over X:
    F(w) and the certificate).
    {certificate}

    Parameters
    ----------
{common}
{tail}
    step : float > 0, optional
        Constant step size. Default ``min(1 / max_i L_i, 1 / (floor(n/b) L_c), 0.5/lam)``
        (``L_i = ||x_i||^2``, or a quarter of it for logistic: the batch objective is a
        convex combination of losses, so it is max_i L_i-smooth for fixed ranks; ``L_c``
        the rows' spread, the cap of :func:`train_lsvrg`, which lowers the floor on kin8nm
        from 1e-2 to 1e-5). The paper tunes it in {1e-4, ..., 3e-1} (appendix B) on
        standardised data; its pick for yacht was 1e-1.
    batch_size : int in [1, n], optional
        b (the paper: 64); default min(64, n).

    Returns
    -------
    Model
        ``coef`` = w, ``dual`` = the lambda of the last certificate, ``history`` (one row
        per epoch, epoch 0 the start: epoch, time, primal = F(w_k), dual, gap (NaN in the
        epochs without a check), passes), ``stop_reason``, ``params`` (settings, the step
        used, ``f0``); ``extra["sigma"]``, ``extra["sigma_batch"]``: the spectra used.
        ``passes`` = k floor(n/b) b / n.
    """
    return fit(SPECTRAL_SGD, locals())


def _sgd_engine(p, o, mon, trace=None):
    sigma, name = spectrum_setup(o, p.n)
    b = o["batch_size"]
    if b is None:
        b = min(64, p.n)
    if b > p.n:
        raise ValueError(f"batch_size must be <= n = {p.n} (the number of rows); got {b}")
    step = o["step"]
    if step is None:
        L = smoothness(p)
        step = 1.0 / L if L > 0 else 1.0
        step = min(step, spread_step(p, sigma, p.n // b), 0.5 / p.lam)
    elif not step * p.lam < 1.0:
        raise ValueError(f"train_spectral_sgd: step = {step!r} is too large: it needs "
                         f"step lam < 1, i.e. step < {1.0 / p.lam:.6g}")
    sigma_b = _batch_spectrum(o["spectrum"], o["spectrum_param"], sigma, b)
    w, dual, given = start(p)
    status, n_epochs, primal, dual_value, gap, f0 = _baselines.solve_sgd(
        p.X.data, p.X.indices, p.X.indptr, p.d, p.y, p.loss, p.loss_param, sigma, sigma_b,
        p.lam, w, dual, given, float(step), p.max_epochs, p.tol, p.seed, mon, trace=trace,
        n_threads=p.n_jobs)
    return Result(status, n_epochs, coef=w, dual=dual, measure=gap,
                  threshold=threshold(primal - gap, p.tol, f0),
                  info=dict(step=float(step), f0=f0, spectrum=name, batch_size=b),
                  extra=dict(sigma=sigma, sigma_batch=sigma_b))


SPECTRAL_SGD = describe(
    train_spectral_sgd,
    certificate=(GAP_RULE + ", lambda the average of the "
                 "vertices (rarely reached: SGD stalls at a bias floor)"),
    summary="mini-batch stochastic subgradient descent on the spectral risk",
    params=dict(SPECTRUM_PARAMS, step=STEP_PARAMS["step"],
                batch_size=[None, Interval(Integral, 1, None)]),
    history=("passes",),
    diverge_hint="decrease step",
    engine=_sgd_engine)


_VERTEX = ("the certificate takes the checkpoint's vertex ``sigma[rank(l(w_k))]``, whose "
           "gradient term is the anchor: it costs O(n + n_features) per epoch")
_AVERAGE = ("the certificate takes the running average of the vertices ``sigma[rank(l(w_j))]`` "
            "of its iterates after each epoch (weights j + 1). It costs a pass over X, so "
            "it is evaluated every 8 epochs, at the last one and whenever it can succeed (its "
            "first term, O(n), is at most the target); ``history`` has NaN dual and gap in "
            "the other epochs")
for _f, _which in ((train_lsvrg, _VERTEX), (train_prospect, _AVERAGE),
                   (train_spectral_sgd, _AVERAGE)):
    if _f.__doc__:                          # None under python -OO
        _cert = "\n" + textwrap.fill(" ".join(_CERTIFICATE_DOC.replace("{which}", _which).split()),
                                     width=92, initial_indent="    ", subsequent_indent="    ")
        _f.__doc__ = (_f.__doc__.replace("{objective}", _OBJECTIVE_DOC)
                      .replace("{certificate}", _cert)
                      .replace("{common}", COMMON_DOC).replace("{tail}", TAIL_DOC))
del _f, _which, _cert
