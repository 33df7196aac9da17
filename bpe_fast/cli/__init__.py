"""Stage 6, the command line: ``bpe-fast train ...`` (encode/decode/show/stats: cli/tools.py).

Bad input ends with a one-line message and exit status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

from .. import formats
from ..training import variants
from ..arguments import INT64_MAX, MAX_WORKERS
from .tools import add_tool_parsers
from .evaluate import add_eval_parser
from ..training.continued import base_special_tokens
from .._version import __version__
from ..errors import ArgumentError, BpeFastError, OutputError, Terminated, require, terminating_raises
from ..counting.inputs import sources
from ..registry import load
from ..outputs import atomic_open, check_output
from ..workshop.ladder.cli import add_profile_parser
from ..paths import stdlib_root, stdlib_sources
from ..pretokenize.patterns import DEFAULT_PATTERN, known_names, name_of, resolve
from ..pretokenize.splitter import NORMALIZATIONS
from ..tokenizer import Tokenizer
from ..counting.workers import MAX_BLOCK_SIZE
from ..counting.distributed import connect
from ..progress import MODES, mode_of
from ..quality.report import evaluate
from ..training.trainer import (MAX_VOCAB_SIZE, TIE_BREAKS, TrainOptions, TrainReport, count, train, train_parity,
                                train_from_table)
from ..training.variants import SUPERWORDS
from ..training.variants import parity as parity_variant
from ..counting.wordtable import WordTable

DEMO_VOCAB_SIZE = 4096
STDOUT = "-"                  # -o - : standard output


class HelpFormatter(argparse.HelpFormatter):
    """``--help`` with each option's default, and "(required)" on the options that are."""

    def _get_help_string(self, action) -> str:
        text = action.help or ""
        if action.help is argparse.SUPPRESS:
            return text
        if action.required and action.option_strings:
            return text if "required" in text.lower() else f"{text} (required)"
        default = action.default
        if ("default" in text.lower() or not action.option_strings or default is None
                or isinstance(default, (bool, list)) or default is argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"


def use_help_formatter(parser: argparse.ArgumentParser) -> None:
    """Give ``parser`` and all its subcommands' parsers the HelpFormatter."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                use_help_formatter(sub)


def add_format_option(p, what: str) -> None:
    p.add_argument("--format", choices=formats.names(), default=None, help=f"the format of {what}: {_formats_help()}")


def _formats_help() -> str:
    """Each format's files, and which names say which, from the table of formats."""
    each = ", ".join(f"{fmt.name} ({fmt.description})" for fmt in formats.FORMATS)
    by_name = ", ".join([f"{suffix} -> {fmt.name}" for fmt in formats.FORMATS for suffix in fmt.suffixes]
                        + [f"{name} -> {fmt.name}" for fmt in formats.FORMATS for name in fmt.file_names
                           if not name.endswith(fmt.suffixes or ("\0",))])
    return f"{each}. Default: told by the name: {by_name}; any other .json name means {formats.DEFAULT.name}"


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad option or value is one line, as every other error (not the usage too)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _number(text: str, scale: int = 1) -> int:
    """A whole number written as 32768, 1.5 (times ``scale``) or 1e5; ValueError if it is none."""
    try:
        return int(text) * scale                  # exact, however many digits
    except ValueError:
        value = float(text) * scale               # ValueError for words
    if not math.isfinite(value) or (scale == 1 and not value.is_integer()):
        raise ValueError(text)
    return int(value)


def parse_sizes(text: str) -> list[int]:
    """Vocabulary sizes: "32768", "32k" (k = 1024), or several: "8k,16k,32k". "32,768" is refused:
    it reads as one number with a thousands separator, and as sizes it would hold one below 256,
    which no vocabulary is ("300,400,600" are three sizes)."""
    if re.fullmatch(r"\s*\d{1,3}(,\d{3})+\s*", text) and min(int(p) for p in text.split(",")) < 256:
        raise argparse.ArgumentTypeError(f"{text.strip()!r} looks like one number with thousands separators: write "
                                         f"{text.strip().replace(',', '')} (several sizes: 8k,16k)")
    sizes = []
    for part in text.split(","):
        part = part.strip().lower()
        try:
            size = _number(part[:-1], 1024) if part.endswith("k") else _number(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r} is not a vocabulary size (e.g. 32768, 32k, 8k,16k)") from None
        if size > MAX_VOCAB_SIZE:
            raise argparse.ArgumentTypeError(f"{part} is too large: token ids are 32-bit, so a vocabulary holds at "
                                             f"most {MAX_VOCAB_SIZE:,} tokens")
        sizes.append(size)
    return sizes


def parse_bytes(text: str) -> int:
    """A size like 512M, 2G, 65536 (K, M, G, T are powers of 1024)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    text = text.strip().upper().removesuffix("B")
    try:
        size = _number(text[:-1], units[text[-1]]) if text and text[-1] in units else _number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 512M, 2G)") from None
    if not 0 < size <= INT64_MAX:
        raise argparse.ArgumentTypeError(f"{text} is out of range: a size is from 1 byte to 8 EiB (2**63 - 1 bytes)")
    return size


def size_or_auto(text: str) -> int | str:
    """--superword-at: a vocabulary size, or "auto" (BoundlessBPE finds it)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a vocabulary size nor auto") from None


def whole_number(low: int, high: int, what: str):
    """The type of an integer option from ``low`` to ``high`` (a number of ``what``)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range: {low:,} to {high:,} {what}")
        return value
    return parse


def threshold(text: str) -> float:
    """The type of --picky: a number with 0 < tau <= 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is out of range: 0 < TAU <= 1")
    return value


def add_input_options(p) -> None:
    """Where the text comes from and how it is split: shared by ``count`` and ``train``."""
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="text files, - (standard input), .gz/.bz2/.xz/.zst files, .jsonl or .parquet files, "
                        "or directories of them")
    p.add_argument("--pattern", default=None,
                   help=f"pre-tokenization: a name ({known_names()}; 'none': no split) or a regex "
                        f"(default {DEFAULT_PATTERN}, as for `bpe-fast profile`; train --base: the base's)")
    p.add_argument("--special", action="append", default=[], metavar="TOKEN",
                   help="a special token (repeatable): cut out of the text, never learned")
    p.add_argument("--lines", action="store_true",
                   help="every line is a document (as Hugging Face's train(files) and gigabpe read files)")
    p.add_argument("--normalize", choices=list(NORMALIZATIONS), default=None,
                   help="put the text in this Unicode normal form before it is split (the tokenizer then "
                        "normalizes what it encodes the same way; train --base: default the base's)")
    p.add_argument("--field", default="text", help="JSON lines: the field that holds the text (default text)")
    p.add_argument("--column", default="text", help="Parquet: the column that holds the text (default text)")
    p.add_argument("--errors", choices=("strict", "replace"), default="strict",
                   help="invalid UTF-8: stop with an error (strict, the default) or replace the bytes")
    p.add_argument("--workers", type=whole_number(1, MAX_WORKERS, "processes"), default=None,
                   help="counting processes (default: one per CPU)")
    p.add_argument("--memory-budget", type=parse_bytes, default=None, metavar="SIZE",
                   help="the peak memory of the whole job, all its processes (e.g. 400M): counting takes fewer "
                        "workers and smaller tables (spilled to temporary files), and training plans the merging "
                        "before it starts, with an error saying what it needs if it cannot fit (default: no limit; "
                        "each counting worker's table 64M)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="count on this Dask scheduler (tcp://host:8786); the files must be readable there")
    p.add_argument("--block-size", type=whole_number(1, MAX_BLOCK_SIZE, "bytes"), default=None, help=argparse.SUPPRESS)
    p.add_argument("--progress", choices=MODES, default="auto",
                   help="bar: progress bars; json: one JSON line per update on stderr; none; auto (the "
                        "default): bars on a terminal")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress (as --progress none)")


def add_train_parser(sub) -> None:
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
                        "tiktoken's cache, the shared vocabs/; see the README)")
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
    t.set_defaults(run=cmd_train)


def add_count_parser(sub) -> None:
    c = sub.add_parser("count", help="count the chunks of text into a word table, to train from later (--counts)")
    add_input_options(c)
    c.add_argument("-o", "--output", required=True, help="the word table to write (.npz)")
    c.set_defaults(run=cmd_count)


def add_convert_parser(sub) -> None:
    c = sub.add_parser("convert", help="convert a tokenizer from any format (or a named encoding) to any format",
                       description="Read IN (a named encoding, or a tokenizer file in any format, told by its "
                                   "content) and write it as OUT in the format --format names or OUT's name says. "
                                   "Token ids, pattern and special tokens are kept.")
    c.add_argument("input", metavar="IN",
                   help="a named encoding (cl100k_base, o200k_base, r50k_base, p50k_base, gpt2) or a tokenizer "
                        "file: bpe_fast .json, tokenizer.json, .tiktoken, minbpe .model, GPT-2's encoder.json or "
                        "vocab.bpe, or a folder holding tokenizer.json or both GPT-2 files")
    c.add_argument("output", metavar="OUT", help="where to write it (see --format)")
    add_format_option(c, "OUT")
    c.add_argument("--pattern", default=None,
                   help="IN is a .tiktoken file without its sidecar (which holds the pattern): the pattern it was "
                        f"trained with, a name ({known_names()}) or a regex")
    c.add_argument("--vocabs", default=None, metavar="FOLDER",
                   help="folder of the named encodings' files (default: $BPE_FAST_VOCABS, tiktoken's cache, the "
                        "shared vocabs/; see the README)")
    for role in ("eos", "pad", "bos"):
        c.add_argument(f"--{role}-token", default=None, metavar="TOKEN",
                       help=f"--format huggingface: the special token that is the {role} token for transformers "
                            f"(written to tokenizer_config.json beside tokenizer.json)")
    c.set_defaults(run=cmd_convert)


def add_parity_parser(sub) -> None:
    """``bpe-fast parity``: parity-aware BPE (variants/parity.py), one INPUT per language."""
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
    t.add_argument("--progress", choices=MODES, default="auto")
    t.set_defaults(run=cmd_parity)


def cmd_parity(args) -> int:
    fmt = formats.format_of_path(args.output, args.format)
    outputs = _outputs(args, where_to_write(args.output, fmt, "-o"))
    for path in outputs:
        check_tokenizer_output(path, fmt, [*args.inputs, *(args.dev or [])], "-o")
    try:
        ratio = None if args.ratio is None else [float(r) for r in args.ratio.split(",")]
    except ValueError:
        raise ArgumentError(f"--ratio {args.ratio}: give numbers separated by commas, one per INPUT") from None
    start = time.perf_counter()
    result = train_parity(
        args.inputs, _sizes(args), ratio=ratio, dev=args.dev, variant=args.variant, global_merges=args.global_merges,
        window_size=args.window_size, alpha=args.alpha, pattern=args.pattern or DEFAULT_PATTERN,
        special_tokens=args.special, tie_break=args.tie_break, min_frequency=args.min_frequency, workers=args.workers,
        progress=args.progress)
    toks = result if isinstance(result, list) else [result]
    files = write_trained(toks, outputs, fmt)
    print(f"parity-aware BPE: {len(args.inputs)} languages, {len(toks[-1].merges):,} merges, wrote "
          f"{', '.join(f for group in files for f in group)} in {time.perf_counter() - start:.1f} s")
    return 0


# Each adds its subcommands to the parser and sets ``run`` to their handlers.
SUBCOMMANDS = [add_train_parser, add_count_parser, add_convert_parser, add_tool_parsers, add_eval_parser,
               add_profile_parser, add_parity_parser]


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="bpe-fast", description="Train byte-pair-encoding tokenizers fast.")
    parser.add_argument("--version", action="version", version=f"bpe-fast {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for add_parsers in SUBCOMMANDS:
        add_parsers(sub)
    use_help_formatter(parser)
    return parser


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


def _progress(args) -> str:
    """--progress, where "auto" with no terminal means none: the command prints its own summary."""
    if args.quiet:
        return "none"
    return args.progress if args.progress != "auto" or mode_of("auto") == "bar" else "none"


def count_options(args, pattern=DEFAULT_PATTERN, normalize=None) -> dict:
    """The keyword arguments of ``count``/``train`` that the input options give; ``pattern`` and
    ``normalize`` when --pattern and --normalize are not given (``...`` leaves them to ``train``:
    the base's, else cl100k and none)."""
    extra = {"block_size": args.block_size} if args.block_size else {}
    return dict(pattern=args.pattern or pattern, normalize=args.normalize or normalize,
                special_tokens=args.special, workers=args.workers,
                progress=_progress(args), errors=args.errors, lines=args.lines,
                field=args.field, column=args.column, memory_budget=args.memory_budget,
                client=_dask_client(args.scheduler), **extra)


def _dask_client(address: str | None):
    return None if address is None else connect(address, "--scheduler")


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
          f"{_normalized(table.normalize)})")
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
        raise OutputError(f"{exc}; {_save_elsewhere(save, 'word table')}") from None


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
    return train_from_table(table, _sizes(args), min_frequency=args.min_frequency, tie_break=args.tie_break,
                            progress=_progress(args), report=report, memory_budget=args.memory_budget, **options)


