"""Picky BPE (issue 20; arXiv 2409.04599) against plain BPE: what it costs, what it removes, and
bytes per token on held-out text.

    python benchmarks/bench_picky.py --vocab-sizes 8192,16384,32768 --taus 0.6,0.7,0.8,0.9

Text: big.txt and multilingual/*.txt from the shared corpora (``--files``: others, relative to
the corpora folder), the cl100k pattern. The last 10% of each file (cut at a line end) is held
out; the rest is counted once into a word table, and every tokenizer is trained from it with
``train_from_table`` (so the times are the merging alone: plain BPE's kernel on its default
threads, one per CPU; Picky BPE's on one). For each vocab size: plain BPE, then Picky BPE at each
tau. Columns: wall and CPU seconds of the training (medians of ``--repeats``), merges done (Picky: merge events), tokens
removed (as a share of the merges), removed tokens whose bytes came back as a later token,
bytes per token on the held-out text (all of it, and the English part, big.txt's tail), the
change against plain, and the learned tokens never used on the held-out text. Every tokenizer
must round-trip the held-out text.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import bpe_fast
from bpe_fast import PickyTokenizer, Tokenizer
from bpe_fast.training.variants.picky import REMOVED, token_bytes
from mix33 import corpus_dir  # noqa: E402  (benchmarks/ is on sys.path)


def split_held_out(text: str, share: float = 0.1) -> tuple[str, str]:
    """(the first 90%, the last 10%), cut after a line end."""
    cut = text.rfind("\n", 0, int(len(text) * (1 - share))) + 1
    return text[:cut], text[cut:]


def files_of(corpora: Path, names: str) -> list[Path]:
    found: list[Path] = []
    for name in names.split(","):
        path = corpora / name
        found += sorted(path.glob("*.txt")) if path.is_dir() else [path]
    missing = [str(p) for p in found if not p.is_file()]
    if missing or not found:
        sys.exit(f"missing corpus files: {missing or names}")
    return found


def trained(table: bpe_fast.WordTable, vocab: int, tau: float | None, repeats: int) -> tuple[Tokenizer, float, float]:
    """The tokenizer, and the median wall and CPU seconds of ``repeats`` trainings."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        tok = bpe_fast.train_from_table(table, vocab, picky=tau, progress="none")
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return tok, statistics.median(walls), statistics.median(cpus)


def came_back(tok: PickyTokenizer) -> int:
    """Removed tokens whose bytes are a present token at the end (made again by a later merge)."""
    spelled = token_bytes(tok.events)
    present = {spelled[e] for e, i in enumerate(tok.event_ids.tolist()) if i >= 0}
    return sum(1 for x in tok.events[tok.events[:, 1] == REMOVED, 0].tolist() if spelled[x] in present)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab-sizes", default="8192,16384,32768")
    ap.add_argument("--taus", default="0.6,0.7,0.8,0.9")
    ap.add_argument("--files", default="big.txt,multilingual", help="files or folders in the corpora folder")
    ap.add_argument("--repeats", type=int, default=3, help="trainings of each, for the median times")
    ap.add_argument("--corpus-dir", default=None)
    args = ap.parse_args()
    files = files_of(corpus_dir(args.corpus_dir), args.files)
    parts = [split_held_out(p.read_text(encoding="utf-8")) for p in files]
    train_docs = [train for train, _ in parts]
    held_out = "".join(held for _, held in parts)
    english = parts[0][1]
    held_bytes, english_bytes = len(held_out.encode()), len(english.encode())
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    t0 = time.perf_counter()
    table = bpe_fast.count_from_iterator(train_docs, pattern="cl100k", progress="none")
    print(f"{len(files)} files ({files[0].name}, ...); training text {sum(len(d.encode()) for d in train_docs):,} "
          f"bytes, {len(table):,} distinct chunks, counted in {time.perf_counter() - t0:.1f} s; held out "
          f"{held_bytes:,} bytes (the last 10% of each file; {english_bytes:,} of them {files[0].name}'s)\n")
    print("| vocab | tau | train s (CPU s) | merges | removed (of merges) | came back | bytes/token held-out | "
          "vs plain | bytes/token English | vs plain | unused on held-out |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for vocab in [int(v) for v in args.vocab_sizes.split(",")]:
        plain_ratio = plain_english = 0.0
        for tau in [None, *[float(t) for t in args.taus.split(",")]]:
            tok, wall, cpu = trained(table, vocab, tau, args.repeats)
            ids = tok.encode_ordinary(held_out)
            if tok.decode(ids) != held_out:
                sys.exit(f"round trip failed for {tok}")
            ratio, english_ratio = held_bytes / len(ids), english_bytes / len(tok.encode_ordinary(english))
            unused = len(set(range(256, tok.n_base)) - set(ids))
            if isinstance(tok, PickyTokenizer):
                merges, removed = len(tok.merges), tok.removals
                removed_cell, back = f"{removed:,} ({removed / merges:.1%})", f"{came_back(tok):,}"
            else:
                merges, removed_cell, back = len(tok.merges), "-", "-"
                plain_ratio, plain_english = ratio, english_ratio
            print(f"| {vocab:,} | {tau if tau is not None else 'plain'} | {wall:.2f} ({cpu:.2f}) | {merges:,} | "
                  f"{removed_cell} | {back} | {ratio:.3f} | {ratio / plain_ratio - 1:+.2%} | {english_ratio:.3f} | "
                  f"{english_ratio / plain_english - 1:+.2%} | {unused:,} |", flush=True)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
