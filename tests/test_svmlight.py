"""LIBSVM / svmlight reader and writer: exactness, round trips, error reporting."""
import bz2
import gzip
import io
import lzma
from importlib import resources

import numpy as np
import pytest
import scipy.sparse as sp

from dualsolve.datasets import dump_svmlight, load_svmlight


def bundled(name):
    """A data file shipped inside the installed package (a real LIBSVM file)."""
    return resources.files("dualsolve").joinpath("data", name)


def loads(text, **kwargs):
    """load_svmlight on an in-memory file."""
    return load_svmlight(io.BytesIO(text.encode() if isinstance(text, str) else text),
                         **kwargs)


def random_csr(n=60, d=40, density=0.2, seed=0):
    """CSR with values spread over the whole double range, and a few special ones."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed)
    X.data = rng.standard_normal(X.nnz) * 10.0 ** rng.integers(-300, 300, X.nnz)
    X.data[:4] = [0.1, 1.0 / 3.0, 5e-324, -1.7976931348623157e308]
    return X, rng.standard_normal(n)


def bits(a):
    return np.asarray(a, dtype=np.float64).view(np.int64)


# ---------------------------------------------------------------- numbers are exact

def test_values_bit_identical_to_python_float():
    # Formats that hit both the fast path (short mantissas) and strtod (17+ digits,
    # exponents beyond 1e22, subnormals).
    rng = np.random.default_rng(1)
    vals = np.concatenate([rng.standard_normal(3000) * 10.0 ** rng.integers(-40, 40, 3000),
                           np.frombuffer(rng.bytes(8 * 3000), dtype=np.float64)])
    vals = vals[np.isfinite(vals)]
    tokens = []
    for v in vals:
        tokens += [repr(float(v)), "%.17g" % v, "%.6g" % v, "%.4f" % v, "%.25e" % v]
    tokens += ["1", "+1", "-0", ".5", "5.", "1e22", "1e23", "9007199254740993",
               "123456789012345678901234567890", "0.0000000000000000000000000001",
               "4.9e-324", "2.4703282292062327e-324", "1e-400", "1e400", "1E+5", "00012.50"]
    text = "".join(f"{t} 1:{t}\n" for t in tokens)
    X, y = loads(text)
    expected = bits([float(t) for t in tokens])
    np.testing.assert_array_equal(bits(X.data), expected)
    np.testing.assert_array_equal(bits(y), expected)


def test_nan_and_inf_are_parsed_not_rejected():
    X, y = loads("nan 1:inf 2:-inf 3:NaN 4:Infinity\n")
    assert np.isnan(y[0])
    np.testing.assert_array_equal(X.data[[0, 1, 3]], [np.inf, -np.inf, np.inf])
    assert np.isnan(X.data[2])


def test_negative_zero_keeps_its_sign():
    X, _ = loads("1 1:-0 2:-0.0\n")
    assert X.nnz == 2 and np.all(np.signbit(X.data))


# ---------------------------------------------------------------------- round trips

@pytest.mark.parametrize("zero_based", [False, True])
def test_round_trip_float64_exact(tmp_path, zero_based):
    X, y = random_csr()
    X.data[5] = 0.0  # an explicit zero stays a stored entry
    path = tmp_path / "x.svm"
    dump_svmlight(X, y, path, zero_based=zero_based)
    assert X.indptr[1] > 0  # row 0 has entries, so the first token is checked below
    first = path.read_text().split()[1]
    assert first == f"{X.indices[0] + (0 if zero_based else 1)}:0.1"
    X2, y2 = load_svmlight(path, n_features=X.shape[1], zero_based=zero_based)
    assert X2.shape == X.shape and X2.dtype == np.float64
    np.testing.assert_array_equal(X2.indptr, X.indptr)
    np.testing.assert_array_equal(X2.indices, X.indices)
    np.testing.assert_array_equal(bits(X2.data), bits(X.data))
    np.testing.assert_array_equal(bits(y2), bits(y))


def test_round_trip_float32(tmp_path):
    X, y = random_csr(seed=3)
    rng = np.random.default_rng(3)
    # Values rounded to float32 (within its range), then written exactly.
    X.data = rng.standard_normal(X.nnz) * 10.0 ** rng.integers(-30, 30, X.nnz)
    X = X.astype(np.float32)
    dump_svmlight(X, y, tmp_path / "x.svm")
    X2, _ = load_svmlight(tmp_path / "x.svm", dtype=np.float32, n_features=X.shape[1])
    assert X2.dtype == np.float32
    np.testing.assert_array_equal(X2.data.view(np.int32), X.data.view(np.int32))
    X3, _ = load_svmlight(tmp_path / "x.svm", dtype=np.float64, n_features=X.shape[1])
    np.testing.assert_array_equal(X3.data, X.data.astype(np.float64))


def test_auto_zero_based_detection():
    X0, _ = loads("1 0:1 2:2\n")   # contains index 0: zero-based
    X1, _ = loads("1 1:1 2:2\n")   # one-based
    np.testing.assert_array_equal(X0.toarray(), [[1, 0, 2]])
    np.testing.assert_array_equal(X1.toarray(), [[1, 2]])
    X1z, _ = loads("1 1:1 2:2\n", zero_based=True)
    np.testing.assert_array_equal(X1z.toarray(), [[0, 1, 2]])


@pytest.mark.parametrize("ext,magic,module", [
    (".xz", b"\xfd7zXZ\x00", lzma), (".gz", b"\x1f\x8b", gzip), (".bz2", b"BZh", bz2)])
def test_compressed_round_trip(tmp_path, ext, magic, module):
    X, y = random_csr(seed=4)
    path = tmp_path / ("x.svm" + ext)
    dump_svmlight(X, y, str(path))
    raw = path.read_bytes()
    assert raw.startswith(magic)
    X2, y2 = load_svmlight(str(path), n_features=X.shape[1])
    assert (X2 != X).nnz == 0
    np.testing.assert_array_equal(y2, y)
    # A binary file object holding compressed bytes is recognised by its magic number.
    X3, _ = load_svmlight(io.BytesIO(raw), n_features=X.shape[1])
    assert (X3 != X).nnz == 0
    assert module.decompress(raw).startswith(repr(float(y[0])).encode() + b" ")


def test_empty_rows_and_rows_without_features(tmp_path):
    X = sp.csr_matrix(np.array([[0, 0, 0], [1.5, 0, 2], [0, 0, 0], [0, 3, 0], [0, 0, 0]]))
    y = np.array([1.0, -1.0, 1.0, 2.5, -1.0])
    dump_svmlight(X, y, tmp_path / "x.svm")
    lines = (tmp_path / "x.svm").read_text().splitlines()
    assert lines == ["1", "-1 1:1.5 3:2", "1", "2.5 2:3", "-1"]
    X2, y2 = load_svmlight(tmp_path / "x.svm", n_features=3)
    np.testing.assert_array_equal(X2.toarray(), X.toarray())
    np.testing.assert_array_equal(y2, y)
    np.testing.assert_array_equal(X2.indptr, [0, 0, 2, 2, 3, 3])
    # Without n_features the width is the largest index seen.
    assert load_svmlight(tmp_path / "x.svm")[0].shape == (5, 3)


def test_dense_input_writes_nonzeros():
    buf = io.BytesIO()
    dump_svmlight(np.array([[0.0, 2.0], [0.25, 0.0]]), [1, -1], buf, zero_based=True)
    assert buf.getvalue() == b"1 1:2\n-1 0:0.25\n"


def test_comment_and_qid_round_trip(tmp_path):
    X, y = random_csr(n=10, seed=5)
    qid = np.array([3, 3, 3, 7, 7, 1, 1, 1, 1, 9])
    dump_svmlight(X, y, tmp_path / "q.svm", comment="made by a test\nsecond line",
                  query_id=qid)
    text = (tmp_path / "q.svm").read_text()
    assert text.startswith("# made by a test\n# second line\n")
    assert text.splitlines()[2].split()[1] == "qid:3"
    X2, y2, q2 = load_svmlight(tmp_path / "q.svm", n_features=X.shape[1], query_id=True)
    assert (X2 != X).nnz == 0
    np.testing.assert_array_equal(y2, y)
    np.testing.assert_array_equal(q2, qid)
    assert q2.dtype == np.int64


def test_comments_qid_blank_lines_and_crlf():
    text = ("# header comment\r\n"
            "\r\n"
            "3 qid:1 1:0.5 4:2 # trailing comment 5:99\r\n"
            "   \t\r\n"
            "2 qid:2 2:-1#tight comment\r\n"
            "1 3:7\r\n"
            "# the end")
    X, y, qid = loads(text, query_id=True)
    np.testing.assert_array_equal(y, [3, 2, 1])
    np.testing.assert_array_equal(qid, [1, 2, 0])  # 0: no qid on that row
    np.testing.assert_array_equal(X.toarray(), [[0.5, 0, 0, 2], [0, -1, 0, 0],
                                                [0, 0, 7, 0]])
    X2, y2 = loads(text)  # qid tolerated without query_id
    assert (X2 != X).nnz == 0


def test_a_utf8_byte_order_mark_is_skipped(tmp_path):
    """Some Windows editors start a saved text file with a UTF-8 byte order mark: skipped
    (it was read as part of the first label), there and only there."""
    text = b"1 1:0.5 3:2\n-1 2:1\n"
    (tmp_path / "bom.svm").write_bytes(b"\xef\xbb\xbf" + text)
    (tmp_path / "plain.svm").write_bytes(text)
    X, y = load_svmlight(tmp_path / "bom.svm")
    Xp, yp = load_svmlight(tmp_path / "plain.svm")
    assert (X != Xp).nnz == 0 and X.shape == Xp.shape
    np.testing.assert_array_equal(y, yp)
    (tmp_path / "late.svm").write_bytes(text + b"\xef\xbb\xbf1 1:1\n")
    with pytest.raises(ValueError, match="line 3: invalid label"):
        load_svmlight(tmp_path / "late.svm")


def test_unsorted_indices_kept_in_file_order():
    X, _ = loads("1 5:1 2:2 9:3\n-1 1:4\n")
    np.testing.assert_array_equal(X.indices, [4, 1, 8, 0])
    np.testing.assert_array_equal(X.data, [1, 2, 3, 4])
    assert X.toarray()[0, 4] == 1 and X.toarray()[0, 1] == 2
    assert not X.has_sorted_indices


def test_empty_input():
    X, y = loads(b"")
    assert X.shape == (0, 0) and y.shape == (0,)
    X, y = loads(b"# only a comment\n\n", n_features=5)
    assert X.shape == (0, 5)


# ------------------------------------------------------------------- index handling

def test_n_features_widens_and_checks():
    X, _ = loads("1 1:1 3:1\n")
    assert X.shape == (1, 3)
    X, _ = loads("1 1:1 3:1\n", n_features=10)
    assert X.shape == (1, 10)
    with pytest.raises(ValueError, match=r"line 2: feature index 3 out of range "
                                         r"for n_features=2"):
        loads("1 1:1\n-1 3:1\n", n_features=2)


def test_a9a_test_split_needs_n_features():
    with bundled("a9a.t.xz").open("rb") as fh:
        X, y = load_svmlight(fh)
    assert X.shape == (16281, 122)  # feature 123 never occurs in the test split
    with bundled("a9a.t.xz").open("rb") as fh:
        X, y = load_svmlight(fh, n_features=123)
    assert X.shape == (16281, 123) and X.nnz == 225731
    assert int((y == 1).sum()) == 3846


def test_int32_indices_by_default():
    X, _ = loads("1 1:1 7:2\n")
    assert X.indices.dtype == np.int32 and X.indptr.dtype == np.int32


def test_int64_indices_beyond_int32_range():
    X, y = loads("1 2:0.5 3000000000:1.5\n-1 7:2\n")
    assert X.shape == (2, 3_000_000_000)
    assert X.indices.dtype == np.int64 and X.indptr.dtype == np.int64
    np.testing.assert_array_equal(X.indices, [1, 2_999_999_999, 6])
    np.testing.assert_array_equal(X.data, [0.5, 1.5, 2.0])
    assert X[0, 2_999_999_999] == 1.5


def test_index_zero_in_one_based_file_is_an_error():
    with pytest.raises(ValueError, match=r"line 2: index 0 in a one-based file"):
        loads("1 1:1\n1 0:1\n", zero_based=False)


def test_repeated_index_is_an_error():
    # Kept duplicates would make row norms from X.data disagree with X @ w.
    with pytest.raises(ValueError, match=r"line 3: repeated feature index"):
        loads("1 1:1 2:1\n1 3:1 1:1\n1 4:1 2:1 4:2\n")


# -------------------------------------------------------------------- bad lines

@pytest.mark.parametrize("bad,what,quoted", [
    ("1 2:abc", "invalid feature value", "2:abc"),
    ("1 2:1.0.0", "invalid feature value", "2:1.0.0"),
    ("1 2:", "invalid feature value", "2:"),
    ("1 2:0x10", "invalid feature value", "2:0x10"),   # float() refuses hex too
    ("1 2 3:4", "expected 'index:value'", "2"),
    ("1 -2:4", "invalid feature index", "-2:4"),
    ("1 1.5:4", "invalid feature index", "1.5:4"),
    ("1 x:4", "invalid feature index", "x:4"),
    ("1,2 3:4", "multi-label", "1,2"),
    ("one 3:4", "invalid label", "one"),
    ("1 qid:a 3:4", "invalid qid", "qid:a"),
    ("1 99999999999999999999:4", "feature index too large", "99999999999999999999:4"),
])
def test_malformed_line_names_line_number(bad, what, quoted):
    text = "# comment\n1 1:1\n\n" + bad + "\n-1 2:2\n"
    with pytest.raises(ValueError) as exc:
        loads(text)
    msg = str(exc.value)
    assert msg.startswith("line 4: ")
    assert what in msg and repr(quoted) in msg and repr(bad) in msg


def test_long_line_is_quoted_short():
    bad = "1 " + " ".join(f"{i}:1" for i in range(1, 200)) + " 200:zzz"
    with pytest.raises(ValueError, match=r"line 1: invalid feature value") as exc:
        loads(bad)
    assert len(str(exc.value)) < 200 and "..." in str(exc.value)


def test_text_mode_file_is_rejected():
    with pytest.raises(TypeError, match="binary mode"):
        load_svmlight(io.StringIO("1 1:1\n"))


def test_bad_arguments():
    with pytest.raises(ValueError, match="dtype"):
        loads("1 1:1\n", dtype=np.int32)
    with pytest.raises(ValueError, match="zero_based"):
        loads("1 1:1\n", zero_based="yes")
    with pytest.raises(ValueError, match="n_features"):
        loads("1 1:1\n", n_features=-1)
    assert loads("1 1:1\n", n_features=np.int64(4))[0].shape == (1, 4)
    with pytest.raises(ValueError, match="y must have shape"):
        dump_svmlight(sp.eye(3, format="csr"), [1, 2], io.BytesIO())


# ------------------------------------------------------------ agreement with sklearn

@pytest.mark.parametrize("name,n_features,shape", [
    ("heart_scale.xz", None, (270, 13)), ("a9a.xz", 123, (32561, 123))])
def test_matches_sklearn(name, n_features, shape):
    datasets = pytest.importorskip("sklearn.datasets")
    with bundled(name).open("rb") as fh:
        X, y = load_svmlight(fh, n_features=n_features)
    with bundled(name).open("rb") as raw, lzma.open(raw) as fh:
        Xs, ys = datasets.load_svmlight_file(fh, n_features=n_features)
    assert X.shape == Xs.shape == shape
    np.testing.assert_array_equal(X.indptr, Xs.indptr)
    np.testing.assert_array_equal(X.indices, Xs.indices)
    np.testing.assert_array_equal(bits(X.data), bits(Xs.data))
    np.testing.assert_array_equal(y, ys)
    assert X.has_sorted_indices


def test_bundled_file_round_trips_through_dump(tmp_path):
    with bundled("heart_scale.xz").open("rb") as fh:
        X, y = load_svmlight(fh)
    dump_svmlight(X, y, tmp_path / "h.xz")
    X2, y2 = load_svmlight(tmp_path / "h.xz")
    np.testing.assert_array_equal(bits(X2.data), bits(X.data))
    np.testing.assert_array_equal(X2.indices, X.indices)
    np.testing.assert_array_equal(y2, y)
