# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Encoding and decoding kernels: the pipeline from text to ids, and back.

Invariant: encoding gives what tiktoken's rule gives: a chunk that is itself a token becomes that
token; otherwise the adjacent pair with the lowest merge rank is merged, leftmost first on ties,
until no pair has a merge. This module keeps the order of the steps (``encode_piece``: split,
look up, else merge, then BoundlessBPE's runs); each step keeps its own invariant in a .pxd,
whose state ``MergeEncoder`` holds in that .pxd's struct:

* _merges.pxd: the merges as *symbols* numbered by rank (``Merges``);
* _bpe.pxd: the BPE of one chunk, by backtracking over the reachable tokens
  (``Reachable``), exactly what _replay.pxd's replayed merges give (merge recovery,
  ``recover_merges``, runs those);
* _whole.pxd: whole tokens by their bytes, tiktoken's first rule (``WholeTokens``);
* _cache.pxd: each thread's chunk table and long-chunk cache (``ShortChunkTable``,
  ``LongCache``; held by ``_ChunkCache``);
* _supermerges.pxd: BoundlessBPE's supermerges over runs of whole-token chunks (``Supermerges``);
* _batch.pxd: a list of str encoded on threads, block by block (``_Batch``);
* core/_text.pxd: str -> UTF-8 without the GIL, a block at a time; _lists.pxd: ids as
  lists of one shared Python int per id; _pages.pxd: the ids' pages, asked for ahead (``_Ids``);
  core/_hash.pxd: the tables' keys and hashes.

