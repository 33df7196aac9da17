# cython: language_level=3
"""Byte strings as hash-table keys, for the encoder's whole-token table and its chunk cache.

Invariants:
* a key is a non-empty byte string; a slot whose ``length`` is 0 is free;
* ``bytes_hash`` of a key of at most 8 bytes is a bijection of those bytes read as a zero-padded
  little-endian integer, so for such keys equal hashes and equal lengths mean equal bytes and the
  tables never compare their bytes; longer keys are compared (same_bytes) against the copy the
  table's owner keeps;
* tables are powers of two, at most half full, probed linearly from the top bits of the hash.
"""
from libc.stdint cimport int32_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp

cdef extern from *:
    """
    #include <string.h>
    #include <stdint.h>
    /* 8 bytes at p as a little-endian integer, and back, whatever the machine's byte order
       (also the counting table's, _table.pyx). */
    static inline uint64_t bpe_load64(const unsigned char* p) {
        uint64_t w;
        memcpy(&w, p, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        w = __builtin_bswap64(w);
    #endif
        return w;
    }
    /* The bits of the two key words (k0, k1) that a chunk of n <= 15 bytes fills: masks taken
       from a table, not branched on (how long a chunk is does not follow a pattern). */
    static const uint64_t bpe_key_mask0[16] = {
        0x0000000000000000ULL, 0x00000000000000FFULL, 0x000000000000FFFFULL, 0x0000000000FFFFFFULL,
        0x00000000FFFFFFFFULL, 0x000000FFFFFFFFFFULL, 0x0000FFFFFFFFFFFFULL, 0x00FFFFFFFFFFFFFFULL,
        0xFFFFFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFFFULL,
        0xFFFFFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFFFULL};
    static const uint64_t bpe_key_mask1[16] = {
        0x0000000000000000ULL, 0x0000000000000000ULL, 0x0000000000000000ULL, 0x0000000000000000ULL,
        0x0000000000000000ULL, 0x0000000000000000ULL, 0x0000000000000000ULL, 0x0000000000000000ULL,
        0x0000000000000000ULL, 0x00000000000000FFULL, 0x000000000000FFFFULL, 0x0000000000FFFFFFULL,
        0x00000000FFFFFFFFULL, 0x000000FFFFFFFFFFULL, 0x0000FFFFFFFFFFFFULL, 0x00FFFFFFFFFFFFFFULL};
    static inline void bpe_store64(unsigned char* p, uint64_t w) {
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        w = __builtin_bswap64(w);
    #endif
        memcpy(p, &w, 8);
    }
    """
    uint64_t bpe_load64(const unsigned char* p) nogil
    void bpe_store64(unsigned char* p, uint64_t w) nogil
    const uint64_t* key_mask0 "bpe_key_mask0"
    const uint64_t* key_mask1 "bpe_key_mask1"


cdef struct KeySlot:
    uint64_t hash
    uint32_t length            # the key's length in bytes; 0 marks a free slot
    int32_t value


cdef inline uint64_t load_upto8(const unsigned char* s, size_t n, const unsigned char* end) noexcept nogil:
    """The first min(n, 8) bytes at s, zero-padded, as a little-endian integer. Reads 8 bytes at
    once when they lie before ``end`` (the end of the whole buffer), masking what is past n."""
    cdef uint64_t w = 0
    cdef size_t i
    if n >= 8:
        return bpe_load64(s) if s + 8 <= end else _load_bytes(s, 8)
    if s + 8 <= end:
        return bpe_load64(s) & ((<uint64_t>1 << (8 * n)) - 1)
    return _load_bytes(s, n)


cdef inline uint64_t _load_bytes(const unsigned char* s, size_t n) noexcept nogil:
    cdef uint64_t w = 0
    cdef size_t i
    for i in range(n):
        w |= <uint64_t>s[i] << (8 * i)
    return w


cdef inline uint64_t mix64(uint64_t h) noexcept nogil:
    """A bijection of 64-bit integers that spreads every input bit over the top bits: an odd
    multiplier and right xor-shifts are each invertible."""
    h ^= h >> 32
    h *= <uint64_t>0xD6E8FEB86659FD93
    h ^= h >> 32
    h *= <uint64_t>0xD6E8FEB86659FD93
    h ^= h >> 32
    return h


