# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The rewrite: one thread's part of a merge, recorded in its ledger.

What one merge of (a, b) into z does to one occurrence at position p (x: the token before it,
r: the token after it; lengths in bytes):

        x         p         q         r                x         p                   r
    ... [ s     ] [ a ]     [ b     ] [ t ] ...  -> ... [ s     ] [ z               ] [ t ] ...
        (s,a) at x, (a,b) at p, (b,t) at q              (s,z) at x, (z,t) at p

Slot p now holds z, slot q (b's start) and a's old tail hold -1, and b's tail slot holds z's
tail mark. The pairs it destroys, (s, a) and (b, t), were made before this merge, so their
ids are read from two arrays filled for this merge from the pairs ending in a and starting with
b (``left_of``, ``right_of`` in the Corpus). The pairs it creates all hold z, so they are found
by their other symbol (``with_left``: s -> (s, z); ``with_right``: t -> (z, t)). Per merge only
the positions in the merged pair's list are visited: the cost follows the occurrences replaced,
not the size of the corpus.

Invariant: a range's rewrite reads and writes only slots of its own words (``prev_token`` and
``next_token`` stop at word starts); everything else it reads (token lengths, weights, the ids
of the destroyed pairs) no thread writes during the merge, and it writes its events only into
its own *ledger*, not into the shared pairs: the counts each destroyed pair loses (summed by its
other symbol), and the pairs it makes, in the order it made them, each with its count, its
positions (increasing, as LEB128 gaps) and its *cut*: where its list stood the last time its
count fell to 0. So the list of positions, cut into contiguous ranges whose boundaries fall
between words, can be rewritten one range per thread at once: each range meets the slots the
one-thread sweep would have met, makes the same decisions (stale or not) and the same events.
The fold (_fold.pxd) applies the ledgers. The walk along a range of the list, which moves the
range's ends to word boundaries, is rewrite_range in _kernel.pyx (an ordinary function there,
for the compiler's sake: see its comment).
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libcpp.vector cimport vector

from ._layout cimport Corpus, MIDDLE, next_token, prev_token, tail_mark, weight_at
from ..core._pairmap cimport pair_key
from ._varint cimport get_varint  # (and its C block's BPE_VARINT_WRITE, for BpeMade::put)

cdef extern from *:
    """
    #include <cstring>
    #include <vector>

    /* A pair one thread made during a merge (see the module docstring: ledgers, cuts). Most
       such pairs are rare and dropped at the end of the merge: their lists stay in the struct
       (no allocation); a list that grows longer moves to the heap. */
    struct BpeMade {
        uint64_t key = 0;
        int64_t count = 0;
        int64_t last = 0;          /* the last position listed */
        size_t cut = 0;            /* bytes listed when the count last fell to 0 */
        int64_t cut_last = 0;      /* the position listed just before the cut */
        bool from_cut = false;     /* the fold: the list was freed before this thread's range */
        size_t n = 0;              /* bytes listed: varint gaps, the first from 0 */
        uint8_t small[40];
        std::vector<uint8_t> big;  /* the list once it outgrows small */

        void put(uint64_t gap) {
            uint8_t bytes[10];
            size_t k = 0;
            BPE_VARINT_WRITE(bytes, k, gap);
            if (big.empty() && n + k <= sizeof(small)) {
                memcpy(small + n, bytes, k);
            } else {
                if (big.empty()) { big.reserve(4 * sizeof(small)); big.assign(small, small + n); }
                big.insert(big.end(), bytes, bytes + k);
            }
            n += k;
        }
        const uint8_t* data() const { return big.empty() ? small : big.data(); }
    };

    /* One thread's record of a merge, and its share of the merge's list. */
    struct BpeLedger {
        std::vector<BpeMade> made;                /* in the order this thread made them */
        std::vector<int32_t> with_left, with_right;
        int32_t zz = -1;
        std::vector<int64_t> left_loss, right_loss;    /* by the destroyed pair's other symbol */
        std::vector<int32_t> lost_left, lost_right;    /* the symbols whose loss is not 0 */
        int64_t visited = 0, replaced = 0;
        size_t begin = 0, end = 0;                /* bytes of the list: this thread's chunk */
        int64_t base = 0;                         /* the position listed just before begin */
        double cpu = 0;                           /* CPU seconds of its last part */
    };
    """
    cdef cppclass Made "BpeMade":
        uint64_t key
        int64_t count, last, cut_last
        size_t cut, n
        bint from_cut
        vector[uint8_t] big
        void put(uint64_t) nogil
        const uint8_t* data() nogil
    cdef cppclass Ledger "BpeLedger":
        vector[Made] made
        vector[int32_t] with_left, with_right
        int32_t zz
        vector[int64_t] left_loss, right_loss
        vector[int32_t] lost_left, lost_right
        int64_t visited, replaced
        size_t begin, end
        int64_t base
        double cpu


