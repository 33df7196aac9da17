# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Stage 4, the training kernel: count pairs once, then apply merges incrementally.

The corpus is the word table, laid out as one flat array of symbols. Each word is a doubly
linked list over its own slice (``nxt``/``prv``; -1 ends a word), so a merge unlinks one slot
and never moves memory. Invariants kept between merges:

* ``count[pid]`` is exactly the number of occurrences of pair ``pid`` in the corpus, each word
  weighted by its count (overlapping occurrences count: "aaa" holds (a, a) twice);
* ``occ[pid]`` lists, in increasing position order, every position where pair ``pid`` starts,
  plus possibly stale positions (the pair changed since); a position is checked before use;
* every pair with a positive count has an entry in the heap whose count is >= its true count
  (counts of existing pairs only fall: a merge creates only pairs that hold the new symbol, and
  those are pushed after the merge with their exact count). Popping an entry whose count is
  out of date re-pushes it with the true count ("lazy re-check"), so the entry that survives a
  pop is the true best: highest count, then smallest (left, right).

Per merge, only the positions in ``occ[best]`` are visited: the cost is proportional to the
number of occurrences replaced, not to the size of the corpus.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint64_t
from libcpp.vector cimport vector
from libcpp.queue cimport priority_queue
from libcpp.utility cimport pair

from ._pairmap cimport (PairMap, pair_key, key_left, key_right, pairmap_init, pairmap_free,
                        pairmap_get, pairmap_get_or_add)

cnp.import_array()

ctypedef pair[int64_t, uint64_t] HeapEntry   # (count, ~key): max-heap = max count, min key


cdef class _Pairs:
    """Pair ids, their weighted counts and occurrence lists."""
    cdef PairMap index
    cdef vector[uint64_t] keys
    cdef vector[int64_t] count
    cdef vector[vector[int32_t]] occ
    cdef vector[int32_t] stamp          # last merge step in which a pair was (re)created
    cdef vector[int32_t] touched        # pairs created in the current merge step
    cdef priority_queue[HeapEntry] heap

    def __cinit__(self, size_t expected):
        if pairmap_init(&self.index, expected) != 0:
            raise MemoryError()

    def __dealloc__(self):
        pairmap_free(&self.index)

    cdef inline int32_t get_or_add(self, uint64_t key) except -2:
        cdef int32_t pid = pairmap_get_or_add(&self.index, key, <int32_t>self.keys.size())
        if pid == -2:
            raise MemoryError()
        if pid == <int32_t>self.keys.size():
            self.keys.push_back(key)
            self.count.push_back(0)
            self.occ.push_back(vector[int32_t]())
            self.stamp.push_back(-1)
        return pid

    cdef inline void add(self, int32_t left, int32_t right, int64_t weight, int32_t pos, int32_t step) except *:
        """One more occurrence of (left, right) at pos; the pair is new in this merge step."""
        cdef int32_t pid = self.get_or_add(pair_key(left, right))
        self.count[pid] += weight
        cdef vector[int32_t]* where = &self.occ[pid]
        if where.empty() or where.back() != pos:
            where.push_back(pos)
        if self.stamp[pid] != step:
            self.stamp[pid] = step
            self.touched.push_back(pid)

    cdef inline void remove(self, int32_t left, int32_t right, int64_t weight) noexcept:
        """One occurrence fewer; positions are left in occ and found stale later."""
        cdef int32_t pid = pairmap_get(&self.index, pair_key(left, right))
        self.count[pid] -= weight
        if self.count[pid] == 0:
            vector[int32_t]().swap(self.occ[pid])   # every listed position is stale: free them

    cdef inline void push(self, int32_t pid) noexcept:
        self.heap.push(HeapEntry(self.count[pid], ~self.keys[pid]))

    cdef int32_t pop_best(self) noexcept:
        """The pair with the highest count (ties: smallest key), or -1 if no pair is left."""
        cdef HeapEntry top
        cdef int32_t pid
        while not self.heap.empty():
            top = self.heap.top()
            self.heap.pop()
            pid = pairmap_get(&self.index, ~top.second)
            if self.count[pid] == top.first:
                return pid
            if self.count[pid] > 0:
                self.push(pid)          # stale entry: its count fell; re-check later
        return -1


