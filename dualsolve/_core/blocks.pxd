# cython: language_level=3
"""Blocks of rows for a pass over X in threads whose result must not depend on timing
(Newton's passes, the SVRG / Katyusha snapshot): ``size`` blocks of consecutive rows cut
to equal work (nonzeros plus BLOCK_ROW_COST per row), one thread each, and as many equal
ranges of a vector of length m for the sweeps that combine the blocks' sums. Block 0
writes the solve's own vectors, block b >= 1 its own copy; every sum is taken block by
block in order, so the result depends on ``size`` only (a smaller team, e.g. under
OMP_THREAD_LIMIT, runs several blocks: the same bits). One block is the serial pass."""
from libc.stdlib cimport malloc, free

from dualsolve._core.csr cimport index_t

#: threads on X of at least this many nonzeros: below it a pass takes well under a
#: millisecond, and a parallel region's start and the blocks' merge are a larger share
#: (the CSR check's bound, _core/csr.pyx)
cdef enum:
    BLOCKS_MIN_NNZ = 1 << 18
    #: a row's cost in nonzeros (its loop's overhead, its scores' and loss's arithmetic)
    BLOCK_ROW_COST = 4


ctypedef struct Blocks:
    Py_ssize_t size         # blocks (1: serial)
    Py_ssize_t* rows        # size + 1 row cuts
    Py_ssize_t* cols        # size + 1 cuts of the m-vectors


cdef inline Py_ssize_t blocks_size(const index_t* indptr, Py_ssize_t n, int threads,
                                   Py_ssize_t min_nnz) noexcept nogil:
    """How many blocks ``threads`` threads get: one where X has fewer than ``min_nnz``
    nonzeros, never more than the rows."""
    if threads <= 1 or indptr[n] < min_nnz or n < 2:
        return 1
    return threads if threads < n else n


cdef inline bint blocks_init(Blocks* B, const index_t* indptr, Py_ssize_t n, Py_ssize_t m,
                             Py_ssize_t size) noexcept nogil:
    """``size`` blocks of the n rows and of the m-vectors; False: no memory."""
    cdef Py_ssize_t b, i = 0
    cdef double per
    B.size = size
    B.rows = <Py_ssize_t*>malloc(2 * (size + 1) * sizeof(Py_ssize_t))
    if B.rows == NULL:
        return False
    B.cols = B.rows + size + 1
    per = (<double>indptr[n] + BLOCK_ROW_COST * <double>n) / size
    B.rows[0] = 0
    for b in range(1, size):
        while i < n and indptr[i] + BLOCK_ROW_COST * <double>i < b * per:
            i += 1
        B.rows[b] = i
    B.rows[size] = n
    for b in range(size + 1):
        B.cols[b] = m * b // size
    return True


cdef inline void blocks_free(Blocks* B) noexcept nogil:
    free(B.rows)
    B.rows = NULL
    B.cols = NULL
