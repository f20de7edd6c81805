# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Dual-free SDCA loops: one coordinate step, four ways of choosing the coordinate and its
relaxation eta (see _dfsdca.pxd), and mini-batch adfSDCA (He, Tappenden & Takac 2018,
Algorithm 4): b coordinates per iteration drawn by dualsolve._core.sampler's MbSampler,
all steps computed at the same w and applied together.

Every step: kappa_i = alpha_i + c_i phi'(x_i.w) (c_i the row weight, 1 without weights;
the weighted branches test P.weight != NULL, so the unweighted loops are unchanged);
dalpha = -eta kappa_i; alpha_i += dalpha;
w += dalpha/(lam n) x_i, so w == X^T alpha/(lam n) is kept (up to rounding, removed by a
recomputation of w from alpha before a convergence is certified).

Checks: P(w) from fresh margins, and the gap P(w) - D(alpha) when every alpha_i lies in the
domain of the conjugate, else the certificate P(w) - D(alphatilde) with alphatilde =
-c phi'(Xw) (always feasible) and D evaluated at w(alphatilde) = X^T alphatilde / (lam n).
Both bound P(w) - P* from above (weak duality). The sums are compensated (_core/ksum.pxd).
"""
from cython.parallel cimport prange
from libc.math cimport sqrt, fabs, isfinite, NAN, INFINITY
from libc.stdlib cimport malloc, free
from libc.string cimport memset

import numpy as np

from dualsolve._core.blocks cimport (Blocks, BLOCKS_MIN_NNZ, blocks_init, blocks_free,
                                     blocks_ksum)
from dualsolve._core.buffers cimport double_ptr, intp_out
from dualsolve._core.hooks cimport python_hook
from dualsolve._core.ksum cimport KahanSum, ksum_new, ksum_add, ksum_value
from dualsolve._core.status cimport (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_DIVERGED,
                                     STATUS_NO_MEMORY, gap_certifies, gap_floor)
from dualsolve._core.csr cimport (floating, index_t, sparse_dot, sparse_axpy, sparse_sqnorm,
                                  prefetch_row)
from dualsolve._core.losses cimport (Loss, LOSS_LOGISTIC, LOSS_SQUARED, LOSS_SMOOTH_HINGE,
                                     LOSS_SQUARED_HINGE, loss_value, loss_deriv, loss_conj,
                                     make_loss)
from dualsolve._core.rng cimport rng_seed, rng_below
from dualsolve._core.sampler cimport (sumtree_init, sumtree_free, sumtree_build, sumtree_set,
                                      sumtree_get, sumtree_total, sumtree_draw, alias_init,
                                      alias_free, alias_build, alias_draw, MB_ALG3,
                                      mbsampler_init, mbsampler_free, mb_prepare, mb_draw)

# what an epoch returns besides 0 (go on) and a status to stop with
cdef enum:
    _OPTIMUM = -1         # every residue is exactly 0


cdef DfOptions df_default_options() noexcept nogil:
    cdef DfOptions o
    o.method = DF_UNIFORM
    o.tol = 1e-6
    o.max_epochs = 5000
    o.check_every = 1
    o.seed = 0
    o.prob_shrink = 10.0
    o.step_cap = 0.0
    o.batch_size = 1
    o.batch_sampling = MB_ALG3
    o.n_threads = 1
    return o


cdef double df_loss_smoothness(const Loss* L) noexcept nogil:
    if L.kind == LOSS_SQUARED:
        return 1.0
    if L.kind == LOSS_LOGISTIC:
        return 0.25
    if L.kind == LOSS_SMOOTH_HINGE or L.kind == LOSS_SQUARED_HINGE:
        return 1.0 / L.param
    return -1.0        # hinge: not smooth


cdef void df_problem_init(DfProblem* P, Py_ssize_t n, Py_ssize_t d, const double* y, Loss loss,
                          double lam, double* w, double* alpha,
                          const double* sqnorm) noexcept nogil:
    P.n = n
    P.d = d
    P.y = y
    P.loss = loss
    P.ltilde = df_loss_smoothness(&loss)
    P.lam = lam
    P.w = w
    P.alpha = alpha
    P.sqnorm = sqnorm
    P.trace = NULL
    P.trace_len = 0
    P.trace_pos = 0
    P.weight = NULL
    _clear_work(P)


cdef void _clear_work(DfProblem* P) noexcept nogil:
    P.v = NULL
    P.z = NULL
    P.work_d = NULL
    P.eta = NULL
    P.s = NULL
    P.kappa = NULL
    P.u = NULL
    P.stamp = NULL
    P.marked = NULL
    P.batch = NULL
    P.dbatch = NULL
    P.eso = 1.0
    P.theta = 0.0
    P.tree.tree = NULL
    P.tree.owned = False
    P.tree2.tree = NULL
    P.tree2.owned = False
    P.alias.prob = NULL
    P.alias.alias = NULL
    P.alias.owned = False
    P.mb.order = NULL
    P.mb.q = NULL
    P.mb.qx = NULL
    P.mb.cum = NULL
    P.mb.comp_I = NULL
    P.mb.comp_J = NULL
    P.mb.work = NULL
    P.mb.pairs = NULL


cdef inline void _record(DfProblem* P, Py_ssize_t i) noexcept nogil:
    if P.trace != NULL and P.trace_pos < P.trace_len:
        P.trace[P.trace_pos] = i
        P.trace_pos += 1


cdef inline double _residue(const floating* data, const index_t* indices,
                            const index_t* indptr, const DfProblem* P,
                            Py_ssize_t i) noexcept nogil:
    """kappa_i = alpha_i + c_i phi'(x_i.w) from the current w."""
    cdef Py_ssize_t start = indptr[i]
    cdef double z = sparse_dot(data + start, indices + start, indptr[i + 1] - start, P.w)
    if P.weight != NULL:
        return P.alpha[i] + P.weight[i] * loss_deriv(&P.loss, z, P.y[i])
    return P.alpha[i] + loss_deriv(&P.loss, z, P.y[i])


