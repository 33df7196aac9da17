"""A word table past 2**31 bytes, trained exactly (issue 31): positions, offsets and lists past int32.

    python benchmarks/bench_huge_table.py                     # 2**31 + 2**24 bytes: ~12 GiB, minutes
    python benchmarks/bench_huge_table.py --bytes 64M         # the same check, small (the suite runs it)

The table is built with NumPy, not counted from text. S is a small random table (``--words``
distinct words of 1..``--longest`` bytes over ``--letters`` letters, counts 1..``--most``: some
at or above the kernel's HEAVY, so both ways of weighing a slot are used). The big table is S's
entries repeated k times, as separate entries (a WordTable may list a chunk more than once, and
the kernel trains on entries), k the least that makes it ``--bytes`` long or more. Every pair
occurs in it exactly k times as often as in S and ties go by key, so it must learn S's merges,
each with k times S's count. The expected answer is the pure-Python reference
(bpe_fast/training/reference.py) on S: independent of the kernel. Exits 1 on any difference.

Training runs as train() runs it (trainer._learn): the table checked (``check_consistent``,
the pair-count bound), the merging's memory plan (budget.py) made, the kernel laid out, the
table let go, then the pairs counted and the merges learned. Prints the times, the plan's
predicted peak and the measured peak (ru_maxrss: this process).
"""
from __future__ import annotations

import argparse
import resource
import sys
import time

import numpy as np

from bpe_fast import WordTable, budget
from bpe_fast.training import _kernel
from bpe_fast.training.reference import train_reference
from bpe_fast.training.pipeline import check_pair_counts as _check_pair_counts

GiB = 1 << 30


def small_table(n_words: int, longest: int, letters: int, most: int, seed: int) -> WordTable:
    """S: distinct random words (a word drawn twice is kept once), counts 1..most."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz"[:letters], np.uint8)
    words = {alphabet[rng.integers(0, letters, rng.integers(1, longest + 1))].tobytes() for _ in range(n_words)}
    ordered = sorted(words)
    counts = rng.integers(1, most + 1, len(ordered))
    return WordTable(np.frombuffer(b"".join(ordered), np.uint8), np.cumsum([0] + [len(w) for w in ordered]),
                     counts.astype(np.int64))


def repeated(table: WordTable, k: int) -> WordTable:
    """``table``'s entries k times over, each copy its own entries (not summed)."""
    size = table.n_symbols
    starts = (np.arange(k, dtype=np.int64)[:, None] * size + table.offsets[:-1][None, :]).ravel()
    return WordTable(np.tile(table.symbols, k), np.append(starts, k * size), np.tile(table.counts, k))


def expected_merges(table: WordTable, n_merges: int) -> tuple[list[tuple[int, int]], list[int]]:
    chosen: list[int] = []
    merges = train_reference(table.as_dict(), n_merges, chosen=chosen)
    return merges, chosen


def train_held(held: list, n_merges: int, threads: int) -> tuple[np.ndarray, np.ndarray, dict, budget.MergingPlan]:
    """train()'s order of work on the one table in ``held`` (emptied: the table goes after the layout)."""
    table = held.pop()
    table.check_consistent("the huge table")
    _check_pair_counts(table)
    plan = budget.plan_merging(table, n_merges, threads, table_freed=True)
    kernel = _kernel.Trainer(table.symbols, table.offsets, table.counts, n_merges, threads=threads)
    del table
    kernel.count_pairs()
    stats: dict = {}
    merges = kernel.learn(None, 256, stats)
    return merges, kernel.counts, stats, plan


def size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(float(text))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bytes", type=size, default=(1 << 31) + (1 << 24),
                    help="the big table's bytes at least (default 2**31 + 2**24)")
    ap.add_argument("--words", type=int, default=2000, help="S's words drawn (default 2000)")
    ap.add_argument("--longest", type=int, default=160, help="S's longest word, bytes (default 160)")
    ap.add_argument("--letters", type=int, default=6, help="letters of S's alphabet (default 6)")
    ap.add_argument("--most", type=int, default=300,
                    help="S's highest count (default 300: a sixth of the words at HEAVY, 256, or more)")
    ap.add_argument("--merges", type=int, default=40, help="merges to learn (default 40)")
    ap.add_argument("--threads", type=int, default=1, help="the kernel's threads (default 1)")
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    small = small_table(args.words, args.longest, args.letters, args.most, args.seed)
    merges, chosen = expected_merges(small, args.merges)
    t_reference = time.perf_counter() - t0
    k = -(-args.bytes // small.n_symbols)
    t0 = time.perf_counter()
    big = repeated(small, k)
    t_build = time.perf_counter() - t0
    print(f"S: {len(small):,} words, {small.n_symbols:,} bytes; reference {t_reference:.1f} s, "
          f"{len(merges)} merges", flush=True)
    print(f"big: S x {k:,} = {len(big):,} words, {big.n_symbols:,} bytes ({big.n_symbols / 2**31:.3f} x 2**31), "
          f"built in {t_build:.1f} s", flush=True)
    held = [big]
    del big
    t0 = time.perf_counter()
    got, counts, stats, plan = train_held(held, args.merges, args.threads)
    t_train = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"trained in {t_train:.1f} s (layout {stats['seconds_layout']:.1f}, count {stats['seconds_count']:.1f}, "
          f"merging {stats['seconds_merging']:.1f}); threads {args.threads}; recounts {stats['recounts']}; "
          f"positions visited {stats['positions_visited']:,}", flush=True)
    print(f"peak RSS {peak / GiB:.2f} GiB; budget.py's plan {plan.peak / GiB:.2f} GiB "
          f"(kernel {plan.kernel / GiB:.2f} GiB, process before it {plan.process / GiB:.2f} GiB)")
    want_counts = [k * c for c in chosen]
    if [tuple(m) for m in got.tolist()] != merges or counts.tolist() != want_counts:
        print(f"MISMATCH: got merges {got.tolist()[:8]}... counts {counts.tolist()[:4]}...; expected "
              f"{merges[:8]}... counts {want_counts[:4]}...", file=sys.stderr)
        return 1
    print(f"OK: {len(merges)} merges equal to the reference's on S, each count {k:,} x S's "
          f"(largest {max(want_counts, default=0):,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
