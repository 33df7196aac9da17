"""Pre-tokenization patterns: the named ones, character for character as tiktoken has them.

A pattern splits text into *chunks*; BPE never merges across a chunk boundary. ``None`` means
no split at all: each document is one chunk (plain byte-level BPE, minbpe's BasicTokenizer).
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator

import regex

from .errors import PatternError

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

# BoundlessBPE's eligibility predicates (boundless.py): a pretoken may join a supermerge when the
# predicate is found in it (regex's search, as both papers' code applies them). Paper 1's
# IMPROVED_MERGE_PATTERN (kensho-technologies/boundlessbpe, regexconstants.py), the default: only
# letters (with their marks), spaces, "_" and apostrophes, a letter somewhere after the first
# character (so "a" and "I" alone are not eligible, " a" is). Paper 2's default,
# SIMPLE_MERGE_PATTERN (kensho-technologies/fastboundlessbpe): any letter anywhere ("(hello").
BOUNDLESS_ELIGIBLE = r"^(?=.+\p{L})(?:\p{L}\p{M}*|[ _'\u2019])+$"
BOUNDLESS_ELIGIBLE_V2 = r"\p{L}"

# Names a pattern may be given by, in any case: the short names and tiktoken's encoding names.
NAMED = {"gpt2": GPT2, "r50k": GPT2, "r50k_base": GPT2, "p50k": GPT2, "p50k_base": GPT2,
         "cl100k": CL100K, "cl100k_base": CL100K, "o200k": O200K, "o200k_base": O200K, "superword": SUPERWORD}
NO_SPLIT = "none"     # the name for "no pre-tokenization": each document is one chunk
DEFAULT_PATTERN = "cl100k"   # what `bpe-fast train`, `count` and `profile` split with when not told

# The named patterns for which a file may be cut into blocks (see pretokenize.is_safe_cut): gpt2,
# cl100k and o200k after a "\n", superword (whose chunks cross lines) after a letter where its
# splitter matches. No alternative matches across such a cut, so blocks give the same chunks as
# the whole file. For any other pattern we cannot know that, so files are read whole.
BLOCK_SAFE = frozenset({"gpt2", "cl100k", "o200k", "superword"})

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


# Each named pattern's canonical name, by its regex: the one place a regex is turned into a name.
_NAME_OF = {GPT2: "gpt2", CL100K: "cl100k", O200K: "o200k", SUPERWORD: "superword"}


def name_of(text: str | None) -> str:
    """A short name for a resolved pattern: the canonical named pattern, 'none', or 'custom'."""
    return NO_SPLIT if text is None else _NAME_OF.get(text, "custom")
