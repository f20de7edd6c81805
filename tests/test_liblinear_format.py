"""liblinear model files (dualsolve/_liblinear_file.py), multi-class Models and
predict_proba: our models written in liblinear's format predict identically in liblinear
(liblinear-official's load_model + predict), liblinear's models read into ours predict
identically here, the round trip is exact, and a damaged file is a one-line ValueError.

Reference for probabilities: liblinear's own predict_probability (``predict -b 1``)."""
import csv
import lzma
import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds

TOL = 1e-12
pytestmark = pytest.mark.filterwarnings("ignore::dualsolve.ConvergenceWarning")


@pytest.fixture(scope="module")
def llu():
    return pytest.importorskip("liblinear.liblinearutil")


@pytest.fixture(scope="module")
def a9a_split():
    Xtr, ytr = ds.datasets.load("a9a")
    Xte, yte = ds.datasets.load("a9a.t")
    return Xtr, ytr, Xte, yte


def uci(name):
    """A UCI classification CSV of $DUALSOLVE_DATA (last column: the class name), as CSR
    float64 with columns scaled to [0, 1] by their maximum, and integer labels 1..k in
    the sorted order of the class names."""
    root = os.environ.get("DUALSOLVE_DATA")
    path = os.path.join(root or "", "uci_classification", f"{name}.csv.xz")
    if not root or not os.path.exists(path):
        pytest.skip(f"{name} needs DUALSOLVE_DATA (uci_classification/{name}.csv.xz)")
    with lzma.open(path, "rt") as fh:
        rows = list(csv.reader(fh))[1:]
    X = np.array([r[:-1] for r in rows], dtype=np.float64)
    names = sorted({r[-1] for r in rows})
    y = np.array([names.index(r[-1]) + 1 for r in rows], dtype=np.float64)
    scale = np.abs(X).max(axis=0)
    scale[scale == 0] = 1.0
    return sp.csr_matrix(X / scale), y


def ll_train(llu, X, y, options):
    """liblinear-official's train, quiet (its dual solvers may print a warning)."""
    return llu.train(y, X, options + " -q")


def ll_predict(llu, model, X, y, options=""):
    labels, _, values = llu.predict(y, X, model, options + " -q")
    return np.array(labels), np.array(values)


def ovr(X, y, fit_intercept, loss="logistic"):
    """A one-vs-rest multi-class Model built from train_sdca's binary models (the package's
    multi-class trainer is another issue; this stacks k binary solves)."""
    classes = np.unique(y)
    coef, intercept = [], []
    for c in classes:
        m = ds.train_sdca(X, np.where(y == c, 1.0, -1.0), loss=loss, tol=1e-10,
                          fit_intercept=fit_intercept)
        coef.append(m.coef)
        intercept.append(m.intercept)
    return ds.Model(np.array(coef), np.array(intercept), solver="sdca",
                    params=dict(loss=loss), classes=classes, stop_reason="converged")


@pytest.fixture(scope="module")
def heart3():
    """heart_scale with three classes: absence (0), presence in patients aged below the
    median (1) and above it (2) (column 0 is the scaled age)."""
    X, y = ds.datasets.load("heart_scale")
    age = X[:, 0].toarray().ravel()
    return X, np.where(y < 0, 0.0, np.where(age < np.median(age), 1.0, 2.0))


def label_index(ll_model, classes):
    """For each of liblinear's labels (its order), the column of ``classes``."""
    return [int(np.flatnonzero(classes == v)[0]) for v in ll_model.get_labels()]