# -- one thread's part of a merge --------------------------------------------------------------
cdef struct MergeJob:
    const Corpus* corpus
    const uint8_t* occ             # the merged pair's list
    size_t n_bytes
    int32_t a, b, z
    Ledger* ledgers                # one per thread


cdef inline int32_t made_id(Ledger* L, int32_t s, int32_t z, bint z_on_left) noexcept nogil:
    """The ledger's index of (z, s) if z_on_left else (s, z), made on first use."""
    cdef int32_t* slot = &L.zz if s == z else (&L.with_right[s] if z_on_left else &L.with_left[s])
    if slot[0] < 0:
        slot[0] = <int32_t>L.made.size()
        L.made.resize(L.made.size() + 1)
        L.made[slot[0]].key = pair_key(z, s) if z_on_left else pair_key(s, z)
    return slot[0]


cdef inline void gains(Ledger* L, int32_t i, Py_ssize_t pos, int64_t weight) noexcept nogil:
    """One more occurrence of a pair this merge made. Positions arrive in increasing order and
    each at most once per pair, so the list stays sorted without a check."""
    cdef Made* m = &L.made[i]
    m.count += weight
    m.put(<uint64_t>(pos - m.last))
    m.last = pos


cdef inline void loses_made(Ledger* L, int32_t i, int64_t weight) noexcept nogil:
    """One occurrence fewer of a pair this merge made (the token before was z); at 0 its list
    would be freed here: note where (the fold decides whether it really was)."""
    cdef Made* m = &L.made[i]
    m.count -= weight
    if m.count == 0:
        m.cut = m.n
        m.cut_last = m.last


cdef inline void rewrite(const Corpus* c, Ledger* L, Py_ssize_t p, Py_ssize_t q, int32_t a, int32_t b,
                         int32_t z) noexcept nogil:
    """Replace the occurrence (a, b) at p (b starting at q) by z (the picture in the module docstring)."""
    cdef Py_ssize_t x = prev_token(c, p)
    cdef Py_ssize_t r = next_token(c, q)
    cdef Py_ssize_t tail = q + c.token_len[b] - 1
    cdef int64_t weight = weight_at(c, p)
    cdef int32_t s, t
    if x >= 0:                                  # (s, a) at x becomes (s, z)
        s = c.sym[x]
        if s == z:                              # made earlier in this word by this merge
            loses_made(L, L.with_right[a], weight)
        elif c.left_of[s] >= 0:                 # (untracked pairs are not counted)
            if L.left_loss[s] == 0:
                L.lost_left.push_back(s)
            L.left_loss[s] += weight
        gains(L, made_id(L, s, z, False), x, weight)
    if r >= 0:                                  # (b, t) at q becomes (z, t) at p
        t = c.sym[r]
        if c.right_of[t] >= 0:
            if L.right_loss[t] == 0:
                L.lost_right.push_back(t)
            L.right_loss[t] += weight
        gains(L, made_id(L, t, z, True), p, weight)
    if q - 1 > p:
        c.sym[q - 1] = MIDDLE                   # a's tail is inside z now
    if tail > q:
        c.sym[q] = MIDDLE                       # so is b's start
    c.sym[tail] = tail_mark(z)
    c.sym[p] = z


cdef inline void visit(const Corpus* c, Ledger* L, Py_ssize_t p, int32_t a, int32_t b, int32_t z) noexcept nogil:
    """Rewrite the listed position p unless it is stale."""
    cdef Py_ssize_t q
    L.visited += 1
    if c.sym[p] != a:
        return                                  # stale: a no longer starts here
    q = next_token(c, p)
    if q < 0 or c.sym[q] != b:
        return                                  # stale: b no longer follows
    rewrite(c, L, p, q, a, b, z)
    L.replaced += 1


cdef inline int64_t sum_gaps(const uint8_t* data, size_t end) noexcept nogil:
    """The position listed last before byte ``end``: every gap before it, summed."""
    cdef size_t i = 0
    cdef uint64_t gap, total = 0
    while i < end:
        i = get_varint(data, i, &gap)
        total += gap
    return <int64_t>total


cdef inline size_t entry_at_or_after(const uint8_t* data, size_t i, size_t n) noexcept nogil:
    """The first byte at or after i that starts an entry (n if none)."""
    while 0 < i < n and data[i - 1] & 128:
        i += 1
    return i
