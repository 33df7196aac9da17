"""The CLI's tokenizer commands: encode, decode, show, stats."""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..prepare.corpus import (FORMATS, ID_DTYPES, encode_files, first_special, index_path, is_npy, load_bin,
                              named_batches, named_pieces, special_error, special_token_error)
from ..counting.inputs import sources
from ..outputs import Files
from ..errors import ArgumentError, EncodingError, InputError
from ..progress import MODES
from ..registry import load
from .common import add_special_options, add_tokenizer_option, special_arguments


def add_parser(sub) -> None:
    """encode, decode, show and stats, each with its parser, its cmd_* and their helpers below, in this order."""
    _add_encode(sub)
    _add_decode(sub)
    _add_show(sub)
    _add_stats(sub)


def _add_encode(sub) -> None:
    enc = sub.add_parser("encode", help="text -> token ids: files or stdin -> stdout, or a binary corpus",
                         description="Encode documents, streamed, on all cores: a text file or stream is one "
                                     "document (--lines: each line), each JSON-lines record or Parquet value "
                                     "is one. Output: one line of ids per document (text or json), or with "
                                     "--format bin a file of uint16 ids (uint32 when the vocabulary has more "
                                     "than 65536 ids) and an .idx file of int64 document offsets (layout in "
                                     "bpe_fast/prepare/corpus.py; bpe_fast.load_bin reads it), or with --format "
                                     "npy the ids as a NumPy array (np.load reads it). A special token's text "
                                     "is an error unless --allowed-special or --disallowed-special none.")
    add_tokenizer_option(enc)
    enc.add_argument("inputs", nargs="*", default=["-"], metavar="INPUT",
                     help="text, .gz/.bz2/.xz/.zst, .jsonl, .parquet files or directories; - for stdin (default)")
    enc.add_argument("-o", "--output", default=None, help="output file (default: stdout; required for --format bin)")
    enc.add_argument("--format", choices=FORMATS, default=None,
                     help="text: ids separated by spaces, a line per document; json: a JSON list per document; "
                          "bin: binary ids + .idx; npy: a NumPy array of the ids (default: bin when -o ends in "
                          ".bin, npy when it ends in .npy, else text)")
    enc.add_argument("--json", action="store_true", help="same as --format json")
    enc.add_argument("--lines", action="store_true", help="every line of text inputs is a document (newline included)")
    enc.add_argument("--field", default="text", help="JSON lines: the field that holds the text")
    enc.add_argument("--column", default="text", help="Parquet: the column that holds the text")
    enc.add_argument("--workers", type=int, default=None, help="threads (default: all cores)")
    enc.add_argument("--errors", choices=("strict", "replace"), default="strict",
                     help="invalid UTF-8: an error naming file and offset, or U+FFFD")
    add_special_options(enc)
    enc.add_argument("--allow-special", action="store_true", help="same as --allowed-special all")
    enc.add_argument("--append-eot", action="store_true",
                     help="<|endoftext|>'s id after every document, as nanoGPT's prepare.py (the tokenizer must "
                          "have that special token)")
    enc.add_argument("--progress", choices=MODES, default="auto", help="progress on stderr (auto: a bar on a terminal)")
    enc.set_defaults(run=cmd_encode, file_roles=Files(reads=("inputs", "tokenizer"), writes=(("output", "-o"),)))


def encode_format(args) -> str:
    """encode's output format: --format, --json, else told by -o's suffix (.bin, .npy), else text;
    another format into a .npy file (which np.load could not read) is refused."""
    suffix = Path(args.output or "").suffix.lower()
    fmt = args.format or ("json" if args.json else {".bin": "bin", ".npy": "npy"}.get(suffix, "text"))
    if args.json and fmt != "json":
        raise ArgumentError(f"--json and --format {fmt} disagree: give one")
    if suffix == ".npy" and fmt != "npy":
        what = "raw ids with no header" if fmt == "bin" else "text"
        raise ArgumentError(f"-o {args.output}: --format {fmt} writes {what}, which np.load cannot read from a .npy "
                            f"file; give --format npy (the default for a .npy name) or another name")
    if fmt == "bin" and args.output in (None, "-"):
        raise ArgumentError("--format bin writes two files (ids and .idx): give -o corpus.bin")
    if fmt == "npy" and args.output in (None, "-"):
        raise ArgumentError("--format npy writes a file whose header, written last, holds the length: "
                            "give -o ids.npy")
    return fmt


