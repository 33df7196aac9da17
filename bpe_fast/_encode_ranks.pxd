# cython: language_level=3
"""The BPE of a short chunk by tiktoken's rule, over tables small enough to stay near the core.

Invariants: ``rank_of(r, a, b)`` equals ``merged(m, a, b)`` (_encode_merges.pxd) for the Merges
it was built from: the symbol a and b merge into (smaller is earlier), or NO_MERGE. And
``merge_short`` gives what ``replay`` gives (_encode_replay.pxd: the pair whose merge is the
earliest is merged, leftmost first on ties, until none merges), hence what ``backtrack`` gives.

Why, beside backtracking (_encode_bpe.pxd): on text it has never seen the encoder spends most
of its time on the BPE of new chunks. Backtracking walks a trie of 16 MB and checks each pair of
tokens it puts side by side by walking the merges again; on long-tailed text (generated words of
9-24 bytes) it backtracks often: 20 walks and 27 compatibility checks a chunk (cachegrind).
Replaying the merges over an array is quadratic in the chunk, but on these tables it takes
0.36-0.64x backtracking's time for new chunks of up to 32 bytes, on text made after the tuning
(benchmarks/bench_new_chunks.py; benchmarks/RESULTS.md, "Encode once (2)"). At 33-48 bytes it
still wins for o200k_base (0.67x) and loses for cl100k_base's chunks of many scripts (1.25x, 1.3%
of the new chunks there); at 49-64 bytes it loses (4.9 against 4.6 us). So chunks up to
SHORT_MERGE bytes are merged here and longer ones backtracked.

Why other tables than ``Merges.pairs`` (16-byte slots, 4-8 MB for cl100k_base / o200k_base): on
this kind of machine a random load from 1 MB takes ~7 ns, from 4 MB ~36 ns, from 16 MB ~130 ns (a
pointer chase, benchmarks/RESULTS.md). The replay of short chunks over ``Merges`` gained nothing
over backtracking (RESULTS, "Encode once"); the same loop over these tables took 0.67x its time
(zipf's new chunks, cl100k_base), then 0.49x with the argmin and gap-closing below. Packing the
slots tighter still (0.76 full) changed nothing. Here:
* ``grid``: every pair of bytes, 256 x 256 int32 (256 KB): the first round of merges of any
  chunk is all byte pairs, and needs no hashing;
* ``slots``: all merges, one uint64 each, (a << 21 | b) << 21 | made (symbols below 2**21),
  all ones when free, linear probing from the top bits of a multiplicative hash, at most half
  full: 2 MB for cl100k_base.
"""
from libc.stdint cimport int32_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc

from ._cpu cimport prefetch
from ._encode_merges cimport Merges, NO_MERGE
from ._pairmap cimport EMPTY, half_full_bits, mark_free, pair_home

cdef enum:
    RANK_BITS = 21             # symbols must be below 2**21 (a vocabulary of 2M tokens)
    SHORT_MERGE = 48           # chunks up to this many bytes are merged by merge_short

cdef extern from *:
    """
    /* The leftmost smallest of r[0..n) (n >= 1), without a branch on the data (the ranks of
       a chunk's pairs follow no pattern a branch predictor could learn: with the branchy loop
       a new zipf chunk took 870-892 ns, with this one 752-774). */
    static inline size_t bpe_argmin(const int32_t* r, size_t n, int32_t* low_out) {
        int32_t low = r[0];
        size_t best = 0;
        for (size_t i = 1; i < n; i++) {
            int32_t x = r[i];
            best = x < low ? i : best;
            low = x < low ? x : low;
        }
        *low_out = low;
        return best;
    }
    """
    size_t argmin "bpe_argmin"(const int32_t* r, size_t n, int32_t* low_out) noexcept nogil

cdef extern from *:
    """
    #include <string.h>
    /* a[i] = a[i + 1] for from <= i < to, 8 at a time (a has room for to + 8): the plain loop
       is made a call to memmove by the compiler, 4% of a pass over new text in calls. */
    static inline void bpe_close_gap(int32_t* a, size_t from, size_t to) {
        for (size_t i = from; i < to; i += 8) {
            int32_t t[8];
            memcpy(t, a + i + 1, sizeof t);
            memcpy(a + i, t, sizeof t);
        }
    }
    """
    void close_gap "bpe_close_gap"(int32_t* a, size_t start, size_t stop) noexcept nogil


cdef struct Ranks:
    int32_t* grid              # (x << 8 | y) -> what bytes x, y merge into, or NO_MERGE
    uint64_t* slots            # the merges (see the docstring)
    int bits                   # 2**bits slots
    size_t symbols             # the symbols of the Merges it was built from; 0 if not built
                               # (2**21 symbols or more: then backtracking does all chunks)


