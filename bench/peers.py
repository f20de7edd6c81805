"""Peer solvers on *our* objective, timed fairly, plus a tight reference optimum.

Objective (no intercept), for X (n x d, CSR) and y in {-1, +1}:

    P(w) = (1/n) sum_i loss(y_i x_i.w) + (lam/2) ||w||^2

    logistic       loss(m) = log(1 + exp(-m))
    squared_hinge  loss(m) = max(0, 1 - m)^2          (no 1/2)
    hinge          loss(m) = max(0, 1 - m)

Every adapter solves exactly this problem and returns

    run_<peer>(X, y, lam, loss, tol, max_iter) -> dict(
        w        ndarray float64 (d,), oriented so that x.w > 0 predicts y = +1,
        time     seconds of the solve only (time.perf_counter around the fit call;
                 data conversion / copies done by our adapter are outside),
        n_iter   the peer's own iteration count (epochs / Newton steps / ...),
        hit_max_iter, peer, loss, tol, ... peer-specific extras)

Verified parameter mappings (checked numerically by ``python bench/peers.py verify``:
for each peer, the returned w is compared with an independent tight optimum of
P, and the lam that w is optimal for is recovered from the stationarity condition
grad L(w) + lam w = 0, i.e. lam_implied = -<grad L(w), w> / ||w||^2):

* liblinear-official 2.50 (``liblinear.liblinearutil``): primal is
  0.5||w||^2 + C sum_i loss_i  =  C n P(w)   ->   C = 1 / (lam n), ``-B -1``.
  -s 0 (LR primal Newton), -s 7 (LR dual CD), -s 2 (L2-loss SVC primal Newton),
  -s 1 (L2-loss SVC dual CD), -s 3 (L1-loss SVC dual CD); the L2 loss is the full
  max(0,1-m)^2. liblinear puts the class of the FIRST training row first
  (model.label[0]) and its w scores label[0] positive, so w is negated when
  label[0] == -1.  Stopping: -s 0/2: ||grad f(w)|| <= eps * max(min(#pos,#neg),1)/n
  * ||grad f(0)||; -s 1/3/7: max dual projected-gradient violation <= eps.  The dual
  solvers stop after a hard-coded 300 outer iterations: -s 7 then SWITCHES to the
  primal Newton solver (-s 0) with eps*0.1 and -s 1 to -s 2; -s 3 just stops with a
  warning (no max_iter option in liblinear-official).  The adapter captures the
  solver's output and reports ``fallback`` and the iteration counts.  The
  ``problem`` (a feature_node copy of X: 16 bytes per nnz + 1 per row) is built
  outside the timer; only ``train(prob, param)`` is timed.
* scikit-learn 1.9.1: LogisticRegression(solver="saga") minimises
  C sum_i loss_i + 0.5||w||^2 (sag_solver gets alpha = 1/(C n) after its internal
  /n scaling) -> C = 1/(lam n), fit_intercept=False; unchanged from older versions
  for the binary case (HalfBinomialLoss with y in {0,1} is the same logistic loss).
  ``tol`` is saga's max|w_new - w_old| / max|w| per epoch; n_iter_ = epochs.
  The L2-only ``penalty`` argument is deprecated in 1.8+: use l1_ratio=0.
  solver="lbfgs": same C mapping, tol on the projected gradient (scipy L-BFGS-B).
  LinearSVC(loss="squared_hinge"|"hinge", dual=True, fit_intercept=False,
  C=1/(lam n)) and LogisticRegression(solver="liblinear", dual=True) run
  sklearn's vendored liblinear (with a max_iter option and no primal fallback);
  their fit copies X into liblinear's feature_node layout INSIDE the timed call
  (that copy is a few hundredths of a second on news20).
  sklearn's input validation is run with assume_finite=True (no NaN scan).
* snapml 1.17.2: LogisticRegression / SupportVectorMachine minimise
  sum_i loss_i + (regularizer/2)||w||^2  ->  regularizer = lam n (= 1/C);
  SupportVectorMachine(loss="squared_hinge") uses the full max(0,1-m)^2, and
  loss="hinge" the plain hinge.  snapml casts X to float32 / uint32 / uint64 and
  y to float32 in Python before calling its native ``c_fit`` (we time only
  ``c_fit``, which may still build its own native copy); the SOLVE RUNS IN FLOAT32,
  which puts a floor on the reachable suboptimality.  ``tol`` is a relative change
  of the model between epochs (not a gap).  dual=True (SDCA) on CSR; dual=False
  needs CSC (primal CD) and is much slower here.  n_jobs=1.
* cyanure 1.2.2 (low-level ``cyanure_lib.erm_``, what Classifier.fit calls):
  minimises (1/n) sum_i L_i + (lambda_1/2)||w||^2 with
  L = log(1+exp(-m)) for "logistic"   ->  lambda_1 = lam,  objective = P
  L = 0.5 max(0,1-m)^2 for "sqhinge"  ->  lambda_1 = lam/2, objective = P/2.
  No hinge loss.  ``tol`` is the relative duality gap (P - D)/P, checked every
  ``duality_gap_interval`` epochs (default 5 here, like Classifier); solver "auto"
  is Catalyst-accelerated MISO for these problems.  It takes X.T (a CSC view of
  our CSR, no copy, float64 kept); n_threads=1.  n_iter = epochs (passes).

``reference_optimum`` computes P* independently of dualsolve: liblinear primal
Newton (-s 0 / -s 2) at eps=1e-12, then scipy L-BFGS-B polishing started from it;
the certificate is ||grad P(w)||^2 / (2 lam) >= P(w) - P* (lam-strong convexity).
For hinge (non-smooth) it is the best of liblinear -s 3 and sklearn LinearSVC at
tight tolerances, certified by liblinear's printed dual objective.  That
certificate is weak (about 1e-4 relative on a9a, lam=1/n) because liblinear-official
-s 3 stops at its 300-iteration cap.

Other findings (reuters and news20, lam = 1/n):
* every peer reaches 1e-8 (logistic) / 1e-6 (squared hinge) in 5-20 passes: TF-IDF
  rows have unit norm, so lam = 1/n is well conditioned.  liblinear's dual CD at
  its default eps=0.1 is already ~5e-7 from the optimum.
* snapml's float32 solve was NOT the binding limit at these targets (3e-9 reached
  on news20 logistic, 5e-13 on a9a), but its fit keeps ~2 extra copies of X
  (float32 in Python, then native): peak RSS +194 MB for news20's 88 MB CSR.
  cyanure: +44 MB (vectors of length d only; X is not copied).  liblinear-official:
  +148 MB (the feature_node problem).
* cyanure solver="auto" (Catalyst-MISO here) with gap checks every 5 epochs was as
  fast as or faster than miso / qning-miso / catalyst-svrg / acc-svrg and gap
  checks every epoch.  Its tol is a certified relative gap, so the tol needed is
  tighter than the suboptimality reached (news20 logistic: tol 3e-8 -> 2e-11).
* sklearn lbfgs with a loose tol (1e-1..1e-2 on news20) returns w = 0 (0 iterations).
"""

