# cython: language_level=3
"""When to compute the exact duality gap: shared by the linear and the kernel SDCA loops.

An exact check costs a pass over the data (linear: X w; kernel: K beta). ``every >= 1``
checks every k epochs. ``every == 0`` (auto) uses the gap seen during the pass -- the
Fenchel-Young gaps of the rows visited, just before their steps -- which is about the gap
at the start of the epoch: one epoch of the observed contraction is extrapolated, and a
check runs when that prediction meets the target, or when the passes since the last check
did eight times a check's work (so checks cost at most a ninth of the total). The
prediction is scaled by how far the last check's exact gap was above its own prediction
(``schedule_checked``): near the end the rows' gaps under-estimate the gap of ``w(alpha)``
several times over, and every check that predicts success costs a resync and a check
(news20, squared hinge, C = 100: two passes per epoch for the last hundred epochs). The
schedule depends only on counts and computed values, never on clocks, so a seed
determines the iterates.
"""
from libc.math cimport NAN

from dualsolve._core.status cimport gap_target


ctypedef struct CheckSchedule:
    Py_ssize_t every          # k >= 1, or 0 for auto
    double check_cost         # work of one exact check (same units as pass costs)
    double since              # pass work since the last check
    double prev_estimate      # the estimate of the pass before (NaN at first)
    double calib              # exact gap / raw prediction at the last check, in [1, 1e4]
    double raw                # the raw prediction of the epoch being checked


cdef inline void schedule_init(CheckSchedule* S, Py_ssize_t every, double check_cost) noexcept nogil:
    S.every = every
    S.check_cost = check_cost
    S.since = 0.0
    S.prev_estimate = NAN
    S.calib = 1.0
    S.raw = NAN


cdef inline double schedule_ahead(double previous, double estimate) noexcept nogil:
    """The gap a pass's estimate stands for: the sum of a pass's gains trails the gap by
    about a pass, so it is extrapolated one pass ahead at the rate since ``previous`` (the
    estimate before it; none, or one that did not fall: the estimate as it is)."""
    if previous > 0.0 and estimate < previous:
        return estimate * estimate / previous
    return estimate


cdef inline bint schedule_check_now(CheckSchedule* S, Py_ssize_t epoch, Py_ssize_t max_epochs,
                                    double estimate, double pass_cost, double target,
                                    double* predicted) noexcept nogil:
    """After a pass: whether to check now. ``predicted`` receives the extrapolated gap."""
    cdef bint check
    S.since += pass_cost
    predicted[0] = estimate
    if S.every == 1:
        check = True
    else:
        predicted[0] = schedule_ahead(S.prev_estimate, estimate)
        S.prev_estimate = estimate
        S.raw = predicted[0]
        predicted[0] *= S.calib
        if S.every > 1:
            check = epoch % S.every == 0
        else:
            check = S.since >= 8.0 * S.check_cost
        check = check or predicted[0] <= target or epoch == max_epochs
    if check:
        S.since = 0.0
    return check


cdef inline bint schedule_pass_again(CheckSchedule* S, double pass_cost, double epoch_cost,
                                     double estimate, double target,
                                     double below) noexcept nogil:
    """Whether an epoch (``max_epochs``, the hook's reports, when to check) goes on with
    another pass over the active rows: while a pass costs under ``below`` times a whole
    pass (the check's work) and the epoch's passes add up to less than a whole pass, unless
    the gap the pass estimate stands for (``schedule_ahead``, scaled as the last check
    found it: what ``schedule_check_now`` reads) already reaches the target. NaN estimate
    (a check every epoch): never. So an epoch is at least ``below`` of a pass's work (but
    for the one whose estimate reaches the target); otherwise ``max_epochs`` runs out on
    passes over the hundred rows that shrinking leaves of a9a's hinge (~1% of the work) or
    letter's Crammer-Singer (~2%). Going on, the estimate is the one the next pass's is
    extrapolated from, as at the end of an epoch, so the extrapolation and its calibration
    are per pass however many an epoch holds. (The raw estimate, with the rate of whole
    epochs, kept reuters' squared hinge passing beyond its target: 12 passes and 16 focused
    passes against 9 and 12.)"""
    if (0.0 < pass_cost < below * S.check_cost and epoch_cost < S.check_cost
            and schedule_ahead(S.prev_estimate, estimate) * S.calib > target):
        S.prev_estimate = estimate
        return True
    return False


cdef inline void schedule_checked(CheckSchedule* S, double gap) noexcept nogil:
    """After an exact check: learn how far the pass estimate under-estimated the gap."""
    if S.raw > 0.0 and gap > 0.0:         # (false for NaN)
        S.calib = min(max(gap / S.raw, 1.0), 1e4)


cdef inline double schedule_target(double primal, double dual, double tol,
                                   double floor) noexcept nogil:
    """The gap a check aims at, from the last exact check: ``gap_target`` of its lower bound
    D (status.pxd's rule), or of its primal while D is not yet positive (at a cold start
    D = 0: aim at tol * P(0), which a later check tightens). Only when to check depends on
    it; whether a check certifies is ``gap_certifies`` alone."""
    return gap_target(dual if dual > 0.0 else primal, tol, floor)
