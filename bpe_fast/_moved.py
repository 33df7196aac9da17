"""Module paths from before the stages had folders of their own (0.2: ``bpe_fast.trainer``,
``bpe_fast.wordtable``, ...), still importable: each gives the module that now holds its code,
with a DeprecationWarning naming the new path. ``bpe_fast`` installs the finder (``install``)
when it is imported; nothing inside bpe_fast imports an old path.

An old path is a module of its own whose attributes are the new module's (PEP 562's
``__getattr__``), so ``from bpe_fast.trainer import train`` and ``bpe_fast.trainer.train`` work;
patching an attribute there does not reach the new module (patch the new path).

A few names moved out of a module that stayed (``MOVED_NAMES``: ``from bpe_fast.tokenizer import
PickyTokenizer``): ``install`` gives that module a ``__getattr__`` that finds them where they
are now, with a DeprecationWarning, so that the module itself need not import them.
"""
from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings

# old path -> new path (the three stages that took an old module's name kept it as a package:
# bpe_fast.pretokenize, bpe_fast.counting and bpe_fast.quality; their old modules are
# pretokenize.splitter, counting.workers and quality.report)
MOVED = {
    "bpe_fast.patterns": "bpe_fast.pretokenize.patterns",
    "bpe_fast.inputs": "bpe_fast.counting.inputs",
    "bpe_fast.count_corpus": "bpe_fast.counting.corpus",
    "bpe_fast.distributed": "bpe_fast.counting.distributed",
    "bpe_fast.wordtable": "bpe_fast.counting.wordtable",
    "bpe_fast.trainer": "bpe_fast.training.trainer",
    "bpe_fast.options": "bpe_fast.training.options",
    "bpe_fast.continued": "bpe_fast.training.continued",
    "bpe_fast.reference": "bpe_fast.training.reference",
    "bpe_fast.variants": "bpe_fast.training.variants",
    "bpe_fast.variants.superbpe": "bpe_fast.training.variants.superbpe",
    "bpe_fast.variants.boundless": "bpe_fast.training.variants.boundless",
    "bpe_fast.variants.picky": "bpe_fast.training.variants.picky",
    "bpe_fast.variants.parity": "bpe_fast.training.variants.parity",
    "bpe_fast.variants.parity_reference": "bpe_fast.training.variants.parity_reference",
    "bpe_fast.boundless": "bpe_fast.training.variants.boundless",
    "bpe_fast.picky": "bpe_fast.training.variants.picky",
    "bpe_fast.encode_corpus": "bpe_fast.prepare.corpus",
    "bpe_fast.tiktoken_surface": "bpe_fast.encoding.tiktoken_surface",
    "bpe_fast.visualize": "bpe_fast.encoding.visualize",
    "bpe_fast.named": "bpe_fast.formats._named",
    "bpe_fast.hub": "bpe_fast.formats._hub",
    "bpe_fast.cli_tools": "bpe_fast.cli.tools",
    "bpe_fast.cli_eval": "bpe_fast.cli.evaluate",
}

# Names an old path held that now live in another module than its own new path: the variants'
# oracles, which moved beside their variants.
NAMES_MOVED = {
    "bpe_fast.reference": {
        **dict.fromkeys(("replay", "phase_one", "pretoken_units", "runs_of", "train_boundless_reference",
                         "encode_boundless_reference", "train_boundless_auto_reference"),
                        "bpe_fast.training.variants.boundless_reference"),
        **dict.fromkeys(("REMOVED", "token_counts", "expand", "replace_token", "train_picky_reference",
                         "encode_picky_reference", "picky_token_ids"),
                        "bpe_fast.training.variants.picky_reference"),
    },
}


# old module.name -> the module that holds the name now (the module stayed where it was)
MOVED_NAMES = {
    "bpe_fast.tokenizer.PickyTokenizer": "bpe_fast.training.variants.picky",
}


class _OldPath(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths of ``MOVED`` (and only those) and makes each a forwarding module."""

    def find_spec(self, name, path=None, target=None):
        return importlib.machinery.ModuleSpec(name, self) if name in MOVED else None

    def create_module(self, spec):
        new = MOVED[spec.name]
        warnings.warn(f"{spec.name} moved to {new}: import it from there (the old path goes in a later "
                      f"release)", DeprecationWarning, stacklevel=4)
        target = importlib.import_module(new)
        elsewhere = NAMES_MOVED.get(spec.name, {})
        module = types.ModuleType(spec.name, target.__doc__)

        def attribute(name: str):
            return getattr(importlib.import_module(elsewhere[name]) if name in elsewhere else target, name)
        module.__getattr__ = attribute                                 # type: ignore[method-assign]
        module.__dir__ = lambda: dir(target)                           # type: ignore[method-assign]
        if hasattr(target, "__path__"):
            module.__path__ = []                                       # a package: its old submodules resolve
        return module

    def exec_module(self, module) -> None:
        pass


def install() -> None:
    if not any(isinstance(finder, _OldPath) for finder in sys.meta_path):
        sys.meta_path.append(_OldPath())
    for module_name in {old.rpartition(".")[0] for old in MOVED_NAMES}:
        module = importlib.import_module(module_name)
        if "__getattr__" not in vars(module):
            module.__getattr__ = functools.partial(_moved_name, module_name)     # type: ignore[method-assign]


def _moved_name(module_name: str, name: str):
    """``module_name.name`` for a name of ``MOVED_NAMES``, from where it is now (with a warning)."""
    new = MOVED_NAMES.get(f"{module_name}.{name}")
    if new is None:
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
    warnings.warn(f"{module_name}.{name} moved to {new}: import it from there, or from bpe_fast (the old "
                  f"place goes in a later release)", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(new), name)


def old_attribute(name: str):
    """``bpe_fast.<name>`` for an old module path that was an attribute of the package (after
    ``import bpe_fast``, ``bpe_fast.picky`` was a module); AttributeError for anything else."""
    if f"bpe_fast.{name}" in MOVED:
        return importlib.import_module(f"bpe_fast.{name}")
    raise AttributeError(f"module 'bpe_fast' has no attribute {name!r}")
