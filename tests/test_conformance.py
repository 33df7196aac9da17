"""Real OpenAI vocabularies: bpe_fast encodes exactly as tiktoken (and GPT-2's files say).

The reference encodings are built by tiktoken itself from the same .tiktoken files, with the
patterns and special tokens of tiktoken_ext.openai_public (its download is redirected to the
local file), so nothing of bpe_fast's is in the oracle.
"""
from __future__ import annotations

import functools
import random
from typing import TYPE_CHECKING

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import bpe_fast

from .conftest import corpus_files, corpus_params, examples, read_corpus, vocab_dir, vocab_path

if TYPE_CHECKING:
    from tiktoken import Encoding

tiktoken = pytest.importorskip("tiktoken", reason="tiktoken is a dev dependency: pip install -e '.[dev]'")
pytestmark = pytest.mark.skipif(vocab_dir() is None,
                                reason="shared vocabularies not found (BPE_FAST_DATA or ../shared)")

NAMES = ["cl100k_base", "o200k_base", "r50k_base"]


@functools.cache
def reference(name: str) -> Encoding:
    import tiktoken.load
    import tiktoken_ext.openai_public as openai_public

    local = vocab_path(f"{name}.tiktoken")
    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *args, **kwargs: tiktoken.load.load_tiktoken_bpe(str(local))
    try:
        spec = getattr(openai_public, name)()
    finally:
        openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**spec)


@functools.cache
def ours(name: str) -> bpe_fast.Tokenizer:
    return bpe_fast.load(name, path=vocab_dir())


@pytest.mark.parametrize("name", NAMES)
def test_named_encodings_carry_tiktokens_pattern_and_specials(name):
    assert ours(name).pattern == reference(name)._pat_str
    assert ours(name).special_tokens == reference(name)._special_tokens
    assert ours(name).n_vocab == reference(name).n_vocab
    assert ours(name).mergeable_ranks() == reference(name)._mergeable_ranks


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("path", corpus_params())
def test_encode_equals_tiktoken_on_every_corpus(name, path):
    text = read_corpus(path)
    ids = ours(name).encode_ordinary(text)
    assert ids == reference(name).encode_ordinary(text)
    assert ours(name).decode(ids) == text


# 3 s each (3,000 lines of every corpus); one encoding stays in the fast suite.
@pytest.mark.parametrize("name", [n if n == "cl100k_base" else pytest.param(n, marks=pytest.mark.slow) for n in NAMES])
def test_encode_equals_tiktoken_line_by_line(name):
    lines = [line for path in corpus_files() for line in read_corpus(path).splitlines(keepends=True)[:3000]]
    assert ours(name).encode_batch(lines) == reference(name).encode_ordinary_batch(lines)


# Characters assigned in this Python's Unicode database. tiktoken's Rust regex and the regex
# module bpe_fast follows may be at different Unicode versions; they disagree only on characters
# assigned since (for example U+323B0, new in Unicode 17, is a letter to regex 2026 and not to
# tiktoken 0.14), so those are left out here. README "Unicode versions" says the same.
assigned = st.characters(exclude_categories=("Cs", "Cn"))


@pytest.mark.parametrize("name", NAMES)
@given(text=st.text(alphabet=assigned, max_size=300))
@settings(max_examples=examples(300), deadline=None)
def test_encode_equals_tiktoken_on_any_text(name, text):
    ids = ours(name).encode(text, disallowed_special=())
    assert ids == reference(name).encode(text, disallowed_special=())
    assert ours(name).decode(ids) == text


def kept_utf8(text: str) -> str:
    """The str, with its UTF-8 now kept beside it by CPython (as PyUnicode_AsUTF8 leaves it)."""
    import ctypes
    as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8AndSize
    as_utf8.restype, as_utf8.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_void_p]
    assert as_utf8(text, None) is not None
    return text


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@given(text=st.text(alphabet=assigned, max_size=300))
@example(text="<|endoftext|>")                 # found by hypothesis: the text itself a special token
@settings(max_examples=examples(200), deadline=None)
def test_a_str_whose_utf8_cpython_keeps_encodes_as_tiktoken(name, text):
    """The encoder reads a str's kept UTF-8 instead of converting its code points (when the str
    is not ASCII): the same ids from every entry point, special tokens included."""
    expected = reference(name).encode(text + "<|endoftext|>", allowed_special="all")
    with_tail = kept_utf8(text + "<|endoftext|>")
    assert ours(name).encode(with_tail, allowed_special="all") == expected
    assert ours(name).encode_to_numpy(with_tail, allowed_special="all").tolist() == expected
    assert ours(name).encode_batch([with_tail, kept_utf8(text)], allowed_special="all") == \
        [expected, reference(name).encode(text, allowed_special="all")]     # (text may be a special token)
    assert ours(name).count_tokens(with_tail, allowed_special="all") == len(expected)


