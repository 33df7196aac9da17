# cython: language_level=3
"""Native pre-tokenizers for the named patterns, on UTF-8 bytes.

Each ``scan_*`` function returns the end of the chunk that starts at byte ``i``: exactly the
match ``regex.findall`` finds there with the pattern of the same name in patterns.py. For these
four patterns every position starts a match, so chunks tile the text and the scanners never
skip. The alternatives are tried in the pattern's order, and where the pattern can backtrack
(o200k's letter classes overlap; "\\s+(?!\\S)" gives back one character) the scanner computes the
match the backtracking would settle on; the comments name the alternative each branch is.

Character classes come from a table ``cls`` built with the ``regex`` module itself
(pretokenize.char_classes), so \\p{L}, \\p{N}, \\s, ... mean exactly what they mean there; ``fold``
maps the code points that (?i) matches to the ASCII letters s d m t l v e r of the contractions.
The input must be valid UTF-8 (it always comes from str.encode).
"""
from libc.stdint cimport uint8_t, uint32_t

from ..core._text cimport TextRef, code_point

cdef enum:
    C_L = 1        # \p{L}
    C_N = 2        # \p{N}
    C_S = 4        # \s
    C_U = 8        # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]   (o200k's "upper" class)
    C_W = 16       # [\p{Ll}\p{Lm}\p{Lo}\p{M}]         (o200k's "lower" class)
    C_NL = 32      # \r or \n
    FOLD_LIMIT = 0x400

# The named patterns with a scanner here, by the id their record in patterns.PATTERNS gives
# (``NamedPattern.native``; tests/pretokenize/test_patterns.py holds each id's scanner to the record's regex).
# A new one is an id here, its scan_* function, a line in scan_next and in is_native_pattern, and
# in cuts_at_line_ends if its record's cut is a line-end rule: the C side of its record.
cdef enum:
    PAT_GPT2 = 1
    PAT_CL100K = 2
    PAT_O200K = 3
    PAT_SUPERWORD = 4


cdef inline bint is_native_pattern(int pattern) noexcept nogil:
    """Is there a scanner for this id (scan_next)?"""
    return pattern == PAT_GPT2 or pattern == PAT_CL100K or pattern == PAT_O200K or pattern == PAT_SUPERWORD


cdef inline bint cuts_at_line_ends(int pattern) noexcept nogil:
    """May text this pattern splits be cut after a "\\n" between two characters other than \\s (the
    second not "/"), the rule its record's cut has in common with the other line-end rules
    (patterns.BlockCut.at_line_ends; pretokenize.is_safe_cut says why)? The encoder cuts long
    texts there."""
    return pattern == PAT_GPT2 or pattern == PAT_CL100K or pattern == PAT_O200K


cdef extern from *:
    """
    #if defined(__GNUC__)
    #define BPE_ALWAYS_INLINE static inline __attribute__((always_inline))
    #else
    #define BPE_ALWAYS_INLINE static inline
    #endif
    /* The code point at s[i] (valid UTF-8) and its width in bytes. */
    BPE_ALWAYS_INLINE uint32_t bpe_cp_at(const unsigned char* s, size_t i, size_t* width) {
        unsigned char c = s[i];
        if (c < 0x80) { *width = 1; return c; }
        if (c < 0xE0) { *width = 2; return ((uint32_t)(c & 0x1F) << 6) | (s[i + 1] & 0x3F); }
        if (c < 0xF0) {
            *width = 3;
            return ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
        }
        *width = 4;
        return ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12)
               | ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
    }
    /* The class of the character at s[i] and its width: inlined into every loop that walks
       characters (left to the compiler, it made a call of it per character). */
    BPE_ALWAYS_INLINE uint8_t bpe_cls_at(const unsigned char* s, size_t i, size_t* width, const uint8_t* cls) {
        return cls[bpe_cp_at(s, i, width)];
    }
    """
    uint32_t cp_at "bpe_cp_at"(const unsigned char* s, size_t i, size_t* width) nogil
    uint8_t cls_at "bpe_cls_at"(const unsigned char* s, size_t i, size_t* width, const uint8_t* cls) nogil


cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* ASCII letter runs 8 bytes at a time. bpe_ascii_run(p, lo, hi) is the number of leading
       bytes of p[0..8) with lo < byte < hi, every one ASCII (hi <= 128): the high bit of each
       byte of the word says whether that byte is in range, computed for all eight bytes at once
       with no carry from one byte into the next (Bit Twiddling Hacks, "hasbetween"); fold ORs
       0x20 into every byte first (A-Z become a-z; no byte outside A-Z, a-z lands in a-z).
       Little-endian only: the first byte is the word's lowest; elsewhere 0 (the caller's byte
       loop does the work). */
    static inline unsigned bpe_ascii_run(const unsigned char* p, unsigned lo, unsigned hi, int fold) {
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && defined(__GNUC__)
        const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
        uint64_t x, low7, in_range, out;
        memcpy(&x, p, 8);
        if (fold) x |= 0x2020202020202020ULL;
        low7 = x & (ones * 127);
        in_range = (ones * (127 + hi) - low7) & ~x & (low7 + ones * (127 - lo)) & highs;
        out = ~in_range & highs;
        return out ? (unsigned)(__builtin_ctzll(out) >> 3) : 8;
    #else
        (void)p; (void)lo; (void)hi; (void)fold;
        return 0;
    #endif
    }
    """
    unsigned bpe_ascii_run(const unsigned char* p, unsigned lo, unsigned hi, int fold) nogil


cdef inline size_t ascii_letters_end(const unsigned char* s, size_t n, size_t i, uint8_t want) noexcept nogil:
    """Past the ASCII letters of class ``want`` from i, 8 bytes at a time while 8 remain: for
    \\p{L} (C_L) A-Z and a-z, for o200k's upper class (C_U) A-Z, for its lower class (C_W) a-z:
    the ASCII members of each class exactly (the class table comes from regex; test_scanner
    holds the scanners to it). Any other want: i."""
    cdef unsigned k
    while i + 8 <= n:
        if want == C_L:
            k = bpe_ascii_run(s + i, 0x60, 0x7B, 1)
        elif want == C_U:
            k = bpe_ascii_run(s + i, 0x40, 0x5B, 0)
        elif want == C_W:
            k = bpe_ascii_run(s + i, 0x60, 0x7B, 0)
        else:
            return i
        i += k
        if k < 8:
            return i
    return i


cdef inline bint is_punct(uint8_t f) noexcept nogil:
    """[^\\s\\p{L}\\p{N}]"""
    return (f & (C_L | C_N | C_S)) == 0


cdef inline size_t run_end(const unsigned char* s, size_t n, size_t i, const uint8_t* cls, uint8_t want) noexcept nogil:
    """End of the run of characters, from i, whose class has any bit of ``want``."""
    cdef size_t w
    i = ascii_letters_end(s, n, i, want)     # (letters' runs: the ASCII part a word at a time)
    while i < n and cls_at(s, i, &w, cls) & want:
        i += w
    return i


cdef inline size_t punct_run_end(const unsigned char* s, size_t n, size_t i, const uint8_t* cls) noexcept nogil:
    cdef size_t w
    while i < n and is_punct(cls_at(s, i, &w, cls)):
        i += w
    return i


cdef inline size_t bytes_run_end(const unsigned char* s, size_t n, size_t i, bint slash) noexcept nogil:
    """[\\r\\n]* (and "/" too when slash is set), all ASCII."""
    while i < n and (s[i] == 13 or s[i] == 10 or (slash and s[i] == 47)):
        i += 1
    return i


cdef inline uint8_t fold_at(const unsigned char* s, size_t n, size_t i, size_t* width, const uint8_t* fold) noexcept nogil:
    """The contraction letter that character i matches case-insensitively, or 0."""
    if i >= n:
        return 0
    cdef uint32_t c = cp_at(s, i, width)
    return fold[c] if c < FOLD_LIMIT else 0


cdef inline size_t contraction_ci(const unsigned char* s, size_t n, size_t q, const uint8_t* fold, bint short_re) noexcept nogil:
    """End of (?i:[sdmt]|ll|ve|re) (cl100k) or (?i:s|t|re|ve|m|ll|d) (o200k) after the quote at q-1,
    or 0. Both sets are the same letters: s d m t, then ll ve re."""
    cdef size_t w1, w2
    cdef uint8_t a = fold_at(s, n, q, &w1, fold)
    if a == b's' or a == b'd' or a == b'm' or a == b't':
        return q + w1
    cdef uint8_t b
    if a == b'l' or a == b'v' or a == b'r':
        b = fold_at(s, n, q + w1, &w2, fold)
        if (a == b'l' and b == b'l') or ((a == b'v' or a == b'r') and b == b'e'):
            return q + w1 + w2
    return 0


cdef inline size_t contraction_gpt2(const unsigned char* s, size_t n, size_t q) noexcept nogil:
    """End of '(?:[sdmt]|ll|ve|re) after the quote at q-1 (case-sensitive, ASCII), or 0."""
    if q >= n:
        return 0
    cdef unsigned char a = s[q]
    if a == b's' or a == b'd' or a == b'm' or a == b't':
        return q + 1
    if q + 1 < n and ((a == b'l' and s[q + 1] == b'l') or ((a == b'v' or a == b'r') and s[q + 1] == b'e')):
        return q + 2
    return 0


