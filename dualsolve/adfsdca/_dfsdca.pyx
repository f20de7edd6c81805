# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Dual-free SDCA loops (spec seed3 sections 2.0-2.5): one coordinate step, four ways of
choosing the coordinate and its relaxation eta (see _dfsdca.pxd); and mini-batch adfSDCA
(section 2.8, Algorithm 4): b coordinates per iteration drawn by dualsolve._core.sampler's
MbSampler, all steps computed at the same w and applied together.

Every step: kappa_i = alpha_i + phi'(x_i.w); dalpha = -eta kappa_i; alpha_i += dalpha;
w += dalpha/(lam n) x_i, so w == X^T alpha/(lam n) is kept (up to rounding, removed by a
recomputation of w from alpha before a convergence is certified).

Checks (spec 5.2 item 2): P(w) from fresh margins, and the gap P(w) - D(alpha) when every
alpha_i lies in the domain of the conjugate, else the certificate P(w) - D(alphatilde) with
alphatilde = -phi'(Xw) (always feasible) and D evaluated at w(alphatilde). Both bound
P(w) - P* from above.
"""
from libc.math cimport sqrt, fabs, isfinite, NAN
from libc.string cimport memset

import numpy as np

from dualsolve._monitor import EpochMonitor

from dualsolve._core.buffers cimport intp_out
from dualsolve._core.hooks cimport report_or_stop
from dualsolve._core.csr cimport floating, index_t, sparse_dot, sparse_axpy, prefetch_row
from dualsolve._core.losses cimport (Loss, LOSS_LOGISTIC, LOSS_SQUARED, LOSS_SMOOTH_HINGE,
                                     LOSS_SQUARED_HINGE, loss_value, loss_deriv, loss_conj,
                                     make_loss)
from dualsolve._core.rng cimport rng_seed, rng_below, rng_uniform
from dualsolve._core.sampler cimport (sumtree_init, sumtree_free, sumtree_build, sumtree_set,
                                      sumtree_get, sumtree_total, sumtree_draw, alias_init,
                                      alias_free, alias_build, alias_draw, MB_ALG3,
                                      mbsampler_init, mbsampler_free, mb_prepare, mb_draw)


cdef DfOptions df_default_options() noexcept nogil:
    cdef DfOptions o
    o.method = DF_UNIFORM
    o.tol = 1e-6
    o.max_epochs = 100
    o.check_every = 1
    o.seed = 0
    o.shrink = 10.0
    o.step_cap = 0.0
    o.batch_size = 1
    o.mb_sampler = MB_ALG3
    return o


cdef void df_problem_init(DfProblem* P, Py_ssize_t n, Py_ssize_t d, const double* y, Loss loss,
                          double ltilde, double lam, double* w, double* alpha,
                          const double* sqnorm, double* z, double* work_d) noexcept nogil:
    P.n = n
    P.d = d
    P.y = y
    P.loss = loss
    P.ltilde = ltilde
    P.lam = lam
    P.w = w
    P.alpha = alpha
    P.sqnorm = sqnorm
    P.z = z
    P.work_d = work_d
    P.eta = NULL
    P.s = NULL
    P.kappa = NULL
    P.u = NULL
    P.tree_buf = NULL
    P.tree2_buf = NULL
    P.stamp = NULL
    P.marked = NULL
    P.alias_prob = NULL
    P.alias_idx = NULL
    P.batch = NULL
    P.dbatch = NULL
    P.eso = 1.0
    P.mb.order = NULL
    P.trace = NULL
    P.trace_len = 0
    P.trace_pos = 0
    P.theta = 0.0


cdef inline void _record(DfProblem* P, Py_ssize_t i) noexcept nogil:
    if P.trace != NULL and P.trace_pos < P.trace_len:
        P.trace[P.trace_pos] = i
        P.trace_pos += 1


cdef inline double _residue(const floating* data, const index_t* indices,
                            const index_t* indptr, const DfProblem* P,
                            Py_ssize_t i) noexcept nogil:
    """kappa_i = alpha_i + phi'(x_i.w) from the current w."""
    cdef Py_ssize_t start = indptr[i]
    cdef double z = sparse_dot(data + start, indices + start, indptr[i + 1] - start, P.w)
    return P.alpha[i] + loss_deriv(&P.loss, z, P.y[i])


