"""The nogil generator and the CSR row kernels."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from dualsolve._core import csr, rng


def test_rng_is_reproducible_and_seed_dependent():
    a = rng.random_below(7, 1000, 500)
    assert np.array_equal(a, rng.random_below(7, 1000, 500))
    assert not np.array_equal(a, rng.random_below(8, 1000, 500))
    assert np.array_equal(rng.permutation(3, 50), rng.permutation(3, 50))


@pytest.mark.parametrize("n", [1, 2, 3, 10, 1000, 2**31 + 11, 2**63 + 5])
def test_random_below_range(n):
    x = rng.random_below(1, n, 20000)
    assert x.max() < n
    if n == 1:
        assert (x == 0).all()


@pytest.mark.parametrize("n", [3, 10, 97])
def test_random_below_is_uniform(n):
    """Chi-square goodness of fit; n = 3, 97 are not powers of two (rejection is exercised)."""
    counts = np.bincount(rng.random_below(12345, n, 200_000).astype(np.int64), minlength=n)
    p = stats.chisquare(counts).pvalue
    assert p > 1e-4


def test_random_uniform():
    u = rng.random_uniform(5, 200_000)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.005
    assert stats.kstest(u, "uniform").pvalue > 1e-4


def test_permutation_is_a_permutation_and_uniform():
    p = rng.permutation(9, 1000)
    assert np.array_equal(np.sort(p), np.arange(1000))
    # each of the 6 orders of 3 items appears with probability 1/6
    firsts = np.array([tuple(rng.permutation(s, 3)) for s in range(6000)])
    codes = firsts[:, 0] * 9 + firsts[:, 1] * 3 + firsts[:, 2]
    counts = np.unique(codes, return_counts=True)[1]
    assert len(counts) == 6
    assert stats.chisquare(counts).pvalue > 1e-4


def random_csr(n, d, density, dtype, itype, seed=0, unsorted=False):
    X = sp.random(n, d, density=density, format="csr", dtype=np.float64, random_state=seed)
    X.data = X.data.astype(dtype) * 3 - 1
    X.indices = X.indices.astype(itype)
    X.indptr = X.indptr.astype(itype)
    if unsorted:
        r = np.random.default_rng(seed)
        for i in range(n):
            s, e = X.indptr[i], X.indptr[i + 1]
            perm = r.permutation(e - s) + s
            X.indices[s:e] = X.indices[perm]
            X.data[s:e] = X.data[perm]
        X.has_sorted_indices = False
    return X


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("itype", [np.int32, np.int64])
@pytest.mark.parametrize("unsorted", [False, True])
def test_row_kernels_match_scipy(dtype, itype, unsorted):
    X = random_csr(60, 40, 0.2, dtype, itype, unsorted=unsorted)
    w = np.random.default_rng(1).normal(size=40)
    Xd = X.toarray().astype(np.float64)
    tol = 1e-13 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(csr.row_dots(X, w), Xd @ w, rtol=tol, atol=tol)
    np.testing.assert_allclose(csr.row_sqnorms(X), (Xd ** 2).sum(1), rtol=tol)
    c = np.random.default_rng(2).normal(size=60)
    np.testing.assert_allclose(csr.rows_axpy(X, c), Xd.T @ c, rtol=tol, atol=tol)


def test_check_structure_finds_repeats_only_in_rows_that_repeat():
    X = sp.csr_matrix((np.ones(4), np.array([2, 0, 1, 1]), np.array([0, 2, 4])), shape=(2, 3))
    code, row, pos, _, _ = csr.check_structure(X.data, X.indices, X.indptr, 3)
    assert (code, row, pos) == (csr.STRUCT_DUPLICATE, 1, 2)
    X = sp.csr_matrix((np.ones(4), np.array([2, 0, 1, 2]), np.array([0, 2, 4])), shape=(2, 3))
    code, _, _, sqnorm, strict = csr.check_structure(X.data, X.indices, X.indptr, 3)
    assert code == csr.STRUCT_OK and not strict
    np.testing.assert_array_equal(sqnorm, [2.0, 2.0])


@pytest.mark.parametrize("itype", [np.int32, np.int64])
def test_check_structure_needs_no_memory_per_column(itype):
    """A column index near 2^31 (or 2^62) with unsorted rows: the repeat scan sorts the row,
    it allocates nothing of size n_features."""
    big = np.iinfo(itype).max
    indices = np.array([big - 1, 5, 3, big - 1], dtype=itype)
    indptr = np.array([0, 2, 4], dtype=itype)
    code, row, _, _, _ = csr.check_structure(np.ones(4), indices, indptr, big)
    assert (code, row) == (csr.STRUCT_OK, -1)
    indices[2] = 5
    code, row, _, _, _ = csr.check_structure(np.ones(4), indices, indptr, big)
    assert (code, row) == (csr.STRUCT_OK, -1)
    indices[3] = 5
    code, row, _, _, _ = csr.check_structure(np.ones(4), indices, indptr, big)
    assert (code, row) == (csr.STRUCT_DUPLICATE, 1)


def _first_finding(data, indices, indptr, n_cols):
    """check_structure's findings, entry by entry in plain Python: the row and position
    of the first out-of-range column or non-finite value, else the first row whose squared
    norm overflows / underflows or that repeats a column."""
    for i in range(len(indptr) - 1):
        a, b = indptr[i], indptr[i + 1]
        for k in range(a, b):
            if not 0 <= indices[k] < n_cols:
                return csr.STRUCT_INDEX, i, k
            if not np.isfinite(data[k]):
                return csr.STRUCT_NONFINITE, i, k
        sq = sum(float(v) * float(v) for v in data[a:b])
        if sq > np.finfo(np.float64).max:
            return csr.STRUCT_OVERFLOW, i, a
        if len(set(indices[a:b])) < b - a:
            return csr.STRUCT_DUPLICATE, i, a
    return csr.STRUCT_OK, -1, -1


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype,itype", [(np.float64, np.int32), (np.float32, np.int64)])
def test_check_structure_reports_the_first_finding(dtype, itype, threads):
    """Random rows (empty, odd and even lengths, sorted or not) with one planted defect each
    time: a column below 0 or at n_cols, a NaN or an infinity, a repeated column. The
    finding (code, row, position), the squared norms and the sortedness flag are those
    of an entry-by-entry reference; large enough to run in threads."""
    r = np.random.default_rng(11)
    n_cols = 50
    for trial in range(60):
        n = int(r.integers(1, 40)) if trial % 10 else 3000
        lengths = r.integers(0, 12, n)
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(itype)
        nnz = int(indptr[-1])
        if nnz == 0:
            continue
        indices = np.concatenate([np.sort(r.choice(n_cols, m, replace=False))
                                  for m in lengths]).astype(itype)
        data = r.uniform(0.5, 2.0, nnz).astype(dtype)
        if trial % 3 == 0:                              # some rows out of order
            for i in r.choice(n, max(1, n // 4)):
                a, b = indptr[i], indptr[i + 1]
                indices[a:b] = indices[a:b][::-1].copy()
        kind = trial % 6
        for _ in range(int(r.integers(1, 3))):          # one or two defects
            k = int(r.integers(nnz))
            if kind == 0:
                indices[k] = -1 - int(r.integers(3))
            elif kind == 1:
                indices[k] = n_cols + int(r.integers(3))
            elif kind == 2:
                data[k] = np.nan
            elif kind == 3:
                data[k] = -np.inf if r.random() < 0.5 else np.inf
            elif kind == 4:
                row = int(np.searchsorted(indptr, k, side="right")) - 1
                if indptr[row + 1] - indptr[row] > 1:
                    other = indptr[row] if k != indptr[row] else k + 1
                    indices[k] = indices[other]
        expect = _first_finding(data, indices, indptr, n_cols)
        code, row, pos, sqnorm, strict = csr.check_structure(data, indices, indptr, n_cols,
                                                             threads)
        if expect[0] == csr.STRUCT_DUPLICATE:
            assert (code, row) == expect[:2]
        else:
            assert (code, row, pos) == expect
        if code == csr.STRUCT_OK:
            ref = np.array([np.sum(data[a:b].astype(np.float64) ** 2)
                            for a, b in zip(indptr[:-1], indptr[1:])])
            np.testing.assert_allclose(sqnorm, ref, rtol=1e-14)
            ordered = all(np.all(np.diff(indices[a:b]) > 0)
                          for a, b in zip(indptr[:-1], indptr[1:]))
            assert strict == ordered


def test_check_structure_long_unsorted_rows_match_numpy():
    r = np.random.default_rng(3)
    for m in [2, 3, 7, 40, 1000]:
        cols = r.choice(10 * m, size=m, replace=False)
        code = csr.check_structure(np.ones(m), cols.astype(np.int32),
                                   np.array([0, m], dtype=np.int32), 10 * m)[0]
        assert code == csr.STRUCT_OK
        cols[r.integers(1, m)] = cols[0]
        code = csr.check_structure(np.ones(m), cols.astype(np.int32),
                                   np.array([0, m], dtype=np.int32), 10 * m)[0]
        assert code == csr.STRUCT_DUPLICATE


@pytest.mark.parametrize("indptr, code, row", [
    ([1, 2, 4], "STRUCT_INDPTR", 0),          # does not start at 0
    ([0, 3, 1, 4], "STRUCT_INDPTR", 1),       # decreases
    ([0, 2, 10**7, 4], "STRUCT_INDPTR", 1),   # past nnz (and back)
    ([0, 2, 3, 5], "STRUCT_INDPTR", 2),       # ends past nnz
])
def test_check_structure_refuses_bad_indptr(indptr, code, row):
    indices = np.array([0, 1, 2, 0], dtype=np.int64)
    got = csr.check_structure(np.ones(4), indices, np.array(indptr, dtype=np.int64), 3)
    assert got[0] == getattr(csr, code) and got[1] == row


@pytest.mark.parametrize("values, code", [
    ([1.0, np.nan], "STRUCT_NONFINITE"), ([np.inf, 1.0], "STRUCT_NONFINITE"),
    ([1e300, 1.0], "STRUCT_OVERFLOW"), ([1e-170, 0.0], "STRUCT_UNDERFLOW"),
    ([0.0, 0.0], "STRUCT_OK"), ([1e-150, 1e-150], "STRUCT_OK")])
def test_check_structure_values(values, code):
    got = csr.check_structure(np.array(values), np.array([0, 1], dtype=np.int32),
                              np.array([0, 2], dtype=np.int32), 2)
    assert got[0] == getattr(csr, code)


def test_check_structure_index_range():
    got = csr.check_structure(np.ones(2), np.array([0, 3], dtype=np.int32),
                              np.array([0, 1, 2], dtype=np.int32), 3)
    assert got[:3] == (csr.STRUCT_INDEX, 1, 1)
    got = csr.check_structure(np.ones(2), np.array([-1, 1], dtype=np.int32),
                              np.array([0, 1, 2], dtype=np.int32), 3)
    assert got[:3] == (csr.STRUCT_INDEX, 0, 0)


def test_check_structure_in_threads_reports_what_one_thread_does():
    """Large enough to run in threads (2^18 nonzeros and up): the same norms and sortedness,
    and with findings planted in both halves of the rows, the first by row, as on one
    thread (whichever half holds it); unsorted rows in the second half only still make the
    whole matrix unsorted."""
    X = sp.random(4000, 5000, density=0.02, format="csr", random_state=0)
    X.data += 0.5
    assert X.nnz >= 1 << 18

    def both(data, indices, indptr, n_cols=5000):
        one = csr.check_structure(data, indices, indptr, n_cols, 1)
        two = csr.check_structure(data, indices, indptr, n_cols, 2)
        assert one[:3] == two[:3] and one[4] == two[4]
        if one[0] == csr.STRUCT_OK:
            np.testing.assert_array_equal(one[3], two[3])
        return one[:3] + (one[4],)

    assert both(X.data, X.indices, X.indptr) == (csr.STRUCT_OK, -1, -1, True)
    late, early = 3500, 300
    for plant in ("nan", "index", "repeat"):
        data, indices = X.data.copy(), X.indices.copy()
        for row in (late, early):
            k = X.indptr[row] + 1
            if plant == "nan":
                data[k] = np.nan
            elif plant == "index":
                indices[k] = 5000
            else:
                indices[k] = indices[k - 1]
            found = both(data, indices, X.indptr)
            assert found[1] == row, (plant, found)
    unsorted = X.indices.copy()
    k = X.indptr[late]
    unsorted[k], unsorted[k + 1] = unsorted[k + 1], unsorted[k]
    assert both(X.data, unsorted, X.indptr) == (csr.STRUCT_OK, -1, -1, False)
