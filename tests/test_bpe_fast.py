"""The public API (bpe_fast/__init__.py): every name of ``__all__`` is there and works, used here
as a user would, each result checked against another way to the same answer."""
from __future__ import annotations

import inspect
import re
from typing import Any

import numpy as np
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


# -- misuse: every wrong type or value is a BpeFastError naming the argument (ArgumentTypeError is
# also a TypeError, ArgumentError a ValueError), never a bare TypeError, AttributeError or IndexError.

# Typed Any on purpose: the calls below pass wrong types, which is what they test.
API: Any = bpe_fast


TOK: Any = bpe_fast.Tokenizer([[97, 98]], special_tokens=["<s>"])


TABLE: Any = bpe_fast.WordTable.from_words([b"ab", b"ab", b"abc"])


MISUSE = {
    "train(None)": (lambda: API.train(None, 300), "inputs must be a file name or a list of them"),
    "train(5)": (lambda: API.train(5, 300), "inputs must be a file name or a list of them, got int"),
    "train(tie_break=[])": (lambda: API.train_from_iterator(["a"], 300, tie_break=[]), "tie_break must be one of"),
    "train(special_tokens=5)": (lambda: API.train_from_iterator(["a"], 300, special_tokens=5),
                                "special_tokens must be a list of strings, got int"),
    "train_from_iterator(None)": (lambda: API.train_from_iterator(None, 300), "docs must be an iterable"),
    "train_from_iterator(batch_chars=None)": (lambda: API.train_from_iterator(["a"], 300, batch_chars=None),
                                              "batch_chars must be an integer, got None"),
    "count(None)": (lambda: API.count(None), "inputs must be a file name or a list of them"),
    "count(field=5)": (lambda: API.count(["x.jsonl"], field=5), "field must be a str"),
    "count_from_iterator(5)": (lambda: API.count_from_iterator(5), "docs must be an iterable of documents"),
    "load(None)": (lambda: API.load(None), "name_or_path must be a file name (str or os.PathLike), got NoneType"),
    "load(b'gpt2')": (lambda: API.load(b"gpt2"), "name_or_path must be a file name"),
    "load(path=5)": (lambda: API.load("gpt2", 5), "path must be a file name"),
    "Tokenizer(special_tokens=5)": (lambda: API.Tokenizer([], special_tokens=5), "special_tokens must be a list"),
    "Tokenizer.load(5)": (lambda: API.Tokenizer.load(5), "path must be a file name"),   # not file descriptor 5
    "from_tiktoken(None)": (lambda: API.Tokenizer.from_tiktoken(None, pattern="gpt2"), "path must be"),
    "from_gpt2(None, None)": (lambda: API.Tokenizer.from_gpt2(None, None), "encoder_json must be a file name"),
    "from_huggingface(None)": (lambda: API.Tokenizer.from_huggingface(None), "path must be a file name"),
    "from_minbpe(None)": (lambda: API.Tokenizer.from_minbpe(None), "path must be a file name"),
    "from_ranks(None)": (lambda: API.Tokenizer.from_ranks(None), "ranks must be a mapping"),
    "encode_batch(None)": (lambda: TOK.encode_batch(None), "texts must be a list of str, got NoneType"),
    "encode(allowed_special=None)": (lambda: TOK.encode("a", allowed_special=None), "allowed_special takes \"all\""),
    "encode(disallowed_special=5)": (lambda: TOK.encode("a", disallowed_special=5), "disallowed_special takes"),
    "encode(disallowed_special={5})": (lambda: TOK.encode("a", disallowed_special={5}),
                                       "disallowed_special holds 5, which is no special token"),
    "decode(errors=5)": (lambda: TOK.decode([97], errors=5), "errors must be the name of an error handler"),
    "decode(errors='bogus')": (lambda: TOK.decode([97], errors="bogus"), "errors='bogus' is no error handler"),
    "token_bytes(None)": (lambda: TOK.token_bytes(None), "token must be an integer, got None"),
    "token_bytes(-1)": (lambda: TOK.token_bytes(-1), "token id -1 (position 0) is not in the vocabulary"),
    "save(None)": (lambda: TOK.save(None), "path must be a file name"),
    "truncated(None)": (lambda: TOK.truncated(None), "vocab_size must be an integer, got None"),
    "encode_files(None, ...)": (lambda: API.encode_files(None, ["x"]), "tokenizer must be a Tokenizer"),
    "encode_files(paths=None)": (lambda: API.encode_files(TOK, None), "paths must be a file name or a list"),
    "encode_files(output=5)": (lambda: API.encode_files(TOK, ["x"], 5), "output must be a file name"),
    "encode_files(errors='bogus')": (lambda: API.encode_files(TOK, ["x"], errors="bogus"),
                                     "errors must be one of"),
    "encode_files(progress='bogus')": (lambda: API.encode_files(TOK, ["x"], progress="bogus"), "progress must be"),
    "load_bin(None)": (lambda: API.load_bin(None), "path must be a file name"),
    "load_bin(missing)": (lambda: API.load_bin("no/such.bin"), "no/such.bin: no such file"),
    "WordTable.from_counts(None)": (lambda: API.WordTable.from_counts(None), "counts must be a mapping"),
    "WordTable.from_counts({'a': 1})": (lambda: API.WordTable.from_counts({"a": 1}), "chunks are bytes"),
    "WordTable.from_counts({b'a': -1})": (lambda: API.WordTable.from_counts({b"a": -1}),
                                          "counts[b'a'] must be at least 0, got -1"),
    "WordTable.from_counts({b'a': 1.5})": (lambda: API.WordTable.from_counts({b"a": 1.5}), "must be an integer"),
    "WordTable.from_counts({b'a': 10**20})": (lambda: API.WordTable.from_counts({b"a": 10**20}), "at most"),
    "WordTable.from_words(b'ab')": (lambda: API.WordTable.from_words(b"ab"), "words must be an iterable"),
    "WordTable.from_words(['a'])": (lambda: API.WordTable.from_words(["a"]), "chunks are bytes"),
    "WordTable.merge([None])": (lambda: API.WordTable.merge([None]), "WordTable.merge adds word tables"),
    "WordTable.merge_files([5])": (lambda: API.WordTable.merge_files([5]), "paths[0] must be a file name"),
    "WordTable.word(None)": (lambda: TABLE.word(None), "i must be an integer, got None"),
    "WordTable.word(10**20)": (lambda: TABLE.word(10**20), "i must be at most 1"),
    "WordTable.save(None)": (lambda: TABLE.save(None), "path must be a file name"),
    "WordTable.load(5)": (lambda: API.WordTable.load(5), "path must be a file name"),
    "save_minbpe(None)": (lambda: TOK.save_minbpe(None), "prefix must be a file name"),      # wrote None.model
    "save_tiktoken(None)": (lambda: TOK.save_tiktoken(None), "path must be a file name"),
    "train_from_table(report=5)": (lambda: API.train_from_table(TABLE, 300, report=5), "report must be"),
    "count(client=5)": (lambda: API.count(["x"], client=5), "client must be a dask.distributed Client"),
    "count_from_iterator(lines=array)": (lambda: API.count_from_iterator(["a"], lines=np.array([1, 2])),
                                         "lines must be True or False"),
}


@pytest.mark.parametrize("call,message", MISUSE.values(), ids=MISUSE.keys())
@pytest.mark.filterwarnings("ignore:Tokenizer[.].* is deprecated:DeprecationWarning")   # the shims' own checks
def test_api_misuse_is_a_bpe_fast_error_naming_the_argument(call, message):
    with pytest.raises(bpe_fast.BpeFastError) as caught:
        call()
    assert message in str(caught.value)
