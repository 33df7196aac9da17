"""How good is a tokenizer: the quality report (``Tokenizer.evaluate``, ``bpe-fast eval``).

For the tokenizer and each baseline, on all the text and per group (``by``: each file, or each
value of a record's field, e.g. the language of JSON-lines records):

* ``bytes_per_token``: UTF-8 bytes of the text / token ids (the seed notebooks' compression ratio);
* ``tokens_per_word``: token ids / words, a word being what ``str.split()`` gives (fertility);
* ``unused_tokens``: the ids of the vocabulary (learned and special tokens) never produced;
* ``renyi_efficiency``: the Rényi efficiency of the unigram distribution p of the ids produced,
  alpha = 2.5 (Zouhar et al. 2023, "Tokenization and the Noiseless Channel"):
  ``H_alpha(p) / log |V|`` with ``H_alpha(p) = log(sum_i p_i ** alpha) / (1 - alpha)`` and |V| the
  number of tokens of the vocabulary (learned and special), as the paper defines it (the
  package tokenization-scorer computes this with ``vocab=|V|``; by default it divides by the
  log of the number of distinct tokens seen instead). ``renyi_entropy`` is H_alpha in bits.

One pass, at encoding speed: the inputs are read as ``bpe-fast encode`` reads them (inputs.py:
files, folders, compressed files, JSON lines, Parquet, standard input) or taken from an iterable
of documents, in batches of about ``BATCH_CHARS`` characters; every tokenizer encodes each batch
with its batch path (``encode_batch_to_numpy``, on threads without the GIL) on a thread of its
own while the next batch is read; ids are counted (a bincount) and bytes and words measured by C
loops (_measure.pyx). Memory holds two batches and one count per id per (tokenizer,
group), never the corpus. Special tokens' text is encoded as text (as ``bpe-fast encode`` does);
bytes and words are those of the text as given (before a tokenizer's normalization).
"""
from __future__ import annotations

import importlib
import json
import math
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field as dataclass_field, replace
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from .. import arguments
from ..counting import inputs as inp
from ._measure import count_ids, measure_texts
from ..errors import ArgumentError, ArgumentTypeError, BpeFastError, InputError, MissingExtraError, require

ALPHA = 2.5                    # Zouhar et al.'s choice: the Rényi order that best predicted BLEU
ALL = "all"                    # the group of all the text
FILE = "file"                  # by="file": a group per input file
BATCH_CHARS = 1 << 22          # characters encoded per batch (about 4 MB)
BLOCK_SIZE = 1 << 22           # bytes of a text file read per block


# -- the report -------------------------------------------------------------------------------------

@dataclass
class QualityRow:
    """One tokenizer's figures on one group of the text (``group`` "all": all of it)."""
    tokenizer: str
    group: str
    documents: int
    bytes: int                 # UTF-8 bytes of the text
    words: int                 # str.split() words
    tokens: int
    vocabulary: int            # |V|: tokens of the vocabulary, learned and special
    unused_tokens: np.ndarray = dataclass_field(repr=False)     # ids never produced, ascending
    renyi_entropy: float       # H_alpha of the unigram distribution, in bits
    renyi_efficiency: float    # renyi_entropy / log2 |V|

    @property
    def bytes_per_token(self) -> float:
        return self.bytes / self.tokens if self.tokens else math.nan

    @property
    def tokens_per_word(self) -> float:
        return self.tokens / self.words if self.words else math.nan

    def to_dict(self, unused_ids: bool = True) -> dict:
        """The row as plain JSON values; ``unused_ids=False`` leaves out the list of ids (their count stays).
        A figure of no text (bytes per token of no token: NaN) is None, JSON's null: JSON has no NaN."""
        row = dict(tokenizer=self.tokenizer, group=self.group, documents=self.documents, bytes=self.bytes,
                   words=self.words, tokens=self.tokens, bytes_per_token=_number(self.bytes_per_token),
                   tokens_per_word=_number(self.tokens_per_word), vocabulary=self.vocabulary,
                   unused=len(self.unused_tokens), renyi_entropy=_number(self.renyi_entropy),
                   renyi_efficiency=_number(self.renyi_efficiency))
        if unused_ids:
            row["unused_tokens"] = self.unused_tokens.tolist()
        return row


