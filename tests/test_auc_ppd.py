"""AUC family, part 2 (Liu et al. 2020, Algorithms 2-4): PPD-SG and PPD-AdaGrad against
dense NumPy twins that replay the same samples, and against the closed-form optimum of the
surrogate; the stage schedule, the budget and the online estimate of p."""
import importlib.util
import pathlib
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from dualsolve.auc import (train_ppd_sg, train_ppd_adagrad, auc_score, auc_surrogate_optimum,
                           auc_surrogate_objective)
from dualsolve.auc import _ppd

_spec = importlib.util.spec_from_file_location(
    "dualsolve_tests_auc_twins", pathlib.Path(__file__).parent / "helpers" / "auc_twins.py")
twins = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(twins)
grads_np, OnlineP, random_csr, gaussian_problem, assert_twin, run_engine = (
    twins.grads_np, twins.OnlineP, twins.random_csr, twins.gaussian_problem, twins.assert_twin,
    twins.run_engine)

SOLVERS = {"sg": train_ppd_sg, "adagrad": train_ppd_adagrad}


def quiet(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args, **kw)


# ---------------------------------------------------------------------------------------
# the dense twin: O(d) per step, Algorithm 2's stages (and Algorithm 3's steps) written out


def dense_twin(X, y, trace, method, etas, Ts, ms, lam, gamma, B, delta=0.0, p=None):
    Xd = np.asarray(X.toarray(), dtype=np.float64)
    n, d = Xd.shape
    inv_g = 0.0 if gamma is None or np.isinf(gamma) else 1.0 / gamma
    online = OnlineP() if p == "online" else None
    pf = (y > 0).mean() if p is None else p
    w0, a0, b0, alpha = np.zeros(d), 0.0, 0.0, 0.0
    pos = 0
    for eta, T, m in zip(etas, Ts, ms):
        if online is None:
            pp, pq = pf, pf * (1 - pf)
        if method == "sg":
            om = eta * (lam + inv_g)
            w, a, b, al = w0.copy(), a0, b0, alpha
            wsum, suma, sumb = w.copy(), a, b
            for t in range(T - 1):
                batch = trace[pos:pos + B]
                pos += B
                if online is not None:
                    pp, pq = online.p, online.pq
                g, sg = twins.batch_grads(Xd, y, batch, w, a, b, al, pp, pq)
                w = (1.0 - om) * w + (eta * inv_g) * w0 - eta * g
                a, b, al = twins.scalar_step(a, b, al, sg, eta, a0, b0, inv_g)
                wsum += w
                suma += a
                sumb += b
                if online is not None:
                    online.update(y[batch])
            w0, a0, b0 = wsum / T, suma / T, sumb / T
        else:
            Bw, Bab = eta * (lam + inv_g), eta * inv_g
            G, S2 = np.zeros(d), np.zeros(d)
            Gs, S2s = np.zeros(3), np.zeros(3)          # a, b and the ascent of alpha
            wsum, suma, sumb = np.zeros(d), 0.0, 0.0
            al0 = alpha
            for mm in range(T):
                w = w0 - eta * (G + mm * lam * w0) / (delta + np.sqrt(S2) + Bw * mm)
                a = a0 - eta * Gs[0] / (delta + np.sqrt(S2s[0]) + Bab * mm)
                b = b0 - eta * Gs[1] / (delta + np.sqrt(S2s[1]) + Bab * mm)
                wsum += w
                suma += a
                sumb += b
                if mm == T - 1:
                    break
                al = al0 - eta * Gs[2] / (delta + np.sqrt(S2s[2]))
                batch = trace[pos:pos + B]
                pos += B
                if online is not None:
                    pp, pq = online.p, online.pq
                g, sg = twins.batch_grads(Xd, y, batch, w, a, b, al, pp, pq)
                sg[2] = -sg[2]                         # AdaGrad descends on -dF/dalpha
                G += g
                S2 += g * g
                Gs += sg
                S2s += sg * sg
                if online is not None:
                    online.update(y[batch])
            w0, a0, b0 = wsum / T, suma / T, sumb / T
        h = Xd @ w0
        if m == 0:
            alpha = h[y < 0].mean() - h[y > 0].mean()
        else:
            r, rows = 0, []
            while r < m or len(set(y[rows])) < 2:
                rows.append(trace[pos])
                pos += 1
                r += 1
            rows = np.array(rows)
            alpha = h[rows][y[rows] < 0].mean() - h[rows][y[rows] > 0].mean()
    return w0, a0, b0, alpha, pos


