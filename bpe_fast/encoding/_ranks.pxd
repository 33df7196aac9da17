# cython: language_level=3
"""The BPE of a short chunk by tiktoken's rule, over tables small enough to stay near the core.

Invariants: ``rank_of(r, a, b)`` equals ``merged(m, a, b)`` (_merges.pxd) for the Merges
it was built from: the symbol a and b merge into (smaller is earlier), or NO_MERGE. And
``merge_short`` gives what ``replay`` gives (_replay.pxd: the pair whose merge is the
earliest is merged, leftmost first on ties, until none merges), hence what ``backtrack`` gives,
whichever of its two forms runs: ``merge_vector`` (CPUs with AVX-512) or ``merge_scalar``.

Why, beside backtracking (_bpe.pxd): on text it has never seen the encoder spends most
of its time on the BPE of new chunks. Backtracking walks a trie of 16 MB and checks each pair of
tokens it puts side by side by walking the merges again; on long-tailed text (generated words of
9-24 bytes) it backtracks often, with many trie walks and compatibility checks a chunk
(cachegrind: benchmarks/RESULTS.md, "Encode once (2)"). Replaying the merges over an array
(merge_scalar) is quadratic in the chunk, but on these tables it takes less time than
backtracking for new chunks of up to 32 bytes, on text made after the tuning
(benchmarks/bench_new_chunks.py; "Encode once (2)"). At 33-48 bytes it still wins for o200k_base
and loses for cl100k_base's chunks of many scripts (few of the new chunks there; merge_vector,
below, wins there too: "Encode once (3)"); at 49-64 bytes it loses, while merge_vector, in four
vectors, still wins for both encodings on the new chunks of 49-64 bytes of generated text of
many scripts made after the change. Past 64 bytes, in 5-8 vectors, it keeps winning for
o200k_base, whose backtracking is the slower, and stops paying for cl100k_base
("Encode once (8)"). So chunks up to ``Ranks.longest`` bytes are merged here and longer ones
backtracked: SHORT_MERGE without AVX-512, else VECTOR_MERGE, or VECTOR_MERGE_BIG for a
vocabulary the size of o200k_base's.

Why other tables than ``Merges.pairs`` (16-byte slots, 4-8 MB for cl100k_base / o200k_base): on
this kind of machine a random load takes several times longer from 4 MB than from 1 MB, and
longer again from 16 MB (a pointer chase: "Encode once (2)"). The replay of short chunks over
``Merges`` gained nothing over backtracking; the same loop over these tables took less time
(zipf's new chunks, cl100k_base), and less again with the argmin and gap-closing below
("Encode once (2)"). Packing the slots tighter still (0.76 full) did not pay
("Encode once (6)" and "(8)"). Here:
* ``grid``: every pair of bytes, 256 x 256 int32 (256 KB): the first round of merges of any
  chunk is all byte pairs, and needs no hashing;
* ``slots``: all merges, one uint64 each, (a << 21 | b) << 21 | made (symbols below 2**21),
  all ones when free, linear probing from the top bits of a multiplicative hash, at most half
  full: 2 MB for cl100k_base. A probe never wraps: RANK_PAD slots follow the 2**bits, the last
  RANK_FREE_TAIL always free, so merge_vector can compare four slots at once anywhere.

Two forms of the same replay. ``merge_scalar`` keeps the chunk in two arrays (symbols, and the
rank of each pair) and per merge finds the least rank, closes the gap and probes twice; its loops
run as many times as the data says, and callgrind's branch simulation put most of its
mispredictions on their exits and the probe loops' hit-or-miss ("Encode once (3)").
``merge_vector`` holds the chunk in 1-8 AVX-512 vectors (16 to 128 lanes) and does each merge
in a fixed number of vector steps: the least (rank << 6 | lane; 7 bits of lane past 64) for the
merge, a masked shift for the gap, four slots compared at once for each probe. More things shorten the chain of waits from one merge to the
next: the least of the pairs a merge leaves alone is found while its two new pairs are looked up,
and the symbols either side of the merge are read before the lanes move. That least untouched
pair is the next merge in nearly every merge (new chunks of generated prose, both encodings, and
of generated code, cl100k_base: a new pair made with the new symbol rarely comes earlier), so the
choice of the next merge is a branch taken on that guess, which the core runs ahead on without
waiting for the lookups (new zipf chunks take less time than with a select), and the slots the
guessed merge will probe are asked for early (BPE_SPECULATE; less time again on top of the
branch). benchmarks/RESULTS.md, "Encode once (3)", "(6)" and "(8)", has the measurements.
"""
from libc.stdint cimport int32_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc

from ..core._cpu cimport prefetch
from ._merges cimport Merges, NO_MERGE
from ..core._pairmap cimport EMPTY, half_full_bits, mark_free, pair_home

cdef enum:
    RANK_BITS = 21             # symbols must be below 2**21 (a vocabulary of 2M tokens)
    SHORT_MERGE = 48           # chunks up to this many bytes are merged by merge_scalar ...
    VECTOR_MERGE = 64          # ... and by merge_vector (one lane a byte, up to 8 vectors of 16) ...
    VECTOR_MERGE_BIG = 128     # ... or this many for a vocabulary of BIG_VOCABULARY symbols or more
    BIG_VOCABULARY = 150000
    RANK_PAD = 64              # slots past the 2**bits: a probe runs on into them, never wraps
    RANK_FREE_TAIL = 8         # ... the last of them always free (a probe reads up to 4 past its window)

cdef extern from *:
    """
    /* The leftmost smallest of r[0..n) (n >= 1), without a branch on the data (the ranks of
       a chunk's pairs follow no pattern a branch predictor could learn: a new zipf chunk takes
       less time with this loop than with the branchy one; benchmarks/RESULTS.md,
       "Encode once (2)"). */
    static inline size_t bpe_argmin(const int32_t* r, size_t n, int32_t* low_out) {
        int32_t low = r[0];
        size_t best = 0;
        for (size_t i = 1; i < n; i++) {
            int32_t x = r[i];
            best = x < low ? i : best;
            low = x < low ? x : low;
        }
        *low_out = low;
        return best;
    }
    """
    size_t argmin "bpe_argmin"(const int32_t* r, size_t n, int32_t* low_out) noexcept nogil

cdef extern from *:
    """
    #include <string.h>
    /* a[i] = a[i + 1] for from <= i < to, 8 at a time (a has room for to + 8): the plain loop
       is made a call to memmove by the compiler, which a pass over new text paid for in calls
       (benchmarks/RESULTS.md, "Encode once (2)"). */
    static inline void bpe_close_gap(int32_t* a, size_t from, size_t to) {
        for (size_t i = from; i < to; i += 8) {
            int32_t t[8];
            memcpy(t, a + i + 1, sizeof t);
            memcpy(a + i, t, sizeof t);
        }
    }
    """
    void close_gap "bpe_close_gap"(int32_t* a, size_t start, size_t stop) noexcept nogil


