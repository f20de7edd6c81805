# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Randomized primal-dual loops over CSR rows: SPDC, Ada-SPDC, DF-SPDC, ADF-SPDC (Wang & Xiao
2017, Algorithms 5 and 7; Zhang & Xiao 2017's SPDC with mini-batches), see docs/primal_dual.md.

Iteration t on the sampled row k (batch: rows K, every dot before any primal step)::

    dot   = a_k . xt(t),   xt = x + theta (x - xprev)
    SPDC: y_k+ = prox_{sigma phi*}(y_k + sigma dot)       (loss table's exact dual step)
    DF:   v_k  = (v_k + sigma dot) / (1 + sigma);  y_k+ = phi'(v_k)
    x+    = prox_{tau g}(x - tau (u + (y_k+ - y_k) a_k)),  u += (y_k+ - y_k) a_k / n

With row weights c_k (``P.weight``) y holds eta = y / c (see ``_spdc.pxd``, "Weights"):
the dual steps are the unweighted ones and the primal side uses ``dy = c_k (eta_k+ -
eta_k)``; NULL weights cost one well-predicted branch per step.

The dense part of the primal step (every feature moves by the constant u_j and the prox)
is applied just in time (a catch-up): a feature is brought from its last
iteration to t by the exact s-fold map of ``dualsolve._core.lazy`` (``prox_pow``; with a
pure L2 term, per-epoch tables of a^s and (1 - a^s)/lam so a catch-up costs two loads and
two multiply-adds), and its value at t - 1 is kept for the extrapolation. A step whose dual
change is zero leaves the row's features lazy. The whole iterate is brought up to date
(a flush) only before an evaluation, which also recomputes u = A^T y / n exactly, and
parameter changes happen right after one.

Per-feature state is interleaved (x, xprev, u, last: 32 bytes) so a nonzero costs one
cache line, and the rows and feature lines of the next sampled row are prefetched while
the current one is processed (random rows defeat the hardware prefetcher).

With batch 1 and a pure L2 term (the common case) a scaled form replaces all of this: every
feature off the row follows one affine map, so 16 bytes a feature (v, u) and four global
scalars carry x and xprev, and evaluations work on that state directly (see "the scaled
fast path" below).
"""
from cython.parallel cimport prange
from libc.math cimport INFINITY, NAN, sqrt, log, exp, log1p, expm1, fabs, isfinite, ceil
from libc.stdlib cimport malloc, free
from libc.string cimport memset
from libc.stdint cimport int64_t, uint64_t

import numpy as np

from dualsolve._core.blocks cimport (Blocks, BLOCKS_MIN_NNZ, blocks_init, blocks_own,
                                     blocks_free, blocks_add_copies)
from dualsolve._core.parallel cimport batch_min_nnz
from dualsolve._core.blocks cimport (BatchClock, batch_clock_epoch, batch_clock_threads,
                                     batch_clock_done)
from dualsolve._core.hooks cimport python_hook
from dualsolve._core.ksum cimport KahanSum, ksum_new, ksum_add, ksum_value
from dualsolve._core.status cimport (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_DIVERGED,
                                     STATUS_NO_MEMORY, report_epoch, gap_certifies, gap_floor)
from dualsolve._core.csr cimport floating, index_t, prefetch_row, prefetch_records
from dualsolve._core.losses cimport (Loss, LOSS_SQUARED, loss_value, loss_deriv, loss_conj,
                                     loss_dual_step, loss_conj_strong_convexity, make_loss)
from dualsolve._core.rng cimport rng_state, rng_seed, rng_below, rng_shuffle
from dualsolve._core.lazy cimport prox_pow, affine_pow, soft_threshold


# ---------------------------------------------------------------------------------------
# just-in-time primal state


ctypedef struct LazyParams:
    double tau
    double lam1
    double lam2
    double a              # 1 / (1 + tau lam2)
    double tl1            # tau lam1
    const double* apow    # apow[s] = a^s            (pure L2 tables; NULL otherwise)
    const double* coef    # coef[s] = (1 - a^s)/lam2  so that F^s(z) = apow[s] z - coef[s] u
    int64_t tab_len


# The regulariser's kind as a compile-time tag (fused over empty structs): each loop is
# specialised, so the per-nonzero code has no branch on the kind.
ctypedef struct RegL2:           # lam > 0, lam1 = 0: tables of a^s and (1 - a^s)/lam
    char unused
ctypedef struct RegNone:         # lam = lam1 = 0: F^s(z) = z - s tau u
    char unused
ctypedef struct RegEN:           # lam1 > 0 (lam >= 0): prox_pow of _core.lazy
    char unused

ctypedef fused reg_t:
    RegL2
    RegNone
    RegEN


cdef inline double _step(double z, double g, const LazyParams* lp, reg_t* tag) noexcept nogil:
    """One prox-gradient step F(z) = S(z - tau g, tau lam1) / (1 + tau lam2)."""
    if reg_t is RegEN:
        return soft_threshold(z - lp.tau * g, lp.tl1) * lp.a
    elif reg_t is RegNone:
        return z - lp.tau * g
    else:
        return (z - lp.tau * g) * lp.a


cdef inline double _pow(double z, int64_t s, double u, const LazyParams* lp,
                        reg_t* tag) noexcept nogil:
    """F^s(z) for a feature with constant gradient part u."""
    if reg_t is RegEN:
        return prox_pow(z, s, lp.tau, u, lp.lam1, lp.lam2)
    elif reg_t is RegNone:
        return z - (<double>s * lp.tau) * u
    else:
        if s < lp.tab_len:
            return lp.apow[s] * z - lp.coef[s] * u
        return affine_pow(z, s, u, lp.tau, lp.lam2)


cdef inline void _catch_up(SpdcFeature* f, int64_t t, const LazyParams* lp,
                           reg_t* tag) noexcept nogil:
    """Bring x_j to iteration t and xprev_j to t - 1 (the catch-up)."""
    cdef int64_t s = t - f.last
    cdef double x
    if s <= 0:
        return
    x = f.x
    if s >= 2:
        x = _pow(x, s - 1, f.u, lp, tag)
    f.xprev = x
    f.x = _step(x, f.u, lp, tag)
    f.last = t


cdef void _flush_t(SpdcProblem* P, const LazyParams* lp, reg_t* tag) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(P.d):
        _catch_up(&P.feat[j], P.t, lp, tag)


cdef void _flush(SpdcProblem* P, const LazyParams* lp) noexcept nogil:
    if P.lam1 > 0.0:
        _flush_t(P, lp, <RegEN*>NULL)
    elif P.lam > 0.0:
        _flush_t(P, lp, <RegL2*>NULL)
    else:
        _flush_t(P, lp, <RegNone*>NULL)


cdef void _lazy_params(LazyParams* lp, const SpdcProblem* P, double* tab,
                       int64_t tab_len) noexcept nogil:
    """Set the prox parameters from P.tau and fill the pure-L2 tables (tab: 2 tab_len)."""
    cdef int64_t s
    cdef double L, e
    lp.tau = P.tau
    lp.lam1 = P.lam1
    lp.lam2 = P.lam
    lp.a = 1.0 / (1.0 + P.tau * P.lam)
    lp.tl1 = P.tau * P.lam1
    lp.apow = NULL
    lp.coef = NULL
    lp.tab_len = 0
    if tab != NULL and tab_len > 0 and P.lam1 == 0.0 and P.lam > 0.0:
        L = log1p(P.tau * P.lam)
        if L > 0.0:
            for s in range(tab_len):
                e = -<double>s * L
                tab[s] = exp(e)
                tab[tab_len + s] = -expm1(e) / P.lam
            lp.apow = tab
            lp.coef = tab + tab_len
            lp.tab_len = tab_len


# ---------------------------------------------------------------------------------------
# parameters (Wang & Xiao 2017, Theorem 2 for SPDC, Theorem 4 for DF-SPDC)


cdef void _params(int method, double n, double m, double R, double gamma, double delta,
                  double lam, double Delta, double* tau, double* sigma, double* theta_x,
                  double* theta_y) noexcept nogil:
    cdef double S = (n * lam + Delta) / m, nb = n / m
    if method == SPDC_DUAL_FREE:
        tau[0] = sqrt(gamma / S) / (4.0 * R)
        sigma[0] = sqrt(gamma * S) / (4.0 * R)
        theta_x[0] = (1.0 - tau[0] * sigma[0] * Delta / (2.0 * n * (sigma[0] + 4.0))) / (1.0 + tau[0] * lam)
        theta_y[0] = (1.0 + ((nb - 1.0) / nb) * sigma[0] / 2.0) / (1.0 + sigma[0] / 2.0)
    else:
        tau[0] = sqrt(gamma / S) / (4.0 * R)
        sigma[0] = sqrt(S / gamma) / (4.0 * R)
        theta_x[0] = ((1.0 - tau[0] * sigma[0] * Delta / (2.0 * n * (sigma[0] + 4.0 * delta)))
                      / (1.0 + tau[0] * lam))
        theta_y[0] = ((1.0 + ((nb - 1.0) / nb) * sigma[0] * gamma / 2.0)
                      / (1.0 + sigma[0] * gamma / 2.0))


cdef void spdc_set_params(SpdcProblem* P, double delta_hat) noexcept nogil:
    cdef double tx, ty
    P.delta_hat = delta_hat
    _params(P.method, <double>P.n, <double>P.batch, P.R, P.gamma, P.delta, P.lam, delta_hat,
            &P.tau, &P.sigma, &tx, &ty)
    P.theta = tx if tx > ty else ty


# ---------------------------------------------------------------------------------------
# sampling


cdef Py_ssize_t _draw_epoch(rng_state* rng, Py_ssize_t* perm, Py_ssize_t* order,
                            Py_ssize_t n, Py_ssize_t m, int sampling) noexcept nogil:
    """Rows of one epoch into order (batches of m consecutive entries); returns their
    number: n for permutations, ceil(n/m) m for uniform sampling."""
    cdef Py_ssize_t i, r, j, tmp, it, ipe = (n + m - 1) // m
    if sampling == SPDC_SAMPLE_PERMUTATION:
        rng_shuffle(rng, perm, n)
        for i in range(n):
            order[i] = perm[i]
        return n
    if m == 1:
        for i in range(n):
            order[i] = <Py_ssize_t>rng_below(rng, <uint64_t>n)
        return n
    # m distinct rows per step: a partial Fisher-Yates shuffle of the persistent perm
    for it in range(ipe):
        for r in range(m):
            j = r + <Py_ssize_t>rng_below(rng, <uint64_t>(n - r))
            tmp = perm[r]
            perm[r] = perm[j]
            perm[j] = tmp
            order[it * m + r] = perm[r]
    return ipe * m


# ---------------------------------------------------------------------------------------
# the stochastic steps


cdef inline void _prefetch_order_row(const floating* data, const index_t* indices,
                                     const index_t* indptr, const Py_ssize_t* order,
                                     Py_ssize_t it, Py_ssize_t n_steps) noexcept nogil:
    """Prefetch the CSR lines of the row visited at step it (if there is one)."""
    cdef Py_ssize_t k
    if it < n_steps:
        k = order[it]
        prefetch_row(data + indptr[k], indices + indptr[k], indptr[k + 1] - indptr[k])


cdef inline double _dual_update(SpdcProblem* P, const Loss* loss, Py_ssize_t k, double dot,
                                double sigma, double inv_sigma, bint dual_free) noexcept nogil:
    """The new y_k from dot = a_k . xt (and v_k for the dual-free step)."""
    cdef double vk
    if dual_free:
        vk = (P.v[k] + sigma * dot) / (1.0 + sigma)
        P.v[k] = vk
        return loss_deriv(loss, vk, P.b[k])
    # prox_{sigma phi*}(y_k + sigma dot) = -argmin_a h(a) + dot (a + y_k) + (a + y_k)^2/(2 sigma)
    return -loss_dual_step(loss, P.b[k], dot, -P.y[k], inv_sigma)


cdef inline double _row_dual_step(const floating* data, const index_t* indices, Py_ssize_t lo,
                                  Py_ssize_t hi, SpdcProblem* P, const Loss* loss, Py_ssize_t k,
                                  int64_t t, double theta, double sigma, double inv_sigma,
                                  bint dual_free, const LazyParams* L, reg_t* tag) noexcept nogil:
    """Bring row k's features to iteration t, return the new y_k from a_k . xt (recorded in
    the trace when one is attached); y_k itself is not changed."""
    cdef SpdcFeature* f
    cdef double dot = 0.0, xj
    cdef Py_ssize_t q
    for q in range(lo, hi):
        f = &P.feat[indices[q]]
        _catch_up(f, t, L, tag)
        xj = f.x
        dot += data[q] * (xj + theta * (xj - f.xprev))
    if P.trace != NULL and P.trace_pos < P.trace_len:
        P.trace[P.trace_pos] = dot
        P.trace_pos += 1
    return _dual_update(P, loss, k, dot, sigma, inv_sigma, dual_free)


cdef inline double _take_dual(double* y, const double* wt, Py_ssize_t k,
                              double ynew) noexcept nogil:
    """y_k <- ynew; returns the change of c_k eta_k (0: none; wt NULL: c = 1)."""
    cdef double dy = ynew - y[k]
    if dy != 0.0:
        y[k] = ynew
        if wt != NULL:
            dy *= wt[k]
    return dy


cdef void _steps_single(const floating* data, const index_t* indices, const index_t* indptr,
                        SpdcProblem* P, const LazyParams* lp, Py_ssize_t offset,
                        Py_ssize_t n_steps, reg_t* tag) noexcept nogil:
    cdef SpdcFeature* feat = P.feat
    cdef SpdcFeature* f
    cdef double* y = P.y
    cdef const Py_ssize_t* order = P.order + offset
    cdef Loss loss = P.loss
    cdef LazyParams L = lp[0]
    cdef bint dual_free = P.method == SPDC_DUAL_FREE
    cdef double theta = P.theta, sigma = P.sigma, inv_sigma = 1.0 / P.sigma
    cdef double inv_n = 1.0 / <double>P.n
    cdef const double* wt = P.weight
    cdef int64_t t = P.t
    cdef Py_ssize_t it, k, q, lo, hi
    cdef double ynew, dy, c, a, xj
    _prefetch_order_row(data, indices, indptr, order, 0, n_steps)
    _prefetch_order_row(data, indices, indptr, order, 1, n_steps)
    for it in range(n_steps):
        _prefetch_order_row(data, indices, indptr, order, it + 2, n_steps)
        if it + 1 < n_steps:
            k = order[it + 1]
            prefetch_records(indices + indptr[k], indptr[k + 1] - indptr[k], feat,
                             sizeof(SpdcFeature))
        k = order[it]
        lo = indptr[k]
        hi = indptr[k + 1]
        ynew = _row_dual_step(data, indices, lo, hi, P, &loss, k, t, theta, sigma, inv_sigma,
                              dual_free, &L, tag)
        dy = _take_dual(y, wt, k, ynew)
        if dy != 0.0:
            # (dy = 0: x moves by F on the row's features like on every other feature,
            # so they are simply left lazy)
            c = dy * inv_n
            for q in range(lo, hi):
                f = &feat[indices[q]]
                a = data[q]
                xj = f.x
                f.xprev = xj
                f.x = _step(xj, f.u + dy * a, &L, tag)
                f.last = t + 1
                f.u += c * a
        t += 1
    P.t = t


cdef inline void _feature_step(SpdcFeature* f, double* acc, int64_t t, double inv_mk,
                               double inv_n, const LazyParams* L, reg_t* tag) noexcept nogil:
    """A batch's primal step on one feature from its accumulated sum (acc, then zeroed);
    nothing when the batch stepped it already (a feature shared by two rows)."""
    cdef double a, xj
    if f.last != t:
        return
    a = acc[0]
    acc[0] = 0.0
    xj = f.x
    f.xprev = xj
    f.x = _step(xj, f.u + a * inv_mk, L, tag)
    f.last = t + 1
    f.u += a * inv_n


cdef void _batch_in_threads(const floating* data, const index_t* indices,
                            const index_t* indptr, SpdcProblem* P, LazyParams L, Loss loss,
                            const Py_ssize_t* rows, Py_ssize_t mk, int64_t t, double* dyb,
                            reg_t* tag, const Blocks* team) noexcept nogil:
    """One batch's iteration in the team's threads, the serial batch step's bits: the
    catch-up of its features and the primal step by the team's ranges of features (each
    feature's sums and step in the batch's row order, as on one thread), the dual steps
    by rows (every dot reads x at iteration t; the batch's rows are distinct). L and loss
    are copies: the caller's are never address-taken by a parallel region."""
    cdef Py_ssize_t blk, r
    for blk in prange(team.size, num_threads=team.size, schedule="static", chunksize=1):
        _batch_catch_up(indices, indptr, P, &L, rows, mk, t, tag, team.cols[blk],
                        team.cols[blk + 1])
    for r in prange(mk, num_threads=team.size, schedule="static"):
        dyb[r] = _batch_dual_step(data, indices, indptr, P, &loss, rows[r], t)
    for blk in prange(team.size, num_threads=team.size, schedule="static", chunksize=1):
        _batch_primal_step(data, indices, indptr, P, &L, rows, mk, t, dyb, tag,
                           team.cols[blk], team.cols[blk + 1])


cdef inline void _batch_catch_up(const index_t* indices, const index_t* indptr,
                                 SpdcProblem* P, const LazyParams* L, const Py_ssize_t* rows,
                                 Py_ssize_t mk, int64_t t, reg_t* tag, Py_ssize_t lo,
                                 Py_ssize_t hi) noexcept nogil:
    """The batch's features in [lo, hi) brought to iteration t."""
    cdef Py_ssize_t r, k, q, j
    for r in range(mk):
        k = rows[r]
        for q in range(indptr[k], indptr[k + 1]):
            j = indices[q]
            if lo <= j < hi:
                _catch_up(&P.feat[j], t, L, tag)


cdef inline double _batch_dual_step(const floating* data, const index_t* indices,
                                    const index_t* indptr, SpdcProblem* P, const Loss* loss,
                                    Py_ssize_t k, int64_t t) noexcept nogil:
    """Row k's dual step from a_k . xt (its features current at t); returns the change of
    c_k eta_k (0: none) and stores the new y_k."""
    cdef SpdcFeature* f
    cdef double dot = 0.0, xj, ynew
    cdef Py_ssize_t q
    for q in range(indptr[k], indptr[k + 1]):
        f = &P.feat[indices[q]]
        xj = f.x
        dot += data[q] * (xj + P.theta * (xj - f.xprev))
    ynew = _dual_update(P, loss, k, dot, P.sigma, 1.0 / P.sigma,
                        P.method == SPDC_DUAL_FREE)
    return _take_dual(P.y, P.weight, k, ynew)


cdef inline void _batch_primal_step(const floating* data, const index_t* indices,
                                    const index_t* indptr, SpdcProblem* P,
                                    const LazyParams* L, const Py_ssize_t* rows,
                                    Py_ssize_t mk, int64_t t, const double* dyb, reg_t* tag,
                                    Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """The batch's sums into the accumulator and the primal step, on features in [lo, hi)."""
    cdef double* acc = P.work_d
    cdef double inv_n = 1.0 / <double>P.n, inv_mk = 1.0 / <double>mk, a, xj
    cdef Py_ssize_t r, k, q, j
    cdef SpdcFeature* f
    for r in range(mk):
        if dyb[r] != 0.0:
            k = rows[r]
            for q in range(indptr[k], indptr[k + 1]):
                j = indices[q]
                if lo <= j < hi:
                    acc[j] += dyb[r] * data[q]
    for r in range(mk):
        if dyb[r] == 0.0:
            continue
        k = rows[r]
        for q in range(indptr[k], indptr[k + 1]):
            j = indices[q]
            if lo <= j < hi:
                _feature_step(&P.feat[j], &acc[j], t, inv_mk, inv_n, L, tag)


cdef void _steps_batch(const floating* data, const index_t* indices, const index_t* indptr,
                       SpdcProblem* P, const LazyParams* lp, Py_ssize_t offset,
                       Py_ssize_t total, double* dyb, reg_t* tag, const Blocks* team,
                       BatchClock* clock) noexcept nogil:
    """Mini-batch steps: rows order[offset + s : offset + s + m] form one iteration (the last
    batch of a permutation may be shorter). A batch of batch_min_nnz() nonzeros or more
    (1,024; m times the mean row) may step in the team's threads (_batch_in_threads: the
    same bits), as the clock says."""
    cdef SpdcFeature* feat = P.feat
    cdef SpdcFeature* f
    cdef double* y = P.y
    cdef double* acc = P.work_d
    cdef const Py_ssize_t* order = P.order + offset
    cdef Loss loss = P.loss
    cdef LazyParams L = lp[0]
    cdef bint dual_free = P.method == SPDC_DUAL_FREE
    cdef double theta = P.theta, sigma = P.sigma, inv_sigma = 1.0 / P.sigma
    cdef double inv_n = 1.0 / <double>P.n, inv_mk
    cdef const double* wt = P.weight
    cdef int64_t t = P.t
    cdef Py_ssize_t m = P.batch, start, end, r, k, q, lo, hi, j
    cdef double ynew, dy, a, xj
    cdef bint any_change
    cdef Py_ssize_t tb = 1
    cdef double batch_nnz
    if (team.size > 1 and P.trace == NULL
            and <double>m * <double>indptr[P.n] / <double>P.n >= batch_min_nnz()):
        tb = team.size
    start = 0
    while start < total:
        end = start + m
        if end > total:
            end = total
        inv_mk = 1.0 / <double>(end - start)
        if tb > 1:
            batch_nnz = 0.0
            if clock.probing:                     # the clock weighs its probes by nonzeros
                for r in range(start, end):
                    batch_nnz += <double>(indptr[order[r] + 1] - indptr[order[r]])
            if batch_clock_threads(clock):
                _batch_in_threads(data, indices, indptr, P, L, loss, order + start,
                                  end - start, t, dyb, tag, team)
                batch_clock_done(clock, True, batch_nnz)
                t += 1
                start = end
                continue
        any_change = False
        for r in range(start, end):
            k = order[r]
            lo = indptr[k]
            hi = indptr[k + 1]
            ynew = _row_dual_step(data, indices, lo, hi, P, &loss, k, t, theta, sigma, inv_sigma,
                                  dual_free, &L, tag)
            dy = _take_dual(y, wt, k, ynew)
            dyb[r - start] = dy
            if dy != 0.0:
                any_change = True
                for q in range(lo, hi):
                    acc[indices[q]] += dy * data[q]
        if any_change:
            for r in range(start, end):
                if dyb[r - start] == 0.0:
                    continue
                k = order[r]
                for q in range(indptr[k], indptr[k + 1]):
                    j = indices[q]
                    _feature_step(&feat[j], &acc[j], t, inv_mk, inv_n, &L, tag)
        if tb > 1:
            batch_clock_done(clock, False, batch_nnz)
        t += 1
        start = end
    P.t = t


# ---------------------------------------------------------------------------------------
# the scaled fast path: batch 1, pure L2 (lam > 0, lam1 = 0)
#
# With a pure L2 term every feature off the row moves by the same affine map
# x <- a (x - tau u_j), so the iterate is kept as x^t = A v + B u and x^(t-1) = Ap v + Bp u
# with four global scalars (A <- a A, B <- a (B - tau) per step) and 16 bytes per feature
# (v, u): no step counter and no xprev, half the state of SpdcFeature, which is what the
# sparse steps wait on (news20: 27 MB instead of 53 MB against a 32 MB L3).
#
# The features of the previous row are the only ones whose x^(t-1) is off that map: for
# them x^(t-1) = x^t / a + tau (u_old + dy a_kj), while the map gives x^t / a + tau u with
# u = u_old + dy a_kj / n. Their records hold u* = u_old + dy a_kj instead of u (and v
# adjusted so that A v + B u* is still x^t): then Ap v + Bp u* is their true x^(t-1), and
# the next dot product needs no correction at all. The records get their true u back
# right after that dot product, before the map moves on. Cost: one pass over the previous
# row's records, which are still in L2.


ctypedef struct ScaledFeature:
    double v
    double u

ctypedef struct ScaledState:
    ScaledFeature* s          # d
    double A
    double B
    double Ap
    double Bp
    double a                  # 1 / (1 + tau lam) of the current steps (set as they start)
    double tau
    bint loaded               # s holds the iterate (else P.feat does)
    Py_ssize_t prev_lo        # the previous row's CSR range (prev_lo == prev_hi: none)
    Py_ssize_t prev_hi
    double prev_du            # its records hold u + prev_du a_kj (prev_du = dy (1 - 1/n))


cdef inline void _shift_prev(const floating* data, const index_t* indices, ScaledState* S,
                             double sign) noexcept nogil:
    """Add sign * (the previous row's offset) to its records' u, keeping A v + B u fixed."""
    cdef Py_ssize_t q
    cdef double du, dv
    cdef ScaledFeature* f
    if S.prev_lo == S.prev_hi:
        return
    du = sign * S.prev_du
    dv = -du * S.B / S.A
    for q in range(S.prev_lo, S.prev_hi):
        f = &S.s[indices[q]]
        f.u += du * data[q]
        f.v += dv * data[q]


cdef void _scaled_load(SpdcProblem* P, ScaledState* S, const LazyParams* lp) noexcept nogil:
    """Take over the starting iterate of P.feat (x at P.t = 0, u exact; x^(-1) = x^0)."""
    cdef Py_ssize_t j
    for j in range(P.d):
        S.s[j].v = P.feat[j].x
        S.s[j].u = P.feat[j].u
    S.A = 1.0
    S.B = 0.0
    S.Ap = 1.0
    S.Bp = 0.0
    S.prev_lo = S.prev_hi = 0
    S.a = lp.a
    S.tau = lp.tau
    S.loaded = True


cdef void _scaled_flush(const floating* data, const index_t* indices, SpdcProblem* P,
                        ScaledState* S) noexcept nogil:
    """Write x^t, x^(t-1) and u back into P.feat (all at iteration P.t)."""
    cdef Py_ssize_t j, q
    cdef double v, u
    if not S.loaded:
        return
    for j in range(P.d):
        v = S.s[j].v
        u = S.s[j].u
        P.feat[j].x = S.A * v + S.B * u
        P.feat[j].xprev = S.Ap * v + S.Bp * u
        P.feat[j].u = u
        P.feat[j].last = P.t
    for q in range(S.prev_lo, S.prev_hi):       # the previous row's records hold u*
        P.feat[indices[q]].u -= S.prev_du * data[q]
    S.loaded = False


cdef void _scaled_rebase(ScaledState* S, Py_ssize_t d) noexcept nogil:
    """v <- x, A = 1, B = 0 before A underflows (x^(t-1) = x^t / a + tau u; the previous
    row's records keep their offset u*, which this map turns into their true x^(t-1))."""
    cdef Py_ssize_t j
    for j in range(d):
        S.s[j].v = S.A * S.s[j].v + S.B * S.s[j].u
    S.A = 1.0
    S.B = 0.0
    S.Ap = 1.0 / S.a
    S.Bp = S.tau


cdef void _steps_scaled(const floating* data, const index_t* indices, const index_t* indptr,
                        SpdcProblem* P, ScaledState* S, const LazyParams* lp,
                        Py_ssize_t offset, Py_ssize_t n_steps) noexcept nogil:
    cdef ScaledFeature* sf = S.s
    cdef ScaledFeature* f
    cdef double* y = P.y
    cdef const Py_ssize_t* order = P.order + offset
    cdef Loss loss = P.loss
    cdef bint dual_free = P.method == SPDC_DUAL_FREE
    cdef double theta = P.theta, sigma = P.sigma, inv_sigma = 1.0 / P.sigma
    cdef double inv_n = 1.0 / <double>P.n
    cdef const double* wt = P.weight
    cdef double a, tau, A, B, An, Bn, cv, cu, du, c0, c1, dot, ynew, dy
    cdef Py_ssize_t it, k, q, lo, hi
    if not S.loaded:
        _scaled_load(P, S, lp)
    # (Ap, Bp) were fixed with the previous steps' a and tau; these steps use lp's, which
    # an adaptation after the last evaluation may have changed
    S.a = lp.a
    S.tau = lp.tau
    a = S.a
    tau = S.tau
    _prefetch_order_row(data, indices, indptr, order, 0, n_steps)
    _prefetch_order_row(data, indices, indptr, order, 1, n_steps)
    for it in range(n_steps):
        _prefetch_order_row(data, indices, indptr, order, it + 2, n_steps)
        if it + 1 < n_steps:
            k = order[it + 1]
            prefetch_records(indices + indptr[k], indptr[k + 1] - indptr[k], sf,
                             sizeof(ScaledFeature))
        k = order[it]
        lo = indptr[k]
        hi = indptr[k + 1]
        A = S.A
        B = S.B
        # xt = (1 + theta) x^t - theta x^(t-1), exact for every feature (see above)
        c0 = (1.0 + theta) * A - theta * S.Ap
        c1 = (1.0 + theta) * B - theta * S.Bp
        dot = 0.0
        for q in range(lo, hi):
            f = &sf[indices[q]]
            dot += data[q] * (c0 * f.v + c1 * f.u)
        if P.trace != NULL and P.trace_pos < P.trace_len:
            P.trace[P.trace_pos] = dot
            P.trace_pos += 1
        _shift_prev(data, indices, S, -1.0)
        S.prev_lo = S.prev_hi = 0
        ynew = _dual_update(P, &loss, k, dot, sigma, inv_sigma, dual_free)
        dy = ynew - y[k]
        An = a * A
        Bn = a * (B - tau)
        if dy != 0.0:
            # the row's features: x <- a (x - tau (u + dy a_kj)) = An v + Bn u - a tau dy a_kj,
            # and u += dy a_kj / n, plus the offset du a_kj (x^(t+1) unchanged): their
            # records take u* = u + dy a_kj and v += cv a_kj
            y[k] = ynew
            if wt != NULL:
                dy *= wt[k]                       # the change of c_k eta_k
            du = dy * (1.0 - inv_n)
            cu = dy
            cv = -(a * tau * dy + Bn * cu) / An
            for q in range(lo, hi):
                f = &sf[indices[q]]
                f.v += cv * data[q]
                f.u += cu * data[q]
            S.prev_lo = lo
            S.prev_hi = hi
            S.prev_du = du
        S.Ap = A
        S.Bp = B
        S.A = An
        S.B = Bn
        P.t += 1
        if An < 1e-100:
            _scaled_rebase(S, P.d)


cdef void _steps(const floating* data, const index_t* indices, const index_t* indptr,
                 SpdcProblem* P, const LazyParams* lp, Py_ssize_t offset, Py_ssize_t total,
                 double* dyb, ScaledState* S, const Blocks* team,
                 BatchClock* clock) noexcept nogil:
    """Steps over the rows order[offset:offset + total] (a whole number of batches),
    specialised by regulariser (S: the scaled state of the pure-L2 single-row path, else
    NULL)."""
    if S != NULL:
        _steps_scaled(data, indices, indptr, P, S, lp, offset, total)
    elif P.batch == 1:
        if P.lam1 > 0.0:
            _steps_single(data, indices, indptr, P, lp, offset, total, <RegEN*>NULL)
        elif P.lam > 0.0:
            _steps_single(data, indices, indptr, P, lp, offset, total, <RegL2*>NULL)
        else:
            _steps_single(data, indices, indptr, P, lp, offset, total, <RegNone*>NULL)
    else:
        if P.lam1 > 0.0:
            _steps_batch(data, indices, indptr, P, lp, offset, total, dyb, <RegEN*>NULL,
                         team, clock)
        elif P.lam > 0.0:
            _steps_batch(data, indices, indptr, P, lp, offset, total, dyb, <RegL2*>NULL,
                         team, clock)
        else:
            _steps_batch(data, indices, indptr, P, lp, offset, total, dyb, <RegNone*>NULL,
                         team, clock)


# ---------------------------------------------------------------------------------------
# evaluation: FLUSH, exact u, P, D, gap and the stopping / adaptation measure


cdef int _measure_kind(const SpdcProblem* P) noexcept nogil:
    if P.lam > 0.0:
        return MEASURE_GAP
    if P.lam1 > 0.0:
        return MEASURE_RESCALED_GAP
    return MEASURE_GRAD


cdef void _row_pass(const floating* data, const index_t* indices, const index_t* indptr,
                    SpdcProblem* P, const Blocks* team, double* u0, const double* x,
                    double* u, Py_ssize_t stride, double* grad, KahanSum* sums) noexcept nogil:
    """The evaluation's pass over the rows, with x_j = x[stride j] and u_j = u[stride j]
    (u zeroed beforehand): the scores into P.z, sums[0] += the losses, sums[1] += the
    conjugates at -y (compensated sums), u += A^T y / n, and (grad not NULL) grad += the
    loss gradient. With weights: c_i times each row's loss, conjugate (at -eta_i),
    dual variable and gradient; a row of weight 0 adds nothing. In the team's blocks of
    rows (_core/blocks.pxd): block b >= 1 into its own u and gradient (from 0), added
    back by ranges of features in block order, its sums after block 0's; with more than
    one block, block 0's u goes to ``u0`` (d, from 0): x and u share cache lines (the
    feature records), which the other blocks read."""
    cdef Py_ssize_t b, j, d = P.d, size = team.size
    cdef double* own
    for b in prange(size, num_threads=size, schedule="static", chunksize=1):
        if b == 0 and size == 1:
            _row_pass_rows(data, indices, indptr, P, x, stride, u, stride, grad,
                           team.rows[0], team.rows[1], sums)
        elif b == 0:
            memset(u0, 0, d * sizeof(double))
            _row_pass_rows(data, indices, indptr, P, x, stride, u0, 1, grad,
                           team.rows[0], team.rows[1], sums)
        else:
            own = blocks_own(team, b)
            memset(own, 0, 2 * d * sizeof(double))
            team.sums[2 * b] = ksum_new()
            team.sums[2 * b + 1] = ksum_new()
            _row_pass_rows(data, indices, indptr, P, x, stride, own, 1,
                           own + d if grad != NULL else NULL, team.rows[b],
                           team.rows[b + 1], &team.sums[2 * b])
    if size == 1:
        return
    for b in range(1, size):
        ksum_add(&sums[0], ksum_value(&team.sums[2 * b]))
        ksum_add(&sums[1], ksum_value(&team.sums[2 * b + 1]))
    for b in prange(size, num_threads=size, schedule="static", chunksize=1):
        for j in range(team.cols[b], team.cols[b + 1]):
            u[stride * j] += u0[j]
    blocks_add_copies(team, u, stride, 0)
    if grad != NULL:
        blocks_add_copies(team, grad, 1, d)


cdef void _row_pass_rows(const floating* data, const index_t* indices, const index_t* indptr,
                         SpdcProblem* P, const double* x, Py_ssize_t stride, double* u,
                         Py_ssize_t u_stride, double* grad, Py_ssize_t first, Py_ssize_t end,
                         KahanSum* sums) noexcept nogil:
    """_row_pass over rows first .. end - 1 (u_j = u[u_stride j])."""
    cdef Py_ssize_t i, q, lo, hi
    cdef double z, c, r, ci = 1.0, inv_n = 1.0 / <double>P.n
    for i in range(first, end):
        lo = indptr[i]
        hi = indptr[i + 1]
        z = 0.0
        for q in range(lo, hi):
            z += data[q] * x[stride * indices[q]]
        P.z[i] = z
        if P.weight != NULL:
            ci = P.weight[i]
            if ci == 0.0:
                continue
            ksum_add(&sums[0], ci * loss_value(&P.loss, z, P.b[i]))
            ksum_add(&sums[1], ci * loss_conj(&P.loss, -P.y[i], P.b[i]))
        else:
            ksum_add(&sums[0], loss_value(&P.loss, z, P.b[i]))
            ksum_add(&sums[1], loss_conj(&P.loss, -P.y[i], P.b[i]))
        c = ci * P.y[i] * inv_n
        if c != 0.0:
            for q in range(lo, hi):
                u[u_stride * indices[q]] += c * data[q]
        if grad != NULL:
            r = ci * loss_deriv(&P.loss, z, P.b[i]) * inv_n
            if r != 0.0:
                for q in range(lo, hi):
                    grad[indices[q]] += r * data[q]


cdef void _evaluate(const floating* data, const index_t* indices, const index_t* indptr,
                    SpdcProblem* P, const Blocks* team, double* u0, const LazyParams* lp,
                    double* out) noexcept nogil:
    """out = (primal, dual, gap, measure). Leaves x flushed to P.t and u = A^T y / n."""
    cdef Py_ssize_t i, j, n = P.n, d = P.d
    cdef SpdcFeature* feat = P.feat
    cdef int kind = _measure_kind(P)
    cdef double* grad = P.work_d
    cdef double loss_sum, conj_sum, xx, x1, gs, reg
    cdef double umax = 0.0, uj, w, primal, dual, s
    cdef KahanSum sums[2]
    cdef KahanSum sxx = ksum_new(), sx1 = ksum_new(), sgs = ksum_new(), sgg = ksum_new()
    cdef KahanSum conj_s = ksum_new()
    cdef double inv_n = 1.0 / <double>n
    _flush(P, lp)
    for j in range(d):
        feat[j].u = 0.0
    if kind == MEASURE_GRAD:
        memset(grad, 0, d * sizeof(double))
    sums[0] = ksum_new()
    sums[1] = ksum_new()
    _row_pass(data, indices, indptr, P, team, u0, &feat[0].x, &feat[0].u, 4,
              grad if kind == MEASURE_GRAD else NULL, sums)
    loss_sum = ksum_value(&sums[0])
    conj_sum = ksum_value(&sums[1])
    for j in range(d):
        w = feat[j].x
        ksum_add(&sxx, w * w)
        ksum_add(&sx1, fabs(w))
        uj = feat[j].u
        if fabs(uj) > umax:
            umax = fabs(uj)
        if P.lam > 0.0:
            w = soft_threshold(uj, P.lam1)
            ksum_add(&sgs, w * w)
        if kind == MEASURE_GRAD:
            ksum_add(&sgg, grad[j] * grad[j])
        if P.x_out != NULL:
            P.x_out[j] = feat[j].x
    xx = ksum_value(&sxx)
    x1 = ksum_value(&sx1)
    gs = ksum_value(&sgs)
    reg = 0.5 * P.lam * xx + P.lam1 * x1
    primal = loss_sum * inv_n + reg
    if P.lam > 0.0:
        dual = -conj_sum * inv_n - gs / (2.0 * P.lam)
        out[2] = (loss_sum + conj_sum) * inv_n + (reg + gs / (2.0 * P.lam))
    elif umax <= P.lam1:
        dual = -conj_sum * inv_n          # g* = indicator{||w||_inf <= lam1}, -u feasible
        out[2] = (loss_sum + conj_sum) * inv_n + reg
    else:
        dual = -INFINITY
        out[2] = INFINITY
    out[0] = primal
    out[1] = dual
    if kind == MEASURE_GAP:
        out[3] = out[2]
    elif kind == MEASURE_RESCALED_GAP:
        s = 1.0 if umax <= P.lam1 else P.lam1 / umax
        for i in range(n):
            if P.weight == NULL:
                ksum_add(&conj_s, loss_conj(&P.loss, -s * P.y[i], P.b[i]))
            elif P.weight[i] > 0.0:                 # c_i phi*(s c_i eta_i / c_i)
                ksum_add(&conj_s, P.weight[i] * loss_conj(&P.loss, -s * P.y[i], P.b[i]))
        out[3] = (loss_sum + ksum_value(&conj_s)) * inv_n + reg
    else:
        out[3] = ksum_value(&sgg)


cdef void _evaluate_scaled(const floating* data, const index_t* indices,
                           const index_t* indptr, SpdcProblem* P, const Blocks* team,
                           double* u0, ScaledState* S, double* out) noexcept nogil:
    """_evaluate on the scaled state (pure L2: the measure is the gap) without P.feat: the
    previous row's records get their true u back, v <- x with A = 1, B = 0 (as in a
    rebase), u is recomputed as A^T y / n, and the previous row's offset goes back on.
    Half the traffic of a flush into the 32-byte records, _evaluate and a load."""
    cdef Py_ssize_t j, n = P.n, d = P.d
    cdef ScaledFeature* sf = S.s
    cdef double w, loss_sum, conj_sum, xx, gs
    cdef KahanSum sums[2]
    cdef KahanSum sxx = ksum_new(), sgs = ksum_new()
    cdef double inv_n = 1.0 / <double>n
    _shift_prev(data, indices, S, -1.0)
    for j in range(d):
        sf[j].v = S.A * sf[j].v + S.B * sf[j].u
        sf[j].u = 0.0
    S.A = 1.0
    S.B = 0.0
    S.Ap = 1.0 / S.a            # x^(t-1) = x^t / a + tau u under the last steps' map
    S.Bp = S.tau
    sums[0] = ksum_new()
    sums[1] = ksum_new()
    _row_pass(data, indices, indptr, P, team, u0, &sf[0].v, &sf[0].u, 2, NULL, sums)
    loss_sum = ksum_value(&sums[0])
    conj_sum = ksum_value(&sums[1])
    for j in range(d):
        w = sf[j].v
        ksum_add(&sxx, w * w)
        ksum_add(&sgs, sf[j].u * sf[j].u)
        if P.x_out != NULL:
            P.x_out[j] = w
    _shift_prev(data, indices, S, 1.0)
    xx = ksum_value(&sxx)
    gs = ksum_value(&sgs)
    out[0] = loss_sum * inv_n + 0.5 * P.lam * xx
    out[1] = -conj_sum * inv_n - gs / (2.0 * P.lam)
    out[2] = (loss_sum + conj_sum) * inv_n + (0.5 * P.lam * xx + gs / (2.0 * P.lam))
    out[3] = out[2]


# ---------------------------------------------------------------------------------------
# adaptation (Wang & Xiao 2017, Algorithms 3 and 4, with the gap ratio of a window fitted by
# log-linear least squares): every T passes from the measures of the window


cdef double _log_promise(const SpdcProblem* P, double Delta, double passes,
                        Py_ssize_t ipe) noexcept nogil:
    """log theta(Delta)^(passes ipe): the decrease over ``passes`` epochs that Theorem 2 / 4
    guarantees with the parameters of Delta when Delta <= delta mu^2 (theta > 0 always)."""
    cdef double tau, sigma, tx, ty
    _params(P.method, <double>P.n, <double>P.batch, P.R, P.gamma, P.delta, P.lam, Delta,
            &tau, &sigma, &tx, &ty)
    return passes * <double>ipe * log(tx if tx > ty else ty)


cdef int _adapt(SpdcProblem* P, const SpdcOptions* opt, const double* G, const double* tw,
                Py_ssize_t npts, double thr, double* rho, Py_ssize_t ipe) noexcept nogil:
    """Update P.delta_hat from the window's measures G[0..npts) at passes tw[0..npts)
    (tw[0] = 0). Returns +1 / -1 for a change up / down, 0 for none."""
    cdef Py_ssize_t k
    cdef double sxy = 0.0, stt = 0.0, log_rho, r_hat, Tw, Delta = P.delta_hat, new, pred
    cdef double log_r, lowest, cand
    cdef bint check
    if npts < 2:
        return 0
    for k in range(npts):
        if not (isfinite(G[k]) and G[k] > thr):
            return 0                  # at the rounding floor (or no measure): freeze
    for k in range(1, npts):
        sxy += tw[k] * log(G[k] / G[0])
        stt += tw[k] * tw[k]
    log_rho = sxy / stt               # per pass, regression through the origin
    Tw = tw[npts - 1]
    r_hat = exp(log_rho * Tw)         # fitted decrease over the window
    new = Delta
    # ADAPT_BACKTRACK is Algorithm 4 with Theorems 2 / 4 as a check: Delta <= delta mu^2
    # guarantees the decrease p(Delta) = theta(Delta)^(Tw n/m). A fitted log-decrease below
    # 1/c_hi of log p(Delta) shows Delta > delta mu^2: back off to the largest
    # Delta / factor^k whose guarantee the fit meets (Algorithm 4 alone compares only with
    # the previous window and keeps a Delta whose slow rate is steady), and a doubling must
    # not land on a Delta that the same fit refutes. A loss with delta = 0 (logistic,
    # smoothed hinge) has no guarantee for any Delta > 0: there it is Algorithm 4.
    log_r = log_rho * Tw
    check = opt.adapt == ADAPT_BACKTRACK and P.delta > 0.0
    if check and log_r > _log_promise(P, Delta, Tw, ipe) / opt.c_hi:
        # below about 1e-12 n lam (or delta_min) Delta no longer changes theta
        lowest = opt.delta_min
        if lowest < 1e-12 * <double>P.n * P.lam:
            lowest = 1e-12 * <double>P.n * P.lam
        if not lowest > 0.0:
            lowest = 1e-30 * Delta
        new = Delta / opt.factor              # no Delta explains the window (a transient)
        cand = new
        while cand > lowest:
            if log_r <= _log_promise(P, cand, Tw, ipe) / opt.c_hi:
                new = cand
                break
            cand = cand / opt.factor
        rho[0] = r_hat
    elif opt.adapt == ADAPT_ROBUST or opt.adapt == ADAPT_BACKTRACK:
        if r_hat <= opt.c_lo * rho[0] and not (
                check and log_r > _log_promise(P, Delta * opt.factor, Tw, ipe) / opt.c_hi):
            new = Delta * opt.factor
            rho[0] = r_hat
        elif r_hat >= opt.c_hi * rho[0]:
            new = Delta / opt.factor
            rho[0] = r_hat
    else:
        pred = exp(Tw * <double>ipe * log(P.theta))
        new = Delta * opt.factor if r_hat < pred else Delta / opt.factor
    if new < opt.delta_min:
        new = opt.delta_min
    if new == Delta:
        return 0
    spdc_set_params(P, new)
    return 1 if new > Delta else -1


# ---------------------------------------------------------------------------------------
# the solver


cdef SpdcOptions spdc_default_options() noexcept nogil:
    cdef SpdcOptions o
    o.tol = 1e-6
    o.scale = 1.0
    o.max_epochs = 1000
    o.check_every = 1
    o.sampling = SPDC_SAMPLE_UNIFORM
    o.seed = 0
    o.adapt = ADAPT_NONE
    o.period = 10
    o.c_lo = 0.95
    o.c_hi = 1.5
    o.factor = 2.0
    o.delta_min = 0.0
    o.table_max = 1 << 20
    o.n_threads = 1
    return o


cdef void spdc_problem_init(SpdcProblem* P, Py_ssize_t n, Py_ssize_t d, const double* b,
                            Loss loss, double lam, double lam1, double R, int method,
                            Py_ssize_t batch, SpdcFeature* feat, double* y, double* v,
                            double* z, double* work_d, Py_ssize_t* order,
                            Py_ssize_t* perm) noexcept nogil:
    P.n = n
    P.d = d
    P.b = b
    P.loss = loss
    P.lam = lam
    P.lam1 = lam1
    P.R = R
    P.gamma = loss_conj_strong_convexity(&loss)
    P.delta = 1.0 if loss.kind == LOSS_SQUARED else 0.0
    P.method = method
    P.batch = batch if batch >= 1 else 1
    P.feat = feat
    P.y = y
    P.v = v
    P.z = z
    P.work_d = work_d
    P.order = order
    P.perm = perm
    P.x_out = NULL
    P.trace = NULL
    P.trace_len = 0
    P.trace_pos = 0
    P.delta_hat = 0.0
    P.t = 0
    P.weight = NULL


cdef int _stop_steps(const floating* data, const index_t* indices, const index_t* indptr,
                     SpdcProblem* P, const LazyParams* lp, Py_ssize_t total, double* dyb,
                     ScaledState* S, Py_ssize_t chunk, epoch_hook hook, void* ctx,
                     const Blocks* team, BatchClock* clock) noexcept nogil:
    """The steps of one epoch over order[0:total], in chunks of ``chunk`` rows (a whole
    number of batches) with a poll of the hook (epoch -1: Ctrl-C) between two chunks.
    Returns 0, or the status the hook asked to stop with (the epoch is cut short)."""
    cdef Py_ssize_t start = 0, count
    cdef int stop
    while start < total:
        count = total - start
        if count > chunk:
            count = chunk
        _steps(data, indices, indptr, P, lp, start, count, dyb, S, team, clock)
        start += count
        if start < total and hook != NULL:
            stop = hook(ctx, -1, NULL)
            if stop != 0:
                return stop
    return 0


cdef int spdc_run(const floating* data, const index_t* indices, const index_t* indptr,
                  SpdcProblem* P, const SpdcOptions* opt, SpdcResult* res,
                  epoch_hook hook, void* ctx) noexcept nogil:
    """Solve to convergence (a gap measure: status.pxd's ``gap_certifies``, measure <=
    tol * (primal - measure) or the rounding floor of scale; the gradient measure: <= tol *
    scale; never for tol = 0) or ``max_epochs`` from the x in
    P.feat[j].x, the dual P.y (and margins P.v) and the estimate P.delta_hat; returns
    ``res.status``."""
    cdef Py_ssize_t i, j, epoch = 0, ipe = (P.n + P.batch - 1) // P.batch, total, npts = 0
    cdef Py_ssize_t since = 0, max_pts = opt.period + 2, ev = opt.check_every, chunk
    cdef int64_t tab_len
    cdef double values[SPDC_HOOK_VALUES]
    cdef double out[4]
    cdef double target, thr, rho = 1.0, row_nnz
    cdef double floor
    cdef double* tab = NULL
    cdef double* G = NULL
    cdef double* tw = NULL
    cdef double* dyb = NULL
    cdef int change, stop, kind = _measure_kind(P)
    cdef bint evaluated, with_tab = P.lam1 == 0.0 and P.lam > 0.0
    cdef LazyParams lp
    cdef ScaledState scaled
    cdef ScaledState* S = NULL
    cdef Blocks team                # the evaluations' blocks
    cdef Blocks batch_team          # the mini-batch steps' ranges of features (no copies)
    cdef Py_ssize_t eval_min_nnz
    cdef bint ok
    cdef BatchClock clock           # the mini-batch steps' threads, by the clock
    cdef double* u0 = NULL          # block 0's u in the evaluations, with more than one block
    if ev < 1:
        ev = 1
    # tol = 0 runs the whole budget: a measure that rounds to <= 0 certifies nothing
    target = opt.tol * opt.scale if opt.tol > 0.0 else -INFINITY
    floor = gap_floor(opt.scale)        # the gap measures stop by gap_certifies
    res.n_epochs = 0
    res.n_adapt_up = 0
    res.n_adapt_down = 0
    res.measure_kind = kind
    res.primal = res.dual = res.gap = res.measure = NAN
    res.delta_hat = P.delta_hat
    # tables cover every gap between two flushes (one evaluation every ev epochs)
    tab_len = <int64_t>ev * ipe + 2
    if tab_len > opt.table_max:
        tab_len = opt.table_max
    if tab_len > 0 and with_tab:
        tab = <double*>malloc(2 * tab_len * sizeof(double))
    G = <double*>malloc(max_pts * sizeof(double))
    tw = <double*>malloc(max_pts * sizeof(double))
    dyb = <double*>malloc(P.batch * sizeof(double))
    # the evaluations in blocks where the pass outweighs the copies: each thread's share of
    # X at least its copy of two n_features vectors (news20, where they are equal, lost
    # 0.93x with blocks); the batch steps' threads (feature ranges, no copies) either way
    eval_min_nnz = 2 * opt.n_threads * 2 * P.d
    if eval_min_nnz < BLOCKS_MIN_NNZ:
        eval_min_nnz = BLOCKS_MIN_NNZ
    memset(&team, 0, sizeof(Blocks))          # (blocks_free on them is then a no-op)
    memset(&batch_team, 0, sizeof(Blocks))
    ok = (G != NULL and tw != NULL and dyb != NULL
          and not (tab_len > 0 and with_tab and tab == NULL)
          and blocks_init(&team, indptr, P.n, P.d, opt.n_threads, eval_min_nnz, 2 * P.d, 2)
          and blocks_init(&batch_team, indptr, P.n, P.d, opt.n_threads, BLOCKS_MIN_NNZ, 0, 0))
    if ok and team.size > 1:
        u0 = <double*>malloc(P.d * sizeof(double))
        ok = u0 != NULL
    if not ok:
        _release(tab, G, tw, dyb, u0, &team, &batch_team)
        res.status = STATUS_NO_MEMORY
        return res.status
    res.status = STATUS_MAX_EPOCHS
    spdc_set_params(P, P.delta_hat)
    if P.batch == 1 and with_tab:
        memset(&scaled, 0, sizeof(ScaledState))
        scaled.s = <ScaledFeature*>malloc(P.d * sizeof(ScaledFeature))
        if scaled.s != NULL:            # else (not enough memory): the general path
            S = &scaled
    # rows per poll of the hook: about SPDC_POLL_WORK nonzeros, a whole number of batches
    row_nnz = <double>indptr[P.n] / <double>P.n + 1.0
    chunk = <Py_ssize_t>(<double>SPDC_POLL_WORK / row_nnz) // P.batch * P.batch
    if chunk < P.batch:
        chunk = P.batch
    _lazy_params(&lp, P, tab, tab_len)
    rng_seed(&P.rng, opt.seed)
    for i in range(P.n):
        P.perm[i] = i
    memset(P.work_d, 0, P.d * sizeof(double))
    P.t = 0
    P.trace_pos = 0
    for j in range(P.d):
        P.feat[j].xprev = P.feat[j].x
        P.feat[j].last = 0
    # initial evaluation (also makes u exact)
    _evaluate(data, indices, indptr, P, &team, u0, &lp, out)
    if kind == MEASURE_GRAD:
        memset(P.work_d, 0, P.d * sizeof(double))
    if not isfinite(out[0]):
        res.status = STATUS_DIVERGED
    elif (out[3] <= target if kind == MEASURE_GRAD
          else gap_certifies(out[3], out[0] - out[3], opt.tol, floor)):
        res.status = STATUS_CONVERGED
    if opt.adapt == ADAPT_ROBUST or opt.adapt == ADAPT_BACKTRACK:
        rho = exp(<double>opt.period * <double>ipe * log(P.theta))
    G[0] = out[3]
    tw[0] = 0.0
    npts = 1
    since = 0
    if hook != NULL:
        values[0], values[1], values[2], values[3] = out[0], out[1], out[2], out[3]
        values[4] = P.delta_hat
        res.status = report_epoch(hook, ctx, 0, values, res.status)
    while res.status == STATUS_MAX_EPOCHS and epoch < opt.max_epochs:
        total = _draw_epoch(&P.rng, P.perm, P.order, P.n, P.batch, opt.sampling)
        batch_clock_epoch(&clock)
        stop = _stop_steps(data, indices, indptr, P, &lp, total, dyb, S, chunk, hook, ctx,
                           &batch_team, &clock)
        if stop != 0:
            res.status = stop             # mid-epoch (Ctrl-C): the epoch does not count
            if S == NULL or not S.loaded:
                _flush(P, &lp)
            break
        epoch += 1
        since += 1
        evaluated = epoch % ev == 0 or epoch == opt.max_epochs
        if evaluated:
            if S != NULL and S.loaded:
                _evaluate_scaled(data, indices, indptr, P, &team, u0, S, out)
            else:
                _evaluate(data, indices, indptr, P, &team, u0, &lp, out)
            if kind == MEASURE_GRAD:
                memset(P.work_d, 0, P.d * sizeof(double))   # the batch accumulator
            if not isfinite(out[0]):
                res.status = STATUS_DIVERGED
            elif (out[3] <= target if kind == MEASURE_GRAD
                  else gap_certifies(out[3], out[0] - out[3], opt.tol, floor)):
                res.status = STATUS_CONVERGED
            elif opt.adapt != ADAPT_NONE:
                if npts < max_pts:
                    G[npts] = out[3]
                    tw[npts] = <double>since
                    npts += 1
                if since >= opt.period:
                    thr = target
                    if kind == MEASURE_GRAD:
                        if thr < 1e-14 * opt.scale:
                            thr = 1e-14 * opt.scale
                    elif thr < 1e-14 * fabs(out[0]):
                        thr = 1e-14 * fabs(out[0])
                    change = _adapt(P, opt, G, tw, npts, thr, &rho, ipe)
                    if change != 0:
                        # x is flushed and u exact: the new tau applies from here on
                        _lazy_params(&lp, P, tab, tab_len)
                        if change > 0:
                            res.n_adapt_up += 1
                        else:
                            res.n_adapt_down += 1
                    G[0] = out[3]
                    tw[0] = 0.0
                    npts = 1
                    since = 0
        if hook != NULL:
            values[0] = out[0] if evaluated else NAN
            values[1] = out[1] if evaluated else NAN
            values[2] = out[2] if evaluated else NAN
            values[3] = out[3] if evaluated else NAN
            values[4] = P.delta_hat
            stop = hook(ctx, epoch, values)
            if stop != 0 and res.status == STATUS_MAX_EPOCHS:
                res.status = stop
                if not evaluated and (S == NULL or not S.loaded):
                    _flush(P, &lp)
    if S != NULL:
        _scaled_flush(data, indices, P, S)          # P.feat gets the final iterate
    res.n_epochs = epoch
    res.primal = out[0]
    res.dual = out[1]
    res.gap = out[2]
    res.measure = out[3]
    res.delta_hat = P.delta_hat
    if S != NULL:
        free(scaled.s)
    _release(tab, G, tw, dyb, u0, &team, &batch_team)
    return res.status


cdef void _release(double* tab, double* G, double* tw, double* dyb, double* u0, Blocks* team,
                   Blocks* batch_team) noexcept nogil:
    """spdc_run's work memory."""
    free(tab)
    free(G)
    free(tw)
    free(dyb)
    free(u0)
    blocks_free(team)
    blocks_free(batch_team)


# ---------------------------------------------------------------------------------------
# the engine's Python entry (spdc.py): history, verbose lines, callback and Ctrl-C through
# the monitor ``mon`` (dualsolve._monitor.EpochMonitor)


FEATURE_DTYPE = np.dtype([("x", np.float64), ("xprev", np.float64), ("u", np.float64),
                          ("last", np.int64)])


def solve(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
          Py_ssize_t n_features, const double[::1] b, str loss, double param, double lam,
          double lam1, double R, int method, Py_ssize_t batch, double[::1] x, double[::1] y,
          v, double delta_hat, int adapt, Py_ssize_t period, double c_lo, double c_hi,
          double factor, double delta_min, double tol, double scale, Py_ssize_t max_epochs,
          Py_ssize_t check_every, int sampling, unsigned long long seed, mon, x_out=None,
          trace=None, Py_ssize_t table_max=1 << 20, const double[::1] weight=None,
          int n_threads=1):
    """Run spdc_run on validated arrays: x (the start, overwritten by the solution), y (the
    dual start, overwritten) and v (margins, dual-free only, overwritten) in place,
    reporting every epoch to ``mon`` (which must expect SPDC_HOOK_VALUES values).
    ``x_out``: None, or a float64 array of n_features that receives x at every evaluation
    (the callback's coef). ``trace``: a float64 array receiving a_k.xt for every row
    visited, in order (tests). ``weight``: None, or the n row weights c_i >= 0; y (and its
    start) then holds eta, the dual of the unweighted phi*, ``c_i eta_i`` being the dual
    variable of the weighted problem. Returns (status, n_epochs, primal, dual, gap, measure,
    measure_kind, delta_hat, (tau, sigma, theta), (n_up, n_down))."""
    cdef Py_ssize_t n = y.shape[0], d = n_features, j
    if indptr.shape[0] != n + 1 or b.shape[0] != n or x.shape[0] != d:
        raise ValueError("inconsistent shapes")
    if data.shape[0] == 0 or not R > 0:
        raise ValueError("X has no nonzero entries")
    if method == SPDC_DUAL_FREE and (v is None or len(v) != n):
        raise ValueError("the dual-free method needs margins v of length n")
    if weight is not None and weight.shape[0] != n:
        raise ValueError("weight must have one entry per row")
    if mon.n_values != SPDC_HOOK_VALUES:
        raise ValueError(f"the monitor expects {mon.n_values} values; spdc_run reports "
                         f"{SPDC_HOOK_VALUES}")
    feat_arr = np.zeros(d, dtype=FEATURE_DTYPE)
    feat_arr["x"] = x
    z_arr = np.empty(n)
    work = np.zeros(d)
    order = np.empty(n + batch, dtype=np.intp)
    perm = np.empty(n, dtype=np.intp)
    cdef signed char[::1] fbytes = feat_arr.view(np.int8)
    cdef double[::1] zv = z_arr, wv = work
    cdef Py_ssize_t[::1] ov = order, pv = perm
    cdef double[::1] vv
    cdef double[::1] xo
    cdef double[::1] tr
    cdef SpdcProblem P
    cdef SpdcOptions opt = spdc_default_options()
    cdef SpdcResult res
    cdef double* vptr = NULL
    if method == SPDC_DUAL_FREE:
        vv = v
        vptr = &vv[0]
    spdc_problem_init(&P, n, d, &b[0], make_loss(loss, param), lam, lam1, R, method, batch,
                      <SpdcFeature*>&fbytes[0], &y[0], vptr, &zv[0], &wv[0], &ov[0], &pv[0])
    P.delta_hat = delta_hat
    if weight is not None:
        P.weight = &weight[0]
    if x_out is not None:
        xo = x_out
        if xo.shape[0] != d:
            raise ValueError("x_out must have n_features entries")
        P.x_out = &xo[0]
    if trace is not None:
        tr = trace
        P.trace = &tr[0] if tr.shape[0] > 0 else NULL
        P.trace_len = tr.shape[0]
    opt.tol = tol
    opt.scale = scale
    opt.max_epochs = max_epochs
    opt.check_every = check_every
    opt.sampling = sampling
    opt.seed = seed
    opt.adapt = adapt
    opt.period = period
    opt.c_lo = c_lo
    opt.c_hi = c_hi
    opt.factor = factor
    opt.delta_min = delta_min
    opt.table_max = table_max
    opt.n_threads = n_threads if n_threads > 1 else 1
    with nogil:
        spdc_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, python_hook, <void*>mon)
    if res.status != STATUS_NO_MEMORY:
        for j in range(d):
            x[j] = P.feat[j].x
    return (res.status, res.n_epochs, res.primal, res.dual, res.gap, res.measure,
            res.measure_kind, res.delta_hat, (P.tau, P.sigma, P.theta),
            (res.n_adapt_up, res.n_adapt_down))


def parameters(str method, Py_ssize_t n, double R, double gamma, double delta, double lam,
               double Delta, Py_ssize_t batch=1):
    """(tau, sigma, theta, theta_x, theta_y) of Wang & Xiao 2017, Theorem 2 (method "spdc")
    or Theorem 4 (method "df_spdc"; theta_x with the 2n(sigma + 4) of its proof); batch m:
    see ``spdc_set_params``."""
    cdef double tau, sigma, tx, ty
    _params(SPDC_DUAL_FREE if method == "df_spdc" else SPDC_EUCLID, <double>n, <double>batch,
            R, gamma, delta, lam, Delta, &tau, &sigma, &tx, &ty)
    return tau, sigma, max(tx, ty), tx, ty


def index_stream(unsigned long long seed, Py_ssize_t n, Py_ssize_t epochs,
                 Py_ssize_t batch=1, str sampling="uniform"):
    """The rows the solvers visit in their first ``epochs`` epochs, as a list of arrays of
    shape (iterations, batch) (the last batch of a permutation may be shorter: a list of
    per-epoch lists of arrays then). For NumPy twins."""
    if n < 1 or batch < 1 or batch > n:
        raise ValueError("need 1 <= batch <= n")
    cdef rng_state rng
    cdef int s = SPDC_SAMPLE_PERMUTATION if sampling == "permutation" else SPDC_SAMPLE_UNIFORM
    perm = np.arange(n, dtype=np.intp)
    order = np.empty(n + batch, dtype=np.intp)
    cdef Py_ssize_t[::1] pv = perm, ov = order
    cdef Py_ssize_t e, total
    rng_seed(&rng, seed)
    out = []
    for e in range(epochs):
        total = _draw_epoch(&rng, &pv[0], &ov[0], n, batch, s)
        rows = order[:total].copy()
        out.append([rows[i:i + batch] for i in range(0, total, batch)])
    return out


def dual_prox(str loss, v, s, b, double param=0.0):
    """prox_{s phi*}(v) = argmin_w phi*(w; b) + (w - v)^2 / (2 s), elementwise, through
    the loss table: -loss_dual_step(b, 0, -v, 1/s)."""
    cdef Loss L = make_loss(loss, param)
    vb, sb, bb = np.broadcast_arrays(np.asarray(v, dtype=np.float64),
                                     np.asarray(s, dtype=np.float64),
                                     np.asarray(b, dtype=np.float64))
    out = np.empty(vb.shape)
    cdef Py_ssize_t i
    flat_v, flat_s, flat_b, flat_o = vb.ravel(), sb.ravel(), bb.ravel(), out.reshape(-1)
    for i in range(flat_o.shape[0]):
        flat_o[i] = -loss_dual_step(&L, flat_b[i], 0.0, -flat_v[i], 1.0 / flat_s[i])
    return out


def spdc_dual_step(str loss, y_old, dot, sigma, b, double param=0.0):
    """The solver's form of the SPDC dual step, elementwise:
    -loss_dual_step(b, dot, -y_old, 1/sigma) = prox_{sigma phi*}(y_old + sigma dot)."""
    cdef Loss L = make_loss(loss, param)
    yb, db, sb, bb = np.broadcast_arrays(*[np.asarray(a, dtype=np.float64)
                                           for a in (y_old, dot, sigma, b)])
    out = np.empty(yb.shape)
    flat = [a.ravel() for a in (yb, db, sb, bb)]
    flat_o = out.reshape(-1)
    cdef Py_ssize_t i
    for i in range(flat_o.shape[0]):
        flat_o[i] = -loss_dual_step(&L, flat[3][i], flat[1][i], -flat[0][i], 1.0 / flat[2][i])
    return out
