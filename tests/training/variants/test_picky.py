"""Picky BPE (issue 20; Chizhov et al., arXiv 2409.04599): the kernel held to the plain-Python
reference, the replay encoder held to the training's own segmentation, the ids, the files, the
arguments. Hand cases first: each shows one rule of picky.py's and _picky.pyx's docstrings."""
from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import (ArgumentError, PickyTokenizer, TokenizerFileError, VocabSizeWarning, VocabularyError,
                      WordTable, formats)
from bpe_fast.training._kernel import train_merges
from bpe_fast.training.variants._picky import PickyEncoder, train_picky
from bpe_fast.budget import resident_bytes
from bpe_fast.bytelevel import huggingface_byte_order
from bpe_fast.cli import main
from bpe_fast.encoding.encoder import ChunkEncoder, encoder_for
from bpe_fast.training.variants.picky import REMOVED, events_for, token_ids
from bpe_fast.training.variants.picky import PICKY_LONGEST
from bpe_fast.training.reference import train_reference
from bpe_fast.training.variants.picky_reference import encode_picky_reference, picky_token_ids, train_picky_reference

from ...conftest import corpus_params, examples, needs_data, read_corpus, small_text, sparse_array, sparse_files

SMALL = [small_text()] * 4
A, B, C, D = b"abcd"


def trained(docs: list[str], vocab_size: int, **options) -> PickyTokenizer:
    """train_from_iterator's PickyTokenizer."""
    tok = bpe_fast.train_from_iterator(docs, vocab_size, progress="none", **options)
    assert isinstance(tok, PickyTokenizer)
    return tok


def kernel_events(words: dict[bytes, int], n_learned: int, tau: float, **options) -> list[tuple[int, int]]:
    table = WordTable.from_counts(words)
    events = train_picky(table.symbols, table.offsets, table.counts, n_learned, tau, **options)
    return [(a, b) for a, b in events.tolist()]


# -- the rules, by hand ------------------------------------------------------------------------

def test_a_parent_goes_when_the_merge_takes_tau_of_its_occurrences():
    """"ab" occurs 13 times, 10 of them before "c": IoS = 10/13 = 0.77. It goes at tau 0.7, not
    at 0.8; its 3 other occurrences become "a" "b" again, and (a, b) is merged anew: the token
    comes back under a new event id, present again."""
    words = {b"abc": 10, b"ab": 3}
    gone = [(A, B), (256, C), (256, REMOVED), (A, B)]
    assert train_picky_reference(words, 10, 0.7) == kernel_events(words, 10, 0.7) == gone
    assert train_picky_reference(words, 10, 0.8) == kernel_events(words, 10, 0.8) == [(A, B), (256, C)]
    assert picky_token_ids(gone) == {b: b for b in range(256)} | {257: 256, 258: 257}
    assert [encode_picky_reference(w, gone) for w in words] == [[257], [258]]


def test_tau_1_still_removes_a_token_that_occurs_only_inside_the_merged_pair():
    """IoS >= tau: with tau = 1, "ab" goes when every one of its occurrences is followed by "c"
    (IoS exactly 1; nothing in the corpus changes, but the slot is freed); one "ab" elsewhere
    keeps it (IoS 10/11)."""
    assert kernel_events({b"abc": 10}, 5, 1.0) == [(A, B), (256, C), (256, REMOVED)]
    assert kernel_events({b"abc": 10, b"ab": 1}, 5, 1.0) == [(A, B), (256, C)]
    with pytest.warns(VocabSizeWarning, match="stopped with 1 of 2 learned tokens present"):
        tok = trained(["abc"] * 10, 258, pattern=None, picky=1.0)
    assert tok.events.tolist() == [[A, B], [256, C], [256, REMOVED]]
    assert tok.vocab_size == 257 and tok.token_bytes(256) == b"abc" and tok.encode("ab") == [A, B]


def test_a_pair_of_one_token_takes_at_most_half_of_its_occurrences():
    """a == b is checked once, IoS = m / f_before as for any parent: "ab ab" merged 5 times out
    of 10 "ab": IoS 0.5 (the reference code's m / f_after would say 1)."""
    words = {b"abab": 5}
    assert kernel_events(words, 5, 0.5) == train_picky_reference(words, 5, 0.5) == [(A, B), (256, 256), (256, REMOVED)]
    assert kernel_events(words, 5, 0.6) == [(A, B), (256, 256)]


