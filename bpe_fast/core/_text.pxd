# cython: language_level=3
"""Python str -> UTF-8 without the GIL, the bytes tiktoken encodes.

A str is read through its canonical representation (PEP 393): an ASCII str already is UTF-8 and
is used in place; the others (1, 2 or 4 bytes per code point) are converted into a buffer.
Surrogates, which UTF-8 cannot hold, follow ``Tokenizer._utf8`` (tiktoken's fallback): a high
surrogate directly followed by a low one becomes the character the pair encodes in UTF-16, any
other surrogate becomes U+FFFD.

A ``TextRef`` holds no reference: whoever fills it keeps the str alive while it is read.

A long str is converted a block at a time into a thread's ``Utf8Buffer``, kept between calls,
cut only where no chunk of the named patterns can go on across the cut (pretokenize/_scan.pxd's
``next_cut``), so the blocks encode to what the whole would.
"""
from libc.stdint cimport uint8_t, uint16_t, uint32_t
from libc.stdlib cimport free, malloc

from ._cpu cimport prefetch  # (and _cpu.pxd's C block, with BPE_CPU_LEVEL, before this one's)

cdef extern from *:
    """
    /* The text of a str as UTF-8 bytes when it has them (kind 0: ASCII, or the UTF-8 CPython
       keeps beside a str once something asked for it, as PyUnicode_AsUTF8 does), else its
       canonical data (kind: bytes per code point). Reading the kept UTF-8 saves converting a
       text encoded again and again; it is read, never made here (making it would keep a copy
       alive on the caller's str). The field is CPython's own (PyCompactUnicodeObject.utf8): read
       only where its layout is known, and not on the free-threaded build, which sets it
       atomically. */
    static int bpe_str_view(PyObject* s, const void** data, Py_ssize_t* length, int* kind) {
    #if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(s) < 0) return -1;
    #endif
    #if !defined(Py_LIMITED_API) && !defined(Py_GIL_DISABLED) && PY_VERSION_HEX >= 0x030900F0 && PY_VERSION_HEX < 0x030F0000
        if (!PyUnicode_IS_ASCII(s) && PyUnicode_IS_COMPACT(s) && ((PyCompactUnicodeObject*)s)->utf8 != NULL) {
            *data = ((PyCompactUnicodeObject*)s)->utf8;
            *length = ((PyCompactUnicodeObject*)s)->utf8_length;
            *kind = 0;
            return 0;
        }
    #endif
        *length = PyUnicode_GET_LENGTH(s);
        *data = PyUnicode_DATA(s);
        *kind = PyUnicode_IS_ASCII(s) ? 0 : (int)PyUnicode_KIND(s);
        return 0;
    }
    """
    int bpe_str_view(object s, const void** data, Py_ssize_t* length, int* kind) except -1

