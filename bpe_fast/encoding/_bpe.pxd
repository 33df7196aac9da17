# cython: language_level=3
"""The BPE of one chunk, by backtracking (the method of GitHub's ``bpe`` crate, written afresh).

Invariant: ``backtrack`` gives exactly what replaying the merges gives (_replay.pxd):

* A token is *reachable* when BPE of its bytes gives it back. The BPE encoding of any text is
  the one sequence of reachable tokens spelling it in which every adjacent pair is *compatible*:
  BPE of the two tokens' bytes together gives the same two tokens (``compatible``).
* So take the longest reachable token at the current position (a walk down a trie of their
  bytes); if it is not compatible with the token before it, try its longest proper prefix that
  is a token (``shorter``), and so on; when none fits, the position cannot be a token boundary
  after that token: mark it dead and pop the token before. Each position dies at most once, so
  the work is linear in the chunk (times the longest token), with no quadratic corner.

``Reachable`` holds the reachable symbols of a ``Merges`` and the trie of their bytes, built
once from the merges (``reachable_build``) or read back (``reachable_load``); ``Compat`` is a thread's memory of answers of
``compatible``, direct-mapped, the last per slot: (a << 33 | b << 1 | answer), all ones when
empty.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset
from libcpp.vector cimport vector

from ..core._hash cimport (PairSlot, PairTable, pair_of, pairtable_add, pairtable_find, pairtable_free,
                           pairtable_init)
from ..core._pairmap cimport EMPTY
from ._merges cimport Merges, NO_MERGE, no_cross_merge, spell
from ._replay cimport replay

cdef enum:
    STACK_CHUNK = 256          # chunks up to this long backtrack in stack arrays


cdef struct Reachable:
    vector[uint8_t] reachable                # symbol -> 1 if BPE of its bytes gives it back
    vector[int32_t] shorter                  # symbol -> longest reachable proper prefix, or -1
    vector[int32_t] level2                   # the first two bytes -> trie node, or -1
    PairTable trie                           # (node, next byte) -> (node, its symbol or -1),
                                             # past the first two bytes
    vector[int32_t] node_symbol              # node -> the reachable symbol it spells, or -1


cdef struct Compat:
    uint64_t* known                          # answers of ``compatible`` (see the docstring)
    int bits


# -- set-up ----------------------------------------------------------------------------------
cdef inline int reachable_init(Reachable* r) noexcept nogil:
    """An empty trie; -1 if out of memory."""
    return pairtable_init(&r.trie, 1024)


cdef inline void reachable_free(Reachable* r) noexcept nogil:
    pairtable_free(&r.trie)


cdef inline int32_t trie_new_node(Reachable* r) noexcept nogil:
    r.node_symbol.push_back(-1)
    return <int32_t>r.node_symbol.size() - 1


cdef inline int trie_insert(Reachable* r, const uint8_t* s, size_t n, int32_t symbol) except -1:
    """Make symbol the one spelled by the trie node of s (n >= 2), making the path as needed.
    A node's symbol is kept in node_symbol and, past two bytes, in the slot leading to it."""
    cdef size_t i
    cdef int32_t node = r.level2[(s[0] << 8) | s[1]]
    cdef PairSlot* slot = NULL
    if node < 0:
        node = trie_new_node(r)
        r.level2[(s[0] << 8) | s[1]] = node
    for i in range(2, n):
        slot = pairtable_add(&r.trie, pair_of(node, s[i]), <int32_t>r.node_symbol.size(), -1)
        if slot == NULL:
            raise MemoryError()
        if slot.value == <int32_t>r.node_symbol.size():
            r.node_symbol.push_back(-1)
        node = slot.value
    r.node_symbol[node] = symbol
    if slot != NULL:
        slot.extra = symbol
    return 0


