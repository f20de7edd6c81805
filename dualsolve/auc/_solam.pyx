# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""SOLAM (Ying, Wen & Lyu 2016), the OAUC baseline of Liu et al. (2020); see _solam.pxd.
Step t on row i (the gradients at the pre-update point, p_t including the current sample)::

    p_t = ((t-1) p_{t-1} + I[y_i=+1]) / t,   gamma_t = zeta / sqrt(t)
    vbar += gamma_t (w_t, a_t, b_t), alphabar += gamma_t alpha_t     (normalised at the end)
    w_{t+1} = Proj_{||w|| <= R}((1 - gamma_t lam) w_t - gamma_t c x_i),  a, b clipped to
    [-kappa R, kappa R], alpha_{t+1} = clip(alpha_t + gamma_t dF/dalpha, -2 kappa R, 2 kappa R)

O(nnz) per step: w = sigma z is a ScaledVec (the L2 shrink and the projection rescale
sigma, its norm is kept incrementally), and the weighted sum of the iterates is kept per
feature with the prefix sum Ps = sum_t gamma_t sigma_t: S_j += z_j (Ps - lastP_j) before
z_j changes. sigma is folded into z before it falls below 1e-6 (Ps - lastP_j would
otherwise cancel: relative error ~ eps / sigma).
"""
from libc.math cimport sqrt, fabs, isfinite, NAN, INFINITY
from libc.stdint cimport int64_t
from libc.stdlib cimport free

import numpy as np

from dualsolve._core.buffers cimport intp_out
from dualsolve.auc._alloc cimport ds_auc_calloc
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.hooks cimport python_hook
from dualsolve._core.rng cimport rng_state, rng_seed, rng_below
from dualsolve._core.status cimport (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_DIVERGED,
                                     STATUS_NO_MEMORY, report_epoch, gap_certifies,
                                     gap_target, gap_floor)
from dualsolve._core.lazy cimport (ScaledVec, sv_init, sv_scale, sv_dot, sv_add, sv_sqnorm,
                                   sv_renormalize)
from dualsolve._core.blocks cimport Blocks, BLOCKS_MIN_NNZ, blocks_init, blocks_free
from dualsolve.auc._ppd cimport (auc_grads, auc_evaluate_blocks, auc_default_step, AucEval,
                                 AUC_SOLAM, AUC_HOOK_VALUES)

cdef extern from *:
    """
    #define DS_SOLAM_RENORM 1e-6
    """
    const double SOLAM_RENORM "DS_SOLAM_RENORM"   # fold sigma into z below this

cdef enum:
    POLL_NNZ = 2097152        # Ctrl-C is polled about every this many nonzeros of work


ctypedef struct SolamState:
    Py_ssize_t n
    Py_ssize_t d
    const double* y
    double zeta
    double R
    double lam
    double kR                 # kappa R (bound on |a|, |b|); 2 kappa R on |alpha|
    ScaledVec sv              # w = sv.scale * z
    double* S                 # d: weighted sums of z_j sigma_t
    double* lastP             # d: Ps when S_j was last brought up to date
    double Ps
    double a, b, alpha
    double suma, sumb, sumal, gbar
    double p_hat
    int64_t t                 # steps done
    Py_ssize_t* trace
    Py_ssize_t trace_len
    rng_state rng


cdef inline void _flush_S(SolamState* st) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(st.d):
        st.S[j] += st.sv.v[j] * (st.Ps - st.lastP[j])
        st.lastP[j] = st.Ps


cdef inline void _rescale(SolamState* st, double f) noexcept nogil:
    """w <- f w (0 < f <= 1), folding sigma into z (S brought up to date first) before it
    would fall below SOLAM_RENORM."""
    cdef Py_ssize_t j
    if fabs(st.sv.scale * f) < SOLAM_RENORM:
        _flush_S(st)
        sv_scale(&st.sv, f)
        sv_renormalize(&st.sv)
        for j in range(st.d):
            st.lastP[j] = 0.0
        st.Ps = 0.0
    else:
        sv_scale(&st.sv, f)


cdef void solam_steps(const floating* data, const index_t* indices, const index_t* indptr,
                      SolamState* st, int64_t steps) noexcept nogil:
    cdef int64_t s
    cdef Py_ssize_t i, q, start, nnz, j
    cdef double gt, h, c, ga, gb, gal, nrm, lim
    for s in range(steps):
        i = <Py_ssize_t>rng_below(&st.rng, <unsigned long long>st.n)
        if st.trace != NULL and st.t < st.trace_len:
            st.trace[st.t] = i
        st.t += 1
        st.p_hat = ((st.t - 1) * st.p_hat + (1.0 if st.y[i] > 0 else 0.0)) / st.t
        gt = st.zeta / sqrt(<double>st.t)
        start = indptr[i]
        nnz = indptr[i + 1] - start
        h = sv_dot(&st.sv, data + start, indices + start, nnz)
        auc_grads(h, st.y[i], st.a, st.b, st.alpha, st.p_hat, st.p_hat * (1.0 - st.p_hat),
                  &c, &ga, &gb, &gal)
        # the average takes the pre-update iterate
        st.gbar += gt
        st.Ps += gt * st.sv.scale
        st.suma += gt * st.a
        st.sumb += gt * st.b
        st.sumal += gt * st.alpha
        for q in range(start, start + nnz):
            j = indices[q]
            st.S[j] += st.sv.v[j] * (st.Ps - st.lastP[j])
            st.lastP[j] = st.Ps
        if st.lam > 0.0:
            _rescale(st, 1.0 - gt * st.lam)
        sv_add(&st.sv, -gt * c, data + start, indices + start, nnz)
        nrm = sqrt(sv_sqnorm(&st.sv))
        if nrm > st.R:
            _rescale(st, st.R / nrm)
        lim = st.kR
        st.a = min(max(st.a - gt * ga, -lim), lim)
        st.b = min(max(st.b - gt * gb, -lim), lim)
        st.alpha = min(max(st.alpha + gt * gal, -2.0 * lim), 2.0 * lim)


cdef SolamOptions solam_default_options() noexcept nogil:
    cdef SolamOptions o
    o.zeta = 0.0
    o.R = INFINITY
    o.lam = 0.0
    o.tol = 1e-3
    o.max_epochs = 100
    o.seed = 0
    o.trace = NULL
    o.trace_len = 0
    o.n_threads = 1
    return o


cdef int solam_run(const floating* data, const index_t* indices, const index_t* indptr,
                   Py_ssize_t n, Py_ssize_t d, const double* y, double* w,
                   const SolamOptions* opt, SolamResult* res, epoch_hook hook,
                   void* ctx) noexcept nogil:
    """See _solam.pxd. ``w`` is the start on entry (projected onto the ball; a, b, alpha
    start at their maximisers for it) and the averaged iterate on return."""
    cdef SolamState st
    cdef AucEval ev
    cdef Py_ssize_t dd = d if d > 0 else 1, i, j, q
    cdef int64_t epoch = 0, left, chunk, poll_steps
    cdef double values[AUC_HOOK_VALUES]
    cdef double kappa = 0.0, sq, npos = 0.0, p_emp, pq, floor, nrm
    cdef int status, stop
    cdef Blocks team
    cdef double* h = <double*>ds_auc_calloc(n, sizeof(double), 8)
    cdef double* g = <double*>ds_auc_calloc(dd, sizeof(double), 8)
    cdef double* z = <double*>ds_auc_calloc(dd, sizeof(double), 8)
    st.S = <double*>ds_auc_calloc(dd, sizeof(double), 8)
    st.lastP = <double*>ds_auc_calloc(dd, sizeof(double), 8)
    res.status = STATUS_NO_MEMORY
    res.n_epochs = 0
    res.n_steps = 0
    res.primal = res.measure = res.threshold = NAN
    res.a = res.b = res.alpha = res.p_hat = res.zeta = res.kappa = NAN
    if (h == NULL or g == NULL or z == NULL or st.S == NULL or st.lastP == NULL
            or not blocks_init(&team, indptr, n, d, opt.n_threads, BLOCKS_MIN_NNZ, d, 0)):
        free(h); free(g); free(z); free(st.S); free(st.lastP)
        return res.status
    for i in range(n):
        sq = 0.0
        for q in range(indptr[i], indptr[i + 1]):
            sq += <double>data[q] * <double>data[q]
        if sq > kappa:
            kappa = sq
        if y[i] > 0:
            npos += 1.0
    kappa = sqrt(kappa)
    p_emp = npos / n
    st.n = n
    st.d = d
    st.y = y
    st.zeta = opt.zeta if opt.zeta > 0.0 else auc_default_step(data, indptr, n, y, AUC_SOLAM)
    st.R = opt.R
    st.lam = opt.lam
    st.kR = kappa * opt.R if kappa > 0.0 else 0.0
    st.Ps = 0.0
    st.suma = st.sumb = st.sumal = st.gbar = 0.0
    st.p_hat = 0.0
    st.t = 0
    st.trace = opt.trace
    st.trace_len = opt.trace_len if opt.trace != NULL else 0
    rng_seed(&st.rng, opt.seed)
    res.zeta = st.zeta
    res.kappa = kappa
    # the stop (status.pxd's gap_certifies) on the nonnegative risk J + p(1-p) =
    # p(1-p) P_n(w) + (lam/2)||w||^2: measure <= tol * (J + p(1-p) - measure), whose
    # J + p(1-p) - measure is a lower bound on min J + p(1-p); the rounding floor is 64
    # ulps of p(1-p), J's scale; tol = 0 never converges
    pq = p_emp * (1.0 - p_emp)
    floor = gap_floor(pq)
    poll_steps = <int64_t>(POLL_NNZ / (<double>indptr[n] / n + 16.0))
    if poll_steps < 1:
        poll_steps = 1

    # the start, projected onto the ball, with a, b, alpha at their maximisers
    nrm = 0.0
    for j in range(d):
        nrm += w[j] * w[j]
    nrm = sqrt(nrm)
    if nrm > opt.R:
        for j in range(d):
            w[j] *= opt.R / nrm
    for j in range(d):
        z[j] = w[j]
    sv_init(&st.sv, z, d)
    auc_evaluate_blocks(data, indices, indptr, n, d, y, w, opt.lam, 1, 0.0, 0.0, opt.R,
                        INFINITY, h, g, &ev, &team)
    st.a = min(max(ev.mean_pos, -st.kR), st.kR)
    st.b = min(max(ev.mean_neg, -st.kR), st.kR)
    st.alpha = min(max(ev.mean_neg - ev.mean_pos, -2.0 * st.kR), 2.0 * st.kR)
    res.a, res.b, res.alpha = st.a, st.b, st.alpha
    status = STATUS_MAX_EPOCHS
    while True:
        values[0] = ev.J
        values[1] = NAN
        values[2] = ev.measure
        values[3] = ev.pairwise
        values[4] = NAN
        res.primal = ev.J
        res.measure = ev.measure
        if not isfinite(ev.J):
            status = STATUS_DIVERGED
        elif gap_certifies(ev.measure, ev.J + pq - ev.measure, opt.tol, floor):
            status = STATUS_CONVERGED
        res.threshold = gap_target(ev.J + pq - ev.measure, opt.tol, floor)
        status = report_epoch(hook, ctx, epoch, values, status)
        if status != STATUS_MAX_EPOCHS or epoch >= opt.max_epochs:
            break
        # one epoch of n steps, polling the hook for Ctrl-C
        left = n
        stop = 0
        while left > 0:
            chunk = left if left < poll_steps else poll_steps
            solam_steps(data, indices, indptr, &st, chunk)
            left -= chunk
            if left > 0 and hook != NULL:
                stop = hook(ctx, -1, NULL)
                if stop != 0:
                    break
        epoch += 1
        if stop != 0:
            status = stop
            break
        _flush_S(&st)
        for j in range(d):
            w[j] = st.S[j] / st.gbar
        res.a = st.suma / st.gbar
        res.b = st.sumb / st.gbar
        res.alpha = st.sumal / st.gbar
        auc_evaluate_blocks(data, indices, indptr, n, d, y, w, opt.lam, 1, 0.0, 0.0, opt.R,
                            INFINITY, h, g, &ev, &team)
    res.status = status
    res.n_epochs = epoch
    res.n_steps = st.t
    res.p_hat = st.p_hat
    free(h); free(g); free(z); free(st.S); free(st.lastP)
    blocks_free(&team)
    return status


def solve(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
          Py_ssize_t n_features, const double[::1] y, double[::1] w, *, double zeta,
          double R, double lam, double tol, Py_ssize_t max_epochs, unsigned long long seed,
          mon=None, trace=None, int n_threads=1):
    """Run solam_run on validated arrays (w: the start, overwritten with the result; zeta 0:
    the default), reporting every epoch to ``mon`` (an EpochMonitor expecting
    AUC_HOOK_VALUES values, or None). ``trace`` (intp array): the drawn rows, for tests.
    Returns a dict of SolamResult's fields."""
    cdef SolamOptions opt = solam_default_options()
    cdef SolamResult res
    cdef Py_ssize_t n = y.shape[0]
    if indptr.shape[0] != n + 1 or w.shape[0] < n_features:
        raise ValueError("inconsistent shapes")
    if mon is not None and mon.n_values != AUC_HOOK_VALUES:
        raise ValueError(f"the monitor expects {mon.n_values} values; solam_run reports "
                         f"{AUC_HOOK_VALUES}")
    opt.zeta = zeta
    opt.R = R
    opt.lam = lam
    opt.tol = tol
    opt.max_epochs = max_epochs
    opt.seed = seed
    opt.n_threads = n_threads if n_threads > 1 else 1
    opt.trace = intp_out(trace, &opt.trace_len)
    cdef epoch_hook hook = NULL
    if mon is not None:
        hook = python_hook
    with nogil:
        solam_run(&data[0], &indices[0], &indptr[0], n, n_features, &y[0], &w[0], &opt, &res,
                  hook, <void*>mon)
    return dict(status=res.status, n_epochs=res.n_epochs, n_steps=res.n_steps,
                primal=res.primal, measure=res.measure, threshold=res.threshold, a=res.a,
                b=res.b, alpha=res.alpha, p_hat=res.p_hat, zeta=res.zeta, kappa=res.kappa)
