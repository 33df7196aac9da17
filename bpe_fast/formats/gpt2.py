"""GPT-2's own two files: ``encoder.json`` (token string -> id) and ``vocab.bpe`` (one merge
"a b" per line), both spelling bytes with GPT-2's bytes-to-unicode table (bytelevel.py). They
hold no pattern: every reader splits with GPT-2's."""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..bytelevel import str_to_token, token_to_str
from ..errors import ArgumentError, TokenizerFileError, VocabularyError
from ..outputs import atomic_open
from ..pretokenize.patterns import GPT2, name_of
from ._common import (FileKind, Format, Peek, Vocabulary, check_every_token_made, lookup_merge, maps_tokens_to_ids,
                      read_json, read_text, refuse_normalization, refuse_variant)

LOADER = 'Tokenizer.load(vocab_bpe, format="gpt2", encoder_json=encoder_json)'
ENCODER = FileKind("GPT-2's encoder.json", LOADER)
MERGES = FileKind("GPT-2's vocab.bpe (merges)", LOADER)


def read_gpt2(encoder_json: str | os.PathLike, vocab_bpe: str | os.PathLike) -> Vocabulary:
    """GPT-2's own files: ids from encoder.json, merge ranks from vocab.bpe's line order."""
    encoder = read_json(encoder_json)
    if not isinstance(encoder, dict) or not all(isinstance(v, int) for v in encoder.values()):
        raise TokenizerFileError(f"{encoder_json}: expected a JSON object of token -> id")
    ids = {str_to_token(s, f"{encoder_json}"): i for s, i in encoder.items() if not _is_special(s)}
    specials = {s: i for s, i in encoder.items() if _is_special(s)}
    merges, merge_ids = [], []
    # splitlines() would also split at U+2028 and other separators inside a token: only "\n"
    for lineno, line in enumerate(read_text(vocab_bpe).split("\n"), 1):
        if lineno == 1 and line.startswith("#version"):
            continue
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise TokenizerFileError(f"{vocab_bpe}, line {lineno}: expected two tokens, got {line.rstrip()!r}")
        where = f"{vocab_bpe}, line {lineno}"
        left, right = (str_to_token(p, where) for p in parts)
        pair, made = lookup_merge(left, right, ids, where, str(encoder_json))
        merges.append(pair)
        merge_ids.append(made)
    byte_ids = [ids.get(bytes([b])) for b in range(256)]
    if None in byte_ids:
        raise TokenizerFileError(f"{encoder_json}: no id for the byte {bytes([byte_ids.index(None)])!r}")
    check_every_token_made(ids, byte_ids, merge_ids, str(vocab_bpe), f"id {{}} in {encoder_json}")
    return Vocabulary(merges, GPT2, specials, merge_ids, byte_ids, source=str(vocab_bpe))


def _check_gpt2_specials(special_tokens) -> None:
    odd = [s for s in special_tokens if not _is_special(s)]
    if odd:
        raise VocabularyError(f"GPT-2's encoder.json can only hold special tokens spelled <|...|> (its loaders "
                              f"tell them apart by that); {odd[0]!r} is not: save as tokenizer.json or bpe_fast JSON")


def _check_gpt2_pattern(pattern: str | None) -> None:
    if pattern != GPT2:
        raise VocabularyError(f"GPT-2's files hold no pattern (every reader splits with GPT-2's), and this "
                              f"tokenizer splits with {name_of(pattern)}: it would encode differently once read "
                              f"back; train with the gpt2 pattern, or save as tokenizer.json, .tiktoken or "
                              f"bpe_fast JSON")


def check_writable(pattern: str | None, special_tokens) -> None:
    """GPT-2's files hold only GPT-2's pattern, and only special tokens spelled <|...|>."""
    _check_gpt2_pattern(pattern)
    _check_gpt2_specials(special_tokens)


