"""Where a command's tokenizer goes (cli/writing.py): -o checked before any work, the format its
name or --format says, one file per vocabulary size, and a result that cannot be written where
asked saved elsewhere instead."""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

import bpe_fast
import bpe_fast.cli.train
from bpe_fast.cli import main

from ..conftest import SMALL_CORPUS, need, small_text
from .conftest import TRAIN, bpe_fast_cli


# (what the user gives -o, other options, the format written, the files written)
# (what the user gives -o, other options, the format written, the files written)
OUTPUTS = [
    ("tok.json", [], "bpe_fast", ["tok.json"]),
    ("tokenizer.json", ["--format", "huggingface"], "huggingface", ["tokenizer.json"]),
    ("tok.tiktoken", [], "tiktoken", ["tok.tiktoken", "tok.tiktoken.json"]),
    ("tok.model", [], "minbpe", ["tok.model", "tok.vocab"]),
    ("tok", ["--format", "minbpe"], "minbpe", ["tok.model", "tok.vocab"]),
    ("tok_vocab.bpe", [], "gpt2", ["tok_encoder.json", "tok_vocab.bpe"]),
    ("gpt2tok/", ["--format", "gpt2"], "gpt2", ["gpt2tok/encoder.json", "gpt2tok/vocab.bpe"]),
    ("tok.json", ["--format", "bpe_fast"], "bpe_fast", ["tok.json"]),
]


@pytest.mark.parametrize("output,options,fmt,files", OUTPUTS, ids=[f"{o} {' '.join(x)}" for o, x, _, _ in OUTPUTS])
def test_train_writes_the_format_the_name_or_format_says(tmp_path, capsys, reference, output, options, fmt, files):
    assert main([*TRAIN, "-o", str(tmp_path / output), *options]) == 0
    out = capsys.readouterr().out
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == sorted(files)
    for f in files:
        assert f"saved      {tmp_path / f} ({fmt})" in out
    assert bpe_fast.load(tmp_path / files[0]) == reference
    if output != "tok":
        assert bpe_fast.load(tmp_path / output) == reference
    if fmt == "huggingface":
        hf = need("tokenizers")
        text = small_text()[:2000]
        assert hf.Tokenizer.from_file(str(tmp_path / output)).encode(text).ids == reference.encode(text)


def test_a_trained_tiktoken_file_encodes_from_the_command_line(tmp_path, reference):
    """The issue's case: `bpe-fast encode -t tok.tiktoken` failed (no pattern in the file)."""
    trained = bpe_fast_cli(*TRAIN, "-o", tmp_path / "tok.tiktoken")
    assert trained.returncode == 0, trained.stderr
    text = "Hello there, <|endoftext|> general Kenobi."
    encoded = bpe_fast_cli("encode", "-t", tmp_path / "tok.tiktoken", "--allow-special", stdin=text)
    assert encoded.returncode == 0, encoded.stderr
    assert [int(i) for i in encoded.stdout.split()] == reference.encode(text, allowed_special="all")


def test_the_names_people_type_give_their_format(tmp_path, reference):
    """tokenizer.json is Hugging Face's (as HF users save and load it), encoder.json GPT-2's; an
    explicit --format still wins; any other .json name is bpe_fast's own JSON."""
    hf = need("tokenizers")
    assert main([*TRAIN, "-o", str(tmp_path / "tokenizer.json")]) == 0
    theirs = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    text = small_text()[:2000]
    assert theirs.encode(text).ids == reference.encode(text, allowed_special="all")
    (tmp_path / "sub").mkdir()
    reference.save(tmp_path / "sub" / "tokenizer.json")                    # the Python API the same
    assert hf.Tokenizer.from_file(str(tmp_path / "sub" / "tokenizer.json")).encode(text).ids == theirs.encode(text).ids
    assert main([*TRAIN, "-o", str(tmp_path / "encoder.json")]) == 0
    assert (tmp_path / "vocab.bpe").is_file() and bpe_fast.load(tmp_path / "encoder.json") == reference
    (tmp_path / "own").mkdir()
    assert main([*TRAIN, "-o", str(tmp_path / "own" / "tokenizer.json"), "--format", "bpe_fast"]) == 0
    assert json.loads((tmp_path / "own" / "tokenizer.json").read_text())["format"] == "bpe_fast.tokenizer"
    assert main([*TRAIN, "-o", str(tmp_path / "tok.json")]) == 0
    assert json.loads((tmp_path / "tok.json").read_text())["format"] == "bpe_fast.tokenizer"


