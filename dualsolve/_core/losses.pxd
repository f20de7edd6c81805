# cython: language_level=3
"""One table of losses: value, derivative, convex conjugate and exact dual coordinate step.

Every classification loss is written for labels ``y`` in [-1, 1] (the mixup loss, eq. 2 of
Obi, Saito, Sasaki & Kato, 2025)::

    phi(s; y) = c1 * phi0(s) + c2 * phi0(-s),    c1 = (1 + y)/2,  c2 = (1 - y)/2

which is ``phi0(y s)`` for y = +1 / -1. The squared loss is ``(s - y)^2 / 2`` for any real y.

Dual convention (that paper's eqs. 4-5): ``w = X^T alpha / (lam n)`` and the dual
coordinate ``alpha_i`` carries the sign of the label. The conjugate term of the dual is

    h(a; y) = phi*(-a; y) = sup_s ( -a s - phi(s; y) )      (+inf outside its domain)

so that ``D(alpha) = -(lam/2)||w||^2 - (1/n) sum_i h(alpha_i; y_i)``. The exact coordinate
step minimises ``h(a) + z (a - a0) + (A/2)(a - a0)^2`` with ``z = x_i.w`` and
``A = ||x_i||^2 / (lam n)``. The closed forms of h and of the step for soft labels are not in
the paper; they are listed in docs/mixup.md.

Base losses (``param`` is the loss's one parameter, the paper's gamma_sm for the hinge variants):

    LOSS_LOGISTIC       phi0(s) = log(1 + exp(-s))
    LOSS_SQUARED_HINGE  phi0(s) = max(0, 1 - s)^2 / (2 param)   (param = 1/2: liblinear's L2 loss)
    LOSS_SMOOTH_HINGE   phi0(s) = 1 - s - param/2 if s < 1 - param; (1 - s)^2/(2 param) if s < 1; 0
    LOSS_HINGE          phi0(s) = max(0, 1 - s)
    LOSS_SQUARED        phi(s; y) = (s - y)^2 / 2

Regression losses with the insensitivity ``param = eps >= 0`` (liblinear's ``-p``), any real y:

    LOSS_EPS_INSENSITIVE          phi(s; y) = max(0, |s - y| - eps)     (liblinear -s 13)
    LOSS_SQUARED_EPS_INSENSITIVE  phi(s; y) = max(0, |s - y| - eps)^2   (liblinear -s 11 / -s 12)

Moreau smoothing (``moreau_smoothing``; Newton's continuation for the losses without a
gradient): the envelope ``phi_mu(s) = min_t phi(t) + (t - s)^2 / (2 mu)``, whose conjugate
term is ``h + (mu/2) a^2`` on the same domain, so ``-phi_mu'`` is a feasible dual point of
``phi`` itself. For the hinge it is the smooth hinge of width mu; for the
epsilon-insensitive loss the internal kind

    LOSS_SMOOTH_EPS_INSENSITIVE   phi(s; y) = H(|s - y| - eps), H(e) = 0 (e <= 0),
                                  e^2 / (2 mu) (e <= mu), e - mu/2 (e > mu)

(``param = eps``, ``mu`` the width), ``h(a; y) = -a y + eps |a| + (mu/2) a^2`` on |a| <= 1.

All three conjugate terms are ``h(a; y) = -a y + eps |a| + (g/2) a^2``: ``g = 0`` on ``|a| <= 1``
for the first (the conjugate of max(0, |t| - eps) is eps |u| on |u| <= 1), ``g = 1/2`` on the
whole line for the second, ``g = mu`` on ``|a| <= 1`` for the smoothed one (that of max(0, |t| - eps)^2 is eps |u| + u^2 / 4). The exact step
is a soft threshold: ``a = sign(b) max(0, |b| - eps) / (A + g)`` with ``b = y - z + A a0``,
clipped to the domain.
"""
from libc.math cimport exp, log, log1p, fabs, INFINITY, HUGE_VAL

cdef enum:
    LOSS_LOGISTIC = 0
    LOSS_SQUARED_HINGE = 1
    LOSS_SMOOTH_HINGE = 2
    LOSS_HINGE = 3
    LOSS_SQUARED = 4
    LOSS_EPS_INSENSITIVE = 5
    LOSS_SQUARED_EPS_INSENSITIVE = 6
    LOSS_SMOOTH_EPS_INSENSITIVE = 7     # internal (moreau_smoothing); no name in losses.pyx


