# cython: language_level=3
"""A single-producer single-consumer ring of (row, coefficient) messages between two
threads: SDCA's threaded pass sends each step on features another thread owns to that
thread's ring (dualsolve/sdca/_sdca.pyx, ``_epoch_owned``).

The producer writes entries and publishes its tail with a release store every
``SPSC_PUBLISH`` entries (and on ``spsc_flush``); the consumer reads the tail with an
acquire load and hands back the slots by publishing its head. Publishing in batches keeps
the two counters' cache lines from bouncing between cores on every row. The counters sit on
cache lines of their own (``_pad*``)."""
from libc.stdint cimport uintptr_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define DS_LOAD_ACQUIRE(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
    #define DS_STORE_RELEASE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
    #define DS_HAVE_ATOMICS 1
    #else
    #define DS_LOAD_ACQUIRE(p) (*(volatile long long*)(p))
    #define DS_STORE_RELEASE(p, v) (*(volatile long long*)(p) = (v))
    #define DS_HAVE_ATOMICS 0
    #endif
    #if defined(__x86_64__) || defined(__i386__)
    #define DS_CPU_RELAX() __builtin_ia32_pause()
    #else
    #define DS_CPU_RELAX() ((void)0)
    #endif
    """
    long long DS_LOAD_ACQUIRE(long long* p) noexcept nogil
    void DS_STORE_RELEASE(long long* p, long long v) noexcept nogil
    int DS_HAVE_ATOMICS
    void DS_CPU_RELAX() noexcept nogil       # a spinning thread's pause

cdef enum:
    SPSC_PUBLISH = 32


ctypedef struct SpscRing:
    # four groups of 64 bytes, one cache line each when the ring is 64-byte aligned
    # (spsc_alloc): a line written by one thread is read by the other only through tail
    # and head
    long long tail             # written by the producer (release), read by the consumer
    char _pad0[56]
    long long head             # written by the consumer (release), read by the producer
    char _pad1[56]
    long long local_tail       # the producer's own copy (only it touches it)
    long long known_head       # the producer's last view of head
    char _pad2[48]
    long long cap              # read-only while in use
    Py_ssize_t* row
    double* coef
    char _pad3[40]


cdef inline SpscRing* spsc_alloc(Py_ssize_t count, void** block) noexcept nogil:
    """``count`` zeroed rings on a 64-byte boundary (NULL when out of memory); free
    ``block[0]`` when done."""
    cdef size_t size = count * sizeof(SpscRing)
    cdef char* raw = <char*>malloc(size + 64)
    block[0] = raw
    if raw == NULL:
        return NULL
    raw = raw + (64 - (<uintptr_t>raw) % 64) % 64
    memset(raw, 0, size)
    return <SpscRing*>raw


cdef inline int spsc_init(SpscRing* r, long long cap) noexcept nogil:
    """0 on success, -1 when out of memory."""
    r.tail = 0
    r.head = 0
    r.local_tail = 0
    r.known_head = 0
    r.cap = cap
    r.row = <Py_ssize_t*>malloc(cap * sizeof(Py_ssize_t))
    r.coef = <double*>malloc(cap * sizeof(double))
    if r.row == NULL or r.coef == NULL:
        free(r.row)
        free(r.coef)
        r.row = NULL
        r.coef = NULL
        return -1
    return 0


cdef inline void spsc_free(SpscRing* r) noexcept nogil:
    free(r.row)
    free(r.coef)
    r.row = NULL
    r.coef = NULL


cdef inline bint spsc_full(SpscRing* r) noexcept nogil:
    """Whether the producer must wait (it refreshes its view of head first)."""
    if r.local_tail - r.known_head < r.cap:
        return False
    DS_STORE_RELEASE(&r.tail, r.local_tail)     # the consumer must see what is waiting
    r.known_head = DS_LOAD_ACQUIRE(&r.head)
    return r.local_tail - r.known_head >= r.cap


cdef inline void spsc_push(SpscRing* r, Py_ssize_t row, double coef) noexcept nogil:
    """Append a message (the caller has waited while spsc_full)."""
    cdef long long slot = r.local_tail % r.cap
    r.row[slot] = row
    r.coef[slot] = coef
    r.local_tail += 1
    if r.local_tail % SPSC_PUBLISH == 0:
        DS_STORE_RELEASE(&r.tail, r.local_tail)


cdef inline void spsc_flush(SpscRing* r) noexcept nogil:
    DS_STORE_RELEASE(&r.tail, r.local_tail)


cdef inline void spsc_reset(SpscRing* r) noexcept nogil:
    """Empty the ring (no thread may be using it)."""
    r.tail = 0
    r.head = 0
    r.local_tail = 0
    r.known_head = 0


cdef inline long long spsc_ready(SpscRing* r) noexcept nogil:
    """The consumer: messages [r.head, spsc_ready(r)) are readable."""
    return DS_LOAD_ACQUIRE(&r.tail)


cdef inline void spsc_release(SpscRing* r, long long upto) noexcept nogil:
    """The consumer: slots before ``upto`` may be written again."""
    DS_STORE_RELEASE(&r.head, upto)
