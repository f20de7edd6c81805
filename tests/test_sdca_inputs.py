"""Input handling: dtypes and index widths give the same answer, X is never copied, and bad
input gets an error that names the argument."""
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds
from dualsolve._validation import check_csr


@pytest.fixture(scope="module")
def problem(a9a):
    X, y = a9a
    return X[:6000].tocsr(), y[:6000]


def fit(X, y, **kw):
    kw.setdefault("tol", 1e-10)
    kw.setdefault("seed", 1)
    return ds.train_sdca(X, y, loss="logistic", **kw)


def test_float32_data(problem):
    X, y = problem
    X32 = X.astype(np.float32)
    m32 = fit(X32, y)
    # the same (rounded) numbers in float64 give the same iterates: sums are in double
    m64r = fit(X32.astype(np.float64), y)
    np.testing.assert_array_equal(m32.coef, m64r.coef)
    # and the float64 problem agrees to float32 precision
    m64 = fit(X, y)
    np.testing.assert_allclose(m32.coef, m64.coef, rtol=1e-5, atol=1e-6)
    assert m32.history["primal"][-1] == pytest.approx(m64.history["primal"][-1], rel=1e-6)


def test_int64_indices_and_csr_array(problem):
    X, y = problem
    ref = fit(X, y)
    X64 = X.copy()
    X64.indices = X64.indices.astype(np.int64)
    X64.indptr = X64.indptr.astype(np.int64)
    np.testing.assert_array_equal(fit(X64, y).coef, ref.coef)
    Xa = sp.csr_array(X)
    np.testing.assert_array_equal(fit(Xa, y).coef, ref.coef)


def test_unsorted_indices(problem):
    X, y = problem
    ref = fit(X, y)
    Xu = X.copy()
    rng = np.random.default_rng(0)
    for i in range(Xu.shape[0]):
        s, e = Xu.indptr[i], Xu.indptr[i + 1]
        p = s + rng.permutation(e - s)
        Xu.indices[s:e], Xu.data[s:e] = Xu.indices[p].copy(), Xu.data[p].copy()
    Xu.has_sorted_indices = False
    assert not Xu.has_sorted_indices
    m = fit(Xu, y)
    # only the summation order inside a row differs; rounding then steers the two runs apart
    # within their certified gaps
    np.testing.assert_allclose(m.coef, ref.coef, rtol=1e-7, atol=1e-9)
    assert m.history["primal"][-1] == pytest.approx(ref.history["primal"][-1], rel=1e-10)


def test_dense_and_other_formats_are_converted_once(heart):
    X, y = heart
    ref = fit(X, y)
    for Xo in (X.toarray(), X.tocsc(), X.tocoo(), sp.lil_matrix(X)):
        np.testing.assert_allclose(fit(Xo, y).coef, ref.coef, rtol=1e-12, atol=1e-14)


def test_dense_bool_float16_and_long_double_are_their_values(heart):
    """A dense boolean X is its 0/1 values (as a sparse one already was), float16 widens
    exactly to float32 (scipy.sparse has no float16: this was scipy's error), a long double
    rounds to float64; complex stays an error."""
    X, y = heart
    A = X.toarray()
    B = A > 0.2
    assert fit(B, y).coef.tobytes() == fit(B.astype(np.float64), y).coef.tobytes()
    H = A.astype(np.float16)
    m = fit(H, y)
    assert m.coef.tobytes() == fit(H.astype(np.float32), y).coef.tobytes()
    np.testing.assert_array_equal(m.predict(H), m.predict(H.astype(np.float32)))
    L = A.astype(np.longdouble)
    assert fit(L, y).coef.tobytes() == fit(A, y).coef.tobytes()
    bad(r"X must hold real numbers; got dtype complex128", A.astype(complex), y,
        exc=TypeError)


@pytest.mark.parametrize("variant", ["csr_matrix", "csr_array", "float32", "int64"])
def test_csr_input_is_not_copied(problem, variant):
    X, _ = problem
    if variant == "csr_array":
        X = sp.csr_array(X)
    elif variant == "float32":
        X = X.astype(np.float32)
    elif variant == "int64":
        X = X.copy()
        X.indices, X.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    c = check_csr(X)
    assert c.data is X.data or np.shares_memory(c.data, X.data)
    assert np.shares_memory(c.indices, X.indices)
    assert np.shares_memory(c.indptr, X.indptr)


def test_training_allocates_far_less_than_the_data(a9a):
    """Peak extra memory during train_sdca is O(n + d), not a copy of X (nnz-sized)."""
    X, y = a9a
    X.data.flags.writeable = False            # and nothing writes into the user's arrays
    X.indices.flags.writeable = False
    try:
        fit(X, y, tol=1e-2)                   # warm-up (imports, caches)
        tracemalloc.start()
        fit(X, y, tol=1e-2)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        X.data.flags.writeable = True
        X.indices.flags.writeable = True
    n = X.shape[0]
    x_bytes = X.data.nbytes + X.indices.nbytes
    assert peak < 0.5 * x_bytes
    assert peak < 8 * 8 * n          # a few length-n work arrays