cdef extern from *:
    """
    #if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    #include <immintrin.h>
    #include <type_traits>
    #define BPE_MERGE_VECTOR 1
    #ifndef BPE_SPECULATE          /* (0: the same merges, without the guessed prefetches) */
    #define BPE_SPECULATE 1
    #endif
    /* Can this CPU run bpe_merge_vector? (AVX-512 F, BW, VL: Intel since 2017, AMD since Zen 4.) */
    static int bpe_merge_vector_ok(void) {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
            && __builtin_cpu_supports("avx512vl");
    }
    #define BPE_VECTOR __attribute__((target("avx512f,avx512bw,avx512vl")))

    /* What the pair key merges into, or 0x7FFFFFFF: four slots compared at once from the key's
       home (slots holds 2**bits slots and RANK_PAD more, the last RANK_FREE_TAIL = 8 always
       free, and a probe never wraps: a window starts at most at the first of them, and reads
       at most its fifth), so a probe loops only past four slots full of other keys. The one branch
       left, on the hit (the compiler makes it of the select), is worth keeping: a miss guessed
       right needs no wait for the slot's value (a select without it was slower on new zipf
       chunks: benchmarks/RESULTS.md, "Encode once (3)"). */
    BPE_VECTOR static inline int32_t bpe_rank_probe4(const uint64_t* slots, int bits, uint64_t key) {
        size_t i = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
        const __m256i want = _mm256_set1_epi64x((long long)key), all_ones = _mm256_set1_epi64x(-1);
        for (;;) {
            __m256i v = _mm256_loadu_si256((const __m256i*)(slots + i));
            unsigned hit = _mm256_cmpeq_epi64_mask(_mm256_srli_epi64(v, 21), want);
            unsigned free_ = _mm256_cmpeq_epi64_mask(v, all_ones);
            if (__builtin_expect((hit | free_) != 0, 1)) {
                uint64_t slot = slots[i + __builtin_ctz(hit | 16u)];   /* (slot i + 4 when no hit) */
                return hit ? (int32_t)(slot & ((1u << 21) - 1)) : 0x7FFFFFFF;
            }
            i += 4;
        }
    }

    /* A chunk in V vectors of 16 lanes: a bit a lane in a Mask (64 bits up to 4 vectors, 128 up
       to 8), and a merge named by (rank << BITS | lane), BITS wide enough for the lane. A rank of
       0x7FFFFFFF (no merge) so shifted is NONE or more (the top bits fall off). */
    template <int V>
    struct BpeLanes {
        typedef typename std::conditional<(V <= 4), uint64_t, unsigned __int128>::type Mask;
        static const int BITS = V <= 4 ? 6 : 7;
        static const uint32_t NONE = (uint32_t)(0x7FFFFFFFu << BITS);
        static Mask below(size_t n) { return n < 8 * sizeof(Mask) ? ((Mask)1 << n) - 1 : ~(Mask)0; }
    };

    /* The least (rank << BITS | lane) over the lanes of rv not in skip (a bit a lane). */
    template <int V>
    BPE_VECTOR static inline __attribute__((always_inline))
    uint32_t bpe_least_lane(const __m512i* rv, typename BpeLanes<V>::Mask skip) {
        const int B = BpeLanes<V>::BITS;
        const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        const __m512i all = _mm512_set1_epi32(-1);
        __m512i p = _mm512_mask_mov_epi32(_mm512_or_si512(_mm512_slli_epi32(rv[0], B), iota), (__mmask16)skip, all);
        for (int k = 1; k < V; k++)
            p = _mm512_min_epu32(p, _mm512_mask_mov_epi32(
                _mm512_or_si512(_mm512_slli_epi32(rv[k], B), _mm512_add_epi32(iota, _mm512_set1_epi32(16 * k))),
                (__mmask16)(skip >> (16 * k)), all));
        return _mm512_reduce_min_epu32(p);
    }

    /* Lanes i and j of the chunk's symbols, held in V vectors (i = -1 wraps, a lane past the
       chunk reads what is there: the caller ignores those). Over 4 vectors, from a copy in memory
       (plainer than a tree of permutes over 5-8 vectors; chunks that long are few). */
    template <int V>
    BPE_VECTOR static inline __attribute__((always_inline))
    void bpe_two_lanes(const __m512i* sv, int i, int j, uint32_t* a, uint32_t* b) {
        if (V > 4) {
            alignas(64) uint32_t lanes[16 * V];
            for (int k = 0; k < V; k++)
                _mm512_store_si512((__m512i*)(lanes + 16 * k), sv[k]);
            *a = lanes[(unsigned)i % (16 * V)];
            *b = lanes[(unsigned)j % (16 * V)];
            return;
        }
        const __m512i zero = _mm512_setzero_si512();
        __m512i where = _mm512_castsi128_si512(_mm_setr_epi32(i, j, 0, 0)), both;
        if (V == 1)
            both = _mm512_permutexvar_epi32(where, sv[0]);
        else if (V == 2)
            both = _mm512_permutex2var_epi32(sv[0], where, sv[V - 1]);
        else                        /* (lanes 0-31 from the first two vectors, 32-63 from the others) */
            both = _mm512_mask_blend_epi32(
                _mm512_cmpge_epu32_mask(_mm512_and_si512(where, _mm512_set1_epi32(63)), _mm512_set1_epi32(32)),
                _mm512_permutex2var_epi32(sv[0], where, sv[1 % V]),
                _mm512_permutex2var_epi32(sv[2 % V], where, V == 4 ? sv[3 % V] : zero));
        __m128i lr = _mm512_castsi512_si128(both);
        *a = (uint32_t)_mm_cvtsi128_si32(lr);
        *b = (uint32_t)_mm_extract_epi32(lr, 1);
    }

    /* merge_short for 2 <= n <= 16 * V bytes (V = 1 to 8) with the chunk held in registers:
       the symbols in V vectors of 16 int32, the rank of pair i (what symbols i, i + 1 merge
       into) in lane i of V more (0x7FFFFFFF where none). A merge: the least (rank << BITS | lane),
       so the earliest merge and on ties the leftmost pair; the lanes past it moved down one;
       the two pairs it makes looked up. A fixed number of vector steps, where the scalar loop's
       argmin, gap and probe loops ran a count the data decided (callgrind: their exits took a
       good share of its mispredicted branches, benchmarks/RESULTS.md, "Encode once (3)"). out
       gets the symbols (room for n). */
    template <int V>
    BPE_VECTOR static inline __attribute__((always_inline))
    size_t bpe_merge_lanes(const int32_t* grid, const uint64_t* slots, int bits,
                           const uint8_t* s, size_t n, int32_t* out) {
        typedef typename BpeLanes<V>::Mask Mask;
        const int B = BpeLanes<V>::BITS;
        const uint32_t NONE = BpeLanes<V>::NONE, LANE = (1u << B) - 1;
        const __m512i none = _mm512_set1_epi32(0x7FFFFFFF), zero = _mm512_setzero_si512();
        __m512i sv[V], rv[V];
        Mask live = BpeLanes<V>::below(n), pairs = live >> 1;
        for (int k = 0; k < V; k++)
            sv[k] = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8((__mmask16)(live >> (16 * k)), s + 16 * k));
        for (int k = 0; k < V; k++) {
            __m512i next = _mm512_alignr_epi32(k + 1 < V ? sv[k + 1] : zero, sv[k], 1);
            rv[k] = _mm512_mask_i32gather_epi32(none, (__mmask16)(pairs >> (16 * k)),
                                                _mm512_or_si512(_mm512_slli_epi32(sv[k], 8), next), grid, 4);
        }
        size_t m = n;
        uint32_t least = bpe_least_lane<V>(rv, 0);
        while (least < NONE) {                 /* (NONE: no pair merges) */
            unsigned best = least & LANE;
            int32_t low = (int32_t)(least >> B);
            Mask above = ~(((Mask)2 << best) - 1), at = (Mask)1 << best;
            /* The least of the pairs this merge leaves as they are (all but best - 1, best and
               best + 1), found while the new pairs are looked up: the next merge is the least of
               it and the two new pairs, three numbers to compare once the lookups are back,
               not a vector to reduce. */
            uint32_t untouched = bpe_least_lane<V>(rv, at | (at << 1) | (at >> 1));
            /* the symbols either side of the pair merged, read before the lanes move (lane
               best - 1 wraps when best is 0, lane best + 2 is past the chunk when the pair ends
               it: their ranks are not kept then) */
            uint32_t left, right;
            bpe_two_lanes<V>(sv, (int)best - 1, (int)best + 2, &left, &right);
    #if BPE_SPECULATE
            /* The next merge is most often the least untouched pair (below): ask now for the slots
               its two lookups will read, while this merge's own are on their way. */
            if (untouched < NONE) {
                unsigned ub = untouched & LANE;
                int32_t made = (int32_t)(untouched >> B);
                uint32_t left2, right2;
                bpe_two_lanes<V>(sv, (int)ub - 1, (int)ub + 2, &left2, &right2);
                left2 = ub == best + 2 ? (uint32_t)low : left2;
                right2 = ub + 2 == best ? (uint32_t)low : right2;
                uint64_t kl = ((uint64_t)left2 << 21) | (uint32_t)made, kr = ((uint64_t)(uint32_t)made << 21) | right2;
                __builtin_prefetch(slots + (size_t)((kl * 0x9E3779B97F4A7C15ULL) >> (64 - bits)));
                __builtin_prefetch(slots + (size_t)((kr * 0x9E3779B97F4A7C15ULL) >> (64 - bits)));
            }
    #endif
            for (int k = 0; k < V; k++) {
                __mmask16 moved = (__mmask16)(above >> (16 * k));
                sv[k] = _mm512_mask_mov_epi32(sv[k], moved, _mm512_alignr_epi32(k + 1 < V ? sv[k + 1] : zero, sv[k], 1));
                rv[k] = _mm512_mask_mov_epi32(rv[k], moved, _mm512_alignr_epi32(k + 1 < V ? rv[k + 1] : none, rv[k], 1));
                sv[k] = _mm512_mask_set1_epi32(sv[k], (__mmask16)(at >> (16 * k)), low);
            }
            m -= 1;
            int32_t with_right = bpe_rank_probe4(slots, bits, ((uint64_t)(uint32_t)low << 21) | right);
            int32_t with_left = bpe_rank_probe4(slots, bits, ((uint64_t)left << 21) | (uint32_t)low);
            with_right = best + 1 < m ? with_right : 0x7FFFFFFF;
            for (int k = 0; k < V; k++) {
                rv[k] = _mm512_mask_set1_epi32(rv[k], (__mmask16)(at >> (16 * k)), with_right);
                rv[k] = _mm512_mask_set1_epi32(rv[k], (__mmask16)((at >> 1) >> (16 * k)), with_left);
            }
            /* the untouched pairs past the merge moved down a lane (their order kept) */
            untouched -= untouched < NONE && (untouched & LANE) > best;
            uint32_t new_right = ((uint32_t)with_right << B) | best;
            uint32_t new_left = best ? (((uint32_t)with_left << B) | (best - 1)) : 0xFFFFFFFFu;
            /* The next merge: a branch, not a select. In nearly every merge it is the untouched
               pair (see the docstring), so the branch is predicted and the core goes on to that
               merge without waiting for this one's lookups (a select waited for them: the branch
               takes less time on new zipf chunks: benchmarks/RESULTS.md, "Encode once (6)"). The
               empty asm keeps the compiler from making it a select again. */
            uint32_t fresh = new_right < new_left ? new_right : new_left;
            if (__builtin_expect(fresh < untouched, 0)) {
                least = fresh;
                __asm__ volatile("");
            } else {
                least = untouched;
            }
        }
        Mask kept = BpeLanes<V>::below(m);
        for (int k = 0; k < V; k++)
            _mm512_mask_storeu_epi32(out + 16 * k, (__mmask16)(kept >> (16 * k)), sv[k]);
        return m;
    }

    /* The lanes the chunk needs: 16 to 128 (2 <= n <= 128), a multiple of 16. */
    BPE_VECTOR static size_t bpe_merge_vector(const int32_t* grid, const uint64_t* slots, int bits,
                                              const uint8_t* s, size_t n, int32_t* out) {
        if (n <= 16) return bpe_merge_lanes<1>(grid, slots, bits, s, n, out);
        if (n <= 32) return bpe_merge_lanes<2>(grid, slots, bits, s, n, out);
        if (n <= 48) return bpe_merge_lanes<3>(grid, slots, bits, s, n, out);
        if (n <= 64) return bpe_merge_lanes<4>(grid, slots, bits, s, n, out);
        if (n <= 80) return bpe_merge_lanes<5>(grid, slots, bits, s, n, out);
        if (n <= 96) return bpe_merge_lanes<6>(grid, slots, bits, s, n, out);
        if (n <= 112) return bpe_merge_lanes<7>(grid, slots, bits, s, n, out);
        return bpe_merge_lanes<8>(grid, slots, bits, s, n, out);
    }
    #else
    #define BPE_MERGE_VECTOR 0
    static int bpe_merge_vector_ok(void) { return 0; }
    static size_t bpe_merge_vector(const int32_t* grid, const uint64_t* slots, int bits,
                                   const uint8_t* s, size_t n, int32_t* out) { return 0; }
    #endif
    """
    bint merge_vector_ok "bpe_merge_vector_ok"() noexcept nogil
    size_t merge_vector "bpe_merge_vector"(const int32_t* grid, const uint64_t* slots, int bits,
                                           const uint8_t* s, size_t n, int32_t* out) noexcept nogil


