# cython: language_level=3
"""C-level interface of the spectral-risk baselines of Ge & Jiang (2024): LSVRG and Prospect
(Mehta et al. 2023, 2024) and mini-batch stochastic subgradient descent.

All three minimise, with row x_i of the CSR matrix X (float32/float64 data, int32/int64
indices, no copy), a loss phi from ``dualsolve._core.losses`` and a spectrum sigma
(ascending, sum 1)::

    F(w) = sum_i sigma_i l_[i](w) + (lam/2) ||w||^2,     l_i(w) = phi(x_i.w; y_i)

with no smoothing of the spectral risk (nu = 0, as in the SOREL paper's experiments).

LSVRG (Mehta et al. 2023) has no loop of its own here: with nu = 0 it is
exactly SOREL's ``no_dual_prox`` ablation (lambda jumps to the vertex sigma[rank(l(w_k))] at
each checkpoint, no proximal term), so ``dualsolve.spectral._sorel.sorel_run`` with
``opt.no_dual_prox = True`` is the LSVRG loop.

Prospect (Mehta et al. 2024), nu = 0, step t (i uniform)::

    m = x_i.w;  g = phi'(m; y_i);  l = phi(m; y_i);  lambda_i = sigma[pos(i)]
    w <- (w - step ((n lambda_i g - n rho_i gtab_i) x_i + S)) / (1 + step lam)
    S += (lambda_i g - rho_i gtab_i) x_i;  rho_i = lambda_i;  gtab_i = g
    move i to its place in the sorted loss table (key (loss, index), ascending)

with S = sum_i rho_i gtab_i x_i kept exactly. lambda = sigma[pos] is never stored: the
sorted order is maintained by moving the one changed entry (galloping search + shift),
O(displacement) per step instead of a full re-sort. The dense part (the ridge prox and
the -step S drift) is applied lazily (DriftJIT with a = 1/(1 + step lam), b_j = -a step
S_j; S_j only changes on touched coordinates right after they are stepped). A step costs
O(nnz(x_i) + displacement); an epoch is n steps.

Mini-batch stochastic subgradient "SGD" (Levy et al. 2020), each epoch a fresh permutation cut
into floor(n/b) batches B of b rows::

    m_B = X_B w;  lambda_B = sigma_b[rank(phi(m_B))]   (sigma_b: the b-point spectrum)
    w <- (1 - step lam) w - step X_B^T (lambda_B * phi'(m_B))

with w = scale * v (``ScaledVec``): O(nnz(X_B) + b log b) per step.

``prospect_run`` / ``sgd_run`` run the epochs to a certificate, as ``sorel_run`` does
(_sorel.pxd): after every epoch one pass over X gives F(w_k) and the vertex
sigma[rank(l(w_k))], which joins a running average of the vertices (weights k + 1; a given
lambda stands for the past). The certificate G(w_k, lambda) >= F(w_k) - F* at that
average costs a second pass (X^T (lambda * phi'(X w_k))), so it is checked every 8 epochs,
at the last one, and whenever its first term R(l) - lambda^T l (O(n)) is at most the target,
i.e. when it can succeed (NaN dual and gap in between); the run converges when
G <= tol * (F - G) (status.pxd's gap_certifies). The hook
gets BASELINE_HOOK_VALUES values: primal, dual = F - G, gap G, passes (per-row gradients
/ n: Prospect k + 1 after its table build, 0 at epoch 0; SGD k floor(n/b) b / n); it is
polled (epoch = -1) during an epoch every 4096 steps (Prospect) or batches (SGD), and a
stop there restores w_k. On return ``dual`` holds the running average (the lambda of the
last certificate when the last epoch was checked).
"""
from libc.stdint cimport int64_t
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.losses cimport Loss
from dualsolve._core.rng cimport rng_state
from dualsolve._core.status cimport epoch_hook
from dualsolve.spectral._sorel cimport SorelProblem, SorelResult


#: values handed to the hook per epoch (primal, dual, gap, passes)
cdef enum:
    BASELINE_HOOK_VALUES = 4


ctypedef struct BaselineOptions:
    double step                # step size (> 0; SGD: step lam < 1)
    Py_ssize_t steps           # steps (Prospect, <= n) or batches (SGD, <= floor(n/b)) per epoch
    Py_ssize_t max_epochs
    double tol                 # stop when G <= tol * (F - G) (tol = 0: run max_epochs)
    unsigned long long seed
    int n_threads              # > 1 (OpenMP builds, X of 2^18+ nonzeros): each epoch's
                               # losses at w (rows apart: the same values) and its check's
                               # X^T (...) (blocks of rows, _core/blocks.pxd: the same result
                               # for the same count) in that many threads; the steps stay
                               # serial. 1 (or less): one thread


# Every option at its default (step 0.01, steps 0: set it, 64 epochs, tol 0, seed 0, one
# thread): a caller that sets fields one by one starts from here.
cdef BaselineOptions baseline_default_options() noexcept nogil


# ---------------------------------------------------------------------------------------
# Prospect