def test_a_removed_token_expands_through_parents_removed_before_it():
    """"ab" goes first (IoS 1 at tau 0.9); then "abc" goes (IoS 10/11), and its one remaining
    occurrence becomes a, b, c: "ab" is no longer there to stand for a and b."""
    words = {b"abcd": 10, b"abc": 1}
    events = [(A, B), (256, C), (256, REMOVED), (257, D), (257, REMOVED), (A, B)]
    assert train_picky_reference(words, 2, 0.9) == kernel_events(words, 2, 0.9) == events
    assert encode_picky_reference(b"abc", events[:5]) == [A, B, C]
    assert encode_picky_reference(b"abc", events) == [259, C]


def test_removals_make_room_for_more_merges():
    """The vocabulary counts present tokens only: 2 learned tokens present took 3 merges."""
    tok = trained(["abc " * 10 + "ab"], 256 + 3, pattern=None, picky=0.7)
    merges = tok.events[tok.events[:, 1] != REMOVED]
    assert tok.vocab_size == 259 and len(merges) > 3 and tok.removals == len(merges) - 3


def test_ids_are_bytes_then_the_present_tokens_in_the_order_of_the_merges_that_made_them():
    events = np.array([(A, B), (256, C), (256, REMOVED), (A, B), (B, C), (257, REMOVED)], np.int32)
    assert token_ids(events).tolist() == list(range(256)) + [-1, -1, 256, 257]
    tok = PickyTokenizer(events, None, ["<|x|>"])
    assert [tok.token_bytes(i) for i in (256, 257)] == [b"ab", b"bc"]
    assert tok.special_tokens == {"<|x|>": 258} and tok.vocab_size == 259 and tok.n_base == 258
    assert tok.merge_ids.tolist() == [-1, -1, 256, 257] and tok.removals == 2


# -- the kernel against the reference ------------------------------------------------------------

words_strategy = st.dictionaries(st.text(alphabet="abcd", min_size=1, max_size=14).map(str.encode),
                                 st.integers(1, 30), min_size=1, max_size=10)
taus = st.sampled_from([0.05, 0.3, 0.5, 0.6, 0.75, 0.9, 1.0])


@given(words=words_strategy, n_learned=st.integers(0, 50), tau=taus, min_count=st.integers(1, 3),
       limit=st.sampled_from([None, 2, 4]))
@settings(max_examples=examples(400), deadline=None)
def test_the_kernel_makes_the_references_events(words, n_learned, tau, min_count, limit):
    assert kernel_events(words, n_learned, tau, min_count=min_count, max_token_length=limit or 0) == \
        train_picky_reference(words, n_learned, tau, min_count=min_count, max_token_length=limit)


@given(words=words_strategy, n_merges=st.integers(0, 50))
@settings(max_examples=examples(200), deadline=None)
def test_a_tau_above_1_removes_nothing_and_learns_plain_bpe(words, n_merges):
    table = WordTable.from_counts(words)
    plain = train_merges(table.symbols, table.offsets, table.counts, n_merges).tolist()
    assert [list(e) for e in kernel_events(words, n_merges, 2.0)] == plain
    assert [list(m) for m in train_reference(words, n_merges)] == plain
    assert train_picky_reference(words, n_merges, math.inf) == [tuple(m) for m in plain]


@given(words=words_strategy, n_learned=st.integers(0, 50), tau=taus,
       others=st.lists(st.text(alphabet="abcde", max_size=20).map(str.encode), max_size=5))
@settings(max_examples=examples(300), deadline=None)
def test_the_replay_encoder_reaches_the_trainings_segmentation(words, n_learned, tau, others):
    """Every training word encodes to what training left it as; any other text as the plain
    replay of every event (encode_picky_reference) says."""
    table = WordTable.from_counts(words)
    segmentation: list[list[int]] = []
    events = train_picky(table.symbols, table.offsets, table.counts, n_learned, tau, segmentation=segmentation)
    ids = token_ids(events)
    encoder = PickyEncoder(events, ids)
    for i, tokens in enumerate(segmentation):
        assert encoder.encode(table.word(i)) == ids[tokens].tolist()
    for text in [*words, *others]:
        assert encoder.encode(text) == ids[encode_picky_reference(text, [tuple(e) for e in events.tolist()])].tolist()