def run_both(X, y, method, gamma, lam, B, seed=3, p=None, alpha_reset="full", K=4, T0=50,
             eta0=0.1, scaled_sg=True):
    delta = 0.05 if method == "adagrad" else 0.0
    alpha_batch = 10 if alpha_reset == "minibatch" else 0
    w, r, drawn, etas, Ts = run_engine(X, y, method, K=K, eta0=eta0, T0=T0, lam=lam,
                                       gamma=gamma, delta=delta, batch_size=B, p=p,
                                       alpha_batch=alpha_batch, seed=seed, scaled_sg=scaled_sg)
    ms = twins.reset_sizes(K, alpha_batch) if alpha_batch else [0] * K
    ref = dense_twin(X, np.where(y > 0, 1.0, -1.0), drawn, method, etas, Ts, ms, lam, gamma, B,
                     delta=delta, p=p)
    return w, r, ref, len(drawn)


# ---------------------------------------------------------------------------------------
# lazy O(nnz) steps == dense twin


@pytest.mark.parametrize("method", ["sg", "adagrad"])
@pytest.mark.parametrize("gamma", [2.0, None])
@pytest.mark.parametrize("lam", [0.0, 0.01])
@pytest.mark.parametrize("B", [1, 8])
def test_lazy_equals_dense_twin(method, gamma, lam, B):
    X, y = random_csr(0)
    w, r, ref, used = run_both(X, y, method, gamma, lam, B)
    assert np.abs(w).max() > 1e-3                      # it moved
    assert_twin(w, r, ref, used)


@pytest.mark.parametrize("eta0,gamma,lam,B", [(0.1, 2.0, 0.0, 1), (0.1, None, 0.01, 8),
                                             (1.4, 3.0, 0.02, 1), (0.1, None, 0.0, 3)])
def test_sg_scaled_and_driftjit_forms_equal_dense_twin(eta0, gamma, lam, B):
    """PPD-SG's two forms (the scaled record w = A z + B w0 with folds of A, and DriftJIT's
    per-feature timestamps) against the dense twin and each other. eta0 = 1.4, gamma = 3:
    rho = 1 - eta (lam + 1/gamma) is about 0.5 in the first stage, so A folds every ~10
    steps."""
    X, y = random_csr(2)
    w, r, ref, used = run_both(X, y, "sg", gamma, lam, B, eta0=eta0)
    assert np.abs(w).max() > 1e-3
    assert_twin(w, r, ref, used)
    w2, r2, ref2, used2 = run_both(X, y, "sg", gamma, lam, B, eta0=eta0, scaled_sg=False)
    assert_twin(w2, r2, ref2, used2)
    scale = max(1.0, np.abs(w).max())
    assert np.abs(w - w2).max() <= 1e-12 * scale


@pytest.mark.parametrize("method", ["sg", "adagrad"])
def test_twin_float32_noncanonical_online_minibatch_reset(method):
    X, y = random_csr(1, dtype=np.float32)
    w, r, ref, used = run_both(X, y, method, 5.0, 0.01, 3, p="online", alpha_reset="minibatch")
    assert_twin(w, r, ref, used)
    # non-canonical CSR (duplicates split in two halves, unsorted): summed in a copy
    Xc = X.astype(np.float64).tocsr()
    Xraw = twins.split_entries(Xc)
    kw = dict(step=0.1, T0=50, prox_gamma=5.0, max_epochs=2, tol=0.0, lam=0.01, seed=3)
    with pytest.warns(UserWarning, match="duplicate"):
        m2 = SOLVERS[method](Xraw, y, **kw)
    m3 = quiet(SOLVERS[method], Xc, y, **kw)
    np.testing.assert_allclose(m2.coef, m3.coef, rtol=1e-12, atol=1e-14)


def test_digamma_gap_equals_exact_sums():
    """psi(a + g) - psi(a) = sum_{k < g} 1/(a + k) for integer g: the catch-up's digamma
    difference (asymptotic series in differenced form for a >= 30, scipy below) against the
    exactly rounded sum, over a from 0.01 to 1e8."""
    import math
    rng = np.random.default_rng(0)
    worst = 0.0
    for a in np.r_[rng.uniform(0.01, 60, 200), 10 ** rng.uniform(1, 8, 200), 29.999, 30.0]:
        for g in (0, 1, 2, 17, 100, 1000):
            ref = math.fsum(1.0 / (a + k) for k in range(g))
            got = _ppd._digamma_gap(float(a), float(g))
            assert got == ref if g == 0 else abs(got - ref) <= 2e-13 * ref
            if g:
                worst = max(worst, abs(got - ref) / ref)
    assert worst > 0.0                                  # the check compares real numbers


