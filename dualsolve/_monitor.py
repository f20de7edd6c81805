"""Per-epoch reporting shared by every solver: history rows, verbose lines, the user's
callback, and Ctrl-C (a pending SIGINT is raised while this Python code runs)."""
import time

import numpy as np


class EpochMonitor:
    """Collects ``(epoch, seconds, *values)`` rows; ``report`` returns True to stop.

    columns : names of the values after epoch and time (e.g. primal, dual, gap, ...).
    coef : an array handed to the callback as ``info["coef"]``, through a read-only view
        made here (``set_coef`` replaces it).
    An exception raised by the callback (or KeyboardInterrupt) is kept in ``error`` and
    stops the solve; the driver re-raises it once the loop has returned.
    """

    def __init__(self, callback, verbose, columns, coef=None):
        self.rows = []
        self.callback = callback
        self.verbose = verbose
        self.columns = tuple(columns)
        self.set_coef(coef)
        self.error = None
        self.t0 = time.perf_counter()

    def set_coef(self, coef):
        """Hand the callback a read-only view of coef (None: no coef in info)."""
        self.coef = None
        if coef is not None:
            self.coef = np.asarray(coef).view()
            self.coef.flags.writeable = False

    def report(self, epoch, *values):
        t = time.perf_counter() - self.t0
        self.rows.append((epoch, t) + values)
        try:
            if self.verbose:
                if epoch == 0:
                    print(f"{'epoch':>6} " + " ".join(_HEAD.get(c, f"{c:>10}") for c in self.columns)
                          + f" {'seconds':>9}")
                print(f"{epoch:6d} " + " ".join(_fmt(c, v) for c, v in zip(self.columns, values))
                      + f" {t:9.3f}", flush=True)
            if self.callback is not None:
                info = dict(epoch=epoch, time=t, **dict(zip(self.columns, values)))
                if self.coef is not None:
                    info["coef"] = self.coef
                if self.callback(info):
                    return True
        except BaseException as exc:        # noqa: B902 (KeyboardInterrupt included)
            self.error = exc
            return True
        return False


_HEAD = {"primal": f"{'primal':>22}", "dual": f"{'dual':>22}", "gap": f"{'gap':>10}",
         "gap_estimate": f"{'gap~':>10}", "n_active": f"{'active':>9}"}


def _fmt(column, v):
    if column in ("primal", "dual"):
        return f"{v:22.15e}"
    if column == "n_active":
        return f"{int(v):9d}"
    return f"{v:10.3e}"