cdef inline double _step(const floating* data, const index_t* indices, const index_t* indptr,
                         DfProblem* P, Py_ssize_t i, double eta, double kappa) noexcept nogil:
    """The dual-free step (spec 2.0); returns dalpha."""
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


cdef void _check(const floating* data, const index_t* indices, const index_t* indptr,
                 DfProblem* P, double* primal, double* dual, double* gap, double* max_kappa,
                 double* dual_kind) noexcept nogil:
    """P(w), the dual value of the certificate and the gap (module docstring)."""
    cdef Py_ssize_t i, j, start
    cdef double zi, g, h, loss_sum = 0.0, conj_sum = 0.0, wn = 0.0, wt = 0.0, mk = 0.0, at
    cdef double scale = 1.0 / (P.lam * P.n)
    cdef bint feasible = True
    for i in range(P.n):
        start = indptr[i]
        zi = sparse_dot(data + start, indices + start, indptr[i + 1] - start, P.w)
        P.z[i] = zi
        loss_sum += loss_value(&P.loss, zi, P.y[i])
        g = loss_deriv(&P.loss, zi, P.y[i])
        if fabs(P.alpha[i] + g) > mk:
            mk = fabs(P.alpha[i] + g)
        if feasible:
            h = loss_conj(&P.loss, P.alpha[i], P.y[i])
            if isfinite(h):
                conj_sum += h
            else:
                feasible = False
    for j in range(P.d):
        wn += P.w[j] * P.w[j]
    primal[0] = loss_sum / P.n + 0.5 * P.lam * wn
    max_kappa[0] = mk
    if feasible:
        dual[0] = -conj_sum / P.n - 0.5 * P.lam * wn
        dual_kind[0] = 1.0
    else:
        conj_sum = 0.0
        memset(P.work_d, 0, P.d * sizeof(double))
        for i in range(P.n):
            at = -loss_deriv(&P.loss, P.z[i], P.y[i])
            conj_sum += loss_conj(&P.loss, at, P.y[i])
            if at != 0.0:
                start = indptr[i]
                sparse_axpy(at * scale, data + start, indices + start, indptr[i + 1] - start,
                            P.work_d)
        for j in range(P.d):
            wt += P.work_d[j] * P.work_d[j]
        dual[0] = -conj_sum / P.n - 0.5 * P.lam * wt
        dual_kind[0] = 0.0
    gap[0] = primal[0] - dual[0]


# ---------------------------------------------------------------------------------------
# epochs: n coordinate steps each; return 1 when every residue is exactly zero (optimum)


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
    """adfSDCA+ (Algorithm 2, spec 2.5): p from the epoch-start residues, theta (18) fixed
    for the epoch, fresh kappa_i for the picked row, eta capped, p_i /= shrink after."""
    cdef Py_ssize_t t, i, j, n = P.n
    cdef double K2 = 0.0, U, theta, p_i, eta, kappa, ui
    for j in range(n):
        kappa = _residue(data, indices, indptr, P, j)
        P.u[j] = P.s[j] * fabs(kappa)
        K2 += kappa * kappa
    sumtree_build(&P.tree, P.u)
    U = sumtree_total(&P.tree)
    if not U > 0.0:
        return 1
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
    cdef double k = P.alpha[r] + loss_deriv(&P.loss, P.z[r], P.y[r])
    P.kappa[r] = k
    sumtree_set(&P.tree, r, P.s[r] * fabs(k))
    sumtree_set(&P.tree2, r, k * k)


