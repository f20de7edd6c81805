"""Turn user input into checked CSR arrays and labels, with errors that name the argument.

CSR input (``csr_matrix`` or ``csr_array``; float32/float64 data; int32/int64 indices; sorted
or not) is used as it is: no copy of ``data`` or ``indices``. Anything else is converted once.
"""
import numbers
import warnings

import numpy as np
import scipy.sparse as sp


class ConvergenceWarning(UserWarning):
    """A solver stopped at ``max_epochs`` before reaching its tolerance."""


class CSRInput:
    """The three CSR arrays of a checked matrix plus its shape (views, not copies), and what
    the validating pass found: the squared row norms (None when it was skipped) and whether
    every row's indices strictly increase (``sorted_rows``; False when unknown)."""

    __slots__ = ("data", "indices", "indptr", "shape", "source", "sqnorm", "sorted_rows")

    def __init__(self, data, indices, indptr, shape, source, sqnorm=None, sorted_rows=False):
        self.data, self.indices, self.indptr = data, indices, indptr
        self.shape = shape
        self.source = source        # the matrix the arrays belong to (keeps them alive)
        self.sqnorm = sqnorm
        self.sorted_rows = sorted_rows


def refuse_masked(a, name):
    """``np.asarray`` drops a masked array's mask, so its masked entries would be read as
    the values under the mask: refuse them (a mask that hides nothing is fine)."""
    if isinstance(a, np.ma.MaskedArray) and np.ma.is_masked(a):
        raise ValueError(f"{name} is a masked array with {int(np.ma.count_masked(a))} masked "
                         f"entries, which would be read as the values under the mask: fill "
                         f"them ({name}.filled(value)) or drop their rows first")


def sparse_frame(X):
    """A pandas DataFrame whose columns are all sparse (``pd.SparseDtype``), as the scipy
    CSR matrix it stands for (np.asarray would make it dense); anything else as it is."""
    dtypes = getattr(X, "dtypes", None)
    if (dtypes is not None and hasattr(X, "sparse") and len(dtypes)
            and all(type(t).__name__ == "SparseDtype" for t in dtypes)):
        return sp.csr_matrix(X.sparse.to_coo())
    return X


def dense_array(X, name):
    """A dense ``X`` (array-like, not sparse) as a NumPy array, refusing masked entries.
    A pandas DataFrame with nullable columns (Int64, Float64, boolean) would become an
    object array, so a frame whose columns all hold numbers becomes float64, a missing value
    NaN (which the check then refuses, with its place); plain NumPy columns as they are."""
    refuse_masked(X, name)
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and hasattr(X, "to_numpy") and not isinstance(X, np.ndarray):
        dtypes = list(dtypes)
        other = [f"{c!r} ({t})" for c, t in zip(getattr(X, "columns", range(len(dtypes))), dtypes)
                 if getattr(t, "kind", "O") not in "biuf"]
        if other:
            raise TypeError(f"{name} must hold real numbers; its columns {', '.join(other[:5])}"
                            f"{' ...' if len(other) > 5 else ''} do not: encode them first")
        if any(not isinstance(t, np.dtype) for t in dtypes):
            return X.to_numpy(dtype=np.float64, na_value=np.nan)
    return np.asarray(X)