import argparse
import contextlib
import ctypes
import hashlib
import json
import os
import re
import sys
import time
import warnings

import numpy as np
import scipy.optimize
import scipy.sparse as sp

try:  # single-threaded BLAS / OpenMP everywhere
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover
    threadpool_limits = None

LOSSES = ("logistic", "squared_hinge", "hinge")


def _single_thread():
    if threadpool_limits is None:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1)


def _check_loss(loss):
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")


def _as_csr64(X):
    X = sp.csr_matrix(X)
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    return X


def _labels(y):
    y = np.asarray(y, dtype=np.float64).ravel()
    if not np.all((y == 1.0) | (y == -1.0)):
        raise ValueError("y must be in {-1, +1}")
    return y


# ------------------------------------------------------------ objective ---

def primal_objective(X, y, w, lam, loss):
    """P(w) = mean(loss(y * (X @ w))) + lam/2 ||w||^2 in float64."""
    _check_loss(loss)
    w = np.asarray(w, dtype=np.float64).ravel()
    m = y * (X @ w)
    if loss == "logistic":
        l = np.logaddexp(0.0, -m)
    elif loss == "squared_hinge":
        l = np.square(np.maximum(0.0, 1.0 - m))
    else:
        l = np.maximum(0.0, 1.0 - m)
    return float(np.mean(l) + 0.5 * lam * np.dot(w, w))


def primal_value_and_grad(X, y, w, lam, loss):
    """(P(w), grad P(w)) for the smooth losses (for hinge: a subgradient)."""
    _check_loss(loss)
    n = X.shape[0]
    m = y * (X @ w)
    if loss == "logistic":
        l = np.logaddexp(0.0, -m)
        dl = -np.exp(-np.logaddexp(0.0, m))  # -1/(1+e^m), stable
    elif loss == "squared_hinge":
        r = np.maximum(0.0, 1.0 - m)
        l, dl = r * r, -2.0 * r
    else:
        l = np.maximum(0.0, 1.0 - m)
        dl = -(m < 1.0).astype(np.float64)
    f = float(np.mean(l) + 0.5 * lam * np.dot(w, w))
    g = X.T @ (y * dl) / n + lam * w
    return f, g


