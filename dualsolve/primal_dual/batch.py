"""Batch primal-dual solvers (Wang & Xiao 2017, Algorithms 1, 2 and 6; see
docs/primal_dual.md): ``train_bpd`` (Chambolle-Pock, Alg. 1), ``train_ada_bpd`` (Alg. 2 with
the adaptation rules of Alg. 3 / Alg. 4) and ``train_df_bpd`` (dual-free BPD, Alg. 6).

All three solve, for ``X`` with ``n`` rows ``a_i`` and labels / targets ``b_i``::

    min_x  P(x) = (1/n) sum_i c_i phi(a_i.x; b_i) + (lam/2) ||x||^2 + l1 ||x||_1

(row weights ``c_i``, all 1 by default) through the saddle point
``min_x max_y (1/n) sum_i (y_i a_i.x - c_i phi*(y_i / c_i; b_i)) + g(x)``, in ERM units (the paper's batch dual ``w`` is ``y / n``). ``lam = 0`` is allowed: the
objective is then strongly convex "from the data" with modulus ``Delta / n``, where
``Delta = delta mu^2``, ``mu^2 = lambda_min(X^T X)`` and ``delta`` the strong convexity
of the loss (1 for squared, 0 nominally for logistic / smoothed hinge, whose local curvature
the adaptive solver finds). The step sizes are built from ``n lam + Delta``.

One iteration (one epoch of the contract: a full gradient) is one ``X @ x`` and one
``X.T @ y`` (scipy, O(nnz)) plus O(n + d) vector work: ``z = X x`` is kept, so the
extrapolated scores ``X xt`` cost no third product, and the primal / dual objectives at
every iteration cost O(n + d), summed pairwise (``np.add.reduce``: error O(eps log n)
instead of the O(eps n) of a running sum, so the gap of two large sums stays accurate).
Plain NumPy and scipy are enough here; the per-element loss work goes through the compiled
loss table.

Dual conventions: the dual variable here is the paper's ``y`` with ``y_i -> phi'(a_i.x*)``
at the optimum (the SDCA family's ``alpha`` is ``-y``). The dual proximal map
``prox_{s phi*}(v) = argmin_b phi*(b) + (b - v)^2 / (2 s)`` is the loss table's exact dual
coordinate step with the sign flipped: ``-dual_step(loss, b, 0, -v, 1/s)``.

Weights: read with rows ``sqrt(c_i) a_i`` and dual ``sqrt(c_i) eta_i``, ``eta_i = y_i / c_i``,
the weighted problem is the unweighted one (its conjugates still gamma-strongly convex),
and both dual steps, written in eta, are exactly the unweighted ones with the same sigma.
So the iteration keeps ``eta`` (``self.w`` below), the primal side sees ``X^T (c eta)``,
and ``L = ||diag(sqrt(c)) X||_2``; the returned dual is ``y = c eta``.
"""
import functools
import weakref

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .._core import csr as _csr
from .._core import losses as _losses
from .._core import status as _status
from .._driver import Result, Solver, certified, fit, register, threshold
from .._params import Integral, Interval, Options, Real
from .spdc import ADAPT_PARAMS, DUAL_FREE, EUCLID, initial_point

__all__ = ["train_bpd", "train_ada_bpd", "train_df_bpd", "spectral_norm"]

LOSSES = ("squared", "logistic", "smooth_hinge")
# delta: strong convexity of phi (nominal; logistic and smoothed hinge have none globally)
_DELTA = {"squared": 1.0, "logistic": 0.0, "smooth_hinge": 0.0}
HISTORY_EXTRA = ("gap_estimate", "nnz", "Delta", "theta")
_EPS = np.finfo(np.float64).eps


def _psum(a):
    """The pairwise sum of a float64 array (NumPy's reduction of a contiguous array)."""
    return float(np.add.reduce(np.ascontiguousarray(a, dtype=np.float64)))


# ---------------------------------------------------------------------------------------
# ||X||_2: exact from the Gram matrix of the smaller side, or Lanczos; cached per matrix

_DENSE_NORM_MAX = 500          # min(n, d) up to which the Gram matrix is formed densely
_LANCZOS_SAFETY = 1.0 + 1e-6   # a Ritz value is a lower bound of lambda_max: step back a hair
_NORM_CACHE = {}               # id(matrix) -> (weakref, fingerprint, (L, method))


def spectral_norm(X):
    """``||X||_2`` (largest singular value) of a sparse or dense matrix, and how it was found.

    Returns ``(L, method)``. When ``min(n, d) <= 500`` the smaller Gram matrix (``X^T X`` or
    ``X X^T``) is formed and its largest eigenvalue taken by a dense symmetric solver
    (``method="dense"``, exact to rounding). Otherwise ``scipy.sparse.linalg.eigsh``
    (ARPACK Lanczos, the engine of ``svds``) runs on the operator ``v -> X^T (X v)`` (or
    ``X (X^T v)``) from a fixed start vector, to relative tolerance 1e-10; the Ritz value
    is a lower bound, so it is raised by a factor ``1 + 1e-6`` (``method="lanczos"``).
    """
    A = X if sp.issparse(X) else sp.csr_matrix(np.asarray(X, dtype=np.float64))
    n, d = A.shape
    if A.nnz == 0 or min(n, d) == 0:
        return 0.0, "dense"
    if min(n, d) <= _DENSE_NORM_MAX:
        G = (A.T @ A) if d <= n else (A @ A.T)
        G = G.toarray() if sp.issparse(G) else np.asarray(G)
        lmax = float(np.linalg.eigvalsh(G)[-1])
        return float(np.sqrt(max(lmax, 0.0))), "dense"
    m = min(n, d)
    At = A.T                               # CSC view, no copy
    if d <= n:
        op = spla.LinearOperator((d, d), matvec=lambda v: At @ (A @ v), dtype=np.float64)
    else:
        op = spla.LinearOperator((n, n), matvec=lambda v: A @ (At @ v), dtype=np.float64)
    v0 = np.random.default_rng(20170806).standard_normal(m)
    lmax = float(spla.eigsh(op, k=1, which="LA", v0=v0, tol=1e-10, return_eigenvectors=False)[0])
    return float(np.sqrt(max(lmax, 0.0)) * _LANCZOS_SAFETY), "lanczos"


