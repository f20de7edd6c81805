# cython: language_level=3
"""Blocks of rows for a pass over X in threads whose result must not depend on timing
(Newton's passes, the SVRG / Katyusha snapshot): ``size`` blocks of consecutive rows cut
to equal work (nonzeros plus BLOCK_ROW_COST per row), one thread each, and as many equal
ranges of a vector of length m for the sweeps that combine the blocks' sums. Block 0
writes the solve's own vectors, block b >= 1 its own copy (``blocks_own``); every sum is
taken block by block in order (``part`` and ``sums`` hold the blocks' partial sums), so
the result depends on ``size`` only (a smaller team, e.g. under OMP_THREAD_LIMIT, runs
several blocks: the same bits). One block is the serial pass."""
from cython.parallel cimport prange
from libc.stdlib cimport malloc, free

from dualsolve._core.csr cimport index_t
from dualsolve._core.ksum cimport KahanSum, ksum_new, ksum_add, ksum_value
from dualsolve._core.openmp cimport DS_WTIME

cdef enum:
    #: threads on X of at least this many nonzeros: below it a pass takes well under a
    #: millisecond, and a parallel region's start and the blocks' merge are a larger
    #: share (the CSR check's bound, _core/csr.pyx)
    BLOCKS_MIN_NNZ = 1 << 18
    #: slices of the rows per thread in a threaded exact check (SDCA's, Crammer-Singer's),
    #: taken as the threads come free: a thread slowed by another process holds the check
    #: up by one slice, not by half of it
    CHECK_SLICES = 8
    #: a row's cost in nonzeros (its loop's overhead, its scores' and loss's arithmetic)
    BLOCK_ROW_COST = 4
    #: a mini-batch step of at least this many nonzeros (its mean) may run in the team's
    #: threads (SOREL's and SPDC's batches): tens of microseconds of work against a
    #: parallel region's start and join, 0.5-1.2 us here (parallel.region_cost)
    BATCH_MIN_NNZ = 1024
    #: an epoch's probes (BatchClock): at least this many batches, and nonzeros, each way
    BATCH_PROBE = 16
    BATCH_PROBE_NNZ = 1 << 17


ctypedef struct Blocks:
    Py_ssize_t size         # blocks (1: serial)
    Py_ssize_t* rows        # size + 1 row cuts
    Py_ssize_t* cols        # size + 1 cuts of the m-vectors
    Py_ssize_t width        # doubles of a block's copy
    double* own             # (size - 1) x width: block b's copy (b >= 1), NULL for one
    double* part            # parts x size partial sums, block b's at b * parts
    KahanSum* sums          # parts x size compensated partial sums, likewise


cdef inline void blocks_free(Blocks* B) noexcept nogil:
    free(B.own)
    free(B.rows)
    free(B.part)
    free(B.sums)
    B.own = NULL
    B.rows = NULL
    B.cols = NULL
    B.part = NULL
    B.sums = NULL


cdef inline bint blocks_init(Blocks* B, const index_t* indptr, Py_ssize_t n, Py_ssize_t m,
                             int threads, Py_ssize_t min_nnz, Py_ssize_t width,
                             Py_ssize_t parts) noexcept nogil:
    """Blocks for ``threads`` threads: one where X has fewer than ``min_nnz`` nonzeros or
    there is no memory for the copies, never more than the rows; False: no memory even for
    one (nothing to free)."""
    cdef Py_ssize_t b, i = 0, size = 1
    cdef double per
    if threads > 1 and indptr[n] >= min_nnz and n >= 2:
        size = threads if threads < n else n
    B.own = NULL
    if size > 1 and width > 0:
        B.own = <double*>malloc((size - 1) * width * sizeof(double))
        if B.own == NULL:
            size = 1
    B.size = size
    B.width = width
    B.rows = <Py_ssize_t*>malloc(2 * (size + 1) * sizeof(Py_ssize_t))
    B.part = <double*>malloc(parts * size * sizeof(double) + 1)
    B.sums = <KahanSum*>malloc(parts * size * sizeof(KahanSum) + 1)
    if B.rows == NULL or B.part == NULL or B.sums == NULL:
        blocks_free(B)
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


