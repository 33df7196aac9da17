# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The tracked pairs: each pair's count, its occurrence list, and the pairs by symbol.

Invariants kept between merges:

* ``count[pid]`` is exactly the number of occurrences of tracked pair ``pid`` in the corpus,
  each word weighted by its count (overlapping occurrences count: "aaa" holds (a, a) twice).
* ``occ[pid]`` lists, in increasing order, every position where pair ``pid`` starts, plus maybe
  stale positions; a position p is a real occurrence exactly when a token a starts at p and the
  next token in the same word is b. The list is kept as LEB128 varints of the gaps between
  positions (``occ_last`` is the last position written): one or two bytes an entry instead of
  eight, and positions of any size. When a pair's count falls to 0 its list is freed and the
  next gap counts from 0 again.
* A pair is *tracked* (has an id, a list and a heap entry) when its count, at the time it was
  counted, was at least ``track_from``. A pair's count never grows after the merge that creates
  its newest symbol, so an untracked pair stays below ``track_from``: while the best tracked
  count is at least ``track_from`` it is the true best. When it falls below, every pair is
  counted again from the corpus with a lower ``track_from`` (the recount, _recount.pxd).
* ``ends_with[x]`` and ``starts_with[x]`` hold (id, other symbol) of every tracked pair (s, x)
  and (x, t); pairs whose count fell to 0 stay listed (their key never occurs again: it holds no
  newer symbol), so that a merge reads these lists straight, not the pairs' counts and keys all
  over memory. Every tracked pair is in the heap or waits (_heap.pxd).
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libcpp.utility cimport pair
from libcpp.vector cimport vector

from ._heap cimport Heap, heap_clear, heap_push
from ..core._pairmap cimport key_left, key_right
from ._varint cimport put_varint

# (id of a pair, its other symbol): see ends_with
ctypedef pair[int32_t, int32_t] Neighbour


cdef cppclass Pairs:
    # the tracked pairs, by dense id
    vector[uint64_t] keys          # (left << 32 | right)
    vector[int64_t] count
    vector[vector[uint8_t]] occ
    vector[int64_t] occ_last
    # by symbol x: (id, s) of each tracked pair (s, x), and (id, t) of each (x, t)
    vector[vector[Neighbour]] ends_with
    vector[vector[Neighbour]] starts_with
    Heap heap
    int64_t track_from
    vector[int32_t] created        # pairs made since the last settle (or recount)


cdef inline void clear_pairs(Pairs* P) noexcept:
    cdef size_t x
    P.keys.clear()
    P.count.clear()
    P.occ_last.clear()
    vector[vector[uint8_t]]().swap(P.occ)
    for x in range(P.ends_with.size()):
        P.ends_with[x].clear()
        P.starts_with[x].clear()
    heap_clear(&P.heap)


cdef inline int32_t new_pair(Pairs* P, uint64_t key) noexcept:
    P.keys.push_back(key)
    P.count.push_back(0)
    P.occ.push_back(vector[uint8_t]())
    P.occ_last.push_back(0)
    P.created.push_back(<int32_t>(P.keys.size() - 1))
    return <int32_t>(P.keys.size() - 1)


cdef inline void track(Pairs* P, int32_t pid) noexcept:
    """A pair with its count settled joins the heap and the by-symbol lists."""
    cdef int32_t s = key_left(P.keys[pid]), t = key_right(P.keys[pid])
    P.ends_with[t].push_back(Neighbour(pid, s))
    P.starts_with[s].push_back(Neighbour(pid, t))
    heap_push(&P.heap, P.count.data(), P.keys.data(), pid)


cdef inline void append(Pairs* P, int32_t pid, Py_ssize_t pos) noexcept:
    """Add a position to occ[pid]: the gap from the last one."""
    put_varint(&P.occ[pid], <uint64_t>(pos - P.occ_last[pid]))
    P.occ_last[pid] = pos


cdef inline void free_list(Pairs* P, int32_t pid) noexcept:
    """A pair whose count reached 0: every listed position is stale."""
    vector[uint8_t]().swap(P.occ[pid])
    P.occ_last[pid] = 0                         # (gaps of a new list count from 0)


cdef inline void by_other_symbol(const vector[Neighbour]* listed, int32_t* id_of, bint clear) noexcept:
    """id_of[s] = the id of each pair listed with other symbol s, or -1 again if ``clear``."""
    cdef size_t i
    for i in range(listed.size()):
        id_of[listed[0][i].second] = -1 if clear else listed[0][i].first


cdef inline void index_neighbours(const Pairs* P, int32_t a, int32_t b, int32_t* left_of,
                                  int32_t* right_of) noexcept:
    """Fill left_of[s] = id of (s, a) and right_of[t] = id of (b, t) for the tracked pairs."""
    by_other_symbol(&P.ends_with[a], left_of, False)
    by_other_symbol(&P.starts_with[b], right_of, False)


cdef inline void clear_neighbours(const Pairs* P, int32_t a, int32_t b, int32_t* left_of,
                                  int32_t* right_of) noexcept:
    """Undo index_neighbours."""
    by_other_symbol(&P.ends_with[a], left_of, True)
    by_other_symbol(&P.starts_with[b], right_of, True)
