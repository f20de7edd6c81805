# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Sum-tree and alias-table samplers and the fixed-size mini-batch samplers (see
sampler.pxd), plus small Python wrappers that the tests use to check the C code's
distributions."""
from libc.stdint cimport uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset
from libc.math cimport isfinite, fabs

import numpy as np

from dualsolve._core.rng cimport rng_state, rng_seed, rng_uniform, rng_below, rng_shuffle


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
# Fixed-size non-uniform mini-batch sampling (He, Tappenden & Takac, 2018, Sec. 6.2)


cdef int mbsampler_init(MbSampler* s, Py_ssize_t n) noexcept nogil:
    """Buffers for n weights (malloc). Returns 0 or -1 (out of memory; then nothing is held)."""
    cdef Py_ssize_t k = n if n > 0 else 1
    s.n = n
    s.kind = MB_ALG3
    s.m = 0
    s.b = 0
    s.ncomp = 0
    s.order = <Py_ssize_t*>malloc(k * sizeof(Py_ssize_t))
    s.q = <double*>malloc(k * sizeof(double))
    s.qx = <double*>malloc(k * sizeof(double))
    s.cum = <double*>malloc(k * sizeof(double))
    s.comp_I = <Py_ssize_t*>malloc(k * sizeof(Py_ssize_t))
    s.comp_J = <Py_ssize_t*>malloc(k * sizeof(Py_ssize_t))
    s.work = <Py_ssize_t*>malloc(k * sizeof(Py_ssize_t))
    s.pairs = <MbPair*>malloc(2 * k * sizeof(MbPair))
    if (s.order == NULL or s.q == NULL or s.qx == NULL or s.cum == NULL or s.comp_I == NULL
            or s.comp_J == NULL or s.work == NULL or s.pairs == NULL):
        mbsampler_free(s)
        return -1
    return 0


cdef void mbsampler_free(MbSampler* s) noexcept nogil:
    free(s.order)
    free(s.q)
    free(s.qx)
    free(s.cum)
    free(s.comp_I)
    free(s.comp_J)
    free(s.work)
    free(s.pairs)
    s.order = NULL
    s.q = NULL
    s.qx = NULL
    s.cum = NULL
    s.comp_I = NULL
    s.comp_J = NULL
    s.work = NULL
    s.pairs = NULL


cdef enum:
    _DIGIT_BITS = 11                  # six passes of 2,048 counts (16 KB on the stack) cover
    _DIGITS = 1 << _DIGIT_BITS        # 64 bits
    _PASSES = 6


cdef Py_ssize_t mb_sort_desc(const double* weights, Py_ssize_t n, Py_ssize_t* order,
                             MbPair* pairs) noexcept nogil:
    """order[0:m] = the indices of the m positive weights, by weight descending (ties by
    index). pairs: 2 n scratch entries. Returns m. O(n + m): a stable LSD radix sort of
    the weights' complemented bits (the bits of positive doubles, +inf included, order as
    the values do), 11 bits a pass; a digit that every key shares costs no pass. It is
    called at every mini-batch iteration, where qsort's comparisons took a quarter of
    adfSDCA's time on news20."""
    cdef Py_ssize_t i, p, m = 0, shift, total, c
    cdef Py_ssize_t counts[_DIGITS]
    cdef MbPair* src = pairs
    cdef MbPair* dst
    cdef MbPair* tmp
    cdef uint64_t bits, digit
    for i in range(n):
        if weights[i] > 0.0:
            memcpy(&bits, &weights[i], sizeof(double))
            src[m].key = ~bits
            src[m].idx = i
            m += 1
    dst = pairs + m
    for p in range(_PASSES):
        shift = p * _DIGIT_BITS
        memset(counts, 0, sizeof(counts))
        for i in range(m):
            counts[(src[i].key >> shift) & (_DIGITS - 1)] += 1
        if m == 0 or counts[(src[0].key >> shift) & (_DIGITS - 1)] == m:
            continue                      # one digit for every key: the order stands
        total = 0
        for digit in range(_DIGITS):
            c = counts[digit]
            counts[digit] = total
            total += c
        for i in range(m):
            digit = (src[i].key >> shift) & (_DIGITS - 1)
            dst[counts[digit]] = src[i]
            counts[digit] += 1
        tmp = src
        src = dst
        dst = tmp
    for i in range(m):
        order[i] = src[i].idx
    return m


