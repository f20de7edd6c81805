"""Warm starts along a path of lam: the start of a solve at a new lam from solutions at
neighbouring ones. ``regularization_path`` uses it for every solve after the first, and
so do the scikit-learn estimators with ``warm_start=True`` (GridSearchCV over C), through
:class:`Along`: a warm start given as the models solved before, which the driver turns
into this start once the problem is validated."""
from dataclasses import replace

import numpy as np

from ._core import losses as _losses
from .model import Model


# a solve from the primal's start that takes longer than this moves the path to alpha's
SLOW_START_EPOCHS = 10
#: the start rule of a train_linear(solver="auto") solve that Newton takes from the start
#: (``_newton_goes_on``): the previous solve on the path ended with Newton, or this one is
#: ill-conditioned (NEWTON_CONDITION)
NEWTON_START = "newton"
#: a path's solve whose conditioning ``max_i c_i ||x_i||^2 / (gamma lam n)`` (the data's
#: part of a coordinate step's curvature against the loss's, gamma the conjugate's strong
#: convexity: C / 4 for logistic on unit rows) reaches this is Newton's from the start,
#: from the extrapolated primal, where auto hands over at all. Measured (5-fold
#: cross_validate over 10 C from 2^-5 to 2^15, logistic, tol 1e-3, one thread): news20 10.6
#: s against 12.1 s (SDCA at C = 2^10.56 handed over after 17-23 epochs in three folds of
#: five, at 2^12.78 after 15 in another); reuters, three folds, 0.13 s each against 0.20 -
#: 0.26 s; IMDB 3.8 s against 7.8 s in one fold (SDCA handed C = 2^15 to Newton after 21
#: epochs, and Newton needed 103 passes from its w against 11 from the extrapolation) and
#: 4.2 against 4.1 s in another. From C = 2^8.33 (kappa 80) on news20: 12.1 s, no gain
#: at tol 1e-3, but 12.8 s against 13.9 s at tol 1e-4 (Newton's iterations hardly grow
#: with the precision, SDCA's epochs do): the crossover moves with tol, this is tol 1e-3's.
NEWTON_CONDITION = 256.0


class Along:
    """A warm start read off the last (up to three) models solved on the same data at
    other values of lam (``extrapolated_start``): the driver replaces it by the start and
    marks the solve as a path's (its start is not checked, its margins are kept)."""

    def __init__(self, models):
        self.models = tuple(models)[-3:]


def along_path(p, done, lam, solver):
    """Problem ``p`` at ``lam``, started from the solutions ``done`` before it on the path
    (none: a cold start), marked as a path's solve: its start rule and the epochs its
    neighbour took (train_sdca's relaxation reads them) go with it."""
    if not done:
        return replace(p, lam=lam, warm_start=None, path_start=True)
    start, rule = extrapolated_start(done, lam, p, solver)
    return replace(p, lam=lam, warm_start=start, path_start=True, start_rule=rule,
                   start_epochs=done[-1].n_epochs)


