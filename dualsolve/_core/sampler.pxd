# cython: language_level=3
"""Sampling from non-uniform probabilities (X. He, R. Tappenden, M. Takac, "Dual free adaptive
minibatch SDCA for empirical risk minimization", 2018, Secs. 6.1-6.2).

SumTree: n nonnegative weights in a complete binary tree with O(log n) ``set`` and
``sample`` and the total at the root (adaptive probabilities that change one weight at a
time). Leaves sit at ``tree[M + i]`` (M the next power of two >= n, padding leaves 0) and
every internal node is recomputed from its two children after a change, never updated by
a delta, so rounding cannot accumulate over millions of updates.

AliasTable: Vose's alias method for a fixed distribution: O(n) build, O(1) per draw.

MbSampler: fixed-size non-uniform mini-batches (Sec. 6.2): water-filling of weights to
marginals q (sum b, q <= 1), then exactly b distinct indices with P(i in S) = q_i, by the
paper's Algorithm 3 (corrected, O(m) after an O(m) radix sort of the m positive weights) or
by systematic (Madow) sampling (O(m), no sort).

Both draw only indices of positive weight: with nonnegative weights a sum is positive
exactly when one of its terms is, so the tree descent below never enters a zero subtree,
and zero-weight alias columns always defer to a positive one.

Buffers are given by the caller (``*_buffer_size`` doubles / indices) or, when NULL,
allocated by ``*_init`` and released by ``*_free``.

    cdef SumTree t
    sumtree_init(&t, n, NULL)           # -1 if out of memory
    sumtree_build(&t, weights)          # or sumtree_set(&t, i, w) one at a time
    i = sumtree_sample(&t, rng_uniform(&rng))   # -1 when every weight is 0
    sumtree_free(&t)
"""
from libc.stdint cimport uint64_t

from dualsolve._core.rng cimport rng_state, rng_uniform, rng_below


ctypedef struct SumTree:
    double* tree          # 2 M doubles; tree[1] is the root, leaves at M + i
    Py_ssize_t n
    Py_ssize_t M
    bint owned


ctypedef struct AliasTable:
    double* prob          # n acceptance probabilities of the columns
    Py_ssize_t* alias     # n alias indices
    Py_ssize_t n
    bint owned


# Fixed-size non-uniform mini-batch sampling (He et al., 2018, Sec. 6.2): b distinct indices
# with inclusion probabilities q_i = P(i in S), sum_i q_i = b, 0 <= q_i <= 1, the q obtained
# by water-filling from nonnegative weights: q_i = min(1, c w_i) with c such that
# sum q = b_eff, b_eff = min(b, number of positive weights).
#
#     cdef MbSampler s
#     mbsampler_init(&s, n)                      # -1 if out of memory
#     b_eff = mb_prepare(&s, weights, b, MB_ALG3)  # O(n): a radix sort of the m positive weights
#     mb_draw(&s, &rng, out)                     # out[0:b_eff] distinct; s.qx[i] = q_i
#     mbsampler_free(&s)
cdef enum:
    MB_ALG3 = 0           # Algorithm 3 (corrected): a mixture of <= m "top + uniform block" sets
    MB_SYSTEMATIC = 1     # systematic (Madow) sampling over a random permutation; no sort


ctypedef struct MbPair:
    uint64_t key          # a positive weight's bits complemented: ascending = weight descending
    Py_ssize_t idx


ctypedef struct MbSampler:
    Py_ssize_t n
    int kind              # MB_ALG3 / MB_SYSTEMATIC of the last mb_prepare
    Py_ssize_t m          # number of positive weights
    Py_ssize_t b          # b_eff of the last mb_prepare
    Py_ssize_t ncomp      # Algorithm 3 components
    Py_ssize_t* order     # n: positive-weight indices (ALG3: by weight, descending)
    double* q             # n: q of order[l] at position l
    double* qx            # n: q_i by original index (valid for positive weights only)
    double* cum           # n: cumulative component masses r_0 + ... + r_k
    Py_ssize_t* comp_I    # n: component k = positions [0, I_k) and b - I_k of [I_k, J_k]
    Py_ssize_t* comp_J    # n
    Py_ssize_t* work      # n
    MbPair* pairs         # 2 n: sort scratch


