"""The named encodings, and opening a tokenizer from whatever a user names: ``bpe_fast.load``.

``load("cl100k_base")`` finds the encoding's file and gives it tiktoken's pattern and special
tokens. The file is looked for in ``path=`` (CLI ``--vocabs``) when given, else in
``$BPE_FAST_VOCABS``, in tiktoken's own cache (``$TIKTOKEN_CACHE_DIR``, ``$DATA_GYM_CACHE_DIR``
or ``data-gym-cache`` in the temporary folder: the files tiktoken has downloaded) and in the
shared ``vocabs/`` (paths.py); whichever is found, its SHA-256 must be the one tiktoken publishes.
``load("tok.json")`` opens a file in any supported format, telling them apart by content.
``load("openai-community/gpt2")`` opens a Hugging Face hub repository's tokenizer.json from the
local hub cache (hub.py), offline.
"""
from __future__ import annotations

import os
from pathlib import Path

from . import arguments, formats
from .formats import _hub as hub
from .quality import report as quality
from .errors import TokenizerFileError, VocabularyNotFoundError
from .formats._named import ENCODINGS, EncodingFile, NamedEncoding, encoding_of_file
from .paths import tiktoken_cache_dir, tiktoken_cache_file, vocab_dirs
from .tokenizer import Tokenizer

__all__ = ["ENCODINGS", "NamedEncoding", "load", "load_encoding", "find_vocab_file", "encoding_files"]


def _candidates(file: EncodingFile, path: str | os.PathLike | None) -> list[Path]:
    if path is not None:                       # the caller said where: only there
        return [Path(path) / file.name if Path(path).is_dir() else Path(path)]
    dirs = vocab_dirs()                        # $BPE_FAST_VOCABS (if set), then the shared vocabs/
    mine = dirs[:1] if os.environ.get("BPE_FAST_VOCABS") else []
    cached = tiktoken_cache_file(file.url)
    return [d / file.name for d in mine] + ([cached] if cached is not None else []) + \
        [d / file.name for d in dirs[len(mine):]]


def _find(file: EncodingFile, path: str | os.PathLike | None) -> Path:
    candidates = _candidates(file, path)
    for c in candidates:
        if c.is_file():
            actual = formats.file_sha256(c)
            if actual != file.sha256:
                raise TokenizerFileError(
                    f"{c}: its SHA-256 is {actual}, not {file.sha256}, the hash tiktoken publishes for "
                    f"{file.name} ({file.url}): a damaged or different file; replace it with the published one")
            return c
    looked = ", ".join(map(str, candidates)) or "nowhere: no folder is set"
    cache = tiktoken_cache_dir()
    download = (f"let tiktoken download it once into its cache ({cache}): python -c \"import tiktoken; "
                f"tiktoken.get_encoding('{_encoding_name(file)}')\"" if cache is not None else
                "turn tiktoken's cache back on (TIKTOKEN_CACHE_DIR is empty)")
    raise VocabularyNotFoundError(
        f"{file.name} not found (looked in {looked}): pass path= (the file, or a folder holding it), set "
        f"BPE_FAST_VOCABS to a folder holding it, or {download}",
        cli_message=f"{file.name} not found (looked in {looked}): give --vocabs FOLDER (a folder holding it, "
                    f"or the file itself), set BPE_FAST_VOCABS, or {download}")


def _encoding_name(file: EncodingFile) -> str:
    found = encoding_of_file(file.name)
    return found[0] if found else file.name


def encoding_files(name: str, path: str | os.PathLike | None = None) -> list[Path]:
    """The files of the named encoding ``name``, found and checked (see the module docstring).
    For "gpt2", ``path`` may be a folder holding both files, or either file."""
    enc = ENCODINGS[name]
    if len(enc.files) > 1 and path is not None and not Path(path).is_dir():
        path = Path(path).parent
    return [_find(f, path) for f in enc.files]


def find_vocab_file(filename: str, path: str | os.PathLike | None = None) -> Path:
    """One named encoding's file by its name (cl100k_base.tiktoken, gpt2_vocab.bpe, ...), found
    and checked as ``load`` finds it."""
    found = encoding_of_file(filename)
    if found is None:
        raise TokenizerFileError(f"{filename} is none of the named encodings' files")
    return _find(found[1], path)


def load_encoding(name: str, path: str | os.PathLike | None = None) -> Tokenizer:
    """A named encoding from its file(s)."""
    enc = ENCODINGS[name]
    files = encoding_files(name, path)
    vocab = (formats.gpt2.read_gpt2(*files) if name == "gpt2"
             else formats.tiktoken.read_tiktoken(files[0], enc.pattern, enc.special_tokens))
    tok = Tokenizer.from_vocabulary(vocab)
    tok.name = name         # tiktoken's Encoding.name, and what repr(tok) shows
    return tok


def load(name_or_path: str | os.PathLike, path: str | os.PathLike | None = None) -> Tokenizer:
    """A tokenizer from what a user would type: a named encoding (cl100k_base, o200k_base,
    r50k_base, p50k_base, gpt2; ``path`` is where its files are, see the module docstring), or
    a file in any supported format, told by its content: bpe_fast's JSON, a Hugging Face
    tokenizer.json, a .tiktoken file (pattern and special tokens from its sidecar
    ``x.tiktoken.json``, or the named encoding it is the published file of), a minbpe .model,
    GPT-2's encoder.json or vocab.bpe (the other file beside it), a folder holding
    tokenizer.json or encoder.json and vocab.bpe, or a Hugging Face hub repository id
    ("openai-community/gpt2"), its tokenizer.json read offline from the local hub cache (hub.py)
    when no local file or folder has that name.

    >>> import os, tempfile, bpe_fast
    >>> tok = bpe_fast.Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = tok.save(os.path.join(folder, "tokenizer.json"))        # Hugging Face's format
    ...     bpe_fast.load(os.path.join(folder, "tokenizer.json")) == tok == bpe_fast.load(folder)
    True
    """
    spec = os.fspath(arguments.path(name_or_path, "name_or_path"))
    if path is not None:
        arguments.path(path, "path")
    if spec in ENCODINGS:
        return load_encoding(spec, path)
    file = Path(spec)
    if file.is_dir():
        return open_folder(file)
    if file.exists() and not file.is_file():         # a device, a FIFO, a socket: not a vocabulary to read
        raise TokenizerFileError(f"{spec}: not a regular file (a tokenizer is read from a file or a folder)")
    if not file.is_file() and hub.is_repo_id(spec):   # ORG/NAME: a Hugging Face hub repository, from its cache
        return open_file(hub.cached_tokenizer_file(spec))
    if not file.is_file():
        raise TokenizerFileError(f"{spec}: no such file, and not a named encoding ({', '.join(ENCODINGS)})")
    return open_file(file)


def open_folder(folder: Path) -> Tokenizer:
    """A folder holding one format's usual files: a tokenizer.json (as Hugging Face saves one), or
    GPT-2's two files."""
    return Tokenizer.from_vocabulary(formats.read_folder(folder))


def open_file(file: Path) -> Tokenizer:
    """A tokenizer file, its format told by its content (or, failing that, its name)."""
    return Tokenizer.from_vocabulary(formats.read(file))


quality.open_baseline = load      # the quality report opens its baselines by name through load (quality/report.py)
