# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The memory floor of a stochastic pass: visit CSR rows in a given order and touch one
per-feature record per nonzero, with no solver arithmetic around it.

A stochastic solver with lazy per-feature state does at least this per sampled row: read the
row, gather its features' records for a dot product and (if it keeps state it must update)
write them back. Timing this loop beside ``X @ w`` in one process separates what the
machine charges for the access pattern (random row order, record size, write-back of dirty
lines) from what a solver adds on top (``bench/memory_floor.py``).

The prefetching mirrors the solvers' loops: the CSR lines of the row two steps ahead and the
records of the next row are requested before the current row is processed.
"""
from libc.stdlib cimport malloc, free
from libc.string cimport memset

import numpy as np

from dualsolve._core.csr cimport floating, index_t, prefetch_row, prefetch_records


cdef double _pass(const floating* data, const index_t* indices, const index_t* indptr,
                  const Py_ssize_t* order, Py_ssize_t n_steps, double* rec, Py_ssize_t width,
                  bint write, bint prefetch) noexcept nogil:
    cdef Py_ssize_t it, q, k, kn, lo, hi, j
    cdef double dot, total = 0.0, c
    for it in range(n_steps):
        if prefetch:
            if it + 2 < n_steps:
                kn = order[it + 2]
                prefetch_row(data + indptr[kn], indices + indptr[kn],
                             indptr[kn + 1] - indptr[kn])
            if it + 1 < n_steps:
                kn = order[it + 1]
                prefetch_records(indices + indptr[kn], indptr[kn + 1] - indptr[kn], rec,
                                 width * sizeof(double))
        k = order[it]
        lo = indptr[k]
        hi = indptr[k + 1]
        dot = 0.0
        if width == 1:
            for q in range(lo, hi):
                dot += data[q] * rec[indices[q]]
        else:
            for q in range(lo, hi):
                j = 2 * indices[q]
                dot += data[q] * (rec[j] + rec[j + 1])
        if write:
            c = 1e-3 * dot
            for q in range(lo, hi):
                j = width * indices[q]
                rec[j] += c * data[q]
                if width == 2:
                    rec[j + 1] -= c * data[q]
        total += dot
    return total


def touch_rows(X, order, Py_ssize_t record_doubles=1, bint write=False, bint prefetch=True,
               w=None, Py_ssize_t passes=1):
    """Visit the rows ``order`` of the CSR matrix X, each a dot product with per-feature
    records of ``record_doubles`` (1 or 2) doubles; with ``write``, add ``1e-3 * dot *
    X[k]`` to each record's first double (and subtract it from the second) afterwards.
    ``passes`` repeats the whole visit on the same records (timing the difference of two
    calls leaves out the allocation and first touch of the records).

    Each record's first double starts as ``w[j]`` (zeros if None), the second as zero.
    Returns the sum of the dots. Without ``write``, or with two-double records (whose sum
    the writes leave unchanged), it is ``(X @ w)[order].sum()``; with ``write`` and one
    double it follows ``w += 1e-3 (X[k] . w) X[k]`` row by row. The tests check both.
    """
    if getattr(X, "format", None) != "csr":
        raise TypeError(f"X must be a scipy.sparse CSR matrix, got {type(X).__name__}")
    if record_doubles not in (1, 2):
        raise ValueError(f"record_doubles must be 1 or 2, got {record_doubles!r}")
    if passes < 1:
        raise ValueError(f"passes must be >= 1, got {passes!r}")
    data, indices, indptr = X.data, X.indices, X.indptr
    if indptr.dtype != indices.dtype:
        indptr = indptr.astype(indices.dtype)
    order = np.ascontiguousarray(order, dtype=np.intp)
    n, d = X.shape
    if order.size and (order.min() < 0 or order.max() >= n):
        raise ValueError("order must hold row numbers in [0, n)")
    cdef double* rec = <double*>malloc(max(d, 1) * record_doubles * sizeof(double))
    if rec == NULL:
        raise MemoryError()
    memset(rec, 0, max(d, 1) * record_doubles * sizeof(double))
    cdef Py_ssize_t j
    cdef const double[::1] wv
    if w is not None:
        wv = np.ascontiguousarray(w, dtype=np.float64)
        if wv.shape[0] != d:
            free(rec)
            raise ValueError(f"w must have {d} entries, got {wv.shape[0]}")
        for j in range(d):
            rec[j * record_doubles] = wv[j]
    try:
        return sum(_dispatch(data, indices, indptr, order, <size_t>rec, record_doubles,
                             write, prefetch) for _ in range(passes))
    finally:
        free(rec)


def _dispatch(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
              const Py_ssize_t[::1] order, size_t rec_addr, Py_ssize_t width, bint write,
              bint prefetch):
    cdef double total
    cdef Py_ssize_t n_steps = order.shape[0]
    if n_steps == 0 or data.shape[0] == 0:
        return 0.0
    with nogil:
        total = _pass(&data[0], &indices[0], &indptr[0], &order[0], n_steps,
                      <double*>rec_addr, width, write, prefetch)
    return total
