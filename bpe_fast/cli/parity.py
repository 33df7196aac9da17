"""``bpe-fast parity``: parity-aware BPE (training/variants/parity.py), one INPUT per language."""
from __future__ import annotations

import time

from .. import formats
from ..arguments import INT64_MAX, MAX_WORKERS
from ..errors import ArgumentError
from ..pretokenize.patterns import DEFAULT_PATTERN
from ..progress import MODES
from ..training.trainer import TIE_BREAKS, train_parity
from ..training.variants import parity as parity_variant
from .common import add_format_option, parse_bytes, parse_sizes, sizes_of, whole_number
from .writing import check_tokenizer_output, outputs_per_size, where_to_write, write_trained


def add_parser(sub) -> None:
    t = sub.add_parser("parity", help="parity-aware BPE: one INPUT per language, each merge for the least "
                                      "compressed language",
                       description=(parity_variant.__doc__ or "").split("\n\n")[0])
    t.add_argument("inputs", nargs="+", metavar="INPUT", help="one per language: a file or a directory of files")
    t.add_argument("--vocab-size", type=parse_sizes, required=True, metavar="SIZES",
                   help="tokens in the vocabulary (256 bytes + merges + specials); several, as 8k,16k")
    t.add_argument("-o", "--output", required=True, help="where to write the tokenizer (see --format)")
    add_format_option(t, "-o")
    t.add_argument("--ratio", default=None, metavar="R,R,...",
                   help="target compression per language, one number per INPUT (the least compressed relative "
                        "to it gets the merge)")
    t.add_argument("--dev", nargs="+", default=None, metavar="FILE",
                   help="a dev file per language, in INPUT order: the language whose dev text is the most "
                        "tokens gets the merge")
    t.add_argument("--variant", choices=("base", "window"), default="base")
    t.add_argument("--global-merges", type=whole_number(0, INT64_MAX, "merges"), default=0,
                   help="this many plain merges over all languages first")
    t.add_argument("--window-size", type=whole_number(1, INT64_MAX, "merges"), default=100)
    t.add_argument("--alpha", type=float, default=2.0)
    t.add_argument("--pattern", default=None, help=f"pre-tokenization (default {DEFAULT_PATTERN})")
    t.add_argument("--special", action="append", default=[], metavar="TOKEN", help="a special token (repeatable)")
    t.add_argument("--tie-break", choices=list(TIE_BREAKS), default="bytes",
                   help="huggingface (with --pattern gpt2): the merges of tokenizers' ParityBpeTrainer")
    t.add_argument("--min-frequency", type=int, default=0, help="a language whose best pair occurs fewer times "
                                                                "is done")
    t.add_argument("--workers", type=whole_number(1, MAX_WORKERS, "processes"), default=None)
    t.add_argument("--memory-budget", type=parse_bytes, default=None, metavar="SIZE",
                   help="the peak memory of the whole job (e.g. 2G): each language is counted within what the "
                        "languages counted before it leave, and the merging is planned before it starts, with an "
                        "error saying what it needs if it cannot fit (default: no limit)")
    t.add_argument("--progress", choices=MODES, default="auto")
    t.set_defaults(run=cmd_parity)


def cmd_parity(args) -> int:
    fmt = formats.format_of_path(args.output, args.format)
    outputs = outputs_per_size(args, where_to_write(args.output, fmt, "-o"))
    for path in outputs:
        check_tokenizer_output(path, fmt, [*args.inputs, *(args.dev or [])], "-o")
    try:
        ratio = None if args.ratio is None else [float(r) for r in args.ratio.split(",")]
    except ValueError:
        raise ArgumentError(f"--ratio {args.ratio}: give numbers separated by commas, one per INPUT") from None
    start = time.perf_counter()
    result = train_parity(
        args.inputs, sizes_of(args), ratio=ratio, dev=args.dev, variant=args.variant, global_merges=args.global_merges,
        window_size=args.window_size, alpha=args.alpha, pattern=args.pattern or DEFAULT_PATTERN,
        special_tokens=args.special, tie_break=args.tie_break, min_frequency=args.min_frequency, workers=args.workers,
        progress=args.progress, memory_budget=args.memory_budget)
    toks = result if isinstance(result, list) else [result]
    files = write_trained(toks, outputs, fmt)
    print(f"parity-aware BPE: {len(args.inputs)} languages, {len(toks[-1].merges):,} merges, wrote "
          f"{', '.join(f for group in files for f in group)} in {time.perf_counter() - start:.1f} s")
    report = max(toks, key=lambda tok: tok.vocab_size).training_report       # (the sizes cut from it have none)
    plan = report.memory_plan if report is not None else None
    if plan is not None:
        print(f"memory: merging planned to peak at {plan.peak / (1 << 20):,.0f} MiB, within the "
              f"{args.memory_budget / (1 << 20):,.0f} MiB budget")
    return 0
