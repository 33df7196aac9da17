"""The kernel on several threads learns exactly what it learns on one, and what the reference does.

A merge goes to the threads when its occurrence list holds at least ``parallel_from`` bytes;
these tests set it to 1 (or a few bytes) so that small tables take the parallel path on nearly
every merge, with chunk boundaries everywhere: inside words, inside runs like "aaaa", past the
end of a one-word corpus.
"""
from __future__ import annotations

import os
import select
import signal
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import Tokenizer, WordTable
from bpe_fast.training import _kernel, continued
from bpe_fast.training import pipeline as trainer_module
from bpe_fast.training._kernel import train_merges
from bpe_fast.counting.workers import default_workers
from bpe_fast.training.reference import train_reference

from .conftest import SHARED, examples, read_corpus, shared_path, small_text

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
