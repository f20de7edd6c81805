# cython: language_level=3
"""The per-epoch hooks' one call into Python.

A solver loop runs without the GIL and calls a ``noexcept nogil`` hook after every epoch;
the hook takes the GIL and hands the epoch's numbers to an ``EpochMonitor``
(``dualsolve._monitor``). A pending Ctrl-C is delivered as soon as Python code runs, which
can be on entry to ``report``, before any ``try`` of its own: an exception escaping a
``noexcept`` function would only be printed and the run would go on. So every exception
is caught here, kept in ``mon.error`` (the Python wrapper re-raises it) and stops the run.
"""


cdef inline int report_or_stop(object mon, tuple values) noexcept:
    """mon.report(*values): 1 to stop (asked for, or an exception kept in mon.error), else 0."""
    try:
        return 1 if mon.report(*values) else 0
    except BaseException as exc:        # noqa: B902 (KeyboardInterrupt included)
        mon.error = exc
        return 1
