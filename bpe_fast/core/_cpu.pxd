# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Hints to the CPU, shared by every kernel.

Invariant: nothing here changes a result. A prefetch asks for the cache line holding an address
before it is read, so that the wait for memory overlaps other work; it never faults (the address
may be stale or past the end) and is dropped where the compiler has no such builtin.

* ``prefetch``: for a read (the line is kept in every cache level, as __builtin_prefetch(p)).
* ``prefetch_for_write``: for a line about to be written (__builtin_prefetch(p, 1, 3)), so it
  arrives ready to be modified.
* ``BPE_CPU_LEVEL`` (C): a route chosen once from what the processor has, which tests may set.
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
    /* A route chosen once from what the processor has: best() says the highest it can take (0:
       the plain one). BPE_CPU_LEVEL(name, best) makes name(), the route to take (asked of best()
       the first time; read and written atomically, as threads may ask at once), and
       name##_set(level), which sets another (clamped to 0..best(): never one the processor lacks)
       and returns the one before, so that tests take every route on one machine. Each extension
       keeps its own copy (a static in its code), with the same answer. */
    #define BPE_CPU_LEVEL(name, best) \
        static int name##_level = -1; \
        static inline int name(void) { \
            int level = __atomic_load_n(&name##_level, __ATOMIC_RELAXED); \
            if (level < 0) { \
                level = best(); \
                __atomic_store_n(&name##_level, level, __ATOMIC_RELAXED); \
            } \
            return level; \
        } \
        static inline int name##_set(int level) { \
            int most = best(), previous = name(); \
            __atomic_store_n(&name##_level, level < 0 ? 0 : level > most ? most : level, __ATOMIC_RELAXED); \
            return previous; \
        }
    """
    void prefetch "bpe_cpu_prefetch"(const void* p) noexcept nogil
    void prefetch_for_write "bpe_cpu_prefetch_for_write"(const void* p) noexcept nogil