cdef extern from *:
    """
    #include <string.h>
    #include <stdint.h>
    #if defined(__SSE2__) || defined(_M_X64)
    #include <emmintrin.h>
    #define BPE_SSE2 1
    #endif
    static inline size_t bpe_put_utf8(unsigned char* out, uint32_t c) {
        if (c < 0x800) {
            out[0] = (unsigned char)(0xC0 | (c >> 6));
            out[1] = (unsigned char)(0x80 | (c & 0x3F));
            return 2;
        }
        if (c < 0x10000) {
            out[0] = (unsigned char)(0xE0 | (c >> 12));
            out[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
            out[2] = (unsigned char)(0x80 | (c & 0x3F));
            return 3;
        }
        out[0] = (unsigned char)(0xF0 | (c >> 18));
        out[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
        out[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        out[3] = (unsigned char)(0x80 | (c & 0x3F));
        return 4;
    }
    /* The UTF-8 of n code points of the given kind (1, 2, 4) at data; its length. A loop per
       kind over blocks of code points (16 bytes of them with SSE2, which every x86-64 has; else
       8): a block of ASCII is copied whole (without SSE2 tested as a machine word: the mask has
       the same bits in every lane, whatever the byte order), with SSE2 a block of kind 2 whose
       characters all take 2 bytes (Latin, Greek, Cyrillic, Hebrew, Arabic...) is written whole,
       and any other block character by character, without testing it again. Surrogates as
       to_utf8 says. */
    #define BPE_SURROGATE_STEP(p) \
        if (c >= 0xD800 && c < 0xE000) { \
            uint32_t d = i < n ? (uint32_t)p[i] : 0; \
            if (c < 0xDC00 && d >= 0xDC00 && d < 0xE000) { \
                c = 0x10000 + ((c - 0xD800) << 10) + (d - 0xDC00); \
                i++; \
            } else { \
                c = 0xFFFD; \
            } \
        }
    /* the code points before stop (a surrogate pair may end one past it), one at a time */
    #define BPE_BLOCK_BY_CHARACTER(p) \
        while (i < stop) { \
            c = p[i++]; \
            if (c < 0x80) { out[k++] = (unsigned char)c; continue; } \
            BPE_SURROGATE_STEP(p) \
            k += bpe_put_utf8(out + k, c); \
        }
    /* With AVX-512 VBMI2 (asked once, bpe_utf8_wide): 16 code points at a time, whatever their
       widths. Each lane's UTF-8 is put in a 32-bit word, low byte first (a branch-free choice
       among the 1-4 byte forms), the words' bytes that belong to the UTF-8 are packed together
       (VBMI2's byte compress; the mask from the lanes' widths) and exactly those are stored (a
       masked store: nothing past the UTF-8 is written, as the packer's exact-size buffers need).
       A block holding a surrogate stops the run: the caller takes it a character at a time. */
    #if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(BPE_NO_WIDE_SIMD)
    #include <immintrin.h>
    #define BPE_UTF8_WIDE 1
    #define BPE_UTF8_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi2,bmi,bmi2,popcnt")))
    BPE_UTF8_TARGET
    static inline size_t bpe_utf8_of_16(__m512i c, unsigned char* out) {
        const __m512i low6 = _mm512_set1_epi32(0x3F), tail = _mm512_set1_epi32(0x80);
        __mmask16 two = _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(0x80));
        __mmask16 three = _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(0x800));
        __mmask16 four = _mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(0x10000));
        /* the continuation bytes 10xxxxxx of bits 0-5, 6-11, 12-17 */
        __m512i t0 = _mm512_or_si512(_mm512_and_si512(c, low6), tail);
        __m512i t1 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(c, 6), low6), tail);
        __m512i t2 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(c, 12), low6), tail);
        __m512i w2 = _mm512_or_si512(_mm512_or_si512(_mm512_srli_epi32(c, 6), _mm512_set1_epi32(0xC0)),
                                     _mm512_slli_epi32(t0, 8));
        __m512i w3 = _mm512_or_si512(_mm512_or_si512(_mm512_srli_epi32(c, 12), _mm512_set1_epi32(0xE0)),
                                     _mm512_or_si512(_mm512_slli_epi32(t1, 8), _mm512_slli_epi32(t0, 16)));
        __m512i w4 = _mm512_or_si512(_mm512_or_si512(_mm512_srli_epi32(c, 18), _mm512_set1_epi32(0xF0)),
                                     _mm512_or_si512(_mm512_slli_epi32(t2, 8),
                                                     _mm512_or_si512(_mm512_slli_epi32(t1, 16), _mm512_slli_epi32(t0, 24))));
        __m512i w = _mm512_mask_mov_epi32(_mm512_mask_mov_epi32(_mm512_mask_mov_epi32(c, two, w2), three, w3), four, w4);
        /* byte 4j + b of the words is UTF-8 if lane j takes more than b bytes */
        uint64_t keep = 0x1111111111111111ULL | _pdep_u64(two, 0x2222222222222222ULL)
                        | _pdep_u64(three, 0x4444444444444444ULL) | _pdep_u64(four, 0x8888888888888888ULL);
        size_t count = (size_t)_mm_popcnt_u64(keep);
        _mm512_mask_storeu_epi8(out, _bzhi_u64(~0ULL, (unsigned)count), _mm512_maskz_compress_epi8(keep, w));
        return count;
    }
    /* Blocks of 16 code points of the kind from *at while no surrogate is among them: their
       UTF-8 to out; its length (*at: past the blocks taken). A block all ASCII is stored as its
       low bytes, and runs of ASCII go 64 (kind 1) or 32 (kind 2) at a time: code and markup
       are mostly ASCII even in a str that is not (the converter's time on C sources:
       benchmarks/RESULTS.md, "Encode once (5)"). */
    BPE_UTF8_TARGET
    static size_t bpe_utf8_blocks(const void* data, int kind, size_t n, size_t* at, unsigned char* out) {
        size_t i = *at, k = 0;
        const __m256i surrogate16 = _mm256_set1_epi16((short)0xD800), span16 = _mm256_set1_epi16(0x800);
        const __m512i surrogate32 = _mm512_set1_epi32(0xD800), span32 = _mm512_set1_epi32(0x800);
        __m512i c;
        while (i + 16 <= n) {
            if (kind == 1) {
                while (i + 64 <= n) {                           /* runs of ASCII, 64 at a time */
                    __m512i w = _mm512_loadu_si512((const void*)((const uint8_t*)data + i));
                    if (_mm512_movepi8_mask(w))
                        break;
                    _mm512_storeu_si512((void*)(out + k), w);
                    i += 64; k += 64;
                }
                if (i + 16 > n)
                    break;
                __m128i v = _mm_loadu_si128((const __m128i*)((const uint8_t*)data + i));
                if (_mm_movemask_epi8(v) == 0) {                /* all ASCII: as they are */
                    _mm_storeu_si128((__m128i*)(out + k), v);
                    i += 16; k += 16;
                    continue;
                }
                c = _mm512_cvtepu8_epi32(v);
            } else if (kind == 2) {
                while (i + 32 <= n) {                           /* runs of ASCII, 32 at a time */
                    __m512i w = _mm512_loadu_si512((const void*)((const uint16_t*)data + i));
                    if (_mm512_cmpge_epu16_mask(w, _mm512_set1_epi16(0x80)))
                        break;
                    _mm256_storeu_si256((__m256i*)(out + k), _mm512_cvtepi16_epi8(w));
                    i += 32; k += 32;
                }
                if (i + 16 > n)
                    break;
                __m256i v = _mm256_loadu_si256((const __m256i*)((const uint16_t*)data + i));
                if (_mm256_cmpge_epu16_mask(v, _mm256_set1_epi16(0x80)) == 0) {
                    _mm_storeu_si128((__m128i*)(out + k), _mm256_cvtepi16_epi8(v));
                    i += 16; k += 16;
                    continue;
                }
                if (_mm256_cmplt_epu16_mask(_mm256_sub_epi16(v, surrogate16), span16))
                    break;
                c = _mm512_cvtepu16_epi32(v);
            } else {
                c = _mm512_loadu_si512((const void*)((const uint32_t*)data + i));
                if (_mm512_cmpge_epu32_mask(c, _mm512_set1_epi32(0x80)) == 0) {    /* all ASCII */
                    _mm_storeu_si128((__m128i*)(out + k), _mm512_cvtepi32_epi8(c));
                    i += 16; k += 16;
                    continue;
                }
                if (_mm512_cmplt_epu32_mask(_mm512_sub_epi32(c, surrogate32), span32))
                    break;
            }
            k += bpe_utf8_of_16(c, out + k);
            i += 16;
        }
        *at = i;
        return k;
    }
    /* 1 where the processor has what bpe_utf8_blocks needs, else 0 (bpe_utf8_wide; bpe_utf8_wide_set
       for tests: _cpu.pxd's BPE_CPU_LEVEL). */
    static inline int bpe_utf8_wide_best(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
               && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi2")
               && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt");
    }
    BPE_CPU_LEVEL(bpe_utf8_wide, bpe_utf8_wide_best)
    #else
    #define BPE_UTF8_WIDE 0
    static inline int bpe_utf8_wide(void) { return 0; }
    static inline int bpe_utf8_wide_set(int on) { (void)on; return 0; }
    #endif
    static size_t bpe_to_utf8(const void* data, int kind, size_t n, unsigned char* out) {
        size_t i = 0, k = 0, stop;
        uint64_t w;
        uint32_t c;
        (void)w;
    #if BPE_UTF8_WIDE
        if (bpe_utf8_wide()) {
            while (i < n) {
                k += bpe_utf8_blocks(data, kind, n, &i, out + k);
                stop = i + 16 < n ? i + 16 : n;         /* a block with a surrogate, or the tail */
                if (kind == 1) {
                    const uint8_t* p = (const uint8_t*)data;
                    BPE_BLOCK_BY_CHARACTER(p)
                } else if (kind == 2) {
                    const uint16_t* p = (const uint16_t*)data;
                    BPE_BLOCK_BY_CHARACTER(p)
                } else {
                    const uint32_t* p = (const uint32_t*)data;
                    BPE_BLOCK_BY_CHARACTER(p)
                }
            }
            return k;
        }
    #endif
        if (kind == 1) {
            const uint8_t* p = (const uint8_t*)data;
            while (i < n) {
    #ifdef BPE_SSE2
                stop = i + 16 < n ? i + 16 : n;
                if (i + 16 <= n) {
                    __m128i v = _mm_loadu_si128((const __m128i*)(p + i));
                    if (_mm_movemask_epi8(v) == 0) {
                        _mm_storeu_si128((__m128i*)(out + k), v);
                        i += 16; k += 16;
                        continue;
                    }
                }
    #else
                stop = i + 8 < n ? i + 8 : n;
                if (i + 8 <= n) {
                    memcpy(&w, p + i, 8);
                    if (!(w & 0x8080808080808080ULL)) {
                        memcpy(out + k, p + i, 8);
                        i += 8; k += 8;
                        continue;
                    }
                }
    #endif
                BPE_BLOCK_BY_CHARACTER(p)
            }
        } else if (kind == 2) {
            const uint16_t* p = (const uint16_t*)data;
            while (i < n) {
    #ifdef BPE_SSE2
                stop = i + 8 < n ? i + 8 : n;
                if (i + 8 <= n) {
                    __m128i v = _mm_loadu_si128((const __m128i*)(p + i));
                    /* all 8 below 0x80 (c + 0x7F80, saturated, keeps its top bit clear): their
                       low bytes, packed */
                    if ((_mm_movemask_epi8(_mm_adds_epu16(v, _mm_set1_epi16(0x7F80))) & 0xAAAA) == 0) {
                        _mm_storel_epi64((__m128i*)(out + k), _mm_packus_epi16(v, v));
                        i += 8; k += 8;
                        continue;
                    }
                    /* all 8 in 0x80..0x7FF (c - 0x80 below 0x780, the same test): two bytes
                       each, 110xxxxx 10xxxxxx, the first in the low byte of each lane */
                    __m128i x = _mm_sub_epi16(v, _mm_set1_epi16(0x80));
                    if ((_mm_movemask_epi8(_mm_adds_epu16(x, _mm_set1_epi16(0x7880))) & 0xAAAA) == 0) {
                        __m128i lead = _mm_or_si128(_mm_srli_epi16(v, 6), _mm_set1_epi16(0xC0));
                        __m128i tail = _mm_or_si128(_mm_and_si128(v, _mm_set1_epi16(0x3F)), _mm_set1_epi16(0x80));
                        _mm_storeu_si128((__m128i*)(out + k), _mm_or_si128(lead, _mm_slli_epi16(tail, 8)));
                        i += 8; k += 16;
                        continue;
                    }
                    /* no surrogate among the 8 (c - 0xD800 is 0x800 or more): each written as a
                       4-byte word, its length added, with no branch on it (by character, text
                       mixing scripts and spaces mispredicts most of them). A word can reach 3
                       bytes past the block's UTF-8: so only with 3 characters or more after it,
                       whose bytes are written there next (out is sized exactly: _pack.pyx). */
                    __m128i s = _mm_sub_epi16(v, _mm_set1_epi16((short)0xD800));
                    if (i + 11 <= n
                            && _mm_movemask_epi8(_mm_cmpeq_epi16(_mm_srli_epi16(s, 11), _mm_setzero_si128())) == 0) {
                        for (int j = 0; j < 8; j++) {
                            uint32_t c = p[i + j];
                            uint32_t two = c >= 0x80, three = c >= 0x800;
                            uint32_t w1 = c;
                            uint32_t w2 = (0xC0 | (c >> 6)) | ((0x80 | (c & 0x3F)) << 8);
                            uint32_t w3 = (0xE0 | (c >> 12)) | ((0x80 | ((c >> 6) & 0x3F)) << 8)
                                | ((0x80 | (c & 0x3F)) << 16);
                            uint32_t w = (w3 & (0u - three)) | (w2 & (0u - (two & !three))) | (w1 & (0u - !two));
                            memcpy(out + k, &w, 4);
                            k += 1 + two + three;
                        }
                        i += 8;
                        continue;
                    }
                }
    #else
                stop = i + 4 < n ? i + 4 : n;
                if (i + 4 <= n) {
                    memcpy(&w, p + i, 8);
                    if (!(w & 0xFF80FF80FF80FF80ULL)) {
                        out[k] = (unsigned char)p[i]; out[k + 1] = (unsigned char)p[i + 1];
                        out[k + 2] = (unsigned char)p[i + 2]; out[k + 3] = (unsigned char)p[i + 3];
                        i += 4; k += 4;
                        continue;
                    }
                }
    #endif
                BPE_BLOCK_BY_CHARACTER(p)
            }
        } else {
            const uint32_t* p = (const uint32_t*)data;
            while (i < n) {
                stop = i + 4 < n ? i + 4 : n;
    #ifdef BPE_SSE2
                if (i + 4 <= n) {   /* 4 below 0x80 (code points are below 2^31: signed compare) */
                    __m128i v = _mm_loadu_si128((const __m128i*)(p + i));
                    if (_mm_movemask_epi8(_mm_cmpgt_epi32(v, _mm_set1_epi32(0x7F))) == 0) {
                        __m128i b = _mm_packus_epi16(_mm_packs_epi32(v, v), v);
                        int four = _mm_cvtsi128_si32(b);
                        memcpy(out + k, &four, 4);
                        i += 4; k += 4;
                        continue;
                    }
                }
    #else
                if (i + 2 <= n) {
                    memcpy(&w, p + i, 8);
                    if (!(w & 0xFFFFFF80FFFFFF80ULL)) {
                        out[k] = (unsigned char)p[i]; out[k + 1] = (unsigned char)p[i + 1];
                        i += 2; k += 2;
                        continue;
                    }
                }
    #endif
                BPE_BLOCK_BY_CHARACTER(p)
            }
        }
        return k;
    }
    /* The exact length of that UTF-8, or -1 if a code point is a surrogate (which has none):
       a branch-free loop per kind, which the compiler vectorizes. */
    static inline Py_ssize_t bpe_utf8_size(const void* data, int kind, size_t n) {
        size_t i, total = n;
        uint32_t surrogates = 0;
        if (kind == 1) {
            const uint8_t* p = (const uint8_t*)data;
            for (i = 0; i < n; i++) total += p[i] >> 7;
            return (Py_ssize_t)total;
        }
        if (kind == 2) {
            const uint16_t* p = (const uint16_t*)data;
            for (i = 0; i < n; i++) {
                uint32_t c = p[i];
                total += (c >= 0x80) + (c >= 0x800);
                surrogates |= (uint32_t)(c - 0xD800) < 0x800;
            }
        } else {
            const uint32_t* p = (const uint32_t*)data;
            for (i = 0; i < n; i++) {
                uint32_t c = p[i];
                total += (c >= 0x80) + (c >= 0x800) + (c >= 0x10000);
                surrogates |= (uint32_t)(c - 0xD800) < 0x800;
            }
        }
        return surrogates ? -1 : (Py_ssize_t)total;
    }
    """
    size_t bpe_to_utf8(const void* data, int kind, size_t n, uint8_t* out) nogil
    int utf8_wide "bpe_utf8_wide"() nogil
    int set_utf8_wide "bpe_utf8_wide_set"(int on) nogil
    Py_ssize_t bpe_utf8_size(const void* data, int kind, size_t n) nogil


