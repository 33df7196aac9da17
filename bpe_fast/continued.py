"""Continued training: learn more merges on top of any tokenizer (``base=``; CLI ``--base``).

The base's tokens keep their ids and its merges their ranks; the corpus is first encoded by the
base (each chunk whole, as the result will encode it), and the kernel starts from that layout
instead of from bytes. New tokens take ids after every id the base uses, then new special
tokens. Superword training (``superword_at=``) is continued training with another pattern.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from collections.abc import Sequence

import numpy as np

from . import _kernel
from .counting import default_workers
from .errors import ArgumentError, ArgumentTypeError
from .tokenizer import Tokenizer
from .wordtable import WordTable


def check_base(base, vocab_size: int, tie_break: str) -> None:
    """Refuse, before any text is read, a base that is no tokenizer or leaves no room."""
    if base is None:
        return
    if not isinstance(base, Tokenizer):
        raise ArgumentTypeError(f"base must be a Tokenizer (bpe_fast.load(...) opens any), not {type(base).__name__}")
    if tie_break != "bytes":
        raise ArgumentError("tie_break applies to training from bytes; continuing from a base, ties go to the "
                            "smallest pair of the base's ids")
    if vocab_size <= base.vocab_size:
        raise ArgumentError(f"vocab_size={vocab_size} is no larger than the base's {base.vocab_size}: "
                            f"continued training needs room for new tokens")


def base_special_tokens(base: Tokenizer | None, specials: Sequence[str]) -> list[str]:
    """A base's special tokens that are not among ``specials``: cut out of the text too, never learned."""
    return [s for s in (base.special_tokens if base is not None else ()) if s not in specials]


def first_new_id(base: Tokenizer | None) -> int:
    """The id of the first learned token: 256 from bytes, else after every id the base uses."""
    return 256 if base is None else base.vocab_size


def tokenized_by(base: Tokenizer, table: WordTable) -> tuple[np.ndarray, np.ndarray]:
    """The corpus as the base tokenizer leaves it, in the kernel's layout and word order (its
    ``start``: each token's id at its first byte, a tail mark -(id + 2) at its last, -1
    between, the words by falling count); and each id's length in bytes. Each chunk is encoded
    whole by the base's merges, as the trained tokenizer will encode it, also when the chunks
    come from another pattern (superword training). The native encoder writes the layout
    itself, on as many threads as there are CPUs (it runs without the GIL), each taking runs
    of chunks in turn: no array of ids, no NumPy pass over it, no copy into the kernel's
    order. A few runs a thread, so that a thread the machine gives less time takes fewer."""
    slots = np.empty(table.n_symbols, dtype=np.int32)
    positions = _kernel.kernel_positions(table.offsets, table.counts)
    n, threads = len(table), min(default_workers(), max(1, len(table) // 50_000))
    runs = 4 * threads if threads > 1 else 1
    bounds = [n * k // runs for k in range(runs + 1)]

    def lay_out(k: int) -> None:
        a, b = bounds[k], bounds[k + 1]
        base._native.lay_out_chunks(table.symbols, table.offsets[a:b + 1], positions[a:b], slots)

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lay_out, range(runs)))
    lengths = np.array([len(t) if t is not None else 0 for t in base._vocab], dtype=np.int32)
    return slots, lengths


def extended(base: Tokenizer, merges: np.ndarray, pattern: str | None, new_specials: Sequence[str]) -> Tokenizer:
    """The base's merges and ids, then the new merges; special tokens: the base's with their
    ids, new ones after the new tokens."""
    first_id = first_new_id(base)
    new_ids = np.arange(first_id, first_id + len(merges))
    specials = dict(base.special_tokens) | {s: first_id + len(merges) + k for k, s in enumerate(new_specials)}
    if pattern != base.pattern:       # superword training: another pattern
        return Tokenizer(np.concatenate([base.merges, merges.reshape(-1, 2)]), pattern=pattern,
                         special_tokens=specials, merge_ids=np.concatenate([base.merge_ids, new_ids]),
                         byte_ids=base.byte_ids)
    return base._extended(merges, new_ids, specials)


def truncated(tok: Tokenizer, vocab_size: int, base: Tokenizer) -> Tokenizer:
    """A continued training cut to ``vocab_size``: the base whole, and as many new merges as the
    size allows (several sizes train once, to the largest)."""
    new_specials = sorted((s for s in tok.special_tokens if s not in base.special_tokens),
                          key=tok.special_tokens.__getitem__)
    n_new = vocab_size - base.vocab_size - len(new_specials)
    keep = len(base.merges) + n_new
    if n_new < 0 or keep > len(tok.merges):
        raise ArgumentError(f"vocab_size {vocab_size} is out of range for this continued training")
    specials = dict(base.special_tokens) | {s: base.vocab_size + n_new + k for k, s in enumerate(new_specials)}
    return Tokenizer(tok.merges[:keep], tok.pattern, specials, merge_ids=tok.merge_ids[:keep], byte_ids=tok.byte_ids)
