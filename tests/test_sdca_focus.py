"""train_sdca's focused passes (``focus``; docs/sdca.md, "Focused passes") against
independent optima, and what they must leave unchanged."""
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds
from dualsolve.sdca._sdca import DEFAULT_FOCUS

LOSSES = ["logistic", "squared_hinge", "hinge", "smooth_hinge", "squared"]


def _text_like(n=2000, d=8000, k=30, seed=0):
    """Sparse unit rows of about k features each, drawn by a power law (a few common
    words, many rare ones), labels from a planted w: the regime of the text sets (news20,
    IMDB), where late in a solve few rows still move."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, d + 1) ** 1.1
    cols = rng.choice(d, size=n * k, p=p / p.sum())
    X = sp.csr_matrix((rng.random(n * k) + 0.1, (np.repeat(np.arange(n), k), cols)),
                      shape=(n, d))
    X.sum_duplicates()
    X = sp.csr_matrix(sp.diags(1.0 / np.sqrt(X.multiply(X).sum(axis=1).A1)) @ X)
    y = np.where(X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("focus", [0.5, 1.0])
def test_focused_solves_reach_the_independent_optimum(heart, references, loss, focus):
    """heart_scale at C = 100 (badly conditioned: hundreds of epochs): focused passes ran,
    the solve certifies 1e-10 and its objective is the reference optimum's."""
    X, y = heart
    m = ds.train_sdca(X, y, loss=loss, C=100.0, tol=1e-10, max_epochs=100000, focus=focus)
    assert m.converged
    assert m.params["focused_passes"] > 0
    lam = m.params["lam"]
    p_ref = references.optimum(X, y, lam, loss)
    assert references.primal(X, y, m.coef, lam, loss) == pytest.approx(p_ref, rel=1e-9)
    assert m.history["dual"][-1] <= p_ref * (1 + 1e-12)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_wide_sparse_rows_at_a_large_C(references, loss):
    """The regime focused passes are for: at C = 1000 they certify in a fraction of the
    plain loop's epochs (77 against 489 logistic, 206 against 670 squared hinge), and
    both reach the L-BFGS optimum."""
    X, y = _text_like()
    kw = dict(loss=loss, C=1e3, tol=1e-9, max_epochs=100000)
    plain = ds.train_sdca(X, y, focus=0.0, **kw)
    focused = ds.train_sdca(X, y, **kw)
    assert plain.converged and focused.converged
    assert plain.params["focused_passes"] == 0 and focused.params["focused_passes"] > 0
    assert focused.n_epochs < plain.n_epochs / 2
    lam = focused.params["lam"]
    p_ref = references.lbfgs(X, y, lam, loss)[0]
    for m in (plain, focused):
        assert references.primal(X, y, m.coef, lam, loss) == pytest.approx(p_ref, rel=1e-8)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "hinge"])
def test_the_dual_never_falls(heart, loss):
    """Focused passes are exact coordinate steps: the exact dual of every epoch rises."""
    X, y = heart
    m = ds.train_sdca(X, y, loss=loss, C=100.0, tol=0, max_epochs=40, check_every=1)
    d = m.history["dual"]
    assert m.params["focused_passes"] > 0
    assert np.isfinite(d).all() and d[-1] > d[1]
    assert (np.diff(d) >= -1e-13 * np.abs(d[1:])).all()


def test_a_seed_gives_the_same_bits(heart):
    X, y = heart
    kw = dict(loss="logistic", C=100.0, tol=1e-9, seed=3)
    a, b = ds.train_sdca(X, y, **kw), ds.train_sdca(X, y, **kw)
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.dual, b.dual)
    assert a.params["focused_passes"] == b.params["focused_passes"] > 0
    c = ds.train_sdca(X, y, focus=0.9, **kw)
    assert not np.array_equal(a.dual, c.dual)


