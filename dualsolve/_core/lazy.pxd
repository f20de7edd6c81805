# cython: language_level=3
"""Lazy ("just-in-time") dense terms for stochastic steps that cost O(nnz of the row).

A stochastic step touches the coordinates of one row, but many solvers also apply a dense
term to every coordinate at every step (an L2 shrink, a proximal map with a constant
gradient part, a pull toward a reference point, a SAG/SVRG average gradient). Between two
steps that touch coordinate j, that dense term is an autonomous scalar map with constant
coefficients, so its s-fold composition has a closed form: store when j was last brought
up to date and apply the missed steps in one go when j is next read. Three tools:

1. ``prox_pow(z, s, tau, u, lam1, lam2)``: the s-fold composition of the elastic-net
   proximal gradient map on one coordinate,

       F(z) = S(z - tau u, tau lam1) / (1 + tau lam2),     S = soft threshold,

   in O(1) (``affine_pow`` for one affine piece): the catch-up of the SPDC loops
   (``dualsolve/primal_dual/_spdc.pyx``, which keep their own interleaved per-feature
   records around it, see docs/primal_dual.md).
2. ``ScaledVec``: ``w = scale * v`` for an L2 shrink ``w <- c w`` in O(1) and a sparse add
   ``w += c x_row`` in O(nnz), with a running squared norm (plain SGD, SOREL's SGD
   baseline).
3. ``DriftJIT``: per-feature timestamps for the affine recurrence

       x_j <- a x_j + b_j,     b_j = c1 p[j] + c2 q[j]      (a, c1, c2 constant)

   applied at every step between touches, plus an optional running sum of the iterates
   (stage averages), via tables of a^s, sum_{r<s} a^r and their cumulative sums, so a
   catch-up is O(1) without transcendental calls (SOREL / LSVRG / Prospect dense parts,
   PPD-SG's pull toward the stage's reference point, SAG-type average gradients).

Conventions of the timestamped catch-ups: time is the int64 step counter ``t`` (counts
exceed 2^31); coordinate j is "current at t" when its stored value is the iterate after t
steps.
A catch-up to t applies the missed steps last[j] -> t; a touched step t -> t+1 needs j
current at t first. Parameters change only after a flush (all coordinates current).
State is float64; row data may be float32/float64 with int32/int64 indices.

Untouched coordinates follow the dense recurrence exactly, including its drift: with no
regulariser, F^s(z) = z - s tau u.

SOREL / LSVRG step t (gradient form: a = 1 - alpha (mu + 1/tau), b_j = -alpha gbar_j +
(alpha/tau) w_k,j, i.e. p = gbar, c1 = -alpha, q = w_k, c2 = alpha/tau)::

    for q in range(nnz): drift_catch_up(&st, cols[q], t)
    m = (dot of the row with st.x);  coef = ...
    for q in range(nnz): drift_step(&st, cols[q], t, -alpha * coef * vals[q])
    ...
    drift_flush(&st, T)        # end of epoch; then drift_set_params for the next one
"""
from libc.stdint cimport int64_t
from libc.math cimport exp, expm1, log, log1p, ceil, fabs
from dualsolve._core.csr cimport floating, index_t


cdef enum:
    # prox_pow iterates F directly for s <= this many steps: cheaper than the closed form
    # (a handful of exp/log calls) and bit-identical to a dense loop.
    LAZY_DIRECT_STEPS = 8


# ---------------------------------------------------------------------------------------
# 1. s-fold elastic-net proximal gradient map


cdef inline double soft_threshold(double w, double t) noexcept nogil:
    """S(w, t) = sign(w) max(|w| - t, 0) for t >= 0; NaN propagates."""
    if w > t:
        return w - t
    if w >= -t:
        return 0.0
    return w + t


