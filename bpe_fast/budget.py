"""One memory budget for the whole job (``memory_budget=``, CLI ``--memory-budget``): the peak of
the process tree, the counting and the merging alike.

The counting's share: how many worker processes count, and how big each one's table may grow
before it is written to disk (``counting_share``). The merging's plan: before the kernel starts,
what it will hold at its peak, predicted from the word table (``plan_merging``); a table whose
merging cannot fit is refused then, in one line that says what it needs (``MemoryBudgetError``),
never killed for memory half-way. The plan's model follows what the kernel allocates
(_kernel.pyx and its parts, _layout/_pairs/_heap/_rewrite.pxd); benchmarks/bench_budget.py
measures how close it comes, and tests/test_budget.py holds it to a stated factor. Parity-aware
training's merging is planned the same way from its languages' tables (``plan_parity_merging``,
after training/variants/_parity.pyx).
"""
from __future__ import annotations

import ctypes
import math
import os
from dataclasses import dataclass

import numpy as np

from . import arguments
from .arguments import INT64_MAX
from .errors import ArgumentError, MemoryBudgetError

MiB = 1 << 20

def checked_budget(budget) -> int | None:
    """``memory_budget`` as given (None: no budget), checked: a number of bytes, 1 MiB at least."""
    if budget is None:
        return None
    budget = arguments.integer(budget, "memory_budget")
    if not 1 << 20 <= budget <= INT64_MAX:
        raise ArgumentError(f"memory_budget must be a number of bytes from 1 MiB to 2**63 - 1, got {budget}")
    return budget


# -- the counting's share ------------------------------------------------------------------------
# Measured on benchmarks/make_corpus.py's corpora (PSS, 2026-11-27): the parent process holds
# about 50 MiB before any table; a forked worker adds about 30 MiB of its own; a worker whose
# table may hold b bytes peaks at about 1.5 b above that (the table's slots double up to b, and
# while they double the old and the new slots are both held). The budget is a power of two so
# that the slots stop exactly at it.
PARENT_BYTES = 50 * MiB
WORKER_BYTES = 30 * MiB
TABLE_PEAK = 1.5
ARENA_SLOT_BYTES = 8 * MiB          # counting/workers.py's _Arena: 2 n + 1 slots shared with n workers
SMALLEST_TABLE = 16 * MiB           # below this a worker spills too often to be worth its process
SPILL_FLOOR = 1 * MiB               # the least a worker's table may hold (the option's minimum)


def counting_share(budget: int, workers: int, most: int, fixed: bool = False) -> tuple[int, int]:
    """The workers and each one's table budget (bytes) that keep counting under ``budget``:
    all ``workers`` if each can keep a table of SMALLEST_TABLE (or if they are ``fixed``: the
    user chose them), else fewer, down to one; each table at most ``most`` (the default's,
    counting.default_memory_budget), a power of two, and SPILL_FLOOR at least."""
    for n in range(max(workers, 1), 0, -1):
        if fixed:
            return n, max(SPILL_FLOOR, min(_table_budget(budget, n), most))
        table = _table_budget(budget, n)
        if table >= SMALLEST_TABLE or n == 1:
            return n, max(SPILL_FLOOR, min(table, most))
    raise AssertionError("unreachable")


def _table_budget(budget: int, n: int) -> int:
    room = (budget - PARENT_BYTES - ARENA_SLOT_BYTES * (2 * n + 1)) / n - WORKER_BYTES
    room = int(room / TABLE_PEAK)
    return 1 << (room.bit_length() - 1) if room >= SPILL_FLOOR else SPILL_FLOOR


def counting_peak(workers: int, table_budget: int) -> int:
    """The counting tree's predicted peak for ``counting_share``'s answer."""
    arena = ARENA_SLOT_BYTES * (2 * workers + 1)
    return int(PARENT_BYTES + arena + workers * (WORKER_BYTES + TABLE_PEAK * table_budget))


