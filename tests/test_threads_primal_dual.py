"""The primal-dual family's one problem with n_jobs: the SVRG / Katyusha snapshots' and
the SPDC family's evaluations' passes over X in blocks of rows (dualsolve/_core/blocks.pxd),
the steps serial; the batch solvers' two products a pass (X x by rows, X^T y in blocks).
The certified optimum of one thread, and a result that depends on the block count only."""
import numpy as np
import pytest

import dualsolve as ds
from test_threads import _blocks, _fingerprint, _row_weights, _sparse_problem, _team_of_one

# 300,000 nonzeros (over the blocks' 2^18), 15 rows a feature: the blocks' sums of a
# feature's rows differ from one thread's order
N, D = 20000, 20_000


@pytest.fixture(scope="module")
def problem():
    return _sparse_problem(N, D, seed=4)


def _one_and_two_threads(train, weighted, problem, max_epochs, seed):
    """One thread's certified fit, and two runs with n_jobs=2; both certify one optimum and
    the two runs give the same bits."""
    X, y = problem
    kw = dict(loss="logistic", tol=1e-9, max_epochs=max_epochs)
    if weighted:
        kw["sample_weight"] = _row_weights(N, seed, 5)
    one = train(X, y, **kw)
    runs = [train(X, y, n_jobs=2, **kw) for _ in range(2)]
    two = runs[0]
    assert one.converged and two.converged and two.params["n_jobs"] == 2
    P1, P2 = one.history["primal"][-1], two.history["primal"][-1]
    D1, D2 = P1 - one.history["gap"][-1], P2 - two.history["gap"][-1]
    assert P2 >= D1 - 1e-15 and P1 >= D2 - 1e-15
    assert _fingerprint(runs[1]) == _fingerprint(two) and runs[1].n_epochs == two.n_epochs
    return one, two


@pytest.mark.parametrize("train", [ds.train_svrg, ds.train_katyusha, ds.train_spdc,
                                   ds.train_df_spdc, ds.train_adf_spdc])
@pytest.mark.parametrize("weighted", [False, True])
def test_snapshots_in_threads_reach_the_certified_optimum_of_one(train, weighted, problem):
    one, two = _one_and_two_threads(train, weighted, problem, 500, 4)
    P1, P2 = one.history["primal"][-1], two.history["primal"][-1]
    assert abs(P2 - P1) <= 1e-9 * P1
    if _blocks():
        # two blocks sum mu in another order: a different computation, not one thread's
        assert _fingerprint(one) != _fingerprint(two)


