"""One Splitter (pretokenize/splitter.py) says what a chunk is, for counting, encoding and encode_corpus
alike; and where a file may be cut into blocks (is_safe_cut, find_cut): every cut keeps the chunks
of the whole text, with or without a Unicode normalization (the Unicode facts the cut rests on
are checked for every code point)."""
from __future__ import annotations

import pickle
import unicodedata
from collections import Counter
from typing import Literal

import pytest
import regex
from hypothesis import given, settings, strategies as st

import bpe_fast
from bpe_fast.prepare.corpus import pieces
from bpe_fast.pretokenize.patterns import CL100K, GPT2, O200K, SUPERWORD
from bpe_fast.pretokenize.splitter import NATIVE, REGEX, WHOLE, Splitter, chunks_of, find_cut, is_safe_cut

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


# -- where a file may be cut: every cut keeps the chunks -------------------------------------------

NAMED = [GPT2, CL100K, O200K, SUPERWORD]
IDS = ["gpt2", "cl100k", "o200k", "superword"]
LINEY = "ab 1'\n\n\r\n  \t!/\u00a0é😀中\u3000.x"
documents = st.text(alphabet=LINEY, max_size=300)


def whole_counts(text: str, pattern: str) -> Counter:
    return Counter(c.encode("utf-8") for c in chunks_of([text], pattern))


@pytest.mark.parametrize("pattern", NAMED, ids=IDS)
@given(text=documents)
@settings(max_examples=examples(300), deadline=None)
def test_every_safe_cut_keeps_the_chunks(pattern, text):
    """Splitting at *all* safe cuts at once gives exactly the chunks of the whole text."""
    data = text.encode("utf-8")
    cuts = [i for i in range(len(data) + 1) if is_safe_cut(data, i, pattern)]
    pieces = [data[a:b].decode("utf-8") for a, b in zip([0, *cuts], [*cuts, len(data)])]
    assert Counter(c.encode() for c in chunks_of(pieces, pattern)) == whole_counts(text, pattern)


@pytest.mark.parametrize("pattern", NAMED, ids=IDS)
@given(text=st.text(alphabet="ab 1.\r\n\t/é", max_size=200))
@settings(max_examples=examples(300), deadline=None)
def test_crlf_cuts_keep_the_chunks(pattern, text):
    """The same on text made mostly of CRLF line ends (the pattern-specific rules)."""
    data = text.replace("\n", "\r\n").encode("utf-8")
    cuts = [i for i in range(len(data) + 1) if is_safe_cut(data, i, pattern)]
    pieces = [data[a:b].decode("utf-8") for a, b in zip([0, *cuts], [*cuts, len(data)])]
    assert Counter(c.encode() for c in chunks_of(pieces, pattern)) == whole_counts(data.decode(), pattern)


def test_cut_rule_refuses_the_dangerous_places():
    assert find_cut(b"abc\ndef") == 4
    assert find_cut(b"abc \ndef") is None       # gpt2: "\s++$" would take " \n" at a block end
    assert find_cut(b"abc\n def") is None       # the next chunk starts with the space
    assert find_cut(b"abc!\n/def") is None      # o200k: "!\n/" is one chunk
    assert find_cut(b"abc\n\ndef") is None      # gpt2: "\n\n" is two chunks, but one at a block end
    assert find_cut(b"abc\n\ndef\nghi") == 9


# Dense in what the superword rule looks at: letters before digits, pairs of marks, spaces.
superwordy = st.text(alphabet="ab\u00e9\u4e2d 1\u0663!./\n\r\t\u00a0\U0001F600", max_size=200)


@given(text=superwordy)
@settings(max_examples=examples(300), deadline=None)
def test_every_superword_cut_keeps_the_chunks(text):
    data = text.encode("utf-8")
    cuts = [i for i in range(len(data) + 1) if is_safe_cut(data, i, SUPERWORD)]
    pieces = [data[a:b].decode("utf-8") for a, b in zip([0, *cuts], [*cuts, len(data)])]
    assert Counter(c.encode() for c in chunks_of(pieces, SUPERWORD)) == whole_counts(text, SUPERWORD)
    for start in range(len(data) + 1):          # the search finds the first of them from any byte
        assert find_cut(data, start, SUPERWORD) == next((c for c in cuts if c >= start), None)


# Text that NFC/NFKC change: decomposed letters, compatibility forms, a letter NFKC makes a space
# and a mark (U+037A), ASCII letters, digits and marks around them.
normalizable = st.text(alphabet="ae1 !.\u0301\u0308\u037a\ufb01\u2460\u00a8\uff0f\u1112\u1161\n", max_size=120)


