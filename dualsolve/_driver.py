"""The one solver driver: every ``train_*`` function is a description (:class:`Solver`)
and a call to :func:`fit`.

:func:`fit` validates what every solver shares (X, y for the solver's losses, lam or C,
tol, max_epochs, seed, verbose, callback, warm_start, n_jobs) and the solver's own parameters
against the description's declarative constraints; keeps X read-only while the engine
runs (the compiled loops trust the arrays they validated); runs the engine with an
:class:`~dualsolve._monitor.EpochMonitor`; maps the engine's status to
``Model.stop_reason``, warnings and errors; and builds the :class:`~dualsolve.model.Model`.

The same descriptions drive the command line (``dualsolve solvers``, ``train -s NAME``),
the contract test and the table of ``docs/api.md``.
"""
import os
import sys
import threading
import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from ._core import losses as _losses
from ._core import status as _status
from ._monitor import EpochMonitor
from ._params import (Anything, Boolean, CallableOrNone, Integral, Interval, Real, validate)
from ._threads import effective_n_jobs
from ._validation import (MAX_EPOCHS, ConvergenceWarning, check_csr, check_labels,
                          check_loss_param, check_regularization, check_seed, check_weights)
from ._warm_path import Along, along_path
from .model import Model, make_history

#: losses of regression problems (real targets); the others classify two classes
REGRESSION_LOSSES = _losses.REGRESSION_LOSSES

#: the arguments of the solvers that take weights (``Solver.weights``); not solver options
WEIGHT_ARGS = ("sample_weight", "class_weight")

#: the parameters every solver takes, and their constraints (defaults are per solver)
COMMON = {
    "tol": [Interval(Real, 0, None, closed="left")],
    "max_epochs": [Interval(Integral, 0, MAX_EPOCHS)],
    "seed": [None, Interval(Integral, 0, None)],
    "verbose": [Boolean(), Interval(Integral, 0, None)],
    "callback": [CallableOrNone()],
    "warm_start": [None, Anything("a Model or an array")],
    "n_jobs": [None, Interval(Integral, None, -1), Interval(Integral, 1, None)],
}


@dataclass(frozen=True)
class Solver:
    """What the driver needs to know about one solver (its ``train_<name>`` function keeps
    the signature, the defaults and the docstring)."""
    name: str                   # train_<name>
    family: str                 # the package folder of its engine
    summary: str                # one line, for ``dualsolve solvers``
    losses: tuple               # accepted losses
    params: dict                # its own parameters -> constraints (COMMON ones excluded)
    certificate: str            # what stop_reason == "converged" certifies, in words
    engine: Callable            # engine(problem, options, monitor) -> Result
    history: tuple = ()         # history columns after primal, dual, gap
    diverge_hint: str = ""      # which parameter to change when it diverges
    lam_zero: bool = False      # lam = 0 allowed
    liblinear_c: bool = True    # takes C as liblinear's alias lam = 1/(C n)
    label_task: Optional[Callable] = None   # (loss, args) -> "binary" | "regression" | "soft"
    unevaluated_nan: bool = False   # a NaN primal in a history row means "not evaluated"
    watch_growth: bool = False      # a primal far above its start is divergence (stochastic
                                    # primal methods); non-finite always is
    objective_scale: Optional[Callable] = None   # problem -> the objective's scale for that
    samples: Optional[Callable] = None      # (n rows, options) -> the n of lam's 1/n and of
                                            # C's lam = 1/(C n) (mixup counts mixed points)
    weights: bool = False       # takes sample_weight / class_weight (a weighted loss sum):
                                # the driver validates them into Problem.weight

    @property
    def function_name(self):
        return "train_" + self.name

    def task(self, loss, args):
        if self.label_task is not None:
            return self.label_task(loss, args)
        return "regression" if loss in REGRESSION_LOSSES else "binary"


