"""The Cython kernel (training/_kernel.pyx) learns exactly the merges of the plain-Python
reference: from bytes, continuing a base, with a maximum token length, on any number of threads.
It lets a Ctrl-C through within a second and costs no memory for a vocabulary it cannot reach.

On several threads: a merge goes to the threads when its occurrence list holds at least
``parallel_from`` bytes; these tests set it to 1 (or a few bytes) so that small tables take the
parallel path on nearly every merge, with chunk boundaries everywhere: inside words, inside runs
like "aaaa", past the end of a one-word corpus.
"""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections import Counter
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import CL100K, GPT2, O200K, Tokenizer, WordTable
from bpe_fast.counting.workers import default_workers
from bpe_fast.pretokenize.splitter import chunks_of
from bpe_fast.training import _kernel, continued
from bpe_fast.training import pipeline as trainer_module
from bpe_fast.training._kernel import Trainer, train_merges
from bpe_fast.training.reference import count_pairs, train_reference

from ..conftest import SHARED, examples, read_corpus, shared_path, small_text
from .conftest import continuing, linux_only, random_words, start_child, wait_for_line

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


# -- a maximum token length ------------------------------------------------------------------

@given(words=st.dictionaries(st.text(alphabet="abc ", min_size=1, max_size=12).map(str.encode), st.integers(1, 50),
                             min_size=1, max_size=10),
       n_merges=st.integers(0, 30), limit=st.integers(1, 6), track_from=st.sampled_from([0, 1]))
@settings(max_examples=examples(300), deadline=None)
def test_max_token_length_equals_the_reference(words, n_merges, limit, track_from):
    table = WordTable.from_counts(words)
    merges = train_merges(table.symbols, table.offsets, table.counts, n_merges, max_token_length=limit,
                          track_from=track_from)
    assert [tuple(m) for m in merges.tolist()] == train_reference(words, n_merges, max_token_length=limit)


# -- continuing from a base's layout (continued.tokenized_by) -----------------------------------

def continued_by_the_reference(words: dict[bytes, int], base: Tokenizer, n_merges: int):
    return train_reference(words, n_merges, start=[base.encode_ordinary(w.decode()) for w in words],
                           token_lengths={i: len(base.token_bytes(i)) for i in range(256, base.vocab_size)},
                           first_id=base.vocab_size)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("track_from", [0, 1, 50, 10**6])
def test_the_kernel_continues_as_the_reference_for_any_tracking_threshold(track_from, threads):
    """Continuing from a base, the kernel tracks only the pairs counted about as often as the
    4 x n_merges-th best at least (and at least track_from times; 0: its default), and counts
    again with a threshold 16 times lower whenever the best tracked count falls below it
    (10**6: no pair is that frequent, so it recounts, 62,500, 3,906, 244, ...): the reference's
    merges every time, on any number of threads (ranges cut inside tokens)."""
    words = random_words(2)
    base, table, start, lengths = continuing(words, 40)
    stats: dict[str, int] = {}
    kernel = Trainer(table.symbols, table.offsets, table.counts, 150, 1, None, track_from, start=start,
                     token_lengths=lengths, first_id=base.vocab_size, threads=threads, parallel_from=1)
    merges = kernel.learn(stats=stats)
    assert [tuple(m) for m in merges.tolist()] == continued_by_the_reference(words, base, 150)
    assert stats["recounts"] > 2 if track_from == 10**6 else stats["recounts"] >= 1


@pytest.mark.parametrize("n_merges", [5, 20, 60])
@pytest.mark.parametrize("threads", [1, 2])
def test_continuing_tracks_from_the_4_x_n_merges_th_best_count(n_merges, threads):
    """The first count tracks exactly the pairs counted at least as often as the 4 x n_merges-th
    best pair (or 8 times, the default track_from, if that is more), counted here from the
    base's encoding of each word."""
    words = random_words(5)
    base, table, start, lengths = continuing(words, 30)
    totals: Counter[tuple[int, int]] = Counter()
    for word, count in words.items():
        ids = base.encode_ordinary(word.decode())
        for pair in zip(ids, ids[1:]):
            totals[pair] += count
    best = sorted(totals.values(), reverse=True)
    assert len(best) > 4 * n_merges                 # (else every pair is tracked)
    threshold = max(8, best[4 * n_merges - 1])
    stats: dict[str, int] = {}
    merges = Trainer(table.symbols, table.offsets, table.counts, n_merges, start=start, token_lengths=lengths,
                     first_id=base.vocab_size, threads=threads).learn(stats=stats)
    assert stats["initial_pairs"] == sum(1 for t in best if t >= threshold) < len(best)
    assert [tuple(m) for m in merges.tolist()] == continued_by_the_reference(words, base, n_merges)


