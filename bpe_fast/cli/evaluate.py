"""The CLI's quality report: ``bpe-fast eval -t TOK [--baseline NAME]... [--by file|FIELD] INPUT...``
(the figures and how they are counted: quality/report.py)."""
from __future__ import annotations

import argparse
import json
import math
import os

from ..arguments import MAX_WORKERS
from ..errors import BpeFastError, require
from ..outputs import Files, atomic_open
from ..quality.report import ALL, QualityReport, evaluate
from ..registry import ENCODINGS, load


def add_parser(sub) -> None:
    e = sub.add_parser("eval", help="quality report: bytes/token, tokens/word, unused tokens, Rényi efficiency",
                       description="Measure a tokenizer on INPUTs in one pass, beside --baseline tokenizers: "
                                   "bytes per token (UTF-8 bytes / ids), tokens per word (ids / str.split() words), "
                                   "unused tokens (ids of the vocabulary, special ones included, never produced) "
                                   "and Rényi efficiency (Zouhar et al. 2023, alpha 2.5, over log |V|); on all "
                                   "the text and, with --by, per file or per value of a record's field.")
    e.add_argument("-t", "--tokenizer", required=True,
                   help=f"a tokenizer file in any format or a named encoding ({', '.join(ENCODINGS)})")
    e.add_argument("--baseline", action="append", default=[], metavar="NAME",
                   help="a tokenizer to compare with, on the same text (repeatable): a named encoding or a file")
    e.add_argument("--vocabs", default=None, metavar="FOLDER",
                   help="folder of the named encodings' files (default: $BPE_FAST_VOCABS, tiktoken's cache, the "
                        "shared vocabs/; see docs/encoding-and-formats.md)")
    e.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="text, .gz/.bz2/.xz/.zst, .jsonl, .parquet files or directories; - for stdin")
    e.add_argument("--by", default=None, metavar="file|FIELD",
                   help="a row per file (file), or per value of a JSON-lines field or Parquet column (e.g. lang)")
    e.add_argument("--field", default="text", help="JSON lines: the field that holds the text")
    e.add_argument("--column", default="text", help="Parquet: the column that holds the text")
    e.add_argument("--errors", choices=("strict", "replace"), default="strict",
                   help="invalid UTF-8: an error naming file and offset, or U+FFFD")
    e.add_argument("--workers", type=_workers, default=None, help="encoding threads (default: all cores)")
    e.add_argument("--json", action="store_true", help="print the report as JSON (with the unused ids) instead")
    e.add_argument("--plot", default=None, metavar="PNG",
                   help="draw a chart per group: bytes per token of each tokenizer (needs bpe_fast[plot])")
    e.set_defaults(run=cmd_eval,
                   file_roles=Files(reads=("inputs", "tokenizer", "baseline"), writes=(("plot", "--plot"),)))


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 1 <= value <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"{value} is out of range: 1 to {MAX_WORKERS} threads")
    return value


def _name(spec: str) -> str:
    return spec if spec in ENCODINGS else os.path.splitext(os.path.basename(os.path.normpath(spec)))[0]


def _names(specs: list[str]) -> list[str]:
    """A name for each tokenizer of the report, all different: its short name (a named encoding,
    or a file's name without its folder and suffix), else the spec as given, else that numbered
    (mine/r50k_base.tiktoken beside the named r50k_base keeps its path)."""
    short = [_name(spec) for spec in specs]
    names = [s if short.count(s) == 1 else spec for s, spec in zip(short, specs)]
    return [n if names.count(n) == 1 else f"{n} ({names[:k].count(n) + 1})" for k, n in enumerate(names)]


def _load(spec: str, vocabs: str | None, option: str):
    """The tokenizer an option names; a failure says which option."""
    try:
        return load(spec, vocabs)
    except BpeFastError as exc:
        raise type(exc)(f"{option} {spec}: {exc}", cli_message=f"{option} {spec}: {exc.cli_message or exc}") from None


def cmd_eval(args) -> int:
    if args.plot:
        require("matplotlib", "plot", "--plot")        # before a long pass, not after it
    tok = _load(args.tokenizer, args.vocabs, "-t")
    name, *names = _names([args.tokenizer, *args.baseline])
    baselines = {n: _load(spec, args.vocabs, "--baseline") for n, spec in zip(names, args.baseline)}
    report = evaluate(tok, args.inputs, by=args.by, baselines=baselines, name=name, files=True,
                      field=args.field, column=args.column, workers=args.workers, errors=args.errors)
    print(json.dumps(report.to_dict(), allow_nan=False) if args.json else report)
    if args.plot:
        plot(report, args.plot)
        if not args.json:
            print(f"chart      {os.path.abspath(args.plot)}")
    return 0


def plot(report: QualityReport, path: str) -> None:
    """A bar chart per group (all the text first): bytes per token of each tokenizer, with its
    tokens per word and Rényi efficiency written on the bar."""
    require("matplotlib", "plot", "--plot")
    from matplotlib.figure import Figure
    groups = [ALL, *report.groups]
    columns = min(3, len(groups))
    rows = math.ceil(len(groups) / columns)
    names = report.tokenizers
    fig = Figure(figsize=(5 * columns, 0.5 + (0.5 * len(names) + 0.9) * rows))
    for k, group in enumerate(groups):
        ax = fig.add_subplot(rows, columns, k + 1)
        cells = [report.row(group, name) for name in names]
        values = [0 if math.isnan(c.bytes_per_token) else c.bytes_per_token for c in cells]
        bars = ax.barh(range(len(names)), values, color=[f"C{i}" for i in range(len(names))])
        ax.bar_label(bars, [f" {c.bytes_per_token:.2f} B/tok, {c.tokens_per_word:.2f} tok/word, Rényi "
                            f"{c.renyi_efficiency:.3f}" for c in cells], fontsize=7)
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, max(values + [1]) * 2.8)        # room for the labels
        ax.set_title(os.path.basename(group) if report.by == "file" else group, fontsize=9)
        ax.set_xlabel("bytes per token", fontsize=8)
    fig.tight_layout()
    with atomic_open(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=100)
