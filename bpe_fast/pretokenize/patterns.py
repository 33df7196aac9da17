"""Pre-tokenization patterns: the named ones, character for character as tiktoken has them.

A pattern splits text into *chunks*; BPE never merges across a chunk boundary. ``None`` means
no split at all: each document is one chunk (plain byte-level BPE, minbpe's BasicTokenizer).

``PATTERNS`` is the table of named patterns: one ``NamedPattern`` record each, with its regex,
the names it goes by, how Hugging Face writes it, its native scanner (if any) and where a file
split with it may be cut into blocks. Everything that treats a named pattern apart (resolving a
name, the Splitter's engine and cuts, the tokenizer.json reader and writer, the native scanners'
ids) reads the record; any other regex takes the generic path (the regex module, files read
whole). A new named pattern is one more record (tests/pretokenize/test_patterns.py says what it must pass),
plus, for native speed, its scanner in _scan.pxd.
"""
from __future__ import annotations

import enum
import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import regex

from ..errors import PatternError

# tiktoken_ext/openai_public.py: r50k_pat_str (GPT-2, also r50k_base and p50k_base).
GPT2 = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""

# tiktoken_ext/openai_public.py: cl100k_base's pat_str (GPT-4).
CL100K = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

# tiktoken_ext/openai_public.py: o200k_base's pat_str (GPT-4o), joined from the same pieces.
O200K = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

# SuperBPE's stage-two rule (Liu et al. 2025, arXiv 2503.13423; their extend_tokenizer.sh): the
# text is split only at runs of 1-3 digits, at runs of two or more punctuation marks (with a
# space before and newlines or "/" after), and at runs of spaces before a space or the end;
# everything between (words with their single spaces, single punctuation) stays one chunk, so
# tokens may span words ("by the way"). They give it to Hugging Face's Split with "isolated"
# behaviour, which keeps the text between matches; here the same is one findall pattern: the
# splitter, or the longest run of characters where it does not match.
SUPERWORD_SPLIT = r"""\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)"""
SUPERWORD = rf"""{SUPERWORD_SPLIT}|(?:(?!(?:{SUPERWORD_SPLIT}))[\s\S])+"""

# GPT2 and CL100K as Hugging Face's Oniguruma engine must be told them (``NamedPattern.huggingface``):
# there "{1,3}+" is not possessive but a repeated group, and "$" also matches before any newline.
# Equivalence with the tiktoken strings is checked by the tests on every shared corpus.
GPT2_HUGGINGFACE = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++\z|\s+(?!\S)|\s"""
CL100K_HUGGINGFACE = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++\z|\s*[\r\n]|\s+(?!\S)|\s"""
)

# BoundlessBPE's eligibility predicates (boundless.py): a pretoken may join a supermerge when the
# predicate is found in it (regex's search, as both papers' code applies them). Paper 1's
# IMPROVED_MERGE_PATTERN (kensho-technologies/boundlessbpe, regexconstants.py), the default: only
# letters (with their marks), spaces, "_" and apostrophes, a letter somewhere after the first
# character (so "a" and "I" alone are not eligible, " a" is). Paper 2's default,
# SIMPLE_MERGE_PATTERN (kensho-technologies/fastboundlessbpe): any letter anywhere ("(hello").
BOUNDLESS_ELIGIBLE = r"^(?=.+\p{L})(?:\p{L}\p{M}*|[ _'\u2019])+$"
BOUNDLESS_ELIGIBLE_V2 = r"\p{L}"

NO_SPLIT = "none"     # the name for "no pre-tokenization": each document is one chunk
DEFAULT_PATTERN = "cl100k"   # what `bpe-fast train`, `count` and `profile` split with when not told


