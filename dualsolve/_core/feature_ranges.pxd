# cython: language_level=3
"""Ranges of features holding equal shares of X's nonzeros, one per thread: the binary
SDCA loop's feature-owned pass (each thread writes its range of w) and Crammer-Singer's
threaded resync (each thread its rows of the feature-major W)."""
from libc.stdlib cimport calloc, free, malloc

from dualsolve._core.csr cimport index_t

cdef enum:
    FEATURE_BINS = 4096     # bins of features for the first count


cdef inline bint feature_ranges(const index_t* indices, const index_t* indptr, Py_ssize_t n,
                                Py_ssize_t nnz, Py_ssize_t d, int threads,
                                Py_ssize_t* first) noexcept nogil:
    """first[0 .. threads]: thread t owns features [first[t], first[t + 1]) of 0 .. d - 1,
    cut at equal shares of the nonzeros of every stride-th of the n rows (stride: about
    2^18 of X's nnz sampled, each share to a fraction of a percent): first[t] is the least
    j with more than t/threads of the sampled nonzeros at or below it. Counted in
    FEATURE_BINS bins of features, then feature by feature within the bins the cuts fall
    in: small counters (counting into a w-sized array was most of the setup, news20 7-12
    ms: a cache miss per sampled nonzero). False: no memory."""
    cdef Py_ssize_t stride = 1 + nnz // (1 << 18)
    cdef Py_ssize_t width = 1, p, k, b, j, lo
    cdef int shift = 0
    cdef double total = 0.0, below = 0.0, share
    cdef double* coarse
    cdef double* fine
    cdef Py_ssize_t* cut_bin = <Py_ssize_t*>malloc(threads * sizeof(Py_ssize_t))
    cdef double* cut_below = <double*>malloc(threads * sizeof(double))
    cdef int t
    cdef bint ok
    while width * FEATURE_BINS < d:        # bins of 2^shift features: a shift, no division
        width *= 2
        shift += 1
    coarse = <double*>calloc(FEATURE_BINS, sizeof(double))
    fine = <double*>calloc(threads * width, sizeof(double))
    ok = coarse != NULL and fine != NULL and cut_bin != NULL and cut_below != NULL
    if ok:
        p = 0
        while p < n:
            for k in range(indptr[p], indptr[p + 1]):
                coarse[indices[k] >> shift] += 1.0
            p += stride
        for b in range(FEATURE_BINS):
            total += coarse[b]
        b = 0       # cut t lies in the first bin whose count to its end exceeds the share
        for t in range(1, threads):
            share = total * t / threads
            while b < FEATURE_BINS and below + coarse[b] <= share:
                below += coarse[b]
                b += 1
            cut_bin[t], cut_below[t] = b, below
        p = 0
        while p < n:
            for k in range(indptr[p], indptr[p + 1]):
                b = indices[k] >> shift
                for t in range(1, threads):
                    if b == cut_bin[t]:
                        fine[t * width + indices[k] - b * width] += 1.0
            p += stride
        first[0], first[threads] = 0, d
        for t in range(1, threads):
            if cut_bin[t] >= FEATURE_BINS:
                first[t] = d
                continue
            share, below, lo = total * t / threads, cut_below[t], cut_bin[t] * width
            j = lo
            below += fine[t * width]
            while below <= share:       # ends within the bin: its end count exceeds share
                j += 1
                below += fine[t * width + j - lo]
            first[t] = j
    free(coarse)
    free(fine)
    free(cut_bin)
    free(cut_below)
    return ok


