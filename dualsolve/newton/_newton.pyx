# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Line-search Newton with preconditioned conjugate gradients over CSR rows (see
``_newton.pxd`` for the problem, the certificate and the hook's values).

Why this shape (Lin, Weng & Keerthi, 2008; Hsia, Chiang & Lin, 2018, for the preconditioned
truncated Newton of liblinear): at a large C (small lam) the dual coordinate methods need
very many passes, while Newton's iteration count hardly depends on the conditioning; each
Hessian-vector product is one pass over X, ``H v = lam v + X^T (D (X v))`` with
``D_i = c_i phi''(z_i) / n``. A line search on the scores ``z + t X s`` costs O(n) per trial,
so the step length is found without more passes.
"""
from cython.parallel cimport prange
from libc.math cimport sqrt, fabs, isfinite, INFINITY, NAN
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

import numpy as np

#: NewtonResult.stalled's kinds, for the Python side
STALLED_ROUNDING = NEWTON_STALLED_ROUNDING
STALLED_SMOOTHING = NEWTON_STALLED_SMOOTHING

from dualsolve._core.csr cimport (floating, index_t, sparse_dot, sparse_axpy,
                                  sparse_dot_even, sparse_axpy_odd, sparse_sqnorm,
                                  prefetch_records)
from dualsolve._core.blocks cimport (Blocks, BLOCKS_MIN_NNZ, blocks_init, blocks_own,
                                     blocks_free, blocks_ksum)
from dualsolve._core.ksum cimport KahanSum, ksum_new, ksum_add, ksum_value
from dualsolve._core.losses cimport (Loss, LOSS_LOGISTIC, LOSS_HINGE, make_loss, loss_value,
                                     loss_deriv, loss_curvature, loss_conj, loss_smoothable,
                                     moreau_smoothing)
from dualsolve._core.status cimport (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_NO_MEMORY,
                                     epoch_hook, report_epoch, gap_certifies, gap_floor,
                                     gap_target)
from dualsolve._core.hooks cimport python_hook
from dualsolve.sdca._sdca cimport SdcaProblem, sdca_problem_init, sdca_polished_dual

#: Armijo's sufficient decrease, and the most halvings of the step before giving up
DEF ARMIJO = 1e-4
DEF MAX_HALVINGS = 40
#: the preconditioner lam + PRECOND_MIX * diag(X^T D X): Jacobi (1) leans too hard on rare
#: features when lam is small; a blend towards the regulariser (Hsia, Chiang & Lin, 2018,
#: use 0.01 in liblinear's scale) needed half the products of Jacobi on news20 at C = 10^4
DEF PRECOND_MIX = 0.01
#: continuation for the losses without a gradient: the smoothing width shrinks this much
#: once the smoothed problem is solved past the error the smoothing leaves in the gap, and
#: no further than MU_RANGE times its start
DEF MU_FACTOR = 0.1
DEF MU_RANGE = 1e-14
DEF SMOOTH_PATIENCE = 50
#: narrow data (a9a: 123 columns, w8a: 300): the Newton system may be solved with the
#: explicit Hessian (one pass of sum_i nnz_i (nnz_i + 1) / 2 products, then a Cholesky
#: factor) instead of CG. That costs about as much as DENSE_BUDGET_MAX Hessian-vector
#: products at most (and DENSE_MAX_COLUMNS columns); CG goes first, and an iteration whose
#: CG would take more products than the explicit step costs gives it up for the explicit
#: step, which then solves the iterations after it too (CG needed 3 products per iteration
#: on w8a at C = 1, where the explicit step costs about 8, and 22 at C = 10^4)
DEF DENSE_BUDGET_MAX = 50.0
#: an exact step cut below this by the line search hands the next iteration back to CG
#: (logistic's damped steps far from the optimum, 1/8 or 1/16, are not that)
DEF DENSE_MIN_STEP = 1e-3
#: a step radius after a step cut hard (the trust region's rule in a line-search method),
#: for the Armijo search (logistic): once the line search has cut a step to t <=
#: RADIUS_CUT, the next CG stops where its step's length reaches t ||s|| (Steihaug; in the
#: preconditioner's norm, in which CG's steps grow monotonically), and a bounded step the
#: model predicted well (RADIUS_MODEL_FIT of the decrease) lets the radius grow
#: RADIUS_GROWTH times. Unbounded until such a cut: at a small lam the full Newton step
#: far from the optimum can be orders too long (w8a, C = 100: three iterations of 7-13
#: products cut to 5e-4 .. 4e-3), where a bounded step costs a product or two; the mild
#: damping of logistic's first steps (1/2 .. 1/8: news20 after SDCA) is no such sign
DEF RADIUS_CUT = 0.0625
DEF RADIUS_GROWTH = 4.0
DEF RADIUS_MODEL_FIT = 0.75
#: the next row's entries of the vector a pass reads (and writes) are prefetched where that
#: vector outgrows the caches (news20, 1.7 million columns: a Hessian product 16% faster,
#: the gradient's and the scores' passes 8% together); on narrow data the vectors sit in
#: L1 and the prefetch loop is pure cost (w8a, 300 columns: 25-30% slower)
DEF PREFETCH_MIN_COLUMNS = 65536
#: the dual point's polish, where an iteration costs many passes (CG's, on wide X; not
#: where the explicit Hessian may solve it): once the gap is within POLISH_RANGE of its
#: target, the certificate's a = -c phi'(X w) gets POLISH_EPOCHS passes of SDCA's exact
#: coordinate steps and P(w) - D(a') is tried. At a small lam the gap ||g||^2 / (2 lam) of
#: a(w) is mostly the dual's share (news20 fold, C = 2^15: D* - D(a(w)) 5x P(w) - P*),
#: which SDCA's steps remove fast (4-7x in a pass) where Newton would need another
#: iteration of 10-16 products; so CG aims at a gap of POLISH_AIM / 4 times the target,
#: not a quarter of it. Measured (news20, 5-fold cross_validate over 10 C from 2^-5 to
#: 2^15, logistic, tol 1e-4): 13.2-13.8 s -> 11.2-11.6 s; (range, epochs, aim) = (4, 1, 1)
#: 12.3 s, (32, 3, 16) as (16, 2, 8); on a9a and w8a, where an iteration is one explicit
#: step, the polish cost 8-12% and is not tried
DEF POLISH_RANGE = 16.0
DEF POLISH_EPOCHS = 2
DEF POLISH_AIM = 8.0
cdef Py_ssize_t DENSE_MAX_COLUMNS = 2048
#: threads (NewtonOptions.n_threads) on X of at least this many nonzeros (_core/blocks.pxd)
cdef Py_ssize_t THREADS_MIN_NNZ = BLOCKS_MIN_NNZ


def _threads_min_nnz(value=None):
    """THREADS_MIN_NNZ (tests set 0 to run small problems in threads); returns the value
    before the call."""
    global THREADS_MIN_NNZ
    old = THREADS_MIN_NNZ
    if value is not None:
        THREADS_MIN_NNZ = int(value)
    return old


def _dense_max_columns(value=None):
    """The most columns for the explicit Hessian (tests set 0 to force CG, to compare the
    two); returns the value before the call."""
    global DENSE_MAX_COLUMNS
    old = DENSE_MAX_COLUMNS
    if value is not None:
        DENSE_MAX_COLUMNS = int(value)
    return old


cdef NewtonOptions newton_default_options() noexcept nogil:
    cdef NewtonOptions o
    o.tol = 1e-6
    o.max_epochs = 1000
    o.cg_forcing = 0.1
    o.max_cg = 1000
    o.n_threads = 1
    return o


# ---------------------------------------------------------------------------------------
# the team: a solve's passes over X in blocks of rows, one thread each (a Blocks,
# _core/blocks.pxd; a block's copy holds 2m doubles, its partial sums 3)
#
# Block b >= 1 sums its rows' part of X^T(...) into its own copy of the m-vectors (a
# Hessian product: p and q interleaved, as the shared pq; the gradient: g then diag),
# block 0 into the shared ones; CG's sweeps over the m-vectors run in ranges of features
# and add the blocks' q where they read it. No thread writes a line another reads during a
# pass, and every sum is taken block by block in a fixed order: the iterates depend on the
# block count only, not on which thread ran which block or how many ran (a team of one
# runs every block). One block is the serial solve, operation for operation.


cdef inline double _row_weight(const NewtonProblem* P, Py_ssize_t i) noexcept nogil:
    return 1.0 if P.weight == NULL else P.weight[i]


cdef void _scores(const floating* data, const index_t* indices, const index_t* indptr,
                  const NewtonProblem* P, const Blocks* team, const double* v,
                  double* out) noexcept nogil:
    """out = X v (+ bias * v[d]), in the team's threads (each row its own: the same result
    for any team)."""
    cdef Py_ssize_t i
    cdef double b = P.bias * v[P.d] if P.bias != 0.0 else 0.0
    cdef bint ahead = P.d >= PREFETCH_MIN_COLUMNS
    for i in prange(P.n, num_threads=team.size, schedule="static"):
        if ahead and i + 1 < P.n:
            prefetch_records(indices + indptr[i + 1], indptr[i + 2] - indptr[i + 1], v, 8)
        out[i] = sparse_dot(data + indptr[i], indices + indptr[i], indptr[i + 1] - indptr[i],
                            v) + b


cdef struct Eval:
    double loss_sum     # (1/n) sum c phi(z)
    double conj_sum     # (1/n) sum c h(-phi'(z))
    double xta_sq       # ||X^T dv||^2 with dv = c phi'(z) / n: lam^2 ||w(a)||^2


cdef Eval _gradient(const floating* data, const index_t* indices, const index_t* indptr,
                    const NewtonProblem* P, const Blocks* team, const Loss* L, const double* z,
                    double* dv, double* curv, double* g, double* diag,
                    Py_ssize_t m) noexcept nogil:
    """One pass over X at the scores z: dv_i = c_i phi'(z_i)/n, curv_i = c_i phi''(z_i)/n,
    g = X^T dv + lam w (the gradient), diag = lam + sum_i curv_i x_ij^2 (Jacobi
    preconditioner), for the loss L Newton steps on (P.loss, or its Moreau smoothing); the
    loss and conjugate sums of P.loss's objective and dual at a = -c phi'(z). In the
    team's blocks of rows, then one sweep adds the blocks' g and diag (_sweep)."""
    cdef Py_ssize_t b
    cdef double inv_n = 1.0 / P.n
    cdef KahanSum ls, cs
    cdef double out[3]
    cdef Eval e
    for b in prange(team.size, num_threads=team.size, schedule="static", chunksize=1):
        team.sums[2 * b] = ksum_new()
        team.sums[2 * b + 1] = ksum_new()
        _gradient_rows(data, indices, indptr, P, L, z, dv, curv,
                       g if b == 0 else blocks_own(team, b),
                       diag if b == 0 else blocks_own(team, b) + m, team.rows[b],
                       team.rows[b + 1], m, &team.sums[2 * b], &team.sums[2 * b + 1])
    ls = blocks_ksum(team, 2, 0)
    cs = blocks_ksum(team, 2, 1)
    _sweep(SWEEP_GRADIENT, team, P, NULL, g, diag, NULL, NULL, NULL, 0.0, 0.0, out)
    e.loss_sum = ksum_value(&ls) * inv_n
    e.conj_sum = ksum_value(&cs) * inv_n
    e.xta_sq = out[0]
    return e


cdef void _gradient_rows(const floating* data, const index_t* indices, const index_t* indptr,
                         const NewtonProblem* P, const Loss* L, const double* z, double* dv,
                         double* curv, double* g, double* diag, Py_ssize_t lo, Py_ssize_t hi,
                         Py_ssize_t m, KahanSum* ls, KahanSum* cs) noexcept nogil:
    """_gradient's pass over rows lo .. hi - 1: their dv and curv, and their X^T dv and
    sum_i curv_i x_ij^2 into g and diag (zeroed first); their loss and conjugate sums."""
    cdef Py_ssize_t i, k
    cdef double c, inv_n = 1.0 / P.n, y, s, d1
    cdef bint ahead = m >= PREFETCH_MIN_COLUMNS
    cdef const floating* row
    cdef const index_t* ind
    memset(g, 0, m * sizeof(double))
    memset(diag, 0, m * sizeof(double))
    for i in range(lo, hi):
        c = _row_weight(P, i)
        y = P.y[i]
        s = z[i]
        if c == 0.0:
            dv[i] = 0.0
            curv[i] = 0.0
            continue
        if ahead and i + 1 < hi:
            prefetch_records(indices + indptr[i + 1], indptr[i + 2] - indptr[i + 1], g, 8)
            prefetch_records(indices + indptr[i + 1], indptr[i + 2] - indptr[i + 1], diag, 8)
        d1 = loss_deriv(L, s, y)
        ksum_add(ls, c * loss_value(&P.loss, s, y))
        ksum_add(cs, c * loss_conj(&P.loss, -d1, y))
        dv[i] = c * d1 * inv_n
        curv[i] = c * loss_curvature(L, s, y) * inv_n
        row = data + indptr[i]
        ind = indices + indptr[i]
        sparse_axpy(dv[i], row, ind, indptr[i + 1] - indptr[i], g)
        if curv[i] != 0.0:
            for k in range(indptr[i + 1] - indptr[i]):
                diag[ind[k]] += curv[i] * row[k] * row[k]
        if P.bias != 0.0:
            g[P.d] += dv[i] * P.bias
            diag[P.d] += curv[i] * P.bias * P.bias


cdef inline double _narrow(const NewtonProblem* P, Loss* L, double mu) noexcept nogil:
    """The continuation's step: the envelope of P.loss MU_FACTOR times narrower, into L."""
    mu *= MU_FACTOR
    L[0] = moreau_smoothing(&P.loss, mu)
    return mu


