"""LIBSVM/svmlight I/O, the small real data sets bundled with the package, and the
location of larger corpora.

>>> from dualsolve.datasets import load, load_svmlight, dump_svmlight
>>> X, y = load("a9a")                      # CSR float64, y in {-1, +1}
>>> X, y = load_svmlight("w8a.xz")          # any LIBSVM file, compressed or not
"""
import bz2
import gzip
import lzma
import numbers
import os
import zlib
from collections import namedtuple
from importlib import resources
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from . import _svmlight

__all__ = ["load_svmlight", "dump_svmlight", "load", "list_datasets", "data_dir"]

_INT32_MAX = np.iinfo(np.int32).max

# Extension -> whole-buffer decompressor. Decompressing in one call is faster than
# streaming through a file object, and all three handle concatenated streams.
_DECOMPRESS = {".xz": lzma.decompress, ".gz": gzip.decompress, ".bz2": bz2.decompress}
_OPEN = {".xz": lzma.open, ".gz": gzip.open, ".bz2": bz2.open}
# Magic numbers, for file objects (which have no name to go by). None of them can start
# a valid svmlight file, so sniffing never misreads plain text.
_MAGIC = ((b"\xfd7zXZ\x00", lzma.decompress), (b"\x1f\x8b", gzip.decompress),
          (b"BZh", bz2.decompress))


def _compression(path):
    return os.path.splitext(os.fspath(path))[1].lower()


def _decompress(decompress, raw):
    # Each decompressor has its own errors (LZMAError, BadGzipFile, zlib.error, OSError,
    # EOFError or ValueError for a truncated stream); a damaged file is bad input like a
    # bad line, so one ValueError that says which format.
    try:
        return decompress(raw)
    except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error) as exc:
        name = {lzma.decompress: "xz", gzip.decompress: "gzip"}.get(decompress, "bzip2")
        raise ValueError(f"not valid {name} data: {exc}") from None


def _read_bytes(f):
    """Whole decompressed content of a path or binary file object, as bytes."""
    if isinstance(f, (str, bytes, os.PathLike)):
        with open(f, "rb") as fh:
            raw = fh.read()
        decompress = _DECOMPRESS.get(_compression(os.fsdecode(f)))
        return _decompress(decompress, raw) if decompress else raw
    if not hasattr(f, "read"):
        raise TypeError(f"f must be a path or a binary file object, got {type(f).__name__}")
    raw = f.read()
    if isinstance(raw, str):
        raise TypeError("f is a text-mode file; open it in binary mode ('rb')")
    raw = bytes(raw)  # the parser relies on bytes' trailing NUL (see _svmlight.pyx)
    for magic, decompress in _MAGIC:
        if raw.startswith(magic):
            return _decompress(decompress, raw)
    return raw


def _line_error(buf, lineno, message):
    return ValueError(f"line {lineno}: {message} "
                      f"(line: {_svmlight.line_text(buf, lineno)!r})")