Text is split and looked up in batches of chunks: the first pass (_lookahead.pxd) scans, packs,
hashes and prefetches each chunk's entry, the second reads the entries, which by then are in the
CPU's cache. Text arrives as Python str and is read without the GIL, so batches run on threads in
parallel; ids leave as NumPy arrays, or as lists.
"""
import gc
import threading

cimport cython
import numpy as np
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.number cimport PyNumber_Index
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memchr, memcmp, memcpy, memset
from libcpp.string cimport string
from libcpp.vector cimport vector

from ._batch cimport (Blocks, BlockLog, blocks_first_bad, blocks_gather, blocks_log, blocks_note_bad,
                      blocks_plan, blocks_take)
from ._bpe cimport (Compat, Reachable, bpe_chunk, compat_free, compat_widen, compatible,
                    reachable_build, reachable_free, reachable_init, reachable_load)
from ._cache cimport (CACHE_MAX_BYTES, INLINE_IDS, SPILL_PAD, SPILLED, TABLE_MAX_BITS, ShortChunkTable,
                      LongCache, long_add, long_ask, long_find, long_free, table_emit_home, table_free,
                      table_grow_to, table_insert, table_lookup, table_start)
from ..core._hash cimport (PairSlot, slot_of, pair_of, pairtable_add, pairtable_free, pairtable_init, Packed,
                           PACKED_KEY_MASK, PACKED_MAX_BYTES, bytes_hash, pack_key, packed_hash, packed_slot)
from ._lists cimport IdInts, bpe_list_of_ids, bpe_lists_of_ids, ints_free, ints_make
from ._lookahead cimport BATCH, ask_home, find_homes, split_window_run
from ._merges cimport Merges, merges_add, merges_free, merges_init
from ._pages cimport populate_ahead
from ._ranks cimport SHORT_MERGE, Ranks, merge_scalar, merge_short, ranks_build, ranks_free
from ._replay cimport SHORT_CHUNK, replay_long, replay_short
from ._supermerges cimport Supermerges, end_run, merge_run, run_step
from ..core._text cimport (TextRef, Utf8Buffer, bpe_str_view, to_utf8, utf8_capacity, utf8_free,
                           utf8_room, utf8_trim)
from ._whole cimport WholeTokens, find_whole, seed_build, whole_build, whole_free
from ..core._cpu cimport prefetch
from ..pretokenize._scan cimport cuts_at_line_ends, next_cut
from ..pretokenize._split cimport Window, split_next, window_reset

cdef enum:
    SPLIT_NONE = -1            # pattern: no split, each piece between special tokens is one chunk
    MAX_CACHES = 64            # caches an encoder keeps between calls (one per thread in use)
    COMPAT_BITS = 16           # answers of ``compatible`` a thread keeps (512 KB) ...
    WIDE_COMPAT_BITS = 17      # ... or 1 MB when it lays out a word table's millions of distinct chunks
                               # (8 MB found more answers but missed the caches on every probe; 2 MB,
                               # then 1 MB took time off superword stage two's layouts:
                               # benchmarks/RESULTS.md, "Superword training's cost", round 3)
    BLOCK_CHARS = 1 << 16      # a long non-ASCII str is turned into UTF-8 and encoded this many
                               # characters at a time (or a little more: see next_cut)
    KEEP_IDS = 64 << 20        # bytes of id buffer a thread keeps between calls (scratch ids)
    OUT_LIST = 0
    OUT_ARRAY = 1
    OUT_COUNT = 2

# What the Python entry points return (encode_str, encode_strs): ids as lists, a uint32 array, counts.
OUTPUT_LIST, OUTPUT_ARRAY, OUTPUT_COUNT = OUT_LIST, OUT_ARRAY, OUT_COUNT


cdef class _Worker
cdef class _Batch
cdef class _Ids


@cython.final
cdef class SpecialSet:
    """Special tokens to find in UTF-8 text: the leftmost occurrence, and the longest token there
    (as the alternation of pretokenize.special_splitter, sorted longest first, finds it)."""
    cdef vector[string] tokens                  # longest first
    cdef vector[int32_t] ids
    cdef uint8_t starts[256]                    # 1 for a byte some token starts with
    cdef int only_first                         # the byte every token starts with, or -1
    cdef bint newline                           # some token holds a "\n" (see next_cut)

    def __cinit__(self, dict tokens):
        """tokens: {UTF-8 bytes: id}, at least one, none empty."""
        cdef int first = -1
        memset(self.starts, 0, 256)
        for token in sorted(tokens, key=len, reverse=True):
            if not token:
                raise ValueError("special tokens must not be empty")
            self.tokens.push_back(<string>token)
            self.ids.push_back(tokens[token])
            self.starts[token[0]] = 1
            first = token[0] if first in (-1, token[0]) else -2
            self.newline = self.newline or b"\n" in token
        self.only_first = first if first >= 0 else -1

    cdef bint find(self, const uint8_t* s, size_t n, size_t* at, size_t* which) noexcept nogil:
        cdef size_t i = 0, k, m
        cdef const void* p
        while i < n:
            if self.only_first >= 0:
                p = memchr(s + i, self.only_first, n - i)
                if p == NULL:
                    return False
                i = <const uint8_t*>p - s
            elif not self.starts[s[i]]:
                i += 1
                continue
            for k in range(self.tokens.size()):
                m = self.tokens[k].size()
                if m <= n - i and memcmp(s + i, self.tokens[k].data(), m) == 0:
                    at[0], which[0] = i, k
                    return True
            i += 1
        return False

    cdef size_t length(self, size_t k) noexcept nogil:
        return self.tokens[k].size()


@cython.final
cdef class MergeEncoder:
    """Merges (left id, right id) -> result id by rank, the 256 byte ids, the vocabulary's bytes."""
    cdef Merges merges                          # the merges, by symbol (_merges.pxd)
    cdef Reachable bpe                          # backtracking's reachable symbols (_bpe.pxd)
    cdef Ranks ranks                            # short chunks' merging tables (_ranks.pxd)
    cdef WholeTokens tokens                     # tokens by their bytes, and the seed (_whole.pxd)
    # Decoding, and one Python int per id for lists of ids.
    cdef vector[string] token_bytes             # id -> bytes (special tokens too)
    cdef vector[uint8_t] defined                # id -> 1 if some token has this id
    cdef IdInts ints                            # made on the first list asked for (_lists.pxd)
    # Pre-tokenization: a named pattern's scanner, SPLIT_NONE, or 0 (the caller splits).
    cdef int pattern
    cdef const uint8_t[::1] cls
    cdef const uint8_t[::1] fold
    cdef list caches                            # chunk caches not lent out (see _ChunkCache)
    # BoundlessBPE (set_supermerges): supermerges join whole-token chunks in runs (_supermerges.pxd).
    cdef Supermerges supers
    cdef readonly bint boundless

    def __cinit__(self, const int32_t[:, ::1] merges, const int32_t[::1] result_ids,
                  const int32_t[::1] byte_ids, list vocab, dict special_tokens, tuple reachable=None):
        """vocab[id] is the token's bytes or None; special_tokens maps bytes -> id; reachable,
        if given, is what ``reachable_tables`` gave for these merges (prebuilt.py)."""
        cdef Py_ssize_t n = merges.shape[0], m, i
        cdef int32_t left, right, largest = 0
        if result_ids.shape[0] != n or byte_ids.shape[0] != 256:
            raise ValueError("MergeEncoder needs one result id per merge and 256 byte ids")
        if merges_init(&self.merges, n, &byte_ids[0]) != 0 or reachable_init(&self.bpe) != 0:
            raise MemoryError()
        for i in range(256):
            largest = max(largest, byte_ids[i])
        for m in range(n):
            largest = max(largest, result_ids[m])
        cdef vector[int32_t] symbol_of             # token id -> its symbol, -1 while unmade
        symbol_of.assign(<size_t>largest + 1, -1)
        for i in range(256):
            if byte_ids[i] >= 0:
                symbol_of[byte_ids[i]] = <int32_t>i
        for m in range(n):
            left = symbol_of[merges[m, 0]] if 0 <= merges[m, 0] <= largest else -1
            right = symbol_of[merges[m, 1]] if 0 <= merges[m, 1] <= largest else -1
            if left < 0 or right < 0 or result_ids[m] < 0:
                raise ValueError(f"merge {m} joins ids that no earlier merge or byte makes")
            merges_add(&self.merges, left, right, result_ids[m])
            symbol_of[result_ids[m]] = <int32_t>(256 + m)
        if reachable is None:
            reachable_build(&self.bpe, &self.merges)
        else:
            reachable_load(&self.bpe, 256 + n, reachable[0], reachable[1], reachable[2], reachable[3],
                           reachable[4], reachable[5])
        ranks_build(&self.ranks, &self.merges)
        whole_build(&self.tokens, vocab)
        self.build_decoding(vocab, special_tokens)
        self.pattern = 0
        self.caches = []
        self.tokens.table_max_bits = TABLE_MAX_BITS

    def reachable_tables(self) -> tuple:
        """The reachable symbols and their trie as arrays, for ``MergeEncoder(..., reachable=)``
        to read back instead of building them (prebuilt.py keeps them between processes)."""
        cdef size_t slots = <size_t>1 << self.bpe.trie.bits
        trie = np.empty(slots * sizeof(PairSlot), np.uint8)
        cdef uint8_t[::1] trie_view = trie
        memcpy(&trie_view[0], self.bpe.trie.slots, slots * sizeof(PairSlot))
        return (np.asarray(<uint8_t[:self.bpe.reachable.size()]>self.bpe.reachable.data()).copy(),
                np.asarray(<int32_t[:self.bpe.shorter.size()]>self.bpe.shorter.data()).copy(),
                np.asarray(<int32_t[:self.bpe.level2.size()]>self.bpe.level2.data()).copy(),
                np.asarray(<int32_t[:self.bpe.node_symbol.size()]>self.bpe.node_symbol.data()).copy(),
                trie, self.bpe.trie.bits)

    def __dealloc__(self):
        merges_free(&self.merges)
        reachable_free(&self.bpe)
        ranks_free(&self.ranks)
        pairtable_free(&self.supers.pairs)
        whole_free(&self.tokens)
        ints_free(&self.ints)

    # -- set-up ------------------------------------------------------------------------------
    cdef int build_decoding(self, list vocab, dict special_tokens) except -1:
        size = max([len(vocab)] + [i + 1 for i in special_tokens.values()])
        self.token_bytes.resize(size)
        self.defined.resize(size, 0)
        cdef Py_ssize_t k, n = len(vocab)
        cdef bytes token
        for k in range(n):                  # (a C index and one copy per token: 200k of them for o200k)
            token = vocab[k]
            if token is not None:
                self.token_bytes[k].assign(PyBytes_AS_STRING(token), PyBytes_GET_SIZE(token))
                self.defined[k] = 1
        for special, i in special_tokens.items():
            self.token_bytes[i] = <string>special
            self.defined[i] = 1
        return 0

    cdef int build_seed(self) except -1:
        """The chunk tables' seed (_whole.pxd), made when a first table is."""
        return seed_build(&self.tokens, &self.token_bytes)

    cdef int make_ints(self) except -1:
        """One Python int per id, for lists of ids (made on the first list asked for)."""
        return ints_make(&self.ints, self.token_bytes.size())

    def set_scanner(self, int pattern, const uint8_t[::1] classes, const uint8_t[::1] fold):
        """Split text with a named pattern's native scanner (see _scan.pxd)."""
        self.pattern, self.cls, self.fold = pattern, classes, fold

    def clear_caches(self):
        """Drop the chunk caches kept between calls (their memory with them)."""
        self.caches.clear()

    def cache_stats(self):
        """For tests and benchmarks: one dict per chunk cache kept between calls, about its
        chunk table: ``bits`` (2**bits entries), ``used`` entries (``seeds`` of them tokens),
        ``spilled`` (entries whose ids are in the spill), ``resets`` (starts afresh at the
        limit ``max_bits``), ``home`` (entries in their key's home cache line) and ``long``
        (chunks over 15 bytes in the other cache)."""
        cdef _ChunkCache c
        cdef ShortChunkTable* table
        cdef size_t i, home, spilled
        out = []
        for c in self.caches:
            table = &c.chunks
            home = spilled = 0
            for i in range((<size_t>1 << table.bits) if table.entries != NULL else 0):
                if table.entries[i].k1 != 0:
                    spilled += (table.entries[i].k1 >> 60) == SPILLED
                    home += packed_slot(packed_hash(table.entries[i].k0,
                                                    table.entries[i].k1 & PACKED_KEY_MASK),
                                        table.bits) == (i & ~(<size_t>1))
            out.append({"bits": table.bits, "used": table.used, "seeds": table.seed_used,
                        "spilled": spilled, "resets": table.resets, "max_bits": table.max_bits,
                        "home": home, "long": c.longer.size})
        return out

    def set_cache_limit(self, int bits):
        """For tests: chunk tables made from now on grow to 2**bits entries at most (at least
        twice the seed), then start afresh."""
        if self.tokens.seed == NULL:
            self.build_seed()
        self.tokens.table_max_bits = max(bits, self.tokens.seed_bits + 1)

    def set_no_split(self):
        """No pre-tokenization: each piece of text between special tokens is one chunk."""
        self.pattern = SPLIT_NONE

    def set_supermerges(self, const int32_t[:, ::1] pairs, const int32_t[::1] ids, list superwords):
        """BoundlessBPE: supermerge k joins the tokens ``pairs[k]`` (whole chunks, or superwords
        made earlier) into ``ids[k]``, whose bytes are ``superwords[k]``. Once set, the chunks of
        each piece of text are encoded as before, then every maximal run of chunks that are each
        one *unit* (a token that is not a superword and that some supermerge joins) is merged by
        the supermerges, lowest rank first (``merge_run``). Call it once, before encoding."""
        cdef Py_ssize_t n = pairs.shape[0], k, size
        if ids.shape[0] != n or len(superwords) != n:
            raise ValueError("set_supermerges needs one id and one token per supermerge")
        if self.boundless or self.ints.ints != NULL:
            raise ValueError("set_supermerges is called once, before any encoding")
        if n == 0:
            return
        if pairtable_init(&self.supers.pairs, n) != 0:
            raise MemoryError()
        size = max(<Py_ssize_t>self.token_bytes.size(), max(ids) + 1)
        self.token_bytes.resize(size)
        self.defined.resize(size, 0)
        self.supers.unit.assign(size, 0)
        for k in range(n):
            if pairs[k, 0] < 0 or pairs[k, 1] < 0 or pairs[k, 0] >= size or pairs[k, 1] >= size:
                raise ValueError(f"supermerge {k} joins ids out of range")
            if pairtable_add(&self.supers.pairs, pair_of(pairs[k, 0], pairs[k, 1]), <int32_t>k, ids[k]) == NULL:
                raise MemoryError()
            self.token_bytes[ids[k]] = <string>superwords[k]
            self.defined[ids[k]] = 1
            self.supers.unit[pairs[k, 0]] = self.supers.unit[pairs[k, 1]] = 1
        for k in range(n):
            self.supers.unit[ids[k]] = 0        # a superword is made in a run, never scanned as a chunk
        self.boundless = True

    def merge_run_list(self, list ids):
        """The supermerges applied to one run of unit ids (a list), as the encoder does it."""
        cdef vector[uint32_t] run
        cdef size_t m
        for i in ids:
            run.push_back(<uint32_t>i)
        m = merge_run(&self.supers, run.data(), run.size()) if self.boundless else run.size()
        return [run[i] for i in range(m)]

    def unit_ids(self):
        """The ids that make runs (see set_supermerges), as a set."""
        return {i for i in range(self.supers.unit.size()) if self.supers.unit[i]}

    # -- chunks ------------------------------------------------------------------------------
    cdef void encode_chunk(self, const uint8_t* s, size_t n, const uint8_t* end, _Worker w) noexcept nogil:
        """Emit the ids of one chunk (n >= 1 bytes; the buffer it lies in ends at ``end``)."""
        cdef uint64_t k0, k1
        if n <= PACKED_MAX_BYTES:
            pack_key(s, n, end, &k0, &k1)
            self.encode_short(s, n, k0, k1, packed_hash(k0, k1), w)
        else:
            self.encode_long(s, n, bytes_hash(s, n, end), w)

    cdef void encode_short(self, const uint8_t* s, size_t n, uint64_t k0, uint64_t k1, uint64_t h,
                           _Worker w) noexcept nogil:
        """Emit the ids of a chunk of at most 15 bytes, whose packed key is (k0, k1) and hash h:
        from the chunk table, or merged and then put there (the table holds every token, so a
        chunk it has not seen is no token)."""
        cdef const Packed* found = table_lookup(&w.cache.chunks, k0, k1, h)
        if found != NULL:
            w.emit_packed(found)
            return
        cdef size_t k = self.merge_chunk(s, n, w)
        w.emit_symbols(self.merges.ext.data(), k)
        table_insert(&w.cache.chunks, k0, k1, h, w.syms.data(), k, self.merges.ext.data())

    cdef void encode_long(self, const uint8_t* s, size_t n, uint64_t h, _Worker w) noexcept nogil:
        """Emit the ids of a chunk over 15 bytes whose bytes_hash is h: from the cache (chunks met
        before, whole tokens too: one probe for both), else a whole token (then cached), else
        merged now (and cached)."""
        cdef int32_t found, first = 0
        if n <= CACHE_MAX_BYTES and w.cached(h, s, n):
            return
        found = find_whole(&self.tokens, h, s, n)
        if found >= 0:
            w.emit(found)
            if n <= CACHE_MAX_BYTES:            # (symbol 0 of the one-symbol "ext" &found: the id)
                long_add(&w.cache.longer, h, s, n, &first, 1, &found)
            return
        cdef size_t k = self.merge_chunk(s, n, w)
        w.emit_symbols(self.merges.ext.data(), k)
        if n <= CACHE_MAX_BYTES:
            w.remember(h, s, n, k)

    cdef size_t merge_chunk(self, const uint8_t* s, size_t n, _Worker w) noexcept nogil:
        """BPE of a chunk into w.syms; returns the number of symbols. Up to ranks.longest bytes (64 or
        128 with AVX-512, else 48) by replaying the merges over small tables (_ranks.pxd),
        longer ones by backtracking (_bpe.pxd); both give exactly BPE's symbols. (The tables
        are of the merges made in __cinit__; recover_merges adds merges later, and replays them
        itself.)"""
        if n <= self.ranks.longest and self.ranks.symbols == self.merges.left.size():
            if w.syms.size() < n:
                w.syms.resize(n)
            return merge_short(&self.ranks, s, n, w.syms.data())
        return bpe_chunk(&self.merges, &self.bpe, s, n, &w.syms, &w.alive, &w.cache.compat)

    cdef void encode_piece(self, const uint8_t* s, size_t n, const uint8_t* end, _Worker w) noexcept nogil:
        """Emit the ids of text that holds no special token to encode: split, then each chunk.

        BATCH chunks at a time, in two passes. The first splits them off (split_next), packs each
        short one's key, hashes it and asks for its chunk table entry (a long one: its slot of the
        long-chunk cache, then, once the pass is done, its stored ids); the second looks them up.
        The entries, which would each be a wait for memory, arrive while the splitter runs. Runs
        of chunks found in their home cache line (two entries) are emitted by table_emit_home,
        whose loop keeps its state in registers (benchmarks/RESULTS.md, "Encode once (5)"; room
        for the batch's ids is reserved first); everything else is taken here one chunk at a time,
        through encode_short or encode_long. A BoundlessBPE tokenizer then merges runs of chunks
        that are one unit each (run_step), chunk by chunk in the second pass, so that the
        splitter keeps one call site and stays inlined."""
        cdef size_t start[BATCH]
        cdef uint32_t length[BATCH]
        cdef uint64_t key0[BATCH]
        cdef uint64_t key1[BATCH]
        cdef uint64_t hashes[BATCH]               # a long chunk's bytes_hash
        cdef const Packed* homes[BATCH]           # a short chunk's home line in the chunk table
        cdef uint16_t longs[BATCH]                # the long chunks among them
        cdef size_t i = 0, j, m, q, first, k, n_long
        cdef uint64_t count
        cdef int pattern = self.pattern, bits
        cdef const uint8_t* cls
        cdef const uint8_t* fold
        cdef const Packed* table
        cdef const Packed* x
        cdef bint counting = w.counting, room, fast, runs = self.boundless, hooked = self.boundless or w.mark_pieces
        cdef size_t before, run_start = 0, run_len = 0
        cdef Window window
        if pattern == SPLIT_NONE:
            if n:
                self.encode_chunk(s, n, end, w)
            return
        cls, fold = &self.cls[0], &self.fold[0]
        window_reset(&window)
        while i < n:
            table, bits, first, m, n_long = w.cache.chunks.entries, w.cache.chunks.bits, i, 0, 0
            while m < BATCH and i < n:
                if window.ends:                 # the chunks the window vouched for, in a loop of their own
                    m = split_window_run(&window, s, end, i, m, table, bits, start, length, key0, key1,
                                         homes, &i)
                    if m == BATCH or i >= n:
                        break
                j = split_next(&window, pattern, s, n, i, cls, fold)
                start[m], length[m] = i, <uint32_t>(j - i)
                if j - i <= PACKED_MAX_BYTES:
                    pack_key(s + i, j - i, end, &key0[m], &key1[m])
                    homes[m] = ask_home(table, bits, key0[m], key1[m])
                else:
                    key0[m], key1[m] = 1, 0     # a long chunk: matches no entry (table_emit_home)
                    hashes[m] = bytes_hash(s + i, j - i, end)
                    longs[n_long] = <uint16_t>m
                    n_long += 1
                    if w.cache.longer.slots != NULL:    # (the whole-token table: only on a miss there)
                        prefetch(&w.cache.longer.slots[slot_of(hashes[m], w.cache.longer.bits)])
                m += 1
                i = j
            for k in range(n_long):             # their slots' lines have come meanwhile: now their
                long_ask(&w.cache.longer, hashes[longs[k]])     # stored ids, while the rest is looked up
            # At most one id per byte: with room for the batch's bytes and SPILL_PAD, a chunk's
            # ids can be stored 4 or SPILL_PAD at a time (from w.ids.size, then advanced by their
            # count). Merging runs only takes ids away.
            room = not counting and w.ids.reserve(i - first + SPILL_PAD) == 0
            fast = room and not hooked
            q = 0
            while q < m:
                if fast:        # the common case: a run of chunks found at home, ids inline
                    q = table_emit_home(homes, w.cache.chunks.spill.data(), key0, key1, q, m,
                                        w.ids.data, &w.ids.size)
                    if q == m:
                        break
                before = w.ids.size
                if key1[q] == 0:
                    self.encode_long(s + start[q], length[q], hashes[q], w)
                else:
                    x = homes[q]                # the key's home line: two entries, no branch
                    x += <size_t>((x.k0 != key0[q]) | ((x.k1 & PACKED_KEY_MASK) != key1[q]))
                    count = x.k1 >> 60
                    if x.k0 == key0[q] and (x.k1 & PACKED_KEY_MASK) == key1[q] and count <= INLINE_IDS:
                        if counting:
                            w.count += count
                        elif room:
                            memcpy(w.ids.data + w.ids.size, x.ids, INLINE_IDS * sizeof(uint32_t))
                            w.ids.size += count
                        else:
                            w.ids.extend(x.ids, count)
                    else:
                        self.encode_short(s + start[q], length[q], key0[q], key1[q], packed_hash(key0[q], key1[q]), w)
                        if w.cache.chunks.entries != table or w.cache.chunks.bits != bits:  # grown or afresh
                            table, bits = w.cache.chunks.entries, w.cache.chunks.bits
                            find_homes(table, bits, key0, key1, homes, q + 1, m)
                if hooked:      # (one branch a chunk for both)
                    if runs:    # BoundlessBPE: runs of chunks that are one unit each (run_step)
                        run_len = run_step(&self.supers, w.ids.data, &w.ids.size, before, &run_start, run_len)
                    else:
                        w.piece_at.push_back(before)
                q += 1
        if runs:
            end_run(&self.supers, w.ids.data, &w.ids.size, run_start, run_len)

    cdef void encode_utf8(self, const uint8_t* s, size_t n, _Worker w, SpecialSet allowed) noexcept nogil:
        """Emit the ids of UTF-8 text, allowed special tokens as their ids."""
        cdef size_t start = 0, at, which
        while allowed is not None and allowed.find(s + start, n - start, &at, &which):
            self.encode_piece(s + start, at, s + n, w)
            w.emit(allowed.ids[which])
            start += at + allowed.length(which)
        self.encode_piece(s + start, n - start, s + n, w)

    # -- Python entry points -----------------------------------------------------------------
    def encode_chunk_bytes(self, const unsigned char[::1] data):
        """The ids of one chunk (UTF-8 bytes), as a list."""
        cdef _Worker w = _Worker(self, False)
        if data.shape[0]:
            with nogil:
                self.encode_chunk(&data[0], data.shape[0], &data[0] + data.shape[0], w)
        w.release()
        return [w.ids.data[i] for i in range(w.ids.size)]

    @property
    def merge_longest(self) -> int:
        """The longest chunk (in bytes) merged over the small tables, longer ones are backtracked:
        where the CPU has AVX-512 (merge_vector) 64, or 128 for a vocabulary of 150,000 tokens or
        more, else 48 (_ranks.pxd)."""
        return self.ranks.longest

    def bpe_chunks(self, const unsigned char[::1] data, const int64_t[::1] offsets, str method="auto"):
        """The BPE of each chunk (chunk i is data[offsets[i]:offsets[i + 1]], none empty) with no
        cache: a chunk that is a token is not looked up, it is merged like any other. For tests and
        benchmarks/bench_new_chunks.py, to hold the two methods to each other and time them alone.
        ``method``: "auto" (as encoding does: merged up to ``merge_longest`` bytes, backtracked
        beyond), "merge" (merge_short: merge_vector on a CPU with AVX-512, else merge_scalar; chunks
        over ``merge_longest`` bytes are refused), "merge_scalar" (never merge_vector; chunks over 48
        bytes refused) or "backtrack". Returns (ids as uint32, each chunk's id count as int64)."""
        cdef Py_ssize_t i, n = offsets.shape[0] - 1
        cdef size_t j, k, at = 0, length
        cdef int how = {"auto": 0, "merge": 1, "backtrack": 2, "merge_scalar": 3}.get(method, -1)
        cdef size_t limit = self.ranks.longest if how == 1 else SHORT_MERGE
        if how < 0:
            raise ValueError(f"method must be auto, merge, merge_scalar or backtrack, not {method!r}")
        if n < 0 or (n and (offsets[0] < 0 or offsets[n] > data.shape[0])):
            raise ValueError("bpe_chunks needs offsets inside data")
        for i in range(n):
            if offsets[i + 1] <= offsets[i]:
                raise ValueError(f"chunk {i} is empty or its offsets decrease")
            if how in (1, 3) and offsets[i + 1] - offsets[i] > limit:
                raise ValueError(f"chunk {i} is over {limit} bytes: {method} does not take it")
        if how in (1, 3) and self.ranks.symbols != self.merges.left.size():
            raise ValueError("this encoder has no merging tables (2**21 symbols or more)")
        ids = np.empty(offsets[n] - offsets[0] if n else 0, np.uint32)
        counts = np.empty(n, np.int64)
        cdef uint32_t[::1] out = ids
        cdef int64_t[::1] count = counts
        cdef _Worker w = _Worker(self, False)
        with nogil:
            for i in range(n):
                length = <size_t>(offsets[i + 1] - offsets[i])
                if how == 0:
                    k = self.merge_chunk(&data[offsets[i]], length, w)
                else:
                    if w.syms.size() < length:
                        w.syms.resize(length)
                    if how == 1:
                        k = merge_short(&self.ranks, &data[offsets[i]], length, w.syms.data())
                    elif how == 3:
                        k = merge_scalar(&self.ranks, &data[offsets[i]], length, w.syms.data())
                    else:
                        k = bpe_chunk(&self.merges, &self.bpe, &data[offsets[i]], length, &w.syms, &w.alive,
                                      &w.cache.compat)
                for j in range(k):
                    out[at + j] = <uint32_t>self.merges.ext[w.syms[j]]
                at += k
                count[i] = <int64_t>k
        w.release()
        return ids[:at], counts

    def lay_out_chunks(self, const unsigned char[::1] data, const int64_t[::1] offsets,
                       const int64_t[::1] positions, int32_t[::1] slots, int table_bits=0):
        """Encode chunks of a word table, each whole (chunk i is data[offsets[i]:offsets[i + 1]]),
        straight into the training kernel's layout from ``slots[positions[i]]``: the id of each
        token where it starts, its tail mark -(id + 2) where a longer one ends, and -1 between
        (see _kernel.pyx). Threads may lay out disjoint sets of chunks at once. ``table_bits``:
        the chunk table the whole job is expected to need (2**bits entries; up to its limit),
        made at once."""
        cdef Py_ssize_t i, n = offsets.shape[0] - 1
        cdef int grown
        if positions.shape[0] != n or (n and (offsets[0] < 0 or offsets[n] > data.shape[0])):
            raise ValueError("lay_out_chunks needs a position for every chunk, and chunks inside data")
        for i in range(n):
            if positions[i] < 0 or positions[i] + offsets[i + 1] - offsets[i] > slots.shape[0]:
                raise ValueError(f"chunk {i} does not fit in the slots at position {positions[i]}")
        if n == 0:
            return
        cdef _Worker w = _Worker(self, False)
        try:
            table_bits = min(table_bits, w.cache.chunks.max_bits)
            if table_bits > w.cache.chunks.bits:
                with nogil:                     # tens of MB to zero: the other threads go on
                    grown = table_grow_to(&w.cache.chunks, table_bits)
                if grown != 0:
                    raise MemoryError()
            compat_widen(&w.cache.compat, WIDE_COMPAT_BITS)
            with nogil:
                for i in range(n):
                    if offsets[i + 1] > offsets[i]:
                        self.encode_whole(&data[0] + offsets[i], offsets[i + 1] - offsets[i],
                                          &data[0] + data.shape[0], w)
                        self.lay_out(w.ids, &slots[positions[i]])
        finally:
            w.release()

    cdef void encode_whole(self, const uint8_t* s, size_t n, const uint8_t* end, _Worker w) noexcept nogil:
        """The ids of a chunk encoded whole by the merges, into w.ids (emptied first), by way of
        the pieces this encoder's pattern splits it into. A superword chunk is many of them, and
        most are words met before: encoded from the chunk table (batched and prefetched, as in
        any encoding), not merged. Their encodings put end to end are the whole's exactly when
        every token meets the next compatibly (_bpe.pxd: the one sequence of reachable
        tokens whose adjacent pairs are all compatible); within a piece they do, so only the
        pieces' joins are checked, and where one is not compatible only the pieces around it
        are merged again (``rejoin``), not the whole chunk."""
        cdef size_t k
        w.ids.size = 0
        if self.pattern != SPLIT_NONE and self.pattern != 0 and not self.boundless:
            w.piece_at.clear()
            w.mark_pieces = True
            self.encode_piece(s, n, end, w)
            w.mark_pieces = False
            for k in range(1, w.piece_at.size()):
                if not compatible(&self.merges, <int32_t>w.ids.data[w.piece_at[k] - 1],
                                  <int32_t>w.ids.data[w.piece_at[k]], w.cache.compat.known, w.cache.compat.bits):
                    self.rejoin(s, n, end, w)
                    return
            return
        self.encode_chunk(s, n, end, w)

    cdef void rejoin(self, const uint8_t* s, size_t n, const uint8_t* end, _Worker w) noexcept nogil:
        """w.ids, the pieces' encodings end to end (w.piece_at: where each starts), made the
        whole's. The pieces are taken in order into spans, each encoded exactly: a piece
        whose first token meets the last span's last compatibly starts a span of its own;
        else the two spans are one, merged again from their bytes, and the new span's first
        token is checked against the span before it in turn. Every span is exact and every
        join compatible, so the whole is (encode_whole). A join that is not compatible is
        rare and the spans it makes short: merging them again costs little, where merging a
        chunk of hundreds of bytes whole cost the most of a superword layout."""
        cdef vector[uint32_t]* out = &w.joined
        cdef vector[size_t]* span_byte = &w.span_byte
        cdef vector[size_t]* span_out = &w.span_out
        cdef size_t n_pieces = w.piece_at.size(), k, i, m, stop, byte = 0, b0, o0
        cdef uint32_t token
        out.clear()
        span_byte.clear()
        span_out.clear()
        for k in range(n_pieces):
            b0, o0 = byte, out.size()
            stop = w.piece_at[k + 1] if k + 1 < n_pieces else w.ids.size
            for i in range(w.piece_at[k], stop):
                token = w.ids.data[i]
                out.push_back(token)
                byte += self.token_bytes[token].size()
            while span_out.size() and not compatible(&self.merges, <int32_t>out[0][o0 - 1], <int32_t>out[0][o0],
                                                     w.cache.compat.known, w.cache.compat.bits):
                b0, o0 = span_byte.back(), span_out.back()
                span_byte.pop_back()
                span_out.pop_back()
                out.resize(o0)
                m = self.merge_chunk(s + b0, byte - b0, w)
                for i in range(m):
                    out.push_back(<uint32_t>self.merges.ext[w.syms[i]])
            span_byte.push_back(b0)
            span_out.push_back(o0)
        w.ids.size = 0
        if span_out.size() == 1:        # one span, the whole chunk: it may be a token (tiktoken's rule)
            self.encode_chunk(s, n, end, w)
        else:
            w.ids.extend(out.data(), out.size())

    cdef inline void lay_out(self, _Ids ids, int32_t* slot) noexcept nogil:
        """The ids, one token after another from ``slot``: id, -1 inside, tail mark."""
        cdef size_t k, length
        cdef int32_t token
        for k in range(ids.size):
            token = <int32_t>ids.data[k]
            length = self.token_bytes[token].size()
            slot[0] = token
            if length > 1:
                memset(slot + 1, 0xFF, (length - 2) * sizeof(int32_t))      # -1, every byte all ones
                slot[length - 1] = -token - 2
            slot += length

    def encode_str(self, str text, int output, SpecialSet allowed, SpecialSet disallowed):
        """Encode one str: output OUT_LIST (a list), OUT_ARRAY (uint32 array) or OUT_COUNT (an
        int). Returns (result, 0), or (None, 1) if the text holds a special token of
        ``disallowed`` (then nothing is encoded)."""
        cdef TextRef ref
        cdef _Worker w = _Worker(self, output == OUT_COUNT)
        cdef bint bad
        self.check_ready()
        bpe_str_view(text, &ref.data, &ref.length, &ref.kind)
        if output != OUT_COUNT:     # over 2 bytes a token on ASCII text, long-tailed text too; a
            # token a character at most outside ASCII, but for rare ones. Room that is never
            # written costs no page; a reservation too small costs a copy of the ids to fresh
            # pages (benchmarks/RESULTS.md, "Encode once (6)": one id per 3 bytes was too few).
            # On ordinary pages, not huge ones (_Ids.grow says why).
            w.ids.grow(<size_t>ref.length // (2 if ref.kind == 0 else 1) + 64)
        with nogil:
            bad = w.encode_ref(&ref, allowed, disallowed)
        w.release()
        if bad:
            return None, 1
        if output == OUT_COUNT:
            return (w.count if w.counting else w.ids.size), 0
        return (w.as_list() if output == OUT_LIST else w.array()), 0

    def encode_strs(self, texts, int workers, int output, SpecialSet allowed, SpecialSet disallowed):
        """Encode a list of str on ``workers`` threads. output OUT_LIST: a list of lists;
        OUT_ARRAY: (ids uint32, offsets int64 with len(texts) + 1 entries); OUT_COUNT: an int64
        array of counts. Returns (result, -1), or (None, i) where texts[i] is the first text
        holding a special token of ``disallowed`` (then no result)."""
        self.check_ready()
        batch = _Batch(self, texts, output == OUT_COUNT, allowed, disallowed, workers)
        try:
            bad = batch.run()
            if bad >= 0:
                return None, bad
            if output == OUT_COUNT:
                return batch.counts_array(), -1
            ids, offsets = batch.flat()
        finally:
            batch.release()                 # after flat(), which reads the workers' ids
        if output == OUT_ARRAY:
            return (ids, offsets), -1
        collecting = gc.isenabled()             # lists of ints hold no cycles: a collection per
        gc.disable()                            # 700 new lists would only slow this down
        try:
            return self.lists(ids, offsets), -1
        finally:
            if collecting:
                gc.enable()

    def lists(self, const uint32_t[::1] ids, const int64_t[::1] offsets):
        """ids[offsets[i]:offsets[i + 1]] as a list, for each i."""
        cdef Py_ssize_t n = offsets.shape[0] - 1
        cdef const uint32_t* base = &ids[0] if ids.shape[0] else NULL
        if n <= 0:
            return []
        if offsets[0] < 0 or offsets[n] > ids.shape[0]:
            raise ValueError("lists needs offsets inside ids")
        if self.ints.ints == NULL:
            self.make_ints()
        return bpe_lists_of_ids(base, &offsets[0], n, self.ints.ints, self.ints.n)

    cdef int check_ready(self) except -1:
        if self.pattern == 0:
            raise ValueError("native encoding of str needs a named pattern's scanner (set_scanner) or set_no_split")
        return 0

    def decode_bytes(self, ids):
        """The bytes of a sequence of token ids; ValueError names the first id out of range,
        TypeError the first that is no integer (a float such as 1.7 or 2.0 is refused, not
        truncated). A NumPy integer array is read without a Python object per id."""
        cdef string out
        cdef int64_t token
        cdef int64_t size = self.token_bytes.size()
        cdef Py_ssize_t k = 0
        cdef const int64_t[::1] array
        if isinstance(ids, np.ndarray) and ids.dtype.kind in "iu" and ids.ndim == 1:
            # (uint64 ids past int64's range are clipped to `size`: out of range all the same)
            array = np.ascontiguousarray(np.minimum(ids, size) if ids.dtype == np.uint64 else ids, dtype=np.int64)
            for k in range(array.shape[0]):
                token = array[k]
                if token < 0 or token >= size or not self.defined[token]:
                    raise ValueError(f"token id {ids[k]} (position {k}) is not in the vocabulary (ids 0..{size - 1})")
                out.append(self.token_bytes[token])
            return <bytes>out
        for k, t in enumerate(ids):
            if type(t) is not int:
                try:
                    t = PyNumber_Index(t)       # ints of any kind (NumPy's too); no floats
                except TypeError:
                    raise TypeError(f"token ids must be integers; position {k} holds {type(t).__name__} "
                                    f"{t!r}") from None
            try:
                token = t
            except OverflowError:
                token = -1                      # far out of range: reported below like any other
            if token < 0 or token >= size or not self.defined[token]:
                raise ValueError(f"token id {t} (position {k}) is not in the vocabulary (ids 0..{size - 1})")
            out.append(self.token_bytes[token])
        return <bytes>out


@cython.final
cdef class _Ids:
    """A growable uint32 buffer of token ids that NumPy can take over without a copy (buffer
    protocol). Room is reserved ahead (pages the ids never reach are never touched), and once it
    is exported nothing is added. Out of memory, ids are dropped and ``failed`` is set, for the
    caller to raise MemoryError once it holds the GIL again."""
    cdef uint32_t* data
    cdef size_t size, capacity
    cdef size_t ready                           # ids up to here have their pages (populate_ahead)
    cdef bint failed
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]

    def __dealloc__(self):
        free(self.data)

    cdef int reserve(self, size_t n) noexcept nogil:
        """Room for n more ids; -1 if out of memory (the ids are then lost: ``failed``)."""
        if self.grow(n) != 0:
            self.failed = True
            return -1
        if self.size + n > self.ready:
            self.ready = populate_ahead(self.data, self.size, self.size + n, self.capacity)
        return 0

    cdef int grow(self, size_t n) noexcept nogil:
        """Room for n more ids; -1 if out of memory, nothing lost (for a guess at the room a str
        needs, which may be refused: the ids then grow as they come). On ordinary pages, unlike
        the tables (big_alloc): the ids are written once, in order, so huge pages save few TLB
        misses, and a fresh huge page can cost far more than its 512 small ones (a virtual
        machine that gave the host back its free memory fills all 2 MB at the first touch).
        With ids on huge pages from 4 MB, a pass over many scripts in pieces of 1 Mi characters
        spent several times the system time (benchmarks/RESULTS.md, "Encode once (7)")."""
        cdef uint32_t* bigger
        if self.size + n <= self.capacity:
            return 0
        n = max(self.size + n, 2 * self.capacity)
        if self.data == NULL:
            bigger = <uint32_t*>malloc(n * sizeof(uint32_t))
        else:
            bigger = <uint32_t*>realloc(self.data, n * sizeof(uint32_t))
        if bigger == NULL:
            return -1
        if bigger != self.data:
            self.ready = self.size
        self.data, self.capacity = bigger, n
        return 0

    cdef inline void push(self, uint32_t token) noexcept nogil:
        if self.size == self.capacity and self.reserve(1) != 0:
            return
        self.data[self.size] = token
        self.size += 1

    cdef inline void extend(self, const uint32_t* tokens, size_t k) noexcept nogil:
        if self.size + k > self.capacity and self.reserve(k) != 0:
            return
        memcpy(self.data + self.size, tokens, k * sizeof(uint32_t))
        self.size += k

    def __getbuffer__(self, Py_buffer* view, int flags):
        cdef uint32_t* fitted
        if self.capacity > self.size + self.size // 4 + 1024:   # give back the unused room
            fitted = <uint32_t*>realloc(self.data, max(self.size, <size_t>1) * sizeof(uint32_t))
            if fitted != NULL:
                self.data, self.capacity = fitted, max(self.size, <size_t>1)
        self.shape[0], self.strides[0] = self.size, sizeof(uint32_t)
        view.buf, view.obj, view.len = self.data, self, <Py_ssize_t>(self.size * sizeof(uint32_t))
        view.readonly, view.itemsize, view.format = 0, sizeof(uint32_t), "I"
        view.ndim, view.shape, view.strides = 1, self.shape, self.strides
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer* view):
        pass


