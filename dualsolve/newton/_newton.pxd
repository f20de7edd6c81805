# cython: language_level=3
"""C-level interface of the primal Newton engine, for ``cimport`` from other extensions.

Problem (no copy of X; CSR arrays as raw pointers, float32/float64 data, int32/int64
indices), for a differentiable loss ``phi`` of ``dualsolve._core.losses`` (the hinge and
the epsilon-insensitive loss too: Newton then steps on their Moreau envelopes, narrowed
by continuation, and the certificate stays that of ``phi``; see ``docs/newton.md``)::

    min_w  P(w) = (1/n) sum_i c_i phi(x_i.w + bias * w[d]; y_i) + (lam/2) ||w||^2

``w`` has ``d + 1`` entries when ``bias != 0`` (the last one multiplies the constant
feature ``bias``), else ``d``. Each iteration (one "epoch" of the hook) is a line-search
Newton step: the gradient and the Jacobi preconditioner in one pass over X, preconditioned
conjugate gradients on Hessian-vector products (one pass each) until the residual is
``cg_forcing`` times the gradient, one pass for ``X s``, then a backtracking line search on
the scores (O(n) per trial). On narrow X, where forming and factoring the Hessian
(``sum_i nnz_i^2 / 2 + m^3 / 3`` flops, at most 2048 columns) costs at most 50 products, an
iteration whose CG would need more products than that takes the exact step instead (one
pass forms the Hessian, its Cholesky factor solves), and so do the iterations after
it (not for the smoothing continuation; CG again after an exact step cut below 1e-3).

Certificate: the dual point ``a_i = -c_i phi'(x_i.w)`` of the SDCA dual
``D(a) = -(lam/2)||X^T a / (lam n)||^2 - (1/n) sum_i c_i h(a_i / c_i; y_i)`` (feasible for a
differentiable loss); the duality gap ``P(w) - D(a)`` bounds ``P(w) - P*`` and equals
``||grad P(w)||^2 / (2 lam)``; it is computed term by term with compensated sums, from
scores recomputed from ``w`` before it certifies. The status and the hook are the package's
one pair (``dualsolve._core.status``), and so is the stopping rule (``gap_certifies``: the
gap <= tol * D, i.e. a relative suboptimality <= tol); the hook gets NEWTON_HOOK_VALUES values per
iteration: primal, dual, gap, cg_iters (Hessian-vector products of the iteration), step
(the line search's step length, 1 for a full Newton step), passes (passes over X so far).
"""
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.losses cimport Loss
from dualsolve._core.status cimport epoch_hook

cdef enum:
    NEWTON_HOOK_VALUES = 6


ctypedef struct NewtonProblem:
    Py_ssize_t n              # rows
    Py_ssize_t d              # features of X (w has d + (bias != 0) entries)
    const double* y           # labels -1 / +1, or real targets
    const double* weight      # loss weight c_i of each row, or NULL for all ones
    Loss loss                 # differentiable (losses.SMOOTH_LOSSES), or hinge /
                              # epsilon-insensitive (losses.loss_smoothable)
    double lam                # > 0
    double bias               # value of the implicit constant feature; 0 for none
    double* w                 # in/out: the iterate (a warm start when nonzero)
    double* dual              # out (n), or NULL: the certificate's a_i = -c_i phi'(z_i)
                              # at the last reported iterate


ctypedef struct NewtonOptions:
    double tol                # stop when gap_certifies (status.pxd): gap <= tol * D;
                              # 0 runs the budget
    Py_ssize_t max_epochs     # Newton iterations
    double cg_forcing         # CG stops at ||r|| <= cg_forcing ||grad||
    Py_ssize_t max_cg         # Hessian-vector products per iteration at most
    int n_threads             # > 1 (OpenMP builds, X of 2^18+ nonzeros): the passes over X
                              # in that many blocks of rows, one thread each, block b >= 1
                              # summing into its own copy of the m-vectors; CG's sweeps in as
                              # many ranges of features; sums added block by block in order
                              # (the same result for the same count, on any team size)


ctypedef struct NewtonResult:
    int status
    Py_ssize_t n_epochs       # Newton iterations done
    Py_ssize_t passes         # passes over X in all
    double primal
    double dual
    double gap
    double p0                 # P(0)
    int stalled               # the run ended before its budget with STATUS_MAX_EPOCHS:
                              # NEWTON_STALLED_ROUNDING, the line search found no decrease
                              # (rounding level); NEWTON_STALLED_SMOOTHING, the hinge's /
                              # epsilon-insensitive loss's continuation stopped gaining
                              # (0: neither)
    Py_ssize_t dense_steps    # iterations solved with the explicit Hessian (narrow X)


cdef enum:
    NEWTON_STALLED_ROUNDING = 1
    NEWTON_STALLED_SMOOTHING = 2


cdef NewtonOptions newton_default_options() noexcept nogil

cdef void newton_run(const floating* data, const index_t* indices, const index_t* indptr,
                     const NewtonProblem* P, const NewtonOptions* opt, NewtonResult* res,
                     epoch_hook hook, void* ctx) noexcept nogil
