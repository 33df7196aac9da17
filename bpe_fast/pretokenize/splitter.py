"""Stage 1, pre-tokenization: what a chunk is (``Splitter``), and where a file may be cut.

A ``Splitter`` says, once for counting, encoding and ``encode_corpus``, how text becomes
chunks: the Unicode normalization applied first (``normalize``: None, "nfc" or "nfkc"), the
pattern (resolved, with its name known once), the special tokens cut out of the text (never
part of a chunk, never learned), and whether every line is a document of its own.
It picks the engine that splits:
* ``NATIVE`` for the named patterns with a native scanner (``NamedPattern.native`` in
  patterns.PATTERNS: gpt2, cl100k, o200k and superword): a Cython scanner (_scan.pxd) that
  returns exactly the regex's chunks from UTF-8 bytes, an order of magnitude faster
  (benchmarks/RESULTS.md); the tests hold it to regex;
* ``REGEX`` for any other pattern: the ``regex`` module's whole matches;
* ``WHOLE`` for no pattern: a document (between special tokens) is one chunk.
``Splitter.chunks`` is the slow reference of all three, the definition the fast paths must meet.

``find_cut`` only returns positions where the named patterns cannot match across the cut (the
rule a pattern's record names, ``NamedPattern.cut``: after a "\n"; for superword, whose chunks
cross lines, after a letter or a digit run), so counting a file block by block gives exactly the
chunks of the whole file; with a normalization, also where normalizing the blocks one by one
gives the normalized whole (``is_safe_cut``).
"""
from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass, fields
from typing import Literal
from collections.abc import Iterable, Iterator

import numpy as np
import regex
from regex import Pattern as RegexPattern      # the Splitter's own ``regex`` property hides the module there

from .. import prebuilt
from ._pretok import Scanner
from ..errors import ArgumentError, ArgumentTypeError
from .patterns import BlockCut, NamedPattern, compile_pattern, name_of, named, resolve, whole_matches

_WHITESPACE = regex.compile(r"\s")

# The engines a Splitter splits with (``Splitter.engine``).
NATIVE, REGEX, WHOLE = "native", "regex", "whole"

# The Unicode normalizations ``normalize=`` takes, by name, with unicodedata's name of each.
NORMALIZATIONS: dict[str, Literal["NFC", "NFKC"]] = {"nfc": "NFC", "nfkc": "NFKC"}


def normalization(value) -> str | None:
    """``normalize=`` checked: None (the text as it is), "nfc" or "nfkc" (any case)."""
    if value is None:
        return None
    if isinstance(value, str) and value.lower() in NORMALIZATIONS:
        return value.lower()
    raise ArgumentError(f"normalize must be None, 'nfc' or 'nfkc', got {value!r}")


def normalize_text(text: str, normalize: str | None) -> str:
    """text in the Unicode normal form ``normalize`` names (None: as it is). Quick for text
    already normal (ASCII, most text): unicodedata checks before it rebuilds anything."""
    return text if normalize is None else unicodedata.normalize(NORMALIZATIONS[normalize], text)


def check_normal_specials(special_tokens: Iterable[str], normalize: str | None, error: type[Exception]) -> None:
    """Special tokens are found in the normalized text, so one that normalization changes would
    never be found there: refused, saying what it becomes."""
    if normalize is None:
        return
    for token in special_tokens:
        changed = normalize_text(token, normalize)
        if changed != token:
            raise error(f"special token {token!r} is not in {normalize.upper()} form (it becomes {changed!r}): "
                        f"text is normalized before special tokens are found, so it could never match; "
                        f"give it as {changed!r}")


