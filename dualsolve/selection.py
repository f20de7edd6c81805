"""Choosing the regularisation: a warm-started path over ``lam`` and cross-validation.

Both work with any ``train_*`` function of the package (or its name): they read the
solver's description (``dualsolve._driver``) to know whether it classifies or regresses.

* :func:`regularization_path` solves from the strongest regularisation to the weakest,
  each solve warm-started from the previous model (its dual variables where the solver has
  them, else its coefficients), so that a path costs a fraction of as many cold solves.
* :func:`cross_validate` splits the rows into folds (stratified by class for classifiers),
  trains on all folds but one and scores on the one left out; with ``lams`` it runs the
  warm-started path in every fold, which is how the best lam (liblinear's ``-C``) is found.
"""
import dataclasses
import inspect
import warnings

import numpy as np
import scipy.sparse as sp

from ._driver import COMMON, SharedBuild, prepare, solve, solvers
from ._monitor import StopRequest
from ._params import validate
from ._threads import effective_n_jobs, side_by_side
from ._validation import check_regularization, check_seed, refuse_masked
from ._warm_path import along_path

#: scorings by name: (function(model, X, y) -> float, larger is better)
SCORINGS = ("accuracy", "mse", "r2", "auc")


def _solver_of(trainer):
    """(train function, its description) for a train_* function or its name."""
    import dualsolve
    table = solvers()
    if isinstance(trainer, str):
        name = trainer[len("train_"):] if trainer.startswith("train_") else trainer
        if name not in table:
            raise ValueError(f"trainer must be a train_* function of dualsolve or its name; "
                             f"unknown solver {trainer!r} (one of {sorted(table)})")
        return getattr(dualsolve, "train_" + name), table[name]
    if not callable(trainer):
        raise TypeError(f"trainer must be a train_* function of dualsolve or its name; got "
                        f"{type(trainer).__name__}")
    name = getattr(trainer, "__name__", "")
    if not name.startswith("train_") or name[len("train_"):] not in table:
        raise ValueError(f"trainer must be a train_* function of dualsolve; got {name or trainer!r}")
    return trainer, table[name[len("train_"):]]


def _check_grid(lams, Cs):
    """(name, values, strengths): the grid as given, and its regularisation strengths
    (lam, or 1/C) to order the path by."""
    if (lams is None) == (Cs is None):
        raise TypeError("give the grid as lams (L2 strengths) or as Cs (liblinear's costs), "
                        "one of them")
    name = "lams" if Cs is None else "Cs"
    arr = np.asarray(lams if Cs is None else Cs, dtype=np.float64).ravel()
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0; got {arr.tolist()}")
    return name, arr, (arr if Cs is None else 1.0 / arr)


def _task(solver, params):
    loss = params.get("loss", solver.losses[0])
    return solver.task(loss, params)


def regularization_path(trainer, X, y, *, lams=None, Cs=None, **params):
    """Train ``trainer`` at every ``lam`` of ``lams`` (or every liblinear cost ``C`` of
    ``Cs``, ``lam = 1/(C n)``) with warm starts.

    The solves run from the strongest regularisation to the weakest (the most regularised
    problem is the easiest and its solution is a good start for the next); each is
    warm-started from the previous model and certified by the solver's own criterion at
    ``tol``. Returns the models in the order of the grid. ``params`` are passed to every
    call (``loss``, ``tol``, ...); ``lam``, ``C`` and ``warm_start`` are set by the path.
    ``train_sdca``'s (and ``train_linear``'s SDCA) solves start from the last solutions
    extrapolated along log lam (``dualsolve._warm_path``), keep the training scores ``x_i.w
    + b`` in ``extra["margins"]`` for that, and skip the exact check of their start (it is
    never optimal). With ``train_linear(solver="auto")``, once a solve has ended with
    Newton, or is ill-conditioned enough (``dualsolve._warm_path.NEWTON_CONDITION``), the
    following (larger C) ones run Newton from the start, from the extrapolated primal
    (``start_rule`` ``"newton"`` in their params).
    """
    train, solver = _solver_of(trainer)
    _grid_keys_unset("regularization_path", params, ("lam", "C", "warm_start"))
    return _path(train, solver, X, y, _check_grid(lams, Cs), params)