cdef inline int reachable_build(Reachable* r, Merges* m) except -1:
    """Which symbols are reachable, the trie of their bytes and each one's ``shorter``.

    A merged symbol is reachable exactly when its parts are and, while the parts are built
    side by side, no merge across their boundary comes before their own (``no_cross_merge``
    with the symbol itself as the limit): then BPE of its bytes ends in the two parts, which
    merge into it."""
    cdef Py_ssize_t t, n = m.left.size()
    cdef vector[uint8_t] text
    r.reachable.assign(n, 1)
    for t in range(256, n):
        r.reachable[t] = (r.reachable[m.left[t]] and r.reachable[m.right[t]]
                          and no_cross_merge(m, m.left[t], m.right[t], <int32_t>t))
    r.level2.assign(65536, -1)
    r.node_symbol.assign(257, -1)           # node 0: the root; node 1 + b: byte b
    for t in range(256):
        r.node_symbol[1 + t] = <int32_t>t
    for t in range(256, n):
        if r.reachable[t]:
            spell(m, <int32_t>t, &text)
            trie_insert(r, text.data(), text.size(), <int32_t>t)
    r.shorter.assign(n, -1)
    for t in range(256, n):
        if r.reachable[t]:
            spell(m, <int32_t>t, &text)
            r.shorter[t] = longest_prefix(r, text.data(), text.size() - 1, 0)
    return 0


cdef inline int reachable_load(Reachable* r, size_t n, const uint8_t[::1] reachable,
                               const int32_t[::1] shorter, const int32_t[::1] level2,
                               const int32_t[::1] node_symbol, const uint8_t[::1] trie_slots,
                               int trie_bits) except -1:
    """``reachable_build``'s result for n symbols, read back (prebuilt.py saves it): the same
    tables, after checking every index they hold is in range, so a damaged file cannot lead a
    lookup out of its table (it could only give other ids: prebuilt.py's checksum is for that)."""
    cdef size_t i, nodes = node_symbol.shape[0], slots, used = 0
    cdef const PairSlot* s
    if not 0 < trie_bits < 40 or <size_t>trie_slots.shape[0] != (<size_t>1 << trie_bits) * sizeof(PairSlot):
        raise ValueError("the trie's size does not match its bits")
    if <size_t>reachable.shape[0] != n or <size_t>shorter.shape[0] != n or level2.shape[0] != 65536 or nodes < 257:
        raise ValueError("the tables are not the size the merges give")
    for i in range(n):
        if reachable[i] > 1 or not -1 <= shorter[i] < <int64_t>n:
            raise ValueError("a symbol out of range")
    for i in range(65536):
        if not -1 <= level2[i] < <int64_t>nodes:
            raise ValueError("a trie node out of range")
    for i in range(nodes):
        if not -1 <= node_symbol[i] < <int64_t>n:
            raise ValueError("a symbol out of range")
    slots = <size_t>1 << trie_bits
    s = <const PairSlot*>&trie_slots[0]
    for i in range(slots):
        if s[i].key != EMPTY:
            used += 1
            if not (0 <= s[i].value < <int64_t>nodes and -1 <= s[i].extra < <int64_t>n):
                raise ValueError("a trie entry out of range")
    if 2 * used + 2 > slots:               # probes end at a free slot: the table must keep some
        raise ValueError("the trie is too full")
    pairtable_free(&r.trie)
    r.trie.slots = <PairSlot*>malloc(slots * sizeof(PairSlot))
    if r.trie.slots == NULL:
        raise MemoryError()
    memcpy(r.trie.slots, s, slots * sizeof(PairSlot))
    r.trie.bits, r.trie.size = trie_bits, used
    r.reachable.assign(&reachable[0], &reachable[0] + n)
    r.shorter.assign(&shorter[0], &shorter[0] + n)
    r.level2.assign(&level2[0], &level2[0] + 65536)
    r.node_symbol.assign(&node_symbol[0], &node_symbol[0] + nodes)
    return 0


cdef inline int compat_widen(Compat* c, int bits) except -1:
    """Make ``known`` 2**bits answers if it is smaller (it starts empty: answers found under
    another size would sit in the wrong slots). Encoding the distinct chunks of a word table,
    the pairs of tokens that meet are millions: a table of 2**16 forgets them, and the walk down
    the merges again takes a good share of the time on a superword table (benchmarks/RESULTS.md,
    "Superword training's cost")."""
    cdef uint64_t* table
    if c.known != NULL and bits <= c.bits:
        return 0
    table = <uint64_t*>malloc((<size_t>1 << bits) * sizeof(uint64_t))
    if table == NULL:
        raise MemoryError()
    memset(table, 0xFF, (<size_t>1 << bits) * sizeof(uint64_t))   # no key is all ones
    free(c.known)
    c.known, c.bits = table, bits
    return 0


cdef inline void compat_free(Compat* c) noexcept nogil:
    free(c.known)


