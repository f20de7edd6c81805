"""``tol`` certifies the relative suboptimality: one rule for every certified solver
(``dualsolve/_core/status.pxd``, ``gap_certifies``): converged when ``gap <= tol * (P - gap)``,
``P - gap`` a certified lower bound on P*, so that ``(P - P*) / P* <= tol``; or when the gap
is at the rounding floor (64 ulps of the objective's scale), which is what stops a problem
whose optimum is 0; ``tol = 0`` runs the whole budget.

Generated over the registered solvers: a converged model's last certified history row meets
the rule, and the true optimum (from an independent tight reference solve) confirms the
relative suboptimality.
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds
from dualsolve._core import status as _status
from dualsolve._driver import solvers
from solver_problems import problem, train  # tests/ (see conftest.py)

REGISTRY = {s.function_name: s for s in solvers().values()}
TRAINERS = sorted(REGISTRY)
EPS = np.finfo(float).eps


def _pq(y):
    p = float(np.mean(y > 0))
    return p * (1.0 - p)


def offset(name, y):
    """What turns the history's primal into the nonnegative objective the rule is relative
    to: the AUC solvers' J + p(1-p); 0 elsewhere."""
    return _pq(y) if REGISTRY[name].family == "auc" else 0.0


def optimum(name, X, y, loss, m):
    """A certified lower bound on the optimum P* (shifted like ``offset``), from a tight
    solve by an independent reference, and an upper bound (the reference's primal)."""
    family, lam = REGISTRY[name].family, m.params["lam"]
    if family in ("newton", "linear"):     # SDCA is independent of Newton's primal loop
        ref = train("train_sdca", X, y, loss=loss, lam=lam, tol=1e-13, max_epochs=100000)
        last = ref.history[np.isfinite(ref.history["gap"])][-1]
        return float(last["dual"]), float(last["primal"])
    if family in ("sdca", "adfsdca", "primal_dual"):
        ref = train("train_sdca", X, y, loss=loss, lam=lam, tol=1e-13, max_epochs=100000)
        last = ref.history[np.isfinite(ref.history["gap"])][-1]
        return float(last["dual"]), float(last["primal"])
    if family == "mixup":
        kw = {}
        if name == "train_kernel_sgd":      # its objective: kernel SDCA's without mixing
            kw = dict(kernel="rbf", kernel_gamma=m.params.get("kernel_gamma"))
        ref = train("train_mixup_sdca", X, y, loss=loss, lam=lam, tol=1e-13, max_epochs=20000,
                    **kw)
        last = ref.history[np.isfinite(ref.history["gap"])][-1]
        return float(last["dual"]), float(last["primal"])
    if family == "auc":
        ref = ds.auc_surrogate_optimum(X, y, lam=lam, tol=1e-14)
        j = float(ref.params["objective"]) + _pq(y)
        return j - float(ref.params["gap"]), j
    if family == "spectral":
        ref = ds.spectral_reference(X, y, loss=loss, spectrum=m.params["spectrum"],
                                    spectrum_param=m.params.get("spectrum_param"), lam=lam,
                                    tol=1e-14)
        return float(ref.dual), float(ref.primal)
    raise AssertionError(f"no reference for the family {family!r}")


@pytest.mark.parametrize("name", TRAINERS)
def test_converged_means_relative_suboptimality_at_most_tol(name):
    """The last certified row meets gap <= tol * (P - gap), and the reference optimum P*
    gives (P - P*) / P* <= tol. tol is 1e-3, or 1e-2 / 1e-1 for a solver that cannot reach
    1e-3 here (a constant-step SGD baseline)."""
    X, y, loss = problem(name)
    for tol in (1e-3, 1e-2, 1e-1):
        m = train(name, X, y, loss=loss, tol=tol, max_epochs=20000)
        if m.stop_reason == "converged":
            break
    assert m.stop_reason == "converged", (name, m.history[-1])
    rows = m.history[np.isfinite(m.history["gap"])]
    last = rows[-1]
    shift = offset(name, y)
    primal, gap = float(last["primal"]) + shift, float(last["gap"])
    lower = primal - gap
    assert lower > 0 and gap <= tol * lower, (name, primal, gap, tol)
    assert _status.certifies(gap, lower, tol, 0.0)
    p_lo, p_hi = optimum(name, X, y, loss, m)
    assert p_lo > 0 and p_hi - p_lo <= 1e-6 * p_lo, (name, p_lo, p_hi)   # a tight reference
    assert p_lo <= primal * (1 + 1e-12), (name, p_lo, primal)            # P* <= P(w)
    # the certificate holds against the true optimum, and the old rule would not have had
    # to: the stop is relative to P*, not to P(0)
    assert (primal - p_lo) / p_lo <= tol * (1 + 1e-9), (name, primal, p_lo, tol)
    assert lower <= p_hi * (1 + 1e-12), (name, lower, p_hi)              # a lower bound


@pytest.mark.parametrize("name", TRAINERS)
def test_tol_zero_runs_the_whole_budget(name):
    """tol = 0 never converges, not even by the rounding floor: the whole budget runs."""
    X, y, loss = problem(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ds.ConvergenceWarning)
        m = getattr(ds, name)(X, y, loss=loss, max_epochs=4, tol=0.0)
    assert m.stop_reason == "max_epochs" and m.n_epochs == 4, name


