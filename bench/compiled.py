"""Bench-only Cython modules (``bench/*.pyx``), compiled against the installed dualsolve on
first use, like a user's extension, into the bench cache (``$DUALSOLVE_CACHE`` or
``bench/cache/``), and rebuilt when the source changes."""
import hashlib
import importlib.util
import os
import subprocess
import sys
import textwrap

import dualsolve
from datasets import cache_dir

HERE = os.path.dirname(os.path.abspath(__file__))

SETUP = textwrap.dedent('''
    import numpy
    from setuptools import setup, Extension
    from Cython.Build import cythonize
    setup(ext_modules=cythonize([Extension(NAME, [NAME + ".pyx"],
                                           include_dirs=[INCLUDE, numpy.get_include()])],
                                include_path=[INCLUDE], quiet=True))
''')


def load(name):
    """Import ``bench/<name>.pyx``, building it first if its source changed."""
    with open(os.path.join(HERE, name + ".pyx")) as fh:
        source = fh.read()
    digest = hashlib.sha256((source + dualsolve.__version__).encode()).hexdigest()[:16]
    folder = os.path.join(cache_dir(), f"{name}-{digest}")
    os.makedirs(folder, exist_ok=True)
    built = [f for f in os.listdir(folder) if f.startswith(name) and f.endswith((".so", ".pyd"))]
    if not built:
        with open(os.path.join(folder, name + ".pyx"), "w") as fh:
            fh.write(source)
        with open(os.path.join(folder, "setup.py"), "w") as fh:
            fh.write(SETUP.replace("INCLUDE", repr(dualsolve.get_include()))
                          .replace("NAME", repr(name)))
        subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=folder,
                       check=True, capture_output=True)
        built = [f for f in os.listdir(folder) if f.startswith(name) and f.endswith((".so", ".pyd"))]
    spec = importlib.util.spec_from_file_location(name, os.path.join(folder, built[0]))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def memfloor():
    """bench/memfloor.pyx: ``touch_rows``, the memory-floor probe."""
    return load("memfloor")
