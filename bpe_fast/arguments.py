"""Checking the public API's arguments: each bad one is a BpeFastError naming it, never a bare
TypeError, ValueError or OverflowError from deep inside. A leaf, like errors.py: any module may use it.

Numbers are taken as Python takes an index: ``int``, NumPy's integers (``np.int64(2)``) and any
other type with ``__index__``, but not ``bool`` (``workers=True`` is a mistake, not 1 worker).
"""
from __future__ import annotations

import operator
import os
from typing import TYPE_CHECKING

import numpy as np

from .errors import ArgumentError, ArgumentTypeError

if TYPE_CHECKING:
    from typing import TypeGuard

# The largest count of processes or threads taken: far above any machine's CPUs (more only cost
# memory), and what a bounded queue of 2 tasks per worker can count on every system.
MAX_WORKERS = 4096
INT64_MAX = 2**63 - 1            # counts, lengths and byte sizes are int64 in the native code


def is_int(value) -> TypeGuard[int | np.integer]:
    """An int or a NumPy integer, not a bool (for checks that say more than ``integer`` does)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def integer(value, name: str, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int from ``low`` to ``high``, else an ArgumentTypeError (not an integer) or
    ArgumentError (out of range) naming ``name``."""
    if isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be an integer, got {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise ArgumentTypeError(f"{name} must be an integer, got {value!r}") from None
    if low is not None and number < low:
        raise ArgumentError(f"{name} must be at least {low:,}, got {number}")
    if high is not None and number > high:
        raise ArgumentError(f"{name} must be at most {high:,}, got {number}")
    return number


def workers(value, name: str = "workers") -> int:
    """A number of worker processes or threads: 1 to MAX_WORKERS."""
    return integer(value, name, 1, MAX_WORKERS)


def flag(value, name: str) -> bool:
    """A yes or no: anything ``bool`` takes (an array of several values it refuses)."""
    try:
        return bool(value)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"{name} must be True or False, got {value!r}") from None


def path(value, name: str) -> str | os.PathLike:
    """A file name: a str or an os.PathLike (bytes and open files are refused: ``open(5)`` would
    take 5 as a file descriptor)."""
    if not isinstance(value, (str, os.PathLike)):
        raise ArgumentTypeError(f"{name} must be a file name (str or os.PathLike), got {type(value).__name__}")
    return value


def paths(value, name: str) -> list:
    """One file name, or an iterable of them, as a list."""
    if isinstance(value, (str, os.PathLike)):
        return [value]
    try:
        found = list(value)
    except TypeError:
        raise ArgumentTypeError(f"{name} must be a file name or a list of them, got {type(value).__name__}") from None
    for k, item in enumerate(found):
        path(item, f"{name}[{k}]")
    return found
