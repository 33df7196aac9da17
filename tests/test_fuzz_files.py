"""Fuzzing the vocabulary file readers: whatever a corrupt file holds, loading it either gives a
tokenizer or raises a BpeFastError that names the file -- never another exception. And the same
for arguments: whatever value a training argument or a tokenizer method gets.

Each format starts from a real file written by bpe_fast (a small vocabulary with two special
tokens) and hypothesis mutates it: bytes flipped, cut short, lines dropped or repeated, numbers
replaced by extreme ones, JSON values swapped for other JSON.
"""
from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import BpeFastError, Tokenizer

from .conftest import examples, small_text

FUZZ = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@functools.lru_cache(maxsize=1)
def vocabulary() -> Tokenizer:
    return bpe_fast.train_from_iterator([small_text()], 300, pattern="gpt2", workers=1,
                                        special_tokens=["<|endoftext|>", "<|pad|>"])


def written(tmp: Path, fmt: str) -> dict[str, bytes]:
    """The files of one format, as {name: content}."""
    tok = vocabulary()
    if fmt == "bpe_fast":
        tok.save(tmp / "t.json")
    elif fmt == "tiktoken":
        tok.save(tmp / "t.tiktoken", format="tiktoken")
    elif fmt == "huggingface":
        tok.save(tmp / "tokenizer.json", format="huggingface")
    elif fmt == "minbpe":
        tok.save(tmp / "t", format="minbpe")
        (tmp / "t.vocab").unlink()
    elif fmt == "gpt2":
        tok.save(tmp / "vocab.bpe", format="gpt2")
    files = {p.name: p.read_bytes() for p in tmp.iterdir()}
    for p in tmp.iterdir():
        p.unlink()
    return files


def load(tmp: Path, fmt: str) -> Tokenizer:
    if fmt == "tiktoken":
        return Tokenizer.load(tmp / "t.tiktoken", format="tiktoken", pattern=bpe_fast.GPT2,
                              special_tokens={"<|endoftext|>": 300})
    if fmt == "minbpe":
        return Tokenizer.load(tmp / "t.model", format="minbpe")
    if fmt == "gpt2":
        return Tokenizer.load(tmp / "vocab.bpe", format="gpt2", encoder_json=tmp / "encoder.json")
    return bpe_fast.load(tmp / ("t.json" if fmt == "bpe_fast" else "tokenizer.json"))


# -- mutations -----------------------------------------------------------------------------------

EXTREMES = ["-1", "0", "99999999999", "1500000000", "2147483647", "2147483648", "1e9", "1.5", "NaN", "",
            "18446744073709551616", "-99999999999999999999"]


@st.composite
def mutated(draw, content: bytes) -> bytes:
    kind = draw(st.sampled_from(["flip", "cut", "lines", "number", "insert"]))
    if kind == "flip" and content:
        i = draw(st.integers(0, len(content) - 1))
        return content[:i] + bytes([draw(st.integers(0, 255))]) + content[i + 1:]
    if kind == "cut":
        return content[:draw(st.integers(0, len(content)))]
    if kind == "lines":
        lines = content.split(b"\n")
        i = draw(st.integers(0, max(len(lines) - 1, 0)))
        op = draw(st.sampled_from(["drop", "repeat", "swap"]))
        if op == "drop":
            del lines[i]
        elif op == "repeat":
            lines.insert(i, lines[i])
        elif len(lines) > 1:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines)
    if kind == "number":
        numbers = list(re.finditer(rb"-?\d+", content))
        if numbers:
            m = draw(st.sampled_from(numbers))
            return content[:m.start()] + draw(st.sampled_from(EXTREMES)).encode() + content[m.end():]
    i = draw(st.integers(0, len(content)))
    return content[:i] + draw(st.binary(max_size=20)) + content[i:]


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=8),
                           lambda inner: (st.lists(inner, max_size=3)
                                          | st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                           max_leaves=6)


def json_paths(value, path=()):
    """Every path to a value inside parsed JSON, for replacing one."""
    yield path
    if isinstance(value, dict):
        for key in list(value)[:20]:
            yield from json_paths(value[key], path + (key,))
    elif isinstance(value, list):
        for i in sorted({0, 1, len(value) - 1} & set(range(len(value)))):
            yield from json_paths(value[i], path + (i,))


def replaced(data, path, new):
    if not path:
        return new
    data = json.loads(json.dumps(data))
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return data


def check(tmp: Path, fmt: str, files: dict[str, bytes]) -> None:
    for name, content in files.items():
        (tmp / name).write_bytes(content)
    try:
        tok = load(tmp, fmt)
    except BpeFastError as exc:
        assert any(name in str(exc) for name in files), f"the error does not name the file: {exc}"
    else:   # a mutation may leave a valid vocabulary (its pattern changed, say); then it must work
        ids = tok.encode("hello world <|endoftext|>", disallowed_special=())
        assert set(tok.decode_bytes(ids)) <= set(b"hello world <|endoftext|>")
    finally:
        for name in files:
            (tmp / name).unlink(missing_ok=True)


# -- the tests -------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["bpe_fast", "tiktoken", "huggingface", "minbpe", "gpt2"])
@given(data=st.data())
@FUZZ
def test_corrupt_files_give_a_bpe_fast_error_naming_the_file(tmp_path, fmt, data):
    files = written(tmp_path, fmt)
    name = data.draw(st.sampled_from(sorted(files)))
    files[name] = data.draw(mutated(files[name]))
    check(tmp_path, fmt, files)