def _grid_keys_unset(caller, params, keys):
    for key in keys:
        if key in params:
            raise TypeError(f"{caller} sets {key!r} itself; pass the grid as lams or Cs")


def _prepared(train, solver, X, y, params, beside=None, **fixed):
    """(Problem, options) of ``train(X, y, **fixed, **params)``, validated once. ``beside``
    (``stop``, ``label``): a solve run in a thread beside others (cross_validate's folds),
    one thread each, stopping when the shared stop request is set."""
    args = inspect.signature(train).bind(X, y, **fixed, **params)
    args.apply_defaults()
    p, options = prepare(solver, dict(args.arguments))
    if beside is not None:
        p = dataclasses.replace(p, n_jobs=1, **beside)
    return p, options


def _path(train, solver, X, y, grid, params, beside=None):
    """regularization_path's models, in the order of a checked grid (``_check_grid``)."""
    models = [None] * grid[1].size
    for i, model in _path_steps(train, solver, X, y, grid, params, beside):
        models[i] = model
    return models


def _path_steps(train, solver, X, y, grid, params, beside=None):
    """Yield ``(i, model)`` for grid point i, in the order solved (strongest first)."""
    name, arr, strength = grid
    key = "lam" if name == "lams" else "C"
    order = np.argsort(-strength, kind="stable")
    # validate X, y and the options once, then solve along the grid (each solve certified)
    p, options = _prepared(train, solver, X, y, params, beside, **{key: float(arr[order[0]])})
    # what every solve of the path would build alike (a kernel solver's Gram: lam-free)
    p = dataclasses.replace(p, shared=SharedBuild(p.n_jobs))
    n_lam = solver.samples(p.n, options) if solver.samples else p.n
    done = []
    for i in order:
        lam = check_regularization(float(arr[i]) if key == "lam" else None,
                                   float(arr[i]) if key == "C" else None, n_lam,
                                   allow_zero=solver.lam_zero)
        done.append(solve(solver, along_path(p, done[-3:], lam, solver), options))
        yield i, done[-1]


def _folds(y, n_folds, seed, stratified):
    """Fold index of every row: a seeded permutation dealt round-robin (within each class
    when stratified, so every fold gets its share of every class)."""
    n = y.shape[0]
    rng = np.random.default_rng(seed)
    fold = np.empty(n, dtype=np.intp)
    if not stratified:
        fold[rng.permutation(n)] = np.arange(n) % n_folds
        return fold
    classes, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    single = classes[counts < 2]
    if single.size:
        raise ValueError(f"y has class {single[0].item()!r} with a single row: cross-validation would "
                         f"leave it out of a training fold; remove it or give it more rows")
    if counts.min() < n_folds:
        warnings.warn(f"the smallest class of y ({classes[np.argmin(counts)].item()!r}) has "
                      f"{counts.min()} rows, fewer than n_folds={n_folds}: some test folds "
                      "lack it", UserWarning, stacklevel=3)
    start = 0
    order = rng.permutation(n)
    for c in range(classes.size):          # deal each class's rows in turn, continuing the count
        rows = order[inverse[order] == c]
        fold[rows] = (start + np.arange(rows.size)) % n_folds
        start += rows.size
    return fold


def _scorer(scoring, task):
    if callable(scoring):
        return scoring
    if scoring is None:
        scoring = "mse" if task == "regression" else "accuracy"
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {list(SCORINGS)} or a callable "
                         f"(model, X, y) -> float; got {scoring!r}")
    if task == "regression" and scoring in ("accuracy", "auc"):
        raise ValueError(f"scoring={scoring!r} needs a classifier; this solver and loss regress")
    if task != "regression" and scoring in ("mse", "r2"):
        raise ValueError(f"scoring={scoring!r} needs a regression loss; this one classifies")
    if scoring == "accuracy":
        return lambda m, X, y: float(np.mean(m.predict(X) == y))
    if scoring == "mse":
        return lambda m, X, y: float(np.mean((m.predict(X) - y) ** 2))
    if scoring == "r2":
        return lambda m, X, y: float(1.0 - np.sum((m.predict(X) - y) ** 2)
                                     / max(np.sum((y - np.mean(y)) ** 2), np.finfo(float).tiny))
    from .auc import auc_score
    return lambda m, X, y: float(auc_score(y, m.decision_function(X)))