cdef inline double _deriv(const DfProblem* P, double z, Py_ssize_t i) noexcept nogil:
    """c_i phi'(z; y_i)."""
    if P.weight != NULL:
        return P.weight[i] * loss_deriv(&P.loss, z, P.y[i])
    return loss_deriv(&P.loss, z, P.y[i])


cdef inline double _conj(const DfProblem* P, double a, Py_ssize_t i) noexcept nogil:
    """Row i's conjugate term of D at alpha_i = a: h(a), weighted c_i h(a / c_i) (0 at a = 0
    and infinite elsewhere for c_i = 0)."""
    cdef double c
    if P.weight == NULL:
        return loss_conj(&P.loss, a, P.y[i])
    c = P.weight[i]
    if c > 0.0:
        return c * loss_conj(&P.loss, a / c, P.y[i])
    return 0.0 if a == 0.0 else INFINITY


cdef inline double _lt(const DfProblem* P, Py_ssize_t i) noexcept nogil:
    """The smoothness of row i's loss: c_i Lt (Lt without weights, so that every step rule
    written with it is the unweighted one to the bit)."""
    if P.weight != NULL:
        return P.weight[i] * P.ltilde
    return P.ltilde


cdef inline double _step(const floating* data, const index_t* indices, const index_t* indptr,
                         DfProblem* P, Py_ssize_t i, double eta, double kappa) noexcept nogil:
    """The dual-free step; returns dalpha."""
    cdef Py_ssize_t start = indptr[i]
    cdef double dalpha = -eta * kappa
    if dalpha != 0.0:
        P.alpha[i] += dalpha
        sparse_axpy(dalpha / (P.lam * P.n), data + start, indices + start,
                    indptr[i + 1] - start, P.w)
    return dalpha


cdef void _resync_w(const floating* data, const index_t* indices, const index_t* indptr,
                    DfProblem* P) noexcept nogil:
    """w = X^T alpha / (lam n) from scratch."""
    cdef Py_ssize_t i, start
    cdef double scale = 1.0 / (P.lam * P.n)
    memset(P.w, 0, P.d * sizeof(double))
    for i in range(P.n):
        if P.alpha[i] != 0.0:
            start = indptr[i]
            sparse_axpy(P.alpha[i] * scale, data + start, indices + start,
                        indptr[i + 1] - start, P.w)


cdef double _sqnorm(const double* a, Py_ssize_t d) noexcept nogil:
    cdef KahanSum s = ksum_new()
    cdef Py_ssize_t j
    for j in range(d):
        ksum_add(&s, a[j] * a[j])
    return ksum_value(&s)


cdef void _check(const floating* data, const index_t* indices, const index_t* indptr,
                 DfProblem* P, const Blocks* team, double* values) noexcept nogil:
    """values = primal, dual of the certificate, gap, max |kappa|, dual kind (docstring);
    weighted: primal (1/n) sum c_i phi + ..., dual -(1/n) sum c_i h(alpha_i / c_i) - ...,
    alphatilde = -c phi'(Xw). The pass over the rows in the team's blocks, their sums
    added in block order (_core/blocks.pxd)."""
    cdef Py_ssize_t i, start, b
    cdef double at, mk = 0.0, wn
    cdef double scale = 1.0 / (P.lam * P.n)
    cdef KahanSum ls, cs
    cdef bint feasible = True
    for b in prange(team.size, num_threads=team.size, schedule="static", chunksize=1):
        _check_rows(data, indices, indptr, P, team.rows[b], team.rows[b + 1],
                    &team.sums[2 * b], &team.part[3 * b])
    ls = blocks_ksum(team, 2, 0)
    cs = blocks_ksum(team, 2, 1)
    for b in range(team.size):
        mk = max(mk, team.part[3 * b])
        feasible = feasible and team.part[3 * b + 1] != 0.0
    wn = _sqnorm(P.w, P.d)
    values[0] = ksum_value(&ls) / P.n + 0.5 * P.lam * wn
    values[3] = mk
    if feasible:
        values[1] = -ksum_value(&cs) / P.n - 0.5 * P.lam * wn
        values[4] = 1.0
    else:
        cs = ksum_new()
        memset(P.work_d, 0, P.d * sizeof(double))
        for i in range(P.n):
            at = -_deriv(P, P.z[i], i)
            ksum_add(&cs, _conj(P, at, i))
            if at != 0.0:
                start = indptr[i]
                sparse_axpy(at * scale, data + start, indices + start, indptr[i + 1] - start,
                            P.work_d)
        values[1] = -ksum_value(&cs) / P.n - 0.5 * P.lam * _sqnorm(P.work_d, P.d)
        values[4] = 0.0
    values[2] = values[0] - values[1]


# ---------------------------------------------------------------------------------------
# epochs: n coordinate steps each; 0 to go on, _OPTIMUM when every residue is exactly zero,
# or a status to stop with (STATUS_DIVERGED: non-finite residues; what a poll returned)


