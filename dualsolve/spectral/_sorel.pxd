# cython: language_level=3
"""C-level interface of the SOREL loop (Ge & Jiang 2024, Algorithm 1 in the practical form
of their section 5 and appendix B; mini-batches as in their Figure 3), which is also the
LSVRG loop (``no_dual_prox``).

Problem, with row x_i of the CSR matrix X (float32/float64 data, int32/int64 indices, no
copy), a loss phi from ``dualsolve._core.losses`` and a spectrum sigma (ascending)::

    min_w  F(w) = sum_i sigma_i l_[i](w) + (lam/2) ||w||^2,    l_i(w) = phi(x_i.w; y_i)

Epoch k (0-based) from w_k, lambda_k and l(w_{k-1}):

    theta = k/(k+1);  eta_k = min(c_k (k+1)/n, dual_step_max);  tau_k = prox_scale n/(k+1)
    m = X w_k;  l_k = phi(m);  dbar = phi'(m)
    lambda_{k+1} = Proj_{Pi_sigma}(lambda_k + eta_k ((1+theta) l_k - theta l_{k-1}))
    gbar = X^T (lambda_{k+1} * dbar);  anchor w_k
    certificate G(w_k, lambda_{k+1}) (below); report epoch k through the hook; stop if
    converged
    T steps on batches S of b rows (b = 1: i uniform, T = n; otherwise T = floor(n/b)
    batches of a fresh permutation per epoch; SOREL_PERMUTATION forces the latter for b = 1):
        c_i = (n/b) lambda_i (phi'(x_i.w) - dbar_i)         (all at the same w)
        gradient form:  w <- w - step (sum_S c_i x_i + gbar + lam w + (w - w_k)/tau_k)
        prox form:      w <- (w - step (sum_S c_i x_i + gbar) + (step/tau_k) w_k)
                             / (1 + step lam + step/tau_k)
    w_{k+1} = the last iterate

with lambda_0 = sigma[rank(l(w_0))] (the vertex) or the given lambda projected onto
Pi_sigma (``dual_given``), and l(w_{-1}) = l(w_0). The gradient form needs
step (lam + 1/tau_k) < 1; an epoch where it fails (tau_k shrinks as k grows) takes the prox
step instead.

c_k = dual_step_scale / 2^(the number of times the dual-step guard has acted before epoch
k). The guard (``opt.guard``) watches the dual steps s_k = lambda_{k+1} - lambda_k: when
three successive pairs point in opposite directions (cos(s_j, s_{j-1}) < -1/2) without
shrinking (||s_k|| >= 0.9 ||s_{k-3}||), the scale is halved for the rest of the run (eta
halves at once, then grows at half the rate; again if it recurs). Without it the paper's
eta_k = c (k+1)/n grows without bound and long runs leave the optimum again.

``no_dual_prox`` (LSVRG, and the paper's appendix C ablation): lambda_{k+1} = sigma[rank(l_k)]
(eta = tau = infinity, theta = 0), no guard.

Certificate. For every lambda in Pi_sigma and every w (lam > 0, phi convex and
differentiable), by lam-strong convexity of L(., lambda) = lambda^T l(.) + (lam/2)||.||^2,

    F* = max_{lambda in Pi_sigma} min_w L(w, lambda) >= L(w, lambda) - ||grad_w L(w, lambda)||^2 / (2 lam)

so F(w) - F* <= G(w, lambda) = [R_sigma(l(w)) - lambda^T l(w)] + ||X^T(lambda * phi'(Xw)) + lam w||^2 / (2 lam),
two nonnegative terms (the first because the vertex maximises lambda^T l over Pi_sigma).
At w_k the engine takes lambda_{k+1} (LSVRG: the vertex at w_k), whose gradient term is
gbar + lam w_k: the certificate costs O(n + d) beyond the anchor's pass. At epoch 0 of a
warm start (``dual_given``) G(w_0, lambda_0) is computed too (one more pass) and the
smaller gap reported. The run converges
when G <= tol * (F - G) (status.pxd's gap_certifies; or 64 ulps of F(0) = R_sigma(phi(0;
y))); on return ``P.dual`` holds the lambda of
the last reported G (G(w, P.dual) = res.gap).

Hook (``dualsolve._core.status``): SOREL_HOOK_VALUES values per epoch k = 0, 1, ...:
primal F(w_k), dual F(w_k) - G, gap G, passes (per-row gradients / n: k (1 + T b/n)) and
eta_k (inf without the dual prox); NaN dual and gap for an epoch with a non-finite F (the
engine then stops with STATUS_DIVERGED). During the steps the hook is polled with
epoch = -1 every 4096 batches; a stop there restores w_k.

The dense parts of a step (lam, tau, gbar, w_k) are applied lazily (``dualsolve._core.lazy``
DriftJIT): a step costs O(nnz of the rows), an epoch O(nnz(X) + n log n + d).

Minimal use (tests/test_embed_spectral.py has a complete extension)::

    from dualsolve.spectral._sorel cimport (SorelProblem, SorelOptions, SorelResult,
        sorel_default_options, sorel_epoch_steps, sorel_work_sizes, sorel_problem_init,
        sorel_run)

    cdef SorelOptions opt = sorel_default_options()
    opt.step = 0.01; opt.dual_step_scale = 0.1; opt.max_epochs = 64; opt.tol = 1e-8
    T = sorel_epoch_steps(&opt, n)
    sorel_work_sizes(n, d, opt.batch_size, T, &nd, &ni, &nl)   # double / intp / int64
    sorel_problem_init(&P, n, d, opt.batch_size, T, y, loss, lam, sigma, w, dual, dwork,
                       iwork, lwork)
    with nogil:
        sorel_run(data, indices, indptr, &P, &opt, &res, NULL, NULL)
"""
from libc.stdint cimport int64_t
from dualsolve._core.blocks cimport Blocks
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.losses cimport Loss
from dualsolve._core.rng cimport rng_state
from dualsolve._core.status cimport epoch_hook

