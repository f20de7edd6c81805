# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Kernel matrices and kernel columns on CSR rows, for the kernel (mixup) SDCA loops.

Python level:

- :func:`make_kernel` validates a kernel choice into a :class:`KernelParams`;
- :func:`make_column_source` picks the :class:`ColumnSource` for a training set given as the
  original rows plus a mixup plan (``dualsolve.mixup.MixupPlan``; None for no mixing):
  ``DenseGram`` when the n x n matrix fits under ``max_gram_mb``, else ``CachedColumns``;
  ``PrecomputedGram`` for ``kernel="precomputed"``;
- :func:`kernel_matrix` and :func:`augmented_kernel_matrix` give dense kernel blocks for
  predictions (new points against training points, mixed ones included, without
  materialising the mixed rows);
- :func:`augmented_sqnorms` gives ``||x_p||^2`` of every augmented point from the identity
  ``||(1-r) x_a + r x_b||^2 = (1-r)^2 ||x_a||^2 + 2 r (1-r) <x_a, x_b> + r^2 ||x_b||^2``.

The C level (``cimport``) is documented in ``kernels.pxd``.
"""
from collections import namedtuple
import numbers

from cython.parallel cimport prange
from libc.stdint cimport int64_t
from libc.string cimport memset

import numpy as np
import scipy.sparse as sp

from dualsolve._core.csr cimport floating, index_t, sparse_dot, sparse_axpy
from dualsolve._validation import check_csr

__all__ = ["KernelParams", "make_kernel", "ColumnSource", "StoredGram", "DenseGram",
           "PrecomputedGram", "CachedColumns", "make_column_source", "kernel_matrix",
           "augmented_kernel_matrix", "augmented_sqnorms"]

_KINDS = {"linear": KERNEL_LINEAR, "rbf": KERNEL_RBF, "poly": KERNEL_POLY,
          "precomputed": KERNEL_PRECOMPUTED}
_MB = 1 << 20
# linear-Gram blocks are computed a few tens of MB at a time
_BLOCK_BYTES = 32 * _MB


# ---------------------------------------------------------------------------------------
# kernel parameters

KernelParams = namedtuple("KernelParams", ["kernel", "gamma", "coef0", "degree"])
KernelParams.__doc__ = """A validated kernel (see :func:`make_kernel`): ``kernel`` in
{"linear", "rbf", "poly", "precomputed"}, ``gamma`` > 0 (rbf, poly), ``coef0`` and ``degree``
(poly). Parameters a kernel does not use are 0 (1 for degree)."""


def make_kernel(kernel="rbf", gamma="scale", coef0=0.0, degree=3, X=None):
    """Validate a kernel choice (scikit-learn's conventions).

    ``linear``  <x, x'>;  ``rbf``  exp(-gamma ||x - x'||^2);
    ``poly``  (gamma <x, x'> + coef0)^degree;  ``precomputed``  the user's matrix.

    Parameters
    ----------
    kernel : str
    gamma : float > 0, "scale" or "auto"
        "scale" is ``1 / (n_features * X.var())`` (1 when the variance is 0), "auto" is
        ``1 / n_features``; both need ``X``. Ignored by linear and precomputed.
    coef0 : float
        Poly offset.
    degree : int >= 0
        Poly degree.
    X : sparse matrix or array, optional
        The training rows (only for ``gamma="scale"`` / ``"auto"``).

    Returns
    -------
    KernelParams
    """
    if not isinstance(kernel, str) or kernel not in _KINDS:
        raise ValueError(f"kernel must be one of {list(_KINDS)}; got {kernel!r}")
    if kernel in ("linear", "precomputed"):
        return KernelParams(kernel, 0.0, 0.0, 1)
    if isinstance(gamma, str):
        if gamma not in ("scale", "auto"):
            raise ValueError(f"gamma must be a positive number, 'scale' or 'auto'; got {gamma!r}")
        if X is None:
            raise ValueError(f"gamma={gamma!r} needs the training rows X")
        Xs = X if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        n, d = Xs.shape
        if gamma == "auto":
            gamma = 1.0 / d if d > 0 else 1.0       # no features: every point is the same
        else:
            if sp.issparse(Xs):
                mean = Xs.sum(dtype=np.float64) / (n * d)
                var = Xs.multiply(Xs).sum(dtype=np.float64) / (n * d) - mean * mean
            else:
                var = Xs.var()
            gamma = 1.0 / (d * var) if d > 0 and var > 0 else 1.0
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real):
        raise TypeError(f"gamma must be a real number, 'scale' or 'auto'; got {type(gamma).__name__}")
    gamma = float(gamma)
    if not (np.isfinite(gamma) and gamma > 0):
        raise ValueError(f"gamma must be finite and > 0; got {gamma}")
    if kernel == "rbf":
        return KernelParams(kernel, gamma, 0.0, 1)
    if isinstance(coef0, bool) or not isinstance(coef0, numbers.Real) or not np.isfinite(coef0):
        raise ValueError(f"coef0 must be a finite real number; got {coef0!r}")
    if isinstance(degree, bool) or not isinstance(degree, numbers.Integral) or degree < 0:
        raise ValueError(f"degree must be an integer >= 0; got {degree!r}")
    return KernelParams(kernel, gamma, float(coef0), int(degree))


cdef KernelSpec kernel_spec_from(object params) except *:
    cdef KernelSpec k
    if not isinstance(params, KernelParams):
        raise TypeError(f"kernel must be a KernelParams (see make_kernel); got {type(params).__name__}")
    k.kind = _KINDS[params.kernel]
    k.gamma = params.gamma
    k.coef0 = params.coef0
    k.degree = params.degree
    return k


def kernel_from_dots(dot, sqa, sqb, kernel):
    """Elementwise :c:func:`kernel_from_dot` on float64 arrays of one shape (for tests)."""
    cdef KernelSpec k = kernel_spec_from(kernel)
    dot, sqa, sqb = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (dot, sqa, sqb)))
    cdef const double[::1] d = np.ascontiguousarray(dot).ravel()
    cdef const double[::1] a = np.ascontiguousarray(sqa).ravel()
    cdef const double[::1] b = np.ascontiguousarray(sqb).ravel()
    out = np.empty(d.shape[0])
    cdef double[::1] o = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(d.shape[0]):
            o[i] = kernel_from_dot(&k, d[i], a[i], b[i])
    return out.reshape(dot.shape)


# ---------------------------------------------------------------------------------------
# small nogil helpers behind the Python functions


def _apply_kernel(const double[:, ::1] lin, const double[::1] sqa, const double[::1] sqb,
                  params, floating[:, ::1] out, int threads=1):
    """out[i, j] = kernel(lin[i, j], sqa[i], sqb[j]); out may be lin itself. Rows in
    ``threads`` threads (each entry on its own: the same result for any count)."""
    cdef KernelSpec k = kernel_spec_from(params)
    cdef Py_ssize_t i, j, rows = lin.shape[0], cols = lin.shape[1]
    if threads < 1:
        threads = 1
    with nogil:
        for i in prange(rows, num_threads=threads, schedule="static"):
            for j in range(cols):
                out[i, j] = <floating>kernel_from_dot(&k, lin[i, j], sqa[i], sqb[j])


def _pair_dots(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
               Py_ssize_t n_features, const int64_t[::1] a, const int64_t[::1] b,
               double[::1] out):
    """out[k] = <x_a[k], x_b[k]>: scatter x_a into a dense vector, one sparse dot with x_b."""
    cdef double[::1] work = np.zeros(max(n_features, 1))
    cdef Py_ssize_t k, s, e, t
    with nogil:
        for k in range(a.shape[0]):
            s = indptr[a[k]]
            e = indptr[a[k] + 1]
            for t in range(s, e):
                work[indices[t]] = data[t]
            out[k] = sparse_dot(&data[0] + indptr[b[k]], &indices[0] + indptr[b[k]],
                                indptr[b[k] + 1] - indptr[b[k]], &work[0])
            for t in range(s, e):
                work[indices[t]] = 0.0


def _check_square(const floating[:, ::1] K):
    """One tiled pass over K: (row, col) of the first non-finite entry or None, the largest
    |K_ij - K_ji| and the largest |K_ij|."""
    cdef Py_ssize_t n = K.shape[0], bi, bj, i, j, jlo, T = 64
    cdef Py_ssize_t bad_i = -1, bad_j = -1
    cdef double asym = 0.0, big = 0.0, u, v, diff
    with nogil:
        bi = 0
        while bi < n:
            bj = bi
            while bj < n:
                for i in range(bi, min(bi + T, n)):
                    jlo = i if bj == bi else bj
                    for j in range(jlo, min(bj + T, n)):
                        u = K[i, j]
                        v = K[j, i]
                        if not (u - u == 0.0):
                            if bad_i < 0:
                                bad_i, bad_j = i, j
                            continue
                        if not (v - v == 0.0):
                            if bad_i < 0:
                                bad_i, bad_j = j, i
                            continue
                        diff = u - v if u >= v else v - u
                        if diff > asym:
                            asym = diff
                        if u > big:
                            big = u
                        elif -u > big:
                            big = -u
                        if v > big:
                            big = v
                        elif -v > big:
                            big = -v
                bj += T
            bi += T
    return (None if bad_i < 0 else (bad_i, bad_j)), asym, big


cdef double* _f64(object arr) except? NULL:
    cdef double[::1] v = arr
    return &v[0] if v.shape[0] > 0 else NULL


cdef int64_t* _i64(object arr) except? NULL:
    cdef int64_t[::1] v = arr
    return &v[0] if v.shape[0] > 0 else NULL


# ---------------------------------------------------------------------------------------
# input preparation (Python level)


def _csr64(X, name="X"):
    """X checked (check_csr) as a float64 CSR matrix with sorted indices (no copy when it
    already is one), and its squared row norms."""
    Xc = check_csr(X, name)
    M = sp.csr_matrix((Xc.data, Xc.indices, Xc.indptr), shape=Xc.shape)
    if M.dtype != np.float64:
        M = M.astype(np.float64)
    if not M.has_sorted_indices:
        M = M.copy()
        M.sort_indices()
    return M, Xc.sqnorm


def _plan_arrays(plan, n_orig):
    """(a, b, r) of a plan as int64/int64/float64 arrays, checked against n_orig rows."""
    if plan is None:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    try:
        a, b, r, n_o = plan.a, plan.b, plan.r, plan.n_orig
    except AttributeError:
        raise TypeError(f"plan must be a MixupPlan (a, b, r, n_orig) or None; "
                        f"got {type(plan).__name__}") from None
    if int(n_o) != n_orig:
        raise ValueError(f"plan was made for {int(n_o)} originals but X has {n_orig} rows")
    a = np.ascontiguousarray(a, dtype=np.int64)
    b = np.ascontiguousarray(b, dtype=np.int64)
    r = np.ascontiguousarray(r, dtype=np.float64)
    if not (a.ndim == b.ndim == r.ndim == 1 and a.shape == b.shape == r.shape):
        raise ValueError("plan.a, plan.b and plan.r must be 1-D arrays of one length")
    if a.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n_orig):
        raise ValueError(f"plan.a / plan.b must index the {n_orig} originals")
    if r.size and not (np.isfinite(r).all() and r.min() >= 0.0 and r.max() <= 1.0):
        raise ValueError("plan.r must hold ratios in [0, 1]")
    return a, b, r


def _mix_sqnorms(X64, sq_o, a, b, r):
    """||x_p||^2 of the mixed points from the originals' norms and <x_a, x_b>."""
    ab = np.empty(a.shape[0])
    _pair_dots(X64.data, X64.indices, X64.indptr, X64.shape[1], a, b, ab)
    s = 1.0 - r
    sq = s * s * sq_o[a] + 2.0 * r * s * ab + r * r * sq_o[b]
    # a mixed point near 0 (e.g. x_b close to -x_a (1-r)/r) can round below 0
    return np.maximum(sq, 0.0)


def augmented_sqnorms(X_orig, plan=None):
    """Squared norms of the augmented points (originals, then mixed), without the mixed rows.

    Uses ``||(1-r) x_a + r x_b||^2 = (1-r)^2 ||x_a||^2 + 2 r (1-r) <x_a, x_b> + r^2 ||x_b||^2``
    with ``<x_a, x_b>`` from one sparse dot per mixed point (docs/mixup.md, "Kernel options").
    """
    X64, sq_o = _csr64(X_orig, "X_orig")
    a, b, r = _plan_arrays(plan, X64.shape[0])
    return np.concatenate([sq_o, _mix_sqnorms(X64, sq_o, a, b, r)])


def _augmented_rows(X64, a, b, r):
    """M @ X_o as CSR float64 (sorted, no duplicates); M as in MixupPlan.matrix(), built
    here because _core does not import the mixup package."""
    n_o, m = X64.shape[0], a.shape[0]
    if m == 0:
        return X64
    k = np.arange(n_o, n_o + m)
    M = sp.coo_matrix((np.concatenate([np.ones(n_o), 1.0 - r, r]),
                       (np.concatenate([np.arange(n_o), k, k]), np.concatenate([np.arange(n_o), a, b]))),
                      shape=(n_o + m, n_o)).tocsr()
    M.sum_duplicates()
    Xa = sp.csr_matrix(M @ X64)
    Xa.sum_duplicates()
    return Xa


def _use_dense(X):
    """Dense BLAS products for small or well-filled rows, scipy's sparse product otherwise."""
    n, d = X.shape
    return n * d <= (1 << 20) or (X.nnz >= 0.05 * n * d and n * d * 8 <= 256 * _MB)


def _kernel_blocks(A, B, sqa, sqb, params, out, threads=1):
    """out = kernel(A, B) for CSR float64 A, B, computed a block of rows of A at a time
    (the float64 linear block is the only temporary; out may be float32); the kernel
    values in ``threads`` threads (the products are BLAS's or scipy's)."""
    nA, nB = A.shape[0], B.shape[0]
    if nA == 0 or nB == 0:
        return out
    dense = _use_dense(A) and _use_dense(B)
    if dense:
        Ad, BdT = A.toarray(), np.ascontiguousarray(B.toarray().T)
    else:
        BT = sp.csr_matrix(B.T)
    step = max(1, _BLOCK_BYTES // (8 * nB))
    for s in range(0, nA, step):
        e = min(nA, s + step)
        if dense and out.dtype == np.float64:
            lin = out[s:e]
            np.matmul(Ad[s:e], BdT, out=lin)
        elif dense:
            lin = Ad[s:e] @ BdT
        else:
            lin = np.ascontiguousarray((A[s:e] @ BT).toarray(), dtype=np.float64)
        _apply_kernel(lin, sqa[s:e], sqb, params, out[s:e], threads)
    return out


# ---------------------------------------------------------------------------------------
# column sources


cdef class ColumnSource:
    """Columns of the symmetric n x n kernel matrix K of a training set, and its diagonal.

    The solver side is C (``column``, ``matvec``, ``diag``; see kernels.pxd). The Python
    methods below copy, for tests and inspection.
    """

    cdef const double* column(self, Py_ssize_t i) noexcept nogil:
        return NULL

    cdef void matvec(self, const double* v, double* out) noexcept nogil:
        pass

    def _set_diag(self, diag):
        # always a private copy: K.diagonal() is a read-only view (contiguous when n = 1)
        self._diag = np.array(diag, dtype=np.float64, order="C")
        self.diag = _f64(self._diag)

    def column_py(self, Py_ssize_t i):
        """A copy of ``K[:, i]`` (float64)."""
        if not 0 <= i < self.n:
            raise IndexError(f"column {i} out of range for n = {self.n}")
        cdef const double* col
        with nogil:
            col = self.column(i)
        if col == NULL:
            raise TypeError("ColumnSource is abstract: use DenseGram, PrecomputedGram or CachedColumns")
        return np.array(<double[:self.n]><double*>col, dtype=np.float64)

    def matvec_py(self, v):
        """``K @ v`` (float64); entries of v equal to 0 are skipped."""
        cdef const double[::1] vv = np.ascontiguousarray(v, dtype=np.float64)
        if vv.shape[0] != self.n:
            raise ValueError(f"v must have length {self.n}; got {vv.shape[0]}")
        out = np.empty(self.n)
        cdef double[::1] o = out
        if self.n:
            with nogil:
                self.matvec(&vv[0], &o[0])
        return out

    @property
    def diagonal(self):
        """``K[i, i]`` (a read-only float64 view)."""
        v = self._diag.view()
        v.flags.writeable = False
        return v

    @property
    def kernel(self):
        """The :class:`KernelParams` of the source."""
        names = {v: k for k, v in _KINDS.items()}
        return KernelParams(names[self.spec.kind], self.spec.gamma, self.spec.coef0, self.spec.degree)


cdef class StoredGram(ColumnSource):
    """The whole n x n matrix in memory; row i serves as column i (K is symmetric)."""

    def _set_matrix(self, K):
        cdef const double[:, ::1] k64
        cdef const float[:, ::1] k32
        self._matrix = K
        self.n = K.shape[0]
        self.K64 = NULL
        self.K32 = NULL
        if K.dtype == np.float64:
            k64 = K
            self.K64 = &k64[0, 0] if self.n else NULL
        else:
            k32 = K
            self.K32 = &k32[0, 0] if self.n else NULL
            self._scratch = np.empty(max(self.n, 1))
            self.scratch = _f64(self._scratch)

    cdef const double* column(self, Py_ssize_t i) noexcept nogil:
        cdef Py_ssize_t j, n = self.n
        cdef const float* row
        if self.K64 != NULL:
            return self.K64 + i * n
        row = self.K32 + i * n
        for j in range(n):
            self.scratch[j] = row[j]
        return self.scratch

    cdef void matvec(self, const double* v, double* out) noexcept nogil:
        cdef Py_ssize_t i, j, n = self.n
        cdef double vi
        cdef const double* r64
        cdef const float* r32
        memset(out, 0, n * sizeof(double))
        for i in range(n):
            vi = v[i]
            if vi == 0.0:
                continue
            if self.K64 != NULL:
                r64 = self.K64 + i * n
                for j in range(n):
                    out[j] += vi * r64[j]
            else:
                r32 = self.K32 + i * n
                for j in range(n):
                    out[j] += vi * r32[j]

    @property
    def matrix(self):
        """The stored matrix (a read-only view)."""
        v = self._matrix.view()
        v.flags.writeable = False
        return v

    @property
    def nbytes(self):
        return self._matrix.nbytes + self._diag.nbytes


cdef class DenseGram(StoredGram):
    """The whole kernel matrix of the augmented set, computed once.

    Parameters
    ----------
    X_orig : sparse matrix or array (n_orig, n_features)
    plan : MixupPlan or None
    kernel : KernelParams (not "precomputed")
    dtype : np.float64 or np.float32
        float32 halves the memory; ``column`` then converts into a float64 buffer.
    threads : int
        Threads for the kernel values (``n_jobs``); the matrix is the same for any count.

    The linear Gram of the augmented rows ``M X_o`` (materialised here for a moment: the
    original set is small) is computed a block of rows at a time (BLAS for small or
    well-filled rows, scipy's sparse product otherwise) and turned into kernel values in a
    nogil loop, so the float64 temporary is one block even for a float32 matrix.
    """

    def __init__(self, X_orig, plan, kernel, dtype=np.float64, threads=1):
        self.spec = kernel_spec_from(kernel)
        if self.spec.kind == KERNEL_PRECOMPUTED:
            raise ValueError("DenseGram computes a kernel; use PrecomputedGram for 'precomputed'")
        dtype = np.dtype(dtype)
        if dtype not in (np.float32, np.float64):
            raise ValueError(f"gram_dtype must be float32 or float64; got {dtype}")
        X64, sq_o = _csr64(X_orig, "X_orig")
        a, b, r = _plan_arrays(plan, X64.shape[0])
        Xa = _augmented_rows(X64, a, b, r)
        sq = np.concatenate([sq_o, _mix_sqnorms(X64, sq_o, a, b, r)])
        n = Xa.shape[0]
        K = np.empty((n, n), dtype=dtype)
        _kernel_blocks(Xa, Xa, sq, sq, kernel, K, threads)
        diag = kernel_from_dots(sq, sq, sq, kernel)
        # the diagonal from the norms: exactly 1 for rbf, and the same number as self.diag
        K[np.arange(n), np.arange(n)] = diag
        self._sqnorm = sq
        self._set_matrix(K)
        self._set_diag(K.diagonal())

    @property
    def sqnorms(self):
        """Squared norms of the augmented points."""
        return self._sqnorm.copy()


cdef class PrecomputedGram(StoredGram):
    """The user's kernel matrix of the AUGMENTED set (kernel="precomputed"; docs/mixup.md).

    A C-contiguous float64 or float32 array is used without a copy; anything else is
    converted once to float64. It must be square (n x n), finite and symmetric to 1e-10
    relative to its largest entry.
    """

    def __init__(self, K, n=None, name="precomputed"):
        if sp.issparse(K):
            raise TypeError(f"{name} must be a dense (n, n) array; got a sparse matrix")
        if isinstance(K, (str, bytes)) or K is None:
            raise TypeError(f"{name} must be a dense (n, n) array; got {type(K).__name__}")
        K = np.asarray(K)
        if K.dtype == object or K.dtype.kind not in "biuf":
            raise TypeError(f"{name} must hold real numbers; got dtype {K.dtype}")
        if K.ndim != 2 or K.shape[0] != K.shape[1]:
            raise ValueError(f"{name} must be a square (n, n) matrix; got shape {K.shape}")
        if n is not None and K.shape[0] != n:
            raise ValueError(f"{name} must be ({n}, {n}) (the augmented set: originals + mixed); "
                             f"got shape {K.shape}")
        if K.shape[0] == 0:
            raise ValueError(f"{name} is empty")
        if K.dtype not in (np.float32, np.float64):
            K = K.astype(np.float64)
        K = np.ascontiguousarray(K)
        bad, asym, big = _check_square(K)
        if bad is not None:
            raise ValueError(f"{name} contains NaN or infinity (first at [{bad[0]}, {bad[1]}]: "
                             f"{K[bad]})")
        if asym > 1e-10 * big:
            raise ValueError(f"{name} must be symmetric: max |K - K^T| = {asym:.3e} exceeds "
                             f"1e-10 * max |K| = {1e-10 * big:.3e}")
        self.spec.kind = KERNEL_PRECOMPUTED
        self.spec.gamma = 0.0
        self.spec.coef0 = 0.0
        self.spec.degree = 1
        self._set_matrix(K)
        self._set_diag(K.diagonal())


cdef inline void _col_axpy(double c, Py_ssize_t f, const double* cdata, const int64_t* cind,
                           const int64_t* cptr, const double* dense_cols,
                           const int64_t* dense_at, Py_ssize_t n_o, double* out) noexcept nogil:
    """out += c * X_o[:, f]: a contiguous (vectorised) axpy for a well-filled feature,
    a scatter over its nonzeros otherwise."""
    cdef Py_ssize_t k, off = dense_at[f]
    cdef const double* col
    if off >= 0:
        col = dense_cols + off
        for k in range(n_o):
            out[k] += c * col[k]
    else:
        for k in range(cptr[f], cptr[f + 1]):
            out[cind[k]] += c * cdata[k]


cdef inline void _lru_unlink(CachedColumns c, Py_ssize_t s) noexcept nogil:
    cdef Py_ssize_t p = c.prev[s], q = c.next[s]
    if p >= 0:
        c.next[p] = q
    else:
        c.head = q
    if q >= 0:
        c.prev[q] = p
    else:
        c.tail = p


cdef inline void _lru_push_front(CachedColumns c, Py_ssize_t s) noexcept nogil:
    c.prev[s] = -1
    c.next[s] = c.head
    if c.head >= 0:
        c.prev[c.head] = s
    c.head = s
    if c.tail < 0:
        c.tail = s


cdef class CachedColumns(ColumnSource):
    """Kernel columns computed on demand from the original rows and the mixup plan, through
    an LRU cache of ``cache_size`` MB (libsvm's design; at least two columns).

    Column i needs ``<x_p, x_i>`` for every augmented point p. With ``x_i`` the original or
    ``(1-r_i) x_a + r_i x_b`` (merged in a dense work vector of length n_features), the
    originals' inner products are ``g = X_o x_i``, accumulated feature by feature over the
    columns of X_o in the support of x_i (``sum_f x_i[f] X_o[:, f]``; O(nnz of those
    columns), at most nnz(X_o)); a mixed point p then has ``(1-r_p) g[a_p] + r_p g[b_p]``;
    squared norms come from the three-term identity (see :func:`augmented_sqnorms`); the
    kernel is :c:func:`kernel_from_dot` elementwise. Mixed rows are never materialised.

    ``column(i)`` returns a pointer into the cache, valid until the next ``column`` call
    (the two most recent columns stay valid: the cache holds at least two). ``matvec`` uses
    cached columns where present and computes the others into a scratch buffer without
    inserting them, so a gap check does not flush the solver's working set; for the linear
    kernel it is ``M X_o X_o^T M^T v``, O(nnz(X_o) + n).

    Parameters
    ----------
    X_orig : sparse matrix or array (n_orig, n_features)
    plan : MixupPlan or None
    kernel : KernelParams (not "precomputed")
    cache_size : float > 0
        Cache budget in MB.
    """

    def __init__(self, X_orig, plan, kernel, cache_size=200):
        self.spec = kernel_spec_from(kernel)
        if self.spec.kind == KERNEL_PRECOMPUTED:
            raise ValueError("CachedColumns computes a kernel; use PrecomputedGram for 'precomputed'")
        if isinstance(cache_size, bool) or not isinstance(cache_size, numbers.Real) \
                or not (np.isfinite(cache_size) and cache_size > 0):
            raise ValueError(f"cache_size must be a number of MB > 0; got {cache_size!r}")
        X64, sq_o = _csr64(X_orig, "X_orig")
        a, b, r = _plan_arrays(plan, X64.shape[0])
        n_o, d = X64.shape
        m = a.shape[0]
        n = n_o + m
        self.n, self.n_orig, self.n_mix, self.n_features = n, n_o, m, d
        sq = np.concatenate([sq_o, _mix_sqnorms(X64, sq_o, a, b, r)])
        self._set_diag(kernel_from_dots(sq, sq, sq, kernel))

        # one conversion of the (small) original set to float64 data and int64 indices, so
        # the loops need no fused types; by rows and by columns
        # a copy: X's own arrays are read-only while a solver runs, and the pointer is mutable
        rdata = np.array(X64.data, dtype=np.float64)
        rind = X64.indices.astype(np.int64)
        rptr = X64.indptr.astype(np.int64)
        Xcsc = sp.csc_matrix(X64)
        Xcsc.sort_indices()
        cdata = np.ascontiguousarray(Xcsc.data, dtype=np.float64)
        cind = Xcsc.indices.astype(np.int64)
        cptr = Xcsc.indptr.astype(np.int64)
        # a feature filled to a third or more is faster as a dense column (vectorised axpy)
        counts = np.diff(cptr)
        dense_feats = np.flatnonzero(3 * counts >= n_o)
        dense_at = np.full(max(d, 1), -1, dtype=np.int64)
        dense_at[dense_feats] = np.arange(dense_feats.shape[0], dtype=np.int64) * n_o
        dense_cols = np.ascontiguousarray(Xcsc[:, dense_feats].toarray().T, dtype=np.float64).ravel()

        col_bytes = 8 * n
        cap = int(min(n, max(2, (float(cache_size) * _MB) // col_bytes)))
        self.capacity = cap
        slab = np.empty(cap * n)            # pages are touched only when a slot is filled
        slot_of = np.full(n, -1, dtype=np.int64)
        owner = np.full(cap, -1, dtype=np.int64)
        prev = np.full(cap, -1, dtype=np.int64)
        nxt = np.full(cap, -1, dtype=np.int64)
        work = np.zeros(max(d, 1))
        scratch = np.empty(n)
        sq_arr = np.ascontiguousarray(sq)
        self._keep = dict(rdata=rdata, rind=rind, rptr=rptr, cdata=cdata, cind=cind, cptr=cptr,
                          dense_cols=dense_cols, dense_at=dense_at, a=a, b=b, r=r, sq=sq_arr,
                          work=work, slab=slab, slot_of=slot_of, owner=owner, prev=prev,
                          next=nxt, scratch=scratch)
        self.rdata, self.rindices, self.rindptr = _f64(rdata), _i64(rind), _i64(rptr)
        self.cdata, self.cindices, self.cindptr = _f64(cdata), _i64(cind), _i64(cptr)
        self.dense_cols, self.dense_at = _f64(dense_cols), _i64(dense_at)
        self.pa, self.pb, self.pr = _i64(a), _i64(b), _f64(r)
        self.sq = _f64(sq_arr)
        self.work = _f64(work)
        self.slab = _f64(slab)
        self.slot_of = _i64(slot_of)
        self.owner = _i64(owner)
        self.prev = _i64(prev)
        self.next = _i64(nxt)
        self.scratch = _f64(scratch)
        self.head = self.tail = -1
        self.used = 0
        self.hits = self.misses = self.evictions = 0

    # -- the kernel column itself ---------------------------------------------------------

    cdef void compute_column(self, Py_ssize_t i, double* out) noexcept nogil:
        """K[:, i] into out (n doubles), with no use of the cache."""
        cdef Py_ssize_t n_o = self.n_orig, m = self.n_mix, k, f, p, t
        cdef Py_ssize_t ra, rb
        cdef double rr, c, sqi
        cdef const double* rdata = self.rdata
        cdef const int64_t* rind = self.rindices
        cdef const int64_t* rptr = self.rindptr
        cdef double* work = self.work
        cdef const int64_t* pa = self.pa
        cdef const int64_t* pb = self.pb
        cdef const double* pr = self.pr
        memset(out, 0, n_o * sizeof(double))
        if i < n_o:
            for t in range(rptr[i], rptr[i + 1]):
                _col_axpy(rdata[t], rind[t], self.cdata, self.cindices, self.cindptr,
                          self.dense_cols, self.dense_at, n_o, out)
        else:
            k = i - n_o
            ra = pa[k]
            rb = pb[k]
            rr = pr[k]
            # merge (1-r) x_a + r x_b in work, then one axpy per feature of the union
            for t in range(rptr[ra], rptr[ra + 1]):
                work[rind[t]] += (1.0 - rr) * rdata[t]
            for t in range(rptr[rb], rptr[rb + 1]):
                work[rind[t]] += rr * rdata[t]
            for t in range(rptr[ra], rptr[ra + 1]):
                f = rind[t]
                c = work[f]
                if c != 0.0:
                    _col_axpy(c, f, self.cdata, self.cindices, self.cindptr,
                              self.dense_cols, self.dense_at, n_o, out)
                    work[f] = 0.0       # a feature shared with x_b is done; work ends all zero
            for t in range(rptr[rb], rptr[rb + 1]):
                f = rind[t]
                c = work[f]
                if c != 0.0:
                    _col_axpy(c, f, self.cdata, self.cindices, self.cindptr,
                              self.dense_cols, self.dense_at, n_o, out)
                    work[f] = 0.0
        for k in range(m):
            rr = pr[k]
            out[n_o + k] = (1.0 - rr) * out[pa[k]] + rr * out[pb[k]]
        if self.spec.kind != KERNEL_LINEAR:
            sqi = self.sq[i]
            for p in range(n_o + m):
                out[p] = kernel_from_dot(&self.spec, out[p], self.sq[p], sqi)
        # the same number as diag[i] (the dot above differs from ||x_i||^2 by rounding)
        out[i] = self.diag[i]

    # -- the LRU cache --------------------------------------------------------------------

    cdef const double* column(self, Py_ssize_t i) noexcept nogil:
        cdef Py_ssize_t s = self.slot_of[i]
        if s >= 0:
            self.hits += 1
            if s != self.head:
                _lru_unlink(self, s)
                _lru_push_front(self, s)
            return self.slab + s * self.n
        self.misses += 1
        if self.used < self.capacity:
            s = self.used
            self.used += 1
        else:
            s = self.tail
            self.slot_of[self.owner[s]] = -1
            self.evictions += 1
            _lru_unlink(self, s)
        self.compute_column(i, self.slab + s * self.n)
        self.owner[s] = i
        self.slot_of[i] = s
        _lru_push_front(self, s)
        return self.slab + s * self.n

    cdef void matvec(self, const double* v, double* out) noexcept nogil:
        cdef Py_ssize_t n = self.n, n_o = self.n_orig, i, j, k, s
        cdef double vi, rr
        cdef const double* col
        cdef double* u
        if self.spec.kind == KERNEL_LINEAR:
            # K v = M X_o (X_o^T (M^T v)): u = M^T v, w = X_o^T u, out = M (X_o w)
            u = self.scratch
            for j in range(n_o):
                u[j] = v[j]
            for k in range(self.n_mix):
                vi = v[n_o + k]
                if vi != 0.0:
                    rr = self.pr[k]
                    u[self.pa[k]] += (1.0 - rr) * vi
                    u[self.pb[k]] += rr * vi
            for j in range(n_o):
                if u[j] != 0.0:
                    sparse_axpy(u[j], self.rdata + self.rindptr[j], self.rindices + self.rindptr[j],
                                self.rindptr[j + 1] - self.rindptr[j], self.work)
            for j in range(n_o):
                out[j] = sparse_dot(self.rdata + self.rindptr[j], self.rindices + self.rindptr[j],
                                    self.rindptr[j + 1] - self.rindptr[j], self.work)
            for k in range(self.n_mix):
                rr = self.pr[k]
                out[n_o + k] = (1.0 - rr) * out[self.pa[k]] + rr * out[self.pb[k]]
            memset(self.work, 0, self.n_features * sizeof(double))
            return
        memset(out, 0, n * sizeof(double))
        for i in range(n):
            vi = v[i]
            if vi == 0.0:
                continue
            s = self.slot_of[i]
            if s >= 0:
                col = self.slab + s * n
            else:
                self.compute_column(i, self.scratch)
                col = self.scratch
            for j in range(n):
                out[j] += vi * col[j]

    # -- Python helpers -------------------------------------------------------------------

    def clear_cache(self):
        """Forget every cached column (and reset the hit/miss/eviction counters)."""
        self._keep["slot_of"][:] = -1
        self.head = self.tail = -1
        self.used = 0
        self.hits = self.misses = self.evictions = 0

    def cached_columns(self):
        """Columns in the cache, most recently used first."""
        out = []
        cdef Py_ssize_t s = self.head
        while s >= 0:
            out.append(self.owner[s])
            s = self.next[s]
        return out

    @property
    def sqnorms(self):
        """Squared norms of the augmented points (three-term identity for mixed ones)."""
        return np.array(self._keep["sq"])

    @property
    def nbytes(self):
        """Memory held: the cache slab at full occupancy plus the originals and work."""
        return sum(x.nbytes for x in self._keep.values()) + self._diag.nbytes


# ---------------------------------------------------------------------------------------
# factory and dense kernel blocks


def make_column_source(X_orig, plan, kernel, *, precomputed=None, gram_dtype=np.float64,
                       max_gram_mb=1024, cache_size=200, threads=1):
    """The :class:`ColumnSource` for a (mixup-)augmented training set.

    Parameters
    ----------
    X_orig : sparse matrix or array (n_orig, n_features), or None for "precomputed"
        The original rows (float32/float64, int32/int64 indices).
    plan : MixupPlan or None
        The mixed points (``dualsolve.mixup.mixup_augment``); None: the originals only.
    kernel : KernelParams
        From :func:`make_kernel`.
    precomputed : array (n, n), optional
        The kernel matrix of the augmented set (``n = n_orig + n_mix``), required for
        ``kernel="precomputed"`` and only then.
    gram_dtype : np.float64 or np.float32
        Storage of a dense Gram matrix.
    max_gram_mb : float > 0
        The dense matrix is used when ``n^2 * itemsize`` fits in this many MB.
    cache_size : float > 0
        Otherwise, the MB of the column cache of :class:`CachedColumns`.
    threads : int
        Threads for a dense Gram matrix's kernel values.

    Returns
    -------
    DenseGram, CachedColumns or PrecomputedGram
    """
    cdef KernelSpec k = kernel_spec_from(kernel)
    if k.kind == KERNEL_PRECOMPUTED:
        if precomputed is None:
            raise ValueError("kernel='precomputed' needs the precomputed kernel matrix")
        n = None
        if plan is not None:
            n = int(plan.n_orig) + len(plan.a)
        elif X_orig is not None:
            n = X_orig.shape[0]
        return PrecomputedGram(precomputed, n, "precomputed")
    if precomputed is not None:
        raise ValueError(f"precomputed is only used with kernel='precomputed'; got kernel={kernel.kernel!r}")
    dtype = np.dtype(gram_dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"gram_dtype must be float32 or float64; got {dtype}")
    if isinstance(max_gram_mb, bool) or not isinstance(max_gram_mb, numbers.Real) \
            or not max_gram_mb >= 0:
        raise ValueError(f"max_gram_mb must be a number >= 0; got {max_gram_mb!r}")
    if X_orig is None:
        raise TypeError("X_orig is required unless kernel='precomputed'")
    n_o = X_orig.shape[0] if hasattr(X_orig, "shape") else len(X_orig)
    n = n_o + (0 if plan is None else len(plan.a))
    if n * n * dtype.itemsize <= max_gram_mb * _MB:
        return DenseGram(X_orig, plan, kernel, dtype, threads)
    return CachedColumns(X_orig, plan, kernel, cache_size)


def kernel_matrix(A, B, kernel, sqa=None, sqb=None):
    """Dense kernel between the rows of A and the rows of B (float64, shape (n_A, n_B)).

    Parameters
    ----------
    A, B : sparse matrix or array, same number of columns
    kernel : KernelParams (not "precomputed")
    sqa, sqb : float64 arrays, optional
        Squared row norms of A / B if already known (used by rbf).
    """
    kernel_spec_from(kernel)
    if kernel.kernel == "precomputed":
        raise ValueError("kernel_matrix cannot evaluate kernel='precomputed'")
    A64, sa = _csr64(A, "A")
    B64, sb = _csr64(B, "B")
    if A64.shape[1] != B64.shape[1]:
        raise ValueError(f"A has {A64.shape[1]} features but B has {B64.shape[1]}")
    sa = _norms_arg(sqa, sa, A64.shape[0], "sqa")
    sb = _norms_arg(sqb, sb, B64.shape[0], "sqb")
    return _kernel_blocks(A64, B64, sa, sb, kernel, np.empty((A64.shape[0], B64.shape[0])))


def _norms_arg(given, computed, n, name):
    if given is None:
        return np.ascontiguousarray(computed, dtype=np.float64)
    given = np.ascontiguousarray(given, dtype=np.float64)
    if given.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},); got {given.shape}")
    return given


def augmented_kernel_matrix(X_new, X_orig, plan, rows, kernel):
    """Kernel between new points and augmented training points, without the mixed rows.

    ``K[q, j] = k(x_new_q, x_p)`` for ``p = rows[j]`` in the augmented numbering (originals
    ``0..n_orig-1``, then mixed). Only the originals behind ``rows`` are touched:
    ``G = X_new X_o[U]^T`` for that set U, then ``<x_new, x_p> = (1-r) G[:, a] + r G[:, b]``
    for a mixed p, and the three-term norm identity.

    Parameters
    ----------
    X_new : sparse matrix or array (n_new, n_features)
    X_orig : sparse matrix or array (n_orig, n_features)
    plan : MixupPlan or None
    rows : int array, or None for every augmented point
    kernel : KernelParams (not "precomputed")

    Returns
    -------
    float64 array (n_new, len(rows))
    """
    kernel_spec_from(kernel)
    if kernel.kernel == "precomputed":
        raise ValueError("augmented_kernel_matrix cannot evaluate kernel='precomputed'")
    X64, sq_o = _csr64(X_orig, "X_orig")
    N64, sq_new = _csr64(X_new, "X_new")
    if N64.shape[1] != X64.shape[1]:
        raise ValueError(f"X_new has {N64.shape[1]} features but X_orig has {X64.shape[1]}")
    a, b, r = _plan_arrays(plan, X64.shape[0])
    n_o, n = X64.shape[0], X64.shape[0] + a.shape[0]
    rows = np.arange(n) if rows is None else np.asarray(rows)
    if rows.ndim != 1 or rows.dtype.kind not in "iu":
        raise ValueError(f"rows must be a 1-D integer array; got {rows.dtype} with shape {rows.shape}")
    rows = rows.astype(np.int64)
    if rows.size and (rows.min() < 0 or rows.max() >= n):
        raise ValueError(f"rows must lie in [0, {n}) (the augmented set)")
    is_mix = rows >= n_o
    k = rows[is_mix] - n_o
    ka, kb, kr = a[k], b[k], r[k]
    need = np.unique(np.concatenate([rows[~is_mix], ka, kb]))
    sub = X64[need]
    G = np.empty((N64.shape[0], need.shape[0]))
    _kernel_blocks(N64, sub, sq_new, sq_o[need], make_kernel("linear"), G)
    lin = np.empty((N64.shape[0], rows.shape[0]))
    lin[:, ~is_mix] = G[:, np.searchsorted(need, rows[~is_mix])]
    lin[:, is_mix] = ((1.0 - kr) * G[:, np.searchsorted(need, ka)]
                      + kr * G[:, np.searchsorted(need, kb)])
    if kernel.kernel == "linear":
        return lin
    sq = np.empty(rows.shape[0])
    sq[~is_mix] = sq_o[rows[~is_mix]]
    sq[is_mix] = _mix_sqnorms(X64, sq_o, ka, kb, kr)
    _apply_kernel(lin, np.ascontiguousarray(sq_new), sq, kernel, lin)
    return lin
