"""``train_sdca(fit_intercept=True, penalize_intercept=False)``: an unregularised intercept,
solved exactly and certified.

The problem is ``min_{w, b} P(w, b) = (1/n) sum_i c_i phi(x_i.w + b; y_i) + (lam/2)||w||^2``;
its dual is SDCA's with the constraint ``sum_i a_i = 0``. The solver alternates:

1. SDCA on ``w`` with the intercept ``b`` fixed (the engine adds it to every score; its
   dual then carries ``h(a) + a b``), warm-started from the previous round, to a
   tolerance that tightens each round;
2. the exact intercept for that ``w``: ``b = argmin_b sum_i c_i phi(z_i + b)``, a 1-D
   convex problem (a root of its monotone derivative, found by bracketing and Brent's
   method);
3. the certificate: at that ``b`` the dual point ``a_i = -c_i phi'(z_i + b)`` sums to 0
   (the intercept's optimality condition; the rounding residue is spread over the
   coordinates with room), so ``D(a)`` is a lower bound on the joint optimum and
   ``P(w, b) - D(a)`` bounds ``P(w, b) - P*``. The run stops when it is ``<= tol D(a)``
   (so ``(P - P*) / P* <= tol``), or at the rounding floor of ``P(0)`` (the one rule,
   ``dualsolve._core.status.certifies``).

Only the smooth losses have a dual point ``-phi'`` to certify with: logistic, squared
hinge, smoothed hinge, squared and squared epsilon-insensitive. History rows are the
inner SDCA epochs (primal ``P(w, b)``; dual and gap NaN, the inner ones are not joint
bounds) except the last of each round, which holds the joint ``P``, ``D`` and gap.
"""
import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq

from .._core import losses as _losses
from .._core import status as _status
from .._monitor import MonitorView

#: losses whose derivative gives a feasible dual point (the certificate needs it)
SMOOTH_LOSSES = _losses.SMOOTH_LOSSES


def best_intercept(z, y, loss, param, weight, start=0.0):
    """``argmin_b sum_i c_i phi(z_i + b; y_i)``: the root of the nondecreasing derivative
    ``g(b) = sum_i c_i phi'(z_i + b)`` (any point of a flat stretch)."""
    c = 1.0 if weight is None else weight

    def g(b):
        return float(np.sum(c * _losses.derivative(loss, z + b, y, param)))

    lo = hi = float(start)
    glo = ghi = g(lo)
    if glo == 0.0:
        return lo
    step = 1.0
    for _ in range(200):                    # expand the bracket until g changes sign
        if glo > 0.0:
            lo -= step
            glo = g(lo)
            if glo <= 0.0:
                break
        else:
            hi += step
            ghi = g(hi)
            if ghi >= 0.0:
                break
        step *= 2.0
    else:
        raise ValueError("the intercept has no finite optimum (every row is on one side: "
                         "is y a single class?)")
    if glo == 0.0:
        return lo
    if ghi == 0.0:
        return hi
    return brentq(g, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)


def joint_certificate(X, y, loss, param, weight, lam, w, b):
    """(P(w, b), D(a), gap) with ``a = -c phi'(Xw + b)`` made to sum to 0 exactly."""
    n = y.shape[0]
    c = np.ones(n) if weight is None else weight
    z = X @ w + b
    a = -c * _losses.derivative(loss, z, y, param)
    lo, hi = _losses.dual_bounds(loss, y, param)
    lo, hi = lo * c, hi * c
    r = float(np.sum(a))
    if r != 0.0:                            # spread the residue where the domain has room
        room = np.maximum(a - lo, 0.0) if r > 0 else np.maximum(hi - a, 0.0)
        room = np.where(np.isfinite(room), room, 1.0)
        total = float(np.sum(room))
        if total > 0.0:
            a = np.clip(a - r * room / total, lo, hi)
    positive = c > 0
    primal = (float(np.sum(c * _losses.value(loss, z, y, param))) / n
              + 0.5 * lam * float(w @ w))
    conj = np.zeros(n)
    conj[positive] = c[positive] * _losses.conjugate(loss, a[positive] / c[positive],
                                                     y[positive], param)
    wa = X.T @ a / (lam * n)
    dual = -float(np.sum(conj)) / n - 0.5 * lam * float(wa @ wa)
    return primal, dual, primal - dual


