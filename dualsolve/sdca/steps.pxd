# cython: language_level=3
"""SDCA coordinate step rules, shared by the linear engine (_sdca.pyx) and the kernel loop
(mixup/_kernel_sdca.pyx): the steps of MixupSDCA (Obi, Saito, Sasaki & Kato, 2025,
Secs. IV-VI; equation and algorithm numbers below are the paper's) and the exact step.
Derivations, errata and choices: docs/mixup.md.

Every rule maps (z = current score, a0 = current dual, A = K_ii / (lam n)) to the new dual
value of one coordinate. With a loss weight c (a coordinate whose loss is c phi, as in the
decomposed mixup dual), the rule runs on b = a / c with A c in place of A and returns c b:
the weighted problem in b is the unweighted one (strong convexity gamma_j = gamma / c_j).

    STEP_EXACT      argmin of the dual along the coordinate (closed forms; Newton for
                    logistic): liblinear's step and train_sdca's.
    STEP_VANILLA    eq. 13: a0 + eta (u - a0), u = -phi'(z), eta = min(1, sbar (F + g q^2/2) /
                    (g q^2)), sbar = g / (A + g), F the coordinate's Fenchel-Young gap.
    STEP_APPROX     eq. 21: eta = min(1, sbar max(1, (F~ + g q^2/2) / (g q^2))) with the lower
                    bound F~ <= F of Algorithm 2 (log-spaced grids, never materialised).
    STEP_NUMERIC    eq. 13 with h(a0) found by a 1-D numerical search for soft labels (the
                    paper's "naive" MixupSDCA; same iterates as STEP_VANILLA up to rounding).
"""
from libc.math cimport exp, log, fabs, INFINITY
from dualsolve._core.losses cimport (Loss, loss_value, loss_deriv, loss_conj, loss_dual_step)

cdef enum:
    STEP_EXACT = 0
    STEP_VANILLA = 1
    STEP_APPROX = 2
    STEP_NUMERIC = 3


ctypedef struct StepParams:
    int rule
    double gamma          # strong convexity of the conjugate in the step's units
    double grid_n         # n of Algorithm 2's grids (n + 1 points each)
    int tight             # approx: 1 = the qualifying grid point closest to zeta*, 0 = literal
    int paper_gamma       # weighted coordinates: the paper's gamma / 2 instead of gamma / c
    const double* grid_lo  # per coordinate: b_u (< 0), the lower end of L_i (approx only)
    const double* grid_hi  # per coordinate: b_l (> 0), the upper end of L_i (approx only)


cdef inline void step_params_init(StepParams* S, int rule, double gamma, double grid_n,
                                  int tight, int paper_gamma, const double* grid_lo,
                                  const double* grid_hi) noexcept nogil:
    S.rule = rule
    S.gamma = gamma
    S.grid_n = grid_n
    S.tight = tight
    S.paper_gamma = paper_gamma
    S.grid_lo = grid_lo
    S.grid_hi = grid_hi


cdef inline double _numeric_conj(const Loss* L, double a, double y) noexcept nogil:
    """h(a; y) = sup_s (-a s - phi(s; y)) by bisection on -phi'(s) = a (decreasing in s)."""
    cdef double lo = -1.0, hi = 1.0, m
    cdef int it
    if y >= 1.0 or y <= -1.0:
        return loss_conj(L, a, y)          # binary labels: the paper uses the closed form too
    while -loss_deriv(L, lo, y) < a and lo > -1e300:
        lo *= 2.0
    while -loss_deriv(L, hi, y) > a and hi < 1e300:
        hi *= 2.0
    for it in range(200):
        m = 0.5 * (lo + hi)
        if m <= lo or m >= hi:
            break
        if -loss_deriv(L, m, y) > a:
            lo = m
        else:
            hi = m
    m = 0.5 * (lo + hi)
    return -a * m - loss_value(L, m, y)


cdef inline double _grid_point(double k, double n, double end) noexcept nogil:
    """exp((k/n)(4 + log|end|) - 4) with the sign of end: e^-4 at k = 0, end at k = n."""
    cdef double v = exp((k / n) * (4.0 + log(fabs(end))) - 4.0)
    return v if end > 0 else -v


