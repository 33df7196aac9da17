"""Packaging like a real library: one version, stubs for the Cython modules, extras whose absence
is one line naming the extra, a license, no generated C++ in the wheel."""
from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bpe_fast
from bpe_fast.errors import MissingExtraError

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "bpe_fast"
CYTHON_MODULES = sorted(p.stem for p in PACKAGE.glob("*.pyx"))


def pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def public_names_of_pyx(path: Path) -> tuple[set[str], dict[str, set[str]]]:
    """Module-level functions, classes and constants a .pyx gives Python, and each class's methods."""
    text = path.read_text(encoding="utf-8")
    names, methods, current = set(), {}, None
    for line in text.splitlines():
        top = re.match(r"(?:cdef class|class|def|cpdef) (\w+)", line)
        if top:
            current = top.group(1) if "class" in line.split()[0:2] and not line.rstrip().endswith(top.group(1)) else None
            if not top.group(1).startswith("_"):
                names.add(top.group(1))
                if current:
                    methods[current] = set()
            continue
        constant = re.match(r"([A-Z][A-Z0-9_]*(?:, [A-Z][A-Z0-9_]*)*) = ", line)
        if constant:
            names.update(constant.group(1).split(", "))
            current = None
            continue
        method = re.match(r"    (?:def|cpdef) (\w+)", line)
        if method and current in methods and not method.group(1).startswith("_"):
            methods[current].add(method.group(1))
        elif line and not line[0].isspace():
            current = None
    return names, methods


def names_of_pyi(path: Path) -> tuple[set[str], dict[str, set[str]]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names, methods = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            methods[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        if isinstance(node, (ast.AnnAssign, ast.Assign)):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names, methods


@pytest.mark.parametrize("module", CYTHON_MODULES)
def test_every_cython_module_has_a_stub_naming_all_it_gives_python(module):
    stub = PACKAGE / f"{module}.pyi"
    assert stub.is_file(), f"{stub.name} is missing"
    names, methods = public_names_of_pyx(PACKAGE / f"{module}.pyx")
    stub_names, stub_methods = names_of_pyi(stub)
    assert names <= stub_names, f"{stub.name} lacks {sorted(names - stub_names)}"
    for cls, defined in methods.items():
        assert defined <= stub_methods.get(cls, set()), f"{stub.name}: {cls} lacks {sorted(defined - stub_methods[cls])}"


def test_the_package_is_typed_and_ships_its_stubs():
    assert (PACKAGE / "py.typed").is_file()
    data = pyproject()["tool"]["setuptools"]
    assert {"*.pyi", "py.typed"} <= set(data["package-data"]["*"])
    assert "*.cpp" in data["exclude-package-data"]["*"]


def test_one_version_everywhere():
    from bpe_fast._version import __version__
    assert bpe_fast.__version__ == __version__
    assert pyproject()["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "bpe_fast._version.__version__"}
    assert importlib.metadata.version("bpe_fast") == __version__, \
        "installed metadata differs from bpe_fast/_version.py: reinstall (pip install -e .)"
    done = subprocess.run([sys.executable, "-m", "bpe_fast", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == f"bpe-fast {__version__}"


def test_extras_cover_every_optional_package_and_dev_takes_them_all():
    project = pyproject()["project"]
    extras = project["optional-dependencies"]
    expected = {"tiktoken": "tiktoken", "plot": "matplotlib", "profile": "line_profiler", "dask": "dask",
                "parquet": "pyarrow", "zstd": "zstandard", "workshop": "sentencepiece"}
    for extra, package in expected.items():
        assert any(req.startswith(package) for req in extras[extra]), f"[{extra}] should install {package}"
    dev_all = next(req for req in extras["dev"] if req.startswith("bpe_fast["))
    assert set(dev_all[len("bpe_fast["):-1].split(",")) == set(expected)
    assert not {"tiktoken", "matplotlib", "line_profiler"} & {re.split(r"[<>=\[]", d)[0] for d in project["dependencies"]}


def test_license_file_matches_the_metadata():
    project = pyproject()["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


@pytest.mark.parametrize("missing, call, extra", [
    ("matplotlib", lambda: __import__("bpe_fast.ladder.harness", fromlist=["draw"]).draw(None), "plot"),
    ("line_profiler", lambda: __import__("bpe_fast.ladder.harness", fromlist=["x"]).line_profile(None, [], 1), "profile"),
    ("tiktoken", lambda: bpe_fast.Tokenizer([]).to_tiktoken(), "tiktoken"),
    ("zstandard", lambda: bpe_fast.count(["x.txt.zst"]), "zstd"),
])
def test_a_missing_optional_package_names_its_extra(missing, call, extra, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.txt.zst").write_bytes(b"\x28\xb5\x2f\xfd")
    monkeypatch.setitem(sys.modules, missing, None)           # "import missing" now fails
    with pytest.raises(MissingExtraError, match=re.escape(f"pip install 'bpe_fast[{extra}]'")):
        call()


def test_cli_names_the_extra_for_a_missing_package(monkeypatch, capsys):
    from bpe_fast.cli import main
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["profile", "--merges", "1", "--plot", "ladder.png"]) != 0
    assert "pip install 'bpe_fast[plot]'" in capsys.readouterr().err
