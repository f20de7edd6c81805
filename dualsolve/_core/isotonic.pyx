# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Pool adjacent violators and the permutahedron projection (see isotonic.pxd).

The ``def`` functions at the end are thin Python entry points for the checked wrappers in
``dualsolve.spectral`` and for the tests; they check shapes but not values (no NaN check).
"""
import numpy as np

from libc.string cimport memcpy


cdef Py_ssize_t pava_nondecreasing(double* u, Py_ssize_t n, Py_ssize_t* cnt) noexcept nogil:
    # The stack of blocks lives in place: block b keeps its sum in u[b] and its size in
    # cnt[b]. When element j is read the stack has at most j blocks, so pushing writes at an
    # index <= j, never over an element still to be read.
    cdef Py_ssize_t j, i, top = -1, c, pos
    cdef double s, m
    for j in range(n):
        s = u[j]
        c = 1
        while top >= 0 and u[top] / cnt[top] > s / c:
            s += u[top]
            c += cnt[top]
            top -= 1
        top += 1
        u[top] = s
        cnt[top] = c
    # Expand from the last block back: block b covers [pos - cnt[b], pos) with
    # pos - cnt[b] >= b, so the sums of blocks 0..b-1 (at u[0..b-1]) are not overwritten.
    pos = n
    for j in range(top, -1, -1):
        m = u[j] / cnt[j]
        c = cnt[j]
        for i in range(pos - c, pos):
            u[i] = m
        pos -= c
    return top + 1


cdef void _merge_sort(const floating* key, Py_ssize_t* a, Py_ssize_t* tmp, Py_ssize_t lo,
                      Py_ssize_t hi) noexcept nogil:
    cdef Py_ssize_t i, j, k, mid, x
    cdef floating kx
    if hi - lo <= 24:
        for i in range(lo + 1, hi):          # stable insertion sort
            x = a[i]
            kx = key[x]
            j = i
            while j > lo and key[a[j - 1]] > kx:
                a[j] = a[j - 1]
                j -= 1
            a[j] = x
        return
    mid = lo + (hi - lo) // 2
    _merge_sort(key, a, tmp, lo, mid)
    _merge_sort(key, a, tmp, mid, hi)
    if key[a[mid - 1]] <= key[a[mid]]:       # already in order: nothing to merge
        return
    memcpy(tmp + lo, a + lo, <size_t>(mid - lo) * sizeof(Py_ssize_t))
    i = lo
    j = mid
    k = lo
    while i < mid and j < hi:
        if key[a[j]] < key[tmp[i]]:          # strict: ties take the left run first (stable)
            a[k] = a[j]
            j += 1
        else:
            a[k] = tmp[i]
            i += 1
        k += 1
    while i < mid:                           # the rest of the right run is already in place
        a[k] = tmp[i]
        i += 1
        k += 1


cdef void argsort_stable(const floating* key, Py_ssize_t n, Py_ssize_t* perm, Py_ssize_t* buf,
                         bint warm) noexcept nogil:
    cdef Py_ssize_t i
    if not warm:
        for i in range(n):
            perm[i] = i
    if n > 1:
        _merge_sort(key, perm, buf, 0, n)


cdef void project_permutahedron_sorted(const floating* s, const floating* sigma, floating* out,
                                       Py_ssize_t n, double* dwork, Py_ssize_t* cnt) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(n):
        dwork[j] = <double>s[j] - <double>sigma[j]
    pava_nondecreasing(dwork, n, cnt)
    for j in range(n):
        out[j] = <floating>(<double>s[j] - dwork[j])


cdef void project_permutahedron(const floating* z, const floating* sigma, floating* out,
                                Py_ssize_t n, Py_ssize_t* perm, Py_ssize_t* iwork, double* dwork,
                                bint warm) noexcept nogil:
    cdef Py_ssize_t j, p
    argsort_stable(z, n, perm, iwork, warm)
    for j in range(n):
        dwork[j] = <double>z[perm[j]] - <double>sigma[j]
    pava_nondecreasing(dwork, n, iwork)
    for j in range(n):
        p = perm[j]
        out[p] = <floating>(<double>z[p] - dwork[j])


# ---------------------------------------------------------------------------------------
# Python entry points


def pava(u):
    """Isotonic (nondecreasing, unweighted) least-squares fit of the 1-D array ``u``:
    argmin over v_1 <= ... <= v_n of ||v - u||^2, as a new float64 array."""
    cdef double[::1] v = np.array(u, dtype=np.float64, copy=True).ravel()
    cdef Py_ssize_t n = v.shape[0]
    cdef Py_ssize_t[::1] cnt = np.empty(max(n, 1), dtype=np.intp)
    with nogil:
        pava_nondecreasing(&v[0] if n > 0 else NULL, n, &cnt[0])
    return np.asarray(v)


def argsort(floating[::1] key, perm=None):
    """Stable ascending argsort (np.intp). ``perm`` (a permutation) is used as the warm
    starting order, as ``argsort_stable(..., warm=1)`` does; it is not modified."""
    cdef Py_ssize_t n = key.shape[0]
    cdef bint warm = perm is not None
    cdef Py_ssize_t[::1] p
    if warm:
        p = np.array(perm, dtype=np.intp, copy=True)
        if p.shape[0] != n:
            raise ValueError(f"perm has length {p.shape[0]}, key has length {n}")
    else:
        p = np.empty(max(n, 1), dtype=np.intp)
    cdef Py_ssize_t[::1] buf = np.empty(max(n, 1), dtype=np.intp)
    if n > 0:
        with nogil:
            argsort_stable(&key[0], n, &p[0], &buf[0], warm)
    return np.asarray(p)[:n]


def project_sorted_sigma(floating[::1] z, floating[::1] sigma_asc):
    """Projection of ``z`` onto the permutahedron of ``sigma_asc`` (sorted ascending, same
    length and dtype as z). Unchecked; use ``dualsolve.spectral.project_permutahedron``."""
    cdef Py_ssize_t n = z.shape[0]
    if sigma_asc.shape[0] != n:
        raise ValueError(f"sigma has length {sigma_asc.shape[0]}, z has length {n}")
    out_arr = np.empty(n, dtype=np.float32 if floating is float else np.float64)
    if n == 0:
        return out_arr
    cdef floating[::1] out = out_arr
    cdef Py_ssize_t[::1] perm = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] iwork = np.empty(n, dtype=np.intp)
    cdef double[::1] dwork = np.empty(n, dtype=np.float64)
    with nogil:
        project_permutahedron(&z[0], &sigma_asc[0], &out[0], n, &perm[0], &iwork[0], &dwork[0], 0)
    return out_arr
