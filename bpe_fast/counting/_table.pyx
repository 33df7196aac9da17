# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Word tables in native code: counting chunks into a compact hash table, and merging tables.

A word table is three arrays: the chunks' bytes one after another (uint8), where each chunk
starts (int64 offsets, one more than chunks) and how often it occurs (int64 counts). Tables made
here are also *sorted by (hash, bytes)*, with each chunk's 64-bit hash kept beside it, so that
tables counted by different processes (or machines, or on different days) add up in one linear
pass, like merging sorted runs: no Python object per chunk anywhere.

``ChunkTable`` invariants:
* every distinct chunk added is one slot with a positive count (the number of times it was
  added, weighted); empty slots have ``k1 == 0``; at most 3/4 of the slots are used (one is
  always empty), and a chunk is found by linear probing from the slot its probe hash picks;
* a chunk of up to 15 bytes is its slot's key: its bytes zero-padded, and its length in the top
  byte of ``k1``; a longer one is stored once in the arena (its bytes only) and its slot holds
  its 64-bit probe hash and ``LONG | length``;
* the probe hash is for this table only; the order tables are written and merged in is
  ``hash_bytes``, computed when the table is sorted, never per insert;
* chunks scanned from text are counted a batch at a time (``queue`` then ``flush``), and every
  call that queues flushes before it returns.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memchr, memcmp, memcpy, memset
from libcpp.algorithm cimport sort
from libcpp.utility cimport pair
from libcpp.vector cimport vector

from ..core._cpu cimport prefetch_for_write as prefetch  # the slot is written next (counted)
from ..core._hash cimport bpe_load64 as load64, bpe_store64 as store64, key_mask0, key_mask1, same_bytes
from ..pretokenize._split cimport Window, split_next, window_reset
from ..pretokenize._pretok cimport Scanner

cnp.import_array()

cdef uint64_t SEED = 0x9E3779B97F4A7C15
cdef uint64_t MUL1 = 0xBF58476D1CE4E5B9
cdef uint64_t MUL2 = 0x94D049BB133111EB


cdef inline uint64_t mix(uint64_t x) noexcept nogil:
    """splitmix64's finalizer: every input bit moves every output bit."""
    x = (x ^ (x >> 30)) * MUL1
    x = (x ^ (x >> 27)) * MUL2
    return x ^ (x >> 31)


cdef inline uint64_t hash_bytes(const uint8_t* s, size_t n) noexcept nogil:
    """A 64-bit hash of a byte string, 8 bytes at a time. Fixed seed: the same in every process
    and every run, because tables are merged in hash order."""
    cdef uint64_t h = SEED ^ (n * MUL2), v
    while n >= 8:
        memcpy(&v, s, 8)
        h = mix(h ^ v)
        s += 8
        n -= 8
    if n:
        v = 0
        memcpy(&v, s, n)
        h = mix(h ^ v ^ (<uint64_t>n << 56))
    return mix(h)


def hashes_of(const uint8_t[::1] data, const int64_t[::1] offsets):
    """The hash of each chunk of a table (for tables built from Python objects)."""
    cdef Py_ssize_t n = offsets.shape[0] - 1, i
    out = np.empty(max(n, 0), dtype=np.uint64)
    cdef uint64_t[::1] h = out
    cdef const uint8_t* base = &data[0] if data.shape[0] else NULL
    for i in range(n):
        h[i] = hash_bytes(base + offsets[i] if base != NULL else NULL, offsets[i + 1] - offsets[i])
    return out


cdef int64_t INT64_MAX = 0x7FFFFFFFFFFFFFFF


cdef inline bint sum_overflows(int64_t a, int64_t b) noexcept nogil:
    """Whether a + b is past int64 (checked before adding: a wrapped count is silent corruption)."""
    return (b > 0 and a > INT64_MAX - b) or (b < 0 and a < -INT64_MAX - 1 - b)


cdef count_overflow(chunk, a, b):
    """The error of two counts of ``chunk`` that add up past int64."""
    return OverflowError(f"chunk {bytes(chunk)!r} would occur {a:,} + {b:,} = {a + b:,} times, past the "
                         f"64-bit count limit ({INT64_MAX:,})")



