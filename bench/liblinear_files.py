"""Models moved between dualsolve and liblinear through liblinear's model file, on news20.

For news20 binary and news20.multi (20 classes) of ``bench/datasets.py`` (train part ->
test part): a ``train_sdca`` model saved with ``format="liblinear"`` and predicted by
liblinear-official's ``load_model`` / ``predict``, and a liblinear model (``-s 1``) saved by
liblinear and predicted by ``dualsolve.load_model``; prints how many test labels agree and
the largest decision-value difference.

Usage::

    DUALSOLVE_DATA=... python bench/liblinear_files.py
"""
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import datasets  # noqa: E402

import dualsolve as ds  # noqa: E402


def main():
    from liblinear import liblinearutil as llu
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("news20", "news20.multi"):
            X, y, tr = datasets.load(name, return_split=True)
            Xtr, ytr, Xte, yte = X[tr], y[tr], X[~tr], y[~tr]
            ours = ds.train_sdca(Xtr, ytr, loss="squared_hinge", C=1.0)
            path = os.path.join(tmp, "ours.model")
            ours.save(path, format="liblinear")
            lm = llu.load_model(path)
            labels = llu.predict(yte, Xte, lm, "-q")[0]
            same = int(np.sum(np.array(labels) == ours.predict(Xte)))
            print(f"{name}: ours -> liblinear file -> liblinear predicts {same}/{len(yte)} "
                  "test labels as we do")
            theirs = llu.train(ytr, Xtr, "-s 1 -c 1 -q")
            path = os.path.join(tmp, "theirs.model")
            llu.save_model(path, theirs)
            loaded = ds.load_model(path)
            labels = llu.predict(yte, Xte, theirs, "-q")[0]
            same = int(np.sum(np.array(labels) == loaded.predict(Xte)))
            print(f"{name}: liblinear -> its file -> dualsolve predicts {same}/{len(yte)} "
                  "test labels as liblinear does")


if __name__ == "__main__":
    main()
