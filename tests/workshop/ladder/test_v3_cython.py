"""Rung v3 (bpe_fast.workshop.ladder._v3_cython): v1's two hot functions compiled with Cython, run
in v1's own loop: the same counts, the same merged chunks, hence v1's merges, ties included."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast.workshop.ladder import RUNGS, Workload, v1_dict

from ...conftest import examples

_v3_cython = RUNGS["v3"].impl        # (compiled: no stub for type checkers)


@given(st.lists(st.integers(0, 300), max_size=20), st.tuples(st.integers(0, 3), st.integers(0, 3)))
@settings(max_examples=examples(100), deadline=None)
def test_the_compiled_functions_do_what_v1s_do(ids, pair):
    ids = [i % 4 for i in ids]
    compiled, plain = {(0, 0): 5}, {(0, 0): 5}
    _v3_cython.get_stats(ids, compiled)
    v1_dict.get_stats(ids, plain)
    assert compiled == plain
    assert _v3_cython.merge(ids, pair, 256) == v1_dict.merge(ids, pair, 256)


@settings(max_examples=examples(40), deadline=None)
@given(st.text(alphabet="ab \x00é\n", min_size=1, max_size=60), st.integers(1, 12))
def test_it_learns_v1s_merges(text, n_merges):
    chunks = Workload.from_text(text, "gpt2").chunks
    assert _v3_cython.train(chunks, n_merges) == v1_dict.train(chunks, n_merges)