def _sizes(args):
    return args.vocab_size if len(args.vocab_size) > 1 else args.vocab_size[0]


def _outputs(args, output: str) -> list[str]:
    """One output path per vocabulary size."""
    if len(args.vocab_size) == 1:
        return [output]
    if "{vocab_size}" not in output:
        raise ArgumentError(f"-o {output}: with several vocabulary sizes, -o must hold {{vocab_size}} "
                            f"(e.g. tok-{{vocab_size}}.json), so that each size gets its own file")
    return [output.replace("{vocab_size}", str(v)) for v in args.vocab_size]


def check_tokenizer_output(path: str, fmt: str, inputs: list[str], option: str) -> list[Path]:
    """Every file writing ``path`` in ``fmt`` makes, checked before any work (GPT-2's folder,
    ``-o tok/``, is made if its parent exists)."""
    if path == STDOUT:
        return []
    files = formats.output_files(path, fmt)
    for file in files:
        if formats.by_name(fmt).makes_folder and not file.parent.exists() and file.parent.parent.is_dir():
            file.parent.mkdir()
        check_output(file, inputs, option)
    return files


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


def write_trained(toks: list, outputs: list[str], fmt: str) -> list[list[str]]:
    """Write each trained tokenizer. Everything about the outputs was checked before training, but
    the disk may fill up or a folder go meanwhile: then the training is not lost, but saved in a
    new temporary folder, which the error names."""
    try:
        return [write_tokenizer(tok, path, fmt) for tok, path in zip(toks, outputs)]
    except (BpeFastError, OSError) as exc:
        raise OutputError(f"{exc}; {_save_elsewhere(_tokenizers_saver(toks), 'trained tokenizer')}") from None
    except Exception:                  # a bug in a writer: its traceback stays, but the training is kept
        print(f"bpe-fast train: {_save_elsewhere(_tokenizers_saver(toks), 'trained tokenizer')}", file=sys.stderr)
        raise


