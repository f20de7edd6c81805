"""Fuzz ``dualsolve.load_svmlight`` with atheris (coverage-guided libFuzzer for Python).

    python tests/fuzz/fuzz_svmlight.py [corpus_dir ...] [libFuzzer flags, e.g. -atheris_runs=1000000]

An input is two option bytes and a file: the first picks how the file reaches the loader
(a BytesIO, a plain path, a path ending .xz/.gz/.bz2 holding the compressed file, or the
raw bytes under a compressed suffix or sniffed by magic) and the second the options
(zero_based, dtype, n_features, query_id). Outcomes:

- ValueError: expected (a malformed file);
- success: X must be a valid CSR (indptr from 0, monotone, ending at nnz; indices in range;
  no index twice in a row; the sorted flag true), y and qid one per row, and everything
  equal to a small pure-Python reading of the format (the oracle, which also gives the
  fuzzer coverage of the grammar: the C parser itself is not instrumented);
- anything else (another exception, a crash, a hang, a runaway allocation) is a bug.

Seeds (small valid files, also from the bundled heart_scale data) are written into the
first corpus directory (a temporary one when none is given). ``check(data)`` is the whole
property, importable without atheris (tests/test_fuzz_smoke.py).
"""
import bz2
import gzip
import io
import lzma
import atexit
import os
import re
import shutil
import sys
import tempfile
import zlib

import numpy as np
import scipy.sparse as sp

import dualsolve
from _common import scratch_dir

INDEX_LIMIT = (2 ** 63 - 10) // 10          # the parser's int64 overflow guard
NUMBER = re.compile(rb"[0-9+\-.eEaAfFiInNtTyY]+")   # strtod's alphabet in the parser
INTEGER = re.compile(rb"[+-]?[0-9]+")
COMPRESS = {".xz": lzma.compress, ".gz": gzip.compress, ".bz2": bz2.compress}
SUFFIXES = tuple(COMPRESS)
MAGIC = {".xz": b"\xfd7zXZ\x00", ".gz": b"\x1f\x8b", ".bz2": b"BZh"}
MAX_INFLATED = 1 << 24                      # a bomb bigger than this is skipped, not parsed

_tmp = tempfile.mkdtemp(prefix="fuzz_svmlight_", dir=scratch_dir())
atexit.register(shutil.rmtree, _tmp, True)


def _options(b):
    return dict(zero_based=("auto", True, False)[b % 3],
                dtype=np.float32 if b & 4 else np.float64,
                n_features=(None, 5, 1000)[(b >> 3) % 3], query_id=bool(b & 32))


def _write(name, raw):
    path = os.path.join(_tmp, name)
    with open(path, "wb") as f:
        f.write(raw)
    return path


def _bomb(raw, suffix):
    """True when raw's first stream inflates past MAX_INFLATED: a legitimate (huge) file,
    too slow for a fuzz loop, so skipped."""
    try:
        d = zlib.decompressobj(wbits=31) if suffix == ".gz" else (
            lzma.LZMADecompressor() if suffix == ".xz" else bz2.BZ2Decompressor())
        return len(d.decompress(raw, MAX_INFLATED)) >= MAX_INFLATED
    except Exception:
        return False


def _source(mode, body):
    """(the argument for load_svmlight, the plain text it holds or None when that is not
    known here); (None, None) to skip a decompression bomb. ``mode`` picks: a BytesIO, a
    plain path, the body compressed (path with suffix or BytesIO sniffed by magic), or
    the body itself as compressed data (path with suffix or BytesIO behind the magic)."""
    kind, suffix = (mode & 7) % 6, SUFFIXES[(mode >> 3) % 3]
    if kind == 0:
        magic = [s for s in SUFFIXES if body.startswith(MAGIC[s])]
        if magic and _bomb(body, magic[0]):
            return None, None
        return io.BytesIO(body), None if magic else body
    if kind == 1:
        return _write("plain.txt", body), body
    if kind in (2, 3):
        raw = COMPRESS[suffix](body)
        return (_write("file" + suffix, raw) if kind == 2 else io.BytesIO(raw)), body
    raw = body if kind == 4 else MAGIC[suffix] + body
    if _bomb(raw, suffix):
        return None, None
    return (_write("raw" + suffix, raw) if kind == 4 else io.BytesIO(raw)), None


def check(data):
    """The property for one input (raises AssertionError or the unexpected exception)."""
    if len(data) < 2:
        data = bytes(2 - len(data)) + data
    src, text = _source(data[0], data[2:])
    if src is None:
        return
    opts = _options(data[1])
    try:
        out = dualsolve.load_svmlight(src, **opts)
    except ValueError as exc:
        if text is not None:
            want = reference(text, **opts)
            assert isinstance(want, str), f"rejected a file the reference reads ({exc})"
        return
    X, y = out[0], out[1]
    _check_csr(X, y, opts)
    if opts["query_id"]:
        assert out[2].dtype == np.int64 and out[2].shape == y.shape
    if text is None:                        # decompressed here by the loader only
        return
    want = reference(text, **opts)
    assert not isinstance(want, str), f"accepted a file the reference rejects ({want})"
    rows, labels, qids, n_cols = want
    assert X.shape == (len(rows), n_cols), (X.shape, len(rows), n_cols)
    assert np.array_equal(y, np.array(labels, dtype=np.float64), equal_nan=True)
    assert y.tobytes() == np.array(labels, dtype=np.float64).tobytes()   # -0.0, NaN bits
    for i, row in enumerate(rows):
        s, e = X.indptr[i], X.indptr[i + 1]
        assert X.indices[s:e].tolist() == [k for k, _ in row], i
        with np.errstate(over="ignore"):     # float32 overflow is inf, as in the parser
            vals = np.array([v for _, v in row], dtype=opts["dtype"])
        assert X.data[s:e].tobytes() == vals.tobytes(), (i, X.data[s:e], vals)
    if opts["query_id"]:
        assert out[2].tolist() == qids