cdef void _check_rows(const floating* data, const index_t* indices, const index_t* indptr,
                      DfProblem* P, Py_ssize_t lo, Py_ssize_t hi, KahanSum* sums,
                      double* part) noexcept nogil:
    """_check's pass over rows lo .. hi - 1: their scores into P.z; sums[0], sums[1]: their
    losses and (while every one is finite) conjugates; part[0]: max |kappa|, part[1]: 1
    if their conjugates were all finite, else 0."""
    cdef Py_ssize_t i, start
    cdef double zi, g, h, mk = 0.0, li
    cdef KahanSum ls = ksum_new(), cs = ksum_new()
    cdef bint feasible = True
    for i in range(lo, hi):
        start = indptr[i]
        zi = sparse_dot(data + start, indices + start, indptr[i + 1] - start, P.w)
        P.z[i] = zi
        li = loss_value(&P.loss, zi, P.y[i])
        if P.weight != NULL:
            li = P.weight[i] * li if P.weight[i] != 0.0 else 0.0
        ksum_add(&ls, li)
        g = _deriv(P, zi, i)
        if fabs(P.alpha[i] + g) > mk:
            mk = fabs(P.alpha[i] + g)
        if feasible:
            h = _conj(P, P.alpha[i], i)
            if isfinite(h):
                ksum_add(&cs, h)
            else:
                feasible = False
    sums[0] = ls
    sums[1] = cs
    part[0] = mk
    part[1] = 1.0 if feasible else 0.0


cdef inline int _poll(epoch_hook hook, void* ctx, double* work) noexcept nogil:
    """Between the steps of a long epoch: let the hook check for Ctrl-C."""
    work[0] = 0.0
    return 0 if hook == NULL else hook(ctx, -1, NULL)


cdef int _epoch_fixed(const floating* data, const index_t* indices, const index_t* indptr,
                      DfProblem* P, int method) noexcept nogil:
    """dfSDCA (eta = n theta_unif) and IS-dfSDCA (eta_i = theta_IS / p_i)."""
    cdef Py_ssize_t t, i, nxt, n = P.n
    cdef double eta_unif = n * P.theta, kappa
    cdef bint uniform = method == DF_UNIFORM
    if uniform:
        nxt = <Py_ssize_t>rng_below(&P.rng, <unsigned long long>n)
    else:
        nxt = alias_draw(&P.alias, &P.rng)
    for t in range(n):
        i = nxt
        if t + 1 < n:
            # draw the next row now so that its memory is on the way during this step
            if uniform:
                nxt = <Py_ssize_t>rng_below(&P.rng, <unsigned long long>n)
            else:
                nxt = alias_draw(&P.alias, &P.rng)
            prefetch_row(data + indptr[nxt], indices + indptr[nxt], indptr[nxt + 1] - indptr[nxt])
        _record(P, i)
        kappa = _residue(data, indices, indptr, P, i)
        _step(data, indices, indptr, P, i, eta_unif if uniform else P.eta[i], kappa)
    return 0


cdef int _epoch_plus(const floating* data, const index_t* indices, const index_t* indptr,
                     DfProblem* P, double shrink, bint capped) noexcept nogil:
    """adfSDCA+ (Algorithm 2): p from the epoch-start residues, theta (18) fixed for the
    epoch, fresh kappa_i for the picked row, eta capped, p_i /= shrink after."""
    cdef Py_ssize_t t, i, j, n = P.n
    cdef double K2 = 0.0, U, theta, p_i, eta, kappa, ui
    for j in range(n):
        kappa = _residue(data, indices, indptr, P, j)
        P.u[j] = P.s[j] * fabs(kappa)
        K2 += kappa * kappa
    sumtree_build(&P.tree, P.u)
    U = sumtree_total(&P.tree)
    if not (isfinite(U) and isfinite(K2)):
        return STATUS_DIVERGED
    if U == 0.0:
        return _OPTIMUM
    theta = n * P.lam * P.lam * K2 / (U * U)
    P.theta = theta
    for t in range(n):
        i = sumtree_draw(&P.tree, &P.rng)
        if i < 0:
            break
        _record(P, i)
        ui = sumtree_get(&P.tree, i)
        p_i = ui / sumtree_total(&P.tree)
        kappa = _residue(data, indices, indptr, P, i)
        eta = theta / p_i
        if capped and eta > P.eta[i]:
            eta = P.eta[i]
        _step(data, indices, indptr, P, i, eta, kappa)
        sumtree_set(&P.tree, i, ui / shrink)
    return 0


cdef inline void _refresh(DfProblem* P, Py_ssize_t r) noexcept nogil:
    cdef double k = P.alpha[r] + _deriv(P, P.z[r], r)
    P.kappa[r] = k
    sumtree_set(&P.tree, r, P.s[r] * fabs(k))
    sumtree_set(&P.tree2, r, k * k)


