# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Stochastic AUC maximisation for a linear model (Liu, Yuan, Ying & Yang, "Stochastic AUC
Maximization with Deep Neural Networks", ICLR 2020); see _ppd.pxd for the problem and the
C interface, docs/auc.md for the method.

The run (``ppd_run``) is a sequence of stages. Stage k starts at the reference point
v0 = (w0, a0, b0) (the previous stage's average; zeros or the warm start for k = 1) with
alpha, makes its stochastic steps and returns the average of its iterates; then the exact
objective J and the certificate are evaluated there (``auc_evaluate``, one pass over X for
the scores and one for the gradient). PPD stages reset alpha to its maximiser at the
average (Algorithm 2); PGA carries the averaged alpha over (Algorithm 1).

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

PPD-AdaGrad stage (Algorithm 3 with the proximal and L2 terms in closed form): after m
steps, with G and S2 the sums of the F-gradients and of their squares since the stage
start (reset every stage)::

    w_j(m) = w0_j - eta (G_j + m lam w0_j) / (delta + sqrt(S2_j) + B m),   B = eta (lam + 1/gamma)
    a(m)   = a0 - eta G_a / (delta + sqrt(S2_a) + m eta/gamma)             (b alike)
    alpha(m) = alpha0 - eta G_al / (delta + sqrt(S2_al)),                  G_al sums -dF/dalpha

A feature's iterates between touches are summed in closed form with the digamma function.

PGA stage (Algorithm 1, Rafique et al.'s proximally guided method): the PPD-SG step
followed by the projections onto ||(w, a, b)|| <= R1 and |alpha| <= R2, T steps, and the
averages of the iterates 1..T (alpha included). The ball projection rescales all of w, so
per-feature timestamps with constant coefficients do not apply; instead w = sigma z + tau w0
(z a ScaledVec with scale sigma): the dense step is sigma *= rho, tau = rho tau + beta, the
projection scales sigma, tau, a, b, and ||v||^2 = sigma^2 ||z||^2 + 2 sigma tau <z, w0> +
tau^2 ||w0||^2 + a^2 + b^2 from running sums. The stage sum of w is S_j + (sum_t tau_t) w0_j
with S_j += z_j (Ps - stamp_j) before z_j changes, Ps = sum_t sigma_t kept in double-double
so that late (small) increments do not cancel.

Every step costs O(nnz of the sampled rows). The hook (epoch reports, Ctrl-C polls) costs
one comparison per step.
"""
from libc.math cimport sqrt, log, log1p, floor, pow, isfinite, NAN, INFINITY
from libc.stdlib cimport malloc, free
from libc.stdint cimport int64_t
from libc.string cimport memset, memcpy
from scipy.special.cython_special cimport psi

import numpy as np

from cython.parallel cimport prange

from dualsolve._core.blocks cimport (Blocks, BLOCKS_MIN_NNZ, blocks_init, blocks_own,
                                     blocks_free, blocks_add_copies)
from dualsolve._core.buffers cimport intp_out
from dualsolve.auc._alloc cimport ds_auc_calloc
from dualsolve._core.csr cimport (floating, index_t, sparse_dot, sparse_axpy, prefetch_row,
                                  prefetch_records)
from dualsolve._core.hooks cimport python_hook
from dualsolve._core.ksum cimport KahanSum, ksum_new, ksum_add, ksum_value
from dualsolve._core.rng cimport rng_state, rng_seed, rng_below
from dualsolve._core.status cimport (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_DIVERGED,
                                     STATUS_NO_MEMORY, gap_certifies, gap_target,
                                     gap_floor)
from dualsolve._core.lazy cimport (DriftJIT, drift_init, drift_catch_up, drift_step,
                                   drift_flush, drift_table_size, ScaledVec, sv_init,
                                   sv_scale, sv_dot, sv_add_at, sv_sqnorm, sv_renormalize)

cdef enum:
    ADA_DIRECT_SUM = 16      # gaps up to this many iterates are summed term by term
    POLL_NNZ = 2097152       # Ctrl-C is polled about every this many nonzeros of work
    POLL_MAX_STEPS = 65536

cdef extern from *:
    """
    #define DS_PGA_RENORM 1e-6
    """
    const double PGA_RENORM "DS_PGA_RENORM"   # PGA: fold sigma into z below this


ctypedef struct AucProblem:
    Py_ssize_t n
    Py_ssize_t d
    const double* y            # n, +-1
    double lam                 # L2 on w only
    double inv_gamma           # 1/gamma of the proximal term (0: gamma = inf)
    Py_ssize_t batch_size
    int p_mode
    double p                   # p, or its current estimate (AUC_P_ONLINE)
    double pq                  # p(1-p), or its current estimate
    double n_pos_seen          # online estimators (Algorithm 4): T+, T-, ybar
    double n_neg_seen
    double ybar
    int64_t n_seen             # gradient samples seen (the index j of Algorithm 4)
    int64_t n_samples          # every sample drawn (gradient steps and alpha resets)
    double* w                  # d: the stage's iterate (work)
    double* w0                 # d: reference point; the stage average after a stage
    double* wsum               # d: running sum of the stage's iterates (work)
    int64_t* last             # d: per-feature timestamps (work)
    double* gsum               # d: mini-batch gradient scratch, zero between steps
    Py_ssize_t* batch          # batch_size (work)
    double* coef               # batch_size (work)
    double* scores             # n: x_i.w0 (computed by the evaluation that precedes a stage)
    double* tab                # PPD-SG: drift tables, drift_table_size(tab_size) doubles
    int64_t tab_size           # flush every this many steps (>= 1)
    double delta               # PPD-AdaGrad offset of H (> 0)
    double* pstamp             # d: PGA prefix-sum stamps, high part (work)
    double* pstamp_lo          # d: PGA prefix-sum stamps, low part (work)
    double R1                  # PGA radius of the ball on v = (w, a, b) (inf: none)
    double R2                  # PGA bound on |alpha| (inf: none)
    double a
    double b
    double alpha
    double a0
    double b0
    bint scaled_sg             # PPD-SG: the scaled-iterate form where it pays
    Py_ssize_t* trace          # optional: every drawn row in order (tests)
    Py_ssize_t trace_len
    Py_ssize_t trace_pos
    rng_state rng
    # the run's clock and its reports (see _tick)
    int64_t steps              # gradient steps done before the current stage
    int64_t epoch_steps        # steps per epoch, ceil(n / batch_size)
    int64_t next_epoch         # step count of the next epoch report
    int64_t poll_steps         # steps between Ctrl-C polls
    int64_t next_event         # min(next_epoch, the next poll)
    epoch_hook hook
    void* ctx
    int64_t stop_steps         # the step count at which the hook stopped a stage
    double values[AUC_HOOK_VALUES]   # pending report: the last stage end's (NaN: none)


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
    """Algorithm 4 after the step's batch: T+, T-, p^, ybar, p(1-p)^."""
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


# ---------------------------------------------------------------------------------------
# the run's clock: epoch reports and Ctrl-C polls from inside a stage


cdef inline int _report(AucProblem* P, int64_t epoch) noexcept nogil:
    """Hand the pending values (the last stage end's, NaN when none) to the hook."""
    cdef int stop = 0
    if P.hook != NULL:
        stop = P.hook(P.ctx, epoch, P.values)
    P.values[0] = P.values[2] = P.values[3] = NAN
    return stop


cdef int _tick(AucProblem* P, int64_t s, double scalars) noexcept nogil:
    """At the step count s = P.next_event, before the next step: the report of the epoch
    that ends at s (with +inf as J when the stage's scalar iterates ``scalars`` stopped
    being finite), or a Ctrl-C poll. Nonzero: the status to stop with."""
    cdef int stop = 0
    if s == P.next_epoch:
        if not isfinite(scalars):
            P.values[0] = INFINITY
        stop = _report(P, s // P.epoch_steps)
        P.next_epoch += P.epoch_steps
    elif P.hook != NULL:
        stop = P.hook(P.ctx, -1, NULL)
    if stop != 0:
        P.stop_steps = s
    P.next_event = s + P.poll_steps
    if P.next_epoch < P.next_event:
        P.next_event = P.next_epoch
    return stop


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
                              double rho, double beta) noexcept nogil:
    cdef Py_ssize_t d = P.d, nb = P.batch_size, k, i, q, j
    cdef AheadQueue Q
    # z and s are P.w and P.wsum (d each; the stage's output is written into P.w at the end)
    cdef double* z = P.w
    cdef double* s = P.wsum
    cdef const double* xw0 = P.scores                  # x_i.w0, from the last evaluation
    cdef double* g = <double*>ds_auc_calloc(P.n, sizeof(double), 8)
    cdef const double* w0 = P.w0
    cdef int64_t t, base = P.steps, ev = P.next_event - P.steps
    cdef int stop
    cdef double sg[3]
    cdef double A = 1.0, B = 0.0, SA = 1.0, SB = 0.0, An, Bn, hz, c
    cdef double a, b, al, suma, sumb
    Q.base = NULL
    if g == NULL or not _ahead_start(data, indices, indptr, P, &Q, T):
        free(g)
        return STATUS_NO_MEMORY
    memcpy(z, w0, d * sizeof(double))                 # iterate 0 = w0 is in the sum (SA = 1)
    memset(s, 0, d * sizeof(double))
    a = P.a0
    b = P.b0
    al = P.alpha
    suma = a
    sumb = b
    # the rows of step t + 2 are prefetched at step t, the records of their features at t + 1
    for t in range(T - 1):
        if t == ev:
            stop = _tick(P, base + t, a + b + al)
            if stop != 0:
                free(Q.base)
                free(g)
                return stop
            ev = P.next_event - base
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
    for i in range(P.n):                               # the touches' payments: s += X^T g
        if g[i] != 0.0:
            sparse_axpy(g[i], data + indptr[i], indices + indptr[i], indptr[i + 1] - indptr[i], s)
    for j in range(d):
        P.w[j] = (s[j] + SA * z[j] + SB * w0[j]) / T
    memcpy(P.w0, P.w, d * sizeof(double))
    free(Q.base)
    free(g)
    P.a0 = P.a = suma / T
    P.b0 = P.b = sumb / T
    P.alpha = al                                       # replaced by the reset
    return 0


cdef int ppd_sg_stage(const floating* data, const index_t* indices, const index_t* indptr,
                      AucProblem* P, int64_t T, double eta) noexcept nogil:
    """One stage of PPD-SG: T - 1 steps from (w0, a0, b0, alpha) with step eta, prox
    center (w0, a0, b0); on return w0, a0, b0 (and w, a, b) hold the average of the T
    iterates 0..T-1. Needs eta (lam + inv_gamma) < 1. Returns 0, or the status to stop
    with (the hook's, or STATUS_NO_MEMORY)."""
    cdef DriftJIT dj
    cdef Py_ssize_t d = P.d, nb = P.batch_size, k, i, q, start, j
    cdef int64_t t, tcap, base = P.steps, ev = P.next_event - P.steps
    cdef int stop
    cdef double om = eta * (P.lam + P.inv_gamma)
    cdef double sg[3]
    cdef double a, b, al, suma, sumb, gx
    if P.scaled_sg and _sg_scaled_pays(P, indptr, 1.0 - om, T):
        return _ppd_sg_stage_scaled(data, indices, indptr, P, T, eta, 1.0 - om,
                                    eta * P.inv_gamma)
    if P.tab == NULL:
        P.tab = <double*>ds_auc_calloc(drift_table_size(P.tab_size), sizeof(double), 8)
        if P.tab == NULL:
            return STATUS_NO_MEMORY
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
        if t == ev:
            stop = _tick(P, base + t, a + b + al)
            if stop != 0:
                return stop
            ev = P.next_event - base
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
    drift_flush(&dj, T - 1)
    for j in range(d):
        P.w0[j] = P.wsum[j] / T
        P.w[j] = P.w0[j]
    P.a0 = P.a = suma / T
    P.b0 = P.b = sumb / T
    P.alpha = al                                       # replaced by the reset
    return 0


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
                           const index_t* indptr, AucProblem* P, int64_t T, double eta) noexcept nogil:
    """One stage of PPD-AdaGrad (composite dual averaging centred at the stage start; G, S2
    reset): the same contract as ppd_sg_stage."""
    cdef Py_ssize_t d = P.d, nb = P.batch_size, k, i, q, j
    cdef int64_t m, base = P.steps, ev = P.next_event - P.steps
    cdef int stop
    cdef double B = eta * (P.lam + P.inv_gamma), Bab = eta * P.inv_gamma
    cdef double sg[3]
    cdef double h, c, sga, sgb, sgal, a, b, al, suma = 0.0, sumb = 0.0, g
    cdef double Ga = 0.0, Gb = 0.0, Gal = 0.0, S2a = 0.0, S2b = 0.0, S2al = 0.0
    cdef double al0 = P.alpha
    cdef AdaFeature* F
    cdef AdaFeature* f
    cdef AheadQueue Q
    F = <AdaFeature*>ds_auc_calloc(d if d > 0 else 1, sizeof(AdaFeature), 64)
    if F == NULL:
        return STATUS_NO_MEMORY
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
        return STATUS_NO_MEMORY
    for m in range(T):
        a = P.a0 - eta * Ga / (P.delta + sqrt(S2a) + Bab * m)
        b = P.b0 - eta * Gb / (P.delta + sqrt(S2b) + Bab * m)
        suma += a
        sumb += b
        if m == T - 1:
            break
        al = al0 - eta * Gal / (P.delta + sqrt(S2al))
        if m == ev:
            stop = _tick(P, base + m, a + b + al)
            if stop != 0:
                free(F)
                free(Q.base)
                return stop
            ev = P.next_event - base
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
    for j in range(d):
        _ada_catch_up(P, &F[j], T - 1, eta, B)
        P.w0[j] = F[j].wsum / T
        P.w[j] = P.w0[j]
    free(F)
    free(Q.base)
    P.a0 = P.a = suma / T
    P.b0 = P.b = sumb / T
    P.alpha = al0 - eta * Gal / (P.delta + sqrt(S2al))
    return 0


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
                   AucProblem* P, int64_t T, double eta) noexcept nogil:
    """One stage of PGA (Algorithm 1): T steps from (w0, a0, b0, alpha) with step eta, prox
    center (w0, a0, b0), projections onto ||(w, a, b)|| <= R1 and |alpha| <= R2; on return
    w0, a0, b0 and alpha hold the averages of the iterates 1..T (the start excluded).
    Needs eta (lam + inv_gamma) < 1. Returns as ppd_sg_stage."""
    cdef ScaledVec sv
    cdef Py_ssize_t d = P.d, nb = P.batch_size, k, i, q, start, nnz, j
    cdef int64_t t, base = P.steps, ev = P.next_event - P.steps
    cdef int stop
    cdef double rho = 1.0 - eta * (P.lam + P.inv_gamma), beta = eta * P.inv_gamma
    cdef double sg[3]
    cdef double a, b, al, suma = 0.0, sumb = 0.0, sumal = 0.0, g, old, nrm2, f
    cdef double tau = 1.0, Ptau = 0.0, Ps = 0.0, Ps_lo = 0.0, zw0 = 0.0, w0w0 = 0.0
    cdef double R1sq = P.R1 * P.R1
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
        if t == ev:
            stop = _tick(P, base + t, a + b + al)
            if stop != 0:
                return stop
            ev = P.next_event - base
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
    for j in range(d):
        _pga_touch(P, &sv, j, Ps, Ps_lo)
        P.w0[j] = (P.wsum[j] + Ptau * P.w0[j]) / T
        P.w[j] = P.w0[j]
    P.a0 = P.a = suma / T
    P.b0 = P.b = sumb / T
    P.alpha = sumal / T
    return 0


