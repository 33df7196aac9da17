"""The house rules that keep bpe_fast easy to walk through, checked on the source itself.

Run as a script, this prints the import graph of bpe_fast: ``python tests/test_architecture.py``.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "bpe_fast"
_PYX_IMPORT = re.compile(r"^\s*from\s+(\.+[\w.]*|bpe_fast[\w.]*)\s+c?import\s+\(?([\w\s,]+)", re.M)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    files = [p for p in PACKAGE.rglob("*") if p.suffix in (".py", ".pyx", ".pxd")]
    return {module_name(p): p for p in files}


def _absolute(base: str, level: int, target: str | None, this: str, is_package: bool) -> str:
    if level == 0:
        return base
    package = this if is_package else this.rpartition(".")[0]
    for _ in range(level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{target}" if target else package


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The bpe_fast modules ``name`` imports anywhere in its text, functions included."""
    is_package = path.stem == "__init__"
    found: set[str] = set()

    def add(target: str, names: list[str]) -> None:
        for n in names:                      # "from . import formats" imports a module
            if f"{target}.{n}" in known:
                found.add(f"{target}.{n}")
                names = [x for x in names if x != n]
        if names or target not in found:
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
                found.add(node.args[0].value)
    else:
        for m in _PYX_IMPORT.finditer(text):
            dots = len(m.group(1)) - len(m.group(1).lstrip("."))
            target = m.group(1).lstrip(".")
            add(_absolute(target, dots, target or None, name, is_package),
                [n.strip() for n in m.group(2).split(",") if n.strip()])
    return {f for f in found if f in known and f != name}


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    # Edges into the top-level package are its public face (bpe_fast/__init__ re-exports), not
    # a dependency of one stage on another; no module inside bpe_fast imports from it.
    return {name: imports_of(name, path, known) - {"bpe_fast"} for name, path in sorted(mods.items())}


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


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    assert "bpe_fast.tokenizer" in graph["bpe_fast.registry"]          # the graph sees real edges
    assert "bpe_fast.formats" in graph["bpe_fast.tokenizer"]
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_formats_never_imports_the_tokenizer_and_the_core_never_imports_the_workshop_or_cli():
    graph = import_graph()
    assert "bpe_fast.tokenizer" not in graph["bpe_fast.formats"]
    outside = ("bpe_fast.workshop", "bpe_fast.cli", "bpe_fast.__main__")
    assert "bpe_fast.workshop.ladder.cli" in graph["bpe_fast.cli"]        # the rule below has edges to catch
    assert "bpe_fast._kernel" in graph["bpe_fast.workshop.classic"]
    core = [m for m in graph if not m.startswith(outside)]
    for module in core:
        assert not {d for d in graph[module] if d.startswith(outside)}, module


def test_every_error_class_lives_in_errors_py():
    defined = {}
    for name, path in modules().items():
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


if __name__ == "__main__":
    graph = import_graph()
    for module, deps in graph.items():
        print(f"{module} -> {', '.join(sorted(deps)) or '(nothing in bpe_fast)'}")
    cycle = find_cycle(graph)
    print("cycle: " + " -> ".join(cycle) if cycle else "no cycle")
    sys.exit(1 if cycle else 0)
