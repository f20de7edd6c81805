"""The ``dualsolve`` command (dualsolve/cli.py): train / predict / demo, flags, errors."""
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import dualsolve
import dualsolve as ds
from dualsolve import cli
from dualsolve.datasets import dump_svmlight, load
from solver_problems import subprocess_env  # tests/ (see conftest.py)

ACCURACY = re.compile(r"^Accuracy = (\d+\.\d\d)% \((\d+)/(\d+)\)$", re.M)


@pytest.fixture(scope="module")
def heart_file(tmp_path_factory):
    """heart_scale written as a plain LIBSVM file, and the (X, y) read back from it."""
    path = tmp_path_factory.mktemp("data") / "heart_scale"
    X, y = load("heart_scale")
    dump_svmlight(X, y, path)
    return str(path), dualsolve.load_svmlight(path)


def run(argv, capsys):
    """main(argv) -> (exit status, stdout, stderr)."""
    rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def read_lines(path):
    with open(path) as fh:
        return fh.read().splitlines()


# ------------------------------------------------------------------ train + predict

def test_round_trip_matches_python_api(heart_file, tmp_path, capsys):
    path, (X, y) = heart_file
    model_file, out_file = tmp_path / "h.model", tmp_path / "h.out"
    rc, out, err = run(["train", "-q", "-c", 2, "-e", 1e-8, "--seed", 3, path, model_file],
                       capsys)
    assert (rc, out, err) == (0, "", "")
    rc, out, err = run(["predict", path, model_file, out_file], capsys)
    assert rc == 0 and err == ""

    ref = dualsolve.train_sdca(X, y, loss="logistic", C=2.0, tol=1e-8, seed=3)
    saved = dualsolve.load_model(model_file)
    # same data, parameters and seed: the same iterates, so the same numbers exactly
    np.testing.assert_array_equal(saved.coef, ref.coef)
    assert saved.n_epochs == ref.n_epochs and saved.converged
    expected = ref.predict(X)
    lines = read_lines(out_file)
    assert len(lines) == X.shape[0] == 270
    assert set(lines) == {"1", "-1"}                       # integers, not "1.0"
    np.testing.assert_array_equal(np.array(lines, dtype=float), expected)

    m = ACCURACY.search(out)
    assert m, out
    correct = int(np.count_nonzero(expected == y))
    assert int(m.group(2)) == correct and int(m.group(3)) == 270
    assert float(m.group(1)) == round(100.0 * correct / 270, 2)
    assert 0.80 < correct / 270 < 0.90                      # logistic, C = 2 on heart_scale


def test_summary_line_reports_the_solve(heart_file, tmp_path, capsys):
    path, (X, y) = heart_file
    rc, out, err = run(["train", path, tmp_path / "m"], capsys)
    assert rc == 0 and err == ""
    ref = dualsolve.train_sdca(X, y)
    m = re.fullmatch(r"sdca logistic: (\d+) epochs, primal (\S+), gap (\S+), (\S+) s, "
                     r"converged; model saved to (.+)\n", out)
    assert m, out
    assert int(m.group(1)) == ref.n_epochs
    assert float(m.group(2)) == pytest.approx(ref.history["primal"][-1], rel=1e-10)
    assert float(m.group(3)) == pytest.approx(ref.history["gap"][-1], rel=1e-3)
    assert float(m.group(3)) <= 1e-6 * np.log(2)           # default tol, P(0) = log 2
    assert m.group(5) == str(tmp_path / "m")


@pytest.mark.filterwarnings("ignore::dualsolve.ConvergenceWarning")   # 50 epochs, both sides
@pytest.mark.parametrize("number, loss", [("0", "logistic"), ("7", "logistic"),
                                          ("1", "squared_hinge"), ("2", "squared_hinge"),
                                          ("3", "hinge"), ("sdca", "logistic")])
def test_liblinear_solver_numbers_select_the_loss(heart_file, tmp_path, capsys, number, loss):
    path, (X, y) = heart_file
    model_file = tmp_path / "m"
    rc, _, _ = run(["train", "-q", "-s", number, "-m", 50, path, model_file], capsys)
    assert rc == 0
    model = dualsolve.load_model(model_file)
    # liblinear's numbers run train_linear, the hinge's dual number train_sdca
    linear = number in ("0", "1", "2", "7")
    assert model.params["loss"] == loss and model.solver == ("linear" if linear else "sdca")
    train = dualsolve.train_linear if linear else dualsolve.train_sdca
    ref = train(X, y, loss=loss, max_epochs=50)
    if linear:
        assert model.params["solver_chosen"] == ref.params["solver_chosen"]
    np.testing.assert_array_equal(model.coef, ref.coef)


