"""Where data is found (paths.py): the demo corpus, the shared corpora and vocabularies, and
tiktoken's cache, each looked for where its variables say, in the documented order."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from bpe_fast import paths
from bpe_fast.paths import stdlib_sources

from .conftest import need, needs_vocabs, vocab_path


def test_demo_corpus_is_the_standard_library():
    files = stdlib_sources(limit_bytes=1 << 20)
    assert files and all(f.endswith(".py") for f in files)
    assert any(f.endswith("abc.py") for f in stdlib_sources())


def test_the_demo_corpus_stops_at_its_limit_and_leaves_out_tests_and_installed_packages():
    files = stdlib_sources(limit_bytes=300_000)
    sizes = [os.path.getsize(f) for f in files]
    assert sum(sizes) <= 300_000 and files == sorted(files)
    root = paths.stdlib_root()
    for f in stdlib_sources():
        parts = Path(f).relative_to(root).parts
        assert not {"site-packages", "dist-packages", "test", "tests", "__pycache__"} & set(parts), f


# -- the shared data: $BPE_FAST_DATA, else shared/ beside a checkout --------------------------------

@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A checkout at tmp_path/project (it has a pyproject.toml), with no variable set."""
    for name in ("BPE_FAST_DATA", "BPE_FAST_VOCABS"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "pyproject.toml").write_text("")
    monkeypatch.setattr(paths, "PROJECT_ROOT", tmp_path / "project")
    return tmp_path / "project"


def test_bpe_fast_data_wins_over_shared_beside_the_checkout(tmp_path, project, monkeypatch):
    (tmp_path / "shared" / "corpora").mkdir(parents=True)
    assert paths.shared_dir() == tmp_path / "shared"
    (tmp_path / "mine" / "vocabs").mkdir(parents=True)
    monkeypatch.setenv("BPE_FAST_DATA", str(tmp_path / "mine"))
    assert paths.shared_dir() == tmp_path / "mine"
    assert paths.corpora_dir() is None                   # mine holds vocabs/ only
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("BPE_FAST_DATA", str(tmp_path / "empty"))   # neither corpora/ nor vocabs/: not data
    assert paths.shared_dir() == tmp_path / "shared"


def test_an_installed_package_looks_for_no_shared_folder_beside_itself(tmp_path, project):
    (tmp_path / "shared" / "corpora").mkdir(parents=True)
    (project / "pyproject.toml").unlink()                 # site-packages holds no pyproject.toml
    assert paths.shared_dir() is None and paths.corpora_dir() is None and paths.vocab_dirs() == []


def test_a_shared_corpus_is_named_only_when_it_is_there(tmp_path, project):
    (tmp_path / "shared" / "corpora" / "multilingual").mkdir(parents=True)
    (tmp_path / "shared" / "corpora" / "multilingual" / "ja.txt").write_text("日本語")
    assert paths.shared_corpus("multilingual/ja.txt") == tmp_path / "shared" / "corpora" / "multilingual" / "ja.txt"
    assert paths.shared_corpus("multilingual/ko.txt") is None and paths.shared_corpus("multilingual") is None


def test_vocabularies_are_looked_for_in_bpe_fast_vocabs_then_the_shared_vocabs(tmp_path, project, monkeypatch):
    assert paths.vocab_dirs() == []
    (tmp_path / "shared" / "vocabs").mkdir(parents=True)
    assert paths.vocab_dirs() == [tmp_path / "shared" / "vocabs"]
    monkeypatch.setenv("BPE_FAST_VOCABS", str(tmp_path / "mine"))
    assert paths.vocab_dirs() == [tmp_path / "mine", tmp_path / "shared" / "vocabs"]


# -- tiktoken's cache, named as tiktoken names it ---------------------------------------------------

def test_named_encoding_file_in_tiktokens_cache_is_named_as_tiktoken_names_it(tmp_path, monkeypatch):
    import hashlib

    from bpe_fast.formats._named import ENCODINGS
    from bpe_fast.paths import tiktoken_cache_dir, tiktoken_cache_file
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    assert ENCODINGS["cl100k_base"].files[0].url == url
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert tiktoken_cache_file(url) == tmp_path / hashlib.sha1(url.encode()).hexdigest()
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(tmp_path / "gym"))
    assert tiktoken_cache_dir() == tmp_path / "gym"
    monkeypatch.delenv("DATA_GYM_CACHE_DIR")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)            # gettempdir() reads TMPDIR again
    assert tiktoken_cache_dir() == tmp_path / "data-gym-cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")                # tiktoken: caching off
    assert tiktoken_cache_dir() is None


@needs_vocabs
def test_tiktoken_reads_the_file_where_bpe_fast_looks_for_it(tmp_path):
    """Put r50k_base where bpe_fast looks in tiktoken's cache: tiktoken itself must take it from
    there (its download is made to fail), so the two agree on the cache's naming."""
    import shutil
    import subprocess
    import sys

    need("tiktoken")
    from bpe_fast.formats._named import ENCODINGS
    file = ENCODINGS["r50k_base"].files[0]
    cache = tmp_path / "cache"
    cache.mkdir()
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(cache))
    cached = subprocess.run([sys.executable, "-c", "from bpe_fast.paths import tiktoken_cache_file; "
                             f"print(tiktoken_cache_file({file.url!r}))"], env=env, capture_output=True, text=True)
    shutil.copy(vocab_path(file.name), cached.stdout.strip())
    code = ("import tiktoken.load as L\n"
            "def offline(path): raise SystemExit('tiktoken tried to download ' + path)\n"
            "L.read_file = offline\n"
            f"ranks = L.load_tiktoken_bpe({file.url!r}, {file.sha256!r})\n"
            "print(len(ranks))")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "50256", proc.stderr


@pytest.mark.parametrize("variable", ["TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"])
def test_tiktoken_itself_reads_the_cache_file_named_here(tmp_path, monkeypatch, variable):
    """tiktoken's own read_file_cached (its download made to fail) finds what is put at
    ``tiktoken_cache_file(url)``, whichever of its variables names the folder."""
    load = need("tiktoken.load")
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.setenv(variable, str(tmp_path))
    url = "https://openaipublic.blob.core.windows.net/encodings/p50k_base.tiktoken"
    cached = paths.tiktoken_cache_file(url)
    assert cached is not None and cached.parent == tmp_path
    cached.write_bytes(b"the cached copy")

    def offline(path):
        raise AssertionError(f"tiktoken looked elsewhere and tried to download {path}")

    monkeypatch.setattr(load, "read_file", offline)
    assert load.read_file_cached(url) == b"the cached copy"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")                # caching off: no file to name
    assert paths.tiktoken_cache_file(url) is None
