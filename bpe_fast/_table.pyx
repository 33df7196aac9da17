# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Word tables in native code: counting chunks into a compact hash table, and merging tables.

A word table is three arrays: the chunks' bytes one after another (uint8), where each chunk
starts (int64 offsets, one more than chunks) and how often it occurs (int64 counts). Tables made
here are also *sorted by (hash, bytes)*, with each chunk's 64-bit hash kept beside it, so that
tables counted by different processes (or machines, or on different days) add up in one linear
pass, like merging sorted runs: no Python object per chunk anywhere.

``ChunkTable`` invariants:
* every distinct chunk added is one slot with a positive count (the number of times it was
  added, weighted); empty slots have count 0; at most 70% of the slots are used, and a chunk is
  found by linear probing from the slot its hash picks;
* a chunk of up to 7 bytes is stored in its slot (bytes and length packed in ``key``); a longer
  one is stored once in the arena (its length, then its bytes) and its slot holds its hash.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t
from libc.string cimport memchr, memcmp, memcpy
from libcpp.algorithm cimport sort
from libcpp.utility cimport pair
from libcpp.vector cimport vector

from ._scan cimport scan_next
from ._pretok cimport Scanner

cnp.import_array()

cdef uint64_t SEED = 0x9E3779B97F4A7C15
cdef uint64_t MUL1 = 0xBF58476D1CE4E5B9
cdef uint64_t MUL2 = 0x94D049BB133111EB


cdef inline uint64_t mix(uint64_t x) noexcept nogil:
    """splitmix64's finalizer: every input bit moves every output bit."""
    x = (x ^ (x >> 30)) * MUL1
    x = (x ^ (x >> 27)) * MUL2
    return x ^ (x >> 31)


cdef inline uint64_t hash_bytes(const uint8_t* s, size_t n) noexcept nogil:
    """A 64-bit hash of a byte string, 8 bytes at a time. Fixed seed: the same in every process
    and every run, because tables are merged in hash order."""
    cdef uint64_t h = SEED ^ (n * MUL2), v
    while n >= 8:
        memcpy(&v, s, 8)
        h = mix(h ^ v)
        s += 8
        n -= 8
    if n:
        v = 0
        memcpy(&v, s, n)
        h = mix(h ^ v ^ (<uint64_t>n << 56))
    return mix(h)


def hashes_of(const uint8_t[::1] data, const int64_t[::1] offsets):
    """The hash of each chunk of a table (for tables built from Python objects)."""
    cdef Py_ssize_t n = offsets.shape[0] - 1, i
    out = np.empty(max(n, 0), dtype=np.uint64)
    cdef uint64_t[::1] h = out
    cdef const uint8_t* base = &data[0] if data.shape[0] else NULL
    for i in range(n):
        h[i] = hash_bytes(base + offsets[i] if base != NULL else NULL, offsets[i + 1] - offsets[i])
    return out


cdef int64_t INT64_MAX = 0x7FFFFFFFFFFFFFFF


cdef inline bint sum_overflows(int64_t a, int64_t b) noexcept nogil:
    """Whether a + b is past int64 (checked before adding: a wrapped count is silent corruption)."""
    return (b > 0 and a > INT64_MAX - b) or (b < 0 and a < -INT64_MAX - 1 - b)


cdef count_overflow(chunk, a, b):
    """The error of two counts of ``chunk`` that add up past int64."""
    return OverflowError(f"chunk {bytes(chunk)!r} would occur {a:,} + {b:,} = {a + b:,} times, past the "
                         f"64-bit count limit ({INT64_MAX:,})")


cdef struct Slot:
    uint64_t key      # a short chunk's bytes and length (see pack_short); a long chunk's hash
    int64_t count     # 0: the slot is empty
    uint64_t ref      # SHORT, or where a long chunk's length and bytes are in the arena

cdef uint64_t SHORT = 0xFFFFFFFFFFFFFFFF
cdef enum:
    SHORT_MAX = 7     # chunks up to 7 bytes (most of them) live in the slot itself


