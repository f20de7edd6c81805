# cython: language_level=3
"""C-level interface of the SOREL loop (spec seed4 section 2.3 / 2.4, the practical form).

Problem, with row x_i of the CSR matrix X (float32/float64 data, int32/int64 indices, no
copy), a loss phi from ``dualsolve._core.losses`` and a spectrum sigma (ascending)::

    min_w  F(w) = sum_i sigma_i l_[i](w) + (mu/2) ||w||^2,    l_i(w) = phi(x_i.w; y_i)

Epoch k (0-based) from w_k, lambda_k and l(w_{k-1}):

    theta = k/(k+1);  eta = min(C_k (k+1)/n, eta_max);  tau = tau_c n/(k+1)
    m = X w_k;  l_k = phi(m);  dbar = phi'(m)
    lambda_{k+1} = Proj_{Pi_sigma}(lambda_k + eta ((1+theta) l_k - theta l_{k-1}))
    gbar = X^T (lambda_{k+1} * dbar);  anchor w_k
    T steps on batches S of b rows (b = 1: i uniform, T = n; otherwise T = floor(n/b)
    batches of a fresh permutation per epoch; SOREL_PERMUTATION forces the latter for b = 1):
        c_i = (n/b) lambda_i (phi'(x_i.w) - dbar_i)         (all at the same w)
        gradient form:  w <- w - alpha (sum_S c_i x_i + gbar + mu w + (w - w_k)/tau)
        prox form:      w <- (w - alpha (sum_S c_i x_i + gbar) + (alpha/tau) w_k) / (1 + alpha mu + alpha/tau)
    w_{k+1} = the last iterate

with lambda_0 = sigma[rank(l(w_0))] (the vertex) and l(w_{-1}) = l(w_0).

C_k = C / 2^(the number of times the dual-step guard has acted before epoch k): the guard
(``eta_guard`` in ``train_sorel``; see sorel.py and the _sorel.pyx docstring) watches
the dual steps s_k = lambda_{k+1} - lambda_k; when three successive pairs point in opposite
directions (cos(s_j, s_{j-1}) < -1/2) without shrinking (||s_k|| >= 0.9 ||s_{k-3}||), C is
halved for the rest of the run (eta halves at once, then grows at half the rate; again if
it recurs). Without it the paper's eta_k = C (k+1)/n grows without bound and long runs leave
the optimum again. ``sorel_run`` always runs with the guard (no_dual_prox disables it, there
being no dual step); the paper's unguarded schedule is ``train_sorel(eta_guard=False)``.

The dense parts of a step (mu, tau, gbar, w_k) are applied lazily (``dualsolve._core.lazy``
DriftJIT): a step costs O(nnz of the rows), an epoch O(nnz(X) + n log n + d).

Minimal use::

    from dualsolve.spectral._sorel cimport (SorelProblem, SorelOptions, SorelResult,
        sorel_default_options, sorel_epoch_steps, sorel_work_sizes, sorel_problem_init,
        sorel_run)

    cdef SorelOptions opt = sorel_default_options()
    opt.alpha = 0.01; opt.C = 0.1; opt.max_epochs = 64
    T = sorel_epoch_steps(&opt, n)
    sorel_work_sizes(n, d, opt.batch_size, T, &nd, &ni, &nl)   # double / intp / int64
    sorel_problem_init(&P, n, d, opt.batch_size, T, y, loss, mu, sigma, w, lam, dwork,
                       iwork, lwork)
    with nogil:
        sorel_run(data, indices, indptr, &P, &opt, &res, NULL, NULL)
"""
from libc.stdint cimport int64_t
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.losses cimport Loss
from dualsolve._core.rng cimport rng_state

cdef enum:
    SOREL_GRADIENT = 0          # the paper's experiments: a gradient step on the subproblem
    SOREL_PROX = 1              # the proximal step of Algorithm 1, line 14 (ridge g)

cdef enum:
    SOREL_UNIFORM = 0           # b = 1: i uniform with replacement, n steps per epoch
    SOREL_PERMUTATION = 1       # floor(n/b) disjoint batches of a fresh permutation

cdef enum:
    SOREL_MAX_EPOCHS = 1
    SOREL_STOPPED = 2           # the hook asked to stop (callback, Ctrl-C)
    SOREL_DIVERGED = 3          # a non-finite objective