def _cached_norm(Xc, A):
    """spectral_norm of the checked matrix, remembered for the matrix object the user
    passed (a regularisation path pays for it once). The key is the object and a
    fingerprint of its arrays (addresses, nnz, sum of entries and of squared row norms),
    so an in-place change of the data is noticed."""
    src = Xc.source
    sq = float(np.sum(Xc.sqnorm)) if Xc.sqnorm is not None else float(np.sum(A.data ** 2))
    fp = (Xc.shape, int(Xc.indptr[-1]), Xc.data.ctypes.data, Xc.indices.ctypes.data,
          Xc.indptr.ctypes.data, float(np.sum(Xc.data)), sq)
    key = id(src)
    hit = _NORM_CACHE.get(key)
    if hit is not None and hit[0]() is src and hit[1] == fp:
        return hit[2][0], hit[2][1], True
    value = spectral_norm(A)
    try:
        def _drop(ref, key=key):
            entry = _NORM_CACHE.get(key)
            if entry is not None and entry[0] is ref:
                del _NORM_CACHE[key]
        ref = weakref.ref(src, _drop)
    except TypeError:                      # pragma: no cover (not weak-referenceable)
        return value[0], value[1], False
    _NORM_CACHE[key] = (ref, fp, value)
    return value[0], value[1], False


# ---------------------------------------------------------------------------------------
# the problem: data, loss, regulariser and the objectives


class _Problem:
    def __init__(self, A, b, loss, param, lam, l1, L, weight=None, threads=1):
        self.A = A
        self.At = A.T                      # CSC view: X.T @ y is one O(nnz) scatter
        # in threads (X of 2^18+ nonzeros): the two products by rows and blocks of rows
        self.rows = _csr.RowPasses(A, threads) if threads > 1 else None
        if self.rows is not None and self.rows.threads == 1:
            self.rows = None
        # and the elementwise loss terms, each entry its own (the same values)
        self.threads = 1 if self.rows is None else self.rows.threads
        self.n, self.d = A.shape
        self.b = b
        self.loss, self.param = loss, param
        self.gamma = float(_losses.strong_convexity(loss, param))   # phi* is gamma-strongly convex
        self.delta = _DELTA[loss]
        self.lam, self.l1 = lam, l1
        self.L = L
        self.nnz = int(A.nnz)
        self.w = weight                    # None, or the row weights c_i (the dual is eta)
        self.sw = None if weight is None else np.sqrt(weight)
        self.p0 = self.loss_sum(np.zeros(self.n)) / self.n

    # the weighted sums (rows of weight 0 add nothing)
    def loss_sum(self, z):
        phi = self.phi(z)
        return _psum(phi if self.w is None else self.w * phi)

    def conj_sum(self, eta):
        h = self.phi_conj(eta)
        return _psum(h if self.w is None else np.where(self.w > 0, self.w * h, 0.0))

    def Xty(self, eta):
        """X^T y with y = c eta, the weighted problem's dual."""
        y = eta if self.w is None else self.w * eta
        if self.rows is None:
            return self.At @ y
        out = np.empty(self.d)
        self.rows.tdot(np.ascontiguousarray(y, dtype=np.float64), out)
        return out

    def Xx(self, x):
        """The scores X x."""
        if self.rows is None:
            return self.A @ x
        out = np.empty(self.n)
        self.rows.dot(np.ascontiguousarray(x, dtype=np.float64), out)
        return out

    # phi and its conjugate, elementwise (the loss table; h(a) = phi*(-a))
    def phi(self, z):
        return _losses.value(self.loss, z, self.b, self.param, self.threads)

    def dphi(self, z):
        return _losses.derivative(self.loss, z, self.b, self.param, self.threads)

    def phi_conj(self, y):
        return _losses.conjugate(self.loss, -y, self.b, self.param, self.threads)

    def dual_prox(self, v, s):
        """prox_{s phi*}(v) elementwise: -dual_step(loss, b, 0, -v, 1/s)."""
        return -_losses.dual_step(self.loss, self.b, 0.0, -v, 1.0 / s, self.param,
                                  self.threads)

    def prox_g(self, v, tau):
        """prox of tau g, g = (lam/2)||.||^2 + l1 ||.||_1: S(v, tau l1) / (1 + tau lam)."""
        if self.l1 > 0.0:
            v = np.sign(v) * np.maximum(np.abs(v) - tau * self.l1, 0.0)
        if self.lam > 0.0:
            v = v / (1.0 + tau * self.lam)
        return v

    def reg(self, x):
        """g(x) = (lam/2)||x||^2 + l1 ||x||_1 (pairwise sums)."""
        r = 0.0
        if self.lam > 0.0:
            r += 0.5 * self.lam * _psum(x * x)
        if self.l1 > 0.0:
            r += self.l1 * _psum(np.abs(x))
        return r

    def primal(self, x, z):
        return self.loss_sum(z) / self.n + self.reg(x)

    def dual_parts(self, y, q):
        """(sum_i phi*(v_i), g*(-q/n)) for the dual point v actually used, with q = X^T y,
        so that D = -sum/n - g*. lam > 0: v = y. lam = 0, l1 > 0: g* is the indicator of
        ||w||_inf <= l1, so y is first scaled into feasibility by s = min(1, l1 /
        ||q/n||_inf) (the Lasso dual-gap trick; s y stays in the loss's dual domain, an
        interval holding 0) and g* = 0. lam = l1 = 0: g* is the indicator of {0}; None
        (D = -inf)."""
        n = self.n
        if self.lam > 0.0:
            w = -q / n
            if self.l1 > 0.0:
                w = np.sign(w) * np.maximum(np.abs(w) - self.l1, 0.0)
            return self.conj_sum(y), _psum(w * w) / (2.0 * self.lam)
        if self.l1 > 0.0:
            qmax = float(np.abs(q).max()) / n if q.size else 0.0
            s = 1.0 if qmax <= self.l1 else self.l1 / qmax
            return self.conj_sum(s * y), 0.0
        return None

    def dual(self, y, q):
        """D(y) with q = X^T y (see dual_parts; -inf without a dual)."""
        parts = self.dual_parts(y, q)
        if parts is None:
            return -np.inf
        return -parts[0] / self.n - parts[1]


