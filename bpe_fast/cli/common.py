"""What several commands share: the parser and its help, the types of option values, the input
options of ``count`` and ``train`` (and the ``count`` keywords they give), ``--format``, and the
tokenizer and special-token options of the commands that read a tokenizer."""
from __future__ import annotations

import argparse
import math
import re

from .. import formats
from ..arguments import INT64_MAX, MAX_WORKERS
from ..counting.distributed import connect
from ..counting.workers import MAX_BLOCK_SIZE
from ..prepare.corpus import special_options
from ..errors import ArgumentError
from ..pretokenize.patterns import DEFAULT_PATTERN, known_names
from ..pretokenize.splitter import NORMALIZATIONS
from ..progress import MODES, mode_of
from ..registry import ENCODINGS
from ..training.trainer import MAX_VOCAB_SIZE


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad option or value is one line, as every other error (not the usage too)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


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


def sizes_of(args):
    """--vocab-size as the trainers take it: one size, or the list of several."""
    return args.vocab_size if len(args.vocab_size) > 1 else args.vocab_size[0]


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


def progress_of(args) -> str:
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
                progress=progress_of(args), errors=args.errors, lines=args.lines,
                field=args.field, column=args.column, memory_budget=args.memory_budget,
                client=_dask_client(args.scheduler), **extra)


def _dask_client(address: str | None):
    return None if address is None else connect(address, "--scheduler")


def add_format_option(p, what: str) -> None:
    p.add_argument("--format", choices=formats.names(), default=None, help=f"the format of {what}: {_formats_help()}")


def _formats_help() -> str:
    """Each format's files, and which names say which, from the table of formats."""
    each = ", ".join(f"{fmt.name} ({fmt.description})" for fmt in formats.FORMATS)
    by_name = ", ".join([f"{suffix} -> {fmt.name}" for fmt in formats.FORMATS for suffix in fmt.suffixes]
                        + [f"{name} -> {fmt.name}" for fmt in formats.FORMATS for name in fmt.file_names
                           if not name.endswith(fmt.suffixes or ("\0",))])
    return f"{each}. Default: told by the name: {by_name}; any other .json name means {formats.DEFAULT.name}"


def add_tokenizer_option(parser, many: bool = False) -> None:
    parser.add_argument("-t", "--tokenizer", required=True, action="append" if many else "store",
                        help="a file in any format (bpe_fast .json, tokenizer.json, .tiktoken with its sidecar, "
                             f"minbpe .model, GPT-2's encoder.json), a named encoding ({', '.join(ENCODINGS)}) or a "
                             "Hugging Face hub repo id (ORG/NAME, read from the local hub cache)"
                             + ("; repeatable" if many else ""))
    parser.add_argument("--vocabs", default=None, metavar="FOLDER",
                        help="folder of the named encodings' files (default: $BPE_FAST_VOCABS, tiktoken's cache, "
                             "the shared vocabs/; see docs/encoding-and-formats.md)")


def add_special_options(parser) -> None:
    """One rule for special tokens' text in every command that encodes text, tiktoken's: refused
    unless allowed."""
    parser.add_argument("--allowed-special", default="none", metavar="all|TOKEN,...",
                        help="special tokens whose text becomes their id: all, or a comma-separated list "
                             "(default: none; any other special token's text is an error)")
    parser.add_argument("--disallowed-special", default="all", metavar="all|none|TOKEN,...",
                        help="special tokens whose text is an error: all (the default) those not allowed, none "
                             "(encode their text as ordinary text), or a comma-separated list")


def _special_tokens_arg(value: str, option: str, tok, words: tuple[str, ...]):
    """--allowed-special / --disallowed-special: a word (all, none) or special tokens, checked."""
    if value in words:
        return {"all": "all", "none": frozenset()}[value]
    tokens = {t for t in value.split(",") if t}
    unknown = sorted(tokens - set(tok.special_tokens))
    if unknown or not tokens:
        have = ", ".join(tok.special_tokens) or "none"
        raise ArgumentError(f"{option} {value}: " + (f"{', '.join(unknown)} is not a special token of this "
                                                     f"tokenizer" if unknown else "names no token")
                            + f" (its special tokens: {have}); give {' or '.join(words)} or some of those")
    return tokens


def special_arguments(args, tok) -> tuple[dict, set[str]]:
    """``Tokenizer.encode``'s keywords for the command's special-token options, and the
    special tokens whose text they refuse."""
    allowed = "all" if getattr(args, "allow_special", False) else \
        _special_tokens_arg(args.allowed_special, "--allowed-special", tok, ("all", "none"))
    disallowed = _special_tokens_arg(args.disallowed_special, "--disallowed-special", tok, ("all", "none"))
    return special_options(tok, allowed, disallowed)


def normalized(normalize: str | None) -> str:
    """", normalized to NFKC" for a summary line, or nothing."""
    return f", normalized to {normalize.upper()}" if normalize else ""

