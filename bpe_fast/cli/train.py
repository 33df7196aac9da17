"""``bpe-fast train``: learn a vocabulary from text (or word tables, --counts) and write it with -o.

Everything that can be refused is refused before training starts: the inputs, -o (and each file it
makes), whether -o's format can hold the result, --plot. After training comes a summary; --eval
measures each trained size on held-out files, and --demo shows what it learned.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
import warnings

from .. import formats
from ..arguments import INT64_MAX
from ..counting.inputs import sources
from ..counting.wordtable import WordTable
from ..errors import ArgumentError, BpeFastError, require
from ..outputs import Files, atomic_open, check_output
from ..paths import stdlib_root, stdlib_sources
from ..pretokenize.patterns import resolve
from ..quality.report import evaluate
from ..registry import load
from ..training import variants
from ..training.continued import base_special_tokens
from ..training.trainer import TIE_BREAKS, TrainOptions, TrainReport, train, train_from_table
from ..training.variants import SUPERWORDS
from .common import (add_format_option, add_input_options, count_options, normalized, parse_sizes, progress_of,
                     size_or_auto, sizes_of, threshold, whole_number)
from .writing import STDOUT, check_tokenizer_output, outputs_per_size, shown, where_to_write, write_trained

DEMO_VOCAB_SIZE = 4096


def add_parser(sub) -> None:
    t = sub.add_parser("train", help="learn a BPE vocabulary from text, or from saved word tables",
                       description="Learn a byte-pair-encoding vocabulary from INPUTs (or word tables, "
                                   "--counts) and write it with -o in any of the formats (--format). "
                                   "--demo trains on this Python's standard library, no download needed.")
    add_input_options(t)
    t.add_argument("--counts", action="append", default=[], metavar="TABLE",
                   help="a word table written by `bpe-fast count` (repeatable: they add up) instead of INPUTs")
    t.add_argument("--demo", action="store_true",
                   help="train on this Python's standard library sources (no download needed); without -o "
                        "the tokenizer goes to a new temporary folder, named before training starts")
    t.add_argument("--vocab-size", type=parse_sizes, default=None, metavar="SIZES",
                   help=f"required (except with --demo: default {DEMO_VOCAB_SIZE}): tokens in the vocabulary, "
                        "256 bytes + merges + specials; several, as 8k,16k,32k (k = 1024), train once and write "
                        "one file each")
    t.add_argument("--base", default=None, metavar="TOKENIZER",
                   help="continue training this tokenizer: a named encoding (cl100k_base, ...) or any tokenizer "
                        "file; its tokens keep their ids, new ones follow")
    t.add_argument("--vocabs", default=None, metavar="FOLDER",
                   help="folder of the named encodings' files, for --base (default: $BPE_FAST_VOCABS, "
                        "tiktoken's cache, the shared vocabs/; see docs/encoding-and-formats.md)")
    t.add_argument("--max-token-length", type=whole_number(1, INT64_MAX, "bytes"), default=None, metavar="BYTES",
                   help="learn no token longer than this many bytes")
    t.add_argument("--superword-at", type=size_or_auto, default=None, metavar="SIZE",
                   help="learn superword tokens: with --pattern up to SIZE, then across words up to --vocab-size, "
                        "as --superword says; auto (boundless): merges and supermerges interleaved by count")
    t.add_argument("--superword", choices=list(SUPERWORDS), default="superbpe",
                   help="what --superword-at learns: " + "; ".join(f"{k}: {v}" for k, v in SUPERWORDS.items()))
    t.add_argument("--superword-pattern", default="superword",
                   help="superbpe: the stage-two pattern of --superword-at (default superword: SuperBPE's rule)")
    t.add_argument("--boundless-eligible", default=None, metavar="REGEX",
                   help="boundless: the pretokens that may join a supermerge, a regex searched in each (default: "
                        "paper 1's IMPROVED pattern, letters, marks, spaces, _ and apostrophes; paper 2 used \\p{L})")
    t.add_argument("--picky", type=threshold, default=None, metavar="TAU",
                   help="Picky BPE (arXiv 2409.04599): after each merge, remove a parent token whose IoS (the share "
                        "of its occurrences the merge took) is >= TAU (0 < TAU <= 1); only bpe_fast's JSON holds it")
    t.add_argument("--eval", nargs="+", default=[], metavar="FILE",
                   help="held-out text files: print bytes per token of each trained size on them")
    t.add_argument("--plot", default=None, metavar="PNG", help="with --eval: draw bytes per token against vocab size")
    t.add_argument("--min-frequency", type=int, default=0, help="stop when the best pair occurs fewer times")
    t.add_argument("--tie-break", choices=list(TIE_BREAKS), default="bytes",
                   help="; ".join(f"{name}: {meaning}" for name, meaning in TIE_BREAKS.items()))
    t.add_argument("-o", "--output", default=None,
                   help="required (except with --demo: a new temporary folder): where to write the tokenizer, "
                        "in the format --format names or the name says (tok.json, tok.tiktoken, tok.model, "
                        "vocab.bpe); with several sizes a name holding {vocab_size}, e.g. tok-{vocab_size}.json")
    add_format_option(t, "-o")
    t.set_defaults(run=cmd_train,
                   file_roles=Files(reads=("inputs", "counts", "eval", "base"), writes=(("plot", "--plot"),)))


def cmd_train(args) -> int:
    if args.demo:
        _fill_in_the_demo(args)
    output = _output(args)
    fmt = formats.format_of_path(output, args.format)
    outputs = outputs_per_size(args, where_to_write(output, fmt, "-o"))
    written = [check_tokenizer_output(path, fmt, [*args.inputs, *args.counts, *args.eval], "-o")  # before reading
               for path in outputs]
    base = load(args.base, args.vocabs) if args.base else None        # the result holds its ids and specials
    if not args.counts:             # a word table's pattern and specials are checked once it is read
        check_result_writable(args, fmt, base, train_pattern(args, base), args.special, train_normalize(args, base))
    if args.demo:
        print(f"demo: training a {args.vocab_size[-1]:,}-token vocabulary on {len(args.inputs)} files of the "
              f"Python standard library ({stdlib_root()}); it will be written to "
              f"{', '.join(os.path.abspath(f) for f in written[-1])}", file=sys.stderr, flush=True)
    _check_eval_files(args)
    options = _train_options(args, base)
    start = time.perf_counter()
    toks, caught = _train(args, options, fmt)
    files = write_trained(toks, outputs, fmt)
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    trained = max((t for t in toks if t.training_report is not None), key=lambda t: t.vocab_size)  # (the others cut)
    _summary(args, trained, [f for group in files for f in group], fmt, time.perf_counter() - start)
    if args.eval:
        _evaluate(args, toks)
    if args.demo:
        _show_learned(toks[-1], outputs[-1], sys.stdout)
    return 0


def _fill_in_the_demo(args) -> None:
    """--demo's INPUTs, this Python's standard library, and its vocabulary size unless one is given."""
    if args.inputs:
        raise BpeFastError("--demo trains on the Python standard library; give no INPUT with it")
    args.inputs = stdlib_sources()
    args.vocab_size = args.vocab_size or [DEMO_VOCAB_SIZE]


def _output(args) -> str:
    """-o, once the arguments train cannot do without are there; for the demo without -o, a name in a
    new temporary folder, never the current one."""
    if not args.inputs and not args.counts:
        raise BpeFastError("no input: give one or more INPUTs, --counts TABLE, or --demo")
    if args.vocab_size is None:
        raise BpeFastError("--vocab-size is required (e.g. --vocab-size 32768)")
    if args.output is not None:
        return args.output
    if not args.demo:
        raise BpeFastError("-o/--output is required: where to write the tokenizer")
    name = formats.by_name(args.format or formats.DEFAULT.name).demo_name
    if len(args.vocab_size) > 1:
        name = name.replace("demo", "demo-{vocab_size}", 1)
    return os.path.join(tempfile.mkdtemp(prefix="bpe-fast-demo-"), name)


def train_pattern(args, base):
    """The pattern training splits text with: --pattern, else the base's, else cl100k, as the API
    resolves it (``TrainOptions.resolved_pattern``)."""
    return resolve(TrainOptions(0, pattern=args.pattern or ..., base=base).resolved_pattern)


def train_normalize(args, base) -> str | None:
    """The normalization training applies: --normalize, else the base's, else none."""
    return TrainOptions(0, normalize=args.normalize or ..., base=base).resolved_normalize


