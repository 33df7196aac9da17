"""BoundlessBPE's plain-Python oracle (two-phase: Schmidt et al., arXiv 2504.00178 and
2604.05192), built on the plain one (training/reference.py): everything from the documents,
recounting every step. boundless.py and the encoder's supermerges are tested against it."""
from __future__ import annotations

from collections import Counter
from typing import Callable

import regex

from ...pretokenize.patterns import BOUNDLESS_ELIGIBLE, resolve, whole_matches
from ..reference import count_pairs, merge_word, train_reference

# The default eligibility is paper 1's IMPROVED_MERGE_PATTERN (patterns.BOUNDLESS_ELIGIBLE).


def replay(units: list[int], ranked: dict[tuple[int, int], tuple[int, int]]) -> list[int]:
    """BPE of a sequence: ``ranked`` maps a pair to (rank, new id); the lowest-ranked pair
    present is merged, leftmost first, until none is left."""
    units = list(units)
    while True:
        found = [(ranked[p][0], i) for i, p in enumerate(zip(units, units[1:])) if p in ranked]
        if not found:
            return units
        i = min(found)[1]
        units[i:i + 2] = [ranked[(units[i], units[i + 1])][1]]


def phase_one(merges: list[tuple[int, int]]) -> Callable[[bytes], list[int]]:
    """The phase-1 encoder of a pretoken (merge i makes 256 + i), as bpe_fast's encoder does it:
    a chunk that is itself a token is that token (the largest id of equal bytes), else BPE."""
    spelled = {b: bytes([b]) for b in range(256)}
    for i, (a, b) in enumerate(merges):
        spelled[256 + i] = spelled[a] + spelled[b]
    vocab = {token: i for i, token in spelled.items()}           # ids ascend: the largest wins
    ranked = {pair: (i, 256 + i) for i, pair in enumerate(merges)}
    return lambda chunk: [vocab[chunk]] if chunk in vocab else replay(list(chunk), ranked)


def pretoken_units(doc: str, pattern: str, encode: Callable[[bytes], list[int]], eligible: str) -> list[int | None]:
    """Each pretoken of a document: its token id if the phase-1 encoder makes it one token and it
    is eligible (``regex.search(eligible, pretoken)``), else None."""
    units: list[int | None] = []
    for chunk in whole_matches(regex.compile(resolve(pattern)), doc):
        ids = encode(chunk.encode("utf-8"))
        units.append(ids[0] if len(ids) == 1 and regex.search(eligible, chunk) else None)
    return units


def runs_of(units: list[int | None]) -> list[list[int]]:
    """The maximal runs of at least two consecutive units (None breaks a run)."""
    runs: list[list[int]] = []
    current: list[int] = []
    for u in [*units, None]:
        if u is None:
            if len(current) >= 2:
                runs.append(current)
            current = []
        else:
            current.append(u)
    return runs


def train_boundless_reference(docs: list[str], pattern: str, n_merges: int, n_supermerges: int,
                              first_id: int | None = None, eligible: str = BOUNDLESS_ELIGIBLE,
                              min_count: int = 1, max_token_length: int | None = None):
    """(merges, supermerges, segmented): phase 1 is plain BPE on the documents' pretokens
    (``train_reference``); phase 2 counts each distinct run of eligible one-token pretokens as
    often as it occurs and merges adjacent units (overlapping pairs count, ties to the smallest
    pair, left to right), recounting every step. Supermerge k makes ``first_id + k`` (default
    after the phase-1 ids). ``segmented`` maps each run to its units after the last supermerge."""
    words: Counter = Counter(c.encode("utf-8") for d in docs for c in whole_matches(regex.compile(resolve(pattern)), d))
    merges = train_reference(dict(words), n_merges, min_count, max_token_length)
    first_id = 256 + len(merges) if first_id is None else first_id
    encode = phase_one(merges)
    runs = Counter(tuple(r) for d in docs for r in runs_of(pretoken_units(d, pattern, encode, eligible)))
    length = {b: 1 for b in range(256)}
    for i, (a, b) in enumerate(merges):
        length[256 + i] = length[a] + length[b]
    seqs, counts, supermerges = [list(r) for r in runs], list(runs.values()), []
    for k in range(n_supermerges):
        stats = {p: n for p, n in count_pairs(seqs, counts).items()
                 if max_token_length is None or length[p[0]] + length[p[1]] <= max_token_length}
        if not stats or max(stats.values()) < max(1, min_count):
            break
        best = min(stats, key=lambda pair: (-stats[pair], pair))
        supermerges.append(best)
        length[first_id + k] = length[best[0]] + length[best[1]]
        seqs = [merge_word(s, best, first_id + k) for s in seqs]
    return merges, supermerges, dict(zip(runs, seqs))


