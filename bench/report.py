"""What the benches print alike: median and range of repeated timings."""
import numpy as np


def stats(xs):
    """{median, min, max} of the values that are not None (None when there are none)."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return dict(median=float(np.median(xs)), min=float(min(xs)), max=float(max(xs)))


def keep(results, row, line, json_path=None):
    """Append ``row`` to ``results``, print its ``line``, and rewrite ``json_path`` (if
    given) with all results so far: a long bench stopped midway keeps its rows."""
    import json
    results.append(row)
    print(line, flush=True)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(results, f, indent=1, default=float)


def fmt_range(st, digits=2, collapse=False):
    """"median (min-max)" of a :func:`stats` dict ("-" for None); ``collapse``: just the
    median when all values were equal."""
    if not st:
        return "-"
    if collapse and st["min"] == st["max"]:
        return f"{st['median']:.{digits}f}"
    return f"{st['median']:.{digits}f} ({st['min']:.{digits}f}-{st['max']:.{digits}f})"
