"""Stage 6, the command line: ``bpe-fast COMMAND ...``, one module per group of commands.

Each command module has an ``add_parser(subparsers)``, which adds its commands and sets ``run`` to
their ``cmd_*`` function; ``main`` parses the arguments, runs the command and turns what it raises
into a message and an exit status. Bad input ends with a one-line message and exit status 2, never
a traceback.
"""
from __future__ import annotations

import argparse
import os
import sys

from .._version import __version__
from ..errors import BpeFastError, Terminated, terminating_raises
from ..outputs import check_files
from ..workshop.ladder.cli import add_profile_parser
from . import convert, count, evaluate, parity, tools, train
from .common import OneLineParser, use_help_formatter

# Each adds its commands to the parser, in the order --help lists them.
SUBCOMMANDS = [train.add_parser, count.add_parser, convert.add_parser, tools.add_parser, evaluate.add_parser,
               add_profile_parser, parity.add_parser]


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="bpe-fast", description="Train byte-pair-encoding tokenizers fast.")
    parser.add_argument("--version", action="version", version=f"bpe-fast {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add_parsers in SUBCOMMANDS:
        add_parsers(sub)
    use_help_formatter(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if sys.stdout is None:                      # started with standard output closed (">&-")
        print(f"bpe-fast {args.command}: error: standard output is closed", file=sys.stderr)
        return 2
    try:
        with terminating_raises(redeliver=False):     # SIGTERM/SIGHUP: clean up, then say so below
            check_files(args)                         # every output against every input, before any work
            return args.run(args)
    except BrokenPipeError:                     # the reader went away ("| head"): stop quietly
        _silence_stdout()
        return 141                              # as a Unix tool killed by SIGPIPE
    except (BpeFastError, OSError) as exc:      # the user's to fix; anything else is a bug
        print(f"bpe-fast {args.command}: error: {getattr(exc, 'cli_message', None) or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bpe-fast: interrupted", file=sys.stderr)
        return 130
    except Terminated as exc:
        print(f"bpe-fast {args.command}: {exc}", file=sys.stderr)
        return 128 + exc.signum


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit raises no second BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
