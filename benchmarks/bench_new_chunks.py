"""The BPE of chunks never seen, alone: merging (tiktoken's rule over small tables) against backtracking.

    python benchmarks/bench_new_chunks.py TEXT [--encodings cl100k_base,o200k_base] [--mb 20] [--repeats 7]

Splits the first --mb MB of TEXT with the encoding's own pattern (the ``regex`` module), keeps each
distinct chunk that is no token once, in the order met, and times ``MergeEncoder.bpe_chunks`` over
them with no cache, by chunk length: "backtrack" (the trie of reachable tokens, _bpe.pxd),
"merge" (_ranks.pxd's merge_short, chunks up to 64 bytes with merge_vector on a CPU with
AVX-512, else up to 48 with merge_scalar) and "merge_scalar", alternating, medians of --repeats. All must give
the same ids (checked). This is the part of encoding text never seen that the chunk cache cannot
help with (issue 30; benchmarks/RESULTS.md, "Encode once (2)" and "(3)").
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import regex

import bpe_fast

BUCKETS = [(1, 16), (17, 32), (33, 48), (49, 64), (65, 96), (97, 128), (129, 1 << 30)]
SHORT_MERGE = 48                # the longest chunk merge_scalar takes (bpe_fast/encoding/_ranks.pxd);
                                # merge takes up to encoder.merge_longest (64 with AVX-512)


def new_chunks(tok, text: str) -> list[bytes]:
    """The distinct chunks of text that are no token, in the order met."""
    tokens = tok.mergeable_ranks()
    seen: set[bytes] = set()
    out = []
    for chunk in regex.findall(tok.pattern, text):
        b = chunk.encode()
        if b not in seen and b not in tokens:
            seen.add(b)
            out.append(b)
    return out


def packed(chunks: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(chunks) + 1, np.int64)
    offsets[1:] = np.cumsum([len(c) for c in chunks])
    return np.frombuffer(b"".join(chunks), np.uint8), offsets


def timed(encoder, data, offsets, method: str) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    ids, counts = encoder.bpe_chunks(data, offsets, method)
    return time.perf_counter() - start, ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("text", type=Path)
    parser.add_argument("--encodings", default="cl100k_base,o200k_base")
    parser.add_argument("--mb", type=float, default=20)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--vocabs", type=Path, default=None, help="folder of the .tiktoken files")
    args = parser.parse_args()
    text = args.text.read_text(encoding="utf-8")[: int(args.mb * 1e6)]
    for encoding in args.encodings.split(","):
        tok = bpe_fast.load(encoding, path=args.vocabs) if args.vocabs else bpe_fast.load(encoding)
        encoder = tok._native
        chunks = new_chunks(tok, text)
        print(f"\n{encoding}: {len(chunks):,} distinct chunks of {args.text.name}'s first {args.mb:g} MB "
              "that are no token")
        print(f"{'bytes':>9} {'chunks':>9} {'backtrack ns':>13} {'merge ns':>9} {'scalar ns':>10} "
              f"{'merge/backtrack':>16} {'scalar/backtrack':>17}")
        for low, high in BUCKETS:
            part = [c for c in chunks if low <= len(c) <= high]
            if not part:
                continue
            data, offsets = packed(part)
            methods = ["backtrack"] + (["merge"] if high <= encoder.merge_longest else []) \
                + (["merge_scalar"] if high <= SHORT_MERGE else [])
            times: dict[str, list[float]] = {method: [] for method in methods}
            results = {}
            for r in range(args.repeats):
                for method in methods[r % len(methods):] + methods[:r % len(methods)]:
                    seconds, results[method] = timed(encoder, data, offsets, method)
                    times[method].append(seconds / len(part) * 1e9)
            for method in methods[1:]:
                if not np.array_equal(results[method], results["backtrack"]):
                    raise SystemExit(f"{encoding}: {method} and backtrack differ on chunks of {low}-{high} bytes")
            median = {method: statistics.median(times[method]) if method in times else float("nan")
                      for method in ("backtrack", "merge", "merge_scalar")}
            back = median["backtrack"]
            label = f"{low}-{high}" if high < 1 << 30 else f"{low}+"
            merge, scalar = median["merge"], median["merge_scalar"]
            print(f"{label:>9} {len(part):>9,} {back:>13,.0f} {merge:>9,.0f} {scalar:>10,.0f} "
                  f"{merge / back:>16.2f} {scalar / back:>17.2f}")


if __name__ == "__main__":
    main()
