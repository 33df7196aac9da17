"""Continued training (training/continued.py): a base's tokens keep their ids and its merges
their ranks; continuing learns what training straight through learns, with either tie rule, from
a base read from any format; the corpus is laid out as the base encodes each chunk whole
(``tokenized_by``), also chunks of another pattern (superword training)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import Tokenizer, WordTable
from bpe_fast.training import _kernel, continued
from bpe_fast.training._kernel import Trainer
from bpe_fast.training.reference import train_reference

from ..conftest import examples, need, needs_data, needs_vocabs, read_corpus, small_text, vocab_dir
from .conftest import bpe_of_chunk, continuing, random_words

SMALL = [small_text()] * 4


# -- continuing learns what training straight through learns -----------------------------------

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
    loaded = Tokenizer.load(tmp_path / "tokenizer.json", format="huggingface")
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
        return Tokenizer.load(tmp_path / f"{vocab_size}.json", format="huggingface")

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
        return Tokenizer.load(tmp_path / f"continued-{name}", format="huggingface")

    def ours(name: str, tie_break: str) -> Tokenizer:
        return bpe_fast.train_from_iterator(SMALL, 700, base=Tokenizer.load(tmp_path / name, format="huggingface"),
                                            tie_break=tie_break, workers=1)

    assert theirs("hf-ids.json") == ours("hf-ids.json", "huggingface")
    assert theirs("our-ids.json") == ours("our-ids.json", "bytes") != ours("our-ids.json", "huggingface")


@needs_data
@pytest.mark.parametrize("name,pattern", [("taylorswift.txt", "cl100k"), ("multilingual/ru.txt", "o200k"),
                                          ("code_python.txt", "gpt2")])
def test_continuing_4096_to_8192_equals_8192(corpora, name, pattern):
    docs = [read_corpus(corpora / name)]
    half = bpe_fast.train_from_iterator(docs, 4096, pattern=pattern)
    assert bpe_fast.train_from_iterator(docs, 8192, pattern=pattern, base=half) == \
        bpe_fast.train_from_iterator(docs, 8192, pattern=pattern)


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
        base.save(tmp_path / "t.json", format="huggingface")
        loaded = Tokenizer.load(tmp_path / "t.json", format="huggingface")
    elif fmt == "gpt2":
        base.save(tmp_path / "vocab.bpe", format="gpt2")
        loaded = Tokenizer.load(tmp_path / "vocab.bpe", format="gpt2", encoder_json=tmp_path / "encoder.json")
    elif fmt == "tiktoken":
        base.save(tmp_path / "t.tiktoken", format="tiktoken")
        loaded = Tokenizer.load(tmp_path / "t.tiktoken", format="tiktoken", pattern="gpt2")
    else:
        base.save(tmp_path / "t", format="minbpe")
        loaded = Tokenizer.load(tmp_path / "t.model", format="minbpe")
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
    tok.save(tmp_path / "t.json", format="huggingface")
    theirs = hf.Tokenizer.from_file(str(tmp_path / "t.json"))
    for text in docs + [small_text()]:
        ids = tok.encode_ordinary(text)
        assert enc.encode_ordinary(text) == ids == theirs.encode(text).ids
    assert len(tok.encode_ordinary(docs[1])) < 0.75 * len(cl100k.encode_ordinary(docs[1]))   # 40 merges learned it
    assert isinstance(enc, tiktoken.Encoding)


def test_a_continued_training_cut_to_each_size_is_the_continued_training_to_that_size():
    """A list of sizes with a base trains once, to the largest, and cuts the new merges
    (continued.truncated): the base whole, its special tokens at their ids, new ones after."""
    base = bpe_fast.train_from_iterator(SMALL, 350, special_tokens=["<|endoftext|>"], workers=1, progress="none")
    sizes = [420, 380, 500]
    many = bpe_fast.train_from_iterator(SMALL, sizes, base=base, special_tokens=["<|new|>"], workers=1,
                                        progress="none")
    for size, tok in zip(sizes, many):
        alone = bpe_fast.train_from_iterator(SMALL, size, base=base, special_tokens=["<|new|>"], workers=1,
                                             progress="none")
        assert tok == alone and tok.vocab_size == size
        assert tok.special_tokens == {"<|endoftext|>": 349, "<|new|>": size - 1}
    with pytest.raises(bpe_fast.ArgumentError, match="out of range"):
        continued.truncated(many[-1], 340, base)             # smaller than the base


# -- the layout: each chunk as the base encodes it whole ------------------------------------------

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
