# cython: language_level=3
"""The front end every stage shares: where the chunk that starts at byte i ends (``split_next``),
for the named patterns. Counting (_table.pyx), encoding (_encode.pyx), BoundlessBPE's runs and
the Scanner all split text through it.

Most text is ASCII, and there the chunks of gpt2, cl100k and o200k follow from each byte's class
and its neighbours'. A ``Window`` covers 64 bytes from ``base``, a byte where a chunk is known to
start (its *anchor*): its bytes are classified into bit masks (bit k: byte base + k), 64 at once
with AVX-512BW, 32 with AVX2 or 16 with SSE2 (every x86-64 has it), whichever the processor has,
and ``window_anchor`` derives from them, with shifts, ands, one addition and a short loop for
digit groups, the bit of every byte where a chunk starts, and the ends of the chunks it vouches
for (``ends``, below). ``window_end`` then gives one end a chunk, clearing the lowest bit: no
branch per character, none per kind of chunk, one instruction from chunk to chunk.

Where the processor has AVX-512 (level 3) the characters of 2 and 3 bytes are classified too
(``bpe_classify_letters``: their code points looked up in the class table, 16 at a time): a
letter becomes a letter in every one of its bytes (upper, lower or both, as o200k's classes
say), punctuation punctuation (gpt2 and cl100k: marks too; o200k: a mark is a letter of both
kinds, as it is to its words), and the rules below then hold for them as they are written,
character by character: the bytes after the first of a character follow it in its class, never
start a chunk, and a punctuation character that starts a chunk does so in all of its bytes (for
the letters' prefix). Digits, spaces and 4-byte characters outside ASCII stay unknown.

Some bytes the rules cannot vouch for: those are ``bad`` (unknown, past the text, a quote that
may begin a contraction, a "/" after a newline that o200k's punctuation may take in; o200k: a
mark after punctuation, which [^\s\p{L}\p{N}]+ may run on over, and an upper-only letter after
one that is both, where U* or W+ may have taken that one). A chunk is read off the window only
if no byte from the one before it to the second one after it is bad, and it ends before the
window's last byte (whose next byte is not in the window): otherwise the scanner of _scan.pxd,
which decodes a character at a time, gives its end, and the next chunk anchors a new window. So
every chunk read off a window lies in a stretch of clean bytes that runs back to the anchor,
where the rules below are exact. (Going on with the old window after the scanner's chunk, where
it agrees, was slower: the next chunk's byte before it is then bad too.) Where three windows in a row cannot answer
their first chunk (quotes between letters, chunk after chunk), the next 256 bytes go to the
scanner without windows. test_scanner holds both routes to regex, the scanner alone and with
the windows.

The rules, for cl100k and o200k (classes: L letters, of them U A-Z and W a-z; D digits; SP the
space; T the space, \\t, \\v, \\f; NL \\r and \\n; WS = T or NL; P everything else ASCII):
* A byte of P starts a chunk unless it follows P (one punctuation run is one chunk) or SP (the
  last space before anything but \\s always starts a chunk, and " ?" takes the punctuation in).
* A letter starts one unless it follows a letter (o200k: except lower then upper-only, a-z then
  A-Z in ASCII, the end of [Lu..]*[Ll..]+), T (that byte starts a chunk and is the letters'
  optional prefix) or a P that starts a chunk (the prefix again).
* A digit starts one at the start of its run and every third digit on (\\p{N}{1,3}).
* A \\r or \\n starts one unless it follows WS (\\s*[\\r\\n]+ takes it) or P (the punctuation's
  [\\r\\n]* takes it).
* A byte of T starts one after a byte that is not WS; as the last of a run of WS before
  anything else (\\s+(?!\\S) gives it back); and first after a newline, unless more newlines
  follow in the same run of WS and the newlines before it were not taken in by punctuation
  (then \\s*[\\r\\n]+ runs on over it).
gpt2 has no newline rules: SP is the one prefix, of letters, digits and punctuation runs alike;
a run of WS gives back its last byte before anything else; digits run on. Without SSE2 every
byte is bad: the scanner does all the work.
"""
from libc.stdint cimport uint8_t, uint64_t