cdef extern from *:
    """
    #include <stdint.h>
    #include <stdlib.h>
    #include <string.h>
    #if defined(__unix__) || defined(__APPLE__)
    #include <sys/mman.h>
    #endif

    /* The 128-bit product of a and b, folded to 64 bits (high half xor low half): one multiply
       that lets every input bit reach every output bit. */
    static inline uint64_t bpe_table_mum(uint64_t a, uint64_t b) {
    #if defined(__SIZEOF_INT128__)
        __uint128_t r = (__uint128_t)a * b;
        return (uint64_t)r ^ (uint64_t)(r >> 64);
    #else
        uint64_t ha = a >> 32, hb = b >> 32, la = (uint32_t)a, lb = (uint32_t)b;
        uint64_t hh = ha * hb, hl = ha * lb, lh = la * hb, ll = la * lb;
        uint64_t mid = (ll >> 32) + (uint32_t)hl + (uint32_t)lh;
        uint64_t lo = (mid << 32) | (uint32_t)ll;
        uint64_t hi = hh + (hl >> 32) + (lh >> 32) + (mid >> 32);
        return lo ^ hi;
    #endif
    }

    #define BPE_TABLE_HUGE ((size_t)2 << 20)

    /* `bytes` of zeroed memory, 64-byte aligned (a slot never straddles two cache lines). From
       2 MB on, where the OS allows it, the memory is mapped 2 MB-aligned and marked for
       transparent huge pages before any of it is touched: a probe into a table of tens of MB then
       misses the TLB far less often (a prefetch that misses it may be dropped). *mapped says
       how it was allocated (for bpe_table_free), *huge whether huge pages were granted the
       madvise. NULL if there is no memory. */
    static void* bpe_table_alloc(size_t bytes, int use_huge, int* mapped, int* huge) {
        void* p = NULL;
        *mapped = 0;
        *huge = 0;
    #if (defined(__unix__) || defined(__APPLE__)) && defined(MAP_ANONYMOUS)
        if (use_huge && bytes >= BPE_TABLE_HUGE && bytes % BPE_TABLE_HUGE == 0) {
            size_t span = bytes + BPE_TABLE_HUGE;
            char* raw = (char*)mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (raw != (char*)MAP_FAILED) {
                char* start = (char*)(((uintptr_t)raw + BPE_TABLE_HUGE - 1) & ~(uintptr_t)(BPE_TABLE_HUGE - 1));
                if (start > raw) munmap(raw, (size_t)(start - raw));
                if (raw + span > start + bytes) munmap(start + bytes, (size_t)(raw + span - (start + bytes)));
    #if defined(MADV_HUGEPAGE)
                *huge = madvise(start, bytes, MADV_HUGEPAGE) == 0;
    #endif
                *mapped = 1;
                return start;            /* anonymous pages are zero */
            }
        }
    #endif
    #if defined(_MSC_VER)
        p = _aligned_malloc(bytes, 64);
        if (p == NULL) return NULL;
    #else
        if (posix_memalign(&p, 64, bytes) != 0) return NULL;
    #endif
        memset(p, 0, bytes);
        return p;
    }

    /* A mapped table of `old_bytes` grown to `new_bytes` (both multiples of 2 MB) where it keeps
       its pages: the old slots at the start, zeros after, at a new 2 MB-aligned address (the pages
       move with their page tables, no byte is copied) and marked for huge pages. Only the new half
       is fresh memory, and the old and new tables never both exist. NULL (and the old mapping as it
       was) where mremap is missing or fails. */
    static void* bpe_table_extend(void* old, size_t old_bytes, size_t new_bytes, int* huge) {
    #if defined(__linux__) && defined(MREMAP_MAYMOVE) && defined(MREMAP_FIXED) && defined(MAP_ANONYMOUS)
        size_t span = new_bytes + BPE_TABLE_HUGE;
        char* raw = (char*)mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (raw == (char*)MAP_FAILED) return NULL;
        char* start = (char*)(((uintptr_t)raw + BPE_TABLE_HUGE - 1) & ~(uintptr_t)(BPE_TABLE_HUGE - 1));
        if (start > raw) munmap(raw, (size_t)(start - raw));
        if (raw + span > start + new_bytes) munmap(start + new_bytes, (size_t)(raw + span - (start + new_bytes)));
        void* p = mremap(old, old_bytes, new_bytes, MREMAP_MAYMOVE | MREMAP_FIXED, start);
        if (p == MAP_FAILED) {
            munmap(start, new_bytes);
            return NULL;
        }
    #if defined(MADV_HUGEPAGE)
        *huge = madvise(p, new_bytes, MADV_HUGEPAGE) == 0;
    #endif
        return p;
    #else
        (void)old; (void)old_bytes; (void)new_bytes; (void)huge;
        return NULL;
    #endif
    }

    static void bpe_table_free(void* p, size_t bytes, int mapped) {
        if (p == NULL) return;
    #if (defined(__unix__) || defined(__APPLE__)) && defined(MAP_ANONYMOUS)
        if (mapped) { munmap(p, bytes); return; }
    #endif
    #if defined(_MSC_VER)
        _aligned_free(p);
    #else
        free(p);
    #endif
    }
    """
    uint64_t mum "bpe_table_mum"(uint64_t a, uint64_t b) nogil
    void* table_alloc "bpe_table_alloc"(size_t nbytes, int use_huge, int* mapped, int* huge) nogil
    void* table_extend "bpe_table_extend"(void* old, size_t old_bytes, size_t new_bytes, int* huge) nogil
    void table_free "bpe_table_free"(void* p, size_t nbytes, int mapped) nogil


cdef struct CountSlot:
    uint64_t k0       # a short chunk's bytes 0..7; a long chunk's probe hash
    uint64_t k1       # a short chunk's bytes 8..14 and its length (1..15) in the top byte; LONG | a long
                      # chunk's length; 0: the slot is empty
    int64_t count
    uint64_t ref      # where a long chunk's bytes are in the arena (0 for a short chunk)


cdef struct Pending:  # a chunk scanned, keyed and hashed (its slot prefetched), not yet counted
    const uint8_t* s
    uint64_t k0
    uint64_t k1
    uint64_t h


cdef enum:
    SHORT_MAX = 15          # chunks up to 15 bytes (nearly all of them) live in their slot
    BATCH = 128             # chunks keyed and prefetched before the first of them is counted
    FIRST_SLOTS = 4096

cdef uint64_t LONG = <uint64_t>0xFF << 56
cdef uint64_t LENGTH = (<uint64_t>1 << 56) - 1
cdef uint64_t P0 = 0xA0761D6478BD642F     # wyhash's constants
cdef uint64_t P1 = 0xE7037ED1A0B428DB
cdef uint64_t P2 = 0x8EBC6AF09C88C6E3
cdef uint64_t P3 = 0x589965CC75374CC3
cdef bint use_huge_pages = True

