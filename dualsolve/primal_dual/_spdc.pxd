# cython: language_level=3
"""C-level interface of the randomized primal-dual loops of Wang & Xiao (2017), Algorithms 5
(SPDC, Ada-SPDC) and 7 (DF-SPDC, ADF-SPDC), with Zhang & Xiao's mini-batches, for
``cimport`` from other extensions.

Problem (no copy of X; CSR arrays as raw pointers, float32/float64 data, int32/int64
indices; ``a_i`` is row i, ``b_i`` its label or target)::

    min_x  P(x) = (1/n) sum_i phi(a_i.x; b_i) + (lam/2) ||x||^2 + lam1 ||x||_1
    min_x max_y  (1/n) sum_i ( y_i a_i.x - phi*(y_i; b_i) ) + g(x)

with ``phi`` from ``dualsolve._core.losses`` and the dual in the primal-dual convention:
``y_i`` lies in the domain of ``phi*(.; b_i)`` and ``y_i = phi'(a_i.x*)`` at the optimum
(SDCA's ``alpha`` is ``-y``). ``u = A^T y / n`` is kept, so ``D(y) = -(1/n) sum_i phi*(y_i)
- g*(-u)`` costs O(n + d).

Weights (``P.weight`` not NULL): the loss part is ``(1/n) sum_i c_i phi(a_i.x; b_i)``, whose
conjugate term is ``c_i phi*(y_i / c_i)``. ``P.y`` then holds ``eta_i = y_i / c_i``, the
dual of the unweighted ``phi*`` (the dual variable of the weighted problem is
``c_i eta_i``; a row of weight 0 has y_i = 0 whatever eta_i). Read with
``yt_i = sqrt(c_i) eta_i`` and rows ``sqrt(c_i) a_i``, the weighted problem is the
unweighted one with ``gamma``-strongly convex conjugates, and SPDC's dual step on yt (and
DF-SPDC's on its margins) is exactly the unweighted step on eta with the same sigma: so
the loops change only in that the primal side sees ``dy = c_k (eta_k+ - eta_k)``, and
``R`` must be ``max_i sqrt(c_i) ||a_i||`` (the caller's job) for Theorems 2 and 4 to hold.

Each stochastic step costs O(nnz of the sampled rows): the dense proximal step and the
extrapolation ``x + theta (x - xprev)`` are applied just in time per feature (the closed
forms of ``dualsolve._core.lazy``), and the whole iterate is brought up to date (flushed)
only at evaluations and parameter changes.

Minimal use (tests/test_embed_primal_dual.py builds a complete extension)::

    from dualsolve._core.status cimport STATUS_CONVERGED
    from dualsolve.primal_dual._spdc cimport (SpdcProblem, SpdcOptions, SpdcResult,
        SpdcFeature, spdc_default_options, spdc_problem_init, spdc_run)

    # feat: d SpdcFeature with .x = x0; y: n duals (v: n margins for dual-free, else NULL)
    spdc_problem_init(&P, n, d, b, loss, lam, lam1, R, SPDC_EUCLID, 1, feat, y, NULL, z,
                      work_d, order, perm)
    cdef SpdcOptions opt = spdc_default_options()
    opt.scale = p0                       # P(0): the rounding floor's scale of the gap
    with nogil:
        spdc_run(data, indices, indptr, &P, &opt, &res, NULL, NULL)

The status (``res.status``) and the hook are the package's one pair
(``dualsolve._core.status``): STATUS_CONVERGED when at an evaluation a gap measure (below)
certifies (status.pxd's gap_certifies: <= tol * (P - measure), or 64 ulps of scale) or the
gradient measure is <= tol * scale (tol = 0 never converges: it runs the budget), STATUS_MAX_EPOCHS,
STATUS_DIVERGED when an evaluation finds P(x) non-finite, STATUS_NO_MEMORY when a work
buffer could not be allocated (nothing else is set then), or what the hook returned. The
hook gets SPDC_HOOK_VALUES values per epoch: primal, dual, gap, measure (NaN for an epoch
without an evaluation) and delta_hat; within an epoch it is polled with epoch = -1 about
every SPDC_POLL_WORK nonzeros (Ctrl-C).
"""
from libc.stdint cimport int64_t, uint64_t
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.losses cimport Loss
from dualsolve._core.rng cimport rng_state
from dualsolve._core.status cimport epoch_hook

cdef enum:
    SPDC_EUCLID = 0           # SPDC / Ada-SPDC: exact dual proximal step (Alg. 5)
    SPDC_DUAL_FREE = 1        # DF-SPDC / ADF-SPDC: Bregman dual step in margin space (Alg. 7)

cdef enum:
    ADAPT_NONE = 0            # fixed delta_hat (SPDC, DF-SPDC; "Opt-" with the true value)
    ADAPT_ROBUST = 1          # Alg. 4 on log-linear fitted window ratios
    ADAPT_SIMPLE = 2          # Alg. 3: up if faster than theta predicts, else down
    ADAPT_BACKTRACK = 3       # Alg. 4, backing off a Delta whose Theorem 2 / 4 rate is not met

cdef enum:
    SPDC_SAMPLE_UNIFORM = 0       # with replacement (m = 1) / m distinct rows per step
    SPDC_SAMPLE_PERMUTATION = 1   # a fresh permutation per epoch, cut into batches