@pytest.mark.parametrize("loss", ["smooth_hinge", "hinge", "squared_hinge"])
def test_loss_by_name(heart_file, tmp_path, capsys, loss):
    path, _ = heart_file
    rc, _, _ = run(["train", "-q", "-l", loss, "-m", 20, path, tmp_path / "m"], capsys)
    assert rc == 0
    assert dualsolve.load_model(tmp_path / "m").params["loss"] == loss


@pytest.mark.parametrize("flags, lam", [([], 1.0 / 270), (["-c", "0.5"], 1.0 / (0.5 * 270)),
                                        (["-c", "40"], 1.0 / (40 * 270)),
                                        (["--lam", "0.01"], 0.01)])
def test_c_maps_to_lam(heart_file, tmp_path, capsys, flags, lam):
    path, _ = heart_file
    rc, _, _ = run(["train", "-q", *flags, path, tmp_path / "m"], capsys)
    assert rc == 0
    params = dualsolve.load_model(tmp_path / "m").params
    assert params["lam"] == pytest.approx(lam, rel=1e-15)
    assert params["C"] == pytest.approx(1.0 / (lam * 270), rel=1e-12)


def test_bias_gives_an_intercept(heart_file, tmp_path, capsys):
    path, (X, y) = heart_file
    rc, _, _ = run(["train", "-q", "-B", 1, path, tmp_path / "b"], capsys)
    assert rc == 0
    model = dualsolve.load_model(tmp_path / "b")
    ref = dualsolve.train_sdca(X, y, fit_intercept=True, intercept_scaling=1.0)
    assert model.params["fit_intercept"] is True and model.params["intercept_scaling"] == 1.0
    assert abs(model.intercept) > 1e-3
    assert model.intercept == ref.intercept
    # -B 2: the constant feature is 2, the intercept still x-independent
    run(["train", "-q", "-B", 2, path, tmp_path / "b2"], capsys)
    assert dualsolve.load_model(tmp_path / "b2").params["intercept_scaling"] == 2.0
    # no -B, or -B <= 0: no intercept
    for flags in ([], ["-B", "-1"], ["-B", "0"]):
        run(["train", "-q", *flags, path, tmp_path / "n"], capsys)
        model = dualsolve.load_model(tmp_path / "n")
        assert model.intercept == 0.0 and model.params["fit_intercept"] is False


def test_options_reach_the_solver(heart_file, tmp_path, capsys):
    path, (X, y) = heart_file
    rc, _, err = run(["train", "-q", "-s", 3, "-e", 1e-3, "-m", 7, "--seed", 11,
                      "--no-shrinking", path, tmp_path / "m"], capsys)
    assert rc == 0 and err == ""
    p = dualsolve.load_model(tmp_path / "m").params
    assert (p["tol"], p["max_epochs"], p["seed"], p["shrinking"]) == (1e-3, 7, 11, False)


def test_default_model_file_in_current_directory(heart_file, tmp_path, capsys, monkeypatch):
    path, (X, y) = heart_file
    compressed = tmp_path / "heart.txt.xz"
    dump_svmlight(X, y, compressed)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert run(["train", "-q", path], capsys)[0] == 0
    assert run(["train", "-q", compressed], capsys)[0] == 0
    assert sorted(os.listdir(work)) == ["heart.txt.model", "heart_scale.model"]
    a = dualsolve.load_model(work / "heart_scale.model")
    b = dualsolve.load_model(work / "heart.txt.model")
    np.testing.assert_array_equal(a.coef, b.coef)          # .xz read like the plain file


def test_verbose_and_quiet(heart_file, tmp_path, capsys):
    path, (X, y) = heart_file
    rc, out, _ = run(["train", "--verbose", path, tmp_path / "m"], capsys)
    assert rc == 0
    model = dualsolve.load_model(tmp_path / "m")
    epoch_lines = [l for l in out.splitlines() if re.match(r"^\s+\d+\s", l)]
    assert len(epoch_lines) == model.n_epochs + 1           # epoch 0 .. n_epochs
    last = epoch_lines[-1].split()
    assert int(last[0]) == model.n_epochs
    assert float(last[1]) == pytest.approx(model.history["primal"][-1], rel=1e-15)
    rc, out, err = run(["train", "-q", "-m", 1, "-e", 0, path, tmp_path / "m"], capsys)
    assert (rc, out, err) == (0, "", "")


def test_not_converged_warns_and_saves(heart_file, tmp_path, capsys):
    path, _ = heart_file
    rc, out, err = run(["train", "-m", 2, "-e", 1e-14, path, tmp_path / "m"], capsys)
    assert rc == 0
    assert "2 epochs" in out and "not converged" in out
    assert err.startswith("dualsolve: warning: not converged: train_sdca stopped at "
                          "max_epochs=2 before its criterion held (duality gap")
    assert dualsolve.load_model(tmp_path / "m").n_epochs == 2


