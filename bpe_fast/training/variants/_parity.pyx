# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Parity-aware BPE's corpus (variants/parity.py): words of several languages, each language's
pair counts kept incrementally, and a heap per language (and one for all of them together).

Invariant: after each ``merge``, for every language ``l`` and pair ``(x, y)``, ``count`` of
``(l, x, y)`` is exactly the number of times the pair occurs in language ``l``'s words (each
word weighted by its count; pairs whose token would pass ``max_token_length`` bytes are not
counted), with the words as replacing the merged pair left to right without overlap leaves
them; the same for the pseudo-language ``n_langs`` (all languages together) while ``global``
tracking is on. Every pair with a positive count has an entry in its language's heap whose
count is at least its own, or its own exactly (a count that rises is pushed again; one that
falls is re-pushed when its stale entry pops), so ``best(l)`` is the true best: the highest
count, ties to the smallest (left, right) id (``tie_break="bytes"``) or the largest (left,
right) by the tokens' byte-level strings (``"huggingface"``, ParityBpeTrainer's).

Each pair's occurrence list holds the slot of its left token at every place it occurs (and at
some where it no longer does, and some twice): a merge visits those slots of each language and
rewrites the pair where it still is. Each rewrite settles the counts against the words as they
are then, so the order of the visits changes nothing, except where occurrences overlap (x x x,
for a pair (x, x)): those slots are visited in order, so that it replaces left to right. One
open-addressing map (_pairmap.pxd) numbers the pairs of every language: its key is
``(left * (n_langs + 1) + lang, right)``.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.math cimport INFINITY
from libcpp.algorithm cimport sort
from libcpp.vector cimport vector

from ...core._cpu cimport prefetch
from ...core._pairmap cimport PairMap, pairmap_free, pairmap_get, pairmap_get_or_add, pairmap_init

import numpy as np
cimport numpy as cnp

cnp.import_array()


cdef enum:
    LOOK_AHEAD = 16         # a merge's list: a slot's lines fetched 2 x this many slots ahead, its word's L ahead


cdef bint tokens_below(const int32_t[::1] tokens, int32_t limit) noexcept:
    cdef Py_ssize_t i
    for i in range(tokens.shape[0]):
        if tokens[i] < 0 or tokens[i] >= limit:
            return False
    return True


cdef struct WordSlot:
    int32_t sym             # the token that starts here (-1: taken into the token before it)
    int32_t nxt, prv        # the next and previous live slot of the word (-1: none)
    int32_t word


cdef struct Memo:
    # for one merge of (x, y) into z in one language, the ids of the pairs a neighbour token
    # a on the left, b on the right, takes part in: (a, x), (a, z); (y, b), (z, b) (-1: too long)
    int32_t lstamp, lold, lnew
    int32_t rstamp, rold, rnew


cdef struct Entry:
    int64_t count
    int32_t pid