@pytest.mark.parametrize("tau", [0.6, 0.9])
def test_the_kernel_makes_the_references_events_on_real_text(tau):
    words = bpe_fast.count_from_iterator(SMALL, progress="none").as_dict()
    assert kernel_events(words, 150, tau) == train_picky_reference(words, 150, tau)


@needs_data
@pytest.mark.slow
def test_the_kernel_makes_the_references_events_on_a_corpus_slice(corpora):
    text = read_corpus(corpora / "the-verdict.txt")
    words = bpe_fast.count_from_iterator([text], pattern="gpt2", progress="none").as_dict()
    for tau in (0.6, 0.9):
        assert kernel_events(words, 120, tau) == train_picky_reference(words, 120, tau)


def replayed(tok, chunk: str) -> list[int]:
    """One chunk's ids, as a Picky BPE tokenizer's encoder replays it alone."""
    encoder = encoder_for(tok)
    assert isinstance(encoder, ChunkEncoder)
    return encoder.encode_chunk(chunk)


# -- the tokenizer -------------------------------------------------------------------------------

@needs_data
@pytest.mark.parametrize("path", corpus_params())
def test_encoding_replays_the_training_and_round_trips_on_every_corpus(path):
    """Trained on the first 200 KB of the corpus: every distinct chunk encodes to the training's
    own segmentation of it, and the text (and the next 100 KB, not trained on) round-trips."""
    text = read_corpus(path)
    train_text, held_out = text[:200_000], text[200_000:300_000]
    table = bpe_fast.count_from_iterator([train_text], progress="none")
    segmentation: list[list[int]] = []
    events = train_picky(table.symbols, table.offsets, table.counts, 1500, 0.7, segmentation=segmentation)
    tok = PickyTokenizer(events, table.pattern)
    for i, tokens in enumerate(segmentation):
        assert replayed(tok, table.word(i).decode("utf-8")) == tok.event_ids[tokens].tolist()
    for part in (train_text, held_out):
        ids = tok.encode(part)
        assert tok.decode(ids) == part
        assert max(ids, default=0) < tok.vocab_size


def test_training_is_the_kernels_and_encodes_as_the_replay():
    tok = trained(SMALL, 600, picky=0.6, special_tokens=["<|endoftext|>"])
    table = bpe_fast.count_from_iterator(SMALL, special_tokens=["<|endoftext|>"], progress="none")
    assert np.array_equal(tok.events, train_picky(table.symbols, table.offsets, table.counts, 600 - 257, 0.6))
    assert tok.vocab_size == 600 and tok.special_tokens == {"<|endoftext|>": 599} and tok.removals > 0
    text = small_text()
    assert tok.encode(text + "<|endoftext|>", allowed_special="all")[-1] == 599
    assert tok.decode(tok.encode(text)) == text
    assert tok.encode_batch([text, text[:50]], workers=2) == [tok.encode(text), tok.encode(text[:50])]
    assert tok.count_tokens(text) == len(tok.encode(text)) == len(tok.encode_to_numpy(text))
    plain = bpe_fast.train_from_iterator(SMALL, 600, progress="none")
    assert len(tok.encode(text)) != len(plain.encode(text))      # removals changed what was learned


def test_without_removals_it_encodes_as_the_plain_tokenizer():
    """A Picky tokenizer whose events hold no removal is plain BPE: the replay of its merges in
    order gives tiktoken's lowest-rank-first ids."""
    plain = bpe_fast.train_from_iterator(SMALL, 700, pattern="gpt2", progress="none")
    tok = PickyTokenizer(plain.merges, plain.pattern)
    text = small_text()
    assert tok.encode(text) == plain.encode(text)
    assert tok.mergeable_ranks() == plain.mergeable_ranks()


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", None, r"\w+"])
def test_every_pattern_splits_text_into_the_chunks_training_counted(pattern):
    """The native scanner, the regex (the text it skips kept as chunks) or no split: the chunks
    of Splitter.chunks, each replayed on its own; lone surrogates become U+FFFD, as in plain
    tokenizers."""
    tok = bpe_fast.train_from_iterator(SMALL, 500, pattern=pattern, picky=0.8, progress="none")
    text = small_text()
    assert tok.encode(text) == [i for chunk in tok.splitter.chunks(text) for i in replayed(tok, chunk)]
    odd = text[:200] + " \ud800 tail"
    assert tok.decode(tok.encode(odd)) == odd.replace("\ud800", "\ufffd")


