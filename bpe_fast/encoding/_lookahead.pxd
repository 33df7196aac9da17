# cython: language_level=3
"""encode_piece's first pass: a batch of chunks split off, their keys packed and hashed, and their
chunk table lines asked for before they are looked up.

Invariant: nothing here changes a result. For each short chunk (at most PACKED_MAX_BYTES bytes)
the first pass leaves its start, length, packed key (key0, key1) and a pointer to its key's home
line in ``homes``; the second pass (encode_piece, in _encode.pyx) reads the line from there, which
has come from memory meanwhile. A home line is only a hint: once the chunk table grows or starts
afresh (_cache.pxd), the homes of the chunks not yet looked up are found again (``find_homes``).

* ``home_of``: the home line (two entries) of a packed key in a chunk table;
* ``ask_home``: the same, prefetched;
* ``split_window_run``: the chunks the splitter's window has vouched for, taken in a loop of its
  own (pretokenize/_split.pxd's ``Window``).
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t

from ..core._cpu cimport prefetch
from ..core._hash cimport PACKED_MAX_BYTES, Packed, pack_key16, packed_hash, packed_slot
from ..pretokenize._split cimport Window, bpe_ctz64

cdef enum:
    BATCH = 128                # chunks scanned, hashed and prefetched before they are looked up


cdef inline const Packed* home_of(const Packed* table, int bits, uint64_t k0, uint64_t k1) noexcept nogil:
    """The home line (two entries) of the packed key (k0, k1) in a chunk table of 2**bits entries."""
    return &table[packed_slot(packed_hash(k0, k1), bits)]


cdef inline const Packed* ask_home(const Packed* table, int bits, uint64_t k0, uint64_t k1) noexcept nogil:
    """The home line of the packed key (k0, k1), asked for (encode_piece's first pass: the line
    comes while the next chunks are split; the second reads it from here instead of hashing again)."""
    cdef const Packed* home = home_of(table, bits, k0, k1)
    prefetch(home)
    return home


cdef inline void find_homes(const Packed* table, int bits, const uint64_t* key0, const uint64_t* key1,
                            const Packed** homes, size_t q, size_t m) noexcept nogil:
    """The home lines of chunks q .. m - 1 (the short ones: key1 not 0) again, in a table that has
    grown or started afresh since they were found (encode_piece)."""
    while q < m:
        if key1[q] != 0:
            homes[q] = home_of(table, bits, key0[q], key1[q])
        q += 1


cdef inline size_t split_window_run(Window* window, const uint8_t* s, const uint8_t* end, size_t i, size_t m,
                                   const Packed* table, int bits, size_t* start, uint32_t* length,
                                   uint64_t* key0, uint64_t* key1, const Packed** homes, size_t* at) noexcept nogil:
    """encode_piece's first pass over the chunks the splitter's window has vouched for (their ends are
    the bits of ``window.ends``, as split_next would give them): each is split off, its key packed and
    hashed and its chunk table line asked for, up to BATCH chunks in all (m so far). Stops before a chunk
    of over PACKED_MAX_BYTES bytes or one within 16 bytes of ``end``, for the caller to take the long
    way. Returns the new m; the next chunk's start goes to ``at``. A loop of its own, like
    table_emit_home, so that the window's bits and base stay in registers instead of going through the
    stack each chunk, and the key's bounds are checked once (most chunks of C come this way; the
    instructions of encoding C: benchmarks/RESULTS.md, "Encode once (7)")."""
    cdef uint64_t ends = window.ends
    cdef size_t base = window.base, j
    while ends and m < BATCH:
        j = base + bpe_ctz64(ends)
        if j - i > PACKED_MAX_BYTES or s + i + 16 > end:
            break
        ends &= ends - 1
        start[m], length[m] = i, <uint32_t>(j - i)
        pack_key16(s + i, j - i, &key0[m], &key1[m])
        homes[m] = ask_home(table, bits, key0[m], key1[m])
        m += 1
        i = j
    window.ends = ends
    at[0] = i
    return m
