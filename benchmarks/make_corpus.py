"""Big benchmark corpora with a long tail, made several different ways, each from a seed.

    python benchmarks/make_corpus.py --size 1G -o web-1g.txt                  # mutated (the default)
    python benchmarks/make_corpus.py --kind zipf --size 1G -o zipf-1g.txt --stats
    python benchmarks/make_corpus.py --all --size 1G --dir corpora/ --jobs 2  # one file per kind
    python benchmarks/make_corpus.py --stats-only -o zipf-1g.txt              # count a file made before

Web text has millions of distinct chunks per GB (names, typos, identifiers, numbers, rare words,
other scripts): mix33 repeated would give its 0.45 million chunks again and again, and a single
way of making the tail would let a trainer be tuned to it. So each kind makes its tail
differently, and a benchmark should report the worst of them. Distinct GPT-2 chunks in 1 GiB
with the defaults (seed 0) are given for each; the count grows with the size, not in proportion.

* ``mutated`` (issue 8's corpus, 5.1 million): copies of the real mix33 text (35 languages,
  code, prose) in which a fraction ``--mutate`` of the ASCII words get a random suffix of 2-5
  lowercase letters ("quick" -> "quickvbx") and as many places get a random identifier of
  uppercase letters and digits ("X7QK2 "). The tail: random letter strings on real words.
  (The bytes issue 8's script made, up to their last line end.)
* ``zipf`` (8.0 million): English-like prose over a generated lexicon of ``--lexicon`` words
  (default 30 million), drawn with Zipf's law of exponent ``--zipf`` (default 1.1; web text
  has 1.05-1.3). A word is built from its rank: 1-4 of 14,000 onset-vowel-coda syllables
  (common words short, rare ones long), sometimes a prefix ("un", "re", ...) or a suffix
  ("ing", "ness", ...), so words share pieces as real morphology does. Sentences are
  capitalized and punctuated, lines are paragraphs, one token in 50 is a number. The tail:
  the lexicon's rare words, which BPE must build from pieces.
* ``scripts`` (about 14 million): mixed scripts. Each language of ../shared's multilingual text
  (31 of them) and English from big.txt gets a lexicon of pseudo-words made of its own pieces
  (one or two letters with their combining marks, as frequent as in its real text), drawn
  with Zipf's law; Chinese, Japanese and Thai are written without spaces, so GPT-2's pattern
  makes whole clauses one chunk. Each line is in one language, with English words switched in
  (1 in 20), numbers and the script's own punctuation; a fraction ``--real`` (default 0.2) of
  the lines are real lines of mix33 spliced in. The tail: multi-byte chunks in many scripts,
  and long ones.
* ``code`` (13 million): machine text: log lines (timestamps, levels, HTTP paths with ids,
  status codes, latencies, IP addresses, 40-hex-digit hashes, UUIDs), JSON records (numbers,
  snake_case and camelCase identifiers from the zipf lexicon, e-mail addresses, URLs, base64
  tokens) and code-like assignments, with a fraction ``--real`` (default 0.3) of real lines of
  ../shared/corpora/code_python.txt. The tail: numbers, hex, identifiers and tokens, nearly
  all seen once.
* ``neardup`` (7.8 million): near-duplicate documents, as crawls hold them: runs of 8 lines of
  mix33, each copied many times, every copy with its own typos (about a fraction ``--typos``
  of the words, default 0.3: in ASCII words a letter replaced, dropped, doubled or two letters
  swapped, in others a character dropped), its numbers given new digits, and a boilerplate
  footer (a user name, a date, a view count). The tail: typos of real words, beside a head of
  exact repeats.

Each kind but ``mutated`` is made in blocks of about 8 MB from the seed and the block's number
alone, so the same ``--seed`` gives the same bytes for any ``--jobs``; the file ends on the last
line end within ``--size``. On 2 cores (``--jobs 2``), shared with other work, 1 GiB took 5 s
(mutated), 60-70 s (zipf, scripts) and 40 s (code, neardup). ``--stats`` counts the file's
distinct GPT-2 chunks with bpe_fast (what the kernel's set-up and memory grow with). The tests
make tiny files of each kind (tests/test_make_corpus.py).
"""
from __future__ import annotations

import argparse
import functools
import multiprocessing as mp
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mix33 import corpus_dir, mix33_files  # benchmarks/ is on sys.path

LOWER = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
UPPER_DIGITS = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", dtype=np.uint8)
DIGITS = np.frombuffer(b"0123456789", dtype=np.uint8)
HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
BASE64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", dtype=np.uint8)
BLOCK = 8 << 20               # bytes a block of the generated kinds aims at
LANGUAGE_SAMPLE = 500_000     # characters of each language's real text that its pieces come from
NEWLINE = 10


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


# ---------------------------------------------------------------------------------------------
# Machinery: hashing, Zipf ranks, tables of byte strings, and text laid out as rows of fields.

