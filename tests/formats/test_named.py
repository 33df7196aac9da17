"""OpenAI's named encodings (formats/_named.py), held to tiktoken's own table
(tiktoken_ext/openai_public.py, its downloads recorded rather than made): the same addresses, the
same published SHA-256 hashes, patterns and special tokens; and the shared files are the
published ones."""
from __future__ import annotations

import hashlib

import pytest

from bpe_fast.formats._named import ENCODINGS, encoding_of_file

from ..conftest import need, needs_vocabs, vocab_path


def tiktokens_own(name: str, monkeypatch) -> tuple[dict, list[tuple[str, str]]]:
    """tiktoken's constructor of ``name``: what it returns, and the (address, hash) of each file it
    would download, in order (nothing is downloaded: its loaders are replaced by recorders)."""
    openai_public = need("tiktoken_ext.openai_public")
    files: list[tuple[str, str]] = []

    def load_tiktoken_bpe(url, expected_hash=None):
        files.append((url, expected_hash))
        return {}

    def data_gym_to_mergeable_bpe_ranks(vocab_bpe_file, encoder_json_file, vocab_bpe_hash=None,
                                        encoder_json_hash=None, **_):
        files.extend([(encoder_json_file, encoder_json_hash), (vocab_bpe_file, vocab_bpe_hash)])
        return {}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", load_tiktoken_bpe)
    monkeypatch.setattr(openai_public, "data_gym_to_mergeable_bpe_ranks", data_gym_to_mergeable_bpe_ranks)
    return openai_public.ENCODING_CONSTRUCTORS[name](), files


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_each_encoding_is_tiktokens(name, monkeypatch):
    spec, files = tiktokens_own(name, monkeypatch)
    ours = ENCODINGS[name]
    assert [(f.url, f.sha256) for f in ours.files] == files
    assert ours.pattern == spec["pat_str"]
    if name == "gpt2":          # its special token is read from its encoder.json, which holds it
        assert spec["special_tokens"] == {"<|endoftext|>": 50256} and ours.special_tokens == {}
    else:
        assert ours.special_tokens == spec["special_tokens"]


def test_every_file_is_named_once_and_found_by_its_name():
    names = [f.name for enc in ENCODINGS.values() for f in enc.files]
    assert len(names) == len(set(names))
    for encoding, enc in ENCODINGS.items():
        for f in enc.files:
            assert encoding_of_file(f.name) == (encoding, f)
    assert encoding_of_file("cl100k_base.json") is None and encoding_of_file("vocab.bpe") is None


@needs_vocabs
@pytest.mark.parametrize("name", sorted(f.name for enc in ENCODINGS.values() for f in enc.files))
def test_the_shared_files_are_the_published_ones(name):
    _, file = encoding_of_file(name) or (None, None)
    assert file is not None
    assert hashlib.sha256(vocab_path(name).read_bytes()).hexdigest() == file.sha256
