# cython: language_level=3
"""C-level interface of the linear SDCA engine, for ``cimport`` from other extensions.

Problem (no copy of X; CSR arrays as raw pointers, float32/float64 data, int32/int64 indices)::

    min_w  P(w) = (1/n) sum_i phi(x_i.w + bias * w[d]; y_i) + (lam/2) ||w||^2
    max_a  D(a) = -(lam/2) ||w(a)||^2 - (1/n) sum_i h(a_i; y_i),   w(a) = X^T a / (lam n)

with ``phi``/``h`` from ``dualsolve._core.losses``. ``w`` has ``d + 1`` entries when
``bias != 0`` (the last one multiplies the constant feature ``bias``), else ``d``.

Minimal use (see tests/test_embed.py for a complete extension)::

    from dualsolve._core.losses cimport Loss, LOSS_LOGISTIC
    from dualsolve.sdca._sdca cimport (SdcaProblem, SdcaOptions, SdcaResult, sdca_run,
                                       sdca_default_options, sdca_problem_init)

    cdef SdcaProblem P
    sdca_problem_init(&P, n, d, y, loss, lam, 0.0, w, alpha, sqnorm_buf, z_buf, index_buf)
    cdef SdcaOptions opt = sdca_default_options()
    cdef SdcaResult res
    with nogil:
        sdca_run(data, indices, indptr, &P, &opt, &res, NULL, NULL)

The status (``res.status``) and the hook are the package's one pair
(``dualsolve._core.status``): STATUS_CONVERGED when gap_certifies (gap <= tol * D, or 64
ulps of P(0)), with
w recomputed from alpha (tol = 0 never converges: it runs the budget), STATUS_MAX_EPOCHS,
or what the hook returned. The hook gets 5 values per epoch: primal, dual, gap (NaN for an
epoch without an exact check), gap_estimate (the gap seen during the pass; NaN at epoch 0
and when every epoch is checked) and n_active (rows not shrunk).

An epoch (``max_epochs``, the hook's reports, the checks' schedule) is one pass over the
active rows, or, once shrinking has left less than half a whole pass's work (``nnz + 16`` a
row, summed over the rows), as many passes as add up to a whole pass's, unless the pass
estimate already reaches the target (or ``check_every = 1``; schedule.pxd's
``schedule_pass_again``). Shrinking (``shrinking``, bounded losses with
labels +-1) takes weighted rows too, at their bounds ``c_i [lo, hi]``; rows of weight 0
leave the passes at once.
"""
from libc.stdint cimport uint64_t
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.losses cimport Loss
from dualsolve._core.rng cimport rng_state
from dualsolve._core.status cimport epoch_hook
from dualsolve.sdca.steps cimport StepParams

cdef enum:
    SAMPLE_PERMUTATION = 0    # a fresh random permutation of the active set every epoch
    SAMPLE_UNIFORM = 1        # n_active draws with replacement (the setting of SDCA theory)

#: values handed to the hook per epoch (primal, dual, gap, gap_estimate, n_active)
cdef enum:
    SDCA_HOOK_VALUES = 5


ctypedef struct SdcaProblem:
    Py_ssize_t n              # coordinates (dual variables); the 1/n of the objective
    Py_ssize_t n_points       # points (n when point == NULL)
    Py_ssize_t n_rows         # CSR rows; points n_rows.. are mixes (n_points when no mixing)
    const Py_ssize_t* point   # coordinate -> point, or NULL for the identity
    const double* weight      # loss weight of each coordinate, or NULL for all ones
    const Py_ssize_t* mix_a   # mixed point n_rows + k = (1 - mix_r[k]) x_{mix_a[k]}
    const Py_ssize_t* mix_b   #   + mix_r[k] x_{mix_b[k]}; NULL when there are none
    const double* mix_r
    Py_ssize_t d              # features of X (w has d + (bias != 0) entries)
    const double* y           # labels per coordinate: [-1, 1], or reals for the squared loss
    Loss loss
    StepParams step           # the coordinate step rule (STEP_EXACT for train_sdca)
    double lam                # > 0
    double bias               # value of the implicit constant feature; 0 for none
    double offset             # added to every score: a fixed, unregularised intercept b
                              # (the dual then carries h(a) + a b); 0 for none
    double* w                 # out: primal iterate, kept equal to X^T alpha / (lam n)
    double* alpha             # in/out: dual iterate (a warm start when nonzero)
    double* sqnorm            # n_points: ||x_p||^2 (+ bias^2 added by sdca_run); work if not
    int sqnorm_given          # given. 1: sqnorm already holds ||x_p||^2 (required with mixing)
    int rows_sorted           # 1: every row's indices strictly increase (the caller checked,
                              # as dualsolve's validation does); 0: sdca_run checks when the
                              # threaded pass needs to know
    double* z                 # work, n: scores of the coordinates at the last gap check
    Py_ssize_t* index         # work, n: active coordinates in [0, n_active), shrunk after
    Py_ssize_t n_active
    double pg_max_old         # shrinking thresholds of the previous epoch (liblinear's)
    double pg_min_old
    double pass_gap           # sum over the rows visited in the last pass of their
                              # Fenchel-Young gap F_i = phi(z_i) + h(a_i) + a_i z_i, before the step
    double shrunk_gap         # sum of F_j over shrunk rows (scores of the last check)
    double pass_cost          # work of the last pass: sum over visited rows of nnz + 16
    double drift              # bound on ||w - X^T alpha / (lam n)||_2, the rounding of the
                              # incremental updates since w was last computed from alpha
                              # (INFINITY: not tracked, as for mixed points)
    double w_norm             # ||w||_2 at the last check (a bound: rounded up)
    rng_state rng
    double* gain              # work, sdca_run's own (NULL outside it): each coordinate's dual
                              # gain at its last step (_sdca.pyx, "focused passes")
    double pass_gain          # the gains of the last pass over the active set, summed


