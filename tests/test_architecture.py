"""The house rules that keep bpe_fast easy to walk through, checked on the source itself.

Run as a script, this prints the import graph of bpe_fast: ``python tests/test_architecture.py``.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "bpe_fast"
SOURCE_SUFFIXES = (".py", ".pyx", ".pxd")
# Cython's imports, read from the text (Cython is not Python, so ast cannot parse it):
# "from X import a, b", "from X cimport (a,\n b)", and "import X" / "cimport X.y as z, w".
_CYTHON_FROM = re.compile(r"^[ \t]*from[ \t]+(\.+[\w.]*|[\w.]+)[ \t]+c?import[ \t]+(\([^)]*\)|[^\n]*)", re.M)
_CYTHON_IMPORT = re.compile(r"^[ \t]*c?import[ \t]+([^\n]+)", re.M)


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(package: Path = PACKAGE) -> dict[str, list[Path]]:
    """Every module and all of its files: a Cython module is often a .pyx and a .pxd, and both import."""
    found: dict[str, list[Path]] = {}
    for path in sorted(p for p in package.rglob("*") if p.suffix in SOURCE_SUFFIXES):
        found.setdefault(module_name(path, package), []).append(path)
    return found


def _absolute(base: str, level: int, target: str | None, this: str, is_package: bool) -> str:
    if level == 0:
        return base
    package = this if is_package else this.rpartition(".")[0]
    for _ in range(level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{target}" if target else package


def _names(listed: str) -> list[str]:
    """"(a, b as c,\n d)" -> ["a", "b", "d"]: the names imported, without aliases or comments."""
    listed = re.sub(r"#[^\n]*", "", listed).strip("()")
    return [item.split()[0] for item in listed.split(",") if item.strip()]


def _cython_imports(text: str) -> list[tuple[int, str, list[str]]]:
    """(dots, module, names) for each import of a .pyx/.pxd; names is [] for "import X"."""
    text = re.sub(r"\\\n", " ", text)                   # backslash continuations make one line
    found = []
    for m in _CYTHON_FROM.finditer(text):
        dots = len(m.group(1)) - len(m.group(1).lstrip("."))
        found.append((dots, m.group(1).lstrip("."), _names(m.group(2))))
    for m in _CYTHON_IMPORT.finditer(text):
        found += [(0, name, []) for name in _names(m.group(1))]
    return found


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The bpe_fast modules the file ``path`` of module ``name`` imports anywhere in its text,
    functions included."""
    is_package = path.stem == "__init__"
    found: set[str] = set()

    def add(target: str, names: list[str]) -> None:
        for n in names:                      # "from . import formats" imports a module
            if f"{target}.{n}" in known:
                found.add(f"{target}.{n}")
                names = [x for x in names if x != n]
        if names:                            # names that are no module: from the module itself
            found.add(target)

    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                add(_absolute(node.module or "", node.level, node.module, name, is_package),
                    [a.name for a in node.names])
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module" \
                    and node.args and isinstance(node.args[0], ast.Constant):
                found.add(str(node.args[0].value))
    else:
        for dots, target, names in _cython_imports(text):
            if names:
                add(_absolute(target, dots, target or None, name, is_package), names)
            else:
                found.add(target)
    return {f for f in found if f in known and f != name}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    mods = modules(package)
    known = set(mods)
    # Edges into the top-level package are its public face (bpe_fast/__init__ re-exports), not
    # a dependency of one stage on another; no module inside bpe_fast imports from it.
    top = package.name
    return {name: set().union(*(imports_of(name, path, known) for path in paths)) - {top}
            for name, paths in sorted(mods.items())}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    assert "bpe_fast.tokenizer" in graph["bpe_fast.registry"]          # the graph sees real edges
    assert "bpe_fast.formats" in graph["bpe_fast.tokenizer"]
    assert {"bpe_fast.formats.tiktoken", "bpe_fast.formats._common"} <= graph["bpe_fast.formats"]
    assert "bpe_fast.formats._common" in graph["bpe_fast.formats.tiktoken"]
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_the_graph_sees_cimport_edges_from_every_file_of_a_module():
    graph = import_graph()
    scan, split, pretok = "bpe_fast.pretokenize._scan", "bpe_fast.pretokenize._split", "bpe_fast.pretokenize._pretok"
    assert {scan, "bpe_fast.core._hash", "bpe_fast.core._text"} <= graph["bpe_fast.encoding._encode"]
    assert scan in graph[pretok]                        # from _pretok.pyx, beside _pretok.pxd
    assert {split, pretok} <= graph["bpe_fast.counting._table"]
    assert scan in graph[split]                         # a .pxd of its own, no .pyx
    assert "bpe_fast.core._pairmap" in graph["bpe_fast.training._kernel"]   # a cimport list continued with a backslash
    assert "bpe_fast.workshop.ladder.v1_dict" in graph["bpe_fast.workshop.ladder._v3_cython"]
    assert [p.suffix for p in modules()["bpe_fast.pretokenize._pretok"]] == [".pxd", ".pyx"]