cdef double _primal_at(const NewtonProblem* P, const double* z, Py_ssize_t m) noexcept nogil:
    """P(w) at the scores z of P.w."""
    cdef Py_ssize_t i
    cdef KahanSum ls = ksum_new()
    for i in range(P.n):
        ksum_add(&ls, _row_weight(P, i) * loss_value(&P.loss, z[i], P.y[i]))
    return ksum_value(&ls) / P.n + 0.5 * P.lam * _dot(P.w, P.w, m)


cdef double _hessian_times(const floating* data, const index_t* indices, const index_t* indptr,
                           const NewtonProblem* P, const Blocks* team, const double* curv,
                           double* pq, Py_ssize_t m) noexcept nogil:
    """q += X^T (curv * (X p)) in one pass, each row read once for both products (q = lam
    p on entry, set where p was made); returns sum_i curv_i (x_i.p)^2, the data's part of
    p.Hp = lam ||p||^2 + sum_i curv_i (x_i.p)^2 (terms >= 0). p and q are interleaved (p_j
    = pq[2j], q_j = pq[2j+1]): the product's scatter lands on the cache lines the row's
    dot product has just loaded (news20: a third off the pass). In the team's blocks of
    rows: block b >= 1 on its own copy (p copied, q from 0), whose q the step's sweep adds."""
    cdef Py_ssize_t b
    cdef double php = 0.0
    for b in prange(team.size, num_threads=team.size, schedule="static", chunksize=1):
        team.part[b] = _hessian_rows(data, indices, indptr, P, curv,
                                     pq if b == 0 else blocks_own(team, b), team.rows[b],
                                     team.rows[b + 1], m)
    for b in range(team.size):
        php += team.part[b]
    return php


