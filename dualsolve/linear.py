"""``train_linear``: one entry point for L2-regularised linear models; it runs the named
solver, or picks one by the problem's conditioning (``solver="auto"``)."""
import inspect

from ._core import losses as _losses
from ._driver import Solver, certified, conditioning, fit, register
from ._monitor import MonitorView
from ._params import Boolean, Interval, Options, Real
from .newton.api import NEWTON, train_newton
from .sdca.api import SDCA, train_sdca

#: solvers train_linear can run (the same objective and arguments), and their functions
SOLVERS = {"sdca": SDCA, "newton": NEWTON}
_FUNCTIONS = {"sdca": train_sdca, "newton": train_newton}

#: above this max_i ||x_i||^2 / (lam n) the primal Newton method is chosen (smooth losses):
#: an SDCA epoch then gains too little. Measured (docs/benchmarks.md, bench/large_c.py):
#: news20 logistic, C = 1 (kappa 1): SDCA 6 epochs, far ahead; a9a C = 100 (kappa 1400):
#: Newton 0.13 s, SDCA not converged in 3000 epochs.
NEWTON_ABOVE = 100.0

#: losses Newton takes but that auto leaves to SDCA: the squared hinge's generalised
#: Hessian misleads Newton's step on nearly separable data at large C (docs/newton.md)
AUTO_SDCA_LOSSES = ("squared_hinge",)


def choose_solver(loss, kappa):
    """The solver ``solver="auto"`` runs for a loss and the conditioning ``kappa``
    (``dualsolve._driver.conditioning``): Newton for a differentiable loss on a badly
    conditioned problem, SDCA otherwise (every loss; the one for hinge and
    epsilon_insensitive, which have no gradient)."""
    if loss in _losses.SMOOTH_LOSSES and loss not in AUTO_SDCA_LOSSES and kappa > NEWTON_ABOVE:
        return "newton"
    return "sdca"


def train_linear(X, y, *, loss="logistic", lam=None, C=None, solver="auto", tol=1e-6,
                 max_epochs=5000, seed=0, verbose=0, callback=None, warm_start=None,
                 smoothing=None, epsilon=None, fit_intercept=False, intercept_scaling=1.0,
                 sample_weight=None, class_weight=None):
    """Train an L2-regularised linear model with the solver that suits the problem.

    Solves, with ``n`` rows (``c_i = 1`` unless weighted)::

        min_w  P(w) = (1/n) sum_i c_i loss(y_i, x_i.w) + (lam/2) ||w||^2

    (liblinear's ``(1/2)||w||^2 + C sum_i c_i loss`` divided by ``C n``) by

    - ``solver="sdca"``: :func:`dualsolve.train_sdca`, dual coordinate ascent (every loss);
    - ``solver="newton"``: :func:`dualsolve.train_newton`, primal Newton with conjugate
      gradients (differentiable losses);
    - ``solver="auto"`` (default): Newton when the loss is differentiable (logistic,
      smooth hinge, squared, squared epsilon-insensitive) and the problem is badly
      conditioned, ``kappa = max_i ||x_i||^2 / (lam n) > 100`` (at a large C, where a dual
      coordinate epoch gains little and a Newton iteration's cost hardly changes); SDCA
      otherwise, and always for hinge, epsilon-insensitive and the squared hinge. The
      choice is ``Model.params["solver_chosen"]``; the command line's liblinear ``-s``
      numbers use the same rule.

    Both stop on a certified duality gap ``<= tol * D`` (relative suboptimality at most
    ``tol``; see ``docs/api.md``). Arguments as in :func:`dualsolve.train_sdca`; ``max_epochs`` counts
    SDCA epochs or Newton iterations, whichever runs. ``warm_start``: a Model of either
    solver (SDCA starts from its ``dual``, Newton from its ``coef``).

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


def _engine(p, o, mon):
    bias = o["intercept_scaling"] if o["fit_intercept"] else 0.0
    name = o["solver"]
    if name == "auto":
        name = choose_solver(p.loss, conditioning(p, bias))
    chosen = SOLVERS[name]
    if p.loss not in chosen.losses:
        raise ValueError(f"solver={name!r} does not take loss={p.loss!r} (it takes "
                         f"{list(chosen.losses)}); use solver='auto' or 'sdca'")
    params = inspect.signature(_FUNCTIONS[name]).parameters
    options = {k: params[k].default for k in chosen.params}     # its own defaults
    options.update(fit_intercept=o["fit_intercept"], intercept_scaling=o["intercept_scaling"])
    res = chosen.engine(p, options, _Padded(mon, chosen))
    res.info = dict(res.info, solver_chosen=name)
    return res


LINEAR = register(Solver(
    name="linear", family="linear",
    summary="L2-regularised linear models: SDCA or Newton, chosen by the conditioning",
    losses=SDCA.losses,
    params=dict(solver=[Options("auto", *SOLVERS)],
                fit_intercept=[Boolean()],
                intercept_scaling=[Interval(Real, 0, None, closed="neither")]),
    weights=True,
    history=tuple(dict.fromkeys(SDCA.history + NEWTON.history)),
    certificate="that of the solver it runs (sdca or newton): duality gap "
    + certified("P(w) - D(a)", "D(a)", "P(0)"),
    engine=_engine, unevaluated_nan=True))