def write_package(root: Path, files: dict[str, str]) -> Path:
    package = root / "bpe_fast"
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text, encoding="utf-8")
    return package


def test_every_cimport_form_is_an_edge_and_a_cimport_cycle_is_found(tmp_path):
    package = write_package(tmp_path, {
        "__init__.py": "",
        "_a.pyx": "from ._b cimport (first,\n    second as s,  # why\n    third)\nimport numpy as np\n",
        "_a.pxd": "cimport bpe_fast._c as c, cython\n",
        "_b.pxd": "from . cimport _d\n",
        "_c.pxd": "from libc.stdint cimport uint8_t\n",
        "_d.pxd": "from bpe_fast._e cimport \\\n    one, two\n",
        "_e.pxd": "from ._a cimport back\n",
        "sub/__init__.py": "",
        "sub/_f.pyx": "from .._c cimport x\nfrom ..sub import nothing\n",
    })
    graph = import_graph(package)
    assert graph["bpe_fast._a"] == {"bpe_fast._b", "bpe_fast._c"}     # the .pyx's edge and the .pxd's
    assert graph["bpe_fast._b"] == {"bpe_fast._d"}
    assert graph["bpe_fast._c"] == set()
    assert graph["bpe_fast._d"] == {"bpe_fast._e"}
    assert graph["bpe_fast.sub._f"] == {"bpe_fast._c", "bpe_fast.sub"}
    assert find_cycle(graph) == ["bpe_fast._a", "bpe_fast._b", "bpe_fast._d", "bpe_fast._e", "bpe_fast._a"]


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


# The parts of bpe_fast, lowest first: a module imports only modules of its own part or of a
# lower layer (docs/architecture.md draws them); the leaves, at the bottom, may also import each
# other. A part is a folder (a stage) or a module at the package's root.
LAYERS = [
    {"errors", "arguments", "paths", "progress", "outputs", "bytelevel", "budget", "prebuilt", "_version", "_build",
     "core"},                                   # leaves any stage may use, and the shared native headers
    {"pretokenize"},                            # what a chunk is
    {"counting", "encoding"},                   # chunks counted into a table; the native encoder
    {"formats", "quality"},                     # files of a vocabulary; measuring tokenizers
    {"tokenizer"},
    {"registry", "prepare"},                    # bpe_fast.load; corpora encoded for a model's training
    {"training"},                               # the kernel, the pipeline, the variants
    {"workshop"},
    {"cli"},
    {"__main__", "_moved"},                     # python -m bpe_fast; the 0.2 paths
]


def part_of(module: str) -> str:
    return module.split(".")[1] if module.count(".") else module


def layer_of(module: str) -> int:
    part = part_of(module)
    found = [i for i, layer in enumerate(LAYERS) if part in layer]
    assert found, f"{module}: its part {part!r} has no layer in LAYERS"
    return found[0]


def test_every_module_imports_only_its_own_part_or_lower_layers():
    graph = import_graph()
    assert "bpe_fast.counting.corpus" in graph["bpe_fast.training.trainer"]      # real edges to check
    offenders = [f"{module} -> {target}" for module, targets in graph.items() if module != "bpe_fast"
                 for target in targets
                 if part_of(target) != part_of(module) and layer_of(target) >= max(1, layer_of(module))]
    assert not offenders, offenders


