# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Python access to the row kernels of ``csr.pxd`` (no copy of the matrix)."""
import numpy as np

from dualsolve._validation import check_csr


def _rows_dot(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
              const double[::1] w, double[::1] out):
    cdef Py_ssize_t i, s
    with nogil:
        for i in range(out.shape[0]):
            s = indptr[i]
            out[i] = sparse_dot(&data[0] + s, &indices[0] + s, indptr[i + 1] - s, &w[0])


def _rows_sqnorm(const floating[::1] data, const index_t[::1] indptr, double[::1] out):
    cdef Py_ssize_t i, s
    with nogil:
        for i in range(out.shape[0]):
            s = indptr[i]
            out[i] = sparse_sqnorm(&data[0] + s, indptr[i + 1] - s)


def _rows_axpy(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
               const double[::1] coef, double[::1] w):
    cdef Py_ssize_t i, s
    with nogil:
        for i in range(coef.shape[0]):
            s = indptr[i]
            sparse_axpy(coef[i], &data[0] + s, &indices[0] + s, indptr[i + 1] - s, &w[0])


def row_dots(X, w):
    """``X @ w`` row by row with the solvers' sparse dot (float64 result)."""
    Xc = check_csr(X, allow_nonfinite=True)
    w = np.ascontiguousarray(w, dtype=np.float64)
    if w.shape != (Xc.shape[1],):
        raise ValueError(f"w must have shape ({Xc.shape[1]},); got {w.shape}")
    out = np.empty(Xc.shape[0])
    _rows_dot(Xc.data, Xc.indices, Xc.indptr, w, out)
    return out


def row_sqnorms(X):
    """Squared Euclidean norm of every row (stored entries; duplicates are not merged)."""
    Xc = check_csr(X, allow_nonfinite=True)
    out = np.empty(Xc.shape[0])
    _rows_sqnorm(Xc.data, Xc.indptr, out)
    return out


def rows_axpy(X, coef, w=None):
    """``w + X^T coef`` accumulated row by row with the solvers' sparse axpy."""
    Xc = check_csr(X, allow_nonfinite=True)
    coef = np.ascontiguousarray(coef, dtype=np.float64)
    if coef.shape != (Xc.shape[0],):
        raise ValueError(f"coef must have shape ({Xc.shape[0]},); got {coef.shape}")
    w = np.zeros(Xc.shape[1]) if w is None else np.array(w, dtype=np.float64)
    _rows_axpy(Xc.data, Xc.indices, Xc.indptr, coef, w)
    return w


def _scan(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
          double[::1] sqnorm):
    """One pass over X: squared row norms into sqnorm; returns (position of the first
    non-finite value or -1, True when every row's indices strictly increase, smallest and
    largest column index -- exact only when the rows are strictly increasing)."""
    cdef Py_ssize_t i, k, start, end, bad = -1
    cdef bint strict = True
    cdef double s0, s1
    cdef index_t lo = 0, hi = 0
    if indices.shape[0] > 0:
        lo = indices[0]
        hi = indices[0]
    with nogil:
        for i in range(indptr.shape[0] - 1):
            start = indptr[i]
            end = indptr[i + 1]
            s0 = 0.0
            s1 = 0.0
            k = start
            while k + 1 < end:
                s0 += <double>data[k] * data[k]
                s1 += <double>data[k + 1] * data[k + 1]
                k += 2
            if k < end:
                s0 += <double>data[k] * data[k]
            sqnorm[i] = s0 + s1
            if end > start:
                if indices[start] < lo:
                    lo = indices[start]
                if indices[end - 1] > hi:
                    hi = indices[end - 1]
                if strict:
                    for k in range(start + 1, end):
                        if indices[k] <= indices[k - 1]:
                            strict = False
                            break
            if not (sqnorm[i] <= 1.7976931348623157e308):   # inf or nan (or overflow)
                if bad < 0:
                    for k in range(start, end):
                        if not (data[k] - data[k] == 0.0):
                            bad = k
                            break
    return bad, strict, lo, hi


def scan_rows(data, indices, indptr):
    """(squared row norms, first non-finite position or -1, rows strictly sorted,
    smallest column index, largest column index)."""
    sqnorm = np.empty(indptr.shape[0] - 1)
    bad, strict, lo, hi = _scan(data, indices, indptr, sqnorm)
    if not strict and indices.shape[0]:
        lo, hi = indices.min(), indices.max()
    return sqnorm, bad, strict, lo, hi


def _dup_scan(const index_t[::1] indices, const index_t[::1] indptr, Py_ssize_t d):
    cdef Py_ssize_t[::1] last = np.full(d, -1, dtype=np.intp)
    cdef Py_ssize_t i, k, j
    cdef bint found = False
    with nogil:
        for i in range(indptr.shape[0] - 1):
            for k in range(indptr[i], indptr[i + 1]):
                j = indices[k]
                if last[j] == i:
                    found = True
                    break
                last[j] = i
            if found:
                break
    return found


def has_duplicates(indices, indptr, n_features):
    """True when some row stores the same column twice (one O(nnz) pass, no copy)."""
    return bool(_dup_scan(indices, indptr, n_features))