def cmd_encode(args) -> int:
    fmt = encode_format(args)
    tok = load(args.tokenizer, args.vocabs)
    options, _ = special_arguments(args, tok)
    if args.output == "-":
        args.output = None                   # -o - is standard output, as when -o is not given
    summary = encode_files(tok, args.inputs, args.output, format=fmt, lines=args.lines, field=args.field,
                           column=args.column, workers=args.workers, errors=args.errors, progress=args.progress,
                           append_eot=args.append_eot, **options)
    if args.output is not None:
        what = (f" as {summary['dtype']} to {' and '.join(summary['files'])}" if fmt in ("bin", "npy")
                else f" to {args.output}")
        docs, tokens = summary["documents"], summary["tokens"]
        print(f"encoded {docs:,} document{'s' * (docs != 1)} into {tokens:,} token{'s' * (tokens != 1)}{what}",
              file=sys.stderr)
    return 0


def _add_decode(sub) -> None:
    dec = sub.add_parser("decode", help="token ids -> text (the ids themselves, a file, or stdin -> stdout)",
                         description="Decode token ids to text. INPUT is the ids themselves (\"15496 11\"), or a "
                                     "file holding them in any form `bpe-fast encode` writes: ids separated by "
                                     "spaces or commas (a line per document), JSON lists (one, or a line each), or "
                                     "a binary corpus (.bin with its .idx); - (the default) reads standard input. "
                                     "Documents are decoded one after another, as they were encoded.")
    add_tokenizer_option(dec)
    dec.add_argument("input", nargs="?", default="-", metavar="INPUT",
                     help="ids (\"15496 11\"), a file of ids, a .bin corpus, a .npy array, or - for stdin")
    dec.add_argument("--dtype", choices=ID_DTYPES, default=None,
                     help="INPUT is a binary file of ids of this width (a .bin with no .idx beside it, as numpy's "
                          "tofile or nanoGPT's prepare.py write it)")
    dec.set_defaults(run=cmd_decode)


def cmd_decode(args) -> int:
    tok = load(args.tokenizer, args.vocabs)
    data = tok.decode_bytes(_ids_of(args.input, args.dtype))
    sys.stdout.buffer.write(data)
    if sys.stdout.isatty() and not data.endswith(b"\n"):
        sys.stdout.buffer.write(b"\n")       # for the prompt's sake; a pipe gets the bytes exactly
    sys.stdout.flush()
    return 0


# An INPUT of `decode` that is the ids themselves: digits, signs, commas, brackets and spaces.
_IDS = re.compile(r"[\s\d,\[\]+-]*\d[\s\d,\[\]+-]*")


def _ids_of(arg: str, dtype: str | None = None):
    """The ids INPUT means: the ids themselves, a .bin corpus (or any binary file of ``dtype``
    ids), a .npy array, or the text of a file (or stdin)."""
    if arg != "-" and os.path.isfile(arg) and (arg.lower().endswith(".npy") or is_npy(arg)) and dtype is None:
        return _npy_ids(arg)                 # its header says the dtype (whatever the file is called)
    if dtype is not None:
        if arg == "-":
            raise ArgumentError("--dtype reads a binary file of ids: give its name as INPUT, not standard input")
        return load_bin(arg, dtype)[0]
    if arg != "-" and not os.path.exists(arg) and _IDS.fullmatch(arg):
        return _parse_ids(arg, "the ids given")
    if arg != "-" and (arg.endswith(".bin") or index_path(arg).is_file()) and os.path.isfile(arg):
        return load_bin(arg)[0]
    return _parse_ids(_read_text(arg), "standard input" if arg == "-" else arg)


def _parse_ids(text: str, source: str) -> list[int]:
    """Token ids written as `bpe-fast encode` writes them: separated by spaces or commas (a
    line per document), a JSON list, or JSON lines (a list per line); all in order."""
    text = text.strip()
    try:
        values = _json_ids(text) if text.startswith("[") else [int(t) for t in text.replace(",", " ").split()]
    except ValueError as exc:
        raise InputError(f"{source}: expected token ids (integers): {exc}") from None
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in values):
        raise InputError(f"{source}: expected lists of integer token ids")
    return values


