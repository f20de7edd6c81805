"""A user extension that cimports the AUC engines (``ppd_run``: PPD-SG, PPD-AdaGrad, PGA;
``solam_run``) through dualsolve.get_include(), with the package's one status codes and
hook type, reproduces the train_* calls exactly (same seed, same iterates), and its own
hook sees every epoch and the Ctrl-C polls inside long epochs."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds

PYX = '''
    # cython: language_level=3, boundscheck=False, wraparound=False
    import numpy as np
    from libc.math cimport INFINITY
    from libc.stdint cimport int32_t
    from dualsolve._core.status cimport (epoch_hook, STATUS_CONVERGED, STATUS_MAX_EPOCHS,
                                         STATUS_CALLBACK, STATUS_INTERRUPTED, STATUS_DIVERGED,
                                         STATUS_NO_MEMORY)
    from dualsolve.auc._ppd cimport (PpdOptions, PpdResult, ppd_run, ppd_default_options,
                                     PPD_SG, PPD_ADAGRAD, PPD_PGA, AUC_HOOK_VALUES)
    from dualsolve.auc._solam cimport (SolamOptions, SolamResult, solam_run,
                                       solam_default_options)

    ctypedef struct Counter:
        long reports
        long polls
        long last_epoch
        long stop_at          # return STATUS_CALLBACK at this epoch (-1: never)

    cdef int counting_hook(void* ctx, Py_ssize_t epoch, const double* values) noexcept nogil:
        cdef Counter* c = <Counter*>ctx
        if epoch < 0:
            c.polls += 1
            return 0
        c.reports += 1
        c.last_epoch = epoch
        return STATUS_CALLBACK if epoch == c.stop_at else 0

    METHODS = {"sg": PPD_SG, "adagrad": PPD_ADAGRAD, "pga": PPD_PGA}

    def ppd(double[::1] data, int32_t[::1] indices, int32_t[::1] indptr, Py_ssize_t d,
            double[::1] y, str method, double lam, double decay, double tol,
            Py_ssize_t max_epochs, unsigned long long seed, bint count=False,
            long stop_at=-1, int n_threads=1):
        cdef Py_ssize_t n = y.shape[0]
        w = np.zeros(d)
        cdef double[::1] wv = w
        cdef PpdOptions opt = ppd_default_options()     # eta0, T0 <= 0: the defaults
        cdef PpdResult res
        cdef Counter c
        c.reports = c.polls = 0
        c.last_epoch = -1
        c.stop_at = stop_at
        cdef epoch_hook hook = NULL
        if count:
            hook = counting_hook
        opt.method = METHODS[method]
        opt.lam = lam
        opt.decay = decay
        opt.growth = 3.0
        opt.tol = tol
        opt.max_epochs = max_epochs
        opt.seed = seed
        opt.n_threads = n_threads
        with nogil:
            ppd_run(&data[0], &indices[0], &indptr[0], n, d, &y[0], &wv[0], &opt, &res,
                    hook, &c)
        return w, res.status, res.n_epochs, res.primal, res.measure, res.eta0, dict(
            reports=c.reports, polls=c.polls, last_epoch=c.last_epoch)

    def solam(double[::1] data, int32_t[::1] indices, int32_t[::1] indptr, Py_ssize_t d,
              double[::1] y, double lam, double R, double tol, Py_ssize_t max_epochs,
              unsigned long long seed):
        cdef Py_ssize_t n = y.shape[0]
        w = np.zeros(d)
        cdef double[::1] wv = w
        cdef SolamOptions opt = solam_default_options()
        cdef SolamResult res
        opt.lam = lam
        opt.R = R
        opt.tol = tol
        opt.max_epochs = max_epochs
        opt.seed = seed
        with nogil:
            solam_run(&data[0], &indices[0], &indptr[0], n, d, &y[0], &wv[0], &opt, &res,
                      NULL, NULL)
        return w, res.status, res.n_epochs, res.primal

    def status_codes():
        return (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_CALLBACK, STATUS_INTERRUPTED,
                STATUS_DIVERGED, STATUS_NO_MEMORY, AUC_HOOK_VALUES)
'''


@pytest.fixture(scope="module")
def embed_module(tmp_path_factory, request):
    embed = request.getfixturevalue("embed_helper")
    return embed.build_extension(tmp_path_factory, "embed_auc", PYX)


@pytest.fixture(scope="module")
def problem(a9a):
    X, y = a9a
    X = sp.csr_matrix(X[:3000])
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X, y[:3000]


def test_installed_pxd_files_are_found():
    import os
    for rel in ["dualsolve/auc/_ppd.pxd", "dualsolve/auc/_solam.pxd"]:
        assert os.path.exists(os.path.join(ds.get_include(), rel)), rel


@pytest.mark.parametrize("method", ["sg", "adagrad", "pga"])
def test_cimported_ppd_run_gives_the_same_w(embed_module, problem, method):
    X, y = problem
    lam = 1.0 / X.shape[0]
    train = {"sg": ds.train_ppd_sg, "adagrad": ds.train_ppd_adagrad, "pga": ds.train_pga}[method]
    decay = {"sg": 1.0, "adagrad": 3 ** 0.5, "pga": 1.0}[method]    # the train_* defaults
    for tol, max_epochs in [(0.0, 7), (1e-2, 300)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = train(X, y, lam=lam, tol=tol, max_epochs=max_epochs, seed=5)
        w, status, n_epochs, primal, measure, eta0, _ = embed_module.ppd(
            X.data, X.indices, X.indptr, X.shape[1], y, method, lam, decay, tol, max_epochs, 5)
        from dualsolve._core import status as st
        assert status == {"converged": st.CONVERGED, "max_epochs": st.MAX_EPOCHS}[m.stop_reason]
        assert n_epochs == m.n_epochs and eta0 == m.params["step"]
        np.testing.assert_array_equal(w, m.coef)
        assert primal == m.history["primal"][-1] and measure == m.history["gap"][-1]


def test_cimported_ppd_run_in_two_threads_gives_the_same_certificate(embed_module):
    """PpdOptions.n_threads = 2 (each evaluation's pass in blocks of rows) is
    train_ppd_sg(n_jobs=2), bit for bit, on X over the blocks' 2^18 nonzeros."""
    from dualsolve import _threads
    from test_threads import _int32_problem
    if _threads.effective_n_jobs(2) < 2:
        pytest.skip("one core here: train_ppd_sg(n_jobs=2) would run one thread")
    X, y = _int32_problem(20000, 20_000, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.ConvergenceWarning)
        m = ds.train_ppd_sg(X, y, lam=1e-4, tol=0.0, max_epochs=4, seed=5, n_jobs=2)
    w, status, n_epochs, primal, measure, _, _ = embed_module.ppd(
        X.data, X.indices, X.indptr, X.shape[1], y, "sg", 1e-4, 1.0, 0.0, 4, 5, n_threads=2)
    assert m.params["n_jobs"] == 2 and n_epochs == m.n_epochs == 4
    np.testing.assert_array_equal(w, m.coef)
    assert primal == m.history["primal"][-1] and measure == m.history["gap"][-1]


def test_cimported_solam_run_gives_the_same_w(embed_module, problem):
    X, y = problem
    lam = 1.0 / X.shape[0]
    with pytest.warns(ds.ConvergenceWarning):
        m = ds.train_solam(X, y, lam=lam, R=3.0, tol=1e-6, max_epochs=4, seed=2)
    w, status, n_epochs, primal = embed_module.solam(X.data, X.indices, X.indptr, X.shape[1],
                                                     y, lam, 3.0, 1e-6, 4, 2)
    assert n_epochs == m.n_epochs == 4 and primal == m.history["primal"][-1]
    np.testing.assert_array_equal(w, m.coef)


def test_own_hook_sees_every_epoch_and_polls_inside_long_epochs(embed_module):
    """300,000 rows of one nonzero: an epoch is 300,000 steps, and the engine polls the
    hook (epoch = -1) about every 2^21 nonzeros of work (2^21 / 17 steps here), so a Ctrl-C
    is seen within an epoch. A status returned by the hook stops the run there."""
    n, d = 300_000, 5
    rng = np.random.default_rng(0)
    X = sp.csr_matrix((rng.standard_normal(n), (np.arange(n), rng.integers(0, d, n))),
                      shape=(n, d))
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    y = np.where(rng.random(n) < 0.3, 1.0, -1.0)
    _, status, n_epochs, _, _, _, c = embed_module.ppd(X.data, X.indices, X.indptr, d, y, "sg",
                                                       1.0 / n, 1.0, 0.0, 2, 0, True)
    assert status == embed_module.status_codes()[1] and n_epochs == 2
    assert c["reports"] == 3 and c["last_epoch"] == 2         # epochs 0, 1, 2
    assert c["polls"] >= 2 * (n // (2 ** 21 // 17) - 1)
    _, status, n_epochs, _, _, _, c = embed_module.ppd(X.data, X.indices, X.indptr, d, y, "sg",
                                                       1.0 / n, 1.0, 0.0, 5, 0, True, 1)
    assert status == embed_module.status_codes()[2] and n_epochs == 1 and c["reports"] == 2


def test_status_codes_are_the_packages(embed_module):
    from dualsolve._core import status
    from dualsolve.auc import api
    assert embed_module.status_codes() == (status.CONVERGED, status.MAX_EPOCHS, status.CALLBACK,
                                           status.INTERRUPTED, status.DIVERGED, status.NO_MEMORY,
                                           3 + len(api.HISTORY))
