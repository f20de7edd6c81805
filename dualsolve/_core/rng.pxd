# cython: language_level=3
"""A small seeded random generator usable without the GIL (never libc rand()).

xoshiro256** (Blackman & Vigna) seeded through splitmix64. Every solver takes its random
stream from here, so the same ``seed`` gives the same iterates on every platform.
"""
from libc.stdint cimport uint64_t


ctypedef struct rng_state:
    uint64_t s0
    uint64_t s1
    uint64_t s2
    uint64_t s3


cdef inline uint64_t _rotl(uint64_t x, int k) noexcept nogil:
    return (x << k) | (x >> (64 - k))


cdef inline uint64_t _splitmix64(uint64_t* x) noexcept nogil:
    x[0] += <uint64_t>0x9E3779B97F4A7C15ULL
    cdef uint64_t z = x[0]
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline void rng_seed(rng_state* st, uint64_t seed) noexcept nogil:
    """Expand a 64-bit seed into the 256-bit state (never all zero)."""
    cdef uint64_t x = seed
    st.s0 = _splitmix64(&x)
    st.s1 = _splitmix64(&x)
    st.s2 = _splitmix64(&x)
    st.s3 = _splitmix64(&x)


cdef inline uint64_t rng_next(rng_state* st) noexcept nogil:
    """Next 64 random bits."""
    cdef uint64_t result = _rotl(st.s1 * 5, 7) * 9
    cdef uint64_t t = st.s1 << 17
    st.s2 ^= st.s0
    st.s3 ^= st.s1
    st.s1 ^= st.s2
    st.s0 ^= st.s3
    st.s2 ^= t
    st.s3 = _rotl(st.s3, 45)
    return result


cdef inline uint64_t rng_below(rng_state* st, uint64_t n) noexcept nogil:
    """Unbiased integer in [0, n) for n >= 1: bitmask rejection (at most 2 draws expected)."""
    if n <= 1:
        return 0
    cdef uint64_t mask = n - 1
    mask |= mask >> 1
    mask |= mask >> 2
    mask |= mask >> 4
    mask |= mask >> 8
    mask |= mask >> 16
    mask |= mask >> 32
    cdef uint64_t x = rng_next(st) & mask
    while x >= n:
        x = rng_next(st) & mask
    return x


cdef inline double rng_uniform(rng_state* st) noexcept nogil:
    """Double in [0, 1) with 53 random bits."""
    return <double>(rng_next(st) >> 11) * (1.0 / 9007199254740992.0)


cdef inline void rng_shuffle(rng_state* st, Py_ssize_t* a, Py_ssize_t n) noexcept nogil:
    """Fisher-Yates shuffle of a[0:n] in place."""
    cdef Py_ssize_t i, j, t
    for i in range(n - 1, 0, -1):
        j = <Py_ssize_t>rng_below(st, <uint64_t>(i + 1))
        t = a[i]
        a[i] = a[j]
        a[j] = t
