# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Primal baselines of the linear primal-dual family: proximal SVRG and Katyusha over CSR
rows, with stochastic steps that cost O(nnz of the row).

Problem: ``min_x (1/n) sum_i c_i phi(a_i.x; y_i) + psi(x)``, ``psi(x) = (lam/2)||x||^2 +
l1 ||x||_1``, with row weights c_i >= 0 (all 1 when ``P.weight`` is NULL: the weighted
branches test that pointer once per step or row, a well-predicted branch).
``f_i(x) = c_i phi(a_i.x; y_i)`` is the smooth part; psi enters through its proximal map
only. Both methods keep a snapshot ``xs`` and, for the whole epoch, the
snapshot's per-row derivatives ``gs_i = c_i phi'(a_i.xs)`` and its full loss gradient
``mu = (1/n) A^T gs``. A step on row i uses the variance-reduced gradient

    mu + (c_i phi'(a_i.x) - gs_i) a_i,

which equals the constant ``mu_j`` on every feature j outside the row. So between two
steps that touch feature j, its update is an autonomous recurrence with constant
coefficients, and the missed steps are applied in O(1) when j is next read (catch-up), or
at a flush (end of the epoch, every ``T`` steps, before the objective is evaluated).

The snapshot's pass over X gives, besides P(xs), gs and mu, a certified duality gap for
free: ``y_i = gs_i`` is a dual point with ``A^T y / n = mu`` (see ``_svrg.pxd``) whose
rows are at Fenchel-Young equality, so the gap is the regulariser's part alone, O(d)
(``_measures``).

Prox-SVRG (Xiao & Zhang 2014), step eta, one untouched step:

    x_j <- prox_{eta psi}(x_j - eta mu_j) = S(x_j - eta mu_j, eta l1) / (1 + eta lam).

On an affine piece of the soft threshold S (all of R when l1 = 0) k steps are
``a^k x + (sum_{r<k} a^r) f`` with ``a = 1/(1 + eta lam)``, ``f = -a eta c`` and
``c = mu_j`` (``mu_j +- l1`` on the pieces P+/P-); the pair (a^k, sum a^r) comes from a
table filled once per run by ``drift_coeffs`` of _core/lazy.pxd (DriftJIT's numbers). With
l1 > 0 the s missed steps walk at most three pieces of a monotone orbit, as in
``prox_pow``: the exit time from a piece is estimated in closed form and checked on the
table (``_exit_time``); the zero piece maps to 0 in one step.

Katyusha (Allen-Zhu 2017, strongly convex version), per feature three numbers (z, y, A)
with A the running weighted sum of the y iterates that defines the next snapshot. One
untouched step, with x = tau1 z + tau2 xs + beta y, beta = 1 - tau1 - tau2:

    z' = prox_{alpha psi}(z - alpha mu)                         (autonomous)
    option I:  y' = prox_{psi/(3L)}(x - mu/(3L))
    option II: y' = x + tau1 (z' - z) = tau1 z' + tau2 xs + beta y
    A' = v A + y',   v = 1/(1 + alpha sigma)

(A = sum_r v^(t-r) y_r, so the weights (1 + alpha sigma)^j of the paper's snapshot
average need no growing powers.) Inside one affine piece of z's prox map this is a
*linear* recurrence in (z, y, A) with a constant lower-triangular matrix M and a constant
per-feature input b = (f, b_y, b_y):

    option I  (l1 = 0): M = [[a, 0, 0], [g tau1, g beta, 0], [g tau1, g beta, v]]
                        f = -a alpha mu, b_y = g (tau2 xs - mu/(3L)),  g = 1/(1 + lam/(3L))
    option II:          M = [[a, 0, 0], [tau1 a, beta, 0], [tau1 a, beta, v]]
                        f = -a alpha c, b_y = tau1 f + tau2 xs   (c = mu, or mu +- l1 on
                        the pieces of the soft threshold; on its zero piece z = 0, f = 0)

with a = 1/(1 + alpha lam). M depends only on the run's constants, so the powers M^k and
the sums G_k = sum_{r<k} M^r are tabulated once per run for k <= T (11 numbers per k,
built in long double), and s missed steps are ``v <- M^s v + G_s b``: O(1). With l1 > 0,
option II splits the s steps where z leaves a piece of its monotone orbit (the same walk
as SVRG's). Option I with l1 > 0 soft-thresholds a combination of y and z: the pieces
depend on two coupled sequences, no closed form; its catch-up iterates the missed steps
one by one (exact, but O(gap) instead of O(1): a dense implementation's cost).

Layout and speed (measured on news20, 1.66M features, 410 nonzeros per row): the state of
a feature is one struct (SvrgCoord, 32 bytes; KatCoord, 48 bytes) so that a catch-up at a
random feature reads one or two cache lines; the steps for l1 = 0 are branch-free (a
table row of s = 0 is the identity), and the soft threshold of a touched step uses
copysign/fmax: the sign of x_j is random over a row, and mispredicted branches cost more
than the memory traffic (a factor 2.7 on SVRG's epoch with the state in cache).
"""
from cython.parallel cimport prange
from libc.stdint cimport int64_t
from libc.math cimport fabs, fmax, copysign, log, log1p, ceil, isfinite, NAN, INFINITY
from libc.stdlib cimport malloc, free
from libc.string cimport memset

import numpy as np

from dualsolve._core.blocks cimport (Blocks, BLOCKS_MIN_NNZ, blocks_init, blocks_own,
                                     blocks_free, blocks_ksum, blocks_add_copies)
from dualsolve._core.csr cimport floating, index_t, sparse_dot, sparse_axpy, prefetch_row
from dualsolve._core.hooks cimport python_hook
from dualsolve._core.ksum cimport KahanSum, ksum_new, ksum_add, ksum_value
from dualsolve._core.losses cimport Loss, loss_value, loss_deriv, loss_conj, make_loss
from dualsolve._core.rng cimport rng_state, rng_seed, rng_below
from dualsolve._core.lazy cimport drift_coeffs
from dualsolve._core.status cimport (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_DIVERGED,
                                     STATUS_NO_MEMORY, report_epoch, gap_certifies, gap_floor)


cdef enum:
    METHOD_SVRG = SVRG_METHOD_SVRG
    METHOD_KATYUSHA = SVRG_METHOD_KATYUSHA

# Longest run of steps between two flushes (bounds the catch-up tables: 11 doubles per
# step for Katyusha, 2 for SVRG). Epochs longer than this flush mid-epoch (O(n_features)).
cdef enum:
    TABLE_MAX = 65536


# ---------------------------------------------------------------------------------------
# Exit of an affine orbit from a piece of the soft threshold


cdef inline double _shrink(double w, double t) noexcept nogil:
    """Soft threshold S(w, t) = sign(w) max(|w| - t, 0) without branches (the sign of w is
    random across the features of a row: branches would be mispredicted half the time)."""
    return copysign(fmax(fabs(w) - t, 0.0), w)


cdef inline bint _inside(double xk, double sg, double shift, double t1) noexcept nogil:
    # the piece test of the dense step: S(x - shift, t1) is on the sg side
    return sg * (xk - shift) > t1


cdef inline int64_t _exit_time(double x, int64_t s, double f, double sg, double shift,
                               double t1, double c, double step, double lam,
                               const double* pw, const double* sm,
                               Py_ssize_t stride) noexcept nogil:
    """The first k in [1, s] whose iterate x_k = pw[k] x + sm[k] f (a^k and sum_{r<k} a^r
    from a table with ``stride`` doubles per k; a = 1/(1 + step lam), f = -a step c) is out
    of the piece of x_0 = x, or s if x_s is still in it. The orbit is monotone, so the
    closed-form estimate (that of ``prox_pow``) is checked by evaluation and corrected by a
    short walk, or a bisection if it were ever far off."""
    cdef double kr, r
    cdef int64_t k, lo, hi, mid
    cdef int walk
    if _inside(pw[s * stride] * x + sm[s * stride] * f, sg, shift, t1):
        return s
    # estimate: z_k - zf = a^k (z - zf) with zf = -c/lam, bnd = step c (lam > 0); else
    # z_k = z - k step c
    if lam > 0.0:
        r = c * (1.0 + step * lam) / (lam * x + c)
        kr = log(r) / -log1p(step * lam) if r > 0.0 else 1.0
    else:
        kr = (x - step * c) / (step * c)
    if not (kr < <double>s):                         # (NaN too)
        kr = <double>s
    if not (kr >= 1.0):
        kr = 1.0
    k = <int64_t>ceil(kr)
    lo = 0
    hi = s                                           # x_lo inside, x_hi out
    if _inside(pw[k * stride] * x + sm[k * stride] * f, sg, shift, t1):
        lo = k
        for walk in range(3):
            k += 1
            if not _inside(pw[k * stride] * x + sm[k * stride] * f, sg, shift, t1):
                return k
            lo = k
    else:
        if k == 1 or _inside(pw[(k - 1) * stride] * x + sm[(k - 1) * stride] * f, sg, shift,
                             t1):
            return k
        hi = k - 1
    while hi - lo > 1:
        mid = lo + (hi - lo) // 2
        if _inside(pw[mid * stride] * x + sm[mid * stride] * f, sg, shift, t1):
            lo = mid
        else:
            hi = mid
    return hi


# ---------------------------------------------------------------------------------------
# Katyusha's per-coordinate recurrence


ctypedef struct KatTab:
    # M^k (lower triangular over (z, y, A)) ...
    double p_zz
    double p_yz
    double p_yy
    double p_az
    double p_ay
    double p_aa
    # ... and G_k = sum_{r<k} M^r applied to b = (f, b_y, b_y): g_ab = G_ay + G_aa
    double g_zz
    double g_yz
    double g_yy
    double g_az
    double g_ab


ctypedef struct KatCoord:
    # one feature's state, together in memory: a step touches every field of the features
    # of its row, at random features (one or two cache lines instead of six)
    double z
    double y
    double acc            # A: sum over the epoch's steps r <= last of v^(last-r) y_r
    double mu             # snapshot gradient of the loss part
    double xs             # snapshot
    int64_t last          # the step at which z, y, acc are current


ctypedef struct Katyusha:
    KatCoord* c
    Py_ssize_t d
    double tau1
    double tau2
    double beta           # 1 - tau1 - tau2
    double alpha          # z step
    double ystep          # 1/(3L): option I's y step
    double lam
    double l1
    double a              # 1/(1 + alpha lam)
    double gy             # 1/(1 + ystep lam)
    double v              # 1/(1 + alpha sigma), sigma = lam
    int option            # 1 or 2
    bint direct           # option I with l1 > 0: catch up step by step
    const KatTab* tab     # k = 0..T


cdef void _kat_fill_tables(KatTab* tab, int64_t T, double a, double myz, double p,
                           double v) noexcept nogil:
    """M = [[a, 0, 0], [myz, p, 0], [myz, p, v]]: tab[k] = (M^k, G_k), k = 0..T. Long double
    recurrences: all entries are sums of products of non-negative numbers, so the relative
    error stays near k * 2^-64."""
    cdef long double Pzz = 1.0, Pyz = 0.0, Pyy = 1.0, Paz = 0.0, Pay = 0.0, Paa = 1.0
    cdef long double Gzz = 0.0, Gyz = 0.0, Gyy = 0.0, Gaz = 0.0, Gay = 0.0, Gaa = 0.0
    cdef long double nyz, nyy
    cdef long double la = a, lm = myz, lp = p, lv = v
    cdef int64_t k
    for k in range(T + 1):
        tab[k].p_zz = <double>Pzz
        tab[k].p_yz = <double>Pyz
        tab[k].p_yy = <double>Pyy
        tab[k].p_az = <double>Paz
        tab[k].p_ay = <double>Pay
        tab[k].p_aa = <double>Paa
        tab[k].g_zz = <double>Gzz
        tab[k].g_yz = <double>Gyz
        tab[k].g_yy = <double>Gyy
        tab[k].g_az = <double>Gaz
        tab[k].g_ab = <double>(Gay + Gaa)
        Gzz += Pzz
        Gyz += Pyz
        Gyy += Pyy
        Gaz += Paz
        Gay += Pay
        Gaa += Paa
        # M^(k+1) = M M^k
        nyz = lm * Pzz + lp * Pyz
        nyy = lp * Pyy
        Paz = nyz + lv * Paz
        Pay = nyy + lv * Pay
        Paa = lv * Paa
        Pzz = la * Pzz
        Pyz = nyz
        Pyy = nyy


cdef enum:
    KAT_TAB_WIDTH = 11     # doubles per KatTab


cdef inline void _kat_apply(const KatTab* t, double* z, double* y, double* A, double f,
                            double b) noexcept nogil:
    """(z, y, A) <- M^k (z, y, A) + G_k (f, b, b) for the table row t of k."""
    cdef double z0 = z[0], y0 = y[0], A0 = A[0]
    z[0] = t.p_zz * z0 + t.g_zz * f
    y[0] = t.p_yz * z0 + t.p_yy * y0 + t.g_yz * f + t.g_yy * b
    A[0] = t.p_az * z0 + t.p_ay * y0 + t.p_aa * A0 + t.g_az * f + t.g_ab * b


cdef inline void _kat_step(const Katyusha* K, double* z, double* y, double* A, double xs,
                           double grad) noexcept nogil:
    """One step of the dense recurrence on one coordinate, with gradient estimate ``grad``
    (mu_j off the row; mu_j + (phi'_i(a_i.x) - gs_i) a_ij on it)."""
    cdef double x = K.tau1 * z[0] + K.tau2 * xs + K.beta * y[0]
    cdef double zn, yn
    if K.l1 == 0.0:
        # branch-free: the prox of (lam/2)||.||^2 is a scaling
        zn = K.a * (z[0] - K.alpha * grad)
        if K.option == 1:
            yn = K.gy * (x - K.ystep * grad)
        else:
            yn = x + K.tau1 * (zn - z[0])
    else:
        zn = K.a * _shrink(z[0] - K.alpha * grad, K.alpha * K.l1)
        if K.option == 1:
            yn = K.gy * _shrink(x - K.ystep * grad, K.ystep * K.l1)
        else:
            yn = x + K.tau1 * (zn - z[0])
    z[0] = zn
    y[0] = yn
    A[0] = K.v * A[0] + yn


cdef inline void _kat_advance(const Katyusha* K, const KatCoord* cj, int64_t s, double* z,
                              double* y, double* A) noexcept nogil:
    """Apply s >= 0 untouched steps to (z, y, A) of feature cj (s <= T unless direct)."""
    cdef double mu, xs, f, w0, t1, sg, c
    cdef int64_t k
    cdef const KatTab* tab = K.tab
    if s <= 0:
        return
    mu = cj.mu
    xs = cj.xs
    if K.direct:
        for k in range(s):
            _kat_step(K, z, y, A, xs, mu)
        return
    if K.l1 == 0.0:
        f = -K.a * K.alpha * mu
        if K.option == 1:
            _kat_apply(&tab[s], z, y, A, f, K.gy * (K.tau2 * xs - K.ystep * mu))
        else:
            _kat_apply(&tab[s], z, y, A, f, K.tau1 * f + K.tau2 * xs)
        return
    # option II with l1 > 0: z's map is S(z - alpha mu, alpha l1)/(1 + alpha lam); split the
    # s steps where z's (monotone) orbit leaves a piece. The piece tests are those of the
    # dense step, on w = z - alpha mu against +-alpha l1.
    t1 = K.alpha * K.l1
    # common case first (see _svrg_value): z stays in its affine piece for all s steps
    w0 = z[0] - K.alpha * mu
    sg = copysign(1.0, w0)
    f = -K.a * K.alpha * (mu + sg * K.l1)
    if fabs(w0) > t1 and _inside(tab[s].p_zz * z[0] + tab[s].g_zz * f, sg, K.alpha * mu, t1):
        _kat_apply(&tab[s], z, y, A, f, K.tau1 * f + K.tau2 * xs)
        return
    while s > 0:
        w0 = z[0] - K.alpha * mu
        if w0 > t1:
            sg = 1.0
            c = mu + K.l1
        elif w0 < -t1:
            sg = -1.0
            c = mu - K.l1
        else:
            # zero piece: z -> 0 in one step (y sees z' = 0); it stays at 0 iff 0 is a
            # fixed point of the map (|alpha mu| <= alpha l1)
            k = s if fabs(K.alpha * mu) <= t1 else 1
            z[0] = 0.0
            _kat_apply(&tab[k], z, y, A, 0.0, K.tau2 * xs)
            s -= k
            continue
        f = -K.a * K.alpha * c
        k = s
        # The orbit can leave the piece only if its drift points out (sg c > 0; otherwise
        # the piece holds its fixed point). Exit = first k with z_k out of the piece.
        if sg * c > 0.0:
            k = _exit_time(z[0], s, f, sg, K.alpha * mu, t1, c, K.alpha, K.lam,
                           &tab[0].p_zz, &tab[0].g_zz, KAT_TAB_WIDTH)
        _kat_apply(&tab[k], z, y, A, f, K.tau1 * f + K.tau2 * xs)
        s -= k


cdef inline void _kat_catch_up(const Katyusha* K, KatCoord* cj, int64_t t) noexcept nogil:
    cdef int64_t s = t - cj.last
    cdef double f
    if K.l1 == 0.0:
        # branch-free (the table row of s = 0 is the identity); as in _kat_advance
        f = -K.a * K.alpha * cj.mu
        if K.option == 1:
            _kat_apply(&K.tab[s], &cj.z, &cj.y, &cj.acc, f,
                       K.gy * (K.tau2 * cj.xs - K.ystep * cj.mu))
        else:
            _kat_apply(&K.tab[s], &cj.z, &cj.y, &cj.acc, f, K.tau1 * f + K.tau2 * cj.xs)
        cj.last = t
        return
    if s <= 0:
        return
    _kat_advance(K, cj, s, &cj.z, &cj.y, &cj.acc)
    cj.last = t


cdef void _kat_flush(Katyusha* K, int64_t t) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(K.d):
        _kat_catch_up(K, &K.c[j], t)


# ---------------------------------------------------------------------------------------
# Prox-SVRG's per-coordinate recurrence


ctypedef struct SvrgCoord:
    double x
    double mu             # snapshot gradient of the loss part
    int64_t last          # the step at which x is current
    int64_t pad_          # 32 bytes: two features per cache line, none straddles two


ctypedef struct Svrg:
    SvrgCoord* c
    Py_ssize_t d
    double eta
    double lam
    double l1
    double a              # 1/(1 + eta lam)
    const double* tab     # (a^s, sum_{r<s} a^r) for s = 0..T, interleaved


cdef inline double _svrg_value(const Svrg* V, const SvrgCoord* cj, int64_t s) noexcept nogil:
    """x_j after s >= 0 untouched steps x <- S(x - eta mu_j, eta l1) / (1 + eta lam)
    (s <= T). On an affine piece (all of R when l1 = 0) k steps are x_k = a^k x + S_k f,
    f = -a eta c with c = mu_j (+-l1 on the pieces of the soft threshold), from the table;
    with l1 > 0 the s steps are split where the (monotone) orbit leaves a piece
    (``_exit_time``; the walk of ``prox_pow``, at most three pieces, with table lookups
    instead of most of its exp/log calls)."""
    cdef const double* tab = V.tab
    cdef double x = cj.x, mu = cj.mu, t1, w0, sg, c, f, xk
    cdef int64_t k
    if s <= 0:
        return x
    if V.l1 == 0.0:
        return tab[2 * s] * x - tab[2 * s + 1] * (V.a * V.eta * mu)
    t1 = V.eta * V.l1
    # common case first, with few branches: the orbit stays in the affine piece of x (both
    # ends in it: the orbit is monotone and the piece a half-line)
    w0 = x - V.eta * mu
    sg = copysign(1.0, w0)
    f = -V.a * V.eta * (mu + sg * V.l1)
    xk = tab[2 * s] * x + tab[2 * s + 1] * f
    if fabs(w0) > t1 and _inside(xk, sg, V.eta * mu, t1):
        return xk
    while s > 0:
        w0 = x - V.eta * mu
        if w0 > t1:
            sg = 1.0
            c = mu + V.l1
        elif w0 < -t1:
            sg = -1.0
            c = mu - V.l1
        else:
            x = 0.0                                  # zero piece: one step to 0, and
            if fabs(V.eta * mu) <= t1:               # 0 is a fixed point
                return 0.0
            s -= 1
            continue
        f = -V.a * V.eta * c
        k = s
        if sg * c > 0.0:                             # drift out of the piece: exit time
            k = _exit_time(x, s, f, sg, V.eta * mu, t1, c, V.eta, V.lam, tab, tab + 1, 2)
        x = tab[2 * k] * x + tab[2 * k + 1] * f
        s -= k
    return x


cdef inline void _svrg_catch_up(const Svrg* V, SvrgCoord* cj, int64_t t) noexcept nogil:
    cdef int64_t s = t - cj.last
    if s > 0:
        cj.x = _svrg_value(V, cj, s)
        cj.last = t


cdef void _svrg_flush(Svrg* V, int64_t t) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(V.d):
        _svrg_catch_up(V, &V.c[j], t)


# ---------------------------------------------------------------------------------------
# one solver state for both methods


ctypedef struct VRState:
    int method
    Py_ssize_t n
    Py_ssize_t d
    const double* y       # labels / targets
    const double* w       # NULL, or the row weights c_i (the loss part sums c_i phi_i)
    Loss loss
    Svrg V
    Katyusha K
    double* gs            # gs_i = c_i phi'(a_i.xs; y_i)
    int64_t t             # step clock (never reset; catch-ups span at most T steps)
    int64_t T             # flush at least every T steps
    int64_t since_flush
    Py_ssize_t next_i     # the next row, drawn one step ahead (its row is prefetched);
                          # rows are used in the order they are drawn
    double* trace         # NULL, or where the next step's iterate is recorded (tests)
    Py_ssize_t trace_stride
    rng_state rng


cdef inline void _flush(VRState* S) noexcept nogil:
    if S.method == METHOD_KATYUSHA:
        _kat_flush(&S.K, S.t)
    else:
        _svrg_flush(&S.V, S.t)
    S.since_flush = 0


cdef inline void _svrg_step(const floating* data, const index_t* ind, Py_ssize_t nnz,
                            VRState* S, Py_ssize_t i) noexcept nogil:
    cdef Svrg* V = &S.V
    cdef SvrgCoord* cj
    cdef Py_ssize_t q
    cdef double dot = 0.0, g
    cdef int64_t t = S.t
    cdef const double* tab = V.tab
    cdef double ae = V.a * V.eta
    cdef int64_t s
    if V.l1 == 0.0:
        # branch-free: the table row of s = 0 is (1, 0), so a current feature is unchanged
        for q in range(nnz):
            cj = &V.c[ind[q]]
            s = t - cj.last
            cj.x = tab[2 * s] * cj.x - tab[2 * s + 1] * (ae * cj.mu)
            dot += data[q] * cj.x
        g = loss_deriv(&S.loss, dot, S.y[i])
        if S.w != NULL:
            g *= S.w[i]
        g -= S.gs[i]
        for q in range(nnz):
            cj = &V.c[ind[q]]
            cj.x = V.a * cj.x - ae * (cj.mu + g * data[q])
            cj.last = t + 1
        return
    for q in range(nnz):
        cj = &V.c[ind[q]]
        _svrg_catch_up(V, cj, t)
        dot += data[q] * cj.x
    g = loss_deriv(&S.loss, dot, S.y[i])
    if S.w != NULL:
        g *= S.w[i]
    g -= S.gs[i]
    for q in range(nnz):
        cj = &V.c[ind[q]]
        cj.x = V.a * _shrink(cj.x - V.eta * (cj.mu + g * data[q]), V.eta * V.l1)
        cj.last = t + 1


cdef inline void _kat_row_step(const floating* data, const index_t* ind, Py_ssize_t nnz,
                               VRState* S, Py_ssize_t i) noexcept nogil:
    cdef Katyusha* K = &S.K
    cdef KatCoord* cj
    cdef Py_ssize_t q
    cdef double dot = 0.0, g
    cdef int64_t t = S.t
    for q in range(nnz):
        cj = &K.c[ind[q]]
        _kat_catch_up(K, cj, t)
        dot += data[q] * (K.tau1 * cj.z + K.tau2 * cj.xs + K.beta * cj.y)
    g = loss_deriv(&S.loss, dot, S.y[i])
    if S.w != NULL:
        g *= S.w[i]
    g -= S.gs[i]
    for q in range(nnz):
        cj = &K.c[ind[q]]
        _kat_step(K, &cj.z, &cj.y, &cj.acc, cj.xs, cj.mu + g * data[q])
        cj.last = t + 1


cdef void _record(VRState* S, double* out) noexcept nogil:
    """The materialised iterate at the current step, state unchanged (tests): x (SVRG) or
    z then y (Katyusha)."""
    cdef Py_ssize_t j, d = S.d
    cdef double z, y, A
    for j in range(d):
        if S.method == METHOD_KATYUSHA:
            z = S.K.c[j].z
            y = S.K.c[j].y
            A = S.K.c[j].acc
            _kat_advance(&S.K, &S.K.c[j], S.t - S.K.c[j].last, &z, &y, &A)
            out[j] = z
            out[d + j] = y
        else:
            out[j] = _svrg_value(&S.V, &S.V.c[j], S.t - S.V.c[j].last)


cdef void _steps(const floating* data, const index_t* indices, const index_t* indptr,
                 VRState* S, Py_ssize_t m) noexcept nogil:
    """m stochastic steps (a flush every T steps)."""
    cdef Py_ssize_t r, i, nxt, start
    for r in range(m):
        if S.since_flush >= S.T:
            _flush(S)
        i = S.next_i
        nxt = <Py_ssize_t>rng_below(&S.rng, <unsigned long long>S.n)
        S.next_i = nxt
        prefetch_row(data + indptr[nxt], indices + indptr[nxt], indptr[nxt + 1] - indptr[nxt])
        start = indptr[i]
        if S.method == METHOD_KATYUSHA:
            _kat_row_step(data + start, indices + start, indptr[i + 1] - start, S, i)
        else:
            _svrg_step(data + start, indices + start, indptr[i + 1] - start, S, i)
        S.t += 1
        S.since_flush += 1
        if S.trace != NULL:
            _record(S, S.trace)
            S.trace += S.trace_stride


cdef int _epoch(const floating* data, const index_t* indices, const index_t* indptr,
                VRState* S, Py_ssize_t m, Py_ssize_t chunk, epoch_hook hook,
                void* ctx) noexcept nogil:
    """m stochastic steps in chunks of ``chunk`` with a poll of the hook (epoch -1: Ctrl-C)
    between two, then a flush (every coordinate current at S.t). Returns 0, or the status
    the hook asked to stop with (the epoch is cut short, without the flush)."""
    cdef Py_ssize_t done = 0, count
    cdef int stop
    while done < m:
        count = m - done
        if count > chunk:
            count = chunk
        _steps(data, indices, indptr, S, count)
        done += count
        if done < m and hook != NULL:
            stop = hook(ctx, -1, NULL)
            if stop != 0:
                return stop
    _flush(S)
    return 0


cdef void _snapshot(const floating* data, const index_t* indices, const index_t* indptr,
                    VRState* S, const Blocks* team, const double* x, double* mu,
                    KahanSum* loss_sum) noexcept nogil:
    """One pass over X at the snapshot x: gs_i = c_i phi'(a_i.x), mu = (1/n) sum_i gs_i a_i
    and loss_sum = sum_i c_i phi(a_i.x) (compensated; c_i = 1 without weights, and a row of
    weight 0 is skipped: gs_i = 0). In the team's blocks of rows, block b >= 1 summing
    into its own mu; then mu adds them by ranges of features, block by block."""
    cdef Py_ssize_t b
    for b in prange(team.size, num_threads=team.size, schedule="static", chunksize=1):
        team.sums[b] = ksum_new()
        _snapshot_rows(data, indices, indptr, S, x, mu if b == 0 else blocks_own(team, b),
                       team.rows[b], team.rows[b + 1], &team.sums[b])
    loss_sum[0] = blocks_ksum(team, 1, 0)
    blocks_add_copies(team, mu, 1, 0)


cdef void _snapshot_rows(const floating* data, const index_t* indices, const index_t* indptr,
                         VRState* S, const double* x, double* mu, Py_ssize_t lo,
                         Py_ssize_t hi, KahanSum* loss_sum) noexcept nogil:
    """_snapshot over rows lo .. hi - 1, into mu (zeroed first)."""
    cdef Py_ssize_t i, start, nnz
    cdef double s, g, c, scale = 1.0 / S.n
    memset(mu, 0, S.d * sizeof(double))
    for i in range(lo, hi):
        start = indptr[i]
        nnz = indptr[i + 1] - start
        if S.w != NULL:
            c = S.w[i]
            if c == 0.0:
                S.gs[i] = 0.0
                continue
            s = sparse_dot(data + start, indices + start, nnz, x)
            ksum_add(loss_sum, c * loss_value(&S.loss, s, S.y[i]))
            g = c * loss_deriv(&S.loss, s, S.y[i])
        else:
            s = sparse_dot(data + start, indices + start, nnz, x)
            ksum_add(loss_sum, loss_value(&S.loss, s, S.y[i]))
            g = loss_deriv(&S.loss, s, S.y[i])
        S.gs[i] = g
        if g != 0.0:
            sparse_axpy(g * scale, data + start, indices + start, nnz, mu)


cdef void _measures(VRState* S, const double* x, const double* mu, const KahanSum* loss_sum,
                    double lam, double l1, double* out) noexcept nogil:
    """out = (primal, dual, gap, measure) at the snapshot x from its pass (_snapshot).

    lam > 0: with y_i = c_i phi'(a_i.x) every row's Fenchel-Young gap phi(s_i) + phi*(y_i) -
    s_i y_i is 0, so P(x) - D(y) is the regulariser's alone, g(x) + g*(-mu) + mu.x, a sum
    over the features of non-negative terms: with v = -mu_j and xh = S(v, l1) / lam (the
    maximiser in g*(v)), ``lam/2 (x_j - xh)^2 + l1 (|x_j| - sigma x_j)``, sigma = sign(v)
    if |v| > l1 else v / l1 (for l1 = 0: ``(lam x_j + mu_j)^2 / (2 lam)``, the gap is
    ``||grad P(x)||^2 / (2 lam)``). O(d), no conjugate, and free of the cancellation of
    two large sums. lam = 0, l1 > 0: the dual scaled into the domain of g* (one O(n) pass
    of conjugates). lam = l1 = 0: the measure is ||mu||^2."""
    cdef Py_ssize_t i, j
    cdef double ls = ksum_value(loss_sum), inv_n = 1.0 / S.n, reg, w, umax = 0.0, sc
    cdef double v, xh, sig, h
    cdef KahanSum sxx = ksum_new(), sx1 = ksum_new(), sg = ksum_new(), cs = ksum_new()
    for j in range(S.d):
        ksum_add(&sxx, x[j] * x[j])
        ksum_add(&sx1, fabs(x[j]))
        if fabs(mu[j]) > umax:
            umax = fabs(mu[j])
        if lam > 0.0:
            v = -mu[j]
            if l1 > 0.0:
                xh = _shrink(v, l1) / lam
                sig = copysign(1.0, v) if fabs(v) > l1 else v / l1
                h = 0.5 * lam * (x[j] - xh) * (x[j] - xh) + l1 * (fabs(x[j]) - sig * x[j])
            else:
                w = lam * x[j] + mu[j]
                h = w * w / (2.0 * lam)
            ksum_add(&sg, h)
        else:
            ksum_add(&sg, mu[j] * mu[j])
    reg = 0.5 * lam * ksum_value(&sxx) + l1 * ksum_value(&sx1)
    out[0] = ls * inv_n + reg
    if lam > 0.0:
        out[2] = ksum_value(&sg)
        out[1] = out[0] - out[2]
        out[3] = out[2]
    elif l1 > 0.0:
        # g* = indicator{||w||_inf <= l1}: scale the dual into its domain (s y stays in the
        # loss's dual domain, an interval holding 0)
        sc = 1.0 if umax <= l1 else l1 / umax
        for i in range(S.n):
            if S.w == NULL:
                ksum_add(&cs, loss_conj(&S.loss, -sc * S.gs[i], S.y[i]))
            elif S.w[i] > 0.0:                      # c_i phi*(s y_i / c_i): c_i times the
                ksum_add(&cs, S.w[i] * loss_conj(&S.loss, -sc * S.gs[i] / S.w[i], S.y[i]))
        out[1] = -ksum_value(&cs) * inv_n
        out[2] = (ls + ksum_value(&cs)) * inv_n + reg
        out[3] = out[2]
    else:
        # g* = indicator{0}: no dual unless mu = 0; the measure is ||grad f(x)||^2
        out[3] = ksum_value(&sg)
        out[1] = -INFINITY if umax > 0.0 else out[0]
        out[2] = INFINITY if umax > 0.0 else 0.0


cdef void _new_snapshot(VRState* S, double* xs, double inv_norm) noexcept nogil:
    """After a flush: the snapshot xs (contiguous, for the passes over X). SVRG: the last
    iterate. Katyusha: A * inv_norm (the paper's weighted average of the epoch's y), and
    A = 0 for the next epoch."""
    cdef Py_ssize_t j
    if S.method == METHOD_KATYUSHA:
        for j in range(S.d):
            xs[j] = S.K.c[j].acc * inv_norm
            S.K.c[j].xs = xs[j]
            S.K.c[j].acc = 0.0
    else:
        for j in range(S.d):
            xs[j] = S.V.c[j].x


cdef void _set_mu(VRState* S, const double* mu) noexcept nogil:
    """Hand the new snapshot gradient to the per-feature state (every feature current)."""
    cdef Py_ssize_t j
    if S.method == METHOD_KATYUSHA:
        for j in range(S.d):
            S.K.c[j].mu = mu[j]
    else:
        for j in range(S.d):
            S.V.c[j].mu = mu[j]


# ---------------------------------------------------------------------------------------
# the engine


cdef SvrgOptions svrg_default_options() noexcept nogil:
    cdef SvrgOptions o
    o.tol = 1e-6
    o.max_epochs = 1000
    o.seed = 0
    o.table_max = TABLE_MAX
    o.n_threads = 1
    return o


cdef void svrg_problem_init(SvrgProblem* P, Py_ssize_t n, Py_ssize_t d, const double* b,
                            Loss loss, double lam, double l1, int method, double step,
                            Py_ssize_t m, double tau1, int option, double* x) noexcept nogil:
    P.n = n
    P.d = d
    P.b = b
    P.loss = loss
    P.lam = lam
    P.l1 = l1
    P.method = method
    P.step = step
    P.m = m
    P.tau1 = tau1
    P.option = option
    P.x = x
    P.trace = NULL
    P.weight = NULL


cdef void _setup(VRState* S, const SvrgProblem* P, int64_t T, double* work, double* coords,
                double* tables, double* inv_norm) noexcept nogil:
    """The per-method state over caller-owned buffers (coords: d * width doubles, tables:
    see _table_doubles), from the start P.x."""
    cdef Py_ssize_t j, d = P.d
    cdef double step = P.step, lam = P.lam, vm = 0.0
    cdef int64_t k
    cdef KatTab* ktab
    memset(S, 0, sizeof(VRState))
    S.method = P.method
    S.n = P.n
    S.d = d
    S.y = P.b
    S.w = P.weight
    S.loss = P.loss
    S.gs = work
    S.T = T
    S.trace = P.trace
    S.trace_stride = (2 if P.method == METHOD_KATYUSHA else 1) * d
    inv_norm[0] = 1.0
    if P.method == METHOD_SVRG:
        S.V.c = <SvrgCoord*>coords
        S.V.d = d
        S.V.eta = step
        S.V.lam = lam
        S.V.l1 = P.l1
        S.V.a = 1.0 / (1.0 + step * lam)
        for j in range(d):
            S.V.c[j].x = P.x[j]
            S.V.c[j].mu = 0.0
            S.V.c[j].last = 0
        for k in range(T + 1):
            drift_coeffs(-log1p(step * lam), k, &tables[2 * k], &tables[2 * k + 1])
        S.V.tab = tables
        return
    S.K.c = <KatCoord*>coords
    S.K.d = d
    for j in range(d):
        S.K.c[j].z = P.x[j]
        S.K.c[j].y = P.x[j]
        S.K.c[j].xs = P.x[j]
        S.K.c[j].acc = 0.0
        S.K.c[j].mu = 0.0
        S.K.c[j].last = 0
    S.K.tau1 = P.tau1
    S.K.tau2 = 0.5
    S.K.beta = 1.0 - P.tau1 - 0.5
    S.K.alpha = step / P.tau1
    S.K.ystep = step
    S.K.lam = lam
    S.K.l1 = P.l1
    S.K.a = 1.0 / (1.0 + S.K.alpha * lam)
    S.K.gy = 1.0 / (1.0 + step * lam)
    S.K.v = 1.0 / (1.0 + S.K.alpha * lam)
    S.K.option = P.option
    S.K.direct = P.option == 1 and P.l1 > 0.0
    if not S.K.direct:
        ktab = <KatTab*>tables
        if P.option == 1:
            _kat_fill_tables(ktab, T, S.K.a, P.tau1 / (1.0 + step * lam),
                             S.K.beta / (1.0 + step * lam), S.K.v)
        else:
            _kat_fill_tables(ktab, T, S.K.a, P.tau1 * S.K.a, S.K.beta, S.K.v)
        S.K.tab = ktab
    # snapshot normalisation: 1 / sum_{k<m} v^k
    drift_coeffs(-log1p(S.K.alpha * lam), P.m, &vm, inv_norm)
    inv_norm[0] = 1.0 / inv_norm[0]


cdef inline Py_ssize_t _table_doubles(int method, int64_t T) noexcept nogil:
    if method == METHOD_KATYUSHA:
        return <Py_ssize_t>((T + 1) * KAT_TAB_WIDTH)
    return <Py_ssize_t>(2 * (T + 1))


cdef inline int _epoch_status(const double* out, int kind, double tol, double floor,
                              double target, double passes, Py_ssize_t epoch, double* values,
                              epoch_hook hook, void* ctx) noexcept nogil:
    """After a snapshot's measures ``out`` (primal, dual, gap, measure): diverged,
    converged or go on, then the epoch's report to the hook. Converged: a gap measure by
    status.pxd's ``gap_certifies`` (measure <= tol * (primal - measure), or ``floor``); the
    gradient measure (lam = l1 = 0, no certificate) by ``measure <= target``."""
    cdef int status = STATUS_MAX_EPOCHS
    if not isfinite(out[0]):
        status = STATUS_DIVERGED
    elif (out[3] <= target if kind == SVRG_MEASURE_GRAD
          else gap_certifies(out[3], out[0] - out[3], tol, floor)):
        status = STATUS_CONVERGED
    values[0], values[1], values[2], values[3] = out[0], out[1], out[2], out[3]
    values[4] = passes
    return report_epoch(hook, ctx, epoch, values, status)


cdef int svrg_run(const floating* data, const index_t* indices, const index_t* indptr,
                  SvrgProblem* P, const SvrgOptions* opt, SvrgResult* res,
                  epoch_hook hook, void* ctx) noexcept nogil:
    """Run to convergence (``_epoch_status``: a gap measure by ``gap_certifies``, the gradient
    measure to ``<= tol * scale``; never for tol = 0) or ``max_epochs`` from P.x; P.x
    receives the last snapshot. Returns ``res.status``."""
    cdef Py_ssize_t i, n = P.n, d = P.d, m = P.m, epoch = 0, chunk
    cdef Py_ssize_t dd = d if d > 0 else 1
    cdef int64_t T
    cdef int stop, kind
    cdef double inv_norm = 1.0, target, floor, p0, row_nnz, g0
    cdef double out[4]
    cdef double values[SVRG_HOOK_VALUES]
    cdef KahanSum sums[1]
    cdef VRState S
    cdef Py_ssize_t width = (sizeof(KatCoord) if P.method == METHOD_KATYUSHA
                             else sizeof(SvrgCoord)) // sizeof(double)
    cdef double* gs = NULL
    cdef double* mu = NULL
    cdef double* coords = NULL
    cdef double* tables = NULL
    cdef Blocks team
    T = m if m < opt.table_max else opt.table_max
    if T < 1:
        T = 1
    res.n_epochs = 0
    res.primal = res.dual = res.gap = res.measure = NAN
    res.passes = 0.0
    kind = (SVRG_MEASURE_GAP if P.lam > 0.0 else
            (SVRG_MEASURE_RESCALED_GAP if P.l1 > 0.0 else SVRG_MEASURE_GRAD))
    res.measure_kind = kind
    gs = <double*>malloc((n if n > 0 else 1) * sizeof(double))
    mu = <double*>malloc(dd * sizeof(double))
    coords = <double*>malloc(dd * width * sizeof(double))
    tables = <double*>malloc(_table_doubles(P.method, T) * sizeof(double))
    if (gs == NULL or mu == NULL or coords == NULL or tables == NULL
            or not blocks_init(&team, indptr, n, dd, opt.n_threads, BLOCKS_MIN_NNZ, dd, 1)):
        free(gs)
        free(mu)
        free(coords)
        free(tables)
        res.status = STATUS_NO_MEMORY
        return res.status
    _setup(&S, P, T, gs, coords, tables, &inv_norm)
    rng_seed(&S.rng, opt.seed)
    S.next_i = <Py_ssize_t>rng_below(&S.rng, <unsigned long long>n)
    # the scales: P(0), and for the gradient measure ||grad f(0)||^2 (one pass over X)
    sums[0] = ksum_new()
    for i in range(n):
        ksum_add(&sums[0], loss_value(&S.loss, 0.0, P.b[i]) *
                 (P.weight[i] if P.weight != NULL else 1.0))
    p0 = ksum_value(&sums[0]) / n
    res.p0 = p0
    res.scale = p0
    if kind == SVRG_MEASURE_GRAD:
        memset(mu, 0, d * sizeof(double))
        for i in range(n):
            g0 = loss_deriv(&S.loss, 0.0, P.b[i])
            if P.weight != NULL:
                g0 *= P.weight[i]
            if g0 != 0.0:
                sparse_axpy(g0 / n, data + indptr[i], indices + indptr[i],
                            indptr[i + 1] - indptr[i], mu)
        sums[0] = ksum_new()
        for i in range(d):
            ksum_add(&sums[0], mu[i] * mu[i])
        res.scale = ksum_value(&sums[0])
    # tol = 0 runs the whole budget: a measure that rounds to <= 0 certifies nothing
    target = opt.tol * res.scale if opt.tol > 0.0 else -INFINITY     # gradient measure
    floor = gap_floor(p0)                                            # gap measures
    # steps per poll of the hook: about SVRG_POLL_WORK nonzeros
    row_nnz = <double>indptr[n] / <double>n + 1.0
    chunk = <Py_ssize_t>(<double>SVRG_POLL_WORK / row_nnz)
    if chunk < 1:
        chunk = 1

    res.status = STATUS_MAX_EPOCHS
    _snapshot(data, indices, indptr, &S, &team, P.x, mu, sums)
    _measures(&S, P.x, mu, sums, P.lam, P.l1, out)
    res.passes = 1.0
    res.status = _epoch_status(out, kind, opt.tol, floor, target, res.passes, 0, values,
                               hook, ctx)
    while res.status == STATUS_MAX_EPOCHS and epoch < opt.max_epochs:
        _set_mu(&S, mu)
        stop = _epoch(data, indices, indptr, &S, m, chunk, hook, ctx)
        if stop != 0:
            res.status = stop             # mid-epoch (Ctrl-C): x stays the last snapshot
            break
        epoch += 1
        _new_snapshot(&S, P.x, inv_norm)
        _snapshot(data, indices, indptr, &S, &team, P.x, mu, sums)
        _measures(&S, P.x, mu, sums, P.lam, P.l1, out)
        res.passes += 1.0 + <double>m / n
        res.status = _epoch_status(out, kind, opt.tol, floor, target, res.passes, epoch,
                                   values, hook, ctx)
    res.n_epochs = epoch
    res.primal = out[0]
    res.dual = out[1]
    res.gap = out[2]
    res.measure = out[3]
    free(gs)
    free(mu)
    free(coords)
    free(tables)
    blocks_free(&team)
    return res.status


# ---------------------------------------------------------------------------------------
# the engine's Python entry (baselines.py): history, verbose lines, callback and Ctrl-C
# through the monitor ``mon`` (dualsolve._monitor.EpochMonitor)


def solve(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
          Py_ssize_t n_features, const double[::1] y, str loss, double param, double lam,
          double l1, double[::1] x, int method, double step, Py_ssize_t steps_per_epoch,
          double tau1, int option, double tol, Py_ssize_t max_epochs,
          unsigned long long seed, mon, trace=None, Py_ssize_t table_max=TABLE_MAX,
          const double[::1] weight=None, int n_threads=1):
    """Run svrg_run (prox-SVRG: method 0, Katyusha: method 1) on validated arrays,
    reporting every epoch to ``mon`` (which must expect SVRG_HOOK_VALUES values).

    x holds the starting point and receives the returned iterate (the last snapshot).
    SVRG: ``step`` = eta. Katyusha: ``step`` = 1/(3L), alpha = step / tau1, tau2 = 1/2,
    sigma = lam, ``option`` 1 or 2 (the paper's y update I or II).
    ``trace``: None, or a float64 array of max_epochs * steps_per_epoch * k * n_features
    entries (k = 1 for SVRG: x; k = 2 for Katyusha: z then y) that receives the iterate
    after every step (tests; O(d) per step). ``table_max``: flush at least every this many
    steps. ``weight``: None, or the n row weights c_i >= 0 (the loss part sums c_i phi_i).
    ``n_threads``: SvrgOptions'.
    Returns (status, n_epochs, primal, dual, gap, measure, measure_kind, p0, scale).
    """
    cdef Py_ssize_t n = indptr.shape[0] - 1, d = n_features
    cdef SvrgProblem P
    cdef SvrgOptions opt = svrg_default_options()
    cdef SvrgResult res
    cdef double[::1] tr_v
    cdef double dummy = 0.0
    if y.shape[0] != n or x.shape[0] != d:
        raise ValueError("y / x do not match X")
    if steps_per_epoch < 1:
        raise ValueError("steps_per_epoch must be >= 1")
    if weight is not None and weight.shape[0] != n:
        raise ValueError("weight does not match X")
    if method == METHOD_KATYUSHA and not (0.0 < tau1 <= 0.5 and option in (1, 2)):
        raise ValueError("Katyusha needs 0 < tau1 <= 1/2 and option 1 or 2")
    if mon.n_values != SVRG_HOOK_VALUES:
        raise ValueError(f"the monitor expects {mon.n_values} values; svrg_run reports "
                         f"{SVRG_HOOK_VALUES}")
    svrg_problem_init(&P, n, d, &y[0], make_loss(loss, param), lam, l1, method, step,
                      steps_per_epoch, tau1, option, &x[0] if d > 0 else &dummy)
    if weight is not None and n > 0:
        P.weight = &weight[0]
    if trace is not None:
        k_rec = 2 if method == METHOD_KATYUSHA else 1
        tr_arr = trace
        if tr_arr.dtype != np.float64 or not tr_arr.flags.c_contiguous or \
                tr_arr.size < max_epochs * steps_per_epoch * k_rec * d:
            raise ValueError("trace must be a C-contiguous float64 array of "
                             "max_epochs * steps_per_epoch * k * n_features entries")
        tr_v = tr_arr.reshape(-1)
        if tr_v.shape[0] > 0:
            P.trace = &tr_v[0]
    opt.tol = tol
    opt.max_epochs = max_epochs
    opt.seed = seed
    opt.table_max = table_max if table_max > 0 else 1
    opt.n_threads = n_threads if n_threads > 1 else 1
    with nogil:
        svrg_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, python_hook, <void*>mon)
    return (res.status, res.n_epochs, res.primal, res.dual, res.gap, res.measure,
            res.measure_kind, res.p0, res.scale)
