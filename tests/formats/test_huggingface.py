"""Hugging Face's tokenizer.json (formats/huggingface.py): read by tokenizers itself with the same
ids, special tokens listed in the vocabulary, files that are not BPE or miss merges refused."""
from __future__ import annotations

import functools
import json

import pytest

import bpe_fast
from bpe_fast import Tokenizer, TokenizerFileError

from ..conftest import corpus_params, need, needs_data, needs_vocabs, read_corpus, vocab_dir
from .conftest import sample_texts, small_trained, trained


@needs_data
@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", None])
def test_huggingface_export(tmp_path, pattern):
    hf = need("tokenizers")
    tok = trained(pattern) if pattern else bpe_fast.train_from_iterator(sample_texts(), 400, pattern=None)
    tok.save(tmp_path / "tokenizer.json", format="huggingface")
    theirs = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    texts = sample_texts() if pattern else [t[:3000] for t in sample_texts()]
    for text in texts:
        assert theirs.encode(text).ids == tok.encode(text)
    if pattern is not None:   # the special tokens are HF added tokens with the same ids
        ids = tok.encode("hello <|endoftext|> world", allowed_special="all")
        assert theirs.encode("hello <|endoftext|> world").ids == ids
    assert Tokenizer.load(tmp_path / "tokenizer.json", format="huggingface") == tok


@needs_vocabs
@needs_data
@pytest.mark.parametrize("path", corpus_params())
def test_huggingface_export_of_cl100k_encodes_every_corpus_alike(tmp_path_factory, path):
    tok, theirs = _cl100k_pair(str(tmp_path_factory.getbasetemp()))
    text = read_corpus(path)
    assert theirs.encode(text).ids == tok.encode_ordinary(text)


@functools.lru_cache(maxsize=1)
def _cl100k_pair(tmp: str):
    hf = need("tokenizers")
    tok = bpe_fast.load("cl100k_base", path=vocab_dir())
    tok.save(f"{tmp}/cl100k.json", format="huggingface")
    return tok, hf.Tokenizer.from_file(f"{tmp}/cl100k.json")


def test_huggingface_special_tokens_listed_in_the_vocab(tmp_path):
    tok = Tokenizer([[97, 98]], pattern="gpt2")
    data = bpe_fast.formats.huggingface.huggingface_json(tok)
    special = "<｜begin▁of▁sentence｜>"          # not spelled in GPT-2's byte alphabet
    data["model"]["vocab"][special] = 300
    data["added_tokens"].append({"id": 300, "content": special, "special": True})
    (tmp_path / "t.json").write_text(json.dumps(data), encoding="utf-8")
    loaded = Tokenizer.load(tmp_path / "t.json", format="huggingface")
    assert loaded.special_tokens == {special: 300} and loaded.merges.tolist() == [[97, 98]]


def test_huggingface_files_that_are_not_bpe_or_miss_merges(tmp_path):
    tok = small_trained("gpt2")
    data = bpe_fast.formats.huggingface.huggingface_json(tok)
    for model in ("x", None, {"type": "WordPiece"}):
        (tmp_path / "t.json").write_text(json.dumps({**data, "model": model}))
        with pytest.raises(TokenizerFileError, match=r"t.json: not a BPE tokenizer.json"):
            Tokenizer.load(tmp_path / "t.json", format="huggingface")
    data["model"]["merges"] = data["model"]["merges"][:-50]          # truncated: 50 tokens have no merge
    (tmp_path / "t.json").write_text(json.dumps(data))
    with pytest.raises(TokenizerFileError, match=r"t.json: model.merges: no merge makes .* 50 tokens lack their merge"):
        Tokenizer.load(tmp_path / "t.json", format="huggingface")
