"""scikit-learn estimators over the package's solvers (``pip install "dualsolve[sklearn]"``).

Thin wrappers: ``fit`` calls the ``train_*`` function of the chosen solver, which validates
everything (no second copy of the checks or the defaults here; scikit-learn's
``validate_data`` only turns the input into an array or CSR matrix without copying CSR, and
records ``n_features_in_``). ``C`` is scikit-learn's and liblinear's cost, handed to the
solver as its ``C`` (``lam = 1/(C n)``, mapped in one place, ``dualsolve._validation``).
``max_iter`` is the solver's ``max_epochs``, ``random_state`` its ``seed``, ``tol`` its
(relative, certified) tolerance; ``solver_options`` passes any other option of the solver
(``dualsolve solvers NAME`` lists them). After ``fit``: ``coef_``, ``intercept_``,
``n_features_in_``, ``n_iter_`` (epochs), ``model_`` (the :class:`dualsolve.Model`),
``history_``, ``stop_reason_``, ``duality_gap_`` (the last certified gap, NaN for a solver
without one), and ``classes_`` for a classifier. ``warm_start=True`` starts the next ``fit``
from the previous model (its dual variables for a dual solver), so a ``GridSearchCV`` over
``C`` with ``refit`` or a manual path is cheap.
"""
import numbers

import numpy as np

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
    from sklearn.utils import check_random_state
    from sklearn.utils.metaestimators import available_if
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_is_fitted, validate_data
except ImportError as exc:                  # scikit-learn is an optional extra
    raise ImportError("dualsolve.sklearn needs scikit-learn >= 1.6: pip install "
                      "\"dualsolve[sklearn]\"") from exc

import dualsolve
from ._driver import solvers

#: the solver families whose models are linear in x (coef_ of n_features)
LINEAR_FAMILIES = ("sdca", "adfsdca", "primal_dual", "newton", "linear")


def linear_solvers():
    """Names of the solvers behind LinearClassifier / LinearRegressor."""
    return sorted(n for n, s in solvers().items() if s.family in LINEAR_FAMILIES)


