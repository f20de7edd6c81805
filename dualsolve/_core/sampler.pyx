# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Sum-tree and alias-table samplers (see sampler.pxd), plus small Python wrappers that
the tests use to check the C code's distributions."""
from libc.stdlib cimport malloc, free
from libc.string cimport memset
from libc.math cimport isfinite

import numpy as np

from dualsolve._core.rng cimport rng_state, rng_seed


cdef Py_ssize_t sumtree_buffer_size(Py_ssize_t n) noexcept nogil:
    """Doubles needed for n leaves: 2 M, M the next power of two >= max(n, 1)."""
    cdef Py_ssize_t M = 1
    while M < n:
        M <<= 1
    return 2 * M


cdef int sumtree_init(SumTree* t, Py_ssize_t n, double* buffer) noexcept nogil:
    """All weights 0. buffer: sumtree_buffer_size(n) doubles, or NULL to allocate.
    Returns 0, or -1 when the allocation fails."""
    cdef Py_ssize_t size = sumtree_buffer_size(n)
    t.n = n
    t.M = size // 2
    t.owned = buffer == NULL
    if buffer == NULL:
        buffer = <double*>malloc(size * sizeof(double))
        if buffer == NULL:
            t.tree = NULL
            return -1
    t.tree = buffer
    memset(t.tree, 0, size * sizeof(double))
    return 0


cdef void sumtree_free(SumTree* t) noexcept nogil:
    if t.owned and t.tree != NULL:
        free(t.tree)
    t.tree = NULL
    t.owned = False


cdef void sumtree_build(SumTree* t, const double* weights) noexcept nogil:
    """All n leaves at once (padding 0), then every internal node bottom-up: O(M)."""
    cdef Py_ssize_t i, M = t.M
    cdef double* tr = t.tree
    for i in range(t.n):
        tr[M + i] = weights[i]
    for i in range(M + t.n, 2 * M):
        tr[i] = 0.0
    for i in range(M - 1, 0, -1):
        tr[i] = tr[2 * i] + tr[2 * i + 1]
    tr[0] = 0.0


cdef int alias_init(AliasTable* a, Py_ssize_t n, double* prob, Py_ssize_t* alias) noexcept nogil:
    """Buffers of n doubles and n indices, or NULL to allocate. Returns 0 or -1 (memory)."""
    a.n = n
    a.owned = prob == NULL
    a.prob = prob
    a.alias = alias
    if prob == NULL:
        a.prob = <double*>malloc((n if n > 0 else 1) * sizeof(double))
        a.alias = <Py_ssize_t*>malloc((n if n > 0 else 1) * sizeof(Py_ssize_t))
        if a.prob == NULL or a.alias == NULL:
            alias_free(a)
            return -1
    return 0


cdef void alias_free(AliasTable* a) noexcept nogil:
    if a.owned:
        free(a.prob)
        free(a.alias)
    a.prob = NULL
    a.alias = NULL
    a.owned = False


cdef int alias_build(AliasTable* a, const double* weights) noexcept nogil:
    """Vose's construction for probabilities weights / sum(weights).

    Returns 0; -1 if the scratch allocation fails; -2 if the weights do not sum to a
    positive finite number. Columns of zero weight get acceptance 0, so they are never
    drawn, also when rounding leaves them unpaired at the end.
    """
    cdef Py_ssize_t n = a.n, i, l, g, ns = 0, nl = 0, best = 0
    cdef double total = 0.0, scale
    cdef double* P = a.prob
    cdef Py_ssize_t* stack
    for i in range(n):
        total += weights[i]
        if weights[i] > weights[best]:
            best = i
    if not (total > 0.0 and isfinite(total)):
        return -2
    stack = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    if stack == NULL:
        return -1
    # small indices fill stack[0:ns), large ones stack[n-nl:n)
    scale = n / total
    for i in range(n):
        P[i] = weights[i] * scale
        a.alias[i] = i
        if P[i] < 1.0:
            stack[ns] = i
            ns += 1
        else:
            stack[n - 1 - nl] = i
            nl += 1
    while ns > 0 and nl > 0:
        ns -= 1
        l = stack[ns]
        g = stack[n - nl]
        nl -= 1
        a.alias[l] = g                   # P[l] stays as column l's acceptance
        P[g] = (P[g] - 1.0) + P[l]
        if P[g] < 1.0:
            stack[ns] = g
            ns += 1
        else:
            nl += 1
            stack[n - nl] = g
    while nl > 0:
        nl -= 1
        P[stack[n - 1 - nl]] = 1.0
    while ns > 0:                        # left over by rounding: their mass is ~1
        ns -= 1
        l = stack[ns]
        if weights[l] > 0.0:
            P[l] = 1.0
        else:
            P[l] = 0.0
            a.alias[l] = best
    free(stack)
    return 0


