"""A big benchmark corpus with a web-like long tail, built from the real mix33 text.

    python benchmarks/make_corpus.py --size 1G -o web-1g.txt        # about 20 s a GB

Web text has millions of distinct chunks per GB (names, typos, identifiers, rare words), far
more than any book: mix33 repeated would give the same 0.45 million chunks again and again.
So each copy of mix33 is changed a little: a fraction ``--mutate`` of its ASCII words get a
random suffix of 2-5 lowercase letters ("quick" -> "quickvbx"), and as many get a random
uppercase-and-digit identifier inserted before them ("X7QK2 "). The rest stays real text in
35 languages, code and prose, so the head of the distribution is real. The default fraction
gives about 6 million distinct cl100k chunks per GB (`--stats` counts them with bpe_fast).

The file is written in pieces, never held whole; the same --seed gives the same bytes.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from mix33 import corpus_dir, mix33_files  # benchmarks/ is on sys.path

LOWER = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
UPPER_DIGITS = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", dtype=np.uint8)


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def word_ends(base: np.ndarray) -> np.ndarray:
    """Positions just after an ASCII lowercase word that follows a space (where a suffix goes)."""
    is_lower = (base >= ord("a")) & (base <= ord("z"))
    ends = np.flatnonzero(is_lower[:-1] & ~is_lower[1:]) + 1
    return ends


def word_starts(base: np.ndarray) -> np.ndarray:
    is_letter = ((base >= ord("a")) & (base <= ord("z"))) | ((base >= ord("A")) & (base <= ord("Z")))
    return np.flatnonzero((base[:-1] == ord(" ")) & is_letter[1:]) + 1


def insertions(rng, places: np.ndarray, fraction: float, alphabet: np.ndarray, lengths: tuple[int, int],
               trailer: bytes = b"") -> tuple[np.ndarray, np.ndarray]:
    """(index, byte) pairs inserting a random word of the alphabet at a fraction of the places."""
    chosen = np.sort(rng.choice(places, size=int(len(places) * fraction), replace=False))
    n = rng.integers(lengths[0], lengths[1] + 1, size=len(chosen))
    total = n + len(trailer)
    index = np.repeat(chosen, total)
    letters = alphabet[rng.integers(0, len(alphabet), size=int(total.sum()))]
    if trailer:   # the trailer's bytes at the end of each inserted word
        ends = np.cumsum(total)
        for k, byte in enumerate(trailer):
            letters[ends - len(trailer) + k] = byte
    return index, letters


def mutated_copy(base: np.ndarray, ends: np.ndarray, starts: np.ndarray, rng, fraction: float) -> np.ndarray:
    i1, v1 = insertions(rng, ends, fraction, LOWER, (2, 5))
    i2, v2 = insertions(rng, starts, fraction, UPPER_DIGITS, (4, 7), trailer=b" ")
    index = np.concatenate([i1, i2])
    order = np.argsort(index, kind="stable")
    return np.insert(base, index[order], np.concatenate([v1, v2])[order])


def write_corpus(out: Path, size: int, fraction: float, seed: int) -> int:
    base = np.frombuffer(b"".join(p.read_bytes() for p in mix33_files(corpus_dir())), dtype=np.uint8)
    ends, starts = word_ends(base), word_starts(base)
    rng = np.random.default_rng(seed)
    written = 0
    with open(out, "wb") as fh:
        while written < size:
            piece = mutated_copy(base, ends, starts, rng, fraction).tobytes()
            if written + len(piece) > size:   # end on a line, and on a whole UTF-8 character
                piece = piece[:size - written]
                piece = piece[:piece.rfind(b"\n") + 1] or piece
            fh.write(piece)
            written += len(piece)
            print(f"\r{written / 1e9:.2f} GB", end="", file=sys.stderr)
    print(file=sys.stderr)
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1G", help="bytes to write: 1G, 500M, ... (default 1G)")
    ap.add_argument("-o", "--output", required=True, help="the file to write")
    ap.add_argument("--mutate", type=float, default=0.045,
                    help="fraction of words that get a random suffix, and of places that get an identifier")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stats", action="store_true", help="count distinct cl100k chunks with bpe_fast afterwards")
    args = ap.parse_args()
    written = write_corpus(Path(args.output), parse_size(args.size), args.mutate, args.seed)
    print(f"wrote {written:,} bytes to {args.output}")
    if args.stats:
        import bpe_fast
        table = bpe_fast.count(args.output, pattern="cl100k", progress="none")
        print(f"{len(table):,} distinct cl100k chunks, {len(table) / (written / 1e9):,.0f} per GB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