ctypedef struct Loss:
    int kind
    double param      # smoothing of smooth hinge, scale of squared hinge, eps of the
                      # epsilon-insensitive losses; unused otherwise
    double mu         # the width of LOSS_SMOOTH_EPS_INSENSITIVE; 0 otherwise


# ---------------------------------------------------------------------------------------
# scalar helpers


cdef inline double softplus(double x) noexcept nogil:
    """log(1 + exp(x)) without overflow."""
    if x > 0:
        return x + log1p(exp(-x))
    return log1p(exp(x))


cdef inline double sigmoid(double x) noexcept nogil:
    """1 / (1 + exp(-x)) without overflow; exact tails on both sides."""
    cdef double e
    if x >= 0:
        return 1.0 / (1.0 + exp(-x))
    e = exp(x)
    return e / (1.0 + e)


cdef inline void sigmoid_pair(double x, double* s, double* sm) noexcept nogil:
    """s = sigmoid(x) and sm = sigmoid(-x) = 1 - s, both to full relative accuracy, one exp."""
    cdef double e = exp(-fabs(x))
    cdef double r = 1.0 / (1.0 + e)
    if x >= 0:
        s[0] = r
        sm[0] = e * r
    else:
        s[0] = e * r
        sm[0] = r


cdef inline double xlogx(double x) noexcept nogil:
    return x * log(x) if x > 0 else 0.0


cdef inline double clip(double x, double lo, double hi) noexcept nogil:
    return lo if x < lo else (hi if x > hi else x)


cdef inline double _smooth_hinge0(double s, double g) noexcept nogil:
    if s >= 1.0:
        return 0.0
    if s < 1.0 - g:
        return 1.0 - s - 0.5 * g
    return (1.0 - s) * (1.0 - s) / (2.0 * g)


cdef inline double _smooth_hinge0_deriv(double s, double g) noexcept nogil:
    if s >= 1.0:
        return 0.0
    if s < 1.0 - g:
        return -1.0
    return (s - 1.0) / g


cdef inline double _eps_excess(double s, double y, double eps) noexcept nogil:
    """max(0, |s - y| - eps)."""
    cdef double t = fabs(s - y) - eps
    return t if t > 0.0 else 0.0


cdef inline double _eps_excess_signed(double s, double y, double eps) noexcept nogil:
    """sign(s - y) max(0, |s - y| - eps): the derivative of max(0, |s - y| - eps)^2 / 2."""
    cdef double t = s - y
    if t > eps:
        return t - eps
    if t < -eps:
        return t + eps
    return 0.0


# ---------------------------------------------------------------------------------------
# value and derivative in the score s


cdef inline double loss_value(const Loss* L, double s, double y) noexcept nogil:
    """phi(s; y)."""
    cdef double c1 = 0.5 * (1.0 + y), c2 = 0.5 * (1.0 - y), t
    if L.kind == LOSS_LOGISTIC:
        # softplus(s) = softplus(-s) + s, so this is softplus(-s) + c2 s, written
        # so that binary labels need no cancellation.
        t = 0.0
        if c1 != 0.0:
            t += c1 * softplus(-s)
        if c2 != 0.0:
            t += c2 * softplus(s)
        return t
    if L.kind == LOSS_SQUARED_HINGE:
        t = 0.0
        if s < 1.0:
            t += c1 * (1.0 - s) * (1.0 - s)
        if s > -1.0:
            t += c2 * (1.0 + s) * (1.0 + s)
        return t / (2.0 * L.param)
    if L.kind == LOSS_SMOOTH_HINGE:
        return c1 * _smooth_hinge0(s, L.param) + c2 * _smooth_hinge0(-s, L.param)
    if L.kind == LOSS_HINGE:
        t = 0.0
        if s < 1.0:
            t += c1 * (1.0 - s)
        if s > -1.0:
            t += c2 * (1.0 + s)
        return t
    if L.kind == LOSS_SQUARED:
        return 0.5 * (s - y) * (s - y)
    t = _eps_excess(s, y, L.param)
    if L.kind == LOSS_EPS_INSENSITIVE:
        return t
    if L.kind == LOSS_SMOOTH_EPS_INSENSITIVE:
        return t * t / (2.0 * L.mu) if t <= L.mu else t - 0.5 * L.mu
    return t * t