def extrapolated_start(done, lam, p, solver):
    """SDCA's warm start for the next lam from the last two or three solutions, along log
    lam. Which quantity moves smoothly depends on the loss's dual domain:

    * bounded (logistic, hinge, ...): ``a_i`` stays O(1) as C grows. For a smooth loss the
      primal is extrapolated and the dual read off it, ``a = -c phi'(X w)``
      (``_dual_of_best_primal``), until a solve from that start proves slow
      (``_primal_start_slow``): then ``alpha`` as below, where it settles. Otherwise ``a``
      is extrapolated linearly.
    * unbounded (squared hinge, squared, ...): ``a_i = -phi'(x_i.w)`` shrinks like 1/C on
      rows the solution nearly fits, and reading it off an extrapolated primal multiplies
      the primal's error by C. Here liblinear's dual ``alpha = a / (lam n)`` (``w = X^T
      alpha / n``) settles, and is extrapolated: ``w`` moves with it (it is linear in
      ``alpha``), so the start is consistent in both.

    Measured (news20, C = 2^-3 .. 2^6, each solve to tol 1e-6; relative gap of the start
    at C = 64, then the path's epochs): squared hinge, ``alpha`` 5e-3 against 2e3 from the
    primal, 275 epochs against 315; logistic, the primal's start is at 4e-3 against
    ``alpha``'s 4e-5, yet SDCA certifies it in 36 epochs against 62 (its error lies where a
    dual epoch removes it fast). The result is put back into the loss's dual domain. For
    ``train_linear`` the start goes to its SDCA (with ``solver="auto"``, Newton goes on from
    SDCA's w). Other solvers, one-vs-rest, and a single model give the last model.

    For ``train_linear(solver="auto")`` whose last solve ended with Newton, or whose next
    solve is ill-conditioned (NEWTON_CONDITION; ``_newton_goes_on``), the start is instead
    the extrapolated primal of least objective as a Model, and Newton takes it from the
    start (rule "newton"). Measured (news20 logistic, 5-fold ``cross_validate`` over 10 C
    from 2^-5 to 2^15, tol 1e-3, one thread, two alternating runs): 44.0-47.6 s against
    55.0-57.4 s with SDCA from the dual read off it (fold 0, C = 2^15: 1.7 s, 20 passes,
    against 4.3 s, 11 epochs then 47 passes);
    a9a, logistic 1.7 s against 5.1 s, squared hinge 0.8-0.9 s against 2.9-3.0 s.

    Returns ``(start, rule)``, rule one of "last", "linear", "primal", "alpha", "newton"
    (the solve keeps it in ``params["start_rule"]``, which the next start reads)."""
    last = list(done[-3:])
    s = np.log([m.params["lam"] for m in last])
    # an extrapolation needs two or more distinct lam, binary (or one-vs-rest) models
    if (len(last) < 2 or np.unique(s).size < s.size or p.codes is not None
            or last[-1].params.get("multi_class", "ovr") != "ovr"):
        return done[-1], "last"
    if _newton_goes_on(last[-1], solver, lam, p):
        return _best_primal_model(last, s, lam, p), NEWTON_START
    # train_linear's SDCA (auto: SDCA first) takes the start; its Newton would not
    dual_start = solver.name == "sdca" or (solver.name == "linear"
                                           and last[-1].params.get("solver") != "newton")
    if not dual_start or any(m.dual is None for m in last):
        return done[-1], "last"
    lo, hi = _losses.dual_bounds(p.loss, p.y, p.loss_param)
    if p.weight is not None:
        lo, hi = lo * p.weight, hi * p.weight
    if p.loss not in _losses.SMOOTH_LOSSES:
        c = _lagrange(s[-2:], np.log(lam))
        a = c[0] * last[-2].dual + c[1] * last[-1].dual
        rule = "linear"
    elif _alpha_settles(last) and (not np.all(np.isfinite(lo) & np.isfinite(hi))
                                   or _primal_start_slow(last[-1])):
        c = _lagrange(s, np.log(lam))
        a = sum(ck * (lam / m.params["lam"]) * m.dual for ck, m in zip(c, last))
        rule = "alpha"
    else:
        a = _dual_of_best_primal(last, s, lam, p)
        rule = "primal"
    return np.clip(a, lo, hi), rule


def _primal_start_slow(model):
    """Whether the path has found the primal's start slow on this data: the last solve
    started from it and took more than SLOW_START_EPOCHS epochs, or had already left it
    for ``alpha``'s. On rows of very unequal norms (news20 after ``MaxAbsScaler``: row
    norms^2 from 1 to 12,682) ``a = -phi'(X w)`` turns the primal's small error into a
    large one on the long rows (start gaps 0.1 .. 0.8 at C = 4 .. 64), and ``alpha``'s
    start (gap 2e-5) is certified in a few epochs; on unit rows (news20's TF-IDF) the
    primal's start is certified in 3-4 epochs and is kept."""
    rule = model.params.get("start_rule")
    return rule == "alpha" or (rule == "primal" and model.n_epochs > SLOW_START_EPOCHS)


def _alpha_settles(models):
    """Whether liblinear's ``alpha = a / lam`` changed less than ``a`` over the last step
    (relative to their size): true where the rows are nearly fitted (news20, squared hinge:
    0.26 against 0.67 at C = 32), false where the solution settles with its margin
    violations (heart_scale, a9a: ``a`` changes by 1e-3, ``alpha`` by a half per factor 2
    of C, and the primal's start is the one that pays)."""
    (a0, l0), (a1, l1) = [(m.dual, m.params["lam"]) for m in models[-2:]]
    size = max(_norm(a1), np.finfo(float).tiny)
    return _norm(a1 / l1 - a0 / l0) * l1 / size < _norm(a1 - a0) / size


def _inner(a, b):
    """a.b on one thread: numpy's einsum loop, not BLAS, whose threads (OpenBLAS: from
    10,000 entries on) would then spin on the other cores through the next solve (a9a
    cross-validation: user time twice the wall time, the wall time up to 25% longer)."""
    return float(np.einsum("i,i->", a, b))


def _norm(a):
    return _inner(a, a) ** 0.5


