"""Continued training: learn more merges on top of any tokenizer (``base=``; CLI ``--base``).

The base's tokens keep their ids and its merges their ranks; the corpus is first encoded by the
base (each chunk whole, as the result will encode it), and the kernel starts from that layout
instead of from bytes. New tokens take ids after every id the base uses, then new special
tokens. Superword training (``superword_at=``) is continued training with another pattern.

Ties between pairs of equal count go to the smallest pair of ids. With ``tie_break="bytes"``
those are the base's own ids. With ``tie_break="huggingface"`` they are the ids Hugging Face's
BpeTrainer numbers the base's tokens by (``huggingface_order``): its bytes in Hugging Face's
byte order, then its learned tokens in merge order; for a tokenizer.json that BpeTrainer wrote,
the file's own ids. So continuing a tokenizer trained with Hugging Face's ties learns what
training straight through with them learns.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Sequence

import numpy as np

from . import _kernel
from ..counting.workers import default_workers
from ..errors import ArgumentError, ArgumentTypeError
from ..formats.huggingface import huggingface_ids
from ..tokenizer import Tokenizer
from ..counting.wordtable import WordTable


def check_base(base, vocab_size: int) -> None:
    """Refuse, before any text is read, a base that is no tokenizer or leaves no room."""
    if base is None:
        return
    if not isinstance(base, Tokenizer):
        raise ArgumentTypeError(f"base must be a Tokenizer (bpe_fast.load(...) opens any), not {type(base).__name__}")
    if base.events is not None:
        raise ArgumentError("base= is a Picky BPE tokenizer: continued training extends a list of merges, and its "
                            "vocabulary is a list of events (merges and removals); train it again with a larger "
                            "vocab_size instead")
    if base.is_boundless:
        raise ArgumentError("base= is a BoundlessBPE tokenizer: new merges would rank after its supermerges, which "
                            "join whole words above the merges; continue base.without_supermerges() instead")
    if vocab_size <= base.vocab_size:
        raise ArgumentError(f"vocab_size={vocab_size} is no larger than the base's {base.vocab_size}: "
                            f"continued training needs room for new tokens")


def base_special_tokens(base: Tokenizer | None, specials: Sequence[str]) -> list[str]:
    """A base's special tokens that are not among ``specials``: cut out of the text too, never learned."""
    return [s for s in (base.special_tokens if base is not None else ()) if s not in specials]


def first_new_id(base: Tokenizer | None) -> int:
    """The id of the first learned token: 256 from bytes, else after every id the base uses."""
    return 256 if base is None else base.vocab_size


def huggingface_order(base: Tokenizer) -> np.ndarray:
    """For each id of the base (below ``base.n_base``), the id Hugging Face's BpeTrainer would
    give its token (-1 where no token has the id): the special tokens first, then the bytes by
    their GPT-2 character, then the merges in rank order (``Tokenizer.with_huggingface_ids``).
    Ties between pairs of the base's tokens break by these ids, as BpeTrainer's do by its own."""
    renumber, _ = huggingface_ids(base.byte_ids, base.merge_ids, base.special_tokens)
    order = np.full(base.n_base, -1, dtype=np.int64)
    order[list(renumber)] = list(renumber.values())
    return order