cdef inline size_t whitespace_end(const unsigned char* s, size_t n, size_t i, const uint8_t* cls,
                                  size_t* last_start, size_t* last_nl_end) noexcept nogil:
    """End of the \\s run from i; also where its last character starts and where its last \\r/\\n
    ends (0 if it has none)."""
    cdef size_t w
    cdef uint8_t f
    last_start[0] = i                # (callers call this at a space, so the loop sets it again)
    last_nl_end[0] = 0
    while i < n:
        f = cls_at(s, i, &w, cls)
        if not (f & C_S):
            break
        last_start[0] = i
        i += w
        if f & C_NL:
            last_nl_end[0] = i
    return i


cdef inline size_t digits_1_to_3(const unsigned char* s, size_t n, size_t e, const uint8_t* cls) noexcept nogil:
    """End of \\p{N}{1,3} whose first digit ends at e: up to two more digits."""
    cdef size_t w, k
    for k in range(2):
        if e < n and cls_at(s, e, &w, cls) & C_N:
            e += w
        else:
            break
    return e


cdef inline size_t scan_gpt2(const unsigned char* s, size_t n, size_t i, const uint8_t* cls) noexcept nogil:
    cdef size_t w, w2, e, last_start, last_nl
    cdef uint8_t f = cls_at(s, i, &w, cls), g
    if s[i] == b"'":                                    # '(?:[sdmt]|ll|ve|re)
        e = contraction_gpt2(s, n, i + 1)
        if e:
            return e
    if s[i] == b' ' and i + 1 < n:                      # " ?" before a letter, digit or punct run
        g = cls_at(s, i + 1, &w2, cls)
        if g & C_L:
            return run_end(s, n, i + 1, cls, C_L)
        if g & C_N:
            return run_end(s, n, i + 1, cls, C_N)
        if is_punct(g):
            return punct_run_end(s, n, i + 1, cls)
    if f & C_L:                                         # ?\p{L}++
        return run_end(s, n, i, cls, C_L)
    if f & C_N:                                         # ?\p{N}++
        return run_end(s, n, i, cls, C_N)
    if is_punct(f):                                     # ?[^\s\p{L}\p{N}]++
        return punct_run_end(s, n, i, cls)
    e = whitespace_end(s, n, i, cls, &last_start, &last_nl)
    if e == n:                                          # \s++$
        return e
    if last_start > i:                                  # \s+(?!\S): the run less its last char
        return last_start
    return i + w                                        # \s


cdef inline size_t scan_cl100k(const unsigned char* s, size_t n, size_t i, const uint8_t* cls, const uint8_t* fold) noexcept nogil:
    cdef size_t w, w2, e, last_start, last_nl
    cdef uint8_t f = cls_at(s, i, &w, cls)
    if s[i] == b"'":                                    # '(?i:[sdmt]|ll|ve|re)
        e = contraction_ci(s, n, i + 1, fold, False)
        if e:
            return e
    if f & C_L:                                         # [^\r\n\p{L}\p{N}]?+\p{L}++, no prefix
        return run_end(s, n, i, cls, C_L)
    if not (f & (C_N | C_NL)) and i + w < n and cls_at(s, i + w, &w2, cls) & C_L:
        return run_end(s, n, i + w, cls, C_L)           # ... with a one-character prefix
    if f & C_N:                                         # \p{N}{1,3}+
        return digits_1_to_3(s, n, i + w, cls)
    if s[i] == b' ' and i + 1 < n and is_punct(cls_at(s, i + 1, &w2, cls)):
        return bytes_run_end(s, n, punct_run_end(s, n, i + 1, cls), False)   # ?[^\s\p{L}\p{N}]++[\r\n]*+
    if is_punct(f):
        return bytes_run_end(s, n, punct_run_end(s, n, i, cls), False)
    e = whitespace_end(s, n, i, cls, &last_start, &last_nl)
    if e == n:                                          # \s++$
        return e
    if last_nl:                                         # \s*[\r\n]: up to the run's last newline
        return last_nl
    if last_start > i:                                  # \s+(?!\S)
        return last_start
    return i + w                                        # \s


