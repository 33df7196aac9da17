"""Hugging Face hub repositories, read offline from the local hub cache: ``load("openai-community/gpt2")``.

Nothing is downloaded. The cache folder is chosen as huggingface_hub chooses it: ``$HF_HUB_CACHE``
(or its old name ``$HUGGINGFACE_HUB_CACHE``), else ``$HF_HOME/hub``, else
``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``; it is read each call (not
when a module is imported) so a changed variable counts. With huggingface_hub installed its
``try_to_load_from_cache`` finds the file; without it, the documented layout is read:
``models--ORG--NAME/refs/main`` names a commit, whose files are in ``snapshots/<commit>/``.
"""
from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

from ..errors import VocabularyNotFoundError

__all__ = ["hub_cache_dir", "is_repo_id", "cached_tokenizer_file"]

TOKENIZER_FILE = "tokenizer.json"
# A hub repository id: ORG/NAME, each of letters, digits, "-", "_", "." (not starting with "." nor "-").
_REPO_ID = re.compile(r"^[A-Za-z0-9_][\w.-]*/[A-Za-z0-9_][\w.-]*$")


def hub_cache_dir() -> Path:
    """The local Hugging Face hub cache, as huggingface_hub finds it (see the module docstring)."""
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            return Path(os.environ[variable]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return Path(home).expanduser() / "hub"


def is_repo_id(spec: str) -> bool:
    """Whether ``spec`` reads as a hub repository id (ORG/NAME); a local path of that name wins
    (registry.py asks only when no such file or folder exists)."""
    return bool(_REPO_ID.match(spec)) and ".." not in spec


def _repo_folder(cache: Path, repo_id: str) -> Path:
    return cache / ("models--" + repo_id.replace("/", "--"))


def _from_layout(folder: Path) -> Path | None:
    """tokenizer.json of the commit refs/main names; without refs/main, of the newest snapshot."""
    ref = folder / "refs" / "main"
    if ref.is_file():
        file = folder / "snapshots" / ref.read_text(encoding="utf-8").strip() / TOKENIZER_FILE
        return file if file.is_file() else None
    snapshots = sorted((folder / "snapshots").glob(f"*/{TOKENIZER_FILE}"), key=lambda p: p.stat().st_mtime)
    return snapshots[-1] if snapshots else None


def _from_huggingface_hub(cache: Path, repo_id: str) -> Path | None:
    from huggingface_hub import try_to_load_from_cache
    found = try_to_load_from_cache(repo_id, TOKENIZER_FILE, cache_dir=str(cache))
    return Path(found) if isinstance(found, str) else None      # None, or "known not to exist"


def have_huggingface_hub() -> bool:
    return importlib.util.find_spec("huggingface_hub") is not None


def cached_tokenizer_file(repo_id: str) -> Path:
    """The tokenizer.json of hub repository ``repo_id`` in the local cache; a clear error saying
    where it looked and how to download it when it is not there."""
    cache = hub_cache_dir()
    folder = _repo_folder(cache, repo_id)
    found = _from_huggingface_hub(cache, repo_id) if have_huggingface_hub() else None
    if found is None and folder.is_dir():
        # huggingface_hub asks refs/main only: a snapshot downloaded by its commit hash has none
        found = _from_layout(folder)
    if found is not None:
        return found
    what = "holds no tokenizer.json" if folder.is_dir() else "is not there"
    raise VocabularyNotFoundError(
        f"{repo_id}: no such file, and not in the local Hugging Face hub cache ({folder} {what}; the cache "
        f"folder is $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub; nothing is downloaded): "
        f"download it once with `huggingface-cli download {repo_id} {TOKENIZER_FILE}`, or give a file's path")
