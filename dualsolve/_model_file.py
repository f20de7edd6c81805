"""Reading and validating a model file (``dualsolve.load_model``).

A model file is untrusted input. Every entry is checked before a model is built from it, so
a damaged or forged file gives one ``ValueError`` naming the file and the field, never a
zipfile/JSON/NumPy error, a large allocation or a crash later in ``predict``:

- the zip directory first: only stored (uncompressed) ``<name>.npy`` members, each within
  the archive, so no member can expand beyond the file's own size;
- each ``.npy`` header before its data: the bytes its shape and dtype claim must be exactly
  the bytes the member holds (a header claiming 10**12 elements is refused unread);
- then the meaning of every field: dtypes, shapes, finiteness and the lengths that must
  agree; a family's own arrays (a kernel model's training rows and mixup plan) are checked
  by its model class (``check_file``), with the helpers of this module.

The layout is the one :meth:`dualsolve.Model.save` writes (see ``dualsolve.model``).
"""
import json
import math
import os
import warnings
import zipfile

import numpy as np
from numpy.lib import format as npy

META_KEYS = {"format", "model", "solver", "params", "stop_reason", "n_epochs", "n_features",
             "extra", "version"}
# extra arrays a linear Model may hold (anything else is refused)
LINEAR_EXTRA = ("margins", "sigma", "sigma_batch", "eta")
INT64_MAX = np.iinfo(np.int64).max


class _File:
    """The archive being read, and the one way to fail: ``file: field 'name' why``."""

    def __init__(self, path):
        self.name = os.fspath(path)
        if isinstance(self.name, bytes):
            self.name = os.fsdecode(self.name)

    def fail(self, field, why):
        msg = f"{self.name}: field {field!r} {why}" if field else f"{self.name}: {why}"
        return ValueError(" ".join(msg.split()))          # one line, whatever `why` holds


def read_model(path, classes):
    """``(model class, its keyword arguments)`` from the file at ``path``; ``classes`` maps
    the names a file may give in meta.model to the classes."""
    f = _File(path)
    try:
        zf = zipfile.ZipFile(f.name)
    except OSError as exc:
        if isinstance(exc, (FileNotFoundError, IsADirectoryError, PermissionError)):
            raise
        raise f.fail(None, f"is not a dualsolve model file ({_why(exc)})") from None
    except Exception as exc:                # BadZipFile, a corrupt directory, ...
        raise f.fail(None, f"is not a dualsolve model file (not an .npz archive: "
                           f"{_why(exc)})") from None
    with zf:
        members = _members(f, zf)
        if "meta" not in members:
            raise f.fail("meta", "is missing (not a dualsolve model file)")
        meta = _meta(f, _read_npy(f, zf, members.pop("meta"), "meta"), classes)
        arrays = {k: _read_npy(f, zf, info, k) for k, info in members.items()}
    return _validate(f, meta, arrays, classes[meta["model"]])


def _why(exc):
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


# ----------------------------------------------------------------------- zip and .npy

def _members(f, zf):
    """name -> ZipInfo of every ``<name>.npy`` member, after checking the directory."""
    size = os.path.getsize(f.name)
    out = {}
    for info in zf.infolist():
        name = info.filename[:-4] if info.filename.endswith(".npy") else None
        if not name or name in out:
            raise f.fail(info.filename, "is not an entry of a model file" if not name
                         else "appears twice in the archive")
        # Model.save stores members uncompressed; refusing compression bounds every
        # member by the file's size (no zip bomb).
        if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
            raise f.fail(name, "is compressed (model files store their arrays uncompressed)")
        if info.header_offset + info.compress_size > size:
            raise f.fail(name, "extends past the end of the file (truncated?)")
        out[name] = info
    return out


def _read_npy(f, zf, info, field):
    """One member as an array: header first, data only when the member holds exactly
    the bytes the header claims."""
    try:
        with zf.open(info) as fp, warnings.catch_warnings():
            warnings.simplefilter("ignore")         # numpy's Python-2 header notice
            version = npy.read_magic(fp)
            if version == (1, 0):
                shape, fortran, dtype = npy.read_array_header_1_0(fp)
            elif version == (2, 0):
                shape, fortran, dtype = npy.read_array_header_2_0(fp)
            else:
                raise ValueError(f"unsupported .npy version {version}")
            if dtype.hasobject or dtype.itemsize == 0:
                raise ValueError(f"dtype {dtype} is not allowed")
            if any(n < 0 for n in shape):
                raise ValueError(f"negative dimension in shape {shape}")
            nbytes = math.prod(shape) * dtype.itemsize
            held = info.file_size - fp.tell()
            if nbytes != held:
                raise ValueError(f"header claims shape {shape} of {dtype} ({nbytes} bytes) "
                                 f"but the entry holds {held} bytes")
            buf = bytearray(nbytes)                 # writable, like np.load's arrays
            if fp.readinto(buf) != nbytes or fp.read(1):    # the read to EOF checks the CRC
                raise ValueError("entry is shorter than its header says")
        a = np.frombuffer(buf, dtype=dtype).reshape(shape, order="F" if fortran else "C")
        return a if dtype.isnative else a.astype(dtype.newbyteorder("="))
    except Exception as exc:                        # zip, CRC, header parse, ... errors
        raise f.fail(field, f"is not a readable .npy array ({_why(exc)})") from None


