# cython: language_level=3
"""BPE by replaying the merges: the definition itself, for merge recovery.

Invariant: ``replay`` gives what tiktoken's rule gives for bytes that are no token: the adjacent
pair whose merge is the earliest is merged, leftmost first on ties, until no pair has a merge.
It needs no more than ``Merges`` (no trie, no reachable set), so ``recover_merges`` can run it
while it appends the merges one by one, and backtracking (_bpe.pxd) falls back on it.
Chunks of up to SHORT_CHUNK bytes are replayed over an array rescanned per merge, longer ones
with a linked list and a heap.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memcpy
from libcpp.queue cimport priority_queue
from libcpp.vector cimport vector

from ._merges cimport Merges, NO_MERGE, merged

cdef enum:
    SHORT_CHUNK = 128          # bytes; the replayed merges of longer chunks use a heap


cdef inline void replay_short(Merges* merges, const unsigned char* s, size_t n, vector[int32_t]* out) noexcept nogil:
    """BPE of s by replaying merges, lowest first, over an array rescanned per merge."""
    cdef int32_t sym[SHORT_CHUNK]
    cdef int32_t rank[SHORT_CHUNK]          # rank[i]: what (sym[i], sym[i + 1]) merges into
    cdef size_t m = n, i, best
    cdef int32_t best_rank
    for i in range(n):
        sym[i] = s[i]
    for i in range(n - 1):
        rank[i] = merged(merges, sym[i], sym[i + 1])
    while m > 1:
        best_rank, best = NO_MERGE, 0
        for i in range(m - 1):
            if rank[i] < best_rank:
                best_rank, best = rank[i], i
        if best_rank == NO_MERGE:
            break
        sym[best] = best_rank
        for i in range(best + 1, m - 1):    # close the gap left by sym[best + 1]
            sym[i] = sym[i + 1]
            rank[i] = rank[i + 1]
        m -= 1
        if best + 1 < m:
            rank[best] = merged(merges, sym[best], sym[best + 1])
        if best > 0:
            rank[best - 1] = merged(merges, sym[best - 1], sym[best])
    for i in range(m):
        out.push_back(sym[i])


cdef inline void replay_long(Merges* merges, const unsigned char* s, size_t n, vector[int32_t]* out) noexcept nogil:
    """BPE of s by replaying merges with a linked list and a min-heap of (merge, position);
    an entry is used only if the pair at its position still makes that merge."""
    cdef vector[int32_t] sym = vector[int32_t](n)
    cdef vector[int64_t] nxt = vector[int64_t](n)
    cdef vector[int64_t] prv = vector[int64_t](n)
    cdef priority_queue[uint64_t] heap     # max-heap of ~(merge << 32 | pos): min merge, leftmost
    cdef size_t i
    cdef int32_t r
    cdef int64_t p, q
    cdef uint64_t top
    for i in range(n):
        sym[i] = s[i]
        nxt[i] = <int64_t>i + 1 if i + 1 < n else -1
        prv[i] = <int64_t>i - 1
    for i in range(n - 1):
        r = merged(merges, sym[i], sym[i + 1])
        if r != NO_MERGE:
            heap.push(~((<uint64_t>r << 32) | i))
    while not heap.empty():
        top = ~heap.top()
        heap.pop()
        r = <int32_t>(top >> 32)
        p = <int64_t>(top & 0xFFFFFFFFull)
        q = nxt[p]
        if sym[p] < 0 or q < 0 or merged(merges, sym[p], sym[q]) != r:
            continue                         # stale: this position changed since the push
        sym[p] = r
        sym[q] = -1
        nxt[p] = nxt[q]
        if nxt[p] >= 0:
            prv[nxt[p]] = p
            r = merged(merges, sym[p], sym[nxt[p]])
            if r != NO_MERGE:
                heap.push(~((<uint64_t>r << 32) | <uint64_t>p))
        if prv[p] >= 0:
            r = merged(merges, sym[prv[p]], sym[p])
            if r != NO_MERGE:
                heap.push(~((<uint64_t>r << 32) | <uint64_t>prv[p]))
    p = 0
    while p >= 0:
        out.push_back(sym[p])
        p = nxt[p]


cdef inline size_t replay(Merges* merges, const uint8_t* s, size_t n, int32_t* out) noexcept nogil:
    """BPE of s by replaying the merges: the symbols into out, their number returned."""
    cdef vector[int32_t] parts
    if n <= SHORT_CHUNK:
        replay_short(merges, s, n, &parts)
    else:
        replay_long(merges, s, n, &parts)
    memcpy(out, parts.data(), parts.size() * sizeof(int32_t))
    return parts.size()