# -- the merging's plan --------------------------------------------------------------------------
# What the kernel holds (_kernel.pyx), in bytes:
# * the corpus (_layout.pxd): an int32 slot per byte of the table, a bit per slot where words
#   start, an int32 word index per slot of the heavy words (counted HEAVY times or more) and an
#   int64 count per heavy word;
# * per token id (first id + merges): its length, the pair ids by left and right symbol, the
#   merge's new ids, and on each thread a ledger of two int32 and two int64 vectors; the
#   by-symbol lists' headers (two vectors of 24 bytes);
# * the occurrence lists (_pairs.pxd): LEB128 gaps, about LIST_BYTES a pair position of the table
#   (the positions of pairs made by merges are added, those of merged pairs dropped; capacities
#   round up) -- measured 1.7-2.1 on long-tailed corpora;
# * the tracked pairs: key, count, list header, last position, heap entry and by-symbol entries,
#   about PAIR_BYTES each, and about TRACKED_PER_MERGE of them per merge (measured 2-15: 7 on
#   1 GB at 32,768), never more than the table's pair positions;
# * while laying out, the word table itself (the caller's, or freed before the pair lists when
#   only the trainer holds it) and the order of the words (4 bytes a word; the counts that sort
#   them, 8 bytes a word, go before the corpus is made).
HEAVY = 256
LIST_BYTES = 2.2
PAIR_BYTES = 100
TRACKED_PER_MERGE = 10
LAYOUT_TEMP_PER_WORD = 4


@dataclass(frozen=True)
class MergingPlan:
    """The predicted peak of the merging, by phase, in bytes."""
    process: int            # the process before the kernel (interpreter, libraries, the table)
    table: int              # of which the word table's arrays
    table_freed: bool       # whether the table is let go once laid out (train(): yes)
    layout: int             # the kernel's bytes while it lays the table out (table aside)
    merging: int            # the kernel's bytes at its peak while merging

    @property
    def kernel(self) -> int:
        """The kernel's own peak (its allocations, not the process around it)."""
        return max(self.layout, self.merging)

    @property
    def peak(self) -> int:
        """The process's predicted peak: what it holds now, plus the kernel, less the table if it
        goes before the merging."""
        after_layout = self.merging - (self.table if self.table_freed else 0)
        return self.process + max(self.layout, after_layout)

    def describe(self) -> str:
        return (f"about {self.peak / MiB:,.0f} MiB (the process {self.process / MiB:,.0f} MiB with the word table's "
                f"{self.table / MiB:,.0f} MiB, then the kernel {self.kernel / MiB:,.0f} MiB)")


def kernel_bytes(offsets: np.ndarray, counts: np.ndarray, n_merges: int, threads: int = 1,
                 first_id: int = 256) -> tuple[int, int]:
    """The kernel's predicted bytes (layout, merging) for a word table given by its ``offsets``
    and ``counts`` and ``n_merges`` merges on ``threads`` threads (the table's own arrays aside)."""
    n_words = len(counts)
    n_symbols = int(offsets[-1]) if n_words else 0
    lengths = np.diff(offsets)
    heavy = counts >= HEAVY
    heavy_slots = int(lengths[heavy].sum())
    positions = n_symbols - n_words                         # pairs in the table, each word once
    merges = max(0, min(n_merges, positions))
    ids = first_id + merges
    corpus = 4 * n_symbols + n_symbols // 8 + 4 * heavy_slots + 8 * int(heavy.sum())
    per_id = ids * (4 + 8 + 8 + 48 + threads * 24)
    layout = corpus + per_id + LAYOUT_TEMP_PER_WORD * n_words
    tracked = min(TRACKED_PER_MERGE * merges, positions)      # no more pairs than places for them
    merging = corpus + per_id + int(LIST_BYTES * positions) + PAIR_BYTES * tracked
    return layout, merging


def plan_merging(table, n_merges: int, threads: int, first_id: int = 256, table_freed: bool = False) -> MergingPlan:
    """The plan for training ``table`` (a WordTable, in memory now) to ``n_merges`` merges. The
    memory the counting freed goes back to the system first (``give_back_free_memory``)."""
    layout, merging = kernel_bytes(table.offsets, table.counts, n_merges, threads, first_id)
    held = table.symbols.nbytes + table.offsets.nbytes + table.counts.nbytes
    give_back_free_memory()             # (kernel_bytes's own temporaries too)
    return MergingPlan(process=resident_bytes(), table=held, table_freed=table_freed, layout=layout,
                       merging=merging)


