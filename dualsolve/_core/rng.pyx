# cython: language_level=3, boundscheck=False, wraparound=False
"""Python access to the generator of ``rng.pxd`` (tests, and reproducing a solver's stream)."""
import numpy as np


def random_below(unsigned long long seed, unsigned long long n, Py_ssize_t size):
    """``size`` unbiased integers in [0, n) from the stream seeded with ``seed``."""
    if n < 1:
        raise ValueError(f"n must be >= 1; got {n}")
    cdef rng_state st
    rng_seed(&st, seed)
    out = np.empty(size, dtype=np.uint64)
    cdef unsigned long long[::1] o = out
    cdef Py_ssize_t k
    for k in range(size):
        o[k] = rng_below(&st, n)
    return out


def random_uniform(unsigned long long seed, Py_ssize_t size):
    """``size`` doubles in [0, 1) from the stream seeded with ``seed``."""
    cdef rng_state st
    rng_seed(&st, seed)
    out = np.empty(size)
    cdef double[::1] o = out
    cdef Py_ssize_t k
    for k in range(size):
        o[k] = rng_uniform(&st)
    return out


def permutation(unsigned long long seed, Py_ssize_t n):
    """The shuffle of ``arange(n)`` that a solver seeded with ``seed`` makes first."""
    cdef rng_state st
    rng_seed(&st, seed)
    out = np.arange(n, dtype=np.intp)
    cdef Py_ssize_t[::1] o = out
    if n > 0:
        rng_shuffle(&st, &o[0], n)
    return out


def epoch_orders(unsigned long long seed, Py_ssize_t n, Py_ssize_t epochs):
    """The row orders of the first ``epochs`` epochs of an SDCA solve with
    ``sampling="permutation"`` and no shrinking: the index array is shuffled in place at the
    start of every epoch (for NumPy twins of the solvers)."""
    cdef rng_state st
    rng_seed(&st, seed)
    out = np.empty((epochs, n), dtype=np.intp)
    order = np.arange(n, dtype=np.intp)
    cdef Py_ssize_t[::1] o = order
    cdef Py_ssize_t e
    for e in range(epochs):
        if n > 0:
            rng_shuffle(&st, &o[0], n)
        out[e] = order
    return out


def uniform_draws(unsigned long long seed, Py_ssize_t n, Py_ssize_t epochs):
    """The rows drawn by the first ``epochs`` epochs with ``sampling="uniform"`` and no
    shrinking (n draws with replacement per epoch)."""
    return random_below(seed, n, n * epochs).astype(np.intp).reshape(epochs, n)