def test_adagrad_long_gaps_use_digamma_sums():
    # a rarely touched feature: gaps of hundreds of steps go through the digamma formula
    rng = np.random.default_rng(4)
    n, d = 400, 60
    X = sp.random(n, d, density=0.03, random_state=rng, format="csr")
    y = np.where(rng.random(n) < 0.3, 1.0, -1.0)
    for gamma, lam in [(3.0, 0.02), (1e3, 1e-3), (None, 0.05)]:
        w, r, ref, used = run_both(X, y, "adagrad", gamma, lam, 1, K=3, T0=300)
        assert_twin(w, r, ref, used)


def test_public_call_runs_the_engine_the_twins_check():
    """train_* with a budget of whole stages gives bitwise the engine's result (which the
    twins check): the same schedule, the same samples."""
    X, y = random_csr(5)
    for method in ("sg", "adagrad"):
        # T0 = 76: stages of 75 and 225 steps fill the epoch of n = 300 steps
        m = quiet(SOLVERS[method], X, y, step=0.1, T0=76, decay=3.0, max_epochs=1, tol=0.0,
                  lam=0.0)
        w, r, drawn, etas, Ts = run_engine(X, y, method, K=2, eta0=0.1, T0=76, seed=0,
                                           delta=1e-2)
        assert m.params["stage_lengths"] == Ts == [76, 226]
        assert m.params["etas"] == pytest.approx(etas, rel=1e-15)
        assert r["n_steps"] == 300 and m.params["n_steps"] == 300 == m.params["n_samples"]
        np.testing.assert_array_equal(m.coef, w)


# ---------------------------------------------------------------------------------------
# per-sample gradients of F


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(6)
    p = 0.3
    pq = p * (1 - p)

    def F(h, yi, a, b, al):
        if yi > 0:
            return (1 - p) * (h - a) ** 2 + 2 * (1 + al) * (-(1 - p) * h) - pq * al ** 2
        return p * (h - b) ** 2 + 2 * (1 + al) * p * h - pq * al ** 2

    for _ in range(20):
        v = rng.standard_normal(4)
        for yi in (1.0, -1.0):
            g = _ppd.grads(v[0], yi, v[1], v[2], v[3], p, pq)
            for k in range(4):
                e = np.zeros(4)
                e[k] = 1e-6
                num = (F(*(v + e)[:1], yi, *(v + e)[1:]) - F(*(v - e)[:1], yi, *(v - e)[1:])) / 2e-6
                assert abs(num - g[k]) <= 1e-6 * max(1.0, abs(g[k]))


# ---------------------------------------------------------------------------------------
# convergence to the exact optimum (dense Gaussian, imbalanced)


@pytest.fixture(scope="module")
def t5():
    X, y = gaussian_problem(0, 4000)
    Xt, yt = gaussian_problem(1, 20000)
    lam = 1e-4
    o = auc_surrogate_optimum(X, y, lam)
    return X, y, Xt, yt, lam, o


@pytest.mark.parametrize("method,kw,bound", [
    ("sg", dict(step=0.05), 5e-3),
    ("adagrad", dict(step=0.5, delta=1e-2), 1e-2)])
def test_converges_to_closed_form_optimum(t5, method, kw, bound):
    """The paper's schedule (decay = growth = 3, T0 = 500, 6 stages = 45.4 epochs; a budget
    of 46 epochs: the 6th stage runs to its end)."""
    X, y, Xt, yt, lam, o = t5
    J_star = o.params["objective"]
    auc_star = auc_score(yt, Xt @ o.coef)
    m = quiet(SOLVERS[method], X, y, T0=500, max_epochs=46, tol=0.0, prox_gamma=100.0,
              decay=3.0, lam=lam, seed=0, eval_set=(Xt, yt), **kw)
    _, J = auc_surrogate_objective(X, y, m.coef, lam)
    assert (J - J_star) / abs(J_star) <= bound
    assert J >= J_star - 1e-12
    assert m.history["primal"][-1] == pytest.approx(J, rel=1e-12)
    auc = auc_score(yt, Xt @ m.coef)
    assert auc >= auc_star - 0.003
    assert m.history["val_auc"][-1] == auc
    h = X @ m.coef
    assert abs(m.params["saddle_a"] - h[y > 0].mean()) <= 1e-2
    assert abs(m.params["saddle_b"] - h[y < 0].mean()) <= 1e-2
    assert m.stop_reason == "max_epochs" and m.n_epochs == 46 and len(m.history) == 47
    assert m.params["n_stages"] == 6