def test_the_layer_rule_catches_an_import_that_climbs():
    assert layer_of("bpe_fast.counting.workers") > layer_of("bpe_fast.pretokenize.splitter")
    assert layer_of("bpe_fast.training.trainer") > layer_of("bpe_fast.tokenizer")
    assert layer_of("bpe_fast.counting.workers") == layer_of("bpe_fast.encoding._encode")  # one layer: no edge


def test_formats_never_imports_the_tokenizer_and_the_core_never_imports_the_workshop_or_cli():
    graph = import_graph()
    wing = [m for m in graph if m == "bpe_fast.formats" or m.startswith("bpe_fast.formats.")]
    assert len(wing) >= 7                    # the package, _common and one module per format
    for module in wing:                      # not even through another module
        assert "bpe_fast.tokenizer" not in reachable(graph, module), module
    outside = ("bpe_fast.workshop", "bpe_fast.cli", "bpe_fast.__main__")
    assert "bpe_fast.workshop.ladder.cli" in graph["bpe_fast.cli"]        # the rule below has edges to catch
    assert "bpe_fast.training._kernel" in graph["bpe_fast.workshop.classic"]
    core = [m for m in graph if not m.startswith(outside)]
    for module in core:
        assert not {d for d in graph[module] if d.startswith(outside)}, module


def test_the_variants_wing_sits_above_the_tokenizer_and_formats_and_only_the_pipeline_asks_it():
    """bpe_fast/variants/ (one module per variant, and their table) builds on the plain stages:
    no stage below it reaches it (they ask it through formats.variant_parts, which it fills in),
    and only the pipeline (trainer, options), the CLI and the old names' thin modules import it."""
    graph = import_graph()
    variants = "bpe_fast.training.variants"
    wing = {m for m in graph if m == variants or m.startswith(variants + ".")}
    assert {f"{variants}.superbpe", f"{variants}.boundless", f"{variants}.picky"} <= wing
    for module in ("bpe_fast.tokenizer", "bpe_fast.formats", "bpe_fast.counting.workers", "bpe_fast.training.continued",
                   "bpe_fast.counting.wordtable", "bpe_fast.pretokenize.splitter"):
        assert not reachable(graph, module) & wing, module
    users = {m for m in graph if m not in wing and graph[m] & wing}
    assert users <= {"bpe_fast", "bpe_fast.training.trainer", "bpe_fast.cli.train", "bpe_fast.cli.parity"}, users


def test_counting_flows_one_way_into_training():
    """The trainer imports the counting stage (counting/corpus.py, counting/workers.py); counting
    never reaches back into the trainer or its options."""
    graph = import_graph()
    assert "bpe_fast.counting.corpus" in graph["bpe_fast.training.trainer"]
    for module in ("bpe_fast.counting.corpus", "bpe_fast.counting.workers"):
        assert not reachable(graph, module) & {"bpe_fast.training.trainer", "bpe_fast.training.options"}, module


def test_every_error_class_lives_in_errors_py():
    defined = {}
    for name, paths in modules().items():
        for path in paths:
            text = path.read_text(encoding="utf-8")
            for m in re.finditer(r"^class (\w+)\((\w*(Error|Exception|Warning)\w*)", text, re.M):
                defined[m.group(1)] = name
    assert defined and set(defined.values()) == {"bpe_fast.errors"}, defined
    import bpe_fast.errors as errors
    for cls in vars(errors).values():
        if isinstance(cls, type) and issubclass(cls, Exception) and not issubclass(cls, Warning):
            assert issubclass(cls, errors.BpeFastError), cls


def test_no_machine_specific_paths_in_the_repository():
    root = PACKAGE.parent
    pattern = re.compile(r"(?<![\w.])/(?:work|root|home|Users)/[\w.-]+")
    tracked = [p for d in ("bpe_fast", "benchmarks", "tests", "notebooks") for p in (root / d).rglob("*")
               if p.suffix in (".py", ".pyx", ".pxd", ".md", ".ipynb", ".toml")]
    tracked += [root / "README.md", root / "pyproject.toml", root / "setup.py"]
    offenders = [f"{p.relative_to(root)}: {m.group()}" for p in tracked if p.is_file()
                 for m in pattern.finditer(p.read_text(encoding="utf-8", errors="replace"))]
    assert not offenders, offenders



