"""AUC family, part 4: the PGA baseline (Algorithm 1 of Liu et al. 2020, after Rafique et al.
2018) against a dense NumPy twin replaying the same samples and against the exact optimum of
the surrogate; its certificate with the ball R1."""
import importlib.util
import pathlib
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from dualsolve.auc import train_pga, auc_score, auc_surrogate_optimum, auc_surrogate_objective

_spec = importlib.util.spec_from_file_location(
    "dualsolve_tests_auc_twins", pathlib.Path(__file__).parent / "helpers" / "auc_twins.py")
twins = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(twins)
grads_np, OnlineP, random_csr, gaussian_problem, assert_twin, run_engine = (
    twins.grads_np, twins.OnlineP, twins.random_csr, twins.gaussian_problem, twins.assert_twin,
    twins.run_engine)


def quiet(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args, **kw)

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
    w, r, drawn, etas, Ts = run_engine(X, y, "pga", K=K, eta0=eta0, T0=T0, lam=lam,
                                       gamma=gamma, R1=R1, R2=R2, batch_size=B, p=p, seed=seed)
    assert etas == [eta0 / k for k in range(1, K + 1)]
    assert Ts == [T0 * k * k for k in range(1, K + 1)]
    ref, counts = pga_twin(X, np.where(y > 0, 1.0, -1.0), drawn, etas, Ts, lam, gamma, B,
                           np.inf if R1 is None else R1, np.inf if R2 is None else R2, p)
    return w, r, ref, len(drawn), counts, drawn


# ---------------------------------------------------------------------------------------
# lazy O(nnz) steps == dense twin


@pytest.mark.parametrize("gamma", [2.0, 0.5, None])
@pytest.mark.parametrize("lam", [0.0, 0.01])
@pytest.mark.parametrize("B", [1, 8])
@pytest.mark.parametrize("proj", [False, True])
def test_lazy_equals_dense_twin(gamma, lam, B, proj):
    X, y = random_csr(0)
    R1, R2 = (0.1, 0.01) if proj else (None, None)
    w, r, ref, used, (n_proj, n_clip, n_fold), _ = run_both(X, y, gamma, lam, B, R1, R2)
    assert np.abs(w).max() > 1e-3                      # it moved
    assert_twin(w, r, ref, used)
    if proj:                                           # the projections were active
        assert n_proj > 100 and n_clip > 10
        assert np.sqrt(w @ w + r["a"] ** 2 + r["b"] ** 2) <= 0.1 + 1e-12
        assert abs(r["alpha"]) <= 0.01
    else:
        assert n_proj == n_clip == 0
    if gamma == 0.5:                   # rho = 1 - 2 eta: sigma < 1e-6 within a stage, folded
        assert n_fold >= 1


def test_twin_through_many_folds_and_long_stages():
    # a binding ball shrinks sigma at almost every step: hundreds of folds; long stages
    X, y = random_csr(2)
    w, r, ref, used, (n_proj, _, n_fold), _ = run_both(X, y, 3.0, 0.0, 1, R1=0.05, K=3,
                                                       T0=400, eta0=0.3)
    assert n_proj > 1000 and n_fold > 20
    assert_twin(w, r, ref, used)


