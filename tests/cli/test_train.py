"""``bpe-fast train`` (cli/train.py): the demo, and everything refused before training starts
(what -o's format cannot hold, a word table's pattern, --plot); training on from a base."""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import bpe_fast
from bpe_fast.cli import main
from bpe_fast.cli.train import DEMO_SAMPLE
from bpe_fast.paths import stdlib_sources

from ..conftest import SMALL_CORPUS, need, vocab_dir
from .conftest import TRAIN


def test_demo_says_where_it_writes_first_writes_to_a_temp_folder_and_shows_what_it_learned(
        tmp_path, monkeypatch, capsys):
    (tmp_path / "cwd").mkdir()
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))     # the demo's temp folder goes here
    monkeypatch.setattr("bpe_fast.cli.train.stdlib_sources", lambda: stdlib_sources(limit_bytes=300_000))
    assert main(["train", "--demo", "--vocab-size", "600", "-q"]) == 0
    captured = capsys.readouterr()
    assert list((tmp_path / "cwd").iterdir()) == []             # nothing in the current folder
    first = captured.err.splitlines()[0]                         # said before training, on stderr
    said = re.fullmatch(r"demo: training a 600-token vocabulary on \d+ files of the Python standard library "
                        r"\(.*\); it will be written to (.*demo-tok\.json)", first)
    assert said, first
    written = Path(said.group(1))
    assert written.parent.parent == tmp_path / "tmp" and written.parent.name.startswith("bpe-fast-demo-")
    out = captured.out
    assert f"saved      {written} (bpe_fast)" in out
    tok = bpe_fast.Tokenizer.load(written)
    assert tok.vocab_size == 600
    longest = max((tok.token_bytes(i) for i in tok.merge_ids.tolist()), key=len).decode("utf-8", "replace")
    assert re.search(r"^longest tokens: ", out, re.M)
    shown = longest if longest.strip() else f"{len(longest)} spaces"
    assert shown in out.split("longest tokens: ")[1].splitlines()[0]
    ids = tok.encode_ordinary(DEMO_SAMPLE)
    assert f"-> {len(ids)} tokens for {len(DEMO_SAMPLE)} bytes: " in out
    assert "|".join(tok.decode([i]) for i in ids) in out and f"ids {' '.join(map(str, ids))}" in out
    assert f"bpe-fast show -t {written} " in out