def assert_same_as_liblinear(llu, ours, ll_model, X, y):
    """Labels equal on every row, decision values within TOL, probabilities too (for
    logistic models); returns (rows, max decision difference)."""
    labels, dec = ll_predict(llu, ll_model, X, y)
    pred = ours.predict(X)
    np.testing.assert_array_equal(pred, labels)
    scores = ours.decision_function(X)
    if ours.classes is None:
        expected = scores[:, None]
    elif scores.ndim == 1:      # liblinear's one column scores its label[0]
        sign = 1.0 if ll_model.get_labels()[0] == ours.classes[1] else -1.0
        expected = sign * scores[:, None]
    else:
        expected = scores[:, label_index(ll_model, ours.classes)]
    diff = float(np.max(np.abs(dec - expected)))
    assert diff <= TOL, diff
    if ours.params.get("loss") == "logistic":
        _, prob = ll_predict(llu, ll_model, X, y, "-b 1")
        ours_p = ours.predict_proba(X)[:, label_index(ll_model, ours.classes)]
        assert np.max(np.abs(prob - ours_p)) <= TOL
    return X.shape[0], diff


# --------------------------------------------------------------------------------------
# (a) our models, written as liblinear files, in liblinear


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
@pytest.mark.parametrize("bias", [False, True])
def test_ours_predict_the_same_in_liblinear(loss, bias, llu, a9a_split, tmp_path):
    Xtr, ytr, Xte, yte = a9a_split
    m = ds.train_sdca(Xtr, ytr, loss=loss, fit_intercept=bias, tol=1e-6)
    assert (m.intercept != 0.0) == bias
    path = tmp_path / "a9a.model"
    m.save(path, format="liblinear")
    head = path.read_text().splitlines()[:6]
    stype = {"logistic": "L2R_LR", "squared_hinge": "L2R_L2LOSS_SVC_DUAL"}[loss]
    assert head[:5] == [f"solver_type {stype}", "nr_class 2", "label 1 -1", "nr_feature 123",
                        f"bias {1 if bias else -1}"]
    ll = llu.load_model(str(path))
    rows, diff = assert_same_as_liblinear(llu, m, ll, Xte, yte)
    assert rows == 16281


def test_multiclass_ours_predict_the_same_in_liblinear(llu, heart3, tmp_path):
    X, y = heart3
    for bias in (False, True):
        m = ovr(X, y, bias)
        m.save(tmp_path / "h3.model", format="liblinear")
        text = (tmp_path / "h3.model").read_text().splitlines()
        assert text[1:3] == ["nr_class 3", "label 0 1 2"]
        assert len(text) == 6 + 13 + bias and all(len(r.split()) == 3 for r in text[6:])
        ll = llu.load_model(str(tmp_path / "h3.model"))
        assert assert_same_as_liblinear(llu, m, ll, X, y)[0] == 270


def test_regression_and_nominal_types_predict_the_same(llu, heart, tmp_path):
    X, y = heart
    m = ds.train_sdca(X, y * 2.0 + 0.5, loss="squared", fit_intercept=True, tol=1e-10)
    m.save(tmp_path / "r.model", format="liblinear")
    assert (tmp_path / "r.model").read_text().startswith(
        "solver_type L2R_L2LOSS_SVR_DUAL\nnr_class 2\nnr_feature 13\nbias 1\nw\n")
    ll = llu.load_model(str(tmp_path / "r.model"))
    labels, _ = ll_predict(llu, ll, X, y)
    assert np.max(np.abs(labels - m.predict(X))) <= TOL
    # smooth_hinge: a nominal L1-loss SVC type; the same predictions, no probabilities
    m = ds.train_sdca(X, y, loss="smooth_hinge", fit_intercept=True)
    m.save(tmp_path / "s.model", format="liblinear")
    assert (tmp_path / "s.model").read_text().startswith("solver_type L2R_L1LOSS_SVC_DUAL\n")
    assert_same_as_liblinear(llu, m, llu.load_model(str(tmp_path / "s.model")), X, y)


# --------------------------------------------------------------------------------------
# (b) liblinear's models, read by load_model


@pytest.mark.parametrize("options, zero_one", [
    ("-s 0", False), ("-s 1", False), ("-s 2 -B 1", False), ("-s 0 -B 1", False),
    ("-s 3 -B 2.5", False), ("-s 0", True), ("-s 1 -B 1", True)])
