# cython: language_level=3
"""Work buffers of the AUC engines. Their d- and n-sized arrays are read at random positions
(one entry per nonzero of a sampled row), so on a large matrix every access may miss the TLB;
like NumPy's own large arrays, a buffer of 4 MiB or more is allocated on 2 MiB boundaries and
advised to the kernel as a transparent huge page region (Linux, MADV_HUGEPAGE; elsewhere or
when the kernel declines, ordinary pages). Zeroed; release with free()."""

cdef extern from *:
    """
    #include <stdint.h>
    #include <stdlib.h>
    #include <string.h>
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    static void* ds_auc_calloc(size_t count, size_t size, size_t align) {
        size_t bytes;
        void* p = NULL;
        if (size != 0 && count > SIZE_MAX / size) return NULL;
        bytes = count * size;
        if (bytes == 0) bytes = 1;
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (bytes >= ((size_t)1 << 22)) {
            size_t huge = (size_t)1 << 21;
            size_t rounded = (bytes + huge - 1) & ~(huge - 1);
            if (posix_memalign(&p, huge, rounded) != 0) return NULL;
            madvise(p, rounded, MADV_HUGEPAGE);
            memset(p, 0, bytes);
            return p;
        }
    #endif
        if (align <= sizeof(void*)) return calloc(1, bytes);
        if (posix_memalign(&p, align, bytes) != 0) return NULL;
        memset(p, 0, bytes);
        return p;
    }
    """
    void* ds_auc_calloc(size_t count, size_t size, size_t align) noexcept nogil