def write_gpt2(tok, encoder_json: str | os.PathLike, vocab_bpe: str | os.PathLike) -> None:
    check_writable(tok.pattern, tok.special_tokens)
    refuse_variant(FORMAT.title, FORMAT.name, tok.variant)
    refuse_normalization(FORMAT.title, tok.normalize)
    vocab = {token_to_str(t): i for t, i in tok.mergeable_ranks().items()}
    vocab.update(tok.special_tokens)
    with atomic_open(encoder_json, "w", encoding="utf-8") as fh:
        json.dump(vocab, fh, ensure_ascii=False)
    with atomic_open(vocab_bpe, "w", encoding="utf-8") as fh:
        fh.write("#version: 0.2\n")
        for left, right in tok.merges.tolist():
            fh.write(f"{token_to_str(tok.token_bytes(left))} {token_to_str(tok.token_bytes(right))}\n")


def _is_special(s: str) -> bool:
    return len(s) > 4 and s.startswith("<|") and s.endswith("|>")


def gpt2_files(path: str | os.PathLike) -> tuple[Path, Path]:
    """GPT-2's two files for one name: a folder (encoder.json and vocab.bpe in it; any name
    without a suffix, or ending in /), or a name ending in vocab.bpe or encoder.json, the other
    file beside it with the same beginning (gpt2_vocab.bpe and gpt2_encoder.json)."""
    name = os.fspath(path)
    if name.endswith(("/", os.sep)) or Path(name).is_dir() or not Path(name).suffix:
        return Path(name) / "encoder.json", Path(name) / "vocab.bpe"
    if name.endswith("vocab.bpe"):
        return Path(name[:-len("vocab.bpe")] + "encoder.json"), Path(name)
    if name.endswith("encoder.json"):
        return Path(name), Path(name[:-len("encoder.json")] + "vocab.bpe")
    raise ArgumentError(f"{name}: GPT-2's format is two files, encoder.json and vocab.bpe: give a folder "
                        f"(a name without a suffix) or a name ending in vocab.bpe or encoder.json (the other is "
                        f"put beside it)")


# -- in the table of formats -----------------------------------------------------------------------

def sniff(peek: Peek) -> FileKind | None:
    if peek.first_line.startswith(b"#version"):
        return MERGES
    return ENCODER if maps_tokens_to_ids(peek.json) else None


def read(peek: Peek, encoder_json: str | os.PathLike | None = None) -> Vocabulary:
    """Either of GPT-2's files, the other found beside it (gpt2_files); or vocab.bpe, with
    ``encoder_json`` naming its encoder.json."""
    file = Path(peek.path)
    if encoder_json is not None:
        return read_gpt2(encoder_json, file)
    if sniff(peek) == ENCODER and not file.name.endswith("encoder.json"):
        raise TokenizerFileError(f"{file}: this is {ENCODER.what}: load it with its vocab.bpe: {LOADER}")
    try:
        encoder, merges = gpt2_files(file)
    except ArgumentError:            # a name gpt2_files cannot pair
        raise TokenizerFileError(f"{file}: {MERGES.what} holds no ids; load it with its encoder.json: "
                                 f"{LOADER}") from None
    other = merges if file == encoder else encoder
    if not other.is_file():
        raise TokenizerFileError(f"{file}: GPT-2's files come in pairs, and {other} is not beside it; "
                                 f"load them with {LOADER}")
    return read_gpt2(encoder, merges)


def write(tok, path: str | os.PathLike) -> None:
    """Both files for one name (gpt2_files); the folder a name ending in / gives is made."""
    encoder, merges = gpt2_files(path)
    check_writable(tok.pattern, tok.special_tokens)          # before the folder is made
    refuse_normalization(FORMAT.title, tok.normalize)
    refuse_variant(FORMAT.title, FORMAT.name, tok.variant)
    encoder.parent.mkdir(exist_ok=True)
    write_gpt2(tok, encoder, merges)


FORMAT = Format(
    name="gpt2", title="GPT-2's encoder.json and vocab.bpe",
    description="encoder.json and vocab.bpe: give a folder ending in / or a name ending in vocab.bpe",
    sniff=sniff, read=read, write=write, demo_name="demo-gpt2/", suffixes=(".bpe",), is_json=True,
    file_names=("encoder.json", "vocab.bpe"), output_files=lambda path: list(gpt2_files(path)),
    check_writable=check_writable, makes_folder=True, holds_normalization=False)
