"""The named patterns are one table (patterns.PATTERNS), and every use of a record agrees with it:
its regex is tiktoken's, its Hugging Face form splits as its regex and round-trips through
formats/huggingface.py, its native scanner (by the record's id) finds its regex's chunks, and
files are cut where its cut rule says. A pattern that is not in the table works through the
generic path (the regex module, files read whole): a new named pattern is one more record that
passes ``check_record``."""
from __future__ import annotations

import json

import pytest
import regex

import bpe_fast
from bpe_fast import Tokenizer
from bpe_fast.pretokenize import patterns
from bpe_fast.pretokenize._pretok import PATTERN_IDS, Scanner, _native_traits
from bpe_fast.formats import huggingface
from bpe_fast.formats._named import ENCODINGS
from bpe_fast.pretokenize.patterns import BY_NAME, PATTERNS, BlockCut, NamedPattern, known_names, name_of, resolve
from bpe_fast.pretokenize.splitter import NATIVE, REGEX, Splitter, char_classes, chunks_of, find_cut, is_safe_cut

# A little of every class the patterns tell apart, in lines ended by "\n" and "\r\n": letters of
# every case, marks, digits of every kind, contractions (and U+017F, which (?i)s matches), spaces
# of every kind, punctuation with "/", emoji, CJK, and runs that superword's splitter cuts.
TEXT = ("Hello, World! It's 12345 o'Clock\u2014DON'T stop;  ok?\n"
        "caf\u00e9 na\u0308ive \u01c5ungla \u02b0x \u4e2d\u6587\u3042 \u00b2\u216b 7/8 ...\r\n"
        "  indented\tline\x0b\x0c\u00a0\u3000end \U0001F600\U0001F44D\U0001F3FD!!\n\n"
        "x\r\ny \u017fT'S it'LL we'VE 1,000,000.50 a-b_c  \r\n\t/path/to\n" * 3)

# Llama 3's pattern (meta-llama/llama3, tokenizer.py; its tokenizer.json's Split has the same
# string): not in the table, the example of a pattern that would be one record.
LLAMA3 = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
          r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")


def hf_split(hf_regex: str) -> dict:
    return {"type": "Split", "pattern": {"Regex": hf_regex}, "behavior": "Isolated", "invert": False}


def hf_pre_tokenizer(*steps: dict) -> dict:
    return {"type": "Sequence", "pretokenizers": list(steps)}


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}


def check_record(record: NamedPattern, text: str = TEXT) -> None:
    """What a record must be for every use of it to agree: its regex splits text into non-empty
    chunks; Hugging Face's Split with its ``huggingface`` form splits as the regex does
    (Oniguruma, in the tokenizers library) and reads back as the regex."""
    compiled = patterns.compile_pattern(record.regex)
    chunks = patterns.whole_matches(compiled, text)
    assert "".join(chunks) == text and all(chunks)
    tokenizers = pytest.importorskip("tokenizers")
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(record.huggingface), behavior="isolated")
    assert [piece for piece, _ in split.pre_tokenize_str(text)] == chunks
    pre = hf_pre_tokenizer(hf_split(record.huggingface), {**BYTE_LEVEL, "use_regex": False})
    assert huggingface._hf_pattern(pre, "test") == record.regex


# -- the table itself -----------------------------------------------------------------------------

def test_every_name_and_regex_is_in_the_table_once():
    names = [n for p in PATTERNS for n in (p.name, *p.aliases)]
    assert len(names) == len(set(names)) and all(n == n.lower() for n in names)
    assert patterns.NO_SPLIT not in names and patterns.DEFAULT_PATTERN in names
    assert len({p.regex for p in PATTERNS}) == len(PATTERNS)
    assert known_names() == ", ".join([patterns.NO_SPLIT, *names])
    assert [p.name for p in PATTERNS if p.byte_level] == ["gpt2"]      # one pattern for HF's ByteLevel


@pytest.mark.parametrize("record", PATTERNS, ids=lambda p: p.name)
def test_a_record_is_found_by_every_name_and_by_its_regex(record):
    for name in (record.name, *record.aliases):
        assert resolve(name) == resolve(name.upper()) == record.regex and BY_NAME[name] is record
    assert name_of(record.regex) == record.name == Splitter.of(record.regex).name
    assert Splitter.of(record.name).record is record


def test_the_constants_are_the_records_regexes():
    assert [p.regex for p in PATTERNS] == [patterns.GPT2, patterns.CL100K, patterns.O200K, patterns.SUPERWORD]
    assert (bpe_fast.GPT2, bpe_fast.CL100K, bpe_fast.O200K) == (patterns.GPT2, patterns.CL100K, patterns.O200K)


# -- the regexes: tiktoken's, character for character ---------------------------------------------

def tiktoken_pattern(name: str, monkeypatch) -> str:
    """tiktoken's pat_str for an encoding, without its files (their loaders stubbed out)."""
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *args, **kwargs: {})
    monkeypatch.setattr(openai_public, "data_gym_to_mergeable_bpe_ranks", lambda *args, **kwargs: {})
    return openai_public.ENCODING_CONSTRUCTORS[name]()["pat_str"]


