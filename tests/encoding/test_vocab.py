"""A tokenizer's vocabulary from its parts (encoding/vocab.py): every id's bytes spelled from the
merges (worked out by hand here), and every inconsistency a VocabularyError saying what is wrong:
a pair merged twice, two tokens on one id, ids too sparse to index, a special token on a learned
id; a tokenizer cut to a smaller size, or extended, stays consistent."""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import bpe_fast
from bpe_fast import Tokenizer, VocabularyError
from bpe_fast.encoding.vocab import MAX_UNUSED_IDS

BYTES = {bytes([b]): b for b in range(256)}


def test_duplicate_ids_and_colliding_specials():
    with pytest.raises(VocabularyError, match="merge 1 makes token id 256, which is already b'ab'"):
        Tokenizer([[97, 98], [98, 99]], merge_ids=[256, 256])
    with pytest.raises(VocabularyError,
                       match="special token '<s>' has id 256, which is already the learned token b'ab'"):
        Tokenizer([[97, 98]], special_tokens={"<s>": 256})
    with pytest.raises(VocabularyError, match="rank 5 is given to both"):
        Tokenizer.from_ranks({**BYTES, b"ab": 5})


def test_merges_that_repeat_a_pair_are_refused_on_every_path(tmp_path):
    """A pair merged twice would give its bytes two ids: ranks, tiktoken and tokenizer.json files
    would each hold another vocabulary. Refused from a list, bpe_fast JSON and a minbpe .model."""
    with pytest.raises(bpe_fast.VocabularyError, match=r"merge 2 is \(104, 101\), the pair merge 0 already"):
        Tokenizer([[104, 101], [256, 108], [104, 101]])
    good = Tokenizer([[104, 101], [256, 108]])
    good.save(tmp_path / "tok.json")
    data = json.loads((tmp_path / "tok.json").read_text())
    data["merges"].append([104, 101])
    (tmp_path / "tok.json").write_text(json.dumps(data))
    (tmp_path / "tok.model").write_text("minbpe v1\n\n0\n104 101\n104 101\n")
    for name in ("tok.json", "tok.model"):
        with pytest.raises(bpe_fast.TokenizerFileError, match=f"{name}: merge 1 is|{name}: merge 2 is"):
            bpe_fast.load(tmp_path / name)
    assert len(good.mergeable_ranks()) == good.vocab_size          # the pairs once each: one id per token


# -- the bytes of every id, worked out by hand --------------------------------------------------------

def test_each_merge_spells_the_bytes_of_its_pair():
    tok = Tokenizer([(104, 105), (256, 33), (32, 257)])          # "hi", "hi!", " hi!"
    assert [tok.token_bytes(i) for i in (256, 257, 258)] == [b"hi", b"hi!", b" hi!"]
    assert tok.vocab_size == 259 and tok.decode_bytes([258, 104]) == b" hi!h"


def test_bytes_and_merges_may_have_ids_of_their_own():
    """byte b as id 255 - b and the merges on ids of the file's choosing, with gaps between."""
    byte_ids = [255 - b for b in range(256)]
    tok = Tokenizer([(255 - ord("h"), 255 - ord("i")), (300, 255 - ord("!"))], merge_ids=[300, 310],
                    byte_ids=byte_ids, special_tokens={"<s>": 305})
    assert tok.token_bytes(255 - ord("h")) == b"h" and tok.token_bytes(300) == b"hi" and tok.token_bytes(310) == b"hi!"
    assert tok.encode("hi! <s>", allowed_special="all") == [310, 255 - ord(" "), 305]
    with pytest.raises(bpe_fast.EncodingError, match=r"token id 301 \(position 0\) is not in the vocabulary"):
        tok.decode([301])                                          # a gap: no token has it


