"""The AUC tests' shared pieces (loaded by path: tests run in importlib mode): the per-sample
gradients of F, Algorithm 4's online estimate of p, one dense mini-batch gradient step, test
problems, the engines run directly (a budget of exact stages in steps, the trace of the drawn
rows: what the dense twins replay) and the twin comparison."""
import math

import numpy as np
import scipy.sparse as sp

from dualsolve._validation import check_csr
from dualsolve.auc import _ppd, _solam
from dualsolve.auc.api import stage_plan


def grads_np(h, yi, a, b, al, p, pq):
    if yi > 0:
        return (2 * (1 - p) * (h - a - 1 - al), -2 * (1 - p) * (h - a), 0.0,
                -2 * (1 - p) * h - 2 * pq * al)
    return 2 * p * (h - b + 1 + al), 0.0, -2 * p * (h - b), 2 * p * h - 2 * pq * al


class OnlineP:
    """Algorithm 4 of Liu et al. (2020) with dualsolve's initial values."""

    def __init__(self):
        self.tp = self.tn = 0.0
        self.ybar, self.p, self.pq, self.j = 0.5, 0.5, 0.25, 0

    def update(self, ys):
        m = len(ys)
        npos = float(np.sum(ys > 0))
        self.tp += npos
        self.tn += m - npos
        self.p = min(max(self.tp / (self.tp + self.tn), 1e-12), 1 - 1e-12)
        self.ybar = ((self.j + 2) * self.ybar + npos) / (self.j + m + 2)
        ss = np.sum(((ys > 0).astype(float) - self.ybar) ** 2)
        self.pq = ((self.j + 1) * self.pq + ss) / (self.j + m + 1)
        self.j += m


def batch_grads(Xd, y, batch, w, a, b, al, pp, pq):
    """The batch means (g_w, (dF/da, dF/db, dF/dalpha)) at (w, a, b, al), dense."""
    B = len(batch)
    g = np.zeros(Xd.shape[1])
    sg = np.zeros(3)
    for i in batch:
        c, ga, gb, gal = grads_np(Xd[i] @ w, y[i], a, b, al, pp, pq)
        g += (c * (1.0 / B)) * Xd[i]
        sg += (ga, gb, gal)
    sg *= 1.0 / B
    return g, sg


def scalar_step(a, b, al, sg, eta, a0, b0, inv_g):
    """The simultaneous steps of a, b (pulled toward a0, b0) and alpha (ascent)."""
    return (a - eta * (sg[0] + (a - a0) * inv_g), b - eta * (sg[1] + (b - b0) * inv_g),
            al + eta * sg[2])


def random_csr(seed, n=300, d=40, density=0.1, p=0.2, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=rng, format="csr")
    X.data = rng.standard_normal(X.nnz) * 0.7
    keep = np.ones(n)
    keep[5] = 0.0                                # an empty row
    X = sp.diags(keep) @ X
    X.eliminate_zeros()
    X = sp.csr_matrix(X)
    y = np.where(rng.random(n) < p, 1.0, -1.0)
    return X.astype(dtype), y


def gaussian_problem(seed, n, d=20, p=0.1, mu_seed=100):
    mu = 0.3 * np.random.default_rng(mu_seed).standard_normal(d)
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < p, 1, -1)
    X = rng.standard_normal((n, d)) + np.where(y[:, None] > 0, mu, 0.0)
    return X, y


def csr_arrays(X):
    """(data, indices, indptr) of a validated X, indptr of the indices' dtype."""
    Xc = check_csr(X)
    indptr = Xc.indptr if Xc.indptr.dtype == Xc.indices.dtype else Xc.indptr.astype(Xc.indices.dtype)
    return Xc.data, Xc.indices, indptr


def schedule(method, K, eta0, T0, decay=3.0, growth=3.0):
    """(etas, Ts) of the first K stages: T_k iterates for PPD (steps + 1), steps for PGA."""
    plan = [stage_plan(method, k, eta0, T0, decay, growth) for k in range(1, K + 1)]
    etas = [e for e, _ in plan]
    steps = [int(s) for _, s in plan]
    return etas, (steps if method == "pga" else [s + 1 for s in steps])


