"""AUC family, part 4: the PGA baseline (Algorithm 1 of Liu et al. 2020, after Rafique et al.;
spec seed2 sections 2.1, 3.4; tests T4, T5, T7, T11) against a dense NumPy twin replaying the
same samples and against the exact optimum of the surrogate."""
import importlib.util
import pathlib

import numpy as np
import pytest
import scipy.sparse as sp

from dualsolve.auc import train_pga, auc_score, auc_surrogate_optimum, auc_surrogate_objective

_spec = importlib.util.spec_from_file_location(
    "dualsolve_tests_auc_twins", pathlib.Path(__file__).parent / "helpers" / "auc_twins.py")
twins = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(twins)
grads_np, OnlineP, random_csr, gaussian_problem, assert_twin = (
    twins.grads_np, twins.OnlineP, twins.random_csr, twins.gaussian_problem, twins.assert_twin)

RENORM = 1e-6      # the lazy loop folds sigma into z below this (counted by the twin)


def pga_twin(X, y, trace, etas, Ts, lam, gamma, B, R1=np.inf, R2=np.inf, p=None):
    """Algorithm 1 written out densely (O(d) per step), replaying the drawn rows. Also
    counts the projections and the folds the lazy representation w = sigma z + tau w0
    goes through (sigma: the product of the rho's and projection factors)."""
    Xd = np.asarray(X.toarray(), dtype=np.float64)
    d = Xd.shape[1]
    inv_g = 0.0 if gamma is None or np.isinf(gamma) else 1.0 / gamma
    online = OnlineP() if p == "online" else None
    if online is None:
        pf = (y > 0).mean() if p is None else p
        pp, pq = pf, pf * (1 - pf)
    w0, a0, b0, alpha = np.zeros(d), 0.0, 0.0, 0.0
    pos, n_proj, n_clip, n_fold = 0, 0, 0, 0
    for eta, T in zip(etas, Ts):
        rho = 1.0 - eta * (lam + inv_g)
        w, a, b, al = w0.copy(), a0, b0, alpha
        ws, sa, sb, sal = np.zeros(d), 0.0, 0.0, 0.0
        sigma = 1.0
        for _ in range(T):
            batch = trace[pos:pos + B]
            pos += B
            if online is not None:
                pp, pq = online.p, online.pq
            g, sg = twins.batch_grads(Xd, y, batch, w, a, b, al, pp, pq)
            w = rho * w + (eta * inv_g) * w0 - eta * g
            a, b, al = twins.scalar_step(a, b, al, sg, eta, a0, b0, inv_g)
            sigma, n_fold = (1.0, n_fold + 1) if sigma * rho < RENORM else (sigma, n_fold)
            sigma *= rho
            nrm = np.sqrt(w @ w + a * a + b * b)
            if nrm > R1:
                f = R1 / nrm
                w, a, b = w * f, a * f, b * f
                n_proj += 1
                sigma, n_fold = (1.0, n_fold + 1) if sigma * f < RENORM else (sigma, n_fold)
                sigma *= f
            if abs(al) > R2:
                al = np.clip(al, -R2, R2)
                n_clip += 1
            ws += w
            sa, sb, sal = sa + a, sb + b, sal + al
            if online is not None:
                online.update(y[batch])
        w0, a0, b0, alpha = ws / T, sa / T, sb / T, sal / T
    return (w0, a0, b0, alpha, pos), (n_proj, n_clip, n_fold)


def run_both(X, y, gamma, lam, B, R1=None, R2=None, seed=3, p=None, K=4, T0=50, eta0=0.1):
    etas = [eta0 / k for k in range(1, K + 1)]
    Ts = [T0 * k * k for k in range(1, K + 1)]
    trace = np.full(sum(Ts) * B + 100, -1, dtype=np.intp)
    m = train_pga(X, y, eta0=eta0, T0=T0, gamma=gamma, n_stages=K, lam=lam, R1=R1, R2=R2,
                  batch_size=B, seed=seed, p=p, _trace=trace)
    used = int(np.sum(trace >= 0))
    ref, counts = pga_twin(X, np.where(y > 0, 1.0, -1.0), trace[:used], etas, Ts, lam, gamma,
                           B, np.inf if R1 is None else R1, np.inf if R2 is None else R2, p)
    return m, ref, used, counts, trace[:used]


# ---------------------------------------------------------------------------------------
# T4: lazy O(nnz) steps == dense twin


@pytest.mark.parametrize("gamma", [2.0, 0.5, None])
@pytest.mark.parametrize("lam", [0.0, 0.01])
@pytest.mark.parametrize("B", [1, 8])
@pytest.mark.parametrize("proj", [False, True])
def test_lazy_equals_dense_twin(gamma, lam, B, proj):
    X, y = random_csr(0)
    R1, R2 = (0.1, 0.01) if proj else (None, None)
    m, ref, used, (n_proj, n_clip, n_fold), _ = run_both(X, y, gamma, lam, B, R1, R2)
    assert np.abs(m.coef).max() > 1e-3                 # it moved
    assert_twin(m, ref, used)
    if proj:                                           # the projections were active
        assert n_proj > 100 and n_clip > 10
        assert np.sqrt(m.coef @ m.coef + m.params["a"] ** 2 + m.params["b"] ** 2) <= 0.1 + 1e-12
        assert abs(m.params["alpha"]) <= 0.01
    else:
        assert n_proj == n_clip == 0
    if gamma == 0.5:                   # rho = 1 - 2 eta: sigma < 1e-6 within a stage, folded
        assert n_fold >= 1


