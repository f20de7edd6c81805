"""Independent NumPy oracles for the kernel-mixup family (MixupSDCA: Obi, Saito, Sasaki &
Kato, 2025; equation, algorithm and section numbers below are that paper's).

Nothing here uses dualsolve's compiled code: the losses, conjugates and exact coordinate
steps (closed forms derived for the package, listed in docs/mixup.md) are written again in
plain Python/NumPy, with the package's conventions (see ``dualsolve._core.losses``):

    phi(s; y) = c1 phi0(s) + c2 phi0(-s),  c1 = (1+y)/2, c2 = (1-y)/2     (classification)
    logistic       phi0(s) = log(1 + e^-s)                       gamma = 4
    squared_hinge  phi0(s) = max(0, 1-s)^2 / (2 p), p = 1/2      gamma = p
    smooth_hinge   phi0 of width p (default 1/2)                 gamma = p
    hinge          phi0(s) = max(0, 1-s)                         gamma = 0 (exact steps only)
    squared        phi(s; y) = (s - y)^2 / 2                     gamma = 1
    h(a; y) = phi*(-a; y) = sup_s (-a s - phi(s; y))

(The mixup loss (eq. 2) of phi0(s) = (1-s)^2/2 is ``((s-y)^2 + 1 - y^2)/2``: it differs from
our squared loss by a constant, so
primal values differ by ``mean (1-y^2)/2`` and iterates do not, except in Algorithm 2, whose
level set L_i is taken with our phi; see :func:`level_set_ends`.)

Choices where the paper leaves one open, matching dualsolve.train_mixup_sdca: the decomposed
coordinates are listed in the order of j (all (+) coordinates, then all (-) ones; eq. 24);
after each epoch the scores are recomputed from scratch; the tie a = alpha_diamond of
Algorithm 2 goes to case (ii) (the text; immaterial); b_u, b_l are exact to the last bit.

Contents
--------
losses        phi, dphi, conj (scalar, ``math``), their ``*_vec`` forms, ``conj_numeric``
              (sup form by bisection), ``conj_infconv`` (the inf-convolution form, eq. 6),
              ``exact_step`` (closed forms; safeguarded Newton for logistic)
objectives    ``kernel_objectives`` (R, D0, gap for dual variables on a dense K)
twin          ``sdca_twin``: slow MixupSDCA on a dense K for method naive / approx / decomp /
              exact, driven by an explicit row order per epoch
references    ``lbfgs_kernel`` (L-BFGS on the primal), ``hinge_qp_kernel`` (Clarabel),
              ``weighted_logreg`` (soft-label BCE as weighted logistic regression, scikit-learn)
data          ``magic_problem``, ``heart_problem`` (small subsets of bundled real data),
              ``mixup_numpy`` (input-space mixup), ``rbf_kernel``, ``poly_kernel``
"""
import math
from types import SimpleNamespace

import numpy as np
import scipy.optimize as so
import scipy.sparse as sp

LOSSES = ("logistic", "squared_hinge", "smooth_hinge", "hinge", "squared")
DEFAULT_PARAM = {"squared_hinge": 0.5, "smooth_hinge": 0.5}
SNAP = 1e-12          # |y| >= 1 - 1e-12 is +-1 (docs/mixup.md)


def default_param(loss, param=None):
    if loss not in LOSSES:
        raise ValueError(loss)
    return DEFAULT_PARAM.get(loss, 0.0) if param is None else float(param)


def gamma_of(loss, param=None):
    """Strong convexity of h (the SDCA step constant)."""
    p = default_param(loss, param)
    return {"logistic": 4.0, "squared": 1.0, "hinge": 0.0}.get(loss, p)


def snap_labels(y):
    y = np.asarray(y, dtype=np.float64)
    return np.where(np.abs(y) >= 1.0 - SNAP, np.sign(y), y)


# ---------------------------------------------------------------------------------------
# scalar losses


def _softplus(x):
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


def _sigmoid(x):
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _xlogx(x):
    return x * math.log(x) if x > 0 else 0.0


def _sh0(s, g):
    if s >= 1.0:
        return 0.0
    if s < 1.0 - g:
        return 1.0 - s - 0.5 * g
    return (1.0 - s) ** 2 / (2.0 * g)


def _sh0_d(s, g):
    if s >= 1.0:
        return 0.0
    if s < 1.0 - g:
        return -1.0
    return (s - 1.0) / g


def phi(loss, s, y, param=None):
    """phi(s; y)."""
    p = default_param(loss, param)
    if loss == "squared":
        return 0.5 * (s - y) ** 2
    c1, c2 = 0.5 * (1.0 + y), 0.5 * (1.0 - y)
    t = 0.0
    if loss == "logistic":
        if c1:
            t += c1 * _softplus(-s)
        if c2:
            t += c2 * _softplus(s)
    elif loss == "squared_hinge":
        if c1 and s < 1.0:
            t += c1 * (1.0 - s) ** 2
        if c2 and s > -1.0:
            t += c2 * (1.0 + s) ** 2
        t /= 2.0 * p
    elif loss == "smooth_hinge":
        if c1:
            t += c1 * _sh0(s, p)
        if c2:
            t += c2 * _sh0(-s, p)
    elif loss == "hinge":
        if c1 and s < 1.0:
            t += c1 * (1.0 - s)
        if c2 and s > -1.0:
            t += c2 * (1.0 + s)
    else:
        raise ValueError(loss)
    return t


