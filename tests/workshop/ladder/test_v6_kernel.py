"""Rung v6 (bpe_fast.workshop.ladder.v6_kernel): v5's algorithm on flat arrays, compiled: bpe_fast's
own kernel, called on v4's word counts; the reference's merges, as Python ints."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast.training.reference import train_reference
from bpe_fast.workshop.ladder import Workload, v6_kernel

from ...conftest import examples


@settings(max_examples=examples(40), deadline=None)
@given(st.text(alphabet="ab \x00é\n", min_size=1, max_size=60), st.integers(1, 12))
def test_it_learns_the_references_merges_as_python_ints(text, n_merges):
    work = Workload.from_text(text, "gpt2")
    merges = v6_kernel.train(work.chunks, n_merges)
    assert merges == train_reference(work.word_counts, n_merges)
    assert all(type(a) is int and type(b) is int for a, b in merges)


def test_ties_go_to_the_smallest_pair():
    assert v6_kernel.train(["zy", "ab"], 1) == [(97, 98)]
