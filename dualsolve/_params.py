"""Declarative parameter constraints, in the style of scikit-learn's
``_parameter_constraints``: each parameter has a list of constraints, and a value is valid
when it satisfies one of them. The solver descriptions (``dualsolve._driver``), the command
line and the scikit-learn estimators read the same lists.

>>> validate("tol", -1.0, [Interval(Real, 0, None, closed="left")])
Traceback (most recent call last):
ValueError: tol must be a real number in [0, inf); got -1.0
"""
import numbers
from numbers import Integral, Real

import numpy as np

__all__ = ["Interval", "Options", "Boolean", "CallableOrNone", "Anything", "validate",
           "describe", "Integral", "Real"]


class Interval:
    """A number of ``kind`` (Integral or Real) in [low, high] (None: unbounded), with the
    ends open or closed: ``closed`` in {"both", "left", "right", "neither"}. Reals must be
    finite."""

    def __init__(self, kind, low, high, closed="both"):
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def is_type(self, v):
        if isinstance(v, (bool, np.bool_)):
            return False
        return isinstance(v, numbers.Integral) if self.kind is Integral else isinstance(v, numbers.Real)

    def holds(self, v):
        if not self.is_type(v):
            return False
        if self.kind is Real and not np.isfinite(v):
            return False
        lo_ok = self.low is None or (v >= self.low if self.closed in ("both", "left") else v > self.low)
        hi_ok = self.high is None or (v <= self.high if self.closed in ("both", "right") else v < self.high)
        return lo_ok and hi_ok

    def convert(self, v):
        return int(v) if self.kind is Integral else float(v)

    def __str__(self):
        left = "[" if self.closed in ("both", "left") and self.low is not None else "("
        right = "]" if self.closed in ("both", "right") and self.high is not None else ")"
        lo = "-inf" if self.low is None else _number(self.low)
        hi = "inf" if self.high is None else _number(self.high)
        what = "an integer" if self.kind is Integral else "a real number"
        return f"{what} in {left}{lo}, {hi}{right}"


def _number(v):
    return str(v) if isinstance(v, numbers.Integral) else f"{v:g}"


class Options:
    """One of a set of strings."""

    def __init__(self, *choices):
        self.choices = tuple(choices)

    def is_type(self, v):
        return isinstance(v, str)

    def holds(self, v):
        return isinstance(v, str) and v in self.choices

    def convert(self, v):
        return v

    def __str__(self):
        return " or ".join(repr(c) for c in self.choices)


class Boolean:
    def is_type(self, v):
        return isinstance(v, (bool, np.bool_))

    holds = is_type

    def convert(self, v):
        return bool(v)

    def __str__(self):
        return "a bool"


class CallableOrNone:
    def is_type(self, v):
        return v is None or callable(v)

    holds = is_type

    def convert(self, v):
        return v

    def __str__(self):
        return "callable or None"


class Anything:
    """No constraint here: the solver checks the value itself (arrays, models)."""

    def __init__(self, what="any value"):
        self.what = what

    def is_type(self, v):
        return True

    holds = is_type

    def convert(self, v):
        return v

    def __str__(self):
        return self.what


def describe(constraints):
    return " or ".join("None" if c is None else str(c) for c in constraints)


def validate(name, value, constraints):
    """``value`` converted (int / float / bool) when one of ``constraints`` holds (``None``
    in the list admits None); otherwise a TypeError when no constraint even has the right
    type, a ValueError when the type is right but the value is not, both naming ``name``."""
    for c in constraints:
        if c is None:
            if value is None:
                return None
        elif c.holds(value):
            return c.convert(value)
    shown = repr(value) if isinstance(value, (str, numbers.Number, type(None))) else type(value).__name__
    typed = any(c is not None and c.is_type(value) for c in constraints)
    error = ValueError if typed else TypeError
    raise error(f"{name} must be {describe(constraints)}; got {shown}")