from ..core._cpu cimport prefetch  # (and _cpu.pxd's C block, with BPE_CPU_LEVEL, before this one's)
from ..core._hash cimport bpe_load64
from ._scan cimport C_L, C_N, C_S, C_U, C_W, PAT_CL100K, PAT_GPT2, PAT_O200K, scan_next

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    typedef struct {
        uint64_t upper, lower, digit, space, blank, newline, quote, slash, unknown, follow, mark;
    } bpe_classes;
    #if defined(__SSE2__) || defined(_M_X64)
    #include <emmintrin.h>
    #define BPE_ASCII_WINDOWS 1
    /* The bytes of v in [lo, lo + count) (count < 128): moved so that lo lands on -128, they
       are the ones below -128 + count as signed bytes. Bit k: byte k. */
    static inline uint64_t bpe_in_range16(__m128i v, int lo, int count) {
        __m128i moved = _mm_add_epi8(v, _mm_set1_epi8((char)(128 - lo)));
        return (uint16_t)_mm_movemask_epi8(_mm_cmplt_epi8(moved, _mm_set1_epi8((char)(count - 128))));
    }
    static inline uint64_t bpe_equal16(__m128i v, char c) {
        return (uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c)));
    }
    /* Classify 16 bytes into bits shift .. shift + 15 of c. */
    static inline void bpe_classify16(const unsigned char* p, int shift, bpe_classes* c) {
        __m128i v = _mm_loadu_si128((const __m128i*)p);
        uint64_t newline = bpe_equal16(v, '\\n') | bpe_equal16(v, '\\r');
        c->upper |= bpe_in_range16(v, 'A', 26) << shift;
        c->lower |= bpe_in_range16(v, 'a', 26) << shift;
        c->digit |= bpe_in_range16(v, '0', 10) << shift;
        c->space |= bpe_equal16(v, ' ') << shift;
        c->blank |= ((bpe_in_range16(v, 9, 5) & ~newline) | bpe_equal16(v, ' ')) << shift;
        c->newline |= newline << shift;
        c->quote |= bpe_equal16(v, '\\'') << shift;
        c->slash |= bpe_equal16(v, '/') << shift;
        c->unknown |= (uint64_t)(uint16_t)_mm_movemask_epi8(v) << shift;
    }
    /* The same 64 bytes at once with AVX2 or AVX-512BW where the processor has them (asked
       once: bpe_simd), each compiled for its instruction set alone. */
    #if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(BPE_NO_WIDE_SIMD)
    #include <immintrin.h>
    #define BPE_WIDE_SIMD 1
    __attribute__((target("avx2")))
    static inline uint64_t bpe_in_range32x2(__m256i a, __m256i b, int lo, int count) {
        __m256i move = _mm256_set1_epi8((char)(128 - lo)), top = _mm256_set1_epi8((char)(count - 128));
        uint64_t low = (uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(top, _mm256_add_epi8(a, move)));
        uint64_t high = (uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(top, _mm256_add_epi8(b, move)));
        return low | high << 32;
    }
    __attribute__((target("avx2")))
    static inline uint64_t bpe_equal32x2(__m256i a, __m256i b, char c) {
        __m256i x = _mm256_set1_epi8(c);
        return (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, x))
               | (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, x)) << 32;
    }
    __attribute__((target("avx2")))
    static void bpe_classify64_avx2(const unsigned char* p, bpe_classes* c) {
        __m256i a = _mm256_loadu_si256((const __m256i*)p);
        __m256i b = _mm256_loadu_si256((const __m256i*)(p + 32));
        uint64_t newline = bpe_equal32x2(a, b, '\\n') | bpe_equal32x2(a, b, '\\r');
        c->upper = bpe_in_range32x2(a, b, 'A', 26);
        c->lower = bpe_in_range32x2(a, b, 'a', 26);
        c->digit = bpe_in_range32x2(a, b, '0', 10);
        c->space = bpe_equal32x2(a, b, ' ');
        c->blank = (bpe_in_range32x2(a, b, 9, 5) & ~newline) | c->space;
        c->newline = newline;
        c->quote = bpe_equal32x2(a, b, '\\'');
        c->slash = bpe_equal32x2(a, b, '/');
        c->unknown = (uint64_t)(uint32_t)_mm256_movemask_epi8(a)
                     | (uint64_t)(uint32_t)_mm256_movemask_epi8(b) << 32;
        c->follow = c->mark = 0;
    }
    __attribute__((target("avx512bw")))
    static inline uint64_t bpe_in_range64(__m512i v, int lo, int count) {
        return _mm512_cmplt_epu8_mask(_mm512_sub_epi8(v, _mm512_set1_epi8((char)lo)), _mm512_set1_epi8((char)count));
    }
    __attribute__((target("avx512bw")))
    static inline uint64_t bpe_equal64(__m512i v, char c) {
        return _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(c));
    }
    __attribute__((target("avx512bw")))
    static void bpe_classify64_avx512(const unsigned char* p, bpe_classes* c) {
        __m512i v = _mm512_loadu_si512((const void*)p);
        uint64_t newline = bpe_equal64(v, '\\n') | bpe_equal64(v, '\\r');
        c->upper = bpe_in_range64(v, 'A', 26);
        c->lower = bpe_in_range64(v, 'a', 26);
        c->digit = bpe_in_range64(v, '0', 10);
        c->space = bpe_equal64(v, ' ');
        c->blank = (bpe_in_range64(v, 9, 5) & ~newline) | c->space;
        c->newline = newline;
        c->quote = bpe_equal64(v, '\\'');
        c->slash = bpe_equal64(v, '/');
        c->unknown = _mm512_movepi8_mask(v);
        c->follow = c->mark = 0;
    }
    /* Level 3 (AVX-512 F, BW, VL): the characters of 2 and 3 bytes too. Each byte that starts
       one has its code point made from it and the two bytes after it (16 at a time, in 32-bit
       lanes), looked up in the class table ``cls`` (a gather). A character whose class has
       \p{L} becomes a letter, in every byte: upper where the class has o200k's upper class,
       lower where it has its lower one (Lm and Lo: both; every letter has one or the other).
       A character whose class has none of the bits ``others`` becomes punctuation, in every
       byte ([^\s\p{L}\p{N}]; for gpt2 and cl100k marks too). With ``marks`` (o200k) a mark,
       upper and lower but not \p{L}, is a letter of both kinds (and in ``mark``): so it is to
       o200k's words, while to its punctuation it is punctuation (the window marks it bad after
       punctuation). The rest (digits, spaces, 4-byte characters) stays unknown. ``follow``: the
       bytes after the first of their character, of characters no longer unknown.
       p: the 64 bytes and 2 more, readable; is_letter, is_upper, is_lower: the class bits
       (_scan.pxd's C_L, C_U, C_W). */
    __attribute__((target("avx512f,avx512bw,avx512vl")))
    static void bpe_classify_letters(const unsigned char* p, const uint8_t* cls, int is_letter,
                                     int is_upper, int is_lower, int others, int marks, bpe_classes* c) {
        __m512i v = _mm512_loadu_si512((const void*)p);
        uint64_t cont = bpe_in_range64(v, 0x80, 0x40);
        uint64_t lead3 = bpe_in_range64(v, 0xE0, 0x10);
        uint64_t leads = bpe_in_range64(v, 0xC0, 0x20) | lead3;
        uint64_t letter = 0, upper = 0, lower = 0, punct = 0, mark = 0;
        const __m512i low6 = _mm512_set1_epi32(0x3F);
        int h;
        for (h = 0; h < 64; h += 16) {
            __mmask16 at = (__mmask16)(leads >> h);
            if (!at)
                continue;
            __m512i a = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(p + h)));
            __m512i b = _mm512_and_si512(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(p + h + 1))), low6);
            __m512i d = _mm512_and_si512(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(p + h + 2))), low6);
            __m512i two = _mm512_or_si512(_mm512_slli_epi32(_mm512_and_si512(a, _mm512_set1_epi32(0x1F)), 6), b);
            __m512i three = _mm512_or_si512(_mm512_slli_epi32(_mm512_and_si512(a, _mm512_set1_epi32(0x0F)), 12),
                                            _mm512_or_si512(_mm512_slli_epi32(b, 6), d));
            __m512i cp = _mm512_mask_mov_epi32(two, (__mmask16)(lead3 >> h), three);
            __m128i k = _mm512_cvtepi32_epi8(_mm512_mask_i32gather_epi32(_mm512_setzero_si512(), at, cp, cls, 1));
            __mmask16 l = _mm_mask_test_epi8_mask(at, k, _mm_set1_epi8((char)is_letter));
            if (marks) {        /* o200k: a mark (upper and lower, not \p{L}) is a letter to its words */
                __mmask16 m = _mm_mask_test_epi8_mask(at & ~l, k, _mm_set1_epi8((char)is_upper))
                              & _mm_mask_test_epi8_mask(at & ~l, k, _mm_set1_epi8((char)is_lower));
                mark |= (uint64_t)m << h;
                l |= m;
            }
            letter |= (uint64_t)l << h;
            punct |= (uint64_t)_mm_mask_testn_epi8_mask(at, k, _mm_set1_epi8((char)others)) << h;
            upper |= (uint64_t)_mm_mask_test_epi8_mask(l, k, _mm_set1_epi8((char)is_upper)) << h;
            lower |= (uint64_t)_mm_mask_test_epi8_mask(l, k, _mm_set1_epi8((char)is_lower)) << h;
        }
        /* a letter's continuation bytes: one after its first byte, then one after that */
        letter |= (letter << 1) & cont; letter |= (letter << 1) & cont;
        upper |= (upper << 1) & cont; upper |= (upper << 1) & cont;
        lower |= (lower << 1) & cont; lower |= (lower << 1) & cont;
        punct |= (punct << 1) & cont; punct |= (punct << 1) & cont;
        mark |= (mark << 1) & cont; mark |= (mark << 1) & cont;
        c->mark = mark;
        c->unknown &= ~(letter | punct);
        c->upper |= upper;
        c->lower |= lower;
        c->follow = cont & ~c->unknown;
    }
    #else
    #define BPE_WIDE_SIMD 0
    #endif
    /* Which classifier (bpe_simd; bpe_simd_set for tests: _cpu.pxd's BPE_CPU_LEVEL): 0 SSE2, 1
       AVX2, 2 AVX-512BW, 3 AVX-512BW with letters outside ASCII. */
    #if BPE_WIDE_SIMD
    static inline int bpe_simd_best(void) {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512f")
                && __builtin_cpu_supports("avx512vl")) return 3;
        if (__builtin_cpu_supports("avx512bw")) return 2;
        if (__builtin_cpu_supports("avx2")) return 1;
        return 0;
    }
    BPE_CPU_LEVEL(bpe_simd, bpe_simd_best)
    #else
    static inline int bpe_simd(void) { return 0; }
    static inline int bpe_simd_set(int level) { (void)level; return 0; }
    #endif
    #else
    #define BPE_ASCII_WINDOWS 0
    #define BPE_WIDE_SIMD 0
    static inline void bpe_classify16(const unsigned char* p, int shift, bpe_classes* c) {
        (void)p;
        c->unknown |= (uint64_t)0xFFFF << shift;        /* all bad: the scanner answers */
    }
    static inline int bpe_simd(void) { return 0; }
    static inline int bpe_simd_set(int level) { (void)level; return 0; }
    #endif
    /* The classes of the 64 bytes from s[at] (bytes past n: 0x80, unknown); at level 3 the
       letters outside ASCII too (bpe_classify_letters: the class table cls and its bits). */
    static inline void bpe_classify64(const unsigned char* s, size_t n, size_t at, const uint8_t* cls,
                                      int is_letter, int is_upper, int is_lower, int others, int marks,
                                      bpe_classes* c) {
        unsigned char pad[80];
        const unsigned char* p = s + at;
        int k, level = bpe_simd();
        if (at + 66 > n) {
            memset(pad, 0x80, sizeof(pad));
            if (at < n) memcpy(pad, s + at, n - at < 66 ? n - at : 66);
            p = pad;
        }
    #if BPE_WIDE_SIMD
        if (level >= 2) {
            bpe_classify64_avx512(p, c);
            if (level == 3 && c->unknown)
                bpe_classify_letters(p, cls, is_letter, is_upper, is_lower, others, marks, c);
            return;
        }
        if (level == 1) { bpe_classify64_avx2(p, c); return; }
    #endif
        (void)level; (void)cls; (void)is_letter; (void)is_upper; (void)is_lower; (void)others; (void)marks;
        memset(c, 0, sizeof(*c));
        for (k = 0; k < 4; k++)
            bpe_classify16(p + 16 * k, 16 * k, c);
    }
    /* The lowest and the highest set bit of x (x != 0). */
    #if defined(_MSC_VER) && !defined(__clang__)
    #include <intrin.h>
    static inline unsigned bpe_ctz64(uint64_t x) { unsigned long k; _BitScanForward64(&k, x); return (unsigned)k; }
    static inline unsigned bpe_top_bit(uint64_t x) { unsigned long k; _BitScanReverse64(&k, x); return (unsigned)k; }
    #else
    static inline unsigned bpe_ctz64(uint64_t x) { return (unsigned)__builtin_ctzll(x); }
    static inline unsigned bpe_top_bit(uint64_t x) { return 63u - (unsigned)__builtin_clzll(x); }
    #endif
    """
    ctypedef struct bpe_classes:
        uint64_t upper, lower, digit, space, blank, newline, quote, slash, unknown, follow, mark
    const bint ASCII_WINDOWS "BPE_ASCII_WINDOWS"
    void bpe_classify64(const unsigned char* s, size_t n, size_t at, const uint8_t* cls, int is_letter,
                        int is_upper, int is_lower, int others, int marks, bpe_classes* c) nogil
    int simd_level "bpe_simd"() nogil
    int set_simd_level "bpe_simd_set"(int level) nogil
    unsigned bpe_ctz64(uint64_t x) nogil
    unsigned bpe_top_bit(uint64_t x) nogil


cdef inline bint has_windows(int pattern) noexcept nogil:
    """Do windows split this pattern, as well as the scanner (the rules of the module doc: gpt2,
    cl100k and o200k; superword's chunks cross words and lines, the scanner alone splits it)?"""
    return ASCII_WINDOWS and (pattern == PAT_O200K or pattern == PAT_CL100K or pattern == PAT_GPT2)


cdef struct Window:
    size_t base                 # the anchor: a chunk starts at this byte
    uint64_t starts             # bit k: a chunk starts at byte base + k
    uint64_t bad                # bit k: byte base + k is one the rules cannot vouch for
    uint64_t ends               # bit k: a chunk read off the window ends at byte base + k; the
                                # bits left are those past the last chunk window_end gave
    size_t rest_until           # no window before this byte: the last ones could not answer
    int misses                  # windows in a row that could not answer their first chunk


cdef inline void window_drop(Window* w) noexcept nogil:
    """No window: the next chunk anchors one (i - base >= 64 for every i)."""
    w.base = <size_t>0 - 64
    w.starts = w.bad = w.ends = 0


cdef inline void window_reset(Window* w) noexcept nogil:
    """Ready for a new text."""
    window_drop(w)
    w.rest_until, w.misses = 0, 0


cdef inline uint64_t digit_groups(uint64_t digit, int most) noexcept nogil:
    """The digits that start a group: the first of each run and, with ``most`` 3, every third
    one on (the window's first digit starts a run: a chunk starts there)."""
    cdef uint64_t starts = digit & ~(digit << 1), grown
    cdef uint64_t third = digit & (digit << 1) & (digit << 2)   # two digits before it
    if most != 3:
        return starts
    while True:
        grown = starts | ((starts << 3) & third)
        if grown == starts:
            return starts
        starts = grown


cdef inline uint64_t bits_from_to(unsigned low, unsigned high) noexcept nogil:
    """Bits low .. high - 1 (high <= 64)."""
    return (((<uint64_t>2 << (high - 1)) - 1) if high else 0) & ~((<uint64_t>1 << low) - 1)


cdef inline uint64_t after_newline_starts(const bpe_classes* c, uint64_t blank, uint64_t punct,
                                          uint64_t* bad) noexcept nogil:
    """The bytes of T right after a newline that start a chunk: all but those whose run of T
    meets another newline, unless the newlines before them came after punctuation (its
    [\r\n]* took them in; then \s*[\r\n]+ starts afresh on the T). Where the answer turns on
    a byte the window does not know (past the run: not ASCII, the text's end, past the window;
    before its newlines: before the window), the run is marked bad."""
    cdef uint64_t first = blank & (c.newline << 1)
    cdef uint64_t past = (blank + first) & ~blank                   # the byte just past each such run
    cdef uint64_t meets = past & c.newline, unsure = past & c.unknown
    cdef uint64_t before
    cdef unsigned z, x
    if blank >> 63:                                 # a run up to the window's last byte
        bad[0] |= bits_from_to(bpe_top_bit(~blank) + 1 if ~blank else 0, 64)
    while unsure:
        z = bpe_ctz64(unsure)
        unsure &= unsure - 1
        bad[0] |= bits_from_to(bpe_top_bit(first & ((<uint64_t>1 << z) - 1)), z + 1)
    while meets:                                    # (rare: spaces on a line of their own)
        z = bpe_ctz64(meets)
        meets &= meets - 1
        x = bpe_top_bit(first & ((<uint64_t>1 << z) - 1))           # where that run starts
        before = ~c.newline & ((<uint64_t>1 << x) - 1)              # the byte before its newlines
        if before == 0:
            bad[0] |= bits_from_to(x, z + 1)
        elif not ((punct >> bpe_top_bit(before)) & 1):
            first &= ~(<uint64_t>1 << x)
    return first


cdef inline void window_anchor(Window* w, int pattern, const unsigned char* s, size_t n, size_t i,
                               const uint8_t* cls) noexcept nogil:
    """A window anchored at i (a chunk starts there): its ``starts`` and ``bad`` from the classes
    of its bytes, by the rules of the module doc."""
    cdef bpe_classes c
    cdef uint64_t letters, blank, spacing, punct, starts, quoted, upper_only, prefix
    if pattern == PAT_O200K:
        bpe_classify64(s, n, i, cls, C_L, C_U, C_W, C_L | C_N | C_S | C_U | C_W, 1, &c)
    else:
        bpe_classify64(s, n, i, cls, C_L, C_U, C_W, C_L | C_N | C_S, 0, &c)
    w.base = i
    letters = c.upper | c.lower
    blank, spacing = c.blank, c.blank | c.newline
    punct = ~(letters | c.digit | spacing | c.unknown)
    w.bad = c.unknown
    if pattern == PAT_GPT2:
        starts = (spacing & (~(spacing << 1) | ~(spacing >> 1))
                  | (letters & ~(letters << 1) & ~(c.space << 1))
                  | (c.digit & ~(c.digit << 1) & ~(c.space << 1))
                  | (punct & ~(punct << 1) & ~(c.space << 1)))
        quoted = c.quote & (letters >> 1)           # '(?:[sdmt]|ll|ve|re) may follow
    else:
        starts = punct & ~(punct << 1) & ~(c.space << 1)
        prefix = starts | ((starts << 1) & c.follow)           # (every byte of a punctuation
        prefix |= (prefix << 1) & c.follow                      # character that starts a chunk)
        starts |= letters & (~((letters | blank | punct) << 1) | ((punct & ~prefix) << 1))
        if pattern == PAT_O200K:
            upper_only = c.upper & ~c.lower         # (Lm and Lo, outside ASCII, are both)
            starts |= upper_only & (c.lower << 1)
            w.bad |= upper_only & ((c.upper & c.lower) << 1)    # U* or W+ took the one before?
            w.bad |= c.mark & (punct << 1)          # [^\s\p{L}\p{N}]+ may run on over a mark
            quoted = c.quote & (letters << 1)       # a word's (?i:'s|'t|'re|'ve|'m|'ll|'d)?
            w.bad |= c.slash & (c.newline << 1)     # [\r\n/]* may take it in
        else:
            quoted = c.quote & (letters >> 1)       # (?i:'s|'t|'re|'ve|'m|'ll|'d)
        starts |= digit_groups(c.digit, 3)
        starts |= c.newline & ~((spacing | punct) << 1)
        starts |= blank & (~(spacing << 1) | ((blank << 1) & ~(spacing >> 1)))
        starts |= after_newline_starts(&c, blank, punct, &w.bad)
    w.bad |= quoted | (quoted << 1) | (quoted << 2)
    w.starts = starts | 1
    w.ends = vouched_ends(w.starts, w.bad)


cdef inline uint64_t vouched_ends(uint64_t starts, uint64_t bad) noexcept nogil:
    """The ends of the chunks the window vouches for, from its anchor on: every chunk up to the
    first one with a bad byte in it, the byte before it (not the anchor's) or the two after it,
    and ending before the window's last byte (the rules look one byte past a chunk's end). A
    chunk [a, b) is tainted by a bad byte at a - 1 (bad << 1 marks a), in it, at b or at b + 1
    (bad >> 1 and bad >> 2 mark b - 1): the first tainted byte's chunk, starting at the highest
    start at or below it, is the first one not vouched for."""
    cdef uint64_t taint = bad | (bad << 1) | (bad >> 1) | (bad >> 2)
    cdef unsigned last = 62                         # the last end the window can vouch for
    cdef unsigned first_bad
    if taint:
        first_bad = bpe_top_bit(starts & ((<uint64_t>2 << bpe_ctz64(taint)) - 1))
        if first_bad < last:
            last = first_bad
    return starts & ~(<uint64_t>1) & ((<uint64_t>2 << last) - 1)


cdef inline size_t window_end(Window* w, int pattern, const unsigned char* s, size_t n, size_t i,
                              const uint8_t* cls) noexcept nogil:
    """The end of the chunk at i off the window if it can vouch for it, anchoring a new one at i
    when i is past its reach (unless windows rest, or below level 3 the text there is not
    ASCII); else 0. Callers go chunk by chunk: i is where the last chunk ended (given here or by
    the scanner)."""
    if w.ends:
        return take_end(w)
    return window_turn(w, pattern, s, n, i, cls)


cdef inline size_t take_end(Window* w) noexcept nogil:
    """The next end the window vouched for (w.ends not 0), its bit cleared: the chain from chunk
    to chunk is that one instruction."""
    cdef uint64_t ends = w.ends
    w.ends = ends & (ends - 1)
    return w.base + bpe_ctz64(ends)


cdef inline size_t window_turn(Window* w, int pattern, const unsigned char* s, size_t n, size_t i,
                               const uint8_t* cls) noexcept nogil:
    """window_end past the ends the window vouched for: a new window at i if i is past the old
    one's reach, else (the chunk at i is not vouched for) none."""
    cdef size_t k = i - w.base
    if k < 62 and w.starts >> k != 1:               # (a chunk ends in reach: not vouched for)
        window_drop(w)
        return 0
    if i < w.rest_until or i + 8 > n:
        return 0                                    # (no luck lately, or the text's end: no window)
    if bpe_load64(s + i) & <uint64_t>0x8080808080808080 and simd_level() < 3:
        return 0                                    # (not ASCII soon, and no letters outside it)
    window_anchor(w, pattern, s, n, i, cls)
    if w.ends:
        w.misses = 0
        return take_end(w)
    window_drop(w)              # Text where window after window fails at once (quotes between
    w.misses += 1               # letters, one after another) goes to the scanner for a while
    if w.misses >= 3:           # instead of classifying 64 bytes per chunk.
        w.rest_until, w.misses = i + 256, 0
    return 0


cdef inline size_t split_next(Window* w, int pattern, const unsigned char* s, size_t n, size_t i,
                              const uint8_t* cls, const uint8_t* fold) noexcept nogil:
    """The end of the chunk at byte i of s[0:n] (a chunk starts at i): off the window where it
    can tell, else from the scanner (one call site: it stays inlined). ``w``: the caller's,
    window_reset before each new text."""
    cdef size_t j = 0
    if has_windows(pattern):
        j = window_end(w, pattern, s, n, i, cls)
    return j if j else scan_next(pattern, s, n, i, cls, fold)
