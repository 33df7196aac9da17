"""``bpe-fast count`` (cli/count.py): the word table it writes is the one ``bpe_fast.count`` gives,
and ``train --counts`` trains from it as from the text; -o is checked before counting, and a table
that cannot be written after counting is saved elsewhere."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

import bpe_fast
import bpe_fast.cli.count
from bpe_fast.cli import main

from ..conftest import SMALL_CORPUS

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and POSIX signals")


def test_the_table_written_is_the_apis_and_trains_as_the_text_does(tmp_path, capsys):
    assert main(["count", str(SMALL_CORPUS), "--pattern", "gpt2", "--workers", "1", "-o", str(tmp_path / "c.npz"),
                 "-q"]) == 0
    table = bpe_fast.WordTable.load(tmp_path / "c.npz")
    assert table == bpe_fast.count(SMALL_CORPUS, pattern="gpt2", workers=1, progress="none")
    out = capsys.readouterr().out
    assert f"counted    {SMALL_CORPUS.stat().st_size:,} bytes from 1 input(s)" in out
    assert f"chunks     {table.total_chunks:,} ({len(table):,} unique, pattern gpt2)" in out
    assert main(["train", "--counts", str(tmp_path / "c.npz"), "--vocab-size", "300", "-o", str(tmp_path / "t.json"),
                 "-q"]) == 0
    assert bpe_fast.load(tmp_path / "t.json") == bpe_fast.train([SMALL_CORPUS], 300, pattern="gpt2", workers=1,
                                                                progress="none")


def test_the_output_is_refused_before_anything_is_counted(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("bpe_fast.cli.count.count", lambda *a, **k: pytest.fail("counted before checking -o"))
    for args, message in [(["-o", "-"], "-o -: a word table is a binary .npz file, not for standard output"),
                          (["-o", str(tmp_path / "no" / "c.npz")], "does not exist"),
                          (["-o", str(SMALL_CORPUS)], "is also an input file")]:
        assert main(["count", str(SMALL_CORPUS), *args, "-q"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("bpe-fast count: error: ") and message in err and err.count("\n") == 1
    assert main(["count", "-o", str(tmp_path / "c.npz"), "-q"]) == 2
    assert "no input: give one or more INPUTs" in capsys.readouterr().err


@linux_only
def test_a_word_table_that_cannot_be_written_after_counting_is_saved_elsewhere(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "out"
    folder.mkdir()
    real_count = bpe_fast.cli.count.count

    def count_then_lose_the_folder(*args, **kwargs):
        table = real_count(*args, **kwargs)
        folder.rmdir()
        return table

    monkeypatch.setattr("bpe_fast.cli.count.count", count_then_lose_the_folder)
    assert main(["count", str(SMALL_CORPUS), "--workers", "1", "-o", str(folder / "c.npz"), "-q"]) == 2
    err = capsys.readouterr().err
    found = re.search(r"the word table is saved instead as (\S+\.npz)", err)
    assert found is not None, err
    saved = Path(found.group(1))
    try:
        assert bpe_fast.WordTable.load(saved) == bpe_fast.count(SMALL_CORPUS, workers=1, progress="none")
    finally:
        shutil.rmtree(saved.parent)
