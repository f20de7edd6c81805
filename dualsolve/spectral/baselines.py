"""The baselines of the SOREL paper (spec seed4 section 2.6): ``train_lsvrg``,
``train_prospect`` and ``train_spectral_sgd``.

Validation, defaults and the Model live here; the loops are Cython (LSVRG runs on
``_sorel.sorel_run``, of which it is the no-dual-prox special case; Prospect and SGD are in
``_baselines.pyx``, C API in ``_baselines.pxd``).

All three minimise, with losses sorted ascending ``l_[1] <= ... <= l_[n]`` and a spectrum
sigma (nonnegative, nondecreasing, sum 1)::

    F(w) = sum_i sigma_i l_[i](w) + (mu/2) ||w||^2

without smoothing (nu = 0, the SOREL paper's setting for every baseline).
"""
import warnings

import numpy as np

from .._validation import (ConvergenceWarning, check_csr, check_positive, check_regularization, check_int, check_budget,
                           check_seed, check_choice)
from ..model import Model, make_history, warm_start_coef
from . import _baselines, _sorel
from .sorel import (_COMMON_PARAMS, _FORMS, _SAMPLING, _index_arrays, _loss_setup,
                    _steps_setup)
from .spectra import resolve_spectrum, spectrum as named_spectrum

__all__ = ["train_lsvrg", "train_prospect", "train_spectral_sgd"]

_STATUS = {1: "max_epochs", 2: "stopped", 3: "diverged"}


# ---------------------------------------------------------------------------------------
# shared checks


def _common(X, y, loss, spectrum, spectrum_param, mu, max_epochs, seed, callback, solver):
    Xc = check_csr(X)
    n, d = Xc.shape
    loss, lparam, y_int, classes = _loss_setup(loss, y, n, solver)
    sigma = resolve_spectrum(spectrum, n, spectrum_param)
    mu = check_regularization(mu, None, n, "mu", allow_zero=True)
    max_epochs = check_budget(max_epochs, "max_epochs", 0)
    seed = check_seed(seed)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable")
    sqn = Xc.sqnorm if Xc.sqnorm is not None else np.zeros(n)
    Lmax = float(np.max(sqn)) * (0.25 if loss == "logistic" else 1.0) if n else 0.0
    return Xc, n, d, loss, lparam, y_int, classes, sigma, mu, max_epochs, seed, Lmax


def _alpha(alpha, auto, solver):
    if isinstance(alpha, str):
        check_choice(alpha, "alpha", ("auto",))
        return float(auto)
    return check_positive(alpha, "alpha")


def _check_trace(tr, name, ndim=1):
    if tr is not None and not (isinstance(tr, np.ndarray) and tr.dtype == np.intp
                               and tr.ndim == ndim and tr.flags.c_contiguous):
        raise TypeError(f"{name} must be a {ndim}-D contiguous intp array")


def _with_passes(callback, passes):
    """Hand ``info["passes"]`` (gradient evaluations / n so far) to the user's callback."""
    if callback is None:
        return None

    def cb(info):
        info["passes"] = passes(info["epoch"])
        return callback(info)
    return cb


def _finish(solver, status, n_epochs, rows, passes, w, lam, params, classes, sigma, extra=()):
    if status == 3:
        warnings.warn(f"{solver} diverged (non-finite objective after {n_epochs} epochs); "
                      "decrease alpha", ConvergenceWarning, stacklevel=3)
    params["status"] = _STATUS[status]
    hist = make_history([tuple(r) + (passes(r[0]),) for r in rows], extra_fields=("passes",))
    return Model(coef=w, dual=lam, history=hist, converged=False, n_epochs=n_epochs,
                 solver=solver, params=params, classes=classes,
                 extra=dict(sigma=sigma, **dict(extra)))


def _spectrum_name(spectrum):
    return spectrum if isinstance(spectrum, str) else "custom"


_OBJECTIVE_DOC = """
    Solves, with n rows ``x_i`` of X, losses ``l_i(w) = phi(x_i.w; y_i)`` sorted ascending
    ``l_[1] <= ... <= l_[n]`` and a spectrum ``sigma`` (nondecreasing, sum 1)::

        min_w  F(w) = sum_i sigma_i l_[i](w) + (mu/2) ||w||^2

    (the objective of :func:`train_sorel`; no intercept, no smoothing of the risk: nu = 0)."""