class _SolverEstimator(BaseEstimator):
    """What every estimator shares: the solver call and the fitted attributes."""

    #: parameters of the estimator handed to the solver under the same name (subclasses)
    _direct = ()

    def _solver(self):
        table = solvers()
        if not isinstance(self.solver, str) or self.solver not in self._solver_names():
            raise ValueError(f"solver must be one of {self._solver_names()}; got "
                             f"{self.solver!r}")
        return table[self.solver]

    def _call(self, X, y, sample_weight=None, **extra):
        """train_<solver>(X, y, ...) with this estimator's parameters."""
        import inspect
        s = self._solver()
        train = getattr(dualsolve, s.function_name)
        accepted = inspect.signature(train).parameters
        seed = self.random_state
        if seed is not None and not isinstance(seed, numbers.Integral):
            seed = int(check_random_state(seed).randint(2**31 - 1))
        kw = dict(loss=self.loss, C=self.C, tol=self.tol, max_epochs=self.max_iter, seed=seed,
                  verbose=self.verbose, n_jobs=self.n_jobs, **extra)
        for name in self._direct:
            value = getattr(self, name)
            if name not in accepted:
                if value != type(self)().get_params()[name]:
                    raise ValueError(f"{name}={value!r} is not an option of solver "
                                     f"{self.solver!r}")
                continue
            kw[name] = value
        options = dict(self.solver_options or {})
        clash = sorted(set(options) & set(kw))
        if clash:
            raise ValueError(f"solver_options may not set {clash}: they are parameters of "
                             f"{type(self).__name__}")
        kw.update(options)
        if sample_weight is not None:
            if not s.weights:
                raise ValueError(f"solver {self.solver!r} takes no sample_weight")
            kw["sample_weight"] = sample_weight
        if self.warm_start and getattr(self, "model_", None) is not None \
                and self.model_.solver == s.name:
            kw["warm_start"] = self.model_
        model = train(X, y, **kw)
        self._set_fitted(model)
        return model

    def _set_fitted(self, model):
        self.model_ = model
        coef = np.asarray(model.coef)
        self.coef_ = coef.reshape(1, -1) if coef.ndim == 1 and self._two_d_coef() else coef
        intercept = np.atleast_1d(np.asarray(model.intercept, dtype=float))
        self.intercept_ = intercept if self._two_d_coef() else float(intercept[0])
        self.n_iter_ = int(model.n_epochs)
        self.history_ = model.history
        self.stop_reason_ = model.stop_reason
        gaps = model.history["gap"] if len(model.history) else np.array([np.nan])
        finite = gaps[np.isfinite(gaps)]
        self.duality_gap_ = float(finite[-1]) if finite.size else float("nan")

    def _two_d_coef(self):
        return False

    def _scores(self, X):
        check_is_fitted(self, "model_")
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype="numeric")
        return self.model_.decision_function(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class LinearClassifier(ClassifierMixin, _SolverEstimator):
    """A linear classifier, L2-regularised, trained by one of the package's solvers::

        min_w  (1/n) sum_i c_i loss(y_i, x_i.w) + (1/(2 C n)) ||w||^2

    (liblinear's ``(1/2)||w||^2 + C sum_i c_i loss``, divided by ``C n``), ``c_i`` from
    ``sample_weight`` and ``class_weight``. More than two classes: one-vs-rest (k problems,
    ``coef_`` (k, n_features)); ``solver="sdca"`` with ``solver_options={"multi_class":
    "crammer_singer"}`` and ``loss="hinge"`` gives liblinear's ``-s 4``.

    Parameters
    ----------
    loss : str
        "logistic" (default), "squared_hinge", "hinge", "smooth_hinge" (as the solver
        allows; ``dualsolve solvers NAME``).
    solver : str
        One of :func:`linear_solvers` (default "sdca"; "linear" picks SDCA or Newton).
    C : float > 0
        The cost (default 1).
    tol : float >= 0
        Stop on a certified relative suboptimality ``(P - P*)/P* <= tol`` (where the solver
        has a certificate; see docs/api.md).
    max_iter : int
        The solver's ``max_epochs``.
    fit_intercept : bool
        An intercept (solvers "sdca", "newton", "linear"; liblinear's ``-B 1``, penalised).
    class_weight : dict, "balanced" or None
    warm_start : bool
        Start from the previous fit's model (same solver).
    random_state : int, RandomState or None
    n_jobs : int or None
        Threads (docs/api.md, "Threads").
    verbose : int
    solver_options : dict or None
        Further options of the solver, by their names in ``train_<solver>``.
    """

    _direct = ("fit_intercept", "class_weight")

    def __init__(self, loss="logistic", solver="sdca", C=1.0, tol=1e-6, max_iter=5000,
                 fit_intercept=False, class_weight=None, warm_start=False, random_state=0,
                 n_jobs=1, verbose=0, solver_options=None):
        self.loss = loss
        self.solver = solver
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.solver_options = solver_options

    def _solver_names(self):
        return linear_solvers()

    def _two_d_coef(self):
        return True

    def fit(self, X, y, sample_weight=None):
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype="numeric")
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if self.warm_start and getattr(self, "model_", None) is not None and \
                not np.array_equal(self.model_.classes, self.classes_):
            self.model_ = None          # other classes: a cold start
        self._call(X, y, sample_weight)
        return self

    def decision_function(self, X):
        """Scores: (n,) for two classes (positive: ``classes_[1]``), else (n, k)."""
        return self._scores(X)

    def predict(self, X):
        scores = self._scores(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]

    @available_if(lambda self: self.loss == "logistic")
    def predict_proba(self, X):
        """Probabilities (``loss="logistic"`` only; one-vs-rest normalised, as liblinear)."""
        check_is_fitted(self, "model_")
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype="numeric")
        return self.model_.predict_proba(X)

    @available_if(lambda self: self.loss == "logistic")
    def predict_log_proba(self, X):
        return np.log(self.predict_proba(X))


class LinearRegressor(RegressorMixin, _SolverEstimator):
    """A linear regressor, L2-regularised, trained by one of the package's solvers::

        min_w  (1/n) sum_i c_i loss(y_i, x_i.w) + (1/(2 C n)) ||w||^2

    loss "squared" (default, ridge), "epsilon_insensitive" (liblinear ``-s 13``) or
    "squared_epsilon_insensitive" (``-s 12``) with ``epsilon``. Parameters as
    :class:`LinearClassifier` (no class_weight), plus ``epsilon``.
    """

    _direct = ("fit_intercept", "epsilon")

    def __init__(self, loss="squared", solver="sdca", C=1.0, tol=1e-6, max_iter=5000,
                 epsilon=None, fit_intercept=False, warm_start=False, random_state=0,
                 n_jobs=1, verbose=0, solver_options=None):
        self.loss = loss
        self.solver = solver
        self.C = C
        self.tol = tol
        self.max_iter = max_iter
        self.epsilon = epsilon
        self.fit_intercept = fit_intercept
        self.warm_start = warm_start
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.solver_options = solver_options

    def _solver_names(self):
        return linear_solvers()

    def fit(self, X, y, sample_weight=None):
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype="numeric", y_numeric=True)
        self._call(X, y, sample_weight)
        return self

    def predict(self, X):
        return self._scores(X)
