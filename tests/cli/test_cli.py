"""The command line's frame (cli/__init__.py): ``main`` runs a command and turns what it raises
into one line on standard error and an exit status, never a traceback for what a user can cause;
a bug keeps its traceback."""
from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

import bpe_fast
from bpe_fast.cli import main

from ..conftest import small_text
from .conftest import bpe_fast_cli, run_cli


# -- errors of the named encodings, in the command line's words -----------------------------------

def test_named_encoding_errors_name_cli_options(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("BPE_FAST_VOCABS", raising=False)
    monkeypatch.setattr("bpe_fast.paths.shared_dir", lambda: None)      # as on a machine without ../shared
    assert main(["show", "-t", "o200k_base", "hello"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bpe-fast show: error: o200k_base.tiktoken not found (looked in ")
    assert "give --vocabs FOLDER" in err and "BPE_FAST_VOCABS" in err and "path=" not in err


def test_a_damaged_file_in_tiktokens_cache_is_an_error_naming_it(tmp_path, monkeypatch):
    from bpe_fast.formats._named import ENCODINGS
    from bpe_fast.paths import tiktoken_cache_file
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))       # looked in before the shared vocabs/
    monkeypatch.delenv("BPE_FAST_VOCABS", raising=False)
    file = ENCODINGS["r50k_base"].files[0]
    damaged = tiktoken_cache_file(file.url)
    assert damaged is not None                                    # caching is on: TIKTOKEN_CACHE_DIR is set
    damaged.write_text("IQ== 0\n")
    done = bpe_fast_cli("encode", "-t", "r50k_base", stdin="hello")
    assert done.returncode == 2
    assert f"{damaged}: its SHA-256 is " in done.stderr and f"not {file.sha256}" in done.stderr


# -- one line on stderr, exit status 2; a bug keeps its traceback --------------------------------

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and POSIX signals")
HUGE = 10**20


def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("args,message", [
    (["train", "MISSING.txt", "--vocab-size", "300", "-o", "t.json"], "MISSING.txt: no such file"),
    (["train", "DIR", "--vocab-size", "300", "-o", "t.json"], "the directory holds no files"),
    (["train", "BAD", "--vocab-size", "300", "-o", "t.json"], "invalid UTF-8 at byte offset 2"),
    (["train", "EMPTY", "--vocab-size", "300", "-o", "t.json"], "corpus is empty"),
    (["train", "GOOD", "--vocab-size", "100", "-o", "t.json"], "vocab_size=100 is too small"),
    (["train", "GOOD", "--vocab-size", "300", "--pattern", "([", "-o", "t.json"], "does not compile"),
    (["train", "GOOD", "--vocab-size", "300"], "-o/--output is required"),
    (["train", "--vocab-size", "300", "-o", "t.json"], "no input"),
])
def test_cli_errors_are_one_line(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "DIR").mkdir()
    write(tmp_path, "BAD", b"ok\xff\n")
    write(tmp_path, "EMPTY", b"")
    write(tmp_path, "GOOD", b"some text to learn from\n" * 20)
    assert main(args + ["--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_cli_names_the_known_patterns(tmp_path, capsys):
    corpus = write(tmp_path, "c.txt", b"some text\n")
    assert main(["train", str(corpus), "--vocab-size", "300", "--pattern", "gpt4", "-o", str(tmp_path / "t.json"),
                 "-q"]) == 2
    err = capsys.readouterr().err
    assert "pattern 'gpt4' is no known pattern name" in err and "cl100k" in err and err.count("\n") == 1
    assert not (tmp_path / "t.json").exists()


def test_the_cli_shows_a_bug_as_a_traceback(tmp_path, monkeypatch):
    """Only the user's errors become one-line messages; a bug keeps its traceback."""
    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr("bpe_fast.cli.train.train", broken)
    corpus = write(tmp_path, "c.txt", b"some text\n")
    with pytest.raises(KeyError, match="a bug"):
        main(["train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "t.json"), "-q"])


@pytest.mark.parametrize("args,message", [
    (["profile", "--merges", str(HUGE)], "--merges must be a positive number of merges (at most 2,147,483,391"),
    (["profile", "--chars", str(HUGE)], "--chars must be a positive number of characters (at most"),
    (["profile", "--budget", "nan"], "--budget must be >= 0 seconds"),
    (["encode", "-t", "gpt2", "--workers", str(HUGE)], "workers must be at most 4,096"),
])
def test_cli_huge_numbers_of_other_commands(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.setattr("bpe_fast.cli.tools.load", lambda *a: bpe_fast.Tokenizer([]))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"ab")))
    code, err = run_cli(args, capsys)
    assert code == 2 and message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("option,message", [("--special", "special token '\\udcff' holds a lone surrogate"),
                                            ("--pattern", "pattern '\\udcff' holds a lone surrogate")])
def test_cli_a_special_token_or_pattern_that_is_no_utf8_is_one_line(tmp_path, capsys, option, message):
    """Bytes of argv that are no UTF-8 reach Python as lone surrogates ("\\udcff")."""
    corpus = write(tmp_path, "c.txt", b"ab ab abc\n")
    code, err = run_cli(["train", str(corpus), "--vocab-size", "300", option, "\udcff", "-o",
                         str(tmp_path / "t.json"), "-q"], capsys)
    assert code == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "t.json").exists()


@linux_only
def test_closed_stdout_and_a_reader_that_goes_away(tmp_path):
    tok = bpe_fast.train_from_iterator([small_text()], 400, workers=1)
    tok.save(tmp_path / "t.json")
    big = tmp_path / "big.txt"
    big.write_text(small_text() * 200)
    bpe = [sys.executable, "-m", "bpe_fast"]
    closed = subprocess.run(bpe + ["decode", "-t", str(tmp_path / "t.json")], input="104 105", text=True,
                            capture_output=False, stdout=None, stderr=subprocess.PIPE,
                            preexec_fn=lambda: os.close(1))
    assert closed.returncode == 2 and "standard output is closed" in closed.stderr
    cmd = " ".join(bpe + ["encode", "-t", str(tmp_path / "t.json"), str(big)]) + " | head -c 20"
    piped = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
    assert len(piped.stdout) == 20 and "Broken pipe" not in piped.stderr and "Traceback" not in piped.stderr