def _use_huge_pages(bint flag):
    """Whether tables from 2 MB on ask for huge pages (for benchmarks and tests); returns the
    previous setting."""
    global use_huge_pages
    previous, use_huge_pages = use_huge_pages, flag
    return previous


cdef inline uint64_t long_hash(const uint8_t* s, size_t n) noexcept nogil:
    """The probe hash of a chunk of more than 15 bytes: 16 bytes a multiply, the last 16 bytes
    (overlapping the block before) for the tail. Only for probing: tables are ordered by
    ``hash_bytes``."""
    cdef uint64_t h = P0 ^ (n * P1)
    cdef const uint8_t* end = s + n
    while end - s > 16:
        h = mum(load64(s) ^ P1, load64(s + 8) ^ h)
        s += 16
    return mum(load64(end - 16) ^ P2, load64(end - 8) ^ h ^ P3)


cdef inline uint64_t key_of(const uint8_t* s, size_t n, const uint8_t* end, uint64_t keep,
                            uint64_t* k0, uint64_t* k1) noexcept nogil:
    """A chunk's key (k0, k1: see CountSlot) and probe hash. A short chunk is read as 16 bytes at once
    when they lie before ``end`` (the end of the buffer it is in), what is past it masked off."""
    cdef uint64_t a, b, h
    cdef uint8_t buffer[16]
    if n > SHORT_MAX:
        h = long_hash(s, n) & keep
        k0[0], k1[0] = h, LONG | n
        return h
    if s + 16 <= end:
        a, b = load64(s), load64(s + 8)
    else:
        memset(buffer, 0, 16)
        memcpy(buffer, s, n)
        a, b = load64(buffer), load64(buffer + 8)     # (past n: masked off below)
    a &= key_mask0[n]                               # (no branch on the length)
    b &= key_mask1[n]
    k0[0], k1[0] = a, b | (<uint64_t>n << 56)
    return mum(a ^ P0, k1[0] ^ P1) & keep


cdef struct Table:
    CountSlot* slots
    size_t capacity               # slots, a power of two
    size_t used
    int mapped                    # how the slots were allocated (bpe_table_alloc)
    int huge                      # ... and whether they were marked for huge pages
    uint8_t* arena                # long chunks' bytes, one after another
    size_t arena_size
    size_t arena_capacity
    uint64_t keep                 # bits of the probe hash used (all but in tests of collisions)
    Py_ssize_t overflow_slot      # a slot whose count an add would have taken past int64; -1: none
    int64_t overflow_count        # ... and the count that was not added
    bint out_of_memory            # a chunk could not be stored (the table or arena could not grow)
    size_t queued                 # chunks in the batch
    Pending batch[BATCH]


# The table's work is in plain functions of a Table (not methods, which Cython calls through the
# class's table of methods: they would not be inlined into the scanning loop).

cdef inline size_t home(uint64_t h, size_t capacity) noexcept nogil:
    """The slot a probe starts from: the first of a cache line's two, so that a chunk found
    within two slots (nearly all of them) costs one line, the one prefetched."""
    return <size_t>(h & (capacity - 2))


cdef inline void queue(Table* t, const uint8_t* s, size_t n, const uint8_t* end) noexcept nogil:
    """Count a chunk soon (once in the batch): its key and hash now, its slot prefetched."""
    cdef Pending* p = &t.batch[t.queued]
    p.s = s
    p.h = key_of(s, n, end, t.keep, &p.k0, &p.k1)
    prefetch(&t.slots[home(p.h, t.capacity)])
    t.queued += 1
    if t.queued == BATCH:
        flush(t)


cdef void flush(Table* t) noexcept nogil:
    """Count the batch. A short chunk found in the line its probe starts at (nearly all of them:
    the line was prefetched) is counted without a branch on which of the line's two slots holds
    it; the rest take ``put``."""
    cdef size_t q
    cdef Pending* p
    cdef CountSlot* pair
    cdef CountSlot* slot
    cdef uint64_t k0, k1
    cdef bint second
    for q in range(t.queued):
        p = &t.batch[q]
        k0, k1 = p.k0, p.k1
        if k1 < LONG:
            pair = &t.slots[home(p.h, t.capacity)]
            second = (pair[1].k1 == k1) & (pair[1].k0 == k0)
            slot = pair + second
            if slot.k1 == k1 and slot.k0 == k0 and slot.count != INT64_MAX:
                slot.count += 1
                continue
        put(t, p.s, k0, k1, p.h, 1)
    t.queued = 0


cdef inline void put(Table* t, const uint8_t* s, uint64_t k0, uint64_t k1, uint64_t h, int64_t count) noexcept nogil:
    """Add ``count`` to the chunk of this key (its bytes at s), found or placed by linear
    probing from the slot its hash picks."""
    cdef size_t mask = t.capacity - 1
    cdef size_t i = home(h, t.capacity)
    cdef CountSlot* slot
    while True:
        slot = &t.slots[i]
        if slot.k1 == k1 and slot.k0 == k0 and (k1 < LONG or same_bytes(t.arena + slot.ref, s, k1 & LENGTH)):
            if sum_overflows(slot.count, count):
                if t.overflow_slot < 0:
                    t.overflow_slot, t.overflow_count = i, count
                return
            slot.count += count
            return
        if slot.k1 == 0:
            break
        i = (i + 1) & mask
    insert(t, s, k0, k1, h, count, i)