cdef inline double loss_deriv(const Loss* L, double s, double y) noexcept nogil:
    """d phi(s; y) / ds (for hinge: the subgradient -c1 [s < 1] + c2 [s > -1]; for the
    epsilon-insensitive loss: sign(s - y) [|s - y| > eps])."""
    cdef double c1 = 0.5 * (1.0 + y), c2 = 0.5 * (1.0 - y), t
    if L.kind == LOSS_LOGISTIC:
        return c2 * sigmoid(s) - c1 * sigmoid(-s)
    if L.kind == LOSS_SQUARED_HINGE:
        t = 0.0
        if s < 1.0:
            t -= c1 * (1.0 - s)
        if s > -1.0:
            t += c2 * (1.0 + s)
        return t / L.param
    if L.kind == LOSS_SMOOTH_HINGE:
        return c1 * _smooth_hinge0_deriv(s, L.param) - c2 * _smooth_hinge0_deriv(-s, L.param)
    if L.kind == LOSS_HINGE:
        t = 0.0
        if s < 1.0:
            t -= c1
        if s > -1.0:
            t += c2
        return t
    if L.kind == LOSS_SQUARED:
        return s - y
    t = _eps_excess_signed(s, y, L.param)
    if L.kind == LOSS_EPS_INSENSITIVE:
        return 1.0 if t > 0.0 else (-1.0 if t < 0.0 else 0.0)
    if L.kind == LOSS_SMOOTH_EPS_INSENSITIVE:
        return clip(t / L.mu, -1.0, 1.0)
    return 2.0 * t


cdef inline double loss_curvature(const Loss* L, double s, double y) noexcept nogil:
    """d^2 phi(s; y) / ds^2, the generalised one where phi' has kinks (squared hinge, smooth
    hinge, squared epsilon-insensitive: the slope of phi' on the side it is taken from);
    0 for hinge and epsilon_insensitive, which have no second derivative (Newton's solver
    refuses them)."""
    cdef double c1 = 0.5 * (1.0 + y), c2 = 0.5 * (1.0 - y), t, sp, sm
    if L.kind == LOSS_LOGISTIC:
        sigmoid_pair(s, &sp, &sm)
        return sp * sm
    if L.kind == LOSS_SQUARED_HINGE:
        t = 0.0
        if s < 1.0:
            t += c1
        if s > -1.0:
            t += c2
        return t / L.param
    if L.kind == LOSS_SMOOTH_HINGE:
        t = 0.0
        if 1.0 - L.param < s < 1.0:
            t += c1
        if 1.0 - L.param < -s < 1.0:
            t += c2
        return t / L.param
    if L.kind == LOSS_SQUARED:
        return 1.0
    if L.kind == LOSS_SQUARED_EPS_INSENSITIVE:
        return 2.0 if fabs(s - y) > L.param else 0.0
    if L.kind == LOSS_SMOOTH_EPS_INSENSITIVE:
        t = fabs(s - y) - L.param
        return 1.0 / L.mu if 0.0 < t < L.mu else 0.0
    return 0.0


# ---------------------------------------------------------------------------------------
# dual side


cdef inline bint loss_conj_quadratic(const Loss* L) noexcept nogil:
    """Whether h(a; y) is (at most) quadratic on its interval, so that along one dual
    coordinate the dual is a concave quadratic: a step ``a0 + r (a* - a0)`` with
    ``0 < r < 2``, clipped to the interval, never lowers it (over-relaxation)."""
    return (L.kind == LOSS_SQUARED_HINGE or L.kind == LOSS_HINGE
            or L.kind == LOSS_SMOOTH_HINGE or L.kind == LOSS_SQUARED)