cdef void _alpha_reset_sampled(const floating* data, const index_t* indices,
                               const index_t* indptr, AucProblem* P, int64_t m) noexcept nogil:
    """alpha <- mean_-(X w0) - mean_+(X w0) over m fresh samples (more are drawn until both
    classes are present): Algorithm 2's reset."""
    cdef double sp = 0.0, sn = 0.0, npos = 0.0, nneg = 0.0, h
    cdef Py_ssize_t i, start
    cdef int64_t r = 0
    while r < m or npos == 0.0 or nneg == 0.0:
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
# the exact objective and its certificate


cdef int auc_evaluate(const floating* data, const index_t* indices, const index_t* indptr,
                      Py_ssize_t n, Py_ssize_t d, const double* y, const double* w,
                      double lam, bint saddle, double a, double b, double R, double R2,
                      double* h, double* g, AucEval* ev) noexcept nogil:
    return auc_evaluate_blocks(data, indices, indptr, n, d, y, w, lam, saddle, a, b, R, R2,
                               h, g, ev, NULL)


cdef void _gradient_rows(const floating* data, const index_t* indices, const index_t* indptr,
                         const double* y, const double* h, double a, double b, double al,
                         double cpos, double cneg, Py_ssize_t lo, Py_ssize_t hi, double* g,
                         Py_ssize_t d) noexcept nogil:
    """g = sum over rows lo .. hi - 1 of (1/n) dF/dh(h_i) x_i (zeroed first)."""
    cdef Py_ssize_t i, start
    cdef double r
    memset(g, 0, d * sizeof(double))
    for i in range(lo, hi):
        if y[i] > 0:
            r = cpos * (h[i] - a - 1.0 - al)
        else:
            r = cneg * (h[i] - b + 1.0 + al)
        if r != 0.0:
            start = indptr[i]
            sparse_axpy(r, data + start, indices + start, indptr[i + 1] - start, g)