def check_csr(X, name="X", dtype=None, threads=1):
    """Validate ``X`` and return a :class:`CSRInput` sharing memory with it when possible.

    The CSR structure is checked before anything reads it (scipy accepts an ``indptr`` that
    decreases or points past the data, and the loops trust the arrays they get): ``indptr``
    starts at 0, never decreases and ends within the data; every column index lies in
    ``[0, n_features)``; no row repeats a column (repeats are summed in a copy, with a
    warning); no value is NaN or infinite; every row's squared norm is a normal float64
    (neither overflowing nor lost to underflow). One O(nnz) pass, no O(n_features) memory.

    Parameters
    ----------
    X : sparse matrix/array or array-like, shape (n_samples, n_features)
    name : str
        Argument name used in error messages.
    dtype : None, np.float32 or np.float64
        None keeps float32/float64 data as it is (other dtypes become float64).
    threads : int
        Threads for the pass over large matrices (a solve's ``n_jobs``; the same result).
    """
    X = sparse_frame(X)
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D; got {X.ndim} dimensions")
        if X.format != "csr":
            X = X.tocsr()
    else:
        if isinstance(X, (str, bytes)) or X is None:
            raise TypeError(f"{name} must be a scipy sparse matrix or a 2-D array; got {type(X).__name__}")
        arr = dense_array(X, name)
        if arr.dtype.kind not in "biuf":    # (booleans are 0/1, as in a sparse X)
            raise TypeError(f"{name} must hold real numbers; got dtype {arr.dtype}")
        if arr.ndim != 2:
            raise ValueError(f"{name} must be 2-D (n_samples, n_features); got shape {arr.shape}")
        if arr.dtype.kind == "f" and arr.dtype not in (np.float32, np.float64):
            # scipy.sparse has no float16, and the loops read float32/float64: float16
            # widens exactly, a long double rounds to float64
            arr = arr.astype(np.float32 if arr.dtype.itemsize < 4 else np.float64)
        X = sp.csr_matrix(arr)
    data = X.data
    if data.dtype.kind == "c":
        raise TypeError(f"{name} must hold real numbers; got complex dtype {data.dtype}")
    if data.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers; got dtype {data.dtype}")
    if dtype is not None:
        data = data.astype(dtype, copy=False)
    elif data.dtype not in (np.float32, np.float64):
        data = data.astype(np.float64)
    if data.ndim != 1 or X.indices.ndim != 1 or X.indptr.ndim != 1:
        raise ValueError(f"{name} is not a valid CSR matrix (data, indices and indptr must be 1-D)")
    if not data.flags.c_contiguous:
        data = np.ascontiguousarray(data)
    indices, indptr = X.indices, X.indptr
    if indices.dtype.kind not in "iu" or indptr.dtype.kind not in "iu":
        raise TypeError(f"{name} is not a valid CSR matrix (integer indices and indptr needed; "
                        f"got {indices.dtype} and {indptr.dtype})")
    n, d = X.shape
    if n == 0:
        raise ValueError(f"{name} has no rows (shape {X.shape})")
    big = max(d, indices.shape[0], n) > np.iinfo(np.int32).max
    itype = np.int64 if (big or indices.dtype.itemsize == 8 or indptr.dtype.itemsize == 8) \
        else np.int32
    indices = _as_index(indices, itype, name, "indices")
    indptr = _as_index(indptr, itype, name, "indptr")
    if indptr.shape[0] != n + 1:
        raise ValueError(f"{name} is not a valid CSR matrix: indptr has {indptr.shape[0]} "
                         f"entries for {n} rows (expected {n + 1})")
    from dualsolve._core import csr as _csr
    code, row, pos, sqnorm, strict = _csr.check_structure(data, indices, indptr, d, threads)
    if code == _csr.STRUCT_OK:
        return CSRInput(data, indices, indptr, (n, d), X, sqnorm, bool(strict))
    if code == _csr.STRUCT_DUPLICATE:
        # the precomputed row norms and the grouped updates assume each column once per row
        warnings.warn(f"{name} has duplicate entries in some rows (first in row {row}); summing "
                      f"them in a copy (call {name}.sum_duplicates() once to avoid this copy)",
                      stacklevel=3)
        X = sp.csr_matrix((data, indices, indptr), shape=(n, d), copy=True)
        X.sum_duplicates()
        return check_csr(X, name, dtype, threads)
    raise ValueError(_structure_message(code, name, row, pos, data, indices, indptr, n, d))


def _as_index(a, itype, name, what):
    """``a`` as contiguous ``itype``, refusing values that do not fit (a uint64 or int64 array
    that would wrap around)."""
    if a.dtype != itype and a.size and (a.min() < np.iinfo(itype).min or a.max() > np.iinfo(itype).max):
        raise ValueError(f"{name} is not a valid CSR matrix: {what} has values outside the "
                         f"range of {np.dtype(itype).name}")
    return np.ascontiguousarray(a, dtype=itype)