cdef inline double prox_step(double z, double tau, double u, double lam1,
                             double lam2) noexcept nogil:
    """One step F(z) = S(z - tau u, tau lam1) / (1 + tau lam2): the elastic-net prox
    ``prox_{tau g}(z - tau u)`` of g = lam1 |.| + (lam2/2) (.)^2."""
    return soft_threshold(z - tau * u, tau * lam1) / (1.0 + tau * lam2)


cdef inline double _affine_pow_l(double z, double k, double c, double tau, double lam2,
                                 double L) noexcept nogil:
    # k steps of z <- (z - tau c) / (1 + tau lam2), with L = log1p(tau lam2):
    # a^k z - coef_k c,  a^k = exp(-k L),  coef_k = -expm1(-k L) / lam2  (k tau if lam2 = 0).
    # Never zf + a^k (z - zf) with zf = -c/lam2: it cancels when lam2 is tiny.
    cdef double e
    if L > 0.0:
        e = -k * L
        return exp(e) * z + (expm1(e) / lam2) * c
    return z - (k * tau) * c


cdef inline double _log1p_tl2(double tau, double lam2) noexcept nogil:
    # log1p(tau lam2), and 0 when tau lam2 is so small (< 1e-200) that the lam2 = 0
    # formulas are exact in double for any step count below 1e180 (avoids subnormals).
    if tau * lam2 > 1e-200:
        return log1p(tau * lam2)
    return 0.0


cdef inline double affine_pow(double z, int64_t k, double c, double tau,
                              double lam2) noexcept nogil:
    """k-fold composition of the affine map z <- (z - tau c) / (1 + tau lam2) (one affine
    piece of F, with c = u + lam1 on P+ and u - lam1 on P-; c = u when lam1 = 0), in the
    stable form ``a^k z - coef_k c`` with ``a^k = exp(-k log1p(tau lam2))`` and
    ``coef_k = -expm1(-k log1p(tau lam2)) / lam2`` (``k tau`` when lam2 = 0).
    The piece's fixed point is -c / lam2. O(1)."""
    if k <= 0:
        return z
    return _affine_pow_l(z, <double>k, c, tau, lam2, _log1p_tl2(tau, lam2))


cdef inline int64_t _exit_search(double z, int64_t lo, int64_t hi, double c, double bnd,
                                 double sg, double tau, double lam2, double L, double* zhi,
                                 bint check_hi, int* stats) noexcept nogil:
    # Bisection for the first index in (lo, hi] whose affine iterate is out of the piece,
    # given z_lo inside and, unless check_hi, z_hi out with its value in zhi. With
    # check_hi, z_hi is evaluated first and hi returned if it is still inside (no exit).
    cdef int64_t mid
    cdef double zm
    if check_hi:
        zm = _affine_pow_l(z, <double>hi, c, tau, lam2, L)
        if stats != NULL:
            stats[1] += 1
            stats[2] += 1
        zhi[0] = zm
        if sg * (zm - bnd) > 0.0:
            return hi
    while hi - lo > 1:
        mid = lo + (hi - lo) // 2
        zm = _affine_pow_l(z, <double>mid, c, tau, lam2, L)
        if stats != NULL:
            stats[1] += 1
            stats[2] += 1
        if sg * (zm - bnd) > 0.0:
            lo = mid
        else:
            hi = mid
            zhi[0] = zm
    return hi


