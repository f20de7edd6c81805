"""Shared fixtures: bundled real data and independent reference solvers.

The references never use dualsolve code: plain NumPy objectives minimised by scipy's
L-BFGS, a direct linear solve for ridge, and (when installed) the Clarabel interior-point
QP solver for the hinge loss.
"""
import os
import sys

import numpy as np
import pytest
import scipy.optimize as so
import scipy.sparse as sp

import dualsolve

try:
    import dualsolve.sdca._sdca  # noqa: F401  (a compiled module)
except ImportError as exc:       # pragma: no cover
    raise ImportError(
        f"dualsolve imported from {dualsolve.__file__} has no compiled extensions: install it "
        "(pip install '.[test]') and run `pytest` (not `python -m pytest`, which puts the "
        "source tree first on sys.path), or build in place with "
        "`python setup.py build_ext --inplace`") from exc

# helper modules of the tests (solver_problems.py) are imported by name: with
# --import-mode=importlib the tests' folder is not on sys.path by itself
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def a9a():
    return dualsolve.datasets.load("a9a")


@pytest.fixture(scope="session")
def heart():
    return dualsolve.datasets.load("heart_scale")


@pytest.fixture(scope="session")
def three_classes(heart):
    """heart_scale with three string classes: "a" / "b" by its label, "c" where feature 0
    exceeds 0.3."""
    X, y = heart
    y3 = np.where(y > 0, "b", "a").astype(object)
    y3[np.asarray(X[:, 0].todense()).ravel() > 0.3] = "c"
    return X, y3.astype(str)


def primal_objective(X, y, w, lam, loss, intercept=0.0, smoothing=0.5):
    """P(w) = mean loss + lam/2 ||w||^2 in plain NumPy (the intercept is not regularised here)."""
    z = X @ w + intercept
    m = y * z
    if loss == "logistic":
        v = np.logaddexp(0.0, -m)
    elif loss == "squared_hinge":
        v = np.maximum(0.0, 1.0 - m) ** 2
    elif loss == "hinge":
        v = np.maximum(0.0, 1.0 - m)
    elif loss == "smooth_hinge":
        g = smoothing
        v = np.where(m >= 1, 0.0, np.where(m < 1 - g, 1 - m - g / 2, (1 - m) ** 2 / (2 * g)))
    elif loss == "squared":
        v = 0.5 * (z - y) ** 2
    else:
        raise ValueError(loss)
    return v.mean() + 0.5 * lam * (w @ w)


def _value_and_grad(X, y, lam, loss, smoothing):
    n = X.shape[0]

    def f(w):
        z = X @ w
        m = y * z
        if loss == "logistic":
            v = np.logaddexp(0.0, -m)
            dm = -np.exp(-np.logaddexp(0.0, m))          # -sigmoid(-m)
        elif loss == "squared_hinge":
            r = np.maximum(0.0, 1.0 - m)
            v, dm = r * r, -2.0 * r
        elif loss == "smooth_hinge":
            g = smoothing
            v = np.where(m >= 1, 0.0, np.where(m < 1 - g, 1 - m - g / 2, (1 - m) ** 2 / (2 * g)))
            dm = np.where(m >= 1, 0.0, np.where(m < 1 - g, -1.0, (m - 1) / g))
        elif loss == "squared":
            v, dz = 0.5 * (z - y) ** 2, z - y
            return v.mean() + 0.5 * lam * w @ w, X.T @ dz / n + lam * w
        else:
            raise ValueError(loss)
        return v.mean() + 0.5 * lam * w @ w, X.T @ (dm * y) / n + lam * w
    return f


def lbfgs_reference(X, y, lam, loss, smoothing=0.5, w0=None):
    """Minimise the primal with L-BFGS at tight tolerances; returns (P*, w*)."""
    f = _value_and_grad(X, y, lam, loss, smoothing)
    w0 = np.zeros(X.shape[1]) if w0 is None else w0
    r = so.minimize(f, w0, jac=True, method="L-BFGS-B",
                    options=dict(gtol=1e-13, ftol=1e-16, maxiter=50000, maxcor=50))
    return r.fun, r.x


def ridge_reference(X, y, lam):
    """Exact ridge optimum from the normal equations (X^T X / n + lam I) w = X^T y / n."""
    n, d = X.shape
    G = (X.T @ X).toarray() if sp.issparse(X) else X.T @ X
    w = np.linalg.solve(G / n + lam * np.eye(d), X.T @ y / n)
    return primal_objective(X, y, w, lam, "squared"), w


