"""Build script: every ``dualsolve/**/*.pyx`` becomes one extension module.

Project metadata lives in pyproject.toml; this file only declares the Cython extensions,
so that adding a solver module needs no edit here.

The build uses every core: Cython translates the modules in parallel and the compiler runs
one extension per core (``build_ext --parallel``; set DUALSOLVE_BUILD_JOBS to choose).
pip builds a local directory in place, so the generated C files and the compiled modules
under ``build/`` are reused by the next ``pip install`` of the same checkout: a second
install (e.g. adding the ``[test]`` extra) recompiles only what changed.
"""
import os
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

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


def build_jobs():
    jobs = os.environ.get("DUALSOLVE_BUILD_JOBS", "")
    if jobs.strip().isdigit() and int(jobs) > 0:
        return int(jobs)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:                  # not Linux
        return os.cpu_count() or 1


class ParallelBuildExt(build_ext):
    """build_ext with one compiler process per core unless --parallel was given."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = build_jobs()


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
    jobs = build_jobs()
    return cythonize(exts, compiler_directives=DIRECTIVES, include_path=[str(HERE)],
                     nthreads=jobs if jobs > 1 else 0)


setup(ext_modules=extensions(), cmdclass={"build_ext": ParallelBuildExt})