def _tokenizers_saver(toks: list):
    """Saves the tokenizers in bpe_fast's JSON, which holds any (`bpe-fast convert` writes the others)."""
    return lambda folder: [formats.write(tok, os.path.join(folder, f"trained-{tok.vocab_size}.json"),
                                         formats.DEFAULT.name)[0] for tok in toks]


def _save_elsewhere(save, what: str) -> str:
    """``save(folder)`` into a new temporary folder, for a result that could not be written where asked;
    says where it went (the files ``save`` returns)."""
    folder = tempfile.mkdtemp(prefix="bpe-fast-saved-")
    try:
        saved = save(folder)
    except Exception as exc:           # whatever stops this too, the first error is the one to report
        shutil.rmtree(folder, ignore_errors=True)
        return f"saving the {what} elsewhere failed too ({exc})"
    return f"the {what} is saved instead as {', '.join(saved)}"


def write_tokenizer(tok, path: str, fmt: str) -> list[str]:
    if path != STDOUT:
        return formats.write(tok, path, fmt)
    with tempfile.TemporaryDirectory(prefix="bpe-fast-stdout-") as folder:     # the writers write files
        [file] = formats.write(tok, os.path.join(folder, "tokenizer"), fmt)
        sys.stdout.buffer.write(Path(file).read_bytes())
        sys.stdout.flush()
    return ["standard output"]