def tokenized_by(base: Tokenizer, table: WordTable, kernel_ids: np.ndarray | None = None,
                 kernel_order: bool = False, slots: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The corpus as the base tokenizer leaves it, in the kernel's layout (its ``start``: each
    token's id at its first byte, a tail mark -(id + 2) at its last, -1 between, the words in
    table order, or with ``kernel_order`` in the kernel's order, by falling count, so that the
    kernel takes the array over instead of copying it); and each id's length in bytes. Each
    chunk is encoded whole by the base's merges, as the trained tokenizer will encode it, also
    when the chunks come from another pattern (superword training). The native encoder writes
    the layout itself, on as many threads as there are CPUs (it runs without the GIL), each
    taking runs of chunks in turn: no array of ids, no NumPy pass over it. A few runs a thread,
    so that a thread the machine gives less time takes fewer.
    ``kernel_ids`` (base id -> id in the kernel) numbers the tokens another way: the kernel
    breaks ties by its ids (``huggingface_order``); then one pass renumbers the layout.
    ``slots``: the array to lay the table out in (``layout_memory``), else a new one."""
    if slots is None or slots.shape != (table.n_symbols,) or slots.dtype != np.int32:
        slots = np.empty(table.n_symbols, dtype=np.int32)
    # where each word goes: where the kernel's order puts it, or where the table has it
    positions = _kernel.kernel_positions(table.offsets, table.counts) if kernel_order else table.offsets[:-1]
    # Threads by the work, chunks or bytes, whichever asks for more: a few thousand long chunks
    # (superword chunks of generated text without punctuation run to hundreds of bytes) are
    # as much work as millions of short ones.
    n = len(table)
    threads = min(default_workers(), max(1, n // 50_000, table.n_symbols // 2_000_000))
    runs = 4 * threads if threads > 1 else 1
    bounds = [n * k // runs for k in range(runs + 1)]
    # Each thread's chunk table made at the size it will reach, not doubled up to it: one piece
    # new to the thread per ~50 bytes of its chunks (52 MB of long-tailed text and 20 MB of
    # natural text, both at 16384 over 12000), the table at most half full.
    table_bits = (2 * table.n_symbols // threads // 50).bit_length()

    def lay_out(k: int) -> None:
        a, b = bounds[k], bounds[k + 1]
        base._native.lay_out_chunks(table.symbols, table.offsets[a:b + 1], positions[a:b], slots, table_bits)

    try:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lay_out, range(runs)))
    finally:
        # The threads' chunk tables (tens of MB each, of pieces of this table) are let go: the
        # kernel's pair count that comes next takes that memory instead of fresh pages. (The
        # base's caches go with them: they only make its next encodings faster.)
        base._native.clear_caches()
    lengths = np.array([len(t) if t is not None else 0 for t in base._vocab], dtype=np.int32)
    if kernel_ids is None:
        return slots, lengths
    return _renumbered_slots(slots, kernel_ids), _renumbered(lengths, kernel_ids)


def layout_memory(n_symbols: int, stop: threading.Event, piece: int = 1 << 22) -> np.ndarray:
    """The array ``tokenized_by`` lays a table of ``n_symbols`` out in, its pages touched a
    piece at a time until ``stop`` is set. On this kind of machine the first touch of a page is
    dear (the kernel zeroes it: about 0.3 s for 150 MB, a fifth of a superword layout); a
    thread with a core to spare (superword training's count ahead, once it has counted, while
    stage one still learns) touches them instead, and stops as soon as the layout could start,
    so it never makes the layout wait (pages it did not reach are touched by the layout)."""
    slots = np.empty(n_symbols, dtype=np.int32)
    for start in range(0, n_symbols, piece):
        if stop.is_set():
            break
        slots[start:start + piece] = -1     # (NumPy lets the GIL go while it fills)
    return slots


def _renumbered_slots(slots: np.ndarray, kernel_ids: np.ndarray) -> np.ndarray:
    """The layout with each token's id (at its first byte) and tail mark -(id + 2) (at its last)
    given as its kernel id; the -1 between stay."""
    heads, tails = slots >= 0, slots <= -2
    slots[heads] = kernel_ids[slots[heads]]
    slots[tails] = -kernel_ids[-slots[tails] - 2] - 2
    return slots


def _renumbered(lengths: np.ndarray, kernel_ids: np.ndarray) -> np.ndarray:
    """The token lengths indexed by kernel id (0 where no token has the id)."""
    used = kernel_ids >= 0
    out = np.zeros(int(kernel_ids.max(initial=-1)) + 1, dtype=np.int32)
    out[kernel_ids[used]] = lengths[used]
    return out


def extended(base: Tokenizer, merges: np.ndarray, pattern: str | None, new_specials: Sequence[str],
             normalize: str | None) -> Tokenizer:
    """The base's merges and ids, then the new merges; special tokens: the base's with their
    ids, new ones after the new tokens; the pattern and normalization the corpus was split with."""
    first_id = first_new_id(base)
    new_ids = np.arange(first_id, first_id + len(merges))
    specials = dict(base.special_tokens) | {s: first_id + len(merges) + k for k, s in enumerate(new_specials)}
    if pattern != base.pattern or normalize != base.normalize:   # superword training, or another normalization
        return Tokenizer(np.concatenate([base.merges, merges.reshape(-1, 2)]), pattern=pattern,
                         special_tokens=specials, merge_ids=np.concatenate([base.merge_ids, new_ids]),
                         byte_ids=base.byte_ids, normalize=normalize)
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
    return Tokenizer(tok.merges[:keep], tok.pattern, specials, merge_ids=tok.merge_ids[:keep], byte_ids=tok.byte_ids,
                     normalize=tok.normalize)