cdef int mbsampler_init(MbSampler* s, Py_ssize_t n) noexcept nogil
cdef void mbsampler_free(MbSampler* s) noexcept nogil
cdef Py_ssize_t mb_sort_desc(const double* weights, Py_ssize_t n, Py_ssize_t* order,
                             MbPair* pairs) noexcept nogil
cdef Py_ssize_t mb_waterfill_sorted(const double* ws, Py_ssize_t m, Py_ssize_t b,
                                    double* q) noexcept nogil
cdef Py_ssize_t mb_alg3_decompose(const double* qs, Py_ssize_t m, Py_ssize_t b, double* cum,
                                  Py_ssize_t* comp_I, Py_ssize_t* comp_J) noexcept nogil
cdef Py_ssize_t mb_prepare(MbSampler* s, const double* weights, Py_ssize_t b,
                           int kind) noexcept nogil
cdef Py_ssize_t mb_draw(MbSampler* s, rng_state* rng, Py_ssize_t* out) noexcept nogil


cdef Py_ssize_t sumtree_buffer_size(Py_ssize_t n) noexcept nogil
cdef int sumtree_init(SumTree* t, Py_ssize_t n, double* buffer) noexcept nogil
cdef void sumtree_free(SumTree* t) noexcept nogil
cdef void sumtree_build(SumTree* t, const double* weights) noexcept nogil

cdef int alias_init(AliasTable* a, Py_ssize_t n, double* prob, Py_ssize_t* alias) noexcept nogil
cdef void alias_free(AliasTable* a) noexcept nogil
cdef int alias_build(AliasTable* a, const double* weights) noexcept nogil


cdef inline double sumtree_total(const SumTree* t) noexcept nogil:
    return t.tree[1]


cdef inline double sumtree_get(const SumTree* t, Py_ssize_t i) noexcept nogil:
    return t.tree[t.M + i]


cdef inline void sumtree_set(SumTree* t, Py_ssize_t i, double w) noexcept nogil:
    """Weight i = w (>= 0); the path to the root is recomputed from the children."""
    cdef double* tr = t.tree
    cdef Py_ssize_t k = t.M + i
    tr[k] = w
    k >>= 1
    while k >= 1:
        tr[k] = tr[2 * k] + tr[2 * k + 1]
        k >>= 1


cdef inline Py_ssize_t sumtree_sample(const SumTree* t, double u) noexcept nogil:
    """Index i with probability weight_i / total, for u uniform in [0, 1); -1 if the total
    is 0. Never returns a zero-weight index: the descent enters the right subtree only when
    its sum is nonzero, and the left one only when its sum exceeds x >= 0 or the right sum is
    zero (then the left sum equals the parent's, which is positive)."""
    cdef const double* tr = t.tree
    cdef Py_ssize_t k = 1, M = t.M
    cdef double x = u * tr[1], left
    if not tr[1] > 0.0:
        return -1
    while k < M:
        left = tr[2 * k]
        if x < left or tr[2 * k + 1] == 0.0:
            k = 2 * k
        else:
            x -= left
            k = 2 * k + 1
    return k - M


cdef inline Py_ssize_t sumtree_draw(const SumTree* t, rng_state* rng) noexcept nogil:
    """sumtree_sample with one uniform from rng."""
    return sumtree_sample(t, rng_uniform(rng))


cdef inline Py_ssize_t alias_sample(const AliasTable* a, Py_ssize_t k, double u) noexcept nogil:
    """Column k (uniform in [0, n)) and u uniform in [0, 1) give the draw."""
    return k if u < a.prob[k] else a.alias[k]


cdef inline Py_ssize_t alias_draw(const AliasTable* a, rng_state* rng) noexcept nogil:
    """One draw: a uniform column, then a uniform to accept it or take its alias."""
    cdef Py_ssize_t k = <Py_ssize_t>rng_below(rng, <unsigned long long>a.n)
    return alias_sample(a, k, rng_uniform(rng))
