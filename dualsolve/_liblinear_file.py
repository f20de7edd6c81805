"""liblinear's text model files: writing them (``Model.save(path, format="liblinear")``) and
reading them (``dualsolve.load_model``), with every field of an untrusted file checked.

The layout (liblinear's ``save_model`` / ``load_model``), one keyword a line::

    solver_type L2R_LR
    nr_class 3
    label 1 2 3                  (classifiers only; liblinear's label order)
    nr_feature 36
    bias -1                      (B >= 0: a constant feature of value B, weights in the last row)
    rho 0.5                      (ONECLASS_SVM only)
    w
    <nr_w numbers>               one line per feature (plus one for the bias when B >= 0)

``nr_w`` is 1 for a binary classifier (its score > 0 means ``label[0]``), a regression or a
one-class model, and ``nr_class`` otherwise (column j scores ``label[j]``; liblinear
predicts the label of the largest score). A two-class MCSVM_CS model has two columns, but
liblinear predicts it by the sign of the first one, so we read that one (and write
``[w, -w]``). Numbers are written with ``%.17g``, so that
reading them back gives the same doubles.

What dualsolve makes of a file (its Model):

- classes in sorted order; a binary model's weights negated when liblinear's ``label[0]``
  is the smaller label, the columns of a multi-class model reordered;
- intercept ``= w[last row] * B`` when ``B >= 0`` (0 otherwise), minus ``rho`` for a
  one-class model, whose classes are -1 and +1;
- ``solver = "liblinear:<solver_type>"``, ``params`` with ``loss`` (dualsolve's name where
  liblinear's loss is one of ours, else a descriptive name or None), ``penalty``, ``bias``
  and ``solver_type``; no history, no dual variables.

Writing: the solver_type of a model read from a liblinear file is kept; otherwise it comes
from ``params["loss"]`` (:data:`SOLVER_TYPE_OF_LOSS`). A classifier whose loss liblinear
does not have (smooth_hinge; the AUC solvers' pairwise squared loss) gets a *nominal* type,
the nearest non-logistic classifier: liblinear predicts the same labels and scores with it,
and refuses probabilities for it, as we do. An intercept is written as ``bias 1`` with the
intercept as the last weight (``bias B`` with ``intercept / B`` when ``params["bias"]`` is B
and that is exact), so that liblinear's ``w_last * B`` is exactly our intercept.

Refused, with a ValueError: kernel models (no weight vector), non-integer class labels
(liblinear's labels are C ints), non-finite weights.
"""
import math
import re

import numpy as np

from ._model_file import _File, short

#: liblinear's solver_type names, by their number (``solver_type_table`` in linear.cpp)
SOLVER_TYPES = {
    0: "L2R_LR", 1: "L2R_L2LOSS_SVC_DUAL", 2: "L2R_L2LOSS_SVC", 3: "L2R_L1LOSS_SVC_DUAL",
    4: "MCSVM_CS", 5: "L1R_L2LOSS_SVC", 6: "L1R_LR", 7: "L2R_LR_DUAL",
    11: "L2R_L2LOSS_SVR", 12: "L2R_L2LOSS_SVR_DUAL", 13: "L2R_L1LOSS_SVR_DUAL",
    21: "ONECLASS_SVM"}
REGRESSION_TYPES = ("L2R_L2LOSS_SVR", "L2R_L2LOSS_SVR_DUAL", "L2R_L1LOSS_SVR_DUAL")
PROBABILITY_TYPES = ("L2R_LR", "L2R_LR_DUAL", "L1R_LR")      # liblinear's predict -b 1
#: the loss recorded in params when reading a file of each type (None: no loss of ours)
LOSS_OF_SOLVER_TYPE = {
    "L2R_LR": "logistic", "L2R_LR_DUAL": "logistic", "L1R_LR": "logistic",
    "L2R_L2LOSS_SVC_DUAL": "squared_hinge", "L2R_L2LOSS_SVC": "squared_hinge",
    "L1R_L2LOSS_SVC": "squared_hinge", "L2R_L1LOSS_SVC_DUAL": "hinge",
    # epsilon-insensitive SVR: our "squared" only when liblinear's -p was 0, which the file
    # does not record
    "L2R_L2LOSS_SVR": "squared_epsilon_insensitive",
    "L2R_L2LOSS_SVR_DUAL": "squared_epsilon_insensitive",
    "L2R_L1LOSS_SVR_DUAL": "epsilon_insensitive",
    "MCSVM_CS": None, "ONECLASS_SVM": None}
