"""The plain pipeline (training/pipeline.py), which knows no variant: ``learn_bpe`` lays a table out
in the kernel and learns the reference's merges (by either tie rule), lets the table go before the
pairs are counted, refuses counts the kernel could not hold, warns when the corpus runs out of
pairs; ``learn_sizes`` trains once to the largest size and cuts the rest."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import WordTable
from bpe_fast.bytelevel import huggingface_byte_order
from bpe_fast.counting.workers import default_workers
from bpe_fast.training import pipeline
from bpe_fast.training.options import TrainOptions
from bpe_fast.training.pipeline import TrainReport
from bpe_fast.training.reference import train_reference

from ..conftest import examples, small_text

SMALL = [small_text()] * 4


# -- the kernel stage: learn_bpe -----------------------------------------------------------------

words_strategy = st.dictionaries(st.binary(min_size=1, max_size=10), st.integers(1, 50), min_size=1, max_size=12)


@given(words=words_strategy, n_merges=st.integers(0, 30), min_frequency=st.integers(0, 4))
@settings(max_examples=examples(100), deadline=None)
def test_learn_bpe_learns_the_references_merges_from_a_table(words, n_merges, min_frequency):
    """From a table, learn_bpe's tokenizer holds the reference's merges (ids 256, 257, ... in
    order) and its report the table's sizes; fewer merges than asked only when no pair is left
    at min_frequency, with a warning saying so."""
    options = TrainOptions.checked(256 + n_merges, pattern=None, min_frequency=min_frequency, progress="none")
    report = TrainReport()
    table = WordTable.from_counts(words)
    expected = train_reference(words, n_merges, min_frequency)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok = pipeline.learn_bpe([table], 256 + n_merges, options, report)
    assert any(w.category is bpe_fast.VocabSizeWarning for w in caught) == (len(expected) < n_merges)
    assert [tuple(m) for m in tok.merges.tolist()] == expected
    assert tok.merge_ids.tolist() == list(range(256, 256 + len(expected)))
    assert (report.unique_chunks, report.total_chunks, report.merges) == (len(words), sum(words.values()),
                                                                         len(expected))
    assert report.merges_requested == n_merges and tok.training_report is report


def test_hugging_face_ties_are_the_references_on_bytes_numbered_as_hugging_face_numbers_them():
    """tie_break="huggingface": the kernel numbers the bytes by Hugging Face's order (kernel_ids)
    and its merges come back in bytes' ids (ids_of_kernel); ties among the bytes decide here."""
    words = bpe_fast.count_from_iterator(SMALL, pattern="gpt2", workers=1, progress="none").as_dict()
    order = huggingface_byte_order()                    # the byte of each Hugging Face id
    hf_id = np.argsort(np.array(order))                 # the Hugging Face id of each byte
    renumbered = {bytes(int(hf_id[b]) for b in w): n for w, n in words.items()}
    expected = [tuple(order[i] if i < 256 else i for i in m) for m in train_reference(renumbered, 150)]
    options = TrainOptions.checked(256 + 150, pattern="gpt2", tie_break="huggingface", progress="none")
    tok = pipeline.learn_bpe([WordTable.from_counts(words)], 256 + 150, options, TrainReport())
    assert [tuple(m) for m in tok.merges.tolist()] == expected != train_reference(words, 150)


def test_kernel_ids_and_ids_of_kernel_undo_each_other():
    ids = pipeline.kernel_ids("huggingface", None)
    assert ids is not None and sorted(ids.tolist()) == list(range(256))
    assert pipeline.ids_of_kernel(ids)[ids].tolist() == list(range(256))
    assert pipeline.kernel_ids("bytes", None) is None       # the bytes' own ids


def test_the_kernel_gets_as_many_threads_as_asked_up_to_one_per_cpu():
    cpus = default_workers()
    assert pipeline.kernel_threads(None) == cpus == pipeline.kernel_threads(10**4)
    assert pipeline.kernel_threads(1) == 1


def test_an_empty_table_is_refused():
    with pytest.raises(bpe_fast.EmptyCorpusError, match="the corpus is empty: no text to learn merges from"):
        bpe_fast.train_from_table(WordTable.from_counts({}), 300, progress="none")


def test_the_word_table_is_freed_before_the_kernel_counts_the_pairs(monkeypatch):
    """The pair lists and the merging need the most memory: the table and its arrays must be gone
    once the kernel has laid the words out, before it counts the pairs (train keeps no reference);
    the table's hashes, which training does not read, already before the layout."""
    import gc
    import weakref
    from types import SimpleNamespace

    from bpe_fast.training import _kernel, pipeline, trainer
    tables: list = []
    alive_when_counting: list[bool] = []
    hashes_at_layout: list[bool] = []
    real_count = trainer.count_docs

    def counting(*args, **kwargs):
        table = real_count(*args, **kwargs)
        assert table.hashes is not None
        tables.append([weakref.ref(table), weakref.ref(table.symbols), weakref.ref(table.offsets),
                       weakref.ref(table.hashes)])
        return table

    class Watched(_kernel.Trainer):
        def __init__(self, *args, **kwargs):
            gc.collect()
            hashes_at_layout.append(tables[-1][3]() is not None)
            super().__init__(*args, **kwargs)

        def count_pairs(self):
            gc.collect()
            alive_when_counting.append(any(ref() is not None for ref in tables[-1]))
            super().count_pairs()

    monkeypatch.setattr(trainer, "count_docs", counting)
    monkeypatch.setattr(pipeline, "_kernel", SimpleNamespace(Trainer=Watched))
    tok = bpe_fast.train_from_iterator([small_text()], 400, progress="none")
    assert alive_when_counting and not any(alive_when_counting)       # (learn asks again: counted once)
    assert hashes_at_layout == [False]
    monkeypatch.undo()
    assert tok == bpe_fast.train_from_iterator([small_text()], 400, progress="none")


