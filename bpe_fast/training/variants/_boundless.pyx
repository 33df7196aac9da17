# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""BoundlessBPE's runs, counted (boundless.py, counting.RunCounter).

A *unit* is a chunk the phase-1 tokenizer makes one token and that is eligible; a *run* is a
maximal sequence of two or more consecutive units within a document (within a line with
``lines``). ``RunScanner`` splits text with a named pattern's native scanner, looks each chunk up
in a table of the units (their bytes -> token id), and counts each run into a ``ChunkTable`` as
its units' ids (int32, in the machine's byte order, one after another): the table's "chunks" are
those keys, and everything else (spilling, sorting, adding the workers' tables) is counting's.

A module of its own, not a method of ChunkTable: the compiler inlines the scanner into the one
loop of each module that calls it, and a second call site in _table.pyx made it stop (more
instructions counting chunks; the closest measurements: benchmarks/RESULTS.md,
"Encoding against gigatoken", round 4).
"""
import numpy as np
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memchr, memcmp, memcpy
from libcpp.vector cimport vector

from ...core._hash cimport KeySlot, bytes_hash, slot_of
from ...core._pairmap cimport half_full_bits
from ...pretokenize._pretok cimport Scanner
from ...pretokenize._split cimport Window, split_next, window_reset


cdef class RunScanner:
    """Counts the runs of UTF-8 text into ``table`` (a ChunkTable), given the units: ``chunks[k]``
    (bytes) is token ``ids[k]``. The runs a call finds go to the table in one ``add_arrays`` at
    its end."""
    cdef object table
    cdef KeySlot* slots                 # unit bytes -> index k (see core/_hash.pxd)
    cdef int bits
    cdef vector[int32_t] ids            # k -> token id
    cdef vector[int64_t] at             # k -> where its bytes are in arena (read for keys over 8 bytes)
    cdef vector[uint8_t] arena
    cdef vector[int32_t] run            # the run being read
    cdef vector[uint8_t] keys           # the runs found by this call, one after another ...
    cdef vector[int64_t] ends           # ... and where each ends

    def __cinit__(self, table, list chunks, const int32_t[::1] ids):
        cdef Py_ssize_t k, n = len(chunks)
        cdef size_t h, mask
        cdef const unsigned char* s
        if ids.shape[0] != n:
            raise ValueError("RunScanner needs one id per unit")
        self.table = table
        self.bits = half_full_bits(n, 4)
        self.slots = <KeySlot*>calloc(<size_t>1 << self.bits, sizeof(KeySlot))
        if self.slots == NULL:
            raise MemoryError()
        mask = (<size_t>1 << self.bits) - 1
        for k in range(n):
            chunk = chunks[k]
            if not isinstance(chunk, bytes) or not len(chunk) or ids[k] < 0:
                raise ValueError(f"unit {k} must be non-empty bytes with an id >= 0")
            s = chunk
            self.ids.push_back(ids[k])
            self.at.push_back(self.arena.size())
            self.arena.insert(self.arena.end(), s, s + len(chunk))
            h = slot_of(bytes_hash(s, len(chunk), s + len(chunk)), self.bits)
            while self.slots[h].length and not self.same(h, bytes_hash(s, len(chunk), s + len(chunk)), s,
                                                         len(chunk)):
                h = (h + 1) & mask
            self.slots[h].hash = bytes_hash(s, len(chunk), s + len(chunk))
            self.slots[h].length = <uint32_t>len(chunk)
            self.slots[h].value = <int32_t>k          # a later unit of the same bytes replaces it

    def __dealloc__(self):
        free(self.slots)

    cdef inline bint same(self, size_t k, uint64_t h, const uint8_t* s, size_t n) noexcept nogil:
        cdef const KeySlot* slot = &self.slots[k]
        return (slot.hash == h and slot.length == n
                and (n <= 8 or memcmp(self.arena.data() + self.at[slot.value], s, n) == 0))

    cdef inline int32_t find(self, const uint8_t* s, size_t n, const uint8_t* end) noexcept nogil:
        """The token id of the unit whose bytes are s (n >= 1; the buffer ends at ``end``), or -1."""
        cdef uint64_t h = bytes_hash(s, n, end)
        cdef size_t mask = (<size_t>1 << self.bits) - 1, k = slot_of(h, self.bits)
        while self.slots[k].length:
            if self.same(k, h, s, n):
                return self.ids[self.slots[k].value]
            k = (k + 1) & mask
        return -1

    def is_unit(self, bytes chunk):
        """The id of a unit, or -1 (for the regex route, which splits in Python)."""
        cdef const unsigned char* s = chunk
        return self.find(s, len(chunk), s + len(chunk)) if len(chunk) else -1

    def add_run(self, const int32_t[::1] ids):
        """Count one run given as its ids (the regex route); fewer than two ids are no run."""
        cdef Py_ssize_t i
        if ids.shape[0] < 2:
            return
        for i in range(ids.shape[0]):
            self.run.push_back(ids[i])
        self.end_run()
        self.flush()

    def add_text(self, Scanner scanner, const unsigned char[::1] data, bint lines=False):
        """Count the runs of UTF-8 ``data`` as split by the scanner of a named pattern; with
        ``lines``, each line (up to and with its "\\n") is a document of its own."""
        if data.shape[0] == 0:
            return
        with nogil:
            self.add_document(scanner, &data[0], data.shape[0], lines)
        self.flush()

    def add_documents(self, Scanner scanner, const unsigned char[::1] data, const int64_t[::1] offsets,
                      bint lines=False):
        """Count the runs of many documents packed in one UTF-8 buffer: document i is
        ``data[offsets[i]:offsets[i + 1]]`` (as ``ChunkTable.add_documents``)."""
        cdef Py_ssize_t i, n = offsets.shape[0] - 1
        cdef const unsigned char* s
        if n <= 0 or data.shape[0] == 0:
            return
        if offsets[0] < 0 or offsets[n] > data.shape[0]:
            raise ValueError(f"offsets run from {offsets[0]} to {offsets[n]}, outside the {data.shape[0]} bytes")
        for i in range(n):
            if offsets[i + 1] < offsets[i]:
                raise ValueError(f"offsets must not decrease: offsets[{i + 1}] = {offsets[i + 1]} < {offsets[i]}")
        s = &data[0]
        with nogil:
            for i in range(n):
                self.add_document(scanner, s + offsets[i], <size_t>(offsets[i + 1] - offsets[i]), lines)
        self.flush()

    cdef void add_document(self, Scanner scanner, const unsigned char* s, size_t n, bint lines) noexcept nogil:
        cdef size_t start = 0, end
        cdef const void* newline
        while start < n:
            end = n
            if lines:
                newline = memchr(s + start, 10, n - start)
                if newline != NULL:
                    end = <size_t>(<const unsigned char*>newline - s) + 1
            self.add_span(scanner, s + start, end - start)
            start = end

    cdef void add_span(self, Scanner scanner, const unsigned char* s, size_t n) noexcept nogil:
        """The runs of one document: each unit extends the run, any other chunk ends it."""
        cdef size_t i = 0, j
        cdef int32_t unit
        cdef Window window
        self.run.clear()
        window_reset(&window)
        while i < n:
            j = split_next(&window, scanner.pattern, s, n, i, &scanner.cls[0], &scanner.fold[0])
            unit = self.find(s + i, j - i, s + n)
            if unit >= 0:
                self.run.push_back(unit)
            else:
                self.end_run()
            i = j
        self.end_run()

    cdef inline void end_run(self) noexcept nogil:
        """Keep the run read so far if it has two units or more, and start afresh."""
        cdef const uint8_t* ids
        if self.run.size() >= 2:
            ids = <const uint8_t*>self.run.data()
            self.keys.insert(self.keys.end(), ids, ids + 4 * self.run.size())
            self.ends.push_back(self.keys.size())
        self.run.clear()

    cdef flush(self):
        """Count the runs kept into the table, in one call."""
        cdef Py_ssize_t n = self.ends.size(), i
        if n == 0:
            return
        data = np.empty(self.keys.size(), np.uint8)
        offsets = np.empty(n + 1, np.int64)
        cdef uint8_t[::1] d = data
        cdef int64_t[::1] o = offsets
        memcpy(&d[0], self.keys.data(), self.keys.size())
        o[0] = 0
        for i in range(n):
            o[i + 1] = self.ends[i]
        self.keys.clear()
        self.ends.clear()
        self.table.add_arrays(data, offsets, np.ones(n, np.int64))
