"""Stage 6, the command line: ``bpe-fast train ...`` (encode/decode/show/stats: cli_tools.py).

Bad input ends with a one-line message and exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

from .cli_tools import add_tool_parsers
from .errors import BpeFastError
from .outputs import check_output
from .ladder.cli import add_profile_parser
from .paths import stdlib_root, stdlib_sources
from .patterns import known_names
from .trainer import train

DEMO_VOCAB_SIZE = 4096


def add_train_parser(sub) -> None:
    t = sub.add_parser("train", help="learn a BPE vocabulary from text files")
    t.add_argument("files", nargs="*", metavar="FILE", help="UTF-8 text files")
    t.add_argument("--demo", action="store_true",
                   help="train on this Python's standard library sources (no download needed)")
    t.add_argument("--vocab-size", type=int, default=None,
                   help=f"tokens in the vocabulary: 256 bytes + merges + specials (demo: {DEMO_VOCAB_SIZE})")
    t.add_argument("--pattern", default="cl100k",
                   help=f"pre-tokenization: a name ({known_names()}; 'none': no split) or a regex")
    t.add_argument("--special", action="append", default=[], metavar="TOKEN",
                   help="a special token (repeatable); gets an id after the merges")
    t.add_argument("--min-frequency", type=int, default=0, help="stop when the best pair occurs fewer times")
    t.add_argument("--workers", type=int, default=None, help="counting processes (default: one per CPU)")
    t.add_argument("--errors", choices=("strict", "replace"), default="strict",
                   help="invalid UTF-8: stop with an error (strict) or replace the bytes")
    t.add_argument("--block-size", type=int, default=None, help=argparse.SUPPRESS)
    t.add_argument("--tie-break", choices=("bytes", "huggingface"), default="bytes",
                   help="equal counts go to the smallest pair by byte ids (rustbpe, bpeasy) or by Hugging Face ids")
    t.add_argument("-o", "--output", default=None, help="where to write the tokenizer (JSON)")
    t.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    t.set_defaults(run=cmd_train)


# Each adds its subcommands to the parser and sets ``run`` to their handlers.
SUBCOMMANDS = [add_train_parser, add_tool_parsers, add_profile_parser]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bpe-fast", description="Train byte-pair-encoding tokenizers fast.")
    sub = parser.add_subparsers(dest="command", required=True)
    for add_parsers in SUBCOMMANDS:
        add_parsers(sub)
    return parser


def _show_learned(tok, out) -> None:
    n = len(tok.merges)
    longest = sorted(range(256, tok.n_base), key=lambda i: (-len(tok.token_bytes(i)), i))[:10]
    print(f"first merges: {', '.join(repr(tok.token_bytes(i).decode('utf-8', 'replace')) for i in range(256, min(266, 256 + n)))}", file=out)
    print(f"longest tokens: {', '.join(repr(tok.token_bytes(i).decode('utf-8', 'replace')) for i in longest)}", file=out)
    sample = "def train(self, text): return [token for token in text.split()]"
    ids = tok.encode_ordinary(sample)
    print(f"encode({sample!r}) -> {len(ids)} tokens for {len(sample.encode())} bytes", file=out)


def cmd_train(args) -> int:
    if args.demo:
        if args.files:
            raise BpeFastError("--demo trains on the Python standard library; give no FILE with it")
        args.files = stdlib_sources()
        print(f"demo: training on {len(args.files)} files of the Python standard library "
              f"({stdlib_root()})", file=sys.stderr)
        args.vocab_size = args.vocab_size or DEMO_VOCAB_SIZE
    if not args.files:
        raise BpeFastError("no input: give one or more FILEs, or --demo")
    if args.vocab_size is None:
        raise BpeFastError("--vocab-size is required (e.g. --vocab-size 32768)")
    output = args.output or ("demo-tokenizer.json" if args.demo else None)
    if output is None:
        raise BpeFastError("-o/--output is required: where to write the tokenizer")
    check_output(output, args.files, "-o")         # before reading anything
    extra = {"block_size": args.block_size} if args.block_size else {}
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok = train(args.files, args.vocab_size, pattern=args.pattern, special_tokens=args.special,
                    min_frequency=args.min_frequency, workers=args.workers,
                    show_progress=False if args.quiet else None, errors=args.errors,
                    tie_break=args.tie_break, **extra)
    tok.save(output)
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    report = tok.training_report
    out = sys.stdout
    print(f"read       {report.input_size:,} bytes from {len(args.files)} file(s)", file=out)
    print(f"chunks     {report.total_chunks:,} ({report.unique_chunks:,} unique, pattern {tok.pattern_name})", file=out)
    print(f"merges     {report.merges:,} -> vocab size {tok.vocab_size:,}"
          + (f" ({len(tok.special_tokens)} special)" if tok.special_tokens else ""), file=out)
    print("time       " + ", ".join(f"{k} {v:.2f}s" for k, v in report.seconds.items())
          + f", total {time.perf_counter() - start:.2f}s", file=out)
    print(f"saved      {os.path.abspath(output)}", file=out)
    if args.demo:
        _show_learned(tok, out)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if sys.stdout is None:                      # started with standard output closed (">&-")
        print(f"bpe-fast {args.command}: error: standard output is closed", file=sys.stderr)
        return 2
    try:
        return args.run(args)
    except BrokenPipeError:                     # the reader went away ("| head"): stop quietly
        _silence_stdout()
        return 141                              # as a Unix tool killed by SIGPIPE
    except (BpeFastError, OSError) as exc:      # the user's to fix; anything else is a bug
        print(f"bpe-fast {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bpe-fast: interrupted", file=sys.stderr)
        return 130


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit raises no second BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