def where_to_write(path: str, fmt: str, option: str) -> str:
    """-o as given: "-" (standard output: a format of one file only), a folder (a name ending in
    "/", or an existing folder): the format's usual file in it (tokenizer.json), made if its parent
    exists; else the name itself. GPT-2's format is a folder of its own files already."""
    one_file = len(formats.output_files("tokenizer", fmt)) == 1
    if path == STDOUT:
        if not one_file:
            raise ArgumentError(f"{option} -: the {fmt} format is several files; give a file or folder name")
        return path
    is_folder = path.endswith(("/", os.sep)) or os.path.isdir(path)      # (isdir: False for a name too long)
    if not is_folder or not one_file:
        return path
    usual = formats.by_name(fmt).file_names
    if not usual:
        raise ArgumentError(f"{option} {path}: is a folder; give a file name in it ({os.path.join(path, 'tok.json')}), "
                            f"or --format huggingface for {os.path.join(path, 'tokenizer.json')}")
    if not Path(path).exists() and Path(path).resolve().parent.is_dir():
        Path(path).mkdir()
    return os.path.join(path, usual[0])


def cmd_train(args) -> int:
    if args.demo:
        if args.inputs:
            raise BpeFastError("--demo trains on the Python standard library; give no INPUT with it")
        args.inputs = stdlib_sources()
        args.vocab_size = args.vocab_size or [DEMO_VOCAB_SIZE]
    if not args.inputs and not args.counts:
        raise BpeFastError("no input: give one or more INPUTs, --counts TABLE, or --demo")
    if args.vocab_size is None:
        raise BpeFastError("--vocab-size is required (e.g. --vocab-size 32768)")
    output = args.output
    if output is None and not args.demo:
        raise BpeFastError("-o/--output is required: where to write the tokenizer")
    if output is None:          # the demo, without -o: a new folder, never the current one
        name = formats.by_name(args.format or formats.DEFAULT.name).demo_name
        if len(args.vocab_size) > 1:
            name = name.replace("demo", "demo-{vocab_size}", 1)
        output = os.path.join(tempfile.mkdtemp(prefix="bpe-fast-demo-"), name)
    fmt = formats.format_of_path(output, args.format)
    output = where_to_write(output, fmt, "-o")
    outputs = _outputs(args, output)
    written = [check_tokenizer_output(path, fmt, [*args.inputs, *args.counts, *args.eval], "-o")  # before reading
               for path in outputs]
    base = load(args.base, args.vocabs) if args.base else None        # the result holds its ids and specials
    if not args.counts:             # a word table's pattern and specials are checked once it is read
        check_result_writable(args, fmt, base, train_pattern(args, base), args.special, train_normalize(args, base))
    if args.demo:
        print(f"demo: training a {args.vocab_size[-1]:,}-token vocabulary on {len(args.inputs)} files of the "
              f"Python standard library ({stdlib_root()}); it will be written to "
              f"{', '.join(os.path.abspath(f) for f in written[-1])}", file=sys.stderr, flush=True)
    if args.plot and not args.eval:
        raise ArgumentError("--plot draws bytes per token on the --eval files: give --eval FILE...")
    if args.plot:
        require("matplotlib", "plot", "--plot")          # before training, not after it
        check_output(args.plot, [*args.inputs, *args.counts, *args.eval], "--plot")
    for path in args.eval:
        sources([path])
    options = dict(base=base, max_token_length=args.max_token_length, picky=args.picky)
    if args.superword != "superbpe" or args.boundless_eligible is not None:
        if args.counts:
            raise ArgumentError("--superword boundless reads the text twice: give INPUTs, not --counts")
        options.update(superword=args.superword, boundless_eligible=args.boundless_eligible)
    if args.superword_at is not None:
        if args.counts:
            raise ArgumentError("--superword-at reads the text twice: give INPUTs, not --counts")
        options.update(superword_at=args.superword_at, superword_pattern=args.superword_pattern)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if args.counts:
            result = _train_from_counts(args, options, fmt)
        else:
            result = train(args.inputs, _sizes(args), min_frequency=args.min_frequency, tie_break=args.tie_break,
                           **options, **count_options(args, pattern=..., normalize=...))
    toks = result if isinstance(result, list) else [result]
    files = write_trained(toks, outputs, fmt)
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    _summary(args, toks[-1], [f for group in files for f in group], fmt, time.perf_counter() - start)
    if args.eval:
        _evaluate(args, toks)
    if args.demo:
        _show_learned(toks[-1], outputs[-1], sys.stdout)
    return 0


