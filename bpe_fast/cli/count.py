"""``bpe-fast count``: count the chunks of text into a word table, which ``train --counts`` reads."""
from __future__ import annotations

import os
import sys
import time

from ..counting.wordtable import WordTable
from ..errors import ArgumentError, BpeFastError, OutputError
from ..outputs import Files, check_output
from ..pretokenize.patterns import name_of
from ..training.trainer import count
from .common import add_input_options, count_options, normalized
from .writing import STDOUT, save_elsewhere


def add_parser(sub) -> None:
    c = sub.add_parser("count", help="count the chunks of text into a word table, to train from later (--counts)")
    add_input_options(c)
    c.add_argument("-o", "--output", required=True, help="the word table to write (.npz)")
    c.set_defaults(run=cmd_count, file_roles=Files(reads=("inputs",), writes=(("output", "-o"),)))


def cmd_count(args) -> int:
    if not args.inputs:
        raise ArgumentError("no input: give one or more INPUTs")
    if args.output == STDOUT:
        raise ArgumentError("-o -: a word table is a binary .npz file, not for standard output: give a file name")
    check_output(args.output, args.inputs, "-o")   # before reading anything
    start = time.perf_counter()
    table = count(args.inputs, **count_options(args))
    save_counts(table, args.output)
    print(f"counted    {table.input_bytes:,} bytes from {len(args.inputs)} input(s) in "
          f"{time.perf_counter() - start:.2f}s", file=sys.stdout)
    print(f"chunks     {table.total_chunks:,} ({len(table):,} unique, pattern {name_of(table.pattern)}"
          f"{normalized(table.normalize)})")
    print(f"saved      {os.path.abspath(args.output)} ({os.path.getsize(args.output):,} bytes)")
    return 0


def save_counts(table: WordTable, path: str) -> None:
    """Write the word table; if that fails now, after counting, it is saved in a temporary folder instead."""
    def save(folder: str) -> list[str]:
        table.save(os.path.join(folder, "counts.npz"))
        return [os.path.join(folder, "counts.npz")]

    try:
        table.save(path)
    except (BpeFastError, OSError) as exc:
        raise OutputError(f"{exc}; {save_elsewhere(save, 'word table')}") from None