@pytest.mark.parametrize("encoding", ["gpt2", "r50k_base", "p50k_base", "cl100k_base", "o200k_base"])
def test_openai_records_are_tiktokens_patterns(encoding, monkeypatch):
    assert BY_NAME[encoding].regex == tiktoken_pattern(encoding, monkeypatch)


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_every_named_encoding_splits_with_the_record_of_its_name(encoding):
    assert ENCODINGS[encoding].pattern == resolve(encoding)


# -- Hugging Face's form ----------------------------------------------------------------------------

@pytest.mark.parametrize("record", PATTERNS, ids=lambda p: p.name)
def test_a_records_huggingface_form_splits_as_its_regex_and_reads_back(record):
    check_record(record)


@pytest.mark.parametrize("record", PATTERNS, ids=lambda p: p.name)
def test_a_tokenizer_json_writes_the_records_huggingface_form(record):
    written = huggingface.huggingface_json(Tokenizer([], record.regex))
    split, byte_level = written["pre_tokenizer"]["pretokenizers"]
    assert split == hf_split(record.huggingface) and byte_level["use_regex"] is False
    assert huggingface._hf_pattern(json.loads(json.dumps(written["pre_tokenizer"])), "test") == record.regex


def test_huggingfaces_byte_level_regex_is_the_byte_level_record():
    byte_level = next(p for p in PATTERNS if p.byte_level)
    assert huggingface._hf_pattern(hf_pre_tokenizer(BYTE_LEVEL), "test") == byte_level.regex
    assert huggingface._hf_pattern(BYTE_LEVEL, "test") == byte_level.regex


# -- the native scanners ------------------------------------------------------------------------------

def test_the_native_ids_are_the_tables():
    assert PATTERN_IDS == {p.name: p.native for p in PATTERNS if p.native is not None}
    assert len(set(PATTERN_IDS.values())) == len(PATTERN_IDS)
    assert not any(_native_traits(i)[0] for i in (0, -1, max(PATTERN_IDS.values()) + 1))
    with pytest.raises(ValueError, match="unknown pattern id"):
        Scanner(0, *char_classes())


@pytest.mark.parametrize("record", [p for p in PATTERNS if p.native is not None], ids=lambda p: p.name)
@pytest.mark.parametrize("windows", [True, False])
def test_a_records_native_scanner_finds_its_regexs_chunks(record, windows):
    assert _native_traits(record.native)[0]
    scanner = Scanner(record.native, *char_classes(), windows=windows)
    assert scanner.chunks(TEXT) == regex.findall(record.regex, TEXT)
    splitter = Splitter.of(record.name)
    assert splitter.engine == NATIVE and splitter.native_id == record.native


@pytest.mark.parametrize("record", [p for p in PATTERNS if p.native is not None], ids=lambda p: p.name)
def test_the_native_side_cuts_at_line_ends_where_the_records_rule_does(record):
    """_scan.pxd's cuts_at_line_ends (the encoder's block cuts) agrees with the record's cut."""
    line_ends = record.cut is not None and record.cut.at_line_ends
    assert _native_traits(record.native)[2] == line_ends


# -- where a file may be cut --------------------------------------------------------------------------

# Where each rule cuts "ab\r\ncd" (a CRLF line end), "ab\ncd" (a LF one) and "said,\" and": the three
# rules tell apart.
CUTS_BY_RULE = {
    BlockCut.LINE_END: (4, 3, None),
    BlockCut.LINE_END_SPLIT_CRLF: (3, 3, None),
    BlockCut.SUPERWORD: (None, None, 4),
    None: (None, 3, None),            # the general rule: a pattern without one of its own
}


@pytest.mark.parametrize("record", PATTERNS, ids=lambda p: p.name)
def test_a_pattern_is_cut_where_its_records_rule_says(record):
    samples = (b"ab\r\ncd", b"ab\ncd", b"said,\" and")
    assert tuple(find_cut(data, 0, record.regex) for data in samples) == CUTS_BY_RULE[record.cut]
    splitter = Splitter.of(record.name)
    assert splitter.block_cut is record.cut and splitter.block_safe == (record.cut is not None)
    assert (record.name in patterns.BLOCK_SAFE) == (record.cut is not None)


@pytest.mark.parametrize("record", [p for p in PATTERNS if p.cut is not None], ids=lambda p: p.name)
def test_every_cut_of_a_records_rule_keeps_its_chunks(record):
    data = TEXT.encode()
    whole = chunks_of([TEXT], record.regex)
    cuts = [i for i in range(len(data) + 1) if is_safe_cut(data, i, record.regex)]
    assert cuts                                              # the text has places to cut
    for cut in cuts:
        head, tail = data[:cut].decode(), data[cut:].decode()
        assert chunks_of([head], record.regex) + chunks_of([tail], record.regex) == whole


# -- a pattern that is not in the table ---------------------------------------------------------------

