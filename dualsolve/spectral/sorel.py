"""``train_sorel``: SOREL for spectral risk minimisation (Ge & Jiang 2024; spec seed4 2.3-2.5).

Validation, defaults and the Model live here; the loop is in ``_sorel.pyx``.
"""
import warnings

import numpy as np

from .._validation import (ConvergenceWarning, check_csr, check_loss_and_labels, check_positive, check_regularization,
                           check_int, check_budget, check_seed, check_choice)
from ..model import Model, make_history, warm_start_coef
from . import _sorel
from .spectra import resolve_spectrum

__all__ = ["train_sorel", "spectral_objective"]

_LOSSES = ("squared", "logistic")
_FORMS = {"gradient": 0, "prox": 1}
_SAMPLING = {"uniform": 0, "permutation": 1}
_STATUS = {1: "max_epochs", 2: "stopped", 3: "diverged"}


# The parameters every spectral-risk trainer shares (train_sorel and the baselines).
_COMMON_PARAMS = """    X : sparse matrix/array (n, n_features)
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
    mu : float >= 0, optional
        Ridge strength; default 1/n (the paper's)."""


def _loss_setup(loss, y, n, solver="train_sorel"):
    return check_loss_and_labels(loss, None, _LOSSES, y, n, solver)


def _index_arrays(Xc):
    indptr = Xc.indptr
    if indptr.dtype != Xc.indices.dtype:
        indptr = indptr.astype(Xc.indices.dtype)
    return Xc.data, Xc.indices, indptr


def _steps_setup(batch_size, sampling, steps_per_epoch, form, n):
    """Checked (batch_size, sampling, steps per epoch, form) of SOREL's loop (also LSVRG's)."""
    batch_size = check_int(batch_size, "batch_size", 1)
    if batch_size > n:
        raise ValueError(f"batch_size must be <= n = {n} (the number of rows); got {batch_size}")
    if sampling is None:
        sampling = "uniform" if batch_size == 1 else "permutation"
    check_choice(sampling, "sampling", tuple(_SAMPLING))
    if sampling == "uniform" and batch_size > 1:
        raise ValueError("sampling='uniform' draws one row per step; use "
                         "sampling='permutation' with batch_size > 1")
    if steps_per_epoch is None:
        steps = n if sampling == "uniform" else n // batch_size
    else:
        steps = check_int(steps_per_epoch, "steps_per_epoch", 1)
    form = check_choice(form, "form", tuple(_FORMS))
    return batch_size, sampling, steps, form


def spectral_objective(X, y, w, *, loss="squared", spectrum, spectrum_param=None, mu=None):
    """F(w) = sum_i sigma_i l_[i](w) + (mu/2)||w||^2 (the objective of :func:`train_sorel`)."""
    Xc = check_csr(X)
    n, d = Xc.shape
    loss, param, y_int, _ = _loss_setup(loss, y, n)
    sigma = resolve_spectrum(spectrum, n, spectrum_param)
    mu = check_regularization(mu, None, n, "mu", allow_zero=True)
    w = np.array(w, dtype=np.float64, copy=True).ravel()
    if w.shape[0] != d:
        raise ValueError(f"w has length {w.shape[0]} but X has {d} columns")
    data, indices, indptr = _index_arrays(Xc)
    return _sorel.objective(data, indices, indptr, d, y_int, loss, sigma, mu, w, param)