cdef int _epoch_exact(const floating* data, const index_t* indices, const index_t* indptr,
                      const floating* csc_data, const index_t* csc_indices,
                      const index_t* csc_indptr, DfProblem* P, Py_ssize_t epoch,
                      double cap, epoch_hook hook, void* ctx) noexcept nogil:
    """Exact adfSDCA (Algorithm 1) with margins, residues and both trees kept current
    through the CSC copy; everything is recomputed from w at the epoch start."""
    cdef Py_ssize_t t, i, j, k, m, f, r, start, nm, n = P.n
    cdef Py_ssize_t stamp_id
    cdef double U, K2, theta, eta, dalpha, c, cx, zj, work = 0.0
    cdef int stop
    for j in range(n):
        start = indptr[j]
        zj = sparse_dot(data + start, indices + start, indptr[j + 1] - start, P.w)
        P.z[j] = zj
        P.kappa[j] = P.alpha[j] + _deriv(P, zj, j)
        P.u[j] = P.s[j] * fabs(P.kappa[j])
        P.stamp[j] = -1
    sumtree_build(&P.tree, P.u)
    for j in range(n):
        P.u[j] = P.kappa[j] * P.kappa[j]
    sumtree_build(&P.tree2, P.u)
    for t in range(n):
        U = sumtree_total(&P.tree)
        K2 = sumtree_total(&P.tree2)
        if not (0.0 < U < INFINITY and K2 < INFINITY):
            return _OPTIMUM if U == 0.0 else STATUS_DIVERGED
        i = sumtree_draw(&P.tree, &P.rng)
        _record(P, i)
        theta = n * P.lam * P.lam * K2 / (U * U)
        P.theta = theta
        eta = theta * U / sumtree_get(&P.tree, i)          # theta / p_i
        if cap > 0.0 and eta > P.eta[i]:
            eta = P.eta[i]
        dalpha = -eta * P.kappa[i]
        P.alpha[i] += dalpha
        c = dalpha / (P.lam * n)
        stamp_id = epoch * n + t
        nm = 0
        start = indptr[i]
        for k in range(start, indptr[i + 1]):
            f = indices[k]
            cx = c * data[k]
            P.w[f] += cx
            work += csc_indptr[f + 1] - csc_indptr[f]
            for m in range(csc_indptr[f], csc_indptr[f + 1]):
                r = csc_indices[m]
                P.z[r] += cx * csc_data[m]
                if P.stamp[r] != stamp_id:
                    P.stamp[r] = stamp_id
                    P.marked[nm] = r
                    nm += 1
        if P.stamp[i] != stamp_id:
            P.stamp[i] = stamp_id
            P.marked[nm] = i
            nm += 1
        for m in range(nm):
            _refresh(P, P.marked[m])
        work += 8 * nm
        if work > DF_POLL_WORK:
            stop = _poll(hook, ctx, &work)
            if stop != 0:
                return stop
    return 0


cdef inline void _mb_margins(const floating* data, const index_t* indices,
                             const index_t* indptr, DfProblem* P, Py_ssize_t lo,
                             Py_ssize_t hi) noexcept nogil:
    """z_j = x_j.w for the rows j in [lo, hi)."""
    cdef Py_ssize_t j, start
    for j in range(lo, hi):
        start = indptr[j]
        P.z[j] = sparse_dot(data + start, indices + start, indptr[j + 1] - start, P.w)


cdef inline double _mb_weight(const DfProblem* P, double eso, double nl2,
                              Py_ssize_t j) noexcept nogil:
    """u_j = sqrt(eso v_j gamma_j + n lam^2) |kappa_j| (p* of (17) with the ESO weights
    v'_j = eso v_j; gamma_j = lam c_j Lt; nl2 = n lam^2)."""
    return sqrt(eso * P.v[j] * (P.lam * _lt(P, j)) + nl2) * fabs(P.kappa[j])


cdef inline void _mb_residues(DfProblem* P, double eso, Py_ssize_t lo,
                              Py_ssize_t hi) noexcept nogil:
    """For the rows j in [lo, hi): kappa_j = alpha_j + c_j phi'(z_j) and its weight u_j."""
    cdef Py_ssize_t j
    cdef double nl2 = P.n * P.lam * P.lam
    for j in range(lo, hi):
        P.kappa[j] = P.alpha[j] + _deriv(P, P.z[j], j)
        P.u[j] = _mb_weight(P, eso, nl2, j)


cdef inline void _mb_weights(DfProblem* P, double eso) noexcept nogil:
    """Every u_j for another eso, at the same residues."""
    cdef Py_ssize_t j
    cdef double nl2 = P.n * P.lam * P.lam
    for j in range(P.n):
        P.u[j] = _mb_weight(P, eso, nl2, j)


cdef Py_ssize_t _lower_bound(const index_t* rows, Py_ssize_t a, Py_ssize_t e,
                             Py_ssize_t r) noexcept nogil:
    """The first m in [a, e) with rows[m] >= r (rows increasing), else e."""
    cdef Py_ssize_t mid
    while a < e:
        mid = a + (e - a) // 2
        if rows[mid] < r:
            a = mid + 1
        else:
            e = mid
    return a


cdef void _mb_update_margins(const floating* data, const index_t* indices,
                             const index_t* indptr, const floating* csc_data,
                             const index_t* csc_indices, const index_t* csc_indptr,
                             DfProblem* P, Py_ssize_t nb, Py_ssize_t lo,
                             Py_ssize_t hi) noexcept nogil:
    """z_r += (dalpha_i / (lam n)) x_if X_rf for the rows r in [lo, hi), over the batch's
    rows i in the order of S and their features f: every z_r gets its additions in the
    serial order, whichever rows a thread owns (the columns' rows increase: a thread
    seeks its range in each column)."""
    cdef Py_ssize_t k, l, i, f, m, a, e
    cdef double c, cx
    for k in range(nb):
        if P.dbatch[k] == 0.0:
            continue
        i = P.batch[k]
        c = P.dbatch[k] / (P.lam * P.n)
        for l in range(indptr[i], indptr[i + 1]):
            f = indices[l]
            cx = c * data[l]
            a = csc_indptr[f]
            e = csc_indptr[f + 1]
            if lo > 0:
                a = _lower_bound(csc_indices, a, e, lo)
            if hi < P.n:
                e = _lower_bound(csc_indices, a, e, hi)
            for m in range(a, e):
                P.z[csc_indices[m]] += cx * csc_data[m]


