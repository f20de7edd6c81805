"""A user extension that cimports the primal-dual family's engines through
dualsolve.get_include() -- ``spdc_run`` (SPDC and its dual-free variant) and ``svrg_run``
(SVRG, Katyusha) -- reproduces train_spdc / train_df_spdc / train_svrg / train_katyusha
exactly (same seed, same iterates), and drives them with a hook of its own through the
package's one status codes and hook type."""
import numpy as np
import pytest

import dualsolve as ds

PYX = '''
    # cython: language_level=3, boundscheck=False, wraparound=False
    import numpy as np
    from libc.stdint cimport int32_t
    from libc.stdlib cimport malloc, free
    from dualsolve._core.losses cimport Loss, LOSS_LOGISTIC
    from dualsolve._core.status cimport (epoch_hook, STATUS_CONVERGED, STATUS_MAX_EPOCHS,
                                         STATUS_CALLBACK, STATUS_DIVERGED, STATUS_NO_MEMORY)
    from dualsolve.primal_dual._spdc cimport (SpdcProblem, SpdcOptions, SpdcResult, SpdcFeature,
                                              SPDC_EUCLID, SPDC_DUAL_FREE, SPDC_HOOK_VALUES,
                                              spdc_default_options, spdc_problem_init, spdc_run)
    from dualsolve.primal_dual._svrg cimport (SvrgProblem, SvrgOptions, SvrgResult,
                                              SVRG_METHOD_SVRG, SVRG_METHOD_KATYUSHA,
                                              SVRG_HOOK_VALUES, svrg_default_options,
                                              svrg_problem_init, svrg_run)

    # a hook of our own: remember the epochs reported (and the first value), stop after
    # stop_at; ctx points to this record
    ctypedef struct Record:
        Py_ssize_t n_reports
        Py_ssize_t polls
        Py_ssize_t stop_at
        double first[8]

    cdef int record_hook(void* ctx, Py_ssize_t epoch, const double* values) noexcept nogil:
        cdef Record* r = <Record*>ctx
        if epoch < 0:
            r.polls += 1
            return 0
        if r.n_reports < 8:
            r.first[r.n_reports] = values[0]
        r.n_reports += 1
        return STATUS_CALLBACK if epoch >= r.stop_at else 0

    cdef Loss logistic():
        cdef Loss loss
        loss.kind = LOSS_LOGISTIC
        loss.param = 0.0
        return loss

    def spdc(double[::1] data, int32_t[::1] indices, int32_t[::1] indptr, Py_ssize_t d,
             double[::1] b, double lam, double R, bint dual_free, double tol, double scale,
             Py_ssize_t max_epochs, unsigned long long seed, Py_ssize_t stop_at=-1,
             int n_threads=1):
        cdef Py_ssize_t n = b.shape[0], j
        x = np.zeros(d)
        y = np.empty(n)
        v = np.zeros(n)
        cdef double[::1] yv = y, vv = v
        for j in range(n):                       # y0 = phi'(0) = -b / 2 (logistic)
            yv[j] = -b[j] / 2.0
        z = np.empty(n)
        work = np.zeros(d)
        order = np.empty(n + 1, dtype=np.intp)
        perm = np.empty(n, dtype=np.intp)
        cdef double[::1] zv = z, wv = work
        cdef Py_ssize_t[::1] ov = order, pv = perm
        cdef SpdcFeature* feat = <SpdcFeature*>malloc(d * sizeof(SpdcFeature))
        cdef SpdcProblem P
        cdef SpdcOptions opt = spdc_default_options()
        cdef SpdcResult res
        cdef Record rec
        rec.n_reports = 0
        rec.polls = 0
        rec.stop_at = stop_at
        for j in range(d):
            feat[j].x = 0.0
        spdc_problem_init(&P, n, d, &b[0], logistic(), lam, 0.0, R,
                          SPDC_DUAL_FREE if dual_free else SPDC_EUCLID, 1, feat, &yv[0],
                          &vv[0] if dual_free else NULL, &zv[0], &wv[0], &ov[0], &pv[0])
        opt.tol = tol
        opt.scale = scale
        opt.max_epochs = max_epochs
        opt.seed = seed
        opt.n_threads = n_threads
        with nogil:
            if stop_at >= 0:
                spdc_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, record_hook, &rec)
            else:
                spdc_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, NULL, NULL)
        cdef double[::1] xv = x
        for j in range(d):
            xv[j] = feat[j].x
        free(feat)
        return x, y, res.status, res.n_epochs, res.gap, rec.n_reports, rec.first[0]

    def svrg(double[::1] data, int32_t[::1] indices, int32_t[::1] indptr, Py_ssize_t d,
             double[::1] b, double lam, bint katyusha, double step, double tau1, double tol,
             Py_ssize_t max_epochs, unsigned long long seed, Py_ssize_t stop_at=-1,
             int n_threads=1):
        cdef Py_ssize_t n = b.shape[0]
        x = np.zeros(d)
        cdef double[::1] xv = x
        cdef SvrgProblem P
        cdef SvrgOptions opt = svrg_default_options()
        cdef SvrgResult res
        cdef Record rec
        rec.n_reports = 0
        rec.polls = 0
        rec.stop_at = stop_at
        svrg_problem_init(&P, n, d, &b[0], logistic(), lam, 0.0,
                          SVRG_METHOD_KATYUSHA if katyusha else SVRG_METHOD_SVRG, step, 2 * n,
                          tau1, 1, &xv[0])
        opt.tol = tol
        opt.max_epochs = max_epochs
        opt.seed = seed
        opt.n_threads = n_threads
        with nogil:
            if stop_at >= 0:
                svrg_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, record_hook, &rec)
            else:
                svrg_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, NULL, NULL)
        return x, res.status, res.n_epochs, res.gap, res.p0, rec.n_reports, rec.first[0]

    def hook_values():
        return SPDC_HOOK_VALUES, SVRG_HOOK_VALUES

    def status_codes():
        return STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_CALLBACK, STATUS_NO_MEMORY
'''