@dataclass
class Problem:
    """The validated inputs an engine works on."""
    X: object                   # dualsolve._validation.CSRInput (read-only during the run)
    y: np.ndarray               # float64: -1/+1, soft labels in [-1, 1], or real targets
    classes: Optional[np.ndarray]
    loss: str
    loss_param: float           # the loss table's parameter (smoothing width, epsilon)
    lam: float
    tol: float
    max_epochs: int
    seed: int
    verbose: int
    callback: Optional[Callable]
    warm_start: object          # None, a Model or an array: the engine reads what it needs
    solver: Solver = None
    codes: Optional[np.ndarray] = None  # more than two classes: each row's class index
    weight: Optional[np.ndarray] = None  # per-row loss weights (solvers with weights=True)
    label: str = ""             # which sub-problem this is, for warnings (" (class c vs rest)")
    path_start: bool = False    # warm_start was extrapolated along lam (dualsolve._warm_path):
                                # SDCA skips its exact check and keeps the training margins
    start_rule: str = ""        # which extrapolation gave it (kept in the model's params)
    start_epochs: int = 0       # epochs of the path's last solve (0: not a path's start)
    n_jobs: int = 1             # threads this solve may use (dualsolve._threads)
    stop: object = None         # a shared stop request (dualsolve._monitor.StopRequest) when
                                # this solve runs beside others (one-vs-rest in threads)
    shared: object = None       # a SharedBuild when this solve is one of several on the
                                # same points (one-vs-rest's classes, a path's solves): what
                                # each would build alike (the kernel solvers' dense Gram)

    @property
    def n(self):
        return self.X.shape[0]

    @property
    def d(self):
        return self.X.shape[1]


class SharedBuild:
    """Values that the solves on one set of points (one-vs-rest's classes, a
    regularization path's solves) would each build alike, built by the first to ask and
    kept while they run; a lock makes the others wait for it (classes in threads), so a
    build may use the fit's ``threads``."""

    def __init__(self, threads=1):
        self.threads = threads
        self._lock = threading.Lock()
        self._values = {}

    def get(self, key, build, keep=lambda value: True):
        """The value under ``key``, from ``build()`` the first time; a value that
        ``keep`` refuses (e.g. one with state of its own) is returned but not kept."""
        with self._lock:
            if key in self._values:
                return self._values[key]
            value = build()
            if keep(value):
                self._values[key] = value
            return value


@dataclass
class Result:
    """What an engine returns. ``measure`` / ``threshold``: the value its stopping test
    reached and the value it needed (for the max_epochs warning); ``note``: a sentence the
    max_epochs warning ends with (why the criterion was not reached, e.g. the rate seen);
    ``info``: values to record in ``Model.params`` (step sizes chosen, P(0), ...);
    ``extra``: arrays."""
    status: int
    n_epochs: int
    coef: np.ndarray
    intercept: float = 0.0
    dual: Optional[np.ndarray] = None
    measure: float = float("nan")
    threshold: float = float("nan")
    info: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    model_class: type = Model
    model_kwargs: dict = field(default_factory=dict)
    note: str = ""


def certified(gap, lower, scale, objective="P"):
    """The words of the one stopping rule for a ``certificate`` string: ``gap <= tol *
    lower`` (so the relative suboptimality is at most tol), or the rounding floor."""
    o = objective
    return (f"{gap} <= tol * {lower}, i.e. ({o} - {o}*) / {o}* <= tol, or <= 64 ulps of "
            f"{scale} (rounding floor)")


def threshold(lower, tol, scale):
    """``Result.threshold`` of a certified engine: the value its certificate had to reach,
    ``max(tol * lower, floor(scale))`` with ``lower = P - gap`` the last certified lower
    bound on P* and ``scale`` the objective's scale (P(0), F(0), p(1-p)) that sets the
    rounding floor; the one rule is ``dualsolve._core.status`` (``gap_certifies`` in
    status.pxd, ``certifies`` in Python)."""
    return _status.target(lower, tol, _status.floor(scale))