cdef int auc_evaluate_blocks(const floating* data, const index_t* indices,
                             const index_t* indptr, Py_ssize_t n, Py_ssize_t d,
                             const double* y, const double* w, double lam, bint saddle,
                             double a, double b, double R, double R2, double* h, double* g,
                             AucEval* ev, const Blocks* team) noexcept nogil:
    """See _ppd.pxd. With p = n+/n and the class means m+, m- and (biased) variances V+, V-
    of the scores, J = p(1-p) (V+ + V- + D (D + 2)) + (lam/2)||w||^2, D = m- - m+, and the
    gradient of f(w, a, b, alpha) = (1/n) sum_i F + (lam/2)||w||^2 in w is
    (1/n) sum_i dF/dh(h_i) x_i + lam w (J's at the saddle values a = m+, b = m-,
    alpha = D). Returns 0."""
    cdef Py_ssize_t i, j, start
    cdef KahanSum sp = ksum_new(), sn = ksum_new(), vp = ksum_new(), vn = ksum_new()
    cdef KahanSum ww = ksum_new(), gg = ksum_new(), gw = ksum_new()
    cdef double npos = 0.0, nneg, p, pq, mp, mn, Vp, Vn, D, hi, r, cpos, cneg, al, ga, gb
    cdef double wn2, gn2, gdw, excess
    cdef Py_ssize_t blk, size = team.size if team != NULL else 1
    # the scores, each row its own (the same values for any team); their sums in row order
    for i in prange(n, num_threads=size, schedule="static"):
        start = indptr[i]
        h[i] = sparse_dot(data + start, indices + start, indptr[i + 1] - start, w)
    for i in range(n):
        hi = h[i]
        if y[i] > 0:
            ksum_add(&sp, hi)
            npos += 1.0
        else:
            ksum_add(&sn, hi)
    nneg = n - npos
    p = npos / n
    pq = p * (1.0 - p)
    mp = ksum_value(&sp) / npos
    mn = ksum_value(&sn) / nneg
    for i in range(n):
        if y[i] > 0:
            ksum_add(&vp, (h[i] - mp) * (h[i] - mp))
        else:
            ksum_add(&vn, (h[i] - mn) * (h[i] - mn))
    Vp = ksum_value(&vp) / npos
    Vn = ksum_value(&vn) / nneg
    D = mn - mp
    for j in range(d):
        ksum_add(&ww, w[j] * w[j])
    wn2 = ksum_value(&ww)
    excess = Vp + Vn + D * (D + 2.0)                  # P_n - 1
    ev.J = pq * excess + 0.5 * lam * wn2
    ev.pairwise = 1.0 + excess
    ev.mean_pos = mp
    ev.mean_neg = mn
    # gradient: (1/n) dF/dh = 2 (1-p)/n (h - a - 1 - alpha) (+), 2 p/n (h - b + 1 + alpha) (-)
    if saddle:
        a = mp
        b = mn
        al = D
    else:
        al = D if D <= R2 else R2
        if al < -R2:
            al = -R2
    cpos = 2.0 * (1.0 - p) / n
    cneg = 2.0 * p / n
    if size == 1:
        _gradient_rows(data, indices, indptr, y, h, a, b, al, cpos, cneg, 0, n, g, d)
    else:                       # block b >= 1 into its own copy, added in block order
        for blk in prange(size, num_threads=size, schedule="static", chunksize=1):
            _gradient_rows(data, indices, indptr, y, h, a, b, al, cpos, cneg, team.rows[blk],
                           team.rows[blk + 1], g if blk == 0 else blocks_own(team, blk), d)
        blocks_add_copies(team, g, 1, 0)
    for j in range(d):
        g[j] += lam * w[j]
        ksum_add(&gg, g[j] * g[j])
        ksum_add(&gw, g[j] * w[j])
    gn2 = ksum_value(&gg)
    gdw = ksum_value(&gw)
    ev.vnorm2 = wn2
    # Frank-Wolfe over the ball: f(v) - min_{||u|| <= R} f <= g.(v - s), s = -R g/||g||, by
    # convexity; it certifies only a point of the ball (up to rounding of its norm)
    if saddle:
        ev.measure = gn2 / (2.0 * lam) if lam > 0.0 else INFINITY
        if isfinite(R) and wn2 <= R * R * (1.0 + 1e-12):
            ev.measure = min(ev.measure, gdw + R * sqrt(gn2))
    else:
        ga = -2.0 * pq * (mp - a)                      # d/da, d/db of f at (a, b, al)
        gb = -2.0 * pq * (mn - b)
        gn2 += ga * ga + gb * gb
        gdw += ga * a + gb * b
        ev.vnorm2 = wn2 + a * a + b * b
        ev.measure = INFINITY
        if isfinite(R) and ev.vnorm2 <= R * R * (1.0 + 1e-12):
            ev.measure = gdw + R * sqrt(gn2)
    ev.gnorm2 = gn2
    ev.gdotv = gdw
    if not isfinite(ev.J):
        ev.J = INFINITY
        ev.measure = INFINITY
    elif ev.measure < 0.0:                             # rounding of a gap that is ~0
        ev.measure = 0.0
    return 0


