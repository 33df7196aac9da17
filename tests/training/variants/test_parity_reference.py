"""Parity-aware BPE's plain-Python oracle (training/variants/parity_reference.py): the choice of
language (ratio, dev or neither; the window; global merges) and the tie rules, on cases worked out
by hand; and the merges of Hugging Face's ParityBpeTrainer on a slice of the shared corpora. (The
kernel is held to it in test_parity.py.)"""
from __future__ import annotations

from collections import deque

from bpe_fast.training.variants.parity_reference import choose_language, select_window, train_parity_reference

from .conftest import FIVE, MODES, hf_parity, language_docs, reference_words, tables, with_dev

BYTES = [bytes([b]) for b in range(256)]
A, B, C, D, X, Y = b"abcdxy"


def choice(step: int = 0, **settings) -> int:
    defaults: dict = dict(global_merges=0, ratio=None, initial=[100, 100], lengths=[50, 80], exhausted=set(),
                          variant="base", chosen=deque(), window_size=4, alpha=2.0)
    return choose_language(step, **{**defaults, **settings})


def test_the_language_chosen_is_the_least_compressed():
    """Ratio: (initial / now) / ratio, the least first (2.0 against 1.25: the second); neither:
    the most tokens now; an exhausted language never; the global merges first: all together (-1)."""
    assert choice(ratio=[1.0, 1.0]) == 1
    assert choice(ratio=[1.0, 0.5]) == 0                       # 2.0 against 2.5
    assert choice(ratio=[1.0, 1.0], exhausted={1}) == 0
    assert choice() == 1 and choice(lengths=[90, 80]) == 0
    assert choice(2, global_merges=3) == -1 and choice(3, global_merges=3) == 1


def test_the_window_passes_over_a_language_chosen_too_often():
    """Language 1 is best (5.0) but took 4 of the last 4 choices, past the threshold of a half:
    the next best, language 0; when every language is passed over, the last one tried."""
    assert select_window([3.0, 5.0, 1.0], deque([1, 1, 1, 1]), 4, 0.5) == 0
    assert select_window([3.0, 5.0, 1.0], deque([1, 0, 2, 0]), 4, 0.5) == 1
    assert select_window([1.0], deque([0, 0]), 2, 0.5) == 0
    chosen: deque = deque()
    assert [choice(variant="window", chosen=chosen, window_size=2, alpha=1.0) for _ in range(4)] == [1, 1, 0, 1]


def test_two_languages_by_hand():
    """"ab" x 5 (10 tokens) against "cdcd" (4): the first language's (a, b); it then has no pair
    left and is exhausted; the second's (c, d) twice, then ("cd", "cd"); then no language is left."""
    languages = [[([A, B], 5)], [([C, D, C, D], 1)]]
    assert train_parity_reference(languages, 10, BYTES) == [(A, B), (C, D), (257, 257)]


def test_ties_go_to_the_smallest_pair_or_to_hugging_faces_largest():
    languages = [[([A, B], 1), ([X, Y], 1)]]
    assert train_parity_reference(languages, 1, BYTES) == [(A, B)]
    assert train_parity_reference(languages, 1, BYTES, tie_break="huggingface") == [(X, Y)]


def test_the_reference_agrees_with_parity_bpe_trainer():
    """The reference itself (slow) learns ParityBpeTrainer's merges on a small slice: it is an
    oracle of the algorithm, not only of our kernel."""
    train = [language_docs(name, 2_500) for name in FIVE]
    dev = [language_docs(name, 1_500, skip=2_500) for name in FIVE]
    for mode in (MODES[0], MODES[4]):
        theirs = hf_parity(train, 60, dev=dev if mode.get("dev") else None,
                           **{k: v for k, v in mode.items() if k != "dev"})
        dev_words = [reference_words(t) for t in tables(dev)]
        merges = train_parity_reference([reference_words(t) for t in tables(train)], 60,
                                        [bytes([b]) for b in range(256)], tie_break="huggingface",
                                        **with_dev(mode, dev_words))
        names = [bytes([b]) for b in range(256)]
        for a, b in merges:
            names.append(names[a] + names[b])
        assert [(names[a], names[b]) for a, b in merges] == theirs
