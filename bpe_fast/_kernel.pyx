# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Stage 4, the training kernel: count pairs once, then apply merges incrementally.

The corpus is the word table laid out in one array with one slot per byte, as the bytes were:
a token that covers bytes p..e of a word keeps its id in slot p (its *start*) and in slot e a
*tail mark* -(id + 2); slots strictly inside a token hold -1. The next token starts at
p + len(token) (every token's length in bytes is known from its id), and the token before p
ends at p - 1, whose slot holds either a one-byte token's id or a tail mark naming the token,
hence its start. So four bytes per byte of the table are the whole corpus state: no links, no
per-position pair ids. A bit per slot marks where each word starts; weights come from each
word's count (words are laid out by falling count, so a short table gives the weight of most
slots without a per-slot word index).

Invariants kept between merges:

* ``count[pid]`` is exactly the number of occurrences of tracked pair ``pid`` in the corpus,
  each word weighted by its count (overlapping occurrences count: "aaa" holds (a, a) twice).
* ``occ[pid]`` lists, in increasing order, every position where pair ``pid`` starts, plus maybe
  stale positions; a position p is a real occurrence exactly when a token a starts at p and the
  next token in the same word is b. The list is kept as LEB128 varints of the gaps between
  positions (``occ_last`` is the last position written): one or two bytes an entry instead of
  eight, and positions of any size.
* A pair is *tracked* (has an id, a list and a heap entry) when its count, at the time it was
  counted, was at least ``track_from``. A pair's count never grows after the merge that creates
  its newest symbol, so an untracked pair stays below ``track_from``: while the best tracked
  count is at least ``track_from`` it is the true best. When it falls below, every pair is
  counted again from the corpus with a lower ``track_from`` ("recount"). Most pairs of a big
  corpus occur in one rare word only; not tracking them saves most of the memory and time.
* Every tracked pair with a positive count has an entry in the heap whose count is >= its true
  count. Counts of existing pairs only fall, because a merge creates only pairs that hold the
  new symbol; those are pushed after the merge with their exact count. Popping an entry whose
  count is out of date re-pushes it with the true count ("lazy re-check"), so the entry that
  survives a pop is the true best: highest count, then smallest (left, right).

What one merge of (a, b) into z does to one occurrence at position p (x: the token before it,
r: the token after it; lengths in bytes):

        x         p         q         r                x         p                   r
    ... [ s     ] [ a ]     [ b     ] [ t ] ...  -> ... [ s     ] [ z               ] [ t ] ...
        (s,a) at x, (a,b) at p, (b,t) at q              (s,z) at x, (z,t) at p