cdef void insert(Table* t, const uint8_t* s, uint64_t k0, uint64_t k1, uint64_t h, int64_t count,
                 size_t i) noexcept nogil:
    """A new chunk into the empty slot i, or where it goes once the table has grown."""
    cdef size_t mask
    cdef uint64_t ref = 0
    cdef CountSlot* slot
    if 4 * (t.used + 1) > 3 * t.capacity:
        if grow(t):                             # (then it goes in the new slots)
            mask = t.capacity - 1
            i = home(h, t.capacity)
            while t.slots[i].k1 != 0:
                i = (i + 1) & mask
        elif t.used + 2 > t.capacity:           # no memory to grow, and one slot must stay empty
            t.out_of_memory = True
            return
    if k1 >= LONG:
        ref = store_long(t, s, k1 & LENGTH)
        if ref == <uint64_t>-1:
            t.out_of_memory = True
            return
    slot = &t.slots[i]
    slot.k0, slot.k1, slot.count, slot.ref = k0, k1, count, ref
    t.used += 1


cdef uint64_t store_long(Table* t, const uint8_t* s, size_t n) noexcept nogil:
    """A long chunk's bytes into the arena: where they start, or -1 if there is no memory."""
    cdef size_t capacity = t.arena_capacity
    cdef uint8_t* grown
    cdef uint64_t ref = t.arena_size
    if t.arena_size + n > capacity:
        capacity = max(2 * capacity, <size_t>1 << 12)
        while capacity < t.arena_size + n:
            capacity *= 2
        grown = <uint8_t*>realloc(t.arena, capacity)
        if grown == NULL:
            return <uint64_t>-1
        t.arena, t.arena_capacity = grown, capacity
    memcpy(t.arena + ref, s, n)
    t.arena_size += n
    return ref


cdef inline uint64_t probe_hash(const CountSlot* slot, uint64_t keep) noexcept nogil:
    """The probe hash of the chunk in a slot (a long chunk's is in the slot)."""
    return slot.k0 if slot.k1 >= LONG else mum(slot.k0 ^ P0, slot.k1 ^ P1) & keep


cdef bint grow(Table* t) noexcept nogil:
    """Twice the slots; False (and the table as it was) if there is no memory. A mapped table
    grows where it is (``bpe_table_extend``, then ``rehash_in_place``); else into new slots."""
    cdef size_t capacity = 2 * t.capacity, mask = capacity - 1, k, i
    cdef int mapped, huge = t.huge
    cdef CountSlot* slots
    cdef CountSlot* old = t.slots
    if t.mapped:
        slots = <CountSlot*>table_extend(old, t.capacity * sizeof(CountSlot), capacity * sizeof(CountSlot), &huge)
        if slots != NULL:
            t.slots, t.huge = slots, huge
            rehash_in_place(t, capacity)
            return True
    slots = <CountSlot*>table_alloc(capacity * sizeof(CountSlot), use_huge_pages, &mapped, &huge)
    if slots == NULL:
        return False
    for k in range(t.capacity):
        if old[k].k1 == 0:
            continue
        i = home(probe_hash(&old[k], t.keep), capacity)
        while slots[i].k1 != 0:
            i = (i + 1) & mask
        slots[i] = old[k]
        if <Py_ssize_t>k == t.overflow_slot:
            t.overflow_slot = i
    table_free(old, t.capacity * sizeof(CountSlot), t.mapped)
    t.slots, t.capacity, t.mapped, t.huge = slots, capacity, mapped, huge
    return True


cdef void rehash_in_place(Table* t, size_t capacity) noexcept nogil:
    """The table's slots were doubled in place (the old ones first, zeros after): every chunk to
    its place among ``capacity`` slots. A chunk's new home is its old one or that plus the old
    capacity C. Taking the old slots in probe order from just after an empty one e (e + 1 ..
    C - 1, then 0 .. e), each chunk taken out and put back by probing from its new home:
    * one that stays in the lower half lands at or before where it was (its old probe path
      held no empty slot, and its own slot is empty now), so no later take-out is on its path;
    * one that moves up probes the upper half, which holds only chunks moved before it and never
      loses one. Until the walk wraps to 0, the chunks moved up are among those that sat in
      [e + 1, C - 1] with homes there, and for every x at most C - x of them have homes at or
      past C + x (they fitted in [x, C - 1]), so none runs past the end; after the wrap, one that
      runs past the end lands in [0, its old slot], all of it walked already.
    So every chunk is found from its home without crossing an empty slot, as in a table built
    by inserting them one by one."""
    cdef size_t old = capacity // 2, mask = capacity - 1, e = 0, step, k, i
    cdef CountSlot* slots = t.slots
    cdef CountSlot moving
    cdef Py_ssize_t overflow = t.overflow_slot
    while slots[e].k1 != 0:                     # (a table at most 3/4 full has an empty slot)
        e += 1
    for step in range(1, old + 1):
        k = (e + step) & (old - 1)
        if slots[k].k1 == 0:
            continue
        moving = slots[k]
        slots[k].k1 = 0
        i = home(probe_hash(&moving, t.keep), capacity)
        while slots[i].k1 != 0:
            i = (i + 1) & mask
        slots[i] = moving
        if <Py_ssize_t>k == overflow:
            t.overflow_slot = i
    t.capacity = capacity


