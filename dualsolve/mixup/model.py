"""The mixup family's model: a kernel expansion over the (mixup-augmented) training points,
and the checks of its model files (``dualsolve.load_model``)."""
import warnings

import numpy as np
import scipy.sparse as sp

from .._model_file import dual_length, floats, group, ints, is_int, is_real, short, INT64_MAX
from ..model import Model, check_predict_input, register_model_class

KERNELS = ("linear", "rbf", "poly", "precomputed")
# a kernel model's extra arrays: its training rows and its mixup plan
X_KEYS = ("X_data", "X_indices", "X_indptr", "X_shape")
PLAN_KEYS = ("plan_a", "plan_b", "plan_r", "plan_n_orig")


@register_model_class
class KernelModel(Model):
    """A kernel model ``f(x) = sum_p dual_p k(x, x_p) / (lam n)`` over the (mixup-augmented)
    training points ``x_p``, kept as the original rows plus the mixup plan (``extra``), so
    mixed points are never materialised. ``coef`` is empty; ``n_features`` that of X."""

    file_needs_finite = True        # predict sums over the dual variables

    @classmethod
    def check_file(cls, f, meta, coef, extra, dual):
        if coef.size != 0:
            raise f.fail("coef", "must be empty for a KernelModel")
        _check_kernel_file(f, meta, extra, dual)

    @staticmethod
    def training_arrays(X_orig, plan, lam_n):
        """The extra arrays of a kernel model: lam n, the original rows (None for a
        precomputed kernel) and the mixup plan (None without mixed points)."""
        extra = dict(lam_n=np.array(float(lam_n)))
        if X_orig is not None:
            X = sp.csr_matrix(X_orig)
            extra.update(X_data=X.data, X_indices=X.indices, X_indptr=X.indptr,
                         X_shape=np.array(X.shape, dtype=np.int64))
        if plan is not None:
            extra.update(plan_a=plan.a, plan_b=plan.b, plan_r=plan.r,
                         plan_n_orig=np.array(int(plan.n_orig)))
        return extra

    @property
    def n_features(self):
        return int(self.extra["X_shape"][1]) if "X_shape" in self.extra else -1

    def _kernel(self):
        from dualsolve._core.kernels import make_kernel
        p = self.params
        if p["kernel"] in ("linear", "precomputed"):
            return make_kernel(p["kernel"])
        return make_kernel(p["kernel"], p["kernel_gamma"], p["coef0"], int(p["degree"]))

    def decision_function(self, X):
        """Scores of new points. For kernel="precomputed", X is the kernel matrix between
        the new points and the augmented training points, shape (n_new, n)."""
        from dualsolve._core.kernels import augmented_kernel_matrix
        dual, lam_n = self.dual, float(self.extra["lam_n"])
        if self.params["kernel"] == "precomputed":
            Kn = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
            if Kn.ndim != 2 or Kn.shape[1] != dual.shape[0]:
                raise ValueError(f"X must be the kernel matrix between new points and the "
                                 f"{dual.shape[0]} training points; got shape {Kn.shape}")
            return Kn @ dual / lam_n
        Xc = check_predict_input(X, self.n_features)
        if Xc is None:
            return np.zeros(0)
        X = Xc.source
        Xo = sp.csr_matrix((self.extra["X_data"], self.extra["X_indices"],
                            self.extra["X_indptr"]), shape=tuple(self.extra["X_shape"]))
        plan = None
        if "plan_a" in self.extra:
            from .augment import MixupPlan
            plan = MixupPlan(self.extra["plan_a"], self.extra["plan_b"], self.extra["plan_r"],
                             int(self.extra["plan_n_orig"]))
        # one-vs-rest: a column of dual variables per class over the same training points
        support = np.flatnonzero(dual if dual.ndim == 1 else np.any(dual != 0, axis=1))
        if support.size == 0:
            return np.zeros((X.shape[0],) + dual.shape[1:])
        K = augmented_kernel_matrix(X, Xo, plan, support, self._kernel())
        return K @ dual[support] / lam_n


