# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Stage 4, the training kernel: count pairs once, then apply merges incrementally.

Invariant (the merge loop): each merge is the true best pair of the corpus as it is then
(highest count, then smallest (left, right)), and the corpus, the tracked pairs and the heap
after it are exactly what applying that merge to every occurrence, one after the other, leaves;
whatever the number of threads. The loop reads like rustbpe's: pop the best pair, rewrite each
of its occurrences, then settle the counts of the pairs that appeared (the new ones counted at
least ``track_from`` times are kept, with ids closed up in creation order). When the best
tracked count falls below ``track_from``, every pair is counted again from the corpus with
``track_from`` LOWER_BY times lower, down to ``min_count``.

Each part keeps its own invariant, in a .pxd of its own (inline functions and structs,
compiled into this module: no call crosses a module):

* _layout.pxd: the corpus, one slot per byte (tokens' starts and tail marks), and its layout;
* _pairs.pxd: the tracked pairs, exact counts and occurrence lists (LEB128 gaps: _varint.pxd);
* _heap.pxd: the heap and the waiting pairs, whose top is the true best;
* _rewrite.pxd: one thread's part of a merge, recorded in its ledger;
* _fold.pxd: the ledgers applied in range order, as one thread would have left the pairs;
* _recount.pxd: every pair counted again, the same on any number of threads;
* _pool.pxd: the threads; _pairmap.pxd: the pair-keyed maps; _cpu.pxd: prefetch hints.

Threads are a pool made with the kernel and ended with it. A merge goes to the pool only when
its list holds at least ``parallel_from`` bytes: most merges are small, and one thread does them
with the same ledger and fold, as one range. The set-up runs on the pool too, with the same
result as one thread: the layout and every pair count. Work that stays on one thread: the heap,
the fold and settle of every merge, and the rewrite of the small merges; ``Trainer.learn``'s
stats measure it (see benchmarks/stages.py).
"""
cimport cython
import os

import numpy as np
cimport numpy as cnp
from cpython.exc cimport PyErr_CheckSignals
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libcpp.vector cimport vector

from ..core._cpu cimport prefetch
from ._fold cimport NewIds, move_lists, number_made, settle, take_losses
from ._heap cimport HeapEntry, heap_pop
from ._layout cimport HEAVY, Corpus, LayoutJob, LayoutPart, all_placed, layout_part, next_word_start, sum_placed
from ..core._pairmap cimport PairMap, TotalSlot, key_left, key_right, pairmap_free, pairmap_init, totalmap_free, \
    totalmap_init
from ._pairs cimport Neighbour, Pairs, clear_neighbours, clear_pairs, index_neighbours, track
from ._pool cimport Pool, now, thread_cpu
from ._recount cimport CountJob, CountPart, Tally, count_part, join_lists, plan_lists, plan_totals
from ._rewrite cimport Ledger, MergeJob, entry_at_or_after, sum_gaps, visit
from ._varint cimport get_varint

cnp.import_array()

cdef enum:
    # How often the set-up loops look for Ctrl-C (in slots); the merge loop looks once per merge,
    # so an interrupt stops training within one merge.
    SIGNAL_CHECK_EVERY = 1 << 22
    PARALLEL_FROM = 1 << 13   # bytes of a merge's list from which the threads share it (tuned)
    LOOK_AHEAD = 16        # entries of a list whose slots are fetched before they are visited
    TRACK_PER_MERGE = 4    # continuing, the first count tracks about this many pairs per merge asked for
    LOWER_BY = 16          # a recount lowers track_from this many times (to min_count at least)
    # From bytes, new pairs are tracked from (pairs in the corpus) / (merges asked x TRACK_SHARE):
    # on long-tailed 1 GB corpora at 32k-64k the last merge's count sat a few times above that
    # (benchmarks/RESULTS.md, "Long-tailed corpora on a quiet machine"; a recount if a corpus
    # falls lower)
    TRACK_SHARE = 128


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


def default_track_from(const int64_t[::1] offsets, counts, Py_ssize_t n_merges, int64_t min_count):
    """Training from bytes, the count from which new pairs are tracked: 8 x min_count, or, on a
    big corpus, a share of the pairs per merge asked (TRACK_SHARE). Most pairs that merges make
    in a long-tailed corpus are rare and never come near the top; each tracked one costs about
    100 bytes and a heap entry. Any value gives the same merges (a recount finds pairs that were
    not tracked); too high a value costs recounts, too low one memory."""
    # (an elementwise product and a sum: np.dot would go to BLAS, whose threads then spin for a
    # while: benchmarks/RESULTS.md, "Superword training's cost")
    pairs = float(np.multiply(counts, np.diff(np.asarray(offsets)) - 1, dtype=np.float64).sum())
    return max(8 * min_count, int(pairs / (max(n_merges, 1) * TRACK_SHARE)))


def kernel_positions(const int64_t[::1] offsets, counts):
    """Where each word of a table starts in the kernel's layout (words by falling count, as
    by_falling_count orders them), an int64 array: for a ``start`` in kernel order (Trainer)."""
    order, _ = by_falling_count(np.asarray(counts))
    lengths = np.diff(np.asarray(offsets))[order]
    positions = np.empty(len(order), dtype=np.int64)
    positions[order] = np.cumsum(lengths) - lengths
    return positions


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


# -- one thread's part of a merge (_rewrite.pxd) -------------------------------------------------
# rewrite_range is here, not in _rewrite.pxd, so that it is an ordinary function (a .pxd holds
# inline ones only): called from merge_part and _Merger.merge, it stays one copy, into which the C
# compiler inlines the rewrite of an occurrence. (As an inline function it went into both callers,
# and the rewrite, called from two places then, became a call per visit.)
cdef void rewrite_range(const MergeJob* job, Ledger* L) noexcept nogil:
    """Rewrite this thread's range of the list, left to right (so "aaa" merges as (aa)a).

    The chunk [begin, end) of the list's bytes is cut at entries, not at words; the range moves
    both ends to word boundaries: it starts at the first entry of the chunk that is not in the
    word of the entry before the chunk (those belong to the thread before), and runs past the
    chunk's end while the entries are in the word of the chunk's last entry. Both threads at a
    boundary compute it from the same entry, so the ranges cover the list once, word-disjoint."""
    cdef const Corpus* c = job.corpus
    cdef size_t i = L.begin, after
    cdef Py_ssize_t p = L.base, lo = next_word_start(c, L.base) if L.begin > 0 else 0, hi = -1
    cdef uint64_t gap
    while i < job.n_bytes:                      # skip the previous thread's word
        after = get_varint(job.occ, i, &gap)
        if p + <Py_ssize_t>gap >= lo:
            break
        i, p = after, p + <Py_ssize_t>gap
    if i >= L.end:
        return
    # The slots visited are far apart in a big corpus, and each visit waits for its slot to come
    # from memory: a second reader of the list runs LOOK_AHEAD entries ahead and asks for them.
    cdef size_t ahead = i
    cdef Py_ssize_t ahead_p = p
    cdef int k
    for k in range(LOOK_AHEAD):
        if ahead >= job.n_bytes:
            break
        ahead = get_varint(job.occ, ahead, &gap)
        ahead_p += <Py_ssize_t>gap
        prefetch(&c.sym[ahead_p])
        prefetch(&c.word_starts[ahead_p >> 3])
    while i < job.n_bytes:
        if i >= L.end and hi < 0:
            hi = next_word_start(c, p)          # p: the chunk's last entry
        after = get_varint(job.occ, i, &gap)
        if i >= L.end and p + <Py_ssize_t>gap >= hi:
            break
        i, p = after, p + <Py_ssize_t>gap
        if ahead < job.n_bytes:
            ahead = get_varint(job.occ, ahead, &gap)
            ahead_p += <Py_ssize_t>gap
            prefetch(&c.sym[ahead_p])
            prefetch(&c.word_starts[ahead_p >> 3])   # (a bit per slot, still too big for the caches)
        visit(c, L, p, job.a, job.b, job.z)


cdef void merge_part(void* arg, int tid) noexcept nogil:
    """The pool's job: thread tid's part of the merge. Each thread sums the gaps before its chunk
    itself (a read of the bytes, far cheaper than the rewrite), so one hand-over starts it all."""
    cdef const MergeJob* job = <const MergeJob*>arg
    cdef Ledger* L = &job.ledgers[tid]
    cdef double t0 = thread_cpu()
    L.base = sum_gaps(job.occ, L.begin)
    rewrite_range(job, L)
    L.cpu = thread_cpu() - t0


@cython.final
cdef class _Merger:
    """The corpus, the tracked pairs with their counts and occurrences, the heap, and the threads:
    everything one training run changes, on one object so the merge loop reaches it directly."""
    # the corpus's arrays (c points into them; see Corpus, _layout.pxd)
    cdef int32_t[::1] sym
    cdef uint8_t[::1] word_starts
    cdef int32_t[::1] token_len
    cdef int32_t[::1] word_of
    cdef int64_t[::1] heavy_count
    cdef int64_t[::1] run_start
    cdef int64_t[::1] run_count
    cdef Corpus c
    cdef Pairs pairs               # the tracked pairs, by dense id, and the heap (_pairs.pxd)
    cdef bint many_pairs           # continuing from a base: see plan_lists (_recount.pxd)
    cdef Py_ssize_t n_merges       # merges asked for (continuing, the first count tracks in proportion)
    # the merge in progress
    cdef NewIds ids                # the ids of the pairs it made (_fold.pxd)
    cdef int32_t[::1] left_of      # s -> id of the tracked pair (s, a), or -1
    cdef int32_t[::1] right_of     # t -> id of the tracked pair (b, t), or -1
    # the threads: a ledger each (ledger 0 also serves the merges done on one thread)
    cdef int n_threads
    cdef size_t parallel_from
    cdef Pool* pool
    cdef object pool_owner                     # the process whose threads they are
    cdef vector[Ledger] ledgers
    # work counters and clocks, for profiling; progress of the set-up (slots so far)
    cdef int64_t visited, replaced, recounts, shared_merges, shared_visited
    cdef vector[int64_t] thread_replaced       # occurrences each thread replaced in shared merges
    cdef vector[double] thread_cpu             # CPU seconds each thread spent in shared merges' parts
    cdef double seconds_layout, seconds_count, seconds_shared, seconds_fold
    cdef double cpu_longest                    # shared merges: the longest part's CPU, summed
    cdef Py_ssize_t initial_pairs
    cdef object report
    cdef Py_ssize_t reported

    def __cinit__(self, symbols, const int64_t[::1] offsets, const int64_t[::1] counts, Py_ssize_t n_merges,
                  int64_t track_from, byte_ranks, start, token_lengths, int32_t first_id, setup_progress=None,
                  int threads=1, Py_ssize_t parallel_from=PARALLEL_FROM, bint kernel_order=False):
        cdef Py_ssize_t n_ids = first_id + n_merges
        cdef double t0 = now()
        lengths = np.zeros(n_ids, dtype=np.int32)
        lengths[:256] = 1
        if token_lengths is not None:
            lengths[:len(token_lengths)] = token_lengths
        self.token_len = lengths
        self.ids.with_left.assign(n_ids, -1)
        self.ids.with_right.assign(n_ids, -1)
        self.left_of = np.full(n_ids, -1, dtype=np.int32)
        self.right_of = np.full(n_ids, -1, dtype=np.int32)
        self.pairs.ends_with.resize(n_ids)
        self.pairs.starts_with.resize(n_ids)
        self.pairs.track_from = max(track_from, 1)
        self.many_pairs = start is not None
        self.n_merges = n_merges
        self.report = setup_progress
        self.start_threads(threads, parallel_from, n_ids)
        self.lay_out(np.asarray(symbols), offsets, counts, byte_ranks, start, kernel_order)
        self.point_corpus()
        self.reported = self.sym.shape[0]
        self.seconds_layout = now() - t0
        self.initial_pairs = -1                 # the pairs are counted by count_first (Trainer)

    cdef int count_first(self) except -1:
        """The first pair count, from the corpus alone: the word table may be gone by now."""
        cdef double t0 = now()
        self.recount()
        self.seconds_count = now() - t0
        self.initial_pairs = self.pairs.keys.size()

    def __dealloc__(self):
        del self.pool                               # joins the threads (NULL: nothing to do)

    def memory(self):
        """Bytes held now, by part (allocator overheads not counted; capacities, not sizes); "per_id":
        the arrays sized by token id (lengths, pair ids by symbol, the threads' ledgers)."""
        cdef size_t i, lists = 0, used = 0, neighbours = 0
        for i in range(self.pairs.occ.size()):
            lists += self.pairs.occ[i].capacity()
            used += self.pairs.occ[i].size()
        for i in range(self.pairs.ends_with.size()):
            neighbours += (self.pairs.ends_with[i].capacity() + self.pairs.starts_with[i].capacity()) * \
                sizeof(Neighbour)
        cdef size_t slots = (self.sym.nbytes + self.word_starts.nbytes + self.word_of.nbytes + self.run_start.nbytes
                             + self.run_count.nbytes + self.heavy_count.nbytes)
        cdef size_t per_id = (self.token_len.nbytes + self.left_of.nbytes + self.right_of.nbytes
                              + (self.ids.with_left.capacity() + self.ids.with_right.capacity()) * sizeof(int32_t)
                              + 2 * self.pairs.ends_with.capacity() * sizeof(vector[Neighbour]))
        for i in range(self.ledgers.size()):
            per_id += (self.ledgers[i].with_left.capacity() + self.ledgers[i].with_right.capacity()) * sizeof(int32_t) \
                + (self.ledgers[i].left_loss.capacity() + self.ledgers[i].right_loss.capacity()) * sizeof(int64_t)
        return {"slots": slots, "per_id": per_id,
                "pairs": self.pairs.keys.capacity() * (sizeof(uint64_t) + 2 * sizeof(int64_t) + sizeof(vector[uint8_t])),
                "lists": lists, "lists_used": used, "neighbours": neighbours,
                "heap": self.pairs.heap.entries.size() * sizeof(HeapEntry) + self.pairs.heap.waiting.capacity() * sizeof(int32_t),
                "tracked": self.pairs.keys.size()}

    # -- set-up ------------------------------------------------------------------------------
    cdef int lay_out(self, symbols, const int64_t[::1] offsets, const int64_t[::1] counts, byte_ranks,
                     start, bint kernel_order) except -1:
        """Copy the words into ``sym`` by falling count (heavy words first, with a word index):
        every byte a one-byte token, or, to continue training, the slots of ``start`` (the same
        layout as ``sym``, word by word in table order); or take ``start`` over as ``sym`` when
        its words are in this order already (``kernel_order``). Mark where words start; note the
        runs of equal weight. Each thread places a range of the words: a first pass sums the
        slots of each range, so that each knows where its words go."""
        cdef Py_ssize_t n_words = counts.shape[0], n_sym = offsets[n_words] if n_words else 0
        order, n_heavy = by_falling_count(np.asarray(counts))
        cdef const int32_t[::1] by_count = order
        cdef const uint8_t[::1] source = symbols.astype(np.uint8, copy=False)
        ranks = np.arange(256, dtype=np.int32) if byte_ranks is None else np.asarray(byte_ranks, dtype=np.int32)
        cdef const int32_t[::1] rank = ranks
        cdef const int32_t[::1] slots = np.empty(0, np.int32) if start is None else start
        cdef int k, n_parts = self.n_threads
        cdef vector[LayoutPart] parts
        cdef LayoutJob job
        cdef int64_t p = 0
        self.sym = start if kernel_order else np.empty(n_sym, dtype=np.int32)
        self.word_starts = np.zeros((n_sym >> 3) + 1, dtype=np.uint8)
        self.heavy_count = np.asarray(counts)[order[:n_heavy]]
        parts.resize(n_parts)
        job.order = &by_count[0] if n_words else NULL
        job.offsets, job.counts, job.rank = &offsets[0], &counts[0] if n_words else NULL, &rank[0]
        job.source = &source[0] if source.shape[0] else NULL
        job.slots = &slots[0] if start is not None and slots.shape[0] else NULL
        job.taken = kernel_order
        job.sym = &self.sym[0] if n_sym else NULL
        job.word_starts, job.n_heavy, job.step, job.parts = &self.word_starts[0], n_heavy, 1 << 18, parts.data()
        for k in range(n_parts):
            parts[k].k0 = parts[k].at = n_words * k // n_parts
            parts[k].k1 = n_words * (k + 1) // n_parts
            parts[k].heavy_end = -1
        job.placing = False
        self.run_layout(&job)
        for k in range(n_parts):
            parts[k].p0, p = p, p + parts[k].p
            parts[k].p = parts[k].p0
        job.placing = True
        while not all_placed(parts.data(), n_parts):
            self.run_layout(&job)
            PyErr_CheckSignals()
            self.advance(sum_placed(parts.data(), n_parts))
        run_start, run_count = [], []
        self.c.heavy_end = n_sym
        for k in range(n_parts):
            self.word_starts[parts[k].p0 >> 3] |= parts[k].head
            run_start.extend(parts[k].run_start)
            run_count.extend(parts[k].run_count)
            if parts[k].heavy_end >= 0:
                self.c.heavy_end = parts[k].heavy_end
        heavy = order[:n_heavy]
        lengths = np.asarray(offsets)[heavy + 1] - np.asarray(offsets)[heavy]
        self.word_of = np.repeat(np.arange(n_heavy, dtype=np.int32), lengths)
        self.run_start = np.array(run_start + [n_sym], dtype=np.int64)
        self.run_count = np.array(run_count, dtype=np.int64)
        return 0

    cdef void run_layout(self, LayoutJob* job) noexcept:
        if self.pool != NULL:
            with nogil:
                self.pool.run(layout_part, job)
        else:
            layout_part(job, 0)

    cdef void point_corpus(self) noexcept:
        """Fill ``c``, the raw view of the corpus the threads read (the arrays stay on self)."""
        self.c.sym = &self.sym[0] if self.sym.shape[0] else NULL
        self.c.word_starts = &self.word_starts[0]
        self.c.token_len = &self.token_len[0]
        self.c.n = self.sym.shape[0]
        self.c.word_of = &self.word_of[0] if self.word_of.shape[0] else NULL
        self.c.heavy_count = &self.heavy_count[0] if self.heavy_count.shape[0] else NULL
        self.c.run_start = &self.run_start[0]
        self.c.run_count = &self.run_count[0] if self.run_count.shape[0] else NULL
        self.c.n_runs = self.run_count.shape[0]
        self.c.left_of = &self.left_of[0]
        self.c.right_of = &self.right_of[0]

    cdef int start_threads(self, int threads, Py_ssize_t parallel_from, Py_ssize_t n_ids) except -1:
        """A ledger per thread, and the pool when there is more than one."""
        cdef int k
        self.n_threads = max(threads, 1)
        self.parallel_from = <size_t>max(parallel_from, 1)
        self.ledgers.resize(self.n_threads)
        self.thread_replaced.assign(self.n_threads, 0)
        self.thread_cpu.assign(self.n_threads, 0)
        for k in range(self.n_threads):
            self.ledgers[k].with_left.assign(n_ids, -1)
            self.ledgers[k].with_right.assign(n_ids, -1)
            self.ledgers[k].left_loss.assign(n_ids, 0)
            self.ledgers[k].right_loss.assign(n_ids, 0)
        if self.n_threads > 1:
            try:
                self.pool = new Pool(self.n_threads)
                self.pool_owner = os.getpid()
            except RuntimeError:                    # no threads to be had: one learns the same merges
                self.n_threads = 1
        return 0

    cdef void check_pool(self) noexcept:
        """A forked child has none of the pool's threads: it goes on with one (the pool's memory is
        left alone, as its threads cannot be joined here)."""
        if self.pool != NULL and self.pool_owner != os.getpid():
            self.pool = NULL
            self.n_threads = 1

    cdef int advance(self, Py_ssize_t slots) except -1:
        """Tell the set-up's progress callback (if any) how far it is: three passes over the slots
        (the layout and the two of the pair count); ``slots`` into the current one."""
        if self.report is not None and self.recounts == 0:
            self.report(min(self.reported + slots, 3 * self.sym.shape[0]))
        return 0

    cdef int recount(self) except -1:
        """(Re)build every tracked pair from the corpus as it is now: counts, occurrence lists,
        heap. Two passes over the slots, cut into one range per thread at tokens' starts: count
        every pair (each thread in a map of its own), then write the positions of the tracked
        ones straight into their lists, sized beforehand (plan_lists). Ids follow first
        appearance in slot order, as one thread gives them: range 0's pairs in its order, then
        range 1's new ones, and so on. Continuing from a base (``many_pairs``), the slimmer
        passes instead (count_totals, plan_totals, list_growing, join_lists: see _recount.pxd);
        ids in the order of the pairs' keys. The merges depend on neither order (ties go by
        key)."""
        clear_pairs(&self.pairs)
        cdef int k, n_parts = self.n_threads
        cdef Py_ssize_t n = self.sym.shape[0], cut
        cdef vector[CountPart] parts
        cdef PairMap tracked
        cdef CountJob job
        tracked.keys, tracked.values = <uint64_t*>NULL, <int32_t*>NULL
        # Continuing, each map starts sized for a pair every 32 slots of the whole corpus, not
        # small: growing to millions of pairs rehashes them all, and each range holds most of the
        # corpus's distinct pairs (stage two of superword training has more than that, in all and
        # in each half; the closest figures: benchmarks/RESULTS.md, "Superword training's cost").
        # At most one every 8 slots of its range, when there are many.
        cdef size_t expected = max(1 << 16, min(n // 32, n // n_parts // 8)) if self.many_pairs else 1 << 16
        parts.resize(n_parts)
        job.corpus, job.parts, job.step, job.tracked = &self.c, parts.data(), SIGNAL_CHECK_EVERY, &tracked
        job.by_total = self.many_pairs
        for k in range(n_parts):
            parts[k].seen.keys, parts[k].seen.values = <uint64_t*>NULL, <int32_t*>NULL
            parts[k].totals.slots = <TotalSlot*>NULL
        try:
            for k in range(n_parts):
                cut = n * k // n_parts
                while cut < n and self.c.sym[cut] < 0:      # inside a token: its pair is the range before's
                    cut += 1
                parts[k].lo = parts[k].at = cut
                if k > 0:
                    parts[k - 1].hi = cut
                if job.by_total:
                    if totalmap_init(&parts[k].totals, expected) != 0:
                        raise MemoryError()
                    continue
                if pairmap_init(&parts[k].seen, expected) != 0:
                    raise MemoryError()
                # made at once, not doubled up to it: each doubling copies, and every copy is
                # fresh memory the system zeroes on first touch
                parts[k].keys.reserve(expected)
                parts[k].tally.reserve(expected)
            parts[n_parts - 1].hi = n
            job.listing = False
            self.pass_over(&job, n_parts)
            if job.by_total:
                plan_totals(&self.pairs, parts.data(), n_parts, &tracked, self.first_rank())
                for k in range(n_parts):
                    parts[k].lists.resize(self.pairs.keys.size())
                    parts[k].written.assign(self.pairs.keys.size(), 0)
                    parts[k].at = parts[k].lo
                job.listing = True
                self.pass_over(&job, n_parts)
                join_lists(&self.pairs, parts.data(), n_parts)
                return self.tracked_all()
            plan_lists(&self.pairs, parts.data(), n_parts, &tracked, self.first_rank())
            for k in range(n_parts):                # the ranges' maps and tallies are done with
                pairmap_free(&parts[k].seen)
                vector[uint64_t]().swap(parts[k].keys)
                vector[Tally]().swap(parts[k].tally)
                vector[int32_t]().swap(parts[k].number)
                parts[k].at = parts[k].lo
            job.occ, job.listing = self.pairs.occ.data(), True
            self.pass_over(&job, n_parts)
        finally:
            for k in range(n_parts):
                pairmap_free(&parts[k].seen)
                totalmap_free(&parts[k].totals)
            pairmap_free(&tracked)
        return self.tracked_all()

    cdef int tracked_all(self) except -1:
        """The end of a recount: every pair counted joins the heap and the by-symbol lists."""
        cdef int k
        for k in range(<int>self.pairs.keys.size()):
            track(&self.pairs, k)
        self.pairs.created.clear()
        self.recounts += 1
        return 0


    cdef int pass_over(self, CountJob* job, int n_parts) except -1:
        """One pass of a recount on every thread, a step at a time: between steps, Ctrl-C is looked
        for and the progress told."""
        cdef int k
        cdef Py_ssize_t done
        cdef bint finished = False
        while not finished:
            if self.pool != NULL:
                with nogil:
                    self.pool.run(count_part, job)
            else:
                count_part(job, 0)
            PyErr_CheckSignals()
            done, finished = 0, True
            for k in range(n_parts):
                if job.parts[k].failed:
                    raise MemoryError()
                done += job.parts[k].at - job.parts[k].lo
                finished = finished and job.parts[k].at >= job.parts[k].hi
            self.advance(done)
        self.reported += self.sym.shape[0]
        return 0

    # -- the merge loop's questions ----------------------------------------------------------
    cdef inline int32_t pop_best(self) noexcept:
        """The tracked pair with the highest count (ties: smallest key), or -1 if none is left."""
        return heap_pop(&self.pairs.heap, self.pairs.count.data(), self.pairs.keys.data())

    cdef inline Py_ssize_t first_rank(self) noexcept:
        """Continuing from a base, the first count raises track_from to the count of the pair of
        this rank (plan_lists); 0: it is not raised."""
        return TRACK_PER_MERGE * self.n_merges if self.many_pairs and self.recounts == 0 else 0

    # -- one merge ---------------------------------------------------------------------------
    cdef void merge(self, int32_t pid, int32_t z) noexcept:
        """Rewrite every occurrence of pair pid as the new symbol z (on one thread, or on all when
        the list is long), fold the ledgers into the pairs, then settle the counts."""
        cdef int32_t a = key_left(self.pairs.keys[pid]), b = key_right(self.pairs.keys[pid])
        cdef vector[uint8_t] positions            # takes occ[pid]'s memory; freed on return
        cdef MergeJob job
        cdef Ledger* first = &self.ledgers[0]
        cdef bint shared
        positions.swap(self.pairs.occ[pid])              # (new_pair may move occ; this list stays put)
        self.c.token_len[z] = self.c.token_len[a] + self.c.token_len[b]
        self.ids.zz = -1
        index_neighbours(&self.pairs, a, b, &self.left_of[0], &self.right_of[0])
        job.corpus, job.occ, job.n_bytes, job.ledgers = &self.c, positions.data(), positions.size(), first
        job.a, job.b, job.z = a, b, z
        shared = self.n_threads > 1 and positions.size() >= self.parallel_from
        if shared:
            self.share(&job)
        else:
            first.begin, first.end, first.base = 0, positions.size(), 0
            rewrite_range(&job, first)
        self.fold(a, b, z, self.n_threads if shared else 1, shared)
        clear_neighbours(&self.pairs, a, b, &self.left_of[0], &self.right_of[0])
        settle(&self.pairs, &self.ids, pid)

    cdef void share(self, MergeJob* job) noexcept:
        """Rewrite on every thread: the list cut into equal chunks of bytes, at entries."""
        cdef int k, n = self.n_threads
        cdef double t0 = now()
        for k in range(n):
            self.ledgers[k].begin = entry_at_or_after(job.occ, job.n_bytes * k // n, job.n_bytes)
        for k in range(n):
            self.ledgers[k].end = self.ledgers[k + 1].begin if k + 1 < n else job.n_bytes
        self.run_parts(job)
        self.seconds_shared += now() - t0
        self.shared_merges += 1

    cdef void run_parts(self, MergeJob* job) noexcept:
        """A shared merge's parts on every thread; notes each part's CPU time."""
        cdef int k
        cdef double longest = 0
        with nogil:
            self.pool.run(merge_part, job)
        for k in range(self.n_threads):
            self.thread_cpu[k] += self.ledgers[k].cpu
            longest = max(longest, self.ledgers[k].cpu)
        self.cpu_longest += longest

    cdef void fold(self, int32_t a, int32_t b, int32_t z, int n_threads, bint shared) noexcept:
        """Apply the ledgers of the threads that took part, in range order (_fold.pxd)."""
        cdef int k
        cdef Ledger* L
        cdef double t0 = now() if shared else 0
        for k in range(n_threads):
            number_made(&self.pairs, &self.ids, &self.ledgers[k], z)
        for k in range(n_threads):
            L = &self.ledgers[k]
            move_lists(&self.pairs, &self.ids, L, z)
            self.visited += L.visited
            self.replaced += L.replaced
            if shared:
                self.thread_replaced[k] += L.replaced
                self.shared_visited += L.visited
            L.visited, L.replaced = 0, 0
        take_losses(&self.pairs, self.ledgers.data(), n_threads, &self.left_of[0], &self.right_of[0])
        if shared:
            self.seconds_fold += now() - t0


cdef class Trainer:
    """Training in steps, so that the caller can let go of the word table in between: the
    constructor lays the table out (after it, the kernel keeps no reference to the arrays),
    ``count_pairs`` counts every pair from that layout alone, ``learn`` merges (counting first
    if ``count_pairs`` was not called). A caller that lets go of the table before
    ``count_pairs`` has the table's memory back before the pair lists take theirs: the set-up's
    peak is then the larger of the two, not their sum. ``train_merges`` does it all at once. ``threads`` (default 1) share the
    set-up and every merge whose occurrence list holds at least ``parallel_from`` bytes; any
    number learns the same merges.

    To continue training, ``start`` is the corpus as a base tokenizer leaves it, in the
    kernel's layout (_layout.pxd), the words where the table has them, and
    ``token_lengths`` gives the bytes of each id below ``first_id``. With ``kernel_order`` its
    words are in the kernel's order instead (``kernel_positions`` says where each goes): then
    the kernel takes the array over as its corpus and changes it, no copy (it is the largest
    array of the set-up). The first count raises ``track_from`` to the 4 x n_merges-th best
    pair's count (see plan_lists, _recount.pxd): the same merges, from far fewer listed positions."""
    cdef _Merger run
    cdef readonly Py_ssize_t max_merges
    cdef readonly int64_t min_count
    cdef readonly int32_t first_id
    cdef int64_t max_length
    cdef Py_ssize_t n_symbols, n_words, too_long
    cdef object chosen                          # each merge's count when it was chosen (``counts``)

    def __init__(self, symbols, const int64_t[::1] offsets, const int64_t[::1] counts, Py_ssize_t n_merges,
                 int64_t min_count=1, byte_ranks=None, int64_t track_from=0, int64_t max_token_length=0,
                 start=None, token_lengths=None, int32_t first_id=256, setup_progress=None, int threads=1,
                 Py_ssize_t parallel_from=PARALLEL_FROM, bint kernel_order=False):
        check_word_table(symbols, offsets, counts)
        if start is not None and kernel_order:
            if not (isinstance(start, np.ndarray) and start.dtype == np.int32 and start.flags.c_contiguous
                    and start.flags.writeable):
                raise ValueError("start in kernel order must be a writable, contiguous int32 array (the kernel "
                                 "takes it over)")
        elif start is not None:
            start = np.ascontiguousarray(start, dtype=np.int32)
        elif kernel_order:
            raise ValueError("kernel_order says how start's words lie: give start")
        if start is not None:
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
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        if not track_from:
            track_from = 8 * self.min_count if start is not None else \
                default_track_from(offsets, counts, self.max_merges, self.min_count)
        self.run = _Merger(symbols, offsets, counts, self.max_merges, track_from, byte_ranks,
                           start, token_lengths, first_id, setup_progress, threads, parallel_from, kernel_order)

    def count_pairs(self):
        """Count every pair of the laid-out corpus (once; ``learn`` calls it if need be)."""
        if self.run.initial_pairs >= 0:
            return
        self.run.check_pool()                   # in a forked child: on one thread
        self.run.count_first()
        if self.run.report is not None:
            self.run.report(3 * self.n_symbols)

    def learn(self, progress=None, Py_ssize_t progress_every=256, dict stats=None):
        """The merges, an int32 array (n, 2): up to ``max_merges``, stopping early when no pair is
        left or the best count is below ``min_count``.

        ``stats``, if given, receives the work counters, the same for any number of threads
        (positions visited, occurrences replaced, pairs tracked, ...), and what depends on the
        threads or the clock: ``shared_merges`` and ``shared_visited`` (the merges done on every
        thread, and their positions), ``thread_replaced`` and ``thread_cpu`` (each thread's
        occurrences and CPU seconds in them), ``cpu_longest`` (their longest parts' CPU, summed),
        ``cpu_merging`` (the calling thread's CPU), and wall seconds: ``seconds_layout`` and
        ``seconds_count`` (the set-up), ``seconds_merging``, ``seconds_shared``, ``seconds_fold``."""
        self.count_pairs()
        cdef _Merger run = self.run
        cdef int32_t[:, ::1] merges = np.empty((self.max_merges, 2), dtype=np.int32)
        self.chosen = np.empty(self.max_merges, dtype=np.int64)
        cdef int64_t[::1] chosen = self.chosen
        run.check_pool()
        cdef Py_ssize_t m = 0
        cdef int32_t pid
        cdef double t0 = now(), cpu0 = thread_cpu()
        while m < self.max_merges:
            pid = run.pop_best()
            if pid < 0 or run.pairs.count[pid] < run.pairs.track_from:
                if run.pairs.track_from > self.min_count:    # an untracked pair may be the best now
                    run.pairs.track_from = max(self.min_count, run.pairs.track_from // LOWER_BY)
                    run.recount()
                    continue
                if pid < 0:
                    break
            if run.pairs.count[pid] < self.min_count:
                break
            if self.max_length and run.token_len[key_left(run.pairs.keys[pid])] + \
                    run.token_len[key_right(run.pairs.keys[pid])] > self.max_length:
                self.too_long += 1                   # never merged: out of the heap for good
                continue
            merges[m, 0] = key_left(run.pairs.keys[pid])
            merges[m, 1] = key_right(run.pairs.keys[pid])
            chosen[m] = run.pairs.count[pid]
            run.merge(pid, <int32_t>(self.first_id + m))
            m += 1
            PyErr_CheckSignals()                     # Ctrl-C: stop here, not when training ends
            if progress is not None and m % progress_every == 0:
                progress(m)
        if progress is not None:
            progress(m)
        if stats is not None:
            stats.update(symbols=self.n_symbols, words=self.n_words, initial_pairs=run.initial_pairs,
                         pairs_tracked=run.pairs.keys.size(), positions_visited=run.visited,
                         occurrences_replaced=run.replaced, recounts=run.recounts, 
                         heap_left=run.pairs.heap.entries.size() + run.pairs.heap.waiting.size(),
                         heavy_slots=run.c.heavy_end, pairs_too_long=self.too_long)
            stats.update(threads=run.n_threads, shared_merges=run.shared_merges, shared_visited=run.shared_visited,
                         thread_replaced=list(run.thread_replaced), seconds_layout=run.seconds_layout,
                         seconds_count=run.seconds_count, seconds_merging=now() - t0,
                         seconds_shared=run.seconds_shared, seconds_fold=run.seconds_fold,
                         cpu_merging=thread_cpu() - cpu0, thread_cpu=list(run.thread_cpu), cpu_longest=run.cpu_longest)
        self.run = None                              # the corpus state is spent: free it now
        self.chosen = self.chosen[:m]
        return np.asarray(merges[:m]).copy()

    def memory(self):
        """The corpus state's bytes by part (slots, pair records, occurrence lists, by-symbol lists,
        heap); empty once ``learn`` has returned and let it go. For profiling memory."""
        return {} if self.run is None else self.run.memory()

    @property
    def counts(self):
        """After ``learn``: each merge's count when it was chosen (int64), in merge order."""
        if self.chosen is None:
            raise ValueError("counts are known once learn() has run")
        return self.chosen


def train_merges(symbols, const int64_t[::1] offsets, const int64_t[::1] counts,
                 Py_ssize_t n_merges, int64_t min_count=1, progress=None, Py_ssize_t progress_every=256,
                 dict stats=None, byte_ranks=None, int64_t track_from=0, int64_t max_token_length=0, int threads=1,
                 Py_ssize_t parallel_from=PARALLEL_FROM):
    """Learn up to ``n_merges`` merges from a word table; returns an int32 array (n, 2).

    Symbols must be byte ids 0..255 (a word table's uint8 bytes, or any integer array); merge m
    makes id 256 + m. ``byte_ranks[b]``, if given, is the id byte b takes instead (a permutation
    of 0..255: it decides how ties break; the merges returned use these ids). Stops early when
    no pair is left or the best count is below ``min_count``. ``track_from`` is the count below
    which new pairs are not tracked until needed (default: ``default_track_from``); any value gives
    the same merges. ``progress``, if given, is called with the number of merges done so far,
    every ``progress_every`` merges. ``stats``, if given, receives counters of the work done.
    A pair whose token would be longer than ``max_token_length`` bytes (0: any length) is never
    merged; the next best one is. ``threads`` share the merges whose occurrence list holds at
    least ``parallel_from`` bytes (any number gives the same merges and the same work counters).
    (``Trainer`` also continues from a tokenized corpus.)
    """
    return Trainer(symbols, offsets, counts, n_merges, min_count, byte_ranks, track_from, max_token_length,
                   threads=threads, parallel_from=parallel_from).learn(progress, progress_every, stats)