cdef struct Ranks:
    int32_t* grid              # (x << 8 | y) -> what bytes x, y merge into, or NO_MERGE
    uint64_t* slots            # the merges (see the docstring)
    int bits                   # 2**bits slots
    size_t longest             # the longest chunk merge_short takes (SHORT_MERGE, VECTOR_MERGE(_BIG))
    size_t symbols             # the symbols of the Merges it was built from; 0 if not built
                               # (2**21 symbols or more: then backtracking does all chunks)
    bint vector                # merge_vector can run on this CPU


cdef inline uint64_t rank_key(int32_t a, int32_t b) noexcept nogil:
    return (<uint64_t>a << RANK_BITS) | <uint64_t>b


cdef inline int ranks_build(Ranks* r, Merges* m) except -1:
    """The tables of the merges of m (none if m has 2**21 symbols or more)."""
    cdef size_t n = m.left.size(), i
    r.grid = NULL
    r.slots = NULL
    r.symbols = 0
    r.vector = merge_vector_ok()
    r.longest = SHORT_MERGE if not r.vector else VECTOR_MERGE_BIG if n >= BIG_VOCABULARY else VECTOR_MERGE
    if n >= (<size_t>1 << RANK_BITS):
        return 0
    r.grid = <int32_t*>malloc(65536 * sizeof(int32_t))
    if r.grid == NULL:
        raise MemoryError()
    for i in range(65536):
        r.grid[i] = NO_MERGE
    r.bits = half_full_bits(n - 256, 10)
    while not ranks_fill(r, m):        # a run of probes reached the last slots: twice the room
        r.bits += 1
    r.symbols = n
    return 0


