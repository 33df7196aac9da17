"""Picky BPE's events (Chizhov et al., "BPE Gets Picky", arXiv 2409.04599): what they mean, their
check, and the ids they give. Training is ``_picky.train_picky`` (its oracle
``reference.train_picky_reference``); the tokenizer that replays them is ``PickyTokenizer``.

Events are the rows of an int32 array of shape (n, 2), in the order training made them:

* ``(a, b)`` with b >= 0: the merge of the pair (a, b), which makes the event id
  256 + (the number of merges before it);
* ``(x, REMOVED)`` (REMOVED = -1): the removal of token x: every occurrence of x becomes its
  expansion, its two parents, each expanded again while it is itself removed at that point.

*Event ids* are bytes 0..255, then one per merge in event order. A merge always makes a new id,
so a token removed and made again later (from the same or another pair) comes back under the
new id. *Token ids*, what a ``PickyTokenizer`` encodes to: bytes 0..255, then the learned tokens
present after the last event (made and not removed), numbered 256, 257, ... contiguously in the
order of the merges that made them; special tokens follow.
"""
from __future__ import annotations

import numpy as np

from .errors import VocabularyError

REMOVED = -1


def check_events(events) -> np.ndarray:
    """events as a contiguous (n, 2) int32 array, checked: each merge joins two present tokens and
    each removal removes a present learned token (not a byte). Else a VocabularyError naming the
    first event at fault."""
    try:
        rows = np.asarray(events)
    except (ValueError, TypeError) as exc:
        raise VocabularyError(f"events must be rows of two integer ids: {exc}") from None
    if rows.size == 0:
        return np.empty((0, 2), np.int32)
    if rows.dtype.kind not in "iu" or rows.ndim != 2 or rows.shape[1] != 2:
        raise VocabularyError(f"events must be rows (a, b) or (x, {REMOVED}) of integer ids, got an array of "
                              f"shape {rows.shape} and type {rows.dtype}")
    if rows.max() >= 2**31 - 1 or rows.min() < REMOVED:
        raise VocabularyError(f"events hold the id {int(rows.max()) if rows.max() > 0 else int(rows.min())}, "
                              f"which is out of range")
    present = np.zeros(256 + len(rows), bool)
    present[:256] = True
    made = 256
    for k, (a, b) in enumerate(rows.tolist()):
        if b == REMOVED:
            if not (256 <= a < made and present[a]):
                raise VocabularyError(f"event {k} removes {a}, which is no present learned token (ids 256..{made - 1} "
                                      f"not removed yet)")
            present[a] = False
            continue
        if not (0 <= a < made and 0 <= b < made and present[a] and present[b]):
            raise VocabularyError(f"event {k} merges ({a}, {b}): both must be present tokens (bytes, or ids made "
                                  f"by earlier merges and not removed)")
        present[made] = True
        made += 1
    return np.ascontiguousarray(rows, dtype=np.int32)


def token_ids(events: np.ndarray) -> np.ndarray:
    """For each event id, its token id (-1 for a token removed by the end)."""
    merged = events[:, 1] != REMOVED
    gone = np.zeros(256 + int(merged.sum()), bool)
    gone[events[~merged, 0]] = True
    ids = np.full(len(gone), -1, np.int32)
    kept = np.flatnonzero(~gone)
    ids[kept] = np.arange(len(kept), dtype=np.int32)
    return ids


def token_bytes(events: np.ndarray) -> list[bytes]:
    """The bytes of every event id."""
    spelled = [bytes([b]) for b in range(256)]
    for a, b in events[events[:, 1] != REMOVED].tolist():
        spelled.append(spelled[a] + spelled[b])
    return spelled


def removals(events: np.ndarray) -> int:
    return int(np.count_nonzero(events[:, 1] == REMOVED))


def learned_after(events: np.ndarray) -> np.ndarray:
    """For each prefix events[:k] (k = 0..n), the number of learned tokens present after it."""
    steps = np.where(events[:, 1] == REMOVED, -1, 1)
    return np.concatenate([[0], np.cumsum(steps)])


def events_for(events: np.ndarray, n_learned: int) -> np.ndarray:
    """The events a training to ``n_learned`` present learned tokens keeps: it stops at the end
    of the first step (a merge and the removals it causes) that reaches n_learned. A step
    changes the count by +1, 0 or -1, so a longer training passes through that very state."""
    present = learned_after(events)
    step_ends = np.append(np.flatnonzero(events[:, 1] != REMOVED)[1:], len(events))   # before each next merge
    reached = step_ends[present[step_ends] >= n_learned]
    if n_learned <= 0:
        return events[:0]
    if not len(reached):
        raise VocabularyError(f"these events never hold {n_learned} learned tokens (at most {int(present.max())})")
    return events[:reached[0]]


def check_tau(tau, error: type[Exception]) -> float:
    """Picky BPE's threshold: a number with 0 < tau <= 1 (a token goes when its IoS >= tau)."""
    if isinstance(tau, bool) or not isinstance(tau, (int, float, np.integer, np.floating)) or not 0 < tau <= 1:
        raise error(f"picky={tau!r} must be a threshold tau with 0 < tau <= 1 (a token is removed when its IoS, "
                    f"the share of its occurrences a merge takes, is >= tau); None trains plain BPE")
    return float(tau)
