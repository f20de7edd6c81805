# cython: language_level=3
"""Whether the build has OpenMP, and how many threads its runtime allows.

``max_threads`` is OpenMP's ``omp_get_max_threads()``: it honours ``OMP_NUM_THREADS`` and
a ``threadpoolctl.threadpool_limits(..., user_api="openmp")`` block around the call. A
build without OpenMP (the compiler had none; ``setup.py`` said so) reports 0 threads, and
``dualsolve._threads`` then reads ``OMP_NUM_THREADS`` itself.
"""

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int dualsolve_openmp(void) { return 1; }
    static int dualsolve_max_threads(void) { return omp_get_max_threads(); }
    #else
    static int dualsolve_openmp(void) { return 0; }
    static int dualsolve_max_threads(void) { return 0; }
    #endif
    """
    int dualsolve_openmp() nogil
    int dualsolve_max_threads() nogil


def openmp_enabled():
    """True when the compiled loops were built with OpenMP."""
    return bool(dualsolve_openmp())


def max_threads():
    """OpenMP's thread limit for a parallel region started now (0 without OpenMP)."""
    return int(dualsolve_max_threads())
