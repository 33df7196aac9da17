"""The guard rails: ``ruff check`` and ``mypy`` pass on bpe_fast/, tests/ and benchmarks/ with
the settings in pyproject.toml. They are dev dependencies, so a missing one fails here (it is
not skipped): CI runs the whole suite, these two with it."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from .conftest import ROOT


def run_tool(module: str, *args: str) -> subprocess.CompletedProcess:
    """``python -m <module>`` in the repository root, where pyproject.toml configures it (and
    where its gitignored cache goes: .ruff_cache, .mypy_cache)."""
    if importlib.util.find_spec(module) is None:
        pytest.fail(f"{module} is not installed: it is a dev dependency, pip install -e '.[dev]'")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_ruff_check_passes():
    done = run_tool("ruff", "check")
    assert done.returncode == 0, f"ruff check found problems:\n{done.stdout}{done.stderr}"


# Slow on a fresh clone (about 10 s without its cache): the whole suite (CI) runs it; the inner
# loop keeps ruff, and `mypy` by hand takes a second with its cache.
@pytest.mark.slow
def test_mypy_passes():
    done = run_tool("mypy")
    assert done.returncode == 0, f"mypy found problems:\n{done.stdout}{done.stderr}"
    assert "note:" not in done.stdout, done.stdout      # e.g. an override for a module that is never used
