"""Issue 32: tiktoken's Encoding surface (item 4; encoding/tiktoken_surface.py). The coloured view
of tokens (item 5) is tested in test_visualize.py, ``save("my_tokenizer.json")`` in Hugging Face's
format (item 9) in tests/formats/test_formats.py.

The oracle for the surface is tiktoken itself: Encodings built by tiktoken_ext.openai_public from
the same files (its download redirected to the local files), so nothing of bpe_fast's is in it.
"""
from __future__ import annotations

import functools
import pickle
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import bpe_fast

from ..conftest import (SMALL_CORPUS, corpus_files, need, needs_data, read_corpus, shared_path, small_text, vocab_dir,
                       vocab_path)
from .test_visualize import check_view

NAMES = ["cl100k_base", "o200k_base", "r50k_base", "p50k_base", "gpt2"]
needs_vocabs = pytest.mark.skipif(vocab_dir() is None, reason="shared vocabularies not found (BPE_FAST_DATA or "
                                                             "../shared)")
MULTILINGUAL = [p for p in corpus_files() if p.parent.name == "multilingual"]
MIXED = "héllo wörld 日本語 🎉🎉 <b>&amp;</b> Ελληνικά\n\tमराठी ﷽ 👩‍👩‍👧"


@functools.cache
def reference(name: str):
    """tiktoken's own Encoding of a named encoding, from the shared files."""
    tiktoken = need("tiktoken")
    import tiktoken.load as load
    import tiktoken_ext.openai_public as openai_public

    saved = openai_public.load_tiktoken_bpe, openai_public.data_gym_to_mergeable_bpe_ranks
    openai_public.load_tiktoken_bpe = lambda *a, **k: load.load_tiktoken_bpe(str(vocab_path(f"{name}.tiktoken")))
    openai_public.data_gym_to_mergeable_bpe_ranks = lambda **k: load.data_gym_to_mergeable_bpe_ranks(
        vocab_bpe_file=str(vocab_path("gpt2_vocab.bpe")), encoder_json_file=str(vocab_path("gpt2_encoder.json")))
    try:
        spec = getattr(openai_public, name)()
    finally:
        openai_public.load_tiktoken_bpe, openai_public.data_gym_to_mergeable_bpe_ranks = saved
    return tiktoken.Encoding(**spec)


@functools.cache
def ours(name: str) -> bpe_fast.Tokenizer:
    return bpe_fast.load(name, path=vocab_dir())


@functools.cache
def trained() -> bpe_fast.Tokenizer:
    return bpe_fast.train([SMALL_CORPUS], 400, pattern="cl100k", special_tokens=["<|endoftext|>", "<|pad|>"],
                          progress=False)


def outcome(function, *args):
    """What a call gives: ("ok", value), or ("raises", the builtin kind of exception it raised)."""
    try:
        return "ok", function(*args)
    except KeyError:
        return "raises", KeyError
    except TypeError:
        return "raises", TypeError
    except UnicodeDecodeError:
        return "raises", UnicodeDecodeError


# -- item 4: tiktoken's Encoding surface ------------------------------------------------------------

@needs_vocabs
@pytest.mark.parametrize("name", NAMES)
def test_the_attributes_are_tiktokens(name):
    tok, enc = ours(name), reference(name)
    assert tok.name == enc.name == name
    assert tok.max_token_value == enc.max_token_value and tok.n_vocab == enc.n_vocab
    assert tok.special_tokens_set == enc.special_tokens_set
    assert tok.token_byte_values() == enc.token_byte_values()


