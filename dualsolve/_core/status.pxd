# cython: language_level=3
"""The one status and the one per-epoch hook of every solver engine.

An engine (``sdca_run``, ``spdc_run``, ...) runs without the GIL and returns one of these
codes; ``dualsolve._driver`` maps it to ``Model.stop_reason`` and to warnings or errors.
After the starting point (epoch 0) and after every epoch it calls the hook with that
epoch's values (the engine documents how many and in what order: primal, dual, gap, then
its own columns). The hook returns 0 to go on, or the status the engine must stop with:
STATUS_CALLBACK (the user's callback asked to stop, or raised), STATUS_INTERRUPTED
(Ctrl-C) or STATUS_DIVERGED (the objective turned non-finite or grew far above its
start). A long epoch may poll the hook with ``epoch = -1`` and ``values = NULL``: then it
only checks for Ctrl-C.
"""

cdef enum:
    STATUS_CONVERGED = 0      # the solver's documented criterion held at tol
    STATUS_MAX_EPOCHS = 1     # the budget ran out first
    STATUS_CALLBACK = 2       # the callback returned True (or raised: the driver re-raises)
    STATUS_INTERRUPTED = 3    # Ctrl-C (the driver re-raises KeyboardInterrupt)
    STATUS_DIVERGED = 4       # non-finite, or far above the objective at the start
    STATUS_NO_MEMORY = 5      # a work buffer could not be allocated (MemoryError)


ctypedef int (*epoch_hook)(void* ctx, Py_ssize_t epoch, const double* values) noexcept nogil


cdef inline int report_epoch(epoch_hook hook, void* ctx, Py_ssize_t epoch,
                             const double* values, int status) noexcept nogil:
    """Hand one epoch's values to the hook (NULL: no hook) and return the status to go on
    with: the hook's request to stop, unless the epoch already ended the run (a converged or
    diverged status stays)."""
    cdef int stop
    if hook == NULL:
        return status
    stop = hook(ctx, epoch, values)
    return stop if stop != 0 and status == STATUS_MAX_EPOCHS else status