@pytest.mark.parametrize("method", ["sg", "adagrad"])
def test_defaults_converge_to_closed_form_optimum(t5, method):
    """Only lam given: the default step (from the rows), schedule and budget."""
    X, y, Xt, yt, lam, o = t5
    m = quiet(SOLVERS[method], X, y, lam=lam)
    _, J = auc_surrogate_objective(X, y, m.coef, lam)
    assert (J - o.params["objective"]) / abs(o.params["objective"]) <= 5e-3
    assert auc_score(yt, Xt @ m.coef) >= auc_score(yt, Xt @ o.coef) - 0.003


def test_objective_descends_across_stages(t5):
    """Over 5 seeds, the mean exact objective at the stage averages wbar_k decreases from
    stage to stage (the paper's schedule, stage k = 3^(k-1) epochs), and ends within 5e-3
    of the optimum."""
    X, y, _, _, lam, o = t5
    J_star = o.params["objective"]
    ends = [0, 1, 4, 13, 40, 121]
    H = []
    for s in range(5):
        m = quiet(train_ppd_sg, X, y, step=0.05, T0=X.shape[0] + 1, decay=3.0, max_epochs=121,
                  tol=0.0, prox_gamma=100.0, lam=lam, seed=s)
        assert np.flatnonzero(np.isfinite(m.history["primal"])).tolist() == ends
        H.append(m.history["primal"][ends[1:]])
    mean = np.mean(H, axis=0)
    assert np.all(np.diff(mean) < 0)
    assert (mean[-1] - J_star) / abs(J_star) <= 5e-3


# ---------------------------------------------------------------------------------------
# a sparse imbalanced bag-of-words problem, against the oracle and scikit-learn


def bag_of_words(seed, n, d=500, p=0.05, tilt_seed=7):
    trng = np.random.default_rng(tilt_seed)
    base = trng.lognormal(0, 1, d)
    base /= base.sum()
    tilt = base * trng.lognormal(0, 0.7, d)
    tilt /= tilt.sum()
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < p, 1, -1)
    rows, cols, vals = [], [], []
    for i in range(n):
        k = rng.poisson(14) + 1
        probs = tilt if y[i] > 0 else base
        c, cnt = np.unique(rng.choice(d, k, p=probs), return_counts=True)
        v = cnt / np.linalg.norm(cnt)
        rows += [i] * len(c)
        cols += c.tolist()
        vals += v.tolist()
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, d)), y


def test_sparse_imbalanced_vs_oracle_and_sklearn():
    X, y = bag_of_words(0, 5000)
    Xt, yt = bag_of_words(1, 20000)
    lam = 1e-4
    o = auc_surrogate_optimum(X, y, lam)
    auc_star = auc_score(yt, Xt @ o.coef)
    # the paper's schedule: T0 = 2500, 5 stages = 60.5 epochs (61: the 5th runs to the end)
    m = quiet(train_ppd_sg, X, y, step=0.5, T0=2500, decay=3.0, max_epochs=61, tol=0.0,
              prox_gamma=1e3, lam=lam, seed=0)
    auc = auc_score(yt, Xt @ m.coef)
    assert auc >= auc_star - 0.005
    md = quiet(train_ppd_sg, X, y, lam=lam)                  # the defaults
    assert auc_score(yt, Xt @ md.coef) >= auc_star - 0.005
    lm = pytest.importorskip("sklearn.linear_model")
    best = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for C in [0.1, 1, 10, 100]:
            for cw in [None, "balanced"]:
                lr = lm.LogisticRegression(C=C, class_weight=cw, max_iter=2000).fit(X, y)
                best = max(best, auc_score(yt, lr.decision_function(Xt)))
    assert auc >= best - 0.01


# ---------------------------------------------------------------------------------------
# stage bookkeeping, schedules and the budget


