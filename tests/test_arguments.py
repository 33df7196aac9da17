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
        bpe_fast.count([b"a.txt"])                          # as the API checks them
