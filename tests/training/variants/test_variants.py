"""The variants' table (training/variants/__init__.py): ``chosen`` runs every variant's checks and
picks the one the options select, plain BPE when none does, refusing two at once and a setting
without its variant; ``register`` makes them known to formats/; ``check_docs_read_twice`` refuses
an iterator to a variant that reads the text twice."""
from __future__ import annotations

import pytest

from bpe_fast import ArgumentError, ArgumentTypeError
from bpe_fast.formats import variant_parts
from bpe_fast.pretokenize.patterns import BOUNDLESS_ELIGIBLE
from bpe_fast.training import variants
from bpe_fast.training.options import TrainOptions


def options(**settings) -> TrainOptions:
    return TrainOptions.checked(600, **settings)


def test_each_variant_is_chosen_by_its_settings_and_plain_bpe_by_none():
    assert variants.chosen(options()) is variants.PLAIN
    assert variants.chosen(options(superword_at=400)).name == "superbpe"
    assert variants.chosen(options(superword_at=400, superword="boundless")).name == "boundless"
    assert variants.chosen(options(picky=0.9)).name == "picky"
    assert sorted(v.name for v in variants.VARIANTS) == ["boundless", "picky", "superbpe"]     # parity: its own entry


def test_a_variants_check_completes_its_settings():
    """BoundlessBPE's eligibility rule, when not given, is the default one once chosen."""
    given = options(superword_at=400, superword="boundless")
    assert given.boundless_eligible is None
    variants.chosen(given)
    assert given.boundless_eligible == BOUNDLESS_ELIGIBLE


@pytest.mark.parametrize("settings,message", [
    (dict(picky=0.9, superword_at=400), "picky= cannot be combined with superword_at="),
    (dict(picky=0.9, superword_at=400, superword="boundless"), "picky= cannot be combined with superword_at="),
    (dict(superword="picky", superword_at=400), "superword must be one of ('superbpe', 'boundless'), got 'picky'"),
    (dict(superword="boundless"), 'superword="boundless" needs superword_at=T'),
    (dict(boundless_eligible=r"\p{L}"), 'boundless_eligible= goes with superword="boundless"'),
])
def test_two_variants_at_once_or_a_setting_without_its_variant_is_refused(settings, message):
    with pytest.raises(ArgumentError) as caught:
        variants.chosen(options(**settings))
    assert message in str(caught.value)


def test_a_variant_that_reads_the_text_twice_needs_a_list():
    for docs in (iter(["a b"]), "a b", (d for d in ["a b"])):
        with pytest.raises(ArgumentTypeError, match="reads the documents twice"):
            variants.check_docs_read_twice(docs, {"superword_at": 300})
    variants.check_docs_read_twice(["a b"], {"superword_at": 300})
    variants.check_docs_read_twice(iter(["a b"]), {"picky": 0.9})      # read once: any iterable


def test_the_keywords_help_tells_every_variants_keywords():
    text = variants.keywords_help()
    assert all(f"``{keyword}" in text for keyword in ("superword_at=T", 'superword="boundless"', "picky=tau"))
    assert set(variants.SUPERWORDS) == {"superbpe", "boundless"}


def test_register_makes_every_variant_known_to_the_formats(monkeypatch):
    for name in list(variant_parts):
        monkeypatch.delitem(variant_parts, name)
    variants.register()
    assert variant_parts == {v.name: v for v in variants.VARIANTS}
