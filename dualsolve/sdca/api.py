"""``train_sdca``: exact dual coordinate ascent for L2-regularised linear models on CSR."""
import numpy as np

from .._core import losses as _losses
from .._validation import (check_csr, check_labels, check_regularization, check_positive,
                           check_int, check_budget, check_seed, check_choice, warn_not_converged)
from ..model import Model, make_history, warm_start_dual
from . import _sdca

_SAMPLING = {"permutation": 0, "uniform": 1}
_STATUS = {0: "converged", 1: "max_epochs", 2: "stopped"}


def train_sdca(X, y, *, loss="logistic", lam=None, C=None, fit_intercept=False,
               intercept_scaling=1.0, smoothing=None, tol=1e-6, max_epochs=5000,
               check_every="auto", shrinking=True, sampling="permutation", seed=0, verbose=0, callback=None,
               warm_start=None):
    """Train an L2-regularised linear model by stochastic dual coordinate ascent (SDCA).

    Solves, with ``n`` rows and ``w`` of length ``n_features``::

        min_w  P(w) = (1/n) sum_i loss(y_i, x_i.w) + (lam/2) ||w||^2

    through its dual ``max_a D(a) = -(lam/2)||X^T a/(lam n)||^2 - (1/n) sum_i loss*(-a_i)``,
    one coordinate at a time, exactly (closed forms; a safeguarded Newton step for logistic),
    with liblinear's loop: precomputed squared row norms, ``w`` kept incrementally, a random
    permutation of the rows each epoch and shrinking of rows stuck at a bound. Each epoch ends
    with the exact duality gap ``P(w) - D(a)`` (scores recomputed from scratch); the solver
    stops when it is ``<= tol * P(0)``, after recomputing ``w`` from ``a``, so the returned gap
    is a certificate: ``P(w) - P* <= gap``.

    Losses, with margin ``m = y x.w`` and ``y`` in {-1, +1}:

    ``"logistic"``       log(1 + exp(-m))                       (liblinear -s 7 / -s 0)
    ``"squared_hinge"``  max(0, 1 - m)^2                        (liblinear -s 1 / -s 2)
    ``"hinge"``          max(0, 1 - m)                          (liblinear -s 3)
    ``"smooth_hinge"``   1 - m - s/2 if m < 1 - s; (1 - m)^2/(2s) if m < 1; else 0
                         (``s = smoothing``, default 0.5)
    ``"squared"``        (y - x.w)^2 / 2, y real (ridge regression)

    Parameters
    ----------
    X : sparse matrix/array (n, n_features)
        CSR (``csr_matrix`` or ``csr_array``, float32/float64, int32/int64 indices, unsorted
        indices allowed) is used without a copy; dense and other formats are converted once.
    y : array (n,)
        Two distinct values for classification (the larger is the positive class ``+1``),
        reals for ``loss="squared"``.
    loss : str
    lam : float > 0, optional
        L2 strength; default ``1/n``. Give ``lam`` or ``C``, not both.
    C : float > 0, optional
        liblinear's cost: ``lam = 1 / (C n)``.
    fit_intercept : bool
        Append a constant feature ``intercept_scaling`` (liblinear's ``-B``); its weight is
        regularised like the others. Implicit: X is not copied.
    intercept_scaling : float > 0
    smoothing : float > 0, optional
        Width of the smoothed hinge (``loss="smooth_hinge"`` only).
    tol : float >= 0
        Stop when the duality gap is ``<= tol * P(0)``.
    max_epochs : int >= 0
    check_every : "auto" or int >= 1
        When to compute the exact duality gap (one extra pass over X). ``1``: after every
        epoch, so ``history`` has the gap of every epoch. ``k``: every k epochs. ``"auto"``:
        when the gap seen during the pass (each row's Fenchel-Young gap just before its
        step, free to compute) reaches ``tol``, and otherwise often enough that checks cost
        at most a ninth of the work; epochs without a check have NaN primal/dual/gap in
        ``history`` and the pass estimate in ``gap_estimate``. Whatever the setting, the
        solver stops only on an exact, certified gap.
    shrinking : bool
        Drop rows whose dual variable is stuck at a bound (hinge-type losses); they are
        re-checked at every gap evaluation and re-activated when they violate optimality.
    sampling : {"permutation", "uniform"}
        A random permutation each epoch (liblinear), or n draws with replacement.
    seed : int or None
        Seed of the random row order; the same seed gives the same iterates.
    verbose : int
        1 prints one line per epoch: primal, dual, gap, active rows, seconds.
    callback : callable, optional
        ``callback(info)`` after every epoch with a dict (epoch, time, primal, dual, gap,
        n_active, coef); return True to stop.
    warm_start : Model or array (n,), optional
        Dual variables to start from (e.g. ``previous_model.dual`` for a nearby ``lam``).

    Returns
    -------
    Model
        ``coef``, ``intercept``, ``dual`` (``w = X^T dual / (lam n)``), ``history`` (one row
        per epoch: epoch, time, primal, dual, gap, gap_estimate, n_active), ``converged``,
        ``n_epochs``.
    """
    Xc = check_csr(X)
    n, d = Xc.shape
    loss_name, param = _check_loss_param(loss, smoothing)
    task = "regression" if loss_name == "squared" else "binary"
    y_int, classes = check_labels(y, n, task)
    lam = check_regularization(lam, C, n)
    tol = check_positive(tol, "tol", allow_zero=True)
    max_epochs = check_budget(max_epochs, "max_epochs", 0)
    check_code = 0 if check_every == "auto" else check_int(check_every, "check_every", 1)
    sampling_code = _SAMPLING[check_choice(sampling, "sampling", tuple(_SAMPLING))]
    seed = check_seed(seed)
    bias = check_positive(intercept_scaling, "intercept_scaling") if fit_intercept else 0.0
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable")
    alpha = _initial_dual(warm_start, y_int, loss_name, param, n)
    w = np.zeros(d + (1 if fit_intercept else 0))

    status, n_epochs, primal, dual, gap, p0, rows = _sdca._fit(
        Xc.data, Xc.indices, Xc.indptr, d, y_int, loss_name, param, lam, bias, w, alpha,
        tol, max_epochs, check_code, bool(shrinking), sampling_code, seed, int(verbose), callback,
        Xc.sqnorm)

    if status == 1:
        warn_not_converged("train_sdca", n_epochs, gap, tol * p0)
    params = dict(loss=loss_name, lam=lam, C=1.0 / (lam * n), loss_param=param,
                  fit_intercept=bool(fit_intercept), intercept_scaling=bias or None, tol=tol,
                  max_epochs=max_epochs, check_every=check_every, shrinking=bool(shrinking), sampling=sampling,
                  seed=seed, status=_STATUS[status], p0=p0)
    return Model(coef=w[:d], intercept=w[d] * bias if fit_intercept else 0.0, dual=alpha,
                 history=make_history(rows, extra_fields=("gap_estimate", "n_active")),
                 converged=status == 0, n_epochs=n_epochs, solver="sdca", params=params,
                 classes=classes)


def _check_loss_param(loss, smoothing):
    name, _ = _losses.check_loss(loss)
    if smoothing is not None and name != "smooth_hinge":
        raise ValueError(f"smoothing applies to loss='smooth_hinge' only; got loss={name!r}")
    return _losses.check_loss(name, smoothing)


def _initial_dual(warm_start, y, loss, param, n):
    if warm_start is None:
        return np.zeros(n)
    alpha = warm_start_dual(warm_start, n)
    if not np.isfinite(_losses.conjugate(loss, alpha, y, param)).all():
        raise ValueError("warm_start dual variables lie outside the dual domain of the loss "
                         "for these labels (was it trained with another loss or labels?)")
    return alpha
