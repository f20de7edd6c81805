"""Row and class weights: integer weights are repeated rows, class weights are liblinear's
-wi, and bad weights are clear errors."""
import numpy as np
import pytest

import dualsolve as ds
from dualsolve._driver import solvers


@pytest.fixture(scope="module")
def heart():
    return ds.datasets.load("heart_scale")


def liblinear_objective(w, X, y, C, c, loss):
    m = y * (X @ w)
    phi = np.logaddexp(0, -m) if loss == "logistic" else np.maximum(0, 1 - m) ** 2
    return 0.5 * w @ w + C * np.sum(c * phi)


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "hinge"])
def test_integer_weights_are_repeated_rows(heart, loss):
    X, y = heart
    sw = np.random.default_rng(1).integers(0, 4, X.shape[0])
    rows = np.repeat(np.arange(X.shape[0]), sw)
    m = ds.train_sdca(X, y, C=0.5, sample_weight=sw, loss=loss, tol=1e-12, max_epochs=20000)
    d = ds.train_sdca(X[rows], y[rows], C=0.5, loss=loss, tol=1e-12, max_epochs=20000)
    assert m.converged and d.converged
    if loss == "hinge":
        obj = lambda w: 0.5 * w @ w + 0.5 * np.sum(sw * np.maximum(0, 1 - y * (X @ w)))  # noqa
    else:
        obj = lambda w: liblinear_objective(w, X, y, 0.5, sw, loss)  # noqa
    assert abs(obj(m.coef) - obj(d.coef)) <= 1e-9 * obj(d.coef)
    np.testing.assert_array_equal(m.dual[sw == 0], 0.0)


@pytest.mark.parametrize("loss, s", [("logistic", 0), ("squared_hinge", 2)])
@pytest.mark.parametrize("class_weight", [{1.0: 3.0, -1.0: 0.5}, "balanced"])
def test_class_weights_match_liblinear(heart, loss, s, class_weight):
    liblinear = pytest.importorskip("liblinear.liblinearutil")
    X, y = heart
    C = 2.0
    m = ds.train_sdca(X, y, C=C, class_weight=class_weight, loss=loss, tol=1e-12)
    if class_weight == "balanced":
        n, npos = y.shape[0], np.sum(y > 0)
        class_weight = {1.0: n / (2 * npos), -1.0: n / (2 * (n - npos))}
    flags = " ".join(f"-w{int(k)} {float(v)!r}" for k, v in class_weight.items())
    lm = liblinear.train(y, X, f"-s {s} -c {C} -e 1e-10 -q {flags}")
    sign = 1.0 if lm.get_labels()[0] == 1 else -1.0
    w_ll = sign * np.array([lm.get_decfun_coef(j + 1) for j in range(X.shape[1])])
    c = np.where(y > 0, class_weight[1.0], class_weight[-1.0])
    ours, theirs = (liblinear_objective(w, X, y, C, c, loss) for w in (m.coef, w_ll))
    assert ours <= theirs * (1 + 1e-9)
    assert abs(ours - theirs) <= 1e-7 * theirs


def test_weights_reach_one_vs_rest(heart):
    X, y = heart
    y3 = np.where(np.asarray(X[:, 0].todense()).ravel() > 0.3, 2.0, y)
    sw = np.random.default_rng(2).integers(1, 3, X.shape[0])
    m = ds.train_sdca(X, y3, sample_weight=sw, C=1.0, tol=1e-10)
    for c, label in enumerate(m.classes):
        b = ds.train_sdca(X, np.where(y3 == label, 1, -1), sample_weight=sw, C=1.0, tol=1e-10)
        np.testing.assert_array_equal(m.coef[c], b.coef)