cdef inline void add_span(Table* t, int pattern, const uint8_t* cls, const uint8_t* fold, const unsigned char* s,
                          size_t n, const unsigned char* end) noexcept nogil:
    """``queue`` for every chunk of a span, with the table's fields in locals: the batch is in the
    Table, so each store to it would otherwise make the compiler read them again."""
    cdef size_t i = 0, j, q = t.queued, capacity = t.capacity
    cdef CountSlot* slots = t.slots
    cdef uint64_t keep = t.keep
    cdef Pending* p
    cdef Window window
    window_reset(&window)
    while i < n:
        j = split_next(&window, pattern, s, n, i, cls, fold)
        p = &t.batch[q]
        p.s = s + i
        p.h = key_of(s + i, j - i, end, keep, &p.k0, &p.k1)
        prefetch(&slots[home(p.h, capacity)])
        q += 1
        if q == BATCH:
            t.queued = q
            flush(t)
            q, slots, capacity = 0, t.slots, t.capacity      # (flush may have grown the table)
        i = j
    t.queued = q


cdef void add_document(Table* t, Scanner scanner, const unsigned char* s, size_t n, const unsigned char* end,
                       bint lines) noexcept nogil:
    """One document's chunks; with ``lines``, each of its lines split on its own. ``end``: the
    end of the buffer the document is in (the chunks' keys may read up to there)."""
    cdef size_t start = 0, stop
    cdef const void* newline
    cdef int pattern = scanner.pattern
    cdef const uint8_t* cls = &scanner.cls[0]
    cdef const uint8_t* fold = &scanner.fold[0]
    if not lines:
        add_span(t, pattern, cls, fold, s, n, end)
        return
    while start < n:
        stop = n
        newline = memchr(s + start, 10, n - start)
        if newline != NULL:
            stop = <size_t>(<const unsigned char*>newline - s) + 1
        add_span(t, pattern, cls, fold, s + start, stop - start, end)
        start = stop