class BlockCut(enum.Enum):
    r"""Where a file split with a pattern may be cut into blocks that give, block by block, the
    chunks of the whole file (pretokenize.is_safe_cut proves each rule; x and y are characters
    other than spaces, y not "/").
    * LINE_END: after "x\n" before y, and after "x\r\n" before y (cl100k, o200k);
    * LINE_END_SPLIT_CRLF: after "x\n" before y, and between "x\r" and "\ny" (gpt2, which splits
      "\r\n" there itself);
    * SUPERWORD: after a letter where SUPERWORD_SPLIT matches, or after a digit run (its chunks
      cross lines)."""
    LINE_END = "line end"
    LINE_END_SPLIT_CRLF = "line end, CRLF split"
    SUPERWORD = "superword"

    @property
    def at_line_ends(self) -> bool:
        r"""Is it one of the line-end rules, whose common part (after "x\n" before y) the native
        encoder cuts long texts at (_scan.pxd's cuts_at_line_ends)?"""
        return self is not BlockCut.SUPERWORD


@dataclass(frozen=True)
class NamedPattern:
    """One named pattern: everything bpe_fast knows about it, in one place. The rest of the
    package reads these records (by name, by alias or by regex), never a list of names of its own."""
    name: str                     # the canonical name (``name_of``), saved with tokenizers and tables
    regex: str                    # the pattern itself, as the ``regex`` module (and tiktoken) reads it
    aliases: tuple[str, ...]      # the other names it may be given by (any case)
    huggingface: str              # the regex of Hugging Face's Split for it, in Oniguruma's dialect
    native: int | None            # its native scanner's id (_scan.pxd's PAT_*), None: the regex module
    cut: BlockCut | None          # where a file may be cut into blocks; None: files are read whole
    byte_level: bool = False      # Hugging Face's ByteLevel pre-tokenizer (use_regex) splits with it


# The named patterns. ``native``: the ids of _scan.pxd's enum (PAT_GPT2 ...), which must agree
# (tests/pretokenize/test_patterns.py holds each id's scanner to the record's regex).
PATTERNS: tuple[NamedPattern, ...] = (
    NamedPattern("gpt2", GPT2, aliases=("r50k", "r50k_base", "p50k", "p50k_base"), huggingface=GPT2_HUGGINGFACE,
                 native=1, cut=BlockCut.LINE_END_SPLIT_CRLF, byte_level=True),
    NamedPattern("cl100k", CL100K, aliases=("cl100k_base",), huggingface=CL100K_HUGGINGFACE,
                 native=2, cut=BlockCut.LINE_END),
    NamedPattern("o200k", O200K, aliases=("o200k_base",), huggingface=O200K, native=3, cut=BlockCut.LINE_END),
    NamedPattern("superword", SUPERWORD, aliases=(), huggingface=SUPERWORD, native=4, cut=BlockCut.SUPERWORD),
)

# The records by every name they may be given by (lower case), and by their regex.
BY_NAME = {n: p for p in PATTERNS for n in (p.name, *p.aliases)}
BY_REGEX = {p.regex: p for p in PATTERNS}

# Names a pattern may be given by, in any case: the short names and tiktoken's encoding names.
NAMED = {n: p.regex for n, p in BY_NAME.items()}

# The named patterns for which a file may be cut into blocks (see pretokenize.is_safe_cut): gpt2,
# cl100k and o200k after a "\n", superword (whose chunks cross lines) after a letter where its
# splitter matches. No alternative matches across such a cut, so blocks give the same chunks as
# the whole file. For any other pattern we cannot know that, so files are read whole.
BLOCK_SAFE = frozenset(p.name for p in PATTERNS if p.cut is not None)

# The named patterns with a native scanner, by name: the id each is given by (_pretok.PATTERN_IDS).
NATIVE_IDS = {p.name: p.native for p in PATTERNS if p.native is not None}


def named(pattern: str | None) -> NamedPattern | None:
    """The record of a resolved pattern (a named pattern's regex), or None (no split, custom)."""
    return BY_REGEX.get(pattern) if pattern is not None else None


# A bare word ("gpt4", "cl100", "o200k-base") is almost surely a mistyped name, not a regex
# meant to match that literal word; as a regex it would find no chunk in most corpora.
_BARE_WORD = regex.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def known_names() -> str:
    return ", ".join([NO_SPLIT, *NAMED])