def dual_objective(X, y, a, lam, loss):
    """(D(a), w(a)) of the dual point a in [0, 1] (logistic) or [0, inf) (squared
    hinge), w(a) = X^T (a y) / (lam n), in float64 from the formula alone:
    D(a) = mean(-loss*(-a)) - lam/2 ||w(a)||^2 <= P* by weak duality, with
    -loss*(-a) = the binary entropy of a (logistic), a - a^2/4 (squared hinge)."""
    _check_loss(loss)
    a = np.asarray(a, dtype=np.float64)
    n = X.shape[0]
    if loss == "logistic":
        if a.min() < 0.0 or a.max() > 1.0:
            raise ValueError("a logistic dual point lies in [0, 1]")
        c = -(_xlogx(a) + _xlogx(1.0 - a))
    elif loss == "squared_hinge":
        if a.min() < 0.0:
            raise ValueError("a squared-hinge dual point is non-negative")
        c = a - 0.25 * a * a
    else:
        raise ValueError(f"no dual objective for {loss!r} here")
    w = X.T @ (a * y) / (lam * n)
    return float(np.mean(c) - 0.5 * lam * np.dot(w, w)), w


def _xlogx(t):
    out = np.zeros_like(t)
    pos = t > 0
    out[pos] = t[pos] * np.log(t[pos])
    return out


def implied_lam(X, y, w, loss):
    """The lam for which w is stationary: argmin_lam ||grad L(w) + lam w||.

    Returns (lam_implied, relative residual ||grad L + lam w|| / ||grad L||)."""
    f, g = primal_value_and_grad(X, y, w, 0.0, loss)
    lam = -float(g @ w) / float(w @ w)
    return lam, float(np.linalg.norm(g + lam * w) / np.linalg.norm(g))


def matvec_time(X, repeat=20, seed=0):
    """Median wall time of one ``X @ w`` (dense float64 w), for scale."""
    w = np.random.default_rng(seed).standard_normal(X.shape[1])
    X @ w
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        X @ w
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


# ------------------------------------------------------------ liblinear ---

_LL_SOLVER = {  # (loss, "dual"/"primal") -> -s
    ("logistic", "dual"): 7, ("logistic", "primal"): 0,
    ("squared_hinge", "dual"): 1, ("squared_hinge", "primal"): 2,
    ("hinge", "dual"): 3,
}


class _Prepared:
    """One-slot memo of a peer's converted data, keyed on the identity of X, y."""

    def __init__(self, build):
        self.build, self.key, self.value = build, (None, None), None

    def get(self, X, y):
        if not (self.key[0] is X and self.key[1] is y):
            self.value, self.key = None, (None, None)  # free the old copy first
            self.value, self.key = self.build(X, y), (X, y)
        return self.value


def _ll_build(X, y):
    from liblinear import liblinear as ll
    Xc = _as_csr64(X)
    y = _labels(y)
    return ll.problem(y, Xc), y


_ll_prep = _Prepared(_ll_build)


def _ll_train(prob, opts):
    """train(prob, param) with output captured; returns (model, text, seconds)."""
    from liblinear import liblinear as ll
    from liblinear import liblinearutil as llu
    chunks = []

    def _cb(s):
        chunks.append(s.decode(errors="replace"))

    param = ll.parameter(opts)
    cb = ll.PRINT_STRING_FUN(_cb)
    param.print_func = cb
    with _single_thread():
        t0 = time.perf_counter()
        model = llu.train(prob, param)
        dt = time.perf_counter() - t0
    ll.liblinear.set_print_string_function(ll.ctypes_print_null)
    return model, "".join(chunks), dt


def _ll_w(model, d):
    nf = model.get_nr_feature()
    w = np.ctypeslib.as_array(model.w, shape=(nf,)).astype(np.float64, copy=True)
    if nf < d:
        w = np.concatenate([w, np.zeros(d - nf)])
    if model.get_labels()[0] == -1:  # w scores model.label[0] as the positive class
        w = -w
    return w


def run_liblinear(X, y, lam, loss, tol, max_iter=None, solver="dual"):
    """liblinear-official. solver="dual" (-s 7/1/3) or "primal" (-s 0/2) or an int -s.

    max_iter is ignored (liblinear-official hard-codes 300 dual iterations and
    its Newton limit); the result says whether the dual solver fell back."""
    _check_loss(loss)
    s = solver if isinstance(solver, int) else _LL_SOLVER.get((loss, solver))
    if s is None:
        raise ValueError(f"liblinear has no {solver} solver for {loss}")
    prob, yy = _ll_prep.get(X, y)
    n = X.shape[0]
    C = 1.0 / (lam * n)
    model, out, dt = _ll_train(prob, f"-s {s} -c {C!r} -e {tol!r} -B -1")
    w = _ll_w(model, X.shape[1])
    m_dual = re.search(r"optimization finished, #iter = (\d+)", out)
    newton_iters = len(re.findall(r"^iter\s+\d+", out, flags=re.M))
    m_obj = re.search(r"Objective value = (\S+)", out)
    fallback = "Switching to use" in out
    dual_iter = int(m_dual.group(1)) if m_dual else 0
    res = dict(w=w, time=dt, peer=f"liblinear -s {s}", loss=loss, tol=tol,
               n_iter=dual_iter + newton_iters, dual_iter=dual_iter,
               newton_iter=newton_iters, fallback=fallback,
               hit_max_iter=bool(dual_iter >= 300 and not fallback),
               line_search_failed="line search fails" in out)
    if m_obj and s in (1, 3):
        # dual solvers print f(alpha) = 0.5 a'(Q+D)a - e'a = -(dual value), C-scaled
        res["dual_objective"] = -float(m_obj.group(1)) / (C * n)
    return res


