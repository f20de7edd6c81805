# cython: language_level=3
"""C-level interface of the Crammer-Singer engine (multi-class SVM, liblinear ``-s 4``), for
``cimport`` from other extensions.

Problem, with k classes, ``y_i`` in [0, k), row weights ``c_i`` (1 when ``weight`` is NULL),
``e_{y m} = 0`` if m == y else 1, and ``W`` of k rows ``w_m``::

    min_W  P(W) = (1/n) sum_i c_i max_m (e_{y_i m} + w_m.x_i - w_{y_i}.x_i) + (lam/2) ||W||_F^2
    max_a  D(a) = (1/n) sum_i a_{i y_i} - (lam/2) ||W(a)||_F^2,   w_m(a) = sum_i a_{im} x_i / (lam n)
           over a_{im} <= 0 (m != y_i), a_{i y_i} <= c_i, sum_m a_{im} = 0   (every row i)

(liblinear's ``0.5 ||W||^2 + C sum_i max_m (...)`` at ``lam = 1/(C n)``; its alpha is ours
times ``C``). With ``bias != 0`` every row has a constant feature of value ``bias`` appended.

Layouts (C-contiguous doubles): ``w`` is feature-major, ``w[j * k + m]`` = weight of feature j
(j < d, and j = d for the bias feature when ``bias != 0``) for class m, so that one row's
update touches k consecutive doubles per nonzero; ``alpha`` is row-major, ``alpha[i * k + m]``.

Minimal use::

    from dualsolve.sdca._crammer_singer cimport CsProblem, CsOptions, CsResult, cs_run, cs_default_options

    cdef CsProblem P            # fill every field (see below)
    cdef CsOptions opt = cs_default_options()
    cdef CsResult res
    with nogil:
        cs_run(data, indices, indptr, &P, &opt, &res, NULL, NULL)

Per pass: a random permutation of the active rows (or as many uniform draws); for row i,
the k scores (O(k nnz)), the exact solution of the row's k-dimensional sub-problem (a sort,
O(k log k)), and ``w += (a_new - a_old)_m x_i / (lam n)`` for the classes whose variable
moved (O(k nnz)). With shrinking, rows strictly optimal at a vertex of their feasible set
leave the passes until a check finds them violating, and within a row a class at its bound
(``a_im = 0``, or ``a_{i y_i} = c_i`` for y_i) whose ``G_m`` is below every class that could
rise leaves the row's scores and steps (the sub-problem is then solved over the row's
remaining classes, which keep their sum) until the next exact check (liblinear's
per-variable shrinking); a row left with one class leaves the passes too. From the second
pass on, before each pass, focused passes (``CsOptions.focus``) over the rows whose last
steps gained the most: a step's gain is ``q ||a_new - a_old||^2 / 2`` (``q = ||x_i||^2 /
(lam n)``; the row's sub-problem is q-strongly convex, so this is at most n times the
dual's rise). An epoch (``max_epochs``, the hook's reports, the checks' schedule) is one
pass, or, once shrinking has left less than a whole pass's work (``k (nnz + 2)`` summed
over the rows), as many passes as add up to it, unless the pass estimate already reaches
the target (or ``check_every = 1``; schedule.pxd's ``schedule_pass_again``).
The exact duality gap ``P(W) - D(a)`` is computed from fresh scores with compensated sums;
before a gap can certify, ``w`` is recomputed from ``alpha``. ``alpha`` may hold a feasible
warm start (``w`` is computed from it).

Status (``dualsolve._core.status``): STATUS_CONVERGED when ``gap <= tol * D`` (status.pxd's
gap_certifies; or 64 ulps of ``P(0) = (1/n) sum_i c_i``; tol = 0 runs the whole budget),
STATUS_MAX_EPOCHS, STATUS_NO_MEMORY
when a work buffer cannot be allocated (nothing else is touched then), or what the hook
returned. The hook gets CS_HOOK_VALUES values after the start (epoch 0) and every epoch:
primal, dual, gap (NaN for an epoch without an exact check), gap_estimate (the mean of the
rows' Fenchel-Young gaps seen during the pass, NaN at epoch 0) and n_active (rows not
shrunk). Inside long epochs it is polled with ``epoch = -1``
and ``values = NULL`` (Ctrl-C); a nonzero answer cuts the epoch short (``alpha`` and ``w``
stay consistent).
"""
from libc.stdint cimport uint64_t
from dualsolve._core.csr cimport floating, index_t
from dualsolve._core.status cimport epoch_hook

