"""EpochMonitor hands callbacks a read-only view of the live coefficients."""
import numpy as np
import pytest

from dualsolve._monitor import EpochMonitor


COLUMNS = ("primal", "dual", "gap")


def test_callback_sees_a_read_only_view_of_the_live_coef():
    w = np.zeros(3)
    seen = []
    mon = EpochMonitor(COLUMNS, lambda info: seen.append(info["coef"]), 0, coef=w)
    w[1] = 2.0                                      # the solver writes on
    assert mon.report(0, (1.0, np.nan, np.nan)) == 0
    assert np.shares_memory(seen[0], w) and seen[0][1] == 2.0
    with pytest.raises(ValueError):
        seen[0][0] = 1.0                            # the callback cannot
    assert w.flags.writeable
    v = np.ones(2)
    mon.set_coef(v)
    mon.report(1, (0.5, np.nan, np.nan))
    assert np.shares_memory(seen[1], v) and not seen[1].flags.writeable
    mon.set_coef(None)
    EpochMonitor(COLUMNS, lambda info: seen.append("coef" in info)).report(0, (1.0, 0.0, 1.0))
    assert seen[-1] is False


def test_report_returns_the_status_to_stop_with():
    from dualsolve._core import status
    mon = EpochMonitor(COLUMNS, lambda info: info["epoch"] == 2)
    assert [mon.report(k, (1.0, 0.0, 1.0)) for k in range(3)] == [0, 0, status.CALLBACK]
    assert [r[0] for r in mon.rows] == [0, 1, 2]
    # non-finite is divergence, whatever the solver
    mon = EpochMonitor(COLUMNS)
    assert mon.report(0, (1.0, 0.0, 1.0)) == 0
    assert mon.report(1, (np.inf, 0.0, np.inf)) == status.DIVERGED and mon.diverged_at == 1
    # ... except a NaN that means "not evaluated this epoch"
    mon = EpochMonitor(COLUMNS, unevaluated_nan=True)
    assert mon.report(0, (1.0, 0.0, 1.0)) == 0 and mon.report(1, (np.nan,) * 3) == 0
    # growth far above the start only for solvers that ask for the watch
    for watch, expected in ((False, 0), (True, status.DIVERGED)):
        mon = EpochMonitor(COLUMNS, watch_growth=watch)
        mon.report(0, (2.0, np.nan, np.nan))
        assert mon.report(1, (2.0 + 2.1e4 * 2.0, np.nan, np.nan)) == expected
    mon = EpochMonitor(COLUMNS, watch_growth=True, scale=0.25)   # J(0) = 0: a scale is given
    mon.report(0, (0.0, np.nan, np.nan))
    assert mon.report(1, (2000.0, np.nan, np.nan)) == 0
    assert mon.report(2, (2600.0, np.nan, np.nan)) == status.DIVERGED


def test_step_keeps_exceptions_and_maps_them_to_a_status():
    from dualsolve._core import status

    def boom(info):
        raise RuntimeError("boom")
    mon = EpochMonitor(COLUMNS, boom)
    assert mon.step(0, (1.0, 0.0, 1.0)) == status.CALLBACK
    assert isinstance(mon.error, RuntimeError)

    def interrupt(info):
        raise KeyboardInterrupt
    mon = EpochMonitor(COLUMNS, interrupt)
    assert mon.step(0, (1.0, 0.0, 1.0)) == status.INTERRUPTED
    assert isinstance(mon.error, KeyboardInterrupt)
