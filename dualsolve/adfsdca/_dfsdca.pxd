# cython: language_level=3
"""C-level interface of the dual-free SDCA engine, for ``cimport`` from other extensions:
dfSDCA (uniform, Shalev-Shwartz 2016), IS-dfSDCA (fixed importance sampling, Csiba &
Richtarik 2015), adfSDCA+ (He, Tappenden & Takac 2018, Algorithm 2, with a per-coordinate
step cap) and adfSDCA (their Algorithm 1; with ``batch_size > 1`` the mini-batch
Algorithm 4).

Problem, with row x_i of the CSR matrix X (float32/float64 data, int32/int64 indices, no
copy) and a smooth loss phi from ``dualsolve._core.losses``::

    min_w  P(w) = (1/n) sum_i c_i phi(x_i.w; y_i) + (lam/2) ||w||^2

with row weights c_i >= 0 (``P.weight``, set after df_problem_init; NULL: every c_i = 1).
A pseudo-dual alpha (n) is kept with ``w == X^T alpha / (lam n)``; a step on coordinate i
with relaxation eta moves ``alpha_i`` by ``-eta kappa_i``,
``kappa_i = alpha_i + c_i phi'(x_i.w)`` the dual residue, and w along x_i (O(nnz of the
row)). Row i's loss is c_i Lt smooth, so every step rule uses c_i Lt v_i where the
unweighted one has Lt v_i; a row of weight 0 must start at alpha_i = 0 and is never drawn.

Minimal use (see tests/test_embed_adfsdca.py for a complete extension)::

    from dualsolve._core.losses cimport Loss, LOSS_LOGISTIC
    from dualsolve.adfsdca._dfsdca cimport (DfProblem, DfOptions, DfResult, DF_PLUS,
        df_default_options, df_problem_init, dfsdca_run)

    cdef DfProblem P
    df_problem_init(&P, n, d, y, loss, lam, w, alpha, NULL)   # NULL: row norms computed
    cdef DfOptions opt = df_default_options()
    opt.method = DF_PLUS
    cdef DfResult res
    with nogil:
        dfsdca_run(data, indices, indptr, &P, &opt, &res, NULL, NULL)

dfsdca_run allocates its work memory (residues, sum-trees, the alias table, the CSC copy of X
that DF_EXACT keeps) and frees it before returning. It returns ``res.status``, one of the
package's codes (``dualsolve._core.status``): STATUS_CONVERGED when the certificate (the
duality gap, or the alphatilde certificate when alpha has left the conjugate's domain) is
<= tol * (P - certificate) (status.pxd's gap_certifies, or 64 ulps of P(0)), with w
recomputed from alpha (tol = 0 never converges: it runs the budget);
STATUS_MAX_EPOCHS; STATUS_DIVERGED when a check finds a non-finite objective or
certificate (or the epoch's residues turn non-finite); STATUS_NO_MEMORY (nothing run); or
what the hook returned. -1 (not a status) means an invalid problem: a loss that is not
smooth, or batch_size outside [1, n].

The hook gets DF_HOOK_VALUES = 5 values after epoch 0 (the start) and every epoch: primal,
dual, gap, max_kappa (max_i |kappa_i| at w) and dual_kind (1: the gap is P(w) - D(alpha),
alpha feasible; 0: the certificate P(w) - D(-phi'(Xw))), all NaN for an epoch without a
check. A long epoch (exact adfSDCA, mini-batches: a step can cost a pass over X) polls it
with epoch -1 about every DF_POLL_WORK multiply-adds; a nonzero answer stops the run
inside the epoch (``res.n_epochs`` counts the completed epochs; the iterate keeps the
steps made, with w == X^T alpha / (lam n)).
"""
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.losses cimport Loss
from dualsolve._core.rng cimport rng_state
from dualsolve._core.sampler cimport SumTree, AliasTable, MbSampler
from dualsolve._core.status cimport epoch_hook

cdef enum:
    DF_UNIFORM = 0        # dfSDCA: i uniform (over the rows of weight > 0), eta = n theta_unif
    DF_IMPORTANCE = 1     # IS-dfSDCA: p_i ~ n lam + c_i Lt v_i (alias table; 0 for c_i = 0),
                          # eta = theta_IS/p_i
    DF_PLUS = 2           # adfSDCA+: tree over epoch-start u_j, shrink by prob_shrink, capped eta
    DF_EXACT = 3          # adfSDCA: p* and theta of the current residues at every step;
                          # with batch_size > 1 mini-batch adfSDCA (Algorithm 4)

