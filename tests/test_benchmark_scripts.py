"""The benchmark scripts' quick paths still run against the package: nothing else in the suite
runs them, so a change of bpe_fast's internals could leave them behind (mypy found two)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from .conftest import ROOT, needs_data

BENCHMARKS = ROOT / "benchmarks"


def run_script(name: str, *args: str) -> subprocess.CompletedProcess:
    """benchmarks/<name> run with this checkout's bpe_fast."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, str(BENCHMARKS / name), *args], capture_output=True, text=True,
                          env=env, timeout=120)


@needs_data
def test_make_corpus_counts_the_distinct_chunks_it_wrote(tmp_path):
    done = run_script("make_corpus.py", "--size", "64K", "-o", str(tmp_path / "web.txt"), "--stats")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^[\d,]+ distinct cl100k chunks, [\d,]+ per GB$", done.stdout, re.M), done.stdout


def test_stages_refuses_a_pattern_without_a_native_scanner(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("some words to split\n")
    done = run_script("stages.py", str(corpus), "--pattern", r"\w+")
    assert done.returncode == 1
    assert "the stages time the native scanner; give gpt2, cl100k, o200k or superword" in done.stderr, done.stderr


@needs_data
@pytest.mark.slow      # three processes started (make_corpus and two trainings): seconds of waiting
def test_bench_superword_times_superword_against_plain_training(tmp_path):
    done = run_script("bench_superword.py", "--cost", "--texts", "long-tail", "--longtail-size", "64K",
                      "--sizes", "600:400", "--repeats", "1", "--work-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    row = re.search(r"^\| long-tail \| 0 \| 600 \| 400 \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| "
                    r"([\d.]+) / ([\d.]+) \(([\d.]+)\) \|", done.stdout, re.M)
    assert row and float(row[3]) > 0 and float(row[6]) > 0, done.stdout
    assert "counting" in done.stdout and (tmp_path / "longtail-64K.txt").is_file()
