# cython: language_level=3
"""Fused CSR row access: sparse dot, axpy and squared norms over one row.

Rows are passed as raw pointers (``data + indptr[i]``, ``indices + indptr[i]``, ``nnz``) so
that the same helpers serve CSR rows, CSC columns and single sparse vectors. Data may be
float32 or float64 and indices int32 or int64; sums are accumulated in double. Indices need
not be sorted, but a row must not repeat a column: ``sparse_axpy`` groups its updates and
``sparse_sqnorm`` squares entries one by one (``dualsolve._validation.check_csr`` sums
duplicates before any solver sees X).
"""
from libc.stdint cimport int32_t, int64_t

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define DS_PREFETCH(p) __builtin_prefetch((const void*)(p))
    #else
    #define DS_PREFETCH(p) ((void)0)
    #endif
    """
    void DS_PREFETCH(const void* p) noexcept nogil


ctypedef fused floating:
    float
    double

ctypedef fused index_t:
    int32_t
    int64_t


cdef inline double sparse_dot(const floating* data, const index_t* ind, Py_ssize_t nnz,
                              const double* w) noexcept nogil:
    """sum_k data[k] * w[ind[k]]. Two accumulators break the add dependency chain (four
    measured slower on rcv1-like rows)."""
    cdef double s0 = 0.0, s1 = 0.0
    cdef Py_ssize_t k = 0
    while k + 1 < nnz:
        s0 += data[k] * w[ind[k]]
        s1 += data[k + 1] * w[ind[k + 1]]
        k += 2
    if k < nnz:
        s0 += data[k] * w[ind[k]]
    return s0 + s1


cdef inline double _axpy(double a, const floating* data, const index_t* ind, Py_ssize_t nnz,
                         double* w, bint squares) noexcept nogil:
    """w[ind[k]] += a * data[k]; with ``squares`` also the sum of the new entries' squares
    (a constant at every call: the inlined copy without it has no squares).

    Four loads before four stores: the compiler may not hoist a load above a store that
    could alias it, and distinct indices within a row (checked when X is validated) make
    the grouping exact."""
    cdef Py_ssize_t k = 0
    cdef index_t i0, i1, i2, i3
    cdef double v0, v1, v2, v3, s = 0.0
    while k + 3 < nnz:
        i0 = ind[k]
        i1 = ind[k + 1]
        i2 = ind[k + 2]
        i3 = ind[k + 3]
        v0 = w[i0] + a * data[k]
        v1 = w[i1] + a * data[k + 1]
        v2 = w[i2] + a * data[k + 2]
        v3 = w[i3] + a * data[k + 3]
        w[i0] = v0
        w[i1] = v1
        w[i2] = v2
        w[i3] = v3
        if squares:
            s += (v0 * v0 + v1 * v1) + (v2 * v2 + v3 * v3)
        k += 4
    while k < nnz:
        v0 = w[ind[k]] + a * data[k]
        w[ind[k]] = v0
        if squares:
            s += v0 * v0
        k += 1
    return s


cdef inline void sparse_axpy(double a, const floating* data, const index_t* ind,
                             Py_ssize_t nnz, double* w) noexcept nogil:
    """w[ind[k]] += a * data[k] for every stored entry."""
    _axpy(a, data, ind, nnz, w, False)


cdef inline double sparse_axpy_sqnorm(double a, const floating* data, const index_t* ind,
                                      Py_ssize_t nnz, double* w) noexcept nogil:
    """sparse_axpy, returning the sum of the squares of the row's new entries of w (what
    a bound on the update's rounding needs), at no extra memory traffic."""
    return _axpy(a, data, ind, nnz, w, True)


cdef inline double sparse_dot_even(const floating* data, const index_t* ind, Py_ssize_t nnz,
                                   const double* pair) noexcept nogil:
    """sum_k data[k] * pair[2 ind[k]]: sparse_dot on the even slots of an interleaved pair of
    vectors (Newton's CG direction p_j = pair[2j] beside its product q_j = pair[2j+1])."""
    cdef double s0 = 0.0, s1 = 0.0
    cdef Py_ssize_t k = 0
    while k + 1 < nnz:
        s0 += data[k] * pair[2 * <Py_ssize_t>ind[k]]
        s1 += data[k + 1] * pair[2 * <Py_ssize_t>ind[k + 1]]
        k += 2
    if k < nnz:
        s0 += data[k] * pair[2 * <Py_ssize_t>ind[k]]
    return s0 + s1


cdef inline void sparse_axpy_odd(double a, const floating* data, const index_t* ind,
                                 Py_ssize_t nnz, double* pair) noexcept nogil:
    """pair[2 ind[k] + 1] += a * data[k]: sparse_axpy into the odd slots of an interleaved
    pair, whose cache lines a sparse_dot_even of the same row has just loaded."""
    cdef Py_ssize_t k
    for k in range(nnz):
        pair[2 * <Py_ssize_t>ind[k] + 1] += a * data[k]


cdef inline Py_ssize_t sorted_row_find(const index_t* ind, Py_ssize_t nnz,
                                       Py_ssize_t value) noexcept nogil:
    """The first position k of a row with strictly increasing indices where ind[k] >= value
    (nnz when there is none): binary search."""
    cdef Py_ssize_t lo = 0, hi = nnz, mid
    while lo < hi:
        mid = (lo + hi) // 2
        if ind[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline double sparse_sqnorm(const floating* data, Py_ssize_t nnz) noexcept nogil:
    """sum_k data[k]^2 (duplicate indices are treated as separate entries; see csr_row_sqnorms)."""
    cdef double s = 0.0
    cdef Py_ssize_t k
    for k in range(nnz):
        s += <double>data[k] * data[k]
    return s


cdef inline void prefetch_records(const index_t* ind, Py_ssize_t nnz, const void* base,
                                  size_t record_bytes) noexcept nogil:
    """Ask for the per-feature records base + record_bytes * ind[k] of a row's features
    (solvers with one record per feature; a record must not straddle two cache lines)."""
    cdef const char* b = <const char*>base
    cdef Py_ssize_t k
    for k in range(nnz):
        DS_PREFETCH(b + record_bytes * <size_t>ind[k])


cdef inline void prefetch_row(const floating* data, const index_t* ind,
                              Py_ssize_t nnz) noexcept nogil:
    """Ask for the cache lines of a row that will be used soon: rows visited in random order
    defeat the hardware prefetcher. Long rows: the first lines only (the rest streams in)."""
    cdef Py_ssize_t k = 0, m = nnz if nnz < 128 else 128
    cdef Py_ssize_t step_d = 64 // <Py_ssize_t>sizeof(floating)
    cdef Py_ssize_t step_i = 64 // <Py_ssize_t>sizeof(index_t)
    while k < m:
        DS_PREFETCH(data + k)
        k += step_d
    k = 0
    while k < m:
        DS_PREFETCH(ind + k)
        k += step_i