cdef int _epoch_exact(const floating* data, const index_t* indices, const index_t* indptr,
                      const floating* csc_data, const index_t* csc_indices,
                      const index_t* csc_indptr, DfProblem* P, Py_ssize_t epoch,
                      double cap) noexcept nogil:
    """Exact adfSDCA (Algorithm 1) with margins, residues and both trees kept current
    through the CSC copy (spec 2.4); everything is recomputed from w at the epoch start."""
    cdef Py_ssize_t t, i, j, k, m, f, r, start, nm, n = P.n
    cdef Py_ssize_t stamp_id
    cdef double U, K2, theta, eta, dalpha, c, cx, zj
    for j in range(n):
        start = indptr[j]
        zj = sparse_dot(data + start, indices + start, indptr[j + 1] - start, P.w)
        P.z[j] = zj
        P.kappa[j] = P.alpha[j] + loss_deriv(&P.loss, zj, P.y[j])
        P.u[j] = P.s[j] * fabs(P.kappa[j])
        P.stamp[j] = -1
    sumtree_build(&P.tree, P.u)
    for j in range(n):
        P.u[j] = P.kappa[j] * P.kappa[j]
    sumtree_build(&P.tree2, P.u)
    for t in range(n):
        U = sumtree_total(&P.tree)
        if not U > 0.0:
            return 1
        i = sumtree_draw(&P.tree, &P.rng)
        _record(P, i)
        K2 = sumtree_total(&P.tree2)
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
    return 0


cdef inline double _mb_weights(DfProblem* P, double eso) noexcept nogil:
    """u_j = sqrt(eso v_j gamma + n lam^2) |kappa_j| (p* of (17) with the ESO weights
    v'_j = eso v_j); returns sum kappa_j^2."""
    cdef Py_ssize_t j
    cdef double gamma = P.lam * P.ltilde, nl2 = P.n * P.lam * P.lam, K2 = 0.0, k
    for j in range(P.n):
        k = P.kappa[j]
        K2 += k * k
        P.u[j] = sqrt(eso * P.sqnorm[j] * gamma + nl2) * fabs(k)
    return K2


cdef int _epoch_minibatch(const floating* data, const index_t* indices, const index_t* indptr,
                          const floating* csc_data, const index_t* csc_indices,
                          const index_t* csc_indptr, DfProblem* P, Py_ssize_t b,
                          int sampler, double cap) noexcept nogil:
    """Mini-batch adfSDCA (Algorithm 4, spec 2.8), ceil(n/b) iterations. Per iteration, all
    at the same w: kappa_j = alpha_j + phi'(z_j) for every j (margins z kept current through
    the CSC copy); u_j = sqrt(v'_j gamma + n lam^2) |kappa_j|, v'_j = min(b_eff, omega) v_j;
    q = water-filled b_eff u / sum(u) (sum q = b_eff, q <= 1); S with |S| = b_eff and
    P(i in S) = q_i (Algorithm 3 or systematic); theta = Theta_b of (75) with p = q/b_eff,
    which simplifies to n lam^2 sum kappa^2 / sum_i u_i^2 / q_i; dalpha_i = -(theta/q_i)
    kappa_i for i in S (capped if cap > 0), then alpha, w and z are updated serially in the
    order of S. z = Xw is recomputed at the epoch start (no drift)."""
    cdef Py_ssize_t t, it, j, k, l, i, m, f, r, start, nb, be, n = P.n
    cdef Py_ssize_t iters = (n + b - 1) // b
    cdef double K2, denom, theta, eta, ecap, c, cx, zj, eso
    for j in range(n):
        start = indptr[j]
        zj = sparse_dot(data + start, indices + start, indptr[j + 1] - start, P.w)
        P.z[j] = zj
    for it in range(iters):
        for j in range(n):
            P.kappa[j] = P.alpha[j] + loss_deriv(&P.loss, P.z[j], P.y[j])
        eso = P.eso
        K2 = _mb_weights(P, eso)
        be = mb_prepare(&P.mb, P.u, b, sampler)
        if be == 0:
            return 1                                   # every residue is 0: the optimum
        if be < b and be < eso:
            # fewer than b nonzero residues (pitfall 8): the ESO factor of |S| = b_eff
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
                ecap = cap * n * P.lam / (n * P.lam + P.ltilde * eso * P.sqnorm[i])
                if eta > ecap:
                    eta = ecap
            P.dbatch[k] = -eta * P.kappa[i]
        for k in range(nb, b):
            _record(P, -1)
        for k in range(nb):                            # the aggregated update, in order of S
            i = P.batch[k]
            if P.dbatch[k] == 0.0:
                continue
            P.alpha[i] += P.dbatch[k]
            c = P.dbatch[k] / (P.lam * n)
            start = indptr[i]
            for l in range(start, indptr[i + 1]):
                f = indices[l]
                cx = c * data[l]
                P.w[f] += cx
                for m in range(csc_indptr[f], csc_indptr[f + 1]):
                    P.z[csc_indices[m]] += cx * csc_data[m]
    return 0