cdef class ParityCorpus:
    cdef vector[WordSlot] slot         # each byte of the words: one cache line holds several
    cdef vector[int64_t] wcount
    cdef vector[int32_t] wlang
    cdef int n_langs
    cdef bint heaps, track_global
    cdef bint hf_ties
    cdef int64_t max_len
    # the pairs: (lang, left, right) -> id
    cdef PairMap ids
    cdef vector[int64_t] pcount
    cdef vector[int32_t] pleft, pright, plang
    cdef vector[vector[int32_t]] occ
    cdef vector[vector[Entry]] heap      # per language (and n_langs: all together)
    cdef vector[int32_t] touched         # pairs whose count rose in this merge
    cdef vector[uint8_t] rose
    cdef vector[Memo] memo               # by token: valid where its stamp is ``stamp``
    cdef int32_t stamp
    # the tokens: lengths (bytes) and, for the Hugging Face tie-break, their bytes as ranks
    cdef vector[int64_t] tlen
    cdef vector[int64_t] toff
    cdef vector[uint8_t] tbytes

    def __cinit__(self, const int32_t[::1] tokens, const int64_t[::1] offsets, const int64_t[::1] counts,
                  const int32_t[::1] langs, int n_langs, token_bytes, bint heaps=True, bint hf_ties=False,
                  int64_t max_token_length=0, bint track_global=False, byte_rank=None):
        """``tokens``/``offsets``: each word's token ids; ``counts``, ``langs``: its count and
        language; ``token_bytes``: the bytes of every id the words hold (and any below them);
        ``byte_rank``: each byte's place in the Hugging Face tie order."""
        cdef Py_ssize_t w, i, n_words = counts.shape[0]
        cdef int64_t s
        self.n_langs, self.heaps, self.hf_ties, self.track_global = n_langs, heaps, hf_ties, track_global
        self.max_len = max_token_length if max_token_length > 0 else (<int64_t>1 << 62)
        if pairmap_init(&self.ids, 1 << 16) != 0:
            raise MemoryError()
        self.heap.resize(n_langs + 1)
        rank = np.arange(256, dtype=np.uint8) if byte_rank is None else np.asarray(byte_rank, dtype=np.uint8)
        for t in token_bytes:
            self._add_token(b"" if t is None else bytes(t), rank)
        self.memo.resize(self.tlen.size())
        self.stamp = 0
        n_sym = offsets[n_words] if n_words else 0
        self.slot.resize(n_sym)
        self.wcount.resize(n_words)
        self.wlang.resize(n_words)
        for w in range(n_words):
            self.wcount[w] = counts[w]
            self.wlang[w] = langs[w]
            for i in range(offsets[w], offsets[w + 1]):
                self.slot[i].sym = tokens[i]
                self.slot[i].word = w
                self.slot[i].nxt = i + 1 if i + 1 < offsets[w + 1] else -1
                self.slot[i].prv = i - 1 if i > offsets[w] else -1
        if n_sym and tokens_below(tokens, 256) and n_langs <= 64 and self.max_len >= 2:
            self._count_bytes(offsets, counts, langs)
        else:
            for w in range(n_words):
                for i in range(offsets[w], offsets[w + 1] - 1):
                    self._change(langs[w], self.slot[i].sym, self.slot[i + 1].sym, counts[w], i)
        if heaps:
            self._push_touched()
        self.touched.clear()

    cdef void _count_bytes(self, const int64_t[::1] offsets, const int64_t[::1] counts,
                           const int32_t[::1] langs) noexcept:
        """The first count when every token is a byte: in dense tables of (lang, left, right),
        then the pairs numbered in that order and their lists filled at their exact sizes (the
        same counts and lists as pair by pair, in fewer probes)."""
        cdef Py_ssize_t w, i, k, n_words = counts.shape[0], n_cells = <Py_ssize_t>self.n_langs << 16
        cdef vector[int64_t] total
        cdef vector[int32_t] seen, pid_of
        cdef int32_t pid, gid
        total.assign(n_cells, 0)
        seen.assign(n_cells, 0)
        pid_of.assign(n_cells, -1)
        for w in range(n_words):
            for i in range(offsets[w], offsets[w + 1] - 1):
                k = (<Py_ssize_t>langs[w] << 16) | (self.slot[i].sym << 8) | self.slot[i + 1].sym
                total[k] += counts[w]
                seen[k] += 1
        for k in range(n_cells):
            if seen[k]:
                pid = self._pid(k >> 16, (k >> 8) & 255, k & 255)
                pid_of[k] = pid
                self.pcount[pid] = total[k]
                self.occ[pid].reserve(seen[k])
                self.rose[pid] = 1
                self.touched.push_back(pid)
                if self.track_global:
                    gid = self._pid(self.n_langs, (k >> 8) & 255, k & 255)
                    self.pcount[gid] += total[k]
                    if not self.rose[gid]:
                        self.rose[gid] = 1
                        self.touched.push_back(gid)
        for w in range(n_words):
            for i in range(offsets[w], offsets[w + 1] - 1):
                k = (<Py_ssize_t>langs[w] << 16) | (self.slot[i].sym << 8) | self.slot[i + 1].sym
                self.occ[pid_of[k]].push_back(i)

    cdef void _add_token(self, bytes token, rank):
        cdef const uint8_t[::1] ranks = rank
        self.toff.push_back(self.tbytes.size())
        self.tlen.push_back(len(token))
        for b in token:
            self.tbytes.push_back(ranks[b])

    def __dealloc__(self):
        pairmap_free(&self.ids)

    cdef inline uint64_t _key(self, int lang, int32_t x, int32_t y) noexcept:
        return (<uint64_t>(<uint64_t>x * (self.n_langs + 1) + lang) << 32) | <uint32_t>y

    cdef int32_t _pid(self, int lang, int32_t x, int32_t y) noexcept:
        """The id of pair (x, y) in ``lang``, made if it is new."""
        cdef int32_t pid = self.pcount.size()
        cdef int32_t got = pairmap_get_or_add(&self.ids, self._key(lang, x, y), pid)
        if got != pid:
            return got
        self.pcount.push_back(0)
        self.pleft.push_back(x)
        self.pright.push_back(y)
        self.plang.push_back(lang)
        self.occ.push_back(vector[int32_t]())
        self.rose.push_back(0)
        return pid

    cdef inline int32_t _pid_within(self, int lang, int32_t x, int32_t y) noexcept:
        """``_pid``, or -1 for a pair whose token would pass ``max_token_length``."""
        if self.tlen[x] + self.tlen[y] > self.max_len:
            return -1
        return self._pid(lang, x, y)

    cdef inline void _add(self, int32_t pid, int64_t delta, int32_t at) noexcept:
        """``_change`` for a pair already numbered (-1: none): one language only."""
        if pid < 0:
            return
        self.pcount[pid] += delta
        if delta > 0:
            self.occ[pid].push_back(at)
            if not self.rose[pid]:
                self.rose[pid] = 1
                self.touched.push_back(pid)

    cdef inline void _change(self, int lang, int32_t x, int32_t y, int64_t delta, int32_t at) noexcept:
        """The pair (x, y) occurs ``delta`` more times in ``lang`` (at slot ``at``, if it rose)."""
        cdef int32_t pid
        if self.tlen[x] + self.tlen[y] > self.max_len:
            return
        pid = self._pid(lang, x, y)
        self.pcount[pid] += delta
        if delta > 0:
            self.occ[pid].push_back(at)
            if not self.rose[pid]:
                self.rose[pid] = 1
                self.touched.push_back(pid)
        if self.track_global:
            pid = self._pid(self.n_langs, x, y)
            self.pcount[pid] += delta
            if delta > 0 and not self.rose[pid]:
                self.rose[pid] = 1
                self.touched.push_back(pid)

    cdef void _push_touched(self) noexcept:
        cdef int32_t pid
        for pid in self.touched:
            self.rose[pid] = 0
            if self.pcount[pid] > 0:
                self._heap_push(self.plang[pid], Entry(self.pcount[pid], pid))
        self.touched.clear()

    # -- the heaps: a binary max-heap per language, by count then the tie rule --------------------
    cdef inline int _cmp_tokens(self, int32_t a, int32_t b) noexcept:
        """-1, 0, 1: token a's byte-level string before, equal to, after b's."""
        cdef int64_t i, la = self.tlen[a], lb = self.tlen[b], oa = self.toff[a], ob = self.toff[b]
        cdef int64_t n = la if la < lb else lb
        for i in range(n):
            if self.tbytes[oa + i] != self.tbytes[ob + i]:
                return -1 if self.tbytes[oa + i] < self.tbytes[ob + i] else 1
        return -1 if la < lb else (1 if la > lb else 0)

    cdef inline bint _above(self, Entry e, Entry f) noexcept:
        """Does ``e`` come out of the heap before ``f``?"""
        cdef int c
        if e.count != f.count:
            return e.count > f.count
        if e.pid == f.pid:
            return False
        if self.hf_ties:
            c = self._cmp_tokens(self.pleft[e.pid], self.pleft[f.pid])
            if c == 0:
                c = self._cmp_tokens(self.pright[e.pid], self.pright[f.pid])
            return c > 0
        if self.pleft[e.pid] != self.pleft[f.pid]:
            return self.pleft[e.pid] < self.pleft[f.pid]
        return self.pright[e.pid] < self.pright[f.pid]

    cdef void _heap_push(self, int lang, Entry e) noexcept:
        cdef vector[Entry]* h = &self.heap[lang]
        cdef Py_ssize_t i = h.size(), parent
        h.push_back(e)
        while i > 0:
            parent = (i - 1) >> 1
            if not self._above(e, h[0][parent]):
                break
            h[0][i] = h[0][parent]
            i = parent
        h[0][i] = e

    cdef Entry _heap_pop(self, int lang) noexcept:
        cdef vector[Entry]* h = &self.heap[lang]
        cdef Entry top = h[0][0], last = h.back()
        cdef Py_ssize_t i = 0, child, n
        h.pop_back()
        n = h.size()
        if n == 0:
            return top
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and self._above(h[0][child + 1], h[0][child]):
                child += 1
            if not self._above(h[0][child], last):
                break
            h[0][i] = h[0][child]
            i = child
        h[0][i] = last
        return top

    def best(self, int lang):
        """The best pair of ``lang`` (``n_langs``: all together) as (left, right, count), or
        None when it has none; its heap keeps it."""
        cdef Entry top
        cdef vector[Entry]* h = &self.heap[lang]
        while not h.empty():
            top = h[0][0]
            if self.pcount[top.pid] == top.count:
                return self.pleft[top.pid], self.pright[top.pid], top.count
            self._heap_pop(lang)
            if self.pcount[top.pid] > 0:            # stale: its count fell; pushed again with it
                self._heap_push(lang, Entry(self.pcount[top.pid], top.pid))
        return None

    def stop_global(self):
        """The steps over all languages together are done: their counts are no longer kept."""
        self.track_global = False
        self.heap[self.n_langs].clear()
        self.heap[self.n_langs].shrink_to_fit()

    # -- a merge ---------------------------------------------------------------------------------
    def merge(self, int32_t x, int32_t y, int64_t[::1] lengths=None):
        """Replace (x, y) by a new token (the next id: x's bytes, then y's) in every
        language's words; each language's fall in tokens (count-weighted), as an int64 array,
        or, given ``lengths`` (one per language), subtracted from them (None returned: no
        array made per merge)."""
        cdef int32_t new_id = self.tlen.size()
        cdef int64_t lx = self.tlen[x], lxy = self.tlen[x] + self.tlen[y], n_slots = self.slot.size()
        cdef int lang
        cdef Py_ssize_t k
        cdef vector[int32_t] slots
        cdef int32_t pid
        cdef int64_t lang_fall
        cdef bint subtract = lengths is not None
        fall = None if lengths is not None else np.zeros(self.n_langs, dtype=np.int64)
        cdef int64_t[::1] falls = fall if lengths is None else lengths
        self._add_joined(x, y)
        for lang in range(self.n_langs):
            pid = pairmap_get(&self.ids, self._key(lang, x, y))
            if pid < 0:
                continue
            slots.clear()
            slots.swap(self.occ[pid])
            # what the pair got back is the previous language's list, emptied: let it go (the pair
            # never occurs again, as every pair a merge makes holds the new token), else each
            # merge would keep the lists of all its languages but the last, unused
            self.occ[pid].shrink_to_fit()
            self.stamp += 1                   # (a new merge or language: the memo starts empty)
            if x == y:          # overlapping occurrences (x x x): left to right, as in order
                sort(slots.begin(), slots.end())
            lang_fall = 0
            for k in range(<Py_ssize_t>slots.size()):
                if k + 2 * LOOK_AHEAD < <Py_ssize_t>slots.size():
                    self._fetch_ahead(slots[k + 2 * LOOK_AHEAD], lx, lxy, n_slots)
                if k + LOOK_AHEAD < <Py_ssize_t>slots.size():
                    self._fetch_before(slots[k + LOOK_AHEAD])
                lang_fall += self._merge_at(slots[k], x, y, new_id, lang)   # (0 where it no longer is)
            falls[lang] += -lang_fall if subtract else lang_fall
            self.pcount[pid] = 0              # every occurrence replaced (counted down nowhere else)
        if self.track_global:
            pid = pairmap_get(&self.ids, self._key(self.n_langs, x, y))
            if pid >= 0:
                self.pcount[pid] = 0
        if self.heaps:
            self._push_touched()
        self.touched.clear()
        return fall

    cdef inline void _fetch_ahead(self, int32_t s, int64_t lx, int64_t lxy, int64_t n_slots) noexcept:
        """Fetch the lines of slot ``s`` and, where the words' slots are bytes (else a guess:
        a fetch changes nothing), of the y after it and of the token after that."""
        prefetch(&self.slot[s])
        if s + lxy < n_slots:
            prefetch(&self.slot[s + lx])
            prefetch(&self.slot[s + lxy])

    cdef inline void _fetch_before(self, int32_t s) noexcept:
        """Slot ``s``'s line is here by now: fetch the token before it and the word's count."""
        cdef int32_t p = self.slot[s].prv
        if p != -1:
            prefetch(&self.slot[p])
        prefetch(&self.wcount[self.slot[s].word])

    cdef void _add_joined(self, int32_t x, int32_t y) noexcept:
        """The token x then y (its bytes, as ranks: x's, then y's)."""
        cdef int64_t i
        self.toff.push_back(self.tbytes.size())
        self.tlen.push_back(self.tlen[x] + self.tlen[y])
        self.memo.push_back(Memo(0, -1, -1, 0, -1, -1))
        for i in range(self.tlen[x]):
            self.tbytes.push_back(self.tbytes[self.toff[x] + i])
        for i in range(self.tlen[y]):
            self.tbytes.push_back(self.tbytes[self.toff[y] + i])

    cdef int64_t _merge_at(self, int32_t s, int32_t x, int32_t y, int32_t new_id, int lang) noexcept:
        """Replace (x, y) at slot ``s`` (of a word of ``lang``) if it is still there, settling
        the counts of the pairs around it; the word's count if it was (its fall in tokens), else 0.
        The ids of the pairs it changes come from the memo (one map probe per neighbour token
        per merge and language, not four per occurrence), made in the order ``_change`` makes
        them (so the same ids); with the all-languages counts on, through ``_change``."""
        cdef int32_t t, p, q, w, a, b
        cdef int64_t n
        cdef Memo* m
        if self.slot[s].sym != x:
            return 0
        t = self.slot[s].nxt
        if t == -1 or self.slot[t].sym != y:
            return 0
        w = self.slot[s].word
        n = self.wcount[w]
        p, q = self.slot[s].prv, self.slot[t].nxt
        if self.track_global:
            self._change_around(s, t, p, q, x, y, new_id, n, lang)
            return n
        if p != -1:
            a = self.slot[p].sym
            m = &self.memo[a]
            if m.lstamp != self.stamp:
                m.lstamp = self.stamp
                m.lold = self._pid_within(lang, a, x)
                m.lnew = self._pid_within(lang, a, new_id)
            self._add(m.lold, -n, p)
            self._add(m.lnew, n, p)
        if q != -1:
            b = self.slot[q].sym
            m = &self.memo[b]
            if m.rstamp != self.stamp:
                m.rstamp = self.stamp
                m.rold = self._pid_within(lang, y, b)
                m.rnew = self._pid_within(lang, new_id, b)
            self._add(m.rold, -n, s)
            self._add(m.rnew, n, s)
        self._relink(s, t, q, new_id)
        return n

    cdef inline void _relink(self, int32_t s, int32_t t, int32_t q, int32_t new_id) noexcept:
        self.slot[s].sym = new_id
        self.slot[t].sym = -1
        self.slot[s].nxt = q
        if q != -1:
            self.slot[q].prv = s

    cdef void _change_around(self, int32_t s, int32_t t, int32_t p, int32_t q, int32_t x, int32_t y,
                             int32_t new_id, int64_t n, int lang) noexcept:
        """``_merge_at``'s settling and relinking, pair by pair through ``_change``."""
        if p != -1:
            self._change(lang, self.slot[p].sym, x, -n, p)
            self._change(lang, self.slot[p].sym, new_id, n, p)
        if q != -1:
            self._change(lang, y, self.slot[q].sym, -n, s)
            self._change(lang, new_id, self.slot[q].sym, n, s)
        self._relink(s, t, q, new_id)

    def memory(self):
        """Bytes held now, by part (capacities, not sizes; the allocator's overheads aside);
        "pair_ids" and "list_entries": how many, not bytes. For profiling memory."""
        cdef size_t i, lists = 0, entries = 0, heaps = 0
        for i in range(self.occ.size()):
            lists += self.occ[i].capacity() * sizeof(int32_t)
            entries += self.occ[i].size()
        for i in range(self.heap.size()):
            heaps += self.heap[i].capacity() * sizeof(Entry)
        return {"slots": self.slot.capacity() * sizeof(WordSlot),
                "words": self.wcount.capacity() * sizeof(int64_t) + self.wlang.capacity() * sizeof(int32_t),
                "per_id": ((self.tlen.capacity() + self.toff.capacity()) * sizeof(int64_t) + self.tbytes.capacity()
                           + self.memo.capacity() * sizeof(Memo)),
                "pair_map": (<size_t>1 << self.ids.bits) * (sizeof(uint64_t) + sizeof(int32_t)),
                "pairs": (self.pcount.capacity() * sizeof(int64_t)
                          + (self.pleft.capacity() + self.pright.capacity() + self.plang.capacity()) * sizeof(int32_t)
                          + self.rose.capacity() + self.occ.capacity() * sizeof(vector[int32_t])),
                "lists": lists, "heaps": heaps + self.heap.capacity() * sizeof(vector[Entry]),
                "touched": self.touched.capacity() * sizeof(int32_t),
                "pair_ids": self.pcount.size(), "list_entries": entries}

    def count_of(self, int lang, int32_t x, int32_t y):
        """The count of (x, y) in ``lang`` (tests)."""
        cdef int32_t pid = pairmap_get(&self.ids, self._key(lang, x, y))
        return 0 if pid < 0 else self.pcount[pid]


