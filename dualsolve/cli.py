"""The ``dualsolve`` command: ``train``, ``predict``, ``solvers`` and ``demo``, with
liblinear's habits.

::

    dualsolve train [-s solver] [-l loss] [-c C | --lam L] [-e tol] [-p epsilon] [-B bias]
                    [-wi weight ...] [-m max_epochs] [--seed S] [--no-shrinking]
                    [-o NAME=VALUE ...] [-v n | -C] [--verbose | -q] data_file [model_file]
    dualsolve predict [-b {0,1}] [-q] data_file model_file output_file
    dualsolve solvers [name]
    dualsolve demo [--quick] [--seed S]

Every solver of the package is reachable by name (``-s``); the list, each solver's losses
and options come from the solver descriptions of ``dualsolve._driver`` (the same ones the
Python functions run on).

Also ``python -m dualsolve``. :func:`main` returns the exit status: 0 on success, 2 on a
usage or input error (one line on stderr starting with ``dualsolve: error:``), 130 on Ctrl-C.
See docs/cli.md.
"""
import argparse
import inspect
import lzma
import math
import os
import sys
import time
import warnings
import zipfile
import zlib

import numpy as np
import scipy.sparse as sp

import dualsolve

DEFAULT_SOLVER = "sdca"
DEFAULT_LOSS = "logistic"


def solver_table():
    """Every solver description (dualsolve._driver), by name."""
    from dualsolve._driver import solvers
    return solvers()


def all_losses():
    seen = []
    for s in solver_table().values():
        seen += [loss for loss in s.losses if loss not in seen]
    return tuple(seen)


# liblinear -s numbers whose objective is exactly ours with lam = 1/(C n): the same loss and
# L2 regularisation, so liblinear's optimum and ours coincide. The numbers run
# train_linear, which goes on from SDCA to Newton where SDCA is slow (the rule of
# dualsolve.linear, SWITCH_EPOCHS; liblinear's own dual solvers -s 1 and -s 7 fall back to
# its primal Newton too), except the hinge's numbers (3, and Crammer-Singer's 4), which
# that rule leaves to SDCA anyway: they run train_sdca.
LIBLINEAR_SOLVERS = {
    0: ("linear", "logistic"),      # L2-regularised logistic regression (primal)
    1: ("linear", "squared_hinge"),  # L2-regularised L2-loss SVC (dual)
    2: ("linear", "squared_hinge"),  # L2-regularised L2-loss SVC (primal)
    3: ("sdca", "hinge"),           # L2-regularised L1-loss SVC (dual)
    4: ("sdca", "hinge"),           # Crammer-Singer multi-class SVM (-o multi_class=...)
    7: ("linear", "logistic"),      # L2-regularised logistic regression (dual)
    11: ("linear", "squared_epsilon_insensitive"),  # L2-regularised L2-loss SVR (primal)
    12: ("linear", "squared_epsilon_insensitive"),  # L2-regularised L2-loss SVR (dual)
    13: ("linear", "epsilon_insensitive"),          # L2-regularised L1-loss SVR (dual)
}
#: options a liblinear number implies beyond its solver and loss
LIBLINEAR_OPTIONS = {4: {"multi_class": "crammer_singer"}}
# liblinear -s numbers with no equivalent here, and why.
LIBLINEAR_REJECTED = {
    5: "liblinear -s 5 is L1-regularised; dualsolve's objectives are L2-regularised",
    6: "liblinear -s 6 is L1-regularised; dualsolve's objectives are L2-regularised",
    21: "liblinear -s 21 is the one-class SVM, which dualsolve does not have",
}

_COMPRESSED = (".xz", ".gz", ".bz2")
_READ_ERRORS = (OSError, ValueError, EOFError, lzma.LZMAError, zlib.error)


class CLIError(Exception):
    """An error reported as ``dualsolve: error: <message>`` with exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but errors become one line (no usage block) through :class:`CLIError`."""

    def error(self, message):
        raise CLIError(f"{message} (see '{self.prog} -h')")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog):
        super().__init__(prog, max_help_position=28, width=92)


# ------------------------------------------------------------------------------ options

def _number(text, kind=float):
    try:
        v = kind(text)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if kind is float and not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
    return v