cdef inline void loss_dual_bounds(const Loss* L, double y, double* lo, double* hi) noexcept nogil:
    """Domain [lo, hi] of a -> h(a; y) (possibly infinite ends)."""
    if L.kind == LOSS_SQUARED or L.kind == LOSS_SQUARED_EPS_INSENSITIVE:
        lo[0] = -INFINITY
        hi[0] = INFINITY
    elif L.kind == LOSS_EPS_INSENSITIVE or L.kind == LOSS_SMOOTH_EPS_INSENSITIVE:
        lo[0] = -1.0
        hi[0] = 1.0
    elif L.kind == LOSS_SQUARED_HINGE:
        lo[0] = 0.0 if y >= 1.0 else -INFINITY
        hi[0] = 0.0 if y <= -1.0 else INFINITY
    else:
        lo[0] = -0.5 * (1.0 - y)
        hi[0] = 0.5 * (1.0 + y)


cdef inline double _smooth_hinge_conj_u(double a, double c1, double c2, double g) noexcept nogil:
    """Minimiser u* of the infimal convolution (eq. 6) for a soft label (any g > 0)."""
    cdef double u = -2.0 * c1 * c2 / g - c1 * a
    cdef double lo = -c1 if -c1 > -c2 - a else -c2 - a
    cdef double hi = 0.0 if 0.0 < -a else -a
    return clip(u, lo, hi)


cdef inline double loss_conj(const Loss* L, double a, double y) noexcept nogil:
    """h(a; y) = phi*(-a; y); +inf outside the domain."""
    cdef double c1 = 0.5 * (1.0 + y), c2 = 0.5 * (1.0 - y), g = L.param, u, p, q
    if L.kind == LOSS_SQUARED:
        return -a * y + 0.5 * a * a
    if L.kind == LOSS_LOGISTIC:
        p = a + c2
        q = c1 - a
        if p < 0.0 or q < 0.0:
            return INFINITY
        return xlogx(p) + xlogx(q)
    if L.kind == LOSS_HINGE:
        if a < -c2 or a > c1:
            return INFINITY
        return fabs(a - y) - 1.0
    if L.kind == LOSS_SMOOTH_HINGE:
        if a < -c2 or a > c1:
            return INFINITY
        if y >= 1.0:
            return -a + 0.5 * g * a * a
        if y <= -1.0:
            return a + 0.5 * g * a * a
        u = _smooth_hinge_conj_u(a, c1, c2, g)
        return 2.0 * u + a + 0.5 * g * (u * u / c1 + (a + u) * (a + u) / c2)
    if L.kind == LOSS_EPS_INSENSITIVE:
        if a < -1.0 or a > 1.0:
            return INFINITY
        return -a * y + g * fabs(a)
    if L.kind == LOSS_SMOOTH_EPS_INSENSITIVE:
        if a < -1.0 or a > 1.0:
            return INFINITY
        return -a * y + g * fabs(a) + 0.5 * L.mu * a * a
    if L.kind == LOSS_SQUARED_EPS_INSENSITIVE:
        return -a * y + g * fabs(a) + 0.25 * a * a
    # LOSS_SQUARED_HINGE
    if y >= 1.0:
        return -a + 0.5 * g * a * a if a >= 0.0 else INFINITY
    if y <= -1.0:
        return a + 0.5 * g * a * a if a <= 0.0 else INFINITY
    if a > 2.0 * c1 / g:
        return -a + g * a * a / (1.0 + y)
    if a < -2.0 * c2 / g:
        return a + g * a * a / (1.0 - y)
    return -a * y + 0.5 * g * a * a - (1.0 - y * y) / (2.0 * g)


cdef inline double loss_conj_deriv_binary(const Loss* L, double a, double y) noexcept nogil:
    """h'(a; y) for y = +1 / -1 on the closed domain (one-sided at its ends).

    Used by shrinking, which only touches bounded duals with binary labels. (For the
    epsilon-insensitive losses: the derivative for a != 0, and -y at a = 0.)
    """
    cdef double sgn = 1.0 if y > 0 else -1.0
    if L.kind == LOSS_HINGE:
        return -sgn
    if L.kind == LOSS_SQUARED:
        return a - y
    if L.kind == LOSS_LOGISTIC:
        # log(p / (1 - p)), p = a + c2
        return log(a + 0.5 * (1.0 - y)) - log(0.5 * (1.0 + y) - a)
    if (L.kind == LOSS_EPS_INSENSITIVE or L.kind == LOSS_SQUARED_EPS_INSENSITIVE
            or L.kind == LOSS_SMOOTH_EPS_INSENSITIVE):
        sgn = 1.0 if a > 0.0 else (-1.0 if a < 0.0 else 0.0)
        return (-y + L.param * sgn + L.mu * a
                + (0.5 * a if L.kind == LOSS_SQUARED_EPS_INSENSITIVE else 0.0))
    # squared hinge and smooth hinge share -sgn + param * a
    return -sgn + L.param * a