def test_the_first_epoch_and_focus_zero_are_plain_passes(heart):
    """No gains are known before the first pass; focus=0 is liblinear's loop throughout:
    with focus=0 the epochs are those of the plain loop, whatever tol says."""
    X, y = heart
    kw = dict(loss="logistic", C=100.0, tol=0, seed=1)
    one = ds.train_sdca(X, y, max_epochs=1, **kw)
    plain_one = ds.train_sdca(X, y, max_epochs=1, focus=0.0, **kw)
    assert one.params["focused_passes"] == 0
    np.testing.assert_array_equal(one.dual, plain_one.dual)
    plain = ds.train_sdca(X, y, max_epochs=30, focus=0.0, **kw)
    assert plain.params["focused_passes"] == 0


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_ctrl_c_is_read_between_focused_passes(heart, monkeypatch, n_jobs):
    """An epoch holds up to 1 + focus_work passes' work, so the focused passes poll the
    monitor (epoch -1) after each one: a Ctrl-C found there stops the solve before the
    epoch's pass, with the partial model; the history ends with the last whole epoch."""
    from dualsolve._monitor import EpochMonitor
    polls = []

    def check_stop(self):
        if sys._getframe(1).f_code.co_name == "report":     # an epoch's report: go on
            return 0
        polls.append(True)          # a poll from inside the engine
        raise KeyboardInterrupt

    X, y = heart
    monkeypatch.setattr(EpochMonitor, "check_stop", check_stop)
    with pytest.raises(KeyboardInterrupt) as info:
        ds.train_sdca(X, y, loss="logistic", C=100.0, tol=0, max_epochs=50, n_jobs=n_jobs)
    m = info.value.model
    assert polls, "no poll reached the monitor"
    assert m.stop_reason == "interrupted"
    # epochs 0 and 1 reported (no gains before the first pass: no focused pass in it)
    assert list(m.history["epoch"]) == [0, 1]
    np.testing.assert_allclose(m.coef, X.T @ m.dual / (m.params["lam"] * X.shape[0]),
                               rtol=1e-9, atol=1e-12)


def test_uniform_sampling_makes_none(heart):
    X, y = heart
    m = ds.train_sdca(X, y, loss="logistic", C=100.0, tol=1e-8, sampling="uniform")
    assert m.converged and m.params["focused_passes"] == 0


def test_row_weights_with_zeros(heart, references):
    """Integer weights equal repeated rows (at the same C); rows of weight 0 keep a = 0."""
    X, y = heart
    w = np.tile([0.0, 1.0, 2.0], X.shape[0] // 3 + 1)[:X.shape[0]]
    m = ds.train_sdca(X, y, loss="squared_hinge", C=10.0, tol=1e-10, sample_weight=w,
                      max_epochs=100000)
    rep = np.repeat(np.arange(X.shape[0]), w.astype(int))
    r = ds.train_sdca(X[rep], y[rep], loss="squared_hinge", C=10.0, tol=1e-10,
                      max_epochs=100000, focus=0.0)
    assert m.converged and r.converged and m.params["focused_passes"] > 0
    assert (m.dual[w == 0] == 0).all()
    lam = r.params["lam"]
    assert references.primal(X[rep], y[rep], m.coef, lam, "squared_hinge") == pytest.approx(
        references.primal(X[rep], y[rep], r.coef, lam, "squared_hinge"), rel=1e-9)


def test_the_default_is_the_engines():
    import inspect
    assert inspect.signature(ds.train_sdca).parameters["focus"].default == DEFAULT_FOCUS == 0.5


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "half"])
def test_bad_focus_is_a_clear_error(heart, bad):
    X, y = heart
    with pytest.raises((ValueError, TypeError), match="focus"):
        ds.train_sdca(X, y, focus=bad)


def test_crammer_singer_takes_focus(three_classes):
    """The Crammer-Singer loop has focused passes too (its tests: test_crammer_singer.py);
    focus=0 is its plain loop, and a bad value is the same clear error."""
    X, y = three_classes
    kw = dict(loss="hinge", multi_class="crammer_singer", C=100.0, tol=0, max_epochs=20)
    assert ds.train_sdca(X, y, **kw).params["focused_passes"] > 0
    assert ds.train_sdca(X, y, focus=0.0, **kw).params["focused_passes"] == 0
    with pytest.raises(ValueError, match="focus"):
        ds.train_sdca(X, y, focus=1.5, **kw)
