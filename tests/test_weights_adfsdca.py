"""Row and class weights of the dual-free SDCA family (train_dfsdca, train_adfsdca): integer
weights are repeated rows, a zero weight leaves the row out (never drawn), the certificate
still bounds P(w) - P*, unit weights change nothing, and bad weights are clear errors."""
import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds
from dualsolve.adfsdca.api import _record_coordinates

SOLVERS = [
    ("dfsdca", dict(sampling="uniform")),
    ("dfsdca", dict(sampling="importance")),
    ("adfsdca", dict(variant="plus")),
    ("adfsdca", dict(variant="exact")),
]
IDS = ["uniform", "importance", "plus", "exact"]


def train(name, X, y, **kw):
    return getattr(ds, "train_" + name)(X, y, **kw)


@pytest.fixture(scope="module")
def heart():
    return ds.datasets.load("heart_scale")


@pytest.fixture(scope="module")
def kin8nm():
    X, y = ds.datasets.load("kin8nm")
    X = np.asarray(X.todense() if sp.issparse(X) else X, dtype=np.float64)
    X, y = X[:1500], y[:1500]          # exact adfSDCA on dense rows: O(n^2 d) per epoch
    X = (X - X.mean(0)) / X.std(0)
    return sp.csr_matrix(X), (y - y.mean()) / y.std()


def liblinear_objective(w, X, y, C, c, loss):
    """0.5 ||w||^2 + C sum_i c_i phi_i: the same for weights and for repeated rows."""
    z = X @ w
    if loss == "logistic":
        phi = np.logaddexp(0, -y * z)
    elif loss == "squared_hinge":
        phi = np.maximum(0, 1 - y * z) ** 2
    else:
        phi = 0.5 * (z - y) ** 2
    return 0.5 * w @ w + C * np.sum(c * phi)


def weighted_primal(w, X, y, lam, c, loss):
    """P(w) = (1/n) sum_i c_i phi_i + (lam/2) ||w||^2, the scale of the history."""
    n = X.shape[0]
    return liblinear_objective(w, X, y, 1.0 / (lam * n), c, loss) * lam


def problem(request, loss):
    if loss == "squared":
        X, y = request.getfixturevalue("kin8nm")
        return X, y, 0.1
    X, y = request.getfixturevalue("heart")
    return X, y, 0.5


@pytest.mark.parametrize("name, kw", SOLVERS, ids=IDS)
@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "squared"])
def test_integer_weights_are_repeated_rows(request, name, kw, loss):
    X, y, C = problem(request, loss)
    sw = np.random.default_rng(1).integers(0, 4, X.shape[0])
    rows = np.repeat(np.arange(X.shape[0]), sw)
    common = dict(C=C, loss=loss, tol=1e-11, max_epochs=20000, **kw)
    m = train(name, X, y, sample_weight=sw, **common)
    r = train(name, X[rows], y[rows], **common)
    assert m.converged and r.converged
    ours, theirs = (liblinear_objective(w, X, y, C, sw, loss) for w in (m.coef, r.coef))
    assert abs(ours - theirs) <= 1e-8 * theirs
    np.testing.assert_array_equal(m.dual[sw == 0], 0.0)
    # the optimum's pseudo-dual: alpha_i = -c_i phi'(x_i.w); the repeated rows' alphas sum
    # to it (each copy holds -phi'), so w = X^T alpha / (lam n) is the same vector
    assert m.params["p0"] == pytest.approx(
        weighted_primal(np.zeros(X.shape[1]), X, y, m.params["lam"], sw, loss), rel=1e-12)


def test_minibatch_weights_are_repeated_rows(heart):
    X, y = heart
    sw = np.random.default_rng(3).integers(0, 4, X.shape[0])
    rows = np.repeat(np.arange(X.shape[0]), sw)
    common = dict(C=0.5, loss="logistic", tol=1e-11, variant="exact", batch_size=8)
    m = ds.train_adfsdca(X, y, sample_weight=sw, **common)
    r = ds.train_adfsdca(X[rows], y[rows], **common)
    assert m.converged and r.converged
    ours, theirs = (liblinear_objective(w, X, y, 0.5, sw, "logistic") for w in (m.coef, r.coef))
    assert abs(ours - theirs) <= 1e-8 * theirs
    np.testing.assert_array_equal(m.dual[sw == 0], 0.0)


@pytest.mark.parametrize("name, kw", SOLVERS + [("adfsdca", dict(variant="exact",
                                                                    batch_size=4))],
                         ids=IDS + ["minibatch"])