def _measures(prob, x, z, y, q, Delta):
    """(primal, dual, gap, gap_estimate, adapt_measure) at (x, y) with z = X x, q = X^T y.

    With a dual (lam > 0 or l1 > 0) the last three are the duality gap, computed as
    ``(sum phi + sum phi*)/n + g(x) + g*`` (the two large sums combined before rounding).
    With lam = l1 = 0 the gap is +inf and the substitute is a bound on the gradient norm,
    ||grad P(x)|| <= gb = ||q||/n + (L/n) ||phi'(z) - y||  (since grad P = X^T phi'(z) / n),
    free of any further product; ``gap_estimate = n gb^2 / (2 Delta)`` bounds P(x) - P*
    whenever ``Delta <= delta mu^2`` (P is Delta/n-strongly convex), and ``gb^2`` drives
    the adaptation."""
    n = prob.n
    loss_sum = prob.loss_sum(z)
    reg = prob.reg(x)
    p = loss_sum / n + reg
    parts = prob.dual_parts(y, q)
    if parts is not None:
        conj_sum, gstar = parts
        dual = -conj_sum / n - gstar
        gap = (loss_sum + conj_sum) / n + (reg + gstar)
        return p, dual, gap, gap, gap
    r = prob.dphi(z) - y
    if prob.sw is not None:
        r = prob.sw * r          # grad P = X^T diag(sqrt c) (sqrt c phi'(z)) / n
    gb = (float(np.linalg.norm(q)) + prob.L * float(np.linalg.norm(r))) / n
    return p, -np.inf, np.inf, n * gb * gb / (2.0 * Delta), gb * gb


# ---------------------------------------------------------------------------------------
# step parameters (Wang & Xiao 2017, Theorems 1 and 3, in ERM units)


def bpd_parameters(n, L, gamma, delta, lam, Delta, step_scale=1.0):
    """(sigma, tau, theta) of BPD in ERM units (Theorem 1), with ``Delta`` for delta mu^2::

        sigma = (c/L) sqrt((n lam + Delta)/gamma),  tau = (c n/L) sqrt(gamma/(n lam + Delta))
        theta_x = (1 - Delta/((delta + 2 sigma) L^2)) / (1 + tau lam)
        theta_y = 1 / (1 + sigma gamma/2),          theta = max(theta_x, theta_y)

    ``c = step_scale`` (1: Theorem 1, tau sigma = n / L^2; the rates are those of c = 1)."""
    s = n * lam + Delta
    sigma = step_scale / L * np.sqrt(s / gamma)
    tau = step_scale * n / L * np.sqrt(gamma / s)
    theta_x = (1.0 - Delta / ((delta + 2.0 * sigma) * L * L)) / (1.0 + tau * lam)
    theta_y = 1.0 / (1.0 + sigma * gamma / 2.0)
    return sigma, tau, max(theta_x, theta_y)


def df_bpd_parameters(n, L, gamma, lam, Delta, step_scale=0.5):
    """(sigma, tau, theta) of DF-BPD in ERM units (Theorem 3)::

        tau = (c n/L) sqrt(gamma/(n lam + Delta)),  sigma = (c/L) sqrt(gamma (n lam + Delta))
        theta_x = (1 - tau sigma (Delta/n) / (4 + 2 sigma)) / (1 + tau lam)
        theta_y = 1 / (1 + sigma/2),                theta = max(theta_x, theta_y)

    ``c = step_scale``: 1/2 is the value the proof in Appendix D supports; 1 is Theorem 3
    as printed."""
    s = n * lam + Delta
    tau = step_scale * n / L * np.sqrt(gamma / s)
    sigma = step_scale / L * np.sqrt(gamma * s)
    theta_x = (1.0 - tau * sigma * (Delta / n) / (4.0 + 2.0 * sigma)) / (1.0 + tau * lam)
    theta_y = 1.0 / (1.0 + sigma / 2.0)
    return sigma, tau, max(theta_x, theta_y)


