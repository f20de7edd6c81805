"""The trained-model object shared by every solver, and its file format.

File format (``Model.save`` / ``dualsolve.load_model``): a NumPy ``.npz`` archive (a zip of
``.npy`` arrays, read with ``allow_pickle=False``; no pickle anywhere) holding

    meta        0-d unicode array: JSON with format, model (the class), solver, params,
                stop_reason, n_epochs, n_features, dualsolve version, and the names of
                extra arrays
    coef        float64 (n_features,)
    intercept   float64 0-d
    history     structured array (epoch, time, primal, dual, gap, ...)
    classes     the two original labels (absent for regression)
    dual        float64 (n_samples,) dual variables (absent when saved with include_dual=False)
    extra__<k>  family-specific arrays (e.g. kernel models' support rows)

A family with a model class of its own (``dualsolve.mixup.KernelModel``) registers it with
:func:`register_model_class`, so that this module imports no family.
"""
import json

import numpy as np
import scipy.sparse as sp

from ._model_file import read_model

FORMAT = "dualsolve-model-2"
#: Model.stop_reason values (dualsolve._core.status.STOP_REASON)
STOP_REASONS = ("converged", "max_epochs", "callback", "interrupted", "diverged")
HISTORY_FIELDS = [("epoch", np.int64), ("time", np.float64), ("primal", np.float64),
                  ("dual", np.float64), ("gap", np.float64)]


def make_history(rows, extra_fields=()):
    """Structured history array from tuples ``(epoch, time, primal, dual, gap, *extra)``."""
    dtype = HISTORY_FIELDS + [(name, np.float64) for name in extra_fields]
    return np.array([tuple(r) for r in rows], dtype=dtype)


def _jsonable(v):
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


class Model:
    """A trained linear model with its dual variables and the solver's history.

    Attributes
    ----------
    coef : ndarray (n_features,)
        Weights ``w`` of the decision function ``f(x) = x.w + intercept``.
    intercept : float
        0 unless the model was trained with ``fit_intercept=True``.
    dual : ndarray (n_samples,) or None
        Dual variables (``w = X^T dual / (lam n)`` for the SDCA family).
    history : structured ndarray
        One row per epoch with fields ``epoch, time, primal, dual, gap`` (NaN where a
        quantity does not exist for the solver), plus solver-specific fields.
    stop_reason : str
        Why the solver stopped: "converged" (its documented criterion held at ``tol``; a
        certified duality gap wherever the solver has one; see docs/api.md),
        "max_epochs", "callback" (the callback returned True), "interrupted" (Ctrl-C) or
        "diverged".
    converged : bool
        ``stop_reason == "converged"``.
    n_epochs : int
    solver : str
    params : dict
        The parameters the solver ran with (lam, loss, tol, seed, ...).
    classes : ndarray of 2 labels or None
        Original labels; ``classes[1]`` is the positive class. None for regression.
    extra : dict of ndarrays
        Family-specific arrays.
    """

    def __init__(self, coef, intercept=0.0, dual=None, history=None, stop_reason="max_epochs",
                 n_epochs=0, solver="", params=None, classes=None, extra=None):
        if stop_reason not in STOP_REASONS:
            raise ValueError(f"stop_reason must be one of {list(STOP_REASONS)}; got "
                             f"{stop_reason!r}")
        self.coef = np.asarray(coef, dtype=np.float64)
        self.intercept = float(intercept)
        self.dual = None if dual is None else np.asarray(dual, dtype=np.float64)
        self.history = make_history([]) if history is None else history
        self.stop_reason = stop_reason
        self.n_epochs = int(n_epochs)
        self.solver = solver
        self.params = dict(params or {})
        self.classes = None if classes is None else np.asarray(classes)
        self.extra = dict(extra or {})

    @property
    def converged(self):
        return self.stop_reason == "converged"

    @property
    def n_features(self):
        return self.coef.shape[0]

    def __repr__(self):
        last = self.history[-1] if len(self.history) else None
        gap = f", gap={last['gap']:.3e}" if last is not None else ""
        return (f"{type(self).__name__}(solver={self.solver!r}, n_features={self.n_features}, "
                f"stop_reason={self.stop_reason!r}, n_epochs={self.n_epochs}{gap})")

    def decision_function(self, X):
        """Scores ``X @ coef + intercept`` for a sparse or dense ``X`` (n, n_features).

        X is validated like training data (NaN or inf, a broken CSR structure: ValueError)."""
        Xc = check_predict_input(X, self.n_features)
        if Xc is None:
            return np.zeros(0)
        scores = np.asarray(Xc.source @ self.coef, dtype=np.float64).ravel()
        if self.intercept != 0.0:
            scores += self.intercept
        return scores

    def predict(self, X):
        """Class labels (``classes[1]`` where the score is > 0) or, for regression, scores."""
        scores = self.decision_function(X)
        if self.classes is None:
            return scores
        return self.classes[(scores > 0).astype(np.intp)]

    #: a model file of this class must hold finite numbers even when the run diverged
    file_needs_finite = False

    @classmethod
    def check_file(cls, f, meta, coef, extra, dual):
        """Validate what a model file holds beyond the generic fields (``f``: the reader of
        ``dualsolve._model_file``, whose ``fail(field, why)`` makes the error)."""
        from ._model_file import check_linear_extra
        check_linear_extra(f, meta, coef, extra, dual)

    def save(self, path, include_dual=True):
        """Write the model to ``path`` (``.npz`` format; see the module docstring)."""
        meta = dict(format=FORMAT, model=type(self).__name__, solver=self.solver,
                    params=_jsonable(self.params),
                    stop_reason=self.stop_reason, n_epochs=self.n_epochs,
                    n_features=self.n_features, extra=sorted(self.extra),
                    version=_version())
        arrays = dict(meta=np.array(json.dumps(meta)), coef=self.coef,
                      intercept=np.array(self.intercept), history=self.history)
        if self.classes is not None:
            classes = self.classes
            if classes.dtype == object:
                classes = classes.astype(str)
            arrays["classes"] = classes
        if include_dual and self.dual is not None:
            arrays["dual"] = self.dual
        for k, v in self.extra.items():
            arrays["extra__" + k] = np.asarray(v)
        with open(path, "wb") as f:
            np.savez(f, **arrays)


