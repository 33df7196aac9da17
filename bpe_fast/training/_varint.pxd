# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""LEB128 varints: how the kernels store the gaps between listed positions.

Invariant: a value is written 7 bits a byte, lowest first; every byte but the last has its top
bit set. So a gap below 128 takes one byte, and any 64-bit value at most ten. One writer
(``bpe_varint_write``, in C so that C++ structs can call it too) makes the bytes; the functions
below write them at a place, append them to a vector, measure or read them. (BPE_VARINT_WRITE,
the writer's loop as a C macro, serves _rewrite.pxd's BpeMade.)
"""
from libc.stdint cimport uint8_t, uint64_t
from libcpp.vector cimport vector

cdef extern from *:
    """
    #include <stddef.h>
    #include <stdint.h>
    /* Write value (a variable: it is used up) at out[k], k counting the bytes written (room for
       10 bytes). A macro, so that a C++ struct writing into a local buffer compiles to what it
       did with the loop written out (a function, even inlined, left calls to memcpy there). */
    #define BPE_VARINT_WRITE(out, k, value) do { \
            while ((value) >= 128) { (out)[(k)++] = (uint8_t)(((value) & 127) | 128); (value) >>= 7; } \
            (out)[(k)++] = (uint8_t)(value); \
        } while (0)

    /* Write value at out (room for 10 bytes); returns the bytes written. */
    static inline size_t bpe_varint_write(uint8_t* out, uint64_t value) {
        size_t k = 0;
        BPE_VARINT_WRITE(out, k, value);
        return k;
    }
    """
    size_t varint_write "bpe_varint_write"(uint8_t* out, uint64_t value) noexcept nogil


cdef inline size_t put_gap(uint8_t* out, size_t at, uint64_t gap) noexcept nogil:
    """Write a gap at out[at] (room reserved beforehand); returns the byte after it."""
    return at + varint_write(out + at, gap)


cdef inline void put_varint(vector[uint8_t]* where, uint64_t gap) noexcept nogil:
    """Append a gap. A byte at a time, so the vector grows as push_back grows it."""
    cdef uint8_t bytes[10]
    cdef size_t k, n = varint_write(bytes, gap)
    for k in range(n):
        where.push_back(bytes[k])


cdef inline int varint_len(uint64_t gap) noexcept nogil:
    """The bytes put_gap writes for gap."""
    cdef int n = 1
    while gap >= 128:
        gap >>= 7
        n += 1
    return n


cdef inline size_t get_varint(const uint8_t* data, size_t i, uint64_t* gap) noexcept nogil:
    """Read the gap at byte i; returns the byte after it."""
    cdef uint64_t value = 0
    cdef int shift = 0
    while data[i] & 128:
        value |= <uint64_t>(data[i] & 127) << shift
        shift += 7
        i += 1
    gap[0] = value | (<uint64_t>data[i] << shift)
    return i + 1
