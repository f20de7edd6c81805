# cython: language_level=3
"""Whether the build has OpenMP, and its thread counts, for compiled code (one place that
tests ``_OPENMP``): ``dualsolve._core.parallel`` reports them to Python, SDCA's threaded
pass checks its team with ``DS_TEAM_SIZE`` and times its passes with ``DS_WTIME``. Without
OpenMP: no threads (0 and 1) and no clock (0.0)."""

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #define DS_HAVE_OPENMP 1
    #define DS_MAX_THREADS() omp_get_max_threads()
    #define DS_TEAM_SIZE() omp_get_num_threads()
    #define DS_WTIME() omp_get_wtime()
    #else
    #define DS_HAVE_OPENMP 0
    #define DS_MAX_THREADS() 0
    #define DS_TEAM_SIZE() 1
    #define DS_WTIME() 0.0
    #endif
    """
    int DS_HAVE_OPENMP
    int DS_MAX_THREADS() noexcept nogil      # OpenMP's limit for a region started now
    int DS_TEAM_SIZE() noexcept nogil        # threads of the enclosing parallel region
    double DS_WTIME() noexcept nogil         # wall-clock seconds (OpenMP's clock)
