"""Encoding time against the shape of the text: no quadratic corner, and ids numbered either way.

    python benchmarks/bench_encode_shapes.py [--encoding cl100k_base] [--max-mb 10] [--repeats 3]

1. Corners: one call of ``encode_to_numpy`` on texts of 1 KB to --max-mb MB of each adversarial
   shape (one repeated character, random bytes decoded as Latin-1, a run of digits, letters with
   no space, CJK with no space); prints nanoseconds per byte per size and the ratio of the
   largest to the smallest time per byte (flat within 2x is the goal). The encoder's chunk cache
   is emptied before each timing (``fresh_cache``) so repeats do not hide the work. tiktoken (when installed)
   is timed on the same texts up to 1 MB, for scale.
2. Ids: the same merges numbered as a trained tokenizer numbers them (bytes 0-255, merges
   256 + i) and as the loaded .tiktoken file does, encoding mix33; the two must take the same
   time (their ids differ, their tokens must not).
"""
from __future__ import annotations

import argparse
import functools
import random
import statistics
import time

import numpy as np

import bpe_fast
from bench_encode import mix33_text
from mix33 import corpus_dir

SHAPES = {
    "one repeated character": lambda n, rng: "a" * n,
    "random bytes (Latin-1)": lambda n, rng: bytes(rng.getrandbits(8) for _ in range(n)).decode("latin-1"),
    "digits": lambda n, rng: "".join(rng.choice("0123456789") for _ in range(n)),
    "letters, no space": lambda n, rng: "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n)),
    "CJK, no space": lambda n, rng: "".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(n // 3)),
}


def best_time(fn, repeats: int, before=lambda: None) -> float:
    times = []
    for _ in range(repeats):
        before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def fresh_cache(tok) -> None:
    """An empty chunk cache, already made (making one costs a fixed few microseconds)."""
    tok._native.clear_caches()
    tok.encode_to_numpy("x", disallowed_special=())


def corners(tok, sizes: list[int], repeats: int, tiktoken_enc) -> None:
    rng = random.Random(0)
    print("| shape | " + " | ".join(f"{s // 1000:,} KB" for s in sizes) + " | largest / smallest ns per byte |")
    print("|---|" + "---:|" * (len(sizes) + 1))
    for shape, make in SHAPES.items():
        text_max = make(max(sizes), rng)
        per_byte = []
        for size in sizes:
            text = text_max[:size if not shape.startswith("CJK") else size // 3]
            nbytes = len(text.encode("utf-8"))
            t = best_time(functools.partial(tok.encode_to_numpy, text, disallowed_special=()), repeats,
                          lambda: fresh_cache(tok))
            per_byte.append(t / nbytes * 1e9)
        print(f"| {shape} | " + " | ".join(f"{p:.1f}" for p in per_byte) + f" | {max(per_byte) / min(per_byte):.2f}x |")
    if tiktoken_enc is not None:
        print("\ntiktoken, ns per byte, for scale:")
        for shape, make in SHAPES.items():
            row = []
            for size in [s for s in sizes if s <= 1_000_000]:
                text = make(size, rng)
                nbytes = len(text.encode("utf-8"))
                seconds = best_time(functools.partial(tiktoken_enc.encode_ordinary, text), 1)
                row.append(f"{seconds / nbytes * 1e9:.1f}")
            print(f"  {shape}: " + ", ".join(row))


def numbering(tok, repeats: int) -> None:
    symbol_of = np.empty(tok.n_base, np.int64)
    symbol_of[tok.byte_ids] = np.arange(256)
    symbol_of[tok.merge_ids] = 256 + np.arange(len(tok.merge_ids))
    trained = bpe_fast.Tokenizer(symbol_of[tok.merges], pattern=tok.pattern)
    text = mix33_text(corpus_dir())
    a = tok.encode_to_numpy(text, disallowed_special=())
    b = trained.encode_to_numpy(text, disallowed_special=())
    assert np.array_equal(symbol_of[a], b), "the two numberings give different tokens"
    times: dict[str, list[float]] = {"loaded (.tiktoken ids)": [], "trained (256 + i ids)": []}
    for _ in range(repeats):
        for name, t in (("loaded (.tiktoken ids)", tok), ("trained (256 + i ids)", trained)):
            t._native.clear_caches()
            start = time.perf_counter()
            t.encode_to_numpy(text, disallowed_special=())
            times[name].append(time.perf_counter() - start)
    medians = {k: statistics.median(v) for k, v in times.items()}
    print(f"\nmix33, encode_to_numpy, caches cleared, median of {repeats}, same tokens: "
          + "; ".join(f"{k} {v:.3f} s" for k, v in medians.items())
          + f"; ratio {medians['trained (256 + i ids)'] / medians['loaded (.tiktoken ids)']:.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encoding", default="cl100k_base", choices=["cl100k_base", "o200k_base"])
    ap.add_argument("--max-mb", type=float, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    tok = bpe_fast.load(args.encoding)
    sizes = [s for s in (1_000, 10_000, 100_000, 1_000_000, 10_000_000) if s <= args.max_mb * 1e6]
    try:
        tiktoken_enc = tok.to_tiktoken()
    except ImportError:          # MissingExtraError: tiktoken is not installed
        tiktoken_enc = None
    print(f"{args.encoding}: ns per byte, best of {args.repeats}")
    corners(tok, sizes, args.repeats, tiktoken_enc)
    numbering(tok, args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