def train_sorel(X, y, *, loss="squared", spectrum="superquantile", spectrum_param=None,
                mu=None, alpha="auto", C=0.1, tau_c=20.0, eta_max=None, eta_guard=True,
                batch_size=1,
                sampling=None, steps_per_epoch=None, form="gradient", dual_prox=True,
                max_epochs=64, seed=0, verbose=0, callback=None, warm_start=None,
                _trace=None):
    """Train a linear model by SOREL (Ge & Jiang 2024, "SOREL: a stochastic algorithm for
    spectral risks minimization"; spec seed4 sections 2.3-2.5), the practical form of the
    paper's experiments, serial or with mini-batches.

    Solves, with n rows ``x_i`` of X, losses ``l_i(w) = phi(x_i.w; y_i)`` sorted ascending
    ``l_[1] <= ... <= l_[n]`` and a spectrum ``sigma`` (nondecreasing, sum 1)::

        min_w  F(w) = sum_i sigma_i l_[i](w) + (mu/2) ||w||^2

    through the saddle point ``min_w max_{lambda in Pi_sigma} lambda^T l(w) + (mu/2)||w||^2``
    (Pi_sigma: the permutahedron of sigma). No intercept. Epoch k = 0, 1, ... (``theta =
    k/(k+1)``, ``eta = min(C' (k+1)/n, eta_max)``, C' = C unless the guard halved it, ``tau = tau_c n/(k+1)``):

    1. losses at w_k (one pass over X), then the dual step with momentum on the losses
       ``lambda <- Proj_{Pi_sigma}(lambda + eta ((1+theta) l(w_k) - theta l(w_{k-1})))``
       (sort + pool adjacent violators, warm-started from the previous order);
    2. the anchor ``gbar = X^T (lambda * phi'(X w_k))`` (a second pass);
    3. T variance-reduced steps on the subproblem
       ``lambda^T l(w) + (mu/2)||w||^2 + ||w - w_k||^2/(2 tau)``: a batch S of b rows,
       ``c_i = (n/b) lambda_i (phi'(x_i.w) - phi'(x_i.w_k))`` (all at the same w) and
       ``form="gradient"``: ``w <- w - alpha (sum_S c_i x_i + gbar + mu w + (w - w_k)/tau)``;
       ``form="prox"``: ``w <- (w - alpha (sum_S c_i x_i + gbar) + (alpha/tau) w_k) /
       (1 + alpha mu + alpha/tau)``. The dense part is applied lazily, so a step costs
       O(nnz of the rows).

    lambda starts at the vertex ``sigma[rank(l(w_0))]``. ``sigma = 1/n`` keeps lambda at
    1/n and the method is prox-SVRG for ridge.

    Parameters
    ----------
{common}
    alpha : float > 0 or "auto"
        Primal step. "auto": ``1 / (4 n max(sigma) max_i L_i)`` with ``L_i = ||x_i||^2``
        (squared) or ``||x_i||^2/4`` (logistic), the prox-SVRG bound of spec 2.3.4
        (conservative: the paper tunes alpha in {1e-4, ..., 3e-1}).
    C : float >= 0
        Dual step scale, ``eta_k = C (k+1)/n``. Too large and lambda jumps between vertices
        (w oscillates); the paper tunes C in {0.01, ..., 4}.
    tau_c : float > 0
        ``tau_k = tau_c n / (k+1)`` (the paper fixes 20).
    eta_max : float > 0, optional
        A fixed cap on eta_k (none by default, as in the paper; [code-SOREL] freezes eta
        after 400 epochs).
    eta_guard : bool, default True
        Stop eta_k from growing past the dual step's stability limit. Without it, long runs
        with the paper's schedule leave the optimum again: eta_k = C (k+1)/n grows without
        bound, and near the optimum the dual update is an extrapolated gradient ascent on
        the dual restricted to the optimal face of Pi_sigma (the optimum of a spectral risk
        usually sits where losses of distinct rows tie), which diverges once eta_k exceeds
        about 2 / (3 L_face), L_face the dual's curvature on that face. Observed with the
        paper's tuned (alpha, C) after 300-1500 epochs on yacht (all three spectra), energy
        (extremile) and concrete (ESRM), each after reaching 1e-12 or better (see
        docs/spectral.md). The guard watches the dual steps s_k = lambda_{k+1} - lambda_k:
        when three successive pairs point in opposite directions (cosine < -1/2) and the
        alternation is not dying out, C is halved for the rest of the run (eta halves, then
        grows at half the rate; repeated when it happens again). A converging run has
        aligned dual steps, so the guard leaves it alone; early on it acts when C is too
        large (lambda jumping between vertices). ``eta_guard=False`` is the paper's method.
        ``extra["eta"]`` records the eta_k used.
    batch_size : int in [1, n]
        b rows per step (spec 2.4; the paper uses 64).
    sampling : {"uniform", "permutation"}, optional
        "uniform": rows drawn with replacement (b = 1 only); "permutation": consecutive
        batches of a fresh random permutation per epoch (reshuffled if an epoch needs more
        than one pass). Default: "uniform" for b = 1, else "permutation".
    steps_per_epoch : int >= 1, optional
        Steps per dual update; default n ("uniform") or floor(n/b) ("permutation").
    form : {"gradient", "prox"}
        The gradient step of the experiments or the proximal step of Algorithm 1.
        "gradient" needs ``alpha (mu + 1/tau_k) < 1`` for every epoch run (checked).
    dual_prox : bool
        False runs the paper's counterexample method (App. C, Algorithm 2): lambda jumps
        to the vertex ``sigma[rank(l(w_k))]`` (eta = infinity) and there is no primal
        proximal term (tau = infinity); it need not converge. For experiments only.
    max_epochs : int >= 0
        Number of epochs (dual updates). There is no duality-gap stop: SOREL has no cheap
        certificate (``spectral_reference`` gives one on small data).
    seed : int or None
    verbose : int
        1 prints F(w_k) per epoch.
    callback : callable, optional
        ``callback(info)`` after every epoch with a dict (epoch, time, primal, coef: a
        read-only view of w); return True to stop. Ctrl-C stops cleanly too.
    warm_start : Model or array (n_features,), optional
        The starting w_0 (default 0); lambda_0 is the vertex at w_0.

    Returns
    -------
    Model
        ``coef`` = w, ``dual`` = lambda (in Pi_sigma), ``history`` (one row per epoch, epoch
        0 the start: epoch, time, primal = F(w_k); dual and gap NaN), ``n_epochs``,
        ``converged`` (False: no stopping test), ``params`` (settings, the spectrum's kind,
        ``status``); ``extra["sigma"]`` is the spectrum used, ``extra["eta"]`` the dual
        step of every epoch run (inf without the dual prox).
    """
    Xc = check_csr(X)
    n, d = Xc.shape
    loss, lparam, y_int, classes = _loss_setup(loss, y, n)
    sigma = resolve_spectrum(spectrum, n, spectrum_param)
    mu = check_regularization(mu, None, n, "mu", allow_zero=True)
    batch_size, sampling, steps, form = _steps_setup(batch_size, sampling, steps_per_epoch,
                                                     form, n)
    if not isinstance(dual_prox, (bool, np.bool_)):
        raise TypeError(f"dual_prox must be a bool; got {type(dual_prox).__name__}")
    if not isinstance(eta_guard, (bool, np.bool_)):
        raise TypeError(f"eta_guard must be a bool; got {type(eta_guard).__name__}")
    C = check_positive(C, "C", allow_zero=True)
    tau_c = check_positive(tau_c, "tau_c")
    eta_max = 0.0 if eta_max is None else check_positive(eta_max, "eta_max")
    max_epochs = check_budget(max_epochs, "max_epochs", 0)
    seed = check_seed(seed)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable")
    sqn = Xc.sqnorm if Xc.sqnorm is not None else np.zeros(n)
    Lmax = float(np.max(sqn)) * (0.25 if loss == "logistic" else 1.0)
    if isinstance(alpha, str):
        check_choice(alpha, "alpha", ("auto",))
        alpha = 1.0 / (4.0 * n * float(sigma.max()) * Lmax) if Lmax > 0 else 1.0
        if form == "gradient":
            inv_tau = 0.0 if not dual_prox else max(max_epochs, 1) / (tau_c * n)
            alpha = min(alpha, 0.5 / (mu + inv_tau))
    else:
        alpha = check_positive(alpha, "alpha")
    if form == "gradient":
        inv_tau = 0.0 if not dual_prox else max(max_epochs, 1) / (tau_c * n)
        if not alpha * (mu + inv_tau) < 1.0:
            raise ValueError(
                f"alpha = {alpha!r} is too large for form='gradient': it needs alpha (mu + "
                f"1/tau_k) < 1 at every epoch, i.e. alpha < {1.0 / (mu + inv_tau):.6g} for "
                f"max_epochs = {max_epochs} (tau_k = tau_c n/(k+1)); use form='prox'")
    w = warm_start_coef(warm_start, d)
    lam = np.zeros(n)
    if _trace is not None and not (isinstance(_trace, np.ndarray) and _trace.dtype == np.intp
                                   and _trace.ndim == 1 and _trace.flags.c_contiguous):
        raise TypeError("_trace must be a 1-D contiguous intp array")
    data, indices, indptr = _index_arrays(Xc)
    status, n_epochs, primal, error, rows = _sorel._fit(
        data, indices, indptr, d, y_int, loss, sigma, mu, w, lam, float(alpha), C, tau_c,
        eta_max, _FORMS[form], _SAMPLING[sampling], batch_size, steps, max_epochs, seed,
        not dual_prox, int(verbose), callback, trace=_trace, loss_param=lparam,
        eta_guard=bool(eta_guard))
    if error:
        raise ValueError("alpha (mu + 1/tau_k) >= 1 in the gradient form")  # pragma: no cover
    if status == 3:
        warnings.warn(f"sorel diverged (non-finite objective after {n_epochs} epochs); "
                      "decrease alpha or C", ConvergenceWarning, stacklevel=2)
    params = dict(loss=loss, spectrum=spectrum if isinstance(spectrum, str) else "custom",
                  spectrum_param=spectrum_param, mu=mu, alpha=float(alpha), C=C, tau_c=tau_c,
                  eta_max=eta_max or None, eta_guard=bool(eta_guard), batch_size=batch_size, sampling=sampling,
                  steps_per_epoch=steps, form=form, dual_prox=bool(dual_prox),
                  max_epochs=max_epochs, seed=seed, status=_STATUS[status])
    history = make_history(rows, extra_fields=("eta",))
    return Model(coef=w, dual=lam, history=history, converged=False,
                 n_epochs=n_epochs, solver="sorel", params=params, classes=classes,
                 extra=dict(sigma=sigma, eta=history["eta"][1:]))


if train_sorel.__doc__:                     # None under python -OO
    train_sorel.__doc__ = train_sorel.__doc__.replace("{common}", _COMMON_PARAMS)