# -- backtracking ----------------------------------------------------------------------------
cdef inline bint compatible(Merges* m, int32_t a, int32_t b, uint64_t* known, int bits) noexcept nogil:
    """Does BPE of the bytes of reachable a then b give exactly [a, b]? At once yes when no
    merge joins a's last byte to b's first (``joins``): no merge can then cross the boundary,
    and each side merges as it does alone, into a and b. Such boundaries are most between
    words (no token of a cl100k-trained vocabulary has a letter before a space), and the
    8 KB table stays in the fastest cache. Else ``known``, the calling thread's table of
    answers already found (``Compat``): the same pairs of tokens meet again and again, and
    the walk down their merges is cache misses."""
    cdef int join = (m.last_byte[a] << 8) | m.first_byte[b]
    if not (m.joins[join >> 6] >> (join & 63)) & 1:
        return True
    cdef uint64_t key = (<uint64_t>a << 33) | (<uint64_t><uint32_t>b << 1)
    cdef uint64_t* slot = &known[(key * <uint64_t>0x9E3779B97F4A7C15) >> (64 - bits)]
    if (slot[0] & ~(<uint64_t>1)) == key:
        return slot[0] & 1
    cdef bint answer = no_cross_merge(m, a, b, NO_MERGE)
    slot[0] = key | answer
    return answer


cdef inline int32_t longest_prefix(Reachable* r, const uint8_t* s, size_t n, size_t i) noexcept nogil:
    """The longest reachable symbol that s[i:n] starts with (n > i): at least the byte."""
    cdef int32_t best = s[i], node
    cdef const PairSlot* slot
    if i + 1 >= n:
        return best
    node = r.level2[(s[i] << 8) | s[i + 1]]
    if node < 0:
        return best
    if r.node_symbol[node] >= 0:
        best = r.node_symbol[node]
    i += 2
    while i < n:
        slot = pairtable_find(&r.trie, pair_of(node, s[i]))
        if slot == NULL:
            break
        node = slot.value
        if slot.extra >= 0:
            best = slot.extra
        i += 1
    return best


cdef inline size_t backtrack(Merges* m, Reachable* r, const uint8_t* s, size_t n, int32_t* out,
                             uint64_t* alive, uint64_t* known, int known_bits) noexcept nogil:
    """BPE of s (n bytes) by backtracking (see the docstring): the symbols into out (room for
    n), their number returned. ``alive`` has room for n + 1 bits: bit p is cleared once no
    encoding of s has a token boundary at p after the symbols that end there."""
    cdef size_t k = 0, pos = 0, end
    cdef int32_t t
    for end in range((n >> 6) + 1):
        alive[end] = ~(<uint64_t>0)
    t = longest_prefix(r, s, n, 0)
    while True:
        end = pos + <size_t>m.length[t]
        if (alive[end >> 6] >> (end & 63)) & 1 and (k == 0 or compatible(m, out[k - 1], t, known, known_bits)):
            out[k] = t
            k += 1
            pos = end
            if pos == n:
                return k
            t = longest_prefix(r, s, n, pos)
            continue
        t = r.shorter[t]
        if t < 0:                           # nothing fits at pos: pos is no boundary here
            alive[pos >> 6] &= ~(<uint64_t>1 << (pos & 63))
            if k == 0:                      # cannot happen for a BPE vocabulary (the proof
                return replay(m, s, n, out)     # needs none); stay exact if it did
            k -= 1
            t = out[k]                      # retried, but it now ends at a dead position
            pos -= <size_t>m.length[t]


cdef inline size_t bpe_chunk(Merges* m, Reachable* r, const uint8_t* s, size_t n, vector[int32_t]* syms,
                             vector[uint64_t]* alive, const Compat* compat) noexcept nogil:
    """BPE of a chunk into syms (grown to n if shorter); returns the number of symbols. A chunk
    of up to STACK_CHUNK bytes keeps its ``alive`` bits on the stack, a longer one in alive."""
    cdef uint64_t stack_alive[(STACK_CHUNK >> 6) + 1]
    cdef uint64_t* bits = stack_alive
    if syms.size() < n:
        syms.resize(n)
    if n > STACK_CHUNK:
        alive.resize((n >> 6) + 1)
        bits = alive.data()
    return backtrack(m, r, s, n, syms.data(), bits, compat.known, compat.bits)