def test_zero_weight_leaves_the_row_out(heart, name, kw):
    X, y = heart
    sw = np.ones(X.shape[0])
    sw[::3] = 0.0
    keep = sw > 0
    common = dict(C=1.0, loss="logistic", tol=1e-11, **kw)
    trace = np.full(20 * X.shape[0], -2, dtype=np.intp)
    with _record_coordinates(trace):
        m = train(name, X, y, sample_weight=sw, max_epochs=20, **dict(common, tol=0))
    drawn = trace[trace >= 0]
    assert drawn.size > 0 and keep[drawn].all()
    np.testing.assert_array_equal(m.dual[~keep], 0.0)
    m = train(name, X, y, sample_weight=sw, **common)
    r = train(name, X[keep], y[keep], **common)
    assert m.converged and r.converged
    ours, theirs = (liblinear_objective(w, X, y, 1.0, sw, "logistic") for w in (m.coef, r.coef))
    assert abs(ours - theirs) <= 1e-8 * theirs


@pytest.mark.filterwarnings("ignore:.*diverged at epoch")     # the uncapped adfSDCA+
@pytest.mark.parametrize("name, kw", SOLVERS + [("adfsdca", dict(variant="plus",
                                                                    step_cap=None))],
                         ids=IDS + ["plus-uncapped"])
@pytest.mark.parametrize("loss", ["logistic", "squared_hinge"])
def test_certificate_bounds_the_weighted_suboptimality(heart, name, kw, loss):
    X, y = heart
    sw = np.random.default_rng(4).uniform(0, 3, X.shape[0])
    sw[:10] = 0.0
    cw = {1.0: 2.0, -1.0: 0.5}
    c = sw * np.where(y > 0, 2.0, 0.5)
    best = ds.train_sdca(X, y, C=1.0, loss=loss, sample_weight=sw, class_weight=cw, tol=1e-12,
                         max_epochs=20000)
    assert best.converged
    lam = best.params["lam"]
    pstar = weighted_primal(best.coef, X, y, lam, c, loss)
    seen = []

    def record(info):
        seen.append((info["primal"], info["gap"], info["dual_kind"],
                     weighted_primal(info["coef"], X, y, lam, c, loss)))

    train(name, X, y, C=1.0, loss=loss, sample_weight=sw, class_weight=cw, tol=0,
          max_epochs=30, callback=record, **kw)
    assert len(seen) == 31 or kw.get("step_cap", "auto") is None    # diverged: stopped
    for primal, gap, kind, p_numpy in seen:
        if not np.isfinite(primal):                # an uncapped adfSDCA+ run may diverge
            break
        assert primal == pytest.approx(p_numpy, rel=1e-10, abs=1e-13)
        assert gap >= primal - pstar - 1e-12 * pstar
    kinds = {k for p, g, k, _ in seen if np.isfinite(p)}
    if name == "dfsdca":
        # eta_i < 1 with c_i Lt in the steps: alpha_i stays in the weighted domain c_i dom h
        assert kinds == {1.0}
    elif kw.get("variant") == "exact":
        assert 0.0 in kinds          # the alphatilde = -c phi'(Xw) certificate was used


@pytest.mark.parametrize("name, kw", SOLVERS + [("adfsdca", dict(variant="exact",
                                                                    batch_size=4))],
                         ids=IDS + ["minibatch"])
def test_unit_weights_change_nothing(heart, name, kw):
    X, y = heart
    common = dict(C=1.0, loss="squared_hinge", tol=0, max_epochs=15, **kw)
    a = train(name, X, y, **common)
    b = train(name, X, y, sample_weight=np.ones(X.shape[0]), **common)
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.dual, b.dual)


@pytest.mark.parametrize("name", ["dfsdca", "adfsdca"])
def test_class_weight_is_a_row_weight(heart, name):
    X, y = heart
    a = train(name, X, y, class_weight={1.0: 3.0, -1.0: 0.5}, tol=1e-8)
    b = train(name, X, y, sample_weight=np.where(y > 0, 3.0, 0.5), tol=1e-8)
    np.testing.assert_array_equal(a.coef, b.coef)
    bal = train(name, X, y, class_weight="balanced", tol=1e-8)
    assert bal.converged


def test_weights_reach_one_vs_rest(heart):
    X, y = heart
    y3 = np.where(np.asarray(X[:, 0].todense()).ravel() > 0.3, 2.0, y)
    sw = np.random.default_rng(2).integers(1, 3, X.shape[0])
    m = ds.train_dfsdca(X, y3, sample_weight=sw, C=1.0, tol=1e-8)
    for c, label in enumerate(m.classes):
        b = ds.train_dfsdca(X, np.where(y3 == label, 1, -1), sample_weight=sw, C=1.0, tol=1e-8)
        np.testing.assert_array_equal(m.coef[c], b.coef)


@pytest.mark.parametrize("name", ["dfsdca", "adfsdca"])
def test_a_warm_start_on_a_row_of_weight_0_is_refused(heart, name):
    """(The other bad weights: tests/test_weights.py, over every solver that takes them.)"""
    X, y = heart
    with pytest.raises(ValueError, match="warm_start"):
        train(name, X, y, sample_weight=np.r_[0.0, np.ones(269)], warm_start=np.ones(270))
