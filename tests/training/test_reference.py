"""The plain-Python trainer (training/reference.py), the oracle the kernel and the variants are
held to: its rules checked on cases worked out by hand (Sennrich et al.'s example, overlapping
pairs, a length limit, a minimum count) and on continuing from a layout."""
from __future__ import annotations

from bpe_fast import Tokenizer
from bpe_fast.training.reference import count_pairs, merge_word, train_reference

e, s, t, o, w = b"estow"
L = ord("l")                  # (a lower-case l reads as 1)
SENNRICH = {b"low": 5, b"lower": 2, b"newest": 6, b"widest": 3}


def test_sennrichs_example_by_hand():
    """Pairs: (e, s) and (s, t) 9 times each (newest, widest): the smaller pair first, then
    "es" + "t"; (l, o) and (o, w) 7 times: (l, o), then "lo" + "w"; then (n, e), (e, w) and
    (w, "est") 6 times each: the smallest, (e, w)."""
    counts: list[int] = []
    merges = train_reference(SENNRICH, 5, chosen=counts)
    assert merges == [(e, s), (256, t), (L, o), (258, w), (e, w)]
    assert counts == [9, 9, 7, 7, 6]


def test_overlapping_pairs_count_but_merge_left_to_right_without_overlap():
    assert count_pairs([[L, L, L], [L, o]], [5, 2]) == {(L, L): 10, (L, o): 2}
    assert merge_word([L, L, L], (L, L), 256) == [256, L]
    assert merge_word([L, o, L, o, L], (L, o), 300) == [300, 300, L]
    assert train_reference({b"lll": 5, b"lo": 9}, 2) == [(L, L), (L, o)]       # 10 against 9


def test_a_token_longer_than_the_limit_is_never_made():
    """"wwww": (w, w) makes "ww"; ("ww", "ww") would be 4 bytes: with a limit of 3 it is never
    merged, and no other pair is left."""
    assert train_reference({b"wwww": 1}, 5) == [(w, w), (256, 256)]
    assert train_reference({b"wwww": 1}, 5, max_token_length=3) == [(w, w)]


def test_it_stops_at_the_minimum_count_or_when_no_pair_is_left():
    assert train_reference(SENNRICH, 100, min_count=7) == [(e, s), (256, t), (L, o), (258, w)]
    assert len(train_reference({b"ab": 1}, 10)) == 1


def test_the_reference_continues_the_same_way():
    words = {b"lower": 5, b"lowest": 3, b"newer": 6, b"wider": 2, b"low": 7}
    first = train_reference(words, 4)
    tok = Tokenizer(first, pattern=None)
    start = [tok.encode_ordinary(w.decode()) for w in words]
    lengths = {256 + i: len(tok.token_bytes(256 + i)) for i in range(len(first))}
    rest = train_reference(words, 6, start=start, token_lengths=lengths, first_id=256 + len(first))
    assert first + rest == train_reference(words, 10)
