"""Rung v2 (bpe_fast.workshop.ladder.v2_counter), the notebook's Counter version: a Counter per
chunk, the leader asked after every chunk. Of tied pairs, the first to reach the top count wins,
which is not always v1's first pair met."""
from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast.workshop.ladder import Workload, v1_dict, v2_counter

from ...conftest import examples
from .conftest import assert_most_frequent_each_time


def test_the_leader_is_the_first_pair_to_reach_the_top_count():
    """(1, 2) and (3, 4) twice each: (3, 4) reaches 2 in the third chunk, (1, 2) only in the
    fourth: v2 takes (3, 4); v1's dict meets (1, 2) first and takes it."""
    ids = [[1, 2], [3, 4], [3, 4], [1, 2]]
    assert v2_counter.most_frequent(ids) == (3, 4)
    counts: dict = {}
    for chunk in ids:
        v1_dict.get_stats(chunk, counts)
    assert v1_dict.most_frequent(counts) == (1, 2)
    assert v2_counter.most_frequent([[1], [2]]) is None


def test_a_chunks_pairs_come_back_with_their_totals_so_far():
    stats: Counter = Counter({(1, 2): 5})
    chunk = v2_counter.get_stats([1, 2, 1, 2], stats)
    assert chunk == {(1, 2): 7, (2, 1): 1} and stats == {(1, 2): 7, (2, 1): 1}


@settings(max_examples=examples(40), deadline=None)
@given(st.text(alphabet="ab \x00é\n", min_size=1, max_size=60), st.integers(1, 12))
def test_every_merge_is_a_most_frequent_pair(text, n_merges):
    work = Workload.from_text(text, "gpt2")
    assert_most_frequent_each_time(v2_counter.train(work.chunks, n_merges), work.word_counts, n_merges)