def encode_boundless_reference(text: str, pattern: str, merges: list[tuple[int, int]],
                               supermerges: list[tuple[int, int]], first_id: int,
                               eligible: str = BOUNDLESS_ELIGIBLE) -> list[int]:
    """Token ids of a text (one document, no special tokens): each pretoken by the phase-1
    merges, then in each maximal run of eligible one-token pretokens the supermerges, lowest
    first, leftmost first (``replay``)."""
    encode, ranked = phase_one(merges), {pair: (k, first_id + k) for k, pair in enumerate(supermerges)}
    out: list[int] = []
    run: list[int] = []
    for chunk in [*whole_matches(regex.compile(resolve(pattern)), text), None]:
        ids = encode(chunk.encode("utf-8")) if chunk is not None else []
        if chunk is not None and len(ids) == 1 and regex.search(eligible, chunk):
            run.append(ids[0])
            continue
        out.extend(replay(run, ranked))
        out.extend(ids)
        run = []
    return out


def train_boundless_auto_reference(docs: list[str], pattern: str, n_learned: int, eligible: str = BOUNDLESS_ELIGIBLE,
                                   min_count: int = 1, max_token_length: int | None = None):
    """(merges, supermerges) of ``superword_at="auto"``, paper 2's loop as it reads: phase 1 is
    plain BPE to ``n_learned`` merges, each with its count; the runs are those of that whole
    phase-1 model; then step by step the best supermerge of the runs (recounted) is taken when
    its count is above the count of the next phase-1 merge (ties to the merge), else that merge,
    until ``n_learned`` tokens are learned. Supermerge k makes 256 + (merges kept) + k."""
    words: Counter = Counter(c.encode("utf-8") for d in docs for c in whole_matches(regex.compile(resolve(pattern)), d))
    counts: list[int] = []
    merges = train_reference(dict(words), n_learned, min_count, max_token_length, chosen=counts)
    encode, top = phase_one(merges), 256 + n_learned + 1          # superwords above every phase-1 id
    runs = Counter(tuple(r) for d in docs for r in runs_of(pretoken_units(d, pattern, encode, eligible)))
    length = {b: 1 for b in range(256)}
    for i, (a, b) in enumerate(merges):
        length[256 + i] = length[a] + length[b]
    seqs, weights, k = [list(r) for r in runs], list(runs.values()), 0
    supermerges: list[tuple[int, int]] = []
    while k + len(supermerges) < n_learned:
        stats = {p: n for p, n in count_pairs(seqs, weights).items()
                 if max_token_length is None or length[p[0]] + length[p[1]] <= max_token_length}
        best = min(stats, key=lambda pair: (-stats[pair], pair)) if stats else None
        if best is not None and stats[best] >= max(1, min_count) and (k == len(merges) or stats[best] > counts[k]):
            assert all(u < 256 + k or u >= top for u in best), "a supermerge's part is not made yet"
            new = top + len(supermerges)
            supermerges.append(best)
            length[new] = length[best[0]] + length[best[1]]
            seqs = [merge_word(s, best, new) for s in seqs]
        elif k < len(merges):
            k += 1
        else:
            break
    renumber = {top + j: 256 + k + j for j in range(len(supermerges))}
    return merges[:k], [(renumber.get(a, a), renumber.get(b, b)) for a, b in supermerges]
