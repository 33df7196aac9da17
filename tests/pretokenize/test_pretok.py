"""The native scanners split text exactly as regex.findall does with the named patterns (superword
included: SuperBPE's stage-two rule)."""
from __future__ import annotations

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpe_fast import CL100K, GPT2, O200K
from bpe_fast.pretokenize.patterns import SUPERWORD
from bpe_fast.pretokenize._pretok import PATTERN_IDS, Scanner, _simd_level
from bpe_fast.pretokenize.splitter import char_classes, native_scanner

from ..conftest import SHARED, corpus_params, examples

PATTERNS = {"gpt2": GPT2, "cl100k": CL100K, "o200k": O200K, "superword": SUPERWORD}

# One or more characters of every class the patterns tell apart: Lu Ll Lt Lm Lo, marks (Mn Mc
# Me), Nd Nl No, every kind of \s, \r and \n, quotes before (case-folded) contraction letters
# including U+017F (long s, which (?i)s matches), punctuation with "/", emoji, CJK.
ALPHABET = ("AZaz\u01c5\u02b0\u4e2d\u3042\u00e9\u0301\u0300\u0903\u20dd079\u00b2\u216b"
            "\t\n\r\x0b\x0c \x85\u00a0\u2028\u3000''sSdDmMtTlLvVeErR\u017f!./-_?😀👍🏽\u200d")
tricky = st.text(alphabet=ALPHABET, max_size=80)


@pytest.mark.parametrize("name", PATTERNS)
@given(text=tricky)
@settings(max_examples=examples(2000), deadline=None)
def test_scanner_equals_regex_on_tricky_text(name, text):
    assert native_scanner(PATTERNS[name]).chunks(text) == regex.findall(PATTERNS[name], text)


@pytest.mark.parametrize("name", PATTERNS)
@given(text=st.text(max_size=60))
@settings(max_examples=examples(1000), deadline=None)
def test_scanner_equals_regex_on_any_text(name, text):
    assert native_scanner(PATTERNS[name]).chunks(text) == regex.findall(PATTERNS[name], text)


# Long ASCII letter runs (the scanners take them 8 bytes at a time) broken at every offset by
# the bytes around A-Z and a-z ("@[`{"), by letters and marks outside ASCII, digits and spaces.
letter_runs = st.lists(st.one_of(st.text(alphabet="AZazbYmN", min_size=1, max_size=19),
                                 st.sampled_from(list("@[`{ 9'\u00e9\u0301\u017f\u4e2d\n"))), max_size=12).map("".join)


@pytest.mark.parametrize("name", PATTERNS)
@given(text=letter_runs)
@settings(max_examples=examples(1500), deadline=None)
def test_scanner_equals_regex_on_long_ascii_letter_runs(name, text):
    assert native_scanner(PATTERNS[name]).chunks(text) == regex.findall(PATTERNS[name], text)


@pytest.mark.skipif(SHARED is None, reason="shared corpora not found (BPE_FAST_DATA or ../shared)")
@pytest.mark.parametrize("path", corpus_params())
def test_scanner_equals_regex_on_every_corpus(path):
    text = path.read_bytes().decode("utf-8")
    for pattern in PATTERNS.values():
        assert native_scanner(pattern).chunks(text) == regex.findall(pattern, text)