class _Rounds(MonitorView):
    """The driver's monitor seen by one round's engine: epochs numbered after the
    previous rounds', the round's epoch 0 (a repeat) not recorded, dual and gap NaN (the
    fixed-intercept ones bound nothing of the joint problem)."""

    def __init__(self, mon, first):
        super().__init__(mon)
        self.first = first

    def report(self, epoch, values):
        if epoch == 0 and self.first > 0:
            return 0
        values = (values[0], np.nan, np.nan) + tuple(values[3:])
        return self.mon.report(self.first + epoch, values)


def solve_free_intercept(p, o, mon, solve, alpha, w, sampling, relaxation):
    """Find the intercept b where F'(b) = 0, F(b) = min_w P(w, b) (convex in b), with
    F'(b) = -(1/n) sum_i a_i(b) read off each fixed-b SDCA solve (the envelope theorem):
    secant steps kept inside a bracket, the solves warm-started and tightened as the joint
    certificate falls. Returns (status, n_epochs, b, gap, lower, p0, rounds), ``lower`` the
    last certified lower bound D(a) on P* (NaN before the first)."""
    X = sp.csr_matrix((p.X.data, p.X.indices, p.X.indptr), shape=p.X.shape)
    c = np.ones(p.n) if p.weight is None else p.weight
    p0 = float(np.sum(c * _losses.value(p.loss, np.zeros(p.n), p.y, p.loss_param))) / p.n
    floor = _status.floor(p0)               # the rounding floor of the stopping rule
    warm = getattr(p.warm_start, "intercept", None)
    b = float(warm) if warm is not None and np.ndim(warm) == 0 else \
        best_intercept(np.zeros(p.n), p.y, p.loss, p.loss_param, p.weight)
    check = 0 if o["check_every"] == "auto" else o["check_every"]
    epochs, inner, gap, lower, rounds, best = 0, 1e-3, np.inf, np.nan, 0, b
    points = []                             # (b, n F'(b), the tolerance it was read at)
    status = _status.MAX_EPOCHS
    while True:
        rounds += 1
        status, ran, _, _, _, _ = solve(
            p.X.data, p.X.indices, p.X.indptr, p.d, p.y, p.loss, p.loss_param, p.lam, 0.0,
            w, alpha, inner, p.max_epochs - epochs, check, o["shrinking"], sampling,
            p.seed + rounds - 1, _Rounds(mon, epochs), p.X.sqnorm, weight=p.weight,
            offset=b, focus=o["focus"], **relaxation)
        epochs += ran
        if status not in (_status.CONVERGED, _status.MAX_EPOCHS):
            break                           # callback, Ctrl-C, divergence, no memory
        # the certificate at the best intercept for this w
        best = best_intercept(X @ w, p.y, p.loss, p.loss_param, p.weight, start=b)
        primal, dual, gap = joint_certificate(X, p.y, p.loss, p.loss_param, p.weight,
                                              p.lam, w, best)
        if mon.rows:                        # the round's last row holds the joint values
            row = mon.rows[-1]
            mon.rows[-1] = row[:2] + (primal, dual, gap) + row[5:]
        lower = primal - gap
        if _status.certifies(gap, lower, p.tol, floor):
            status = _status.CONVERGED
            break
        if epochs >= p.max_epochs or (ran == 0 and inner <= 1e-16):
            status = _status.MAX_EPOCHS     # the budget, or nothing left above rounding
            break
        points.append((b, -float(np.sum(alpha)), inner))
        # a round that ran no epoch had met its tolerance already: tighten it
        # (the inner tol is relative to the inner optimum, close to the joint one)
        inner = max(1e-16, min(inner / 10.0 if ran == 0 else inner,
                               1e-3 * gap / (lower if lower > 0 else p0)))
        b = _next_intercept(points, best, inner)
    return status, epochs, best, gap, lower, p0, rounds


def _next_intercept(points, best, inner):
    """The next b: a secant step on n F'(b) (nondecreasing) from the last two rounds, kept
    inside the bracket of the rounds read at the current accuracy (an F'(b) read from a
    looser solve can have the wrong sign), bisection when it leaves it; the best intercept
    of the current w while there is no bracket and no secant."""
    if len(points) < 2:
        return best
    sure = [q for q in points if q[2] <= 10.0 * inner]
    below = [q[0] for q in sure if q[1] < 0]
    above = [q[0] for q in sure if q[1] > 0]
    lo = max(below) if below else -np.inf
    hi = min(above) if above else np.inf
    (b0, g0, _), (b1, g1, _) = points[-2], points[-1]
    if g1 == 0.0:
        return b1
    step = best if g1 == g0 else b1 - g1 * (b1 - b0) / (g1 - g0)
    if not lo < step < hi:
        step = 0.5 * (lo + hi) if np.isfinite(lo) and np.isfinite(hi) else best
    return step