def test_demo_with_output_writes_there_in_the_format_asked(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("bpe_fast.cli.train.stdlib_sources", lambda: stdlib_sources(limit_bytes=200_000))
    assert main(["train", "--demo", "--vocab-size", "500", "-q", "-o", str(tmp_path / "d.tiktoken")]) == 0
    assert f"it will be written to {tmp_path / 'd.tiktoken'}, {tmp_path / 'd.tiktoken.json'}" in capsys.readouterr().err
    assert bpe_fast.load(tmp_path / "d.tiktoken").vocab_size == 500


def bases(tmp_path, reference) -> dict[str, str]:
    """Bases to train on from: the reference (its special token after its merges), and one with a special token
    GPT-2's files cannot hold; the named encodings, where their files are."""
    reference.save(tmp_path / "base.json")
    bpe_fast.Tokenizer(reference.merges, bpe_fast.GPT2, ["<s>"]).save(tmp_path / "odd.json")
    return {"reference": str(tmp_path / "base.json"), "odd specials": str(tmp_path / "odd.json"),
            "cl100k_base": "cl100k_base"}


@pytest.mark.parametrize("base,args,message", [
    ("reference", ["--vocab-size", "450", "-o", "x.model"],
     "-o x.model: a minbpe .model file numbers bytes 0..255 and merge m as 256 + m, but the new tokens take ids "
     "after the base's special tokens"),
    ("cl100k_base", ["--vocab-size", "100300", "-o", "x.model"], "but the base's tokens have other ids"),
    (None, ["--vocab-size", "450", "--superword-at", "300", "-o", "x.model"],
     "but superword training's stage two takes ids after stage one's special tokens"),
    ("odd specials", ["--vocab-size", "450", "-o", "x_vocab.bpe"], "'<s>' is not: save as tokenizer.json"),
])
def test_a_result_the_format_cannot_hold_fails_before_training(tmp_path, capsys, monkeypatch, reference, base, args,
                                                               message):
    if base == "cl100k_base" and vocab_dir() is None:
        pytest.skip("needs the named encodings' files")
    base_args = ["--base", bases(tmp_path, reference)[base]] if base else []
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr("bpe_fast.cli.train.train", lambda *a, **k: pytest.fail("trained before checking -o"))
    assert main([*TRAIN[:2], *TRAIN[4:], *base_args, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("base,vocab_size", [("reference", 450), ("gpt2", 50300)])
def test_training_on_from_a_base_splits_with_its_pattern_as_the_api_does(tmp_path, reference, base, vocab_size):
    """Without --pattern, the base's (GPT-2's here), not cl100k: so GPT-2's files can hold the result."""
    if base == "gpt2" and vocab_dir() is None:
        pytest.skip("needs the named encodings' files")
    spec = bases(tmp_path, reference)[base] if base == "reference" else base
    assert main(["train", str(SMALL_CORPUS), "--base", spec, "--vocab-size", str(vocab_size), "--workers", "1", "-q",
                 "-o", str(tmp_path / "out/"), "--format", "gpt2"]) == 0
    api = bpe_fast.train([SMALL_CORPUS], vocab_size, base=bpe_fast.load(spec), workers=1, progress="none")
    assert api.pattern == bpe_fast.GPT2 and bpe_fast.load(tmp_path / "out" / "vocab.bpe") == api


def test_a_word_tables_pattern_is_checked_against_the_format_before_training(tmp_path, capsys, monkeypatch):
    assert main(["count", str(SMALL_CORPUS), "-o", str(tmp_path / "c.npz"), "-q", "--workers", "1"]) == 0
    monkeypatch.setattr("bpe_fast.cli.train.train_from_table",
                        lambda *a, **k: pytest.fail("trained before checking -o"))
    assert main(["train", "--counts", str(tmp_path / "c.npz"), "--vocab-size", "300", "-o",
                 str(tmp_path / "t_vocab.bpe")]) == 2
    assert "this tokenizer splits with cl100k" in capsys.readouterr().err


# -- a summary, and what the corpus cannot give --------------------------------------------------

def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and POSIX signals")


def test_cli_train_writes_a_loadable_tokenizer_and_a_summary(tmp_path):
    lines = [f"It's test {i} of the CLI, {i * 7919 % 1000} times over.\n" for i in range(300)]
    corpus = write(tmp_path, "c.txt", "".join(lines).encode())
    out = tmp_path / "tok.json"
    proc = subprocess.run([sys.executable, "-m", "bpe_fast", "train", str(corpus), "--vocab-size", "300",
                           "--special", "<|endoftext|>", "--pattern", "gpt2", "-o", str(out)],
                          capture_output=True, text=True, check=True)
    assert proc.stderr == ""          # not a terminal: no progress bars
    for word in ("read", "chunks", "merges", "time", "saved"):
        assert word in proc.stdout
    tok = bpe_fast.Tokenizer.load(out)
    assert tok.vocab_size == 300 and tok.special_tokens == {"<|endoftext|>": 299}
    assert tok.pattern == bpe_fast.GPT2


def test_cli_reports_a_vocab_the_corpus_cannot_give(tmp_path, capsys):
    corpus = write(tmp_path, "c.txt", b"ab ab ab\n")
    assert main(["train", str(corpus), "--vocab-size", "5000", "-o", str(tmp_path / "t.json"), "-q"]) == 0
    captured = capsys.readouterr()
    assert "warning: stopped after" in captured.err and "vocab size 258" in captured.out


@linux_only
def test_the_plot_is_checked_before_training(tmp_path, monkeypatch, capsys):
    need("matplotlib")                                   # --plot needs the [plot] extra
    monkeypatch.setattr("bpe_fast.cli.train.train", lambda *a, **k: pytest.fail("trained before checking --plot"))
    plot = tmp_path / "no" / "curve.png"
    assert main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "-o", str(tmp_path / "t.json"), "-q",
                 "--eval", str(SMALL_CORPUS), "--plot", str(plot)]) == 2
    assert f"--plot {plot}: the folder {plot.parent} does not exist" in capsys.readouterr().err


@linux_only
def test_huge_min_frequency_is_not_an_overflow(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("ab ab ab\n")
    assert main(["train", str(corpus), "--vocab-size", "300", "--min-frequency", "99999999999999999999",
                 "-o", str(tmp_path / "t.json"), "-q"]) == 0
    assert "stopped after 0 of" in capsys.readouterr().err


def test_sizes_in_any_order_each_get_a_tokenizer_and_the_summary_is_the_largest(tmp_path, capsys):
    """--vocab-size 300,280: the cut tokenizer has no training report of its own; the summary is of the
    training (to the largest size), whichever size came last."""
    assert main(["train", str(SMALL_CORPUS), "--vocab-size", "300,280", "-o", str(tmp_path / "t-{vocab_size}.json"),
                 "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "merges     44 -> vocab size 300" in out
    small, large = bpe_fast.load(tmp_path / "t-280.json"), bpe_fast.load(tmp_path / "t-300.json")
    assert small.vocab_size == 280 and small.merges.tolist() == large.merges[:24].tolist()
