"""What the benches print alike: median and range of repeated timings."""
import numpy as np


def stats(xs):
    """{median, min, max} of the values that are not None (None when there are none)."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return dict(median=float(np.median(xs)), min=float(min(xs)), max=float(max(xs)))


def fmt_range(st, digits=2, collapse=False):
    """"median (min-max)" of a :func:`stats` dict ("-" for None); ``collapse``: just the
    median when all values were equal."""
    if not st:
        return "-"
    if collapse and st["min"] == st["max"]:
        return f"{st['median']:.{digits}f}"
    return f"{st['median']:.{digits}f} ({st['min']:.{digits}f}-{st['max']:.{digits}f})"
