"""One-vs-rest over any binary solver of the package (liblinear's multi-class default).

With k > 2 classes, ``train_*`` solves k binary problems, class c (+1) against the rest
(-1), each one certified by the solver's own criterion at ``tol``, and returns one Model:

* ``coef`` of shape (k, n_features) and ``intercept`` of shape (k,), row c for
  ``classes[c]`` (sorted); ``dual`` of shape (n, k) when the solver keeps dual variables;
* ``predict`` gives the class of the largest score;
* ``stop_reason``: ``"converged"`` when every class converged, else the first of
  interrupted / callback / diverged / max_epochs that a class ended with;
  ``params["class_stop_reasons"]`` and ``params["class_n_epochs"]`` say per class what
  happened and ``n_epochs`` is their sum (the cost of the fit); ``history`` holds every
  class's rows with a last ``class`` column (the class index, as a float like the other
  columns).

The callback sees ``info["class"]`` (the class index); returning True stops the whole fit.
``warm_start`` may be a one-vs-rest Model of the same classes (its row c starts class c).
"""
import dataclasses

import numpy as np

from ._driver import SharedBuild
from ._monitor import StopRequest
from ._threads import side_by_side
from .model import Model

#: which stop reason a multi-class fit reports when its classes ended differently
_PRECEDENCE = ("interrupted", "callback", "diverged", "max_epochs", "converged")


def fit_one_vs_rest(solver, p, options, run):
    """k binary fits of ``solver`` on the validated problem ``p`` (``p.codes`` set) with
    ``run(solver, problem, options) -> Model``; returns the combined Model. With
    ``p.n_jobs > 1`` the classes run in that many threads (each solve one thread: the
    engines release the GIL), otherwise one after the other with ``p.n_jobs`` threads each;
    every class's solve is the same either way, so the model is too, bit for bit."""
    k = p.classes.shape[0]
    starts = class_warm_starts(p.warm_start, p.classes)
    workers = min(p.n_jobs, k)
    # the classes' own stop request in threads; else the one of solves beside this fit
    # (cross_validate's folds in threads), if any
    stop = StopRequest() if workers > 1 else p.stop
    # what every class would build alike (the kernel solvers' Gram), built once (a path's
    # own, when this fit is one of its solves)
    shared = p.shared if p.shared is not None else SharedBuild(p.n_jobs)
    subs = [dataclasses.replace(
        p, y=np.where(p.codes == c, 1.0, -1.0), classes=np.array([-1.0, 1.0]), codes=None,
        warm_start=starts[c], callback=_for_class(p.callback, c),
        label=f" (class {_label(p.classes[c])!r} vs rest)",
        n_jobs=1 if workers > 1 else p.n_jobs, stop=stop, shared=shared) for c in range(k)]
    if workers > 1:
        model = _in_threads(solver, subs, options, run, workers, p)
        model.params["n_jobs"] = p.n_jobs
        return model
    models = []
    for c in range(k):
        if p.verbose:
            print(f"{solver.function_name}: class {_label(p.classes[c])!r} ({c + 1}/{k}) vs rest")
        try:
            model = run(solver, subs[c], options)
        except BaseException as exc:      # Ctrl-C or the callback's exception: keep what ran
            partial = getattr(exc, "model", None)
            if partial is not None:
                exc.model = combine(models + [partial], p.classes, p.X.shape[1])
            raise
        models.append(model)
        if model.stop_reason in ("callback", "interrupted"):
            break
    return combine(models, p.classes, p.X.shape[1])


def _in_threads(solver, subs, options, run, workers, p):
    """The classes' solves in ``workers`` threads, classes taken in order. The first to
    stop for its callback (or an exception) stops the others at their next epoch; Ctrl-C,
    which only the main thread receives, stops them all. The exception then raised
    carries the partial model (classes not started have zero weights)."""
    k = len(subs)
    stop = subs[0].stop

    def one(c):
        if p.verbose:
            print(f"{solver.function_name}: class {_label(p.classes[c])!r} ({c + 1}/{k}) "
                  "vs rest", flush=True)
        model = run(solver, subs[c], options)
        if model.stop_reason in ("callback", "interrupted"):
            stop.set(model.stop_reason)
        return model

    # each class a chain of one step (map calls one(c) when the chain is advanced)
    results, errors, interrupt = side_by_side([map(one, [c]) for c in range(k)], workers,
                                              stop, "dualsolve-ovr")
    models = [r[0] if r else getattr(e, "model", None) for r, e in zip(results, errors)]
    error = interrupt or next((e for e in errors if e is not None), None)
    ran = [m for m in models if m is not None]
    if error is not None:
        if ran and (error is interrupt or getattr(error, "model", None) is not None):
            error.model = combine(models, p.classes, p.X.shape[1])    # as serial: Ctrl-C's
        raise error
    return combine(models, p.classes, p.X.shape[1])


