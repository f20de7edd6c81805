"""A user extension that cimports the SDCA loop through dualsolve.get_include() reproduces
train_sdca exactly (same seed, same iterates), and gets the package's one status codes.
The other families' embed tests are tests/test_embed_<family>.py, built the same way
(tests/helpers/embed.py)."""
import numpy as np
import pytest

import dualsolve as ds

PYX = '''
    # cython: language_level=3, boundscheck=False, wraparound=False
    import numpy as np
    from libc.stdint cimport int32_t
    from dualsolve._core.losses cimport Loss, LOSS_LOGISTIC
    from dualsolve.sdca._sdca cimport (SdcaProblem, SdcaOptions, SdcaResult, sdca_run,
                                       sdca_default_options, sdca_problem_init)
    from dualsolve._core.status cimport (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_CALLBACK,
                                         STATUS_INTERRUPTED, STATUS_DIVERGED, STATUS_NO_MEMORY)

    def solve(double[::1] data, int32_t[::1] indices, int32_t[::1] indptr, Py_ssize_t d,
              double[::1] y, double lam, double tol, Py_ssize_t max_epochs, unsigned long long seed,
              int n_threads=1):
        cdef Py_ssize_t n = y.shape[0]
        w = np.zeros(d)
        alpha = np.zeros(n)
        work = np.zeros((2, n))
        index = np.zeros(n, dtype=np.intp)
        cdef double[::1] wv = w, av = alpha, sq = work[0], zz = work[1]
        cdef Py_ssize_t[::1] iv = index
        cdef SdcaProblem P
        cdef SdcaOptions opt = sdca_default_options()
        cdef SdcaResult res
        cdef Loss loss
        loss.kind = LOSS_LOGISTIC
        loss.param = 0.0
        sdca_problem_init(&P, n, d, &y[0], loss, lam, 0.0, &wv[0], &av[0], &sq[0], &zz[0], &iv[0])
        opt.tol = tol; opt.max_epochs = max_epochs; opt.seed = seed; opt.n_threads = n_threads
        with nogil:
            sdca_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, NULL, NULL)
        return w, alpha, res.status, res.n_epochs, res.gap

    def status_codes():
        return (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_CALLBACK, STATUS_INTERRUPTED,
                STATUS_DIVERGED, STATUS_NO_MEMORY)
'''


@pytest.fixture(scope="module")
def embed_module(tmp_path_factory, request):
    embed = request.getfixturevalue("embed_helper")
    return embed.build_extension(tmp_path_factory, "embed_sdca", PYX)


def test_installed_pxd_files_are_found():
    import os
    inc = ds.get_include()
    for rel in ["dualsolve/_core/csr.pxd", "dualsolve/_core/losses.pxd", "dualsolve/_core/rng.pxd",
                "dualsolve/_core/status.pxd", "dualsolve/_core/hooks.pxd",
                "dualsolve/_core/ksum.pxd", "dualsolve/sdca/_sdca.pxd"]:
        assert os.path.exists(os.path.join(inc, rel)), rel


def test_cimported_loop_gives_the_same_w(embed_module, a9a):
    X, y = a9a
    X, y = X[:5000].tocsr(), y[:5000]
    lam = 1.0 / X.shape[0]
    m = ds.train_sdca(X, y, loss="logistic", lam=lam, tol=1e-9, max_epochs=300, seed=11)
    w, alpha, status, n_epochs, gap = embed_module.solve(
        X.data, X.indices, X.indptr, X.shape[1], y, lam, 1e-9, 300, 11)
    assert status == 0 and n_epochs == m.n_epochs
    np.testing.assert_array_equal(w, m.coef)
    np.testing.assert_array_equal(alpha, m.dual)
    assert gap == m.history["gap"][-1]


def test_cimported_loop_in_two_threads_gives_the_same_w(embed_module, a9a):
    """A threaded call through the C API (two threads for the exact checks) is
    train_sdca(n_jobs=2), bit for bit."""
    from dualsolve import _threads
    if _threads.effective_n_jobs(2) < 2:
        pytest.skip("one core here: train_sdca(n_jobs=2) would run one thread")
    X, y = a9a
    X, y = X[:5000].tocsr(), y[:5000]
    lam = 1.0 / X.shape[0]
    m = ds.train_sdca(X, y, loss="logistic", lam=lam, tol=1e-9, max_epochs=300, seed=11,
                      n_jobs=2)
    w, alpha, status, n_epochs, gap = embed_module.solve(
        X.data, X.indices, X.indptr, X.shape[1], y, lam, 1e-9, 300, 11, n_threads=2)
    assert status == 0 and n_epochs == m.n_epochs
    np.testing.assert_array_equal(w, m.coef)
    np.testing.assert_array_equal(alpha, m.dual)


def test_status_codes_are_the_packages(embed_module):
    from dualsolve._core import status
    assert embed_module.status_codes() == (status.CONVERGED, status.MAX_EPOCHS, status.CALLBACK,
                                           status.INTERRUPTED, status.DIVERGED, status.NO_MEMORY)