# The bit-mask windows (_split.pxd) and the character-at-a-time scanner, each alone, against the
# regex, on text that is mostly ASCII (the windows' ground) and long enough to take several
# windows: words in every case with contractions, digit runs of every length, runs of spaces,
# tabs and line ends (blank lines with spaces on them), punctuation with "/" and quotes (and line
# ends then "/" after it, which o200k's punctuation takes in), and now
# and then a character outside ASCII (a letter, a mark, a digit, a space) where the windows must
# hand over to the scanner.
ascii_pieces = st.one_of(
    st.text(alphabet="abcxyzABCXYZ", min_size=1, max_size=12),
    st.sampled_from(["'s", "'T", "'ll", "'Re", "'ve", "'d", "'M", "'x", "''", "n't", "O'Neil"]),
    st.text(alphabet="0123456789", min_size=1, max_size=14),
    st.text(alphabet="  \t\n\r\x0b\x0c", min_size=1, max_size=9),
    st.text(alphabet=".,;:!?/-()[]{}\"'#*_=+<>@$%&\\|`~^\x00\x7f", min_size=1, max_size=5),
    st.sampled_from([";\n/", ")\n//", "}\n/*", "*/\n/", ".\r\n/", "/\n/\n", "x\n/"]),  # o200k: [\r\n/]*
    st.sampled_from(["\u00e9", "\u0301", "\u00b2", "\u0663", "\u00a0", "\u3000", "\u4e2d", "\u017f", "\U0001F600"]),
)
ascii_text = st.lists(ascii_pieces, max_size=60).map("".join)


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
@given(text=ascii_text)
@settings(max_examples=examples(1500), deadline=None)
def test_windows_and_scanner_each_equal_regex_on_mostly_ascii_text(name, text):
    expected = regex.findall(PATTERNS[name], text)
    with_windows = Scanner(PATTERN_IDS[name], *char_classes())
    scanner_alone = Scanner(PATTERN_IDS[name], *char_classes(), windows=False)
    assert with_windows.chunks(text) == expected
    assert scanner_alone.chunks(text) == expected


@pytest.fixture(params=[0, 1, 2, 3], ids=["sse2", "avx2", "avx512bw", "avx512letters"])
def simd_level(request):
    """Each classifier the windows have, where this processor has it (else a skip that says so)."""
    previous = _simd_level(request.param)
    try:
        if _simd_level() != request.param:
            pytest.skip(f"this processor has no {request.node.callspec.id.split('-')[-1]}")
        yield request.param
    finally:
        _simd_level(previous)


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
@given(text=ascii_text)
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_classifier_splits_as_regex(simd_level, name, text):
    assert Scanner(PATTERN_IDS[name], *char_classes()).chunks(text) == regex.findall(PATTERNS[name], text)


