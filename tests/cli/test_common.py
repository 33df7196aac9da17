"""What the commands share (cli/common.py): the help, which shows every default and says how the
format is chosen, and the options of every command that counts (--progress)."""
from __future__ import annotations

import argparse

import pytest

from bpe_fast.cli import _parser

from .conftest import bpe_fast_cli, run_cli


def test_cli_progress_json(tmp_path):
    import subprocess
    import sys
    corpus = tmp_path / "c.txt"
    corpus.write_text("some words to count and merge\n" * 200)
    proc = subprocess.run([sys.executable, "-m", "bpe_fast", "train", str(corpus), "--vocab-size", "300",
                           "--progress", "json", "-o", str(tmp_path / "t.json")], capture_output=True, text=True)
    assert proc.returncode == 0 and '"stage": "merging"' in proc.stderr


def subcommand_parsers() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


@pytest.mark.parametrize("name", sorted(subcommand_parsers()))
def test_help_shows_every_default_and_every_required_option(name):
    parser = subcommand_parsers()[name]
    text = " ".join(parser.format_help().split())
    for action in parser._actions:
        if not action.option_strings or action.help in (None, argparse.SUPPRESS) or action.default == argparse.SUPPRESS:
            continue
        help_string = parser.formatter_class(prog="x")._get_help_string(action)
        assert help_string is not None
        helped = " ".join((help_string % vars(action)).split())
        assert helped in text
        if action.required:
            assert "required" in helped, (name, action.option_strings)
        elif action.default is not None and not isinstance(action.default, (bool, list)):
            assert "default" in helped.lower(), (name, action.option_strings, helped)


def test_help_says_how_the_format_is_chosen_and_that_json_is_ambiguous():
    text = " ".join(bpe_fast_cli("train", "--help").stdout.split())
    assert (".tiktoken -> tiktoken, .model -> minbpe, .bpe -> gpt2, tokenizer.json -> huggingface, encoder.json -> "
            "gpt2; any other .json name means bpe_fast") in text
    assert "--vocab-size SIZES required (except with --demo" in text
    assert "-t TOKENIZER, --tokenizer TOKENIZER" in " ".join(bpe_fast_cli("show", "--help").stdout.split())
    assert "(required)" in bpe_fast_cli("count", "--help").stdout


# -- numbers: one line naming the option -----------------------------------------------------------

HUGE = 10**20


def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("args,message", [
    (["--vocab-size", "1e20"], "argument --vocab-size: 1e20 is too large: token ids are 32-bit, so a vocabulary "
                               "holds at most 2,147,483,647 tokens"),
    (["--vocab-size", "3000000000"], "argument --vocab-size: 3000000000 is too large"),
    (["--vocab-size", "infk"], "argument --vocab-size: 'infk' is not a vocabulary size"),
    (["--vocab-size", "300.5"], "argument --vocab-size: '300.5' is not a vocabulary size"),
    (["--memory-budget", "infG"], "argument --memory-budget: 'INFG' is not a size"),
    (["--memory-budget", "nan"], "argument --memory-budget: 'NAN' is not a size"),
    (["--memory-budget=-5G"], "argument --memory-budget: -5G is out of range: a size is from 1 byte to 8 EiB"),
    (["--memory-budget", "1e30G"], "argument --memory-budget: 1E30G is out of range"),
    (["--max-token-length", str(HUGE)], f"argument --max-token-length: {HUGE} is out of range: 1 to "
                                         f"9,223,372,036,854,775,807 bytes"),
    (["--workers", str(HUGE)], f"argument --workers: {HUGE} is out of range: 1 to 4,096 processes"),
    (["--block-size", str(HUGE)], f"argument --block-size: {HUGE} is out of range: 1 to 1,073,741,824 bytes"),
])
def test_cli_huge_numbers_are_one_line_naming_the_option(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.setattr("bpe_fast.cli.train.train", lambda *a, **k: pytest.fail("trained with a bad number"))
    corpus = write(tmp_path, "c.txt", b"ab ab abc\n")
    if "--vocab-size" not in args:
        args = ["--vocab-size", "300", *args]
    code, err = run_cli(["train", str(corpus), "-o", str(tmp_path / "t.json"), "-q", *args], capsys)
    assert code == 2 and err.startswith("bpe-fast train: error: ") and err.count("\n") == 1, err
    assert message in err