cdef class ChunkTable:
    """A multiset of chunks (byte strings), compact and cache-friendly: an open-addressing table
    of 32-byte slots, two to a cache line, at most 3/4 full, holding each chunk's count. A chunk
    of up to 15 bytes is its slot's key (its bytes and length packed in 16 bytes, compared as two
    integers), so counting it touches one cache line; a longer one keeps its bytes in an arena and
    is found by a 64-bit probe hash, then compared.

    Text is counted in batches: ``BATCH`` chunks are scanned, keyed, hashed and their slots
    prefetched, then counted, so the cache misses of a batch overlap instead of following one
    another. Tables from 2 MB on are mapped in huge pages where the OS allows it, and grow in
    place (Linux): the old slots are not copied, and only the new half is fresh memory.

    Memory: 32 bytes a slot, so 43-85 bytes per distinct chunk (3/4 to 3/8 full, between two
    doublings), plus the bytes of chunks over 15 bytes (their length is in the slot); while it
    doubles in place, nothing more (else the old slots too, for the moment). The table this
    replaced (24-byte slots at most 70% full, chunks over 7 bytes in the arena with an 8-byte
    length) took 34-69 bytes per chunk plus 8 + length bytes for every chunk over 7 bytes, and
    held the old and the new slots while it doubled."""
    cdef Table t

    def __cinit__(self):
        self.t.keep = <uint64_t>-1
        self.t.overflow_slot = -1
        self.start()

    def __dealloc__(self):
        table_free(self.t.slots, self.t.capacity * sizeof(CountSlot), self.t.mapped)
        free(self.t.arena)

    cdef start(self):
        """An empty table of the first size, no arena."""
        self.t.slots = <CountSlot*>table_alloc(FIRST_SLOTS * sizeof(CountSlot), use_huge_pages, &self.t.mapped,
                                               &self.t.huge)
        if self.t.slots == NULL:
            raise MemoryError()
        self.t.capacity, self.t.used, self.t.queued = FIRST_SLOTS, 0, 0
        self.t.arena = NULL
        self.t.arena_size = self.t.arena_capacity = 0

    def __len__(self):
        return self.t.used

    @property
    def nbytes(self) -> int:
        """Memory held, in bytes (what a worker compares with its budget before spilling)."""
        return self.t.capacity * sizeof(CountSlot) + self.t.arena_capacity

    @property
    def huge_pages(self) -> bool:
        """Whether the slots were marked for transparent huge pages (tables from 2 MB on, on Linux)."""
        return bool(self.t.huge)

    def _weaken_probe_hash(self, uint64_t keep):
        """Keep only the bits ``keep`` of every probe hash (0: every chunk probes from slot 0 and
        long chunks' hashes all collide). For tests of the collision paths; an empty table only."""
        if self.t.used:
            raise ValueError("the probe hash of a table in use cannot change")
        self.t.keep = keep

    cdef inline size_t chunk_at(self, const CountSlot* slot, const uint8_t** data, uint8_t* buffer) noexcept nogil:
        """The bytes of the chunk in a slot (short ones copied out to ``buffer``, 16 bytes)."""
        if slot.k1 >= LONG:
            data[0] = self.t.arena + slot.ref
            return <size_t>(slot.k1 & LENGTH)
        store64(buffer, slot.k0)
        store64(buffer + 8, slot.k1)
        data[0] = buffer
        return <size_t>(slot.k1 >> 56)

    def add_text(self, Scanner scanner, const unsigned char[::1] data, bint lines=False):
        """Count the chunks of UTF-8 ``data`` as split by the scanner of a named pattern; with
        ``lines``, each line (up to and with its "\\n") is split on its own."""
        if data.shape[0] == 0:
            return
        with nogil:
            add_document(&self.t, scanner, &data[0], data.shape[0], &data[0] + data.shape[0], lines)
            flush(&self.t)
        self.check()

    def add_documents(self, Scanner scanner, const unsigned char[::1] data, const int64_t[::1] offsets,
                      bint lines=False):
        """Count the chunks of many documents packed in one UTF-8 buffer: document i is
        ``data[offsets[i]:offsets[i + 1]]``, split on its own (no chunk spans two documents), as
        ``add_text`` splits it. One call for a whole batch: no Python object per document. Each
        document must be valid UTF-8 on its own (the scanner reads whole characters)."""
        cdef Py_ssize_t i, n = offsets.shape[0] - 1
        cdef const unsigned char* s
        cdef const unsigned char* end
        if n <= 0 or data.shape[0] == 0:
            return
        if offsets[0] < 0 or offsets[n] > data.shape[0]:
            raise ValueError(f"offsets run from {offsets[0]} to {offsets[n]}, outside the {data.shape[0]} bytes")
        for i in range(n):
            if offsets[i + 1] < offsets[i]:
                raise ValueError(f"offsets must not decrease: offsets[{i + 1}] = {offsets[i + 1]} < {offsets[i]}")
        s = &data[0]
        end = s + data.shape[0]
        with nogil:
            for i in range(n):
                add_document(&self.t, scanner, s + offsets[i], <size_t>(offsets[i + 1] - offsets[i]), end, lines)
            flush(&self.t)
        self.check()

    def add(self, const unsigned char[::1] chunk, int64_t count=1):
        """Count one chunk ``count`` times (empty chunks and counts below 1 are not counted)."""
        cdef uint64_t k0, k1, h
        if chunk.shape[0] and count > 0:
            h = key_of(&chunk[0], chunk.shape[0], &chunk[0] + chunk.shape[0], self.t.keep, &k0, &k1)
            put(&self.t, &chunk[0], k0, k1, h, count)
            self.check()

    cdef check(self):
        """MemoryError if a chunk could not be stored; OverflowError if an add would have taken a
        count past int64 (that add was not made; the others were)."""
        cdef Py_ssize_t slot = self.t.overflow_slot
        if self.t.out_of_memory:
            self.t.out_of_memory = False
            raise MemoryError("no memory left to count more distinct chunks")
        if slot >= 0:
            self.t.overflow_slot = -1
            raise count_overflow(self.chunk(slot), self.t.slots[slot].count, self.t.overflow_count)

    def add_many(self, list chunks):
        """Count each bytes object of the list once."""
        cdef bytes chunk
        cdef const uint8_t* s
        try:
            for chunk in chunks:
                if len(chunk):
                    s = <const uint8_t*><const char*>chunk
                    queue(&self.t, s, len(chunk), s + len(chunk))
        finally:
            flush(&self.t)                    # before the list, and so the chunks' bytes, may go
        self.check()

    def add_arrays(self, const uint8_t[::1] data, const int64_t[::1] offsets, const int64_t[::1] counts):
        """Count every chunk of a table given as arrays, with its count."""
        cdef Py_ssize_t i, n = counts.shape[0]
        cdef size_t length
        cdef uint64_t k0, k1, h
        cdef const uint8_t* end = &data[0] + data.shape[0] if data.shape[0] else NULL
        for i in range(n):
            length = offsets[i + 1] - offsets[i]
            if length and counts[i] > 0:
                h = key_of(&data[offsets[i]], length, end, self.t.keep, &k0, &k1)
                put(&self.t, &data[offsets[i]], k0, k1, h, counts[i])
                self.check()

    def clear(self):
        """Forget every chunk and give the memory back."""
        table_free(self.t.slots, self.t.capacity * sizeof(CountSlot), self.t.mapped)
        free(self.t.arena)
        self.t.slots = NULL
        self.t.arena = NULL
        self.t.capacity = self.t.arena_capacity = 0
        self.t.overflow_slot = -1
        self.t.out_of_memory = False
        self.start()

    # -- writing out, sorted by (hash_bytes, bytes) -------------------------------------------------
    cdef void sort_slots(self, vector[pair[uint64_t, int64_t]]* keyed, Py_ssize_t* total) noexcept:
        """(hash, slot) of every chunk, in (hash, bytes) order; and the bytes of all chunks.
        16 bytes a chunk, sorted in place."""
        cdef Py_ssize_t e
        cdef size_t length
        cdef const uint8_t* chunk
        cdef uint8_t buffer[16]
        keyed.reserve(self.t.used)
        total[0] = 0
        for e in range(<Py_ssize_t>self.t.capacity):
            if self.t.slots[e].k1:
                length = self.chunk_at(&self.t.slots[e], &chunk, buffer)
                keyed.push_back(pair[uint64_t, int64_t](hash_bytes(chunk, length), e))
                total[0] += length
        sort(keyed.begin(), keyed.end())
        self.order_equal_hashes(keyed)

    cdef void order_equal_hashes(self, vector[pair[uint64_t, int64_t]]* keyed) noexcept:
        """Within runs of equal hash (distinct chunks whose 64-bit hashes collide: practically
        never), order by bytes, so that the order is (hash, bytes) everywhere."""
        cdef size_t i = 0, j, k
        while i < keyed.size():
            j = i + 1
            while j < keyed.size() and keyed[0][j].first == keyed[0][i].first:
                j += 1
            if j - i > 1:
                run = sorted((self.chunk(keyed[0][k].second), keyed[0][k].second) for k in range(i, j))
                for k in range(i, j):
                    keyed[0][k].second = run[k - i][1]
            i = j

    cdef void fill(self, vector[pair[uint64_t, int64_t]]* keyed, Py_ssize_t lo, Py_ssize_t hi, uint8_t[::1] data,
                   int64_t[::1] offsets, int64_t[::1] counts, uint64_t[::1] hashes, int64_t first_offset) noexcept:
        """Chunks lo..hi (in sorted order) into data (from byte 0), their ends into offsets[1:]
        (counting from first_offset; offsets[0] = first_offset), their counts and hashes."""
        cdef Py_ssize_t k
        cdef size_t length
        cdef const uint8_t* chunk
        cdef uint8_t buffer[16]
        cdef const CountSlot* slot
        offsets[0] = first_offset
        for k in range(lo, hi):
            slot = &self.t.slots[keyed[0][k].second]
            length = self.chunk_at(slot, &chunk, buffer)
            memcpy(&data[offsets[k - lo] - first_offset], chunk, length)
            offsets[k - lo + 1] = offsets[k - lo] + length
            counts[k - lo] = slot.count
            hashes[k - lo] = keyed[0][k].first
    def sorted_arrays(self):
        """(data, offsets, counts, hashes): the table as arrays sorted by (hash, bytes)."""
        cdef vector[pair[uint64_t, int64_t]] keyed
        cdef Py_ssize_t total, n
        self.sort_slots(&keyed, &total)
        n = keyed.size()
        data, offsets = np.empty(total, np.uint8), np.empty(n + 1, np.int64)
        counts, hashes = np.empty(n, np.int64), np.empty(n, np.uint64)
        self.fill(&keyed, 0, n, data, offsets, counts, hashes, 0)
        return data, offsets, counts, hashes

    def write_sorted(self, path, Py_ssize_t batch=1 << 18):
        """Write the table sorted by (hash, bytes) as a *part file* (see read_part), a batch of
        chunks at a time: never a second copy of the table in memory."""
        cdef vector[pair[uint64_t, int64_t]] keyed
        cdef Py_ssize_t total, n, lo, hi, written = 0, size
        self.sort_slots(&keyed, &total)
        n = keyed.size()
        offsets, counts, hashes = np.empty(batch + 1, np.int64), np.empty(batch, np.int64), np.empty(batch, np.uint64)
        at_offsets, at_counts, at_hashes, at_data = part_layout(n)
        with open(path, "wb") as fh:
            fh.write(PART_MAGIC + np.array([n, total], dtype=np.int64).tobytes())
            fh.write(np.zeros(1, np.int64).tobytes())
            for lo in range(0, n, batch):
                hi = min(lo + batch, n)
                size = self.span_bytes(&keyed, lo, hi)
                data = np.empty(size, np.uint8)
                self.fill(&keyed, lo, hi, data, offsets, counts, hashes, written)
                for at, values in ((at_offsets + 8 * (lo + 1), offsets[1:hi - lo + 1]),
                                   (at_counts + 8 * lo, counts[:hi - lo]), (at_hashes + 8 * lo, hashes[:hi - lo]),
                                   (at_data + written, data)):
                    fh.seek(at)
                    fh.write(values.tobytes())
                written += size

    cdef Py_ssize_t span_bytes(self, vector[pair[uint64_t, int64_t]]* keyed, Py_ssize_t lo, Py_ssize_t hi) noexcept:
        cdef Py_ssize_t k, total = 0
        cdef const uint8_t* chunk
        cdef uint8_t buffer[16]
        for k in range(lo, hi):
            total += self.chunk_at(&self.t.slots[keyed[0][k].second], &chunk, buffer)
        return total

    def chunk(self, Py_ssize_t slot):
        """The chunk in a slot (by its index in the table)."""
        cdef const uint8_t* data
        cdef uint8_t buffer[16]
        cdef size_t length
        if not 0 <= slot < <Py_ssize_t>self.t.capacity or self.t.slots[slot].k1 == 0:
            raise IndexError(f"slot {slot} holds no chunk")
        length = self.chunk_at(&self.t.slots[slot], &data, buffer)
        return (<const char*>data)[:length]