# Text of many scripts, for the windows that read letters outside ASCII off bit masks too (level
# 3): words in upper and lower case (Latin, Greek, Cyrillic), Lt and Lm letters, Lo words (CJK,
# Thai and Devanagari with their marks, Arabic), marks alone, punctuation, digits and spaces
# outside ASCII, next to ASCII words, punctuation, quotes, spaces and line ends.
script_pieces = st.one_of(
    st.text(alphabet="ДЖЯджяΣΩσωÀÉàéǅʰ", min_size=1, max_size=9),
    st.text(alphabet="中文字あア한", min_size=1, max_size=6),
    st.text(alphabet="ภาษาไทยัิ", min_size=1, max_size=8),
    st.text(alphabet="हिन्दीां", min_size=1, max_size=8),
    st.text(alphabet="العربية", min_size=1, max_size=6),
    st.sampled_from(["́", "̀́", "⃝", "ः"]),
    st.text(alphabet="。，«»—¿¡…", min_size=1, max_size=3),
    st.sampled_from(["٣", "²", "Ⅻ", " ", "　", " ", "😀"]),
    st.text(alphabet="abcXYZ", min_size=1, max_size=8),
    st.sampled_from(["'s", "'T", "'ll", "n't", "'ſ"]),
    st.text(alphabet="  \t\n\r", min_size=1, max_size=4),
    st.text(alphabet=".,;:!?/-()\"'#_", min_size=1, max_size=4),
    st.text(alphabet="0123456789", min_size=1, max_size=5),
)
script_text = st.lists(script_pieces, max_size=50).map("".join)


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
@given(text=script_text)
@settings(max_examples=examples(700), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_classifier_splits_text_of_many_scripts_as_regex(simd_level, name, text):
    assert Scanner(PATTERN_IDS[name], *char_classes()).chunks(text) == regex.findall(PATTERNS[name], text)


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
def test_windows_answer_for_most_of_text_in_other_scripts(name):
    """Where the processor has AVX-512, words of letters outside ASCII come off the windows too."""
    text = ("Москва — столица России. 北京是中国的首都。 Ελληνικά κείμενα, हिन्दी पाठ, ภาษาไทย "
            "and English words.\n") * 20
    data = text.encode()
    chunks = len(regex.findall(PATTERNS[name], text))
    previous = _simd_level(3)
    try:
        if _simd_level() != 3:
            pytest.skip("this processor has no AVX-512BW: the windows take ASCII only")
        assert Scanner(PATTERN_IDS[name], *char_classes()).windowed(data) > 0.8 * chunks
    finally:
        _simd_level(previous)


ENGLISH = ("It's 10:45 on 2024-05-17, and the URL is https://example.com/a/b?x=1.\n"
           "    def parse(self, text):  # \"quoted\"\n\n        return None\r\n" * 20)


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
def test_windows_answer_for_nearly_all_of_english_text(name):
    """The windows are not a dead branch: on plain English most chunks come off them (the rest:
    contractions, the text's end), and none with windows=False or for superword."""
    data = ENGLISH.encode()
    chunks = len(regex.findall(PATTERNS[name], data.decode()))
    assert Scanner(PATTERN_IDS[name], *char_classes()).windowed(data) > 0.9 * chunks
    assert Scanner(PATTERN_IDS[name], *char_classes(), windows=False).windowed(data) == 0
    assert not Scanner(PATTERN_IDS["superword"], *char_classes()).windows


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
def test_windows_rest_on_text_they_cannot_split_and_come_back(name):
    """Quotes between letters, chunk after chunk, fail window after window: the scanner takes
    such text for a while (exactly as ever), and the windows take over again after it."""
    hard = "a'b'c's'T'll'" * 300
    scanner = Scanner(PATTERN_IDS[name], *char_classes())
    assert scanner.chunks(hard + ENGLISH) == regex.findall(PATTERNS[name], hard + ENGLISH)
    english = scanner.windowed(ENGLISH.encode())
    rest = len(regex.findall(PATTERNS[name], ENGLISH[:256]))      # (a rest lasts 256 bytes at most)
    assert scanner.windowed((hard + ENGLISH).encode()) >= english - rest > 0


def test_windows_classes_are_the_regex_classes_in_ascii():
    """The windows classify ASCII with fixed byte ranges; these are regex's \\p{L}, \\p{N}, \\s."""
    classes, _ = char_classes()
    for c in range(128):
        ch = chr(c)
        assert bool(classes[c] & 1) == ("A" <= ch <= "Z" or "a" <= ch <= "z"), ch
        assert bool(classes[c] & 2) == ("0" <= ch <= "9"), ch
        assert bool(classes[c] & 4) == (ch in " \t\n\r\x0b\x0c"), ch


# Superword's corners, each against the regex: a space before two marks joins them (" !!"), not
# before one; a run of spaces gives back its last before a non-space; the run of other text
# stops before a digit, a pair of marks or such a space, and crosses newlines and single marks.
SUPERWORD_CORNERS = ["a !! b", "a ! b", "x  !!y", "a   b", "a \n b", "a b ", "1234567 8", "one, two.\n\nThree",
                     "end.--\n/next", "a!!\r\n//b", " \t x", "\u00e9\U0001F600\u4e2d ..\r\n/x", "a\u3000 b",
                     "!", "!a", " !a", " !!", " ", "  ", "\u0663\u0664\u0665\u0666", "\u00b2\u00b3x"]


@pytest.mark.parametrize("text", SUPERWORD_CORNERS)
def test_superword_scanner_corners(text):
    assert native_scanner(SUPERWORD).chunks(text) == regex.findall(SUPERWORD, text)


# Dense in what SUPERWORD tells apart: runs of spaces, digits, marks (with "/"), line ends.
superwordy = st.text(alphabet="ab \u00e9\u4e2d1\u0663!./-\n\r\t\u00a0", max_size=80)


@given(text=superwordy)
@settings(max_examples=examples(1500), deadline=None)
def test_superword_scanner_equals_regex_on_dense_text(text):
    assert native_scanner(SUPERWORD).chunks(text) == regex.findall(SUPERWORD, text)


def test_superword_chunks_span_words_and_lines():
    assert native_scanner(SUPERWORD).chunks("by the way, it's 2024!!\nOK  then") == [
        "by the way, it's ", "202", "4", "!!\n", "OK", " ", " then"]


def test_only_named_patterns_have_a_scanner():
    assert native_scanner(r"\w+|\s+") is None and native_scanner(None) is None
