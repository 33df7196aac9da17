# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Open-addressing hash maps keyed by a symbol pair, shared by the kernels: one shape, two maps.

Invariants (of both maps):
* a pair (left, right) of non-negative int32 ids is the key ``left << 32 | right``; as unsigned
  64-bit integers keys order exactly like (left, right) tuples, which the tie-break relies on;
* EMPTY (all ones) is never a key, so it marks free slots;
* a key lives in the first slot at or after its home slot (``pair_home``) that holds it or is
  free (``probe``: linear probing); the table is at most half full (``half_full_bits``,
  ``over_half``), so probes stay short, and it doubles when one more key would pass that.

What differs is the value and how it is laid out:
* ``PairMap``: key -> a dense int32 id; keys and ids in two arrays (the ids are read only on a
  hit, and a probe walks the keys alone).
* ``TotalMap``: key -> an int64 weighted count, key and count side by side in one 16-byte slot,
  so a probe and the sum meet one cache line (a recount adds to millions of pairs).
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, free

from ._cpu cimport prefetch

cdef enum:
    MIN_BITS = 10

cdef extern from *:
    """
    #define BPE_EMPTY_KEY 0xFFFFFFFFFFFFFFFFULL
    """
    const uint64_t EMPTY "BPE_EMPTY_KEY"


cdef inline uint64_t pair_key(int32_t left, int32_t right) noexcept nogil:
    return (<uint64_t>left << 32) | <uint32_t>right

cdef inline int32_t key_left(uint64_t key) noexcept nogil:
    return <int32_t>(key >> 32)

cdef inline int32_t key_right(uint64_t key) noexcept nogil:
    return <int32_t>(<uint32_t>key)


# -- the shape both maps share -------------------------------------------------------------------
cdef inline size_t pair_home(uint64_t key, int bits) noexcept nogil:
    """Where a probe for key starts. Fibonacci hashing: the top bits of key * 2^64/phi spread
    consecutive ids well."""
    return <size_t>((key * <uint64_t>0x9E3779B97F4A7C15) >> (64 - bits))


cdef inline int half_full_bits(size_t expected, int min_bits) noexcept nogil:
    """The bits of the smallest power-of-2 table (of at least 2**min_bits slots) that holds
    ``expected`` keys at most half full, with a free slot to spare (the maps of the kernels and
    of the encoder size themselves so)."""
    cdef int bits = min_bits
    while (<size_t>1 << bits) < 2 * expected + 2:
        bits += 1
    return bits


cdef inline bint over_half(size_t size, int bits) noexcept nogil:
    """Whether one more key would fill a table of 2**bits slots holding ``size`` past half."""
    return 2 * (size + 1) > (<size_t>1 << bits)


cdef inline uint64_t key_at(const uint8_t* keys, size_t stride, size_t i) noexcept nogil:
    """The key of slot i, in a table whose keys are ``stride`` bytes apart from ``keys`` on."""
    return (<const uint64_t*>(keys + i * stride))[0]


cdef inline size_t probe(const uint8_t* keys, size_t stride, int bits, uint64_t key) noexcept nogil:
    """The slot that holds key, or else the free slot where it would go (key_at's layout; the
    stride is a constant where this is inlined, so it costs nothing)."""
    cdef size_t mask = (<size_t>1 << bits) - 1
    cdef size_t i = pair_home(key, bits)
    cdef uint64_t k
    while True:
        k = key_at(keys, stride, i)
        if k == key or k == EMPTY:
            return i
        i = (i + 1) & mask


cdef inline void mark_free(uint8_t* keys, size_t stride, size_t n) noexcept nogil:
    """Every one of the n slots free."""
    cdef size_t i
    for i in range(n):
        (<uint64_t*>(keys + i * stride))[0] = EMPTY


# -- PairMap: key -> id --------------------------------------------------------------------------
cdef struct PairMap:
    uint64_t* keys
    int32_t* values
    int bits
    size_t size


cdef inline size_t pairmap_probe(const PairMap* m, uint64_t key) noexcept nogil:
    return probe(<const uint8_t*>m.keys, sizeof(uint64_t), m.bits, key)


