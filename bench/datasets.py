"""Large sparse benchmark problems built from the raw corpora in ``$DUALSOLVE_DATA``.

Problems (binary, labels in {-1, +1}, rows L2-normalised by TF-IDF unless noted):

``news20``
    20 Newsgroups "bydate", all 18,846 documents (11,314 train + 7,532 test),
    ``TfidfVectorizer(ngram_range=(1, 2))`` fitted on all documents:
    18,846 x 1,664,476, ~410 nnz/row.  y = +1 for the 9 ``comp.*`` and ``sci.*``
    groups, -1 for the other 11.  An analogue of LIBSVM's news20.binary.
``news20.multi``
    The same 20 Newsgroups bydate documents with their 20 classes (y = 0..19, the sorted
    group names), ``TfidfVectorizer(ngram_range=(1, 2))`` fitted on the 11,314 training
    documents only (the test documents are transformed with it): a generalisation
    benchmark for one-vs-rest, ``bench/multiclass.py``.
``reuters``
    Reuters-21578, ModApte split (TOPICS="YES", LEWISSPLIT in {TRAIN, TEST}):
    9,603 + 3,299 = 12,902 documents, text = TITLE + BODY, unigram
    ``TfidfVectorizer(min_df=2)``: 12,902 x 19,369, ~74 nnz/row.  y = +1 if
    ``earn`` is one of the TOPICS (3,964 documents).  An rcv1.binary analogue.
``imdb``
    IMDB Large Movie Review Dataset v1.0 (Maas et al. 2011), all 50,000 labeled
    reviews (25,000 train + 25,000 test, ``aclImdb/{train,test}/{pos,neg}/``),
    ``TfidfVectorizer(ngram_range=(1, 2))`` fitted on all of them (the raw text,
    ``<br />`` tags included, as for news20).  y = +1 for ``pos`` (25,000).
``a9a``, ``w8a``, ``a9a.t``
    The LIBSVM files as shipped (no normalisation), 123 / 300 features.

API::

    X, y = load("news20")                       # CSR float64, y float64 in {-1, +1}
    X, y = load("news20", split="train")        # bydate / ModApte train rows only
    X, y, is_train = load("reuters", return_split=True)

The vectorizer is fitted on all documents (train + test): these are optimisation
benchmarks, not generalisation experiments.

Built problems are cached as ``<name>.X.npz`` (``scipy.sparse.save_npz``) and
``<name>.y.npz`` (``y``, ``is_train``) in ``$DUALSOLVE_CACHE`` if set, else in
``bench/cache/`` next to this file.  ``python bench/datasets.py news20 reuters``
builds (or loads) and prints shape, nnz/row, positives and build time;
``--rebuild`` ignores the cache.
"""

import argparse
import html
import lzma
import os
import re
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

NAMES = ("news20", "news20.multi", "reuters", "imdb", "a9a", "a9a.t", "w8a")


def data_dir():
    """The raw data directory, from the environment variable DUALSOLVE_DATA."""
    d = os.environ.get("DUALSOLVE_DATA")
    if not d:
        raise RuntimeError(
            "set DUALSOLVE_DATA to the directory holding text/ and libsvm/ "
            "(see the data README)")
    return Path(d)


def cache_dir():
    """Cache directory: $DUALSOLVE_CACHE, else bench/cache/ next to this file."""
    d = os.environ.get("DUALSOLVE_CACHE")
    p = Path(d) if d else Path(__file__).resolve().parent / "cache"
    p.mkdir(parents=True, exist_ok=True)
    return p


def _canonical(X):
    """CSR float64 with sorted, summed indices (int32 where possible)."""
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sum_duplicates()
    X.sort_indices()
    return X


def _extract(tar_path, dest, members=None):
    with tarfile.open(tar_path, "r:xz") as tf:
        sel = [m for m in tf.getmembers() if members is None or members(m.name)]
        try:
            tf.extractall(dest, members=sel, filter="data")
        except TypeError:  # Python without extraction filters
            tf.extractall(dest, members=sel)


# ---------------------------------------------------------------- news20 ---