def _structure_message(code, name, row, pos, data, indices, indptr, n, d):
    from dualsolve._core import csr as _csr
    if code == _csr.STRUCT_INDPTR:
        if indptr[0] != 0:
            why = f"indptr[0] is {int(indptr[0])}, not 0"
        elif data.shape[0] != indices.shape[0]:
            why = f"data has {data.shape[0]} entries but indices has {indices.shape[0]}"
        elif pos > indices.shape[0]:
            why = (f"indptr[{row + 1}] = {int(pos)} points past the {indices.shape[0]} "
                   "stored entries")
        else:
            why = f"indptr decreases at row {row} ({int(indptr[row])} then {int(pos)})"
        return f"{name} is not a valid CSR matrix: {why}"
    if code == _csr.STRUCT_INDEX:
        return (f"{name} has a column index outside [0, {d}): {int(indices[pos])} in row {row}")
    if code == _csr.STRUCT_NONFINITE:
        return (f"{name} contains NaN or infinity (first at row {row}, column "
                f"{int(indices[pos])}: {data[pos]})")
    start, end = int(indptr[row]), int(indptr[row + 1])
    largest = float(np.abs(data[start:end]).max())
    if code == _csr.STRUCT_OVERFLOW:
        return (f"{name} has values too large for float64 arithmetic: the squared norm of row "
                f"{row} overflows (largest |value| {largest:.3g}); rescale {name} (the model of "
                f"lam on {name} is that of lam / s**2 on {name} / s, with coef times s)")
    return (f"{name} has values too small for float64 arithmetic: the squared norm of row {row} "
            f"underflows (largest |value| {largest:.3g}); rescale {name} (the model of lam on "
            f"{name} is that of lam / s**2 on {name} / s, with coef times s)")


def check_labels(y, n_samples, task, name="y"):
    """Validate labels.

    task : "binary"  two distinct values mapped to -1 / +1 (the larger value is +1);
           "classes" two or more distinct values: returns each row's index into the
                     sorted classes (int64) and the classes;
           "soft"    reals in [-1, 1] used as they are (mixup labels);
           "regression"  any finite reals.
    Returns ``(y_internal float64 contiguous, classes or None)``.
    """
    if y is None:
        raise TypeError(f"{name} must be an array of labels; got None")
    refuse_masked(y, name)
    y = np.asarray(y)
    if y.ndim == 2 and 1 in y.shape:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {y.shape}")
    if y.shape[0] != n_samples:
        raise ValueError(f"{name} has {y.shape[0]} labels but X has {n_samples} rows")
    if task in ("binary", "classes"):
        if y.dtype.kind in "fc" and not np.isfinite(y).all():
            raise ValueError(f"{name} contains NaN or infinity")
        if y.dtype.kind not in "biufUSO":
            raise TypeError(f"{name} must hold class labels (numbers or strings); got dtype "
                            f"{y.dtype}")
        if y.dtype.kind == "O" and any(v is None or (isinstance(v, (float, np.floating))
                                                     and not np.isfinite(v)) for v in y):
            raise ValueError(f"{name} contains None, NaN or infinity")
        try:
            classes, codes = np.unique(y, return_inverse=True)
        except TypeError as e:  # objects that do not order: mixed str and int, say
            raise TypeError(f"{name} must hold labels of one kind that can be sorted (numbers "
                            f"or strings); {e}") from None
        if classes.shape[0] < 2:
            raise ValueError(f"{name} has one class only ({classes[0]!r}); two are needed")
        if task == "classes":
            return np.ascontiguousarray(codes.ravel(), dtype=np.int64), classes
        if classes.shape[0] > 2:
            shown = ", ".join(repr(c) for c in classes[:5].tolist())
            raise ValueError(f"{name} has {classes.shape[0]} distinct values ({shown}"
                             f"{', ...' if classes.shape[0] > 5 else ''}); a binary problem needs "
                             "exactly two (soft labels in [-1, 1]: train_mixup_sdca(..., soft_labels=True))")
        y_int = np.where(y == classes[1], 1.0, -1.0)
        return np.ascontiguousarray(y_int, dtype=np.float64), classes
    if y.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric for {task} labels; got dtype {y.dtype}")
    y = np.ascontiguousarray(y, dtype=np.float64)
    if not np.isfinite(y).all():
        raise ValueError(f"{name} contains NaN or infinity")
    top = float(np.abs(y).max()) if y.size else 0.0
    if top > 0 and not _usable_scale(top * top * max(n_samples, 1)):
        raise ValueError(f"{name} has values too {'large' if top > 1 else 'small'} for float64 "
                         f"arithmetic (largest |value| {top:.3g}: the squared loss over the "
                         f"rows would {'overflow' if top > 1 else 'underflow'}); rescale {name}")
    if task == "soft":
        if np.abs(y).max() > 1.0:
            raise ValueError(f"{name} must lie in [-1, 1] (soft labels); max |y| = {np.abs(y).max()!r}")
        # snap to the exact labels so that the |y| = 1 code paths trigger (docs/mixup.md)
        y = np.where(np.abs(y) >= 1.0 - 1e-12, np.sign(y), y)
    return y, None


