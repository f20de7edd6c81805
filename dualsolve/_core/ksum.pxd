# cython: language_level=3
"""Compensated (Neumaier) summation for the objective evaluations: the duality gap is a
difference of two sums of n terms, and a plain sum's rounding (n eps times the terms) can
exceed a small gap or fake one; the compensated sum is exact to a few ulp of the result.

    cdef KahanSum s = ksum_new()
    ksum_add(&s, x) ...
    total = ksum_value(&s)
"""
from libc.math cimport fabs


ctypedef struct KahanSum:
    double sum
    double carry      # the low-order bits lost by the additions so far


cdef inline KahanSum ksum_new() noexcept nogil:
    cdef KahanSum s
    s.sum = 0.0
    s.carry = 0.0
    return s


cdef inline void ksum_add(KahanSum* s, double x) noexcept nogil:
    cdef double t = s.sum + x
    if fabs(s.sum) >= fabs(x):
        s.carry += (s.sum - t) + x
    else:
        s.carry += (x - t) + s.sum
    s.sum = t


cdef inline double ksum_value(const KahanSum* s) noexcept nogil:
    return s.sum + s.carry
