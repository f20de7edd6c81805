"""Build a user extension that cimports dualsolve (what ``dualsolve.get_include()`` is for)
and import it: the embed tests of every family use this."""
import importlib.util
import shutil
import subprocess
import sys
import textwrap

import pytest

import dualsolve as ds

SETUP = textwrap.dedent('''
    import numpy
    from setuptools import setup, Extension
    from Cython.Build import cythonize
    inc = [INCLUDE, numpy.get_include()]
    setup(ext_modules=cythonize([Extension(NAME, [NAME + ".pyx"], include_dirs=inc)],
                                include_path=[INCLUDE], quiet=True))
''')


def build_extension(tmp_path_factory, name, pyx_source):
    """Compile ``pyx_source`` as module ``name`` in a scratch folder; the imported module."""
    pytest.importorskip("Cython")
    pytest.importorskip("setuptools")
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("embed_" + name)
    (d / f"{name}.pyx").write_text(textwrap.dedent(pyx_source))
    setup = SETUP.replace("INCLUDE", repr(ds.get_include())).replace("NAME", repr(name))
    (d / "setup.py").write_text(setup)
    r = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=d,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    so = next(p for p in d.iterdir() if p.name.startswith(name) and p.suffix in (".so", ".pyd"))
    spec = importlib.util.spec_from_file_location(name, so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