#: the solver_type written for a classifier (or, "squared", a regression model) of each loss;
#: smooth_hinge and the AUC solvers' squared loss are nominal (see the module docstring)
SOLVER_TYPE_OF_LOSS = {
    "logistic": "L2R_LR", "squared_hinge": "L2R_L2LOSS_SVC_DUAL",
    "hinge": "L2R_L1LOSS_SVC_DUAL", "smooth_hinge": "L2R_L1LOSS_SVC_DUAL",
    "squared": "L2R_L2LOSS_SVR_DUAL",
    "squared_epsilon_insensitive": "L2R_L2LOSS_SVR_DUAL",
    "epsilon_insensitive": "L2R_L1LOSS_SVR_DUAL"}
NOMINAL_CLASSIFIER_TYPE = {"squared": "L2R_L2LOSS_SVC_DUAL"}    # AUC: a pairwise squared loss
INT_MAX = 2 ** 31 - 1           # liblinear reads nr_class, nr_feature and labels with %d
_INT = re.compile(r"[+-]?[0-9]+\Z")
# what C's strtod reads (decimal; inf and nan are matched to be refused as such)
_FLOAT = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                    r"|inf(?:inity)?|nan)\Z", re.IGNORECASE)


# ------------------------------------------------------------------------------ writing

def write_liblinear(model, path):
    """Write ``model`` to ``path`` in liblinear's model format (see the module docstring)."""
    from .model import Model
    if type(model).decision_function is not Model.decision_function:
        raise ValueError(f"a {type(model).__name__} cannot be written as a liblinear model: "
                         "its scores are not x.w + b (liblinear files hold linear models only)")
    coef = model.coef
    if not (np.isfinite(coef).all() and np.isfinite(model.intercept).all()):
        raise ValueError("the model's coef or intercept contains NaN or infinity (a diverged "
                         "run?); a liblinear model file cannot hold it")
    if coef.shape[-1] > INT_MAX:
        raise ValueError(f"liblinear model files hold at most {INT_MAX} features; this model "
                         f"has {coef.shape[-1]}")
    stype = _solver_type_for(model)
    classes = model.classes
    if stype == "ONECLASS_SVM":                     # classes -1, +1; no label line
        if classes is None or len(classes) != 2 or _int_labels(classes) != [-1, 1]:
            raise ValueError("a ONECLASS_SVM model file needs classes -1 and +1")
        labels, W, b = None, coef[:, None], np.zeros(1)
    elif classes is None:                           # regression
        labels, W, b = None, coef[:, None], np.array([model.intercept])
    elif coef.ndim == 1 and stype != "MCSVM_CS":    # binary: score > 0 means label[0]
        labels = [classes[1], classes[0]]
        W, b = coef[:, None], np.array([model.intercept])
    elif coef.ndim == 1:
        # Crammer-Singer keeps a column per class even for two, but liblinear predicts a
        # two-class model by the sign of the first column alone: [w, -w], as its own
        # solver's two columns are (up to rounding)
        labels = [classes[1], classes[0]]
        W = np.column_stack([coef, -coef])
        b = np.array([model.intercept, -model.intercept])
    else:                                           # multi-class: our (sorted) class order
        labels, W, b = list(classes), coef.T, np.asarray(model.intercept)
    if labels is not None:
        labels = _int_labels(labels)
    bias = -1.0
    if np.any(b != 0.0):
        bias = 1.0
        B = model.params.get("bias")
        if isinstance(B, (int, float)) and not isinstance(B, bool) and 0 < B < math.inf \
                and np.array_equal((b / B) * B, b):
            bias = float(B)
        W = np.vstack([W, b / bias])
    lines = [f"solver_type {stype}", f"nr_class {2 if classes is None else len(classes)}"]
    if labels is not None:
        lines.append("label " + " ".join(str(v) for v in labels))
    lines += [f"nr_feature {coef.shape[-1]}", f"bias {bias:.17g}"]
    if stype == "ONECLASS_SVM":
        lines.append(f"rho {-model.intercept:.17g}")
    lines.append("w")
    text = "\n".join(lines) + "\n"
    body = "".join(" ".join(format(v, ".17g") for v in row) + " \n" for row in W.tolist())
    with open(path, "w", encoding="ascii", newline="\n") as fh:
        fh.write(text)
        fh.write(body)


