# cython: language_level=3
"""The engines' status codes (``status.pxd``) for Python, and the stop reason of each."""

CONVERGED = STATUS_CONVERGED
MAX_EPOCHS = STATUS_MAX_EPOCHS
CALLBACK = STATUS_CALLBACK
INTERRUPTED = STATUS_INTERRUPTED
DIVERGED = STATUS_DIVERGED
NO_MEMORY = STATUS_NO_MEMORY

#: Model.stop_reason of each status an engine can end with (NO_MEMORY raises instead)
STOP_REASON = {STATUS_CONVERGED: "converged", STATUS_MAX_EPOCHS: "max_epochs",
               STATUS_CALLBACK: "callback", STATUS_INTERRUPTED: "interrupted",
               STATUS_DIVERGED: "diverged"}


#: the rounding floor of the stopping rule, in ulps of the objective's scale (status.pxd)
FLOOR_ULPS = GAP_FLOOR_ULPS


def certifies(double gap, double lower, double tol, double floor):
    """The Python twin of ``status.pxd``'s ``gap_certifies`` (it calls it): True when
    ``gap <= tol * lower`` (``lower = P - gap``, a certified lower bound on P*) or
    ``gap <= floor``; never for tol = 0."""
    return bool(gap_certifies(gap, lower, tol, floor))


def target(double lower, double tol, double floor):
    """``gap_target``: the value the certificate must reach (``-inf`` for tol = 0)."""
    return gap_target(lower, tol, floor)


def floor(double scale):
    """``gap_floor``: the rounding floor for an objective of size ``scale``."""
    return gap_floor(scale)