def check_weights(sample_weight, class_weight, codes, classes, n_samples):
    """Per-row loss weights from ``sample_weight`` (n non-negative finite reals) times
    ``class_weight`` (a dict label -> weight >= 0, or ``"balanced"``: n / (k n_c), each
    class weighing as much as the others); None when neither is given. ``codes`` are the
    rows' class indices (None for regression, where class_weight does not apply)."""
    if sample_weight is None and class_weight is None:
        return None
    weight = np.ones(n_samples)
    if sample_weight is not None:
        refuse_masked(sample_weight, "sample_weight")
        sw = np.asarray(sample_weight)
        if sw.dtype.kind not in "biuf":
            raise TypeError(f"sample_weight must be numeric; got dtype {sw.dtype}")
        sw = sw.astype(np.float64).ravel() if sw.ndim <= 2 and 1 in sw.shape[1:] else sw
        if sw.ndim != 1 or sw.shape[0] != n_samples:
            raise ValueError(f"sample_weight has shape {sw.shape} but X has {n_samples} rows")
        if not np.isfinite(sw).all():
            raise ValueError("sample_weight contains NaN or infinity")
        if (sw < 0).any():
            raise ValueError(f"sample_weight must be >= 0; row {int(np.argmax(sw < 0))} has "
                             f"{sw[sw < 0][0]!r}")
        weight *= sw
    if class_weight is not None:
        if codes is None:
            raise ValueError("class_weight applies to classification; this loss regresses "
                             "(use sample_weight)")
        if isinstance(class_weight, str):
            if class_weight != "balanced":
                raise ValueError(f"class_weight must be a dict or 'balanced'; got {class_weight!r}")
            counts = np.bincount(codes, minlength=classes.shape[0]).astype(np.float64)
            per_class = n_samples / (classes.shape[0] * counts)
        elif isinstance(class_weight, dict):
            per_class = np.ones(classes.shape[0])
            known = {c.item() if hasattr(c, "item") else c: j for j, c in enumerate(classes)}
            for label, value in class_weight.items():
                key = label.item() if hasattr(label, "item") else label
                if key not in known:
                    raise ValueError(f"class_weight names the label {label!r}, which is not in "
                                     f"y (classes: {list(known)})")
                v = _finite_float(value, f"class_weight[{label!r}]")
                if v < 0:
                    raise ValueError(f"class_weight[{label!r}] must be >= 0; got {v}")
                per_class[known[key]] = v
        else:
            raise TypeError(f"class_weight must be a dict, 'balanced' or None; got "
                            f"{type(class_weight).__name__}")
        weight *= per_class[codes]
    if not (weight > 0).any():
        raise ValueError("every row has weight zero (sample_weight x class_weight): nothing "
                         "to fit")
    top = float(weight.max())
    if not _usable_scale(top * max(n_samples, 1)):
        raise ValueError(f"the row weights are too large for float64 arithmetic (max {top:.3g})")
    return weight


