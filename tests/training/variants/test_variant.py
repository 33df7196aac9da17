"""What a variant is (training/variants/_variant.py): the base class ``Variant`` is plain BPE.
Every default runs the plain pipeline, selects nothing, refuses nothing, owns no tokenizer and
adds nothing to bpe_fast's JSON; a variant overrides only what it does differently."""
from __future__ import annotations

import pytest

import bpe_fast
from bpe_fast.training.options import TrainOptions
from bpe_fast.training.pipeline import TrainReport
from bpe_fast.training.variants import PLAIN
from bpe_fast.training.variants._variant import Variant

from ...conftest import small_text

SMALL = [small_text()] * 4


def test_the_defaults_select_nothing_and_own_nothing():
    plain = Variant()
    settings = TrainOptions.checked(400, picky=0.9, superword_at=300)     # (a variant's settings: not its)
    assert plain.selects(settings) is False
    plain.check(settings)                         # refuses nothing
    tok = bpe_fast.train_from_iterator(SMALL, 300, workers=1, progress="none")
    assert plain.owns(tok) is False and plain.json_fields(tok) == {} and plain.from_json({}, "t.json") == {}
    assert (plain.name, plain.held_by, plain.json_version, plain.rows) == ("plain", (), None, "merges")
    assert plain.refusal("tiktoken's .tiktoken") == "tiktoken's .tiktoken cannot hold a BPE tokenizer"
    with pytest.raises(NotImplementedError):
        plain.tokenizer(None)


def test_its_training_is_the_plain_pipelines():
    """train: count, then learn a tokenizer per size; learn: the kernel's stage on a table."""
    def count_text(splitter, what=None, progress="none"):
        assert what is None                       # plain BPE counts chunks, nothing instead
        return bpe_fast.count_from_iterator(SMALL, pattern=splitter.pattern, workers=1, progress="none")

    options = TrainOptions.checked([300, 400], progress="none")
    expected = bpe_fast.train_from_iterator(SMALL, [300, 400], workers=1, progress="none")
    assert PLAIN.train(count_text, options, "chars", ahead=False) == expected
    table = bpe_fast.count_from_iterator(SMALL, workers=1, progress="none")
    assert PLAIN.learn([table], 400, TrainOptions.checked(400, progress="none"), TrainReport()) == expected[1]