# ---------------------------------------------------------------------------------------
# the iteration


class _Adapt:
    """BPD-Adapt (Algorithms 3 and 4): every ``period`` iterations, estimate the window ratio
    of the gap and double or halve Delta.

    The ratio over the window of T iterations is ``r = rho^T`` with the per-iteration rate
    ``rho`` from a least-squares fit through the origin of ``log(G(t0+k)/G(t0))`` against
    ``k = 1..T`` (the log-linear fit the paper uses for its randomized solvers; here too,
    since the batch gap is not monotone). ``"simple"`` (Alg. 3): double Delta if
    ``r < theta^T`` (faster than Theorem 1 predicts at the current Delta), else halve it.
    ``"robust"`` (Alg. 4):
    ``r <= c_lo rho_prev`` doubles, ``r >= c_hi rho_prev`` halves, both then set
    ``rho_prev = r``; ``rho_prev`` starts at ``theta^T`` of the initial Delta. Adaptation
    pauses for a window holding a non-positive or non-finite value, or one that reached
    the rounding floor (see ``_run``); Delta never drops below
    ``1e-12 Delta0``."""

    def __init__(self, rule, period, c_lo, c_hi, factor, Delta0, theta0):
        self.rule, self.period = rule, period
        self.c_lo, self.c_hi, self.factor = c_lo, c_hi, factor
        self.floor = 1e-12 * Delta0
        self.rho = theta0 ** period
        k = np.arange(1, period + 1, dtype=np.float64)
        self.k, self.kk = k, float(k @ k)
        self.n_up = self.n_down = 0

    def __call__(self, window, Delta, theta, frozen=False):
        g = np.asarray(window, dtype=np.float64)
        if frozen or not np.all(np.isfinite(g)) or np.any(g <= 0.0):
            return Delta
        r = float(np.exp(self.period * (self.k @ np.log(g[1:] / g[0])) / self.kk))
        if self.rule == "simple":
            up = r < theta ** self.period
            down = not up
        else:
            up = r <= self.c_lo * self.rho
            down = (not up) and r >= self.c_hi * self.rho
            if up or down:
                self.rho = r
        if up:
            self.n_up += 1
            return Delta * self.factor
        if down:
            self.n_down += 1
            return max(Delta / self.factor, self.floor)
        return Delta


def _run(prob, method, Delta, step_scale, theta_fixed, adapt, x, y, v, target, max_epochs,
         mon):
    """Iterate BPD / DF-BPD from x (written in place), y and (DF-BPD) the margins v,
    reporting every iteration to mon; returns a result dict."""
    n = prob.n

    def parameters(D):
        if method == "df":
            sigma, tau, theta = df_bpd_parameters(n, prob.L, prob.gamma, prob.lam, D, step_scale)
        else:
            sigma, tau, theta = bpd_parameters(n, prob.L, prob.gamma, prob.delta, prob.lam, D,
                                               step_scale)
        return sigma, tau, theta, (theta if theta_fixed is None else theta_fixed)

    z = prob.Xx(x)
    # y(0) = phi'(X x0) unless warm-started: in dom phi* for every loss, and the dual
    # optimum if x0 is optimal; for DF-BPD, v(0) = X x0 (or a model's margins) makes v(0) a
    # subgradient of phi* at y(0) = phi'(v(0)) (Lemma 1)
    q = prob.Xty(y)
    nnz = 2 * prob.nnz
    zt = z
    sigma, tau, theta_rate, theta = parameters(Delta)

    p, dual, gap, gap_est, measure = _measures(prob, x, z, y, q, Delta)
    window, pwin = [measure], [p]
    status = _MAX_EPOCHS
    if not np.isfinite(p):
        status = _status.DIVERGED
    elif target(gap_est, p - gap_est):
        status = _status.CONVERGED
    stop = mon.step(0, (p, dual, gap, gap_est, nnz, Delta, theta))
    if stop and status == _MAX_EPOCHS:
        status = stop
    t = 0
    try:
        while status == _MAX_EPOCHS and t < max_epochs:
            # dual step on y(t) with the extrapolated scores X xt(t) = zt
            if method == "df":
                v = (v + sigma * zt) / (1.0 + sigma)
                y = prob.dphi(v)
            else:
                y = prob.dual_prox(y + sigma * zt, sigma)
            q = prob.Xty(y)
            # primal step, then the new scores and their extrapolation (no third product)
            x[:] = prob.prox_g(x - (tau / n) * q, tau)
            z_new = prob.Xx(x)
            zt = z_new + theta * (z_new - z)
            z = z_new
            nnz += 2 * prob.nnz
            t += 1

            p, dual, gap, gap_est, measure = _measures(prob, x, z, y, q, Delta)
            if not np.isfinite(p):
                status = _status.DIVERGED
            elif target(gap_est, p - gap_est):
                status = _status.CONVERGED
            stop = mon.step(t, (p, dual, gap, gap_est, nnz, Delta, theta))
            if stop and status == _MAX_EPOCHS:
                status = stop
            if adapt is not None and status == _MAX_EPOCHS:
                window.append(measure)
                pwin.append(p)
                if len(window) == adapt.period + 1:
                    # the rounding floor: P flat to a few ulps over the window, or a gap at
                    # the level of rounding; more changes of Delta could only feed on noise
                    scale = max(abs(p), prob.p0)
                    frozen = (max(pwin) - min(pwin) <= 8 * _EPS * scale
                              or gap_est <= 1e-14 * scale)
                    new = adapt(window, Delta, theta_rate, frozen)
                    window, pwin = [measure], [p]
                    if new != Delta:
                        Delta = new
                        sigma, tau, theta_rate, theta = parameters(Delta)
    except KeyboardInterrupt as exc:      # Ctrl-C outside the monitor: stop, keep x
        mon.error = exc
        status = _status.INTERRUPTED
    return dict(status=status, n_epochs=t, y=y, v=v, gap_estimate=gap_est, Delta=Delta,
                sigma=sigma, tau=tau, theta=theta)