def test_stage_bookkeeping_and_schedule():
    X, y = random_csr(2)                                   # n = 300: an epoch is 300 steps
    for method in ("sg", "adagrad"):
        seen = []
        cb = lambda info: seen.append((info["epoch"], info["coef"].copy(), info["primal"]))
        m = quiet(SOLVERS[method], X, y, step=0.09, T0=7, decay=3.0, prox_gamma=10.0,
                  max_epochs=2, tol=0.0, seed=1, callback=cb)
        # stage k makes round(6 3^(k-1)) steps: 6, 18, 54, 162, 486; the budget is 600
        # steps, so the 4th stage runs to its end (522 steps: a 5th would not fit)
        assert m.params["stage_lengths"] == [7, 19, 55, 523]
        assert m.params["etas"] == pytest.approx([0.09, 0.03, 0.01, 0.01 / 3], rel=1e-15)
        assert m.params["n_stages"] == 4 and m.params["n_steps"] == 600
        # one gradient sample per step; the full alpha reset draws nothing
        assert m.params["n_samples"] == 600
        # stages 1-3 end inside epoch 1 (reported there: the 3rd's values), stage 4 at 600
        assert [k for k, _, _ in seen] == [0, 1, 2]
        assert np.isfinite([J for _, _, J in seen]).all()
        np.testing.assert_array_equal(seen[-1][1], m.coef)
        h = X @ m.coef
        assert m.params["saddle_alpha"] == pytest.approx(h[y < 0].mean() - h[y > 0].mean(),
                                                         rel=1e-13, abs=1e-15)
        # the engine run for exactly the first 4 stages draws 6 + 18 + 54 + 162 rows
        w, r, drawn, etas, Ts = run_engine(X, y, method, K=4, eta0=0.09, T0=7, gamma=10.0,
                                           seed=1)
        assert Ts == [7, 19, 55, 163] and r["n_samples"] == len(drawn) == 240
    # the minibatch reset consumes m_k = round(alpha_batch 3^(k-1)) fresh samples (at least)
    w, r, drawn, _, _ = run_engine(X, y, "sg", K=2, eta0=0.09, T0=7, seed=1, alpha_batch=40,
                                   batch_size=2)
    assert r["n_samples"] == len(drawn) >= 2 * (6 + 18) + 40 + 120
    # step (lam + 1/prox_gamma) >= 1 is rejected
    with pytest.raises(ValueError, match="step \\* \\(lam"):
        train_ppd_sg(X, y, step=0.5, prox_gamma=1.0, lam=1.0)


def test_single_stage_no_prox_is_plain_primal_dual_sgd():
    X, y = random_csr(3)
    y = np.where(y > 0, 1.0, -1.0)
    T = 200
    w_run, r, drawn, _, _ = run_engine(X, y, "sg", K=1, eta0=0.05, T0=T, gamma=None, lam=0.0,
                                       seed=2)
    Xd = X.toarray()
    p = (y > 0).mean()
    w, a, b, al = np.zeros(X.shape[1]), 0.0, 0.0, 0.0
    ws, as_ = [w], [a]
    for i in drawn[:T - 1]:
        c, ga, gb, gal = grads_np(Xd[i] @ w, y[i], a, b, al, p, p * (1 - p))
        w = w - 0.05 * c * Xd[i]
        a, b, al = a - 0.05 * ga, b - 0.05 * gb, al + 0.05 * gal
        ws.append(w)
        as_.append(a)
    np.testing.assert_allclose(w_run, np.mean(ws, axis=0), rtol=1e-13, atol=1e-15)
    assert r["a"] == pytest.approx(np.mean(as_), rel=1e-13)


# ---------------------------------------------------------------------------------------
# unknown p (Algorithm 4)


def test_online_p_estimate():
    X, y = random_csr(4)
    w, r, drawn, _, _ = run_engine(X, y, "sg", K=3, eta0=0.05, T0=30, p="online", seed=5)
    assert r["p"] == pytest.approx(np.mean(y[drawn] > 0), rel=1e-14)
    assert 0.0 <= r["pq"] <= 1.0
    m = quiet(train_ppd_sg, X, y, p="online", max_epochs=2)
    assert 0.0 < m.params["p_used"] < 1.0
    # hand-computed 3-sample stream: +, -, + (j = 0, 1, 2)
    est = OnlineP()
    est.update(np.array([1.0]))
    assert (est.p, est.ybar) == (1 - 1e-12, (2 * 0.5 + 1) / 3)
    assert est.pq == pytest.approx((0.25 + (1 - 2 / 3) ** 2) / 2)


# ---------------------------------------------------------------------------------------
# invariances, determinism, errors


