# cython: language_level=3
"""C-level interface of the kernel engines of the mixup family, for ``cimport`` from other
extensions: kernel SDCA (MixupSDCA, Obi, Saito, Sasaki & Kato, 2025) and kernel SGD (its
baseline).

Problem, over the n_points points of a kernel matrix K (a ``ColumnSource`` of
``dualsolve._core.kernels``: columns and diagonal without the GIL, no copy)::

    min_f  R[f] = (lam/2) ||f||_H^2 + (1/n) sum_j c_j phi(f(x_{p(j)}); y_j)
    max_a  D(a) = -(lam/2) ||f_a||^2 - (1/n) sum_j c_j h(a_j / c_j; y_j),
           f_a = sum_j a_j k(x_{p(j)}, .) / (lam n)

with ``phi``/``h`` from ``dualsolve._core.losses``. Kernel SDCA has n coordinates j, each
on a point p(j) with a loss weight c_j (``point``/``weight``; NULL: p(j) = j and c_j = 1,
then n == n_points); ``beta`` (n_points) sums the duals of each point's coordinates, so
``f = sum_p beta_p k(x_p, .) / (lam n)``. Kernel SGD has one coordinate per point, c = 1,
and steps on ``f = sum_p beta_p k(x_p, .)`` directly; its dual point is
``a = -phi'(f(x))`` (the SDCA dual), which gives its certificate.

Minimal use (see tests/test_embed_mixup.py for a complete extension)::

    from dualsolve._core.kernels cimport ColumnSource
    from dualsolve._core.losses cimport Loss, LOSS_LOGISTIC
    from dualsolve.mixup._kernel_sdca cimport (KernelProblem, KernelOptions, KernelResult,
        kernel_problem_init, kernel_default_options, kernel_sdca_run)

    cdef ColumnSource K = gram          # e.g. a DenseGram made in Python
    cdef KernelProblem P
    kernel_problem_init(&P, n, y, loss, lam, alpha, beta)
    cdef KernelOptions opt = kernel_default_options()
    cdef KernelResult res
    with nogil:
        kernel_sdca_run(K, &P, &opt, &res, NULL, NULL)

kernel_sgd_run is used the same way (KernelSgdProblem, KernelSgdOptions, KernelSgdResult,
kernel_sgd_problem_init, kernel_sgd_default_options). Both engines allocate their work
memory and free it before returning; K must not be None, and stays in use by the caller
(a source is one thread's: its columns live in its own scratch memory).

Both return ``res.status``, one of the package's codes (``dualsolve._core.status``):
STATUS_CONVERGED when the exact duality gap is <= tol * D (status.pxd's gap_certifies, or
64 ulps of R[0]; tol = 0 never converges: it
runs the budget); STATUS_MAX_EPOCHS; STATUS_NO_MEMORY (nothing run); or what the hook
returned. -1 (not a status) means an invalid problem: n != K.n without ``point`` (SGD:
n != K.n).

The hook gets epoch 0 (the start) and every epoch. Kernel SDCA: KERNEL_SDCA_HOOK_VALUES = 5
values, primal, dual, gap (NaN for an epoch without an exact check), gap_estimate (the gap
seen during the pass; NaN at epoch 0 and when every epoch is checked) and n_active (always
n: no shrinking). Kernel SGD: KERNEL_SGD_HOOK_VALUES = 4 values, primal, dual, gap (exact,
every epoch) and the step the epoch used. An epoch costs O(n n_points): both poll the hook
with epoch -1 about every KERNEL_POLL_WORK multiply-adds; a nonzero answer stops the run
inside the epoch (``res.n_epochs`` counts the completed epochs, the iterate keeps the steps
made, and primal/dual/gap are those of the last check).
"""
from libc.stdint cimport uint64_t
from dualsolve._core.kernels cimport ColumnSource
from dualsolve._core.losses cimport Loss
from dualsolve._core.rng cimport rng_state
from dualsolve._core.status cimport epoch_hook
from dualsolve.sdca.steps cimport StepParams

cdef enum:
    KERNEL_SAMPLE_PERMUTATION = 0   # a fresh random permutation every epoch
    KERNEL_SAMPLE_UNIFORM = 1       # n draws with replacement