def test_label_values_are_kept(tmp_path, capsys):
    X, y = load("heart_scale")
    for labels, expected in (((0.0, 1.0), {"0", "1"}), ((2.0, 4.0), {"2", "4"}),
                             ((-0.5, 2.5), {"-0.5", "2.5"})):
        f = tmp_path / "d"
        dump_svmlight(X, np.where(y > 0, labels[1], labels[0]), f)
        assert run(["train", "-q", f, tmp_path / "m"], capsys)[0] == 0
        rc, out, _ = run(["predict", f, tmp_path / "m", tmp_path / "o"], capsys)
        assert rc == 0
        assert set(read_lines(tmp_path / "o")) == expected
        assert ACCURACY.search(out)


def test_predict_a9a_test_file_with_fewer_columns(tmp_path, capsys):
    """a9a.t's largest index is 122 while a9a has 123 columns: predict pads, and the
    accuracy is the known 84.98% of L2 logistic regression at C = 1."""
    Xtr, ytr = load("a9a")
    Xte, yte = load("a9a.t")
    dump_svmlight(Xtr, ytr, tmp_path / "a9a.xz")
    dump_svmlight(Xte, yte, tmp_path / "a9a.t")
    assert dualsolve.load_svmlight(tmp_path / "a9a.t")[0].shape[1] == 122
    assert run(["train", "-q", tmp_path / "a9a.xz", tmp_path / "a9a.model"], capsys)[0] == 0
    rc, out, err = run(["predict", tmp_path / "a9a.t", tmp_path / "a9a.model",
                        tmp_path / "out"], capsys)
    assert rc == 0 and err == ""
    ref = dualsolve.train_sdca(Xtr, ytr)
    correct = int(np.count_nonzero(ref.predict(Xte) == yte))
    assert out == f"Accuracy = {100 * correct / 16281:.2f}% ({correct}/16281)\n"
    assert 0.849 < correct / 16281 < 0.851


def test_predict_ignores_unseen_features_with_warning(heart_file, tmp_path, capsys):
    path, (X, y) = heart_file
    run(["train", "-q", path, tmp_path / "m"], capsys)
    wider = tmp_path / "wide"
    with open(path) as src, open(wider, "w") as dst:
        for line in src:
            dst.write(line.rstrip("\n") + " 20:5\n")
    rc, out, err = run(["predict", wider, tmp_path / "m", tmp_path / "o"], capsys)
    assert rc == 0
    assert err.startswith("dualsolve: warning:") and "ignored" in err
    model = dualsolve.load_model(tmp_path / "m")
    np.testing.assert_array_equal(np.array(read_lines(tmp_path / "o"), dtype=float),
                                  model.predict(X))


def test_predict_probabilities_for_logistic(heart_file, tmp_path, capsys):
    path, (X, y) = heart_file
    run(["train", "-q", "-s", 0, path, tmp_path / "m"], capsys)
    rc, out, _ = run(["predict", "-b", 1, path, tmp_path / "m", tmp_path / "o"], capsys)
    assert rc == 0 and ACCURACY.search(out)
    lines = read_lines(tmp_path / "o")
    assert lines[0] == "labels 1 -1"
    table = np.array([l.split() for l in lines[1:]], dtype=float)
    model = dualsolve.load_model(tmp_path / "m")
    p = 1.0 / (1.0 + np.exp(-model.decision_function(X)))
    np.testing.assert_allclose(table[:, 1], p, rtol=1e-5)
    np.testing.assert_allclose(table[:, 1] + table[:, 2], 1.0, rtol=1e-5)
    np.testing.assert_array_equal(table[:, 0], model.predict(X))


def read_probabilities(path):
    """A ``predict -b 1`` output file: (header labels, predicted labels, probabilities)."""
    lines = read_lines(path)
    assert lines[0].startswith("labels ")
    rows = [line.split() for line in lines[1:]]
    return (lines[0].split()[1:], [r[0] for r in rows],
            np.array([r[1:] for r in rows], dtype=float))


def liblinear_probabilities(llu, ll_model, X, y):
    """What liblinear's predict -b 1 writes (its Python API, formatted as predict.c)."""
    labels, _, probs = llu.predict(y, X, ll_model, "-b 1 -q")
    return ([str(v) for v in ll_model.get_labels()], [f"{v:g}" for v in labels],
            np.array(probs))


