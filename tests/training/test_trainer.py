"""Training that other trainers do not offer: continue any tokenizer, many vocabulary sizes from
one run, a maximum token length. Each held to the plain-Python reference and to the peers. And
train and train_from_iterator share one path (TrainOptions)."""
from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import ArgumentError, Tokenizer, WordTable
from bpe_fast.training import _kernel, continued
from bpe_fast.training._kernel import Trainer, train_merges
from bpe_fast.cli import main
from bpe_fast.pretokenize.patterns import resolve
from bpe_fast.pretokenize.splitter import Splitter, chunks_of
from bpe_fast.training.reference import train_reference
from bpe_fast.training.trainer import TrainOptions

from ..conftest import examples, need, needs_data, needs_vocabs, read_corpus, small_text, vocab_dir

SMALL = [small_text()] * 4


# -- continued training ------------------------------------------------------------------------

@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", None])
def test_continuing_equals_training_straight_through(pattern):
    first = bpe_fast.train_from_iterator(SMALL, 400, pattern=pattern, workers=1)
    continued = bpe_fast.train_from_iterator(SMALL, 700, pattern=pattern, base=first, workers=1)
    direct = bpe_fast.train_from_iterator(SMALL, 700, pattern=pattern, workers=1)
    assert continued == direct


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", None])
def test_continuing_with_hugging_face_ties_equals_training_straight_through_with_them(tmp_path, pattern):
    first = bpe_fast.train_from_iterator(SMALL, 400, pattern=pattern, tie_break="huggingface", workers=1)
    direct = bpe_fast.train_from_iterator(SMALL, 700, pattern=pattern, tie_break="huggingface", workers=1)
    continued = bpe_fast.train_from_iterator(SMALL, 700, pattern=pattern, base=first, tie_break="huggingface",
                                             workers=1)
    assert continued == direct
    first.save(tmp_path / "tokenizer.json")         # bpe_fast's ids in the file (bytes in byte order): the same
    loaded = Tokenizer.from_huggingface(tmp_path / "tokenizer.json")
    assert bpe_fast.train_from_iterator(SMALL, 700, base=loaded, tie_break="huggingface", workers=1) == direct
    by_base_ids = bpe_fast.train_from_iterator(SMALL, 700, pattern=pattern, base=first, workers=1)
    assert by_base_ids != direct                    # ties among the bytes really decide some merges here


def test_continuing_a_bpetrainer_tokenizer_json_learns_what_bpetrainer_learns_straight_through(tmp_path):
    """A tokenizer.json that Hugging Face's BpeTrainer wrote numbers its tokens as BpeTrainer does
    (special tokens, bytes in its order, merges): continuing it with Hugging Face's ties learns
    BpeTrainer's next merges."""
    hf = need("tokenizers")
    text = small_text()
    docs = [text[i:i + 4000] for i in range(0, len(text), 4000)]

    def bpetrainer(vocab_size: int) -> Tokenizer:
        theirs = hf.Tokenizer(hf.models.BPE())
        theirs.pre_tokenizer = hf.pre_tokenizers.ByteLevel(add_prefix_space=False)
        theirs.train_from_iterator(docs, hf.trainers.BpeTrainer(
            vocab_size=vocab_size, show_progress=False, special_tokens=["<|endoftext|>"],
            initial_alphabet=hf.pre_tokenizers.ByteLevel.alphabet()))
        theirs.save(str(tmp_path / f"{vocab_size}.json"))
        return Tokenizer.from_huggingface(tmp_path / f"{vocab_size}.json")

    base, straight = bpetrainer(450), bpetrainer(800)
    ours = bpe_fast.train_from_iterator(docs, 800, base=base, tie_break="huggingface", workers=1)
    assert ours.vocab_size == straight.vocab_size
    assert [(ours.token_bytes(a), ours.token_bytes(b)) for a, b in ours.merges.tolist()] == \
        [(straight.token_bytes(a), straight.token_bytes(b)) for a, b in straight.merges.tolist()]
    assert ours.special_tokens == straight.special_tokens == {"<|endoftext|>": 0}


