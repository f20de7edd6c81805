# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Python access to the lazy-update tools of ``lazy.pxd`` (tests and NumPy twins).

The classes own their arrays (exposed read-only as NumPy arrays that share memory with
the C state) and check indices and step gaps, which the nogil helpers do not.
"""
import numpy as np

from libc.stdint cimport int64_t


def _f64(a):
    return np.ascontiguousarray(a, dtype=np.float64)


# ---------------------------------------------------------------------------------------
# 1. prox_pow / affine_pow


def prox_pow_many(z, s, tau, u, lam1, lam2, return_stats=False, int64_t _kshift=0):
    """Elementwise ``prox_pow`` over broadcast arrays (float64 out). With
    ``return_stats=True`` also an (m, 3) int array: pieces walked by the closed form,
    closed-form evaluations and exit-time corrections (all zero where the direct path,
    s <= LAZY_DIRECT_STEPS, was used). ``_kshift`` offsets every exit-time estimate, to
    test that the corrections recover from a wrong estimate."""
    zb, sb, tb, ub, l1b, l2b = np.broadcast_arrays(z, s, tau, u, lam1, lam2)
    shape = zb.shape
    cdef double[::1] Z = _f64(zb).ravel(), T = _f64(tb).ravel(), U = _f64(ub).ravel()
    cdef double[::1] L1 = _f64(l1b).ravel(), L2 = _f64(l2b).ravel()
    cdef int64_t[::1] S = np.ascontiguousarray(sb, dtype=np.int64).ravel()
    if np.any(np.asarray(T) <= 0) or np.any(np.asarray(L1) < 0) or np.any(np.asarray(L2) < 0):
        raise ValueError("need tau > 0, lam1 >= 0 and lam2 >= 0")
    m = Z.shape[0]
    out = np.empty(m)
    stats = np.zeros((m, 3), dtype=np.intc)
    cdef double[::1] o = out
    cdef int[:, ::1] st = stats
    cdef Py_ssize_t i
    cdef bint want = return_stats
    with nogil:
        for i in range(m):
            if want or _kshift != 0:
                o[i] = _prox_pow_impl(Z[i], S[i], T[i], U[i], L1[i], L2[i],
                                      _log1p_tl2(T[i], L2[i]), &st[i, 0], _kshift)
            else:
                o[i] = prox_pow(Z[i], S[i], T[i], U[i], L1[i], L2[i])
    out = out.reshape(shape)
    if return_stats:
        return out, stats.reshape(shape + (3,))
    return out


def affine_pow_many(z, k, c, tau, lam2):
    """Elementwise ``affine_pow`` over broadcast arrays."""
    zb, kb, cb, tb, l2b = np.broadcast_arrays(z, k, c, tau, lam2)
    shape = zb.shape
    cdef double[::1] Z = _f64(zb).ravel(), C = _f64(cb).ravel(), T = _f64(tb).ravel()
    cdef double[::1] L2 = _f64(l2b).ravel()
    cdef int64_t[::1] K = np.ascontiguousarray(kb, dtype=np.int64).ravel()
    out = np.empty(Z.shape[0])
    cdef double[::1] o = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(Z.shape[0]):
            o[i] = affine_pow(Z[i], K[i], C[i], T[i], L2[i])
    return out.reshape(shape)


# ---------------------------------------------------------------------------------------
# 2. ScaledVec


cdef class ScaledVector:
    """A ``ScaledVec`` over an owned copy of ``w0``; ``v`` is the raw storage."""
    cdef ScaledVec sv
    cdef readonly object v

    def __init__(self, w0):
        self.v = np.array(w0, dtype=np.float64)
        if self.v.ndim != 1 or self.v.shape[0] == 0:
            raise ValueError("w0 must be a non-empty 1-D array")
        cdef double[::1] vv = self.v
        sv_init(&self.sv, &vv[0], vv.shape[0])

    @property
    def scale_factor(self):
        return self.sv.scale

    @property
    def sqnorm(self):
        """||w||^2 from the running norm."""
        return sv_sqnorm(&self.sv)

    def scale(self, double c):
        """w *= c; True when this renormalised."""
        return bool(sv_scale(&self.sv, c))

    def renormalize(self):
        sv_renormalize(&self.sv)

    def recompute_sqnorm(self):
        sv_recompute_sqnorm(&self.sv)

    def get(self, Py_ssize_t j):
        if not 0 <= j < self.sv.d:
            raise IndexError(j)
        return sv_get(&self.sv, j)

    def add_at(self, Py_ssize_t j, double delta):
        if not 0 <= j < self.sv.d:
            raise IndexError(j)
        sv_add_at(&self.sv, j, delta)

    def _check_row(self, data, indices):
        if data.shape != indices.shape or data.ndim != 1:
            raise ValueError("data and indices must be 1-D of the same length")
        if indices.size and (indices.min() < 0 or indices.max() >= self.sv.d):
            raise IndexError("index out of range")

    def add_row(self, double c, data, indices):
        """w += c x, x given by (data, indices) (float32/64, int32/64)."""
        data, indices = np.asarray(data), np.asarray(indices)
        self._check_row(data, indices)
        if data.size:
            _sv_add(self, c, data, indices)

    def dot_row(self, data, indices):
        data, indices = np.asarray(data), np.asarray(indices)
        self._check_row(data, indices)
        if data.size == 0:
            return 0.0
        return _sv_dot(self, data, indices)

    def to_array(self):
        return self.sv.scale * self.v


def _sv_add(ScaledVector w, double c, const floating[::1] data, const index_t[::1] ind):
    sv_add(&w.sv, c, &data[0], &ind[0], data.shape[0])


def _sv_dot(ScaledVector w, const floating[::1] data, const index_t[::1] ind):
    return sv_dot(&w.sv, &data[0], &ind[0], data.shape[0])


# ---------------------------------------------------------------------------------------
# 3. DriftJIT


def drift_tables(double log_a, int64_t T):
    """(apow, S, U) as filled by ``drift_table_fill``."""
    tab = np.empty(3 * (T + 1))
    cdef double[::1] t = tab
    drift_table_fill(&t[0], T, log_a)
    return tab[:T + 1], tab[T + 1:2 * T + 2], tab[2 * T + 2:]


cdef class DriftState:
    """A ``DriftJIT`` over owned arrays for ``x_j <- a x_j + c1 p[j] + c2 q[j]``: ``x``,
    ``last``, ``xsum`` (None unless ``track_sum``; starts at ``xsum0``, default zeros) and
    the caller's ``p``, ``q`` (copied; ``p`` may be changed in place after a catch-up)."""
    cdef DriftJIT st
    cdef readonly object x, last, xsum, p, q, tab

    def __init__(self, x0, double a, p, double c1, q=None, double c2=0.0, *, log_a=None,
                 int64_t T, bint track_sum=False, xsum0=None, int64_t t0=0):
        self.x = np.array(x0, dtype=np.float64)
        d = self.x.shape[0]
        if self.x.ndim != 1 or d == 0:
            raise ValueError("x0 must be a non-empty 1-D array")
        self.p = np.array(p, dtype=np.float64)
        self.q = None if q is None else np.array(q, dtype=np.float64)
        if self.p.shape != (d,) or (self.q is not None and self.q.shape != (d,)):
            raise ValueError("p and q must have the shape of x0")
        if not a >= 0 or T < 0:
            raise ValueError("need a >= 0 and T >= 0")
        cdef double la = (np.log(a) if a > 0 else -np.inf) if log_a is None else log_a
        self.last = np.empty(d, dtype=np.int64)
        self.tab = np.empty(3 * (T + 1))
        if track_sum:
            self.xsum = np.zeros(d) if xsum0 is None else np.array(xsum0, dtype=np.float64)
        cdef double[::1] xv = self.x, pv = self.p, tv = self.tab, qv, sv
        cdef int64_t[::1] lv = self.last
        cdef double* qp = NULL
        cdef double* sp = NULL
        if self.q is not None:
            qv = self.q
            qp = &qv[0]
        if track_sum:
            sv = self.xsum
            sp = &sv[0]
        drift_init(&self.st, &xv[0], &lv[0], sp, d, &tv[0], T, a, la, &pv[0], c1, qp, c2, t0)

    cdef Py_ssize_t _j(self, Py_ssize_t j, int64_t t) except -1:
        if not 0 <= j < self.st.d:
            raise IndexError(f"coordinate {j} out of range [0, {self.st.d})")
        if t - self.st.last[j] > self.st.T:
            raise ValueError(f"gap {t - self.st.last[j]} exceeds the tables (T = {self.st.T})")
        return j

    def set_params(self, double a, double c1, double c2=0.0, log_a=None):
        """New a, c1, c2 (same p, q); flush first."""
        if not a >= 0:
            raise ValueError("need a >= 0")
        cdef double la = (np.log(a) if a > 0 else -np.inf) if log_a is None else log_a
        drift_set_params(&self.st, a, la, self.st.p, c1, self.st.q, c2)

    def value(self, Py_ssize_t j, int64_t t):
        return drift_value(&self.st, self._j(j, t), t)

    def values(self, int64_t t):
        out = np.empty(self.st.d)
        cdef Py_ssize_t j
        for j in range(self.st.d):
            out[j] = drift_value(&self.st, self._j(j, t), t)
        return out

    def catch_up(self, Py_ssize_t j, int64_t t):
        drift_catch_up(&self.st, self._j(j, t), t)

    def step(self, Py_ssize_t j, int64_t t, double g):
        self._j(j, t)
        if self.last[j] != t:
            raise ValueError(f"coordinate {j} is current at {self.last[j]}, not {t}")
        drift_step(&self.st, j, t, g)

    def flush(self, int64_t t):
        cdef Py_ssize_t j
        for j in range(self.st.d):
            self._j(j, t)
        drift_flush(&self.st, t)