# -- Cython files: in their stage, short enough to read, each type named once ----------------------

MAX_CYTHON_LINES = 1200
# A type a .pyx/.pxd declares: "cdef [public|packed|extern] class|struct|cppclass|enum|union|fused
# Name", "ctypedef struct Name", "ctypedef some[type] Name" and "ctypedef void (*Name)(...)".
_CYTHON_TYPE = re.compile(r"^[ \t]*c(?:def|typedef)[ \t]+(?:(?:public|readonly|packed|extern)[ \t]+)*"
                          r"(?:class|struct|cppclass|enum|union|fused)[ \t]+(\w+)", re.M)
_CYTHON_ALIAS = re.compile(r"^[ \t]*ctypedef[ \t]+(?!(?:public|readonly|packed|extern|class|struct|cppclass"
                           r"|enum|union|fused)\b)([^\n#:]+)", re.M)


def cython_files(package: Path = PACKAGE) -> list[Path]:
    return sorted(p for p in package.rglob("*") if p.suffix in (".pyx", ".pxd"))


def cython_file_problems(package: Path = PACKAGE) -> list[str]:
    """Cython files in the package's root (each belongs in the stage folder of its Python) and
    Cython files over MAX_CYTHON_LINES lines."""
    problems = [f"{p.relative_to(package.parent)}: in the package's root" for p in cython_files(package)
                if p.parent == package]
    for path in cython_files(package):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_CYTHON_LINES:
            problems.append(f"{path.relative_to(package.parent)}: {lines} lines")
    return problems


def _alias_name(declaration: str) -> str:
    """The name a ctypedef gives: "void (*job_fn)(void*) nogil" -> job_fn, "pair[a, b] Entry" -> Entry."""
    pointer = re.search(r"\(\s*\*\s*(\w+)\s*\)", declaration)
    return pointer.group(1) if pointer else re.findall(r"\w+", declaration)[-1]


