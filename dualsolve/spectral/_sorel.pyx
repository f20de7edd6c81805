# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The SOREL loop (Ge & Jiang 2024; also the LSVRG loop) and its certificate; see _sorel.pxd
for the algorithm.

The dual-step guard (``opt.guard``; ``dual_step_guard=False`` in ``train_sorel`` turns it
off). With the paper's schedule eta_k = c (k+1)/n grows without bound. Near the optimum the
dual iteration is an extrapolated projected gradient ascent on D(lambda) = min_w lambda^T l(w)
+ g(w), restricted to the face of Pi_sigma that holds lambda* (the optimum of a spectral risk
generically sits where losses of distinct rows tie, so lambda* is not a vertex). Linearised
with theta -> 1, a face direction of curvature L evolves by z^2 - (1 - 2 a) z - a = 0,
a = eta L: the alternating root passes -1 at a = 2/3. Once eta_k crosses 2/(3 L_face) the
dual steps flip sign and grow, and w is thrown off the optimum (observed after a few hundred
epochs on yacht, energy and concrete with the paper's tuned step sizes); far beyond it lambda
jumps between vertices (the paper's appendix C toy). The guard watches the dual steps
s_k = lambda_{k+1} - lambda_k: when three successive pairs are anti-aligned
(cos(s_j, s_{j-1}) < -1/2) and the alternation is not dying out (||s_k|| >= 0.9 ||s_{k-3}||),
the scale c is halved for the rest of the run (eta halves at once and then grows at half the
rate). Past a fixed limit 2/(3 L_face) this happens again at most once per doubling of k, and
each time the alternating mode has only grown for a few epochs. While the run is converging
the steps are aligned, so the guard does not act; early on it acts when c is simply too large
(lambda jumping between vertices, the toy).
"""
import numpy as np

from cython.parallel cimport prange
from libc.math cimport log1p, isfinite, sqrt, NAN, INFINITY, HUGE_VAL
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, memset

from dualsolve._core.blocks cimport (Blocks, BLOCKS_MIN_NNZ, blocks_init, blocks_own,
                                     blocks_free, blocks_add_copies)
from dualsolve._core.parallel cimport batch_min_nnz
from dualsolve._core.blocks cimport (BatchClock, batch_clock_epoch, batch_clock_threads,
                                     batch_clock_done)
from dualsolve._core.buffers cimport intp_out
from dualsolve._core.hooks cimport python_hook
from dualsolve._core.ksum cimport KahanSum, ksum_new, ksum_add, ksum_value
from dualsolve._core.status cimport (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_DIVERGED,
                                     STATUS_NO_MEMORY, epoch_hook, report_epoch,
                                     gap_certifies, gap_floor)
from dualsolve._core.csr cimport floating, index_t, sparse_dot, sparse_axpy
from dualsolve._core.losses cimport Loss, loss_value, loss_deriv, make_loss
from dualsolve._core.rng cimport rng_seed, rng_below, rng_shuffle
from dualsolve._core.lazy cimport (DriftJIT, drift_table_size, drift_init, drift_catch_up,
                                   drift_step, drift_flush)
from dualsolve._core.isotonic cimport argsort_stable, project_permutahedron

#: the hook is polled (epoch = -1) once every POLL_MASK + 1 batches of an epoch
cdef enum:
    POLL_MASK = 4095

cdef SorelOptions sorel_default_options() noexcept nogil:
    cdef SorelOptions o
    o.step = 0.01
    o.dual_step_scale = 0.1
    o.prox_scale = 20.0
    o.dual_step_max = 0.0
    o.form = SOREL_GRADIENT
    o.sampling = SOREL_UNIFORM
    o.batch_size = 1
    o.steps = 0
    o.max_epochs = 64
    o.tol = 0.0
    o.seed = 0
    o.no_dual_prox = False
    o.guard = True
    o.n_threads = 1
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
    n_double[0] = 7 * n + 2 * d + b + drift_table_size(T)
    n_intp[0] = 4 * n + b
    n_int64[0] = d if d > 0 else 1


cdef void sorel_problem_init(SorelProblem* P, Py_ssize_t n, Py_ssize_t d, Py_ssize_t b,
                             Py_ssize_t T, const double* y, Loss loss, double lam,
                             const double* sigma, double* w, double* dual, double* dwork,
                             Py_ssize_t* iwork, int64_t* lwork) noexcept nogil:
    P.n = n
    P.d = d
    P.y = y
    P.loss = loss
    P.lam = lam
    P.sigma = sigma
    P.w = w
    P.dual = dual
    P.dual_given = False
    P.l_cur = dwork
    P.l_prev = dwork + n
    P.dbar = dwork + 2 * n
    P.z = dwork + 3 * n
    P.pdw = dwork + 4 * n
    P.s_prev = dwork + 5 * n
    P.dual_old = dwork + 6 * n
    P.gbar = dwork + 7 * n
    P.wk = dwork + 7 * n + d
    P.cb = dwork + 7 * n + 2 * d
    P.tab = dwork + 7 * n + 2 * d + b
    P.perm = iwork
    P.lperm = iwork + n
    P.iw = iwork + 2 * n
    P.order = iwork + 3 * n
    P.batch = iwork + 4 * n
    P.last = lwork
    P.trace = NULL
    P.trace_len = 0
    P.trace_pos = 0


cdef inline double _sum_squares(const double* a, const double* b, double c,
                                Py_ssize_t d) noexcept nogil:
    """sum_i (a_i + c b_i)^2 (b NULL: sum_i a_i^2), compensated; two interleaved sums keep
    the dependency chain short (these run over n_features every epoch)."""
    cdef KahanSum s0 = ksum_new(), s1 = ksum_new()
    cdef Py_ssize_t i = 0
    cdef double r0, r1
    while i + 1 < d:
        r0 = a[i] if b == NULL else a[i] + c * b[i]
        r1 = a[i + 1] if b == NULL else a[i + 1] + c * b[i + 1]
        ksum_add(&s0, r0 * r0)
        ksum_add(&s1, r1 * r1)
        i += 2
    if i < d:
        r0 = a[i] if b == NULL else a[i] + c * b[i]
        ksum_add(&s0, r0 * r0)
    return ksum_value(&s0) + ksum_value(&s1)


cdef double sorel_objective(const floating* data, const index_t* indices, const index_t* indptr,
                            SorelProblem* P, bint warm) noexcept nogil:
    return sorel_objective_threads(data, indices, indptr, P, warm, 1)


cdef double sorel_objective_threads(const floating* data, const index_t* indices,
                                    const index_t* indptr, SorelProblem* P, bint warm,
                                    int threads) noexcept nogil:
    cdef Py_ssize_t i, j, n = P.n
    cdef index_t a, e
    cdef double m
    cdef KahanSum F = ksum_new()
    for i in prange(n, num_threads=threads, schedule="static"):
        a = indptr[i]
        e = indptr[i + 1]
        m = sparse_dot(data + a, indices + a, e - a, P.w)
        P.l_cur[i] = loss_value(&P.loss, m, P.y[i])
        P.dbar[i] = loss_deriv(&P.loss, m, P.y[i])
    argsort_stable(P.l_cur, n, P.lperm, P.iw, warm)
    for j in range(n):
        ksum_add(&F, P.sigma[j] * P.l_cur[P.lperm[j]])
    return ksum_value(&F) + 0.5 * P.lam * _sum_squares(P.w, NULL, 0.0, P.d)


cdef double sorel_risk_at_zero(SorelProblem* P) noexcept nogil:
    """F(0) = R_sigma(phi(0; y)) (uses P.z and P.lperm as work)."""
    cdef Py_ssize_t i, j
    cdef KahanSum F = ksum_new()
    for i in range(P.n):
        P.z[i] = loss_value(&P.loss, 0.0, P.y[i])
    argsort_stable(P.z, P.n, P.lperm, P.iw, False)
    for j in range(P.n):
        ksum_add(&F, P.sigma[j] * P.z[P.lperm[j]])
    return ksum_value(&F)


cdef inline void _vertex(SorelProblem* P) noexcept nogil:
    # lambda = sigma[rank(l)], ranks from P.lperm (ties: the stable order)
    cdef Py_ssize_t j
    for j in range(P.n):
        P.dual[P.lperm[j]] = P.sigma[j]


cdef inline void _epoch_sampling(SorelProblem* P, const SorelOptions* opt) noexcept nogil:
    if opt.sampling == SOREL_PERMUTATION:
        rng_shuffle(&P.rng, P.order, P.n)                 # a fresh permutation per epoch


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


cdef inline bint _guard_update(SorelProblem* P, double* norm_hist, int* n_anti,
                               bint have_prev) noexcept nogil:
    """After the dual step: s = lambda_{k+1} - lambda_k (P.dual_old holds lambda_k). Returns
    True when the step has turned unstable (three anti-aligned pairs in a row, and the
    alternation not decaying: ||s_k|| >= 0.9 ||s_{k-3}||). P.s_prev becomes s; norm_hist
    keeps ||s_{k-3}||, ..., ||s_k||."""
    cdef Py_ssize_t i, n = P.n
    cdef double si, dot = 0.0, ss = 0.0, pp = 0.0
    for i in range(n):
        si = P.dual[i] - P.dual_old[i]
        dot += si * P.s_prev[i]
        ss += si * si
        pp += P.s_prev[i] * P.s_prev[i]
        P.s_prev[i] = si
    norm_hist[0] = norm_hist[1]
    norm_hist[1] = norm_hist[2]
    norm_hist[2] = norm_hist[3]
    norm_hist[3] = sqrt(ss)
    if have_prev and ss > 0.0 and pp > 0.0 and dot < -0.5 * sqrt(ss * pp):
        n_anti[0] += 1
    else:
        n_anti[0] = 0
    return n_anti[0] >= 3 and norm_hist[3] >= 0.9 * norm_hist[0]


cdef void sorel_anchor(const floating* data, const index_t* indices, const index_t* indptr,
                       SorelProblem* P) noexcept nogil:
    """gbar = X^T (dual * dbar)."""
    _anchor_rows(data, indices, indptr, P, P.gbar, 0, P.n)


cdef void sorel_anchor_blocks(const floating* data, const index_t* indices,
                              const index_t* indptr, SorelProblem* P,
                              const Blocks* team) noexcept nogil:
    # block b >= 1 into its own vector, added into gbar by ranges of features in block order
    cdef Py_ssize_t b
    for b in prange(team.size, num_threads=team.size, schedule="static", chunksize=1):
        _anchor_rows(data, indices, indptr, P, P.gbar if b == 0 else blocks_own(team, b),
                     team.rows[b], team.rows[b + 1])
    blocks_add_copies(team, P.gbar, 1, 0)


cdef void _anchor_rows(const floating* data, const index_t* indices, const index_t* indptr,
                       SorelProblem* P, double* gbar, Py_ssize_t lo,
                       Py_ssize_t hi) noexcept nogil:
    """gbar = sum over rows lo .. hi - 1 of dual_i dbar_i x_i (zeroed first)."""
    cdef Py_ssize_t i
    cdef index_t a0, a1
    cdef double c
    memset(gbar, 0, P.d * sizeof(double))
    for i in range(lo, hi):
        c = P.dual[i] * P.dbar[i]
        if c != 0.0:
            a0 = indptr[i]
            a1 = indptr[i + 1]
            sparse_axpy(c, data + a0, indices + a0, a1 - a0, gbar)


cdef double sorel_risk_gap(SorelProblem* P) noexcept nogil:
    """R_sigma(l) - P.dual^T l >= 0, from P.l_cur and P.lperm (the sorted losses)."""
    cdef Py_ssize_t j, p
    cdef double r
    cdef KahanSum a = ksum_new()
    # sum_j (sigma_j - lambda_{p_j}) l_{p_j}: one sum of small terms
    for j in range(P.n):
        p = P.lperm[j]
        ksum_add(&a, (P.sigma[j] - P.dual[p]) * P.l_cur[p])
    # >= 0 for lambda in Pi_sigma; rounding may leave a few ulp below
    r = ksum_value(&a)
    return r if r > 0.0 else 0.0


cdef double sorel_gap(SorelProblem* P, const double* u) noexcept nogil:
    """G(w, P.dual) = [R_sigma(l) - dual^T l] + ||u + lam w||^2 / (2 lam) with
    u = X^T (dual * phi'(Xw)), from P.l_cur and P.lperm (the sorted losses at w)."""
    return sorel_risk_gap(P) + _sum_squares(u, P.w, P.lam, P.d) / (2.0 * P.lam)


cdef inline void _batch_catch_up(const index_t* indices, const index_t* indptr,
                                 SorelProblem* P, DriftJIT* st, int64_t t, Py_ssize_t b,
                                 Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """Bring the batch's features in [lo, hi) to step t."""
    cdef Py_ssize_t r, i, q, j
    for r in range(b):
        i = P.batch[r]
        for q in range(indptr[i], indptr[i + 1]):
            j = indices[q]
            if lo <= j < hi:
                drift_catch_up(st, j, t)


cdef inline void _batch_margin(const floating* data, const index_t* indices,
                               const index_t* indptr, SorelProblem* P, Py_ssize_t r,
                               double scale) noexcept nogil:
    """The batch's row r: its coefficient c_r from its margin at the current w."""
    cdef Py_ssize_t i = P.batch[r]
    cdef index_t a0 = indptr[i], a1 = indptr[i + 1]
    cdef double m = sparse_dot(data + a0, indices + a0, a1 - a0, P.w)
    P.cb[r] = scale * P.dual[i] * (loss_deriv(&P.loss, m, P.y[i]) - P.dbar[i])


cdef inline void _batch_update(const floating* data, const index_t* indices,
                               const index_t* indptr, SorelProblem* P, DriftJIT* st,
                               int64_t t, Py_ssize_t b, double sc, Py_ssize_t lo,
                               Py_ssize_t hi) noexcept nogil:
    """Step t on the batch's features in [lo, hi), rows in the batch's order."""
    cdef Py_ssize_t r, i, q, j
    cdef double coef, g
    for r in range(b):
        i = P.batch[r]
        coef = -sc * P.cb[r]
        for q in range(indptr[i], indptr[i + 1]):
            j = indices[q]
            if lo <= j < hi:
                g = coef * data[q]
                if P.last[j] == t:
                    drift_step(st, j, t, g)            # the dense part once per step
                else:
                    P.w[j] += g                        # j already stepped by this batch


cdef void _batch_in_threads(const floating* data, const index_t* indices,
                            const index_t* indptr, SorelProblem* P, DriftJIT st, int64_t t,
                            Py_ssize_t b, double scale, double sc, const Blocks* team,
                            Py_ssize_t tb) noexcept nogil:
    """The batch's features caught up, its margins, its step, in tb threads: the first and
    the last by the team's ranges of features (each feature's updates in the batch's order),
    the margins by rows; one thread's bits for any team. ``st`` is a copy (its state is
    behind its pointers): the run's own never has its address taken by a parallel region,
    which cost the serial steps 2-5%."""
    cdef Py_ssize_t blk, r
    for blk in prange(tb, num_threads=tb, schedule="static", chunksize=1):
        _batch_catch_up(indices, indptr, P, &st, t, b, team.cols[blk], team.cols[blk + 1])
    for r in prange(b, num_threads=tb, schedule="static"):
        _batch_margin(data, indices, indptr, P, r, scale)
    for blk in prange(tb, num_threads=tb, schedule="static", chunksize=1):
        _batch_update(data, indices, indptr, P, &st, t, b, sc, team.cols[blk],
                      team.cols[blk + 1])


cdef int sorel_run(const floating* data, const index_t* indices, const index_t* indptr,
                   SorelProblem* P, const SorelOptions* opt, SorelResult* res,
                   epoch_hook hook, void* ctx) noexcept nogil:
    """Epochs until gap_certifies (status.pxd: G <= tol (F - G), or the rounding floor of
    F(0)), max_epochs or a stop from the hook (module docstring)."""
    cdef Py_ssize_t n = P.n, d = P.d, b = opt.batch_size
    cdef Py_ssize_t T = sorel_epoch_steps(opt, n)
    cdef Py_ssize_t i, j, k, r, q, t, pos
    cdef index_t a0, a1
    cdef double F, theta, eta, inv_tau, al = opt.step, lam = P.lam, sc, c1, c2, a, log_a
    cdef double m, coef, g, scale = <double>n / <double>b, floor, gap = NAN, gap0 = INFINITY
    cdef double per_epoch = 1.0 + <double>T * <double>b / <double>n
    cdef double values[SOREL_HOOK_VALUES]
    cdef DriftJIT st
    cdef double c_eff = opt.dual_step_scale
    cdef double norm_hist[4]
    cdef int n_anti = 0, stop = 0
    cdef bint guard = opt.guard and not opt.no_dual_prox
    cdef Blocks team
    cdef Py_ssize_t tb
    cdef BatchClock clock
    cdef double batch_nnz
    cdef bint in_threads
    res.n_epochs = 0
    if not blocks_init(&team, indptr, n, d, opt.n_threads, BLOCKS_MIN_NNZ, d, 0):
        res.primal = res.dual = res.gap = res.f0 = NAN
        res.status = STATUS_NO_MEMORY
        return res.status
    # a batch of batch_min_nnz() nonzeros or more may step in the team's threads (the clock)
    tb = team.size if <double>b * <double>indptr[n] / <double>n >= batch_min_nnz() else 1
    norm_hist[0] = norm_hist[1] = norm_hist[2] = norm_hist[3] = 0.0
    memset(P.s_prev, 0, n * sizeof(double))
    res.status = STATUS_MAX_EPOCHS
    res.n_epochs = 0
    res.dual = NAN
    res.gap = NAN
    rng_seed(&P.rng, <uint64_t>opt.seed)
    for i in range(n):
        P.order[i] = i
    res.f0 = sorel_risk_at_zero(P)
    # tol = 0 runs the whole budget (gap_certifies never holds for it)
    floor = gap_floor(res.f0)
    F = sorel_objective_threads(data, indices, indptr, P, False, team.size)
    if P.dual_given:                                      # lambda_0: the given lambda ...
        memcpy(P.z, P.dual, n * sizeof(double))
        project_permutahedron(P.z, P.sigma, P.dual, n, P.perm, P.iw, P.pdw, False)
    else:                                                 # ... or the vertex (line 1)
        _vertex(P)
    memcpy(P.l_prev, P.l_cur, n * sizeof(double))         # l(w_{-1}) = l(w_0)
    k = 0
    while True:
        # P.w = w_k; l_cur, dbar, lperm: the losses at w_k; dual = lambda_k
        if not isfinite(F):
            values[0], values[1], values[2] = F, NAN, NAN
            values[3], values[4] = k * per_epoch, NAN
            stop = hook(ctx, k, values) if hook != NULL else 0
            res.status = stop if stop != 0 else STATUS_DIVERGED
            break
        if k == 0 and P.dual_given:
            # a warm start's own certificate first: G(w_0, lambda_0)
            memcpy(P.dual_old, P.dual, n * sizeof(double))
            sorel_anchor_blocks(data, indices, indptr, P, &team)
            gap0 = sorel_gap(P, P.gbar)
        theta = <double>k / <double>(k + 1)
        if opt.no_dual_prox:
            _vertex(P)                                    # eta = infinity
            eta = HUGE_VAL
            inv_tau = 0.0
        else:
            eta = c_eff * <double>(k + 1) / <double>n
            if opt.dual_step_max > 0.0 and eta > opt.dual_step_max:
                eta = opt.dual_step_max
            if guard:
                memcpy(P.dual_old, P.dual, n * sizeof(double))
            for i in range(n):
                P.z[i] = P.dual[i] + eta * ((1.0 + theta) * P.l_cur[i] - theta * P.l_prev[i])
            project_permutahedron(P.z, P.sigma, P.dual, n, P.perm, P.iw, P.pdw, k > 0)
            if guard and _guard_update(P, norm_hist, &n_anti, k > 0):
                c_eff *= 0.5                              # past the stability limit: back off
                n_anti = 0
            inv_tau = <double>(k + 1) / (opt.prox_scale * <double>n)
        # the anchor gbar = X^T (lambda_{k+1} * phi'(X w_k)), and the certificate of w_k
        sorel_anchor_blocks(data, indices, indptr, P, &team)
        gap = sorel_gap(P, P.gbar)
        if k == 0 and P.dual_given and gap0 < gap:
            gap = gap0                                    # P.dual becomes lambda_0 if k ends here
        values[0], values[1], values[2] = F, F - gap, gap
        values[3], values[4] = k * per_epoch, eta
        res.status = report_epoch(hook, ctx, k, values,
                                  STATUS_CONVERGED if gap_certifies(gap, F - gap, opt.tol, floor)
                                  else STATUS_MAX_EPOCHS)
        if res.status != STATUS_MAX_EPOCHS or k >= opt.max_epochs:
            break
        # T steps on the subproblem around the anchor w_k
        memcpy(P.l_prev, P.l_cur, n * sizeof(double))
        memcpy(P.wk, P.w, d * sizeof(double))
        if opt.form == SOREL_GRADIENT and al * (lam + inv_tau) < 1.0:
            # w <- (1 - al (lam + 1/tau)) w - al gbar + (al/tau) w_k - al sum c_i x_i
            a = 1.0 - al * (lam + inv_tau)
            log_a = log1p(-al * (lam + inv_tau))
            c1 = -al
            c2 = al * inv_tau
            sc = al
        else:
            # w <- a (w - al gbar + (al/tau) w_k - al sum c_i x_i),  a = 1/(1 + al lam + al/tau)
            a = 1.0 / (1.0 + al * (lam + inv_tau))
            log_a = -log1p(al * (lam + inv_tau))
            c1 = -a * al
            c2 = a * al * inv_tau
            sc = a * al
        drift_init(&st, P.w, P.last, NULL, d, P.tab, T, a, log_a, P.gbar, c1, P.wk, c2, 0)
        _epoch_sampling(P, opt)
        batch_clock_epoch(&clock)
        pos = 0
        for t in range(T):
            if (t & POLL_MASK) == POLL_MASK and hook != NULL:
                stop = hook(ctx, -1, NULL)                # Ctrl-C during a long epoch
                if stop != 0:
                    break
            _draw_batch(P, opt, &pos)
            in_threads = tb > 1 and batch_clock_threads(&clock)
            if not in_threads:
                # written out here: through the helpers above the serial steps took 10%
                # longer (news20, batch 1 and 64)
                for r in range(b):
                    i = P.batch[r]
                    for q in range(indptr[i], indptr[i + 1]):
                        drift_catch_up(&st, indices[q], t)
                for r in range(b):                        # all margins at the same w
                    i = P.batch[r]
                    a0 = indptr[i]
                    a1 = indptr[i + 1]
                    m = sparse_dot(data + a0, indices + a0, a1 - a0, P.w)
                    P.cb[r] = scale * P.dual[i] * (loss_deriv(&P.loss, m, P.y[i]) - P.dbar[i])
                for r in range(b):
                    i = P.batch[r]
                    coef = -sc * P.cb[r]
                    for q in range(indptr[i], indptr[i + 1]):
                        j = indices[q]
                        g = coef * data[q]
                        if P.last[j] == t:
                            drift_step(&st, j, t, g)       # the dense part once per step
                        else:
                            P.w[j] += g                    # j already stepped by this batch
            else:
                _batch_in_threads(data, indices, indptr, P, st, t, b, scale, sc, &team, tb)
            if tb > 1:
                batch_nnz = 0.0
                if clock.probing:                     # the clock weighs its probes by nonzeros
                    for r in range(b):
                        batch_nnz += <double>(indptr[P.batch[r] + 1] - indptr[P.batch[r]])
                batch_clock_done(&clock, in_threads, batch_nnz)
        if stop != 0:                                     # back to the reported w_k
            memcpy(P.w, P.wk, d * sizeof(double))
            res.status = stop
            break
        drift_flush(&st, T)
        F = sorel_objective_threads(data, indices, indptr, P, True, team.size)
        k += 1
    if k == 0 and P.dual_given and gap0 <= gap:         # the warm start's lambda_0 certified
        memcpy(P.dual, P.dual_old, n * sizeof(double))
    res.n_epochs = k
    res.primal = F
    res.gap = gap
    res.dual = F - gap
    blocks_free(&team)
    return res.status


# ---------------------------------------------------------------------------------------
# the engine's Python entry (train_sorel, train_lsvrg): history, verbose lines, callback
# and Ctrl-C through the monitor ``mon`` (dualsolve._monitor.EpochMonitor)


def solve(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
          Py_ssize_t n_features, const double[::1] y, str loss, double loss_param,
          const double[::1] sigma, double lam, double[::1] w, double[::1] dual,
          bint dual_given, double step, double dual_step_scale, double prox_scale,
          double dual_step_max, int form, int sampling, Py_ssize_t batch_size,
          Py_ssize_t steps, Py_ssize_t max_epochs, double tol, unsigned long long seed,
          bint no_dual_prox, bint guard, mon, trace=None, int n_threads=1):
    """Run sorel_run on validated arrays (w: w_0 in, the iterate out; dual: lambda_0 in
    when ``dual_given``, the certificate's lambda out), reporting every epoch to ``mon``
    (which takes the first mon.n_values <= SOREL_HOOK_VALUES values). trace: an intp array
    receiving the sampled rows in order. Returns (status, n_epochs, primal, dual, gap, F(0))."""
    cdef Py_ssize_t n = dual.shape[0], d = n_features
    if (indptr.shape[0] != n + 1 or y.shape[0] != n or sigma.shape[0] != n
            or w.shape[0] != d):
        raise ValueError("inconsistent shapes")
    if not 1 <= batch_size <= n:
        raise ValueError(f"batch_size must lie in [1, n = {n}]; got {batch_size}")
    if mon.n_values > SOREL_HOOK_VALUES:
        raise ValueError(f"the monitor expects {mon.n_values} values; sorel_run reports "
                         f"{SOREL_HOOK_VALUES}")
    cdef SorelOptions opt = sorel_default_options()
    opt.step = step
    opt.dual_step_scale = dual_step_scale
    opt.prox_scale = prox_scale
    opt.dual_step_max = dual_step_max
    opt.form = form
    opt.sampling = sampling
    opt.batch_size = batch_size
    opt.steps = steps
    opt.max_epochs = max_epochs
    opt.tol = tol
    opt.seed = seed
    opt.no_dual_prox = no_dual_prox
    opt.guard = guard
    opt.n_threads = n_threads if n_threads > 1 else 1
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
    sorel_problem_init(&P, n, d, batch_size, T, &y[0], L, lam, &sigma[0], &wv[0], &dual[0],
                       &dwork[0], &iwork[0], &lwork[0])
    P.dual_given = dual_given
    P.trace = intp_out(trace, &P.trace_len)
    mon.set_coef(np.asarray(wv)[:d])
    with nogil:
        sorel_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, python_hook, <void*>mon)
    return res.status, res.n_epochs, res.primal, res.dual, res.gap, res.f0


def objective(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
              Py_ssize_t n_features, const double[::1] y, str loss, const double[::1] sigma,
              double lam, double[::1] w, double loss_param=0.0):
    """F(w) through sorel_objective (for tests and the Python API)."""
    cdef Py_ssize_t n = y.shape[0], d = n_features, nd, ni, nl
    sorel_work_sizes(n, d, 1, 1, &nd, &ni, &nl)
    cdef double[::1] dwork = np.zeros(nd)
    cdef Py_ssize_t[::1] iwork = np.zeros(ni, dtype=np.intp)
    cdef int64_t[::1] lwork = np.zeros(nl, dtype=np.int64)
    cdef double[::1] dual = np.zeros(n)
    cdef double[::1] wv = w if d > 0 else np.zeros(1)
    cdef SorelProblem P
    sorel_problem_init(&P, n, d, 1, 1, &y[0], make_loss(loss, loss_param), lam, &sigma[0],
                       &wv[0], &dual[0], &dwork[0], &iwork[0], &lwork[0])
    return sorel_objective(&data[0], &indices[0], &indptr[0], &P, False)
