"""The command line's frame (cli/__init__.py): ``main`` runs a command and turns what it raises
into one line on standard error and an exit status, never a traceback for what a user can cause;
a bug keeps its traceback."""
from __future__ import annotations

from bpe_fast.cli import main

from .conftest import bpe_fast_cli


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
