# cython: language_level=3
"""C-level interface of the spectral-risk baselines (spec seed4 section 2.6 (b)-(d), section 3).

All three minimise, with row x_i of the CSR matrix X (float32/float64 data, int32/int64
indices, no copy), a loss phi from ``dualsolve._core.losses`` and a spectrum sigma
(ascending, sum 1)::

    F(w) = sum_i sigma_i l_[i](w) + (mu/2) ||w||^2,     l_i(w) = phi(x_i.w; y_i)

with no smoothing of the spectral risk (nu = 0, as in the SOREL paper's experiments).

LSVRG (Mehta et al. 2023, spec 2.6 (c)) has no loop of its own here: with nu = 0 it is
exactly SOREL's ``no_dual_prox`` ablation (lambda jumps to the vertex sigma[rank(l(w_k))] at
each checkpoint, no proximal term), so ``dualsolve.spectral._sorel.sorel_run`` with
``opt.no_dual_prox = True`` is the LSVRG loop.

Prospect (Mehta et al. 2024, spec 2.6 (d)), nu = 0, step t (i uniform)::

    m = x_i.w;  g = phi'(m; y_i);  l = phi(m; y_i);  lam_i = sigma[pos(i)]
    w <- (w - alpha ((n lam_i g - n rho_i gtab_i) x_i + S)) / (1 + alpha mu)
    S += (lam_i g - rho_i gtab_i) x_i;  rho_i = lam_i;  gtab_i = g
    move i to its place in the sorted loss table (key (loss, index), ascending)

with S = sum_i rho_i gtab_i x_i kept exactly. lambda = sigma[pos] is never stored: the
sorted order is maintained by moving the one changed entry (galloping search + shift),
O(displacement) per step instead of a full re-sort. The dense part (the ridge prox and
the -alpha S drift) is applied lazily (DriftJIT with a = 1/(1 + alpha mu), b_j = -a alpha
S_j; S_j only changes on touched coordinates right after they are stepped). A step costs
O(nnz(x_i) + displacement); an epoch is n steps.

Mini-batch stochastic subgradient "SGD" (spec 2.6 (b)), each epoch a fresh permutation cut
into floor(n/b) batches B of b rows::

    m_B = X_B w;  lam_B = sigma_b[rank(phi(m_B))]   (sigma_b: the b-point spectrum)
    w <- (1 - alpha mu) w - alpha X_B^T (lam_B * phi'(m_B))

with w = scale * v (``ScaledVec``): O(nnz(X_B) + b log b) per step.
"""
from libc.stdint cimport int64_t
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.losses cimport Loss
from dualsolve._core.rng cimport rng_state


# ---------------------------------------------------------------------------------------
# Prospect


ctypedef struct ProspectProblem:
    Py_ssize_t n
    Py_ssize_t d
    const double* y
    Loss loss
    double mu
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
    double alpha               # set by prospect_set_step
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
                                const double* y, Loss loss, double mu, const double* sigma,
                                double* w, double* dwork, Py_ssize_t* iwork,
                                int64_t* lwork) noexcept nogil

# Build the tables at the current w (one pass: O(nnz + n log n + d)), seed the generator and
# set the step size alpha (> 0). Must precede prospect_epoch.
cdef void prospect_start(const floating* data, const index_t* indices, const index_t* indptr,
                         ProspectProblem* P, double alpha, unsigned long long seed) noexcept nogil

# T (1 <= T <= n) Prospect steps; every coordinate of w is current on return.
cdef void prospect_epoch(const floating* data, const index_t* indices, const index_t* indptr,
                         ProspectProblem* P, Py_ssize_t T) noexcept nogil

# Replace the loss of sample i in the sorted table by v (key (v, i)); O(displacement).
cdef void prospect_reposition(ProspectProblem* P, Py_ssize_t i, double v) noexcept nogil

# lam[i] = sigma[pos[i]] (the current vertex of the permutahedron).
cdef void prospect_lambda(const ProspectProblem* P, double* lam) noexcept nogil


# ---------------------------------------------------------------------------------------
# mini-batch stochastic subgradient


ctypedef struct SgdProblem:
    Py_ssize_t n
    Py_ssize_t d
    Py_ssize_t b               # batch size, 1 <= b <= n
    const double* y
    Loss loss
    double mu
    const double* sigma_b      # b, ascending: the spectrum over one batch
    double* w                  # d
    Py_ssize_t* order          # n: the sampling permutation
    double* mb                 # b: margins of the batch
    double* lb                 # b: losses of the batch
    double* cb                 # b: lam * phi'
    Py_ssize_t* bperm          # b: ascending order of the batch losses
    Py_ssize_t* biw            # b: sort work
    Py_ssize_t* trace          # optional: the sampled rows in order (tests)
    Py_ssize_t trace_len
    Py_ssize_t trace_pos
    rng_state rng


cdef void sgd_work_sizes(Py_ssize_t n, Py_ssize_t b, Py_ssize_t* n_double,
                         Py_ssize_t* n_intp) noexcept nogil

cdef void sgd_problem_init(SgdProblem* P, Py_ssize_t n, Py_ssize_t d, Py_ssize_t b,
                           const double* y, Loss loss, double mu, const double* sigma_b,
                           double* w, double* dwork, Py_ssize_t* iwork,
                           unsigned long long seed) noexcept nogil

# One epoch: a fresh permutation, then T <= floor(n/b) steps of step size alpha
# (alpha mu < 1) on its consecutive batches. w is plain (scale folded in) on return.
cdef void sgd_epoch(const floating* data, const index_t* indices, const index_t* indptr,
                    SgdProblem* P, double alpha, Py_ssize_t T) noexcept nogil