def test_bpe_continue_breaks_ties_by_the_files_ids(tmp_path):
    """bpe-continue (PyPI: BpeTrainer continuing a tokenizer.json) breaks ties by the file's ids:
    from a file in BpeTrainer's numbering it learns what tie_break="huggingface" learns, every id
    included; from one with bpe_fast's ids (bytes in byte order), what tie_break="bytes" learns.
    benchmarks/bench_continue_hf.py compares them on the shared corpora."""
    bpe_continue = need("bpe_continue")
    base = bpe_fast.train_from_iterator(SMALL, 400, pattern="gpt2", tie_break="huggingface",
                                        special_tokens=["<|endoftext|>"], workers=1)
    base.with_huggingface_ids().save(tmp_path / "hf-ids.json", format="huggingface")
    base.save(tmp_path / "our-ids.json", format="huggingface")

    def theirs(name: str) -> Tokenizer:
        extended = bpe_continue.continue_training(str(tmp_path / name), texts=SMALL, vocab_size=700,
                                                  show_progress=False)
        extended.save(str(tmp_path / f"continued-{name}"))
        return Tokenizer.from_huggingface(tmp_path / f"continued-{name}")

    def ours(name: str, tie_break: str) -> Tokenizer:
        return bpe_fast.train_from_iterator(SMALL, 700, base=Tokenizer.from_huggingface(tmp_path / name),
                                            tie_break=tie_break, workers=1)

    assert theirs("hf-ids.json") == ours("hf-ids.json", "huggingface")
    assert theirs("our-ids.json") == ours("our-ids.json", "bytes") != ours("our-ids.json", "huggingface")


def test_superword_stage_two_breaks_ties_as_asked():
    docs = [small_text()] * 2
    hf_ties = bpe_fast.train_from_iterator(docs, 900, pattern="gpt2", superword_at=500, tie_break="huggingface",
                                           workers=1)
    stage_one = bpe_fast.train_from_iterator(docs, 500, pattern="gpt2", tie_break="huggingface", workers=1)
    assert hf_ties == bpe_fast.train_from_iterator(docs, 900, pattern="superword", base=stage_one,
                                                   tie_break="huggingface", workers=1)
    assert hf_ties != bpe_fast.train_from_iterator(docs, 900, pattern="superword", base=stage_one, workers=1)


@needs_data
@pytest.mark.parametrize("name,pattern", [("taylorswift.txt", "cl100k"), ("multilingual/ru.txt", "o200k"),
                                          ("code_python.txt", "gpt2")])
def test_continuing_4096_to_8192_equals_8192(corpora, name, pattern):
    docs = [read_corpus(corpora / name)]
    half = bpe_fast.train_from_iterator(docs, 4096, pattern=pattern)
    assert bpe_fast.train_from_iterator(docs, 8192, pattern=pattern, base=half) == \
        bpe_fast.train_from_iterator(docs, 8192, pattern=pattern)


def test_the_reference_continues_the_same_way():
    words = {b"lower": 5, b"lowest": 3, b"newer": 6, b"wider": 2, b"low": 7}
    first = train_reference(words, 4)
    tok = Tokenizer(first, pattern=None)
    start = [tok.encode_ordinary(w.decode()) for w in words]
    lengths = {256 + i: len(tok.token_bytes(256 + i)) for i in range(len(first))}
    rest = train_reference(words, 6, start=start, token_lengths=lengths, first_id=256 + len(first))
    assert first + rest == train_reference(words, 10)


def continuing(words: dict[bytes, int], base_merges: int):
    """A table of words, a base trained on them, and the base's layout of them (tokenized_by)."""
    base = Tokenizer(train_reference(words, base_merges), pattern=None)
    table = WordTable.from_counts(words)
    start, lengths = continued.tokenized_by(base, table)
    return base, table, start, lengths


def continued_by_the_reference(words: dict[bytes, int], base: Tokenizer, n_merges: int):
    return train_reference(words, n_merges, start=[base.encode_ordinary(w.decode()) for w in words],
                           token_lengths={i: len(base.token_bytes(i)) for i in range(256, base.vocab_size)},
                           first_id=base.vocab_size)


def random_words(seed: int, n: int = 400) -> dict[bytes, int]:
    rng = np.random.default_rng(seed)
    return {bytes(rng.choice(list(b"abcdef"), size=rng.integers(2, 30)).astype(np.uint8)): int(rng.integers(1, 300))
            for _ in range(n)}


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


def test_tokenized_by_lays_each_word_out_as_the_base_encodes_it():
    """tokenized_by writes each word where the table has it (table order): each token's id at its
    first byte, its tail mark at its last, -1 between, the tokens the base's encoding of the word."""
    words = {b"low": 7, b"lower": 5, b"newest": 9, b"wider": 2}
    table = WordTable.from_counts(words)
    base = Tokenizer(train_reference(words, 3), pattern=None)
    start, lengths = continued.tokenized_by(base, table)
    expected = np.full(table.n_symbols, -1, dtype=np.int32)
    for i in range(len(table)):
        p = int(table.offsets[i])
        for t in bpe_of_chunk(base, table.word(i)):
            size = len(base.token_bytes(t))
            expected[p], expected[p + size - 1] = t, t if size == 1 else -t - 2
            assert lengths[t] == size
            p += size
    assert np.array_equal(start, expected)


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
@settings(max_examples=examples(30), deadline=None)
@given(words=st.lists(st.text(" ab,.\n1'", min_size=1, max_size=24), min_size=1, max_size=40),
       n_merges=st.integers(1, 40))
