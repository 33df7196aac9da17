"""Stage 3, the word table: unique chunks and their counts as flat NumPy arrays.

Word i is ``symbols[offsets[i]:offsets[i + 1]]`` (its UTF-8 bytes as int32 ids 0..255) and occurs
``counts[i]`` times in the corpus. This is all the kernel needs, and it is small: the unique
chunks of a corpus are a fraction of its size.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np


@dataclass(frozen=True)
class WordTable:
    symbols: np.ndarray   # int32, shape (n_symbols,)
    offsets: np.ndarray   # int64, shape (n_words + 1,), offsets[0] == 0
    counts: np.ndarray    # int64, shape (n_words,)

    @classmethod
    def from_counts(cls, counts: dict[bytes, int]) -> "WordTable":
        """Build from ``{chunk bytes: count}``; words of zero count are left out."""
        words = [w for w, n in counts.items() if n > 0 and w]
        n = len(words)
        word_counts = np.fromiter((counts[w] for w in words), dtype=np.int64, count=n)
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        symbols = np.frombuffer(b"".join(words), dtype=np.uint8).astype(np.int32)
        return cls(symbols, offsets, word_counts)

    @classmethod
    def from_words(cls, words: Iterable[bytes]) -> "WordTable":
        """Count a sequence of chunks (bytes); handy for tests."""
        counts: dict[bytes, int] = {}
        for w in words:
            counts[w] = counts.get(w, 0) + 1
        return cls.from_counts(counts)

    def __len__(self) -> int:
        return len(self.counts)

    @property
    def n_symbols(self) -> int:
        return len(self.symbols)

    @property
    def total_chunks(self) -> int:
        return int(self.counts.sum())

    def word(self, i: int) -> bytes:
        return self.symbols[self.offsets[i]:self.offsets[i + 1]].astype(np.uint8).tobytes()

    def as_dict(self) -> dict[bytes, int]:
        return {self.word(i): int(self.counts[i]) for i in range(len(self))}

    @property
    def nbytes(self) -> int:
        return self.symbols.nbytes + self.offsets.nbytes + self.counts.nbytes
