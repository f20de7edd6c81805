# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Kernel SDCA for (mixup) ERM in an RKHS (MixupSDCA, Obi et al. 2025; docs/mixup.md).

The iterate is kept as scores: ``z = K beta / (lam n)`` over the n_points training points,
where ``beta_p`` sums the dual variables of the coordinates that live on point p (one per
point, or two for the decomposed dual). A step on coordinate j costs one kernel column:
``z += delta / (lam n) K[:, p]``, O(n_points). The step rules are those of the linear engine
(``dualsolve.sdca.steps``); gap checks recompute ``z = K beta / (lam n)`` from scratch with
``beta`` rebuilt from alpha, so the gap is exact, and follow the same schedule
(``dualsolve.sdca.schedule``).
"""
from libc.math cimport INFINITY, NAN

import numpy as np

from dualsolve._core import status as _status
from dualsolve._core.ksum cimport KahanSum, ksum_new, ksum_add, ksum_value

from dualsolve._core.kernels cimport ColumnSource
from dualsolve._core.losses cimport Loss, loss_value, loss_conj, loss_deriv as loss_deriv_, make_loss
from dualsolve._core.rng cimport rng_state, rng_seed, rng_below, rng_shuffle
from dualsolve._core.buffers cimport double_ptr, intp_ptr
from dualsolve.sdca.steps cimport StepParams, coordinate_step, step_params_init
from dualsolve.sdca.schedule cimport CheckSchedule, schedule_init, schedule_check_now


ctypedef struct KernelProblem:
    Py_ssize_t n              # coordinates (the 1/n of the objective)
    Py_ssize_t n_points       # kernel matrix size
    const Py_ssize_t* point   # coordinate -> point, or NULL (identity)
    const double* weight      # loss weights, or NULL
    const double* y
    Loss loss
    StepParams step
    double lam
    double* alpha             # n
    double* beta              # n_points: sum of alpha over the coordinates of each point
    double* z                 # n_points: K beta / (lam n)
    Py_ssize_t* index         # n
    double pass_gap
    rng_state rng


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


cdef void _kernel_epoch(ColumnSource K, KernelProblem* P, bint permute, bint estimate) noexcept nogil:
    cdef Py_ssize_t k, j, p, q, n = P.n, m = P.n_points
    cdef Py_ssize_t stride = 1 + n // 4096, sampled = 0
    cdef double scale = 1.0 / (P.lam * n), z, a0, a, c, delta, f
    cdef double pass_gap = 0.0
    cdef const double* col
    if permute:
        rng_shuffle(&P.rng, P.index, n)
    for k in range(n):
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


def kernel_sdca(ColumnSource K, const double[::1] y, str loss, double param, double lam,
                double[::1] alpha, double tol, Py_ssize_t max_epochs, Py_ssize_t check_every,
                int sampling, unsigned long long seed, mon, point=None, weight=None,
                int step_rule=0, double step_gamma=0.0, int approx_tight=1, int paper_gamma=0,
                grid=None):
    """Run kernel SDCA (alpha is written in place; it may hold a warm start), reporting every
    epoch to ``mon`` (an EpochMonitor of 5 values: primal, dual, gap, gap_estimate,
    n_active; every coordinate stays active here).

    ``sampling``: 0 a permutation per epoch, 1 uniform with replacement. The optional
    arguments are those of ``dualsolve.sdca._sdca.solve``. Returns (status, n_epochs,
    primal, dual, gap, p0, beta) with a ``dualsolve._core.status`` code; tol = 0 runs the
    whole budget.
    """
    cdef KernelProblem P
    cdef Py_ssize_t n = y.shape[0], m = K.n, j, epoch = 0
    if point is None and n != m:
        raise ValueError(f"y has {n} entries for a {m} x {m} kernel matrix")
    beta = np.zeros(m)
    zbuf = np.zeros(m)
    index = np.arange(n, dtype=np.intp)
    cdef double[::1] bv = beta, zv = zbuf
    cdef Py_ssize_t[::1] iv = index
    P.n = n
    P.n_points = m
    P.point = intp_ptr(point, n, "point")
    P.weight = double_ptr(weight, n, "weight")
    P.y = &y[0]
    P.loss = make_loss(loss, param)
    step_params_init(&P.step, step_rule, step_gamma, n, approx_tight, paper_gamma,
                     NULL if grid is None else double_ptr(grid[0], n, "grid_lo"),
                     NULL if grid is None else double_ptr(grid[1], n, "grid_hi"))
    P.lam = lam
    P.alpha = &alpha[0]
    P.beta = &bv[0]
    P.z = &zv[0]
    P.index = &iv[0]
    rng_seed(&P.rng, seed)

    cdef double p0 = 0.0, primal, dual, gap, estimate, predicted, target
    cdef int status = _status.MAX_EPOCHS, stop = 0
    cdef bint checked
    cdef CheckSchedule sched
    for j in range(n):
        p0 += (P.weight[j] if P.weight != NULL else 1.0) * loss_value(&P.loss, 0.0, P.y[j])
    p0 /= n
    target = tol * p0 if tol > 0.0 else -INFINITY
    # work model: a step costs a column update (m), a check one K-vector product (m^2)
    schedule_init(&sched, check_every, <double>m * m)
    try:
        with nogil:
            _kernel_check(K, &P, &primal, &dual, &gap)
        if gap <= target:
            status = _status.CONVERGED
        stop = mon.step(0, (primal, dual, gap, NAN, <double>n))
        if stop and status != _status.CONVERGED:
            status = stop
        while status == _status.MAX_EPOCHS and epoch < max_epochs:
            epoch += 1
            with nogil:
                _kernel_epoch(K, &P, sampling == 0, check_every != 1)
            estimate = NAN if check_every == 1 else P.pass_gap / n
            checked = schedule_check_now(&sched, epoch, max_epochs, estimate, <double>n * m,
                                         target, &predicted)
            if checked:
                with nogil:
                    _kernel_check(K, &P, &primal, &dual, &gap)
                if gap <= target:
                    status = _status.CONVERGED
            stop = mon.step(epoch, (primal if checked else NAN, dual if checked else NAN,
                                    gap if checked else NAN, estimate, <double>n))
            if stop and status != _status.CONVERGED:
                status = stop
    except KeyboardInterrupt as exc:        # arrived between two epochs, outside the monitor
        mon.error = exc
        status = _status.INTERRUPTED
    return status, epoch, primal, dual, gap, p0, beta


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


# epochs without a new best gap before kernel SGD halves its step
DEF PLATEAU = 3


def kernel_sgd(ColumnSource K, const double[::1] y, str loss, double param, double lam,
               double step, double tol, Py_ssize_t max_epochs, int sampling,
               unsigned long long seed, mon, beta0, bint halve_on_plateau=True):
    """Kernel SGD on f = sum_j beta_j k(x_j, .), from ``beta0``, with a step that is constant
    within an epoch.

    The shrink ``beta <- (1 - step lam) beta`` is a scalar factor s (beta = s bt, z = s zt),
    so a step costs one kernel column, like an SDCA step. After every epoch the exact primal,
    the dual and the gap of the SDCA dual point a = -phi'(K beta), and the step the epoch
    used, go to ``mon`` (4 values);
    the run stops when the gap is <= tol * R[0] (tol > 0). ``halve_on_plateau``: halve the
    step when the gap has not gone below its best for PLATEAU epochs (the constant step's
    noise floor), so that the iterates go on to the optimum. Returns (status, n_epochs, gap, R[0],
    beta, the last step).
    """
    cdef Py_ssize_t n = y.shape[0], m = K.n, k, i, q, epoch = 0
    if n != m:
        raise ValueError(f"y has {n} entries for a {m} x {m} kernel matrix")
    cdef Loss L = make_loss(loss, param)
    cdef rng_state rng
    rng_seed(&rng, seed)
    bt = np.array(beta0, dtype=np.float64)
    zt = np.zeros(n)
    work = np.zeros((3, n))
    index = np.arange(n, dtype=np.intp)
    cdef double[::1] btv = bt, ztv = zt, zexv = work[0], av = work[1], kav = work[2]
    cdef Py_ssize_t[::1] iv = index
    cdef double s = 1.0, shrink = 1.0 - step * lam, g, f, primal, dual, gap, p0 = 0.0, target
    cdef double best_gap = INFINITY
    cdef Py_ssize_t since_best = 0
    cdef int status = _status.MAX_EPOCHS, stop
    cdef const double* col
    for i in range(n):
        p0 += loss_value(&L, 0.0, y[i])
    p0 /= n
    target = tol * p0 if tol > 0.0 else -INFINITY
    try:
        with nogil:
            _sgd_check(K, &btv[0], &zexv[0], &av[0], &kav[0], &y[0], &L, lam, n, &primal,
                       &dual, &gap)
            for q in range(n):
                ztv[q] = zexv[q]
        if gap <= target:
            status = _status.CONVERGED
        stop = mon.step(0, (primal, dual, gap, step))
        if stop and status != _status.CONVERGED:
            status = stop
        while status == _status.MAX_EPOCHS and epoch < max_epochs:
            epoch += 1
            with nogil:
                if sampling == 0:
                    rng_shuffle(&rng, &iv[0], n)
                for k in range(n):
                    i = iv[k] if sampling == 0 else <Py_ssize_t>rng_below(&rng, <unsigned long long>n)
                    g = loss_deriv_(&L, s * ztv[i], y[i])
                    s *= shrink
                    if s < 1e-150:                   # renormalise before underflow
                        for q in range(n):
                            btv[q] *= s
                            ztv[q] *= s
                        s = 1.0
                    if g != 0.0:
                        f = -step * g / s
                        btv[i] += f
                        col = K.column(i)
                        for q in range(n):
                            ztv[q] += f * col[q]
                for q in range(n):
                    btv[q] *= s
                    ztv[q] *= s
                s = 1.0
                _sgd_check(K, &btv[0], &zexv[0], &av[0], &kav[0], &y[0], &L, lam, n, &primal,
                           &dual, &gap)
            if gap <= target:
                status = _status.CONVERGED
            elif gap < best_gap:
                best_gap = gap
                since_best = 0
            elif halve_on_plateau:
                since_best += 1
                if since_best >= PLATEAU:
                    step *= 0.5
                    shrink = 1.0 - step * lam
                    since_best = 0
                    best_gap = gap      # a lucky low of the noisy phase is no yardstick
            stop = mon.step(epoch, (primal, dual, gap, step))
            if stop and status != _status.CONVERGED:
                status = stop
    except KeyboardInterrupt as exc:        # arrived between two epochs, outside the monitor
        mon.error = exc
        status = _status.INTERRUPTED
    return status, epoch, gap, p0, bt, step
