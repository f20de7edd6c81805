"""A user extension that cimports the Newton engine (``newton_run``, ``_newton.pxd``) gets
train_newton's model bit for bit, on one thread and in two (NewtonOptions.n_threads);
built like the other families' embed tests (tests/helpers/embed.py)."""
import numpy as np
import pytest

import dualsolve as ds
from dualsolve import _threads
from dualsolve.newton import _newton
from test_threads import _int32_problem

PYX = '''
    # cython: language_level=3, boundscheck=False, wraparound=False
    import numpy as np
    from libc.stdint cimport int32_t
    from dualsolve._core.losses cimport Loss, LOSS_LOGISTIC
    from dualsolve.newton._newton cimport (NewtonProblem, NewtonOptions, NewtonResult,
                                           newton_run, newton_default_options)

    def solve(double[::1] data, int32_t[::1] indices, int32_t[::1] indptr, Py_ssize_t d,
              double[::1] y, double lam, double tol, int n_threads=1):
        cdef Py_ssize_t n = y.shape[0]
        w = np.zeros(d)
        dual = np.zeros(n)
        cdef double[::1] wv = w, dv = dual
        cdef NewtonProblem P
        cdef NewtonOptions opt = newton_default_options()
        cdef NewtonResult res
        P.n = n
        P.d = d
        P.y = &y[0]
        P.weight = NULL
        P.loss.kind = LOSS_LOGISTIC
        P.loss.param = 0.0
        P.lam = lam
        P.bias = 0.0
        P.w = &wv[0]
        P.dual = &dv[0]
        opt.tol = tol
        opt.n_threads = n_threads
        with nogil:
            newton_run(&data[0], &indices[0], &indptr[0], &P, &opt, &res, NULL, NULL)
        return w, dual, res.status, res.n_epochs, res.gap
'''


@pytest.fixture(scope="module")
def embed_module(tmp_path_factory, request):
    embed = request.getfixturevalue("embed_helper")
    return embed.build_extension(tmp_path_factory, "embed_newton", PYX)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_cimported_newton_gives_train_newtons_model(embed_module, n_threads):
    if n_threads > 1 and _threads.effective_n_jobs(2) < 2:
        pytest.skip("one core here: train_newton(n_jobs=2) would run one thread")
    X, y = _int32_problem(3000, 200_000)        # wide: CG, and the polish of the dual
    lam = 1e-3 / X.shape[0]
    old = _newton._threads_min_nnz(0)           # threads on these 45,000 nonzeros
    try:
        m = ds.train_newton(X, y, lam=lam, tol=1e-9, n_jobs=n_threads)
        w, dual, status, n_epochs, gap = embed_module.solve(
            X.data, X.indices, X.indptr, X.shape[1], y, lam, 1e-9, n_threads=n_threads)
    finally:
        _newton._threads_min_nnz(old)
    assert status == 0 and m.converged and n_epochs == m.n_epochs
    np.testing.assert_array_equal(w, m.coef)
    np.testing.assert_array_equal(dual, m.dual)
    assert gap == m.history["gap"][-1]