cdef inline double _logistic_step(double y, double z, double a0, double A) noexcept nogil:
    """Exact logistic dual step: Newton on t = logit(p), p = a + c2, safeguarded by a bracket.

    Solves f(t) = t + z + A (a(t) - a0) = 0 with a(t) = c1 sigmoid(t) - c2 sigmoid(-t),
    which is increasing with slope in [1, 1 + A/4]. Working in t keeps both p and 1 - p
    accurate (liblinear's dual LR solves the same sub-problem in p or 1 - p).
    """
    cdef double c1 = 0.5 * (1.0 + y), c2 = 0.5 * (1.0 - y)
    cdef double p0 = a0 + c2, q0 = c1 - a0
    cdef double lo = -z - A * q0, hi = -z + A * p0
    cdef double t, f, fp, s, sm, a, tn
    cdef int it
    cdef bint known = False
    if p0 > 0.0 and q0 > 0.0:
        t = log(p0 / q0)
        known = lo <= t <= hi      # then sigmoid(t) = p0 and a(t) = a0: no exp needed
    else:
        t = -z
    if not known:
        t = clip(t, lo, hi)
    for it in range(100):
        if known:
            s = p0
            sm = q0
            a = a0
            known = False
        else:
            sigmoid_pair(t, &s, &sm)
            a = c1 * s - c2 * sm
        f = t + z + A * (a - a0)
        fp = 1.0 + A * s * sm
        # f' >= 1, so |t - t*| <= |f|: once f is this small, one Newton correction taken to
        # first order in a (a' = s sm) is exact to rounding, without another exp
        if fabs(f) <= 1e-9 * (1.0 + fabs(t)):
            return a - s * sm * (f / fp)
        if f > 0.0:
            hi = t
        else:
            lo = t
        tn = t - f / fp
        if not (tn > lo and tn < hi):
            tn = 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * (1.0 + fabs(t)):
            break
        t = tn
    sigmoid_pair(t, &s, &sm)
    return c1 * s - c2 * sm


cdef inline double _smooth_loss_step_bisect(const Loss* L, double y, double z, double a0,
                                            double A, double dlo, double dhi) noexcept nogil:
    """Exact step for any smooth loss with phi' in [dlo, dhi], by bisection in the score.

    Optimality of the step reads a = -phi'(s) with s = z + A (a - a0), the score after the
    update; so s solves s - z + A (phi'(s) + a0) = 0, an increasing function of s.
    """
    cdef double lo = z - A * (dhi + a0), hi = z - A * (dlo + a0), m
    cdef int it
    for it in range(200):
        m = 0.5 * (lo + hi)
        if m <= lo or m >= hi:
            break
        if m - z + A * (loss_deriv(L, m, y) + a0) > 0.0:
            hi = m
        else:
            lo = m
    return -loss_deriv(L, 0.5 * (lo + hi), y)


cdef inline double _eps_insensitive_step(const Loss* L, double y, double z, double a0,
                                        double A) noexcept nogil:
    """Exact step for h(a) = -a y + eps |a| + (g/2) a^2: minimise (K/2) a^2 - b a + eps |a|
    with K = A + g and b = y - z + A a0, a soft threshold, then clip to the domain (the
    objective is convex in one variable, so clipping its minimiser is exact)."""
    cdef double eps = L.param, b = y - z + A * a0, K, r
    cdef bint boxed = L.kind != LOSS_SQUARED_EPS_INSENSITIVE
    K = A + L.mu if boxed else A + 0.5
    r = fabs(b) - eps
    if r <= 0.0:
        return 0.0
    if K <= 0.0:             # an empty row (A = 0) with the boxed loss: linear in a
        r = 1.0
    else:
        r = r / K
        if boxed and r > 1.0:
            r = 1.0
    return r if b > 0.0 else -r