@pytest.mark.parametrize("method", ["sg", "adagrad"])
def test_invariances(method):
    X, y = random_csr(5)
    kw = dict(step=0.1, T0=40, max_epochs=1, tol=0.0, prox_gamma=10.0, lam=0.01, seed=9)
    f = lambda *a, **k: quiet(SOLVERS[method], *a, **k)
    m1 = f(X, y, **kw)
    m2 = f(X, y, **kw)
    np.testing.assert_array_equal(m1.coef, m2.coef)
    for labels in [(y > 0).astype(int), y > 0, np.where(y > 0, "pos", "a_neg")]:
        np.testing.assert_array_equal(f(X, labels, **kw).coef, m1.coef)
    Xz = sp.hstack([X, sp.csr_matrix((X.shape[0], 1))]).tocsr()
    mz = f(Xz, y, **kw)
    np.testing.assert_array_equal(mz.coef[:-1], m1.coef)
    assert mz.coef[-1] == 0.0
    perm = np.random.default_rng(0).permutation(X.shape[1])
    np.testing.assert_allclose(f(X[:, perm], y, **kw).coef, m1.coef[perm], rtol=1e-12,
                               atol=1e-15)
    assert f(X, y, **dict(kw, seed=10)).coef.tolist() != m1.coef.tolist()


@pytest.mark.parametrize("method", ["sg", "adagrad"])
def test_errors(method):
    X, y = random_csr(6, n=60, d=5)
    f = SOLVERS[method]
    with pytest.raises(ValueError, match="y has one class only"):
        f(X, np.ones(60))
    assert f(X, np.arange(60) % 3, max_epochs=1, tol=0).coef.shape == (3, 5)    # one-vs-rest
    with pytest.raises(ValueError, match="y has 59 labels"):
        f(X, y[:59])
    with pytest.raises(ValueError, match="step must be None or a real number in \\(0, inf\\)"):
        f(X, y, step=0.0)
    with pytest.raises(TypeError, match="eta0"):
        f(X, y, eta0=0.1)                             # the step is step
    with pytest.raises(ValueError, match="prox_gamma must be None or a real number"):
        f(X, y, prox_gamma=-1.0)
    with pytest.raises(ValueError, match="p must be None or a real number in \\(0, 1\\) or "
                                         "'online'; got 1.5"):
        f(X, y, p=1.5)
    with pytest.raises(ValueError, match="p must be .*'online'; got 'offline'"):
        f(X, y, p="offline")
    with pytest.raises(ValueError, match="alpha_reset must be 'full' or 'minibatch'"):
        f(X, y, alpha_reset="half")
    with pytest.raises(ValueError, match="max_epochs must be an integer in"):
        f(X, y, max_epochs=-1)
    with pytest.raises(ValueError, match="T0 must be None or an integer in \\[2, inf\\)"):
        f(X, y, T0=1)
    with pytest.raises(ValueError, match="decay must be"):
        f(X, y, decay=0.5)
    with pytest.raises(ValueError, match="X contains NaN"):
        Xn = X.copy()
        Xn.data[0] = np.nan
        f(Xn, y)
    with pytest.raises(ValueError, match="eval_set\\[0\\] has 4 features"):
        f(X, y, eval_set=(X[:, :4], y))
    with pytest.raises(ValueError, match="eval_set\\[1\\] has a single class"):
        f(X, y, eval_set=(X, np.ones(60)))
    with pytest.raises(TypeError, match="callback"):
        f(X, y, callback=3)
    with pytest.raises(TypeError, match="gamma"):
        f(X, y, gamma=1e3)                            # renamed prox_gamma
    with pytest.raises(TypeError, match="n_stages"):
        f(X, y, n_stages=3)                           # the budget is max_epochs
    if method == "adagrad":
        with pytest.raises(ValueError, match="delta must be a real number in \\(0, inf\\)"):
            f(X, y, delta=0.0)


def test_callback_stop_and_history():
    X, y = random_csr(7)
    m = quiet(train_ppd_sg, X, y, T0=20, max_epochs=5, callback=lambda info: info["epoch"] >= 2)
    assert m.n_epochs == 2 and not m.converged and m.stop_reason == "callback"
    assert len(m.history) == 3
    assert np.isnan(m.history["val_auc"]).all() and np.isnan(m.history["dual"]).all()
    assert m.history["primal"][0] == 0.0 and m.history["pairwise"][0] == 1.0
    # stages of 19, 57, 171 steps end in epoch 1 (300 steps), the next one at step 760:
    # epoch 2 reports no stage end (NaN), and the callback stopped there
    assert np.isfinite(m.history["gap"][:2]).all() and np.isnan(m.history["primal"][2])