cdef int _epoch_minibatch(const floating* data, const index_t* indices, const index_t* indptr,
                          const floating* csc_data, const index_t* csc_indices,
                          const index_t* csc_indptr, DfProblem* P, Py_ssize_t b,
                          int sampler, double cap, const Blocks* team, epoch_hook hook,
                          void* ctx) noexcept nogil:
    """Mini-batch adfSDCA (Algorithm 4), ceil(n/b) iterations. Per iteration, all at the
    same w: kappa_j = alpha_j + phi'(z_j) for every j (margins z kept current through the CSC
    copy); u_j = sqrt(v'_j gamma + n lam^2) |kappa_j|, v'_j = min(b_eff, omega) v_j; q =
    water-filled b_eff u / sum(u) (sum q = b_eff, q <= 1); S with |S| = b_eff and
    P(i in S) = q_i (Algorithm 3 or systematic); theta = Theta_b of the paper's (75) with
    p = q/b_eff, which simplifies to n lam^2 sum kappa^2 / sum_i u_i^2 / q_i;
    dalpha_i = -(theta/q_i) kappa_i for i in S (capped if cap > 0), then alpha and w are
    updated in the order of S, and the margins z through the CSC copy. z = Xw is
    recomputed at the epoch start (no drift).

    With a team of two or more blocks the per-row work (the margins, the residues and
    weights, the margins' update) runs in the team's threads by its blocks of rows; every
    row's values are computed as on one thread and the sums stay serial, so the iterates
    are the serial ones to the bit for every n_jobs."""
    cdef Py_ssize_t it, j, k, l, i, f, nb, be, blk, n = P.n
    cdef Py_ssize_t iters = (n + b - 1) // b
    cdef double K2, denom, theta, eta, ecap, c, eso, work = 0.0
    cdef int stop
    cdef bint threads = team.size > 1
    if threads:
        for blk in prange(team.size, num_threads=team.size, schedule="static", chunksize=1):
            _mb_margins(data, indices, indptr, P, team.rows[blk], team.rows[blk + 1])
    else:
        _mb_margins(data, indices, indptr, P, 0, n)
    for it in range(iters):
        eso = P.eso
        if threads:
            for blk in prange(team.size, num_threads=team.size, schedule="static",
                              chunksize=1):
                _mb_residues(P, eso, team.rows[blk], team.rows[blk + 1])
        else:
            _mb_residues(P, eso, 0, n)
        K2 = 0.0
        for j in range(n):
            K2 += P.kappa[j] * P.kappa[j]
        if not isfinite(K2):
            return STATUS_DIVERGED
        be = mb_prepare(&P.mb, P.u, b, sampler)
        if be == 0:
            return _OPTIMUM                            # every residue is 0: the optimum
        if be < b and be < eso:
            # fewer than b nonzero residues: the ESO factor of |S| = b_eff
            eso = <double>be
            _mb_weights(P, eso)
            be = mb_prepare(&P.mb, P.u, b, sampler)
        denom = 0.0
        for l in range(n):
            if P.u[l] > 0.0:
                denom += P.u[l] * (P.u[l] / P.mb.qx[l])
        theta = n * P.lam * P.lam * K2 / denom
        P.theta = theta
        nb = mb_draw(&P.mb, &P.rng, P.batch)
        for k in range(nb):                            # Jacobi: all at the same w
            i = P.batch[k]
            _record(P, i)
            eta = theta / P.mb.qx[i]
            if cap > 0.0:
                ecap = cap * n * P.lam / (n * P.lam + _lt(P, i) * eso * P.v[i])
                if eta > ecap:
                    eta = ecap
            P.dbatch[k] = -eta * P.kappa[i]
        for k in range(nb, b):
            _record(P, -1)
        work += 4 * n
        for k in range(nb):                            # the aggregated update, in order of S
            i = P.batch[k]
            if P.dbatch[k] == 0.0:
                continue
            P.alpha[i] += P.dbatch[k]
            c = P.dbatch[k] / (P.lam * n)
            for l in range(indptr[i], indptr[i + 1]):
                f = indices[l]
                P.w[f] += c * data[l]
                work += csc_indptr[f + 1] - csc_indptr[f]
        if threads:
            for blk in prange(team.size, num_threads=team.size, schedule="static",
                              chunksize=1):
                _mb_update_margins(data, indices, indptr, csc_data, csc_indices, csc_indptr,
                                   P, nb, team.rows[blk], team.rows[blk + 1])
        else:
            _mb_update_margins(data, indices, indptr, csc_data, csc_indices, csc_indptr, P,
                               nb, 0, n)
        if work > DF_POLL_WORK:
            stop = _poll(hook, ctx, &work)
            if stop != 0:
                return stop
    return 0


# ---------------------------------------------------------------------------------------
# set-up: work memory, the method's constants, the CSC copy of X (DF_EXACT)


cdef double* _doubles(Py_ssize_t k, bint* failed) noexcept nogil:
    cdef double* p = <double*>malloc((k if k > 0 else 1) * sizeof(double))
    if p == NULL:
        failed[0] = True
    return p


cdef Py_ssize_t* _indices(Py_ssize_t k, bint* failed) noexcept nogil:
    cdef Py_ssize_t* p = <Py_ssize_t*>malloc((k if k > 0 else 1) * sizeof(Py_ssize_t))
    if p == NULL:
        failed[0] = True
    return p