cdef double _hessian_rows(const floating* data, const index_t* indices, const index_t* indptr,
                          const NewtonProblem* P, const double* curv, double* pq,
                          Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t m) noexcept nogil:
    """_hessian_times over rows lo .. hi - 1, on the interleaved p / q of pq."""
    cdef Py_ssize_t i, nnz
    cdef double t, dot, php = 0.0, b = P.bias * pq[2 * P.d] if P.bias != 0.0 else 0.0
    cdef bint ahead = m >= PREFETCH_MIN_COLUMNS
    for i in range(lo, hi):
        if curv[i] == 0.0:
            continue
        if ahead and i + 1 < hi:
            prefetch_records(indices + indptr[i + 1], indptr[i + 2] - indptr[i + 1], pq, 16)
        nnz = indptr[i + 1] - indptr[i]
        dot = sparse_dot_even(data + indptr[i], indices + indptr[i], nnz, pq) + b
        t = curv[i] * dot
        php += t * dot
        sparse_axpy_odd(t, data + indptr[i], indices + indptr[i], nnz, pq)
        if P.bias != 0.0:
            pq[2 * P.d + 1] += t * P.bias
    return php


cdef Py_ssize_t _dense_budget(const index_t* indptr, Py_ssize_t n, Py_ssize_t m,
                              bint bias) noexcept nogil:
    """The cost of forming and factoring the m x m Hessian of n rows (plus a bias column)
    in Hessian-vector products (2 (nnz + n) flops each), rounded up; 0 where it exceeds
    DENSE_BUDGET_MAX or m exceeds DENSE_MAX_COLUMNS (CG only)."""
    cdef Py_ssize_t i, b = 1 if bias else 0
    cdef double form = 0.0, k, product = 0.0, budget
    if m > DENSE_MAX_COLUMNS:
        return 0
    for i in range(n):
        k = <double>(indptr[i + 1] - indptr[i] + b)
        form += 0.5 * k * (k + 1.0)
        product += 2.0 * k
    budget = (form + <double>m * m * m / 3.0) / (product + 2.0 * n)
    if not budget <= DENSE_BUDGET_MAX:
        return 0
    return 1 + <Py_ssize_t>budget


def dense_budget(const index_t[::1] indptr, Py_ssize_t n_columns, bint bias):
    """The explicit Hessian's cost in Hessian-vector products for CSR rows ``indptr`` and
    ``n_columns`` columns (+1 with a bias), 0 where Newton keeps to CG (too wide, or too
    dear): what ``train_linear`` reads to run Newton first on narrow data."""
    cdef Py_ssize_t n = indptr.shape[0] - 1
    if n < 1:
        return 0
    return _dense_budget(&indptr[0], n, n_columns + (1 if bias else 0), bias)