def _number(value: float) -> float | None:
    return None if math.isnan(value) else value


@dataclass
class QualityReport:
    """The rows of ``evaluate``: per group (``ALL`` first, then the groups in the order met), the
    tokenizer's row, then each baseline's. ``bytes_per_token``, ``tokens_per_word``,
    ``unused_tokens``, ``renyi_efficiency`` and ``renyi_entropy`` are the tokenizer's on all the
    text; ``row(group, tokenizer)`` gives any other. ``str(report)`` is a table."""
    rows: list[QualityRow]
    by: str | None = None
    alpha: float = ALPHA

    @property
    def tokenizer(self) -> str:
        """The name of the tokenizer evaluated (the others are baselines)."""
        return self.rows[0].tokenizer

    @property
    def tokenizers(self) -> list[str]:
        return list(dict.fromkeys(r.tokenizer for r in self.rows))

    @property
    def groups(self) -> list[str]:
        """The groups of ``by`` (not "all"), in the order met; [] without ``by``."""
        return [g for g in dict.fromkeys(r.group for r in self.rows) if g != ALL] if self.by else []

    def row(self, group: str = ALL, tokenizer: str | None = None) -> QualityRow:
        tokenizer = self.tokenizer if tokenizer is None else tokenizer
        for r in self.rows:
            if r.group == group and r.tokenizer == tokenizer:
                return r
        raise ArgumentError(f"the report has no row for group {group!r} and tokenizer {tokenizer!r} "
                            f"(groups: {', '.join([ALL, *self.groups])}; tokenizers: {', '.join(self.tokenizers)})")

    @property
    def bytes_per_token(self) -> float:
        return self.row().bytes_per_token

    @property
    def tokens_per_word(self) -> float:
        return self.row().tokens_per_word

    @property
    def unused_tokens(self) -> np.ndarray:
        return self.row().unused_tokens

    @property
    def renyi_efficiency(self) -> float:
        return self.row().renyi_efficiency

    @property
    def renyi_entropy(self) -> float:
        return self.row().renyi_entropy

    def to_dict(self) -> dict:
        return dict(by=self.by, alpha=self.alpha, rows=[r.to_dict() for r in self.rows])

    def to_pandas(self):
        """A pandas DataFrame, a row per (group, tokenizer); ``unused`` counts the unused ids."""
        try:
            pandas = importlib.import_module("pandas")
        except ImportError:
            raise MissingExtraError("to_pandas needs the pandas package: pip install pandas") from None
        return pandas.DataFrame([r.to_dict(unused_ids=False) for r in self.rows])

    def __str__(self) -> str:
        header = ("group", "tokenizer", "documents", "bytes", "words", "tokens", "bytes/token", "tokens/word",
                  "unused", f"Rényi({self.alpha:g})")
        cells = [header] + [(r.group, r.tokenizer, f"{r.documents:,}", f"{r.bytes:,}", f"{r.words:,}",
                             f"{r.tokens:,}", f"{r.bytes_per_token:.3f}", f"{r.tokens_per_word:.3f}",
                             f"{len(r.unused_tokens):,}/{r.vocabulary:,}", f"{r.renyi_efficiency:.4f}")
                            for r in self.rows]
        widths = [max(len(row[k]) for row in cells) for k in range(len(header))]
        return "\n".join("  ".join(c.ljust(w) if k < 2 else c.rjust(w) for k, (c, w) in enumerate(zip(row, widths)))
                         for row in cells)


# -- the figures ------------------------------------------------------------------------------------

def renyi_entropy(counts: np.ndarray, alpha: float = ALPHA) -> float:
    """H_alpha, in bits, of the distribution the counts make (zeros ignored); alpha 1: Shannon's."""
    c = np.asarray(counts, np.float64)
    c = c[c > 0]
    if not len(c):
        return math.nan
    p = c / c.sum()
    if alpha == 1:
        return float(-(p * np.log2(p)).sum())
    return float(np.log2(np.power(p, alpha).sum()) / (1 - alpha))


def renyi_efficiency(counts: np.ndarray, vocabulary: int, alpha: float = ALPHA) -> float:
    """``renyi_entropy(counts) / log2(vocabulary)``: 1 when the ids use a vocabulary of that size uniformly."""
    return renyi_entropy(counts, alpha) / math.log2(vocabulary) if vocabulary > 1 else math.nan


