"""The CLI's main job: the built-in demo, progress bars on request, summaries."""
from __future__ import annotations

import pytest

import bpe_fast
from bpe_fast.cli import main
from bpe_fast.paths import stdlib_sources

from .conftest import small_text


def test_demo_corpus_is_the_standard_library():
    files = stdlib_sources(limit_bytes=1 << 20)
    assert files and all(f.endswith(".py") for f in files)
    assert any(f.endswith("abc.py") for f in stdlib_sources())


def test_demo_trains_and_prints_what_it_learned(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("bpe_fast.cli.stdlib_sources", lambda: stdlib_sources(limit_bytes=300_000))
    assert main(["train", "--demo", "--vocab-size", "600", "-q"]) == 0
    out = capsys.readouterr().out
    assert "first merges:" in out and "longest tokens:" in out and "saved" in out
    tok = bpe_fast.Tokenizer.load(tmp_path / "demo-tokenizer.json")
    assert tok.vocab_size == 600
    assert tok.decode(tok.encode("def f(x):\n    return x\n")) == "def f(x):\n    return x\n"


def test_progress_bars_when_asked(capsys):
    docs = [f"line {i} of text\n" for i in range(2000)]
    bpe_fast.train_from_iterator(docs, 300, progress="bar", workers=1)
    err = capsys.readouterr().err
    assert "counting" in err and "merging" in err and "44/44" in err


def test_no_progress_bars_by_default_off_a_terminal(capsys):
    bpe_fast.train_from_iterator(["some text here " * 20], 260, workers=1)
    assert capsys.readouterr().err == ""


def test_progress_as_json_lines_for_logs(capsys):
    import json
    docs = [f"line {i} of text\n" for i in range(2000)]
    bpe_fast.train_from_iterator(docs, 300, progress="json", workers=1)
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    stages = [line["stage"] for line in lines]
    assert {"counting", "pairs", "merging"} <= set(stages)
    last = [line for line in lines if line["stage"] == "merging"][-1]
    assert last["current"] == last["total"] == 44 and last["elapsed"] >= 0
    assert all(set(line) == {"stage", "current", "total", "elapsed"} for line in lines)


def test_progress_callback_and_the_logger(caplog):
    seen = []
    with caplog.at_level("INFO", logger="bpe_fast"):
        bpe_fast.train_from_iterator([small_text()], 270, workers=1,
                                     progress=lambda stage, done, total, elapsed: seen.append((stage, done, total)))
    assert ("merging", 14, 14) in seen
    pairs = [s for s in seen if s[0] == "pairs"]
    assert pairs and pairs[-1][1] == pairs[-1][2] > 0           # the pair count reports too
    assert any("counting:" in r.message for r in caplog.records)
    assert any("merging:" in r.message and "merges 14" in r.message for r in caplog.records)


def test_bad_progress_option_is_refused():
    with pytest.raises(bpe_fast.ArgumentError, match="progress must be one of auto, bar, json, none"):
        bpe_fast.train_from_iterator(["text"], 270, progress="fancy")


def test_cli_progress_json(tmp_path):
    import subprocess
    import sys
    corpus = tmp_path / "c.txt"
    corpus.write_text("some words to count and merge\n" * 200)
    proc = subprocess.run([sys.executable, "-m", "bpe_fast", "train", str(corpus), "--vocab-size", "300",
                           "--progress", "json", "-o", str(tmp_path / "t.json")], capture_output=True, text=True)
    assert proc.returncode == 0 and '"stage": "merging"' in proc.stderr
