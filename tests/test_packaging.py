"""Packaging like a real library: one version, stubs for the Cython modules, extras whose absence
is one line naming the extra, a license, no generated C++ in the wheel."""
from __future__ import annotations

import ast
import importlib
import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bpe_fast
from bpe_fast.errors import MissingExtraError

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "bpe_fast"
# Compiled modules by their path in the package: "encoding/_encode" (the workshop's rung, built for
# line_profiler, has no stub: it is the ladder's, read by nobody but its harness).
CYTHON_MODULES = sorted(p.relative_to(PACKAGE).with_suffix("").as_posix() for p in PACKAGE.rglob("*.pyx")
                        if "workshop" not in p.parts)


def pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11's tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def public_names_of_pyx(path: Path) -> tuple[set[str], dict[str, set[str]]]:
    """Module-level functions, classes and constants a .pyx gives Python, and each class's methods."""
    text = path.read_text(encoding="utf-8")
    names: set[str] = set()
    methods: dict[str, set[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        top = re.match(r"(?:cdef class|class|def|cpdef) (\w+)", line)
        if top:
            is_class = "class" in line.split()[0:2] and not line.rstrip().endswith(top.group(1))
            current = top.group(1) if is_class else None
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
        stubbed = stub_methods.get(cls, set())
        assert defined <= stubbed, f"{stub.name}: {cls} lacks {sorted(defined - stubbed)}"


@pytest.mark.parametrize("module", CYTHON_MODULES)
def test_every_name_a_stub_promises_exists_at_runtime(module):
    """The reverse of the test above: a stub must not name what the compiled module lacks (type
    aliases that only the stub has are private, so nobody imports them from the module)."""
    runtime = importlib.import_module("bpe_fast." + module.replace("/", "."))
    names, methods = names_of_pyi(PACKAGE / f"{module}.pyi")
    missing = sorted(n for n in names if not n.startswith("_") and not hasattr(runtime, n))
    assert not missing, f"{module}.pyi names {missing}, which bpe_fast.{module} does not have"
    for cls, defined in methods.items():
        absent = sorted(m for m in defined if not hasattr(getattr(runtime, cls), m))
        assert not absent, f"{module}.pyi: {cls} has no {absent} at runtime"


def test_the_package_is_typed_and_ships_its_stubs():
    assert (PACKAGE / "py.typed").is_file()
    data = pyproject()["tool"]["setuptools"]
    assert {"*.pyi", "py.typed"} <= set(data["package-data"]["*"])
    assert "*.cpp" in data["exclude-package-data"]["*"]


def test_every_cython_source_is_in_a_package_that_ships_it():
    """The wheel and sdist rebuild from .pyx/.pxd: each must sit in a package (an __init__.py
    beside it, all the way up) that setuptools finds, and the package-data globs must take it."""
    data = pyproject()["tool"]["setuptools"]
    assert {"*.pyx", "*.pxd"} <= set(data["package-data"]["*"])
    assert data["packages"]["find"]["include"] == ["bpe_fast*"]
    sources = [p for p in PACKAGE.rglob("*") if p.suffix in (".pyx", ".pxd")]
    assert PACKAGE / "workshop" / "ladder" / "_v3_cython.pyx" in sources
    for source in sources:
        for folder in list(source.relative_to(ROOT).parents)[:-1]:
            assert (ROOT / folder / "__init__.py").is_file(), f"{source}: {folder} is not a package"


def test_one_version_everywhere():
    from bpe_fast._version import __version__
    assert bpe_fast.__version__ == __version__
    assert pyproject()["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "bpe_fast._version.__version__"}
    assert importlib.metadata.version("bpe_fast") == __version__, \
        "installed metadata differs from bpe_fast/_version.py: reinstall (pip install -e .)"
    done = subprocess.run([sys.executable, "-m", "bpe_fast", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == f"bpe-fast {__version__}"


def test_the_installed_command_prints_its_version():
    script = Path(sys.executable).with_name("bpe-fast")
    if not script.exists():
        pytest.skip(f"no bpe-fast script beside {sys.executable} (package not installed in this environment)")
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"bpe-fast {bpe_fast.__version__}\n", "")


def test_building_needs_a_setuptools_that_reads_the_license_expression():
    """license = "MIT" (PEP 639) needs setuptools>=77: the build system and the dev extra ask for it,
    and ``python setup.py build_ext --inplace`` with an older one says so in one line."""
    project = pyproject()
    assert "setuptools>=77" in project["build-system"]["requires"]
    assert "setuptools>=77" in project["project"]["optional-dependencies"]["dev"]


def test_setup_py_refuses_an_old_setuptools_in_one_line(tmp_path):
    fake = tmp_path / "setuptools"
    fake.mkdir()
    (fake / "__init__.py").write_text('__version__ = "65.5.0"\n')
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "bpe_fast needs setuptools>=77 to build in place (this one is 65.5.0): pip install -U 'setuptools>=77'"]


def test_the_sdist_leaves_out_the_generated_cpp_and_carries_the_changelog_and_docs():
    manifest = (ROOT / "MANIFEST.in").read_text(encoding="utf-8").splitlines()
    assert "global-exclude *.cpp" in manifest and "include CHANGELOG.md" in manifest
    assert "include CONTRIBUTING.md" in manifest and "recursive-include docs *.md" in manifest   # the README links them
    assert (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").startswith("# Changelog")
    assert f"## [{bpe_fast.__version__}]" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_extras_cover_every_optional_package_and_dev_takes_them_all():
    project = pyproject()["project"]
    extras = project["optional-dependencies"]
    expected = {"tiktoken": "tiktoken", "plot": "matplotlib", "profile": "line_profiler", "dask": "dask",
                "parquet": "pyarrow", "zstd": "zstandard", "workshop": "sentencepiece", "transformers": "transformers"}
    for extra, package in expected.items():
        assert any(req.startswith(package) for req in extras[extra]), f"[{extra}] should install {package}"
    dev_all = next(req for req in extras["dev"] if req.startswith("bpe_fast["))
    assert set(dev_all[len("bpe_fast["):-1].split(",")) == set(expected)
    required = {re.split(r"[<>=\[]", d)[0] for d in project["dependencies"]}
    assert not {"tiktoken", "matplotlib", "line_profiler"} & required


def test_license_file_matches_the_metadata():
    project = pyproject()["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


def ladder_harness():
    return importlib.import_module("bpe_fast.workshop.ladder.harness")


@pytest.mark.parametrize("missing, call, extra", [
    ("matplotlib", lambda: ladder_harness().draw(None), "plot"),
    ("line_profiler", lambda: ladder_harness().line_profile(None, [], 1), "profile"),
    ("tiktoken", lambda: bpe_fast.Tokenizer([]).to_tiktoken(), "tiktoken"),
    ("transformers", lambda: bpe_fast.Tokenizer([]).to_transformers(), "transformers"),
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


def test_an_installed_package_that_fails_to_import_is_not_called_missing(tmp_path, monkeypatch):
    (tmp_path / "zstandard.py").write_text("import numpy_nonexistent_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "zstandard", raising=False)
    from bpe_fast.errors import require
    with pytest.raises(MissingExtraError, match="zstandard is installed but cannot be imported"):
        require("zstandard", "zstd", "reading x.zst")


def test_train_plot_checks_matplotlib_before_training(monkeypatch, capsys, tmp_path):
    from bpe_fast.cli import main
    from .conftest import SMALL_CORPUS
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "t.json"
    assert main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "-o", str(out), "--eval", str(SMALL_CORPUS),
                 "--plot", str(tmp_path / "p.png"), "--quiet"]) != 0
    assert "pip install 'bpe_fast[plot]'" in capsys.readouterr().err and not out.exists()