def test_liblinear_models_predict_the_same_here(options, zero_one, llu, a9a_split, tmp_path):
    """liblinear puts +1 first for labels {-1, +1} and otherwise the label of the first
    row (a9a's is -1, here 0): both orders, so both signs of the binary weights."""
    Xtr, ytr, Xte, yte = a9a_split
    if zero_one:
        ytr, yte = (ytr + 1) / 2, (yte + 1) / 2
    ll = ll_train(llu, Xtr, ytr, options)
    assert ll.get_labels() == ([0, 1] if zero_one else [1, -1])
    llu.save_model(str(tmp_path / "ll.model"), ll)
    m = ds.load_model(tmp_path / "ll.model")
    stype = {"0": "L2R_LR", "1": "L2R_L2LOSS_SVC_DUAL", "2": "L2R_L2LOSS_SVC",
             "3": "L2R_L1LOSS_SVC_DUAL"}[options.split()[1]]
    assert m.solver == f"liblinear:{stype}" and m.params["solver_type"] == stype
    assert m.params["loss"] == {"0": "logistic", "1": "squared_hinge", "2": "squared_hinge",
                                "3": "hinge"}[options.split()[1]]
    np.testing.assert_array_equal(m.classes, [0.0, 1.0] if zero_one else [-1.0, 1.0])
    assert m.n_features == 123 and (m.intercept != 0.0) == ("-B" in options)
    rows, diff = assert_same_as_liblinear(llu, m, ll, Xte, yte)
    assert rows == 16281


@pytest.mark.parametrize("name, options", [("satellite_statlog", "-s 1"),
                                           ("satellite_statlog", "-s 0 -B 1"),
                                           ("dna_splice_statlog", "-s 0"),
                                           ("dna_splice_statlog", "-s 4 -B 1")])
def test_liblinear_multiclass_models_predict_the_same_here(name, options, llu, tmp_path):
    X, y = uci(name)
    # rows in a shuffled order, so that liblinear's label order (first appearance) is not
    # the sorted one
    perm = np.random.default_rng(0).permutation(X.shape[0])
    X, y = X[perm], y[perm]
    ll = ll_train(llu, X, y, options)
    assert ll.get_labels() != sorted(ll.get_labels())
    llu.save_model(str(tmp_path / "ll.model"), ll)
    m = ds.load_model(tmp_path / "ll.model")
    k = len(ll.get_labels())
    assert m.coef.shape == (k, X.shape[1]) and m.intercept.shape == (k,) and k >= 3
    np.testing.assert_array_equal(m.classes, np.arange(1, k + 1))
    assert assert_same_as_liblinear(llu, m, ll, X, y)[0] == X.shape[0]


def test_liblinear_multiclass_news20():
    pytest.skip("no multi-class news20 loader in the package (bench/datasets.py builds the "
                "binary news20 only)")


def test_liblinear_regression_model_here(llu, tmp_path):
    X, y = ds.datasets.load("kin8nm")
    ll = ll_train(llu, X, y, "-s 11 -B 1 -p 0")
    llu.save_model(str(tmp_path / "r.model"), ll)
    m = ds.load_model(tmp_path / "r.model")
    assert m.classes is None and m.params["loss"] == "squared_epsilon_insensitive"
    assert_same_as_liblinear(llu, m, ll, X, y)
    with pytest.raises(ValueError, match="predict_proba needs a classifier"):
        m.predict_proba(X)