def _json_ids(text: str) -> list:
    """A JSON list of ids (or of lists of ids), or one such list per line (JSON lines)."""
    try:
        lists = [json.loads(text)]
    except ValueError:
        lists = [json.loads(line) for line in text.splitlines() if line.strip()]
    flat: list = []
    for value in lists:
        rows = value if value and all(isinstance(v, list) for v in value) else [value]
        for row in rows:
            if not isinstance(row, list):
                raise ValueError(f"{row!r} is not a list of ids")
            flat.extend(row)
    return flat


def _npy_ids(path: str) -> np.ndarray:
    """The ids of a .npy file: a NumPy array of integers, flattened."""
    try:
        ids = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise InputError(f"{path}: not a NumPy .npy file ({exc})") from None
    if ids.dtype.kind not in "iu":
        raise InputError(f"{path}: holds {ids.dtype} values, not integer token ids")
    return ids.reshape(-1)


def _add_show(sub) -> None:
    show = sub.add_parser("show", help="show token boundaries in colour",
                          description="Show how TEXT splits into tokens. TEXT is read from a file when it names "
                                      "one; when it looks like a file name (no spaces, and a / or a suffix such "
                                      "as .txt) but no such file exists, that is an error: give --text to show "
                                      "those characters themselves. - reads standard input.")
    add_tokenizer_option(show)
    show.add_argument("text", metavar="TEXT", help="the text, a file holding it, or - (standard input)")
    show.add_argument("--text", dest="literal", action="store_true",
                      help="TEXT is the text itself, even if it looks like a file name")
    show.add_argument("--no-color", action="store_true", help="separate tokens with '|' instead of colours")
    show.add_argument("--ids", action="store_true", help="also list the ids")
    add_special_options(show)
    show.set_defaults(run=cmd_show)


def cmd_show(args) -> int:
    text = show_text(args)          # before loading: a missing file is found at once
    tok = load(args.tokenizer, args.vocabs)
    options, refused = special_arguments(args, tok)
    try:
        ids = tok.encode(text, **options)
    except EncodingError as exc:
        found = first_special(text, refused)
        if found is None:           # found only once normalized: the tokenizer's own message says where
            raise
        raise special_error(f"{_source_name(args)} holds, at character {found[0]},", found[1]) from exc
    colour = sys.stdout.isatty() and not args.no_color and not os.environ.get("NO_COLOR")
    pieces, pending = [], b""
    for i, token in enumerate(ids):
        pending += tok.token_bytes(token)
        try:
            piece = pending.decode("utf-8")       # a character split over tokens shows once whole
        except UnicodeDecodeError:
            continue
        pending = b""
        pieces.append(f"{COLOURS[i % len(COLOURS)]}{piece}{RESET}" if colour else piece)
    if pending:
        pieces.append(pending.decode("utf-8", "replace"))
    print(("" if colour else "|").join(pieces))
    print(f"{len(ids)} tokens, {len(text.encode('utf-8'))} bytes, {len(text)} characters")
    if args.ids:
        print(" ".join(map(str, ids)))
    return 0


# Background colours for alternating tokens, as the Tiktokenizer page shows them.
COLOURS = ["\x1b[48;5;153m", "\x1b[48;5;229m", "\x1b[48;5;158m", "\x1b[48;5;217m", "\x1b[48;5;183m"]
RESET = "\x1b[0m"


# Suffixes that make an argument of `show` look like a file name rather than text to show.
FILE_SUFFIXES = (".txt", ".md", ".rst", ".py", ".json", ".jsonl", ".csv", ".tsv", ".html", ".xml", ".log",
                 ".text", ".gz", ".bz2", ".xz", ".zst")


def show_text(args) -> str:
    """What `show` shows: the argument itself, or the file (or stdin) it names."""
    if args.literal:
        return args.text
    if args.text == "-" or os.path.isfile(args.text):
        return _read_text(args.text)
    if os.path.isdir(args.text):
        raise ArgumentError(f"{args.text}: is a directory; give a file, or --text to show these characters")
    if looks_like_path(args.text):
        raise ArgumentError(f"{args.text}: no such file (it looks like a file name); to show these "
                            f"characters themselves, give --text")
    return args.text


