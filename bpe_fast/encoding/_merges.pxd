# cython: language_level=3
"""The merges of an encoder, by symbol.

Invariant: symbols are numbered by rank. Byte b is symbol b; merge m makes symbol 256 + m from
two earlier symbols, so a smaller symbol is an earlier merge. For every symbol t, ``left[t]``
and ``right[t]`` are its parts (a byte: itself), ``length[t]`` its length in bytes,
``first_byte``/``last_byte`` its ends, ``ext[t]`` its token id; ``pairs`` maps (left, right) to
the symbol they make, and bit (x << 8 | y) of ``joins`` is set when some merge puts byte y after
byte x. ``merges_add`` is the one place that appends a merge, keeping all of these in step.
"""
from libc.stdint cimport int32_t, uint8_t, uint64_t
from libc.string cimport memset
from libcpp.vector cimport vector

from ..core._hash cimport (PairSlot, PairTable, pair_of, pairtable_add, pairtable_find, pairtable_free,
                           pairtable_init)

cdef enum:
    NO_MERGE = 0x7FFFFFFF


cdef struct Merges:
    PairTable pairs                         # (left, right) symbols -> the symbol they make
    vector[int32_t] left                    # symbol -> its parts (a byte: itself)
    vector[int32_t] right
    vector[int32_t] length                  # symbol -> its length in bytes
    vector[uint8_t] first_byte              # symbol -> its first and its last byte
    vector[uint8_t] last_byte
    uint64_t joins[1024]                    # bit (x << 8 | y): some merge puts byte y after x
    vector[int32_t] ext                     # symbol -> token id


cdef inline int merges_init(Merges* m, size_t expected, const int32_t* byte_ids) noexcept nogil:
    """The 256 byte symbols (byte b has id byte_ids[b]), room for ``expected`` merges; -1 if out
    of memory."""
    cdef int i
    if pairtable_init(&m.pairs, expected) != 0:
        return -1
    memset(m.joins, 0, sizeof(m.joins))
    for i in range(256):
        m.left.push_back(i)
        m.right.push_back(i)
        m.length.push_back(1)
        m.first_byte.push_back(<uint8_t>i)
        m.last_byte.push_back(<uint8_t>i)
        m.ext.push_back(byte_ids[i])
    return 0


cdef inline void merges_free(Merges* m) noexcept nogil:
    pairtable_free(&m.pairs)


cdef inline int merges_add(Merges* m, int32_t left, int32_t right, int32_t token_id) except -1:
    """Append the next merge (symbols left, right) making token_id."""
    cdef int32_t symbol = <int32_t>m.left.size()
    if pairtable_add(&m.pairs, pair_of(left, right), symbol, 0) == NULL:
        raise MemoryError()
    m.left.push_back(left)
    m.right.push_back(right)
    m.length.push_back(m.length[left] + m.length[right])
    m.first_byte.push_back(m.first_byte[left])
    m.last_byte.push_back(m.last_byte[right])
    cdef int join = (m.last_byte[left] << 8) | m.first_byte[right]
    m.joins[join >> 6] |= <uint64_t>1 << (join & 63)
    m.ext.push_back(token_id)
    return 0


cdef inline int32_t merged(const Merges* m, int32_t left, int32_t right) noexcept nogil:
    """The symbol the pair merges into (smaller is earlier), or NO_MERGE."""
    cdef const PairSlot* slot = pairtable_find(&m.pairs, pair_of(left, right))
    return slot.value if slot != NULL else NO_MERGE


cdef inline void append_bytes(Merges* m, int32_t symbol, vector[uint8_t]* out) noexcept nogil:
    while symbol >= 256:                    # the left parts recursively, the right ones in a loop
        append_bytes(m, m.left[symbol], out)
        symbol = m.right[symbol]
    out.push_back(<uint8_t>symbol)


cdef inline void spell(Merges* m, int32_t symbol, vector[uint8_t]* out) noexcept nogil:
    """The bytes of a symbol, written into out."""
    out.clear()
    append_bytes(m, symbol, out)


cdef inline bint no_cross_merge(Merges* m, int32_t a, int32_t b, int32_t limit) noexcept nogil:
    """While BPE builds symbols a and b side by side from their bytes, does no merge across
    their boundary come before the merge ``limit``?

    Walks back in merge order: the later of a and b was made last, from its parts, so just
    before that merge the boundary pair was (a's right part, b) or (a, b's left part). A
    boundary pair that merges before the current limit would have been merged instead. On a
    tie the leftmost pair wins: a's own merge beats an equal one on the boundary (limit a),
    a boundary merge beats b's (limit b + 1)."""
    while True:
        if merged(m, a, b) < limit:
            return False
        if a < 256 and b < 256:
            return True
        if a > b:
            limit, a = a, m.right[a]
        else:
            limit, b = b + 1, m.left[b]
