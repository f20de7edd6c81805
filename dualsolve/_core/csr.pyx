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
    Xc = check_csr(X)
    w = np.ascontiguousarray(w, dtype=np.float64)
    if w.shape != (Xc.shape[1],):
        raise ValueError(f"w must have shape ({Xc.shape[1]},); got {w.shape}")
    out = np.empty(Xc.shape[0])
    _rows_dot(Xc.data, Xc.indices, Xc.indptr, w, out)
    return out


def row_sqnorms(X):
    """Squared Euclidean norm of every row (stored entries; duplicates are not merged)."""
    Xc = check_csr(X)
    out = np.empty(Xc.shape[0])
    _rows_sqnorm(Xc.data, Xc.indptr, out)
    return out


def rows_axpy(X, coef, w=None):
    """``w + X^T coef`` accumulated row by row with the solvers' sparse axpy."""
    Xc = check_csr(X)
    coef = np.ascontiguousarray(coef, dtype=np.float64)
    if coef.shape != (Xc.shape[0],):
        raise ValueError(f"coef must have shape ({Xc.shape[0]},); got {coef.shape}")
    w = np.zeros(Xc.shape[1]) if w is None else np.array(w, dtype=np.float64)
    _rows_axpy(Xc.data, Xc.indices, Xc.indptr, coef, w)
    return w


# Codes of check_structure's first finding (0: none).
cdef enum:
    S_OK, S_INDPTR, S_INDEX, S_NONFINITE, S_DUPLICATE, S_OVERFLOW, S_UNDERFLOW
STRUCT_OK, STRUCT_INDPTR, STRUCT_INDEX, STRUCT_NONFINITE = S_OK, S_INDPTR, S_INDEX, S_NONFINITE
STRUCT_DUPLICATE, STRUCT_OVERFLOW, STRUCT_UNDERFLOW = S_DUPLICATE, S_OVERFLOW, S_UNDERFLOW
cdef double DBL_MAX = 1.7976931348623157e308
cdef double DBL_MIN = 2.2250738585072014e-308      # smallest normal double


cdef int _sorted_has_repeat(index_t* buf, Py_ssize_t m) noexcept nogil:
    """Sort buf[:m] (shell sort: rows are short, and no allocation) and report a repeat."""
    cdef Py_ssize_t gap = 1, i, j
    cdef index_t v
    while gap < m // 3:
        gap = 3 * gap + 1
    while gap >= 1:
        for i in range(gap, m):
            v = buf[i]
            j = i
            while j >= gap and buf[j - gap] > v:
                buf[j] = buf[j - gap]
                j -= gap
            buf[j] = v
        gap //= 3
    for i in range(1, m):
        if buf[i] == buf[i - 1]:
            return 1
    return 0


def _structure(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
               Py_ssize_t n_cols, double[::1] sqnorm):
    """One O(nnz) pass, trusting nothing: indptr first (so that no row range is read before
    it is known to lie inside the arrays), then per row the column range, NaN/inf, squared
    norm and repeated columns (only rows whose columns do not strictly increase are sorted,
    in a scratch copy as long as the longest row). Returns (code, row, position) of the
    first finding (code STRUCT_*), and whether every row strictly increases."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, nnz = indices.shape[0]
    cdef Py_ssize_t i, k, start = 0, end = 0, longest = 0, pos = -1
    cdef int code = S_OK
    cdef bint strict = True, row_strict
    cdef double s0, s1
    cdef index_t j
    cdef index_t[::1] scratch
    if n < 0 or indptr[0] != 0 or data.shape[0] != nnz:
        return S_INDPTR, 0, 0, False
    for i in range(n):
        if indptr[i + 1] < indptr[i] or indptr[i + 1] > nnz:
            return S_INDPTR, i, indptr[i + 1], False
        if indptr[i + 1] - indptr[i] > longest:
            longest = indptr[i + 1] - indptr[i]
    scratch = np.empty(max(longest, 1), dtype=np.int32 if index_t is int32_t else np.int64)
    with nogil:
        for i in range(n):
            start = indptr[i]
            end = indptr[i + 1]
            s0 = 0.0
            s1 = 0.0
            row_strict = True
            for k in range(start, end):
                j = indices[k]
                if j < 0 or j >= n_cols:
                    code, pos = S_INDEX, k
                    break
                if not (data[k] - data[k] == 0.0):
                    code, pos = S_NONFINITE, k
                    break
                if k > start and j <= indices[k - 1]:
                    row_strict = False
                if (k - start) & 1:
                    s1 += <double>data[k] * data[k]
                else:
                    s0 += <double>data[k] * data[k]
            if code != S_OK:
                break
            sqnorm[i] = s0 + s1
            if sqnorm[i] > DBL_MAX:
                code, pos = S_OVERFLOW, start
                break
            if sqnorm[i] < DBL_MIN:          # a zero row, or squares lost to underflow
                for k in range(start, end):
                    if data[k] != 0.0:
                        code, pos = S_UNDERFLOW, k
                        break
                if code != S_OK:
                    break
            if not row_strict:
                strict = False
                for k in range(start, end):
                    scratch[k - start] = indices[k]
                if _sorted_has_repeat(&scratch[0], end - start):
                    code, pos = S_DUPLICATE, start
                    break
    if code != S_OK:
        return code, i, pos, False
    return S_OK, -1, -1, strict


def check_structure(data, indices, indptr, Py_ssize_t n_cols):
    """Validate the CSR arrays of an (indptr.size - 1) x n_cols matrix in one pass with no
    O(n_cols) memory: ``(code, row, position, sqnorm, strictly_sorted)`` where code is one of
    STRUCT_OK, STRUCT_INDPTR (indptr not starting at 0, decreasing, or past nnz; or data and
    indices of different lengths), STRUCT_INDEX (a column outside [0, n_cols)),
    STRUCT_NONFINITE (NaN or inf), STRUCT_DUPLICATE (a row repeating a column),
    STRUCT_OVERFLOW / STRUCT_UNDERFLOW (a row whose squared norm overflows, or has nonzero
    entries but is below the smallest normal double); row and position locate the first
    finding. ``sqnorm`` holds the squared row norms when code is
    STRUCT_OK. ``indices`` and ``indptr`` must have the same dtype (int32 or int64)."""
    sqnorm = np.empty(max(indptr.shape[0] - 1, 0))
    if indptr.shape[0] == 0:
        return STRUCT_INDPTR, 0, 0, sqnorm, False
    code, row, pos, strict = _structure(data, indices, indptr, n_cols, sqnorm)
    return code, row, pos, sqnorm, strict
