"""Reading and validating a model file (``dualsolve.load_model``).

A model file is untrusted input. Every entry is checked before a model is built from it, so
a damaged or forged file gives one ``ValueError`` naming the file and the field, never a
zipfile/JSON/NumPy error, a large allocation or a crash later in ``predict``:

- the zip directory first: only stored (uncompressed) ``<name>.npy`` members, each within
  the archive, so no member can expand beyond the file's own size;
- each ``.npy`` header before its data: the bytes its shape and dtype claim must be exactly
  the bytes the member holds (a header claiming 10**12 elements is refused unread);
- then the meaning of every field: dtypes, shapes, finiteness, the CSR structure of a
  kernel model's training rows, the mixup plan, and the lengths that must agree.

The layout is the one :meth:`dualsolve.Model.save` writes (see ``dualsolve.model``).
"""
import json
import math
import os
import warnings
import zipfile

import numpy as np
from numpy.lib import format as npy

META_KEYS = {"format", "model", "solver", "params", "converged", "n_epochs", "n_features",
             "extra", "version"}
KERNELS = ("linear", "rbf", "poly", "precomputed")
# extra arrays each model kind may hold (anything else is refused)
X_KEYS = ("X_data", "X_indices", "X_indptr", "X_shape")
PLAN_KEYS = ("plan_a", "plan_b", "plan_r", "plan_n_orig")
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


def read_model(path):
    """``(class name, keyword arguments of Model)`` from the file at ``path``."""
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
        meta = _meta(f, _read_npy(f, zf, members.pop("meta"), "meta"))
        arrays = {k: _read_npy(f, zf, info, k) for k, info in members.items()}
    return _validate(f, meta, arrays)


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


def _meta(f, a):
    if a.shape != () or a.dtype.kind != "U":
        raise f.fail("meta", f"must be a 0-d unicode array (got {a.dtype} {a.shape})")
    try:
        meta = json.loads(str(a[()]))
    except Exception as exc:                        # JSONDecodeError, RecursionError, ...
        raise f.fail("meta", f"is not valid JSON ({_why(exc)})") from None
    if not isinstance(meta, dict):
        raise f.fail("meta", f"must be a JSON object (got {type(meta).__name__})")
    from .model import FORMAT
    if meta.get("format") != FORMAT:
        raise f.fail("meta.format", f"is {_short(meta.get('format'))}, not {FORMAT!r} "
                                    "(not a dualsolve model file, or an unsupported version)")
    if set(meta) != META_KEYS:
        missing, extra = sorted(META_KEYS - set(meta)), sorted(set(meta) - META_KEYS)
        raise f.fail("meta", f"has missing keys {missing} / unknown keys {extra}")
    checks = (("model", lambda v: v in ("Model", "KernelModel"), "'Model' or 'KernelModel'"),
              ("solver", lambda v: isinstance(v, str), "a string"),
              ("version", lambda v: isinstance(v, str), "a string"),
              ("params", lambda v: isinstance(v, dict), "a JSON object"),
              ("converged", lambda v: isinstance(v, bool), "true or false"),
              ("n_epochs", lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
              ("n_features", lambda v: _is_int(v) and v >= -1, "an integer >= -1"),
              ("extra", lambda v: isinstance(v, list) and all(isinstance(k, str) for k in v)
               and len(set(v)) == len(v), "a list of distinct strings"))
    for key, ok, what in checks:
        if not ok(meta[key]):
            raise f.fail(f"meta.{key}", f"must be {what} (got {_short(meta[key])})")
    return meta


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_real(v):
    # a finite float, or an int numpy takes as int64 (make_kernel calls np.isfinite on it)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return -2 ** 63 <= v < 2 ** 63 if isinstance(v, int) else math.isfinite(v)


def _short(v):
    try:
        r = repr(v)
    except Exception:                       # a 5000-digit int, a deeply nested list
        r = f"<{type(v).__name__}>"
    return r if len(r) <= 60 else r[:57] + "..."


# ----------------------------------------------------------------------- the fields

def _validate(f, meta, arrays):
    kernel = meta["model"] == "KernelModel"
    extra_names = {"extra__" + k for k in meta["extra"]}
    for name in ("coef", "intercept", "history", *sorted(extra_names)):
        if name not in arrays:
            raise f.fail(name, "is missing")
    for name in arrays:
        if name not in {"coef", "intercept", "history", "classes", "dual"} | extra_names:
            raise f.fail(name, "is not an entry of a model file (not listed in meta.extra)")
    extra = {k: arrays["extra__" + k] for k in meta["extra"]}
    params = meta["params"]
    # A diverged run keeps its non-finite iterate (predictions are NaN, nothing crashes).
    finite = kernel or params.get("status") != "diverged"

    coef = _floats(f, "coef", arrays["coef"], 1, finite)
    n_features = meta["n_features"]
    if coef.shape[0] != (0 if kernel else n_features):
        raise f.fail("coef", f"has {coef.shape[0]} entries but meta.n_features is {n_features}"
                     if not kernel else "must be empty for a KernelModel")
    intercept = _floats(f, "intercept", arrays["intercept"], 0, finite)
    dual = arrays.get("dual")
    if dual is not None:
        dual = _floats(f, "dual", dual, 1, finite)
    history = _history(f, arrays["history"])
    classes = arrays.get("classes")
    if classes is not None:
        _classes(f, classes)
    if kernel:
        _kernel_extra(f, meta, extra, dual)
    else:
        _linear_extra(f, meta, extra, dual)
    return meta["model"], dict(coef=coef, intercept=float(intercept), dual=dual,
                               history=history, converged=meta["converged"],
                               n_epochs=meta["n_epochs"], solver=meta["solver"],
                               params=params, classes=classes, extra=extra)


def _floats(f, field, a, ndim, finite=True, dtype=np.float64):
    if a.dtype.kind != "f" or a.ndim != ndim:
        raise f.fail(field, f"must be a {ndim}-D float array (got {a.dtype} with shape "
                            f"{a.shape})")
    with np.errstate(over="ignore", invalid="ignore"):     # float128 beyond float64: inf
        a = a.astype(dtype, copy=False)
    if finite and not np.isfinite(a).all():
        raise f.fail(field, "contains NaN or infinity")
    return a


def _ints(f, field, a, ndim, lo=0, hi=INT64_MAX):
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
                                f"{_short(h.dtype.descr if names else h.dtype.str)}, shape "
                                f"{h.shape})")
    return h


