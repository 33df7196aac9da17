# cython: language_level=3
"""Pages for the token ids ahead of their writes.

Invariant: nothing here changes a result. ``populate_ahead`` asks the operating system for the
pages of ids about to be written (Linux's MADV_POPULATE_WRITE); where it is refused it does
nothing and is never asked again, and the ids get their pages at their first write, as any memory.
The id buffer (_encode.pyx's ``_Ids``) calls it as it reserves room.
"""
from libc.stdint cimport uint32_t

cdef extern from *:
    """
    #include <sys/mman.h>
    #include <stdint.h>
    #ifndef MADV_POPULATE_WRITE
    #define MADV_POPULATE_WRITE 23
    #endif
    /* Give ids [from, to) of data their pages now, and 256 KB more (within capacity), with one
       call (Linux 5.14+; elsewhere nothing, and never asked again) instead of a page fault at the
       first id of each 4 KB: the ids are the one memory a pass keeps touching fresh (a page fault
       per 1,024 ids, a share of a pass over C code in system time); it takes a little off a
       pass (benchmarks/RESULTS.md, "Encode once (8)"). Returns the ids backed from data on (at
       least to). */
    static size_t bpe_populate_ahead(uint32_t* data, size_t from, size_t to, size_t capacity) {
        static int unsupported = 0;
        size_t want = to + (256 << 10) / 4;
        if (want > capacity) want = capacity;
        if (unsupported) return capacity;
        uintptr_t a = ((uintptr_t)(data + from)) & ~(uintptr_t)4095;
        uintptr_t b = ((uintptr_t)(data + want)) & ~(uintptr_t)4095;
        if (b > a && madvise((void*)a, b - a, MADV_POPULATE_WRITE) != 0) { unsupported = 1; return capacity; }
        return (size_t)(((uint32_t*)b) - data) > to ? (size_t)(((uint32_t*)b) - data) : to;
    }
    """
    size_t populate_ahead "bpe_populate_ahead"(uint32_t* data, size_t start, size_t stop, size_t capacity) noexcept nogil
