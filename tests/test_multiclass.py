"""One-vs-rest over every binary classifier: each class's row is that class's binary
solve, the fit matches liblinear's one-vs-rest, and the per-class story is told."""
import warnings

import numpy as np
import pytest

import dualsolve as ds
from dualsolve._driver import solvers


def test_each_row_is_the_binary_solve(satellite):
    X, y = satellite
    m = ds.train_sdca(X, y, loss="logistic", tol=1e-8, seed=3)
    classes = np.unique(y)
    assert list(m.classes) == list(classes) and m.coef.shape == (6, X.shape[1])
    assert m.intercept.shape == (6,)
    for c, label in enumerate(classes):
        b = ds.train_sdca(X, np.where(y == label, 1, -1), loss="logistic", tol=1e-8, seed=3)
        np.testing.assert_array_equal(m.coef[c], b.coef)
        np.testing.assert_array_equal(m.dual[:, c], b.dual)
    assert m.converged and m.params["class_stop_reasons"] == ["converged"] * 6
    assert m.n_epochs == sum(m.params["class_n_epochs"])
    scores = m.decision_function(X)
    assert scores.shape == (X.shape[0], 6)
    np.testing.assert_array_equal(m.predict(X), classes[np.argmax(scores, axis=1)])
    assert np.mean(m.predict(X) == y) > 0.75
    h = m.history
    assert h.dtype.names[-1] == "class" and sorted(set(h["class"].tolist())) == list(range(6))


def test_matches_liblinear_one_vs_rest(satellite):
    liblinear = pytest.importorskip("liblinear.liblinearutil")
    X, y = satellite
    classes = np.unique(y)
    codes = np.searchsorted(classes, y)
    C = 1.0
    m = ds.train_sdca(X, y, loss="squared_hinge", C=C, tol=1e-10)
    lm = liblinear.train(codes.astype(float), X, f"-s 1 -c {C} -e 1e-8 -q")
    labels = lm.get_labels()
    W = np.array([[lm.get_decfun_coef(j + 1, labels.index(c)) for j in range(X.shape[1])]
                  for c in range(6)])

    def primal(w, c):
        yc = np.where(codes == c, 1.0, -1.0)
        return 0.5 * w @ w + C * np.sum(np.maximum(0, 1 - yc * (X @ w)) ** 2)

    for c in range(6):
        ours, theirs = primal(m.coef[c], c), primal(W[c], c)
        assert abs(ours - theirs) <= 1e-6 * theirs, (c, ours, theirs)
    pred_ll = np.array(liblinear.predict(codes.astype(float), X, lm, "-q")[0]).astype(int)
    assert np.mean(classes[pred_ll] == m.predict(X)) > 0.999


BINARY = sorted(name for name, s in solvers().items()
                if s.task(s.losses[0], {"soft_labels": False}) == "binary")


@pytest.mark.parametrize("name", BINARY)
def test_every_binary_classifier_goes_one_vs_rest(name, three_classes):
    X, y = three_classes
    train = getattr(ds, "train_" + name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.ConvergenceWarning)
        m = train(X, y, max_epochs=30, seed=0)
    assert list(m.classes) == ["a", "b", "c"]
    pred = m.predict(X)
    assert set(pred.tolist()) <= {"a", "b", "c"}
    assert np.mean(pred == y) > 0.6
    assert len(m.params["class_stop_reasons"]) == 3


