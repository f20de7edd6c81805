"""A user extension that cimports the kernel engines of the mixup family (``kernel_sdca_run``,
``kernel_sgd_run`` with the package's ``epoch_hook`` and status codes) through
dualsolve.get_include() reproduces train_mixup_sdca and train_kernel_sgd exactly (same seed,
same iterates, same certificate), with a hook of its own in C; the hook's nonzero answer,
at the end of an epoch or at a poll inside one, is the status the engine stops with."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds
from dualsolve._core import kernels as _kernels
from dualsolve._core import status

PYX = '''
    # cython: language_level=3, boundscheck=False, wraparound=False
    import numpy as np
    from dualsolve._core.kernels cimport ColumnSource
    from dualsolve._core.losses cimport Loss, LOSS_LOGISTIC
    from dualsolve._core.status cimport (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_CALLBACK,
                                         STATUS_INTERRUPTED, STATUS_DIVERGED, STATUS_NO_MEMORY,
                                         epoch_hook)
    from dualsolve.mixup._kernel_sdca cimport (
        KernelProblem, KernelOptions, KernelResult, KERNEL_SDCA_HOOK_VALUES,
        kernel_problem_init, kernel_default_options, kernel_sdca_run,
        KernelSgdProblem, KernelSgdOptions, KernelSgdResult, KERNEL_SGD_HOOK_VALUES,
        kernel_sgd_problem_init, kernel_sgd_default_options, kernel_sgd_run)

    ctypedef struct Record:
        double* primal          # one slot per epoch
        double* gap
        double* last            # the last value of the epoch (n_active / step)
        Py_ssize_t size
        Py_ssize_t n_values
        Py_ssize_t stop_after   # answer stop_with after this epoch; -1: never
        Py_ssize_t stop_at_poll # answer stop_with at this poll (1, 2, ...); -1: never
        int stop_with
        Py_ssize_t polls

    cdef int record(void* ctx, Py_ssize_t epoch, const double* values) noexcept nogil:
        cdef Record* r = <Record*>ctx
        if epoch < 0:
            r.polls += 1
            return r.stop_with if r.polls == r.stop_at_poll else 0
        if epoch < r.size:
            r.primal[epoch] = values[0]
            r.gap[epoch] = values[2]
            r.last[epoch] = values[r.n_values - 1]
        return r.stop_with if epoch == r.stop_after else 0

    cdef Loss logistic():
        cdef Loss loss
        loss.kind = LOSS_LOGISTIC
        loss.param = 0.0
        return loss

    cdef object start(Record* rec, Py_ssize_t max_epochs, Py_ssize_t n_values,
                      Py_ssize_t stop_after, Py_ssize_t stop_at_poll, int stop_with):
        hist = np.full((3, max_epochs + 1), np.nan)
        cdef double[::1] hp = hist[0], hg = hist[1], hl = hist[2]
        rec.primal = &hp[0]
        rec.gap = &hg[0]
        rec.last = &hl[0]
        rec.size = max_epochs + 1
        rec.n_values = n_values
        rec.stop_after = stop_after
        rec.stop_at_poll = stop_at_poll
        rec.stop_with = stop_with
        rec.polls = 0
        return hist

    def solve_sdca(ColumnSource K not None, double[::1] y, double lam, double tol,
                   Py_ssize_t max_epochs, unsigned long long seed, Py_ssize_t stop_after=-1,
                   Py_ssize_t stop_at_poll=-1, int stop_with=STATUS_CALLBACK):
        cdef Py_ssize_t n = y.shape[0]
        alpha = np.zeros(n)
        beta = np.zeros(K.n)
        cdef double[::1] av = alpha, bv = beta
        cdef KernelProblem P
        cdef KernelOptions opt = kernel_default_options()
        cdef KernelResult res
        cdef Record rec
        hist = start(&rec, max_epochs, KERNEL_SDCA_HOOK_VALUES, stop_after, stop_at_poll,
                     stop_with)
        kernel_problem_init(&P, n, &y[0], logistic(), lam, &av[0], &bv[0])
        opt.tol = tol
        opt.max_epochs = max_epochs
        opt.seed = seed
        with nogil:
            kernel_sdca_run(K, &P, &opt, &res, record, &rec)
        return dict(alpha=alpha, beta=beta, status=res.status, n_epochs=res.n_epochs,
                    primal=res.primal, gap=res.gap, p0=res.p0, polls=rec.polls,
                    hist=hist[:, :res.n_epochs + 1])

    def solve_sgd(ColumnSource K not None, double[::1] y, double lam, double step, double tol,
                  Py_ssize_t max_epochs, unsigned long long seed, Py_ssize_t stop_after=-1,
                  Py_ssize_t stop_at_poll=-1, int stop_with=STATUS_CALLBACK):
        cdef Py_ssize_t n = y.shape[0]
        beta = np.zeros(n)
        cdef double[::1] bv = beta
        cdef KernelSgdProblem P
        cdef KernelSgdOptions opt = kernel_sgd_default_options()
        cdef KernelSgdResult res
        cdef Record rec
        hist = start(&rec, max_epochs, KERNEL_SGD_HOOK_VALUES, stop_after, stop_at_poll,
                     stop_with)
        kernel_sgd_problem_init(&P, n, &y[0], logistic(), lam, &bv[0])
        opt.tol = tol
        opt.max_epochs = max_epochs
        opt.step = step
        opt.seed = seed
        with nogil:
            kernel_sgd_run(K, &P, &opt, &res, record, &rec)
        return dict(beta=beta, status=res.status, n_epochs=res.n_epochs, primal=res.primal,
                    gap=res.gap, p0=res.p0, step=res.step, polls=rec.polls,
                    hist=hist[:, :res.n_epochs + 1])

    def hook_values():
        return KERNEL_SDCA_HOOK_VALUES, KERNEL_SGD_HOOK_VALUES

    def status_codes():
        return (STATUS_CONVERGED, STATUS_MAX_EPOCHS, STATUS_CALLBACK, STATUS_INTERRUPTED,
                STATUS_DIVERGED, STATUS_NO_MEMORY)
'''

GAMMA = 0.1


@pytest.fixture(scope="module")
def embed_module(tmp_path_factory, request):
    embed = request.getfixturevalue("embed_helper")
    return embed.build_extension(tmp_path_factory, "embed_mixup", PYX)


@pytest.fixture(scope="module")
def heart():
    """heart_scale (270 x 13, labels -1/+1) and its rbf Gram matrix, built as the api does."""
    X, y = ds.datasets.load("heart_scale")
    X = sp.csr_matrix(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    spec = _kernels.make_kernel("rbf", GAMMA, 0.0, 3, X=X)
    return X, y, _kernels.make_column_source(X, None, spec, gram_dtype=np.float64)


@pytest.fixture(scope="module")
def big():
    """An rbf problem big enough that an epoch polls the hook (n^2 > KERNEL_POLL_WORK)."""
    rng = np.random.default_rng(0)
    n = 2200
    X = rng.standard_normal((n, 5))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    spec = _kernels.make_kernel("rbf", 0.2, 0.0, 3, X=sp.csr_matrix(X))
    return y, _kernels.make_column_source(sp.csr_matrix(X), None, spec, gram_dtype=np.float64)


def test_installed_pxd_files_are_found():
    import os
    inc = ds.get_include()
    for rel in ["dualsolve/mixup/_kernel_sdca.pxd", "dualsolve/_core/kernels.pxd",
                "dualsolve/sdca/steps.pxd", "dualsolve/_core/status.pxd"]:
        assert os.path.exists(os.path.join(inc, rel)), rel


def test_hook_value_counts_are_the_history_columns(embed_module, heart):
    X, y, _ = heart
    n_sdca, n_sgd = embed_module.hook_values()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # max_epochs, on purpose
        m = ds.train_mixup_sdca(X, y, kernel="rbf", max_epochs=1)
        s = ds.train_kernel_sgd(X, y, kernel="rbf", max_epochs=1)
    assert n_sdca == len(m.history.dtype.names) - 2        # minus epoch and time
    assert n_sgd == len(s.history.dtype.names) - 2


@pytest.mark.parametrize("seed", [0, 7])
def test_cimported_sdca_gives_the_same_iterates(embed_module, heart, seed):
    X, y, K = heart
    lam = 1e-3
    m = ds.train_mixup_sdca(X, y, kernel="rbf", kernel_gamma=GAMMA, method="exact", lam=lam,
                            tol=1e-9, max_epochs=500, seed=seed)
    r = embed_module.solve_sdca(K, y, lam, 1e-9, 500, seed)
    assert m.stop_reason == "converged" and r["status"] == status.CONVERGED
    assert r["n_epochs"] == m.n_epochs
    np.testing.assert_array_equal(r["beta"], m.dual)
    np.testing.assert_array_equal(r["hist"][0], m.history["primal"])
    np.testing.assert_array_equal(r["hist"][1], m.history["gap"])
    np.testing.assert_array_equal(r["hist"][2], m.history["n_active"])
    assert r["gap"] == m.history["gap"][-1] and r["gap"] <= 1e-9 * r["p0"]
    assert r["p0"] == m.params["p0"]


@pytest.mark.parametrize("seed, tol, reason", [(0, 5e-3, "converged"), (3, 0.0, "max_epochs")])
def test_cimported_sgd_gives_the_same_iterates(embed_module, heart, seed, tol, reason):
    X, y, K = heart
    n, lam, step = y.shape[0], 1e-2, 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # max_epochs, on purpose
        m = ds.train_kernel_sgd(X, y, kernel="rbf", kernel_gamma=GAMMA, lam=lam, step=step,
                                tol=tol, max_epochs=300, seed=seed)
    r = embed_module.solve_sgd(K, y, lam, step, tol, 300, seed)
    assert m.stop_reason == reason
    assert r["status"] == (status.CONVERGED if reason == "converged" else status.MAX_EPOCHS)
    assert r["n_epochs"] == m.n_epochs
    np.testing.assert_array_equal(r["beta"] * lam * n, m.dual)   # the model's convention
    np.testing.assert_array_equal(r["hist"][0], m.history["primal"])
    np.testing.assert_array_equal(r["hist"][1], m.history["gap"])
    np.testing.assert_array_equal(r["hist"][2], m.history["step"])
    assert r["step"] == m.params["last_step"] and r["p0"] == m.params["p0"]


def test_the_hook_stops_the_loop(embed_module, heart):
    """A nonzero return after an epoch is the status the engine stops with, after that
    epoch's report; the iterate is the reported one (the Python callback agrees)."""
    X, y, K = heart
    lam = 1e-3
    r = embed_module.solve_sdca(K, y, lam, 0.0, 50, 3, stop_after=4)
    assert r["status"] == status.CALLBACK and r["n_epochs"] == 4 and r["hist"].shape == (3, 5)
    m = ds.train_mixup_sdca(X, y, kernel="rbf", kernel_gamma=GAMMA, method="exact", lam=lam,
                            tol=0.0, max_epochs=50, seed=3,
                            callback=lambda info: info["epoch"] == 4)
    assert m.stop_reason == "callback" and m.n_epochs == 4
    np.testing.assert_array_equal(r["beta"], m.dual)

    r = embed_module.solve_sgd(K, y, 1e-2, 0.5, 0.0, 50, 3, stop_after=2,
                               stop_with=status.DIVERGED)
    assert r["status"] == status.DIVERGED and r["n_epochs"] == 2 and r["hist"].shape == (3, 3)
    r0 = embed_module.solve_sdca(K, y, lam, 0.0, 50, 3, stop_after=0)
    assert r0["status"] == status.CALLBACK and r0["n_epochs"] == 0


