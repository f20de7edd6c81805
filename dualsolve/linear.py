"""``train_linear``: one entry point for L2-regularised linear models; it runs the named
solver, or (``solver="auto"``) SDCA and, where SDCA is slow, Newton from its iterate."""
import inspect
import math
from dataclasses import replace

import numpy as np

from ._core import status as _status
from ._driver import Solver, certified, fit, register
from ._monitor import MonitorView
from .model import Model
from ._params import Boolean, Interval, Options, Real
from ._warm_path import NEWTON_START
from .newton import _newton
from .newton.api import NEWTON, train_newton
from .sdca.api import SDCA, train_sdca

#: solvers train_linear can run (the same objective and arguments), and their functions
SOLVERS = {"sdca": SDCA, "newton": NEWTON}
_FUNCTIONS = {"sdca": train_sdca, "newton": train_newton}

#: auto runs SDCA first and, from this epoch on, hands over to Newton (from SDCA's w) when
#: SDCA's own rate predicts more than SDCA_AHEAD further epochs to the certificate
#: (switches_to_newton: not for the (squared) hinge). Measured on news20 logistic
#: (bench/large_c.py, docs/newton.md): C = 1, SDCA certifies in 6 epochs; C = 100, SDCA
#: alone 69 epochs (1.65 s), Newton alone 75 passes (2.8 s), 10 epochs then Newton 30
#: passes (1.3 s); C = 10^4, Newton alone 190 passes (7.1 s), 10 epochs then Newton 104
#: passes (3.8 s): the first epochs of dual ascent are cheap progress that Newton's first
#: iterations buy dearly (5 epochs: 166 passes, 20: 95, 40: 106). But on IMDB (rows
#: nearly orthogonal: 2.5M bigram features for 50k reviews) SDCA itself is fast at
#: C = 10^4 (liblinear's dual solver: 23 passes), so the hand-over waits for the rate.
#: (Those SDCA numbers predate its focused passes, which certify news20 at C = 100 and 10^4
#: in 8 and 16 epochs: the rule no longer hands over on the text sets.)
SWITCH_EPOCHS = 10
#: SDCA goes on while its rate predicts at most this many more epochs (about what Newton's
#: passes cost when it takes over: 30 to 100 on news20)
SDCA_AHEAD = 30
#: the rate is the pass estimates' decrease over this many epochs
RATE_SPAN = 5

#: losses that stay with SDCA in auto: the hinge (Newton's smoothing continuation is slow
#: on nearly separable data, news20 C = 1: relative gap 3e-2 after 15 iterations, and on
#: a9a at C = 1 it takes 98 iterations, 0.9 s, where SDCA certifies in 0.3 s)
AUTO_SDCA_LOSSES = ("hinge",)
#: losses auto hands over to Newton only when X has at least as many rows as columns.
#: With more columns than rows (text: news20, IMDB, reuters) the data are nearly
#: separable, and at a large C the squared hinge's generalised Hessian sees only the rows
#: inside the margin while each Newton step moves many others into it (news20, C = 100:
#: Newton 1118 passes, 55 s, against SDCA's 436 epochs, 3.6 s; reuters, C = 100: 0.40 s
#: against 0.07 s). With more rows than columns (a9a, w8a, svmguide1, the UCI tables) it is
#: the other way round: SDCA crawls on correlated dense columns (no certificate in 5000
#: epochs at C = 100 on 8 of 9 LIBSVM sets) and Newton certifies in 6-19 iterations
#: (docs/newton.md, "The squared hinge in auto").
OVERDETERMINED_ONLY = ("squared_hinge",)


def switches_to_newton(loss, n_rows, n_features):
    """Whether ``solver="auto"`` may go on from SDCA to Newton for this loss on an
    ``n_rows`` x ``n_features`` problem (the intercept's column counted): every loss Newton
    takes (the differentiable ones, and epsilon_insensitive by smoothing continuation)
    except the hinge; the squared hinge only when ``n_rows >= n_features``."""
    if loss not in NEWTON.losses or loss in AUTO_SDCA_LOSSES:
        return False
    return loss not in OVERDETERMINED_ONLY or n_rows >= n_features


def newton_first(n_rows, n_columns, indptr, bias, warm_start):
    """Whether ``solver="auto"`` runs Newton from the start: narrow data, where the rows
    outnumber the columns (bias column counted) and Newton may solve with the explicit
    Hessian (``_newton.dense_budget``), unless the start is an array of dual variables (a
    path's extrapolated start, which SDCA takes). Measured on a9a and w8a (logistic and
    squared hinge, C = 0.01 .. 10^4; docs/newton.md): as fast or up to 3x faster than SDCA
    first (w8a logistic C = 10^4: 0.61 against 1.24 s, SDCA's w after 10 epochs being a
    poor start for Newton), but 10-50 ms slower at C = 0.01, where SDCA certifies in a few
    epochs, and 20% slower on w8a logistic at C = 100."""
    if isinstance(warm_start, np.ndarray) or n_rows < n_columns + bool(bias):
        return False
    return _newton.dense_budget(indptr, n_columns, bool(bias)) > 0