def train_merges(const int32_t[::1] symbols, const int64_t[::1] offsets, const int64_t[::1] counts,
                 Py_ssize_t n_merges, int64_t min_count=1, progress=None, Py_ssize_t progress_every=256):
    """Learn up to ``n_merges`` merges from a word table; returns an int32 array (n, 2).

    Stops early when no pair is left or the best count is below ``min_count``. ``progress``, if
    given, is called with the number of merges done so far, every ``progress_every`` merges.
    """
    cdef Py_ssize_t n_sym = symbols.shape[0]
    cdef Py_ssize_t n_words = counts.shape[0]
    if offsets.shape[0] != n_words + 1 or (n_words and offsets[n_words] != n_sym):
        raise ValueError("word table is inconsistent: offsets must have n_words + 1 entries ending at len(symbols)")
    if n_sym >= 2 ** 31 - 1:
        raise ValueError(f"word table has {n_sym} symbols; the kernel indexes them with int32 (< 2**31 - 1)")
    if 256 + n_merges >= 2 ** 31:
        raise ValueError("too many merges for int32 token ids")
    min_count = max(min_count, 1)

    # Working copy of the corpus as linked lists (symbol -1 marks a slot merged away).
    cdef int32_t[::1] sym = np.array(symbols, dtype=np.int32, copy=True)
    cdef int32_t[::1] nxt = np.empty(n_sym, dtype=np.int32)
    cdef int32_t[::1] prv = np.empty(n_sym, dtype=np.int32)
    cdef int32_t[::1] word_of = np.empty(n_sym, dtype=np.int32)
    cdef int32_t[:, ::1] merges = np.empty((n_merges, 2), dtype=np.int32)

    cdef _Pairs pairs = _Pairs(min(n_sym, 1 << 20))
    cdef Py_ssize_t w, p, start, end
    cdef int64_t weight
    cdef int32_t pid

    # Count every adjacent pair once. Two passes, so that each occurrence list is allocated at
    # its exact size (prv holds each position's pair id in between).
    cdef vector[int32_t] n_occ
    for w in range(n_words):
        start = offsets[w]
        end = offsets[w + 1]
        weight = counts[w]
        for p in range(start, end):
            word_of[p] = <int32_t>w
            nxt[p] = <int32_t>(p + 1) if p + 1 < end else -1
            if p + 1 < end:
                pid = pairs.get_or_add(pair_key(sym[p], sym[p + 1]))
                pairs.count[pid] += weight
                prv[p] = pid
                if <size_t>pid == n_occ.size():
                    n_occ.push_back(0)
                n_occ[pid] += 1
    for pid in range(<int32_t>n_occ.size()):
        pairs.occ[pid].reserve(n_occ[pid])
    vector[int32_t]().swap(n_occ)
    for p in range(n_sym):
        if nxt[p] >= 0:
            pairs.occ[prv[p]].push_back(<int32_t>p)
        prv[p] = <int32_t>(p - 1) if p > 0 and nxt[p - 1] == p else -1
    for pid in range(<int32_t>pairs.keys.size()):
        if pairs.count[pid] > 0:
            pairs.push(pid)

    cdef Py_ssize_t m = 0
    cdef int32_t a, b, z, x, y, q
    cdef size_t i
    cdef vector[int32_t] positions
    while m < n_merges:
        pid = pairs.pop_best()
        if pid < 0 or pairs.count[pid] < min_count:
            break
        a = key_left(pairs.keys[pid])
        b = key_right(pairs.keys[pid])
        z = <int32_t>(256 + m)
        merges[m, 0] = a
        merges[m, 1] = b
        positions.clear()
        positions.swap(pairs.occ[pid])
        # Left to right (occ is sorted), so overlapping runs "aaa" merge as (aa)a.
        for i in range(positions.size()):
            p = positions[i]
            if sym[p] != a:
                continue
            q = nxt[p]
            if q < 0 or sym[q] != b:
                continue
            weight = counts[word_of[p]]
            x = prv[p]
            y = nxt[q]
            if x >= 0:
                pairs.remove(sym[x], a, weight)
                pairs.add(sym[x], z, weight, x, <int32_t>m)
            if y >= 0:
                pairs.remove(b, sym[y], weight)
                pairs.add(z, sym[y], weight, <int32_t>p, <int32_t>m)
            sym[p] = z
            sym[q] = -1
            nxt[p] = y
            if y >= 0:
                prv[y] = <int32_t>p
        pairs.count[pid] = 0
        for i in range(pairs.touched.size()):
            if pairs.count[pairs.touched[i]] > 0:
                pairs.push(pairs.touched[i])
        pairs.touched.clear()
        m += 1
        if progress is not None and m % progress_every == 0:
            progress(m)
    if progress is not None:
        progress(m)
    return np.asarray(merges[:m]).copy()
