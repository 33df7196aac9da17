"""BoundlessBPE's plain-Python oracle (training/variants/boundless_reference.py), on cases worked
out by hand: the phase-1 encoder, the units and runs of a document, the supermerges of a run and
their replay. (boundless.py and the encoder are held to it in test_boundless.py.)"""
from __future__ import annotations

from bpe_fast.pretokenize.patterns import BOUNDLESS_ELIGIBLE
from bpe_fast.training.variants.boundless_reference import (encode_boundless_reference, phase_one, pretoken_units,
                                                            replay, runs_of, train_boundless_reference)

space, a, e, f, h, o, t = b" aefhot"

# " of the of the of the.": cl100k's chunks " of" and " the" three times each, then ".".
DOC = " of the of the of the."
# By hand: every pair of the chunks occurs 3 times; ties go to the smallest pair: " o" (256),
# " t" (257), "he" (258); then (" o", "f") and (" t", "he"), 3 times each: " of" (259), " the" (260).
MERGES = [(space, o), (space, t), (h, e), (256, f), (257, 258)]


def test_replay_merges_the_lowest_ranked_pair_leftmost_first():
    ranked = {(1, 2): (0, 10), (10, 3): (1, 11)}
    assert replay([1, 2, 3, 1, 2], ranked) == [11, 10]          # [10, 3, 1, 2], [10, 3, 10], [11, 10]
    assert replay([3, 1], ranked) == [3, 1]


def test_phase_one_encodes_a_chunk_that_is_a_token_as_the_largest_id_of_its_bytes():
    """Merges (a, a), ("aa", a) and (a, "aa") spell "aaa" twice: the chunk "aaa" is the later,
    258, where BPE's replay would make 257."""
    encode = phase_one([(a, a), (256, a), (a, 256)])
    assert encode(b"aaa") == [258] and encode(b"aaaa") == [256, 256] and encode(b"a") == [a]


def test_the_units_of_a_document_and_its_runs():
    """A unit is a pretoken that is one phase-1 token and eligible (letters, a leading space);
    "," is no letter, " cat" more than one token: each breaks the run."""
    encode = phase_one(MERGES)
    units = pretoken_units(" of the, of the cat", "cl100k", encode, BOUNDLESS_ELIGIBLE)
    assert units == [259, 260, None, 259, 260, None]
    assert runs_of([1, 2, None, 3, None, 4, 5, 6]) == [[1, 2], [4, 5, 6]]
    assert runs_of(units) == [[259, 260], [259, 260]]


def test_the_supermerges_of_a_run_by_hand():
    """The run [" of", " the"] x 3 (then "." breaks it): (" of", " the") occurs 3 times (261);
    then (261, 261) twice, overlapping (262); then (262, 261) once (263): the run is one token."""
    merges, supers, segmented = train_boundless_reference([DOC], "cl100k", 5, 3)
    assert merges == MERGES
    assert supers == [(259, 260), (261, 261), (262, 261)]
    assert segmented == {(259, 260, 259, 260, 259, 260): [263]}
    assert encode_boundless_reference(DOC, "cl100k", merges, supers, 261) == [263, ord(".")]
    assert encode_boundless_reference(" of the.", "cl100k", merges, supers, 261) == [261, ord(".")]
