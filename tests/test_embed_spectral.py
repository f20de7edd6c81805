"""A user extension that cimports the SOREL engine (``sorel_run`` with the package's
``epoch_hook`` and status codes) through dualsolve.get_include() reproduces train_sorel
exactly (same seed, same iterates, same certificate), with a hook of its own in C."""
import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds

PYX = '''
    # cython: language_level=3, boundscheck=False, wraparound=False
    import numpy as np
    from libc.stdint cimport int32_t, int64_t
    from dualsolve._core.losses cimport Loss, LOSS_SQUARED
    from dualsolve._core.status cimport (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_CALLBACK,
                                         STATUS_INTERRUPTED, STATUS_DIVERGED, STATUS_NO_MEMORY,
                                         epoch_hook)
    from dualsolve.spectral._sorel cimport (SorelProblem, SorelOptions, SorelResult,
                                            SOREL_HOOK_VALUES, sorel_default_options,
                                            sorel_epoch_steps, sorel_work_sizes,
                                            sorel_problem_init, sorel_run)

    ctypedef struct Record:
        double* primal          # one slot per epoch
        double* gap
        Py_ssize_t size
        Py_ssize_t stop_after   # ask to stop (STATUS_CALLBACK) after this epoch; -1: never
        Py_ssize_t polls

    cdef int record(void* ctx, Py_ssize_t epoch, const double* values) noexcept nogil:
        cdef Record* r = <Record*>ctx
        if epoch < 0:
            r.polls += 1
            return 0
        if epoch < r.size:
            r.primal[epoch] = values[0]
            r.gap[epoch] = values[2]
        if epoch == r.stop_after:
            return STATUS_CALLBACK
        return 0

    def solve(double[::1] data, int32_t[::1] indices, int32_t[::1] indptr, Py_ssize_t d,
              double[::1] y, double[::1] sigma, double lam, double step, double c,
              double tol, Py_ssize_t max_epochs, unsigned long long seed,
              Py_ssize_t stop_after=-1, int n_threads=1):
        cdef Py_ssize_t n = y.shape[0], nd, ni, nl, T
        cdef SorelOptions opt = sorel_default_options()
        opt.step = step
        opt.dual_step_scale = c
        opt.tol = tol
        opt.max_epochs = max_epochs
        opt.seed = seed
        opt.n_threads = n_threads
        T = sorel_epoch_steps(&opt, n)
        sorel_work_sizes(n, d, opt.batch_size, T, &nd, &ni, &nl)
        dwork = np.zeros(nd)
        iwork = np.zeros(ni, dtype=np.intp)
        lwork = np.zeros(nl, dtype=np.int64)
        w = np.zeros(d)
        dual = np.zeros(n)
        hist = np.full((2, max_epochs + 1), np.nan)
        cdef double[::1] dw = dwork, wv = w, dv = dual, hp = hist[0], hg = hist[1]
        cdef Py_ssize_t[::1] iv = iwork
        cdef int64_t[::1] lv = lwork
        cdef Loss loss
        loss.kind = LOSS_SQUARED
        loss.param = 0.0
        cdef SorelProblem P
        cdef SorelResult res
        cdef Record rec
        rec.primal = &hp[0]
        rec.gap = &hg[0]
        rec.size = max_epochs + 1
        rec.stop_after = stop_after
        rec.polls = 0
        sorel_problem_init(&P, n, d, opt.batch_size, T, &y[0], loss, lam, &sigma[0], &wv[0],
                           &dv[0], &dw[0], &iv[0], &lv[0])
        with nogil:
            sorel_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, record, &rec)
        return (w, dual, res.status, res.n_epochs, res.primal, res.gap, res.f0,
                hist[:, :res.n_epochs + 1], SOREL_HOOK_VALUES)

    def status_codes():
        return (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_CALLBACK, STATUS_INTERRUPTED,
                STATUS_DIVERGED, STATUS_NO_MEMORY)
'''


@pytest.fixture(scope="module")
def embed_module(tmp_path_factory, request):
    embed = request.getfixturevalue("embed_helper")
    return embed.build_extension(tmp_path_factory, "embed_spectral", PYX)


@pytest.fixture(scope="module")
def problem():
    X, y = ds.datasets.load("yacht")
    X = sp.csr_matrix(X, dtype=np.float64)
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X, y