_TAIL_PARAMS = """    max_epochs : int >= 0
        Number of epochs. There is no stopping test (no cheap certificate exists;
        ``spectral_reference`` gives one on small data).
    seed : int or None
    verbose : int
        1 prints F(w) per epoch.
    callback : callable, optional
        ``callback(info)`` after every epoch (and at the start, epoch 0) with a dict
        (epoch, time, primal = F(w), passes, coef: a read-only view of w); return True to
        stop. Ctrl-C stops too (KeyboardInterrupt): Python code runs between epochs,
        where a pending interrupt is raised; an epoch itself runs without the GIL.
    warm_start : Model or array (n_features,), optional
        The starting w_0 (default 0)."""


# ---------------------------------------------------------------------------------------
# LSVRG


def train_lsvrg(X, y, *, loss="squared", spectrum="superquantile", spectrum_param=None,
                mu=None, alpha="auto", batch_size=1, sampling=None, steps_per_epoch=None,
                form="gradient", max_epochs=64, seed=0, verbose=0, callback=None,
                warm_start=None, _trace=None):
    """Train a linear model by LSVRG for spectral risks (Mehta et al., AISTATS 2023, with
    nu = 0; spec seed4 section 2.6 (c)), the SOREL paper's baseline.
    {objective}

    Epoch k (length T = n steps by default):

    1. checkpoint: the losses at w_k (one pass over X), lambda = ``sigma[rank(l(w_k))]``
       (the vertex of the permutahedron; ties by the previous order), the anchor
       ``gbar = X^T (lambda * phi'(X w_k))`` (a second pass) and the stored scalars
       ``phi'(x_i.w_k)``;
    2. T steps on batches S of b rows (b = 1: i uniform):
       ``c_i = (n/b) lambda_i (phi'(x_i.w) - phi'(x_i.w_k))`` and
       ``form="gradient"``: ``w <- w - alpha (sum_S c_i x_i + gbar + mu w)``;
       ``form="prox"``: ``w <- (w - alpha (sum_S c_i x_i + gbar)) / (1 + alpha mu)``.
       The dense part is applied lazily: a step costs O(nnz of the rows).

    With nu = 0 this is SOREL with eta = tau = infinity and theta = 0 (its ``dual_prox=False``
    ablation), and runs on the same Cython loop. Lambda jumps between vertices, so the
    method need not converge to the minimiser when losses tie at the optimum (the SOREL
    paper observes it stalling, e.g. for CVaR).

    Parameters
    ----------
{common}
    alpha : float > 0 or "auto"
        Step size. "auto": ``1 / (16 n max(sigma) max_i L_i)`` with ``L_i = ||x_i||^2``
        (squared) or ``||x_i||^2/4`` (logistic), capped at ``0.5/mu`` in the gradient form.
        ``n max(sigma) max_i L_i`` bounds the smoothness of the sampled components
        ``n lambda_i l_i``; the SVRG bound would take 1/4 of its inverse, but with nu = 0
        the vertex jumps of lambda make LSVRG oscillate at that step, and 1/16 did better
        on the paper's five regression sets by its own criterion (objective averaged over
        the last 10 of 64 epochs). No constant suits every problem: tune alpha over the
        paper's grid {{1e-4, 3e-4, ..., 1e-1, 3e-1}} (App. B); its picks were 1e-3 (CVaR)
        and 3e-3 (extremile, ESRM) on yacht, 1e-4 on kin8nm.
    batch_size : int in [1, n]
        b rows per step (the paper's mini-batch runs use 64).
    sampling : {{"uniform", "permutation"}}, optional
        "uniform" (b = 1 only): rows with replacement; "permutation": consecutive batches
        of a fresh permutation per epoch. Default: "uniform" for b = 1, else "permutation".
    steps_per_epoch : int >= 1, optional
        Steps between checkpoints; default n ("uniform", the paper's epoch length) or
        floor(n/b) ("permutation").
    form : {{"gradient", "prox"}}
        The reference code's gradient step (needs ``alpha mu < 1``) or the proximal step
        of the ridge term.
{tail}

    Returns
    -------
    Model
        ``coef`` = w, ``dual`` = the lambda of the last epoch, ``history`` (one row per
        epoch, epoch 0 the start: epoch, time, primal = F(w_k), passes; dual and gap NaN),
        ``params`` (settings, ``status``); ``extra["sigma"]`` is the spectrum used.
        ``passes`` counts per-sample gradient evaluations / n: each epoch is a full
        gradient at the checkpoint (n) plus T b stochastic ones, i.e. 2 per epoch by
        default (spec 3.1). ``time`` includes the checkpoint pass, which also gives F(w_k).
    """
    (Xc, n, d, loss, lparam, y_int, classes, sigma, mu, max_epochs, seed,
     Lmax) = _common(X, y, loss, spectrum, spectrum_param, mu, max_epochs, seed, callback,
                     "train_lsvrg")
    batch_size, sampling, steps, form = _steps_setup(batch_size, sampling, steps_per_epoch,
                                                     form, n)
    auto = 1.0 / (16.0 * n * float(sigma.max()) * Lmax) if Lmax > 0 else 1.0
    if form == "gradient" and mu > 0:
        auto = min(auto, 0.5 / mu)
    alpha = _alpha(alpha, auto, "train_lsvrg")
    if form == "gradient" and not alpha * mu < 1.0:
        raise ValueError(f"alpha = {alpha!r} is too large for form='gradient': it needs "
                         f"alpha mu < 1, i.e. alpha < {1.0 / mu:.6g}; use form='prox'")
    _check_trace(_trace, "_trace")
    w = warm_start_coef(warm_start, d)
    lam = np.zeros(n)
    per_epoch = 1.0 + steps * batch_size / n

    def passes(k):
        return k * per_epoch

    data, indices, indptr = _index_arrays(Xc)
    # LSVRG (nu = 0) is SOREL's loop with the vertex lambda and no dual proximal term
    status, n_epochs, primal, error, rows = _sorel._fit(
        data, indices, indptr, d, y_int, loss, sigma, mu, w, lam, float(alpha), 0.0, 1.0,
        0.0, _FORMS[form], _SAMPLING[sampling], batch_size, steps, max_epochs, seed, True,
        int(verbose), _with_passes(callback, passes), trace=_trace, loss_param=lparam,
        eta_guard=False)
    if error:
        raise ValueError("alpha mu >= 1 in the gradient form")  # pragma: no cover
    params = dict(loss=loss, spectrum=_spectrum_name(spectrum), spectrum_param=spectrum_param,
                  mu=mu, alpha=float(alpha), batch_size=batch_size, sampling=sampling,
                  steps_per_epoch=steps, form=form, max_epochs=max_epochs, seed=seed)
    rows = [r[:5] for r in rows]                       # SOREL's eta column: inf (no dual prox)
    return _finish("lsvrg", status, n_epochs, rows, passes, w, lam, params, classes, sigma)