_MAX_EPOCHS = _status.MAX_EPOCHS


# ---------------------------------------------------------------------------------------
# the engine


def _engine(p, o, mon, *, method, adaptive):
    n, d = p.n, p.d
    Xc = p.X
    data = Xc.data if Xc.data.dtype == np.float64 else Xc.data.astype(np.float64)
    A = sp.csr_matrix((data, Xc.indices, Xc.indptr), shape=(n, d), copy=False)
    lam, l1 = p.lam, o["l1"]
    step_scale = o["step_scale"]
    theta_fixed = None if o["theta"] == "formula" else (1.0 if o["theta"] == "one"
                                                       else float(o["theta"]))
    c = p.weight
    x, y, v = initial_point(p.warm_start, Xc, p.y, p.loss, p.loss_param,
                            DUAL_FREE if method == "df" else EUCLID, n, d, weight=c)
    # with weights the theory's rows are sqrt(c_i) a_i (see the module's "Weights")
    fro2 = float(np.sum(Xc.sqnorm if c is None else c * Xc.sqnorm))
    Delta = o["delta_hat"]
    if Delta is None:
        # Ada-BPD's default start ||X||_F^2 / (gamma d): an upper bound on delta mu^2, since
        # delta <= 1/gamma and mu^2 <= the mean eigenvalue of X^T X; else 0
        gamma = float(_losses.strong_convexity(p.loss, p.loss_param))
        Delta = fro2 / (gamma * d) if (adaptive and fro2 > 0.0) else 0.0
    if lam == 0.0 and Delta <= 0.0 and fro2 > 0.0:
        raise ValueError(f"lam = 0 needs delta_hat > 0 (an estimate of the strong convexity "
                         f"from data, delta * lambda_min(X^T X)); {p.solver.function_name} got "
                         f"delta_hat={Delta!r}. Use train_ada_bpd to estimate it on the fly.")
    if c is None:
        L, norm_method, cached = _cached_norm(Xc, A)
    else:
        L, norm_method = spectral_norm(sp.diags(np.sqrt(c)) @ A)
        cached = False
    prob = _Problem(A, p.y, p.loss, p.loss_param, lam, l1, L, weight=c, threads=p.n_jobs)
    # the stopping test target(gap, P - gap): status.certifies, gap <= tol * (P - gap) or
    # the rounding floor of P(0); tol = 0 runs the whole budget
    target = functools.partial(_status.certifies, tol=p.tol, floor=_status.floor(prob.p0))
    adapt = None
    Delta0 = Delta
    mon.set_coef(x)
    if L == 0.0:
        # X = 0: P(x) = mean phi(0) + g(x) is minimised at x = 0 (any x when g = 0)
        res = _trivial(prob, mon)
        x[:] = 0.0
    else:
        if adaptive:
            _, _, theta0 = (df_bpd_parameters(n, L, prob.gamma, lam, Delta, step_scale)
                            if method == "df" else
                            bpd_parameters(n, L, prob.gamma, prob.delta, lam, Delta, step_scale))
            adapt = _Adapt(o["rule"], o["period"], o["c_lo"], o["c_hi"], o["factor"], Delta,
                           theta0)
        res = _run(prob, method, Delta, step_scale, theta_fixed, adapt, x, y, v, target,
                   p.max_epochs, mon)
    info = dict(p0=prob.p0, delta_hat=Delta0, Delta=res["Delta"], L=L,
                theta="formula" if theta_fixed is None else theta_fixed,
                norm_method=norm_method, norm_cached=cached, gamma=prob.gamma,
                delta=prob.delta, sigma=float(res["sigma"]), tau=float(res["tau"]),
                theta_final=float(res["theta"]), nnz=prob.nnz)
    if adapt is not None:
        info.update(n_increase=adapt.n_up, n_decrease=adapt.n_down)
    return Result(res["status"], res["n_epochs"], coef=x,
                  dual=res["y"] if c is None else c * res["y"],
                  measure=res["gap_estimate"], info=info,
                  threshold=threshold((mon.rows[-1][2] if mon.rows else prob.p0)
                                      - res["gap_estimate"], p.tol, prob.p0),
                  extra={"margins": res["v"]} if res.get("v") is not None else {})


