# cython: language_level=3
"""The engines' one call into Python: ``python_hook``, an ``epoch_hook`` (status.pxd) whose
``ctx`` is a ``dualsolve._monitor.EpochMonitor``.

A solver loop runs without the GIL and calls the hook after every epoch; the hook takes
the GIL and hands the epoch's values to the monitor, which records the history row,
prints it, calls the user's callback and watches for divergence. A pending Ctrl-C is
delivered as soon as Python code runs, which can be on entry to ``report``, before any
``try`` of its own: an exception escaping a ``noexcept`` function would only be printed
and the run would go on. So every exception is caught here and kept in ``mon.error``
(the driver re-raises it), and the engine is told to stop.
"""
from cpython.exc cimport PyErr_CheckSignals

from dualsolve._core.status cimport STATUS_CALLBACK, STATUS_INTERRUPTED


cdef inline int _stop_for(object mon, BaseException exc) noexcept:
    mon.error = exc
    return STATUS_INTERRUPTED if isinstance(exc, KeyboardInterrupt) else STATUS_CALLBACK


cdef inline int report_values(object mon, Py_ssize_t epoch, const double* values) noexcept:
    """mon.report(epoch, values[:mon.n_values]), or for epoch < 0 a check for Ctrl-C (and
    for a stop asked by a solve running beside this one) only: 0 to go on, else the status
    to stop with."""
    cdef Py_ssize_t k
    try:
        if epoch < 0:
            PyErr_CheckSignals()
            return mon.check_stop()
        return mon.report(epoch, tuple([values[k] for k in range(mon.n_values)]))
    except BaseException as exc:        # noqa: B902 (KeyboardInterrupt included)
        return _stop_for(mon, exc)


cdef inline int python_hook(void* ctx, Py_ssize_t epoch, const double* values) noexcept nogil:
    with gil:
        return report_values(<object>ctx, epoch, values)