Slot p now holds z, slot q (b's start) and a's old tail hold -1, and b's tail slot holds z's
tail mark. The pairs it destroys, (s, a) and (b, t), were made before this merge, so their
ids are read from two arrays filled for this merge from the pairs ending in a and starting with
b. The pairs it creates all hold z, so they are found by their other symbol in two small arrays
(``with_left``: s -> id of (s, z); ``with_right``: t -> id of (z, t)). Per merge only the
positions in ``occ[(a, b)]`` are visited: the cost follows the occurrences replaced, not the
size of the corpus. The loop reads like rustbpe's: pop the best pair, rewrite each of its
occurrences, then settle the counts of the pairs that appeared.
"""
cimport cython
import numpy as np
cimport numpy as cnp
from cpython.exc cimport PyErr_CheckSignals
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libcpp.algorithm cimport nth_element
from libcpp.vector cimport vector
from libcpp.queue cimport priority_queue
from libcpp.utility cimport pair

from ._pairmap cimport PairMap, pair_key, key_left, key_right, pairmap_init, pairmap_free, pairmap_get, \
    pairmap_get_or_add, pairmap_prefetch, prefetch

cnp.import_array()

# How often the set-up loops look for Ctrl-C (in slots); the merge loop looks once per merge,
# so an interrupt stops training within one merge.
cdef enum:
    SIGNAL_CHECK_EVERY = 1 << 22
    MIDDLE = -1            # a slot strictly inside a token
    HEAVY = 256            # words counted at least this often get a per-slot word index
    # The many-pairs count's pipeline (_Merger.count_many_pairs): a ring of AHEAD positions (a
    # power of 2, more than PROBE_LAG + TALLY_LAG).
    AHEAD = 16
    PROBE_LAG = 8
    TALLY_LAG = 4
    UNTRACKED = -2         # a numbered pair whose count is below track_from
    TRACK_PER_MERGE = 4    # the many-pairs count tracks about this many pairs per merge asked for
    LOWER_BY = 16          # a recount lowers track_from this many times (to min_count at least)

# One numbered pair of the many-pairs count: its total weight and its number of positions.
cdef struct Tally:
    int64_t total
    int64_t size

# ((count, ~key), id): the max-heap's top has the highest count, then the smallest key.
ctypedef pair[pair[int64_t, uint64_t], int32_t] HeapEntry


cdef inline int32_t tail_mark(int32_t token) noexcept nogil:
    return -token - 2


cdef inline int32_t token_of_tail(int32_t mark) noexcept nogil:
    return -mark - 2


def check_word_table(symbols, const int64_t[::1] offsets, const int64_t[::1] counts):
    """Raise ValueError unless the arrays make a word table the kernel can train on."""
    cdef Py_ssize_t n_sym = len(symbols), n_words = counts.shape[0]
    if offsets.shape[0] != n_words + 1 or (n_words and offsets[n_words] != n_sym) or (n_words == 0 and n_sym):
        raise ValueError("word table is inconsistent: offsets must have n_words + 1 entries ending at len(symbols)")
    if n_words >= 2 ** 31 - 1:
        raise ValueError(f"word table has {n_words} words; the kernel numbers them with int32")
    if n_words and (offsets[0] != 0 or np.any(np.diff(offsets) < 0)):
        raise ValueError("word table is inconsistent: offsets must start at 0 and never decrease")
    if n_words and np.min(counts) <= 0:
        raise ValueError("word table is inconsistent: every word count must be positive")
    if n_sym and (np.min(symbols) < 0 or np.max(symbols) > 255):
        raise ValueError("symbols must be byte ids 0..255")


def kernel_positions(const int64_t[::1] offsets, counts):
    """Where each word of a table starts in the kernel's layout (words by falling count, as
    by_falling_count orders them), an int64 array: for ``start`` (see Trainer)."""
    order, _ = by_falling_count(np.asarray(counts))
    lengths = np.diff(np.asarray(offsets))[order]
    positions = np.empty(len(order), dtype=np.int64)
    positions[order] = np.cumsum(lengths) - lengths
    return positions


def in_kernel_order(slots, const int64_t[::1] offsets, counts):
    """A layout whose words lie in table order (word i at offsets[i]) moved into the kernel's
    word order (kernel_positions): for callers that lay words out one after another."""
    positions = kernel_positions(offsets, counts)
    lengths = np.diff(np.asarray(offsets))
    word = np.repeat(np.arange(len(lengths)), lengths)
    laid = np.empty(len(slots), dtype=np.int32)
    laid[positions[word] + np.arange(len(slots)) - np.asarray(offsets)[word]] = slots
    return laid


def by_falling_count(counts):
    """The words in order of falling count, as int32 indices, and how many are heavy (counted
    at least HEAVY times, first). Few words are heavy: they are sorted; the rest are grouped by
    their exact count with a counting sort, in table order within a count: O(n), and no array
    of 64-bit sort keys."""
    heavy = np.flatnonzero(counts >= HEAVY)
    heavy = heavy[np.argsort(-counts[heavy], kind="stable")].astype(np.int32)
    light_counts = np.where(counts < HEAVY, counts, 0)
    histogram = np.bincount(light_counts, minlength=HEAVY)
    histogram[0] = 0
    at_least = np.append(np.cumsum(histogram[::-1])[::-1], 0)     # light words counted >= c times
    starts = (len(heavy) + at_least[1:]).astype(np.int64)          # where count c begins, falling
    order = np.empty(len(counts), dtype=np.int32)
    order[:len(heavy)] = heavy
    _scatter_by_count(light_counts, starts, order)
    return order, len(heavy)


cdef void _scatter_by_count(const int64_t[::1] counts, int64_t[::1] next_at, int32_t[::1] order) noexcept:
    cdef Py_ssize_t w
    for w in range(counts.shape[0]):
        if counts[w] > 0:
            order[next_at[counts[w]]] = <int32_t>w
            next_at[counts[w]] += 1


cdef inline int probe(PairMap* seen, vector[Tally]& tally, vector[int32_t]& pair_at, const Py_ssize_t* ring_p,
                      const uint64_t* ring_key, int32_t* ring_t, Py_ssize_t i) except -1:
    """The probe stage of _Merger.count_many_pairs for the i-th position queued: its pair's
    number (a new pair gets the next one and an empty tally), noted at the position; its tally
    asked for."""
    cdef Py_ssize_t k = i & (AHEAD - 1)
    cdef Tally empty
    cdef int32_t t = pairmap_get_or_add(seen, ring_key[k], <int32_t>tally.size())
    if t == -2:
        raise MemoryError()
    if t == <int32_t>tally.size():
        empty.total, empty.size = 0, 0
        tally.push_back(empty)
    pair_at[ring_p[k]] = t
    ring_t[k] = t
    prefetch(&tally[t])
    return 0


cdef int64_t best_total(const vector[Tally]& tally, Py_ssize_t rank) noexcept:
    """The rank-th highest total of the tallies (1 if there are fewer). Tracking only the pairs
    counted at least that often from the start keeps the second pass and the lists short: a
    few merges' worth of the most frequent pairs hold every merge but a few, and should the
    best tracked count fall below it, learn recounts with a lower threshold (same merges)."""
    cdef vector[int64_t] falling
    cdef size_t t
    if rank < 1 or <size_t>rank > tally.size():
        return 1
    falling.reserve(tally.size())
    for t in range(tally.size()):
        falling.push_back(-tally[t].total)
    nth_element(falling.begin(), falling.begin() + (rank - 1), falling.end())
    return -falling[rank - 1]


@cython.final
cdef class _Merger:
    """The corpus, the tracked pairs with their counts and occurrences, and the heap:
    everything one training run changes, on one object so the merge loop reaches it directly."""
    # the corpus: one slot per byte (see the module docstring)
    cdef int32_t[::1] sym
    cdef uint8_t[::1] word_starts  # a bit per slot: 1 where a word starts
    cdef int32_t[::1] token_len    # bytes of each token id
    # weights: slots below heavy_end belong to heavy words (word_of gives which); after that,
    # runs of words of equal count, starting at run_start[k], all weigh run_count[k]
    cdef Py_ssize_t heavy_end
    cdef int32_t[::1] word_of
    cdef int64_t[::1] heavy_count
    cdef int64_t[::1] run_start
    cdef int64_t[::1] run_count
    # the tracked pairs, by dense id
    cdef vector[uint64_t] keys     # (left << 32 | right)
    cdef vector[int64_t] count
    cdef vector[vector[uint8_t]] occ
    cdef vector[int64_t] occ_last
    cdef vector[vector[int32_t]] ends_with     # by symbol x: ids of tracked pairs (s, x)
    cdef vector[vector[int32_t]] starts_with   # by symbol x: ids of tracked pairs (x, t)
    cdef priority_queue[HeapEntry] heap
    cdef int64_t track_from
    cdef bint many_pairs           # continuing from a base: see recount
    # the merge in progress
    cdef int32_t[::1] with_left    # s -> id of (s, z) made by this merge, or -1
    cdef int32_t[::1] with_right   # t -> id of (z, t) made by this merge, or -1
    cdef int32_t zz                # id of (z, z), or -1
    cdef int32_t[::1] left_of      # s -> id of the tracked pair (s, a), or -1
    cdef int32_t[::1] right_of     # t -> id of the tracked pair (b, t), or -1
    cdef vector[int32_t] created   # pairs this merge created
    # work counters, for profiling; progress of the set-up (slots laid out or counted so far)
    cdef int64_t visited, replaced, recounts
    cdef Py_ssize_t initial_pairs
    cdef Py_ssize_t n_merges       # merges asked for (the many-pairs count tracks in proportion)
    cdef object report
    cdef Py_ssize_t reported

    def __cinit__(self, symbols, const int64_t[::1] offsets, const int64_t[::1] counts, Py_ssize_t n_merges,
                  int64_t track_from, byte_ranks, start, token_lengths, int32_t first_id, setup_progress=None):
        cdef Py_ssize_t n_ids = first_id + n_merges
        lengths = np.zeros(n_ids, dtype=np.int32)
        lengths[:256] = 1
        if token_lengths is not None:
            lengths[:len(token_lengths)] = token_lengths
        self.token_len = lengths
        self.with_left = np.full(n_ids, -1, dtype=np.int32)
        self.with_right = np.full(n_ids, -1, dtype=np.int32)
        self.left_of = np.full(n_ids, -1, dtype=np.int32)
        self.right_of = np.full(n_ids, -1, dtype=np.int32)
        self.ends_with.resize(n_ids)
        self.starts_with.resize(n_ids)
        self.track_from = max(track_from, 1)
        self.n_merges = n_merges
        self.many_pairs = start is not None
        self.report = setup_progress
        self.lay_out(np.asarray(symbols), offsets, counts, byte_ranks, start)
        self.reported = self.sym.shape[0]
        self.recount()
        self.initial_pairs = self.keys.size()

    # -- set-up ------------------------------------------------------------------------------
    cdef int lay_out(self, symbols, const int64_t[::1] offsets, const int64_t[::1] counts, byte_ranks,
                     start) except -1:
        """Copy the words into ``sym`` by falling count (heavy words first, with a word index),
        every byte a one-byte token; or, to continue training, take ``start`` over as ``sym``:
        the base's layout, already in this order (see Trainer). Mark where words start; note
        the runs of equal weight."""
        cdef Py_ssize_t n_words = counts.shape[0], n_sym = offsets[n_words] if n_words else 0
        order, n_heavy = by_falling_count(np.asarray(counts))
        cdef const int32_t[::1] by_count = order
        cdef const uint8_t[::1] source = symbols.astype(np.uint8, copy=False)
        ranks = np.arange(256, dtype=np.int32) if byte_ranks is None else np.asarray(byte_ranks, dtype=np.int32)
        cdef const int32_t[::1] rank = ranks
        cdef bint from_slots = start is not None
        self.sym = start if from_slots else np.empty(n_sym, dtype=np.int32)
        self.word_starts = np.zeros((n_sym >> 3) + 1, dtype=np.uint8)
        self.heavy_count = np.asarray(counts)[order[:n_heavy]]
        run_start, run_count = [], []
        cdef Py_ssize_t k, w, p = 0, b, length
        cdef int64_t last = -1
        for k in range(n_words):
            w = by_count[k]
            if k == n_heavy:
                self.heavy_end = p
            if k >= n_heavy and counts[w] != last:        # a run of words of one count begins
                run_start.append(p)
                run_count.append(counts[w])
                last = counts[w]
            length = offsets[w + 1] - offsets[w]
            if length:
                self.word_starts[p >> 3] |= 1 << (p & 7)
            if not from_slots:
                for b in range(length):
                    self.sym[p + b] = rank[source[offsets[w] + b]]
            p += length
            if k % 65536 == 0:
                PyErr_CheckSignals()
                self.advance(p)
        if n_heavy == n_words:
            self.heavy_end = p
        heavy = order[:n_heavy]
        lengths = np.asarray(offsets)[heavy + 1] - np.asarray(offsets)[heavy]
        self.word_of = np.repeat(np.arange(n_heavy, dtype=np.int32), lengths)
        self.run_start = np.array(run_start + [n_sym], dtype=np.int64)
        self.run_count = np.array(run_count, dtype=np.int64)
        return 0

    cdef int advance(self, Py_ssize_t slots) except -1:
        """Tell the set-up's progress callback (if any) how far it is: three passes over the slots
        (the layout and the two of the pair count); ``slots`` into the current one."""
        if self.report is not None and self.recounts == 0:
            self.report(min(self.reported + slots, 3 * self.sym.shape[0]))
        return 0

    cdef inline int64_t weight_at(self, Py_ssize_t p) noexcept nogil:
        """The count of the word slot p belongs to."""
        if p < self.heavy_end:
            return self.heavy_count[self.word_of[p]]
        cdef Py_ssize_t lo = 0, hi = self.run_count.shape[0] - 1, mid
        while lo < hi:                              # the last run that starts at or before p
            mid = (lo + hi + 1) >> 1
            if self.run_start[mid] <= p:
                lo = mid
            else:
                hi = mid - 1
        return self.run_count[lo]

    cdef inline bint starts_a_word(self, Py_ssize_t p) noexcept nogil:
        return (self.word_starts[p >> 3] >> (p & 7)) & 1

    cdef inline Py_ssize_t next_token(self, Py_ssize_t p) noexcept nogil:
        """Where the token after the one at p starts, or -1 if it is the last of its word."""
        cdef Py_ssize_t q = p + self.token_len[self.sym[p]]
        return q if q < self.sym.shape[0] and not self.starts_a_word(q) else -1

    cdef inline Py_ssize_t prev_token(self, Py_ssize_t p) noexcept nogil:
        """Where the token before the one at p starts, or -1 if p starts its word."""
        if self.starts_a_word(p):
            return -1
        cdef int32_t before = self.sym[p - 1]
        return p - 1 if before >= 0 else p - self.token_len[token_of_tail(before)]

    cdef int recount(self) except -1:
        """(Re)build every tracked pair from the corpus as it is now: counts, occurrence lists,
        heap. Two passes: count every pair, then list the positions of those tracked."""
        self.clear_pairs()
        if self.many_pairs:
            self.count_many_pairs()
        else:
            self.count_few_pairs()
        cdef int32_t pid
        for pid in range(<int32_t>self.keys.size()):
            self.track(pid)
        self.created.clear()
        self.recounts += 1
        return 0

    cdef inline int64_t weight_walking(self, Py_ssize_t p, Py_ssize_t* run) noexcept nogil:
        """weight_at(p) for p that never decrease from call to call: walks the runs."""
        if p < self.heavy_end:
            return self.heavy_count[self.word_of[p]]
        while self.run_start[run[0] + 1] <= p:
            run[0] += 1
        return self.run_count[run[0]]

    cdef int count_few_pairs(self) except -1:
        """recount's passes when the pairs are few (training from bytes: thousands of byte pairs,
        a map that stays in the CPU's caches)."""
        cdef PairMap seen
        cdef vector[int64_t] totals
        cdef vector[int64_t] sizes
        cdef vector[int32_t] tracked_id
        cdef Py_ssize_t p, q, n = self.sym.shape[0], run = 0
        cdef int32_t t = -1, pid
        cdef int round_
        if pairmap_init(&seen, 1 << 16) != 0:
            raise MemoryError()
        try:
            for round_ in range(2):                # 0: count every pair; 1: list the tracked ones
                run = 0
                for p in range(n):
                    if p % SIGNAL_CHECK_EVERY == 0:
                        PyErr_CheckSignals()
                        self.advance(p)
                    if self.sym[p] < 0:
                        continue
                    q = self.next_token(p)
                    if q < 0:
                        continue
                    if round_ == 0:
                        t = pairmap_get_or_add(&seen, pair_key(self.sym[p], self.sym[q]), <int32_t>totals.size())
                        if t == -2:
                            raise MemoryError()
                        if t == <int32_t>totals.size():
                            totals.push_back(0)
                            sizes.push_back(0)
                        totals[t] += self.weight_walking(p, &run)
                        sizes[t] += 1
                        continue
                    t = pairmap_get(&seen, pair_key(self.sym[p], self.sym[q]))
                    if totals[t] < self.track_from:
                        continue
                    if tracked_id[t] < 0:
                        pid = self.new_pair(pair_key(self.sym[p], self.sym[q]))
                        tracked_id[t] = pid
                        self.count[pid] = totals[t]
                        self.occ[pid].reserve(sizes[t])
                    self.append(tracked_id[t], p)
                if round_ == 0:
                    tracked_id.assign(totals.size(), -1)
                self.reported += n
        finally:
            pairmap_free(&seen)
        return 0

    cdef int count_many_pairs(self) except -1:
        """recount's passes when continuing from a base: the pairs of its tokens are many
        (millions, against thousands of byte pairs), so the map and the tallies miss the CPU's
        caches. The first pass numbers every pair and notes each position's number (``pair_at``,
        4 bytes a slot, for the set-up only), as a pipeline whose stages each ask for the memory
        the next one reads: a position's key is hashed and its map slot asked for; PROBE_LAG
        positions later the map gives its number and its tally is asked for; TALLY_LAG later
        the tally takes its weight. So the waits overlap. The second pass (``list_tracked``)
        reads the numbers back."""
        cdef PairMap seen
        cdef vector[Tally] tally
        cdef vector[int32_t] pair_at
        cdef Py_ssize_t ring_p[AHEAD]
        cdef uint64_t ring_key[AHEAD]
        cdef int32_t ring_t[AHEAD]
        cdef Py_ssize_t p = 0, q, n = self.sym.shape[0], run = 0, queued = 0, probed = 0, tallied = 0, k
        cdef Py_ssize_t check_at = 0
        pair_at.assign(n, -1)
        if pairmap_init(&seen, 1 << 16) != 0:
            raise MemoryError()
        try:
            while p < n:                            # token to token: a slot past a token starts the next
                if p >= check_at:
                    PyErr_CheckSignals()
                    self.advance(p)
                    check_at = p + SIGNAL_CHECK_EVERY
                q = self.next_token(p)
                if q < 0:
                    p += self.token_len[self.sym[p]]
                    continue
                k = queued & (AHEAD - 1)
                ring_p[k], ring_key[k] = p, pair_key(self.sym[p], self.sym[q])
                pairmap_prefetch(&seen, ring_key[k])
                queued += 1
                if queued - probed > PROBE_LAG:
                    probe(&seen, tally, pair_at, ring_p, ring_key, ring_t, probed)
                    probed += 1
                if probed - tallied > TALLY_LAG:
                    self.tally_one(tally, ring_p, ring_t, tallied, &run)
                    tallied += 1
                p = q
            while probed < queued:
                probe(&seen, tally, pair_at, ring_p, ring_key, ring_t, probed)
                probed += 1
            while tallied < queued:
                self.tally_one(tally, ring_p, ring_t, tallied, &run)
                tallied += 1
        finally:
            pairmap_free(&seen)
        self.reported += n
        if self.recounts == 0:
            self.track_from = max(self.track_from, best_total(tally, TRACK_PER_MERGE * self.n_merges))
        self.list_tracked(pair_at, tally)
        self.reported += n
        return 0

    cdef inline void tally_one(self, vector[Tally]& tally, const Py_ssize_t* ring_p, const int32_t* ring_t,
                               Py_ssize_t i, Py_ssize_t* run) noexcept nogil:
        """The tally stage of count_many_pairs for the i-th position queued (in order of p)."""
        cdef Py_ssize_t k = i & (AHEAD - 1)
        cdef Tally* entry = &tally[ring_t[k]]
        entry.total += self.weight_walking(ring_p[k], run)
        entry.size += 1

    cdef int list_tracked(self, const vector[int32_t]& pair_at, const vector[Tally]& tally) except -1:
        """count_many_pairs's second pass: the positions of the pairs counted at least
        track_from times, listed; pairs get their ids in order of first position. (Asking for
        the lists' memory ahead, as the first pass does, made it no faster: the stores to the
        ends of a quarter million lists wait, it seems, on the address translation.)"""
        cdef vector[int32_t] tracked_id               # number -> pair id; -1: none yet; UNTRACKED
        cdef Py_ssize_t p = 0, step, n = self.sym.shape[0], check_at = 0
        cdef int32_t t, pid
        tracked_id.resize(tally.size())
        for t in range(<int32_t>tally.size()):
            tracked_id[t] = -1 if tally[t].total >= self.track_from else UNTRACKED
        while p < n:                                # token to token, as count_many_pairs went
            if p >= check_at:
                PyErr_CheckSignals()
                self.advance(p)
                check_at = p + SIGNAL_CHECK_EVERY
            t = pair_at[p]
            step = self.token_len[self.sym[p]]
            if t >= 0 and tracked_id[t] != UNTRACKED:
                pid = tracked_id[t]
                if pid < 0:                         # a numbered pair has a next token: p + step
                    pid = self.new_pair(pair_key(self.sym[p], self.sym[p + step]))
                    tracked_id[t] = pid
                    self.count[pid] = tally[t].total
                    self.occ[pid].reserve(tally[t].size)
                self.append(pid, p)
            p += step
        return 0

    cdef void clear_pairs(self) noexcept:
        cdef size_t x
        self.keys.clear()
        self.count.clear()
        self.occ_last.clear()
        vector[vector[uint8_t]]().swap(self.occ)
        for x in range(self.ends_with.size()):
            self.ends_with[x].clear()
            self.starts_with[x].clear()
        self.heap = priority_queue[HeapEntry]()

    # -- pairs -------------------------------------------------------------------------------
    cdef inline int32_t new_pair(self, uint64_t key) noexcept:
        self.keys.push_back(key)
        self.count.push_back(0)
        self.occ.push_back(vector[uint8_t]())
        self.occ_last.push_back(0)
        self.created.push_back(<int32_t>(self.keys.size() - 1))
        return <int32_t>(self.keys.size() - 1)

    cdef inline void track(self, int32_t pid) noexcept:
        """A pair with its count settled joins the heap and the by-symbol lists."""
        self.ends_with[key_right(self.keys[pid])].push_back(pid)
        self.starts_with[key_left(self.keys[pid])].push_back(pid)
        self.push(pid)

    cdef inline void push(self, int32_t pid) noexcept:
        self.heap.push(HeapEntry(pair[int64_t, uint64_t](self.count[pid], ~self.keys[pid]), pid))

    cdef int32_t pop_best(self) noexcept:
        """The tracked pair with the highest count (ties: smallest key), or -1 if none is left."""
        cdef HeapEntry top
        while not self.heap.empty():
            top = self.heap.top()
            self.heap.pop()
            if self.count[top.second] == top.first.first:
                return top.second
            if self.count[top.second] > 0:
                self.push(top.second)   # stale entry: its count fell; re-check later
        return -1

    cdef inline void append(self, int32_t pid, Py_ssize_t pos) noexcept:
        """Add a position to occ[pid]: the gap from the last one, 7 bits a byte."""
        cdef uint64_t gap = <uint64_t>(pos - self.occ_last[pid])
        cdef vector[uint8_t]* where = &self.occ[pid]
        while gap >= 128:
            where.push_back(<uint8_t>(gap & 127) | 128)
            gap >>= 7
        where.push_back(<uint8_t>gap)
        self.occ_last[pid] = pos

    cdef inline void gains(self, int32_t pid, Py_ssize_t pos, int64_t weight) noexcept:
        """One more occurrence of a pair created by this merge. Positions arrive in increasing
        order (the merge goes left to right) and each at most once per pair, so occ stays sorted
        without a check."""
        self.count[pid] += weight
        self.append(pid, pos)

    cdef inline void loses(self, int32_t pid, int64_t weight) noexcept:
        """One occurrence fewer (untracked pairs, id -1, are not counted); its position stays in
        occ and is found stale later."""
        if pid >= 0:
            self.count[pid] -= weight
            if self.count[pid] == 0:                # every listed position is stale: free them
                vector[uint8_t]().swap(self.occ[pid])
                self.occ_last[pid] = 0                  # (gaps of a new list count from 0)

    cdef inline int32_t pair_with_z(self, int32_t s, int32_t z, bint z_on_left) noexcept:
        """The id of (z, s) if z_on_left else (s, z), created on first use in this merge."""
        cdef int32_t* slot = &self.zz if s == z else (&self.with_right[s] if z_on_left else &self.with_left[s])
        if slot[0] < 0:
            slot[0] = self.new_pair(pair_key(z, s) if z_on_left else pair_key(s, z))
        return slot[0]

    cdef void index_neighbours(self, int32_t a, int32_t b) noexcept:
        """Fill left_of[s] = id of (s, a) and right_of[t] = id of (b, t) for the tracked pairs;
        pairs whose count reached 0 leave the by-symbol lists on the way."""
        cdef vector[int32_t]* ends = &self.ends_with[a]
        cdef vector[int32_t]* starts = &self.starts_with[b]
        cdef size_t i, kept = 0
        cdef int32_t pid
        for i in range(ends.size()):
            pid = ends[0][i]
            if self.count[pid] > 0:
                self.left_of[key_left(self.keys[pid])] = pid
                ends[0][kept] = pid
                kept += 1
        ends.resize(kept)
        kept = 0
        for i in range(starts.size()):
            pid = starts[0][i]
            if self.count[pid] > 0:
                self.right_of[key_right(self.keys[pid])] = pid
                starts[0][kept] = pid
                kept += 1
        starts.resize(kept)

    cdef void clear_neighbours(self, int32_t a, int32_t b) noexcept:
        """Undo index_neighbours (every entry it set, whatever the counts are now)."""
        cdef size_t i
        for i in range(self.ends_with[a].size()):
            self.left_of[key_left(self.keys[self.ends_with[a][i]])] = -1
        for i in range(self.starts_with[b].size()):
            self.right_of[key_right(self.keys[self.starts_with[b][i]])] = -1

    # -- one merge ---------------------------------------------------------------------------
    cdef inline void rewrite(self, Py_ssize_t p, Py_ssize_t q, int32_t a, int32_t b, int32_t z) noexcept:
        """Replace the occurrence (a, b) at p (b starting at q) by z (the picture above)."""
        cdef Py_ssize_t x = self.prev_token(p)
        cdef Py_ssize_t r = self.next_token(q)
        cdef Py_ssize_t tail = q + self.token_len[b] - 1
        cdef int64_t weight = self.weight_at(p)
        cdef int32_t s
        if x >= 0:                                  # (s, a) at x becomes (s, z)
            s = self.sym[x]
            self.loses(self.with_right[a] if s == z else self.left_of[s], weight)
            self.gains(self.pair_with_z(s, z, False), x, weight)
        if r >= 0:                                  # (b, t) at q becomes (z, t) at p
            self.loses(self.right_of[self.sym[r]], weight)
            self.gains(self.pair_with_z(self.sym[r], z, True), p, weight)
        if q - 1 > p:
            self.sym[q - 1] = MIDDLE                # a's tail is inside z now
        if tail > q:
            self.sym[q] = MIDDLE                    # so is b's start
        self.sym[tail] = tail_mark(z)
        self.sym[p] = z

    cdef void merge(self, int32_t pid, int32_t z) noexcept:
        """Rewrite every occurrence of pair pid as the new symbol z, then settle the counts."""
        cdef int32_t a = key_left(self.keys[pid]), b = key_right(self.keys[pid])
        cdef vector[uint8_t] positions            # takes occ[pid]'s memory; freed on return
        cdef size_t i = 0, n
        cdef Py_ssize_t p = 0, q
        cdef uint64_t gap
        cdef int shift
        positions.swap(self.occ[pid])              # (new_pair may move occ; this list stays put)
        n = positions.size()
        self.token_len[z] = self.token_len[a] + self.token_len[b]
        self.zz = -1
        self.index_neighbours(a, b)
        while i < n:                               # left to right, so "aaa" merges as (aa)a
            gap, shift = 0, 0
            while positions[i] & 128:
                gap |= <uint64_t>(positions[i] & 127) << shift
                shift += 7
                i += 1
            gap |= <uint64_t>positions[i] << shift
            i += 1
            p += <Py_ssize_t>gap
            self.visited += 1
            if self.sym[p] != a:
                continue                           # stale: a no longer starts here
            q = self.next_token(p)
            if q < 0 or self.sym[q] != b:
                continue                           # stale: b no longer follows
            self.rewrite(p, q, a, b, z)
            self.replaced += 1
        self.clear_neighbours(a, b)
        self.settle(pid)

    cdef void settle(self, int32_t pid) noexcept:
        """After the rewrite loop: the merged pair is gone; the new pairs counted at least
        ``track_from`` times are kept (with ids closed up), the others forgotten."""
        cdef size_t i
        cdef int32_t new, kept
        # rewrite() subtracted only the neighbours' pairs (which may include pid itself, when
        # occurrences overlap as in "aaa"), never the occurrence it replaced; now that every
        # occurrence is replaced or destroyed, none is left anywhere: the count is exactly 0.
        self.count[pid] = 0
        if self.created.empty():
            return
        kept = self.created[0]
        for i in range(self.created.size()):
            new = self.created[i]
            self.with_left[key_left(self.keys[new])] = -1      # clean for the next merge
            self.with_right[key_right(self.keys[new])] = -1
            if self.count[new] >= self.track_from:
                if kept != new:
                    self.keys[kept] = self.keys[new]
                    self.count[kept] = self.count[new]
                    self.occ_last[kept] = self.occ_last[new]
                    self.occ[kept].swap(self.occ[new])
                self.track(kept)
                kept += 1
        self.keys.resize(kept)
        self.count.resize(kept)
        self.occ_last.resize(kept)
        self.occ.resize(kept)
        self.created.clear()


