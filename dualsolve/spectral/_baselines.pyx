# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The Prospect and mini-batch SGD loops and their runs to a certificate; see _baselines.pxd
for the algorithms. LSVRG runs on ``_sorel.sorel_run`` (see there)."""
import numpy as np

from libc.math cimport log1p, isfinite, NAN, INFINITY
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, memmove, memset

from dualsolve._core.buffers cimport intp_out
from dualsolve._core.csr cimport floating, index_t, sparse_dot, sparse_axpy
from dualsolve._core.losses cimport Loss, loss_value, loss_deriv, make_loss
from dualsolve._core.rng cimport rng_seed, rng_below, rng_shuffle
from dualsolve._core.lazy cimport (DriftJIT, drift_table_size, drift_init, drift_catch_up,
                                   drift_step, drift_flush, ScaledVec, sv_init, sv_scale,
                                   sv_add, sv_dot, sv_renormalize)
from dualsolve._core.isotonic cimport argsort_stable, project_permutahedron
from dualsolve._core.hooks cimport python_hook
from dualsolve._core.blocks cimport Blocks, BLOCKS_MIN_NNZ, blocks_init, blocks_free
from dualsolve._core.status cimport (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_DIVERGED,
                                     STATUS_NO_MEMORY, epoch_hook, report_epoch, gap_certifies, gap_floor)
from dualsolve.spectral._sorel cimport (SorelProblem, SorelResult, sorel_work_sizes,
                                        sorel_problem_init, sorel_objective_threads,
                                        sorel_anchor_blocks, sorel_gap, sorel_risk_gap, sorel_risk_at_zero)

#: the hook is polled (epoch = -1) once every POLL_MASK + 1 steps (Prospect) or batches (SGD)
cdef enum:
    POLL_MASK = 4095

#: the certificate is checked at least every CHECK_EVERY epochs
cdef enum:
    CHECK_EVERY = 8


cdef BaselineOptions baseline_default_options() noexcept nogil:
    cdef BaselineOptions o
    o.step = 0.01
    o.steps = 0
    o.max_epochs = 64
    o.tol = 0.0
    o.seed = 0
    o.n_threads = 1
    return o


# ---------------------------------------------------------------------------------------
# Prospect


cdef void prospect_work_sizes(Py_ssize_t n, Py_ssize_t d, Py_ssize_t* n_double,
                              Py_ssize_t* n_intp, Py_ssize_t* n_int64) noexcept nogil:
    n_double[0] = d + 3 * n + drift_table_size(n)
    n_intp[0] = 3 * n
    n_int64[0] = d if d > 0 else 1


cdef void prospect_problem_init(ProspectProblem* P, Py_ssize_t n, Py_ssize_t d,
                                const double* y, Loss loss, double lam, const double* sigma,
                                double* w, double* dwork, Py_ssize_t* iwork,
                                int64_t* lwork) noexcept nogil:
    P.n = n
    P.d = d
    P.y = y
    P.loss = loss
    P.lam = lam
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
    P.step = 0.0
    P.shifts = 0
    P.trace = NULL
    P.trace_len = 0
    P.trace_pos = 0
    P.otrace = NULL
    P.otrace_steps = 0
    P.otrace_pos = 0


cdef void prospect_start(const floating* data, const index_t* indices, const index_t* indptr,
                         ProspectProblem* P, double step, unsigned long long seed) noexcept nogil:
    cdef Py_ssize_t i, p, n = P.n
    cdef index_t a0, a1
    cdef double m, c
    rng_seed(&P.rng, <uint64_t>seed)
    P.step = step
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


cdef void prospect_lambda(const ProspectProblem* P, double* dual) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(P.n):
        dual[i] = P.sigma[P.pos[i]]


cdef int prospect_epoch(const floating* data, const index_t* indices, const index_t* indptr,
                        ProspectProblem* P, Py_ssize_t T, epoch_hook hook,
                        void* ctx) noexcept nogil:
    cdef Py_ssize_t n = P.n, i, j, q, p
    cdef index_t a0, a1
    cdef int64_t t
    cdef int stop = 0
    cdef double al = P.step, a, m, g, l, lam, dS, coef, xv, nn = <double>P.n
    cdef DriftJIT st
    # untouched coordinates: w_j <- a (w_j - step S_j), a = 1/(1 + step lam)
    a = 1.0 / (1.0 + al * P.lam)
    drift_init(&st, P.w, P.last, NULL, P.d, P.tab, T, a, -log1p(al * P.lam), P.S, -a * al,
               NULL, 0.0, 0)
    for t in range(T):
        if (t & POLL_MASK) == POLL_MASK and hook != NULL:
            stop = hook(ctx, -1, NULL)                # Ctrl-C during a long epoch
            if stop != 0:
                drift_flush(&st, t)
                return stop
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
            # w_J <- a (w_J - step (n dS x_i + S_J)), then S_J += dS x_i (S is read at
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
    return 0


# ---------------------------------------------------------------------------------------
# mini-batch stochastic subgradient


cdef void sgd_work_sizes(Py_ssize_t n, Py_ssize_t b, Py_ssize_t* n_double,
                         Py_ssize_t* n_intp) noexcept nogil:
    n_double[0] = 3 * b
    n_intp[0] = n + 2 * b


cdef void sgd_problem_init(SgdProblem* P, Py_ssize_t n, Py_ssize_t d, Py_ssize_t b,
                           const double* y, Loss loss, double lam, const double* sigma_b,
                           double* w, double* dwork, Py_ssize_t* iwork,
                           unsigned long long seed) noexcept nogil:
    cdef Py_ssize_t i
    P.n = n
    P.d = d
    P.b = b
    P.y = y
    P.loss = loss
    P.lam = lam
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


cdef int sgd_epoch(const floating* data, const index_t* indices, const index_t* indptr,
                   SgdProblem* P, double step, Py_ssize_t T, epoch_hook hook,
                   void* ctx) noexcept nogil:
    cdef Py_ssize_t b = P.b, t, r, k, i, base
    cdef index_t a0, a1
    cdef double lam
    cdef int stop = 0
    cdef ScaledVec sv
    sv_init(&sv, P.w, P.d)
    rng_shuffle(&P.rng, P.order, P.n)
    for t in range(T):
        if (t & POLL_MASK) == POLL_MASK and hook != NULL:
            stop = hook(ctx, -1, NULL)                # Ctrl-C during a long epoch
            if stop != 0:
                break
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
        for k in range(b):                          # lambda_B = sigma_b[rank(l_B)]
            r = P.bperm[k]
            lam = P.sigma_b[k]
            P.cb[r] = lam * loss_deriv(&P.loss, P.mb[r], P.y[P.order[base + r]]) \
                if lam != 0.0 else 0.0
        sv_scale(&sv, 1.0 - step * P.lam)           # w <- (1 - step lam) w
        for r in range(b):                          #      - step sum_B lambda phi' x
            if P.cb[r] != 0.0:
                i = P.order[base + r]
                a0 = indptr[i]
                a1 = indptr[i + 1]
                sv_add(&sv, -step * P.cb[r], data + a0, indices + a0, a1 - a0)
    sv_renormalize(&sv)
    return stop


# ---------------------------------------------------------------------------------------
# the runs to a certificate


cdef int _run(const floating* data, const index_t* indices, const index_t* indptr,
              ProspectProblem* PP, SgdProblem* PS, SorelProblem* Q, const BaselineOptions* opt,
              SorelResult* res, epoch_hook hook, void* ctx) noexcept nogil:
    """The epochs of Prospect (PP) or SGD (PS, the other NULL) to a certificate."""
    cdef Py_ssize_t n = Q.n, d = Q.d, k = 0, i, j
    cdef double F = NAN, gap = NAN, floor, beta, passes, rg = NAN
    cdef double values[BASELINE_HOOK_VALUES]
    cdef int stop = 0
    cdef Blocks team
    res.n_epochs = 0
    if not blocks_init(&team, indptr, n, d, opt.n_threads, BLOCKS_MIN_NNZ, d, 0):
        res.primal = res.dual = res.gap = res.f0 = NAN
        res.status = STATUS_NO_MEMORY
        return res.status
    res.status = STATUS_MAX_EPOCHS
    res.f0 = sorel_risk_at_zero(Q)
    # tol = 0 runs the whole budget (gap_certifies never holds for it)
    floor = gap_floor(res.f0)
    if Q.dual_given:                                   # the given lambda, in Pi_sigma
        memcpy(Q.z, Q.dual, n * sizeof(double))
        project_permutahedron(Q.z, Q.sigma, Q.dual, n, Q.perm, Q.iw, Q.pdw, False)
    if PP != NULL:
        prospect_start(data, indices, indptr, PP, opt.step, opt.seed)
    while True:
        F = sorel_objective_threads(data, indices, indptr, Q, k > 0, team.size)
        if PP != NULL:
            passes = 0.0 if k == 0 else 1.0 + k
        else:
            passes = <double>k * <double>(opt.steps * PS.b) / <double>n
        if not isfinite(F):
            values[0], values[1], values[2], values[3] = F, NAN, NAN, passes
            stop = hook(ctx, k, values) if hook != NULL else 0
            res.status = stop if stop != 0 else STATUS_DIVERGED
            break
        # the vertex at w_k joins the running average (weights k + 1; a given lambda
        # stands for the past): the certificate's lambda
        if k > 0 or not Q.dual_given:
            beta = 2.0 / <double>(k + 2)
            for j in range(n):
                i = Q.lperm[j]
                Q.dual[i] += beta * (Q.sigma[j] - Q.dual[i])
        # the check costs a pass over X: every CHECK_EVERY epochs, at the last one, and
        # whenever it can succeed (its first term rg, O(n), is a lower bound: G <= tol (F - G)
        # needs rg <= tol (F - rg))
        gap = NAN
        if k % CHECK_EVERY != 0 and k < opt.max_epochs:
            rg = sorel_risk_gap(Q)
        if (k % CHECK_EVERY == 0 or k >= opt.max_epochs
                or gap_certifies(rg, F - rg, opt.tol, floor)):
            sorel_anchor_blocks(data, indices, indptr, Q, &team)
            gap = sorel_gap(Q, Q.gbar)
        values[0], values[1], values[2], values[3] = F, F - gap, gap, passes
        res.status = report_epoch(hook, ctx, k, values,
                                  STATUS_CONVERGED if gap_certifies(gap, F - gap, opt.tol, floor)
                                  else STATUS_MAX_EPOCHS)
        if res.status != STATUS_MAX_EPOCHS or k >= opt.max_epochs:
            break
        if opt.steps > POLL_MASK:                      # the epoch polls the hook: keep w_k
            memcpy(Q.wk, Q.w, d * sizeof(double))
        if PP != NULL:
            stop = prospect_epoch(data, indices, indptr, PP, opt.steps, hook, ctx)
        else:
            stop = sgd_epoch(data, indices, indptr, PS, opt.step, opt.steps, hook, ctx)
        if stop != 0:                                  # back to the reported w_k
            memcpy(Q.w, Q.wk, d * sizeof(double))
            res.status = stop
            break
        k += 1
    blocks_free(&team)
    res.n_epochs = k
    res.primal = F
    res.gap = gap
    res.dual = F - gap
    return res.status


cdef int prospect_run(const floating* data, const index_t* indices, const index_t* indptr,
                      ProspectProblem* P, SorelProblem* Q, const BaselineOptions* opt,
                      SorelResult* res, epoch_hook hook, void* ctx) noexcept nogil:
    return _run(data, indices, indptr, P, NULL, Q, opt, res, hook, ctx)


cdef int sgd_run(const floating* data, const index_t* indices, const index_t* indptr,
                 SgdProblem* P, SorelProblem* Q, const BaselineOptions* opt, SorelResult* res,
                 epoch_hook hook, void* ctx) noexcept nogil:
    return _run(data, indices, indptr, NULL, P, Q, opt, res, hook, ctx)


# ---------------------------------------------------------------------------------------
# the engines' Python entries (train_prospect, train_spectral_sgd): history, verbose lines,
# callback and Ctrl-C through the monitor ``mon`` (dualsolve._monitor.EpochMonitor)


cdef class _Checks:
    """Work space of the checks: a SorelProblem (b = T = 1) over the data."""
    cdef SorelProblem Q
    cdef double[::1] dwork
    cdef Py_ssize_t[::1] iwork
    cdef int64_t[::1] lwork

    def __init__(self, Py_ssize_t n, Py_ssize_t d, const double[::1] y, str loss,
                 double loss_param, const double[::1] sigma, double lam, double[::1] w,
                 double[::1] dual, bint dual_given):
        cdef Py_ssize_t nd, ni, nl
        sorel_work_sizes(n, d, 1, 1, &nd, &ni, &nl)
        self.dwork = np.zeros(nd)
        self.iwork = np.zeros(ni, dtype=np.intp)
        self.lwork = np.zeros(nl, dtype=np.int64)
        sorel_problem_init(&self.Q, n, d, 1, 1, &y[0], make_loss(loss, loss_param), lam,
                           &sigma[0], &w[0], &dual[0], &self.dwork[0], &self.iwork[0],
                           &self.lwork[0])
        self.Q.dual_given = dual_given


def _check_shapes(mon, Py_ssize_t n, Py_ssize_t n_rows, Py_ssize_t ny, Py_ssize_t nsigma,
                  Py_ssize_t nw, Py_ssize_t d):
    if n_rows != n or ny != n or nsigma != n or nw != d:
        raise ValueError("inconsistent shapes")
    if mon.n_values != BASELINE_HOOK_VALUES:
        raise ValueError(f"the monitor expects {mon.n_values} values; the baselines report "
                         f"{BASELINE_HOOK_VALUES}")


def solve_prospect(const floating[::1] data, const index_t[::1] indices,
                   const index_t[::1] indptr, Py_ssize_t n_features, const double[::1] y,
                   str loss, double loss_param, const double[::1] sigma, double lam,
                   double[::1] w, double[::1] dual, bint dual_given, double step,
                   Py_ssize_t max_epochs, double tol, unsigned long long seed, mon,
                   trace=None, order_trace=None, int n_threads=1):
    """prospect_run on validated arrays (w: w_0 in, the iterate out; dual: lambda_0 in when
    ``dual_given``, the certificate's lambda out). trace: an intp array receiving the
    sampled rows; order_trace: an intp array (steps, n) receiving the maintained sorted
    order after every step. Returns (status, n_epochs, primal, dual, gap, F(0), total
    displacement of the table's entries)."""
    cdef Py_ssize_t n = dual.shape[0], d = n_features
    _check_shapes(mon, n, indptr.shape[0] - 1, y.shape[0], sigma.shape[0], w.shape[0], d)
    cdef Py_ssize_t nd, ni, nl
    prospect_work_sizes(n, d, &nd, &ni, &nl)
    cdef double[::1] dwork = np.zeros(nd)
    cdef Py_ssize_t[::1] iwork = np.zeros(ni, dtype=np.intp)
    cdef int64_t[::1] lwork = np.zeros(nl, dtype=np.int64)
    cdef double[::1] wv = w if d > 0 else np.zeros(1)
    cdef ProspectProblem P
    prospect_problem_init(&P, n, d, &y[0], make_loss(loss, loss_param), lam, &sigma[0],
                          &wv[0], &dwork[0], &iwork[0], &lwork[0])
    cdef Py_ssize_t[:, ::1] otr
    P.trace = intp_out(trace, &P.trace_len)
    if order_trace is not None:
        otr = order_trace
        if otr.shape[0] > 0:
            if otr.shape[1] != n:
                raise ValueError("order_trace must have n columns")
            P.otrace = &otr[0, 0]
            P.otrace_steps = otr.shape[0]
    cdef _Checks chk = _Checks(n, d, y, loss, loss_param, sigma, lam, wv, dual, dual_given)
    cdef BaselineOptions opt = baseline_default_options()
    opt.step = step
    opt.steps = n
    opt.max_epochs = max_epochs
    opt.tol = tol
    opt.seed = seed
    opt.n_threads = n_threads if n_threads > 1 else 1
    cdef SorelResult res
    mon.set_coef(np.asarray(wv)[:d])
    with nogil:
        prospect_run(&data[0], &indices[0], &indptr[0], &P, &chk.Q, &opt, &res, python_hook,
                     <void*>mon)
    return res.status, res.n_epochs, res.primal, res.dual, res.gap, res.f0, int(P.shifts)


def solve_sgd(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
              Py_ssize_t n_features, const double[::1] y, str loss, double loss_param,
              const double[::1] sigma, const double[::1] sigma_b, double lam, double[::1] w,
              double[::1] dual, bint dual_given, double step, Py_ssize_t max_epochs,
              double tol, unsigned long long seed, mon, trace=None, int n_threads=1):
    """sgd_run on validated arrays (batch size = len(sigma_b); w and dual as for
    solve_prospect). Returns (status, n_epochs, primal, dual, gap, F(0))."""
    cdef Py_ssize_t n = dual.shape[0], d = n_features, b = sigma_b.shape[0]
    _check_shapes(mon, n, indptr.shape[0] - 1, y.shape[0], sigma.shape[0], w.shape[0], d)
    if not 1 <= b <= n:
        raise ValueError(f"batch size must lie in [1, n = {n}]; got {b}")
    if not step * lam < 1.0:
        raise ValueError("step lam must be < 1")
    cdef Py_ssize_t nd, ni
    sgd_work_sizes(n, b, &nd, &ni)
    cdef double[::1] dwork = np.zeros(nd)
    cdef Py_ssize_t[::1] iwork = np.zeros(ni, dtype=np.intp)
    cdef double[::1] wv = w if d > 0 else np.zeros(1)
    cdef SgdProblem P
    sgd_problem_init(&P, n, d, b, &y[0], make_loss(loss, loss_param), lam, &sigma_b[0], &wv[0],
                     &dwork[0], &iwork[0], seed)
    P.trace = intp_out(trace, &P.trace_len)
    cdef _Checks chk = _Checks(n, d, y, loss, loss_param, sigma, lam, wv, dual, dual_given)
    cdef BaselineOptions opt = baseline_default_options()
    opt.step = step
    opt.steps = n // b
    opt.max_epochs = max_epochs
    opt.tol = tol
    opt.seed = seed
    opt.n_threads = n_threads if n_threads > 1 else 1
    cdef SorelResult res
    mon.set_coef(np.asarray(wv)[:d])
    with nogil:
        sgd_run(&data[0], &indices[0], &indptr[0], &P, &chk.Q, &opt, &res, python_hook,
                <void*>mon)
    return res.status, res.n_epochs, res.primal, res.dual, res.gap, res.f0


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