def test_twin_through_many_folds_and_long_stages():
    # a binding ball shrinks sigma at almost every step: hundreds of folds; long stages
    X, y = random_csr(2)
    m, ref, used, (n_proj, _, n_fold), _ = run_both(X, y, 3.0, 0.0, 1, R1=0.05, K=3, T0=400,
                                                 eta0=0.3)
    assert n_proj > 1000 and n_fold > 20
    assert_twin(m, ref, used)


def test_twin_float32_online_p_and_noncanonical_input():
    X, y = random_csr(1, dtype=np.float32)
    m, ref, used, _, drawn = run_both(X, y, 5.0, 0.01, 3, R1=0.4, p="online")
    assert_twin(m, ref, used)
    assert m.params["p_used"] == pytest.approx(np.mean(y[drawn] > 0), rel=1e-14)
    # non-canonical CSR (each entry split in two halves, reversed order): summed in a copy
    Xc = X.astype(np.float64).tocsr()
    Xraw = twins.split_entries(Xc)
    kw = dict(eta0=0.1, T0=40, gamma=5.0, n_stages=3, lam=0.01, R1=0.4, seed=3)
    with pytest.warns(UserWarning, match="duplicate"):
        m2 = train_pga(Xraw, y, **kw)
    m3 = train_pga(Xc, y, **kw)
    np.testing.assert_allclose(m2.coef, m3.coef, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------------------
# T5: convergence to the exact optimum (dense Gaussian, imbalanced)


def test_converges_to_closed_form_optimum_T5():
    X, y = gaussian_problem(0, 4000)
    Xt, yt = gaussian_problem(1, 20000)
    lam = 1e-4
    o = auc_surrogate_optimum(X, y, lam)
    J_star = o.params["objective"]
    auc_star = auc_score(yt, Xt @ o.coef)
    m = train_pga(X, y, eta0=0.05, T0=500, n_stages=6, gamma=100.0, lam=lam, seed=0,
                  eval_set=(Xt, yt))
    _, J = auc_surrogate_objective(X, y, m.coef, lam)
    assert J >= J_star - 1e-12
    assert (J - J_star) / abs(J_star) <= 1e-2                     # obs. 3.3e-3
    assert m.history["primal"][-1] == pytest.approx(J, rel=1e-12)
    auc = auc_score(yt, Xt @ m.coef)
    assert abs(auc - auc_star) <= 0.005                            # obs. +2.3e-3
    assert m.history["val_auc"][-1] == auc
    # the stage averages of a, b, alpha approach the saddle values at wbar (alpha lags:
    # it is averaged, not reset; obs. 2.4e-2)
    h = X @ m.coef
    assert abs(m.params["a"] - h[y > 0].mean()) <= 2e-2
    assert abs(m.params["b"] - h[y < 0].mean()) <= 2e-2
    assert abs(m.params["alpha"] - (h[y < 0].mean() - h[y > 0].mean())) <= 5e-2
    H = m.history["primal"]
    assert H[-1] < H[2] < H[1] < H[0] == 0.0           # descends (one seed: not every stage)
    assert m.converged and m.n_epochs == 6 and len(m.history) == 7
    # a ball that contains the optimum (||v*|| ~ 0.4) changes nothing measurable
    mb = train_pga(X, y, eta0=0.05, T0=500, n_stages=6, gamma=100.0, lam=lam, seed=0,
                   R1=5.0, R2=5.0)
    np.testing.assert_array_equal(mb.coef, m.coef)


# ---------------------------------------------------------------------------------------
# T7: schedule and bookkeeping; return_="random"


def test_schedule_bookkeeping_and_random_stage():
    X, y = random_csr(3)
    seen = []
    cb = lambda info: seen.append((info["epoch"], info["coef"].copy(), info["primal"]))
    trace = np.full(100000, -1, dtype=np.intp)
    m = train_pga(X, y, eta0=0.09, T0=7, gamma=10.0, n_stages=4, batch_size=2, seed=1,
                  callback=cb, _trace=trace)
    assert m.params["stage_lengths"] == [7, 28, 63, 112]
    assert m.params["etas"] == pytest.approx([0.09, 0.045, 0.03, 0.0225], rel=1e-15)
    assert m.params["n_samples"] == np.sum(trace >= 0) == 2 * (7 + 28 + 63 + 112)
    assert [k for k, _, _ in seen] == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(seen[-1][1], m.coef)
    assert m.params["stage_returned"] == 4 and m.params["return_"] == "last_stage"
    assert m.params["R1"] == m.params["R2"] == np.inf
    # Algorithm 1's output: a uniformly drawn stage; same samples, same history
    for seed in (1, 2, 5):
        tau = int(np.random.default_rng(seed).integers(1, 5))
        seen.clear()
        tr = np.full(100000, -1, dtype=np.intp)
        mr = train_pga(X, y, eta0=0.09, T0=7, gamma=10.0, n_stages=4, batch_size=2,
                       seed=seed, return_="random", callback=cb, _trace=tr)
        ml = train_pga(X, y, eta0=0.09, T0=7, gamma=10.0, n_stages=4, batch_size=2,
                       seed=seed)
        assert mr.params["stage_returned"] == tau
        np.testing.assert_array_equal(mr.coef, seen[tau][1])
        np.testing.assert_array_equal(mr.history["primal"], ml.history["primal"])
        assert mr.n_epochs == 4
    # a callback stop before tau returns the last stage run
    seed = next(s for s in range(100) if np.random.default_rng(s).integers(1, 5) == 4)
    ms = train_pga(X, y, eta0=0.09, T0=7, n_stages=4, seed=seed, return_="random",
                   callback=lambda info: info["epoch"] >= 2)
    assert ms.params["stage_returned"] == 2 and ms.n_epochs == 2 and not ms.converged
    assert len(ms.history) == 3


def test_ctrl_c_in_callback_propagates():
    X, y = random_csr(4)

    def cb(info):
        if info["epoch"] == 1:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train_pga(X, y, T0=10, n_stages=3, callback=cb)


# ---------------------------------------------------------------------------------------
# T11: determinism, invariances, errors


def test_determinism_and_invariances():
    X, y = random_csr(5)
    kw = dict(eta0=0.1, T0=40, n_stages=3, gamma=10.0, lam=0.01, R1=0.5, seed=9)
    m1 = train_pga(X, y, **kw)
    m2 = train_pga(X, y, **kw)
    np.testing.assert_array_equal(m1.coef, m2.coef)
    assert m1.params["a"] == m2.params["a"] and m1.params["alpha"] == m2.params["alpha"]
    np.testing.assert_array_equal(m1.history["primal"], m2.history["primal"])
    for labels in [(y > 0).astype(int), y > 0, np.where(y > 0, "pos", "a_neg")]:
        np.testing.assert_array_equal(train_pga(X, labels, **kw).coef, m1.coef)
    Xz = sp.hstack([X, sp.csr_matrix((X.shape[0], 1))]).tocsr()
    mz = train_pga(Xz, y, **kw)
    np.testing.assert_array_equal(mz.coef[:-1], m1.coef)
    assert mz.coef[-1] == 0.0
    perm = np.random.default_rng(0).permutation(X.shape[1])
    np.testing.assert_allclose(train_pga(X[:, perm], y, **kw).coef, m1.coef[perm],
                               rtol=1e-12, atol=1e-15)
    assert train_pga(X, y, **dict(kw, seed=10)).coef.tolist() != m1.coef.tolist()
    assert m1.solver == "pga"


def test_errors():
    X, y = random_csr(6, n=60, d=5)
    with pytest.raises(ValueError, match="y has a single class"):
        train_pga(X, np.ones(60))
    with pytest.raises(ValueError, match="y has 59 labels"):
        train_pga(X, y[:59])
    with pytest.raises(ValueError, match="eta0 must be > 0"):
        train_pga(X, y, eta0=-0.1)
    with pytest.raises(ValueError, match="T0 must be >= 1"):
        train_pga(X, y, T0=0)
    with pytest.raises(ValueError, match="gamma must be > 0"):
        train_pga(X, y, gamma=0.0)
    with pytest.raises(ValueError, match="n_stages must be >= 1"):
        train_pga(X, y, n_stages=0)
    with pytest.raises(ValueError, match="lam must be >= 0"):
        train_pga(X, y, lam=-1.0)
    with pytest.raises(ValueError, match="R1 must be > 0"):
        train_pga(X, y, R1=0.0)
    with pytest.raises(ValueError, match="R2 must be > 0"):
        train_pga(X, y, R2=float("nan"))
    with pytest.raises(TypeError, match="R1 must be a real number"):
        train_pga(X, y, R1="big")
    with pytest.raises(ValueError, match="return_ must be one of"):
        train_pga(X, y, return_="best")
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        train_pga(X, y, batch_size=0)
    with pytest.raises(ValueError, match="p must lie in"):
        train_pga(X, y, p=1.0)
    with pytest.raises(ValueError, match="eta0 \\* \\(lam \\+ 1/gamma\\)"):
        train_pga(X, y, eta0=0.5, gamma=1.0, lam=1.0)
    with pytest.raises(ValueError, match="X contains NaN"):
        Xn = X.copy()
        Xn.data[0] = np.nan
        train_pga(Xn, y)
    with pytest.raises(ValueError, match="eval_set\\[0\\] has 4 features"):
        train_pga(X, y, eval_set=(X[:, :4], y))
    with pytest.raises(TypeError, match="callback"):
        train_pga(X, y, callback=3)
    with pytest.raises(TypeError, match="decay"):
        train_pga(X, y, decay=3.0)                     # not a PGA parameter