cdef inline bint ranks_fill(Ranks* r, Merges* m) except -1:
    """Put the merges of m in a table of 2**r.bits + RANK_PAD slots, each in the first free slot
    at or after its home, with no wrapping; False if one would land in the last RANK_FREE_TAIL
    slots (which stay free, so that every probe, four slots at a time, meets a free one)."""
    cdef size_t t, i, end = (<size_t>1 << r.bits) + RANK_PAD - RANK_FREE_TAIL
    cdef uint64_t key
    free(r.slots)
    r.slots = <uint64_t*>malloc((end + RANK_FREE_TAIL) * sizeof(uint64_t))
    if r.slots == NULL:
        ranks_free(r)
        raise MemoryError()
    mark_free(<uint8_t*>r.slots, sizeof(uint64_t), end + RANK_FREE_TAIL)     # all ones: EMPTY
    for t in range(256, m.left.size()):
        if m.left[t] < 256 and m.right[t] < 256:
            r.grid[(m.left[t] << 8) | m.right[t]] = <int32_t>t
        key = rank_key(m.left[t], m.right[t])
        i = pair_home(key, r.bits)
        while r.slots[i] != EMPTY:
            i += 1
        if i >= end:
            return False
        r.slots[i] = (key << RANK_BITS) | t
    return True