def _classes(f, c):
    if c.dtype.kind not in "biufU" or c.shape != (2,):
        raise f.fail("classes", f"must hold the 2 class labels (got {c.dtype} with shape "
                                f"{c.shape})")
    if c.dtype.kind == "f" and not np.isfinite(c).all():
        raise f.fail("classes", "contains NaN or infinity")
    if c[0] == c[1]:
        raise f.fail("classes", "holds the same label twice")


def _dual_length(f, dual, n, what):
    if dual is not None and dual.shape[0] != n:
        raise f.fail("dual", f"has {dual.shape[0]} entries but {what} is {n}")


def _linear_extra(f, meta, extra, dual):
    for k, a in extra.items():
        if k not in LINEAR_EXTRA:
            raise f.fail("extra__" + k, "is not an extra array of a linear Model")
        extra[k] = _floats(f, "extra__" + k, a, 1, finite=k == "sigma")
    params = meta["params"]
    if _is_int(params.get("n_augmented")):                  # mixup: one per augmented point
        _dual_length(f, dual, params["n_augmented"], "meta.params.n_augmented")
    for k in ("margins", "sigma"):                          # one per training row
        if k in extra:
            _dual_length(f, dual, extra[k].shape[0], f"the length of extra__{k}")
    if meta["solver"] == "sdca" and dual is not None:      # train_sdca records C = 1/(lam n)
        lam, C = params.get("lam"), params.get("C")
        if _is_real(lam) and _is_real(C) and lam > 0 and C > 0:
            n = 1.0 / lam / C                   # may be inf (never 1/0), then refused
            if not abs(n - dual.shape[0]) <= 1e-6 * dual.shape[0]:
                raise f.fail("dual", f"has {dual.shape[0]} entries but meta.params records "
                                     f"n = 1 / (lam C) = {n:.6g} training rows")


def _kernel_extra(f, meta, extra, dual):
    params = meta["params"]
    kernel = _kernel_params(f, params)
    for k in extra:
        if k not in ("lam_n",) + X_KEYS + PLAN_KEYS:
            raise f.fail("extra__" + k, "is not an extra array of a KernelModel")
    if "lam_n" not in extra:
        raise f.fail("extra__lam_n", "is missing")
    lam_n = _floats(f, "extra__lam_n", extra["lam_n"], 0)
    if not lam_n > 0:
        raise f.fail("extra__lam_n", f"must be > 0 (got {float(lam_n)})")
    extra["lam_n"] = lam_n
    if dual is None:
        raise f.fail("dual", "is missing (a KernelModel predicts from its dual variables)")
    have_x, have_plan = _group(f, extra, X_KEYS), _group(f, extra, PLAN_KEYS)
    if kernel == "precomputed":
        if have_x or have_plan:
            raise f.fail("extra__X_shape", "is present but kernel='precomputed' keeps no rows")
        if meta["n_features"] != -1:
            raise f.fail("meta.n_features", "must be -1 for kernel='precomputed'")
        n = dual.shape[0]
    else:
        if not have_x:
            raise f.fail("extra__X_data", f"is missing (kernel={kernel!r} needs the rows)")
        n_orig, d = _csr(f, extra)
        if meta["n_features"] != d:
            raise f.fail("meta.n_features", f"is {meta['n_features']} but extra__X_shape has "
                                            f"{d} columns")
        n = n_orig
        if have_plan:
            n += _plan(f, extra, n_orig)
        _dual_length(f, dual, n, "the number of training points (rows + mixed)")
    if _is_int(params.get("n_augmented")) and params["n_augmented"] != n:
        raise f.fail("meta.params.n_augmented", f"is {params['n_augmented']} but the model "
                                                f"has {n} training points")