cdef inline double _prox_pow_impl(double z, int64_t s, double tau, double u, double lam1,
                                  double lam2, double L, int* stats,
                                  int64_t kshift) noexcept nogil:
    # F^s(z) with L = _log1p_tl2(tau, lam2). stats (or NULL; for tests): stats[0] +=
    # pieces walked by the closed form, stats[1] += closed-form evaluations, stats[2] +=
    # exit-time corrections (direct steps past the estimate, or search evaluations).
    # kshift: added to every exit-time estimate (0 except in tests of the corrections).
    cdef double bp, bm, c, bnd, kr, zk, zp, sg, x
    cdef int64_t k
    cdef int walk
    if s <= 0:
        return z
    if z != z or u != u:
        return z + u                                   # NaN in, NaN out, in O(1)
    if s <= LAZY_DIRECT_STEPS:
        for k in range(s):
            z = prox_step(z, tau, u, lam1, lam2)
        return z
    if L == 0.0:
        lam2 = 0.0                                     # see _log1p_tl2
    if lam1 == 0.0:
        # F is affine everywhere (its zero piece is the single point tau u, where the
        # affine formula also gives 0)
        if stats != NULL:
            stats[0] += 1
            stats[1] += 1
        return _affine_pow_l(z, <double>s, u, tau, lam2, L)
    # P+ : z > bp, F(z) = a (z - tau (u + lam1));  P- : z < bm, F(z) = a (z - tau (u - lam1));
    # Z : bm <= z <= bp, F(z) = 0. F is monotone, so the orbit is monotone and walks the
    # pieces in order: at most P+/- (exit) -> Z -> P-/+ (stays), or P+/- (exit) -> P-/+.
    # Piece tests and exit tests use the same bounds, so they agree under rounding.
    bp = tau * (u + lam1)
    bm = tau * (u - lam1)
    while s > 0:
        if stats != NULL:
            stats[0] += 1
        if z > bp:
            sg = 1.0
            c = u + lam1
            bnd = bp
        elif z < bm:
            sg = -1.0
            c = u - lam1
            bnd = bm
        else:
            z = 0.0                                    # zero piece: one step to 0
            s -= 1
            if bm <= 0.0 and 0.0 <= bp:
                return 0.0                             # 0 is a fixed point
            continue
        # The piece keeps the orbit iff its fixed point -c/lam2 lies in it (lam2 > 0), or the
        # drift -tau c does not point out of it (lam2 = 0). Both reduce to sg * c <= 0,
        # since -c/lam2 - tau c = -c (1 + tau lam2) / lam2.
        if stats != NULL:
            stats[1] += 1
        if sg * c <= 0.0:
            return _affine_pow_l(z, <double>s, c, tau, lam2, L)
        # Exit time: smallest k >= 1 with sg (z_k - bnd) <= 0. For lam2 > 0,
        #   z_k - zf = a^k (z - zf)  =>  k = ceil( log(r) / -L ),
        #   r = (bnd - zf) / (z - zf) = c (1 + tau lam2) / (lam2 z + c),
        # where sg c > 0 and sg (lam2 z + c) > 0: no cancellation, unlike the printed
        # (bnd - zf)/(z - zf) with a huge zf = -c/lam2. log(r) is taken as log1p(-x),
        # x = 1 - r = lam2 (z - bnd) / (lam2 z + c), when r > 1/2. For lam2 = 0,
        # k = ceil( (z - bnd) / (tau c) ).
        if L > 0.0:
            x = lam2 * (z - bnd) / (lam2 * z + c)
            if x < 0.5:
                kr = log1p(-x) / (-L)
            else:
                kr = log(c * (1.0 + tau * lam2) / (lam2 * z + c)) / (-L)
        else:
            kr = (z - bnd) / (tau * c)
        if kr < <double>s:                             # also false for NaN
            k = <int64_t>ceil(kr)
            if k < 1:
                k = 1
        else:
            k = s
        if kshift != 0:
            k += kshift
            k = 1 if k < 1 else (s if k > s else k)
        # Correct rounding by evaluation: z_{k-1} by the closed form, then z_k by one
        # direct step of the piece's map (the step the orbit takes). The estimate is
        # within one step; a search bounds the work if it ever were not.
        if k > 1:
            zp = _affine_pow_l(z, <double>(k - 1), c, tau, lam2, L)
            if stats != NULL:
                stats[1] += 1
        else:
            zp = z
        if sg * (zp - bnd) > 0.0:                      # z_{k-1} inside
            zk = (zp - tau * c) / (1.0 + tau * lam2)
            walk = 0
            while sg * (zk - bnd) > 0.0 and k < s:     # still inside at k: later exit
                if walk == 3:
                    k = _exit_search(z, k, s, c, bnd, sg, tau, lam2, L, &zk, True, stats)
                    break
                k += 1
                walk += 1
                zk = (zk - tau * c) / (1.0 + tau * lam2)
                if stats != NULL:
                    stats[2] += 1
        else:                                          # out at k - 1 already: earlier
            zk = zp
            if stats != NULL:
                stats[2] += 1
            k = _exit_search(z, 0, k - 1, c, bnd, sg, tau, lam2, L, &zk, False, stats)
        # z_0..z_{k-1} are in the piece, so zk = F^k(z)
        if k >= s:
            return zk
        z = zk
        s -= k
    return z