@pytest.mark.parametrize("merges,message", [
    ([[97, 98, 99]], r"merges must be pairs of ids, got an array of shape \(1, 3\)"),
    ([[97, 98], [99]], "merges must be integer ids"),
    ([["a", "b"]], "merges must be integer ids, got values of type <U1"),
    ([[97, 300]], r"merge 0 is \(97, 300\): its ids must be single bytes or tokens made by earlier merges"),
    ([[256, 97], [97, 98]], r"merge 0 is \(256, 97\)"),                 # made only later
])
def test_merges_that_are_not_pairs_of_known_ids_are_refused(merges, message):
    with pytest.raises(VocabularyError, match=message):
        Tokenizer(merges)


def test_ids_may_leave_at_most_a_million_unused():
    edge = 256 + MAX_UNUSED_IDS                # 257 tokens: ids up to 257 + MAX_UNUSED_IDS - 1 are taken
    assert Tokenizer([[97, 98]], merge_ids=[edge]).token_bytes(edge) == b"ab"
    with pytest.raises(VocabularyError, match=rf"token id {edge + 1} is out of range: 257 tokens need ids below "
                                              rf"{257 + MAX_UNUSED_IDS:,}"):
        Tokenizer([[97, 98]], merge_ids=[edge + 1])
    with pytest.raises(VocabularyError, match="special token '<s>' has id 1000000000 is out of range"):
        Tokenizer([[97, 98]], special_tokens={"<s>": 10**9})
    with pytest.raises(VocabularyError, match="the 256 single-byte tokens must have 256 distinct ids"):
        Tokenizer([], byte_ids=[0] * 256)
    with pytest.raises(VocabularyError, match="token ids must be >= 0, got -1"):
        Tokenizer([[97, 98]], merge_ids=[-1])


# -- special tokens ----------------------------------------------------------------------------------

def test_special_tokens_follow_the_learned_ids_in_their_order_or_take_the_ids_given():
    assert Tokenizer([[97, 98]], special_tokens=["<b>", "<a>"]).special_tokens == {"<b>": 257, "<a>": 258}
    assert Tokenizer([[97, 98]], special_tokens={"<a>": 400}).special_tokens == {"<a>": 400}
    cases: list[tuple[Any, str]] = [({"<a>": 300, "<b>": 300}, "special tokens share ids"),
                                    ({"": 300}, "special token '' must be a non-empty string"),
                                    ({"<a>": -3}, "special token '<a>' has id -3; ids are non-negative integers"),
                                    ({"<a>": True}, "special token '<a>' has id True")]
    for specials, message in cases:
        with pytest.raises(VocabularyError, match=message):
            Tokenizer([[97, 98]], special_tokens=specials)


# -- cut to a smaller size, extended -------------------------------------------------------------------

def test_a_tokenizer_cut_keeps_its_first_merges_and_its_special_tokens_after_them():
    tok = Tokenizer([(104, 105), (32, 256), (256, 33)], "gpt2", ["<|a|>", "<|b|>"])
    cut = tok.truncated(259)
    assert cut.merges.tolist() == [[104, 105]] and cut.special_tokens == {"<|a|>": 257, "<|b|>": 258}
    assert cut == Tokenizer([(104, 105)], "gpt2", ["<|a|>", "<|b|>"])
    assert tok.truncated(tok.vocab_size) == tok
    for size in (257, 262):
        with pytest.raises(VocabularyError, match=rf"vocab_size={size} is out of range: this tokenizer can be cut "
                                                  rf"to 258..261 tokens"):
            tok.truncated(size)


def test_a_tokenizer_extended_is_the_tokenizer_built_whole():
    base = Tokenizer([(104, 105)], "gpt2", ["<|e|>"])
    grown = base._extended(np.array([[32, 256]]), np.array([258]), {"<|e|>": 257})
    assert grown == Tokenizer([(104, 105), (32, 256)], "gpt2", {"<|e|>": 257}, merge_ids=[256, 258])
    assert grown.token_bytes(258) == b" hi" and base.vocab_size == 258        # the base is unchanged
    for pair, new in (((32, 258), 258), ((32, 104), 256)):     # a token not made yet; an id already taken
        with pytest.raises(VocabularyError, match=rf"cannot extend with merge \({pair[0]}, {pair[1]}\) -> {new}"):
            base._extended(np.array([pair]), np.array([new]), {"<|e|>": 257})
