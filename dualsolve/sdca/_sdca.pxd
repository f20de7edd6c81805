# cython: language_level=3
"""C-level interface of the linear SDCA engine, for ``cimport`` from other extensions.

Problem (no copy of X; CSR arrays as raw pointers, float32/float64 data, int32/int64 indices)::

    min_w  P(w) = (1/n) sum_i phi(x_i.w + bias * w[d]; y_i) + (lam/2) ||w||^2
    max_a  D(a) = -(lam/2) ||w(a)||^2 - (1/n) sum_i h(a_i; y_i),   w(a) = X^T a / (lam n)

with ``phi``/``h`` from ``dualsolve._core.losses``. ``w`` has ``d + 1`` entries when
``bias != 0`` (the last one multiplies the constant feature ``bias``), else ``d``.

Minimal use (see tests/test_embed.py for a complete extension)::

    from dualsolve._core.losses cimport Loss, LOSS_LOGISTIC
    from dualsolve.sdca._sdca cimport SdcaProblem, SdcaOptions, SdcaResult, sdca_run, sdca_default_options

    cdef SdcaProblem P      # fill n, d, y, loss, lam, bias, and the arrays w, alpha, work buffers
    cdef SdcaOptions opt = sdca_default_options()
    cdef SdcaResult res
    with nogil:
        sdca_run(data, indices, indptr, &P, &opt, &res, NULL, NULL)
"""
from libc.stdint cimport uint64_t
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.losses cimport Loss
from dualsolve._core.rng cimport rng_state

cdef enum:
    SAMPLE_PERMUTATION = 0    # a fresh random permutation of the active set every epoch
    SAMPLE_UNIFORM = 1        # n_active draws with replacement (the setting of SDCA theory)

cdef enum:
    SDCA_CONVERGED = 0        # duality gap <= tol * P(0), certified with w recomputed from alpha
    SDCA_MAX_EPOCHS = 1
    SDCA_STOPPED = 2          # the hook asked to stop (callback, Ctrl-C)


# Called after every epoch (and once for the starting point, epoch 0). primal, dual and gap
# are NaN for an epoch without an exact check; gap_estimate is the gap seen during the
# pass (NaN at epoch 0 and when every epoch is checked). Return 0 to go on, anything else
# to stop. May acquire the GIL inside.
ctypedef int (*sdca_hook)(void* ctx, Py_ssize_t epoch, double primal, double dual,
                          double gap, double gap_estimate, Py_ssize_t n_active) noexcept nogil


ctypedef struct SdcaProblem:
    Py_ssize_t n              # rows
    Py_ssize_t d              # features of X (w has d + (bias != 0) entries)
    const double* y           # labels: [-1, 1] for classification losses, reals for squared
    Loss loss
    double lam                # > 0
    double bias               # value of the implicit constant feature; 0 for none
    double* w                 # out: primal iterate, kept equal to X^T alpha / (lam n)
    double* alpha             # in/out: dual iterate (a warm start when nonzero)
    double* sqnorm            # n: ||x_i||^2 (+ bias^2 added by sdca_run); work if not given
    int sqnorm_given          # 1: sqnorm already holds ||x_i||^2 (e.g. from a validating pass)
    double* z                 # work, n: scores x_i.w at the last gap check
    Py_ssize_t* index         # work, n: active rows in [0, n_active), shrunk rows after
    Py_ssize_t n_active
    double pg_max_old         # shrinking thresholds of the previous epoch (liblinear's)
    double pg_min_old
    double pass_gap           # sum over the rows visited in the last pass of their
                              # Fenchel-Young gap F_i = phi(z_i) + h(a_i) + a_i z_i, before the step
    double shrunk_gap         # sum of F_j over shrunk rows (scores of the last check)
    double pass_cost          # work of the last pass: sum over visited rows of nnz + 16
    rng_state rng


ctypedef struct SdcaOptions:
    double tol                # stop when gap <= tol * P(0)
    Py_ssize_t max_epochs
    Py_ssize_t check_every    # k >= 1: exact gap every k epochs; 0 (auto): when the gap seen
                              # during the pass predicts tol, or when the passes since the
                              # last check did 8 times the work of a check
    int shrinking             # 1: drop rows stuck at a bound (bounded losses, labels +-1)
    int sampling              # SAMPLE_PERMUTATION or SAMPLE_UNIFORM
    uint64_t seed


ctypedef struct SdcaResult:
    int status                # SDCA_CONVERGED / SDCA_MAX_EPOCHS / SDCA_STOPPED
    Py_ssize_t n_epochs
    double primal
    double dual
    double gap
    double p0                 # P(0), the scale of the relative tolerance


cdef SdcaOptions sdca_default_options() noexcept nogil

cdef int sdca_run(const floating* data, const index_t* indices, const index_t* indptr,
                  SdcaProblem* P, const SdcaOptions* opt, SdcaResult* res,
                  sdca_hook hook, void* ctx) noexcept nogil