def ll_predict_values(ll, X, nr_w):
    """liblinear's predict_values row by row with a buffer of nr_w doubles (liblinear's
    Python predict allocates one double for a two-class model, while its C predict_values
    writes two for Crammer-Singer)."""
    from ctypes import c_double
    from liblinear import liblinear as lib
    labels, dec = [], []
    for i in range(X.shape[0]):
        rows = slice(X.indptr[i], X.indptr[i + 1])
        xi, _ = lib.gen_feature_nodearray((X.indices[rows], X.data[rows]),
                                          feature_max=ll.get_nr_feature())
        xi[-2] = lib.feature_node(-1, ll.bias)          # no bias term (-B -1 below)
        buf = (c_double * nr_w)()
        labels.append(lib.liblinear.predict_values(ll, xi, buf))
        dec.append(buf[:nr_w])
    return np.array(labels), np.array(dec)


def test_binary_crammer_singer_and_one_class(llu, heart, tmp_path):
    X, y = heart
    ll = ll_train(llu, X, y, "-s 4")        # two columns for two classes
    llu.save_model(str(tmp_path / "cs.model"), ll)
    m = ds.load_model(tmp_path / "cs.model")
    assert m.coef.shape == (13,) and m.params["loss"] is None
    labels, dec = ll_predict_values(ll, X, 2)
    np.testing.assert_array_equal(m.predict(X), labels)
    sign = 1.0 if ll.get_labels()[0] == 1 else -1.0
    assert np.max(np.abs(m.decision_function(X) - sign * dec[:, 0])) <= TOL
    m.save(tmp_path / "cs2.model", format="liblinear")        # written back as MCSVM_CS
    assert (tmp_path / "cs2.model").read_text().startswith("solver_type MCSVM_CS\n")
    ll2 = llu.load_model(str(tmp_path / "cs2.model"))
    np.testing.assert_array_equal(ll_predict_values(ll2, X, 2)[0], labels)
    ll = ll_train(llu, X, y, "-s 21")
    llu.save_model(str(tmp_path / "oc.model"), ll)
    m = ds.load_model(tmp_path / "oc.model")
    labels, dec = ll_predict(llu, ll, X, y)
    np.testing.assert_array_equal(m.predict(X), labels)
    assert np.max(np.abs(m.decision_function(X) - dec[:, 0])) <= TOL
    m.save(tmp_path / "oc2.model", format="liblinear")
    assert "rho " in (tmp_path / "oc2.model").read_text()
    ll2 = llu.load_model(str(tmp_path / "oc2.model"))
    np.testing.assert_array_equal(ll_predict(llu, ll2, X, y)[0], labels)


# --------------------------------------------------------------------------------------
# (c) round trips


def assert_identical(m, m2, X):
    assert m2.coef.shape == m.coef.shape and m2.coef.tobytes() == m.coef.tobytes()
    assert np.array_equal(m2.intercept, m.intercept)
    np.testing.assert_array_equal(m2.classes, m.classes)
    np.testing.assert_array_equal(m2.predict(X), m.predict(X))
    np.testing.assert_array_equal(m2.decision_function(X), m.decision_function(X))


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "hinge"])
@pytest.mark.parametrize("bias", [False, True])
def test_round_trip_ours_liblinear_ours_is_exact(loss, bias, heart, tmp_path):
    X, y = heart
    m = ds.train_sdca(X, y, loss=loss, fit_intercept=bias, intercept_scaling=3.0,
                      max_epochs=20, tol=1e-8)
    m.save(tmp_path / "m.txt", format="liblinear")
    m2 = ds.load_model(tmp_path / "m.txt")
    assert_identical(m, m2, X)
    assert m2.params["loss"] == loss and m2.solver.startswith("liblinear:L2R_")
    m2.save(tmp_path / "m2.txt", format="liblinear")           # and again: the same file
    assert (tmp_path / "m2.txt").read_bytes() == (tmp_path / "m.txt").read_bytes()


def test_round_trip_multiclass_both_formats(heart3, tmp_path):
    X, y = heart3
    m = ovr(X, y, fit_intercept=True)
    assert m.coef.shape == (3, 13) and m.intercept.shape == (3,) and m.multiclass
    for fmt in ("dualsolve", "liblinear"):
        m.save(tmp_path / fmt, format=fmt)
        assert_identical(m, ds.load_model(tmp_path / fmt), X)
    m3 = ds.load_model(tmp_path / "liblinear")
    np.testing.assert_array_equal(m3.predict_proba(X), m.predict_proba(X))