cdef inline size_t o200k_letters_a(const unsigned char* s, size_t n, size_t i, const uint8_t* cls) noexcept nogil:
    """[\\p{Lu}..\\p{M}]*[\\p{Ll}..\\p{M}]+ from i: the end of the match, or 0.

    U* is greedy but gives back characters until W+ can start: W+ starts at the end of the U
    run if that character is W, else at the last W character inside the U run."""
    cdef size_t w, j = i, w_start = 0
    cdef bint found = False
    cdef uint8_t f
    while j < n:
        f = cls_at(s, j, &w, cls)
        if not (f & C_U):
            break
        if f & C_W:
            w_start, found = j, True
        j += w
    if j < n and cls_at(s, j, &w, cls) & C_W:
        w_start, found = j, True
    if not found:
        return 0
    return run_end(s, n, w_start, cls, C_W)


cdef inline size_t o200k_letters_b(const unsigned char* s, size_t n, size_t i, const uint8_t* cls) noexcept nogil:
    """[\\p{Lu}..\\p{M}]+[\\p{Ll}..\\p{M}]* from i: the end of the match, or 0."""
    cdef size_t j = run_end(s, n, i, cls, C_U)
    if j == i:
        return 0
    return run_end(s, n, j, cls, C_W)


cdef inline size_t scan_o200k(const unsigned char* s, size_t n, size_t i, const uint8_t* cls, const uint8_t* fold) noexcept nogil:
    cdef size_t w, w2, e, k, last_start, last_nl
    cdef uint8_t f = cls_at(s, i, &w, cls)
    # The two letter alternatives, each tried with the optional prefix, then without it.
    cdef bint prefix = not (f & (C_L | C_N | C_NL))     # [^\r\n\p{L}\p{N}]?
    e = 0
    if prefix and i + w < n:
        e = o200k_letters_a(s, n, i + w, cls)
    if not e:
        e = o200k_letters_a(s, n, i, cls)
    if not e and prefix and i + w < n:
        e = o200k_letters_b(s, n, i + w, cls)
    if not e:
        e = o200k_letters_b(s, n, i, cls)
    if e:                                               # (?i:'s|'t|'re|'ve|'m|'ll|'d)?
        if e < n and s[e] == b"'":
            k = contraction_ci(s, n, e + 1, fold, True)
            if k:
                return k
        return e
    if f & C_N:                                         # \p{N}{1,3}
        return digits_1_to_3(s, n, i + w, cls)
    if s[i] == b' ' and i + 1 < n and is_punct(cls_at(s, i + 1, &w2, cls)):
        return bytes_run_end(s, n, punct_run_end(s, n, i + 1, cls), True)   # ?[^\s\p{L}\p{N}]+[\r\n/]*
    if is_punct(f):
        return bytes_run_end(s, n, punct_run_end(s, n, i, cls), True)
    e = whitespace_end(s, n, i, cls, &last_start, &last_nl)
    if last_nl:                                         # \s*[\r\n]+
        return last_nl
    if e == n:                                          # \s+(?!\S) at the end of the text
        return e
    if last_start > i:                                  # \s+(?!\S)
        return last_start
    return e                                            # \s+


cdef inline size_t bytes_run_end_of(const unsigned char* s, size_t n, size_t i, unsigned char byte) noexcept nogil:
    """End of the run of one ASCII byte from i."""
    while i < n and s[i] == byte:
        i += 1
    return i


