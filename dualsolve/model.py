"""The trained-model object shared by every solver, and its file format.

File format (``Model.save`` / ``dualsolve.load_model``): a NumPy ``.npz`` archive (a zip of
``.npy`` arrays, read with ``allow_pickle=False``; no pickle anywhere) holding

    meta        0-d unicode array: JSON with format, model (the class), solver, params,
                stop_reason, n_epochs, n_features, dualsolve version, and the names of
                extra arrays
    coef        float64 (n_features,), or (k, n_features) for k >= 3 classes
    intercept   float64 0-d, or (k,) for k >= 3 classes
    history     structured array (epoch, time, primal, dual, gap, ...)
    classes     the original labels: 2, or k >= 3 (absent for regression)
    dual        float64 (n_samples,), or (n_samples, k) for k >= 3 classes: dual variables
                (absent when saved with include_dual=False)
    extra__<k>  family-specific arrays (e.g. kernel models' support rows)

The arrays are stored whatever their shape, so multi-class models need no new format
version. ``Model.save(path, format="liblinear")`` writes liblinear's text model format
instead, and :func:`load_model` reads both (see ``dualsolve._liblinear_file``).

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

    Binary classifiers and regression models have one weight vector; a multi-class model
    (k >= 3 classes, e.g. one-vs-rest) has one row of weights and one intercept per class,
    and predicts the class of the largest score.

    Attributes
    ----------
    coef : ndarray (n_features,), or (k, n_features) for k >= 3 classes
        Weights ``w`` of the decision function ``f(x) = x.w + intercept`` (row ``j``: the
        score of ``classes[j]``).
    intercept : float, or ndarray (k,) for k >= 3 classes
        0 unless the model was trained with ``fit_intercept=True``.
    dual : ndarray (n_samples,) (multi-class: (n_samples, k)) or None
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
    classes : ndarray of 2 or k labels, or None
        Original labels, sorted; for a binary model ``classes[1]`` is the positive class
        (score > 0). None for regression.
    extra : dict of ndarrays
        Family-specific arrays.
    """

    def __init__(self, coef, intercept=0.0, dual=None, history=None, stop_reason="max_epochs",
                 n_epochs=0, solver="", params=None, classes=None, extra=None):
        if stop_reason not in STOP_REASONS:
            raise ValueError(f"stop_reason must be one of {list(STOP_REASONS)}; got "
                             f"{stop_reason!r}")
        self.coef = np.asarray(coef, dtype=np.float64)
        self.classes = None if classes is None else np.asarray(classes)
        if self.coef.ndim == 2:
            k = self.coef.shape[0]
            if self.classes is None or self.classes.ndim != 1 or self.classes.shape[0] != k \
                    or k < 3:
                got = "none" if self.classes is None else f"shape {self.classes.shape}"
                raise ValueError(f"a 2-D coef {self.coef.shape} is a multi-class model: it "
                                 f"needs one class label per row, k >= 3 (classes: {got}); "
                                 "a binary model has a 1-D coef")
            self.intercept = np.array(np.broadcast_to(np.asarray(intercept, np.float64), (k,)))
        elif self.coef.ndim == 1:
            if self.classes is not None and self.classes.shape != (2,):
                raise ValueError(f"a 1-D coef is a binary or regression model, with 2 class "
                                 f"labels or none; got classes of shape {self.classes.shape}")
            self.intercept = float(intercept)
        else:
            raise ValueError(f"coef must be 1-D (binary, regression) or 2-D (k classes, "
                             f"n_features); got shape {self.coef.shape}")
        self.dual = None if dual is None else np.asarray(dual, dtype=np.float64)
        self.history = make_history([]) if history is None else history
        self.stop_reason = stop_reason
        self.n_epochs = int(n_epochs)
        self.solver = solver
        self.params = dict(params or {})
        self.extra = dict(extra or {})

    @property
    def converged(self):
        return self.stop_reason == "converged"

    @property
    def n_features(self):
        return self.coef.shape[-1]

    @property
    def multiclass(self):
        """True for a model of k >= 3 classes (2-D ``coef``)."""
        return self.coef.ndim == 2

    def __repr__(self):
        last = self.history[-1] if len(self.history) else None
        gap = f", gap={last['gap']:.3e}" if last is not None else ""
        return (f"{type(self).__name__}(solver={self.solver!r}, n_features={self.n_features}, "
                f"stop_reason={self.stop_reason!r}, n_epochs={self.n_epochs}{gap})")

    def decision_function(self, X):
        """Scores ``X @ coef + intercept`` for a sparse or dense ``X`` (n, n_features):
        shape (n,), or (n, k) for a multi-class model (column j: ``classes[j]``).

        X must have exactly n_features columns (``dualsolve predict`` pads or cuts a data
        file's columns instead). X is validated like training data (NaN or inf, a broken
        CSR structure: ValueError)."""
        Xc = check_predict_input(X, self.n_features)
        if self.coef.ndim == 2:
            if Xc is None:
                return np.zeros((0, self.coef.shape[0]))
            scores = np.asarray(Xc.source @ self.coef.T, dtype=np.float64)
            if np.any(self.intercept != 0.0):
                scores += self.intercept
            return scores
        if Xc is None:
            return np.zeros(0)
        scores = np.asarray(Xc.source @ self.coef, dtype=np.float64).ravel()
        if self.intercept != 0.0:
            scores += self.intercept
        return scores

    def predict(self, X):
        """Class labels (binary: ``classes[1]`` where the score is > 0; multi-class: the
        class of the largest score, the first in ``classes`` on a tie) or, for regression,
        scores."""
        scores = self.decision_function(X)
        if self.classes is None:
            return scores
        if scores.ndim == 2:
            return self.classes[np.argmax(scores, axis=1)] if scores.shape[0] else \
                self.classes[:0]
        return self.classes[(scores > 0).astype(np.intp)]

    def predict_proba(self, X):
        """Class probabilities, shape (n, n_classes), columns in ``classes`` order, for a
        model trained with the logistic loss (``params["loss"] == "logistic"``).

        Binary: ``[1 - sigmoid(s), sigmoid(s)]`` for the score s (each computed directly,
        no cancellation). Multi-class (one-vs-rest): each class's ``sigmoid(s_j)``,
        normalised to sum 1 per row, as liblinear's ``predict_probability``; computed in
        log space, so very negative scores give the limit instead of 0/0.
        ValueError for a model of another loss or a regression model."""
        loss = self.params.get("loss")
        if self.classes is None or loss != "logistic":
            what = "a regression model" if self.classes is None else f"loss {loss!r}"
            raise ValueError(f"predict_proba needs a classifier trained with "
                             f"loss='logistic'; this model has {what}, whose scores are "
                             "not probabilities (use decision_function, or train with "
                             "loss='logistic')")
        scores = self.decision_function(X)
        if scores.ndim == 1:
            from scipy.special import expit
            return np.column_stack([expit(-scores), expit(scores)])
        # log sigmoid(s) = -log(1 + exp(-s)); normalise exp of it row by row
        logp = -np.logaddexp(0.0, -scores)
        if logp.shape[0] == 0:
            return logp
        logp -= logp.max(axis=1, keepdims=True)
        p = np.exp(logp)
        p /= p.sum(axis=1, keepdims=True)
        return p

    #: a model file of this class must hold finite numbers even when the run diverged
    file_needs_finite = False

    @classmethod
    def check_file(cls, f, meta, coef, extra, dual):
        """Validate what a model file holds beyond the generic fields (``f``: the reader of
        ``dualsolve._model_file``, whose ``fail(field, why)`` makes the error)."""
        from ._model_file import check_linear_extra
        check_linear_extra(f, meta, coef, extra, dual)

    def save(self, path, include_dual=True, format="dualsolve"):
        """Write the model to ``path``.

        format="dualsolve" (default): the ``.npz`` format of the module docstring, which
        keeps everything (history, dual variables, params). format="liblinear": liblinear's
        text model format (solver_type, nr_class, label, nr_feature, bias, w), which
        liblinear's ``load_model`` and ``predict`` read; weights and intercept only (see
        ``dualsolve._liblinear_file`` and docs/api.md for the solver_type of each loss).
        """
        if format == "liblinear":
            from ._liblinear_file import write_liblinear
            write_liblinear(self, path)
            return
        if format != "dualsolve":
            raise ValueError(f"format must be 'dualsolve' or 'liblinear'; got {format!r}")
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
    from ._validation import check_csr, dense_array, sparse_frame
    X = sparse_frame(X)
    if sp.issparse(X):
        shape = X.shape
    else:
        if isinstance(X, (str, bytes)) or X is None:
            raise TypeError(f"X must be a scipy sparse matrix or a 2-D array; got {type(X).__name__}")
        X = dense_array(X, "X")
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
    return check_csr(X, "X")


