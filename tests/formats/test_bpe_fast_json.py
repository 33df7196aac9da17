"""bpe_fast's own JSON (formats/bpe_fast_json.py): real vocabularies round-trip, save and load are
exact, and a bad file is named with what is wrong."""
from __future__ import annotations

import json

import numpy as np
import pytest

import bpe_fast
from bpe_fast import Tokenizer, TokenizerFileError

from ..conftest import needs_vocabs, vocab_dir


@needs_vocabs
@pytest.mark.parametrize("name", ["cl100k_base", pytest.param("o200k_base", marks=pytest.mark.slow),  # 200k tokens
                                  "r50k_base", "p50k_base"])
def test_own_format_round_trips_real_vocabularies(tmp_path, name):
    tok = bpe_fast.load(name, path=vocab_dir())
    tok.save(tmp_path / "tok.json")
    assert Tokenizer.load(tmp_path / "tok.json") == tok


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


def test_one_merge_a_line_and_the_ids_only_where_they_are_not_the_defaults(tmp_path):
    plain = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
    plain.save(tmp_path / "plain.json")
    text = (tmp_path / "plain.json").read_text()
    assert "  [104, 105],\n  [32, 256]\n" in text                  # diffs of two vocabularies stay readable
    data = json.loads(text)
    assert data["vocab_size"] == 259 and data["special_tokens"] == {"<|endoftext|>": 258}
    assert "merge_ids" not in data and "byte_ids" not in data
    own_ids = Tokenizer([(104, 105)], merge_ids=[300], byte_ids=[255 - b for b in range(256)])
    own_ids.save(tmp_path / "own.json")
    data = json.loads((tmp_path / "own.json").read_text())
    assert data["merge_ids"] == [300] and data["byte_ids"] == [255 - b for b in range(256)]
    assert Tokenizer.load(tmp_path / "own.json") == own_ids


def test_a_tokenizer_that_normalizes_writes_version_2_which_says_so(tmp_path):
    """An older bpe_fast, which reads version 1 only, must refuse the file rather than encode
    text it does not normalize."""
    tok = Tokenizer([(104, 105)], "gpt2", normalize="nfkc")
    tok.save(tmp_path / "t.json")
    data = json.loads((tmp_path / "t.json").read_text())
    assert data["version"] == 2 and data["normalize"] == "nfkc"
    assert Tokenizer.load(tmp_path / "t.json").normalize == "nfkc"
    assert json.loads(open(Tokenizer([(104, 105)]).save(tmp_path / "u.json")[0]).read())["version"] == 1
    data["normalize"] = "nfd"
    (tmp_path / "t.json").write_text(json.dumps(data))
    with pytest.raises(TokenizerFileError, match="t.json: normalize"):
        Tokenizer.load(tmp_path / "t.json")