def dphi(loss, s, y, param=None):
    """d phi / ds (hinge: the subgradient -c1 [s < 1] + c2 [s > -1])."""
    p = default_param(loss, param)
    if loss == "squared":
        return s - y
    c1, c2 = 0.5 * (1.0 + y), 0.5 * (1.0 - y)
    if loss == "logistic":
        return c2 * _sigmoid(s) - c1 * _sigmoid(-s)
    if loss == "squared_hinge":
        t = 0.0
        if s < 1.0:
            t -= c1 * (1.0 - s)
        if s > -1.0:
            t += c2 * (1.0 + s)
        return t / p
    if loss == "smooth_hinge":
        return c1 * _sh0_d(s, p) - c2 * _sh0_d(-s, p)
    if loss == "hinge":
        return (-c1 if s < 1.0 else 0.0) + (c2 if s > -1.0 else 0.0)
    raise ValueError(loss)


def d2phi(loss, s, y, param=None):
    """Second derivative (a.e.; 0 for hinge)."""
    p = default_param(loss, param)
    if loss == "squared":
        return 1.0
    c1, c2 = 0.5 * (1.0 + y), 0.5 * (1.0 - y)
    if loss == "logistic":
        return _sigmoid(s) * _sigmoid(-s)
    if loss == "squared_hinge":
        return (c1 * (s < 1.0) + c2 * (s > -1.0)) / p
    if loss == "smooth_hinge":
        return (c1 * (1.0 - p <= s < 1.0) + c2 * (1.0 - p <= -s < 1.0)) / p
    return 0.0


def dual_domain(loss, y, param=None):
    """[lo, hi] of a -> h(a; y)."""
    if loss == "squared":
        return -math.inf, math.inf
    c1, c2 = 0.5 * (1.0 + y), 0.5 * (1.0 - y)
    if loss == "squared_hinge":
        return (0.0 if y >= 1.0 else -math.inf), (0.0 if y <= -1.0 else math.inf)
    return -c2, c1


def conj(loss, a, y, param=None):
    """h(a; y) = phi*(-a; y) in closed form (docs/mixup.md); +inf outside the domain."""
    p = default_param(loss, param)
    if loss == "squared":
        return -a * y + 0.5 * a * a
    c1, c2 = 0.5 * (1.0 + y), 0.5 * (1.0 - y)
    lo, hi = dual_domain(loss, y, p)
    if a < lo or a > hi:
        return math.inf
    if loss == "logistic":
        return _xlogx(a + c2) + _xlogx(c1 - a)
    if loss == "hinge":
        return abs(a - y) - 1.0
    if loss == "smooth_hinge":
        if y >= 1.0:
            return -a + 0.5 * p * a * a
        if y <= -1.0:
            return a + 0.5 * p * a * a
        # the clipping form, valid for every smoothing
        u = -2.0 * c1 * c2 / p - c1 * a
        u = min(max(u, max(-c1, -c2 - a)), min(0.0, -a))
        return 2.0 * u + a + 0.5 * p * (u * u / c1 + (a + u) ** 2 / c2)
    if loss == "squared_hinge":
        if y >= 1.0:
            return -a + 0.5 * p * a * a
        if y <= -1.0:
            return a + 0.5 * p * a * a
        if a > (1.0 + y) / p:
            return -a + p * a * a / (1.0 + y)
        if a < -(1.0 - y) / p:
            return a + p * a * a / (1.0 - y)
        return -a * y + 0.5 * p * a * a - (1.0 - y * y) / (2.0 * p)
    raise ValueError(loss)


def conj_numeric(loss, a, y, param=None):
    """h(a; y) by the sup form: solve -phi'(zeta) = a (decreasing in zeta) by bisection to
    machine precision, then h = -a zeta - phi(zeta). For a in the interior of the domain."""
    lo, hi = -1.0, 1.0
    while -dphi(loss, lo, y, param) < a:
        lo *= 2.0
        if lo < -1e300:
            raise ValueError("a is outside the dual domain")
    while -dphi(loss, hi, y, param) > a:
        hi *= 2.0
        if hi > 1e300:
            raise ValueError("a is outside the dual domain")
    while True:
        m = 0.5 * (lo + hi)
        if m <= lo or m >= hi:
            break
        if -dphi(loss, m, y, param) > a:
            lo = m
        else:
            hi = m
    return -a * m - phi(loss, m, y, param)