cdef inline uint64_t bytes_hash(const unsigned char* s, size_t n, const unsigned char* end) noexcept nogil:
    """Hash of the n bytes at s (see the invariant on keys of at most 8 bytes)."""
    if n <= 8:
        return mix64(load_upto8(s, n, end))
    cdef uint64_t h = <uint64_t>n * <uint64_t>0x9E3779B97F4A7C15
    cdef size_t i = 0
    while i + 8 <= n:
        h = (h ^ bpe_load64(s + i)) * <uint64_t>0xFF51AFD7ED558CCD
        h ^= h >> 29
        i += 8
    if i < n:            # the last 8 bytes of the key, overlapping what was already mixed
        h = (h ^ bpe_load64(s + n - 8)) * <uint64_t>0xC4CEB9FE1A85EC53
    return mix64(h)


cdef inline bint same_bytes(const unsigned char* a, const unsigned char* b, size_t n) noexcept nogil:
    """Are the n >= 8 bytes at a and at b the same? 8 bytes at a time, the last 8 overlapping:
    no call and no byte loop (most keys compared are words of 9 to 32 bytes). Also the counting
    table's comparison of its long chunks (_table.pyx)."""
    cdef size_t i = 0
    while i + 8 < n:
        if bpe_load64(a + i) != bpe_load64(b + i):
            return False
        i += 8
    return bpe_load64(a + n - 8) == bpe_load64(b + n - 8)


cdef inline size_t slot_of(uint64_t hash, int bits) noexcept nogil:
    return <size_t>(hash >> (64 - bits))


# Pairs of int32 as keys: the encoder's merges ((left, right) -> merged symbol) and its trie
# ((node, byte) -> child). One slot holds key, value and an extra int, so a probe touches one
# cache line (the kernel's PairMap keeps keys and values apart).
#
# Invariants: the key of (a, b) is a << 32 | b, never all ones (EMPTY, the free mark); the table
# is a power of two at most half full; it doubles when needed: the shape of _pairmap.pxd's maps,
# whose probe, sizing and free marks it uses (a slot of 16 bytes, the key first).

from libc.stdlib cimport malloc, free

from ._pairmap cimport EMPTY, half_full_bits, mark_free, over_half, probe


cdef struct PairSlot:
    uint64_t key
    int32_t value
    int32_t extra


cdef struct PairTable:
    PairSlot* slots
    int bits
    size_t size


cdef inline uint64_t pair_of(int32_t a, int32_t b) noexcept nogil:
    return (<uint64_t><uint32_t>a << 32) | <uint32_t>b


cdef inline size_t pairtable_probe(const PairTable* t, uint64_t key) noexcept nogil:
    """The slot that holds key, or else the free slot where it would go."""
    return probe(<const uint8_t*>t.slots, sizeof(PairSlot), t.bits, key)


cdef inline int pairtable_init(PairTable* t, size_t expected) noexcept nogil:
    cdef int bits = half_full_bits(expected, 4)
    t.slots = <PairSlot*>malloc((<size_t>1 << bits) * sizeof(PairSlot))
    if t.slots == NULL:
        return -1
    mark_free(<uint8_t*>t.slots, sizeof(PairSlot), <size_t>1 << bits)
    t.bits, t.size = bits, 0
    return 0


cdef inline void pairtable_free(PairTable* t) noexcept nogil:
    free(t.slots)
    t.slots = NULL


cdef inline const PairSlot* pairtable_find(const PairTable* t, uint64_t key) noexcept nogil:
    """The slot of key, or NULL."""
    cdef size_t i = pairtable_probe(t, key)
    return &t.slots[i] if t.slots[i].key == key else NULL


cdef inline PairSlot* pairtable_add(PairTable* t, uint64_t key, int32_t value, int32_t extra) noexcept nogil:
    """The slot of key, made with (value, extra) if absent (else left as it was); NULL if out of memory."""
    cdef size_t i = pairtable_probe(t, key)
    if t.slots[i].key == key:
        return &t.slots[i]
    if over_half(t.size, t.bits):
        if _pairtable_grow(t) != 0:
            return NULL
        return pairtable_add(t, key, value, extra)
    t.slots[i].key, t.slots[i].value, t.slots[i].extra = key, value, extra
    t.size += 1
    return &t.slots[i]


cdef inline int _pairtable_grow(PairTable* t) noexcept nogil:
    cdef PairTable bigger
    cdef size_t i
    if pairtable_init(&bigger, <size_t>1 << t.bits) != 0:
        return -1
    for i in range(<size_t>1 << t.bits):
        if t.slots[i].key != EMPTY:
            bigger.slots[pairtable_probe(&bigger, t.slots[i].key)] = t.slots[i]
    bigger.size = t.size
    free(t.slots)
    t[0] = bigger
    return 0


