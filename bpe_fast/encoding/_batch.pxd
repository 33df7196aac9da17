# cython: language_level=3
"""A list of texts encoded on threads, block by block.

Invariant: every block of ``block`` texts (the last one shorter) is taken by exactly one worker
(``blocks_take``: an atomic counter), and a worker encodes the texts of its blocks in order, its
ids for each block one run in its own buffer, noted in its ``BlockLog``; so ``blocks_gather``
can put every worker's runs in text order, text i's ids at offsets[i], whichever thread took
them and however fast. Once a text holding a disallowed special token is found, ``first_bad``
is the first such text found, and no block past it is taken (nothing is returned then).
"""
from libc.stdint cimport int64_t, uint32_t
from libc.string cimport memcpy
from libcpp.atomic cimport atomic
from libcpp.vector cimport vector


cdef struct Blocks:
    Py_ssize_t n                             # texts
    Py_ssize_t block                         # texts per block
    atomic[Py_ssize_t] next_block            # the next block no worker has taken
    atomic[Py_ssize_t] first_bad             # the first text found holding a disallowed token, or n


cdef struct BlockLog:                        # one worker's:
    vector[Py_ssize_t] blocks                # the blocks it encoded ...
    vector[size_t] at                        # ... and where each one's ids start in its ids


cdef inline void blocks_plan(Blocks* b, Py_ssize_t n, Py_ssize_t block) noexcept nogil:
    """n texts in blocks of ``block``, none taken, none bad."""
    b.n, b.block = n, block
    b.next_block.store(0)
    b.first_bad.store(n)


cdef inline Py_ssize_t blocks_take(Blocks* b) noexcept nogil:
    """The next block for the calling worker, or -1: none is left, or it lies past a text
    found bad."""
    cdef Py_ssize_t k = b.next_block.fetch_add(1)
    if k * b.block >= b.n or k * b.block > b.first_bad.load():
        return -1
    return k


cdef inline void blocks_log(BlockLog* log, Py_ssize_t k, size_t at) noexcept nogil:
    """The worker's ids of block k start at ``at``."""
    log.blocks.push_back(k)
    log.at.push_back(at)


cdef inline void blocks_note_bad(Blocks* b, Py_ssize_t i) noexcept nogil:
    """Text i holds a disallowed special token: keep the first such text."""
    cdef Py_ssize_t seen = b.first_bad.load()
    while i < seen and not b.first_bad.compare_exchange_weak(seen, i):
        pass


cdef inline Py_ssize_t blocks_first_bad(Blocks* b) noexcept nogil:
    """The first text found holding a disallowed special token, or -1."""
    cdef Py_ssize_t bad = b.first_bad.load()
    return bad if bad < b.n else -1


cdef inline void blocks_gather(const Blocks* b, const BlockLog* log, const uint32_t* ids, const int64_t* off,
                               uint32_t* out) noexcept nogil:
    """Copy one worker's ids (``ids``, its blocks as ``log`` says) to where they go in ``out``:
    text i's ids at off[i]."""
    cdef size_t j, first, count
    for j in range(log.blocks.size()):
        first = log.blocks[j] * b.block
        count = off[min(<size_t>b.n, first + <size_t>b.block)] - off[first]
        if count:
            memcpy(out + off[first], ids + log.at[j], count * sizeof(uint32_t))