cdef inline double loss_dual_step(const Loss* L, double y, double z, double a0,
                                  double A) noexcept nogil:
    """argmin_a h(a; y) + z (a - a0) + (A/2)(a - a0)^2 over the domain of h (docs/mixup.md)."""
    cdef double c1 = 0.5 * (1.0 + y), c2 = 0.5 * (1.0 - y), g = L.param
    cdef double b, aM, aL, aR, dL, dR, cc, r
    if L.kind == LOSS_SQUARED:
        return (y - z + A * a0) / (1.0 + A)
    if L.kind == LOSS_LOGISTIC:
        return _logistic_step(y, z, a0, A)
    if (L.kind == LOSS_EPS_INSENSITIVE or L.kind == LOSS_SQUARED_EPS_INSENSITIVE
            or L.kind == LOSS_SMOOTH_EPS_INSENSITIVE):
        return _eps_insensitive_step(L, y, z, a0, A)
    b = A * a0 - z
    if L.kind == LOSS_SQUARED_HINGE:
        if y >= 1.0:
            r = (1.0 + b) / (A + g)
            return r if r > 0.0 else 0.0
        if y <= -1.0:
            r = (-1.0 + b) / (A + g)
            return r if r < 0.0 else 0.0
        aM = (y + b) / (A + g)
        if aM > 2.0 * c1 / g:
            return (1.0 + b) / (A + g / c1)
        if aM < -2.0 * c2 / g:
            return (-1.0 + b) / (A + g / c2)
        return aM
    if L.kind == LOSS_SMOOTH_HINGE:
        if y >= 1.0:
            return clip((1.0 + b) / (A + g), 0.0, 1.0)
        if y <= -1.0:
            return clip((-1.0 + b) / (A + g), -1.0, 0.0)
        if g > 1.0:   # the closed form below needs g <= 1
            return _smooth_loss_step_bisect(L, y, z, a0, A, -c1, c2)
        dL = -1.0 + g + z + A * (y - a0)
        if dL > 0.0:
            aL = (1.0 + b - g * c2 / c1) / (A + g / c1)
            return clip(aL, -c2, y)
        dR = 1.0 - g + z + A * (y - a0)
        if dR < 0.0:
            aR = (-1.0 + b + g * c1 / c2) / (A + g / c2)
            return clip(aR, y, c1)
        return y
    # LOSS_HINGE: h = |a - y| - 1 on [-c2, c1]
    if A <= 0.0:
        if z < -1.0:
            return c1
        if z > 1.0:
            return -c2
        return y
    cc = a0 - z / A
    r = fabs(cc - y) - 1.0 / A
    if r < 0.0:
        r = 0.0
    return clip(y + r if cc > y else y - r, -c2, c1)


cdef inline double loss_conj_strong_convexity(const Loss* L) noexcept nogil:
    """gamma with h'' >= gamma on the domain (0 for hinge and the epsilon-insensitive loss,
    1/2 for its square); used by SDCA step rules."""
    if L.kind == LOSS_LOGISTIC:
        return 4.0
    if L.kind == LOSS_SQUARED:
        return 1.0
    if L.kind == LOSS_HINGE or L.kind == LOSS_EPS_INSENSITIVE:
        return 0.0
    if L.kind == LOSS_SQUARED_EPS_INSENSITIVE:
        return 0.5
    if L.kind == LOSS_SMOOTH_EPS_INSENSITIVE:
        return L.mu
    return L.param


cdef inline bint loss_smoothable(const Loss* L) noexcept nogil:
    """Whether moreau_smoothing applies: the losses without a gradient (binary labels for
    the hinge: the smooth hinge is the envelope of each of c1 phi0(s), c2 phi0(-s) alone)."""
    return L.kind == LOSS_HINGE or L.kind == LOSS_EPS_INSENSITIVE


cdef inline Loss moreau_smoothing(const Loss* L, double mu) noexcept nogil:
    """The Moreau envelope of width mu > 0 of a loss_smoothable loss (see the top)."""
    cdef Loss S
    S.mu = 0.0
    if L.kind == LOSS_HINGE:
        S.kind = LOSS_SMOOTH_HINGE
        S.param = mu
    else:
        S.kind = LOSS_SMOOTH_EPS_INSENSITIVE
        S.param = L.param
        S.mu = mu
    return S


# Defined in losses.pyx: the Loss struct for a name already checked by check_loss().
cdef Loss make_loss(str loss, double param)
