"""Reading and writing the vocabulary formats people use.

* tiktoken ``.tiktoken``: one "base64(token) rank" per line; merges are recovered from the ranks.
* GPT-2's ``encoder.json`` (token string -> id) and ``vocab.bpe`` (one merge "a b" per line), both
  spelling bytes with GPT-2's bytes-to-unicode table.
* Hugging Face ``tokenizer.json`` with a byte-level BPE model.
* minbpe ``.model`` ("minbpe v1", pattern, special tokens, merges as id pairs) and ``.vocab``.

Every error names the file (and the line, where there are lines) and what is wrong with it.
"""
from __future__ import annotations

import base64
import binascii
import functools
import json
import os
from pathlib import Path

import numpy as np

from .patterns import CL100K, GPT2, O200K, PatternError, name_of
from .tokenizer import Tokenizer, TokenizerFileError, VocabularyError

# The named OpenAI encodings: tiktoken's patterns and special tokens (tiktoken_ext/openai_public.py).
ENCODINGS = {
    "r50k_base": (GPT2, {"<|endoftext|>": 50256}),
    "p50k_base": (GPT2, {"<|endoftext|>": 50256}),
    "cl100k_base": (CL100K, {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                             "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}),
    "o200k_base": (O200K, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
}

# The same patterns as Hugging Face's Oniguruma engine must be told them: there "{1,3}+" is not
# possessive but a repeated group, and "$" also matches before any newline. Equivalence with
# the tiktoken strings is checked by the tests on every shared corpus.
HF_PATTERNS = {
    GPT2: r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++\z|\s+(?!\S)|\s""",
    CL100K: r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++\z|\s*[\r\n]|\s+(?!\S)|\s""",
    O200K: O200K,
}
# Hugging Face's own ByteLevel regex (use_regex=true), the GPT-2 pattern in its older spelling.
HF_BYTELEVEL_REGEX = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


@functools.lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's table: printable bytes stand for themselves, the others for chars from U+0100 up."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@functools.lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


def token_to_str(token: bytes) -> str:
    table = bytes_to_unicode()
    return "".join(table[b] for b in token)


def str_to_token(text: str, where: str) -> bytes:
    table = unicode_to_bytes()
    try:
        return bytes(table[c] for c in text)
    except KeyError as exc:
        raise TokenizerFileError(f"{where}: {text!r} has {exc.args[0]!r}, which is not in GPT-2's "
                                 f"bytes-to-unicode alphabet") from None


# -- tiktoken --------------------------------------------------------------------------------

def read_tiktoken(path: str | os.PathLike) -> dict[bytes, int]:
    """``{token bytes: rank}`` from a .tiktoken file."""
    ranks: dict[bytes, int] = {}
    seen_ranks: dict[int, int] = {}
    with _open(path, "rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) != 2:
                raise TokenizerFileError(f"{path}, line {lineno}: expected 'base64-token rank', got {line[:60]!r}")
            try:
                token, rank = base64.b64decode(parts[0], validate=True), int(parts[1])
            except (binascii.Error, ValueError):
                raise TokenizerFileError(f"{path}, line {lineno}: bad base64 token or rank: {line[:60]!r}") from None
            if rank in seen_ranks:
                raise TokenizerFileError(f"{path}, line {lineno}: rank {rank} was already given on line {seen_ranks[rank]}")
            if token in ranks:
                raise TokenizerFileError(f"{path}, line {lineno}: token {token!r} was already given rank {ranks[token]}")
            ranks[token] = rank
            seen_ranks[rank] = lineno
    if not ranks:
        raise TokenizerFileError(f"{path}: no tokens (empty or truncated file)")
    return ranks


def from_tiktoken(path, pattern: str | None = None, special_tokens=None) -> Tokenizer:
    return _vocab_errors_name(path, Tokenizer.from_ranks, read_tiktoken(path), pattern, special_tokens, str(path))


def save_tiktoken(tok: Tokenizer, path: str | os.PathLike) -> None:
    with open(path, "wb") as fh:
        for token, rank in sorted(tok.mergeable_ranks().items(), key=lambda item: item[1]):
            fh.write(base64.b64encode(token) + b" " + str(rank).encode() + b"\n")


def to_tiktoken(tok: Tokenizer, name: str = "bpe_fast"):
    """A ``tiktoken.Encoding`` with the same ranks, pattern and special tokens."""
    import tiktoken
    return tiktoken.Encoding(name, pat_str=tok.pattern if tok.pattern is not None else r"[\s\S]+",
                             mergeable_ranks=tok.mergeable_ranks(), special_tokens=tok.special_tokens)


def find_vocab_file(filename: str, path: str | os.PathLike | None) -> Path:
    """``path`` itself, a file in the directory ``path``, or in $BPE_FAST_VOCABS."""
    candidates = []
    if path is not None:
        p = Path(path)
        candidates.append(p / filename if p.is_dir() else p)
    elif os.environ.get("BPE_FAST_VOCABS"):
        candidates.append(Path(os.environ["BPE_FAST_VOCABS"]) / filename)
    for c in candidates:
        if c.is_file():
            return c
    where = f" (looked in {', '.join(map(str, candidates))})" if candidates else ""
    raise TokenizerFileError(f"{filename} not found{where}: pass path= (a file or a directory) or set BPE_FAST_VOCABS")


def load(name: str, path: str | os.PathLike | None = None) -> Tokenizer:
    """One of tiktoken's named encodings from its .tiktoken file, with tiktoken's pattern and specials."""
    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; known: {', '.join(ENCODINGS)}")
    pattern, specials = ENCODINGS[name]
    return from_tiktoken(find_vocab_file(f"{name}.tiktoken", path), pattern, specials)


def open_tokenizer(spec: str | os.PathLike, vocabs: str | os.PathLike | None = None) -> Tokenizer:
    """A tokenizer from what a user would type: a named encoding ("cl100k_base", "gpt2"), or a
    file in any supported format (bpe_fast .json, tokenizer.json, .tiktoken, minbpe .model)."""
    spec = str(spec)
    if spec in ENCODINGS:
        return load(spec, vocabs)
    if spec == "gpt2":
        directory = Path(vocabs or os.environ.get("BPE_FAST_VOCABS") or ".")
        return from_gpt2(directory / "gpt2_encoder.json", directory / "gpt2_vocab.bpe")
    path = Path(spec)
    if not path.is_file():
        raise TokenizerFileError(f"{spec}: no such file, and not a named encoding ({', '.join([*ENCODINGS, 'gpt2'])})")
    if path.suffix == ".tiktoken":
        if path.stem not in ENCODINGS:
            raise TokenizerFileError(f"{spec}: a .tiktoken file holds no pattern or special tokens; name it "
                                     f"after an encoding ({', '.join(ENCODINGS)}) or load it in Python with a pattern")
        return load(path.stem, path)
    if path.suffix == ".model":
        return from_minbpe(path)
    data = _read_json(path)
    if isinstance(data, dict) and "model" in data:
        return from_huggingface(path)
    return Tokenizer.from_dict(data, source=str(path))


# -- GPT-2 ------------------------------------------------------------------------------------

def from_gpt2(encoder_json: str | os.PathLike, vocab_bpe: str | os.PathLike) -> Tokenizer:
    """GPT-2's own files: ids from encoder.json, merge ranks from vocab.bpe's line order."""
    encoder = _read_json(encoder_json)
    if not isinstance(encoder, dict) or not all(isinstance(v, int) for v in encoder.values()):
        raise TokenizerFileError(f"{encoder_json}: expected a JSON object of token -> id")
    ids = {str_to_token(s, f"{encoder_json}"): i for s, i in encoder.items() if not _is_special(s)}
    specials = {s: i for s, i in encoder.items() if _is_special(s)}
    merges, merge_ids = [], []
    with _open(vocab_bpe, "r", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if lineno == 1 and line.startswith("#version"):
                continue
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) != 2:
                raise TokenizerFileError(f"{vocab_bpe}, line {lineno}: expected two tokens, got {line.rstrip()!r}")
            where = f"{vocab_bpe}, line {lineno}"
            pair, made = _merge_ids(*(str_to_token(p, where) for p in parts), ids, where, str(encoder_json))
            merges.append(pair)
            merge_ids.append(made)
    byte_ids = [ids.get(bytes([b])) for b in range(256)]
    if None in byte_ids:
        raise TokenizerFileError(f"{encoder_json}: no id for the byte {bytes([byte_ids.index(None)])!r}")
    made = set(byte_ids) | set(merge_ids)
    unmade = [(t, i) for t, i in ids.items() if i not in made]
    if unmade:
        raise TokenizerFileError(f"{vocab_bpe}: no merge makes {token_to_str(unmade[0][0])!r} (id {unmade[0][1]} in "
                                 f"{encoder_json}); {len(unmade)} tokens lack their merge (truncated file?)")
    return _vocab_errors_name(vocab_bpe, Tokenizer, merges, GPT2, specials, merge_ids=merge_ids, byte_ids=byte_ids)


def save_gpt2(tok: Tokenizer, encoder_json: str | os.PathLike, vocab_bpe: str | os.PathLike) -> None:
    vocab = {token_to_str(t): i for t, i in tok.mergeable_ranks().items()}
    vocab.update(tok.special_tokens)
    with open(encoder_json, "w", encoding="utf-8") as fh:
        json.dump(vocab, fh, ensure_ascii=False)
    with open(vocab_bpe, "w", encoding="utf-8") as fh:
        fh.write("#version: 0.2\n")
        for left, right in tok.merges.tolist():
            fh.write(f"{token_to_str(tok.token_bytes(left))} {token_to_str(tok.token_bytes(right))}\n")


def _merge_ids(left: bytes, right: bytes, ids: dict[bytes, int], where: str, vocab_name: str):
    """((left id, right id), id of left + right) for a merge read from a file, all looked up in ids."""
    for part in (left, right, left + right):
        if part not in ids:
            raise TokenizerFileError(f"{where}: {token_to_str(part)!r} is not in {vocab_name}")
    return (ids[left], ids[right]), ids[left + right]


def _is_special(s: str) -> bool:
    return len(s) > 4 and s.startswith("<|") and s.endswith("|>")


# -- Hugging Face ----------------------------------------------------------------------------

def from_huggingface(path: str | os.PathLike) -> Tokenizer:
    """A byte-level BPE ``tokenizer.json``."""
    data = _read_json(path)
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict) or model.get("type") != "BPE":
        raise TokenizerFileError(f"{path}: not a BPE tokenizer.json (model.type is {model and model.get('type')!r})")
    pattern = _hf_pattern(data.get("pre_tokenizer"), path)
    added = {t["content"] for t in data.get("added_tokens", [])}   # kept in model.vocab too, as text
    vocab = {str_to_token(s, f"{path}: model.vocab"): i for s, i in model.get("vocab", {}).items() if s not in added}
    merges, merge_ids = [], []
    for k, merge in enumerate(model.get("merges", [])):
        parts = merge.split(" ") if isinstance(merge, str) else merge
        if len(parts) != 2:
            raise TokenizerFileError(f"{path}: model.merges[{k}] is {merge!r}, not a pair")
        where = f"{path}: model.merges[{k}]"
        pair, made = _merge_ids(*(str_to_token(p, where) for p in parts), vocab, where, "model.vocab")
        merges.append(pair)
        merge_ids.append(made)
    missing = [b for b in range(256) if bytes([b]) not in vocab]
    if missing:
        raise TokenizerFileError(f"{path}: model.vocab has no token for the byte {bytes([missing[0]])!r} "
                                 f"(not a byte-level BPE with the full byte alphabet)")
    specials = {t["content"]: t["id"] for t in data.get("added_tokens", []) if t.get("special", True)}
    return _vocab_errors_name(path, Tokenizer, merges, pattern, specials, merge_ids=merge_ids,
                              byte_ids=[vocab[bytes([b])] for b in range(256)])


def _hf_pattern(pre, path) -> str | None:
    """The split pattern of a pre_tokenizer that bpe_fast can reproduce exactly."""
    if pre is None:
        return None
    steps = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    pattern = None
    for step in steps:
        kind = step.get("type")
        if kind == "ByteLevel":
            if step.get("add_prefix_space"):
                raise TokenizerFileError(f"{path}: ByteLevel add_prefix_space=true is not supported")
            if step.get("use_regex", True):
                pattern = GPT2
        elif kind == "Split" and "Regex" in step.get("pattern", {}) and step.get("behavior") == "Isolated" \
                and not step.get("invert"):
            regex_text = step["pattern"]["Regex"]
            pattern = {hf: ours for ours, hf in HF_PATTERNS.items()}.get(regex_text, regex_text)
        else:
            raise TokenizerFileError(f"{path}: pre_tokenizer step {kind!r} ({json.dumps(step)[:80]}) is not supported")
    return pattern


def huggingface_json(tok: Tokenizer) -> dict:
    vocab = {token_to_str(t): i for t, i in tok.mergeable_ranks().items()}
    merges = [[token_to_str(tok.token_bytes(a)), token_to_str(tok.token_bytes(b))] for a, b in tok.merges.tolist()]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
    steps = [byte_level]
    if tok.pattern is not None:
        split = {"type": "Split", "pattern": {"Regex": HF_PATTERNS.get(tok.pattern, tok.pattern)},
                 "behavior": "Isolated", "invert": False}
        steps = [split, byte_level]
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for s, i in sorted(tok.special_tokens.items(), key=lambda x: x[1])]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": steps}, "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def save_huggingface(tok: Tokenizer, path: str | os.PathLike) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(huggingface_json(tok), fh, ensure_ascii=False)


# -- minbpe -----------------------------------------------------------------------------------

def from_minbpe(path: str | os.PathLike) -> Tokenizer:
    """A minbpe ``.model`` file (BasicTokenizer: empty pattern line; RegexTokenizer: its pattern)."""
    with _open(path, "r", encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    if not lines or lines[0].strip() != "minbpe v1":
        raise TokenizerFileError(f"{path}, line 1: expected 'minbpe v1', got {lines[0][:40]!r}")
    if len(lines) < 3:
        raise TokenizerFileError(f"{path}: truncated (no pattern or special-token count)")
    pattern = lines[1].strip("\n") or None
    n_special = _int_field(lines[2], path, 3, "the number of special tokens")
    specials = {}
    for k in range(n_special):
        lineno = 4 + k
        parts = lines[lineno - 1].rsplit(" ", 1) if lineno - 1 < len(lines) else []
        if len(parts) != 2:
            raise TokenizerFileError(f"{path}, line {lineno}: expected 'token id' for special token {k + 1} of {n_special}")
        specials[parts[0]] = _int_field(parts[1], path, lineno, "a special token id")
    merges = []
    for lineno, line in enumerate(lines[3 + n_special:], 4 + n_special):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise TokenizerFileError(f"{path}, line {lineno}: expected two ids, got {line!r}")
        merges.append([_int_field(p, path, lineno, "a token id") for p in parts])
    if pattern is not None:
        pattern = {p: p for p in (GPT2, CL100K, O200K)}.get(pattern, pattern)
    return _vocab_errors_name(path, Tokenizer, merges, pattern, specials)


def save_minbpe(tok: Tokenizer, prefix: str | os.PathLike) -> None:
    """``prefix.model`` (for loading) and ``prefix.vocab`` (for people), as minbpe writes them."""
    if not (np.array_equal(tok.byte_ids, np.arange(256))
            and np.array_equal(tok.merge_ids, np.arange(256, 256 + len(tok.merges)))):
        raise VocabularyError("minbpe numbers bytes 0..255 and merge i as 256 + i; this vocabulary "
                              "uses other ids (save it as tiktoken or tokenizer.json instead)")
    with open(f"{prefix}.model", "w", encoding="utf-8") as fh:
        fh.write("minbpe v1\n")
        fh.write(f"{tok.pattern or ''}\n")
        fh.write(f"{len(tok.special_tokens)}\n")
        for s, i in tok.special_tokens.items():
            fh.write(f"{s} {i}\n")
        for left, right in tok.merges.tolist():
            fh.write(f"{left} {right}\n")
    with open(f"{prefix}.vocab", "w", encoding="utf-8") as fh:
        for i in range(256):
            fh.write(f"[{_render(tok.token_bytes(i))}] {i}\n")
        for (left, right), new in zip(tok.merges.tolist(), tok.merge_ids.tolist()):
            fh.write(f"[{_render(tok.token_bytes(left))}][{_render(tok.token_bytes(right))}] -> "
                     f"[{_render(tok.token_bytes(new))}] {new}\n")


def _render(token: bytes) -> str:
    """minbpe's rendering: decoded text with control characters escaped."""
    import unicodedata
    text = token.decode("utf-8", errors="replace")
    return "".join(c if unicodedata.category(c)[0] != "C" else f"\\u{ord(c):04x}" for c in text)


# -- helpers ----------------------------------------------------------------------------------

def _open(path, mode, **kwargs):
    try:
        return open(path, mode, **kwargs)
    except FileNotFoundError:
        raise TokenizerFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TokenizerFileError(f"{path}: is a directory") from None


def _read_json(path):
    with _open(path, "r", encoding="utf-8") as fh:
        try:
            return json.load(fh)
        except json.JSONDecodeError as exc:
            raise TokenizerFileError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg}); truncated?") from None
        except UnicodeDecodeError as exc:
            raise TokenizerFileError(f"{path}: not UTF-8 text (byte offset {exc.start}), so not a JSON "
                                     f"tokenizer file") from None


def _int_field(text: str, path, lineno: int, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise TokenizerFileError(f"{path}, line {lineno}: expected {what}, got {text!r}") from None


def _vocab_errors_name(path, build, *args, **kwargs) -> Tokenizer:
    """Call a Tokenizer constructor; a bad vocabulary or pattern gets the file's name in front."""
    try:
        return build(*args, **kwargs)
    except (VocabularyError, PatternError) as exc:
        message = str(exc)
        raise TokenizerFileError(message if message.startswith(str(path)) else f"{path}: {message}") from None


__all__ = ["ENCODINGS", "load", "open_tokenizer", "read_tiktoken", "from_tiktoken", "save_tiktoken", "to_tiktoken", "from_gpt2",
           "save_gpt2", "from_huggingface", "save_huggingface", "huggingface_json", "from_minbpe", "save_minbpe",
           "bytes_to_unicode", "name_of"]