def train_linear(X, y, *, loss="logistic", lam=None, C=None, solver="auto", tol=1e-6,
                 max_epochs=5000, seed=0, verbose=0, callback=None, warm_start=None, n_jobs=1,
                 smoothing=None, epsilon=None, fit_intercept=False, intercept_scaling=1.0,
                 sample_weight=None, class_weight=None):
    """Train an L2-regularised linear model with the solver that suits the problem.

    Solves, with ``n`` rows (``c_i = 1`` unless weighted)::

        min_w  P(w) = (1/n) sum_i c_i loss(y_i, x_i.w) + (lam/2) ||w||^2

    (liblinear's ``(1/2)||w||^2 + C sum_i c_i loss`` divided by ``C n``) by

    - ``solver="sdca"``: :func:`dualsolve.train_sdca`, dual coordinate ascent (every loss);
    - ``solver="newton"``: :func:`dualsolve.train_newton`, primal Newton with conjugate
      gradients (every loss; hinge and epsilon-insensitive by smoothing continuation);
    - ``solver="auto"`` (default): SDCA, and from epoch ``SWITCH_EPOCHS = 10`` on, when
      SDCA's own rate predicts more than ``SDCA_AHEAD = 30`` further epochs to the
      certificate, Newton from SDCA's ``w`` (what remains at a large C or on unscaled
      data, where a dual epoch gains little and a Newton iteration's cost hardly changes)
      for logistic, smooth hinge, squared and both epsilon-insensitive losses, and for the
      squared hinge where ``X`` has at least as many rows as columns (with more columns
      than rows, nearly separable data, it stays with SDCA); the hinge stays with SDCA.
      On narrow data (more rows than columns, and few enough columns for Newton's
      explicit Hessian: ``newton_first``) those losses go to Newton from the start.
      On a path (``regularization_path``, ``cross_validate``, the estimators'
      ``warm_start``), once a solve has ended with Newton, or the next one's conditioning
      ``max_i c_i ||x_i||^2 / (gamma lam n)`` reaches 256 (logistic on unit rows: C >=
      1024), the next ones run Newton from the extrapolated primal (a larger C needs it
      more). What ran is
      ``Model.params["solver_chosen"]`` (``"sdca"``, ``"newton"`` or
      ``"sdca+newton"``, with ``params["sdca_epochs"]``, the epoch of the hand-over); the
      command line's liblinear ``-s`` numbers use the same rule.

    Both stop on a certified duality gap ``<= tol * D`` (relative suboptimality at most
    ``tol``; see ``docs/api.md``). Arguments as in :func:`dualsolve.train_sdca`; ``max_epochs`` counts
    SDCA epochs plus Newton iterations (the history numbers them on: SDCA's epochs
    ``0..k``, then Newton's iterations ``k+1, ...``). ``warm_start``: a Model of either
    solver (SDCA starts from its ``dual``, Newton from its ``coef``). ``n_jobs``: both
    solvers' threads on one problem (:func:`dualsolve.train_sdca`,
    :func:`dualsolve.train_newton`), classes side by side with more than two.

    Returns
    -------
    Model
        ``model.solver == "linear"``; ``history`` has the columns of both solvers (NaN where
        the chosen one has none).
    """
    return fit(LINEAR, locals())


def _columns(solver):
    return ("primal", "dual", "gap") + tuple(solver.history)


class _Padded(MonitorView):
    """Reports the chosen solver's values in train_linear's wider history row."""

    def __init__(self, mon, solver):
        super().__init__(mon)
        own = _columns(solver)
        self.n_values = len(own)
        self.slots = [mon.columns.index(c) for c in own]
        self.width = mon.n_values

    def report(self, epoch, values):
        row = [float("nan")] * self.width
        for slot, v in zip(self.slots, values):
            row[slot] = v
        return self.mon.report(epoch, tuple(row))


class _After(MonitorView):
    """Numbers a second solver's rows on after the first one's epochs; its epoch 0 (the
    start, the first solver's last row) is not reported again."""

    def __init__(self, mon, offset):
        super().__init__(mon)
        self.offset = offset

    def report(self, epoch, values):
        if epoch == 0:
            return 0
        return self.mon.report(epoch + self.offset, values)


def _options(name, o):
    params = inspect.signature(_FUNCTIONS[name]).parameters
    options = {k: params[k].default for k in SOLVERS[name].params}     # its own defaults
    options.update(fit_intercept=o["fit_intercept"], intercept_scaling=o["intercept_scaling"])
    return options


