"""load_model on untrusted files: every model the package writes loads back identically, and
every damaged or forged file gives one ValueError, on one line, naming the file and the
field (never a zipfile/JSON/NumPy error, a large allocation or a crash)."""
import io
import json
import subprocess
import sys
import textwrap
import warnings
import zipfile

import numpy as np
import pytest

import dualsolve as ds
from dualsolve.model import _jsonable

SPECTRAL = ("train_sorel", "train_lsvrg", "train_prospect", "train_spectral_sgd")
# small budgets: the point is the file, not the fit
BUDGET = dict(
    train_sdca=dict(fit_intercept=True, max_epochs=5), train_newton=dict(max_epochs=3),
    train_linear=dict(C=1e4, fit_intercept=True, max_epochs=3), train_mixup_sdca=dict(n_mix=20, max_epochs=5),
    train_kernel_sgd=dict(n_mix=10, max_epochs=2), train_bpd=dict(max_epochs=5),
    train_ada_bpd=dict(max_epochs=5), train_df_bpd=dict(max_epochs=5),
    train_spdc=dict(max_epochs=2), train_ada_spdc=dict(max_epochs=2),
    train_df_spdc=dict(max_epochs=2), train_adf_spdc=dict(max_epochs=2),
    train_svrg=dict(max_epochs=2), train_katyusha=dict(max_epochs=2),
    train_dfsdca=dict(max_epochs=2), train_adfsdca=dict(max_epochs=2),
    train_ppd_sg=dict(max_epochs=2), train_ppd_adagrad=dict(max_epochs=2),
    train_solam=dict(max_epochs=2), train_pga=dict(max_epochs=2),
    train_sorel=dict(max_epochs=2), train_lsvrg=dict(max_epochs=2),
    train_prospect=dict(max_epochs=2), train_spectral_sgd=dict(max_epochs=2))
# variants whose files differ in kind: kernel models (with and without mixup rows) and
# string labels
VARIANTS = dict(
    mixup_rbf=("train_mixup_sdca", dict(kernel="rbf", n_mix=30, max_epochs=3)),
    mixup_poly=("train_mixup_sdca", dict(kernel="poly", max_epochs=3)),
    mixup_precomputed=("train_mixup_sdca", dict(kernel="precomputed", max_epochs=3)),
    kernel_sgd_plain=("train_kernel_sgd", dict(max_epochs=2)),
    sdca_strings=("train_sdca", dict(max_epochs=3, strings=True)),
    auc_surrogate_optimum=("auc_surrogate_optimum", {}))


@pytest.fixture(scope="module")
def heart():
    return ds.datasets.load("heart_scale")


