# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# distutils: language = c++
"""Encoding and decoding kernels.

Encoding follows tiktoken's rule: a chunk that is itself a token becomes that token; otherwise
the adjacent pair with the lowest merge rank is merged, leftmost first on ties, until no pair
has a merge. Inside, tokens are *symbols* numbered by rank: byte b is symbol b, merge m makes
symbol 256 + m, so a smaller symbol is an earlier merge; ``ext`` maps symbols to token ids.

A chunk that is not a token is encoded by backtracking (the method of GitHub's ``bpe`` crate,
written afresh here) instead of replaying the merges:

* A token is *reachable* when BPE of its bytes gives it back. The BPE encoding of any text is
  the one sequence of reachable tokens spelling it in which every adjacent pair is *compatible*:
  BPE of the two tokens' bytes together gives the same two tokens (``compatible``).
* So take the longest reachable token at the current position (a walk down a trie of their
  bytes); if it is not compatible with the token before it, try its longest proper prefix that
  is a token (``shorter``), and so on; when none fits, the position cannot be a token boundary
  after that token: mark it dead and pop the token before. Each position dies at most once, so
  the work is linear in the chunk (times the longest token), with no quadratic corner.

Each thread keeps a table of chunks (most repeat: a text has a few hundred thousand distinct
words). A chunk of at most 15 bytes is its own key there, packed into two words, with up to four
ids beside it, and the table starts with every token of the vocabulary, so a chunk that is a
whole token and a chunk merged before both cost one probe (_ChunkCache). Text is split and
looked up in batches of chunks: the first pass scans, packs, hashes and prefetches each chunk's
entry, the second reads the entries, which by then are in the CPU's cache. Longer chunks go to
the vocabulary's byte-keyed table and a cache of their own.

Text arrives as Python str and is read (and turned into UTF-8, a block at a time, when it is not
ASCII and CPython keeps no UTF-8 beside it) without the GIL, so batches run on threads in
parallel; ids leave as NumPy arrays, or as lists built from one shared Python int per id.
"""
import gc
import threading

cimport cython
import numpy as np
from cpython.number cimport PyNumber_Index
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memchr, memcmp, memcpy, memmove, memset
from libcpp.atomic cimport atomic
from libcpp.queue cimport priority_queue
from libcpp.string cimport string
from libcpp.vector cimport vector

from ._encode_hash cimport (Slot, bytes_hash, slot_of, PairSlot, PairTable, pair_of, pairtable_init,
                            pairtable_free, pairtable_find, pairtable_add, Packed, PACKED_KEY_MASK,
                            PACKED_MAX_BYTES, big_alloc, pack_key, packed_hash, packed_slot, same_bytes)
from ._encode_text cimport TextRef, bpe_str_view, code_point, to_utf8, utf8_capacity
from ._scan cimport C_S, PAT_CL100K, PAT_GPT2, PAT_O200K
from ._split cimport Window, split_next, window_reset

cdef extern from *:
    """
    #include <stdint.h>
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    #if defined(__GNUC__) || defined(__clang__)
    #define bpe_prefetch(p) __builtin_prefetch((p))
    #else
    #define bpe_prefetch(p) ((void)(p))
    #endif
    /* Lists of the Python ints ints[ids[i]]: one shared int per id, no int made per token.

       A list of millions of ids would add one to the reference count of one of some 100,000
       ints per id: a read and a write at random over megabytes of int objects. Instead the
       ids are counted (a table of n_ints counters, in the CPU's cache), the items written
       with plain stores, and each int's count added once. Only with the GIL (the free-threaded
       build counts references per thread: Py_INCREF there), and not for immortal objects
       (3.12+), whose counts must not change. */
    #define BPE_COUNTED_IDS 65536
    static void bpe_add_refs(PyObject* o, uint32_t k) {
    #if PY_VERSION_HEX >= 0x030C0000
        if (_Py_IsImmortal(o)) return;
    #endif
        if (Py_REFCNT(o) > ((Py_ssize_t)1 << 30)) {     /* near the limits: the usual way */
            while (k--) Py_INCREF(o);
            return;
        }
        Py_SET_REFCNT(o, Py_REFCNT(o) + (Py_ssize_t)k);
    }
    /* Fill the items of the lists out[0..m) (made, empty of items), list j holding
       ids[offsets[j] - offsets[0] ...], from ints. */
    static void bpe_fill_lists(PyObject* const* lists, Py_ssize_t m, const uint32_t* ids,
                               const int64_t* offsets, PyObject* const* ints, Py_ssize_t n_ints) {
        Py_ssize_t j, i, k = 0, total = (Py_ssize_t)(offsets[m] - offsets[0]);
        uint32_t* counts = NULL;
    #ifndef Py_GIL_DISABLED
        if (total >= BPE_COUNTED_IDS && total >= n_ints / 4 && total < ((Py_ssize_t)1 << 31))
            counts = (uint32_t*)calloc((size_t)n_ints, sizeof(uint32_t));
    #endif
        for (j = 0; j < m; j++) {
            PyObject** items = ((PyListObject*)lists[j])->ob_item;
            Py_ssize_t n = (Py_ssize_t)(offsets[j + 1] - offsets[j]);
            if (counts != NULL) {
                for (i = 0; i < n; i++, k++) {
                    uint32_t t = ids[k];
                    counts[t]++;
                    items[i] = ints[t];
                }
            } else {
                for (i = 0; i < n; i++, k++) {
                    PyObject* o = ints[ids[k]];
                    Py_INCREF(o);
                    items[i] = o;
                }
            }
        }
        if (counts != NULL) {
            for (i = 0; i < n_ints; i++)
                if (counts[i]) bpe_add_refs(ints[i], counts[i]);
            free(counts);
        }
    }
    /* An empty list of n items to fill (NULL items). A list of millions of items gets its item
       array on huge pages where Linux has them: PyList_New's array is fresh memory, mapped 4 KB
       at a time as it is first written (16,000 faults for 8 million ids, a third of what the
       list costs over an array) and unmapped again when the list dies. The array comes from
       PyMem_Malloc, as the list's own would, so the list frees it as its own; with the GIL only
       (the free-threaded build lays its arrays out differently). Where memory is fragmented
       the kernel may compact it to find huge pages (an early try measured that as slower);
       in the encoding benchmark, beside other libraries, it is 0.02 s faster a list of 8 M. */
    #define BPE_HUGE_LIST_ITEMS ((Py_ssize_t)1 << 20)
    static PyObject* bpe_new_list(Py_ssize_t n) {
    #if defined(__linux__) && defined(MADV_HUGEPAGE) && !defined(Py_GIL_DISABLED)
        if (n >= BPE_HUGE_LIST_ITEMS && (size_t)n < PY_SSIZE_T_MAX / sizeof(PyObject*)) {
            size_t bytes = (size_t)n * sizeof(PyObject*), huge = (size_t)2 << 20;
            PyObject** items = (PyObject**)PyMem_Malloc(bytes);
            PyObject* list;
            uintptr_t from, to;
            if (items == NULL) return PyErr_NoMemory();
            from = ((uintptr_t)items + huge - 1) & ~(uintptr_t)(huge - 1);
            to = ((uintptr_t)items + bytes) & ~(uintptr_t)(huge - 1);
            if (to > from) (void)madvise((void*)from, to - from, MADV_HUGEPAGE);   /* a hint */
            memset(items, 0, bytes);                            /* (NULL items until filled) */
            list = PyList_New(0);
            if (list == NULL) {
                PyMem_Free(items);
                return NULL;
            }
            ((PyListObject*)list)->ob_item = items;
            ((PyListObject*)list)->allocated = n;
            Py_SET_SIZE(list, n);
            return list;
        }
    #endif
        return PyList_New(n);
    }
    static PyObject* bpe_list_of_ids(const uint32_t* ids, Py_ssize_t n, PyObject* const* ints, Py_ssize_t n_ints) {
        int64_t offsets[2] = {0, (int64_t)n};
        PyObject* list = bpe_new_list(n);
        if (list == NULL) return NULL;
        bpe_fill_lists(&list, 1, ids, offsets, ints, n_ints);
        return list;
    }
    /* The lists ids[offsets[j]:offsets[j + 1]] for j < m, in a list. */
    static PyObject* bpe_lists_of_ids(const uint32_t* ids, const int64_t* offsets, Py_ssize_t m,
                                      PyObject* const* ints, Py_ssize_t n_ints) {
        PyObject* out = PyList_New(m);
        Py_ssize_t j;
        if (out == NULL) return NULL;
        for (j = 0; j < m; j++) {          /* every list first: a failure leaves nothing counted */
            PyObject* list = bpe_new_list((Py_ssize_t)(offsets[j + 1] - offsets[j]));
            if (list == NULL) {
                Py_DECREF(out);
                return NULL;
            }
            PyList_SET_ITEM(out, j, list);
        }
        if (m)
            bpe_fill_lists(((PyListObject*)out)->ob_item, m, ids + offsets[0], offsets, ints, n_ints);
        return out;
    }
    """
    object bpe_list_of_ids(const uint32_t* ids, Py_ssize_t n, PyObject* const* ints, Py_ssize_t n_ints)
    object bpe_lists_of_ids(const uint32_t* ids, const int64_t* offsets, Py_ssize_t m,
                            PyObject* const* ints, Py_ssize_t n_ints)
    void bpe_prefetch(const void* p) nogil

