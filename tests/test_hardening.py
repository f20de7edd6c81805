"""Issue-level reproducers of bad input: each either raises a clear error naming the argument
or gives the right answer, and none takes the process down (the crash reproducers run in a
subprocess, whose return code is checked)."""
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds


def run_python(code, timeout=300):
    """Run ``code`` in a fresh interpreter, away from the checkout (whose uncompiled
    ``dualsolve`` folder would shadow the installed package); (returncode, stdout, stderr)."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, cwd=tempfile.gettempdir())
    return proc.returncode, proc.stdout, proc.stderr


# AddressSanitizer reserves terabytes of address space: an RLIMIT_AS cap cannot run under
# tools/asan_tests.sh, which sets DUALSOLVE_ASAN
needs_address_limit = pytest.mark.skipif(bool(os.environ.get("DUALSOLVE_ASAN")),
                                         reason="RLIMIT_AS cannot be used under ASan")


@pytest.fixture(scope="module")
def heart():
    return ds.datasets.load("heart_scale")


# ---------------------------------------------------------------------------------------
# a CSR structure scipy accepts but the loops must never read


BAD_INDPTR = {
    "past_nnz": "ip = X.indptr.copy(); ip[1] = 10**7",
    "not_monotone": "ip = X.indptr.copy(); ip[1], ip[2] = ip[2], ip[1]",
    "end_past_nnz": "ip = X.indptr.copy(); ip[-1] += 1",
}


@pytest.mark.parametrize("case", sorted(BAD_INDPTR))
def test_a_broken_indptr_is_a_clear_error_in_every_solver(case):
    """Every train_* in __all__, in one child process: ValueError naming X, no crash."""
    rc, out, err = run_python(f"""
        import numpy as np, scipy.sparse as sp, dualsolve as ds
        X, y = ds.datasets.load("heart_scale")
        {BAD_INDPTR[case]}
        Xb = X.copy()
        Xb.indptr = ip                 # past scipy's constructor checks, as a user could
        spectral = {{"train_sorel", "train_lsvrg", "train_prospect", "train_spectral_sgd"}}
        names = [n for n in ds.__all__ if n.startswith("train_")]
        for name in names:
            kw = {{}}
            if name in spectral:
                kw["spectrum"] = ds.spectrum("superquantile", X.shape[0], 0.5)
            try:
                getattr(ds, name)(Xb, y, **kw)
            except ValueError as exc:
                assert "X is not a valid CSR matrix" in str(exc), (name, str(exc))
            else:
                raise AssertionError(name + " accepted a broken indptr")
        print("checked", len(names))
    """)
    assert rc == 0, err[-2000:]
    assert "checked 24" in out


def test_check_csr_names_the_argument_and_what_is_wrong(heart):
    from dualsolve._validation import check_csr
    X, _ = heart
    ip = X.indptr.copy()
    ip[1] = 10**7
    with pytest.raises(ValueError, match=r"^W is not a valid CSR matrix: indptr\[1\] = 10000000"):
        check_csr(sp.csr_matrix((X.data, X.indices, ip), shape=X.shape), "W")
    bad = sp.csr_matrix((X.data, X.indices.copy(), X.indptr), shape=X.shape)
    bad.indices[5] = X.shape[1] + 3
    with pytest.raises(ValueError, match=r"column index outside \[0, 13\): 16 in row 0"):
        check_csr(bad)
    two = np.array([0, 3, 1, 4])
    with pytest.raises(ValueError, match="indptr decreases at row 1"):
        check_csr(sp.csr_matrix((np.ones(4), np.array([0, 1, 2, 0]), two), shape=(3, 3)))
    M = X.copy()
    M.indptr = X.indptr.copy()
    M.indptr[0] = 2                # scipy's constructor refuses this; its attribute does not
    with pytest.raises(ValueError, match=r"indptr\[0\] is 2, not 0"):
        check_csr(M)


# ---------------------------------------------------------------------------------------
# two distinct values are two classes, everywhere


@pytest.mark.parametrize("labels", [(0, 1), (1, 2), (-1, 1), (False, True)])
def test_mixup_reads_two_values_as_two_classes(heart, labels):
    X, y = heart
    y2 = np.where(y > 0, labels[1], labels[0])
    ref = ds.train_mixup_sdca(X, y, tol=1e-8)
    m = ds.train_mixup_sdca(X, y2, tol=1e-8)
    np.testing.assert_array_equal(m.classes, np.array(labels))
    np.testing.assert_allclose(m.coef, ref.coef, rtol=0, atol=1e-12)
    pred = m.predict(X)
    assert set(np.unique(pred).tolist()) <= set(np.array(labels).tolist())
    assert np.mean(pred == y2) == np.mean(ref.predict(X) == y) > 0.8
    k = ds.train_kernel_sgd(X, y2, max_epochs=2)
    np.testing.assert_array_equal(k.classes, np.array(labels))


def test_soft_labels_only_when_asked(heart):
    X, y = heart
    soft = np.where(y > 0, 0.6, -0.2)
    m = ds.train_mixup_sdca(X, soft, soft_labels=True, tol=1e-8)
    np.testing.assert_array_equal(m.classes, [-1.0, 1.0])
    # the same two values without the flag are two classes (-0.2 -> -1, 0.6 -> +1)
    hard = ds.train_mixup_sdca(X, soft, tol=1e-8)
    np.testing.assert_array_equal(hard.classes, [-0.2, 0.6])
    np.testing.assert_allclose(hard.coef, ds.train_mixup_sdca(X, y, tol=1e-8).coef, atol=1e-12)
    # three values without the flag are three classes (one-vs-rest), never soft labels
    three = ds.train_mixup_sdca(X, np.where(y > 0, 0.5, np.where(X[:, 0].toarray().ravel() > 0, 0, -1)))
    np.testing.assert_array_equal(three.classes, [-1.0, 0.0, 0.5])
    with pytest.raises(ValueError, match="soft_labels=True needs n_mix=0"):
        ds.train_mixup_sdca(X, y, soft_labels=True, n_mix=10)
    with pytest.raises(ValueError, match=r"y must lie in \[-1, 1\]"):
        ds.train_mixup_sdca(X, 2 * y, soft_labels=True)
    with pytest.raises(TypeError, match="soft_labels must be a bool"):
        ds.train_mixup_sdca(X, y, soft_labels="yes")


# ---------------------------------------------------------------------------------------
# prediction validates its input


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_predict_refuses_nonfinite_rows(heart, bad):
    X, y = heart
    m = ds.train_sdca(X, y)
    Xb = X.toarray()
    Xb[3, 2] = bad
    for Xin in (Xb, sp.csr_matrix(Xb), sp.csc_matrix(Xb)):
        with pytest.raises(ValueError, match="X contains NaN or infinity .*row 3"):
            m.predict(Xin)
        with pytest.raises(ValueError, match="X contains NaN or infinity"):
            m.decision_function(Xin)


def test_predict_refuses_a_broken_csr_and_keeps_working_on_good_input(heart):
    X, y = heart
    m = ds.train_sdca(X, y)
    ip = X.indptr.copy()
    ip[1] = 10**7
    with pytest.raises(ValueError, match="X is not a valid CSR matrix"):
        m.predict(sp.csr_matrix((X.data, X.indices, ip), shape=X.shape))
    np.testing.assert_allclose(m.decision_function(X), X @ m.coef, rtol=1e-13)
    np.testing.assert_allclose(m.decision_function(X.toarray()), X @ m.coef, rtol=1e-13)
    assert m.predict(X[:0]).shape == (0,)


# ---------------------------------------------------------------------------------------
# numeric extremes: a correct answer or a clear error, never NaN or zero passed off


ALL_TRAINERS = [n for n in ds.__all__ if n.startswith("train_")]
SPECTRAL = {"train_sorel", "train_lsvrg", "train_prospect", "train_spectral_sgd"}


def trainer_kwargs(name, n):
    kw = {}
    if name in SPECTRAL:
        kw["spectrum"] = ds.spectrum("superquantile", n, 0.5)
    return kw


@pytest.mark.parametrize("scale, word", [(1e300, "too large"), (1e-170, "too small")])
def test_extreme_feature_scales_are_a_clear_error_in_every_solver(heart, scale, word):
    X, y = heart
    for name in ALL_TRAINERS:
        with pytest.raises(ValueError, match=f"X has values {word} for float64 arithmetic.*"
                                             "rescale X"):
            getattr(ds, name)(X * scale, y, **trainer_kwargs(name, X.shape[0]))


@pytest.mark.parametrize("scale", [1e-100, 1e100])
def test_large_but_usable_feature_scales_give_finite_models(heart, scale):
    """Within float64's range every solver returns finite coefficients (the conditioning at
    lam = 1/n may stop it at its budget, with a warning)."""
    X, y = heart
    for name in ALL_TRAINERS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = getattr(ds, name)(X * scale, y, **trainer_kwargs(name, X.shape[0]))
        values = m.coef if m.coef.size else m.dual
        assert np.isfinite(values).all(), name


@pytest.mark.parametrize("scale, word", [(1e200, "too large"), (1e-200, "too small")])
def test_extreme_regression_targets_are_a_clear_error(scale, word):
    X, y = ds.datasets.load("kin8nm")
    for name in ["train_sdca", "train_spdc", "train_bpd", "train_svrg", "train_dfsdca",
                 "train_sorel", "train_lsvrg"]:
        kw = trainer_kwargs(name, X.shape[0])
        with pytest.raises(ValueError, match=f"y has values {word} for float64 arithmetic"):
            getattr(ds, name)(X, y * scale, loss="squared", **kw)


@pytest.mark.parametrize("kw, fragment", [
    (dict(C=1e308), "C = 1e+308 is outside the range"),
    (dict(C=1e-320), "C = 1e-320 is outside the range"),
    (dict(lam=1e-320), "lam = 1e-320 is outside the range"),
    (dict(lam=1e308), "lam = 1e+308 is outside the range"),
    (dict(max_epochs=10**20), "max_epochs must be an integer in [0, 2147483647]"),
])
def test_out_of_range_parameters_name_themselves(heart, kw, fragment):
    X, y = heart
    for name in ("train_sdca", "train_mixup_sdca"):
        with pytest.raises(ValueError, match=re.escape(fragment)):
            getattr(ds, name)(X, y, **kw)


def test_every_budget_is_bounded_and_never_preallocated(heart):
    """The largest accepted budget runs (a callback stops it at once) without allocating
    per epoch; one past it is a ValueError naming the argument."""
    import inspect
    X, y = heart
    for name in ALL_TRAINERS:
        fn = getattr(ds, name)
        params = inspect.signature(fn).parameters
        budget = next(p for p in ("max_epochs", "max_iter") if p in params)
        kw = trainer_kwargs(name, X.shape[0])
        top = 2**31 - 1
        with pytest.raises(ValueError, match=f"{budget} must be (<= {top}|an integer in "
                                             f"\\[\\d+, {top}\\])"):
            fn(X, y, **{budget: top + 1}, **kw)
        m = fn(X, y, **{budget: top}, callback=lambda info: True, **kw)
        assert m.n_epochs == 0, name


def test_auc_stage_schedule_fits_the_largest_budget(heart):
    """The AUC stages grow geometrically (or as k^2) without bound; the schedule is made
    stage by stage and capped by the budget, so the largest budget neither overflows the
    stage lengths nor allocates anything for them."""
    X, y = heart
    stop = lambda info: info["epoch"] >= 2
    for name, kw in [("train_ppd_sg", dict(decay=3.0, growth=3.0)),
                     ("train_ppd_adagrad", dict(growth=3.0)), ("train_pga", {})]:
        m = getattr(ds, name)(X, y, max_epochs=2**31 - 1, tol=0.0, callback=stop, **kw)
        assert m.stop_reason == "callback" and m.n_epochs == 2, name
        assert np.isfinite(m.coef).all(), name


def test_no_features_at_all(heart):
    _, y = heart
    X0 = sp.csr_matrix((y.shape[0], 0))
    for name in ("train_sdca", "train_kernel_sgd", "train_mixup_sdca"):
        kw = dict(kernel="rbf") if name == "train_mixup_sdca" else {}
        m = getattr(ds, name)(X0, y, **trainer_kwargs(name, y.shape[0]), **kw)
        # no features: one constant prediction, the majority class (150 of 270 are -1)
        assert (m.predict(sp.csr_matrix((4, 0))) == -1).all(), name


def test_spectral_baselines_name_themselves_in_loss_errors(heart):
    X, y = heart
    for name in SPECTRAL:
        with pytest.raises(ValueError, match=f"unknown loss 'hinge' for {name}:"):
            getattr(ds, name)(X, y, loss="hinge", **trainer_kwargs(name, X.shape[0]))


# ---------------------------------------------------------------------------------------
# resources


@needs_address_limit
def test_a_huge_column_index_costs_no_memory_per_column(tmp_path):
    """Feature index 2^31 - 1 in a 3-row file: loading and validating stay O(nnz) under a
    1 GiB address-space limit (they used to allocate 16 GiB); training needs the 16 GiB
    weight vector, and says so."""
    path = tmp_path / "big_index.svm"
    path.write_text("+1 1:0.5 2147483647:1\n-1 2:0.3 3:1\n+1 5:1 4:2\n")
    rc, out, err = run_python(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        import dualsolve as ds
        from dualsolve._validation import check_csr
        X, y = ds.load_svmlight({str(path)!r})
        assert X.shape == (3, 2**31 - 1), X.shape
        check_csr(X)
        try:
            ds.train_sdca(X, y)
        except MemoryError as exc:
            print("MemoryError", exc)
    """)
    assert rc == 0, err[-2000:]
    assert "MemoryError" in out and "16.0 GiB" in out