def test_counts_past_32_bits_train_as_the_reference_does():
    # A corpus of hundreds of GB counts chunks past 2**32: a count (or a pair's total) narrowed to
    # 32 bits anywhere (the table, the heap, a recount) would pick other merges. Counts chosen so
    # that the order of pairs depends on the high bits and ties on the low ones.
    big = 1 << 32
    word_counts = {b"abab": 3 * big + 7, b"abc": 5 * big, b"bcab": 2 * big + (big >> 1), b"cc": big - 1,
                   b"ca": 4 * big + 9, b"bca": 1, b"abcabc": big + 3, b"dd": 7 * big}
    words = list(word_counts)
    table = bpe_fast.WordTable(np.frombuffer(b"".join(words), np.uint8),
                               offsets=np.cumsum([0] + [len(w) for w in words]),
                               counts=np.array(list(word_counts.values()), np.int64))
    chosen: list[int] = []
    expected = train_reference(word_counts, 12, chosen=chosen)
    assert max(chosen) > big                                   # the test's premise
    tok = bpe_fast.train_from_table(table, 256 + len(expected), progress="none")
    assert [tuple(m) for m in tok.merges.tolist()] == expected


def test_a_table_whose_pairs_would_pass_int64_is_refused_before_training():
    # "ab" 2**62 times and "abab" 2**62 times: the pair (a, b) occurs 3 * 2**62 times
    table = bpe_fast.WordTable.from_counts({b"ab": 1 << 62, b"abab": 1 << 62, b"cd": 5})
    with pytest.raises(bpe_fast.ArgumentError, match="too large to train on"):
        bpe_fast.train_from_table(table, 260, pattern=None, progress="none")
    fine = bpe_fast.WordTable.from_counts({b"ab": 1 << 61, b"abab": 1 << 60, b"cd": 5})
    assert bpe_fast.train_from_table(fine, 257, pattern=None, progress="none").merges.tolist() == [[97, 98]]


def test_no_learned_token_is_longer_than_the_limit():
    tok = bpe_fast.train_from_iterator(SMALL, 600, pattern=None, max_token_length=4, workers=1)
    assert tok.vocab_size == 600
    assert max(len(tok.token_bytes(i)) for i in range(tok.n_base)) == 4
    unlimited = bpe_fast.train_from_iterator(SMALL, 600, pattern=None, workers=1)
    assert max(len(unlimited.token_bytes(i)) for i in range(unlimited.n_base)) > 4


def test_vocab_larger_than_the_corpus_gives_stops_and_warns():
    with pytest.warns(bpe_fast.VocabSizeWarning,
                      match=r"stopped after 3 of 744 merges.*vocab size 259 instead of 1000"):
        tok = bpe_fast.train_from_iterator(["abcd"], 1000, pattern=None)
    assert tok.vocab_size == 259 and tok.training_report.merges == 3


def test_the_report_says_what_was_read_and_learned():
    tok = bpe_fast.train_from_iterator(SMALL, 500, workers=1, progress="none")
    report = tok.training_report
    assert report.input_unit == "chars" and report.input_size == len(SMALL[0]) * 4
    assert report.merges == report.merges_requested == 244 and report.vocab_size == 500
    assert report.total_chunks > report.unique_chunks > 0 and set(report.seconds) == {"counting", "merging"}
    summary = report.summary()
    assert f"read {report.input_size:,} chars" in summary and "244 merges -> vocab size 500" in summary


# -- many sizes from one run: learn_sizes ---------------------------------------------------------

def test_a_list_of_sizes_trains_once():
    sizes = [300, 500, 450]
    toks = bpe_fast.train_from_iterator(SMALL, sizes, workers=1)
    assert [t.vocab_size for t in toks] == sizes
    assert toks == [bpe_fast.train_from_iterator(SMALL, v, workers=1) for v in sizes]
    table = bpe_fast.count_from_iterator(SMALL, workers=1)
    assert bpe_fast.train_from_table(table, sizes) == toks


def test_truncated_is_a_shorter_training():
    big = bpe_fast.train_from_iterator(SMALL, 700, pattern="o200k", special_tokens=["<|endoftext|>"], workers=1)
    for size in (257, 400, 699, 700):
        assert big.truncated(size) == bpe_fast.train_from_iterator(SMALL, size, pattern="o200k",
                                                                    special_tokens=["<|endoftext|>"], workers=1)
    with pytest.raises(bpe_fast.VocabularyError, match="out of range"):
        big.truncated(800)
