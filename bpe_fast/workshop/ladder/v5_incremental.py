"""Rung v5: count pairs once, then update only what a merge changes; a heap finds the best.

Idea: a merge of (a, b) only changes the words that hold (a, b). Keep, for every pair, its
weighted count and the set of words it occurs in. To apply a merge, visit just those words:
take their old pairs out of the counts, merge them, put their new pairs in. The most frequent
pair comes from a heap of (-count, pair) entries; an entry whose count is out of date is
thrown away when it surfaces (a "lazy" heap: every change of a count pushes a fresh entry).
Cost model: one pass over the distinct chunks to count, then per merge O(length of the words
holding the pair + log(heap) per changed pair). Later merges touch few words, so 10x the
merges costs far less than 10x the time.

Still plain Python on top of v4's word-count table. Ties go to the smallest (left, right),
because the heap orders equal counts by the pair itself -- the reference's rule.
"""
from __future__ import annotations

from collections import defaultdict
from heapq import heapify, heappop, heappush

from .v1_dict import merge
from .v4_wordcounts import word_counts

TIE_RULE = "heap of (-count, pair): the smallest (left, right) wins, as in the reference"


def count_pairs(words: list[list[int]], freqs: list[int]):
    """Weighted count of every pair, and the indices of the words each pair occurs in."""
    counts: dict = defaultdict(int)
    where: dict = defaultdict(set)
    for i, (word, freq) in enumerate(zip(words, freqs)):
        for pair in zip(word, word[1:]):
            counts[pair] += freq
            where[pair].add(i)
    return counts, where


def pop_best(heap: list, counts: dict):
    """The pair with the highest count (smallest pair on ties), or None; drops stale entries."""
    while heap:
        neg_count, pair = heappop(heap)
        if -neg_count == counts[pair] > 0:
            return pair
    return None


def apply_merge(pair, new_id, words, freqs, counts, where) -> set:
    """Merge ``pair`` in every word that holds it, keeping counts and where up to date.

    Returns the pairs whose counts changed. (A word listed under ``pair`` may no longer hold
    it; merging it is then a no-op, and taking out then putting back its pairs cancels out.)
    """
    changed = set()
    for i in where.pop(pair, ()):
        old, freq = words[i], freqs[i]
        new = merge(old, pair, new_id)
        for p in zip(old, old[1:]):
            counts[p] -= freq
            changed.add(p)
        for p in zip(new, new[1:]):
            counts[p] += freq
            where[p].add(i)
            changed.add(p)
        words[i] = new
    return changed


def train(chunks: list[str], n_merges: int) -> list[tuple[int, int]]:
    """Learn up to ``n_merges`` merges from pre-split chunks; merge k creates token 256 + k."""
    table = word_counts(chunks)
    words = [list(word) for word in table]
    freqs = list(table.values())
    counts, where = count_pairs(words, freqs)
    heap = [(-count, pair) for pair, count in counts.items()]
    heapify(heap)
    merges = []
    for k in range(n_merges):
        pair = pop_best(heap, counts)
        if pair is None:
            break
        for p in apply_merge(pair, 256 + k, words, freqs, counts, where):
            if counts[p] > 0:
                heappush(heap, (-counts[p], p))
        merges.append(pair)
    return merges


HOT = (train, count_pairs, pop_best, apply_merge, merge)  # what --line-profile shows