def hinge_qp_reference(X, y, lam):
    """The hinge primal as a QP solved by Clarabel (interior point, tight tolerances)."""
    clarabel = pytest.importorskip("clarabel")
    n, d = X.shape
    P = sp.block_diag([lam * sp.eye(d), sp.csc_matrix((n, n))]).tocsc()
    q = np.r_[np.zeros(d), np.full(n, 1.0 / n)]
    YX = sp.diags(y) @ sp.csr_matrix(X)
    A = sp.vstack([sp.hstack([-YX, -sp.eye(n)]),
                   sp.hstack([sp.csr_matrix((n, d)), -sp.eye(n)])]).tocsc()
    b = np.r_[-np.ones(n), np.zeros(n)]
    st = clarabel.DefaultSettings()
    st.verbose = False
    st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = 1e-13
    st.tol_ktratio = 1e-10
    sol = clarabel.DefaultSolver(P, q, A, b, [clarabel.NonnegativeConeT(2 * n)], st).solve()
    w = np.array(sol.x[:d])
    return primal_objective(X, y, w, lam, "hinge"), w


def reference_optimum(X, y, lam, loss):
    """P* of a loss by its own reference: the QP for the hinge, the normal equations for
    ridge, L-BFGS for the smooth losses."""
    if loss == "hinge":
        return hinge_qp_reference(X, y, lam)[0]
    if loss == "squared":
        return ridge_reference(X, y, lam)[0]
    return lbfgs_reference(X, y, lam, loss)[0]


@pytest.fixture(scope="session")
def references():
    class R:
        primal = staticmethod(primal_objective)
        lbfgs = staticmethod(lbfgs_reference)
        ridge = staticmethod(ridge_reference)
        hinge_qp = staticmethod(hinge_qp_reference)
        optimum = staticmethod(reference_optimum)
    return R


# ---------------------------------------------------------------------------------------
# kernel mixup family (docs/mixup.md): NumPy oracles in tests/helpers/mixup_reference.py


def _helper_module(name):
    """tests/helpers/<name>.py, loaded by path (tests run in importlib mode, so test files
    cannot import each other or the helpers folder)."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).parent / "helpers" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"dualsolve_tests_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def embed_helper():
    """The module tests/helpers/embed.py: build_extension(tmp_path_factory, name, pyx)."""
    return _helper_module("embed")


@pytest.fixture(scope="session")
def mixup_ref():
    """The module tests/helpers/mixup_reference.py: slow MixupSDCA twin, L-BFGS / QP /
    scikit-learn references and small real-data problems."""
    return _helper_module("mixup_reference")


@pytest.fixture(scope="session")
def spectral():
    """The module tests/helpers/spectral_problems.py: standardized(name), ridge, objective."""
    return _helper_module("spectral_problems")


@pytest.fixture(scope="session")
def yacht(spectral):
    """yacht with the SOREL paper's preprocessing (dense)."""
    return spectral.standardized("yacht")


@pytest.fixture(scope="session")
def adf_fixtures():
    """The module tests/helpers/adfsdca_fixtures.py: the synthetic F1-F3 problems."""
    return _helper_module("adfsdca_fixtures")


# ---------------------------------------------------------------------------------------
# multi-class: a real UCI set from DUALSOLVE_DATA


@pytest.fixture(scope="session")
def satellite():
    """Statlog satellite (6 classes, string labels), features scaled to [0, 1], as CSR;
    skips without DUALSOLVE_DATA."""
    import csv
    import lzma
    import os
    data = os.environ.get("DUALSOLVE_DATA")
    path = os.path.join(data or "", "uci_classification", "satellite_statlog.csv.xz")
    if not data or not os.path.exists(path):
        pytest.skip("satellite needs DUALSOLVE_DATA")
    with lzma.open(path, "rt") as f:
        rows = list(csv.reader(f))
    j = rows[0].index("classes")
    y = np.array([r[j] for r in rows[1:]])
    X = np.array([[float(v) for i, v in enumerate(r) if i != j] for r in rows[1:]])
    X = (X - X.min(0)) / (X.max(0) - X.min(0))
    return sp.csr_matrix(X), y
