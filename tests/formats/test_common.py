"""What every format shares (formats/_common.py): reading a file names it, and the line or field
at fault, whatever is wrong with it."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import bpe_fast
from bpe_fast import Tokenizer, TokenizerFileError
from bpe_fast.cli import main


def test_bad_patterns_and_binary_files_name_the_file(tmp_path):
    (tmp_path / "m.model").write_text("minbpe v1\n(unclosed\n0\n")
    with pytest.raises(TokenizerFileError, match=r"m.model: pattern '\(unclosed' does not compile"):
        Tokenizer.load(tmp_path / "m.model", format="minbpe")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe{\x00")
    with pytest.raises(TokenizerFileError, match=r"bin.json: not UTF-8 text \(byte offset 0\)"):
        bpe_fast.load(tmp_path / "bin.json")


# -- files too deep or too big to be a tokenizer: refused before they are read whole ------------

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and POSIX signals")

DEEP = 100_000


@linux_only
def test_a_deeply_nested_tokenizer_file_is_a_tokenizer_file_error_naming_the_line(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text('{\n  "model":\n    ' + "[" * DEEP + "]" * DEEP + "\n}\n")
    with pytest.raises(bpe_fast.TokenizerFileError, match="deep.json, line 3: JSON nested more than 100 levels"):
        bpe_fast.load(path)
    assert main(["convert", str(path), str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert "deep.json, line 3" in err and err.count("\n") == 1


def sparse_file(path: Path, head: bytes, size: int) -> Path:
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(size)                    # a hole: no disk, no time
    return path


@linux_only
@pytest.mark.parametrize("name,head,size,problem", [
    ("corpus.jsonl", b'{"text": "a document"}\n{"text": "another"}\n', 900 << 20,
     r", line 2: more JSON after the first"),
    ("corpus.json", b'{"documents": ["a document", ', 2 << 30, r": 2,147,483,648 bytes, far past any tokenizer file"),
    ("corpus.txt", b"plain text, no JSON at all\n" * 4000, 300 << 20, r", line 1: not valid JSON"),
])
def test_a_big_file_given_as_a_tokenizer_is_refused_without_reading_it(tmp_path, capsys, name, head, size, problem):
    import tracemalloc
    path = sparse_file(tmp_path / name, head, size)
    tracemalloc.start()
    start = time.monotonic()
    try:
        with pytest.raises(bpe_fast.TokenizerFileError, match=rf"{name}{problem}"):
            bpe_fast.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - start < 2 and peak < 20 << 20, (time.monotonic() - start, peak)
    assert main(["convert", str(path), str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert name in err and err.count("\n") == 1
