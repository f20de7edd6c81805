"""Typed building blocks shared by every solver family (CSR access, losses, RNG).

The C-level API lives in the ``.pxd`` files next to this one; ``cimport`` them from
Cython code built with ``include_dirs=[dualsolve.get_include()]``.
"""
