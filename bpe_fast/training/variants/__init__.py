"""The variants of BPE training, one module each, and their table (``VARIANTS``), as formats/
has one table of formats: superbpe.py (SuperBPE), boundless.py (BoundlessBPE), picky.py
(Picky BPE). The plain pipeline (trainer.py) asks the table which variant its options select;
a variant is what it does differently, and nothing else:

* its options' checks (``check``: the settings that select it, and what they cannot go with);
* how it trains: ``train`` composes the plain pipeline's stages, which trainer.py hands it
  (``Pipeline``: count, learn, cut to sizes), into its own (SuperBPE: two stages; BoundlessBPE:
  phase 1, then the runs counted again and supermerged); ``learn`` replaces the kernel stage
  alone (Picky BPE), so that it serves ``train_from_table`` too. Parity-aware BPE (parity.py)
  trains from one corpus per language: its own entry point, ``train_parity`` (bpe_fast and the
  CLI import it; this table does not, as it builds on the pipeline's options), counts each and
  learns with its own kernel stage; its tokenizers are plain, so it needs no row below;
* how its tokenizers encode (its Tokenizer subclass, or the tokenizer's second level) and which
  of them are its own (``owns``);
* what each format can hold of them (``held_by``: the formats whose files hold them; ``refusal``:
  why the others cannot), and what bpe_fast's JSON writes for them (``json_version``,
  ``json_fields``, ``from_json``, ``rows``).

The layers below the table (tokenizer.py, formats/) cannot import it (the variants import
them); they reach the variants through ``formats.variant_parts``, which this package fills in
when it is imported (``bpe_fast`` imports it: every variant is there before any call).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from ...errors import ArgumentError, ArgumentTypeError
from ...formats import variant_parts
from . import boundless, picky, superbpe
from ._variant import Pipeline, Variant

__all__ = ["VARIANTS", "SUPERWORDS", "VariantOptions", "TableVariantOptions", "Pipeline", "Variant", "by_name",
           "selected", "check", "check_docs_read_twice", "keywords_help"]


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


def selected(options: Any) -> Variant | None:
    """The variant the options select (None: plain BPE). The checks make it one at most."""
    return next((v for v in VARIANTS if v.selects(options)), None)


def check(options: Any) -> None:
    """Every variant's checks of the options (each refuses its settings where they do not fit)."""
    if not isinstance(options.superword, str) or options.superword not in SUPERWORDS:
        raise ArgumentError(f"superword must be one of {tuple(SUPERWORDS)}, got {options.superword!r}")
    for variant in VARIANTS:
        variant.check(options)


def keywords_help() -> str:
    """The variants' keywords, as train's docstring tells them."""
    return "".join(v.keywords_help for v in (superbpe.VARIANT, boundless.VARIANT, picky.VARIANT))


variant_parts.update({v.name: v for v in VARIANTS})