# ---------------------------------------------------------------------------------------
# the run


cdef PpdOptions ppd_default_options() noexcept nogil:
    cdef PpdOptions o
    o.method = PPD_SG
    o.lam = 0.0
    o.eta0 = 0.0
    o.T0 = 0.0
    o.decay = 3.0
    o.growth = 3.0
    o.inv_gamma = 0.0
    o.delta = 1e-2
    o.R1 = INFINITY
    o.R2 = INFINITY
    o.batch_size = 1
    o.p_mode = AUC_P_FIXED
    o.p = NAN
    o.alpha_batch = 0.0
    o.tol = 1e-3
    o.max_epochs = 100
    o.max_steps = 0
    o.seed = 0
    o.scaled_sg = True
    o.trace = NULL
    o.trace_len = 0
    o.n_threads = 1
    return o


cdef double auc_default_step(const floating* data, const index_t* indptr, Py_ssize_t n,
                             const double* y, int method) noexcept nogil:
    """The default step (``PpdOptions.eta0 <= 0``) from the per-sample curvatures of F,
    ``L_i = 2 c_i (||x_i||^2 + 1)``, ``c_i = 1 - p`` for a positive row and p for a negative
    one (p = n+/n): F of a positive sample has curvature 2 (1-p) in (h, a) and couples h and
    alpha with 2 (1-p), so in (w, a, alpha) its largest eigenvalue is about
    2 (1-p) (||x||^2 + 1); a negative sample's is 2 p (...). PPD-SG and PGA: 1/L with
    L = max_i L_i, stable on every row. PPD-AdaGrad: 4/sqrt(L) (AdaGrad divides by the root
    of the summed squared gradients, which scale like the rows: sqrt(L) makes the step
    invariant to a rescaling of X). SOLAM: 16/L' with the class-balanced mean
    L' = 2 ((1-p) mean_+ (||x||^2 + 1) + p mean_- (||x||^2 + 1)): its steps fall as
    1/sqrt(t) and its projections keep the iterates bounded, so the first steps need no
    margin against the largest row."""
    cdef Py_ssize_t i, q
    cdef double sq, npos = 0.0, p, L = 0.0, c, sp = 0.0, sn = 0.0
    for i in range(n):
        if y[i] > 0:
            npos += 1.0
    p = npos / n
    for i in range(n):
        sq = 1.0
        for q in range(indptr[i], indptr[i + 1]):
            sq += <double>data[q] * <double>data[q]
        if y[i] > 0:
            c = 1.0 - p
            sp += sq
        else:
            c = p
            sn += sq
        if 2.0 * c * sq > L:
            L = 2.0 * c * sq
    if method == PPD_ADAGRAD:
        return 4.0 / sqrt(L)
    if method == AUC_SOLAM:
        return 16.0 / (2.0 * ((1.0 - p) * sp / npos + p * sn / (n - npos)))
    return 1.0 / L


