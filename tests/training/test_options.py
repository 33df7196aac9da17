"""The settings of a training run (training/options.py, TrainOptions): checked once, before any
text is read, each refusal naming the argument at fault; what is not given comes from the base
(pattern, normalization, special tokens cut out of the text), else the defaults."""
from __future__ import annotations

import pytest

import bpe_fast
from bpe_fast import ArgumentError
from bpe_fast.training.options import TrainOptions

from ..conftest import small_text

SMALL = [small_text()] * 4


def test_train_options_refuse_bad_settings_before_any_text_is_read():
    with pytest.raises(ArgumentError, match="tie_break must be one of"):
        bpe_fast.train(["no-such-file.txt"], 1000, tie_break="random")
    with pytest.raises(ArgumentError, match="superword_at=100 must be"):
        bpe_fast.train_from_iterator(["x"], 1000, superword_at=100)
    options = TrainOptions.checked([512, 1024], special_tokens=["<a>"])
    assert options.sizes == (512, 1024) and options.resolved_pattern == "cl100k"
    assert options.cut_out == ["<a>"]


def test_continuation_arguments_are_checked_before_reading():
    base = bpe_fast.train_from_iterator(SMALL, 300, workers=1)

    def docs():
        raise AssertionError("the corpus was read")
        yield "never"

    with pytest.raises(bpe_fast.ArgumentError, match="no larger than the base's 300"):
        bpe_fast.train_from_iterator(docs(), 300, base=base)
    with pytest.raises(bpe_fast.ArgumentError, match="tie_break must be one of"):
        bpe_fast.train_from_iterator(docs(), 400, base=base, tie_break="rustbpe")
    with pytest.raises(bpe_fast.ArgumentTypeError, match="base must be a Tokenizer"):
        bpe_fast.train_from_iterator(docs(), 400, base="cl100k_base")  # type: ignore[call-overload]


def test_vocab_size_too_small():
    with pytest.raises(ValueError, match="vocab_size=255 is too small: it must be at least 256"):
        bpe_fast.train_from_iterator(["abc"], 255)
    with pytest.raises(ValueError, match="at least 258"):
        bpe_fast.train_from_iterator(["abc"], 257, special_tokens=["<a>", "<b>"])


def test_unknown_tie_break_is_rejected_before_counting():
    def docs():
        raise AssertionError("the corpus was read")
        yield "never"

    with pytest.raises(ValueError, match="tie_break must be one of"):
        bpe_fast.train_from_iterator(docs(), 300, tie_break="hf")


def test_numbers_that_are_not_integers_are_refused():
    with pytest.raises(bpe_fast.ArgumentTypeError, match="min_frequency must be an integer"):
        bpe_fast.train_from_iterator(["abc"], 300, min_frequency=2.5)  # type: ignore[call-overload]
    with pytest.raises(bpe_fast.ArgumentTypeError, match="vocab_size must be an integer"):
        bpe_fast.train_from_iterator(["abc"], 300.0)  # type: ignore[call-overload]
    with pytest.raises(bpe_fast.ArgumentError, match="workers must be an integer"):
        bpe_fast.train_from_iterator(["abc"] * 10, 300, workers=1.5, batch_chars=1)  # type: ignore[call-overload]
    with pytest.raises(bpe_fast.VocabularyError, match="merges must be integer ids"):
        bpe_fast.Tokenizer([[1.5, 3]])


@pytest.mark.parametrize("vocab_size,settings,message", [
    ([], {}, "vocab_size is an empty list"),
    ([300, 2**31], {}, "vocab_size=2147483648 is too large: token ids are 32-bit"),
    (300, {"max_token_length": 0}, "max_token_length must be a positive number of bytes (at most 2**63 - 1), got 0"),
    (300, {"min_frequency": -1}, "min_frequency must be >= 0, got -1"),
    (300, {"normalize": "nfd"}, "normalize must be None, 'nfc' or 'nfkc', got 'nfd'"),
    (300, {"normalize": "nfkc", "special_tokens": ["<ﬁ>"]}, "special token '<ﬁ>' is not in NFKC form"),
    (300, {"threads": 0}, "workers"),
    (300, {"special_tokens": {"<a>": 7}}, "special_tokens ids {'<a>': 7} cannot be honoured"),
    ([300, 400], {"special_tokens": {"<a>": 299}}, "special_tokens with ids (a dict) need one vocab_size"),
])
def test_each_setting_is_refused_naming_it(vocab_size, settings, message):
    with pytest.raises(bpe_fast.BpeFastError) as caught:
        TrainOptions.checked(vocab_size, **settings)
    assert message in str(caught.value)


def test_special_tokens_with_ids_at_the_top_of_the_vocabulary_keep_them():
    """tiktoken's style, {token: id}: honoured when the ids are the top of the vocabulary, in any order."""
    options = TrainOptions.checked(300, special_tokens={"<b>": 299, "<a>": 298})
    assert options.special_tokens == ("<b>", "<a>") and options.special_ids == {"<b>": 299, "<a>": 298}
    tok = bpe_fast.train_from_iterator(SMALL, 300, special_tokens={"<b>": 299, "<a>": 298}, workers=1,
                                       progress="none")
    assert tok.special_tokens == {"<b>": 299, "<a>": 298} and tok.n_base == 298


def test_what_is_not_given_comes_from_the_base():
    """A base's pattern and normalization, unless given; its special tokens are cut out of the
    text too (never learned across), after the ones given."""
    base = bpe_fast.train_from_iterator(SMALL, 300, pattern="gpt2", normalize="nfc",
                                        special_tokens=["<|endoftext|>"], workers=1, progress="none")
    options = TrainOptions.checked(400, base=base, special_tokens=["<x>"])
    assert options.resolved_pattern == base.pattern and options.resolved_normalize == "nfc"
    assert options.cut_out == ["<x>", "<|endoftext|>"]
    assert options.splitter().pattern == base.pattern
    given = TrainOptions.checked(400, base=base, pattern="o200k", normalize=None)
    assert given.resolved_pattern == "o200k" and given.resolved_normalize is None
    plain = TrainOptions.checked(400)
    assert plain.resolved_pattern == "cl100k" and plain.resolved_normalize is None and plain.cut_out == []
