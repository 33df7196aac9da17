"""Checking the public API's arguments (arguments.py): numbers taken as Python takes an index
(int, NumPy's integers, anything with ``__index__``, never a bool), file names as ``open`` would
take them (never bytes or a descriptor); each bad one a BpeFastError naming the argument."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import bpe_fast
from bpe_fast import ArgumentError, ArgumentTypeError, arguments


class Index:
    """Not an int, but an index, as operator.index takes it."""
    def __index__(self) -> int:
        return 7


def test_numbers_are_whatever_python_takes_as_an_index():
    assert [arguments.integer(v, "n") for v in (7, np.int64(7), np.uint8(7), Index())] == [7] * 4
    assert all(type(arguments.integer(v, "n")) is int for v in (np.int64(7), Index()))
    for value in (True, 7.0, "7", None, np.float64(7)):
        with pytest.raises(ArgumentTypeError, match=rf"^n must be an integer, got {re.escape(repr(value))}$"):
            arguments.integer(value, "n")


def test_a_number_out_of_range_names_the_argument_and_its_bounds():
    assert arguments.integer(5, "block_size", 1, 10) == 5
    with pytest.raises(ArgumentError, match=r"^block_size must be at least 1, got 0$"):
        arguments.integer(0, "block_size", 1, 10)
    with pytest.raises(ArgumentError, match=r"^block_size must be at most 1,073,741,824, got 1073741825$"):
        arguments.integer(2**30 + 1, "block_size", 1, 2**30)
    assert arguments.workers(arguments.MAX_WORKERS) == 4096
    with pytest.raises(ArgumentError, match="^threads must be at most 4,096, got 4097$"):
        arguments.workers(4097, "threads")
    assert not isinstance(ArgumentError("x"), TypeError) and isinstance(ArgumentTypeError("x"), TypeError)


def test_a_yes_or_no_is_anything_bool_takes():
    assert [arguments.flag(v, "lines") for v in (1, "", [0], np.bool_(True))] == [True, False, True, True]
    with pytest.raises(ArgumentTypeError, match=r"^lines must be True or False, got array\(\[1, 2\]\)$"):
        arguments.flag(np.array([1, 2]), "lines")


def test_file_names_are_str_or_path_like_and_never_a_descriptor_or_bytes():
    assert arguments.path("a.txt", "path") == "a.txt" and arguments.path(Path("a.txt"), "path") == Path("a.txt")
    for value, kind in ((5, "int"), (b"a.txt", "bytes"), (None, "NoneType")):
        with pytest.raises(ArgumentTypeError, match=rf"^path must be a file name \(str or os.PathLike\), got {kind}$"):
            arguments.path(value, "path")


def test_one_file_name_or_any_iterable_of_them_and_a_bad_item_is_named_by_its_position():
    assert arguments.paths("a.txt", "inputs") == ["a.txt"]
    assert arguments.paths((p for p in ("a", Path("b"))), "inputs") == ["a", Path("b")]
    with pytest.raises(ArgumentTypeError, match=r"^inputs must be a file name or a list of them, got int$"):
        arguments.paths(5, "inputs")
    with pytest.raises(ArgumentTypeError, match=r"^inputs\[1\] must be a file name \(str or os.PathLike\), got bytes$"):
        arguments.paths(["a.txt", b"b.txt"], "inputs")
    with pytest.raises(ArgumentTypeError, match=r"inputs\[0\] must be a file name"):
        bpe_fast.count([b"a.txt"])  # type: ignore[list-item]   # as the API checks them


# -- every entry point checks its numbers so -------------------------------------------------------

HUGE = 10**20


def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def small_table() -> bpe_fast.WordTable:
    return bpe_fast.WordTable.from_words([b"ab", b"ab", b"abc"])


@pytest.mark.parametrize("call,message", [
    (lambda f: bpe_fast.train([f], HUGE), f"vocab_size={HUGE} is too large: token ids are 32-bit, so a "
                                          f"vocabulary holds at most 2,147,483,647 tokens"),
    (lambda f: bpe_fast.train_from_iterator(["ab ab"], 2**31), "vocab_size=2147483648 is too large"),
    (lambda f: bpe_fast.train_from_table(small_table(), HUGE), "at most 2,147,483,647 tokens"),
    (lambda f: bpe_fast.train([f], 300, max_token_length=HUGE), "max_token_length must be a positive number of "
                                                                "bytes (at most 2**63 - 1)"),
    (lambda f: bpe_fast.train([f, f], 300, workers=HUGE, block_size=4), "workers must be at most 4,096"),
    (lambda f: bpe_fast.train_from_iterator(["ab ab"], 300, workers=HUGE), "workers must be at most 4,096"),
    (lambda f: bpe_fast.Tokenizer([]).encode_batch(["a", "b"], workers=HUGE), "workers must be at most 4,096"),
    (lambda f: bpe_fast.count(f, block_size=HUGE), "block_size must be at most 1,073,741,824"),
    (lambda f: bpe_fast.count(f, memory_budget=HUGE**2), "memory_budget must be a number of bytes from 1 MiB"),
])
def test_huge_numbers_are_an_argument_error_naming_the_argument(tmp_path, call, message):
    corpus = write(tmp_path, "c.txt", b"ab ab abc\n" * 10)
    with pytest.raises(bpe_fast.ArgumentError) as caught:
        call(corpus)
    assert message in str(caught.value)


def test_numpy_integers_are_integers_everywhere():
    two = np.int64(2)
    docs = ["the cat sat on the mat"] * 50
    tok = bpe_fast.train_from_iterator(docs, np.int64(266), workers=two, batch_chars=np.int32(100),
                                       memory_budget=np.int64(1 << 40), progress="none")   # past the process's size
    assert tok == bpe_fast.train_from_iterator(docs, 266, workers=1, progress="none")
    table = bpe_fast.count_from_iterator(docs, workers=two, batch_chars=100, progress="none")
    assert bpe_fast.train_from_table(table, np.uint16(266), max_token_length=np.int8(20), progress="none") == tok
    assert tok.truncated(np.int64(260)) == tok.truncated(260)
    assert tok.token_bytes(np.int64(97)) == b"a" and table.word(np.int64(-1)) == table.word(len(table) - 1)
    assert tok.encode_batch(["ab"] * 3, workers=two) == [tok.encode("ab")] * 3
