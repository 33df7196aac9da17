"""Helpers shared by the training tests (tests/conftest.py holds the suite's own).

- A base tokenizer and a table to continue it on (``continuing``), the words of such a table
  (``random_words``), and a chunk encoded whole by a base the slow plain way (``bpe_of_chunk``):
  the kernel's, continued.py's and SuperBPE's tests hold the fast paths to them.
- A training in a child process, and what it leaves behind (``start_child``, ``wait_for_line``,
  ``assert_all_gone``): the tests that interrupt the kernel or SuperBPE's count ahead, as
  tests/counting/test_workers.py does counting.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from bpe_fast import Tokenizer, WordTable
from bpe_fast.training import continued
from bpe_fast.training.reference import train_reference

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and POSIX signals")


# -- continued training -------------------------------------------------------------------------

def continuing(words: dict[bytes, int], base_merges: int):
    """A table of words, a base trained on them, and the base's layout of them (tokenized_by)."""
    base = Tokenizer(train_reference(words, base_merges), pattern=None)
    table = WordTable.from_counts(words)
    start, lengths = continued.tokenized_by(base, table)
    return base, table, start, lengths


def random_words(seed: int, n: int = 400) -> dict[bytes, int]:
    rng = np.random.default_rng(seed)
    return {bytes(rng.choice(list(b"abcdef"), size=rng.integers(2, 30)).astype(np.uint8)): int(rng.integers(1, 300))
            for _ in range(n)}


def bpe_of_chunk(base: Tokenizer, chunk: bytes) -> list[int]:
    """A chunk encoded whole by the base, the slow plain way: a chunk that is a token is that
    token (tiktoken's rule); else the adjacent pair of lowest rank merges, leftmost first."""
    ids = {base.token_bytes(i): i for i in range(base.n_base)}
    if chunk in ids:
        return [ids[chunk]]
    rank = {tuple(pair): k for k, pair in enumerate(base.merges.tolist())}
    made = dict(zip(map(tuple, base.merges.tolist()), base.merge_ids.tolist()))
    tokens = [int(base.byte_ids[b]) for b in chunk]
    while len(tokens) > 1:
        pairs = [(rank.get(p, len(rank)), i) for i, p in enumerate(zip(tokens, tokens[1:]))]
        best, at = min(pairs)
        if best == len(rank):
            break
        tokens[at:at + 2] = [made[(tokens[at], tokens[at + 1])]]
    return tokens


# -- a training in a child process (as tests/counting/test_workers.py runs a count) -------------

def tagged_processes(tag: str) -> list[int]:
    """Processes whose environment holds BPE_FAST_TEST_TAG=tag: a child and its workers."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if f"BPE_FAST_TEST_TAG={tag}".encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def start_child(script: str, tag: str, **kwargs) -> subprocess.Popen:
    """The script in a new Python. Ctrl-C in it is a user's: SIGINT as the default, also when the
    tests themselves run with it ignored (a background job of a non-interactive shell does, and
    Python then leaves it ignored, so no KeyboardInterrupt would come)."""
    env = {**os.environ, "BPE_FAST_TEST_TAG": tag, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kwargs)


def wait_for_line(proc: subprocess.Popen, text: str, timeout: float = 60) -> None:
    assert proc.stdout is not None and proc.stderr is not None        # started with stdout and stderr piped
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if text in line:
            return
        if not line and proc.poll() is not None:
            raise AssertionError(f"child ended before printing {text!r}: {proc.stderr.read()}")
    raise AssertionError(f"child did not print {text!r} within {timeout} s")


def assert_all_gone(tag: str, within: float = 3.0) -> None:
    deadline = time.monotonic() + within
    while tagged_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not tagged_processes(tag), "worker processes outlived their parent"