def test_a_start_in_kernel_order_is_taken_over_or_refused():
    words = random_words(8, 50)
    base, table, start, lengths = continuing(words, 10)
    options = dict(token_lengths=lengths, first_id=base.vocab_size, kernel_order=True)
    read_only = start.copy()
    read_only.flags.writeable = False
    wrong: list[Any] = [read_only, start.astype(np.int64), np.repeat(start, 2)[::2], start[:-1].copy(), list(start)]
    for bad in wrong:
        with pytest.raises(ValueError, match="start"):
            Trainer(table.symbols, table.offsets, table.counts, 10, start=bad, **options)
    with pytest.raises(ValueError, match="start"):
        Trainer(table.symbols, table.offsets, table.counts, 10, **options)


# -- several threads: the same merges and the same work as one ------------------------------

# Work counters that must not depend on the number of threads (the others time or split work).
WORK = ("initial_pairs", "pairs_tracked", "positions_visited", "occurrences_replaced", "recounts", "heap_left")


def run(words: dict[bytes, int], n_merges: int, threads: int, parallel_from: int = 1, **options):
    table = WordTable.from_counts(words)
    stats: dict = {}
    merges = train_merges(table.symbols, table.offsets, table.counts, n_merges, stats=stats, threads=threads,
                          parallel_from=parallel_from, **options)
    return [tuple(m) for m in merges.tolist()], stats


def assert_same_on_threads(words, n_merges, threads=(2, 3), parallel_from=1, **options):
    """Every thread count learns the one-thread merges with the same work; returns them."""
    merges, stats = run(words, n_merges, 1, **options)
    for n in threads:
        shared, shared_stats = run(words, n_merges, n, parallel_from, **options)
        assert shared == merges
        assert {k: shared_stats[k] for k in WORK} == {k: stats[k] for k in WORK}
        assert shared_stats["threads"] == n
        assert sum(shared_stats["thread_replaced"]) <= shared_stats["occurrences_replaced"]
    return merges


# Counts from 1 to far past HEAVY (256): words of both kinds of weight, and counts beyond 32 bits.
counts = st.one_of(st.integers(1, 300), st.integers(1, 2**40))


@given(words=st.dictionaries(st.binary(min_size=1, max_size=14), counts, min_size=1, max_size=25),
       n_merges=st.integers(0, 40), track_from=st.sampled_from([0, 1, 3, 2**41]),
       parallel_from=st.sampled_from([1, 2, 5, 64]))
@settings(max_examples=examples(150), deadline=None)
def test_threads_learn_the_reference_merges(words, n_merges, track_from, parallel_from):
    merges = assert_same_on_threads(words, n_merges, parallel_from=parallel_from, track_from=track_from)
    assert merges == train_reference(words, n_merges)


@given(words=st.dictionaries(st.text(alphabet="ab", min_size=1, max_size=16).map(str.encode),
                             st.integers(1, 400), min_size=1, max_size=8),
       n_merges=st.integers(0, 14), max_length=st.sampled_from([0, 2, 3, 5]))
@settings(max_examples=examples(150), deadline=None)
def test_threads_on_two_letter_words(words, n_merges, max_length):
    """Overlaps, pairs made and unmade within one merge (and within one thread's range), and a
    maximum token length."""
    merges = assert_same_on_threads(words, n_merges, max_token_length=max_length, track_from=1)
    assert merges == train_reference(words, n_merges, max_token_length=max_length or None)


@pytest.mark.parametrize("word", [b"a" * 2, b"a" * 9, b"a" * 257, b"ab" * 40, b"aab" * 30, b"\0" * 33])
@pytest.mark.parametrize("parallel_from", [1, 3, 16])
def test_runs_of_one_symbol_on_threads(word, parallel_from):
    """A run is one word: the chunks fall inside it, and one thread must take all of it."""
    words = {word: 3, b"xa": 1, b"aa": 300}
    merges = assert_same_on_threads(words, 30, parallel_from=parallel_from)
    assert merges == train_reference(words, 30)


def test_one_huge_word_on_threads():
    rng = np.random.default_rng(0)
    text = bytes(rng.choice(list(b"abcab  \n"), size=5000).astype(np.uint8))
    words = {text: 1, b"ab": 7, b"ca": 2}
    assert assert_same_on_threads(words, 60) == train_reference(words, 60)


def test_many_words_with_heavy_and_light_weights():
    """Thousands of words, so that the chunks are real: ranges of many words each."""
    rng = np.random.default_rng(1)
    words = {bytes(rng.choice(list(b"abcde "), size=rng.integers(2, 12)).astype(np.uint8)):
             int(rng.choice([1, 2, 7, 255, 256, 5000])) for _ in range(3000)}
    merges = assert_same_on_threads(words, 150, threads=(2, 4), parallel_from=64)
    assert merges == train_reference(words, 150)
    _, stats = run(words, 150, 2, parallel_from=64)
    assert stats["shared_merges"] > 0 and min(stats["thread_replaced"]) > 0