_REGISTRY = {}


def register(solver):
    """Add a description to the registry (one per ``train_*``); returns it."""
    if solver.name in _REGISTRY:
        raise ValueError(f"solver {solver.name!r} is registered twice")
    _REGISTRY[solver.name] = solver
    return solver


def solvers():
    """Every registered solver description, by name."""
    return dict(_REGISTRY)


def fit(solver, args):
    """Run ``solver`` on the arguments of its ``train_*`` call (``locals()``); more than
    two classes go one-vs-rest (``dualsolve.multiclass``)."""
    p, options = prepare(solver, args)
    if isinstance(p.warm_start, Along):     # the scikit-learn estimators' warm path
        p = along_path(p, p.warm_start.models, p.lam, solver)
    return solve(solver, p, options)


def solve(solver, p, options):
    """Solve a validated problem (one-vs-rest when it has more than two classes, unless the
    solver's ``multi_class`` option names a multi-class engine, e.g. ``"crammer_singer"``,
    which then gets the whole problem); also what ``regularization_path`` calls along its
    grid, validating X once."""
    if p.codes is not None and options.get("multi_class", "ovr") == "ovr":
        from .multiclass import fit_one_vs_rest
        return fit_one_vs_rest(solver, p, options, run)
    return run(solver, p, options)


def run(solver, p, options):
    """Solve one validated problem: the engine under a monitor, then the Model, the
    warnings, and the callback's or Ctrl-C's exception (carrying the partial model)."""
    mon = EpochMonitor(("primal", "dual", "gap") + tuple(solver.history),
                       callback=p.callback, verbose=p.verbose,
                       unevaluated_nan=solver.unevaluated_nan, watch_growth=solver.watch_growth,
                       scale=solver.objective_scale(p) if solver.objective_scale else None,
                       stop=p.stop, prefix=f"[{p.label.strip(' ()')}] " if p.stop else "")
    with _read_only(p.X):
        try:
            res = solver.engine(p, options, mon)
        except MemoryError as exc:
            raise _memory_error(solver, p, exc) from None
    if res.status == _status.NO_MEMORY:
        raise _memory_error(solver, p, None)
    model = _build_model(solver, p, options, res, mon)
    if mon.error is not None:
        if isinstance(mon.error, KeyboardInterrupt):
            mon.error.model = model        # the partial result, stop_reason "interrupted"
        raise mon.error
    _warn(solver, p, res, mon, model)
    return model


def prepare(solver, args):
    """(Problem, validated solver options) from the arguments of a ``train_*`` call."""
    name = solver.function_name
    for key in solver.params:
        if key not in args:
            raise TypeError(f"{name}: its description lists {key!r} but its signature lacks it")
    common = {k: validate(k, args[k], COMMON[k]) for k in COMMON}
    n_jobs = effective_n_jobs(common["n_jobs"])
    Xc = check_csr(args["X"], threads=n_jobs)
    n = Xc.shape[0]
    loss, loss_param = _check_loss(solver, args)
    task = solver.task(loss, args)
    codes = all_codes = None
    if task == "binary":                    # two classes: -1 / +1; more: one-vs-rest codes
        all_codes, classes = check_labels(args["y"], n, "classes")
        y = np.where(all_codes == 1, 1.0, -1.0)
        codes = all_codes if classes.shape[0] > 2 else None
    else:
        y, classes = check_labels(args["y"], n, task)
    weight = None
    if solver.weights:
        for key in WEIGHT_ARGS:
            if key not in args:
                raise TypeError(f"{name}: its description takes weights but its signature "
                                f"lacks {key!r}")
        weight = check_weights(args["sample_weight"], args["class_weight"], all_codes, classes, n)
    if task == "soft":                      # soft labels in [-1, 1]: the two classes are its ends
        classes = np.array([-1.0, 1.0])
    options = {k: validate(k, args[k], c) for k, c in solver.params.items()}
    C = args.get("C") if solver.liblinear_c else None
    n_lam = solver.samples(n, options) if solver.samples else n
    lam = check_regularization(args.get("lam"), C, n_lam, allow_zero=solver.lam_zero)
    p = Problem(X=Xc, y=y, classes=classes, loss=loss, loss_param=loss_param, lam=lam,
                tol=common["tol"], max_epochs=common["max_epochs"],
                seed=check_seed(common["seed"]), verbose=int(common["verbose"]),
                callback=common["callback"], warm_start=common["warm_start"], solver=solver,
                codes=codes, weight=weight, n_jobs=n_jobs)
    return p, options