def test_a_list_of_sizes_cuts_the_events_where_a_shorter_training_stops():
    many = bpe_fast.train_from_iterator(SMALL, [300, 450, 600], picky=0.6, progress="none")
    for tok, size in zip(many, (300, 450, 600)):
        alone = bpe_fast.train_from_iterator(SMALL, size, picky=0.6, progress="none")
        assert tok == alone and tok.vocab_size == size
    assert len(events_for(trained(SMALL, 600, picky=0.6).events, 0)) == 0
    with pytest.raises(VocabularyError, match="out of range"):
        many[0].truncated(601)


def test_hugging_face_ties_break_by_its_byte_order():
    """tie_break="huggingface": the reference on bytes renumbered as BpeTrainer numbers them,
    then numbered back; ties among the bytes really decide merges here."""
    hf_id = np.argsort(np.array(huggingface_byte_order()))
    words = bpe_fast.count_from_iterator(SMALL, pattern="gpt2", progress="none").as_dict()
    renumbered = {bytes(hf_id[b] for b in w): n for w, n in words.items()}
    byte_of = np.array(huggingface_byte_order())
    expected = [tuple(int(byte_of[i]) if 0 <= i < 256 else i for i in e)
                for e in train_picky_reference(renumbered, 200, 0.6)]
    tok = trained(SMALL, 456, pattern="gpt2", picky=0.6, tie_break="huggingface")
    assert [tuple(e) for e in tok.events.tolist()] == expected
    assert expected != train_picky_reference(words, 200, 0.6)


def test_save_and_load_keep_the_events(tmp_path):
    tok = trained(SMALL, 500, picky=0.7, special_tokens=["<|endoftext|>"], normalize="nfkc")
    tok.save(tmp_path / "tok.json")
    text = (tmp_path / "tok.json").read_text()
    assert '"version": 3' in text and '"picky": 0.7' in text and '"merges"' not in text
    removed = int(tok.events[tok.events[:, 1] == REMOVED][0, 0])
    assert tok.removals > 0 and f"  [{removed}, -1]" in text
    back = bpe_fast.load(tmp_path / "tok.json")
    assert isinstance(back, PickyTokenizer) and back == tok and back.picky == 0.7
    assert back.encode(small_text()) == tok.encode(small_text())
    assert bpe_fast.Tokenizer.load(tmp_path / "tok.json") == tok
    for kept in (tok, back, pickle.loads(pickle.dumps(tok))):       # a Tokenizer's attributes, with no second level
        assert kept.boundless_eligible is None and len(kept.supermerges) == 0 and not kept.is_boundless


@pytest.mark.parametrize("fmt", ["huggingface", "tiktoken", "minbpe", "gpt2"])
def test_no_other_format_can_hold_it(tmp_path, fmt):
    tok = bpe_fast.train_from_iterator(SMALL, 400, picky=0.7, pattern="gpt2", progress="none")
    with pytest.raises(VocabularyError, match="cannot hold a Picky BPE tokenizer"):
        tok.save(tmp_path / "out" / "x", format=fmt)
    with pytest.raises(VocabularyError, match="cannot hold a Picky BPE tokenizer"):
        formats.check_writable(fmt, tok.pattern, [], None, picky=True)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    for refused in (tok.to_tiktoken, tok.to_transformers, tok.with_huggingface_ids):
        with pytest.raises(VocabularyError, match="Picky BPE"):
            refused()
    with pytest.raises(VocabularyError, match="cannot hold a Picky BPE tokenizer"):
        formats.tiktoken.write_tiktoken(tok, tmp_path / "x.tiktoken")      # the writer itself, not only save


def test_a_bad_events_file_is_refused(tmp_path):
    def file_with(**fields) -> str:
        path = tmp_path / "t.json"
        path.write_text(json.dumps({"format": "bpe_fast.tokenizer", "version": 3, "pattern": None, **fields}))
        return str(path)

    with pytest.raises(TokenizerFileError, match="missing field 'events'"):
        bpe_fast.load(file_with(merges=[[97, 98]]))
    with pytest.raises(VocabularyError, match="event 0 removes 97"):
        bpe_fast.load(file_with(events=[[97, -1]]))
    with pytest.raises(VocabularyError, match=r"event 2 merges \(256, 99\)"):
        bpe_fast.load(file_with(events=[[97, 98], [256, -1], [256, 99]]))
    with pytest.raises(TokenizerFileError, match="picky must be null or a threshold"):
        bpe_fast.load(file_with(events=[[97, 98]], picky=2))
    assert bpe_fast.load(file_with(events=[[97, 98]], picky=None)).encode("ab") == [256]