def load_svmlight(f, n_features=None, dtype=np.float64, zero_based="auto",
                  query_id=False):
    """Read a LIBSVM / svmlight file into a CSR matrix and a label vector.

    Each line is ``<label> [qid:<int>] <index>:<value> ...``; ``#`` starts a comment and
    blank lines are skipped. CRLF line ends are accepted. Indices need not be sorted
    (they are kept in file order), but a row must not repeat an index.

    Parameters
    ----------
    f : str, os.PathLike or binary file object
        Paths ending in ``.xz``, ``.gz`` or ``.bz2`` are decompressed; other paths are
        read as plain text. A file object must be opened in binary mode; xz, gzip and
        bzip2 content is recognised by its magic number.
    n_features : int, optional
        Number of columns. By default, the largest index in the file plus one (after
        the base shift), so trailing all-zero features need ``n_features`` (e.g. a9a.t
        has 122 columns on its own and 123 with ``n_features=123``).
    dtype : {np.float64, np.float32}, default np.float64
        Dtype of ``X.data``. Values are parsed exactly as doubles, then cast.
    zero_based : bool or "auto", default "auto"
        Whether indices start at 0. ``"auto"`` reads them as one-based unless some index
        is 0, like LIBSVM files and scikit-learn.
    query_id : bool, default False
        Also return the ``qid`` of each row (0 where a row has none).

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        ``dtype`` data; int32 indices, or int64 if the shape or nnz exceeds int32.
        Explicit zeros in the file are kept as stored entries.
    y : ndarray of shape (n_samples,), float64
    qid : ndarray of shape (n_samples,), int64
        Only when ``query_id=True``.

    Raises
    ------
    ValueError
        On a malformed line (bad number, missing ``:``, negative or non-integer index,
        multi-label ``1,2``, a repeated index in a row, index 0 with
        ``zero_based=False``, an index beyond ``n_features``): the message names the
        1-based line number and quotes the line. NaN and inf values are not errors here.
        Also on damaged xz / gzip / bzip2 content.
    """
    dtype = np.dtype(dtype)
    if dtype not in (np.float64, np.float32):
        raise ValueError(f"dtype must be float64 or float32, got {dtype}")
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    if n_features is not None:
        if not isinstance(n_features, numbers.Integral) or n_features < 0:
            raise ValueError("n_features must be a non-negative integer, "
                             f"got {n_features!r}")
        n_features = int(n_features)

    buf = _read_bytes(f)
    (y, indptr, indices, data, qid, row_lines, min_index, max_index,
     all_sorted) = _svmlight.parse(buf, dtype == np.float32)

    def line_of_entry(k):
        return int(row_lines[np.searchsorted(indptr, k, side="right") - 1])

    if zero_based == "auto":
        zero_based = indices.size == 0 or min_index == 0
    if not zero_based:
        if indices.size and min_index == 0:
            raise _line_error(buf, line_of_entry(int(np.argmin(indices))),
                              "index 0 in a one-based file (pass zero_based=True)")
        indices -= 1
        max_index -= 1
    if not all_sorted:
        row = _svmlight.first_duplicate_row(indptr, indices)
        if row >= 0:
            # Duplicates are rejected rather than summed or kept: a repeated index is
            # a broken file, and kept duplicates would make row norms computed from
            # X.data disagree with X @ w.
            raise _line_error(buf, int(row_lines[row]), "repeated feature index")
    n_cols = max_index + 1 if indices.size else 0
    if n_features is not None:
        if n_cols > n_features:
            k = int(np.argmax(indices >= n_features))
            raise _line_error(buf, line_of_entry(k),
                              f"feature index {indices[k] + (0 if zero_based else 1)} "
                              f"out of range for n_features={n_features}")
        n_cols = n_features

    if max(n_cols, indices.size) <= _INT32_MAX:
        indices = indices.astype(np.int32)
        indptr = indptr.astype(np.int32)
    X = sp.csr_matrix((data, indices, indptr), shape=(y.size, n_cols), copy=False)
    if all_sorted:
        X.has_sorted_indices = True  # known from the parse; spares scipy a check
    return (X, y, qid) if query_id else (X, y)