def test_the_rule_and_its_floor():
    """The Python twin calls status.pxd's gap_certifies: relative to the lower bound, the
    floor for a lower bound <= 0, never for tol = 0 or a NaN gap."""
    floor = _status.floor(1.0)
    assert floor == _status.FLOOR_ULPS * EPS and _status.FLOOR_ULPS == 64
    assert _status.floor(-2.0) == 2 * floor
    assert _status.certifies(1e-7, 0.1, 1e-6, floor)
    assert not _status.certifies(1.1e-7, 0.1, 1e-6, floor)
    assert _status.certifies(0.0, 0.0, 1e-6, floor)            # P* = 0: the floor
    assert _status.certifies(floor, -1.0, 1e-6, floor)
    assert not _status.certifies(2 * floor, -1.0, 1e-6, floor)
    assert not _status.certifies(0.0, 0.0, 0.0, floor)         # tol = 0: never
    assert not _status.certifies(0.0, 1.0, 0.0, 1.0)
    assert not _status.certifies(np.nan, 1.0, 1e-3, floor)
    assert _status.target(2.0, 1e-3, floor) == 2e-3
    assert _status.target(-1.0, 1e-3, floor) == floor
    assert _status.target(np.nan, 1e-3, floor) == floor
    assert _status.target(1.0, 0.0, floor) == -np.inf


def _svr_zero_problem(n=80, d=6, eps=0.5, seed=1):
    """epsilon-insensitive regression with every |y_i| <= epsilon: w = 0 is optimal, P* = 0."""
    rng = np.random.default_rng(seed)
    X = sp.csr_matrix(rng.standard_normal((n, d)))
    y = rng.uniform(-0.9 * eps, 0.9 * eps, n)
    return X, y, eps


@pytest.mark.parametrize("loss", ["epsilon_insensitive", "squared_epsilon_insensitive"])
def test_optimum_zero_stops_on_the_rounding_floor(loss):
    """P* = 0: no positive lower bound exists, so only the floor can stop the run; it stops
    at once (w = 0 has gap 0), converged, and a warm start away from 0 comes back and stops."""
    X, y, eps = _svr_zero_problem()
    m = ds.train_sdca(X, y, loss=loss, epsilon=eps, tol=1e-6, max_epochs=50)
    assert m.stop_reason == "converged" and m.n_epochs == 0
    assert m.history["primal"][-1] == 0.0 and m.history["gap"][-1] == 0.0
    assert np.all(m.coef == 0.0)
    # from a dual point away from 0 (a model trained on other targets)
    other = ds.train_sdca(X, 3.0 * np.sign(y) + y, loss=loss, epsilon=eps, tol=1e-3)
    m = train("train_sdca", X, y, loss=loss, epsilon=eps, tol=1e-6, max_epochs=2000,
              warm_start=other)
    assert m.stop_reason == "converged", m.history[-1]
    gap = float(m.history["gap"][-1])
    assert gap <= _status.floor(m.params["p0"]), (gap, m.params["p0"])
    # tol = 0 still runs the whole budget there
    m = train("train_sdca", X, y, loss=loss, epsilon=eps, tol=0.0, max_epochs=3)
    assert m.stop_reason == "max_epochs" and m.n_epochs == 3


def test_optimum_at_rounding_level_stops_on_the_floor():
    """P* ~ 1e-12 P(0) (squared loss, targets fit exactly by a tiny-lam model): tol * P* is
    then below what the gap resolves, and the run stops on the floor of P(0), with
    P - P* <= 64 ulps of P(0); the relative rule alone would not have held."""
    rng = np.random.default_rng(2)
    n, d = 60, 5
    X = rng.standard_normal((n, d))
    y = X @ rng.standard_normal(d)
    tol = 1e-9
    m = train("train_sdca", sp.csr_matrix(X), y, loss="squared", lam=1e-12, tol=tol,
              max_epochs=100000)
    assert m.stop_reason == "converged", m.history[-1]
    p0 = m.params["p0"]
    last = m.history[np.isfinite(m.history["gap"])][-1]
    primal, lower, gap = float(last["primal"]), float(last["dual"]), float(last["gap"])
    assert 0 < lower <= primal < 1e-11 * p0              # P* at rounding level of P(0)
    assert gap <= _status.floor(p0)                      # what stopped it
    assert gap > tol * lower                             # not the relative rule
    assert not _status.certifies(gap, lower, tol, 0.0)


def test_the_stricter_stop_on_a_problem_far_below_p0():
    """C = 10^4 (the issue's case) on separable data: P* is a small fraction of P(0), so
    the old rule gap <= tol P(0) would stop at a relative suboptimality far above tol; the
    new one certifies tol itself, and the reference optimum confirms it."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((200, 10))
    y = np.where(X @ rng.standard_normal(10) > 0, 1.0, -1.0)
    X = sp.csr_matrix(X)
    tol = 1e-4
    m = ds.train_sdca(X, y, loss="logistic", C=1e4, tol=tol, max_epochs=100000)
    assert m.stop_reason == "converged"
    last = m.history[np.isfinite(m.history["gap"])][-1]
    p0 = m.params["p0"]
    assert float(last["dual"]) < 1e-2 * p0               # P* far below P(0)
    assert float(last["gap"]) <= tol * float(last["dual"])
    ref = ds.train_sdca(X, y, loss="logistic", C=1e4, tol=1e-12, max_epochs=1000000)
    pstar = float(ref.history["dual"][-1])
    assert (float(last["primal"]) - pstar) / pstar <= tol