def cython_types(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each type name the .pyx/.pxd files declare -> the modules declaring it (a module's .pyx and
    .pxd, or a forward declaration and its class, are one module)."""
    found: dict[str, set[str]] = {}
    for path in cython_files(package):
        text = path.read_text(encoding="utf-8")
        names = [m.group(1) for m in _CYTHON_TYPE.finditer(text)]
        names += [_alias_name(m.group(1)) for m in _CYTHON_ALIAS.finditer(text)]
        for name in names:
            found.setdefault(name, set()).add(module_name(path, package))
    return found


def shared_type_names(package: Path = PACKAGE) -> dict[str, list[str]]:
    return {name: sorted(where) for name, where in cython_types(package).items() if len(where) > 1}


def test_cython_files_sit_in_stage_folders_and_none_is_over_1200_lines():
    assert len(cython_files()) > 20, PACKAGE
    problems = cython_file_problems()
    assert not problems, problems


def test_no_two_cython_types_share_a_name():
    assert len(cython_types()) > 30             # the reader finds the package's types
    shared = shared_type_names()
    assert not shared, shared


def test_the_cython_guards_catch_a_file_in_the_root_a_long_file_and_each_kind_of_shared_name(tmp_path):
    package = write_package(tmp_path, {
        "_flat.pyx": "cdef class Flat:\n    pass\n",
        "stage/_long.pxd": "# a comment\n" * (MAX_CYTHON_LINES + 1),
        "stage/_one.pxd": ("cdef class Worker\ncdef struct Slot:\n    int x\ncdef cppclass Pool \"BpePool\":\n"
                           "    pass\nctypedef pair[int, int] Entry\nctypedef void (*job_fn)(void*) nogil\n"
                           "cdef extern from *:\n    ctypedef struct classes:\n        int a\n"),
        "stage/_one.pyx": "cdef class Worker:\n    pass\n",      # the same module's class: not shared
        "other/_two.pyx": ("cdef packed struct Slot:\n    int y\ncdef class Pool:\n    pass\n"
                           "ctypedef long Entry\nctypedef int (*job_fn)(int)\ncdef enum classes:\n    A\n"),
    })
    assert cython_file_problems(package) == ["bpe_fast/_flat.pyx: in the package's root",
                                             f"bpe_fast/stage/_long.pxd: {MAX_CYTHON_LINES + 1} lines"]
    two = ["bpe_fast.other._two", "bpe_fast.stage._one"]
    assert shared_type_names(package) == {"Slot": two, "Pool": two, "Entry": two, "job_fn": two, "classes": two}


# -- tests mirror the package -----------------------------------------------------------------------

TESTS = PACKAGE.parent / "tests"
TEST_FILE_LIMIT = 600
# Modules with nothing of their own to test: the entry point of python -m, the version string.
NO_TEST_FILE = {"bpe_fast.__main__", "bpe_fast._version"}


def holds_code(init: Path) -> bool:
    """An __init__.py with more than its docstring (a package's code, not only its description)."""
    body = ast.parse(init.read_text(encoding="utf-8")).body
    return bool(body[1:] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                else body)


def mirrored_test_file(path: Path, package: Path = PACKAGE, tests: Path = TESTS) -> Path | None:
    """The test file a module's file must have (tests/<its folder>/test_<name>.py; a package's
    __init__.py: test_<the package's name>.py; a kernel _x.pyx: test_x.py), None for none."""
    relative = path.relative_to(package)
    if module_name(path, package) in NO_TEST_FILE or path.suffix == ".pxd":
        return None
    if path.name == "__init__.py":
        if not holds_code(path):
            return None
        folder = relative.parent
        return tests / folder / f"test_{folder.name if folder.parts else package.name}.py"
    return tests / relative.parent / f"test_{path.stem.lstrip('_')}.py"


def test_every_module_has_a_test_file_at_its_mirrored_path():
    sources = sorted(p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".pyx") and "__pycache__" not in p.parts)
    wanted = {p: mirrored_test_file(p) for p in sources}
    assert wanted[PACKAGE / "training" / "_kernel.pyx"] == TESTS / "training" / "test_kernel.py"
    assert wanted[PACKAGE / "formats" / "__init__.py"] == TESTS / "formats" / "test_formats.py"
    missing = [f"{p.relative_to(PACKAGE.parent)} -> {t.relative_to(PACKAGE.parent)}"
               for p, t in wanted.items() if t is not None and not t.is_file()]
    assert not missing, missing


def test_every_test_folder_is_a_package_and_no_test_file_is_long():
    folders = [d for d in TESTS.rglob("*") if d.is_dir() and d.name not in ("__pycache__", "data")
               and "data" not in d.relative_to(TESTS).parts]
    assert not [d for d in folders if not (d / "__init__.py").is_file()]
    long = [f"{p.relative_to(TESTS)}: {n}" for p in TESTS.rglob("test_*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > TEST_FILE_LIMIT]
    assert not long, long


def test_the_test_file_rule_on_a_small_package(tmp_path):
    package = write_package(tmp_path, {"__init__.py": '"""doc"""\nfrom .a import x\n', "a.py": "x = 1\n",
                                       "stage/__init__.py": '"""Only a description."""\n',
                                       "stage/_kernel.pyx": "", "stage/_kernel.pxd": "", "stage/work.py": "",
                                       "table/__init__.py": "TABLE = {}\n", "__main__.py": ""})
    tests = tmp_path / "tests"
    found = {p.relative_to(package).as_posix(): mirrored_test_file(p, package, tests) for p in package.rglob("*")
             if p.suffix in (".py", ".pyx", ".pxd")}
    assert found == {"__init__.py": tests / "test_bpe_fast.py", "a.py": tests / "test_a.py",
                     "stage/__init__.py": None, "stage/_kernel.pyx": tests / "stage" / "test_kernel.py",
                     "stage/_kernel.pxd": None, "stage/work.py": tests / "stage" / "test_work.py",
                     "table/__init__.py": tests / "table" / "test_table.py", "__main__.py": None}


if __name__ == "__main__":
    graph = import_graph()
    for module, deps in graph.items():
        print(f"{module} -> {', '.join(sorted(deps)) or '(nothing in bpe_fast)'}")
    cycle = find_cycle(graph)
    print("cycle: " + " -> ".join(cycle) if cycle else "no cycle")
    sys.exit(1 if cycle else 0)