cdef inline uint64_t pack_short(const uint8_t* s, size_t n) noexcept nogil:
    """A chunk of at most 7 bytes as one integer: its bytes, and its length in the top byte."""
    cdef uint64_t v = 0
    if n:
        memcpy(&v, s, n)
    return v | (<uint64_t>n << 56)


cdef class ChunkTable:
    """A multiset of chunks (byte strings), compact and cache-friendly: an open-addressing table
    of 24-byte slots, at most 70% full, holding each chunk's count; chunks of up to 7 bytes are
    stored in their slot, so finding one touches one cache line; longer chunks are kept in an
    arena (length, then bytes) and found by their full 64-bit hash."""
    cdef vector[Slot] slots
    cdef vector[uint8_t] arena
    cdef size_t used
    cdef int bits
    cdef Py_ssize_t overflow_slot      # a slot whose count an add would have taken past int64; -1: none
    cdef int64_t overflow_count        # ... and the count that was not added

    def __cinit__(self):
        self.bits = 12
        self.slots.assign(<size_t>1 << self.bits, Slot(0, 0, 0))
        self.used = 0
        self.overflow_slot = -1

    def __len__(self):
        return self.used

    @property
    def nbytes(self) -> int:
        """Memory held, in bytes (what a worker compares with its budget before spilling)."""
        return self.slots.size() * sizeof(Slot) + self.arena.capacity()

    cdef inline void insert(self, const uint8_t* s, size_t n, int64_t count) noexcept nogil:
        cdef bint short = n <= SHORT_MAX
        cdef uint64_t key = pack_short(s, n) if short else hash_bytes(s, n)
        cdef uint64_t place = mix(key) if short else key
        cdef size_t mask = (<size_t>1 << self.bits) - 1
        cdef size_t i = <size_t>(place & mask)
        cdef Slot* slot
        while True:
            slot = &self.slots[i]
            if slot.count == 0:
                break
            if slot.key == key and (slot.ref == SHORT) == short and (short or self.same_long(slot.ref, s, n)):
                if sum_overflows(slot.count, count):
                    self.overflow_slot, self.overflow_count = i, count
                    return
                slot.count += count
                return
            i = (i + 1) & mask
        slot.key = key
        slot.count = count
        slot.ref = SHORT if short else self.store_long(s, n)
        self.used += 1
        if 10 * self.used > 7 * self.slots.size():
            self.grow()

    cdef inline bint same_long(self, uint64_t ref, const uint8_t* s, size_t n) noexcept nogil:
        cdef uint64_t length
        memcpy(&length, &self.arena[ref], 8)
        return length == n and memcmp(&self.arena[ref + 8], s, n) == 0

    cdef inline uint64_t store_long(self, const uint8_t* s, size_t n) noexcept nogil:
        cdef uint64_t ref = self.arena.size(), length = n
        self.arena.resize(ref + 8 + n)
        memcpy(&self.arena[ref], &length, 8)
        memcpy(&self.arena[ref + 8], s, n)
        return ref

    cdef void grow(self) noexcept nogil:
        cdef vector[Slot] old
        old.swap(self.slots)
        self.bits += 1
        self.slots.assign(<size_t>1 << self.bits, Slot(0, 0, 0))
        cdef size_t mask = (<size_t>1 << self.bits) - 1, i, k
        for k in range(old.size()):
            if old[k].count == 0:
                continue
            i = <size_t>((mix(old[k].key) if old[k].ref == SHORT else old[k].key) & mask)
            while self.slots[i].count != 0:
                i = (i + 1) & mask
            self.slots[i] = old[k]

    cdef inline size_t chunk_at(self, const Slot* slot, const uint8_t** data, uint8_t* buffer) noexcept nogil:
        """The bytes of the chunk in a slot (short ones copied out to ``buffer``)."""
        cdef uint64_t length
        if slot.ref == SHORT:
            memcpy(buffer, &slot.key, 8)
            data[0] = buffer
            return <size_t>(slot.key >> 56)
        memcpy(&length, &self.arena[slot.ref], 8)
        data[0] = &self.arena[slot.ref + 8]
        return <size_t>length

    def add_text(self, Scanner scanner, const unsigned char[::1] data, bint lines=False):
        """Count the chunks of UTF-8 ``data`` as split by the scanner of a named pattern; with
        ``lines``, each line (up to and with its "\\n") is split on its own."""
        if data.shape[0] == 0:
            return
        with nogil:
            self.add_document(scanner, &data[0], data.shape[0], lines)

    def add_documents(self, Scanner scanner, const unsigned char[::1] data, const int64_t[::1] offsets,
                      bint lines=False):
        """Count the chunks of many documents packed in one UTF-8 buffer: document i is
        ``data[offsets[i]:offsets[i + 1]]``, split on its own (no chunk spans two documents), as
        ``add_text`` splits it. One call for a whole batch: no Python object per document. Each
        document must be valid UTF-8 on its own (the scanner reads whole characters)."""
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

    cdef inline void add_document(self, Scanner scanner, const unsigned char* s, size_t n, bint lines) noexcept nogil:
        """One document's chunks; with ``lines``, each of its lines split on its own."""
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

    cdef inline void add_span(self, Scanner scanner, const unsigned char* s, size_t n) noexcept nogil:
        cdef size_t i = 0, j
        while i < n:
            j = scan_next(scanner.pattern, s, n, i, &scanner.cls[0], &scanner.fold[0])
            self.insert(s + i, j - i, 1)
            i = j

    def add(self, const unsigned char[::1] chunk, int64_t count=1):
        """Count one chunk ``count`` times (empty chunks and counts below 1 are not counted)."""
        if chunk.shape[0] and count > 0:
            self.insert(&chunk[0], chunk.shape[0], count)
            self.check_overflow()

    cdef check_overflow(self):
        """OverflowError if an add would have taken a count past int64 (that add was not made)."""
        cdef Py_ssize_t slot = self.overflow_slot
        if slot >= 0:
            self.overflow_slot = -1
            raise count_overflow(self.chunk(slot), self.slots[slot].count, self.overflow_count)

    def add_many(self, list chunks):
        """Count each bytes object of the list once."""
        cdef bytes chunk
        for chunk in chunks:
            if len(chunk):
                self.insert(<const uint8_t*><const char*>chunk, len(chunk), 1)

    def add_arrays(self, const uint8_t[::1] data, const int64_t[::1] offsets, const int64_t[::1] counts):
        """Count every chunk of a table given as arrays, with its count."""
        cdef Py_ssize_t i, n = counts.shape[0]
        cdef size_t length
        for i in range(n):
            length = offsets[i + 1] - offsets[i]
            if length and counts[i] > 0:
                self.insert(&data[offsets[i]], length, counts[i])
                self.check_overflow()

    def clear(self):
        """Forget every chunk and give the memory back."""
        vector[uint8_t]().swap(self.arena)
        self.bits = 12
        vector[Slot](<size_t>1 << self.bits, Slot(0, 0, 0)).swap(self.slots)
        self.used = 0

    cdef void sort_slots(self, vector[pair[uint64_t, int64_t]]* keyed, Py_ssize_t* total) noexcept:
        """(hash, slot) of every chunk, in (hash, bytes) order; and the bytes of all chunks.
        16 bytes a chunk, sorted in place."""
        cdef Py_ssize_t e
        cdef size_t length
        cdef const uint8_t* chunk
        cdef uint8_t buffer[8]
        keyed.reserve(self.used)
        total[0] = 0
        for e in range(<Py_ssize_t>self.slots.size()):
            if self.slots[e].count:
                length = self.chunk_at(&self.slots[e], &chunk, buffer)
                keyed.push_back(pair[uint64_t, int64_t](hash_bytes(chunk, length), e))
                total[0] += length
        sort(keyed.begin(), keyed.end())
        self.order_equal_hashes(keyed)

    cdef void order_equal_hashes(self, vector[pair[uint64_t, int64_t]]* keyed) noexcept:
        """Within runs of equal hash (distinct chunks whose 64-bit hashes collide: practically
        never), order by bytes, so that the order is (hash, bytes) everywhere."""
        cdef size_t i = 0, j, k
        while i < keyed.size():
            j = i + 1
            while j < keyed.size() and keyed[0][j].first == keyed[0][i].first:
                j += 1
            if j - i > 1:
                run = sorted((self.chunk(keyed[0][k].second), keyed[0][k].second) for k in range(i, j))
                for k in range(i, j):
                    keyed[0][k].second = run[k - i][1]
            i = j

    cdef void fill(self, vector[pair[uint64_t, int64_t]]* keyed, Py_ssize_t lo, Py_ssize_t hi, uint8_t[::1] data,
                   int64_t[::1] offsets, int64_t[::1] counts, uint64_t[::1] hashes, int64_t first_offset) noexcept:
        """Chunks lo..hi (in sorted order) into data (from byte 0), their ends into offsets[1:]
        (counting from first_offset; offsets[0] = first_offset), their counts and hashes."""
        cdef Py_ssize_t k
        cdef size_t length
        cdef const uint8_t* chunk
        cdef uint8_t buffer[8]
        cdef const Slot* slot
        offsets[0] = first_offset
        for k in range(lo, hi):
            slot = &self.slots[keyed[0][k].second]
            length = self.chunk_at(slot, &chunk, buffer)
            memcpy(&data[offsets[k - lo] - first_offset], chunk, length)
            offsets[k - lo + 1] = offsets[k - lo] + length
            counts[k - lo] = slot.count
            hashes[k - lo] = keyed[0][k].first

    def sorted_arrays(self):
        """(data, offsets, counts, hashes): the table as arrays sorted by (hash, bytes)."""
        cdef vector[pair[uint64_t, int64_t]] keyed
        cdef Py_ssize_t total, n
        self.sort_slots(&keyed, &total)
        n = keyed.size()
        data, offsets = np.empty(total, np.uint8), np.empty(n + 1, np.int64)
        counts, hashes = np.empty(n, np.int64), np.empty(n, np.uint64)
        self.fill(&keyed, 0, n, data, offsets, counts, hashes, 0)
        return data, offsets, counts, hashes

    def write_sorted(self, path, Py_ssize_t batch=1 << 18):
        """Write the table sorted by (hash, bytes) as a *part file* (see read_part), a batch of
        chunks at a time: never a second copy of the table in memory."""
        cdef vector[pair[uint64_t, int64_t]] keyed
        cdef Py_ssize_t total, n, lo, hi, written = 0, size
        self.sort_slots(&keyed, &total)
        n = keyed.size()
        offsets, counts, hashes = np.empty(batch + 1, np.int64), np.empty(batch, np.int64), np.empty(batch, np.uint64)
        at_offsets, at_counts, at_hashes, at_data = part_layout(n)
        with open(path, "wb") as fh:
            fh.write(PART_MAGIC + np.array([n, total], dtype=np.int64).tobytes())
            fh.write(np.zeros(1, np.int64).tobytes())
            for lo in range(0, n, batch):
                hi = min(lo + batch, n)
                size = self.span_bytes(&keyed, lo, hi)
                data = np.empty(size, np.uint8)
                self.fill(&keyed, lo, hi, data, offsets, counts, hashes, written)
                for at, values in ((at_offsets + 8 * (lo + 1), offsets[1:hi - lo + 1]),
                                   (at_counts + 8 * lo, counts[:hi - lo]), (at_hashes + 8 * lo, hashes[:hi - lo]),
                                   (at_data + written, data)):
                    fh.seek(at)
                    fh.write(values.tobytes())
                written += size

    cdef Py_ssize_t span_bytes(self, vector[pair[uint64_t, int64_t]]* keyed, Py_ssize_t lo, Py_ssize_t hi) noexcept:
        cdef Py_ssize_t k, total = 0
        cdef const uint8_t* chunk
        cdef uint8_t buffer[8]
        for k in range(lo, hi):
            total += self.chunk_at(&self.slots[keyed[0][k].second], &chunk, buffer)
        return total

    def chunk(self, Py_ssize_t slot):
        cdef const uint8_t* data
        cdef uint8_t buffer[8]
        cdef size_t length = self.chunk_at(&self.slots[slot], &data, buffer)
        return (<const char*>data)[:length]


