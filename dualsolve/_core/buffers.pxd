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


cdef inline Py_ssize_t* intp_out(object a, Py_ssize_t* length) except? NULL:
    """Writable pointer into an intp C-contiguous array that a loop fills (the sample traces
    of the tests), its length in ``length``; NULL and 0 for None or an empty array."""
    length[0] = 0
    if a is None:
        return NULL
    cdef Py_ssize_t[::1] v = a
    if v.shape[0] == 0:
        return NULL
    length[0] = v.shape[0]
    return &v[0]