def conj_infconv(loss, a, y, param=None):
    """h(a; y) for a soft label by the infimal convolution of eq. 6, minimised numerically:

        h(a) = inf_u  c1 h0(-u/c1) + c2 h0(-(a+u)/c2),    h0 = h(.; +1),

    (eq. 6's (1+y)/2 phi0*(2u/(1+y)) with phi0*(b) = h0(-b)). For the squared loss our phi is
    the mixup loss of phi0(s) = (1-s)^2/2 minus (1-y^2)/2, so h is its conjugate plus
    (1-y^2)/2."""
    if not -1.0 < y < 1.0:
        raise ValueError("the infimal convolution form is for |y| < 1")
    c1, c2 = 0.5 * (1.0 + y), 0.5 * (1.0 - y)
    if loss == "squared":
        # phi0(s) = (1-s)^2/2 on all of R: h0(b) = -b + b^2/2 on R
        h0 = lambda b: -b + 0.5 * b * b
        ulo, uhi = -60.0, 60.0
    else:
        h0 = lambda b: conj(loss, b, 1.0, param)
        blo, bhi = dual_domain(loss, 1.0, param)
        bhi = min(bhi, 60.0)
        # -u/c1 and -(a+u)/c2 in [blo, bhi]
        ulo = max(-c1 * bhi, -c2 * bhi - a)
        uhi = min(-c1 * blo, -c2 * blo - a)
    f = lambda u: c1 * h0(-u / c1) + c2 * h0(-(a + u) / c2)
    r = so.minimize_scalar(f, bounds=(ulo, uhi), method="bounded",
                           options=dict(xatol=1e-13, maxiter=5000))
    val = min(r.fun, f(ulo), f(uhi))
    if loss == "squared":
        val += 0.5 * (1.0 - y * y)
    return val


def _vec(fn):
    def wrapped(loss, x, y, param=None):
        x, y = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))
        out = np.array([fn(loss, float(a), float(b), param) for a, b in zip(x.ravel(), y.ravel())])
        return out.reshape(x.shape)
    wrapped.__name__ = fn.__name__ + "_vec"
    wrapped.__doc__ = f"{fn.__name__} elementwise (broadcasting)."
    return wrapped


phi_vec = _vec(phi)
dphi_vec = _vec(dphi)
d2phi_vec = _vec(d2phi)
conj_vec = _vec(conj)


def _np_losses(loss, z, y, param=None):
    """(phi, phi', phi'') as NumPy arrays for the smooth losses (the L-BFGS objective; the
    scalar functions above are the definitions and a test checks these against them)."""
    p = default_param(loss, param)
    if loss == "squared":
        return 0.5 * (z - y) ** 2, z - y, np.ones_like(z)
    c1, c2 = 0.5 * (1.0 + y), 0.5 * (1.0 - y)
    if loss == "logistic":
        sp_m, sp_p = np.logaddexp(0.0, -z), np.logaddexp(0.0, z)
        s_p, s_m = np.exp(-sp_m), np.exp(-sp_p)          # sigmoid(z), sigmoid(-z)
        v = np.where(c1 > 0, c1 * sp_m, 0.0) + np.where(c2 > 0, c2 * sp_p, 0.0)
        return v, c2 * s_p - c1 * s_m, s_p * s_m
    if loss == "squared_hinge":
        lo, hi = np.maximum(0.0, 1.0 - z), np.maximum(0.0, 1.0 + z)
        return ((c1 * lo ** 2 + c2 * hi ** 2) / (2 * p), (c2 * hi - c1 * lo) / p,
                (c1 * (z < 1) + c2 * (z > -1)) / p)
    if loss == "smooth_hinge":
        def parts(s):
            v = np.where(s >= 1, 0.0, np.where(s < 1 - p, 1 - s - p / 2, (1 - s) ** 2 / (2 * p)))
            d = np.where(s >= 1, 0.0, np.where(s < 1 - p, -1.0, (s - 1) / p))
            h = np.where((s >= 1 - p) & (s < 1), 1.0 / p, 0.0)
            return v, d, h
        v1, d1, h1 = parts(z)
        v2, d2, h2 = parts(-z)
        return c1 * v1 + c2 * v2, c1 * d1 - c2 * d2, c1 * h1 + c2 * h2
    if loss == "hinge":
        lo, hi = np.maximum(0.0, 1.0 - z), np.maximum(0.0, 1.0 + z)
        return c1 * lo + c2 * hi, -c1 * (z < 1) + c2 * (z > -1), np.zeros_like(z)
    raise ValueError(loss)


def alpha_diamond(loss, y, param=None):
    """-phi'(0; y): the minimiser of h."""
    return -dphi(loss, 0.0, y, param)


# ---------------------------------------------------------------------------------------
# exact coordinate step (not in the paper; docs/mixup.md)