cdef inline int compare(uint64_t ha, const uint8_t* a, size_t na, uint64_t hb, const uint8_t* b, size_t nb) noexcept nogil:
    """Order of two chunks by (hash, bytes): -1, 0 or 1."""
    cdef int c
    if ha != hb:
        return -1 if ha < hb else 1
    c = memcmp(a, b, na if na < nb else nb)
    if c != 0:
        return c
    return (na > nb) - (na < nb)


PART_MAGIC = b"BPEFPART"
PART_HEADER = 24          # magic, number of chunks, number of bytes


def part_layout(Py_ssize_t n):
    """Where a part file of n chunks keeps its offsets, counts, hashes and bytes. All
    little-endian: b"BPEFPART", n (int64), total bytes (int64); offsets (int64 x n + 1); counts
    (int64 x n); hashes (uint64 x n); the chunks' bytes (uint8 x total)."""
    return PART_HEADER, PART_HEADER + 8 * (n + 1), PART_HEADER + 8 * (2 * n + 1), PART_HEADER + 8 * (3 * n + 1)


def part_size(path):
    """(number of chunks, number of bytes) of a part file."""
    header = np.fromfile(path, dtype=np.int64, count=3)
    if header.size != 3 or header[:1].tobytes() != PART_MAGIC:
        raise ValueError(f"{path}: not a bpe_fast part file")
    return int(header[1]), int(header[2])


