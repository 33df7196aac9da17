"""What the commands share (cli/common.py): the help, which shows every default and says how the
format is chosen, and the options of every command that counts (--progress)."""
from __future__ import annotations

import argparse

import pytest

from bpe_fast.cli import _parser

from .conftest import bpe_fast_cli


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