def _label(value):
    """A class label as Python shows it (NumPy scalars unwrapped; object arrays hold
    Python values already)."""
    return value.item() if isinstance(value, np.generic) else value


def _for_class(callback, c):
    if callback is None:
        return None
    return lambda info: callback(dict(info, **{"class": c}))


def class_warm_starts(warm_start, classes):
    """One warm start per class from a one-vs-rest Model of the same classes."""
    k = classes.shape[0]
    if warm_start is None:
        return [None] * k
    if not isinstance(warm_start, Model):
        raise TypeError("warm_start for more than two classes must be a one-vs-rest Model "
                        f"of the same classes; got {type(warm_start).__name__}")
    if warm_start.coef.ndim != 2 or warm_start.classes is None or \
            not np.array_equal(warm_start.classes, classes):
        raise ValueError(f"warm_start must be a one-vs-rest Model of the classes {classes.tolist()}"
                         f"; its classes are "
                         f"{None if warm_start.classes is None else warm_start.classes.tolist()}")
    intercepts = np.broadcast_to(np.asarray(warm_start.intercept, dtype=float), (k,))
    return [Model(coef=warm_start.coef[c], intercept=float(intercepts[c]),
                  dual=None if warm_start.dual is None else warm_start.dual[:, c],
                  classes=np.array([-1.0, 1.0]), solver=warm_start.solver,
                  params=warm_start.params) for c in range(k)]


def combine(models, classes, n_features):
    """One Model from the per-class models, in class order (classes not reached, missing
    at the end or None, get zero weights). Kernel models (no coef) combine their dual
    variables, one column per class, over the same training points (the mixup plan does
    not depend on the labels)."""
    k = classes.shape[0]
    ran = [m for m in models if m is not None]
    first = ran[0]
    if first.coef.size == 0 and first.dual is not None:
        n_features = 0
    coef = np.zeros((k, n_features))
    intercept = np.zeros(k)
    has_dual = all(m.dual is not None for m in ran)
    dual = np.zeros((first.dual.shape[0], k)) if has_dual else None
    for c, m in enumerate(models):
        if m is None:
            continue
        coef[c] = m.coef
        intercept[c] = m.intercept
        if has_dual:
            dual[:, c] = m.dual
    reasons = [None if m is None else m.stop_reason for m in models]
    stop = next(r for r in _PRECEDENCE if r in reasons)
    params = dict(first.params)
    params.update(multi_class="ovr", class_stop_reasons=reasons,
                  class_n_epochs=[0 if m is None else int(m.n_epochs) for m in models])
    extra = {}
    if n_features == 0:                     # kernel models: the shared rows and mixup plan
        extra = first.extra
        for m in ran[1:]:
            if any(not np.array_equal(m.extra[key], value) for key, value in extra.items()):
                raise RuntimeError("one-vs-rest kernel models trained on different points")
    return type(first)(coef=coef, intercept=intercept, dual=dual, history=_histories(models),
                       stop_reason=stop, n_epochs=sum(int(m.n_epochs) for m in ran),
                       solver=first.solver, params=params, classes=classes, extra=extra)


def _histories(models):
    """Every class's history rows, with the class index as a last column."""
    ran = [(c, m) for c, m in enumerate(models) if m is not None]
    base = ran[0][1].history.dtype
    dtype = np.dtype([(n, base[n]) for n in base.names] + [("class", np.float64)])
    out = np.zeros(sum(len(m.history) for _, m in ran), dtype=dtype)
    at = 0
    for c, m in ran:
        rows = slice(at, at + len(m.history))
        out["class"][rows] = c
        for name in base.names:
            out[name][rows] = m.history[name]
        at += len(m.history)
    return out
