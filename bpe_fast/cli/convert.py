"""``bpe-fast convert``: read a tokenizer in any format (or a named encoding) and write it in any
format, with the special tokens' roles for transformers if asked."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from .. import formats
from ..errors import ArgumentError
from ..outputs import check_output
from ..pretokenize.patterns import known_names
from ..registry import load
from ..tokenizer import Tokenizer
from .common import add_format_option, normalized
from .writing import STDOUT, check_tokenizer_output, shown, where_to_write, write_tokenizer


def add_parser(sub) -> None:
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
                        "shared vocabs/; see docs/encoding-and-formats.md)")
    for role in ("eos", "pad", "bos"):
        c.add_argument(f"--{role}-token", default=None, metavar="TOKEN",
                       help=f"--format huggingface: the special token that is the {role} token for transformers "
                            f"(written to tokenizer_config.json beside tokenizer.json)")
    c.set_defaults(run=cmd_convert)


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
          f"pattern {tok.pattern_name}{normalized(tok.normalize)}", file=out)
    for path in written:
        print(f"wrote      {shown(path)} ({fmt})", file=out)
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


def _read_with_pattern(path: str, pattern: str):
    """convert's IN read with --pattern, which only a format whose files hold none takes (.tiktoken)."""
    takers = [fmt for fmt in formats.FORMATS if fmt.needs_pattern]
    fmt = formats.sniff(path) if Path(path).is_file() else None
    if fmt not in [taker.name for taker in takers]:
        raise ArgumentError(f"--pattern {pattern}: IN {path} is not {' or '.join(t.title for t in takers)}; only "
                            f"those lack a pattern (every other format, and the named encodings, hold their own)")
    return formats.read(path, fmt, pattern=pattern)
