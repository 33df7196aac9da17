"""Rung v1: the notebook's trainer, in plain Python.

Idea: none yet -- this is the baseline everything else is measured against. Every merge
  1. counts every adjacent pair of every chunk into one dict (``get_stats``),
  2. takes the most frequent pair with a running maximum over that dict, and
  3. rebuilds every chunk as a new list with the pair replaced (``merge``).
Cost model: O(merges x corpus size) -- each merge re-reads all ~220,000 chunks of the default
workload, even the ones that do not hold the chosen pair, so 10x the merges is ~10x the time.

Ties: the running maximum keeps the FIRST pair with the top count it meets, i.e. the first in
the dict's insertion order (the order pairs first appear in the corpus). The reference breaks
ties by the smallest (left, right) instead; the harness says when that makes them differ.

Two bugs of the notebook's version are fixed here (keeping its shape):
  * its merge loop never ended on a chunk holding a zero byte. Below, the loop index advances on
    every path (by 2 after a replacement, else by 1) and the end of the chunk is found by
    comparing the index with the length, never by looking at an id's value, so 0 is an
    ordinary byte;
  * it numbered new tokens from ``vocab_size``; merge k creates token 256 + k here, as in
    minbpe and the rest of bpe_fast, so every rung's merges can be compared as they are.
"""
from __future__ import annotations

TIE_RULE = "running maximum over the dict: the first top pair in insertion order wins"


def get_stats(ids: list[int], counts: dict) -> None:
    """Add the adjacent pairs of one chunk to ``counts`` (overlaps count: "aaa" has 2)."""
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1


def merge(ids: list[int], pair: tuple[int, int], idx: int) -> list[int]:
    """A new list: ``ids`` with every non-overlapping ``pair``, left to right, replaced by ``idx``."""
    newids = []
    i, n = 0, len(ids)
    while i < n:
        if i + 1 < n and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            newids.append(idx)
            i += 2
        else:
            newids.append(ids[i])
            i += 1
    return newids


def most_frequent(counts: dict):
    """The running maximum: the first pair with the highest count, or None if there are none."""
    best, best_count = None, 0
    for pair, count in counts.items():
        if count > best_count:
            best, best_count = pair, count
    return best


def train(chunks: list[str], n_merges: int, get_stats=get_stats, merge=merge) -> list[tuple[int, int]]:
    """Learn up to ``n_merges`` merges from pre-split chunks; merge k creates token 256 + k.

    ``get_stats`` and ``merge`` are parameters so that v3 can run this very loop with its
    compiled copies of the two functions.
    """
    ids = [list(chunk.encode("utf-8")) for chunk in chunks]
    merges = []
    for k in range(n_merges):
        counts: dict = {}
        for chunk_ids in ids:
            get_stats(chunk_ids, counts)
        pair = most_frequent(counts)
        if pair is None:  # every chunk is a single token: nothing left to merge
            break
        ids = [merge(chunk_ids, pair, 256 + k) for chunk_ids in ids]
        merges.append(pair)
    return merges


HOT = (train, get_stats, most_frequent, merge)  # what --line-profile shows