def test_tokenized_by_lays_out_superword_chunks_as_their_whole_bpe(pattern, words, n_merges):
    """A chunk of another pattern than the base's (superword training) is encoded whole by the
    base's merges. The encoder goes by the pieces its own pattern cuts the chunk into, and
    merges the chunk whole where their encodings do not join compatibly. Merges learned across
    the pattern's cuts (here: on whole chunks) make both cases; the layout is the whole chunk's
    BPE either way."""
    counts = {w.encode(): 1 + len(w) for w in words}
    base = Tokenizer(train_reference(counts, n_merges), pattern=pattern)
    table = WordTable.from_counts(counts)
    start, _ = continued.tokenized_by(base, table)
    for i in range(len(table)):
        word = table.word(i)
        got, p = [], int(table.offsets[i])
        while p < int(table.offsets[i + 1]):
            got.append(int(start[p]))
            p += len(base.token_bytes(int(start[p])))
        assert got == bpe_of_chunk(base, word)


@settings(max_examples=examples(60), deadline=None)
@given(words=st.lists(st.text(" ab,.\n1'", min_size=20, max_size=160), min_size=1, max_size=12),
       n_merges=st.integers(1, 60), pattern=st.sampled_from(["gpt2", "cl100k", "o200k"]))
def test_long_superword_chunks_of_many_pieces_are_laid_out_as_their_whole_bpe(words, n_merges, pattern):
    """Chunks of dozens of pieces, where merges learned across the pattern's cuts make some
    joins incompatible, one after another and next to each other: the encoder merges only the
    pieces around such a join again (and again, while the join before the new span is not
    compatible either); the layout is still each chunk's whole BPE."""
    counts = {w.encode(): 1 + len(w) for w in words}
    base = Tokenizer(train_reference(counts, n_merges), pattern=pattern)
    table = WordTable.from_counts(counts)
    start, _ = continued.tokenized_by(base, table)
    for i in range(len(table)):
        got, p = [], int(table.offsets[i])
        while p < int(table.offsets[i + 1]):
            got.append(int(start[p]))
            p += len(base.token_bytes(int(start[p])))
        assert got == bpe_of_chunk(base, table.word(i))


def test_superword_chunks_are_laid_out_by_pieces_and_whole():
    """The case of the test above that needs both ways at once: the pieces' encodings join into
    the whole's for one chunk (" a b": no merge crosses its cuts) and not for another ("a,b",
    where "a," is a token); each is laid out as its whole BPE."""
    counts = {b"a,": 50, b" a b": 3, b"a,b": 2}
    base = Tokenizer(train_reference(counts, 3), pattern="gpt2")
    assert base.token_bytes(256) == b"a," and base.encode_ordinary("a,b") == [97, 44, 98]   # split: "a" "," "b"
    table = WordTable.from_counts(counts)
    start, _ = continued.tokenized_by(base, table)
    for i in range(len(table)):
        a, b = int(table.offsets[i]), int(table.offsets[i + 1])
        expected = bpe_of_chunk(base, table.word(i))
        assert [int(x) for x in start[a:b] if x >= 0] == expected
        assert (len(expected) < len(base.encode_ordinary(table.word(i).decode()))) == (table.word(i) != b" a b")


def test_a_chunk_table_made_at_the_size_asked_lays_out_the_same():
    """lay_out_chunks' ``table_bits``: the thread's chunk table is made at that size at once (up
    to its limit) instead of doubled up to it; the layout does not change."""
    base, table, start, _ = continuing(random_words(3, 300), 25)
    for asked, limit, made in ((16, None, 16), (30, 17, 17)):
        base._native.clear_caches()
        if limit is not None:
            base._native.set_cache_limit(limit)
        slots = np.empty(table.n_symbols, dtype=np.int32)
        base._native.lay_out_chunks(table.symbols, table.offsets, table.offsets[:-1], slots, asked)
        assert np.array_equal(slots, start)
        [stats] = base._native.cache_stats()
        assert stats["bits"] == made and stats["used"] > stats["seeds"]
    continued.tokenized_by(base, table)
    assert base._native.cache_stats() == []       # let go after the layout: the kernel's memory next