# ---------------------------------------------------------------------------------------
# Prospect


def train_prospect(X, y, *, loss="squared", spectrum="superquantile", spectrum_param=None,
                   mu=None, alpha="auto", max_epochs=64, seed=0, verbose=0, callback=None,
                   warm_start=None, _trace=None, _order_trace=None):
    """Train a linear model by Prospect (Mehta et al., ICLR 2024, with nu = 0; spec seed4
    section 2.6 (d)), the SOREL paper's baseline.
    {objective}

    SAGA-like in w with a table of losses for lambda. Start: the table of losses
    ``l_i(w_0)``, derivatives ``g_i = phi'(x_i.w_0)``, ``rho = lambda = sigma[rank(l)]`` and
    ``S = sum_i rho_i g_i x_i``. Step (i uniform; lambda_i = sigma[rank of i in the table])::

        m = x_i.w;  g = phi'(m);  v = (n lambda_i g - n rho_i g_i) x_i + S
        w <- (w - alpha v) / (1 + alpha mu)                      (prox of the ridge term)
        S += (lambda_i g - rho_i g_i) x_i;  rho_i = lambda_i;  g_i = g
        table: l_i <- phi(m), and i moves to its new rank

    The sorted order of the table is maintained, not recomputed: the changed entry moves to
    its new place (galloping search, then a shift of the entries it passes), so a step
    costs O(nnz(x_i) + displacement) rather than the reference code's O(n log n) re-sort.
    Ties are broken by sample index, so the order always equals a stable argsort of the
    table. The dense part (ridge prox, -alpha S) is applied lazily. An epoch is n steps.

    Parameters
    ----------
{common}
    alpha : float > 0 or "auto"
        Step size. "auto": ``1 / (4 n max(sigma) max_i L_i)`` (``L_i = ||x_i||^2``, or a
        quarter of it for logistic), the SVRG/SAGA-type bound for the sampled components
        ``n lambda_i l_i`` (as :func:`train_sorel`); on the paper's five regression sets it
        did better than smaller multiples except on CVaR for the smallest sets. Tune it
        over the paper's grid {{1e-4, 3e-4, ..., 1e-1, 3e-1}} (App. B); its picks were
        3e-3 (CVaR) and 1e-2 (extremile, ESRM) on yacht, 1e-4 on kin8nm.
{tail}

    Returns
    -------
    Model
        ``coef`` = w, ``dual`` = lambda = ``sigma[rank]`` of the final loss table,
        ``history`` (one row per epoch, epoch 0 the start: epoch, time, primal = F(w_k),
        passes; dual and gap NaN), ``params`` (settings, ``status``,
        ``mean_displacement``: the average number of places an entry moved per step);
        ``extra["sigma"]`` is the spectrum used. ``passes`` counts gradient evaluations / n:
        the table build (1) plus 1 per epoch, so 0 at epoch 0 and k + 1 at epoch k >= 1.
        ``time`` leaves out the full objective evaluation after each epoch (Prospect does
        not need it; it only feeds the history).
    """
    (Xc, n, d, loss, lparam, y_int, classes, sigma, mu, max_epochs, seed,
     Lmax) = _common(X, y, loss, spectrum, spectrum_param, mu, max_epochs, seed, callback,
                     "train_prospect")
    auto = 1.0 / (4.0 * n * float(sigma.max()) * Lmax) if Lmax > 0 else 1.0
    alpha = _alpha(alpha, auto, "train_prospect")
    _check_trace(_trace, "_trace")
    _check_trace(_order_trace, "_order_trace", ndim=2)
    w = warm_start_coef(warm_start, d)
    lam = np.zeros(n)

    def passes(k):
        return 0.0 if k == 0 else 1.0 + k

    data, indices, indptr = _index_arrays(Xc)
    status, n_epochs, primal, rows, shifts = _baselines._fit_prospect(
        data, indices, indptr, d, y_int, loss, sigma, mu, w, lam, float(alpha), max_epochs,
        seed, int(verbose), _with_passes(callback, passes), trace=_trace, otrace=_order_trace,
        loss_param=lparam)
    params = dict(loss=loss, spectrum=_spectrum_name(spectrum), spectrum_param=spectrum_param,
                  mu=mu, alpha=float(alpha), max_epochs=max_epochs, seed=seed,
                  mean_displacement=shifts / max(1, n_epochs * n))
    return _finish("prospect", status, n_epochs, rows, passes, w, lam, params, classes, sigma)


