"""tiktoken's .tiktoken files (formats/tiktoken.py): read by tiktoken itself with the same ids, the
pattern and special tokens kept in the sidecar, a corrupt file named with its line."""
from __future__ import annotations

import functools
import json

import pytest

import bpe_fast
from bpe_fast import Tokenizer, TokenizerFileError

from ..conftest import need, needs_data, needs_vocabs, small_text, vocab_path
from .conftest import BYTES, sample_texts, small_trained, tiktoken_lines, trained


@needs_data
@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
def test_tiktoken_export(tmp_path, pattern):
    tiktoken = need("tiktoken")
    tiktoken_load = need("tiktoken.load")
    tok = trained(pattern)
    tok.save(tmp_path / "tok.tiktoken", format="tiktoken")
    ranks = tiktoken_load.load_tiktoken_bpe(str(tmp_path / "tok.tiktoken"))
    enc = tiktoken.Encoding("t", pat_str=tok.pattern, mergeable_ranks=ranks, special_tokens=tok.special_tokens)
    direct = tok.to_tiktoken()
    for text in sample_texts():
        ids = tok.encode(text)
        assert enc.encode(text) == ids and direct.encode(text) == ids
    again = Tokenizer.load(tmp_path / "tok.tiktoken", format="tiktoken", pattern=tok.pattern,
                           special_tokens=tok.special_tokens)
    assert again == tok


@pytest.mark.parametrize("content,message", [
    ("", "no tokens"),
    (tiktoken_lines(BYTES) + "QQ== 300 extra\n", "line 257: expected 'base64-token rank'"),
    (tiktoken_lines(BYTES) + "!!!! 300\n", "line 257: bad base64"),
    (tiktoken_lines(BYTES) + "YWI= 255\n", "line 257: rank 255 was already given on line 256"),
    (tiktoken_lines({**BYTES, b"ab": 256, b"abcd": 257}), r"b'abcd' \(rank 257\) cannot be made by merging"),
    (tiktoken_lines({bytes([b]): b for b in range(255)}), "no token for the single byte b'\\\\xff'"),
])
def test_corrupt_tiktoken_files(tmp_path, content, message):
    path = tmp_path / "bad.tiktoken"
    path.write_text(content)
    with pytest.raises(TokenizerFileError, match=message) as err:
        Tokenizer.load(path, format="tiktoken", pattern="gpt2")
    assert str(path) in str(err.value)


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", None, r"\w+|\s+|[^\w\s]+"])
def test_tiktoken_sidecar_round_trips_pattern_and_specials(tmp_path, pattern):
    tok = bpe_fast.train_from_iterator([small_text()], 400, pattern=pattern, workers=1,
                                       special_tokens=["<|endoftext|>", "<|pad|>"])
    written = tok.save(tmp_path / "t.tiktoken", format="tiktoken")
    assert written == [str(tmp_path / "t.tiktoken"), str(tmp_path / "t.tiktoken.json")]
    side = json.loads((tmp_path / "t.tiktoken.json").read_text())
    assert side == {"format": "bpe_fast.tiktoken-sidecar", "version": 1, "tiktoken_file": "t.tiktoken",
                    "pattern": tok.pattern, "pattern_name": tok.pattern_name,
                    "special_tokens": tok.special_tokens, "n_vocab": tok.vocab_size}
    assert Tokenizer.load(tmp_path / "t.tiktoken", format="tiktoken") == tok == bpe_fast.load(tmp_path / "t.tiktoken")


def test_tiktoken_sidecar_read_by_tiktoken_itself(tmp_path):
    tiktoken_load = need("tiktoken.load")
    tiktoken = need("tiktoken")
    tok = small_trained("cl100k")
    tok.save(tmp_path / "t.tiktoken")
    side = json.loads((tmp_path / "t.tiktoken.json").read_text())
    enc = tiktoken.Encoding("t", pat_str=side["pattern"], special_tokens=side["special_tokens"],
                            mergeable_ranks=tiktoken_load.load_tiktoken_bpe(str(tmp_path / "t.tiktoken")))
    text = small_text() + "<|endoftext|>"
    assert enc.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")


def test_tiktoken_without_sidecar_requires_the_pattern(tmp_path):
    tok = small_trained("o200k")
    tok.save(tmp_path / "t.tiktoken")
    (tmp_path / "t.tiktoken.json").unlink()
    for load in (functools.partial(Tokenizer.load, format="tiktoken"), bpe_fast.load):
        with pytest.raises(bpe_fast.PatternRequiredError,
                           match=r"t.tiktoken: a .tiktoken file holds no pattern, and there is no sidecar "
                                 r"t.tiktoken.json .*pass the pattern it was trained with, e.g. "
                                 r"Tokenizer.load\(.*, format='tiktoken', pattern='cl100k'\)"):
            load(tmp_path / "t.tiktoken")
    again = Tokenizer.load(tmp_path / "t.tiktoken", format="tiktoken", pattern="o200k",
                           special_tokens=tok.special_tokens)
    assert again == tok
    assert Tokenizer.load(tmp_path / "t.tiktoken", format="tiktoken", pattern=None).pattern is None   # "no split", said


def test_explicit_arguments_win_over_the_sidecar_and_a_bad_sidecar_is_named(tmp_path):
    tok = small_trained("cl100k")
    tok.save(tmp_path / "t.tiktoken")
    again = Tokenizer.load(tmp_path / "t.tiktoken", format="tiktoken", pattern="gpt2")
    assert again.pattern == bpe_fast.GPT2 and again.special_tokens == tok.special_tokens  # specials: the sidecar's
    (tmp_path / "t.tiktoken.json").write_text('{"format": "bpe_fast.tiktoken-sidecar", "version": 1, '
                                              '"pattern": 5, "special_tokens": {}}')
    with pytest.raises(TokenizerFileError, match=r"t.tiktoken.json: pattern must be a string, not 5"):
        Tokenizer.load(tmp_path / "t.tiktoken", format="tiktoken")
    (tmp_path / "t.tiktoken.json").write_text('{"pattern": "x"}')
    with pytest.raises(TokenizerFileError, match=r"t.tiktoken.json: not a .tiktoken sidecar"):
        bpe_fast.load(tmp_path / "t.tiktoken")


@needs_vocabs
def test_a_named_encodings_published_file_keeps_its_pattern_without_a_sidecar(tmp_path):
    import shutil
    shutil.copy(vocab_path("r50k_base.tiktoken"), tmp_path / "r50k_base.tiktoken")
    named = bpe_fast.load("r50k_base")
    copied = tmp_path / "r50k_base.tiktoken"
    assert Tokenizer.load(copied, format="tiktoken") == named == bpe_fast.load(copied)
    with open(tmp_path / "r50k_base.tiktoken", "ab") as fh:      # no longer the published file
        fh.write(b"\n")
    with pytest.raises(bpe_fast.PatternRequiredError, match="nor is it a named encoding's published file"):
        Tokenizer.load(tmp_path / "r50k_base.tiktoken", format="tiktoken")
