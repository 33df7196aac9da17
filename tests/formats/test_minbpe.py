"""minbpe's .model and .vocab (formats/minbpe.py): round trips, and a truncated file named with its
line."""
from __future__ import annotations


import pytest

import bpe_fast
from bpe_fast import Tokenizer, TokenizerFileError

from ..conftest import needs_data
from .conftest import trained


@needs_data
@pytest.mark.parametrize("pattern", ["cl100k", None])
def test_minbpe_round_trip(tmp_path, pattern):
    tok = trained(pattern) if pattern else bpe_fast.train_from_iterator(["hello world " * 30], 270, pattern=None)
    tok.save(tmp_path / "tok", format="minbpe")
    assert Tokenizer.load(tmp_path / "tok.model", format="minbpe") == tok
    model = (tmp_path / "tok.model").read_text().split("\n")
    assert model[0] == "minbpe v1" and model[1] == (tok.pattern or "")
    vocab = (tmp_path / "tok.vocab").read_text()
    assert vocab.count("\n") == tok.n_base and " -> " in vocab


def test_truncated_minbpe_file(tmp_path):
    (tmp_path / "t.model").write_text("minbpe v1\n\n2\n<a> 300\n")
    with pytest.raises(TokenizerFileError, match=r"t.model, line 5: expected 'token id' for special token 2 of 2"):
        Tokenizer.load(tmp_path / "t.model", format="minbpe")
    (tmp_path / "t.model").write_text("minbpe v1\n\n0\n97 98\n256 999\n")
    with pytest.raises(TokenizerFileError, match=r"t.model: merge 1 is \(256, 999\)"):
        Tokenizer.load(tmp_path / "t.model", format="minbpe")