def vocabulary_ids(tokenizer) -> np.ndarray:
    """The ids of a tokenizer's tokens, learned and special, ascending (ids no token has left out)."""
    learned = tokenizer._vocab           # id -> token bytes, None where no learned token has the id
    present = np.zeros(tokenizer.vocab_size, bool)
    present[:len(learned)] = np.fromiter((b is not None for b in learned), bool, len(learned))
    present[list(tokenizer.special_tokens.values())] = True
    return np.flatnonzero(present)


# -- reading: (group, text, starts a document) ----------------------------------------------------------

def _pieces_of_files(paths: list, by: str | None, field: str, column: str, errors: str,
                     cut) -> Iterator[tuple[str, str, bool]]:
    """(group, text, starts a document) of every input, in order."""
    found = inp.sources(paths, field, column)              # every input checked before any is read
    if by not in (None, FILE):
        for source in found:
            if not isinstance(source, (inp.JsonlSource, inp.ParquetSource)):
                raise ArgumentError(f"by={by!r}: {source.name} is a text file, whose documents have no fields; "
                                    f"by names a field of JSON-lines records or a Parquet column, or \"file\"")
    for source in found:
        group = ALL if by is None else source.name if by == FILE else None
        for task in source.tasks(cut, BLOCK_SIZE):
            if group is None and isinstance(task, inp.JsonlTask):
                yield from ((g, t, True) for g, t in _jsonl_grouped(task, str(by)))
            elif group is None:
                yield from ((g, t, True) for g, t in _parquet_grouped(task, str(by), errors))
            else:
                for where, data, offset, starts in task.pieces(keep_null=False):
                    text = data if isinstance(data, str) else inp.decode_utf8(data, errors, where, offset)
                    yield group, text, starts


def _group_name(value) -> str:
    """The name of the group of a field's value: a string as it is, anything else as JSON (5,
    null, true). A string that reads as JSON ("5", "null", '"x"') is written as JSON too ('"5"'),
    so that no two values share a group: 5 and "5" are two groups, as are null and "null"."""
    if not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    try:
        json.loads(value)
    except ValueError:
        return value
    return json.dumps(value, ensure_ascii=False)


def _jsonl_grouped(task, by: str) -> Iterator[tuple[str, str]]:
    """(group, text) of each record of a block of JSON lines: its field ``by`` and its text
    (``task.field``), checked as inputs.jsonl_values checks records (a null text is skipped)."""
    for where, record in inp.jsonl_records(task, also=((by, "the field by= names"),)):
        text = record[task.field]
        if text is None:
            continue
        if not isinstance(text, str):
            raise InputError(f"{where}: field {task.field!r} holds {type(text).__name__}, not text")
        yield _group_name(record[by]), text


def _parquet_grouped(task, by: str, errors: str) -> Iterator[tuple[str, str]]:
    """(group, text) of each row of a row group: its column ``by`` and its text."""
    pq = require("pyarrow.parquet", "parquet", f"reading {task.path}")
    schema = pq.ParquetFile(task.path).schema_arrow
    path = inp._column_path(schema, by)
    if not path:
        raise InputError(f"{task.path}: no column {by!r} to group by (columns: {', '.join(schema.names)})")
    values = pq.ParquetFile(task.path).read_row_group(task.row_group, columns=[path[0]]).column(0)
    for part in path[1:]:
        values = values.flatten()[values.type.get_field_index(part)]
    groups = values.to_pylist()
    for row, text in inp.parquet_values(task):
        if isinstance(text, bytes):             # a binary column's value: UTF-8
            text = inp.decode_utf8(text, errors, f"{task.path}, row group {task.row_group}, row {row}")
        yield _group_name(groups[row]), text


