"""The plain-Python trainer: the oracle the kernel is tested against.

Same semantics as ``_kernel.train_merges``, written to be obviously right rather than fast:
every step recounts all pairs from scratch (overlapping pairs count), picks the highest count
with ties to the smallest (left, right), and replaces it left to right without overlap.
"""
from __future__ import annotations

from collections import Counter


def count_pairs(words: list[list[int]], counts: list[int]) -> Counter:
    stats: Counter = Counter()
    for word, n in zip(words, counts):
        for pair in zip(word, word[1:]):
            stats[pair] += n
    return stats


def merge_word(word: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def train_reference(word_counts: dict[bytes, int], n_merges: int, min_count: int = 1) -> list[tuple[int, int]]:
    """The merges learned from ``{chunk bytes: count}``; merge i creates token 256 + i."""
    words = [list(w) for w in word_counts]
    counts = list(word_counts.values())
    merges = []
    for i in range(n_merges):
        stats = count_pairs(words, counts)
        if not stats:
            break
        best = min(stats, key=lambda pair: (-stats[pair], pair))
        if stats[best] < max(1, min_count):
            break
        merges.append(best)
        words = [merge_word(w, best, 256 + i) for w in words]
    return merges