cdef int _allocate(DfProblem* P, const DfOptions* opt, double** v_owned) noexcept nogil:
    """The work memory of the method (pointers NULL before); 0, or -1 when out of memory
    (what was allocated stays in P for _release)."""
    cdef Py_ssize_t n = P.n
    cdef bint failed = False, adaptive = opt.method == DF_PLUS or opt.method == DF_EXACT
    cdef bint minibatch = opt.method == DF_EXACT and opt.batch_size > 1
    # uniform sampling with rows of weight 0 draws through an alias table over the others
    cdef bint table = (opt.method == DF_IMPORTANCE
                       or (opt.method == DF_UNIFORM and _zero_weight(P)))
    if P.sqnorm == NULL:
        v_owned[0] = _doubles(n, &failed)
    P.z = _doubles(n, &failed)
    P.work_d = _doubles(P.d, &failed)
    if opt.method != DF_UNIFORM or table:
        P.eta = _doubles(n, &failed)
    if table and alias_init(&P.alias, n, NULL, NULL) != 0:
        failed = True
    if adaptive:
        P.s = _doubles(n, &failed)
        P.kappa = _doubles(n, &failed)
        P.u = _doubles(n, &failed)
    if minibatch:
        P.batch = _indices(opt.batch_size, &failed)
        P.dbatch = _doubles(opt.batch_size, &failed)
        if mbsampler_init(&P.mb, n) != 0:
            failed = True
    elif adaptive:
        if sumtree_init(&P.tree, n, NULL) != 0:
            failed = True
        if opt.method == DF_EXACT:
            if sumtree_init(&P.tree2, n, NULL) != 0:
                failed = True
            P.stamp = _indices(n, &failed)
            P.marked = _indices(n, &failed)
    return -1 if failed else 0


cdef void _release(DfProblem* P) noexcept nogil:
    free(P.z)
    free(P.work_d)
    free(P.eta)
    free(P.s)
    free(P.kappa)
    free(P.u)
    free(P.stamp)
    free(P.marked)
    free(P.batch)
    free(P.dbatch)
    sumtree_free(&P.tree)
    sumtree_free(&P.tree2)
    alias_free(&P.alias)
    mbsampler_free(&P.mb)
    _clear_work(P)


cdef int _constants(DfProblem* P, const DfOptions* opt) noexcept nogil:
    """Steps and sampling weights of the method; 0, or -1 (the alias table's scratch).
    With row weights the smoothness of row i is c_i Lt (``_lt``): the uniform step takes the
    max of c_i Lt v_i over the rows, the importance and adaptive weights c_i Lt v_i; rows of
    weight 0 get sampling weight 0 (uniform: then drawn through the alias table too)."""
    cdef Py_ssize_t i, n = P.n
    cdef double nl = n * P.lam, vmax = 0.0, lv
    cdef KahanSum S = ksum_new()
    if opt.method == DF_UNIFORM:
        if P.weight == NULL:
            for i in range(n):
                if P.v[i] > vmax:
                    vmax = P.v[i]
            P.theta = P.lam / (nl + P.ltilde * vmax)
            return 0
        for i in range(n):
            lv = _lt(P, i) * P.v[i]
            if lv > vmax:
                vmax = lv
        P.theta = P.lam / (nl + vmax)
        if P.alias.prob != NULL:                           # some rows have weight 0
            for i in range(n):
                P.eta[i] = 1.0 if P.weight[i] > 0.0 else 0.0
            if alias_build(&P.alias, P.eta) != 0:
                return -1
            for i in range(n):
                P.eta[i] = n * P.theta
        return 0
    if opt.method == DF_IMPORTANCE:
        for i in range(n):
            if P.weight != NULL and not P.weight[i] > 0.0:
                P.eta[i] = 0.0                             # never drawn
            else:
                P.eta[i] = nl + _lt(P, i) * P.v[i]         # the unnormalised p_i
            ksum_add(&S, P.eta[i])
        if alias_build(&P.alias, P.eta) != 0:
            return -1
        P.theta = nl / ksum_value(&S)
        for i in range(n):
            if P.eta[i] > 0.0:
                P.eta[i] = P.theta / (P.eta[i] / ksum_value(&S))    # theta_IS / p_i
        return 0
    if opt.method == DF_EXACT and opt.batch_size > 1:
        return 0
    for i in range(n):
        P.s[i] = sqrt(P.v[i] * (P.lam * _lt(P, i)) + n * P.lam * P.lam)
        P.eta[i] = opt.step_cap * nl / (nl + _lt(P, i) * P.v[i])
    return 0


cdef bint _zero_weight(const DfProblem* P) noexcept nogil:
    """Whether some row has weight 0."""
    cdef Py_ssize_t i
    if P.weight == NULL:
        return False
    for i in range(P.n):
        if not P.weight[i] > 0.0:
            return True
    return False


cdef void _fill_csc(const floating* data, const index_t* indices, const index_t* indptr,
                    Py_ssize_t n, Py_ssize_t d, floating* cdata, index_t* cind,
                    index_t* cptr) noexcept nogil:
    """X by columns (rows increasing within each column), by counting."""
    cdef Py_ssize_t i, k, f, pos
    memset(cptr, 0, (d + 1) * sizeof(index_t))
    for k in range(indptr[n]):
        cptr[indices[k] + 1] += 1
    for f in range(d):
        cptr[f + 1] += cptr[f]
    for i in range(n):
        for k in range(indptr[i], indptr[i + 1]):
            f = indices[k]
            pos = cptr[f]
            cind[pos] = <index_t>i
            cdata[pos] = data[k]
            cptr[f] = pos + 1
    for f in range(d, 0, -1):
        cptr[f] = cptr[f - 1]
    cptr[0] = 0