cdef Py_ssize_t mb_waterfill_sorted(const double* ws, Py_ssize_t m, Py_ssize_t b,
                                    double* q) noexcept nogil:
    """Water-filling: ws[0:m] positive and descending; q[l] = min(1, c ws[l]) with c such
    that sum q = b_eff = min(b, m), which is returned. The capped entries form a prefix
    [0, k): k is the first position with c_k ws[k] <= 1, c_k = (b_eff - k) / sum_{l>=k} ws[l]
    (then c_k ws[l] >= 1 for l < k follows from the minimality of k). O(m); the tail sums
    are accumulated from the smallest entry up. q is used as scratch for them."""
    cdef Py_ssize_t l, k, be = b if b < m else m
    cdef double c = 0.0, acc = 0.0
    if be <= 0:
        return 0
    if be == m:
        for l in range(m):
            q[l] = 1.0
        return be
    for l in range(m - 1, -1, -1):
        acc += ws[l]
        q[l] = acc                          # tail sum T_l
    k = 0
    while k < be:
        c = (be - k) / q[k]
        if c * ws[k] <= 1.0:
            break
        k += 1
    # k < be always (at k = be - 1: ws[k] / T_k <= 1); the guard only protects rounding
    if k >= be:
        k = be - 1
        c = 1.0 / q[k]
    for l in range(k):
        q[l] = 1.0
    for l in range(k, m):
        q[l] = c * ws[l]
        if q[l] > 1.0:
            q[l] = 1.0
    return be


cdef Py_ssize_t mb_alg3_decompose(const double* qs, Py_ssize_t m, Py_ssize_t b, double* cum,
                                  Py_ssize_t* comp_I, Py_ssize_t* comp_J) noexcept nogil:
    """Algorithm 3 of He et al. (2018), misprints corrected (line 5's ``p_i = q_b`` is
    ``q_i = q_b``; eq. 31's ``j/b`` is ``j^k/b``; its first term, whose denominator is 0 when
    j^k = b, applies only when j^k > b): write the marginals qs[0:m] (descending, in
    (0, 1], sum b, 1 <= b <= m) as a mixture of components k = 0..K-1 with masses r_k:
    component k takes the positions [0, I_k) and b - I_k positions drawn uniformly from the
    tie block [I_k, J_k] (0-based), which contains position b - 1. cum[k] = r_0 + .. + r_k.
    Returns K <= m.

    O(m): the entries are never touched one by one. A is the total mass taken from the top
    items so far (their current value is qs[l] - A), c the common current value of the
    block; untouched entries below the block keep qs[l]. Per step r is the smaller of the
    amounts that make the top meet the block and the block meet the next entry (31), then
    A += r, c -= (b - I)/B r (32), and the block grows by the entry that met it (forced, so
    there are at most m steps) and by every further neighbour within 1e-12 * qs[0] of c
    (exact float ties would loop or leave zero-mass components). Stops when
    c <= 1e-12 * qs[0]."""
    cdef Py_ssize_t I = b - 1, J = b - 1, K = 0, B, mc
    cdef double tol = 1e-12 * qs[0], A = 0.0, c = qs[b - 1], r, r1, r2, nxt, total = 0.0
    cdef bint top, bottom
    while I > 0 and fabs(qs[I - 1] - c) <= tol:
        I -= 1
    while J + 1 < m and fabs(qs[J + 1] - c) <= tol:
        J += 1
    while K == 0 or (c > tol and K < m):     # at least one component, so draws are defined
        B = J - I + 1
        mc = b - I
        nxt = qs[J + 1] if J + 1 < m else 0.0
        r2 = (<double>B / mc) * (c - nxt)
        if I > 0 and J > b - 1:
            r1 = (<double>B / (J + 1 - b)) * ((qs[I - 1] - A) - c)
        else:
            r1 = r2 + 1.0                    # the top never meets the block
        top = r1 <= r2
        bottom = r2 <= r1
        r = r1 if top else r2
        total += r
        cum[K] = total
        comp_I[K] = I
        comp_J[K] = J
        K += 1
        A += r
        c -= (<double>mc / B) * r
        if bottom:
            if J + 1 < m:
                J += 1
            else:
                c = 0.0                      # the block met the implicit q_{m+1} = 0
        if top:
            I -= 1
        while I > 0 and fabs((qs[I - 1] - A) - c) <= tol:
            I -= 1
        while J + 1 < m and fabs(qs[J + 1] - c) <= tol:
            J += 1
    return K


cdef void _waterfill_unsorted(const double* weights, const Py_ssize_t* idx, Py_ssize_t m,
                              Py_ssize_t be, double* qx) noexcept nogil:
    """Water-filling without a sort (systematic sampler): cap every entry with c w > 1 and
    recompute c on the rest, until nothing new is capped (< be rounds). qx[idx[l]] set;
    capped entries are marked with qx = 2 during the rounds."""
    cdef Py_ssize_t l, ncap = 0, new
    cdef double T, c, w
    if be == m:
        for l in range(m):
            qx[idx[l]] = 1.0
        return
    for l in range(m):
        qx[idx[l]] = 0.0
    while True:
        T = 0.0
        for l in range(m):
            if qx[idx[l]] != 2.0:
                T += weights[idx[l]]
        c = (be - ncap) / T if T > 0.0 else 0.0
        new = 0
        for l in range(m):
            if qx[idx[l]] != 2.0 and c * weights[idx[l]] > 1.0:
                qx[idx[l]] = 2.0
                ncap += 1
                new += 1
        if new == 0 or ncap >= be:
            break
    for l in range(m):
        if qx[idx[l]] == 2.0:
            qx[idx[l]] = 1.0
        else:
            w = c * weights[idx[l]]
            qx[idx[l]] = w if w < 1.0 else 1.0