def test_liblinear_file_with_bias_b_is_kept(llu, heart, tmp_path):
    """liblinear -> ours -> liblinear: params["bias"] keeps B where w_last * B / B is exact."""
    X, y = heart
    ll = ll_train(llu, X, y, "-s 0 -B 2")
    llu.save_model(str(tmp_path / "a"), ll)
    m = ds.load_model(tmp_path / "a")
    m.save(tmp_path / "b", format="liblinear")
    assert (tmp_path / "a").read_text() == (tmp_path / "b").read_text()


def test_unwritable_models_are_refused(heart, tmp_path):
    X, y = heart
    strings = ds.train_sdca(X, np.where(y > 0, "yes", "no"), max_epochs=3)
    with pytest.raises(ValueError, match="integer class labels"):
        strings.save(tmp_path / "x", format="liblinear")
    halves = ds.train_sdca(X, y * 0.5, max_epochs=3)
    with pytest.raises(ValueError, match="integer class labels"):
        halves.save(tmp_path / "x", format="liblinear")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kernel = ds.train_mixup_sdca(X, y, kernel="rbf", n_mix=10, max_epochs=2)
    with pytest.raises(ValueError, match="KernelModel cannot be written"):
        kernel.save(tmp_path / "x", format="liblinear")
    with pytest.raises(ValueError, match="format must be"):
        strings.save(tmp_path / "x", format="svmlight")
    bad = ds.Model(np.array([np.nan, 1.0]), classes=[-1, 1], params=dict(loss="logistic"))
    with pytest.raises(ValueError, match="NaN"):
        bad.save(tmp_path / "x", format="liblinear")
    assert not (tmp_path / "x").exists()


# --------------------------------------------------------------------------------------
# the multi-class Model and predict_proba, without liblinear


def test_multiclass_model_shapes_and_predict():
    coef = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])
    m = ds.Model(coef, [0.0, 0.5, 0.0], classes=["a", "b", "c"], params=dict(loss="logistic"))
    X = np.array([[2.0, 0.0], [0.0, 2.0], [-3.0, -3.0], [0.2, 0.0], [0.5, 0.0]])
    s = m.decision_function(X)
    np.testing.assert_array_equal(s, X @ coef.T + [0.0, 0.5, 0.0])
    assert list(m.predict(X)) == ["a", "b", "c", "b", "a"]     # a tie: the first class
    p = m.predict_proba(X)
    sig = 1.0 / (1.0 + np.exp(-s))
    np.testing.assert_allclose(p, sig / sig.sum(axis=1, keepdims=True), rtol=1e-14)
    assert m.decision_function(np.zeros((0, 2))).shape == (0, 3)
    assert m.predict(np.zeros((0, 2))).shape == (0,)
    # very negative scores: the limit, not 0/0
    far = ds.Model(-1e4 * np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), classes=[1, 2, 3],
                   params=dict(loss="logistic"))
    p = far.predict_proba(np.array([[1.0, 0.5]]))           # scores -1e4, -5e3, -1.5e4
    np.testing.assert_array_equal(p, [[0.0, 1.0, 0.0]])
    for bad in (dict(classes=[1, 2]), dict(classes=None), dict(classes=[1, 2, 3, 4])):
        with pytest.raises(ValueError, match="2-D coef"):
            ds.Model(coef, **bad)
    with pytest.raises(ValueError, match="1-D coef"):
        ds.Model(coef[0], classes=[1, 2, 3])