def test_predict_with_a_liblinear_model_file(heart_file, tmp_path, capsys):
    """A model file of liblinear's own train: dualsolve predict gives liblinear's labels,
    accuracy line, and -b 1 output (header, labels, probabilities to print precision)."""
    llu = pytest.importorskip("liblinear.liblinearutil")
    path, (X, y) = heart_file
    ll = llu.train(y, X, "-s 0 -B 1 -q")
    llu.save_model(str(tmp_path / "ll.model"), ll)
    labels, (acc, _, _), _ = llu.predict(y, X, ll, "-q")
    rc, out, err = run(["predict", path, tmp_path / "ll.model", tmp_path / "o"], capsys)
    assert rc == 0 and err == ""
    assert read_lines(tmp_path / "o") == [f"{v:g}" for v in labels]
    correct = int(np.count_nonzero(np.array(labels) == y))
    assert out == f"Accuracy = {100 * correct / 270:.2f}% ({correct}/270)\n"
    assert abs(100 * correct / 270 - acc) < 1e-9
    rc, out, _ = run(["predict", "-b", 1, path, tmp_path / "ll.model", tmp_path / "p"], capsys)
    assert rc == 0
    header, pred, prob = read_probabilities(tmp_path / "p")
    ll_header, ll_pred, ll_prob = liblinear_probabilities(llu, ll, X, y)
    assert header == ll_header == ["1", "-1"] and pred == ll_pred
    np.testing.assert_allclose(prob, ll_prob, rtol=5e-6, atol=1e-300)   # %g: 6 digits


def test_predict_multiclass_probabilities_like_liblinear(heart_file, tmp_path, capsys):
    """A three-class logistic model (one-vs-rest over train_sdca, saved in both formats):
    predict and predict -b 1 as liblinear's predict gives on its liblinear file."""
    llu = pytest.importorskip("liblinear.liblinearutil")
    path, (X, y) = heart_file
    age = X[:, 0].toarray().ravel()
    y3 = np.where(y < 0, 0.0, np.where(age < np.median(age), 1.0, 2.0))
    data = tmp_path / "heart3"
    dump_svmlight(X, y3, data)
    coef, intercept = [], []
    for c in (0.0, 1.0, 2.0):
        m = ds.train_sdca(X, np.where(y3 == c, 1.0, -1.0), fit_intercept=True, tol=1e-8)
        coef.append(m.coef)
        intercept.append(m.intercept)
    model = ds.Model(np.array(coef), np.array(intercept), classes=[0.0, 1.0, 2.0],
                     params=dict(loss="logistic"), solver="sdca")
    model.save(tmp_path / "m.npz")
    model.save(tmp_path / "m.txt", format="liblinear")
    ll = llu.load_model(str(tmp_path / "m.txt"))
    ll_header, ll_pred, ll_prob = liblinear_probabilities(llu, ll, X, y3)
    for model_file in ("m.npz", "m.txt"):
        rc, out, _ = run(["predict", data, tmp_path / model_file, tmp_path / "o"], capsys)
        assert rc == 0 and ACCURACY.search(out)
        assert read_lines(tmp_path / "o") == ll_pred
        rc, _, _ = run(["predict", "-b", 1, data, tmp_path / model_file, tmp_path / "p"],
                       capsys)
        assert rc == 0
        header, pred, prob = read_probabilities(tmp_path / "p")
        assert header == ll_header == ["0", "1", "2"] and pred == ll_pred
        np.testing.assert_allclose(prob, ll_prob, rtol=5e-6)
        np.testing.assert_allclose(prob.sum(axis=1), 1.0, rtol=1e-5)


def test_predict_rejects_a_damaged_liblinear_file(heart_file, tmp_path, capsys):
    path, _ = heart_file
    bad = tmp_path / "bad.model"
    bad.write_text("solver_type L2R_LR\nnr_class 2\nlabel 1 -1\nnr_feature 1000000000000\n"
                   "bias -1\nw\n1\n")
    assert_usage_error(*run(["predict", path, bad, tmp_path / "o"], capsys),
                       "not a readable dualsolve model file", "field 'nr_feature'")


def test_regression_round_trip(tmp_path, capsys):
    X, y = load("kin8nm")
    train, test = tmp_path / "kin.tr", tmp_path / "kin.te"
    dump_svmlight(X[:6000], y[:6000], train)
    dump_svmlight(X[6000:], y[6000:], test)
    rc, _, _ = run(["train", "-q", "-l", "squared", "-B", 1, "-c", 10, train,
                    tmp_path / "m"], capsys)
    assert rc == 0
    model = dualsolve.load_model(tmp_path / "m")
    assert model.classes is None and model.params["loss"] == "squared"
    rc, out, _ = run(["predict", test, tmp_path / "m", tmp_path / "o"], capsys)
    assert rc == 0
    pred = np.array(read_lines(tmp_path / "o"), dtype=float)
    Xte, yte = dualsolve.load_svmlight(test)
    np.testing.assert_array_equal(pred, model.predict(Xte))  # repr round-trips exactly
    mse = np.mean((pred - yte) ** 2)
    r2 = np.corrcoef(pred, yte)[0, 1] ** 2
    m = re.fullmatch(r"Mean squared error = (\S+) \(regression\)\n"
                     r"Squared correlation coefficient = (\S+) \(regression\)\n", out)
    assert m, out
    assert float(m.group(1)) == pytest.approx(mse, rel=1e-5)
    assert float(m.group(2)) == pytest.approx(r2, rel=1e-5)
    assert 0.02 < mse < 0.06 and 0.3 < r2 < 0.5             # a linear fit of kin8nm
    assert cli.squared_correlation([1, 2, 3], [2, 4, 7]) == pytest.approx(
        np.corrcoef([1, 2, 3], [2, 4, 7])[0, 1] ** 2, rel=1e-14)