cdef void _hessian_dense(const floating* data, const index_t* indices, const index_t* indptr,
                         const NewtonProblem* P, const Blocks* team, const double* curv,
                         double* H, Py_ssize_t m) noexcept nogil:
    """The lower triangle of H = lam I + sum_i curv_i x_i x_i^T (row-major, H[a m + b] for
    a >= b; the bias column last), in one pass over X, in the team's blocks of rows: block
    b >= 1 into its own m x m (_dense_copy), then H adds the copies entry by entry in
    block order."""
    cdef Py_ssize_t b, a, k, size = team.size, mm = m * m
    for b in prange(size, num_threads=size, schedule="static", chunksize=1):
        _hessian_dense_rows(data, indices, indptr, P, curv,
                            H if b == 0 else _dense_copy(H, m, b), team.rows[b],
                            team.rows[b + 1], m)
    if size > 1:
        for b in prange(size, num_threads=size, schedule="static", chunksize=1):
            for a in range(mm * b // size, mm * (b + 1) // size):
                for k in range(1, size):
                    H[a] += _dense_copy(H, m, k)[a]
    for a in range(m):
        H[a * m + a] += P.lam


cdef inline double* _dense_copy(double* H, Py_ssize_t m, Py_ssize_t b) noexcept nogil:
    """Block b's (b >= 1) m x m copy in the explicit Hessian's buffer: after H (m^2) and
    the solve's scratch (m)."""
    return H + m * m + m + (b - 1) * m * m


cdef void _hessian_dense_rows(const floating* data, const index_t* indices,
                              const index_t* indptr, const NewtonProblem* P,
                              const double* curv, double* H, Py_ssize_t first,
                              Py_ssize_t end, Py_ssize_t m) noexcept nogil:
    """_hessian_dense's sums over rows first .. end - 1 (H zeroed first; no lam)."""
    cdef Py_ssize_t i, k, l, a, b, lo, hi, last = m - 1
    cdef double v
    memset(H, 0, m * m * sizeof(double))
    for i in range(first, end):
        if curv[i] == 0.0:
            continue
        lo, hi = indptr[i], indptr[i + 1]
        for k in range(lo, hi):
            a = indices[k]
            v = curv[i] * data[k]
            for l in range(lo, k + 1):
                b = indices[l]
                if a >= b:
                    H[a * m + b] += v * data[l]
                else:
                    H[b * m + a] += v * data[l]
            if P.bias != 0.0:
                H[last * m + a] += v * P.bias
        if P.bias != 0.0:
            H[last * m + last] += curv[i] * P.bias * P.bias


cdef bint _cholesky_solve(double* H, const double* g, double* s, Py_ssize_t m) noexcept nogil:
    """s = -H^{-1} g through the Cholesky factor of H (lower triangle, row-major; overwritten
    by the factor; H holds m more doubles after it, the solve's scratch). False when a pivot
    is not positive or the solution not finite (rounding at a tiny lam), s then untouched
    (CG's step, when CG ran): the caller falls back to CG. (LAPACK's dpotrf was no faster
    here: forming H is the cost, and BLAS would bring threads of its own into a one-thread
    solve.)"""
    cdef Py_ssize_t i, j, k
    cdef double t, v
    cdef double* x = H + m * m
    for j in range(m):
        t = H[j * m + j]
        for k in range(j):
            t -= H[j * m + k] * H[j * m + k]
        if not (t > 0.0):
            return False
        t = sqrt(t)
        H[j * m + j] = t
        for i in range(j + 1, m):
            v = H[i * m + j]
            for k in range(j):
                v -= H[i * m + k] * H[j * m + k]
            H[i * m + j] = v / t
    for i in range(m):                  # L y = -g
        t = -g[i]
        for k in range(i):
            t -= H[i * m + k] * x[k]
        x[i] = t / H[i * m + i]
    for i in range(m - 1, -1, -1):      # L^T x = y
        t = x[i]
        for k in range(i + 1, m):
            t -= H[k * m + i] * x[k]
        x[i] = t / H[i * m + i]
    for i in range(m):
        if not isfinite(x[i]):
            return False
    memcpy(s, x, m * sizeof(double))
    return True


cdef inline double _dot(const double* a, const double* b, Py_ssize_t m) noexcept nogil:
    cdef double s = 0.0
    cdef Py_ssize_t j
    for j in range(m):
        s += a[j] * b[j]
    return s


cdef void _slope(const NewtonProblem* P, const Blocks* team, const Loss* L, const double* z,
                 const double* u, double t, double ws, double ss, double* d1,
                 double* d2) noexcept nogil:
    """First and (generalised) second derivative in t of P(w + t s), from the scores (the
    team's blocks of rows, their sums added in order)."""
    cdef Py_ssize_t b
    cdef double a = 0.0, c = 0.0
    for b in prange(team.size, num_threads=team.size, schedule="static", chunksize=1):
        _slope_rows(P, L, z, u, t, team.rows[b], team.rows[b + 1], &team.part[3 * b])
    for b in range(team.size):
        a += team.part[3 * b]
        c += team.part[3 * b + 1]
    d1[0] = a / P.n + P.lam * (ws + t * ss)
    d2[0] = c / P.n + P.lam * ss


cdef void _slope_rows(const NewtonProblem* P, const Loss* L, const double* z, const double* u,
                      double t, Py_ssize_t lo, Py_ssize_t hi, double* out) noexcept nogil:
    """_slope's sums over rows lo .. hi - 1 into out[0], out[1]."""
    cdef Py_ssize_t i
    cdef double c, a = 0.0, b = 0.0, v
    for i in range(lo, hi):
        c = _row_weight(P, i)
        if c != 0.0 and u[i] != 0.0:
            v = z[i] + t * u[i]
            a += c * loss_deriv(L, v, P.y[i]) * u[i]
            b += c * loss_curvature(L, v, P.y[i]) * u[i] * u[i]
    out[0] = a
    out[1] = b


cdef double _exact_step(const NewtonProblem* P, const Blocks* team, const Loss* L,
                        const double* z, const double* u, double ws, double ss,
                        double gs) noexcept nogil:
    """argmin_t P(w + t s) for a descent direction s (P'(0) = gs < 0): Newton's method on the
    increasing P'(t), safeguarded by a bracket [lo, hi] with P'(lo) < 0 < P'(hi). O(n) per
    evaluation, no pass over X. For a piecewise quadratic loss (squared hinge) the step lands
    where the rows entering or leaving the margin balance, which a backtracking search
    from t = 1 cannot find when the generalised Hessian misleads."""
    cdef double lo = 0.0, hi = 1.0, t = 1.0, d1, d2, tn
    cdef int k
    _slope(P, team, L, z, u, hi, ws, ss, &d1, &d2)
    k = 0
    while d1 < 0.0 and k < 60:          # find an upper end (a full step is usually past it)
        lo = hi
        hi *= 2.0
        _slope(P, team, L, z, u, hi, ws, ss, &d1, &d2)
        k += 1
    if d1 < 0.0:
        return hi
    t = hi if lo == 0.0 else lo
    for k in range(60):
        _slope(P, team, L, z, u, t, ws, ss, &d1, &d2)
        if fabs(d1) <= 1e-12 * fabs(gs):
            return t
        if d1 < 0.0:
            lo = t
        else:
            hi = t
        tn = t - d1 / d2 if d2 > 0.0 else 0.5 * (lo + hi)
        if not (lo < tn < hi):
            tn = 0.5 * (lo + hi)
        if hi - lo <= 1e-15 * hi:
            return lo
        t = tn
    return lo


cdef double _line_change(const NewtonProblem* P, const Blocks* team, const Loss* L,
                         const double* z, const double* u, double t, double ws,
                         double ss) noexcept nogil:
    """P(w + t s) - P(w) from the scores z and u = X s, row by row (a difference of
    nearby values per row, summed with compensation: accurate where P itself is not), in
    the team's blocks of rows (two logarithms a row: on a9a a trial cost as much as a
    pass over X)."""
    cdef KahanSum acc
    cdef Py_ssize_t b
    for b in prange(team.size, num_threads=team.size, schedule="static", chunksize=1):
        _line_change_rows(P, L, z, u, t, team.rows[b], team.rows[b + 1], &team.sums[b])
    acc = blocks_ksum(team, 1, 0)
    return ksum_value(&acc) / P.n + P.lam * t * (ws + 0.5 * t * ss)


cdef void _line_change_rows(const NewtonProblem* P, const Loss* L, const double* z,
                            const double* u, double t, Py_ssize_t lo, Py_ssize_t hi,
                            KahanSum* acc) noexcept nogil:
    """_line_change's sum over rows lo .. hi - 1 into acc (reset first)."""
    cdef Py_ssize_t i
    cdef double c
    acc[0] = ksum_new()
    for i in range(lo, hi):
        c = _row_weight(P, i)
        if c != 0.0 and u[i] != 0.0:
            ksum_add(acc, c * (loss_value(L, z[i] + t * u[i], P.y[i])
                               - loss_value(L, z[i], P.y[i])))


cdef enum:
    SWEEP_GRADIENT = 0      # g += the blocks' g: sum g^2, g += lam w; diag's preconditioner
    SWEEP_START = 1         # s = 0, r = -g, p = r / diag: sum r.p, sum p^2
    SWEEP_STEP = 2          # s += a p, r -= a q: sum r^2, sum r^2 / diag
    SWEEP_DIRECTION = 3     # p = r / diag + beta p: sum p^2
    SWEEP_RADIUS = 4        # sum diag s^2, sum diag s p, sum diag p^2


cdef void _sweep(int kind, const Blocks* team, const NewtonProblem* P, const double* g,
                 double* u, double* diag, double* s, double* r, double* pq, double a,
                 double beta, double* out) noexcept nogil:
    """One sweep ``kind`` over the m-vectors in the team's ranges of features (u: g for
    SWEEP_GRADIENT, else unused); out: its sums, range by range in order. Where p is made,
    q = lam p, and each block's copy gets p and q = 0 (_hessian_times)."""
    cdef Py_ssize_t b
    for b in prange(team.size, num_threads=team.size, schedule="static", chunksize=1):
        _sweep_range(kind, team, P, g, u, diag, s, r, pq, a, beta, team.cols[b],
                     team.cols[b + 1], &team.part[3 * b])
    out[0] = out[1] = out[2] = 0.0
    for b in range(team.size):
        out[0] += team.part[3 * b]
        out[1] += team.part[3 * b + 1]
        out[2] += team.part[3 * b + 2]


cdef void _sweep_range(int kind, const Blocks* team, const NewtonProblem* P, const double* g,
                       double* u, double* diag, double* s, double* r, double* pq, double a,
                       double beta, Py_ssize_t lo, Py_ssize_t hi, double* out) noexcept nogil:
    """_sweep over the features lo .. hi - 1."""
    cdef Py_ssize_t j, b, m = team.cols[team.size], k = team.size
    cdef double x, q, s0 = 0.0, s1 = 0.0, s2 = 0.0
    cdef double* own
    if kind == SWEEP_GRADIENT:
        for j in range(lo, hi):
            x = u[j]
            q = diag[j]
            for b in range(1, k):
                own = blocks_own(team, b)
                x += own[j]
                q += own[m + j]
            s0 += x * x
            u[j] = x + P.lam * P.w[j]
            diag[j] = P.lam + PRECOND_MIX * q
    elif kind == SWEEP_STEP:
        for j in range(lo, hi):
            q = pq[2 * j + 1]
            for b in range(1, k):
                q += blocks_own(team, b)[2 * j + 1]
            s[j] += a * pq[2 * j]
            r[j] -= a * q
            s0 += r[j] * r[j]
            s1 += r[j] * r[j] / diag[j]
    elif kind == SWEEP_RADIUS:
        for j in range(lo, hi):
            s0 += diag[j] * s[j] * s[j]
            s1 += diag[j] * s[j] * pq[2 * j]
            s2 += diag[j] * pq[2 * j] * pq[2 * j]
    else:
        for j in range(lo, hi):
            if kind == SWEEP_START:
                s[j] = 0.0
                r[j] = -g[j]
                x = r[j] / diag[j]
                s0 += r[j] * x
            else:
                x = r[j] / diag[j] + beta * pq[2 * j]
            pq[2 * j] = x
            pq[2 * j + 1] = P.lam * x
            s1 += x * x
            for b in range(1, k):
                own = blocks_own(team, b)
                own[2 * j] = x
                own[2 * j + 1] = 0.0
    out[0] = s0
    out[1] = s1
    out[2] = s2


cdef void _cg_solve(const floating* data, const index_t* indices, const index_t* indptr,
                    const NewtonProblem* P, const Blocks* team, const NewtonOptions* opt,
                    const double* curv,
                    const double* g, const double* diag, double* s, double* r, double* pq,
                    Py_ssize_t m, double dual, double floor, double aim, bint model_ok,
                    double radius, Py_ssize_t limit, epoch_hook hook, void* ctx,
                    Py_ssize_t* cg_out,
                    int* stop_out, bint* converged, bint* bounded) noexcept nogil:
    """Preconditioned CG on H s = -g from s = 0 (r: the residual -g - H s), one pass per
    Hessian-vector product, until ||r|| <= forcing ||g|| or the residual that predicts a
    gap of ``aim / 4`` times its target, whichever is larger (converged), the step's length
    sqrt(sum diag s^2) reaches ``radius`` (bounded: s ends on that sphere; converged too)
    or ``limit`` products; cg_out: the products, stop_out: the hook's stop request (Ctrl-C
    between products)."""
    cdef Py_ssize_t cg = 0
    cdef double gnorm, rstop, target, rz, rz_new, rr, pHp, a, beta, ss, sp, pp, spp
    cdef double sums[3]
    cdef int stop = 0
    # the residual is about the next gradient, and a gradient below sqrt(2 lam target)
    # certifies (gap = ||g||^2 / (2 lam)): no need to solve more exactly than that
    gnorm = sqrt(_dot(g, g, m))
    rstop = opt.cg_forcing * gnorm
    # (a looser stop near the end, where the model is close to the objective), and when
    # the forcing term would stop within 10x of that while the quadratic model predicted
    # the last step well, go on to it (saving the iteration that would otherwise cover
    # the last factor)
    if opt.tol > 0:
        target = 0.5 * sqrt(2.0 * P.lam * aim * gap_target(dual, opt.tol, floor))
        if rstop < target or (model_ok and rstop < 10.0 * target):
            rstop = target
    # each sweep over the m-vectors does all it can (at news20's 1.7 million features
    # they are as much memory traffic as the product): the direction p is made with its
    # product's start q = lam p, and the step's update with the residual's two norms
    _sweep(SWEEP_START, team, P, g, NULL, <double*>diag, s, r, pq, 0.0, 0.0, sums)
    rz, pp = sums[0], sums[1]
    converged[0] = False
    bounded[0] = False
    while cg < limit:
        pHp = P.lam * pp + _hessian_times(data, indices, indptr, P, team, curv, pq, m)
        cg += 1
        if not (pHp > 0.0):
            break
        a = rz / pHp
        if radius < INFINITY:
            _sweep(SWEEP_RADIUS, team, P, NULL, NULL, <double*>diag, s, r, pq, 0.0, 0.0,
                   sums)
            ss, sp, spp = sums[0], sums[1], sums[2]
            if ss + a * (2.0 * sp + a * spp) >= radius * radius:
                # to the sphere along p: the root a of ||s + a p||^2 = radius^2
                a = (sqrt(max(sp * sp + spp * (radius * radius - ss), 0.0)) - sp) / spp
                bounded[0] = True
        _sweep(SWEEP_STEP, team, P, NULL, NULL, <double*>diag, s, r, pq, a, 0.0, sums)
        rr, rz_new = sums[0], sums[1]
        if bounded[0] or sqrt(rr) <= rstop:
            converged[0] = True
            break
        if hook != NULL:
            stop = hook(ctx, -1, NULL)      # Ctrl-C between products
            if stop != 0:
                break
        beta = rz_new / rz
        rz = rz_new
        _sweep(SWEEP_DIRECTION, team, P, NULL, NULL, <double*>diag, s, r, pq, 0.0, beta, sums)
        pp = sums[1]
    cg_out[0] = cg
    stop_out[0] = stop


cdef void newton_run(const floating* data, const index_t* indices, const index_t* indptr,
                     const NewtonProblem* P, const NewtonOptions* opt, NewtonResult* res,
                     epoch_hook hook, void* ctx) noexcept nogil:
    _newton_run(data, indices, indptr, P, opt, res, hook, ctx, NULL, NULL)


cdef void _newton_run(const floating* data, const index_t* indices, const index_t* indptr,
                      const NewtonProblem* P, const NewtonOptions* opt, NewtonResult* res,
                      epoch_hook hook, void* ctx, double* scores,
                      const double* sqnorm) noexcept nogil:
    """newton_run; ``scores`` (n, or NULL) receives the certified iterate's scores
    ``X w + bias w[d]`` (those it certified on) when the run converges; ``sqnorm`` (n, or
    NULL: computed when needed) holds the rows' ``||x_i||^2``, for the polish."""
    cdef Py_ssize_t m = P.d + (1 if P.bias != 0.0 else 0), n = P.n, i, j, it, cg, h
    cdef double* buf = <double*>malloc((4 * n + 6 * m) * sizeof(double))
    cdef double *z, *u, *dv, *curv, *g, *diag, *s, *r, *pq
    cdef Eval e
    cdef double primal, dual, gap, floor, ws, ss, gs, t
    cdef double values[NEWTON_HOOK_VALUES]
    cdef int status = STATUS_MAX_EPOCHS, stop
    cdef bint fresh, model_ok = False
    # a loss without a gradient: Newton on its Moreau envelope of width mu, shrinking mu
    # (continuation); the certificate stays that of P.loss, as -phi_mu' is dual feasible
    cdef bint smoothing = loss_smoothable(&P.loss)
    cdef Loss L = P.loss
    cdef double mu = 1.0, mu_min = 0.0, gap_mu
    cdef bint stop_after_report = False
    cdef double best_gap = INFINITY
    cdef Py_ssize_t best_it = 0
    # piecewise quadratic losses: their generalised Hessian can mislead a unit step
    cdef bint exact_search = P.loss.kind != LOSS_LOGISTIC
    cdef double predicted, change
    # narrow data: the Newton system by the explicit Hessian's Cholesky factor (H NULL: CG
    # only), once CG has taken more than the budget's products in an iteration (dense)
    cdef double* H = NULL
    cdef Py_ssize_t budget = 0
    cdef bint dense = False, converged
    # the step radius (RADIUS_CUT): none until the line search cuts a step hard
    cdef double radius = INFINITY, snorm
    cdef bint bounded = False
    # the polish (POLISH_RANGE): SDCA's problem on the same rows, its buffers made when
    # first needed; tried once per iterate; ``polished``: the reported dual is its a'
    cdef SdcaProblem S
    cdef double* polish_buf = NULL
    cdef Py_ssize_t* polish_index = NULL
    cdef Py_ssize_t polished_it = -1
    cdef bint polished = False
    cdef double polished_dual
    cdef bint polishing
    res.passes = 0
    res.stalled = 0
    res.dense_steps = 0
    res.n_epochs = 0
    res.primal = res.dual = res.gap = NAN
    # the passes' blocks of rows and threads (the team)
    cdef Blocks team
    if buf == NULL or not blocks_init(&team, indptr, n, m, opt.n_threads, THREADS_MIN_NNZ,
                                      2 * m, 3):
        free(buf)
        res.status = STATUS_NO_MEMORY
        return
    z = buf
    u = z + n
    dv = u + n
    curv = dv + n
    g = curv + n
    diag = g + m
    s = diag + m
    r = s + m
    pq = r + m          # 2m: the CG direction p and its product q = H p, interleaved
    # (not for the continuation's envelopes: their narrow quadratic pieces leave few rows
    # curved, a nearly singular Hessian whose exact steps the line search cuts to 1e-9,
    # where CG's truncation keeps the step in scale: heart_scale, hinge)
    budget = 0 if smoothing else _dense_budget(indptr, P.n, m, P.bias != 0.0)
    if budget > 0:
        # (and m for the solve, and the blocks' copies; NULL, no memory: CG, as for wide X)
        H = <double*>malloc((m * m + m + (team.size - 1) * m * m) * sizeof(double))
    polishing = not smoothing and budget == 0 and opt.tol > 0
    # P(0) = (1/n) sum c phi(0): the scale of tol (and of the divergence watch)
    memset(z, 0, n * sizeof(double))
    res.p0 = 0.0
    for i in range(n):
        res.p0 += _row_weight(P, i) * loss_value(&P.loss, 0.0, P.y[i])
    res.p0 /= n
    floor = gap_floor(res.p0)
    _scores(data, indices, indptr, P, &team, P.w, z)
    res.passes = 1
    fresh = True
    if smoothing:
        if P.loss.kind != LOSS_HINGE:       # the start's residuals inside the quadratic part
            for i in range(n):
                mu = max(mu, fabs(z[i] - P.y[i]) - P.loss.param)
        mu_min = MU_RANGE * mu
        L = moreau_smoothing(&P.loss, mu)
    it = 0
    cg = 0
    t = NAN
    while True:
        e = _gradient(data, indices, indptr, P, &team, &L, z, dv, curv, g, diag, m)
        res.passes += 1
        primal = e.loss_sum + 0.5 * P.lam * _dot(P.w, P.w, m)
        dual = -0.5 * e.xta_sq / P.lam - e.conj_sum
        gap = primal - dual if isfinite(primal) and isfinite(dual) else INFINITY
        if (polishing and polished_it != it
                and not gap_certifies(gap, dual, opt.tol, floor)
                and gap <= POLISH_RANGE * gap_target(dual, opt.tol, floor)):
            polished_it = it
            if polish_buf == NULL and not _polish_init(data, indptr, P, sqnorm, &S,
                                                       &polish_buf, &polish_index, m):
                polishing = False        # no memory: no polish
            else:
                for i in range(n):
                    S.alpha[i] = -n * dv[i]
                polished_dual = sdca_polished_dual(data, indices, indptr, &S, POLISH_EPOCHS,
                                                   <unsigned long long>it)
                res.passes += 1 + POLISH_EPOCHS
                polished = gap_certifies(primal - polished_dual, polished_dual, opt.tol, floor)
                if polished and not fresh:
                    # the primal of scores recomputed from w, as to certify (else the
                    # gradient of those scores next)
                    _scores(data, indices, indptr, P, &team, P.w, z)
                    res.passes += 1
                    fresh = True
                    primal = _primal_at(P, z, m)
                    polished = gap_certifies(primal - polished_dual, polished_dual, opt.tol,
                                             floor)
                    if not polished:
                        continue
                if polished:
                    dual = polished_dual
                    gap = primal - dual
        if smoothing and not gap_certifies(gap, dual, opt.tol, floor):
            # the smoothed problem's own gap is ||g||^2 / (2 lam); once it is below half
            # the gap of P.loss, the smoothing is what is left: narrow it (and at the
            # narrowest, nothing is left to gain at this precision: stop as stalled)
            gap_mu = 0.5 * _dot(g, g, m) / P.lam
            if gap_mu <= 0.5 * gap and mu > mu_min:
                mu = _narrow(P, &L, mu)
                model_ok = False
                continue
            if gap_mu <= 0.5 * gap and opt.tol > 0:
                res.stalled = NEWTON_STALLED_SMOOTHING
                stop_after_report = True
            # and a gap that has not dropped by a tenth in SMOOTH_PATIENCE iterations has
            # met the precision of the narrow envelope's Newton steps
            if gap < 0.9 * best_gap:
                best_gap = gap
                best_it = it
            elif it - best_it >= SMOOTH_PATIENCE and opt.tol > 0:
                res.stalled = NEWTON_STALLED_SMOOTHING
                stop_after_report = True
        if gap_certifies(gap, dual, opt.tol, floor):
            if not fresh:   # certify on scores recomputed from w, not carried along
                _scores(data, indices, indptr, P, &team, P.w, z)
                res.passes += 1
                fresh = True
                continue
            status = STATUS_CONVERGED
            if scores != NULL:
                memcpy(scores, z, n * sizeof(double))
        values[0] = primal
        values[1] = dual
        values[2] = gap
        values[3] = cg
        values[4] = t
        values[5] = res.passes
        status = report_epoch(hook, ctx, it, values, status)
        res.primal = primal
        res.dual = dual
        res.gap = gap
        res.n_epochs = it
        if P.dual != NULL and polished:
            memcpy(P.dual, S.alpha, n * sizeof(double))
        elif P.dual != NULL:        # the reported certificate's dual point (dv = c phi' / n)
            for i in range(n):
                P.dual[i] = -n * dv[i]
        if status != STATUS_MAX_EPOCHS or it >= opt.max_epochs or stop_after_report:
            break
        cg = 0
        stop = 0
        converged = False
        bounded = False
        if not dense:
            _cg_solve(data, indices, indptr, P, &team, opt, curv, g, diag, s, r, pq, m, dual,
                      floor, POLISH_AIM if polishing else 1.0, model_ok, radius,
                      opt.max_cg if H == NULL else min(opt.max_cg, budget),
                      hook, ctx, &cg, &stop, &converged, &bounded)
            res.passes += cg
            if stop != 0:
                status = stop
                break
            # CG needs more products than the explicit step costs: take that from here on
            dense = H != NULL and not converged and cg >= budget
        if dense:
            # --- the exact Newton step: one pass forms the Hessian, its factor solves
            _hessian_dense(data, indices, indptr, P, &team, curv, H, m)
            res.passes += 1
            if _cholesky_solve(H, g, s, m):
                memset(r, 0, m * sizeof(double))
                res.dense_steps += 1
            else:
                # a pivot lost to rounding (a tiny lam): CG from here on, this iteration
                # included when CG has not run yet (else its step s and residual r stand)
                free(H)
                H = NULL
                dense = False
                if cg == 0:
                    _cg_solve(data, indices, indptr, P, &team, opt, curv, g, diag, s, r, pq, m,
                              dual, floor, 1.0, model_ok, radius, opt.max_cg, hook, ctx, &cg,
                              &stop, &converged, &bounded)
                    res.passes += cg
                    if stop != 0:
                        status = stop
                        break
        # --- backtracking (Armijo) line search along s, on the scores z + t X s
        _scores(data, indices, indptr, P, &team, s, u)
        res.passes += 1
        ws = _dot(P.w, s, m)
        ss = _dot(s, s, m)
        gs = _dot(g, s, m)
        # the quadratic model's decrease: g.s + s.Hs/2 with H s = -g - r
        predicted = 0.5 * (gs - _dot(s, r, m))
        t = 1.0
        if exact_search:
            t = _exact_step(P, &team, &L, z, u, ws, ss, gs)
        for h in range(MAX_HALVINGS):
            change = _line_change(P, &team, &L, z, u, t, ws, ss)
            if change <= ARMIJO * t * gs:
                break
            t *= 0.5
        else:
            t = 0.0
        model_ok = t == 1.0 and fabs(change - predicted) <= 0.01 * fabs(predicted)
        if 0.0 < t <= RADIUS_CUT and not exact_search:
            # the next step no longer than this accepted one (not after the exact search:
            # its t, below 1 or far above it, says where the squared hinge's kinks lie,
            # not that s was too long)
            snorm = 0.0
            for j in range(m):
                snorm += diag[j] * s[j] * s[j]
            radius = t * sqrt(snorm)
        elif bounded and change <= RADIUS_MODEL_FIT * predicted:
            radius *= RADIUS_GROWTH
        if dense and t < DENSE_MIN_STEP:
            # the exact step overshoots (far from the optimum at a small lam the Hessian is
            # nearly singular, and CG's truncation is what keeps a step in scale): CG again,
            # until it needs more products than the exact step costs
            dense = False
        if (t == 0.0 or not (gs < 0.0)) and smoothing and mu > mu_min:
            # the envelope is solved as far as this precision allows: narrow it
            mu = _narrow(P, &L, mu)
            model_ok = False
            t = 0.0
        elif t == 0.0 or not (gs < 0.0):
            # no decrease left at this precision: stop where the certificate says (tol = 0
            # asks for the whole budget: the iterations go on in place)
            res.stalled = NEWTON_STALLED_ROUNDING
            if opt.tol > 0:
                break
            t = 0.0
        it += 1
        for j in range(m):
            P.w[j] += t * s[j]
        for i in range(n):
            z[i] += t * u[i]
        fresh = False
    res.status = status
    free(H)
    free(buf)
    blocks_free(&team)
    free(polish_buf)
    free(polish_index)


cdef bint _polish_init(const floating* data, const index_t* indptr, const NewtonProblem* P,
                       const double* sqnorm, SdcaProblem* S, double** buf,
                       Py_ssize_t** index, Py_ssize_t m) noexcept nogil:
    """SDCA's problem on P's rows for the dual point's polish (a, w(a), the rows' squared
    norms with bias^2, from ``sqnorm`` when given, scores, order), in buffers it allocates;
    False: no memory."""
    cdef Py_ssize_t i, n = P.n
    buf[0] = <double*>malloc((3 * n + m) * sizeof(double))
    index[0] = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    if buf[0] == NULL or index[0] == NULL:
        free(buf[0])
        free(index[0])
        buf[0] = NULL
        index[0] = NULL
        return False
    cdef double* alpha = buf[0]
    cdef double* sq = alpha + n
    cdef double* z = sq + n
    cdef double* w = z + n
    for i in range(n):
        sq[i] = (sqnorm[i] if sqnorm != NULL
                 else sparse_sqnorm(data + indptr[i], indptr[i + 1] - indptr[i]))
        sq[i] += P.bias * P.bias
    sdca_problem_init(S, n, P.d, P.y, P.loss, P.lam, P.bias, w, alpha, sq, z, index[0])
    S.sqnorm_given = 1
    S.weight = P.weight
    return True


def solve(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
          Py_ssize_t n_features, const double[::1] y, str loss, double param, double lam,
          double bias, double[::1] w, double tol, Py_ssize_t max_epochs, double cg_forcing,
          Py_ssize_t max_cg, mon, double[::1] dual, weight=None, double[::1] scores=None,
          const double[::1] sqnorm=None, int n_threads=1):
    """Run newton_run on validated arrays (w is the start and is written in place; dual
    receives the certificate's dual point; ``scores``, if given (n), the scores of the
    returned w, ``X w + bias w[d]``, when it converged; ``sqnorm``, if given (n), the rows'
    squared norms, as validated), reporting every iteration to
    ``mon`` (which must expect NEWTON_HOOK_VALUES values). ``n_threads``: NewtonOptions'.
    Returns (status, n_epochs, passes, primal, dual, gap, p0, stalled, dense_steps);
    stalled: 0, STALLED_ROUNDING or STALLED_SMOOTHING (NewtonResult.stalled)."""
    cdef NewtonProblem P
    cdef NewtonOptions opt = newton_default_options()
    cdef NewtonResult res
    cdef const double[::1] wt
    if mon.n_values != NEWTON_HOOK_VALUES:
        raise ValueError(f"the monitor expects {mon.n_values} values; newton_run reports "
                         f"{NEWTON_HOOK_VALUES}")
    if w.shape[0] != n_features + (1 if bias != 0.0 else 0):
        raise ValueError("w must have n_features (+1 with a bias) entries")
    P.n = y.shape[0]
    P.d = n_features
    P.y = &y[0]
    P.weight = NULL
    if weight is not None:
        wt = weight
        if wt.shape[0] != P.n:
            raise ValueError("weight must have one entry per row")
        P.weight = &wt[0]
    P.loss = make_loss(loss, param)
    P.lam = lam
    P.bias = bias
    P.w = &w[0]
    if dual.shape[0] != P.n:
        raise ValueError("dual must have one entry per row")
    P.dual = &dual[0]
    cdef double* out = NULL
    if scores is not None:
        if scores.shape[0] != P.n:
            raise ValueError("scores must have one entry per row")
        out = &scores[0]
    cdef const double* norms = NULL
    if sqnorm is not None:
        if sqnorm.shape[0] != P.n:
            raise ValueError("sqnorm must have one entry per row")
        norms = &sqnorm[0]
    opt.tol = tol
    opt.max_epochs = max_epochs
    opt.cg_forcing = cg_forcing
    opt.max_cg = max_cg
    opt.n_threads = n_threads if n_threads > 1 else 1
    with nogil:
        _newton_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, python_hook,
                    <void*>mon, out, norms)
    return (res.status, res.n_epochs, res.passes, res.primal, res.dual, res.gap, res.p0,
            res.stalled, res.dense_steps)
