# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The recount: every tracked pair rebuilt from the corpus as it is now (counts, lists, ids).

Invariant: whatever the number of threads, a recount leaves the pairs one thread sweeping the
slots would leave. Two passes over the slots, cut into one range per thread at tokens' starts:
pass 1 counts every pair (each thread in a map of its own), and between the passes the ranges'
pairs are numbered in range order, which is first appearance in slot order (``plan_lists``);
the pairs counted at least ``track_from`` times are tracked and their lists sized exactly; pass
2 writes the positions of the tracked ones (found in a small map of their own) straight into
the lists, each range from where the range before stops, its first gap counted from the
position the range before listed last. Continuing from a base, the slimmer passes
(``count_totals``, ``plan_totals``, ``list_growing``, ``join_lists``: see the comment above them) give the
same counts and lists, with ids in the order of the pairs' keys. The merges depend on neither
order (ties go by key).

Where ``track_from`` comes from: from bytes it starts at 8 x min_count or, on a big corpus, at
its pairs / (128 x the merges asked) (``default_track_from``): the merges of a long-tailed GB
make very many new pairs counted 8 or more times, nearly all far below the last merge's count
(benchmarks/RESULTS.md, "Long-tailed corpora on a quiet machine").
Continuing from a base (millions of distinct pairs of its tokens), the first count raises
``track_from`` to the count of the 4 x n_merges-th best pair (``first_rank``): the merges come
from far fewer pairs than that, and a recount, should one be needed, finds the rest.
"""
from libc.stdint cimport INT32_MAX, int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memcpy
from libcpp.algorithm cimport nth_element, sort
from libcpp.utility cimport pair
from libcpp.vector cimport vector

from ..core._cpu cimport prefetch
from ._layout cimport Corpus, pair_at, walk_weight
from ..core._pairmap cimport EMPTY, PairMap, TotalMap, pair_key, pairmap_get, pairmap_get_or_add, pairmap_init, \
    pairmap_prefetch, totalmap_add, totalmap_free, totalmap_prefetch
from ._pairs cimport Pairs, new_pair
from ._varint cimport get_varint, put_gap, put_varint, varint_len

cdef enum:
    # A recount's pipelines (count_slots, list_slots, count_totals): a ring of AHEAD positions (a
    # power of 2, more than PROBE_LAG + TALLY_LAG).
    AHEAD = 32
    PROBE_LAG = 16
    TALLY_LAG = 8


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


cdef struct Ring:
    # The positions a pass's pipeline has queued and not yet finished, at most AHEAD: the i-th
    # queued is at i & (AHEAD - 1). Each pass fills the fields it needs (every pass: p and key).
    Py_ssize_t p[AHEAD]
    uint64_t key[AHEAD]
    int32_t u[AHEAD]               # count_slots: the pair's local number
    int64_t w[AHEAD]               # count_totals: the weight of the word


cdef inline Py_ssize_t queue(Ring* r, Py_ssize_t i, const Corpus* c, Py_ssize_t p, Py_ssize_t q) noexcept nogil:
    """Queue the pair at p (the token after it starting at q) as the i-th; returns its place."""
    cdef Py_ssize_t k = i & (AHEAD - 1)
    r.p[k], r.key[k] = p, pair_key(c.sym[p], c.sym[q])
    return k


cdef inline bint number_one(CountPart* P, Ring* r, Py_ssize_t i) noexcept nogil:
    """Pass 1's probe stage for the i-th position queued: its pair's local number (a new pair
    gets the next one, its key and an empty tally); its tally asked for. False if out of memory."""
    cdef Py_ssize_t k = i & (AHEAD - 1)
    cdef Tally empty
    cdef int32_t u = pairmap_get_or_add(&P.seen, r.key[k], <int32_t>P.keys.size())
    if u < 0:
        return False
    if u == <int32_t>P.keys.size():
        P.keys.push_back(r.key[k])
        empty.total, empty.first, empty.last, empty.nbytes = 0, r.p[k], 0, 0
        P.tally.push_back(empty)
    r.u[k] = u
    prefetch(&P.tally[u])
    return True


cdef inline void tally_one(const Corpus* c, CountPart* P, const Ring* r, Py_ssize_t i) noexcept nogil:
    """Pass 1's tally stage for the i-th position queued (in order of position)."""
    cdef Py_ssize_t k = i & (AHEAD - 1), p = r.p[k]
    cdef Tally* t = &P.tally[r.u[k]]
    t.total += walk_weight(c, p, &P.run)
    t.nbytes += varint_len(<uint64_t>(p - t.last))
    t.last = p


