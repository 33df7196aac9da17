# cython: language_level=3
"""A thread's chunk caches: chunks met before -> their ids.

Invariant: an entry's ids are the ids the encoder gives its chunk; nothing is ever deleted but
the whole table at once (starting afresh at its limit), so linear probing stays unbroken.

``ShortChunkTable``: chunks of at most 15 bytes -> their ids, as packed keys (``Packed``, see
core/_hash.pxd). It starts as a copy of the encoder's ``seed`` (every token of at most 15
bytes -> its id: tiktoken's rule that a chunk that is a token is that token; _whole.pxd)
and the chunks merged are added; up to INLINE_IDS ids sit in the entry, a longer result in
``spill`` (the entry's count is SPILLED, ids[0] the offset there and ids[1] the count; the
spill ends in SPILL_PAD zeros, so that any entry's ids are copied in one fixed move). It
doubles past 3/4 full, up to ``max_bits``; half full at that size, it starts afresh from the
seed, in place (``resets`` counts that); table_room says why. The seed belongs to the encoder
that made the table, which outlives it.

``LongCache``: chunks over 15 bytes merged before: bytes (``KeySlot``) -> an offset in ``store``,
where the chunk's token count, its ids and its bytes follow. When full it starts afresh.
"""
from libc.stdint cimport int32_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free
from libc.string cimport memcpy, memset
from libcpp.vector cimport vector

from ..core._cpu cimport prefetch
from ..core._hash cimport (KeySlot, slot_of, same_bytes, Packed, PACKED_KEY_MASK, big_alloc,
                           packed_hash, packed_slot)

cdef enum:
    CACHE_MIN_BITS = 10        # the cache of chunks over 15 bytes (LongCache):
    CACHE_MAX_BITS = 21        # at most 2^20 cached chunks; then the cache starts afresh
    TABLE_MIN_BITS = 10        # the chunk table of chunks up to 15 bytes (ShortChunkTable) ...
    TABLE_MAX_BITS = 20        # ... grows to 2^20 entries (32 MB; more if the vocabulary needs it),
                               # grown past 3/4 full; half full at the most, it starts afresh
    INLINE_IDS = 4             # ids a chunk table entry holds; a longer result goes to ``spill``
    SPILLED = 7                # the id count of an entry whose ids are in ``spill``
    SPILL_PAD = 16             # zeros after the last ids in ``spill``: any entry's 16 ids can be read
                               # at once (a chunk of at most 15 bytes has at most 15 ids)
    CACHE_MAX_BYTES = 255      # longer chunks are rare: not cached
    LONG_STORE_RESERVE = 1 << 25   # words the long-chunk store reserves at once (128 MB of address
                               # space, its pages touched only as it fills: no copy as it grows;
                               # from 16 MB it was copied twice over a pass of zipf, the largest
                               # share of the pass's page faults: benchmarks/RESULTS.md,
                               # "Encode once (6)")


cdef struct ShortChunkTable:
    Packed* entries
    int bits                   # 2**bits entries
    size_t used
    vector[uint32_t] spill
    const Packed* seed
    int seed_bits
    size_t seed_used
    int max_bits
    size_t resets


cdef struct LongCache:
    KeySlot* slots
    int bits
    size_t size
    vector[uint32_t] store


# -- chunks of at most 15 bytes --------------------------------------------------------------
cdef inline int table_start(ShortChunkTable* c, const Packed* seed, int seed_bits, size_t seed_used,
                            int max_bits) noexcept nogil:
    """The table as a copy of the seed, growing up to 2**max_bits entries. 0 if done."""
    c.seed, c.seed_bits, c.seed_used = seed, seed_bits, seed_used
    c.max_bits = max_bits
    return table_restart(c)


