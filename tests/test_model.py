"""Model: predictions and the save / load_model round trip (no pickle)."""
import json
import zipfile

import numpy as np
import pytest

import dualsolve as ds


@pytest.fixture(scope="module")
def model(heart):
    X, y = heart
    labels = np.where(y > 0, "presence", "absence")
    return ds.train_sdca(X, labels, loss="squared_hinge", fit_intercept=True, tol=1e-8)


def test_round_trip(model, heart, tmp_path):
    X, _ = heart
    path = tmp_path / "heart.model"
    model.save(path)
    m2 = ds.load_model(path)
    np.testing.assert_array_equal(m2.coef, model.coef)
    assert m2.intercept == model.intercept != 0.0
    np.testing.assert_array_equal(m2.dual, model.dual)
    assert m2.history.dtype == model.history.dtype
    for f in model.history.dtype.names:                 # NaN marks epochs without a check
        np.testing.assert_array_equal(m2.history[f], model.history[f])
    assert m2.history.dtype.names[:5] == ("epoch", "time", "primal", "dual", "gap")
    assert (m2.converged, m2.n_epochs, m2.solver) == (model.converged, model.n_epochs, "sdca")
    assert m2.params["loss"] == "squared_hinge" and m2.params["lam"] == model.params["lam"]
    np.testing.assert_array_equal(m2.predict(X), model.predict(X))
    np.testing.assert_array_equal(m2.decision_function(X), model.decision_function(X))
    assert set(m2.predict(X)) == {"presence", "absence"}


def test_file_is_a_plain_npz_without_pickle(model, tmp_path):
    path = tmp_path / "m.npz"
    model.save(path, include_dual=False)
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
    assert {"meta.npy", "coef.npy", "intercept.npy", "history.npy", "classes.npy"} <= names
    assert "dual.npy" not in names
    with np.load(path, allow_pickle=False) as z:           # raises if anything needs pickle
        meta = json.loads(str(z["meta"]))
        assert meta["format"] == "dualsolve-model-2"
        assert meta["n_features"] == model.n_features
    assert ds.load_model(path).dual is None


def test_regression_model_predicts_scores(heart, tmp_path):
    X, y = heart
    m = ds.train_sdca(X, y * 3.0 + 0.5, loss="squared", tol=1e-10)
    assert m.classes is None
    np.testing.assert_array_equal(m.predict(X), m.decision_function(X))
    m.save(tmp_path / "r.model")
    assert ds.load_model(tmp_path / "r.model").classes is None


def test_load_rejects_other_files(tmp_path):
    p = tmp_path / "x.npz"
    np.savez(p, a=np.zeros(3))
    with pytest.raises(ValueError, match="not a dualsolve model"):
        ds.load_model(p)
    t = tmp_path / "x.txt"
    t.write_text("some text\n")
    with pytest.raises(ValueError, match="not a dualsolve model"):
        ds.load_model(t)
    # a file starting with liblinear's first keyword is read as a liblinear model file
    # (tests/test_liblinear_format.py); this one stops after its first line
    t.write_text("solver_type L2R_LR\n")
    with pytest.raises(ValueError, match="field 'w' is missing .*truncated liblinear"):
        ds.load_model(t)


def test_decision_function_input_checks(model, heart):
    X, _ = heart
    with pytest.raises(ValueError, match="one sample"):
        model.decision_function(X.toarray()[0])
    np.testing.assert_allclose(model.decision_function(X.toarray()), model.decision_function(X))
    np.testing.assert_allclose(model.decision_function(X.tocsc()), model.decision_function(X))