def dump_svmlight(X, y, f, zero_based=False, comment=None, *, query_id=None):
    """Write ``X, y`` in LIBSVM / svmlight format; ``load_svmlight`` reads it back exactly.

    Values are written as the shortest decimal that round-trips (Python's ``repr``), so
    float64 data are reproduced bit for bit (float32 data too, when loaded with
    ``dtype=np.float32``). Sparse rows keep their stored entries in stored order,
    explicit zeros included; dense rows write their non-zeros.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    f : str, os.PathLike or binary file object
        Paths ending in ``.xz``, ``.gz`` or ``.bz2`` are compressed accordingly.
    zero_based : bool, default False
        Write indices from 0 instead of LIBSVM's 1.
    comment : str, optional
        Written first, each of its lines prefixed with ``# ``.
    query_id : array-like of shape (n_samples,), optional
        Integer ``qid`` written after each label.
    """
    if not sp.issparse(X):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
    X = sp.csr_matrix(X)  # no copy for CSR input; dense input keeps its non-zeros
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X, got {y.shape}")
    qid = None
    if query_id is not None:
        qid = np.ascontiguousarray(query_id, dtype=np.int64)
        if qid.shape != y.shape:
            raise ValueError(f"query_id must have shape {y.shape}, got {qid.shape}")

    head = b""
    if comment:
        head = "".join(f"# {line}\n" for line in str(comment).splitlines()).encode("utf-8")
    body = _svmlight.format_rows(
        np.ascontiguousarray(y), np.ascontiguousarray(X.indptr, dtype=np.int64),
        np.ascontiguousarray(X.indices, dtype=np.int64),
        np.ascontiguousarray(X.data, dtype=np.float64), 0 if zero_based else 1, qid)

    if isinstance(f, (str, bytes, os.PathLike)):
        opener = _OPEN.get(_compression(os.fsdecode(f)), open)
        with opener(f, "wb") as fh:
            fh.write(head)
            fh.write(body)
    else:
        f.write(head)
        f.write(body)


# ------------------------------------------------------------------ bundled data sets

DatasetInfo = namedtuple("DatasetInfo", "name task n_samples n_features description")

# name -> (file in dualsolve/data, reader, task, n_samples, n_features, description)
_DATASETS = {
    "a9a": ("a9a.xz", "svmlight", "classification", 32561, 123,
            "UCI Adult (census income > 50K), LIBSVM binarization, train split"),
    "a9a.t": ("a9a.t.xz", "svmlight", "classification", 16281, 123,
              "UCI Adult, LIBSVM binarization, test split"),
    "heart_scale": ("heart_scale.xz", "svmlight", "classification", 270, 13,
                    "Statlog heart disease, scaled to [-1, 1] (LIBSVM)"),
    "spambase": ("spambase.csv.xz", "spambase", "classification", 4601, 57,
                 "HP Labs spam e-mail, word/char frequencies (spam = +1)"),
    "magic04": ("magic04.data.xz", "magic04", "classification", 19020, 10,
                "MAGIC gamma telescope, gamma (g) = +1 vs hadron (h)"),
    "mammography": ("mammography.csv.xz", "mammography", "classification", 11183, 6,
                    "Woods et al. mammography microcalcifications, 2.3% positive"),
    "yacht": ("yacht.txt.xz", "regression", "regression", 308, 6,
              "Delft yacht hydrodynamics, residuary resistance"),
    "energy": ("energy.txt.xz", "regression", "regression", 768, 8,
               "Energy efficiency of buildings, heating load"),
    "concrete": ("concrete.txt.xz", "regression", "regression", 1030, 8,
                 "Concrete compressive strength"),
    "kin8nm": ("kin8nm.txt.xz", "regression", "regression", 8192, 8,
               "Forward kinematics of an 8-link robot arm"),
    "power-plant": ("power-plant.txt.xz", "regression", "regression", 9568, 4,
                    "Combined cycle power plant, net hourly electrical output"),
}
_ALIASES = {"a9a_test": "a9a.t"}


def list_datasets():
    """The data sets bundled with dualsolve.

    Returns
    -------
    list of DatasetInfo
        Named tuples ``(name, task, n_samples, n_features, description)``, task being
        ``"classification"`` (labels in {-1, +1}) or ``"regression"``.
    """
    return [DatasetInfo(name, task, n, d, desc)
            for name, (_, _, task, n, d, desc) in _DATASETS.items()]


def _data_file(filename):
    return resources.files("dualsolve").joinpath("data", filename)


def _read_text(filename):
    """Decompressed text of a bundled file, as a list of lines (CRLF-safe)."""
    return lzma.decompress(_data_file(filename).read_bytes()).decode("ascii").splitlines()