def reset_sizes(K, alpha_batch, growth=3.0):
    return [math.floor(alpha_batch * growth ** (k - 1) + 0.5) for k in range(1, K + 1)]


def run_engine(X, y, method, *, K, eta0, T0, lam=0.0, gamma=None, decay=3.0, growth=3.0,
               delta=1e-2, R1=None, R2=None, batch_size=1, p=None, alpha_batch=0, seed=3,
               scaled_sg=True, mon=None):
    """ppd_run for exactly K stages (a budget in steps) with tol = 0, recording the drawn
    rows. Returns (w, result dict, the drawn rows, etas, Ts)."""
    etas, Ts = schedule(method, K, eta0, T0, decay, growth)
    steps = sum(Ts) if method == "pga" else sum(T - 1 for T in Ts)
    trace = np.full(steps * batch_size + 10 * sum(reset_sizes(K, alpha_batch, growth)) + 1000,
                    -1, dtype=np.intp)
    w = np.zeros(X.shape[1])
    r = _ppd.solve(*csr_arrays(X), X.shape[1], np.where(y > 0, 1.0, -1.0), w, method,
                   lam=lam, eta0=eta0, T0=T0, decay=decay, growth=growth,
                   inv_gamma=0.0 if gamma is None or np.isinf(gamma) else 1.0 / gamma,
                   delta=delta, R1=np.inf if R1 is None else R1,
                   R2=np.inf if R2 is None else R2, batch_size=batch_size,
                   p_mode="online" if p == "online" else "fixed",
                   p=np.nan if p is None or p == "online" else p, alpha_batch=alpha_batch,
                   tol=0.0, max_epochs=0, seed=seed, mon=mon, trace=trace, max_steps=steps,
                   scaled_sg=scaled_sg)
    assert r["n_stages"] == K and r["n_steps"] == steps
    return w, r, trace[trace >= 0], etas, Ts


def run_solam(X, y, *, zeta, R, lam=0.0, max_epochs=3, seed=4):
    """solam_run with tol = 0, recording the drawn rows: (w, result dict, drawn rows)."""
    trace = np.full(max_epochs * X.shape[0], -1, dtype=np.intp)
    w = np.zeros(X.shape[1])
    r = _solam.solve(*csr_arrays(X), X.shape[1], np.where(y > 0, 1.0, -1.0), w, zeta=zeta,
                     R=R, lam=lam, tol=0.0, max_epochs=max_epochs, seed=seed, trace=trace)
    return w, r, trace[trace >= 0]


def assert_twin(w, r, ref, used, tol=1e-12):
    """The engine's (w, result) against a twin's (w, a, b, alpha, samples consumed)."""
    wt, a, b, alpha, consumed = ref
    assert consumed == used == r["n_samples"]
    scale = max(1.0, np.abs(wt).max())
    assert np.abs(w - wt).max() <= tol * scale
    for got, want in [(r["a"], a), (r["b"], b), (r["alpha"], alpha)]:
        assert abs(got - want) <= tol * max(1.0, abs(want))


def split_entries(X):
    """X as a non-canonical CSR: each entry split into two halves, the second copy of each
    row in reversed order (duplicates, unsorted), which the solvers must sum in a copy."""
    Xc = sp.csr_matrix(X, dtype=np.float64)
    ind, dat, ptr = [], [], [0]
    for i in range(Xc.shape[0]):
        sl = slice(Xc.indptr[i], Xc.indptr[i + 1])
        ind += Xc.indices[sl][::-1].tolist() + Xc.indices[sl].tolist()
        dat += (Xc.data[sl][::-1] / 2).tolist() + (Xc.data[sl] / 2).tolist()
        ptr.append(len(ind))
    return sp.csr_matrix((np.array(dat), np.array(ind), np.array(ptr)), shape=Xc.shape)
