"""Rung v6: bpe_fast's own trainer -- v5's algorithm on flat arrays, compiled.

Idea: keep v4's word-count table and v5's incremental updates, but as C data: the distinct
chunks become three NumPy arrays (``WordTable``: flat int32 symbols, offsets, counts) and
``_kernel.train_merges`` (Cython, C++ containers) links each word's symbols into a list,
keeps per-pair occurrence positions and counts, and picks the best pair from a heap. No Python
object is created per pair or per symbol.
Cost model: one pass to count, then per merge O(occurrences of the merged pair x log heap) --
the same shape as v5 with a far smaller constant. What is left is mostly Python: counting the
chunks into the table.

Ties: the smallest (left, right), as in the reference (the kernel's tests hold it to that).
"""
from __future__ import annotations

from ...training._kernel import train_merges
from ...counting.wordtable import WordTable
from .v4_wordcounts import word_counts

TIE_RULE = "the kernel's heap: the smallest (left, right) wins, as in the reference"


def train(chunks: list[str], n_merges: int) -> list[tuple[int, int]]:
    """Learn up to ``n_merges`` merges from pre-split chunks; merge k creates token 256 + k."""
    table = WordTable.from_counts(word_counts(chunks))
    merges = train_merges(table.symbols, table.offsets, table.counts, n_merges)
    return [(int(left), int(right)) for left, right in merges]


# What --line-profile shows. The kernel itself is compiled without line tracing (it would slow
# it down), so its time appears as the one line that calls train_merges.
HOT = (train, word_counts)
