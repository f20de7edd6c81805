"""train_sdca's support vector regression against liblinear, side by side in one run.

For kin8nm and power-plant (raw, unstandardised, no intercept), C in {1, 100} and both
epsilon-insensitive losses (epsilon = 0.1, liblinear's default -p), every objective in
liblinear's scale ``F(w) = (1/2)||w||^2 + C sum_i loss_i(w)`` (ours is ``F / (C n)``):

* liblinear: ``-s 13`` (L1-loss SVR, dual CD) or ``-s 12`` (L2-loss SVR, dual CD; it switches
  to the primal Newton ``-s 11`` when its dual reaches liblinear's cap of 300 passes) and
  ``-s 11`` itself, all at ``-e 1e-8``; the passes and whether the cap was hit are parsed
  from liblinear's output;
* F*: the exact optimum, from the primal as a QP solved by Clarabel (interior point, tight
  tolerances; independent of both solvers), polished for the L2 loss by generalised Newton;
* ours: ``train_sdca(..., tol=1e-10)`` with the default budget (``max_epochs=5000``) and with
  ``--long`` epochs (default 100000), and ``train_linear(..., tol=1e-10)`` (SDCA, then
  Newton: on the L1 loss by smoothing continuation) with its defaults; each one's
  objective, its relative difference to liblinear's and to F*, the certified gap
  ``(P - D) / P`` and the seconds.

Every objective is recomputed here in NumPy from the returned w. Single-threaded BLAS.

Usage::

    DUALSOLVE_DATA=... python bench/svr_vs_liblinear.py [--long 100000]
        [--json bench/results/svr_vs_liblinear.json]
"""
import argparse
import json
import os
import re
import sys
import time
import warnings

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import dualsolve  # noqa: E402

LOSSES = {"epsilon_insensitive": 13, "squared_epsilon_insensitive": 12}
EPSILON = 0.1


def objective(X, y, w, C, loss, eps=EPSILON):
    """liblinear's scale: (1/2)||w||^2 + C sum loss."""
    r = np.maximum(0.0, np.abs(y - X @ w) - eps)
    return float(0.5 * w @ w + C * (r.sum() if loss == "epsilon_insensitive" else r @ r))


def exact_optimum(X, y, C, loss, eps=EPSILON):
    """argmin F by Clarabel on the QP in (w, xi): min (1/2)||w||^2 + C sum xi (or xi^2)
    s.t. xi >= y - Xw - eps, xi >= Xw - y - eps (and xi >= 0 for the L1 loss)."""
    import clarabel
    n, d = X.shape
    X = sp.csr_matrix(X)
    l1 = loss == "epsilon_insensitive"
    P = sp.block_diag([sp.eye(d), (sp.csc_matrix((n, n)) if l1 else 2.0 * C * sp.eye(n))])
    q = np.r_[np.zeros(d), np.full(n, C) if l1 else np.zeros(n)]
    rows = [sp.hstack([-X, -sp.eye(n)]), sp.hstack([X, -sp.eye(n)])]
    b = [eps - y, eps + y]
    if l1:
        rows.append(sp.hstack([sp.csr_matrix((n, d)), -sp.eye(n)]))
        b.append(np.zeros(n))
    A = sp.vstack(rows).tocsc()
    st = clarabel.DefaultSettings()
    st.verbose = False
    st.max_iter = 500
    st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = 1e-12
    st.tol_ktratio = 1e-10
    sol = clarabel.DefaultSolver(sp.triu(P).tocsc(), q, A, np.concatenate(b),
                                 [clarabel.NonnegativeConeT(A.shape[0])], st).solve()
    w = np.array(sol.x[:d])
    if not l1:
        w = _newton_l2(X, y, C, eps, w)
    return objective(X, y, w, C, loss, eps), w


def _newton_l2(X, y, C, eps, w, iters=50):
    """Generalised Newton with backtracking on the L2-loss SVR primal (smooth, piecewise
    quadratic): finite termination once the active set is right."""
    f = lambda v: objective(X, y, v, C, "squared_epsilon_insensitive", eps)
    for _ in range(iters):
        r = X @ w - y
        t = np.where(r > eps, r - eps, np.where(r < -eps, r + eps, 0.0))
        g = w + 2.0 * C * (X.T @ t)
        act = t != 0.0
        Xa = X[act]
        H = np.eye(X.shape[1]) + 2.0 * C * (Xa.T @ Xa).toarray()
        step = np.linalg.solve(H, g)
        s, f0 = 1.0, f(w)
        while f(w - s * step) > f0 - 1e-4 * s * (g @ step) and s > 1e-12:
            s *= 0.5
        w_new = w - s * step
        if f(w_new) >= f0:
            break
        w = w_new
    return w