def _positive_float(text):
    v = _number(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return v


def _nonnegative_float(text):
    v = _number(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return v


def _nonnegative_int(text):
    v = _number(text, int)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return v


def _n_jobs(text):
    v = _number(text, int)
    if v == 0:
        raise argparse.ArgumentTypeError("must be a number of threads >= 1, or -1 for every "
                                         "core; got 0")
    return v


def _solver(text):
    """``-s``: a solver name, or a liblinear number mapped to ``(solver, loss, options)``."""
    name = text.strip().lower()
    if name.startswith("train_"):
        name = name[len("train_"):]
    table = solver_table()
    if name in table:
        return name, None, {}
    try:
        number = int(name)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"unknown solver {text!r}; expected one of {', '.join(table)} or a liblinear "
            f"number {', '.join(map(str, LIBLINEAR_SOLVERS))} (see 'dualsolve solvers')") from None
    if number in LIBLINEAR_SOLVERS:
        return LIBLINEAR_SOLVERS[number] + (LIBLINEAR_OPTIONS.get(number, {}),)
    if number in LIBLINEAR_REJECTED:
        raise argparse.ArgumentTypeError(LIBLINEAR_REJECTED[number])
    raise argparse.ArgumentTypeError(
        f"liblinear has no solver {number}; the numbers dualsolve maps are "
        f"{', '.join(map(str, LIBLINEAR_SOLVERS))}")


def signature_default(solver, name):
    """The default of ``name`` in ``train_<solver>``'s signature (None if it has none)."""
    fn = getattr(dualsolve, "train_" + solver, None)
    p = None if fn is None else inspect.signature(fn).parameters.get(name)
    return None if p is None or p.default is inspect.Parameter.empty else p.default


def _folds_flag(text):
    v = _number(text, int)
    if v < 2:
        raise argparse.ArgumentTypeError(f"n-fold cross-validation needs n >= 2, got {text!r}")
    return v


def _option(text):
    """``-o NAME=VALUE``: a solver option; the value read as None, a bool, an int, a float
    or else a string (the solver's description validates it)."""
    name, sep, raw = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    raw = raw.strip()
    low = raw.lower()
    if low == "none":
        value = None
    elif low in ("true", "false"):
        value = low == "true"
    else:
        try:
            value = int(raw)
        except ValueError:
            try:
                value = float(raw)
            except ValueError:
                value = raw
    return name.strip(), value


# ------------------------------------------------------------------------------ parser

_TRAIN_DESCRIPTION = """\
Train a linear model on a LIBSVM-format file (plain, .xz, .gz or .bz2) and save it.

Objective, with n training instances and no intercept unless -B is given:

    min_w  P(w) = (1/n) sum_i loss(y_i, x_i.w) + (lam/2) ||w||^2

liblinear writes the same problem as (1/2)||w||^2 + C sum_i loss(y_i, x_i.w): the two have
the same minimiser when lam = 1/(C n), i.e. C = 1/(lam n). Default: C = 1 (lam = 1/n).

Losses, with margin m = y x.w (labels: two values, the larger one is the positive class
+1; more than two: one-vs-rest, one binary problem per class):
  logistic       log(1 + exp(-m))                     liblinear -s 0 / -s 7
  squared_hinge  max(0, 1 - m)^2                      liblinear -s 1 / -s 2
  hinge          max(0, 1 - m)                        liblinear -s 3
  smooth_hinge   1 - m - 1/4 if m < 1/2; (1 - m)^2 if 1/2 <= m < 1; 0 if m >= 1
  squared        (y - x.w)^2 / 2, y real (ridge regression)
  squared_epsilon_insensitive   max(0, |y - x.w| - p)^2   liblinear -s 11 / -s 12
  epsilon_insensitive           max(0, |y - x.w| - p)     liblinear -s 13

liblinear numbers for -s: 0 and 7 (logistic), 1 and 2 (squared_hinge), 3 (hinge), 4
(Crammer-Singer, hinge), 11 and 12 (squared_epsilon_insensitive), 13 (epsilon_insensitive,
with -p) are the same objective as liblinear's, so the same model up to the tolerance. Not
mapped, with an error: 5 and 6 (L1 regularisation), 21 (one-class SVM).
"""

_TRAIN_EPILOG = """\
output: unless -q, one line: epochs, final primal objective P(w), duality gap (an upper
bound on P(w) - P*), seconds, and whether the tolerance was met.

example:
  dualsolve train -s 3 -c 4 -B 1 heart_scale      # writes ./heart_scale.model
"""

_PREDICT_DESCRIPTION = """\
Predict the instances of a LIBSVM-format file with a model written by 'dualsolve train'
(or by Model.save), or with a liblinear model file (liblinear's 'train', or
Model.save(path, format="liblinear")), writing one prediction per line to output_file: the
original label values for a classifier (integers written as integers: 1, -1; a multi-class
model predicts the class of the largest score), real numbers for a regression model.

Then prints, unless -q, the accuracy for a classifier,
    Accuracy = 84.98% (13836/16281)
or, for a regression model (loss squared), like liblinear:
    Mean squared error = 0.0412 (regression)
    Squared correlation coefficient = 0.4213 (regression)

Features the model has not seen (indices beyond the training data's) are ignored, with a
warning, as liblinear does; a file with fewer features is padded with zeros.
"""

_DEMO_DESCRIPTION = """\
Train on the data sets bundled with dualsolve and print one row per run: data set, solver,
loss, tolerance, epochs, training seconds, final objective P(w) and duality gap, and the test
accuracy (test R^2 for regression). All runs use C = 1 (lam = 1/n).

  a9a -> a9a.t          logistic, squared_hinge, hinge (the LIBSVM train/test split; no -B)
  heart_scale, spambase, magic04, mammography    logistic, seeded 70/30 split, -B 1
  kin8nm                squared loss (ridge), seeded 70/30 split, -B 1

The dense UCI sets (all but a9a and heart_scale, which LIBSVM ships scaled) are
standardised column by column with the mean and standard deviation of the training part
(constant columns are left unscaled), and the same map is applied to the test part.
"""


def build_parser():
    """The argparse parser of the ``dualsolve`` command."""
    parser = _Parser(
        prog="dualsolve", formatter_class=_HelpFormatter,
        description="Dual and primal-dual solvers for L2-regularised linear models, with "
                    "liblinear-like commands.",
        epilog="Run 'dualsolve <command> -h' for the options of each command.")
    parser.add_argument("--version", action="version", version=f"dualsolve {dualsolve.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="command", parser_class=_Parser)

    tol_default = signature_default(DEFAULT_SOLVER, "tol")
    epochs_default = signature_default(DEFAULT_SOLVER, "max_epochs")
    seed_default = signature_default(DEFAULT_SOLVER, "seed")
    losses = all_losses()

    t = sub.add_parser("train", help="train a model on a LIBSVM-format file",
                       description=_TRAIN_DESCRIPTION, epilog=_TRAIN_EPILOG,
                       formatter_class=_HelpFormatter)
    t.add_argument("-s", dest="solver", type=_solver, default=None, metavar="solver",
                   help="a solver name (every train_* of the package; 'dualsolve solvers' "
                        "lists them with their losses and options), or a liblinear number "
                        f"0, 1, 2, 3, 4, 7, 11, 12, 13 (see above). Default: {DEFAULT_SOLVER} with "
                        f"{DEFAULT_LOSS} loss")
    t.add_argument("-l", dest="loss", choices=losses, default=None, metavar="loss",
                   help=f"loss: {', '.join(losses)}, as the solver accepts (default: the "
                        f"solver's first, {DEFAULT_LOSS} for sdca, or the loss of the "
                        "liblinear number given to -s)")
    reg = t.add_mutually_exclusive_group()
    reg.add_argument("-c", dest="C", type=_positive_float, default=None, metavar="C",
                     help="liblinear's cost C > 0; lam = 1/(C n) (default: 1)")
    reg.add_argument("--lam", dest="lam", type=_positive_float, default=None, metavar="L",
                     help="L2 strength lam > 0, instead of -c (default: 1/n)")
    t.add_argument("-e", dest="tol", type=_nonnegative_float, default=None, metavar="tol",
                   help="stop when the duality gap is <= tol * D, D the dual value (a "
                        "lower bound on the optimum P*), so (P - P*)/P* <= tol (default: "
                        f"{tol_default:g}). Not liblinear's -e, which bounds a gradient norm")
    t.add_argument("-B", dest="bias", type=_number, default=-1.0, metavar="bias",
                   help="if bias > 0, append a constant feature of value bias to every "
                        "instance, whose weight (regularised like the others) gives the "
                        "intercept bias * w_bias, as liblinear's -B; if bias <= 0, no "
                        "intercept (default: -1)")
    t.add_argument("-p", dest="epsilon", type=_nonnegative_float, default=None, metavar="epsilon",
                   help="the epsilon of the epsilon-insensitive losses (-s 11, 12, 13), as "
                        "liblinear's -p (default: 0.1)")
    t.add_argument("-m", dest="max_epochs", type=_nonnegative_int, default=None,
                   metavar="max_epochs",
                   help=f"maximum number of passes over the data (default: {epochs_default})")
    t.add_argument("-n", dest="n_jobs", type=_n_jobs, default=None,
                   metavar="threads",
                   help="threads, as liblinear-multicore's -m (-1: every core; default 1): "
                        "one-vs-rest classes side by side, sdca's passes and gap checks")
    t.add_argument("--seed", dest="seed", type=_nonnegative_int, default=None, metavar="S",
                   help="seed of the random row order; the same seed gives the same model "
                        f"(default: {seed_default})")
    t.add_argument("--no-shrinking", dest="shrinking", action="store_const", const=False,
                   default=None,
                   help="do not drop rows stuck at a bound of the dual (hinge-type losses; "
                        "sdca)")
    t.add_argument("-o", dest="options", type=_option, action="append", default=[],
                   metavar="NAME=VALUE",
                   help="a solver option by its Python name, e.g. -o batch_size=8 -o "
                        "check_every=auto (repeatable; 'dualsolve solvers NAME' lists them)")
    t.add_argument("-w", dest="class_weight", action="append", default=[], metavar="i weight",
                   help="-wi weight: multiply the loss of the rows of class i by weight, as "
                        "liblinear's -wi (repeatable, e.g. -w1 5 -w-1 0.5)")
    mode = t.add_mutually_exclusive_group()
    mode.add_argument("-v", dest="folds", type=_folds_flag, default=None, metavar="n",
                      help="n-fold cross-validation (n >= 2, stratified, seeded by --seed): "
                           "prints the accuracy (regression: the mean squared error and the "
                           "squared correlation) and saves no model, as liblinear's -v n")
    mode.add_argument("-C", dest="find_C", action="store_true",
                      help="find the best C by 5-fold cross-validation (or -v n) along a "
                           "warm-started path C = 2^k up to 1024 from liblinear's starting "
                           "C; prints each C's score and the best, saves no model")
    out = t.add_mutually_exclusive_group()
    out.add_argument("--verbose", dest="verbose", action="store_true",
                     help="print one line per epoch: primal, dual, gap, active rows, seconds")
    out.add_argument("-q", dest="quiet", action="store_true",
                     help="quiet: print nothing, not even warnings")
    t.add_argument("data_file", help="training data, LIBSVM format (.xz, .gz, .bz2 allowed)")
    t.add_argument("model_file", nargs="?", default=None,
                   help="where to save the model (default: the data file's name, without "
                        "a .xz/.gz/.bz2 suffix, plus '.model', in the current directory)")
    t.set_defaults(run=_cmd_train)

    p = sub.add_parser("predict", help="predict a LIBSVM-format file with a saved model",
                       description=_PREDICT_DESCRIPTION, formatter_class=_HelpFormatter)
    p.add_argument("-b", dest="probability", type=int, choices=(0, 1), default=0,
                   metavar="{0,1}",
                   help="1: write probability estimates, for logistic models only, as "
                        "liblinear's predict -b 1: a first line 'labels <l1> <l2> ...', then "
                        "'<predicted label> <p1> <p2> ...' per instance, in that label order "
                        "(binary: the positive class first, p = 1/(1 + exp(-x.w - b)); "
                        "multi-class: each class's sigmoid, normalised to sum 1) (default: 0)")
    p.add_argument("-q", dest="quiet", action="store_true",
                   help="quiet: do not print the accuracy / error lines or warnings")
    p.add_argument("data_file", help="data to predict, LIBSVM format (.xz, .gz, .bz2 allowed)")
    p.add_argument("model_file", help="a model written by 'dualsolve train', or a liblinear "
                                      "model file")
    p.add_argument("output_file", help="where to write the predictions, one per line")
    p.set_defaults(run=_cmd_predict)

    so = sub.add_parser("solvers", help="list the solvers, or one solver's options",
                        description="Without a name: every solver, its losses and what "
                                    "'converged' certifies. With a name: its options, their "
                                    "defaults and the values they take.",
                        formatter_class=_HelpFormatter)
    so.add_argument("name", nargs="?", default=None, help="a solver name (e.g. spdc)")
    so.set_defaults(run=_cmd_solvers)

    d = sub.add_parser("demo", help="train on the bundled data sets and print a table",
                       description=_DEMO_DESCRIPTION, formatter_class=_HelpFormatter)
    d.add_argument("--quick", action="store_true",
                   help="three runs only: a9a logistic, heart_scale, kin8nm (about a second)")
    d.add_argument("--seed", type=_nonnegative_int, default=0, metavar="S",
                   help="seed of the 70/30 splits and of the solvers (default: 0)")
    d.set_defaults(run=_cmd_demo)
    return parser


def main(argv=None):
    """Run the ``dualsolve`` command with ``argv`` (default: ``sys.argv[1:]``); return the
    exit status (0 success, 2 usage or input error, 130 interrupted)."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = parser.parse_args(_join_weight_flags(argv))
        if args.command is None:
            raise CLIError("missing command: train, predict, solvers or demo (see "
                           "'dualsolve -h')")
        return args.run(args)
    except CLIError as exc:
        print(f"dualsolve: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:       # -h, --version
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:
        print("dualsolve: interrupted", file=sys.stderr)
        return 130
    except MemoryError as exc:
        print(f"dualsolve: error: out of memory: {_one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:        # a bug: still one line, and the exit status of a failure
        print(f"dualsolve: error: unexpected {type(exc).__name__}: {_one_line(exc)} (please "
              "report this)", file=sys.stderr)
        return 2


def _join_weight_flags(argv):
    """liblinear writes class weights as ``-w<label> <weight>`` (``-w1 5``, ``-w-1 0.5``);
    argparse reads ``-w`` with one value, so each pair becomes ``-w '<label> <weight>'``."""
    out, k = [], 0
    while k < len(argv):
        a = str(argv[k])
        if a.startswith("-w") and len(a) > 2 and k + 1 < len(argv):
            out += ["-w", f"{a[2:]} {argv[k + 1]}"]
            k += 2
        else:
            out.append(argv[k])
            k += 1
    return out


# ------------------------------------------------------------------------------ helpers

def _one_line(exc):
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def _read_data(path, what="data file"):
    """``load_svmlight(path)`` with its failures turned into one-line CLI errors."""
    try:
        return dualsolve.load_svmlight(path)
    except FileNotFoundError:
        raise CLIError(f"cannot open {what} '{path}': no such file") from None
    except IsADirectoryError:
        raise CLIError(f"cannot read {what} '{path}': it is a directory") from None
    except PermissionError:
        raise CLIError(f"cannot read {what} '{path}': permission denied") from None
    except _READ_ERRORS as exc:
        raise CLIError(f"{what} '{path}' is not valid LIBSVM data: {_one_line(exc)}") from None


def _check_writable(path, what):
    """Fail before the work, not after it, when ``path`` cannot be written."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise CLIError(f"cannot write {what} '{path}': it is a directory")
    if not os.path.isdir(folder):
        raise CLIError(f"cannot write {what} '{path}': no directory '{folder}'")


def _default_model_path(data_file):
    base = os.path.basename(os.path.normpath(data_file))
    root, ext = os.path.splitext(base)
    if ext.lower() in _COMPRESSED and root:
        base = root
    return base + ".model"


def format_label(value):
    """A label as liblinear writes it: integral values without a decimal point."""
    if isinstance(value, (str, np.str_)):
        return str(value)
    v = float(value)
    if v.is_integer() and abs(v) < 2.0 ** 53:
        return str(int(v))
    return repr(v)


def _warn(message, quiet=False):
    if not quiet:
        print(f"dualsolve: warning: {_one_line(message)}", file=sys.stderr)


def _last(model, field):
    return float(model.history[field][-1]) if len(model.history) else float("nan")


# ------------------------------------------------------------------------------ train

def _resolve_solver(args):
    solver, implied_loss, _ = args.solver or (DEFAULT_SOLVER, None, {})
    description = solver_table()[solver]
    loss = args.loss or implied_loss or (DEFAULT_LOSS if DEFAULT_LOSS in description.losses
                                         else description.losses[0])
    if implied_loss is not None and args.loss is not None and args.loss != implied_loss:
        raise CLIError(f"-l {args.loss} contradicts -s (liblinear's number selects loss "
                       f"{implied_loss}); give one of them")
    if loss not in description.losses:
        raise CLIError(f"solver {solver!r} has no loss {loss!r}; its losses: "
                       f"{', '.join(description.losses)}")
    return solver, loss, getattr(dualsolve, description.function_name)


def _solver_kwargs(fn, solver, args, loss):
    """Keyword arguments for ``fn``: the flags the user gave (an error for one the solver
    lacks) and the -o options (an error for a name the solver does not take)."""
    accepted = inspect.signature(fn).parameters
    wanted = dict(loss=(loss, True),
                  lam=(args.lam, args.lam is not None), C=(args.C, args.C is not None),
                  tol=(args.tol, args.tol is not None),
                  max_epochs=(args.max_epochs, args.max_epochs is not None),
                  seed=(args.seed, args.seed is not None),
                  n_jobs=(args.n_jobs, args.n_jobs is not None),
                  shrinking=(args.shrinking, args.shrinking is not None),
                  fit_intercept=(args.bias > 0, args.bias > 0),
                  intercept_scaling=(args.bias, args.bias > 0),
                  epsilon=(args.epsilon, args.epsilon is not None),
                  class_weight=(_class_weights(args.class_weight), bool(args.class_weight)),
                  verbose=(int(args.verbose), args.verbose))
    flags = dict(loss="-l", lam="--lam", C="-c", tol="-e", max_epochs="-m", seed="--seed",
                 n_jobs="-n",
                 shrinking="--no-shrinking", fit_intercept="-B", intercept_scaling="-B",
                 epsilon="-p", class_weight="-wi", verbose="--verbose")
    kwargs = dict(args.solver[2]) if args.solver else {}    # what a liblinear -s n implies
    for name, (value, explicit) in wanted.items():
        if explicit and name not in accepted:
            raise CLIError(f"solver {solver!r} has no option {flags[name]}")
        if explicit:
            kwargs[name] = value
    own = solver_table()[solver].params
    for name, value in args.options:
        if name not in own:
            known = ", ".join(sorted(own)) or "none"
            raise CLIError(f"solver {solver!r} has no option {name!r} (-o); its options: "
                           f"{known}")
        kwargs[name] = value
    return kwargs


def _class_weights(pairs):
    """``-wi weight`` pairs -> {label: weight} (labels read as numbers, like the data's)."""
    weights = {}
    for pair in pairs:
        label, _, value = pair.partition(" ")
        try:
            weights[float(label)] = _nonnegative_float(value)
        except (ValueError, argparse.ArgumentTypeError) as exc:
            raise CLIError(f"-w{label} {value}: expected -w<label> <weight >= 0> "
                           f"({_one_line(exc)})") from None
    return weights


def _check_finite(X, path):
    if X.data.size and not np.isfinite(X.data).all():
        k = int(np.flatnonzero(~np.isfinite(X.data))[0])
        row = int(np.searchsorted(X.indptr, k, "right"))       # 1-based instance number
        raise CLIError(f"data file '{path}' has a NaN or infinite feature value "
                       f"(instance {row}, value {X.data[k]})")


def _check_training_labels(y, task, path):
    if task != "binary":
        return
    values = np.unique(y)
    if values.size < 2:
        shown = ", ".join(format_label(v) for v in values[:5])
        more = ", ..." if values.size > 5 else ""
        raise CLIError(f"data file '{path}' has {values.size} distinct label value"
                       f"{'s' if values.size != 1 else ''} ({shown}{more}); a classifier "
                       "needs two or more (for regression use -l squared)")


def _cmd_train(args):
    solver, loss, fn = _resolve_solver(args)
    model_file = args.model_file or _default_model_path(args.data_file)
    _check_writable(model_file, "model file")
    kwargs = _solver_kwargs(fn, solver, args, loss)
    X, y = _read_data(args.data_file)
    if X.shape[0] == 0:
        raise CLIError(f"data file '{args.data_file}' has no instances")
    _check_finite(X, args.data_file)
    task = solver_table()[solver].task(loss, kwargs)
    _check_training_labels(y, task, args.data_file)
    if args.folds is not None or args.find_C:
        return _cross_validation(args, fn, kwargs, X, y, task)

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = fn(X, y, **kwargs)
        except (ValueError, TypeError) as exc:
            raise CLIError(f"cannot train on '{args.data_file}': {_one_line(exc)}") from None
        except MemoryError as exc:
            raise CLIError(f"out of memory training on '{args.data_file}' ({X.shape[0]} "
                           f"instances, {X.shape[1]} features, the largest feature index in "
                           f"the file): {_one_line(exc)}") from None
    seconds = time.perf_counter() - t0
    for w in caught:
        if issubclass(w.category, dualsolve.ConvergenceWarning):
            _warn(f"not converged: {w.message} (-m, -e); the model is saved anyway",
                  args.quiet)
        else:
            _warn(w.message, args.quiet)

    try:
        model.save(model_file)
    except OSError as exc:
        raise CLIError(f"cannot write model file '{model_file}': "
                       f"{exc.strerror or _one_line(exc)}") from None
    if not args.quiet:
        status = {"converged": "converged", "max_epochs": "not converged (max epochs reached)",
                  "diverged": "diverged"}.get(model.stop_reason, model.stop_reason)
        print(f"{solver} {model.params.get('loss', loss)}: {model.n_epochs} epochs, "
              f"primal {_last(model, 'primal'):.10e}, gap {_last(model, 'gap'):.3e}, "
              f"{seconds:.3f} s, {status}; model saved to {model_file}")
    return 0


def _start_C(X, loss):
    """liblinear's first C of -C: 2^floor(log2(1 / (n max ||x_i||^2))), halved for the
    squared-hinge loss, below which every model is essentially w = 0."""
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    top = max(float(sq.max()) if sq.size else 1.0, np.finfo(float).tiny)
    c = 1.0 / (X.shape[0] * top)
    if loss == "squared_hinge":
        c /= 2.0
    return 2.0 ** math.floor(math.log2(c))


def _cross_validation(args, fn, kwargs, X, y, task):
    """-v n (the cross-validated score at the given C) or -C (the best C on a path)."""
    from dualsolve.selection import cross_validate
    folds = args.folds or 5
    seed = kwargs.get("seed", 0)
    run = {k: v for k, v in kwargs.items() if k not in ("seed",)}
    regression = task != "binary"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if not args.find_C:
                if regression:
                    mse = cross_validate(fn, X, y, n_folds=folds, seed=seed, scoring="mse", **run)
                    r2 = _cv_squared_correlation(fn, X, y, folds, seed, run)
                    if not args.quiet:
                        print(f"Cross Validation Mean squared error = {np.mean(mse):g}")
                        print(f"Cross Validation Squared correlation coefficient = {r2:g}")
                else:
                    acc = cross_validate(fn, X, y, n_folds=folds, seed=seed, **run)
                    if not args.quiet:
                        print(f"Cross Validation Accuracy = {100 * np.mean(acc):g}%")
                return 0
            for key in ("C", "lam"):
                run.pop(key, None)
            Cs = [_start_C(X, kwargs.get("loss"))]
            while Cs[-1] < 1024:
                Cs.append(Cs[-1] * 2)
            scores = cross_validate(fn, X, y, n_folds=folds, seed=seed, Cs=Cs,
                                    scoring="mse" if regression else "accuracy", **run)
        except (ValueError, TypeError) as exc:
            raise CLIError(f"cannot cross-validate on '{args.data_file}': "
                           f"{_one_line(exc)}") from None
    for w in caught:
        if not issubclass(w.category, dualsolve.ConvergenceWarning):
            _warn(w.message, args.quiet)
    mean = scores.mean(axis=1)
    best = int(np.argmin(mean) if regression else np.argmax(mean))
    if not args.quiet:
        what = "MSE" if regression else "accuracy"
        for C, m in zip(Cs, mean):
            print(f"log2c= {math.log2(C):6.2f}\t{what}= {m if regression else 100 * m:g}")
        print(f"Best C = {Cs[best]:g}  CV {what} = "
              f"{mean[best] if regression else 100 * mean[best]:g}{'' if regression else '%'}")
    return 0


def _cv_squared_correlation(fn, X, y, folds, seed, run):
    """liblinear's 'Squared correlation coefficient' of the cross-validated predictions."""
    from dualsolve.selection import _folds
    fold = _folds(y, folds, seed, stratified=False)
    pred = np.empty_like(y, dtype=np.float64)
    for k in range(folds):
        test = fold == k
        pred[test] = fn(X[~test], y[~test], **run).predict(X[test])
    return squared_correlation(y, pred)


# ------------------------------------------------------------------------------ predict

def _read_model(path):
    try:
        with open(path, "rb") as fh:
            magic = fh.read(4)
    except FileNotFoundError:
        raise CLIError(f"cannot open model file '{path}': no such file") from None
    except IsADirectoryError:
        raise CLIError(f"cannot read model file '{path}': it is a directory") from None
    except OSError as exc:
        raise CLIError(f"cannot read model file '{path}': {exc.strerror or _one_line(exc)}") from None
    from dualsolve._liblinear_file import is_liblinear_file
    if magic != b"PK\x03\x04" and not is_liblinear_file(path):
        raise CLIError(f"'{path}' is not a dualsolve model file (expected the .npz archive "
                       "written by 'dualsolve train', or a liblinear model file)")
    try:
        return dualsolve.load_model(path)
    except (OSError, ValueError, KeyError, EOFError, zlib.error, zipfile.BadZipFile) as exc:
        raise CLIError(f"'{path}' is not a readable dualsolve model file: "
                       f"{_one_line(exc)}") from None


def _align_features(X, n_features, path, quiet):
    """Pad with zero columns, or drop the columns the model never saw (with a warning)."""
    d = X.shape[1]
    if d == n_features:
        return X
    if d < n_features:
        return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
    _warn(f"data file '{path}' has features up to index {d} but the model was trained with "
          f"{n_features}; the others are ignored", quiet)
    return X[:, :n_features]


def _numeric_classes(model, path):
    try:
        return model.classes.astype(np.float64)
    except ValueError:
        raise CLIError(f"model file '{path}' has non-numeric class labels "
                       f"({', '.join(map(str, model.classes))}); LIBSVM files have numeric "
                       "labels") from None


def _cmd_predict(args):
    model = _read_model(args.model_file)
    _check_writable(args.output_file, "output file")
    X, y = _read_data(args.data_file)
    _check_finite(X, args.data_file)
    X = _align_features(X, model.n_features, args.data_file, args.quiet)
    scores = model.decision_function(X)
    regression = model.classes is None

    if args.probability:
        if regression or model.params.get("loss") != "logistic":
            raise CLIError("probability estimates (-b 1) need a logistic model; this one was "
                           f"trained with loss {model.params.get('loss')!r}")
    if regression:
        pred = scores
        lines = [format_label(v) for v in pred.tolist()]
    else:
        classes = _numeric_classes(model, args.model_file)
        if scores.ndim == 2:
            index = np.argmax(scores, axis=1) if scores.shape[0] else np.zeros(0, np.intp)
        else:
            index = (scores > 0).astype(np.intp)
        pred = classes[index]
        names = [format_label(c) for c in classes]
        if args.probability:
            # liblinear's predict -b 1: the label order of the model file (the one
            # Model.save(format="liblinear") writes), probabilities with %g
            from dualsolve._liblinear_file import liblinear_label_order
            order = liblinear_label_order(model)
            proba = model.predict_proba(X)[:, order]
            lines = ["labels " + " ".join(names[j] for j in order)]
            lines += [names[i] + "".join(f" {p:g}" for p in row)
                      for i, row in zip(index.tolist(), proba.tolist())]
        else:
            lines = [names[i] for i in index.tolist()]
    try:
        with open(args.output_file, "w") as fh:
            fh.write("\n".join(lines))
            if lines:
                fh.write("\n")
    except OSError as exc:
        raise CLIError(f"cannot write output file '{args.output_file}': "
                       f"{exc.strerror or _one_line(exc)}") from None

    if not args.quiet and y.size:
        if regression:
            mse = float(np.mean((pred - y) ** 2))
            print(f"Mean squared error = {mse:g} (regression)")
            print(f"Squared correlation coefficient = {squared_correlation(pred, y):g} "
                  "(regression)")
        else:
            correct = int(np.count_nonzero(pred == y))
            print(f"Accuracy = {100.0 * correct / y.size:.2f}% ({correct}/{y.size})")
    return 0


def squared_correlation(a, b):
    """Squared Pearson correlation of two vectors (NaN when one is constant), as liblinear."""
    a = np.asarray(a, dtype=np.float64) - np.mean(a)
    b = np.asarray(b, dtype=np.float64) - np.mean(b)
    den = float(a @ a) * float(b @ b)
    return float(a @ b) ** 2 / den if den > 0 else float("nan")


# ------------------------------------------------------------------------------ solvers

def _cmd_solvers(args):
    from dualsolve._params import describe
    table = solver_table()
    if args.name is None:
        width = max(len(n) for n in table)
        for name, s in table.items():
            print(f"{name:<{width}}  {s.summary}")
            print(f"{'':<{width}}  losses: {', '.join(s.losses)}")
            print(f"{'':<{width}}  converged: {s.certificate}")
        return 0
    name = args.name[len("train_"):] if args.name.startswith("train_") else args.name
    if name not in table:
        raise CLIError(f"unknown solver {args.name!r}; 'dualsolve solvers' lists them")
    s = table[name]
    print(f"{name} ({s.function_name}): {s.summary}")
    print(f"losses: {', '.join(s.losses)}")
    print(f"converged: {s.certificate}")
    print("options (-o NAME=VALUE):")
    for key, constraints in s.params.items():
        print(f"  {key} = {signature_default(name, key)!r}: {describe(constraints)}")
    return 0


# ------------------------------------------------------------------------------ demo

# (train set, test set or None for a seeded 70/30 split, loss, tol, bias, standardise)
_DEMO_RUNS = [
    ("a9a", "a9a.t", "logistic", 1e-6, -1.0, False),
    ("a9a", "a9a.t", "squared_hinge", 1e-6, -1.0, False),
    # hinge: SDCA's gap closes slowly at the end (about 800 epochs to 1e-5, 2000+ to 1e-6)
    ("a9a", "a9a.t", "hinge", 1e-5, -1.0, False),
    ("heart_scale", None, "logistic", 1e-6, 1.0, False),
    ("spambase", None, "logistic", 1e-6, 1.0, True),
    ("magic04", None, "logistic", 1e-6, 1.0, True),
    ("mammography", None, "logistic", 1e-6, 1.0, True),
    ("kin8nm", None, "squared", 1e-6, 1.0, True),
]
_DEMO_QUICK = {0, 3, 7}
DEMO_MAX_EPOCHS = 3000


def split_70_30(n, seed):
    """Seeded random 70/30 split of ``range(n)``: (train indices, test indices)."""
    perm = np.random.default_rng(seed).permutation(n)
    k = int(round(0.7 * n))
    return np.sort(perm[:k]), np.sort(perm[k:])


def standardise(X_train, X_test):
    """Centre and scale each column with the training part's mean and standard deviation
    (constant columns: scale 1); dense arrays in, dense arrays out."""
    mean = X_train.mean(axis=0)
    std = X_train.std(axis=0)
    std[std == 0] = 1.0
    return (X_train - mean) / std, (X_test - mean) / std


def r2_score(y_true, y_pred):
    """Coefficient of determination 1 - SSE / SST (SST around the mean of ``y_true``)."""
    resid = y_true - y_pred
    centred = y_true - y_true.mean()
    return 1.0 - float(resid @ resid) / float(centred @ centred)


def _demo_data(name, test, seed, scale, cache):
    key = (name, test)
    if key not in cache:
        if test is not None:
            Xtr, ytr = dualsolve.datasets.load(name)
            Xte, yte = dualsolve.datasets.load(test)
            label = f"{name} -> {test}"
        else:
            X, y = dualsolve.datasets.load(name, dense=scale)
            tr, te = split_70_30(X.shape[0], seed)
            Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
            if scale:
                Xtr, Xte = standardise(Xtr, Xte)
                Xtr, Xte = sp.csr_matrix(Xtr), sp.csr_matrix(Xte)
            label = f"{name} (70/30)"
        cache[key] = (label, Xtr, ytr, Xte, yte)
    return cache[key]


def run_demo(quick=False, seed=0, out=None):
    """Run the demo; print the table to ``out`` (default stdout) and return its rows as
    dicts (data, solver, loss, tol, epochs, seconds, objective, gap, metric, score)."""
    out = sys.stdout if out is None else out
    runs = [r for k, r in enumerate(_DEMO_RUNS) if not quick or k in _DEMO_QUICK]
    header = (f"{'data set':<24} {'solver':<6} {'loss':<13} {'tol':>7} {'epochs':>6} "
              f"{'seconds':>7} {'objective':>16} {'gap':>9}  test")
    print(header, file=out)
    print("-" * len(header), file=out, flush=True)
    rows, cache, t_start = [], {}, time.perf_counter()
    for name, test, loss, tol, bias, scale in runs:
        label, Xtr, ytr, Xte, yte = _demo_data(name, test, seed, scale, cache)
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            model = dualsolve.train_sdca(Xtr, ytr, loss=loss, tol=tol, seed=seed,
                                         max_epochs=DEMO_MAX_EPOCHS, fit_intercept=bias > 0,
                                         intercept_scaling=bias if bias > 0 else 1.0)
        seconds = time.perf_counter() - t0
        if loss == "squared":
            metric, score = "R^2", r2_score(yte, model.predict(Xte))
            shown = f"R^2 {score:.4f}"
        else:
            metric, score = "accuracy", float(np.mean(model.predict(Xte) == yte))
            shown = f"accuracy {100 * score:.2f}%"
        row = dict(data=label, solver="sdca", loss=loss, tol=tol, epochs=model.n_epochs,
                   seconds=seconds, objective=_last(model, "primal"), gap=_last(model, "gap"),
                   converged=model.converged, metric=metric, score=score)
        rows.append(row)
        mark = "" if model.converged else "*"
        print(f"{label:<24} {'sdca':<6} {loss:<13} {tol:>7.0e} {model.n_epochs:>6d} "
              f"{seconds:>7.3f} {row['objective']:>16.10f} {row['gap']:>9.2e}{mark:1} {shown}",
              file=out, flush=True)
    total = time.perf_counter() - t_start
    print(f"\nC = 1 (lam = 1/n) throughout; objective = (1/n) sum loss + (lam/2)||w||^2 on the "
          f"training part;\ngap = final duality gap; (70/30): seeded split (seed {seed}), "
          f"columns standardised on the\ntraining part except heart_scale, intercept "
          f"(-B 1). Total {total:.2f} s including data loading.", file=out)
    if not all(r["converged"] for r in rows):
        print(f"* stopped at {DEMO_MAX_EPOCHS} epochs before reaching tol", file=out)
    return rows


def _cmd_demo(args):
    run_demo(quick=args.quick, seed=args.seed)
    return 0
