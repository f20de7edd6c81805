# cython: language_level=3
"""C-level interface of the stochastic AUC engine (Liu, Yuan, Ying & Yang 2020): PPD-SG
(their Algorithm 2), PPD-AdaGrad (Algorithm 3 inside Algorithm 2's stages) and the PGA
baseline (Algorithm 1, after Rafique et al. 2018), for a linear model, and the exact
objective with its certificate.

Problem, with rows x_i of the CSR matrix X (float32/float64 data, int32/int64 indices, no
copy), labels y_i in {-1, +1}, scores h = x.w and p = Pr(y = +1)::

    min_{w, a, b} max_alpha  (1/n) sum_i F(w, a, b, alpha; z_i) + (lam/2) ||w||^2
    F = (1-p) (h - a)^2 I[y=+1] + p (h - b)^2 I[y=-1]
        + 2 (1 + alpha) (p h I[y=-1] - (1-p) h I[y=+1]) - p (1-p) alpha^2

which, with p = n+/n and a, b, alpha eliminated, is the square-loss AUC surrogate
``J(w) = p(1-p) (P_n(w) - 1) + (lam/2) ||w||^2``, P_n the mean of (1 - h_i + h_j)^2 over
the positive/negative pairs (see docs/auc.md).

Minimal use (tests/test_embed_auc.py is a complete extension)::

    from dualsolve.auc._ppd cimport (PpdOptions, PpdResult, ppd_run, ppd_default_options,
                                     PPD_SG)
    cdef PpdOptions opt = ppd_default_options()
    opt.method = PPD_SG; opt.eta0 = 0.05; opt.lam = lam; opt.tol = 1e-3; opt.max_epochs = 50
    cdef PpdResult res
    with nogil:                 # w: n_features doubles, the start (zeros) and the result
        ppd_run(data, indices, indptr, n, d, y, w, &opt, &res, NULL, NULL)

The run is a sequence of stages (their lengths grow, their steps shrink: PpdOptions);
each stage ends with its average iterate, the exact objective J at it and the
certificate ``measure`` (an upper bound on J(w) - min J, see AucEval). It stops with
STATUS_CONVERGED when ``measure <= tol (J + p(1-p) - measure)`` (status.pxd's gap_certifies
on the risk J + p(1-p) >= 0; or 64 ulps of p(1-p); tol = 0 never converges: it runs the
budget), STATUS_MAX_EPOCHS when max_epochs epochs of ``ceil(n / batch_size)`` steps are
done (the last stage runs to the end of the budget: it takes what is left when a full next
stage would not fit in after it), STATUS_NO_MEMORY, or the status the
hook returned (``dualsolve._core.status``). The hook gets AUC_HOOK_VALUES values after
every epoch (epoch 0: the start): J, dual (NaN), gap (the certificate), P_n and NaN (a
slot for the caller's validation AUC); J, gap and P_n are those of the last stage that
ended in the epoch (NaN when none did; +inf when the iterate stopped being finite), and
``w`` then holds that stage's average (the callback's model). Inside long epochs it is
polled with epoch = -1 (Ctrl-C). A run stopped by the hook returns the last stage's
average; a stage end that converges (or turns non-finite) mid-epoch is reported at once,
as epoch ceil(steps / epoch length).
"""
from libc.stdint cimport int64_t, uint64_t
from dualsolve._core.blocks cimport Blocks
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.status cimport epoch_hook

cdef enum:
    PPD_SG = 0            # PPD-SG: plain stochastic steps (Algorithm 2)
    PPD_ADAGRAD = 1       # PPD-AdaGrad: AdaGrad steps within each stage (Algorithm 3)
    PPD_PGA = 2           # PGA: polynomial schedule, projections, alpha averaged (Algorithm 1)
    AUC_SOLAM = 3         # (auc_default_step only: SOLAM's engine is dualsolve.auc._solam)

cdef enum:
    AUC_P_FIXED = 0       # the gradients use PpdOptions.p (n+/n by default)
    AUC_P_ONLINE = 1      # Algorithm 4: estimates from the samples seen before each step

#: values handed to the hook per epoch (primal J, dual, gap, pairwise P_n, val_auc slot)
cdef enum:
    AUC_HOOK_VALUES = 5


ctypedef struct PpdOptions:
    int method                # PPD_SG, PPD_ADAGRAD or PPD_PGA
    double lam                # L2 strength on w (>= 0; a, b not regularised)
    double eta0               # step of stage 1; <= 0: the default (auc_default_step)
    double T0                 # stage 1: T0 iterates (PPD: T0 - 1 steps, T0 >= 2), or
                              # T0 steps (PGA); <= 0: one epoch of steps
    double decay              # PPD stage k: step eta0 / decay^(k-1) and
    double growth             #   round((T0 - 1) growth^(k-1)) steps; PGA: eta0 / k, T0 k^2
    double inv_gamma          # 1/gamma of the proximal term (1/(2 gamma)) ||v - v0||^2; 0: none
    double delta              # PPD-AdaGrad: offset of H = delta I + diag(s) (> 0)
    double R1                 # PGA: radius of the ball on v = (w, a, b) (INFINITY: none)
    double R2                 # PGA: bound on |alpha| (INFINITY: none)
    Py_ssize_t batch_size     # samples per step (uniform, with replacement)
    int p_mode                # AUC_P_FIXED or AUC_P_ONLINE
    double p                  # AUC_P_FIXED: p in (0, 1); NaN: n+/n
    double alpha_batch        # PPD: 0 resets alpha over all rows; m > 0 over
                              # round(m growth^(k-1)) fresh samples (Algorithm 2)
    double tol                # stop by gap_certifies on J + p(1-p) (0: run the budget)
    Py_ssize_t max_epochs     # budget: epochs of ceil(n / batch_size) steps
    int64_t max_steps         # > 0: a budget in steps instead (tests)
    uint64_t seed
    bint scaled_sg            # PPD-SG: the scaled-iterate form where it pays (default 1;
                              # 0: the DriftJIT form always, for tests)
    Py_ssize_t* trace         # optional: every drawn row, in order, up to trace_len (tests)
    Py_ssize_t trace_len
    int n_threads             # > 1 (OpenMP builds, X of 2^18+ nonzeros): each evaluation's
                              # pass over X (auc_evaluate_blocks) in that many blocks of rows
                              # (_core/blocks.pxd: the same result for the same count); the
                              # steps stay serial


