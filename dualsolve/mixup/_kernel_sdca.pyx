# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Kernel SDCA for (mixup) ERM in an RKHS (MixupSDCA, Obi et al. 2025; docs/mixup.md), and
kernel SGD, its baseline. The C entries (``kernel_sdca_run``, ``kernel_sgd_run``) and their
problem are described in ``_kernel_sdca.pxd``.

The iterate is kept as scores: ``z = K beta / (lam n)`` over the n_points training points,
where ``beta_p`` sums the dual variables of the coordinates that live on point p (one per
point, or two for the decomposed dual). A step on coordinate j costs one kernel column:
``z += delta / (lam n) K[:, p]``, O(n_points). The step rules are those of the linear engine
(``dualsolve.sdca.steps``); gap checks recompute ``z = K beta / (lam n)`` from scratch with
``beta`` rebuilt from alpha, so the gap is exact, and follow the same schedule
(``dualsolve.sdca.schedule``).
"""
from libc.math cimport INFINITY, NAN
from libc.stdlib cimport malloc, free

import numpy as np

from dualsolve._core.hooks cimport python_hook
from dualsolve._core.ksum cimport KahanSum, ksum_new, ksum_add, ksum_value
from dualsolve._core.status cimport (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_NO_MEMORY,
                                     epoch_hook, report_epoch, gap_certifies, gap_floor)
from dualsolve._core.kernels cimport ColumnSource
from dualsolve._core.losses cimport Loss, loss_value, loss_conj, loss_deriv as loss_deriv_, make_loss
from dualsolve._core.rng cimport rng_state, rng_seed, rng_below, rng_shuffle
from dualsolve._core.buffers cimport double_ptr, intp_ptr
from dualsolve.sdca.steps cimport STEP_EXACT, coordinate_step, step_params_init
from dualsolve.sdca.schedule cimport (CheckSchedule, schedule_init, schedule_check_now,
                                      schedule_checked,
                                      schedule_target)


cdef inline Py_ssize_t _poll_chunk(Py_ssize_t m) noexcept nogil:
    """Steps between two polls: a step costs about one column update (m multiply-adds)."""
    cdef Py_ssize_t chunk = KERNEL_POLL_WORK // (m if m > 0 else 1)
    return chunk if chunk > 0 else 1


# ---------------------------------------------------------------------------------------
# kernel SDCA


cdef KernelOptions kernel_default_options() noexcept nogil:
    cdef KernelOptions o
    o.tol = 1e-6
    o.max_epochs = 1000
    o.check_every = 1
    o.sampling = KERNEL_SAMPLE_PERMUTATION
    o.seed = 0
    return o


cdef void kernel_problem_init(KernelProblem* P, Py_ssize_t n, const double* y, Loss loss,
                              double lam, double* alpha, double* beta) noexcept nogil:
    P.n = n
    P.n_points = n
    P.point = NULL
    P.weight = NULL
    P.y = y
    P.loss = loss
    step_params_init(&P.step, STEP_EXACT, 0.0, <double>n, 1, 0, NULL, NULL)
    P.lam = lam
    P.alpha = alpha
    P.beta = beta
    P.z = NULL
    P.index = NULL
    P.pass_gap = 0.0


cdef inline double _fy(const KernelProblem* P, double z, double a, double y, double c) noexcept nogil:
    if c == 1.0:
        return loss_value(&P.loss, z, y) + loss_conj(&P.loss, a, y) + a * z
    return c * (loss_value(&P.loss, z, y) + loss_conj(&P.loss, a / c, y)) + a * z


cdef void _kernel_check(ColumnSource K, KernelProblem* P, double* primal, double* dual,
                        double* gap) noexcept nogil:
    """Exact primal, dual, gap: beta from alpha, z = K beta / (lam n) from scratch."""
    cdef Py_ssize_t j, p
    cdef double scale = 1.0 / (P.lam * P.n), c, fnorm, loss_sum, conj_sum
    cdef KahanSum fs = ksum_new(), ls = ksum_new(), cs = ksum_new()
    for p in range(P.n_points):
        P.beta[p] = 0.0
    for j in range(P.n):
        P.beta[P.point[j] if P.point != NULL else j] += P.alpha[j]
    K.matvec(P.beta, P.z)
    for p in range(P.n_points):
        P.z[p] *= scale
        ksum_add(&fs, P.beta[p] * P.z[p])
    fnorm = ksum_value(&fs) * scale   # ||f||^2 = beta^T K beta / (lam n)^2
    for j in range(P.n):
        p = P.point[j] if P.point != NULL else j
        c = P.weight[j] if P.weight != NULL else 1.0
        ksum_add(&ls, c * loss_value(&P.loss, P.z[p], P.y[j]))
        ksum_add(&cs, c * loss_conj(&P.loss, P.alpha[j] / c, P.y[j]))
    loss_sum, conj_sum = ksum_value(&ls), ksum_value(&cs)
    primal[0] = loss_sum / P.n + 0.5 * P.lam * fnorm
    dual[0] = -conj_sum / P.n - 0.5 * P.lam * fnorm
    gap[0] = (loss_sum + conj_sum) / P.n + P.lam * fnorm


cdef int _kernel_epoch(ColumnSource K, KernelProblem* P, bint permute, bint estimate,
                       Py_ssize_t chunk, epoch_hook hook, void* ctx) noexcept nogil:
    """One pass of n coordinate steps; 0, or what a poll of the hook returned (the steps
    made so far are kept, with beta and z up to date)."""
    cdef Py_ssize_t k, j, p, q, n = P.n, m = P.n_points
    cdef Py_ssize_t stride = 1 + n // 4096, sampled = 0, left = chunk
    cdef double scale = 1.0 / (P.lam * n), z, a0, a, c, delta, f
    cdef double pass_gap = 0.0
    cdef const double* col
    cdef int stop
    if permute:
        rng_shuffle(&P.rng, P.index, n)
    for k in range(n):
        left -= 1
        if left == 0:
            left = chunk
            if hook != NULL:
                stop = hook(ctx, -1, NULL)
                if stop != 0:
                    return stop
        j = P.index[k] if permute else <Py_ssize_t>rng_below(&P.rng, <unsigned long long>n)
        p = P.point[j] if P.point != NULL else j
        z = P.z[p]
        a0 = P.alpha[j]
        c = P.weight[j] if P.weight != NULL else 1.0
        if estimate and k % stride == 0:
            pass_gap += _fy(P, z, a0, P.y[j], c)
            sampled += 1
        a = coordinate_step(&P.loss, P.y[j], z, a0, K.diag[p] * scale, c, &P.step, j)
        delta = a - a0
        if delta != 0.0:
            P.alpha[j] = a
            P.beta[p] += delta
            col = K.column(p)
            f = delta * scale
            for q in range(m):
                P.z[q] += f * col[q]
    P.pass_gap = pass_gap * n / sampled if sampled > 0 else 0.0
    return 0


    stop = hook(ctx, epoch, values)
    if stop != 0 and status != STATUS_CONVERGED:
        return stop
    return status


cdef int kernel_sdca_run(ColumnSource K, KernelProblem* P, const KernelOptions* opt,
                         KernelResult* res, epoch_hook hook, void* ctx) noexcept nogil:
    """Solve to ``gap_certifies`` (status.pxd: gap <= tol * D, or the rounding floor of
    R[0]; never for tol = 0) or ``max_epochs``; returns ``res.status``."""
    cdef Py_ssize_t n = P.n, m = K.n, j, epoch = 0
    cdef double p0 = 0.0, primal = NAN, dual = NAN, gap = NAN, estimate, predicted, target, floor
    cdef bint checked
    cdef int stop
    cdef CheckSchedule sched
    cdef double values[KERNEL_SDCA_HOOK_VALUES]
    res.n_epochs = 0
    res.primal = res.dual = res.gap = res.p0 = NAN
    if P.point == NULL and n != m:
        res.status = -1
        return -1
    P.n_points = m
    P.z = <double*>malloc((m if m > 0 else 1) * sizeof(double))
    P.index = <Py_ssize_t*>malloc((n if n > 0 else 1) * sizeof(Py_ssize_t))
    if P.z == NULL or P.index == NULL:
        free(P.z)
        free(P.index)
        P.z = NULL
        P.index = NULL
        res.status = STATUS_NO_MEMORY
        return res.status
    for j in range(n):
        P.index[j] = j
    rng_seed(&P.rng, opt.seed)
    for j in range(n):
        p0 += (P.weight[j] if P.weight != NULL else 1.0) * loss_value(&P.loss, 0.0, P.y[j])
    p0 /= n
    res.p0 = p0
    # tol = 0 runs the whole budget (gap_certifies never holds for it)
    floor = gap_floor(p0)
    # work model: a step costs a column update (m), a check one K-vector product (m^2)
    schedule_init(&sched, opt.check_every, <double>m * m)
    cdef Py_ssize_t chunk = _poll_chunk(m)
    cdef bint permute = opt.sampling == KERNEL_SAMPLE_PERMUTATION
    cdef bint estimating = opt.check_every != 1

    _kernel_check(K, P, &primal, &dual, &gap)
    res.status = STATUS_CONVERGED if gap_certifies(gap, primal - gap, opt.tol, floor) \
        else STATUS_MAX_EPOCHS
    target = schedule_target(primal, dual, opt.tol, floor)
    values[0], values[1], values[2], values[3], values[4] = primal, dual, gap, NAN, <double>n
    res.status = report_epoch(hook, ctx, 0, values, res.status)
    while res.status == STATUS_MAX_EPOCHS and epoch < opt.max_epochs:
        stop = _kernel_epoch(K, P, permute, estimating, chunk, hook, ctx)
        if stop != 0:
            res.status = stop
            break
        epoch += 1
        estimate = NAN if not estimating else P.pass_gap / n
        checked = schedule_check_now(&sched, epoch, opt.max_epochs, estimate, <double>n * m,
                                     target, &predicted)
        if checked:
            _kernel_check(K, P, &primal, &dual, &gap)
            if gap_certifies(gap, primal - gap, opt.tol, floor):
                res.status = STATUS_CONVERGED
            schedule_checked(&sched, gap)
            target = schedule_target(primal, dual, opt.tol, floor)
        values[0] = primal if checked else NAN
        values[1] = dual if checked else NAN
        values[2] = gap if checked else NAN
        values[3] = estimate
        values[4] = <double>n
        res.status = report_epoch(hook, ctx, epoch, values, res.status)
    free(P.z)
    free(P.index)
    P.z = NULL
    P.index = NULL
    res.n_epochs = epoch
    res.primal = primal
    res.dual = dual
    res.gap = gap
    return res.status


def kernel_sdca(ColumnSource K not None, const double[::1] y, str loss, double param,
                double lam, double[::1] alpha, double tol, Py_ssize_t max_epochs,
                Py_ssize_t check_every, int sampling, unsigned long long seed, mon, point=None,
                weight=None, int step_rule=0, double step_gamma=0.0, int approx_tight=1,
                int paper_gamma=0, grid=None):
    """Run kernel_sdca_run (alpha is written in place; it may hold a warm start), reporting
    every epoch to ``mon`` (an EpochMonitor of KERNEL_SDCA_HOOK_VALUES values: primal, dual,
    gap, gap_estimate, n_active; every coordinate stays active here).

    ``sampling``: 0 a permutation per epoch, 1 uniform with replacement. The optional
    arguments are those of ``dualsolve.sdca._sdca.solve``. Returns (status, n_epochs,
    primal, dual, gap, p0, beta) with a ``dualsolve._core.status`` code; tol = 0 runs the
    whole budget.
    """
    cdef KernelProblem P
    cdef KernelOptions opt
    cdef KernelResult res
    cdef Py_ssize_t n = y.shape[0], m = K.n
    if point is None and n != m:
        raise ValueError(f"y has {n} entries for a {m} x {m} kernel matrix")
    if alpha.shape[0] != n:
        raise ValueError(f"alpha has {alpha.shape[0]} entries for {n} coordinates")
    if mon.n_values != KERNEL_SDCA_HOOK_VALUES:
        raise ValueError(f"the monitor expects {mon.n_values} values; kernel_sdca_run "
                         f"reports {KERNEL_SDCA_HOOK_VALUES}")
    beta = np.zeros(m)
    cdef double[::1] bv = beta
    kernel_problem_init(&P, n, &y[0], make_loss(loss, param), lam, &alpha[0], &bv[0])
    P.point = intp_ptr(point, n, "point")
    P.weight = double_ptr(weight, n, "weight")
    step_params_init(&P.step, step_rule, step_gamma, n, approx_tight, paper_gamma,
                     NULL if grid is None else double_ptr(grid[0], n, "grid_lo"),
                     NULL if grid is None else double_ptr(grid[1], n, "grid_hi"))
    opt.tol = tol
    opt.max_epochs = max_epochs
    opt.check_every = check_every
    opt.sampling = sampling
    opt.seed = seed
    with nogil:
        kernel_sdca_run(K, &P, &opt, &res, python_hook, <void*>mon)
    return res.status, res.n_epochs, res.primal, res.dual, res.gap, res.p0, beta


# ---------------------------------------------------------------------------------------
# kernel SGD


cdef void _sgd_check(ColumnSource K, const double* beta, double* z, double* a, double* Ka,
                     const double* y, const Loss* L, double lam, Py_ssize_t n, double* primal,
                     double* dual, double* gap) noexcept nogil:
    """For f = sum_j beta_j k(x_j, .): the exact primal R[f] (z = K beta recomputed), and the
    dual and gap of the SDCA dual point a_i = -phi'(f(x_i); y_i), whose function is
    f_a = sum_i a_i k(x_i, .) / (lam n) (one more K-vector product)."""
    cdef Py_ssize_t i
    cdef KahanSum quad = ksum_new(), ls = ksum_new(), cs = ksum_new(), an = ksum_new()
    cdef double fa
    K.matvec(beta, z)
    for i in range(n):
        ksum_add(&quad, beta[i] * z[i])
        ksum_add(&ls, loss_value(L, z[i], y[i]))
        a[i] = -loss_deriv_(L, z[i], y[i])
        ksum_add(&cs, loss_conj(L, a[i], y[i]))
    K.matvec(a, Ka)
    for i in range(n):
        ksum_add(&an, a[i] * Ka[i])
    fa = ksum_value(&an) / (lam * n) / (lam * n)      # ||f_a||^2
    primal[0] = 0.5 * lam * ksum_value(&quad) + ksum_value(&ls) / n
    dual[0] = -0.5 * lam * fa - ksum_value(&cs) / n
    gap[0] = primal[0] - dual[0]


cdef KernelSgdOptions kernel_sgd_default_options() noexcept nogil:
    cdef KernelSgdOptions o
    o.tol = 1e-6
    o.max_epochs = 100
    o.step = 0.1
    o.halve_on_plateau = 1
    o.sampling = KERNEL_SAMPLE_UNIFORM      # train_kernel_sgd's default (SGD's setting)
    o.seed = 0
    return o


cdef void kernel_sgd_problem_init(KernelSgdProblem* P, Py_ssize_t n, const double* y, Loss loss,
                                  double lam, double* beta) noexcept nogil:
    P.n = n
    P.y = y
    P.loss = loss
    P.lam = lam
    P.beta = beta


cdef int _sgd_epoch(ColumnSource K, KernelSgdProblem* P, double* zt, Py_ssize_t* index,
                    rng_state* rng, bint permute, double step, double shrink,
                    Py_ssize_t chunk, epoch_hook hook, void* ctx) noexcept nogil:
    """n SGD steps on beta (scores zt = K beta kept alongside); 0, or what a poll of the
    hook returned (beta and zt then hold the steps made so far)."""
    cdef Py_ssize_t n = P.n, k, i, q, left = chunk
    cdef double* bt = P.beta
    cdef const double* y = P.y
    cdef double s = 1.0, g, f
    cdef const double* col
    cdef int stop = 0
    if permute:
        rng_shuffle(rng, index, n)
    for k in range(n):
        left -= 1
        if left == 0:
            left = chunk
            if hook != NULL:
                stop = hook(ctx, -1, NULL)
                if stop != 0:
                    break
        i = index[k] if permute else <Py_ssize_t>rng_below(rng, <unsigned long long>n)
        g = loss_deriv_(&P.loss, s * zt[i], y[i])
        s *= shrink
        if s < 1e-150:                   # renormalise before underflow
            for q in range(n):
                bt[q] *= s
                zt[q] *= s
            s = 1.0
        if g != 0.0:
            f = -step * g / s
            bt[i] += f
            col = K.column(i)
            for q in range(n):
                zt[q] += f * col[q]
    # the shrink lives in the scalar s: fold it into beta and the scores
    for q in range(n):
        bt[q] *= s
        zt[q] *= s
    return stop


cdef int kernel_sgd_run(ColumnSource K, KernelSgdProblem* P, const KernelSgdOptions* opt,
                        KernelSgdResult* res, epoch_hook hook, void* ctx) noexcept nogil:
    """Kernel SGD from P.beta to ``gap_certifies`` (status.pxd: gap <= tol * D, or the
    rounding floor of R[0]; never for tol = 0) or ``max_epochs``; returns ``res.status``."""
    cdef Py_ssize_t n = P.n, i, q, epoch = 0, since_best = 0
    cdef double step = opt.step, shrink = 1.0 - opt.step * P.lam
    cdef double primal = NAN, dual = NAN, gap = NAN, p0 = 0.0, floor, best_gap = INFINITY
    cdef double* zt
    cdef Py_ssize_t* index
    cdef rng_state rng
    cdef int stop
    cdef double values[KERNEL_SGD_HOOK_VALUES]
    res.n_epochs = 0
    res.primal = res.dual = res.gap = res.p0 = NAN
    res.step = step
    if n != K.n:
        res.status = -1
        return -1
    # one block: the running scores zt, then the check's K beta, dual point a and K a
    zt = <double*>malloc(4 * (n if n > 0 else 1) * sizeof(double))
    index = <Py_ssize_t*>malloc((n if n > 0 else 1) * sizeof(Py_ssize_t))
    if zt == NULL or index == NULL:
        free(zt)
        free(index)
        res.status = STATUS_NO_MEMORY
        return res.status
    cdef double* zex = zt + n
    cdef double* a = zt + 2 * n
    cdef double* Ka = zt + 3 * n
    for i in range(n):
        index[i] = i
    rng_seed(&rng, opt.seed)
    for i in range(n):
        p0 += loss_value(&P.loss, 0.0, P.y[i])
    p0 /= n
    res.p0 = p0
    floor = gap_floor(p0)
    cdef Py_ssize_t chunk = _poll_chunk(n)
    cdef bint permute = opt.sampling == KERNEL_SAMPLE_PERMUTATION

    _sgd_check(K, P.beta, zex, a, Ka, P.y, &P.loss, P.lam, n, &primal, &dual, &gap)
    for q in range(n):
        zt[q] = zex[q]
    res.status = STATUS_CONVERGED if gap_certifies(gap, primal - gap, opt.tol, floor) \
        else STATUS_MAX_EPOCHS
    values[0], values[1], values[2], values[3] = primal, dual, gap, step
    res.status = report_epoch(hook, ctx, 0, values, res.status)
    while res.status == STATUS_MAX_EPOCHS and epoch < opt.max_epochs:
        stop = _sgd_epoch(K, P, zt, index, &rng, permute, step, shrink, chunk, hook, ctx)
        if stop != 0:
            res.status = stop
            break
        epoch += 1
        _sgd_check(K, P.beta, zex, a, Ka, P.y, &P.loss, P.lam, n, &primal, &dual, &gap)
        if gap_certifies(gap, primal - gap, opt.tol, floor):
            res.status = STATUS_CONVERGED
        elif gap < best_gap:
            best_gap = gap
            since_best = 0
        elif opt.halve_on_plateau:
            since_best += 1
            if since_best >= KERNEL_SGD_PLATEAU:
                step *= 0.5
                shrink = 1.0 - step * P.lam
                since_best = 0
                best_gap = gap      # a lucky low of the noisy phase is no yardstick
        values[0], values[1], values[2], values[3] = primal, dual, gap, step
        res.status = report_epoch(hook, ctx, epoch, values, res.status)
    free(zt)
    free(index)
    res.n_epochs = epoch
    res.primal = primal
    res.dual = dual
    res.gap = gap
    res.step = step
    return res.status


def kernel_sgd(ColumnSource K not None, const double[::1] y, str loss, double param, double lam,
               double step, double tol, Py_ssize_t max_epochs, int sampling,
               unsigned long long seed, mon, beta0, bint halve_on_plateau=True):
    """Kernel SGD on f = sum_j beta_j k(x_j, .), from ``beta0``, with a step that is constant
    within an epoch (kernel_sgd_run).

    The shrink ``beta <- (1 - step lam) beta`` is a scalar factor s (beta = s bt, z = s zt),
    so a step costs one kernel column, like an SDCA step. After every epoch the exact primal,
    the dual and the gap of the SDCA dual point a = -phi'(K beta), and the step the epoch
    used, go to ``mon`` (KERNEL_SGD_HOOK_VALUES = 4 values); the run stops when the gap is
    <= tol * D (tol > 0; status.pxd's gap_certifies). ``halve_on_plateau``: halve the step when the gap has not gone
    below its best for KERNEL_SGD_PLATEAU epochs (the constant step's noise floor), so that
    the iterates go on to the optimum. Returns (status, n_epochs, gap, R[0], beta, the last
    step, the last dual value D).
    """
    cdef KernelSgdProblem P
    cdef KernelSgdOptions opt
    cdef KernelSgdResult res
    cdef Py_ssize_t n = y.shape[0], m = K.n
    if n != m:
        raise ValueError(f"y has {n} entries for a {m} x {m} kernel matrix")
    if mon.n_values != KERNEL_SGD_HOOK_VALUES:
        raise ValueError(f"the monitor expects {mon.n_values} values; kernel_sgd_run "
                         f"reports {KERNEL_SGD_HOOK_VALUES}")
    bt = np.array(beta0, dtype=np.float64)
    if bt.shape != (n,):
        raise ValueError(f"beta0 must have shape ({n},); got {bt.shape}")
    cdef double[::1] btv = bt
    kernel_sgd_problem_init(&P, n, &y[0], make_loss(loss, param), lam, &btv[0])
    opt.tol = tol
    opt.max_epochs = max_epochs
    opt.step = step
    opt.halve_on_plateau = halve_on_plateau
    opt.sampling = sampling
    opt.seed = seed
    with nogil:
        kernel_sgd_run(K, &P, &opt, &res, python_hook, <void*>mon)
    return res.status, res.n_epochs, res.gap, res.p0, bt, res.step, res.dual