cdef inline int _report(epoch_hook hook, void* ctx, Py_ssize_t epoch, const double* values,
                        bint checked) noexcept nogil:
    cdef double nan_values[DF_HOOK_VALUES]
    cdef int k
    if hook == NULL:
        return 0
    if checked:
        return hook(ctx, epoch, values)
    for k in range(DF_HOOK_VALUES):
        nan_values[k] = NAN
    return hook(ctx, epoch, nan_values)


# ---------------------------------------------------------------------------------------
# the solve


cdef int dfsdca_run(const floating* data, const index_t* indices, const index_t* indptr,
                    DfProblem* P, const DfOptions* opt, DfResult* res,
                    epoch_hook hook, void* ctx) noexcept nogil:
    """Solve to gap_certifies (status.pxd: certificate <= tol * (P - certificate), or the
    rounding floor of P(0); never for tol = 0) or max_epochs; returns res.status."""
    cdef Py_ssize_t i, n = P.n, d = P.d, nnz
    cdef bint minibatch = opt.method == DF_EXACT and opt.batch_size > 1
    cdef double* v_owned = NULL
    cdef floating* csc_data = NULL
    cdef index_t* csc_indices = NULL
    cdef index_t* csc_indptr = NULL
    cdef Blocks team
    res.status = -1
    res.n_epochs = 0
    res.primal = NAN
    res.dual = NAN
    res.gap = NAN
    res.p0 = NAN
    res.theta = NAN
    if (not P.ltilde > 0.0 or n < 1 or opt.batch_size < 1 or opt.batch_size > n
            or opt.method < DF_UNIFORM or opt.method > DF_EXACT):
        return -1
    _clear_work(P)
    res.status = STATUS_NO_MEMORY
    if _allocate(P, opt, &v_owned) == 0:
        if opt.method == DF_EXACT:
            nnz = indptr[n]
            csc_data = <floating*>malloc((nnz if nnz > 0 else 1) * sizeof(floating))
            csc_indices = <index_t*>malloc((nnz if nnz > 0 else 1) * sizeof(index_t))
            csc_indptr = <index_t*>malloc((d + 1) * sizeof(index_t))
        if opt.method != DF_EXACT or (csc_data != NULL and csc_indices != NULL
                                      and csc_indptr != NULL):
            if csc_indptr != NULL:
                _fill_csc(data, indices, indptr, n, d, csc_data, csc_indices, csc_indptr)
            if v_owned != NULL:
                for i in range(n):
                    v_owned[i] = sparse_sqnorm(data + indptr[i], indptr[i + 1] - indptr[i])
                P.v = v_owned
            else:
                P.v = P.sqnorm
            if _constants(P, opt) == 0 and blocks_init(&team, indptr, n, d, opt.n_threads,
                                                       BLOCKS_MIN_NNZ, 0, 3):
                _solve(data, indices, indptr, csc_data, csc_indices, csc_indptr, P, opt,
                       &team, res, hook, ctx)
                blocks_free(&team)
    free(csc_data)
    free(csc_indices)
    free(csc_indptr)
    free(v_owned)
    _release(P)
    return res.status


