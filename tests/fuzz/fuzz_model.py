"""Fuzz ``dualsolve.load_model`` with atheris (coverage-guided libFuzzer for Python).

    python tests/fuzz/fuzz_model.py [corpus_dir ...] [libFuzzer flags, e.g. -atheris_runs=1000000]

An input is the bytes of a model file. Outcomes:

- ValueError, on one line, naming the file: expected (a damaged or forged file);
- success: the model must predict on a small matrix of its shape without error, and save
  and load back to the same arrays;
- anything else (another exception, a crash, a hang, a runaway allocation) is a bug.

Byte mutations of a zip rarely get past its CRC checks, so a structure-aware mutator does
most of the work: it unzips the input and edits one member (its .npy bytes, an element,
the dtype, the shape, a history field, a meta/params value, the member set) and zips it
again with valid checksums. Seeds are model files saved by a few solvers on small data.
``check(data)`` and ``mutate(...)`` are importable without atheris (tests/test_fuzz_smoke.py).
"""
import io
import json
import atexit
import os
import random
import shutil
import sys
import tempfile
import warnings
import zipfile

import numpy as np
import scipy.sparse as sp

import dualsolve
from _common import scratch_dir

_tmp = tempfile.mkdtemp(prefix="fuzz_model_", dir=scratch_dir())
atexit.register(shutil.rmtree, _tmp, True)
PATH = os.path.join(_tmp, "model.npz")
RESAVED = os.path.join(_tmp, "resaved.npz")


def check(data):
    """The property for one input (raises AssertionError or the unexpected exception)."""
    with open(PATH, "wb") as f:
        f.write(data)
    try:
        m = dualsolve.load_model(PATH)
    except ValueError as exc:
        msg = str(exc)
        assert type(exc) is ValueError, type(exc)
        assert msg.startswith(PATH + ": ") and len(msg.splitlines()) == 1, msg
        return
    # A kernel model's prediction costs O(n_features) (scipy's sparse product), which a
    # file can claim without storing: past 10**6 columns the probe is the caller's cost.
    if m.n_features <= 10 ** 6:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")     # overflow in a forged but finite model
            scores = m.decision_function(_probe(m))
        assert scores.shape == (2,), scores.shape
    m.save(RESAVED)
    m2 = dualsolve.load_model(RESAVED)
    assert type(m2) is type(m)
    for a, b in ((m.coef, m2.coef), (m.dual, m2.dual), (m.history, m2.history),
                 (m.classes, m2.classes), *((m.extra[k], m2.extra[k]) for k in m.extra)):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _probe(m):
    """Two rows of the model's input shape: a kernel matrix for kernel="precomputed",
    else a sparse matrix with one entry (no dense n_features allocation)."""
    if m.params.get("kernel") == "precomputed" and isinstance(m, dualsolve.KernelModel):
        return np.ones((2, m.dual.shape[0]))
    d = m.n_features
    X = sp.lil_matrix((2, d))
    if d:
        X[0, d - 1] = 0.5
    return X.tocsr()


# ----------------------------------------------------------------------- the mutator

SPECIAL = [np.nan, np.inf, -np.inf, -1, 0, 1, 2, 0.5, 1.5, 10 ** 7, 2 ** 31, -2 ** 63,
           2 ** 63 - 1, 1e308, 5e-324]
JSON_VALUES = [None, True, False, -1, 0, 1, 3, 2 ** 31, 2 ** 63, -2 ** 70, 1e308, 0.5,
               float("nan"), "", "x", "rbf", "poly", "linear", "precomputed", "Model",
               "KernelModel", "diverged", [], ["X_data"], {}, {"kernel": "rbf"}]
DTYPES = ["<f8", "<f4", ">f8", "<i4", "<i8", "<u8", "|b1", "<U3", "<c16", "|i1"]
FIELDS = ["meta", "coef", "intercept", "history", "classes", "dual", "extra__lam_n",
          "extra__X_data", "extra__X_indices", "extra__X_indptr", "extra__X_shape",
          "extra__plan_a", "extra__plan_b", "extra__plan_r", "extra__plan_n_orig",
          "extra__sigma", "extra__margins", "extra__eta", "extra__unknown"]


def _unzip(data):
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return {i.filename: z.read(i) for i in z.infolist()}
    except Exception:
        return None


def _zip(members):
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # a duplicate name is a valid mutation
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
            for name, payload in members:
                z.writestr(name, payload)
    return buf.getvalue()


def _npy(a):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, a, allow_pickle=False)
    return buf.getvalue()


def _array(payload):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # numpy's Python-2 header notice
            return np.lib.format.read_array(io.BytesIO(payload), allow_pickle=False)
    except Exception:
        return None


def _mutate_array(a, rng):
    """One semantic edit of an array (an element, the dtype, the shape, a field); the
    array itself when the edit does not apply (e.g. text that is not a number)."""
    try:
        return _edit_array(a, rng)
    except (ValueError, TypeError, OverflowError):
        return a