def _trivial(prob, mon):
    x = np.zeros(prob.d)
    z = np.zeros(prob.n)
    y = prob.dphi(z)
    q = np.zeros(prob.d)
    p, dual, gap, _, _ = _measures(prob, x, z, y, q, 1.0)
    est = 0.0 if not np.isfinite(gap) else gap
    mon.step(0, (p, dual, gap, est, 0.0, 0.0, 0.0))
    return dict(status=_status.CONVERGED, n_epochs=0, y=y, gap_estimate=est, Delta=0.0,
                sigma=0.0, tau=0.0, theta=0.0)


# ---------------------------------------------------------------------------------------
# public API

_OBJECTIVE_DOC = """
    Solves, with ``n`` rows ``a_i`` of ``X`` and ``x`` of length ``n_features``::

        min_x  P(x) = (1/n) sum_i c_i phi(a_i.x; y_i) + (lam/2) ||x||^2 + l1 ||x||_1

    (``c_i = 1`` unless ``sample_weight`` / ``class_weight`` say otherwise) with ``lam >= 0`` (``lam = 0`` is allowed: then P is strongly convex "from the data"
    with modulus ``delta mu^2 / n``, ``mu^2 = lambda_min(X^T X)``), through the saddle point
    ``min_x max_v (1/n) sum_i (v_i a_i.x - c_i phi*(v_i / c_i; y_i)) + g(x)``. Losses, with
    score ``s``:

    ``"squared"``       (s - y)^2 / 2, y real                  (gamma = 1, delta = 1)
    ``"logistic"``      log(1 + exp(-y s)), y in {-1, +1}      (gamma = 4, delta = 0)
    ``"smooth_hinge"``  1 - ys - g/2 if ys < 1 - g; (1 - ys)^2/(2g) if ys < 1; else 0,
                        ``g = smoothing`` (default 0.5)         (gamma = g, delta = 0)

    (``phi`` is ``1/gamma``-smooth and ``delta``-strongly convex.) One iteration is one
    ``X @ x`` and one ``X.T @ v`` plus O(n + n_features) work; ``||X||_2`` is computed once
    (see :func:`spectral_norm`) and cached for the matrix object.

    Weights: ``sample_weight`` (n reals >= 0; an integer weight equals repeating the row at
    the same ``C``, a weight of 0 removes the row, its ``v_i`` is 0) times ``class_weight``
    (a dict label -> weight >= 0, or ``"balanced"``: ``n / (k n_c)``; classification
    only) give ``c_i``. The iteration then runs on ``v_i / c_i`` (the unweighted dual
    steps) with ``L = ||diag(sqrt(c)) X||_2`` (computed for each call, not cached).
"""

_COMMON_PARAMS_DOC = """
    X : sparse matrix/array (n, n_features)
        CSR is used without a copy (float32 data is upcast once); dense and other formats
        are converted once.
    y : array (n,)
        Reals for ``loss="squared"``; two distinct values for the classification losses (the
        larger is the positive class).
    loss : {"squared", "logistic", "smooth_hinge"}
    lam : float >= 0, optional
        L2 strength; default ``1/n``. Give ``lam`` or ``C``, not both.
    C : float > 0, optional
        liblinear's cost: ``lam = 1 / (C n)``.
    l1 : float >= 0
        L1 strength (elastic net with ``lam > 0``, Lasso-type with ``lam = 0``).
    smoothing : float > 0, optional
        Width of the smoothed hinge (``loss="smooth_hinge"`` only; default 0.5).
    tol : float >= 0
        Stop when the duality gap is ``<= tol * D`` (see "Stopping and the dual" above;
        ``stop_reason="converged"``). ``tol = 0`` runs the whole budget.
    max_epochs : int >= 0
        Iteration budget (one iteration, one full gradient, is one epoch and one
        ``history`` row); ending here warns (ConvergenceWarning) with the gap reached."""

_STOP_DOC = """
    Stopping and the dual. With ``lam > 0`` the dual ``D(v) = -(1/n) sum_i phi*(v_i) -
    g*(-X^T v / n)`` is exact and ``P(x) - D(v)`` is a certificate (``>= P(x) - P*``). With
    ``lam = 0`` and ``l1 > 0``, ``g*`` is the indicator of ``||w||_inf <= l1``: the reported
    dual is ``D(s v)`` at the feasible rescaling ``s = min(1, l1 / ||X^T v / n||_inf)`` (the
    Lasso dual-gap trick), again a certificate. With ``lam = l1 = 0`` the dual is ``-inf``
    and ``gap = +inf``; the solver then stops on ``B = gap_estimate = n gb^2 / (2 Delta) <=
    tol * (P(x) - B)``, where ``gb = ||X^T v||/n + (||X||_2/n) ||phi'(X x) - v||`` bounds
    ``||grad P(x)||``; this bounds ``P(x) - P*`` whenever ``Delta <= delta mu^2`` (it is an
    estimate when ``Delta`` comes from the adaptation). Every certificate stops the run
    by the package's one rule (docs/api.md): ``gap <= tol * (P - gap)``, so the relative
    suboptimality is at most tol, or the gap at the rounding floor (64 ulps of ``P(0)``).
"""