cdef inline int table_restart(ShortChunkTable* c) noexcept nogil:
    """The table as the seed, nothing merged in it. 0 if done (else it is left as it was).
    A table grown past the seed's size starts afresh where it is, the seed's entries put
    back (no new memory, no growing again)."""
    cdef size_t bytes = (<size_t>1 << c.seed_bits) * sizeof(Packed), i, j, mask
    cdef Packed* table
    if c.entries != NULL and c.bits > c.seed_bits:
        mask = (<size_t>1 << c.bits) - 1
        memset(c.entries, 0, (mask + 1) * sizeof(Packed))
        for i in range(<size_t>1 << c.seed_bits):
            if c.seed[i].k1 != 0:
                j = packed_slot(packed_hash(c.seed[i].k0, c.seed[i].k1 & PACKED_KEY_MASK), c.bits)
                while c.entries[j].k1 != 0:
                    j = (j + 1) & mask
                c.entries[j] = c.seed[i]
        c.used = c.seed_used
        c.spill.clear()
        return 0
    table = <Packed*>big_alloc(bytes)
    if table == NULL:
        return -1
    memcpy(table, c.seed, bytes)
    free(c.entries)
    c.entries, c.bits, c.used = table, c.seed_bits, c.seed_used
    c.spill.clear()
    return 0


cdef inline int table_grow(ShortChunkTable* c) noexcept nogil:
    """Double the table, or start afresh at its limit. 0 if done."""
    if c.bits + 1 > c.max_bits:
        c.resets += 1
        return table_restart(c)
    return table_grow_to(c, c.bits + 1)


cdef inline int table_grow_to(ShortChunkTable* c, int bits) noexcept nogil:
    """The table at 2**bits entries (more than now), its entries moved over. 0 if done.
    Straight to the size a job will need (``lay_out_chunks``' hint) instead of doubling up
    to it: every doubling's table is fresh memory, zeroed page by page by the system on
    first touch (the largest part of growing on a virtual machine), and their sizes add
    up to the last one's again."""
    cdef size_t i, j, mask = (<size_t>1 << bits) - 1, old_size = <size_t>1 << c.bits
    cdef Packed* table
    table = <Packed*>big_alloc((mask + 1) * sizeof(Packed))
    if table == NULL:
        return -1
    memset(table, 0, (mask + 1) * sizeof(Packed))
    for i in range(old_size):
        if c.entries[i].k1 != 0:
            j = packed_slot(packed_hash(c.entries[i].k0, c.entries[i].k1 & PACKED_KEY_MASK), bits)
            while table[j].k1 != 0:
                j = (j + 1) & mask
            table[j] = c.entries[i]
    free(c.entries)
    c.entries, c.bits = table, bits
    return 0


cdef inline const Packed* table_lookup(ShortChunkTable* c, uint64_t k0, uint64_t k1, uint64_t h) noexcept nogil:
    """The entry of the packed key (k0, k1) whose hash is h, or NULL. An entry found past
    its home line is moved into it (move_home), so the chunks that recur get there."""
    cdef size_t mask = (<size_t>1 << c.bits) - 1, home = packed_slot(h, c.bits), j = home
    cdef Packed* x
    while True:
        x = &c.entries[j]
        if x.k0 == k0 and (x.k1 & PACKED_KEY_MASK) == k1:
            return x if ((j - home) & mask) < 2 else table_move_home(c, j, home)
        if x.k1 == 0:
            return NULL
        j = (j + 1) & mask