@pytest.mark.parametrize("train", [ds.train_bpd, ds.train_df_bpd, ds.train_ada_bpd])
@pytest.mark.parametrize("weighted", [False, True])
def test_batch_products_in_threads_reach_the_certified_optimum_of_one(train, weighted,
                                                                       problem):
    one, two = _one_and_two_threads(train, weighted, problem, 2000, 5)
    if _blocks():
        # X^T y in two blocks: another order of the sums than scipy's one pass
        assert _fingerprint(one) != _fingerprint(two)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_row_passes_are_scipys_products(index_dtype, problem):
    """RowPasses (the batch solvers' products in threads): X w row by row, the same values
    for any count; X^T c in blocks, scipy's to rounding, the same bits on every call."""
    import scipy.sparse as sp
    from dualsolve._core.csr import RowPasses
    X, _ = problem
    A = sp.csr_matrix(X)
    A.indices, A.indptr = A.indices.astype(index_dtype), A.indptr.astype(index_dtype)
    rng = np.random.default_rng(3)
    w, c = rng.standard_normal(D), rng.standard_normal(N)
    one, two = RowPasses(A, 1), RowPasses(A, 2)
    assert one.threads == 1 and two.threads == (2 if _blocks() else 1)
    assert RowPasses(A[:1000], 2).threads == 1            # under the blocks' 2^18 nonzeros
    s1, s2, t1, t2, again = (np.empty(N), np.empty(N), np.empty(D), np.empty(D),
                             np.empty(D))
    one.dot(w, s1)
    two.dot(w, s2)
    np.testing.assert_array_equal(s2, s1)
    np.testing.assert_allclose(s1, A @ w, rtol=1e-12, atol=1e-12)
    one.tdot(c, t1)
    two.tdot(c, t2)
    two.tdot(c, again)
    np.testing.assert_allclose(t2, A.T @ c, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(t1, A.T @ c, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(again, t2)
    with pytest.raises(ValueError, match="n_features"):
        two.dot(np.zeros(D + 1), s1)
    with pytest.raises(ValueError, match="n_rows"):
        two.tdot(np.zeros(N - 1), t1)


@pytest.mark.parametrize("kw", [
    dict(loss="logistic", l1=1e-4),                 # SPDC's general evaluation
    dict(loss="logistic", batch_size=8),
    dict(loss="squared", lam=0.0, tol=1e-5),        # the gradient measure (a gradient copy)
    dict(loss="squared", lam=0.0, l1=1e-3, tol=1e-6)])  # the rescaled gap
def test_spdc_evaluations_in_threads_in_every_form(kw, problem):
    X, y = problem
    kw = dict(kw)
    tol = kw.pop("tol", 1e-9)
    one = ds.train_ada_spdc(X, y, tol=tol, max_epochs=1000, **kw)
    two = ds.train_ada_spdc(X, y, tol=tol, max_epochs=1000, n_jobs=2, **kw)
    assert one.converged and two.converged
    assert two.params["measure"] == one.params["measure"]
    P1, P2 = one.history["primal"][-1], two.history["primal"][-1]
    if one.params["measure"] == "grad_norm2":
        # no certificate: both near the same minimum value (the measure is ||grad||^2)
        assert abs(P2 - P1) <= 1e-6 * max(P1, 1e-12) + 1e-12
    else:
        assert P2 >= P1 - one.history["gap"][-1] - 1e-15
        assert P1 >= P2 - two.history["gap"][-1] - 1e-15


@pytest.mark.parametrize("name", ["train_svrg", "train_bpd"])
def test_a_team_of_one_runs_every_block(name, tmp_path, problem):
    """The SVRG snapshots' blocks, and the batch solvers' X^T y blocks (RowPasses)."""
    if not _blocks():
        pytest.skip("one core or a serial build: n_jobs=2 runs one block")
    stop, fingerprint = _team_of_one(
        tmp_path, N, D, 4, f"ds.{name}(X, y, loss='logistic', tol=1e-9, n_jobs=2)")
    X, y = problem
    two = getattr(ds, name)(X, y, loss="logistic", tol=1e-9, n_jobs=2)
    assert stop == "converged"
    assert fingerprint == _fingerprint(two)


@pytest.mark.parametrize("train, kw", [
    (ds.train_spdc, dict(loss="logistic")),
    (ds.train_spdc, dict(loss="logistic", sampling="permutation", l1=1e-4)),   # elastic net
    (ds.train_df_spdc, dict(loss="logistic")),                                 # dual-free
    (ds.train_ada_spdc, dict(loss="squared", lam=0.0)),                        # no L2 term
    (ds.train_adf_spdc, dict(loss="logistic", weighted=True))])
def test_spdc_batches_in_threads_are_the_serial_batch_steps(train, kw, problem):
    """A batch of 512 rows (7,680 nonzeros, over the threshold) steps in two threads: its
    features caught up and stepped by ranges of features (each feature's sums and step in
    the batch's order), its dual steps by rows. The same bits as the batch stepped on one
    thread (the threshold out of reach), with the same n_jobs for the evaluations."""
    from dualsolve._core import parallel
    X, y = problem
    kw = dict(kw)
    if kw.pop("weighted", False):
        kw["sample_weight"] = _row_weights(N, 6, 5)
    kw.update(batch_size=512, max_epochs=6, tol=0.0, n_jobs=2)
    threaded = train(X, y, **kw)
    old = parallel._batch_min_nnz(10**15)
    try:
        serial = train(X, y, **kw)
    finally:
        parallel._batch_min_nnz(old)
    assert _fingerprint(threaded) == _fingerprint(serial)
    np.testing.assert_array_equal(threaded.history["primal"], serial.history["primal"])
    np.testing.assert_array_equal(threaded.dual, serial.dual)
