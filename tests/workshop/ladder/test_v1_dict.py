"""Rung v1 (bpe_fast.workshop.ladder.v1_dict), the notebook's trainer: pairs counted into one dict
(overlaps count), the first top pair met wins, chunks rebuilt left to right; merge k makes
256 + k, and a zero byte is an ordinary byte."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast.workshop.ladder import RUNGS, Workload, v1_dict

from ...conftest import examples
from .conftest import assert_most_frequent_each_time


def test_merges_are_numbered_from_256():
    merges = RUNGS["v1"].train(["aaaa"], 2)          # "aaaa" -> [256, 256] -> [257]
    assert merges == [(97, 97), (256, 256)]
    assert RUNGS["v1"].train(["\x00\x00\x00"], 5) == [(0, 0), (256, 0)]   # zero bytes are ordinary


def test_pairs_are_counted_with_overlaps_and_merged_left_to_right():
    counts: dict = {}
    for ids in ([97, 97, 97], [97, 98]):
        v1_dict.get_stats(ids, counts)
    assert counts == {(97, 97): 2, (97, 98): 1}
    assert v1_dict.merge([97, 97, 97], (97, 97), 256) == [256, 97]
    assert v1_dict.merge([0, 0, 1, 0, 0], (0, 0), 256) == [256, 1, 256]


def test_of_tied_pairs_the_first_met_wins():
    """("z", "y") and ("a", "b") once each: the running maximum keeps the first in the dict (the
    reference would take the smaller pair, ("a", "b"))."""
    assert v1_dict.most_frequent({(122, 121): 1, (97, 98): 1}) == (122, 121)
    assert v1_dict.train(["zy", "ab"], 1) == [(122, 121)]
    assert v1_dict.most_frequent({}) is None


@settings(max_examples=examples(40), deadline=None)
@given(st.text(alphabet="ab \x00é\n", min_size=1, max_size=60), st.integers(1, 12))
def test_every_merge_is_a_most_frequent_pair(text, n_merges):
    work = Workload.from_text(text, "gpt2")
    assert_most_frequent_each_time(v1_dict.train(work.chunks, n_merges), work.word_counts, n_merges)