def _pieces_of_documents(docs: Iterable, by: str | None, field: str, errors: str) -> Iterator[tuple[str, str, bool]]:
    """(group, text, True) of each document of an iterable: str, UTF-8 bytes, a record (a dict
    whose ``field`` is the text, ``by`` the group) or a batch (a list) of them."""
    if by == FILE:
        raise ArgumentError("by='file' groups files: give file names (texts_or_files), or files=True")
    for k, item in enumerate(docs):
        for doc in (item if isinstance(item, (list, tuple)) else (item,)):
            group = ALL
            if isinstance(doc, Mapping):
                for key in (field, *([by] if by else [])):
                    if key not in doc:
                        raise InputError(f"item {k}: a record without the field {key!r} (fields: "
                                         f"{', '.join(map(str, doc)) or 'none'})")
                group = ALL if by is None else _group_name(doc[by])
                doc = doc[field]
            elif by is not None:
                raise ArgumentError(f"by={by!r} groups records (dicts holding the field {by!r}); item {k} is "
                                    f"{type(doc).__name__}")
            if doc is None:
                continue
            if isinstance(doc, bytes):
                doc = inp.decode_utf8(doc, errors, f"item {k}")
            if not isinstance(doc, str):
                raise InputError(f"item {k}: expected a document (str or bytes), a record (a dict) or a batch (a "
                                 f"list), got {type(doc).__name__}")
            yield group, doc, True


def _are_files(texts_or_files, files: bool | None) -> bool:
    if files is not None:
        return arguments.flag(files, "files")
    return inp.names_files(texts_or_files)


# -- counting ----------------------------------------------------------------------------------------

@dataclass
class _Batch:
    texts: list[str]
    groups: np.ndarray             # the group of each text, ascending (texts are sorted by group)
    after_space: np.ndarray        # does text i start after a space (or a document's start)?
    documents: dict[int, int]      # group -> documents starting in the batch
    sizes: np.ndarray = dataclass_field(init=False)       # the UTF-8 bytes of each text
    words: np.ndarray = dataclass_field(init=False)       # the str.split() words of each text

    def __post_init__(self) -> None:
        """Measured while the batch before is encoded, on another core (no GIL held)."""
        self.sizes, self.words = measure_texts(self.texts, self.after_space.view(np.uint8))


class _Counts:
    """The sums so far: per group its documents, bytes and words; per (tokenizer, group) the count of each id."""

    def __init__(self, tokenizers: list, workers: int | None):
        self.tokenizers, self.workers = tokenizers, workers
        self.documents: dict[int, int] = {}
        self.bytes: dict[int, int] = {}
        self.words: dict[int, int] = {}
        self.ids: dict[tuple[int, int], np.ndarray] = {}

    def add(self, batch: _Batch) -> None:
        sizes, words = batch.sizes, batch.words
        groups, first = np.unique(batch.groups, return_index=True)
        bounds = list(zip(groups.tolist(), first.tolist(), [*first[1:].tolist(), len(batch.texts)]))
        for g, lo, hi in bounds:
            self.documents[g] = self.documents.get(g, 0) + batch.documents.get(g, 0)
            self.bytes[g] = self.bytes.get(g, 0) + int(sizes[lo:hi].sum())
            self.words[g] = self.words.get(g, 0) + int(words[lo:hi].sum())
        for t, tok in enumerate(self.tokenizers):
            ids, ends = tok.encode_batch_to_numpy(batch.texts, workers=self.workers, disallowed_special=())
            for g, lo, hi in bounds:
                counts = self.ids.setdefault((t, g), np.zeros(tok.vocab_size, np.int64))
                count_ids(ids[ends[lo]:ends[hi]], counts)


def _batches(pieces: Iterator[tuple[str, str, bool]], group_ids: dict[str, int]) -> Iterator[_Batch]:
    """Pieces in batches of about ``BATCH_CHARS`` characters, sorted by group within each."""
    chars = BATCH_CHARS
    texts: list[str] = []
    groups: list[int] = []
    after: list[bool] = []
    documents: dict[int, int] = {}
    size, ended_in_space = 0, True
    for group, text, starts in pieces:
        g = group_ids.setdefault(group, len(group_ids))
        texts.append(text)
        groups.append(g)
        after.append(starts or ended_in_space)
        ended_in_space = text[-1].isspace() if text else starts or ended_in_space
        documents[g] = documents.get(g, 0) + starts
        size += len(text)
        if size >= chars:
            yield _batch(texts, groups, after, documents)
            texts, groups, after, documents, size = [], [], [], {}, 0
    if texts:
        yield _batch(texts, groups, after, documents)