cdef inline double prox_pow(double z, int64_t s, double tau, double u, double lam1,
                            double lam2) noexcept nogil:
    """F^s(z), the exact s-fold composition of F(z) = S(z - tau u, tau lam1)/(1 + tau lam2)
    (tau > 0, lam1 >= 0, lam2 >= 0; s <= 0 returns z). O(1): direct steps when
    s <= LAZY_DIRECT_STEPS, else the closed form over at most three affine pieces
    (the same closed form as in docs/primal_dual.md, "lazy updates"). lam1 = 0: a^s z - coef_s u; lam1 = lam2 = 0: z - s tau u."""
    return _prox_pow_impl(z, s, tau, u, lam1, lam2, _log1p_tl2(tau, lam2), NULL, 0)


# ---------------------------------------------------------------------------------------
# 2. Scaled vector for L2 shrinkage


# The scale is folded back into v (O(d), amortised) once |scale| leaves
# [SV_SCALE_MIN, SV_SCALE_MAX] = [1e-9, 1e9] (float64).
cdef extern from *:
    """
    #define DS_SV_SCALE_MIN 1e-9
    #define DS_SV_SCALE_MAX 1e9
    """
    const double SV_SCALE_MIN "DS_SV_SCALE_MIN"
    const double SV_SCALE_MAX "DS_SV_SCALE_MAX"


ctypedef struct ScaledVec:
    double* v             # w = scale * v
    Py_ssize_t d
    double scale
    double sqnorm_v       # sum_j v[j]^2, maintained by every update


cdef inline void sv_recompute_sqnorm(ScaledVec* sv) noexcept nogil:
    """Recompute the running squared norm from v exactly (O(d); bounds rounding drift)."""
    cdef double s = 0.0
    cdef Py_ssize_t j
    for j in range(sv.d):
        s += sv.v[j] * sv.v[j]
    sv.sqnorm_v = s


cdef inline void sv_init(ScaledVec* sv, double* v, Py_ssize_t d) noexcept nogil:
    """Attach a caller-owned array holding w; scale = 1. O(d)."""
    sv.v = v
    sv.d = d
    sv.scale = 1.0
    sv_recompute_sqnorm(sv)


cdef inline void sv_renormalize(ScaledVec* sv) noexcept nogil:
    """Fold the scale into v (v = w afterwards, scale = 1). O(d)."""
    cdef Py_ssize_t j
    cdef double s = sv.scale
    if s != 1.0:
        for j in range(sv.d):
            sv.v[j] *= s
    sv.scale = 1.0
    sv_recompute_sqnorm(sv)


cdef inline int sv_scale(ScaledVec* sv, double c) noexcept nogil:
    """w <- c w in O(1) (c = 0 zeroes w in O(d)). Returns 1 when it renormalised (the
    scale left [SV_SCALE_MIN, SV_SCALE_MAX], amortised O(d)), else 0."""
    cdef Py_ssize_t j
    if c == 0.0:
        for j in range(sv.d):
            sv.v[j] = 0.0
        sv.scale = 1.0
        sv.sqnorm_v = 0.0
        return 1
    sv.scale *= c
    if fabs(sv.scale) < SV_SCALE_MIN or fabs(sv.scale) > SV_SCALE_MAX:
        sv_renormalize(sv)
        return 1
    return 0


