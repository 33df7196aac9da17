"""Superword tokens (SuperBPE) against plain BPE: bytes per token at equal size, and what they cost.

    python benchmarks/bench_superword.py --vocab-sizes 8192,16384,32768 --at 0.8
    python benchmarks/bench_superword.py --cost --sizes 16384:12000,32768:24576 --repeats 3

Bytes per token (the default): trains on big.txt + tinyshakespeare.txt + the-verdict.txt
(English prose) from the shared corpora, and measures on held-out English text: the last 10% of
big.txt, cut off before training. For each vocab size V: plain BPE with the cl100k pattern, and
superword training that switches at ``at`` x V (stage one cl100k, stage two SuperBPE's rule,
patterns.SUPERWORD). Prints bytes per token (higher is better), the token counts, the gain, and
that both round-trip.

Cost (``--cost``, issues 20 and 33): ``train(files, V)`` against ``train(files, V, superword_at=T)``
on the texts ``--texts`` names (by default all): the long-tail slice the work was tuned on
(make_corpus.py's mutated kind, seed 0), each make_corpus.py generator (mutated, zipf, scripts,
code, neardup) at ``--seed`` (text not tuned on), all of ``--longtail-size`` (50M by default,
written once into ``--work-dir`` and reused), and natural text (big.txt and multilingual/*.txt).
Each training runs in a fresh process (fresh_training.train_once, which also measures the CPU every
other process on the machine used meanwhile), plain and superword alternating, ``--repeats``
times; prints the median seconds of each, their ratio, the median CPU seconds of each run's
process tree (their ratio moves less with the machine's load than the wall times'), the
stages' seconds from bpe_fast's summaries (stage one: counting, merging; stage two: counting,
merging), the others' CPU and the peak memory.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import bpe_fast
from mix33 import corpus_dir  # noqa: E402  (benchmarks/ is on sys.path)
from fresh_training import alternating, cost_texts, median_of, stage_cells

def quality(args) -> None:
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


def cost(args) -> None:
    corpora = corpus_dir(args.corpus_dir)
    kinds = cost_texts(Path(args.work_dir), args.longtail_size, args.seed,
                       [str(corpora / "big.txt")] + sorted(map(str, (corpora / "multilingual").glob("*.txt"))))
    wanted = args.texts.split(",")
    if not set(wanted) <= set(kinds):
        sys.exit(f"--texts: give some of {', '.join(kinds)}, not {args.texts}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs\n")
    print("| text | MB | V | T | plain s | superword s | superword / plain | CPU s plain / superword (ratio) | "
          "plain stages | superword stages | others' CPU s | peak MB plain / superword |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|")
    for kind in wanted:
        files = kinds[kind]()
        megabytes = sum(os.path.getsize(f) for f in files) / 1e6
        for size in args.sizes.split(","):
            vocab, at = (int(x) for x in size.split(":"))
            runs = alternating(files, vocab, {"plain": {}, "superword": {"superword_at": at}}, args.repeats)
            plain, sw = (median_of(runs[k], "seconds") for k in ("plain", "superword"))
            cpu_plain, cpu_sw = (median_of(runs[k], "cpu") for k in ("plain", "superword"))
            others = sum(r["other_cpu"] for k in runs for r in runs[k])
            peaks = "/".join(f"{max(r['peak_mb'] for r in runs[k]):,.0f}" for k in ("plain", "superword"))
            print(f"| {kind} | {megabytes:.0f} | {vocab:,} | {at:,} | {plain:.2f} | {sw:.2f} | {sw / plain:.2f} | "
                  f"{cpu_plain:.2f} / {cpu_sw:.2f} ({cpu_sw / cpu_plain:.2f}) | {stage_cells(runs['plain'])} | "
                  f"{stage_cells(runs['superword'])} | {others:.1f} | {peaks} |",
                  flush=True)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab-sizes", default="8192,16384,32768", help="bytes per token: the sizes")
    ap.add_argument("--at", type=float, default=0.8, help="bytes per token: the switch, a fraction of each size")
    ap.add_argument("--cost", action="store_true", help="time superword training against plain training")
    ap.add_argument("--sizes", default="16384:12000", help="cost: V:T pairs, comma-separated")
    ap.add_argument("--repeats", type=int, default=3, help="cost: runs of each, alternating")
    ap.add_argument("--texts", default="long-tail,mutated,zipf,scripts,code,neardup,natural",
                    help="cost: the kinds of text, comma-separated: long-tail (tuned on), "
                         "mutated, zipf, scripts, code, neardup (make_corpus.py at --seed), natural")
    ap.add_argument("--seed", type=int, default=11,
                    help="cost: make_corpus.py's seed for the generators' texts (the long-tail slice is seed 0)")
    ap.add_argument("--longtail-size", default="50M", help="cost: the long-tail slice's size (make_corpus.py)")
    ap.add_argument("--work-dir", default="/tmp/bpe_fast-bench", help="cost: where the long-tail slice is kept")
    ap.add_argument("--corpus-dir", default=None)
    args = ap.parse_args()
    cost(args) if args.cost else quality(args)


if __name__ == "__main__":
    main()