def test_in_kernel_order_tokenized_by_lays_each_word_where_the_kernel_puts_it():
    """With kernel_order, each word's slots are the same, moved to where the kernel's order
    (falling count) puts it; the kernel takes that array over (training changes it), with the
    same merges as from the layout in table order."""
    words = random_words(7, 300)
    base, table, start, lengths = continuing(words, 25)
    in_order, same_lengths = continued.tokenized_by(base, table, kernel_order=True)
    assert np.array_equal(lengths, same_lengths)
    positions = _kernel.kernel_positions(table.offsets, table.counts)
    for i in range(len(table)):
        a, b = int(table.offsets[i]), int(table.offsets[i + 1])
        assert np.array_equal(in_order[positions[i]:positions[i] + b - a], start[a:b])
    taken = in_order.copy()
    options = dict(token_lengths=lengths, first_id=base.vocab_size)
    merges = Trainer(table.symbols, table.offsets, table.counts, 80, start=start, **options).learn()
    assert np.array_equal(Trainer(table.symbols, table.offsets, table.counts, 80, start=taken, kernel_order=True,
                                  **options).learn(), merges)
    assert not np.array_equal(taken, in_order)      # merged in place: it was the kernel's corpus


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


def test_a_base_keeps_its_ids_and_its_special_tokens():
    base = bpe_fast.train_from_iterator(SMALL, 400, pattern="cl100k", special_tokens=["<|endoftext|>", "<|pad|>"],
                                        workers=1)
    tok = bpe_fast.train_from_iterator(SMALL, 600, base=base, special_tokens=["<|new|>"], workers=1)
    assert tok.vocab_size == 600 and tok.pattern == base.pattern
    assert tok.special_tokens == {"<|endoftext|>": 398, "<|pad|>": 399, "<|new|>": 599}
    assert np.array_equal(tok.merges[:len(base.merges)], base.merges)
    assert tok.merge_ids[len(base.merges)] == 400                 # new tokens follow every id of the base
    assert all(tok.token_bytes(i) == base.token_bytes(i) for i in range(398))
    text = small_text()
    assert tok.decode(tok.encode(text, allowed_special="all")) == text
    assert len(tok.encode(text, disallowed_special=())) < len(base.encode(text, disallowed_special=()))
    whole = bpe_fast.Tokenizer(tok.merges, tok.pattern, tok.special_tokens, merge_ids=tok.merge_ids,
                               byte_ids=tok.byte_ids)      # built from scratch, not extended from base
    assert whole == tok and whole._vocab == tok._vocab
    assert whole.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")


@pytest.mark.parametrize("fmt", ["huggingface", "gpt2", "tiktoken", "minbpe"])
def test_continue_a_tokenizer_read_from_any_format(tmp_path, fmt):
    base = bpe_fast.train_from_iterator(SMALL, 350, pattern="gpt2", workers=1)
    if fmt == "huggingface":
        base.save_huggingface(tmp_path / "t.json")
        loaded = Tokenizer.from_huggingface(tmp_path / "t.json")
    elif fmt == "gpt2":
        base.save_gpt2(tmp_path / "e.json", tmp_path / "v.bpe")
        loaded = Tokenizer.from_gpt2(tmp_path / "e.json", tmp_path / "v.bpe")
    elif fmt == "tiktoken":
        base.save_tiktoken(tmp_path / "t.tiktoken")
        loaded = Tokenizer.from_tiktoken(tmp_path / "t.tiktoken", pattern="gpt2")
    else:
        base.save_minbpe(tmp_path / "t")
        loaded = Tokenizer.from_minbpe(tmp_path / "t.model")
    assert bpe_fast.train_from_iterator(SMALL, 600, base=loaded, workers=1) == \
        bpe_fast.train_from_iterator(SMALL, 600, pattern="gpt2", workers=1)


@needs_vocabs
def test_continuing_cl100k_exports_to_tiktoken_and_hugging_face(tmp_path):
    tiktoken = need("tiktoken")
    hf = need("tokenizers")
    cl100k = bpe_fast.load("cl100k_base", path=vocab_dir())
    docs = [small_text() * 3, "bpe_fast_continued_training bpe_fast_continued_training " * 50]
    tok = bpe_fast.train_from_iterator(docs, cl100k.vocab_size + 40, base=cl100k, workers=1)
    assert tok.merge_ids[-40:].tolist() == list(range(100277, 100317))
    ranks = tok.mergeable_ranks()
    assert {t: ranks[t] for t in cl100k.mergeable_ranks()} == cl100k.mergeable_ranks()
    enc = tok.to_tiktoken()
    tok.save_huggingface(tmp_path / "t.json")
    theirs = hf.Tokenizer.from_file(str(tmp_path / "t.json"))
    for text in docs + [small_text()]:
        ids = tok.encode_ordinary(text)
        assert enc.encode_ordinary(text) == ids == theirs.encode(text).ids
    assert len(tok.encode_ordinary(docs[1])) < 0.75 * len(cl100k.encode_ordinary(docs[1]))   # 40 merges learned it
    assert isinstance(enc, tiktoken.Encoding)