def check_predict_input(X, n_features):
    """X for prediction: its shape against the model's, then :func:`check_csr` (CSR kept
    without a copy). None when X has no rows."""
    if sp.issparse(X):
        shape = X.shape
    else:
        if isinstance(X, (str, bytes)) or X is None:
            raise TypeError(f"X must be a scipy sparse matrix or a 2-D array; got {type(X).__name__}")
        X = np.asarray(X)
        shape = X.shape
        if X.ndim == 1:
            raise ValueError("X must be 2-D (n_samples, n_features); for one sample "
                             "use X.reshape(1, -1)")
    if len(shape) != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features); got shape {shape}")
    if shape[1] != n_features:
        raise ValueError(f"X has {shape[1]} features but the model was trained with "
                         f"{n_features}")
    if shape[0] == 0:
        return None
    from ._validation import check_csr
    return check_csr(X, "X")


def load_model(path):
    """Read a model written by :meth:`Model.save`.

    The file is untrusted input: every entry is validated before use (see
    ``dualsolve._model_file``), so a damaged or forged file raises a one-line ValueError
    naming the file and the field. OSError when the file cannot be opened.
    """
    cls, kwargs = read_model(path, MODEL_CLASSES)
    return cls(**kwargs)


#: model classes by name, as written in a file's meta.model
MODEL_CLASSES = {}


def register_model_class(cls):
    """Let :func:`load_model` build ``cls`` (a Model subclass of a family) from files whose
    meta.model is its name. ``cls.check_file(f, meta, extra, dual)`` validates the family's
    extra arrays (see ``dualsolve._model_file``). Returns cls (usable as a decorator)."""
    MODEL_CLASSES[cls.__name__] = cls
    return cls


def _version():
    from dualsolve import __version__
    return __version__


def warm_start_coef(warm_start, d):
    """A fresh float64 copy of the coefficients to start from: ``warm_start`` is a Model (its
    ``coef``) or an array of length d; None gives zeros. Checks length and finiteness."""
    if warm_start is None:
        return np.zeros(d)
    if isinstance(warm_start, Model):
        warm_start = warm_start.coef
    try:
        x0 = np.array(warm_start, dtype=np.float64, copy=True).ravel()
    except (TypeError, ValueError) as exc:
        raise TypeError("warm_start must be a Model or an array of n_features coefficients; "
                        f"got {type(warm_start).__name__}") from exc
    if x0.shape[0] != d:
        raise ValueError(f"warm_start has {x0.shape[0]} coefficients but X has {d} features")
    if not np.isfinite(x0).all():
        raise ValueError("warm_start coefficients contain NaN or infinity")
    return x0


def warm_start_dual(warm_start, n):
    """A fresh float64 copy of the dual variables to start from: ``warm_start`` is a Model
    (its ``dual``) or an array of length n; None gives zeros. Checks length and finiteness;
    each solver checks its own dual domain."""
    if warm_start is None:
        return np.zeros(n)
    if isinstance(warm_start, Model):
        if warm_start.dual is None:
            raise ValueError("warm_start model has no dual variables (saved without them?)")
        warm_start = warm_start.dual
    alpha = np.array(warm_start, dtype=np.float64, copy=True).ravel()
    if alpha.shape[0] != n:
        raise ValueError(f"warm_start has {alpha.shape[0]} dual variables but X has {n} rows")
    if not np.isfinite(alpha).all():
        raise ValueError("warm_start contains NaN or infinity")
    return alpha


register_model_class(Model)