# After the objective at w_k is known (epoch k = 0..max_epochs; k is also the number of
# epochs run). lam is lambda_k (n). Return nonzero to stop.
ctypedef int (*sorel_hook)(void* ctx, Py_ssize_t epoch, double primal,
                           const double* lam) noexcept nogil


ctypedef struct SorelOptions:
    double alpha               # primal step
    double C                   # eta_k = C (k+1)/n
    double tau_c               # tau_k = tau_c n/(k+1)
    double eta_max             # cap on eta_k (<= 0: none)
    int form                   # SOREL_GRADIENT / SOREL_PROX
    int sampling               # SOREL_UNIFORM (b = 1 only) / SOREL_PERMUTATION
    Py_ssize_t batch_size      # b in [1, n]
    Py_ssize_t steps           # batches per epoch, T (<= 0: n for SOREL_UNIFORM, floor(n/b)
                               # otherwise; a longer epoch reshuffles when a pass is used up)
    Py_ssize_t max_epochs
    unsigned long long seed
    bint no_dual_prox          # ablation (paper App. C): lambda_{k+1} = sigma[rank(l(w_k))]


ctypedef struct SorelResult:
    int status
    Py_ssize_t n_epochs
    double primal              # F(w) at the returned w
    int error                  # 0, or -1: gradient form with alpha (mu + 1/tau_k) >= 1


ctypedef struct SorelProblem:
    Py_ssize_t n
    Py_ssize_t d
    const double* y
    Loss loss
    double mu
    const double* sigma        # n, ascending
    double* w                  # d: w_0 on entry, the last iterate on return
    double* lam                # n: lambda (set to the vertex at w_0 by sorel_run)
    # work, carved from the caller's buffers by sorel_problem_init
    double* l_cur              # n: l(w_k)
    double* l_prev             # n: l(w_{k-1})
    double* dbar               # n: phi'(x_i.w_k)
    double* z                  # n: lambda_k + eta v_k; also sorted losses
    double* pdw                # n: projection work
    double* gbar               # d
    double* wk                 # d: the anchor w_k
    double* tab                # drift_table_size(T) doubles
    double* cb                 # b: the batch's coefficients
    Py_ssize_t* perm           # n: order of the last projection (warm start)
    Py_ssize_t* lperm          # n: ascending order of the losses (warm start)
    Py_ssize_t* iw             # n: sort / PAVA work
    Py_ssize_t* order          # n: the sampling permutation
    Py_ssize_t* batch          # b: the current batch
    int64_t* last              # d: DriftJIT timestamps
    Py_ssize_t* trace          # optional: the sampled rows in order (tests)
    Py_ssize_t trace_len
    Py_ssize_t trace_pos
    rng_state rng


cdef SorelOptions sorel_default_options() noexcept nogil

# The number of steps per epoch for these options and n rows.
cdef Py_ssize_t sorel_epoch_steps(const SorelOptions* opt, Py_ssize_t n) noexcept nogil

# Work sizes for n rows, d features, batch size b and T steps per epoch: doubles,
# Py_ssize_t, int64_t.
cdef void sorel_work_sizes(Py_ssize_t n, Py_ssize_t d, Py_ssize_t b, Py_ssize_t T,
                           Py_ssize_t* n_double, Py_ssize_t* n_intp,
                           Py_ssize_t* n_int64) noexcept nogil

# Carve the work buffers (sizes from sorel_work_sizes with the same n, d, b, T).
cdef void sorel_problem_init(SorelProblem* P, Py_ssize_t n, Py_ssize_t d, Py_ssize_t b,
                             Py_ssize_t T,
                             const double* y, Loss loss, double mu, const double* sigma,
                             double* w, double* lam, double* dwork, Py_ssize_t* iwork,
                             int64_t* lwork) noexcept nogil

# F(w) = sum_i sigma_i l_[i](w) + mu/2 ||w||^2 from fresh margins; fills P.l_cur, P.dbar
# (and sorts with P.lperm, warm when warm != 0). O(nnz + n log n + d).
cdef double sorel_objective(const floating* data, const index_t* indices, const index_t* indptr,
                            SorelProblem* P, bint warm) noexcept nogil

# Run max_epochs epochs (fewer if the hook stops); returns res.status, or -1 on a parameter
# error (res.error).
cdef int sorel_run(const floating* data, const index_t* indices, const index_t* indptr,
                   SorelProblem* P, const SorelOptions* opt, SorelResult* res,
                   sorel_hook hook, void* ctx) noexcept nogil
