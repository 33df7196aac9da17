"""``bpe-fast profile``: the profiling workshop's command line (see harness.py).

    bpe-fast profile --corpus ../shared/corpora/big.txt --pattern gpt2   # the notebook's workload
    bpe-fast profile --merges 200 --versions v1,v3,v4,v5,v6 --plot ladder.png --json ladder.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ...errors import BpeFastError, require
from ...outputs import Files, atomic_open
from ...pretokenize.patterns import known_names
from ...training.trainer import MAX_VOCAB_SIZE
from . import DEFAULT_CHARS, DEFAULT_MERGES, DEFAULT_PATTERN, RUNGS, Workload, select
from .harness import CHEAP_REPEATS, DEFAULT_BUDGET, DEFAULT_REPEATS, run_ladder


MAX_MERGES = MAX_VOCAB_SIZE - 256        # merge m makes token 256 + m


def add_profile_parser(sub) -> None:
    p = sub.add_parser("profile", help="time the profiling ladder: the notebook's trainers up to bpe_fast's kernel",
                       description="Train the same merges with each rung of the ladder (v1 = the notebook's "
                                   "dict version ... v6 = bpe_fast's kernel), from the same pre-split chunks; "
                                   "print seconds, speed-up over v1 and whether the merges agree.")
    p.add_argument("--corpus", metavar="FILE", default=None,
                   help="UTF-8 text to read from (default: this Python's standard library sources, no "
                        "download; the notebook used Norvig's big.txt, e.g. ../shared/corpora/big.txt)")
    p.add_argument("--chars", type=int, default=DEFAULT_CHARS,
                   help=f"characters to read from the start of the corpus (default {DEFAULT_CHARS:,})")
    p.add_argument("--merges", type=int, default=DEFAULT_MERGES, help=f"merges to learn (default {DEFAULT_MERGES})")
    p.add_argument("--pattern", default=DEFAULT_PATTERN,
                   help=f"pre-tokenization: a name ({known_names()}; 'none': no split) or a regex (default "
                        f"{DEFAULT_PATTERN}, as for `bpe-fast train`; the notebook split with gpt2)")
    p.add_argument("--versions", default=",".join(RUNGS),
                   help=f"comma-separated rungs to run (default all: {','.join(RUNGS)})")
    p.add_argument("--line-profile", action="store_true",
                   help="also run each rung under line_profiler and print its per-line tables (like %%lprun)")
    p.add_argument("--plot", metavar="PNG",
                   help="draw the chart (time per rung; time against merges) to this file; the second panel times "
                        "each rung again at several numbers of merges, up to 30 s a rung (it says which it sweeps)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    p.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                   help=f"time every rung this many times (more, up to {CHEAP_REPEATS}, while cheap); report "
                        f"the median and the spread (default {DEFAULT_REPEATS})")
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET,
                   help=f"skip a rung estimated to take longer than this many seconds; 0 never skips "
                        f"(default {DEFAULT_BUDGET:.0f}; v1-v3 always run at the notebook's workload)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    p.set_defaults(run=cmd_profile,
                   file_roles=Files(reads=("corpus",), writes=(("plot", "--plot"), ("json", "--json"))))


def _check_output(path: str | None, option: str) -> None:
    if path is not None and not Path(path).resolve().parent.is_dir():
        raise BpeFastError(f"{option} {path}: directory {Path(path).resolve().parent} does not exist")


def check_args(args) -> list:
    """Fail before any work, with the option at fault named; returns the rungs to run."""
    if not 0 < args.chars <= sys.maxsize:
        raise BpeFastError(f"--chars must be a positive number of characters (at most {sys.maxsize:,}), "
                           f"not {args.chars}")
    if not 0 < args.merges <= MAX_MERGES:
        raise BpeFastError(f"--merges must be a positive number of merges (at most {MAX_MERGES:,}: token ids are "
                           f"32-bit), not {args.merges}")
    if args.repeats <= 0:
        raise BpeFastError(f"--repeats must be at least 1, not {args.repeats}")
    if not args.budget >= 0:                 # nan too
        raise BpeFastError(f"--budget must be >= 0 seconds (0: never skip), not {args.budget}")
    if args.corpus is not None and not Path(args.corpus).is_file():
        what = "is a directory" if Path(args.corpus).is_dir() else "no such file"
        raise BpeFastError(f"--corpus {args.corpus}: {what}")
    rungs = select(args.versions, argument="--versions")
    if args.line_profile:
        require("line_profiler", "profile", "--line-profile")
    if args.plot:
        require("matplotlib", "plot", "--plot")
    _check_output(args.plot, "--plot")
    _check_output(args.json, "--json")
    return rungs


def write_results(report, args) -> None:
    """The JSON and the chart of the report so far (written again as each rung finishes)."""
    if args.json:
        with atomic_open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report.to_json(), fh, indent=1)
    if args.plot and report.results:
        with atomic_open(args.plot, "wb") as fh:
            report.plot().savefig(fh, format="png", dpi=120)


def cmd_profile(args) -> int:
    rungs = check_args(args)
    log = None if args.quiet else (lambda message: print(message, file=sys.stderr, flush=True))
    workload = Workload.load(args.corpus, args.chars, args.pattern)
    if log is not None:
        w = workload.describe()
        log(f"{w['chars']:,} characters of {w['corpus']}, pattern {w['pattern']}: {w['chunks']:,} chunks; "
            f"{args.merges} merges with {', '.join(r.name for r in rungs)}"
            + (f"; {args.json} and {args.plot} are written as rungs finish" if args.json and args.plot else
               f"; {args.json or args.plot} is written as rungs finish" if args.json or args.plot else ""))
    report = run_ladder(workload, args.merges, [r.name for r in rungs], repeats=args.repeats,
                        budget=args.budget, line_profiler=args.line_profile, sweep=bool(args.plot), log=log,
                        on_update=lambda report: write_results(report, args))
    print(report.table())
    if args.line_profile:
        print()
        print(report.line_profiles())
    if args.plot:
        print(f"chart: {args.plot}")
    if args.json:
        print(f"json: {args.json}")
    return 0