def _liblinear_weights(y, X, options, classification=True):
    liblinear = pytest.importorskip("liblinear.liblinearutil")
    m = liblinear.train(y, X, options + " -q")
    w, b = m.get_decfun()
    w = np.array(w)
    if classification and m.get_labels()[0] != 1:
        w, b = -w, -b                                        # liblinear's first label is +
    return w, b


@pytest.mark.parametrize("number", ["0", "2"])
def test_liblinear_numbers_solve_liblinear_problem(heart_file, tmp_path, capsys, number):
    """-s 0 / -s 2 with -c and -B: liblinear's own optimum (its primal Newton solvers, run
    to a tight tolerance), so the help's claim of the same objective holds."""
    path, (X, y) = heart_file
    w, b = _liblinear_weights(y, X, f"-s {number} -c 0.1 -B 1 -e 1e-10")
    rc, _, _ = run(["train", "-q", "-s", number, "-c", 0.1, "-B", 1, "-e", 1e-12,
                    "-m", 100000, path, tmp_path / "m"], capsys)
    assert rc == 0
    model = dualsolve.load_model(tmp_path / "m")
    assert model.converged
    np.testing.assert_allclose(model.coef, w, atol=1e-6)
    assert model.intercept == pytest.approx(b, abs=1e-6)


def test_liblinear_svr_with_p0_is_squared_loss_with_2c(tmp_path, capsys):
    """liblinear -s 11 -p 0 -c C is ours -s 11 -p 0 -c C, and -l squared -c 2C."""
    X, y = load("kin8nm")
    X, y = X[:1000], y[:1000]
    f = tmp_path / "kin"
    dump_svmlight(X, y, f)
    w, _ = _liblinear_weights(y, X, "-s 11 -p 0 -c 0.002 -e 1e-10",
                              classification=False)
    rc, _, _ = run(["train", "-q", "-s", 11, "-p", 0, "-c", 0.002, "-e", 1e-13, f,
                    tmp_path / "m"], capsys)
    assert rc == 0
    np.testing.assert_allclose(dualsolve.load_model(tmp_path / "m").coef, w, atol=1e-6)
    rc, _, _ = run(["train", "-q", "-l", "squared", "-c", 0.004, "-e", 1e-13, f,
                    tmp_path / "m"], capsys)
    assert rc == 0
    coef = dualsolve.load_model(tmp_path / "m").coef
    # the gap certificate bounds ||w - w*||^2 <= 2 gap / lam: about 1e-7 here
    np.testing.assert_allclose(coef, w, atol=1e-6)
    # and the factor 2 matters: -c C (not 2C) is another problem
    run(["train", "-q", "-l", "squared", "-c", 0.002, "-e", 1e-13, f, tmp_path / "m1"], capsys)
    assert np.abs(dualsolve.load_model(tmp_path / "m1").coef - w).max() > 0.05 * np.abs(w).max()


# ------------------------------------------------------------------ errors

def assert_usage_error(rc, out, err, *fragments):
    assert rc == 2
    assert out == ""
    assert err.startswith("dualsolve: error: ") and err.endswith("\n")
    assert err.count("\n") == 1, err                       # one line, no traceback
    for f in fragments:
        assert f in err, err