cdef enum:
    MEASURE_GAP = 0           # P(x) - D(y)                        (lam > 0)
    MEASURE_RESCALED_GAP = 1  # P(x) - D(s y), s = min(1, lam1/||u||_inf)  (lam = 0, lam1 > 0)
    MEASURE_GRAD = 2          # ||grad f(x)||^2                    (lam = lam1 = 0)

#: values handed to the hook per epoch (primal, dual, gap, measure, delta_hat)
cdef enum:
    SPDC_HOOK_VALUES = 5

#: nonzeros of X visited between two polls of the hook (epoch = -1) within an epoch
cdef enum:
    SPDC_POLL_WORK = 1 << 22


# Per-feature just-in-time state, interleaved so that one sparse step touches one cache
# line per nonzero: x (current at iteration ``last``), xprev (the iterate at last - 1),
# u_j = (A^T y / n)_j (always exact).
ctypedef struct SpdcFeature:
    double x
    double xprev
    double u
    int64_t last


ctypedef struct SpdcProblem:
    Py_ssize_t n
    Py_ssize_t d
    const double* b           # labels (+-1) or regression targets
    Loss loss
    double lam                # L2 strength (>= 0)
    double lam1               # L1 strength (>= 0)
    double R                  # max_i ||a_i|| (> 0; with weights max_i sqrt(c_i) ||a_i||)
    double gamma              # phi is (1/gamma)-smooth (phi* gamma-strongly convex)
    double delta              # nominal strong convexity of phi (1 squared, 0 otherwise)
    int method                # SPDC_EUCLID or SPDC_DUAL_FREE
    Py_ssize_t batch          # m >= 1 rows per step
    SpdcFeature* feat         # d: in x0 (feat[j].x), out: x flushed
    double* y                 # n: in/out dual iterate (must lie in dom phi*)
    double* v                 # n: margins for SPDC_DUAL_FREE (y = phi'(v)), else NULL
    double* z                 # work, n: scores a_i.x at the last evaluation
    double* work_d            # work, d: batch accumulator / gradient (zeroed by spdc_run)
    Py_ssize_t* order         # work, n + batch: the rows of the current epoch
    Py_ssize_t* perm          # work, n: permutation state of the samplers
    double* x_out             # d or NULL: receives x at every evaluation (for callbacks)
    const double* weight      # NULL (every c_i = 1), or n row weights c_i >= 0 (set after
                              # spdc_problem_init; see "Weights" above)
    double* trace             # NULL, or receives a_k.xt for every row visited (tests)
    Py_ssize_t trace_len
    Py_ssize_t trace_pos
    # parameters (spdc_set_params)
    double delta_hat          # the estimate Delta of delta mu^2 in use
    double tau
    double sigma
    double theta
    int64_t t                 # iterations done
    rng_state rng


ctypedef struct SpdcOptions:
    double tol                # the stopping tolerance (above)
    double scale              # P(0) for the gap measures, ||grad f(0)||^2 for MEASURE_GRAD
    Py_ssize_t max_epochs
    Py_ssize_t check_every    # evaluate (and flush) every k epochs
    int sampling
    uint64_t seed
    int adapt                 # ADAPT_NONE / ROBUST / SIMPLE
    Py_ssize_t period         # T: epochs between adaptations
    double c_lo               # robust thresholds (0.95, 1.5)
    double c_hi
    double factor             # Delta *= factor or /= factor (2)
    double delta_min          # floor on Delta (keeps tau finite when lam = 0)
    Py_ssize_t table_max      # longest prox-power table (0: closed forms only)
    int n_threads             # > 1 (OpenMP builds, X of 2^18+ nonzeros): each evaluation's
                              # pass over X in that many blocks of rows (_core/blocks.pxd;
                              # where nnz >= 2 n_threads 2 n_features, else one thread),
                              # the same result for the same count; the steps serial, but
                              # for batches of 1,024+ nonzeros, which step in the threads
                              # when a clock finds it faster (the serial step's bits)


ctypedef struct SpdcResult:
    int status
    Py_ssize_t n_epochs
    double primal
    double dual
    double gap
    double measure
    int measure_kind
    double delta_hat
    Py_ssize_t n_adapt_up
    Py_ssize_t n_adapt_down


cdef SpdcOptions spdc_default_options() noexcept nogil

cdef void spdc_problem_init(SpdcProblem* P, Py_ssize_t n, Py_ssize_t d, const double* b,
                            Loss loss, double lam, double lam1, double R, int method,
                            Py_ssize_t batch, SpdcFeature* feat, double* y, double* v,
                            double* z, double* work_d, Py_ssize_t* order,
                            Py_ssize_t* perm) noexcept nogil

# tau, sigma, theta from lam, Delta and the batch size (Wang & Xiao 2017, Theorems 2 and 4;
# batch m: n -> n/m in theta_y, n lam + Delta -> (n lam + Delta)/m under the square roots).
# Needs n lam + Delta > 0.
cdef void spdc_set_params(SpdcProblem* P, double delta_hat) noexcept nogil

cdef int spdc_run(const floating* data, const index_t* indices, const index_t* indptr,
                  SpdcProblem* P, const SpdcOptions* opt, SpdcResult* res,
                  epoch_hook hook, void* ctx) noexcept nogil