cdef enum:
    CS_SAMPLE_PERMUTATION = 0   # a fresh random permutation of the rows every epoch
    CS_SAMPLE_UNIFORM = 1       # n draws with replacement

#: values handed to the hook per epoch (primal, dual, gap, gap_estimate, n_active)
cdef enum:
    CS_HOOK_VALUES = 5


ctypedef struct CsProblem:
    Py_ssize_t n              # rows
    Py_ssize_t d              # features of X (w has (d + (bias != 0)) * k entries)
    Py_ssize_t k              # classes, >= 2
    const Py_ssize_t* label   # n: each row's class index in [0, k)
    const double* weight      # n: c_i >= 0 (loss weight and dual box), or NULL for ones
    double lam                # > 0
    double bias               # value of the implicit constant feature; 0 for none
    double* w                 # out: feature-major (d + (bias != 0)) x k, = X^T alpha / (lam n)
    double* alpha             # in/out: row-major n x k, a feasible point (zeros: cold start)


ctypedef struct CsOptions:
    double tol                # stop when gap <= tol * D (status.pxd's gap_certifies)
    Py_ssize_t max_epochs
    Py_ssize_t check_every    # k >= 1: exact gap every k epochs; 0 (auto): when the gap seen
                              # during the pass predicts tol, or when the passes since the
                              # last check did 8 times the work of a check
    int sampling              # CS_SAMPLE_PERMUTATION or CS_SAMPLE_UNIFORM
    int shrinking             # 1: drop rows strictly optimal at a vertex of their set (see .pyx)
    uint64_t seed
    Py_ssize_t poll_work      # work (multiply-adds) between two polls of the hook in an epoch
    double focus              # > 0: before each pass over the active rows (from the second
                              # epoch on), passes over the rows whose last steps gained this
                              # share of the last pass's dual gain, while they gain more per
                              # unit of work than that pass did (the binary loop's focused
                              # passes, focus.pxd); 0: none. Permutation sampling only
    double focus_work         # at most this many passes' work of them per epoch
    int n_threads             # threads for the exact checks and the resyncs of w (on k
                              # nnz(X) >= 2^18; the passes stay on one thread: the same
                              # iterates for any count, the certificate's last bits aside)


ctypedef struct CsResult:
    int status                # a dualsolve._core.status code
    Py_ssize_t n_epochs
    double primal
    double dual
    double gap
    double p0                 # P(0) = (1/n) sum_i c_i, the scale of the rounding floor
    Py_ssize_t focused_passes # passes over the focused rows (CsOptions.focus)
    Py_ssize_t shrunk_classes # classes taken out of their rows' steps (shrinking; the
                              # exact checks bring every class back)


cdef CsOptions cs_default_options() noexcept nogil

# Exact solution of one row's sub-problem: with G the row's scores plus margins (G_m =
# w_m.x_i + e_{y m}), a its current variables (k values), q = ||x_i||^2 / (lam n) > 0, its
# class y and weight c > 0, write to a_new the minimiser of (q/2) ||a' - a||^2 + <a' - a, G>
# over {a'_m <= 0 (m != y), a'_y <= c, sum_m a'_m = 0} (the dual's maximiser along the row);
# y = -1: over {a'_m <= 0, sum_m a'_m = -c} (the row's other classes, y held at its bound c).
# v is work of k entries. O(k log k): one sort (in place for k <= 32, the usual case).
cdef void cs_subproblem(const double* G, const double* a, double q, Py_ssize_t y, double c,
                        Py_ssize_t k, double* a_new, double* v) noexcept nogil

cdef int cs_run(const floating* data, const index_t* indices, const index_t* indptr,
                CsProblem* P, const CsOptions* opt, CsResult* res,
                epoch_hook hook, void* ctx) noexcept nogil