# ---------------------------------------------------------------------------------------
# mini-batch SGD


def _batch_spectrum(spectrum, spectrum_param, sigma, b):
    """The spectrum over one batch of b losses: the same family and parameter at size b
    (spec 2.6 (b)); for explicit weights, the same risk profile, i.e. the increments of
    the piecewise-linear cumulative sum of sigma at the points k/b."""
    n = sigma.shape[0]
    if isinstance(spectrum, str):
        return named_spectrum(spectrum, b, spectrum_param)
    cum = np.concatenate(([0.0], np.cumsum(sigma)))
    cum[-1] = 1.0
    c = np.interp(np.arange(b + 1) / b, np.arange(n + 1) / n, cum)
    s = np.maximum(np.diff(c), 0.0)
    s = np.maximum.accumulate(s)           # exact monotone already; guards rounding
    return s / s.sum()


def train_spectral_sgd(X, y, *, loss="squared", spectrum="superquantile", spectrum_param=None,
                       mu=None, alpha="auto", batch_size=None, max_epochs=64, seed=0, verbose=0,
                       callback=None, warm_start=None, _trace=None):
    """Train a linear model by mini-batch stochastic subgradient descent on the spectral
    risk ("SGD", spec seed4 section 2.6 (b); Levy et al. 2020, Mehta et al. 2023), the
    SOREL paper's baseline.
    {objective}

    Each epoch draws a fresh random permutation and takes floor(n/b) steps on its
    consecutive batches B of b rows (without replacement)::

        m_B = X_B w;  lam_B = sigma_b[rank(phi(m_B))]
        w <- (1 - alpha mu) w - alpha X_B^T (lam_B * phi'(m_B))

    where sigma_b is the b-point spectrum of the same family (e.g. superquantile 0.5 over
    64 losses: the top 32 get 1/32; for explicit weights, the same risk profile as sigma:
    the increments of the piecewise-linear cumulative sum of sigma at the points k/b).
    The estimate is biased for any non-uniform sigma, so
    with a constant step the method stalls at a bias floor above the optimum (the paper:
    "SGD fails to converge"). b = n is the full-batch subgradient method (spec 2.6 (a)).
    w is kept as scale * v, so a step costs O(nnz of the batch + b log b).

    Parameters
    ----------
{common}
    alpha : float > 0 or "auto"
        Constant step size. "auto": ``1 / max_i L_i`` (``L_i = ||x_i||^2``, or a quarter
        of it for logistic; the batch objective is a convex combination of losses, so it
        is max_i L_i-smooth for fixed ranks); capped at ``0.5/mu``. The paper tunes alpha
        in {{1e-4, ..., 3e-1}} (App. B); its pick for yacht was 1e-1.
    batch_size : int in [1, n]
        b (the paper: 64); default min(64, n).
{tail}

    Returns
    -------
    Model
        ``coef`` = w, ``dual`` None, ``history`` (one row per epoch, epoch 0 the start:
        epoch, time, primal = F(w_k), passes; dual and gap NaN), ``params`` (settings,
        ``status``); ``extra["sigma"]``, ``extra["sigma_batch"]``: the spectra used.
        ``passes`` = k floor(n/b) b / n. ``time`` leaves out the full objective evaluation
        after each epoch (SGD does not need it; it only feeds the history).
    """
    (Xc, n, d, loss, lparam, y_int, classes, sigma, mu, max_epochs, seed,
     Lmax) = _common(X, y, loss, spectrum, spectrum_param, mu, max_epochs, seed, callback,
                     "train_spectral_sgd")
    if batch_size is None:
        batch_size = min(64, n)
    batch_size = check_int(batch_size, "batch_size", 1)
    if batch_size > n:
        raise ValueError(f"batch_size must be <= n = {n} (the number of rows); got {batch_size}")
    auto = 1.0 / Lmax if Lmax > 0 else 1.0
    if mu > 0:
        auto = min(auto, 0.5 / mu)
    alpha = _alpha(alpha, auto, "train_spectral_sgd")
    if not alpha * mu < 1.0:
        raise ValueError(f"alpha = {alpha!r} is too large: SGD needs alpha mu < 1, i.e. "
                         f"alpha < {1.0 / mu:.6g}")
    _check_trace(_trace, "_trace")
    sigma_b = _batch_spectrum(spectrum, spectrum_param, sigma, batch_size)
    w = warm_start_coef(warm_start, d)
    per_epoch = (n // batch_size) * batch_size / n

    def passes(k):
        return k * per_epoch

    data, indices, indptr = _index_arrays(Xc)
    status, n_epochs, primal, rows = _baselines._fit_sgd(
        data, indices, indptr, d, y_int, loss, sigma, sigma_b, mu, w, float(alpha),
        max_epochs, seed, int(verbose), _with_passes(callback, passes), trace=_trace,
        loss_param=lparam)
    params = dict(loss=loss, spectrum=_spectrum_name(spectrum), spectrum_param=spectrum_param,
                  mu=mu, alpha=float(alpha), batch_size=batch_size, max_epochs=max_epochs,
                  seed=seed)
    return _finish("spectral_sgd", status, n_epochs, rows, passes, w, None, params, classes,
                   sigma, extra=dict(sigma_batch=sigma_b))


for _f in (train_lsvrg, train_prospect, train_spectral_sgd):
    if _f.__doc__:                          # None under python -OO
        _f.__doc__ = _f.__doc__.format(objective=_OBJECTIVE_DOC, common=_COMMON_PARAMS,
                                   tail=_TAIL_PARAMS)
del _f