cdef void _solve(const floating* data, const index_t* indices, const index_t* indptr,
                 const floating* csc_data, const index_t* csc_indices,
                 const index_t* csc_indptr, DfProblem* P, const DfOptions* opt,
                 const Blocks* team, DfResult* res, epoch_hook hook,
                 void* ctx) noexcept nogil:
    """The epochs, the checks and the reports, with the work memory in place."""
    cdef Py_ssize_t i, epoch = 0, omega = 0
    cdef bint minibatch = opt.method == DF_EXACT and opt.batch_size > 1
    cdef double values[DF_HOOK_VALUES]
    cdef double p0, floor
    cdef bint checked, diverged, optimum, cold = True
    cdef int r, stop
    cdef KahanSum s0 = ksum_new()
    if minibatch:
        for i in range(P.d):
            if csc_indptr[i + 1] - csc_indptr[i] > omega:
                omega = csc_indptr[i + 1] - csc_indptr[i]
        P.eso = <double>(opt.batch_size if opt.batch_size < omega else omega)
    for i in range(P.n):
        if P.weight == NULL:
            ksum_add(&s0, loss_value(&P.loss, 0.0, P.y[i]))
        elif P.weight[i] != 0.0:
            ksum_add(&s0, P.weight[i] * loss_value(&P.loss, 0.0, P.y[i]))
        if P.alpha[i] != 0.0:
            cold = False
    p0 = ksum_value(&s0) / P.n
    # tol = 0 runs the whole budget (gap_certifies never holds for it)
    floor = gap_floor(p0)
    rng_seed(&P.rng, opt.seed)
    res.p0 = p0
    res.status = STATUS_MAX_EPOCHS
    if cold:
        memset(P.w, 0, P.d * sizeof(double))
    else:
        _resync_w(data, indices, indptr, P)
    _check(data, indices, indptr, P, team, values)
    if not (isfinite(values[0]) and isfinite(values[2])):
        res.status = STATUS_DIVERGED
    elif gap_certifies(values[2], values[0] - values[2], opt.tol, floor):
        res.status = STATUS_CONVERGED
    stop = _report(hook, ctx, 0, values, True)
    if stop != 0 and res.status == STATUS_MAX_EPOCHS:
        res.status = stop
    while res.status == STATUS_MAX_EPOCHS and epoch < opt.max_epochs:
        epoch += 1
        if opt.method == DF_UNIFORM or opt.method == DF_IMPORTANCE:
            # the uniform step over the rows of weight > 0 draws from the alias table
            r = _epoch_fixed(data, indices, indptr, P,
                             DF_IMPORTANCE if P.alias.prob != NULL else opt.method)
        elif opt.method == DF_PLUS:
            r = _epoch_plus(data, indices, indptr, P, opt.prob_shrink, opt.step_cap > 0.0)
        elif minibatch:
            r = _epoch_minibatch(data, indices, indptr, csc_data, csc_indices, csc_indptr, P,
                                 opt.batch_size, opt.batch_sampling, opt.step_cap, team, hook,
                                 ctx)
        else:
            r = _epoch_exact(data, indices, indptr, csc_data, csc_indices, csc_indptr, P,
                             epoch - 1, opt.step_cap, hook, ctx)
        if r > 0 and r != STATUS_DIVERGED:
            # stopped inside the epoch (Ctrl-C): the completed epochs are counted
            res.status = r
            epoch -= 1
            break
        diverged = r == STATUS_DIVERGED
        optimum = r == _OPTIMUM
        checked = (diverged or optimum or epoch % opt.check_every == 0
                   or epoch == opt.max_epochs)
        if checked:
            _check(data, indices, indptr, P, team, values)
            if diverged or not (isfinite(values[0]) and isfinite(values[2])):
                res.status = STATUS_DIVERGED
            elif gap_certifies(values[2], values[0] - values[2], opt.tol, floor) or optimum:
                # certify with w recomputed from alpha (no incremental rounding drift)
                _resync_w(data, indices, indptr, P)
                _check(data, indices, indptr, P, team, values)
                if gap_certifies(values[2], values[0] - values[2], opt.tol, floor):
                    res.status = STATUS_CONVERGED
        stop = _report(hook, ctx, epoch, values, checked)
        if stop != 0 and res.status == STATUS_MAX_EPOCHS:
            res.status = stop
    res.n_epochs = epoch
    res.primal = values[0]
    res.dual = values[1]
    res.gap = values[2]
    res.theta = P.theta


# ---------------------------------------------------------------------------------------
# the engine's Python entry (train_dfsdca, train_adfsdca): history, verbose lines, callback,
# divergence watch and Ctrl-C through the monitor ``mon`` (dualsolve._monitor.EpochMonitor)


def loss_smoothness(str loss, double param=0.0):
    """Ltilde of a loss of the table (-1 for the hinge, which is not smooth)."""
    cdef Loss L = make_loss(loss, param)
    return df_loss_smoothness(&L)


def solve(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
          Py_ssize_t n_features, const double[::1] y, str loss, double param, double lam,
          double[::1] w, double[::1] alpha, sqnorm, int method, double tol,
          Py_ssize_t max_epochs, Py_ssize_t check_every, unsigned long long seed,
          double prob_shrink, double step_cap, Py_ssize_t batch_size, int batch_sampling,
          mon, trace=None, weight=None, int n_threads=1):
    """Run dfsdca_run on validated arrays (w and alpha are written in place; alpha is the
    start), reporting every epoch to ``mon`` (which must expect DF_HOOK_VALUES values).
    sqnorm: the squared row norms (float64), or None to compute them. trace: an intp array
    receiving the sampled coordinates in order (tests). weight: the row weights c_i >= 0
    (float64, n), or None; alpha must be 0 on the rows of weight 0.
    Returns (status, n_epochs, primal, dual, gap, p0, theta)."""
    cdef Py_ssize_t n = alpha.shape[0], d = n_features
    if indptr.shape[0] != n + 1 or y.shape[0] != n or w.shape[0] != d:
        raise ValueError("inconsistent shapes")
    if mon.n_values != DF_HOOK_VALUES:
        raise ValueError(f"the monitor expects {mon.n_values} values; dfsdca_run reports "
                         f"{DF_HOOK_VALUES}")
    cdef Loss L = make_loss(loss, param)
    if not df_loss_smoothness(&L) > 0.0:
        raise ValueError(f"loss {loss!r} is not smooth; dual-free SDCA needs a smooth loss")
    if not 1 <= batch_size <= n:
        raise ValueError(f"batch_size must lie in [1, n = {n}]; got {batch_size}")
    cdef double[::1] wv = w if d > 0 else np.zeros(1)
    cdef DfProblem P
    cdef DfOptions opt = df_default_options()
    cdef DfResult res
    df_problem_init(&P, n, d, &y[0], L, lam, &wv[0], &alpha[0], double_ptr(sqnorm, n, "sqnorm"))
    P.trace = intp_out(trace, &P.trace_len)
    P.weight = double_ptr(weight, n, "weight")
    opt.method = method
    opt.tol = tol
    opt.max_epochs = max_epochs
    opt.check_every = check_every
    opt.seed = seed
    opt.prob_shrink = prob_shrink
    opt.step_cap = step_cap
    opt.batch_size = batch_size
    opt.batch_sampling = batch_sampling
    opt.n_threads = n_threads if n_threads > 1 else 1
    with nogil:
        dfsdca_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, python_hook, <void*>mon)
    return (res.status, res.n_epochs, res.primal, res.dual, res.gap, res.p0, res.theta)