def read_part(path, Py_ssize_t lo=0, hi=None):
    """Chunks lo..hi of a part file written by ``ChunkTable.write_sorted``, as (data, offsets,
    counts, hashes) with offsets from 0. The file is mapped, not read: only the pages of that
    range come into memory, and leave it when the arrays are dropped."""
    n, total = part_size(path)
    hi = n if hi is None else hi
    at_offsets, at_counts, at_hashes, at_data = part_layout(n)
    if hi <= lo:
        return np.empty(0, np.uint8), np.zeros(1, np.int64), np.empty(0, np.int64), np.empty(0, np.uint64)
    offsets = np.array(np.memmap(path, np.int64, "r", offset=at_offsets + 8 * lo, shape=(hi - lo + 1,)))
    counts = np.memmap(path, np.int64, "r", offset=at_counts + 8 * lo, shape=(hi - lo,))
    hashes = np.memmap(path, np.uint64, "r", offset=at_hashes + 8 * lo, shape=(hi - lo,))
    first, last = int(offsets[0]), int(offsets[hi - lo])
    data = np.memmap(path, np.uint8, "r", offset=at_data + first, shape=(last - first,)) \
        if last > first else np.empty(0, np.uint8)
    return data, offsets - first, counts, hashes


def part_hash_index(path, boundaries):
    """For each hash in ``boundaries`` (ascending), the first chunk of the part whose hash is at
    least that: where the part's hash ranges start. Reads only the pages a binary search needs."""
    n, total = part_size(path)
    if n == 0:
        return np.zeros(len(boundaries), np.int64)
    hashes = np.memmap(path, np.uint64, "r", offset=part_layout(n)[2], shape=(n,))
    return np.searchsorted(hashes, np.asarray(boundaries, dtype=np.uint64), side="left")


