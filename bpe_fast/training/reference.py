"""The plain-Python trainer: the oracle the kernel is tested against.

Same semantics as ``_kernel.train_merges`` (``train_reference``), written to be obviously right
rather than fast: every step recounts all pairs from scratch (overlapping pairs count), picks
the highest count with ties to the smallest (left, right), and replaces it left to right
without overlap. Each variant's oracle sits beside it, built on this one
(variants/boundless_reference.py, picky_reference.py, parity_reference.py).
"""
from __future__ import annotations

from collections import Counter


def count_pairs(words: list[list[int]], counts: list[int]) -> Counter:
    stats: Counter = Counter()
    for word, n in zip(words, counts):
        for pair in zip(word, word[1:]):
            stats[pair] += n
    return stats


def allowed_pairs(words: list[list[int]], counts: list[int], length: dict[int, int],
                  max_token_length: int | None) -> dict[tuple[int, int], int]:
    """Every pair's count, less the pairs whose token would pass ``max_token_length`` bytes."""
    stats: dict[tuple[int, int], int] = count_pairs(words, counts)
    if max_token_length is not None:
        stats = {p: n for p, n in stats.items() if length[p[0]] + length[p[1]] <= max_token_length}
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


def train_reference(word_counts: dict[bytes, int], n_merges: int, min_count: int = 1,
                    max_token_length: int | None = None, start: list[list[int]] | None = None,
                    token_lengths: dict[int, int] | None = None, first_id: int = 256,
                    chosen: list[int] | None = None) -> list[tuple[int, int]]:
    """The merges learned from ``{chunk bytes: count}``; merge i creates token ``first_id + i``.

    A pair whose token would be longer than ``max_token_length`` bytes is never merged (the
    next best is). To continue training, ``start`` gives each word (in word_counts' order) as
    the token ids it already is, ``token_lengths`` the bytes of each id that is not a byte, and
    ``first_id`` the id of the first new token. ``chosen``, if given, receives each merge's count.
    """
    words = [list(w) for w in word_counts] if start is None else [list(w) for w in start]
    counts = list(word_counts.values())
    length = {b: 1 for b in range(256)} | (token_lengths or {})
    merges = []
    for i in range(n_merges):
        stats = allowed_pairs(words, counts, length, max_token_length)
        best = min(stats, key=lambda pair: (-stats[pair], pair)) if stats else None
        if best is None or stats[best] < max(1, min_count):
            break
        merges.append(best)
        if chosen is not None:
            chosen.append(stats[best])
        length[first_id + i] = length[best[0]] + length[best[1]]
        words = [merge_word(w, best, first_id + i) for w in words]
    return merges