def special_token_list(special_tokens) -> tuple[str, ...]:
    """Special tokens as an ordered tuple of distinct non-empty strings. Their ids follow the
    order given, so an unordered collection (a set, whose order changes with PYTHONHASHSEED)
    is refused."""
    if isinstance(special_tokens, (set, frozenset)):
        raise ArgumentTypeError("special_tokens must be a list (their ids follow its order), not a set: "
                                f"pass sorted({sorted(special_tokens)!r}) or another order")
    if isinstance(special_tokens, str):
        specials: tuple = (special_tokens,)
    else:
        try:
            specials = tuple(() if special_tokens is None else special_tokens)
        except TypeError:
            raise ArgumentTypeError(f"special_tokens must be a list of strings, got "
                                    f"{type(special_tokens).__name__}") from None
    if not all(isinstance(s, str) and s for s in specials) or len(set(specials)) != len(specials):
        raise ArgumentError(f"special_tokens must be distinct non-empty strings, got {list(specials)}")
    for s in specials:
        check_encodable(s, ArgumentError)
    return specials


def check_encodable(token: str, error: type[Exception]) -> None:
    """A special token is matched, and saved, as UTF-8: a lone surrogate (which str allows, and a
    file name or argv undecodable as UTF-8 gives) has none, so it fails here, not when encoding."""
    try:
        token.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(f"special token {token!r} holds a lone surrogate ({token[exc.start]!r} at character "
                    f"{exc.start}), which UTF-8 cannot encode: special tokens must be valid Unicode") from None


def special_splitter(special_tokens: Iterable[str]) -> regex.Pattern[str] | None:
    """A regex that matches any special token, longest first, or None if there are none."""
    specials = sorted(set(special_tokens), key=len, reverse=True)
    if not specials:
        return None
    return regex.compile("|".join(regex.escape(s) for s in specials))