cdef double _loss_smoothness(const Loss* L) noexcept nogil:
    if L.kind == LOSS_SQUARED:
        return 1.0
    if L.kind == LOSS_LOGISTIC:
        return 0.25
    if L.kind == LOSS_SMOOTH_HINGE or L.kind == LOSS_SQUARED_HINGE:
        return 1.0 / L.param
    return -1.0        # hinge: not smooth


cdef int _prepare(DfProblem* P, const DfOptions* opt) noexcept nogil:
    """Constants of the method (spec 2.1-2.5); 0, or -1 for a missing buffer / no memory."""
    cdef Py_ssize_t i, n = P.n
    cdef double nl = n * P.lam, vmax = 0.0, S = 0.0, gamma = P.lam * P.ltilde
    P.tree.tree = NULL
    P.tree2.tree = NULL
    P.alias.prob = NULL
    P.alias.owned = False
    if opt.method == DF_UNIFORM:
        for i in range(n):
            if P.sqnorm[i] > vmax:
                vmax = P.sqnorm[i]
        P.theta = P.lam / (nl + P.ltilde * vmax)
        return 0
    if P.eta == NULL:
        return -1
    if opt.method == DF_IMPORTANCE:
        if P.alias_prob == NULL or P.alias_idx == NULL:
            return -1
        for i in range(n):
            P.eta[i] = nl + P.ltilde * P.sqnorm[i]        # c_i, the unnormalised p_i
            S += P.eta[i]
        alias_init(&P.alias, n, P.alias_prob, P.alias_idx)
        if alias_build(&P.alias, P.eta) != 0:
            return -1
        P.theta = nl / S
        for i in range(n):
            P.eta[i] = P.theta / (P.eta[i] / S)           # theta_IS / p_i
        return 0
    if opt.method == DF_EXACT and opt.batch_size > 1:
        if P.kappa == NULL or P.u == NULL or P.batch == NULL or P.dbatch == NULL:
            return -1
        if mbsampler_init(&P.mb, n) != 0:
            P.mb.order = NULL
            return -1
        return 0
    if P.s == NULL or P.kappa == NULL or P.u == NULL or P.tree_buf == NULL:
        return -1
    for i in range(n):
        P.s[i] = sqrt(P.sqnorm[i] * gamma + n * P.lam * P.lam)
        P.eta[i] = opt.step_cap * nl / (nl + P.ltilde * P.sqnorm[i])
    sumtree_init(&P.tree, n, P.tree_buf)
    if opt.method == DF_EXACT:
        if P.tree2_buf == NULL or P.stamp == NULL or P.marked == NULL:
            return -1
        sumtree_init(&P.tree2, n, P.tree2_buf)
    return 0