def _ll_subproblem(prob, yy, rows):
    """A liblinear problem over ``rows`` of ``prob`` that shares its feature_node rows (as
    liblinear's own cross-validation builds its folds: row pointers, no copy)."""
    from liblinear import liblinear as ll
    l = int(rows.size)
    sub = ll.problem.__new__(ll.problem)
    sub.l, sub.n, sub.bias = l, prob.n, -1
    ybuf = (ctypes.c_double * l)()
    np.ctypeslib.as_array(ybuf, (l,))[:] = np.asarray(yy, dtype=np.float64)[rows]
    xbuf = (ctypes.POINTER(ll.feature_node) * l)()
    src = np.ctypeslib.as_array(ctypes.cast(prob.x, ctypes.POINTER(ctypes.c_uint64)), (prob.l,))
    np.ctypeslib.as_array(ctypes.cast(xbuf, ctypes.POINTER(ctypes.c_uint64)), (l,))[:] = src[rows]
    sub.y, sub.x = ybuf, xbuf
    sub._keep = (ybuf, xbuf, prob)   # the rows live in prob's x_space
    return sub


def liblinear_grid_cv(X, y, Cs, fold, solver=0, eps=None):
    """liblinear's ``-C`` search (``find_parameter_C`` in linear.cpp) run over a given grid.

    ``-C`` fixes its own grid (C doubling from a start up to 2^10); this runs the same
    algorithm over ``Cs`` (ascending): in every fold (``fold[i]`` = the fold of row i) the
    solve at each C starts from that fold's solution at the previous C (``init_sol``,
    which liblinear supports for ``-s 0`` / ``-s 2``), at liblinear's default ``-e``
    (0.01) unless ``eps`` is given, and the held-out rows are scored by accuracy.
    Returns (accuracy per C pooled over the folds, correct / n, as liblinear scores;
    seconds); the fold problems share ``X``'s converted rows and are built inside the
    timer, as liblinear builds them."""
    from liblinear import liblinear as ll
    prob, yy = _ll_prep.get(X, y)
    Xc = _as_csr64(X)
    Cs = np.asarray(Cs, dtype=np.float64)
    if np.any(np.diff(Cs) <= 0):
        raise ValueError("Cs must be increasing (each solve starts from the previous C's)")
    n_folds = int(fold.max()) + 1
    correct = np.zeros(Cs.size)
    e = "" if eps is None else f" -e {eps!r}"
    # liblinear.train prints unless told not to (-q is read by liblinearutil.train only)
    ll.liblinear.set_print_string_function(ll.ctypes_print_null)
    with _single_thread():
        t0 = time.perf_counter()
        for k in range(n_folds):
            train_rows = np.flatnonzero(fold != k)
            test_rows = np.flatnonzero(fold == k)
            sub = _ll_subproblem(prob, yy, train_rows)
            Xt, yt = Xc[test_rows], yy[test_rows]
            prev = None
            for j, C in enumerate(Cs):
                param = ll.parameter(f"-s {solver} -c {float(C)!r}{e} -B -1 -q")
                if prev is not None:
                    param.init_sol = prev.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
                model = ll.toPyModel(ll.liblinear.train(sub, param))
                nf = model.get_nr_feature()
                prev = np.ctypeslib.as_array(model.w, shape=(nf,)).copy()
                labels = model.get_labels()
                dec = Xt @ prev if nf == Xt.shape[1] else Xt[:, :nf] @ prev
                pred = np.where(dec > 0, labels[0], labels[1])
                correct[j] += np.count_nonzero(pred == yt)
        dt = time.perf_counter() - t0
    return correct / X.shape[0], dt


def run_liblinear_primal(X, y, lam, loss, tol, max_iter=None):
    return run_liblinear(X, y, lam, loss, tol, max_iter, solver="primal")


# -------------------------------------------------------------- sklearn ---

def _sk_fit(est, X, y):
    import sklearn
    with sklearn.config_context(assume_finite=True), _single_thread(), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est.fit(X, y)
        return time.perf_counter() - t0


def _sk_w(est):
    w = np.asarray(est.coef_, dtype=np.float64).ravel().copy()
    if est.classes_[1] != 1:  # coef_ scores classes_[1] positive
        w = -w
    return w


