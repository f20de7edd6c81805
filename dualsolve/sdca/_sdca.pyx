# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Linear SDCA over CSR rows: exact dual coordinate maximisation, liblinear's loop shape.

Coordinates are CSR rows by default. The mixup family adds three generalisations, all
optional (NULL pointers): coordinates that map to points (``point``; the decomposed dual
has up to two coordinates per point), loss weights (``weight``), and points beyond the CSR
rows that are mixes (1 - r) x_a + r x_b of two rows, never materialised (``mix_*``).

Per epoch: a random permutation of the active rows; for row i, z = x_i.w (sparse dot), the
exact coordinate step of the loss table, w += delta/(lam n) x_i (sparse axpy); rows stuck at
a bound of the dual domain are shrunk away (liblinear's projected-gradient rule). After the
epoch one pass over all rows recomputes every score from scratch and gives the exact duality
gap; it also re-activates shrunk rows that have become violators, so no unshrink-and-retry
pass is needed. When the gap certifies (status.pxd's gap_certifies: gap <= tol * D), w is
recomputed from alpha (removing
incremental rounding drift) and the gap re-checked before stopping: the final gap is a
certificate.
"""
from cython.parallel cimport parallel, threadid
from libc.math cimport INFINITY, NAN
from libc.stdlib cimport free, malloc
from libc.string cimport memset

import numpy as np


from dualsolve._core.hooks cimport python_hook
from dualsolve._core.ksum cimport KahanSum, ksum_new, ksum_add, ksum_value
from dualsolve._core.status cimport (STATUS_CONVERGED, STATUS_MAX_EPOCHS, report_epoch,
                                     gap_certifies, gap_floor)
from dualsolve._core.csr cimport (floating, index_t, sparse_dot, sparse_axpy, sparse_sqnorm,
                                  prefetch_row)
from dualsolve._core.losses cimport (Loss, LOSS_HINGE, LOSS_SMOOTH_HINGE, LOSS_SQUARED_HINGE,
                                     loss_value, loss_conj, loss_dual_step, loss_dual_bounds,
                                     loss_conj_deriv_binary, loss_conj_quadratic, make_loss)
from dualsolve._core.rng cimport rng_seed, rng_below, rng_shuffle
from dualsolve._core.buffers cimport double_ptr, intp_ptr
from dualsolve.sdca.steps cimport StepParams, STEP_EXACT, coordinate_step, step_params_init
from dualsolve.sdca.schedule cimport (CheckSchedule, schedule_init, schedule_check_now,
                                      schedule_checked, schedule_target)



cdef SdcaOptions sdca_default_options() noexcept nogil:
    cdef SdcaOptions o
    o.tol = 1e-6
    o.max_epochs = 5000
    o.check_every = 0
    o.shrinking = 1
    o.sampling = SAMPLE_PERMUTATION
    o.seed = 0
    o.check_start = 1
    o.n_threads = 1
    o.relaxation = 1.0
    o.relax_after = 0
    return o


cdef void sdca_problem_init(SdcaProblem* P, Py_ssize_t n, Py_ssize_t d, const double* y,
                            Loss loss, double lam, double bias, double* w, double* alpha,
                            double* sqnorm, double* z, Py_ssize_t* index) noexcept nogil:
    P.n = n
    P.n_points = n
    P.n_rows = n
    P.point = NULL
    P.weight = NULL
    P.mix_a = NULL
    P.mix_b = NULL
    P.mix_r = NULL
    P.d = d
    P.y = y
    P.loss = loss
    step_params_init(&P.step, STEP_EXACT, 0.0, 0.0, 1, 0, NULL, NULL)
    P.lam = lam
    P.bias = bias
    P.offset = 0.0
    P.w = w
    P.alpha = alpha
    P.sqnorm = sqnorm
    P.sqnorm_given = 0
    P.z = z
    P.index = index


cdef inline Py_ssize_t _point(const SdcaProblem* P, Py_ssize_t j) noexcept nogil:
    return P.point[j] if P.point != NULL else j


cdef inline double _weight(const SdcaProblem* P, Py_ssize_t j) noexcept nogil:
    return P.weight[j] if P.weight != NULL else 1.0


cdef inline double _fenchel_young(const SdcaProblem* P, double z, double a, double y,
                                  double c) noexcept nogil:
    """F = c (phi(z) + h(a/c) + (a/c) z) >= 0: the coordinate's share of the duality gap."""
    if c == 1.0:
        return loss_value(&P.loss, z, y) + loss_conj(&P.loss, a, y) + a * z
    if c == 0.0:                # a row of weight 0 is out of the problem (its a stays 0)
        return 0.0
    return c * (loss_value(&P.loss, z, y) + loss_conj(&P.loss, a / c, y)) + a * z


cdef inline double _row_dot(const floating* data, const index_t* indices,
                            const index_t* indptr, const double* w, Py_ssize_t i) noexcept nogil:
    cdef Py_ssize_t start = indptr[i]
    return sparse_dot(data + start, indices + start, indptr[i + 1] - start, w)


cdef inline void _row_axpy(const floating* data, const index_t* indices,
                           const index_t* indptr, double* w, Py_ssize_t i, double c) noexcept nogil:
    cdef Py_ssize_t start = indptr[i]
    sparse_axpy(c, data + start, indices + start, indptr[i + 1] - start, w)


cdef inline double _point_score(const floating* data, const index_t* indices,
                                const index_t* indptr, const SdcaProblem* P,
                                Py_ssize_t p) noexcept nogil:
    """x_p.w (+ bias w[d]) for a CSR row or a mixed point."""
    cdef double z, r
    cdef Py_ssize_t k
    if p < P.n_rows:
        z = _row_dot(data, indices, indptr, P.w, p)
    else:
        k = p - P.n_rows
        r = P.mix_r[k]
        z = ((1.0 - r) * _row_dot(data, indices, indptr, P.w, P.mix_a[k])
             + r * _row_dot(data, indices, indptr, P.w, P.mix_b[k]))
    if P.bias != 0.0:
        z += P.bias * P.w[P.d]
    return z + P.offset


cdef inline void _point_axpy(const floating* data, const index_t* indices,
                             const index_t* indptr, SdcaProblem* P, Py_ssize_t p,
                             double c) noexcept nogil:
    """w += c x_p (+ the bias feature)."""
    cdef double r
    cdef Py_ssize_t k
    if p < P.n_rows:
        _row_axpy(data, indices, indptr, P.w, p, c)
    else:
        k = p - P.n_rows
        r = P.mix_r[k]
        _row_axpy(data, indices, indptr, P.w, P.mix_a[k], (1.0 - r) * c)
        _row_axpy(data, indices, indptr, P.w, P.mix_b[k], r * c)
    if P.bias != 0.0:
        P.w[P.d] += c * P.bias


cdef void _resync(const floating* data, const index_t* indices, const index_t* indptr,
                  SdcaProblem* P) noexcept nogil:
    """w = X^T alpha / (lam n), from scratch."""
    cdef Py_ssize_t j, dw = P.d + (1 if P.bias != 0.0 else 0)
    cdef double scale = 1.0 / (P.lam * P.n)
    memset(P.w, 0, dw * sizeof(double))
    for j in range(P.n):
        if P.alpha[j] != 0.0:
            _point_axpy(data, indices, indptr, P, _point(P, j), P.alpha[j] * scale)


cdef inline double _conj_term(const SdcaProblem* P, Py_ssize_t i) noexcept nogil:
    """Coordinate i's share of -n D(alpha) besides the norm: c h(a/c) (+ a b, the fixed
    intercept's share)."""
    cdef double c = _weight(P, i), t = 0.0
    if c == 1.0:
        t = loss_conj(&P.loss, P.alpha[i], P.y[i])
    elif c != 0.0:
        t = c * loss_conj(&P.loss, P.alpha[i] / c, P.y[i])
    return t + P.alpha[i] * P.offset


cdef inline void _check_rows(const floating* data, const index_t* indices,
                             const index_t* indptr, SdcaProblem* P, Py_ssize_t lo,
                             Py_ssize_t hi, KahanSum* ls, KahanSum* cs) noexcept nogil:
    """Scores of rows lo..hi-1 into z, their losses and conjugates into ls and cs."""
    cdef Py_ssize_t i
    cdef double zi, c
    for i in range(lo, hi):
        zi = _point_score(data, indices, indptr, P, _point(P, i))
        P.z[i] = zi
        c = _weight(P, i)
        if c == 1.0:
            ksum_add(ls, loss_value(&P.loss, zi, P.y[i]))
        elif c != 0.0:
            ksum_add(ls, c * loss_value(&P.loss, zi, P.y[i]))
        ksum_add(cs, _conj_term(P, i))


cdef double _dual_value(const SdcaProblem* P) noexcept nogil:
    """D(alpha) without touching X (w = w(alpha) must hold): the conjugates and ||w||^2."""
    cdef Py_ssize_t i, dw = P.d + (1 if P.bias != 0.0 else 0)
    cdef KahanSum cs = ksum_new(), ws = ksum_new()
    for i in range(P.n):
        ksum_add(&cs, _conj_term(P, i))
    for i in range(dw):
        ksum_add(&ws, P.w[i] * P.w[i])
    return -ksum_value(&cs) / P.n - 0.5 * P.lam * ksum_value(&ws)


cdef void _check(const floating* data, const index_t* indices, const index_t* indptr,
                 SdcaProblem* P, double* primal, double* dual, double* gap,
                 int threads) noexcept nogil:
    """Exact primal, dual and gap with every score recomputed; re-activate shrunk violators.
    With threads, each sums a slice of the rows and the slices' sums are added in order
    (the same result for the same number of threads)."""
    cdef Py_ssize_t i, pos, t, dw = P.d + (1 if P.bias != 0.0 else 0)
    cdef double loss_sum, conj_sum, wn, lo, hi, G, a
    cdef KahanSum ls = ksum_new(), cs = ksum_new(), ws = ksum_new()
    cdef KahanSum* parts = NULL
    cdef int tid
    if threads > 1:
        parts = <KahanSum*>malloc(2 * threads * sizeof(KahanSum))
    if parts == NULL:
        _check_rows(data, indices, indptr, P, 0, P.n, &ls, &cs)
    else:
        with parallel(num_threads=threads):
            tid = threadid()
            parts[2 * tid] = ksum_new()
            parts[2 * tid + 1] = ksum_new()
            _check_rows(data, indices, indptr, P, P.n * tid // threads,
                        P.n * (tid + 1) // threads, &parts[2 * tid], &parts[2 * tid + 1])
        for t in range(threads):
            ksum_add(&ls, ksum_value(&parts[2 * t]))
            ksum_add(&cs, ksum_value(&parts[2 * t + 1]))
        free(parts)
    for i in range(dw):
        ksum_add(&ws, P.w[i] * P.w[i])
    loss_sum, conj_sum, wn = ksum_value(&ls), ksum_value(&cs), ksum_value(&ws)
    primal[0] = loss_sum / P.n + 0.5 * P.lam * wn
    dual[0] = -conj_sum / P.n - 0.5 * P.lam * wn
    gap[0] = (loss_sum + conj_sum) / P.n + P.lam * wn
    pos = P.n_active
    P.shrunk_gap = 0.0
    while pos < P.n:
        i = P.index[pos]
        a = P.alpha[i]
        loss_dual_bounds(&P.loss, P.y[i], &lo, &hi)
        G = P.z[i] + loss_conj_deriv_binary(&P.loss, a, P.y[i])
        if (a <= lo and G < 0.0) or (a >= hi and G > 0.0):
            P.index[pos] = P.index[P.n_active]
            P.index[P.n_active] = i
            P.n_active += 1
        else:
            P.shrunk_gap += _fenchel_young(P, P.z[i], a, P.y[i], 1.0)
        pos += 1


cdef void _zero_start(SdcaProblem* P, double* primal, double* dual, double* gap) noexcept nogil:
    """The check at alpha = 0 without touching X: w = 0, so every score is the offset."""
    cdef Py_ssize_t i, dw = P.d + (1 if P.bias != 0.0 else 0)
    cdef double loss_sum = 0.0, conj_sum = 0.0
    memset(P.w, 0, dw * sizeof(double))
    for i in range(P.n):
        P.z[i] = P.offset
        loss_sum += _weight(P, i) * loss_value(&P.loss, P.offset, P.y[i])
        conj_sum += _weight(P, i) * loss_conj(&P.loss, 0.0, P.y[i])
    primal[0] = loss_sum / P.n
    dual[0] = -conj_sum / P.n
    gap[0] = (loss_sum + conj_sum) / P.n


cdef inline double _relaxed(const Loss* loss, double y, double c, double a0, double a,
                            double r) noexcept nogil:
    """a0 + r (a - a0), clipped to the domain c [lo, hi] of a weight-c coordinate."""
    cdef double lo, hi
    if c <= 0.0:
        return a
    loss_dual_bounds(loss, y, &lo, &hi)
    a = a0 + r * (a - a0)
    if a < c * lo:
        return c * lo
    if a > c * hi:
        return c * hi
    return a


cdef void _epoch(const floating* data, const index_t* indices, const index_t* indptr,
                 SdcaProblem* P, const SdcaOptions* opt, double relax) noexcept nogil:
    """One pass of coordinate steps over the active coordinates; ``relax`` != 1: the
    exact steps over-relaxed by that factor (SdcaOptions.relaxation)."""
    # struct fields in locals: the compiler cannot keep them in registers across the
    # stores into w otherwise
    cdef double* w = P.w
    cdef double* alpha = P.alpha
    cdef const double* y = P.y
    cdef const double* sqnorm = P.sqnorm
    cdef Py_ssize_t* index = P.index
    cdef const Py_ssize_t* point = P.point
    cdef const double* weight = P.weight
    cdef StepParams step_params = P.step
    cdef Loss loss = P.loss
    cdef bint exact_plain = P.step.rule == STEP_EXACT and weight == NULL
    cdef Py_ssize_t n_active = P.n_active, d = P.d, n_rows = P.n_rows
    cdef double bias = P.bias, offset = P.offset, scale = 1.0 / (P.lam * P.n)
    cdef double pg_max_old = P.pg_max_old, pg_min_old = P.pg_min_old
    cdef bint permute = opt.sampling == SAMPLE_PERMUTATION
    # shrinking needs a bounded dual domain and no loss weights; labels are checked per row
    cdef bint shrink = (opt.shrinking != 0 and P.weight == NULL
                        and (P.loss.kind == LOSS_HINGE or P.loss.kind == LOSS_SMOOTH_HINGE
                             or P.loss.kind == LOSS_SQUARED_HINGE))
    cdef bint remove
    cdef bint estimate = opt.check_every != 1
    # the estimate samples every stride-th visit (a random subset, the order being random):
    # a few thousand rows estimate the mean gap to a few percent, at a fraction of the cost
    cdef Py_ssize_t stride = 1 + n_active // 4096, visits = 0, sampled = 0
    cdef double pass_gap = 0.0, cost = 0.0
    cdef Py_ssize_t k = 0, pos, i, p, start = 0, nnz = 0, step = 0, nxt
    cdef Py_ssize_t n_steps = n_active
    cdef double z, a0, a, delta, lo, hi, G, pg, c
    cdef double pg_max = -INFINITY, pg_min = INFINITY
    if permute:
        rng_shuffle(&P.rng, index, n_active)
    while True:
        if permute:
            if k >= n_active:
                break
            pos = k
            if pos + 2 < n_active:
                nxt = index[pos + 2] if point == NULL else point[index[pos + 2]]
                if nxt < n_rows:
                    prefetch_row(data + indptr[nxt], indices + indptr[nxt],
                                 indptr[nxt + 1] - indptr[nxt])
        else:
            if step >= n_steps or n_active == 0:
                break
            pos = <Py_ssize_t>rng_below(&P.rng, <unsigned long long>n_active)
            step += 1
        i = index[pos]
        p = i if point == NULL else point[i]
        if p < n_rows:
            start = indptr[p]
            nnz = indptr[p + 1] - start
            z = sparse_dot(data + start, indices + start, nnz, w) + offset
            if bias != 0.0:
                z += bias * w[d]
            cost += nnz + 16
        else:
            z = _point_score(data, indices, indptr, P, p)
            cost += 2 * (indptr[n_rows] / n_rows) + 32
        a0 = alpha[i]
        c = 1.0 if weight == NULL else weight[i]
        if shrink and (y[i] == 1.0 or y[i] == -1.0):
            loss_dual_bounds(&loss, y[i], &lo, &hi)
            G = z + loss_conj_deriv_binary(&loss, a0, y[i])
            pg = G
            remove = False
            if a0 <= lo:
                remove = G > pg_max_old
                if pg > 0.0:
                    pg = 0.0
            elif a0 >= hi:
                remove = G < pg_min_old
                if pg < 0.0:
                    pg = 0.0
            if remove:
                # swap to the end of the active set; the position is visited again
                n_active -= 1
                index[pos] = index[n_active]
                index[n_active] = i
                if estimate:
                    P.shrunk_gap += _fenchel_young(P, z, a0, y[i], c)
                continue
            if pg > pg_max:
                pg_max = pg
            if pg < pg_min:
                pg_min = pg
        if estimate:
            if visits % stride == 0:
                pass_gap += _fenchel_young(P, z, a0, y[i], c)
                sampled += 1
            visits += 1
        if exact_plain:
            a = loss_dual_step(&loss, y[i], z, a0, sqnorm[p] * scale)
        else:
            a = coordinate_step(&loss, y[i], z, a0, sqnorm[p] * scale, c, &step_params, i)
        if relax != 1.0:
            a = _relaxed(&loss, y[i], c, a0, a, relax)
        delta = a - a0
        if delta != 0.0:
            alpha[i] = a
            if p < n_rows:
                sparse_axpy(delta * scale, data + start, indices + start, nnz, w)
                if bias != 0.0:
                    w[d] += delta * scale * bias
            else:
                _point_axpy(data, indices, indptr, P, p, delta * scale)
        k += 1
    P.pass_gap = pass_gap * visits / sampled if sampled > 0 else 0.0
    P.pass_cost = cost
    P.n_active = n_active
    # liblinear's thresholds: shrink next epoch only against this epoch's extreme violations
    P.pg_max_old = pg_max if pg_max > 0.0 else INFINITY
    P.pg_min_old = pg_min if pg_min < 0.0 else -INFINITY


cdef int sdca_run(const floating* data, const index_t* indices, const index_t* indptr,
                  SdcaProblem* P, const SdcaOptions* opt, SdcaResult* res,
                  epoch_hook hook, void* ctx) noexcept nogil:
    """Solve to ``gap_certifies`` (status.pxd: gap <= tol * D, or the rounding floor of
    P(0); never for tol = 0) or ``max_epochs``; returns ``res.status``."""
    cdef Py_ssize_t i, epoch, start
    cdef double primal, dual, gap, p0 = 0.0, target, floor, estimate, predicted = NAN
    # work model (deterministic: the schedule must not depend on timing, since with
    # shrinking it changes the iterates): a row costs its nonzeros plus a constant
    cdef CheckSchedule sched
    schedule_init(&sched, opt.check_every,
                  <double>indptr[P.n_rows] * P.n / P.n_rows + 16.0 * P.n)
    cdef bint checked, certify, cold = True
    cdef double values[SDCA_HOOK_VALUES]
    cdef int threads = opt.n_threads if opt.n_threads > 1 else 1
    for i in range(P.n):
        if P.alpha[i] != 0.0:
            cold = False
    for i in range(P.n_points):
        if not P.sqnorm_given:       # (mixed points need their norms given)
            start = indptr[i]
            P.sqnorm[i] = sparse_sqnorm(data + start, indptr[i + 1] - start)
        P.sqnorm[i] += P.bias * P.bias
    for i in range(P.n):
        P.index[i] = i
        p0 += _weight(P, i) * loss_value(&P.loss, 0.0, P.y[i])
    p0 /= P.n
    P.n_active = P.n
    P.pg_max_old = INFINITY
    P.pg_min_old = -INFINITY
    P.shrunk_gap = 0.0
    rng_seed(&P.rng, opt.seed)
    # tol = 0 runs the whole budget (gap_certifies never holds for it)
    floor = gap_floor(p0)
    res.p0 = p0
    res.status = STATUS_MAX_EPOCHS

    if cold:
        _zero_start(P, &primal, &dual, &gap)
    else:
        _resync(data, indices, indptr, P)
        dual = _dual_value(P) if not opt.check_start else 0.0
        if dual > 0.0:          # the schedule's target from D alone; the gap is unknown
            primal, gap = NAN, NAN
        else:
            _check(data, indices, indptr, P, &primal, &dual, &gap, threads)
    epoch = 0
    if gap_certifies(gap, primal - gap, opt.tol, floor):
        res.status = STATUS_CONVERGED
    target = schedule_target(primal, dual, opt.tol, floor)
    if hook != NULL:
        values[0], values[1], values[2], values[3] = primal, dual, gap, NAN
        values[4] = <double>P.n_active
        res.status = report_epoch(hook, ctx, 0, values, res.status)
    # over-relaxation only for exact steps on a quadratic conjugate, after relax_after epochs
    cdef bint relaxes = (opt.relaxation != 1.0 and P.step.rule == STEP_EXACT
                         and loss_conj_quadratic(&P.loss))
    while res.status == STATUS_MAX_EPOCHS and epoch < opt.max_epochs:
        epoch += 1
        _epoch(data, indices, indptr, P, opt,
               opt.relaxation if relaxes and epoch > opt.relax_after else 1.0)
        estimate = NAN if opt.check_every == 1 else (P.pass_gap + P.shrunk_gap) / P.n
        checked = schedule_check_now(&sched, epoch, opt.max_epochs, estimate, P.pass_cost,
                                     target, &predicted)
        if checked:
            # a check expected to succeed resyncs first and certifies in one go
            certify = epoch == opt.max_epochs or (opt.check_every != 1 and predicted <= target)
            if certify:
                _resync(data, indices, indptr, P)
            _check(data, indices, indptr, P, &primal, &dual, &gap, threads)
            if gap_certifies(gap, primal - gap, opt.tol, floor) and not certify:
                # certify: remove the rounding drift of the incremental w, then re-check
                certify = True
                _resync(data, indices, indptr, P)
                _check(data, indices, indptr, P, &primal, &dual, &gap, threads)
            if certify and gap_certifies(gap, primal - gap, opt.tol, floor):
                res.status = STATUS_CONVERGED
            schedule_checked(&sched, gap)
            target = schedule_target(primal, dual, opt.tol, floor)
        if hook != NULL:
            values[0] = primal if checked else NAN
            values[1] = dual if checked else NAN
            values[2] = gap if checked else NAN
            values[3] = estimate
            values[4] = <double>P.n_active
            res.status = report_epoch(hook, ctx, epoch, values, res.status)
    res.n_epochs = epoch
    res.primal = primal
    res.dual = dual
    res.gap = gap
    return res.status


cdef void sdca_local_passes(const floating* data, const index_t* indices,
                            const index_t* indptr, SdcaProblem* P, double passes,
                            uint64_t seed) noexcept nogil:
    cdef SdcaOptions opt = sdca_default_options()
    cdef Py_ssize_t i, full = <Py_ssize_t>passes
    cdef Py_ssize_t part = <Py_ssize_t>((passes - full) * P.n + 0.5)
    opt.shrinking = 0
    opt.check_every = 1             # no pass estimate: nobody reads it here
    for i in range(P.n):
        P.index[i] = i
    P.n_active = P.n
    P.pg_max_old = INFINITY
    P.pg_min_old = -INFINITY
    P.shrunk_gap = 0.0
    rng_seed(&P.rng, seed)
    for i in range(full):
        _epoch(data, indices, indptr, P, &opt, 1.0)
    if part > 0:                    # a random subset: the first `part` of a fresh permutation
        rng_shuffle(&P.rng, P.index, P.n)
        P.n_active = part
        _epoch(data, indices, indptr, P, &opt, 1.0)
        P.n_active = P.n


cdef void sdca_score_sums(const floating* data, const index_t* indices,
                          const index_t* indptr, SdcaProblem* P, double* loss_sum,
                          double* conj_sum) noexcept nogil:
    cdef KahanSum ls = ksum_new(), cs = ksum_new()
    _check_rows(data, indices, indptr, P, 0, P.n, &ls, &cs)
    loss_sum[0] = ksum_value(&ls)
    conj_sum[0] = ksum_value(&cs)


cdef void sdca_resync(const floating* data, const index_t* indices, const index_t* indptr,
                      SdcaProblem* P) noexcept nogil:
    _resync(data, indices, indptr, P)


# ---------------------------------------------------------------------------------------
# the engine's Python entry (train_sdca, the mixup family): history, verbose lines, callback
# and Ctrl-C through the monitor ``mon`` (dualsolve._monitor.EpochMonitor)


def solve(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
          Py_ssize_t n_features, const double[::1] y, str loss, double param, double lam,
          double bias, double[::1] w, double[::1] alpha, double tol, Py_ssize_t max_epochs,
          Py_ssize_t check_every, bint shrinking, int sampling, unsigned long long seed,
          mon, sqnorm=None, point=None, weight=None, mix=None, int step_rule=STEP_EXACT,
          double step_gamma=0.0, int approx_tight=1, int paper_gamma=0, grid=None,
          double offset=0.0, int n_threads=1, scores=None, bint check_start=True,
          double relaxation=1.0, Py_ssize_t relax_after=0):
    """Run sdca_run on validated arrays (w and alpha are written in place), reporting
    every epoch to ``mon`` (which must expect SDCA_HOOK_VALUES values).

    The optional arguments are the mixup generalisations (all arrays float64 / intp,
    C-contiguous): ``point`` (coordinate -> point), ``weight`` (per coordinate), ``mix``
    = (a, b, r) for points beyond the CSR rows (then ``sqnorm`` of every point is required),
    the step rule and its constant, and ``grid`` = (b_lo, b_hi) for STEP_APPROX;
    ``offset``, a fixed intercept added to every score (train_sdca's free intercept);
    ``n_threads``, ``check_start``, ``relaxation`` and ``relax_after`` (see SdcaOptions);
    ``scores``, a float64 array of n
    that receives the scores of the last exact check (after convergence: X w + offset at
    the returned w). Returns (status, n_epochs, primal, dual, gap, p0).
    """
    cdef SdcaProblem P
    cdef SdcaOptions opt = sdca_default_options()
    cdef SdcaResult res
    cdef Py_ssize_t n = y.shape[0], n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t n_mix = 0 if mix is None else len(mix[2])
    cdef Py_ssize_t n_points = n_rows + n_mix
    if point is None and n != n_points:
        raise ValueError(f"y has {n} entries for {n_points} points")
    if mix is not None and sqnorm is None:
        raise ValueError("mixed points need their squared norms (sqnorm)")
    if mon.n_values != SDCA_HOOK_VALUES:
        raise ValueError(f"the monitor expects {mon.n_values} values; sdca_run reports "
                         f"{SDCA_HOOK_VALUES}")
    cdef int sqnorm_given = sqnorm is not None
    sqnorm = np.empty(n_points) if sqnorm is None else np.array(sqnorm, dtype=np.float64)
    if scores is not None and np.shape(scores) != (n,):
        raise ValueError(f"scores must have shape ({n},); got {np.shape(scores)}")
    zbuf = np.empty(n) if scores is None else scores
    index = np.empty(n, dtype=np.intp)
    cdef double[::1] sqnorm_v = sqnorm, z_v = zbuf
    cdef Py_ssize_t[::1] index_v = index

    sdca_problem_init(&P, n, n_features, &y[0], make_loss(loss, param), lam, bias, &w[0],
                      &alpha[0], &sqnorm_v[0], &z_v[0], &index_v[0])
    P.sqnorm_given = sqnorm_given
    P.offset = offset
    P.n_points = n_points
    P.n_rows = n_rows
    P.point = intp_ptr(point, n, "point")
    P.weight = double_ptr(weight, n, "weight")
    if mix is not None:
        P.mix_a = intp_ptr(mix[0], n_mix, "mix_a")
        P.mix_b = intp_ptr(mix[1], n_mix, "mix_b")
        P.mix_r = double_ptr(mix[2], n_mix, "mix_r")
    step_params_init(&P.step, step_rule, step_gamma, n, approx_tight, paper_gamma,
                     NULL if grid is None else double_ptr(grid[0], n, "grid_lo"),
                     NULL if grid is None else double_ptr(grid[1], n, "grid_hi"))
    opt.tol = tol
    opt.max_epochs = max_epochs
    opt.check_every = check_every
    opt.shrinking = shrinking
    opt.sampling = sampling
    opt.seed = seed
    opt.n_threads = n_threads
    opt.check_start = check_start
    opt.relaxation = relaxation
    opt.relax_after = relax_after
    with nogil:
        sdca_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, python_hook, <void*>mon)
    return (res.status, res.n_epochs, res.primal, res.dual, res.gap, res.p0)
