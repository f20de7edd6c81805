# cython: language_level=3
"""C-level interface of the dual-free SDCA loops (spec seed3): dfSDCA (uniform), IS-dfSDCA
(fixed importance sampling), adfSDCA+ (Algorithm 2 with the per-coordinate step cap) and
exact adfSDCA (Algorithm 1, residues maintained through a CSC copy of X).

Problem, with row x_i of the CSR matrix X (float32/float64 data, int32/int64 indices, no
copy) and a smooth loss phi from ``dualsolve._core.losses``::

    min_w  P(w) = (1/n) sum_i phi(x_i.w; y_i) + (lam/2) ||w||^2

A pseudo-dual alpha (n) is kept with ``w == X^T alpha / (lam n)``; a step on coordinate i
with relaxation eta moves ``alpha_i`` by ``-eta kappa_i``, ``kappa_i = alpha_i + phi'(x_i.w)``
the dual residue, and w along x_i (O(nnz of the row)).

Minimal use::

    from dualsolve.adfsdca._dfsdca cimport (DfProblem, DfOptions, DfResult, DF_PLUS,
        df_default_options, df_problem_init, dfsdca_run)

    df_problem_init(&P, n, d, y, loss, ltilde, lam, w, alpha, sqnorm, work_n, work_d)
    # adaptive methods: set P.kappa, P.u, P.tree_buf (and P.tree2_buf, P.stamp, P.marked
    # for DF_EXACT); DF_IMPORTANCE: P.alias_prob, P.alias_idx (see the struct)
    cdef DfOptions opt = df_default_options()
    opt.method = DF_PLUS
    with nogil:
        dfsdca_run(data, indices, indptr, NULL, NULL, NULL, &P, &opt, &res, NULL, NULL)
"""
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.losses cimport Loss
from dualsolve._core.rng cimport rng_state
from dualsolve._core.sampler cimport SumTree, AliasTable, MbSampler

cdef enum:
    DF_UNIFORM = 0        # dfSDCA: i uniform, eta = n theta_unif
    DF_IMPORTANCE = 1     # IS-dfSDCA: p_i ~ n lam + Lt v_i (alias table), eta = theta_IS/p_i
    DF_PLUS = 2           # adfSDCA+: tree over epoch-start u_j, shrink by s, capped eta
    DF_EXACT = 3          # adfSDCA: p* and theta of the current residues at every step;
                          # with batch_size > 1 mini-batch adfSDCA (Algorithm 4)

cdef enum:
    DF_CONVERGED = 0      # certificate <= tol * P(0) (w recomputed from alpha first)
    DF_MAX_EPOCHS = 1
    DF_STOPPED = 2        # the hook asked to stop (callback, Ctrl-C)


# After every epoch (epoch 0: the start). primal, dual, gap, max_kappa are NaN for an epoch
# without a check; dual_kind is 1 when the gap is P(w) - D(alpha) (alpha feasible), 0 when
# it is the certificate P(w) - D(-phi'(Xw)). Return nonzero to stop.
ctypedef int (*df_hook)(void* ctx, Py_ssize_t epoch, double primal, double dual, double gap,
                        double max_kappa, double dual_kind) noexcept nogil


ctypedef struct DfOptions:
    int method
    double tol                 # stop when the certificate <= tol * P(0)
    Py_ssize_t max_epochs
    Py_ssize_t check_every     # evaluate P and the certificate every this many epochs
    unsigned long long seed
    double shrink              # adfSDCA+: p_i <- p_i / shrink after i is picked (>= 1)
    double step_cap            # adfSDCA+ (and optionally exact): eta_i <= step_cap n lam /
                               # (n lam + Lt v'_i); 0: no cap (v' = v serially, the ESO
                               # weights min(b, omega) v for mini-batches)
    Py_ssize_t batch_size      # DF_EXACT: b > 1 runs Algorithm 4 (ceil(n/b) iterations per
                               # epoch); 1 the serial Algorithm 1
    int mb_sampler             # MB_ALG3 / MB_SYSTEMATIC (dualsolve._core.sampler)


ctypedef struct DfResult:
    int status
    Py_ssize_t n_epochs
    double primal
    double dual
    double gap
    double p0
    double theta               # the fixed theta (uniform / importance), else the last one


ctypedef struct DfProblem:
    Py_ssize_t n
    Py_ssize_t d
    const double* y
    Loss loss
    double ltilde              # |phi'(a) - phi'(b)| <= ltilde |a - b|
    double lam
    double* w                  # d, kept equal to X^T alpha / (lam n)
    double* alpha              # n
    const double* sqnorm       # n: v_i = ||x_i||^2
    double* z                  # work n: margins (maintained by DF_EXACT)
    double* work_d             # work d: w(alphatilde) of the certificate
    double* eta                # work n: per-coordinate relaxation (importance) / cap (plus)
    double* s                  # work n: sqrt(v_i gamma + n lam^2), gamma = lam ltilde (adaptive)
    double* kappa              # work n (adaptive)
    double* u                  # work n (adaptive): s_i |kappa_i|
    double* tree_buf           # sumtree_buffer_size(n) doubles (adaptive)
    double* tree2_buf          # the same, DF_EXACT: the tree over kappa_i^2
    Py_ssize_t* stamp          # work n (DF_EXACT)
    Py_ssize_t* marked         # work n (DF_EXACT)
    double* alias_prob         # n (DF_IMPORTANCE)
    Py_ssize_t* alias_idx      # n (DF_IMPORTANCE)
    Py_ssize_t* batch          # work b (mini-batch): the sampled set
    double* dbatch             # work b (mini-batch): its alpha increments
    double eso                 # mini-batch: min(b, omega), omega = max column count of X
    Py_ssize_t* trace          # optional: the sampled coordinates in order (tests); for
                               # mini-batches b entries per iteration, -1 padded if b_eff < b
    Py_ssize_t trace_len
    Py_ssize_t trace_pos
    SumTree tree
    SumTree tree2
    AliasTable alias
    MbSampler mb
    rng_state rng
    double theta


cdef DfOptions df_default_options() noexcept nogil

cdef void df_problem_init(DfProblem* P, Py_ssize_t n, Py_ssize_t d, const double* y, Loss loss,
                          double ltilde, double lam, double* w, double* alpha,
                          const double* sqnorm, double* z, double* work_d) noexcept nogil

# Solve to certificate <= tol * P(0) or max_epochs; returns res.status. The CSC arrays (the
# same matrix by columns) are needed by DF_EXACT only (NULL otherwise). Returns -1 when a
# buffer the method needs is missing.
cdef int dfsdca_run(const floating* data, const index_t* indices, const index_t* indptr,
                    const floating* csc_data, const index_t* csc_indices,
                    const index_t* csc_indptr, DfProblem* P, const DfOptions* opt,
                    DfResult* res, df_hook hook, void* ctx) noexcept nogil