cdef Py_ssize_t mb_prepare(MbSampler* s, const double* weights, Py_ssize_t b,
                           int kind) noexcept nogil:
    """Marginals q (water-filled from the nonnegative weights[0:n], sum b_eff) and, for
    MB_ALG3, the Algorithm 3 components. Returns b_eff = min(b, #positive weights); 0 when
    every weight is 0 (then mb_draw draws nothing). s.qx[i] = q_i for positive weights."""
    cdef Py_ssize_t l, m = 0
    s.kind = kind
    s.ncomp = 0
    if kind == MB_ALG3:
        m = mb_sort_desc(weights, s.n, s.order, s.pairs)
        for l in range(m):
            s.cum[l] = weights[s.order[l]]          # sorted weights (cum is scratch here)
        s.b = mb_waterfill_sorted(s.cum, m, b, s.q)
        s.m = m
        if s.b == 0:
            return 0
        for l in range(m):
            s.qx[s.order[l]] = s.q[l]
        s.ncomp = mb_alg3_decompose(s.q, m, s.b, s.cum, s.comp_I, s.comp_J)
        return s.b
    for l in range(s.n):
        if weights[l] > 0.0:
            s.order[m] = l
            m += 1
    s.m = m
    s.b = b if b < m else m
    if s.b > 0:
        _waterfill_unsorted(weights, s.order, m, s.b, s.qx)
    return s.b


cdef Py_ssize_t mb_draw(MbSampler* s, rng_state* rng, Py_ssize_t* out) noexcept nogil:
    """One mini-batch after mb_prepare: out[0:b_eff] distinct indices with
    P(i in S) = q_i; returns b_eff.

    MB_ALG3: component K with probability r_K (binary search on cum), its top positions,
    then b - I_K block positions by a partial Fisher-Yates on a copy of the block (O(B_K));
    s is not modified, so draws can be repeated. MB_SYSTEMATIC: shuffle the positive
    indices (O(m), this permutes s.order), lay the q_i end to end and take the items hit by
    the points (u + j) T / b_eff, j < b_eff (T the laid length, = b_eff up to rounding); an
    item is taken at most once and the last items are taken when exactly as many remain as
    points, so |S| = b_eff also under rounding."""
    cdef Py_ssize_t lo, hi, mid, K, I, J, B, mc, j, t, tmp, l, cnt = 0, be = s.b
    cdef double x, total, acc, step
    if be <= 0:
        return 0
    if s.kind == MB_ALG3:
        x = rng_uniform(rng) * s.cum[s.ncomp - 1]
        lo = 0
        hi = s.ncomp - 1
        while lo < hi:                       # first k with cum[k] > x
            mid = (lo + hi) // 2
            if s.cum[mid] > x:
                hi = mid
            else:
                lo = mid + 1
        K = lo
        I = s.comp_I[K]
        J = s.comp_J[K]
        for l in range(I):
            out[l] = s.order[l]
        B = J - I + 1
        mc = be - I
        for l in range(B):
            s.work[l] = s.order[I + l]
        for j in range(mc):
            t = j + <Py_ssize_t>rng_below(rng, <unsigned long long>(B - j))
            tmp = s.work[j]
            s.work[j] = s.work[t]
            s.work[t] = tmp
            out[I + j] = s.work[j]
        return be
    rng_shuffle(rng, s.order, s.m)
    total = 0.0
    for l in range(s.m):
        total += s.qx[s.order[l]]
    step = total / be
    x = rng_uniform(rng) * step
    acc = 0.0
    j = 0
    for l in range(s.m):
        if cnt == be:
            break
        acc += s.qx[s.order[l]]
        if (j < be and x + j * step < acc) or s.m - l == be - cnt:
            out[cnt] = s.order[l]
            cnt += 1
            j += 1
    return cnt


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


_MB_KINDS = {"alg3": MB_ALG3, "systematic": MB_SYSTEMATIC}


