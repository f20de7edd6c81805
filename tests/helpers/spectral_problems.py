"""The spectral-risk tests' shared NumPy pieces (loaded by path through the ``spectral``
fixture of conftest.py): the paper's preprocessing, the ridge solution and the objective."""
import numpy as np

import dualsolve


def standardized(name):
    """The paper's preprocessing (spec 4.1) on the whole bundled set: X standardised with the
    population std, y centred and divided by its ddof=1 std, no intercept."""
    X, y = dualsolve.datasets.load(name, dense=True)
    X = (X - X.mean(0)) / X.std(0)
    y = (y - y.mean()) / y.std(ddof=1)
    return X, y


def ridge(X, y, mu):
    """argmin (1/2n)||Xw - y||^2 + (mu/2)||w||^2 by a direct solve."""
    n, d = X.shape
    return np.linalg.solve(X.T @ X / n + mu * np.eye(d), X.T @ y / n)


def objective(X, y, w, sigma, mu, loss="squared"):
    """F(w) = sum_i sigma_i l_[i](w) + (mu/2)||w||^2 with the losses sorted ascending."""
    m = X @ w
    l = 0.5 * (m - y) ** 2 if loss == "squared" else np.logaddexp(0.0, -y * m)
    return float(np.dot(sigma, np.sort(l)) + 0.5 * mu * w @ w)