def splitmix(x: np.ndarray) -> np.ndarray:
    """splitmix64 of each uint64 (wrapping arithmetic): the words of a lexicon come from it."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def zipf_ranks(rng, n: int, exponent: float, lexicon: int) -> np.ndarray:
    """n ranks in 1..lexicon drawn with Zipf's law (P(r) ~ r**-exponent), by inverting the
    continuous power law's distribution: no table of the lexicon is needed."""
    a = 1.0 - exponent
    top = (lexicon + 1.0) ** a
    x = (1.0 + rng.random(n) * (top - 1.0)) ** (1.0 / a)
    return np.minimum(x.astype(np.int64), lexicon)


def bits(h: np.ndarray, shift: int, width: int) -> np.ndarray:
    return ((h >> np.uint64(shift)) & np.uint64((1 << width) - 1)).astype(np.int64)


@dataclass
class Table:
    """Byte strings as a padded matrix (one per row) and their lengths: a row of ``bytes_``
    past its length is padding."""
    bytes_: np.ndarray
    lengths: np.ndarray

    @classmethod
    def of(cls, strings: list[bytes], width: int = 1) -> Table:
        """The table of these strings (of one empty string if there are none), rows at least
        ``width`` bytes wide."""
        strings = strings or [b""]
        width = max(width, *(len(s) for s in strings))
        matrix = np.zeros((len(strings), width), np.uint8)
        for i, s in enumerate(strings):
            matrix[i, :len(s)] = np.frombuffer(s, np.uint8)
        return cls(matrix, np.array([len(s) for s in strings], np.int64))

    def __len__(self) -> int:
        return len(self.lengths)

    def take(self, ids: np.ndarray, present: np.ndarray | None = None) -> Field:
        """The strings of ``ids`` as a field; empty where ``present`` is False."""
        lengths = self.lengths[ids]
        return Field(self.bytes_[ids], lengths if present is None else np.where(present, lengths, 0))


@dataclass
class Field:
    """One column of text laid out in rows: each row's bytes (padded) and length."""
    bytes_: np.ndarray
    lengths: np.ndarray

    @classmethod
    def const(cls, text: bytes, rows: int, present: np.ndarray | None = None) -> Field:
        matrix = np.broadcast_to(np.frombuffer(text, np.uint8), (rows, len(text)))
        lengths = np.full(rows, len(text), np.int64)
        return cls(matrix, lengths if present is None else np.where(present, lengths, 0))

    @classmethod
    def random(cls, rng, alphabet: np.ndarray, rows: int, shortest: int, longest: int) -> Field:
        """Random strings of the alphabet, of lengths shortest..longest."""
        matrix = alphabet[rng.integers(0, len(alphabet), (rows, longest))]
        return cls(matrix, rng.integers(shortest, longest + 1, rows))

    @classmethod
    def number(cls, rng, rows: int, shortest: int, longest: int) -> Field:
        """Random decimal numbers of shortest..longest digits, the first not 0 (unless alone)."""
        field = cls.random(rng, DIGITS, rows, shortest, longest)
        field.bytes_[:, 0] = np.where(field.lengths > 1, DIGITS[rng.integers(1, 10, rows)], field.bytes_[:, 0])
        return field


def lay_out(fields: list[Field]) -> tuple[np.ndarray, np.ndarray]:
    """The rows' text, row after row, each row its fields in order: (bytes, row lengths)."""
    matrix = np.concatenate([f.bytes_ for f in fields], axis=1)
    keep = np.concatenate([np.arange(f.bytes_.shape[1]) < f.lengths[:, None] for f in fields], axis=1)
    return matrix[keep], np.sum([f.lengths for f in fields], axis=0)