def _news20_documents():
    """(texts, group names, is_train) of the bydate train and test parts."""
    from sklearn.datasets import load_files

    texts, groups, is_train = [], [], []
    with tempfile.TemporaryDirectory(prefix="dualsolve-20news-") as tmp:
        _extract(data_dir() / "text" / "20news-bydate.tar.xz", tmp)
        for part in ("train", "test"):
            b = load_files(os.path.join(tmp, f"20news-bydate-{part}"),
                           encoding="latin1", shuffle=False)
            texts.extend(b.data)
            groups.append(np.asarray(b.target_names)[b.target])
            is_train.append(np.full(len(b.data), part == "train"))
    return texts, np.concatenate(groups), np.concatenate(is_train)


def _build_news20_multi():
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts, groups, is_train = _news20_documents()
    vec = TfidfVectorizer(ngram_range=(1, 2), dtype=np.float64)
    vec.fit([t for t, tr in zip(texts, is_train) if tr])
    X = vec.transform(texts)
    y = np.searchsorted(np.unique(groups), groups).astype(np.float64)
    return _canonical(X), y, is_train


def _build_news20():
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts, groups, is_train = _news20_documents()
    pos = np.char.startswith(groups, "comp.") | np.char.startswith(groups, "sci.")
    vec = TfidfVectorizer(ngram_range=(1, 2), dtype=np.float64)
    X = vec.fit_transform(texts)
    return _canonical(X), np.where(pos, 1.0, -1.0), is_train


# --------------------------------------------------------------- reuters ---

_REC = re.compile(r"<REUTERS\b([^>]*)>(.*?)</REUTERS>", re.S)
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_TOPICS = re.compile(r"<TOPICS>(.*?)</TOPICS>", re.S)
_D = re.compile(r"<D>(.*?)</D>", re.S)
_TITLE = re.compile(r"<TITLE>(.*?)</TITLE>", re.S)
_BODY = re.compile(r"<BODY>(.*?)</BODY>", re.S)


def _reuters_records(sgm_text):
    """Yield (attrs, topics, title, body) for each <REUTERS> record."""
    for m in _REC.finditer(sgm_text):
        attrs = dict(_ATTR.findall(m.group(1)))
        inner = m.group(2)
        t = _TOPICS.search(inner)
        topics = _D.findall(t.group(1)) if t else []
        title = _TITLE.search(inner)
        body = _BODY.search(inner)
        yield (attrs, topics,
               html.unescape(title.group(1)) if title else "",
               html.unescape(body.group(1)) if body else "")


def _build_reuters():
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts, labels, is_train = [], [], []
    with tempfile.TemporaryDirectory(prefix="dualsolve-reuters-") as tmp:
        _extract(data_dir() / "text" / "reuters21578.tar.xz", tmp,
                 members=lambda n: n.endswith(".sgm"))
        files = sorted(Path(tmp).rglob("reut2-*.sgm"))
        if len(files) != 22:
            raise RuntimeError(f"expected 22 reut2-*.sgm files, found {len(files)}")
        for f in files:
            # reut2-017.sgm has a few non-ASCII bytes: latin-1 reads every byte.
            for attrs, topics, title, body in _reuters_records(
                    f.read_text(encoding="latin-1")):
                split = attrs.get("LEWISSPLIT")
                if attrs.get("TOPICS") != "YES" or split not in ("TRAIN", "TEST"):
                    continue
                texts.append(title + "\n" + body)
                labels.append(1.0 if "earn" in topics else -1.0)
                is_train.append(split == "TRAIN")
    vec = TfidfVectorizer(min_df=2, dtype=np.float64)
    X = vec.fit_transform(texts)
    return _canonical(X), np.asarray(labels), np.asarray(is_train)


# ------------------------------------------------------------------ imdb ---

