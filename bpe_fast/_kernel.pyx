# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Stage 4, the training kernel: count pairs once, then apply merges incrementally.

The corpus is the word table, laid out as one flat array of symbols. Each word is a doubly
linked list over its own slice (``nxt``/``prv``; -1 ends a word), so a merge unlinks one slot
and never moves memory. Invariants kept between merges:

* ``pair_at[p]`` is the id of the pair that starts at position p, or -1 (p is dead or ends its
  word). Pair ids are dense; a pair keeps its id for the whole run.
* ``count[pid]`` is exactly the number of occurrences of pair ``pid`` in the corpus, each word
  weighted by its count (overlapping occurrences count: "aaa" holds (a, a) twice).
* ``occ[pid]`` lists, in increasing order, every position where pair ``pid`` starts, plus maybe
  stale positions; position p is a real occurrence exactly when ``pair_at[p] == pid``.
* Every pair with a positive count has an entry in the heap whose count is >= its true count.
  Counts of existing pairs only fall, because a merge creates only pairs that hold the new
  symbol; those are pushed after the merge with their exact count. Popping an entry whose count
  is out of date re-pushes it with the true count ("lazy re-check"), so the entry that survives
  a pop is the true best: highest count, then smallest (left, right).

What one merge of (a, b) into z does to one occurrence at position p (x before it, y after):

        x       p       q       y                 x       p       q       y
    ... s ----- a ----- b ----- t ...   ->    ... s ----- z       .       t ...
        (s,a)   (a,b)   (b,t)                     (s,z)   (z,t)   dead

