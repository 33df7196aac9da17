"""The Cython kernel learns exactly the merges of the plain-Python reference."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpe_fast import CL100K, GPT2, O200K, WordTable
from bpe_fast.training._kernel import train_merges
from bpe_fast.pretokenize.splitter import chunks_of
from bpe_fast.training.reference import count_pairs, train_reference
from ..conftest import examples

PATTERNS = [GPT2, CL100K, O200K, None]

# Characters that stress the patterns and the byte-level merges: NUL, CR/LF, runs of one
# letter, digits, apostrophes, emoji (4-byte UTF-8, with ZWJ), combining marks, CJK, spaces.
TRICKY = "aaab \0\r\n\t'sé\u0301\u0300😀👍🏽\u200d中文ñ1234567!?.,/ \u00a0\u3000Zz"
texts = st.lists(st.text(alphabet=TRICKY, max_size=60), min_size=1, max_size=8)


def kernel_merges(word_counts: dict[bytes, int], n_merges: int, min_count: int = 1,
                  track_from: int = 0) -> list[tuple[int, int]]:
    table = WordTable.from_counts(word_counts)
    merges = train_merges(table.symbols, table.offsets, table.counts, n_merges, min_count, track_from=track_from)
    return [tuple(m) for m in merges.tolist()]


def table_of(docs: list[str], pattern) -> dict[bytes, int]:
    return WordTable.from_words(c.encode("utf-8") for c in chunks_of(docs, pattern)).as_dict()


@pytest.mark.parametrize("pattern", PATTERNS, ids=["gpt2", "cl100k", "o200k", "none"])
@given(docs=texts, n_merges=st.integers(0, 60))
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_kernel_equals_reference_on_random_corpora(pattern, docs, n_merges):
    counts = table_of(docs, pattern)
    assert kernel_merges(counts, n_merges) == train_reference(counts, n_merges)


@given(words=st.dictionaries(st.binary(min_size=1, max_size=12), st.integers(1, 2**40), min_size=1, max_size=20),
       n_merges=st.integers(0, 40), min_count=st.integers(0, 5), track_from=st.sampled_from([0, 1, 3, 2**41]))
@settings(max_examples=examples(300), deadline=None)
def test_kernel_equals_reference_on_random_tables(words, n_merges, min_count, track_from):
    """Arbitrary bytes (not only UTF-8), counts far beyond 32 bits, min_count, and any tracking
    threshold (0: the default)."""
    assert kernel_merges(words, n_merges, min_count, track_from) == train_reference(words, n_merges, min_count)


@given(words=st.dictionaries(st.text(alphabet="ab", min_size=1, max_size=10).map(str.encode),
                             st.integers(1, 6), min_size=1, max_size=6), n_merges=st.integers(0, 12))
@settings(max_examples=examples(300), deadline=None)
def test_kernel_equals_reference_on_two_letter_words(words, n_merges):
    """Two letters make overlaps and pairs that vanish and come back within a merge."""
    assert kernel_merges(words, n_merges, track_from=1) == train_reference(words, n_merges)


@pytest.mark.parametrize("word", [b"a" * 2, b"a" * 3, b"a" * 7, b"a" * 64, b"ab" * 20, b"aab" * 9, b"\0" * 9])
def test_runs_of_one_symbol(word):
    """Overlapping pairs count ("aaa" holds (a, a) twice) but merge left to right without overlap."""
    counts = {word: 3, b"xa": 1}
    assert kernel_merges(counts, 20) == train_reference(counts, 20)


def test_overlapping_count_is_weighted():
    # (a, a) occurs twice in "aaa" (weight 5 -> 10) against (b, c) once in "bc" (weight 9).
    assert kernel_merges({b"aaa": 5, b"bc": 9}, 1) == [(97, 97)]
    assert count_pairs([[97, 97, 97]], [5])[(97, 97)] == 10


def test_ties_go_to_the_smallest_pair():
    # Every pair occurs once: the first merge is the smallest (left, right).
    assert kernel_merges({b"zy": 1, b"ba": 1, b"bb": 1}, 1) == [(ord("b"), ord("a"))]


def test_stops_when_no_pair_is_left():
    assert kernel_merges({b"abc": 1}, 10) == [(97, 98), (256, 99)]


def test_min_count_stops_early():
    assert kernel_merges({b"ab": 3, b"cd": 2}, 10, min_count=3) == [(97, 98)]


def test_counts_beyond_32_bits():
    big = 3 * 2**33   # would wrap or tie if counts were kept in 32 bits
    assert kernel_merges({b"ab": big, b"cd": big - 1}, 1) == [(97, 98)]
    assert kernel_merges({b"ab": 2**33, b"cd": 2**33 + 1}, 1) == [(99, 100)]


def test_one_huge_word():
    """Pattern None on a long document: one word of many symbols, merged by positions."""
    rng = np.random.default_rng(0)
    text = bytes(rng.choice(list(b"abcab  \n"), size=4000).astype(np.uint8))
    counts = {text: 1}
    assert kernel_merges(counts, 40) == train_reference(counts, 40)


def test_rejects_inconsistent_table():
    with pytest.raises(ValueError, match="inconsistent"):
        train_merges(np.zeros(3, np.int32), np.array([0, 2], np.int64), np.array([1], np.int64), 1)


@pytest.mark.parametrize("offsets,counts,message", [
    ([1, 2, 3], [1, 1], "start at 0"),
    ([0, 3000, 3], [1, 1], "never decrease"),
    ([0, 2, 3], [5, -5], "positive"),
])
def test_rejects_bad_offsets_and_counts(offsets, counts, message):
    with pytest.raises(ValueError, match=message):
        train_merges(np.array([97, 98, 99], np.int32), np.array(offsets, np.int64), np.array(counts, np.int64), 5)


def test_a_new_pair_that_vanishes_and_comes_back_within_one_merge():
    """Merging (a, b) in "aababa": (z, a) is made, destroyed (count 0, its list freed) and made
    again within the one merge: its list must start afresh, or later merges miss it. (Found by
    a random search against the reference.)"""
    counts = {b"aababa": 2}
    table = WordTable.from_counts(counts)
    merges = train_merges(table.symbols, table.offsets, table.counts, 8, track_from=1)
    assert [tuple(m) for m in merges.tolist()] == train_reference(counts, 8)


@pytest.mark.parametrize("track_from", [1, 2, 3, 50, 10**6])
def test_tracking_threshold_never_changes_the_merges(track_from):
    """Pairs counted below track_from are not tracked until every tracked count falls below it;
    then all are counted again. Any threshold gives the reference's merges."""
    rng = np.random.default_rng(1)
    words = {bytes(rng.choice(list(b"abcde"), size=rng.integers(2, 12)).astype(np.uint8)): int(rng.integers(1, 400))
             for _ in range(300)}
    table = WordTable.from_counts(words)
    stats: dict[str, int] = {}
    merges = train_merges(table.symbols, table.offsets, table.counts, 120, track_from=track_from, stats=stats)
    assert [tuple(m) for m in merges.tolist()] == train_reference(words, 120)
    assert stats["recounts"] >= 1