def _check_loss(solver, args):
    return check_loss(solver.function_name, solver.losses, args.get("loss", solver.losses[0]),
                      args.get("smoothing"), args.get("epsilon"))


def check_loss(function_name, losses, loss, smoothing=None, epsilon=None):
    """(loss, its parameter in the loss table) for a solver taking ``losses``; errors name
    ``function_name``."""
    if not isinstance(loss, str):
        raise TypeError(f"loss must be a string, one of {list(losses)}; got "
                        f"{type(loss).__name__}")
    if loss not in losses:
        raise ValueError(f"unknown loss {loss!r} for {function_name}: loss must be one "
                         f"of {list(losses)}")
    return check_loss_param(loss, smoothing, epsilon)


def _can_unlock(a):
    """Whether numpy will make ``a`` writeable again once it is read-only: only if its memory
    is writeable. An array on a ``bytes`` object (what ``pickle.load`` gives for a large
    array from a file, writeable for old pickles' sake) would stay read-only for good."""
    base = a
    while isinstance(base, np.ndarray):
        if base.base is None:
            return True
        base = base.base
    try:
        return not memoryview(base).readonly
    except TypeError:           # no buffer to ask: numpy would refuse too
        return False


class _read_only:
    """Make the CSR arrays read-only while the engine runs: a callback that wrote into X
    would otherwise change the rows under a loop that trusts their indices. Arrays numpy
    would not unlock afterwards are left as they are (the user's flags are not ours)."""

    def __init__(self, Xc):
        self.arrays = [a for a in (Xc.data, Xc.indices, Xc.indptr)
                       if a.flags.writeable and _can_unlock(a)]

    def __enter__(self):
        for a in self.arrays:
            a.flags.writeable = False

    def __exit__(self, *exc):
        for a in self.arrays:
            a.flags.writeable = True
        return False


#: above this max_i ||x_i||^2 / (lam n), first-order and coordinate methods need very many
#: epochs per digit of accuracy
ILL_CONDITIONED = 1e4


def conditioning(p, bias=0.0, lam=None):
    """max_i c_i ||x_i||^2 / (lam n) (c_i the row weights, a constant feature's bias^2 added
    to every row; ``lam`` p's unless given): how many epochs per e-fold a dual coordinate
    or stochastic first-order method needs; 0 when unknown."""
    lam = p.lam if lam is None else lam
    if lam <= 0 or p.X.sqnorm is None or not len(p.X.sqnorm):
        return 0.0
    weight = 1.0 if p.weight is None else p.weight
    return float(np.max(weight * (p.X.sqnorm + bias * bias))) / (lam * p.n)


#: the families whose objective is train_linear's (the same loss and lam): their badly
#: conditioned problems are the ones train_linear hands to Newton
SAME_OBJECTIVE_AS_LINEAR = ("sdca", "primal_dual", "adfsdca")


