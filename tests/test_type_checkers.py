"""A user's script outside the checkout, checked by mypy, sees bpe_fast's types.

This checks the installation itself (the README's ``pip install -e ".[dev]"``, as .ci/run does
it), not the checkout: mypy runs in a folder of its own, without PYTHONPATH or MYPYPATH, so it
finds bpe_fast only where the install put it. An editable install through an import hook
(setuptools' ``__editable___bpe_fast_*_finder``, which only the interpreter runs) leaves mypy
with "Cannot find implementation or library stub"; pyproject.toml's ``package-dir`` makes it a
plain path in a .pth file, which type checkers follow.
"""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from .conftest import need

USER_SCRIPT = '''\
import bpe_fast

tok = bpe_fast.load("gpt2")
count: str = tok.encode("hello")
'''


def installed_env() -> dict[str, str]:
    """The environment without the variables that point at a checkout."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}


def import_hook_install() -> list[str]:
    """The files of an editable install through an import hook, if that is how bpe_fast is installed."""
    site = Path(sysconfig.get_paths()["purelib"])
    return sorted(p.name for p in site.glob("__editable___bpe_fast_*_finder.py"))


@pytest.mark.slow
def test_mypy_on_a_users_script_sees_the_installed_package(tmp_path):
    need("mypy")
    importable = subprocess.run([sys.executable, "-c", "import bpe_fast"], cwd=tmp_path, env=installed_env(),
                                capture_output=True, text=True)
    if importable.returncode != 0:
        pytest.skip("bpe_fast is not installed in this environment (only on PYTHONPATH): nothing to check")
    (tmp_path / "script.py").write_text(USER_SCRIPT, encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "script.py"], cwd=tmp_path,
                            env=installed_env(), capture_output=True, text=True, timeout=300)
    hint = (f" (bpe_fast is installed through an import hook, {', '.join(import_hook_install())}, that type "
            "checkers cannot follow: reinstall with pip install -e \".[dev]\")" if import_hook_install() else "")
    assert "Cannot find implementation or library stub" not in result.stdout, result.stdout + hint
    # The misuse is reported with the types bpe_fast declares: proof that mypy read them.
    assert 'script.py:4: error: Incompatible types in assignment (expression has type "list[int]", ' \
           'variable has type "str")' in result.stdout, result.stdout + result.stderr
    assert result.returncode == 1


def test_pyproject_asks_setuptools_for_a_plain_path():
    """The fast half of the check above, on the checkout: setuptools (>= 64) makes an editable
    install a plain .pth path when ``package-dir`` is ``{"": "."}`` and every package sits at its
    own name's folder under it (editable_wheel's ``_select_strategy``); else an import hook."""
    tomllib = need("tomllib")                                 # Python 3.11+
    root = Path(__file__).resolve().parent.parent
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    package_dir = config["tool"]["setuptools"].get("package-dir", {})
    assert package_dir == {"": "."}, package_dir
    assert config["tool"]["setuptools"]["packages"]["find"]["include"] == ["bpe_fast*"]
    packages = [p.parent for p in (root / "bpe_fast").rglob("__init__.py")]
    assert root / "bpe_fast" / "formats" in packages          # each package in its own name's folder