def _meta(f, a, classes):
    if a.shape != () or a.dtype.kind != "U":
        raise f.fail("meta", f"must be a 0-d unicode array (got {a.dtype} {a.shape})")
    try:
        meta = json.loads(str(a[()]))
    except Exception as exc:                        # JSONDecodeError, RecursionError, ...
        raise f.fail("meta", f"is not valid JSON ({_why(exc)})") from None
    if not isinstance(meta, dict):
        raise f.fail("meta", f"must be a JSON object (got {type(meta).__name__})")
    from .model import FORMAT, STOP_REASONS
    if meta.get("format") != FORMAT:
        raise f.fail("meta.format", f"is {short(meta.get('format'))}, not {FORMAT!r} "
                                    "(not a dualsolve model file, or an unsupported version)")
    if set(meta) != META_KEYS:
        missing, extra = sorted(META_KEYS - set(meta)), sorted(set(meta) - META_KEYS)
        raise f.fail("meta", f"has missing keys {missing} / unknown keys {extra}")
    checks = (("model", lambda v: isinstance(v, str) and v in classes,
               " or ".join(repr(c) for c in sorted(classes))),
              ("solver", lambda v: isinstance(v, str), "a string"),
              ("version", lambda v: isinstance(v, str), "a string"),
              ("params", lambda v: isinstance(v, dict), "a JSON object"),
              ("stop_reason", lambda v: v in STOP_REASONS,
               " or ".join(repr(r) for r in STOP_REASONS)),
              ("n_epochs", lambda v: is_int(v) and v >= 0, "an integer >= 0"),
              ("n_features", lambda v: is_int(v) and v >= -1, "an integer >= -1"),
              ("extra", lambda v: isinstance(v, list) and all(isinstance(k, str) for k in v)
               and len(set(v)) == len(v), "a list of distinct strings"))
    for key, ok, what in checks:
        if not ok(meta[key]):
            raise f.fail(f"meta.{key}", f"must be {what} (got {short(meta[key])})")
    return meta


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_real(v):
    # a finite float, or an int numpy takes as int64 (make_kernel calls np.isfinite on it)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return -2 ** 63 <= v < 2 ** 63 if isinstance(v, int) else math.isfinite(v)


def short(v):
    try:
        r = repr(v)
    except Exception:                       # a 5000-digit int, a deeply nested list
        r = f"<{type(v).__name__}>"
    return r if len(r) <= 60 else r[:57] + "..."


# ----------------------------------------------------------------------- the fields

def _validate(f, meta, arrays, cls):
    extra_names = {"extra__" + k for k in meta["extra"]}
    for name in ("coef", "intercept", "history", *sorted(extra_names)):
        if name not in arrays:
            raise f.fail(name, "is missing")
    for name in arrays:
        if name not in {"coef", "intercept", "history", "classes", "dual"} | extra_names:
            raise f.fail(name, "is not an entry of a model file (not listed in meta.extra)")
    extra = {k: arrays["extra__" + k] for k in meta["extra"]}
    # A diverged run keeps its non-finite iterate (predictions are NaN, nothing crashes),
    # unless the class predicts from it in a way that needs finite numbers.
    finite = cls.file_needs_finite or meta["stop_reason"] != "diverged"
    classes = arrays.get("classes")
    if classes is not None:
        _classes(f, classes)
    coef, intercept, dual = _weights(f, arrays, classes, finite)
    history = _history(f, arrays["history"])
    cls.check_file(f, meta, coef, extra, dual)
    if coef.ndim == 1:
        intercept = float(intercept)
    return cls, dict(coef=coef, intercept=intercept, dual=dual, history=history,
                     stop_reason=meta["stop_reason"], n_epochs=meta["n_epochs"],
                     solver=meta["solver"], params=meta["params"], classes=classes,
                     extra=extra)


