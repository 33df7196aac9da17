"""Superword tokens (SuperBPE) against plain BPE: bytes per token on held-out text at equal size.

    python benchmarks/bench_superword.py --vocab-sizes 8192,16384,32768 --at 0.8

Trains on big.txt + tinyshakespeare.txt + the-verdict.txt (English prose) from the shared
corpora, and measures on held-out English text: the last 10% of big.txt, cut off before
training. For each vocab size V: plain BPE with the cl100k pattern, and superword training that
switches at ``at`` x V (stage one cl100k, stage two SuperBPE's rule, patterns.SUPERWORD).
Prints bytes per token (higher is better), the token counts, the gain, and that both round-trip.
"""
from __future__ import annotations

import argparse
import sys
import time

import bpe_fast
from mix33 import corpus_dir  # noqa: E402  (benchmarks/ is on sys.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab-sizes", default="8192,16384,32768")
    ap.add_argument("--at", type=float, default=0.8, help="the switch point, as a fraction of each vocab size")
    ap.add_argument("--corpus-dir", default=None)
    args = ap.parse_args()
    corpora = corpus_dir(args.corpus_dir)
    big = (corpora / "big.txt").read_text(encoding="utf-8")
    cut = big.rfind("\n", 0, int(len(big) * 0.9)) + 1
    train_docs = [big[:cut], (corpora / "tinyshakespeare.txt").read_text(encoding="utf-8"),
                  (corpora / "the-verdict.txt").read_text(encoding="utf-8")]
    held_out = big[cut:]
    size = len(held_out.encode("utf-8"))
    print(f"training text {sum(len(d.encode()) for d in train_docs):,} bytes; held-out {size:,} bytes "
          f"(the last 10% of big.txt); switch at {args.at:g} x V\n")
    print("| vocab | plain B/token | superword B/token | tokens plain | tokens superword | fewer tokens | "
          "train s plain | train s superword |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for vocab in [int(v) for v in args.vocab_sizes.split(",")]:
        t0 = time.perf_counter()
        plain = bpe_fast.train_from_iterator(train_docs, vocab, pattern="cl100k", progress="none")
        t1 = time.perf_counter()
        sw = bpe_fast.train_from_iterator(train_docs, vocab, pattern="cl100k", superword_at=int(vocab * args.at),
                                          progress="none")
        t2 = time.perf_counter()
        n_plain, n_sw = len(plain.encode_ordinary(held_out)), len(sw.encode_ordinary(held_out))
        for tok in (plain, sw):
            if tok.decode(tok.encode_ordinary(held_out)) != held_out:
                sys.exit(f"round trip failed for {tok}")
        print(f"| {vocab:,} | {size / n_plain:.3f} | {size / n_sw:.3f} | {n_plain:,} | {n_sw:,} | "
              f"{1 - n_sw / n_plain:.1%} | {t1 - t0:.1f} | {t2 - t1:.1f} |", flush=True)


if __name__ == "__main__":
    main()