@given(text=normalizable, form=st.sampled_from(["nfc", "nfkc"]))
@settings(max_examples=examples(300), deadline=None)
def test_every_normalized_superword_cut_keeps_the_normalized_chunks(text, form):
    """With a normalization, a superword cut must also be a place where normalizing the blocks
    one by one gives the normalized whole, and the chunks of the normalized blocks those of the
    normalized whole: cuts only between ASCII characters (pretokenize._is_superword_cut)."""
    import unicodedata
    data = text.encode("utf-8")
    whole = unicodedata.normalize(form.upper(), text)
    cuts = [i for i in range(len(data) + 1) if is_safe_cut(data, i, SUPERWORD, form)]
    pieces = [unicodedata.normalize(form.upper(), data[a:b].decode("utf-8"))
              for a, b in zip([0, *cuts], [*cuts, len(data)])]
    assert "".join(pieces) == whole
    assert Counter(c.encode() for c in chunks_of(pieces, SUPERWORD)) == whole_counts(whole, SUPERWORD)
    assert not any(data[c - 1] >= 0x80 or data[c] >= 0x80 for c in cuts)


def test_superword_cut_rule_refuses_the_dangerous_places():
    assert find_cut(b"said,\" and", 0, SUPERWORD) == 4      # after a letter, before two marks
    assert find_cut(b"ab\ncd\n", 0, SUPERWORD) is None      # its chunks cross lines: "ab\ncd\n" is one
    assert find_cut(b"a, b.\n", 0, SUPERWORD) is None        # one mark and a space join the chunk
    assert find_cut(b"!!!\n12", 0, SUPERWORD) is None        # no letter before the digits, none after them
    assert find_cut(b"line 12\r\n", 0, SUPERWORD) == 7       # after a digit run: "12" ends there
    assert find_cut(b"a !!", 0, SUPERWORD) == 1              # before a space and two marks: " !!"
    assert find_cut(b"ab !x", 0, SUPERWORD) is None          # a space and one mark join the chunk
    assert find_cut(b"a  b", 0, SUPERWORD) == 1              # before spaces that split: "a", " ", " b"
    assert find_cut(b"a  b", 2, SUPERWORD) is None           # not between them: a block's "  " at its end
    assert find_cut(b"x1", 0, SUPERWORD) == 1
    assert find_cut(b"a!\xff", 0, SUPERWORD) is None         # an invalid byte is no mark
    assert find_cut(b"a 1234", 0, SUPERWORD) is None         # "123" then "4": inside the digit run


# -- cuts under a normalization: the Unicode facts the block cut rests on ---------------------------

FORMS: dict[str, Literal["NFC", "NFKC"]] = {"nfc": "NFC", "nfkc": "NFKC"}
SPACE = regex.compile(r"\s")


def norm(text: str, form: str) -> str:
    return unicodedata.normalize(FORMS[form], text)


def _decomposing() -> list[str]:
    """Every character with a decomposition (canonical or compatibility): only these change
    when normalized alone, and only these can be made by composing others."""
    return [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000 and unicodedata.decomposition(chr(c))]


def test_a_line_end_is_stable_under_every_normalization():
    """"\\n" and "\\r" are starters that no normalization changes, that appear in no character's
    decomposition (so nothing composes with them, and no character normalizes to text holding
    them): normalizing each side of a cut after them gives the normalized whole."""
    decomposing = _decomposing()
    for c in "\n\r":
        assert unicodedata.combining(c) == 0 and unicodedata.decomposition(c) == ""
        assert all(f"{ord(c):04X}" not in unicodedata.decomposition(d).split() for d in decomposing)
        for form in FORMS.values():
            assert unicodedata.normalize(form, c) == c
            assert not [d for d in decomposing if c in unicodedata.normalize(form, d)]


def test_marks_and_composites_are_never_spaces_or_slashes():
    """Whatever follows (precedes) a character, its normalized text's first (last) character is
    of the same kind, space, "/" or other, as in the character normalized alone: reordering moves
    only marks (never a space or "/"), and composing joins two characters, neither a space nor
    "/", into one that is neither (the pairs of canonical decompositions; Hangul syllables are
    letters). Decomposing is per character, the same alone and in context."""
    def odd(c: str) -> bool:
        return c == "/" or bool(SPACE.match(c))

    marks = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000 and unicodedata.combining(chr(c))]
    assert marks and not [m for m in marks if odd(m)]
    pairs = {d: [chr(int(h, 16)) for h in unicodedata.decomposition(d).split()] for d in _decomposing()
             if not unicodedata.decomposition(d).startswith("<") and len(unicodedata.decomposition(d).split()) == 2}
    assert len(pairs) > 1000
    assert not [d for d, parts in pairs.items() if odd(d) or odd(parts[0]) or odd(parts[1])]


