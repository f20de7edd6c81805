# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The SOREL loop (spec seed4 sections 2.3, 2.4, 3); see _sorel.pxd for the algorithm.

The dual-step guard (on in ``sorel_run``; ``eta_guard=False`` in ``train_sorel`` turns it
off). With the paper's schedule eta_k = C (k+1)/n grows without bound. Near the optimum the
dual iteration is an extrapolated projected gradient ascent on D(lambda) = min_w lambda^T l(w)
+ g(w), restricted to the face of Pi_sigma that holds lambda* (the optimum of a spectral risk
generically sits where losses of distinct rows tie, so lambda* is not a vertex). Linearised
with theta -> 1, a face direction of curvature L evolves by z^2 - (1 - 2 a) z - a = 0,
a = eta L: the alternating root passes -1 at a = 2/3. Once eta_k crosses 2/(3 L_face) the
dual steps flip sign and grow, and w is thrown off the optimum (observed after a few hundred
epochs on yacht, energy and concrete with the paper's tuned (alpha, C)); far beyond it lambda
jumps between vertices (the App. C toy). The guard watches the dual steps s_k = lambda_{k+1}
- lambda_k: when three successive pairs are anti-aligned (cos(s_j, s_{j-1}) < -1/2) and the
alternation is not dying out (||s_k|| >= 0.9 ||s_{k-3}||), C is halved for the rest of the
run (eta_k = C' (k+1)/n with C' = C/2, C/4, ...: eta halves at once and then grows at half
the rate). Past a fixed limit 2/(3 L_face) this happens again at most once per doubling of
k, and each time the alternating mode has only grown for a few epochs. While the run is
converging the steps are aligned, so the guard does not act; early on it acts when C is
simply too large (lambda jumping between vertices, the App. C toy).
"""
import numpy as np

from libc.math cimport log1p, isfinite, sqrt, NAN, HUGE_VAL
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, memset

from dualsolve._core.buffers cimport intp_out
from dualsolve._core.hooks cimport report_or_stop
from dualsolve._core.csr cimport floating, index_t, sparse_dot, sparse_axpy
from dualsolve._core.losses cimport Loss, loss_value, loss_deriv, make_loss
from dualsolve._core.rng cimport rng_seed, rng_below, rng_shuffle
from dualsolve._core.lazy cimport (DriftJIT, drift_table_size, drift_init, drift_catch_up,
                                   drift_step, drift_flush)
from dualsolve._core.isotonic cimport argsort_stable, project_permutahedron
from dualsolve._monitor import EpochMonitor


cdef SorelOptions sorel_default_options() noexcept nogil:
    cdef SorelOptions o
    o.alpha = 0.01
    o.C = 0.1
    o.tau_c = 20.0
    o.eta_max = 0.0
    o.form = SOREL_GRADIENT
    o.sampling = SOREL_UNIFORM
    o.batch_size = 1
    o.steps = 0
    o.max_epochs = 64
    o.seed = 0
    o.no_dual_prox = False
    return o


cdef Py_ssize_t sorel_epoch_steps(const SorelOptions* opt, Py_ssize_t n) noexcept nogil:
    if opt.steps > 0:
        return opt.steps
    if opt.sampling == SOREL_UNIFORM:
        return n
    return n // opt.batch_size


cdef void sorel_work_sizes(Py_ssize_t n, Py_ssize_t d, Py_ssize_t b, Py_ssize_t T,
                           Py_ssize_t* n_double, Py_ssize_t* n_intp,
                           Py_ssize_t* n_int64) noexcept nogil:
    # + 2 n for the dual-step guard (the previous step and lambda_k), after P.cb
    n_double[0] = 7 * n + 2 * d + drift_table_size(T) + b
    n_intp[0] = 4 * n + b
    n_int64[0] = d if d > 0 else 1


cdef void sorel_problem_init(SorelProblem* P, Py_ssize_t n, Py_ssize_t d, Py_ssize_t b,
                             Py_ssize_t T, const double* y, Loss loss, double mu,
                             const double* sigma, double* w, double* lam, double* dwork,
                             Py_ssize_t* iwork, int64_t* lwork) noexcept nogil:
    P.n = n
    P.d = d
    P.y = y
    P.loss = loss
    P.mu = mu
    P.sigma = sigma
    P.w = w
    P.lam = lam
    P.l_cur = dwork
    P.l_prev = dwork + n
    P.dbar = dwork + 2 * n
    P.z = dwork + 3 * n
    P.pdw = dwork + 4 * n
    P.gbar = dwork + 5 * n
    P.wk = dwork + 5 * n + d
    P.tab = dwork + 5 * n + 2 * d
    P.cb = P.tab + drift_table_size(T)
    P.perm = iwork
    P.lperm = iwork + n
    P.iw = iwork + 2 * n
    P.order = iwork + 3 * n
    P.batch = iwork + 4 * n
    P.last = lwork
    P.trace = NULL
    P.trace_len = 0
    P.trace_pos = 0


cdef double sorel_objective(const floating* data, const index_t* indices, const index_t* indptr,
                            SorelProblem* P, bint warm) noexcept nogil:
    cdef Py_ssize_t i, j, n = P.n
    cdef index_t a, e
    cdef double m, F = 0.0, ww = 0.0
    for i in range(n):
        a = indptr[i]
        e = indptr[i + 1]
        m = sparse_dot(data + a, indices + a, e - a, P.w)
        P.l_cur[i] = loss_value(&P.loss, m, P.y[i])
        P.dbar[i] = loss_deriv(&P.loss, m, P.y[i])
    argsort_stable(P.l_cur, n, P.lperm, P.iw, warm)
    for j in range(n):
        F += P.sigma[j] * P.l_cur[P.lperm[j]]
    for j in range(P.d):
        ww += P.w[j] * P.w[j]
    return F + 0.5 * P.mu * ww


cdef inline void _vertex(SorelProblem* P) noexcept nogil:
    # lambda = sigma[rank(l)], ranks from P.lperm (ties: the stable order)
    cdef Py_ssize_t j
    for j in range(P.n):
        P.lam[P.lperm[j]] = P.sigma[j]


cdef inline void _draw_batch(SorelProblem* P, const SorelOptions* opt, Py_ssize_t* pos) noexcept nogil:
    cdef Py_ssize_t r, b = opt.batch_size, n = P.n
    if opt.sampling == SOREL_UNIFORM:
        for r in range(b):
            P.batch[r] = <Py_ssize_t>rng_below(&P.rng, <uint64_t>n)
    else:
        if pos[0] + b > n:
            rng_shuffle(&P.rng, P.order, n)
            pos[0] = 0
        for r in range(b):
            P.batch[r] = P.order[pos[0] + r]
        pos[0] += b
    if P.trace != NULL:
        for r in range(b):
            if P.trace_pos < P.trace_len:
                P.trace[P.trace_pos] = P.batch[r]
                P.trace_pos += 1


cdef int sorel_run(const floating* data, const index_t* indices, const index_t* indptr,
                   SorelProblem* P, const SorelOptions* opt, SorelResult* res,
                   sorel_hook hook, void* ctx) noexcept nogil:
    """The loop with the dual-step guard on (module docstring)."""
    return _sorel_loop(data, indices, indptr, P, opt, res, hook, ctx, True, NULL)


cdef inline bint _guard_update(SorelProblem* P, double* s_prev, const double* lam_old,
                               double* norm_hist, int* n_anti, bint have_prev) noexcept nogil:
    """After the dual step: s = lambda_{k+1} - lambda_k (lam_old holds lambda_k). Returns
    True when the step has turned unstable (three anti-aligned pairs in a row, and the
    alternation not decaying: ||s_k|| >= 0.9 ||s_{k-3}||). s_prev becomes s; norm_hist
    keeps ||s_{k-3}||, ..., ||s_k||."""
    cdef Py_ssize_t i, n = P.n
    cdef double si, dot = 0.0, ss = 0.0, pp = 0.0
    for i in range(n):
        si = P.lam[i] - lam_old[i]
        dot += si * s_prev[i]
        ss += si * si
        pp += s_prev[i] * s_prev[i]
        s_prev[i] = si
    norm_hist[0] = norm_hist[1]
    norm_hist[1] = norm_hist[2]
    norm_hist[2] = norm_hist[3]
    norm_hist[3] = sqrt(ss)
    if have_prev and ss > 0.0 and pp > 0.0 and dot < -0.5 * sqrt(ss * pp):
        n_anti[0] += 1
    else:
        n_anti[0] = 0
    return n_anti[0] >= 3 and norm_hist[3] >= 0.9 * norm_hist[0]


cdef int _sorel_loop(const floating* data, const index_t* indices, const index_t* indptr,
                     SorelProblem* P, const SorelOptions* opt, SorelResult* res,
                     sorel_hook hook, void* ctx, bint guard, double* eta_rec) noexcept nogil:
    # eta_rec (NULL: unused) receives each epoch's eta before the hook reports the epoch
    cdef Py_ssize_t n = P.n, d = P.d, b = opt.batch_size
    cdef Py_ssize_t T = sorel_epoch_steps(opt, n)
    cdef Py_ssize_t i, j, k, r, q, t, pos
    cdef index_t a0, a1
    cdef double F, theta, eta, inv_tau, al = opt.alpha, mu = P.mu, sc, c1, c2, a, log_a
    cdef double m, coef, g, scale = <double>n / <double>b
    cdef DriftJIT st
    # the guard's buffers, carved after P.cb (sorel_work_sizes reserves them)
    cdef double* s_prev = P.cb + b
    cdef double* lam_old = P.cb + b + n
    cdef double C_eff = opt.C
    cdef double norm_hist[4]
    cdef int n_anti = 0
    norm_hist[0] = norm_hist[1] = norm_hist[2] = norm_hist[3] = 0.0
    if guard and not opt.no_dual_prox:
        memset(s_prev, 0, n * sizeof(double))
    else:
        guard = False
    res.status = SOREL_MAX_EPOCHS
    res.n_epochs = 0
    res.error = 0
    rng_seed(&P.rng, <uint64_t>opt.seed)
    for i in range(n):
        P.order[i] = i
    F = sorel_objective(data, indices, indptr, P, False)
    res.primal = F
    _vertex(P)                                            # line 1: lambda_0
    memcpy(P.l_prev, P.l_cur, n * sizeof(double))         # l(w_{-1}) = l(w_0)
    if not isfinite(F):
        res.status = SOREL_DIVERGED
        return res.status
    if hook != NULL and hook(ctx, 0, F, P.lam) != 0:
        res.status = SOREL_STOPPED
        return res.status
    for k in range(opt.max_epochs):
        # l_cur, dbar hold l(w_k), phi'(X w_k); l_prev holds l(w_{k-1})
        theta = <double>k / <double>(k + 1)
        if opt.no_dual_prox:
            _vertex(P)                                    # eta = infinity (App. C)
            inv_tau = 0.0
            if eta_rec != NULL:
                eta_rec[0] = HUGE_VAL
        else:
            eta = C_eff * <double>(k + 1) / <double>n
            if opt.eta_max > 0.0 and eta > opt.eta_max:
                eta = opt.eta_max
            if eta_rec != NULL:
                eta_rec[0] = eta
            for i in range(n):
                P.z[i] = P.lam[i] + eta * ((1.0 + theta) * P.l_cur[i] - theta * P.l_prev[i])
            if guard:
                memcpy(lam_old, P.lam, n * sizeof(double))
            project_permutahedron(P.z, P.sigma, P.lam, n, P.perm, P.iw, P.pdw, k > 0)
            if guard and _guard_update(P, s_prev, lam_old, norm_hist, &n_anti, k > 0):
                C_eff *= 0.5                              # past the stability limit: back off
                n_anti = 0
            inv_tau = <double>(k + 1) / (opt.tau_c * <double>n)
        memcpy(P.l_prev, P.l_cur, n * sizeof(double))
        # anchor: gbar = X^T (lambda * phi'(X w_k)), w_k
        memset(P.gbar, 0, d * sizeof(double))
        for i in range(n):
            coef = P.lam[i] * P.dbar[i]
            if coef != 0.0:
                a0 = indptr[i]
                a1 = indptr[i + 1]
                sparse_axpy(coef, data + a0, indices + a0, a1 - a0, P.gbar)
        memcpy(P.wk, P.w, d * sizeof(double))
        if opt.form == SOREL_GRADIENT:
            # w <- (1 - al (mu + 1/tau)) w - al gbar + (al/tau) w_k - al sum c_i x_i
            if not al * (mu + inv_tau) < 1.0:
                res.error = -1
                return -1
            a = 1.0 - al * (mu + inv_tau)
            log_a = log1p(-al * (mu + inv_tau))
            c1 = -al
            c2 = al * inv_tau
            sc = al
        else:
            # w <- a (w - al gbar + (al/tau) w_k - al sum c_i x_i),  a = 1/(1 + al mu + al/tau)
            a = 1.0 / (1.0 + al * (mu + inv_tau))
            log_a = -log1p(al * (mu + inv_tau))
            c1 = -a * al
            c2 = a * al * inv_tau
            sc = a * al
        drift_init(&st, P.w, P.last, NULL, d, P.tab, T, a, log_a, P.gbar, c1, P.wk, c2, 0)
        if opt.sampling == SOREL_PERMUTATION:
            rng_shuffle(&P.rng, P.order, n)               # a fresh permutation per epoch
        pos = 0
        for t in range(T):
            _draw_batch(P, opt, &pos)
            for r in range(b):
                i = P.batch[r]
                for q in range(indptr[i], indptr[i + 1]):
                    drift_catch_up(&st, indices[q], t)
            for r in range(b):                            # all margins at the same w
                i = P.batch[r]
                a0 = indptr[i]
                a1 = indptr[i + 1]
                m = sparse_dot(data + a0, indices + a0, a1 - a0, P.w)
                P.cb[r] = scale * P.lam[i] * (loss_deriv(&P.loss, m, P.y[i]) - P.dbar[i])
            for r in range(b):
                i = P.batch[r]
                coef = -sc * P.cb[r]
                for q in range(indptr[i], indptr[i + 1]):
                    j = indices[q]
                    g = coef * data[q]
                    if P.last[j] == t:
                        drift_step(&st, j, t, g)           # the dense part once per step
                    else:
                        P.w[j] += g                        # j already stepped by this batch
        drift_flush(&st, T)
        F = sorel_objective(data, indices, indptr, P, True)
        res.n_epochs = k + 1
        res.primal = F
        if not isfinite(F):
            res.status = SOREL_DIVERGED
            return res.status
        if hook != NULL and hook(ctx, k + 1, F, P.lam) != 0:
            res.status = SOREL_STOPPED
            return res.status
    return res.status


# ---------------------------------------------------------------------------------------
# Python driver


cdef int _python_hook(void* ctx, Py_ssize_t epoch, double primal,
                      const double* lam) noexcept nogil:
    with gil:
        return report_or_stop(<object>ctx, (epoch, primal, NAN, NAN, (<object>ctx).eta[0]))


def _fit(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
         Py_ssize_t n_features, const double[::1] y, str loss, const double[::1] sigma,
         double mu, double[::1] w, double[::1] lam, double alpha, double C, double tau_c,
         double eta_max, int form, int sampling, Py_ssize_t batch_size, Py_ssize_t steps,
         Py_ssize_t max_epochs, unsigned long long seed, bint no_dual_prox, int verbose,
         callback, trace=None, double loss_param=0.0, bint eta_guard=True):
    """Run the SOREL loop on validated arrays; w (w_0 on entry) and lam are overwritten.
    trace: an intp array receiving the sampled rows in order. eta_guard: the dual-step
    guard (module docstring). Returns (status, n_epochs, primal, error, history_rows), a
    row being (epoch, seconds, primal, dual, gap, eta of the epoch)."""
    cdef Py_ssize_t n = lam.shape[0], d = n_features
    if (indptr.shape[0] != n + 1 or y.shape[0] != n or sigma.shape[0] != n
            or w.shape[0] != d):
        raise ValueError("inconsistent shapes")
    if not 1 <= batch_size <= n:
        raise ValueError(f"batch_size must lie in [1, n = {n}]; got {batch_size}")
    cdef SorelOptions opt = sorel_default_options()
    opt.alpha = alpha
    opt.C = C
    opt.tau_c = tau_c
    opt.eta_max = eta_max
    opt.form = form
    opt.sampling = sampling
    opt.batch_size = batch_size
    opt.steps = steps
    opt.max_epochs = max_epochs
    opt.seed = seed
    opt.no_dual_prox = no_dual_prox
    cdef Py_ssize_t T = sorel_epoch_steps(&opt, n)
    if T < 1:
        raise ValueError("an epoch needs at least one step")
    cdef Py_ssize_t nd, ni, nl
    sorel_work_sizes(n, d, batch_size, T, &nd, &ni, &nl)
    cdef double[::1] dwork = np.zeros(nd)
    cdef Py_ssize_t[::1] iwork = np.zeros(ni, dtype=np.intp)
    cdef int64_t[::1] lwork = np.zeros(nl, dtype=np.int64)
    cdef double[::1] wv = w if d > 0 else np.zeros(1)
    cdef Loss L = make_loss(loss, loss_param)
    cdef SorelProblem P
    cdef SorelResult res
    sorel_problem_init(&P, n, d, batch_size, T, &y[0], L, mu, &sigma[0], &wv[0], &lam[0],
                       &dwork[0], &iwork[0], &lwork[0])
    P.trace = intp_out(trace, &P.trace_len)
    # the epoch's eta (the loop writes it, the hook adds it to the history row)
    cdef double[::1] eta_now = np.full(1, np.nan)
    mon = EpochMonitor(callback, verbose, ("primal", "dual", "gap", "eta"),
                       coef=np.asarray(wv)[:d])
    mon.eta = np.asarray(eta_now)
    cdef int status
    with nogil:
        status = _sorel_loop(&data[0], &indices[0], &indptr[0], &P, &opt, &res, _python_hook,
                             <void*>mon, eta_guard, &eta_now[0])
    if mon.error is not None:
        raise mon.error
    return res.status, res.n_epochs, res.primal, res.error, mon.rows


def objective(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
              Py_ssize_t n_features, const double[::1] y, str loss, const double[::1] sigma,
              double mu, double[::1] w, double loss_param=0.0):
    """F(w) through sorel_objective (for tests and the Python API)."""
    cdef Py_ssize_t n = y.shape[0], d = n_features, nd, ni, nl
    sorel_work_sizes(n, d, 1, 1, &nd, &ni, &nl)
    cdef double[::1] dwork = np.zeros(nd)
    cdef Py_ssize_t[::1] iwork = np.zeros(ni, dtype=np.intp)
    cdef int64_t[::1] lwork = np.zeros(nl, dtype=np.int64)
    cdef double[::1] lam = np.zeros(n)
    cdef double[::1] wv = w if d > 0 else np.zeros(1)
    cdef SorelProblem P
    sorel_problem_init(&P, n, d, 1, 1, &y[0], make_loss(loss, loss_param), mu, &sigma[0], &wv[0],
                       &lam[0], &dwork[0], &iwork[0], &lwork[0])
    return sorel_objective(&data[0], &indices[0], &indptr[0], &P, False)
