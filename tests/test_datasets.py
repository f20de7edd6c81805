"""Bundled real data sets and the DUALSOLVE_DATA directory.

Shapes and class counts are the published / verified numbers from the data README.
"""
from importlib import resources

import numpy as np
import pytest
import scipy.sparse as sp

from dualsolve import datasets

# name: (n_samples, n_features, positives (+1) or None for regression)
EXPECTED = {
    "a9a": (32561, 123, 7841),
    "a9a.t": (16281, 123, 3846),
    "heart_scale": (270, 13, 120),
    "spambase": (4601, 57, 1813),
    "magic04": (19020, 10, 12332),
    "mammography": (11183, 6, 260),
    "yacht": (308, 6, None),
    "energy": (768, 8, None),
    "concrete": (1030, 8, None),
    "kin8nm": (8192, 8, None),
    "power-plant": (9568, 4, None),
}

# (row index, features, target) from the raw files, to catch column or label mix-ups.
SPOT_ROWS = {
    "yacht": (0, [-2.3, 0.568, 4.78, 3.99, 3.17, 0.125], 0.11),
    "energy": (0, [0.98, 514.5, 294.0, 110.25, 7.0, 2, 0.0, 0], 15.55),
    "concrete": (0, [540.0, 0.0, 0.0, 162.0, 2.5, 1040.0, 676.0, 28], 79.99),
    "kin8nm": (0, [-1.5119208e-02, 3.6074091e-01, 4.6939777e-01, 1.3096745e+00,
                   9.8802387e-01, -2.5492554e-02, 6.6407094e-01, 6.2762996e-02],
               5.3652416e-01),
    "power-plant": (-1, [23.68, 51.3, 1011.86, 71.24], 451.67),
    "magic04": (0, [28.7967, 16.0021, 2.6449, 0.3918, 0.1982, 27.7004, 22.011, -8.2027,
                    40.092, 81.8828], 1.0),
    "mammography": (0, [0.23002, 5.072578, -0.276061, 0.832444, -0.377866, 0.480322],
                    -1.0),
    "heart_scale": (0, [0.708333, 1, 1, -0.320755, -0.105023, -1, 1, -0.419847, -1,
                        -0.225806, 0, 1, -1], 1.0),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shape_labels_and_class_counts(name):
    n, d, positives = EXPECTED[name]
    X, y = datasets.load(name)
    assert sp.issparse(X) and X.format == "csr" and X.dtype == np.float64
    assert X.shape == (n, d)
    assert y.shape == (n,) and y.dtype == np.float64
    assert np.isfinite(X.data).all() and np.isfinite(y).all()
    if positives is None:
        assert np.unique(y).size > 10  # a real-valued target, not labels
    else:
        assert set(np.unique(y)) == {-1.0, 1.0}
        assert int((y == 1).sum()) == positives


@pytest.mark.parametrize("name", sorted(SPOT_ROWS))
def test_spot_rows_match_raw_files(name):
    row, features, target = SPOT_ROWS[name]
    X, y = datasets.load(name, dense=True)
    assert isinstance(X, np.ndarray) and X.flags.c_contiguous
    np.testing.assert_array_equal(X[row], features)
    assert y[row] == target


def test_spambase_first_and_last_rows():
    X, y = datasets.load("spambase", dense=True)
    assert y[0] == 1.0 and y[-1] == -1.0  # "spam" first, "nonspam" last in the file
    np.testing.assert_array_equal(X[0, [1, 2, 51, 54, 55, 56]],
                                  [0.64, 0.64, 0.778, 3.756, 61.0, 278.0])
    np.testing.assert_array_equal(X[-1, [2, 12, 18, 54, 55, 56]],
                                  [0.65, 0.65, 4.6, 1.25, 5.0, 40.0])


def test_nnz_of_libsvm_sets():
    assert datasets.load("a9a")[0].nnz == 451592
    assert datasets.load("a9a.t")[0].nnz == 225731


def test_dense_equals_sparse():
    Xs, ys = datasets.load("magic04")
    Xd, yd = datasets.load("magic04", dense=True)
    np.testing.assert_array_equal(Xs.toarray(), Xd)
    np.testing.assert_array_equal(ys, yd)


def test_a9a_test_alias():
    X1, y1 = datasets.load("a9a_test")
    X2, y2 = datasets.load("a9a.t")
    assert (X1 != X2).nnz == 0 and np.array_equal(y1, y2)


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError, match="unknown data set 'rcv1'") as exc:
        datasets.load("rcv1")
    for name in EXPECTED:
        assert name in str(exc.value)


def test_list_datasets_matches_loaders():
    infos = datasets.list_datasets()
    assert sorted(info.name for info in infos) == sorted(EXPECTED)
    for info in infos:
        n, d, positives = EXPECTED[info.name]
        assert (info.n_samples, info.n_features) == (n, d)
        assert info.task == ("regression" if positives is None else "classification")
        assert info.description and "\n" not in info.description


def test_bundled_files_are_small():
    files = [f for f in resources.files("dualsolve").joinpath("data").iterdir()
             if f.name.endswith(".xz")]
    assert len(files) == 11
    assert sum(len(f.read_bytes()) for f in files) < 3_000_000


def test_bundled_files_identical_to_corpus_copies():
    # Only where the larger corpus directory is configured.
    root = datasets.data_dir()
    if root is None:
        pytest.skip("DUALSOLVE_DATA not set")
    sources = {"a9a.xz": "libsvm", "a9a.t.xz": "libsvm", "heart_scale.xz": "libsvm",
               "spambase.csv.xz": "uci_classification",
               "magic04.data.xz": "uci_classification",
               "mammography.csv.xz": "imbalanced"}
    for stem in ("yacht", "energy", "concrete", "kin8nm", "power-plant"):
        sources[stem + ".txt.xz"] = "uci_regression"
    for name, folder in sources.items():
        bundled = resources.files("dualsolve").joinpath("data", name).read_bytes()
        assert bundled == (root / folder / name).read_bytes(), name


# ------------------------------------------------------------------------ data_dir

def test_data_dir_unset(monkeypatch):
    monkeypatch.delenv("DUALSOLVE_DATA", raising=False)
    assert datasets.data_dir() is None
    with pytest.raises(FileNotFoundError, match="DUALSOLVE_DATA"):
        datasets.data_dir(required=True)


def test_data_dir_set(monkeypatch, tmp_path):
    monkeypatch.setenv("DUALSOLVE_DATA", str(tmp_path))
    assert datasets.data_dir() == tmp_path
    assert datasets.data_dir(required=True) == tmp_path


def test_data_dir_misconfigured(monkeypatch, tmp_path):
    monkeypatch.setenv("DUALSOLVE_DATA", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="DUALSOLVE_DATA"):
        datasets.data_dir()