ctypedef struct PpdResult:
    int status                # a dualsolve._core.status code
    Py_ssize_t n_epochs       # epochs begun (the last may be partial when it converged)
    Py_ssize_t n_stages       # stages completed (the last may have been cut short)
    int64_t n_steps           # gradient steps
    int64_t n_samples         # every sample drawn (steps and minibatch alpha resets)
    int64_t last_stage_steps  # steps of the last stage completed
    double primal             # J at w
    double measure            # the certificate at w (+inf: none, e.g. lam = 0)
    double threshold          # what the certificate had to reach (gap_target)
    double a, b, alpha        # the saddle variables returned with w
    double p, pq              # the p and p(1-p) of the last step (online: the estimates)
    double eta0, T0           # the step and stage length of stage 1 used (defaults resolved)


ctypedef struct AucEval:
    double J                  # p(1-p) (P_n - 1) + (lam/2) ||w||^2, p = n+/n (+inf if not finite)
    double pairwise           # P_n
    double mean_pos           # class means of the scores (a*, b* of the saddle point)
    double mean_neg
    double gnorm2             # ||grad||^2 of the certified function (below)
    double gdotv              # grad . v
    double vnorm2             # ||v||^2
    double measure            # the certificate: an upper bound on f(v) - min f (+inf: none)


cdef PpdOptions ppd_default_options() noexcept nogil

# The default step for these rows, from the per-sample curvatures of F, L_i = 2 c_i
# (||x_i||^2 + 1), c_i = 1 - p for a positive row and p for a negative one (p = n+/n):
# 1/max_i L_i (PPD_SG, PPD_PGA), 4/sqrt(max_i L_i) (PPD_ADAGRAD), 16 / the class-balanced
# mean 2 ((1-p) mean_+ (||x||^2 + 1) + p mean_- (||x||^2 + 1)) (AUC_SOLAM: zeta).
cdef double auc_default_step(const floating* data, const index_t* indptr, Py_ssize_t n,
                             const double* y, int method) noexcept nogil

cdef int ppd_run(const floating* data, const index_t* indices, const index_t* indptr,
                 Py_ssize_t n, Py_ssize_t d, const double* y, double* w,
                 const PpdOptions* opt, PpdResult* res, epoch_hook hook,
                 void* ctx) noexcept nogil

# The exact objective at w and a certificate, O(nnz(X) + n + n_features), compensated sums.
# h (n) and g (n_features) are work (on return: the scores X w and the gradient). With
# saddle = 1 the certified function is J itself, v = w: measure = ||grad J||^2 / (2 lam)
# (lam-strong convexity; +inf for lam = 0), and also, when R is finite, the Frank-Wolfe gap
# grad.w + R ||grad|| over the ball ||w|| <= R (the smaller of the two). With saddle = 0
# (PGA with its balls) it is phi(v) = max_{|alpha| <= R2} f(v, alpha), v = (w, a, b), over
# the ball ||v|| <= R: measure = the Frank-Wolfe gap (+inf for R = INFINITY).
cdef int auc_evaluate(const floating* data, const index_t* indices, const index_t* indptr,
                      Py_ssize_t n, Py_ssize_t d, const double* y, const double* w,
                      double lam, bint saddle, double a, double b, double R, double R2,
                      double* h, double* g, AucEval* ev) noexcept nogil

# auc_evaluate with the scores in team.size threads (each row its own: the same values) and
# the gradient's pass in the team's blocks of rows (made for X's rows and width
# n_features); the same result for the same team size, auc_evaluate's for one block or
# team = NULL.
cdef int auc_evaluate_blocks(const floating* data, const index_t* indices,
                             const index_t* indptr, Py_ssize_t n, Py_ssize_t d,
                             const double* y, const double* w, double lam, bint saddle,
                             double a, double b, double R, double R2, double* h, double* g,
                             AucEval* ev, const Blocks* team) noexcept nogil


cdef inline void auc_grads(double h, double y, double a, double b, double alpha, double p,
                           double pq, double* c, double* ga, double* gb,
                           double* gal) noexcept nogil:
    """Per-sample partial derivatives of F at score h (Liu et al. 2020, Proposition 1):
    c = dF/dh (so grad_w F = c x for a linear model), dF/da, dF/db, dF/dalpha; pq = p(1-p)."""
    if y > 0:
        c[0] = 2.0 * (1.0 - p) * (h - a - 1.0 - alpha)
        ga[0] = -2.0 * (1.0 - p) * (h - a)
        gb[0] = 0.0
        gal[0] = -2.0 * (1.0 - p) * h - 2.0 * pq * alpha
    else:
        c[0] = 2.0 * p * (h - b + 1.0 + alpha)
        ga[0] = 0.0
        gb[0] = -2.0 * p * (h - b)
        gal[0] = 2.0 * p * h - 2.0 * pq * alpha
