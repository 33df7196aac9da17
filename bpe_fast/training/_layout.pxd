# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The layout: the corpus as the kernel holds it, and how the words are laid out.

Invariant: the corpus is the word table laid out in one array with one slot per byte, as the
bytes were: a token that covers bytes p..e of a word keeps its id in slot p (its *start*) and in
slot e a *tail mark* -(id + 2); slots strictly inside a token hold -1 (MIDDLE). The next token
starts at p + len(token) (every token's length in bytes is known from its id), and the token
before p ends at p - 1, whose slot holds either a one-byte token's id or a tail mark naming the
token, hence its start. So four bytes per byte of the table are the whole corpus state: no
links, no per-position pair ids. A bit per slot marks where each word starts; weights come from
each word's count (words are laid out by falling count, so a short table gives the weight of
most slots without a per-slot word index: heavy words, counted at least HEAVY times, first).

The layout runs on the kernel's threads with the same result as one: each thread places a range
of the words (a first pass sums their lengths, so each knows where its words go), and the
word-start bits of the byte where a range begins wait in its ``head`` (the range before may
write that byte), so no byte of the bitmap is written by two threads.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t
from libcpp.vector cimport vector

cdef enum:
    MIDDLE = -1            # a slot strictly inside a token
    HEAVY = 256            # words counted at least this often get a per-slot word index


cdef inline int32_t tail_mark(int32_t token) noexcept nogil:
    return -token - 2


cdef inline int32_t token_of_tail(int32_t mark) noexcept nogil:
    return -mark - 2


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


cdef inline bint pair_at(const Corpus* c, Py_ssize_t p, Py_ssize_t* q) noexcept nogil:
    """Whether a pair starts at p (a token's start): whether the token after it, which starts at
    q[0] (set either way: where a walk from token to token goes next), is in the same word."""
    q[0] = p + c.token_len[c.sym[p]]
    return q[0] < c.n and not starts_a_word(c, q[0])


cdef inline Py_ssize_t next_token(const Corpus* c, Py_ssize_t p) noexcept nogil:
    """Where the token after the one at p starts, or -1 if it is the last of its word."""
    cdef Py_ssize_t q
    return q if pair_at(c, p, &q) else -1


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


cdef inline int64_t walk_weight(const Corpus* c, Py_ssize_t p, Py_ssize_t* run) noexcept nogil:
    """weight_at for positions that only grow: the run is walked forward, not searched."""
    if p < c.heavy_end:
        return c.heavy_count[c.word_of[p]]
    while c.run_start[run[0] + 1] <= p:
        run[0] += 1
    return c.run_count[run[0]]


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


cdef inline void size_words(const LayoutJob* job, LayoutPart* P) noexcept nogil:
    cdef Py_ssize_t k
    cdef int64_t total = 0
    for k in range(P.k0, P.k1):
        total += job.offsets[job.order[k] + 1] - job.offsets[job.order[k]]
    P.p = total


cdef inline void place_words(const LayoutJob* job, LayoutPart* P) noexcept nogil:
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


cdef inline void layout_part(void* arg, int tid) noexcept nogil:
    cdef const LayoutJob* job = <const LayoutJob*>arg
    if job.placing:
        place_words(job, &job.parts[tid])
    else:
        size_words(job, &job.parts[tid])


cdef inline bint all_placed(const LayoutPart* parts, int n_parts) noexcept:
    cdef int k
    for k in range(n_parts):
        if parts[k].at < parts[k].k1:
            return False
    return True


cdef inline int64_t sum_placed(const LayoutPart* parts, int n_parts) noexcept:
    cdef int k
    cdef int64_t total = 0
    for k in range(n_parts):
        total += parts[k].p - parts[k].p0
    return total
