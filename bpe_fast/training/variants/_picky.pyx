# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Picky BPE (Chizhov et al., arXiv 2409.04599): the training kernel and the replay encoder.

Events and ids (as ``reference.train_picky_reference`` defines them): an event is a row (a, b),
the merge of the pair (a, b), which makes the *event id* 256 + (merges before it); or a row
(x, REMOVED), the removal of token x. Bytes are ids 0..255 and are never removed. Every merge
makes a new id, even when its bytes are those of a removed token (that token comes back as the
new id), so an id is made once and removed at most once.

Training (``train_picky``). Each word of the table is an array of event ids, in place: word w
owns its bytes' slots of ``tokens`` from ``words[w].start`` and holds ``words[w].size`` tokens
at their start (no token is shorter than a byte, so a removal's expansion always fits; the rest
of a word's record, its count and its last visit, sits beside them, one cache line a visit).
Invariants kept between steps:

* ``count[pid]`` is exactly the number of occurrences of pair ``pid`` over all words, each word
  weighted by its count (overlapping occurrences count: "aaa" holds (a, a) twice);
  ``freq[t]`` is exactly the weighted number of occurrences of token t.
* ``pair_words[pid]`` lists every word that holds pair ``pid`` (maybe more than once, maybe
  words that no longer do); ``token_words[t]`` lists every word that holds learned token t
  (likewise). A word is added where it gains a pair or a learned token, and the lists are read
  through ``words[w].seen`` (a word visited once per operation) and a check of the word itself,
  so stale entries cost a look and nothing else.
* Every pair with a positive count has an entry in the heap whose count is >= its true count.
  A step pushes each pair whose count grew past what it was when the step began; popping an
  entry whose count is out of date re-pushes it with the true count (lazy re-check), so the
  entry that survives a pop is the best: highest count, then smallest (left, right).

One step: the best pair (a, b) is merged into t in every word listed for it, left to right
without overlap; each replacement adjusts the counts of the pairs around it (the ones it
destroys, the ones it makes, all holding t; found by the neighbour's symbol in four small arrays,
so the pair map is probed once per merge and neighbour) and m, the weighted number of
replacements; a word
is read up to its first occurrence before anything is written (a fifth of the visits, on
natural text, find none: the word lost the pair since it was listed). Then, for each parent x
in (a, b) (once if a == b) that is not a byte, IoS(x) = m / f(x), f(x) being x's frequency just
before the merge; both are computed before either parent is removed. From the left, a parent
with IoS >= tau is removed: in every word listed for it, each occurrence is replaced by its
expansion (its parents, each expanded again while itself removed), adjusting the counts of the
pairs around it. Only the words that hold the pair or the removed token are touched, and each
costs its length. Training stops when ``n_learned`` learned tokens are present or no pair is
left; as in the paper's code, nothing else bounds the steps (a removal can bring back pairs
already merged): on natural text the removals are a small share of the merges
(benchmarks/RESULTS.md, "Picky BPE").