def run_sklearn_saga(X, y, lam, loss, tol, max_iter=1000, seed=0):
    """sklearn LogisticRegression(solver="saga"); logistic only."""
    from sklearn.linear_model import LogisticRegression
    if loss != "logistic":
        raise ValueError("sklearn saga adapter: logistic only")
    X, y = _as_csr64(X), _labels(y)
    est = LogisticRegression(solver="saga", C=1.0 / (lam * X.shape[0]), l1_ratio=0.0,
                             fit_intercept=False, tol=tol, max_iter=max_iter,
                             random_state=seed)
    dt = _sk_fit(est, X, y)
    it = int(np.max(est.n_iter_))
    return dict(w=_sk_w(est), time=dt, n_iter=it, hit_max_iter=bool(it >= max_iter),
                peer="sklearn saga", loss=loss, tol=tol)


def run_sklearn_lbfgs(X, y, lam, loss, tol, max_iter=10000):
    """sklearn LogisticRegression(solver="lbfgs"); logistic only."""
    from sklearn.linear_model import LogisticRegression
    if loss != "logistic":
        raise ValueError("sklearn lbfgs adapter: logistic only")
    X, y = _as_csr64(X), _labels(y)
    est = LogisticRegression(solver="lbfgs", C=1.0 / (lam * X.shape[0]), l1_ratio=0.0,
                             fit_intercept=False, tol=tol, max_iter=max_iter)
    dt = _sk_fit(est, X, y)
    it = int(np.max(est.n_iter_))
    return dict(w=_sk_w(est), time=dt, n_iter=it, hit_max_iter=bool(it >= max_iter),
                peer="sklearn lbfgs", loss=loss, tol=tol)


def run_sklearn_liblinear(X, y, lam, loss, tol, max_iter=1000, seed=0):
    """sklearn's vendored liblinear, dual CD: LogisticRegression(solver="liblinear",
    dual=True) for logistic, LinearSVC(dual=True) for (squared) hinge.  The
    timed fit includes sklearn's CSR -> feature_node copy."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC
    _check_loss(loss)
    X, y = _as_csr64(X), _labels(y)
    C = 1.0 / (lam * X.shape[0])
    if loss == "logistic":
        est = LogisticRegression(solver="liblinear", dual=True, C=C, l1_ratio=0.0,
                                 fit_intercept=False, tol=tol, max_iter=max_iter,
                                 random_state=seed)
    else:
        est = LinearSVC(loss=loss, dual=True, C=C, fit_intercept=False, tol=tol,
                        max_iter=max_iter, random_state=seed)
    dt = _sk_fit(est, X, y)
    it = int(np.max(est.n_iter_))
    return dict(w=_sk_w(est), time=dt, n_iter=it, hit_max_iter=bool(it >= max_iter),
                peer="sklearn liblinear-dual", loss=loss, tol=tol)


# --------------------------------------------------------------- snapml ---

def run_snapml(X, y, lam, loss, tol, max_iter=1000, seed=0, dual=True):
    """snapml LogisticRegression (logistic) / SupportVectorMachine ((squared) hinge).

    Only the native ``c_fit`` call is timed (the float32 casts in snapml's
    Python ``fit`` are excluded)."""
    import snapml
    _check_loss(loss)
    X, y = _as_csr64(X), _labels(y)
    reg = lam * X.shape[0]
    if loss == "logistic":
        est = snapml.LogisticRegression(regularizer=reg, dual=dual, tol=tol,
                                        max_iter=max_iter, n_jobs=1,
                                        fit_intercept=False, random_state=seed)
    else:
        if not dual:
            raise ValueError("snapml SVM is dual only")
        est = snapml.SupportVectorMachine(loss=loss, regularizer=reg, tol=tol,
                                          max_iter=max_iter, n_jobs=1,
                                          fit_intercept=False, random_state=seed)
    if not dual:
        X = X.tocsc()
    box = {}
    c_fit = est.c_fit

    def timed_c_fit(*a, **k):
        t0 = time.perf_counter()
        out = c_fit(*a, **k)
        box["t"] = time.perf_counter() - t0
        return out

    est.c_fit = timed_c_fit  # instance attribute shadows the method
    with _single_thread(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est.fit(X, y)
        t_fit = time.perf_counter() - t0
    w = np.asarray(est.coef_, dtype=np.float64).ravel().copy()
    if list(est.classes_) != [-1.0, 1.0]:
        raise RuntimeError(f"unexpected snapml classes {est.classes_}")
    it = int(est.n_iter_)
    return dict(w=w, time=box["t"], time_fit_total=t_fit, n_iter=it,
                hit_max_iter=bool(it >= max_iter), peer="snapml" + ("" if dual else " primal"),
                loss=loss, tol=tol)


# -------------------------------------------------------------- cyanure ---

def run_cyanure(X, y, lam, loss, tol, max_iter=1000, seed=0, solver="auto",
                duality_gap_interval=5):
    """cyanure's erm_ (what cyanure.estimators.Classifier.fit calls)."""
    import cyanure_lib
    if loss not in ("logistic", "squared_hinge"):
        raise ValueError("cyanure: logistic or squared_hinge only")
    X, y = _as_csr64(X), _labels(y)
    Xt = X.T  # CSC view, shares X's arrays
    w0 = np.zeros(X.shape[1], dtype=np.float64)
    w = w0.copy()
    cy_loss, lam1 = ("logistic", lam) if loss == "logistic" else ("sqhinge", lam / 2)
    with _single_thread():
        t0 = time.perf_counter()
        info = cyanure_lib.erm_(
            Xt, y, w0, w, dual_variable=None, loss=cy_loss, penalty="l2",
            solver=solver, lambda_1=float(lam1), lambda_2=0.0, lambda_3=0.0,
            intercept=False, tol=float(tol),
            duality_gap_interval=int(duality_gap_interval), max_iter=int(max_iter),
            limited_memory_qning=20, fista_restart=50, verbose=False,
            univariate=True, n_threads=1, seed=int(seed))
        dt = time.perf_counter() - t0
    # info[0] rows: epoch, primal, dual, relative gap, (0), internal time; one
    # column per gap check, zero-padded.
    info = np.asarray(info)[0]
    cols = np.nonzero(info[0])[0]
    it = int(info[0, cols[-1]]) if cols.size else 0
    gap = float(info[3, cols[-1]]) if cols.size else np.nan
    return dict(w=w, time=dt, n_iter=it, hit_max_iter=bool(it >= max_iter), rel_gap=gap,
                peer=f"cyanure {solver}", loss=loss, tol=tol)