cdef inline void ranks_free(Ranks* r) noexcept nogil:
    free(r.grid)
    free(r.slots)
    r.grid = NULL
    r.slots = NULL
    r.symbols = 0


cdef inline int32_t rank_of(const Ranks* r, int32_t a, int32_t b) noexcept nogil:
    """What a and b merge into, or NO_MERGE."""
    cdef uint64_t key = rank_key(a, b), slot
    cdef size_t i = pair_home(key, r.bits)
    if (a | b) < 256:
        return r.grid[(a << 8) | b]
    while True:                         # (never past the end: the last slots are free)
        slot = r.slots[i]
        if (slot >> RANK_BITS) == key:
            return <int32_t>(slot & ((<uint64_t>1 << RANK_BITS) - 1))
        if slot == EMPTY:
            return NO_MERGE
        i += 1


cdef inline void rank_ask(const Ranks* r, int32_t a, int32_t b) noexcept nogil:
    """Ask for the line where rank_of(a, b) looks first (a pair of bytes needs none)."""
    if (a | b) >= 256:
        prefetch(&r.slots[pair_home(rank_key(a, b), r.bits)])


cdef inline size_t merge_short(const Ranks* r, const uint8_t* s, size_t n, int32_t* out) noexcept nogil:
    """BPE of s (1 <= n <= r.longest bytes): the symbols into out (room for n), their number
    returned. merge_vector where the CPU has it (chunks of 2 or more bytes), else merge_scalar;
    the two give the same symbols (tests hold each to tiktoken)."""
    if r.vector and n >= 2:
        return merge_vector(r.grid, r.slots, r.bits, s, n, out)
    return merge_scalar(r, s, n, out)