cdef inline double sv_get(const ScaledVec* sv, Py_ssize_t j) noexcept nogil:
    """w_j."""
    return sv.scale * sv.v[j]


cdef inline void sv_add_at(ScaledVec* sv, Py_ssize_t j, double delta) noexcept nogil:
    """w_j += delta. O(1)."""
    cdef double old = sv.v[j]
    cdef double new = old + delta / sv.scale
    sv.v[j] = new
    sv.sqnorm_v += (new - old) * (new + old)


cdef inline void sv_add(ScaledVec* sv, double c, const floating* data, const index_t* ind,
                        Py_ssize_t nnz) noexcept nogil:
    """w += c x for a sparse row x (``data``, ``ind``, ``nnz`` as in csr.pxd). O(nnz);
    repeated indices are handled correctly."""
    cdef double cs = c / sv.scale, old, new, dsq = 0.0
    cdef Py_ssize_t k
    cdef index_t j
    for k in range(nnz):
        j = ind[k]
        old = sv.v[j]
        new = old + cs * data[k]
        sv.v[j] = new
        dsq += (new - old) * (new + old)
    sv.sqnorm_v += dsq


cdef inline double sv_dot(const ScaledVec* sv, const floating* data, const index_t* ind,
                          Py_ssize_t nnz) noexcept nogil:
    """x . w for a sparse row x. O(nnz)."""
    cdef double s = 0.0
    cdef Py_ssize_t k
    for k in range(nnz):
        s += data[k] * sv.v[ind[k]]
    return sv.scale * s


cdef inline double sv_sqnorm(const ScaledVec* sv) noexcept nogil:
    """||w||^2 from the running norm. O(1)."""
    if sv.sqnorm_v <= 0.0:
        return 0.0
    return (sv.scale * sv.scale) * sv.sqnorm_v


# ---------------------------------------------------------------------------------------
# 3. Per-feature timestamps for a constant affine drift


ctypedef struct DriftJIT:
    double* x             # x[j]: the iterate at step last[j]
    int64_t* last         # last[j]: step at which x[j] is current
    double* xsum          # xsum[j] += every iterate x_j(r), r = 1..last[j]; or NULL
    Py_ssize_t d
    double a              # one-step multiplier
    const double* p       # b_j = c1 p[j] + c2 q[j]; q may be NULL
    const double* q
    double c1
    double c2
    int64_t T             # longest gap t - last[j] the tables cover
    double* apow          # apow[s] = a^s                      s = 0..T
    double* S             # S[s]    = sum_{r<s} a^r
    double* U             # U[s]    = sum_{r=1..s} S[r]        (used only with xsum)


cdef inline Py_ssize_t drift_table_size(int64_t T) noexcept nogil:
    """Doubles needed by the tables of a DriftJIT that covers gaps up to T steps."""
    return <Py_ssize_t>(3 * (T + 1))


cdef inline void drift_coeffs(double log_a, int64_t s, double* a_s, double* S_s) noexcept nogil:
    """a^s and sum_{r<s} a^r = expm1(s log a) / expm1(log a) (s when a = 1), for a >= 0
    given as log_a = log(a) (-inf for a = 0). Pass log1p(-om) for a = 1 - om, or
    -log1p(q) for a = 1/(1 + q): both keep full relative accuracy when a is near 1."""
    if s <= 0:
        a_s[0] = 1.0
        S_s[0] = 0.0
    elif log_a == 0.0:
        a_s[0] = 1.0
        S_s[0] = <double>s
    else:
        a_s[0] = exp(<double>s * log_a)
        S_s[0] = expm1(<double>s * log_a) / expm1(log_a)


cdef inline void drift_table_fill(double* tab, int64_t T, double log_a) noexcept nogil:
    """Fill apow, S and U (layout [apow | S | U], each T+1 long) for a = exp(log_a). O(T)."""
    cdef double* apow = tab
    cdef double* S = tab + (T + 1)
    cdef double* U = tab + 2 * (T + 1)
    cdef double acc = 0.0, comp = 0.0, yk, tk     # compensated cumulative sum for U
    cdef int64_t s
    for s in range(T + 1):
        drift_coeffs(log_a, s, &apow[s], &S[s])
        yk = S[s] - comp
        tk = acc + yk
        comp = (tk - acc) - yk
        acc = tk
        U[s] = acc