cdef inline int compare(uint64_t ha, const uint8_t* a, size_t na, uint64_t hb, const uint8_t* b, size_t nb) noexcept nogil:
    """Order of two chunks by (hash, bytes): -1, 0 or 1."""
    cdef int c
    if ha != hb:
        return -1 if ha < hb else 1
    c = memcmp(a, b, na if na < nb else nb)
    if c != 0:
        return c
    return (na > nb) - (na < nb)


PART_MAGIC = b"BPEFPART"
PART_HEADER = 24          # magic, number of chunks, number of bytes


def part_layout(Py_ssize_t n):
    """Where a part file of n chunks keeps its offsets, counts, hashes and bytes. All
    little-endian: b"BPEFPART", n (int64), total bytes (int64); offsets (int64 x n + 1); counts
    (int64 x n); hashes (uint64 x n); the chunks' bytes (uint8 x total)."""
    return PART_HEADER, PART_HEADER + 8 * (n + 1), PART_HEADER + 8 * (2 * n + 1), PART_HEADER + 8 * (3 * n + 1)


def part_size(path):
    """(number of chunks, number of bytes) of a part file."""
    header = np.fromfile(path, dtype=np.int64, count=3)
    if header.size != 3 or header[:1].tobytes() != PART_MAGIC:
        raise ValueError(f"{path}: not a bpe_fast part file")
    return int(header[1]), int(header[2])


