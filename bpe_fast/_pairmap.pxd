# cython: language_level=3
"""An open-addressing hash map from a symbol pair to a dense int32 id, shared by the kernels.

Invariants:
* a pair (left, right) of non-negative int32 ids is the key ``left << 32 | right``; as unsigned
  64-bit integers keys order exactly like (left, right) tuples, which the tie-break relies on;
* EMPTY (all ones) is never a key, so it marks free slots;
* the table is at most half full, so linear probing stays short; it doubles when needed.
"""
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, free

cdef enum:
    MIN_BITS = 10

cdef extern from *:
    """
    #define BPE_EMPTY_KEY 0xFFFFFFFFFFFFFFFFULL
    #if defined(__GNUC__) || defined(__clang__)
    #define bpe_pairmap_prefetch(p) __builtin_prefetch((p))
    #else
    #define bpe_pairmap_prefetch(p) ((void)(p))
    #endif
    """
    const uint64_t EMPTY "BPE_EMPTY_KEY"
    void _prefetch "bpe_pairmap_prefetch"(const void* p) nogil

cdef struct PairMap:
    uint64_t* keys
    int32_t* values
    int bits
    size_t size


cdef inline uint64_t pair_key(int32_t left, int32_t right) noexcept nogil:
    return (<uint64_t>left << 32) | <uint32_t>right

cdef inline int32_t key_left(uint64_t key) noexcept nogil:
    return <int32_t>(key >> 32)

cdef inline int32_t key_right(uint64_t key) noexcept nogil:
    return <int32_t>(<uint32_t>key)


cdef inline size_t _slot(uint64_t key, int bits) noexcept nogil:
    # Fibonacci hashing: the top bits of key * 2^64/phi spread consecutive ids well.
    return <size_t>((key * <uint64_t>0x9E3779B97F4A7C15) >> (64 - bits))


cdef inline int half_full_bits(size_t expected, int min_bits) noexcept nogil:
    """The bits of the smallest power-of-2 table (of at least 2**min_bits slots) that holds
    ``expected`` keys at most half full, with a free slot to spare (the maps of the kernels and
    of the encoder size themselves so)."""
    cdef int bits = min_bits
    while (<size_t>1 << bits) < 2 * expected + 2:
        bits += 1
    return bits


cdef inline int pairmap_init(PairMap* m, size_t expected) noexcept nogil:
    cdef int bits = half_full_bits(expected, MIN_BITS)
    cdef size_t cap = <size_t>1 << bits
    m.keys = <uint64_t*>malloc(cap * sizeof(uint64_t))
    m.values = <int32_t*>malloc(cap * sizeof(int32_t))
    if m.keys == NULL or m.values == NULL:
        return -1
    cdef size_t i
    for i in range(cap):
        m.keys[i] = EMPTY
    m.bits = bits
    m.size = 0
    return 0


cdef inline void pairmap_free(PairMap* m) noexcept nogil:
    free(m.keys)
    free(m.values)
    m.keys = NULL
    m.values = NULL


cdef inline void pairmap_prefetch(const PairMap* m, uint64_t key) noexcept nogil:
    """Ask for the slot where a probe for key starts: a probe that would wait for memory overlaps
    other work when asked for well before (a hint only: the map may grow meanwhile)."""
    cdef size_t i = _slot(key, m.bits)
    _prefetch(&m.keys[i])
    _prefetch(&m.values[i])


cdef inline int32_t pairmap_get(const PairMap* m, uint64_t key) noexcept nogil:
    """The id stored for key, or -1."""
    cdef size_t mask = (<size_t>1 << m.bits) - 1
    cdef size_t i = _slot(key, m.bits)
    while True:
        if m.keys[i] == key:
            return m.values[i]
        if m.keys[i] == EMPTY:
            return -1
        i = (i + 1) & mask


cdef inline int _pairmap_grow(PairMap* m) noexcept nogil:
    cdef uint64_t* old_keys = m.keys
    cdef int32_t* old_values = m.values
    cdef size_t old_cap = <size_t>1 << m.bits
    cdef size_t i, j, mask
    if pairmap_init(m, old_cap) != 0:   # capacity at least 2 * old_cap
        return -1
    mask = (<size_t>1 << m.bits) - 1
    for i in range(old_cap):
        if old_keys[i] != EMPTY:
            j = _slot(old_keys[i], m.bits)
            while m.keys[j] != EMPTY:
                j = (j + 1) & mask
            m.keys[j] = old_keys[i]
            m.values[j] = old_values[i]
            m.size += 1
    free(old_keys)
    free(old_values)
    return 0


cdef inline int32_t pairmap_get_or_add(PairMap* m, uint64_t key, int32_t new_value) noexcept nogil:
    """The id stored for key; if absent, store new_value and return it. -2 if out of memory."""
    cdef size_t mask = (<size_t>1 << m.bits) - 1
    cdef size_t i = _slot(key, m.bits)
    while True:
        if m.keys[i] == key:
            return m.values[i]
        if m.keys[i] == EMPTY:
            break
        i = (i + 1) & mask
    if 2 * (m.size + 1) > (<size_t>1 << m.bits):
        if _pairmap_grow(m) != 0:
            return -2
        return pairmap_get_or_add(m, key, new_value)
    m.keys[i] = key
    m.values[i] = new_value
    m.size += 1
    return new_value