cdef inline int pairmap_init(PairMap* m, size_t expected) noexcept nogil:
    cdef int bits = half_full_bits(expected, MIN_BITS)
    cdef size_t cap = <size_t>1 << bits
    m.keys = <uint64_t*>malloc(cap * sizeof(uint64_t))
    m.values = <int32_t*>malloc(cap * sizeof(int32_t))
    if m.keys == NULL or m.values == NULL:
        return -1
    mark_free(<uint8_t*>m.keys, sizeof(uint64_t), cap)
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
    cdef size_t i = pair_home(key, m.bits)
    prefetch(&m.keys[i])
    prefetch(&m.values[i])


cdef inline int32_t pairmap_get(const PairMap* m, uint64_t key) noexcept nogil:
    """The id stored for key, or -1."""
    cdef size_t i = pairmap_probe(m, key)
    return m.values[i] if m.keys[i] == key else -1


cdef inline int _pairmap_grow(PairMap* m) noexcept nogil:
    cdef uint64_t* old_keys = m.keys
    cdef int32_t* old_values = m.values
    cdef size_t old_cap = <size_t>1 << m.bits
    cdef size_t i, j
    if pairmap_init(m, old_cap) != 0:   # capacity at least 2 * old_cap
        return -1
    for i in range(old_cap):
        if old_keys[i] != EMPTY:
            j = pairmap_probe(m, old_keys[i])
            m.keys[j] = old_keys[i]
            m.values[j] = old_values[i]
            m.size += 1
    free(old_keys)
    free(old_values)
    return 0


cdef inline int32_t pairmap_get_or_add(PairMap* m, uint64_t key, int32_t new_value) noexcept nogil:
    """The id stored for key; if absent, store new_value and return it. -2 if out of memory."""
    cdef size_t i = pairmap_probe(m, key)
    if m.keys[i] == key:
        return m.values[i]
    if over_half(m.size, m.bits):
        if _pairmap_grow(m) != 0:
            return -2
        return pairmap_get_or_add(m, key, new_value)
    m.keys[i] = key
    m.values[i] = new_value
    m.size += 1
    return new_value


# -- TotalMap: key -> weighted count ---------------------------------------------------------------
cdef struct TotalSlot:
    uint64_t key                   # EMPTY if free
    int64_t total


cdef struct TotalMap:
    TotalSlot* slots
    int bits
    size_t size


cdef inline size_t totalmap_probe(const TotalMap* m, uint64_t key) noexcept nogil:
    return probe(<const uint8_t*>&m.slots[0].key, sizeof(TotalSlot), m.bits, key)


cdef inline int totalmap_init(TotalMap* m, size_t expected) noexcept nogil:
    cdef int bits = half_full_bits(expected, MIN_BITS)
    m.slots = <TotalSlot*>malloc((<size_t>1 << bits) * sizeof(TotalSlot))
    if m.slots == NULL:
        return -1
    mark_free(<uint8_t*>&m.slots[0].key, sizeof(TotalSlot), <size_t>1 << bits)
    m.bits, m.size = bits, 0
    return 0


cdef inline void totalmap_free(TotalMap* m) noexcept nogil:
    free(m.slots)
    m.slots = NULL


cdef inline void totalmap_prefetch(const TotalMap* m, uint64_t key) noexcept nogil:
    prefetch(&m.slots[pair_home(key, m.bits)])


cdef inline int _totalmap_grow(TotalMap* m) noexcept nogil:
    cdef TotalSlot* old = m.slots
    cdef size_t old_n = <size_t>1 << m.bits, j
    if totalmap_init(m, old_n) != 0:   # capacity at least 2 * old_n
        m.slots = old
        return -1
    for j in range(old_n):
        if old[j].key != EMPTY:
            m.slots[totalmap_probe(m, old[j].key)] = old[j]
            m.size += 1
    free(old)
    return 0


cdef inline int totalmap_add(TotalMap* m, uint64_t key, int64_t weight) noexcept nogil:
    """Add weight to key's count (a new key starts at 0). -1 if out of memory."""
    cdef size_t i = totalmap_probe(m, key)
    if m.slots[i].key == key:
        m.slots[i].total += weight
        return 0
    if over_half(m.size, m.bits):
        if _totalmap_grow(m) != 0:
            return -1
        return totalmap_add(m, key, weight)
    m.slots[i].key, m.slots[i].total = key, weight
    m.size += 1
    return 0