def lines_of(text: str) -> Iterator[str]:
    """The lines of text, each with its "\n" (the last may have none). Only "\n" ends a line,
    as Hugging Face reads files (str.splitlines would also cut at \r, \x0c, U+2028...)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


@dataclass(frozen=True)
class Splitter:
    """What a chunk is: ``normalize`` (the Unicode normal form text is put in first: None, "nfc"
    or "nfkc"), ``pattern`` (a resolved regex; None: no split), the ``special_tokens`` cut out
    of the (normalized) text, and ``lines`` (every line is a document of its own). Build it with
    ``Splitter.of``, which checks and resolves the arguments. Picklable (workers and Dask
    tasks get it); the compiled regexes and the native scanner are made once, on first use."""
    pattern: str | None = None
    special_tokens: tuple[str, ...] = ()
    lines: bool = False
    normalize: str | None = None

    @classmethod
    def of(cls, pattern: str | None, special_tokens: Iterable[str] = (), lines: bool = False,
           normalize: str | None = None) -> Splitter:
        """From the user's arguments: a pattern name, regex or None; special tokens in order;
        a normalization (None, "nfc", "nfkc"), which every special token must already be in."""
        specials, form = special_token_list(special_tokens), normalization(normalize)
        check_normal_specials(specials, form, ArgumentError)
        return cls(resolve(pattern), specials, bool(lines), form)

    def __getstate__(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}     # not the cached engines

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    # -- what splits ----------------------------------------------------------------------
    @functools.cached_property
    def name(self) -> str:
        """The pattern's name: gpt2, cl100k, o200k, superword, none or custom."""
        return name_of(self.pattern)

    @functools.cached_property
    def record(self) -> NamedPattern | None:
        """The record of a named pattern (patterns.PATTERNS), None for no split or a custom one."""
        return named(self.pattern)

    @functools.cached_property
    def engine(self) -> str:
        if self.pattern is None:
            return WHOLE
        return NATIVE if self.record is not None and self.record.native is not None else REGEX

    @functools.cached_property
    def regex(self) -> regex.Pattern[str] | None:
        """The compiled pattern (None: no split)."""
        return compile_pattern(self.pattern) if self.pattern is not None else None

    @property
    def native_id(self) -> int | None:
        """The native scanners' number for this pattern (``engine == NATIVE``), else None."""
        return self.record.native if self.record is not None else None

    @functools.cached_property
    def scanner(self) -> Scanner | None:
        """The native Scanner of a named pattern (``engine == NATIVE``), else None."""
        native_id = self.native_id
        return Scanner(native_id, *char_classes()) if native_id is not None else None

    @functools.cached_property
    def special_regex(self) -> RegexPattern[str] | None:
        return special_splitter(self.special_tokens)

    @functools.cached_property
    def special_bytes(self) -> tuple[bytes, ...]:
        return tuple(t.encode("utf-8") for t in self.special_tokens)

    # -- documents and chunks ---------------------------------------------------------------
    def normalized(self, text: str) -> str:
        """text in the splitter's normal form (as it is without one): what is split."""
        return normalize_text(text, self.normalize)

    def documents(self, text: str) -> Iterator[str]:
        """The independent pieces of an (already normalized) text: cut at special tokens
        (dropped), and at every line end with ``lines``; empty pieces are left out."""
        special = self.special_regex
        pieces = (special.split(text) if special is not None and any(t in text for t in self.special_tokens)
                  else (text,))           # the substring test first: far quicker than the regex
        for piece in pieces:
            if not piece:
                continue
            if self.lines:
                yield from lines_of(piece)
            else:
                yield piece

    def chunks(self, text: str) -> Iterator[str]:
        """The chunks of one document, by the slow and plain route: the reference the native
        scanner, the counting and the encoder are held to. The text is normalized first."""
        for piece in self.documents(self.normalized(text)):
            if self.regex is None:
                yield piece
            else:
                yield from whole_matches(self.regex, piece)

    # -- where text may be cut into blocks --------------------------------------------------
    @property
    def block_safe(self) -> bool:
        """May text be cut into blocks at ``cut_after``'s cuts without changing its chunks?"""
        if any("\n" in s for s in self.special_tokens):
            return False
        return self.lines or self.block_cut is not None

    @property
    def block_cut(self) -> BlockCut | None:
        """Where the pattern lets text be cut (its record's rule), None for no split or a custom one."""
        return self.record.cut if self.record is not None else None

    @property
    def cut(self):
        """The function that finds where text may be cut into blocks, or None where it may not."""
        return self.cut_after if self.block_safe else None

    def cut_after(self, data: bytes, start: int) -> int | None:
        """The first cut at or after byte ``start`` of data that keeps the chunks, or None: after
        any "\n" when lines are documents (normalization never reaches across a "\n": see
        ``is_safe_cut``), else where ``find_cut`` allows (for superword, also clear of every
        special token, see ``superword_cut``)."""
        if self.lines:
            i = data.find(b"\n", max(start - 1, 0))
            return None if i < 0 else i + 1
        if self.block_cut is BlockCut.SUPERWORD:
            return superword_cut(data, start, self.special_bytes, self.normalize)
        return _find_cut(data, start, self.block_cut, self.normalize)


def chunks_of(texts: Iterable[str], pattern: str | None, special_tokens: Iterable[str] = (),
              normalize: str | None = None) -> list[str]:
    """Convenience for tests and notebooks: every chunk of every document, in order."""
    splitter = Splitter.of(pattern, special_tokens, normalize=normalize)
    return [c for t in texts for c in splitter.chunks(t)]


def _char_at(data: bytes, i: int) -> str | None:
    """The character whose UTF-8 encoding starts at byte i, or None if it is not valid there."""
    lead = data[i]
    width = 1 if lead < 0x80 else 2 if lead >> 5 == 6 else 3 if lead >> 4 == 14 else 4 if lead >> 3 == 30 else 0
    try:
        return data[i:i + width].decode("utf-8") if width else None
    except UnicodeDecodeError:
        return None


