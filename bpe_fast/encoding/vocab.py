"""A tokenizer's vocabulary from its parts, checked: every id's bytes (``spell``) and the ids
of the special tokens (``special_ids``). Everything a ``Tokenizer`` is made of passes through
here, so a bad vocabulary, made in memory or read from a file, is a VocabularyError that says
what is wrong, never a crash or a silent second id for the same bytes.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..errors import VocabularyError
from ..pretokenize.splitter import check_encodable, special_token_list
from ._encode import spell_tokens

# Ids index arrays (int32 in the native encoder), so they must be dense enough: at most this
# many ids may go unused. A file whose ids run to 10**9 is corrupt, not a vocabulary to allocate.
MAX_UNUSED_IDS = 1 << 20


def as_ids(values, what: str) -> np.ndarray:
    """values as an int64 array; anything but integers (floats, strings, ragged lists) is refused."""
    try:
        ids = np.asarray(values)
    except (ValueError, TypeError) as exc:
        raise VocabularyError(f"{what} must be integer ids: {exc}") from None
    if ids.size and ids.dtype.kind not in "iu":
        raise VocabularyError(f"{what} must be integer ids, got values of type {ids.dtype}")
    return np.ascontiguousarray(ids, dtype=np.int64)


def as_pairs(values, what: str) -> np.ndarray:
    """values as an (n, 2) int64 array of id pairs."""
    pairs = as_ids(values, what)
    if pairs.size % 2 or (pairs.ndim != 2 and pairs.size):
        raise VocabularyError(f"{what} must be pairs of ids, got an array of shape {pairs.shape}")
    return pairs.reshape(-1, 2)


def check_id_range(largest: int, defined: int, what: str) -> None:
    if largest >= 2**31 - 1 or largest >= defined + MAX_UNUSED_IDS:
        raise VocabularyError(f"{what} {largest} is out of range: {defined:,} tokens need ids below "
                              f"{defined + MAX_UNUSED_IDS:,} (at most {MAX_UNUSED_IDS:,} unused ids)")


def check_no_repeated_pair(merges: np.ndarray, what: str) -> None:
    """A pair is merged once: merged again it would make a second id for the same bytes (the
    ranks, a tiktoken file and a tokenizer.json would then each hold another vocabulary)."""
    if len(merges) < 2:
        return
    keys = merges[:, 0].astype(np.int64) << 32 | merges[:, 1].astype(np.int64)
    in_order = np.sort(keys)
    if not (in_order[1:] == in_order[:-1]).any():      # the usual case, at the cost of one sort
        return
    unique, first = np.unique(keys, return_index=True)
    repeated = np.ones(len(keys), dtype=bool)
    repeated[first] = False
    m = int(np.flatnonzero(repeated)[0])
    earlier = int(np.flatnonzero(keys == keys[m])[0])
    left, right = (int(x) for x in merges[m])
    raise VocabularyError(f"{what} {m} is ({left}, {right}), the pair {what} {earlier} already merged: "
                          f"each {what} must join a pair no earlier one joined")


def spell(merges: np.ndarray, merge_ids: np.ndarray, byte_ids: np.ndarray,
          supermerges: np.ndarray | None = None, supermerge_ids: np.ndarray | None = None) -> list:
    """id -> token bytes (None where no token has the id), checking that ids are consistent.
    Supermerges come after the merges and join any two tokens made before."""
    check_no_repeated_pair(merges, "merge")
    if supermerges is not None and len(supermerges):
        check_no_repeated_pair(supermerges, "supermerge")
        merges, merge_ids = np.concatenate([merges, supermerges]), np.concatenate([merge_ids, supermerge_ids])
    all_ids = np.concatenate([byte_ids, merge_ids])
    if len(all_ids) and all_ids.min() < 0:
        raise VocabularyError(f"token ids must be >= 0, got {int(all_ids.min())}")
    if len(np.unique(byte_ids)) != 256:
        raise VocabularyError("the 256 single-byte tokens must have 256 distinct ids")
    check_id_range(int(all_ids.max()), len(all_ids), "token id")
    size = int(all_ids.max()) + 1 if len(all_ids) else 256
    outside = np.flatnonzero(((merges < 0) | (merges >= size)).any(axis=1))
    made = int(outside[0]) if len(outside) else len(merges)   # narrowed to int32 below: no wrapping
    vocab, bad = spell_tokens(np.ascontiguousarray(merges[:made], np.int32),
                              np.ascontiguousarray(merge_ids[:made], np.int32),
                              np.ascontiguousarray(byte_ids, np.int32), size)
    if bad < 0 and made < len(merges):
        bad = made
    if bad >= 0:
        (left, right), new = merges[bad].tolist(), int(merge_ids[bad])
        if not (0 <= left < size and 0 <= right < size) or vocab[left] is None or vocab[right] is None:
            raise VocabularyError(f"merge {bad} is ({left}, {right}): its ids must be single bytes or "
                                  f"tokens made by earlier merges")
        raise VocabularyError(f"merge {bad} makes token id {new}, which is already {vocab[new]!r} (duplicate id)")
    return vocab


def special_ids(specials, vocab: list) -> dict[str, int]:
    """The special tokens' ids: a list numbered after the learned ids (``len(vocab)`` on), or a
    dict of given ids, each checked against the learned tokens ``vocab`` (id -> bytes or None)."""
    if specials is None:
        return {}
    if not isinstance(specials, Mapping):
        specials = {s: len(vocab) + i for i, s in enumerate(special_token_list(specials))}
    for s, i in specials.items():
        if not isinstance(s, str) or not s:
            raise VocabularyError(f"special token {s!r} must be a non-empty string")
        check_encodable(s, VocabularyError)
        if not isinstance(i, (int, np.integer)) or isinstance(i, bool) or i < 0:
            raise VocabularyError(f"special token {s!r} has id {i!r}; ids are non-negative integers")
        check_id_range(int(i), len(vocab) + len(specials), f"special token {s!r} has id")
        if i < len(vocab) and vocab[i] is not None:
            raise VocabularyError(f"special token {s!r} has id {i}, which is already the learned "
                                  f"token {vocab[i]!r}")
    if len(set(specials.values())) != len(specials):
        raise VocabularyError(f"special tokens share ids: {dict(specials)}")
    return {s: int(i) for s, i in specials.items()}


def checked_parts(merges, merge_ids, byte_ids, supermerges, supermerge_ids, boundless_eligible
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A tokenizer's arguments as arrays (defaults filled in: merge m makes 256 + m, byte b is b,
    supermerges follow the merges), their shapes checked."""
    merges = as_pairs(merges, "merges")
    merge_ids = np.arange(256, 256 + len(merges)) if merge_ids is None else as_ids(merge_ids, "merge_ids")
    byte_ids = np.arange(256) if byte_ids is None else as_ids(byte_ids, "byte_ids")
    if merge_ids.shape != (len(merges),) or byte_ids.shape != (256,):
        raise VocabularyError("merge_ids needs one id per merge and byte_ids 256 ids")
    supermerges = as_pairs([] if supermerges is None else supermerges, "supermerges")
    supermerge_ids = (np.arange(256 + len(merges), 256 + len(merges) + len(supermerges)) if supermerge_ids is None
                      else as_ids(supermerge_ids, "supermerge_ids"))
    if supermerge_ids.shape != (len(supermerges),):
        raise VocabularyError("supermerge_ids needs one id per supermerge")
    if boundless_eligible is not None and not isinstance(boundless_eligible, str):
        raise VocabularyError(f"boundless_eligible must be a regex (str), got {boundless_eligible!r}")
    return merges, merge_ids, byte_ids, supermerges, supermerge_ids


