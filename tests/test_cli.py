"""The CLI's main job: the built-in demo, progress bars on request, summaries."""
from __future__ import annotations

import bpe_fast
from bpe_fast.cli import main
from bpe_fast.paths import stdlib_sources


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
    bpe_fast.train_from_iterator(docs, 300, show_progress=True, workers=1)
    err = capsys.readouterr().err
    assert "counting" in err and "merging" in err and "44/44" in err


def test_no_progress_bars_by_default_off_a_terminal(capsys):
    bpe_fast.train_from_iterator(["some text here " * 20], 260, workers=1)
    assert capsys.readouterr().err == ""
