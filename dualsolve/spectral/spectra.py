"""Spectra of spectral risk measures and the spectral risk itself (Y. Ge, R. Jiang, "SOREL: A
Stochastic Algorithm for Spectral Risks Minimization", 2024, Table 1).

Order convention, used everywhere in ``dualsolve.spectral``: a spectrum sigma is the weight
vector for the losses sorted **ascending**, so sigma is nondecreasing (the largest losses get
the largest weights), nonnegative and sums to 1, and

    R_sigma(l) = sum_i sigma_i * l_[i],      l_[1] <= ... <= l_[n].
"""
import math
import numbers

import numpy as np

from dualsolve._core.isotonic import pava as _pava

__all__ = ["spectrum", "spectral_risk", "check_spectrum", "SPECTRUM_KINDS"]

#: accepted ``kind`` values of :func:`spectrum` ("cvar" is an alias of "superquantile")
SPECTRUM_KINDS = ("erm", "superquantile", "extremile", "esrm")

# The parameter values of the SOREL paper's experiments.
_DEFAULT_PARAM = {"superquantile": 0.5, "extremile": 2.5, "esrm": 2.0}
_PARAM_NAME = {"superquantile": "alpha", "extremile": "r", "esrm": "rho"}

# |n alpha - round(n alpha)| below this counts as an integer (rounding in n alpha).
_CVAR_INT_TOL = 1e-9


def _check_n(n, name="n"):
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(n).__name__} {n!r}")
    n = int(n)
    if n < 1:
        raise ValueError(f"{name} must be >= 1, got {n}")
    return n


def _check_param(kind, param):
    name = _PARAM_NAME[kind]
    if param is None:
        return _DEFAULT_PARAM[kind]
    if isinstance(param, (bool, np.bool_)) or not isinstance(param, numbers.Real):
        raise TypeError(f"param ({name}) of the {kind} spectrum must be a real number, "
                        f"got {type(param).__name__} {param!r}")
    p = float(param)
    if not math.isfinite(p):
        raise ValueError(f"param ({name}) of the {kind} spectrum must be finite, got {p}")
    if kind == "superquantile" and not 0.0 < p <= 1.0:
        raise ValueError(f"param (alpha) of the superquantile spectrum must be in (0, 1], got {p}")
    if kind == "extremile" and not p >= 1.0:
        raise ValueError(f"param (r) of the extremile spectrum must be >= 1, got {p}")
    if kind == "esrm" and not p > 0.0:
        raise ValueError(f"param (rho) of the esrm spectrum must be > 0, got {p}")
    return p


def _superquantile(n, alpha):
    # Table 1 with the typo fixed: the top floor(n alpha) entries get 1/(n alpha), the entry
    # i = ceil(n (1 - alpha)) (1-based) gets the leftover 1 - floor(n alpha)/(n alpha), the
    # rest 0. n alpha within 1e-9 of an integer k >= 1 is k exactly (top k entries 1/k), so
    # that e.g. n = 10, alpha = 0.9 gives 9 x 1/9 and not the uniform spectrum.
    sigma = np.zeros(n)
    k = n * alpha
    kr = round(k)
    if kr >= 1 and abs(k - kr) < _CVAR_INT_TOL:
        kr = min(int(kr), n)
        sigma[n - kr:] = 1.0 / kr
    elif k < 1.0:                                  # alpha < 1/n: the maximum loss
        sigma[n - 1] = 1.0
    else:
        m = math.floor(k)                          # 1 <= m <= n - 1 here
        sigma[n - m:] = 1.0 / k
        sigma[n - m - 1] = 1.0 - m / k
    return sigma


def _extremile(n, r):
    # sigma_i = (i/n)^r - ((i-1)/n)^r, written as (i/n)^r * (1 - (1 - 1/i)^r) with expm1 /
    # log1p, which keeps full relative accuracy where the plain difference cancels.
    if r == 1.0:
        return np.full(n, 1.0 / n)
    i = np.arange(1, n + 1, dtype=np.float64)
    sigma = np.empty(n)
    sigma[0] = (1.0 / n) ** r
    if n > 1:
        ii = i[1:]
        sigma[1:] = (ii / n) ** r * -np.expm1(r * np.log1p(-1.0 / ii))
    return sigma


def _esrm(n, rho):
    # sigma_i = e^{-rho} (e^{rho i/n} - e^{rho (i-1)/n}) / (1 - e^{-rho})
    #         = e^{-rho (n-i)/n} * (1 - e^{-rho/n}) / (1 - e^{-rho}),
    # a form that neither overflows for large rho nor cancels for small rho.
    j = np.arange(n - 1, -1, -1, dtype=np.float64)          # n - i for i = 1..n
    return np.exp(-rho * j / n) * (math.expm1(-rho / n) / math.expm1(-rho))


