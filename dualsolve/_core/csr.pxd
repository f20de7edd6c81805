# cython: language_level=3
"""Fused CSR row access: sparse dot, axpy and squared norms over one row.

Rows are passed as raw pointers (``data + indptr[i]``, ``indices + indptr[i]``, ``nnz``) so
that the same helpers serve CSR rows, CSC columns and single sparse vectors. Data may be
float32 or float64 and indices int32 or int64; sums are accumulated in double. Indices need
not be sorted; duplicate entries act as their sum, as in scipy.
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
    """sum_k data[k] * w[ind[k]]. Two accumulators break the add dependency chain."""
    cdef double s0 = 0.0, s1 = 0.0
    cdef Py_ssize_t k = 0
    while k + 1 < nnz:
        s0 += data[k] * w[ind[k]]
        s1 += data[k + 1] * w[ind[k + 1]]
        k += 2
    if k < nnz:
        s0 += data[k] * w[ind[k]]
    return s0 + s1


cdef inline void sparse_axpy(double a, const floating* data, const index_t* ind,
                             Py_ssize_t nnz, double* w) noexcept nogil:
    """w[ind[k]] += a * data[k] for every stored entry."""
    cdef Py_ssize_t k
    for k in range(nnz):
        w[ind[k]] += a * data[k]


cdef inline double sparse_sqnorm(const floating* data, Py_ssize_t nnz) noexcept nogil:
    """sum_k data[k]^2 (duplicate indices are treated as separate entries; see csr_row_sqnorms)."""
    cdef double s = 0.0
    cdef Py_ssize_t k
    for k in range(nnz):
        s += <double>data[k] * data[k]
    return s


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
