# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The heap of tracked pairs, and the pairs that wait outside it: how the merge loop finds the best.

Invariant: every tracked pair with a positive count has an entry in the heap whose count is >=
its true count, or waits outside it (``waiting``) with a true count below ``heap_from``. Counts
of existing pairs only fall, because a merge creates only pairs that hold the new symbol; those
are pushed after the merge with their exact count. Popping an entry whose count is out of date
re-pushes it with the true count ("lazy re-check"), so the entry that survives a pop is the true
best: highest count, then smallest (left, right), as every waiting pair counts less. When the
heap runs dry, ``heap_from`` falls to half the best waiting count and the pairs it now admits
join the heap. Most tracked pairs are rare and never come near the top: waiting, they cost four
bytes and no heap operation, and the heap stays small enough for the caches.

The pairs' counts and keys are the tracked pairs' own arrays (_pairs.pxd), read here by id.
"""
from libc.stdint cimport INT64_MAX, int32_t, int64_t, uint64_t
from libcpp.queue cimport priority_queue
from libcpp.utility cimport pair
from libcpp.vector cimport vector

# ((count, ~key), id): the max-heap's top has the highest count, then the smallest key.
ctypedef pair[pair[int64_t, uint64_t], int32_t] HeapEntry


cdef cppclass Heap:
    priority_queue[HeapEntry] entries
    vector[int32_t] waiting        # tracked pairs counted below heap_from, out of the heap
    int64_t heap_from


cdef inline void heap_clear(Heap* h) noexcept:
    h.entries = priority_queue[HeapEntry]()
    h.waiting.clear()
    h.heap_from = INT64_MAX                     # every pair waits; the first pop admits the best


cdef inline void heap_push(Heap* h, const int64_t* count, const uint64_t* keys, int32_t pid) noexcept:
    if count[pid] >= h.heap_from:
        h.entries.push(HeapEntry(pair[int64_t, uint64_t](count[pid], ~keys[pid]), pid))
    else:
        h.waiting.push_back(pid)


cdef inline bint heap_admit(Heap* h, const int64_t* count, const uint64_t* keys) noexcept:
    """The heap ran dry: lower heap_from to half the best waiting count and move the pairs it
    admits into the heap (pairs at 0 leave for good). False if no pair is left."""
    cdef size_t i, kept = 0
    cdef int64_t best = 0
    cdef int32_t pid
    for i in range(h.waiting.size()):
        best = max(best, count[h.waiting[i]])
    if best == 0:
        h.waiting.clear()
        return False
    h.heap_from = max(best // 2, 1)
    for i in range(h.waiting.size()):
        pid = h.waiting[i]
        if count[pid] >= h.heap_from:
            heap_push(h, count, keys, pid)
        elif count[pid] > 0:
            h.waiting[kept] = pid
            kept += 1
    h.waiting.resize(kept)
    return True


cdef inline int32_t heap_pop(Heap* h, const int64_t* count, const uint64_t* keys) noexcept:
    """The tracked pair with the highest count (ties: smallest key), or -1 if none is left."""
    cdef HeapEntry top
    while not h.entries.empty() or heap_admit(h, count, keys):
        top = h.entries.top()
        h.entries.pop()
        if count[top.second] == top.first.first:
            return top.second
        if count[top.second] > 0:
            heap_push(h, count, keys, top.second)   # stale entry: its count fell; re-check later
    return -1
