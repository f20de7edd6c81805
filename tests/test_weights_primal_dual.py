"""Row and class weights in the primal-dual family: integer weights are repeated rows (the
same C), a weight of 0 removes the row, the certificate stays a bound with weights, and bad
weights are clear errors."""
import numpy as np
import pytest

import dualsolve as ds

SOLVERS = ["train_svrg", "train_katyusha", "train_spdc", "train_ada_spdc", "train_df_spdc",
           "train_adf_spdc", "train_bpd", "train_ada_bpd", "train_df_bpd"]
SPDC = SOLVERS[2:6]
BPD = SOLVERS[6:]


def lam_zero_kw(name):
    """What a solver needs besides lam = 0 (the strongly convex parameters)."""
    if name == "train_katyusha":
        return dict(tau1=0.5)
    if name in ("train_spdc", "train_df_spdc", "train_bpd", "train_df_bpd"):
        return dict(delta_hat=1.0)
    return {}


@pytest.fixture(scope="module")
def heart():
    return ds.datasets.load("heart_scale")


def objective(w, X, y, C, c, loss, l1C=0.0):
    """C sum_i c_i phi_i + ||w||^2 / 2 + l1C ||w||_1: the solvers' P times C n (any n)."""
    s = X @ w
    phi = np.logaddexp(0, -y * s) if loss == "logistic" else 0.5 * (s - y) ** 2
    return C * np.sum(c * phi) + 0.5 * w @ w + l1C * np.abs(w).sum()


@pytest.mark.parametrize("name", SOLVERS)
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_integer_weights_are_repeated_rows(heart, name, loss):
    X, y = heart
    train = getattr(ds, name)
    sw = np.random.default_rng(1).integers(0, 4, X.shape[0])
    rows = np.repeat(np.arange(X.shape[0]), sw)
    C = 0.5
    m = train(X, y, C=C, sample_weight=sw, loss=loss, tol=1e-14, max_epochs=5000)
    d = train(X[rows], y[rows], C=C, loss=loss, tol=1e-14, max_epochs=5000)
    assert m.converged and d.converged
    ours, theirs = (objective(w, X, y, C, sw, loss) for w in (m.coef, d.coef))
    assert abs(ours - theirs) <= 1e-8 * theirs
    # the objective the model reports is P = (1/n) sum c_i phi + ..., i.e. ours / (C n)
    assert m.history["primal"][-1] == pytest.approx(ours / (C * X.shape[0]), rel=1e-10)


@pytest.mark.parametrize("name", SPDC)
@pytest.mark.parametrize("kw", [dict(batch_size=4), dict(l1=1e-3), dict(sampling="permutation")])
def test_integer_weights_spdc_variants(heart, name, kw):
    X, y = heart
    train = getattr(ds, name)
    sw = np.random.default_rng(5).integers(0, 3, X.shape[0])
    rows = np.repeat(np.arange(X.shape[0]), sw)
    C, n, nr = 0.5, X.shape[0], rows.shape[0]
    l1 = kw.pop("l1", 0.0)
    m = train(X, y, C=C, l1=l1, sample_weight=sw, loss="logistic", tol=1e-14,
              max_epochs=20000, **kw)
    d = train(X[rows], y[rows], C=C, l1=l1 * n / nr, loss="logistic", tol=1e-14,
              max_epochs=20000, **kw)
    assert m.converged and d.converged
    ours, theirs = (objective(w, X, y, C, sw, "logistic", l1 * C * n) for w in (m.coef, d.coef))
    assert abs(ours - theirs) <= 1e-8 * theirs
    np.testing.assert_array_equal(m.dual[sw == 0], 0.0)


@pytest.mark.parametrize("name", BPD)
@pytest.mark.parametrize("l1", [0.0, 1e-3])
def test_bpd_weights_are_the_repeated_rows_iteration(heart, name, l1):
    # with weights the batch iteration is the repeated rows' one in other coordinates: the
    # same L, the same number of iterations, the same objective
    X, y = heart
    train = getattr(ds, name)
    sw = np.random.default_rng(7).integers(0, 4, X.shape[0])
    rows = np.repeat(np.arange(X.shape[0]), sw)
    C, n, nr = 0.5, X.shape[0], rows.shape[0]
    m = train(X, y, C=C, l1=l1, sample_weight=sw, loss="logistic", tol=1e-14, max_epochs=50000)
    d = train(X[rows], y[rows], C=C, l1=l1 * n / nr, loss="logistic", tol=1e-14,
              max_epochs=50000)
    assert m.converged and d.converged
    assert m.params["L"] == pytest.approx(d.params["L"], rel=1e-12)
    assert abs(m.n_epochs - d.n_epochs) <= 2
    ours, theirs = (objective(w, X, y, C, sw, "logistic", l1 * C * n) for w in (m.coef, d.coef))
    assert abs(ours - theirs) <= 1e-8 * theirs
    np.testing.assert_array_equal(m.dual[sw == 0], 0.0)