def check_regularization(lam, C, n_samples, name="lam", allow_zero=False):
    """Resolve ``lam`` / ``C`` (``lam = 1/(C n)``); default ``lam = 1/n``.

    The value must be usable in float64 arithmetic: ``lam n`` and ``1 / (lam n)`` finite and
    normal (a C of 1e308 would give lam = 0, and 1e-320 an infinite lam)."""
    if lam is not None and C is not None:
        raise ValueError("give either lam or C, not both (lam = 1 / (C n))")
    if C is not None:
        C = _finite_float(C, "C")
        if C <= 0:
            raise ValueError(f"C must be > 0; got {C}")
        lam_n = 1.0 / C if C >= 1e-300 else np.inf
        if not _usable_scale(lam_n):
            raise ValueError(f"C = {C!r} is outside the range float64 arithmetic can use "
                             f"(lam = 1/(C n) = {lam_n / n_samples:.3g}); C must lie in "
                             "[1e-300, 1e300]")
        return lam_n / n_samples
    if lam is None:
        return 1.0 / n_samples
    lam = _finite_float(lam, name)
    if lam < 0 or (lam == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}; got {lam}")
    if lam > 0 and not _usable_scale(lam * n_samples):
        raise ValueError(f"{name} = {lam!r} is outside the range float64 arithmetic can use: "
                         f"{name} * n_samples must lie in [1e-300, 1e300]")
    return lam


def _usable_scale(v):
    return 1e-300 <= v <= 1e300


def _finite_float(v, name):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {type(v).__name__}")
    v = float(v)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite; got {v}")
    return v


def check_positive(v, name, allow_zero=False):
    v = _finite_float(v, name)
    if v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}; got {v}")
    return v


# Largest epoch budget: epochs count in C integers, and a larger budget means "until
# converged" anyway.
MAX_EPOCHS = 2**31 - 1


def check_int(v, name, minimum=0, maximum=None):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an integer; got {type(v).__name__}")
    v = int(v)
    if v < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {v}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum}; got {v}")
    return v


def check_budget(v, name="max_epochs", minimum=0):
    """An epoch (or iteration) budget: an integer in [minimum, MAX_EPOCHS]."""
    return check_int(v, name, minimum, MAX_EPOCHS)


def check_seed(seed):
    """An integer seed in [0, 2^64); None draws one from the OS."""
    if seed is None:
        return int(np.random.SeedSequence().entropy % (1 << 64))
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an integer or None; got {type(seed).__name__}")
    seed = int(seed)
    if seed < 0:
        raise ValueError(f"seed must be >= 0; got {seed}")
    return seed % (1 << 64)


def check_choice(v, name, choices):
    if v not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}; got {v!r}")
    return v


def check_loss_param(loss, smoothing=None, epsilon=None):
    """The loss table's ``(loss, param)`` for a known loss name and its keyword parameter:
    ``smoothing`` (smoothed hinge only) or ``epsilon`` (the epsilon-insensitive losses only),
    each validated here once (a ValueError / TypeError names the keyword)."""
    from ._core import losses as _losses
    given = {"smoothing": smoothing, "epsilon": epsilon}
    own = _losses.PARAM_NAME.get(loss)
    for key, value in given.items():
        if value is None or key == own:
            continue
        takers = [name for name, k in _losses.PARAM_NAME.items() if k == key]
        only = " or ".join(f"loss={name!r}" for name in takers)
        raise ValueError(f"{key} applies to {only} only; got loss={loss!r}")
    param = given[own] if own is not None else None
    if param is not None and (isinstance(param, bool) or not isinstance(param, numbers.Real)):
        raise TypeError(f"{own} must be a real number; got {type(param).__name__}")
    return _losses.check_loss(loss, param)


def check_loss_and_labels(loss, smoothing, allowed, y, n_samples, solver, why="",
                          epsilon=None):
    """Validate a loss name among ``allowed`` (and its parameter: ``smoothing`` for the
    smoothed hinge, ``epsilon`` for the epsilon-insensitive losses), then the labels for it:
    real targets for the regression losses, two classes otherwise.
    Returns ``(loss, param, y_checked, classes)`` with ``(loss, param)`` from the loss table."""
    from ._core import losses as _losses
    if not isinstance(loss, str):
        raise TypeError(f"loss must be a string, one of {list(allowed)}; got {type(loss).__name__}")
    if loss not in allowed:
        raise ValueError(f"unknown loss {loss!r} for {solver}: loss must be one of "
                         f"{list(allowed)}" + (f" ({why})" if why else ""))
    loss, param = check_loss_param(loss, smoothing, epsilon)
    task = "regression" if loss in _losses.REGRESSION_LOSSES else "binary"
    y_checked, classes = check_labels(y, n_samples, task)
    return loss, param, y_checked, classes