@pytest.mark.parametrize("kw", [dict(kernel="rbf"), dict(kernel="rbf", n_mix=100)])
def test_kernel_models_go_one_vs_rest(kw, three_classes, tmp_path):
    """A column of dual variables per class over the same (mixup-augmented) points: each
    the binary solve of that class, and the model file keeps them."""
    X, y = three_classes
    m = ds.train_mixup_sdca(X, y, tol=1e-6, seed=2, **kw)
    assert isinstance(m, ds.KernelModel) and m.dual.shape[1] == 3
    for c, label in enumerate(m.classes):
        b = ds.train_mixup_sdca(X, np.where(y == label, 1, -1), tol=1e-6, seed=2, **kw)
        np.testing.assert_array_equal(m.dual[:, c], b.dual)
        np.testing.assert_allclose(m.decision_function(X)[:, c], b.decision_function(X),
                                   rtol=1e-12, atol=1e-12)
    m.save(tmp_path / "k.npz")
    again = ds.load_model(tmp_path / "k.npz")
    np.testing.assert_array_equal(again.predict(X), m.predict(X))
    assert np.mean(m.predict(X) == y) > 0.6


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize("train,kw,builds", [
    ("train_mixup_sdca", dict(kernel="rbf"), 1),          # the classes share the points
    ("train_kernel_sgd", dict(kernel="poly"), 1),
    ("train_mixup_sdca", dict(kernel="rbf", n_mix=100), 3),   # a mixup plan per class
    ("train_mixup_sdca", dict(kernel="rbf", gram_dtype="float32"), 3),  # a column buffer
    ("train_mixup_sdca", dict(kernel="rbf", max_gram_mb=0.01), 3),      # a column cache
    ("train_mixup_sdca", dict(kernel="precomputed"), 1)])    # made dense and checked once
def test_one_vs_rest_builds_a_shared_gram_once(train, kw, builds, n_jobs, three_classes,
                                               monkeypatch):
    """Without a mixup plan every class has the same points: one dense float64 Gram serves
    them all (read in place); sources with state of their own are built per class. The
    model is the same as with a Gram per class (each class's binary solve)."""
    import dualsolve.mixup.api as mixup_api
    made = []
    make = mixup_api._kernels.make_column_source

    def counted(*args, **kwargs):
        made.append(1)
        return make(*args, **kwargs)

    monkeypatch.setattr(mixup_api._kernels, "make_column_source", counted)
    X, y = three_classes
    if kw["kernel"] == "precomputed":
        X = _rbf(X)
    fit = getattr(ds, train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.ConvergenceWarning)
        m = fit(X, y, max_epochs=20, seed=1, n_jobs=n_jobs, **kw)
        assert len(made) == builds
        label = m.classes[1]
        b = fit(X, np.where(y == label, 1, -1), max_epochs=20, seed=1, **kw)
    np.testing.assert_array_equal(m.dual[:, 1], b.dual)


def _rbf(X, gamma=0.5):
    """exp(-gamma ||x_i - x_j||^2), dense."""
    D = X.toarray()
    sq = (D * D).sum(axis=1)
    return np.exp(-gamma * np.maximum(sq[:, None] + sq[None, :] - 2.0 * D @ D.T, 0.0))


def test_callback_sees_the_class_and_stops_the_fit(three_classes):
    X, y = three_classes
    seen = []

    def cb(info):
        seen.append((info["class"], info["epoch"]))
        return info["class"] == 1 and info["epoch"] == 2

    m = ds.train_sdca(X, y, callback=cb, tol=1e-12)
    assert m.stop_reason == "callback"
    assert m.params["class_stop_reasons"] == ["converged", "callback"]
    assert seen[-1] == (1, 2) and {c for c, _ in seen} == {0, 1}
    np.testing.assert_array_equal(m.coef[2], 0.0)


def test_warm_start_from_a_one_vs_rest_model(three_classes):
    X, y = three_classes
    m = ds.train_sdca(X, y, loss="logistic", tol=1e-8)
    again = ds.train_sdca(X, y, loss="logistic", tol=1e-3, warm_start=m)
    assert max(again.params["class_n_epochs"]) <= 2
    with pytest.raises(ValueError, match="warm_start"):
        ds.train_sdca(X, np.where(y == "c", "d", y), warm_start=m)
    with pytest.raises(TypeError, match="warm_start"):
        ds.train_sdca(X, y, warm_start=np.zeros(X.shape[0]))


def test_a_class_that_stops_early_is_named(three_classes):
    X, y = three_classes
    with pytest.warns(ds.ConvergenceWarning, match=r"train_sdca \(class 'a' vs rest\) stopped"):
        m = ds.train_sdca(X, y, max_epochs=1, tol=1e-12)
    assert m.stop_reason == "max_epochs"


def test_two_classes_stay_binary(three_classes):
    X, y = three_classes
    y2 = np.where(y == "a", "a", "z")
    m = ds.train_sdca(X, y2)
    assert m.coef.ndim == 1 and list(m.classes) == ["a", "z"]