#: values handed to the hook per epoch
cdef enum:
    KERNEL_SDCA_HOOK_VALUES = 5     # primal, dual, gap, gap_estimate, n_active
    KERNEL_SGD_HOOK_VALUES = 4      # primal, dual, gap, step

#: multiply-adds between two polls of the hook inside an epoch (a few ms)
cdef enum:
    KERNEL_POLL_WORK = 1 << 22


ctypedef struct KernelProblem:
    Py_ssize_t n              # coordinates (the 1/n of the objective)
    Py_ssize_t n_points       # set by kernel_sdca_run: K.n
    const Py_ssize_t* point   # coordinate -> point, or NULL (identity)
    const double* weight      # loss weight c_j of each coordinate, or NULL (all ones)
    const double* y           # labels per coordinate: [-1, 1], or reals for the squared loss
    Loss loss
    StepParams step           # the coordinate step rule (dualsolve.sdca.steps)
    double lam                # > 0
    double* alpha             # in/out, n: dual iterate (a warm start when nonzero)
    double* beta              # out, n_points: sum of alpha over the coordinates of each point
    double* z                 # work, n_points: K beta / (lam n) (allocated by the run)
    Py_ssize_t* index         # work, n: the visiting order (allocated by the run)
    double pass_gap           # sampled Fenchel-Young gap of the last pass, scaled to n rows
    rng_state rng


ctypedef struct KernelOptions:
    double tol                # stop when gap <= tol * D (gap_certifies)
    Py_ssize_t max_epochs
    Py_ssize_t check_every    # k >= 1: exact gap every k epochs; 0 (auto): see
                              # dualsolve.sdca.schedule (the gap seen during the pass)
    int sampling              # KERNEL_SAMPLE_PERMUTATION or KERNEL_SAMPLE_UNIFORM
    uint64_t seed


ctypedef struct KernelResult:
    int status                # a dualsolve._core.status code
    Py_ssize_t n_epochs
    double primal             # of the last exact check
    double dual
    double gap
    double p0                 # R[0], the scale of the rounding floor


ctypedef struct KernelSgdProblem:
    Py_ssize_t n              # points: must equal K.n
    const double* y           # labels per point
    Loss loss                 # a smooth loss (phi' is used)
    double lam                # > 0, with step * lam < 1
    double* beta              # in/out, n: f = sum_p beta_p k(x_p, .), the start and the result


ctypedef struct KernelSgdOptions:
    double tol                # stop when gap <= tol * D (gap_certifies)
    Py_ssize_t max_epochs
    double step               # the step of the first epoch (constant within an epoch)
    int halve_on_plateau      # 1: halve the step after KERNEL_SGD_PLATEAU epochs without a
                              # new best gap (the constant step's noise floor)
    int sampling              # KERNEL_SAMPLE_PERMUTATION or KERNEL_SAMPLE_UNIFORM
    uint64_t seed

cdef enum:
    KERNEL_SGD_PLATEAU = 3


ctypedef struct KernelSgdResult:
    int status                # a dualsolve._core.status code
    Py_ssize_t n_epochs
    double primal             # of the last epoch's exact check
    double dual
    double gap
    double p0                 # R[0]
    double step               # the step of the last epoch


# train_mixup_sdca's defaults: tol 1e-6, 1000 epochs, a check every epoch, permutations, seed 0
cdef KernelOptions kernel_default_options() noexcept nogil

# The plain setting: one coordinate per point (no point map, no weights), exact steps.
cdef void kernel_problem_init(KernelProblem* P, Py_ssize_t n, const double* y, Loss loss,
                              double lam, double* alpha, double* beta) noexcept nogil

cdef int kernel_sdca_run(ColumnSource K, KernelProblem* P, const KernelOptions* opt,
                         KernelResult* res, epoch_hook hook, void* ctx) noexcept nogil


# train_kernel_sgd's defaults but the step: tol 1e-6, 100 epochs, step 0.1 halved on
# plateaus, uniform sampling, seed 0
cdef KernelSgdOptions kernel_sgd_default_options() noexcept nogil

cdef void kernel_sgd_problem_init(KernelSgdProblem* P, Py_ssize_t n, const double* y, Loss loss,
                                  double lam, double* beta) noexcept nogil

cdef int kernel_sgd_run(ColumnSource K, KernelSgdProblem* P, const KernelSgdOptions* opt,
                        KernelSgdResult* res, epoch_hook hook, void* ctx) noexcept nogil
