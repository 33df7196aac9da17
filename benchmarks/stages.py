"""Where training time goes, stage by stage, on one big file (one process, so the stages add up).

    python benchmarks/stages.py web-1g.txt --pattern gpt2 --vocab-size 32768

Each stage is timed alone (wall time, and the process's CPU time, which a busy machine does not
stretch), in this order, on the whole file read in 1 MiB blocks as the workers
read it: reading the file (from the page cache: run it twice); scanning (the native pre-tokenizer
alone, chunk boundaries only); scanning and counting into the native table; sorting the table and
writing it as a part file; adding the parts into the final word table (here two halves of the
file, as two workers would give); laying the table out for the kernel and counting its pairs;
and the merges. With ``train()`` the counting stages run on every worker at once.

The kernel's own clocks then split its time: laying the words out, the first pair count, the
merges shared by the threads (``--threads``, default one per CPU) and those done on one. The
sequential share is the part of the merging work done on one thread, in CPU seconds (which load
does not stretch) and in positions visited; from each thread's CPU in the shared merges follows
what the merging would take on a quiet machine (the one-thread part, plus the longest thread of
each shared merge).
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
import time

from bpe_fast.training import _kernel
from bpe_fast.counting._table import ChunkTable
from bpe_fast.counting.workers import default_workers
from bpe_fast.counting.inputs import file_tasks, read_block
from bpe_fast.pretokenize.splitter import Splitter
from bpe_fast.counting.wordtable import WordTable


def timed(label: str, rows: list, fn, *args):
    start, cpu = time.perf_counter(), time.process_time()
    result = fn(*args)
    rows.append((label, time.perf_counter() - start, time.process_time() - cpu))
    print(f"{label:<48} {rows[-1][1]:7.2f} s, CPU {rows[-1][2]:7.2f} s", flush=True)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--pattern", default="gpt2")
    ap.add_argument("--vocab-size", type=int, default=32768)
    ap.add_argument("--threads", type=int, default=default_workers(), help="the kernel's threads (default: CPUs)")
    args = ap.parse_args()
    splitter = Splitter.of(args.pattern)
    tasks = list(file_tasks(args.file, os.path.getsize(args.file), splitter.cut, 1 << 20))
    scanner = splitter.scanner
    if scanner is None:
        sys.exit(f"--pattern {args.pattern}: the stages time the native scanner; give gpt2, cl100k, o200k or "
                 f"superword")
    rows: list = []
    timed("read the file (1 MiB blocks)", rows, lambda: sum(len(read_block(t)) for t in tasks))
    timed("scan (native pre-tokenizer, boundaries only)", rows,
          lambda: sum(len(scanner.boundaries(read_block(t))) for t in tasks))
    halves = [tasks[:len(tasks) // 2], tasks[len(tasks) // 2:]]

    def count(part):
        table = ChunkTable()
        for t in part:
            table.add_text(scanner, read_block(t))
        return table

    tables = [timed(f"scan + count into the table (half {i + 1})", rows, count, half) for i, half in enumerate(halves)]
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, f"part{i}") for i in range(2)]
        for i, (table, path) in enumerate(zip(tables, paths)):
            timed(f"sort + write the part file (half {i + 1})", rows, table.write_sorted, path)
        del tables
        table = timed("add the parts into the word table", rows, WordTable.from_parts, paths, splitter.pattern)
    n = args.vocab_size - 256
    trainer = timed("kernel: lay out the words", rows,
                    functools.partial(_kernel.Trainer, threads=args.threads), table.symbols, table.offsets,
                    table.counts, n)
    words, symbols = len(table), table.n_symbols
    del table                                    # as train does: the table goes before the pair count
    timed("kernel: count the pairs", rows, trainer.count_pairs)
    stats: dict = {}
    timed(f"kernel: {n:,} merges", rows, trainer.learn, None, 256, stats)
    print(f"\n{words:,} distinct chunks, {symbols:,} bytes of them; total {sum(r[1] for r in rows):.2f} s, "
          f"CPU {sum(r[2] for r in rows):.2f} s")
    print("\n| stage | s | CPU s (all threads) |\n|---|---:|---:|")
    for label, seconds, cpu in rows:
        print(f"| {label} | {seconds:.2f} | {cpu:.2f} |")
    print_kernel_split(stats)


def print_kernel_split(stats: dict) -> None:
    """The kernel's clocks and work counters (Trainer.learn's stats): where its time went, and
    how much of the merging ran on one thread."""
    one_thread_cpu = stats["cpu_merging"] - stats["thread_cpu"][0]     # the main thread outside shared parts
    shared_cpu = sum(stats["thread_cpu"])
    rows = [("kernel: lay out the words", stats["seconds_layout"]),
            ("kernel: first pair count", stats["seconds_count"]),
            (f"merges shared by {stats['threads']} threads ({stats['shared_merges']:,} merges), wall",
             stats["seconds_shared"]),
            ("of which folding the threads' ledgers (one thread)", stats["seconds_fold"]),
            ("merges on one thread, wall", stats["seconds_merging"] - stats["seconds_shared"]),
            ("merging CPU on one thread (main thread outside shared parts)", one_thread_cpu),
            ("merging CPU in shared parts, " + " + ".join(f"{c:.2f}" for c in stats["thread_cpu"]), shared_cpu),
            ("merging on a quiet machine (one-thread CPU + longest part of each shared merge)",
             one_thread_cpu + stats["cpu_longest"])]
    print("\n| kernel | s |\n|---|---:|")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.2f} |")
    visited = stats["positions_visited"]
    print(f"\nsequential share of the merging: {one_thread_cpu / max(one_thread_cpu + shared_cpu, 1e-9):.0%} of its "
          f"CPU, {1 - stats['shared_visited'] / max(visited, 1):.0%} of the {visited:,} positions visited "
          f"(occurrences replaced by each thread in shared merges: {stats['thread_replaced']})")


if __name__ == "__main__":
    main()
