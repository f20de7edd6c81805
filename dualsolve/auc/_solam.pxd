# cython: language_level=3
"""C-level interface of SOLAM, the stochastic online AUC maximisation of Ying, Wen & Lyu
(2016), the "OAUC" baseline of Liu et al. (2020): projected primal-dual SGD on the saddle
function F of ``dualsolve.auc._ppd`` with steps zeta / sqrt(t), the running estimate of
p = Pr(y = +1), and the step-weighted average of the iterates as output. Problem::

    min_{||w|| <= R, |a|, |b| <= kappa R}  max_{|alpha| <= 2 kappa R}
        (1/n) sum_i F(w, a, b, alpha; z_i) + (lam/2) ||w||^2,     kappa = max_i ||x_i||,

i.e. min over ||w|| <= R of J(w) = p(1-p) (P_n(w) - 1) + (lam/2) ||w||^2 (p = n+/n).

Minimal use::

    from dualsolve.auc._solam cimport SolamOptions, SolamResult, solam_run, solam_default_options
    cdef SolamOptions opt = solam_default_options()
    opt.lam = lam; opt.R = R; opt.max_epochs = 20
    with nogil:                 # w: n_features doubles, the start (zeros) and the result
        solam_run(data, indices, indptr, n, d, y, w, &opt, &res, NULL, NULL)

An epoch is n steps. After each (and at the start) the average is evaluated exactly (J and
the certificate: min(||grad J||^2 / (2 lam), the Frank-Wolfe gap grad.w + R ||grad||),
both upper bounds on J(w) - min_{||u|| <= R} J(u)) and reported to the hook with the
values of ``_ppd.AUC_HOOK_VALUES``; the run stops with STATUS_CONVERGED when the
certificate B is <= tol (J + p(1-p) - B) (status.pxd's gap_certifies; or 64 ulps of p(1-p)),
STATUS_MAX_EPOCHS, STATUS_NO_MEMORY or the hook's status.
The hook is polled with epoch = -1 inside long epochs (Ctrl-C).
"""
from libc.stdint cimport int64_t, uint64_t
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.status cimport epoch_hook


ctypedef struct SolamOptions:
    double zeta               # step constant, gamma_t = zeta / sqrt(t); <= 0: the default
                              # (dualsolve.auc._ppd.auc_default_step, PPD-SG's eta0)
    double R                  # radius of the ball on w (INFINITY: none)
    double lam                # L2 strength (>= 0; zeta lam < 1)
    double tol                # stop by gap_certifies on J + p(1-p) (0: run the budget)
    Py_ssize_t max_epochs     # epochs of n steps
    uint64_t seed
    Py_ssize_t* trace         # optional: every drawn row, in order, up to trace_len (tests)
    Py_ssize_t trace_len
    int n_threads             # > 1 (OpenMP builds, X of 2^18+ nonzeros): each epoch's
                              # evaluation (dualsolve.auc._ppd.auc_evaluate_blocks) in that
                              # many blocks of rows (the same result for the same count);
                              # the steps stay serial


ctypedef struct SolamResult:
    int status
    Py_ssize_t n_epochs       # epochs begun
    int64_t n_steps
    double primal             # J at w
    double measure            # the certificate at w
    double threshold          # what the certificate had to reach (gap_target)
    double a, b, alpha        # the averaged saddle variables
    double p_hat              # the running estimate of p after the last step
    double zeta               # the step constant used (defaults resolved)
    double kappa              # max_i ||x_i||


cdef SolamOptions solam_default_options() noexcept nogil

cdef int solam_run(const floating* data, const index_t* indices, const index_t* indptr,
                   Py_ssize_t n, Py_ssize_t d, const double* y, double* w,
                   const SolamOptions* opt, SolamResult* res, epoch_hook hook,
                   void* ctx) noexcept nogil