def spectrum(kind, n, param=None):
    """The spectrum (weights for the losses sorted ascending) of a spectral risk measure.

    Parameters
    ----------
    kind : {"erm", "superquantile", "extremile", "esrm"}
        - ``"erm"``: sigma_i = 1/n (no parameter).
        - ``"superquantile"`` (alias ``"cvar"``), param alpha in (0, 1], default 0.5: the
          average of the top n*alpha losses, the boundary loss taking the fractional share:
          sigma_i = 1/(n alpha) for i > ceil(n(1-alpha)), 1 - floor(n alpha)/(n alpha) for
          i = ceil(n(1-alpha)), 0 otherwise (the paper's Table 1 with its typo fixed). When
          n*alpha is within 1e-9 of an integer k it is taken as k: the top k weights are 1/k.
          alpha <= 1/n gives the maximum loss, alpha = 1 the mean.
        - ``"extremile"``, param r >= 1, default 2.5: sigma_i = (i/n)^r - ((i-1)/n)^r.
        - ``"esrm"`` (exponential spectral risk measure), param rho > 0, default 2.0:
          sigma_i = e^{-rho} (e^{rho i/n} - e^{rho(i-1)/n}) / (1 - e^{-rho}).
    n : int >= 1
        Number of losses.
    param : float, optional
        The parameter named above (the defaults are the SOREL paper's).

    Returns
    -------
    sigma : ndarray of float64, shape (n,)
        Nonnegative, nondecreasing (exactly, in floating point), summing to 1 up to rounding.
        ``sigma[i]`` weighs the (i+1)-th smallest loss: R = sum_i sigma[i] * sort(l)[i].
    """
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a string, got {type(kind).__name__}")
    k = kind.lower()
    if k == "cvar":
        k = "superquantile"
    if k not in SPECTRUM_KINDS:
        raise ValueError(f"kind must be one of {SPECTRUM_KINDS} (or 'cvar'), got {kind!r}")
    n = _check_n(n)
    if k == "erm":
        if param is not None:
            raise ValueError(f"the erm spectrum takes no param, got {param!r}")
        return np.full(n, 1.0 / n)
    p = _check_param(k, param)
    sigma = {"superquantile": _superquantile, "extremile": _extremile, "esrm": _esrm}[k](n, p)
    if np.any(np.diff(sigma) < 0):
        # Rounding can leave a violation of order ~1e-16 when neighbouring weights are nearly
        # equal (e.g. r close to 1); pool it away. This changes entries at rounding level only
        # and keeps the sum.
        sigma = np.maximum(_pava(sigma), 0.0)
    return sigma


def _as_1d_float(a, name):
    arr = np.asarray(a)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number)
                                   or arr.dtype == np.bool_):
        raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def check_spectrum(sigma, n, *, tol=1e-9):
    """Check that ``sigma`` is a spectrum for ``n`` losses and return it as float64.

    A spectrum is 1-D of length n, finite, nonnegative, nondecreasing (weights for losses
    sorted ascending) and sums to 1. ``tol`` is the absolute slack allowed for rounding, in
    each of: |sum - 1| <= tol, sigma_i >= -tol, sigma_{i+1} >= sigma_i - tol. Nothing is
    repaired; a ValueError (TypeError for a wrong type) names ``sigma`` and the defect.
    """
    n = _check_n(n)
    tol = float(tol)
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    s = _as_1d_float(sigma, "sigma")
    if s.shape[0] != n:
        raise ValueError(f"sigma has length {s.shape[0]} but n = {n} (one weight per loss)")
    if s.min() < -tol:
        i = int(np.argmin(s))
        raise ValueError(f"sigma must be nonnegative: sigma[{i}] = {s[i]!r}")
    if n > 1:
        d = np.diff(s)
        if d.min() < -tol:
            i = int(np.argmin(d))
            raise ValueError(
                f"sigma must be nondecreasing (weights for the losses sorted ascending): "
                f"sigma[{i}] = {s[i]!r} > sigma[{i + 1}] = {s[i + 1]!r}")
    total = math.fsum(s)
    if abs(total - 1.0) > tol:
        raise ValueError(f"sigma must sum to 1 (within {tol:g}), its sum is {total!r}")
    return s


def spectral_risk(losses, sigma):
    """Spectral risk sum_i sigma_i * l_[i] of the losses l, sorted ascending.

    ``sigma`` must be a spectrum of the same length (see :func:`check_spectrum`), e.g. from
    :func:`spectrum`. Returns a float.
    """
    l = _as_1d_float(losses, "losses")
    if l.shape[0] == 0:
        raise ValueError("losses must be non-empty")
    s = check_spectrum(sigma, l.shape[0])
    return float(np.dot(s, np.sort(l)))


def resolve_spectrum(spectrum_arg, n, param=None, *, name="spectrum"):
    """Turn a solver's ``spectrum`` argument into a checked float64 spectrum of length n.

    ``spectrum_arg`` is either a kind accepted by :func:`spectrum` (with ``param``, the
    ``spectrum_param`` of the solvers) or an explicit weight vector, which must already be
    a spectrum (:func:`check_spectrum`: nonnegative, nondecreasing, sum 1; nothing is
    repaired). Errors name ``name`` / ``spectrum_param``.
    """
    if isinstance(spectrum_arg, str):
        try:
            return spectrum(spectrum_arg, n, param)
        except (TypeError, ValueError) as exc:
            msg = str(exc).replace("param (", "spectrum_param (").replace(
                "takes no param", "takes no spectrum_param").replace("kind must", f"{name} must")
            raise type(exc)(msg) from None
    if param is not None:
        raise ValueError(f"spectrum_param applies to a named {name} only; "
                         f"got an explicit weight vector and spectrum_param={param!r}")
    try:
        return check_spectrum(spectrum_arg, n)
    except (TypeError, ValueError) as exc:
        msg = str(exc)
        if "sigma" in msg:
            msg = msg.replace("sigma", name)
        else:
            msg = f"{name}: {msg}"
        raise type(exc)(msg) from None
