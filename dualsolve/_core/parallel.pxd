# cython: language_level=3
"""What the threaded loops share at run time (see parallel.pyx)."""

cdef Py_ssize_t batch_min_nnz() noexcept nogil
