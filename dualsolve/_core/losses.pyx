# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Python access to the loss table of ``losses.pxd`` (for tests, objectives and users).

Every function broadcasts its array arguments like a NumPy ufunc and returns float64.
"""
from cython.parallel cimport prange

import numpy as np

LOSSES = {
    "logistic": LOSS_LOGISTIC,
    "squared_hinge": LOSS_SQUARED_HINGE,
    "smooth_hinge": LOSS_SMOOTH_HINGE,
    "hinge": LOSS_HINGE,
    "squared": LOSS_SQUARED,
    "epsilon_insensitive": LOSS_EPS_INSENSITIVE,
    "squared_epsilon_insensitive": LOSS_SQUARED_EPS_INSENSITIVE,
}
CLASSIFICATION_LOSSES = ("logistic", "squared_hinge", "smooth_hinge", "hinge")
#: losses of real targets (regression); the others classify two classes
REGRESSION_LOSSES = ("squared", "epsilon_insensitive", "squared_epsilon_insensitive")
#: differentiable losses: -phi'(x.w) is a feasible dual point, the certificate of the
#: solvers that work in the primal (Newton, the free intercept); phi' is Lipschitz
SMOOTH_LOSSES = ("logistic", "squared_hinge", "smooth_hinge", "squared",
                 "squared_epsilon_insensitive")

# The loss's one parameter: smooth hinge's smoothing width, the squared hinge's scale
# max(0, 1-s)^2 / (2 param), whose default 1/2 is liblinear's L2 loss max(0, 1-s)^2, and the
# insensitivity eps of the epsilon-insensitive losses (default 0.1: liblinear's -p).
DEFAULT_PARAM = {"squared_hinge": 0.5, "smooth_hinge": 0.5, "epsilon_insensitive": 0.1,
                 "squared_epsilon_insensitive": 0.1}
#: the keyword of the train_* functions that sets a loss's parameter (the squared hinge's
#: scale has none: it is fixed at liblinear's 1/2)
PARAM_NAME = {"smooth_hinge": "smoothing", "epsilon_insensitive": "epsilon",
              "squared_epsilon_insensitive": "epsilon"}
# parameters that may be 0 (eps = 0: absolute and squared deviations); the others must be > 0
_PARAM_ZERO_OK = ("epsilon_insensitive", "squared_epsilon_insensitive")


def check_loss(loss, param=None):
    """Validate a loss name and its parameter; return ``(name, param)``.

    Raises ValueError naming ``loss`` for an unknown name and TypeError for a non-string;
    ValueError naming the parameter (``epsilon`` for the epsilon-insensitive losses) when it
    is out of range or not finite.
    """
    if not isinstance(loss, str):
        raise TypeError(f"loss must be a string, one of {sorted(LOSSES)}; got {type(loss).__name__}")
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; expected one of {sorted(LOSSES)}")
    if param is None:
        param = DEFAULT_PARAM.get(loss, 0.0)
    param = float(param)
    if loss in _PARAM_ZERO_OK:
        if not (param >= 0.0 and np.isfinite(param)):
            raise ValueError(f"{PARAM_NAME[loss]} must be a finite number >= 0 for "
                             f"loss={loss!r}; got {param}")
    elif loss in DEFAULT_PARAM and not (param > 0.0 and np.isfinite(param)):
        raise ValueError(f"the {loss} parameter must be a finite number > 0; got {param}")
    return loss, param


cdef Loss make_loss(str loss, double param):
    """The C-level Loss struct for a validated (name, param)."""
    cdef Loss L
    L.kind = LOSSES[loss]
    L.param = param
    L.mu = 0.0
    return L


cdef Loss _checked(loss, param) except *:
    name, p = check_loss(loss, param)
    return make_loss(name, p)


cdef enum:
    _VALUE = 0
    _DERIV = 1
    _CONJ = 2
    _STEP = 3
    _CURV = 4


#: an elementwise call on this many entries or more may run in threads (each entry is its
#: own: the same values for any count): 4096 loss values are tens of microseconds, a
#: parallel region's start and join about one (parallel.region_cost)
_THREADS_MIN = 4096


cdef inline double _apply(int op, const Loss* L, double u, double v, double p,
                          double q) noexcept nogil:
    if op == _VALUE:
        return loss_value(L, u, v)
    if op == _DERIV:
        return loss_deriv(L, u, v)
    if op == _CONJ:
        return loss_conj(L, u, v)
    if op == _CURV:
        return loss_curvature(L, u, v)
    return loss_dual_step(L, u, v, p, q)


def _elementwise(int op, loss, param, *arrays, int threads=1):
    """Broadcast the arrays and apply one table entry per element, without the GIL (the
    batch primal-dual solvers spend most of an iteration here, and one-vs-rest runs their
    classes in threads), in ``threads`` threads from _THREADS_MIN entries."""
    cdef Loss L = _checked(loss, param)
    cols = [np.ascontiguousarray(a).reshape(-1)
            for a in np.broadcast_arrays(*[np.asarray(a, dtype=np.float64) for a in arrays])]
    shape = np.broadcast_shapes(*[np.shape(a) for a in arrays])
    out = np.empty(cols[0].shape[0])
    cdef double[::1] o = out
    cdef const double[:] u = cols[0]
    cdef const double[:] v = cols[1]
    cdef const double[:] p = cols[2] if op == _STEP else cols[0]
    cdef const double[:] q = cols[3] if op == _STEP else cols[0]
    cdef Py_ssize_t k, n = o.shape[0]
    if threads > 1 and n >= _THREADS_MIN:
        for k in prange(n, nogil=True, num_threads=threads, schedule="static"):
            o[k] = _apply(op, &L, u[k], v[k], p[k], q[k])
    else:
        with nogil:
            for k in range(n):
                o[k] = _apply(op, &L, u[k], v[k], p[k], q[k])
    return out.reshape(shape)


def value(loss, s, y, param=None, threads=1):
    """phi(s; y) elementwise (``threads``: how many may share a long array)."""
    return _elementwise(_VALUE, loss, param, s, y, threads=threads)


def derivative(loss, s, y, param=None, threads=1):
    """d phi(s; y) / ds elementwise (hinge: the subgradient -c1 [s < 1] + c2 [s > -1];
    epsilon-insensitive: sign(s - y) [|s - y| > eps])."""
    return _elementwise(_DERIV, loss, param, s, y, threads=threads)


def curvature(loss, s, y, param=None):
    """d^2 phi(s; y) / ds^2 elementwise (generalised at the kinks of phi'; 0 for hinge and
    epsilon_insensitive)."""
    return _elementwise(_CURV, loss, param, s, y)


def conjugate(loss, a, y, param=None, threads=1):
    """h(a; y) = phi*(-a; y) elementwise (+inf outside the domain)."""
    return _elementwise(_CONJ, loss, param, a, y, threads=threads)


def dual_step(loss, y, z, a0, A, param=None, threads=1):
    """argmin_a h(a; y) + z (a - a0) + (A/2)(a - a0)^2, elementwise (the exact SDCA step)."""
    return _elementwise(_STEP, loss, param, y, z, a0, A, threads=threads)


def dual_bounds(loss, y, param=None):
    """(lo, hi): the domain of a -> h(a; y), elementwise in y."""
    cdef Loss L = _checked(loss, param)
    y_ = np.ascontiguousarray(y, dtype=np.float64)
    lo = np.empty(y_.shape)
    hi = np.empty(y_.shape)
    cdef double[::1] lv = lo.reshape(-1), hv = hi.reshape(-1)
    cdef const double[:] yv = y_.reshape(-1)
    cdef Py_ssize_t k
    for k in range(yv.shape[0]):
        loss_dual_bounds(&L, yv[k], &lv[k], &hv[k])
    return lo, hi


def conjugate_is_quadratic(loss):
    """Whether the loss's conjugate is quadratic on its interval (SDCA's over-relaxed
    steps apply): hinge, squared_hinge, smooth_hinge, squared."""
    cdef Loss L = _checked(loss, None)
    return bool(loss_conj_quadratic(&L))


def strong_convexity(loss, param=None):
    """gamma such that h'' >= gamma (0 for hinge and epsilon_insensitive)."""
    cdef Loss L = _checked(loss, param)
    return loss_conj_strong_convexity(&L)