@needs_vocabs
@pytest.mark.parametrize("name", NAMES)
def test_every_ids_bytes_and_kind_are_tiktokens(name):
    """Every id up to one past the largest, holes included (p50k's and cl100k's before their
    special tokens): the same bytes, the same KeyError, the same special or not."""
    tok, enc = ours(name), reference(name)
    for i in range(enc.max_token_value + 2):
        assert outcome(tok.decode_single_token_bytes, i) == outcome(enc.decode_single_token_bytes, i)
        assert tok.is_special_token(i) == enc.is_special_token(i)
    ids = enc.encode(MIXED + "<|endoftext|>", allowed_special="all")
    assert tok.decode_tokens_bytes(ids) == enc.decode_tokens_bytes(ids)
    assert outcome(tok.decode_tokens_bytes, [1, 10**6]) == ("raises", KeyError)
    with pytest.raises(KeyError):
        enc.decode_tokens_bytes([1, 10**6])


@needs_vocabs
@pytest.mark.parametrize("name", NAMES)
def test_encode_single_token_is_tiktokens(name):
    tok, enc = ours(name), reference(name)
    for token in enc.token_byte_values():
        assert tok.encode_single_token(token) == enc.encode_single_token(token)
    for special in enc.special_tokens_set:
        assert tok.encode_single_token(special) == enc.encode_single_token(special)
        assert tok.encode_single_token(special.encode()) == enc.encode_single_token(special.encode())
    for given in ["hello", " world", "日", "hello world", "", b"", b"\xff", "<|endoftext|>x", 5, None, 1.5]:
        assert outcome(tok.encode_single_token, given) == outcome(enc.encode_single_token, given), given


@needs_vocabs
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("path", MULTILINGUAL, ids=[p.name for p in MULTILINGUAL])
def test_offsets_are_tiktokens_on_every_language(name, path):
    tok, enc = ours(name), reference(name)
    text = read_corpus(path)[:5000] + " " + MIXED
    ids = enc.encode(text)
    expected = enc.decode_with_offsets(ids)
    assert tok.decode_with_offsets(ids) == expected
    assert tok.encode_with_offsets(text) == (ids, expected[1])


def check_offsets(tok, text: str, ids: list[int], offsets: list[int]) -> None:
    """What an offset means, checked from the bytes alone: token k starts at byte b_k, and its
    offset is the character holding byte b_k (the characters before it take fewer than b_k + 1
    bytes, those up to it at least that many)."""
    start = 0
    for token, offset in zip(ids, offsets):
        assert len(text[:offset].encode("utf-8")) <= start < len(text[:offset + 1].encode("utf-8"))
        start += len(tok.decode_single_token_bytes(token))
    assert start == len(text.encode("utf-8")) and len(ids) == len(offsets)


def test_offsets_of_a_trained_tokenizer_and_their_meaning():
    tok = trained()
    text = small_text()[:3000] + MIXED + "<|endoftext|>"
    ids, offsets = tok.encode_with_offsets(text, allowed_special="all")
    assert ids == tok.encode(text, allowed_special="all")
    assert any(b[0] & 0xC0 == 0x80 for b in tok.decode_tokens_bytes(ids))    # tokens start inside characters
    check_offsets(tok, text, ids, offsets)
    assert tok.decode_with_offsets(ids) == (text, offsets)
    assert tok.encode_with_offsets("") == ([], []) and tok.decode_with_offsets([]) == ("", [])
    with pytest.raises(bpe_fast.EncodingError, match="special token"):
        tok.encode_with_offsets("a<|endoftext|>")
    tiktoken = need("tiktoken")
    assert isinstance(tok.to_tiktoken(), tiktoken.Encoding)
    assert tok.to_tiktoken().decode_with_offsets(ids) == (text, offsets)


def test_offsets_of_a_tokenizer_that_normalizes_index_the_normalized_text():
    tok = bpe_fast.train_from_iterator([small_text()[:20000]], 350, pattern="cl100k", normalize="nfkc",
                                       progress=False)
    text = "ﬁne ① ＡＢＣ " + MIXED
    ids, offsets = tok.encode_with_offsets(text)
    normal = tok.decode(ids)
    assert normal != text and tok.decode_with_offsets(ids) == (normal, offsets)
    check_offsets(tok, normal, ids, offsets)


