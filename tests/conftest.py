"""Shared fixtures: where the real corpora and vocabularies are.

They live outside the repository, in $BPE_FAST_DATA or ../shared beside the project root.
Tests that need them skip, saying where they looked, when they are absent.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def shared_dir() -> Path | None:
    candidates = [os.environ.get("BPE_FAST_DATA"), ROOT.parent / "shared"]
    for c in candidates:
        if c and (Path(c) / "corpora").is_dir():
            return Path(c)
    return None


SHARED = shared_dir()


@pytest.fixture(scope="session")
def corpora() -> Path:
    if SHARED is None:
        pytest.skip("shared corpora not found: set BPE_FAST_DATA or put shared/ beside the project")
    return SHARED / "corpora"


def corpus_files() -> list[Path]:
    """Every shared corpus file (for parametrizing); empty if the data is absent."""
    if SHARED is None:
        return []
    base = SHARED / "corpora"
    return sorted(p for p in base.rglob("*.txt") if p.name != "code_python.filelist.txt")


def mix33_files() -> list[Path]:
    base = SHARED / "corpora"
    return [base / "big.txt", base / "tinyshakespeare.txt", base / "code_python.txt",
            *sorted((base / "multilingual").glob("*.txt"))]


def vocab_dir() -> Path | None:
    return SHARED / "vocabs" if SHARED is not None and (SHARED / "vocabs").is_dir() else None


@pytest.fixture(scope="session")
def vocabs() -> Path:
    if vocab_dir() is None:
        pytest.skip("shared vocabularies not found: set BPE_FAST_DATA or put shared/ beside the project")
    return vocab_dir()


def read_corpus(path: Path) -> str:
    """A corpus file's text exactly (no newline translation)."""
    return path.read_bytes().decode("utf-8")