def _build_imdb():
    from sklearn.datasets import load_files
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts, labels, is_train = [], [], []
    with tempfile.TemporaryDirectory(prefix="dualsolve-imdb-") as tmp:
        _extract(data_dir() / "text" / "aclImdb_labeled.tar.xz", tmp,
                 members=lambda n: n.endswith(".txt"))
        for part in ("train", "test"):
            b = load_files(os.path.join(tmp, "aclImdb", part), categories=["neg", "pos"],
                           encoding="utf-8", decode_error="replace", shuffle=False)
            if len(b.data) != 25000:
                raise RuntimeError(f"expected 25,000 {part} reviews, found {len(b.data)}")
            texts.extend(b.data)
            labels.append(np.where(np.asarray(b.target_names)[b.target] == "pos", 1.0, -1.0))
            is_train.append(np.full(len(b.data), part == "train"))
    vec = TfidfVectorizer(ngram_range=(1, 2), dtype=np.float64)
    X = vec.fit_transform(texts)
    return _canonical(X), np.concatenate(labels), np.concatenate(is_train)


# ---------------------------------------------------------------- libsvm ---

_LIBSVM = {"a9a": ("a9a.xz", 123), "a9a.t": ("a9a.t.xz", 123), "w8a": ("w8a.xz", 300)}


def _build_libsvm(name):
    from sklearn.datasets import load_svmlight_file

    fname, d = _LIBSVM[name]
    with lzma.open(data_dir() / "libsvm" / fname, "rb") as f:
        X, y = load_svmlight_file(f, n_features=d, dtype=np.float64)
    y = np.where(y > 0, 1.0, -1.0)
    return _canonical(X), y, np.full(X.shape[0], not name.endswith(".t"))


_BUILDERS = {"news20": _build_news20, "news20.multi": _build_news20_multi,
             "reuters": _build_reuters, "imdb": _build_imdb}


def build(name):
    """Build a problem from the raw data (no cache). Returns (X, y, is_train)."""
    if name in _BUILDERS:
        return _BUILDERS[name]()
    if name in _LIBSVM:
        return _build_libsvm(name)
    raise ValueError(f"unknown dataset {name!r}; choose from {NAMES}")


def _paths(name):
    c = cache_dir()
    return c / f"{name}.X.npz", c / f"{name}.y.npz"


def load(name, split="all", return_split=False, rebuild=False):
    """Load a benchmark problem, building and caching it on first use.

    Parameters
    ----------
    name : one of NAMES.
    split : "all" (default), "train" or "test" (bydate / ModApte / LIBSVM split).
    return_split : also return the boolean ``is_train`` mask of the returned rows.
    rebuild : ignore and overwrite the cache.

    Returns
    -------
    X : scipy.sparse.csr_matrix, float64, sorted indices.
    y : ndarray float64 in {-1, +1}.
    (is_train : ndarray bool, if return_split.)
    """
    if split not in ("all", "train", "test"):
        raise ValueError(f"split must be 'all', 'train' or 'test', got {split!r}")
    px, py = _paths(name)
    if rebuild or not (px.exists() and py.exists()):
        X, y, is_train = build(name)
        sp.save_npz(px, X, compressed=False)
        np.savez(py, y=y, is_train=is_train)
    else:
        X = sp.load_npz(px).tocsr()
        with np.load(py) as z:
            y, is_train = z["y"], z["is_train"]
    if split != "all":
        rows = is_train if split == "train" else ~is_train
        X, y, is_train = X[rows], y[rows], is_train[rows]
    return (X, y, is_train) if return_split else (X, y)


def describe(name, X, y, is_train=None):
    s = (f"{name}: {X.shape[0]:,} x {X.shape[1]:,}, nnz {X.nnz:,} "
         f"({X.nnz / X.shape[0]:.1f}/row), positives {int((y > 0).sum()):,}")
    if is_train is not None:
        s += (f", train {int(is_train.sum()):,} (pos {int((y[is_train] > 0).sum()):,})"
              f" / test {int((~is_train).sum()):,}")
    return s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", default=["news20", "reuters"],
                    help=f"datasets to build, from {NAMES}")
    ap.add_argument("--rebuild", action="store_true", help="ignore the cache")
    args = ap.parse_args(argv)
    for name in args.names:
        cached = not args.rebuild and all(p.exists() for p in _paths(name))
        t0 = time.perf_counter()
        X, y, is_train = load(name, return_split=True, rebuild=args.rebuild)
        dt = time.perf_counter() - t0
        print(describe(name, X, y, is_train)
              + f"; {'loaded from cache' if cached else 'built'} in {dt:.1f} s")


if __name__ == "__main__":
    main()