cdef class Trainer:
    """Training in two steps, so that the caller can let go of the word table in between: the
    constructor lays the table out (after it, the kernel keeps no reference to the arrays),
    ``learn`` merges. ``train_merges`` does both at once.

    To continue training, ``start`` is the corpus as a base tokenizer leaves it, in the
    kernel's layout (module docstring), with the words in the kernel's order: by falling count
    as ``by_falling_count`` gives it (``kernel_positions`` says where each word goes). The
    kernel takes the array over and changes it (no copy: it is the largest of the set-up).
    ``token_lengths`` gives the bytes of each id below ``first_id``. The first count raises
    ``track_from`` to about the 4 x n_merges-th best pair's count (see best_total): the same
    merges, from far fewer listed positions."""
    cdef _Merger run
    cdef readonly Py_ssize_t max_merges
    cdef readonly int64_t min_count
    cdef readonly int32_t first_id
    cdef int64_t max_length
    cdef Py_ssize_t n_symbols, n_words, too_long

    def __init__(self, symbols, const int64_t[::1] offsets, const int64_t[::1] counts, Py_ssize_t n_merges,
                 int64_t min_count=1, byte_ranks=None, int64_t track_from=0, int64_t max_token_length=0,
                 start=None, token_lengths=None, int32_t first_id=256, setup_progress=None):
        check_word_table(symbols, offsets, counts)
        if start is not None:
            if not (isinstance(start, np.ndarray) and start.dtype == np.int32 and start.flags.c_contiguous
                    and start.flags.writeable):
                raise ValueError("start must be a writable, contiguous int32 array (the kernel takes it over)")
            if len(start) != len(symbols) or token_lengths is None or len(token_lengths) > first_id:
                raise ValueError("start needs a slot per byte, token_lengths for its ids, and first_id above them")
        # Each merge removes at least one token, so the corpus cannot give more merges than
        # this; the per-merge arrays are sized by it, not by what was asked.
        self.max_merges = max(0, min(n_merges, len(symbols) - counts.shape[0]))
        if first_id + self.max_merges >= 2 ** 31:
            raise ValueError("too many merges for int32 token ids")
        self.min_count = max(min_count, 1)
        self.first_id = first_id
        self.max_length = max_token_length
        self.n_symbols, self.n_words = len(symbols), counts.shape[0]
        self.run = _Merger(symbols, offsets, counts, self.max_merges, track_from or 8 * self.min_count, byte_ranks,
                           start, token_lengths, first_id, setup_progress)
        if setup_progress is not None:
            setup_progress(3 * self.n_symbols)

    def learn(self, progress=None, Py_ssize_t progress_every=256, dict stats=None):
        """The merges, an int32 array (n, 2): up to ``max_merges``, stopping early when no pair is
        left or the best count is below ``min_count``."""
        cdef _Merger run = self.run
        cdef int32_t[:, ::1] merges = np.empty((self.max_merges, 2), dtype=np.int32)
        cdef Py_ssize_t m = 0
        cdef int32_t pid
        while m < self.max_merges:
            pid = run.pop_best()
            if pid < 0 or run.count[pid] < run.track_from:
                if run.track_from > self.min_count:    # an untracked pair may be the best now
                    run.track_from = max(self.min_count, run.track_from // LOWER_BY)
                    run.recount()
                    continue
                if pid < 0:
                    break
            if run.count[pid] < self.min_count:
                break
            if self.max_length and run.token_len[key_left(run.keys[pid])] + \
                    run.token_len[key_right(run.keys[pid])] > self.max_length:
                self.too_long += 1                   # never merged: out of the heap for good
                continue
            merges[m, 0] = key_left(run.keys[pid])
            merges[m, 1] = key_right(run.keys[pid])
            run.merge(pid, <int32_t>(self.first_id + m))
            m += 1
            PyErr_CheckSignals()                     # Ctrl-C: stop here, not when training ends
            if progress is not None and m % progress_every == 0:
                progress(m)
        if progress is not None:
            progress(m)
        if stats is not None:
            stats.update(symbols=self.n_symbols, words=self.n_words, initial_pairs=run.initial_pairs,
                         pairs_tracked=run.keys.size(), positions_visited=run.visited,
                         occurrences_replaced=run.replaced, recounts=run.recounts, heap_left=run.heap.size(),
                         heavy_slots=run.heavy_end, pairs_too_long=self.too_long)
        self.run = None                              # the corpus state is spent: free it now
        return np.asarray(merges[:m]).copy()


def train_merges(symbols, const int64_t[::1] offsets, const int64_t[::1] counts,
                 Py_ssize_t n_merges, int64_t min_count=1, progress=None, Py_ssize_t progress_every=256,
                 dict stats=None, byte_ranks=None, int64_t track_from=0, int64_t max_token_length=0):
    """Learn up to ``n_merges`` merges from a word table; returns an int32 array (n, 2).

    Symbols must be byte ids 0..255 (a word table's uint8 bytes, or any integer array); merge m
    makes id 256 + m. ``byte_ranks[b]``, if given, is the id byte b takes instead (a permutation
    of 0..255: it decides how ties break; the merges returned use these ids). Stops early when
    no pair is left or the best count is below ``min_count``. ``track_from`` is the count below
    which new pairs are not tracked until needed (default: 8 times min_count); any value gives
    the same merges. ``progress``, if given, is called with the number of merges done so far,
    every ``progress_every`` merges. ``stats``, if given, receives counters of the work done.
    A pair whose token would be longer than ``max_token_length`` bytes (0: any length) is never
    merged; the next best one is. (``Trainer`` also continues from a tokenized corpus.)
    """
    return Trainer(symbols, offsets, counts, n_merges, min_count, byte_ranks, track_from, max_token_length).learn(
        progress, progress_every, stats)