def cmd_convert(args) -> int:
    fmt = formats.format_of_path(args.output, args.format)
    if _names_a_folder_for_transformers(args, fmt):
        args.output = os.path.join(args.output, "")        # its tokenizer.json and tokenizer_config.json
    args.output = where_to_write(args.output, fmt, "OUT")
    _check_transformers_roles(args, fmt)
    check_tokenizer_output(args.output, fmt, [args.input], "OUT")
    if args.pattern is not None:
        tok = Tokenizer.from_vocabulary(_read_with_pattern(args.input, args.pattern))
    else:
        tok = load(args.input, args.vocabs)
    formats.check_writable(fmt, tok.pattern, list(tok.special_tokens), tok.normalize, tok.variant)
    roles = {role: getattr(args, role) for role in ("eos_token", "pad_token", "bos_token")}
    if any(roles.values()):
        formats.huggingface.check_special_roles(tok, roles)           # before anything is written
    written = write_tokenizer(tok, args.output, fmt)
    if any(roles.values()):
        written.append(formats.huggingface.write_transformers_config(tok, os.path.dirname(args.output), roles))
    out = sys.stderr if args.output == STDOUT else sys.stdout      # standard output holds the tokenizer
    specials = f", {len(tok.special_tokens)} special" if tok.special_tokens else ""
    print(f"read       {args.input}: vocab size {tok.vocab_size:,} ({len(tok.merges):,} merges{specials}), "
          f"pattern {tok.pattern_name}{_normalized(tok.normalize)}", file=out)
    for path in written:
        print(f"wrote      {_shown(path)} ({fmt})", file=out)
    return 0