_RETURNS_DOC = """
    Returns
    -------
    Model
        ``coef`` = x; ``dual`` = the ERM dual v (``v_i -> phi'(a_i.x*)``; the SDCA family's
        ``alpha`` is ``-v``); ``n_epochs`` = iterations; ``stop_reason``; ``params`` (lam,
        l1, delta_hat (the start), Delta (final), L = ||X||_2 and how it was found, sigma,
        tau, theta_final, p0, ...); ``history``,
        one row per iteration t (row 0 is the starting point): ``epoch`` = t, ``time``,
        ``primal`` = P(x(t)), ``dual`` = D(v(t)), ``gap``, ``gap_estimate`` (the quantity
        the solver stops on: the gap, or the bound above when there is no dual), ``nnz``
        (nonzeros of X read so far: 2 nnz(X) per iteration, and 2 nnz(X) for the start;
        ``nnz / X.nnz / 2`` counts passes of two products), ``Delta`` (the estimate of
        delta mu^2 used by the iteration that produced the row) and ``theta``. DF-BPD
        models also keep the margins v (``v_i -> a_i.x*``) in ``extra["margins"]``.
"""


def train_bpd(X, y, *, loss="squared", lam=None, C=None, tol=1e-6, max_epochs=5000, seed=0,
              verbose=0, callback=None, warm_start=None, n_jobs=1, smoothing=None, l1=0.0,
              delta_hat=None, step_scale=1.0, theta="formula", sample_weight=None,
              class_weight=None):
    """Batch primal-dual (Chambolle-Pock) method, Wang & Xiao 2017, Algorithm 1.
    {objective}
    Iteration (ERM units, ``z = X x`` kept, ``zt = X xt``)::

        v  <- prox_{{sigma phi*}}(v + sigma zt)                 elementwise
        x+ <- prox_{{tau g}}(x - (tau/n) X^T v)
        zt <- X x+ + theta (X x+ - X x)

    with Theorem 1's parameters in ERM units, ``Delta = delta_hat``::

        sigma = (c/L) sqrt((n lam + Delta)/gamma),   tau = (c n/L) sqrt(gamma/(n lam + Delta))
        theta = max((1 - Delta/((delta + 2 sigma) L^2)) / (1 + tau lam), 1/(1 + sigma gamma/2))

    ``delta_hat = None`` (0) is plain Chambolle-Pock on ``lam``; the true
    ``delta * lambda_min(X^T X)`` gives "Opt-BPD", which exploits the strong convexity
    from data. ``lam = 0`` requires ``delta_hat > 0``.
{stop}
    Parameters
    ----------{common}
    delta_hat : float >= 0, optional
        Delta, the estimate of ``delta * lambda_min(X^T X)`` the steps are built from.
    step_scale : float in (0, 1]
        Scale c of tau and sigma relative to the theory's (``tau sigma = c^2 n / L^2``); 1
        is Theorem 1. The steps themselves scale with the data through ``L = ||X||_2``.
    theta : "formula", "one" or float in [0, 1]
        Extrapolation: Theorem 1's theta, or a fixed value ("one" = 1, which the paper
        allows with Alg. 4). The adaptive rule's predicted rate always uses the formula.
    seed : int or None
        Accepted for a uniform API; the batch solvers are deterministic.
    verbose : int
        1 prints one line per iteration.
    callback : callable, optional
        ``callback(info)`` after every iteration with a dict (epoch, time, primal, dual,
        gap, gap_estimate, nnz, Delta, theta, coef); return True to stop
        (``stop_reason="callback"``).
    warm_start : Model, array (n_features,) or tuple (coef, dual), optional
        Coefficients to start from; the dual starts at the model's (or the tuple's) dual
        (it must lie in the domain of phi*), else at ``phi'(X x0)``. DF-BPD starts from the
        margins of a dual-free model (``extra["margins"]``), else ``X x0``.
    n_jobs : int or None
        Threads (default 1, -1 every core; ``docs/api.md``, "Threads"): one-vs-rest
        classes run side by side, the same model as with ``n_jobs=1``, bit for bit. On
        one problem (X of 2^18 nonzeros or more) an iteration's two products run in
        ``n_jobs`` threads (``X @ x`` by rows, ``X.T @ v`` in blocks of rows, each block
        summing into its own copy of a vector of n_features), and so do the rows' loss
        terms (the dual prox, each row its own), the rest in NumPy; the same ``n_jobs``
        gives the same model bit for bit.
    sample_weight, class_weight
        Row weights ``c_i`` (see below).
{returns}"""
    return fit(BPD, locals())


