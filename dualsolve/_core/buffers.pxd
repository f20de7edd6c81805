# cython: language_level=3
"""Raw pointers into optional NumPy arrays for the solvers' Python drivers (GIL held)."""


cdef inline const double* double_ptr(object a, Py_ssize_t n, str name) except? NULL:
    """Pointer into a float64 C-contiguous array of length n, or NULL for None. The caller
    keeps ``a`` alive while the pointer is used."""
    if a is None:
        return NULL
    cdef const double[::1] v = a
    if v.shape[0] != n:
        raise ValueError(f"{name} must have length {n}; got {v.shape[0]}")
    return &v[0]


cdef inline const Py_ssize_t* intp_ptr(object a, Py_ssize_t n, str name) except? NULL:
    """Pointer into an intp C-contiguous array of length n, or NULL for None."""
    if a is None:
        return NULL
    cdef const Py_ssize_t[::1] v = a
    if v.shape[0] != n:
        raise ValueError(f"{name} must have length {n}; got {v.shape[0]}")
    return &v[0]