# ------------------------------------------------------------- registry ---

def _grid(lo_exp, hi_exp=1, half=True):
    """10^-1, 10^-1.5, ... , 10^-lo_exp (decreasing)."""
    out = []
    for e in range(hi_exp, lo_exp + 1):
        out.append(10.0 ** -e)
        if half and e < lo_exp:
            out.append(10.0 ** -(e + 0.5))
    return out


# name -> (run function, losses, default tolerance grid)
PEERS = {
    "liblinear-dual": (run_liblinear, LOSSES, _grid(12)),
    "liblinear-primal": (run_liblinear_primal, ("logistic", "squared_hinge"), _grid(12)),
    "sklearn-saga": (run_sklearn_saga, ("logistic",), _grid(12)),
    "sklearn-lbfgs": (run_sklearn_lbfgs, ("logistic",), _grid(12)),
    "sklearn-liblinear": (run_sklearn_liblinear, LOSSES, _grid(12)),
    "snapml": (run_snapml, LOSSES, _grid(12)),
    "cyanure": (run_cyanure, ("logistic", "squared_hinge"), _grid(14)),
}


def peers_for(loss):
    return [name for name, (_, losses, _) in PEERS.items() if loss in losses]


# ---------------------------------------------------- reference optimum ---

def _fingerprint(X, y):
    h = hashlib.sha1()
    for a in (np.asarray(X.shape), X.indptr, X.indices, X.data, np.asarray(y)):
        h.update(np.ascontiguousarray(a).view(np.uint8))
    return h.hexdigest()[:16]


def _cache_dir():
    d = os.environ.get("DUALSOLVE_CACHE")
    p = d if d else os.path.join(os.path.dirname(os.path.abspath(__file__)), "cache")
    os.makedirs(p, exist_ok=True)
    return p


