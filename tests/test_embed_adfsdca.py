"""A user extension that cimports the dual-free SDCA engine (``dfsdca_run`` with the package's
``epoch_hook`` and ``STATUS_*`` codes) through dualsolve.get_include() reproduces
train_dfsdca / train_adfsdca exactly: same seed, same iterates, same certificates."""
import numpy as np
import pytest

import dualsolve as ds
from dualsolve._validation import check_csr

PYX = '''
    # cython: language_level=3, boundscheck=False, wraparound=False
    import numpy as np
    from libc.stdint cimport int32_t
    from dualsolve._core.losses cimport Loss, LOSS_LOGISTIC
    from dualsolve._core.status cimport (epoch_hook, STATUS_CONVERGED, STATUS_MAX_EPOCHS,
                                         STATUS_CALLBACK, STATUS_INTERRUPTED, STATUS_DIVERGED,
                                         STATUS_NO_MEMORY)
    from dualsolve.adfsdca._dfsdca cimport (DfProblem, DfOptions, DfResult, dfsdca_run,
                                            df_default_options, df_problem_init,
                                            DF_HOOK_VALUES)

    ctypedef struct Gaps:
        double* gap           # the certificate of every epoch
        Py_ssize_t size
        Py_ssize_t polls      # calls with epoch -1 (inside long epochs)

    cdef int keep_gaps(void* ctx, Py_ssize_t epoch, const double* values) noexcept nogil:
        cdef Gaps* g = <Gaps*>ctx
        if epoch < 0:
            g.polls += 1
        elif epoch < g.size:
            g.gap[epoch] = values[2]
        return 0

    def solve(double[::1] data, int32_t[::1] indices, int32_t[::1] indptr, Py_ssize_t d,
              double[::1] y, double lam, int method, double tol, Py_ssize_t max_epochs,
              unsigned long long seed, double step_cap, sqnorm=None, int n_threads=1):
        cdef Py_ssize_t n = y.shape[0]
        w = np.zeros(d)
        alpha = np.zeros(n)
        gaps = np.full(max_epochs + 1, np.nan)
        cdef double[::1] wv = w, av = alpha, gv = gaps
        cdef const double[::1] sv
        cdef const double* sq = NULL
        if sqnorm is not None:
            sv = sqnorm
            sq = &sv[0]
        cdef Loss loss
        loss.kind = LOSS_LOGISTIC
        loss.param = 0.0
        cdef DfProblem P
        df_problem_init(&P, n, d, &y[0], loss, lam, &wv[0], &av[0], sq)
        cdef DfOptions opt = df_default_options()
        opt.method = method
        opt.tol = tol
        opt.max_epochs = max_epochs
        opt.seed = seed
        opt.step_cap = step_cap
        opt.n_threads = n_threads
        cdef DfResult res
        cdef Gaps g
        g.gap = &gv[0]
        g.size = max_epochs + 1
        g.polls = 0
        cdef epoch_hook hook = keep_gaps
        with nogil:
            dfsdca_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, hook, &g)
        return w, alpha, res.status, res.n_epochs, res.gap, res.theta, gaps, g.polls

    def constants():
        return (DF_HOOK_VALUES, STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_CALLBACK,
                STATUS_INTERRUPTED, STATUS_DIVERGED, STATUS_NO_MEMORY)
'''

# (train function, its keywords, dfsdca_run's method, its step_cap)
RUNS = {
    "dfsdca": (ds.train_dfsdca, {}, 0, 0.0),
    "is_dfsdca": (ds.train_dfsdca, dict(sampling="importance"), 1, 0.0),
    "adfsdca_plus": (ds.train_adfsdca, {}, 2, 1.0),
    "adfsdca_exact": (ds.train_adfsdca, dict(variant="exact"), 3, 0.0),
}


@pytest.fixture(scope="module")
def embed_module(tmp_path_factory, request):
    embed = request.getfixturevalue("embed_helper")
    return embed.build_extension(tmp_path_factory, "embed_adfsdca", PYX)


