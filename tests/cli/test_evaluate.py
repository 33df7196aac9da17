"""``bpe-fast eval`` (cli/evaluate.py): the quality report as a table, as JSON and as a chart, the
tokenizer and its baselines named as given; what cannot be read is one line naming the option."""
from __future__ import annotations

import json
import sys

import pytest

import bpe_fast
from bpe_fast.cli import main

from ..conftest import SMALL_CORPUS, need, small_text


def test_the_cli_prints_the_table_json_and_a_chart(tmp_path, capsys):
    tok_path = tmp_path / "tok.json"
    bpe_fast.train([SMALL_CORPUS], 320, progress="none").save(tok_path)
    other = tmp_path / "other.json"
    bpe_fast.train([SMALL_CORPUS], 300, progress="none").save(other)
    assert main(["eval", "-t", str(tok_path), "--baseline", str(other), str(SMALL_CORPUS), "--by", "file"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:2] == ["group", "tokenizer"] and [line.split()[1] for line in out[1:]] == [
        "tok", "other", "tok", "other"]
    assert main(["eval", "-t", str(tok_path), str(SMALL_CORPUS), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    text = small_text()
    assert data["rows"][0]["words"] == len(text.split()) and data["rows"][0]["bytes"] == len(text.encode())
    assert main(["eval", "-t", str(tok_path), str(tmp_path / "missing.txt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing.txt: no such file" in err
    assert main(["eval", "-t", str(tok_path), "--baseline", "no_such_base", str(SMALL_CORPUS)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--baseline no_such_base:" in err
    with pytest.raises(SystemExit) as stopped:
        main(["eval", "-t", str(tok_path), "--workers", "0", str(SMALL_CORPUS)])
    assert stopped.value.code == 2 and "--workers: 0 is out of range" in capsys.readouterr().err
    need("matplotlib")
    chart = tmp_path / "chart.png"
    assert main(["eval", "-t", str(tok_path), "--baseline", str(other), str(SMALL_CORPUS), "--plot", str(chart)]) == 0
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_plot_needs_the_plot_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["eval", "-t", "gpt2", str(SMALL_CORPUS), "--plot", str(tmp_path / "c.png")]) == 2
    assert "pip install 'bpe_fast[plot]'" in capsys.readouterr().err


def test_a_baseline_with_the_tokenizers_name_is_told_apart_by_the_paths_given(tmp_path, capsys, monkeypatch):
    """Two files called tok.json in different folders: each row names its file as it was given."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    bpe_fast.train([SMALL_CORPUS], 320, progress="none").save(tmp_path / "a" / "tok.json")
    bpe_fast.train([SMALL_CORPUS], 300, progress="none").save(tmp_path / "b" / "tok.json")
    assert main(["eval", "-t", "a/tok.json", "--baseline", "b/tok.json", str(SMALL_CORPUS), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [row["tokenizer"] for row in rows] == ["a/tok.json", "b/tok.json"]
    assert rows[0]["tokens"] < rows[1]["tokens"]             # 320 tokens compress the text more than 300