def _conditioning(p):
    """A sentence for the max_epochs warning when X is badly scaled for this lam."""
    kappa = conditioning(p)
    if kappa <= ILL_CONDITIONED:
        return ""
    remedy = "standardise the columns of X, or raise lam"
    if p.solver is not None and p.solver.family in SAME_OBJECTIVE_AS_LINEAR:
        remedy = ("standardise the columns of X, raise lam, or solve it with train_linear "
                  "(the same objective; it hands such problems to a Newton solver)")
    return (f". The problem is badly conditioned for this lam (max ||x_i||^2 / (lam n) = "
            f"{kappa:.2g}): {remedy}")


def _memory_error(solver, p, exc):
    n, d = p.X.shape
    why = f": {exc}" if exc is not None and str(exc) else ""
    return MemoryError(f"{solver.function_name} ran out of memory on X with {n} rows and {d} "
                       f"features (a float64 vector of n_features takes {8 * d / 2**30:.2f} "
                       f"GiB){why}")


def _build_model(solver, p, options, res, mon):
    params = dict(loss=p.loss, loss_param=p.loss_param, lam=p.lam, tol=p.tol,
                  max_epochs=p.max_epochs, seed=p.seed, n_jobs=p.n_jobs)
    if solver.liblinear_c and p.lam > 0:
        params["C"] = 1.0 / (p.lam * (solver.samples(p.n, options) if solver.samples else p.n))
    params.update({k: v for k, v in options.items() if not callable(v)})
    if p.weight is not None:                # the weights themselves are data, not kept
        params["weighted"] = True
    if p.start_rule:                        # a path's start (dualsolve._warm_path)
        params["start_rule"] = p.start_rule
    params.update(res.info)
    history = make_history(mon.rows, extra_fields=solver.history)
    return res.model_class(coef=res.coef, intercept=res.intercept, dual=res.dual,
                           history=history, stop_reason=_status.STOP_REASON[res.status],
                           n_epochs=res.n_epochs, solver=solver.name, params=params,
                           classes=p.classes, extra=res.extra, **res.model_kwargs)


def _user_stacklevel():
    """warnings.warn's stacklevel, called from here, of the first frame outside the
    package: the user's call of train_*, regularization_path, cross_validate, ..."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _warn(solver, p, res, mon, model):
    name = solver.function_name + p.label
    level = _user_stacklevel()
    # tol = 0 asks for the whole budget: ending there is what was asked
    if model.stop_reason == "max_epochs" and p.max_epochs > 0 and p.tol > 0:
        reached = ""
        if np.isfinite(res.measure):
            reached = f": {res.measure:.3e} > {res.threshold:.3e}"
        # an engine's own note says why more precisely than the generic conditioning hint
        why = f". {res.note}" if res.note else _conditioning(p)
        # an engine that gave up before its budget (Newton's stalls) says so, not "at"
        early = model.n_epochs < p.max_epochs
        where = (f"after {model.n_epochs} epochs (max_epochs={p.max_epochs})" if early
                 else f"at max_epochs={p.max_epochs}")
        warnings.warn(f"{name} stopped {where} before its criterion held "
                      f"({solver.certificate}{reached}); increase "
                      f"{'tol' if early else 'max_epochs or tol'}{why}", ConvergenceWarning,
                      stacklevel=level)
    elif model.stop_reason == "diverged":
        last = model.history["primal"][-1] if len(model.history) else float("nan")
        epoch = mon.diverged_at if mon.diverged_at is not None else model.n_epochs
        warnings.warn(f"{name} diverged at epoch {epoch} (objective {last:.3e}); "
                      f"{solver.diverge_hint or 'the iterate is not a solution'}",
                      ConvergenceWarning, stacklevel=level)


def certificate_table():
    """The markdown table of docs/api.md: every solver, its losses and what "converged"
    certifies (tests/test_docs_api.py keeps the page equal to it)."""
    lines = ["| solver | losses | stop_reason \"converged\" means |", "|---|---|---|"]
    for name in sorted(_REGISTRY):
        s = _REGISTRY[name]
        lines.append(f"| `{s.function_name}` | {', '.join(s.losses)} | {s.certificate} |")
    return "\n".join(lines)