cdef inline size_t table_emit_home(const Packed** homes, const uint32_t* spill, const uint64_t* key0,
                                   const uint64_t* key1, size_t q, size_t m,
                                   uint32_t* ids, size_t* size) noexcept nogil:
    """Chunks q, q + 1, ... (packed keys key0/key1, their home lines) found in their home line (two
    entries): their ids appended to ids (size advanced), copied SPILL_PAD at a time, inline or
    from the spill (the caller has room for each chunk's bytes and SPILL_PAD more). Returns the
    first chunk that is not such a one (m if all are), for the caller to take the long way. The
    loop of the common case, alone so that its state stays in registers. A long chunk's key1
    is 0: it stops the loop before its home line, which was never asked for, is read."""
    cdef size_t n = size[0]
    cdef const Packed* x
    cdef uint64_t k1, count
    while q < m and key1[q] != 0:
        x = homes[q]
        x += <size_t>((x.k0 != key0[q]) | ((x.k1 & PACKED_KEY_MASK) != key1[q]))      # no branch
        k1 = x.k1
        if x.k0 != key0[q] or (k1 & PACKED_KEY_MASK) != key1[q]:
            break
        count = k1 >> 60
        if count <= INLINE_IDS:
            memcpy(ids + n, x.ids, INLINE_IDS * sizeof(uint32_t))
        else:                               # SPILLED (at most 15 ids: SPILL_PAD read at once)
            memcpy(ids + n, spill + x.ids[0], SPILL_PAD * sizeof(uint32_t))
            count = x.ids[1]
        n += count
        q += 1
    size[0] = n
    return q


cdef inline Packed* table_move_home(ShortChunkTable* c, size_t j, size_t home) noexcept nogil:
    """Swap entry j with one of its home line (home, home + 1), preferably one that is not
    at home there either; return where entry j now is. Linear probing still finds both:
    every entry from the other's home to j is taken (nothing is ever deleted, only the
    whole table at once), so moving it forward to j leaves its probe unbroken."""
    cdef size_t v = home + 1
    cdef Packed moved
    if packed_slot(packed_hash(c.entries[home].k0, c.entries[home].k1 & PACKED_KEY_MASK),
                   c.bits) != home:
        v = home
    moved = c.entries[v]
    c.entries[v] = c.entries[j]
    c.entries[j] = moved
    return &c.entries[v]


cdef inline size_t table_room(const ShortChunkTable* c) noexcept nogil:
    """How many entries the table holds before it grows: 3/4 of its size while it can grow, half
    at its limit (before it starts afresh). A smaller table stays nearer the core: a pass over C
    or mix33 took less time growing at 3/4 instead of 1/2. At the limit, text of many scripts
    keeps missing, and a miss probes on to the next free entry, further in a fuller table:
    starting afresh at 3/4 there too made it slower, at 1/2 it is not (benchmarks/RESULTS.md,
    "Encode once (4)")."""
    if c.bits < c.max_bits:
        return (<size_t>3 << c.bits) >> 2
    return (<size_t>1 << c.bits) >> 1


cdef inline void table_insert(ShortChunkTable* c, uint64_t k0, uint64_t k1, uint64_t h, const int32_t* syms,
                              size_t count, const int32_t* ext) noexcept nogil:
    """Remember the ids (ext of syms) of a chunk not in the table (none if out of memory)."""
    cdef size_t j, mask, i, at
    cdef Packed* x
    if c.used + 1 > table_room(c) and table_grow(c) != 0:
        return
    mask = (<size_t>1 << c.bits) - 1
    j = packed_slot(h, c.bits)
    while c.entries[j].k1 != 0:
        j = (j + 1) & mask
    x = &c.entries[j]
    x.k0 = k0
    x.ids[0], x.ids[1], x.ids[2], x.ids[3] = 0, 0, 0, 0
    if count <= INLINE_IDS:
        for i in range(count):
            x.ids[i] = <uint32_t>ext[syms[i]]
        x.k1 = k1 | (<uint64_t>count << 60)
    else:
        at = c.spill.size() - SPILL_PAD if c.spill.size() else 0     # (over the pad of zeros)
        c.spill.resize(at + count + SPILL_PAD)
        for i in range(count):
            c.spill[at + i] = <uint32_t>ext[syms[i]]
        x.ids[0], x.ids[1] = <uint32_t>at, <uint32_t>count
        x.k1 = k1 | (<uint64_t>SPILLED << 60)
    c.used += 1


cdef inline void table_free(ShortChunkTable* c) noexcept nogil:
    free(c.entries)


