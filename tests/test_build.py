"""A source checkout whose compiled extension is older than its .pyx, or than a .pxd it cimports,
refuses to import with a message naming the module and the command that rebuilds it; an
installed package is never checked, and a fresh build never trips it.

The fake trees below are never built nor imported: their "extensions" are empty files, and
only their modification times matter.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from bpe_fast import _build
from bpe_fast.errors import BpeFastError, StaleBuildError

ROOT = Path(__file__).resolve().parent.parent
SUFFIX = EXTENSION_SUFFIXES[0]          # the one this Python imports first, as a real build names it
BUILT = time.time() - 3600              # every fake extension was built an hour ago

FILES = {
    "bpe_fast/__init__.py": "",
    "bpe_fast/_one.pyx": "from ._shared cimport (helper,\n    other as o)  # why\nfrom libc.stdint cimport uint8_t\n",
    "bpe_fast/_one.pxd": "from libc.stdint cimport uint8_t\n",
    "bpe_fast/_two.pyx": "cimport bpe_fast._deep as deep\n",
    "bpe_fast/_three.pyx": "from . cimport _nested\nimport numpy as np\n",
    "bpe_fast/_shared.pxd": "from ._leaf cimport \\\n    thing\n",
    "bpe_fast/_leaf.pxd": "",
    "bpe_fast/_deep.pxd": "",
    "bpe_fast/_nested.pxd": "",
    "bpe_fast/_alone.pxd": "",
    "bpe_fast/sub/__init__.py": "",
    "bpe_fast/sub/_four.pyx": "from .._deep cimport x\n",
}


def fake_checkout(root: Path, checkout: bool = True) -> Path:
    """A package tree whose every extension is newer than every source; returns the package."""
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        os.utime(path, (BUILT - 60, BUILT - 60))
        if path.suffix == ".pyx":
            extension = path.with_name(path.stem + SUFFIX)
            extension.write_bytes(b"")
            os.utime(extension, (BUILT, BUILT))
    if checkout:
        (root / "setup.py").write_text("")
        (root / "pyproject.toml").write_text("")
    return root / "bpe_fast"


def edit(package: Path, name: str) -> None:
    """Touch a source, as saving it does: now, after any build."""
    os.utime(package / name)


def stale_modules(package: Path) -> list[str]:
    return [module for module, _, _ in _build.stale_extensions(package)]


def test_a_fresh_build_is_not_stale(tmp_path):
    package = fake_checkout(tmp_path)
    assert _build.stale_extensions(package) == []
    _build.check_extensions_are_fresh(package)


def test_an_edited_pyx_makes_its_module_stale_and_the_error_says_how_to_rebuild(tmp_path):
    package = fake_checkout(tmp_path)
    edit(package, "_two.pyx")
    with pytest.raises(StaleBuildError) as caught:
        _build.check_extensions_are_fresh(package)
    message = str(caught.value)
    assert f"bpe_fast._two: bpe_fast/_two.pyx is newer than _two{SUFFIX}" in message
    assert "bpe_fast._one" not in message and "bpe_fast._three" not in message
    assert f"cd {tmp_path} && python setup.py build_ext --inplace" in message
    assert 'pip install -e ".[dev]"' in message
    assert isinstance(caught.value, ImportError) and isinstance(caught.value, BpeFastError)
    assert caught.value.name == "bpe_fast._two"


@pytest.mark.parametrize("pxd, stale", [
    ("_one.pxd", ["bpe_fast._one"]),                            # its own .pxd
    ("_shared.pxd", ["bpe_fast._one"]),                         # a parenthesised cimport list
    ("_leaf.pxd", ["bpe_fast._one"]),                           # cimported by a .pxd it cimports
    ("_deep.pxd", ["bpe_fast._two", "bpe_fast.sub._four"]),     # "cimport bpe_fast._deep", "from .._deep"
    ("_nested.pxd", ["bpe_fast._three"]),                       # "from . cimport _nested"
    ("_alone.pxd", []),                                         # nobody cimports it: nothing to rebuild
])
def test_an_edited_pxd_makes_stale_exactly_the_modules_that_cimport_it(tmp_path, pxd, stale):
    package = fake_checkout(tmp_path)
    edit(package, pxd)
    assert stale_modules(package) == stale


def test_a_module_that_was_never_built_in_place_is_not_checked(tmp_path):
    package = fake_checkout(tmp_path)
    edit(package, "_two.pyx")
    (package / f"_two{SUFFIX}").unlink()
    assert stale_modules(package) == []


@pytest.mark.parametrize("layout", ["no setup.py", "site-packages"])
def test_an_installed_package_is_never_checked(tmp_path, layout):
    """A wheel's files carry the installer's times, in any order: only a source checkout is checked."""
    root = tmp_path / "lib" / "site-packages" if layout == "site-packages" else tmp_path
    package = fake_checkout(root, checkout=layout == "site-packages")   # site-packages with a stray setup.py
    edit(package, "_one.pyx")
    assert stale_modules(package) == ["bpe_fast._one"]                  # stale by the times...
    assert not _build.is_source_checkout(package)
    _build.check_extensions_are_fresh(package)                          # ...yet it imports


def test_this_checkout_is_checked_and_fresh():
    assert _build.is_source_checkout(_build.PACKAGE) == (ROOT / "setup.py").is_file()
    assert _build.stale_extensions(_build.PACKAGE) == []
    encoding = ROOT / "bpe_fast" / "encoding"
    encoder_pxds = {p.relative_to(ROOT).as_posix() for p in encoding.glob("_*.pxd")}
    assert {"bpe_fast/encoding/_ranks.pxd", "bpe_fast/encoding/_cache.pxd"} <= encoder_pxds
    shared = {"bpe_fast/pretokenize/_split.pxd", "bpe_fast/pretokenize/_scan.pxd", "bpe_fast/core/_cpu.pxd",
              "bpe_fast/core/_pairmap.pxd", "bpe_fast/core/_hash.pxd", "bpe_fast/core/_text.pxd"}
    assert shared | encoder_pxds == {
        p.relative_to(ROOT).as_posix() for p in _build.cimported_pxds(encoding / "_encode.pyx", _build.PACKAGE)}


IMPORT = f"""
import sys
try:
    import bpe_fast
    print("imported", bpe_fast.__file__)