def test_installed_pxd_files_are_found():
    import os
    inc = ds.get_include()
    for rel in ["dualsolve/spectral/_sorel.pxd", "dualsolve/spectral/_baselines.pxd",
                "dualsolve/_core/isotonic.pxd", "dualsolve/_core/lazy.pxd",
                "dualsolve/_core/status.pxd"]:
        assert os.path.exists(os.path.join(inc, rel)), rel


@pytest.mark.parametrize("spectrum", ["superquantile", "esrm"])
def test_cimported_loop_gives_the_same_iterates(embed_module, problem, spectrum):
    X, y = problem
    n = X.shape[0]
    sigma = ds.spectrum(spectrum, n)
    lam, step, c = 1.0 / n, 2e-3, 0.1
    m = ds.train_sorel(X, y, spectrum=spectrum, lam=lam, step=step, dual_step_scale=c,
                       tol=1e-8, max_epochs=5000, seed=7)
    w, dual, status, n_epochs, primal, gap, f0, hist, n_values = embed_module.solve(
        X.data, X.indices, X.indptr, X.shape[1], y, sigma, lam, step, c, 1e-8, 5000, 7)
    assert m.stop_reason == "converged" and status == 0 and n_epochs == m.n_epochs
    np.testing.assert_array_equal(w, m.coef)
    np.testing.assert_array_equal(dual, m.dual)
    np.testing.assert_array_equal(hist[0], m.history["primal"])
    np.testing.assert_array_equal(hist[1], m.history["gap"])
    assert gap == m.history["gap"][-1] and primal == m.history["primal"][-1]
    assert f0 == m.params["f0"] and gap <= 1e-8 * f0
    assert n_values == len(m.history.dtype.names) - 2      # primal, dual, gap, passes, eta


def test_cimported_loop_in_two_threads_gives_the_same_iterates(embed_module):
    """SorelOptions.n_threads = 2 (each epoch's losses and anchor in blocks of rows) is
    train_sorel(n_jobs=2), bit for bit, on X over the blocks' 2^18 nonzeros."""
    from dualsolve import _threads
    from test_threads import _int32_problem
    if _threads.effective_n_jobs(2) < 2:
        pytest.skip("one core here: train_sorel(n_jobs=2) would run one thread")
    X, y = _int32_problem(20000, 20_000, seed=4)
    n = X.shape[0]
    m = ds.train_sorel(X, y, loss="squared", lam=1.0 / n, tol=1e-6, max_epochs=300, seed=3,
                       n_jobs=2)
    assert m.converged and m.params["n_jobs"] == 2
    w, dual, status, n_epochs, primal, gap, f0, hist, _ = embed_module.solve(
        X.data, X.indices, X.indptr, X.shape[1], y, ds.spectrum("superquantile", n), 1.0 / n,
        m.params["step"], m.params["dual_step_scale"], 1e-6, 300, 3, n_threads=2)
    assert status == 0 and n_epochs == m.n_epochs
    np.testing.assert_array_equal(w, m.coef)
    np.testing.assert_array_equal(hist[1], m.history["gap"])


def test_the_hook_stops_the_loop(embed_module, problem):
    """A nonzero return from the hook is the status the engine stops with, after
    reporting that epoch; the iterate is the reported one (train_sorel's callback agrees)."""
    from dualsolve._core import status
    X, y = problem
    n = X.shape[0]
    sigma = ds.spectrum("superquantile", n)
    w, dual, st, n_epochs, primal, gap, f0, hist, _ = embed_module.solve(
        X.data, X.indices, X.indptr, X.shape[1], y, sigma, 1.0 / n, 2e-3, 0.1, 0.0, 50, 3,
        stop_after=4)
    assert st == status.CALLBACK and n_epochs == 4 and hist.shape == (2, 5)
    m = ds.train_sorel(X, y, lam=1.0 / n, step=2e-3, tol=0.0, max_epochs=50, seed=3,
                       callback=lambda info: info["epoch"] == 4)
    assert m.stop_reason == "callback" and m.n_epochs == 4
    np.testing.assert_array_equal(w, m.coef)


def test_status_codes_are_the_packages(embed_module):
    from dualsolve._core import status
    assert embed_module.status_codes() == (status.CONVERGED, status.MAX_EPOCHS, status.CALLBACK,
                                           status.INTERRUPTED, status.DIVERGED, status.NO_MEMORY)
