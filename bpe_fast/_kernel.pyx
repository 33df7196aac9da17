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

Because every pair a merge creates holds the new symbol z, the merge finds them by the other
symbol in two small arrays (``with_left``: s -> id of (s, z); ``with_right``: s -> id of (z, s))
instead of a hash table, and the pairs it destroys are read from ``pair_at``. Per merge, only
the positions in ``occ[best]`` are visited: the cost follows the occurrences replaced, not the
size of the corpus.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint64_t
from libcpp.vector cimport vector
from libcpp.queue cimport priority_queue
from libcpp.utility cimport pair

from ._pairmap cimport pair_key, key_left, key_right

cnp.import_array()

# ((count, ~key), id): the max-heap's top has the highest count, then the smallest key.
ctypedef pair[pair[int64_t, uint64_t], int32_t] HeapEntry


cdef class _Pairs:
    """Pair ids with their keys, weighted counts and occurrence lists, and the heap."""
    cdef vector[uint64_t] keys
    cdef vector[int64_t] count
    cdef vector[vector[int32_t]] occ
    cdef vector[int32_t] created        # pairs created in the current merge step
    cdef priority_queue[HeapEntry] heap

    cdef inline int32_t create(self, uint64_t key) noexcept:
        self.keys.push_back(key)
        self.count.push_back(0)
        self.occ.push_back(vector[int32_t]())
        self.created.push_back(<int32_t>(self.keys.size() - 1))
        return <int32_t>(self.keys.size() - 1)

    cdef inline void occurs(self, int32_t pid, int32_t pos, int64_t weight) noexcept:
        self.count[pid] += weight
        cdef vector[int32_t]* where = &self.occ[pid]
        if where.empty() or where.back() != pos:
            where.push_back(pos)

    cdef inline void vanishes(self, int32_t pid, int64_t weight) noexcept:
        """One occurrence fewer; its position stays in occ and is found stale later."""
        self.count[pid] -= weight
        if self.count[pid] == 0:
            vector[int32_t]().swap(self.occ[pid])   # every listed position is stale: free them

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


