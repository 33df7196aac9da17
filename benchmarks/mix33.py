"""The mix33 benchmark corpus, shared by the benchmark scripts.

mix33 = big.txt, tinyshakespeare.txt, code_python.txt and multilingual/*.txt (sorted by name),
about 33 MB, from ../shared/corpora beside the project, $BPE_FAST_DATA(/corpora), or a folder
given on the command line.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def corpus_dir(option: str | None = None) -> Path:
    if option:
        return Path(option)
    shared = os.environ.get("BPE_FAST_DATA")
    if shared:
        return Path(shared) / "corpora" if (Path(shared) / "corpora").is_dir() else Path(shared)
    return PROJECT_ROOT.parent / "shared" / "corpora"


def mix33_files(directory: Path) -> list[Path]:
    files = [directory / name for name in ("big.txt", "tinyshakespeare.txt", "code_python.txt")]
    files += sorted((directory / "multilingual").glob("*.txt"), key=lambda p: p.name)
    missing = [str(f) for f in files if not f.is_file()]
    if missing or len(files) == 3:
        sys.exit(f"mix33 corpus incomplete in {directory}: missing {missing or 'multilingual/*.txt'}")
    return files