@pytest.fixture(scope="module")
def embed_module(tmp_path_factory, request):
    embed = request.getfixturevalue("embed_helper")
    return embed.build_extension(tmp_path_factory, "embed_primal_dual", PYX)


@pytest.fixture(scope="module")
def data(a9a):
    X, y = a9a
    X, y = X[:3000].tocsr(), y[:3000]
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X, y


def test_installed_pxd_files_are_found():
    import os
    inc = ds.get_include()
    for rel in ["dualsolve/primal_dual/_spdc.pxd", "dualsolve/primal_dual/_svrg.pxd",
                "dualsolve/_core/lazy.pxd", "dualsolve/_core/status.pxd"]:
        assert os.path.exists(os.path.join(inc, rel)), rel


@pytest.mark.parametrize("name", ["train_spdc", "train_df_spdc"])
def test_cimported_spdc_gives_the_same_iterates(embed_module, data, name):
    X, y = data
    lam = 1e-3
    m = getattr(ds, name)(X, y, loss="logistic", lam=lam, tol=1e-8, max_epochs=300, seed=5)
    assert m.converged
    x, ydual, status, n_epochs, gap, _, _ = embed_module.spdc(
        X.data, X.indices, X.indptr, X.shape[1], y, lam, m.params["R"], name == "train_df_spdc",
        1e-8, m.params["scale"], 300, 5)
    assert status == 0 and n_epochs == m.n_epochs
    np.testing.assert_array_equal(x, m.coef)
    np.testing.assert_array_equal(ydual, m.dual)
    assert gap == m.history["gap"][-1]


@pytest.mark.parametrize("name", ["train_svrg", "train_katyusha"])
def test_cimported_svrg_gives_the_same_iterates(embed_module, data, name):
    X, y = data
    lam = 1e-3
    m = getattr(ds, name)(X, y, loss="logistic", lam=lam, tol=1e-8, max_epochs=100, seed=7)
    assert m.converged
    x, status, n_epochs, gap, p0, _, _ = embed_module.svrg(
        X.data, X.indices, X.indptr, X.shape[1], y, lam, name == "train_katyusha",
        m.params["step"], m.params.get("tau1", 0.0), 1e-8, 100, 7)
    assert status == 0 and n_epochs == m.n_epochs
    np.testing.assert_array_equal(x, m.coef)
    assert gap == m.history["gap"][-1] and p0 == m.params["p0"]


