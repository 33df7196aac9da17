# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Native pre-tokenization for the named patterns (see _scan.pxd): the chunks of UTF-8 text.
(Counting them is _table.pyx's ``ChunkTable``.)"""
import numpy as np
from libc.stdint cimport uint8_t, int64_t

from ._scan cimport FOLD_LIMIT, cuts_at_line_ends, is_native_pattern, scan_next
from ._split cimport Window, has_windows, set_simd_level, simd_level, split_next, window_end, window_reset

from .patterns import NATIVE_IDS

# The named patterns with a native scanner, by name, and its id: read off patterns.PATTERNS.
PATTERN_IDS = NATIVE_IDS


def _simd_level(level=None):
    """Which classifier this module's windows use (0 SSE2, 1 AVX2, 2 AVX-512BW, 3 AVX-512BW with
    letters outside ASCII); with ``level``, use that one from now on (at most what the processor
    has) and return the one before. For tests, which take every route on one machine: each
    extension decides for itself."""
    if level is None:
        return simd_level()
    return set_simd_level(level)


def _native_traits(int pattern):
    """For tests that hold the C side to the table (patterns.PATTERNS): (has a scanner, is split
    by windows where the processor has them, may be cut at line ends), for an id."""
    return is_native_pattern(pattern), has_windows(pattern), cuts_at_line_ends(pattern)


cdef class Scanner:
    """Splits UTF-8 text into the chunks of one named pattern (attributes in _pretok.pxd)."""

    def __cinit__(self, int pattern, const uint8_t[::1] classes, const uint8_t[::1] fold, bint windows=True):
        """windows: read ASCII from bit masks where they can tell (_split.pxd), as every stage
        does; False: the character-at-a-time scanner alone (for tests that compare the two)."""
        if not is_native_pattern(pattern):
            raise ValueError(f"unknown pattern id {pattern}")
        if classes.shape[0] != 0x110000 or fold.shape[0] != FOLD_LIMIT:
            raise ValueError("character tables have the wrong size")
        self.pattern, self.cls, self.fold = pattern, classes, fold
        self.windows = windows and has_windows(pattern)

    def boundaries(self, const unsigned char[::1] data):
        """Byte offsets where chunks end, as an int64 array."""
        cdef size_t n = data.shape[0], i = 0, k = 0
        ends = np.empty(n, dtype=np.int64)
        cdef int64_t[::1] out = ends
        cdef Window window
        if n == 0:
            return ends
        window_reset(&window)
        with nogil:
            while i < n:
                if self.windows:
                    i = split_next(&window, self.pattern, &data[0], n, i, &self.cls[0], &self.fold[0])
                else:
                    i = scan_next(self.pattern, &data[0], n, i, &self.cls[0], &self.fold[0])
                out[k] = i
                k += 1
        return ends[:k]

    def windowed(self, const unsigned char[::1] data):
        """How many of the chunks of data the windows answered (the rest: the scanner); for tests
        and benchmarks that check the windows carry the text they are meant to."""
        cdef size_t n = data.shape[0], i = 0, j, answered = 0
        cdef Window window
        window_reset(&window)
        with nogil:
            while i < n:
                j = window_end(&window, self.pattern, &data[0], n, i, &self.cls[0]) if self.windows else 0
                if j:
                    answered += 1
                else:
                    j = scan_next(self.pattern, &data[0], n, i, &self.cls[0], &self.fold[0])
                i = j
        return answered

    def chunks(self, str text):
        """The chunks of text, as regex.findall would return them."""
        data = text.encode("utf-8")
        ends = self.boundaries(data).tolist()
        return [data[a:b].decode("utf-8") for a, b in zip([0] + ends[:len(ends) - 1], ends)]
