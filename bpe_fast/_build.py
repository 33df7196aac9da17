"""A source checkout whose compiled extensions are older than their Cython sources refuses to import.

After a .pyx or .pxd is edited (or pulled, or checked out), the .so built before keeps running
the old code without a sign: tests then pass or fail for reasons that are not in the source.
Only a source checkout is checked (setup.py and pyproject.toml beside the package folder): an
installed wheel's files carry whatever times the installer gave them. The usual case costs a
few stat calls; the Cython files are read only when some .pxd is newer than an extension, to
tell a .pxd the extension cimports (stale) from one it does not (Cython rebuilds only the
modules that cimport an edited .pxd, so a neighbour's older .so is not stale).
"""
from __future__ import annotations

import re
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

from .errors import StaleBuildError

PACKAGE = Path(__file__).resolve().parent
REBUILD = "python setup.py build_ext --inplace"
REINSTALL = 'pip install -e ".[dev]"'
# "from X cimport a, (b,\n c)" and "cimport X.y as z, w"; backslash continuations are joined first.
_CIMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+cimport[ \t]+(\([^)]*\)|[^\n]*)|cimport[ \t]+([^\n]+))",
                      re.M)


def check_extensions_are_fresh(package: Path = PACKAGE) -> None:
    """Raise StaleBuildError if ``package`` is a source checkout with a stale extension."""
    if not is_source_checkout(package):
        return
    stale = stale_extensions(package)
    if stale:
        raise _error(stale, package.parent)


def is_source_checkout(package: Path) -> bool:
    root = package.parent
    if root.name in ("site-packages", "dist-packages"):     # whatever else was installed beside it
        return False
    return (root / "setup.py").is_file() and (root / "pyproject.toml").is_file()


def stale_extensions(package: Path) -> list[tuple[str, Path, Path]]:
    """(module, extension, the newer source) for each extension built in place that is older than
    its .pyx or than a .pxd it cimports, directly or through another .pxd."""
    sources = [p for p in package.rglob("*") if p.suffix in (".pyx", ".pxd")]
    pxd_times = {p: p.stat().st_mtime_ns for p in sources if p.suffix == ".pxd"}
    stale = []
    for pyx in sorted(p for p in sources if p.suffix == ".pyx"):
        extension = built_extension(pyx)
        if extension is None:            # not built in place: importing it will say so itself
            continue
        built = extension.stat().st_mtime_ns
        newer = [pyx] if pyx.stat().st_mtime_ns > built else []
        newer_pxds = [p for p, t in sorted(pxd_times.items()) if t > built]
        if not newer and newer_pxds:
            needed = cimported_pxds(pyx, package)
            newer = [p for p in newer_pxds if p in needed]
        if newer:
            stale.append((module_name(pyx, package), extension, newer[0]))
    return stale


def built_extension(pyx: Path) -> Path | None:
    """The compiled module this Python would import for ``pyx``, when it sits beside it."""
    for suffix in EXTENSION_SUFFIXES:              # in the order the import system tries them
        candidate = pyx.with_name(pyx.stem + suffix)
        if candidate.is_file():
            return candidate
    return None


def cimported_pxds(pyx: Path, package: Path) -> set[Path]:
    """The package's .pxd files a .pyx depends on: its own .pxd and every one it cimports,
    followed through the .pxd files themselves."""
    own = pyx.with_suffix(".pxd")
    found = {own} if own.is_file() else set()
    todo = [pyx, *found]
    while todo:
        source = todo.pop()
        for target in cimport_targets(source.read_text(encoding="utf-8")):
            pxd = pxd_path(target, source, package)
            if pxd is not None and pxd not in found:
                found.add(pxd)
                todo.append(pxd)
    return found


def cimport_targets(text: str) -> list[str]:
    """Module names a Cython file cimports, as written (".x" for relative ones). For "from P
    cimport name", P.name is listed too: the name may be a module (``from . cimport _scan``)."""
    targets = []
    for m in _CIMPORT.finditer(text.replace("\\\n", " ")):
        if m.group(3) is not None:
            targets += _names(m.group(3))
            continue
        base = m.group(1)
        targets.append(base)
        joiner = "" if base.endswith(".") else "."
        targets += [base + joiner + name for name in _names(m.group(2))]
    return targets


def _names(listed: str) -> list[str]:
    listed = re.sub(r"#[^\n]*", "", listed).strip().strip("()")
    return [item.split()[0] for item in listed.split(",") if item.strip()]


def pxd_path(target: str, source: Path, package: Path) -> Path | None:
    """The .pxd of this package that ``target`` names, seen from ``source``; None if none."""
    dots = len(target) - len(target.lstrip("."))
    parts = [p for p in target.lstrip(".").split(".") if p]
    if dots:
        base = source.parent
        for _ in range(dots - 1):
            base = base.parent
    elif parts and parts[0] == package.name:
        base = package.parent
    else:
        return None                      # libc, numpy, cython...: not ours
    if not parts:
        return None
    pxd = base.joinpath(*parts[:-1], parts[-1] + ".pxd")
    return pxd if pxd.is_file() else None


def module_name(pyx: Path, package: Path) -> str:
    return ".".join(pyx.relative_to(package.parent).with_suffix("").parts)


def _error(stale: list[tuple[str, Path, Path]], root: Path) -> StaleBuildError:
    lines = [f"  {name}: {source.relative_to(root)} is newer than {ext.name}" for name, ext, source in stale]
    message = (f"stale compiled extensions in the source checkout {root} (older than their Cython sources):\n"
               + "\n".join(lines)
               + f"\nThey would run the old code. Rebuild them: cd {root} && {REBUILD} "
                 f"(or run the install command again: {REINSTALL})")
    error = StaleBuildError(message)
    error.name, error.path = stale[0][0], str(stale[0][1])      # as ImportError names what failed
    return error
