"""What the CLI's tests share: bpe-fast run in a new process, and the tokenizer ``train`` learns
on the small corpus (the ``reference`` every format written from the command line must load as)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bpe_fast
from bpe_fast.cli import main

from ..conftest import SMALL_CORPUS


def bpe_fast_cli(*args, env=None, stdin: str | None = None, cwd=None) -> subprocess.CompletedProcess:
    """``bpe-fast ARGS...`` in a new process: the installed command (beside this Python), else
    ``python -m bpe_fast``."""
    script = Path(sys.executable).with_name("bpe-fast")
    cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "bpe_fast"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, input=stdin,
                          env=None if env is None else dict(os.environ, **env), cwd=cwd, timeout=300)


TRAIN = ["train", str(SMALL_CORPUS), "--vocab-size", "400", "--pattern", "gpt2", "--special", "<|endoftext|>",
         "--workers", "1", "-q"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> bpe_fast.Tokenizer:
    """What `train` learns on the small corpus, in bpe_fast's JSON."""
    path = tmp_path_factory.mktemp("ref") / "ref.json"
    assert main([*TRAIN, "-o", str(path)]) == 0
    return bpe_fast.load(path)


def run_cli(args: list[str], capsys) -> tuple[int | str | None, str]:
    """bpe-fast's exit status and standard error (argparse's errors exit rather than return)."""
    code: int | str | None
    try:
        code = main(args)
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err