def _csv_with_class(lines, n_features):
    """Numeric columns and the trailing class-name column of comma-separated lines."""
    X = np.loadtxt(lines, dtype=np.float64, delimiter=",", usecols=range(n_features))
    cls = np.array([line.rsplit(",", 1)[1] for line in lines if line.strip()])
    return X, cls


def _binary_labels(column, positive, negative, filename):
    """Map a column of class names to +1 / -1; any other value is an error."""
    labels = np.where(column == positive, 1.0, -1.0)
    bad = (column != positive) & (column != negative)
    if bad.any():
        raise ValueError(f"{filename}: unexpected class {column[bad][0]!r}")
    return labels


def load(name, dense=False):
    """Load a bundled real data set.

    Parameters
    ----------
    name : str
        One of ``[d.name for d in list_datasets()]``: "a9a", "a9a.t" (alias
        "a9a_test"), "heart_scale", "spambase", "magic04", "mammography", "yacht",
        "energy", "concrete", "kin8nm", "power-plant".
    dense : bool, default False
        Return X as a C-contiguous ndarray instead of CSR.

    Returns
    -------
    X : scipy.sparse.csr_matrix or ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,), float64
        Classification labels are -1.0 / +1.0 (positive class as in
        ``list_datasets()``); regression targets are the raw values.

    Raises
    ------
    ValueError
        If ``name`` is not a bundled data set (the message lists the valid names).
    """
    key = _ALIASES.get(name, name)
    if key not in _DATASETS:
        raise ValueError(f"unknown data set {name!r}; valid names: "
                         f"{', '.join(list(_DATASETS) + list(_ALIASES))}")
    filename, reader, _, _, n_features, _ = _DATASETS[key]

    if reader == "svmlight":
        with _data_file(filename).open("rb") as fh:
            X, y = load_svmlight(fh, n_features=n_features)
    elif reader == "regression":
        # Whitespace-separated numbers, target in the last column.
        table = np.loadtxt(_read_text(filename), dtype=np.float64, ndmin=2)
        X, y = table[:, :-1], table[:, -1]
    elif reader == "spambase":
        # CSV with a header; 57 numeric columns, then "spam" / "nonspam".
        X, cls = _csv_with_class(_read_text(filename)[1:], n_features)
        y = _binary_labels(cls, "spam", "nonspam", filename)
    elif reader == "magic04":
        # No header; 10 numeric columns, then "g" (gamma) / "h" (hadron).
        X, cls = _csv_with_class(_read_text(filename), n_features)
        y = _binary_labels(cls, "g", "h", filename)
    else:  # mammography: no header, 6 numeric columns, then 0 / 1
        table = np.loadtxt(_read_text(filename), dtype=np.float64, delimiter=",")
        X = table[:, :-1]
        y = _binary_labels(table[:, -1], 1.0, 0.0, filename)

    if dense:
        X = X.toarray() if sp.issparse(X) else np.ascontiguousarray(X)
    elif not sp.issparse(X):
        X = sp.csr_matrix(X)
    return X, np.ascontiguousarray(y, dtype=np.float64)


# -------------------------------------------------------------------- larger corpora

def data_dir(required=False):
    """Directory of the larger corpora, from the ``DUALSOLVE_DATA`` environment variable.

    Parameters
    ----------
    required : bool, default False
        Raise instead of returning None when the variable is unset.

    Returns
    -------
    pathlib.Path or None
        None when ``DUALSOLVE_DATA`` is unset (or empty) and ``required`` is False.

    Raises
    ------
    FileNotFoundError
        If ``required`` and ``DUALSOLVE_DATA`` is unset, or if it is set to something
        that is not a directory (a misconfiguration is reported even when not required).
    """
    value = os.environ.get("DUALSOLVE_DATA", "")
    if not value:
        if required:
            raise FileNotFoundError(
                "no data directory: set the DUALSOLVE_DATA environment variable to the "
                "directory holding the larger corpora (see its README)")
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"DUALSOLVE_DATA={value!r} is not a directory")
    return path
