"""One Splitter (pretokenize/splitter.py) says what a chunk is, for counting, encoding and encode_corpus
alike."""
from __future__ import annotations

import pickle
from collections import Counter

import pytest
import regex
from hypothesis import given, settings, strategies as st

import bpe_fast
from bpe_fast.counting import inputs
from bpe_fast.counting.workers import CountConfig, count_tasks
from bpe_fast.prepare.corpus import pieces
from bpe_fast.pretokenize.patterns import CL100K, GPT2, O200K, SUPERWORD
from bpe_fast.pretokenize.splitter import NATIVE, REGEX, WHOLE, Splitter

from ..conftest import examples, small_text

SPECIAL = "<|sep|>"


def plain_chunks(text: str, pattern: str | None, specials: list[str], lines: bool) -> list[str]:
    """The chunks spelled out with str methods and regex.findall, not through the Splitter."""
    pieces = [text]
    for token in specials:
        pieces = [part for piece in pieces for part in piece.split(token)]
    if lines:        # a line ends only at "\n" (not at \r or U+2028, as str.splitlines would)
        pieces = [line for piece in pieces for line in regex.findall(r"[^\n]*\n|[^\n]+", piece)]
    pieces = [p for p in pieces if p]
    if pattern is None:
        return pieces
    return [m.group() for piece in pieces for m in regex.finditer(pattern, piece)]


@pytest.mark.parametrize("spelling, name, engine", [
    ("gpt2", "gpt2", NATIVE), ("R50K_BASE", "gpt2", NATIVE), (GPT2, "gpt2", NATIVE),
    ("cl100k_base", "cl100k", NATIVE), (CL100K, "cl100k", NATIVE), ("O200K", "o200k", NATIVE),
    ("superword", "superword", NATIVE), (SUPERWORD, "superword", NATIVE), (r"\w+|\W+", "custom", REGEX),
    (None, "none", WHOLE), ("NONE", "none", WHOLE),
])
def test_a_pattern_is_named_once_whatever_its_spelling(spelling, name, engine):
    splitter = Splitter.of(spelling)
    assert (splitter.name, splitter.engine) == (name, engine)
    assert (splitter.scanner is not None) == (engine == NATIVE)
    assert (splitter.regex is None) == (engine == WHOLE)


text_with_specials = st.lists(st.sampled_from(["Hello", " world", "\n", "\r\n", "  ", SPECIAL, "123", "ünï", "'s",
                                               "\u2028", "\t", "!?", "/"]), max_size=30).map("".join)


@settings(max_examples=examples(150), deadline=None)
@given(text=text_with_specials, pattern=st.sampled_from([GPT2, CL100K, O200K, SUPERWORD, r"\w+|\s+|[^\w\s]+", None]),
       lines=st.booleans())
def test_chunks_are_the_pattern_matches_between_special_tokens_and_lines(text, pattern, lines):
    splitter = Splitter.of(pattern, [SPECIAL], lines)
    assert list(splitter.chunks(text)) == plain_chunks(text, pattern, [SPECIAL], lines)


@settings(max_examples=examples(60), deadline=None)
@given(docs=st.lists(text_with_specials, min_size=1, max_size=6),
       pattern=st.sampled_from([GPT2, CL100K, O200K, SUPERWORD, r"\w+|\s+|[^\w\s]+", None]), lines=st.booleans(),
       as_bytes=st.booleans())
def test_counting_counts_the_splitters_chunks_on_every_engine(docs, pattern, lines, as_bytes):
    splitter = Splitter.of(pattern, [SPECIAL], lines)
    given_docs = [d.encode() for d in docs] if as_bytes else docs
    table = count_tasks(inputs.docs_tasks(given_docs, 64), CountConfig(splitter), workers=1)
    expected = Counter(c.encode() for d in docs for c in splitter.chunks(d))
    assert table.as_dict() == dict(expected)


def test_a_splitter_pickles_without_its_native_parts_and_works_after():
    splitter = Splitter.of("o200k", [SPECIAL])
    assert splitter.scanner is not None                      # made, and cached
    copy = pickle.loads(pickle.dumps(splitter))
    assert copy == splitter and "scanner" not in vars(copy)
    text = "Hello WORLD's<|sep|>123456 x"
    assert list(copy.chunks(text)) == list(splitter.chunks(text)) == plain_chunks(text, O200K, [SPECIAL], False)


def test_the_tokenizer_and_encode_corpus_split_with_the_same_splitter(tmp_path):
    tok = bpe_fast.train_from_iterator([small_text()], 300, pattern="gpt2", progress="none",
                                       special_tokens=[SPECIAL])
    assert tok.splitter == Splitter.of("gpt2") and tok.pattern == GPT2 and tok.pattern_name == "gpt2"
    path = tmp_path / "doc.txt"
    path.write_text("one\ntwo<|sep|>\nthree")
    splitter = Splitter.of(GPT2, [SPECIAL], lines=True)
    assert [text for text, _, _ in pieces([path], splitter)] == ["one\n", "two<|sep|>\n", "three"]


def test_text_a_custom_pattern_skips_is_kept_not_dropped():
    r"""r"\w+" matches no space or punctuation: those become chunks of their own, in training and
    encoding alike, so decode(encode(text)) == text (tiktoken would drop them)."""
    text = "hello, world! hello again; world... 42?"
    assert list(Splitter.of(r"\w+").chunks(text)) == ["hello", ", ", "world", "! ", "hello", " ", "again", "; ",
                                                      "world", "... ", "42", "?"]
    tok = bpe_fast.train_from_iterator([text] * 20, 270, pattern=r"\w+", progress="none")
    for sample in [text, "  leading and trailing  ", "!!!", ""]:
        assert tok.decode(tok.encode(sample)) == sample
        assert tok.decode(tok.encode_batch([sample])[0]) == sample
    learned = {tok.token_bytes(i) for i in range(256, tok.n_base)}
    assert b", " in learned or b"! " in learned            # the skipped text was counted too