def _char_before(data: bytes, end: int) -> str | None:
    """The character whose UTF-8 encoding ends just before byte ``end``."""
    start = end - 1
    while start > 0 and end - start < 4 and 0x80 <= data[start] < 0xC0:
        start -= 1
    ch = _char_at(data, start)
    return ch if ch is not None and len(ch.encode("utf-8")) == end - start else None


def is_safe_cut(data: bytes, i: int, pattern: str | None = None, normalize: str | None = None) -> bool:
    r"""True if cutting ``data`` before byte i cannot change the chunks of the named patterns
    (gpt2, cl100k and o200k, or ``pattern`` alone when it is one of them, by the rule its record
    names, ``NamedPattern.cut``; superword, whose chunks cross lines, has a rule of its own:
    ``_is_superword_cut``), nor, with ``normalize``, the normalized text:
    ``normalize(data[:i]) + normalize(data[i:]) == normalize(data)``.

    The general rule: the cut follows a "\n" that itself follows a non-space character, and
    comes before a character that is neither a space nor "/". Then, for gpt2, cl100k and o200k:
    * no alternative matches a "\n" followed by such a character (letter runs exclude "\r\n"
      in their optional prefix, space runs end before a non-space, punctuation runs end with
      newlines, or with newlines and "/" in o200k, hence "/" is excluded);
    * the "\n" is a chunk of its own, or ends a punctuation chunk, both with and without the
      rest of the text after it (so "\s++$" and "\s+(?!\S)" decide the same way);
    * the patterns have no look-behind, so matching after the cut ignores what came before.

    Text with CRLF line ends has no such "\n", so each pattern has a rule of its own there
    (x and y non-space, y not "/"): for cl100k and o200k a cut after "x\r\n" before y, where
    "\s*[\r\n]" (or a punctuation run) takes "\r\n" whole with or without y after it; for gpt2
    a cut between "\r" and "\n", because GPT-2 splits "x\r\ny" as "\r", "\n" ("\s+(?!\S)" gives
    back the "\n"), and a block ending in "x\r" gives "\r" ("\s++$") while one starting
    "\ny" gives "\n" (the final "\s").

    Normalization (NFC, NFKC) never reaches across such a cut: every cut is right after a "\n"
    or a "\r", which is a starter that no normalization changes, composes with nothing and
    appears in no other character's decomposition, so the characters on either side are
    normalized as if the other side were not there. But the rule above must hold in the
    *normalized* text: NFKC turns a few non-space characters into text that starts with a space
    ("\u00a8" -> " \u0308") or with "/" ("\uff0f"). So with ``normalize`` the character after
    the cut must also normalize to something that starts with neither, and the one before the
    "\n" to something that does not end in a space; whatever follows or precedes them, the
    normalized text's first (last) character is then of the same kind (the exhaustive tests in
    tests/test_normalize.py check the Unicode facts this rests on).
    """
    return _is_safe_cut(data, i, _cut_of(pattern), normalization(normalize))


def _cut_of(pattern: str | None) -> BlockCut | None:
    """The cut rule of a named pattern's regex; None (the general rule alone) for any other."""
    record = named(pattern)
    return record.cut if record is not None else None


def _is_safe_cut(data: bytes, i: int, cut: BlockCut | None, normalize: str | None = None) -> bool:
    """``is_safe_cut`` by the rule ``cut`` (None: the general rule, which all three line-end
    patterns share)."""
    if cut is BlockCut.SUPERWORD:
        return _is_superword_cut(data, i, normalize)
    if i < 2 or i >= len(data):
        return False
    if data[i - 1] == 0x0A and data[i - 2] != 0x0D:
        return _solid_before(data, i - 1, normalize) and _solid_after(data, i, normalize)
    if cut is BlockCut.LINE_END and data[i - 1] == 0x0A and data[i - 2] == 0x0D and i >= 3:
        return _solid_before(data, i - 2, normalize) and _solid_after(data, i, normalize)
    if cut is BlockCut.LINE_END_SPLIT_CRLF and data[i - 1] == 0x0D and data[i] == 0x0A and i + 1 < len(data):
        return _solid_before(data, i - 1, normalize) and _solid_after(data, i + 1, normalize)
    return False


