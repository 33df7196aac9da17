"""GPT-2's encoder.json and vocab.bpe (formats/gpt2.py): the published files round-trip, and a
truncated pair is named with the file and line."""
from __future__ import annotations

import json

import pytest

from bpe_fast import Tokenizer, TokenizerFileError
from bpe_fast.bytelevel import bytes_to_unicode

from ..conftest import needs_vocabs, vocab_path


@needs_vocabs
def test_gpt2_round_trip(tmp_path):
    gpt2 = Tokenizer.load(vocab_path("gpt2_vocab.bpe"), format="gpt2", encoder_json=vocab_path("gpt2_encoder.json"))
    gpt2.save(tmp_path / "vocab.bpe")
    assert Tokenizer.load(tmp_path / "vocab.bpe", format="gpt2", encoder_json=tmp_path / "encoder.json") == gpt2
    assert (tmp_path / "vocab.bpe").read_text(encoding="utf-8").split("\n")[:3] == \
        vocab_path("gpt2_vocab.bpe").read_text(encoding="utf-8").split("\n")[:3]


def test_truncated_gpt2_files(tmp_path):
    table = bytes_to_unicode()
    encoder = {table[b]: b for b in range(256)} | {"ab": 256, "abc": 257}
    (tmp_path / "encoder.json").write_text(json.dumps(encoder))
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\na b\n")          # the merge for "abc" is missing
    with pytest.raises(TokenizerFileError, match=r"vocab.bpe: no merge makes 'abc' \(id 257"):
        Tokenizer.load(tmp_path / "vocab.bpe", format="gpt2", encoder_json=tmp_path / "encoder.json")
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\na b\nab\n")
    with pytest.raises(TokenizerFileError, match=r"vocab.bpe, line 3: expected two tokens"):
        Tokenizer.load(tmp_path / "vocab.bpe", format="gpt2", encoder_json=tmp_path / "encoder.json")
    (tmp_path / "encoder.json").write_text(json.dumps(encoder)[:-10])
    with pytest.raises(TokenizerFileError, match=r"encoder.json, line 1: not valid JSON"):
        Tokenizer.load(tmp_path / "vocab.bpe", format="gpt2", encoder_json=tmp_path / "encoder.json")