def _names_a_folder_for_transformers(args, fmt: str) -> bool:
    """OUT given with special tokens' roles for transformers and no suffix ("my-tokenizer"): the
    folder transformers reads, as "my-tokenizer/" would say (a file of that name is left as it is)."""
    roles = any(getattr(args, f"{role}_token") for role in ("eos", "pad", "bos"))
    return (roles and fmt == "huggingface" and args.output != STDOUT and not Path(args.output).suffix
            and not os.path.isfile(args.output))


def _check_transformers_roles(args, fmt: str) -> None:
    """convert's --eos-token/--pad-token/--bos-token: for a tokenizer.json that transformers
    reads from its folder, where tokenizer_config.json goes beside it."""
    given = [f"--{role}-token" for role in ("eos", "pad", "bos") if getattr(args, f"{role}_token")]
    if not given:
        return
    if fmt != "huggingface":
        raise ArgumentError(f"{', '.join(given)}: name the special tokens' roles for transformers, which reads "
                            f"--format huggingface (a tokenizer.json), not {fmt}")
    if args.output == STDOUT or os.path.basename(args.output) != "tokenizer.json":
        raise ArgumentError(f"{', '.join(given)}: transformers reads tokenizer.json and tokenizer_config.json from "
                            f"one folder: give OUT as a folder (my-tokenizer/), not {args.output}")
    check_output(os.path.join(os.path.dirname(args.output), "tokenizer_config.json"), [args.input], "OUT")


def _normalized(normalize: str | None) -> str:
    """", normalized to NFKC" for a summary line, or nothing."""
    return f", normalized to {normalize.upper()}" if normalize else ""


def _shown(path: str) -> str:
    return path if path == "standard output" else os.path.abspath(path)


def _read_with_pattern(path: str, pattern: str):
    """convert's IN read with --pattern, which only a format whose files hold none takes (.tiktoken)."""
    takers = [fmt for fmt in formats.FORMATS if fmt.needs_pattern]
    fmt = formats.sniff(path) if Path(path).is_file() else None
    if fmt not in [taker.name for taker in takers]:
        raise ArgumentError(f"--pattern {pattern}: IN {path} is not {' or '.join(t.title for t in takers)}; only "
                            f"those lack a pattern (every other format, and the named encodings, hold their own)")
    return formats.read(path, fmt, pattern=pattern)


def _summary(args, tok, outputs: list[str], fmt: str, seconds: float) -> None:
    report = tok.training_report
    out = sys.stderr if args.output == STDOUT else sys.stdout      # standard output holds the tokenizer
    read = f"{len(args.counts)} word table(s)" if args.counts else f"{len(args.inputs)} input(s)"
    print(f"read       {report.input_size:,} bytes from {read}", file=out)
    print(f"chunks     {report.total_chunks:,} ({report.unique_chunks:,} unique, pattern {tok.pattern_name}"
          f"{_normalized(tok.normalize)})", file=out)
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
        print(f"saved      {_shown(path)} ({fmt})", file=out)


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


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if sys.stdout is None:                      # started with standard output closed (">&-")
        print(f"bpe-fast {args.command}: error: standard output is closed", file=sys.stderr)
        return 2
    try:
        with terminating_raises(redeliver=False):     # SIGTERM/SIGHUP: clean up, then say so below
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


if __name__ == "__main__":
    sys.exit(main())