def test_several_sizes_in_any_format(tmp_path, capsys):
    args = [*TRAIN[:3], "300,350", *TRAIN[4:]]
    assert main([*args, "-o", str(tmp_path / "tok-{vocab_size}.tiktoken")]) == 0
    assert main([*args, "-o", str(tmp_path / "m-{vocab_size}.model")]) == 0
    assert main([*args, "-o", str(tmp_path / "hf-{vocab_size}.json"), "--format", "huggingface"]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["hf-300.json", "hf-350.json", "m-300.model", "m-300.vocab", "m-350.model", "m-350.vocab",
                     "tok-300.tiktoken", "tok-300.tiktoken.json", "tok-350.tiktoken", "tok-350.tiktoken.json"]
    for size in (300, 350):
        toks = [bpe_fast.load(tmp_path / f"{stem}-{size}{suffix}")
                for stem, suffix in (("tok", ".tiktoken"), ("m", ".model"), ("hf", ".json"))]
        assert toks[0] == toks[1] == toks[2] and toks[0].vocab_size == size


@pytest.mark.parametrize("args,message", [
    (["-o", "tok.model", "--format", "tiktoken"], "tok.model: the name ends in .model, which means the minbpe format, "
                                                  "but the format asked for is tiktoken"),
    (["-o", "tok.json", "--format", "tiktoken"], "the tiktoken format is not JSON; give a name ending in .tiktoken"),
    (["-o", "tok.txt", "--format", "gpt2"], "GPT-2's format is two files, encoder.json and vocab.bpe"),
    (["-o", "vocab.bpe", "--pattern", "cl100k"], "GPT-2's files hold no pattern (every reader splits with GPT-2's), "
                                                 "and this tokenizer splits with cl100k"),
    (["-o", "tok.model", "--special", "a b"], "minbpe's .model holds 'token id' per line"),
])
def test_a_format_that_cannot_be_written_fails_before_training(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("bpe_fast.cli.train.train", lambda *a, **k: pytest.fail("trained before checking -o"))
    assert main([*TRAIN, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bpe-fast train: error: ") and message in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


# -- a result that cannot be written after the work: saved elsewhere ---------------------------------

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and POSIX signals")


@linux_only
def test_writing_that_fails_after_training_saves_the_result_elsewhere(tmp_path, monkeypatch, capsys):
    """The folder of -o was there when checked, and is gone when training ends: the training is kept."""
    folder = tmp_path / "out"
    folder.mkdir()
    real_train = bpe_fast.cli.train.train

    def train_then_lose_the_folder(*args, **kwargs):
        result = real_train(*args, **kwargs)
        folder.rmdir()
        return result

    monkeypatch.setattr("bpe_fast.cli.train.train", train_then_lose_the_folder)
    assert main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "--workers", "1", "-o",
                 str(folder / "t.tiktoken"), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 't.tiktoken'}: cannot write here" in err and err.count("\n") == 1
    found = re.search(r"saved instead as (\S+\.json)", err)
    assert found is not None, err
    saved = Path(found.group(1))
    try:
        assert bpe_fast.load(saved) == bpe_fast.train([SMALL_CORPUS], 300, workers=1, progress="none")
    finally:
        shutil.rmtree(saved.parent)


@linux_only
def test_a_writer_that_fails_with_a_bug_keeps_its_traceback_and_the_training(tmp_path, monkeypatch, capsys):
    def broken_writer(*args, **kwargs):
        raise KeyError("a bug in a writer")

    monkeypatch.setattr("bpe_fast.cli.writing.write_tokenizer", broken_writer)
    with pytest.raises(KeyError, match="a bug in a writer"):
        main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "--workers", "1", "-o", str(tmp_path / "t.json")])
    err = capsys.readouterr().err
    found = re.search(r"saved instead as (\S+\.json)", err)
    assert found is not None, err
    saved = Path(found.group(1))
    try:
        assert bpe_fast.load(saved).vocab_size == 300
    finally:
        shutil.rmtree(saved.parent)
