"""The variants of BPE training, one module each with its kernel beside it, and their table
(``VARIANTS``), as formats/ has one table of formats: superbpe.py (SuperBPE), boundless.py
(BoundlessBPE, _boundless.pyx), picky.py (Picky BPE, _picky.pyx). Parity-aware BPE (parity.py,
_parity.pyx) trains from one corpus per language through its own entry point,
``trainer.train_parity``, and makes plain tokenizers: it has no row here.

trainer.py asks the table once which variant the options select (``chosen``: plain BPE,
_variant.PLAIN, when none does) and hands it the corpus; a variant is what it does differently
(_variant.Variant), over the plain pipeline (pipeline.py), which knows no variant:

* its options' checks (``check``: the settings that select it, and what they cannot go with);
* how it trains: ``train`` composes the pipeline's stages into its own (SuperBPE: two trainings;
  BoundlessBPE: a training, then its runs counted and supermerged); ``learn`` replaces the
  kernel stage alone (Picky BPE), so that it serves ``train_from_table`` too;
* its counting (BoundlessBPE's runs: boundless.RunCounting), its plain-Python oracle
  (boundless_reference.py, picky_reference.py, parity_reference.py);
* how its tokenizers encode (its Tokenizer subclass, or the tokenizer's second level) and which
  of them are its own (``owns``), what each format can hold of them (``held_by``, ``refusal``)
  and what bpe_fast's JSON writes for them (``json_version``, ``json_fields``, ``from_json``).

The layers below (tokenizer.py, formats/) cannot import this package; ``register`` makes the
variants known to them (formats.register_variant), called once by bpe_fast/__init__.py.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from ...errors import ArgumentError, ArgumentTypeError
from ...formats import register_variant
from . import boundless, picky, superbpe
from ._variant import PLAIN, Variant

__all__ = ["VARIANTS", "SUPERWORDS", "PLAIN", "VariantOptions", "TableVariantOptions", "Variant", "by_name",
           "chosen", "check_docs_read_twice", "keywords_help", "register"]


class VariantOptions(TypedDict, total=False):
    """The variants' keywords of ``train`` and ``train_from_iterator`` (``train_from_table``:
    ``picky`` alone), each a field of TrainOptions; their defaults are TrainOptions'."""
    superword_at: int | str | None      # superbpe, boundless: stage one's vocab size, or "auto" (boundless)
    superword_pattern: str | None       # superbpe: stage two's pattern
    superword: str                      # which variant superword_at trains: SUPERWORDS
    boundless_eligible: str | None      # boundless: the eligibility regex (None: patterns.BOUNDLESS_ELIGIBLE)
    picky: float | None                 # picky: the threshold tau (None: plain BPE)


class TableVariantOptions(TypedDict, total=False):
    """The variants' keywords of ``train_from_table`` (a table is counted: one stage only)."""
    picky: float | None


def check_docs_read_twice(docs: Any, given: Mapping[str, Any]) -> None:
    """The variants that read the text twice (superword_at=: once per stage) cannot train from an
    iterator, which can be read once: refused before anything is read."""
    if given.get("superword_at") is not None and (not isinstance(docs, Sequence) or isinstance(docs, (str, bytes))):
        raise ArgumentTypeError("superword training reads the documents twice (once per stage): give a "
                                "list of documents, not an iterator")


# In the order their options are checked: boundless's before superword_at's range (superbpe's).
VARIANTS: tuple[Variant, ...] = (boundless.VARIANT, superbpe.VARIANT, picky.VARIANT)

# What superword_at= trains, by the name ``superword=`` and ``--superword`` take.
SUPERWORDS = {v.name: v.summary for v in (superbpe.VARIANT, boundless.VARIANT)}


def by_name(name: str) -> Variant:
    return next(v for v in VARIANTS if v.name == name)


def chosen(options: Any) -> Variant:
    """Every variant's checks of the options (each refuses its settings where they do not fit),
    then the variant they select: one at most, plain BPE (``PLAIN``) when none does."""
    if not isinstance(options.superword, str) or options.superword not in SUPERWORDS:
        raise ArgumentError(f"superword must be one of {tuple(SUPERWORDS)}, got {options.superword!r}")
    for variant in VARIANTS:
        variant.check(options)
    return next((v for v in VARIANTS if v.selects(options)), PLAIN)


def keywords_help() -> str:
    """The variants' keywords, as train's docstring tells them."""
    return "".join(v.keywords_help for v in (superbpe.VARIANT, boundless.VARIANT, picky.VARIANT))



def register() -> None:
    """Make every variant known to formats/ and tokenizer.py (formats.register_variant)."""
    for variant in VARIANTS:
        register_variant(variant)
