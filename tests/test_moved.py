"""The module paths of 0.2 still import (bpe_fast/_moved.py), each warning where its code now is."""
from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import bpe_fast
from bpe_fast._moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_warns_and_gives_the_new_modules_names(old):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {MOVED[old]}"):
        module = importlib.import_module(old)
    new = importlib.import_module(MOVED[old])
    public = [name for name in vars(new) if not name.startswith("_")]
    assert public and all(getattr(module, name) is getattr(new, name) for name in public)
    with pytest.raises(AttributeError):
        module.no_such_name         # noqa: B018


def test_no_old_path_is_still_a_file_and_every_new_one_is():
    root = Path(bpe_fast.__file__).parent
    for old, new in MOVED.items():
        rel = old.split(".", 1)[1].replace(".", "/")
        assert not (root / f"{rel}.py").exists() and not (root / rel / "__init__.py").exists(), old
        assert importlib.util.find_spec(new) is not None, new


def test_old_forms_of_import_work_in_a_fresh_process():
    code = ("import warnings; warnings.simplefilter('ignore')\n"
            "import bpe_fast\n"
            "from bpe_fast.trainer import train, TrainReport\n"
            "from bpe_fast.wordtable import WordTable\n"
            "import bpe_fast.variants.picky as picky\n"
            "assert train is bpe_fast.train and WordTable is bpe_fast.WordTable\n"
            "assert bpe_fast.picky.REMOVED == picky.REMOVED\n"       # an attribute of the package, as in 0.2
            "assert bpe_fast.boundless.units is bpe_fast.training.variants.boundless.units\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout == "ok\n", done.stderr


def test_the_variants_oracles_are_still_names_of_the_old_reference_module():
    import warnings
    from bpe_fast.training.variants import boundless_reference, picky_reference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = importlib.import_module("bpe_fast.reference")
    assert old.train_reference is importlib.import_module("bpe_fast.training.reference").train_reference
    assert old.train_picky_reference is picky_reference.train_picky_reference
    assert old.encode_boundless_reference is boundless_reference.encode_boundless_reference


def test_an_unknown_attribute_of_the_package_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'trainerr'"):
        bpe_fast.trainerr      # noqa: B018
