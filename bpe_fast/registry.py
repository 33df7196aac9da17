"""The named encodings, and opening a tokenizer from whatever a user names.

``load("cl100k_base")`` finds the encoding's file (``path=``, ``$BPE_FAST_VOCABS`` or the shared
vocabularies, see paths.py) and gives it tiktoken's pattern and special tokens;
``load("tok.json")`` opens a file in any supported format, telling them apart by content.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from . import formats
from .errors import TokenizerFileError
from .paths import vocab_dirs
from .patterns import CL100K, GPT2, O200K
from .tokenizer import Tokenizer


@dataclass(frozen=True)
class NamedEncoding:
    """One of OpenAI's encodings: tiktoken's pattern and special tokens, and the files it needs."""
    pattern: str
    special_tokens: dict[str, int] = field(default_factory=dict)
    files: tuple[str, ...] = ()


# tiktoken_ext/openai_public.py. "gpt2" is r50k_base read from GPT-2's own two files, whose
# encoder.json holds its special token.
ENCODINGS = {
    "r50k_base": NamedEncoding(GPT2, {"<|endoftext|>": 50256}, ("r50k_base.tiktoken",)),
    "p50k_base": NamedEncoding(GPT2, {"<|endoftext|>": 50256}, ("p50k_base.tiktoken",)),
    "cl100k_base": NamedEncoding(CL100K, {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258,
                                          "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
                                          "<|endofprompt|>": 100276}, ("cl100k_base.tiktoken",)),
    "o200k_base": NamedEncoding(O200K, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
                                ("o200k_base.tiktoken",)),
    "gpt2": NamedEncoding(GPT2, {}, ("gpt2_encoder.json", "gpt2_vocab.bpe")),
}


def find_vocab_file(filename: str, path: str | os.PathLike | None = None) -> Path:
    """``path`` itself (a file), ``filename`` in the folder ``path``, or in the vocabulary folders."""
    if path is not None:
        candidates = [Path(path) / filename if Path(path).is_dir() else Path(path)]
    else:
        candidates = [d / filename for d in vocab_dirs()]
    for c in candidates:
        if c.is_file():
            return c
    where = f" (looked in {', '.join(map(str, candidates))})" if candidates else ""
    raise TokenizerFileError(f"{filename} not found{where}: pass path= (a file or a folder; CLI: --vocabs) "
                             f"or set BPE_FAST_VOCABS")


def load_encoding(name: str, path: str | os.PathLike | None = None) -> Tokenizer:
    """A named encoding from its file(s)."""
    enc = ENCODINGS[name]
    if name == "gpt2":
        folder = None if path is None else (Path(path) if Path(path).is_dir() else Path(path).parent)
        encoder, merges = (find_vocab_file(f, folder) for f in enc.files)
        return Tokenizer.from_gpt2(encoder, merges)
    return Tokenizer.from_tiktoken(find_vocab_file(enc.files[0], path), enc.pattern, enc.special_tokens)


def load(name_or_path: str | os.PathLike, path: str | os.PathLike | None = None) -> Tokenizer:
    """A tokenizer from what a user would type: a named encoding (cl100k_base, o200k_base,
    r50k_base, p50k_base, gpt2; ``path`` is where its files are), or a file in any supported
    format (bpe_fast .json, Hugging Face tokenizer.json, .tiktoken named after its encoding,
    minbpe .model)."""
    spec = os.fspath(name_or_path)
    if spec in ENCODINGS:
        return load_encoding(spec, path)
    file = Path(spec)
    if not file.is_file():
        what = "is a directory" if file.is_dir() else "no such file"
        raise TokenizerFileError(f"{spec}: {what}, and not a named encoding ({', '.join(ENCODINGS)})")
    return open_file(file)


def open_file(file: Path) -> Tokenizer:
    """A tokenizer file, its format told by its suffix or its content."""
    if file.suffix == ".tiktoken":
        enc = ENCODINGS.get(file.stem)
        if enc is None or enc.files != (file.name,):
            raise TokenizerFileError(f"{file}: a .tiktoken file holds no pattern or special tokens; name it "
                                     f"after its encoding (cl100k_base.tiktoken, ...) or load it in Python with "
                                     f"Tokenizer.from_tiktoken(path, pattern=...)")
        return Tokenizer.from_tiktoken(file, enc.pattern, enc.special_tokens)
    if file.suffix == ".model":
        return Tokenizer.from_minbpe(file)
    data = formats.read_json(file)
    if isinstance(data, dict) and "model" in data:
        return Tokenizer.from_vocabulary(formats.huggingface_vocabulary(data, str(file)))
    return Tokenizer.from_vocabulary(formats.bpe_fast_vocabulary(data, str(file)))