@pytest.mark.parametrize("track_from", [1, 2, 50, 10**6])
def test_recounts_on_threads(track_from):
    rng = np.random.default_rng(2)
    words = {bytes(rng.choice(list(b"abcde"), size=rng.integers(2, 12)).astype(np.uint8)): int(rng.integers(1, 400))
             for _ in range(300)}
    assert assert_same_on_threads(words, 120, track_from=track_from) == train_reference(words, 120)


@pytest.mark.parametrize("n_merges", [60, 300])
def test_the_default_tracking_threshold_follows_the_corpus(n_merges):
    """From bytes, the default threshold is the corpus's pairs / (128 x merges asked): on a
    weighty table (20 words a million times each, 2,000 rare ones) it is far above 8, tracks
    fewer pairs than tracking every pair, and learns the reference's merges, whether it holds to
    the end (60 merges, all from the heavy words) or the best count falls below it and the pairs
    are counted again (300: the rare words' pairs)."""
    rng = np.random.default_rng(7)

    def word() -> bytes:
        return bytes(rng.choice(list(b"abcdefgh "), size=rng.integers(2, 12)).astype(np.uint8))

    words = {word(): int(rng.integers(1, 4)) for _ in range(2000)}
    words.update({word(): 10**6 for _ in range(20)})
    table = WordTable.from_counts(words)
    pairs = int(np.dot(table.counts, np.diff(table.offsets) - 1))
    threshold = _kernel.default_track_from(table.offsets, table.counts, n_merges, 1)
    assert threshold == pairs // (128 * n_merges) > 8
    merges = assert_same_on_threads(words, n_merges)
    assert merges == train_reference(words, n_merges)
    _, stats = run(words, n_merges, 1)
    _, every_pair = run(words, n_merges, 1, track_from=1)
    assert stats["pairs_tracked"] < every_pair["pairs_tracked"]
    assert (stats["recounts"] > 1) == (n_merges == 300)


@pytest.mark.parametrize("track_from", [0, 10**5])
def test_continuing_on_threads(track_from):
    """Continuing from a base: ranges of the pair count cut inside tokens, the tracking threshold
    from the 4 x n_merges-th best count, recounts lowering it: the same merges and work on any
    number of threads."""
    rng = np.random.default_rng(6)
    words = {bytes(rng.choice(list(b"abcdef"), size=rng.integers(2, 40)).astype(np.uint8)): int(rng.integers(1, 300))
             for _ in range(500)}
    base = Tokenizer(train_reference(words, 30), pattern=None)
    table = WordTable.from_counts(words)
    start, lengths = continued.tokenized_by(base, table)
    runs = []
    for threads in (1, 2, 3):
        stats: dict = {}
        merges = _kernel.Trainer(table.symbols, table.offsets, table.counts, 100, track_from=track_from,
                                 start=start.copy(), token_lengths=lengths, first_id=base.vocab_size, threads=threads,
                                 parallel_from=1).learn(stats=stats)
        runs.append((merges.tolist(), {k: stats[k] for k in WORK}))
    assert runs[1] == runs[0] and runs[2] == runs[0]
    assert runs[0][1]["recounts"] > (1 if track_from else 0)


def test_byte_ranks_on_threads():
    rng = np.random.default_rng(3)
    words = {bytes(rng.choice(list(b"abcd"), size=rng.integers(2, 9)).astype(np.uint8)): int(rng.integers(1, 20))
             for _ in range(200)}
    ranks = rng.permutation(256)
    assert_same_on_threads(words, 50, byte_ranks=ranks)


def test_threads_must_be_positive():
    with pytest.raises(ValueError, match="threads"):
        run({b"ab": 1}, 1, 0)


def share_every_merge(monkeypatch) -> list[int]:
    """From now on the public API's kernel shares every merge among three threads; returns the
    list of the thread counts pipeline.py asked for."""
    asked: list[int] = []
    real = _kernel.Trainer

    def trainer(*args, **kwargs):
        asked.append(kwargs["threads"])
        return real(*args, **{**kwargs, "threads": 3, "parallel_from": 1})
    monkeypatch.setattr(trainer_module, "_kernel", SimpleNamespace(Trainer=trainer))
    return asked


