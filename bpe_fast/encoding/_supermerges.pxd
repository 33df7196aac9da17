# cython: language_level=3
"""BoundlessBPE's supermerges: runs of whole-token chunks merged into superwords.

Invariant: once the chunks of a piece of text are encoded, every maximal run of chunks that are
each one *unit* (a token that is not a superword and that some supermerge joins: ``unit``) is
merged by the supermerges BPE-style: the adjacent pair of the lowest rank, leftmost on ties,
until no pair has one. Merging one pair at a time, lowest first, makes what training's
merge-by-merge passes make (a merge never makes a pair that ranks before it). A run ends at any
other chunk, at a special token and at the end of the piece.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memmove
from libcpp.queue cimport priority_queue
from libcpp.vector cimport vector

from ..core._hash cimport PairSlot, PairTable, pair_of, pairtable_find
from ._merges cimport NO_MERGE
from ._replay cimport SHORT_CHUNK


cdef struct Supermerges:
    PairTable pairs                          # (left id, right id) -> (rank, the id it makes)
    vector[uint8_t] unit                     # id -> 1: a phase-1 token some supermerge joins


cdef inline int32_t super_rank(Supermerges* sm, uint32_t a, uint32_t b, int32_t* made) noexcept nogil:
    """The rank of the supermerge of (a, b) and the id it makes, or NO_MERGE."""
    cdef const PairSlot* slot = pairtable_find(&sm.pairs, pair_of(<int32_t>a, <int32_t>b))
    if slot == NULL:
        return NO_MERGE
    made[0] = slot.extra
    return slot.value


cdef inline size_t merge_long_run(Supermerges* sm, uint32_t* ids, size_t n) noexcept nogil:
    """``merge_run`` for long runs: a linked list and a min-heap of (rank, position); an entry
    is used only if the pair at its position still has that rank (as ``replay_long``,
    _replay.pxd)."""
    cdef vector[int64_t] nxt = vector[int64_t](n)
    cdef vector[int64_t] prv = vector[int64_t](n)
    cdef vector[uint8_t] gone = vector[uint8_t](n, 0)
    cdef priority_queue[uint64_t] heap     # max-heap of ~(rank << 32 | pos): min rank, leftmost
    cdef size_t i, m = 0
    cdef int32_t r, made
    cdef int64_t p, q
    cdef uint64_t top
    for i in range(n):
        nxt[i] = <int64_t>i + 1 if i + 1 < n else -1
        prv[i] = <int64_t>i - 1
    for i in range(n - 1):
        r = super_rank(sm, ids[i], ids[i + 1], &made)
        if r != NO_MERGE:
            heap.push(~((<uint64_t>r << 32) | i))
    while not heap.empty():
        top = ~heap.top()
        heap.pop()
        r = <int32_t>(top >> 32)
        p = <int64_t>(top & 0xFFFFFFFFull)
        q = nxt[p]
        if gone[p] or q < 0 or super_rank(sm, ids[p], ids[q], &made) != r:
            continue                         # stale: this position changed since the push
        ids[p] = <uint32_t>made
        gone[q] = 1
        nxt[p] = nxt[q]
        if nxt[p] >= 0:
            prv[nxt[p]] = p
            r = super_rank(sm, ids[p], ids[nxt[p]], &made)
            if r != NO_MERGE:
                heap.push(~((<uint64_t>r << 32) | <uint64_t>p))
        if prv[p] >= 0:
            r = super_rank(sm, ids[prv[p]], ids[p], &made)
            if r != NO_MERGE:
                heap.push(~((<uint64_t>r << 32) | <uint64_t>prv[p]))
    p = 0
    while p >= 0:
        ids[m] = ids[p]
        m += 1
        p = nxt[p]
    return m


cdef inline size_t merge_run(Supermerges* sm, uint32_t* ids, size_t n) noexcept nogil:
    """Apply the supermerges to a run of n ids in place, BPE-style: the adjacent pair of the
    lowest rank, leftmost on ties, until no pair has one; returns the ids left. Merging one
    pair at a time, lowest first, makes what training's merge-by-merge passes make (a merge
    never makes a pair that ranks before it)."""
    cdef int32_t rank[SHORT_CHUNK]
    cdef int32_t made[SHORT_CHUNK]
    cdef size_t m = n, i, best
    cdef int32_t best_rank
    if n < 2:
        return n
    if n > SHORT_CHUNK:
        return merge_long_run(sm, ids, n)
    for i in range(n - 1):
        rank[i] = super_rank(sm, ids[i], ids[i + 1], &made[i])
    while m > 1:
        best_rank, best = NO_MERGE, 0
        for i in range(m - 1):
            if rank[i] < best_rank:
                best_rank, best = rank[i], i
        if best_rank == NO_MERGE:
            break
        ids[best] = <uint32_t>made[best]
        for i in range(best + 1, m - 1):    # close the gap left by ids[best + 1]
            ids[i] = ids[i + 1]
            rank[i] = rank[i + 1]
            made[i] = made[i + 1]
        m -= 1
        if best + 1 < m:
            rank[best] = super_rank(sm, ids[best], ids[best + 1], &made[best])
        if best > 0:
            rank[best - 1] = super_rank(sm, ids[best - 1], ids[best], &made[best - 1])
    return m


cdef inline size_t run_step(Supermerges* sm, uint32_t* ids, size_t* size, size_t before, size_t* run_start,
                            size_t run_len) noexcept nogil:
    """After a chunk's ids went to ``ids[before:size[0]]`` (the ids emitted so far are ids[:size[0]]):
    a chunk that is one unit extends the run (returns its new length); any other ends it, and
    the run, if it has two units or more, is merged by the supermerges in place (``merge_run``),
    the chunk's ids moving up behind it, size[0] shrinking (returns 0). The worker never only
    counts here (see _Worker)."""
    cdef size_t after = size[0], m
    if after == before + 1 and sm.unit[ids[before]]:
        if run_len == 0:
            run_start[0] = before
        return run_len + 1
    if run_len >= 2:
        m = merge_run(sm, ids + run_start[0], run_len)
        if m < run_len:
            memmove(ids + run_start[0] + m, ids + before, (after - before) * sizeof(uint32_t))
            size[0] = run_start[0] + m + (after - before)
    return 0


cdef inline void end_run(Supermerges* sm, uint32_t* ids, size_t* size, size_t run_start,
                         size_t run_len) noexcept nogil:
    """The run at the end of a piece (it ends there, as at a special token)."""
    if run_len >= 2:
        size[0] = run_start + merge_run(sm, ids + run_start, run_len)