cdef struct Part:
    const uint8_t* data
    const int64_t* offsets
    const int64_t* counts
    const uint64_t* hashes
    Py_ssize_t n, i


def merge_into(parts, data, offsets, counts, hashes, Py_ssize_t k0=0):
    """Merge tables sorted by (hash, bytes), each (data, offsets, counts, hashes), into the
    output arrays from chunk k0 on (offsets[k0] must be set), summing the counts of equal
    chunks. The outputs must have room for every chunk and byte of the parts. Returns the
    number of chunks written, counting from 0; OverflowError if a sum would pass int64. A k-way
    merge: each step takes the smallest head of the k parts (k is small: the workers' files)."""
    cdef Py_ssize_t k = len(parts), j, best, out = k0
    cdef vector[Part] heads
    cdef const uint8_t[::1] d
    cdef const int64_t[::1] o, c
    cdef const uint64_t[::1] h
    cdef uint8_t[::1] od = data
    cdef int64_t[::1] oo = offsets, oc = counts
    cdef uint64_t[::1] oh = hashes
    cdef Part part
    cdef uint8_t empty = 0
    keep = []                                    # the memoryviews stay alive while we merge
    for a in parts:
        d, o, c, h = a[0], a[1], a[2], a[3]
        keep.append((d, o, c, h))
        part.data = &d[0] if d.shape[0] else &empty
        part.offsets, part.counts = &o[0], (&c[0] if c.shape[0] else NULL)
        part.hashes = &h[0] if h.shape[0] else NULL
        part.n, part.i = c.shape[0], 0
        if part.n:
            heads.push_back(part)
    cdef size_t length
    cdef int64_t count = 0
    cdef bint overflow = False
    with nogil:
        while heads.size():
            best = 0
            for j in range(1, <Py_ssize_t>heads.size()):
                if order_of(&heads[j], &heads[best]) < 0:
                    best = j
            length = head_length(&heads[best])
            if out > k0 and same_chunk(&heads[best], oh[out - 1], &od[oo[out - 1]], oo[out] - oo[out - 1]):
                count = heads[best].counts[heads[best].i]             # equal to the last one out
                if sum_overflows(oc[out - 1], count):
                    overflow = True
                    break
                oc[out - 1] += count
            else:
                if length:
                    memcpy(&od[oo[out]], heads[best].data + heads[best].offsets[heads[best].i], length)
                oo[out + 1] = oo[out] + length
                oc[out] = heads[best].counts[heads[best].i]
                oh[out] = heads[best].hashes[heads[best].i]
                out += 1
            heads[best].i += 1
            if heads[best].i == heads[best].n:
                heads.erase(heads.begin() + best)
    if overflow:
        raise count_overflow(data[oo[out - 1]:oo[out]], oc[out - 1], count)
    return out - k0