@pytest.mark.parametrize("tie_break", ["bytes", "huggingface"])
def test_public_training_on_the_parallel_path(monkeypatch, tie_break):
    docs = [small_text()] * 3
    one = bpe_fast.train_from_iterator(docs, 700, pattern="gpt2", tie_break=tie_break, workers=1, max_token_length=12)
    asked = share_every_merge(monkeypatch)
    assert bpe_fast.train_from_iterator(docs, 700, pattern="gpt2", tie_break=tie_break, workers=2,
                                        max_token_length=12) == one
    cpus = default_workers()
    assert asked == [min(2, cpus)]                  # the kernel gets train's workers as threads,
    bpe_fast.train_from_iterator(docs[:1], 300, workers=64)
    assert asked[-1] == cpus                        # at most one per CPU


def test_continued_training_on_the_parallel_path(monkeypatch):
    docs = [small_text()] * 3
    straight = bpe_fast.train_from_iterator(docs, 700, pattern="o200k", workers=1)
    share_every_merge(monkeypatch)
    first = bpe_fast.train_from_iterator(docs, 450, pattern="o200k", workers=1)
    assert bpe_fast.train_from_iterator(docs, 700, workers=1, base=first) == straight


@pytest.mark.skipif(SHARED is None, reason="shared corpora not found (BPE_FAST_DATA or ../shared)")
def test_same_vocabulary_as_rustbpe_on_the_parallel_path(monkeypatch):
    rustbpe = pytest.importorskip("rustbpe", reason="rustbpe is a dev dependency: pip install -e '.[dev]'")
    share_every_merge(monkeypatch)
    text = read_corpus(shared_path("corpora", "taylorswift.txt"))
    docs = [text[i:i + 65536] for i in range(0, len(text), 65536)]
    tok = bpe_fast.train_from_iterator(docs, 3000, pattern="cl100k", workers=1)
    rust = rustbpe.Tokenizer()
    rust.train_from_iterator(iter(docs), 3000, pattern=tok.pattern)
    assert dict(rust.get_mergeable_ranks()) == tok.mergeable_ranks()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_trainer_used_in_a_forked_child_goes_on_with_one_thread():
    """The child has none of the pool's threads: waiting for them would hang it."""
    rng = np.random.default_rng(4)
    words = {bytes(rng.choice(list(b"abcde"), size=rng.integers(2, 12)).astype(np.uint8)): int(rng.integers(1, 50))
             for _ in range(500)}
    expected, _ = run(words, 80, 1)
    table = WordTable.from_counts(words)
    trainer = _kernel.Trainer(table.symbols, table.offsets, table.counts, 80, threads=2, parallel_from=1)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                                    # the child: learn, send the merges, leave
        try:
            os.write(write, trainer.learn().astype(np.int32).tobytes())
        finally:
            os._exit(0)
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], 30)
        assert ready, "the forked child hangs"
        got = b""
        while chunk := os.read(read, 1 << 16):
            got += chunk
    finally:
        os.close(read)
        if not ready:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert [tuple(m) for m in np.frombuffer(got, np.int32).reshape(-1, 2).tolist()] == expected


# -- interrupted, and a vocabulary the corpus cannot give (from tests/test_faults.py) ------------

KERNEL = """
    import numpy as np, bpe_fast, time
    rng = np.random.default_rng(0)
    lengths = rng.integers(4, 16, 5_000_000)     # merging takes about 3 s on two threads (3 M words took 2.0)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    symbols = rng.integers(97, 97 + 40, int(offsets[-1])).astype(np.int32)
    table = bpe_fast.WordTable(symbols, offsets, np.ones(len(lengths), np.int64))
    print("merging", flush=True)
    start = time.monotonic()
    bpe_fast.train_from_table(table, 60_000, pattern=None, progress="none")
    print("finished after", time.monotonic() - start, flush=True)
"""


@linux_only
def test_ctrl_c_during_merging_stops_within_a_second():
    proc = start_child(KERNEL, uuid.uuid4().hex)
    wait_for_line(proc, "merging")
    time.sleep(1.5)                             # the kernel is running now (it takes far longer)
    assert proc.poll() is None
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert "finished" not in out, "the kernel ran to its end before the interrupt was seen"
    assert time.monotonic() - sent < 1.5 and "KeyboardInterrupt" in err


@linux_only
def test_a_huge_vocab_size_costs_no_memory(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(small_text())
    script = f"""
        import re, warnings, bpe_fast
        warnings.simplefilter("ignore")
        tok = bpe_fast.train([{str(corpus)!r}], 10**9, workers=1)
        # VmHWM, not ru_maxrss: ru_maxrss keeps the peak of the process before exec (pytest's)
        peak_kb = int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
        print(tok.vocab_size, peak_kb // 1024)
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120)
    vocab, peak_mb = map(int, proc.stdout.split())
    assert 256 < vocab < 5000 and peak_mb < 300, (vocab, peak_mb)
