"""The AUC tests' shared NumPy pieces (loaded by path: tests run in importlib mode): the
per-sample gradients of F, Algorithm 4's online estimate of p, one dense mini-batch gradient
step, test problems and the twin comparison."""
import numpy as np
import scipy.sparse as sp


def grads_np(h, yi, a, b, al, p, pq):
    if yi > 0:
        return (2 * (1 - p) * (h - a - 1 - al), -2 * (1 - p) * (h - a), 0.0,
                -2 * (1 - p) * h - 2 * pq * al)
    return 2 * p * (h - b + 1 + al), 0.0, -2 * p * (h - b), 2 * p * h - 2 * pq * al


class OnlineP:
    """Algorithm 4 (spec 2.4) with dualsolve's initial values."""

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


def assert_twin(m, ref, used, tol=1e-12):
    w, a, b, alpha, consumed = ref
    assert consumed == used == m.params["n_samples"]
    scale = max(1.0, np.abs(w).max())
    assert np.abs(m.coef - w).max() <= tol * scale
    for got, want in [(m.params["a"], a), (m.params["b"], b), (m.params["alpha"], alpha)]:
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