def _weighted_objective(w, b, X, y, C, c, loss, smoothing=0.5):
    """C sum_i c_i phi(y_i (x_i.w + b)) + ||w||^2 / 2 (b not regularised: a constant
    feature of 1 whose weight is)."""
    m = y * (X @ w + b)
    if loss == "hinge":
        phi = np.maximum(0.0, 1.0 - m)
    elif loss == "squared_hinge":
        phi = np.maximum(0.0, 1.0 - m) ** 2
    else:       # smooth hinge with smoothing g: quadratic within g of the hinge point
        u = 1.0 - m
        phi = np.where(u <= 0, 0.0, np.where(u >= smoothing, u - smoothing / 2,
                                             u * u / (2 * smoothing)))
    return 0.5 * (w @ w + b * b) + C * np.sum(c * phi)


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "smooth_hinge"])
def test_weighted_rows_shrink_to_the_unshrunk_optimum(heart, loss, fit_intercept):
    """Rows with weights are shrunk at their bounds c_i [lo, hi] (and rows of weight 0 at
    once): the same optimum as without shrinking, duals inside their bounds, 0 where the
    weight is 0."""
    X, y = heart
    c = np.random.default_rng(5).choice([0.0, 0.5, 1.0, 3.0], X.shape[0])
    kw = dict(loss=loss, C=2.0, sample_weight=c, tol=1e-11, max_epochs=100000,
              fit_intercept=fit_intercept, smoothing=0.5 if loss == "smooth_hinge" else None)
    shrunk = ds.train_sdca(X, y, shrinking=True, **kw)
    full = ds.train_sdca(X, y, shrinking=False, **kw)
    assert shrunk.converged and full.converged
    assert shrunk.history["n_active"].min() < 0.5 * X.shape[0]
    assert full.history["n_active"].min() == X.shape[0]
    obj = [_weighted_objective(m.coef, float(m.intercept), X, y,
                               2.0, c, loss) for m in (shrunk, full)]
    assert abs(obj[0] - obj[1]) <= 1e-9 * obj[1]
    np.testing.assert_array_equal(shrunk.dual[c == 0], 0.0)
    # y_i a_i in c_i [0, 1] (hinge-type duals in liblinear's sign; squared hinge: >= 0)
    ya = y * shrunk.dual
    assert (ya >= 0).all()
    if loss != "squared_hinge":
        assert (ya <= c * (1 + 1e-12)).all()


def test_an_epoch_is_a_whole_pass_of_work_once_rows_are_shrunk(heart):
    """With most rows shrunk an epoch is several passes over the few left (as much work as
    one whole pass): class weights "balanced" on hinge certify 1e-10 in 200 epochs, where
    epochs of one pass over the few rows needed 347 (and 813 without the weights)."""
    X, y = heart
    for class_weight in (None, "balanced"):
        m = ds.train_sdca(X, y, loss="hinge", C=1.0, class_weight=class_weight, tol=1e-10,
                          max_epochs=200)
        assert m.converged, class_weight
        assert m.history["n_active"].min() < 0.1 * X.shape[0]
        # with a check after every epoch, an epoch is one pass: 200 are too few
        with pytest.warns(ds.ConvergenceWarning):
            every = ds.train_sdca(X, y, loss="hinge", C=1.0, class_weight=class_weight,
                                  tol=1e-10, max_epochs=200, check_every=1)
        assert every.n_epochs == 200 and not every.converged


#: every solver whose description takes weights (a new one is covered without a test)
WEIGHTED = sorted(name for name, s in solvers().items() if s.weights)


@pytest.mark.parametrize("name", WEIGHTED)
@pytest.mark.parametrize("kw, err, match", [
    (dict(sample_weight=-np.ones(270)), ValueError, "sample_weight must be >= 0"),
    (dict(sample_weight=np.ones(5)), ValueError, "sample_weight has shape"),
    (dict(sample_weight=np.full(270, np.nan)), ValueError, "sample_weight contains NaN"),
    (dict(sample_weight=np.zeros(270)), ValueError, "weight zero"),
    (dict(sample_weight=np.array(["a"] * 270)), TypeError, "sample_weight"),
    (dict(class_weight={5: 1.0}), ValueError, "label 5"),
    (dict(class_weight={1.0: -2.0}), ValueError, "class_weight"),
    (dict(class_weight="even"), ValueError, "class_weight"),
    (dict(class_weight=[1, 2]), TypeError, "class_weight"),
    (dict(class_weight={1.0: 1.0}, loss="squared"), ValueError, "class_weight"),
])
def test_bad_weights(heart, name, kw, err, match):
    X, y = heart
    kw = dict(dict(loss="logistic"), **kw)
    with pytest.raises(err, match=match):
        getattr(ds, "train_" + name)(X, y, **kw)


def test_the_weights_are_not_kept_in_the_model(heart, tmp_path):
    """The weights are data: the model records that it was weighted, not the array."""
    X, y = heart
    m = ds.train_sdca(X, y, sample_weight=np.full(270, 2.0), class_weight="balanced")
    assert m.params["weighted"] is True
    assert "sample_weight" not in m.params and "class_weight" not in m.params
    m.save(tmp_path / "m.npz")
    assert ds.load_model(tmp_path / "m.npz").params["weighted"] is True
