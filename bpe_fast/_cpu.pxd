# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Hints to the CPU, shared by every kernel.

Invariant: nothing here changes a result. A prefetch asks for the cache line holding an address
before it is read, so that the wait for memory overlaps other work; it never faults (the address
may be stale or past the end) and is dropped where the compiler has no such builtin.

* ``prefetch``: for a read (the line is kept in every cache level, as __builtin_prefetch(p)).
* ``prefetch_for_write``: for a line about to be written (__builtin_prefetch(p, 1, 3)), so it
  arrives ready to be modified.
"""

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define bpe_cpu_prefetch(p) __builtin_prefetch((p))
    #define bpe_cpu_prefetch_for_write(p) __builtin_prefetch((p), 1, 3)
    #else
    #define bpe_cpu_prefetch(p) ((void)(p))
    #define bpe_cpu_prefetch_for_write(p) ((void)(p))
    #endif
    """
    void prefetch "bpe_cpu_prefetch"(const void* p) noexcept nogil
    void prefetch_for_write "bpe_cpu_prefetch_for_write"(const void* p) noexcept nogil
