# cython: language_level=3
"""C-level interface of the stochastic AUC loops (spec seed2): one stage of PPD-SG
(Algorithm 2, inner loop), of PPD-AdaGrad (Algorithm 3, composite form of spec 3.5) and of
the PGA baseline (Algorithm 1, projected; spec 2.1, 3.4), the alpha reset at a stage end,
and the per-sample gradients of the saddle function F.

Problem, with rows x_i of the CSR matrix X (float32/float64 data, int32/int64 indices, no
copy), labels y_i in {-1, +1}, h = x.w and p = Pr(y = +1)::

    min_{w, a, b} max_alpha  (1/n) sum_i F(w, a, b, alpha; z_i) + (lam/2) ||w||^2
    F = (1-p) (h - a)^2 I[y=+1] + p (h - b)^2 I[y=-1]
        + 2 (1 + alpha) (p h I[y=-1] - (1-p) h I[y=+1]) - p (1-p) alpha^2

A stage keeps the reference point v0 = (w0, a0, b0) fixed and adds the proximal term
(1/(2 gamma)) ||v - v0||^2 (inv_gamma = 1/gamma, 0 for gamma = inf). Every step costs
O(nnz of the sampled rows); the dense parts (pull toward w0, L2, the stage average) are
caught up per feature (``dualsolve._core.lazy``). Minimal use::

    auc_problem_init(&P, n, d, y, lam, inv_gamma, batch_size, w, w0, wsum, last, gsum, batch, coef)
    P.tab = table; P.tab_size = T_cap            # PPD-SG (drift_table_size(T_cap) doubles)
    P.delta = delta                                # PPD-AdaGrad (its records are its own)
    P.pstamp = st; P.pstamp_lo = st_lo; P.R1 = R1; P.R2 = R2   # PGA
    rng_seed(&P.rng, seed)
    for each stage k:                              # w0, a0, b0, alpha hold the stage start
        ppd_sg_stage(data, indices, indptr, &P, T_k, eta_k, NULL, NULL)
        auc_alpha_reset(data, indices, indptr, &P, m_k)   # m_k = 0: over all n rows
    # PGA instead: pga_stage(data, indices, indptr, &P, T_k, eta_k, NULL, NULL), no reset
    # w0, a0, b0 = (wbar_K, abar_K, bbar_K); alpha = alphabar_K
"""
from libc.stdint cimport int64_t
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.rng cimport rng_state

cdef enum:
    AUC_P_FIXED = 0       # p given (or n+/n): the gradients use P.p, P.pq
    AUC_P_ONLINE = 1      # Algorithm 4: estimates from the samples seen before the step

cdef enum:
    AUC_OK = 0
    AUC_STOPPED = 1       # the poll asked to stop mid-stage (Ctrl-C)
    AUC_NO_BUFFER = -1


# Called every AUC_POLL_STEPS steps inside a stage; nonzero stops the stage.
ctypedef int (*auc_poll)(void* ctx) noexcept nogil


ctypedef struct AucProblem:
    Py_ssize_t n
    Py_ssize_t d
    const double* y            # n, +-1
    double lam                 # L2 on w only
    double inv_gamma           # 1/gamma of the proximal term (0: gamma = inf)
    Py_ssize_t batch_size
    int p_mode
    double p                   # p, or its current estimate (AUC_P_ONLINE)
    double pq                  # p(1-p), or its current estimate
    double n_pos_seen          # online estimators (spec 2.4): T+, T-, ybar
    double n_neg_seen
    double ybar
    int64_t n_seen             # gradient samples seen (the index j of Algorithm 4)
    int64_t n_samples          # every sample drawn (gradient steps and alpha resets)
    double* w                  # d: PPD-SG iterate (work)
    double* w0                 # d: reference point; the stage average after a stage
    double* wsum               # d: running sum of the stage's iterates (work)
    int64_t* last              # d: per-feature timestamps (work)
    double* gsum               # d: mini-batch gradient scratch, zero between steps
    Py_ssize_t* batch          # batch_size (work)
    double* coef               # batch_size (work)
    double* tab                # PPD-SG: drift tables, drift_table_size(tab_size) doubles
    int64_t tab_size           # flush every this many steps (>= 1)
    double delta               # PPD-AdaGrad offset of H (> 0)
    double* pstamp             # d: PGA prefix-sum stamps, high part (work)
    double* pstamp_lo          # d: PGA prefix-sum stamps, low part (work)
    double R1                  # PGA radius of the ball on v = (w, a, b) (inf: none)
    double R2                  # PGA bound on |alpha| (inf: none)
    double a
    double b
    double alpha
    double a0
    double b0
    bint scaled_sg             # PPD-SG: the scaled-iterate form where it pays (default True;
                               # False: the DriftJIT form always, for tests)
    Py_ssize_t* trace          # optional: every drawn row in order (tests)
    Py_ssize_t trace_len
    Py_ssize_t trace_pos
    rng_state rng


cdef inline void auc_grads(double h, double y, double a, double b, double alpha, double p,
                           double pq, double* c, double* ga, double* gb,
                           double* gal) noexcept nogil:
    """Per-sample partial derivatives of F (spec 2.0) at score h: c = dF/dh (so
    grad_w F = c x for a linear model), dF/da, dF/db, dF/dalpha; pq = p(1-p)."""
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


cdef void auc_problem_init(AucProblem* P, Py_ssize_t n, Py_ssize_t d, const double* y,
                           double lam, double inv_gamma, Py_ssize_t batch_size, double* w,
                           double* w0, double* wsum, int64_t* last, double* gsum,
                           Py_ssize_t* batch, double* coef) noexcept nogil

# One stage of PPD-SG: T - 1 steps from (w0, a0, b0, alpha) with step eta, prox center
# (w0, a0, b0); on return w0, a0, b0 (and w, a, b) hold the average of the T iterates
# 0..T-1. Needs eta (lam + inv_gamma) < 1. Returns AUC_OK / AUC_STOPPED / AUC_NO_BUFFER.
cdef int ppd_sg_stage(const floating* data, const index_t* indices, const index_t* indptr,
                      AucProblem* P, int64_t T, double eta, auc_poll poll,
                      void* ctx) noexcept nogil

# One stage of PPD-AdaGrad (composite dual averaging centred at the stage start; G, S2
# reset): the same contract as ppd_sg_stage.
cdef int ppd_adagrad_stage(const floating* data, const index_t* indices,
                           const index_t* indptr, AucProblem* P, int64_t T, double eta,
                           auc_poll poll, void* ctx) noexcept nogil

# One stage of PGA (Algorithm 1): T steps from (w0, a0, b0, alpha) with step eta, prox
# center (w0, a0, b0), projections onto ||(w, a, b)|| <= R1 and |alpha| <= R2; on return
# w0, a0, b0 and alpha hold the averages of the iterates 1..T (the start excluded). Needs
# eta (lam + inv_gamma) < 1 and pstamp, pstamp_lo. Returns as ppd_sg_stage.
cdef int pga_stage(const floating* data, const index_t* indices, const index_t* indptr,
                   AucProblem* P, int64_t T, double eta, auc_poll poll,
                   void* ctx) noexcept nogil

# alpha <- mean_-(X w0) - mean_+(X w0) over all rows (m = 0) or over m fresh samples (more
# are drawn until both classes are present).
cdef void auc_alpha_reset(const floating* data, const index_t* indices,
                          const index_t* indptr, AucProblem* P, int64_t m) noexcept nogil