cdef inline void _stage_plan(const PpdOptions* opt, Py_ssize_t k, double eta0, double T0,
                             double* eta, double* steps) noexcept nogil:
    """Step and steps of stage k >= 1 (unbounded; the run caps the steps at its budget)."""
    if opt.method == PPD_PGA:
        eta[0] = eta0 / k
        steps[0] = T0 * (<double>k * <double>k)
    else:
        eta[0] = eta0 / pow(opt.decay, <double>(k - 1))
        steps[0] = floor((T0 - 1.0) * pow(opt.growth, <double>(k - 1)) + 0.5)


cdef inline void _set_values(AucProblem* P, const AucEval* ev) noexcept nogil:
    P.values[0] = ev.J
    P.values[1] = NAN
    P.values[2] = ev.measure
    P.values[3] = ev.pairwise
    P.values[4] = NAN


cdef void _free_work(AucProblem* P) noexcept nogil:
    free(P.w)
    free(P.wsum)
    free(P.gsum)
    free(P.last)
    free(P.batch)
    free(P.coef)
    free(P.scores)
    free(P.tab)
    free(P.pstamp)
    free(P.pstamp_lo)


cdef int ppd_run(const floating* data, const index_t* indices, const index_t* indptr,
                 Py_ssize_t n, Py_ssize_t d, const double* y, double* w,
                 const PpdOptions* opt, PpdResult* res, epoch_hook hook,
                 void* ctx) noexcept nogil:
    """See _ppd.pxd. ``w`` is the start on entry (zeros: a cold start; the saddle variables
    start at their maximisers a = mean_+(Xw), b = mean_-(Xw), alpha = b - a) and the
    result on return; during the run it holds the last stage's average."""
    cdef AucProblem P
    cdef AucEval ev
    cdef Py_ssize_t dd = d if d > 0 else 1, k = 0, nb = opt.batch_size
    cdef int64_t budget, S, epoch
    cdef double eta, steps, eta_next, steps_next, T0, eta0, pq, rfloor, npos = 0.0, p_emp, nnz_row
    cdef int status, stop
    cdef bint pga = opt.method == PPD_PGA, certify_v = False
    cdef double* g
    cdef Blocks team
    memset(&P, 0, sizeof(AucProblem))
    res.status = STATUS_NO_MEMORY
    res.n_epochs = 0
    res.n_stages = 0
    res.n_steps = 0
    res.n_samples = 0
    res.last_stage_steps = 0
    res.primal = res.measure = res.threshold = NAN
    res.a = res.b = res.alpha = NAN
    res.p = res.pq = res.eta0 = res.T0 = NAN
    P.n = n
    P.d = d
    P.y = y
    P.lam = opt.lam
    P.inv_gamma = opt.inv_gamma
    P.batch_size = nb
    P.p_mode = opt.p_mode
    P.delta = opt.delta
    P.R1 = opt.R1
    P.R2 = opt.R2
    P.w0 = w
    P.scaled_sg = opt.scaled_sg
    P.trace = opt.trace
    P.trace_len = opt.trace_len if opt.trace != NULL else 0
    P.w = <double*>ds_auc_calloc(dd, sizeof(double), 8)
    P.wsum = <double*>ds_auc_calloc(dd, sizeof(double), 8)
    P.gsum = <double*>ds_auc_calloc(dd, sizeof(double), 8)
    P.last = <int64_t*>ds_auc_calloc(dd, sizeof(int64_t), 8)
    P.batch = <Py_ssize_t*>ds_auc_calloc(nb, sizeof(Py_ssize_t), 8)
    P.coef = <double*>ds_auc_calloc(nb, sizeof(double), 8)
    P.scores = <double*>ds_auc_calloc(n, sizeof(double), 8)
    if pga:
        P.pstamp = <double*>ds_auc_calloc(dd, sizeof(double), 8)
        P.pstamp_lo = <double*>ds_auc_calloc(dd, sizeof(double), 8)
    g = P.wsum                                         # the evaluation's gradient (work)
    if (P.w == NULL or P.wsum == NULL or P.gsum == NULL or P.last == NULL or P.batch == NULL
            or P.coef == NULL or P.scores == NULL
            or (pga and (P.pstamp == NULL or P.pstamp_lo == NULL))
            or not blocks_init(&team, indptr, n, d, opt.n_threads, BLOCKS_MIN_NNZ, d, 0)):
        _free_work(&P)
        return res.status
    for k in range(n):
        if y[k] > 0:
            npos += 1.0
    p_emp = npos / n
    if opt.p_mode == AUC_P_ONLINE:
        P.p = 0.5
        P.pq = 0.25
        P.ybar = 0.5
    else:
        P.p = opt.p if opt.p == opt.p else p_emp
        P.pq = P.p * (1.0 - P.p)
    P.epoch_steps = (n + nb - 1) // nb
    budget = opt.max_steps if opt.max_steps > 0 else <int64_t>opt.max_epochs * P.epoch_steps
    nnz_row = <double>indptr[n] / n
    P.poll_steps = <int64_t>(POLL_NNZ / (nb * (nnz_row + 16.0)))
    if P.poll_steps < 1:
        P.poll_steps = 1
    elif P.poll_steps > POLL_MAX_STEPS:
        P.poll_steps = POLL_MAX_STEPS
    P.next_epoch = P.epoch_steps
    P.next_event = P.poll_steps if P.poll_steps < P.next_epoch else P.next_epoch
    P.hook = hook
    P.ctx = ctx
    rng_seed(&P.rng, opt.seed)
    T0 = opt.T0
    if not T0 > 0.0:                                   # one epoch of steps
        T0 = <double>P.epoch_steps + (0.0 if pga else 1.0)
    eta0 = opt.eta0
    if not eta0 > 0.0:
        eta0 = auc_default_step(data, indptr, n, y, opt.method)
    res.eta0 = eta0
    res.T0 = T0
    P.tab_size = budget if budget < 4096 else (d if d > 4096 else 4096)
    if P.tab_size > budget:
        P.tab_size = budget
    if P.tab_size < 1:
        P.tab_size = 1
    # PGA with its ball certifies its own problem, phi over ||(w, a, b)|| <= R1
    certify_v = pga and isfinite(opt.R1)
    # the stop (status.pxd's gap_certifies) on the nonnegative risk J + p(1-p) =
    # p(1-p) P_n(w) + (lam/2)||w||^2: measure <= tol * (J + p(1-p) - measure), whose
    # J + p(1-p) - measure is a lower bound on min J + p(1-p); the rounding floor is 64
    # ulps of p(1-p), J's scale; tol = 0 never converges
    pq = p_emp * (1.0 - p_emp)
    rfloor = gap_floor(pq)

    # epoch 0: the start, with a, b, alpha at their maximisers
    auc_evaluate_blocks(data, indices, indptr, n, d, y, w, opt.lam, 1, 0.0, 0.0, INFINITY,
                        INFINITY, P.scores, g, &ev, &team)
    P.a0 = P.a = ev.mean_pos
    P.b0 = P.b = ev.mean_neg
    P.alpha = ev.mean_neg - ev.mean_pos
    if certify_v:
        auc_evaluate_blocks(data, indices, indptr, n, d, y, w, opt.lam, 0, P.a0, P.b0, P.R1,
                            P.R2, P.scores, g, &ev, &team)
    _set_values(&P, &ev)
    res.primal = ev.J
    res.measure = ev.measure
    status = STATUS_MAX_EPOCHS
    if not isfinite(ev.J):
        status = STATUS_DIVERGED
    elif gap_certifies(ev.measure, ev.J + pq - ev.measure, opt.tol, rfloor):
        status = STATUS_CONVERGED
    res.threshold = gap_target(ev.J + pq - ev.measure, opt.tol, rfloor)
    stop = _report(&P, 0)
    if stop != 0 and status == STATUS_MAX_EPOCHS:
        status = stop
    k = 0
    while status == STATUS_MAX_EPOCHS and P.steps < budget:
        k += 1
        _stage_plan(opt, k, eta0, T0, &eta, &steps)
        _stage_plan(opt, k + 1, eta0, T0, &eta_next, &steps_next)
        # the last stage runs to the end of the budget: it takes what is left when a full
        # next stage would not fit in after it (never a short tail stage)
        S = budget - P.steps
        if steps < <double>S and <double>S - steps >= steps_next:
            S = <int64_t>steps
        if S < 1:
            S = 1
        if opt.method == PPD_SG:
            stop = ppd_sg_stage(data, indices, indptr, &P, S + 1, eta)
        elif opt.method == PPD_ADAGRAD:
            stop = ppd_adagrad_stage(data, indices, indptr, &P, S + 1, eta)
        else:
            stop = pga_stage(data, indices, indptr, &P, S, eta)
        if stop != 0:
            status = stop
            if stop != STATUS_NO_MEMORY:
                P.steps = P.stop_steps                 # the stage was abandoned there
            break
        P.steps += S
        res.n_stages = k
        res.last_stage_steps = S
        if not pga and opt.alpha_batch > 0.0:
            _alpha_reset_sampled(data, indices, indptr, &P,
                                 <int64_t>floor(opt.alpha_batch * pow(opt.growth, <double>(k - 1)) + 0.5))
        auc_evaluate_blocks(data, indices, indptr, n, d, y, w, opt.lam, not certify_v, P.a0,
                            P.b0, P.R1 if certify_v else INFINITY, P.R2, P.scores, g, &ev,
                            &team)
        if not pga and opt.alpha_batch <= 0.0:         # Algorithm 2's reset, over all rows
            P.alpha = ev.mean_neg - ev.mean_pos
        _set_values(&P, &ev)
        res.primal = ev.J
        res.measure = ev.measure
        if not isfinite(ev.J):
            status = STATUS_DIVERGED
        elif gap_certifies(ev.measure, ev.J + pq - ev.measure, opt.tol, rfloor):
            status = STATUS_CONVERGED
        res.threshold = gap_target(ev.J + pq - ev.measure, opt.tol, rfloor)
        if status != STATUS_MAX_EPOCHS or P.steps == P.next_epoch or P.steps >= budget:
            epoch = (P.steps + P.epoch_steps - 1) // P.epoch_steps
            if P.steps == P.next_epoch:
                P.next_epoch += P.epoch_steps
            stop = _report(&P, epoch)
            if stop != 0 and status == STATUS_MAX_EPOCHS:
                status = stop
        P.next_event = P.steps + P.poll_steps
        if P.next_epoch < P.next_event:
            P.next_event = P.next_epoch
    res.status = status
    res.n_steps = P.steps
    res.n_epochs = (P.steps + P.epoch_steps - 1) // P.epoch_steps
    res.n_samples = P.n_samples
    res.a = P.a0
    res.b = P.b0
    res.alpha = P.alpha
    res.p = P.p
    res.pq = P.pq
    _free_work(&P)
    blocks_free(&team)
    return status


