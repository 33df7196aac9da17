"""The profiling ladder: one BPE trainer written six ways, each rung adding one idea.

    from bpe_fast.workshop.ladder import RUNGS, Workload
    work = Workload.load("big.txt", chars=1_000_000, pattern="gpt2")
    merges = RUNGS["v1"].train(work.chunks, 20)      # [(left, right), ...]; merge k makes 256 + k

Every rung takes the same pre-split chunks (a list of str) and a number of merges, and returns
the merges it chose. ``harness.py`` times them, checks them against ``bpe_fast.training.reference`` and
draws the chart; ``bpe-fast profile`` is its command line.
"""
from __future__ import annotations

import importlib
import os
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from ...errors import BpeFastError
from ...paths import shared_corpus, stdlib_root, stdlib_sources
from ...pretokenize.patterns import DEFAULT_PATTERN as PATTERN_DEFAULT, name_of, resolve
from ...pretokenize.splitter import chunks_of

__all__ = ["RUNGS", "Rung", "Workload", "select", "shared_corpus", "stdlib_text", "read_prefix"]

# The notebook's workload: the first 1,000,000 characters of big.txt, 20 merges, GPT-2 split.
# The pattern defaults to bpe_fast's own default (cl100k), so that `bpe-fast profile` and
# `bpe-fast train` split alike; --pattern gpt2 gives the notebook's split.
DEFAULT_CHARS = 1_000_000
DEFAULT_MERGES = 20
DEFAULT_PATTERN = PATTERN_DEFAULT


@dataclass(frozen=True)
class Rung:
    name: str      # "v1", "v2", ... -- the name in tables and JSON
    label: str     # a word or two for charts
    idea: str      # the one idea this rung adds
    module: str    # the module holding train(chunks, n_merges), TIE_RULE and HOT
    cost: str      # "recount": every merge re-reads the corpus; "incremental": it does not

    @property
    def impl(self):
        return importlib.import_module(self.module)

    def train(self, chunks: list[str], n_merges: int) -> list[tuple[int, int]]:
        return self.impl.train(chunks, n_merges)

    @property
    def tie_rule(self) -> str:
        return self.impl.TIE_RULE

    @property
    def hot_functions(self) -> tuple:
        """The functions ``--line-profile`` times line by line."""
        return self.impl.HOT


_LADDER = [
    Rung("v1", "dict", "dict of pair counts, running maximum, list-building merge (the notebook)",
         "bpe_fast.workshop.ladder.v1_dict", "recount"),
    Rung("v2", "Counter", "collections.Counter per chunk, most_common(1) per chunk (the notebook)",
         "bpe_fast.workshop.ladder.v2_counter", "recount"),
    Rung("v3", "Cython", "v1's get_stats and merge compiled with Cython, typed loop index",
         "bpe_fast.workshop.ladder._v3_cython", "recount"),
    Rung("v4", "word counts", "count each distinct chunk once; merge the distinct chunks",
         "bpe_fast.workshop.ladder.v4_wordcounts", "recount"),
    Rung("v5", "incremental", "update only the words a merge touches; a heap picks the best pair",
         "bpe_fast.workshop.ladder.v5_incremental", "incremental"),
    Rung("v6", "kernel", "v5 on NumPy arrays in compiled code: bpe_fast's own kernel",
         "bpe_fast.workshop.ladder.v6_kernel", "incremental"),
]
RUNGS: dict[str, Rung] = {r.name: r for r in _LADDER}


def select(versions: str | list[str] | None, argument: str = "versions") -> list[Rung]:
    """Rungs by name ("v1,v3,v6" or a list), in ladder order; all of them for None.
    ``argument`` names the argument in the error message."""
    if versions is None:
        return list(_LADDER)
    names = [v.strip().lower() for v in (versions.split(",") if isinstance(versions, str) else versions)]
    names = [n for n in names if n]
    unknown = [n for n in names if n not in RUNGS]
    if unknown or not names:
        raise BpeFastError(f"{argument}: unknown rung {', '.join(map(repr, unknown)) or '(none given)'}; "
                           f"choose from {', '.join(RUNGS)}")
    return [r for r in _LADDER if r.name in names]


def stdlib_text(chars: int) -> tuple[str, str]:
    """The first ``chars`` characters of this Python's standard library sources, concatenated
    (the corpus that needs no download), and a description of it."""
    pieces, total, files = [], 0, stdlib_sources()
    used = 0
    for path in files:
        if total >= chars:
            break
        with open(path, encoding="utf-8", errors="replace") as fh:
            piece = fh.read(chars - total)
        pieces.append(piece)
        total += len(piece)
        used += 1
    return "".join(pieces), f"Python standard library ({used} .py files from {stdlib_root()})"


def read_prefix(path: str | os.PathLike, chars: int) -> str:
    """The first ``chars`` characters of a UTF-8 file (only those are read)."""
    path = Path(path)
    if not path.exists():
        raise BpeFastError(f"corpus {str(path)!r}: no such file")
    if path.is_dir():
        raise BpeFastError(f"corpus {str(path)!r} is a directory; give a text file")
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read(chars)
    except UnicodeDecodeError as exc:
        raise BpeFastError(f"corpus {str(path)!r} is not UTF-8 text ({exc.reason})") from None


@dataclass
class Workload:
    """What every rung trains on: a slice of a corpus, split into chunks by a pattern."""
    text: str
    pattern: str | None          # the pattern's name or regex, as given
    source: str                  # where the text came from, for reports
    chunks: list[str] = field(repr=False, default_factory=list)

    @classmethod
    def from_text(cls, text: str, pattern: str | None = DEFAULT_PATTERN, source: str = "text") -> Workload:
        chunks = chunks_of([text], resolve(pattern))
        if not chunks:
            raise BpeFastError(f"the workload from {source} holds no text to train on")
        return cls(text, pattern, source, chunks)

    @classmethod
    def load(cls, corpus: str | os.PathLike | None = None, chars: int = DEFAULT_CHARS,
             pattern: str | None = DEFAULT_PATTERN) -> Workload:
        """The first ``chars`` characters of ``corpus`` (a UTF-8 file), or of the Python standard
        library's sources if ``corpus`` is None."""
        if not isinstance(chars, int) or chars <= 0:
            raise BpeFastError(f"chars must be a positive number of characters, not {chars!r}")
        if corpus is None:
            text, source = stdlib_text(chars)
        else:
            text, source = read_prefix(corpus, chars), str(corpus)
        return cls.from_text(text, pattern, source)

    @cached_property
    def word_counts(self) -> dict[bytes, int]:
        """{chunk bytes: occurrences} in order of first appearance (what the reference takes)."""
        return {chunk.encode("utf-8"): n for chunk, n in Counter(self.chunks).items()}

    def describe(self) -> dict:
        return {"corpus": self.source, "chars": len(self.text),
                "pattern": name_of(resolve(self.pattern)),
                "chunks": len(self.chunks), "unique_chunks": len(self.word_counts)}
