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
from the previous models (their dual variables for a dual solver; for SDCA extrapolated
along lam from the last three, as ``regularization_path`` does), and a fresh estimator (a
clone, as ``GridSearchCV`` makes one per candidate and fold) from the last models fitted
on the same data with the same parameters but ``C``/``lam``, ``tol``, ``max_iter`` and
the like (the last three models of the last ``_WARM_SIZE`` data and parameter sets, at
most ``_WARM_BYTES`` of arrays, are kept by a fingerprint of the data): a grid over ``C``
then runs as a warm path in every fold.
"""
import collections
import hashlib
import inspect
import numbers
import threading

import numpy as np
import scipy.sparse as sp

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
from ._warm_path import Along

#: the solver families whose models are linear in x (coef_ of n_features)
LINEAR_FAMILIES = ("sdca", "adfsdca", "primal_dual", "newton", "linear")


def linear_solvers():
    """Names of the solvers behind LinearClassifier / LinearRegressor."""
    return sorted(n for n, s in solvers().items() if s.family in LINEAR_FAMILIES)


#: warm_start=True across clones: the last (up to three) models fitted, by a fingerprint of
#: the data and of every parameter but the ones a warm start may change (GridSearchCV
#: clones the estimator for every candidate and fold, so a clone finds the models its
#: fold's previous candidates left). A start changes the path to the certificate, never
#: the answer.
_WARM_MODELS = collections.OrderedDict()
_WARM_SIZE = 8
_WARM_BYTES = 512 * 2**20          # and at most this much of their arrays (the newest stays)
_WARM_LOCK = threading.Lock()
#: the parameters a warm start may differ in
_WARM_FREE = ("C", "lam", "tol", "max_iter", "verbose", "n_jobs", "warm_start",
              "random_state")


def _nbytes(model):
    return sum(np.asarray(a).nbytes for a in (model.coef, model.dual) if a is not None)


def _fingerprint(est, X, y, sample_weight):
    """A digest of X (its shape, nnz and an evenly spaced sample of its arrays), all of y
    and of the sample weights, and the estimator's parameters but _WARM_FREE."""
    h = hashlib.blake2b(digest_size=16)
    arrays = (X.data, X.indices, X.indptr) if sp.issparse(X) else (np.asarray(X).ravel(),)
    h.update(repr((X.shape, type(X).__name__)).encode())
    for a in arrays:
        h.update(repr((a.dtype.str, a.size)).encode())
        h.update(np.ascontiguousarray(a[::max(1, a.size // 4096)]).tobytes())
    for a in (y, sample_weight):
        h.update(b"-" if a is None else np.ascontiguousarray(a).tobytes())
    params = {k: v for k, v in est.get_params(deep=False).items() if k not in _WARM_FREE}
    h.update(repr(sorted(params.items())).encode())
    return h.hexdigest()


def _keep(est, params):
    """Store an estimator's ``__init__`` arguments untouched, under their own names (what
    scikit-learn's get_params / clone expect; no logic in ``__init__``)."""
    for name, value in params.items():
        if name != "self":
            setattr(est, name, value)


#: solver arguments the estimators set themselves (not through solver_options)
_RESERVED = frozenset(("loss", "verbose", "n_jobs", "C", "lam", "tol", "max_epochs", "seed",
                       "sample_weight", "class_weight", "warm_start", "callback"))


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
        s = self._solver()
        train = getattr(dualsolve, s.function_name)
        accepted = inspect.signature(train).parameters
        seed = self.random_state
        if seed is not None and not isinstance(seed, numbers.Integral):
            seed = int(check_random_state(seed).randint(2**31 - 1))
        kw = dict(loss=self.loss, verbose=self.verbose, n_jobs=self.n_jobs, **extra)
        # None: the solver's own default (the train_* signature is the one copy of them)
        for mine, theirs in (("C", "C"), ("lam", "lam"), ("tol", "tol"),
                             ("max_iter", "max_epochs")):
            value = getattr(self, mine, None)
            if value is not None:
                kw[theirs] = value
        if seed is not None:
            kw["seed"] = seed
        for name in self._direct:
            value = getattr(self, name)
            if name not in accepted:
                if value != type(self)().get_params()[name]:
                    raise ValueError(f"{name}={value!r} is not an option of solver "
                                     f"{self.solver!r}")
                continue
            kw[name] = value
        options = dict(self.solver_options or {})
        clash = sorted(set(options) & (_RESERVED | set(kw) | set(self._direct)))
        if clash:
            raise ValueError(f"solver_options may not set {clash}: they are parameters of "
                             f"{type(self).__name__}")
        kw.update(options)
        if sample_weight is not None:
            if not s.weights:
                raise ValueError(f"solver {self.solver!r} takes no sample_weight")
            kw["sample_weight"] = sample_weight
        key, before = None, ()
        if self.warm_start:
            key = _fingerprint(self, X, y, sample_weight)
            # the models fitted before on these data with these parameters (by this
            # estimator or its clones; other data: a cold start), extrapolated along lam
            # from the last three (dualsolve._warm_path)
            with _WARM_LOCK:
                before = _WARM_MODELS.get(key, ())
            if getattr(self, "warm_key_", None) == key and all(m is not self.model_
                                                               for m in before):
                before = before + (self.model_,)
            if before:
                kw["warm_start"] = Along(before)
        model = train(X, y, **kw)
        if key is not None:
            with _WARM_LOCK:
                _WARM_MODELS[key] = (before + (model,))[-3:]
                _WARM_MODELS.move_to_end(key)
                while len(_WARM_MODELS) > 1 and (len(_WARM_MODELS) > _WARM_SIZE or sum(
                        _nbytes(m) for ms in _WARM_MODELS.values() for m in ms)
                        > _WARM_BYTES):
                    _WARM_MODELS.popitem(last=False)
        self._set_fitted(model)
        self.warm_key_ = key
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


class _Classifier(ClassifierMixin, _SolverEstimator):
    """What the classifiers share: labels, scores, predictions, logistic probabilities."""

    def _fit(self, X, y, sample_weight=None):
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype="numeric")
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        self._call(X, y, sample_weight)
        return self

    def decision_function(self, X):
        """Scores: (n,) for two classes (positive: ``classes_[1]``), else (n, k)."""
        return self._scores(X)

    def predict(self, X):
        scores = self._scores(X)           # (NotFittedError before classes_ is read)
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


class LinearClassifier(_Classifier):
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
    tol : float >= 0 or None
        Stop on a certified relative suboptimality ``(P - P*)/P* <= tol`` (where the solver
        has a certificate; see docs/api.md). None: the solver's default.
    max_iter : int or None
        The solver's ``max_epochs`` (None: its default).
    fit_intercept : bool
        An intercept (solvers "sdca", "newton", "linear"; liblinear's ``-B 1``, penalised).
    class_weight : dict, "balanced" or None
    warm_start : bool
        Start from the previous fit's model (same solver).
    random_state : int, RandomState or None
        The solver's ``seed``; None: its default (0, reproducible).
    n_jobs : int or None
        Threads (docs/api.md, "Threads").
    verbose : int
    solver_options : dict or None
        Further options of the solver, by their names in ``train_<solver>``.
    """

    _direct = ("fit_intercept", "class_weight")

    def __init__(self, loss="logistic", solver="sdca", C=1.0, tol=None, max_iter=None,
                 fit_intercept=False, class_weight=None, warm_start=False, random_state=None,
                 n_jobs=1, verbose=0, solver_options=None):
        _keep(self, locals())

    def _solver_names(self):
        return linear_solvers()

    def _two_d_coef(self):
        return True

    def fit(self, X, y, sample_weight=None):
        return self._fit(X, y, sample_weight)


class _Regressor(RegressorMixin, _SolverEstimator):
    """What the regressors share."""

    def _fit(self, X, y, sample_weight=None):
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype="numeric", y_numeric=True)
        self._call(X, y, sample_weight)
        return self

    def predict(self, X):
        return self._scores(X)


class LinearRegressor(_Regressor):
    """A linear regressor, L2-regularised, trained by one of the package's solvers::

        min_w  (1/n) sum_i c_i loss(y_i, x_i.w) + (1/(2 C n)) ||w||^2

    loss "squared" (default, ridge), "epsilon_insensitive" (liblinear ``-s 13``) or
    "squared_epsilon_insensitive" (``-s 12``) with ``epsilon``. Parameters as
    :class:`LinearClassifier` (no class_weight), plus ``epsilon``.
    """

    _direct = ("fit_intercept", "epsilon")

    def __init__(self, loss="squared", solver="sdca", C=1.0, tol=None, max_iter=None,
                 epsilon=None, fit_intercept=False, warm_start=False, random_state=None,
                 n_jobs=1, verbose=0, solver_options=None):
        _keep(self, locals())

    def _solver_names(self):
        return linear_solvers()

    def fit(self, X, y, sample_weight=None):
        return self._fit(X, y, sample_weight)


def _family_solvers(*families):
    return sorted(n for n, s in solvers().items() if s.family in families)


class MixupKernelClassifier(_Classifier):
    """A kernel classifier trained with mixup by SDCA (MixupSDCA, Obi et al. 2025;
    ``dualsolve.train_mixup_sdca``; solver "kernel_sgd" is its SGD baseline)::

        min_f  (1/n) sum_i loss(y~_i, f(x~_i)) + (1/(2 C n)) ||f||_H^2

    over the n training points and ``n_mix`` mixup points ``x~ = (1-r) x_a + r x_b`` with
    soft labels. ``kernel`` "rbf" (default), "poly", "linear" or "precomputed", with
    ``kernel_gamma``, ``degree``, ``coef0``; ``method`` the SDCA step rule ("naive",
    "approx", "decomp", "exact"); other parameters as :class:`LinearClassifier`. After
    ``fit``: ``dual_coef_`` (the dual variables, one column per class beyond two) instead
    of ``coef_``.
    """

    _direct = ("kernel", "kernel_gamma", "degree", "coef0", "n_mix", "mixup_alpha", "method")

    def __init__(self, loss="logistic", solver="mixup_sdca", kernel="rbf", kernel_gamma=None,
                 degree=3, coef0=1.0, n_mix=0, mixup_alpha=1.0, method="naive", C=1.0,
                 tol=None, max_iter=None, warm_start=False, random_state=None, n_jobs=1,
                 verbose=0, solver_options=None):
        _keep(self, locals())

    def _solver_names(self):
        return _family_solvers("mixup")

    def _set_fitted(self, model):
        super()._set_fitted(model)
        del self.coef_, self.intercept_             # a kernel model has none
        self.dual_coef_ = model.dual

    def fit(self, X, y):
        """(no sample_weight: the mixup family's losses are unweighted)"""
        return self._fit(X, y)


class AUCClassifier(_Classifier):
    """A linear scorer that maximises the AUC (Liu et al. 2020: PPD-SG, PPD-AdaGrad; the
    baselines SOLAM and PGA), through the square-loss AUC surrogate::

        min_w  E[(1 - w.(x - x'))^2 | y = 1, y' = -1] + (lam/2) ||w||^2

    ``lam`` is the solver's (these objectives are not an average loss, so there is no
    ``C``). ``decision_function`` ranks; ``predict`` thresholds the score at 0 (a ranking
    model: prefer the scores); ``score`` is the ROC AUC (one-vs-rest macro average for
    more than two classes). ``solver`` "ppd_sg" (default), "ppd_adagrad", "solam", "pga".
    """

    def __init__(self, solver="ppd_sg", lam=None, tol=None, max_iter=None, warm_start=False,
                 random_state=None, n_jobs=1, verbose=0, solver_options=None):
        _keep(self, locals())

    loss = "squared"            # the surrogate's (the AUC solvers' only loss)

    def _solver_names(self):
        return _family_solvers("auc")

    def _two_d_coef(self):
        return True

    def fit(self, X, y):
        """(no sample_weight: the AUC objectives are over pairs, unweighted)"""
        return self._fit(X, y)

    def score(self, X, y, sample_weight=None):
        """ROC AUC of the scores (macro one-vs-rest for more than two classes)."""
        from sklearn.metrics import roc_auc_score
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return float(roc_auc_score(np.asarray(y) == self.classes_[1], scores,
                                       sample_weight=sample_weight))
        return float(np.mean([roc_auc_score(np.asarray(y) == c, scores[:, k],
                                            sample_weight=sample_weight)
                              for k, c in enumerate(self.classes_)]))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True     # a ranking, not a calibrated threshold
        return tags


class SpectralRiskRegressor(_Regressor):
    """A linear regressor minimising a spectral risk (SOREL, Ge & Jiang; the baselines
    LSVRG, Prospect, SGD)::

        min_w  sum_i sigma_i l_[i](w) + (1/(2 C n)) ||w||^2

    with ``l_[1] <= ... <= l_[n]`` the sorted squared losses and ``sigma`` the spectrum:
    "superquantile" (alias "cvar"; default, ``spectrum_param`` alpha = 0.5), "extremile",
    "esrm", "erm", or explicit weights. ``solver`` "sorel" (default), "lsvrg", "prospect",
    "spectral_sgd".
    """

    _direct = ("spectrum", "spectrum_param")

    def __init__(self, spectrum="superquantile", spectrum_param=None, solver="sorel", C=1.0,
                 tol=None, max_iter=None, warm_start=False, random_state=None, n_jobs=1,
                 verbose=0, solver_options=None):
        _keep(self, locals())

    loss = "squared"

    def _solver_names(self):
        return _family_solvers("spectral")

    def fit(self, X, y):
        """(no sample_weight: a spectral risk weighs the sorted losses by the spectrum)"""
        return self._fit(X, y)