def test_twin_float32_online_p_and_noncanonical_input():
    X, y = random_csr(1, dtype=np.float32)
    w, r, ref, used, _, drawn = run_both(X, y, 5.0, 0.01, 3, R1=0.4, p="online")
    assert_twin(w, r, ref, used)
    assert r["p"] == pytest.approx(np.mean(y[drawn] > 0), rel=1e-14)
    # non-canonical CSR (each entry split in two halves, reversed order): summed in a copy
    Xc = X.astype(np.float64).tocsr()
    Xraw = twins.split_entries(Xc)
    kw = dict(step=0.1, T0=40, prox_gamma=5.0, max_epochs=2, tol=0.0, lam=0.01, R1=0.4,
              seed=3)
    with pytest.warns(UserWarning, match="duplicate"):
        m2 = train_pga(Xraw, y, **kw)
    m3 = quiet(train_pga, Xc, y, **kw)
    np.testing.assert_allclose(m2.coef, m3.coef, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------------------
# convergence to the exact optimum (dense Gaussian, imbalanced)


def test_converges_to_closed_form_optimum():
    X, y = gaussian_problem(0, 4000)
    Xt, yt = gaussian_problem(1, 20000)
    lam = 1e-4
    o = auc_surrogate_optimum(X, y, lam)
    J_star = o.params["objective"]
    auc_star = auc_score(yt, Xt @ o.coef)
    # T0 = 500: 6 stages of 500 k^2 steps = 11.4 epochs of n = 4000 (12: the 6th runs to
    # the end of the budget)
    kw = dict(step=0.05, T0=500, max_epochs=12, tol=0.0, prox_gamma=100.0, lam=lam, seed=0)
    m = quiet(train_pga, X, y, eval_set=(Xt, yt), **kw)
    _, J = auc_surrogate_objective(X, y, m.coef, lam)
    assert J >= J_star - 1e-12
    assert (J - J_star) / abs(J_star) <= 1e-2                     # obs. 2e-3
    assert m.history["primal"][-1] == pytest.approx(J, rel=1e-12)
    auc = auc_score(yt, Xt @ m.coef)
    assert abs(auc - auc_star) <= 0.005
    assert m.history["val_auc"][-1] == auc
    # the stage averages of a, b, alpha approach the saddle values at wbar (alpha lags:
    # it is averaged, not reset)
    h = X @ m.coef
    assert abs(m.params["saddle_a"] - h[y > 0].mean()) <= 2e-2
    assert abs(m.params["saddle_b"] - h[y < 0].mean()) <= 2e-2
    assert abs(m.params["saddle_alpha"] - (h[y < 0].mean() - h[y > 0].mean())) <= 5e-2
    H = m.history["primal"][np.isfinite(m.history["primal"])]
    assert H[-1] < H[2] < H[1] < H[0] == 0.0           # descends (one seed: not every stage)
    assert m.stop_reason == "max_epochs" and m.n_epochs == 12 and len(m.history) == 13
    assert m.params["n_stages"] == 6
    # a ball that contains the optimum (||v*|| ~ 0.4) changes nothing measurable
    mb = quiet(train_pga, X, y, R1=5.0, R2=5.0, **kw)
    np.testing.assert_array_equal(mb.coef, m.coef)
    # the defaults (only lam given) get there too
    md = quiet(train_pga, X, y, lam=lam)
    _, Jd = auc_surrogate_objective(X, y, md.coef, lam)
    assert (Jd - J_star) / abs(J_star) <= 1e-2
    assert abs(auc_score(yt, Xt @ md.coef) - auc_star) <= 0.005


# ---------------------------------------------------------------------------------------
# schedule, bookkeeping, the budget


def test_schedule_bookkeeping_and_the_stage_returned():
    X, y = random_csr(3)                           # n = 300: epochs of 150 steps (B = 2)
    seen = []
    cb = lambda info: seen.append((info["epoch"], info["coef"].copy(), info["primal"]))
    m = quiet(train_pga, X, y, step=0.09, T0=7, prox_gamma=10.0, batch_size=2, max_epochs=2,
              tol=0.0, seed=1, callback=cb)
    # T0 k^2 steps: 7, 28, 63, 112, 175; the budget is 300 steps, so the 4th runs to its end
    assert m.params["stage_lengths"] == [7, 28, 63, 202]
    assert m.params["etas"] == pytest.approx([0.09, 0.045, 0.03, 0.0225], rel=1e-15)
    assert m.params["n_samples"] == 2 * 300
    assert [k for k, _, _ in seen] == [0, 1, 2]
    np.testing.assert_array_equal(seen[-1][1], m.coef)
    assert m.params["R1"] is None and m.params["R2"] is None
    w, r, drawn, etas, Ts = run_engine(X, y, "pga", K=4, eta0=0.09, T0=7, gamma=10.0,
                                       batch_size=2, seed=1)
    assert Ts == [7, 28, 63, 112] and r["n_samples"] == len(drawn) == 2 * 210
    # a callback stop returns the last stage that ended (here the 4th, in epoch 2 of 150
    # steps: a run whose budget ends at a stage gives that stage's average, which is how
    # Algorithm 1's output, the average of a uniformly drawn stage tau, is obtained)
    seen.clear()
    ms = quiet(train_pga, X, y, step=0.09, T0=7, prox_gamma=10.0, batch_size=2, max_epochs=3,
               tol=0.0, lam=0.0, seed=1, callback=lambda info: cb(info) or info["epoch"] >= 2)
    np.testing.assert_array_equal(ms.coef, seen[2][1])
    np.testing.assert_array_equal(ms.coef, w)          # = the engine's 4-stage run
    assert ms.stop_reason == "callback" and ms.n_epochs == 2 and len(ms.history) == 3


def test_ctrl_c_in_callback_propagates():
    X, y = random_csr(4)

    def cb(info):
        if info["epoch"] == 1:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train_pga(X, y, T0=10, max_epochs=3, callback=cb)


# ---------------------------------------------------------------------------------------
# determinism, invariances, errors


def test_determinism_and_invariances():
    X, y = random_csr(5)
    kw = dict(step=0.1, T0=40, max_epochs=2, tol=0.0, prox_gamma=10.0, lam=0.01, R1=0.5,
              seed=9)
    train = lambda *a, **k: quiet(train_pga, *a, **k)
    m1 = train(X, y, **kw)
    m2 = train(X, y, **kw)
    np.testing.assert_array_equal(m1.coef, m2.coef)
    assert (m1.params["saddle_a"] == m2.params["saddle_a"]
            and m1.params["saddle_alpha"] == m2.params["saddle_alpha"])
    np.testing.assert_array_equal(m1.history["primal"], m2.history["primal"])
    for labels in [(y > 0).astype(int), y > 0, np.where(y > 0, "pos", "a_neg")]:
        np.testing.assert_array_equal(train(X, labels, **kw).coef, m1.coef)
    Xz = sp.hstack([X, sp.csr_matrix((X.shape[0], 1))]).tocsr()
    mz = train(Xz, y, **kw)
    np.testing.assert_array_equal(mz.coef[:-1], m1.coef)
    assert mz.coef[-1] == 0.0
    perm = np.random.default_rng(0).permutation(X.shape[1])
    np.testing.assert_allclose(train(X[:, perm], y, **kw).coef, m1.coef[perm],
                               rtol=1e-12, atol=1e-15)
    assert train(X, y, **dict(kw, seed=10)).coef.tolist() != m1.coef.tolist()
    assert m1.solver == "pga"


def test_errors():
    X, y = random_csr(6, n=60, d=5)
    with pytest.raises(ValueError, match="y has one class only"):
        train_pga(X, np.ones(60))
    with pytest.raises(ValueError, match="y has 59 labels"):
        train_pga(X, y[:59])
    with pytest.raises(ValueError, match="step must be None or a real number in \\(0, inf\\)"):
        train_pga(X, y, step=-0.1)
    with pytest.raises(TypeError, match="eta0"):
        train_pga(X, y, eta0=0.1)                      # the step is step
    with pytest.raises(ValueError, match="T0 must be None or an integer in \\[1, inf\\)"):
        train_pga(X, y, T0=0)
    with pytest.raises(ValueError, match="prox_gamma must be None or a real number"):
        train_pga(X, y, prox_gamma=0.0)
    with pytest.raises(ValueError, match="max_epochs must be an integer in"):
        train_pga(X, y, max_epochs=-1)
    with pytest.raises(ValueError, match="lam must be >= 0"):
        train_pga(X, y, lam=-1.0)
    with pytest.raises(ValueError, match="R1 must be None or a real number in \\(0, inf\\)"):
        train_pga(X, y, R1=0.0)
    with pytest.raises(ValueError, match="R2 must be None or a real number"):
        train_pga(X, y, R2=float("nan"))
    with pytest.raises(TypeError, match="R1 must be None or a real number"):
        train_pga(X, y, R1="big")
    with pytest.raises(TypeError, match="return_"):
        train_pga(X, y, return_="random")              # Algorithm 1's random stage: a budget
    with pytest.raises(ValueError, match="batch_size must be an integer in \\[1, inf\\)"):
        train_pga(X, y, batch_size=0)
    with pytest.raises(ValueError, match="p must be None or a real number in \\(0, 1\\)"):
        train_pga(X, y, p=1.0)
    with pytest.raises(ValueError, match="step \\* \\(lam \\+ 1/prox_gamma\\)"):
        train_pga(X, y, step=0.5, prox_gamma=1.0, lam=1.0)
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
