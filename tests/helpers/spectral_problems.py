"""The spectral-risk tests' shared pieces (loaded by path through the ``spectral`` fixture
of conftest.py): the paper's preprocessing, the ridge solution, the objective and the input
errors every spectral trainer must raise."""
import numpy as np
import pytest

import dualsolve


def standardized(name):
    """The paper's preprocessing (the SOREL paper's experiments) on the whole bundled set: X standardised with the
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


def assert_spectrum_input_errors(train, X, y):
    """The errors on a bad spectrum, bad y or NaN in X that every spectral trainer raises
    (one shared validation; each trainer is checked through its own entry point)."""
    n = len(y)
    with pytest.raises(ValueError, match="spectrum must be nondecreasing"):
        train(X, y, spectrum=np.linspace(2.0, 0.0, n) / n)
    with pytest.raises(ValueError, match="spectrum must be nonnegative"):
        s = np.zeros(n)
        s[0], s[-1] = -0.5, 1.5
        train(X, y, spectrum=s)
    with pytest.raises(ValueError, match="spectrum must sum to 1"):
        train(X, y, spectrum=np.full(n, 1.0 / (n + 1)))
    with pytest.raises(ValueError, match="spectrum has length"):
        train(X, y, spectrum=np.full(n + 1, 1.0 / (n + 1)))
    with pytest.raises(ValueError, match="spectrum must be one of"):
        train(X, y, spectrum="cvarr")
    with pytest.raises(ValueError, match="spectrum_param"):
        train(X, y, spectrum="extremile", spectrum_param=0.5)
    with pytest.raises(ValueError, match="y has"):
        train(X, y[:-1], spectrum="erm")
    with pytest.raises(ValueError, match="X contains NaN"):
        Xn = X.copy()
        Xn[3, 2] = np.nan
        train(Xn, y, spectrum="erm")
