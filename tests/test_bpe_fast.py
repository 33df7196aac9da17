"""The public API (bpe_fast/__init__.py): every name of ``__all__`` is there and works, used here
as a user would, each result checked against another way to the same answer."""
from __future__ import annotations

import inspect
import re

import pytest

import bpe_fast

from .conftest import SMALL_CORPUS, small_text

FUNCTIONS = ["train", "train_from_iterator", "train_from_table", "train_parity", "count", "count_from_iterator",
             "load", "encode_files", "load_bin"]
CLASSES = ["Tokenizer", "PickyTokenizer", "TrainReport", "WordTable"]
PATTERNS = {"GPT2": "gpt2", "CL100K": "cl100k", "O200K": "o200k"}
ERRORS = ["BpeFastError", "ArgumentError", "ArgumentTypeError", "PatternError", "InputError", "EmptyCorpusError",
          "WorkerError", "MemoryBudgetError", "VocabularyError", "TokenizerFileError", "VocabularyNotFoundError",
          "PatternRequiredError", "EncodingError", "UnknownTokenError", "MissingExtraError", "StaleBuildError"]
WARNINGS = ["BpeFastWarning", "VocabSizeWarning"]


def test_all_is_exactly_the_names_tested_here_and_each_is_there():
    tested = FUNCTIONS + CLASSES + list(PATTERNS) + ERRORS + WARNINGS + ["ENCODINGS", "__version__"]
    assert sorted(bpe_fast.__all__) == sorted(tested)
    assert [name for name in bpe_fast.__all__ if not hasattr(bpe_fast, name)] == []
    assert all(inspect.isfunction(getattr(bpe_fast, name)) for name in FUNCTIONS)
    assert all(inspect.isclass(getattr(bpe_fast, name)) for name in CLASSES)


def test_every_error_is_a_bpe_fast_error_and_every_warning_a_bpe_fast_warning():
    assert all(issubclass(getattr(bpe_fast, name), bpe_fast.BpeFastError) for name in ERRORS)
    assert all(issubclass(getattr(bpe_fast, name), bpe_fast.BpeFastWarning) for name in WARNINGS)
    assert issubclass(bpe_fast.BpeFastWarning, UserWarning)


def test_the_patterns_are_the_ones_their_names_give():
    for constant, name in PATTERNS.items():
        assert bpe_fast.Tokenizer([], pattern=name).pattern == getattr(bpe_fast, constant)
    assert set(bpe_fast.ENCODINGS) == {"r50k_base", "p50k_base", "cl100k_base", "o200k_base", "gpt2"}
    assert bpe_fast.ENCODINGS["cl100k_base"].pattern == bpe_fast.CL100K
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", bpe_fast.__version__)


def test_counting_training_and_loading_agree_whichever_way_they_are_reached(tmp_path):
    table = bpe_fast.count([SMALL_CORPUS], workers=1, progress="none")
    assert isinstance(table, bpe_fast.WordTable)
    assert table == bpe_fast.count_from_iterator([small_text()], workers=1, progress="none")
    tok = bpe_fast.train([SMALL_CORPUS], 300, workers=1, progress="none")
    assert isinstance(tok, bpe_fast.Tokenizer) and isinstance(tok.training_report, bpe_fast.TrainReport)
    assert tok == bpe_fast.train_from_iterator([small_text()], 300, workers=1, progress="none")
    assert tok == bpe_fast.train_from_table(table, 300, progress="none")
    tok.save(tmp_path / "t.json")
    assert bpe_fast.load(tmp_path / "t.json") == tok


def test_encode_files_writes_what_the_tokenizer_encodes_and_load_bin_reads_it(tmp_path):
    tok = bpe_fast.train_from_iterator([small_text()], 300, workers=1, progress="none")
    bpe_fast.encode_files(tok, [SMALL_CORPUS], tmp_path / "ids.bin", format="bin", progress="none")
    ids, offsets = bpe_fast.load_bin(tmp_path / "ids.bin")
    assert ids.tolist() == tok.encode_ordinary(small_text()) and offsets.tolist() == [0, len(ids)]


def test_the_variants_entry_points_give_their_tokenizers():
    docs = [small_text()]
    picky = bpe_fast.train_from_iterator(docs, 320, picky=0.9, workers=1, progress="none")
    assert isinstance(picky, bpe_fast.PickyTokenizer) and picky.decode(picky.encode(small_text())) == small_text()
    halves = {"first": [small_text()[:len(small_text()) // 2]], "second": [small_text()[len(small_text()) // 2:]]}
    parity = bpe_fast.train_parity(halves, 300, workers=1, progress="none")
    assert isinstance(parity, bpe_fast.Tokenizer) and parity.vocab_size == 300
    with pytest.raises(bpe_fast.UnknownTokenError) as err:
        parity.decode_single_token_bytes(10**6)
    assert isinstance(err.value, KeyError)             # as tiktoken raises it