def test_byte_ranks_decide_ties_like_relabelled_bytes():
    words = {b"ab": 2, b"ba": 2, b"cd": 2}
    ranks = np.arange(256)[::-1].copy()           # byte b takes id 255 - b
    table = WordTable.from_counts(words)
    merges = train_merges(table.symbols, table.offsets, table.counts, 1, byte_ranks=ranks).tolist()
    relabelled = {bytes(255 - c for c in w): n for w, n in words.items()}
    assert [tuple(m) for m in merges] == train_reference(relabelled, 1)


def test_memory_by_part_follows_the_set_up_and_the_merging():
    """Trainer.memory(): the layout's slots (4 bytes a byte at least) from the start; pair
    records, lists and by-symbol lists once the pairs are counted, as many pairs as the count
    tracked, each list's bytes within its capacity; nothing once learn has let the state go."""
    from bpe_fast.training._kernel import Trainer
    rng = np.random.default_rng(4)
    words = {bytes(rng.choice(list(b"abcdef"), size=rng.integers(2, 20)).astype(np.uint8)): int(rng.integers(1, 50))
             for _ in range(500)}
    table = WordTable.from_counts(words)
    kernel = Trainer(table.symbols, table.offsets, table.counts, 60, track_from=1)
    laid_out = kernel.memory()
    assert laid_out["slots"] >= 4 * table.n_symbols and laid_out["tracked"] == 0 and laid_out["lists"] == 0
    kernel.count_pairs()
    counted = kernel.memory()
    assert counted["tracked"] == len(count_pairs([list(w) for w in words], list(words.values())))
    assert 0 < counted["lists_used"] <= counted["lists"] and counted["pairs"] > 0 and counted["neighbours"] > 0
    stats: dict = {}
    kernel.learn(stats=stats)
    assert kernel.memory() == {} and stats["initial_pairs"] == counted["tracked"]