def _logistic_exact(y, z, a0, A):
    c1, c2 = 0.5 * (1.0 + y), 0.5 * (1.0 - y)
    if A == 0.0:
        return c1 * _sigmoid(-z) - c2 * _sigmoid(z)
    # g(t) = t + z + A (a(t) - a0), a(t) = c1 sig(t) - c2 sig(-t) = p - c2, increasing
    lo, hi = -z - A * (c1 - a0), -z + A * (a0 + c2)
    p0 = a0 + c2
    t = math.log(p0 / (c1 - a0)) if 0.0 < p0 < 1.0 and c1 - a0 > 0 else -z
    t = min(max(t, lo), hi)
    for _ in range(200):
        s, sm = _sigmoid(t), _sigmoid(-t)
        g = t + z + A * (c1 * s - c2 * sm - a0)
        if g > 0:
            hi = t
        elif g < 0:
            lo = t
        else:
            break
        tn = t - g / (1.0 + A * s * sm)
        if not lo < tn < hi:
            tn = 0.5 * (lo + hi)
        if tn == t or hi - lo <= 4e-16 * max(1.0, abs(t)):
            t = tn
            break
        t = tn
    return c1 * _sigmoid(t) - c2 * _sigmoid(-t)


def exact_step(loss, y, z, a0, A, param=None):
    """argmin_a h(a; y) + z (a - a0) + (A/2)(a - a0)^2 over dom h."""
    p = default_param(loss, param)
    c1, c2 = 0.5 * (1.0 + y), 0.5 * (1.0 - y)
    b = A * a0 - z
    if loss == "squared":
        return (y + b) / (1.0 + A)
    if loss == "logistic":
        return _logistic_exact(y, z, a0, A)
    if loss == "squared_hinge":
        if y >= 1.0:
            return max(0.0, (1.0 + b) / (A + p))
        if y <= -1.0:
            return min(0.0, (-1.0 + b) / (A + p))
        aM = (y + b) / (A + p)
        if aM > 2.0 * c1 / p:
            return (1.0 + b) / (A + p / c1)
        if aM < -2.0 * c2 / p:
            return (-1.0 + b) / (A + p / c2)
        return aM
    if loss == "smooth_hinge":
        if y >= 1.0:
            return min(max((1.0 + b) / (A + p), 0.0), 1.0)
        if y <= -1.0:
            return min(max((-1.0 + b) / (A + p), -1.0), 0.0)
        if p > 1.0:
            raise NotImplementedError("closed form needs smoothing <= 1")
        dL = -1.0 + p + z + A * (y - a0)
        dR = 1.0 - p + z + A * (y - a0)
        if dL > 0.0:
            return min(max((1.0 + b - p * c2 / c1) / (A + p / c1), -c2), y)
        if dR < 0.0:
            return min(max((-1.0 + b + p * c1 / c2) / (A + p / c2), y), c1)
        return y
    if loss == "hinge":
        if A == 0.0:
            return c1 if z < -1.0 else (-c2 if z > 1.0 else y)
        cc = a0 - z / A
        r = max(abs(cc - y) - 1.0 / A, 0.0)
        return min(max(y + r if cc > y else y - r, -c2), c1)
    raise ValueError(loss)


# ---------------------------------------------------------------------------------------
# objectives on a dense kernel matrix


def kernel_objectives(K, y, lam, loss, alpha, param=None):
    """(R[f], D0(alpha), gap, z) for f = sum_i alpha_i k(x_i, .)/(lam n) (eqs. 3-5)."""
    n = len(y)
    Ka = K @ alpha
    z = Ka / (lam * n)
    norm2 = float(alpha @ Ka) / (lam * n) ** 2
    primal = 0.5 * lam * norm2 + float(np.mean(phi_vec(loss, z, y, param)))
    dual = -0.5 * lam * norm2 - float(np.mean(conj_vec(loss, alpha, y, param)))
    return primal, dual, primal - dual, z


# ---------------------------------------------------------------------------------------
# decomposed problem (Sec. VI)


def decomp_coordinates(y, weights="corrected", layout="block"):
    """Coordinates of the decomposed dual I = {j in [2n] : 1 + y_j > 0} (eq. 24), listed

        "block"  in the order of j: the (+) coordinates j = i (y_i > -1) by increasing i,
                 then the (-) coordinates j = i + n (y_i < 1) by increasing i;
        "row"    for each point i its (+) coordinate, then its (-) coordinate.

    Returns ``(rows, signs, c, n_tilde)``: the point i(j), sigma_j, and the loss weights

        c_j = n~ (1 + y_j) / (2n)      ("corrected"; see docs/mixup.md)
        c_j = 1 + y_j                  ("paper", eq. 23 as printed)

    with y_j = sigma_j y_i(j). With binary labels there is one coordinate per row, c = 1."""
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    plus, minus = np.flatnonzero(y > -1.0), np.flatnonzero(y < 1.0)
    if layout == "block":
        rows = np.r_[plus, minus].astype(np.intp)
        signs = np.r_[np.ones(len(plus)), -np.ones(len(minus))]
    elif layout == "row":
        pairs = sorted([(int(i), 0) for i in plus] + [(int(i), 1) for i in minus])
        rows = np.array([i for i, _ in pairs], dtype=np.intp)
        signs = np.array([1.0 - 2.0 * t for _, t in pairs])
    else:
        raise ValueError(layout)
    nt = len(rows)
    yj = signs * y[rows]                   # y_j of the duplicated example (y_{i+n} = -y_i)
    c = nt * (1.0 + yj) / (2.0 * n) if weights == "corrected" else 1.0 + yj
    return rows, signs, c, nt


