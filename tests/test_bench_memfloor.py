"""The memory-floor probe of bench/memory_floor.py (bench/memfloor.pyx, built here like a
user extension) computes what it claims."""
import pathlib

import numpy as np
import pytest
import scipy.sparse as sp

PYX = pathlib.Path(__file__).parent.parent / "bench" / "memfloor.pyx"


@pytest.fixture(scope="module")
def touch_rows(tmp_path_factory, embed_helper):
    if not PYX.exists():
        pytest.skip("bench/ is not in this checkout")
    return embed_helper.build_extension(tmp_path_factory, "memfloor", PYX.read_text()).touch_rows


def _problem(dtype=np.float64, index=np.int32):
    X = sp.random(60, 40, density=0.2, format="csr", random_state=0, dtype=np.float64)
    X = X.astype(dtype)
    X.indices = X.indices.astype(index)
    X.indptr = X.indptr.astype(index)
    order = np.random.default_rng(0).integers(0, 60, 300)
    w = np.random.default_rng(1).standard_normal(40)
    return X, order, w


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("width", [1, 2])
@pytest.mark.parametrize("prefetch", [False, True])
def test_read_pass_sums_the_sampled_rows(dtype, index, width, prefetch, touch_rows):
    X, order, w = _problem(dtype, index)
    expect = (X.astype(np.float64) @ w)[order].sum()
    got = touch_rows(X, order, width, write=False, prefetch=prefetch, w=w)
    assert got == pytest.approx(expect, rel=1e-12, abs=1e-12)
    # two-double records: the writes move the halves in opposite directions
    if width == 2:
        got = touch_rows(X, order, 2, write=True, prefetch=prefetch, w=w)
        assert got == pytest.approx(expect, rel=1e-12, abs=1e-12)


def test_write_pass_follows_the_row_updates(touch_rows):
    X, order, w = _problem()
    v = w.copy()
    total = 0.0
    for k in order:
        row = X[k]
        dot = float((row @ v)[0])
        total += dot
        v[row.indices] += 1e-3 * dot * row.data
    assert touch_rows(X, order, 1, write=True, w=w) == pytest.approx(total, rel=1e-12)
    # a second pass goes on from the records the first one left
    for k in order:
        row = X[k]
        dot = float((row @ v)[0])
        total += dot
        v[row.indices] += 1e-3 * dot * row.data
    assert touch_rows(X, order, 1, write=True, w=w, passes=2) == pytest.approx(total, rel=1e-12)


def test_bad_input(touch_rows):
    X, order, w = _problem()
    with pytest.raises(TypeError, match="X"):
        touch_rows(X.toarray(), order)
    with pytest.raises(ValueError, match="record_doubles"):
        touch_rows(X, order, 3)
    with pytest.raises(ValueError, match="order"):
        touch_rows(X, np.array([0, 60]))
    with pytest.raises(ValueError, match="w must"):
        touch_rows(X, order, w=w[:5])
    with pytest.raises(ValueError, match="passes"):
        touch_rows(X, order, passes=0)
    assert touch_rows(X, order[:0]) == 0.0