def test_duplicate_entries_are_summed_with_a_warning(heart):
    X, y = heart
    ref = fit(X, y)
    Xd = X.tocoo()
    # split every entry in two halves: the same matrix with duplicated coordinates
    Xdup = sp.csr_matrix((np.r_[Xd.data / 2, Xd.data / 2], (np.r_[Xd.row, Xd.row], np.r_[Xd.col, Xd.col])),
                         shape=X.shape)
    Xdup = sp.csr_matrix((Xdup.data, Xdup.indices, Xdup.indptr), shape=X.shape)   # keep duplicates
    if not Xdup.has_canonical_format:
        with pytest.warns(UserWarning, match="duplicate"):
            m = fit(Xdup, y)
        np.testing.assert_allclose(m.coef, ref.coef, rtol=1e-9, atol=1e-11)


# ---------------------------------------------------------------------------------------
# bad input


def bad(match, X, y, exc=ValueError, **kw):
    with pytest.raises(exc, match=match):
        ds.train_sdca(X, y, **kw)


def test_nan_or_inf_in_X(heart):
    X, y = heart
    for v in (np.nan, np.inf, -np.inf):
        Xb = X.copy()
        Xb.data[5] = v
        bad(r"X contains NaN or infinity", Xb, y)
    Xd = X.toarray()
    Xd[3, 2] = np.nan
    bad(r"X contains NaN", Xd, y)


def test_nan_or_inf_in_y(heart):
    X, y = heart
    for v in (np.nan, np.inf):
        yb = y.copy()
        yb[0] = v
        bad(r"y contains NaN or infinity", X, yb)
        bad(r"y contains NaN or infinity", X, yb, loss="squared")


def test_shape_mismatch(heart):
    X, y = heart
    bad(r"y has 269 labels but X has 270 rows", X, y[:-1])
    bad(r"y must be 1-D", X, np.c_[y, y])
    bad(r"X must be 2-D", np.ones(5), np.ones(5))


def test_single_class(heart):
    X, y = heart
    bad(r"y has one class only", X, np.ones_like(y))


def test_labels_outside_the_allowed_values(heart):
    X, y = heart
    y3 = y.copy()
    y3[:10] = 7
    assert ds.train_sdca(X, y3).coef.shape == (3, X.shape[1])          # one-vs-rest
    bad(r"y must be numeric", X, np.array(["a"] * X.shape[0]), exc=TypeError, loss="squared")


def test_regularization_errors(heart):
    X, y = heart
    bad(r"lam must be > 0", X, y, lam=-1.0)
    bad(r"lam must be > 0", X, y, lam=0.0)
    bad(r"lam must be finite", X, y, lam=np.nan)
    bad(r"C must be > 0", X, y, C=0)
    bad(r"either lam or C", X, y, lam=1.0, C=1.0)
    bad(r"lam must be a real number", X, y, exc=TypeError, lam="0.1")


def test_unknown_loss_and_options(heart):
    X, y = heart
    bad(r"unknown loss 'logit'", X, y, loss="logit")
    bad(r"loss must be a string", X, y, exc=TypeError, loss=None)
    bad(r"sampling must be 'permutation' or 'uniform'; got 'cyclic'", X, y, sampling="cyclic")
    bad(r"tol must be a real number in \[0, inf\)", X, y, tol=-1e-3)
    bad(r"max_epochs must be an integer", X, y, exc=TypeError, max_epochs=2.5)
    bad(r"max_epochs must be an integer in \[0, 2147483647\]; got -1", X, y, max_epochs=-1)
    bad(r"smoothing applies to loss='smooth_hinge' only", X, y, loss="hinge", smoothing=0.3)
    bad(r"smooth_hinge parameter must be", X, y, loss="smooth_hinge", smoothing=0.0)
    bad(r"intercept_scaling must be a real number in \(0, inf\)", X, y, fit_intercept=True,
        intercept_scaling=0.0)
    bad(r"seed must be None or an integer in \[0, inf\)", X, y, seed=-3)
    bad(r"callback must be callable or None", X, y, exc=TypeError, callback=5)


def test_object_labels_with_missing_or_mixed_values(heart):
    """Object labels: None or NaN is an error naming y (NaN had become classes of its own),
    labels that do not sort (str beside int) a TypeError naming y (it was NumPy's bare
    '<' message); strings as objects are classes like any."""
    X, y = heart
    names = np.where(y > 0, "yes", "no").astype(object)
    with_none = names.copy()
    with_none[3] = None
    with_nan = np.where(y > 0, 1.0, -1.0).astype(object)
    with_nan[5] = np.nan
    mixed = names.copy()
    mixed[7] = 1
    bad(r"y contains None, NaN or infinity", X, with_none)
    bad(r"y contains None, NaN or infinity", X, with_nan)
    bad(r"y must hold labels of one kind that can be sorted", X, mixed, exc=TypeError)
    m = fit(X, names)
    assert list(m.classes) == ["no", "yes"]
    assert m.coef.tobytes() == fit(X, y).coef.tobytes()


def test_bad_X_types(heart):
    _, y = heart
    bad(r"X must be a scipy sparse matrix or a 2-D array", None, y, exc=TypeError)
    bad(r"X must hold real numbers", np.array([["a", "b"]] * len(y)), y, exc=TypeError)
    bad(r"X has no rows", sp.csr_matrix((0, 3)), np.array([]))


def test_predict_checks_the_number_of_features(heart):
    X, y = heart
    m = fit(X, y)
    with pytest.raises(ValueError, match="X has 12 features but the model was trained with 13"):
        m.predict(X[:, :12])
