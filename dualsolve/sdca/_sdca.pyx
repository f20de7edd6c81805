# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Linear SDCA over CSR rows: exact dual coordinate maximisation, liblinear's loop shape.

Coordinates are CSR rows by default. The mixup family adds three generalisations, all
optional (NULL pointers): coordinates that map to points (``point``; the decomposed dual
has up to two coordinates per point), loss weights (``weight``), and points beyond the CSR
rows that are mixes (1 - r) x_a + r x_b of two rows, never materialised (``mix_*``).

Per epoch: a random permutation of the active rows; for row i, z = x_i.w (sparse dot), the
exact coordinate step of the loss table, w += delta/(lam n) x_i (sparse axpy); rows stuck at
a bound of the dual domain are shrunk away (liblinear's projected-gradient rule); before
it, passes over the rows whose last steps gained most ("focused passes" below). After the
epoch one pass over all rows recomputes every score from scratch and gives the exact duality
gap; it also re-activates shrunk rows that have become violators, so no unshrink-and-retry
pass is needed. The passes bound the rounding drift of their incremental w against
X^T alpha / (lam n) (SdcaProblem.drift: each step's error from the step's own sizes), and a
check lowers D by what that drift can change in ||w||^2: the gap of a check is a
certificate for the incremental w as it stands, without recomputing w from alpha. Where
the drift is not tracked (mixed points) or its slack alone keeps a check from certifying,
w is recomputed from alpha and the gap re-checked before stopping.
"""
from cython.parallel cimport parallel, prange, threadid
from libc.math cimport INFINITY, NAN, fabs, sqrt
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy, memset

import numpy as np


from dualsolve._core.hooks cimport python_hook
from dualsolve._core.ksum cimport KahanSum, ksum_new, ksum_add, ksum_value
from dualsolve._core.status cimport (STATUS_CONVERGED, STATUS_MAX_EPOCHS, report_epoch,
                                     gap_certifies, gap_floor)
from dualsolve._core.csr cimport (floating, index_t, sparse_dot, sparse_axpy,
                                  sparse_axpy_sqnorm, sparse_sqnorm, prefetch_row,
                                  sorted_row_find)
from dualsolve._core.losses cimport (Loss, LOSS_HINGE, LOSS_SMOOTH_HINGE, LOSS_SQUARED_HINGE,
                                     loss_value, loss_conj, loss_dual_step, loss_dual_bounds,
                                     loss_conj_deriv_binary, loss_conj_quadratic,
                                     loss_conj_strong_convexity, make_loss)
from dualsolve._core.rng cimport rng_seed, rng_below, rng_shuffle
from dualsolve._core.spsc cimport (SpscRing, SPSC_PUBLISH, spsc_alloc, spsc_init,
                                   spsc_free, spsc_full, spsc_push, spsc_flush, spsc_reset,
                                   spsc_ready, spsc_release, DS_LOAD_ACQUIRE,
                                   DS_STORE_RELEASE, DS_CPU_RELAX, DS_HAVE_ATOMICS)
from dualsolve._core.openmp cimport DS_TEAM_SIZE, DS_HAVE_OPENMP, DS_WTIME
from dualsolve._core.buffers cimport double_ptr, intp_ptr
from dualsolve._core.blocks cimport CHECK_SLICES
from dualsolve._core.feature_ranges cimport feature_ranges
from dualsolve.sdca.focus cimport focus_default_share, focus_default_work, focus_select
from dualsolve.sdca.steps cimport StepParams, STEP_EXACT, coordinate_step, step_params_init
from dualsolve.sdca.schedule cimport (CheckSchedule, schedule_init, schedule_check_now,
                                      schedule_checked, schedule_pass_again, schedule_target)



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
    o.focus = focus_default_share()
    o.focus_work = focus_default_work()
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
    P.rows_sorted = 0
    P.z = z
    P.index = index
    P.drift = INFINITY
    P.w_norm = INFINITY
    P.gain = NULL
    P.pass_gain = 0.0


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


cdef inline void _weighted_domain(const Loss* loss, double y, double c, double* lo,
                                  double* hi) noexcept nogil:
    """The domain c [lo, hi] of a weight-c (> 0) coordinate's ``c h(a / c)``."""
    loss_dual_bounds(loss, y, lo, hi)
    if c != 1.0:
        lo[0] *= c              # (the infinite ends stay infinite: c > 0)
        hi[0] *= c


cdef inline double _weighted_bounds(const SdcaProblem* P, double y, double a, double c,
                                    double* lo, double* hi) noexcept nogil:
    """_weighted_domain into lo, hi; returns the derivative h'(a / c) of ``c h(a / c)``
    (binary labels: shrinking's test)."""
    _weighted_domain(&P.loss, y, c, lo, hi)
    return loss_conj_deriv_binary(&P.loss, a if c == 1.0 else a / c, y)


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
    P.drift = 0.0
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


cdef double _dual_value(SdcaProblem* P) noexcept nogil:
    """D(alpha) without touching X, from w (w(alpha) up to its tracked drift, which
    _drift_slack bounds): the conjugates and ||w||^2 (kept, rounded up, in P.w_norm)."""
    cdef Py_ssize_t i, dw = P.d + (1 if P.bias != 0.0 else 0)
    cdef KahanSum cs = ksum_new(), ws = ksum_new()
    for i in range(P.n):
        ksum_add(&cs, _conj_term(P, i))
    for i in range(dw):
        ksum_add(&ws, P.w[i] * P.w[i])
    P.w_norm = sqrt(ksum_value(&ws)) * (1.0 + 1e-12)
    return -ksum_value(&cs) / P.n - 0.5 * P.lam * ksum_value(&ws)


cdef void _check(const floating* data, const index_t* indices, const index_t* indptr,
                 SdcaProblem* P, double* primal, double* dual, double* gap,
                 int threads) noexcept nogil:
    """Exact primal, dual and gap with every score recomputed; re-activate shrunk violators.
    With threads, the rows are cut into CHECK_SLICES slices per thread, which the threads
    take as they come free (a thread that another process slows down holds up the check by
    one slice, not by half of it), each summed on its own, and the slices' sums added in
    order: the same result for the same count, whichever thread took which slice, and
    whatever the team (a build without OpenMP or a nested region gives a smaller one)."""
    cdef Py_ssize_t i, pos, t, dw = P.d + (1 if P.bias != 0.0 else 0)
    cdef double loss_sum, conj_sum, wn, lo, hi, G, a, c
    cdef KahanSum ls = ksum_new(), cs = ksum_new(), ws = ksum_new()
    cdef KahanSum* parts = NULL
    cdef Py_ssize_t s, slices = CHECK_SLICES * threads
    if threads > 1:
        parts = <KahanSum*>malloc(2 * slices * sizeof(KahanSum))
    if parts == NULL:
        _check_rows(data, indices, indptr, P, 0, P.n, &ls, &cs)
    else:
        for s in prange(slices, num_threads=threads, schedule="dynamic"):
            parts[2 * s] = ksum_new()
            parts[2 * s + 1] = ksum_new()
            _check_rows(data, indices, indptr, P, P.n * s // slices, P.n * (s + 1) // slices,
                        &parts[2 * s], &parts[2 * s + 1])
        for t in range(slices):
            ksum_add(&ls, ksum_value(&parts[2 * t]))
            ksum_add(&cs, ksum_value(&parts[2 * t + 1]))
        free(parts)
    for i in range(dw):
        ksum_add(&ws, P.w[i] * P.w[i])
    loss_sum, conj_sum, wn = ksum_value(&ls), ksum_value(&cs), ksum_value(&ws)
    P.w_norm = sqrt(wn) * (1.0 + 1e-12)
    primal[0] = loss_sum / P.n + 0.5 * P.lam * wn
    dual[0] = -conj_sum / P.n - 0.5 * P.lam * wn
    gap[0] = (loss_sum + conj_sum) / P.n + P.lam * wn
    pos = P.n_active
    P.shrunk_gap = 0.0
    while pos < P.n:
        i = P.index[pos]
        a = P.alpha[i]
        c = _weight(P, i)
        if c != 0.0:            # a row of weight 0 stays out (a = 0, no gap)
            G = P.z[i] + _weighted_bounds(P, P.y[i], a, c, &lo, &hi)
            if (a <= lo and G < 0.0) or (a >= hi and G > 0.0):
                P.index[pos] = P.index[P.n_active]
                P.index[P.n_active] = i
                P.n_active += 1
            else:
                P.shrunk_gap += _fenchel_young(P, P.z[i], a, P.y[i], c)
        pos += 1


cdef void _zero_start(SdcaProblem* P, double* primal, double* dual, double* gap) noexcept nogil:
    """The check at alpha = 0 without touching X: w = 0, so every score is the offset."""
    cdef Py_ssize_t i, dw = P.d + (1 if P.bias != 0.0 else 0)
    cdef double loss_sum = 0.0, conj_sum = 0.0
    memset(P.w, 0, dw * sizeof(double))
    P.drift = 0.0
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
    _weighted_domain(loss, y, c, &lo, &hi)
    a = a0 + r * (a - a0)
    if a < lo:
        return lo
    if a > hi:
        return hi
    return a


ctypedef struct PassSums:
    # what a pass (or one thread's share of it) adds up besides the steps
    double pass_gap       # Fenchel-Young gaps of the sampled visits
    double shrunk_gap     # gaps of the rows shrunk away
    double cost           # work: nnz + 16 per visit
    double pg_max         # extreme projected gradients (the next pass's shrinking bounds)
    double pg_min
    double drift          # the bound on the rounding of the steps applied (threaded pass)
    double gain           # the steps' dual gains (_note_gain)
    Py_ssize_t visits
    Py_ssize_t sampled


cdef inline void _sums_init(PassSums* S) noexcept nogil:
    S.pass_gap = 0.0
    S.shrunk_gap = 0.0
    S.cost = 0.0
    S.pg_max = -INFINITY
    S.pg_min = INFINITY
    S.drift = 0.0
    S.gain = 0.0
    S.visits = 0
    S.sampled = 0


cdef inline double _row_score(const floating* data, const index_t* indices, Py_ssize_t nnz,
                              const double* w, Py_ssize_t d, double bias, double offset,
                              PassSums* S) noexcept nogil:
    """A pass's score of a row (its nnz entries from data, indices) against w, as w sees
    it (the bias feature in w[d], the fixed offset); its work into S.cost."""
    cdef double z = sparse_dot(data, indices, nnz, w) + offset
    if bias != 0.0:
        z += bias * w[d]
    S.cost += nnz + 16
    return z


cdef inline bint _row_update(SdcaProblem* P, Py_ssize_t i, Py_ssize_t p, double z,
                             bint shrink, bint estimate, Py_ssize_t stride, bint exact_plain,
                             double relax, double scale, PassSums* S,
                             double* a_new) noexcept nogil:
    """The step on coordinate i (point p) at score z, the curvature ``||x||^2 scale`` (the
    pass's ``1 / (lam n)``; ``sigma' / (lam n)`` on the block pass's CoCoA+ subproblem).
    True: the row is stuck at a bound and is shrunk away (its gap goes to S.shrunk_gap, its
    gain to 0); else its new value is in a_new."""
    cdef double a0 = P.alpha[i], c = _weight(P, i)
    cdef double lo, hi, G, pg, y = P.y[i]
    if shrink and (y == 1.0 or y == -1.0):
        if c == 0.0:            # out of the problem: never moves, no gap
            if P.gain != NULL:
                P.gain[i] = 0.0
            return True
        G = z + _weighted_bounds(P, y, a0, c, &lo, &hi)
        pg = G
        if (a0 <= lo and G > P.pg_max_old) or (a0 >= hi and G < P.pg_min_old):
            S.shrunk_gap += _fenchel_young(P, z, a0, y, c) if estimate else 0.0
            if P.gain != NULL:
                P.gain[i] = 0.0
            return True
        if a0 <= lo:
            if pg > 0.0:
                pg = 0.0
        elif a0 >= hi:
            if pg < 0.0:
                pg = 0.0
        if pg > S.pg_max:
            S.pg_max = pg
        if pg < S.pg_min:
            S.pg_min = pg
    if estimate:
        if S.visits % stride == 0:
            S.pass_gap += _fenchel_young(P, z, a0, y, c)
            S.sampled += 1
        S.visits += 1
    if exact_plain:
        a_new[0] = loss_dual_step(&P.loss, y, z, a0, P.sqnorm[p] * scale)
    else:
        a_new[0] = coordinate_step(&P.loss, y, z, a0, P.sqnorm[p] * scale, c, &P.step, i)
    if relax != 1.0:
        a_new[0] = _relaxed(&P.loss, y, c, a0, a_new[0], relax)
    return False


cdef inline void _note_gain(const SdcaProblem* P, double* gain, Py_ssize_t i,
                            Py_ssize_t p, double delta, double scale, double gamma,
                            PassSums* S) noexcept nogil:
    """Coordinate i's (point p's) step of ``delta`` gained ``curvature delta^2 / 2`` into
    gain[i] and S.gain (nothing when gain is NULL). ``curvature`` is how concave n times
    the dual is along the coordinate: the data's ``||x_p||^2 scale`` plus the weighted
    conjugate's ``c_i phi*(-a / c_i)`` strong convexity ``gamma / c_i`` (a row of weight
    0 never moves); so for an exact step the gain is at most n times the dual's rise."""
    cdef double c, g
    if gain != NULL:
        c = _weight(P, i)
        g = 0.5 * (P.sqnorm[p] * scale + (gamma / c if c > 0.0 else 0.0)) * delta * delta
        gain[i] = g
        S.gain += g


cdef inline void _pass_end(SdcaProblem* P, const PassSums* S, Py_ssize_t n_active) noexcept nogil:
    P.pass_gap = S.pass_gap * S.visits / S.sampled if S.sampled > 0 else 0.0
    P.shrunk_gap += S.shrunk_gap
    P.pass_cost = S.cost
    P.pass_gain = S.gain
    P.n_active = n_active
    # liblinear's thresholds: shrink next epoch only against this epoch's extreme violations
    P.pg_max_old = S.pg_max if S.pg_max > 0.0 else INFINITY
    P.pg_min_old = S.pg_min if S.pg_min < 0.0 else -INFINITY


cdef inline bint _shrinks(const SdcaProblem* P, const SdcaOptions* opt) noexcept nogil:
    """Shrinking needs a bounded dual domain (weighted rows: c_i times it); labels are
    checked per row."""
    return (opt.shrinking != 0
            and (P.loss.kind == LOSS_HINGE or P.loss.kind == LOSS_SMOOTH_HINGE
                 or P.loss.kind == LOSS_SQUARED_HINGE))


# twice the unit roundoff of a double: a generous u in the drift bound (the (1 + u) factors
# of a step's terms are absorbed by the factor 2)
cdef double DRIFT_U = 2.3e-16


cdef inline double _step_drift(double c, double row_sqnorm, double new_sqnorm) noexcept nogil:
    """The drift bound of a step w += c x on a row: each entry is rounded twice (c x_k,
    then the sum), so the error vector is at most u (||c x|| + ||new w on the row||)."""
    return DRIFT_U * (fabs(c) * sqrt(row_sqnorm) + sqrt(new_sqnorm))


cdef inline double _row_step(const floating* data, const index_t* indices, Py_ssize_t nnz,
                             double* w, Py_ssize_t d, double bias, double c,
                             double row_sqnorm, bint track) noexcept nogil:
    """w += c x for a row (its nnz entries; ``bias`` != 0: the bias feature in w[d]).
    With ``track``, returns the step's drift bound (_step_drift, row_sqnorm the row's
    ||x||^2 + bias^2), else 0."""
    cdef double sq = 0.0
    if track:
        sq = sparse_axpy_sqnorm(c, data, indices, nnz, w)
    else:
        sparse_axpy(c, data, indices, nnz, w)
    if bias != 0.0:
        w[d] += c * bias
        sq += w[d] * w[d]
    return _step_drift(c, row_sqnorm, sq) if track else 0.0


cdef inline double _merge_drift(double new_sqnorm, double spread_sqnorm) noexcept nogil:
    """The drift bound of a block pass's merge on a range of w (_block_share): its new
    entries' squared norm, and that of the sums of the copies' |differences| from w."""
    return DRIFT_U * (sqrt(new_sqnorm) + 2.0 * sqrt(spread_sqnorm))


cdef double _drift_slack(const SdcaProblem* P) noexcept nogil:
    """How far D(alpha) may lie below the dual a check computes from the incremental w
    (the check's ||w|| in w_norm): ||w(alpha)|| <= ||w|| + drift, so lam/2 ||w(alpha)||^2
    exceeds lam/2 ||w||^2 by at most lam (||w|| drift + drift^2 / 2). Zero right after w
    was computed from alpha; INFINITY when the drift is not tracked."""
    if P.drift == 0.0:
        return 0.0
    if P.drift == INFINITY:     # (not lam * 0 * inf when w = 0)
        return INFINITY
    return P.lam * (P.w_norm * P.drift + 0.5 * P.drift * P.drift)


cdef void _epoch(const floating* data, const index_t* indices, const index_t* indptr,
                 SdcaProblem* P, const SdcaOptions* opt, double relax) noexcept nogil:
    """One pass of coordinate steps over the active coordinates; ``relax`` != 1: the
    exact steps over-relaxed by that factor (SdcaOptions.relaxation)."""
    cdef PassSums S
    _sums_init(&S)
    _pass_end(P, &S, _epoch_steps(data, indices, indptr, P, opt, relax, True, 0, P.n_active,
                                  &S))


cdef Py_ssize_t _epoch_steps(const floating* data, const index_t* indices,
                             const index_t* indptr, SdcaProblem* P, const SdcaOptions* opt,
                             double relax, bint shuffle, Py_ssize_t start_at, Py_ssize_t stop,
                             PassSums* sums) noexcept nogil:
    """_epoch's steps on one thread, into ``sums`` (P.drift updated): the whole pass
    (``shuffle``: the permutation drawn first), or with permutations positions [start_at,
    stop) of the active set (a probing pass's serial steps, _epoch_threads). Returns the
    rows still active: positions before stop were stepped, those from there up to the
    returned count were not, the rows it shrunk lie after them."""
    # struct fields in locals: the compiler cannot keep them in registers across the
    # stores into w otherwise
    cdef double* w = P.w
    cdef double* alpha = P.alpha
    cdef Py_ssize_t* index = P.index
    cdef const Py_ssize_t* point = P.point
    cdef bint exact_plain = P.step.rule == STEP_EXACT and P.weight == NULL
    cdef Py_ssize_t n_active = P.n_active, d = P.d, n_rows = P.n_rows
    cdef double bias = P.bias, offset = P.offset, scale = 1.0 / (P.lam * P.n)
    cdef bint permute = opt.sampling == SAMPLE_PERMUTATION
    cdef bint shrink = _shrinks(P, opt)
    cdef bint estimate = opt.check_every != 1
    # the estimate samples every stride-th visit (a random subset, the order being random):
    # a few thousand rows estimate the mean gap to a few percent, at a fraction of the cost
    cdef Py_ssize_t stride = 1 + n_active // 4096
    cdef PassSums* S = sums
    cdef Py_ssize_t k = start_at, pos, i, p, start = 0, nnz = 0, step = 0, nxt
    cdef Py_ssize_t n_steps = n_active
    cdef double z, a, delta
    cdef double drift = P.drift      # (_step_drift: both of its norms are known at the step)
    cdef bint track = drift != INFINITY
    cdef double* gain = P.gain
    cdef double gamma = loss_conj_strong_convexity(&P.loss)
    if permute and shuffle:
        rng_shuffle(&P.rng, index, n_active)
    while True:
        if permute:
            if k >= n_active or k >= stop:
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
            z = _row_score(data + start, indices + start, nnz, w, d, bias, offset, S)
        else:
            z = _point_score(data, indices, indptr, P, p)
            S.cost += 2 * (indptr[n_rows] / n_rows) + 32
        if _row_update(P, i, p, z, shrink, estimate, stride, exact_plain, relax, scale, S,
                       &a):
            # swap to the end of the active set; the position is visited again
            n_active -= 1
            index[pos] = index[n_active]
            index[n_active] = i
            continue
        delta = a - alpha[i]
        _note_gain(P, gain, i, p, delta, scale, gamma, S)
        if delta != 0.0:
            alpha[i] = a
            if p < n_rows:      # (sqnorm holds ||x_p||^2 + bias^2: the row as w sees it)
                drift += _row_step(data + start, indices + start, nnz, w, d, bias,
                                   delta * scale, P.sqnorm[p], track)
            else:
                _point_axpy(data, indices, indptr, P, p, delta * scale)
                track = False   # a mixed point's two rows: not tracked
        k += 1
    P.drift = drift if track else INFINITY
    return n_active


# ---------------------------------------------------------------------------------------
# the threaded pass: feature-owned writes (docs/benchmarks.md, "Threads")
#
# Thread t takes a slice of the shuffled active rows and owns a range of features (ranges
# cut at equal shares of the nonzeros). A step reads the whole row's score from the shared
# w, writes its own features' part of the step, and sends (row, coefficient) to each other
# thread whose features the row has; that thread applies its part when it next drains its
# rings. So every entry of w has one writer, no update is lost, and after the pass
# w = X^T alpha / (lam n) as in the serial pass; but a score may miss the last few steps
# on other threads' features, so the iterates depend on timing (the exact gap check, from
# w recomputed from alpha, is the guarantee). Used on rows that are nearly orthogonal
# (OWNED_MAX_COHERENCE); a check whose dual fell undoes the passes since the last check
# and goes on serially.

# rows per thread below which the threads cost more than they save
cdef Py_ssize_t OWNED_MIN_ROWS = 1000
# two conditions of rows that stale scores do not throw off: features in few rows on
# average (nnz / d: news20 2.8, IMDB 3.6; reuters 37 and a random 2000 x 300 problem with 100
# rows per feature stalled) and ||mean row||^2 / mean ||row||^2 small (a9a: 0.45, its
# squared hinge diverged; news20, IMDB 0.02-0.03)
cdef double OWNED_MAX_ROWS_PER_FEATURE = 8.0
cdef double OWNED_MAX_COHERENCE = 0.08


def _owned_limits(limits=None):
    """The threaded pass's (rows per feature, coherence) limits; a pair sets them (tests
    force threads on rows they would not take, to reach the fall-back). Returns the limits
    before the call."""
    global OWNED_MAX_ROWS_PER_FEATURE, OWNED_MAX_COHERENCE
    old = (OWNED_MAX_ROWS_PER_FEATURE, OWNED_MAX_COHERENCE)
    if limits is not None:
        OWNED_MAX_ROWS_PER_FEATURE, OWNED_MAX_COHERENCE = map(float, limits)
    return old


ctypedef struct OwnedPass:
    int threads
    Py_ssize_t* cut        # n x (threads - 1): where row p's entries of thread t's features
                           # start, t = 1 .. threads - 1 (indices sorted within rows)
    SpscRing* ring         # threads x threads: ring[src * threads + dst]
    void* ring_block       # the allocation ring lies in (aligned to a cache line)
    PassSums* sums         # per thread
    Py_ssize_t* active     # per thread: rows of its slice not shrunk
    long long* done        # per thread, 8 apart (own cache lines): its slice is finished
    Py_ssize_t* buf        # n: the active set put back together after the pass
    Py_ssize_t* first      # threads + 1: thread t owns features [first[t], first[t + 1])
    int failed             # the team was smaller than asked (nested parallelism)
    int blocks             # 1: the block pass instead (copies, no cut, ring or first)
    double* copies         # threads x stride: each thread's copy of w (the block pass)
    Py_ssize_t stride      # entries from one copy to the next (padded past w's d + 1)


cdef inline Py_ssize_t _slice_at(Py_ssize_t first, Py_ssize_t n_active, int t,
                                 int T) noexcept nogil:
    """Where thread t's slice of positions [first, n_active) starts (t = T: the end)."""
    return first + (n_active - first) * t // T


cdef inline Py_ssize_t _seg_lo(const OwnedPass* O, const index_t* indptr, Py_ssize_t p,
                               int t) noexcept nogil:
    return indptr[p] if t == 0 else O.cut[p * (O.threads - 1) + t - 1]


cdef inline Py_ssize_t _seg_hi(const OwnedPass* O, const index_t* indptr, Py_ssize_t p,
                               int t) noexcept nogil:
    return indptr[p + 1] if t == O.threads - 1 else O.cut[p * (O.threads - 1) + t]


cdef void _owned_free(OwnedPass* O) noexcept nogil:
    cdef int t
    if O.ring != NULL:
        for t in range(O.threads * O.threads):
            spsc_free(&O.ring[t])
    free(O.cut)
    free(O.ring_block)
    free(O.sums)
    free(O.active)
    free(O.done)
    free(O.buf)
    free(O.first)
    free(O.copies)
    memset(O, 0, sizeof(OwnedPass))


cdef bint _threads_may_pass(const index_t* indptr, const SdcaProblem* P,
                            const SdcaOptions* opt, int threads) noexcept nogil:
    """What either threaded pass needs: plain rows in random permutations, enough of
    them, OpenMP and atomics."""
    return (threads >= 2 and DS_HAVE_ATOMICS and DS_HAVE_OPENMP and P.point == NULL
            and P.n_rows == P.n and opt.sampling == SAMPLE_PERMUTATION
            and P.n >= OWNED_MIN_ROWS * threads and indptr[P.n_rows] > 0)


cdef bint _nearly_orthogonal(const floating* data, const index_t* indices,
                             const index_t* indptr, SdcaProblem* P) noexcept nogil:
    """Whether ||mean row||^2 <= OWNED_MAX_COHERENCE mean ||row||^2 (the bias column left
    out), estimated from every stride-th row (about 2^17 nonzeros in all: a fraction of a
    pass; the sample's own ||mean row||^2 adds about mean ||row||^2 / rows, 1e-3 .. 3e-3 of
    it on reuters and news20). Uses w as scratch."""
    cdef Py_ssize_t p, k, j, n = P.n, nnz = indptr[P.n_rows]
    cdef Py_ssize_t stride = 1 + nnz // (1 << 17), rows = (n + stride - 1) // stride
    cdef double mean_row = 0.0, rows_sq = 0.0
    # the sample's entries of w only (no pass over all of w, 13 MB on news20): zeroed,
    # summed, then each squared once and zeroed again
    p = 0
    while p < n:
        for k in range(indptr[p], indptr[p + 1]):
            P.w[indices[k]] = 0.0
        p += stride
    p = 0
    while p < n:
        for k in range(indptr[p], indptr[p + 1]):
            P.w[indices[k]] += data[k]
        rows_sq += P.sqnorm[p] - P.bias * P.bias
        p += stride
    p = 0
    while p < n:
        for k in range(indptr[p], indptr[p + 1]):
            j = indices[k]
            mean_row += (P.w[j] / rows) * (P.w[j] / rows)
            P.w[j] = 0.0
        p += stride
    return mean_row <= OWNED_MAX_COHERENCE * rows_sq / rows


cdef bint _threads_alloc(OwnedPass* O, Py_ssize_t n, int threads) noexcept nogil:
    """The parts both threaded passes use (per-thread sums, slices, flags; the active
    set's buffer); False (nothing left allocated) when memory ran out."""
    O.threads = threads
    O.sums = <PassSums*>malloc(threads * sizeof(PassSums))
    O.active = <Py_ssize_t*>malloc(threads * sizeof(Py_ssize_t))
    O.done = <long long*>calloc(8 * threads, sizeof(long long))
    O.buf = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    if O.sums == NULL or O.active == NULL or O.done == NULL or O.buf == NULL:
        _owned_free(O)
        return False
    return True


cdef bint _orthogonal_and_ranged(const floating* data, const index_t* indices,
                                 const index_t* indptr, SdcaProblem* P, int threads,
                                 Py_ssize_t* first) noexcept nogil:
    """_nearly_orthogonal and feature_ranges (into first), side by side in two threads:
    both sample X with a cache miss a nonzero (news20: 0.5-0.75 ms each, a share of a short
    solve's setup), and neither needs the other's result."""
    cdef int done[2]
    cdef int t
    done[0], done[1] = -1, -1
    with parallel(num_threads=2):
        t = threadid()
        if t == 0:
            done[0] = _nearly_orthogonal(data, indices, indptr, P)
        elif t == 1:
            done[1] = feature_ranges(indices, indptr, P.n, indptr[P.n_rows], P.d, threads, first)
    if done[0] < 0:         # (a team of one)
        done[0] = _nearly_orthogonal(data, indices, indptr, P)
    if done[1] < 0:
        done[1] = feature_ranges(indices, indptr, P.n, indptr[P.n_rows], P.d, threads, first)
    return done[0] == 1 and done[1] == 1


cdef bint _owned_setup(const floating* data, const index_t* indices, const index_t* indptr,
                       SdcaProblem* P, const SdcaOptions* opt, int threads,
                       OwnedPass* O) noexcept nogil:
    """Whether the passes run in ``threads`` threads with feature-owned writes (then O is
    ready): few rows per feature, sorted indices, nearly orthogonal rows. Uses w as
    scratch (sdca_run sets it afterwards)."""
    cdef Py_ssize_t p, k, n = P.n, d = P.d, nnz = indptr[P.n_rows]
    cdef int t
    memset(O, 0, sizeof(OwnedPass))
    if (not _threads_may_pass(indptr, P, opt, threads)
            or nnz > OWNED_MAX_ROWS_PER_FEATURE * d):
        return False
    if not P.rows_sorted:
        for p in range(n):
            for k in range(indptr[p] + 1, indptr[p + 1]):
                if indices[k] <= indices[k - 1]:
                    return False
    if not _threads_alloc(O, n, threads):
        return False
    O.cut = <Py_ssize_t*>malloc(n * (threads - 1) * sizeof(Py_ssize_t))
    O.ring = spsc_alloc(threads * threads, &O.ring_block)
    O.first = <Py_ssize_t*>malloc((threads + 1) * sizeof(Py_ssize_t))
    if O.cut == NULL or O.ring == NULL or O.first == NULL:
        _owned_free(O)
        return False
    for t in range(threads * threads):
        if spsc_init(&O.ring[t], max(256, 16384 // threads)) != 0:
            _owned_free(O)
            return False
    if not _orthogonal_and_ranged(data, indices, indptr, P, threads, O.first):
        _owned_free(O)
        return False
    # each row's entries split at those features (a binary search a row and cut: in the
    # threads, a cache miss or more each)
    for p in prange(n, num_threads=threads, schedule="dynamic", chunksize=256):
        for t in range(1, threads):
            O.cut[p * (threads - 1) + t - 1] = indptr[p] + sorted_row_find(
                indices + indptr[p], indptr[p + 1] - indptr[p], O.first[t])
    return True


cdef inline double _owned_apply(const floating* data, const index_t* indices,
                                const index_t* indptr, SdcaProblem* P, const OwnedPass* O,
                                int t, Py_ssize_t p, double c) noexcept nogil:
    """Thread t's part of the step c x_p: its features (and the bias, last thread's).
    Returns a bound on the part's rounding (the serial pass's, with the whole row's
    ||c x_p|| standing for the part's: the parts' bounds add up to a bound of the step)."""
    cdef Py_ssize_t lo = _seg_lo(O, indptr, p, t)
    return _row_step(data + lo, indices + lo, _seg_hi(O, indptr, p, t) - lo, P.w, P.d,
                     P.bias if t == O.threads - 1 else 0.0, c, P.sqnorm[p], True)


cdef inline void _owned_drain(const floating* data, const index_t* indices,
                              const index_t* indptr, SdcaProblem* P, OwnedPass* O,
                              int t, PassSums* S) noexcept nogil:
    """Apply the steps the other threads sent to thread t (their rounding into S.drift)."""
    cdef int u
    cdef SpscRing* r
    cdef long long e, ready
    cdef Py_ssize_t nxt, lo
    for u in range(O.threads):
        if u == t:
            continue
        r = &O.ring[u * O.threads + t]
        ready = spsc_ready(r)
        if ready == r.head:
            continue
        for e in range(r.head, ready):
            if e + 2 < ready:
                nxt = r.row[(e + 2) % r.cap]
                lo = _seg_lo(O, indptr, nxt, t)
                prefetch_row(data + lo, indices + lo, _seg_hi(O, indptr, nxt, t) - lo)
            S.drift += _owned_apply(data, indices, indptr, P, O, t, r.row[e % r.cap],
                                    r.coef[e % r.cap])
        spsc_release(r, ready)


cdef inline bint _owned_sends(const OwnedPass* O, const SdcaProblem* P,
                              const index_t* indptr, Py_ssize_t p, int u) noexcept nogil:
    return (_seg_hi(O, indptr, p, u) > _seg_lo(O, indptr, p, u)
            or (u == O.threads - 1 and P.bias != 0.0))


cdef void _owned_share(const floating* data, const index_t* indices, const index_t* indptr,
                       SdcaProblem* P, const SdcaOptions* opt, double relax, OwnedPass* O,
                       int t, Py_ssize_t first, Py_ssize_t n_active) noexcept nogil:
    """Thread t's slice of the pass: positions [lo, end) of the shuffled active set's
    [first, n_active) (end moves down as rows are shrunk away)."""
    cdef int T = O.threads, u
    cdef Py_ssize_t lo = _slice_at(first, n_active, t, T)
    cdef Py_ssize_t end = _slice_at(first, n_active, t + 1, T), k, i, nxt
    cdef Py_ssize_t start, nnz
    cdef Py_ssize_t* index = P.index
    cdef PassSums sums               # on this thread's stack: O.sums side by side would
    cdef PassSums* S = &sums         # put both threads' counters on one cache line
    cdef bint shrink = _shrinks(P, opt), estimate = opt.check_every != 1
    cdef bint exact_plain = P.step.rule == STEP_EXACT and P.weight == NULL
    cdef Py_ssize_t stride = 1 + n_active // 4096
    cdef double z, a, c, scale = 1.0 / (P.lam * P.n)
    cdef double gamma = loss_conj_strong_convexity(&P.loss)
    cdef bint all_done
    _sums_init(S)
    k = lo
    while k < end:
        if k + 2 < end:
            nxt = index[k + 2]
            prefetch_row(data + indptr[nxt], indices + indptr[nxt], indptr[nxt + 1] - indptr[nxt])
        i = index[k]
        start = indptr[i]
        nnz = indptr[i + 1] - start
        z = _row_score(data + start, indices + start, nnz, P.w, P.d, P.bias, P.offset, S)
        if _row_update(P, i, i, z, shrink, estimate, stride, exact_plain, relax, scale, S,
                       &a):
            end -= 1
            index[k] = index[end]
            index[end] = i
            continue
        _note_gain(P, P.gain, i, i, a - P.alpha[i], scale, gamma, S)
        if a != P.alpha[i]:
            c = (a - P.alpha[i]) * scale
            P.alpha[i] = a
            S.drift += _owned_apply(data, indices, indptr, P, O, t, i, c)
            for u in range(T):
                if u != t and _owned_sends(O, P, indptr, i, u):
                    while spsc_full(&O.ring[t * T + u]):
                        _owned_drain(data, indices, indptr, P, O, t, S)
                        DS_CPU_RELAX()
                    spsc_push(&O.ring[t * T + u], i, c)
        k += 1
        if (k - lo) % SPSC_PUBLISH == 0:
            _owned_drain(data, indices, indptr, P, O, t, S)
    O.active[t] = end - lo
    O.sums[t] = sums
    for u in range(T):
        if u != t:
            spsc_flush(&O.ring[t * T + u])
    DS_STORE_RELEASE(&O.done[8 * t], 1)
    while True:
        # every other slice finished (and so flushed) before this drain: nothing can follow
        all_done = True
        for u in range(T):
            if u != t and DS_LOAD_ACQUIRE(&O.done[8 * u]) == 0:
                all_done = False
        _owned_drain(data, indices, indptr, P, O, t, S)
        if all_done:
            break
        DS_CPU_RELAX()
    O.sums[t].drift = sums.drift     # with the steps drained after the slice


cdef void _resync_owned(const floating* data, const index_t* indices, const index_t* indptr,
                        SdcaProblem* P, OwnedPass* O) noexcept nogil:
    """_resync with thread t summing its features only: each entry of w adds the same
    terms in the same order as one thread does, so w is the serial one bit for bit."""
    cdef int T = O.threads, t
    cdef Py_ssize_t p, lo
    cdef double scale = 1.0 / (P.lam * P.n)
    O.failed = 0
    P.drift = 0.0
    with parallel(num_threads=T):
        t = threadid()
        if DS_TEAM_SIZE() != T:
            O.failed = 1
        else:
            lo = O.first[t]
            memset(P.w + lo, 0, (O.first[t + 1] - lo + (t == T - 1 and P.bias != 0.0))
                   * sizeof(double))
            for p in range(P.n):
                if P.alpha[p] != 0.0:
                    _owned_apply(data, indices, indptr, P, O, t, p, P.alpha[p] * scale)
    if O.failed:
        _resync(data, indices, indptr, P)


cdef void _resync_block_share(const floating* data, const index_t* indices,
                              const index_t* indptr, SdcaProblem* P, OwnedPass* O,
                              int t) noexcept nogil:
    """Thread t's part of _resync_blocks: its slice of the rows into its copy, then (once
    every copy is summed) its range of w."""
    cdef int T = O.threads, u
    cdef Py_ssize_t p, j, dw = P.d + (P.bias != 0.0)
    cdef double scale = 1.0 / (P.lam * P.n), total
    cdef double* v = O.copies + t * O.stride
    memset(v, 0, dw * sizeof(double))
    for p in range(P.n * t // T, P.n * (t + 1) // T):
        if P.alpha[p] != 0.0:
            _row_step(data + indptr[p], indices + indptr[p], indptr[p + 1] - indptr[p], v,
                      P.d, P.bias, P.alpha[p] * scale, 0.0, False)
    _barrier(O, t, 1)
    for j in range(dw * t // T, dw * (t + 1) // T):
        total = 0.0
        for u in range(T):
            total += O.copies[u * O.stride + j]
        P.w[j] = total


cdef void _resync_blocks(const floating* data, const index_t* indices, const index_t* indptr,
                         SdcaProblem* P, OwnedPass* O) noexcept nogil:
    """_resync with thread t summing its slice of the rows into its copy, then each thread
    adding the copies on its range of w: the same result for the same thread count (not
    the serial summation order)."""
    cdef int T = O.threads, t
    O.failed = 0
    P.drift = 0.0
    for t in range(T):
        O.done[8 * t] = 0
    with parallel(num_threads=T):
        t = threadid()
        if DS_TEAM_SIZE() != T:
            O.failed = 1
        else:
            _resync_block_share(data, indices, indptr, P, O, t)
    if O.failed:
        _resync(data, indices, indptr, P)


cdef inline void _resync_with(const floating* data, const index_t* indices,
                              const index_t* indptr, SdcaProblem* P,
                              OwnedPass* O) noexcept nogil:
    """_resync, in threads when the passes were set up for them (O not NULL)."""
    if O == NULL:
        _resync(data, indices, indptr, P)
    elif O.blocks:
        _resync_blocks(data, indices, indptr, P, O)
    else:
        _resync_owned(data, indices, indptr, P, O)


# The feature-owned pass moves cache lines between cores all the time (the rings, w's
# entries one thread writes and the other reads, the rows' segments the receiver reads
# again), so what it gains depends on how far apart the two cores are, and on whether
# anything else runs on the second one: on this project's shared 2-core host, news20's
# pass 1.3-1.6x faster than one thread when a core-to-core round trip took ~50 ns, 2x
# slower when it took ~400 ns, and slower for the few milliseconds after a threaded BLAS
# call (its idle workers spin) (docs/benchmarks.md, "Threads"). So these passes are timed.
# A probing pass steps CLOCK_SHARE of its shuffled rows on one thread, the next
# CLOCK_SHARE in threads, and the rest in threads if their time per unit of work was under
# THREADS_PAY of one thread's, else on one thread. The first pass probes; while the threads
# pay, the passes run in threads (each one timed against the last probe's serial rate);
# otherwise serial passes run and a pass probes again after 1, 2, 4, 8, ... of them (the
# placement changes within minutes: a long solve follows it).
cdef double THREADS_PAY = 0.95
cdef double CLOCK_SHARE = 0.125


def _threads_pay(pay=None):
    """THREADS_PAY; a number sets it (tests: 1e300 keeps the threads whatever the clock
    says, 0 gives them up after each probe). Returns the value before the call."""
    global THREADS_PAY
    old = THREADS_PAY
    if pay is not None:
        THREADS_PAY = float(pay)
    return old


ctypedef struct PassClock:
    double threaded         # seconds per unit of work (pass_cost), the threads' last (NAN:
    double serial           # none yet), and one thread's at the last probe
    Py_ssize_t streak       # serial passes since the threads last ran
    Py_ssize_t wait         # serial passes before a pass probes again


cdef inline void _clock_init(PassClock* C) noexcept nogil:
    C.threaded, C.serial = NAN, NAN
    C.streak, C.wait = 0, 1


cdef inline bint _clock_pays(const PassClock* C) noexcept nogil:
    return C.threaded < THREADS_PAY * C.serial


cdef inline double _rate(double seconds, double cost) noexcept nogil:
    return seconds / cost if cost > 0.0 and seconds > 0.0 else NAN


cdef enum:
    CLOCK_THREADS = 0       # a threaded pass
    CLOCK_PROBE = 1         # a probing pass (both rates measured, the rest by the verdict)
    CLOCK_SERIAL = 2        # a serial pass


cdef inline int _clock_next(PassClock* C) noexcept nogil:
    """How the next pass runs (see THREADS_PAY)."""
    if C.threaded != C.threaded or C.serial != C.serial:
        return CLOCK_PROBE
    if _clock_pays(C):
        C.streak = 0
        return CLOCK_THREADS
    C.streak += 1
    if C.streak > C.wait:
        C.streak = 0
        C.wait *= 2
        return CLOCK_PROBE
    return CLOCK_SERIAL


cdef enum:
    PASS_NONE = 0       # _epoch_threads did nothing: the pass is one thread's (_epoch)
    PASS_THREADS = 1    # the pass ran in threads, or partly (a probe)
    PASS_SERIAL = 2     # the team came out smaller after a probe's serial steps: one
                        # thread ended the pass


cdef void _sums_add(PassSums* S, const PassSums* T) noexcept nogil:
    S.pass_gap += T.pass_gap
    S.shrunk_gap += T.shrunk_gap
    S.cost += T.cost
    S.pg_max = max(S.pg_max, T.pg_max)
    S.pg_min = min(S.pg_min, T.pg_min)
    S.drift += T.drift
    S.gain += T.gain
    S.visits += T.visits
    S.sampled += T.sampled


cdef Py_ssize_t _threads_segment(const floating* data, const index_t* indices,
                                 const index_t* indptr, SdcaProblem* P,
                                 const SdcaOptions* opt, double relax, OwnedPass* O,
                                 Py_ssize_t first, Py_ssize_t end, Py_ssize_t n_active,
                                 int rounds, PassSums* S) noexcept nogil:
    """Positions [first, end) of the shuffled active set [0, n_active) stepped in threads
    (feature-owned, or in blocks with ``rounds`` merges), their sums added to S. Then the
    rows it kept active are moved to [first, first + kept), the rows not yet stepped
    ([end, n_active)) right after them, and the rows it shrunk after those (the ones shrunk
    before stay past n_active): the state a serial pass stopped at first + kept would be
    in. Returns kept, or -1 (nothing done) when the team came out smaller."""
    cdef int T = O.threads, t
    cdef Py_ssize_t lo, hi, m = 0, pos, kept = 0
    if not O.blocks:
        for t in range(T * T):
            spsc_reset(&O.ring[t])
    for t in range(T):
        O.done[8 * t] = 0
    O.failed = 0
    with parallel(num_threads=T):
        t = threadid()
        if DS_TEAM_SIZE() != T:
            O.failed = 1         # no thread has started: the others do the same
        elif O.blocks:
            _block_share(data, indices, indptr, P, opt, relax, O, t, end, rounds)
        else:
            _owned_share(data, indices, indptr, P, opt, relax, O, t, first, end)
    if O.failed:
        return -1
    for t in range(T):
        _sums_add(S, &O.sums[t])
        kept += O.active[t]
    # each slice's active rows, the rows not yet stepped, the rows shrunk in the slices
    for t in range(T):
        lo = _slice_at(first, end, t, T)
        for pos in range(lo, lo + O.active[t]):
            O.buf[m] = P.index[pos]
            m += 1
    for pos in range(end, n_active):
        O.buf[m] = P.index[pos]
        m += 1
    for t in range(T):
        lo, hi = _slice_at(first, end, t, T), _slice_at(first, end, t + 1, T)
        for pos in range(lo + O.active[t], hi):
            O.buf[m] = P.index[pos]
            m += 1
    memcpy(P.index + first, O.buf, (n_active - first) * sizeof(Py_ssize_t))
    return kept


cdef int _epoch_threads(const floating* data, const index_t* indices, const index_t* indptr,
                        SdcaProblem* P, const SdcaOptions* opt, double relax,
                        OwnedPass* O, Py_ssize_t epoch, PassClock* clock) noexcept nogil:
    """Pass ``epoch`` in O.threads threads, feature-owned or in blocks (O.blocks);
    PASS_NONE (nothing done: the pass is left to one thread) when the team came out
    smaller, or when shrinking has cut a block pass's work (the last pass's) below what its
    copies cost. ``clock`` not NULL (feature-owned only): a probing pass (see THREADS_PAY),
    its rates recorded there."""
    cdef int rounds = 0 if not O.blocks else _block_rounds(
        P, indptr[P.n_rows] if epoch == 1 else P.pass_cost, O.threads)
    cdef Py_ssize_t n_active = P.n_active, first = 0, end, kept, share
    cdef PassSums S
    cdef double started, cost
    if O.blocks and rounds < 1:
        return PASS_NONE
    _sums_init(&S)
    if clock == NULL:
        rng_shuffle(&P.rng, P.index, n_active)
        kept = _threads_segment(data, indices, indptr, P, opt, relax, O, 0, n_active,
                                n_active, rounds, &S)
        if kept < 0:
            return PASS_NONE
        P.drift += S.drift
        _pass_end(P, &S, kept)
        return PASS_THREADS
    # a probe: one thread's steps (P.drift gets their rounding), the threads', the rest
    clock.threaded = NAN
    share = max(<Py_ssize_t>(CLOCK_SHARE * n_active), 1)
    rng_shuffle(&P.rng, P.index, n_active)
    started = DS_WTIME()
    n_active = _epoch_steps(data, indices, indptr, P, opt, relax, False, 0, share, &S)
    clock.serial = _rate(DS_WTIME() - started, S.cost)
    first = min(share, n_active)
    end = min(first + share, n_active)
    cost = S.cost
    started = DS_WTIME()
    kept = _threads_segment(data, indices, indptr, P, opt, relax, O, first, end, n_active, 0,
                            &S)
    if kept >= 0:
        clock.threaded = _rate(DS_WTIME() - started, S.cost - cost)
        n_active -= end - first - kept
        first += kept
        if _clock_pays(clock):
            kept = _threads_segment(data, indices, indptr, P, opt, relax, O, first, n_active,
                                    n_active, 0, &S)
            if kept >= 0:
                P.drift += S.drift
                _pass_end(P, &S, first + kept)
                return PASS_THREADS
    # one thread ends the pass: the threads lost, or the team came out smaller (then
    # their rate stays unknown and the next pass probes again)
    n_active = _epoch_steps(data, indices, indptr, P, opt, relax, False, first, n_active, &S)
    P.drift += S.drift
    _pass_end(P, &S, n_active)
    return PASS_THREADS if clock.threaded == clock.threaded else PASS_SERIAL


# ---------------------------------------------------------------------------------------
# the block pass: CoCoA+ in threads (Ma et al. 2015; docs/benchmarks.md, "Threads")
#
# Where rows share features too much for feature-owned writes (reuters: 49 rows per
# feature) but w is small next to X, thread t takes a slice of the shuffled active rows and
# steps them on its own copy v_t of w, on CoCoA+'s subproblem with sigma' = threads (the
# curvature ||x||^2 / (lam n) of each step times sigma', so v_t = w + sigma' u_t with
# u_t = X_t^T (a_t - a_t0) / (lam n)); then w += sum_t u_t, each thread adding a range of
# w. With sigma' = threads the dual cannot fall (the subproblems' gains bound the whole
# dual's gain from below), nothing is shared while the rows are stepped, and the result
# depends on the seed and the thread count only: bit for bit reproducible. A pass merges
# `rounds` times (as often as the copies stay cheap next to the rows' work), so that a
# slice sees the others' steps sooner.

# nonzeros stepped per entry of the threads + 1 copies of w a round (a copy and the merge's
# reads): a pass needs BLOCKS_MIN (the copies then cost a thread ~1/3 of its steps' memory
# traffic: 2 per nonzero, 3 per entry of w), and merges again for every BLOCKS_ROUND more
cdef double BLOCKS_MIN = 4.0
cdef double BLOCKS_ROUND = 16.0
cdef int BLOCKS_MAX_ROUNDS = 64


cdef inline int _block_rounds(const SdcaProblem* P, double work, int threads) noexcept nogil:
    """Merges a block pass of ``work`` nonzeros affords (0: the pass stays serial)."""
    cdef double per_entry = work / ((threads + 1) * (P.d + (P.bias != 0.0)))
    if not per_entry >= BLOCKS_MIN:
        return 0
    return <int>min(max(1.0, per_entry / BLOCKS_ROUND), <double>BLOCKS_MAX_ROUNDS)


cdef bint _blocks_setup(const floating* data, const index_t* indices, const index_t* indptr,
                        SdcaProblem* P, const SdcaOptions* opt, int threads,
                        OwnedPass* O) noexcept nogil:
    """Whether the passes run in ``threads`` threads in blocks (then O is ready): w small
    next to X, nearly orthogonal rows, and a step's curvature mostly the loss's (its
    conjugate's ``gamma / c_i`` at least ``||x_i||^2 / (lam n)``, measured: where the data's
    part dominates, steps on stale copies lose more epochs than the threads gain: reuters
    at C = 1, squared hinge 20 epochs against 11, logistic 8 against 8; logistic at C = 100
    65 against 33). Uses w as scratch."""
    cdef Py_ssize_t i
    cdef double gamma = loss_conj_strong_convexity(&P.loss), coupling = 0.0
    memset(O, 0, sizeof(OwnedPass))
    if not _threads_may_pass(indptr, P, opt, threads) or _block_rounds(P, indptr[P.n_rows],
                                                                       threads) < 1:
        return False
    for i in range(P.n):
        coupling = max(coupling, P.sqnorm[i] * _weight(P, i))
    if (not coupling / (P.lam * P.n) <= gamma
            or not _nearly_orthogonal(data, indices, indptr, P)
            or not _threads_alloc(O, P.n, threads)):
        return False
    O.blocks = 1
    # padded by a cache line: one copy's last entries never share a line with the next's
    O.stride = (P.d + (P.bias != 0.0) + 15) // 8 * 8
    O.copies = <double*>malloc(threads * O.stride * sizeof(double))
    if O.copies == NULL:
        _owned_free(O)
        return False
    return True


cdef inline void _barrier(OwnedPass* O, int t, long long phase) noexcept nogil:
    """Thread t waits until every thread of O's team has reached ``phase``."""
    cdef int u
    cdef bint all_there
    DS_STORE_RELEASE(&O.done[8 * t], phase)
    while True:
        all_there = True
        for u in range(O.threads):
            if DS_LOAD_ACQUIRE(&O.done[8 * u]) < phase:
                all_there = False
        if all_there:
            return
        DS_CPU_RELAX()


cdef void _block_share(const floating* data, const index_t* indices, const index_t* indptr,
                       SdcaProblem* P, const SdcaOptions* opt, double relax, OwnedPass* O,
                       int t, Py_ssize_t n_active, int rounds) noexcept nogil:
    """Thread t's slice of a block pass: each round, steps on its copy of w, then its range
    of the merge."""
    cdef int T = O.threads, u, r
    cdef Py_ssize_t lo = n_active * t // T, end = n_active * (t + 1) // T, k, i, nxt, j
    cdef Py_ssize_t hi = end, start, nnz, d = P.d, dw = P.d + (P.bias != 0.0)
    cdef Py_ssize_t* index = P.index
    cdef double* v = O.copies + t * O.stride
    cdef PassSums sums
    cdef PassSums* S = &sums
    cdef bint shrink = _shrinks(P, opt), estimate = opt.check_every != 1
    cdef bint exact_plain = P.step.rule == STEP_EXACT and P.weight == NULL
    cdef Py_ssize_t stride = 1 + n_active // 4096
    cdef double sigma = T, scale = T / (P.lam * P.n), bias = P.bias, offset = P.offset
    cdef double z, a, c, total, diff, spread, new_sq, spread_sq, drift = 0.0
    cdef double gamma = loss_conj_strong_convexity(&P.loss)
    cdef bint track = P.drift != INFINITY
    _sums_init(S)
    k = lo
    for r in range(rounds):
        memcpy(v, P.w, dw * sizeof(double))
        while k < lo + (hi - lo) * (r + 1) // rounds and k < end:
            if k + 2 < end:
                nxt = index[k + 2]
                prefetch_row(data + indptr[nxt], indices + indptr[nxt],
                             indptr[nxt + 1] - indptr[nxt])
            i = index[k]
            start = indptr[i]
            nnz = indptr[i + 1] - start
            z = _row_score(data + start, indices + start, nnz, v, d, bias, offset, S)
            if _row_update(P, i, i, z, shrink, estimate, stride, exact_plain, relax, scale,
                           S, &a):
                end -= 1
                index[k] = index[end]
                index[end] = i
                continue
            _note_gain(P, P.gain, i, i, a - P.alpha[i], scale, gamma, S)
            if a != P.alpha[i]:
                c = (a - P.alpha[i]) * scale        # sigma' times the step on w
                P.alpha[i] = a
                # v's rounding reaches w divided by sigma'
                drift += _row_step(data + start, indices + start, nnz, v, d, bias, c,
                                   P.sqnorm[i], track) / sigma
            k += 1
        _barrier(O, t, 2 * r + 1)   # every slice stepped before any entry of w moves
        new_sq, spread_sq = 0.0, 0.0
        for j in range(dw * t // T, dw * (t + 1) // T):
            total, spread = 0.0, 0.0
            for u in range(T):
                diff = O.copies[u * O.stride + j] - P.w[j]
                total += diff
                spread += fabs(diff)
            P.w[j] += total / sigma
            new_sq += P.w[j] * P.w[j]
            spread_sq += spread * spread
        # the merge rounds an entry by at most u (|new w_j| + (1 + 1/sigma') sum_u |v_u,j -
        # w_j|): the T differences and their sum (T u sum_u |...|, over sigma' = T), the
        # division, the last addition
        drift += _merge_drift(new_sq, spread_sq)
        if r + 1 < rounds:
            _barrier(O, t, 2 * r + 2)   # w merged before the next round copies it
    O.active[t] = end - lo
    O.sums[t] = sums
    O.sums[t].drift = drift if track else INFINITY


# ---------------------------------------------------------------------------------------
# focused passes (docs/sdca.md, "Focused passes")
#
# Late in a solve most of a pass's dual gain comes from few rows (IMDB, logistic, C = 100,
# epoch 7: 1% of the rows carry 93% of the squared residues): the rest are nearly
# optimal, and a pass over them buys little. So between two passes over the active set
# (which find the rows that moved, estimate the gap and shrink), passes over the rows whose
# last steps gained half of the last pass's gain, for as long as such a pass gains more
# per unit of work than the last whole pass did. Exact coordinate steps all: the dual
# rises at every step, and the certificate is the exact gap as before.

# focused rows a thread from which their passes run in threads (when the whole passes'
# do); measured on news20 and IMDB at C = 1 (their focused sets: 150-9000 rows), 128 was
# a little faster than 512, 1000 (OWNED_MIN_ROWS) or one thread (docs/benchmarks.md)
cdef Py_ssize_t FOCUS_MIN_ROWS = 128

cdef Py_ssize_t _focus_rows(const index_t* indptr, const SdcaProblem* P, double share,
                            Py_ssize_t* rows, double* work) noexcept nogil:
    """focus_select's coordinates (CSR rows) into rows; their work (nnz + 16 each) into
    work."""
    cdef Py_ssize_t count = focus_select(P.gain, NULL, P.n, share, rows), r, i
    work[0] = 0.0
    for r in range(count):
        i = rows[r]
        work[0] += indptr[i + 1] - indptr[i] + 16
    return count


cdef double _focused_passes(const floating* data, const index_t* indices,
                            const index_t* indptr, SdcaProblem* P, const SdcaOptions* opt,
                            double relax, OwnedPass* O, Py_ssize_t* rows,
                            SdcaResult* res, epoch_hook hook, void* ctx,
                            int* stop) noexcept nogil:
    """Passes over the focused rows (_focus_rows of opt.focus) before a pass over the
    active set, each a fresh permutation, while the last one gained more per unit of work
    than the last pass over the active set and the next keeps the work within
    opt.focus_work of that pass's; passes counted into ``res``. ``O`` not NULL: the
    passes run in its threads as the whole passes do (feature-owned, or blocks where the
    focused rows' work affords a merge) when there are FOCUS_MIN_ROWS rows a thread.
    The hook is polled after each pass (epoch -1: Ctrl-C; an epoch holds up to
    1 + focus_work passes' work), its request to stop left in ``stop``. Returns their
    work."""
    cdef double work, done = 0.0, rate = P.pass_gain / P.pass_cost
    cdef Py_ssize_t n_rows
    cdef Py_ssize_t* active = P.index
    cdef Py_ssize_t n_active = P.n_active
    cdef SdcaOptions o = opt[0]
    cdef PassSums S
    cdef int rounds = 0
    if not rate > 0.0:
        return 0.0
    n_rows = _focus_rows(indptr, P, opt.focus, rows, &work)
    if O != NULL and n_rows >= FOCUS_MIN_ROWS * O.threads:
        rounds = 0 if not O.blocks else _block_rounds(P, work, O.threads)
        if O.blocks and rounds < 1:
            O = NULL
    else:
        O = NULL
    o.shrinking = 0         # the active set is the whole passes' to shrink
    o.check_every = 1       # and so is the gap estimate
    P.index = rows
    P.n_active = n_rows
    while n_rows > 0 and done + work <= opt.focus_work * P.pass_cost:
        _sums_init(&S)
        if O != NULL:
            rng_shuffle(&P.rng, rows, n_rows)
            if _threads_segment(data, indices, indptr, P, &o, relax, O, 0, n_rows, n_rows,
                                rounds, &S) >= 0:
                P.drift += S.drift
                res.threaded_focused_passes += 1
            else:
                O = NULL        # the team came out smaller: one thread from here on
        if O == NULL:
            _epoch_steps(data, indices, indptr, P, &o, relax, True, 0, n_rows, &S)
        done += S.cost
        res.focused_passes += 1
        if hook != NULL:
            stop[0] = hook(ctx, -1, NULL)
            if stop[0] != 0:
                break
        if not S.gain > rate * S.cost:
            break
    P.index = active
    P.n_active = n_active
    return done


# an epoch merges passes only under half a whole pass's work: text's squared hinge keeps
# 60-70% of its rows, and merging those passes too moved its checks and focused passes
# (IMDB, C = 10^4: 1.18x the time; hinge on a9a, ~1%, is what merging is for)
cdef double PASS_AGAIN_BELOW = 0.5


cdef int sdca_run(const floating* data, const index_t* indices, const index_t* indptr,
                  SdcaProblem* P, const SdcaOptions* opt, SdcaResult* res,
                  epoch_hook hook, void* ctx) noexcept nogil:
    """Solve to ``gap_certifies`` (status.pxd: gap <= tol * D, or the rounding floor of
    P(0); never for tol = 0) or ``max_epochs``; returns ``res.status``."""
    cdef Py_ssize_t i, epoch, p
    cdef double primal, dual, gap, p0 = 0.0, target, floor, estimate, predicted = NAN, relax
    cdef double raw_gap, slack
    # work model (deterministic: the schedule must not depend on timing, since with
    # shrinking it changes the iterates): a row costs its nonzeros plus a constant
    cdef CheckSchedule sched
    schedule_init(&sched, opt.check_every,
                  <double>indptr[P.n_rows] * P.n / P.n_rows + 16.0 * P.n)
    cdef bint checked, certify, cold = True
    cdef double values[SDCA_HOOK_VALUES]
    cdef int threads = opt.n_threads if opt.n_threads > 1 else 1
    cdef OwnedPass owned
    cdef OwnedPass* synced = NULL    # &owned once set up: the resyncs run in its threads
    cdef bint threaded = False
    cdef double* kept = NULL         # alpha at the last check of threaded passes
    cdef double kept_dual = -INFINITY, kept_gap = INFINITY
    cdef PassClock clock             # the feature-owned pass: threads only where they pay
    cdef bint timed = False
    cdef int how, ran
    cdef double started, focus_cost, epoch_cost
    cdef Py_ssize_t* focus_rows = NULL
    cdef int stop = 0
    res.focused_passes = 0
    res.threaded_focused_passes = 0
    P.gain = NULL
    if (opt.focus > 0.0 and P.point == NULL and P.n == P.n_rows
            and opt.sampling == SAMPLE_PERMUTATION):
        P.gain = <double*>calloc(P.n, sizeof(double))
        focus_rows = <Py_ssize_t*>malloc(P.n * sizeof(Py_ssize_t))
        if P.gain == NULL or focus_rows == NULL:     # (then plain passes)
            free(P.gain)
            free(focus_rows)
            P.gain, focus_rows = NULL, NULL
    for i in range(P.n):
        if P.alpha[i] != 0.0:
            cold = False
    # the rows' norms plus bias^2; norms not given (C API callers; mixed points must give
    # them) are one pass over X, in the solve's threads
    for p in prange(P.n_points, num_threads=threads, schedule="static"):
        if not P.sqnorm_given:
            P.sqnorm[p] = sparse_sqnorm(data + indptr[p], indptr[p + 1] - indptr[p])
        P.sqnorm[p] += P.bias * P.bias
    res.threaded_epochs = 0
    res.threads_vs_one = NAN
    if threads > 1 and (_owned_setup(data, indices, indptr, P, opt, threads, &owned)
                        or _blocks_setup(data, indices, indptr, P, opt, threads, &owned)):
        kept = <double*>malloc(P.n * sizeof(double))
        threaded = kept != NULL
        if threaded:
            synced = &owned
            timed = not owned.blocks      # (the block pass stays reproducible: untimed)
            _clock_init(&clock)
        else:
            _owned_free(&owned)
    for i in range(P.n):
        P.index[i] = i
        p0 += _weight(P, i) * loss_value(&P.loss, 0.0, P.y[i])
    p0 /= P.n
    P.n_active = P.n
    P.pg_max_old = INFINITY
    P.pg_min_old = -INFINITY
    P.shrunk_gap = 0.0
    P.pass_gain = 0.0
    rng_seed(&P.rng, opt.seed)
    # tol = 0 runs the whole budget (gap_certifies never holds for it)
    floor = gap_floor(p0)
    res.p0 = p0
    res.status = STATUS_MAX_EPOCHS

    if cold:
        _zero_start(P, &primal, &dual, &gap)
    else:
        _resync_with(data, indices, indptr, P, synced)
        dual = _dual_value(P) if not opt.check_start else 0.0
        if dual > 0.0:          # the schedule's target from D alone; the gap is unknown
            primal, gap = NAN, NAN
        else:
            _check(data, indices, indptr, P, &primal, &dual, &gap, threads)
    epoch = 0
    if gap_certifies(gap, primal - gap, opt.tol, floor):
        res.status = STATUS_CONVERGED
    target = schedule_target(primal, dual, opt.tol, floor)
    if threaded:
        memcpy(kept, P.alpha, P.n * sizeof(double))
        kept_dual = dual if dual == dual else -INFINITY
        kept_gap = gap if gap == gap else INFINITY
    if hook != NULL:
        values[0], values[1], values[2], values[3] = primal, dual, gap, NAN
        values[4] = <double>P.n_active
        res.status = report_epoch(hook, ctx, 0, values, res.status)
    # over-relaxation only for exact steps on a quadratic conjugate, after relax_after epochs
    cdef bint relaxes = (opt.relaxation != 1.0 and P.step.rule == STEP_EXACT
                         and loss_conj_quadratic(&P.loss))
    while res.status == STATUS_MAX_EPOCHS and epoch < opt.max_epochs:
        epoch += 1
        relax = opt.relaxation if relaxes and epoch > opt.relax_after else 1.0
        # once shrinking has left few rows (a9a, hinge, class weights "balanced": ~130 of
        # 32,561), an epoch is several passes over them (schedule_pass_again)
        epoch_cost = 0.0
        while True:
            # (in threads where the whole passes' threads pay: the clock's last verdict)
            focus_cost = 0.0 if P.gain == NULL else _focused_passes(
                data, indices, indptr, P, opt, relax,
                &owned if threaded and (not timed or _clock_pays(&clock)) else NULL,
                focus_rows, res, hook, ctx, &stop)
            if stop != 0:
                break
            how = CLOCK_SERIAL if not threaded else (_clock_next(&clock) if timed
                                                     else CLOCK_THREADS)
            started = DS_WTIME()
            ran = PASS_NONE if how == CLOCK_SERIAL else _epoch_threads(
                data, indices, indptr, P, opt, relax, &owned, epoch,
                &clock if how == CLOCK_PROBE else NULL)
            if ran == PASS_THREADS:
                res.threaded_epochs += 1
            elif ran == PASS_NONE:
                _epoch(data, indices, indptr, P, opt, relax)
            if how == CLOCK_THREADS and ran == PASS_THREADS and timed:
                # (against the last probe's serial rate: compared in the same minute)
                clock.threaded = _rate(DS_WTIME() - started, P.pass_cost)
            epoch_cost += P.pass_cost + focus_cost
            estimate = NAN if opt.check_every == 1 else (P.pass_gap + P.shrunk_gap) / P.n
            if not schedule_pass_again(&sched, P.pass_cost, epoch_cost, estimate, target,
                                       PASS_AGAIN_BELOW):
                break
        if stop != 0:       # a poll asked to stop (Ctrl-C): no pass, check or report
            res.status = stop
            break
        checked = schedule_check_now(&sched, epoch, opt.max_epochs, estimate,
                                     epoch_cost, target, &predicted)
        if checked:
            # a check expected to succeed resyncs first and certifies in one go, unless the
            # drift is tracked: then the incremental w is certified as it is (the drift's
            # slack is ~1e-13 of the gap's scale), and a resync only follows a check that
            # the slack alone kept from certifying
            certify = epoch == opt.max_epochs or (opt.check_every != 1 and predicted <= target)
            if certify and P.drift == INFINITY:
                _resync_with(data, indices, indptr, P, synced)
            _check(data, indices, indptr, P, &primal, &dual, &gap, threads)
            raw_gap = gap
            slack = _drift_slack(P)
            if slack != INFINITY:   # a rigorous gap of the incremental w (0 after a resync)
                dual -= slack
                gap += slack
            if threaded:
                if not (dual >= kept_dual - 1e-9 * fabs(kept_dual)) or primal != primal:
                    # stale scores overshot: back to the last check (every row active
                    # again: the shrinking was decided on the undone iterates), serial
                    # from here on
                    memcpy(P.alpha, kept, P.n * sizeof(double))
                    threaded = False
                    P.n_active = P.n
                    P.pg_max_old = INFINITY
                    P.pg_min_old = -INFINITY
                    _resync_with(data, indices, indptr, P, synced)
                    _check(data, indices, indptr, P, &primal, &dual, &gap, threads)
                else:
                    # a gap not halved since the last check: the stale scores stall
                    threaded = not (gap > 0.5 * kept_gap)
                    memcpy(kept, P.alpha, P.n * sizeof(double))
                    kept_dual = dual
                    kept_gap = gap
            if ((slack == INFINITY or not gap_certifies(gap, primal - gap, opt.tol, floor))
                    and P.drift != 0.0
                    and (gap_certifies(raw_gap, primal - raw_gap, opt.tol, floor)
                         or (slack != INFINITY and slack >= raw_gap))):
                # the drift (untracked, or its slack: at an optimum of 0 only w from alpha
                # has a gap of 0) is what stands in the way: w from alpha, the exact gap
                _resync_with(data, indices, indptr, P, synced)
                _check(data, indices, indptr, P, &primal, &dual, &gap, threads)
            if P.drift == 0.0 or slack != INFINITY:
                if gap_certifies(gap, primal - gap, opt.tol, floor):
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
    if timed:
        res.threads_vs_one = clock.threaded / clock.serial
    if kept != NULL:
        _owned_free(&owned)
        free(kept)
    free(P.gain)
    free(focus_rows)
    P.gain = NULL
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
    P.gain = NULL                   # (no focused passes)
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


cdef double sdca_polished_dual(const floating* data, const index_t* indices,
                               const index_t* indptr, SdcaProblem* P, Py_ssize_t epochs,
                               uint64_t seed) noexcept nogil:
    _resync(data, indices, indptr, P)
    sdca_local_passes(data, indices, indptr, P, <double>epochs, seed)
    # less the incremental w's rounding, bounded (the passes track it from the resync's 0)
    return _dual_value(P) - _drift_slack(P)


# ---------------------------------------------------------------------------------------
# the engine's Python entry (train_sdca, the mixup family): history, verbose lines, callback
# and Ctrl-C through the monitor ``mon`` (dualsolve._monitor.EpochMonitor)


#: SdcaOptions.focus by default (train_sdca's ``focus``)
DEFAULT_FOCUS = sdca_default_options().focus


def solve(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
          Py_ssize_t n_features, const double[::1] y, str loss, double param, double lam,
          double bias, double[::1] w, double[::1] alpha, double tol, Py_ssize_t max_epochs,
          Py_ssize_t check_every, bint shrinking, int sampling, unsigned long long seed,
          mon, sqnorm=None, point=None, weight=None, mix=None, int step_rule=STEP_EXACT,
          double step_gamma=0.0, int approx_tight=1, int paper_gamma=0, grid=None,
          double offset=0.0, int n_threads=1, scores=None, bint check_start=True,
          double relaxation=1.0, Py_ssize_t relax_after=0, dict stats=None,
          bint rows_sorted=False, double focus=-1.0):
    """Run sdca_run on validated arrays (w and alpha are written in place), reporting
    every epoch to ``mon`` (which must expect SDCA_HOOK_VALUES values).

    The optional arguments are the mixup generalisations (all arrays float64 / intp,
    C-contiguous): ``point`` (coordinate -> point), ``weight`` (per coordinate), ``mix``
    = (a, b, r) for points beyond the CSR rows (then ``sqnorm`` of every point is required),
    the step rule and its constant, and ``grid`` = (b_lo, b_hi) for STEP_APPROX;
    ``offset``, a fixed intercept added to every score (train_sdca's free intercept);
    ``n_threads``, ``check_start``, ``relaxation`` and ``relax_after`` (see SdcaOptions);
    ``scores``, a float64 array of n that receives the scores of the last exact check
    (after convergence: X w + offset at the returned w); ``stats``, a dict that receives
    ``threaded_epochs`` (passes run in threads), ``threads_vs_one`` (SdcaResult's, None
    for NAN), ``focused_passes`` and ``threaded_focused_passes``; ``focus``,
    SdcaOptions.focus (negative: its default, DEFAULT_FOCUS); ``rows_sorted``, that every
    row's indices strictly increase (the validation found it; spares the threaded pass its
    own check).
    Returns (status, n_epochs, primal, dual, gap, p0).
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
    P.rows_sorted = rows_sorted
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
    if focus >= 0.0:
        opt.focus = focus
    with nogil:
        sdca_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, python_hook, <void*>mon)
    if stats is not None:
        stats["threaded_epochs"] = res.threaded_epochs
        stats["threads_vs_one"] = (float(res.threads_vs_one)
                                   if np.isfinite(res.threads_vs_one) else None)
        stats["focused_passes"] = res.focused_passes
        stats["threaded_focused_passes"] = res.threaded_focused_passes
    return (res.status, res.n_epochs, res.primal, res.dual, res.gap, res.p0)