cdef inline void drift_set_params(DriftJIT* st, double a, double log_a, const double* p,
                                  double c1, const double* q, double c2) noexcept nogil:
    """Set the recurrence x_j <- a x_j + c1 p[j] + c2 q[j] (q may be NULL; log_a = log(a),
    see drift_coeffs) and refill the tables (O(T)). Flush first when changing it mid-run.
    p and q are read at catch-up time: change p[j] only right after catching j up."""
    st.a = a
    st.p = p
    st.q = q
    st.c1 = c1
    st.c2 = c2
    drift_table_fill(st.apow, st.T, log_a)


cdef inline void drift_init(DriftJIT* st, double* x, int64_t* last, double* xsum,
                            Py_ssize_t d, double* tab, int64_t T, double a, double log_a,
                            const double* p, double c1, const double* q, double c2,
                            int64_t t0) noexcept nogil:
    """Attach caller-owned arrays (x holds x(t0); xsum or NULL; tab of drift_table_size(T)
    doubles), set the recurrence and start the clock: last[:] = t0. O(d + T). Any catch-up
    must satisfy 0 <= t - last[j] <= T: flush at least every T steps."""
    cdef Py_ssize_t j
    st.x = x
    st.last = last
    st.xsum = xsum
    st.d = d
    st.T = T
    st.apow = tab
    st.S = tab + (T + 1)
    st.U = tab + 2 * (T + 1)
    drift_set_params(st, a, log_a, p, c1, q, c2)
    for j in range(d):
        last[j] = t0


cdef inline double drift_b(const DriftJIT* st, Py_ssize_t j) noexcept nogil:
    if st.q != NULL:
        return st.c1 * st.p[j] + st.c2 * st.q[j]
    return st.c1 * st.p[j]


cdef inline double drift_value(const DriftJIT* st, Py_ssize_t j, int64_t t) noexcept nogil:
    """x_j at step t (last[j] <= t <= last[j] + T) without changing the state."""
    cdef int64_t s = t - st.last[j]
    if s <= 0:
        return st.x[j]
    return st.apow[s] * st.x[j] + st.S[s] * drift_b(st, j)


cdef inline void drift_catch_up(DriftJIT* st, Py_ssize_t j, int64_t t) noexcept nogil:
    """Apply the t - last[j] missed steps to x_j (x_j(t) = a^s x_j + S[s] b_j), and add
    the iterates x_j(last+1..t) = a S[s] x_j + U[s] b_j to xsum_j. O(1)."""
    cdef int64_t s = t - st.last[j]
    cdef double xj, b
    if s <= 0:
        return
    xj = st.x[j]
    b = drift_b(st, j)
    if st.xsum != NULL:
        st.xsum[j] += (st.a * st.S[s]) * xj + st.U[s] * b
    st.x[j] = st.apow[s] * xj + st.S[s] * b
    st.last[j] = t


cdef inline void drift_step(DriftJIT* st, Py_ssize_t j, int64_t t, double g) noexcept nogil:
    """The touched step t -> t+1 of a coordinate current at t: x_j <- a x_j + b_j + g (g is
    the sparse term, e.g. -alpha coef x_ij), xsum_j += the new x_j, last[j] = t+1."""
    cdef double xj = st.a * st.x[j] + drift_b(st, j) + g
    st.x[j] = xj
    if st.xsum != NULL:
        st.xsum[j] += xj
    st.last[j] = t + 1


cdef inline void drift_flush(DriftJIT* st, int64_t t) noexcept nogil:
    """Catch every coordinate up to t. O(d)."""
    cdef Py_ssize_t j
    for j in range(st.d):
        drift_catch_up(st, j, t)
