"""Encode/decode round-trips, agrees with tiktoken given our ranks, and save/load is exact."""
from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import Tokenizer

from .conftest import corpus_params, examples, need, needs_data, small_text


@pytest.fixture(scope="module")
def trained(corpora) -> Tokenizer:
    files = [corpora / "taylorswift.txt", corpora / "multilingual" / "zh.txt", corpora / "multilingual" / "hi.txt"]
    return bpe_fast.train(files, 3000, pattern="cl100k", special_tokens=["<|endoftext|>", "<|pad|>"])


def as_tiktoken(tok: Tokenizer):
    tiktoken = need("tiktoken")
    return tiktoken.Encoding("bpe_fast-test", pat_str=tok.pattern, mergeable_ranks=tok.mergeable_ranks(),
                             special_tokens=tok.special_tokens)


@needs_data
@pytest.mark.parametrize("path", corpus_params())
def test_round_trip_and_tiktoken_agree_on_every_corpus(trained, path):
    text = path.read_bytes().decode("utf-8")
    ids = trained.encode(text)
    assert trained.decode(ids) == text
    assert ids == as_tiktoken(trained).encode_ordinary(text)


@needs_data
@given(text=st.text(max_size=200))
@settings(max_examples=examples(200), deadline=None)
def test_encode_matches_tiktoken_on_any_text(trained, text):
    enc = as_tiktoken(trained)
    ids = trained.encode_ordinary(text)
    assert ids == enc.encode_ordinary(text)
    assert trained.decode(ids) == text


def test_no_pattern_round_trip_and_long_chunk():
    text = "aaaa bbb aaaa\0\r\n😀 " * 200
    tok = bpe_fast.train_from_iterator([text], 270, pattern=None)
    assert tok.vocab_size == 270
    assert tok.decode(tok.encode(text)) == text
    long = "ab" * 200_000       # one 400 KB chunk: must not go quadratic
    assert tok.decode(tok.encode(long)) == long


def test_special_tokens_follow_the_merges_and_obey_allowed_special():
    docs = [f"hello world number {i} of {i * 7919 % 1000}. " for i in range(500)]
    tok = bpe_fast.train_from_iterator(docs, 300, pattern="gpt2", special_tokens=["<|eot|>"])
    assert len(tok.merges) == 299 - 256
    assert tok.special_tokens == {"<|eot|>": 299} and tok.vocab_size == 300
    with pytest.raises(ValueError, match="special token '<\\|eot\\|>'"):
        tok.encode("hi <|eot|>")
    ids = tok.encode("hi <|eot|>", allowed_special="all")
    assert ids[-1] == 299 and tok.decode(ids) == "hi <|eot|>"
    as_text = tok.encode("hi <|eot|>", disallowed_special=())
    assert 299 not in as_text and tok.decode(as_text) == "hi <|eot|>"


def test_mergeable_ranks_rebuild_the_merges():
    tok = bpe_fast.train_from_iterator(["abracadabra " * 20], 262, pattern="gpt2")
    ranks = tok.mergeable_ranks()
    by_id = {i: b for b, i in ranks.items()}
    for i, (left, right) in enumerate(tok.merges.tolist()):
        assert by_id[256 + i] == by_id[left] + by_id[right]


def test_a_tokenizer_pickles_and_encodes_the_same_in_another_process():
    import pickle
    from concurrent.futures import ProcessPoolExecutor
    tok = bpe_fast.train_from_iterator([small_text()], 500, pattern="gpt2", special_tokens=["<|endoftext|>"])
    text = small_text()[:5000] + "<|endoftext|>"
    expected = tok.encode(text, allowed_special="all")
    copy = pickle.loads(pickle.dumps(tok))
    assert copy == tok and copy.encode(text, allowed_special="all") == expected
    with ProcessPoolExecutor(1) as pool:
        assert pool.submit(_encode_all_special, tok, text).result() == expected


def _encode_all_special(tok, text):
    return tok.encode(text, allowed_special="all")
