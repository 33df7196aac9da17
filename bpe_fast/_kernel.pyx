# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Stage 4, the training kernel: count pairs once, then apply merges incrementally.

The corpus is the word table laid out in one array with one slot per byte, as the bytes were:
a token that covers bytes p..e of a word keeps its id in slot p (its *start*) and in slot e a
*tail mark* -(id + 2); slots strictly inside a token hold -1. The next token starts at
p + len(token) (every token's length in bytes is known from its id), and the token before p
ends at p - 1, whose slot holds either a one-byte token's id or a tail mark naming the token,
hence its start. So four bytes per byte of the table are the whole corpus state: no links, no
per-position pair ids. A bit per slot marks where each word starts; weights come from each
word's count (words are laid out by falling count, so a short table gives the weight of most
slots without a per-slot word index).

Invariants kept between merges:

* ``count[pid]`` is exactly the number of occurrences of tracked pair ``pid`` in the corpus,
  each word weighted by its count (overlapping occurrences count: "aaa" holds (a, a) twice).
* ``occ[pid]`` lists, in increasing order, every position where pair ``pid`` starts, plus maybe
  stale positions; a position p is a real occurrence exactly when a token a starts at p and the
  next token in the same word is b. The list is kept as LEB128 varints of the gaps between
  positions (``occ_last`` is the last position written): one or two bytes an entry instead of
  eight, and positions of any size. When a pair's count falls to 0 its list is freed and the
  next gap counts from 0 again.
* A pair is *tracked* (has an id, a list and a heap entry) when its count, at the time it was
  counted, was at least ``track_from``. A pair's count never grows after the merge that creates
  its newest symbol, so an untracked pair stays below ``track_from``: while the best tracked
  count is at least ``track_from`` it is the true best. When it falls below, every pair is
  counted again from the corpus with ``track_from`` 16 times lower, down to ``min_count``
  ("recount"). Most pairs of a big corpus occur in one rare word only; not tracking them saves
  most of the memory and time. From bytes, ``track_from`` starts at 8 x min_count or, on a
  big corpus, at its pairs / (128 x the merges asked) (``default_track_from``): the merges of
  a long-tailed GB make a million new pairs counted 8 or more times, nearly all far below the
  last merge's count. Continuing from a base (millions of distinct pairs of its
  tokens), the first count raises ``track_from`` to the count of the 4 x n_merges-th best pair:
  the merges come from far fewer pairs than that, and a recount, should one be needed, finds
  the rest. Tracked ids are given in the order of each pair's first occurrence in slot order.
* Every tracked pair with a positive count has an entry in the heap whose count is >= its true
  count, or waits outside it (``waiting``) with a true count below ``heap_from``. Counts of
  existing pairs only fall, because a merge creates only pairs that hold the new symbol; those
  are pushed after the merge with their exact count. Popping an entry whose count is out of
  date re-pushes it with the true count ("lazy re-check"), so the entry that survives a pop is
  the true best: highest count, then smallest (left, right), as every waiting pair counts less.
  When the heap runs dry, ``heap_from`` falls to half the best waiting count and the pairs it
  now admits join the heap. Most tracked pairs are rare and never come near the top: waiting,
  they cost four bytes and no heap operation, and the heap stays small enough for the caches.

What one merge of (a, b) into z does to one occurrence at position p (x: the token before it,
r: the token after it; lengths in bytes):

        x         p         q         r                x         p                   r
    ... [ s     ] [ a ]     [ b     ] [ t ] ...  -> ... [ s     ] [ z               ] [ t ] ...
        (s,a) at x, (a,b) at p, (b,t) at q              (s,z) at x, (z,t) at p

