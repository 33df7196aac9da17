"""Picky BPE's plain-Python oracle (Chizhov et al., arXiv 2409.04599), built on the plain one
(training/reference.py): ``train_picky_reference`` for _picky.train_picky and
``encode_picky_reference`` for _picky.PickyEncoder."""
from __future__ import annotations

from collections import Counter

from ..reference import allowed_pairs, merge_word

# Events are rows (a, b): a merge of the pair (a, b), which makes event id 256 + (merges before
# it); or (x, REMOVED): the removal of token x. Ids are event ids: bytes 0..255, then one per merge.
REMOVED = -1


def token_counts(words: list[list[int]], counts: list[int]) -> Counter:
    freq: Counter = Counter()
    for word, n in zip(words, counts):
        for token in word:
            freq[token] += n
    return freq


def expand(x: int, parents: dict[int, tuple[int, int]], removed: set[int]) -> list[int]:
    """What replaces a removed token x: its two parents, each expanded again while removed itself."""
    return [part for p in parents[x] for part in (expand(p, parents, removed) if p in removed else [p])]


def replace_token(word: list[int], x: int, parts: list[int]) -> list[int]:
    return [part for token in word for part in (parts if token == x else [token])]


def train_picky_reference(word_counts: dict[bytes, int], n_learned: int, tau: float, min_count: int = 1,
                          max_token_length: int | None = None) -> list[tuple[int, int]]:
    """Picky BPE's events until ``n_learned`` learned tokens are present (or no pair is left).

    Each step merges the best pair as ``train_reference`` does (overlapping counts, ties to the
    smallest pair, left to right without overlap: m replacements, weighted); then each parent x
    of the pair that is not a byte (once if both are x) has IoS(x) = m / (x's frequency just
    before the merge), both computed before either is removed; from the left, every x with
    IoS >= tau is removed: each occurrence becomes ``expand(x)``. A tau above 1 removes nothing:
    the merges are ``train_reference``'s.
    """
    words = [list(w) for w in word_counts]
    counts = list(word_counts.values())
    length = {b: 1 for b in range(256)}
    parents: dict[int, tuple[int, int]] = {}
    removed: set[int] = set()
    events: list[tuple[int, int]] = []
    present = 0
    while present < n_learned:
        stats = allowed_pairs(words, counts, length, max_token_length)
        best = min(stats, key=lambda pair: (-stats[pair], pair)) if stats else None
        if best is None or stats[best] < max(1, min_count):
            break
        before = token_counts(words, counts)
        new = 256 + len(parents)
        words = [merge_word(w, best, new) for w in words]
        m = token_counts(words, counts)[new]
        parents[new], length[new] = best, length[best[0]] + length[best[1]]
        events.append(best)
        present += 1
        ios = {x: m / before[x] for x in dict.fromkeys(best) if x >= 256}
        for x in ios:
            if ios[x] >= tau:
                removed.add(x)
                parts = expand(x, parents, removed)
                words = [replace_token(w, x, parts) for w in words]
                events.append((x, REMOVED))
                present -= 1
    return events


def encode_picky_reference(word: bytes, events: list[tuple[int, int]]) -> list[int]:
    """One word replayed through the events, in order, as event ids: a merge joins its pair left
    to right without overlap; a removal replaces each occurrence by the token's expansion."""
    tokens = list(word)
    parents: dict[int, tuple[int, int]] = {}
    removed: set[int] = set()
    for a, b in events:
        if b == REMOVED:
            removed.add(a)
            tokens = replace_token(tokens, a, expand(a, parents, removed))
        else:
            new = 256 + len(parents)
            parents[new] = (a, b)
            tokens = merge_word(tokens, (a, b), new)
    return tokens


def picky_token_ids(events: list[tuple[int, int]]) -> dict[int, int]:
    """Event id -> token id for every token present after the events: bytes keep theirs, the
    learned ones are numbered 256, 257, ... in the order of the merges that made them."""
    made = [256 + k for k in range(sum(1 for _, b in events if b != REMOVED))]
    gone = {a for a, b in events if b == REMOVED}
    return {b: b for b in range(256)} | {x: 256 + k for k, x in enumerate(x for x in made if x not in gone)}