def test_a_long_str_whose_utf8_cpython_keeps_encodes_as_tiktoken():
    """Past the block size of the conversion (64K characters), on real text of every script."""
    files = [p for p in corpus_files() if "multilingual" in str(p)][:8]
    text = "".join(read_corpus(p)[:40_000] for p in files)
    assert len(text) > 1 << 17 and not text.isascii()
    expected = reference("o200k_base").encode_ordinary(text)
    assert ours("o200k_base").encode_ordinary(kept_utf8(text)) == expected


def test_lone_surrogates_become_replacement_characters_as_in_tiktoken():
    text = "ab\ud800cd"
    assert ours("cl100k_base").encode(text) == reference("cl100k_base").encode(text)


def test_blocks_mixing_one_two_and_three_byte_characters_convert_as_tiktoken():
    """A str of 2-byte code units is turned into UTF-8 8 characters at a time (core/_text.pxd):
    blocks of ASCII, of 2-byte characters, of mixed lengths without a surrogate, and with one
    (lone, or half of nothing), at every alignment and length."""
    rng = random.Random(8)
    alphabet = ["a", " ", "7", "\n", "é", "ж", "ש", "中", "ก", "ह", "\uffff", "\ud800", "\udfff"]
    texts = ["".join(rng.choice(alphabet[:k]) for _ in range(n)) for k in (4, 7, 11, 13) for n in range(1, 41)]
    texts += ["x" * k + "中ж a" * 9 for k in range(8)]
    enc = ours("cl100k_base")
    ref = reference("cl100k_base")
    assert [enc.encode(t) for t in texts] == [ref.encode(t) for t in texts]


@pytest.mark.parametrize("name", NAMES)
def test_special_tokens_as_tiktoken(name):
    text = "a<|endoftext|>b<|endoftext|>"
    assert ours(name).encode(text, allowed_special="all") == reference(name).encode(text, allowed_special="all")
    with pytest.raises(ValueError):
        ours(name).encode(text)
    with pytest.raises(ValueError):
        reference(name).encode(text)


def test_gpt2_files_hello_world(vocabs):
    gpt2 = bpe_fast.Tokenizer.load(vocabs / "gpt2_vocab.bpe", format="gpt2", encoder_json=vocabs / "gpt2_encoder.json")
    assert gpt2.encode("Hello, world!") == [15496, 11, 995, 0]
    assert gpt2.special_tokens == {"<|endoftext|>": 50256}


@pytest.mark.parametrize("path", corpus_params())
def test_gpt2_files_encode_as_tiktoken_r50k(vocabs, path):
    gpt2 = _gpt2(str(vocabs))
    text = read_corpus(path)
    assert gpt2.encode_ordinary(text) == reference("r50k_base").encode_ordinary(text)


@functools.cache
def _gpt2(vocabs: str) -> bpe_fast.Tokenizer:
    return bpe_fast.Tokenizer.load(f"{vocabs}/gpt2_vocab.bpe", format="gpt2",
                                   encoder_json=f"{vocabs}/gpt2_encoder.json")


def test_p50k_has_a_gap_for_its_special_token(vocabs):
    p50k = bpe_fast.load("p50k_base", path=vocabs)
    assert p50k.special_tokens == {"<|endoftext|>": 50256} and p50k.n_vocab == 50281
    text = "    indented code\n        more"
    from tiktoken.load import load_tiktoken_bpe
    assert p50k.encode(text) == tiktoken.Encoding(
        "p50k", pat_str=p50k.pattern, mergeable_ranks=load_tiktoken_bpe(str(vocabs / "p50k_base.tiktoken")),
        special_tokens={"<|endoftext|>": 50256}).encode(text)


def test_long_chunk_is_not_quadratic():
    tok = ours("cl100k_base")
    text = "x" * 1_000_000            # a single 1 MB chunk
    assert tok.encode(text) == reference("cl100k_base").encode(text)