def test_error_missing_and_malformed_files(heart_file, tmp_path, capsys):
    path, _ = heart_file
    assert_usage_error(*run(["train", tmp_path / "nope", tmp_path / "m"], capsys),
                       "cannot open data file", "no such file")
    bad = tmp_path / "bad"
    bad.write_text("1 1:0.5\n-1 2:abc\n")
    assert_usage_error(*run(["train", bad, tmp_path / "m"], capsys),
                       "not valid LIBSVM data", "line 2")
    broken_xz = tmp_path / "broken.xz"
    broken_xz.write_bytes(b"not xz at all")
    assert_usage_error(*run(["train", broken_xz, tmp_path / "m"], capsys), "broken.xz")
    empty = tmp_path / "empty"
    empty.write_text("")
    assert_usage_error(*run(["train", empty, tmp_path / "m"], capsys), "no instances")
    single = tmp_path / "single"
    single.write_text("1 1:1\n1 1:2\n1 1:3\n")
    assert_usage_error(*run(["train", single, tmp_path / "m"], capsys),
                       "1 distinct label value")
    nan = tmp_path / "nan"
    nan.write_text("1 1:1\n-1 1:nan\n")
    assert_usage_error(*run(["train", nan, tmp_path / "m"], capsys), "NaN", "instance 2")
    assert_usage_error(*run(["train", path, tmp_path / "no" / "dir" / "m"], capsys),
                       "cannot write model file")
    assert not (tmp_path / "m").exists()

    run(["train", "-q", path, tmp_path / "good"], capsys)
    assert_usage_error(*run(["predict", path, tmp_path / "nope", tmp_path / "o"], capsys),
                       "cannot open model file")
    assert_usage_error(*run(["predict", path, bad, tmp_path / "o"], capsys),
                       "is not a dualsolve model file")
    assert_usage_error(*run(["predict", tmp_path / "nope", tmp_path / "good", tmp_path / "o"],
                            capsys), "cannot open data file")
    assert_usage_error(*run(["predict", path, tmp_path / "good", tmp_path / "no" / "o"],
                            capsys), "cannot write output file")


def test_probability_needs_logistic(heart_file, tmp_path, capsys):
    path, _ = heart_file
    run(["train", "-q", "-s", 3, "-m", 20, path, tmp_path / "m"], capsys)
    assert_usage_error(*run(["predict", "-b", 1, path, tmp_path / "m", tmp_path / "o"],
                            capsys), "need a logistic model", "'hinge'")