def _group(f, extra, keys):
    """True when all of ``keys`` are present, False when none; a partial group fails."""
    present = [k in extra for k in keys]
    if any(present) and not all(present):
        raise f.fail("extra__" + keys[present.index(False)], "is missing")
    return all(present)


def _kernel_params(f, params):
    kernel = params.get("kernel")
    if kernel not in KERNELS:
        raise f.fail("meta.params.kernel", f"must be one of {list(KERNELS)} (got "
                                           f"{_short(kernel)})")
    if kernel in ("rbf", "poly") and not (_is_real(params.get("gamma")) and params["gamma"] > 0):
        raise f.fail("meta.params.gamma", f"must be a finite number > 0 (got "
                                          f"{_short(params.get('gamma'))})")
    # KernelModel._kernel reads gamma, coef0 and int(degree) for rbf as for poly
    if kernel in ("rbf", "poly") and not _is_real(params.get("coef0")):
        raise f.fail("meta.params.coef0", f"must be a finite number (got "
                                          f"{_short(params.get('coef0'))})")
    if kernel in ("rbf", "poly"):
        if not (_is_int(params.get("degree")) and 0 <= params["degree"] < 2 ** 31):
            raise f.fail("meta.params.degree", f"must be an integer in [0, 2**31) (got "
                                               f"{_short(params.get('degree'))})")
    return kernel


def _csr(f, extra):
    """Check the stored training rows (the CSR arrays and shape); ``(n_rows, n_cols)``."""
    shape = _ints(f, "extra__X_shape", extra["X_shape"], 1)
    if shape.shape != (2,) or shape[0] < 1:
        raise f.fail("extra__X_shape", f"must be 2 integers (n_rows >= 1, n_cols) (got "
                                       f"{_short(shape.tolist())})")
    n, d = int(shape[0]), int(shape[1])
    data = _floats(f, "extra__X_data", extra["X_data"], 1, dtype=extra["X_data"].dtype)
    if data.dtype not in (np.float32, np.float64):
        raise f.fail("extra__X_data", f"must be float32 or float64 (got {data.dtype})")
    indices = _ints(f, "extra__X_indices", extra["X_indices"], 1, 0, d)
    indptr = _ints(f, "extra__X_indptr", extra["X_indptr"], 1, 0, INT64_MAX)
    for k, a in (("X_indices", indices), ("X_indptr", indptr)):
        if a.dtype not in (np.int32, np.int64):
            raise f.fail("extra__" + k, f"must be int32 or int64 (got {a.dtype})")
    nnz = data.shape[0]
    if indices.shape[0] != nnz:
        raise f.fail("extra__X_indices", f"has {indices.shape[0]} entries but extra__X_data "
                                         f"has {nnz}")
    bad = None
    if indptr.shape[0] != n + 1:
        bad = f"has {indptr.shape[0]} entries for {n} rows"
    elif indptr[0] != 0:
        bad = f"starts at {int(indptr[0])}, not 0"
    elif (np.diff(indptr) < 0).any():
        bad = "not monotone"
    elif indptr[-1] != nnz:
        bad = f"ends at {int(indptr[-1])}, not at the {nnz} stored entries"
    if bad:
        raise f.fail("extra__X_indptr", f"is not a valid CSR indptr ({bad})")
    # The rest of what prediction relies on (no repeated column in a row, row norms
    # that fit a float64), by the same check as training data.
    import scipy.sparse as sp
    from ._validation import check_csr
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")          # duplicates would only warn
            check_csr(sp.csr_matrix((data, indices, indptr), shape=(n, d), copy=False))
    except (ValueError, Warning) as exc:
        raise f.fail("extra__X_indices", f"does not describe valid training rows ({exc})") \
            from None
    return n, d


def _plan(f, extra, n_orig):
    """Check the mixup plan against the ``n_orig`` stored rows; the number of mixed points."""
    n_o = _ints(f, "extra__plan_n_orig", extra["plan_n_orig"], 0)
    if int(n_o) != n_orig:
        raise f.fail("extra__plan_n_orig", f"is {int(n_o)} but extra__X_shape has {n_orig} rows")
    a = _ints(f, "extra__plan_a", extra["plan_a"], 1, 0, n_orig)
    b = _ints(f, "extra__plan_b", extra["plan_b"], 1, 0, n_orig)
    r = _floats(f, "extra__plan_r", extra["plan_r"], 1)
    if not a.shape == b.shape == r.shape:
        raise f.fail("extra__plan_b", f"lengths differ: plan_a {a.shape[0]}, plan_b "
                                      f"{b.shape[0]}, plan_r {r.shape[0]}")
    if r.size and not (r.min() >= 0.0 and r.max() <= 1.0):
        raise f.fail("extra__plan_r", "has mixing ratios outside [0, 1]")
    extra["plan_r"] = r
    return a.shape[0]
