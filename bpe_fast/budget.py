"""One memory budget for the whole job (``memory_budget=``, CLI ``--memory-budget``): the peak of
the process tree, the counting and the merging alike.

The counting's share: how many worker processes count, and how big each one's table may grow
before it is written to disk (``counting_share``). The merging's plan: before the kernel starts,
what it will hold at its peak, predicted from the word table (``plan_merging``); a table whose
merging cannot fit is refused then, in one line that says what it needs (``MemoryBudgetError``),
never killed for memory half-way. The plan's model follows what the kernel allocates
(_kernel.pyx and its parts, _layout/_pairs/_heap/_rewrite.pxd); benchmarks/bench_budget.py
measures how close it comes, and tests/test_budget.py holds it to a stated factor.
"""
from __future__ import annotations

import ctypes
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
