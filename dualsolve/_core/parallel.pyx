# cython: language_level=3
"""Whether the build has OpenMP, how many threads its runtime allows, and what moving a
cache line between two threads' cores costs.

``max_threads`` is OpenMP's ``omp_get_max_threads()``: it honours ``OMP_NUM_THREADS`` and
a ``threadpoolctl.threadpool_limits(..., user_api="openmp")`` block around the call. A
build without OpenMP (the compiler had none; ``setup.py`` said so) reports 0 threads, and
``dualsolve._threads`` then reads ``OMP_NUM_THREADS`` itself.
"""

from cython.parallel cimport parallel, threadid
from libc.math cimport NAN
from libc.stdint cimport uintptr_t
from libc.stdlib cimport malloc, free

from dualsolve._core.blocks cimport BATCH_MIN_NNZ
from dualsolve._core.openmp cimport DS_HAVE_OPENMP, DS_MAX_THREADS, DS_TEAM_SIZE, DS_WTIME
from dualsolve._core.spsc cimport DS_LOAD_ACQUIRE, DS_STORE_RELEASE, DS_CPU_RELAX


#: a mini-batch of at least this many nonzeros (its mean) may step in threads (SOREL's and
#: SPDC's batches; _core/blocks.pxd has the default)
cdef Py_ssize_t _batch_min_nnz_value = BATCH_MIN_NNZ


cdef Py_ssize_t batch_min_nnz() noexcept nogil:
    return _batch_min_nnz_value


def _batch_min_nnz(value=None):
    """The mini-batch threshold (tests set it out of reach to compare a batch stepped in
    threads with the serial one); returns the value before the call."""
    global _batch_min_nnz_value
    old = _batch_min_nnz_value
    if value is not None:
        _batch_min_nnz_value = int(value)
    return old


def openmp_enabled():
    """True when the compiled loops were built with OpenMP."""
    return bool(DS_HAVE_OPENMP)


def max_threads():
    """OpenMP's thread limit for a parallel region started now (0 without OpenMP)."""
    return int(DS_MAX_THREADS())


def core_round_trip(Py_ssize_t rounds=20000):
    """Nanoseconds for a cache line to go from one thread's core to another's and back
    (two OpenMP threads passing a flag, the mean over ``rounds``); NaN without OpenMP or
    a second thread. SDCA's feature-owned pass moves lines between cores all the time, so
    its gain follows this number (docs/benchmarks.md, "Threads"): the benchmarks report it
    beside their timings."""
    # three cache lines: the flag, and what the threads report (variables assigned in a
    # parallel block are private to each thread)
    cdef char* raw = <char*>malloc(256)
    cdef long long* flag
    cdef double* seconds
    cdef int* failed
    cdef double started, result
    cdef Py_ssize_t r
    if raw == NULL:
        raise MemoryError()
    flag = <long long*>(raw + (64 - (<uintptr_t>raw) % 64) % 64)
    seconds = <double*>(<char*>flag + 64)
    failed = <int*>(<char*>flag + 128)
    flag[0], seconds[0], failed[0] = 0, NAN, 0
    try:
        if DS_HAVE_OPENMP and rounds > 0:
            with nogil, parallel(num_threads=2):
                if DS_TEAM_SIZE() != 2:
                    failed[0] = 1
                elif threadid() == 0:
                    started = DS_WTIME()
                    for r in range(rounds):
                        DS_STORE_RELEASE(flag, 1)
                        while DS_LOAD_ACQUIRE(flag) != 0:
                            DS_CPU_RELAX()
                    seconds[0] = DS_WTIME() - started
                else:
                    for r in range(rounds):
                        while DS_LOAD_ACQUIRE(flag) != 1:
                            DS_CPU_RELAX()
                        DS_STORE_RELEASE(flag, 0)
        result = NAN if failed[0] or seconds[0] != seconds[0] else seconds[0] / rounds * 1e9
    finally:
        free(raw)
    return result


def region_cost(Py_ssize_t rounds=20000):
    """Nanoseconds to start and join a two-thread parallel region doing nothing (the mean
    over ``rounds`` regions, one after another); NaN without OpenMP or a second thread.
    What a threaded step must outweigh: the benchmarks' reason for keeping the mini-batch
    steps serial (docs/benchmarks.md, "Threads")."""
    cdef double started, seconds
    cdef Py_ssize_t r
    cdef int team = 0
    cdef int* shared_team = &team      # a variable assigned in the region is private to it
    if not DS_HAVE_OPENMP or rounds <= 0:
        return NAN
    with nogil:
        started = DS_WTIME()
        for r in range(rounds):
            with parallel(num_threads=2):
                if threadid() == 0:
                    shared_team[0] = DS_TEAM_SIZE()
        seconds = DS_WTIME() - started
    return NAN if team != 2 else seconds / rounds * 1e9