def decomp_to_alpha(alpha_t, rows, signs, n):
    """alpha_i = (n/n~)(alpha~_i - alpha~_{i+n}) (the f-preserving map of Sec. VI)."""
    beta = np.zeros(n)
    np.add.at(beta, rows, signs * alpha_t)
    return beta * (n / len(rows))


# ---------------------------------------------------------------------------------------
# Algorithm 2 (approx): level-set ends and the grid search


def level_set_ends(loss, y, n, param=None):
    """(b_u, b_l) = (inf, sup) of L = {zeta : phi(zeta; y) <= n phi0(0)} (eq. 16), by
    doubling then bisection to machine precision (the endpoint returned lies inside L).

    phi is the package's loss (for the squared loss (s-y)^2/2, the mixup form minus
    (1-y^2)/2, and phi0(0) = phi(0; 1) = 1/2): L still contains every optimal score, as
    phi(z*_i) <= n R[0] <= n phi0(0)."""
    T = n * phi(loss, 0.0, 1.0, param)
    f = lambda s: phi(loss, s, y, param)
    if not f(0.0) <= T:
        raise ValueError("0 is not in the level set")
    ends = []
    for sgn in (-1.0, 1.0):
        inside, out = 0.0, sgn
        while f(out) <= T:
            inside, out = out, 2.0 * out
        while True:
            m = 0.5 * (inside + out)
            if m == inside or m == out:
                break
            if f(m) <= T:
                inside = m
            else:
                out = m
        ends.append(inside)
    return ends[0], ends[1]


def grid_point(k, n, end):
    """Point k of the log grid from sign(end) e^-4 to end (eqs. 18, 20), n+1 points."""
    v = math.exp((k / n) * (4.0 + math.log(abs(end))) - 4.0)
    return v if end > 0 else -v


def approx_gap(loss, y, z, a, n, b_lo, b_hi, grid="tight", param=None):
    """Algorithm 2: F~ <= F for a soft label. Returns (F~, zeta~, k) with k the grid index
    used (-1: no qualifying point, zeta~ = 0). ``grid``: "tight" = the qualifying point
    closest to zeta* (largest k), "literal" = eqs. 17/19 as printed (smallest k)."""
    ad = alpha_diamond(loss, y, param)
    positive = a < ad                       # case (i); the tie goes to case (ii) (text)
    end = b_hi if positive else b_lo
    ks = []
    # (an end at 0 happens only for n = 1, where 0 is on the boundary of L: no grid)
    for k in (range(n + 1) if end != 0.0 else ()):
        zeta = grid_point(k, n, end)
        at = -dphi(loss, zeta, y, param)
        if (positive and a <= at) or (not positive and at <= a):
            ks.append(k)
    if ks:
        k = max(ks) if grid == "tight" else min(ks)
        zeta = grid_point(k, n, end)
    else:
        k, zeta = -1, 0.0
    at = -dphi(loss, zeta, y, param)
    Ft = phi(loss, z, y, param) - at * zeta + a * z - phi(loss, zeta, y, param)
    return Ft, zeta, k


# ---------------------------------------------------------------------------------------
# the twin