def run_liblinear(X, y, C, s, tol=1e-8, eps=EPSILON):
    from liblinear import liblinear as ll
    from liblinear import liblinearutil as llu
    chunks = []
    cb = ll.PRINT_STRING_FUN(lambda b: chunks.append(b.decode(errors="replace")))
    prob = ll.problem(y, X)
    param = ll.parameter(f"-s {s} -c {C!r} -p {eps!r} -e {tol!r} -B -1")
    param.print_func = cb
    t0 = time.perf_counter()
    model = llu.train(prob, param)
    dt = time.perf_counter() - t0
    ll.liblinear.set_print_string_function(ll.ctypes_print_null)
    out = "".join(chunks)
    w = np.ctypeslib.as_array(model.w, shape=(model.get_nr_feature(),)).astype(float)
    w = np.r_[w, np.zeros(X.shape[1] - w.size)]
    m = re.search(r"optimization finished, #iter = (\d+)", out)
    return dict(w=w, time=dt, dual_iter=int(m.group(1)) if m else 0,
                newton_iter=len(re.findall(r"^iter\s+\d+", out, flags=re.M)),
                capped="reaching max number of iterations" in out,
                switched="Switching to use -s 11" in out)


def run_ours(X, y, C, loss, solver, max_epochs, tol=1e-10, eps=EPSILON):
    train = dualsolve.train_linear if solver == "linear" else dualsolve.train_sdca
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dualsolve.ConvergenceWarning)
        t0 = time.perf_counter()
        m = train(X, y, loss=loss, C=C, epsilon=eps, tol=tol, max_epochs=max_epochs, seed=0)
        dt = time.perf_counter() - t0
    h = m.history[np.isfinite(m.history["gap"])][-1]
    return dict(w=m.coef, time=dt, epochs=m.n_epochs, stop=m.stop_reason,
                gap_rel=float(h["gap"] / h["primal"]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--long", type=int, default=100000, help="the long budget (epochs)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    rows = []
    for name in ("kin8nm", "power-plant"):
        Xd, y = dualsolve.datasets.load(name)
        X = sp.csr_matrix(Xd)
        n = X.shape[0]
        for C in (1.0, 100.0):
            for loss, s in LOSSES.items():
                Fstar, _ = exact_optimum(X, y, C, loss)
                peers = [s] + ([11] if s == 12 else [])
                lls = {k: run_liblinear(X, y, C, k) for k in peers}
                for solver, budget in (("sdca", 5000), ("sdca", args.long), ("linear", 5000)):
                    o = run_ours(X, y, C, loss, solver, budget)
                    Fo = objective(X, y, o["w"], C, loss)
                    row = dict(data=name, n=n, C=C, loss=loss, F_star=Fstar, solver=solver,
                               budget=budget,
                               ours=Fo, ours_rel_star=(Fo - Fstar) / Fstar,
                               ours_gap_rel=o["gap_rel"], epochs=o["epochs"], stop=o["stop"],
                               ours_time=o["time"], liblinear={})
                    for k, r in lls.items():
                        Fl = objective(X, y, r["w"], C, loss)
                        row["liblinear"][k] = dict(
                            F=Fl, rel_ours=(Fo - Fl) / Fl, rel_star=(Fl - Fstar) / Fstar,
                            dual_iter=r["dual_iter"], newton_iter=r["newton_iter"],
                            capped=r["capped"], switched=r["switched"], time=r["time"])
                    rows.append(row)
                    print(_line(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


def _line(r):
    ll = " ".join(
        f"[-s {k}: F={v['F']:.10g} rel*={v['rel_star']:+.1e} ours-vs={v['rel_ours']:+.1e} "
        f"iter={v['dual_iter']}+{v['newton_iter']}N{' CAP' if v['capped'] else ''} "
        f"{v['time']:.2f}s]" for k, v in r["liblinear"].items())
    return (f"{r['data']} C={r['C']:g} {r['loss']} F*={r['F_star']:.10g} | "
            f"{r['solver']}@{r['budget']}: "
            f"F={r['ours']:.10g} rel*={r['ours_rel_star']:+.1e} gap={r['ours_gap_rel']:.1e} "
            f"{r['epochs']} ep {r['stop']} {r['ours_time']:.2f}s | {ll}")


if __name__ == "__main__":
    main(sys.argv[1:])