def _run(name, p, o, mon, wrap=None):
    """Run one solver's engine; ``wrap`` puts a view (reading the engine's own values)
    around its padded view of the monitor."""
    chosen = SOLVERS[name]
    if p.loss not in chosen.losses:
        raise ValueError(f"solver={name!r} does not take loss={p.loss!r} (it takes "
                         f"{list(chosen.losses)}); use solver='auto' or 'sdca'")
    view = _Padded(mon, chosen)
    res = chosen.engine(p, _options(name, o), wrap(view) if wrap else view)
    res.info = dict(res.info, solver_chosen=name)
    return res


class _Watch(MonitorView):
    """Watches SDCA's epochs (values primal, dual, gap, gap_estimate, ...) and stops it, to
    hand over to Newton, when from SWITCH_EPOCHS on its pass estimates, decreasing
    geometrically at the rate of the last RATE_SPAN epochs, would need more than
    SDCA_AHEAD epochs to reach tol times the last certified lower bound (the estimates
    scaled by how far the last exact check was above them: near the end they
    under-estimate the gap of w(alpha)). The rate is that of the smallest estimate so far:
    one pass's estimate can be several times the last one's (IMDB, logistic, C = 10^4:
    8e-9 three epochs after 2e-9), and an uptick is noise, not a stalled solve. Computed
    values only, never clocks: a seed still determines the result."""

    def __init__(self, tol):
        self.tol = tol
        self.estimates = {}
        self.lower = math.nan
        self.bias = 1.0         # how far an exact check found the gap above the estimate
        self.smallest = math.inf    # the smallest pass estimate so far
        self.handed_over = False

    def report(self, epoch, values):
        status = self.mon.report(epoch, values)
        if status:
            return status
        primal, dual, gap, estimate = values[:4]
        if math.isfinite(dual) and dual > 0.0:
            self.lower = dual
        if estimate >= 0.0:                 # not NaN (epoch 0)
            self.smallest = min(self.smallest, estimate)
        estimate = self.smallest if math.isfinite(self.smallest) else math.nan
        if math.isfinite(gap) and estimate > 0.0:
            self.bias = max(1.0, gap / estimate)
        self.estimates[epoch] = estimate
        if epoch >= SWITCH_EPOCHS and self._ahead(epoch) > SDCA_AHEAD:
            self.handed_over = True
            return _status.CALLBACK
        return 0

    def around(self, view):
        """Watch ``view`` (the engine's padded view of the monitor); returns self."""
        super().__init__(view)
        return self

    def _ahead(self, epoch):
        """Epochs SDCA's rate predicts to the target (inf: no rate, or no lower bound)."""
        now, then = self.estimates.get(epoch), self.estimates.get(epoch - RATE_SPAN)
        target = self.tol * self.lower
        if not (now is not None and then is not None and now > 0.0 and target > 0.0):
            return math.inf
        if now * self.bias <= target:
            return 0.0
        if not now < then:
            return math.inf
        return math.log(target / (now * self.bias)) / (math.log(now / then) / RATE_SPAN)


def _sdca_then_newton(p, o, mon):
    watch = _Watch(p.tol)
    first = _run("sdca", p, o, mon, wrap=watch.around)
    if not watch.handed_over or first.status != _status.CALLBACK:
        return first                        # certified, stopped, or the whole budget
    k = first.n_epochs
    start = Model(first.coef, intercept=first.intercept)
    res = _run("newton", replace(p, max_epochs=p.max_epochs - k, warm_start=start), o,
               _After(mon, k))
    res.n_epochs += k
    res.info = dict(res.info, solver_chosen="sdca+newton", sdca_epochs=k)
    return res


def _engine(p, o, mon):
    if o["solver"] != "auto":
        return _run(o["solver"], p, o, mon)
    if p.start_rule == NEWTON_START:        # a path whose last solve ended with Newton
        return _run("newton", p, o, mon)
    n_rows, n_features = p.X.shape
    if switches_to_newton(p.loss, n_rows, n_features + bool(o["fit_intercept"])):
        if newton_first(n_rows, n_features, p.X.indptr, o["fit_intercept"], p.warm_start):
            return _run("newton", p, o, mon)
        return _sdca_then_newton(p, o, mon)
    return _run("sdca", p, o, mon)


LINEAR = register(Solver(
    name="linear", family="linear",
    summary="L2-regularised linear models: SDCA, going on with Newton where it is slow",
    losses=SDCA.losses,
    params=dict(solver=[Options("auto", *SOLVERS)],
                fit_intercept=[Boolean()],
                intercept_scaling=[Interval(Real, 0, None, closed="neither")]),
    weights=True,
    history=tuple(dict.fromkeys(SDCA.history + NEWTON.history)),
    certificate="that of the solver it runs (sdca or newton): duality gap "
    + certified("P(w) - D(a)", "D(a)", "P(0)"),
    engine=_engine, unevaluated_nan=True))
