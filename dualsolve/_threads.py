"""``n_jobs``: how many threads a solve may use.

Every ``train_*`` takes ``n_jobs`` (default 1, like liblinear). ``-1`` means every core
this process may run on, ``-2`` all but one, and so on (scikit-learn's convention); a
positive number is a request that is never exceeded and never exceeds the cores. The
limit also honours ``OMP_NUM_THREADS`` and ``threadpoolctl``'s OpenMP limits, so a solve
called inside ``threadpool_limits(1)`` (or from one of several worker processes) does not
oversubscribe the machine.
"""
import concurrent.futures
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


def side_by_side(chains, workers, stop, name, active=None):
    """Advance the iterators ``chains`` in ``workers`` threads, one step (``next``) at a
    time, and return ``(results, errors, interrupt)``: ``results[i]`` lists what chain i
    yielded. A chain's steps run one after the other; between two of them it goes to the
    back of the queue, so with ``active`` (default: all) chains under way at once the
    workers share them step by step (a path's solves, fold after fold) and the last
    chains do not run alone. Chains start in order, the next when one ends. A chain's
    exception is kept in ``errors`` and sets ``stop`` (a ``dualsolve._monitor.StopRequest``
    the chains' solves share), so the others stop at their next report and no step starts
    after it; Ctrl-C, which only the main thread receives, sets it too and comes back as
    ``interrupt``."""
    chains = list(chains)
    results, errors = [[] for _ in chains], [None] * len(chains)

    def step(i):
        """One step of chain i; True when it has more."""
        if stop.reason is not None:
            return False
        try:
            results[i].append(next(chains[i]))
            return True
        except StopIteration:
            return False
        except BaseException as exc:      # noqa: B902 (the callback's, or Ctrl-C's)
            errors[i] = exc
            stop.set("interrupted" if isinstance(exc, KeyboardInterrupt) else "callback")
            return False

    interrupt = None
    started = min(len(chains), active or len(chains))
    with concurrent.futures.ThreadPoolExecutor(workers, name) as pool:
        pending = {pool.submit(step, i): i for i in range(started)}
        while pending:
            try:
                done, _ = concurrent.futures.wait(
                    pending, timeout=0.1, return_when=concurrent.futures.FIRST_COMPLETED)
            except KeyboardInterrupt as exc:    # Ctrl-C: stop every chain, then hand it back
                interrupt = interrupt or exc
                stop.set("interrupted")
                continue
            for future in done:
                i = pending.pop(future)
                if stop.reason is not None:
                    continue
                if future.result():
                    pending[pool.submit(step, i)] = i
                elif started < len(chains):
                    pending[pool.submit(step, started)] = started
                    started += 1
    return results, errors, interrupt
