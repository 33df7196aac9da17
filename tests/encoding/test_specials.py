"""Special tokens in the text to encode (encoding/specials.py), by tiktoken's rule, held to tiktoken
itself: ``allowed_special`` encodes the tokens it names as their ids, ``disallowed_special`` makes
the text of the tokens it names an error (by default every token not allowed), any other special
token's text is ordinary text. Where two special tokens start at one place the longest wins
(tiktoken takes whichever its hash map lists first there, so that case is bpe_fast's own rule)."""
from __future__ import annotations

import itertools
from typing import Any

import pytest

import bpe_fast
from bpe_fast import Tokenizer

from ..conftest import need

SPECIALS = ["<|a|>", "<|b|>", "<|c|>"]
TEXT = "hi <|a|> and <|b|>, then <|c|>!"


def tiny() -> Tokenizer:
    return Tokenizer([(104, 105), (32, 256)], "gpt2", SPECIALS)


def outcome(encode, text: str, allowed, disallowed):
    """The ids, or "refused" for tiktoken's ValueError (bpe_fast's EncodingError is one)."""
    try:
        return encode(text, allowed_special=allowed, disallowed_special=disallowed)
    except ValueError:
        return "refused"


def spelled(value) -> str:
    """A test id: a set's tokens sorted, so that every worker names the test alike."""
    return value if value == "all" else "{" + ",".join(sorted(value)) + "}"


@pytest.mark.parametrize("allowed,disallowed", list(itertools.product(
    [set(), {"<|a|>"}, {"<|c|>"}, "all"], ["all", (), {"<|b|>"}, {"<|a|>", "<|b|>"}])), ids=spelled)
def test_allowed_and_disallowed_give_tiktokens_ids_or_its_refusal(allowed, disallowed):
    tiktoken = need("tiktoken")
    tok = tiny()
    enc = tiktoken.Encoding("tiny", pat_str=tok.pattern, mergeable_ranks=tok.mergeable_ranks(),
                            special_tokens=tok.special_tokens)
    assert outcome(tok.encode, TEXT, allowed, disallowed) == outcome(enc.encode, TEXT, allowed, disallowed)


def test_the_longest_special_token_wins_where_two_start_together():
    tok = Tokenizer([], "gpt2", ["<|a|>", "<|a|>x"])
    a, ax = tok.special_tokens["<|a|>"], tok.special_tokens["<|a|>x"]
    assert tok.encode("<|a|>x<|a|>", allowed_special="all") == [ax, a]
    assert tok.encode("<|a|>x", allowed_special={"<|a|>"}, disallowed_special=()) == [a, ord("x")]   # not allowed
    with pytest.raises(bpe_fast.EncodingError, match=r"'<\|a\|>x' at character 0"):
        tok.encode("<|a|>x", allowed_special={"<|a|>"})         # the longer one, disallowed by default


def test_a_disallowed_token_is_named_with_where_it_is_and_the_two_ways_to_encode_it():
    with pytest.raises(bpe_fast.EncodingError) as err:
        tiny().encode("hi hi <|b|>")
    assert str(err.value) == ("text contains the special token '<|b|>' at character 6; pass "
                              "allowed_special={'<|b|>'} to encode it as a special token, or disallowed_special=() "
                              "to encode it as text")
    normalizing = Tokenizer([], "gpt2", ["<|b|>"], normalize="nfkc")
    with pytest.raises(bpe_fast.EncodingError, match=r"'<\|b\|>' at character 2 \(of its NFKC form\)"):
        normalizing.encode("ﬁ<|b|>")                 # "ﬁ" is "fi" in NFKC: the token is at 2 there


@pytest.mark.parametrize("kwargs,error,message", [
    ({"allowed_special": "<|a|>"}, bpe_fast.EncodingError,
     "allowed_special takes \"all\" or a set of special tokens, not one string: write allowed_special={'<|a|>'}"),
    ({"allowed_special": {"<|z|>"}}, bpe_fast.EncodingError,
     r"allowed_special names tokens this tokenizer does not have: \['<\|z\|>'\]"),
    ({"disallowed_special": 5}, bpe_fast.ArgumentTypeError, "disallowed_special takes \"all\" or a set of special "
                                                            "tokens, got int"),
    ({"disallowed_special": {b"<|a|>"}}, bpe_fast.ArgumentTypeError,
     r"disallowed_special holds b'<\|a\|>', which is no special token \(a str\)"),
])
def test_an_argument_that_names_no_special_tokens_is_refused_naming_it(kwargs, error, message):
    with pytest.raises(error, match=message):
        tiny().encode("hi", **kwargs)


def test_disallowed_special_none_means_none_disallowed_as_in_tiktoken():
    tok: Any = Tokenizer([[97, 98]], special_tokens=["<s>"])     # Any: the type hints take no None, tiktoken does
    assert tok.encode("<s>", disallowed_special=None) == tok.encode("<s>", disallowed_special=())
