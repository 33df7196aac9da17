# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Texts measured for the quality report (quality/report.py): the UTF-8 bytes and the ``str.split()``
words of each str, in one C loop over its canonical representation (PEP 393), without the GIL;
and token ids counted into a table of counts (``count_ids``).

The invariant: ``words[i]`` is the number of characters of ``texts[i]`` that are no space
(``Py_UNICODE_ISSPACE``, the very test ``str.split()`` makes) and follow a space, or start the
text when ``after_space[i]``; so the words of a document given in pieces, each later piece's
``after_space`` saying whether the text before it ended in a space, add up to
``len(document.split())``. ``sizes[i]`` is the length of the text's UTF-8, a lone surrogate
counted 3 bytes (as the U+FFFD the encoder puts in its place, and ``"surrogatepass"``). Spaces
are ``SPACE``, a flag per code point of the Basic Multilingual Plane made at import from
``Py_UNICODE_ISSPACE`` (no code point past it is a space: tests check it on this Python); Latin-1
text (one byte per code point, the most common) is told by compares the compiler vectorizes,
checked against SPACE at import.
"""
import numpy as np
cimport numpy as cnp
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t

cnp.import_array()

cdef extern from "Python.h":
    int PyUnicode_READY(object s) except -1        # the canonical form made (a no-op since Python 3.12)
    # a lookup in CPython's tables (a macro over _PyUnicode_IsWhitespace): no Python object, no GIL
    bint Py_UNICODE_ISSPACE(Py_UCS4 ch) nogil

cdef extern from *:
    """
    /* Spaces below U+0100 by compares, so that the Latin-1 loop vectorizes: \t \n \v \f \r,
       \x1c-\x1f, " ", U+0085, U+00A0 (checked against CPython's own test at import). */
    static inline unsigned bpe_latin1_space(unsigned char c) {
        return ((unsigned char)(c - 9) < 5) | ((unsigned char)(c - 28) < 5) | (c == 0x85) | (c == 0xA0);
    }
    #define BPE_WIDTH(c) (1u + ((c) >= 0x80) + ((c) >= 0x800) + ((c) >= 0x10000))
    /* The UTF-8 bytes and words of n Latin-1 code points (the module docstring's rule): each word
       start found from its two characters, nothing carried from one character to the next,
       counted in 32-bit blocks, so that the compiler vectorizes the loop. */
    static void bpe_measure_latin1(const uint8_t* s, Py_ssize_t n, int after_space, int64_t* size,
                                   int64_t* words) {
        int64_t count = 0, bytes = 0;
        Py_ssize_t i = 1, end;
        if (n == 0) { *size = 0; *words = 0; return; }
        while (i < n) {
            uint32_t block_count = 0, block_bytes = 0;
            end = n - i > 65536 ? i + 65536 : n;
            for (; i < end; i++) {
                block_count += bpe_latin1_space(s[i - 1]) & (bpe_latin1_space(s[i]) ^ 1u);
                block_bytes += 1u + (s[i] >> 7);
            }
            count += block_count;
            bytes += block_bytes;
        }
        *words = count + (after_space && !bpe_latin1_space(s[0]));
        *size = bytes + 1 + (s[0] >> 7);
    }
    /* The same for 2 or 4 bytes per code point, a space looked up in ``space`` (one flag per
       code point below 0x10000; none above is a space). */
    #define BPE_MEASURE_WIDE(NAME, T)                                                              \
    static void NAME(const T* s, Py_ssize_t n, int after_space, int64_t* size, int64_t* words,     \
                     const uint8_t* space) {                                                       \
        int64_t count = 0, bytes = 0;                                                              \
        unsigned before = after_space != 0, here;                                                  \
        for (Py_ssize_t i = 0; i < n; i++) {                                                       \
            uint32_t c = s[i];                                                                     \
            here = c < 0x10000 ? space[c] : 0u;                                                    \
            count += before & (here ^ 1u);                                                         \
            before = here;                                                                         \
            bytes += BPE_WIDTH(c);                                                                 \
        }                                                                                          \
        *size = bytes;                                                                             \
        *words = count;                                                                            \
    }
    BPE_MEASURE_WIDE(bpe_measure_ucs2, uint16_t)
    BPE_MEASURE_WIDE(bpe_measure_ucs4, uint32_t)
    """
    unsigned bpe_latin1_space(uint8_t c) noexcept nogil
    void bpe_measure_latin1(const uint8_t* s, Py_ssize_t n, int after_space, int64_t* size,
                            int64_t* words) noexcept nogil
    void bpe_measure_ucs2(const uint16_t* s, Py_ssize_t n, int after_space, int64_t* size, int64_t* words,
                          const uint8_t* space) noexcept nogil
    void bpe_measure_ucs4(const uint32_t* s, Py_ssize_t n, int after_space, int64_t* size, int64_t* words,
                          const uint8_t* space) noexcept nogil


cdef uint8_t SPACE[0x10000]         # SPACE[c]: is code point c (below 0x10000) a space, as str.split() says
cdef Py_UCS4 _c
for _c in range(0x10000):
    SPACE[_c] = Py_UNICODE_ISSPACE(_c)
    if _c < 0x100 and bpe_latin1_space(<uint8_t>_c) != SPACE[_c]:
        raise ImportError(f"bpe_fast.quality._measure: U+{_c:04X} is {'a' if SPACE[_c] else 'no'} space in this Python's "
                          f"Unicode, not in bpe_latin1_space: update _measure.pyx")


def measure_texts(list texts, const uint8_t[::1] after_space):
    """``(sizes, words)``: int64 arrays, the UTF-8 bytes and the str.split() words of each text
    (module docstring); ``after_space[i]`` (0 or 1) says whether text i starts after a space."""
    cdef Py_ssize_t n = len(texts), i, length
    if after_space.shape[0] != n:
        raise ValueError(f"after_space has {after_space.shape[0]} values for {n} texts")
    sizes = np.empty(n, np.int64)
    words = np.empty(n, np.int64)
    cdef int64_t[::1] size_of = sizes, words_of = words
    cdef unsigned int kind
    cdef void* data
    for i in range(n):
        text = texts[i]
        if not isinstance(text, str):
            raise TypeError(f"text {i} is {type(text).__name__}, not str")
        PyUnicode_READY(text)
        kind, data, length = PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)
        with nogil:
            if kind == 1:
                bpe_measure_latin1(<const uint8_t*>data, length, after_space[i], &size_of[i], &words_of[i])
            elif kind == 2:
                bpe_measure_ucs2(<const uint16_t*>data, length, after_space[i], &size_of[i], &words_of[i], SPACE)
            else:
                bpe_measure_ucs4(<const uint32_t*>data, length, after_space[i], &size_of[i], &words_of[i], SPACE)
    return sizes, words


def count_ids(const uint32_t[::1] ids, int64_t[::1] counts):
    """``counts[i] += 1`` for every id i of ``ids`` (np.bincount without its int64 copy of the
    ids, in one pass); an id past the table is a ValueError, the ids before it counted."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef uint32_t size = <uint32_t>min(counts.shape[0], 0xFFFFFFFF), bad = 0
    cdef bint failed = False
    with nogil:
        for i in range(n):
            if ids[i] >= size:
                bad, failed = ids[i], True
                break
            counts[ids[i]] += 1
    if failed:
        raise ValueError(f"id {bad} is past the table of {counts.shape[0]} counts")
