# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Stochastic AUC loops (spec seed2 sections 2.2, 2.3, 2.4, 3.3, 3.5, 3.6); see _ppd.pxd.

PPD-SG stage (Algorithm 2, inner loop), step t -> t+1 on a batch B drawn with replacement,
all gradients at (w_t, a_t, b_t, alpha_t) (Jacobi)::

    g_w = (1/|B|) sum_{i in B} c_i x_i                 c_i = dF/dh at h_i = x_i.w_t
    w_{t+1} = rho w_t + beta w0 - eta g_w,              rho = 1 - eta (lam + 1/gamma), beta = eta/gamma
    a_{t+1} = a_t - eta (g_a + (a_t - a0)/gamma)        (b alike)
    alpha_{t+1} = alpha_t + eta g_alpha

The map w_j <- rho w_j + beta w0_j of untouched features is carried by global scalars
(w = A z + B w0, 8 bytes of state per feature and a per-row debt for the stage sum: "PPD-SG
with a scaled iterate" below) or, where that does not pay, applied just in time with
DriftJIT (O(1) per catch-up, also adding the missed iterates to the stage sum).

PPD-AdaGrad stage (Algorithm 3 with the proximal and L2 terms in closed form, spec 3.5):
after m steps, with G and S2 the sums of the F-gradients and of their squares since the
stage start (reset every stage)::

    w_j(m) = w0_j - eta (G_j + m lam w0_j) / (delta + sqrt(S2_j) + B m),   B = eta (lam + 1/gamma)
    a(m)   = a0 - eta G_a / (delta + sqrt(S2_a) + m eta/gamma)             (b alike)
    alpha(m) = alpha0 - eta G_al / (delta + sqrt(S2_al)),                  G_al sums -dF/dalpha

A feature's iterates between touches are summed in closed form with the digamma function.

PGA stage (Algorithm 1 of the paper, Rafique et al.'s proximally guided method; spec 2.1,
3.4): the PPD-SG step followed by the projections onto ||(w, a, b)|| <= R1 and
|alpha| <= R2, T steps, and the averages of the iterates 1..T (alpha included). The ball
projection rescales all of w, so per-feature timestamps with constant coefficients do not
apply; instead w = sigma z + tau w0 (z a ScaledVec with scale sigma): the dense step is
sigma *= rho, tau = rho tau + beta, the projection scales sigma, tau, a, b, and ||v||^2 =
sigma^2 ||z||^2 + 2 sigma tau <z, w0> + tau^2 ||w0||^2 + a^2 + b^2 from running sums. The
stage sum of w is S_j + (sum_t tau_t) w0_j with S_j += z_j (Ps - stamp_j) before z_j changes,
Ps = sum_t sigma_t kept in double-double so that late (small) increments do not cancel.
"""
from libc.math cimport sqrt, log, log1p, NAN, INFINITY
from libc.stdlib cimport malloc, free

cdef extern from "<stdlib.h>" nogil:
    void* aligned_alloc(size_t alignment, size_t size)     # C11; released with free
from libc.stdint cimport int64_t
from libc.string cimport memset, memcpy
from scipy.special.cython_special cimport psi
from cpython.exc cimport PyErr_CheckSignals

import numpy as np

from dualsolve._core.buffers cimport intp_out
from dualsolve._core.csr cimport (floating, index_t, sparse_dot, sparse_axpy, prefetch_row,
                                  prefetch_records)
from dualsolve._core.rng cimport rng_seed, rng_below
from dualsolve._core.lazy cimport (DriftJIT, drift_init, drift_catch_up, drift_step,
                                   drift_flush, drift_table_size, ScaledVec, sv_init,
                                   sv_scale, sv_dot, sv_add_at, sv_sqnorm, sv_renormalize)

cdef enum:
    AUC_POLL_STEPS = 65536
    ADA_DIRECT_SUM = 16      # gaps up to this many iterates are summed term by term

cdef extern from *:
    """
    #define DS_PGA_RENORM 1e-6
    """
    const double PGA_RENORM "DS_PGA_RENORM"   # PGA: fold sigma into z below this


cdef void auc_problem_init(AucProblem* P, Py_ssize_t n, Py_ssize_t d, const double* y,
                           double lam, double inv_gamma, Py_ssize_t batch_size, double* w,
                           double* w0, double* wsum, int64_t* last, double* gsum,
                           Py_ssize_t* batch, double* coef) noexcept nogil:
    P.n = n
    P.d = d
    P.y = y
    P.lam = lam
    P.inv_gamma = inv_gamma
    P.batch_size = batch_size
    P.p_mode = AUC_P_FIXED
    P.p = 0.5
    P.pq = 0.25
    P.n_pos_seen = 0.0
    P.n_neg_seen = 0.0
    P.ybar = 0.5
    P.n_seen = 0
    P.n_samples = 0
    P.w = w
    P.w0 = w0
    P.wsum = wsum
    P.last = last
    P.gsum = gsum
    P.batch = batch
    P.coef = coef
    P.tab = NULL
    P.tab_size = 0
    P.delta = 0.0
    P.pstamp = NULL
    P.pstamp_lo = NULL
    P.R1 = INFINITY
    P.R2 = INFINITY
    P.a = P.b = P.alpha = P.a0 = P.b0 = 0.0
    P.trace = NULL
    P.trace_len = 0
    P.trace_pos = 0
    P.scaled_sg = True


cdef inline Py_ssize_t _draw(AucProblem* P) noexcept nogil:
    cdef Py_ssize_t i = <Py_ssize_t>rng_below(&P.rng, <unsigned long long>P.n)
    if P.trace != NULL and P.trace_pos < P.trace_len:
        P.trace[P.trace_pos] = i
        P.trace_pos += 1
    P.n_samples += 1
    return i


cdef inline void _draw_batch(AucProblem* P) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(P.batch_size):
        P.batch[k] = _draw(P)


cdef inline void _update_p(AucProblem* P) noexcept nogil:
    """Algorithm 4 (spec 2.4) after the step's batch: T+, T-, p^, ybar, p(1-p)^."""
    cdef Py_ssize_t k, m = P.batch_size
    cdef double npos = 0.0, ss = 0.0, j = <double>P.n_seen, ph
    for k in range(m):
        if P.y[P.batch[k]] > 0:
            npos += 1.0
    P.n_pos_seen += npos
    P.n_neg_seen += m - npos
    ph = P.n_pos_seen / (P.n_pos_seen + P.n_neg_seen)
    if ph < 1e-12:
        ph = 1e-12
    elif ph > 1.0 - 1e-12:
        ph = 1.0 - 1e-12
    P.p = ph
    P.ybar = ((j + 2.0) * P.ybar + npos) / (j + m + 2.0)
    for k in range(m):
        ph = (1.0 if P.y[P.batch[k]] > 0 else 0.0) - P.ybar
        ss += ph * ph
    P.pq = ((j + 1.0) * P.pq + ss) / (j + m + 1.0)
    P.n_seen += m


cdef inline int _poll(auc_poll poll, void* ctx, int64_t t) noexcept nogil:
    if poll != NULL and (t + 1) % AUC_POLL_STEPS == 0:
        return poll(ctx)
    return 0


cdef inline void _batch_grads(AucProblem* P, double a, double b, double al,
                              double* sg) noexcept nogil:
    """Gradients of the step's batch, all at (w, a, b, al): on entry P.coef[k] holds the
    score h_k = x_k.w of batch row k, on return c_k / |B| (c = dF/dh); sg gets the batch
    means of (dF/da, dF/db, dF/dalpha)."""
    cdef Py_ssize_t k, nb = P.batch_size
    cdef double c, ga, gb, gal, inv_b = 1.0 / nb
    sg[0] = sg[1] = sg[2] = 0.0
    for k in range(nb):
        auc_grads(P.coef[k], P.y[P.batch[k]], a, b, al, P.p, P.pq, &c, &ga, &gb, &gal)
        P.coef[k] = c * inv_b
        sg[0] += ga
        sg[1] += gb
        sg[2] += gal
    sg[0] *= inv_b
    sg[1] *= inv_b
    sg[2] *= inv_b


cdef inline void _scatter(const floating* data, const index_t* indices,
                          const index_t* indptr, AucProblem* P) noexcept nogil:
    """gsum += sum_k coef_k x_k over the batch rows (the sparse part of the w-gradient)."""
    cdef Py_ssize_t k, i, q
    cdef double c
    for k in range(P.batch_size):
        i = P.batch[k]
        c = P.coef[k]
        for q in range(indptr[i], indptr[i + 1]):
            P.gsum[indices[q]] += c * data[q]


cdef inline void _scalar_step(const AucProblem* P, double eta, const double* sg, double* a,
                              double* b, double* al) noexcept nogil:
    """The simultaneous steps of a, b (pulled toward a0, b0) and alpha (ascent)."""
    a[0] = a[0] - eta * (sg[0] + (a[0] - P.a0) * P.inv_gamma)
    b[0] = b[0] - eta * (sg[1] + (b[0] - P.b0) * P.inv_gamma)
    al[0] = al[0] + eta * sg[2]


# ---------------------------------------------------------------------------------------
# PPD-SG with a scaled iterate
#
# Every untouched feature follows w_j <- rho w_j + beta w0_j, so the stage keeps
# w = A z + B w0 with global A, B (A <- rho A, B <- rho B + beta) and the stage sum as
# s_j + SA z_j + SB w0_j (SA, SB: the sums of A and B over the iterates so far; a touch
# z_j += c x_ij pays s_j -= SA c x_ij). Those payments are all multiples of rows of X, so
# they are kept per row (g_i -= SA c, one scalar) and paid in one pass at the stage end
# (s += X^T g). The scores need x_i.w0, which is fixed for the stage and computed once
# (one pass over X). A step thus reads and writes one 8-byte z_j per nonzero, the same
# traffic as SDCA's w, instead of the five arrays of the DriftJIT form. A is folded back
# to 1 (O(d), into z and s) when it falls below REBASE_A, which bounds the rounding of the
# sum to about eps / REBASE_A relative.

cdef extern from *:
    """
    #define DS_SG_REBASE_A 0.0009765625
    """
    const double REBASE_A "DS_SG_REBASE_A"    # 2^-10


cdef bint _sg_scaled_pays(const AucProblem* P, const index_t* indptr, double rho,
                          int64_t T) noexcept nogil:
    """The scaled form when its setup pass over X (the scores x_i.w0) costs at most about
    the stage's sparse work, and its O(d) folds, one every log(1/REBASE_A)/(1 - rho) steps,
    at most about the sparse work between them (rho >= 1/2: a fold per step at most)."""
    cdef double om = 1.0 - rho, period, nnz = <double>indptr[P.n]
    cdef double nnz_step = <double>P.batch_size * nnz / <double>P.n
    if rho < 0.5 or <double>T * nnz_step < 0.5 * nnz:
        return False
    if om <= 0.0:
        return True
    period = -log(REBASE_A) / om
    if period >= <double>T:
        return True
    return period * nnz_step >= 0.5 * <double>P.d


cdef inline void _sg_fold(double* z, double* s, const double* w0, Py_ssize_t d, double* A,
                          double* B, double* SA, double* SB) noexcept nogil:
    cdef Py_ssize_t j
    cdef double a = A[0], b = B[0], sa = SA[0], sb = SB[0]
    for j in range(d):
        s[j] += sa * z[j] + sb * w0[j]
        z[j] = a * z[j] + b * w0[j]
    A[0] = 1.0
    B[0] = 0.0
    SA[0] = 0.0
    SB[0] = 0.0


cdef inline void _draw_prefetch_rows(const floating* data, const index_t* indices,
                                     const index_t* indptr, AucProblem* P, Py_ssize_t* rows,
                                     Py_ssize_t nb) noexcept nogil:
    """Draw nb rows into rows (the next samples of the stream) and prefetch their CSR lines."""
    cdef Py_ssize_t k, i
    for k in range(nb):
        i = _draw(P)
        rows[k] = i
        prefetch_row(data + indptr[i], indices + indptr[i], indptr[i + 1] - indptr[i])


ctypedef struct AheadQueue:
    Py_ssize_t* base          # 2 batch_size entries
    Py_ssize_t* next          # the batch of step t + 1 (rows prefetched)
    Py_ssize_t* after         # the batch of step t + 2


cdef inline bint _ahead_start(const floating* data, const index_t* indices,
                              const index_t* indptr, AucProblem* P, AheadQueue* Q,
                              int64_t T) noexcept nogil:
    """Samples drawn two steps ahead of a stage of T iterates, in the stream's order: the
    batch of step 0 into P.batch, that of step 1 into Q.next. False: out of memory."""
    cdef Py_ssize_t nb = P.batch_size
    Q.base = <Py_ssize_t*>malloc(2 * nb * sizeof(Py_ssize_t))
    if Q.base == NULL:
        return False
    Q.next = Q.base
    Q.after = Q.base + nb
    if T > 1:
        _draw_batch(P)
    if T > 2:
        _draw_prefetch_rows(data, indices, indptr, P, Q.next, nb)
    return True


cdef inline void _ahead_draw(const floating* data, const index_t* indices,
                             const index_t* indptr, AucProblem* P, AheadQueue* Q, int64_t t,
                             int64_t T, const void* records, size_t record_bytes) noexcept nogil:
    """At the start of step t: draw the batch of step t + 2 and prefetch its rows, and
    prefetch the per-feature records of the batch of step t + 1."""
    cdef Py_ssize_t k, i
    if t + 2 < T - 1:
        _draw_prefetch_rows(data, indices, indptr, P, Q.after, P.batch_size)
    if t + 1 < T - 1:
        for k in range(P.batch_size):
            i = Q.next[k]
            prefetch_records(indices + indptr[i], indptr[i + 1] - indptr[i], records,
                             record_bytes)


cdef inline void _ahead_shift(AucProblem* P, AheadQueue* Q, int64_t t, int64_t T) noexcept nogil:
    """At the end of step t: the batch of step t + 1 becomes P.batch."""
    cdef Py_ssize_t* tmp
    if t + 1 < T - 1:
        memcpy(P.batch, Q.next, P.batch_size * sizeof(Py_ssize_t))
        tmp = Q.next
        Q.next = Q.after
        Q.after = tmp


cdef int _ppd_sg_stage_scaled(const floating* data, const index_t* indices,
                              const index_t* indptr, AucProblem* P, int64_t T, double eta,
                              double rho, double beta, auc_poll poll, void* ctx) noexcept nogil:
    cdef Py_ssize_t d = P.d, nb = P.batch_size, k, i, q, j
    cdef AheadQueue Q
    # z and s are P.w and P.wsum (d each; the stage's output is written into P.w at the end)
    cdef double* z = P.w
    cdef double* s = P.wsum
    cdef double* xw0 = <double*>malloc(2 * P.n * sizeof(double))
    cdef double* g = xw0 + P.n
    cdef const double* w0 = P.w0
    cdef int64_t t
    cdef double sg[3]
    cdef double A = 1.0, B = 0.0, SA = 1.0, SB = 0.0, An, Bn, hz, c
    cdef double a, b, al, suma, sumb
    Q.base = NULL
    if xw0 == NULL or not _ahead_start(data, indices, indptr, P, &Q, T):
        free(xw0)
        return AUC_NO_BUFFER
    memcpy(z, w0, d * sizeof(double))                 # iterate 0 = w0 is in the sum (SA = 1)
    memset(s, 0, d * sizeof(double))
    memset(g, 0, P.n * sizeof(double))
    for i in range(P.n):
        xw0[i] = sparse_dot(data + indptr[i], indices + indptr[i], indptr[i + 1] - indptr[i], w0)
    a = P.a0
    b = P.b0
    al = P.alpha
    suma = a
    sumb = b
    # the rows of step t + 2 are prefetched at step t, the records of their features at t + 1
    for t in range(T - 1):
        _ahead_draw(data, indices, indptr, P, &Q, t, T, z, sizeof(double))
        for k in range(nb):
            i = P.batch[k]
            hz = 0.0
            for q in range(indptr[i], indptr[i + 1]):
                hz += data[q] * z[indices[q]]
            P.coef[k] = A * hz + B * xw0[i]
        _batch_grads(P, a, b, al, sg)
        An = rho * A
        Bn = rho * B + beta
        for k in range(nb):                            # Jacobi: every score taken above
            c = -eta * P.coef[k] / An
            if c == 0.0:
                continue
            i = P.batch[k]
            g[i] -= SA * c
            for q in range(indptr[i], indptr[i + 1]):
                z[indices[q]] += c * data[q]
        A = An
        B = Bn
        SA += A
        SB += B
        _scalar_step(P, eta, sg, &a, &b, &al)              # simultaneous, from the values at t
        suma += a
        sumb += b
        if P.p_mode == AUC_P_ONLINE:
            _update_p(P)
        if A < REBASE_A:
            _sg_fold(z, s, w0, d, &A, &B, &SA, &SB)
        _ahead_shift(P, &Q, t, T)
        if _poll(poll, ctx, t) != 0:
            free(Q.base)
            free(xw0)
            return AUC_STOPPED
    for i in range(P.n):                               # the touches' payments: s += X^T g
        if g[i] != 0.0:
            sparse_axpy(g[i], data + indptr[i], indices + indptr[i], indptr[i + 1] - indptr[i], s)
    for j in range(d):
        P.w[j] = (s[j] + SA * z[j] + SB * w0[j]) / T
    memcpy(P.w0, P.w, d * sizeof(double))
    free(Q.base)
    free(xw0)
    P.a0 = P.a = suma / T
    P.b0 = P.b = sumb / T
    P.alpha = al                                       # thrown away by the reset
    return AUC_OK


cdef int ppd_sg_stage(const floating* data, const index_t* indices, const index_t* indptr,
                      AucProblem* P, int64_t T, double eta, auc_poll poll,
                      void* ctx) noexcept nogil:
    cdef DriftJIT dj
    cdef Py_ssize_t d = P.d, nb = P.batch_size, k, i, q, start, j
    cdef int64_t t, tcap
    cdef double om = eta * (P.lam + P.inv_gamma)
    cdef double sg[3]
    cdef double a, b, al, suma, sumb, gx
    if P.scaled_sg and _sg_scaled_pays(P, indptr, 1.0 - om, T):
        return _ppd_sg_stage_scaled(data, indices, indptr, P, T, eta, 1.0 - om,
                                    eta * P.inv_gamma, poll, ctx)
    if P.tab == NULL or P.tab_size < 1:
        return AUC_NO_BUFFER
    tcap = T - 1 if T - 1 < P.tab_size else P.tab_size
    if tcap < 1:
        tcap = 1
    memcpy(P.w, P.w0, d * sizeof(double))
    memcpy(P.wsum, P.w0, d * sizeof(double))           # iterate 0 is in the average
    drift_init(&dj, P.w, P.last, P.wsum, d, P.tab, tcap, 1.0 - om, log1p(-om), P.w0,
               eta * P.inv_gamma, NULL, 0.0, 0)
    a = P.a0
    b = P.b0
    al = P.alpha
    suma = a
    sumb = b
    for t in range(T - 1):
        _draw_batch(P)
        for k in range(nb):
            i = P.batch[k]
            for q in range(indptr[i], indptr[i + 1]):
                drift_catch_up(&dj, indices[q], t)
        for k in range(nb):
            i = P.batch[k]
            start = indptr[i]
            P.coef[k] = sparse_dot(data + start, indices + start, indptr[i + 1] - start, P.w)
        _batch_grads(P, a, b, al, sg)
        _scatter(data, indices, indptr, P)
        for k in range(nb):
            i = P.batch[k]
            for q in range(indptr[i], indptr[i + 1]):
                j = indices[q]
                if P.last[j] == t:                     # not yet stepped (repeats in B)
                    gx = P.gsum[j]
                    P.gsum[j] = 0.0
                    drift_step(&dj, j, t, -eta * gx)
        _scalar_step(P, eta, sg, &a, &b, &al)              # simultaneous, from the values at t
        suma += a
        sumb += b
        if P.p_mode == AUC_P_ONLINE:
            _update_p(P)
        if (t + 1) % tcap == 0:
            drift_flush(&dj, t + 1)
        if _poll(poll, ctx, t) != 0:
            return AUC_STOPPED
    drift_flush(&dj, T - 1)
    for j in range(d):
        P.w0[j] = P.wsum[j] / T
        P.w[j] = P.w0[j]
    P.a0 = P.a = suma / T
    P.b0 = P.b = sumb / T
    P.alpha = al                                       # thrown away by the reset
    return AUC_OK


cdef inline double _psi_tail(double y) noexcept nogil:
    """ln x - 1/(2x) - psi(x) to the x^-6 term of the asymptotic series, y = 1/x."""
    cdef double y2 = y * y
    return y2 * (1.0 / 12.0 - y2 * (1.0 / 120.0 - y2 * (1.0 / 252.0)))


cdef inline double digamma_gap(double a, double g) noexcept nogil:
    """psi(a + g) - psi(a) for a > 0, g >= 0. For a >= 30 the asymptotic series in differenced
    form: log1p(g/a) carries the leading term without cancellation, and the series' next
    term bounds the error by 2/(240 a^8) < 1.3e-14 absolute; below, scipy's psi."""
    cdef double b = a + g
    if a < 30.0:
        return psi(b) - psi(a)
    return log1p(g / a) - 0.5 * (1.0 / b - 1.0 / a) - (_psi_tail(1.0 / b) - _psi_tail(1.0 / a))


def _digamma_gap(double a, double g):
    """digamma_gap for tests."""
    return digamma_gap(a, g)


# One 64-byte record per feature for PPD-AdaGrad, allocated on cache-line boundaries, so
# that a nonzero costs exactly one cache line instead of eight arrays (G, S2, the AdaGrad
# denominator, w0, the stage sum, the step stamp and the mini-batch scratch and mark).
ctypedef struct AdaFeature:
    double G               # sum of the feature's F-gradients since the stage start
    double S2              # sum of their squares
    double D               # delta + sqrt(S2), kept with S2 (one square root per update)
    double w0              # the reference point
    double wsum            # sum of the iterates 0 .. last
    double gsum            # mini-batch scratch, zero between steps
    int64_t last           # the iterates up to this step are in wsum
    int64_t mark           # step of the last scatter into gsum (mini-batches)


cdef inline void _ada_catch_up(const AucProblem* P, AdaFeature* f, int64_t m, double eta,
                               double B) noexcept nogil:
    """Add the iterates last+1 .. m of the feature (G, S2 constant over them) to wsum."""
    cdef int64_t m1 = f.last + 1, r
    cdef double cnt, D, c1, c2, s = 0.0, x
    if m1 > m:
        return
    cnt = <double>(m - m1 + 1)
    c1 = eta * f.G
    c2 = eta * P.lam * f.w0
    if c1 != 0.0 or c2 != 0.0:
        D = f.D
        if B == 0.0:                                   # lam = 0, gamma = inf: c2 = 0
            s = cnt * c1 / D
        elif m - m1 < ADA_DIRECT_SUM:
            for r in range(m1, m + 1):
                s += (c1 + c2 * r) / (D + B * r)
        else:
            # sum_r (c1 + c2 r)/(D + B r) = cnt c2/B + (c1 - c2 D/B) (psi(x+m+1) - psi(x+m1))/B
            x = D / B
            s = cnt * c2 / B + (c1 - c2 * x) * digamma_gap(x + m1, cnt) / B
    f.wsum += cnt * f.w0 - s
    f.last = m


cdef inline double _ada_w(const AucProblem* P, const AdaFeature* f, int64_t m, double eta,
                          double B) noexcept nogil:
    return f.w0 - eta * (f.G + m * P.lam * f.w0) / (f.D + B * m)


cdef int ppd_adagrad_stage(const floating* data, const index_t* indices,
                           const index_t* indptr, AucProblem* P, int64_t T, double eta,
                           auc_poll poll, void* ctx) noexcept nogil:
    cdef Py_ssize_t d = P.d, nb = P.batch_size, k, i, q, j
    cdef int64_t m
    cdef double B = eta * (P.lam + P.inv_gamma), Bab = eta * P.inv_gamma
    cdef double sg[3]
    cdef double h, c, sga, sgb, sgal, a, b, al, suma = 0.0, sumb = 0.0, g
    cdef double Ga = 0.0, Gb = 0.0, Gal = 0.0, S2a = 0.0, S2b = 0.0, S2al = 0.0
    cdef double al0 = P.alpha
    cdef AdaFeature* F
    cdef AdaFeature* f
    cdef AheadQueue Q
    if not P.delta > 0.0:
        return AUC_NO_BUFFER
    F = <AdaFeature*>aligned_alloc(64, d * sizeof(AdaFeature))
    if F == NULL:
        return AUC_NO_BUFFER
    for j in range(d):
        F[j].G = 0.0
        F[j].S2 = 0.0
        F[j].D = P.delta
        F[j].w0 = P.w0[j]
        F[j].wsum = 0.0
        F[j].gsum = 0.0
        F[j].last = -1
        F[j].mark = -1
    if not _ahead_start(data, indices, indptr, P, &Q, T):
        free(F)
        return AUC_NO_BUFFER
    for m in range(T):
        a = P.a0 - eta * Ga / (P.delta + sqrt(S2a) + Bab * m)
        b = P.b0 - eta * Gb / (P.delta + sqrt(S2b) + Bab * m)
        suma += a
        sumb += b
        if m == T - 1:
            break
        al = al0 - eta * Gal / (P.delta + sqrt(S2al))
        _ahead_draw(data, indices, indptr, P, &Q, m, T, F, sizeof(AdaFeature))
        for k in range(nb):
            i = P.batch[k]
            h = 0.0
            for q in range(indptr[i], indptr[i + 1]):
                f = &F[indices[q]]
                _ada_catch_up(P, f, m, eta, B)
                h += data[q] * _ada_w(P, f, m, eta, B)
            P.coef[k] = h
        _batch_grads(P, a, b, al, sg)
        if nb == 1:
            c = P.coef[0]
            i = P.batch[0]
            for q in range(indptr[i], indptr[i + 1]):
                f = &F[indices[q]]
                g = c * data[q]
                f.G += g
                f.S2 += g * g
                f.D = P.delta + sqrt(f.S2)
        else:
            for k in range(nb):                        # sum a feature's gradients over B first
                i = P.batch[k]
                c = P.coef[k]
                for q in range(indptr[i], indptr[i + 1]):
                    f = &F[indices[q]]
                    f.gsum += c * data[q]
                    f.mark = m
            for k in range(nb):
                i = P.batch[k]
                for q in range(indptr[i], indptr[i + 1]):
                    f = &F[indices[q]]
                    if f.mark == m:
                        g = f.gsum
                        f.gsum = 0.0
                        f.mark = -1
                        f.G += g
                        f.S2 += g * g
                        f.D = P.delta + sqrt(f.S2)
        sga = sg[0]
        sgb = sg[1]
        sgal = sg[2]
        Ga += sga
        S2a += sga * sga
        Gb += sgb
        S2b += sgb * sgb
        Gal -= sgal
        S2al += sgal * sgal
        if P.p_mode == AUC_P_ONLINE:
            _update_p(P)
        _ahead_shift(P, &Q, m, T)
        if _poll(poll, ctx, m) != 0:
            free(F)
            free(Q.base)
            return AUC_STOPPED
    for j in range(d):
        _ada_catch_up(P, &F[j], T - 1, eta, B)
        P.w0[j] = F[j].wsum / T
        P.w[j] = P.w0[j]
    free(F)
    free(Q.base)
    P.a0 = P.a = suma / T
    P.b0 = P.b = sumb / T
    P.alpha = al0 - eta * Gal / (P.delta + sqrt(S2al))
    return AUC_OK


cdef inline void _two_sum_add(double* hi, double* lo, double x) noexcept nogil:
    """(hi + lo) += x in double-double (Knuth's TwoSum; needs IEEE rounding, no fast-math)."""
    cdef double s = hi[0] + x
    cdef double bp = s - hi[0]
    lo[0] += (hi[0] - (s - bp)) + (x - bp)
    hi[0] = s


cdef inline void _pga_touch(AucProblem* P, const ScaledVec* sv, Py_ssize_t j, double Ps,
                            double Ps_lo) noexcept nogil:
    """Add sigma_r z_j over the iterates since feature j's stamp to S_j (= P.wsum[j])."""
    P.wsum[j] += sv.v[j] * ((Ps - P.pstamp[j]) + (Ps_lo - P.pstamp_lo[j]))
    P.pstamp[j] = Ps
    P.pstamp_lo[j] = Ps_lo


cdef inline double _pga_scale(AucProblem* P, ScaledVec* sv, double f, double* Ps,
                              double* Ps_lo, double zw0) noexcept nogil:
    """sigma *= f (f > 0). Before sigma would drop below PGA_RENORM, fold it into z (O(d):
    S brought up to date, z <- sigma z, sigma = 1, stamps and Ps reset) so that the
    ScaledVec never renormalises behind the stamps' back. Returns <z, w0> (recomputed
    exactly after a fold)."""
    cdef Py_ssize_t j
    if sv.scale * f < PGA_RENORM:
        for j in range(P.d):
            _pga_touch(P, sv, j, Ps[0], Ps_lo[0])
            P.pstamp[j] = 0.0
            P.pstamp_lo[j] = 0.0
        Ps[0] = 0.0
        Ps_lo[0] = 0.0
        sv_renormalize(sv)
        zw0 = 0.0
        for j in range(P.d):
            zw0 += sv.v[j] * P.w0[j]
    sv_scale(sv, f)
    return zw0


cdef int pga_stage(const floating* data, const index_t* indices, const index_t* indptr,
                   AucProblem* P, int64_t T, double eta, auc_poll poll,
                   void* ctx) noexcept nogil:
    cdef ScaledVec sv
    cdef Py_ssize_t d = P.d, nb = P.batch_size, k, i, q, start, nnz, j
    cdef int64_t t
    cdef double rho = 1.0 - eta * (P.lam + P.inv_gamma), beta = eta * P.inv_gamma
    cdef double sg[3]
    cdef double a, b, al, suma = 0.0, sumb = 0.0, sumal = 0.0, g, old, nrm2, f
    cdef double tau = 1.0, Ptau = 0.0, Ps = 0.0, Ps_lo = 0.0, zw0 = 0.0, w0w0 = 0.0
    cdef double R1sq = P.R1 * P.R1
    if P.pstamp == NULL or P.pstamp_lo == NULL:
        return AUC_NO_BUFFER
    # iterate 0: w = sigma z + tau w0 with z = 0, sigma = tau = 1
    memset(P.w, 0, d * sizeof(double))
    memset(P.wsum, 0, d * sizeof(double))
    memset(P.pstamp, 0, d * sizeof(double))
    memset(P.pstamp_lo, 0, d * sizeof(double))
    sv_init(&sv, P.w, d)
    for j in range(d):
        w0w0 += P.w0[j] * P.w0[j]
    a = P.a0
    b = P.b0
    al = P.alpha
    for t in range(T):
        _draw_batch(P)
        for k in range(nb):
            i = P.batch[k]
            start = indptr[i]
            nnz = indptr[i + 1] - start
            P.coef[k] = (sv_dot(&sv, data + start, indices + start, nnz)
                         + tau * sparse_dot(data + start, indices + start, nnz, P.w0))
        _batch_grads(P, a, b, al, sg)
        _scatter(data, indices, indptr, P)
        # dense part w <- rho w + beta w0, then the sparse part -eta gsum
        zw0 = _pga_scale(P, &sv, rho, &Ps, &Ps_lo, zw0)
        tau = rho * tau + beta
        for k in range(nb):
            i = P.batch[k]
            for q in range(indptr[i], indptr[i + 1]):
                j = indices[q]
                g = P.gsum[j]
                if g != 0.0:                           # zero once applied (repeats in B)
                    P.gsum[j] = 0.0
                    _pga_touch(P, &sv, j, Ps, Ps_lo)
                    old = sv.v[j]
                    sv_add_at(&sv, j, -eta * g)
                    zw0 += (sv.v[j] - old) * P.w0[j]
        _scalar_step(P, eta, sg, &a, &b, &al)
        # projections: v = (w, a, b) onto the R1-ball, alpha onto [-R2, R2]
        nrm2 = sv_sqnorm(&sv) + 2.0 * sv.scale * tau * zw0 + tau * tau * w0w0 + a * a + b * b
        if nrm2 > R1sq:
            f = P.R1 / sqrt(nrm2)
            zw0 = _pga_scale(P, &sv, f, &Ps, &Ps_lo, zw0)
            tau *= f
            a *= f
            b *= f
        if al > P.R2:
            al = P.R2
        elif al < -P.R2:
            al = -P.R2
        # iterate t+1 enters the averages
        _two_sum_add(&Ps, &Ps_lo, sv.scale)
        Ptau += tau
        suma += a
        sumb += b
        sumal += al
        if P.p_mode == AUC_P_ONLINE:
            _update_p(P)
        if _poll(poll, ctx, t) != 0:
            return AUC_STOPPED
    for j in range(d):
        _pga_touch(P, &sv, j, Ps, Ps_lo)
        P.w0[j] = (P.wsum[j] + Ptau * P.w0[j]) / T
        P.w[j] = P.w0[j]
    P.a0 = P.a = suma / T
    P.b0 = P.b = sumb / T
    P.alpha = sumal / T
    return AUC_OK


cdef void auc_alpha_reset(const floating* data, const index_t* indices,
                          const index_t* indptr, AucProblem* P, int64_t m) noexcept nogil:
    cdef double sp = 0.0, sn = 0.0, npos = 0.0, nneg = 0.0, h
    cdef Py_ssize_t i, start
    cdef int64_t r = 0
    while True:
        if m == 0:
            if r == P.n:
                break
            i = <Py_ssize_t>r
        else:
            if r >= m and npos > 0.0 and nneg > 0.0:
                break
            i = _draw(P)
        r += 1
        start = indptr[i]
        h = sparse_dot(data + start, indices + start, indptr[i + 1] - start, P.w0)
        if P.y[i] > 0:
            sp += h
            npos += 1.0
        else:
            sn += h
            nneg += 1.0
    P.alpha = sn / nneg - sp / npos


# ---------------------------------------------------------------------------------------
# Python driver


cdef int _python_poll(void* ctx) noexcept nogil:
    with gil:
        try:
            PyErr_CheckSignals()
        except BaseException as exc:                   # noqa: B902 (KeyboardInterrupt)
            (<object>ctx).error = exc
            return 1
        return 0


def grads(double h, double y, double a, double b, double alpha, double p, double pq):
    """(dF/dh, dF/da, dF/db, dF/dalpha) of one sample (spec 2.0; for tests)."""
    cdef double c, ga, gb, gal
    auc_grads(h, y, a, b, alpha, p, pq, &c, &ga, &gb, &gal)
    return c, ga, gb, gal


def _fit(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
         Py_ssize_t n_features, const double[::1] y, str method, etas, Ts, ms, double lam,
         double inv_gamma, double delta, Py_ssize_t batch_size, int p_mode, double p,
         unsigned long long seed, report, mon, trace=None, double R1=INFINITY,
         double R2=INFINITY, bint scaled_sg=True):
    """Run the stages on validated arrays. method: "sg", "adagrad" or "pga". etas, Ts, ms:
    per-stage step, length (iterates; PGA: steps) and alpha-reset sample count (0: all
    rows; PGA averages alpha instead of resetting it). R1, R2: PGA's radii.
    report(k, w, a, b, alpha) is called with the start (k = 0) and after every stage (and
    its alpha reset) and returns True to stop; mon gets ``error`` set on Ctrl-C mid-stage.
    scaled_sg=False keeps PPD-SG on its DriftJIT form (tests compare the two).
    Returns (w, a, b, alpha, stages_done, n_samples, p_estimate, pq_estimate, stopped)."""
    cdef Py_ssize_t n = y.shape[0], d = n_features, K = len(etas), k
    if indptr.shape[0] != n + 1:
        raise ValueError("inconsistent shapes")
    if method not in ("sg", "adagrad", "pga"):
        raise ValueError(f"unknown method {method!r}")
    cdef AucProblem P
    dd = max(d, 1)
    w = np.zeros(dd)
    w0 = np.zeros(dd)
    wsum = np.zeros(dd)
    gsum = np.zeros(dd)
    last = np.zeros(dd, dtype=np.int64)
    batch = np.zeros(batch_size, dtype=np.intp)
    coef = np.zeros(batch_size)
    cdef double[::1] wv = w, w0v = w0, wsv = wsum, gv = gsum, cv = coef
    cdef int64_t[::1] lv = last
    cdef Py_ssize_t[::1] bv = batch
    auc_problem_init(&P, n, d, &y[0], lam, inv_gamma, batch_size, &wv[0], &w0v[0], &wsv[0],
                     &lv[0], &gv[0], &bv[0], &cv[0])
    P.p_mode = p_mode
    P.scaled_sg = scaled_sg
    if p_mode == AUC_P_FIXED:
        P.p = p
        P.pq = p * (1.0 - p)
    cdef double[::1] tabv, stv, stlv
    cdef int64_t tmax = max(int(T) for T in Ts) - 1
    if method == "sg":
        P.tab_size = max(1, min(tmax, max(d, 4096)))
        tabv = np.zeros(drift_table_size(P.tab_size))
        P.tab = &tabv[0]
    elif method == "pga":
        stv = np.zeros(dd)
        stlv = np.zeros(dd)
        P.pstamp = &stv[0]
        P.pstamp_lo = &stlv[0]
        P.R1 = R1
        P.R2 = R2
    elif method == "adagrad":
        P.delta = delta
    P.trace = intp_out(trace, &P.trace_len)
    rng_seed(&P.rng, seed)
    cdef int status = AUC_OK
    cdef int64_t T, m
    cdef double eta
    cdef int kind = 0 if method == "sg" else (1 if method == "adagrad" else 2)
    done = 0
    if not report(0, w0[:d], P.a0, P.b0, P.alpha):
        for k in range(K):
            eta = etas[k]
            T = Ts[k]
            m = ms[k]
            with nogil:
                if kind == 0:
                    status = ppd_sg_stage(&data[0], &indices[0], &indptr[0], &P, T, eta,
                                          _python_poll, <void*>mon)
                elif kind == 1:
                    status = ppd_adagrad_stage(&data[0], &indices[0], &indptr[0], &P, T, eta,
                                               _python_poll, <void*>mon)
                else:
                    status = pga_stage(&data[0], &indices[0], &indptr[0], &P, T, eta,
                                       _python_poll, <void*>mon)
                if status == AUC_OK and kind != 2:
                    auc_alpha_reset(&data[0], &indices[0], &indptr[0], &P, m)
            if status == AUC_NO_BUFFER:
                raise MemoryError("AUC solver: a work buffer is missing")
            if status == AUC_STOPPED:
                break
            done = k + 1
            if report(k + 1, w0[:d], P.a0, P.b0, P.alpha):
                break
    return (w0[:d].copy(), P.a0, P.b0, P.alpha, done, P.n_samples, P.p, P.pq,
            status == AUC_STOPPED)