ctypedef struct SdcaOptions:
    double tol                # stop when gap <= tol * D (status.pxd's gap_certifies)
    Py_ssize_t max_epochs
    Py_ssize_t check_every    # k >= 1: exact gap every k epochs; 0 (auto): when the gap seen
                              # during the pass predicts tol, or when the passes since the
                              # last check did 8 times the work of a check
    int shrinking             # 1: drop rows stuck at a bound (bounded losses, labels +-1)
    int sampling              # SAMPLE_PERMUTATION or SAMPLE_UNIFORM
    uint64_t seed
    int check_start           # 0: a warm start's first check computes D(alpha) only (no
                              # pass over X; regularization_path's starts are never optimal)
    double relaxation         # r != 1: from epoch relax_after + 1 on, an exact step to a*
                              # becomes a0 + r (a* - a0), clipped to the dual domain (SOR),
                              # where the conjugate is quadratic (losses.pxd,
                              # loss_conj_quadratic; 0 < r < 2 keeps every step an ascent)
    Py_ssize_t relax_after    # epochs of plain exact steps first
    double focus              # > 0: before each pass over the active set, passes over the
                              # coordinates whose last steps gained this share of the last
                              # pass's dual gain, while they gain more per unit of work
                              # than that pass did (_sdca.pyx, "focused passes"); 0: none.
                              # Coordinates = CSR rows, sampling permutation only
    double focus_work         # at most this many passes' work of them per epoch
    int n_threads             # > 1: the exact gap checks in that many threads, each scoring
                              # a slice of the rows, the slices' sums added in order (the
                              # same result for the same count), the resync by ranges of
                              # features; and the passes too where the rows allow it
                              # (_sdca.pyx, "the threaded pass": the iterates then depend
                              # on timing, the certificate stays exact; or "the block
                              # pass": the same result for the same count). OpenMP builds.


ctypedef struct SdcaResult:
    int status                # a dualsolve._core.status code
    Py_ssize_t n_epochs
    double primal
    double dual
    double gap
    double p0                 # P(0), the scale of the rounding floor
    Py_ssize_t threaded_epochs  # passes run in n_threads threads (the rest serial)
    double threads_vs_one     # the feature-owned pass's time per unit of work in threads
                              # over one thread's, as last measured (NAN: not timed)
    Py_ssize_t focused_passes # passes over the focused coordinates (SdcaOptions.focus)
    Py_ssize_t threaded_focused_passes  # of those, the ones run in n_threads threads


cdef SdcaOptions sdca_default_options() noexcept nogil

# Fill a problem with the plain setting (coordinates = CSR rows, no weights, no mixing,
# exact steps, row norms computed by sdca_run); set the optional fields afterwards.
cdef void sdca_problem_init(SdcaProblem* P, Py_ssize_t n, Py_ssize_t d, const double* y,
                            Loss loss, double lam, double bias, double* w, double* alpha,
                            double* sqnorm, double* z, Py_ssize_t* index) noexcept nogil

cdef int sdca_run(const floating* data, const index_t* indices, const index_t* indptr,
                  SdcaProblem* P, const SdcaOptions* opt, SdcaResult* res,
                  epoch_hook hook, void* ctx) noexcept nogil


# --- pieces for solvers built on this engine (dualsolve/distributed: CoCoA+'s workers) ----
# They act on a problem as it stands (sqnorm given, bias^2 included; nothing resynced), so
# P.w may hold an offset beyond X^T alpha / (lam n), and ``1 / (P.lam P.n)`` is the step's
# scale: each caller sets P.lam for the scale it needs (P.n stays the problem's rows).

# ``passes`` passes of exact coordinate steps over all P.n coordinates, a random permutation
# each (a fractional last pass visits a random subset of that share), seeded by ``seed``;
# no gap check, no shrinking.
cdef void sdca_local_passes(const floating* data, const index_t* indices,
                            const index_t* indptr, SdcaProblem* P, double passes,
                            uint64_t seed) noexcept nogil

# Compensated sums over the coordinates at P.w: sum c_i phi(z_i) into loss_sum and
# sum c_i h(a_i / c_i) into conj_sum (scores kept in P.z).
cdef void sdca_score_sums(const floating* data, const index_t* indices,
                          const index_t* indptr, SdcaProblem* P, double* loss_sum,
                          double* conj_sum) noexcept nogil

# P.w = X^T alpha / (P.lam P.n), from scratch.
cdef void sdca_resync(const floating* data, const index_t* indices, const index_t* indptr,
                      SdcaProblem* P) noexcept nogil

# D(alpha) after ``epochs`` passes of exact coordinate steps from P.alpha (sdca_local_passes,
# seeded by ``seed``; P.alpha and P.w updated, P.w computed from alpha first): a primal
# solver's dual point raised for its certificate. Rigorous: the dual of the incremental w
# less the bound of its rounding drift (P.drift must be tracked: coordinates = CSR rows).
cdef double sdca_polished_dual(const floating* data, const index_t* indices,
                               const index_t* indptr, SdcaProblem* P, Py_ssize_t epochs,
                               uint64_t seed) noexcept nogil