def _weights(f, arrays, classes, finite):
    """coef, intercept and dual, with the shapes of the model's kind: a binary or regression
    model has a 1-D coef (n_features,), a 0-d intercept and a 1-D dual (n,); a model of
    k >= 3 classes a (k, n_features) coef, a (k,) intercept and an (n, k) dual."""
    coef = arrays["coef"]
    if coef.ndim not in (1, 2):
        raise f.fail("coef", f"must be 1-D (binary, regression) or 2-D (k classes, "
                             f"n_features) (got shape {coef.shape})")
    k = None if classes is None else classes.shape[0]
    if coef.ndim == 2 or (k is not None and k > 2):
        if k is None or k < 3:
            raise f.fail("coef", f"is 2-D {coef.shape} (a multi-class model) but the file "
                                 f"has {'no' if k is None else k} class labels; k >= 3 "
                                 "classes need one row each")
        if coef.ndim != 2:
            raise f.fail("classes", f"holds {k} labels but coef has shape {coef.shape}; a "
                                    f"model of {k} classes has a ({k}, n_features) coef")
        coef = floats(f, "coef", coef, 2, finite)
        if coef.shape[0] != k:
            raise f.fail("coef", f"has {coef.shape[0]} rows but the file has {k} classes")
        intercept = floats(f, "intercept", arrays["intercept"], 1, finite)
        if intercept.shape != (k,):
            raise f.fail("intercept", f"has shape {intercept.shape}; a model of {k} classes "
                                      f"has {k} intercepts")
        dual = arrays.get("dual")
        if dual is not None:
            dual = floats(f, "dual", dual, 2, finite)
            if dual.shape[1] != k:
                raise f.fail("dual", f"has {dual.shape[1]} columns but the model has {k} "
                                     "classes")
        return coef, intercept, dual
    coef = floats(f, "coef", coef, 1, finite)
    intercept = floats(f, "intercept", arrays["intercept"], 0, finite)
    dual = arrays.get("dual")
    if dual is not None:
        dual = floats(f, "dual", dual, 1, finite)
    return coef, intercept, dual


def floats(f, field, a, ndim, finite=True, dtype=np.float64):
    if a.dtype.kind != "f" or a.ndim != ndim:
        raise f.fail(field, f"must be a {ndim}-D float array (got {a.dtype} with shape "
                            f"{a.shape})")
    with np.errstate(over="ignore", invalid="ignore"):     # float128 beyond float64: inf
        a = a.astype(dtype, copy=False)
    if finite and not np.isfinite(a).all():
        raise f.fail(field, "contains NaN or infinity")
    return a


def ints(f, field, a, ndim, lo=0, hi=INT64_MAX):
    """An integer array of ``ndim`` dimensions with values in [lo, hi)."""
    if a.dtype.kind not in "iu" or a.ndim != ndim:
        raise f.fail(field, f"must be a {ndim}-D integer array (got {a.dtype} with shape "
                            f"{a.shape})")
    if a.size and (int(a.min()) < lo or int(a.max()) >= hi):
        raise f.fail(field, f"has values outside [{lo}, {hi})")
    return a


def _history(f, h):
    from .model import HISTORY_FIELDS
    names = h.dtype.names or ()
    want = np.dtype(HISTORY_FIELDS + [(n, np.float64) for n in names[len(HISTORY_FIELDS):]])
    if h.ndim != 1 or h.dtype != want:
        raise f.fail("history", "must be a 1-D structured array with float64 fields epoch "
                                "(int64), time, primal, dual, gap, ... (got "
                                f"{short(h.dtype.descr if names else h.dtype.str)}, shape "
                                f"{h.shape})")
    return h


def _classes(f, c):
    if c.dtype.kind not in "biufU" or c.ndim != 1 or c.shape[0] < 2:
        raise f.fail("classes", f"must hold the class labels, 2 or more (got {c.dtype} with "
                                f"shape {c.shape})")
    if c.dtype.kind == "f" and not np.isfinite(c).all():
        raise f.fail("classes", "contains NaN or infinity")
    if np.unique(c).shape[0] != c.shape[0]:
        raise f.fail("classes", "holds the same label twice")


def dual_length(f, dual, n, what):
    if dual is not None and dual.shape[0] != n:
        raise f.fail("dual", f"has {dual.shape[0]} entries but {what} is {n}")


def check_linear_extra(f, meta, coef, extra, dual):
    """A linear Model's fields beyond the generic ones: n_features, its extra arrays, and
    the dual length wherever the file records the number of training rows."""
    if coef.shape[-1] != meta["n_features"]:
        raise f.fail("coef", f"has {coef.shape[-1]} columns of weights but "
                             f"meta.n_features is {meta['n_features']}")
    for k, a in extra.items():
        if k not in LINEAR_EXTRA:
            raise f.fail("extra__" + k, "is not an extra array of a linear Model")
        extra[k] = floats(f, "extra__" + k, a, 1, finite=k == "sigma")
    params = meta["params"]
    if is_int(params.get("n_augmented")):                  # mixup: one per augmented point
        dual_length(f, dual, params["n_augmented"], "meta.params.n_augmented")
    for k in ("margins", "sigma"):                          # one per training row
        if k in extra:
            dual_length(f, dual, extra[k].shape[0], f"the length of extra__{k}")
    if meta["solver"] == "sdca" and dual is not None:      # train_sdca records C = 1/(lam n)
        lam, C = params.get("lam"), params.get("C")
        if is_real(lam) and is_real(C) and lam > 0 and C > 0:
            n = 1.0 / lam / C                   # may be inf (never 1/0), then refused
            if not abs(n - dual.shape[0]) <= 1e-6 * dual.shape[0]:
                raise f.fail("dual", f"has {dual.shape[0]} entries but meta.params records "
                                     f"n = 1 / (lam C) = {n:.6g} training rows")


def group(f, extra, keys):
    """True when all of ``keys`` are present, False when none; a partial group fails."""
    present = [k in extra for k in keys]
    if any(present) and not all(present):
        raise f.fail("extra__" + keys[present.index(False)], "is missing")
    return all(present)