@cython.final
cdef class _ChunkCache:
    """What one thread keeps between calls: its chunk table and the cache of longer chunks
    (_cache.pxd), the answers of ``compatible`` (_bpe.pxd) and a UTF-8 buffer
    (core/_text.pxd).

    A cache is used by one thread at a time; the encoder lends its caches out per call and keeps
    them (``MergeEncoder.caches``), so repeated words are merged once per thread, not per call.
    The chunk table's seed belongs to the encoder that made the cache, which outlives it."""
    cdef ShortChunkTable chunks                 # chunks of at most 15 bytes -> their ids
    cdef LongCache longer                       # chunks over 15 bytes merged before
    cdef Compat compat
    cdef Utf8Buffer utf8
    cdef _Ids spare                             # an id buffer kept for scratch (see _Worker)

    def __cinit__(self):
        compat_widen(&self.compat, COMPAT_BITS)

    cdef int start_table(self, MergeEncoder enc) except -1:
        """The chunk table, a copy of the encoder's seed (made now if it is not yet)."""
        if enc.tokens.seed == NULL:
            enc.build_seed()
        if table_start(&self.chunks, enc.tokens.seed, enc.tokens.seed_bits, enc.tokens.seed_used,
                       enc.tokens.table_max_bits) != 0:
            raise MemoryError()
        return 0

    def __dealloc__(self):
        table_free(&self.chunks)
        long_free(&self.longer)
        compat_free(&self.compat)
        utf8_free(&self.utf8)


