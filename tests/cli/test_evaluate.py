"""``bpe-fast eval`` (cli/evaluate.py): the quality report as a table, as JSON and as a chart, the
tokenizer and its baselines named as given; what cannot be read is one line naming the option."""
from __future__ import annotations

import json
import sys

import pytest

import bpe_fast
from bpe_fast.cli import main

from ..conftest import SMALL_CORPUS, need, needs_vocabs, small_text


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


# -- issue 49: the report's files and names -------------------------------------------------------

@pytest.fixture(scope="module")
def tok_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("eval") / "tok.json"
    bpe_fast.train([SMALL_CORPUS], 300, progress="none").save(path)
    return str(path)


def test_a_plot_over_an_input_is_refused_and_the_input_kept(tmp_path, capsys, monkeypatch, tok_file):
    text = tmp_path / "text.txt"
    text.write_text("some text to measure\n", encoding="utf-8")
    monkeypatch.setattr("bpe_fast.cli.evaluate.evaluate", lambda *a, **k: pytest.fail("measured before refusing"))
    assert main(["eval", "-t", tok_file, str(text), "--plot", str(text)]) == 2
    assert "is also an input file" in capsys.readouterr().err
    assert text.read_text(encoding="utf-8") == "some text to measure\n"


def test_a_plot_into_a_missing_folder_is_refused_before_the_pass(tmp_path, capsys, monkeypatch, tok_file):
    monkeypatch.setattr("bpe_fast.cli.evaluate.evaluate", lambda *a, **k: pytest.fail("measured before refusing"))
    assert main(["eval", "-t", tok_file, str(SMALL_CORPUS), "--plot", str(tmp_path / "no" / "c.png")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_json_of_an_empty_file_is_json(tmp_path, capsys, tok_file):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert main(["eval", "-t", tok_file, str(empty), "--json"]) == 0

    def no_constants(name):
        raise AssertionError(f"{name} is not JSON")
    row = json.loads(capsys.readouterr().out, parse_constant=no_constants)["rows"][0]
    assert row["tokens"] == 0 and row["bytes_per_token"] is None and row["tokens_per_word"] is None


@needs_vocabs
def test_a_file_named_as_a_named_baseline_is_told_apart(tmp_path, capsys, monkeypatch):
    """-t mine/gpt2.json --baseline gpt2: both are 'gpt2' by their short names; the file keeps its path."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    bpe_fast.train([SMALL_CORPUS], 300, progress="none").save(tmp_path / "mine" / "gpt2.json")
    assert main(["eval", "-t", "mine/gpt2.json", "--baseline", "gpt2", str(SMALL_CORPUS), "--json"]) == 0
    assert [row["tokenizer"] for row in json.loads(capsys.readouterr().out)["rows"]] == ["mine/gpt2.json", "gpt2"]
