# cython: language_level=3
"""Whether the build has OpenMP, and how many threads its runtime allows.

``max_threads`` is OpenMP's ``omp_get_max_threads()``: it honours ``OMP_NUM_THREADS`` and
a ``threadpoolctl.threadpool_limits(..., user_api="openmp")`` block around the call. A
build without OpenMP (the compiler had none; ``setup.py`` said so) reports 0 threads, and
``dualsolve._threads`` then reads ``OMP_NUM_THREADS`` itself.
"""

from dualsolve._core.openmp cimport DS_HAVE_OPENMP, DS_MAX_THREADS


def openmp_enabled():
    """True when the compiled loops were built with OpenMP."""
    return bool(DS_HAVE_OPENMP)


def max_threads():
    """OpenMP's thread limit for a parallel region started now (0 without OpenMP)."""
    return int(DS_MAX_THREADS())
