"""Rung v2: the notebook's Counter version, in plain Python.

Idea: let ``collections.Counter`` count -- ``Counter(zip(ids, ids[1:]))`` per chunk -- and ask
it for the leader with ``most_common(1)``. It is v1 with the counting moved into a library call.
Cost model: like v1, O(merges x corpus size), plus the price of one small Counter and one
``most_common(1)`` per chunk per merge, which is more than the dict code it replaces: building
a Counter per chunk (a few pairs) costs more than counting those pairs in v1's shared dict.

The notebook asked for the leader after every chunk. We keep that habit -- it is the lesson
line_profiler shows -- but at chunk scale: ``most_common(1)`` over the chunk's own pairs,
rescored with their corpus-wide totals so far. Asking the corpus-wide Counter instead scans all
its pairs after every chunk, O(chunks x distinct pairs) per merge: about 20x slower than v1 here,
too slow for a workshop.

Ties: the leader is replaced only by a strictly higher count, so of the pairs tied at the top,
the one that reached that count first (in corpus order) wins. The reference takes the smallest
(left, right); the harness says when that makes them differ. Merging is v1's ``merge``.
"""
from __future__ import annotations

from collections import Counter

from .v1_dict import merge

TIE_RULE = "leader updated per chunk by most_common(1): the first pair to reach the top count wins"


def get_stats(ids: list[int], stats: Counter) -> Counter:
    """Add one chunk's pairs to ``stats``; return them, rescored with their totals so far."""
    chunk = Counter(zip(ids, ids[1:]))
    stats.update(chunk)
    for pair in chunk:
        chunk[pair] = stats[pair]
    return chunk


def most_frequent(ids: list[list[int]]):
    """Count all pairs, keeping the leader up to date chunk by chunk; None if there are none."""
    stats: Counter = Counter()
    leader, leader_count = None, 0
    for chunk_ids in ids:
        chunk = get_stats(chunk_ids, stats)
        if leader in chunk:
            leader_count = chunk[leader]  # the leader itself may have grown
        for pair, count in chunk.most_common(1):  # the notebook's per-chunk question
            if count > leader_count:
                leader, leader_count = pair, count
    return leader


def train(chunks: list[str], n_merges: int) -> list[tuple[int, int]]:
    """Learn up to ``n_merges`` merges from pre-split chunks; merge k creates token 256 + k."""
    ids = [list(chunk.encode("utf-8")) for chunk in chunks]
    merges = []
    for k in range(n_merges):
        pair = most_frequent(ids)
        if pair is None:
            break
        ids = [merge(chunk_ids, pair, 256 + k) for chunk_ids in ids]
        merges.append(pair)
    return merges


HOT = (train, most_frequent, get_stats, merge)  # what --line-profile shows