@cython.final
cdef class _Worker:
    """What one thread needs to encode: the ids it emits (or their count), a UTF-8 buffer,
    scratch for backtracking, and a chunk cache lent by the encoder (``release`` gives it back)."""
    cdef MergeEncoder enc
    cdef bint counting
    cdef size_t count
    cdef _Ids ids
    cdef vector[int32_t] syms
    cdef vector[uint64_t] alive
    cdef _ChunkCache cache
    cdef bint scratch                           # ids from (and back to) the cache's ``spare``
    cdef BlockLog blocks                        # the batch blocks this worker encoded (_batch.pxd)
    cdef bint mark_pieces                       # encode_piece notes where each chunk's ids start ...
    cdef vector[size_t] piece_at                # ... here (encode_whole)
    cdef vector[uint32_t] joined                # rejoin's scratch: the ids, each span's first
    cdef vector[size_t] span_byte               # byte, and its first id in ``joined``
    cdef vector[size_t] span_out

    def __cinit__(self, MergeEncoder enc, bint counting, bint scratch=False):
        """scratch: the ids are read before ``release`` and never leave (a batch copies them
        out): they go in the cache's kept buffer, whose pages are already there. A batch's
        workers grew their ids from nothing, on fresh pages each call (benchmarks/RESULTS.md,
        "Encoding against gigatoken"). One str's ids are reserved at once and gain nothing from it."""
        self.enc, self.counting = enc, counting and not enc.boundless   # runs need the ids
        self.cache = enc.caches.pop() if enc.caches else _ChunkCache()
        if self.cache.chunks.entries == NULL:
            self.cache.start_table(enc)
        self.scratch = scratch
        if scratch and self.cache.spare is not None:
            self.ids, self.cache.spare = self.cache.spare, None
            self.ids.size = 0
        else:
            self.ids = _Ids()

    def release(self):
        """Give the cache back to the encoder, for the next call; MemoryError if ids were lost."""
        if self.cache is not None:
            utf8_trim(&self.cache.utf8)
            if self.scratch and not self.ids.failed and self.ids.capacity * sizeof(uint32_t) <= KEEP_IDS:
                self.cache.spare = self.ids
            if len(self.enc.caches) < MAX_CACHES:
                self.enc.caches.append(self.cache)
        self.cache = None
        if self.ids.failed:
            raise MemoryError("out of memory for the token ids")

    cdef inline void emit(self, int32_t token) noexcept nogil:
        if self.counting:
            self.count += 1
        else:
            self.ids.push(<uint32_t>token)

    cdef inline void emit_symbols(self, const int32_t* ext, size_t k) noexcept nogil:
        cdef size_t i
        if self.counting:
            self.count += k
            return
        for i in range(k):
            self.ids.push(<uint32_t>ext[self.syms[i]])

    cdef inline void emit_packed(self, const Packed* x) noexcept nogil:
        """Emit the ids of a chunk table entry."""
        cdef size_t count = x.k1 >> 60
        if count == SPILLED:
            count = x.ids[1]
            if not self.counting:
                self.ids.extend(self.cache.chunks.spill.data() + x.ids[0], count)
        elif not self.counting:
            if self.ids.size + INLINE_IDS <= self.ids.capacity:     # all four slots at once, not
                memcpy(self.ids.data + self.ids.size, x.ids, INLINE_IDS * sizeof(uint32_t))
                self.ids.size += count                              # a call to memcpy of count
            else:                                                   # ids (benchmarks/RESULTS.md,
                self.ids.extend(x.ids, count)                       # "Encode once (2)")
        if self.counting:
            self.count += count

    cdef inline bint cached(self, uint64_t h, const uint8_t* s, size_t n) noexcept nogil:
        """Emit the ids of a chunk merged before; False if it was not."""
        cdef const uint32_t* found = long_find(&self.cache.longer, h, s, n)
        if found == NULL:
            return False
        if self.counting:
            self.count += found[0]
        else:
            self.ids.extend(found + 1, found[0])
        return True

    cdef inline void remember(self, uint64_t h, const uint8_t* s, size_t n, size_t count) noexcept nogil:
        """Cache the chunk just merged (its symbols are in syms)."""
        long_add(&self.cache.longer, h, s, n, self.syms.data(), count, self.enc.merges.ext.data())

    cdef bint encode_ref(self, const TextRef* ref, SpecialSet allowed, SpecialSet disallowed) noexcept nogil:
        """Encode one str; True (and nothing emitted) if it holds a disallowed special token.

        A str that is not ASCII, and has no UTF-8 kept beside it by CPython (bpe_str_view), is
        turned into UTF-8 in the cache's buffer, in blocks of about
        BLOCK_CHARS characters cut where a chunk boundary is sure (next_cut) when the pattern
        allows: the buffer stays small and in the CPU's cache, and is never zero-filled."""
        cdef const uint8_t* s
        cdef size_t n, at, which, start = 0, stop, size = <size_t>ref.length
        cdef size_t ids_before = self.ids.size, count_before = self.count
        cdef TextRef part
        cdef bint blocks
        if ref.kind == 0:
            s, n = <const uint8_t*>ref.data, size
            if disallowed is not None and disallowed.find(s, n, &at, &which):
                return True
            self.enc.encode_utf8(s, n, self, allowed)
            return False
        # A cut is safe for the line-end patterns (next_cut); no special token may hold the "\n" there.
        blocks = (cuts_at_line_ends(self.enc.pattern)
                  and (allowed is None or not allowed.newline)
                  and (disallowed is None or not disallowed.newline))
        part.kind = ref.kind
        while True:
            stop = next_cut(ref, start + BLOCK_CHARS, &self.enc.cls[0]) if blocks else size
            part.data = <const uint8_t*>ref.data + start * <size_t>ref.kind
            part.length = <Py_ssize_t>(stop - start)
            if utf8_room(&self.cache.utf8, utf8_capacity(&part)) != 0:
                self.ids.failed = True          # (MemoryError at release)
                return False
            s, n = self.cache.utf8.data, to_utf8(&part, self.cache.utf8.data)
            if disallowed is not None and disallowed.find(s, n, &at, &which):
                self.ids.size, self.count = ids_before, count_before
                return True
            self.enc.encode_utf8(s, n, self, allowed)
            if stop >= size:
                return False
            start = stop

    cdef object array(self):
        """The ids as a uint32 array."""
        return np.asarray(self.ids)

    cdef object as_list(self):
        if self.enc.ints.ints == NULL:
            self.enc.make_ints()
        return bpe_list_of_ids(self.ids.data, self.ids.size, self.enc.ints.ints, self.enc.ints.n)

    def run(self, _Batch batch):
        """Encode blocks of the batch until none is left (on a thread, without the GIL)."""
        with nogil:
            batch.work(self)