def give_back_free_memory() -> None:
    """Return the C heap's free pages to the system (glibc's malloc_trim): counting in this
    process leaves tens of MiB freed but still resident (19 MiB of 123 on 300 MB counted here),
    which would count against the merging. Elsewhere nothing to do."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):       # not glibc
        pass


def resident_bytes() -> int:
    """This process's resident memory now (Linux: /proc/self/statm; elsewhere 0: unknown)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def check_fits(plan: MergingPlan, budget: int, kept: str | None) -> None:
    """Raise MemoryBudgetError, one line, if the plan's peak is past ``budget``: what it needs,
    and where the counted table waits (``kept``) to be trained from with more."""
    if plan.peak <= budget:
        return
    where = (f"; the counted word table is kept in {kept}: train from it with `bpe-fast train --counts {kept}` "
             f"(Python: train_from_table(WordTable.load(...))) and a budget of {_mib_up(plan.peak)}M or more"
             if kept else f"; give a budget of {_mib_up(plan.peak)}M or more")
    raise MemoryBudgetError(f"memory_budget (--memory-budget) {budget / MiB:,.0f} MiB is too small for the merging: "
                            f"it needs {plan.describe()}, before merging starts{where}")


def _mib_up(n: int) -> int:
    return -(-n // MiB)


# -- the parity-aware merging's plan -------------------------------------------------------------
# What parity-aware training holds (training/variants/_parity.pyx's ParityCorpus: one for the
# training words, with a heap per language, and one for the dev words, without), in bytes:
# * the words, laid out once: a WordSlot (16) per token of the words, a count (8) and a
#   language (4) per word;
# * per token id (first id + merges): its length and where its bytes start (8 + 8) and the
#   merge's memo (24), in vectors that double (the next power of two of the ids); its bytes,
#   TOKEN_BYTES an id with their doubling (measured: 2 MiB at 131,328 ids);
# * the pairs, one per (language, left, right) ever made, never let go: count 8, left, right
#   and language 4 each, a flag 1, its occurrence list's header 24, in vectors that double;
#   the map of their ids (core/_pairmap.pxd): 12 bytes a slot, 2**18 slots at first, four
#   times as many when one more pair would fill it past half (which holds the old map too,
#   a quarter of the new, while it copies);
# * the heaps: an entry (16) per pair at most (each pair is pushed once, when it is made: every
#   pair whose count rises holds the new token; a stale entry is popped before it is pushed
#   again), in vectors that double;
# * the pairs are predicted only within 0.8-1.8x (below), so where their count falls within a
#   doubling is not known: a vector that doubles is taken at its average over one (DOUBLED, 1 /
#   ln 2 = 1.44 times what it holds), the map at its average over a quadrupling (2 to 8 slots a
#   pair, 6 / ln 4 = 4.3), rather than at the step the predicted count would give;
# * the occurrence lists: an int32 per pair position at first, exactly; merges add the places
#   of the pairs they make and drop the merged pair's: LIST_BYTES_PARITY a position, with
#   capacities (measured up to 7.2 on the tuning corpora, benchmarks/RESULTS.md "Parity-aware
#   training's memory plan"); each list is a block of the C heap: ALLOC_BYTES a pair for its
#   header and rounding (the process's peak over the kernel's capacities, measured 8-63 a pair
#   on tables of millions of positions);
# * how many pairs: each language's distinct byte pairs at first (counted from its table), then
#   each merge makes the new token's distinct neighbours in every language where the pair is:
#   PAIRS_PER_MERGE at first for a language of TRIPLES_SCALE distinct byte triples (the
#   contexts a merge's neighbours come from), times (triples / TRIPLES_SCALE) **
#   PAIRS_TRIPLES_POWER; fewer as the merges go deeper into the language's words, the rate
#   falling as (1 + PAIRS_DEPTH x merges / the language's positions) ** -PAIRS_DECAY; never more
#   than two a position (each rewrite makes two at most, and takes a position). The constants
#   are fitted to the pairs counted on the tuning corpora (RESULTS.md, "Parity-aware training's
#   memory plan": the shared multilingual text and make_corpus.py's, 2-5 languages, 256-131,072
#   merges), which they predict within 0.8-1.8x (corpora of one shape differ that much). With
#   global merges, the pairs of all languages together too, no more than the languages' own
#   when the global merges end;
# * while the corpus is laid out: the first count's three tables of 16 bytes a (language, byte,
#   byte) (from bytes), and the arrays handed to it: the tokens (int32 a byte), the words'
#   offsets, counts and languages (8 + 8 + 4 a word); with a base, each table's tokens and
#   offsets beside them while they are joined;
# * the dev corpus is laid out once the training one is; both are held while merging.
TOKEN_BYTES = 16
PAIR_BYTES_PARITY = 8 + 4 + 4 + 4 + 1 + 24
HEAP_ENTRY_BYTES = 16
DOUBLED = 1 / math.log(2)              # a doubling vector's capacity over its size, on average
MAP_SLOTS_PER_PAIR = 6 / math.log(4)   # the map's slots a pair, on average over a quadrupling
LIST_BYTES_PARITY = 7.5
ALLOC_BYTES = 32
PAIRS_PER_MERGE = 50
TRIPLES_SCALE = 10_000
PAIRS_TRIPLES_POWER = 0.25
PAIRS_DEPTH = 500
PAIRS_DECAY = 0.7
FIRST_MAP_SLOTS = 1 << 18
FIRST_COUNT_CELL = 8 + 4 + 4
MOST_DENSE_LANGUAGES = 64            # _parity.pyx's _count_bytes: up to 64 languages


@dataclass(frozen=True)
class LanguageShape:
    """What the plan needs of one language's word table: its tokens (bytes, or with a base at
    most as many), its words, its distinct pairs of tokens at first, and its distinct byte
    triples within words (how varied its contexts are)."""
    tokens: int
    words: int
    first_pairs: int
    triples: int

    @property
    def positions(self) -> int:
        return self.tokens - self.words


def language_shape(table, from_bytes: bool = True, block: int = 1 << 20) -> LanguageShape:
    """The shape of a WordTable for ``parity_kernel_bytes``: its distinct byte pairs and byte
    triples within words, marked in tables of 2**16 and 2**24 flags (16 MiB), a block of the
    table at a time; with a base, its positions bound its first pairs."""
    n_sym, n_words, s, offsets = table.n_symbols, len(table), table.symbols, table.offsets
    pairs, triples = np.zeros(1 << 16, dtype=bool), np.zeros(1 << 24, dtype=bool)
    for at in range(0, n_sym - 1, block):
        end = min(at + block, n_sym - 1)                    # the pairs that start at at .. end - 1
        starts = np.zeros(end - at + 2, dtype=bool)         # where words start, at .. end + 1
        lo, hi = np.searchsorted(offsets, [at, end + 2])
        starts[offsets[lo:hi] - at] = True
        code = (s[at:end].astype(np.int32) << 8) | s[at + 1:end + 1]
        inside = ~starts[1:end - at + 1]
        pairs[code[inside]] = True
        last = min(end, n_sym - 2)                          # the triples that start at at .. last - 1
        if last > at:
            inside = inside[:last - at] & ~starts[2:last - at + 2]
            triples[((code[:last - at] << 8) | s[at + 2:last + 2])[inside]] = True
    first_pairs = int(np.count_nonzero(pairs)) if from_bytes else max(0, n_sym - n_words)
    return LanguageShape(n_sym, n_words, first_pairs, int(np.count_nonzero(triples)))


def parity_pairs(shapes: list[LanguageShape], n_merges: int) -> int:
    """The pairs of every language after ``n_merges`` merges (the model above)."""
    total = 0
    for s in shapes:
        rate = PAIRS_PER_MERGE * (max(s.triples, 1) / TRIPLES_SCALE) ** PAIRS_TRIPLES_POWER
        made = rate * n_merges * (1 + PAIRS_DEPTH * n_merges / max(s.positions, 1)) ** -PAIRS_DECAY
        total += s.first_pairs + int(min(made, 2 * s.positions))
    return total


def _doubled(n: int) -> int:
    """A vector's capacity after ``n`` push_backs: the next power of two."""
    return 1 << max(0, int(n) - 1).bit_length() if n > 0 else 0


def _corpus_parts(shapes: list[LanguageShape], pairs: int, ids: int, heaps: bool, list_bytes: float,
                  first_pairs: int) -> dict[str, int]:
    """One ParityCorpus's bytes by part (ParityCorpus.memory()'s names, and two it does not
    count: the map's old slots while it grows, and the C heap's blocks around the lists),
    holding ``pairs`` pairs and ``ids`` token ids, its lists at ``list_bytes`` a position."""
    pair_map = int(12 * max(FIRST_MAP_SLOTS, MAP_SLOTS_PER_PAIR * pairs))
    return {"slots": 16 * sum(s.tokens for s in shapes), "words": 12 * sum(s.words for s in shapes),
            "per_id": 40 * _doubled(ids) + TOKEN_BYTES * ids, "pair_map": pair_map,
            "pairs": int(PAIR_BYTES_PARITY * DOUBLED * pairs),
            "lists": int(list_bytes * sum(s.positions for s in shapes)),
            "heaps": int(HEAP_ENTRY_BYTES * DOUBLED * pairs) if heaps else 0,
            "touched": 4 * _doubled(first_pairs),         # every first pair is touched by the first count
            "map_growth": pair_map // 4, "allocator": ALLOC_BYTES * pairs}


def parity_corpus_parts(shapes: list[LanguageShape], n_merges: int, first_id: int = 256, global_merges: int = 0,
                        heaps: bool = True) -> dict[str, int]:
    """One ParityCorpus's predicted bytes by part after ``n_merges`` merges numbered from
    ``first_id``, the first ``global_merges`` of them over all languages together."""
    merges = max(0, n_merges)
    first = sum(s.first_pairs for s in shapes) * (2 if global_merges > 0 else 1)
    pairs = parity_pairs(shapes, merges) + (parity_pairs(shapes, min(global_merges, merges)) if global_merges > 0
                                            else 0)
    return _corpus_parts(shapes, pairs, first_id + merges, heaps, LIST_BYTES_PARITY, first)


def _laying_out(shapes: list[LanguageShape], first_id: int, heaps: bool, from_bytes: bool,
                global_pairs: bool) -> tuple[int, int]:
    """A ParityCorpus's bytes while it is laid out, and once it is, before any merge."""
    pairs = sum(s.first_pairs for s in shapes) * (2 if global_pairs else 1)
    tokens, words = sum(s.tokens for s in shapes), sum(s.words for s in shapes)
    dense = from_bytes and len(shapes) <= MOST_DENSE_LANGUAGES      # the first count in dense tables
    exact = 4 if dense else 8           # the lists at their exact sizes, else doubled up to them
    held = sum(_corpus_parts(shapes, pairs, first_id, heaps, exact, pairs).values())
    handed = 4 * tokens + 20 * words
    if not from_bytes:      # each table's tokens and offsets while they are joined; the base's layout of one
        handed += 4 * tokens + 8 * words + 5 * max((s.tokens for s in shapes), default=0)
    first_count = (FIRST_COUNT_CELL << 16) * len(shapes) if dense else 0
    return held + handed + first_count, held


def parity_kernel_bytes(shapes: list[LanguageShape], dev_shapes: list[LanguageShape] | None, n_merges: int,
                        first_id: int = 256, global_merges: int = 0, from_bytes: bool = True) -> tuple[int, int]:
    """The parity-aware kernel's predicted bytes (laying out, merging) for languages of these
    shapes (and dev shapes), ``n_merges`` merges numbered from ``first_id``, the first
    ``global_merges`` over all languages together (the tables' own arrays aside): the dev
    corpus is laid out once the training one is, and both are held while merging."""
    layout, held = _laying_out(shapes, first_id, True, from_bytes, global_merges > 0)
    merging = sum(parity_corpus_parts(shapes, n_merges, first_id, global_merges).values())
    if dev_shapes:
        dev_layout, _ = _laying_out(dev_shapes, first_id, False, from_bytes, False)
        layout = max(layout, held + dev_layout)
        merging += sum(parity_corpus_parts(dev_shapes, n_merges, first_id, heaps=False).values())
    return layout, merging


def plan_parity_merging(tables: list, dev_tables: list | None, n_merges: int, first_id: int = 256,
                        global_merges: int = 0, from_bytes: bool = True) -> MergingPlan:
    """The plan for parity-aware training of these word tables (and dev tables), in memory now
    and held throughout, to ``n_merges`` merges."""
    shapes = [language_shape(t, from_bytes) for t in tables]
    dev_shapes = None if dev_tables is None else [language_shape(t, from_bytes) for t in dev_tables]
    layout, merging = parity_kernel_bytes(shapes, dev_shapes, n_merges, first_id, global_merges, from_bytes)
    held = sum(t.symbols.nbytes + t.offsets.nbytes + t.counts.nbytes for t in [*tables, *(dev_tables or [])])
    give_back_free_memory()
    return MergingPlan(process=resident_bytes(), table=held, table_freed=False, layout=layout, merging=merging)