def gather_ranges(source: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """source[starts[0]:starts[0] + lengths[0]] + source[starts[1]:...] + ... in one gather."""
    ends = np.cumsum(lengths)
    index = np.arange(int(ends[-1]) if len(ends) else 0) + np.repeat(starts - (ends - lengths), lengths)
    return source[index]


def interleave(parts: list[tuple[np.ndarray, np.ndarray]], order: np.ndarray) -> np.ndarray:
    """Rows from several laid-out parts (bytes, row lengths), in ``order``: order[i] is the part
    the i-th row comes from, each part's rows taken in their own order (so part k has as many
    rows as ``order`` holds k)."""
    source = np.concatenate([data for data, _ in parts])
    base = 0
    starts, lengths = np.empty(len(order), np.int64), np.empty(len(order), np.int64)
    for k, (data, rows) in enumerate(parts):
        where = np.flatnonzero(order == k)
        assert len(where) == len(rows), (k, len(where), len(rows))
        starts[where] = base + np.cumsum(rows) - rows
        lengths[where] = rows
        base += len(data)
    return gather_ranges(source, starts, lengths)


def quantile_lookup(weights: np.ndarray, size: int = 1 << 16) -> np.ndarray:
    """A table that maps a uniform 16-bit number to an index drawn with ``weights``."""
    cdf = np.cumsum(weights, dtype=np.float64)
    return np.minimum(np.searchsorted(cdf / cdf[-1], (np.arange(size) + 0.5) / size), len(weights) - 1)


# ---------------------------------------------------------------------------------------------
# Languages: how words are built, and how the script is punctuated.

@dataclass
class Language:
    """A lexicon made from pieces: word ``rank`` is 1..``most_pieces`` pieces (more for rarer
    words) chosen by hashing the rank, sometimes with a prefix and a suffix; ``spaced``
    languages put a space before each word."""
    name: str
    pieces: Table
    capitals: Table          # the same pieces with their first letter upper case
    lookup: np.ndarray       # uniform 16 bits -> piece, as frequent as in the language
    prefixes: Table
    suffixes: Table
    commas: Table
    stops: Table
    spaced: bool = True
    most_pieces: int = 4
    salt: int = 0

    def word_fields(self, ranks: np.ndarray, capital: np.ndarray) -> list[Field]:
        """The fields that spell the words of these ranks (capitalized where ``capital``)."""
        h = splitmix(ranks.astype(np.uint64) * np.uint64(0x2545F4914F6CDD1D) + np.uint64(self.salt))
        log_rank = np.log2(ranks + 1.0)
        n = np.clip(1 + (log_rank + bits(h, 0, 3)) // 7, 1, self.most_pieces).astype(np.int64)
        fields = [self.prefixes.take(bits(h, 3, 16) % len(self.prefixes), (ranks > 1000) & (bits(h, 19, 4) == 0))]
        for i in range(self.most_pieces):
            ids = self.lookup[bits(splitmix(h + np.uint64(i + 1)), 40, 16)]
            piece = self.pieces.take(ids, n > i)
            if i == 0:                 # the first piece: capitalized where the word is
                upper = self.capitals.take(ids, n > i)
                piece = Field(np.where(capital[:, None], upper.bytes_, piece.bytes_),
                              np.where(capital, upper.lengths, piece.lengths))
            fields.append(piece)
        fields.append(self.suffixes.take(bits(h, 23, 16) % len(self.suffixes), (ranks > 100) & (bits(h, 39, 2) == 0)))
        return fields


@functools.lru_cache(maxsize=1)
def english_like(salt: int = 1) -> Language:
    """Syllables onset + vowel + coda, frequent ones first; English prefixes and suffixes."""
    onsets = ["", "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
              "bl", "br", "ch", "cl", "cr", "dr", "fl", "fr", "gl", "gr", "pl", "pr", "sc", "sh", "sk", "sl",
              "sm", "sn", "sp", "st", "str", "sw", "th", "tr", "tw", "wh", "qu", "y"]
    vowels = ["a", "e", "i", "o", "u", "y", "ai", "ea", "ee", "io", "oo", "ou", "ie", "au"]
    codas = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "nt", "st", "ck", "ng", "rt", "ll", "ss", "x",
             "th", "sh", "ch"]
    syllables = [o + v + c for o in onsets for v in vowels for c in codas]
    order = np.random.default_rng(salt).permutation(len(syllables))
    syllables = [syllables[i] for i in order]
    weights = 1.0 / np.arange(1, len(syllables) + 1) ** 0.9
    prefixes = ["un", "re", "in", "dis", "pre", "over", "under", "anti", "sub", "inter", "non", "mis", "co", "de",
                "ex", "super", "trans", "micro", "multi", "semi"]
    suffixes = ["s", "es", "ed", "ing", "er", "ers", "ly", "tion", "tions", "ness", "ment", "ments", "able", "ible",
                "al", "ful", "less", "ous", "ive", "ize", "ized", "ity", "est", "ism", "ist", "ic", "ical"]
    return Language("en-like", Table.of([s.encode() for s in syllables]),
                    Table.of([s.capitalize().encode() for s in syllables]), quantile_lookup(weights),
                    Table.of([p.encode() for p in prefixes]), Table.of([s.encode() for s in suffixes]),
                    Table.of([b","]), Table.of([b".", b".", b".", b"?", b"!", b":"]), salt=salt)


UNSPACED = {"zh", "ja", "th"}


def language_from_text(name: str, text: str, salt: int) -> Language:
    """A language whose pieces are one or two letters (with their combining marks) of the real
    text's words (single ones for the unspaced scripts), as frequent as there; its punctuation
    is the real text's own."""
    import regex
    letter = r"\p{L}\p{M}*"                        # a letter and its marks: about a grapheme cluster
    pieces = Counter(regex.findall(letter, text))
    if name not in UNSPACED:
        pieces.update(regex.findall(f"(?:{letter}){{2}}", text))
    common = pieces.most_common(3000 if name in UNSPACED else 2000)
    marks = Counter(regex.findall(r"\p{P}", text))
    commas = [c for c in (",", "，", "、", "،", ";") if marks[c]] or [","]
    stops = [c for c in (".", "。", "।", "؟", "?", "!", "！", "։", "۔") if marks[c]] or ["."]
    spaced = name not in UNSPACED
    lower = [p.encode() for p, _ in common]
    upper = [(p[:1].upper() + p[1:]).encode() for p, _ in common]     # "ß" -> "SS": one more byte
    width = max(len(w) for w in lower + upper)
    return Language(name, Table.of(lower, width), Table.of(upper, width),
                    quantile_lookup(np.array([n for _, n in common], np.float64)),
                    Table.of([]), Table.of([]),
                    Table.of([c.encode() for c in commas]), Table.of([c.encode() for c in stops]),
                    spaced=spaced, most_pieces=5 if spaced else 3, salt=salt)


@functools.lru_cache(maxsize=1)
def mix33_bytes() -> bytes:
    return b"".join(p.read_bytes() for p in mix33_files(corpus_dir()))


@functools.lru_cache(maxsize=1)
def real_languages() -> tuple[Language, ...]:
    """English from big.txt, and each language of multilingual/ (files of one language together)."""
    folder = corpus_dir() / "multilingual"
    texts: dict[str, list[str]] = {"en": [(corpus_dir() / "big.txt").read_text(encoding="utf-8")]}
    for path in sorted(folder.glob("*.txt")):
        texts.setdefault(path.stem.split("_")[0], []).append(path.read_text(encoding="utf-8"))
    return tuple(language_from_text(name, "\n".join(parts)[:LANGUAGE_SAMPLE], salt=100 + k)
                 for k, (name, parts) in enumerate(sorted(texts.items())))


def line_index(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, length) of every line of a text, its "\\n" included."""
    ends = np.flatnonzero(data == NEWLINE) + 1
    starts = np.concatenate([[0], ends[:-1]])
    return starts, ends - starts


# ---------------------------------------------------------------------------------------------
# Prose: rows of tokens (separator, word, punctuation), in one or several languages.

def prose(rng, languages: list[Language], weights: np.ndarray, n_tokens: int, exponent: float, lexicon: int,
          english: Language | None = None, switch: float = 0.0) -> np.ndarray:
    """Lines of sentences: each line (a paragraph) in one language drawn with ``weights``; one
    word in ``1 / switch`` in English instead; one in 50 a number."""
    sentence_end = rng.random(n_tokens) < 1 / 14
    line_end = sentence_end & (rng.random(n_tokens) < 0.3)
    line_end[-1] = sentence_end[-1] = True
    line_of = np.concatenate([[0], np.cumsum(line_end)[:-1]])
    starts_line = np.concatenate([[True], line_end[:-1]])
    starts_sentence = np.concatenate([[True], sentence_end[:-1]])
    lang = rng.choice(len(languages), size=int(line_of[-1]) + 1, p=weights)[line_of]
    if english is not None and switch:
        lang = np.where(rng.random(n_tokens) < switch, len(languages), lang)
        languages = [*languages, english]
    number = rng.random(n_tokens) < 0.02
    comma = ~sentence_end & (rng.random(n_tokens) < 0.08)
    ranks = zipf_ranks(rng, n_tokens, exponent, lexicon)
    parts, order = [], np.empty(n_tokens, np.int64)
    for k, language in enumerate(languages):
        rows = np.flatnonzero(lang == k)
        if len(rows):
            parts.append(language_rows(rng, language, rows, ranks, starts_line, starts_sentence, number, comma,
                                       sentence_end, line_end))
            order[rows] = len(parts) - 1
    return interleave(parts, order)


def language_rows(rng, language: Language, rows: np.ndarray, ranks, starts_line, starts_sentence, number, comma,
                  sentence_end, line_end) -> tuple[np.ndarray, np.ndarray]:
    """The tokens ``rows`` of one language laid out: (bytes, length of each token)."""
    n = len(rows)
    spaced = number[rows] | (language.spaced & ~starts_line[rows])
    fields = [Field.const(b" ", n, spaced)]
    words = language.word_fields(ranks[rows], starts_sentence[rows] & language.spaced)
    is_word = ~number[rows]
    fields += [Field(f.bytes_, np.where(is_word, f.lengths, 0)) for f in words]
    digits = Field.number(rng, n, 1, 6)
    fields.append(Field(digits.bytes_, np.where(is_word, 0, digits.lengths)))
    fields.append(language.commas.take(rng.integers(0, len(language.commas), n), comma[rows]))
    fields.append(language.stops.take(rng.integers(0, len(language.stops), n), sentence_end[rows]))
    fields.append(Field.const(b"\n", n, line_end[rows]))
    return lay_out(fields)


# ---------------------------------------------------------------------------------------------
# The kinds of corpus. Each makes a block of text from a random generator seeded by (seed,
# block number); ``Kind.setup`` builds what all blocks share, once per process.

@dataclass
class Kind:
    name: str
    block: Callable[..., np.ndarray]           # (rng, options) -> bytes of whole lines
    prepare: Callable[[], object]              # builds what every block shares (before --jobs fork)
    needs_data: bool = True                    # reads ../shared/corpora


def zipf_block(rng, options) -> np.ndarray:
    return prose(rng, [english_like()], np.ones(1), BLOCK // 11, options.zipf, options.lexicon)


def scripts_block(rng, options) -> np.ndarray:
    languages = list(real_languages())
    weights = np.ones(len(languages)) / len(languages)
    generated = prose(rng, languages, weights, BLOCK // 12, options.zipf, options.lexicon // 4,
                      english=english_like(), switch=0.05)
    return with_real_lines(rng, generated, "mix33", options.real)


def with_real_lines(rng, generated: np.ndarray, source: str, fraction: float) -> np.ndarray:
    """Generated lines with random real lines of ``source`` (mix33 or code) spliced in between,
    a ``fraction`` of all lines."""
    if fraction <= 0:
        return generated
    _, g_lengths = line_index(generated)
    real, r_starts, r_lengths = real_lines(source)
    n_real = int(len(g_lengths) * fraction / (1 - fraction))
    picked = rng.integers(0, len(r_starts), n_real)
    order = np.zeros(len(g_lengths) + n_real, np.int64)
    order[rng.choice(len(order), n_real, replace=False)] = 1
    parts = [(generated, g_lengths), (gather_ranges(real, r_starts[picked], r_lengths[picked]), r_lengths[picked])]
    return interleave(parts, order)


@functools.lru_cache(maxsize=2)
def real_lines(source: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The text of mix33 or of code_python.txt, and the (start, length) of its non-empty lines."""
    data = mix33_bytes() if source == "mix33" else (corpus_dir() / "code_python.txt").read_bytes()
    real = np.frombuffer(data, np.uint8)
    starts, lengths = line_index(real)
    keep = lengths > 1
    return real, starts[keep], lengths[keep]


def code_block(rng, options) -> np.ndarray:
    english = english_like()
    n = BLOCK // 110
    kind = rng.choice(3, size=n, p=[0.4, 0.35, 0.25])
    parts, order = [], kind.copy()
    for k, make in enumerate((log_lines, json_lines, code_like_lines)):
        parts.append(make(rng, english, int(np.sum(kind == k)), options))
    generated = interleave(parts, order)
    return with_real_lines(rng, generated, "code", options.real)


def identifiers(rng, english: Language, n: int, options, camel: bool) -> list[Field]:
    """snake_case or camelCase names of two or three lexicon words."""
    fields: list[Field] = []
    words = 2 + (rng.random(n) < 0.4)
    for i in range(3):
        ranks = zipf_ranks(rng, n, options.zipf, options.lexicon)
        present = words > i
        if i:
            fields.append(Field.const(b"_", n, present & (not camel)))
        parts = english.word_fields(ranks, np.full(n, camel and i > 0))
        fields += [Field(f.bytes_, np.where(present, f.lengths, 0)) for f in parts]
    return fields


def pick(rng, options: list[bytes], n: int) -> Field:
    return Table.of(options).take(rng.integers(0, len(options), n))


def log_lines(rng, english: Language, n: int, options) -> tuple[np.ndarray, np.ndarray]:
    """Log lines: an ISO time stamp, a level, a service tag, an HTTP method and API route with a
    query, a status, a latency, an IP address and a hash."""
    digits = lambda lo, hi: Field.random(rng, DIGITS, n, lo, hi)        # noqa: E731
    number = lambda lo, hi: Field.number(rng, n, lo, hi)                 # noqa: E731
    const = lambda text: Field.const(text, n)                            # noqa: E731
    fields = [const(b"202"), digits(1, 1), const(b"-"), digits(2, 2), const(b"-"), digits(2, 2), const(b"T"),
              digits(2, 2), const(b":"), digits(2, 2), const(b":"), digits(2, 2), const(b"."), digits(3, 3),
              const(b"Z "), pick(rng, [b"INFO", b"INFO", b"DEBUG", b"WARN", b"ERROR"], n), const(b" ["),
              pick(rng, [b"api", b"worker", b"auth", b"billing", b"search", b"cache"], n), const(b"-"),
              digits(1, 2), const(b"] "), pick(rng, [b"GET", b"GET", b"POST", b"PUT", b"DELETE"], n),
              const(b" /v"), digits(1, 1), const(b"/")]
    fields += identifiers(rng, english, n, options, camel=False)
    fields += [const(b"/"), number(1, 9), const(b"?"), pick(rng, [b"page", b"id", b"q", b"ref", b"limit"], n),
               const(b"="), number(1, 5), const(b" "), pick(rng, [b"200", b"200", b"201", b"304", b"404", b"500"], n),
               const(b" "), number(1, 4), const(b"ms "), number(1, 3), const(b"."), number(1, 3), const(b"."),
               number(1, 3), const(b"."), number(1, 3)]
    uuid = rng.random(n) < 0.5
    hex_ = lambda k, present: Field(Field.random(rng, HEX, n, k, k).bytes_, np.where(present, k, 0))  # noqa: E731
    fields += [Field.const(b" sha=", n, ~uuid), hex_(40, ~uuid), Field.const(b" request_id=", n, uuid)]
    for k, width in enumerate((8, 4, 4, 4, 12)):
        fields += [Field.const(b"-", n, uuid & (k > 0)), hex_(width, uuid)]
    fields.append(const(b"\n"))
    return lay_out(fields)


def json_lines(rng, english: Language, n: int, options) -> tuple[np.ndarray, np.ndarray]:
    """{"id": 48213, "userName": "...", "email": "...@....com", "token": "...", "url": "https://..."}"""
    const = lambda text: Field.const(text, n)                            # noqa: E731
    fields = [const(b'{"id": '), Field.number(rng, n, 1, 10), const(b', "userName": "')]
    fields += identifiers(rng, english, n, options, camel=True)
    fields += [const(b'", "email": "')]
    fields += identifiers(rng, english, n, options, camel=False)
    fields += [const(b"@"), pick(rng, [b"gmail.com", b"example.org", b"mail.ru", b"corp.io", b"uni-bonn.de"], n),
               const(b'", "score": '), Field.number(rng, n, 1, 3), const(b"."),
               Field.random(rng, DIGITS, n, 1, 6), const(b', "token": "'), Field.random(rng, BASE64, n, 16, 32),
               const(b'", "url": "https://'), pick(rng, [b"www.", b"api.", b"cdn.", b""], n)]
    fields += english.word_fields(zipf_ranks(rng, n, options.zipf, options.lexicon), np.zeros(n, bool))
    fields += [pick(rng, [b".com/", b".org/", b".net/", b".io/", b".de/"], n)]
    fields += identifiers(rng, english, n, options, camel=False)
    fields += [const(b"/"), Field.number(rng, n, 1, 7), const(b'.html"}\n')]
    return lay_out(fields)


def code_like_lines(rng, english: Language, n: int, options) -> tuple[np.ndarray, np.ndarray]:
    """    self.max_retry_count = compute_total(config["item_name"], 1024)"""
    const = lambda text: Field.const(text, n)                            # noqa: E731
    fields = [pick(rng, [b"    ", b"        ", b"", b"\t"], n), pick(rng, [b"self.", b"", b"let ", b"const "], n)]
    fields += identifiers(rng, english, n, options, camel=False)
    fields += [const(b" = ")]
    fields += identifiers(rng, english, n, options, camel=rng.random() < 0.5)
    fields += [const(b'(config["')]
    fields += identifiers(rng, english, n, options, camel=False)
    fields += [const(b'"], '), Field.number(rng, n, 1, 5), const(b")\n")]
    return lay_out(fields)


def neardup_block(rng, options) -> np.ndarray:
    """Paragraphs of mix33 (each copied many times over the corpus), each copy with typos, its
    numbers replaced and a boilerplate footer after it."""
    real, starts, lengths = paragraphs()
    picked = rng.integers(0, len(starts), BLOCK // int(np.mean(lengths) + 60))
    text, lengths = with_typos(rng, gather_ranges(real, starts[picked], lengths[picked]), lengths[picked],
                               options.typos)
    with_new_numbers(rng, text)
    order = np.zeros(2 * len(picked), np.int64)
    order[1::2] = 1                                       # each paragraph, then its footer
    return interleave([(text, lengths), footer_lines(rng, len(picked), options)], order)


@functools.lru_cache(maxsize=1)
def paragraphs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """mix33, and the (start, length) of its runs of 8 lines: the documents that get copied."""
    real = np.frombuffer(mix33_bytes(), np.uint8)
    starts, lengths = line_index(real)
    first = np.arange(0, len(starts), 8)
    return real, starts[first], np.add.reduceat(lengths, first)


def with_typos(rng, text: np.ndarray, row_lengths: np.ndarray, rate: float) -> tuple[np.ndarray, np.ndarray]:
    """About a fraction ``rate`` of the words get a typo: in ASCII words a letter replaced,
    dropped or doubled, or two letters swapped; in others a character dropped. Returns the
    text and its rows' new lengths."""
    is_letter = ((text | 0x20) >= ord("a")) & ((text | 0x20) <= ord("z"))
    inside = np.flatnonzero(is_letter[1:-1] & is_letter[:-2] & is_letter[2:]) + 1      # a letter within a word
    at = np.unique(rng.choice(inside, size=int(len(inside) * rate / 4), replace=False))
    kind = rng.integers(0, 4, len(at))
    text = text.copy()
    text[at[kind == 0]] = LOWER[rng.integers(0, 26, int(np.sum(kind == 0)))]            # replaced
    swap = at[kind == 1]
    text[swap], text[swap + 1] = text[swap + 1], text[swap].copy()                      # swapped
    repeat = np.ones(len(text), np.int64)
    repeat[at[kind == 2]] = 2                                                           # doubled
    repeat[at[kind == 3]] = 0                                                           # dropped
    repeat[non_ascii_drops(rng, text, rate)] = 0
    row_starts = np.cumsum(row_lengths) - row_lengths
    return np.repeat(text, repeat), np.add.reduceat(repeat, row_starts)


def non_ascii_drops(rng, text: np.ndarray, rate: float) -> np.ndarray:
    """The bytes of some characters inside non-ASCII words (between two other non-ASCII
    characters): about one in ``4 / rate`` of them, each whole (its lead and continuation bytes)."""
    lead = text >= 0xC0
    inside = np.flatnonzero(lead[1:-4] & (text[:-5] >= 0x80)) + 1
    width = 2 + (text[inside] >= 0xE0) + (text[inside] >= 0xF0)
    inside = inside[text[inside + width] >= 0xC0]                                       # another follows
    at = rng.choice(inside, size=int(len(inside) * rate / 4), replace=False)
    width = 2 + (text[at] >= 0xE0) + (text[at] >= 0xF0)
    return np.repeat(at, width) + (np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width))


def with_new_numbers(rng, text: np.ndarray) -> np.ndarray:
    """Every ASCII digit replaced by a random one (dates, counts and prices change per copy)."""
    digits = np.flatnonzero((text >= ord("0")) & (text <= ord("9")))
    text[digits] = DIGITS[rng.integers(0, 10, len(digits))]
    return text


def footer_lines(rng, n: int, options) -> tuple[np.ndarray, np.ndarray]:
    const = lambda text: Field.const(text, n)                            # noqa: E731
    english = english_like()
    fields = [pick(rng, [b"Posted by ", b"Last edited by ", b"Shared by ", b"Reply from "], n)]
    fields += identifiers(rng, english, n, options, camel=rng.random() < 0.5)
    fields += [const(b" on "), pick(rng, [b"March", b"April", b"May", b"June", b"July"], n), const(b" "),
               Field.number(rng, n, 1, 2), const(b", 20"), Field.random(rng, DIGITS, n, 2, 2),
               const(b" | "), Field.number(rng, n, 1, 6), const(b" views | "),
               pick(rng, [b"Reply", b"Share", b"Report", b"Like"], n), const(b"\n\n")]
    return lay_out(fields)


def mutated_block(rng, options) -> np.ndarray:
    """One copy of mix33, mutated (issue 8's corpus: the bytes it made are kept)."""
    base, ends, starts = mutation_sites()
    return mutated_copy(base, ends, starts, rng, options.mutate)


@functools.lru_cache(maxsize=1)
def mutation_sites() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    base = np.frombuffer(mix33_bytes(), dtype=np.uint8)
    return base, word_ends(base), word_starts(base)


def word_ends(base: np.ndarray) -> np.ndarray:
    """Positions just after an ASCII lowercase word that follows a space (where a suffix goes)."""
    is_lower = (base >= ord("a")) & (base <= ord("z"))
    ends = np.flatnonzero(is_lower[:-1] & ~is_lower[1:]) + 1
    return ends


def word_starts(base: np.ndarray) -> np.ndarray:
    is_letter = ((base >= ord("a")) & (base <= ord("z"))) | ((base >= ord("A")) & (base <= ord("Z")))
    return np.flatnonzero((base[:-1] == ord(" ")) & is_letter[1:]) + 1


def insertions(rng, places: np.ndarray, fraction: float, alphabet: np.ndarray, lengths: tuple[int, int],
               trailer: bytes = b"") -> tuple[np.ndarray, np.ndarray]:
    """(index, byte) pairs inserting a random word of the alphabet at a fraction of the places."""
    chosen = np.sort(rng.choice(places, size=int(len(places) * fraction), replace=False))
    n = rng.integers(lengths[0], lengths[1] + 1, size=len(chosen))
    total = n + len(trailer)
    index = np.repeat(chosen, total)
    letters = alphabet[rng.integers(0, len(alphabet), size=int(total.sum()))]
    if trailer:   # the trailer's bytes at the end of each inserted word
        ends = np.cumsum(total)
        for k, byte in enumerate(trailer):
            letters[ends - len(trailer) + k] = byte
    return index, letters


def mutated_copy(base: np.ndarray, ends: np.ndarray, starts: np.ndarray, rng, fraction: float) -> np.ndarray:
    i1, v1 = insertions(rng, ends, fraction, LOWER, (2, 5))
    i2, v2 = insertions(rng, starts, fraction, UPPER_DIGITS, (4, 7), trailer=b" ")
    index = np.concatenate([i1, i2])
    order = np.argsort(index, kind="stable")
    return np.insert(base, index[order], np.concatenate([v1, v2])[order])


KINDS = {k.name: k for k in (
    Kind("mutated", mutated_block, mutation_sites),
    Kind("zipf", zipf_block, english_like, needs_data=False),
    Kind("scripts", scripts_block, lambda: (english_like(), real_languages(), real_lines("mix33"))),
    Kind("code", code_block, lambda: (english_like(), real_lines("code"))),
    Kind("neardup", neardup_block, lambda: (english_like(), paragraphs())),
)}


# ---------------------------------------------------------------------------------------------
# Writing: blocks in order, made by --jobs processes.

def block_rng(kind: str, seed: int, index: int, previous=None):
    """The random generator of a block: from the seed and the block's number (the mutated kind
    draws its copies from one generator, in order, as issue 8's script did)."""
    if kind == "mutated":
        return previous if previous is not None else np.random.default_rng(seed)
    return np.random.default_rng([seed, index])


def make_block(job: tuple[str, int, int, argparse.Namespace]) -> bytes:
    kind, seed, index, options = job
    return KINDS[kind].block(block_rng(kind, seed, index), options).tobytes()


def blocks(kind: str, seed: int, options, jobs: int) -> Iterator[bytes]:
    """The corpus's blocks, in order, without end."""
    KINDS[kind].prepare()
    if kind == "mutated" or jobs <= 1:
        rng = None
        index = 0
        while True:
            rng = block_rng(kind, seed, index, rng)
            yield KINDS[kind].block(rng, options).tobytes()
            index += 1
    with mp.get_context("fork").Pool(jobs) as pool:
        start = 0
        while True:
            yield from pool.imap(make_block, [(kind, seed, i, options) for i in range(start, start + 4 * jobs)])
            start += 4 * jobs


def write_corpus(out: Path, size: int, kind: str, seed: int, options, jobs: int = 1) -> int:
    """Write blocks up to ``size`` bytes; the last is cut after its last line end within the
    size (so the file ends on a line end, and on a whole UTF-8 character)."""
    written = 0
    with open(out, "wb") as fh:
        for piece in blocks(kind, seed, options, jobs):
            last = written + len(piece) >= size
            if last:
                piece = piece[:size - written]
                piece = piece[:piece.rfind(b"\n") + 1]
            fh.write(piece)
            written += len(piece)
            print(f"\r{written / 1e9:.2f} GB", end="", file=sys.stderr)
            if last:
                break
    print(file=sys.stderr)
    return written


def distinct_chunks(path: str) -> int:
    import bpe_fast
    return len(bpe_fast.count(path, pattern="gpt2", progress="none"))


def print_stats(path: str) -> None:
    size = Path(path).stat().st_size
    n = distinct_chunks(path)
    print(f"{n:,} distinct gpt2 chunks, {n / (size / 1e9):,.0f} per GB")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kind", choices=KINDS, default="mutated", help="how the long tail is made (default mutated)")
    ap.add_argument("--all", action="store_true", help="make one file of every kind in --dir: KIND-SIZE.txt")
    ap.add_argument("--dir", default=".", help="where --all writes (default: here)")
    ap.add_argument("--size", default="1G", help="bytes to write: 1G, 500M, ... (default 1G)")
    ap.add_argument("-o", "--output", help="the file to write")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="processes making blocks (the bytes are the same)")
    ap.add_argument("--mutate", type=float, default=0.045,
                    help="mutated: fraction of words that get a random suffix, and of places that get an identifier")
    ap.add_argument("--zipf", type=float, default=1.1, help="zipf, scripts, code: Zipf exponent of word ranks")
    ap.add_argument("--lexicon", type=int, default=30_000_000, help="zipf, scripts, code: words in the lexicon")
    ap.add_argument("--real", type=float, default=None,
                    help="scripts, code: fraction of lines that are real text (default 0.2 scripts, 0.3 code)")
    ap.add_argument("--typos", type=float, default=0.3, help="neardup: about the fraction of words with a typo")
    ap.add_argument("--stats", action="store_true", help="count the distinct GPT-2 chunks with bpe_fast afterwards")
    ap.add_argument("--stats-only", action="store_true", help="count the distinct GPT-2 chunks of -o; write nothing")
    args = ap.parse_args()
    if args.stats_only:
        if not args.output:
            ap.error("--stats-only counts the file given with -o")
        print_stats(args.output)
        return 0
    if not args.all and not args.output:
        ap.error("give -o FILE, or --all")
    for kind in (KINDS if args.all else [args.kind]):
        options = argparse.Namespace(**vars(args))
        if options.real is None:
            options.real = {"scripts": 0.2, "code": 0.3}.get(kind, 0.0)
        out = Path(args.dir) / f"{kind}-{args.size.lower()}.txt" if args.all else Path(args.output)
        start = time.perf_counter()
        written = write_corpus(out, parse_size(args.size), kind, args.seed, options, args.jobs)
        print(f"wrote {written:,} bytes of {kind} to {out} in {time.perf_counter() - start:.1f} s", flush=True)
        if args.stats:
            print_stats(str(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