# ---------------------------------------------------------------------------------------
# the command line: one line on stderr, exit status 2


def run_cli(*args, limit_gib=None):
    pre = ""
    if limit_gib:
        pre = (f"import resource; resource.setrlimit(resource.RLIMIT_AS, "
               f"({limit_gib} << 30, {limit_gib} << 30)); ")
    return run_python(pre + "import sys; from dualsolve.cli import main; "
                      f"sys.exit(main({list(args)!r}))")


def assert_one_line_failure(rc, out, err, fragment):
    assert rc == 2, (rc, err)
    assert err.startswith("dualsolve: error: ") and err.count("\n") == 1, err
    assert fragment in err, err


@pytest.fixture(scope="module")
def heart_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "heart.svm"
    X, y = ds.datasets.load("heart_scale")
    ds.dump_svmlight(X, y, str(path))
    return path


def test_cli_cost_out_of_range(heart_file, tmp_path):
    assert_one_line_failure(*run_cli("train", "-c", "1e308", str(heart_file),
                                     str(tmp_path / "m.model")), "C = 1e+308 is outside")


def test_cli_liblinear_cross_validation_flag(heart_file, tmp_path):
    rc, out, err = run_cli("train", "-v", "5", str(heart_file))
    assert rc == 0 and out.startswith("Cross Validation Accuracy = "), (rc, out, err)