cdef enum:
    SOREL_GRADIENT = 0          # the paper's experiments: a gradient step on the subproblem
    SOREL_PROX = 1              # the proximal step of Algorithm 1, line 14 (ridge g)

cdef enum:
    SOREL_UNIFORM = 0           # b = 1: i uniform with replacement, n steps per epoch
    SOREL_PERMUTATION = 1       # floor(n/b) disjoint batches of a fresh permutation

#: values handed to the hook per epoch (primal, dual, gap, passes, eta)
cdef enum:
    SOREL_HOOK_VALUES = 5


ctypedef struct SorelOptions:
    double step                # primal step
    double dual_step_scale     # eta_k = dual_step_scale (k+1)/n (halved by the guard)
    double prox_scale          # tau_k = prox_scale n/(k+1)
    double dual_step_max       # cap on eta_k (<= 0: none)
    int form                   # SOREL_GRADIENT / SOREL_PROX
    int sampling               # SOREL_UNIFORM (b = 1 only) / SOREL_PERMUTATION
    Py_ssize_t batch_size      # b in [1, n]
    Py_ssize_t steps           # batches per epoch, T (<= 0: n for SOREL_UNIFORM, floor(n/b)
                               # otherwise; a longer epoch reshuffles when a pass is used up)
    Py_ssize_t max_epochs
    double tol                 # stop when G <= tol * (F - G) (tol = 0: run max_epochs)
    unsigned long long seed
    bint no_dual_prox          # LSVRG / the ablation: lambda_{k+1} = sigma[rank(l(w_k))]
    bint guard                 # the dual-step guard (ignored with no_dual_prox)
    int n_threads              # > 1 (OpenMP builds, X of 2^18+ nonzeros): each epoch's
                               # losses at w (rows apart: the same values) and its anchor
                               # X^T (...) (blocks of rows, _core/blocks.pxd: the same
                               # result for the same count) in that many threads; and a
                               # batch of 1,024+ nonzeros (b times the mean row) steps in
                               # them when a clock finds it faster (features by ranges,
                               # margins by rows: the serial step's bits either way)