def reference_optimum(X, y, lam, loss, name=None, use_cache=True, verbose=False):
    """A tight P* computed independently of dualsolve, cached as JSON.

    Returns dict(p_star, grad_norm, bound, w (ndarray), method, ...) where bound
    is a certified upper bound on P(w) - P* (||grad||^2/(2 lam) for the smooth
    losses, P(w) - D(alpha) from liblinear's dual for hinge).  The cache key is
    ``name`` (if given) + a content hash of X, y + loss + lam; w is stored next to
    the JSON as .npy."""
    _check_loss(loss)
    X, y = _as_csr64(X), _labels(y)
    key = f"ref_{name + '_' if name else ''}{_fingerprint(X, y)}_{loss}_{lam:.6e}"
    path = os.path.join(_cache_dir(), key + ".json")
    if use_cache and os.path.exists(path):
        with open(path) as f:
            res = json.load(f)
        wp = os.path.join(_cache_dir(), key + ".npy")
        res["w"] = np.load(wp) if os.path.exists(wp) else None
        return res

    t0 = time.perf_counter()
    cands = []
    if loss in ("logistic", "squared_hinge"):
        r = run_liblinear(X, y, lam, loss, 1e-12, solver="primal")
        w = r["w"]
        f, g = primal_value_and_grad(X, y, w, lam, loss)
        cands.append(("liblinear primal eps=1e-12", w, f, np.linalg.norm(g)))
        if verbose:
            print(f"  liblinear -s {0 if loss == 'logistic' else 2}: P={f:.17g} "
                  f"|g|={np.linalg.norm(g):.3e} ({r['n_iter']} Newton its)")
        opt = scipy.optimize.minimize(
            lambda v: primal_value_and_grad(X, y, v, lam, loss), w, jac=True,
            method="L-BFGS-B",
            options=dict(gtol=1e-12, ftol=1e-15, maxiter=10000, maxcor=20))
        f2, g2 = primal_value_and_grad(X, y, opt.x, lam, loss)
        cands.append(("L-BFGS-B polish", opt.x, f2, np.linalg.norm(g2)))
        if verbose:
            print(f"  L-BFGS-B: P={f2:.17g} |g|={np.linalg.norm(g2):.3e} ({opt.nit} its)")
        # the point with the smaller certified bound is kept; ties -> smaller P
        best = min(cands, key=lambda c: (c[3] ** 2 / (2 * lam), c[2]))
        method, w, f, gn = best
        pstar = min(c[2] for c in cands)
        bound = gn ** 2 / (2 * lam)
        extra = dict(dual=f - bound)
    else:
        r = run_liblinear(X, y, lam, loss, 1e-12, solver="dual")
        f1 = primal_objective(X, y, r["w"], lam, loss)
        cands.append(("liblinear -s 3 eps=1e-12", r["w"], f1, np.nan))
        r2 = run_sklearn_liblinear(X, y, lam, loss, 1e-12, max_iter=100000)
        f2 = primal_objective(X, y, r2["w"], lam, loss)
        cands.append(("sklearn LinearSVC hinge tol=1e-12", r2["w"], f2, np.nan))
        method, w, f, gn = min(cands, key=lambda c: c[2])
        pstar = f
        dual = r.get("dual_objective", np.nan)
        bound = f - dual
        extra = dict(dual=dual, dual_iter=r["dual_iter"])
    res = dict(name=name, loss=loss, lam=lam, n=X.shape[0], d=X.shape[1],
               p_star=pstar, p_at_w=f, grad_norm=float(gn), bound=float(bound),
               rel_bound=float(bound / abs(pstar)), method=method,
               candidates={c[0]: c[2] for c in cands},
               seconds=time.perf_counter() - t0, **extra)
    with open(path, "w") as fh:
        json.dump(res, fh, indent=1, default=float)
    np.save(os.path.join(_cache_dir(), key + ".npy"), w)
    res["w"] = w
    return res


# ------------------------------------------------------- time to target ---

def time_to_target(run_fn, X, y, lam, loss, p_star, rel_target, tol_grid=None,
                   max_iter=None, repeat=3, stall=3, verbose=False, **kw):
    """Run a peer at decreasing tolerances until (P(w) - P*)/|P*| <= rel_target.

    run_fn: a PEERS name or a run_<peer> function (then tol_grid is required).
    Returns dict(time, tol, subopt, n_iter, reached, times, runs=[...]):
    time/tol are those of the first tolerance whose run reaches the target; that
    run is repeated ``repeat`` times in all and ``time`` is the median (``times``
    lists them).  If no tolerance reaches the target, time is None and subopt is
    the best reached.  The sweep stops early when a run hits its iteration cap,
    or after ``stall`` runs that did more iterations than the previous one
    without halving the best suboptimality (e.g. a float32 floor)."""
    if isinstance(run_fn, str):
        run_fn, _, grid = PEERS[run_fn]
        tol_grid = grid if tol_grid is None else tol_grid
    if tol_grid is None:
        raise ValueError("tol_grid is required for a bare run function")
    if max_iter is not None:
        kw["max_iter"] = max_iter
    runs, best, stalls, prev_it = [], np.inf, 0, -1
    for tol in tol_grid:
        r = run_fn(X, y, lam, loss, tol, **kw)
        p = primal_objective(X, y, r["w"], lam, loss)
        sub = (p - p_star) / abs(p_star)
        row = {k: v for k, v in r.items() if k != "w"}
        row.update(primal=p, subopt=sub)
        runs.append(row)
        if verbose:
            print(f"    {r['peer']:<22} tol={tol:8.1e} time={r['time']:8.3f}s "
                  f"it={r['n_iter']:<6} subopt={sub:.2e}", flush=True)
        if sub <= rel_target:
            times = [r["time"]]
            for _ in range(repeat - 1):
                times.append(run_fn(X, y, lam, loss, tol, **kw)["time"])
            return dict(time=float(np.median(times)), tol=tol, subopt=sub,
                        n_iter=r["n_iter"], reached=True, times=times, runs=runs)
        if r["n_iter"] > prev_it and not sub < best / 2:
            stalls += 1
        prev_it = max(prev_it, r["n_iter"])
        best = min(best, sub)
        if r.get("hit_max_iter") or stalls >= stall:
            break
    return dict(time=None, tol=None, subopt=best, n_iter=None, reached=False,
                times=[], runs=runs)


