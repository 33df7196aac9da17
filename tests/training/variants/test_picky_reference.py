"""Picky BPE's plain-Python oracle (training/variants/picky_reference.py), on cases worked out by
hand: a removed token's expansion, the replay of events, the ids of the tokens left, and a
training whose IoS is computed before the merge. (The kernel and the encoder are held to it in
test_picky.py.)"""
from __future__ import annotations

from bpe_fast.training.variants.picky_reference import (REMOVED, encode_picky_reference, expand, picky_token_ids,
                                                        replace_token, token_counts, train_picky_reference)

A, B, C = b"abc"


def test_a_removed_token_expands_through_its_removed_parents():
    parents = {256: (A, B), 257: (256, C)}
    assert expand(257, parents, removed=set()) == [256, C]
    assert expand(257, parents, removed={256}) == [A, B, C]
    assert replace_token([1, 257, 2, 257], 257, [5, 6]) == [1, 5, 6, 2, 5, 6]
    assert token_counts([[A, A, B], [A]], [2, 5]) == {A: 9, B: 2}


def test_events_replay_in_order():
    """(a, b) makes 256, (256, c) makes 257, then 256 goes: "abc" stays 257, "ab" is a, b again."""
    events = [(A, B), (256, C), (256, REMOVED)]
    assert encode_picky_reference(b"abc", events) == [257]
    assert encode_picky_reference(b"ab", events) == [A, B]
    assert encode_picky_reference(b"ab", events[:2]) == [256]


def test_the_tokens_left_are_numbered_after_the_bytes_in_the_order_they_were_made():
    assert picky_token_ids([(A, B), (B, C), (256, REMOVED)]) == {b: b for b in range(256)} | {257: 256}


def test_ios_is_the_merges_share_of_the_parents_occurrences_just_before():
    """"aaaa" x 3: (a, a) 9 times (overlapping) makes [256, 256], six 256s; (256, 256) 3 times
    makes 257, taking 3 of the six: IoS 0.5. At tau 0.5 256 goes, above it stays; a byte never
    goes. A limit of 3 bytes forbids (256, 256), and nothing is left to merge."""
    words = {b"aaaa": 3}
    assert train_picky_reference(words, 2, 0.5) == [(A, A), (256, 256), (256, REMOVED)]
    assert train_picky_reference(words, 2, 0.6) == [(A, A), (256, 256)]
    assert train_picky_reference(words, 2, 0.5, max_token_length=3) == [(A, A)]
    assert train_picky_reference(words, 2, 0.5, min_count=4) == [(A, A)]        # (256, 256): 3 times
