"""bpe-fast encode / decode / show / stats."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys

import pytest

import bpe_fast
from bpe_fast.cli import main

from ..conftest import needs_vocabs, vocab_dir, vocab_path
from .conftest import bpe_fast_cli


@pytest.fixture
def tok_path(tmp_path):
    docs = [f"The quick brown fox {i} jumps over the lazy dog. Ünïcödé 日本語 😀\n" for i in range(300)]
    tok = bpe_fast.train_from_iterator(docs, 400, pattern="o200k", special_tokens=["<|endoftext|>"])
    path = tmp_path / "tok.json"
    tok.save(path)
    return path, tok


def run(args, stdin: bytes = b"", monkeypatch=None, capsys=None):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_encode_then_decode_round_trips_through_stdin(tok_path, monkeypatch, capsys):
    path, tok = tok_path
    text = "The lazy fox 😀 <|endoftext|> jumps\n"
    code, out, _ = run(["encode", "-t", str(path), "--disallowed-special", "none"], text.encode(), monkeypatch, capsys)
    assert code == 0 and [int(x) for x in out.split()] == tok.encode(text, disallowed_special=())
    code, out2, _ = run(["decode", "-t", str(path)], out.encode(), monkeypatch, capsys)
    assert code == 0 and out2 == text


def test_encode_special_tokens_when_allowed_and_json_output(tok_path, tmp_path, monkeypatch, capsys):
    path, tok = tok_path
    (tmp_path / "in.txt").write_text("fox<|endoftext|>")
    code, out, _ = run(["encode", "-t", str(path), str(tmp_path / "in.txt"), "--allow-special", "--json"],
                       b"", monkeypatch, capsys)
    assert json.loads(out) == tok.encode("fox<|endoftext|>", allowed_special="all")
    assert json.loads(out)[-1] == tok.special_tokens["<|endoftext|>"]


def test_show_marks_token_boundaries(tok_path, monkeypatch, capsys):
    path, tok = tok_path
    code, out, _ = run(["show", "-t", str(path), "The quick brown fox", "--ids"], b"", monkeypatch, capsys)
    lines = out.splitlines()
    pieces = lines[0].split("|")
    assert "".join(pieces) == "The quick brown fox"
    assert [tok.decode(tok.encode(p)) for p in pieces] == pieces
    assert len(pieces) == len(tok.encode("The quick brown fox"))
    assert lines[2].split() == [str(i) for i in tok.encode("The quick brown fox")]


def test_stats_reports_bytes_per_token(tok_path, tmp_path, monkeypatch, capsys):
    path, tok = tok_path
    text = "The quick brown fox jumps over the lazy dog.\n" * 20
    (tmp_path / "a.txt").write_text(text)
    code, out, _ = run(["stats", str(tmp_path / "a.txt"), "-t", str(path)], b"", monkeypatch, capsys)
    row = out.splitlines()[1].split()
    n = len(tok.encode(text))
    assert row[0] == "a.txt" and row[2] == f"{n:,}" and float(row[3]) == pytest.approx(len(text) / n, abs=0.01)


@pytest.mark.skipif(vocab_dir() is None, reason="shared vocabularies not found")
def test_named_encodings_from_the_vocab_directory(monkeypatch, capsys):
    code, out, _ = run(["encode", "-t", "gpt2", "--vocabs", str(vocab_dir())], b"Hello, world!", monkeypatch, capsys)
    assert out.split() == ["15496", "11", "995", "0"]


@pytest.mark.parametrize("args,stdin,message", [
    (["decode", "-t", "TOK"], b"1 2 x", "standard input: expected token ids"),
    (["decode", "-t", "TOK"], b"1 99999", "token id 99999 (position 1) is not in the vocabulary"),
    (["encode", "-t", "missing.json"], b"x", "missing.json: no such file, and not a named encoding"),
    (["encode", "-t", "TOK", "nofile.txt"], b"", "nofile.txt: no such file"),
    (["decode", "-t", "TOK"], b"1 2 \xff", "standard input: invalid UTF-8 at byte offset 4"),
    (["show", "-t", "TOK", "-"], b"ab\xe9cd", "standard input: invalid UTF-8 at byte offset 2"),
])
def test_tool_errors_are_one_line(tok_path, monkeypatch, capsys, args, stdin, message):
    path, _ = tok_path
    args = [str(path) if a == "TOK" else a for a in args]
    code, _, err = run(args, stdin, monkeypatch, capsys)
    assert code == 2 and message in err and err.count("\n") == 1


def test_decode_ends_the_line_on_a_terminal_and_nowhere_else(tok_path):
    import os
    import pty
    import subprocess
    path, tok = tok_path
    ids = " ".join(map(str, tok.encode("lazy fox", disallowed_special=())))
    cmd = [sys.executable, "-m", "bpe_fast", "decode", "-t", str(path)]
    piped = subprocess.run(cmd, input=ids, capture_output=True, text=True)
    assert piped.returncode == 0 and piped.stdout == "lazy fox"
    leader, follower = pty.openpty()
    done = subprocess.run(cmd, input=ids.encode(), stdout=follower, stderr=subprocess.PIPE)
    os.close(follower)
    out = b""
    while True:
        try:
            data = os.read(leader, 1024)
        except OSError:                     # the terminal is closed once everything is read
            break
        if not data:
            break
        out += data
    os.close(leader)
    assert done.returncode == 0 and out.replace(b"\r\n", b"\n") == b"lazy fox\n"


@needs_vocabs
def test_python_load_works_wherever_the_cli_does(tmp_path):
    """`bpe_fast.load("gpt2")` and `-t gpt2` find the same files, also in tiktoken's cache only."""
    from bpe_fast.formats._named import ENCODINGS
    code = ("import bpe_fast, sys; print(' '.join(map(str, bpe_fast.load('gpt2').encode(sys.stdin.read()))))")
    cache = tmp_path / "cache"
    cache.mkdir()
    env = {"TIKTOKEN_CACHE_DIR": str(cache), "BPE_FAST_VOCABS": str(tmp_path / "none")}
    names = subprocess.run([sys.executable, "-c", "from bpe_fast.paths import tiktoken_cache_file as f; "
                            + "; ".join(f"print(f({f.url!r}))" for f in ENCODINGS["gpt2"].files)],
                           env=dict(os.environ, **env), capture_output=True, text=True).stdout.split()
    for f, name in zip(ENCODINGS["gpt2"].files, names):
        shutil.copy(vocab_path(f.name), name)
    cli = bpe_fast_cli("encode", "-t", "gpt2", env=env, stdin="Hello, world!")
    python = subprocess.run([sys.executable, "-c", code], input="Hello, world!", capture_output=True, text=True,
                            env=dict(os.environ, **env))
    assert cli.stdout.split() == python.stdout.split() == ["15496", "11", "995", "0"], (cli.stderr, python.stderr)


def test_show_a_missing_file_is_an_error_and_text_stays_text(tmp_path, capsys, reference):
    reference.save(tmp_path / "t.json")
    tok = ["-t", str(tmp_path / "t.json")]
    for missing in ("notes/chapter1.txt", "NO_SUCH_README.md", "./draft", str(tmp_path / "gone.txt")):
        assert main(["show", *tok, missing]) == 2
        err = capsys.readouterr().err
        assert f"{missing}: no such file (it looks like a file name); to show these characters themselves, " \
               f"give --text" in err
    for text in ("some text", "and/or with spaces", "hello", "a.txt and more"):
        assert main(["show", *tok, "--no-color", text]) == 0
        assert capsys.readouterr().out.splitlines()[0].replace("|", "") == text
    assert main(["show", *tok, "--no-color", "--text", "notes/chapter1.txt"]) == 0
    assert capsys.readouterr().out.splitlines()[0].replace("|", "") == "notes/chapter1.txt"
    (tmp_path / "real.txt").write_text("from a file")
    assert main(["show", *tok, "--no-color", str(tmp_path / "real.txt")]) == 0
    assert capsys.readouterr().out.splitlines()[0].replace("|", "") == "from a file"