def train(name, heart, strings=False, **kw):
    X, y = heart
    if name == "train_mixup_sdca" and kw.get("kernel") == "precomputed":
        X = (X @ X.T).toarray()
    if strings:
        y = np.where(y > 0, "presence", "absence")
    if name in SPECTRAL:                        # regression targets, an explicit spectrum
        y = y * 2.0 + X[:, 0].toarray().ravel()
        kw["spectrum"] = ds.spectrum("superquantile", X.shape[0], 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # not converged on these budgets
        return getattr(ds, name)(X, y, **kw)


def test_every_solver_is_covered():
    assert set(BUDGET) == {n for n in ds.__all__ if n.startswith("train_")}
    assert len(BUDGET) == 24


@pytest.mark.parametrize("case", sorted(BUDGET) + sorted(VARIANTS))
def test_round_trip_is_identical(case, heart, tmp_path):
    name, kw = VARIANTS.get(case, (case, BUDGET.get(case)))
    m = train(name, heart, **kw)
    path = tmp_path / f"{case}.model"
    m.save(path)
    m2 = ds.load_model(path)
    assert type(m2) is type(m)
    for attr in ("coef", "dual", "classes"):
        a, b = getattr(m, attr), getattr(m2, attr)
        assert (a is None) == (b is None), attr
        if a is not None:
            assert a.dtype == b.dtype and a.shape == b.shape, attr
            assert a.tobytes() == b.tobytes(), attr          # bit for bit, NaN included
    assert m2.history.dtype == m.history.dtype
    assert m2.history.tobytes() == m.history.tobytes()
    assert (m2.intercept, m2.converged, m2.n_epochs, m2.solver, m2.n_features) == \
        (m.intercept, m.converged, m.n_epochs, m.solver, m.n_features)
    assert json.dumps(m2.params, sort_keys=True) == json.dumps(_jsonable(m.params), sort_keys=True)
    assert sorted(m2.extra) == sorted(m.extra)
    for k, v in m.extra.items():
        v = np.asarray(v)
        assert m2.extra[k].dtype == v.dtype and m2.extra[k].tobytes() == v.tobytes(), k
    X = heart[0]
    if m.params.get("kernel") == "precomputed":
        X = (X @ X.T).toarray()
    np.testing.assert_array_equal(m2.predict(X), m.predict(X))


# ---------------------------------------------------------------------------------------
# damaged files


@pytest.fixture(scope="module")
def linear(heart):
    return train("train_sdca", heart, max_epochs=3)


@pytest.fixture(scope="module")
def kernel(heart):
    return train("train_mixup_sdca", heart, kernel="rbf", n_mix=40, max_epochs=2)


def entries(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def write(path, arrays):
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    return path


def forged(model, tmp_path, change):
    """The model's file with ``change(arrays, meta)`` applied (it edits both in place)."""
    path = tmp_path / "model.npz"
    model.save(path)
    arrays = entries(path)
    meta = json.loads(str(arrays["meta"]))
    change(arrays, meta)
    if "meta" in arrays:                            # (unless the change removed it)
        arrays["meta"] = np.array(json.dumps(meta))
    return write(path, arrays)


def assert_refused(path, field=None, fragment=None):
    with pytest.raises(ValueError) as info:
        ds.load_model(path)
    msg = str(info.value)
    assert type(info.value) is ValueError, type(info.value)  # not JSONDecodeError etc.
    assert str(path) in msg and len(msg.splitlines()) == 1, msg
    if field is not None:
        assert f"field '{field}'" in msg, msg
    if fragment is not None:
        assert fragment in msg, msg
    return msg


def setitem(key, value):
    def change(arrays, meta):
        arrays[key] = value
    return change


def delete(key):
    def change(arrays, meta):
        del arrays[key]
    return change


def set_meta(key, value):
    def change(arrays, meta):
        if value is delete:
            del meta[key]
        else:
            meta[key] = value
    return change


def drop_extra(*keys):
    def change(arrays, meta):
        for k in keys:
            del arrays["extra__" + k]
            meta["extra"].remove(k)
    return change


def edit(key, fn):
    def change(arrays, meta):
        a = arrays[key].copy()
        fn(a)
        arrays[key] = a
    return change


LINEAR_CASES = {
    "meta missing": (delete("meta"), "meta"),
    "format": (set_meta("format", "dualsolve-model-0"), "meta.format"),
    "meta key missing": (set_meta("solver", delete), "meta"),
    "meta unknown key": (set_meta("colour", "red"), "meta"),
    "model kind": (set_meta("model", "Pickle"), "meta.model"),
    "solver": (set_meta("solver", 3), "meta.solver"),
    "stop_reason": (set_meta("stop_reason", "finished"), "meta.stop_reason"),
    "n_epochs negative": (set_meta("n_epochs", -1), "meta.n_epochs"),
    "n_epochs float": (set_meta("n_epochs", 2.5), "meta.n_epochs"),
    "params": (set_meta("params", [1]), "meta.params"),
    "extra not strings": (set_meta("extra", [1]), "meta.extra"),
    "extra listed, absent": (set_meta("extra", ["sigma"]), "extra__sigma"),
    "n_features": (set_meta("n_features", 12), "coef"),
    "coef missing": (delete("coef"), "coef"),
    "coef int": (setitem("coef", np.arange(13)), "coef"),
    "coef 2-D": (setitem("coef", np.zeros((13, 1))), "coef"),
    "coef NaN": (edit("coef", lambda a: a.__setitem__(3, np.nan)), "coef"),
    "coef inf": (edit("coef", lambda a: a.__setitem__(0, np.inf)), "coef"),
    "coef object": (None, "coef"),                   # written below (needs pickle)
    "intercept 1-D": (setitem("intercept", np.zeros(2)), "intercept"),
    "intercept NaN": (setitem("intercept", np.array(np.nan)), "intercept"),
    "intercept missing": (delete("intercept"), "intercept"),
    "dual 5 entries": (setitem("dual", np.zeros(5)), "dual"),
    "lam C underflow": (lambda a, m: m["params"].update(lam=1e-300, C=1e-300), "dual"),
    "dual NaN": (edit("dual", lambda a: a.__setitem__(0, np.nan)), "dual"),
    "dual str": (setitem("dual", np.array(["a"] * 270)), "dual"),
    "3 classes": (setitem("classes", np.array([-1.0, 0.0, 1.0])), "classes"),
    "1 class": (setitem("classes", np.array([1.0])), "classes"),
    "classes equal": (setitem("classes", np.array([1.0, 1.0])), "classes"),
    "classes NaN": (setitem("classes", np.array([np.nan, 1.0])), "classes"),
    "classes complex": (setitem("classes", np.array([1j, 2j])), "classes"),
    "history missing": (delete("history"), "history"),
    "history plain": (setitem("history", np.zeros(3)), "history"),
    "history field dtype": (setitem("history", np.zeros(2, [("epoch", "f8"), ("time", "f8"),
                            ("primal", "f8"), ("dual", "f8"), ("gap", "f8")])), "history"),
    "history short": (setitem("history", np.zeros(2, [("epoch", "i8"), ("time", "f8")])),
                      "history"),
    "history 2-D": (lambda a, m: a.__setitem__("history", np.stack([a["history"]] * 2)),
                    "history"),
    "unknown entry": (setitem("payload", np.zeros(3)), "payload"),
    "unlisted extra": (setitem("extra__sigma", np.zeros(3)), "extra__sigma"),
    "meta 1-D": (lambda a, m: None, "meta"),         # written below
}


@pytest.mark.parametrize("case", sorted(LINEAR_CASES))
def test_damaged_linear_model(case, linear, tmp_path):
    change, field = LINEAR_CASES[case]
    if case == "coef object":
        path = tmp_path / "model.npz"
        linear.save(path)
        arrays = entries(path)
        arrays["coef"] = np.array([1, "x"], dtype=object)
        np.savez(path, **arrays)                    # pickled: never unpickled on load
    elif case == "meta 1-D":
        path = tmp_path / "model.npz"
        linear.save(path)
        arrays = entries(path)
        arrays["meta"] = np.array([str(arrays["meta"])])
        write(path, arrays)
    else:
        path = forged(linear, tmp_path, change)
    assert_refused(path, field)


KERNEL_CASES = {
    "indptr not monotone": (edit("extra__X_indptr", lambda a: a.__setitem__(5, a[4] - 1)),
                            "extra__X_indptr", "not monotone"),
    "indptr past nnz": (edit("extra__X_indptr", lambda a: a.__setitem__(5, 10 ** 7)),
                        "extra__X_indptr", None),
    "indptr end past nnz": (edit("extra__X_indptr", lambda a: a.__setitem__(-1, a[-1] + 1)),
                            "extra__X_indptr", "ends at"),
    "indptr start": (edit("extra__X_indptr", lambda a: a.__setitem__(0, 1)),
                     "extra__X_indptr", "starts at 1"),
    "indptr length": (lambda a, m: a.__setitem__("extra__X_indptr", a["extra__X_indptr"][:-1]),
                      "extra__X_indptr", None),
    "indptr float": (lambda a, m: a.__setitem__("extra__X_indptr",
                                                a["extra__X_indptr"].astype(float)),
                     "extra__X_indptr", None),
    "index negative": (edit("extra__X_indices", lambda a: a.__setitem__(7, -1)),
                       "extra__X_indices", None),
    "index past n_features": (edit("extra__X_indices", lambda a: a.__setitem__(7, 13)),
                              "extra__X_indices", None),
    "index repeated in a row": (edit("extra__X_indices", lambda a: a.__setitem__(1, a[0])),
                                "extra__X_indices", None),
    "indices short": (lambda a, m: a.__setitem__("extra__X_indices", a["extra__X_indices"][1:]),
                      "extra__X_indices", None),
    "data NaN": (edit("extra__X_data", lambda a: a.__setitem__(0, np.nan)), "extra__X_data", None),
    "X_shape 3 numbers": (setitem("extra__X_shape", np.array([270, 13, 1])), "extra__X_shape",
                          None),
    "X_shape rows": (setitem("extra__X_shape", np.array([271, 13])), "extra__X_indptr", None),
    "X_shape columns": (setitem("extra__X_shape", np.array([270, 12])), "extra__X_indices", None),
    "X missing": (drop_extra("X_data", "X_indices", "X_indptr", "X_shape"), "extra__X_data",
                  None),
    "X partly missing": (drop_extra("X_indices"), "extra__X_indices", None),
    "plan partly missing": (drop_extra("plan_r"), "extra__plan_r", None),
    "plan_a out of range": (edit("extra__plan_a", lambda a: a.__setitem__(3, 270)),
                            "extra__plan_a", None),
    "plan_b negative": (edit("extra__plan_b", lambda a: a.__setitem__(3, -5)),
                        "extra__plan_b", None),
    "plan_r above 1": (edit("extra__plan_r", lambda a: a.__setitem__(0, 1.5)),
                       "extra__plan_r", None),
    "plan_r NaN": (edit("extra__plan_r", lambda a: a.__setitem__(0, np.nan)),
                   "extra__plan_r", None),
    "plan lengths": (lambda a, m: a.__setitem__("extra__plan_a", a["extra__plan_a"][:-1]),
                     "extra__plan_b", "lengths"),
    "plan_n_orig": (setitem("extra__plan_n_orig", np.array(269)), "extra__plan_n_orig", None),
    "lam_n zero": (setitem("extra__lam_n", np.array(0.0)), "extra__lam_n", None),
    "lam_n inf": (setitem("extra__lam_n", np.array(np.inf)), "extra__lam_n", None),
    "dual short": (lambda a, m: a.__setitem__("dual", a["dual"][:5]), "dual", None),
    "dual missing": (delete("dual"), "dual", None),
    "n_augmented": (lambda a, m: m["params"].__setitem__("n_augmented", 5),
                    "meta.params.n_augmented", None),
    "kernel name": (lambda a, m: m["params"].__setitem__("kernel", "sigmoid"),
                    "meta.params.kernel", None),
    "kernel_gamma": (lambda a, m: m["params"].__setitem__("kernel_gamma", -1.0),
                     "meta.params.kernel_gamma", None),
    "degree": (lambda a, m: m["params"].__setitem__("degree", "3"), "meta.params.degree", None),
    "coef0 missing (rbf)": (lambda a, m: m["params"].pop("coef0"), "meta.params.coef0", None),
    "coef0 beyond int64": (lambda a, m: m["params"].__setitem__("coef0", 2 ** 70),
                           "meta.params.coef0", None),
    "gamma beyond float64": (lambda a, m: m["params"].__setitem__("kernel_gamma", 10 ** 400),
                             "meta.params.kernel_gamma", None),
    "n_features": (set_meta("n_features", 14), "meta.n_features", None),
    "coef not empty": (setitem("coef", np.zeros(13)), "coef", None),
    "unknown extra": (lambda a, m: a.__setitem__("extra__gram", np.zeros(3))
                      or m["extra"].append("gram"), "extra__gram", None),
}


@pytest.mark.parametrize("case", sorted(KERNEL_CASES))
def test_damaged_kernel_model(case, kernel, tmp_path):
    change, field, fragment = KERNEL_CASES[case]
    assert_refused(forged(kernel, tmp_path, change), field, fragment)


def test_dual_length_of_other_linear_models(heart, tmp_path):
    """Where a linear model records its training size, the dual must match it."""
    for name, kw in (("train_mixup_sdca", dict(n_mix=10, max_epochs=2)),   # n_augmented
                     ("train_df_spdc", dict(max_epochs=2)),                 # margins
                     ("train_sorel", dict(max_epochs=2))):                  # sigma
        m = train(name, heart, **kw)
        assert_refused(forged(m, tmp_path, lambda a, meta: a.__setitem__("dual", a["dual"][:-1])),
                       "dual")


def test_diverged_model_keeps_its_non_finite_iterate(heart, tmp_path):
    m = train("train_svrg", heart, step=1e4, max_epochs=3)
    assert m.stop_reason == "diverged" and not np.isfinite(m.coef).all()
    m.save(tmp_path / "d.model")
    m2 = ds.load_model(tmp_path / "d.model")
    assert m2.coef.tobytes() == m.coef.tobytes()
    m = train("train_svrg", heart, max_epochs=2)                        # the same, not diverged
    assert_refused(forged(m, tmp_path, edit("coef", lambda a: a.__setitem__(0, np.nan))), "coef")


# ---------------------------------------------------------------------------------------
# the archive and .npy levels


def test_not_a_model_file(linear, tmp_path):
    path = tmp_path / "model.npz"
    linear.save(path)
    raw = path.read_bytes()
    cases = {"empty": b"", "text": b"solver_type L2R_LR\n", "zip magic only": b"PK\x03\x04",
             "half": raw[: len(raw) // 2], "last byte cut": raw[:-1], "head cut": raw[100:],
             "garbage": bytes(range(256)) * 8}
    for name, data in cases.items():
        path.write_bytes(data)
        assert_refused(path, fragment=None)


def test_bad_json_and_bad_unicode(linear, tmp_path):
    path = forged(linear, tmp_path, lambda a, m: None)
    arrays = entries(path)
    for meta, fragment in (("{not json", "valid JSON"), ("[1, 2]", "JSON object"),
                           ("[" * 100000, "valid JSON"), ('{"format": NaN}', "meta.format")):
        arrays["meta"] = np.array(meta)
        assert_refused(write(path, arrays), "meta" if "format" not in fragment else None,
                       fragment)
    arrays["meta"] = np.array(5)
    assert_refused(write(path, arrays), "meta")


def npy_bytes(header, data=b""):
    """A .npy member with a hand-written header dict (version 1.0)."""
    h = header.encode("latin1")
    h += b" " * (-(10 + len(h) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h + data


def replace_member(path, name, payload, compress=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    members[name] = payload
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        for k, v in members.items():
            z.writestr(k, v, compress_type=compress if k == name else zipfile.ZIP_STORED)
    return path


def test_huge_header_is_refused_unread(linear, tmp_path):
    """A header claiming 10**12 float64 (8 TB) over 104 bytes of data: refused from the
    header and the member size, never allocated (that would be a MemoryError)."""
    path = tmp_path / "model.npz"
    for shape in ("(1000000000000,)", "(1000000, 1000000)", "(-1,)", "(13, -1)",
                  "(10**3,)", "'x'"):
        linear.save(path)
        header = "{'descr': '<f8', 'fortran_order': False, 'shape': %s, }" % shape
        replace_member(path, "coef.npy", npy_bytes(header, b"\0" * 104))
        assert_refused(path, "coef", "not a readable .npy array")


def test_npy_level_damage(linear, tmp_path):
    path = tmp_path / "model.npz"
    for header, data, frag in (
            ("{'descr': '|O', 'fortran_order': False, 'shape': (13,), }", b"\0" * 104, "dtype"),
            ("{'descr': '<f8', 'fortran_order': False, 'shape': (13,), }", b"\0" * 100, "bytes"),
            ("{'descr': '<f8', 'fortran_order': False, 'shape': (13,), }", b"\0" * 112, "bytes"),
            ("{'descr': 'zz', 'fortran_order': False, 'shape': (13,), }", b"\0" * 104, "descr"),
            ("{'descr': [('a', '<f8', (1000000000,))], 'fortran_order': False, 'shape': (1,), }",
             b"\0" * 8, "bytes"),
            ("{'descr': '<f8', 'shape': (13,), }", b"\0" * 104, "keys"),
            ("(" * 300, b"", None), ("{" * 5000, b"", None)):
        linear.save(path)
        replace_member(path, "coef.npy", npy_bytes(header, data))
        assert_refused(path, "coef", frag)
    linear.save(path)
    replace_member(path, "coef.npy", b"\x93NUMPY\x03\x00" + b"\0" * 200)
    assert_refused(path, "coef", "version")
    linear.save(path)
    replace_member(path, "coef.npy", b"not an npy file")
    assert_refused(path, "coef")


def test_big_endian_arrays_are_read(linear, tmp_path):
    path = forged(linear, tmp_path, lambda a, m: a.__setitem__("coef", a["coef"].astype(">f8")))
    np.testing.assert_array_equal(ds.load_model(path).coef, linear.coef)


def test_archive_level_damage(linear, tmp_path):
    path = tmp_path / "model.npz"
    linear.save(path)
    with zipfile.ZipFile(path) as z:
        coef = z.read("coef.npy")
    replace_member(path, "coef.npy", coef, zipfile.ZIP_DEFLATED)
    assert_refused(path, "coef", "compressed")
    # savez_compressed: refused (every member compressed), not inflated
    linear.save(path)
    arrays = entries(path)
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)
    assert_refused(path, fragment="compressed")
    # a flipped data byte: the CRC check
    linear.save(path)
    raw = bytearray(path.read_bytes())
    at = raw.index(linear.coef.tobytes()[:16])
    raw[at] ^= 0xFF
    path.write_bytes(bytes(raw))
    assert_refused(path, "coef", "CRC")
    # a member name that is not <field>.npy, and one twice
    linear.save(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # zipfile: duplicate name
        with zipfile.ZipFile(path, "a") as z:
            z.writestr("coef.npy", b"x")
    assert_refused(path, "coef.npy", "twice")
    linear.save(path)
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("notes.txt", b"x")
    assert_refused(path, "notes.txt")


def test_file_object_errors_are_not_hidden(tmp_path):
    with pytest.raises(FileNotFoundError):
        ds.load_model(tmp_path / "missing.model")


# ---------------------------------------------------------------------------------------
# the reported crash, in a child process


def test_forged_kernel_indptr_does_not_crash_predict(tmp_path):
    """Issue 13: one stored indptr entry set to 10**7 made predict segfault."""
    code = textwrap.dedent(f"""
        import numpy as np, dualsolve as ds
        X, y = ds.datasets.load("heart_scale")
        m = ds.train_mixup_sdca(X, y, kernel="rbf", n_mix=200)
        p = {str(tmp_path / "m.npz")!r}
        m.save(p)
        with np.load(p) as z:
            arrays = {{k: z[k] for k in z.files}}
        arrays["extra__X_indptr"][5] = 10**7
        np.savez(p, **arrays)
        try:
            ds.load_model(p).predict(X)
        except ValueError as exc:
            print("ValueError:", exc)
        else:
            print("accepted")
    """)
    # cwd: away from the checkout, whose uncompiled dualsolve folder would shadow the install
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=str(tmp_path))
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])   # < 0: a signal
    assert proc.stdout.startswith("ValueError:"), proc.stdout
    assert "field 'extra__X_indptr'" in proc.stdout and "m.npz" in proc.stdout


# ---------------------------------------------------------------------------------------
# multi-class models: coef (k, d), intercept (k,), k classes, dual (n, k)


@pytest.fixture(scope="module")
def multiclass(heart):
    X, y = heart
    rng = np.random.default_rng(0)
    return ds.Model(rng.standard_normal((3, 13)), rng.standard_normal(3),
                    dual=rng.standard_normal((270, 3)), classes=np.array([1.0, 2.0, 3.0]),
                    solver="ovr", params=dict(loss="logistic"), stop_reason="converged")


def test_multiclass_round_trip(multiclass, heart, tmp_path):
    multiclass.save(tmp_path / "m.npz")
    m2 = ds.load_model(tmp_path / "m.npz")
    for attr in ("coef", "intercept", "dual", "classes"):
        a, b = getattr(multiclass, attr), getattr(m2, attr)
        assert a.shape == b.shape and a.tobytes() == b.tobytes(), attr
    np.testing.assert_array_equal(m2.predict(heart[0]), multiclass.predict(heart[0]))
    np.testing.assert_array_equal(m2.predict_proba(heart[0]), multiclass.predict_proba(heart[0]))


MULTICLASS_CASES = {
    "coef rows": (setitem("coef", np.zeros((4, 13))), "coef"),
    "coef 1-D": (setitem("coef", np.zeros(13)), "classes"),
    "coef 3-D": (setitem("coef", np.zeros((3, 13, 1))), "coef"),
    "coef columns": (setitem("coef", np.zeros((3, 12))), "coef"),
    "intercept 0-d": (setitem("intercept", np.array(0.0)), "intercept"),
    "intercept length": (setitem("intercept", np.zeros(2)), "intercept"),
    "intercept NaN": (setitem("intercept", np.array([0.0, np.nan, 0.0])), "intercept"),
    "dual 1-D": (setitem("dual", np.zeros(270)), "dual"),
    "dual columns": (setitem("dual", np.zeros((270, 2))), "dual"),
    "classes missing": (delete("classes"), "coef"),
    "classes 2": (setitem("classes", np.array([1.0, 2.0])), "coef"),
    "classes repeated": (setitem("classes", np.array([1.0, 2.0, 1.0])), "classes"),
}


@pytest.mark.parametrize("case", sorted(MULTICLASS_CASES))
def test_damaged_multiclass_model(case, multiclass, tmp_path):
    change, field = MULTICLASS_CASES[case]
    assert_refused(forged(multiclass, tmp_path, change), field)