def _solid_before(data: bytes, end: int, normalize: str | None = None) -> bool:
    """The character ending just before byte ``end`` is valid UTF-8 and not a space (nor ends
    in one once normalized)."""
    if 0x21 <= data[end - 1] <= 0x7E:
        return True                                 # the common ASCII case, without decoding
    before = _char_before(data, end)
    if before is None or _WHITESPACE.match(before):
        return False
    return normalize is None or not _WHITESPACE.match(normalize_text(before, normalize)[-1])


def _solid_after(data: bytes, i: int, normalize: str | None = None) -> bool:
    """The character starting at byte i is valid UTF-8, not a space and not "/" (nor starts
    with either once normalized). ASCII characters stay themselves in every normal form."""
    if 0x21 <= data[i] <= 0x7E:
        return data[i] != 0x2F
    after = _char_at(data, i)
    if after is None or after == "/" or _WHITESPACE.match(after):
        return False
    if normalize is None:
        return True
    first = normalize_text(after, normalize)[0]
    return first != "/" and not _WHITESPACE.match(first)


def find_cut(data: bytes, start: int = 0, pattern: str | None = None, normalize: str | None = None) -> int | None:
    """The first safe cut at or after byte ``start`` of ``data``, or None."""
    cut, form = _cut_of(pattern), normalization(normalize)
    return superword_cut(data, start, (), form) if cut is BlockCut.SUPERWORD else _find_cut(data, start, cut, form)


def _find_cut(data: bytes, start: int, rule: BlockCut | None, normalize: str | None = None) -> int | None:
    i = data.find(b"\n", max(start - 1, 0))
    while i != -1:
        for cut in (i, i + 1):                      # before a "\n" (gpt2, CRLF) or after it
            if cut >= start and _is_safe_cut(data, cut, rule, normalize):
                return cut
        i = data.find(b"\n", i + 1)
    return None


# -- where superword text may be cut ------------------------------------------------------------
# SUPERWORD's chunks cross lines, so a "\n" is no place to cut; the places are after a letter
# where its splitter matches, and after a digit run (see _is_superword_cut). _MARK is the
# splitter's [^\s\p{L}\p{N}] less surrogates: bytes that are no valid UTF-8 decode to those
# (surrogateescape) and must never count, as the characters around a cut must be valid.
_MARK = r"[^\s\p{L}\p{N}\p{Cs}]"
_SPLITTER_AHEAD = regex.compile(rf"\p{{N}}|{_MARK}{{2}}| {_MARK}{{2}}| \s")
_NO_DIGIT_AHEAD = regex.compile(r"[^\p{N}\p{Cs}]")
_LETTER, _DIGIT = regex.compile(r"\p{L}"), regex.compile(r"\p{N}")
_SUPERWORD_CUTS = regex.compile(rf"(?<=\p{{L}})(?={_SPLITTER_AHEAD.pattern})|(?<=\p{{N}})(?={_NO_DIGIT_AHEAD.pattern})")
_AHEAD_BYTES = 12          # the rule reads three characters at most after the cut (four bytes each)
_BEHIND_BYTES = 4          # and one before it