cdef inline void count_slots(const CountJob* job, CountPart* P) noexcept nogil:
    cdef const Corpus* c = job.corpus
    cdef Py_ssize_t p = P.at, q, end = min(P.at + job.step, P.hi), queued = 0, probed = 0, tallied = 0, k
    cdef Ring r
    while p < end:
        if pair_at(c, p, &q):
            k = queue(&r, queued, c, p, q)
            pairmap_prefetch(&P.seen, r.key[k])
            queued += 1
            if queued - probed > PROBE_LAG:
                if not number_one(P, &r, probed):
                    P.failed, P.at = True, P.hi
                    return
                probed += 1
            if probed - tallied > TALLY_LAG:
                tally_one(c, P, &r, tallied)
                tallied += 1
        p = q
    while probed < queued:
        if not number_one(P, &r, probed):
            P.failed, P.at = True, P.hi
            return
        probed += 1
    while tallied < queued:
        tally_one(c, P, &r, tallied)
        tallied += 1
    P.at = p


cdef inline void list_one(const CountJob* job, CountPart* P, const Ring* r, Py_ssize_t i) noexcept nogil:
    """Pass 2's write stage for the i-th position queued: listed if its pair is tracked."""
    cdef Py_ssize_t k = i & (AHEAD - 1), p = r.p[k]
    cdef int32_t pid = pairmap_get(job.tracked, r.key[k])
    if pid < 0:
        return
    P.cursor[pid] = put_gap(job.occ[pid].data(), P.cursor[pid], <uint64_t>(p - P.written[pid]))
    P.written[pid] = p


cdef inline void list_slots(const CountJob* job, CountPart* P) noexcept nogil:
    cdef const Corpus* c = job.corpus
    cdef Py_ssize_t p = P.at, q, end = min(P.at + job.step, P.hi), queued = 0, listed = 0, k
    cdef Ring r
    while p < end:
        if pair_at(c, p, &q):
            k = queue(&r, queued, c, p, q)
            pairmap_prefetch(job.tracked, r.key[k])
            queued += 1
            if queued - listed > PROBE_LAG:
                list_one(job, P, &r, listed)
                listed += 1
        p = q
    while listed < queued:
        list_one(job, P, &r, listed)
        listed += 1
    P.at = p


cdef inline int64_t best_total(const vector[int64_t]& totals, Py_ssize_t rank) noexcept:
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


cdef inline void count_part(void* arg, int tid) noexcept nogil:
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
# A base's tokens make millions of distinct pairs (stage two of superword training on long-tailed
# text: benchmarks/RESULTS.md, "Superword training's cost"), against a few thousand tracked.
# count_slots keeps for each a map entry (key and number: two cache lines) and a 32-byte tally
# (a third), to size every list before pass 2; three misses a position filled the CPU's queue of
# misses. Continuing, pass 1 keeps only the weighted count, in the map's own slot (one miss), and
# pass 2 grows each tracked pair's list of a range as it goes; the ranges' lists are then joined.

cdef inline bint add_one(CountPart* P, const Ring* r, Py_ssize_t i) noexcept nogil:
    """Pass 1's add stage, continuing, for the i-th position queued. False if out of memory."""
    cdef Py_ssize_t k = i & (AHEAD - 1)
    return totalmap_add(&P.totals, r.key[k], r.w[k]) == 0


cdef inline void count_totals(const CountJob* job, CountPart* P) noexcept nogil:
    """Pass 1, continuing: every pair's weighted count, in this range's TotalMap."""
    cdef const Corpus* c = job.corpus
    cdef Py_ssize_t p = P.at, q, end = min(P.at + job.step, P.hi), queued = 0, added = 0, k
    cdef Ring r
    while p < end:
        if pair_at(c, p, &q):
            k = queue(&r, queued, c, p, q)
            r.w[k] = walk_weight(c, p, &P.run)
            totalmap_prefetch(&P.totals, r.key[k])
            queued += 1
            if queued - added > PROBE_LAG:
                if not add_one(P, &r, added):
                    P.failed, P.at = True, P.hi
                    return
                added += 1
        p = q
    while added < queued:
        if not add_one(P, &r, added):
            P.failed, P.at = True, P.hi
            return
        added += 1
    P.at = p