def _edit_array(a, rng):
    op = rng.randrange(7)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if a.dtype.names and op < 3:        # history: a field dropped, renamed or retyped
            names = list(a.dtype.names)
            k = rng.randrange(len(names))
            descr = [(n, a.dtype[n]) for n in names]
            if op == 0:
                del descr[k]
            elif op == 1:
                descr[k] = ("x" + names[k], descr[k][1])
            else:
                descr[k] = (names[k], np.dtype(rng.choice(["<i8", "<f4", "<f8"])))
            out = np.zeros(a.shape, descr)
            for n, _ in descr:
                if n in names:
                    out[n] = a[n]
            return out
        if op == 0 and a.size and not a.dtype.names:
            b = a.copy().reshape(-1)
            v = rng.choice(SPECIAL)
            b[rng.randrange(b.size)] = v
            return b.reshape(a.shape)
        if op == 1 and not a.dtype.names:
            return a.astype(rng.choice(DTYPES))
        if op == 2 and a.ndim:
            return a[: rng.randrange(a.shape[0] + 1)]
        if op == 3 and a.size:
            flat = a.reshape(-1)
            return np.concatenate([flat, flat[rng.randrange(flat.size):][:3]])
        if op == 4:
            return a.reshape(-1)[:1].reshape(()) if a.size else a.reshape(-1)
        if op == 5 and a.ndim == 1 and a.size > 1:
            b = a.copy()
            i, j = rng.randrange(a.size), rng.randrange(a.size)
            b[i], b[j] = a[j], a[i]
            return b
        return a.reshape(1, -1) if a.ndim == 1 else a.reshape(-1)


def _mutate_meta(meta, rng):
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    keys = [("", k) for k in meta] + [("params", k) for k in params]
    where, key = rng.choice(keys) if keys else ("", "format")
    target = meta[where] if where else meta
    op = rng.randrange(5)
    if op == 0:
        target.pop(key, None)
    elif op == 1 and isinstance(target.get(key), list) and target[key]:
        target[key].pop(rng.randrange(len(target[key])))
    elif op == 2 and key == "extra" and isinstance(target.get("extra"), list):
        target["extra"].append(rng.choice(FIELDS)[7:] or "lam_n")
    else:
        target[key] = rng.choice(JSON_VALUES)
    return meta


def mutate(data, max_size, seed, byte_mutate):
    """A structure-aware mutation of a model file (falls back to ``byte_mutate``)."""
    rng = random.Random(seed)
    members = _unzip(data)
    if not members or rng.random() < 0.1:
        return byte_mutate(data, max_size)
    items = list(members.items())
    k = rng.randrange(len(items))
    name, payload = items[k]
    op = rng.random()
    a = _array(payload)
    if op < 0.15 or a is None:              # the member's bytes (zipped with a good CRC)
        items[k] = (name, byte_mutate(payload, len(payload) + 64))
    elif op < 0.75:
        if name == "meta.npy" and a.dtype.kind == "U" and a.ndim == 0:
            try:
                meta = json.loads(str(a))
            except ValueError:
                meta = None
            if isinstance(meta, dict):
                a = np.array(json.dumps(_mutate_meta(meta, rng)))
            else:
                a = _mutate_array(a, rng)
        else:
            a = _mutate_array(a, rng)
        items[k] = (name, _npy(a))
    elif op < 0.85:
        del items[k]
    elif op < 0.95:                         # another entry under an existing/expected name
        items.append((rng.choice(FIELDS) + ".npy", payload))
    else:
        items[k] = (rng.choice(FIELDS) + rng.choice([".npy", "", ".txt"]), payload)
    out = _zip(items)
    return out if len(out) <= max_size else byte_mutate(data, max_size)


# ----------------------------------------------------------------------- seeds

def seeds():
    """Model files saved by a few solvers (every kind of entry) on 30 rows of heart_scale."""
    X, y = dualsolve.datasets.load("heart_scale")
    X, y = X[:30], y[:30]
    y[:2] = [1.0, -1.0]                     # both classes for sure
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = [
            dualsolve.train_sdca(X, np.where(y > 0, "yes", "no"), fit_intercept=True,
                                 max_epochs=3),
            dualsolve.train_mixup_sdca(X, y, kernel="rbf", n_mix=10, max_epochs=3),
            dualsolve.train_mixup_sdca((X @ X.T).toarray(), y, kernel="precomputed",
                                       max_epochs=3),
            dualsolve.train_kernel_sgd(X, y, step=0.1, kernel="poly", max_epochs=2),
            dualsolve.train_mixup_sdca(X, y, n_mix=5, max_epochs=3),
            dualsolve.train_df_spdc(X, y, max_epochs=2),
            dualsolve.train_sorel(X, y * 2.0, max_epochs=2),
            dualsolve.train_svrg(X, y, max_epochs=2),
            dualsolve.train_ppd_sg(X, y, max_epochs=1)]
    out = []
    for m in models:
        m.save(RESAVED)
        with open(RESAVED, "rb") as f:
            out.append(f.read())
    return out


def main(argv):
    from _common import fuzz
    import dualsolve._model_file
    import dualsolve.model
    import dualsolve._validation
    if not any(a.startswith("-max_len=") for a in argv):
        argv = argv + ["-max_len=32768"]
    fuzz(argv, check, seeds(), [dualsolve._model_file, dualsolve.model, dualsolve._validation],
         "fuzz_model", mutator=mutate)


if __name__ == "__main__":
    main(sys.argv)