# ---------------------------------------------------------------------------------------
# Python entries


def grads(double h, double y, double a, double b, double alpha, double p, double pq):
    """(dF/dh, dF/da, dF/db, dF/dalpha) of one sample (for tests)."""
    cdef double c, ga, gb, gal
    auc_grads(h, y, a, b, alpha, p, pq, &c, &ga, &gb, &gal)
    return c, ga, gb, gal


def _digamma_gap(double a, double g):
    """digamma_gap for tests."""
    return digamma_gap(a, g)


METHODS = {"sg": PPD_SG, "adagrad": PPD_ADAGRAD, "pga": PPD_PGA, "solam": AUC_SOLAM}


def default_step(const floating[::1] data, const index_t[::1] indptr, const double[::1] y,
                 str method):
    """The default eta0 of ``method`` for these rows (auc_default_step)."""
    cdef int kind = METHODS[method]
    return auc_default_step(&data[0], &indptr[0], y.shape[0], &y[0], kind)


def evaluate(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
             Py_ssize_t n_features, const double[::1] y, const double[::1] w, double lam,
             bint saddle=True, double a=0.0, double b=0.0, double R=INFINITY,
             double R2=INFINITY, int n_threads=1):
    """auc_evaluate at w (in ``n_threads`` blocks of rows where X has 2^18+ nonzeros):
    dict(J, pairwise, mean_pos, mean_neg, gnorm2, gdotv, vnorm2, measure, grad, blocks)."""
    cdef Py_ssize_t n = y.shape[0]
    cdef AucEval ev
    cdef Blocks team
    h = np.empty(n)
    g = np.empty(max(n_features, 1))
    cdef double[::1] hv = h, gv = g
    if not blocks_init(&team, &indptr[0], n, n_features, n_threads, BLOCKS_MIN_NNZ,
                       n_features, 0):
        raise MemoryError("auc_evaluate's blocks")
    with nogil:
        auc_evaluate_blocks(&data[0], &indices[0], &indptr[0], n, n_features, &y[0], &w[0],
                            lam, saddle, a, b, R, R2, &hv[0], &gv[0], &ev, &team)
    blocks = team.size
    blocks_free(&team)
    return dict(J=ev.J, pairwise=ev.pairwise, mean_pos=ev.mean_pos, mean_neg=ev.mean_neg,
                gnorm2=ev.gnorm2, gdotv=ev.gdotv, vnorm2=ev.vnorm2, measure=ev.measure,
                grad=g[:n_features], blocks=blocks)


