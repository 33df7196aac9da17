"""The ``>>>`` examples in the docstrings run, each docstring a test of its own: a failing one
reports the doctest's own diff (what the example expected, what it got).

``MODULES`` lists the modules whose docstrings are run; add a module there when its public
functions get examples. An example whose module needs an optional package (``NEEDS``) is
skipped without it, as the tests that need it are.
"""
from __future__ import annotations

import doctest
import importlib

import pytest

from .conftest import need

MODULES = [
    "bpe_fast.tokenizer",
    "bpe_fast.encoding.tiktoken_surface",       # Tokenizer's mixin: tiktoken's and Hugging Face's names
    "bpe_fast.formats._methods",                 # Tokenizer's mixin: files and conversions
    "bpe_fast.registry",                        # bpe_fast.load
    "bpe_fast.training.trainer",                # train, train_from_iterator, train_from_table, train_parity
]

# docstring (its name, as doctest gives it) -> the optional package its example needs
NEEDS = {
    "bpe_fast.formats._methods.FormatMethods.to_tiktoken": "tiktoken",
    "bpe_fast.formats._methods.FormatMethods.to_transformers": "transformers",
}


def docstrings_with_examples() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder()
    found = []
    for name in MODULES:
        module = importlib.import_module(name)
        found += [test for test in finder.find(module) if test.examples]
    return sorted(found, key=lambda test: test.name)


TESTS = docstrings_with_examples()


def test_the_tokenizer_and_load_have_examples():
    names = {test.name for test in TESTS}
    assert {"bpe_fast.tokenizer.Tokenizer.encode", "bpe_fast.registry.load",
            "bpe_fast.encoding.tiktoken_surface.TiktokenSurface.decode_with_offsets",
            "bpe_fast.formats._methods.FormatMethods.save", "bpe_fast.training.trainer.train",
            "bpe_fast.training.trainer.train_from_iterator", "bpe_fast.training.trainer.train_from_table",
            "bpe_fast.training.trainer.train_parity"} <= names


@pytest.mark.parametrize("test", TESTS, ids=[test.name for test in TESTS])
def test_docstring_examples(test: doctest.DocTest):
    if test.name in NEEDS:
        need(NEEDS[test.name])
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    result = runner.run(test, out=report.append, clear_globs=True)
    assert result.failed == 0, "".join(report)