cdef inline double* blocks_own(const Blocks* B, Py_ssize_t b) noexcept nogil:
    """Block b's copy (b >= 1)."""
    return B.own + (b - 1) * B.width


cdef inline void blocks_add_copies(const Blocks* B, double* dst, Py_ssize_t stride,
                                   Py_ssize_t offset) noexcept nogil:
    """dst[stride j] += copy_b[offset + j] for the blocks b >= 1 in block order, over the
    m-vectors' ranges, one thread each (nothing with one block)."""
    cdef Py_ssize_t b, k, j
    cdef const double* own
    if B.size == 1:
        return
    for b in prange(B.size, num_threads=B.size, schedule="static", chunksize=1):
        for k in range(1, B.size):
            own = blocks_own(B, k) + offset
            for j in range(B.cols[b], B.cols[b + 1]):
                dst[stride * j] += own[j]


cdef inline KahanSum blocks_ksum(const Blocks* B, Py_ssize_t parts,
                                 Py_ssize_t which) noexcept nogil:
    """The blocks' compensated sums B.sums[b parts + which] added in block order; one
    block's is returned as it is (the serial sum)."""
    cdef Py_ssize_t b
    cdef KahanSum total = ksum_new()
    if B.size == 1:
        return B.sums[which]
    for b in range(B.size):
        ksum_add(&total, ksum_value(&B.sums[b * parts + which]))
    return total


# ---------------------------------------------------------------------------------------
# a clock for the mini-batch steps in threads: their threaded step is the serial step's
# bits, so which one runs may follow the clock without changing the result. Each epoch
# starts with batches on one thread and in threads in turn, each timed, until each way
# has BATCH_PROBE batches and BATCH_PROBE_NNZ nonzeros; the rest of the epoch steps the
# faster way (threads only under 0.95 of one thread's time a nonzero). Taking turns
# shows both ways the same caches and the same state of the threads (a team idle for a
# millisecond sleeps, and its first region pays the wake-up). The cores' placement
# decides what the threads gain: their phases pass the batch's feature records between
# the cores (news20 batch 8: 1.39x near, 0.98x far).


ctypedef struct BatchClock:
    bint probing            # the epoch's turns are under way
    Py_ssize_t turns        # batches probed this epoch
    double start            # the current batch's start (seconds)
    double seconds[2]       # the probes' time, one thread [0] and threads [1]
    double nnz[2]           # and their nonzeros
    bint threads            # the choice for the rest of the epoch


cdef inline void batch_clock_epoch(BatchClock* c) noexcept nogil:
    """At an epoch's start: probe again."""
    c.probing = True
    c.turns = 0
    c.seconds[0] = c.seconds[1] = 0.0
    c.nnz[0] = c.nnz[1] = 0.0


cdef inline bint batch_clock_threads(BatchClock* c) noexcept nogil:
    """Whether the next batch steps in threads; starts its clock while probing."""
    if c.probing:
        c.start = DS_WTIME()
        return (c.turns & 1) == 1
    return c.threads


cdef inline void batch_clock_done(BatchClock* c, bint threads, double nnz) noexcept nogil:
    """After a batch of nnz nonzeros, stepped in threads or not."""
    cdef Py_ssize_t k = 1 if threads else 0
    if not c.probing:
        return
    c.seconds[k] += DS_WTIME() - c.start
    c.nnz[k] += nnz
    c.turns += 1
    if (c.turns >= 2 * BATCH_PROBE and c.nnz[0] >= BATCH_PROBE_NNZ
            and c.nnz[1] >= BATCH_PROBE_NNZ):
        c.threads = c.seconds[1] * c.nnz[0] < 0.95 * c.seconds[0] * c.nnz[1]
        c.probing = False
