# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Python access to the row kernels of ``csr.pxd`` (no copy of the matrix)."""
from cython.parallel cimport prange, threadid
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset

import numpy as np

from dualsolve._core.blocks cimport (Blocks, BLOCKS_MIN_NNZ, blocks_init, blocks_own,
                                     blocks_free, blocks_add_copies)

from dualsolve._validation import check_csr


def _rows_dot(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
              const double[::1] w, double[::1] out):
    with nogil:
        _dot_rows(&data[0], &indices[0], &indptr[0], &w[0], &out[0], out.shape[0], 1)


def _rows_sqnorm(const floating[::1] data, const index_t[::1] indptr, double[::1] out):
    cdef Py_ssize_t i, s
    with nogil:
        for i in range(out.shape[0]):
            s = indptr[i]
            out[i] = sparse_sqnorm(&data[0] + s, indptr[i + 1] - s)


def _rows_axpy(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
               const double[::1] coef, double[::1] w):
    with nogil:
        _add_rows(&data[0], &indices[0], &indptr[0], &coef[0], &w[0], 0, coef.shape[0])


cdef class RowPasses:
    """``X @ w`` and ``X^T c`` over a float64 CSR matrix in ``threads`` threads: the scores
    row by row (each row its own: the same values for any count), ``X^T c`` in the blocks
    of rows of ``blocks.pxd`` (block b >= 1 into its own copy, kept for the object's life,
    added by ranges of features in block order: the same result for the same count).
    Where X has fewer than 2^18 nonzeros, or one thread, one block. No copy of X: the
    caller keeps it alive (the object holds references)."""
    cdef object data_ref, indices_ref, indptr_ref
    cdef const double* data
    cdef const void* indices
    cdef const void* indptr
    cdef bint wide                 # int64 indices
    cdef Py_ssize_t n, d
    cdef Blocks team
    cdef readonly int threads

    def __cinit__(self, X, int threads=1):
        cdef const double[::1] dv = X.data
        self.data_ref, self.indices_ref, self.indptr_ref = X.data, X.indices, X.indptr
        self.n, self.d = X.shape
        self.data = &dv[0] if dv.shape[0] > 0 else NULL
        cdef const int32_t[::1] i32, p32
        cdef const int64_t[::1] i64, p64
        self.wide = X.indices.dtype == np.int64
        if X.indptr.dtype != X.indices.dtype:
            raise TypeError("indices and indptr must have one dtype")
        if self.wide:
            i64, p64 = X.indices, X.indptr
            self.indices = &i64[0] if i64.shape[0] > 0 else NULL
            self.indptr = &p64[0]
        else:
            i32, p32 = X.indices, X.indptr
            self.indices = &i32[0] if i32.shape[0] > 0 else NULL
            self.indptr = &p32[0]
        self.team.rows = NULL
        self.team.own = NULL
        self.team.part = NULL
        self.team.sums = NULL
        cdef bint ok
        if self.wide:
            ok = blocks_init(&self.team, <const int64_t*>self.indptr, self.n, self.d, threads,
                             BLOCKS_MIN_NNZ, self.d, 0)
        else:
            ok = blocks_init(&self.team, <const int32_t*>self.indptr, self.n, self.d, threads,
                             BLOCKS_MIN_NNZ, self.d, 0)
        if not ok:
            raise MemoryError("RowPasses: no memory for the blocks")
        self.threads = <int>self.team.size

    def __dealloc__(self):
        blocks_free(&self.team)

    def dot(self, const double[::1] w, double[::1] out):
        """out = X @ w."""
        if w.shape[0] != self.d or out.shape[0] != self.n:
            raise ValueError("RowPasses.dot: w must have n_features entries, out n_rows")
        with nogil:
            if self.wide:
                _dot_rows(self.data, <const int64_t*>self.indices, <const int64_t*>self.indptr,
                          &w[0] if self.d > 0 else NULL, &out[0] if self.n > 0 else NULL,
                          self.n, self.team.size)
            else:
                _dot_rows(self.data, <const int32_t*>self.indices, <const int32_t*>self.indptr,
                          &w[0] if self.d > 0 else NULL, &out[0] if self.n > 0 else NULL,
                          self.n, self.team.size)

    def tdot(self, const double[::1] c, double[::1] out):
        """out = X^T c (out is overwritten)."""
        if c.shape[0] != self.n or out.shape[0] != self.d:
            raise ValueError("RowPasses.tdot: c must have n_rows entries, out n_features")
        if self.d == 0:
            return
        with nogil:
            if self.wide:
                _axpy_blocks(self.data, <const int64_t*>self.indices,
                             <const int64_t*>self.indptr, &c[0] if self.n > 0 else NULL,
                             &out[0], self.d, &self.team)
            else:
                _axpy_blocks(self.data, <const int32_t*>self.indices,
                             <const int32_t*>self.indptr, &c[0] if self.n > 0 else NULL,
                             &out[0], self.d, &self.team)


