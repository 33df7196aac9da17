# cython: language_level=3
"""Python str -> UTF-8 without the GIL, the bytes tiktoken encodes.

A str is read through its canonical representation (PEP 393): an ASCII str already is UTF-8 and
is used in place; the others (1, 2 or 4 bytes per code point) are converted into a buffer.
Surrogates, which UTF-8 cannot hold, follow ``Tokenizer._utf8`` (tiktoken's fallback): a high
surrogate directly followed by a low one becomes the character the pair encodes in UTF-16, any
other surrogate becomes U+FFFD.

A ``TextRef`` holds no reference: whoever fills it keeps the str alive while it is read.
"""
from libc.stdint cimport uint8_t, uint16_t, uint32_t

cdef extern from *:
    """
    /* The canonical data of a str: kind 0 means ASCII (already UTF-8), else bytes per code point. */
    static int bpe_str_view(PyObject* s, const void** data, Py_ssize_t* length, int* kind) {
    #if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(s) < 0) return -1;
    #endif
        *length = PyUnicode_GET_LENGTH(s);
        *data = PyUnicode_DATA(s);
        *kind = PyUnicode_IS_ASCII(s) ? 0 : (int)PyUnicode_KIND(s);
        return 0;
    }
    """
    int bpe_str_view(object s, const void** data, Py_ssize_t* length, int* kind) except -1


cdef struct TextRef:
    const void* data
    Py_ssize_t length          # code points (= bytes when kind is 0)
    int kind                   # 0: ASCII; 1, 2, 4: bytes per code point


cdef inline size_t utf8_capacity(const TextRef* t) noexcept nogil:
    """Bytes enough for the UTF-8 of t: a code point takes at most 2, 3, 4 bytes for kinds 1, 2,
    4 (a surrogate pair, two code points, takes 4)."""
    return <size_t>t.length * (1 if t.kind == 0 else t.kind + (1 if t.kind < 4 else 0))


cdef inline size_t put_utf8(uint8_t* out, uint32_t c) noexcept nogil:
    if c < 0x80:
        out[0] = <uint8_t>c
        return 1
    if c < 0x800:
        out[0] = <uint8_t>(0xC0 | (c >> 6))
        out[1] = <uint8_t>(0x80 | (c & 0x3F))
        return 2
    if c < 0x10000:
        out[0] = <uint8_t>(0xE0 | (c >> 12))
        out[1] = <uint8_t>(0x80 | ((c >> 6) & 0x3F))
        out[2] = <uint8_t>(0x80 | (c & 0x3F))
        return 3
    out[0] = <uint8_t>(0xF0 | (c >> 18))
    out[1] = <uint8_t>(0x80 | ((c >> 12) & 0x3F))
    out[2] = <uint8_t>(0x80 | ((c >> 6) & 0x3F))
    out[3] = <uint8_t>(0x80 | (c & 0x3F))
    return 4


cdef inline uint32_t code_point(const void* data, int kind, size_t i) noexcept nogil:
    if kind == 1:
        return (<const uint8_t*>data)[i]
    if kind == 2:
        return (<const uint16_t*>data)[i]
    return (<const uint32_t*>data)[i]


cdef inline size_t to_utf8(const TextRef* t, uint8_t* out) noexcept nogil:
    """Write the UTF-8 of t (kind 1, 2 or 4) to out (utf8_capacity bytes); return its length."""
    cdef size_t i = 0, k = 0, n = <size_t>t.length
    cdef uint32_t c, d
    while i < n:
        c = code_point(t.data, t.kind, i)
        i += 1
        if c < 0x80:
            out[k] = <uint8_t>c
            k += 1
            continue
        if 0xD800 <= c < 0xE000:             # a surrogate: a pair becomes one character
            d = code_point(t.data, t.kind, i) if i < n else 0
            if c < 0xDC00 and 0xDC00 <= d < 0xE000:
                c = 0x10000 + ((c - 0xD800) << 10) + (d - 0xDC00)
                i += 1
            else:
                c = 0xFFFD
        k += put_utf8(out + k, c)
    return k