def sdca_twin(K, y, lam, loss, method="naive", *, param=None, orders=None, seed=0,
              max_epochs=200, tol=0.0, approx_grid="tight", decomp_gamma="percoord",
              decomp_weights="corrected", decomp_layout="block", conjugate="closed",
              record_steps=False):
    """Slow MixupSDCA on a dense kernel matrix K (n x n) of the augmented set.

    method
        "naive"   eq. 13 with h in closed form (``conjugate="numeric"``: h by a numerical sup)
        "approx"  eq. 21 with F~ of Algorithm 2 (``approx_grid`` "tight" | "literal")
        "decomp"  vanilla SDCA (eq. 13) on the decomposed dual with c_j, gamma_j = gamma/c_j
                  (``decomp_gamma="percoord"``) or gamma/2 ("paper"); ``decomp_weights=
                  "paper"`` uses eq. 23 as printed (the erratum: it solves lam n~/(2n))
        "exact"   exact coordinate maximisation of D0 (not in the paper)
    orders
        int array (epochs, m): the coordinates visited in each epoch, m = n (rows) or n~
        (positions in the coordinate list of :func:`decomp_coordinates`, ``decomp_layout``). With
        ``dualsolve._core.rng.epoch_orders(seed, m, epochs)`` this is the solver's order
        under ``sampling="permutation"``. None: a NumPy permutation per epoch (``seed``),
        up to ``max_epochs`` or until gap <= tol.

    After every epoch the scores are recomputed from scratch, z = K alpha/(lam n), and
    R, D and the gap are evaluated (for decomp: the decomposed gap, with ``primal`` = R[f]
    and ``dual`` = primal - gap).

    Returns a namespace with ``alpha`` (epochs+1, n) (decomp: the mapped alpha),
    ``alpha_tilde`` (decomp), ``primal``, ``dual``, ``gap`` (epochs+1,), ``z``, ``epochs``,
    ``n_tilde``, ``coords`` (decomp), ``ends`` (approx: b_u, b_l per row) and ``steps``
    (with ``record_steps``: one dict per step: j, i, q, F, Ft, eta, k).
    """
    K = np.ascontiguousarray(K, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    p = default_param(loss, param)
    g = gamma_of(loss, p)
    if method not in ("naive", "approx", "decomp", "exact"):
        raise ValueError(method)
    if loss == "hinge" and method != "exact":
        raise ValueError("hinge needs method='exact'")
    Kd = np.diag(K).copy()
    Kc = np.asfortranarray(K)                  # fast columns
    decomp = method == "decomp"
    if decomp:
        rows, signs, cw, nt = decomp_coordinates(y, decomp_weights, decomp_layout)
        m, scale = nt, lam * nt
        state = np.zeros(nt)
    else:
        rows, signs, cw, nt = None, None, None, n
        m, scale = n, lam * n
        state = np.zeros(n)
    ends = None
    if method == "approx":
        ends = np.zeros((n, 2))
        for i in range(n):
            if abs(y[i]) < 1.0:
                ends[i] = level_set_ends(loss, y[i], n, p)
    z = np.zeros(n)
    steps = [] if record_steps else None

    def evaluate():
        if decomp:
            beta = np.zeros(n)
            np.add.at(beta, rows, signs * state)
            Kb = K @ beta
            zz = Kb / scale
            norm2 = float(beta @ Kb) / scale ** 2
            zt = signs * zz[rows]
            lp = np.array([c * phi(loss, t, 1.0, p) for c, t in zip(cw, zt)])
            lc = np.array([c * conj(loss, a / c, 1.0, p) for c, a in zip(cw, state)])
            pd = 0.5 * lam * norm2 + lp.sum() / nt
            dd = -0.5 * lam * norm2 - lc.sum() / nt
            gap = pd - dd
            primal = 0.5 * lam * norm2 + float(np.mean(phi_vec(loss, zz, y, p)))
            return primal, primal - gap, gap, zz, decomp_to_alpha(state, rows, signs, n)
        primal, dual, gap, zz = kernel_objectives(K, y, lam, loss, state, p)
        return primal, dual, gap, zz, state.copy()

    hist = [evaluate()]
    if orders is None:
        rng = np.random.default_rng(seed)
        order_iter = (rng.permutation(m) for _ in range(max_epochs))
    else:
        orders = np.asarray(orders)
        if orders.ndim != 2 or orders.shape[1] != m:
            raise ValueError(f"orders must have shape (epochs, {m})")
        order_iter = iter(orders)
    epochs = 0
    for order in order_iter:
        if orders is None and hist[-1][2] <= tol:
            break
        epochs += 1
        for j in order:
            j = int(j)
            if decomp:
                i, s, c = int(rows[j]), signs[j], cw[j]
                gj = g / c if decomp_gamma == "percoord" else g / 2.0
                zt = s * z[i]
                a0 = state[j]
                u = -c * dphi(loss, zt, 1.0, p)
                q = u - a0
                gq2 = gj * q * q
                if q == 0.0 or gq2 == 0.0:
                    continue
                F = c * phi(loss, zt, 1.0, p) + c * conj(loss, a0 / c, 1.0, p) + a0 * zt
                F = max(F, 0.0)
                sbar = scale * gj / (Kd[i] + scale * gj)
                eta = min(1.0, sbar * ((F + 0.5 * gq2) / gq2))
                delta = eta * q
                state[j] = a0 + delta
                z += (delta * s / scale) * Kc[:, i]
                if record_steps:
                    steps.append(dict(j=j, i=i, q=q, F=F, Ft=F, eta=eta, k=None))
                continue
            i = j
            a0, zi, yi = state[i], z[i], y[i]
            rec = None
            if method == "exact":
                a1 = exact_step(loss, yi, zi, a0, Kd[i] / scale, p)
                delta = a1 - a0
                state[i] = a1
            else:
                u = -dphi(loss, zi, yi, p)
                q = u - a0
                gq2 = g * q * q
                if q == 0.0 or gq2 == 0.0:
                    continue
                if conjugate == "numeric" and abs(yi) < 1.0:
                    hval = conj_numeric(loss, a0, yi, p)
                else:
                    hval = conj(loss, a0, yi, p)
                F = phi(loss, zi, yi, p) + hval + a0 * zi
                Fuse, k = F, None
                if method == "approx" and abs(yi) < 1.0:
                    Fuse, _, k = approx_gap(loss, yi, zi, a0, n, ends[i, 0], ends[i, 1],
                                            approx_grid, p)
                Fuse = max(Fuse, 0.0)
                sbar = scale * g / (Kd[i] + scale * g)
                ratio = (Fuse + 0.5 * gq2) / gq2
                if method == "approx":
                    ratio = max(1.0, ratio)
                eta = min(1.0, sbar * ratio)
                delta = eta * q
                state[i] = a0 + delta
                if record_steps:
                    rec = dict(j=i, i=i, q=q, F=F, Ft=Fuse, eta=eta, k=k)
            if delta != 0.0:
                z += (delta / scale) * Kc[:, i]
            if rec is not None:
                steps.append(rec)
        hist.append(evaluate())
        z = hist[-1][3].copy()                 # scores recomputed from scratch
    primal, dual, gap, zs, alphas = zip(*hist)
    return SimpleNamespace(
        alpha=np.array(alphas), alpha_tilde=state.copy() if decomp else None,
        primal=np.array(primal), dual=np.array(dual), gap=np.array(gap), z=np.array(zs[-1]),
        epochs=epochs, n_tilde=nt, coords=(rows, signs, cw) if decomp else None,
        ends=ends, steps=steps)


# ---------------------------------------------------------------------------------------
# references


def kernel_features(K, rtol=1e-13):
    """Phi with K = Phi Phi^T (eigendecomposition; directions with eigenvalue below
    rtol * max are dropped: they carry no function value)."""
    K = 0.5 * (K + K.T)
    e, V = np.linalg.eigh(K)
    keep = e > rtol * max(e.max(), 0.0)
    return V[:, keep] * np.sqrt(e[keep])


def lbfgs_kernel(K, y, lam, loss, param=None, newton=True):
    """min_f R[f] = lam/2 ||f||^2 + (1/n) sum phi(f(x_i); y_i) (eq. 3) over the span
    of the kernel sections, solved in the coordinates f = Phi w (K = Phi Phi^T), where
    ||f||^2 = ||w||^2 and the problem is lam-strongly convex and well conditioned (the
    form f = K beta is the same problem but ill-conditioned when K is).
    L-BFGS at tight tolerances, then (smooth losses) a few damped Newton steps.

    Returns (R*, z*) with z* = (f*(x_i))_i."""
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    Phi = kernel_features(K)

    def fg(w):
        z = Phi @ w
        v, d, _ = _np_losses(loss, z, y, param)
        return 0.5 * lam * w @ w + v.mean(), lam * w + Phi.T @ d / n

    r = so.minimize(fg, np.zeros(Phi.shape[1]), jac=True, method="L-BFGS-B",
                    options=dict(gtol=1e-14, ftol=1e-17, maxiter=100000, maxcor=50))
    w = r.x
    if newton and loss != "hinge":
        f, grad = fg(w)
        for _ in range(30):
            z = Phi @ w
            H = lam * np.eye(len(w)) + (Phi.T * _np_losses(loss, z, y, param)[2]) @ Phi / n
            step = np.linalg.solve(H, grad)
            t = 1.0
            while True:
                f_new, g_new = fg(w - t * step)
                if f_new <= f or t < 1e-8:
                    break
                t *= 0.5
            if f_new > f:
                break
            w, f_old, f, grad = w - t * step, f, f_new, g_new
            if np.abs(grad).max() < 1e-15 or f_old - f <= 0.0:
                break
    f, grad = fg(w)
    return float(f), Phi @ w


def kernel_sgd_objective(K, y, lam, loss, beta, param=None):
    """R for f = K beta (the parametrisation of the kernel SGD baseline)."""
    Kb = K @ beta
    return 0.5 * lam * float(beta @ Kb) + float(np.mean(phi_vec(loss, Kb, y, param)))


def hinge_qp_kernel(K, y, lam):
    """Mixup hinge optimum min lam/2||w||^2 + (1/n) sum c1 xi_i + c2 eta_i with
    xi >= 1 - z, eta >= 1 + z, xi, eta >= 0, z = Phi w, by Clarabel (interior point).
    Returns (R*, z*)."""
    import clarabel
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    Phi = kernel_features(K)
    r = Phi.shape[1]
    c1, c2 = 0.5 * (1 + y), 0.5 * (1 - y)
    P = sp.block_diag([lam * sp.eye(r), sp.csc_matrix((2 * n, 2 * n))]).tocsc()
    q = np.r_[np.zeros(r), c1 / n, c2 / n]
    I, Z = sp.eye(n), sp.csr_matrix((n, n))
    Ph = sp.csr_matrix(Phi)
    A = sp.vstack([sp.hstack([-Ph, -I, Z]), sp.hstack([Ph, Z, -I]),
                   sp.hstack([sp.csr_matrix((2 * n, r)), -sp.eye(2 * n)])]).tocsc()
    b = np.r_[-np.ones(2 * n), np.zeros(2 * n)]
    st = clarabel.DefaultSettings()
    st.verbose = False
    st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = 1e-12
    sol = clarabel.DefaultSolver(P, q, A, b, [clarabel.NonnegativeConeT(4 * n)], st).solve()
    w = np.array(sol.x[:r])
    z = Phi @ w
    return 0.5 * lam * w @ w + float(np.mean(phi_vec("hinge", z, y))), z


def weighted_logreg(X, y, lam):
    """Mixup BCE with soft labels equals logistic regression on the rows
    duplicated as (x, +1) with weight c1 and (x, -1) with weight c2, C = 1/(lam n)
    (scikit-learn; Newton-Cholesky at a tight tolerance). Returns w."""
    import pytest
    LogisticRegression = pytest.importorskip("sklearn.linear_model").LogisticRegression
    X = sp.csr_matrix(X)
    y = np.asarray(y, dtype=np.float64)
    n = X.shape[0]
    c1, c2 = 0.5 * (1 + y), 0.5 * (1 - y)
    pos, neg = np.flatnonzero(c1 > 0), np.flatnonzero(c2 > 0)
    Xd = sp.vstack([X[pos], X[neg]]).toarray()
    yd = np.r_[np.ones(len(pos)), -np.ones(len(neg))]
    wd = np.r_[c1[pos], c2[neg]]
    clf = LogisticRegression(C=1.0 / (lam * n), fit_intercept=False, solver="newton-cholesky",
                             tol=1e-14, max_iter=1000)
    clf.fit(Xd, yd, sample_weight=wd)
    w = clf.coef_.ravel()
    return w if clf.classes_[1] == 1 else -w


# ---------------------------------------------------------------------------------------
# small problems from real data


def _stratified(y, n_orig, seed):
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
    k = n_orig // 2
    idx = np.r_[rng.choice(pos, k, replace=False), rng.choice(neg, n_orig - k, replace=False)]
    return np.sort(idx)


def magic_problem(n_orig=60, n_features=5, seed=0, n_new=0):
    """``n_orig`` rows of UCI MAGIC gamma telescope (bundled ``magic04``), half per class,
    its first ``n_features`` columns standardised with the subset's mean and std.
    Returns (X CSR, y in {-1,+1}, X_new): ``n_new`` other rows scaled the same way."""
    from dualsolve.datasets import load
    X, y = load("magic04")
    X = X[:, :n_features].toarray()
    idx = _stratified(y, n_orig, seed)
    mu, sd = X[idx].mean(0), X[idx].std(0)
    rest = np.setdiff1d(np.arange(len(y)), idx)
    new = np.random.default_rng(seed + 1).choice(rest, n_new, replace=False) if n_new else []
    return (sp.csr_matrix((X[idx] - mu) / sd), y[idx].astype(np.float64),
            (X[new] - mu) / sd if n_new else None)


def heart_problem(n_orig=60, seed=0):
    """``n_orig`` rows of LIBSVM heart_scale (already scaled to [-1, 1]; sparse), half per
    class. Returns (X CSR, y in {-1,+1})."""
    from dualsolve.datasets import load
    X, y = load("heart_scale")
    idx = _stratified(y, n_orig, seed)
    return sp.csr_matrix(X[idx]), y[idx].astype(np.float64)


def mixup_numpy(X, y, m, mixup_alpha=1.0, seed=0):
    """Input-space mixup (eq. 1), independent of dualsolve.mixup: pairs uniform with
    replacement, r ~ Beta(alpha, alpha); same-class pairs keep the label exactly.
    Returns (X_aug CSR, y_aug, (a, b, r))."""
    X = sp.csr_matrix(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = X.shape[0]
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, m)
    b = rng.integers(0, n, m)
    r = rng.beta(mixup_alpha, mixup_alpha, m)
    Xa = X[a].multiply((1.0 - r)[:, None]) + X[b].multiply(r[:, None])
    ym = np.where(y[a] == y[b], y[a], (1.0 - r) * y[a] + r * y[b])
    return (sp.vstack([X, sp.csr_matrix(Xa)]).tocsr(), np.r_[y, snap_labels(ym)], (a, b, r))


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def rbf_kernel(A, B=None, gamma=0.5):
    """exp(-gamma ||a - b||^2) from explicit differences (exactly symmetric for B=None)."""
    A = _dense(A)
    B = A if B is None else _dense(B)
    D2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-gamma * D2)


def poly_kernel(A, B=None, gamma=1.0, coef0=1.0, degree=3):
    A = _dense(A)
    B = A if B is None else _dense(B)
    return (gamma * (A @ B.T) + coef0) ** degree


def linear_kernel(A, B=None):
    A = _dense(A)
    B = A if B is None else _dense(B)
    return A @ B.T
