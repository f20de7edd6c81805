"""``n_jobs``: how many threads a solve may use.

Every ``train_*`` takes ``n_jobs`` (default 1, like liblinear). ``-1`` means every core
this process may run on, ``-2`` all but one, and so on (scikit-learn's convention); a
positive number is a request that is never exceeded and never exceeds the cores. The
limit also honours ``OMP_NUM_THREADS`` and ``threadpoolctl``'s OpenMP limits, so a solve
called inside ``threadpool_limits(1)`` (or from one of several worker processes) does not
oversubscribe the machine.
"""
import os

from ._core import parallel as _parallel


def usable_cores():
    """The cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:              # not Linux
        return os.cpu_count() or 1


def thread_limit():
    """The most threads a solve may start: the cores, capped by OpenMP's limit (which reads
    OMP_NUM_THREADS and threadpoolctl's limits), or without OpenMP by OMP_NUM_THREADS."""
    limit = usable_cores()
    omp = _parallel.max_threads()
    if omp <= 0:
        env = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
        omp = int(env) if env.isdigit() and int(env) > 0 else limit
    return max(1, min(limit, omp))


def effective_n_jobs(n_jobs):
    """The number of threads for a validated ``n_jobs`` (None = 1, -1 = the limit,
    -k = the limit + 1 - k, at least 1; a positive request is capped by the limit)."""
    if n_jobs is None:
        return 1
    limit = thread_limit()
    if n_jobs < 0:
        return max(1, limit + 1 + n_jobs)
    return min(int(n_jobs), limit)
