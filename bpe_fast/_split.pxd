# cython: language_level=3
"""The front end every stage shares: where the chunk that starts at byte i ends (``split_next``),
for the named patterns. Counting (_table.pyx), encoding (_encode.pyx), BoundlessBPE's runs and
the Scanner all split text through it.

Most text is ASCII, and there the chunks of gpt2, cl100k and o200k follow from each byte's class
and its neighbours'. A ``Window`` covers 64 bytes from ``base``, a byte where a chunk is known to
start (its *anchor*): its bytes are classified into bit masks (bit k: byte base + k), 64 at once
with AVX-512BW, 32 with AVX2 or 16 with SSE2 (every x86-64 has it), whichever the processor has,
and ``window_anchor`` derives from them, with shifts, ands, one addition and a short loop for
digit groups, the bit of every byte where a chunk starts. ``split_next`` then finds a chunk's
end as the next set bit: no branch per character, none per kind of chunk.

The rules hold for ASCII only, and some need more than a byte's neighbours: those bytes are
``bad`` (not ASCII, past the text, a quote that may begin a contraction, a "/" after a newline
that o200k's punctuation may take in). A chunk is read off the window only if no byte from the
one before it to the second one after it is bad, and it ends before the window's last byte
(whose next byte is not in the window): otherwise the scanner of _scan.pxd, which decodes a
character at a time, gives its end, and the next chunk anchors a new window. So every chunk read off a
window lies in a stretch of clean bytes that runs back to the anchor, where the rules below are
exact. (Going on with the old window after the scanner's chunk, where it agrees, was slower:
the next chunk's byte before it is then bad too.) Where three windows in a row cannot answer
their first chunk (quotes between letters, chunk after chunk), the next 256 bytes go to the
scanner without windows. test_scanner holds both routes to regex, the scanner alone and with
the windows.

The rules, for cl100k and o200k (classes: L letters, of them U A-Z and W a-z; D digits; SP the
space; T the space, \\t, \\v, \\f; NL \\r and \\n; WS = T or NL; P everything else ASCII):
* A byte of P starts a chunk unless it follows P (one punctuation run is one chunk) or SP (the
  last space before anything but \\s always starts a chunk, and " ?" takes the punctuation in).
* A letter starts one unless it follows a letter (o200k: except a-z then A-Z, the end of
  [Lu..]*[Ll..]+), T (that byte starts a chunk and is the letters' optional prefix) or a P that
  starts a chunk (the prefix again).
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

from ._encode_hash cimport bpe_load64
from ._scan cimport PAT_CL100K, PAT_GPT2, PAT_O200K, scan_next

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    typedef struct {
        uint64_t upper, lower, digit, space, blank, newline, quote, slash, unknown;
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
    }
    #else
    #define BPE_WIDE_SIMD 0
    #endif
    /* Which classifier: 0 SSE2, 1 AVX2, 2 AVX-512BW; -1 until first asked (read and written
       atomically: threads may ask at once). Each extension keeps its own copy (a static in a
       header), with the same answer. bpe_set_simd_level lets tests take every route on one
       machine (never one the processor lacks). */
    #if BPE_WIDE_SIMD
    static int bpe_simd_level = -1;
    static inline int bpe_simd_best(void) {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512bw")) return 2;
        if (__builtin_cpu_supports("avx2")) return 1;
        return 0;
    }
    static inline int bpe_simd(void) {
        int level = __atomic_load_n(&bpe_simd_level, __ATOMIC_RELAXED);
        if (level < 0) {
            level = bpe_simd_best();
            __atomic_store_n(&bpe_simd_level, level, __ATOMIC_RELAXED);
        }
        return level;
    }
    static inline int bpe_set_simd_level(int level) {
        int best = bpe_simd_best(), previous = bpe_simd();
        __atomic_store_n(&bpe_simd_level, level < 0 ? 0 : level > best ? best : level, __ATOMIC_RELAXED);
        return previous;
    }
    #else
    static inline int bpe_simd(void) { return 0; }
    static inline int bpe_set_simd_level(int level) { (void)level; return 0; }
    #endif
    #else
    #define BPE_ASCII_WINDOWS 0
    #define BPE_WIDE_SIMD 0
    static inline void bpe_classify16(const unsigned char* p, int shift, bpe_classes* c) {
        (void)p;
        c->unknown |= (uint64_t)0xFFFF << shift;        /* all bad: the scanner answers */
    }
    static inline int bpe_simd(void) { return 0; }
    static inline int bpe_set_simd_level(int level) { (void)level; return 0; }
    #endif
    /* The classes of the 64 bytes from s[at] (bytes past n: 0x80, unknown). */
    static inline void bpe_classify64(const unsigned char* s, size_t n, size_t at, bpe_classes* c) {
        unsigned char pad[64];
        const unsigned char* p = s + at;
        int k, level = bpe_simd();
        if (at + 64 > n) {
            memset(pad, 0x80, 64);
            if (at < n) memcpy(pad, s + at, n - at);
            p = pad;
        }
    #if BPE_WIDE_SIMD
        if (level == 2) { bpe_classify64_avx512(p, c); return; }
        if (level == 1) { bpe_classify64_avx2(p, c); return; }
    #endif
        (void)level;
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
        uint64_t upper, lower, digit, space, blank, newline, quote, slash, unknown
    const bint ASCII_WINDOWS "BPE_ASCII_WINDOWS"
    void bpe_classify64(const unsigned char* s, size_t n, size_t at, bpe_classes* c) nogil
    int simd_level "bpe_simd"() nogil
    int set_simd_level "bpe_set_simd_level"(int level) nogil
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


cdef inline void window_anchor(Window* w, int pattern, const unsigned char* s, size_t n, size_t i) noexcept nogil:
    """A window anchored at i (a chunk starts there): its ``starts`` and ``bad`` from the classes
    of its bytes, by the rules of the module doc."""
    cdef bpe_classes c
    cdef uint64_t letters, blank, spacing, punct, starts, quoted
    bpe_classify64(s, n, i, &c)
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
        starts |= letters & (~((letters | blank | punct) << 1) | ((punct & ~starts) << 1))
        if pattern == PAT_O200K:
            starts |= c.upper & (c.lower << 1)
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


cdef inline size_t window_end(Window* w, int pattern, const unsigned char* s, size_t n, size_t i) noexcept nogil:
    """The end of the chunk at i off the window if it can vouch for it, anchoring a new one at i
    when i is past its reach (unless the text there is not ASCII, or windows rest); else 0.
    Callers go chunk by chunk: i is where the last chunk ended (given here or by the scanner)."""
    cdef uint64_t ends = w.ends
    if ends:                    # the next end the window vouched for, one bit cleared a chunk: the
        w.ends = ends & (ends - 1)          # chain from chunk to chunk is that one instruction
        return w.base + bpe_ctz64(ends)
    return window_turn(w, pattern, s, n, i)


cdef inline size_t window_turn(Window* w, int pattern, const unsigned char* s, size_t n, size_t i) noexcept nogil:
    """window_end past the ends the window vouched for: a new window at i if i is past the old
    one's reach, else (the chunk at i is not vouched for) none."""
    cdef size_t k = i - w.base
    cdef uint64_t ends
    if k < 62 and w.starts >> k != 1:               # (a chunk ends in reach: not vouched for)
        window_drop(w)
        return 0
    if i < w.rest_until or i + 8 > n or bpe_load64(s + i) & <uint64_t>0x8080808080808080:
        return 0                                    # (not ASCII soon, or no luck lately: no window)
    window_anchor(w, pattern, s, n, i)
    ends = w.ends
    if ends:
        w.misses = 0
        w.ends = ends & (ends - 1)
        return w.base + bpe_ctz64(ends)
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
        j = window_end(w, pattern, s, n, i)
    return j if j else scan_next(pattern, s, n, i, cls, fold)