def _solver_type_for(model):
    solver = model.solver if isinstance(model.solver, str) else ""
    if solver.startswith("liblinear:"):             # read from a liblinear file: keep it
        stype = solver[len("liblinear:"):]
        if stype in SOLVER_TYPES.values():
            regression = stype in REGRESSION_TYPES
            if regression == (model.classes is None):
                return stype
    loss = model.params.get("loss")
    if model.params.get("multi_class") == "crammer_singer" and model.classes is not None:
        return "MCSVM_CS"
    if model.classes is None:
        if loss in ("squared", "squared_epsilon_insensitive", "epsilon_insensitive"):
            return SOLVER_TYPE_OF_LOSS[loss]
        raise ValueError(f"no liblinear solver_type for a regression model with loss "
                         f"{short(loss)}; liblinear's regressions are L2R_L2LOSS_SVR(_DUAL) "
                         "and L2R_L1LOSS_SVR_DUAL")
    if loss in NOMINAL_CLASSIFIER_TYPE:
        return NOMINAL_CLASSIFIER_TYPE[loss]
    if loss in SOLVER_TYPE_OF_LOSS and SOLVER_TYPE_OF_LOSS[loss] not in REGRESSION_TYPES:
        return SOLVER_TYPE_OF_LOSS[loss]
    raise ValueError(f"no liblinear solver_type for a classifier with loss {short(loss)}; "
                     f"known losses: {', '.join(sorted(SOLVER_TYPE_OF_LOSS))}")


def _int_labels(labels):
    out = []
    for v in labels:
        try:
            x = math.nan if isinstance(v, (str, bytes, np.str_)) else float(v)
        except (TypeError, ValueError):
            x = math.nan
        if not (x.is_integer() and -INT_MAX - 1 <= x <= INT_MAX):
            raise ValueError(f"liblinear model files hold integer class labels (C int); "
                             f"this model's classes are {short([str(c) for c in labels])}")
        out.append(int(x))
    return out


# ------------------------------------------------------------------------------ reading

