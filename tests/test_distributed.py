"""CoCoA+ on Dask (dualsolve.distributed): the certified optimum of train_sdca's problem on
a9a cut into uneven shards, on a 2-worker LocalCluster; the same seed, the same model;
a worker killed mid-solve costs a round and changes nothing; bad shards are errors before
the first round. The round logic is also checked in-process (simulate_cocoa), where it
must give the cluster's model bit for bit."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import dualsolve as ds
from dualsolve._validation import ConvergenceWarning
from dualsolve.distributed import simulate_cocoa, split_rows, train_cocoa
from dualsolve.distributed.cocoa import restore_environ
from solver_problems import interrupted  # tests/ (see conftest.py)

distributed = pytest.importorskip("distributed")

LAM = 1e-2          # CoCoA+ needs many rounds on a9a at small lam (docs/distributed.md)
TOL = 1e-6


@pytest.fixture(scope="module")
def client():
    environ = dict(os.environ)              # the nannies set OMP_NUM_THREADS=1 here
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0")
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()
    restore_environ(environ)


@pytest.fixture(scope="module")
def a9a():
    return ds.datasets.load("a9a")


def uneven(X, y, k, seed=0):
    """k blocks of consecutive rows with sizes far from equal (the last ones smallest)."""
    n = X.shape[0]
    sizes = np.random.default_rng(seed).dirichlet(np.arange(k, 0, -1.0)) * n
    cuts = np.concatenate([[0], np.cumsum(np.maximum(sizes.astype(int), 50))])
    cuts = np.minimum(cuts, n)
    cuts[-1] = n
    return [(X[a:b], y[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


def certified_equal(model, ref, X, y, loss):
    """The model's certificate holds and its objective is within tol of train_sdca's
    tight optimum, P being evaluated here, not read from the solver."""
    assert model.stop_reason == "converged"
    yy = np.where(y == np.max(y), 1.0, -1.0) if loss != "squared" else y
    lam = model.params["lam"]

    def P(w):
        return np.mean(ds._core.losses.value(loss, X @ w, yy)) + 0.5 * lam * w @ w

    p_star = P(ref.coef)
    assert P(model.coef) - p_star <= TOL * p_star
    # the reported gap bounds the true suboptimality (weak duality)
    assert P(model.coef) - p_star <= model.history["gap"][-1] * (1 + 1e-9) + 1e-15
    assert model.history["gap"][-1] <= TOL * model.history["dual"][-1]


@pytest.mark.parametrize("loss", ["logistic", "squared_hinge", "squared"])
@pytest.mark.parametrize("k", [2, 3, 7])
def test_certified_optimum_equals_train_sdca(client, a9a, loss, k):
    X, y = a9a
    y = y.astype(float)
    ref = ds.train_sdca(X, y, loss=loss, lam=LAM, tol=1e-12, max_epochs=100000)
    shards = uneven(X, y, k, seed=k)
    assert len({b[0].shape[0] for b in shards}) == k          # uneven sizes
    model = train_cocoa(shards, client=client, loss=loss, lam=LAM, tol=TOL, max_rounds=4000)
    certified_equal(model, ref, X, y, loss)
    assert model.params["n_shards"] == k
    assert model.dual.shape == (X.shape[0],)
    assert len(model.history) == model.n_epochs + 1
    assert (model.history["bytes"] > 0).all()


def test_same_seed_same_model_and_simulation_equal(client, a9a):
    X, y = a9a
    shards = split_rows(X, y, 3)
    a = train_cocoa(shards, client=client, lam=LAM, seed=5)
    b = train_cocoa(shards, client=client, lam=LAM, seed=5)
    sim = simulate_cocoa(X, y, 3, lam=LAM, seed=5)
    assert np.array_equal(a.coef, b.coef) and np.array_equal(a.dual, b.dual)
    assert np.array_equal(a.coef, sim.coef) and a.n_epochs == sim.n_epochs


@pytest.mark.parametrize("kind", ["blocks", "files"])
def test_worker_killed_after_round_two(client, a9a, tmp_path, kind):
    X, y = a9a
    blocks = split_rows(X, y, 4)
    shards = blocks
    if kind == "files":
        shards = []
        for k, (Xk, yk) in enumerate(blocks):
            path = tmp_path / f"part{k}.svm"
            ds.dump_svmlight(Xk, yk, str(path))
            shards.append(str(path))
    clean = train_cocoa(shards, client=client, lam=LAM)
    killed = []

    def kill(info):
        if info["epoch"] == 2 and not killed:
            victim = sorted(client.scheduler_info()["workers"])[0]
            client.run(os._exit, 1, workers=[victim], on_error="ignore")
            killed.append(victim)

    model = train_cocoa(shards, client=client, lam=LAM, callback=kill)
    client.wait_for_workers(2, timeout=60)
    assert killed and model.params["faults"] >= 1
    assert model.stop_reason == "converged"
    # the lost round ran again from the checkpoint with the same seeds: nothing changed
    assert np.array_equal(model.coef, clean.coef)
    assert model.n_epochs == clean.n_epochs


def test_one_vs_rest(client):
    rng = np.random.default_rng(0)
    X = sp.random(600, 40, density=0.2, random_state=1, format="csr")
    y = rng.integers(0, 3, 600)
    ref = ds.train_sdca(X, y, lam=1e-2, tol=1e-12)
    model = train_cocoa(split_rows(X, y, 3), client=client, lam=1e-2)
    assert model.coef.shape == (3, 40) and model.stop_reason == "converged"
    assert np.array_equal(model.classes, ref.classes)
    np.testing.assert_allclose(model.coef, ref.coef, atol=1e-3)
    assert model.params["class_stop_reasons"] == ["converged"] * 3
    assert (model.predict(X) == ref.predict(X)).mean() > 0.99


def test_callback_stops_and_max_rounds_warns(client, a9a):
    X, y = a9a
    shards = split_rows(X, y, 2)
    model = train_cocoa(shards, client=client, lam=LAM, callback=lambda info: info["epoch"] == 1)
    assert model.stop_reason == "callback" and model.n_epochs == 1
    with pytest.warns(ConvergenceWarning, match="max_rounds=1"):
        model = train_cocoa(shards, client=client, lam=LAM, max_rounds=1)
    assert model.stop_reason == "max_epochs" and model.n_epochs == 1


def test_bad_shards_raise_before_the_first_round(client, a9a, tmp_path):
    X, y = a9a
    rounds = []
    cb = rounds.append
    with pytest.raises(FileNotFoundError, match="nope.svm"):
        train_cocoa([str(tmp_path / "nope.svm")], client=client, callback=cb)
    with pytest.raises(ValueError, match="different numbers of columns"):
        train_cocoa([(X[:100], y[:100]), (X[100:200, :50], y[100:200])], client=client,
                    callback=cb)
    with pytest.raises(ValueError, match="no rows"):
        train_cocoa([(X[:100], y[:100]), (X[:0], y[:0])], client=client, callback=cb)
    with pytest.raises(ValueError, match="100 rows"):
        train_cocoa([(X[:100], y[:99])], client=client, callback=cb)
    with pytest.raises(ValueError, match="one class"):
        train_cocoa([(X[:100], np.ones(100))], client=client, callback=cb)
    empty = tmp_path / "empty.svm"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty.svm"):
        train_cocoa([str(empty)], client=client, callback=cb)
    assert rounds == []


@pytest.mark.parametrize("shards, exc, match", [
    ([], ValueError, "shards is empty"),
    ("a.svm", TypeError, "list of LIBSVM"),
    ([3], TypeError, r"shards\[0\]"),
])
def test_bad_shards_argument(shards, exc, match):
    with pytest.raises(exc, match=match):
        train_cocoa(shards, client=object())


@pytest.mark.parametrize("kwargs, match", [
    (dict(max_rounds=-1), "max_rounds"), (dict(local_epochs=0), "local_epochs"),
    (dict(aggregation="sum"), "aggregation"), (dict(loss="huber"), "loss"),
    (dict(tol=-1.0), "tol"),
])
def test_bad_parameters(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        train_cocoa([("x", "y")], client=object(), **kwargs)


def test_simulation_matches_sdca_with_other_settings(a9a):
    X, y = a9a
    ref = ds.train_sdca(X, y, lam=LAM, tol=1e-12)
    for kwargs in (dict(aggregation="average"), dict(local_epochs=0.5), dict(local_epochs=3.0),
                   dict(line_search=False)):
        model = simulate_cocoa(X, y, 4, lam=LAM, max_rounds=3000, **kwargs)
        certified_equal(model, ref, X, y.astype(float), "logistic")


def test_warm_start_from_a_nearby_lam(a9a):
    X, y = a9a
    near = simulate_cocoa(X, y, 3, lam=2 * LAM)
    warm = simulate_cocoa(X, y, 3, lam=LAM, warm_start=near, max_rounds=4000)
    ref = ds.train_sdca(X, y, lam=LAM, tol=1e-12)
    certified_equal(warm, ref, X, y.astype(float), "logistic")
    assert warm.history["gap"][0] < 0.2 * np.log(2)       # a cold start's gap is log 2
    with pytest.raises(ValueError, match="dual variables"):
        simulate_cocoa(X, y, 3, lam=LAM, warm_start=np.zeros(5))


def test_dask_is_imported_only_by_train_cocoa():
    code = ("import sys, dualsolve, dualsolve.distributed; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=os.path.dirname(__file__))


@pytest.mark.parametrize("where", ["cluster", "in_process"])
def test_ctrl_c_stops_with_the_partial_model(client, a9a, where):
    X, y = a9a
    shards = split_rows(X, y, 3)

    def fit(callback):
        if where == "cluster":
            return train_cocoa(shards, client=client, lam=1e-6, tol=0.0, max_rounds=10**6,
                               callback=callback)
        return simulate_cocoa(X, y, 3, lam=1e-6, tol=0.0, max_rounds=10**6, callback=callback)

    exc, seconds = interrupted(fit, first=lambda info: info["epoch"] == 2)
    assert seconds < 2.0
    assert exc.model.stop_reason == "interrupted" and exc.model.n_epochs >= 2
    assert exc.model.dual.shape == (X.shape[0],) and np.isfinite(exc.model.coef).all()


def test_client_none_starts_and_closes_a_local_cluster(a9a, monkeypatch):
    X, y = a9a
    # its cluster's nannies set OMP_NUM_THREADS=1 and MKL_NUM_THREADS=1 in this process:
    # the caller's environment comes back as it was
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    model = train_cocoa(split_rows(X[:4000], y[:4000], 2), lam=LAM)
    ref = simulate_cocoa(X[:4000], y[:4000], 2, lam=LAM)
    assert model.stop_reason == "converged" and model.params["n_workers"] >= 1
    assert np.array_equal(model.coef, ref.coef)
    assert os.environ["OMP_NUM_THREADS"] == "3" and "MKL_NUM_THREADS" not in os.environ


def test_restore_environ_puts_back_changed_added_and_removed_variables(monkeypatch):
    monkeypatch.setenv("DUALSOLVE_TEST_KEPT", "a")
    monkeypatch.setenv("DUALSOLVE_TEST_GONE", "b")
    monkeypatch.delenv("DUALSOLVE_TEST_NEW", raising=False)
    saved = dict(os.environ)
    os.environ["DUALSOLVE_TEST_KEPT"] = "changed"
    del os.environ["DUALSOLVE_TEST_GONE"]
    os.environ["DUALSOLVE_TEST_NEW"] = "c"
    restore_environ(saved)
    assert os.environ["DUALSOLVE_TEST_KEPT"] == "a" and os.environ["DUALSOLVE_TEST_GONE"] == "b"
    assert "DUALSOLVE_TEST_NEW" not in os.environ and dict(os.environ) == saved


def test_one_vs_rest_warm_start_in_process():
    rng = np.random.default_rng(0)
    X = sp.random(600, 40, density=0.2, random_state=1, format="csr")
    y = rng.integers(0, 3, 600)
    near = simulate_cocoa(X, y, 3, lam=2e-2)
    warm = simulate_cocoa(X, y, 3, lam=1e-2, warm_start=near)
    cold = simulate_cocoa(X, y, 3, lam=1e-2)
    assert warm.stop_reason == "converged" and warm.dual.shape == (600, 3)
    np.testing.assert_allclose(warm.coef, cold.coef, atol=1e-3)
    with pytest.raises(ValueError, match="classes"):
        simulate_cocoa(X, y + 1, 3, lam=1e-2, warm_start=near)
