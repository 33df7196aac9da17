"""Where training time goes, stage by stage, on one big file (one process, so the stages add up).

    python benchmarks/stages.py web-1g.txt --pattern gpt2 --vocab-size 32768

Each stage is timed alone, in this order, on the whole file read in 1 MiB blocks as the workers
read it: reading the file (from the page cache: run it twice); scanning (the native pre-tokenizer
alone, chunk boundaries only); scanning and counting into the native table; sorting the table and
writing it as a part file; adding the parts into the final word table (here two halves of the
file, as two workers would give); laying the table out for the kernel and counting its pairs;
and the merges. With ``train()`` the counting stages run on every worker at once.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from bpe_fast import _kernel
from bpe_fast._table import ChunkTable
from bpe_fast.inputs import file_tasks, read_block
from bpe_fast.pretokenize import Splitter
from bpe_fast.wordtable import WordTable


def timed(label: str, rows: list, fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    rows.append((label, time.perf_counter() - start))
    print(f"{label:<48} {rows[-1][1]:7.2f} s", flush=True)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--pattern", default="gpt2")
    ap.add_argument("--vocab-size", type=int, default=32768)
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
    trainer = timed("kernel: lay out the words, count the pairs", rows,
                    _kernel.Trainer, table.symbols, table.offsets, table.counts, n)
    words, symbols = len(table), table.n_symbols
    del table
    timed(f"kernel: {n:,} merges", rows, trainer.learn)
    print(f"\n{words:,} distinct chunks, {symbols:,} bytes of them; total {sum(s for _, s in rows):.2f} s")
    print("\n| stage | s |\n|---|---:|")
    for label, seconds in rows:
        print(f"| {label} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