@pytest.mark.parametrize("fmt", ["bpe_fast", "huggingface", "gpt2"])
@given(data=st.data())
@FUZZ
def test_json_files_with_values_of_the_wrong_kind(tmp_path, fmt, data):
    files = written(tmp_path, fmt)
    name = data.draw(st.sampled_from([n for n in sorted(files) if n.endswith(".json")]))
    parsed = json.loads(files[name])
    path = data.draw(st.sampled_from(list(json_paths(parsed))))
    files[name] = json.dumps(replaced(parsed, path, data.draw(JSON_VALUES))).encode()
    check(tmp_path, fmt, files)


# -- word tables (.npz) ------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def saved_word_table() -> bytes:
    import io
    table = bpe_fast.count_from_iterator([small_text()], workers=1, progress="none")
    buffer = io.BytesIO()
    table.dump(buffer)
    return buffer.getvalue()


@given(data=st.data())
@FUZZ
def test_corrupt_word_tables_give_a_bpe_fast_error_naming_the_file(tmp_path, data):
    """Cut short or changed anywhere: a BpeFastError naming the file (never MemoryError,
    ValueError or a zipfile error), or, where the change touched nothing that counts (a zip
    timestamp), the very table that was saved."""
    content = saved_word_table()
    how = data.draw(st.sampled_from(["cut", "flip", "header", "number"]))
    if how == "cut":
        content = content[:data.draw(st.integers(0, len(content) - 1))]
    elif how in ("flip", "header"):         # anywhere, or in an array's header (read before its checksum)
        headers = [m.start() for m in re.finditer(rb"\x93NUMPY", content)]
        i = data.draw(st.integers(0, len(content) - 1) if how == "flip" else
                      st.sampled_from(headers).flatmap(lambda at: st.integers(at, at + 127)))
        content = content[:i] + bytes([content[i] ^ data.draw(st.integers(1, 255))]) + content[i + 1:]
    else:                                   # a number of an array header: its shape, its header length
        numbers = list(re.finditer(rb"\d+", content[:4096]))
        m = data.draw(st.sampled_from(numbers))
        content = content[:m.start()] + data.draw(st.sampled_from(EXTREMES)).encode() + content[m.end():]
    path = tmp_path / "damaged.npz"
    path.write_bytes(content)
    try:
        table = bpe_fast.WordTable.load(path)
    except BpeFastError as exc:
        assert "damaged.npz" in str(exc), f"the error does not name the file: {exc}"
    else:
        assert table == bpe_fast.WordTable.load(io_path(tmp_path, saved_word_table()))


def io_path(tmp: Path, content: bytes) -> Path:
    path = tmp / "intact.npz"
    path.write_bytes(content)
    return path


@pytest.mark.parametrize("fmt", ["bpe_fast", "huggingface", "gpt2"])
@given(data=st.data())
@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_json_files_with_a_value_nested_past_the_parser(tmp_path, fmt, data):
    files = written(tmp_path, fmt)
    name = data.draw(st.sampled_from([n for n in sorted(files) if n.endswith(".json")]))
    parsed = json.loads(files[name])
    path = data.draw(st.sampled_from(list(json_paths(parsed))))
    depth = data.draw(st.sampled_from([50, 5_000, 100_000]))
    text = json.dumps(replaced(parsed, path, "@NESTED@"))
    files[name] = text.replace('"@NESTED@"', "[" * depth + "]" * depth).encode()
    check(tmp_path, fmt, files)


# -- arguments: whatever value an argument gets, a result or a BpeFastError naming it ----------------

HOSTILE = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.integers(250, 300),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4),
    st.sampled_from([np.int64(260), np.uint8(3), np.float64(2.0), np.str_("<s>"), np.array([1, 2]), [], {}, b"x",
                     ["<s>", "\ud800"], [None], "all", "\ud800"]))
TRAINING_ARGUMENTS = ["vocab_size", "workers", "min_frequency", "max_token_length", "batch_chars", "memory_budget",
                      "superword_at", "tie_break", "special_tokens", "pattern", "errors", "progress"]
DOCS = ["the cat sat on the mat <s>"] * 3


@pytest.mark.filterwarnings("ignore::bpe_fast.VocabSizeWarning")
@given(name=st.sampled_from(TRAINING_ARGUMENTS), value=HOSTILE)
@FUZZ
def test_any_value_of_a_training_argument_trains_or_is_an_error_naming_it(name, value):
    arguments = {"vocab_size": 270, "workers": 1, "progress": "none", name: value}
    try:
        tok = bpe_fast.train_from_iterator(DOCS, **arguments)
    except bpe_fast.EmptyCorpusError:                  # a pattern that matches nothing of the documents
        assert name == "pattern"
    except BpeFastError as exc:
        assert name.split("_")[0] in str(exc), exc
    else:
        assert set(tok.decode_bytes(tok.encode_ordinary(DOCS[0]))) <= set(DOCS[0].encode())


@given(method=st.sampled_from(["encode", "encode_ordinary", "encode_to_numpy", "count_tokens", "encode_batch",
                               "encode_ordinary_batch", "encode_batch_to_numpy", "count_tokens_batch", "decode",
                               "token_bytes", "truncated"]),
       value=HOSTILE, keyword=st.sampled_from([None, "allowed_special", "disallowed_special", "workers", "errors"]))
@FUZZ
def test_any_value_given_to_a_tokenizer_method_is_a_result_or_a_bpe_fast_error(method, value, keyword):
    tok = vocabulary()
    call = getattr(tok, method)
    try:
        if keyword is None:
            call(value)
        else:
            call(["ab"] if "batch" in method else 260 if method == "truncated" else
                 [97] if method in ("decode", "token_bytes") else "ab", **{keyword: value})
    except BpeFastError:
        pass
    except TypeError as exc:                           # a keyword the method does not take: Python's own
        assert "unexpected keyword argument" in str(exc), exc