def run_all(X, y, lam, loss, rel_target, peers=None, name=None, verbose=False):
    """Reference optimum + time_to_target for every peer supporting ``loss``.

    Returns dict(ref=..., matvec=..., results={peer: time_to_target dict})."""
    ref = reference_optimum(X, y, lam, loss, name=name, verbose=verbose)
    out = dict(name=name, loss=loss, lam=lam, rel_target=rel_target,
               p_star=ref["p_star"], ref_rel_bound=ref["rel_bound"],
               matvec=matvec_time(X), results={})
    for p in peers or peers_for(loss):
        if loss not in PEERS[p][1]:
            continue
        if verbose:
            print(f"  {p}", flush=True)
        out["results"][p] = time_to_target(p, X, y, lam, loss, ref["p_star"],
                                           rel_target, verbose=verbose)
    return out


def format_table(out):
    mv = out["matvec"]
    lines = [f"{out['name']} {out['loss']} lam={out['lam']:.3e} target={out['rel_target']:.0e}"
             f"  P*={out['p_star']:.15g} (certified rel. err <= {out['ref_rel_bound']:.1e})"
             f"  X@w={mv * 1e3:.2f} ms",
             f"  {'peer':<18} {'time (s)':>9} {'x matvec':>9} {'tol':>9} {'iters':>7}"
             f"  {'subopt':>8}  notes"]
    for p, r in out["results"].items():
        last = r["runs"][-1] if r["runs"] else {}
        notes = []
        if last.get("fallback"):
            notes.append("dual->primal fallback")
        if not r["reached"]:
            notes.append("NOT reached" + (" (max_iter)" if last.get("hit_max_iter") else ""))
        t = f"{r['time']:9.3f}" if r["reached"] else f"{'-':>9}"
        ratio = f"{r['time'] / mv:9.0f}" if r["reached"] else f"{'-':>9}"
        tol = f"{r['tol']:9.1e}" if r["reached"] else f"{'-':>9}"
        it = f"{r['n_iter']:>7}" if r["reached"] else f"{'-':>7}"
        lines.append(f"  {p:<18} {t} {ratio} {tol} {it}  {r['subopt']:8.1e}  "
                     + ", ".join(notes))
    return "\n".join(lines)


# ------------------------------------------------------------ verify ---

def verify(X, y, lam, name="a9a", verbose=True):
    """Check every adapter's mapping: P(w) vs a tight reference, implied lam."""
    rows = []
    for loss in LOSSES:
        ref = reference_optimum(X, y, lam, loss, name=name)
        pstar = ref["p_star"]
        if verbose:
            print(f"{loss}: P* = {pstar:.15g} (rel. bound {ref['rel_bound']:.1e}, "
                  f"{ref['method']})")
        for p in peers_for(loss):
            run_fn = PEERS[p][0]
            tol = {"snapml": 1e-8, "cyanure": 1e-12}.get(p, 1e-10)
            r = run_fn(X, y, lam, loss, tol)
            f = primal_objective(X, y, r["w"], lam, loss)
            li, res = (implied_lam(X, y, r["w"], loss) if loss != "hinge"
                       else (np.nan, np.nan))
            rows.append((loss, p, (f - pstar) / abs(pstar), li / lam, res))
            if verbose:
                print(f"  {p:<18} rel subopt {(f - pstar) / abs(pstar):9.2e}  "
                      f"implied lam / lam = {li / lam:.8f} (resid {res:.1e})  "
                      f"[{r['peer']}, {r['n_iter']} its, {r['time']:.3f}s]")
    return rows


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import datasets

    ap = argparse.ArgumentParser(description="peer solvers on our objective")
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("verify", help="check the parameter mappings")
    v.add_argument("--data", default="a9a")
    v.add_argument("--lam", type=float, default=None, help="default 1/n")
    b = sub.add_parser("bench", help="time to target for every peer")
    b.add_argument("datasets", nargs="*", default=["reuters", "news20"])
    b.add_argument("--loss", nargs="*", default=["logistic", "squared_hinge"])
    b.add_argument("--lam", type=float, default=None, help="default 1/n")
    b.add_argument("--peers", nargs="*", default=None)
    b.add_argument("--target", type=float, default=None,
                   help="default 1e-8 logistic, 1e-6 (squared) hinge")
    b.add_argument("--json", default=None, help="write all results here")
    args = ap.parse_args(argv)

    if args.cmd == "verify":
        X, y = datasets.load(args.data)
        verify(X, y, args.lam or 1.0 / X.shape[0], name=args.data)
        return
    allres = []
    for dname in args.datasets:
        X, y = datasets.load(dname)
        lam = args.lam or 1.0 / X.shape[0]
        for loss in args.loss:
            tgt = args.target or (1e-8 if loss == "logistic" else 1e-6)
            out = run_all(X, y, lam, loss, tgt, peers=args.peers, name=dname,
                          verbose=True)
            print(format_table(out), flush=True)
            allres.append(out)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(allres, fh, indent=1, default=float)


if __name__ == "__main__":
    main()
