# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Crammer-Singer multi-class SVM by exact dual coordinate ascent, one row (k variables) at a
time (Keerthi et al. 2008, "A sequential dual method for large scale multi-class linear
SVMs"; liblinear ``-s 4``). The problem, the layouts and the status are in the .pxd.

Row i's variables a_i (k of them) maximise the dual with the other rows fixed: with
``q = ||x_i||^2 / (lam n)`` and ``G_m = w_m.x_i + e_{y m}``, the step minimises
``(q/2) ||a' - a_i||^2 + <a' - a_i, G>`` over ``{a'_m <= C_m, sum_m a'_m = 0}`` (``C_y = c_i``,
``C_m = 0`` otherwise), a Euclidean projection whose KKT conditions read
``a'_m = C_m - max(0, v_m - beta) / q`` with ``v_m = G_m - q a_m + q C_m`` and ``beta`` the
root of ``sum_m max(0, v_m - beta) = q c_i``: sort v in decreasing order; beta is
``(v_(1) + ... + v_(r) - q c_i) / r`` for the largest r whose v_(r) lies above it.

Shrinking (``opt.shrinking``; liblinear's idea, a row-level rule): the row's feasible set is
a scaled simplex whose vertices are ``a_i = 0`` and ``a_{iy} = c_i, a_{im} = -c_i`` (one class
m); a row at a vertex whose class ``v`` (y at 0, m at the other) leads every other ``G_j`` by
more than the largest KKT violation seen in the previous pass is dropped from the active
rows. Such a row's Fenchel-Young gap is exactly 0. Every exact check recomputes all the
scores (shrunk rows included: the certificate covers every row) and re-activates the shrunk
rows whose class no longer strictly leads.

The pass also sees, before each step, the row's Fenchel-Young gap
``c_i max_m G_m - c_i G_y + <a_i, G>`` (its share of n times the duality gap), whose mean
predicts the gap and schedules the exact checks (``dualsolve.sdca.schedule``).
"""
from cython.parallel cimport prange
from libc.math cimport INFINITY, NAN
from libc.stdlib cimport calloc, malloc, free, qsort
from libc.string cimport memset, memcpy

import numpy as np

from dualsolve._core.hooks cimport python_hook
from dualsolve._core.ksum cimport KahanSum, ksum_new, ksum_add, ksum_value
from dualsolve._core.status cimport (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_NO_MEMORY,
                                     report_epoch, gap_certifies, gap_floor)
from dualsolve._core.csr cimport floating, index_t, sparse_sqnorm
from dualsolve._core.rng cimport rng_state, rng_seed, rng_below, rng_shuffle
from dualsolve._core.buffers cimport double_ptr
from dualsolve._core.blocks cimport BLOCKS_MIN_NNZ, CHECK_SLICES
from dualsolve._core.feature_ranges cimport feature_ranges
from dualsolve.sdca.focus cimport focus_default_share, focus_default_work, focus_select
from dualsolve.sdca.schedule cimport (CheckSchedule, schedule_init, schedule_check_now,
                                      schedule_checked, schedule_pass_again,
                                      schedule_target)


cdef CsOptions cs_default_options() noexcept nogil:
    cdef CsOptions o
    o.tol = 1e-6
    o.max_epochs = 5000
    o.check_every = 0
    o.sampling = CS_SAMPLE_PERMUTATION
    o.shrinking = 1
    o.seed = 0
    o.poll_work = 1 << 24
    o.focus = focus_default_share()
    o.focus_work = focus_default_work()
    o.n_threads = 1
    return o


cdef int _descending(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*>a)[0], y = (<const double*>b)[0]
    return -1 if x > y else (1 if x < y else 0)


# a row's few active classes are sorted in place: glibc's qsort (a merge sort through
# a comparison function) took 12% of letter's time at C = 0.1, with 2-5 classes a step
cdef enum:
    SORT_BY_INSERTION = 32


cdef inline void _insertion_descending(double* v, Py_ssize_t k) noexcept nogil:
    cdef Py_ssize_t i, j
    cdef double x
    for i in range(1, k):
        x = v[i]
        j = i - 1
        while j >= 0 and v[j] < x:
            v[j + 1] = v[j]
            j -= 1
        v[j + 1] = x


cdef void cs_subproblem(const double* G, const double* a, double q, Py_ssize_t y, double c,
                        Py_ssize_t k, double* a_new, double* v) noexcept nogil:
    cdef Py_ssize_t m, r
    cdef double beta, s
    for m in range(k):
        v[m] = G[m] - q * a[m]
    if y >= 0:
        v[y] += q * c
    memcpy(a_new, v, k * sizeof(double))      # a_new holds v until the end
    if k <= SORT_BY_INSERTION:
        _insertion_descending(v, k)
    else:
        qsort(v, k, sizeof(double), _descending)
    # r = 1 always qualifies (v_(1) - (v_(1) - q c) = q c > 0); the condition
    # v_(r) > (v_(1) + ... + v_(r) - q c) / r holds for r = 1..rho and fails after
    s = v[0]
    beta = s - q * c
    r = 1
    while r < k:
        if v[r] * (r + 1) <= s + v[r] - q * c:
            break
        s += v[r]
        r += 1
        beta = (s - q * c) / r
    for m in range(k):
        s = a_new[m] - beta
        a_new[m] = (c if m == y else 0.0) - (s / q if s > 0.0 else 0.0)


ctypedef struct _Work:
    double* sqnorm            # n: ||x_i||^2 + bias^2
    Py_ssize_t* index         # n: the row order; active rows in [0, n_active)
    unsigned char* leads      # n: at the last check, the row's vertex class strictly led
    Py_ssize_t n_active
    double viol_old           # largest KKT violation of the previous pass (shrinking threshold)
    double* G                 # k: scores plus margins of the row
    double* a_new             # k
    double* v                 # k (sort buffer)
    double* dval              # k: nonzero steps of the row, times 1/(lam n)
    Py_ssize_t* dind          # k: their classes
    rng_state rng
    double pass_gap           # sum of the Fenchel-Young gaps seen during the last pass
    Py_ssize_t visits         # rows visited by the last pass
    double pass_cost          # its work (multiply-adds, model)
    double pass_gain          # the sum of its steps' gains (q ||a_new - a_old||^2 / 2)
    double* gain              # n: each row's last gain (NULL: no focused passes)
    Py_ssize_t since_poll     # work since the last poll of the hook
    Py_ssize_t* rows          # n: the focused rows (with gain)
    Py_ssize_t* cls           # n x k: each row's classes, its active ones first (shrinking)
    Py_ssize_t* n_cls         # n: each row's active classes (k: all; NULL: no class shrinking)
    double* Gs                # k: the active classes' scores plus margins, gathered
    double* as_               # k: and their variables
    Py_ssize_t shrunk_classes # classes taken out of their rows' steps so far


cdef inline void _scores(const floating* data, const index_t* ind, Py_ssize_t nnz,
                         const double* w, Py_ssize_t k, double bias, Py_ssize_t d,
                         double* z) noexcept nogil:
    """z[m] = w_m.x (+ bias w_m[d]) for every class m: k consecutive weights per nonzero."""
    cdef Py_ssize_t t, m
    cdef const double* wp
    cdef double x
    for m in range(k):
        z[m] = 0.0
    for t in range(nnz):
        x = data[t]
        wp = w + <Py_ssize_t>ind[t] * k
        for m in range(k):
            z[m] += x * wp[m]
    if bias != 0.0:
        wp = w + d * k
        for m in range(k):
            z[m] += bias * wp[m]


cdef inline void _scores_of(const floating* data, const index_t* ind, Py_ssize_t nnz,
                            const double* w, Py_ssize_t k, double bias, Py_ssize_t d,
                            const Py_ssize_t* L, Py_ssize_t na, double* z) noexcept nogil:
    """z[L[j]] = w_{L[j]}.x (+ bias w_{L[j]}[d]) for the na classes L[:na] only."""
    cdef Py_ssize_t t, j
    cdef const double* wp
    cdef double x
    for j in range(na):
        z[L[j]] = 0.0
    for t in range(nnz):
        x = data[t]
        wp = w + <Py_ssize_t>ind[t] * k
        for j in range(na):
            z[L[j]] += x * wp[L[j]]
    if bias != 0.0:
        wp = w + d * k
        for j in range(na):
            z[L[j]] += bias * wp[L[j]]


cdef void _resync_features(const floating* data, const index_t* indices,
                          const index_t* indptr, CsProblem* P, Py_ssize_t j0,
                          Py_ssize_t j1) noexcept nogil:
    """The rows j0 <= j < j1 of w (features; j = d the bias's) from scratch: w_j = sum_i
    x_ij a_i / (lam n), each entry summed in row order, whatever the range. A range's
    rows of w are contiguous (feature-major), so threads on ranges share no cache line
    but at their ends."""
    cdef Py_ssize_t i, t, m, j, k = P.k, dw = P.d + (1 if P.bias != 0.0 else 0)
    cdef double scale = 1.0 / (P.lam * P.n), x
    cdef const double* ai
    cdef double* wp
    cdef bint nonzero, whole
    if j1 > dw:                     # (the last range's end, d + 1, without a bias)
        j1 = dw
    whole = j0 == 0 and j1 == dw
    if j1 > j0:
        memset(P.w + j0 * k, 0, (j1 - j0) * k * sizeof(double))
    for i in range(P.n):
        ai = P.alpha + i * k
        nonzero = False
        for m in range(k):
            if ai[m] != 0.0:
                nonzero = True
                break
        if not nonzero:
            continue
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            if not whole and (j < j0 or j >= j1):
                continue
            x = data[t] * scale
            wp = P.w + j * k
            for m in range(k):
                wp[m] += ai[m] * x
        if P.bias != 0.0 and j0 <= P.d < j1:
            wp = P.w + P.d * k
            x = P.bias * scale
            for m in range(k):
                wp[m] += ai[m] * x


cdef void _resync(const floating* data, const index_t* indices, const index_t* indptr,
                  CsProblem* P, const Py_ssize_t* cuts, int threads) noexcept nogil:
    """w = X^T alpha / (lam n), from scratch; with threads, thread t the features
    cuts[t] .. cuts[t + 1] (equal shares of the nonzeros): the serial w bit for bit."""
    cdef Py_ssize_t t
    if threads <= 1 or cuts == NULL:
        _resync_features(data, indices, indptr, P, 0, P.d + 1)
        return
    for t in prange(threads, num_threads=threads, schedule="static"):
        _resync_features(data, indices, indptr, P, cuts[t], cuts[t + 1])


cdef Py_ssize_t* _feature_cuts(const index_t* indices, const index_t* indptr, Py_ssize_t n,
                               Py_ssize_t d, int threads) noexcept nogil:
    """threads + 1 cuts of the features 0 .. d into ranges of about equal nonzeros
    (feature_ranges, the bias's d in the last range); NULL when out of memory."""
    cdef Py_ssize_t* cuts = <Py_ssize_t*>malloc((threads + 1) * sizeof(Py_ssize_t))
    if cuts == NULL or not feature_ranges(indices, indptr, n, indptr[n], d, threads, cuts):
        free(cuts)
        return NULL
    cuts[threads] = d + 1
    return cuts


cdef inline Py_ssize_t _vertex(const double* a, Py_ssize_t y, double c,
                               Py_ssize_t k) noexcept nogil:
    """The class v of the vertex the row is at (y for a = 0; m for a_y = c, a_m = -c), or -1."""
    cdef Py_ssize_t m, v = y
    if a[y] == 0.0:
        for m in range(k):
            if a[m] != 0.0:
                return -1
        return y
    if a[y] != c:
        return -1
    for m in range(k):
        if m != y and a[m] != 0.0:
            if a[m] != -c or v != y:
                return -1
            v = m
    return v if v != y else -1


cdef inline double _lead(const double* G, Py_ssize_t v, const Py_ssize_t* L,
                        Py_ssize_t na) noexcept nogil:
    """G_v - max_{m != v} G_m over the classes L[:na] (L NULL: the classes 0 .. na - 1)."""
    cdef Py_ssize_t j, m
    cdef double mx = -INFINITY
    for j in range(na):
        m = L[j] if L != NULL else j
        if m != v and G[m] > mx:
            mx = G[m]
    return G[v] - mx


cdef void _check_rows(const floating* data, const index_t* indices, const index_t* indptr,
                      CsProblem* P, _Work* S, Py_ssize_t lo, Py_ssize_t hi, double* z,
                      KahanSum* ls, KahanSum* ys) noexcept nogil:
    """Rows lo .. hi - 1 of _check: their losses into ls, their a_iy into ys, their
    ``leads`` (when rows are shrunk); z is work of k entries."""
    cdef Py_ssize_t i, m, y, v, k = P.k, start
    cdef double c, mx, t
    for i in range(lo, hi):
        c = P.weight[i] if P.weight != NULL else 1.0
        y = P.label[i]
        ksum_add(ys, P.alpha[i * k + y])
        if c == 0.0:
            continue
        start = indptr[i]
        _scores(data + start, indices + start, indptr[i + 1] - start, P.w, k, P.bias, P.d, z)
        mx = z[y]
        for m in range(k):
            if m != y:
                t = z[m] + 1.0
                if t > mx:
                    mx = t
        ksum_add(ls, c * (mx - z[y]))
        if S.n_active < P.n:
            for m in range(k):
                if m != y:
                    z[m] += 1.0
            v = _vertex(P.alpha + i * k, y, c, k)
            S.leads[i] = v >= 0 and _lead(z, v, NULL, k) > 0.0


cdef void _check(const floating* data, const index_t* indices, const index_t* indptr,
                 CsProblem* P, _Work* S, double* primal, double* dual, double* gap,
                 int threads) noexcept nogil:
    """Exact primal, dual and gap, every score recomputed, compensated sums; re-activates
    the shrunk rows whose vertex class no longer strictly leads. With threads, the rows
    and then the entries of w in CHECK_SLICES slices a thread, taken as the threads come
    free, their sums added in slice order (the binary loop's scheme, _sdca.pyx)."""
    cdef Py_ssize_t i, s, pos, k = P.k, dw = P.d + (1 if P.bias != 0.0 else 0)
    cdef Py_ssize_t slices = CHECK_SLICES * threads, size = dw * k, lo, hi
    cdef double loss_sum, ay_sum, wn
    cdef KahanSum ls = ksum_new(), ys = ksum_new(), ws = ksum_new()
    cdef KahanSum* parts = NULL
    cdef double* z = NULL
    if threads > 1:
        parts = <KahanSum*>malloc(3 * slices * sizeof(KahanSum))
        z = <double*>malloc(slices * k * sizeof(double))
    if parts == NULL or z == NULL:
        _check_rows(data, indices, indptr, P, S, 0, P.n, S.G, &ls, &ys)
        for i in range(size):
            ksum_add(&ws, P.w[i] * P.w[i])
    else:
        for s in prange(slices, num_threads=threads, schedule="dynamic"):
            parts[3 * s] = ksum_new()
            parts[3 * s + 1] = ksum_new()
            _check_rows(data, indices, indptr, P, S, P.n * s // slices,
                        P.n * (s + 1) // slices, z + s * k, &parts[3 * s], &parts[3 * s + 1])
        for s in prange(slices, num_threads=threads, schedule="dynamic"):
            parts[3 * s + 2] = ksum_new()
            lo = size * s // slices
            hi = size * (s + 1) // slices
            for i in range(lo, hi):
                ksum_add(&parts[3 * s + 2], P.w[i] * P.w[i])
        for s in range(slices):
            ksum_add(&ls, ksum_value(&parts[3 * s]))
            ksum_add(&ys, ksum_value(&parts[3 * s + 1]))
            ksum_add(&ws, ksum_value(&parts[3 * s + 2]))
    free(parts)
    free(z)
    if S.n_cls != NULL:             # every class of every row back in the passes
        for i in range(P.n):
            S.n_cls[i] = k
    pos = S.n_active
    while pos < P.n:
        i = S.index[pos]
        if not S.leads[i]:
            S.index[pos] = S.index[S.n_active]
            S.index[S.n_active] = i
            S.n_active += 1
        pos += 1
    loss_sum, ay_sum, wn = ksum_value(&ls), ksum_value(&ys), ksum_value(&ws)
    primal[0] = loss_sum / P.n + 0.5 * P.lam * wn
    dual[0] = ay_sum / P.n - 0.5 * P.lam * wn
    gap[0] = (loss_sum - ay_sum) / P.n + P.lam * wn


cdef int _epoch(const floating* data, const index_t* indices, const index_t* indptr,
                CsProblem* P, const CsOptions* opt, _Work* S,
                epoch_hook hook, void* ctx) noexcept nogil:
    """One pass of exact row steps; 0, or the status a poll of the hook asked to stop with."""
    cdef Py_ssize_t n = P.n, k = P.k, d = P.d
    cdef double* w = P.w
    cdef double* alpha = P.alpha
    cdef const double* weight = P.weight
    cdef const Py_ssize_t* label = P.label
    cdef double* G = S.G
    cdef double* dval = S.dval
    cdef Py_ssize_t* dind = S.dind
    cdef double bias = P.bias, scale = 1.0 / (P.lam * P.n)
    cdef bint permute = opt.sampling == CS_SAMPLE_PERMUTATION, shrink = opt.shrinking != 0
    cdef Py_ssize_t step = 0, pos = 0, n_active = S.n_active, i, m, r, y, v, nz, start, nnz, t
    cdef double c, q, gmax, gmin, ag, x, delta, pass_gap = 0.0, cost = 0.0, work
    cdef double moved, pass_gain = 0.0
    cdef double* gain = S.gain
    cdef Py_ssize_t* L
    cdef Py_ssize_t na, j, yj
    cdef bint y_in, drop
    cdef double viol_old = S.viol_old, viol_max = 0.0
    cdef double* ai
    cdef double* wp
    cdef int stop = 0
    S.visits = 0
    if permute:
        rng_shuffle(&S.rng, S.index, n_active)
    while True:
        if permute:
            if pos >= n_active:
                break
        else:
            if step >= n_active:
                break
            pos = <Py_ssize_t>rng_below(&S.rng, <unsigned long long>n_active)
        step += 1
        i = S.index[pos]
        pos += 1
        S.visits += 1
        c = weight[i] if weight != NULL else 1.0
        if c == 0.0:                # out of the problem: its variables stay 0
            continue
        y = label[i]
        start = indptr[i]
        nnz = indptr[i + 1] - start
        # the row's active classes L[:na] (every class without class shrinking); the
        # others sit at a_m = 0 and are left out of its scores and its step
        L = NULL if S.n_cls == NULL else S.cls + i * k
        na = k if L == NULL else S.n_cls[i]
        if na == k:
            _scores(data + start, indices + start, nnz, w, k, bias, d, G)
        else:
            _scores_of(data + start, indices + start, nnz, w, k, bias, d, L, na, G)
        ai = alpha + i * k
        gmax = -INFINITY
        gmin = INFINITY
        ag = 0.0
        y_in = False
        for j in range(na):
            m = L[j] if L != NULL else j
            if m != y:
                G[m] += 1.0
            else:
                y_in = True
            if G[m] > gmax:
                gmax = G[m]
            ag += ai[m] * G[m]
            if ai[m] < (c if m == y else 0.0) and G[m] < gmin:
                gmin = G[m]
        work = <double>na * (nnz + 2)
        cost += work
        S.since_poll += <Py_ssize_t>work
        if shrink:
            # strictly optimal at a vertex by more than last pass's violations?
            v = _vertex(ai, y, c, k)
            drop = v >= 0 and _lead(G, v, L, na) > viol_old
            if not drop and L != NULL:
                # a class at its bound (0; c for y) scoring below every class that could
                # rise cannot gain by falling: out of the row's steps until the next exact
                # check (liblinear's per-variable shrinking; the rest keep their sum)
                j = na - 1
                while j >= 0:
                    m = L[j]
                    if ai[m] == (c if m == y else 0.0) and G[m] < gmin:
                        na -= 1
                        L[j] = L[na]
                        L[na] = m
                        S.shrunk_classes += 1
                    j -= 1
                S.n_cls[i] = na
                # with one class left the row cannot move (its sum is fixed; liblinear
                # drops such an instance): it is at a vertex, or within rounding of one
                # (a step's -c is q c / q), which _vertex does not accept
                drop = na <= 1
            if drop:
                # out of the active rows until a check (swap to the end of the active
                # rows; this position is visited again)
                if gain != NULL:
                    gain[i] = 0.0
                pos -= 1
                n_active -= 1
                S.index[pos] = S.index[n_active]
                S.index[n_active] = i
                continue
        # (a shrunk y sits at a_y = c, where its score cancels out of the row's gap)
        pass_gap += c * (gmax - G[y]) + ag if y_in else c * gmax + ag
        if gmax <= gmin:            # KKT: no feasible direction improves the row
            if gain != NULL:
                gain[i] = 0.0
            continue
        if gmax - gmin > viol_max:
            viol_max = gmax - gmin
        q = S.sqnorm[i] * scale
        if q <= 0.0:
            # an empty row (no bias): the dual is linear in a_i, maximal at a_y = c; its
            # score is 0 whatever W, so spread the rest evenly
            for m in range(k):
                ai[m] = c if m == y else -c / (k - 1)
            if gain != NULL:
                gain[i] = 0.0
            if L != NULL:
                S.n_cls[i] = k
            continue
        if L == NULL:
            cs_subproblem(G, ai, q, y, c, k, S.a_new, S.v)
        else:                       # the sub-problem of the active classes, gathered
            yj = -1                 # (y shrunk: the active classes sum to -c)
            for j in range(na):
                S.Gs[j] = G[L[j]]
                S.as_[j] = ai[L[j]]
                if L[j] == y:
                    yj = j
            cs_subproblem(S.Gs, S.as_, q, yj, c, na, S.a_new, S.v)
        nz = 0
        moved = 0.0
        for j in range(na):
            m = L[j] if L != NULL else j
            delta = S.a_new[j] - ai[m]
            if delta != 0.0:
                ai[m] = S.a_new[j]
                dind[nz] = m
                dval[nz] = delta * scale
                nz += 1
                moved += delta * delta
        if gain != NULL:
            gain[i] = 0.5 * q * moved
            pass_gain += gain[i]
        for t in range(start, start + nnz):
            x = data[t]
            wp = w + <Py_ssize_t>indices[t] * k
            for r in range(nz):
                wp[dind[r]] += dval[r] * x
        if bias != 0.0:
            wp = w + d * k
            for r in range(nz):
                wp[dind[r]] += dval[r] * bias
        work = <double>nz * (nnz + 1) + 4.0 * na
        cost += work
        S.since_poll += <Py_ssize_t>work
        if hook != NULL and S.since_poll >= opt.poll_work:
            S.since_poll = 0
            stop = hook(ctx, -1, NULL)
            if stop != 0:
                break
    S.pass_gap = pass_gap
    S.pass_cost = cost
    S.pass_gain = pass_gain
    S.n_active = n_active
    # shrink next pass only against this pass's largest violation (liblinear's thresholds)
    S.viol_old = viol_max if viol_max > 0.0 else INFINITY
    return stop


cdef int _focused_passes(const floating* data, const index_t* indices,
                         const index_t* indptr, CsProblem* P, const CsOptions* opt,
                         _Work* S, Py_ssize_t* rows, CsResult* res, double* done,
                         epoch_hook hook, void* ctx) noexcept nogil:
    """Passes over the focused rows (focus_select of opt.focus) before a pass over the
    active rows, each a fresh permutation, while the last one gained more per unit of work
    than the last pass over the active rows and the work stays within opt.focus_work of
    that pass's; passes counted into ``res``, their work into ``done``. They shrink nothing
    and leave the active set, its thresholds and the pass estimate to the whole passes.
    Returns 0, or the status a poll of the hook asked to stop with."""
    cdef double rate = S.pass_gain / S.pass_cost, cost = S.pass_cost, work = 0.0
    cdef Py_ssize_t n_rows, r, i
    cdef Py_ssize_t* active = S.index
    cdef Py_ssize_t n_active = S.n_active, visits = S.visits
    cdef double pass_gap = S.pass_gap, pass_gain = S.pass_gain, viol_old = S.viol_old
    cdef CsOptions o = opt[0]
    cdef int stop = 0
    done[0] = 0.0
    if not rate > 0.0:
        return 0
    # (a row leaving the active rows has its gain zeroed: only active rows can be chosen)
    n_rows = focus_select(S.gain, S.index, S.n_active, opt.focus, rows)
    for r in range(n_rows):     # the work model of _epoch's scores (the active classes)
        i = rows[r]
        work += (<double>(P.k if S.n_cls == NULL else S.n_cls[i])
                 * (indptr[i + 1] - indptr[i] + 2))
    o.shrinking = 0
    S.index = rows
    S.n_active = n_rows
    while n_rows > 0 and done[0] + work <= opt.focus_work * cost:
        stop = _epoch(data, indices, indptr, P, &o, S, hook, ctx)
        done[0] += S.pass_cost
        res.focused_passes += 1
        if stop != 0 or not S.pass_gain > rate * S.pass_cost:
            break
    S.index = active
    S.n_active = n_active
    S.visits = visits
    S.pass_gap = pass_gap
    S.pass_gain = pass_gain
    S.pass_cost = cost
    S.viol_old = viol_old
    return stop


cdef void _free_work(_Work* S) noexcept nogil:
    free(S.sqnorm)
    free(S.index)
    free(S.leads)
    free(S.G)
    free(S.a_new)
    free(S.v)
    free(S.dval)
    free(S.dind)
    free(S.gain)
    free(S.rows)
    free(S.cls)
    free(S.n_cls)
    free(S.Gs)
    free(S.as_)


cdef int cs_run(const floating* data, const index_t* indices, const index_t* indptr,
                CsProblem* P, const CsOptions* opt, CsResult* res,
                epoch_hook hook, void* ctx) noexcept nogil:
    """Solve to ``gap_certifies`` (status.pxd: gap <= tol * D, or the rounding floor of
    P(0); never for tol = 0) or ``max_epochs``; returns ``res.status``."""
    cdef Py_ssize_t i, m, epoch, n = P.n, k = P.k, nn = P.n if P.n > 0 else 1
    cdef double primal = NAN, dual = NAN, gap = NAN, p0 = 0.0, target, floor, estimate
    cdef double predicted = NAN, check_cost = 0.0, c, focus_cost, epoch_cost
    cdef CheckSchedule sched
    cdef bint checked, certify, cold = True
    cdef int stop, threads
    cdef Py_ssize_t* cuts = NULL
    cdef double values[CS_HOOK_VALUES]
    cdef _Work S
    res.n_epochs = 0
    res.primal = NAN
    res.dual = NAN
    res.gap = NAN
    res.p0 = NAN
    res.focused_passes = 0
    res.shrunk_classes = 0
    S.gain, S.rows = NULL, NULL
    S.cls, S.n_cls, S.Gs, S.as_ = NULL, NULL, NULL, NULL
    S.shrunk_classes = 0
    S.sqnorm = <double*>malloc(nn * sizeof(double))
    S.index = <Py_ssize_t*>malloc(nn * sizeof(Py_ssize_t))
    S.leads = <unsigned char*>malloc(nn * sizeof(unsigned char))
    S.G = <double*>malloc(k * sizeof(double))
    S.a_new = <double*>malloc(k * sizeof(double))
    S.v = <double*>malloc(k * sizeof(double))
    S.dval = <double*>malloc(k * sizeof(double))
    S.dind = <Py_ssize_t*>malloc(k * sizeof(Py_ssize_t))
    if (S.sqnorm == NULL or S.index == NULL or S.leads == NULL or S.G == NULL or S.a_new == NULL or S.v == NULL
            or S.dval == NULL or S.dind == NULL):
        _free_work(&S)
        res.status = STATUS_NO_MEMORY
        return res.status
    if opt.shrinking:
        S.cls = <Py_ssize_t*>malloc(nn * k * sizeof(Py_ssize_t))
        S.n_cls = <Py_ssize_t*>malloc(nn * sizeof(Py_ssize_t))
        S.Gs = <double*>malloc(k * sizeof(double))
        S.as_ = <double*>malloc(k * sizeof(double))
        if S.cls == NULL or S.n_cls == NULL or S.Gs == NULL or S.as_ == NULL:
            free(S.cls)             # (then every class in every step)
            free(S.n_cls)
            free(S.Gs)
            free(S.as_)
            S.cls, S.n_cls, S.Gs, S.as_ = NULL, NULL, NULL, NULL
        else:
            for i in range(n):
                S.n_cls[i] = k
                for m in range(k):
                    S.cls[i * k + m] = m
    if opt.focus > 0.0 and opt.sampling == CS_SAMPLE_PERMUTATION:
        S.gain = <double*>calloc(nn, sizeof(double))
        S.rows = <Py_ssize_t*>malloc(nn * sizeof(Py_ssize_t))
        if S.gain == NULL or S.rows == NULL:        # (then plain passes)
            free(S.gain)
            free(S.rows)
            S.gain, S.rows = NULL, NULL
    for i in range(n):
        S.sqnorm[i] = sparse_sqnorm(data + indptr[i], indptr[i + 1] - indptr[i]) \
            + P.bias * P.bias
        S.index[i] = i
        c = P.weight[i] if P.weight != NULL else 1.0
        p0 += c
        check_cost += <double>k * (indptr[i + 1] - indptr[i] + 2)
        for m in range(k):
            if P.alpha[i * k + m] != 0.0:
                cold = False
    p0 /= n
    # the checks and resyncs in threads on k nnz(X) of at least BLOCKS_MIN_NNZ (below, a
    # pass takes well under a millisecond; the passes themselves stay on one thread)
    threads = opt.n_threads if opt.n_threads > 1 and check_cost >= BLOCKS_MIN_NNZ else 1
    cuts = NULL if threads <= 1 else _feature_cuts(indices, indptr, n, P.d, threads)
    S.since_poll = 0
    S.n_active = n
    S.viol_old = INFINITY
    S.pass_gain, S.pass_cost = 0.0, 0.0
    rng_seed(&S.rng, opt.seed)
    schedule_init(&sched, opt.check_every, check_cost)
    # tol = 0 runs the whole budget (gap_certifies never holds for it)
    floor = gap_floor(p0)
    res.p0 = p0
    res.status = STATUS_MAX_EPOCHS

    if cold:                        # W = 0: every row's max is 1, the dual is 0
        memset(P.w, 0, (P.d + (1 if P.bias != 0.0 else 0)) * k * sizeof(double))
        primal, dual, gap = p0, 0.0, p0
    else:
        _resync(data, indices, indptr, P, cuts, threads)
        _check(data, indices, indptr, P, &S, &primal, &dual, &gap, threads)
    epoch = 0
    if gap_certifies(gap, primal - gap, opt.tol, floor):
        res.status = STATUS_CONVERGED
    target = schedule_target(primal, dual, opt.tol, floor)
    if hook != NULL:
        values[0], values[1], values[2], values[3] = primal, dual, gap, NAN
        values[4] = <double>n
        res.status = report_epoch(hook, ctx, 0, values, res.status)
    while res.status == STATUS_MAX_EPOCHS and epoch < opt.max_epochs:
        epoch += 1
        # once shrinking has left few rows and classes (letter at C = 0.1: about 300 of
        # 16,000 rows), an epoch is several passes over them (schedule_pass_again)
        epoch_cost = 0.0
        while True:
            focus_cost = 0.0
            stop = 0 if S.gain == NULL else _focused_passes(
                data, indices, indptr, P, opt, &S, S.rows, res, &focus_cost, hook, ctx)
            if stop == 0:
                stop = _epoch(data, indices, indptr, P, opt, &S, hook, ctx)
            epoch_cost += S.pass_cost + focus_cost
            if stop != 0:
                break
            # shrunk rows have no gap: the active rows' mean, scaled to the n rows
            estimate = NAN if opt.check_every == 1 else \
                S.pass_gap / (S.visits if S.visits else 1) * S.n_active / n
            # (under a whole pass's work: under half, as in the binary loop, cost letter
            # and satellite at C = 0.1 7-9%)
            if not schedule_pass_again(&sched, S.pass_cost, epoch_cost, estimate, target, 1.0):
                break
        if stop != 0:               # cut short by a poll (Ctrl-C): no check, no report
            res.status = stop
            break
        checked = schedule_check_now(&sched, epoch, opt.max_epochs, estimate,
                                     epoch_cost, target, &predicted)
        if checked:
            # a check expected to succeed resyncs first and certifies in one go
            certify = epoch == opt.max_epochs or (opt.check_every != 1 and predicted <= target)
            if certify:
                _resync(data, indices, indptr, P, cuts, threads)
            _check(data, indices, indptr, P, &S, &primal, &dual, &gap, threads)
            if gap_certifies(gap, primal - gap, opt.tol, floor) and not certify:
                # certify: remove the rounding drift of the incremental w, then re-check
                certify = True
                _resync(data, indices, indptr, P, cuts, threads)
                _check(data, indices, indptr, P, &S, &primal, &dual, &gap, threads)
            if certify and gap_certifies(gap, primal - gap, opt.tol, floor):
                res.status = STATUS_CONVERGED
            schedule_checked(&sched, gap)
            target = schedule_target(primal, dual, opt.tol, floor)
        if hook != NULL:
            values[0] = primal if checked else NAN
            values[1] = dual if checked else NAN
            values[2] = gap if checked else NAN
            values[3] = estimate
            values[4] = <double>S.n_active
            res.status = report_epoch(hook, ctx, epoch, values, res.status)
    res.shrunk_classes = S.shrunk_classes
    _free_work(&S)
    free(cuts)
    res.n_epochs = epoch
    res.primal = primal
    res.dual = dual
    res.gap = gap
    return res.status


# ---------------------------------------------------------------------------------------
# the engine's Python entry (train_sdca(..., multi_class="crammer_singer")): history, verbose
# lines, callback and Ctrl-C through the monitor ``mon`` (dualsolve._monitor.EpochMonitor)


def solve(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
          Py_ssize_t n_features, const Py_ssize_t[::1] label, Py_ssize_t n_classes,
          double lam, double bias, double[:, ::1] w, double[:, ::1] alpha, double tol,
          Py_ssize_t max_epochs, Py_ssize_t check_every, int sampling, bint shrinking,
          unsigned long long seed, mon, weight=None, Py_ssize_t poll_work=0,
          double focus=-1.0, stats=None, int n_threads=1):
    """Run cs_run on validated arrays: ``w`` (n_features + (bias != 0), n_classes) and
    ``alpha`` (n, n_classes) are written in place (alpha may hold a feasible warm start),
    reporting every epoch to ``mon`` (which must expect CS_HOOK_VALUES values). ``focus``:
    CsOptions.focus (negative: its default, DEFAULT_FOCUS); ``stats``, a dict that receives
    ``focused_passes`` and ``shrunk_classes``; ``n_threads``: CsOptions.n_threads.
    Returns (status, n_epochs, primal, dual, gap, p0)."""
    cdef CsProblem P
    cdef CsOptions opt = cs_default_options()
    cdef CsResult res
    cdef Py_ssize_t n = indptr.shape[0] - 1
    if n_classes < 2:
        raise ValueError(f"Crammer-Singer needs at least 2 classes; got {n_classes}")
    if label.shape[0] != n or alpha.shape[0] != n or alpha.shape[1] != n_classes:
        raise ValueError(f"label {label.shape[0]} and alpha {alpha.shape[0]} x "
                         f"{alpha.shape[1]} for {n} rows and {n_classes} classes")
    if w.shape[0] != n_features + (1 if bias != 0.0 else 0) or w.shape[1] != n_classes:
        raise ValueError(f"w has shape ({w.shape[0]}, {w.shape[1]})")
    if mon.n_values != CS_HOOK_VALUES:
        raise ValueError(f"the monitor expects {mon.n_values} values; cs_run reports "
                         f"{CS_HOOK_VALUES}")
    if np.any(np.asarray(label) < 0) or np.any(np.asarray(label) >= n_classes):
        raise ValueError(f"labels must be class indices in [0, {n_classes})")
    P.n = n
    P.d = n_features
    P.k = n_classes
    P.label = &label[0]
    P.weight = double_ptr(weight, n, "weight")
    P.lam = lam
    P.bias = bias
    P.w = &w[0, 0]
    P.alpha = &alpha[0, 0]
    opt.tol = tol
    opt.max_epochs = max_epochs
    opt.check_every = check_every
    opt.sampling = sampling
    opt.shrinking = shrinking
    opt.seed = seed
    if poll_work > 0:
        opt.poll_work = poll_work
    if focus >= 0.0:
        opt.focus = focus
    opt.n_threads = max(1, n_threads)
    with nogil:
        cs_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, python_hook, <void*>mon)
    if stats is not None:
        stats["focused_passes"] = res.focused_passes
        stats["shrunk_classes"] = res.shrunk_classes
    return (res.status, res.n_epochs, res.primal, res.dual, res.gap, res.p0)
