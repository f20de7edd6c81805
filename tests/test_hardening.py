"""Issue-level reproducers of bad input: each either raises a clear error naming the argument
or gives the right answer, and none takes the process down (the crash reproducers run in a
subprocess, whose return code is checked)."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds


def run_python(code, timeout=120):
    """Run ``code`` in a fresh interpreter; (returncode, stdout, stderr)."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


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
        extra = dict(train_kernel_sgd=dict(lr=0.1))
        spectral = {{"train_sorel", "train_lsvrg", "train_prospect", "train_spectral_sgd"}}
        names = [n for n in ds.__all__ if n.startswith("train_")]
        for name in names:
            kw = dict(extra.get(name, {{}}))
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
    assert "checked 22" in out


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
    k = ds.train_kernel_sgd(X, y2, lr=0.1, max_epochs=2)
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
    with pytest.raises(ValueError, match="3 distinct values.*soft_labels=True"):
        ds.train_mixup_sdca(X, np.where(y > 0, 0.5, np.where(X[:, 0].toarray().ravel() > 0, 0, -1)))
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
