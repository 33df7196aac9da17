"""Encode/decode round-trips, agrees with tiktoken given our ranks, and save/load is exact."""
from __future__ import annotations

import json

import numpy as np
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


def test_save_load_round_trips_exactly(tmp_path):
    tok = bpe_fast.train_from_iterator(["the cat sat on the mat, the end. " * 30, "ünïcödé 😀"], 280,
                                       pattern="o200k", special_tokens=["<|endoftext|>"])
    path = tmp_path / "tok.json"
    tok.save(path)
    loaded = Tokenizer.load(path)
    assert loaded == tok and loaded.mergeable_ranks() == tok.mergeable_ranks()
    data = json.loads(path.read_text())
    assert data["format"] == "bpe_fast.tokenizer" and data["pattern"] == bpe_fast.O200K
    assert np.array_equal(np.array(data["merges"]), tok.merges)


def test_mergeable_ranks_rebuild_the_merges():
    tok = bpe_fast.train_from_iterator(["abracadabra " * 20], 262, pattern="gpt2")
    ranks = tok.mergeable_ranks()
    by_id = {i: b for b, i in ranks.items()}
    for i, (left, right) in enumerate(tok.merges.tolist()):
        assert by_id[256 + i] == by_id[left] + by_id[right]


@pytest.mark.parametrize("content,message", [
    ("{not json", "not valid JSON"),
    ('{"format": "other"}', "not a bpe_fast tokenizer"),
    ('{"format": "bpe_fast.tokenizer", "version": 99, "merges": []}', "version 99"),
    ('{"format": "bpe_fast.tokenizer", "version": 1, "merges": [[300, 1]]}', "merge 0"),
    ('{"format": "bpe_fast.tokenizer", "version": 1, "merges": [], "special_tokens": {"<s>": 3}}', "learned token"),
])
def test_bad_tokenizer_files_name_the_file_and_the_fault(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(bpe_fast.TokenizerFileError, match=message) as err:
        Tokenizer.load(path)
    assert str(path) in str(err.value)


def test_decode_rejects_ids_out_of_range():
    tok = Tokenizer([], pattern="gpt2")
    with pytest.raises(bpe_fast.EncodingError, match=r"token id 256 \(position 1\) is not in the vocabulary"):
        tok.decode([104, 256])


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


def test_a_list_of_a_million_ids_and_more_is_a_list_like_any_other():
    """Past a million ids the list's items are laid out by bpe_fast (on huge pages) and each
    int's references added once: the list equals the array, grows, shrinks and is freed as any
    list, and its ints hold exactly one reference per item, given back when it goes."""
    import gc
    import sys

    tok = bpe_fast.train_from_iterator(["zqxw vy zqxw"] * 50, 262, progress="none")
    text = "zqxw vy " * 600_000
    ids = tok.encode_ordinary(text)
    assert len(ids) > 1 << 20 and ids == tok.encode_to_numpy(text).tolist()
    token = ids[1]
    assert token > 256 and ids.count(token) > 1 << 19   # (an int of its own, not a cached small one)
    held, before = ids.count(token), sys.getrefcount(token)
    ids.append(token)
    ids.extend(ids[:1000])
    del ids[:500]
    assert sys.getrefcount(token) - before == ids.count(token) - held or before > 1 << 30
    del ids
    gc.collect()
    assert before - sys.getrefcount(token) == held or before > 1 << 30    # (immortal: counts never move)


def test_merges_that_repeat_a_pair_are_refused_on_every_path(tmp_path):
    """A pair merged twice would give its bytes two ids: ranks, tiktoken and tokenizer.json files
    would each hold another vocabulary. Refused from a list, bpe_fast JSON and a minbpe .model."""
    with pytest.raises(bpe_fast.VocabularyError, match=r"merge 2 is \(104, 101\), the pair merge 0 already"):
        Tokenizer([[104, 101], [256, 108], [104, 101]])
    good = Tokenizer([[104, 101], [256, 108]])
    good.save(tmp_path / "tok.json")
    data = json.loads((tmp_path / "tok.json").read_text())
    data["merges"].append([104, 101])
    (tmp_path / "tok.json").write_text(json.dumps(data))
    (tmp_path / "tok.model").write_text("minbpe v1\n\n0\n104 101\n104 101\n")
    for name in ("tok.json", "tok.model"):
        with pytest.raises(bpe_fast.TokenizerFileError, match=f"{name}: merge 1 is|{name}: merge 2 is"):
            bpe_fast.load(tmp_path / name)
    assert len(good.mergeable_ranks()) == good.vocab_size          # the pairs once each: one id per token