def _batch(texts: list[str], groups: list[int], after: list[bool], documents: dict[int, int]) -> _Batch:
    order = np.argsort(np.asarray(groups, np.int64), kind="stable")
    if len(documents) > 1:
        texts = [texts[i] for i in order.tolist()]
    return _Batch(texts, np.asarray(groups, np.int64)[order], np.asarray(after, bool)[order], documents)


def _common_cut(tokenizers: list):
    """Where text may be cut into blocks without changing any tokenizer's ids: a place every
    tokenizer's splitter allows (None: no cut, if one allows none)."""
    cuts = []
    for tok in tokenizers:
        splitter = replace(tok.splitter, special_tokens=tuple(tok.special_tokens))
        cut = None if tok.runs_cross_line_ends else splitter.cut
        if cut is None:
            return None
        cuts.append(cut)

    def cut_all(data: bytes, start: int) -> int | None:
        at: int | None = start
        while True:                      # each cut is the first at or after where it looks: go on until all agree
            moved = False
            for cut in cuts:
                assert at is not None
                found = cut(data, at)
                if found is None:
                    return None
                moved |= found != at
                at = found
            if not moved:
                return at
    return cut_all


# -- the driver ----------------------------------------------------------------------------------------

# How a baseline named by the user is opened: ``bpe_fast.load``, set by registry.py, which sits
# above this module (it imports the tokenizer, which delegates ``Tokenizer.evaluate`` here).
open_baseline: Callable[[str | os.PathLike, str | os.PathLike | None], Any] | None = None


def _is_tokenizer(value) -> bool:
    """A Tokenizer (or a variant's), told by what evaluate uses of it: this module is below the tokenizer's."""
    return all(hasattr(value, name) for name in ("encode_batch_to_numpy", "special_tokens", "vocab_size", "_vocab"))


def _baselines(baselines, vocabs) -> list[tuple[str, Any]]:
    """(name, tokenizer) of each baseline: a named encoding or tokenizer file (loaded), a
    Tokenizer, or {name: either}."""
    if baselines is None:
        return []
    if isinstance(baselines, (str, os.PathLike)) or _is_tokenizer(baselines):
        baselines = [baselines]
    items = list(baselines.items()) if isinstance(baselines, Mapping) else \
        [(None, b) for b in _listed(baselines, "baselines")]
    found = []
    for k, (name, spec) in enumerate(items):
        if _is_tokenizer(spec):
            found.append((str(name) if name is not None else f"baseline {k + 1}", spec))
            continue
        if not isinstance(spec, (str, os.PathLike)):
            raise ArgumentTypeError(f"baselines[{k}] must be a named encoding, a tokenizer file or a Tokenizer, "
                                    f"got {type(spec).__name__}")
        if open_baseline is None:
            raise ArgumentError(f"baselines[{k}] = {os.fspath(spec)!r}: opening a tokenizer by name needs "
                                f"bpe_fast.registry (import bpe_fast), or give a Tokenizer")
        try:
            tok = open_baseline(spec, vocabs)
        except BpeFastError as exc:
            raise type(exc)(f"baselines[{k}] = {os.fspath(spec)!r}: {exc}") from None
        found.append((str(name) if name is not None else _name_of(spec), tok))
    return found


def _listed(value, name: str) -> list:
    try:
        return list(value)
    except TypeError:
        raise ArgumentTypeError(f"{name} must be a list, got {type(value).__name__}") from None


def _name_of(spec) -> str:
    """A tokenizer's name in the table: a named encoding's name, a file's name without its suffix."""
    spec = os.fspath(spec)
    return spec if not os.path.exists(spec) else os.path.splitext(os.path.basename(os.path.normpath(spec)))[0]


