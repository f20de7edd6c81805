# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The Prospect and mini-batch SGD loops (spec seed4 section 2.6, section 3); see
_baselines.pxd for the algorithms. LSVRG runs on ``_sorel.sorel_run`` (see there)."""
import time

import numpy as np

from libc.math cimport log1p, isfinite, NAN
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memmove, memset

from dualsolve._core.buffers cimport intp_out
from dualsolve._core.csr cimport floating, index_t, sparse_dot, sparse_axpy
from dualsolve._core.losses cimport Loss, loss_value, loss_deriv, make_loss
from dualsolve._core.rng cimport rng_seed, rng_below, rng_shuffle
from dualsolve._core.lazy cimport (DriftJIT, drift_table_size, drift_init, drift_catch_up,
                                   drift_step, drift_flush, ScaledVec, sv_init, sv_scale,
                                   sv_add, sv_dot, sv_renormalize)
from dualsolve._core.isotonic cimport argsort_stable
from dualsolve.spectral._sorel cimport (SorelProblem, sorel_work_sizes, sorel_problem_init,
                                        sorel_objective, SOREL_MAX_EPOCHS, SOREL_STOPPED,
                                        SOREL_DIVERGED)
from dualsolve._monitor import EpochMonitor


# ---------------------------------------------------------------------------------------
# Prospect


cdef void prospect_work_sizes(Py_ssize_t n, Py_ssize_t d, Py_ssize_t* n_double,
                              Py_ssize_t* n_intp, Py_ssize_t* n_int64) noexcept nogil:
    n_double[0] = d + 3 * n + drift_table_size(n)
    n_intp[0] = 3 * n
    n_int64[0] = d if d > 0 else 1


cdef void prospect_problem_init(ProspectProblem* P, Py_ssize_t n, Py_ssize_t d,
                                const double* y, Loss loss, double mu, const double* sigma,
                                double* w, double* dwork, Py_ssize_t* iwork,
                                int64_t* lwork) noexcept nogil:
    P.n = n
    P.d = d
    P.y = y
    P.loss = loss
    P.mu = mu
    P.sigma = sigma
    P.w = w
    P.S = dwork
    P.gtab = dwork + d
    P.rho = dwork + d + n
    P.sl = dwork + d + 2 * n
    P.tab = dwork + d + 3 * n
    P.order = iwork
    P.pos = iwork + n
    P.iw = iwork + 2 * n
    P.last = lwork
    P.alpha = 0.0
    P.shifts = 0
    P.trace = NULL
    P.trace_len = 0
    P.trace_pos = 0
    P.otrace = NULL
    P.otrace_steps = 0
    P.otrace_pos = 0


cdef void prospect_start(const floating* data, const index_t* indices, const index_t* indptr,
                         ProspectProblem* P, double alpha, unsigned long long seed) noexcept nogil:
    cdef Py_ssize_t i, p, n = P.n
    cdef index_t a0, a1
    cdef double m, c
    rng_seed(&P.rng, <uint64_t>seed)
    P.alpha = alpha
    P.shifts = 0
    for i in range(n):                      # losses into rho (scratch), derivatives into gtab
        a0 = indptr[i]
        a1 = indptr[i + 1]
        m = sparse_dot(data + a0, indices + a0, a1 - a0, P.w)
        P.rho[i] = loss_value(&P.loss, m, P.y[i])
        P.gtab[i] = loss_deriv(&P.loss, m, P.y[i])
    argsort_stable(P.rho, n, P.order, P.iw, False)     # stable: ties by index
    for p in range(n):
        i = P.order[p]
        P.sl[p] = P.rho[i]
        P.pos[i] = p
    memset(P.S, 0, P.d * sizeof(double))
    for i in range(n):
        P.rho[i] = P.sigma[P.pos[i]]        # rho = lambda_0 = sigma[rank(l(w_0))]
        c = P.rho[i] * P.gtab[i]
        if c != 0.0:
            a0 = indptr[i]
            a1 = indptr[i + 1]
            sparse_axpy(c, data + a0, indices + a0, a1 - a0, P.S)


cdef inline bint _before(double a, Py_ssize_t ia, double b, Py_ssize_t ib) noexcept nogil:
    # (a, ia) < (b, ib) lexicographically; False whenever a value is NaN
    return a < b or (a == b and ia < ib)


cdef void prospect_reposition(ProspectProblem* P, Py_ssize_t i, double v) noexcept nogil:
    cdef Py_ssize_t p = P.pos[i], n = P.n, lo, hi, mid, step, q, r
    cdef double* sl = P.sl
    cdef Py_ssize_t* order = P.order
    if p > 0 and _before(v, i, sl[p - 1], order[p - 1]):
        # left: the first q in [0, p) with (v, i) < key(q); key(p-1) qualifies.
        # Galloping from p-1 keeps the search O(log displacement).
        hi = p - 1
        step = 1
        lo = hi - step
        while lo >= 0 and _before(v, i, sl[lo], order[lo]):
            hi = lo
            step *= 2
            lo = hi - step
        if lo < 0:
            lo = -1
        while hi - lo > 1:
            mid = lo + (hi - lo) // 2
            if _before(v, i, sl[mid], order[mid]):
                hi = mid
            else:
                lo = mid
        q = hi
        memmove(sl + q + 1, sl + q, (p - q) * sizeof(double))
        memmove(order + q + 1, order + q, (p - q) * sizeof(Py_ssize_t))
        for r in range(q + 1, p + 1):
            P.pos[order[r]] = r
        P.shifts += p - q
    elif p < n - 1 and _before(sl[p + 1], order[p + 1], v, i):
        # right: the last q in (p, n) with key(q) < (v, i); key(p+1) qualifies.
        lo = p + 1
        step = 1
        hi = lo + step
        while hi < n and _before(sl[hi], order[hi], v, i):
            lo = hi
            step *= 2
            hi = lo + step
        if hi > n:
            hi = n
        while hi - lo > 1:
            mid = lo + (hi - lo) // 2
            if _before(sl[mid], order[mid], v, i):
                lo = mid
            else:
                hi = mid
        q = lo
        memmove(sl + p, sl + p + 1, (q - p) * sizeof(double))
        memmove(order + p, order + p + 1, (q - p) * sizeof(Py_ssize_t))
        for r in range(p, q):
            P.pos[order[r]] = r
        P.shifts += q - p
    else:
        q = p
    sl[q] = v
    order[q] = i
    P.pos[i] = q


cdef void prospect_lambda(const ProspectProblem* P, double* lam) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(P.n):
        lam[i] = P.sigma[P.pos[i]]


cdef void prospect_epoch(const floating* data, const index_t* indices, const index_t* indptr,
                         ProspectProblem* P, Py_ssize_t T) noexcept nogil:
    cdef Py_ssize_t n = P.n, i, j, q, p
    cdef index_t a0, a1
    cdef int64_t t
    cdef double al = P.alpha, a, m, g, l, lam, dS, coef, xv, nn = <double>P.n
    cdef DriftJIT st
    # untouched coordinates: w_j <- a (w_j - alpha S_j), a = 1/(1 + alpha mu)
    a = 1.0 / (1.0 + al * P.mu)
    drift_init(&st, P.w, P.last, NULL, P.d, P.tab, T, a, -log1p(al * P.mu), P.S, -a * al,
               NULL, 0.0, 0)
    for t in range(T):
        i = <Py_ssize_t>rng_below(&P.rng, <uint64_t>n)
        if P.trace != NULL and P.trace_pos < P.trace_len:
            P.trace[P.trace_pos] = i
            P.trace_pos += 1
        a0 = indptr[i]
        a1 = indptr[i + 1]
        for q in range(a0, a1):
            drift_catch_up(&st, indices[q], t)
        m = sparse_dot(data + a0, indices + a0, a1 - a0, P.w)
        g = loss_deriv(&P.loss, m, P.y[i])
        l = loss_value(&P.loss, m, P.y[i])
        lam = P.sigma[P.pos[i]]
        dS = lam * g - P.rho[i] * P.gtab[i]
        if dS != 0.0:
            # w_J <- a (w_J - alpha (n dS x_i + S_J)), then S_J += dS x_i (S is read at
            # the step, so it changes only after the touched coordinates are current)
            coef = -a * al * nn * dS
            for q in range(a0, a1):
                j = indices[q]
                xv = data[q]
                drift_step(&st, j, t, coef * xv)
                P.S[j] += dS * xv
        # dS == 0: the row's coordinates stay current at t; the drift catches them up later
        P.rho[i] = lam
        P.gtab[i] = g
        prospect_reposition(P, i, l)
        if P.otrace != NULL and P.otrace_pos < P.otrace_steps:
            for p in range(n):
                P.otrace[P.otrace_pos * n + p] = P.order[p]
            P.otrace_pos += 1
    drift_flush(&st, T)


# ---------------------------------------------------------------------------------------
# mini-batch stochastic subgradient


cdef void sgd_work_sizes(Py_ssize_t n, Py_ssize_t b, Py_ssize_t* n_double,
                         Py_ssize_t* n_intp) noexcept nogil:
    n_double[0] = 3 * b
    n_intp[0] = n + 2 * b


cdef void sgd_problem_init(SgdProblem* P, Py_ssize_t n, Py_ssize_t d, Py_ssize_t b,
                           const double* y, Loss loss, double mu, const double* sigma_b,
                           double* w, double* dwork, Py_ssize_t* iwork,
                           unsigned long long seed) noexcept nogil:
    cdef Py_ssize_t i
    P.n = n
    P.d = d
    P.b = b
    P.y = y
    P.loss = loss
    P.mu = mu
    P.sigma_b = sigma_b
    P.w = w
    P.mb = dwork
    P.lb = dwork + b
    P.cb = dwork + 2 * b
    P.order = iwork
    P.bperm = iwork + n
    P.biw = iwork + n + b
    P.trace = NULL
    P.trace_len = 0
    P.trace_pos = 0
    for i in range(n):
        P.order[i] = i
    rng_seed(&P.rng, <uint64_t>seed)


cdef void sgd_epoch(const floating* data, const index_t* indices, const index_t* indptr,
                    SgdProblem* P, double alpha, Py_ssize_t T) noexcept nogil:
    cdef Py_ssize_t b = P.b, t, r, k, i, base
    cdef index_t a0, a1
    cdef double lam
    cdef ScaledVec sv
    sv_init(&sv, P.w, P.d)
    rng_shuffle(&P.rng, P.order, P.n)
    for t in range(T):
        base = t * b
        for r in range(b):                          # all margins at the same w
            i = P.order[base + r]
            if P.trace != NULL and P.trace_pos < P.trace_len:
                P.trace[P.trace_pos] = i
                P.trace_pos += 1
            a0 = indptr[i]
            a1 = indptr[i + 1]
            P.mb[r] = sv_dot(&sv, data + a0, indices + a0, a1 - a0)
            P.lb[r] = loss_value(&P.loss, P.mb[r], P.y[i])
        argsort_stable(P.lb, b, P.bperm, P.biw, False)
        for k in range(b):                          # lam_B = sigma_b[rank(l_B)]
            r = P.bperm[k]
            lam = P.sigma_b[k]
            P.cb[r] = lam * loss_deriv(&P.loss, P.mb[r], P.y[P.order[base + r]]) \
                if lam != 0.0 else 0.0
        sv_scale(&sv, 1.0 - alpha * P.mu)           # w <- (1 - alpha mu) w
        for r in range(b):                          #      - alpha sum_B lam phi' x
            if P.cb[r] != 0.0:
                i = P.order[base + r]
                a0 = indptr[i]
                a1 = indptr[i + 1]
                sv_add(&sv, -alpha * P.cb[r], data + a0, indices + a0, a1 - a0)
    sv_renormalize(&sv)


# ---------------------------------------------------------------------------------------
# Python drivers: the nogil loop runs one epoch at a time; between epochs the objective
# is evaluated (its time is left out of the clock: it serves only the history) and the
# monitor reports (verbose, callback, Ctrl-C).


cdef class _Objective:
    """Work space of F(w) through the SOREL module's sorel_objective (shared code: one pass
    over X and a warm-started stable sort)."""
    cdef SorelProblem Q
    cdef double[::1] dwork, lam
    cdef Py_ssize_t[::1] iwork
    cdef int64_t[::1] lwork

    def __init__(self, Py_ssize_t n, Py_ssize_t d, const double[::1] y, str loss,
                 double loss_param, const double[::1] sigma, double mu, double[::1] w):
        cdef Py_ssize_t nd, ni, nl
        sorel_work_sizes(n, d, 1, 1, &nd, &ni, &nl)
        self.dwork = np.zeros(nd)
        self.iwork = np.zeros(ni, dtype=np.intp)
        self.lwork = np.zeros(nl, dtype=np.int64)
        self.lam = np.zeros(n)
        sorel_problem_init(&self.Q, n, d, 1, 1, &y[0], make_loss(loss, loss_param), mu,
                           &sigma[0], &w[0], &self.lam[0], &self.dwork[0], &self.iwork[0],
                           &self.lwork[0])




cdef tuple _run_epochs(const floating* data, const index_t* indices, const index_t* indptr,
                       SorelProblem* Q, ProspectProblem* PP, SgdProblem* PS, double alpha,
                       Py_ssize_t steps, Py_ssize_t max_epochs, object mon):
    """The epochs of Prospect (PP) or SGD (PS, the other NULL), each followed by F(w)
    (``Q``, not counted in the solver's clock) and the monitor's report. Returns (status,
    epochs done, last F)."""
    cdef double F
    cdef int status = SOREL_MAX_EPOCHS
    cdef Py_ssize_t k, n_epochs = 0
    t0 = time.perf_counter()
    with nogil:
        F = sorel_objective(data, indices, indptr, Q, False)
    mon.t0 += time.perf_counter() - t0
    if not isfinite(F):
        return SOREL_DIVERGED, 0, F
    if mon.report(0, F, NAN, NAN):
        return SOREL_STOPPED, 0, F
    for k in range(max_epochs):
        with nogil:
            if PP != NULL:
                prospect_epoch(data, indices, indptr, PP, steps)
            else:
                sgd_epoch(data, indices, indptr, PS, alpha, steps)
        t0 = time.perf_counter()
        with nogil:
            F = sorel_objective(data, indices, indptr, Q, True)
        mon.t0 += time.perf_counter() - t0
        n_epochs = k + 1
        if not isfinite(F):
            status = SOREL_DIVERGED
            break
        if mon.report(k + 1, F, NAN, NAN):
            status = SOREL_STOPPED
            break
    return status, n_epochs, F


def _fit_prospect(const floating[::1] data, const index_t[::1] indices,
                  const index_t[::1] indptr, Py_ssize_t n_features, const double[::1] y,
                  str loss, const double[::1] sigma, double mu, double[::1] w,
                  double[::1] lam, double alpha, Py_ssize_t max_epochs,
                  unsigned long long seed, int verbose, callback, trace=None, otrace=None,
                  double loss_param=0.0):
    """Prospect on validated arrays; w (w_0 on entry) and lam are overwritten.
    trace: intp array receiving the sampled rows; otrace: intp array (steps, n) receiving
    the maintained sorted order after every step (tests).
    Returns (status, n_epochs, primal, history_rows, total_shifts)."""
    cdef Py_ssize_t n = lam.shape[0], d = n_features, k
    if indptr.shape[0] != n + 1 or y.shape[0] != n or sigma.shape[0] != n or w.shape[0] != d:
        raise ValueError("inconsistent shapes")
    cdef Py_ssize_t nd, ni, nl
    prospect_work_sizes(n, d, &nd, &ni, &nl)
    cdef double[::1] dwork = np.zeros(nd)
    cdef Py_ssize_t[::1] iwork = np.zeros(ni, dtype=np.intp)
    cdef int64_t[::1] lwork = np.zeros(nl, dtype=np.int64)
    cdef double[::1] wv = w if d > 0 else np.zeros(1)
    cdef ProspectProblem P
    prospect_problem_init(&P, n, d, &y[0], make_loss(loss, loss_param), mu, &sigma[0], &wv[0],
                          &dwork[0], &iwork[0], &lwork[0])
    cdef Py_ssize_t[:, ::1] otr
    P.trace = intp_out(trace, &P.trace_len)
    if otrace is not None:
        otr = otrace
        if otr.shape[0] > 0:
            if otr.shape[1] != n:
                raise ValueError("otrace must have n columns")
            P.otrace = &otr[0, 0]
            P.otrace_steps = otr.shape[0]
    cdef _Objective obj = _Objective(n, d, y, loss, loss_param, sigma, mu, wv)
    cdef SorelProblem* Q = &obj.Q
    mon = EpochMonitor(callback, verbose, ("primal", "dual", "gap"), coef=np.asarray(wv)[:d])
    with nogil:
        prospect_start(&data[0], &indices[0], &indptr[0], &P, alpha, seed)
    status, n_epochs, F = _run_epochs(&data[0], &indices[0], &indptr[0], Q, &P, NULL, 0.0, n,
                                      max_epochs, mon)
    prospect_lambda(&P, &lam[0])
    if mon.error is not None:
        raise mon.error
    return status, n_epochs, F, mon.rows, int(P.shifts)


def _fit_sgd(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
             Py_ssize_t n_features, const double[::1] y, str loss, const double[::1] sigma,
             const double[::1] sigma_b, double mu, double[::1] w, double alpha,
             Py_ssize_t max_epochs, unsigned long long seed, int verbose, callback,
             trace=None, double loss_param=0.0):
    """Mini-batch SGD on validated arrays (batch size = len(sigma_b)); w is overwritten.
    Returns (status, n_epochs, primal, history_rows)."""
    cdef Py_ssize_t n = y.shape[0], d = n_features, b = sigma_b.shape[0], k
    if indptr.shape[0] != n + 1 or sigma.shape[0] != n or w.shape[0] != d:
        raise ValueError("inconsistent shapes")
    if not 1 <= b <= n:
        raise ValueError(f"batch size must lie in [1, n = {n}]; got {b}")
    if not alpha * mu < 1.0:
        raise ValueError("alpha mu must be < 1")
    cdef Py_ssize_t nd, ni, T = n // b
    sgd_work_sizes(n, b, &nd, &ni)
    cdef double[::1] dwork = np.zeros(nd)
    cdef Py_ssize_t[::1] iwork = np.zeros(ni, dtype=np.intp)
    cdef double[::1] wv = w if d > 0 else np.zeros(1)
    cdef SgdProblem P
    sgd_problem_init(&P, n, d, b, &y[0], make_loss(loss, loss_param), mu, &sigma_b[0], &wv[0],
                     &dwork[0], &iwork[0], seed)
    P.trace = intp_out(trace, &P.trace_len)
    cdef _Objective obj = _Objective(n, d, y, loss, loss_param, sigma, mu, wv)
    cdef SorelProblem* Q = &obj.Q
    mon = EpochMonitor(callback, verbose, ("primal", "dual", "gap"), coef=np.asarray(wv)[:d])
    status, n_epochs, F = _run_epochs(&data[0], &indices[0], &indptr[0], Q, NULL, &P, alpha, T,
                                      max_epochs, mon)
    if mon.error is not None:
        raise mon.error
    return status, n_epochs, F, mon.rows


def _reposition_replay(const double[::1] l0, const Py_ssize_t[::1] idx, const double[::1] vals):
    """Tests: start from the stable order of l0, set l[idx[s]] = vals[s] for s = 0, 1, ...
    through prospect_reposition; returns the order after every update (len(idx), n) and the
    total displacement."""
    cdef Py_ssize_t n = l0.shape[0], s, p, m = idx.shape[0]
    cdef ProspectProblem P
    cdef Py_ssize_t[::1] order = np.zeros(n, dtype=np.intp)
    cdef Py_ssize_t[::1] pos = np.zeros(n, dtype=np.intp)
    cdef Py_ssize_t[::1] iw = np.zeros(n, dtype=np.intp)
    cdef double[::1] sl = np.zeros(n)
    out_arr = np.zeros((m, n), dtype=np.intp)
    cdef Py_ssize_t[:, ::1] out = out_arr
    P.n = n
    P.sl = &sl[0]
    P.order = &order[0]
    P.pos = &pos[0]
    P.shifts = 0
    argsort_stable(&l0[0], n, &order[0], &iw[0], False)
    for p in range(n):
        sl[p] = l0[order[p]]
        pos[order[p]] = p
    for s in range(m):
        if not 0 <= idx[s] < n:
            raise IndexError("idx out of range")
        prospect_reposition(&P, idx[s], vals[s])
        for p in range(n):
            out[s, p] = order[p]
    return out_arr, int(P.shifts)
