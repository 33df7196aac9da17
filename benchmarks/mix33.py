"""The mix33 benchmark corpus, shared by the benchmark scripts.

mix33 = big.txt, tinyshakespeare.txt, code_python.txt and multilingual/*.txt (sorted by name),
about 33 MB, from a folder given on the command line, else the shared corpora that
``bpe_fast/paths.py`` finds ($BPE_FAST_DATA/corpora, else ../shared/corpora beside the project).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _paths_module():
    """bpe_fast/paths.py loaded on its own: importing the bpe_fast package would load NumPy into
    the benchmark processes of the other libraries and add to their measured memory."""
    path = PROJECT_ROOT / "bpe_fast" / "paths.py"
    spec = importlib.util.spec_from_file_location("bpe_fast_paths", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus_dir(option: str | None = None) -> Path:
    if option:
        return Path(option)
    found = _paths_module().corpora_dir()
    if found is None:
        sys.exit("shared corpora not found: pass --corpus-dir, set BPE_FAST_DATA, or put shared/ beside the project")
    return found


def mix33_files(directory: Path) -> list[Path]:
    files = [directory / name for name in ("big.txt", "tinyshakespeare.txt", "code_python.txt")]
    files += sorted((directory / "multilingual").glob("*.txt"), key=lambda p: p.name)
    missing = [str(f) for f in files if not f.is_file()]
    if missing or len(files) == 3:
        sys.exit(f"mix33 corpus incomplete in {directory}: missing {missing or 'multilingual/*.txt'}")
    return files