cdef struct TextRef:
    const void* data
    Py_ssize_t length          # code points, or bytes when kind is 0
    int kind                   # 0: UTF-8 bytes (ASCII, or a str's kept UTF-8); 1, 2, 4: bytes per code point


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
    return bpe_to_utf8(t.data, t.kind, <size_t>t.length, out)


# A thread's UTF-8 buffer, kept between calls: strs that are not ASCII are turned into UTF-8
# there, a block at a time (see next_cut), so it stays small and in the CPU's cache.
cdef enum:
    KEEP_UTF8 = 16 << 20       # bytes of UTF-8 buffer a thread keeps between calls


cdef struct Utf8Buffer:
    uint8_t* data              # not zeroed: only what to_utf8 wrote is read
    size_t size


cdef inline int utf8_room(Utf8Buffer* b, size_t n) noexcept nogil:
    """A buffer of at least n bytes (its content is not kept); -1 if out of memory."""
    if n <= b.size:
        return 0
    free(b.data)
    n = max(n, 2 * b.size)
    b.data = <uint8_t*>malloc(n)
    b.size = n if b.data != NULL else 0
    return 0 if b.data != NULL else -1


cdef inline void utf8_trim(Utf8Buffer* b) noexcept nogil:
    """Give back a buffer over KEEP_UTF8 bytes (one long str that had no place to be cut into
    blocks)."""
    if b.size > KEEP_UTF8:
        free(b.data)
        b.data = NULL
        b.size = 0


cdef inline void utf8_free(Utf8Buffer* b) noexcept nogil:
    free(b.data)