def test_continuation_arguments_are_checked_before_reading():
    base = bpe_fast.train_from_iterator(SMALL, 300, workers=1)

    def docs():
        raise AssertionError("the corpus was read")
        yield "never"

    with pytest.raises(bpe_fast.ArgumentError, match="no larger than the base's 300"):
        bpe_fast.train_from_iterator(docs(), 300, base=base)
    with pytest.raises(bpe_fast.ArgumentError, match="tie_break must be one of"):
        bpe_fast.train_from_iterator(docs(), 400, base=base, tie_break="rustbpe")
    with pytest.raises(bpe_fast.ArgumentTypeError, match="base must be a Tokenizer"):
        bpe_fast.train_from_iterator(docs(), 400, base="cl100k_base")  # type: ignore[call-overload]


# -- many vocabulary sizes from one run ------------------------------------------------------

def test_truncated_is_a_shorter_training():
    big = bpe_fast.train_from_iterator(SMALL, 700, pattern="o200k", special_tokens=["<|endoftext|>"], workers=1)
    for size in (257, 400, 699, 700):
        assert big.truncated(size) == bpe_fast.train_from_iterator(SMALL, size, pattern="o200k",
                                                                    special_tokens=["<|endoftext|>"], workers=1)
    with pytest.raises(bpe_fast.VocabularyError, match="out of range"):
        big.truncated(800)


def test_a_list_of_sizes_trains_once():
    sizes = [300, 500, 450]
    toks = bpe_fast.train_from_iterator(SMALL, sizes, workers=1)
    assert [t.vocab_size for t in toks] == sizes
    assert toks == [bpe_fast.train_from_iterator(SMALL, v, workers=1) for v in sizes]
    table = bpe_fast.count_from_iterator(SMALL, workers=1)
    assert bpe_fast.train_from_table(table, sizes) == toks