# -- chunks over 15 bytes --------------------------------------------------------------------
cdef inline const uint32_t* long_find(LongCache* c, uint64_t h, const uint8_t* s, size_t n) noexcept nogil:
    """Where the count and ids of a chunk over 15 bytes are stored, or NULL."""
    cdef size_t mask, k, at
    if c.slots == NULL:
        return NULL
    mask = (<size_t>1 << c.bits) - 1
    k = slot_of(h, c.bits)
    while c.slots[k].length:
        if c.slots[k].hash == h and c.slots[k].length == n:
            at = <size_t>c.slots[k].value
            if n <= 8 or same_bytes(<const uint8_t*>(c.store.data() + at + 1 + c.store[at]), s, n):
                return c.store.data() + at
        k = (k + 1) & mask
    return NULL


cdef inline void long_ask(const LongCache* c, uint64_t h) noexcept nogil:
    """Ask for the stored ids and bytes of the chunk whose hash is h, if its home slot holds it
    (the slot's own line was asked for when the chunk was split off): long_find's second wait,
    for the store, then overlaps the chunks before it."""
    cdef const KeySlot* slot
    if c.slots == NULL:
        return
    slot = &c.slots[slot_of(h, c.bits)]
    if slot.hash == h and slot.length:
        prefetch(c.store.data() + <size_t>slot.value)


cdef inline void long_add(LongCache* c, uint64_t h, const uint8_t* s, size_t n, const int32_t* syms,
                          size_t count, const int32_t* ext) noexcept nogil:
    """Remember the ids (ext of syms) of a chunk not in the cache."""
    cdef size_t k, at, i
    if 2 * (c.size + 1) > ((<size_t>1 << c.bits) if c.slots != NULL else 0) and long_grow(c) != 0:
        return
    at = c.store.size()
    if at + 1 + count + ((n + 3) >> 2) > c.store.capacity():    # (grown here)
        # On ordinary pages: it fills in order and is read a chunk at a time, and a fresh huge page
        # can cost far more than its small ones here (the slots, probed at random, stay on huge
        # pages): a pass over zipf (cl100k_base) spends less system time, the same user time
        # (benchmarks/RESULTS.md, "Encode once (7)").
        c.store.reserve(max(2 * c.store.capacity(), <size_t>LONG_STORE_RESERVE))
    c.store.push_back(<uint32_t>count)
    for i in range(count):
        c.store.push_back(<uint32_t>ext[syms[i]])
    if n > 8:
        c.store.resize(at + 1 + count + ((n + 3) >> 2))
        memcpy(c.store.data() + at + 1 + count, s, n)
    k = slot_of(h, c.bits)
    while c.slots[k].length:
        k = (k + 1) & ((<size_t>1 << c.bits) - 1)
    c.slots[k].hash, c.slots[k].length, c.slots[k].value = h, <uint32_t>n, <int32_t>at
    c.size += 1


cdef inline int long_grow(LongCache* c) noexcept nogil:
    """Double the table (rehashing), or empty it at the size limit. 0 if done."""
    cdef int bits = CACHE_MIN_BITS if c.slots == NULL else c.bits + 1
    cdef KeySlot* old = c.slots
    cdef size_t i, k, mask, old_size = (<size_t>1 << c.bits) if old != NULL else 0
    if bits > CACHE_MAX_BITS:
        memset(c.slots, 0, old_size * sizeof(KeySlot))
        c.store.clear()
        c.size = 0
        return 0
    c.slots = <KeySlot*>big_alloc((<size_t>1 << bits) * sizeof(KeySlot))
    if c.slots == NULL:
        c.slots = old
        return -1
    memset(c.slots, 0, (<size_t>1 << bits) * sizeof(KeySlot))
    c.bits = bits
    mask = (<size_t>1 << bits) - 1
    for i in range(old_size):
        if old[i].length:
            k = slot_of(old[i].hash, bits)
            while c.slots[k].length:
                k = (k + 1) & mask
            c.slots[k] = old[i]
    free(old)
    return 0


cdef inline void long_free(LongCache* c) noexcept nogil:
    free(c.slots)