cdef inline double _approx_gap(const Loss* L, double y, double z, double a0, double grid_n,
                               double end, bint tight) noexcept nogil:
    """F~ of Algorithm 2 (eq. 14): the Fenchel-Young gap with h(a0) replaced by
    h(alpha~) <= h(a0), alpha~ = -phi'(zeta~) for a qualifying grid point zeta~ (or 0)."""
    cdef double ad = -loss_deriv(L, 0.0, y)      # alpha_diamond, the minimiser of h
    cdef double zeta = 0.0, cand, at
    cdef Py_ssize_t lo_k = 0, hi_k, mid
    cdef bint positive = a0 < ad                 # case (i): zeta* > 0, search the Zp grid
    if (positive and end <= 0.0) or (not positive and end >= 0.0):
        end = 0.0
    if end != 0.0:
        # qualifying points form a prefix k = 0..k* (-phi' is monotone along the grid)
        cand = _grid_point(0.0, grid_n, end)
        at = -loss_deriv(L, cand, y)
        if (positive and at >= a0) or (not positive and at <= a0):
            lo_k = 0                             # qualifies
            if tight:
                hi_k = <Py_ssize_t>grid_n + 1    # sentinel: does not qualify
                while hi_k - lo_k > 1:
                    mid = (lo_k + hi_k) // 2
                    at = -loss_deriv(L, _grid_point(<double>mid, grid_n, end), y)
                    if (positive and at >= a0) or (not positive and at <= a0):
                        lo_k = mid
                    else:
                        hi_k = mid
            zeta = _grid_point(<double>lo_k, grid_n, end)
    at = -loss_deriv(L, zeta, y)
    # F~ = phi(z) + h(alpha~) + a0 z, with h(alpha~) = -alpha~ zeta - phi(zeta)
    return loss_value(L, z, y) - at * zeta - loss_value(L, zeta, y) + a0 * z


cdef inline double _vanilla(const Loss* L, double y, double z, double a0, double A,
                            double g, const StepParams* S, Py_ssize_t j) noexcept nogil:
    cdef double u = -loss_deriv(L, z, y)
    cdef double q = u - a0, F, gq2, sbar, eta, end
    gq2 = g * q * q
    if q == 0.0 or gq2 == 0.0:
        return a0
    if S.rule == STEP_APPROX and not (y >= 1.0 or y <= -1.0):
        end = S.grid_hi[j] if a0 < -loss_deriv(L, 0.0, y) else S.grid_lo[j]
        F = _approx_gap(L, y, z, a0, S.grid_n, end, S.tight != 0)
    elif S.rule == STEP_NUMERIC:
        F = loss_value(L, z, y) + _numeric_conj(L, a0, y) + a0 * z
    else:
        F = loss_value(L, z, y) + loss_conj(L, a0, y) + a0 * z
    if F < 0.0:                                  # rounding near the optimum
        F = 0.0
    sbar = g / (A + g)
    eta = (F + 0.5 * gq2) / gq2
    if S.rule == STEP_APPROX and eta < 1.0:
        eta = 1.0
    eta *= sbar
    if eta > 1.0:
        eta = 1.0
    return a0 + eta * q


cdef inline double coordinate_step(const Loss* L, double y, double z, double a0, double A,
                                   double c, const StepParams* S, Py_ssize_t j) noexcept nogil:
    """New dual value of coordinate j (loss weight c) under rule S.rule."""
    cdef double b
    if c == 0.0:                # weight 0: the coordinate's loss is absent, its dual stays 0
        return 0.0
    if S.rule == STEP_EXACT:
        if c == 1.0:
            return loss_dual_step(L, y, z, a0, A)
        return c * loss_dual_step(L, y, z, a0 / c, A * c)
    if c == 1.0:
        return _vanilla(L, y, z, a0, A, S.gamma, S, j)
    # in b = a / c the constant is gamma ("percoord", tight) or gamma c / 2 (the paper's
    # uniform gamma / 2 in a's units, Lemma 3)
    return c * _vanilla(L, y, z, a0 / c, A * c, S.gamma * c / 2.0 if S.paper_gamma else S.gamma,
                        S, j)