# -- arguments -----------------------------------------------------------------------------------

@pytest.mark.parametrize("tau", [0, -0.5, 1.5, math.nan, True, "0.9"])
def test_picky_must_be_a_threshold_in_0_1(tau):
    with pytest.raises(ArgumentError, match="picky=.* must be a threshold tau with 0 < tau <= 1"):
        bpe_fast.train_from_iterator(SMALL, 400, picky=tau)


def test_picky_refuses_what_it_cannot_combine_with():
    base = bpe_fast.train_from_iterator(SMALL, 300, progress="none")
    with pytest.raises(ArgumentError, match="picky= cannot be combined with base="):
        bpe_fast.train_from_iterator(SMALL, 400, picky=0.9, base=base)
    with pytest.raises(ArgumentError, match="picky= cannot be combined with superword_at="):
        bpe_fast.train_from_iterator(SMALL, 400, picky=0.9, superword_at=300)
    picky = bpe_fast.train_from_iterator(SMALL, 300, picky=0.9, progress="none")
    with pytest.raises(ArgumentError, match="base= is a Picky BPE tokenizer"):
        bpe_fast.train_from_iterator(SMALL, 400, base=picky)


def test_train_from_table_and_the_cli(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(small_text() * 4, encoding="utf-8")
    table = bpe_fast.count([corpus], progress="none")
    from_table = bpe_fast.train_from_table(table, 500, picky=0.8, progress="none")
    assert from_table == bpe_fast.train([corpus], 500, picky=0.8, progress="none")
    train = ["train", str(corpus), "--vocab-size", "500", "--picky"]
    assert main([*train, "0.8", "-o", str(tmp_path / "t.json")]) == 0
    assert "tokens removed: Picky BPE" in capsys.readouterr().out
    assert bpe_fast.load(tmp_path / "t.json") == from_table
    assert main([*train, "0.8", "-o", str(tmp_path / "t.tiktoken")]) == 2
    assert "cannot hold a Picky BPE tokenizer" in capsys.readouterr().err
    assert not (tmp_path / "t.tiktoken").exists()
    with pytest.raises(SystemExit):
        main([*train, "1.5", "-o", str(tmp_path / "u.json")])
    assert "0 < TAU <= 1" in capsys.readouterr().err


def test_the_merge_steps_are_bounded():
    """No proof says merges and removals cannot alternate for ever, so the steps are bounded: a
    bound of 40 steps stops after exactly 40 (each step one merge event), the events a prefix of
    the unbounded training's."""
    table = bpe_fast.count_from_iterator(SMALL, progress="none")
    stats: dict = {}
    bounded = train_picky(table.symbols, table.offsets, table.counts, 300, 0.6, stats=stats, max_steps=40)
    free = train_picky(table.symbols, table.offsets, table.counts, 300, 0.6)
    assert stats["steps"] == 40 and int(np.sum(bounded[:, 1] != REMOVED)) == 40
    assert np.array_equal(bounded, free[:len(bounded)]) and len(free) > len(bounded)


@sparse_files
def test_a_chunk_too_long_for_pickys_int32_places_is_refused_before_anything_is_allocated(tmp_path):
    # _picky keeps a chunk's length as int32: a chunk of 2**31 bytes (a sparse file, never read)
    # would be laid out in 8 GiB of tokens and then wrap to a negative length (a chunk never
    # merged). It is refused in one line, as any chunk PickyEncoder could not encode.
    n = 2**31
    assert n > PICKY_LONGEST
    table = bpe_fast.WordTable(sparse_array(tmp_path / "symbols", np.uint8, n), np.array([0, n]), np.array([1]))
    before = resident_bytes()
    with pytest.raises(ArgumentError, match=r"picky=: chunk 0 of the word table is 2,147,483,648 bytes; Picky BPE "
                                            r"trains on chunks of at most 2,147,483,646 bytes"):
        bpe_fast.train_from_table(table, 300, picky=0.9, progress="none")
    assert resident_bytes() - before < 64 << 20