def test_cli_trains_several_sizes_and_evaluates_them(tmp_path, capsys):
    need("matplotlib")                                   # --plot needs the [plot] extra
    corpus, held_out = tmp_path / "c.txt", tmp_path / "h.txt"
    corpus.write_text(small_text() * 3)
    held_out.write_text("A held-out text about lighthouses, ledgers and the sea.\n" * 20)
    assert main(["train", str(corpus), "--vocab-size", "300,400,600", "-o", str(tmp_path / "t-{vocab_size}.json"),
                 "--eval", str(held_out), "--plot", str(tmp_path / "sizes.png"), "-q", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    ratios = {}
    for size in (300, 400, 600):
        tok = bpe_fast.load(tmp_path / f"t-{size}.json")
        text = held_out.read_text()
        ratios[size] = len(text.encode()) / len(tok.encode(text))
        assert f"{size:>10,} {ratios[size]:>12.3f}" in out
    assert ratios[300] < ratios[400] < ratios[600]
    assert (tmp_path / "sizes.png").stat().st_size > 1000
    assert main(["train", str(corpus), "--vocab-size", "300,400", "-o", str(tmp_path / "t.json"), "-q"]) == 2
    assert "-o must hold {vocab_size}" in capsys.readouterr().err


# -- maximum token length ---------------------------------------------------------------------

@given(words=st.dictionaries(st.text(alphabet="abc ", min_size=1, max_size=12).map(str.encode), st.integers(1, 50),
                             min_size=1, max_size=10),
       n_merges=st.integers(0, 30), limit=st.integers(1, 6), track_from=st.sampled_from([0, 1]))
@settings(max_examples=examples(300), deadline=None)
def test_max_token_length_equals_the_reference(words, n_merges, limit, track_from):
    table = WordTable.from_counts(words)
    merges = train_merges(table.symbols, table.offsets, table.counts, n_merges, max_token_length=limit,
                          track_from=track_from)
    assert [tuple(m) for m in merges.tolist()] == train_reference(words, n_merges, max_token_length=limit)


def test_no_learned_token_is_longer_than_the_limit():
    tok = bpe_fast.train_from_iterator(SMALL, 600, pattern=None, max_token_length=4, workers=1)
    assert tok.vocab_size == 600
    assert max(len(tok.token_bytes(i)) for i in range(tok.n_base)) == 4
    unlimited = bpe_fast.train_from_iterator(SMALL, 600, pattern=None, workers=1)
    assert max(len(unlimited.token_bytes(i)) for i in range(unlimited.n_base)) > 4


# -- superword tokens (SuperBPE) ----------------------------------------------------------------

@given(text=st.text(alphabet="ab .,!?12\n\r\t/-é", max_size=80))
@settings(max_examples=examples(300), deadline=None)
def test_the_superword_pattern_splits_as_hugging_face_isolated_split(text):
    """patterns.SUPERWORD is SuperBPE's stage-two Split (behaviour "isolated") as one findall."""
    hf = need("tokenizers")
    split = hf.pre_tokenizers.Split(hf.Regex(bpe_fast.pretokenize.patterns.SUPERWORD_SPLIT), behavior="isolated")
    assert chunks_of([text], "superword") == [piece for piece, _ in split.pre_tokenize_str(text)]


def bpe_of_chunk(base: Tokenizer, chunk: bytes) -> list[int]:
    """A chunk encoded whole by the base, the slow plain way: a chunk that is a token is that
    token (tiktoken's rule); else the adjacent pair of lowest rank merges, leftmost first."""
    ids = {base.token_bytes(i): i for i in range(base.n_base)}
    if chunk in ids:
        return [ids[chunk]]
    rank = {tuple(pair): k for k, pair in enumerate(base.merges.tolist())}
    made = dict(zip(map(tuple, base.merges.tolist()), base.merge_ids.tolist()))
    tokens = [int(base.byte_ids[b]) for b in chunk]
    while len(tokens) > 1:
        pairs = [(rank.get(p, len(rank)), i) for i, p in enumerate(zip(tokens, tokens[1:]))]
        best, at = min(pairs)
        if best == len(rank):
            break
        tokens[at:at + 2] = [made[(tokens[at], tokens[at + 1])]]
    return tokens


def test_superword_training_equals_the_reference_stage_by_stage():
    """Stage two from scratch, with nothing of the fast path: the chunks are regex.findall's, each
    encoded whole by the base in plain Python, and the reference trainer continues from them."""
    docs = SMALL[:1]
    sw = bpe_fast.train_from_iterator(docs, 420, superword_at=330, workers=1)
    base = bpe_fast.train_from_iterator(docs, 330, workers=1)
    counts: dict[bytes, int] = {}
    for chunk in regex.findall(bpe_fast.pretokenize.patterns.SUPERWORD, docs[0]):
        counts[chunk.encode()] = counts.get(chunk.encode(), 0) + 1
    new = train_reference(counts, 90, start=[bpe_of_chunk(base, c) for c in counts],
                          token_lengths={i: len(base.token_bytes(i)) for i in range(256, 330)}, first_id=330)
    assert np.array_equal(sw.merges[:len(base.merges)], base.merges)
    assert [tuple(m) for m in sw.merges[len(base.merges):].tolist()] == new
    assert sw.merge_ids[len(base.merges):].tolist() == list(range(330, 420))


@needs_data
def test_superword_training_in_blocks_equals_the_regex_route(corpora, tmp_path):
    """Files cut into blocks where the superword rule allows, counted by the native scanner on two
    workers, against the same pattern spelled as a custom regex (files read whole, the regex
    module's matches): the same merges and ids, hence the same tokenizer."""
    files = [corpora / "taylorswift.txt", corpora / "multilingual" / "ja.txt", corpora / "multilingual" / "ar.txt"]
    native = bpe_fast.train(files, 3000, superword_at=2000, workers=2, block_size=4096, progress="none")
    superword = f"(?:{bpe_fast.pretokenize.patterns.SUPERWORD})"
    custom = bpe_fast.train(files, 3000, superword_at=2000, superword_pattern=superword,
                            workers=2, block_size=4096, progress="none")
    assert Splitter.of(custom.pattern).engine == "regex" and Splitter.of(native.pattern).engine == "native"
    assert np.array_equal(native.merges, custom.merges) and np.array_equal(native.merge_ids, custom.merge_ids)


@pytest.mark.parametrize("extra", [{}, {"special_tokens": ["<|sep|>"]}, {"normalize": "nfkc"}, {"pattern": "gpt2"},
                                   {"pattern": None, "superword_pattern": r"[^\n]+\n?"}, {"base": "own"},
                                   {"tie_break": "huggingface"}])
def test_stage_two_counted_ahead_equals_stage_two_counted_after(monkeypatch, extra):
    """With worker processes, stage two's table is counted on a thread while stage one learns:
    the tokenizer is the one of counting after stage one (workers=1 does), and the text is
    counted twice, stage two's count off the main thread and in worker processes, as stage two
    asks (no count again)."""
    docs = [small_text() + "<|sep|>" + "Ｃａｆé ﬁne " * 50] * 3
    if extra.get("base") == "own":
        extra = {"base": bpe_fast.train_from_iterator(docs, 300, workers=1, progress="none")}
    calls: list[tuple[Any, bool]] = []
    in_workers: list[bool] = []
    count_docs, count_in_workers = bpe_fast.training.trainer.count_docs, bpe_fast.counting.workers._count_in_workers

    def spy(*args, **kwargs):
        calls.append((args[1].splitter.pattern, threading.current_thread() is threading.main_thread()))
        return count_docs(*args, **kwargs)

    def spy_workers(*args, **kwargs):
        in_workers.append(threading.current_thread() is threading.main_thread())
        return count_in_workers(*args, **kwargs)

    monkeypatch.setattr(bpe_fast.training.trainer, "count_docs", spy)
    monkeypatch.setattr(bpe_fast.counting.workers, "_count_in_workers", spy_workers)
    settings: dict[str, Any] = dict(superword_at=600, progress="none", batch_chars=4000, **extra)
    ahead = bpe_fast.train_from_iterator(docs, 900, workers=2, **settings)
    assert [on_main for _, on_main in calls] == [True, False] and in_workers == [True, False]
    assert resolve(calls[1][0]) == ahead.pattern != resolve(calls[0][0])
    after = bpe_fast.train_from_iterator(docs, 900, workers=1, **settings)
    assert len(calls) == 4 and ahead == after
    assert ahead.merges.shape[0] > after.merges.shape[0] - 1 > 0 and ahead.special_tokens == after.special_tokens


def counting_for(seconds: float, every: float = 0.01, wait_in_poll: bool = False):
    """A stand-in for a count: reports a block every ``every`` seconds for ``seconds`` (or,
    with ``wait_in_poll``, reports none and only polls, as a count does awaiting its workers)."""
    from bpe_fast.progress import Bar

    def count_text(*args, progress):
        deadline = time.monotonic() + seconds
        with Bar(progress, "counting", None) as bar:
            while time.monotonic() < deadline:
                bar.poll() if wait_in_poll else bar.advance(1)
                time.sleep(every)
        return "table"
    return count_text


@pytest.mark.parametrize("wait_in_poll", [False, True])
def test_a_count_ahead_stops_at_its_next_report_or_poll(wait_in_poll):
    from bpe_fast.training.variants.superbpe import CountAhead
    ahead = CountAhead(counting_for(30, wait_in_poll=wait_in_poll), (), "none")
    ahead.start()
    time.sleep(0.05)
    assert ahead.thread is not None and ahead.thread.is_alive()
    t0 = time.monotonic()
    ahead.stop()
    assert time.monotonic() - t0 < 1 and not ahead.thread.is_alive()     # (it would count for 30 s)
    assert ahead.outcome is None


def test_a_count_ahead_stopped_after_it_counted_lets_its_table_go():
    from bpe_fast.training.variants.superbpe import CountAhead
    ahead = CountAhead(counting_for(0.0), (), "none")
    ahead.start()
    assert ahead.thread is not None
    ahead.thread.join()
    assert isinstance(ahead.outcome, tuple) and ahead.outcome[0] == "table"
    ahead.stop()                           # stage one failed after the count was done
    assert ahead.outcome is None


def test_a_count_ahead_gives_its_table_or_raises_its_error_and_counts_later_without_a_thread(monkeypatch):
    from bpe_fast.training.variants.superbpe import CountAhead
    ahead = CountAhead(counting_for(0.05), (), "none")
    ahead.start()
    table, seconds = ahead.result()
    assert table == "table" and seconds >= 0.05

    def failing(*args, progress):
        raise bpe_fast.InputError("corpus.txt: not UTF-8 at byte 7")
    ahead = CountAhead(failing, (), "none")
    ahead.start()
    with pytest.raises(bpe_fast.InputError, match="corpus.txt: not UTF-8") as caught:
        ahead.result()
    assert any(frame.name == "failing" for frame in caught.traceback)       # the count's own frames

    threads_started: list[str] = []
    seen: list[tuple] = []

    def no_thread(self):
        threads_started.append(self.name)
        raise RuntimeError("can't start new thread")
    monkeypatch.setattr(threading.Thread, "start", no_thread)
    ahead = CountAhead(counting_for(0.03), (), lambda *report: seen.append(report))
    ahead.start()
    assert ahead.thread is None and threads_started == ["bpe_fast count ahead"]
    assert ahead.result()[0] == "table" and seen and seen[0][0] == "counting"    # on this thread, shown


def test_superword_training_is_stage_one_then_tokens_across_words():
    plain = bpe_fast.train_from_iterator(SMALL, 500, workers=1)
    sw = bpe_fast.train_from_iterator(SMALL, 800, superword_at=500, workers=1)
    assert np.array_equal(sw.merges[:244], plain.merges) and sw.pattern == bpe_fast.pretokenize.patterns.SUPERWORD
    learned = [sw.token_bytes(i) for i in range(500, 800)]
    assert any(b" " in t.strip(b" ") and t.strip(b" ")[:1].isalpha() for t in learned)   # e.g. b" the ledger"
    text = small_text()
    assert sw.decode(sw.encode(text)) == text
    with pytest.raises(bpe_fast.ArgumentError, match="superword_at=900 must be"):
        bpe_fast.train_from_iterator(SMALL, 800, superword_at=900)
    with pytest.raises(bpe_fast.ArgumentTypeError, match="give a list"):
        bpe_fast.train_from_iterator(iter(SMALL), 800, superword_at=500)


# -- one training path ------------------------------------------------------------------------------

SPECIAL = "<|sep|>"

def test_files_and_iterators_train_the_same_tokenizer_through_one_path(tmp_path):
    docs = [small_text()[i::3] for i in range(3)]
    files = []
    for i, doc in enumerate(docs):
        files.append(tmp_path / f"d{i}.txt")
        files[-1].write_text(doc)
    base = bpe_fast.train_from_iterator(docs, 300, pattern="cl100k", progress="none")
    options: dict[str, Any] = dict(special_tokens=[SPECIAL], base=base, superword_at=340, min_frequency=2,
                                   progress="none")
    from_files = bpe_fast.train(files, [420, 400], workers=1, **options)
    from_docs = bpe_fast.train_from_iterator(docs, [420, 400], workers=1, **options)
    assert from_files == from_docs
    assert [t.vocab_size for t in from_docs] == [420, 400] and from_docs[0].pattern_name == "superword"


def test_train_options_refuse_bad_settings_before_any_text_is_read():
    with pytest.raises(ArgumentError, match="tie_break must be one of"):
        bpe_fast.train(["no-such-file.txt"], 1000, tie_break="random")
    with pytest.raises(ArgumentError, match="superword_at=100 must be"):
        bpe_fast.train_from_iterator(["x"], 1000, superword_at=100)
    options = TrainOptions.checked([512, 1024], special_tokens=["<a>"])
    assert options.sizes == (512, 1024) and options.resolved_pattern == "cl100k"
    assert options.cut_out == ["<a>"]


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


def test_layout_memory_touches_pieces_until_told_to_stop():
    """continued.layout_memory (superword training's count ahead, while stage one learns) fills
    the layout's array a piece at a time and stops at the piece where its event is set: the
    layout that comes next must not wait for it."""
    import threading

    class StopsAfter(threading.Event):
        def __init__(self, pieces: int):
            super().__init__()
            self.left = pieces

        def is_set(self) -> bool:
            self.left -= 1
            return self.left < 0

    whole = continued.layout_memory(10_000, threading.Event(), piece=1000)
    assert whole.dtype == np.int32 and whole.shape == (10_000,) and (whole == -1).all()
    part = continued.layout_memory(10_000_000, StopsAfter(2), piece=1000)
    assert part.shape == (10_000_000,) and (part[:2000] == -1).all()
    assert (part[2000:] == -1).sum() < 8_000_000       # (fresh pages read as zeros: left untouched)


def test_superword_training_with_its_layout_touched_ahead_learns_the_same(tmp_path, monkeypatch):
    """Stage two laid out in the array the count ahead touched (made certain here: the table is
    asked for only once the count ahead has ended, so it touched the whole array) gives the
    merges of a stage two laid out in a fresh one (under a memory budget nothing is counted ahead)."""
    from bpe_fast.training.variants import superbpe
    text = tmp_path / "t.txt"
    text.write_text(small_text() * 3, encoding="utf-8")
    fresh = bpe_fast.train([str(text)], 700, superword_at=450, progress="none", workers=2, memory_budget=4 << 30)
    given = []
    real_result, real_tokenized_by = superbpe.CountAhead.result, continued.tokenized_by

    def result_once_counted(self):
        if self.thread is not None:
            self.ended.wait()
        return real_result(self)

    def tokenized_by(base, table, kernel_ids=None, kernel_order=False, slots=None):
        given.append(slots is not None and bool((slots == -1).all()))
        return real_tokenized_by(base, table, kernel_ids, kernel_order, slots)
    monkeypatch.setattr(superbpe.CountAhead, "result", result_once_counted)
    monkeypatch.setattr(continued, "tokenized_by", tokenized_by)
    ahead = bpe_fast.train([str(text)], 700, superword_at=450, progress="none", workers=2)
    assert given == [True]
    assert ahead.merges.tolist() == fresh.merges.tolist()
