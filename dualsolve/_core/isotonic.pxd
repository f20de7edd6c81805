# cython: language_level=3
"""Isotonic regression (pool adjacent violators) and the exact Euclidean projection onto a
permutahedron: the dual step of SOREL (Y. Ge, R. Jiang, "SOREL: A Stochastic Algorithm for
Spectral Risks Minimization", 2024, Sec. 3.2, Algorithm 1 line 4), by one sort and pool
adjacent violators (Lim & Wright, 2016; Blondel et al., 2020). See docs/spectral.md.

The permutahedron of sigma is P(sigma) = conv{all permutations of sigma}. For z in R^n,

    proj(z) = argmin_{x in P(sigma)} ||x - z||^2

is computed by one stable sort of z plus one unweighted isotonic regression:

    perm = argsort(z)  (ascending, stable);  s = z[perm];  sigma ascending
    v    = isotonic_nondecreasing(s - sigma)
    out[perm[j]] = s[j] - v[j]

All helpers are ``noexcept nogil`` and allocate nothing: the caller passes the work space.
Sums are accumulated in double whatever the data type. NaN in the input is not detected
here (the Python wrappers reject it).

    cdef Py_ssize_t[::1] perm = ..., iwork = ...   # n and n entries (np.intp)
    cdef double[::1] dwork = ...                    # n entries
    project_permutahedron(&z[0], &sigma_asc[0], &out[0], n, &perm[0], &iwork[0], &dwork[0], 0)
    # later steps may pass warm=1 to reuse perm (the previous order) as the start of the sort,
    # which is then close to linear when z is nearly sorted in that order.
"""
from dualsolve._core.csr cimport floating


# In-place unweighted isotonic regression, nondecreasing:
#     u <- argmin_{v_1 <= ... <= v_n} sum_j (v_j - u_j)^2.
# ``cnt`` is n Py_ssize_t of work space. Adjacent blocks are pooled only on a strict
# violation, and every output value is the computed block mean that passed the order
# checks, so the result is exactly nondecreasing in floating point. Returns the number of
# blocks (0 when n == 0).
cdef Py_ssize_t pava_nondecreasing(double* u, Py_ssize_t n, Py_ssize_t* cnt) noexcept nogil

# Stable ascending argsort of key[0:n] into perm[0:n] (a merge sort, O(n log n) worst case,
# O(n) on input already sorted in perm's order). warm=0: perm is first set to 0..n-1;
# warm=1: perm must hold a permutation of 0..n-1 on entry and is used as the starting order
# (ties then keep that order). ``buf`` is n Py_ssize_t of work space.
cdef void argsort_stable(const floating* key, Py_ssize_t n, Py_ssize_t* perm, Py_ssize_t* buf,
                         bint warm) noexcept nogil

# The projection when z is already sorted ascending: s[0:n] ascending, sigma[0:n] ascending;
# out[j] = s[j] - isotonic(s - sigma)[j], in the sorted order. ``dwork`` is n doubles,
# ``cnt`` n Py_ssize_t. out may alias s.
cdef void project_permutahedron_sorted(const floating* s, const floating* sigma, floating* out,
                                       Py_ssize_t n, double* dwork, Py_ssize_t* cnt) noexcept nogil

# The projection of z[0:n] onto P(sigma), sigma[0:n] sorted ascending (any real values; for
# spectral risk a spectrum: nonnegative, summing to 1). Writes out[0:n] (out must not alias
# z) and leaves in perm the ascending stable order of z. Work space: perm n, iwork n
# Py_ssize_t, dwork n doubles. warm: see argsort_stable.
cdef void project_permutahedron(const floating* z, const floating* sigma, floating* out,
                                Py_ssize_t n, Py_ssize_t* perm, Py_ssize_t* iwork, double* dwork,
                                bint warm) noexcept nogil
