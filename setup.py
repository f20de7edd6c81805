"""Build script: every ``dualsolve/**/*.pyx`` becomes one extension module.

Project metadata lives in pyproject.toml; this file only declares the Cython extensions,
so that adding a solver module needs no edit here.
"""
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
    "nonecheck": False,
    "embedsignature": True,
}


def extensions():
    exts = []
    for pyx in sorted((HERE / "dualsolve").rglob("*.pyx")):
        rel = pyx.relative_to(HERE).with_suffix("")
        exts.append(Extension(
            ".".join(rel.parts),
            [str(pyx.relative_to(HERE))],
            include_dirs=[np.get_include()],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        ))
    return cythonize(exts, compiler_directives=DIRECTIVES, include_path=[str(HERE)])


setup(ext_modules=extensions())