def test_cimported_spdc_in_two_threads_gives_the_same_iterates(embed_module):
    """SpdcOptions.n_threads = 2 (the evaluations' passes in blocks of rows) is
    train_spdc(n_jobs=2), bit for bit, on X over the blocks' 2^18 nonzeros."""
    from dualsolve import _threads
    from test_threads import _int32_problem
    if _threads.effective_n_jobs(2) < 2:
        pytest.skip("one core here: train_spdc(n_jobs=2) would run one thread")
    X, y = _int32_problem(20000, 20_000, seed=4)
    lam = 1.0 / X.shape[0]
    m = ds.train_spdc(X, y, loss="logistic", lam=lam, tol=1e-8, max_epochs=300, seed=5,
                      n_jobs=2)
    assert m.converged
    x, ydual, status, n_epochs, gap, _, _ = embed_module.spdc(
        X.data, X.indices, X.indptr, X.shape[1], y, lam, m.params["R"], False, 1e-8,
        m.params["scale"], 300, 5, n_threads=2)
    assert status == 0 and n_epochs == m.n_epochs
    np.testing.assert_array_equal(x, m.coef)
    assert gap == m.history["gap"][-1]


def test_cimported_svrg_in_two_threads_gives_the_same_iterates(embed_module):
    """SvrgOptions.n_threads = 2 (the snapshots' passes in blocks of rows) is
    train_svrg(n_jobs=2), bit for bit, on X over the blocks' 2^18 nonzeros."""
    from dualsolve import _threads
    from test_threads import _int32_problem
    if _threads.effective_n_jobs(2) < 2:
        pytest.skip("one core here: train_svrg(n_jobs=2) would run one thread")
    X, y = _int32_problem(20000, 200_000, seed=4)
    lam = 1.0 / X.shape[0]
    m = ds.train_svrg(X, y, loss="logistic", lam=lam, tol=1e-8, max_epochs=100, seed=7,
                      n_jobs=2)
    assert m.converged
    x, status, n_epochs, gap, p0, _, _ = embed_module.svrg(
        X.data, X.indices, X.indptr, X.shape[1], y, lam, False, m.params["step"], 0.0, 1e-8,
        100, 7, n_threads=2)
    assert status == 0 and n_epochs == m.n_epochs
    np.testing.assert_array_equal(x, m.coef)
    assert gap == m.history["gap"][-1]


def test_a_hook_of_ones_own_stops_the_engines(embed_module, data):
    """The hook sees epoch 0 (the start: P(0) = log 2 at x = 0) and every epoch after it;
    returning STATUS_CALLBACK at epoch 2 stops either engine there with that status."""
    X, y = data
    from dualsolve._core import status
    callback = status.CALLBACK
    x, _, status, n_epochs, _, reports, first = embed_module.spdc(
        X.data, X.indices, X.indptr, X.shape[1], y, 1e-3, 1.0, False, 0.0, 1.0, 50, 0,
        stop_at=2)
    assert (status, n_epochs, reports) == (callback, 2, 3) and first == pytest.approx(np.log(2))
    x, status, n_epochs, _, _, reports, first = embed_module.svrg(
        X.data, X.indices, X.indptr, X.shape[1], y, 1e-3, False, 0.1, 0.0, 0.0, 50, 0,
        stop_at=2)
    assert (status, n_epochs, reports) == (callback, 2, 3) and first == pytest.approx(np.log(2))


def test_status_codes_and_hook_sizes(embed_module):
    from dualsolve._core import status
    assert embed_module.status_codes() == (status.CONVERGED, status.MAX_EPOCHS, status.CALLBACK,
                                           status.NO_MEMORY)
    assert embed_module.hook_values() == (5, 5)