# Chunks of at most 15 bytes as packed keys: the encoder's chunk table (_encode.pyx, _ChunkCache).
#
# A key is two 64-bit words: the chunk's bytes 0-7 and 8-14 read little-endian and zero-padded,
# and its length (1-15) in bits 56-59 of the second word, so equal keys mean equal chunks and a
# probe compares two words, never bytes. An entry is 32 bytes, two to a 64-byte cache line: the
# key, with the number of ids in bits 60-62 of its second word (0: the entry is free), and up to
# four ids inline (see _cache.pxd for more). Tables are powers of two, probed linearly
# from the first entry of the key's home line (the top bits of the hash), at most 3/4 full (_cache.pxd).

cdef enum:
    PACKED_MAX_BYTES = 15

cdef extern from *:
    """
    #include <stdlib.h>
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    #define BPE_PACKED_KEY_MASK ((((uint64_t)1) << 60) - 1)
    /* Memory for a big table: 2 MB-aligned and asked for as transparent huge pages where Linux
       has them (a table of tens of MB on 4 KB pages misses the TLB on nearly every probe, and
       prefetches that miss the TLB may be dropped), before any page is touched; plain malloc
       elsewhere and for small sizes. Either way free() gives it back. Not zeroed. */
    static inline void* bpe_big_alloc(size_t bytes) {
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (bytes >= ((size_t)4 << 20)) {
            void* p = NULL;
            size_t huge = (size_t)2 << 20;
            bytes = (bytes + huge - 1) & ~(huge - 1);
            if (posix_memalign(&p, huge, bytes) == 0) {
                (void)madvise(p, bytes, MADV_HUGEPAGE);      /* a hint: fine if refused */
                return p;
            }
            return NULL;
        }
    #endif
        return malloc(bytes ? bytes : 1);
    }
    /* Ask for huge pages for the whole 2 MB pages inside [p, p + bytes) of memory someone else
       allocated (a list's items array), before they are touched: a hint, fine if refused. */
    static inline void bpe_advise_huge(void* p, size_t bytes) {
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        size_t huge = (size_t)2 << 20;
        uintptr_t from = ((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1);
        uintptr_t to = ((uintptr_t)p + bytes) & ~(uintptr_t)(huge - 1);
        if (to > from) (void)madvise((void*)from, to - from, MADV_HUGEPAGE);
    #else
        (void)p; (void)bytes;
    #endif
    }
    """
    const uint64_t PACKED_KEY_MASK "BPE_PACKED_KEY_MASK"
    void* big_alloc "bpe_big_alloc"(size_t bytes) nogil
    void advise_huge "bpe_advise_huge"(void* p, size_t bytes) nogil


cdef struct Packed:
    uint64_t k0                # bytes 0-7
    uint64_t k1                # bytes 8-14, the length in bits 56-59, the id count in bits 60-62
    uint32_t ids[4]


cdef inline void pack_key16(const unsigned char* s, size_t n, uint64_t* k0, uint64_t* k1) noexcept nogil:
    """pack_key where 16 bytes can be read at s (the caller has checked)."""
    k0[0] = bpe_load64(s) & key_mask0[n]
    k1[0] = (bpe_load64(s + 8) & key_mask1[n]) | (<uint64_t>n << 56)


cdef inline void pack_key(const unsigned char* s, size_t n, const unsigned char* end,
                          uint64_t* k0, uint64_t* k1) noexcept nogil:
    """The packed key of the chunk s (1 <= n <= 15 bytes); it reads 16 bytes at once when they
    lie before ``end`` (the end of the buffer), masking what is past n."""
    cdef uint64_t a, b
    if s + 16 <= end:
        pack_key16(s, n, k0, k1)
        return
    elif n <= 8:
        a, b = load_upto8(s, n, end), 0
    else:
        a = bpe_load64(s)                               # 8 <= n - 0: inside the chunk
        b = load_upto8(s + 8, n - 8, end)
    k0[0] = a
    k1[0] = b | (<uint64_t>n << 56)


cdef inline uint64_t packed_hash(uint64_t k0, uint64_t k1) noexcept nogil:
    """A hash whose top bits depend on every bit of the key: k1 is spread by an odd multiplier
    and turned half over into k0; the high half of that is folded onto the low half, and the
    whole multiplied again (the top bits of a product depend on every bit of its factor)."""
    cdef uint64_t m = k1 * <uint64_t>0x9E3779B97F4A7C15
    cdef uint64_t x = k0 ^ ((m << 32) | (m >> 32))
    return (x ^ (x >> 29)) * <uint64_t>0xD6E8FEB86659FD93


cdef inline size_t packed_slot(uint64_t hash, int bits) noexcept nogil:
    """The first entry to probe: the first of the pair in the key's home cache line."""
    return <size_t>(hash >> (64 - bits)) & ~(<size_t>1)