The pairs it destroys, (s, a) at x and (b, t) at q, are read from ``pair_at``. The pairs it
creates all hold z, so they are found by their other symbol in two small arrays (``with_left``:
s -> id of (s, z); ``with_right``: t -> id of (z, t)) instead of a hash table. Per merge only
the positions in ``occ[(a, b)]`` are visited: the cost follows the occurrences replaced, not
the size of the corpus. The loop reads like rustbpe's: pop the best pair, rewrite each of its
occurrences, then settle the counts of the pairs that appeared.
"""
cimport cython
import numpy as np
cimport numpy as cnp
from cpython.exc cimport PyErr_CheckSignals
from libc.stdint cimport int32_t, int64_t, uint64_t
from libcpp.vector cimport vector
from libcpp.queue cimport priority_queue
from libcpp.utility cimport pair

from ._pairmap cimport pair_key, key_left, key_right

cnp.import_array()

# How often the set-up loops look for Ctrl-C (in words or positions); the merge loop looks once
# per merge, so an interrupt stops training within one merge.
cdef enum:
    SIGNAL_CHECK_EVERY = 1 << 20

# ((count, ~key), id): the max-heap's top has the highest count, then the smallest key.
ctypedef pair[pair[int64_t, uint64_t], int32_t] HeapEntry


def check_word_table(const int32_t[::1] symbols, const int64_t[::1] offsets, const int64_t[::1] counts):
    """Raise ValueError unless the arrays make a word table the kernel can train on."""
    cdef Py_ssize_t n_sym = symbols.shape[0], n_words = counts.shape[0]
    if offsets.shape[0] != n_words + 1 or (n_words and offsets[n_words] != n_sym) or (n_words == 0 and n_sym):
        raise ValueError("word table is inconsistent: offsets must have n_words + 1 entries ending at len(symbols)")
    if n_sym >= 2 ** 31 - 1:
        raise ValueError(f"word table has {n_sym} symbols; the kernel indexes them with int32 (< 2**31 - 1)")
    if n_words and (offsets[0] != 0 or np.any(np.diff(offsets) < 0)):
        raise ValueError("word table is inconsistent: offsets must start at 0 and never decrease")
    if n_words and np.min(counts) <= 0:
        raise ValueError("word table is inconsistent: every word count must be positive")
    if n_sym and (np.min(symbols) < 0 or np.max(symbols) > 255):
        raise ValueError("symbols must be byte ids 0..255")


@cython.final
cdef class _Merger:
    """The corpus as linked lists, the pairs with their counts and occurrences, and the heap:
    everything one training run changes, on one object so the merge loop reaches it directly."""
    # the corpus: one slot per symbol of the word table
    cdef int32_t[::1] sym          # symbol at each position; -1 once merged away
    cdef int32_t[::1] nxt, prv     # the next / previous live position in the word, or -1
    cdef int32_t[::1] pair_at      # id of the pair starting at each position, or -1
    cdef int32_t[::1] word_of      # the word each position belongs to
    cdef const int64_t[::1] weight # each word's count
    # the pairs, by dense id
    cdef vector[uint64_t] keys     # (left << 32 | right)
    cdef vector[int64_t] count
    cdef vector[vector[int32_t]] occ
    cdef priority_queue[HeapEntry] heap
    # the merge in progress
    cdef int32_t[::1] with_left    # s -> id of (s, z), or -1
    cdef int32_t[::1] with_right   # t -> id of (z, t), or -1
    cdef int32_t zz                # id of (z, z), or -1
    cdef vector[int32_t] created   # pairs this merge created
    # work counters, for profiling
    cdef int64_t visited, replaced
    cdef Py_ssize_t initial_pairs

    def __cinit__(self, const int32_t[::1] symbols, const int64_t[::1] offsets, const int64_t[::1] counts,
                  Py_ssize_t n_merges):
        cdef Py_ssize_t n_sym = symbols.shape[0]
        self.sym = np.array(symbols, dtype=np.int32, copy=True)
        self.nxt = np.empty(n_sym, dtype=np.int32)
        self.prv = np.empty(n_sym, dtype=np.int32)
        self.pair_at = np.empty(n_sym, dtype=np.int32)
        self.word_of = np.empty(n_sym, dtype=np.int32)
        self.weight = counts
        self.with_left = np.full(256 + n_merges, -1, dtype=np.int32)
        self.with_right = np.full(256 + n_merges, -1, dtype=np.int32)
        self.link_words(offsets)
        self.count_pairs()

    # -- set-up ------------------------------------------------------------------------------
    cdef int link_words(self, const int64_t[::1] offsets) except -1:
        """Each word a linked list over its slice; every position its word."""
        cdef Py_ssize_t w, p, start, end
        for w in range(self.weight.shape[0]):
            if w % SIGNAL_CHECK_EVERY == 0:
                PyErr_CheckSignals()                # Ctrl-C stops a long set-up at once
            start = offsets[w]
            end = offsets[w + 1]
            for p in range(start, end):
                self.word_of[p] = <int32_t>w
                self.prv[p] = <int32_t>(p - 1) if p > start else -1
                self.nxt[p] = <int32_t>(p + 1) if p + 1 < end else -1
        return 0

    cdef int count_pairs(self) except -1:
        """Count every adjacent pair once; occurrence lists are allocated at their exact size."""
        cdef int32_t[::1] byte_pair = np.full(256 * 256, -1, dtype=np.int32)
        cdef vector[int32_t] n_occ
        cdef Py_ssize_t p
        cdef int32_t pid, key
        for p in range(self.sym.shape[0]):
            if p % SIGNAL_CHECK_EVERY == 0:
                PyErr_CheckSignals()
            self.pair_at[p] = -1
            if self.nxt[p] < 0:
                continue
            key = self.sym[p] * 256 + self.sym[p + 1]
            pid = byte_pair[key]
            if pid < 0:
                pid = self.new_pair(pair_key(self.sym[p], self.sym[p + 1]))
                byte_pair[key] = pid
                n_occ.push_back(0)
            self.count[pid] += self.weight[self.word_of[p]]
            self.pair_at[p] = pid
            n_occ[pid] += 1
        for pid in range(<int32_t>n_occ.size()):
            self.occ[pid].reserve(n_occ[pid])
        for p in range(self.sym.shape[0]):
            if self.pair_at[p] >= 0:
                self.occ[self.pair_at[p]].push_back(<int32_t>p)
        for pid in range(<int32_t>self.keys.size()):
            self.push(pid)
        self.created.clear()
        self.initial_pairs = self.keys.size()
        return 0

    # -- pairs -------------------------------------------------------------------------------
    cdef inline int32_t new_pair(self, uint64_t key) noexcept:
        self.keys.push_back(key)
        self.count.push_back(0)
        self.occ.push_back(vector[int32_t]())
        self.created.push_back(<int32_t>(self.keys.size() - 1))
        return <int32_t>(self.keys.size() - 1)

    cdef inline void push(self, int32_t pid) noexcept:
        self.heap.push(HeapEntry(pair[int64_t, uint64_t](self.count[pid], ~self.keys[pid]), pid))

    cdef int32_t pop_best(self) noexcept:
        """The pair with the highest count (ties: smallest key), or -1 if no pair is left."""
        cdef HeapEntry top
        while not self.heap.empty():
            top = self.heap.top()
            self.heap.pop()
            if self.count[top.second] == top.first.first:
                return top.second
            if self.count[top.second] > 0:
                self.push(top.second)   # stale entry: its count fell; re-check later
        return -1

    cdef inline void occurs(self, int32_t pid, int32_t pos, int64_t weight) noexcept:
        """One more occurrence of a pair created by this merge. Positions arrive in increasing
        order (the merge goes left to right) and each at most once per pair, so occ stays sorted
        without a check."""
        self.count[pid] += weight
        self.occ[pid].push_back(pos)

    cdef inline void vanishes(self, int32_t pid, int64_t weight) noexcept:
        """One occurrence fewer; its position stays in occ and is found stale later."""
        self.count[pid] -= weight
        if self.count[pid] == 0:
            vector[int32_t]().swap(self.occ[pid])   # every listed position is stale: free them

    cdef inline int32_t pair_with_z(self, int32_t s, int32_t z, bint z_on_left) noexcept:
        """The id of (z, s) if z_on_left else (s, z), created on first use in this merge."""
        cdef int32_t* slot = &self.zz if s == z else (&self.with_right[s] if z_on_left else &self.with_left[s])
        if slot[0] < 0:
            slot[0] = self.new_pair(pair_key(z, s) if z_on_left else pair_key(s, z))
        return slot[0]

    # -- one merge ---------------------------------------------------------------------------
    cdef inline void rewrite(self, int32_t p, int32_t z) noexcept:
        """Replace the occurrence (a, b) at p by z (the picture in the module docstring)."""
        cdef int32_t q = self.nxt[p]
        cdef int32_t x = self.prv[p]
        cdef int32_t y = self.nxt[q]
        cdef int32_t new
        cdef int64_t weight = self.weight[self.word_of[p]]
        if x >= 0:                                  # (s, a) at x becomes (s, z)
            self.vanishes(self.pair_at[x], weight)
            new = self.pair_with_z(self.sym[x], z, False)
            self.occurs(new, x, weight)
            self.pair_at[x] = new
        if y >= 0:                                  # (b, t) at q becomes (z, t) at p
            self.vanishes(self.pair_at[q], weight)
            new = self.pair_with_z(self.sym[y], z, True)
            self.occurs(new, p, weight)
            self.pair_at[p] = new
            self.prv[y] = p
        else:
            self.pair_at[p] = -1
        self.sym[p] = z
        self.nxt[p] = y
        self.sym[q] = -1
        self.pair_at[q] = -1

    cdef void merge(self, int32_t pid, int32_t z) noexcept:
        """Rewrite every occurrence of pair pid as the new symbol z, then settle the counts."""
        cdef vector[int32_t] positions            # takes occ[pid]'s memory; freed on return
        cdef size_t i
        cdef int32_t p
        positions.swap(self.occ[pid])              # (new_pair may move occ; this list stays put)
        self.zz = -1
        self.visited += positions.size()
        for i in range(positions.size()):          # left to right, so "aaa" merges as (aa)a
            p = positions[i]
            if self.pair_at[p] == pid:             # else stale: the pair at p changed since
                self.rewrite(p, z)
                self.replaced += 1
        self.settle(pid)

    cdef void settle(self, int32_t pid) noexcept:
        """After the rewrite loop: the merged pair is gone, the new pairs enter the heap."""
        cdef size_t i
        cdef int32_t new
        # rewrite() subtracted only the neighbours' pairs (which may include pid itself, when
        # occurrences overlap as in "aaa"), never the occurrence it replaced; now that every
        # occurrence is replaced or destroyed, none is left anywhere: the count is exactly 0.
        self.count[pid] = 0
        for i in range(self.created.size()):
            new = self.created[i]
            self.with_left[key_left(self.keys[new])] = -1      # clean for the next merge
            self.with_right[key_right(self.keys[new])] = -1
            if self.count[new] > 0:
                self.push(new)
        self.created.clear()


def train_merges(const int32_t[::1] symbols, const int64_t[::1] offsets, const int64_t[::1] counts,
                 Py_ssize_t n_merges, int64_t min_count=1, progress=None, Py_ssize_t progress_every=256,
                 dict stats=None):
    """Learn up to ``n_merges`` merges from a word table; returns an int32 array (n, 2).

    Symbols must be byte ids 0..255; merge m makes id 256 + m. Stops early when no pair is left
    or the best count is below ``min_count``. ``progress``, if given, is called with the number
    of merges done so far, every ``progress_every`` merges. ``stats``, if given, receives
    counters of the work done (for profiling).
    """
    check_word_table(symbols, offsets, counts)
    # Each merge removes at least one symbol, so the corpus cannot give more merges than this;
    # the per-merge arrays are sized by it, not by what was asked.
    n_merges = max(0, min(n_merges, symbols.shape[0] - counts.shape[0]))
    if 256 + n_merges >= 2 ** 31:
        raise ValueError("too many merges for int32 token ids")
    cdef _Merger run = _Merger(symbols, offsets, counts, n_merges)
    cdef int32_t[:, ::1] merges = np.empty((n_merges, 2), dtype=np.int32)
    cdef Py_ssize_t m = 0
    cdef int32_t pid
    min_count = max(min_count, 1)
    while m < n_merges:
        pid = run.pop_best()
        if pid < 0 or run.count[pid] < min_count:
            break
        merges[m, 0] = key_left(run.keys[pid])
        merges[m, 1] = key_right(run.keys[pid])
        run.merge(pid, <int32_t>(256 + m))
        m += 1
        PyErr_CheckSignals()                     # Ctrl-C: stop here, not when training ends
        if progress is not None and m % progress_every == 0:
            progress(m)
    if progress is not None:
        progress(m)
    if stats is not None:
        stats.update(symbols=symbols.shape[0], words=counts.shape[0], initial_pairs=run.initial_pairs,
                     pairs=run.keys.size(), positions_visited=run.visited, occurrences_replaced=run.replaced,
                     heap_left=run.heap.size())
    return np.asarray(merges[:m]).copy()