cdef enum:
    DF_HOOK_VALUES = 5    # primal, dual, gap, max_kappa, dual_kind
    DF_POLL_WORK = 4194304


ctypedef struct DfOptions:
    int method
    double tol                 # stop when gap_certifies (status.pxd); 0 runs the budget
    Py_ssize_t max_epochs
    Py_ssize_t check_every     # evaluate P and the certificate every this many epochs (and
                               # at the last one)
    unsigned long long seed
    double prob_shrink         # adfSDCA+: p_i <- p_i / prob_shrink after i is picked (>= 1)
    double step_cap            # eta_i <= step_cap n lam / (n lam + Lt v'_i); 0: no cap (v' = v
                               # serially, the ESO weights min(b, omega) v for mini-batches)
    Py_ssize_t batch_size      # DF_EXACT: b > 1 runs Algorithm 4 (ceil(n/b) iterations per
                               # epoch); 1 the serial Algorithm 1
    int batch_sampling         # MB_ALG3 / MB_SYSTEMATIC (dualsolve._core.sampler)
    int n_threads              # > 1 (OpenMP builds, X of 2^18+ nonzeros): each check's pass
                               # over X in that many blocks of rows (_core/blocks.pxd), its
                               # sums added in block order (the same result for the same
                               # count); a mini-batch iteration's per-row work (margins,
                               # residues, weights, the margins' update) by the same blocks
                               # (the serial iterates' bits); the other steps stay serial


ctypedef struct DfResult:
    int status
    Py_ssize_t n_epochs
    double primal
    double dual
    double gap
    double p0                  # P(0), the scale of the rounding floor
    double theta               # the fixed theta (uniform / importance), else the last one


ctypedef struct DfProblem:
    # the problem: set by df_problem_init (trace optional)
    Py_ssize_t n
    Py_ssize_t d
    const double* y
    Loss loss
    double ltilde              # |phi'(a) - phi'(b)| <= ltilde |a - b| (df_loss_smoothness)
    double lam
    double* w                  # out: d, kept equal to X^T alpha / (lam n)
    double* alpha              # in/out: n (a warm start when nonzero)
    const double* sqnorm       # n: v_i = ||x_i||^2, or NULL (dfsdca_run computes them)
    # work memory: set by dfsdca_run and released before it returns (the hot fields keep
    # the order they had before the port: moving them cost 2-3 % of an epoch)
    double* z                  # n: margins (maintained by DF_EXACT)
    double* work_d             # d: w(alphatilde) of the certificate
    double* eta                # n: per-coordinate relaxation (importance) / cap (adaptive)
    double* s                  # n: sqrt(v_i gamma + n lam^2), gamma = lam ltilde (adaptive)
    double* kappa              # n (adaptive)
    double* u                  # n (adaptive): s_i |kappa_i|
    const double* v            # n: the row norms in use (sqnorm, or computed)
    Py_ssize_t* stamp          # n (DF_EXACT)
    Py_ssize_t* marked         # n (DF_EXACT)
    Py_ssize_t* batch          # b (mini-batch): the sampled set
    double* dbatch             # b (mini-batch): its alpha increments
    double eso                 # mini-batch: min(b, omega), omega = max column count of X
    Py_ssize_t* trace          # optional (tests): the sampled coordinates in order; for
    Py_ssize_t trace_len       # mini-batches b entries per iteration, -1 padded if b_eff < b
    Py_ssize_t trace_pos
    SumTree tree
    SumTree tree2              # DF_EXACT: the tree over kappa_i^2
    AliasTable alias
    MbSampler mb
    rng_state rng
    double theta
    const double* weight       # the problem's n row weights c_i >= 0, or NULL (all 1): set
                               # after df_problem_init (last, so the fields above keep
                               # their offsets)


cdef DfOptions df_default_options() noexcept nogil

# Ltilde of a loss (1/4 logistic, 1 squared, 1/s smoothed hinge, 2 squared hinge); -1 for a
# loss that is not smooth (the hinge), which dual-free SDCA cannot use.
cdef double df_loss_smoothness(const Loss* loss) noexcept nogil

cdef void df_problem_init(DfProblem* P, Py_ssize_t n, Py_ssize_t d, const double* y, Loss loss,
                          double lam, double* w, double* alpha,
                          const double* sqnorm) noexcept nogil

cdef int dfsdca_run(const floating* data, const index_t* indices, const index_t* indptr,
                    DfProblem* P, const DfOptions* opt, DfResult* res,
                    epoch_hook hook, void* ctx) noexcept nogil