# -- the choice of the language (variants/parity.py's choosers, on arrays, without numpy's per-call cost) --
def least_compressed(const double[::1] initial, ratio, const int64_t[::1] lengths, const uint8_t[::1] exhausted):
    """The base variant's language: with ``ratio`` (float64), the first with the least
    (initial / length) / ratio; without, the first with the most tokens; never an exhausted
    one (-1: all are). The same floats, in the same order, as numpy's over the arrays."""
    cdef Py_ssize_t lang, best = -1
    cdef double value, best_value = 0
    cdef const double[::1] ratios
    if ratio is None:
        for lang in range(lengths.shape[0]):
            if not exhausted[lang] and (best == -1 or lengths[lang] > lengths[best]):
                best = lang
        return best
    ratios = ratio
    for lang in range(lengths.shape[0]):
        if exhausted[lang]:
            continue
        value = (initial[lang] / <double>lengths[lang]) / ratios[lang]
        if best == -1 or value < best_value:
            best, best_value = lang, value
    return best


def least_compressed_with_room(const double[::1] initial, ratio, const int64_t[::1] lengths,
                               const uint8_t[::1] exhausted, const int64_t[::1] in_window, int64_t window_size,
                               double threshold):
    """The window variant's language (select_window's): by falling value (with ``ratio``,
    -((initial / length) / ratio); without, the length; exhausted: -inf), ties to the first,
    the first whose steps in the window over ``window_size`` are at most ``threshold``; none
    has room: the last in that order."""
    cdef Py_ssize_t lang, best = -1, last = -1
    cdef double value, best_value = 0, last_value = 0
    cdef const double[::1] ratios = ratio if ratio is not None else initial
    for lang in range(lengths.shape[0]):
        if exhausted[lang]:
            value = -INFINITY
        elif ratio is not None:
            value = -((initial[lang] / <double>lengths[lang]) / ratios[lang])
        else:
            value = <double>lengths[lang]
        if last == -1 or value <= last_value:
            last, last_value = lang, value
        if <double>in_window[lang] / <double>window_size <= threshold and (best == -1 or value > best_value):
            best, best_value = lang, value
    return best if best != -1 else last