def truncated(tok, vocab_size: int, make):
    """``tok.truncated(vocab_size)``, made by ``make`` (the Tokenizer class): the first merges, as
    many as make ``vocab_size`` tokens with the special tokens, which keep their order and follow
    the learned ids; with supermerges, the first supermerges after the merges whole."""
    if len(tok.supermerges):
        return _truncated_supermerged(tok, vocab_size, make)
    specials = sorted(tok.special_tokens, key=tok.special_tokens.__getitem__)
    n = vocab_size - 256 - len(specials)
    if n < 0 or n > len(tok.merges):
        raise VocabularyError(f"vocab_size={vocab_size!r} is out of range: this tokenizer can be cut to "
                              f"{256 + len(specials)}..{256 + len(tok.merges) + len(specials)} tokens")
    merge_ids = tok.merge_ids[:n]
    top = int(max(tok.byte_ids.max(), merge_ids.max() if n else 0))
    return make(tok.merges[:n], tok.pattern, {s: top + 1 + k for k, s in enumerate(specials)},
                merge_ids=merge_ids, byte_ids=tok.byte_ids, normalize=tok.normalize)


def _truncated_supermerged(tok, vocab_size: int, make):
    """``truncated`` of a tokenizer with supermerges: its first supermerges, as many as the size
    allows after phase 1 whole; at phase 1's size or below, phase 1 truncated."""
    phase_one = tok.without_supermerges()
    keep = vocab_size - phase_one.vocab_size
    if keep <= 0:
        return phase_one.truncated(vocab_size)
    if keep > len(tok.supermerges):
        raise VocabularyError(f"vocab_size={vocab_size!r} is out of range: this tokenizer can be cut to "
                              f"{256 + len(tok.special_tokens)}..{tok.vocab_size} tokens")
    cut = make(tok.merges, tok.pattern, tok.special_tokens, merge_ids=tok.merge_ids, byte_ids=tok.byte_ids,
               normalize=tok.normalize, supermerges=tok.supermerges[:keep],
               supermerge_ids=tok.supermerge_ids[:keep], boundless_eligible=tok.boundless_eligible)
    if cut.vocab_size != vocab_size:
        raise VocabularyError(f"vocab_size={vocab_size!r}: this tokenizer's supermerge ids do not follow its "
                              f"phase-1 ids, so it cannot be cut to that size")
    return cut


def extend(tok, merges, merge_ids, special_tokens: Mapping[str, int]) -> None:
    """Give ``tok`` (a copy of the base's state) the base's merges and ids, then ``merges`` making
    ``merge_ids`` (continued training): the same as building it whole, without spelling the
    base's tokens again."""
    merges = np.asarray(merges, np.int32).reshape(-1, 2)
    merge_ids = np.asarray(merge_ids, np.int32)
    vocab = list(tok._vocab) + [None] * max(0, int(merge_ids.max(initial=-1)) + 1 - len(tok._vocab))
    for (left, right), new in zip(merges.tolist(), merge_ids.tolist()):
        if vocab[new] is not None or vocab[left] is None or vocab[right] is None:
            raise VocabularyError(f"cannot extend with merge ({left}, {right}) -> {new}")
        vocab[new] = vocab[left] + vocab[right]
    tok._vocab = vocab
    tok.merges = np.concatenate([tok.merges, merges])
    tok.merge_ids = np.concatenate([tok.merge_ids, merge_ids])
    tok.special_tokens = special_ids(dict(special_tokens), vocab)