def waterfill(weights, Py_ssize_t b):
    """q_i = min(1, c w_i) with sum q = b_eff = min(b, #positive weights): marginals that
    Algorithm 3 of He et al. (2018) accepts (q_i <= 1), which b p* of their eq. 17 may violate.
    Returns (q by index, b_eff); q_i = 0 where w_i = 0."""
    cdef const double[::1] w = _weights_array(weights)
    cdef Py_ssize_t n = w.shape[0]
    if b < 1:
        raise ValueError(f"b must be >= 1; got {b}")
    cdef MbSampler s
    if mbsampler_init(&s, n) != 0:
        raise MemoryError()
    q = np.zeros(n)
    cdef double[::1] qv = q
    cdef Py_ssize_t l, be
    try:
        if n > 0:
            be = mb_prepare(&s, &w[0], b, MB_ALG3)
            for l in range(s.m):
                qv[s.order[l]] = s.q[l]
        else:
            be = 0
    finally:
        mbsampler_free(&s)
    return q, be


def sort_desc(weights):
    """The indices of the positive weights by weight descending, ties by ascending index:
    the C sort (mb_sort_desc) that Algorithm 3's sampler runs at every iteration."""
    cdef const double[::1] w = _weights_array(weights)
    cdef Py_ssize_t n = w.shape[0], m
    cdef MbSampler s
    if mbsampler_init(&s, n) != 0:
        raise MemoryError()
    try:
        m = mb_sort_desc(&w[0], n, s.order, s.pairs) if n else 0
        order = np.array(<Py_ssize_t[:m]>s.order) if m else np.zeros(0, dtype=np.intp)
    finally:
        mbsampler_free(&s)
    return order


def alg3_components(q, Py_ssize_t b):
    """The Algorithm 3 decomposition of the marginals q (0 <= q_i <= 1, sum q = b, at least
    b positive entries). Returns (order, r, I, J): order = the positive indices by q
    descending; component k has mass r[k] and is the set order[:I[k]] plus b - I[k]
    elements drawn uniformly from order[I[k]:J[k] + 1]."""
    cdef const double[::1] qv = _weights_array(q, "q")
    cdef Py_ssize_t n = qv.shape[0], m, K, k
    if b < 1:
        raise ValueError(f"b must be >= 1; got {b}")
    if n and (np.asarray(qv).max() > 1.0 or abs(np.asarray(qv).sum() - b) > 1e-9 * b):
        raise ValueError("q must satisfy 0 <= q_i <= 1 and sum q = b")
    cdef MbSampler s
    if mbsampler_init(&s, n) != 0:
        raise MemoryError()
    try:
        m = mb_sort_desc(&qv[0], n, s.order, s.pairs) if n else 0
        if m < b:
            raise ValueError(f"q has {m} positive entries, fewer than b = {b}")
        for k in range(m):
            s.q[k] = qv[s.order[k]]
        K = mb_alg3_decompose(s.q, m, b, s.cum, s.comp_I, s.comp_J)
        order = np.array(<Py_ssize_t[:m]>s.order)
        cum = np.array(<double[:K]>s.cum)
        I = np.array(<Py_ssize_t[:K]>s.comp_I)
        J = np.array(<Py_ssize_t[:K]>s.comp_J)
    finally:
        mbsampler_free(&s)
    return order, np.diff(cum, prepend=0.0), I, J


def minibatch_draw(weights, Py_ssize_t b, Py_ssize_t count, unsigned long long seed=0,
                   str sampler="alg3"):
    """count mini-batches drawn by the solvers' C code: water-filling of the weights to
    marginals q (sum b_eff), then Algorithm 3 ("alg3") or systematic sampling
    ("systematic"). Returns (draws of shape (count, b_eff), q by index)."""
    cdef const double[::1] w = _weights_array(weights)
    cdef Py_ssize_t n = w.shape[0], k, be
    if sampler not in _MB_KINDS:
        raise ValueError(f"sampler must be one of {list(_MB_KINDS)}; got {sampler!r}")
    if b < 1:
        raise ValueError(f"b must be >= 1; got {b}")
    if n < 1 or count < 0:
        raise ValueError("weights must not be empty and count must be >= 0")
    cdef MbSampler s
    cdef rng_state rng
    if mbsampler_init(&s, n) != 0:
        raise MemoryError()
    rng_seed(&rng, seed)
    try:
        be = mb_prepare(&s, &w[0], b, _MB_KINDS[sampler])
        out = np.empty((count, be), dtype=np.intp)
        q = np.zeros(n)
        for k in range(n):
            if w[k] > 0.0:
                q[k] = s.qx[k]
        if be > 0:
            o = out.reshape(-1)
            _draws_into(&s, &rng, o, count, be)
    finally:
        mbsampler_free(&s)
    return out, q


cdef void _draws_into(MbSampler* s, rng_state* rng, Py_ssize_t[::1] o, Py_ssize_t count,
                     Py_ssize_t be):
    cdef Py_ssize_t k
    with nogil:
        for k in range(count):
            mb_draw(s, rng, &o[k * be])
