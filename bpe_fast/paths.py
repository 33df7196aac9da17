"""Where data is found, in one place: used by the CLI, the ladder, the tests and the benchmarks.

* The demo corpus: this Python's standard library sources, which exist wherever Python does.
* The shared corpora and vocabularies (never part of the repository): ``$BPE_FAST_DATA`` (a
  folder holding ``corpora/`` and ``vocabs/``), else ``shared/`` beside the project checkout.
* The named encodings' vocabulary files: ``$BPE_FAST_VOCABS``, tiktoken's own cache, the shared
  ``vocabs/`` (registry.py looks in that order, after any folder the caller names).
"""
from __future__ import annotations

import hashlib
import os
import sysconfig
import tempfile
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
_STDLIB_SKIP = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"}


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def stdlib_sources(limit_bytes: int = 8 << 20) -> list[str]:
    """Python files of the running interpreter's standard library (sorted, up to limit_bytes):
    a corpus that exists wherever Python does, so the demo needs no download."""
    root = stdlib_root()
    files, total = [], 0
    for path in sorted(root.rglob("*.py")):
        if _STDLIB_SKIP.intersection(path.relative_to(root).parts):
            continue
        size = path.stat().st_size
        if total + size > limit_bytes:
            break
        files.append(str(path))
        total += size
    return files


def shared_dir() -> Path | None:
    """$BPE_FAST_DATA, else shared/ beside a project checkout, if it holds corpora/ or vocabs/."""
    candidates = [os.environ.get("BPE_FAST_DATA")]
    if (PROJECT_ROOT / "pyproject.toml").is_file():       # a checkout, not an installed wheel
        candidates.append(str(PROJECT_ROOT.parent / "shared"))
    for c in candidates:
        if c and ((Path(c) / "corpora").is_dir() or (Path(c) / "vocabs").is_dir()):
            return Path(c)
    return None


def corpora_dir() -> Path | None:
    shared = shared_dir()
    return shared / "corpora" if shared is not None and (shared / "corpora").is_dir() else None


def shared_corpus(name: str) -> Path | None:
    """A file of the shared corpora (e.g. "big.txt", "multilingual/ja.txt"), or None."""
    corpora = corpora_dir()
    return corpora / name if corpora is not None and (corpora / name).is_file() else None


def vocab_dirs() -> list[Path]:
    """Folders to look in for the named encodings' files, in order."""
    found = []
    if os.environ.get("BPE_FAST_VOCABS"):
        found.append(Path(os.environ["BPE_FAST_VOCABS"]))
    shared = shared_dir()
    if shared is not None and (shared / "vocabs").is_dir():
        found.append(shared / "vocabs")
    return found


def tiktoken_cache_dir() -> Path | None:
    """The folder where tiktoken keeps the files it downloaded, chosen as tiktoken chooses it:
    ``$TIKTOKEN_CACHE_DIR``, else ``$DATA_GYM_CACHE_DIR``, else ``data-gym-cache`` in the temporary
    folder (``$TMPDIR``, usually /tmp). None when caching is turned off (the variable set to "")."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        folder = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        folder = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        folder = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return Path(folder) if folder else None


def tiktoken_cache_file(url: str) -> Path | None:
    """Where tiktoken keeps its copy of the file it downloads from ``url``: the cache folder,
    file named by the SHA-1 (hex) of the address."""
    folder = tiktoken_cache_dir()
    return folder / hashlib.sha1(url.encode()).hexdigest() if folder is not None else None