def _is_superword_cut(data: bytes, i: int, normalize: str | None = None) -> bool:
    r"""May ``data`` be cut before byte i without changing its SUPERWORD chunks? Yes when

    (a) the character before i is a letter (\p{L}) and SUPERWORD_SPLIT matches at i, which the
        three characters from i decide: a digit (\p{N}{1,3}), two marks ([^\s\p{L}\p{N}]{2,}),
        a space and two marks (" ?" before them), a space and any \s (" +(?!\S)"); or
    (b) the character before i is a digit (\p{N}) and the one at i is not.

    The proof. Call a *reading* any match of an alternative, or test of the splitter (the
    look-ahead of the last alternative, (?:(?!SPLIT)[\s\S])+), that starts before i.
    * The whole text has a chunk boundary at i. (a) No alternative of the splitter matches a
      letter (they match digits, marks, spaces, "\r", "\n"), so the letter before i lies in a
      chunk of the last alternative, which ends at the first position where the splitter
      matches: it holds the letter, so no such position lies in it, and i is one. (b) The
      splitter matches at every digit, so no chunk of the last alternative holds one, nor does a
      mark or space run: a digit lies in a \p{N}{1,3} chunk, and the one before i ends at i,
      the end of the digit run.
    * The text before i splits as in the whole text: every reading has the same outcome when
      the text ends at i. (a) A reading goes on only while the characters are digits, marks,
      spaces or newlines: it stops at the latest at the letter before i, and never reads i.
      (b) Mark and space runs stop at the digits before i; a test of the splitter at a digit
      succeeds whatever follows; a \p{N}{1,3} match takes three digits or the rest of the run,
      which ends at i both with the character there and with the end of the text.
      So the chunk holding the character before i ends at i in both (the splitter matches
      there, or a digit run ends; the text ends there).
    * The text from i splits as in the whole text: the pattern has no look-behind, and findall
      goes on from i, the end of the chunk before.
    A block between two cuts is the text before the second cut of the text from the first, so
    cutting at several safe places at once keeps the chunks too. Both characters around the cut
    are valid UTF-8 (a letter or digit; no surrogate after), so the cut never splits a
    character nor a run of invalid bytes that ``errors="replace"`` turns into U+FFFD.

    With ``normalize`` (NFC, NFKC) the rule must also hold in the normalized text, and
    normalizing the blocks one by one must give the normalized whole. A letter can normalize to
    a mark or a space (NFKC: U+037A -> " \u0345"), and marks at i compose with the letter
    before, so the cut is taken only where the character before i and the four from i are
    ASCII: ASCII characters are starters that every normalization leaves as they are and that
    compose with nothing before them (no composition's second character is ASCII), so each
    side normalizes alone to what it is in the normalized whole, the five characters unchanged
    around the cut, and the rule reads the same characters in both texts."""
    if i < 1 or i >= len(data) or 0x80 <= data[i] < 0xC0:
        return False
    if normalize is not None and not (i + 4 <= len(data) and max(data[i - 1:i + 4]) < 0x80):
        return False
    before = _char_before(data, i)
    if before is None:
        return False
    after = data[i:i + _AHEAD_BYTES].decode("utf-8", "surrogateescape")
    if _LETTER.match(before):
        return _SPLITTER_AHEAD.match(after) is not None
    return _DIGIT.match(before) is not None and _NO_DIGIT_AHEAD.match(after) is not None


def superword_cut(data: bytes, start: int, special_bytes: tuple[bytes, ...] = (),
                  normalize: str | None = None) -> int | None:
    """The first cut at or after byte ``start`` where SUPERWORD text may be cut into blocks
    (``_is_superword_cut``) and that no special token overlaps, nor the characters the rule
    reads (special tokens are cut out of the text before it is split: one there would change
    them), or None. The regex finds candidates in the decoded data, the byte rule decides."""
    low = max(start - _BEHIND_BYTES, 0)              # from the character before start
    while low > 0 and 0x80 <= data[low] < 0xC0:
        low -= 1
    text = data[low:].decode("utf-8", "surrogateescape")     # any bytes: invalid ones become surrogates
    chars, offset = 0, low
    for m in _SUPERWORD_CUTS.finditer(text):
        offset += len(text[chars:m.start()].encode("utf-8", "surrogateescape"))
        chars = m.start()
        if (offset >= start and _is_superword_cut(data, offset, normalize)
                and _clear_of(data, offset, special_bytes)):
            return offset
    return None