def _check_csr(X, y, opts):
    assert isinstance(X, sp.csr_matrix) and X.dtype == opts["dtype"]
    n, d = X.shape
    assert y.dtype == np.float64 and y.shape == (n,)
    ip, ind = X.indptr, X.indices
    assert ip.dtype == ind.dtype and ind.dtype in (np.int32, np.int64)
    assert ip.shape == (n + 1,) and ip[0] == 0 and (np.diff(ip) >= 0).all()
    assert ip[-1] == ind.shape[0] == X.data.shape[0]
    assert ind.size == 0 or (ind.min() >= 0 and ind.max() < d)
    if opts["n_features"] is not None:
        assert d == opts["n_features"]
    row = np.repeat(np.arange(n), np.diff(ip))
    order = np.lexsort((ind, row))
    r, c = row[order], ind[order]
    assert not ((r[1:] == r[:-1]) & (c[1:] == c[:-1])).any(), "index twice in a row"
    if X.has_sorted_indices:                # the loader's claim, or scipy's own check
        same_row = row[1:] == row[:-1]
        assert (np.diff(ind.astype(np.int64))[same_row] > 0).all(), "unsorted row flagged sorted"


def reference(text, zero_based="auto", dtype=np.float64, n_features=None, query_id=False):
    """The format in plain Python: (rows of (index, value), labels, qids, n_cols), or an
    error string. Values go through float(), which the parser must match bit for bit."""
    rows, labels, qids = [], [], []
    for line in text.split(b"\n"):
        toks = line.split(b"#", 1)[0].split()    # bytes.split(): the parser's blanks
        if not toks:
            continue
        label = _number(toks[0])
        if label is None:
            return "bad label"
        row, qid = [], 0
        for tok in toks[1:]:
            if tok.startswith(b"qid:"):
                q = tok[4:]
                if not INTEGER.fullmatch(q) or abs(int(q)) // 10 > INDEX_LIMIT:
                    return "bad qid"
                qid = int(q)
                continue
            idx, colon, val = tok.partition(b":")
            if not colon or not idx.isdigit():
                return "bad index"
            if int(idx) // 10 > INDEX_LIMIT:
                return "index too large"
            v = _number(val)
            if v is None:
                return "bad value"
            row.append((int(idx), v))
        rows.append(row)
        labels.append(label)
        qids.append(qid)
    flat = [k for row in rows for k, _ in row]
    if zero_based == "auto":
        zero_based = not flat or min(flat) == 0
    if not zero_based:
        if flat and min(flat) == 0:
            return "index 0 in a one-based file"
        rows = [[(k - 1, v) for k, v in row] for row in rows]
    if any(len({k for k, _ in row}) != len(row) for row in rows):
        return "repeated index"
    n_cols = max((k for row in rows for k, _ in row), default=-1) + 1
    if n_features is not None:
        if n_cols > n_features:
            return "index beyond n_features"
        n_cols = n_features
    return rows, labels, qids, n_cols


def _number(tok):
    if not NUMBER.fullmatch(tok):
        return None
    try:
        return float(tok)
    except ValueError:
        return None


def seeds():
    """Small valid files, each behind a few option/mode prefixes."""
    X, y = dualsolve.datasets.load("heart_scale")
    buf = io.BytesIO()
    dualsolve.dump_svmlight(X[:6], y[:6], buf, comment="heart_scale, six rows")
    bodies = [buf.getvalue(),
              b"1 1:0.5 3:-2 7:1e-3\n-1 2:1\n",
              b"# comment\n\n+1 qid:3 1:1 2:2 # tail\r\n-1 qid:-4 3:nan 4:inf\n",
              b"0 0:1 5:2.5\n1.5 3:1E+22 4:-0.0\n2 1:1.7976931348623157e308 2:4.9e-324\n",
              b"-1 10:1 2:3 5:7\n1\n\n",
              b"1 1:123456789012345678901 2:.5 3:5. 4:+1 5:-infinity\n"]
    out = []
    for body in bodies:
        for mode, opt in ((0, 0), (1, 1), (2, 0), (2 | 8, 2), (3 | 16, 4), (4, 0), (5 | 8, 32),
                          (4 | 16, 0)):
            out.append(bytes([mode, opt]) + body)
    return out


# libFuzzer dictionary: the tokens of the format and the numbers at the parser's limits
TOKENS = [b"qid:", b"nan", b"-inf", b"infinity", b"e+", b"e-308", b"E22", b"e23", b"1.",
          b".5", b"\r\n", b"\n#", b" # ", b":", b"1,2", b"9007199254740993",
          b"922337203685477579", b"9223372036854775799", b"9223372036854775808",
          b"123456789012345678901234567890", b"4.9406564584124654e-324",
          b"2.4703282292062328e-324",
          b"\xfd7zXZ\x00", b"\x1f\x8b", b"BZh"]


def main(argv):
    from _common import fuzz
    import dualsolve.datasets
    if not any(a.startswith("-dict=") for a in argv):
        path = os.path.join(_tmp, "svmlight.dict")
        with open(path, "w") as f:
            for t in TOKENS:                # every byte escaped: "\xNN..."
                f.write('"' + "".join("\\x%02x" % c for c in t) + '"\n')
        argv = argv + [f"-dict={path}"]
    fuzz(argv, check, seeds(), [dualsolve.datasets, sys.modules[__name__]], "fuzz_svmlight")


if __name__ == "__main__":
    main(sys.argv)