def test_binary_predict_proba_is_stable(heart):
    X, y = heart
    m = ds.train_sdca(X, y, loss="logistic", fit_intercept=True)
    p = m.predict_proba(X)
    s = m.decision_function(X)
    np.testing.assert_allclose(p[:, 1], 1.0 / (1.0 + np.exp(-s)), rtol=1e-15)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-15)
    # 1 - sigmoid(40) is 0 in double precision; expit(-40) is not
    far = ds.Model([1.0], classes=[0, 1], params=dict(loss="logistic"))
    q = far.predict_proba(np.array([[40.0], [-40.0]]))
    np.testing.assert_allclose(q, [[np.exp(-40.0), 1.0], [1.0, np.exp(-40.0)]], rtol=1e-15)


def test_predict_proba_refuses_other_losses(heart):
    X, y = heart
    m = ds.train_sdca(X, y, loss="squared_hinge", max_epochs=3)
    with pytest.raises(ValueError, match="loss='logistic'.*'squared_hinge'|'squared_hinge'.*"
                                         "loss='logistic'"):
        m.predict_proba(X)


def test_warm_start_from_a_multiclass_model_is_refused():
    from dualsolve.model import warm_start_coef, warm_start_dual
    m = ds.Model(np.zeros((3, 4)), classes=[1, 2, 3], dual=np.zeros((10, 3)))
    with pytest.raises(ValueError, match="multi-class"):
        warm_start_coef(m, 4)
    with pytest.raises(ValueError, match="multi-class"):
        warm_start_dual(m, 10)


# --------------------------------------------------------------------------------------
# (d) damaged liblinear files


GOOD = """solver_type L2R_LR
nr_class 3
label 2 1 3
nr_feature 2
bias 1
w
0.5 -0.25 1
1e-3 2 -3
0.125 0 -0.5
"""


