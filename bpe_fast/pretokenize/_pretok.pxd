# cython: language_level=3
from libc.stdint cimport uint8_t


cdef class Scanner:
    """Splits UTF-8 text into the chunks of one named pattern (_split.pxd, _scan.pxd)."""
    cdef readonly int pattern
    cdef readonly bint windows          # ASCII read from bit masks (_split.pxd); else the scanner alone
    cdef const uint8_t[::1] cls
    cdef const uint8_t[::1] fold
