"""``bpe-fast convert`` (cli/convert.py): any format, or a named encoding, to any format."""
from __future__ import annotations

import re

import bpe_fast
from bpe_fast.cli import main

from ..conftest import needs_vocabs
from .conftest import bpe_fast_cli


def test_convert_between_every_format(tmp_path, capsys, reference):
    """bpe_fast JSON -> every format -> every format: the same tokenizer all the way."""
    reference.save(tmp_path / "ref.json")
    formats = [("a.tiktoken", []), ("b.model", []), ("c/", ["--format", "gpt2"]),
               ("d.json", ["--format", "huggingface"]), ("e.json", [])]
    sources = [tmp_path / "ref.json"] + [tmp_path / "from_ref" / target for target, _ in formats]
    for source in sources:
        folder = tmp_path / ("from_ref" if source.name == "ref.json" else f"from_{source.name.replace('.', '_')}")
        folder.mkdir()
        for target, options in formats:
            assert main(["convert", str(source), f"{folder}/{target}", *options]) == 0, (source, target)
            assert bpe_fast.load(folder / target) == reference, (source, target)
    out = capsys.readouterr().out
    assert "read       " in out and "vocab size 400 (143 merges, 1 special), pattern gpt2" in out
    assert re.search(r"^wrote      .*a.tiktoken.json \(tiktoken\)$", out, re.M)


@needs_vocabs
def test_convert_a_named_encoding_and_use_the_result(tmp_path):
    done = bpe_fast_cli("convert", "cl100k_base", tmp_path / "cl100k.tiktoken")
    assert done.returncode == 0, done.stderr
    assert "vocab size 100,277 (100,000 merges, 5 special), pattern cl100k" in done.stdout
    text = "Hello, world! <|endoftext|>"
    encoded = bpe_fast_cli("encode", "-t", tmp_path / "cl100k.tiktoken", "--allow-special", stdin=text)
    assert encoded.returncode == 0, encoded.stderr
    assert [int(i) for i in encoded.stdout.split()] == bpe_fast.load("cl100k_base").encode(text, allowed_special="all")


def test_a_tiktoken_file_without_sidecar_needs_pattern_and_the_cli_says_how(tmp_path, capsys, reference):
    reference.save(tmp_path / "bare.tiktoken")
    (tmp_path / "bare.tiktoken.json").unlink()
    assert main(["show", "-t", str(tmp_path / "bare.tiktoken"), "hello"]) == 2
    err = capsys.readouterr().err
    assert "a .tiktoken file holds no pattern, and there is no sidecar bare.tiktoken.json" in err
    assert f"bpe-fast convert {tmp_path / 'bare.tiktoken'} " in err and "--pattern cl100k" in err
    assert "pattern=" not in err and "Tokenizer." not in err                      # no Python in a CLI message
    assert main(["convert", str(tmp_path / "bare.tiktoken"), str(tmp_path / "t.json"), "--pattern", "gpt2"]) == 0
    again = bpe_fast.load(tmp_path / "t.json")
    assert again.pattern == reference.pattern and again.merges.tolist() == reference.merges.tolist()
    assert main(["convert", str(tmp_path / "t.json"), str(tmp_path / "u.json"), "--pattern", "gpt2"]) == 2
    assert "--pattern gpt2: IN" in capsys.readouterr().err
