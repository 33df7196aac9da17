# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Encoding and decoding kernels.

Encoding follows tiktoken's rule: a chunk that is itself a token becomes that token; otherwise
the adjacent pair with the lowest merge rank is merged, leftmost first on ties, until no pair
has a merge. Merges are (left id, right id) -> result id, ranked by their order.

* Short chunks (the usual case) keep the rank of every adjacent pair in an array and rescan it
  per merge: O(n^2) in the chunk's length, with tiny constants.
* Long chunks use a linked list and a min-heap of (rank, position); an entry is used only if
  the pair at its position still has that rank (a rank names one pair, so this check is exact):
  O(n log n), so a 1 MB chunk does not blow up.

With a named pattern the whole text is split and encoded here without the GIL (so threads run
in parallel) and without a Python object per chunk.
"""
import numpy as np
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libcpp.string cimport string
from libcpp.vector cimport vector
from libcpp.queue cimport priority_queue
from libcpp.unordered_map cimport unordered_map

from ._pairmap cimport PairMap, pair_key, pairmap_init, pairmap_free, pairmap_get, pairmap_get_or_add
from ._scan cimport scan_next
from cython.operator cimport dereference as deref

cdef enum:
    SHORT_CHUNK = 128      # bytes; longer chunks take the heap path
    NO_RANK = 0x7FFFFFFF


cdef class MergeEncoder:
    """Merges (left, right) -> result id by rank, single-byte ids, token bytes for decoding."""
    cdef PairMap ranks                          # (left, right) -> merge index = rank
    cdef vector[int32_t] result                 # rank -> id of the merged token
    cdef int32_t byte_ids[256]
    cdef unordered_map[string, int32_t] whole   # bytes of every mergeable token -> id
    cdef vector[string] token_bytes             # id -> bytes (specials too)
    cdef vector[uint8_t] defined                # id -> 1 if some token has this id
    cdef int pattern                            # a named pattern's id, or 0
    cdef const uint8_t[::1] cls
    cdef const uint8_t[::1] fold

    def __cinit__(self, const int32_t[:, ::1] merges, const int32_t[::1] result_ids,
                  const int32_t[::1] byte_ids, list vocab, dict special_tokens):
        """vocab[id] is the token's bytes or None; special_tokens maps bytes -> id."""
        cdef Py_ssize_t n = merges.shape[0], m, i
        if result_ids.shape[0] != n or byte_ids.shape[0] != 256:
            raise ValueError("MergeEncoder needs one result id per merge and 256 byte ids")
        if pairmap_init(&self.ranks, n) != 0:
            raise MemoryError()
        for m in range(n):
            if pairmap_get_or_add(&self.ranks, pair_key(merges[m, 0], merges[m, 1]), <int32_t>m) == -2:
                raise MemoryError()
            self.result.push_back(result_ids[m])
        for i in range(256):
            self.byte_ids[i] = byte_ids[i]
        size = max([len(vocab)] + [i + 1 for i in special_tokens.values()])
        self.token_bytes.resize(size)
        self.defined.resize(size, 0)
        for i, token in enumerate(vocab):
            if token is not None:
                self.token_bytes[i] = <string>token
                self.defined[i] = 1
                self.whole[<string>token] = <int32_t>i
        for token, i in special_tokens.items():
            self.token_bytes[i] = <string>token
            self.defined[i] = 1
        self.pattern = 0

    def __dealloc__(self):
        pairmap_free(&self.ranks)

    def set_scanner(self, int pattern, const uint8_t[::1] classes, const uint8_t[::1] fold):
        """Use the native scanner of a named pattern for encode_text."""
        self.pattern, self.cls, self.fold = pattern, classes, fold

    cdef inline int32_t rank_of(self, int32_t left, int32_t right) noexcept nogil:
        cdef int32_t r = pairmap_get(&self.ranks, pair_key(left, right))
        return r if r >= 0 else NO_RANK

    cdef void merge_short(self, const unsigned char* s, size_t n, vector[int32_t]* out) noexcept nogil:
        cdef int32_t sym[SHORT_CHUNK]
        cdef int32_t rank[SHORT_CHUNK]          # rank[i]: pair (sym[i], sym[i + 1])
        cdef size_t m = n, i, best
        cdef int32_t best_rank
        for i in range(n):
            sym[i] = self.byte_ids[s[i]]
        for i in range(n - 1):
            rank[i] = self.rank_of(sym[i], sym[i + 1])
        while m > 1:
            best_rank = NO_RANK
            best = 0
            for i in range(m - 1):
                if rank[i] < best_rank:
                    best_rank, best = rank[i], i
            if best_rank == NO_RANK:
                break
            sym[best] = self.result[best_rank]
            for i in range(best + 1, m - 1):    # close the gap left by sym[best + 1]
                sym[i] = sym[i + 1]
                rank[i] = rank[i + 1]
            m -= 1
            if best + 1 < m:
                rank[best] = self.rank_of(sym[best], sym[best + 1])
            if best > 0:
                rank[best - 1] = self.rank_of(sym[best - 1], sym[best])
        for i in range(m):
            out.push_back(sym[i])

    cdef void merge_long(self, const unsigned char* s, size_t n, vector[int32_t]* out) noexcept nogil:
        cdef vector[int32_t] sym = vector[int32_t](n)
        cdef vector[int64_t] nxt = vector[int64_t](n)
        cdef vector[int64_t] prv = vector[int64_t](n)
        cdef priority_queue[uint64_t] heap     # max-heap of ~(rank << 32 | pos): min rank, leftmost
        cdef size_t i
        cdef int32_t r
        cdef int64_t p, q
        cdef uint64_t top
        for i in range(n):
            sym[i] = self.byte_ids[s[i]]
            nxt[i] = <int64_t>i + 1 if i + 1 < n else -1
            prv[i] = <int64_t>i - 1
        for i in range(n - 1):
            r = self.rank_of(sym[i], sym[i + 1])
            if r != NO_RANK:
                heap.push(~((<uint64_t>r << 32) | i))
        while not heap.empty():
            top = ~heap.top()
            heap.pop()
            r = <int32_t>(top >> 32)
            p = <int64_t>(top & 0xFFFFFFFFull)
            q = nxt[p]
            if sym[p] < 0 or q < 0 or self.rank_of(sym[p], sym[q]) != r:
                continue                         # stale: this position changed since the push
            sym[p] = self.result[r]
            sym[q] = -1
            nxt[p] = nxt[q]
            if nxt[p] >= 0:
                prv[nxt[p]] = p
                r = self.rank_of(sym[p], sym[nxt[p]])
                if r != NO_RANK:
                    heap.push(~((<uint64_t>r << 32) | <uint64_t>p))
            if prv[p] >= 0:
                r = self.rank_of(sym[prv[p]], sym[p])
                if r != NO_RANK:
                    heap.push(~((<uint64_t>r << 32) | <uint64_t>prv[p]))
        p = 0
        while p >= 0:
            out.push_back(sym[p])
            p = nxt[p]

    cdef inline bint whole_token(self, const unsigned char* s, size_t n, vector[int32_t]* out) noexcept nogil:
        """Append the id of a chunk that is itself a token (as tiktoken does first); 1 byte always is."""
        if n == 1:
            out.push_back(self.byte_ids[s[0]])
            return True
        cdef unordered_map[string, int32_t].iterator found = self.whole.find(string(<const char*>s, n))
        if found == self.whole.end():
            return False
        out.push_back(deref(found).second)
        return True

    cdef inline void merge_piece(self, const unsigned char* s, size_t n, vector[int32_t]* out) noexcept nogil:
        if n <= SHORT_CHUNK:
            self.merge_short(s, n, out)
        else:
            self.merge_long(s, n, out)

    cdef void encode_piece(self, const unsigned char* s, size_t n, vector[int32_t]* out) noexcept nogil:
        if n and not self.whole_token(s, n, out):
            self.merge_piece(s, n, out)

    def encode_chunk(self, const unsigned char[::1] data):
        """The ids of one chunk (UTF-8 bytes), as a list."""
        cdef vector[int32_t] out
        if data.shape[0]:
            with nogil:
                self.encode_piece(&data[0], data.shape[0], &out)
        return out

    def encode_chunks(self, const unsigned char[::1] data, const int64_t[::1] offsets):
        """The ids of every chunk of a word table (chunk i is data[offsets[i]:offsets[i + 1]]),
        one after another, as an int32 array: each chunk encoded whole, in one call."""
        cdef vector[int32_t] out
        cdef Py_ssize_t i, n = offsets.shape[0] - 1
        out.reserve(data.shape[0] // 2 + 16)
        if data.shape[0]:
            with nogil:
                for i in range(n):
                    self.encode_piece(&data[0] + offsets[i], offsets[i + 1] - offsets[i], &out)
        return np.asarray(<int32_t[:out.size()]>out.data()).copy() if out.size() else np.empty(0, np.int32)

    def encode_text(self, const unsigned char[::1] data):
        """Split UTF-8 text with the named pattern and encode every chunk: a list of ids.

        No cache of merged chunks here: most chunks are whole tokens, found by one lookup, and
        the rest merge in a few steps; a per-call cache of them measured slower on mix33
        (benchmarks/RESULTS.md), as it costs a second hash lookup per chunk."""
        if self.pattern == 0:
            raise ValueError("encode_text needs a named pattern's scanner (set_scanner)")
        cdef vector[int32_t] out
        cdef size_t n = data.shape[0], i = 0, j
        if n == 0:
            return []
        out.reserve(n // 3 + 16)
        with nogil:
            while i < n:
                j = scan_next(self.pattern, &data[0], n, i, &self.cls[0], &self.fold[0])
                self.encode_piece(&data[0] + i, j - i, &out)
                i = j
        return out

    def decode_bytes(self, ids):
        """The bytes of a sequence of token ids; ValueError names the first id out of range."""
        cdef string out
        cdef int64_t token
        cdef int64_t size = self.token_bytes.size()
        cdef Py_ssize_t k = 0
        for k, t in enumerate(ids):
            try:
                token = t
            except OverflowError:
                token = -1                      # far out of range: reported below like any other
            if token < 0 or token >= size or not self.defined[token]:
                raise ValueError(f"token id {t} (position {k}) is not in the vocabulary (ids 0..{size - 1})")
            out.append(self.token_bytes[token])
        return <bytes>out


def recover_merges(list tokens, const int32_t[::1] ids, const int32_t[::1] byte_ids):
    """The merges of a vocabulary given as token bytes in rank order (ids[i] is tokens[i]'s id).

    Each token longer than one byte must be made by merging exactly two lower-ranked tokens:
    running BPE on its bytes with the merges found so far must end in two parts. Returns
    (merges int32 (n, 2), result ids int32 (n,), index of the first token that is not, or -1).
    """
    cdef Py_ssize_t n = len(tokens), t, k
    cdef int32_t[:, ::1] merges = np.empty((n, 2), dtype=np.int32)
    cdef int32_t[::1] result = np.empty(n, dtype=np.int32)
    cdef MergeEncoder enc = MergeEncoder(np.empty((0, 2), np.int32), np.empty(0, np.int32), byte_ids, [], {})
    cdef vector[int32_t] parts
    cdef const unsigned char* s
    cdef bytes token
    k = 0
    for t in range(n):
        token = tokens[t]
        if len(token) < 2:
            continue
        parts.clear()
        s = token
        if len(token) <= SHORT_CHUNK:
            enc.merge_short(s, len(token), &parts)
        else:
            enc.merge_long(s, len(token), &parts)
        if parts.size() != 2:
            return np.asarray(merges[:k]).copy(), np.asarray(result[:k]).copy(), t
        merges[k, 0], merges[k, 1], result[k] = parts[0], parts[1], ids[t]
        pairmap_get_or_add(&enc.ranks, pair_key(parts[0], parts[1]), <int32_t>k)
        enc.result.push_back(ids[t])
        k += 1
    return np.asarray(merges[:k]).copy(), np.asarray(result[:k]).copy(), -1