def test_a_new_pattern_would_be_one_record_that_passes_the_records_checks():
    """Llama 3's pattern as a record: no native scanner, no cut rule yet, Hugging Face writes it as
    it is. Everything a table record is held to holds for it."""
    check_record(NamedPattern("llama3", LLAMA3, aliases=(), huggingface=LLAMA3, native=None, cut=None))


def test_a_pattern_that_is_not_named_goes_the_generic_way(tmp_path):
    splitter = Splitter.of(LLAMA3)
    assert (splitter.name, splitter.record, splitter.engine, splitter.native_id) == ("custom", None, REGEX, None)
    assert not splitter.block_safe and splitter.cut is None                     # files are read whole
    assert list(splitter.chunks(TEXT)) == regex.findall(LLAMA3, TEXT)
    tok = bpe_fast.train_from_iterator([TEXT] * 4, 300, pattern=LLAMA3, workers=1, progress="none")
    assert tok.pattern == LLAMA3 and tok.decode(tok.encode(TEXT)) == TEXT
    tok.save(tmp_path / "tokenizer.json", format="huggingface")
    written = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert written["pre_tokenizer"]["pretokenizers"][0] == hf_split(LLAMA3)            # as it is
    assert Tokenizer.load(tmp_path / "tokenizer.json", format="huggingface") == tok


# -- a pattern is resolved in one place, and checked before any text is read -----------------------

def test_pattern_that_does_not_compile():
    with pytest.raises(bpe_fast.PatternError, match=r"pattern '\(\[a-' does not compile"):
        bpe_fast.train_from_iterator(["abc"], 300, pattern="([a-")


def test_pattern_matching_empty_string():
    with pytest.raises(bpe_fast.PatternError, match="matches the empty string"):
        bpe_fast.train_from_iterator(["abc"], 300, pattern=r"\w*")


@pytest.mark.parametrize("spelling", ["none", "NONE", "None", None])
def test_none_in_any_case_means_no_split_everywhere(spelling):
    docs = ["ab ab ab", "cab cab"]
    tok = bpe_fast.train_from_iterator(docs, 262, pattern=spelling, workers=1)
    assert tok.pattern is None and tok.pattern_name == "none"
    # with no split, merges cross the spaces: "ab " (ab, then (ab, " ")) is learned
    assert [tok.token_bytes(i) for i in range(256, tok.n_base)][:2] == [b"ab", b"ab "]
    assert bpe_fast.Tokenizer([], pattern=spelling).pattern is None
    assert chunks_of(docs, spelling) == docs


@pytest.mark.parametrize("name,regex", [("cl100k_base", bpe_fast.CL100K), ("O200K_BASE", bpe_fast.O200K),
                                        ("r50k_base", bpe_fast.GPT2), ("p50k_base", bpe_fast.GPT2),
                                        ("GPT2", bpe_fast.GPT2)])
def test_encoding_names_are_pattern_names(name, regex):
    assert bpe_fast.Tokenizer([], pattern=name).pattern == regex


@pytest.mark.parametrize("typo", ["gpt4", "cl100", "o200k-base", "None_"])
def test_a_bare_word_that_is_no_known_name_is_refused(typo):
    def docs():
        raise AssertionError("the corpus was read")
        yield "never"

    with pytest.raises(bpe_fast.PatternError, match=rf"pattern '{typo}' is no known pattern name "
                                                    rf"\(known: none, gpt2,.*cl100k.*o200k_base.*superword\)"):
        bpe_fast.train_from_iterator(docs(), 300, pattern=typo)
    with pytest.raises(bpe_fast.PatternError, match="no known pattern name"):
        bpe_fast.Tokenizer([], pattern=typo)
    # spelled as a regex, a literal word is still a pattern (and the text it skips stays, as chunks)
    assert chunks_of(["a gpt4 b"], r"(?:gpt4)") == ["a ", "gpt4", " b"]


@pytest.mark.parametrize("pattern,docs,expected", [
    (r"(a)b", ["ab ab"], ["ab", " ", "ab"]),          # the space the pattern skips is kept
    (r"\w+|(\s)", ["two words"], ["two", " ", "words"]),
    (r"(a)(b)|c", ["abcab"], ["ab", "c", "ab"]),
])
def test_patterns_with_capturing_groups_give_whole_matches(pattern, docs, expected):
    assert chunks_of(docs, pattern) == expected
    tok = bpe_fast.train_from_iterator(docs * 5, 257, pattern=pattern, workers=1)
    learned = [tok.token_bytes(i) for i in range(256, tok.n_base)]
    assert learned and all(t.decode() in "".join(expected) for t in learned)


@pytest.mark.parametrize("pattern", [r"\b", r"(?=a)", r"$", r"x*", r"\w+|\b"])
def test_patterns_that_can_match_nothing_are_refused_up_front(pattern):
    with pytest.raises(bpe_fast.PatternError, match="matches the empty string"):
        bpe_fast.train_from_iterator(["some text"], 300, pattern=pattern)