def train_merges(const int32_t[::1] symbols, const int64_t[::1] offsets, const int64_t[::1] counts,
                 Py_ssize_t n_merges, int64_t min_count=1, progress=None, Py_ssize_t progress_every=256,
                 dict stats=None):
    """Learn up to ``n_merges`` merges from a word table; returns an int32 array (n, 2).

    Symbols must be byte ids 0..255; merge m makes id 256 + m. Stops early when no pair is left
    or the best count is below ``min_count``. ``progress``, if given, is called with the number
    of merges done so far, every ``progress_every`` merges. ``stats``, if given, receives
    counters of the work done (for profiling).
    """
    cdef Py_ssize_t n_sym = symbols.shape[0]
    cdef Py_ssize_t n_words = counts.shape[0]
    if offsets.shape[0] != n_words + 1 or (n_words and offsets[n_words] != n_sym) or (n_words == 0 and n_sym):
        raise ValueError("word table is inconsistent: offsets must have n_words + 1 entries ending at len(symbols)")
    if n_sym >= 2 ** 31 - 1:
        raise ValueError(f"word table has {n_sym} symbols; the kernel indexes them with int32 (< 2**31 - 1)")
    if 256 + n_merges >= 2 ** 31:
        raise ValueError("too many merges for int32 token ids")
    if n_words and (offsets[0] != 0 or np.any(np.diff(offsets) < 0)):
        raise ValueError("word table is inconsistent: offsets must start at 0 and never decrease")
    if n_words and np.min(counts) <= 0:
        raise ValueError("word table is inconsistent: every word count must be positive")
    if n_sym and (np.min(symbols) < 0 or np.max(symbols) > 255):
        raise ValueError("symbols must be byte ids 0..255")
    min_count = max(min_count, 1)

    # Working copy of the corpus as linked lists (symbol -1 marks a slot merged away).
    cdef int32_t[::1] sym = np.array(symbols, dtype=np.int32, copy=True)
    cdef int32_t[::1] nxt = np.empty(n_sym, dtype=np.int32)
    cdef int32_t[::1] prv = np.empty(n_sym, dtype=np.int32)
    cdef int32_t[::1] pair_at = np.empty(n_sym, dtype=np.int32)
    cdef int32_t[::1] word_of = np.empty(n_sym, dtype=np.int32)
    cdef int32_t[:, ::1] merges = np.empty((n_merges, 2), dtype=np.int32)
    cdef int32_t[::1] with_left = np.full(256 + n_merges, -1, dtype=np.int32)
    cdef int32_t[::1] with_right = np.full(256 + n_merges, -1, dtype=np.int32)

    cdef _Pairs pairs = _Pairs()
    cdef int32_t[::1] byte_pair = np.full(256 * 256, -1, dtype=np.int32)
    cdef Py_ssize_t w, p, start, end
    cdef int64_t weight
    cdef int32_t pid

    # Count every adjacent pair once; occurrence lists are allocated at their exact size.
    cdef vector[int32_t] n_occ
    for w in range(n_words):
        start = offsets[w]
        end = offsets[w + 1]
        weight = counts[w]
        for p in range(start, end):
            word_of[p] = <int32_t>w
            prv[p] = <int32_t>(p - 1) if p > start else -1
            nxt[p] = <int32_t>(p + 1) if p + 1 < end else -1
            pair_at[p] = -1
            if p + 1 < end:
                pid = byte_pair[sym[p] * 256 + sym[p + 1]]
                if pid < 0:
                    pid = pairs.create(pair_key(sym[p], sym[p + 1]))
                    byte_pair[sym[p] * 256 + sym[p + 1]] = pid
                    n_occ.push_back(0)
                pairs.count[pid] += weight
                pair_at[p] = pid
                n_occ[pid] += 1
    for pid in range(<int32_t>n_occ.size()):
        pairs.occ[pid].reserve(n_occ[pid])
    vector[int32_t]().swap(n_occ)
    for p in range(n_sym):
        if pair_at[p] >= 0:
            pairs.occ[pair_at[p]].push_back(<int32_t>p)
    for pid in range(<int32_t>pairs.keys.size()):
        if pairs.count[pid] > 0:
            pairs.push(pid)
    pairs.created.clear()
    cdef Py_ssize_t initial_pairs = pairs.keys.size()

    cdef Py_ssize_t m = 0
    cdef int32_t a, b, z, x, y, q, s, zz, new
    cdef size_t i
    cdef vector[int32_t] positions
    cdef int64_t visited = 0, replaced = 0
    while m < n_merges:
        pid = pairs.pop_best()
        if pid < 0 or pairs.count[pid] < min_count:
            break
        a = key_left(pairs.keys[pid])
        b = key_right(pairs.keys[pid])
        z = <int32_t>(256 + m)
        zz = -1                                   # the id of (z, z), if this merge makes it
        merges[m, 0] = a
        merges[m, 1] = b
        positions.clear()
        positions.swap(pairs.occ[pid])
        visited += positions.size()
        # Left to right (occ is sorted), so overlapping runs "aaa" merge as (aa)a.
        for i in range(positions.size()):
            p = positions[i]
            if pair_at[p] != pid:
                continue                          # stale: the pair at p changed since
            q = nxt[p]
            weight = counts[word_of[p]]
            x = prv[p]
            y = nxt[q]
            if x >= 0:                            # (s, a) becomes (s, z)
                pairs.vanishes(pair_at[x], weight)
                s = sym[x]
                new = zz if s == z else with_left[s]
                if new < 0:
                    new = pairs.create(pair_key(s, z))
                    if s == z:
                        zz = new
                    else:
                        with_left[s] = new
                pairs.occurs(new, x, weight)
                pair_at[x] = new
            if y >= 0:                            # (b, s) becomes (z, s)
                pairs.vanishes(pair_at[q], weight)
                s = sym[y]
                new = zz if s == z else with_right[s]
                if new < 0:
                    new = pairs.create(pair_key(z, s))
                    if s == z:
                        zz = new
                    else:
                        with_right[s] = new
                pairs.occurs(new, <int32_t>p, weight)
                pair_at[p] = new
            else:
                pair_at[p] = -1
            replaced += 1
            sym[p] = z
            sym[q] = -1
            pair_at[q] = -1
            nxt[p] = y
            if y >= 0:
                prv[y] = <int32_t>p
        pairs.count[pid] = 0
        for i in range(pairs.created.size()):
            new = pairs.created[i]
            with_left[key_left(pairs.keys[new])] = -1      # reset for the next merge
            with_right[key_right(pairs.keys[new])] = -1
            if pairs.count[new] > 0:
                pairs.push(new)
        pairs.created.clear()
        m += 1
        if progress is not None and m % progress_every == 0:
            progress(m)
    if progress is not None:
        progress(m)
    if stats is not None:
        stats.update(symbols=n_sym, words=n_words, initial_pairs=initial_pairs, pairs=pairs.keys.size(),
                     positions_visited=visited, occurrences_replaced=replaced, heap_left=pairs.heap.size())
    return np.asarray(merges[:m]).copy()