def cross_validate(trainer, X, y, *, n_folds=5, seed=0, scoring=None, lams=None, Cs=None,
                   **params):
    """Per-fold scores of ``trainer`` on ``X, y``.

    Rows are dealt into ``n_folds`` folds from a permutation seeded by ``seed``, per class
    for classifiers (stratified), so the split is reproducible. Each fold is scored by the
    model trained on the others: ``scoring`` is ``"accuracy"`` (default for classifiers),
    ``"auc"``, ``"mse"`` (default for regression; smaller is better), ``"r2"`` or a callable
    ``(model, X_test, y_test) -> float``. Returns an array of ``n_folds`` scores; with
    ``lams`` (or ``Cs``), the warm-started :func:`regularization_path` runs in every fold
    and the result has shape ``(len(grid), n_folds)``. ``params`` go to every call (not
    ``warm_start``).

    ``n_jobs`` (in ``params``; -1 = every core) > 1 runs that many folds side by side in
    threads, each solve on one thread (the engines release the GIL): the scores are those
    of ``n_jobs=1`` bit for bit. With a grid the folds' paths advance one solve at a time,
    ``n_jobs + 1`` folds under way (memory holds their training rows at once). The callback
    is called from those threads; Ctrl-C (or an exception in one fold) stops them all.
    """
    train, solver = _solver_of(trainer)
    if "warm_start" in params:
        raise TypeError("cross_validate does not take warm_start (each fold starts cold)")
    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)):
        raise TypeError(f"n_folds must be an integer >= 2; got {n_folds!r}")
    seed = check_seed(seed)
    refuse_masked(y, "y")
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D; got shape {y.shape}")
    n = y.shape[0]
    if X is None or not hasattr(X, "shape") or X.shape[0] != n:
        raise ValueError(f"X must have one row per label: y has {n} labels, X has "
                         f"{getattr(X, 'shape', None)}")
    if not 2 <= n_folds <= n:
        raise ValueError(f"n_folds must be in [2, n rows = {n}]; got {n_folds}")
    task = _task(solver, params)
    score = _scorer(scoring, task)
    fold = _folds(y, int(n_folds), seed, stratified=task not in ("regression", "soft"))
    X = sp.csr_matrix(X) if not sp.issparse(X) else X.tocsr()
    grid = None
    if lams is not None or Cs is not None:
        _grid_keys_unset("cross_validate with a grid", params, ("lam", "C"))
        grid = _check_grid(lams, Cs)
    workers = min(effective_n_jobs(validate("n_jobs", params.get("n_jobs", 1),
                                            COMMON["n_jobs"])), n_folds)
    stop = StopRequest() if workers > 1 else None

    def fold_scores(k):
        """Yield ``(i, score)`` of the fold's model at grid point i (0 without a grid)."""
        test = fold == k
        Xtr, ytr, Xte, yte = X[~test], y[~test], X[test], y[test]
        beside = None if stop is None else dict(stop=stop, label=f" (fold {k + 1})")
        if grid is not None:
            for i, model in _path_steps(train, solver, Xtr, ytr, grid, params, beside):
                yield i, score(model, Xte, yte)
        elif beside is None:
            yield 0, score(train(Xtr, ytr, **params), Xte, yte)
        else:
            yield 0, score(solve(solver, *_prepared(train, solver, Xtr, ytr, params, beside)),
                           Xte, yte)

    scores = np.empty((1 if grid is None else grid[1].size, n_folds))
    if stop is None:
        per_fold = [list(fold_scores(k)) for k in range(n_folds)]
    else:
        # one more fold under way than threads: a path's solves from three folds share
        # the two threads, so the last fold does not run alone
        per_fold, errors, interrupt = side_by_side(
            [fold_scores(k) for k in range(n_folds)], workers, stop, "dualsolve-cv",
            active=workers + 1)
        error = interrupt or next((e for e in errors if e is not None), None)
        if error is not None:
            raise error
    for k, pairs in enumerate(per_fold):
        for i, value in pairs:
            scores[i, k] = value
    return scores[0] if grid is None else scores
