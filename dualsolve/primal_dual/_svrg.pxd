# cython: language_level=3
"""C-level interface of the primal baselines of the primal-dual family: proximal SVRG (Xiao
& Zhang 2014) and Katyusha (Allen-Zhu 2017, strongly convex version), for ``cimport`` from
other extensions.

Problem (no copy of X; CSR arrays as raw pointers, float32/float64 data, int32/int64
indices; ``a_i`` is row i, ``b_i`` its label or target)::

    min_x  P(x) = (1/n) sum_i c_i phi(a_i.x; b_i) + (lam/2) ||x||^2 + l1 ||x||_1

(``c_i = 1`` unless ``P.weight`` holds row weights c_i >= 0) with ``phi`` from
``dualsolve._core.losses``. An epoch is one snapshot (its scores, P, the
per-row derivatives ``phi'(a_i.xs)`` and the full gradient ``mu`` of the loss part, one
pass over X) and ``steps_per_epoch`` variance-reduced stochastic steps on rows drawn
uniformly with replacement, each O(nnz of the row).

Certificate: at every snapshot, the dual point ``y_i = c_i phi'(a_i.xs; b_i)`` (the loss
derivatives the snapshot needs anyway) gives the Fenchel dual of the regularised problem

    D(y) = -(1/n) sum_i c_i phi*(y_i / c_i; b_i) - g*(-A^T y / n),   A^T y / n = mu,
    g*(w) = ||S(w, l1)||^2 / (2 lam)                        (S: soft threshold)

and the duality gap ``P(xs) - D(y) >= P(xs) - P*`` costs O(d) on top of the snapshot:
every row is at Fenchel-Young equality (``c_i phi(s_i) + c_i phi*(y_i / c_i) = s_i y_i``;
a row of weight 0 has y_i = 0 and no term), so the gap is
``g(xs) + g*(-mu) + mu.xs``, a sum of non-negative terms over the features
(``||grad P(xs)||^2 / (2 lam)`` when l1 = 0).
With lam = 0 and l1 > 0 (g* the indicator of ||w||_inf <= l1) the dual is first scaled
into the domain, ``s y`` with ``s = min(1, l1 / ||mu||_inf)``; with lam = l1 = 0 there is
no dual (the gap is +inf) and the measure is ``||mu||^2`` against its value at x = 0.

Minimal use (tests/test_embed_primal_dual.py builds a complete extension)::

    from dualsolve.primal_dual._svrg cimport (SvrgProblem, SvrgOptions, SvrgResult,
        SVRG_METHOD_SVRG, svrg_default_options, svrg_problem_init, svrg_run)

    svrg_problem_init(&P, n, d, b, loss, lam, l1, SVRG_METHOD_SVRG, step, 2 * n, 0.0, 0, x)
    cdef SvrgOptions opt = svrg_default_options()
    with nogil:
        svrg_run(data, indices, indptr, &P, &opt, &res, NULL, NULL)

The status (``res.status``) and the hook are the package's one pair
(``dualsolve._core.status``): STATUS_CONVERGED when a gap measure certifies at a
snapshot (status.pxd's gap_certifies: <= tol * (P - measure), or 64 ulps of P(0)), or the
gradient measure is <= tol * ||mu(0)||^2 (tol = 0 never converges),
STATUS_MAX_EPOCHS, STATUS_DIVERGED when P(xs) is not finite, STATUS_NO_MEMORY when a work
buffer could not be allocated (nothing else is set then), or what the hook returned. The
hook gets SVRG_HOOK_VALUES values per epoch: primal, dual, gap, measure and passes (the
component-gradient evaluations so far over n); within an epoch it is polled with epoch =
-1 about every SVRG_POLL_WORK nonzeros (Ctrl-C). ``x`` receives the last snapshot (for a
diverged run, the non-finite one).
"""
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.losses cimport Loss
from dualsolve._core.status cimport epoch_hook

cdef enum:
    SVRG_METHOD_SVRG = 0          # Prox-SVRG; snapshot = the last iterate
    SVRG_METHOD_KATYUSHA = 1      # Katyusha; snapshot = the weighted average of the y's

#: values handed to the hook per epoch (primal, dual, gap, measure, passes)
cdef enum:
    SVRG_HOOK_VALUES = 5

#: nonzeros of X visited between two polls of the hook (epoch = -1) within an epoch
cdef enum:
    SVRG_POLL_WORK = 1 << 22

cdef enum:
    SVRG_MEASURE_GAP = 0          # P - D(y)                           (lam > 0)
    SVRG_MEASURE_RESCALED_GAP = 1 # P - D(s y), s = min(1, l1/||mu||_inf)  (lam = 0, l1 > 0)
    SVRG_MEASURE_GRAD = 2         # ||mu||^2                           (lam = l1 = 0)


ctypedef struct SvrgProblem:
    Py_ssize_t n
    Py_ssize_t d
    const double* b           # labels (+-1) or regression targets
    Loss loss
    double lam                # L2 strength (>= 0)
    double l1                 # L1 strength (>= 0)
    int method                # SVRG_METHOD_SVRG or SVRG_METHOD_KATYUSHA
    double step               # SVRG: eta. Katyusha: 1/(3L) (its y step; alpha = step/tau1)
    Py_ssize_t m              # steps per epoch (>= 1; not checked, like the next two)
    double tau1               # Katyusha: momentum weight in (0, 1/2] (tau2 = 1/2)
    int option                # Katyusha: 1 or 2, the paper's y update I or II
    double* x                 # d: in the start, out the last snapshot
    double* trace             # NULL, or receives the iterate after every step (tests: d
                              # doubles per step for SVRG (x), 2d for Katyusha (z then y))
    const double* weight      # NULL (every c_i = 1), or n row weights c_i >= 0: the loss
                              # part is (1/n) sum_i c_i phi(a_i.x; b_i) (set after init)


ctypedef struct SvrgOptions:
    double tol                # the stopping tolerance (svrg_run's docstring)
    Py_ssize_t max_epochs
    unsigned long long seed
    Py_ssize_t table_max      # flush at least every this many steps (catch-up table size)
    int n_threads             # > 1 (OpenMP builds, X of 2^18+ nonzeros): each snapshot's
                              # pass over X in that many blocks of rows (_core/blocks.pxd),
                              # the same result for the same count; the steps stay serial


ctypedef struct SvrgResult:
    int status
    Py_ssize_t n_epochs
    double primal             # at the last snapshot
    double dual
    double gap
    double measure
    int measure_kind          # SVRG_MEASURE_*
    double p0                 # P(0): the rounding floor's scale of the gap measures
    double scale              # the scale the measure was compared with
    double passes


cdef SvrgOptions svrg_default_options() noexcept nogil

cdef void svrg_problem_init(SvrgProblem* P, Py_ssize_t n, Py_ssize_t d, const double* b,
                            Loss loss, double lam, double l1, int method, double step,
                            Py_ssize_t m, double tau1, int option, double* x) noexcept nogil

cdef int svrg_run(const floating* data, const index_t* indices, const index_t* indptr,
                  SvrgProblem* P, const SvrgOptions* opt, SvrgResult* res,
                  epoch_hook hook, void* ctx) noexcept nogil
