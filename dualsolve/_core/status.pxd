# cython: language_level=3
"""The one status and the one per-epoch hook of every solver engine.

An engine (``sdca_run``, ``spdc_run``, ...) runs without the GIL and returns one of these
codes; ``dualsolve._driver`` maps it to ``Model.stop_reason`` and to warnings or errors.
After the starting point (epoch 0) and after every epoch it calls the hook with that
epoch's values (the engine documents how many and in what order: primal, dual, gap, then
its own columns). The hook returns 0 to go on, or the status the engine must stop with:
STATUS_CALLBACK (the user's callback asked to stop, or raised), STATUS_INTERRUPTED
(Ctrl-C) or STATUS_DIVERGED (the objective turned non-finite or grew far above its
start). A long epoch may poll the hook with ``epoch = -1`` and ``values = NULL``: then it
only checks for Ctrl-C.

The one stopping rule of every certified engine is :func:`gap_certifies` below (with
:func:`gap_target` and :func:`gap_floor`); a new engine cimports it rather than writing
its own ``gap <= tol * ...`` test.
"""
from libc.float cimport DBL_EPSILON
from libc.math cimport INFINITY, fabs

cdef enum:
    STATUS_CONVERGED = 0      # the solver's documented criterion held at tol
    STATUS_MAX_EPOCHS = 1     # the budget ran out first
    STATUS_CALLBACK = 2       # the callback returned True (or raised: the driver re-raises)
    STATUS_INTERRUPTED = 3    # Ctrl-C (the driver re-raises KeyboardInterrupt)
    STATUS_DIVERGED = 4       # non-finite, or far above the objective at the start
    STATUS_NO_MEMORY = 5      # a work buffer could not be allocated (MemoryError)


ctypedef int (*epoch_hook)(void* ctx, Py_ssize_t epoch, const double* values) noexcept nogil


cdef inline int report_epoch(epoch_hook hook, void* ctx, Py_ssize_t epoch,
                             const double* values, int status) noexcept nogil:
    """Hand one epoch's values to the hook (NULL: no hook) and return the status to go on
    with: the hook's request to stop, unless the epoch already ended the run (a converged or
    diverged status stays)."""
    cdef int stop
    if hook == NULL:
        return status
    stop = hook(ctx, epoch, values)
    return stop if stop != 0 and status == STATUS_MAX_EPOCHS else status


# ---------------------------------------------------------------------------------------
# The stopping rule: relative suboptimality, certified.
#
# An engine's certificate ``gap`` is an upper bound on P(w) - P* (a duality gap P - D, or
# another documented bound); ``lower = P(w) - gap`` is then a certified lower bound on P*
# (for a duality gap it is D(alpha)). The run has converged when
#
#     gap <= tol * lower          which gives  P(w) - P* <= gap <= tol * lower <= tol * P*,
#
# i.e. the relative suboptimality (P(w) - P*) / P* the user reads is at most tol. A lower
# bound <= 0 certifies nothing relative (P* may be 0), except through a rounding floor:
#
#     gap <= gap_floor(scale) = GAP_FLOOR_ULPS * DBL_EPSILON * |scale|,
#
# scale the engine's objective scale (P(0) for the dual methods, F(0) spectral, p(1-p) AUC).
# Why that floor: P and D are each sums of n terms evaluated to a few ulps of their own
# size, accumulated with the compensated sum (_core/ksum.pxd: a few ulps of the total);
# along a run that started at w = 0 those terms are of the size of P(0), so the computed
# gap carries an error of a few ulps of P(0) whatever the true gap is. 64 ulps (about
# 1.4e-14 P(0)) covers that with margin; below it the certificate cannot be made smaller
# by iterating, so a problem whose optimum is 0 (e.g. epsilon-insensitive regression with
# every |y_i| <= epsilon, where w = 0 gives gap 0) or at rounding level still stops. When
# the floor is what held, the guarantee is the absolute P(w) - P* <= gap_floor(scale).
#
# tol = 0 (or a NaN tol) never converges, floor or not: it asks for the whole budget.
# ---------------------------------------------------------------------------------------

cdef enum:
    GAP_FLOOR_ULPS = 64       # the rounding floor, in ulps (DBL_EPSILON) of the scale


cdef inline double gap_floor(double scale) noexcept nogil:
    """The rounding floor of a certificate on an objective of size ``scale`` (P(0), F(0),
    p(1-p)): a gap at or below it is rounding noise and certifies convergence."""
    return GAP_FLOOR_ULPS * DBL_EPSILON * fabs(scale)


cdef inline double gap_target(double lower, double tol, double floor) noexcept nogil:
    """The value the certificate must reach: ``max(tol * lower, floor)`` for tol > 0 (a NaN
    or non-positive ``lower`` gives ``floor``), ``-INFINITY`` for tol = 0 (never converges).
    What ``Result.threshold`` reports and what a check schedule aims at."""
    cdef double t
    if not tol > 0.0:
        return -INFINITY      # nothing is <= it
    t = tol * lower
    return t if t > floor else floor


cdef inline bint gap_certifies(double gap, double lower, double tol,
                               double floor) noexcept nogil:
    """THE stopping rule of every certified engine: True when the certificate ``gap`` (an
    upper bound on P(w) - P*) is <= ``tol * lower``, ``lower = P(w) - gap`` the certified
    lower bound on P* (D(alpha) for a duality gap), so (P(w) - P*) / P* <= tol; or when
    ``gap <= floor`` (``gap_floor(scale)``, the rounding floor). Never for tol = 0, nor for a
    NaN gap. Usage::

        from dualsolve._core.status cimport gap_certifies, gap_floor
        floor = gap_floor(p0)                     # once, from the objective at zero
        if gap_certifies(primal - dual, dual, tol, floor): status = STATUS_CONVERGED
    """
    return gap <= gap_target(lower, tol, floor)