cdef enum:
    NO_MERGE = 0x7FFFFFFF
    SHORT_CHUNK = 128          # bytes; the replayed merges of longer chunks use a heap
    SPLIT_NONE = -1            # pattern: no split, each piece between special tokens is one chunk
    CACHE_MIN_BITS = 10        # the cache of chunks over 15 bytes (_ChunkCache.slots):
    CACHE_MAX_BITS = 21        # at most 2^20 cached chunks; then the cache starts afresh
    TABLE_MIN_BITS = 10        # the chunk table of chunks up to 15 bytes (_ChunkCache.table) ...
    TABLE_MAX_BITS = 20        # ... grows to 2^20 entries (32 MB; more if the vocabulary needs it),
                               # kept at most half full; then it starts afresh from the vocabulary
    MAX_CACHES = 64            # caches an encoder keeps between calls (one per thread in use)
    COMPAT_BITS = 16           # answers of ``compatible`` a thread keeps (512 KB) ...
    WIDE_COMPAT_BITS = 17      # ... or 1 MB when it lays out a word table's millions of distinct chunks
                               # (8 MB found more answers but missed the caches on every probe: 2 MB
                               # took 10-23% off superword stage two's layouts, 1 MB 4-11% more; on
                               # cl100k's layout of mix33 2 MB changed nothing and 1 MB took 8% off)
    BATCH = 128                # chunks scanned, hashed and prefetched before they are looked up
    INLINE_IDS = 4             # ids a chunk table entry holds; a longer result goes to ``spill``
    SPILLED = 7                # the id count of an entry whose ids are in ``spill``
    CACHE_MAX_BYTES = 255      # longer chunks are rare: not cached
    BLOCK_CHARS = 1 << 16      # a long non-ASCII str is turned into UTF-8 and encoded this many
                               # characters at a time (or a little more: see next_cut)
    KEEP_UTF8 = 16 << 20       # bytes of UTF-8 buffer a thread keeps between calls
    KEEP_IDS = 64 << 20        # bytes of id buffer a thread keeps between calls (scratch ids)
    STACK_CHUNK = 256          # chunks up to this long backtrack in stack arrays
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
    # The merges, by symbol (see the module docstring).
    cdef PairTable pairs                        # (left, right) symbols -> the symbol they make
    cdef vector[int32_t] left, right            # symbol -> its parts (a byte: itself)
    cdef vector[int32_t] length                 # symbol -> its length in bytes
    cdef vector[uint8_t] first_byte, last_byte  # symbol -> its first and its last byte
    cdef uint64_t joins[1024]                   # bit (x << 8 | y): some merge puts byte y after x
    cdef vector[int32_t] ext                    # symbol -> token id
    # Backtracking: the reachable symbols, in a trie of their bytes.
    cdef vector[uint8_t] reachable
    cdef vector[int32_t] shorter                # symbol -> longest reachable proper prefix, or -1
    cdef vector[int32_t] level2                 # the first two bytes -> trie node, or -1
    cdef PairTable trie                         # (node, next byte) -> (node, its symbol or -1),
                                                # past the first two bytes
    cdef vector[int32_t] node_symbol            # node -> the reachable symbol it spells, or -1
    # Whole tokens, for tiktoken's first rule: bytes -> id.
    # Tokens over 15 bytes are in ``whole``; every thread's chunk table starts as a copy of
    # ``seed``, the others as packed keys (_ChunkCache), made when a first table is.
    cdef Slot* whole
    cdef int whole_bits
    cdef vector[uint8_t] arena                  # the bytes of the tokens in ``whole`` ...
    cdef vector[int64_t] arena_at               # ... at arena_at[id]
    cdef vector[int32_t] short_tokens           # ids of the tokens of at most 15 bytes, ascending
    cdef Packed* seed
    cdef int seed_bits
    cdef size_t seed_used
    cdef int table_max_bits                     # a chunk table's limit (TABLE_MAX_BITS, or more)
    # Decoding, and one Python int per id for lists of ids.
    cdef vector[string] token_bytes             # id -> bytes (special tokens too)
    cdef vector[uint8_t] defined                # id -> 1 if some token has this id
    cdef PyObject** ints
    cdef Py_ssize_t n_ints
    # Pre-tokenization: a named pattern's scanner, SPLIT_NONE, or 0 (the caller splits).
    cdef int pattern
    cdef const uint8_t[::1] cls
    cdef const uint8_t[::1] fold
    cdef list caches                            # chunk caches not lent out (see _ChunkCache)
    # BoundlessBPE (set_supermerges): supermerges join whole-token chunks in runs (see run_step).
    cdef PairTable supers                       # (left id, right id) -> (rank, the id it makes)
    cdef vector[uint8_t] unit                   # id -> 1: a phase-1 token some supermerge joins
    cdef readonly bint boundless

    def __cinit__(self, const int32_t[:, ::1] merges, const int32_t[::1] result_ids,
                  const int32_t[::1] byte_ids, list vocab, dict special_tokens):
        """vocab[id] is the token's bytes or None; special_tokens maps bytes -> id."""
        cdef Py_ssize_t n = merges.shape[0], m, i
        if result_ids.shape[0] != n or byte_ids.shape[0] != 256:
            raise ValueError("MergeEncoder needs one result id per merge and 256 byte ids")
        if pairtable_init(&self.pairs, n) != 0 or pairtable_init(&self.trie, 1024) != 0:
            raise MemoryError()
        memset(self.joins, 0, sizeof(self.joins))
        for i in range(256):
            self.left.push_back(i)
            self.right.push_back(i)
            self.length.push_back(1)
            self.first_byte.push_back(<uint8_t>i)
            self.last_byte.push_back(<uint8_t>i)
            self.ext.push_back(byte_ids[i])
        symbol_of = {byte_ids[i]: i for i in range(256)}
        for m in range(n):
            left, right = symbol_of.get(merges[m, 0]), symbol_of.get(merges[m, 1])
            if left is None or right is None:
                raise ValueError(f"merge {m} joins ids that no earlier merge or byte makes")
            self.add_merge(left, right, result_ids[m])
            symbol_of[result_ids[m]] = 256 + m
        self.build_trie()
        self.build_whole(vocab)
        self.build_decoding(vocab, special_tokens)
        self.pattern = 0
        self.caches = []
        self.table_max_bits = TABLE_MAX_BITS

    def __dealloc__(self):
        cdef Py_ssize_t i
        pairtable_free(&self.pairs)
        pairtable_free(&self.trie)
        pairtable_free(&self.supers)
        free(self.whole)
        free(self.seed)
        if self.ints != NULL:
            for i in range(self.n_ints):
                Py_XDECREF(self.ints[i])
            free(self.ints)

    cdef int add_merge(self, int32_t left, int32_t right, int32_t token_id) except -1:
        """Append the next merge (symbols left, right) making token_id."""
        cdef int32_t symbol = <int32_t>self.left.size()
        if pairtable_add(&self.pairs, pair_of(left, right), symbol, 0) == NULL:
            raise MemoryError()
        self.left.push_back(left)
        self.right.push_back(right)
        self.length.push_back(self.length[left] + self.length[right])
        self.first_byte.push_back(self.first_byte[left])
        self.last_byte.push_back(self.last_byte[right])
        cdef int join = (self.last_byte[left] << 8) | self.first_byte[right]
        self.joins[join >> 6] |= <uint64_t>1 << (join & 63)
        self.ext.push_back(token_id)
        return 0

    # -- set-up ------------------------------------------------------------------------------
    cdef int build_trie(self) except -1:
        """Which symbols are reachable, the trie of their bytes and each one's ``shorter``.

        A merged symbol is reachable exactly when its parts are and, while the parts are built
        side by side, no merge across their boundary comes before their own (``no_cross_merge``
        with the symbol itself as the limit): then BPE of its bytes ends in the two parts, which
        merge into it."""
        cdef Py_ssize_t t, n = self.left.size()
        cdef vector[uint8_t] text
        self.reachable.assign(n, 1)
        for t in range(256, n):
            self.reachable[t] = (self.reachable[self.left[t]] and self.reachable[self.right[t]]
                                 and self.no_cross_merge(self.left[t], self.right[t], <int32_t>t))
        self.level2.assign(65536, -1)
        self.node_symbol.assign(257, -1)        # node 0: the root; node 1 + b: byte b
        for t in range(256):
            self.node_symbol[1 + t] = <int32_t>t
        for t in range(256, n):
            if self.reachable[t]:
                self.spell(<int32_t>t, &text)
                self.insert(text.data(), text.size(), <int32_t>t)
        self.shorter.assign(n, -1)
        for t in range(256, n):
            if self.reachable[t]:
                self.spell(<int32_t>t, &text)
                self.shorter[t] = self.longest_prefix(text.data(), text.size() - 1, 0)
        return 0

    cdef void spell(self, int32_t symbol, vector[uint8_t]* out) noexcept nogil:
        """The bytes of a symbol, written into out."""
        out.clear()
        self.append_bytes(symbol, out)

    cdef void append_bytes(self, int32_t symbol, vector[uint8_t]* out) noexcept nogil:
        while symbol >= 256:                    # the left parts recursively, the right ones in a loop
            self.append_bytes(self.left[symbol], out)
            symbol = self.right[symbol]
        out.push_back(<uint8_t>symbol)

    cdef int insert(self, const uint8_t* s, size_t n, int32_t symbol) except -1:
        """Make symbol the one spelled by the trie node of s (n >= 2), making the path as needed.
        A node's symbol is kept in node_symbol and, past two bytes, in the slot leading to it."""
        cdef size_t i
        cdef int32_t node = self.level2[(s[0] << 8) | s[1]]
        cdef PairSlot* slot = NULL
        if node < 0:
            node = self.new_node()
            self.level2[(s[0] << 8) | s[1]] = node
        for i in range(2, n):
            slot = pairtable_add(&self.trie, pair_of(node, s[i]), <int32_t>self.node_symbol.size(), -1)
            if slot == NULL:
                raise MemoryError()
            if slot.value == <int32_t>self.node_symbol.size():
                self.node_symbol.push_back(-1)
            node = slot.value
        self.node_symbol[node] = symbol
        if slot != NULL:
            slot.extra = symbol
        return 0

    cdef int32_t new_node(self):
        self.node_symbol.push_back(-1)
        return <int32_t>self.node_symbol.size() - 1

    cdef int build_whole(self, list vocab) except -1:
        """The table of the bytes of every token over 15 bytes -> its id (the largest id when
        two tokens share bytes), and the list of the others, for ``seed``. Few tokens are that
        long: the table stays small, in the CPU's cache."""
        cdef Py_ssize_t i, count = sum(1 for token in vocab if token is not None and len(token) > PACKED_MAX_BYTES)
        cdef const unsigned char* s
        cdef uint64_t h
        cdef size_t k, mask
        self.whole_bits = 4
        while (1 << self.whole_bits) < 2 * count + 2:
            self.whole_bits += 1
        self.whole = <Slot*>calloc(<size_t>1 << self.whole_bits, sizeof(Slot))
        if self.whole == NULL:
            raise MemoryError()
        mask = (<size_t>1 << self.whole_bits) - 1
        self.arena_at.assign(len(vocab), -1)
        for i, token in enumerate(vocab):
            if token is None:
                continue
            if len(token) <= PACKED_MAX_BYTES:
                if len(token):
                    self.short_tokens.push_back(<int32_t>i)
                continue
            s = token
            h = bytes_hash(s, len(token), s + len(token))
            if len(token) > 8:
                self.arena_at[i] = self.arena.size()
                self.arena.insert(self.arena.end(), s, s + len(token))
            k = slot_of(h, self.whole_bits)
            while self.whole[k].length and not self.same_whole(k, h, s, len(token)):
                k = (k + 1) & mask
            self.whole[k].hash, self.whole[k].length, self.whole[k].value = h, len(token), <int32_t>i
        return 0

    cdef int build_seed(self) except -1:
        """``seed``: every token of at most 15 bytes -> its id, at most half full (the largest
        id when two tokens share bytes, as in ``whole``)."""
        cdef size_t k, j, mask, n = self.short_tokens.size()
        cdef int32_t token
        cdef uint64_t k0, k1, h
        cdef const uint8_t* s
        cdef Packed* table
        cdef int bits = TABLE_MIN_BITS
        while (<size_t>1 << bits) < 2 * n:
            bits += 1
        table = <Packed*>big_alloc((<size_t>1 << bits) * sizeof(Packed))
        if table == NULL:
            raise MemoryError()
        memset(table, 0, (<size_t>1 << bits) * sizeof(Packed))
        mask = (<size_t>1 << bits) - 1
        self.seed_used = 0
        for k in range(n):
            token = self.short_tokens[k]
            s = <const uint8_t*>self.token_bytes[token].data()
            pack_key(s, self.token_bytes[token].size(), s + self.token_bytes[token].size(), &k0, &k1)
            h = packed_hash(k0, k1)
            j = packed_slot(h, bits)
            while table[j].k1 != 0 and not (table[j].k0 == k0 and (table[j].k1 & PACKED_KEY_MASK) == k1):
                j = (j + 1) & mask
            if table[j].k1 == 0:
                self.seed_used += 1
            table[j].k0, table[j].k1 = k0, k1 | (<uint64_t>1 << 60)
            table[j].ids[0], table[j].ids[1], table[j].ids[2], table[j].ids[3] = <uint32_t>token, 0, 0, 0
        self.seed, self.seed_bits = table, bits
        self.table_max_bits = max(<int>TABLE_MAX_BITS, bits + 1)
        return 0

    cdef int build_decoding(self, list vocab, dict special_tokens) except -1:
        size = max([len(vocab)] + [i + 1 for i in special_tokens.values()])
        self.token_bytes.resize(size)
        self.defined.resize(size, 0)
        for i, token in enumerate(vocab):
            if token is not None:
                self.token_bytes[i] = <string>token
                self.defined[i] = 1
        for token, i in special_tokens.items():
            self.token_bytes[i] = <string>token
            self.defined[i] = 1
        return 0

    cdef int make_ints(self) except -1:
        """One Python int per id, for lists of ids (made on the first list asked for)."""
        cdef Py_ssize_t i, n = self.token_bytes.size()
        cdef PyObject** ints = <PyObject**>calloc(n, sizeof(PyObject*))
        cdef object value
        if ints == NULL:
            raise MemoryError()
        for i in range(n):
            value = i
            Py_INCREF(value)
            ints[i] = <PyObject*>value
        self.ints, self.n_ints = ints, n
        return 0

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
        cdef size_t i, home, spilled
        out = []
        for c in self.caches:
            home = spilled = 0
            for i in range((<size_t>1 << c.table_bits) if c.table != NULL else 0):
                if c.table[i].k1 != 0:
                    spilled += (c.table[i].k1 >> 60) == SPILLED
                    home += packed_slot(packed_hash(c.table[i].k0, c.table[i].k1 & PACKED_KEY_MASK),
                                        c.table_bits) == (i & ~(<size_t>1))
            out.append({"bits": c.table_bits, "used": c.table_used, "seeds": c.seed_used,
                        "spilled": spilled, "resets": c.resets, "max_bits": c.max_bits,
                        "home": home, "long": c.size})
        return out

    def set_cache_limit(self, int bits):
        """For tests: chunk tables made from now on grow to 2**bits entries at most (at least
        twice the seed), then start afresh."""
        if self.seed == NULL:
            self.build_seed()
        self.table_max_bits = max(bits, self.seed_bits + 1)

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
        if self.boundless or self.ints != NULL:
            raise ValueError("set_supermerges is called once, before any encoding")
        if n == 0:
            return
        if pairtable_init(&self.supers, n) != 0:
            raise MemoryError()
        size = max(<Py_ssize_t>self.token_bytes.size(), max(ids) + 1)
        self.token_bytes.resize(size)
        self.defined.resize(size, 0)
        self.unit.assign(size, 0)
        for k in range(n):
            if pairs[k, 0] < 0 or pairs[k, 1] < 0 or pairs[k, 0] >= size or pairs[k, 1] >= size:
                raise ValueError(f"supermerge {k} joins ids out of range")
            if pairtable_add(&self.supers, pair_of(pairs[k, 0], pairs[k, 1]), <int32_t>k, ids[k]) == NULL:
                raise MemoryError()
            self.token_bytes[ids[k]] = <string>superwords[k]
            self.defined[ids[k]] = 1
            self.unit[pairs[k, 0]] = self.unit[pairs[k, 1]] = 1
        for k in range(n):
            self.unit[ids[k]] = 0               # a superword is made in a run, never scanned as a chunk
        self.boundless = True

    def merge_run_list(self, list ids):
        """The supermerges applied to one run of unit ids (a list), as the encoder does it."""
        cdef vector[uint32_t] run
        cdef size_t m
        for i in ids:
            run.push_back(<uint32_t>i)
        m = self.merge_run(run.data(), run.size()) if self.boundless else run.size()
        return [run[i] for i in range(m)]

    def unit_ids(self):
        """The ids that make runs (see set_supermerges), as a set."""
        return {i for i in range(self.unit.size()) if self.unit[i]}

    # -- the merges --------------------------------------------------------------------------
    cdef inline int32_t merged(self, int32_t left, int32_t right) noexcept nogil:
        """The symbol the pair merges into (smaller is earlier), or NO_MERGE."""
        cdef const PairSlot* slot = pairtable_find(&self.pairs, pair_of(left, right))
        return slot.value if slot != NULL else NO_MERGE

    cdef bint no_cross_merge(self, int32_t a, int32_t b, int32_t limit) noexcept nogil:
        """While BPE builds symbols a and b side by side from their bytes, does no merge across
        their boundary come before the merge ``limit``?

        Walks back in merge order: the later of a and b was made last, from its parts, so just
        before that merge the boundary pair was (a's right part, b) or (a, b's left part). A
        boundary pair that merges before the current limit would have been merged instead. On a
        tie the leftmost pair wins: a's own merge beats an equal one on the boundary (limit a),
        a boundary merge beats b's (limit b + 1)."""
        while True:
            if self.merged(a, b) < limit:
                return False
            if a < 256 and b < 256:
                return True
            if a > b:
                limit, a = a, self.right[a]
            else:
                limit, b = b + 1, self.left[b]

    cdef inline bint compatible(self, int32_t a, int32_t b, uint64_t* known, int bits) noexcept nogil:
        """Does BPE of the bytes of reachable a then b give exactly [a, b]? At once yes when no
        merge joins a's last byte to b's first (``joins``): no merge can then cross the boundary,
        and each side merges as it does alone, into a and b. Such boundaries are most between
        words (no token of a cl100k-trained vocabulary has a letter before a space), and the
        8 KB table stays in the fastest cache. Else ``known``, the calling thread's table of
        answers already found (see _ChunkCache.compat): the same pairs of tokens meet again
        and again, and the walk down their merges is cache misses."""
        cdef int join = (self.last_byte[a] << 8) | self.first_byte[b]
        if not (self.joins[join >> 6] >> (join & 63)) & 1:
            return True
        cdef uint64_t key = (<uint64_t>a << 33) | (<uint64_t><uint32_t>b << 1)
        cdef uint64_t* slot = &known[(key * <uint64_t>0x9E3779B97F4A7C15) >> (64 - bits)]
        if (slot[0] & ~(<uint64_t>1)) == key:
            return slot[0] & 1
        cdef bint answer = self.no_cross_merge(a, b, NO_MERGE)
        slot[0] = key | answer
        return answer

    cdef inline int32_t longest_prefix(self, const uint8_t* s, size_t n, size_t i) noexcept nogil:
        """The longest reachable symbol that s[i:n] starts with (n > i): at least the byte."""
        cdef int32_t best = s[i], node
        cdef const PairSlot* slot
        if i + 1 >= n:
            return best
        node = self.level2[(s[i] << 8) | s[i + 1]]
        if node < 0:
            return best
        if self.node_symbol[node] >= 0:
            best = self.node_symbol[node]
        i += 2
        while i < n:
            slot = pairtable_find(&self.trie, pair_of(node, s[i]))
            if slot == NULL:
                break
            node = slot.value
            if slot.extra >= 0:
                best = slot.extra
            i += 1
        return best

    cdef size_t backtrack(self, const uint8_t* s, size_t n, int32_t* out, uint64_t* alive,
                          uint64_t* known, int known_bits) noexcept nogil:
        """BPE of s (n bytes) by backtracking (module docstring): the symbols into out (room for
        n), their number returned. ``alive`` has room for n + 1 bits: bit p is cleared once no
        encoding of s has a token boundary at p after the symbols that end there."""
        cdef size_t k = 0, pos = 0, end
        cdef int32_t t
        for end in range((n >> 6) + 1):
            alive[end] = ~(<uint64_t>0)
        t = self.longest_prefix(s, n, 0)
        while True:
            end = pos + <size_t>self.length[t]
            if (alive[end >> 6] >> (end & 63)) & 1 and (k == 0 or self.compatible(out[k - 1], t, known, known_bits)):
                out[k] = t
                k += 1
                pos = end
                if pos == n:
                    return k
                t = self.longest_prefix(s, n, pos)
                continue
            t = self.shorter[t]
            if t < 0:                           # nothing fits at pos: pos is no boundary here
                alive[pos >> 6] &= ~(<uint64_t>1 << (pos & 63))
                if k == 0:                      # cannot happen for a BPE vocabulary (the proof
                    return self.replay(s, n, out)   # needs none); stay exact if it did
                k -= 1
                t = out[k]                      # retried, but it now ends at a dead position
                pos -= <size_t>self.length[t]

    # -- runs (BoundlessBPE) -------------------------------------------------------------------
    cdef inline int32_t super_rank(self, uint32_t a, uint32_t b, int32_t* made) noexcept nogil:
        """The rank of the supermerge of (a, b) and the id it makes, or NO_MERGE."""
        cdef const PairSlot* slot = pairtable_find(&self.supers, pair_of(<int32_t>a, <int32_t>b))
        if slot == NULL:
            return NO_MERGE
        made[0] = slot.extra
        return slot.value

    cdef size_t merge_run(self, uint32_t* ids, size_t n) noexcept nogil:
        """Apply the supermerges to a run of n ids in place, BPE-style: the adjacent pair of the
        lowest rank, leftmost on ties, until no pair has one; returns the ids left. Merging one
        pair at a time, lowest first, makes what training's merge-by-merge passes make (a merge
        never makes a pair that ranks before it)."""
        cdef int32_t rank[SHORT_CHUNK]
        cdef int32_t made[SHORT_CHUNK]
        cdef size_t m = n, i, best
        cdef int32_t best_rank
        if n < 2:
            return n
        if n > SHORT_CHUNK:
            return self.merge_long_run(ids, n)
        for i in range(n - 1):
            rank[i] = self.super_rank(ids[i], ids[i + 1], &made[i])
        while m > 1:
            best_rank, best = NO_MERGE, 0
            for i in range(m - 1):
                if rank[i] < best_rank:
                    best_rank, best = rank[i], i
            if best_rank == NO_MERGE:
                break
            ids[best] = <uint32_t>made[best]
            for i in range(best + 1, m - 1):    # close the gap left by ids[best + 1]
                ids[i] = ids[i + 1]
                rank[i] = rank[i + 1]
                made[i] = made[i + 1]
            m -= 1
            if best + 1 < m:
                rank[best] = self.super_rank(ids[best], ids[best + 1], &made[best])
            if best > 0:
                rank[best - 1] = self.super_rank(ids[best - 1], ids[best], &made[best - 1])
        return m

    cdef size_t merge_long_run(self, uint32_t* ids, size_t n) noexcept nogil:
        """``merge_run`` for long runs: a linked list and a min-heap of (rank, position); an entry
        is used only if the pair at its position still has that rank (as ``replay_long``)."""
        cdef vector[int64_t] nxt = vector[int64_t](n)
        cdef vector[int64_t] prv = vector[int64_t](n)
        cdef vector[uint8_t] gone = vector[uint8_t](n, 0)
        cdef priority_queue[uint64_t] heap     # max-heap of ~(rank << 32 | pos): min rank, leftmost
        cdef size_t i, m = 0
        cdef int32_t r, made
        cdef int64_t p, q
        cdef uint64_t top
        for i in range(n):
            nxt[i] = <int64_t>i + 1 if i + 1 < n else -1
            prv[i] = <int64_t>i - 1
        for i in range(n - 1):
            r = self.super_rank(ids[i], ids[i + 1], &made)
            if r != NO_MERGE:
                heap.push(~((<uint64_t>r << 32) | i))
        while not heap.empty():
            top = ~heap.top()
            heap.pop()
            r = <int32_t>(top >> 32)
            p = <int64_t>(top & 0xFFFFFFFFull)
            q = nxt[p]
            if gone[p] or q < 0 or self.super_rank(ids[p], ids[q], &made) != r:
                continue                         # stale: this position changed since the push
            ids[p] = <uint32_t>made
            gone[q] = 1
            nxt[p] = nxt[q]
            if nxt[p] >= 0:
                prv[nxt[p]] = p
                r = self.super_rank(ids[p], ids[nxt[p]], &made)
                if r != NO_MERGE:
                    heap.push(~((<uint64_t>r << 32) | <uint64_t>p))
            if prv[p] >= 0:
                r = self.super_rank(ids[prv[p]], ids[p], &made)
                if r != NO_MERGE:
                    heap.push(~((<uint64_t>r << 32) | <uint64_t>prv[p]))
        p = 0
        while p >= 0:
            ids[m] = ids[p]
            m += 1
            p = nxt[p]
        return m

    cdef size_t run_step(self, _Worker w, size_t before, size_t* run_start, size_t run_len) noexcept nogil:
        """After a chunk's ids went to ``w.ids[before:]`` (BoundlessBPE): a chunk that is one unit
        extends the run (returns its new length); any other ends it, and the run, if it has two
        units or more, is merged by the supermerges in place (``merge_run``), the chunk's ids
        moving up behind it (returns 0). The worker never only counts here (see _Worker)."""
        cdef size_t after = w.ids.size, m
        cdef uint32_t* ids = w.ids.data
        if after == before + 1 and self.unit[ids[before]]:
            if run_len == 0:
                run_start[0] = before
            return run_len + 1
        if run_len >= 2:
            m = self.merge_run(ids + run_start[0], run_len)
            if m < run_len:
                memmove(ids + run_start[0] + m, ids + before, (after - before) * sizeof(uint32_t))
                w.ids.size = run_start[0] + m + (after - before)
        return 0

    cdef void end_run(self, _Worker w, size_t run_start, size_t run_len) noexcept nogil:
        """The run at the end of a piece (it ends there, as at a special token)."""
        if run_len >= 2:
            w.ids.size = run_start + self.merge_run(w.ids.data + run_start, run_len)

    # -- chunks ------------------------------------------------------------------------------
    cdef inline bint same_whole(self, size_t k, uint64_t h, const uint8_t* s, size_t n) noexcept nogil:
        cdef const Slot* slot = &self.whole[k]
        return (slot.hash == h and slot.length == n
                and (n <= 8 or same_bytes(self.arena.data() + self.arena_at[slot.value], s, n)))

    cdef inline int32_t find_whole(self, uint64_t h, const uint8_t* s, size_t n) noexcept nogil:
        """The id of the token whose bytes are s, or -1."""
        cdef size_t mask = (<size_t>1 << self.whole_bits) - 1, k = slot_of(h, self.whole_bits)
        while self.whole[k].length:
            if self.same_whole(k, h, s, n):
                return self.whole[k].value
            k = (k + 1) & mask
        return -1

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
        cdef const Packed* found = w.cache.lookup(k0, k1, h)
        if found != NULL:
            w.emit_packed(found)
            return
        cdef size_t k = self.merge_chunk(s, n, w)
        w.emit_symbols(self.ext.data(), k)
        w.cache.insert(k0, k1, h, w.syms.data(), k, self.ext.data())

    cdef void encode_long(self, const uint8_t* s, size_t n, uint64_t h, _Worker w) noexcept nogil:
        """Emit the ids of a chunk over 15 bytes whose bytes_hash is h: from the cache (chunks met
        before, whole tokens too: one probe for both), else a whole token (then cached), else
        merged now (and cached)."""
        cdef int32_t found, first = 0
        if n <= CACHE_MAX_BYTES and w.cached(h, s, n):
            return
        found = self.find_whole(h, s, n)
        if found >= 0:
            w.emit(found)
            if n <= CACHE_MAX_BYTES:            # (symbol 0 of the one-symbol "ext" &found: the id)
                w.cache.add(h, s, n, &first, 1, &found)
            return
        cdef size_t k = self.merge_chunk(s, n, w)
        w.emit_symbols(self.ext.data(), k)
        if n <= CACHE_MAX_BYTES:
            w.remember(h, s, n, k)

    cdef size_t merge_chunk(self, const uint8_t* s, size_t n, _Worker w) noexcept nogil:
        """BPE of a chunk into w.syms; returns the number of symbols."""
        cdef uint64_t alive[(STACK_CHUNK >> 6) + 1]
        if w.syms.size() < n:
            w.syms.resize(n)
        if n <= STACK_CHUNK:
            return self.backtrack(s, n, w.syms.data(), alive, w.cache.compat, w.cache.compat_bits)
        w.alive.resize((n >> 6) + 1)
        return self.backtrack(s, n, w.syms.data(), w.alive.data(), w.cache.compat, w.cache.compat_bits)

    cdef void encode_piece(self, const uint8_t* s, size_t n, const uint8_t* end, _Worker w) noexcept nogil:
        """Emit the ids of text that holds no special token to encode: split, then each chunk.

        BATCH chunks at a time, in two passes. The first splits them off (split_next), packs each
        short one's key, hashes it and asks for its chunk table entry (a long one: its slot of the
        long-chunk cache); the second looks them up. The entries, which would each be a wait for
        memory, arrive while the splitter runs. A chunk found in its home cache line (two entries), with its ids
        inline, is emitted here (four ids stored at once, the count added: room was reserved for
        the batch); everything else goes through encode_short or encode_long. A BoundlessBPE
        tokenizer then merges runs of chunks that are one unit each (run_step), chunk by chunk
        in the second pass, so that the splitter keeps one call site and stays inlined."""
        cdef size_t start[BATCH]
        cdef uint32_t length[BATCH]
        cdef uint64_t key0[BATCH]
        cdef uint64_t key1[BATCH]
        cdef uint64_t hashes[BATCH]
        cdef size_t i = 0, j, m, q, first
        cdef uint64_t count
        cdef int pattern = self.pattern, bits
        cdef const uint8_t* cls
        cdef const uint8_t* fold
        cdef const Packed* table
        cdef const Packed* x
        cdef bint counting = w.counting, room, runs = self.boundless, hooked = self.boundless or w.mark_pieces
        cdef size_t before, run_start = 0, run_len = 0
        cdef Window window
        if pattern == SPLIT_NONE:
            if n:
                self.encode_chunk(s, n, end, w)
            return
        cls, fold = &self.cls[0], &self.fold[0]
        window_reset(&window)
        while i < n:
            table, bits, first, m = w.cache.table, w.cache.table_bits, i, 0
            while m < BATCH and i < n:
                j = split_next(&window, pattern, s, n, i, cls, fold)
                start[m], length[m] = i, <uint32_t>(j - i)
                if j - i <= PACKED_MAX_BYTES:
                    pack_key(s + i, j - i, end, &key0[m], &key1[m])
                    hashes[m] = packed_hash(key0[m], key1[m])
                    bpe_prefetch(&table[packed_slot(hashes[m], bits)])
                else:
                    key1[m] = 0                 # a long chunk
                    hashes[m] = bytes_hash(s + i, j - i, end)
                    if w.cache.slots != NULL:       # (the whole-token table: only on a miss there)
                        bpe_prefetch(&w.cache.slots[slot_of(hashes[m], w.cache.bits)])
                m += 1
                i = j
            # At most one id per byte: with room for the batch's bytes and 4, the inline ids
            # can be stored 4 at a time (from w.ids.size, then advanced by their count). Merging
            # runs only takes ids away.
            room = not counting and w.ids.reserve(i - first + INLINE_IDS) == 0
            for q in range(m):
                before = w.ids.size
                if key1[q] == 0:
                    self.encode_long(s + start[q], length[q], hashes[q], w)
                else:
                    x = &table[packed_slot(hashes[q], bits)]     # the key's home line: two entries,
                    x += <size_t>((x.k0 != key0[q]) | ((x.k1 & PACKED_KEY_MASK) != key1[q]))  # no branch
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
                        self.encode_short(s + start[q], length[q], key0[q], key1[q], hashes[q], w)
                        table, bits = w.cache.table, w.cache.table_bits     # (it may have grown)
                if hooked:      # (one branch a chunk for both)
                    if runs:    # BoundlessBPE: runs of chunks that are one unit each (run_step)
                        run_len = self.run_step(w, before, &run_start, run_len)
                    else:
                        w.piece_at.push_back(before)
        if runs:
            self.end_run(w, run_start, run_len)

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
            table_bits = min(table_bits, w.cache.max_bits)
            if table_bits > w.cache.table_bits:
                with nogil:                     # tens of MB to zero: the other threads go on
                    grown = w.cache.grow_table_to(table_bits)
                if grown != 0:
                    raise MemoryError()
            w.cache.widen_compat(WIDE_COMPAT_BITS)
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
        the pieces this encoder's pattern splits it into when that is exact. A superword chunk
        is many of them, and most are words met before: encoded from the chunk table (batched
        and prefetched, as in any encoding), not merged. Their encodings put end to end are the
        whole's exactly when every token meets the next compatibly (module docstring: the one
        sequence of reachable tokens whose adjacent pairs are all compatible); within a piece
        they do, so only the pieces' joins are checked. Where one is not, the whole chunk is
        merged."""
        cdef size_t k, at
        cdef bint joined = True
        w.ids.size = 0
        if self.pattern != SPLIT_NONE and self.pattern != 0 and not self.boundless:
            w.piece_at.clear()
            w.mark_pieces = True
            self.encode_piece(s, n, end, w)
            w.mark_pieces = False
            for k in range(1, w.piece_at.size()):
                at = w.piece_at[k]
                if not self.compatible(<int32_t>w.ids.data[at - 1], <int32_t>w.ids.data[at],
                                       w.cache.compat, w.cache.compat_bits):
                    joined = False
                    break
            if joined:
                return
            w.ids.size = 0
        self.encode_chunk(s, n, end, w)

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

    def encode_text(self, const unsigned char[::1] data):
        """Split UTF-8 text with the scanner and encode every chunk: a list of ids."""
        if self.pattern == 0:
            raise ValueError("encode_text needs a named pattern's scanner (set_scanner) or set_no_split")
        cdef _Worker w = _Worker(self, False)
        if data.shape[0]:
            w.ids.reserve(data.shape[0] // 3 + 16)
            with nogil:
                self.encode_piece(&data[0], data.shape[0], &data[0] + data.shape[0], w)
        w.release()
        return w.as_list()

    def encode_str(self, str text, int output, SpecialSet allowed, SpecialSet disallowed):
        """Encode one str: output OUT_LIST (a list), OUT_ARRAY (uint32 array) or OUT_COUNT (an
        int). Returns (result, 0), or (None, 1) if the text holds a special token of
        ``disallowed`` (then nothing is encoded)."""
        cdef TextRef ref
        cdef _Worker w = _Worker(self, output == OUT_COUNT)
        cdef bint bad
        self.check_ready()
        bpe_str_view(text, &ref.data, &ref.length, &ref.kind)
        if output != OUT_COUNT:     # about 3-4 bytes a token, 2 characters at most outside ASCII;
            # from 4 MB on huge pages (_Ids.reserve): faulting them in costs little
            w.ids.reserve(<size_t>ref.length // (3 if ref.kind == 0 else 2) + 64)
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
        if self.ints == NULL:
            self.make_ints()
        return bpe_lists_of_ids(base, &offsets[0], n, self.ints, self.n_ints)

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

    # -- replayed merges, for recovering merges from ranks ----------------------------------
    cdef size_t replay(self, const uint8_t* s, size_t n, int32_t* out) noexcept nogil:
        """BPE of s by replaying the merges: the symbols into out, their number returned."""
        cdef vector[int32_t] parts
        if n <= SHORT_CHUNK:
            self.replay_short(s, n, &parts)
        else:
            self.replay_long(s, n, &parts)
        memcpy(out, parts.data(), parts.size() * sizeof(int32_t))
        return parts.size()

    cdef void replay_short(self, const unsigned char* s, size_t n, vector[int32_t]* out) noexcept nogil:
        """BPE of s by replaying merges, lowest first, over an array rescanned per merge."""
        cdef int32_t sym[SHORT_CHUNK]
        cdef int32_t rank[SHORT_CHUNK]          # rank[i]: what (sym[i], sym[i + 1]) merges into
        cdef size_t m = n, i, best
        cdef int32_t best_rank
        for i in range(n):
            sym[i] = s[i]
        for i in range(n - 1):
            rank[i] = self.merged(sym[i], sym[i + 1])
        while m > 1:
            best_rank, best = NO_MERGE, 0
            for i in range(m - 1):
                if rank[i] < best_rank:
                    best_rank, best = rank[i], i
            if best_rank == NO_MERGE:
                break
            sym[best] = best_rank
            for i in range(best + 1, m - 1):    # close the gap left by sym[best + 1]
                sym[i] = sym[i + 1]
                rank[i] = rank[i + 1]
            m -= 1
            if best + 1 < m:
                rank[best] = self.merged(sym[best], sym[best + 1])
            if best > 0:
                rank[best - 1] = self.merged(sym[best - 1], sym[best])
        for i in range(m):
            out.push_back(sym[i])

    cdef void replay_long(self, const unsigned char* s, size_t n, vector[int32_t]* out) noexcept nogil:
        """BPE of s by replaying merges with a linked list and a min-heap of (merge, position);
        an entry is used only if the pair at its position still makes that merge."""
        cdef vector[int32_t] sym = vector[int32_t](n)
        cdef vector[int64_t] nxt = vector[int64_t](n)
        cdef vector[int64_t] prv = vector[int64_t](n)
        cdef priority_queue[uint64_t] heap     # max-heap of ~(merge << 32 | pos): min merge, leftmost
        cdef size_t i
        cdef int32_t r
        cdef int64_t p, q
        cdef uint64_t top
        for i in range(n):
            sym[i] = s[i]
            nxt[i] = <int64_t>i + 1 if i + 1 < n else -1
            prv[i] = <int64_t>i - 1
        for i in range(n - 1):
            r = self.merged(sym[i], sym[i + 1])
            if r != NO_MERGE:
                heap.push(~((<uint64_t>r << 32) | i))
        while not heap.empty():
            top = ~heap.top()
            heap.pop()
            r = <int32_t>(top >> 32)
            p = <int64_t>(top & 0xFFFFFFFFull)
            q = nxt[p]
            if sym[p] < 0 or q < 0 or self.merged(sym[p], sym[q]) != r:
                continue                         # stale: this position changed since the push
            sym[p] = r
            sym[q] = -1
            nxt[p] = nxt[q]
            if nxt[p] >= 0:
                prv[nxt[p]] = p
                r = self.merged(sym[p], sym[nxt[p]])
                if r != NO_MERGE:
                    heap.push(~((<uint64_t>r << 32) | <uint64_t>p))
            if prv[p] >= 0:
                r = self.merged(sym[prv[p]], sym[p])
                if r != NO_MERGE:
                    heap.push(~((<uint64_t>r << 32) | <uint64_t>prv[p]))
        p = 0
        while p >= 0:
            out.push_back(sym[p])
            p = nxt[p]


@cython.final
cdef class _Ids:
    """A growable uint32 buffer of token ids that NumPy can take over without a copy (buffer
    protocol). Room is reserved ahead (pages the ids never reach are never touched), and once it
    is exported nothing is added. Out of memory, ids are dropped and ``failed`` is set, for the
    caller to raise MemoryError once it holds the GIL again."""
    cdef uint32_t* data
    cdef size_t size, capacity
    cdef bint failed
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]

    def __dealloc__(self):
        free(self.data)

    cdef int reserve(self, size_t n) noexcept nogil:
        """Room for n more ids; -1 if out of memory. A first reservation of megabytes takes
        huge pages where there are (big_alloc): faulting in the ids costs less."""
        cdef uint32_t* bigger
        if self.size + n <= self.capacity:
            return 0
        n = max(self.size + n, 2 * self.capacity)
        if self.data == NULL:
            bigger = <uint32_t*>big_alloc(n * sizeof(uint32_t))
        else:
            bigger = <uint32_t*>realloc(self.data, n * sizeof(uint32_t))
        if bigger == NULL:
            self.failed = True
            return -1
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
    """What one thread keeps between calls: its chunk table, the cache of longer chunks, the
    answers of ``compatible`` and a UTF-8 buffer.

    A cache is used by one thread at a time; the encoder lends its caches out per call and keeps
    them (``MergeEncoder.caches``), so repeated words are merged once per thread, not per call.

    ``table``: chunks of at most 15 bytes -> their ids, as packed keys (``Packed``, see
    _encode_hash.pxd). It starts as a copy of the encoder's ``seed`` (every token of at most 15
    bytes -> its id: tiktoken's rule that a chunk that is a token is that token) and the chunks
    merged are added; up to 4 ids sit in the entry, a longer result in ``spill`` (the entry's
    count is SPILLED, ids[0] the offset there and ids[1] the count). It doubles past half full
    (a fuller table sends more probes past the key's home line: 6% slower on mix33, cl100k),
    up to ``max_bits``; full at that size, it starts afresh from the seed, in place (``resets``
    counts that). The seed belongs to the encoder that made the cache, which outlives it.

    ``slots``: chunks over 15 bytes merged before: bytes (``Slot``) -> an offset in ``store``,
    where the chunk's token count, its ids and its bytes follow. When full it starts afresh.

    ``compat`` keeps answers of ``MergeEncoder.compatible``, direct-mapped, the last per slot:
    (a << 33 | b << 1 | answer), all ones when empty."""
    cdef Packed* table
    cdef int table_bits
    cdef size_t table_used
    cdef vector[uint32_t] spill
    cdef const Packed* seed
    cdef int seed_bits
    cdef size_t seed_used
    cdef int max_bits
    cdef size_t resets
    cdef Slot* slots
    cdef int bits
    cdef size_t size
    cdef vector[uint32_t] store
    cdef uint64_t* compat
    cdef int compat_bits
    cdef uint8_t* utf8                          # not zeroed: only what to_utf8 wrote is read
    cdef size_t utf8_size
    cdef _Ids spare                             # an id buffer kept for scratch (see _Worker)

    def __cinit__(self):
        self.widen_compat(COMPAT_BITS)

    cdef int start_table(self, MergeEncoder enc) except -1:
        """The chunk table, a copy of the encoder's seed (made now if it is not yet)."""
        if enc.seed == NULL:
            enc.build_seed()
        self.seed, self.seed_bits, self.seed_used = enc.seed, enc.seed_bits, enc.seed_used
        self.max_bits = enc.table_max_bits
        if self.restart_table() != 0:
            raise MemoryError()
        return 0

    cdef int restart_table(self) noexcept nogil:
        """The table as the seed, nothing merged in it. 0 if done (else it is left as it was).
        A table grown past the seed's size starts afresh where it is, the seed's entries put
        back (no new memory, no growing again)."""
        cdef size_t bytes = (<size_t>1 << self.seed_bits) * sizeof(Packed), i, j, mask
        cdef Packed* table
        if self.table != NULL and self.table_bits > self.seed_bits:
            mask = (<size_t>1 << self.table_bits) - 1
            memset(self.table, 0, (mask + 1) * sizeof(Packed))
            for i in range(<size_t>1 << self.seed_bits):
                if self.seed[i].k1 != 0:
                    j = packed_slot(packed_hash(self.seed[i].k0, self.seed[i].k1 & PACKED_KEY_MASK), self.table_bits)
                    while self.table[j].k1 != 0:
                        j = (j + 1) & mask
                    self.table[j] = self.seed[i]
            self.table_used = self.seed_used
            self.spill.clear()
            return 0
        table = <Packed*>big_alloc(bytes)
        if table == NULL:
            return -1
        memcpy(table, self.seed, bytes)
        free(self.table)
        self.table, self.table_bits, self.table_used = table, self.seed_bits, self.seed_used
        self.spill.clear()
        return 0

    cdef int grow_table(self) noexcept nogil:
        """Double the table, or start afresh at its limit. 0 if done."""
        if self.table_bits + 1 > self.max_bits:
            self.resets += 1
            return self.restart_table()
        return self.grow_table_to(self.table_bits + 1)

    cdef int grow_table_to(self, int bits) noexcept nogil:
        """The table at 2**bits entries (more than now), its entries moved over. 0 if done.
        Straight to the size a job will need (``lay_out_chunks``' hint) instead of doubling up
        to it: every doubling's table is fresh memory, zeroed page by page by the system on
        first touch (the largest part of growing on a virtual machine), and their sizes add
        up to the last one's again."""
        cdef size_t i, j, mask = (<size_t>1 << bits) - 1, old_size = <size_t>1 << self.table_bits
        cdef Packed* table
        table = <Packed*>big_alloc((mask + 1) * sizeof(Packed))
        if table == NULL:
            return -1
        memset(table, 0, (mask + 1) * sizeof(Packed))
        for i in range(old_size):
            if self.table[i].k1 != 0:
                j = packed_slot(packed_hash(self.table[i].k0, self.table[i].k1 & PACKED_KEY_MASK), bits)
                while table[j].k1 != 0:
                    j = (j + 1) & mask
                table[j] = self.table[i]
        free(self.table)
        self.table, self.table_bits = table, bits
        return 0

    cdef inline const Packed* lookup(self, uint64_t k0, uint64_t k1, uint64_t h) noexcept nogil:
        """The entry of the packed key (k0, k1) whose hash is h, or NULL. An entry found past
        its home line is moved into it (move_home), so the chunks that recur get there."""
        cdef size_t mask = (<size_t>1 << self.table_bits) - 1, home = packed_slot(h, self.table_bits), j = home
        cdef Packed* x
        while True:
            x = &self.table[j]
            if x.k0 == k0 and (x.k1 & PACKED_KEY_MASK) == k1:
                return x if ((j - home) & mask) < 2 else self.move_home(j, home)
            if x.k1 == 0:
                return NULL
            j = (j + 1) & mask

    cdef Packed* move_home(self, size_t j, size_t home) noexcept nogil:
        """Swap entry j with one of its home line (home, home + 1), preferably one that is not
        at home there either; return where entry j now is. Linear probing still finds both:
        every entry from the other's home to j is taken (nothing is ever deleted, only the
        whole table at once), so moving it forward to j leaves its probe unbroken."""
        cdef size_t v = home + 1
        cdef Packed moved
        if packed_slot(packed_hash(self.table[home].k0, self.table[home].k1 & PACKED_KEY_MASK),
                       self.table_bits) != home:
            v = home
        moved = self.table[v]
        self.table[v] = self.table[j]
        self.table[j] = moved
        return &self.table[v]

    cdef void insert(self, uint64_t k0, uint64_t k1, uint64_t h, const int32_t* syms, size_t count,
                     const int32_t* ext) noexcept nogil:
        """Remember the ids (ext of syms) of a chunk not in the table (none if out of memory)."""
        cdef size_t j, mask, i
        cdef Packed* x
        if 2 * (self.table_used + 1) > (<size_t>1 << self.table_bits) and self.grow_table() != 0:
            return
        mask = (<size_t>1 << self.table_bits) - 1
        j = packed_slot(h, self.table_bits)
        while self.table[j].k1 != 0:
            j = (j + 1) & mask
        x = &self.table[j]
        x.k0 = k0
        x.ids[0], x.ids[1], x.ids[2], x.ids[3] = 0, 0, 0, 0
        if count <= INLINE_IDS:
            for i in range(count):
                x.ids[i] = <uint32_t>ext[syms[i]]
            x.k1 = k1 | (<uint64_t>count << 60)
        else:
            x.ids[0], x.ids[1] = <uint32_t>self.spill.size(), <uint32_t>count
            for i in range(count):
                self.spill.push_back(<uint32_t>ext[syms[i]])
            x.k1 = k1 | (<uint64_t>SPILLED << 60)
        self.table_used += 1

    cdef int utf8_room(self, size_t n) noexcept nogil:
        """``utf8`` of at least n bytes (its content is not kept); -1 if out of memory."""
        if n <= self.utf8_size:
            return 0
        free(self.utf8)
        n = max(n, 2 * self.utf8_size)
        self.utf8 = <uint8_t*>malloc(n)
        self.utf8_size = n if self.utf8 != NULL else 0
        return 0 if self.utf8 != NULL else -1

    cdef void trim(self) noexcept nogil:
        """Give back a UTF-8 buffer over KEEP_UTF8 bytes (one long str that had no place to be
        cut into blocks)."""
        if self.utf8_size > KEEP_UTF8:
            free(self.utf8)
            self.utf8 = NULL
            self.utf8_size = 0

    cdef int widen_compat(self, int bits) except -1:
        """Make ``compat`` 2**bits answers if it is smaller (it starts empty: answers found under
        another size would sit in the wrong slots). Encoding the distinct chunks of a word table,
        the pairs of tokens that meet are millions: a table of 2**16 forgets them (15% of the
        time is the walk down the merges again, on a superword table)."""
        cdef uint64_t* table
        if self.compat != NULL and bits <= self.compat_bits:
            return 0
        table = <uint64_t*>malloc((<size_t>1 << bits) * sizeof(uint64_t))
        if table == NULL:
            raise MemoryError()
        memset(table, 0xFF, (<size_t>1 << bits) * sizeof(uint64_t))   # no key is all ones
        free(self.compat)
        self.compat, self.compat_bits = table, bits
        return 0

    def __dealloc__(self):
        free(self.table)
        free(self.slots)
        free(self.compat)
        free(self.utf8)

    cdef inline const uint32_t* find(self, uint64_t h, const uint8_t* s, size_t n) noexcept nogil:
        """Where the count and ids of a chunk over 15 bytes are stored, or NULL."""
        cdef size_t mask, k, at
        if self.slots == NULL:
            return NULL
        mask = (<size_t>1 << self.bits) - 1
        k = slot_of(h, self.bits)
        while self.slots[k].length:
            if self.slots[k].hash == h and self.slots[k].length == n:
                at = <size_t>self.slots[k].value
                if n <= 8 or same_bytes(<const uint8_t*>(self.store.data() + at + 1 + self.store[at]), s, n):
                    return self.store.data() + at
            k = (k + 1) & mask
        return NULL

    cdef void add(self, uint64_t h, const uint8_t* s, size_t n, const int32_t* syms, size_t count,
                  const int32_t* ext) noexcept nogil:
        """Remember the ids (ext of syms) of a chunk not in the cache."""
        cdef size_t k, at, i
        if 2 * (self.size + 1) > ((<size_t>1 << self.bits) if self.slots != NULL else 0) and self.grow() != 0:
            return
        at = self.store.size()
        self.store.push_back(<uint32_t>count)
        for i in range(count):
            self.store.push_back(<uint32_t>ext[syms[i]])
        if n > 8:
            self.store.resize(at + 1 + count + ((n + 3) >> 2))
            memcpy(self.store.data() + at + 1 + count, s, n)
        k = slot_of(h, self.bits)
        while self.slots[k].length:
            k = (k + 1) & ((<size_t>1 << self.bits) - 1)
        self.slots[k].hash, self.slots[k].length, self.slots[k].value = h, <uint32_t>n, <int32_t>at
        self.size += 1

    cdef int grow(self) noexcept nogil:
        """Double the table (rehashing), or empty it at the size limit. 0 if done."""
        cdef int bits = CACHE_MIN_BITS if self.slots == NULL else self.bits + 1
        cdef Slot* old = self.slots
        cdef size_t i, k, mask, old_size = (<size_t>1 << self.bits) if old != NULL else 0
        if bits > CACHE_MAX_BITS:
            memset(self.slots, 0, old_size * sizeof(Slot))
            self.store.clear()
            self.size = 0
            return 0
        self.slots = <Slot*>calloc(<size_t>1 << bits, sizeof(Slot))
        if self.slots == NULL:
            self.slots = old
            return -1
        self.bits = bits
        mask = (<size_t>1 << bits) - 1
        for i in range(old_size):
            if old[i].length:
                k = slot_of(old[i].hash, bits)
                while self.slots[k].length:
                    k = (k + 1) & mask
                self.slots[k] = old[i]
        free(old)
        return 0


cdef size_t next_cut(const TextRef* t, size_t i, const uint8_t* cls) noexcept nogil:
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
    cdef vector[Py_ssize_t] blocks              # the batch blocks this worker encoded ...
    cdef vector[size_t] block_at                # ... and where each one's ids start in ids
    cdef bint mark_pieces                       # encode_piece notes where each chunk's ids start ...
    cdef vector[size_t] piece_at                # ... here (encode_whole)

    def __cinit__(self, MergeEncoder enc, bint counting, bint scratch=False):
        """scratch: the ids are read before ``release`` and never leave (a batch copies them
        out): they go in the cache's kept buffer, whose pages are already there. A batch's
        workers grow their ids from nothing, on fresh pages each call: 8% of a 2-thread batch of
        mix33's lines (cl100k). One str's ids are reserved at once, on huge pages, and gain
        nothing from it."""
        self.enc, self.counting = enc, counting and not enc.boundless   # runs need the ids
        self.cache = enc.caches.pop() if enc.caches else _ChunkCache()
        if self.cache.table == NULL:
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
            self.cache.trim()
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
                self.ids.extend(self.cache.spill.data() + x.ids[0], count)
        elif not self.counting:
            self.ids.extend(x.ids, count)
        if self.counting:
            self.count += count

    cdef inline bint cached(self, uint64_t h, const uint8_t* s, size_t n) noexcept nogil:
        """Emit the ids of a chunk merged before; False if it was not."""
        cdef const uint32_t* found = self.cache.find(h, s, n)
        if found == NULL:
            return False
        if self.counting:
            self.count += found[0]
        else:
            self.ids.extend(found + 1, found[0])
        return True

    cdef inline void remember(self, uint64_t h, const uint8_t* s, size_t n, size_t count) noexcept nogil:
        """Cache the chunk just merged (its symbols are in syms)."""
        self.cache.add(h, s, n, self.syms.data(), count, self.enc.ext.data())

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
        # A cut is safe for these patterns (next_cut); no special token may hold the "\n" there.
        blocks = ((self.enc.pattern == PAT_CL100K or self.enc.pattern == PAT_O200K
                   or self.enc.pattern == PAT_GPT2)
                  and (allowed is None or not allowed.newline)
                  and (disallowed is None or not disallowed.newline))
        part.kind = ref.kind
        while True:
            stop = next_cut(ref, start + BLOCK_CHARS, &self.enc.cls[0]) if blocks else size
            part.data = <const uint8_t*>ref.data + start * <size_t>ref.kind
            part.length = <Py_ssize_t>(stop - start)
            if self.cache.utf8_room(utf8_capacity(&part)) != 0:
                self.ids.failed = True          # (MemoryError at release)
                return False
            s, n = self.cache.utf8, to_utf8(&part, self.cache.utf8)
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
        if self.enc.ints == NULL:
            self.enc.make_ints()
        return bpe_list_of_ids(self.ids.data, self.ids.size, self.enc.ints, self.enc.n_ints)

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
    cdef Py_ssize_t n, block
    cdef int64_t[::1] counts
    cdef object counts_np
    cdef SpecialSet allowed, disallowed
    cdef list workers
    cdef atomic[Py_ssize_t] next_block
    cdef atomic[Py_ssize_t] first_bad           # the first text found holding a disallowed token

    def __cinit__(self, MergeEncoder enc, texts, bint counting, SpecialSet allowed,
                  SpecialSet disallowed, int workers):
        cdef Py_ssize_t i, chars = 0
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
        self.block = max(1, min(self.n * 65536 // max(chars, 1), self.n // max(8 * workers, 1)))
        workers = max(1, min(workers, (self.n + self.block - 1) // self.block))
        self.counts_np = np.zeros(self.n, np.int64)
        self.counts = self.counts_np
        self.workers = [_Worker(enc, counting, True) for _ in range(workers)]
        self.next_block.store(0)
        self.first_bad.store(self.n)

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
        bad = self.first_bad.load()
        return bad if bad < self.n else -1

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
            b = self.next_block.fetch_add(1)
            if b * self.block >= self.n or b * self.block > self.first_bad.load():
                return
            w.blocks.push_back(b)
            w.block_at.push_back(w.ids.size)
            end = min(self.n, (b + 1) * self.block)
            for i in range(b * self.block, end):
                before = w.count if w.counting else w.ids.size
                if w.encode_ref(&self.refs[i], self.allowed, self.disallowed):
                    self.note_bad(i)
                    return
                self.counts[i] = <int64_t>((w.count if w.counting else w.ids.size) - before)

    cdef void note_bad(self, Py_ssize_t i) noexcept nogil:
        cdef Py_ssize_t seen = self.first_bad.load()
        while i < seen and not self.first_bad.compare_exchange_weak(seen, i):
            pass

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
        cdef size_t j, first, count
        for w in self.workers:
            for j in range(w.blocks.size()):
                first = w.blocks[j] * self.block
                count = off[min(<size_t>self.n, first + <size_t>self.block)] - off[first]
                if count:
                    memcpy(&out[off[first]], w.ids.data + w.block_at[j], count * sizeof(uint32_t))
        return ids, offsets


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
            enc.replay_short(s, len(token), &parts)
        else:
            enc.replay_long(s, len(token), &parts)
        if parts.size() != 2:
            return np.asarray(merges[:k]).copy(), np.asarray(result[:k]).copy(), t
        merges[k, 0], merges[k, 1], result[k] = enc.ext[parts[0]], enc.ext[parts[1]], ids[t]
        enc.add_merge(parts[0], parts[1], ids[t])
        k += 1
    return np.asarray(merges[:k]).copy(), np.asarray(result[:k]).copy(), -1