def resolve(pattern: str | None) -> str | None:
    """The one place a pattern argument is understood: None or "none" (any case) -> None (no
    split); a name from NAMED (any case) -> its regex; any other string must be a regex that
    compiles, does not match "", and is not a bare word (a mistyped name)."""
    if pattern is None:
        return None
    if not isinstance(pattern, str):
        raise PatternError(f"pattern must be a name, a regex string or None, not {type(pattern).__name__}")
    name = pattern.lower()
    if name == NO_SPLIT:
        return None
    if name in NAMED:
        return NAMED[name]
    if _BARE_WORD.fullmatch(pattern):
        raise PatternError(f"pattern {pattern!r} is no known pattern name (known: {known_names()}); "
                           f"to match the literal text {pattern!r}, write the regex (?:{pattern})")
    try:
        pattern.encode("utf-8")     # every format saves it as UTF-8: refused now, not once trained
    except UnicodeEncodeError as exc:
        odd = pattern[exc.start]
        raise PatternError(f"pattern {pattern!r} holds a lone surrogate ({odd!r} at character {exc.start}), which "
                           f"UTF-8 cannot encode; write the regex escape \\u{ord(odd):04x} if it is meant") from None
    compile_pattern(pattern)  # fail early, with the user's own spelling in the message
    return pattern


# Text with a little of everything, to find patterns that can match an empty string somewhere
# (at a word boundary, before a digit, at a line end...) and not only at the start of "".
_EMPTY_PROBE = "".join(map(chr, range(32, 127))) + "\t\n\r\u00e9\u4e2d\U0001F600 words, 'like' these;\n 12 345\r\n  "


def compile_pattern(text: str) -> regex.Pattern[str]:
    try:
        compiled = regex.compile(text)
    except regex.error as exc:
        raise PatternError(
            f"pattern {text!r} does not compile: {exc} (named patterns: {known_names()})"
        ) from None
    empty = next((m for m in compiled.finditer(_EMPTY_PROBE) if m.end() == m.start()), None)
    if compiled.search("") is not None or empty is not None:
        # An empty match would be an empty chunk: nothing to learn, and a sign that the
        # pattern (r"\b", r"\w*") does not say what a chunk is.
        where = "" if empty is None else f" (e.g. before {_EMPTY_PROBE[empty.start():empty.start() + 5]!r})"
        raise PatternError(f"pattern {text!r} matches the empty string{where}; every chunk must be non-empty")
    return compiled


def whole_matches(compiled: regex.Pattern[str], text: str) -> list[str]:
    r"""The chunks of text: the pattern's whole matches, in order, and the text between them as
    chunks of its own. A pattern need not match every character (r"\w+" skips spaces and
    punctuation); what it skips is kept, not dropped, so encoding is lossless. (tiktoken drops
    it: with such a pattern its ids decode to less text.) findall would also return capturing
    groups instead of the whole match when the pattern has any."""
    if compiled.groups == 0:
        chunks = compiled.findall(text)    # the fast path: findall builds no match objects
        if sum(map(len, chunks)) == len(text):
            return chunks                  # the matches cover the text: no gaps
    return list(_chunks(compiled, text))


def _chunks(compiled: regex.Pattern[str], text: str) -> Iterator[str]:
    """Matches and the gaps between them, in order."""
    pos = 0
    for m in compiled.finditer(text):
        if m.start() > pos:
            yield text[pos:m.start()]
        yield m.group()
        pos = m.end()
    if pos < len(text):
        yield text[pos:]


def match_batches(compiled: regex.Pattern[str], text: str, batch: int = 1 << 20) -> Iterator[list[str]]:
    """The chunks of a long text (``whole_matches``) a batch at a time, so that a file read whole
    (custom patterns allow no cut) never becomes one list of millions of strings."""
    if len(text) <= 4 * batch:
        yield whole_matches(compiled, text)
        return
    chunks = _chunks(compiled, text)
    while part := list(itertools.islice(chunks, batch)):
        yield part


def name_of(text: str | None) -> str:
    """A short name for a resolved pattern: the canonical named pattern, 'none', or 'custom'."""
    if text is None:
        return NO_SPLIT
    record = BY_REGEX.get(text)
    return record.name if record is not None else "custom"