def check_result_writable(args, fmt: str, base, pattern, specials, normalize: str | None) -> None:
    """Refuse, before training, a result the format of -o cannot hold: its pattern (the superword
    pattern, with --superword-at), its special tokens (the base's too), its normalization, its ids,
    Picky BPE's events (--picky) and BoundlessBPE's supermerges (--superword boundless)."""
    boundless = args.superword == "boundless"
    final = resolve(args.superword_pattern) if args.superword_at is not None and not boundless else pattern
    variant = (variants.by_name("boundless") if boundless else variants.by_name("picky") if args.picky is not None
               else None)
    formats.check_writable(fmt, final, [*specials, *base_special_tokens(base, specials)], normalize, variant)
    why = _why_other_ids(base, specials, args.superword_at is not None)
    if why and formats.by_name(fmt).needs_default_ids:
        raise ArgumentError(f"-o {args.output}: {formats.by_name(fmt).title} numbers bytes 0..255 and merge m as "
                            f"256 + m, but {why}; write another format (tokenizer.json, .tiktoken, bpe_fast JSON)")


def _why_other_ids(base, specials, superword: bool) -> str | None:
    """Why the trained tokenizer will not number bytes 0..255 and merge m 256 + m, if it will not."""
    if base is not None and not (base.byte_ids.tolist() == list(range(256))
                                 and base.merge_ids.tolist() == list(range(256, 256 + len(base.merges)))):
        return "the base's tokens have other ids"
    if base is not None and base.special_tokens:
        return "the new tokens take ids after the base's special tokens"
    if superword and specials:
        return "superword training's stage two takes ids after stage one's special tokens"
    return None