cdef inline size_t head_length(const Part* p) noexcept nogil:
    return p.offsets[p.i + 1] - p.offsets[p.i]


cdef inline int order_of(const Part* a, const Part* b) noexcept nogil:
    return compare(a.hashes[a.i], a.data + a.offsets[a.i], head_length(a),
                   b.hashes[b.i], b.data + b.offsets[b.i], head_length(b))


cdef inline bint same_chunk(const Part* p, uint64_t h, const uint8_t* data, size_t length) noexcept nogil:
    return p.hashes[p.i] == h and head_length(p) == length and \
        (length == 0 or memcmp(p.data + p.offsets[p.i], data, length) == 0)


def merge_sorted(a, b):
    """Two tables sorted by (hash, bytes), each (data, offsets, counts, hashes), as one."""
    return merge_tables([a, b])


def merge_tables(parts):
    """Tables sorted by (hash, bytes) as one, in new arrays (whose unused tails cost nothing:
    they are never written, so never paged in)."""
    n = sum(len(p[2]) for p in parts)
    total = sum(len(p[0]) for p in parts)
    data, offsets = np.empty(total, np.uint8), np.empty(n + 1, np.int64)
    counts, hashes = np.empty(n, np.int64), np.empty(n, np.uint64)
    offsets[0] = 0
    k = merge_into(parts, data, offsets, counts, hashes)
    return data[:offsets[k]], offsets[:k + 1], counts[:k], hashes[:k]