def _clear_of(data: bytes, i: int, special_bytes: tuple[bytes, ...]) -> bool:
    """No special token's occurrence overlaps the bytes the cut rule reads around i, and data
    shows enough around them to know (else it is no safe place)."""
    low, high = i - _BEHIND_BYTES, i + _AHEAD_BYTES
    for token in special_bytes:
        first, last = low - len(token) + 1, high + len(token) - 1
        if first < 0 or last > len(data):
            return False
        at = data.find(token, first, last)
        if at >= 0:
            return False
    return True


# ---------------------------------------------------------------------------------------------
# Native scanners for the named patterns (bpe_fast/pretokenize/_scan.pxd), built on tables made here with
# the regex module itself, so that the classes mean exactly what they mean in the patterns.

_FOLD_LIMIT = 0x400
_BITS = {"L": 1, "N": 2, "S": 4, "U": 8, "W": 16, "NL": 32}     # as in _scan.pxd


@functools.lru_cache(maxsize=1)
def char_classes() -> tuple[np.ndarray, np.ndarray]:
    """(class bits per code point, contraction letter per code point below _FOLD_LIMIT).

    Built by running the regex module over every code point, so the classes mean exactly what
    they mean in the patterns: once per process, or read back from prebuilt.py's cache, keyed by
    the regex module's version (its Unicode tables) and the class bits."""
    key = prebuilt.key_of("classes", regex.__version__, repr(sorted(_BITS.items())), str(_FOLD_LIMIT))
    saved = prebuilt.read(key, expect={"classes": (0x110000,), "fold": (_FOLD_LIMIT,)})
    if saved is not None:
        return saved["classes"].astype(np.uint8), saved["fold"].astype(np.uint8)
    classes, fold = _char_classes_of_regex()
    prebuilt.write(key, {"classes": classes, "fold": fold})
    return classes, fold


def _char_classes_of_regex() -> tuple[np.ndarray, np.ndarray]:
    codepoints = np.arange(0x110000, dtype=np.uint32)
    codepoints = codepoints[(codepoints < 0xD800) | (codepoints >= 0xE000)]
    text = codepoints.astype("<u4").tobytes().decode("utf-32-le")

    def members(char_class: str) -> np.ndarray:
        inside = np.zeros(0x110000, dtype=bool)
        for m in regex.finditer(char_class + "+", text):   # runs: few matches, fast
            inside[codepoints[m.start():m.end()]] = True
        return inside

    cat = {name: members(rf"\p{{{name}}}") for name in ("L", "N", "Lu", "Ll", "Lt", "Lm", "Lo", "M")}
    masks = {
        "L": cat["L"], "N": cat["N"], "S": members(r"\s"), "NL": members(r"[\r\n]"),
        "U": cat["Lu"] | cat["Lt"] | cat["Lm"] | cat["Lo"] | cat["M"],     # o200k's upper class
        "W": cat["Ll"] | cat["Lm"] | cat["Lo"] | cat["M"],                 # o200k's lower class
    }
    classes = np.zeros(0x110000, dtype=np.uint8)
    for name, bit in _BITS.items():
        classes[masks[name]] |= bit
    fold = np.zeros(_FOLD_LIMIT, dtype=np.uint8)
    for m in regex.finditer("(?i)[sdmtlver]", text):   # e.g. U+017F (long s) matches (?i)s
        c = ord(m.group())
        if c >= _FOLD_LIMIT:   # not so in any Unicode version yet; the table would need to grow
            raise RuntimeError(f"(?i)[sdmtlver] matches U+{c:04X}, beyond the contraction table")
        fold[c] = next(ord(x) for x in "sdmtlver" if regex.fullmatch("(?i)" + x, m.group()))
    return classes, fold


def native_scanner(pattern: str | None):
    """The native Scanner for a named pattern's regex string, or None for any other pattern."""
    return Splitter.of(pattern).scanner