def read_part(path, Py_ssize_t lo=0, hi=None):
    """Chunks lo..hi of a part file written by ``ChunkTable.write_sorted``, as (data, offsets,
    counts, hashes) with offsets from 0. The file is mapped, not read: only the pages of that
    range come into memory, and leave it when the arrays are dropped."""
    n, total = part_size(path)
    hi = n if hi is None else hi
    at_offsets, at_counts, at_hashes, at_data = part_layout(n)
    if hi <= lo:
        return np.empty(0, np.uint8), np.zeros(1, np.int64), np.empty(0, np.int64), np.empty(0, np.uint64)
    offsets = np.array(np.memmap(path, np.int64, "r", offset=at_offsets + 8 * lo, shape=(hi - lo + 1,)))
    counts = np.memmap(path, np.int64, "r", offset=at_counts + 8 * lo, shape=(hi - lo,))
    hashes = np.memmap(path, np.uint64, "r", offset=at_hashes + 8 * lo, shape=(hi - lo,))
    first, last = int(offsets[0]), int(offsets[hi - lo])
    data = np.memmap(path, np.uint8, "r", offset=at_data + first, shape=(last - first,)) \
        if last > first else np.empty(0, np.uint8)
    return data, offsets - first, counts, hashes


def part_hash_index(path, boundaries):
    """For each hash in ``boundaries`` (ascending), the first chunk of the part whose hash is at
    least that: where the part's hash ranges start. Reads only the pages a binary search needs."""
    n, total = part_size(path)
    if n == 0:
        return np.zeros(len(boundaries), np.int64)
    hashes = np.memmap(path, np.uint64, "r", offset=part_layout(n)[2], shape=(n,))
    return np.searchsorted(hashes, np.asarray(boundaries, dtype=np.uint64), side="left")


cdef struct Part:
    const uint8_t* data
    const int64_t* offsets
    const int64_t* counts
    const uint64_t* hashes
    Py_ssize_t n, i


def merge_into(parts, data, offsets, counts, hashes, Py_ssize_t k0=0):
    """Merge tables sorted by (hash, bytes), each (data, offsets, counts, hashes), into the
    output arrays from chunk k0 on (offsets[k0] must be set), summing the counts of equal
    chunks. The outputs must have room for every chunk and byte of the parts. Returns the
    number of chunks written, counting from 0; OverflowError if a sum would pass int64. A k-way
    merge: each step takes the smallest head of the k parts (k is small: the workers' files)."""
    cdef Py_ssize_t k = len(parts), j, best, out = k0
    cdef vector[Part] heads
    cdef const uint8_t[::1] d
    cdef const int64_t[::1] o, c
    cdef const uint64_t[::1] h
    cdef uint8_t[::1] od = data
    cdef int64_t[::1] oo = offsets, oc = counts
    cdef uint64_t[::1] oh = hashes
    cdef Part part
    cdef uint8_t empty = 0
    keep = []                                    # the memoryviews stay alive while we merge
    for a in parts:
        d, o, c, h = a[0], a[1], a[2], a[3]
        keep.append((d, o, c, h))
        part.data = &d[0] if d.shape[0] else &empty
        part.offsets, part.counts = &o[0], (&c[0] if c.shape[0] else NULL)
        part.hashes = &h[0] if h.shape[0] else NULL
        part.n, part.i = c.shape[0], 0
        if part.n:
            heads.push_back(part)
    cdef size_t length
    cdef int64_t count = 0
    cdef bint overflow = False
    with nogil:
        while heads.size():
            best = 0
            for j in range(1, <Py_ssize_t>heads.size()):
                if order_of(&heads[j], &heads[best]) < 0:
                    best = j
            length = head_length(&heads[best])
            if out > k0 and same_chunk(&heads[best], oh[out - 1], &od[oo[out - 1]], oo[out] - oo[out - 1]):
                count = heads[best].counts[heads[best].i]             # equal to the last one out
                if sum_overflows(oc[out - 1], count):
                    overflow = True
                    break
                oc[out - 1] += count
            else:
                if length:
                    memcpy(&od[oo[out]], heads[best].data + heads[best].offsets[heads[best].i], length)
                oo[out + 1] = oo[out] + length
                oc[out] = heads[best].counts[heads[best].i]
                oh[out] = heads[best].hashes[heads[best].i]
                out += 1
            heads[best].i += 1
            if heads[best].i == heads[best].n:
                heads.erase(heads.begin() + best)
    if overflow:
        raise count_overflow(data[oo[out - 1]:oo[out]], oc[out - 1], count)
    return out - k0


cdef inline size_t head_length(const Part* p) noexcept nogil:
    return p.offsets[p.i + 1] - p.offsets[p.i]


cdef inline int order_of(const Part* a, const Part* b) noexcept nogil:
    return compare(a.hashes[a.i], a.data + a.offsets[a.i], head_length(a),
                   b.hashes[b.i], b.data + b.offsets[b.i], head_length(b))


cdef inline bint same_chunk(const Part* p, uint64_t h, const uint8_t* data, size_t length) noexcept nogil:
    return p.hashes[p.i] == h and head_length(p) == length and \
        (length == 0 or memcmp(p.data + p.offsets[p.i], data, length) == 0)


def merge_sorted(a, b):
    """Two tables sorted by (hash, bytes), each (data, offsets, counts, hashes), as one."""
    return merge_tables([a, b])


def merge_tables(parts):
    """Tables sorted by (hash, bytes) as one, in new arrays (whose unused tails cost nothing:
    they are never written, so never paged in)."""
    n = sum(len(p[2]) for p in parts)
    total = sum(len(p[0]) for p in parts)
    data, offsets = np.empty(total, np.uint8), np.empty(n + 1, np.int64)
    counts, hashes = np.empty(n, np.int64), np.empty(n, np.uint64)
    offsets[0] = 0
    k = merge_into(parts, data, offsets, counts, hashes)
    return data[:offsets[k]], offsets[:k + 1], counts[:k], hashes[:k]