@pytest.mark.parametrize("flags, fragment", [
    (["-c", "-1"], "argument -c: must be > 0"),
    (["-c", "0"], "argument -c: must be > 0"),
    (["-c", "abc"], "argument -c: expected a number"),
    (["-c", "inf"], "argument -c: must be finite"),
    (["--lam", "-0.1"], "argument --lam: must be > 0"),
    (["-c", "1", "--lam", "0.1"], "not allowed with argument -c"),
    (["-e", "-1"], "argument -e: must be >= 0"),
    (["-m", "2.5"], "argument -m: expected an integer"),
    (["--seed", "-3"], "argument --seed: must be >= 0"),
    (["-B", "x"], "argument -B: expected a number"),
    (["-l", "cubic"], "argument -l: invalid choice: 'cubic'"),
    (["-s", "foo"], "unknown solver 'foo'"),
    (["-s", "9"], "liblinear has no solver 9"),
    (["-s", "5"], "L1-regularised"),
    (["-s", "6"], "L1-regularised"),
    (["-s", "3", "-l", "logistic"], "contradicts -s"),
    (["--verbose", "-q"], "not allowed with argument --verbose"),
    (["-v", "1"], "n >= 2"),
    (["-v", "3", "-C"], "not allowed with argument -v"),
    (["-w1", "x"], "-w1 x: expected -w<label> <weight >= 0>"),
    (["-w1", "-2"], "-w1 -2: expected"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_error_bad_options(heart_file, tmp_path, capsys, flags, fragment):
    path, _ = heart_file
    assert_usage_error(*run(["train", *flags, path, tmp_path / "m"], capsys), fragment)
    assert not (tmp_path / "m").exists()


def test_error_commands(capsys):
    assert_usage_error(*run([], capsys), "missing command")
    assert_usage_error(*run(["fit"], capsys), "invalid choice: 'fit'")
    assert_usage_error(*run(["train"], capsys), "required: data_file")
    assert_usage_error(*run(["predict", "a"], capsys), "required: model_file, output_file")
    assert_usage_error(*run(["predict", "-b", "2", "a", "b", "c"], capsys), "argument -b")


def test_help_documents_every_flag(capsys):
    rc, out, _ = run(["train", "-h"], capsys)
    assert rc == 0
    for flag in ("-s solver", "-l loss", "-c C", "--lam L", "-e tol", "-B bias",
                 "-m max_epochs", "-n threads", "--seed S", "--no-shrinking", "-v n", "-C",
                 "--verbose", "-w i weight", "-p epsilon", "-q", "data_file",
                 "model_file"):
        assert flag in out
    assert "lam = 1/(C n)" in out
    assert "P(w) = (1/n) sum_i loss(y_i, x_i.w) + (lam/2) ||w||^2" in out
    assert "default: 1e-06" in out and "default: 5000" in out   # train_sdca's defaults
    rc, out, _ = run(["predict", "-h"], capsys)
    assert rc == 0 and "-b {0,1}" in out and "output_file" in out and "-q" in out
    rc, out, _ = run(["demo", "-h"], capsys)
    assert rc == 0 and "--quick" in out and "standardised" in out
    rc, out, _ = run(["--version"], capsys)
    assert rc == 0 and out.strip() == f"dualsolve {dualsolve.__version__}"


# ------------------------------------------------------------------ demo

def test_demo_quick(capsys):
    rc, out, err = run(["demo", "--quick"], capsys)
    assert rc == 0 and err == ""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^(\S+) .*\bsdca\s+(\w+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+"
                     r"(accuracy (\S+)%|R\^2 (\S+))$", line)
        if m:
            rows[m.group(1)] = m
    assert set(rows) == {"a9a", "heart_scale", "kin8nm"}
    a9a = rows["a9a"]
    assert a9a.group(2) == "logistic"
    assert float(a9a.group(6)) == pytest.approx(0.32338, abs=1e-5)   # P* at C = 1
    assert float(a9a.group(7)) <= 1e-6 * np.log(2)
    assert 84.8 < float(a9a.group(9)) < 85.1
    assert 0.75 < float(rows["heart_scale"].group(9)) / 100 < 0.95
    assert 0.35 < float(rows["kin8nm"].group(10)) < 0.5


def test_demo_helpers():
    tr, te = cli.split_70_30(10, seed=0)
    assert len(tr) == 7 and len(te) == 3
    assert sorted(np.r_[tr, te].tolist()) == list(range(10))
    A = np.array([[1.0, 5.0, 2.0], [3.0, 5.0, 4.0]])
    B = np.array([[2.0, 6.0, 0.0]])
    As, Bs = cli.standardise(A, B)
    np.testing.assert_allclose(As, [[-1, 0, -1], [1, 0, 1]])
    np.testing.assert_allclose(Bs, [[0, 1, -3]])             # constant column: scale 1
    assert cli.r2_score(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 4.0])) == 0.5


# ------------------------------------------------------------------ entry point

def test_python_m_dualsolve_help(tmp_path):
    # the package under test, whether installed or built in place; run from a neutral
    # directory so that `-m` does not pick up a source checkout in the working directory
    env = subprocess_env()
    r = subprocess.run([sys.executable, "-m", "dualsolve", "--help"], capture_output=True,
                       text=True, env=env, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: dualsolve ")
    for command in ("train", "predict", "demo"):
        assert command in r.stdout
    r = subprocess.run([sys.executable, "-m", "dualsolve", "train", "-c", "-1", "x"],
                       capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr == "dualsolve: error: argument -c: must be > 0, got '-1' " \
                       "(see 'dualsolve train -h')\n"


# ------------------------------------------------------------------ every solver, by name

@pytest.fixture(scope="module")
def kin8nm_file(tmp_path_factory):
    X, y = ds.datasets.load("kin8nm")
    path = tmp_path_factory.mktemp("cli") / "kin8nm.svm"
    ds.dump_svmlight(X[:400], y[:400], str(path))
    return path


def test_solvers_lists_every_solver_with_losses(capsys):
    from dualsolve._driver import solvers
    rc, out, err = run(["solvers"], capsys)
    assert rc == 0 and err == ""
    for name, s in solvers().items():
        assert f"{name}  " in out or out.startswith(name)
        assert f"losses: {', '.join(s.losses)}" in out
        assert f"converged: {s.certificate}" in out
    rc, out, _ = run(["solvers", "sdca"], capsys)
    assert rc == 0 and "shrinking = True: a bool" in out and "check_every = 'auto'" in out
    assert_usage_error(*run(["solvers", "nosuch"], capsys), "unknown solver 'nosuch'")


def _every_solver():
    from dualsolve._driver import solvers
    return sorted(solvers())


@pytest.mark.parametrize("name", _every_solver())
def test_train_and_predict_with_every_solver(name, heart_file, kin8nm_file, tmp_path, capsys):
    """dualsolve train -s NAME trains what train_NAME trains (same options, same seed)."""
    from dualsolve._driver import solvers
    s = solvers()[name]
    loss = "logistic" if "logistic" in s.losses else s.losses[0]
    regression = s.task(loss, {}) == "regression"
    data = kin8nm_file if regression else heart_file[0]
    model = tmp_path / "m.model"
    rc, out, err = run(["train", "-s", name, "-l", loss, "-m", "3", "-q", data, model], capsys)
    assert rc == 0, err
    m = ds.load_model(model)
    assert m.solver == name and m.n_epochs <= 3
    X, y = ds.load_svmlight(str(data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = getattr(ds, s.function_name)(X, y, loss=loss, max_epochs=3)
    np.testing.assert_array_equal(m.coef, direct.coef)
    rc, out, err = run(["predict", data, model, tmp_path / "p.txt"], capsys)
    assert rc == 0, err
    assert len(read_lines(tmp_path / "p.txt")) == X.shape[0]


def test_options_by_name_reach_the_solver(heart_file, tmp_path, capsys):
    path, (X, y) = heart_file
    model = tmp_path / "m.model"
    rc, _, err = run(["train", "-s", "sdca", "-o", "check_every=2", "-o", "sampling=uniform",
                      "-q", path, model], capsys)
    assert rc == 0, err
    m = ds.load_model(model)
    assert m.params["check_every"] == 2 and m.params["sampling"] == "uniform"
    assert_usage_error(*run(["train", "-o", "nosuch=1", path, model], capsys),
                       "solver 'sdca' has no option 'nosuch' (-o)")
    assert_usage_error(*run(["train", "-o", "check_every=0", path, model], capsys),
                       "check_every must be 'auto' or an integer in [1, inf)")
    assert_usage_error(*run(["train", "-o", "check_every", path, model], capsys),
                       "expected NAME=VALUE")


def test_cross_validation_flag(heart_file, tmp_path, capsys):
    """-v n prints liblinear's line, with the accuracy of dualsolve.cross_validate."""
    path, (X, y) = heart_file
    rc, out, _ = run(["train", "-v", 5, "-c", 2, path], capsys)
    assert rc == 0
    acc = dualsolve.cross_validate(dualsolve.train_sdca, X, y, n_folds=5, C=2.0,
                                   loss="logistic")
    assert out.strip() == f"Cross Validation Accuracy = {100 * np.mean(acc):g}%"


def test_find_C_flag(heart_file, capsys):
    path, (X, y) = heart_file
    rc, out, _ = run(["train", "-C", "-s", "2", "-q", path], capsys)
    assert (rc, out) == (0, "")
    rc, out, _ = run(["train", "-C", "-s", "2", path], capsys)
    lines = out.strip().splitlines()
    assert lines[0].startswith("log2c=") and lines[-1].startswith("Best C = ")
    assert float(lines[-2].split("\t")[0].split()[1]) == 10.0      # up to C = 1024
    best = float(lines[-1].split()[3])
    rates = [float(l.split("= ")[-1]) for l in lines[:-1]]
    assert float(lines[-1].split("= ")[-1].rstrip("%")) == max(rates)
    log2c = [float(l.split()[1]) for l in lines[:-1]]
    assert 2.0 ** log2c[int(np.argmax(rates))] == pytest.approx(best, rel=1e-3)


def test_class_weight_flags(heart_file, tmp_path, capsys):
    path, (X, y) = heart_file
    rc, _, _ = run(["train", "-w1", "3", "-w-1", "0.5", "-q", path, tmp_path / "m"], capsys)
    assert rc == 0
    m = dualsolve.load_model(tmp_path / "m")
    ref = dualsolve.train_sdca(X, y, class_weight={1.0: 3.0, -1.0: 0.5})
    np.testing.assert_array_equal(m.coef, ref.coef)


def test_multi_class_data_trains(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 3))
    y = np.repeat([1, 2, 3], 30)
    X[np.arange(90), y - 1] += 3
    data = tmp_path / "three"
    dualsolve.dump_svmlight(X, y, data)
    rc, _, _ = run(["train", "-q", data, tmp_path / "m"], capsys)
    assert rc == 0
    m = dualsolve.load_model(tmp_path / "m")
    assert m.coef.shape == (3, 3) and np.mean(m.predict(X) == y) > 0.9


def test_liblinear_s4_is_crammer_singer(tmp_path, capsys):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 4))
    y = np.repeat([1, 2, 3], 40)
    X[np.arange(120), y - 1] += 2
    data = tmp_path / "three"
    dualsolve.dump_svmlight(X, y, data)
    rc, _, _ = run(["train", "-q", "-s", 4, "-e", 1e-8, data, tmp_path / "m"], capsys)
    assert rc == 0
    m = dualsolve.load_model(tmp_path / "m")
    ref = dualsolve.train_sdca(X, y, loss="hinge", multi_class="crammer_singer", tol=1e-8)
    assert m.params["multi_class"] == "crammer_singer"
    np.testing.assert_array_equal(m.coef, ref.coef)


@pytest.mark.parametrize("solver", ["dfsdca", "svrg"])
def test_class_weight_flags_reach_other_solvers(heart_file, tmp_path, capsys, solver):
    path, (X, y) = heart_file
    rc, _, _ = run(["train", "-s", solver, "-l", "logistic", "-w1", "2", "-q", path,
                    tmp_path / "m"], capsys)
    assert rc == 0
    m = dualsolve.load_model(tmp_path / "m")
    ref = getattr(dualsolve, "train_" + solver)(X, y, loss="logistic", class_weight={1.0: 2.0})
    np.testing.assert_array_equal(m.coef, ref.coef)
