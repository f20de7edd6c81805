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
