"""Time dualsolve.datasets.load_svmlight against sklearn.datasets.load_svmlight_file.

Both loaders read the same file in the same run (ours, then sklearn, for each input);
the median of ``--repeats`` runs is reported with the ratio sklearn / ours (> 1: we are
faster), for

1. the decompressed plain text file (path for both), and
2. the xz file (ours: the ``.xz`` path; sklearn: an open ``lzma`` file object,
   the way its docs suggest for compressed files).

The results are checked equal before timing. Usage::

    python bench/load_svmlight_bench.py                 # $DUALSOLVE_DATA/libsvm/w8a.xz
    python bench/load_svmlight_bench.py path/to/file.xz --repeats 9 --json out.json
"""
import argparse
import json
import lzma
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

from dualsolve.datasets import data_dir, load_svmlight


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", help="an .xz LIBSVM file "
                        "(default: $DUALSOLVE_DATA/libsvm/w8a.xz)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args(argv)

    from sklearn.datasets import load_svmlight_file
    import sklearn

    path = args.file or os.path.join(data_dir(required=True), "libsvm", "w8a.xz")
    if not path.endswith(".xz"):
        parser.error("give an .xz file (the plain copy is made from it)")

    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, os.path.basename(path)[:-3] + ".txt")
        with lzma.open(path, "rb") as src, open(plain, "wb") as dst:
            dst.write(src.read())

        def sk_xz():
            with lzma.open(path, "rb") as fh:
                return load_svmlight_file(fh)

        cases = {
            "plain": (lambda: load_svmlight(plain), lambda: load_svmlight_file(plain)),
            "xz": (lambda: load_svmlight(path), sk_xz),
        }
        # Both loaders must produce the same arrays (LIBSVM files have sorted rows).
        (X, y), (Xs, ys) = cases["plain"][0](), cases["plain"][1]()
        assert X.shape == Xs.shape and np.array_equal(y, ys)
        assert np.array_equal(X.indptr, Xs.indptr) and np.array_equal(X.indices, Xs.indices)
        assert np.array_equal(X.data, Xs.data)

        print(f"{os.path.basename(path)}: {X.shape[0]:,} x {X.shape[1]:,}, nnz {X.nnz:,}, "
              f"{os.path.getsize(plain) / 1e6:.1f} MB plain; median of {args.repeats}")
        print(f"{'input':<7}{'dualsolve (s)':>15}{'sklearn (s)':>14}{'sklearn/ours':>14}")
        results = {}
        for name, (ours, theirs) in cases.items():
            ours(), theirs()  # warm the page cache and imports
            t_ours = median_time(ours, args.repeats)
            t_sk = median_time(theirs, args.repeats)
            results[name] = {"dualsolve_s": t_ours, "sklearn_s": t_sk,
                             "ratio": t_sk / t_ours}
            print(f"{name:<7}{t_ours:>15.4f}{t_sk:>14.4f}{t_sk / t_ours:>13.1f}x")

    if args.json:
        meta = {"file": os.path.basename(path), "shape": list(X.shape), "nnz": int(X.nnz),
                "repeats": args.repeats, "python": sys.version.split()[0],
                "sklearn": sklearn.__version__, "machine": platform.machine(),
                "results": results}
        with open(args.json, "w") as fh:
            json.dump(meta, fh, indent=2)


if __name__ == "__main__":
    main()