def _check_eval_files(args) -> None:
    """--eval's files and --plot's chart, checked before training, not after it."""
    if args.plot and not args.eval:
        raise ArgumentError("--plot draws bytes per token on the --eval files: give --eval FILE...")
    if args.plot:
        require("matplotlib", "plot", "--plot")
        check_output(args.plot, [*args.inputs, *args.counts, *args.eval], "--plot")
    for path in args.eval:
        sources([path])


def _train_options(args, base) -> dict:
    """The trainer's keywords for --base, --max-token-length, --picky and the superword options (which
    read the text twice, so a word table cannot give it)."""
    options = dict(base=base, max_token_length=args.max_token_length, picky=args.picky)
    if args.superword != "superbpe" or args.boundless_eligible is not None:
        if args.counts:
            raise ArgumentError("--superword boundless reads the text twice: give INPUTs, not --counts")
        options.update(superword=args.superword, boundless_eligible=args.boundless_eligible)
    if args.superword_at is not None:
        if args.counts:
            raise ArgumentError("--superword-at reads the text twice: give INPUTs, not --counts")
        options.update(superword_at=args.superword_at, superword_pattern=args.superword_pattern)
    return options


def _train(args, options: dict, fmt: str) -> tuple[list, list]:
    """The trained tokenizers, one per size, and the warnings training gave (printed after the result
    is saved)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if args.counts:
            result = _train_from_counts(args, options, fmt)
        else:
            result = train(args.inputs, sizes_of(args), min_frequency=args.min_frequency, tie_break=args.tie_break,
                           **options, **count_options(args, pattern=..., normalize=...))
    return (result if isinstance(result, list) else [result]), caught


def _train_from_counts(args, options: dict, fmt: str):
    if args.inputs or args.demo:
        raise ArgumentError("give INPUTs or --counts, not both (--counts trains from saved word tables)")
    given = [name for name, value in (("--pattern", args.pattern), ("--special", args.special), ("--lines", args.lines),
                                      ("--normalize", args.normalize)) if value]
    if given:
        raise ArgumentError(f"{', '.join(given)}: a word table keeps the pattern, special tokens and normalization "
                            f"it was counted with; give them to `bpe-fast count`")
    table = WordTable.merge([WordTable.load(p) for p in args.counts])
    check_result_writable(args, fmt, options["base"], table.pattern, table.special_tokens,     # before training
                          table.normalize)
    report = TrainReport(input_size=table.input_bytes)
    return train_from_table(table, sizes_of(args), min_frequency=args.min_frequency, tie_break=args.tie_break,
                            progress=progress_of(args), report=report, memory_budget=args.memory_budget, **options)


def _summary(args, tok, outputs: list[str], fmt: str, seconds: float) -> None:
    report = tok.training_report
    out = sys.stderr if args.output == STDOUT else sys.stdout      # standard output holds the tokenizer
    read = f"{len(args.counts)} word table(s)" if args.counts else f"{len(args.inputs)} input(s)"
    print(f"read       {report.input_size:,} bytes from {read}", file=out)
    print(f"chunks     {report.total_chunks:,} ({report.unique_chunks:,} unique, pattern {tok.pattern_name}"
          f"{normalized(tok.normalize)})", file=out)
    removed = f" ({report.removals:,} tokens removed: Picky BPE)" if report.removals else ""
    if report.runs:
        print(f"runs       {report.runs:,} ({report.unique_runs:,} unique, of pretokens that are one token and "
              f"eligible)", file=out)
    supermerges = f" + {report.supermerges:,} supermerges" if report.runs else ""
    print(f"merges     {report.merges:,}{supermerges}{removed} -> vocab size {tok.vocab_size:,}"
          + (f" ({len(tok.special_tokens)} special)" if tok.special_tokens else ""), file=out)
    print("time       " + ", ".join(f"{k} {v:.2f}s" for k, v in report.seconds.items()) + f", total {seconds:.2f}s",
          file=out)
    if report.memory_plan is not None:
        print(f"memory     merging planned to peak at {report.memory_plan.peak / (1 << 20):,.0f} MiB, within the "
              f"{args.memory_budget / (1 << 20):,.0f} MiB budget", file=out)
    for path in outputs:
        print(f"saved      {shown(path)} ({fmt})", file=out)


def _evaluate(args, toks) -> None:
    """Bytes per token (and tokens per word, Rényi efficiency: quality/report.py) of each trained size on
    the held-out files, all sizes in one pass (and the curve, with --plot)."""
    names = [f"{tok.vocab_size:,}" for tok in toks]
    report = evaluate(toks[0], args.eval, baselines=dict(zip(names[1:], toks[1:])), name=names[0], files=True)
    rows = [(tok.vocab_size, report.row(tokenizer=name)) for tok, name in zip(toks, names)]
    print(f"\nheld-out   {len(args.eval)} file(s), {report.row().bytes:,} bytes")
    print(f"{'vocab':>10} {'bytes/token':>12} {'tokens/word':>12} {'Rényi(2.5)':>11}")
    for vocab, row in rows:
        print(f"{vocab:>10,} {row.bytes_per_token:>12.3f} {row.tokens_per_word:>12.3f} {row.renyi_efficiency:>11.4f}")
    if args.plot:
        require("matplotlib", "plot", "--plot")
        from matplotlib.figure import Figure
        fig = Figure(figsize=(6, 4))
        ax = fig.add_subplot()
        ax.plot([v for v, _ in rows], [r.bytes_per_token for _, r in rows], "o-")
        ax.set_xscale("log", base=2)
        ax.set_xticks([v for v, _ in rows], [f"{v:,}" for v, _ in rows])
        ax.set_xlabel("vocabulary size")
        ax.set_ylabel("bytes per token on the held-out files")
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        with atomic_open(args.plot, "wb") as fh:
            fig.savefig(fh, format="png", dpi=110)
        print(f"chart      {os.path.abspath(args.plot)}")


DEMO_SAMPLE = "def train(self, text): return [token for token in text.split()]"


def _show_learned(tok, path: str, out) -> None:
    """What the demo learned: first merges, longest tokens, and an example encoding."""
    def shown(i: int) -> str:
        text = tok.token_bytes(i).decode("utf-8", "replace")
        return f"{len(text)} spaces" if len(text) > 3 and text == " " * len(text) else repr(text)

    learned = [i for i in tok.merge_ids.tolist() if i >= 0]       # (-1: a token Picky BPE removed)
    longest = sorted(learned, key=lambda i: (-len(tok.token_bytes(i)), i))[:10]
    print(f"\nfirst merges:   {', '.join(shown(i) for i in learned[:10])}", file=out)
    print(f"longest tokens: {', '.join(shown(i) for i in longest)}", file=out)
    ids = tok.encode_ordinary(DEMO_SAMPLE)
    pieces = [tok.token_bytes(i).decode("utf-8", "replace") for i in ids]
    print(f"example:        {DEMO_SAMPLE!r}\n                -> {len(ids)} tokens for {len(DEMO_SAMPLE.encode())} "
          f"bytes: {'|'.join(pieces)}\n                ids {' '.join(map(str, ids))}", file=out)
    print(f"try:            bpe-fast show -t {path} \"any text\"", file=out)