cdef int dfsdca_run(const floating* data, const index_t* indices, const index_t* indptr,
                    const floating* csc_data, const index_t* csc_indices,
                    const index_t* csc_indptr, DfProblem* P, const DfOptions* opt,
                    DfResult* res, df_hook hook, void* ctx) noexcept nogil:
    cdef Py_ssize_t i, epoch = 0, omega = 0
    cdef bint minibatch = opt.method == DF_EXACT and opt.batch_size > 1
    cdef double primal = NAN, dual = NAN, gap = NAN, mk = NAN, kind = NAN, p0 = 0.0, target
    cdef bint checked, exact_zero = False, cold = True
    if opt.method == DF_EXACT and (csc_data == NULL or csc_indices == NULL or csc_indptr == NULL):
        return -1
    if minibatch:
        for i in range(P.d):
            if csc_indptr[i + 1] - csc_indptr[i] > omega:
                omega = csc_indptr[i + 1] - csc_indptr[i]
        P.eso = <double>(opt.batch_size if opt.batch_size < omega else omega)
    if _prepare(P, opt) != 0:
        return -1
    for i in range(P.n):
        p0 += loss_value(&P.loss, 0.0, P.y[i])
        if P.alpha[i] != 0.0:
            cold = False
    p0 /= P.n
    target = opt.tol * p0
    rng_seed(&P.rng, opt.seed)
    res.p0 = p0
    res.status = DF_MAX_EPOCHS
    if not cold:
        _resync_w(data, indices, indptr, P)
    else:
        memset(P.w, 0, P.d * sizeof(double))
    _check(data, indices, indptr, P, &primal, &dual, &gap, &mk, &kind)
    if gap <= target:
        res.status = DF_CONVERGED
    if hook != NULL and hook(ctx, 0, primal, dual, gap, mk, kind) != 0:
        if res.status != DF_CONVERGED:
            res.status = DF_STOPPED
    while res.status == DF_MAX_EPOCHS and epoch < opt.max_epochs:
        epoch += 1
        if opt.method == DF_UNIFORM or opt.method == DF_IMPORTANCE:
            _epoch_fixed(data, indices, indptr, P, opt.method)
        elif opt.method == DF_PLUS:
            exact_zero = _epoch_plus(data, indices, indptr, P, opt.shrink, opt.step_cap > 0.0) != 0
        elif minibatch:
            exact_zero = _epoch_minibatch(data, indices, indptr, csc_data, csc_indices,
                                          csc_indptr, P, opt.batch_size, opt.mb_sampler,
                                          opt.step_cap) != 0
        else:
            exact_zero = _epoch_exact(data, indices, indptr, csc_data, csc_indices, csc_indptr,
                                      P, epoch - 1, opt.step_cap) != 0
        checked = exact_zero or epoch % opt.check_every == 0 or epoch == opt.max_epochs
        if checked:
            _check(data, indices, indptr, P, &primal, &dual, &gap, &mk, &kind)
            if gap <= target or exact_zero:
                # certify with w recomputed from alpha (no incremental rounding drift)
                _resync_w(data, indices, indptr, P)
                _check(data, indices, indptr, P, &primal, &dual, &gap, &mk, &kind)
                if gap <= target:
                    res.status = DF_CONVERGED
        if hook != NULL and hook(ctx, epoch, primal if checked else NAN, dual if checked else NAN,
                                 gap if checked else NAN, mk if checked else NAN,
                                 kind if checked else NAN) != 0:
            if res.status != DF_CONVERGED:
                res.status = DF_STOPPED
        if exact_zero and res.status == DF_MAX_EPOCHS:
            break           # every residue is 0 yet the certificate is above tol (tol = 0)
    if minibatch and P.mb.order != NULL:
        mbsampler_free(&P.mb)
    res.n_epochs = epoch
    res.primal = primal
    res.dual = dual
    res.gap = gap
    res.theta = P.theta
    return res.status


# ---------------------------------------------------------------------------------------
# Python driver


cdef int _python_hook(void* ctx, Py_ssize_t epoch, double primal, double dual, double gap,
                      double max_kappa, double dual_kind) noexcept nogil:
    with gil:
        return report_or_stop(<object>ctx, (epoch, primal, dual, gap, max_kappa, dual_kind))


def loss_smoothness(str loss, double param=0.0):
    """Ltilde of a loss of the table (-1 for the hinge, which is not smooth)."""
    cdef Loss L = make_loss(loss, param)
    return _loss_smoothness(&L)