def test_installed_pxd_is_found():
    import os
    assert os.path.exists(os.path.join(ds.get_include(), "dualsolve/adfsdca/_dfsdca.pxd"))


@pytest.mark.parametrize("name", sorted(RUNS))
def test_cimported_loop_gives_the_same_iterates(name, embed_module, a9a):
    f, kw, method, cap = RUNS[name]
    X, y = a9a
    rows = 300 if method == 3 else 5000          # exact: a step touches most rows of a9a
    X, y = X[:rows].tocsr(), y[:rows]
    lam = 1.0 / X.shape[0]
    m = f(X, y, loss="logistic", lam=lam, tol=1e-8, max_epochs=300, seed=11, **kw)
    assert m.stop_reason == "converged"
    # the norms train_* uses (the validating pass), so that every step is the same
    sqnorm = check_csr(X).sqnorm
    w, alpha, status, n_epochs, gap, theta, gaps, polls = embed_module.solve(
        X.data, X.indices, X.indptr, X.shape[1], y, lam, method, 1e-8, 300, 11, cap, sqnorm)
    assert status == 0 and n_epochs == m.n_epochs
    np.testing.assert_array_equal(w, m.coef)
    np.testing.assert_array_equal(alpha, m.dual)
    np.testing.assert_array_equal(gaps[:n_epochs + 1], m.history["gap"])
    assert gap == m.history["gap"][-1] and theta == m.params["theta"]
    # without the norms dfsdca_run computes them: the same problem to rounding
    w2, alpha2, status2, *_ = embed_module.solve(
        X.data, X.indices, X.indptr, X.shape[1], y, lam, method, 1e-8, 300, 11, cap)
    assert status2 == 0
    np.testing.assert_allclose(w2, m.coef, rtol=0, atol=1e-6 * np.abs(m.coef).max())


def test_cimported_loop_in_two_threads_gives_the_same_iterates(embed_module):
    """DfOptions.n_threads = 2 (the checks' passes in blocks of rows) is
    train_dfsdca(n_jobs=2), bit for bit, on X over the blocks' 2^18 nonzeros."""
    from dualsolve import _threads
    from test_threads import _int32_problem
    if _threads.effective_n_jobs(2) < 2:
        pytest.skip("one core here: train_dfsdca(n_jobs=2) would run one thread")
    X, y = _int32_problem(20000, 20_000, seed=5)
    lam = 1.0 / X.shape[0]
    m = ds.train_dfsdca(X, y, loss="logistic", lam=lam, tol=1e-8, max_epochs=300, seed=11,
                        n_jobs=2)
    assert m.converged
    w, alpha, status, n_epochs, gap, *_ = embed_module.solve(
        X.data, X.indices, X.indptr, X.shape[1], y, lam, 0, 1e-8, 300, 11, 0.0,
        check_csr(X).sqnorm, n_threads=2)
    assert status == 0 and n_epochs == m.n_epochs
    np.testing.assert_array_equal(w, m.coef)
    assert gap == m.history["gap"][-1]


def test_long_exact_epochs_poll_the_hook(embed_module, a9a):
    """An exact epoch on a9a touches nearly every row per step: the hook is polled (epoch -1)
    inside it, not only at the epoch's end."""
    X, y = a9a
    X, y = X[:2000].tocsr(), y[:2000]
    *_, status, n_epochs, gap, theta, gaps, polls = embed_module.solve(
        X.data, X.indices, X.indptr, X.shape[1], y, 1.0 / 2000, 3, 0.0, 1, 0, 0.0)
    assert status == 1 and n_epochs == 1 and polls > 10


def test_status_codes_are_the_packages(embed_module):
    from dualsolve._core import status
    assert embed_module.constants() == (5, status.CONVERGED, status.MAX_EPOCHS,
                                        status.CALLBACK, status.INTERRUPTED, status.DIVERGED,
                                        status.NO_MEMORY)
