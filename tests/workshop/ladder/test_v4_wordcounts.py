"""Rung v4 (bpe_fast.workshop.ladder.v4_wordcounts): each distinct chunk counted once, in order of
first appearance, its pairs weighted by its count; v1's running maximum over the same order of
pairs, hence v1's merges, ties included."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast.workshop.ladder import Workload, v1_dict, v4_wordcounts

from ...conftest import examples


def test_distinct_chunks_in_order_of_first_appearance_and_weighted_pairs():
    assert list(v4_wordcounts.word_counts([" b", "a", " b", "é", "a", " b"]).items()) == \
        [(b" b", 3), (b"a", 2), ("é".encode(), 1)]
    assert v4_wordcounts.get_stats([[97, 97, 97], [97, 98]], [5, 2]) == {(97, 97): 10, (97, 98): 2}


@settings(max_examples=examples(40), deadline=None)
@given(st.text(alphabet="ab \x00é\n", min_size=1, max_size=60), st.integers(1, 12))
def test_it_learns_v1s_merges(text, n_merges):
    chunks = Workload.from_text(text, "gpt2").chunks
    assert v4_wordcounts.train(chunks, n_merges) == v1_dict.train(chunks, n_merges)