def looks_like_path(arg: str) -> bool:
    """A single word holding a path separator or ending in a file suffix (notes/a.txt, ./x,
    README.md); text with spaces or line breaks is text, whatever it holds."""
    if not arg or any(c.isspace() for c in arg):
        return False
    return "/" in arg or os.sep in arg or arg.lower().endswith(FILE_SUFFIXES)


def _source_name(args) -> str:
    """Where show's text came from, for an error: the argument itself, standard input, or the file."""
    if args.literal or not (args.text == "-" or os.path.isfile(args.text)):
        return "the text"
    return "standard input" if args.text == "-" else args.text


def _add_stats(sub) -> None:
    stats = sub.add_parser("stats", help="tokens and bytes per token of files, per tokenizer",
                           description="Tokens and bytes per token of each input, read as `bpe-fast encode` reads "
                                       "it: text files, .gz/.bz2/.xz/.zst, .jsonl (--field), .parquet (--column), "
                                       "folders (their files), - for stdin. Bytes are those of the text (UTF-8), "
                                       "not of the compressed file or the JSON around it.")
    stats.add_argument("files", nargs="+", metavar="INPUT")
    add_tokenizer_option(stats, many=True)
    stats.add_argument("--field", default="text", help="JSON lines: the field that holds the text")
    stats.add_argument("--column", default="text", help="Parquet: the column that holds the text")
    stats.add_argument("--errors", choices=("strict", "replace"), default="strict",
                       help="invalid UTF-8: an error naming file and offset, or U+FFFD")
    add_special_options(stats)
    stats.set_defaults(run=cmd_stats)


def cmd_stats(args) -> int:
    toks = [(spec, load(spec, args.vocabs)) for spec in args.tokenizer]
    for _, tok in toks:                  # every option checked against every tokenizer first
        special_arguments(args, tok)
    names = [Path(spec).stem if os.path.isfile(spec) else spec for spec, _ in toks]
    found = sources(args.files, args.field, args.column)          # every input checked before any is read
    width = max(12, *map(len, names))
    print(f"{'input':<30} {'bytes':>12} " + " ".join(f"{n:>{width}} {'B/tok':>6}" for n in names))
    totals, total_bytes = [0] * len(toks), 0
    for source in found:
        counts = [0] * len(toks)
        for k, (_, tok) in enumerate(toks):
            size, counts[k] = _bytes_and_tokens(tok, source.path, args)
        total_bytes += size
        totals = [a + b for a, b in zip(totals, counts)]
        print(f"{Path(source.name).name[:30]:<30} {size:>12,} " + " ".join(
            f"{c:>{width},} {size / max(c, 1):>6.2f}" for c in counts))
    if len(found) > 1:
        print(f"{'total':<30} {total_bytes:>12,} " + " ".join(
            f"{c:>{width},} {total_bytes / max(c, 1):>6.2f}" for c in totals))
    return 0


def _bytes_and_tokens(tok, path: str, args) -> tuple[int, int]:
    """The UTF-8 bytes of an input's text and its tokens, read a batch at a time, the documents
    as encoding reads them (special tokens' text as the options say)."""
    splitter = replace(tok.splitter, special_tokens=tuple(tok.special_tokens))
    options, refused = special_arguments(args, tok)
    size = tokens = 0
    for texts, _, _, wheres in named_batches(named_pieces([path], splitter, args.errors, args.field, args.column)):
        size += sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
        try:
            tokens += int(tok.count_tokens_batch(texts, **options).sum())
        except EncodingError as exc:
            raise special_token_error(texts, wheres, refused, exc) from None
    return size, tokens


def _read_text(source: str) -> str:
    """The text of a file, or of standard input for "-"; an InputError naming it if it is no UTF-8."""
    if source == "-":
        return _utf8(sys.stdin.buffer.read(), "standard input")
    path = Path(source)
    if path.is_dir():
        raise InputError(f"{source}: is a directory")
    try:
        return _utf8(path.read_bytes(), source)
    except FileNotFoundError:
        raise InputError(f"{source}: no such file") from None


def _utf8(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{where}: invalid UTF-8 at byte offset {exc.start}") from None
