"""Continued training: extending cl100k_base by N merges on mix33, against N merges from scratch.

    python benchmarks/bench_continue.py --merges 10000 --repeats 3

Both train on the same mix33 documents (64 KB pieces, as bench_train.py gives them) with the
cl100k pattern, alternating, each in this process: from scratch to 256 + N tokens, and from
``bpe_fast.load("cl100k_base")`` (loaded afresh before each run, outside the timing; its
encoder is built, and its chunk cache filled, inside) to its size + N. Prints the
median seconds of each and their ratio, and what the extension learned.
"""
from __future__ import annotations

import argparse
import statistics
import time

import bpe_fast
from mix33 import corpus_dir, mix33_files  # noqa: E402  (benchmarks/ is on sys.path)

DOC_CHARS = 65536


def documents(files):
    for path in files:
        with open(path, encoding="utf-8") as fh:
            while piece := fh.read(DOC_CHARS):
                yield piece


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--merges", type=int, default=10000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    files = mix33_files(corpus_dir())
    times: dict[str, list[float]] = {"scratch": [], "continued": []}
    for _ in range(args.repeats):
        base = bpe_fast.load("cl100k_base")     # afresh: no chunk cache warmed by an earlier run
        t0 = time.perf_counter()
        scratch = bpe_fast.train_from_iterator(documents(files), 256 + args.merges, pattern="cl100k",
                                               progress="none")
        t1 = time.perf_counter()
        extended = bpe_fast.train_from_iterator(documents(files), base.vocab_size + args.merges, base=base,
                                                progress="none")
        t2 = time.perf_counter()
        times["scratch"].append(t1 - t0)
        times["continued"].append(t2 - t1)
    s, c = (statistics.median(times[k]) for k in ("scratch", "continued"))
    print(f"mix33, cl100k pattern, {args.merges:,} merges, median of {args.repeats} alternating runs")
    print(f"from scratch:          {s:.2f} s  ({', '.join(f'{t:.2f}' for t in times['scratch'])})")
    print(f"extending cl100k_base: {c:.2f} s  ({', '.join(f'{t:.2f}' for t in times['continued'])})")
    print(f"ratio continued / scratch: {c / s:.2f}")
    new = [extended.token_bytes(i) for i in extended.merge_ids[len(base.merges):len(base.merges) + 12].tolist()]
    print(f"first tokens cl100k_base did not have: {new}")
    print(f"sizes: scratch {scratch.vocab_size:,}, extended {extended.vocab_size:,}")


if __name__ == "__main__":
    main()