# ---------------------------------------------------------------------------------------
# Python wrappers (tests, experiments)


def _weights_array(weights, name="weights"):
    w = np.ascontiguousarray(weights, dtype=np.float64)
    if w.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {w.shape}")
    if not np.isfinite(w).all():
        raise ValueError(f"{name} contains NaN or infinity")
    if (w < 0).any():
        raise ValueError(f"{name} must be >= 0")
    return w


cdef class SumTreeSampler:
    """A sum-tree over n nonnegative weights (all 0 at first)."""
    cdef SumTree t

    def __cinit__(self, Py_ssize_t n):
        if n < 1:
            raise ValueError(f"n must be >= 1; got {n}")
        if sumtree_init(&self.t, n, NULL) != 0:
            raise MemoryError()

    def __dealloc__(self):
        sumtree_free(&self.t)

    @property
    def n(self):
        return self.t.n

    def build(self, weights):
        """Set all n weights at once."""
        cdef const double[::1] w = _weights_array(weights)
        if w.shape[0] != self.t.n:
            raise ValueError(f"weights must have length {self.t.n}; got {w.shape[0]}")
        sumtree_build(&self.t, &w[0])

    def set(self, Py_ssize_t i, double w):
        if not 0 <= i < self.t.n:
            raise IndexError(f"index {i} out of range for {self.t.n} weights")
        if not (w >= 0.0 and isfinite(w)):
            raise ValueError(f"weight must be finite and >= 0; got {w}")
        sumtree_set(&self.t, i, w)

    def get(self, Py_ssize_t i):
        if not 0 <= i < self.t.n:
            raise IndexError(f"index {i} out of range for {self.t.n} weights")
        return sumtree_get(&self.t, i)

    def total(self):
        return sumtree_total(&self.t)

    def leaves(self):
        return np.array(<double[:self.t.n]>(self.t.tree + self.t.M))

    def nodes(self):
        """The whole array (index 0 unused, root at 1, leaves at M..M+n-1)."""
        return np.array(<double[:2 * self.t.M]>self.t.tree)

    def sample(self, double u):
        """The index for a uniform u in [0, 1); -1 when every weight is 0."""
        if not 0.0 <= u < 1.0:
            raise ValueError(f"u must lie in [0, 1); got {u}")
        return sumtree_sample(&self.t, u)

    def draw(self, Py_ssize_t count, unsigned long long seed=0):
        """count draws with the solvers' generator seeded by seed."""
        cdef rng_state rng
        out = np.empty(count, dtype=np.intp)
        cdef Py_ssize_t[::1] o = out
        cdef Py_ssize_t k
        rng_seed(&rng, seed)
        with nogil:
            for k in range(count):
                o[k] = sumtree_draw(&self.t, &rng)
        return out


cdef class AliasSampler:
    """Vose alias table for fixed nonnegative weights (not all zero)."""
    cdef AliasTable a

    def __cinit__(self, weights):
        cdef const double[::1] w = _weights_array(weights)
        if w.shape[0] < 1:
            raise ValueError("weights must not be empty")
        if alias_init(&self.a, w.shape[0], NULL, NULL) != 0:
            raise MemoryError()
        cdef int status = alias_build(&self.a, &w[0])
        if status == -1:
            raise MemoryError()
        if status == -2:
            raise ValueError("weights must have a positive finite sum")

    def __dealloc__(self):
        alias_free(&self.a)

    @property
    def prob(self):
        return np.array(<double[:self.a.n]>self.a.prob)

    @property
    def alias(self):
        return np.array(<Py_ssize_t[:self.a.n]>self.a.alias)

    def probabilities(self):
        """The distribution the table encodes: (prob_k + sum of (1 - prob_j) aliased to k)/n."""
        p = self.prob
        q = p.copy()
        np.add.at(q, self.alias, 1.0 - p)
        return q / self.a.n

    def draw(self, Py_ssize_t count, unsigned long long seed=0):
        cdef rng_state rng
        out = np.empty(count, dtype=np.intp)
        cdef Py_ssize_t[::1] o = out
        cdef Py_ssize_t k
        rng_seed(&rng, seed)
        with nogil:
            for k in range(count):
                o[k] = alias_draw(&self.a, &rng)
        return out