@pytest.mark.parametrize("name", SPDC + BPD)
def test_weighted_dual_is_a_warm_start(heart, name):
    X, y = heart
    train = getattr(ds, name)
    c = np.random.default_rng(6).uniform(0, 2, X.shape[0])
    c[::5] = 0.0
    m = train(X, y, sample_weight=c, loss="logistic", tol=1e-10, max_epochs=20000)
    assert m.converged
    w = train(X, y, sample_weight=c, loss="logistic", tol=1e-10, warm_start=m)
    assert w.converged and w.n_epochs == 0
    if "df_" in name:
        return                  # dual-free: the start is the margins, the dual is phi'(v)
    bad = m.dual.copy()
    bad[0] = 0.1
    with pytest.raises(ValueError, match="rows of weight 0"):
        train(X, y, sample_weight=c, loss="logistic", warm_start=(m.coef, bad))


@pytest.mark.parametrize("name, kw", [(s, {}) for s in SOLVERS] + [
    ("train_svrg", dict(lam=0.0, l1=1e-2)), ("train_katyusha", dict(l1=1e-3)),
    ("train_ada_spdc", dict(lam=0.0, l1=1e-2)), ("train_df_spdc", dict(l1=1e-3))])
def test_zero_weight_leaves_the_row_out(heart, name, kw):
    X, y = heart
    train = getattr(ds, name)
    keep = np.random.default_rng(3).random(X.shape[0]) < 0.6
    n, nk = X.shape[0], int(keep.sum())
    lam = kw.get("lam", 1e-2)
    l1 = kw.get("l1", 0.0)
    extra = lam_zero_kw(name) if lam == 0.0 else {}
    # the same minimiser: (1/n) sum_keep phi + ... = (nk/n) [(1/nk) sum_keep phi + ...]
    m = train(X, y, lam=lam, l1=l1, sample_weight=keep.astype(float), loss="logistic",
              tol=1e-13, max_epochs=20000, **extra)
    d = train(X[keep], y[keep], lam=lam * n / nk, l1=l1 * n / nk, loss="logistic",
              tol=1e-13, max_epochs=20000, **extra)
    assert m.converged and d.converged
    ours, theirs = m.history["primal"][-1], d.history["primal"][-1] * nk / n
    assert abs(ours - theirs) <= 1e-8 * theirs


@pytest.mark.parametrize("name", SOLVERS)
@pytest.mark.parametrize("kw", [dict(lam=1e-2), dict(lam=1e-2, l1=1e-3),
                                dict(lam=0.0, l1=2e-2)])
def test_weighted_certificate_bounds_the_error(heart, name, kw):
    X, y = heart
    train = getattr(ds, name)
    c = np.random.default_rng(4).uniform(0, 3, X.shape[0])
    c[::7] = 0.0
    extra = lam_zero_kw(name) if kw["lam"] == 0.0 else {}
    star = train(X, y, sample_weight=c, loss="logistic", tol=1e-12, max_epochs=20000,
                 **kw, **extra)
    assert star.converged
    hi = star.history["primal"][-1]                     # P* <= hi
    lo = hi - star.history["gap"][-1]                   # lo <= P*
    m = train(X, y, sample_weight=c, loss="logistic", tol=0, max_epochs=10, **kw, **extra)
    h = m.history
    assert np.all(h["gap"] >= 0)
    assert np.all(h["primal"] - h["gap"] <= hi + 1e-13)     # D(y) <= P*
    assert np.all(h["primal"] >= lo - 1e-13)                # P(x) >= P*


@pytest.mark.parametrize("name", SOLVERS)
def test_unit_weights_change_nothing(heart, name):
    X, y = heart
    train = getattr(ds, name)
    a = train(X, y, loss="logistic", tol=0, max_epochs=5)
    b = train(X, y, loss="logistic", tol=0, max_epochs=5, sample_weight=np.ones(X.shape[0]))
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.history["gap"], b.history["gap"])


@pytest.mark.parametrize("name", SOLVERS)
def test_class_weight_is_a_row_weight(heart, name):
    X, y = heart
    train = getattr(ds, name)
    a = train(X, y, loss="logistic", tol=0, max_epochs=5, class_weight={1.0: 3.0, -1.0: 0.5})
    b = train(X, y, loss="logistic", tol=0, max_epochs=5,
              sample_weight=np.where(y > 0, 3.0, 0.5))
    np.testing.assert_array_equal(a.coef, b.coef)


# bad weights: tests/test_weights.py, generated over every solver that takes them
