"""What every format shares (formats/_common.py): reading a file names it, and the line or field
at fault, whatever is wrong with it."""
from __future__ import annotations


import pytest

import bpe_fast
from bpe_fast import Tokenizer, TokenizerFileError



def test_bad_patterns_and_binary_files_name_the_file(tmp_path):
    (tmp_path / "m.model").write_text("minbpe v1\n(unclosed\n0\n")
    with pytest.raises(TokenizerFileError, match=r"m.model: pattern '\(unclosed' does not compile"):
        Tokenizer.load(tmp_path / "m.model", format="minbpe")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe{\x00")
    with pytest.raises(TokenizerFileError, match=r"bin.json: not UTF-8 text \(byte offset 0\)"):
        bpe_fast.load(tmp_path / "bin.json")
