"""EpochMonitor hands callbacks a read-only view of the live coefficients."""
import numpy as np
import pytest

from dualsolve._monitor import EpochMonitor


def test_callback_sees_a_read_only_view_of_the_live_coef():
    w = np.zeros(3)
    seen = []
    mon = EpochMonitor(lambda info: seen.append(info["coef"]), 0, ("primal",), coef=w)
    w[1] = 2.0                                      # the solver writes on
    assert not mon.report(0, 1.0)
    assert np.shares_memory(seen[0], w) and seen[0][1] == 2.0
    with pytest.raises(ValueError):
        seen[0][0] = 1.0                            # the callback cannot
    assert w.flags.writeable
    v = np.ones(2)
    mon.set_coef(v)
    mon.report(1, 0.5)
    assert np.shares_memory(seen[1], v) and not seen[1].flags.writeable
    mon.set_coef(None)
    EpochMonitor(lambda info: seen.append("coef" in info), 0, ("primal",)).report(0, 1.0)
    assert seen[-1] is False