cdef inline uint64_t rank_key(int32_t a, int32_t b) noexcept nogil:
    return (<uint64_t>a << RANK_BITS) | <uint64_t>b


cdef inline int ranks_build(Ranks* r, Merges* m) except -1:
    """The tables of the merges of m (none if m has 2**21 symbols or more)."""
    cdef size_t n = m.left.size(), t, i, mask
    cdef uint64_t key
    r.grid = NULL
    r.slots = NULL
    r.symbols = 0
    if n >= (<size_t>1 << RANK_BITS):
        return 0
    r.bits = half_full_bits(n - 256, 10)
    r.grid = <int32_t*>malloc(65536 * sizeof(int32_t))
    r.slots = <uint64_t*>malloc((<size_t>1 << r.bits) * sizeof(uint64_t))
    if r.grid == NULL or r.slots == NULL:
        ranks_free(r)
        raise MemoryError()
    for i in range(65536):
        r.grid[i] = NO_MERGE
    mark_free(<uint8_t*>r.slots, sizeof(uint64_t), <size_t>1 << r.bits)     # all ones: EMPTY
    mask = (<size_t>1 << r.bits) - 1
    for t in range(256, n):
        if m.left[t] < 256 and m.right[t] < 256:
            r.grid[(m.left[t] << 8) | m.right[t]] = <int32_t>t
        key = rank_key(m.left[t], m.right[t])
        i = pair_home(key, r.bits)
        while r.slots[i] != EMPTY:
            i = (i + 1) & mask
        r.slots[i] = (key << RANK_BITS) | t
    r.symbols = n
    return 0


cdef inline void ranks_free(Ranks* r) noexcept nogil:
    free(r.grid)
    free(r.slots)
    r.grid = NULL
    r.slots = NULL
    r.symbols = 0


cdef inline int32_t rank_of(const Ranks* r, int32_t a, int32_t b) noexcept nogil:
    """What a and b merge into, or NO_MERGE."""
    cdef uint64_t key = rank_key(a, b), slot
    cdef size_t mask = (<size_t>1 << r.bits) - 1, i = pair_home(key, r.bits)
    if (a | b) < 256:
        return r.grid[(a << 8) | b]
    while True:
        slot = r.slots[i]
        if (slot >> RANK_BITS) == key:
            return <int32_t>(slot & ((<uint64_t>1 << RANK_BITS) - 1))
        if slot == EMPTY:
            return NO_MERGE
        i = (i + 1) & mask


cdef inline void rank_ask(const Ranks* r, int32_t a, int32_t b) noexcept nogil:
    """Ask for the line where rank_of(a, b) looks first (a pair of bytes needs none)."""
    if (a | b) >= 256:
        prefetch(&r.slots[pair_home(rank_key(a, b), r.bits)])


cdef inline size_t merge_short(const Ranks* r, const uint8_t* s, size_t n, int32_t* out) noexcept nogil:
    """BPE of s (1 <= n <= SHORT_MERGE bytes) by replaying the merges, lowest first, over an
    array rescanned per merge: the symbols into out (room for n), their number returned. The
    two pairs a merge makes are asked for before the gap it leaves is closed, so both probes
    are on their way at once."""
    cdef int32_t sym[SHORT_MERGE + 9]       # (room for close_gap's blocks of 8)
    cdef int32_t rank[SHORT_MERGE + 9]      # rank[i]: what (sym[i], sym[i + 1]) merges into
    cdef int32_t low
    cdef size_t i, best, m = n
    if n == 0:                              # (no chunk is empty; n - 1 below would wrap)
        return 0
    for i in range(n):
        sym[i] = s[i]
    for i in range(n - 1):
        rank[i] = r.grid[(s[i] << 8) | s[i + 1]]
    while m > 1:
        best = argmin(rank, m - 1, &low)
        if low == NO_MERGE:
            break
        if best + 2 < m:
            rank_ask(r, low, sym[best + 2])
        if best > 0:
            rank_ask(r, sym[best - 1], low)
        sym[best] = low
        close_gap(sym, best + 1, m - 1)     # sym[best + 1] is merged in
        close_gap(rank, best + 1, m - 1)
        m -= 1
        if best + 1 < m:
            rank[best] = rank_of(r, low, sym[best + 1])
        if best > 0:
            rank[best - 1] = rank_of(r, sym[best - 1], low)
    for i in range(m):
        out[i] = sym[i]
    return m