def test_good_file_reads(tmp_path):
    path = tmp_path / "m.model"
    path.write_text(GOOD)
    m = ds.load_model(path)
    np.testing.assert_array_equal(m.classes, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(m.coef, [[-0.25, 2.0], [0.5, 1e-3], [1.0, -3.0]])
    np.testing.assert_array_equal(m.intercept, [0.0, 0.125, -0.5])
    assert m.params == dict(loss="logistic", penalty="l2", bias=1.0, solver_type="L2R_LR")


def damage(text, old, new, count=1):
    assert old in text, old
    return text.replace(old, new, count)


DAMAGED = {
    "empty after solver_type": ("solver_type L2R_LR\n", "w", "missing"),
    "truncated w": (GOOD[:-20], "w", "holds 4 numbers"),
    "truncated header": (GOOD[:GOOD.index("nr_feature")], "w", "missing"),
    "extra number": (GOOD + "1\n", "w", "holds 10 numbers"),
    "nr_feature too large by one": (damage(GOOD, "nr_feature 2", "nr_feature 3"), "w", "need 12"),
    "nr_feature 10**12": (damage(GOOD, "nr_feature 2", "nr_feature 1000000000000"),
                          "nr_feature", "integer in"),
    "nr_feature INT_MAX": (damage(GOOD, "nr_feature 2", "nr_feature 2147483647"), "w",
                           "holds 9 numbers"),
    "nr_feature negative": (damage(GOOD, "nr_feature 2", "nr_feature -2"), "nr_feature", None),
    "nr_feature float": (damage(GOOD, "nr_feature 2", "nr_feature 2.0"), "nr_feature", None),
    "nr_feature 5000 digits": (damage(GOOD, "nr_feature 2", "nr_feature " + "9" * 5000),
                               "nr_feature", None),
    "nr_class 1": (damage(GOOD, "nr_class 3", "nr_class 1"), "nr_class", "2 or more"),
    "nr_class 4": (damage(GOOD, "nr_class 3", "nr_class 4"), "label", None),
    "nr_class 2^31": (damage(GOOD, "nr_class 3", "nr_class 2147483648"), "nr_class", None),
    "nr_class huge, few labels": (damage(GOOD, "nr_class 3", "nr_class 2147483647"), "label",
                                  "has 17 labels but nr_class is 2147483647"),
    "duplicated labels": (damage(GOOD, "label 2 1 3", "label 2 1 2"), "label", "twice"),
    "label not int": (damage(GOOD, "label 2 1 3", "label 2 1.5 3"), "label", None),
    "label missing": (damage(GOOD, "label 2 1 3\n", ""), "label", "missing"),
    "label before nr_class": (damage(damage(GOOD, "nr_class 3\n", ""), "label 2 1 3\n",
                                     "label 2 1 3\nnr_class 3\n"), "label", "before"),
    "non-numeric w": (damage(GOOD, "2 -3", "2 abc"), "w", "non-numeric"),
    "hex w": (damage(GOOD, "2 -3", "2 0x1p3"), "w", "non-numeric"),
    "underscore w": (damage(GOOD, "2 -3", "2 1_0"), "w", "non-numeric"),
    "NaN in w": (damage(GOOD, "2 -3", "2 nan"), "w", "NaN"),
    "inf in w": (damage(GOOD, "2 -3", "2 -inf"), "w", "NaN or infinity"),
    "huge w": (damage(GOOD, "2 -3", "2 1e999"), "w", "NaN or infinity"),
    "bias NaN": (damage(GOOD, "bias 1", "bias nan"), "bias", "finite"),
    "bias missing": (damage(GOOD, "bias 1\n", ""), "bias", "missing"),
    "bias no value": (GOOD[:GOOD.index("bias") + 5], "bias", None),
    "solver_type unknown": (damage(GOOD, "L2R_LR", "L3R_LR"), "solver_type", None),
    "key twice": (damage(GOOD, "bias 1\n", "bias 1\nbias 1\n"), "bias", "twice"),
    "unknown key": (damage(GOOD, "bias 1\n", "bias 1\ncolour red\n"), "colour", None),
    "rho in a classifier": (damage(GOOD, "bias 1\n", "bias 1\nrho 0\n"), "rho", None),
    "regression with labels": (damage(GOOD, "L2R_LR", "L2R_L2LOSS_SVR"), "nr_class", None),
    "one-class without rho": (damage(damage(damage(GOOD, "L2R_LR", "ONECLASS_SVM"), "nr_class 3",
                                            "nr_class 2"), "label 2 1 3\n", ""), "rho", None),
    "not ASCII": (damage(GOOD, "label", "lab\u00e9l"), None, "not ASCII"),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_damaged_liblinear_files(case, tmp_path):
    text, field, fragment = DAMAGED[case]
    path = tmp_path / "bad.model"
    path.write_bytes(text.encode("utf-8"))
    with pytest.raises(ValueError) as info:
        ds.load_model(path)
    msg = str(info.value)
    assert type(info.value) is ValueError
    assert str(path) in msg and len(msg.splitlines()) == 1, msg
    if field is not None:
        assert f"field '{field}'" in msg, msg
    if fragment is not None:
        assert fragment in msg, msg


def test_header_claiming_many_features_allocates_nothing(tmp_path):
    """nr_feature at liblinear's int limit over nine numbers: refused by the count, before
    the weights are parsed (tracemalloc sees no large block)."""
    import tracemalloc
    path = tmp_path / "m.model"
    path.write_text(damage(GOOD, "nr_feature 2", "nr_feature 2147483647"))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="field 'w'"):
            ds.load_model(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10 ** 6, peak


def test_handwritten_file_reads_the_same_in_liblinear(llu, tmp_path):
    """The file of the damage tests, undamaged, loads in both and predicts the same
    (label order 2 1 3: columns reordered here)."""
    path = tmp_path / "m.model"
    path.write_text(GOOD)
    ll = llu.load_model(str(path))
    m = ds.load_model(path)
    X = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 2.0], [0.3, -0.7]]))
    assert_same_as_liblinear(llu, m, ll, X, np.ones(4))
