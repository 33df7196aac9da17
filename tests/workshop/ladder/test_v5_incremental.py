"""Rung v5 (bpe_fast.workshop.ladder.v5_incremental): pairs counted once, then a merge updates only
the words that hold the pair; a lazy heap gives the best pair, the smallest on ties: the
reference's merges."""
from __future__ import annotations

from heapq import heapify

from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast.training.reference import count_pairs, merge_word, train_reference
from bpe_fast.workshop.ladder import Workload, v5_incremental

from ...conftest import examples


def test_counts_and_where_each_pair_occurs():
    counts, where = v5_incremental.count_pairs([[1, 2, 1, 2], [2, 1]], [3, 5])
    assert counts == {(1, 2): 6, (2, 1): 8} and where == {(1, 2): {0}, (2, 1): {0, 1}}


def test_the_heap_drops_entries_whose_count_is_out_of_date():
    counts = {(3, 4): 5, (1, 2): 3, (5, 6): 0}
    heap = [(-7, (3, 4)), (-5, (3, 4)), (-3, (1, 2)), (-1, (5, 6))]
    heapify(heap)
    assert v5_incremental.pop_best(heap, counts) == (3, 4)        # -7 is stale: dropped
    assert v5_incremental.pop_best(heap, counts) == (1, 2)
    assert v5_incremental.pop_best(heap, counts) is None          # (5, 6): counted 0 now


@given(words=st.lists(st.lists(st.integers(0, 3), max_size=10), min_size=1, max_size=8),
       freqs=st.lists(st.integers(1, 9), min_size=8, max_size=8))
@settings(max_examples=examples(100), deadline=None)
def test_a_merge_leaves_the_counts_a_recount_gives(words, freqs):
    freqs = freqs[:len(words)]
    counts, where = v5_incremental.count_pairs(words, freqs)
    if not counts:
        return
    pair = min(counts, key=lambda p: (-counts[p], p))
    v5_incremental.apply_merge(pair, 256, words, freqs, counts, where)
    assert {p: n for p, n in counts.items() if n} == count_pairs(words, freqs)
    assert all(i in where[p] for i, w in enumerate(words) for p in zip(w, w[1:]))
    assert words == [merge_word(w, pair, 256) for w in words]        # (merged already: unchanged)


@settings(max_examples=examples(40), deadline=None)
@given(st.text(alphabet="ab \x00é\n", min_size=1, max_size=60), st.integers(1, 12))
def test_it_learns_the_references_merges(text, n_merges):
    work = Workload.from_text(text, "gpt2")
    assert v5_incremental.train(work.chunks, n_merges) == train_reference(work.word_counts, n_merges)
    assert v5_incremental.train(["zy", "ab"], 1) == [(97, 98)]          # ties: the smallest pair