@pytest.mark.parametrize("engine", ["sdca", "sgd"])
def test_a_poll_inside_an_epoch_stops_the_loop(embed_module, big, engine):
    """On a large problem the engine polls the hook with epoch -1 inside every epoch (so that
    Ctrl-C is seen within an epoch); a nonzero answer there stops the run at once, with
    only the completed epochs counted and a finite iterate."""
    y, K = big
    n = y.shape[0]

    def run(**kw):
        if engine == "sdca":
            return embed_module.solve_sdca(K, y, 1.0 / n, 0.0, 3, 1, **kw)
        return embed_module.solve_sgd(K, y, 1.0 / n, 0.5, 0.0, 3, 1, **kw)

    full = run()
    assert full["status"] == status.MAX_EPOCHS and full["n_epochs"] == 3
    assert full["polls"] >= 3                               # at least one per epoch
    per_epoch = full["polls"] // 3
    stopped = run(stop_at_poll=per_epoch + 1, stop_with=status.INTERRUPTED)
    assert stopped["status"] == status.INTERRUPTED
    assert stopped["n_epochs"] == 1 and stopped["polls"] == per_epoch + 1
    assert stopped["hist"].shape == (3, 2)                 # epochs 0 and 1 reported
    np.testing.assert_array_equal(stopped["hist"], full["hist"][:, :2])
    beta = stopped["beta"]
    assert np.isfinite(beta).all() and not np.array_equal(beta, full["beta"])


def test_invalid_problem_is_not_a_status(embed_module, heart):
    """-1 (documented in the .pxd) for labels that do not match the kernel matrix."""
    X, y, K = heart
    assert embed_module.solve_sdca(K, y[:-1], 1e-3, 0.0, 5, 0)["status"] == -1
    assert embed_module.solve_sgd(K, y[:-1], 1e-3, 0.1, 0.0, 5, 0)["status"] == -1


def test_status_codes_are_the_packages(embed_module):
    assert embed_module.status_codes() == (status.CONVERGED, status.MAX_EPOCHS, status.CALLBACK,
                                           status.INTERRUPTED, status.DIVERGED, status.NO_MEMORY)