@needs_data
@pytest.mark.parametrize("variant", [{"picky": 0.9}, {"superword": "boundless", "superword_at": 500}], ids=str)
def test_offsets_and_views_of_the_variants_tokenizers(variant):
    """Picky BPE's events and the supermerges' superwords: their ids' bytes are what offsets count."""
    verdict = shared_path("corpora", "the-verdict.txt")
    tok = bpe_fast.train([verdict], 700, pattern="cl100k", progress=False, **variant)
    assert tok.variant is not None
    text = read_corpus(verdict)[:6000] + MIXED
    ids, offsets = tok.encode_with_offsets(text)
    assert ids == tok.encode(text)
    check_offsets(tok, text, ids, offsets)
    check_view(tok, text)


def test_errors_are_tiktokens_kinds_and_name_what_is_wrong():
    tok = trained()
    with pytest.raises(KeyError) as info:
        tok.decode_single_token_bytes(10**6)
    assert isinstance(info.value, bpe_fast.UnknownTokenError) and isinstance(info.value, bpe_fast.EncodingError)
    assert str(info.value).startswith("token id 1000000 is not in the vocabulary")      # not KeyError's quotes
    for bad in (-1, 2**40):
        with pytest.raises(KeyError):
            tok.decode_single_token_bytes(bad)
    with pytest.raises(KeyError, match="not a token"):
        tok.encode_single_token("no such token here")
    with pytest.raises(KeyError, match="surrogate"):
        tok.encode_single_token("\ud800")
    wrong: list[tuple[Callable, Any]] = [(tok.decode_single_token_bytes, "a"), (tok.is_special_token, 1.0),
                                         (tok.decode_tokens_bytes, "ab"), (tok.encode_single_token, 7)]
    for method, argument in wrong:
        with pytest.raises(TypeError):
            method(argument)
    with pytest.raises(TypeError):
        tok.decode_tokens_bytes(iter([1, "a"]))  # type: ignore[arg-type]  # a generator, read once: still checked
    assert tok.decode_tokens_bytes(iter([72, 105])) == [b"H", b"i"] == tok.decode_tokens_bytes(np.array([72, 105]))
    cut = tok.encode_single_token(b"\xe6")        # the start of 日 alone: no text, as tiktoken says
    with pytest.raises(UnicodeDecodeError):
        tok.decode_with_offsets([cut])


def test_a_trained_tokenizers_name_follows_its_vocabulary(tmp_path):
    tok = trained()
    assert re.fullmatch(r"bpe_fast_cl100k_400_[0-9a-f]{8}", tok.name)
    tok.save(tmp_path / "tok.json")
    assert bpe_fast.load(tmp_path / "tok.json").name == tok.name
    other = bpe_fast.Tokenizer(tok.merges, tok.pattern, ["<|endoftext|>"])
    assert other.name != tok.name
    assert bpe_fast.Tokenizer(tok.merges, tok.pattern, tok.special_tokens).name == tok.name
    named = pickle.loads(pickle.dumps(tok))
    named.name = "mine"
    assert pickle.loads(pickle.dumps(named)).name == "mine" and tok.name != "mine"
    assert named.truncated(300).name.startswith("bpe_fast_cl100k_300_")
    with pytest.raises(TypeError):
        named.name = 3


@needs_vocabs
def test_a_named_encoding_grown_by_training_is_no_longer_that_encoding():
    base = bpe_fast.load("r50k_base", path=vocab_dir())
    grown = bpe_fast.train([SMALL_CORPUS], base.vocab_size + 5, base=base, progress=False)
    assert base.name == "r50k_base" and grown.name.startswith("bpe_fast_gpt2_")
    assert pickle.loads(pickle.dumps(base)).name == "r50k_base"


# -- repr: the name, as tiktoken's Encoding shows it --------------------------------------------------

@needs_vocabs
def test_repr_names_a_named_encoding():
    assert repr(ours("cl100k_base")) == "<Tokenizer cl100k_base: 100,277 ids, pattern cl100k, 5 special tokens>"
    assert repr(trained()).startswith("Tokenizer(vocab_size=400, ")
