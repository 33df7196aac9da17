# cython: language_level=3
"""The vocabulary's tokens by their bytes, for tiktoken's first rule: a chunk that is itself a
token becomes that token.

Invariant: every token's bytes lead to its id (the largest id when two tokens share bytes).
Tokens over 15 bytes are in ``whole`` (bytes -> id, their bytes kept in ``arena`` when over 8:
see core/_hash.pxd); few tokens are that long, so the table stays small, in the CPU's cache.
The others are in ``seed`` (packed keys, made when a first chunk table is), which every
thread's chunk table starts as a copy of (_cache.pxd), so a chunk that is a whole token
costs the one probe a chunk met before does.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memset
from libcpp.string cimport string
from libcpp.vector cimport vector

from ._cache cimport TABLE_MAX_BITS, TABLE_MIN_BITS
from ..core._pairmap cimport half_full_bits
from ..core._hash cimport (KeySlot, bytes_hash, slot_of, same_bytes, Packed, PACKED_KEY_MASK, PACKED_MAX_BYTES,
                           big_alloc, pack_key, packed_hash, packed_slot)


cdef struct WholeTokens:
    KeySlot* whole                           # tokens over 15 bytes: bytes -> id
    int whole_bits
    vector[uint8_t] arena                    # the bytes of the tokens in ``whole`` ...
    vector[int64_t] arena_at                 # ... at arena_at[id]
    vector[int32_t] short_tokens             # ids of the tokens of at most 15 bytes, ascending
    Packed* seed                             # ... -> their ids, as a chunk table (seed_build)
    int seed_bits
    size_t seed_used
    int table_max_bits                       # a chunk table's limit (TABLE_MAX_BITS, or more)


cdef inline bint same_whole(WholeTokens* w, size_t k, uint64_t h, const uint8_t* s, size_t n) noexcept nogil:
    cdef const KeySlot* slot = &w.whole[k]
    return (slot.hash == h and slot.length == n
            and (n <= 8 or same_bytes(w.arena.data() + w.arena_at[slot.value], s, n)))


cdef inline int32_t find_whole(WholeTokens* w, uint64_t h, const uint8_t* s, size_t n) noexcept nogil:
    """The id of the token whose bytes are s, or -1."""
    cdef size_t mask = (<size_t>1 << w.whole_bits) - 1, k = slot_of(h, w.whole_bits)
    while w.whole[k].length:
        if same_whole(w, k, h, s, n):
            return w.whole[k].value
        k = (k + 1) & mask
    return -1


cdef inline int whole_build(WholeTokens* w, list vocab) except -1:
    """The table of the bytes of every token over 15 bytes -> its id (the largest id when
    two tokens share bytes), and the list of the others, for ``seed``. Few tokens are that
    long: the table stays small, in the CPU's cache."""
    cdef Py_ssize_t i, count = 0
    cdef const unsigned char* s
    cdef uint64_t h
    cdef size_t k, mask
    cdef bytes token
    for token in vocab:
        if token is not None and len(token) > PACKED_MAX_BYTES:
            count += 1
    w.whole_bits = half_full_bits(count, 4)
    w.whole = <KeySlot*>calloc(<size_t>1 << w.whole_bits, sizeof(KeySlot))
    if w.whole == NULL:
        raise MemoryError()
    mask = (<size_t>1 << w.whole_bits) - 1
    w.arena_at.assign(len(vocab), -1)
    for i, token in enumerate(vocab):
        if token is None:
            continue
        if len(token) <= PACKED_MAX_BYTES:
            if len(token):
                w.short_tokens.push_back(<int32_t>i)
            continue
        s = token
        h = bytes_hash(s, len(token), s + len(token))
        if len(token) > 8:
            w.arena_at[i] = w.arena.size()
            w.arena.insert(w.arena.end(), s, s + len(token))
        k = slot_of(h, w.whole_bits)
        while w.whole[k].length and not same_whole(w, k, h, s, len(token)):
            k = (k + 1) & mask
        w.whole[k].hash, w.whole[k].length, w.whole[k].value = h, len(token), <int32_t>i
    return 0


cdef inline int seed_build(WholeTokens* w, vector[string]* token_bytes) except -1:
    """``seed``: every token of at most 15 bytes -> its id, at most half full (the largest
    id when two tokens share bytes, as in ``whole``)."""
    cdef size_t k, j, mask, n = w.short_tokens.size()
    cdef int32_t token
    cdef uint64_t k0, k1, h
    cdef const uint8_t* s
    cdef Packed* table
    cdef int bits = TABLE_MIN_BITS
    while (<size_t>1 << bits) < 2 * n:
        bits += 1
    table = <Packed*>big_alloc((<size_t>1 << bits) * sizeof(Packed))
    if table == NULL:
        raise MemoryError()
    memset(table, 0, (<size_t>1 << bits) * sizeof(Packed))
    mask = (<size_t>1 << bits) - 1
    w.seed_used = 0
    for k in range(n):
        token = w.short_tokens[k]
        s = <const uint8_t*>token_bytes[0][token].data()
        pack_key(s, token_bytes[0][token].size(), s + token_bytes[0][token].size(), &k0, &k1)
        h = packed_hash(k0, k1)
        j = packed_slot(h, bits)
        while table[j].k1 != 0 and not (table[j].k0 == k0 and (table[j].k1 & PACKED_KEY_MASK) == k1):
            j = (j + 1) & mask
        if table[j].k1 == 0:
            w.seed_used += 1
        table[j].k0, table[j].k1 = k0, k1 | (<uint64_t>1 << 60)
        table[j].ids[0], table[j].ids[1], table[j].ids[2], table[j].ids[3] = <uint32_t>token, 0, 0, 0
    w.seed, w.seed_bits = table, bits
    w.table_max_bits = max(<int>TABLE_MAX_BITS, bits + 1)
    return 0


cdef inline void whole_free(WholeTokens* w) noexcept nogil:
    free(w.whole)
    free(w.seed)