cdef void _dot_rows(const floating* data, const index_t* indices, const index_t* indptr,
                    const double* w, double* out, Py_ssize_t n, int threads) noexcept nogil:
    """out = X w, row by row (each row its own: the same values for any thread count)."""
    cdef Py_ssize_t i, s
    for i in prange(n, num_threads=threads, schedule="static"):
        s = indptr[i]
        out[i] = sparse_dot(data + s, indices + s, indptr[i + 1] - s, w)


cdef void _add_rows(const floating* data, const index_t* indices, const index_t* indptr,
                    const double* c, double* out, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """out += sum over rows lo .. hi - 1 of c_i x_i."""
    cdef Py_ssize_t i, s
    for i in range(lo, hi):
        if c[i] != 0.0:
            s = indptr[i]
            sparse_axpy(c[i], data + s, indices + s, indptr[i + 1] - s, out)


cdef void _axpy_blocks(const double* data, const index_t* indices, const index_t* indptr,
                       const double* c, double* out, Py_ssize_t d,
                       const Blocks* team) noexcept nogil:
    """out = X^T c in the team's blocks of rows, block b >= 1 into its own copy."""
    cdef Py_ssize_t b
    cdef double* dst
    if team.size == 1:
        memset(out, 0, d * sizeof(double))
        _add_rows(data, indices, indptr, c, out, 0, team.rows[1])
        return
    for b in prange(team.size, num_threads=team.size, schedule="static", chunksize=1):
        dst = out if b == 0 else blocks_own(team, b)
        memset(dst, 0, d * sizeof(double))
        _add_rows(data, indices, indptr, c, dst, team.rows[b], team.rows[b + 1])
    blocks_add_copies(team, out, 1, 0)


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


ctypedef struct Finding:
    # what a range of rows gave _structure_rows: the first finding in it (code S_*, its
    # row and position), and whether every row of it strictly increases
    int code
    Py_ssize_t row
    Py_ssize_t pos
    bint strict


cdef void _structure_rows(const floating* data, const index_t* indices,
                          const index_t* indptr, Py_ssize_t lo, Py_ssize_t hi,
                          Py_ssize_t n_cols, double* sqnorm, index_t* scratch,
                          Finding* out) noexcept nogil:
    """Rows [lo, hi) (indptr already checked): per row the column range, NaN/inf, squared
    norm and repeated columns (only rows whose columns do not strictly increase are sorted,
    in ``scratch``, as long as the longest row)."""
    cdef Py_ssize_t i, k, start, end
    cdef double s0, s1, x0, x1, f0, f1
    cdef index_t j0, j1, prev
    cdef size_t cols = <size_t>n_cols
    cdef bint outside, unsorted, row_strict
    out.code, out.row, out.pos, out.strict = S_OK, -1, -1, True
    for i in range(lo, hi):
        start = indptr[i]
        end = indptr[i + 1]
        # the common case without a branch an entry (news20: 11 ms against 29 ms testing
        # each entry and leaving at the first finding): flags gathered over the row, the
        # column range from the row's ends when it strictly increases, the squared norm
        # in two sums (even and odd offsets); x - x is 0 for every finite x and NaN
        # otherwise, so their sums are 0 exactly when the row is finite (two sums of each,
        # so that no chain of dependent additions sets the pace)
        s0 = 0.0
        s1 = 0.0
        f0 = 0.0
        f1 = 0.0
        outside = False
        unsorted = False
        prev = -1                   # below any valid column; a negative one is outside
        k = start
        while k + 1 < end:
            j0 = indices[k]
            j1 = indices[k + 1]
            unsorted |= (j0 <= prev) | (j1 <= j0)
            prev = j1
            x0 = <double>data[k]
            x1 = <double>data[k + 1]
            f0 += x0 - x0
            f1 += x1 - x1
            s0 += x0 * x0
            s1 += x1 * x1
            k += 2
        if k < end:
            j0 = indices[k]
            unsorted |= j0 <= prev
            x0 = <double>data[k]
            f0 += x0 - x0
            s0 += x0 * x0
        row_strict = not unsorted
        if end > start:
            # a strictly increasing row lies in [0, n_cols) when its ends do
            outside = (<size_t>indices[start] >= cols) | (<size_t>indices[end - 1] >= cols)
            if unsorted:
                for k in range(start, end):
                    outside |= <size_t>indices[k] >= cols
        if outside or not (f0 + f1 == 0.0):
            # the first offending entry, by position
            for k in range(start, end):
                if indices[k] < 0 or indices[k] >= n_cols:
                    out.code, out.pos = S_INDEX, k
                    break
                if not (data[k] - data[k] == 0.0):
                    out.code, out.pos = S_NONFINITE, k
                    break
        if out.code == S_OK:
            sqnorm[i] = s0 + s1
            if sqnorm[i] > DBL_MAX:
                out.code, out.pos = S_OVERFLOW, start
            elif sqnorm[i] < DBL_MIN:        # a zero row, or squares lost to underflow
                for k in range(start, end):
                    if data[k] != 0.0:
                        out.code, out.pos = S_UNDERFLOW, k
                        break
        if out.code == S_OK and not row_strict:
            out.strict = False
            for k in range(start, end):
                scratch[k - start] = indices[k]
            if _sorted_has_repeat(scratch, end - start):
                out.code, out.pos = S_DUPLICATE, start
        if out.code != S_OK:
            out.row = i
            return


# nonzeros below which the check runs on one thread whatever it is given
cdef Py_ssize_t STRUCTURE_THREADS_MIN_NNZ = 1 << 18


def _structure(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
               Py_ssize_t n_cols, double[::1] sqnorm, int threads=1):
    """One O(nnz) pass, trusting nothing: indptr first (so that no row range is read before
    it is known to lie inside the arrays), then the rows (_structure_rows), in ``threads``
    threads when there are enough nonzeros, by blocks of rows (the first finding by row is
    the one reported, as on one thread). Returns (code, row, position) of the first finding
    (code STRUCT_*), and whether every row strictly increases."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, nnz = indices.shape[0]
    cdef Py_ssize_t i, longest = 0
    cdef Py_ssize_t t, B
    cdef int T
    cdef Finding* found
    cdef index_t[:, ::1] scratch
    cdef Finding first
    if n < 0 or indptr[0] != 0 or data.shape[0] != nnz:
        return S_INDPTR, 0, 0, False
    for i in range(n):
        if indptr[i + 1] < indptr[i] or indptr[i + 1] > nnz:
            return S_INDPTR, i, indptr[i + 1], False
        if indptr[i + 1] - indptr[i] > longest:
            longest = indptr[i + 1] - indptr[i]
    T = max(1, min(threads, n)) if nnz >= STRUCTURE_THREADS_MIN_NNZ else 1
    B = 1 if T == 1 else min(8 * T, n)  # blocks of rows, taken as the threads come free
    scratch = np.empty((T, max(longest, 1)), dtype=np.int32 if index_t is int32_t else np.int64)
    found = <Finding*>malloc(B * sizeof(Finding))
    if found == NULL:
        raise MemoryError()
    try:
        if n == 0:
            found[0].code, found[0].strict = S_OK, True
        elif T == 1:
            with nogil:
                _structure_rows(&data[0] if nnz else NULL, &indices[0] if nnz else NULL,
                                &indptr[0], 0, n, n_cols, &sqnorm[0], &scratch[0, 0],
                                &found[0])
        else:
            for t in prange(B, nogil=True, num_threads=T, schedule="dynamic"):
                _structure_rows(&data[0], &indices[0], &indptr[0], n * t // B,
                                n * (t + 1) // B, n_cols, &sqnorm[0],
                                &scratch[threadid(), 0], &found[t])
        first.code, first.strict = S_OK, True
        for t in range(B):          # the blocks in row order: the first finding wins
            first.strict = first.strict and found[t].strict
            if found[t].code != S_OK:
                first = found[t]
                break
    finally:
        free(found)
    if first.code != S_OK:
        return first.code, first.row, first.pos, False
    return S_OK, -1, -1, first.strict


def check_structure(data, indices, indptr, Py_ssize_t n_cols, int threads=1):
    """Validate the CSR arrays of an (indptr.size - 1) x n_cols matrix in one pass with no
    O(n_cols) memory: ``(code, row, position, sqnorm, strictly_sorted)`` where code is one of
    STRUCT_OK, STRUCT_INDPTR (indptr not starting at 0, decreasing, or past nnz; or data and
    indices of different lengths), STRUCT_INDEX (a column outside [0, n_cols)),
    STRUCT_NONFINITE (NaN or inf), STRUCT_DUPLICATE (a row repeating a column),
    STRUCT_OVERFLOW / STRUCT_UNDERFLOW (a row whose squared norm overflows, or has nonzero
    entries but is below the smallest normal double); row and position locate the first
    finding. ``sqnorm`` holds the squared row norms when code is
    STRUCT_OK. ``indices`` and ``indptr`` must have the same dtype (int32 or int64).
    ``threads`` > 1: the rows in that many threads (large matrices; the same result)."""
    sqnorm = np.empty(max(indptr.shape[0] - 1, 0))
    if indptr.shape[0] == 0:
        return STRUCT_INDPTR, 0, 0, sqnorm, False
    code, row, pos, strict = _structure(data, indices, indptr, n_cols, sqnorm, threads)
    return code, row, pos, sqnorm, strict