def train_ada_bpd(X, y, *, loss="squared", lam=None, C=None, tol=1e-6, max_epochs=5000,
                  seed=0, verbose=0, callback=None, warm_start=None, n_jobs=1, smoothing=None,
                  l1=0.0,
                  delta_hat=None, rule="simple", period=10, c_lo=0.95, c_hi=1.5, factor=2.0,
                  step_scale=1.0, theta="formula", sample_weight=None, class_weight=None):
    """Adaptive batch primal-dual method, Wang & Xiao 2017, Algorithm 2 with BPD-Adapt
    (Algorithms 3 and 4).
    {objective}
    BPD (see :func:`train_bpd`) whose ``Delta`` (the estimate of the unknown
    ``delta * lambda_min(X^T X)``) is re-tuned every ``period`` iterations from the observed
    decrease of the duality gap: the window ratio ``r`` is ``rho^period``, ``rho`` fitted by
    least squares through the origin to ``log(G(t0+k) / G(t0))``, k = 1..period.

    ``rule="simple"`` (Alg. 3, the default: in our trials it came closest to Opt-BPD):
    ``Delta *= factor`` if ``r < theta^period`` (faster than Theorem 1 predicts), else
    ``Delta /= factor``. ``rule="robust"`` (Alg. 4): ``Delta *= factor`` if
    ``r <= c_lo rho_prev``, ``Delta /= factor`` if ``r >= c_hi rho_prev`` (then
    ``rho_prev = r``), else unchanged; ``rho_prev`` starts at ``theta^period``. Then sigma,
    tau and theta are recomputed (the extrapolation already formed keeps the old theta, as
    in the paper). Adaptation pauses on windows that touch the rounding floor, and
    ``Delta >= 1e-12 Delta0``. With ``lam = l1 = 0`` the gap is infinite and the rule runs
    on the squared gradient bound ``gb^2`` (below), which decays at the same rate.
{stop}
    Parameters
    ----------{common}
    delta_hat : float > 0, optional
        Initial Delta; default ``||X||_F^2 / (gamma n_features)``, an upper bound on
        ``delta mu^2`` (``delta <= 1/gamma`` and ``mu^2`` is at most the mean eigenvalue of
        ``X^T X``), from which the rule comes down.
    rule : {{"simple", "robust"}}
    period : int >= 1
        T, iterations between adaptations (paper: 10).
    c_lo, c_hi : floats, 0 < c_lo < 1 < c_hi
        Thresholds of the robust rule (paper: 0.95, 1.5).
    factor : float > 1
        Multiplicative change of Delta (paper: 2, i.e. sqrt(2) on mu).
    step_scale, theta, seed, verbose, callback, warm_start, sample_weight, class_weight
        As in :func:`train_bpd`.
{returns}"""
    return fit(ADA_BPD, locals())


def train_df_bpd(X, y, *, loss="logistic", lam=None, C=None, tol=1e-6, max_epochs=5000,
                 seed=0, verbose=0, callback=None, warm_start=None, n_jobs=1, smoothing=None,
                 l1=0.0,
                 delta_hat=None, step_scale=0.5, theta="formula", sample_weight=None,
                 class_weight=None):
    """Dual-free batch primal-dual method, Wang & Xiao 2017, Algorithm 6.
    {objective}
    The dual step uses the Bregman divergence of ``phi*`` instead of the Euclidean
    distance, so it needs only ``phi'`` (no dual proximal map; convenient for logistic)::

        u  <- (u + sigma zt) / (1 + sigma);   v = phi'(u)          elementwise, u(0) = X x0
        x+ <- prox_{{tau g}}(x - (tau/n) X^T v);   zt <- X x+ + theta (X x+ - X x)

    with Theorem 3's parameters in ERM units, ``Delta = delta_hat``::

        tau = (c n/L) sqrt(gamma/(n lam + Delta)),   sigma = (c/L) sqrt(gamma (n lam + Delta))
        theta = max((1 - tau sigma (Delta/n)/(4 + 2 sigma)) / (1 + tau lam), 1/(1 + sigma/2))

    ``c = step_scale``, 1/2 by default (the value the proof in the paper's Appendix D
    supports; 1 is Theorem 3 as printed). ``lam = 0`` requires ``delta_hat > 0``.
{stop}
    Parameters
    ----------{common}
    delta_hat : float >= 0, optional
        Delta, the estimate of ``delta * lambda_min(X^T X)`` the steps are built from.
    step_scale : float in (0, 1]
        c above.
    theta, seed, verbose, callback, warm_start, sample_weight, class_weight
        As in :func:`train_bpd`.
{returns}"""
    return fit(DF_BPD, locals())


for _f in (train_bpd, train_ada_bpd, train_df_bpd):
    _f.__doc__ = _f.__doc__.format(objective=_OBJECTIVE_DOC, stop=_STOP_DOC,
                                   common=_COMMON_PARAMS_DOC, returns=_RETURNS_DOC)
del _f


# ---------------------------------------------------------------------------------------
# the descriptions

_FIXED = dict(
    l1=[Interval(Real, 0, None, closed="left")],
    delta_hat=[None, Interval(Real, 0, None, closed="left")],
    step_scale=[Interval(Real, 0, 1, closed="right")],
    theta=[Options("formula", "one"), Interval(Real, 0, 1, closed="both")],
)
_ADAPT = dict(_FIXED, **ADAPT_PARAMS)
CERTIFICATE = ("duality gap " + certified("P(x) - D(y)", "D(y)", "P(0)") + " (lam = 0, l1 > 0: "
               "the rescaled-dual gap, likewise; lam = l1 = 0: the bound B = n gb^2 / "
               "(2 Delta) on P - P* from the gradient norm gb, B <= tol * (P(x) - B))")
_HINT = ("lower step_scale or delta_hat (the steps assume that much strong convexity "
         "from the data)")


def _describe(name, summary, method, adaptive):
    return register(Solver(
        name=name, family="primal_dual", summary=summary, losses=LOSSES,
        params=_ADAPT if adaptive else _FIXED, history=HISTORY_EXTRA,
        certificate=CERTIFICATE,
        engine=functools.partial(_engine, method=method, adaptive=adaptive),
        diverge_hint=_HINT, lam_zero=True, weights=True))


BPD = _describe("bpd", "batch primal-dual (Chambolle-Pock) with Wang & Xiao's parameters",
                "bpd", False)
ADA_BPD = _describe("ada_bpd", "batch primal-dual with the strong convexity from data "
                    "estimated on the fly (Wang & Xiao)", "bpd", True)
DF_BPD = _describe("df_bpd", "dual-free batch primal-dual: a Bregman dual step that needs "
                   "only phi' (Wang & Xiao)", "df", False)