def is_liblinear_file(path):
    """True when the file's first word is ``solver_type`` (liblinear's first line)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError:
        return False                    # let the .npz reader raise its error
    return head.split(None, 1)[:1] == [b"solver_type"]


def read_liblinear(path):
    """The keyword arguments of a :class:`dualsolve.Model` read from a liblinear model file;
    a ValueError naming the file and the field for anything liblinear would not have
    written (liblinear's loader reads the same words; see the module docstring)."""
    f = _File(path)
    with open(f.name, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        raise f.fail(None, f"is not a liblinear model file (byte {exc.start} is not ASCII "
                           "text)") from None
    tokens = text.split()
    header, k = {}, 0
    while True:
        if k >= len(tokens):
            raise f.fail("w", "is missing (a truncated liblinear model file?)")
        key = tokens[k]
        k += 1
        if key == "w":
            break
        if key not in ("solver_type", "nr_class", "label", "nr_feature", "bias", "rho"):
            raise f.fail(key if len(key) <= 40 else key[:37] + "...",
                         "is not a keyword of a liblinear model file (solver_type, nr_class, "
                         "label, nr_feature, bias, rho, w)")
        if key in header:
            raise f.fail(key, "appears twice")
        if key == "label":
            if "nr_class" not in header:
                raise f.fail("label", "comes before nr_class (liblinear reads nr_class "
                                      "labels)")
            n = header["nr_class"]
            values = tokens[k:k + n]
            k += n
        else:
            values = tokens[k:k + 1]
            k += 1
        if key == "label" and len(values) < header["nr_class"]:
            raise f.fail(key, f"has {len(values)} labels but nr_class is "
                              f"{header['nr_class']} (truncated?)")
        if not values:
            raise f.fail(key, "has no value (truncated?)")
        header[key] = _header_value(f, key, values)
    for key in ("solver_type", "nr_class", "nr_feature", "bias"):
        if key not in header:
            raise f.fail(key, "is missing")
    stype, nr_class, d, bias = (header[k_] for k_ in ("solver_type", "nr_class",
                                                       "nr_feature", "bias"))
    single = stype in REGRESSION_TYPES or stype == "ONECLASS_SVM"
    if single:
        if nr_class != 2:
            raise f.fail("nr_class", f"is {nr_class}; a {stype} model has nr_class 2")
        if "label" in header:
            raise f.fail("label", f"is not part of a {stype} model (liblinear writes none)")
    elif "label" not in header:
        raise f.fail("label", f"is missing (a {stype} classifier needs its labels)")
    if ("rho" in header) != (stype == "ONECLASS_SVM"):
        raise f.fail("rho", "is missing (a ONECLASS_SVM model needs it)" if "rho" not in header
                     else f"is not part of a {stype} model")
    nr_w = 1 if single or (nr_class == 2 and stype != "MCSVM_CS") else nr_class
    rows = d + 1 if bias >= 0 else d
    # counted before anything is allocated: a header claiming 10**9 features over a few
    # numbers is refused here, whatever it claims
    held = len(tokens) - k
    if held != rows * nr_w:
        raise f.fail("w", f"holds {held} numbers but nr_feature {d}"
                          f"{' + 1 bias row' if bias >= 0 else ''} x {nr_w} column"
                          f"{'s' if nr_w > 1 else ''} need {rows * nr_w} (truncated or "
                          "damaged?)")
    for j, t in enumerate(tokens[k:]):
        if not _FLOAT.match(t):
            raise f.fail("w", f"has a non-numeric entry {short(t)} (row {j // nr_w + 1})")
    W = np.array(tokens[k:], dtype=np.float64).reshape(rows, nr_w)
    if not np.isfinite(W).all():
        j = int(np.flatnonzero(~np.isfinite(W.ravel()))[0])
        raise f.fail("w", f"contains NaN or infinity (row {j // nr_w + 1})")
    if bias >= 0:
        W, b = W[:d], W[d] * bias
    else:
        b = np.zeros(nr_w)
    rho = header.get("rho", 0.0)
    params = dict(loss=LOSS_OF_SOLVER_TYPE[stype],
                  penalty="l1" if stype.startswith("L1R") else "l2",
                  bias=bias, solver_type=stype)
    kwargs = dict(solver=f"liblinear:{stype}", params=params, stop_reason="converged")
    if stype in REGRESSION_TYPES:
        return dict(kwargs, coef=W[:, 0].copy(), intercept=float(b[0]))
    if stype == "ONECLASS_SVM":
        return dict(kwargs, coef=W[:, 0].copy(), intercept=float(b[0] - rho),
                    classes=np.array([-1.0, 1.0]))
    labels = np.array(header["label"], dtype=np.float64)
    order = np.argsort(labels)
    classes = labels[order]
    if nr_class == 2:
        # score > 0 means label[0]; for Crammer-Singer's two columns too, since liblinear's
        # predict_values decides any two-class model by the first column's sign
        sign = 1.0 if labels[0] == classes[1] else -1.0
        return dict(kwargs, coef=sign * W[:, 0], intercept=float(sign * b[0]),
                    classes=classes)
    return dict(kwargs, coef=np.ascontiguousarray(W[:, order].T), intercept=b[order],
                classes=classes)


def _header_value(f, key, values):
    if key == "solver_type":
        v = values[0]
        if v not in SOLVER_TYPES.values():
            raise f.fail(key, f"is {short(v)}, not one of liblinear's "
                              f"({', '.join(SOLVER_TYPES.values())})")
        return v
    if key in ("nr_class", "nr_feature", "label"):
        out = []
        for v in values:
            if not _INT.match(v) or len(v) > 20 or not -INT_MAX - 1 <= int(v) <= INT_MAX:
                raise f.fail(key, f"must be an integer in [{-INT_MAX - 1}, {INT_MAX}] "
                                  f"(liblinear's int); got {short(v)}")
            out.append(int(v))
        if key == "nr_class" and out[0] < 2:
            raise f.fail(key, f"is {out[0]}; a model needs 2 or more classes")
        if key == "nr_feature" and out[0] < 0:
            raise f.fail(key, f"is {out[0]}; must be >= 0")
        if key == "label" and len(set(out)) != len(out):
            raise f.fail(key, f"holds the same label twice ({short(out)})")
        return out if key == "label" else out[0]
    v = values[0]                                   # bias, rho: finite reals
    if not _FLOAT.match(v) or not math.isfinite(float(v)):
        raise f.fail(key, f"must be a finite number; got {short(v)}")
    return float(v)


def liblinear_label_order(model):
    """The label order of the file ``Model.save(format="liblinear")`` writes, which
    ``dualsolve predict -b 1`` also uses: binary ``[classes[1], classes[0]]`` (liblinear's
    first label is the one a positive score predicts), multi-class ``classes``. Returns
    the column indices into ``classes``."""
    k = len(model.classes)
    return [1, 0] if k == 2 else list(range(k))