def load_model(path):
    """Read a model written by :meth:`Model.save`, in either format: our ``.npz`` archive,
    or a liblinear text model file (recognised by its first word, ``solver_type``; written
    by liblinear's ``save_model`` or by ``Model.save(path, format="liblinear")``).

    The file is untrusted input: every entry is validated before use (see
    ``dualsolve._model_file`` and ``dualsolve._liblinear_file``), so a damaged or forged
    file raises a one-line ValueError naming the file and the field. OSError when the file
    cannot be opened.
    """
    from ._liblinear_file import is_liblinear_file, read_liblinear
    if is_liblinear_file(path):
        return Model(**read_liblinear(path))
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
        if warm_start.coef.ndim != 1:
            raise ValueError(f"warm_start is a multi-class model ({warm_start.coef.shape[0]} "
                             "rows of coefficients); start a binary solver from one row")
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
        if warm_start.dual.ndim != 1:
            raise ValueError("warm_start is a multi-class model (one column of dual "
                             "variables per class); start a binary solver from one column")
        warm_start = warm_start.dual
    alpha = np.array(warm_start, dtype=np.float64, copy=True).ravel()
    if alpha.shape[0] != n:
        raise ValueError(f"warm_start has {alpha.shape[0]} dual variables but X has {n} rows")
    if not np.isfinite(alpha).all():
        raise ValueError("warm_start contains NaN or infinity")
    return alpha


register_model_class(Model)
