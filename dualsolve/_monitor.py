"""Per-epoch reporting shared by every solver: history rows, verbose lines, the user's
callback, the divergence watch, and Ctrl-C (a pending SIGINT is raised while this Python
code runs).

Compiled engines reach the monitor through ``dualsolve._core.hooks.python_hook``; engines
written in Python call :meth:`EpochMonitor.step`. Either way an epoch's report returns 0 to
go on or the status (``dualsolve._core.status``) the engine must stop with."""
import math
import time

import numpy as np

from ._core import status as _status

#: an objective this many times its scale above the start has diverged
DIVERGE_FACTOR = 1e4


class EpochMonitor:
    """Collects ``(epoch, seconds, *values)`` rows.

    columns : names of the values an engine reports per epoch; the first three are always
        primal, dual and gap (NaN where the solver has none).
    coef : an array handed to the callback as ``info["coef"]``, through a read-only view
        made here (``set_coef`` replaces it).
    scale : the objective's scale for the divergence watch (default: |primal at epoch 0|).
    unevaluated_nan : True when a NaN primal means "not evaluated this epoch" (solvers that
        check their certificate every k epochs); otherwise NaN or inf is divergence.
    watch_growth : also call it divergence when the primal grows DIVERGE_FACTOR times its
        scale above the start (stochastic primal methods; a primal-dual method's primal
        may rise that far on its way and come back).
    stop : a :class:`StopRequest` shared with solves running beside this one: once it is
        set, the next report stops this solve too.
    prefix : put before every verbose line (which class a line is of, when classes run in
        threads).
    An exception raised by the callback (or KeyboardInterrupt) is kept in ``error`` and
    stops the solve; the driver re-raises it once the loop has returned.
    """

    def __init__(self, columns, callback=None, verbose=0, coef=None, scale=None,
                 unevaluated_nan=False, watch_growth=False, stop=None, prefix=""):
        self.columns = tuple(columns)
        assert self.columns[:3] == ("primal", "dual", "gap"), self.columns
        self.n_values = len(self.columns)
        self.rows = []
        self.callback = callback
        self.verbose = verbose
        self.scale = scale
        self.unevaluated_nan = unevaluated_nan
        self.watch_growth = watch_growth
        self.start = None
        self.diverged_at = None
        self.set_coef(coef)
        self.error = None
        self.stop = stop
        self.prefix = prefix
        self.t0 = time.perf_counter()

    def set_coef(self, coef):
        """Hand the callback a read-only view of coef (None: no coef in info)."""
        self.coef = None
        if coef is not None:
            self.coef = np.asarray(coef).view()
            self.coef.flags.writeable = False

    def report(self, epoch, *values):
        """Record one epoch; 0 to go on, else the status to stop with. May raise (the
        callback's exception, KeyboardInterrupt): see :meth:`step`."""
        if len(values) == 1 and isinstance(values[0], tuple):
            values = values[0]
        t = time.perf_counter() - self.t0
        values = tuple(float(v) for v in values)
        self.rows.append((int(epoch), t) + values)
        if self.verbose:
            self._print(epoch, values, t)
        stop = self.check_stop()
        if stop:
            return stop
        if self._diverged(values[0]):
            self.diverged_at = int(epoch)
            return _status.DIVERGED
        if self.callback is not None:
            info = dict(epoch=int(epoch), time=t, **dict(zip(self.columns, values)))
            if self.coef is not None:
                info["coef"] = self.coef
            if self.callback(info):
                return _status.CALLBACK
        return 0

    def check_stop(self):
        """Stop as a solve running beside this one asked: 0 to go on; a Ctrl-C delivered
        to the main thread arrives here as KeyboardInterrupt."""
        if self.stop is not None and self.stop.reason is not None:
            if self.stop.reason == "interrupted":
                raise KeyboardInterrupt
            return _status.CALLBACK
        return 0

    def step(self, epoch, values):
        """:meth:`report` for engines written in Python: an exception is kept in ``error``
        and turned into the status to stop with, as the compiled hook does."""
        try:
            return self.report(epoch, values)
        except BaseException as exc:        # noqa: B902 (KeyboardInterrupt included)
            self.error = exc
            return _status.INTERRUPTED if isinstance(exc, KeyboardInterrupt) else _status.CALLBACK

    def _diverged(self, primal):
        if math.isnan(primal) and self.unevaluated_nan:
            return False
        if not math.isfinite(primal):
            return True
        if self.start is None:
            self.start = primal
            if self.scale is None:
                self.scale = abs(primal)
            return False
        return (self.watch_growth
                and primal - self.start > DIVERGE_FACTOR * max(self.scale, 1e-300))

    def note(self, text):
        """A verbose line about the solve as a whole (with the class's prefix)."""
        if self.verbose:
            print(self.prefix + text, flush=True)

    def _print(self, epoch, values, t):
        if not self.rows[:-1]:
            print(self.prefix + f"{'epoch':>6} "
                  + " ".join(_HEAD.get(c, f"{c:>10}") for c in self.columns)
                  + f" {'seconds':>9}")
        print(self.prefix + f"{int(epoch):6d} "
              + " ".join(_fmt(c, v) for c, v in zip(self.columns, values))
              + f" {t:9.3f}", flush=True)


_HEAD = {"primal": f"{'primal':>22}", "dual": f"{'dual':>22}", "gap": f"{'gap':>10}",
         "gap_estimate": f"{'gap~':>10}", "n_active": f"{'active':>9}"}


def _fmt(column, v):
    if column in ("primal", "dual"):
        return f"{v:22.15e}"
    if column == "n_active":
        return f"{int(v):9d}" if math.isfinite(v) else f"{'':>9}"
    return f"{v:10.3e}"


class StopRequest:
    """Shared by solves that run side by side (one-vs-rest classes in threads): the first
    to stop for a callback, an exception or Ctrl-C sets ``reason`` ("callback" or
    "interrupted") and the others stop at their next report."""

    def __init__(self):
        self.reason = None

    def set(self, reason):
        if self.reason is None:
            self.reason = reason


class MonitorView:
    """The driver's monitor as an engine sees it through a wrapper that changes what is
    reported (subclasses override :meth:`report`); the error slot and the number of values
    are the monitor's own."""

    def __init__(self, mon):
        self.mon = mon
        self.n_values = mon.n_values

    @property
    def columns(self):
        return self.mon.columns

    @property
    def error(self):
        return self.mon.error

    @error.setter
    def error(self, exc):
        self.mon.error = exc

    def report(self, epoch, values):
        return self.mon.report(epoch, values)

    def set_coef(self, coef):
        self.mon.set_coef(coef)

    def note(self, text):
        self.mon.note(text)

    def check_stop(self):
        return self.mon.check_stop()