except ImportError as exc:
    loaded = [m for m, module in sys.modules.items()
              if m.startswith("bpe_fast") and (getattr(module, "__file__", None) or "").endswith("{SUFFIX}")]
    print(type(exc).__name__, "loaded:", loaded)
    print(exc)
"""


def test_importing_a_stale_copy_of_the_package_fails_before_loading_any_extension(tmp_path):
    shutil.copytree(ROOT / "bpe_fast", tmp_path / "bpe_fast", ignore=shutil.ignore_patterns("__pycache__", "*.cpp"))
    for name in ("setup.py", "pyproject.toml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def import_the_copy() -> list[str]:
        done = subprocess.run([sys.executable, "-c", IMPORT], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    assert import_the_copy() == [f"imported {tmp_path / 'bpe_fast' / '__init__.py'}"]     # copied with its times
    edit(tmp_path / "bpe_fast" / "core", "_pairmap.pxd")
    lines = import_the_copy()
    assert lines[0] == "StaleBuildError loaded: []"
    assert lines[1] == f"stale compiled extensions in the source checkout {tmp_path} (older than their Cython sources):"
    assert lines[2:-1] == [f"  bpe_fast.{m}: bpe_fast/core/_pairmap.pxd is newer than {m.rpartition('.')[2]}{SUFFIX}"
                           for m in ("counting._table", "encoding._encode", "pretokenize._pretok", "training._kernel",
                                     "training.variants._boundless", "training.variants._parity",
                                     "training.variants._picky")]
    # (the modules that cimport it: directly, or through core/_hash.pxd)
    assert lines[-1].startswith(f"They would run the old code. Rebuild them: cd {tmp_path} && python setup.py")