def test_nfkc_makes_spaces_and_slashes_of_a_few_characters_which_then_refuse_a_cut():
    """NFKC turns "\\u00a8" into " \\u0308" and "\\uff0f" into "/": after a line end they would
    let a chunk run across the cut once normalized ("!\\n/" is one o200k chunk), so no cut there."""
    data = "ab!\n\uff0fc\n".encode()
    cut = data.index(b"\n") + 1
    assert is_safe_cut(data, cut, "o200k") and find_cut(data, 0, "o200k") == cut         # the text as it is
    assert not is_safe_cut(data, cut, "o200k", normalize="nfkc") and find_cut(data, 0, "o200k", "nfkc") is None
    assert is_safe_cut(data, cut, "o200k", normalize="nfc")                            # NFC keeps "\uff0f"
    whole, head, tail = (norm(t, "nfkc") for t in ("ab!\n\uff0fc\n", "ab!\n", "\uff0fc\n"))
    assert chunks_of([whole], "o200k") != chunks_of([head], "o200k") + chunks_of([tail], "o200k")
    assert not is_safe_cut("ab\n\u00a8c".encode(), 3, "gpt2", normalize="nfkc")
    assert is_safe_cut("ab\n\u00e9c".encode(), 3, "gpt2", normalize="nfkc")          # other letters: as before


CUT_ALPHABET = st.sampled_from(["a", "b", "e", "=", "!", "/", " ", "\n", "\r", "\r\n", "\u0301", "\u0316",
                                "\u0338", "\u0345", "ﬁ", "①", "Ａ", "\u00a8", "\uff0f", "½", "\u1100", "\u1161",
                                "\u11a8", "\u212b", "\u3000", "\u00a0", "7"])


# Lines of those characters, ended by "\n" or "\r\n": many line ends between solid characters.
CUT_TEXT = st.lists(st.tuples(st.lists(CUT_ALPHABET, min_size=1, max_size=5).map("".join),
                              st.sampled_from(["\n", "\r\n"])), min_size=1, max_size=8) \
    .map(lambda lines: "".join(line + end for line, end in lines))


@settings(max_examples=examples(200), deadline=None)
@given(CUT_TEXT, st.sampled_from(["nfc", "nfkc"]))
def test_every_cut_keeps_the_normalized_text_and_its_chunks(text, form):
    data = text.encode()
    for name in ("gpt2", "cl100k", "o200k"):
        for i in range(len(data) + 1):
            if not is_safe_cut(data, i, name, normalize=form):
                continue
            head, tail = data[:i].decode(), data[i:].decode()
            assert norm(head, form) + norm(tail, form) == norm(text, form)
            whole = chunks_of([norm(text, form)], name)
            assert chunks_of([norm(head, form)], name) + chunks_of([norm(tail, form)], name) == whole


def test_splitter_chunks_normalize_first():
    assert list(Splitter.of("gpt2", normalize="nfkc").chunks("ﬁne ①")) == ["fine", " 1"]
    assert chunks_of(["ﬁne"], "gpt2") == ["ﬁne"]


# -- special tokens refused where they are given ----------------------------------------------------

def test_special_tokens_given_as_a_set_are_refused():
    with pytest.raises(bpe_fast.ArgumentTypeError, match="not a set"):
        bpe_fast.train_from_iterator(["abc"], 300, special_tokens={"<a>", "<b>"})  # type: ignore[call-overload]


@pytest.mark.parametrize("make", [
    lambda: bpe_fast.train_from_iterator(["ab ab"], 300, special_tokens=["<s>", "\ud800"]),
    lambda: bpe_fast.count_from_iterator(["ab ab"], special_tokens=["x\udcff"]),
    lambda: bpe_fast.Tokenizer([], special_tokens=["\ud800"]),
    lambda: bpe_fast.Tokenizer([], special_tokens={"\ud800": 256}),
    lambda: bpe_fast.train_from_iterator(["ab ab"], 300, pattern="\\w+|\ud800"),
])
def test_a_special_token_with_a_lone_surrogate_is_refused_when_given(make):
    """Not a UnicodeEncodeError later, when counting, encoding or saving (nor a pattern with one, which
    trained and then could not be saved)."""
    with pytest.raises((bpe_fast.ArgumentError, bpe_fast.VocabularyError), match="holds a lone surrogate"):
        make()