ctypedef struct ProspectProblem:
    Py_ssize_t n
    Py_ssize_t d
    const double* y
    Loss loss
    double lam                 # L2 strength
    const double* sigma        # n, ascending
    double* w                  # d: w_0 on entry of prospect_start, the iterate after
    # state, carved from the caller's buffers by prospect_problem_init
    double* S                  # d: sum_i rho_i gtab_i x_i
    double* gtab               # n: phi'(x_i.w) at the last visit of i
    double* rho                # n: lambda_i at the last visit of i
    double* sl                 # n: the loss table, sorted ascending (ties: by index)
    Py_ssize_t* order          # n: order[p] = the sample at position p
    Py_ssize_t* pos            # n: pos[i] = the position of sample i (lambda_i = sigma[pos[i]])
    double* tab                # drift_table_size(n): lazy-update tables
    int64_t* last              # d: DriftJIT timestamps
    Py_ssize_t* iw             # n: sort work
    double step                # set by prospect_start
    int64_t shifts             # total displacement of the moved entries (statistics)
    Py_ssize_t* trace          # optional: the sampled rows in order (tests)
    Py_ssize_t trace_len
    Py_ssize_t trace_pos
    Py_ssize_t* otrace         # optional: order after every step, n per step (tests)
    Py_ssize_t otrace_steps
    Py_ssize_t otrace_pos
    rng_state rng


# Work sizes for n rows and d features: doubles, Py_ssize_t, int64_t.
cdef void prospect_work_sizes(Py_ssize_t n, Py_ssize_t d, Py_ssize_t* n_double,
                              Py_ssize_t* n_intp, Py_ssize_t* n_int64) noexcept nogil

cdef void prospect_problem_init(ProspectProblem* P, Py_ssize_t n, Py_ssize_t d,
                                const double* y, Loss loss, double lam, const double* sigma,
                                double* w, double* dwork, Py_ssize_t* iwork,
                                int64_t* lwork) noexcept nogil

# Build the tables at the current w (one pass: O(nnz + n log n + d)), seed the generator and
# set the step size (> 0). Must precede prospect_epoch.
cdef void prospect_start(const floating* data, const index_t* indices, const index_t* indptr,
                         ProspectProblem* P, double step, unsigned long long seed) noexcept nogil

# T (1 <= T <= n) Prospect steps; every coordinate of w is current on return. With a hook,
# polls it (epoch -1) every 4096 steps and returns its nonzero status at once (w then
# current but mid-epoch); else 0.
cdef int prospect_epoch(const floating* data, const index_t* indices, const index_t* indptr,
                        ProspectProblem* P, Py_ssize_t T, epoch_hook hook,
                        void* ctx) noexcept nogil

# Replace the loss of sample i in the sorted table by v (key (v, i)); O(displacement).
cdef void prospect_reposition(ProspectProblem* P, Py_ssize_t i, double v) noexcept nogil

# dual[i] = sigma[pos[i]] (the current vertex of the permutahedron).
cdef void prospect_lambda(const ProspectProblem* P, double* dual) noexcept nogil

# prospect_start, then epochs to G <= tol (F - G), max_epochs or a stop from the hook (module
# docstring). Q: a SorelProblem over the same data for the checks (sorel_problem_init with
# b = T = 1; Q.w == P.w; Q.dual: the given lambda when Q.dual_given, the running average on
# return). Returns res.status.
cdef int prospect_run(const floating* data, const index_t* indices, const index_t* indptr,
                      ProspectProblem* P, SorelProblem* Q, const BaselineOptions* opt,
                      SorelResult* res, epoch_hook hook, void* ctx) noexcept nogil


# ---------------------------------------------------------------------------------------
# mini-batch stochastic subgradient


ctypedef struct SgdProblem:
    Py_ssize_t n
    Py_ssize_t d
    Py_ssize_t b               # batch size, 1 <= b <= n
    const double* y
    Loss loss
    double lam                 # L2 strength
    const double* sigma_b      # b, ascending: the spectrum over one batch
    double* w                  # d
    Py_ssize_t* order          # n: the sampling permutation
    double* mb                 # b: margins of the batch
    double* lb                 # b: losses of the batch
    double* cb                 # b: lambda * phi'
    Py_ssize_t* bperm          # b: ascending order of the batch losses
    Py_ssize_t* biw            # b: sort work
    Py_ssize_t* trace          # optional: the sampled rows in order (tests)
    Py_ssize_t trace_len
    Py_ssize_t trace_pos
    rng_state rng


cdef void sgd_work_sizes(Py_ssize_t n, Py_ssize_t b, Py_ssize_t* n_double,
                         Py_ssize_t* n_intp) noexcept nogil

cdef void sgd_problem_init(SgdProblem* P, Py_ssize_t n, Py_ssize_t d, Py_ssize_t b,
                           const double* y, Loss loss, double lam, const double* sigma_b,
                           double* w, double* dwork, Py_ssize_t* iwork,
                           unsigned long long seed) noexcept nogil

# One epoch: a fresh permutation, then T <= floor(n/b) steps of the given size
# (step lam < 1) on its consecutive batches. w is plain (scale folded in) on return. With a
# hook, polls it (epoch -1) every 4096 batches and returns its nonzero status at once;
# else 0.
cdef int sgd_epoch(const floating* data, const index_t* indices, const index_t* indptr,
                   SgdProblem* P, double step, Py_ssize_t T, epoch_hook hook,
                   void* ctx) noexcept nogil

# Epochs to G <= tol (F - G), max_epochs or a stop from the hook (Q as for prospect_run).
cdef int sgd_run(const floating* data, const index_t* indices, const index_t* indptr,
                 SgdProblem* P, SorelProblem* Q, const BaselineOptions* opt, SorelResult* res,
                 epoch_hook hook, void* ctx) noexcept nogil