def _fit(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
         Py_ssize_t n_features, const double[::1] y, str loss, double param, double lam,
         double[::1] w, double[::1] alpha, const double[::1] sqnorm, int method, double tol,
         Py_ssize_t max_epochs, Py_ssize_t check_every, unsigned long long seed, double shrink,
         double step_cap, int verbose, callback, csc=None, trace=None,
         Py_ssize_t batch_size=1, int mb_sampler=0):
    """Run dfsdca_run on validated arrays; w and alpha are overwritten in place (alpha is the
    start). csc: (data, indices, indptr) of X by columns, same dtypes (DF_EXACT).
    trace: an intp array receiving the sampled coordinates in order.
    batch_size > 1 with DF_EXACT: mini-batch adfSDCA (mb_sampler: 0 Algorithm 3, 1 systematic).
    Returns (status, n_epochs, primal, dual, gap, p0, theta, history_rows)."""
    cdef Py_ssize_t n = alpha.shape[0], d = n_features
    if indptr.shape[0] != n + 1 or y.shape[0] != n or w.shape[0] != d or sqnorm.shape[0] != n:
        raise ValueError("inconsistent shapes")
    cdef Loss L = make_loss(loss, param)
    cdef double lt = _loss_smoothness(&L)
    if not lt > 0.0:
        raise ValueError(f"loss {loss!r} is not smooth; dual-free SDCA needs a smooth loss")
    cdef DfProblem P
    cdef DfOptions opt = df_default_options()
    cdef DfResult res
    z = np.zeros(n)
    work_d = np.zeros(max(d, 1))
    cdef double[::1] zv = z, wdv = work_d
    cdef double[::1] wv = w if d > 0 else np.zeros(1)
    df_problem_init(&P, n, d, &y[0], L, lt, lam, &wv[0], &alpha[0], &sqnorm[0], &zv[0], &wdv[0])
    cdef double[::1] b_eta, b_s, b_k, b_u, b_t1, b_t2, b_ap, b_db
    cdef Py_ssize_t[::1] b_st, b_mk, b_ai, b_bt
    cdef bint minibatch = method == DF_EXACT and batch_size > 1
    if not 1 <= batch_size <= n:
        raise ValueError(f"batch_size must lie in [1, n = {n}]; got {batch_size}")
    cdef const floating[::1] cdata
    cdef const index_t[::1] cind
    cdef const index_t[::1] cptr
    cdef const floating* cdp = NULL
    cdef const index_t* cip = NULL
    cdef const index_t* cpp = NULL
    cdef Py_ssize_t tsize = 2
    if method != DF_UNIFORM:
        b_eta = np.zeros(n)
        P.eta = &b_eta[0]
    if method == DF_IMPORTANCE:
        b_ap = np.zeros(n)
        b_ai = np.zeros(n, dtype=np.intp)
        P.alias_prob = &b_ap[0]
        P.alias_idx = &b_ai[0]
    if method == DF_PLUS or method == DF_EXACT:
        while tsize < 2 * n:
            tsize *= 2
        b_s = np.zeros(n)
        b_k = np.zeros(n)
        b_u = np.zeros(n)
        b_t1 = np.zeros(tsize)
        P.s = &b_s[0]
        P.kappa = &b_k[0]
        P.u = &b_u[0]
        P.tree_buf = &b_t1[0]
    if method == DF_EXACT:
        if csc is None:
            raise ValueError("the exact method needs the CSC copy of X")
        if minibatch:
            b_bt = np.zeros(batch_size, dtype=np.intp)
            b_db = np.zeros(batch_size)
            P.batch = &b_bt[0]
            P.dbatch = &b_db[0]
        else:
            b_t2 = np.zeros(tsize)
            b_st = np.zeros(n, dtype=np.intp)
            b_mk = np.zeros(n, dtype=np.intp)
            P.tree2_buf = &b_t2[0]
            P.stamp = &b_st[0]
            P.marked = &b_mk[0]
        cdata, cind, cptr = csc
        if cptr.shape[0] != d + 1:
            raise ValueError("inconsistent CSC shapes")
        # (zero-length arrays still have a valid base pointer; nothing is read from it)
        cdp = &cdata[0]
        cip = &cind[0]
        cpp = &cptr[0]
    P.trace = intp_out(trace, &P.trace_len)
    opt.method = method
    opt.tol = tol
    opt.max_epochs = max_epochs
    opt.check_every = check_every
    opt.seed = seed
    opt.shrink = shrink
    opt.step_cap = step_cap
    opt.batch_size = batch_size
    opt.mb_sampler = mb_sampler
    mon = EpochMonitor(callback, verbose, ("primal", "dual", "gap", "max_kappa", "dual_kind"),
                       coef=np.asarray(wv)[:d])
    cdef int status
    with nogil:
        status = dfsdca_run(&data[0], &indices[0], &indptr[0], cdp, cip, cpp, &P, &opt, &res,
                            _python_hook, <void*>mon)
    if mon.error is not None:
        raise mon.error
    if status < 0:
        raise MemoryError("dual-free SDCA: a work buffer could not be set up")
    return (res.status, res.n_epochs, res.primal, res.dual, res.gap, res.p0, res.theta,
            mon.rows)