Slot p now holds z, slot q (b's start) and a's old tail hold -1, and b's tail slot holds z's
tail mark. The pairs it destroys, (s, a) and (b, t), were made before this merge, so their
ids are read from two arrays filled for this merge from the pairs ending in a and starting with
b. The pairs it creates all hold z, so they are found by their other symbol (``with_left``:
s -> (s, z); ``with_right``: t -> (z, t)). Per merge only the positions in ``occ[(a, b)]`` are
visited: the cost follows the occurrences replaced, not the size of the corpus. The loop reads
like rustbpe's: pop the best pair, rewrite each of its occurrences, then settle the counts of
the pairs that appeared (the new ones counted at least ``track_from`` times are kept, with ids
closed up in creation order).

One merge on several threads, exactly as on one. The rewrite of an occurrence reads and writes
only slots of its own word (``prev_token`` and ``next_token`` stop at word starts); everything
else it reads (token lengths, weights, the ids of the destroyed pairs) no thread writes during
the merge. So the list of positions, cut into contiguous ranges whose boundaries fall between
words, can be rewritten one range per thread at once: each range meets the slots the one-thread
sweep would have met, so it makes the same decisions (stale or not) and the same events. A
thread writes its events into its own *ledger*, not into the shared pairs: the counts each
destroyed pair loses (summed by its other symbol), and the pairs it makes, in the order it made
them, each with its count, its positions (increasing) and its *cut*: where its list stood the
last time its count fell to 0. The *fold*, on one thread, then applies the ledgers in range
order, and the state it leaves is the one-thread sweep's, entry for entry:

* counts: sums do not depend on order. An existing pair only loses in a merge, so its count
  fell to 0 during the sweep exactly when it ends at 0; the fold frees its list then, as the
  sweep did.
* ids: the sweep makes a pair at its first use. Ranges follow each other in position order, so
  the first uses are range 0's in its order, then range 1's of the pairs range 0 did not make,
  and so on; the fold gives ids in exactly that order.
* lists: positions increase from range to range, so a range's list goes after the ones before
  (its first gap counted again from the list's last position). The sweep freed a new pair's
  list whenever its running count fell to 0. A new pair loses an occurrence only where it was
  made earlier in the same word (the token before was z), so within a range its count never
  falls below what it was when the range began: it falls to 0 inside range k only if it was 0
  when range k began, and then the list is range k's list from its cut. Otherwise range k's
  whole list is appended. (A pair that ends below ``track_from`` is dropped by settle whatever
  its list: the fold does not move such lists at all.)

Threads are a pool made with the kernel and ended with it (C++ std::thread: no OpenMP runtime
to build against, which Apple's compiler lacks, or to leave behind in a process that forks
counting workers later). A merge goes to the pool only when its list holds at least
``parallel_from`` bytes: most merges are small, and one thread does them with the same ledger
and fold, as one range. The set-up runs on the pool too, with the same result as one thread:
the layout (each thread places a range of the words; a first pass sums their lengths) and every
pair count (each thread counts a range of slots, cut at a token's start, in a map of its own; the
ranges' pairs are then numbered in range order, which is first appearance in slot order, and
each thread writes the positions of the tracked ones, found in a small map of their own,
straight into the lists, sized beforehand, its first gap counted from the range before). Work
that stays on one thread: the heap, the fold and settle of every merge, and the
rewrite of the small merges; ``Trainer.learn``'s stats measure it (see benchmarks/stages.py).
"""
cimport cython
import os

import numpy as np
cimport numpy as cnp
from cpython.exc cimport PyErr_CheckSignals
from libc.stdint cimport INT64_MAX, int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from libcpp.algorithm cimport nth_element, sort
from libcpp.vector cimport vector
from libcpp.queue cimport priority_queue
from libcpp.utility cimport pair

from ._pairmap cimport _slot as pair_home, half_full_bits
from ._pairmap cimport EMPTY, PairMap, pair_key, key_left, key_right, pairmap_init, pairmap_free, pairmap_get, \
    pairmap_get_or_add, pairmap_prefetch

cnp.import_array()

ctypedef void (*job_fn)(void*, int) noexcept nogil

cdef extern from *:
    """
    #include <chrono>
    #include <cstring>
    #include <time.h>
    #include <condition_variable>
    #include <mutex>
    #include <thread>
    #include <vector>

    /* A pair one thread made during a merge (see the module docstring: ledgers, cuts). Most
       such pairs are rare and dropped at the end of the merge: their lists stay in the struct
       (no allocation); a list that grows longer moves to the heap. */
    struct BpeMade {
        uint64_t key = 0;
        int64_t count = 0;
        int64_t last = 0;          /* the last position listed */
        size_t cut = 0;            /* bytes listed when the count last fell to 0 */
        int64_t cut_last = 0;      /* the position listed just before the cut */
        bool from_cut = false;     /* the fold: the list was freed before this thread's range */
        size_t n = 0;              /* bytes listed: varint gaps, the first from 0 */
        uint8_t small[40];
        std::vector<uint8_t> big;  /* the list once it outgrows small */

        void put(uint64_t gap) {
            uint8_t bytes[10];
            size_t k = 0;
            while (gap >= 128) { bytes[k++] = (uint8_t)((gap & 127) | 128); gap >>= 7; }
            bytes[k++] = (uint8_t)gap;
            if (big.empty() && n + k <= sizeof(small)) {
                memcpy(small + n, bytes, k);
            } else {
                if (big.empty()) { big.reserve(4 * sizeof(small)); big.assign(small, small + n); }
                big.insert(big.end(), bytes, bytes + k);
            }
            n += k;
        }
        const uint8_t* data() const { return big.empty() ? small : big.data(); }
    };

    /* One thread's record of a merge, and its share of the merge's list. */
    struct BpeLedger {
        std::vector<BpeMade> made;                /* in the order this thread made them */
        std::vector<int32_t> with_left, with_right;
        int32_t zz = -1;
        std::vector<int64_t> left_loss, right_loss;    /* by the destroyed pair's other symbol */
        std::vector<int32_t> lost_left, lost_right;    /* the symbols whose loss is not 0 */
        int64_t visited = 0, replaced = 0;
        size_t begin = 0, end = 0;                /* bytes of the list: this thread's chunk */
        int64_t base = 0;                         /* the position listed just before begin */
        double cpu = 0;                           /* CPU seconds of its last part */
    };

    /* Threads 1..n-1 wait for jobs; run() does part 0 on the calling thread and returns when
       every part is done. Made with the kernel, joined when it is freed. */
    typedef void (*bpe_job_fn)(void*, int);
    struct BpePool {
        std::vector<std::thread> threads;
        std::mutex mu;
        std::condition_variable wake, done;
        bpe_job_fn fn = nullptr;
        void* arg = nullptr;
        unsigned long generation = 0;
        size_t pending = 0;
        bool stop = false;

        explicit BpePool(int n) {
            try {
                for (int t = 1; t < n; ++t) threads.emplace_back([this, t] { loop(t); });
            } catch (...) {         /* no more threads to be had: end those started, then say so */
                finish();
                throw;
            }
        }
        ~BpePool() { finish(); }
        void finish() {
            { std::lock_guard<std::mutex> g(mu); stop = true; }
            wake.notify_all();
            for (auto& th : threads) th.join();
            threads.clear();
        }
        void loop(int t) {
            unsigned long seen = 0;
            for (;;) {
                bpe_job_fn f;
                void* a;
                {
                    std::unique_lock<std::mutex> g(mu);
                    wake.wait(g, [&] { return stop || generation != seen; });
                    if (stop) return;
                    seen = generation;
                    f = fn;
                    a = arg;
                }
                f(a, t);
                std::lock_guard<std::mutex> g(mu);
                if (--pending == 0) done.notify_one();
            }
        }
        void run(bpe_job_fn f, void* a) {
            {
                std::lock_guard<std::mutex> g(mu);
                fn = f;
                arg = a;
                pending = threads.size();
                ++generation;
            }
            wake.notify_all();
            f(a, 0);
            std::unique_lock<std::mutex> g(mu);
            done.wait(g, [&] { return pending == 0; });
        }
    };

    #if defined(__GNUC__) || defined(__clang__)
    #define bpe_prefetch(p) __builtin_prefetch((p))
    #else
    #define bpe_prefetch(p) ((void)(p))
    #endif

    static double bpe_now(void) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    }

    /* CPU seconds the calling thread has run: what a part of a merge costs, whatever the load
       (0 where there is no such clock). */
    #if defined(CLOCK_THREAD_CPUTIME_ID)
    static double bpe_thread_cpu(void) {
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    #else
    static double bpe_thread_cpu(void) { return 0.0; }
    #endif
    """
    cdef cppclass Made "BpeMade":
        uint64_t key
        int64_t count, last, cut_last
        size_t cut, n
        bint from_cut
        vector[uint8_t] big
        void put(uint64_t) nogil
        const uint8_t* data() nogil
    cdef cppclass Ledger "BpeLedger":
        vector[Made] made
        vector[int32_t] with_left, with_right
        int32_t zz
        vector[int64_t] left_loss, right_loss
        vector[int32_t] lost_left, lost_right
        int64_t visited, replaced
        size_t begin, end
        int64_t base
        double cpu
    cdef cppclass Pool "BpePool":
        Pool(int) except +
        void run(job_fn, void*) nogil
    double now "bpe_now"() nogil
    double thread_cpu "bpe_thread_cpu"() nogil
    void prefetch "bpe_prefetch"(const void*) nogil

# How often the set-up loops look for Ctrl-C (in slots); the merge loop looks once per merge,
# so an interrupt stops training within one merge.
cdef enum:
    SIGNAL_CHECK_EVERY = 1 << 22
    MIDDLE = -1            # a slot strictly inside a token
    HEAVY = 256            # words counted at least this often get a per-slot word index
    PARALLEL_FROM = 1 << 13   # bytes of a merge's list from which the threads share it (tuned)
    LOOK_AHEAD = 16        # entries of a list whose slots are fetched before they are visited
    # A recount's pipelines (count_slots, list_slots): a ring of AHEAD positions (a power of 2,
    # more than PROBE_LAG + TALLY_LAG).
    AHEAD = 32
    PROBE_LAG = 16
    TALLY_LAG = 8
    TRACK_PER_MERGE = 4    # continuing, the first count tracks about this many pairs per merge asked for
    LOWER_BY = 16          # a recount lowers track_from this many times (to min_count at least)
    # From bytes, new pairs are tracked from (pairs in the corpus) / (merges asked x TRACK_SHARE):
    # on five long-tailed 1 GB corpora at 32k-64k the last merge's count was 1/27-1/66 of pairs /
    # merges, so this threshold sits 2-4 times below it (a recount if a corpus falls lower)
    TRACK_SHARE = 128

# (id of a pair, its other symbol): see _Merger.ends_with
ctypedef pair[int32_t, int32_t] Neighbour

# ((count, ~key), id): the max-heap's top has the highest count, then the smallest key.
ctypedef pair[pair[int64_t, uint64_t], int32_t] HeapEntry


cdef inline int32_t tail_mark(int32_t token) noexcept nogil:
    return -token - 2


cdef inline int32_t token_of_tail(int32_t mark) noexcept nogil:
    return -mark - 2


def check_word_table(symbols, const int64_t[::1] offsets, const int64_t[::1] counts):
    """Raise ValueError unless the arrays make a word table the kernel can train on."""
    cdef Py_ssize_t n_sym = len(symbols), n_words = counts.shape[0]
    if offsets.shape[0] != n_words + 1 or (n_words and offsets[n_words] != n_sym) or (n_words == 0 and n_sym):
        raise ValueError("word table is inconsistent: offsets must have n_words + 1 entries ending at len(symbols)")
    if n_words >= 2 ** 31 - 1:
        raise ValueError(f"word table has {n_words} words; the kernel numbers them with int32")
    if n_words and (offsets[0] != 0 or np.any(np.diff(offsets) < 0)):
        raise ValueError("word table is inconsistent: offsets must start at 0 and never decrease")
    if n_words and np.min(counts) <= 0:
        raise ValueError("word table is inconsistent: every word count must be positive")
    if n_sym and (np.min(symbols) < 0 or np.max(symbols) > 255):
        raise ValueError("symbols must be byte ids 0..255")


def default_track_from(const int64_t[::1] offsets, counts, Py_ssize_t n_merges, int64_t min_count):
    """Training from bytes, the count from which new pairs are tracked: 8 x min_count, or, on a
    big corpus, a share of the pairs per merge asked (TRACK_SHARE). Most pairs that merges make
    in a long-tailed corpus are rare and never come near the top; each tracked one costs about
    100 bytes and a heap entry. Any value gives the same merges (a recount finds pairs that were
    not tracked); too high a value costs recounts, too low one memory."""
    # (an elementwise product and a sum: np.dot would go to BLAS, whose threads then spin for a
    # while, 0.1-0.3 CPU s on a 5 M-word table)
    pairs = float(np.multiply(counts, np.diff(np.asarray(offsets)) - 1, dtype=np.float64).sum())
    return max(8 * min_count, int(pairs / (max(n_merges, 1) * TRACK_SHARE)))


def kernel_positions(const int64_t[::1] offsets, counts):
    """Where each word of a table starts in the kernel's layout (words by falling count, as
    by_falling_count orders them), an int64 array: for a ``start`` in kernel order (Trainer)."""
    order, _ = by_falling_count(np.asarray(counts))
    lengths = np.diff(np.asarray(offsets))[order]
    positions = np.empty(len(order), dtype=np.int64)
    positions[order] = np.cumsum(lengths) - lengths
    return positions


def by_falling_count(counts):
    """The words in order of falling count, as int32 indices, and how many are heavy (counted
    at least HEAVY times, first). Few words are heavy: they are sorted; the rest are grouped by
    their exact count with a counting sort, in table order within a count: O(n), and no array
    of 64-bit sort keys."""
    heavy = np.flatnonzero(counts >= HEAVY)
    heavy = heavy[np.argsort(-counts[heavy], kind="stable")].astype(np.int32)
    light_counts = np.where(counts < HEAVY, counts, 0)
    histogram = np.bincount(light_counts, minlength=HEAVY)
    histogram[0] = 0
    at_least = np.append(np.cumsum(histogram[::-1])[::-1], 0)     # light words counted >= c times
    starts = (len(heavy) + at_least[1:]).astype(np.int64)          # where count c begins, falling
    order = np.empty(len(counts), dtype=np.int32)
    order[:len(heavy)] = heavy
    _scatter_by_count(light_counts, starts, order)
    return order, len(heavy)


cdef void _scatter_by_count(const int64_t[::1] counts, int64_t[::1] next_at, int32_t[::1] order) noexcept:
    cdef Py_ssize_t w
    for w in range(counts.shape[0]):
        if counts[w] > 0:
            order[next_at[counts[w]]] = <int32_t>w
            next_at[counts[w]] += 1


# -- the corpus, as every thread reads it ------------------------------------------------------
cdef struct Corpus:
    int32_t* sym                   # one slot per byte (module docstring)
    const uint8_t* word_starts     # a bit per slot: 1 where a word starts
    int32_t* token_len             # bytes of each token id
    Py_ssize_t n                   # slots
    # weights: slots below heavy_end belong to heavy words (word_of gives which); after that,
    # runs of words of equal count, starting at run_start[k], all weigh run_count[k]
    Py_ssize_t heavy_end
    const int32_t* word_of
    const int64_t* heavy_count
    const int64_t* run_start
    const int64_t* run_count
    Py_ssize_t n_runs
    # the merge in progress: s -> id of the tracked pair (s, a), t -> id of (b, t), or -1
    const int32_t* left_of
    const int32_t* right_of


cdef inline bint starts_a_word(const Corpus* c, Py_ssize_t p) noexcept nogil:
    return (c.word_starts[p >> 3] >> (p & 7)) & 1


cdef inline Py_ssize_t next_token(const Corpus* c, Py_ssize_t p) noexcept nogil:
    """Where the token after the one at p starts, or -1 if it is the last of its word."""
    cdef Py_ssize_t q = p + c.token_len[c.sym[p]]
    return q if q < c.n and not starts_a_word(c, q) else -1


cdef inline Py_ssize_t prev_token(const Corpus* c, Py_ssize_t p) noexcept nogil:
    """Where the token before the one at p starts, or -1 if p starts its word."""
    if starts_a_word(c, p):
        return -1
    cdef int32_t before = c.sym[p - 1]
    return p - 1 if before >= 0 else p - c.token_len[token_of_tail(before)]


cdef inline Py_ssize_t next_word_start(const Corpus* c, Py_ssize_t p) noexcept nogil:
    """The first slot after p that starts a word (n if none): a byte of the bitmap at a time
    where it can, as a word may be long (a whole document, without a pattern)."""
    cdef Py_ssize_t y = p + 1
    while y < c.n and (y & 7) and not starts_a_word(c, y):
        y += 1
    while y + 8 <= c.n and not (y & 7) and c.word_starts[y >> 3] == 0:
        y += 8
    while y < c.n and not starts_a_word(c, y):
        y += 1
    return y if y < c.n else c.n


cdef inline int64_t weight_at(const Corpus* c, Py_ssize_t p) noexcept nogil:
    """The count of the word slot p belongs to."""
    if p < c.heavy_end:
        return c.heavy_count[c.word_of[p]]
    cdef Py_ssize_t lo = 0, hi = c.n_runs - 1, mid
    while lo < hi:                              # the last run that starts at or before p
        mid = (lo + hi + 1) >> 1
        if c.run_start[mid] <= p:
            lo = mid
        else:
            hi = mid - 1
    return c.run_count[lo]


cdef inline void put_varint(vector[uint8_t]* where, uint64_t gap) noexcept nogil:
    """Append a gap, 7 bits a byte (LEB128)."""
    while gap >= 128:
        where.push_back(<uint8_t>(gap & 127) | 128)
        gap >>= 7
    where.push_back(<uint8_t>gap)


cdef inline size_t put_gap(uint8_t* out, size_t at, uint64_t gap) noexcept nogil:
    """Write a gap at out[at], as put_varint appends it; returns the byte after it."""
    while gap >= 128:
        out[at] = <uint8_t>(gap & 127) | 128
        at += 1
        gap >>= 7
    out[at] = <uint8_t>gap
    return at + 1


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


# -- one thread's part of a merge --------------------------------------------------------------
cdef struct MergeJob:
    const Corpus* corpus
    const uint8_t* occ             # the merged pair's list
    size_t n_bytes
    int32_t a, b, z
    Ledger* ledgers                # one per thread


cdef inline int32_t made_id(Ledger* L, int32_t s, int32_t z, bint z_on_left) noexcept nogil:
    """The ledger's index of (z, s) if z_on_left else (s, z), made on first use."""
    cdef int32_t* slot = &L.zz if s == z else (&L.with_right[s] if z_on_left else &L.with_left[s])
    if slot[0] < 0:
        slot[0] = <int32_t>L.made.size()
        L.made.resize(L.made.size() + 1)
        L.made[slot[0]].key = pair_key(z, s) if z_on_left else pair_key(s, z)
    return slot[0]


cdef inline void gains(Ledger* L, int32_t i, Py_ssize_t pos, int64_t weight) noexcept nogil:
    """One more occurrence of a pair this merge made. Positions arrive in increasing order and
    each at most once per pair, so the list stays sorted without a check."""
    cdef Made* m = &L.made[i]
    m.count += weight
    m.put(<uint64_t>(pos - m.last))
    m.last = pos


cdef inline void loses_made(Ledger* L, int32_t i, int64_t weight) noexcept nogil:
    """One occurrence fewer of a pair this merge made (the token before was z); at 0 its list
    would be freed here: note where (the fold decides whether it really was)."""
    cdef Made* m = &L.made[i]
    m.count -= weight
    if m.count == 0:
        m.cut = m.n
        m.cut_last = m.last


cdef inline void rewrite(const Corpus* c, Ledger* L, Py_ssize_t p, Py_ssize_t q, int32_t a, int32_t b,
                         int32_t z) noexcept nogil:
    """Replace the occurrence (a, b) at p (b starting at q) by z (the picture above)."""
    cdef Py_ssize_t x = prev_token(c, p)
    cdef Py_ssize_t r = next_token(c, q)
    cdef Py_ssize_t tail = q + c.token_len[b] - 1
    cdef int64_t weight = weight_at(c, p)
    cdef int32_t s, t
    if x >= 0:                                  # (s, a) at x becomes (s, z)
        s = c.sym[x]
        if s == z:                              # made earlier in this word by this merge
            loses_made(L, L.with_right[a], weight)
        elif c.left_of[s] >= 0:                 # (untracked pairs are not counted)
            if L.left_loss[s] == 0:
                L.lost_left.push_back(s)
            L.left_loss[s] += weight
        gains(L, made_id(L, s, z, False), x, weight)
    if r >= 0:                                  # (b, t) at q becomes (z, t) at p
        t = c.sym[r]
        if c.right_of[t] >= 0:
            if L.right_loss[t] == 0:
                L.lost_right.push_back(t)
            L.right_loss[t] += weight
        gains(L, made_id(L, t, z, True), p, weight)
    if q - 1 > p:
        c.sym[q - 1] = MIDDLE                   # a's tail is inside z now
    if tail > q:
        c.sym[q] = MIDDLE                       # so is b's start
    c.sym[tail] = tail_mark(z)
    c.sym[p] = z


cdef inline void visit(const Corpus* c, Ledger* L, Py_ssize_t p, int32_t a, int32_t b, int32_t z) noexcept nogil:
    """Rewrite the listed position p unless it is stale."""
    cdef Py_ssize_t q
    L.visited += 1
    if c.sym[p] != a:
        return                                  # stale: a no longer starts here
    q = next_token(c, p)
    if q < 0 or c.sym[q] != b:
        return                                  # stale: b no longer follows
    rewrite(c, L, p, q, a, b, z)
    L.replaced += 1


cdef void rewrite_range(const MergeJob* job, Ledger* L) noexcept nogil:
    """Rewrite this thread's range of the list, left to right (so "aaa" merges as (aa)a).

    The chunk [begin, end) of the list's bytes is cut at entries, not at words; the range moves
    both ends to word boundaries: it starts at the first entry of the chunk that is not in the
    word of the entry before the chunk (those belong to the thread before), and runs past the
    chunk's end while the entries are in the word of the chunk's last entry. Both threads at a
    boundary compute it from the same entry, so the ranges cover the list once, word-disjoint."""
    cdef const Corpus* c = job.corpus
    cdef size_t i = L.begin, after
    cdef Py_ssize_t p = L.base, lo = next_word_start(c, L.base) if L.begin > 0 else 0, hi = -1
    cdef uint64_t gap
    while i < job.n_bytes:                      # skip the previous thread's word
        after = get_varint(job.occ, i, &gap)
        if p + <Py_ssize_t>gap >= lo:
            break
        i, p = after, p + <Py_ssize_t>gap
    if i >= L.end:
        return
    # The slots visited are far apart in a big corpus, and each visit waits for its slot to come
    # from memory: a second reader of the list runs LOOK_AHEAD entries ahead and asks for them.
    cdef size_t ahead = i
    cdef Py_ssize_t ahead_p = p
    cdef int k
    for k in range(LOOK_AHEAD):
        if ahead >= job.n_bytes:
            break
        ahead = get_varint(job.occ, ahead, &gap)
        ahead_p += <Py_ssize_t>gap
        prefetch(&c.sym[ahead_p])
        prefetch(&c.word_starts[ahead_p >> 3])
    while i < job.n_bytes:
        if i >= L.end and hi < 0:
            hi = next_word_start(c, p)          # p: the chunk's last entry
        after = get_varint(job.occ, i, &gap)
        if i >= L.end and p + <Py_ssize_t>gap >= hi:
            break
        i, p = after, p + <Py_ssize_t>gap
        if ahead < job.n_bytes:
            ahead = get_varint(job.occ, ahead, &gap)
            ahead_p += <Py_ssize_t>gap
            prefetch(&c.sym[ahead_p])
            prefetch(&c.word_starts[ahead_p >> 3])   # (a bit per slot, still too big for the caches)
        visit(c, L, p, job.a, job.b, job.z)


cdef int64_t sum_gaps(const uint8_t* data, size_t end) noexcept nogil:
    """The position listed last before byte ``end``: every gap before it, summed."""
    cdef size_t i = 0
    cdef uint64_t gap, total = 0
    while i < end:
        i = get_varint(data, i, &gap)
        total += gap
    return <int64_t>total


cdef void merge_part(void* arg, int tid) noexcept nogil:
    """The pool's job: thread tid's part of the merge. Each thread sums the gaps before its chunk
    itself (a read of the bytes, far cheaper than the rewrite), so one hand-over starts it all."""
    cdef const MergeJob* job = <const MergeJob*>arg
    cdef Ledger* L = &job.ledgers[tid]
    cdef double t0 = thread_cpu()
    L.base = sum_gaps(job.occ, L.begin)
    rewrite_range(job, L)
    L.cpu = thread_cpu() - t0


cdef inline size_t entry_at_or_after(const uint8_t* data, size_t i, size_t n) noexcept nogil:
    """The first byte at or after i that starts an entry (n if none)."""
    while 0 < i < n and data[i - 1] & 128:
        i += 1
    return i


# -- one thread's part of counting the pairs (recount) ------------------------------------------
# Both passes of a recount go from token to token (a token's length leads to the next start) and
# run as pipelines: the pairs of a base's tokens are many (millions, against thousands of byte
# pairs), so the maps and tallies miss the CPU's caches, and each stage asks for the memory the
# next one reads. A position's key is hashed and its map slot asked for; PROBE_LAG positions
# later the map gives its number (and, in the first pass, its tally is asked for); TALLY_LAG
# after that its tally takes the weight. So the waits overlap instead of following each other.
cdef struct Tally:
    # One pair in one thread's range: its weighted count, its first and last position, and the
    # bytes of its list there (varint gaps, the first counted from 0). 32 bytes: one cache line
    # holds two, and a tally costs one wait, not four.
    int64_t total
    int64_t first
    int64_t last
    int64_t nbytes


cdef struct TotalSlot:
    uint64_t key                   # EMPTY if free
    int64_t total


cdef struct TotalMap:
    # A pair's key -> its weighted count, in one 16-byte slot (one cache line for the probe and
    # the sum), open addressing, at most half full, doubling when needed.
    TotalSlot* slots
    int bits
    size_t size


cdef int totalmap_init(TotalMap* m, size_t expected) noexcept nogil:
    cdef int bits = half_full_bits(expected, 10)
    cdef size_t i
    m.slots = <TotalSlot*>malloc((<size_t>1 << bits) * sizeof(TotalSlot))
    if m.slots == NULL:
        return -1
    for i in range(<size_t>1 << bits):
        m.slots[i].key = EMPTY
    m.bits, m.size = bits, 0
    return 0


cdef inline void totalmap_free(TotalMap* m) noexcept nogil:
    free(m.slots)
    m.slots = NULL


cdef inline void totalmap_prefetch(const TotalMap* m, uint64_t key) noexcept nogil:
    prefetch(&m.slots[pair_home(key, m.bits)])


cdef int totalmap_add(TotalMap* m, uint64_t key, int64_t weight) noexcept nogil:
    """Add weight to key's count (a new key starts at 0). -1 if out of memory."""
    cdef size_t mask = (<size_t>1 << m.bits) - 1, i = pair_home(key, m.bits), j, old_n
    cdef TotalSlot* old
    while True:
        if m.slots[i].key == key:
            m.slots[i].total += weight
            return 0
        if m.slots[i].key == EMPTY:
            break
        i = (i + 1) & mask
    if 2 * (m.size + 1) > (<size_t>1 << m.bits):         # grow, then add
        old, old_n = m.slots, <size_t>1 << m.bits
        if totalmap_init(m, old_n) != 0:
            m.slots = old
            return -1
        mask = (<size_t>1 << m.bits) - 1
        for j in range(old_n):
            if old[j].key != EMPTY:
                i = pair_home(old[j].key, m.bits)
                while m.slots[i].key != EMPTY:
                    i = (i + 1) & mask
                m.slots[i] = old[j]
                m.size += 1
        free(old)
        return totalmap_add(m, key, weight)
    m.slots[i].key, m.slots[i].total = key, weight
    m.size += 1
    return 0


cdef cppclass CountPart:
    # Pass 1 over a range of slots (lo..hi, each a token's start): every pair that starts there,
    # numbered locally in order of first appearance, with its key and its tally. Pass 2 writes
    # the positions of the tracked pairs, by tracked id, at ``cursor`` (bytes into the pair's
    # list) from ``written`` (the position listed last), as the plan set them.
    PairMap seen
    vector[uint64_t] keys
    vector[Tally] tally
    vector[int32_t] number         # the plan: local id -> number among all ranges' pairs
    vector[int64_t] cursor
    vector[int64_t] written
    Py_ssize_t lo, hi, at, run
    bint failed
    # Continuing (CountJob.by_total): pass 1 keeps only each pair's weighted count, in ``totals``;
    # pass 2 appends each tracked pair's gaps to its list of this range, ``lists[pid]``.
    TotalMap totals
    vector[vector[uint8_t]] lists


cdef struct CountJob:
    const Corpus* corpus
    CountPart* parts
    bint listing                   # pass 2
    bint by_total                  # continuing: the slimmer passes (count_totals, list_growing)
    const PairMap* tracked         # pass 2: key -> tracked id, for the tracked pairs only
    Py_ssize_t step                # slots a thread does per call (then Ctrl-C is looked for)
    vector[uint8_t]* occ           # the tracked pairs' lists, sized by the plan


cdef inline int varint_len(uint64_t gap) noexcept nogil:
    cdef int n = 1
    while gap >= 128:
        gap >>= 7
        n += 1
    return n


cdef inline int64_t walk_weight(const Corpus* c, Py_ssize_t p, Py_ssize_t* run) noexcept nogil:
    """weight_at for positions that only grow: the run is walked forward, not searched."""
    if p < c.heavy_end:
        return c.heavy_count[c.word_of[p]]
    while c.run_start[run[0] + 1] <= p:
        run[0] += 1
    return c.run_count[run[0]]


cdef inline bint number_one(CountPart* P, const Py_ssize_t* ring_p, const uint64_t* ring_key, int32_t* ring_u,
                            Py_ssize_t i) noexcept nogil:
    """Pass 1's probe stage for the i-th position queued: its pair's local number (a new pair
    gets the next one, its key and an empty tally); its tally asked for. False if out of memory."""
    cdef Py_ssize_t k = i & (AHEAD - 1)
    cdef Tally empty
    cdef int32_t u = pairmap_get_or_add(&P.seen, ring_key[k], <int32_t>P.keys.size())
    if u < 0:
        return False
    if u == <int32_t>P.keys.size():
        P.keys.push_back(ring_key[k])
        empty.total, empty.first, empty.last, empty.nbytes = 0, ring_p[k], 0, 0
        P.tally.push_back(empty)
    ring_u[k] = u
    prefetch(&P.tally[u])
    return True


cdef inline void tally_one(const Corpus* c, CountPart* P, const Py_ssize_t* ring_p, const int32_t* ring_u,
                           Py_ssize_t i) noexcept nogil:
    """Pass 1's tally stage for the i-th position queued (in order of position)."""
    cdef Py_ssize_t k = i & (AHEAD - 1), p = ring_p[k]
    cdef Tally* t = &P.tally[ring_u[k]]
    t.total += walk_weight(c, p, &P.run)
    t.nbytes += varint_len(<uint64_t>(p - t.last))
    t.last = p


cdef void count_slots(const CountJob* job, CountPart* P) noexcept nogil:
    cdef const Corpus* c = job.corpus
    cdef Py_ssize_t p = P.at, q, end = min(P.at + job.step, P.hi), queued = 0, probed = 0, tallied = 0, k
    cdef Py_ssize_t ring_p[AHEAD]
    cdef uint64_t ring_key[AHEAD]
    cdef int32_t ring_u[AHEAD]
    while p < end:
        q = p + c.token_len[c.sym[p]]
        if q < c.n and not starts_a_word(c, q):
            k = queued & (AHEAD - 1)
            ring_p[k], ring_key[k] = p, pair_key(c.sym[p], c.sym[q])
            pairmap_prefetch(&P.seen, ring_key[k])
            queued += 1
            if queued - probed > PROBE_LAG:
                if not number_one(P, ring_p, ring_key, ring_u, probed):
                    P.failed, P.at = True, P.hi
                    return
                probed += 1
            if probed - tallied > TALLY_LAG:
                tally_one(c, P, ring_p, ring_u, tallied)
                tallied += 1
        p = q
    while probed < queued:
        if not number_one(P, ring_p, ring_key, ring_u, probed):
            P.failed, P.at = True, P.hi
            return
        probed += 1
    while tallied < queued:
        tally_one(c, P, ring_p, ring_u, tallied)
        tallied += 1
    P.at = p


cdef inline void list_one(const CountJob* job, CountPart* P, const Py_ssize_t* ring_p, const uint64_t* ring_key,
                          Py_ssize_t i) noexcept nogil:
    """Pass 2's write stage for the i-th position queued: listed if its pair is tracked."""
    cdef Py_ssize_t k = i & (AHEAD - 1), p = ring_p[k]
    cdef int32_t pid = pairmap_get(job.tracked, ring_key[k])
    if pid < 0:
        return
    P.cursor[pid] = put_gap(job.occ[pid].data(), P.cursor[pid], <uint64_t>(p - P.written[pid]))
    P.written[pid] = p


cdef void list_slots(const CountJob* job, CountPart* P) noexcept nogil:
    cdef const Corpus* c = job.corpus
    cdef Py_ssize_t p = P.at, q, end = min(P.at + job.step, P.hi), queued = 0, listed = 0, k
    cdef Py_ssize_t ring_p[AHEAD]
    cdef uint64_t ring_key[AHEAD]
    while p < end:
        q = p + c.token_len[c.sym[p]]
        if q < c.n and not starts_a_word(c, q):
            k = queued & (AHEAD - 1)
            ring_p[k], ring_key[k] = p, pair_key(c.sym[p], c.sym[q])
            pairmap_prefetch(job.tracked, ring_key[k])
            queued += 1
            if queued - listed > PROBE_LAG:
                list_one(job, P, ring_p, ring_key, listed)
                listed += 1
        p = q
    while listed < queued:
        list_one(job, P, ring_p, ring_key, listed)
        listed += 1
    P.at = p


cdef int64_t best_total(const vector[int64_t]& totals, Py_ssize_t rank) noexcept:
    """The rank-th highest of the totals (1 if there are fewer)."""
    cdef vector[int64_t] falling
    cdef size_t u
    if rank < 1 or <size_t>rank > totals.size():
        return 1
    falling.reserve(totals.size())
    for u in range(totals.size()):
        falling.push_back(-totals[u])
    nth_element(falling.begin(), falling.begin() + (rank - 1), falling.end())
    return -falling[rank - 1]


cdef void count_part(void* arg, int tid) noexcept nogil:
    """The pool's job in a recount: thread tid's next step of the current pass."""
    cdef const CountJob* job = <const CountJob*>arg
    if job.by_total:
        if job.listing:
            list_growing(job, &job.parts[tid])
        else:
            count_totals(job, &job.parts[tid])
    elif job.listing:
        list_slots(job, &job.parts[tid])
    else:
        count_slots(job, &job.parts[tid])


# -- continuing from a base: the slimmer recount -------------------------------------------------
# A base's tokens make millions of distinct pairs (stage two of superword training on 52 MB of
# long-tailed text: 1.57 M, 1.12 M in each half of the slots), against a few thousand tracked.
# count_slots keeps for each a map entry (key and number: two cache lines) and a 32-byte tally
# (a third), to size every list before pass 2; three misses a position filled the CPU's queue of
# misses. Continuing, pass 1 keeps only the weighted count, in the map's own slot (one miss), and
# pass 2 grows each tracked pair's list of a range as it goes; the ranges' lists are then joined.

cdef void count_totals(const CountJob* job, CountPart* P) noexcept nogil:
    """Pass 1, continuing: every pair's weighted count, in this range's TotalMap."""
    cdef const Corpus* c = job.corpus
    cdef Py_ssize_t p = P.at, q, end = min(P.at + job.step, P.hi), queued = 0, added = 0, k
    cdef uint64_t ring_key[AHEAD]
    cdef int64_t ring_w[AHEAD]
    while p < end:
        q = p + c.token_len[c.sym[p]]
        if q < c.n and not starts_a_word(c, q):
            k = queued & (AHEAD - 1)
            ring_key[k], ring_w[k] = pair_key(c.sym[p], c.sym[q]), walk_weight(c, p, &P.run)
            totalmap_prefetch(&P.totals, ring_key[k])
            queued += 1
            if queued - added > PROBE_LAG:
                k = added & (AHEAD - 1)
                if totalmap_add(&P.totals, ring_key[k], ring_w[k]) != 0:
                    P.failed, P.at = True, P.hi
                    return
                added += 1
        p = q
    while added < queued:
        k = added & (AHEAD - 1)
        if totalmap_add(&P.totals, ring_key[k], ring_w[k]) != 0:
            P.failed, P.at = True, P.hi
            return
        added += 1
    P.at = p


cdef void list_growing(const CountJob* job, CountPart* P) noexcept nogil:
    """Pass 2, continuing: each tracked pair's positions in this range, as gaps (the first from
    0) appended to its list of the range."""
    cdef const Corpus* c = job.corpus
    cdef Py_ssize_t p = P.at, q, end = min(P.at + job.step, P.hi)
    cdef int32_t pid
    while p < end:
        q = p + c.token_len[c.sym[p]]
        if q < c.n and not starts_a_word(c, q):
            pid = pairmap_get(job.tracked, pair_key(c.sym[p], c.sym[q]))      # (a small map: cached)
            if pid >= 0:
                put_varint(&P.lists[pid], <uint64_t>(p - P.written[pid]))
                P.written[pid] = p
        p = q
    P.at = p


# -- one thread's part of laying the words out --------------------------------------------------
cdef cppclass LayoutPart:
    # Words k0..k1 - 1 of the falling-count order, placed from slot p0 on. The word-start bits of
    # the byte holding p0 wait in ``head`` (the part before may write that byte), so no byte of
    # the bitmap is written by two threads.
    Py_ssize_t k0, k1, at
    int64_t p0, p
    uint8_t head
    int64_t heavy_end              # where the light words begin, if in this part (else -1)
    vector[int64_t] run_start, run_count


cdef struct LayoutJob:
    const int32_t* order
    const int64_t* offsets
    const int64_t* counts
    const uint8_t* source
    const int32_t* slots           # continuing: the base's slots (NULL: the bytes, by rank)
    bint taken                     # continuing: sym is the base's slots already (nothing to copy)
    const int32_t* rank
    int32_t* sym
    uint8_t* word_starts
    Py_ssize_t n_heavy, step
    bint placing                   # pass 2 (pass 1 sums each part's slots)
    LayoutPart* parts


cdef void size_words(const LayoutJob* job, LayoutPart* P) noexcept nogil:
    cdef Py_ssize_t k
    cdef int64_t total = 0
    for k in range(P.k0, P.k1):
        total += job.offsets[job.order[k] + 1] - job.offsets[job.order[k]]
    P.p = total


cdef void place_words(const LayoutJob* job, LayoutPart* P) noexcept nogil:
    cdef Py_ssize_t k, b, w, end = min(P.at + job.step, P.k1)
    cdef int64_t src, length, p = P.p
    for k in range(P.at, end):
        w = job.order[k]
        if k == job.n_heavy:
            P.heavy_end = p
        if k >= job.n_heavy and (k == job.n_heavy or job.counts[w] != job.counts[job.order[k - 1]]):
            P.run_start.push_back(p)                # a run of words of one count begins
            P.run_count.push_back(job.counts[w])
        src = job.offsets[w]
        length = job.offsets[w + 1] - src
        if length and (p >> 3) == (P.p0 >> 3):
            P.head |= 1 << (p & 7)
        elif length:
            job.word_starts[p >> 3] |= 1 << (p & 7)
        if job.taken:
            pass
        elif job.slots != NULL:
            for b in range(length):
                job.sym[p + b] = job.slots[src + b]
        else:
            for b in range(length):
                job.sym[p + b] = job.rank[job.source[src + b]]
        p += length
    P.p, P.at = p, end


cdef void layout_part(void* arg, int tid) noexcept nogil:
    cdef const LayoutJob* job = <const LayoutJob*>arg
    if job.placing:
        place_words(job, &job.parts[tid])
    else:
        size_words(job, &job.parts[tid])


cdef bint all_placed(const LayoutPart* parts, int n_parts) noexcept:
    cdef int k
    for k in range(n_parts):
        if parts[k].at < parts[k].k1:
            return False
    return True


cdef int64_t sum_placed(const LayoutPart* parts, int n_parts) noexcept:
    cdef int k
    cdef int64_t total = 0
    for k in range(n_parts):
        total += parts[k].p - parts[k].p0
    return total


@cython.final
cdef class _Merger:
    """The corpus, the tracked pairs with their counts and occurrences, the heap, and the threads:
    everything one training run changes, on one object so the merge loop reaches it directly."""
    # the corpus's arrays (c points into them; see Corpus)
    cdef int32_t[::1] sym
    cdef uint8_t[::1] word_starts
    cdef int32_t[::1] token_len
    cdef int32_t[::1] word_of
    cdef int64_t[::1] heavy_count
    cdef int64_t[::1] run_start
    cdef int64_t[::1] run_count
    cdef Corpus c
    # the tracked pairs, by dense id
    cdef vector[uint64_t] keys     # (left << 32 | right)
    cdef vector[int64_t] count
    cdef vector[vector[uint8_t]] occ
    cdef vector[int64_t] occ_last
    # by symbol x: (id, s) of each tracked pair (s, x), and (id, t) of each (x, t); pairs whose
    # count fell to 0 stay listed (their key never occurs again: it holds no newer symbol), so
    # that a merge reads these lists straight, not the pairs' counts and keys all over memory
    cdef vector[vector[Neighbour]] ends_with
    cdef vector[vector[Neighbour]] starts_with
    cdef priority_queue[HeapEntry] heap
    cdef vector[int32_t] waiting   # tracked pairs counted below heap_from, out of the heap
    cdef int64_t heap_from
    cdef int64_t track_from
    cdef bint many_pairs           # continuing from a base: see plan_lists
    cdef Py_ssize_t n_merges       # merges asked for (continuing, the first count tracks in proportion)
    # the merge in progress
    cdef int32_t[::1] with_left    # s -> id of (s, z) made by this merge, or -1
    cdef int32_t[::1] with_right   # t -> id of (z, t) made by this merge, or -1
    cdef int32_t zz                # id of (z, z), or -1
    cdef int32_t[::1] left_of      # s -> id of the tracked pair (s, a), or -1
    cdef int32_t[::1] right_of     # t -> id of the tracked pair (b, t), or -1
    cdef vector[int32_t] created   # pairs this merge created
    # the threads: a ledger each (ledger 0 also serves the merges done on one thread)
    cdef int n_threads
    cdef size_t parallel_from
    cdef Pool* pool
    cdef object pool_owner                     # the process whose threads they are
    cdef vector[Ledger] ledgers
    # work counters and clocks, for profiling; progress of the set-up (slots so far)
    cdef int64_t visited, replaced, recounts, shared_merges, shared_visited
    cdef vector[int64_t] thread_replaced       # occurrences each thread replaced in shared merges
    cdef vector[double] thread_cpu             # CPU seconds each thread spent in shared merges' parts
    cdef double seconds_layout, seconds_count, seconds_shared, seconds_fold
    cdef double cpu_longest                    # shared merges: the longest part's CPU, summed
    cdef Py_ssize_t initial_pairs
    cdef object report
    cdef Py_ssize_t reported

    def __cinit__(self, symbols, const int64_t[::1] offsets, const int64_t[::1] counts, Py_ssize_t n_merges,
                  int64_t track_from, byte_ranks, start, token_lengths, int32_t first_id, setup_progress=None,
                  int threads=1, Py_ssize_t parallel_from=PARALLEL_FROM, bint kernel_order=False):
        cdef Py_ssize_t n_ids = first_id + n_merges
        cdef double t0 = now()
        lengths = np.zeros(n_ids, dtype=np.int32)
        lengths[:256] = 1
        if token_lengths is not None:
            lengths[:len(token_lengths)] = token_lengths
        self.token_len = lengths
        self.with_left = np.full(n_ids, -1, dtype=np.int32)
        self.with_right = np.full(n_ids, -1, dtype=np.int32)
        self.left_of = np.full(n_ids, -1, dtype=np.int32)
        self.right_of = np.full(n_ids, -1, dtype=np.int32)
        self.ends_with.resize(n_ids)
        self.starts_with.resize(n_ids)
        self.track_from = max(track_from, 1)
        self.many_pairs = start is not None
        self.n_merges = n_merges
        self.report = setup_progress
        self.start_threads(threads, parallel_from, n_ids)
        self.lay_out(np.asarray(symbols), offsets, counts, byte_ranks, start, kernel_order)
        self.point_corpus()
        self.reported = self.sym.shape[0]
        self.seconds_layout = now() - t0
        self.initial_pairs = -1                 # the pairs are counted by count_first (Trainer)

    cdef int count_first(self) except -1:
        """The first pair count, from the corpus alone: the word table may be gone by now."""
        cdef double t0 = now()
        self.recount()
        self.seconds_count = now() - t0
        self.initial_pairs = self.keys.size()

    def __dealloc__(self):
        del self.pool                               # joins the threads (NULL: nothing to do)

    def memory(self):
        """Bytes held now, by part (allocator overheads not counted; capacities, not sizes)."""
        cdef size_t i, lists = 0, used = 0, neighbours = 0
        for i in range(self.occ.size()):
            lists += self.occ[i].capacity()
            used += self.occ[i].size()
        for i in range(self.ends_with.size()):
            neighbours += (self.ends_with[i].capacity() + self.starts_with[i].capacity()) * sizeof(Neighbour)
        cdef size_t slots = (self.sym.nbytes + self.word_starts.nbytes + self.word_of.nbytes + self.run_start.nbytes
                             + self.run_count.nbytes + self.heavy_count.nbytes)
        return {"slots": slots,
                "pairs": self.keys.capacity() * (sizeof(uint64_t) + 2 * sizeof(int64_t) + sizeof(vector[uint8_t])),
                "lists": lists, "lists_used": used, "neighbours": neighbours,
                "heap": self.heap.size() * sizeof(HeapEntry) + self.waiting.capacity() * sizeof(int32_t),
                "tracked": self.keys.size()}

    # -- set-up ------------------------------------------------------------------------------
    cdef int lay_out(self, symbols, const int64_t[::1] offsets, const int64_t[::1] counts, byte_ranks,
                     start, bint kernel_order) except -1:
        """Copy the words into ``sym`` by falling count (heavy words first, with a word index):
        every byte a one-byte token, or, to continue training, the slots of ``start`` (the same
        layout as ``sym``, word by word in table order); or take ``start`` over as ``sym`` when
        its words are in this order already (``kernel_order``). Mark where words start; note the
        runs of equal weight. Each thread places a range of the words: a first pass sums the
        slots of each range, so that each knows where its words go."""
        cdef Py_ssize_t n_words = counts.shape[0], n_sym = offsets[n_words] if n_words else 0
        order, n_heavy = by_falling_count(np.asarray(counts))
        cdef const int32_t[::1] by_count = order
        cdef const uint8_t[::1] source = symbols.astype(np.uint8, copy=False)
        ranks = np.arange(256, dtype=np.int32) if byte_ranks is None else np.asarray(byte_ranks, dtype=np.int32)
        cdef const int32_t[::1] rank = ranks
        cdef const int32_t[::1] slots = np.empty(0, np.int32) if start is None else start
        cdef int k, n_parts = self.n_threads
        cdef vector[LayoutPart] parts
        cdef LayoutJob job
        cdef int64_t p = 0
        self.sym = start if kernel_order else np.empty(n_sym, dtype=np.int32)
        self.word_starts = np.zeros((n_sym >> 3) + 1, dtype=np.uint8)
        self.heavy_count = np.asarray(counts)[order[:n_heavy]]
        parts.resize(n_parts)
        job.order = &by_count[0] if n_words else NULL
        job.offsets, job.counts, job.rank = &offsets[0], &counts[0] if n_words else NULL, &rank[0]
        job.source = &source[0] if source.shape[0] else NULL
        job.slots = &slots[0] if start is not None and slots.shape[0] else NULL
        job.taken = kernel_order
        job.sym = &self.sym[0] if n_sym else NULL
        job.word_starts, job.n_heavy, job.step, job.parts = &self.word_starts[0], n_heavy, 1 << 18, parts.data()
        for k in range(n_parts):
            parts[k].k0 = parts[k].at = n_words * k // n_parts
            parts[k].k1 = n_words * (k + 1) // n_parts
            parts[k].heavy_end = -1
        job.placing = False
        self.run_layout(&job)
        for k in range(n_parts):
            parts[k].p0, p = p, p + parts[k].p
            parts[k].p = parts[k].p0
        job.placing = True
        while not all_placed(parts.data(), n_parts):
            self.run_layout(&job)
            PyErr_CheckSignals()
            self.advance(sum_placed(parts.data(), n_parts))
        run_start, run_count = [], []
        self.c.heavy_end = n_sym
        for k in range(n_parts):
            self.word_starts[parts[k].p0 >> 3] |= parts[k].head
            run_start.extend(parts[k].run_start)
            run_count.extend(parts[k].run_count)
            if parts[k].heavy_end >= 0:
                self.c.heavy_end = parts[k].heavy_end
        heavy = order[:n_heavy]
        lengths = np.asarray(offsets)[heavy + 1] - np.asarray(offsets)[heavy]
        self.word_of = np.repeat(np.arange(n_heavy, dtype=np.int32), lengths)
        self.run_start = np.array(run_start + [n_sym], dtype=np.int64)
        self.run_count = np.array(run_count, dtype=np.int64)
        return 0

    cdef void run_layout(self, LayoutJob* job) noexcept:
        if self.pool != NULL:
            with nogil:
                self.pool.run(layout_part, job)
        else:
            layout_part(job, 0)

    cdef void point_corpus(self) noexcept:
        """Fill ``c``, the raw view of the corpus the threads read (the arrays stay on self)."""
        self.c.sym = &self.sym[0] if self.sym.shape[0] else NULL
        self.c.word_starts = &self.word_starts[0]
        self.c.token_len = &self.token_len[0]
        self.c.n = self.sym.shape[0]
        self.c.word_of = &self.word_of[0] if self.word_of.shape[0] else NULL
        self.c.heavy_count = &self.heavy_count[0] if self.heavy_count.shape[0] else NULL
        self.c.run_start = &self.run_start[0]
        self.c.run_count = &self.run_count[0] if self.run_count.shape[0] else NULL
        self.c.n_runs = self.run_count.shape[0]
        self.c.left_of = &self.left_of[0]
        self.c.right_of = &self.right_of[0]

    cdef int start_threads(self, int threads, Py_ssize_t parallel_from, Py_ssize_t n_ids) except -1:
        """A ledger per thread, and the pool when there is more than one."""
        cdef int k
        self.n_threads = max(threads, 1)
        self.parallel_from = <size_t>max(parallel_from, 1)
        self.ledgers.resize(self.n_threads)
        self.thread_replaced.assign(self.n_threads, 0)
        self.thread_cpu.assign(self.n_threads, 0)
        for k in range(self.n_threads):
            self.ledgers[k].with_left.assign(n_ids, -1)
            self.ledgers[k].with_right.assign(n_ids, -1)
            self.ledgers[k].left_loss.assign(n_ids, 0)
            self.ledgers[k].right_loss.assign(n_ids, 0)
        if self.n_threads > 1:
            try:
                self.pool = new Pool(self.n_threads)
                self.pool_owner = os.getpid()
            except RuntimeError:                    # no threads to be had: one learns the same merges
                self.n_threads = 1
        return 0

    cdef void check_pool(self) noexcept:
        """A forked child has none of the pool's threads: it goes on with one (the pool's memory is
        left alone, as its threads cannot be joined here)."""
        if self.pool != NULL and self.pool_owner != os.getpid():
            self.pool = NULL
            self.n_threads = 1

    cdef int advance(self, Py_ssize_t slots) except -1:
        """Tell the set-up's progress callback (if any) how far it is: three passes over the slots
        (the layout and the two of the pair count); ``slots`` into the current one."""
        if self.report is not None and self.recounts == 0:
            self.report(min(self.reported + slots, 3 * self.sym.shape[0]))
        return 0

    cdef int recount(self) except -1:
        """(Re)build every tracked pair from the corpus as it is now: counts, occurrence lists,
        heap. Two passes over the slots, cut into one range per thread at tokens' starts: count
        every pair (each thread in a map of its own), then write the positions of the tracked
        ones straight into their lists, sized beforehand (plan_lists). Ids follow first
        appearance in slot order, as one thread gives them: range 0's pairs in its order, then
        range 1's new ones, and so on. Continuing from a base (``many_pairs``), the slimmer
        passes instead (count_totals, plan_totals, list_growing, join_lists: see above them);
        ids in the order of the pairs' keys. The merges depend on neither order (ties go by
        key)."""
        self.clear_pairs()
        cdef int k, n_parts = self.n_threads
        cdef Py_ssize_t n = self.sym.shape[0], cut
        cdef vector[CountPart] parts
        cdef PairMap tracked
        cdef CountJob job
        tracked.keys, tracked.values = <uint64_t*>NULL, <int32_t*>NULL
        # Continuing, each map starts sized for a pair every 32 slots of the whole corpus, not
        # small: growing to millions of pairs rehashes them all, and each range holds most of the
        # corpus's distinct pairs (stage two of superword training has one every 20-25 slots in
        # all, 15-18 in each half). At most one every 8 slots of its range, when there are many.
        cdef size_t expected = max(1 << 16, min(n // 32, n // n_parts // 8)) if self.many_pairs else 1 << 16
        parts.resize(n_parts)
        job.corpus, job.parts, job.step, job.tracked = &self.c, parts.data(), SIGNAL_CHECK_EVERY, &tracked
        job.by_total = self.many_pairs
        for k in range(n_parts):
            parts[k].seen.keys, parts[k].seen.values = <uint64_t*>NULL, <int32_t*>NULL
            parts[k].totals.slots = <TotalSlot*>NULL
        try:
            for k in range(n_parts):
                cut = n * k // n_parts
                while cut < n and self.c.sym[cut] < 0:      # inside a token: its pair is the range before's
                    cut += 1
                parts[k].lo = parts[k].at = cut
                if k > 0:
                    parts[k - 1].hi = cut
                if job.by_total:
                    if totalmap_init(&parts[k].totals, expected) != 0:
                        raise MemoryError()
                    continue
                if pairmap_init(&parts[k].seen, expected) != 0:
                    raise MemoryError()
                # made at once, not doubled up to it: each doubling copies, and every copy is
                # fresh memory the system zeroes on first touch
                parts[k].keys.reserve(expected)
                parts[k].tally.reserve(expected)
            parts[n_parts - 1].hi = n
            job.listing = False
            self.pass_over(&job, n_parts)
            if job.by_total:
                self.plan_totals(parts.data(), n_parts, &tracked)
                for k in range(n_parts):
                    parts[k].lists.resize(self.keys.size())
                    parts[k].written.assign(self.keys.size(), 0)
                    parts[k].at = parts[k].lo
                job.listing = True
                self.pass_over(&job, n_parts)
                self.join_lists(parts.data(), n_parts)
                return self.tracked_all()
            self.plan_lists(parts.data(), n_parts, &tracked)
            for k in range(n_parts):                # the ranges' maps and tallies are done with
                pairmap_free(&parts[k].seen)
                vector[uint64_t]().swap(parts[k].keys)
                vector[Tally]().swap(parts[k].tally)
                vector[int32_t]().swap(parts[k].number)
                parts[k].at = parts[k].lo
            job.occ, job.listing = self.occ.data(), True
            self.pass_over(&job, n_parts)
        finally:
            for k in range(n_parts):
                pairmap_free(&parts[k].seen)
                totalmap_free(&parts[k].totals)
            pairmap_free(&tracked)
        return self.tracked_all()

    cdef int tracked_all(self) except -1:
        """The end of a recount: every pair counted joins the heap and the by-symbol lists."""
        cdef int k
        for k in range(<int>self.keys.size()):
            self.track(k)
        self.created.clear()
        self.recounts += 1
        return 0

    cdef int plan_totals(self, CountPart* parts, int n_parts, PairMap* tracked) except -1:
        """Between the passes of a continuing recount: add the ranges' counts into range 0's map,
        raise track_from on the first count (as plan_lists), and track the pairs counted at
        least track_from times, numbered in order of their keys (the same ids for any number of
        threads), with a map of their own for pass 2 (``tracked``)."""
        cdef TotalMap* every = &parts[0].totals
        cdef TotalMap* m
        cdef size_t u, cap
        cdef int k
        cdef int32_t pid
        cdef vector[int64_t] totals
        cdef vector[pair[uint64_t, int64_t]] chosen
        for k in range(1, n_parts):
            m = &parts[k].totals
            cap = <size_t>1 << m.bits
            for u in range(cap):
                if u + AHEAD < cap and m.slots[u + AHEAD].key != EMPTY:    # (range 0's map misses the caches)
                    totalmap_prefetch(every, m.slots[u + AHEAD].key)
                if m.slots[u].key != EMPTY and totalmap_add(every, m.slots[u].key, m.slots[u].total) != 0:
                    raise MemoryError()
            totalmap_free(m)
        cap = <size_t>1 << every.bits
        if self.recounts == 0:
            totals.reserve(every.size)
            for u in range(cap):
                if every.slots[u].key != EMPTY:
                    totals.push_back(every.slots[u].total)
            self.track_from = max(self.track_from, best_total(totals, TRACK_PER_MERGE * self.n_merges))
            vector[int64_t]().swap(totals)
        for u in range(cap):
            if every.slots[u].key != EMPTY and every.slots[u].total >= self.track_from:
                chosen.push_back(pair[uint64_t, int64_t](every.slots[u].key, every.slots[u].total))
        totalmap_free(every)
        sort(chosen.begin(), chosen.end())
        for u in range(chosen.size()):
            pid = self.new_pair(chosen[u].first)
            self.count[pid] = chosen[u].second
        if pairmap_init(tracked, chosen.size()) != 0:
            raise MemoryError()
        for pid in range(<int32_t>chosen.size()):       # (sized for them all: it never grows)
            pairmap_get_or_add(tracked, self.keys[pid], pid)
        return 0

    cdef int join_lists(self, CountPart* parts, int n_parts) except -1:
        """After pass 2 of a continuing recount: each tracked pair's list, its ranges' lists one
        after the other. A range's list starts with the gap from 0 (its first position); in the
        whole list that gap is from the position listed last before it."""
        cdef size_t pid, size, at, head
        cdef int k
        cdef uint64_t first
        cdef int64_t last
        cdef vector[uint8_t]* part_list
        cdef uint8_t* out
        for pid in range(self.keys.size()):
            size, last = 0, 0
            for k in range(n_parts):
                part_list = &parts[k].lists[pid]
                if part_list.size():
                    head = get_varint(part_list.data(), 0, &first)
                    size += part_list.size() - head + <size_t>varint_len(first - <uint64_t>last)
                    last = parts[k].written[pid]
            self.occ[pid].resize(size)
            out, at, last = self.occ[pid].data(), 0, 0
            for k in range(n_parts):
                part_list = &parts[k].lists[pid]
                if not part_list.size():
                    continue
                head = get_varint(part_list.data(), 0, &first)
                at = put_gap(out, at, first - <uint64_t>last)
                memcpy(out + at, part_list.data() + head, part_list.size() - head)
                at += part_list.size() - head
                last = parts[k].written[pid]
                vector[uint8_t]().swap(part_list[0])
            self.occ_last[pid] = last
        return 0

    cdef int pass_over(self, CountJob* job, int n_parts) except -1:
        """One pass of a recount on every thread, a step at a time: between steps, Ctrl-C is looked
        for and the progress told."""
        cdef int k
        cdef Py_ssize_t done
        cdef bint finished = False
        while not finished:
            if self.pool != NULL:
                with nogil:
                    self.pool.run(count_part, job)
            else:
                count_part(job, 0)
            PyErr_CheckSignals()
            done, finished = 0, True
            for k in range(n_parts):
                if job.parts[k].failed:
                    raise MemoryError()
                done += job.parts[k].at - job.parts[k].lo
                finished = finished and job.parts[k].at >= job.parts[k].hi
            self.advance(done)
        self.reported += self.sym.shape[0]
        return 0

    cdef int plan_lists(self, CountPart* parts, int n_parts, PairMap* tracked) except -1:
        """Between the passes of a recount: number the pairs of all ranges as one pass would, track
        those counted at least track_from times, and size their lists: range k's part of a list
        starts where range k - 1's ends, its first gap counted from the position listed last. The
        tracked pairs get a map of their own (``tracked``, key -> id) for the second pass: a few
        thousand pairs whose map stays in the caches, where the ranges' maps hold millions.

        Continuing from a base, the first count raises track_from to the TRACK_PER_MERGE x
        n_merges-th best count: a few merges' worth of the most frequent pairs hold every merge
        but a few, and tracking only them keeps the second pass, the lists and the heap short.
        Should the best tracked count fall below it, ``learn`` recounts with a lower threshold."""
        cdef CountPart* P = &parts[0]
        cdef vector[uint64_t] keys = P.keys
        cdef vector[int64_t] totals
        cdef vector[int32_t] pid_of
        cdef vector[int64_t] size_of, last_of
        cdef Tally* t
        cdef size_t u, n_tracked
        cdef int k
        cdef int32_t g, pid
        totals.resize(P.tally.size())
        for u in range(P.tally.size()):
            totals[u] = P.tally[u].total
        for k in range(1, n_parts):                # range 0's map numbers every pair from here on
            P = &parts[k]
            P.number.resize(P.keys.size())
            for u in range(P.keys.size()):
                if u + AHEAD < P.keys.size():      # (a map of millions of pairs misses the caches)
                    pairmap_prefetch(&parts[0].seen, P.keys[u + AHEAD])
                g = pairmap_get_or_add(&parts[0].seen, P.keys[u], <int32_t>keys.size())
                if g == -2:
                    raise MemoryError()
                if g == <int32_t>keys.size():
                    keys.push_back(P.keys[u])
                    totals.push_back(0)
                totals[g] += P.tally[u].total
                P.number[u] = g
        if self.many_pairs and self.recounts == 0:
            self.track_from = max(self.track_from, best_total(totals, TRACK_PER_MERGE * self.n_merges))
        pid_of.assign(keys.size(), -1)
        for u in range(keys.size()):
            if totals[u] >= self.track_from:
                pid_of[u] = self.new_pair(keys[u])
                self.count[pid_of[u]] = totals[u]
        n_tracked = self.keys.size()
        if pairmap_init(tracked, n_tracked) != 0:
            raise MemoryError()
        for pid in range(<int32_t>n_tracked):      # (sized for them all: it never grows)
            pairmap_get_or_add(tracked, self.keys[pid], pid)
        size_of.assign(n_tracked, 0)
        last_of.assign(n_tracked, 0)
        for k in range(n_parts):
            P = &parts[k]
            P.cursor.resize(n_tracked)
            P.written.resize(n_tracked)
            for u in range(P.keys.size()):
                pid = pid_of[u if k == 0 else P.number[u]]
                if pid < 0:
                    continue
                t = &P.tally[u]
                P.cursor[pid], P.written[pid] = size_of[pid], last_of[pid]     # pass 2's cursor and gap base
                size_of[pid] += t.nbytes - varint_len(<uint64_t>t.first) + \
                    varint_len(<uint64_t>(t.first - last_of[pid]))
                last_of[pid] = t.last
        for u in range(n_tracked):
            self.occ[u].resize(size_of[u])
            self.occ_last[u] = last_of[u]
        return 0

    cdef void clear_pairs(self) noexcept:
        cdef size_t x
        self.keys.clear()
        self.count.clear()
        self.occ_last.clear()
        vector[vector[uint8_t]]().swap(self.occ)
        for x in range(self.ends_with.size()):
            self.ends_with[x].clear()
            self.starts_with[x].clear()
        self.heap = priority_queue[HeapEntry]()
        self.waiting.clear()
        self.heap_from = INT64_MAX                  # every pair waits; the first pop admits the best

    # -- pairs -------------------------------------------------------------------------------
    cdef inline int32_t new_pair(self, uint64_t key) noexcept:
        self.keys.push_back(key)
        self.count.push_back(0)
        self.occ.push_back(vector[uint8_t]())
        self.occ_last.push_back(0)
        self.created.push_back(<int32_t>(self.keys.size() - 1))
        return <int32_t>(self.keys.size() - 1)

    cdef inline void track(self, int32_t pid) noexcept:
        """A pair with its count settled joins the heap and the by-symbol lists."""
        cdef int32_t s = key_left(self.keys[pid]), t = key_right(self.keys[pid])
        self.ends_with[t].push_back(Neighbour(pid, s))
        self.starts_with[s].push_back(Neighbour(pid, t))
        self.push(pid)

    cdef inline void push(self, int32_t pid) noexcept:
        if self.count[pid] >= self.heap_from:
            self.heap.push(HeapEntry(pair[int64_t, uint64_t](self.count[pid], ~self.keys[pid]), pid))
        else:
            self.waiting.push_back(pid)

    cdef bint admit(self) noexcept:
        """The heap ran dry: lower heap_from to half the best waiting count and move the pairs it
        admits into the heap (pairs at 0 leave for good). False if no pair is left."""
        cdef size_t i, kept = 0
        cdef int64_t best = 0
        cdef int32_t pid
        for i in range(self.waiting.size()):
            best = max(best, self.count[self.waiting[i]])
        if best == 0:
            self.waiting.clear()
            return False
        self.heap_from = max(best // 2, 1)
        for i in range(self.waiting.size()):
            pid = self.waiting[i]
            if self.count[pid] >= self.heap_from:
                self.push(pid)
            elif self.count[pid] > 0:
                self.waiting[kept] = pid
                kept += 1
        self.waiting.resize(kept)
        return True

    cdef int32_t pop_best(self) noexcept:
        """The tracked pair with the highest count (ties: smallest key), or -1 if none is left."""
        cdef HeapEntry top
        while not self.heap.empty() or self.admit():
            top = self.heap.top()
            self.heap.pop()
            if self.count[top.second] == top.first.first:
                return top.second
            if self.count[top.second] > 0:
                self.push(top.second)   # stale entry: its count fell; re-check later
        return -1

    cdef inline void append(self, int32_t pid, Py_ssize_t pos) noexcept:
        """Add a position to occ[pid]: the gap from the last one."""
        put_varint(&self.occ[pid], <uint64_t>(pos - self.occ_last[pid]))
        self.occ_last[pid] = pos

    cdef inline void free_list(self, int32_t pid) noexcept:
        """A pair whose count reached 0: every listed position is stale."""
        vector[uint8_t]().swap(self.occ[pid])
        self.occ_last[pid] = 0                      # (gaps of a new list count from 0)

    cdef void index_neighbours(self, int32_t a, int32_t b) noexcept:
        """Fill left_of[s] = id of (s, a) and right_of[t] = id of (b, t) for the tracked pairs."""
        cdef vector[Neighbour]* ends = &self.ends_with[a]
        cdef vector[Neighbour]* starts = &self.starts_with[b]
        cdef size_t i
        for i in range(ends.size()):
            self.left_of[ends[0][i].second] = ends[0][i].first
        for i in range(starts.size()):
            self.right_of[starts[0][i].second] = starts[0][i].first

    cdef void clear_neighbours(self, int32_t a, int32_t b) noexcept:
        """Undo index_neighbours."""
        cdef vector[Neighbour]* ends = &self.ends_with[a]
        cdef vector[Neighbour]* starts = &self.starts_with[b]
        cdef size_t i
        for i in range(ends.size()):
            self.left_of[ends[0][i].second] = -1
        for i in range(starts.size()):
            self.right_of[starts[0][i].second] = -1

    # -- one merge ---------------------------------------------------------------------------
    cdef void merge(self, int32_t pid, int32_t z) noexcept:
        """Rewrite every occurrence of pair pid as the new symbol z (on one thread, or on all when
        the list is long), fold the ledgers into the pairs, then settle the counts."""
        cdef int32_t a = key_left(self.keys[pid]), b = key_right(self.keys[pid])
        cdef vector[uint8_t] positions            # takes occ[pid]'s memory; freed on return
        cdef MergeJob job
        cdef Ledger* first = &self.ledgers[0]
        cdef bint shared
        positions.swap(self.occ[pid])              # (new_pair may move occ; this list stays put)
        self.c.token_len[z] = self.c.token_len[a] + self.c.token_len[b]
        self.zz = -1
        self.index_neighbours(a, b)
        job.corpus, job.occ, job.n_bytes, job.ledgers = &self.c, positions.data(), positions.size(), first
        job.a, job.b, job.z = a, b, z
        shared = self.n_threads > 1 and positions.size() >= self.parallel_from
        if shared:
            self.share(&job)
        else:
            first.begin, first.end, first.base = 0, positions.size(), 0
            rewrite_range(&job, first)
        self.fold(a, b, z, self.n_threads if shared else 1, shared)
        self.clear_neighbours(a, b)
        self.settle(pid)

    cdef void share(self, MergeJob* job) noexcept:
        """Rewrite on every thread: the list cut into equal chunks of bytes, at entries."""
        cdef int k, n = self.n_threads
        cdef double t0 = now()
        for k in range(n):
            self.ledgers[k].begin = entry_at_or_after(job.occ, job.n_bytes * k // n, job.n_bytes)
        for k in range(n):
            self.ledgers[k].end = self.ledgers[k + 1].begin if k + 1 < n else job.n_bytes
        self.run_parts(job)
        self.seconds_shared += now() - t0
        self.shared_merges += 1

    cdef void run_parts(self, MergeJob* job) noexcept:
        """A shared merge's parts on every thread; notes each part's CPU time."""
        cdef int k
        cdef double longest = 0
        with nogil:
            self.pool.run(merge_part, job)
        for k in range(self.n_threads):
            self.thread_cpu[k] += self.ledgers[k].cpu
            longest = max(longest, self.ledgers[k].cpu)
        self.cpu_longest += longest

    cdef void fold(self, int32_t a, int32_t b, int32_t z, int n_threads, bint shared) noexcept:
        """Apply the ledgers of the threads that took part, in range order (module docstring)."""
        cdef int k
        cdef Ledger* L
        cdef double t0 = now() if shared else 0
        for k in range(n_threads):
            self.number_made(&self.ledgers[k], z)
        for k in range(n_threads):
            L = &self.ledgers[k]
            self.move_lists(L, z)
            self.visited += L.visited
            self.replaced += L.replaced
            if shared:
                self.thread_replaced[k] += L.replaced
                self.shared_visited += L.visited
            L.visited, L.replaced = 0, 0
        self.take_losses(n_threads)
        if shared:
            self.seconds_fold += now() - t0

    cdef inline int32_t* made_slot(self, Ledger* L, uint64_t key, int32_t z) noexcept:
        """Where the id of a pair this merge made is kept (with_left, with_right or zz); the
        ledger's own entry for it is cleared on the way."""
        cdef int32_t s = key_left(key), t = key_right(key)
        if s == z and t == z:
            L.zz = -1
            return &self.zz
        if t == z:
            L.with_left[s] = -1
            return &self.with_left[s]
        L.with_right[t] = -1
        return &self.with_right[t]

    cdef void number_made(self, Ledger* L, int32_t z) noexcept:
        """The pairs one thread made: ids for those no earlier thread made, counts added. A pair
        whose count is 0 when this thread's range begins had its list freed (or not begun): the
        list will begin anew after this thread's cut."""
        cdef size_t i
        cdef int32_t* slot
        for i in range(L.made.size()):
            slot = self.made_slot(L, L.made[i].key, z)
            if slot[0] < 0:
                slot[0] = self.new_pair(L.made[i].key)
            L.made[i].from_cut = self.count[slot[0]] == 0
            self.count[slot[0]] += L.made[i].count

    cdef void move_lists(self, Ledger* L, int32_t z) noexcept:
        """Then their lists, in thread order, for the pairs settle will keep (the others' lists are
        dropped there anyway)."""
        cdef size_t i
        cdef Made* m
        cdef int32_t pid
        for i in range(L.made.size()):
            m = &L.made[i]
            pid = self.made_slot(L, m.key, z)[0]
            if self.count[pid] < self.track_from:
                continue
            if m.from_cut:
                self.take_list(pid, m, m.cut, m.cut_last)
            else:
                self.take_list(pid, m, 0, 0)
        L.made.clear()

    cdef void take_list(self, int32_t pid, Made* m, size_t start, int64_t start_last) noexcept:
        """Append m's list from byte ``start`` (its entry there follows position start_last) to
        occ[pid]: the first gap read and written again from occ_last, the rest copied."""
        cdef vector[uint8_t]* dst = &self.occ[pid]
        cdef uint64_t gap
        cdef size_t after, old
        if start >= m.n:
            return
        if start == 0 and dst.empty() and self.occ_last[pid] == 0 and not m.big.empty():
            dst.swap(m.big)                         # both count the first gap from 0
        else:
            after = get_varint(m.data(), start, &gap)
            self.append(pid, start_last + <int64_t>gap)
            old = dst.size()
            dst.resize(old + m.n - after)
            memcpy(dst.data() + old, m.data() + after, m.n - after)
        self.occ_last[pid] = m.last

    cdef void take_losses(self, int n_threads) noexcept:
        """Subtract what the existing pairs lost, summed over the threads; free the lists of those
        at 0 (counts of existing pairs only fall in a merge: at 0 now is at 0 during the sweep)."""
        cdef vector[int32_t] touched
        cdef Ledger* L
        cdef size_t i
        cdef int k
        cdef int32_t pid, s
        for k in range(n_threads):
            L = &self.ledgers[k]
            for i in range(L.lost_left.size()):
                s = L.lost_left[i]
                pid = self.left_of[s]
                self.count[pid] -= L.left_loss[s]
                L.left_loss[s] = 0
                touched.push_back(pid)
            for i in range(L.lost_right.size()):
                s = L.lost_right[i]
                pid = self.right_of[s]
                self.count[pid] -= L.right_loss[s]
                L.right_loss[s] = 0
                touched.push_back(pid)
            L.lost_left.clear()
            L.lost_right.clear()
        for i in range(touched.size()):
            if self.count[touched[i]] == 0:
                self.free_list(touched[i])

    cdef void settle(self, int32_t pid) noexcept:
        """After the fold: the merged pair is gone; the new pairs counted at least ``track_from``
        times are kept (with ids closed up), the others forgotten."""
        cdef size_t i
        cdef int32_t new, kept
        # rewrite() subtracted only the neighbours' pairs (which may include pid itself, when
        # occurrences overlap as in "aaa"), never the occurrence it replaced; now that every
        # occurrence is replaced or destroyed, none is left anywhere: the count is exactly 0.
        self.count[pid] = 0
        if self.created.empty():
            return
        kept = self.created[0]
        for i in range(self.created.size()):
            new = self.created[i]
            self.with_left[key_left(self.keys[new])] = -1      # clean for the next merge
            self.with_right[key_right(self.keys[new])] = -1
            if self.count[new] >= self.track_from:
                if kept != new:
                    self.keys[kept] = self.keys[new]
                    self.count[kept] = self.count[new]
                    self.occ_last[kept] = self.occ_last[new]
                    self.occ[kept].swap(self.occ[new])
                self.track(kept)
                kept += 1
        self.keys.resize(kept)
        self.count.resize(kept)
        self.occ_last.resize(kept)
        self.occ.resize(kept)
        self.created.clear()


cdef class Trainer:
    """Training in steps, so that the caller can let go of the word table in between: the
    constructor lays the table out (after it, the kernel keeps no reference to the arrays),
    ``count_pairs`` counts every pair from that layout alone, ``learn`` merges (counting first
    if ``count_pairs`` was not called). A caller that lets go of the table before
    ``count_pairs`` has the table's memory back before the pair lists take theirs: the set-up's
    peak is then the larger of the two, not their sum. ``train_merges`` does it all at once. ``threads`` (default 1) share the
    set-up and every merge whose occurrence list holds at least ``parallel_from`` bytes; any
    number learns the same merges.

    To continue training, ``start`` is the corpus as a base tokenizer leaves it, in the
    kernel's layout (module docstring), the words where the table has them, and
    ``token_lengths`` gives the bytes of each id below ``first_id``. With ``kernel_order`` its
    words are in the kernel's order instead (``kernel_positions`` says where each goes): then
    the kernel takes the array over as its corpus and changes it, no copy (it is the largest
    array of the set-up). The first count raises ``track_from`` to the 4 x n_merges-th best
    pair's count (see plan_lists): the same merges, from far fewer listed positions."""
    cdef _Merger run
    cdef readonly Py_ssize_t max_merges
    cdef readonly int64_t min_count
    cdef readonly int32_t first_id
    cdef int64_t max_length
    cdef Py_ssize_t n_symbols, n_words, too_long
    cdef object chosen                          # each merge's count when it was chosen (``counts``)

    def __init__(self, symbols, const int64_t[::1] offsets, const int64_t[::1] counts, Py_ssize_t n_merges,
                 int64_t min_count=1, byte_ranks=None, int64_t track_from=0, int64_t max_token_length=0,
                 start=None, token_lengths=None, int32_t first_id=256, setup_progress=None, int threads=1,
                 Py_ssize_t parallel_from=PARALLEL_FROM, bint kernel_order=False):
        check_word_table(symbols, offsets, counts)
        if start is not None and kernel_order:
            if not (isinstance(start, np.ndarray) and start.dtype == np.int32 and start.flags.c_contiguous
                    and start.flags.writeable):
                raise ValueError("start in kernel order must be a writable, contiguous int32 array (the kernel "
                                 "takes it over)")
        elif start is not None:
            start = np.ascontiguousarray(start, dtype=np.int32)
        elif kernel_order:
            raise ValueError("kernel_order says how start's words lie: give start")
        if start is not None:
            if len(start) != len(symbols) or token_lengths is None or len(token_lengths) > first_id:
                raise ValueError("start needs a slot per byte, token_lengths for its ids, and first_id above them")
        # Each merge removes at least one token, so the corpus cannot give more merges than
        # this; the per-merge arrays are sized by it, not by what was asked.
        self.max_merges = max(0, min(n_merges, len(symbols) - counts.shape[0]))
        if first_id + self.max_merges >= 2 ** 31:
            raise ValueError("too many merges for int32 token ids")
        self.min_count = max(min_count, 1)
        self.first_id = first_id
        self.max_length = max_token_length
        self.n_symbols, self.n_words = len(symbols), counts.shape[0]
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        if not track_from:
            track_from = 8 * self.min_count if start is not None else \
                default_track_from(offsets, counts, self.max_merges, self.min_count)
        self.run = _Merger(symbols, offsets, counts, self.max_merges, track_from, byte_ranks,
                           start, token_lengths, first_id, setup_progress, threads, parallel_from, kernel_order)

    def count_pairs(self):
        """Count every pair of the laid-out corpus (once; ``learn`` calls it if need be)."""
        if self.run.initial_pairs >= 0:
            return
        self.run.check_pool()                   # in a forked child: on one thread
        self.run.count_first()
        if self.run.report is not None:
            self.run.report(3 * self.n_symbols)

    def learn(self, progress=None, Py_ssize_t progress_every=256, dict stats=None):
        """The merges, an int32 array (n, 2): up to ``max_merges``, stopping early when no pair is
        left or the best count is below ``min_count``.

        ``stats``, if given, receives the work counters, the same for any number of threads
        (positions visited, occurrences replaced, pairs tracked, ...), and what depends on the
        threads or the clock: ``shared_merges`` and ``shared_visited`` (the merges done on every
        thread, and their positions), ``thread_replaced`` and ``thread_cpu`` (each thread's
        occurrences and CPU seconds in them), ``cpu_longest`` (their longest parts' CPU, summed),
        ``cpu_merging`` (the calling thread's CPU), and wall seconds: ``seconds_layout`` and
        ``seconds_count`` (the set-up), ``seconds_merging``, ``seconds_shared``, ``seconds_fold``."""
        self.count_pairs()
        cdef _Merger run = self.run
        cdef int32_t[:, ::1] merges = np.empty((self.max_merges, 2), dtype=np.int32)
        self.chosen = np.empty(self.max_merges, dtype=np.int64)
        cdef int64_t[::1] chosen = self.chosen
        run.check_pool()
        cdef Py_ssize_t m = 0
        cdef int32_t pid
        cdef double t0 = now(), cpu0 = thread_cpu()
        while m < self.max_merges:
            pid = run.pop_best()
            if pid < 0 or run.count[pid] < run.track_from:
                if run.track_from > self.min_count:    # an untracked pair may be the best now
                    run.track_from = max(self.min_count, run.track_from // LOWER_BY)
                    run.recount()
                    continue
                if pid < 0:
                    break
            if run.count[pid] < self.min_count:
                break
            if self.max_length and run.token_len[key_left(run.keys[pid])] + \
                    run.token_len[key_right(run.keys[pid])] > self.max_length:
                self.too_long += 1                   # never merged: out of the heap for good
                continue
            merges[m, 0] = key_left(run.keys[pid])
            merges[m, 1] = key_right(run.keys[pid])
            chosen[m] = run.count[pid]
            run.merge(pid, <int32_t>(self.first_id + m))
            m += 1
            PyErr_CheckSignals()                     # Ctrl-C: stop here, not when training ends
            if progress is not None and m % progress_every == 0:
                progress(m)
        if progress is not None:
            progress(m)
        if stats is not None:
            stats.update(symbols=self.n_symbols, words=self.n_words, initial_pairs=run.initial_pairs,
                         pairs_tracked=run.keys.size(), positions_visited=run.visited,
                         occurrences_replaced=run.replaced, recounts=run.recounts, heap_left=run.heap.size() + run.waiting.size(),
                         heavy_slots=run.c.heavy_end, pairs_too_long=self.too_long)
            stats.update(threads=run.n_threads, shared_merges=run.shared_merges, shared_visited=run.shared_visited,
                         thread_replaced=list(run.thread_replaced), seconds_layout=run.seconds_layout,
                         seconds_count=run.seconds_count, seconds_merging=now() - t0,
                         seconds_shared=run.seconds_shared, seconds_fold=run.seconds_fold,
                         cpu_merging=thread_cpu() - cpu0, thread_cpu=list(run.thread_cpu), cpu_longest=run.cpu_longest)
        self.run = None                              # the corpus state is spent: free it now
        self.chosen = self.chosen[:m]
        return np.asarray(merges[:m]).copy()

    def memory(self):
        """The corpus state's bytes by part (slots, pair records, occurrence lists, by-symbol lists,
        heap); empty once ``learn`` has returned and let it go. For profiling memory."""
        return {} if self.run is None else self.run.memory()

    @property
    def counts(self):
        """After ``learn``: each merge's count when it was chosen (int64), in merge order."""
        if self.chosen is None:
            raise ValueError("counts are known once learn() has run")
        return self.chosen


def train_merges(symbols, const int64_t[::1] offsets, const int64_t[::1] counts,
                 Py_ssize_t n_merges, int64_t min_count=1, progress=None, Py_ssize_t progress_every=256,
                 dict stats=None, byte_ranks=None, int64_t track_from=0, int64_t max_token_length=0, int threads=1,
                 Py_ssize_t parallel_from=PARALLEL_FROM):
    """Learn up to ``n_merges`` merges from a word table; returns an int32 array (n, 2).

    Symbols must be byte ids 0..255 (a word table's uint8 bytes, or any integer array); merge m
    makes id 256 + m. ``byte_ranks[b]``, if given, is the id byte b takes instead (a permutation
    of 0..255: it decides how ties break; the merges returned use these ids). Stops early when
    no pair is left or the best count is below ``min_count``. ``track_from`` is the count below
    which new pairs are not tracked until needed (default: ``default_track_from``); any value gives
    the same merges. ``progress``, if given, is called with the number of merges done so far,
    every ``progress_every`` merges. ``stats``, if given, receives counters of the work done.
    A pair whose token would be longer than ``max_token_length`` bytes (0: any length) is never
    merged; the next best one is. ``threads`` share the merges whose occurrence list holds at
    least ``parallel_from`` bytes (any number gives the same merges and the same work counters).
    (``Trainer`` also continues from a tokenized corpus.)
    """
    return Trainer(symbols, offsets, counts, n_merges, min_count, byte_ranks, track_from, max_token_length,
                   threads=threads, parallel_from=parallel_from).learn(progress, progress_every, stats)
