# cython: language_level=3
"""Kernels on CSR rows and sources of kernel columns for the kernel SDCA loops.

A kernel is a :c:type:`KernelSpec` (scikit-learn's conventions)::

    KERNEL_LINEAR   k(x, x') = <x, x'>
    KERNEL_RBF      k(x, x') = exp(-gamma ||x - x'||^2)
    KERNEL_POLY     k(x, x') = (gamma <x, x'> + coef0) ^ degree
    KERNEL_PRECOMPUTED       the user's own matrix (never evaluated here)

Every kernel is evaluated from the inner product and the two squared norms
(:c:func:`kernel_from_dot`), so that a kernel entry between augmented (mixup) points needs
only inner products of originals (docs/mixup.md, "Problem").

A :c:type:`ColumnSource` hands the solver columns of the n x n kernel matrix ``K`` of the
training set and its diagonal, without the GIL::

    from dualsolve._core.kernels cimport ColumnSource
    cdef ColumnSource src = make_column_source(X, plan, kernel)   # Python-level factory
    cdef const double* col
    with nogil:
        col = src.column(i)          # K[:, i], n doubles, valid until the next column() call
        ...                          # src.diag[i] == K[i, i]

Implementations: ``DenseGram`` (the whole matrix, float64 or float32), ``PrecomputedGram``
(the user's matrix, no copy) and ``CachedColumns`` (columns computed from the original rows
and the mixup plan, through an LRU cache of bounded size, like libsvm's). A source keeps
scratch buffers and an LRU state: use one source per thread.
"""
from libc.math cimport exp
from libc.stdint cimport int64_t

cdef enum:
    KERNEL_LINEAR = 0
    KERNEL_RBF = 1
    KERNEL_POLY = 2
    KERNEL_PRECOMPUTED = 3


ctypedef struct KernelSpec:
    int kind          # KERNEL_*
    double gamma      # rbf width / poly scale (unused for linear)
    double coef0      # poly offset
    int degree        # poly degree (>= 0)


cdef inline double ipow(double x, int p) noexcept nogil:
    """x ** p for an integer p >= 0 by repeated squaring (exact for small p, no libm call)."""
    cdef double result = 1.0
    while p > 0:
        if p & 1:
            result *= x
        x *= x
        p >>= 1
    return result


cdef inline double kernel_from_dot(const KernelSpec* k, double dot, double sqa,
                                   double sqb) noexcept nogil:
    """The kernel between a and b from <a, b> = dot, ||a||^2 = sqa and ||b||^2 = sqb.

    The RBF distance is clamped at 0: rounding can make ``sqa + sqb - 2 dot`` slightly
    negative for (nearly) equal points."""
    cdef double d2
    if k.kind == KERNEL_RBF:
        d2 = sqa + sqb - 2.0 * dot
        if d2 < 0.0:
            d2 = 0.0
        return exp(-k.gamma * d2)
    if k.kind == KERNEL_POLY:
        return ipow(k.gamma * dot + k.coef0, k.degree)
    return dot


# the C struct of a Python-level KernelParams (see kernels.pyx: make_kernel)
cdef KernelSpec kernel_spec_from(object params) except *


cdef class ColumnSource:
    """Columns of a symmetric n x n kernel matrix K, and its diagonal, without the GIL."""
    cdef readonly Py_ssize_t n
    cdef KernelSpec spec
    cdef double* diag                 # n: K[i, i]
    cdef object _diag                 # the float64 array behind diag

    cdef const double* column(self, Py_ssize_t i) noexcept nogil
    cdef void matvec(self, const double* v, double* out) noexcept nogil


cdef class StoredGram(ColumnSource):
    """The whole matrix in memory (row i is column i), float64 or float32."""
    cdef object _matrix               # (n, n) C-contiguous float64 or float32 array
    cdef const double* K64            # one of K64 / K32 is set
    cdef const float* K32
    cdef double* scratch              # n: float32 column converted to float64
    cdef object _scratch


cdef class DenseGram(StoredGram):
    """K computed once from the original rows and the mixup plan."""
    cdef object _sqnorm               # squared norms of the augmented points


cdef class PrecomputedGram(StoredGram):
    """The user's kernel matrix of the augmented set (kernel="precomputed")."""
    pass


cdef class CachedColumns(ColumnSource):
    """Columns computed on demand from the original rows X_o and the plan (a, b, r), never
    materialising mixed rows, through an LRU cache of ``capacity`` columns."""
    cdef readonly Py_ssize_t n_orig, n_mix, n_features, capacity
    cdef readonly Py_ssize_t hits, misses, evictions
    # the originals by row (float64, int64: one conversion of the small original set)
    cdef const double* rdata
    cdef const int64_t* rindices
    cdef const int64_t* rindptr
    # ... and by column: a dense column-major slab for well-filled features (vectorised
    # axpy), CSC for the rest; dense_at[f] >= 0 is feature f's offset in the slab
    cdef const double* cdata
    cdef const int64_t* cindices
    cdef const int64_t* cindptr
    cdef const double* dense_cols
    cdef const int64_t* dense_at
    # the plan and the augmented squared norms
    cdef const int64_t* pa
    cdef const int64_t* pb
    cdef const double* pr
    cdef double* sq
    # work: a dense vector of length n_features (kept all zero between calls)
    cdef double* work
    # the cache: capacity slots of n doubles, a doubly linked LRU list over slots
    cdef double* slab
    cdef int64_t* slot_of             # n: slot holding column i, or -1
    cdef int64_t* owner               # capacity: column held by a slot
    cdef int64_t* prev                # LRU neighbours of a slot (-1: none)
    cdef int64_t* next
    cdef Py_ssize_t head, tail, used  # head: most recently used slot
    cdef double* scratch              # n: columns computed by matvec outside the cache
    cdef object _keep                 # the arrays behind every pointer above

    cdef void compute_column(self, Py_ssize_t i, double* out) noexcept nogil
