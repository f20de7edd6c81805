"""Sum-tree and alias samplers of dualsolve._core.sampler (He, Tappenden & Takac, 2018,
Sec. 6.1): the tree's sums after updates, empirical frequencies against the weights, zero
weights never drawn, bad input."""
import numpy as np
import pytest
from scipy.stats import chisquare

from dualsolve._core.sampler import SumTreeSampler, AliasSampler


def _weights(rng, n, zero_frac=0.2):
    w = rng.exponential(size=n) * rng.choice([1e-3, 1.0, 30.0], size=n)
    w[rng.random(n) < zero_frac] = 0.0
    return w


def _chi2_pvalue(draws, p):
    """Goodness of fit over the categories of positive probability."""
    counts = np.bincount(draws, minlength=p.shape[0])
    pos = p > 0
    assert counts[~pos].sum() == 0, "a zero-probability index was drawn"
    expected = p[pos] / p[pos].sum() * draws.shape[0]
    return chisquare(counts[pos], expected).pvalue


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 100, 1000])
def test_tree_sums_match_numpy_after_updates(n):
    rng = np.random.default_rng(n)
    t = SumTreeSampler(n)
    w = _weights(rng, n)
    t.build(w)
    assert t.total() == pytest.approx(w.sum(), rel=1e-13, abs=0)
    np.testing.assert_array_equal(t.leaves(), w)
    for _ in range(3 * n + 10):
        i = int(rng.integers(n))
        w[i] = rng.exponential() if rng.random() < 0.8 else 0.0
        t.set(i, w[i])
    np.testing.assert_array_equal(t.leaves(), w)
    assert t.total() == pytest.approx(w.sum(), rel=1e-12, abs=0)
    # every internal node is the sum of its children, exactly
    nodes = t.nodes()
    M = nodes.shape[0] // 2
    k = np.arange(1, M)
    np.testing.assert_array_equal(nodes[k], nodes[2 * k] + nodes[2 * k + 1])


def test_tree_root_after_many_updates_equals_fresh_sum():
    rng = np.random.default_rng(1)
    n = 1000
    t = SumTreeSampler(n)
    w = np.zeros(n)
    idx = rng.integers(n, size=100_000)
    # values over many orders of magnitude: a delta-updated root would drift
    vals = rng.exponential(size=100_000) * 10.0 ** rng.uniform(-8, 8, size=100_000)
    for i, v in zip(idx.tolist(), vals.tolist()):
        t.set(i, v)
        w[i] = v
    fresh = SumTreeSampler(n)
    fresh.build(w)
    assert abs(t.total() - fresh.total()) <= 1e-12 * fresh.total()
    assert abs(t.total() - np.sum(w)) <= 1e-12 * np.sum(w)
    np.testing.assert_array_equal(t.nodes(), fresh.nodes())


def test_tree_draws_match_probabilities():
    rng = np.random.default_rng(2)
    n = 100
    t = SumTreeSampler(n)
    w = _weights(rng, n)
    t.build(w)
    draws = t.draw(1_000_000, seed=3)
    assert _chi2_pvalue(draws, w) > 1e-3
    # after changing weights the draws follow the new distribution
    for i in range(0, n, 3):
        w[i] = 0.0 if i % 2 else 5.0 * rng.random()
        t.set(i, w[i])
    draws = t.draw(1_000_000, seed=4)
    assert _chi2_pvalue(draws, w) > 1e-3


def test_tree_detects_a_wrong_distribution():
    """Negative control for the chi-square check: draws from uniform are rejected."""
    rng = np.random.default_rng(5)
    n = 100
    t = SumTreeSampler(n)
    w = rng.exponential(size=n)
    t.build(np.ones(n))
    assert _chi2_pvalue(t.draw(200_000, seed=1), w) < 1e-6


def test_tree_zero_weights_never_drawn():
    n = 37
    t = SumTreeSampler(n)
    w = np.zeros(n)
    w[[3, 20, 36]] = [1e-300, 1.0, 1e300]
    t.build(w)
    u = np.r_[np.linspace(0, 1, 10001)[:-1], np.nextafter(1.0, 0.0)]
    got = {t.sample(float(x)) for x in u}
    assert got <= {3, 20, 36}
    assert t.sample(np.nextafter(1.0, 0.0)) == 36
    draws = t.draw(100_000, seed=0)
    assert set(np.unique(draws).tolist()) <= {3, 20, 36}
    # the edges: the last positive leaf at u -> 1 and the first one at u = 0
    t.build(np.r_[np.zeros(n - 1), 2.0])
    assert t.sample(0.0) == n - 1
    t.build(np.r_[2.0, np.zeros(n - 1)])
    assert t.sample(np.nextafter(1.0, 0.0)) == 0


def test_tree_all_zero_and_bad_input():
    t = SumTreeSampler(5)
    assert t.total() == 0.0
    assert t.sample(0.5) == -1
    with pytest.raises(ValueError, match="weight"):
        t.set(1, -1.0)
    with pytest.raises(ValueError, match="weight"):
        t.set(1, float("nan"))
    with pytest.raises(IndexError):
        t.set(5, 1.0)
    with pytest.raises(ValueError, match="length"):
        t.build(np.ones(4))
    with pytest.raises(ValueError, match="u must"):
        t.sample(1.0)
    with pytest.raises(ValueError, match="n must"):
        SumTreeSampler(0)


def test_alias_encodes_the_distribution_and_draws_from_it():
    rng = np.random.default_rng(6)
    n = 100
    w = _weights(rng, n)
    a = AliasSampler(w)
    np.testing.assert_allclose(a.probabilities(), w / w.sum(), rtol=1e-12, atol=1e-15)
    assert np.all(a.prob[w == 0] == 0.0)
    draws = a.draw(1_000_000, seed=7)
    assert _chi2_pvalue(draws, w) > 1e-3


@pytest.mark.parametrize("n", [1, 2, 5, 1000])
def test_alias_exact_mass_and_zero_weights(n):
    rng = np.random.default_rng(n)
    w = _weights(rng, n, zero_frac=0.5)
    w[rng.integers(n)] = 1.0
    a = AliasSampler(w)
    np.testing.assert_allclose(a.probabilities(), w / w.sum(), rtol=1e-10, atol=1e-14)
    draws = a.draw(50_000, seed=1)
    assert np.all(w[draws] > 0)


def test_alias_bad_input():
    with pytest.raises(ValueError, match="positive finite sum"):
        AliasSampler(np.zeros(3))
    with pytest.raises(ValueError, match=">= 0"):
        AliasSampler([1.0, -1.0])
    with pytest.raises(ValueError, match="NaN"):
        AliasSampler([1.0, np.nan])
    with pytest.raises(ValueError, match="empty"):
        AliasSampler([])
