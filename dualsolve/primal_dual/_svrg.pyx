# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Primal baselines of the linear primal-dual family: proximal SVRG and Katyusha over CSR
rows, with stochastic steps that cost O(nnz of the row).

Problem: ``min_x (1/n) sum_i phi(a_i.x; y_i) + psi(x)``, ``psi(x) = (lam/2)||x||^2 +
l1 ||x||_1``. ``f_i(x) = phi(a_i.x; y_i)`` is the smooth part; psi enters through its
proximal map only. Both methods keep a snapshot ``xs`` and, for the whole epoch, the
snapshot's per-row derivatives ``gs_i = phi'(a_i.xs)`` and its full loss gradient
``mu = (1/n) A^T gs``. A step on row i uses the variance-reduced gradient

    mu + (phi'(a_i.x) - gs_i) a_i,

which equals the constant ``mu_j`` on every feature j outside the row. So between two
steps that touch feature j, its update is an autonomous recurrence with constant
coefficients, and the missed steps are applied in O(1) when j is next read (catch-up), or
at a flush (end of the epoch, every ``T`` steps, before the objective is evaluated).

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
from libc.stdint cimport int64_t
from libc.math cimport fabs, fmax, copysign, log, log1p, ceil, isfinite, NAN
from libc.string cimport memset

import numpy as np

from dualsolve._monitor import EpochMonitor

from dualsolve._core.csr cimport floating, index_t, sparse_dot, sparse_axpy, prefetch_row
from dualsolve._core.losses cimport Loss, loss_value, loss_deriv, make_loss
from dualsolve._core.rng cimport rng_state, rng_seed, rng_below
from dualsolve._core.lazy cimport drift_coeffs


cdef enum:
    METHOD_SVRG = 0
    METHOD_KATYUSHA = 1

cdef enum:
    STATUS_CONVERGED = 0
    STATUS_MAX_EPOCHS = 1
    STATUS_STOPPED = 2
    STATUS_DIVERGED = 3

# Longest run of steps between two flushes (bounds the catch-up tables: 11 doubles per
# step for Katyusha, 2 for SVRG). Epochs longer than this flush mid-epoch (O(n_features)).
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
    closed-form estimate (spec seed1 3.2) is checked by evaluation and corrected by a
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
    Loss loss
    Svrg V
    Katyusha K
    double* gs            # gs_i = phi'(a_i.xs; y_i)
    int64_t t             # step clock (never reset; catch-ups span at most T steps)
    int64_t T             # flush at least every T steps
    int64_t since_flush
    Py_ssize_t next_i     # the next row, drawn one step ahead (its row is prefetched);
                          # rows are used in the order they are drawn
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
        g = loss_deriv(&S.loss, dot, S.y[i]) - S.gs[i]
        for q in range(nnz):
            cj = &V.c[ind[q]]
            cj.x = V.a * cj.x - ae * (cj.mu + g * data[q])
            cj.last = t + 1
        return
    for q in range(nnz):
        cj = &V.c[ind[q]]
        _svrg_catch_up(V, cj, t)
        dot += data[q] * cj.x
    g = loss_deriv(&S.loss, dot, S.y[i]) - S.gs[i]
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
    g = loss_deriv(&S.loss, dot, S.y[i]) - S.gs[i]
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


cdef void _epoch(const floating* data, const index_t* indices, const index_t* indptr,
                 VRState* S, Py_ssize_t m, double* trace, Py_ssize_t trace_stride) noexcept nogil:
    """m stochastic steps, then a flush (every coordinate current at S.t)."""
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
        if trace != NULL:
            _record(S, trace)
            trace += trace_stride
    _flush(S)


cdef double _snapshot(const floating* data, const index_t* indices, const index_t* indptr,
                      VRState* S, const double* x, double lam, double l1) noexcept nogil:
    """P(x) with every score computed from scratch, and gs_i = phi'(a_i.x)."""
    cdef Py_ssize_t i, j, start
    cdef double s, loss_sum = 0.0, sq = 0.0, ab = 0.0
    for i in range(S.n):
        start = indptr[i]
        s = sparse_dot(data + start, indices + start, indptr[i + 1] - start, x)
        loss_sum += loss_value(&S.loss, s, S.y[i])
        S.gs[i] = loss_deriv(&S.loss, s, S.y[i])
    for j in range(S.d):
        sq += x[j] * x[j]
        ab += fabs(x[j])
    return loss_sum / S.n + 0.5 * lam * sq + l1 * ab


cdef void _full_gradient(const floating* data, const index_t* indices, const index_t* indptr,
                         const VRState* S, double* mu) noexcept nogil:
    """mu = (1/n) sum_i gs_i a_i."""
    cdef Py_ssize_t i, start
    cdef double scale = 1.0 / S.n
    memset(mu, 0, S.d * sizeof(double))
    for i in range(S.n):
        if S.gs[i] != 0.0:
            start = indptr[i]
            sparse_axpy(S.gs[i] * scale, data + start, indices + start, indptr[i + 1] - start, mu)


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
# Python driver


def _fit(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
         Py_ssize_t n_features, const double[::1] y, str loss, double param, double lam,
         double l1, double[::1] x, int method, double step, Py_ssize_t inner, double tau1,
         int option, double tol, Py_ssize_t max_epochs, unsigned long long seed, int verbose,
         callback, trace=None, Py_ssize_t table_max=TABLE_MAX):
    """Run prox-SVRG (method 0) or Katyusha (method 1) on validated arrays.

    x holds the starting point and receives the returned iterate (the last snapshot).
    SVRG: ``step`` = eta. Katyusha: ``step`` = 1/(3L), alpha = step / tau1, tau2 = 1/2,
    sigma = lam, ``option`` 1 or 2 (the paper's y update I or II).
    ``trace``: None, or a float64 array of max_epochs * inner * k * n_features entries
    (k = 1 for SVRG: x; k = 2 for Katyusha: z then y) that receives the iterate after every
    step (tests; O(d) per step). ``table_max``: flush at least every this many steps.
    Returns (status, n_epochs, primal, p0, history_rows).
    """
    cdef Py_ssize_t n = indptr.shape[0] - 1, d = n_features, i, j, epoch
    cdef VRState S
    cdef double P, P_prev, p0 = 0.0, passes, inv_norm = 1.0, vm = 0.0
    cdef int status = STATUS_MAX_EPOCHS
    cdef Py_ssize_t m = inner
    cdef int64_t T = min(m, max(table_max, 1)), k
    cdef double* tr = NULL
    cdef Py_ssize_t tr_stride = 0
    if y.shape[0] != n or x.shape[0] != d:
        raise ValueError("y / x do not match X")
    if m < 1:
        raise ValueError("inner must be >= 1")
    if method == METHOD_KATYUSHA and not (0.0 < tau1 <= 0.5 and option in (1, 2)):
        raise ValueError("Katyusha needs 0 < tau1 <= 1/2 and option 1 or 2")

    memset(&S, 0, sizeof(VRState))
    S.method = method
    S.n = n
    S.d = d
    S.y = &y[0]
    S.loss = make_loss(loss, param)
    S.t = 0
    S.T = T
    S.since_flush = 0
    rng_seed(&S.rng, seed)
    S.next_i = <Py_ssize_t>rng_below(&S.rng, <unsigned long long>n)

    gs = np.zeros(n)
    mu = np.zeros(max(d, 1))
    xs_arr = np.zeros(max(d, 1))
    xs_arr[:d] = x
    cdef double[::1] gs_v = gs, mu_v = mu, xs_v = xs_arr, c_v, tab_v
    S.gs = &gs_v[0]
    # per-feature state, one struct per feature (see SvrgCoord / KatCoord)
    cdef Py_ssize_t width = (sizeof(KatCoord) if method == METHOD_KATYUSHA
                             else sizeof(SvrgCoord)) // sizeof(double)
    coords = np.zeros(max(d, 1) * width)
    c_v = coords
    tables = None
    cdef KatTab* ktab

    if method == METHOD_SVRG:
        S.V.c = <SvrgCoord*>&c_v[0]
        S.V.d = d
        S.V.eta = step
        S.V.lam = lam
        S.V.l1 = l1
        S.V.a = 1.0 / (1.0 + step * lam)
        for j in range(d):
            S.V.c[j].x = x[j]
        tables = np.empty(2 * (T + 1))
        tab_v = tables
        for k in range(T + 1):
            drift_coeffs(-log1p(step * lam), k, &tab_v[2 * k], &tab_v[2 * k + 1])
        S.V.tab = &tab_v[0]
    else:
        S.K.c = <KatCoord*>&c_v[0]
        S.K.d = d
        for j in range(d):
            S.K.c[j].z = x[j]
            S.K.c[j].y = x[j]
            S.K.c[j].xs = x[j]
        S.K.tau1 = tau1
        S.K.tau2 = 0.5
        S.K.beta = 1.0 - tau1 - 0.5
        S.K.alpha = step / tau1
        S.K.ystep = step
        S.K.lam = lam
        S.K.l1 = l1
        S.K.a = 1.0 / (1.0 + S.K.alpha * lam)
        S.K.gy = 1.0 / (1.0 + step * lam)
        S.K.v = 1.0 / (1.0 + S.K.alpha * lam)
        S.K.option = option
        S.K.direct = option == 1 and l1 > 0.0
        if not S.K.direct:
            tables = np.empty((T + 1) * (sizeof(KatTab) // sizeof(double)))
            tab_v = tables
            ktab = <KatTab*>&tab_v[0]
            if option == 1:
                _kat_fill_tables(ktab, T, S.K.a, tau1 / (1.0 + step * lam),
                                 S.K.beta / (1.0 + step * lam), S.K.v)
            else:
                _kat_fill_tables(ktab, T, S.K.a, tau1 * S.K.a, S.K.beta, S.K.v)
            S.K.tab = ktab
        # snapshot normalisation: 1 / sum_{k<m} v^k
        drift_coeffs(-log1p(S.K.alpha * lam), m, &vm, &inv_norm)
        inv_norm = 1.0 / inv_norm

    if trace is not None:
        k_rec = 2 if method == METHOD_KATYUSHA else 1
        tr_arr = trace
        if tr_arr.dtype != np.float64 or not tr_arr.flags.c_contiguous or \
                tr_arr.size < max_epochs * m * k_rec * d:
            raise ValueError("trace must be a C-contiguous float64 array of "
                             "max_epochs * inner * k * n_features entries")
        tr = _ptr(tr_arr.reshape(-1))
        tr_stride = k_rec * d

    mon = EpochMonitor(callback, verbose, ("primal", "dual", "gap", "passes"), coef=xs_arr[:d])

    for i in range(n):
        p0 += loss_value(&S.loss, 0.0, y[i])
    p0 /= n
    with nogil:
        P = _snapshot(&data[0], &indices[0], &indptr[0], &S, &xs_v[0], lam, l1)
    passes = 1.0
    epoch = 0
    if not isfinite(P):
        status = STATUS_DIVERGED
    if mon.report(0, P, NAN, NAN, passes) and status == STATUS_MAX_EPOCHS:
        status = STATUS_STOPPED
    while status == STATUS_MAX_EPOCHS and epoch < max_epochs:
        epoch += 1
        P_prev = P
        with nogil:
            _full_gradient(&data[0], &indices[0], &indptr[0], &S, &mu_v[0])
            _set_mu(&S, &mu_v[0])
            _epoch(&data[0], &indices[0], &indptr[0], &S, m, tr, tr_stride)
            _new_snapshot(&S, &xs_v[0], inv_norm)
            P = _snapshot(&data[0], &indices[0], &indptr[0], &S, &xs_v[0], lam, l1)
        if tr != NULL:
            tr += m * tr_stride
        passes += 1.0 + <double>m / n
        if not isfinite(P):
            status = STATUS_DIVERGED
        elif fabs(P_prev - P) <= tol * p0:
            status = STATUS_CONVERGED
        if mon.report(epoch, P, NAN, NAN, passes) and status == STATUS_MAX_EPOCHS:
            status = STATUS_STOPPED
    if mon.error is not None:
        raise mon.error
    for j in range(d):
        x[j] = xs_v[j]
    return status, epoch, P, p0, mon.rows


cdef double* _ptr(double[::1] v):
    return &v[0] if v.shape[0] > 0 else NULL
