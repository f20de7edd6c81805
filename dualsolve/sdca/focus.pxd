# cython: language_level=3
"""Which rows the focused passes take: shared by the binary SDCA loop (_sdca.pyx) and the
Crammer-Singer loop (_crammer_singer.pyx); docs/sdca.md, "Focused passes".

Every step records its gain, a lower bound of n times the dual's rise from it (0 for a row
that did not move or was shrunk). Before a pass over the active set, the rows whose last
gains add up to ``share`` of them all get passes of their own. They are found by a
histogram of the gains' binary exponents (O(n), no sort), cut at a power of two.
"""
from libc.math cimport INFINITY, frexp, ldexp
from libc.string cimport memset

cdef enum:
    FOCUS_BINS = 2200       # a double's binary exponents (and inf), offset by FOCUS_BIAS
    FOCUS_BIAS = 1100


cdef inline double focus_default_share() noexcept nogil:
    """The default share (``focus``): chosen on news20, IMDB, reuters, a9a and w8a."""
    return 0.5


cdef inline double focus_default_work() noexcept nogil:
    """At most this many passes' work of focused passes an epoch."""
    return 4.0


cdef inline int _focus_bin(double g) noexcept nogil:
    cdef int e
    if not g < INFINITY:
        return FOCUS_BINS - 1
    frexp(g, &e)
    return e + FOCUS_BIAS


cdef inline Py_ssize_t focus_select(const double* gain, const Py_ssize_t* among,
                                    Py_ssize_t n, double share,
                                    Py_ssize_t* rows) noexcept nogil:
    """The rows of the largest gains that add up to at least ``share`` of them all, cut at
    a power of two, into ``rows``; returns their count. The rows are ``among[:n]``, or
    0 .. n - 1 when ``among`` is NULL (a loop whose inactive rows all have gain 0 passes
    its active rows: the same rows, found in time of the active set, in its order)."""
    cdef double sums[FOCUS_BINS]
    cdef double total = 0.0, acc = 0.0, g, least
    cdef Py_ssize_t r, i, count = 0
    cdef int cut = FOCUS_BINS - 1
    memset(sums, 0, sizeof(sums))
    for r in range(n):
        g = gain[r if among == NULL else among[r]]
        if g > 0.0:
            sums[_focus_bin(g)] += g
            total += g
    if not total > 0.0:
        return 0
    while cut > 0:
        acc += sums[cut]
        if acc >= share * total:
            break
        cut -= 1
    # the least gain of bin cut (frexp's mantissa is in [1/2, 1)): 0 below the subnormals
    # when every bin counts, inf for the bin of inf
    least = ldexp(0.5, cut - FOCUS_BIAS)
    for r in range(n):
        i = r if among == NULL else among[r]
        g = gain[i]
        if g > 0.0 and g >= least:
            rows[count] = i
            count += 1
    return count
