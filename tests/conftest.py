"""Shared fixtures: where the real corpora and vocabularies are, and the small corpus in tests/data.

The shared data lives outside the repository, found by ``bpe_fast.paths`` ($BPE_FAST_DATA, else
../shared beside the project root); tests that need it skip, saying so, when it is absent.
``tests/data/small_corpus.txt`` is part of the repository, so the tests built on it always run.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

from bpe_fast import paths

# The inner loop (-m "not slow") runs each property test on a quarter of its examples (at least
# 20, or all of them when it asks for fewer), the whole suite on all of them: every kind of check
# stays in the inner loop, and CI draws the full number. Set in pytest_configure, which runs
# before any test module is imported (the decorators read it then).
_INNER_LOOP = False


def pytest_configure(config) -> None:
    global _INNER_LOOP
    if "BPE_FAST_CACHE" not in os.environ:      # prebuilt.py's entries: the run's own, not the user's
        os.environ["BPE_FAST_CACHE"] = tempfile.mkdtemp(prefix="bpe_fast-test-cache-")
        config.add_cleanup(lambda: shutil.rmtree(os.environ.pop("BPE_FAST_CACHE"), ignore_errors=True))
    _INNER_LOOP = "not slow" in (config.getoption("markexpr", "") or "")
    if _INNER_LOOP:         # the properties that take hypothesis' default (100 examples)
        settings.register_profile("inner-loop", max_examples=25)
        settings.load_profile("inner-loop")


def examples(n: int) -> int:
    """How many examples a property test asking for ``n`` draws in this run (see _INNER_LOOP)."""
    return max(-(-n // 4), min(n, 20)) if _INNER_LOOP else n

ROOT = Path(__file__).resolve().parent.parent
SMALL_CORPUS = Path(__file__).resolve().parent / "data" / "small_corpus.txt"
_CORPORA = paths.corpora_dir()
SHARED = _CORPORA.parent if _CORPORA is not None else None
NO_SHARED = "shared corpora not found: set BPE_FAST_DATA or put shared/ beside the project"
NO_VOCABS = "shared vocabularies not found: set BPE_FAST_VOCABS or BPE_FAST_DATA, or put shared/ beside the project"


@pytest.fixture(scope="session")
def corpora() -> Path:
    if SHARED is None:
        pytest.skip(NO_SHARED)
    return SHARED / "corpora"


def shared_path(*parts: str) -> Path:
    """A path in the shared data (``shared_path("corpora", "big.txt")``), for a test that needs
    it: the test skips, saying why, when the data is absent."""
    if SHARED is None:
        pytest.skip(NO_SHARED)
    return SHARED.joinpath(*parts)


def corpus_files() -> list[Path]:
    """Every shared corpus file (for parametrizing); empty if the data is absent."""
    if SHARED is None:
        return []
    base = SHARED / "corpora"
    return sorted(p for p in base.rglob("*.txt") if p.name != "code_python.filelist.txt")


# A cross-check on a corpus past this size takes a second or more (code_python.txt, 12 MB, up
# to 9 s), so it runs only in the full suite; the dozens below it stay in the fast one.
BIG_CORPUS_BYTES = 1_000_000


def corpus_params() -> list:
    """corpus_files() to parametrize with, named by file, the big corpora marked slow: the fast
    suite (pytest -m "not slow") still checks every small one, every script and language."""
    return [pytest.param(p, id=p.name, marks=pytest.mark.slow if p.stat().st_size > BIG_CORPUS_BYTES else ())
            for p in corpus_files()]


def vocab_dir() -> Path | None:
    """The folder of the real OpenAI vocabularies, or None."""
    folders = [d for d in paths.vocab_dirs() if (d / "cl100k_base.tiktoken").is_file()]
    return folders[0] if folders else None


def vocab_path(name: str = "") -> Path:
    """A file of the real OpenAI vocabularies (or their folder), for a test that needs them:
    the test skips, saying why, when they are absent."""
    folder = vocab_dir()
    if folder is None:
        pytest.skip(NO_VOCABS)
    return folder / name


@pytest.fixture(scope="session")
def vocabs() -> Path:
    return vocab_path()


def read_corpus(path: Path) -> str:
    """A corpus file's text exactly (no newline translation)."""
    return path.read_bytes().decode("utf-8")


def small_text() -> str:
    """The repository's own small corpus (always there)."""
    return read_corpus(SMALL_CORPUS)


needs_data = pytest.mark.skipif(SHARED is None, reason=NO_SHARED)
needs_vocabs = pytest.mark.skipif(vocab_dir() is None, reason=NO_VOCABS)


# The optional packages behind each extra of pyproject.toml (by top-level module); any other
# package a test needs (a peer library, a notebook runner) is a dev dependency.
EXTRAS = {"tiktoken": "tiktoken", "matplotlib": "plot", "line_profiler": "profile", "dask": "dask",
          "distributed": "dask", "pyarrow": "parquet", "zstandard": "zstd", "sentencepiece": "workshop",
          "ipywidgets": "workshop", "transformers": "transformers"}


def missing_reason(module: str) -> str:
    """Why a test skips without ``module``: the extra that brings it, named, and how to install it."""
    extra = EXTRAS.get(module.split(".")[0])
    if extra is not None:
        return f"{module} is missing: needs the [{extra}] extra: pip install 'bpe_fast[{extra}]'"
    return f"{module} is a dev dependency: pip install -e '.[dev]'"


def need(module: str):
    """Import an optional package or a peer library the test needs, or skip saying how to install it."""
    return pytest.importorskip(module, reason=missing_reason(module))


# Tests of tables too big to hold (issue 31) map sparse files: gigabytes of address space, no
# memory and no disk, as long as nothing reads them.
sparse_files = pytest.mark.skipif(sys.platform not in ("linux", "darwin") or sys.maxsize < 2**40,
                                  reason="needs sparse files and a 64-bit address space")


def sparse_array(path: Path, dtype, n: int):
    """An array of n zeros of dtype in a sparse file at path: nothing allocated until read."""
    import numpy as np
    return np.memmap(path, dtype, "w+", shape=(n,))