ctypedef struct SorelResult:
    int status                 # a dualsolve._core.status code
    Py_ssize_t n_epochs
    double primal              # F(w) at the returned w
    double dual                # the certified lower bound F(w) - G
    double gap                 # G(w, P.dual)
    double f0                  # F(0), the scale of the rounding floor


ctypedef struct SorelProblem:
    Py_ssize_t n
    Py_ssize_t d
    const double* y
    Loss loss
    double lam                 # L2 strength, > 0 for the certificate
    const double* sigma        # n, ascending
    double* w                  # d: w_0 on entry, the last reported iterate on return
    double* dual               # n: lambda (lambda_0 on entry when dual_given); on return
                               # the lambda of the certificate
    bint dual_given
    # work, carved from the caller's buffers by sorel_problem_init
    double* l_cur              # n: l(w_k)
    double* l_prev             # n: l(w_{k-1})
    double* dbar               # n: phi'(x_i.w_k)
    double* z                  # n: lambda_k + eta v_k; the losses at 0
    double* pdw                # n: projection work
    double* s_prev             # n: the previous dual step (guard)
    double* dual_old           # n: lambda_k (the guard)
    double* gbar               # d: X^T (dual * dbar)
    double* wk                 # d: the anchor w_k
    double* cb                 # b: the batch's coefficients
    double* tab                # drift_table_size(T) doubles
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

# Carve the work buffers (sizes from sorel_work_sizes with the same n, d, b, T); the plain
# setting: lambda_0 is the vertex at w_0 (set P.dual_given = 1 after filling P.dual to
# start from a given lambda), no trace.
cdef void sorel_problem_init(SorelProblem* P, Py_ssize_t n, Py_ssize_t d, Py_ssize_t b,
                             Py_ssize_t T,
                             const double* y, Loss loss, double lam, const double* sigma,
                             double* w, double* dual, double* dwork, Py_ssize_t* iwork,
                             int64_t* lwork) noexcept nogil

# F(w) = sum_i sigma_i l_[i](w) + lam/2 ||w||^2 from fresh margins (compensated sums); fills
# P.l_cur, P.dbar (and sorts with P.lperm, warm when warm != 0). O(nnz + n log n + d).
cdef double sorel_objective(const floating* data, const index_t* indices, const index_t* indptr,
                            SorelProblem* P, bint warm) noexcept nogil

# sorel_objective with the rows' losses in ``threads`` threads (each row its own: the same
# values for any count).
cdef double sorel_objective_threads(const floating* data, const index_t* indices,
                                    const index_t* indptr, SorelProblem* P, bint warm,
                                    int threads) noexcept nogil

# P.gbar = X^T (P.dual * P.dbar). O(nnz + d).
cdef void sorel_anchor(const floating* data, const index_t* indices, const index_t* indptr,
                       SorelProblem* P) noexcept nogil

# sorel_anchor in the team's blocks of rows (_core/blocks.pxd, made for X's rows and
# width d): the same result for the same team size.
cdef void sorel_anchor_blocks(const floating* data, const index_t* indices,
                              const index_t* indptr, SorelProblem* P,
                              const Blocks* team) noexcept nogil

# The first term of the certificate, R_sigma(l) - P.dual^T l >= 0 (a lower bound on G), from
# P.l_cur and P.lperm. O(n).
cdef double sorel_risk_gap(SorelProblem* P) noexcept nogil

# The certificate G(w, P.dual) >= F(w) - F* given u = X^T (P.dual * phi'(Xw)), from P.l_cur
# and P.lperm (the sorted losses at w, as sorel_objective leaves them). O(n + d).
cdef double sorel_gap(SorelProblem* P, const double* u) noexcept nogil

# F(0) = R_sigma(phi(0; y)), the rounding floor's scale (uses P.z and P.lperm as work).
cdef double sorel_risk_at_zero(SorelProblem* P) noexcept nogil

# Run to G <= tol (F - G) or max_epochs (or what the hook returns); returns res.status.
cdef int sorel_run(const floating* data, const index_t* indices, const index_t* indptr,
                   SorelProblem* P, const SorelOptions* opt, SorelResult* res,
                   epoch_hook hook, void* ctx) noexcept nogil