def test_cli_damaged_model_files(heart_file, tmp_path):
    good = tmp_path / "good.model"
    assert run_cli("train", "-q", str(heart_file), str(good))[0] == 0
    raw = good.read_bytes()
    out = str(tmp_path / "pred.txt")
    for k, damaged in enumerate([raw[:300], raw[:len(raw) // 2], b"PK\x03\x04" + b"\0" * 64,
                                 raw[:40] + bytes(200) + raw[240:]]):
        path = tmp_path / f"bad{k}.model"
        path.write_bytes(damaged)
        assert_one_line_failure(*run_cli("predict", str(heart_file), str(path), out),
                                str(path))


@needs_address_limit
def test_cli_out_of_memory_is_one_line(tmp_path):
    path = tmp_path / "big_index.svm"
    path.write_text("+1 1:0.5 2147483647:1\n-1 2:0.3 3:1\n+1 5:1 4:2\n")
    assert_one_line_failure(*run_cli("train", str(path), str(tmp_path / "m.model"),
                                     limit_gib=3), "out of memory training on")


def test_masked_arrays_with_masked_entries_are_refused():
    """np.asarray drops a mask, so masked entries would be read as the values under it:
    X, y and sample_weight with masked entries are refused, naming the argument, in
    training, prediction and cross-validation; a mask that hides nothing is accepted and
    gives the plain array's model."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 2.0]])
    y = np.array([1, -1, 1, -1])
    hidden = np.ma.masked_array(X, mask=[[0, 1], [0, 0], [0, 0], [0, 0]])
    with pytest.raises(ValueError, match="X is a masked array with 1 masked"):
        ds.train_sdca(hidden, y)
    with pytest.raises(ValueError, match="y is a masked array"):
        ds.train_sdca(X, np.ma.masked_array(y, mask=[0, 0, 1, 0]))
    with pytest.raises(ValueError, match="sample_weight is a masked array"):
        ds.train_sdca(X, y, sample_weight=np.ma.masked_array(np.ones(4), mask=[1, 0, 0, 0]))
    with pytest.raises(ValueError, match="y is a masked array"):
        ds.cross_validate(ds.train_sdca, X, np.ma.masked_array(y, mask=[0, 0, 1, 0]),
                          n_folds=2)
    m = ds.train_sdca(X, y)
    with pytest.raises(ValueError, match="X is a masked array"):
        m.predict(hidden)
    nothing_hidden = ds.train_sdca(np.ma.masked_array(X, mask=False), y)
    np.testing.assert_array_equal(nothing_hidden.coef, m.coef)


def test_pandas_frames_with_nullable_columns():
    """A DataFrame with nullable integer, float or boolean columns (np.asarray makes it an
    object array) trains and predicts as its float64 values do; a missing value is refused
    with its place; non-numeric columns are named."""
    pd = pytest.importorskip("pandas")
    y = [1, -1, 1, -1]
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0],
                          "b": pd.array([1, 0, 3, 4], dtype="Int64"),
                          "c": pd.array([True, False, True, True], dtype="boolean")})
    plain = np.array([[1.0, 1, 1], [2, 0, 0], [3, 3, 1], [4, 4, 1]])
    m = ds.train_sdca(frame, y)
    np.testing.assert_array_equal(m.coef, ds.train_sdca(plain, y).coef)
    np.testing.assert_array_equal(m.decision_function(frame), m.decision_function(plain))
    frame.loc[2, "b"] = None
    with pytest.raises(ValueError, match=r"X contains NaN or infinity \(first at row 2, column 1"):
        ds.train_sdca(frame, y)
    with pytest.raises(ValueError, match="X contains NaN"):
        m.predict(frame)
    words = pd.DataFrame({"a": [1.0, 2, 3, 4], "w": pd.Categorical(list("xyxy"))})
    with pytest.raises(TypeError, match=r"its columns 'w' \(category\) do not"):
        ds.train_sdca(words, y)


def test_pandas_sparse_frame_stays_sparse():
    """A DataFrame of sparse columns trains and predicts as its CSR matrix does, without a
    dense copy (np.asarray would make one: 2,000 x 20,000 float64 is 320 MB)."""
    pd = pytest.importorskip("pandas")
    import tracemalloc
    A = sp.random(2000, 20_000, density=0.002, format="csr", random_state=0)
    frame = pd.DataFrame.sparse.from_spmatrix(A)
    y = np.where(np.arange(2000) % 2, 1, -1)
    tracemalloc.start()
    try:
        m = ds.train_sdca(frame, y, max_epochs=20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.1e9
    ref = ds.train_sdca(A, y, max_epochs=20)
    np.testing.assert_array_equal(m.coef, ref.coef)
    np.testing.assert_array_equal(m.decision_function(frame), ref.decision_function(A))