cdef inline size_t merge_scalar(const Ranks* r, const uint8_t* s, size_t n, int32_t* out) noexcept nogil:
    """BPE of s (1 <= n <= SHORT_MERGE bytes) by replaying the merges, lowest first, over an
    array rescanned per merge: the symbols into out (room for n), their number returned. The
    two pairs a merge makes are asked for before the gap it leaves is closed, so both probes
    are on their way at once."""
    cdef int32_t sym[SHORT_MERGE + 9]       # (room for close_gap's blocks of 8)
    cdef int32_t rank[SHORT_MERGE + 9]      # rank[i]: what (sym[i], sym[i + 1]) merges into
    cdef int32_t low
    cdef size_t i, best, m = n
    if n == 0:                              # (no chunk is empty; n - 1 below would wrap)
        return 0
    for i in range(n):
        sym[i] = s[i]
    for i in range(n - 1):
        rank[i] = r.grid[(s[i] << 8) | s[i + 1]]
    while m > 1:
        best = argmin(rank, m - 1, &low)
        if low == NO_MERGE:
            break
        if best + 2 < m:
            rank_ask(r, low, sym[best + 2])
        if best > 0:
            rank_ask(r, sym[best - 1], low)
        sym[best] = low
        close_gap(sym, best + 1, m - 1)     # sym[best + 1] is merged in
        close_gap(rank, best + 1, m - 1)
        m -= 1
        if best + 1 < m:
            rank[best] = rank_of(r, low, sym[best + 1])
        if best > 0:
            rank[best - 1] = rank_of(r, sym[best - 1], low)
    for i in range(m):
        out[i] = sym[i]
    return m