cdef inline void list_growing(const CountJob* job, CountPart* P) noexcept nogil:
    """Pass 2, continuing: each tracked pair's positions in this range, as gaps (the first from
    0) appended to its list of the range."""
    cdef const Corpus* c = job.corpus
    cdef Py_ssize_t p = P.at, q, end = min(P.at + job.step, P.hi)
    cdef int32_t pid
    while p < end:
        if pair_at(c, p, &q):
            pid = pairmap_get(job.tracked, pair_key(c.sym[p], c.sym[q]))      # (a small map: cached)
            if pid >= 0:
                put_varint(&P.lists[pid], <uint64_t>(p - P.written[pid]))
                P.written[pid] = p
        p = q
    P.at = p


# -- between the passes, and after them -----------------------------------------------------------
cdef inline int plan_totals(Pairs* pairs, CountPart* parts, int n_parts, PairMap* tracked,
                            Py_ssize_t first_rank) except -1:
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
    if first_rank > 0:
        totals.reserve(every.size)
        for u in range(cap):
            if every.slots[u].key != EMPTY:
                totals.push_back(every.slots[u].total)
        pairs.track_from = max(pairs.track_from, best_total(totals, first_rank))
        vector[int64_t]().swap(totals)
    for u in range(cap):
        if every.slots[u].key != EMPTY and every.slots[u].total >= pairs.track_from:
            chosen.push_back(pair[uint64_t, int64_t](every.slots[u].key, every.slots[u].total))
    totalmap_free(every)
    if chosen.size() > <size_t>INT32_MAX:         # (pairs are numbered with int32)
        raise OverflowError("more than 2**31 - 1 pairs to track: the kernel numbers pairs with int32")
    sort(chosen.begin(), chosen.end())
    for u in range(chosen.size()):
        pid = new_pair(pairs, chosen[u].first)
        pairs.count[pid] = chosen[u].second
    if pairmap_init(tracked, chosen.size()) != 0:
        raise MemoryError()
    for pid in range(<int32_t>chosen.size()):       # (sized for them all: it never grows)
        pairmap_get_or_add(tracked, pairs.keys[pid], pid)
    return 0


cdef inline int join_lists(Pairs* pairs, CountPart* parts, int n_parts) except -1:
    """After pass 2 of a continuing recount: each tracked pair's list, its ranges' lists one
    after the other. A range's list starts with the gap from 0 (its first position); in the
    whole list that gap is from the position listed last before it."""
    cdef size_t pid, size, at, head
    cdef int k
    cdef uint64_t first
    cdef int64_t last
    cdef vector[uint8_t]* part_list
    cdef uint8_t* out
    for pid in range(pairs.keys.size()):
        size, last = 0, 0
        for k in range(n_parts):
            part_list = &parts[k].lists[pid]
            if part_list.size():
                head = get_varint(part_list.data(), 0, &first)
                size += part_list.size() - head + <size_t>varint_len(first - <uint64_t>last)
                last = parts[k].written[pid]
        pairs.occ[pid].resize(size)
        out, at, last = pairs.occ[pid].data(), 0, 0
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
        pairs.occ_last[pid] = last
    return 0


cdef inline int plan_lists(Pairs* pairs, CountPart* parts, int n_parts, PairMap* tracked,
                           Py_ssize_t first_rank) except -1:
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
            if g < 0:          # the 2**31-th pair's number wrapped (a range's own: number_one fails)
                raise OverflowError("more than 2**31 - 1 distinct pairs: the kernel numbers pairs with int32")
            if g == <int32_t>keys.size():
                keys.push_back(P.keys[u])
                totals.push_back(0)
            totals[g] += P.tally[u].total
            P.number[u] = g
    if first_rank > 0:
        pairs.track_from = max(pairs.track_from, best_total(totals, first_rank))
    pid_of.assign(keys.size(), -1)
    for u in range(keys.size()):
        if totals[u] >= pairs.track_from:
            pid_of[u] = new_pair(pairs, keys[u])
            pairs.count[pid_of[u]] = totals[u]
    n_tracked = pairs.keys.size()
    if pairmap_init(tracked, n_tracked) != 0:
        raise MemoryError()
    for pid in range(<int32_t>n_tracked):      # (sized for them all: it never grows)
        pairmap_get_or_add(tracked, pairs.keys[pid], pid)
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
        pairs.occ[u].resize(size_of[u])
        pairs.occ_last[u] = last_of[u]
    return 0