cdef inline size_t punct_pair_end(const unsigned char* s, size_t n, size_t i, const uint8_t* cls) noexcept nogil:
    """End of " ?[^\\s\\p{L}\\p{N}]{2,}[\\r\\n/]*" from i (SUPERWORD's punctuation splitter), or 0. At a
    space the run must follow it: without the space the class would have to match the space."""
    cdef size_t w, w2, j = i + 1 if s[i] == b' ' else i
    if j < n and is_punct(cls_at(s, j, &w, cls)) and j + w < n and is_punct(cls_at(s, j + w, &w2, cls)):
        return bytes_run_end(s, n, punct_run_end(s, n, j + w + w2, cls), True)
    return 0


cdef inline bint superword_splits_at(const unsigned char* s, size_t n, size_t j, uint8_t f, size_t w,
                                     const uint8_t* cls) noexcept nogil:
    """Does SUPERWORD_SPLIT match at j, whose character has class f and width w? A digit
    (\\p{N}{1,3}); two punctuation marks, or a space and two (punct_pair_end); a space before a
    space, another \\s or the end (" +(?!\\S)": a run of two or more gives back its last space,
    which is followed by a space). It reads the characters at j and at most two after it."""
    cdef size_t w2, w3
    cdef uint8_t g
    if f & C_N:
        return True
    if is_punct(f):
        return j + w < n and is_punct(cls_at(s, j + w, &w2, cls))
    if s[j] != b' ':
        return False
    if j + 1 == n:
        return True
    g = cls_at(s, j + 1, &w2, cls)
    return (g & C_S) != 0 or (is_punct(g) and j + 1 + w2 < n and is_punct(cls_at(s, j + 1 + w2, &w3, cls)))


cdef inline size_t scan_superword(const unsigned char* s, size_t n, size_t i, const uint8_t* cls) noexcept nogil:
    """SUPERWORD: SUPERWORD_SPLIT's match at i, else the run up to the next position where it
    matches. The regex has no look-behind, so whether the splitter matches at a position does
    not depend on where the current chunk started."""
    cdef size_t w, w2, e
    cdef uint8_t f = cls_at(s, i, &w, cls)
    if f & C_N:                                         # \p{N}{1,3}
        return digits_1_to_3(s, n, i + w, cls)
    e = punct_pair_end(s, n, i, cls)                    # " ?[^\s\p{L}\p{N}]{2,}[\r\n/]*"
    if e:
        return e
    if s[i] == b' ':                                    # " +(?!\S)"
        e = bytes_run_end_of(s, n, i, b' ')
        if e == n or cls_at(s, e, &w2, cls) & C_S:
            return e
        if e - i >= 2:
            return e - 1                                # gives back the space before the \S
    # (?:(?!SPLIT)[\s\S])+: the splitter does not match at i (every branch above failed), so
    # the run takes i's character and every next one up to where the splitter matches. It never
    # matches at a letter: ASCII letters are passed a word at a time.
    e = i + w
    while e < n:
        e = ascii_letters_end(s, n, e, C_L)
        if e >= n:
            break
        f = cls_at(s, e, &w, cls)
        if superword_splits_at(s, n, e, f, w, cls):
            return e
        e += w
    return n


cdef inline size_t scan_next(int pattern, const unsigned char* s, size_t n, size_t i,
                             const uint8_t* cls, const uint8_t* fold) noexcept nogil:
    if pattern == PAT_CL100K:
        return scan_cl100k(s, n, i, cls, fold)
    if pattern == PAT_O200K:
        return scan_o200k(s, n, i, cls, fold)
    if pattern == PAT_SUPERWORD:
        return scan_superword(s, n, i, cls)
    return scan_gpt2(s, n, i, cls)


cdef inline size_t next_cut(const TextRef* t, size_t i, const uint8_t* cls) noexcept nogil:
    """The first position from i (or the end of t) where a block of text may end: after a "\n"
    that follows a character other than whitespace and comes before one other than whitespace
    and "/" (``cls``: the scanners' class table). It is the general rule of
    pretokenize.is_safe_cut, which says why: for gpt2, cl100k and o200k no chunk goes on from
    such a "\n" into such a character, the "\n" ends its chunk whether the text goes on or
    ends there, and no pattern looks behind."""
    cdef size_t n = <size_t>t.length
    cdef uint32_t c
    if i < 2:
        i = 2
    while i < n:
        if code_point(t.data, t.kind, i - 1) == 10:
            c = code_point(t.data, t.kind, i)
            if c != 47 and not (cls[c] & C_S) and not (cls[code_point(t.data, t.kind, i - 2)] & C_S):
                return i
        i += 1
    return n