def _lagrange(s, t):
    """Weights c with sum_k c_k f(s_k) = the polynomial through (s_k, f(s_k)) at t."""
    return np.array([np.prod([(t - sj) / (sk - sj) for j, sj in enumerate(s) if j != k])
                     for k, sk in enumerate(s)])


def _newton_goes_on(model, solver, lam, p):
    """Whether ``train_linear(solver="auto")`` leaves the next, larger C of a path (``lam``
    smaller than ``model``'s) to Newton from the start, from the extrapolated primal
    (NEWTON_START): ``model``'s solve ended with Newton (SDCA handed over, or Newton ran from
    the start), or the next solve's conditioning reaches NEWTON_CONDITION where auto would
    hand over at all (``linear.switches_to_newton``: not the hinge, nor the squared hinge
    on more columns than rows)."""
    if not (solver.name == "linear" and model.params.get("solver") == "auto"
            and lam < model.params["lam"]):
        return False
    if model.params.get("solver_chosen") in ("newton", "sdca+newton"):
        return True
    from ._driver import conditioning           # (both import this module)
    from .linear import switches_to_newton
    n_rows, n_features = p.X.shape
    bias = (model.params.get("intercept_scaling", 1.0) if model.params.get("fit_intercept")
            else 0.0)
    if not switches_to_newton(p.loss, n_rows, n_features + bool(bias)):
        return False
    gamma = _losses.strong_convexity(p.loss, p.loss_param)
    return gamma > 0 and conditioning(p, bias, lam) / gamma >= NEWTON_CONDITION


def _best_primal_model(models, s, lam, p):
    """The extrapolated primal of least objective at ``lam`` (``_best_primal``) as a
    Model: Newton's start (it reads ``coef`` and ``intercept``)."""
    c, _ = _best_primal(models, s, lam, p)
    coef = sum(ck * m.coef for ck, m in zip(c, models) if ck != 0.0)
    intercept = sum(ck * m.intercept for ck, m in zip(c, models) if ck != 0.0)
    return Model(coef, intercept=intercept)


def _dual_of_best_primal(models, s, lam, p):
    """``-c phi'(z)`` at the extrapolated primal of least objective at ``lam``
    (``_best_primal``)."""
    _, z = _best_primal(models, s, lam, p)
    weight = 1.0 if p.weight is None else p.weight
    return -weight * _losses.derivative(p.loss, z, p.y, p.loss_param)


def _best_primal(models, s, lam, p):
    """The weights ``c`` (over ``models``) of the extrapolated primal of least objective
    at ``lam``, and its scores ``z``. The candidates are the polynomials in log lam
    through the last one, two and three solutions (constant, linear, quadratic). Both
    terms of the objective come without a pass over X: the scores are the same combination
    of the solutions' training scores (``extra["margins"]``, kept by the path's SDCA
    solves; one pass for a model without them), the norm a combination of their inner
    products. The quadratic is the better start from C = 2 on (news20 logistic: a
    relative gap of 1e-3 against 1.6e-2) until the solves' own error, amplified by its
    weights (3, -3, 1), makes it worse (C = 64: 1.5e-2 against 1e-2), which the objective
    sees."""
    margins = []
    for m in models:                 # a solve that did not keep them: one pass each
        if m.extra.get("margins") is None:
            m.extra["margins"] = np.asarray(p.X.source @ m.coef, dtype=np.float64) + m.intercept
        margins.append(m.extra["margins"])
    # inner products of the penalised weights (a penalised intercept is w_d = b / scaling),
    # each pair once
    bias = [m.intercept / m.params.get("intercept_scaling", 1.0)
            if m.params.get("fit_intercept") and m.params.get("penalize_intercept", True)
            else 0.0 for m in models]
    gram = np.empty((len(models), len(models)))
    for j, k in zip(*np.triu_indices(len(models))):
        gram[j, k] = gram[k, j] = _inner(models[j].coef, models[k].coef) + bias[j] * bias[k]
    weight = 1.0 if p.weight is None else p.weight
    best, best_c, best_z = np.inf, None, None
    for order in range(1, len(models) + 1):
        c = np.zeros(len(models))
        c[-order:] = _lagrange(s[-order:], np.log(lam))
        z = sum(ck * zk for ck, zk in zip(c, margins) if ck != 0.0)
        primal = (np.mean(weight * _losses.value(p.loss, z, p.y, p.loss_param))
                  + 0.5 * lam * (c @ gram @ c))
        if primal < best:
            best, best_c, best_z = primal, c, z
    return best_c, best_z