The replay encoder (``PickyEncoder``) applies the events to one chunk in event order without
visiting the events that do not apply: a min-heap of (event, position) candidates, one for each
adjacent pair (the next merge event of that pair after the pair appeared) and for each learned
token (its removal event). Popping candidates in order and checking each against the chunk as
it stands replays exactly what applying every event in turn does (a merge's occurrences pop
left to right, so it joins them without overlap), in O(n log n) for a chunk of n bytes.
"""
cimport cython

import numpy as np
cimport numpy as cnp
from cpython.exc cimport PyErr_CheckSignals
from libc.stdint cimport INT32_MAX, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libcpp.vector cimport vector
from libcpp.queue cimport priority_queue
from libcpp.utility cimport pair, move

from ...core._cpu cimport prefetch
from ...core._pairmap cimport PairMap, pair_key, key_left, key_right, pairmap_init, pairmap_free, pairmap_get, \
    pairmap_get_or_add

cnp.import_array()

REMOVED = -1            # the second column of a removal event

cdef struct Word:
    int64_t start           # its first slot in tokens
    int64_t weight          # its count in the corpus
    int64_t seen            # the last operation that visited it
    int32_t size            # its tokens, now


cdef vector[int32_t] expansion(const int32_t* left, const int32_t* right, const int32_t* removed_at, int32_t x,
                               int32_t at) noexcept:
    """x's parents, left to right, each expanded again while itself removed before event ``at``
    (removed_at: event id -> the id of its removal event, or INT32_MAX). Training expands a token
    it removes now (at: INT32_MAX, every removal so far); the encoder, one removed at event at."""
    cdef vector[int32_t] out, todo
    cdef int32_t y
    todo.push_back(right[x])
    todo.push_back(left[x])
    while not todo.empty():
        y = todo.back()
        todo.pop_back()
        if removed_at[y] < at:
            todo.push_back(right[y])
            todo.push_back(left[y])
        else:
            out.push_back(y)
    return out


cdef class _Picky:
    """The training state (see the module docstring for its invariants)."""
    # the corpus: word w's tokens are tokens[words[w].start : words[w].start + words[w].size]
    cdef vector[int32_t] tokens
    cdef vector[Word] words                      # one struct: a visit reads one cache line
    cdef vector[int32_t] scratch                 # a word's tokens, while a removal rewrites it
    # pairs: dense ids through the map
    cdef PairMap ids
    cdef vector[uint64_t] key_of
    cdef vector[int64_t] count
    cdef vector[vector[int32_t]] pair_words
    cdef vector[int64_t] step_of                 # pid -> the last step that changed its count ...
    cdef vector[int64_t] count_before            # ... and its count before that step
    cdef vector[int32_t] changed                 # the pairs changed in this step
    cdef priority_queue[pair[int64_t, uint64_t]] heap    # (count, ~key): max count, then min key
    # The merge of (a, b) into t in progress: the ids of the pairs around an occurrence, by the
    # neighbour's symbol (x before it: (x, a), (x, t); y after it: (b, y), (t, y)), -1 until
    # looked up, so the pair map is probed once per merge and neighbour, not per occurrence.
    cdef vector[int32_t] with_a, with_t_left, with_b, with_t_right
    cdef vector[int32_t] near                    # the neighbours looked up (to reset)
    # tokens, by event id
    cdef vector[int32_t] left, right, length
    cdef vector[int64_t] freq
    cdef vector[int32_t] removed_at               # event id -> its removal event, or INT32_MAX
    cdef vector[vector[int32_t]] token_words
    cdef vector[int32_t] events                  # flat (a, b) rows
    cdef int64_t step, operation
    cdef int64_t n_removals
    cdef int64_t n_visits, n_scanned, n_stale, n_replaced   # work counters (stats=)

    def __cinit__(self):
        self.ids.keys = NULL
        self.ids.values = NULL

    def __dealloc__(self):
        pairmap_free(&self.ids)

    cdef int setup(self, const uint8_t[::1] symbols, const int64_t[::1] offsets, const int64_t[::1] counts) except -1:
        cdef Py_ssize_t n_words = counts.shape[0], w, i
        cdef int64_t n
        if pairmap_init(&self.ids, 1 << 16) != 0:
            raise MemoryError()
        self.tokens.resize(symbols.shape[0])
        self.words.resize(n_words)
        for i in range(256):
            self.left.push_back(i)
            self.right.push_back(-1)
            self.length.push_back(1)
            self.freq.push_back(0)
            self.removed_at.push_back(INT32_MAX)
        self.token_words.resize(256)
        self.with_a.assign(256, -1)
        self.with_t_left.assign(256, -1)
        self.with_b.assign(256, -1)
        self.with_t_right.assign(256, -1)
        for w in range(n_words):
            n = counts[w]
            self.words[w] = Word(start=offsets[w], weight=n, seen=-1, size=<int32_t>(offsets[w + 1] - offsets[w]))
            for i in range(offsets[w], offsets[w + 1]):
                self.tokens[i] = symbols[i]
                self.freq[symbols[i]] += n
                if i > offsets[w]:
                    self.add(symbols[i - 1], symbols[i], n, <int32_t>w)
        self.push_changed()
        return 0

    cdef inline int32_t pair_id(self, int32_t x, int32_t y) except -1:
        cdef uint64_t key = pair_key(x, y)
        cdef int32_t pid = pairmap_get_or_add(&self.ids, key, <int32_t>self.count.size())
        if pid == -2:
            raise MemoryError()
        if pid == <int32_t>self.count.size():
            self.key_of.push_back(key)
            self.count.push_back(0)
            self.pair_words.push_back(vector[int32_t]())
            self.step_of.push_back(-1)
            self.count_before.push_back(0)
        return pid

    cdef int add(self, int32_t x, int32_t y, int64_t delta, int32_t w) except -1:
        """Pair (x, y) gains ``delta`` occurrences (loses, if negative) in word w."""
        return self.add_pid(self.pair_id(x, y), delta, w)

    cdef int add_pid(self, int32_t pid, int64_t delta, int32_t w) except -1:
        if self.step_of[pid] != self.step:
            self.step_of[pid] = self.step
            self.count_before[pid] = self.count[pid]
            self.changed.push_back(pid)
        self.count[pid] += delta
        if delta > 0 and (self.pair_words[pid].empty() or self.pair_words[pid].back() != w):
            self.pair_words[pid].push_back(w)
        return 0

    cdef void note_token(self, int32_t t, int32_t w):
        if t >= 256 and (self.token_words[t].empty() or self.token_words[t].back() != w):
            self.token_words[t].push_back(w)

    cdef void push_changed(self):
        """Keep the heap's invariant: an entry for every pair whose count grew in this step."""
        cdef int32_t pid
        for pid in self.changed:
            if self.count[pid] > self.count_before[pid]:
                self.heap.push(pair[int64_t, uint64_t](self.count[pid], ~self.key_of[pid]))
        self.changed.clear()

    cdef int32_t pop_best(self, int64_t min_count, int64_t max_token_length):
        """The best pair's id, or -1 when no pair occurs ``min_count`` times (pairs whose token
        would pass ``max_token_length`` bytes, if not 0, are never merged)."""
        cdef pair[int64_t, uint64_t] top
        cdef uint64_t key
        cdef int32_t pid
        cdef int64_t true_count
        while not self.heap.empty():
            top = self.heap.top()
            self.heap.pop()
            key = ~top.second
            pid = pairmap_get(&self.ids, key)
            true_count = self.count[pid]
            if true_count != top.first:              # out of date: re-pushed with the true count
                if 0 < true_count < top.first:
                    self.heap.push(pair[int64_t, uint64_t](true_count, top.second))
                continue
            if max_token_length and self.length[key_left(key)] + self.length[key_right(key)] > max_token_length:
                continue
            return pid if true_count >= min_count else -1
        return -1

    cdef int32_t new_token(self, int32_t a, int32_t b):
        cdef int32_t t = <int32_t>self.left.size()
        self.left.push_back(a)
        self.right.push_back(b)
        self.length.push_back(self.length[a] + self.length[b])
        self.freq.push_back(0)
        self.removed_at.push_back(INT32_MAX)
        self.token_words.push_back(vector[int32_t]())
        self.with_a.push_back(-1)
        self.with_t_left.push_back(-1)
        self.with_b.push_back(-1)
        self.with_t_right.push_back(-1)
        return t

    cdef int64_t merge(self, int32_t pid, int32_t a, int32_t b, int32_t t) except -1:
        """Merge (a, b) into t in every word that holds it; returns m, the weighted number of
        replacements."""
        cdef vector[int32_t] words
        cdef int32_t w, x
        cdef int64_t m = 0
        cdef size_t i, n
        words.swap(self.pair_words[pid])       # no word holds (a, b) after this
        self.operation += 1
        n = words.size()
        for i in range(n):
            # Words are scattered in memory: ask for the records 16 words ahead in the list and for
            # the tokens 8 ahead, so they are in the cache when the visit comes (written out here:
            # as a method it lost most of the gain). Much of a merge's time went to waiting for
            # them (benchmarks/RESULTS.md, "Picky BPE").
            if i + 16 < n:
                prefetch(&self.words[words[i + 16]])
            if i + 8 < n:
                prefetch(&self.tokens[self.words[words[i + 8]].start])
            w = words[i]
            if self.words[w].seen != self.operation:
                self.words[w].seen = self.operation
                m += self.merge_in_word(w, pid, a, b, t)
        for x in self.near:
            self.with_a[x] = self.with_t_left[x] = self.with_b[x] = self.with_t_right[x] = -1
        self.near.clear()
        return m

    cdef int64_t merge_in_word(self, int32_t w, int32_t pid, int32_t a, int32_t b, int32_t t) except -1:
        """Rewrite word w in place, left to right, from its first occurrence (the write index never
        passes the read index); a word that no longer holds (a, b) is only read."""
        cdef int32_t* p = &self.tokens[self.words[w].start]
        cdef int32_t size = self.words[w].size, i = 0, j, k = 0, x, y
        cdef int64_t n = self.words[w].weight
        self.n_visits += 1
        self.n_scanned += size
        while i + 1 < size and not (p[i] == a and p[i + 1] == b):
            i += 1
        j = i
        if i + 1 >= size:
            self.n_stale += 1
        while i < size:
            if i + 1 < size and p[i] == a and p[i + 1] == b:
                if j > 0:                    # the token before: maybe the t just made
                    x = p[j - 1]
                    if self.with_a[x] < 0:
                        self.with_a[x] = self.pair_id(x, a)
                        self.with_t_left[x] = self.pair_id(x, t)
                        self.near.push_back(x)
                    self.add_pid(self.with_a[x], -n, w)
                    self.add_pid(self.with_t_left[x], n, w)
                self.add_pid(pid, -n, w)
                if i + 2 < size:
                    y = p[i + 2]
                    if self.with_b[y] < 0:
                        self.with_b[y] = self.pair_id(b, y)
                        self.with_t_right[y] = self.pair_id(t, y)
                        self.near.push_back(y)
                    self.add_pid(self.with_b[y], -n, w)
                    self.add_pid(self.with_t_right[y], n, w)
                p[j] = t
                j += 1
                i += 2
                k += 1
            else:
                p[j] = p[i]
                j += 1
                i += 1
        self.n_replaced += k
        if k:
            self.words[w].size = j
            self.freq[a] -= k * n
            self.freq[b] -= k * n
            self.freq[t] += k * n
            self.note_token(t, w)
        return k * n

    cdef int remove(self, int32_t x) except -1:
        """Replace every occurrence of x by its expansion; x is never present again."""
        cdef vector[int32_t] words, parts
        cdef int32_t w
        cdef size_t i
        self.removed_at[x] = <int32_t>(self.events.size() // 2)     # the removal event's id, as below
        parts = expansion(self.left.data(), self.right.data(), self.removed_at.data(), x, INT32_MAX)
        words.swap(self.token_words[x])
        self.operation += 1
        for i in range(words.size()):
            if i + 16 < words.size():           # as in merge
                prefetch(&self.words[words[i + 16]])
            if i + 8 < words.size():
                prefetch(&self.tokens[self.words[words[i + 8]].start])
            w = words[i]
            if self.words[w].seen != self.operation:
                self.words[w].seen = self.operation
                self.split_in_word(w, x, parts)
        self.events.push_back(x)
        self.events.push_back(REMOVED)
        self.n_removals += 1
        return 0

    cdef int split_in_word(self, int32_t w, int32_t x, vector[int32_t]& parts) except -1:
        """Rewrite word w from a copy (it may grow), each x becoming ``parts``."""
        cdef int32_t* p = &self.tokens[self.words[w].start]
        cdef int32_t size = self.words[w].size, i, j = 0, k = 0, q, y
        cdef int32_t last = <int32_t>parts.size() - 1
        cdef int64_t n = self.words[w].weight
        self.scratch.assign(p, p + size)
        for i in range(size):
            y = self.scratch[i]
            if y != x:
                p[j] = y
                j += 1
                continue
            if j > 0:
                self.add(p[j - 1], x, -n, w)
                self.add(p[j - 1], parts[0], n, w)
            for q in range(last):
                self.add(parts[q], parts[q + 1], n, w)
            if i + 1 < size:
                self.add(x, self.scratch[i + 1], -n, w)
                self.add(parts[last], self.scratch[i + 1], n, w)
            for q in range(last + 1):
                p[j] = parts[q]
                j += 1
            k += 1
        if k:
            self.words[w].size = j
            self.freq[x] -= k * n
            for q in range(last + 1):
                self.freq[parts[q]] += k * n
                self.note_token(parts[q], w)
        return 0

    cdef int learn(self, int64_t n_learned, double tau, int64_t min_count, int64_t max_token_length,
                   int64_t max_steps, progress, Py_ssize_t progress_every) except -1:
        cdef int64_t present = 0, m, f_a, f_b
        cdef int32_t pid, a, b, t
        cdef double ios_a, ios_b
        while present < n_learned and self.step < max_steps:
            pid = self.pop_best(min_count, max_token_length)
            if pid < 0:
                break
            self.step += 1
            a, b = key_left(self.key_of[pid]), key_right(self.key_of[pid])
            f_a, f_b = self.freq[a], self.freq[b]
            t = self.new_token(a, b)
            m = self.merge(pid, a, b, t)
            self.events.push_back(a)
            self.events.push_back(b)
            present += 1
            ios_a = <double>m / <double>f_a      # both before either parent is removed
            ios_b = <double>m / <double>f_b
            if a >= 256 and ios_a >= tau:
                self.remove(a)
                present -= 1
            if b >= 256 and b != a and ios_b >= tau:
                self.remove(b)
                present -= 1
            self.push_changed()
            if self.step % progress_every == 0:
                PyErr_CheckSignals()                 # Ctrl-C: stop here, not when training ends
                if progress is not None:
                    progress(present)
        if progress is not None:
            progress(present)
        return 0


def train_picky(const uint8_t[::1] symbols, const int64_t[::1] offsets, const int64_t[::1] counts,
                int64_t n_learned, double tau, int64_t min_count=1, int64_t max_token_length=0,
                progress=None, Py_ssize_t progress_every=256, dict stats=None, list segmentation=None,
                int64_t max_steps=-1):
    """Picky BPE's events on a word table (bytes, offsets, counts), until ``n_learned`` learned
    tokens are present or no pair occurs ``min_count`` times: an int32 array of (a, b) rows (see
    the module docstring). ``progress(present)`` is called every ``progress_every`` steps;
    ``stats`` gets the work done (merge steps, removals, pairs seen, word visits of the merges,
    how many of those found no occurrence, tokens scanned, occurrences replaced). A tau
    above 1 removes nothing: plain BPE (the tests hold it to ``_kernel``). ``segmentation``, a
    list, gets each word's tokens (event ids) at the end, the state the replay must reach.
    ``max_steps`` (default 4 * n_learned + 1024) bounds the merge steps: no proof is known that
    merges and removals cannot alternate for ever, and on real text the steps stay well within
    it, even at tau = 0.6, which removes the most (benchmarks/RESULTS.md, "Picky BPE");
    ``stats["steps"]`` says whether the bound stopped the training."""
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    cdef _Picky state = _Picky()
    cdef Py_ssize_t w
    state.setup(symbols, offsets, counts)
    state.learn(n_learned, tau, max(1, min_count), max_token_length,
                max_steps if max_steps >= 0 else 4 * n_learned + 1024, progress, max(1, progress_every))
    if stats is not None:
        stats.update(steps=state.step, removals=state.n_removals, pairs=state.count.size(), word_visits=state.n_visits,
                     tokens_scanned=state.n_scanned, stale_visits=state.n_stale, replaced=state.n_replaced)
    if segmentation is not None:
        for w in range(counts.shape[0]):
            segmentation.append([state.tokens[i] for i in range(state.words[w].start,
                                                                   state.words[w].start + state.words[w].size)])
    cdef cnp.ndarray[int32_t, ndim=2] out = np.empty((state.events.size() // 2, 2), dtype=np.int32)
    cdef Py_ssize_t i
    for i in range(<Py_ssize_t>state.events.size() // 2):
        out[i, 0] = state.events[2 * i]
        out[i, 1] = state.events[2 * i + 1]
    return out


cdef class PickyEncoder:
    """Replays checked events (``picky.check_events``) on one chunk's bytes; gives token ids
    through ``token_ids`` (event id -> token id). See the module docstring for the method."""
    cdef vector[int32_t] left, right, length       # by event id
    cdef vector[int32_t] removed_at                # event id -> its removal event, or INT32_MAX
    cdef vector[int32_t] split_from, split_to      # event id -> its expansion in split_parts
    cdef vector[int32_t] split_parts
    cdef vector[int32_t] event_left, event_right   # by event: the pair, or (x, REMOVED)
    cdef vector[int32_t] made                      # by event: the id a merge makes
    cdef vector[int32_t] next_same                 # by event: the next merge of the same pair, or -1
    cdef vector[int32_t] first_event               # by pair id: its first merge event
    cdef PairMap pairs
    cdef vector[int32_t] token_id

    def __cinit__(self, const int32_t[:, ::1] events, const int32_t[::1] token_ids):
        cdef Py_ssize_t e, n = events.shape[0]
        cdef int32_t a, b, t, pid
        cdef vector[int32_t] last_of                 # by pair id: its latest merge event
        cdef vector[int32_t] parts
        self.pairs.keys = NULL
        self.pairs.values = NULL
        if pairmap_init(&self.pairs, n) != 0:
            raise MemoryError()
        for t in range(256):
            self.left.push_back(t)
            self.right.push_back(-1)
            self.length.push_back(1)
        self.token_id.assign(&token_ids[0], &token_ids[0] + token_ids.shape[0])
        self.removed_at.assign(256, INT32_MAX)
        self.split_from.assign(256, 0)
        self.split_to.assign(256, 0)
        for e in range(n):
            a, b = events[e, 0], events[e, 1]
            self.event_left.push_back(a)
            self.event_right.push_back(b)
            self.next_same.push_back(-1)
            if b == REMOVED:
                self.made.push_back(-1)
                self.removed_at[a] = <int32_t>e
                self.split_from[a] = <int32_t>self.split_parts.size()
                parts = expansion(self.left.data(), self.right.data(), self.removed_at.data(), a, <int32_t>e)
                self.split_parts.insert(self.split_parts.end(), parts.begin(), parts.end())
                self.split_to[a] = <int32_t>self.split_parts.size()
                continue
            t = <int32_t>self.left.size()
            self.made.push_back(t)
            self.left.push_back(a)
            self.right.push_back(b)
            self.length.push_back(self.length[a] + self.length[b])
            self.removed_at.push_back(INT32_MAX)
            self.split_from.push_back(0)
            self.split_to.push_back(0)
            pid = pairmap_get_or_add(&self.pairs, pair_key(a, b), <int32_t>self.first_event.size())
            if pid == -2:
                raise MemoryError()
            if pid == <int32_t>self.first_event.size():
                self.first_event.push_back(<int32_t>e)
                last_of.push_back(<int32_t>e)
            else:
                self.next_same[last_of[pid]] = <int32_t>e
                last_of[pid] = <int32_t>e

    def __dealloc__(self):
        pairmap_free(&self.pairs)

    cdef inline int32_t next_merge(self, int32_t a, int32_t b, int32_t after) noexcept nogil:
        """The first merge event of the pair (a, b) after event ``after``, or -1."""
        cdef int32_t pid = pairmap_get(&self.pairs, pair_key(a, b))
        cdef int32_t e = self.first_event[pid] if pid >= 0 else -1
        while e >= 0 and e <= after:
            e = self.next_same[e]
        return e

    def encode(self, const uint8_t[::1] data):
        """The token ids of one chunk."""
        cdef Py_ssize_t n = data.shape[0], i
        cdef vector[int32_t] tok, prev
        cdef priority_queue[uint64_t] heap            # ~(event << 32 | position): the smallest on top
        cdef uint64_t key
        cdef int32_t e, pos, a, b, nxt, t, r, q, k
        if n == 0:
            return []
        if n >= INT32_MAX:
            raise ValueError("a chunk of 2 GiB or more is too long to encode")
        tok.resize(n)
        prev.resize(n)
        for i in range(n):
            tok[i] = data[i]
            prev[i] = <int32_t>i - 1
        for i in range(n - 1):
            self.push_pair(&heap, tok[i], tok[i + 1], <int32_t>i, -1)
        while not heap.empty():
            key = ~heap.top()
            heap.pop()
            e, pos = <int32_t>(key >> 32), <int32_t>(key & 0xFFFFFFFF)
            a, b = self.event_left[e], self.event_right[e]
            if tok[pos] != a:                       # gone since the candidate was pushed
                continue
            if b == REMOVED:                        # x = a becomes its expansion, left to right
                q, r = pos, prev[pos]
                for k in range(self.split_from[a], self.split_to[a]):
                    t = self.split_parts[k]
                    tok[q] = t
                    prev[q] = r
                    if r >= 0:
                        self.push_pair(&heap, tok[r], t, r, e)
                    self.push_removal(&heap, t, q)
                    r = q
                    q += self.length[t]
                if q < n:
                    prev[q] = r
                    self.push_pair(&heap, tok[r], tok[q], r, e)
                continue
            nxt = pos + self.length[a]
            if nxt >= n or tok[nxt] != b:
                continue
            t = self.made[e]
            tok[pos] = t
            tok[nxt] = -1
            r = pos + self.length[t]
            if prev[pos] >= 0:
                self.push_pair(&heap, tok[prev[pos]], t, prev[pos], e)
            if r < n:
                prev[r] = pos
                self.push_pair(&heap, t, tok[r], pos, e)
            self.push_removal(&heap, t, pos)
        out = []
        i = 0
        while i < n:
            out.append(self.token_id[tok[i]])
            i += self.length[tok[i]]
        return out

    cdef inline void push_pair(self, priority_queue[uint64_t]* heap, int32_t a, int32_t b, int32_t pos,
                               int32_t after) noexcept:
        cdef int32_t e = self.next_merge(a, b, after)
        if e >= 0:
            heap.push(~((<uint64_t>e << 32) | <uint32_t>pos))

    cdef inline void push_removal(self, priority_queue[uint64_t]* heap, int32_t t, int32_t pos) noexcept:
        if self.removed_at[t] != INT32_MAX:
            heap.push(~((<uint64_t>self.removed_at[t] << 32) | <uint32_t>pos))
