"""The native measures of the quality report (quality/_measure.pyx): ``measure_texts`` counts each
text's UTF-8 bytes as ``str.encode`` does and its words as ``str.split()`` does (a word running
across pieces of one document counted once), ``count_ids`` counts ids as ``np.bincount`` does."""
from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast.quality import report as quality
from bpe_fast.quality._measure import count_ids, measure_texts

from ..conftest import examples

SPACES = [" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u1680", "\u2000", "\u200a",
          "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
NOT_SPACES = ["a", "é", "ÿ", "中", "\U0001F600", "\x00", "\x08", "\x0e", "\x1b", "\x7f", "\u200b", "\ufeff",
              "\u180e", "\xad", "\u2060", "\ud800", "\udfff"]


@settings(max_examples=examples(300), deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(SPACES + NOT_SPACES)).map("".join), min_size=1, max_size=6),
       continues=st.lists(st.booleans(), min_size=6, max_size=6))
def test_bytes_and_words_are_what_encode_and_split_count_whatever_the_pieces(texts, continues):
    """Piece i continues the document of piece i - 1 (a later block of a file) where continues[i]:
    the words of the pieces are those of the documents they make (as _batches reads them)."""
    pieces = [(quality.ALL, text, i == 0 or not continues[i]) for i, text in enumerate(texts)]
    batch = next(quality._batches(iter(pieces), {}))
    sizes, words = measure_texts(batch.texts, batch.after_space.view(np.uint8))
    documents: list[str] = []
    for _, text, starts in pieces:
        documents += [text] if starts else []
        documents[-1] += "" if starts else text
    assert sizes.tolist() == [len(t.encode("utf-8", "surrogatepass")) for t in texts]
    assert int(words.sum()) == sum(len(d.split()) for d in documents)


def test_every_unicode_space_splits_words_and_nothing_else_does():
    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    assert len(spaces) > 20                                        # \t...\r, \x1c...\x1f, " ", \x85, \xa0, U+2000...
    text = "x".join(spaces) + "x"                                 # a word after every space
    others = "".join(chr(c) for c in range(0x2100) if not chr(c).isspace()) + "\U0001F600\U0010FFFF"
    sizes, words = measure_texts([text, others, ""], np.ones(3, np.uint8))
    assert words.tolist() == [len(text.split()), 1, 0] == [len(spaces), 1, 0]
    assert sizes.tolist() == [len(text.encode()), len(others.encode("utf-8", "surrogatepass")), 0]


@settings(max_examples=examples(40), deadline=None)
@given(ids=st.lists(st.integers(0, 99), max_size=500))
def test_count_ids_is_bincount_and_refuses_an_id_past_the_table(ids):
    counts = np.full(100, 3, np.int64)
    count_ids(np.array(ids, np.uint32), counts)
    assert counts.tolist() == (np.bincount(np.array(ids, np.int64), minlength=100) + 3).tolist()
    with pytest.raises(ValueError, match="id 100 is past the table of 100 counts"):
        count_ids(np.array(ids + [100, 1], np.uint32), counts)          # the ids before it are counted
    assert counts.tolist() == (2 * np.bincount(np.array(ids, np.int64), minlength=100) + 3).tolist()