def evaluate(tokenizer, texts_or_files, *, by: str | None = None, baselines=None, name: str = "tokenizer",
             files: bool | None = None, field: str = "text", column: str = "text", workers: int | None = None,
             errors: str = "strict", vocabs: str | os.PathLike | None = None, alpha: float = ALPHA) -> QualityReport:
    """The quality report (module docstring) of ``tokenizer`` on ``texts_or_files``, in one pass.

    ``texts_or_files``: file names (a str or PathLike, or a list of them: text, compressed, JSON
    lines (``field``), Parquet (``column``), folders, "-"), or documents (an iterable of str,
    bytes, records (dicts whose ``field`` is the text) or lists of them). A list of str is read as
    file names when each is one word that names a file or looks like a file name (a "/" or a
    suffix); ``files=True``/``False`` says it outright. ``by``: None (all the text), "file" (a
    group per file) or a field (JSON lines, records) or column (Parquet) whose values name the
    groups. ``baselines``: named encodings or tokenizer files (loaded with ``bpe_fast.load``, from
    ``vocabs``), Tokenizers, or {name: either}, measured on the same text in the same pass.
    ``workers``: encoding threads (default one per CPU). ``name``: the tokenizer's in the table.
    """
    if not _is_tokenizer(tokenizer):
        raise ArgumentTypeError(f"tokenizer must be a Tokenizer, got {type(tokenizer).__name__}")
    if by is not None and (not isinstance(by, str) or not by):
        raise ArgumentError(f"by must be None, \"file\" or the name of a field, got {by!r}")
    for option, value in (("field", field), ("column", column), ("name", name)):
        if not isinstance(value, str):
            raise ArgumentTypeError(f"{option} must be a str, got {value!r}")
    if errors not in ("strict", "replace"):
        raise ArgumentError(f"errors must be 'strict' or 'replace', not {errors!r}")
    alpha = float(alpha)
    if not alpha > 0:
        raise ArgumentError(f"alpha must be > 0, got {alpha!r}")
    workers = None if workers is None else arguments.workers(workers)
    named = [(name, tokenizer), *_baselines(baselines, vocabs)]
    if len({n for n, _ in named}) < len(named):
        raise ArgumentError(f"two tokenizers share a name ({', '.join(n for n, _ in named)}): name the baselines "
                            f"with a dict, {{name: tokenizer}}")
    toks = [tok for _, tok in named]
    if _are_files(texts_or_files, files):
        paths = [os.fspath(p) for p in arguments.paths(texts_or_files, "texts_or_files")]
        if not paths:
            raise ArgumentError("texts_or_files: no file names given")
        pieces = _pieces_of_files(paths, by, field, column, errors, _common_cut(toks))
    else:
        if isinstance(texts_or_files, (str, bytes)) or not isinstance(texts_or_files, Iterable):
            raise ArgumentTypeError(f"texts_or_files must be file names or an iterable of documents, "
                                    f"got {type(texts_or_files).__name__}")
        pieces = _pieces_of_documents(texts_or_files, by, field, errors)
    group_ids: dict[str, int] = {}
    counts = _Counts(toks, workers)
    with ThreadPoolExecutor(1) as pool:          # a batch is counted while the next is read
        pending: Future | None = None
        for batch in _batches(pieces, group_ids):
            if pending is not None:
                pending.result()
            pending = pool.submit(counts.add, batch)
        if pending is not None:
            pending.result()
    return _report(named, counts, group_ids, by, alpha)


def _report(named: list, counts: _Counts, group_ids: dict[str, int], by: str | None, alpha: float) -> QualityReport:
    groups = [(ALL, list(group_ids.values()))] + ([(g, [i]) for g, i in group_ids.items()] if by else [])
    vocabularies = [vocabulary_ids(tok) for _, tok in named]
    present = [np.isin(np.arange(tok.vocab_size), vocab) for (_, tok), vocab in zip(named, vocabularies)]
    rows = []
    for group, members in groups:
        documents, nbytes, words = (sum(part.get(i, 0) for i in members)
                                    for part in (counts.documents, counts.bytes, counts.words))
        for t, ((name, tok), vocab) in enumerate(zip(named, vocabularies)):
            parts = [counts.ids[(t, i)] for i in members if (t, i) in counts.ids]
            ids = parts[0] if len(parts) == 1 else sum(parts, np.zeros(tok.vocab_size, np.int64))
            unused = ids == 0
            seen = ids[~unused]
            unused &= present[t]
            rows.append(QualityRow(name, group, documents, nbytes, words, int(seen.sum()), len(vocab),
                                   np.flatnonzero(unused), renyi_entropy(seen, alpha),
                                   renyi_efficiency(seen, len(vocab), alpha)))
    return QualityReport(rows, by, alpha)
