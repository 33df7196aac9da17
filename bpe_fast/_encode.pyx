# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Encoding kernel: apply learned merges to one chunk, lowest rank first (tiktoken's rule).

A chunk is a linked list of symbols; a min-heap holds (rank, position) of every adjacent pair
that has a merge. Popping the smallest entry merges the lowest-ranked pair, leftmost first on
ties; an entry is used only if the pair at its position still has that rank (ranks identify
pairs, so this check is exact). Each merge pushes at most two new entries, so a chunk of n
bytes costs O(n log n), never the O(n^2) of rescanning after every merge.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libcpp.vector cimport vector
from libcpp.queue cimport priority_queue

from ._pairmap cimport PairMap, pair_key, pairmap_init, pairmap_free, pairmap_get, pairmap_get_or_add

cnp.import_array()


cdef class MergeEncoder:
    """Merges (left, right) -> result id, ranked by their order; initial ids per byte."""
    cdef PairMap ranks                  # (left, right) -> merge index (its rank)
    cdef int32_t[::1] result            # merge index -> id of the merged token
    cdef int32_t[::1] byte_ids          # byte value -> id of its single-byte token
    cdef vector[int64_t] heap_storage

    def __cinit__(self, const int32_t[:, ::1] merges, const int32_t[::1] result_ids, const int32_t[::1] byte_ids):
        cdef Py_ssize_t n = merges.shape[0], m
        if result_ids.shape[0] != n or byte_ids.shape[0] != 256:
            raise ValueError("MergeEncoder needs one result id per merge and 256 byte ids")
        if pairmap_init(&self.ranks, n) != 0:
            raise MemoryError()
        for m in range(n):
            if pairmap_get_or_add(&self.ranks, pair_key(merges[m, 0], merges[m, 1]), <int32_t>m) == -2:
                raise MemoryError()
        self.result = np.array(result_ids, dtype=np.int32)
        self.byte_ids = np.array(byte_ids, dtype=np.int32)

    def __dealloc__(self):
        pairmap_free(&self.ranks)

    cdef inline int32_t rank_of(self, int32_t left, int32_t right) noexcept:
        return pairmap_get(&self.ranks, pair_key(left, right))

    def encode_chunk(self, const unsigned char[::1] data):
        """The token ids of one chunk (UTF-8 bytes)."""
        cdef Py_ssize_t n = data.shape[0], i
        if n == 0:
            return []
        if n == 1:
            return [self.byte_ids[data[0]]]
        cdef vector[int32_t] sym = vector[int32_t](n)
        cdef vector[int32_t] nxt = vector[int32_t](n)
        cdef vector[int32_t] prv = vector[int32_t](n)
        # Max-heap of -(rank << 32 | position): the top is the smallest rank, then leftmost.
        cdef priority_queue[int64_t] heap
        cdef int32_t r, p, q
        for i in range(n):
            sym[i] = self.byte_ids[data[i]]
            nxt[i] = <int32_t>(i + 1) if i + 1 < n else -1
            prv[i] = <int32_t>(i - 1)
        for i in range(n - 1):
            r = self.rank_of(sym[i], sym[i + 1])
            if r >= 0:
                heap.push(-((<int64_t>r << 32) | i))
        cdef int64_t top
        while not heap.empty():
            top = -heap.top()
            heap.pop()
            r = <int32_t>(top >> 32)
            p = <int32_t>(<uint32_t>top)
            q = nxt[p]
            if sym[p] < 0 or q < 0 or self.rank_of(sym[p], sym[q]) != r:
                continue                      # stale: this position changed since the push
            sym[p] = self.result[r]
            sym[q] = -1
            nxt[p] = nxt[q]
            if nxt[p] >= 0:
                prv[nxt[p]] = p
                r = self.rank_of(sym[p], sym[nxt[p]])
                if r >= 0:
                    heap.push(-((<int64_t>r << 32) | p))
            if prv[p] >= 0:
                r = self.rank_of(sym[prv[p]], sym[p])
                if r >= 0:
                    heap.push(-((<int64_t>r << 32) | prv[p]))
        out = []
        p = 0
        while p >= 0:
            out.append(sym[p])
            p = nxt[p]
        return out