def _check_kernel_file(f, meta, extra, dual):
    params = meta["params"]
    kernel = _kernel_params(f, params)
    for k in extra:
        if k not in ("lam_n",) + X_KEYS + PLAN_KEYS:
            raise f.fail("extra__" + k, "is not an extra array of a KernelModel")
    if "lam_n" not in extra:
        raise f.fail("extra__lam_n", "is missing")
    lam_n = floats(f, "extra__lam_n", extra["lam_n"], 0)
    if not lam_n > 0:
        raise f.fail("extra__lam_n", f"must be > 0 (got {float(lam_n)})")
    extra["lam_n"] = lam_n
    if dual is None:
        raise f.fail("dual", "is missing (a KernelModel predicts from its dual variables)")
    have_x, have_plan = group(f, extra, X_KEYS), group(f, extra, PLAN_KEYS)
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
        dual_length(f, dual, n, "the number of training points (rows + mixed)")
    if is_int(params.get("n_augmented")) and params["n_augmented"] != n:
        raise f.fail("meta.params.n_augmented", f"is {params['n_augmented']} but the model "
                                                f"has {n} training points")


def _kernel_params(f, params):
    kernel = params.get("kernel")
    if kernel not in KERNELS:
        raise f.fail("meta.params.kernel", f"must be one of {list(KERNELS)} (got "
                                           f"{short(kernel)})")
    if kernel in ("rbf", "poly") and not (is_real(params.get("kernel_gamma")) and params["kernel_gamma"] > 0):
        raise f.fail("meta.params.kernel_gamma", f"must be a finite number > 0 (got "
                                          f"{short(params.get('gamma'))})")
    # KernelModel._kernel reads kernel_gamma, coef0 and int(degree) for rbf as for poly
    if kernel in ("rbf", "poly") and not is_real(params.get("coef0")):
        raise f.fail("meta.params.coef0", f"must be a finite number (got "
                                          f"{short(params.get('coef0'))})")
    if kernel in ("rbf", "poly"):
        if not (is_int(params.get("degree")) and 0 <= params["degree"] < 2 ** 31):
            raise f.fail("meta.params.degree", f"must be an integer in [0, 2**31) (got "
                                               f"{short(params.get('degree'))})")
    return kernel


def _csr(f, extra):
    """Check the stored training rows (the CSR arrays and shape); ``(n_rows, n_cols)``."""
    shape = ints(f, "extra__X_shape", extra["X_shape"], 1)
    if shape.shape != (2,) or shape[0] < 1:
        raise f.fail("extra__X_shape", f"must be 2 integers (n_rows >= 1, n_cols) (got "
                                       f"{short(shape.tolist())})")
    n, d = int(shape[0]), int(shape[1])
    data = floats(f, "extra__X_data", extra["X_data"], 1, dtype=extra["X_data"].dtype)
    if data.dtype not in (np.float32, np.float64):
        raise f.fail("extra__X_data", f"must be float32 or float64 (got {data.dtype})")
    indices = ints(f, "extra__X_indices", extra["X_indices"], 1, 0, d)
    indptr = ints(f, "extra__X_indptr", extra["X_indptr"], 1, 0, INT64_MAX)
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
    from .._validation import check_csr
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
    n_o = ints(f, "extra__plan_n_orig", extra["plan_n_orig"], 0)
    if int(n_o) != n_orig:
        raise f.fail("extra__plan_n_orig", f"is {int(n_o)} but extra__X_shape has {n_orig} rows")
    a = ints(f, "extra__plan_a", extra["plan_a"], 1, 0, n_orig)
    b = ints(f, "extra__plan_b", extra["plan_b"], 1, 0, n_orig)
    r = floats(f, "extra__plan_r", extra["plan_r"], 1)
    if not a.shape == b.shape == r.shape:
        raise f.fail("extra__plan_b", f"lengths differ: plan_a {a.shape[0]}, plan_b "
                                      f"{b.shape[0]}, plan_r {r.shape[0]}")
    if r.size and not (r.min() >= 0.0 and r.max() <= 1.0):
        raise f.fail("extra__plan_r", "has mixing ratios outside [0, 1]")
    extra["plan_r"] = r
    return a.shape[0]