@cython.final
cdef class _Batch:
    """A list of str encoded on threads: each worker takes the next block of texts until none is
    left, so a slow thread takes fewer. Each text's token count goes to ``counts``; its ids to
    the worker's ``ids``, block after block, put in order by ``flat``."""
    cdef MergeEncoder enc
    cdef list texts                             # our own list: the strs stay alive while read
    cdef TextRef* refs
    cdef Py_ssize_t n
    cdef Blocks blocks                          # who takes which block (_batch.pxd)
    cdef int64_t[::1] counts
    cdef object counts_np
    cdef SpecialSet allowed, disallowed
    cdef list workers

    def __cinit__(self, MergeEncoder enc, texts, bint counting, SpecialSet allowed,
                  SpecialSet disallowed, int workers):
        cdef Py_ssize_t i, block, chars = 0
        self.texts = list(texts)
        self.enc, self.n = enc, len(self.texts)
        self.allowed, self.disallowed = allowed, disallowed
        self.refs = <TextRef*>calloc(max(self.n, 1), sizeof(TextRef))
        if self.refs == NULL:
            raise MemoryError()
        for i in range(self.n):
            text = self.texts[i]
            if not isinstance(text, str):
                raise TypeError(f"texts[{i}] must be a str, got {type(text).__name__}")
            bpe_str_view(text, &self.refs[i].data, &self.refs[i].length, &self.refs[i].kind)
            chars += self.refs[i].length
        # Blocks of about 64 KB of text, at least 8 per thread so a slow thread takes fewer.
        block = max(1, min(self.n * 65536 // max(chars, 1), self.n // max(8 * workers, 1)))
        workers = max(1, min(workers, (self.n + block - 1) // block))
        self.counts_np = np.zeros(self.n, np.int64)
        self.counts = self.counts_np
        self.workers = [_Worker(enc, counting, True) for _ in range(workers)]
        blocks_plan(&self.blocks, self.n, block)

    def __dealloc__(self):
        free(self.refs)

    def run(self):
        """Encode every text; the index of the first holding a disallowed special token, or -1."""
        if len(self.workers) == 1:
            (<_Worker>self.workers[0]).run(self)
        else:
            threads = [threading.Thread(target=w.run, args=(self,)) for w in self.workers]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return blocks_first_bad(&self.blocks)

    def release(self):
        """Give the workers' caches back; MemoryError if ids were lost."""
        lost = False
        for w in self.workers:
            try:
                w.release()
            except MemoryError:
                lost = True
        if lost:
            raise MemoryError("out of memory for the token ids")

    cdef void work(self, _Worker w) noexcept nogil:
        cdef Py_ssize_t b, i, end
        cdef size_t before
        while True:
            b = blocks_take(&self.blocks)
            if b < 0:
                return
            blocks_log(&w.blocks, b, w.ids.size)
            end = min(self.n, (b + 1) * self.blocks.block)
            for i in range(b * self.blocks.block, end):
                before = w.count if w.counting else w.ids.size
                if w.encode_ref(&self.refs[i], self.allowed, self.disallowed):
                    blocks_note_bad(&self.blocks, i)
                    return
                self.counts[i] = <int64_t>((w.count if w.counting else w.ids.size) - before)

    def counts_array(self):
        return self.counts_np

    def flat(self):
        """(ids uint32, offsets int64): text i's ids are ids[offsets[i]:offsets[i + 1]]."""
        offsets = np.zeros(self.n + 1, np.int64)
        np.cumsum(self.counts_np, out=offsets[1:])
        ids = np.empty(offsets[self.n], np.uint32)
        cdef int64_t[::1] off = offsets
        cdef uint32_t[::1] out = ids
        cdef _Worker w
        for w in self.workers:
            blocks_gather(&self.blocks, &w.blocks, w.ids.data, &off[0], &out[0] if out.shape[0] else NULL)
        return ids, offsets


def spell_tokens(const int32_t[:, ::1] merges, const int32_t[::1] merge_ids, const int32_t[::1] byte_ids,
                 Py_ssize_t size):
    """id -> token bytes (None where no token has the id) for ids below ``size``: byte b is
    ``byte_ids[b]``, merge m joins the tokens ``merges[m]`` into ``merge_ids[m]``. Returns
    (the list, the index of the first merge whose parts are not made yet or whose id is taken
    or out of range, else -1); the caller has checked the byte ids."""
    cdef Py_ssize_t m, b
    cdef int32_t left, right, new
    cdef list vocab = [None] * size
    cdef bytes a, c, joined
    for b in range(256):
        vocab[byte_ids[b]] = bytes((b,))
    for m in range(merges.shape[0]):
        left, right, new = merges[m, 0], merges[m, 1], merge_ids[m]
        if not (0 <= left < size and 0 <= right < size and 0 <= new < size) \
                or vocab[left] is None or vocab[right] is None or vocab[new] is not None:
            return vocab, m
        a, c = vocab[left], vocab[right]
        joined = PyBytes_FromStringAndSize(NULL, PyBytes_GET_SIZE(a) + PyBytes_GET_SIZE(c))
        memcpy(PyBytes_AS_STRING(joined), PyBytes_AS_STRING(a), PyBytes_GET_SIZE(a))
        memcpy(PyBytes_AS_STRING(joined) + PyBytes_GET_SIZE(a), PyBytes_AS_STRING(c), PyBytes_GET_SIZE(c))
        vocab[new] = joined
    return vocab, -1


def recover_merges(list tokens, const int32_t[::1] ids, const int32_t[::1] byte_ids):
    """The merges of a vocabulary given as token bytes in rank order (ids[i] is tokens[i]'s id).

    Each token longer than one byte must be made by merging exactly two lower-ranked tokens:
    running BPE on its bytes with the merges found so far must end in two parts. Returns
    (merges int32 (n, 2), result ids int32 (n,), index of the first token that is not, or -1).
    """
    cdef Py_ssize_t n = len(tokens), t, k
    cdef int32_t[:, ::1] merges = np.empty((n, 2), dtype=np.int32)
    cdef int32_t[::1] result = np.empty(n, dtype=np.int32)
    cdef MergeEncoder enc = MergeEncoder(np.empty((0, 2), np.int32), np.empty(0, np.int32), byte_ids, [], {})
    cdef vector[int32_t] parts
    cdef const unsigned char* s
    cdef bytes token
    k = 0
    for t in range(n):
        token = tokens[t]
        if len(token) < 2:
            continue
        parts.clear()
        s = token
        if len(token) <= SHORT_CHUNK:
            replay_short(&enc.merges, s, len(token), &parts)
        else:
            replay_long(&enc.merges, s, len(token), &parts)
        if parts.size() != 2:
            return np.asarray(merges[:k]).copy(), np.asarray(result[:k]).copy(), t
        merges[k, 0], merges[k, 1], result[k] = enc.merges.ext[parts[0]], enc.merges.ext[parts[1]], ids[t]
        merges_add(&enc.merges, parts[0], parts[1], ids[t])
        k += 1
    return np.asarray(merges[:k]).copy(), np.asarray(result[:k]).copy(), -1
