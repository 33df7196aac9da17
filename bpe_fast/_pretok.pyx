# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Native pre-tokenization and chunk counting for the named patterns (see _scan.pxd).

``ChunkCounts`` keeps ``{chunk bytes: count}`` in a C++ hash map, so counting a block makes no
Python object per chunk, only one per *unique* chunk when the result is read out.
"""
import numpy as np
from libc.stdint cimport uint8_t, int64_t
from libcpp.string cimport string
from libcpp.unordered_map cimport unordered_map
from cython.operator cimport dereference as deref, preincrement as inc

from ._scan cimport scan_next, PAT_GPT2, PAT_CL100K, PAT_O200K, FOLD_LIMIT

PATTERN_IDS = {"gpt2": PAT_GPT2, "cl100k": PAT_CL100K, "o200k": PAT_O200K}


cdef class Scanner:
    """Splits UTF-8 text into the chunks of one named pattern."""
    cdef readonly int pattern
    cdef const uint8_t[::1] cls
    cdef const uint8_t[::1] fold

    def __cinit__(self, int pattern, const uint8_t[::1] classes, const uint8_t[::1] fold):
        if pattern not in (PAT_GPT2, PAT_CL100K, PAT_O200K):
            raise ValueError(f"unknown pattern id {pattern}")
        if classes.shape[0] != 0x110000 or fold.shape[0] != FOLD_LIMIT:
            raise ValueError("character tables have the wrong size")
        self.pattern, self.cls, self.fold = pattern, classes, fold

    def boundaries(self, const unsigned char[::1] data):
        """Byte offsets where chunks end, as an int64 array."""
        cdef size_t n = data.shape[0], i = 0, k = 0
        ends = np.empty(n, dtype=np.int64)
        cdef int64_t[::1] out = ends
        if n == 0:
            return ends
        with nogil:
            while i < n:
                i = scan_next(self.pattern, &data[0], n, i, &self.cls[0], &self.fold[0])
                out[k] = i
                k += 1
        return ends[:k]

    def chunks(self, str text):
        """The chunks of text, as regex.findall would return them."""
        data = text.encode("utf-8")
        ends = self.boundaries(data).tolist()
        return [data[a:b].decode("utf-8") for a, b in zip([0] + ends[:-1], ends)]


cdef class ChunkCounts:
    """A multiset of chunks (bytes) held in C++."""
    cdef unordered_map[string, int64_t] counts

    def add_text(self, Scanner scanner, const unsigned char[::1] data):
        """Count the chunks of UTF-8 ``data`` as split by scanner."""
        cdef size_t n = data.shape[0], i = 0, j
        cdef const unsigned char* s
        if n == 0:
            return
        s = &data[0]
        with nogil:
            while i < n:
                j = scan_next(scanner.pattern, s, n, i, &scanner.cls[0], &scanner.fold[0])
                self.counts[string(<const char*>s + i, j - i)] += 1
                i = j

    def add(self, bytes chunk, int64_t count=1):
        self.counts[string(<const char*>chunk, len(chunk))] += count

    def __len__(self):
        return self.counts.size()

    def to_dict(self):
        cdef dict out = {}
        cdef unordered_map[string, int64_t].iterator it = self.counts.begin()
        while it != self.counts.end():
            out[<bytes>deref(it).first] = deref(it).second
            inc(it)
        return out