def solve(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
          Py_ssize_t n_features, const double[::1] y, double[::1] w, str method, *,
          double lam, double eta0, double T0, double decay, double growth, double inv_gamma,
          double delta, double R1, double R2, Py_ssize_t batch_size, str p_mode, double p,
          double alpha_batch, double tol, Py_ssize_t max_epochs, unsigned long long seed,
          mon=None, trace=None, long long max_steps=0, bint scaled_sg=True, int n_threads=1):
    """Run ppd_run on validated arrays (w: the start, overwritten with the result; 0 for
    eta0 or T0: the defaults), reporting every epoch to ``mon`` (an EpochMonitor expecting
    AUC_HOOK_VALUES values, or None). ``trace`` (intp array): the drawn rows, for tests;
    ``max_steps``: a budget in steps (tests). Returns a dict of PpdResult's fields."""
    cdef PpdOptions opt = ppd_default_options()
    cdef PpdResult res
    cdef Py_ssize_t n = y.shape[0]
    if indptr.shape[0] != n + 1 or w.shape[0] < n_features:
        raise ValueError("inconsistent shapes")
    if mon is not None and mon.n_values != AUC_HOOK_VALUES:
        raise ValueError(f"the monitor expects {mon.n_values} values; ppd_run reports "
                         f"{AUC_HOOK_VALUES}")
    opt.method = METHODS[method]
    opt.lam = lam
    opt.eta0 = eta0
    opt.T0 = T0
    opt.decay = decay
    opt.growth = growth
    opt.inv_gamma = inv_gamma
    opt.delta = delta
    opt.R1 = R1
    opt.R2 = R2
    opt.batch_size = batch_size
    opt.p_mode = AUC_P_ONLINE if p_mode == "online" else AUC_P_FIXED
    opt.p = p
    opt.alpha_batch = alpha_batch
    opt.tol = tol
    opt.max_epochs = max_epochs
    opt.max_steps = max_steps
    opt.seed = seed
    opt.scaled_sg = scaled_sg
    opt.n_threads = n_threads if n_threads > 1 else 1
    opt.trace = intp_out(trace, &opt.trace_len)
    cdef epoch_hook hook = NULL
    if mon is not None:
        hook = python_hook
    with nogil:
        ppd_run(&data[0], &indices[0], &indptr[0], n, n_features, &y[0], &w[0], &opt, &res,
                hook, <void*>mon)
    return dict(status=res.status, n_epochs=res.n_epochs, n_stages=res.n_stages,
                n_steps=res.n_steps, n_samples=res.n_samples,
                last_stage_steps=res.last_stage_steps, primal=res.primal,
                measure=res.measure, threshold=res.threshold, a=res.a, b=res.b,
                alpha=res.alpha, p=res.p, pq=res.pq, eta0=res.eta0, T0=res.T0)
