"""BoundlessBPE: supermerges of whole adjacent pretokens (``train(..., superword="boundless",
superword_at=T)``; CLI ``--superword boundless --superword-at T``).

Schmidt, Reddy, Tanner, Pinter, "Boundless Byte Pair Encoding: Breaking the Pre-tokenization
Barrier" (arXiv 2504.00178), in the two-phase form of Schmidt, Tanner, Pinter, "Faster Superword
Tokenization" (arXiv 2604.05192), with T given:

* Phase 1 is plain BPE with the pattern up to T tokens: exactly ``train(..., T)``.
* Phase 2 learns V - T *supermerges*. In each document (cut at special tokens, and at line ends
  with ``lines``), a *unit* is a pretoken that the phase-1 tokenizer encodes as one token and
  that is *eligible*: ``regex.search(eligible, pretoken)`` (default ``patterns.BOUNDLESS_ELIGIBLE``,
  paper 1's IMPROVED_MERGE_PATTERN; ``patterns.BOUNDLESS_ELIGIBLE_V2``, ``\\p{L}``, is paper 2's).
  The *runs* are the maximal sequences of at least two consecutive units. A supermerge joins two
  adjacent units of a run (a unit is a single-token pretoken or a superword made earlier, so
  supermerges chain: " one" + " of the"); pairs are counted in every distinct run, weighted by
  how often it occurs, as the plain kernel counts pairs in words (overlapping pairs count: "
  the the the" holds (" the", " the") twice); the highest count wins, ties to the smallest
  (left id, right id); the pair is replaced left to right. Supermerge k makes id T + k.
* Encoding (the tokenizer's second level: tokenizer.py, _encode.pyx): each pretoken by the
  phase-1 merges, as always; then in each maximal run of pretokens that are one unit each, the
  supermerges BPE-style (lowest rank first, leftmost on ties). A unit there is a token that some
  supermerge joins: the same runs, since a token no supermerge joins can take part in none.

"Encoded as one token" is bpe_fast's encoder's rule (tiktoken's): a pretoken whose bytes are a
token is that token. Kensho's code asks that BPE of its bytes give it back ("reachable"); the
two differ only for a token that BPE of its own bytes does not make.

The fast path reuses what exists. The units are at most T tokens (``units``). A second pass over
the text counts the distinct runs (``RunCounting`` below: the named patterns' native scanner
looks each chunk up in a native table of the units, in the worker processes, as counting
does), each run kept as its units' ids. Phase 2 is then continued training (the kernel's
``start=``) on a table whose "words" are the distinct runs, each unit one slot: the kernel
merges adjacent tokens inside words, which is exactly a supermerge. (With ``max_token_length``
each unit takes its bytes' slots instead, so that lengths are in bytes.) The slow oracle is
``boundless_reference.train_boundless_reference``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import regex

from .. import _kernel
from ...arguments import INT64_MAX
from ...counting.workers import (ChunkCounter, CountConfig, Counting, NormalizingChunkCounter, default_workers,
                                 to_utf8)
from ... import errors
from ...errors import ArgumentError, BpeFastError, VocabSizeWarning
from ...formats._common import expect_optional
from ...pretokenize.patterns import BOUNDLESS_ELIGIBLE, match_batches
from ...pretokenize.splitter import REGEX, Splitter
from ...progress import Bar, ProgressOption, summary
from ...tokenizer import Tokenizer
from ...counting.wordtable import WordTable
from .. import pipeline
from ..pipeline import CountText
from ._boundless import RunScanner
from ._variant import Variant
from .superbpe import check_superword_at

KEYWORDS_HELP = """
    ``superword="boundless"`` makes ``superword_at=T`` train BoundlessBPE instead (Schmidt et
    al., arXiv 2504.00178, in the two-phase form of arXiv 2604.05192; variants/boundless.py):
    plain BPE up to T (``train(..., T)``), then ``vocab_size - T`` supermerges, each joining two
    adjacent whole pretokens (or superwords) of a run of pretokens that are one token each and
    eligible (``boundless_eligible``, a regex searched in each pretoken; default paper 1's
    ``patterns.BOUNDLESS_ELIGIBLE``, or ``patterns.BOUNDLESS_ELIGIBLE_V2``, ``\\p{L}``, paper
    2's). The text is read twice. The tokenizer keeps the pattern; only bpe_fast's JSON holds it.
    ``superword_at="auto"`` (boundless only) finds T as paper 2 does: phase 1 to ``vocab_size``,
    supermerges from its runs, and the two interleaved by count (a supermerge when its count is
    above the next merge's), to ``vocab_size`` tokens in all.
"""

BOUNDLESS_VERSION = 4       # bpe_fast's JSON with "supermerges" (normalized or not): older readers must refuse it


def eligibility(pattern: str | None) -> str:
    """The eligibility regex (None: the default), checked: it must compile."""
    if pattern is None:
        return BOUNDLESS_ELIGIBLE
    if not isinstance(pattern, str):
        raise ArgumentError(f"boundless_eligible must be a regex (str), got {pattern!r}")
    try:
        regex.compile(pattern)
    except regex.error as exc:
        raise ArgumentError(f"boundless_eligible={pattern!r} does not compile: {exc}") from None
    return pattern


class RunCounter(ChunkCounter):
    """Counts runs of units (``RunCounting``) instead of chunks, into the same table, on the
    same routes: a named pattern's scanner straight into the native ``RunScanner``; a custom
    regex's matches in order here; with no pattern a document is one chunk, so it holds no run."""

    def __init__(self, config: CountConfig):
        super().__init__(config)
        units = config.counting.units
        self.runs = RunScanner(self.table, [u for u, _ in units], np.array([i for _, i in units], dtype=np.int32))
        self.scan_text = self.runs.add_text
        self.scan_documents = self.runs.add_documents

    def _add_document(self, document: str, where: str) -> None:
        engine, scanner = self.engine, self.splitter.scanner
        if scanner is not None:
            self.scan_text(scanner, to_utf8(document, self.config.errors, where))
        elif engine == REGEX:
            table, errors, run = self.runs, self.config.errors, []
            for batch in match_batches(self.splitter.regex, document):
                for chunk in batch:
                    unit = table.is_unit(to_utf8(chunk, errors, where))
                    if unit >= 0:
                        run.append(unit)
                        continue
                    if len(run) >= 2:
                        table.add_run(np.array(run, dtype=np.int32))
                    run = []
            if len(run) >= 2:
                table.add_run(np.array(run, dtype=np.int32))


class NormalizingRunCounter(NormalizingChunkCounter, RunCounter):
    """Runs of the normalized text."""


@dataclass(frozen=True)
class RunCounting(Counting):
    """Phase 2's counting (counting.workers.Counting): the runs of ``units`` ((chunk bytes, token
    id) each, from ``units``), each counted as its units' ids."""
    units: tuple[tuple[bytes, int], ...]
    what = "runs"

    def counter(self, config: CountConfig) -> ChunkCounter:
        normal = config.splitter.normalize is not None
        return NormalizingRunCounter(config) if normal else RunCounter(config)

    def cut(self, splitter: Splitter):
        """A cut must not split a run: the splitter's cuts follow a chunk that holds a "\\n" or
        "\\r" (or are line ends with ``lines``, where runs end anyway), so they are safe unless
        such a chunk is a unit; then the text is not cut."""
        if not splitter.lines and any(b"\n" in u or b"\r" in u for u, _ in self.units):
            return None
        return splitter.cut


def units(phase_one: Tokenizer, eligible: str) -> tuple[tuple[bytes, int], ...]:
    """(bytes, id) of every phase-1 token that is eligible: the pretokens with these bytes are
    the units (a pretoken that is a token is that token; of equal bytes, the largest id, as the
    encoder's table of whole tokens has it). Tokens that are no valid UTF-8 are no pretoken."""
    compiled = regex.compile(eligible)
    found: dict[bytes, int] = {}
    for i, token in enumerate(phase_one._vocab):
        if token is None:
            continue
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if compiled.search(text):
            found[token] = i
    return tuple(found.items())


def run_layout(runs: WordTable, phase_one: Tokenizer, byte_lengths: bool) -> tuple[np.ndarray, np.ndarray,
                                                                                    np.ndarray, np.ndarray]:
    """The runs as the kernel continues from them: (symbols, offsets, start, token_lengths).
    Each run's "chunk" in the table is its units' ids (int32); each unit takes one slot holding
    its id (token_lengths 1), or with ``byte_lengths`` its bytes' slots (its id at the first, its
    tail mark at the last, -1 between: the kernel's layout). The symbols are never read when
    the kernel starts from a layout: zeros."""
    ids = runs.symbols.view(np.int32)
    offsets = runs.offsets // 4
    n_ids = phase_one.vocab_size
    if not byte_lengths:
        return (np.zeros(len(ids), np.uint8), offsets, np.ascontiguousarray(ids),
                np.ones(n_ids, np.int32))
    lengths = np.zeros(n_ids, np.int32)
    for i, token in enumerate(phase_one._vocab):
        lengths[i] = len(token) if token is not None else 0
    size = lengths[ids].astype(np.int64)
    ends = np.cumsum(size)
    first = ends - size                          # each unit's first slot
    slots = np.full(int(ends[-1]) if len(ends) else 0, -1, np.int32)
    slots[first] = ids
    long = size > 1
    slots[ends[long] - 1] = -ids[long] - 2
    unit_ends = np.concatenate([[0], ends])
    return np.zeros(len(slots), np.uint8), unit_ends[offsets], slots, lengths


def learn(phase_one: Tokenizer, runs: WordTable, n_supermerges: int, eligible: str, *, min_frequency: int = 0,
          max_token_length: int | None = None, threads: int | None = None, progress: ProgressOption = "none",
          seconds: dict | None = None, warn: bool = True) -> tuple[Tokenizer, np.ndarray]:
    """Phase 2: up to ``n_supermerges`` supermerges learned from the runs (``runs``, counted with
    ``units(phase_one, eligible)``): the phase-1 tokenizer with them, and each supermerge's count
    when it was chosen. Ids follow every phase-1 id (special tokens included)."""
    t0 = time.perf_counter()
    first_id = phase_one.vocab_size
    merges, counts = np.empty((0, 2), np.int32), np.empty(0, np.int64)
    if len(runs) and n_supermerges > 0:
        symbols, offsets, start, lengths = run_layout(runs, phase_one, max_token_length is not None)
        with Bar(progress, "runs set-up", 3 * len(symbols), unit="B", unit_scale=True) as bar:
            kernel = _kernel.Trainer(symbols, offsets, runs.counts, n_supermerges,
                                     min(max(1, min_frequency), INT64_MAX), None,
                                     max_token_length=max_token_length or 0, start=start, token_lengths=lengths,
                                     first_id=first_id, setup_progress=bar.callback(reach=True),
                                     threads=min(threads or default_workers(), default_workers()))
            del symbols, start
            kernel.count_pairs()
        with Bar(progress, "supermerging", n_supermerges, unit="merge", decaying=True) as bar:
            merges = kernel.learn(bar.callback(reach=True))
        counts = kernel.counts
    if seconds is not None:
        seconds["supermerging"] = time.perf_counter() - t0
    summary("supermerging", time.perf_counter() - t0, progress, supermerges=len(merges))
    if len(merges) < n_supermerges and warn:
        why = (f"no pair of units occurs {max(1, min_frequency)} or more times" if min_frequency > 1
               else "no two units are adjacent any more" if len(runs) else "the text has no run of two units")
        errors.warn(f"stopped after {len(merges)} of {n_supermerges} supermerges ({why}): vocab size "
                    f"{first_id + len(merges)} instead of {first_id + n_supermerges}", VocabSizeWarning)
    return Tokenizer(phase_one.merges, phase_one.pattern, phase_one.special_tokens, merge_ids=phase_one.merge_ids,
                     byte_ids=phase_one.byte_ids, normalize=phase_one.normalize, supermerges=merges,
                     supermerge_ids=np.arange(first_id, first_id + len(merges)), boundless_eligible=eligible), counts


def interleaved(full: Tokenizer, merge_counts: np.ndarray, supermerge_counts: np.ndarray,
                vocab_size: int) -> Tokenizer:
    """``superword_at="auto"``: paper 2's split of ``vocab_size`` between merges and supermerges.
    ``full`` has phase 1 trained to ``vocab_size`` or more and its supermerges learned from the
    runs of that whole phase 1, each with its count when chosen. Walking both lists, the next
    supermerge is taken when its count is above the next merge's, else the merge (ties go to the
    merge), until the vocabulary is full; the result keeps that many of each, the supermerges
    renumbered after the merges kept (and the special tokens). Counts never rise along either
    list, and a supermerge counts no more than the merge that made a part of it, so with ties to
    the merge every part is made before the supermerge that needs it: learning the supermerges
    from the whole phase 1's runs gives those a shorter phase 1 would give (paper 2, §3 of the note)."""
    phase = full.without_supermerges()
    n_specials = len(phase.special_tokens)
    total = vocab_size - 256 - n_specials
    k = j = 0
    while k + j < total:
        if j < len(supermerge_counts) and (k >= len(merge_counts) or supermerge_counts[j] > merge_counts[k]):
            j += 1
        elif k < len(merge_counts):
            k += 1
        else:
            break
    kept = phase.truncated(256 + k + n_specials)
    old_first, first = phase.vocab_size, kept.vocab_size
    pairs = full.supermerges[:j].astype(np.int64)
    missing = (pairs < old_first) & (pairs >= 256 + k)
    if missing.any():                 # only a token BPE does not make from its own bytes could do this
        at = int(np.flatnonzero(missing.any(axis=1))[0])
        raise BpeFastError(f"superword_at=\"auto\": supermerge {at} joins token {int(pairs[missing][0])}, which "
                            f"the {k} merges kept do not make yet (its count outran the merge that made it); "
                            f"give superword_at=T instead")
    pairs = np.where(pairs >= old_first, pairs - old_first + first, pairs)
    return Tokenizer(kept.merges, kept.pattern, kept.special_tokens, merge_ids=kept.merge_ids, byte_ids=kept.byte_ids,
                     normalize=kept.normalize, supermerges=pairs, supermerge_ids=np.arange(first, first + j),
                     boundless_eligible=full.boundless_eligible)


class BoundlessBPE(Variant):
    name = "boundless"
    title = "BoundlessBPE"
    summary = ("BoundlessBPE (Schmidt et al. 2025, two-phase): stage two learns supermerges of whole adjacent "
               "pretokens that are one token each (variants/boundless.py)")
    keywords_help = KEYWORDS_HELP
    held_by = ("bpe_fast",)
    json_version = BOUNDLESS_VERSION
    json_keys = ("supermerges", "supermerge_ids", "boundless_eligible")

    def selects(self, options: Any) -> bool:
        return options.superword == self.name and options.superword_at is not None

    def check(self, options: Any) -> None:
        """BoundlessBPE's limits, before any text is read."""
        if options.superword != self.name:
            if options.boundless_eligible is not None:
                raise ArgumentError('boundless_eligible= goes with superword="boundless"')
            return
        if options.superword_at is None:
            raise ArgumentError('superword="boundless" needs superword_at=T: plain BPE learns up to vocab size T, '
                                'supermerges the rest')
        if options.base is not None:
            raise ArgumentError('superword="boundless" trains from bytes: it does not continue a base= tokenizer')
        if options.tie_break != "bytes":
            raise ArgumentError('superword="boundless" breaks ties by ids (tie_break="bytes"): Hugging Face has no '
                                'supermerges to follow')
        if options.special_ids is not None:
            raise ArgumentError('superword="boundless" takes special tokens as a list (their ids follow phase 1)')
        object.__setattr__(options, "boundless_eligible", eligibility(options.boundless_eligible))
        if not (isinstance(options.superword_at, str) and options.superword_at == "auto"):
            # T == V is plain training
            check_superword_at(options, 256 + len(options.special_tokens), min(options.sizes) + 1, "at most")

    def train(self, count_text: CountText, options: Any, input_unit: str, ahead: bool) -> list[Tokenizer]:
        """Phase 1 is the plain pipeline to ``superword_at``; then the text is read again to count
        the runs of its units, and the kernel learns the supermerges from them, up to the largest
        size; each size is that tokenizer cut (supermerges are a prefix too).
        ``superword_at="auto"``: phase 1 to the largest size, as many supermerges as tokens, then
        each size takes its prefix of the two interleaved by count (``interleaved``)."""
        auto, largest = options.superword_at == "auto", max(options.sizes)
        at = largest if auto else int(options.superword_at)
        phase = replace(options, vocab_size=at, superword_at=None, superword="superbpe", boundless_eligible=None)
        [phase_one] = pipeline.train(count_text, phase, input_unit)
        report = phase_one.training_report
        eligible = options.boundless_eligible or eligibility(None)
        tok, counts = phase_one, np.empty(0, np.int64)
        if largest > at or auto:
            t0 = time.perf_counter()
            splitter = Splitter.of(phase_one.pattern, options.cut_out, normalize=phase_one.normalize)
            runs = count_text(splitter, RunCounting(units(phase_one, eligible)))
            report.seconds["runs"] = time.perf_counter() - t0
            report.runs, report.unique_runs = runs.total_chunks, len(runs)
            wanted = largest - 256 - len(options.special_tokens) if auto else largest - at
            tok, counts = learn(phase_one, runs, wanted, eligible, min_frequency=options.min_frequency,
                                max_token_length=options.max_token_length, threads=options.threads,
                                progress=options.progress, seconds=report.seconds, warn=not auto)
            report.supermerges = len(tok.supermerges)
            report.vocab_size = tok.vocab_size
            tok.training_report = report
        if auto:
            toks = [interleaved(tok, report.merge_counts, counts, v) for v in options.sizes]
            for t in toks:
                t.training_report = replace(report, supermerges=len(t.supermerges), merges=len(t.merges),
                                            vocab_size=t.vocab_size)
            return toks
        return [tok if v == largest else tok.truncated(v) for v in options.sizes]

    def owns(self, tok: Any) -> bool:
        return bool(len(tok.supermerges))

    def refusal(self, fmt_title: str) -> str:
        """A format with no place for supermerges: they join whole words across pre-tokenization,
        after the merges, in runs of words that are one token each; a list of merges applied
        inside each chunk cannot say that, so the file would encode other ids."""
        return (f"{fmt_title} cannot hold a BoundlessBPE tokenizer: its supermerges join whole "
                f"pre-tokenized words, in runs of words that are one token each, a level above "
                f"the merges that no merges list can express; save it as bpe_fast JSON (tok.json)")

    def json_fields(self, tok: Any) -> dict:
        """Version 4: the merges as ever, then its supermerges (``"supermerges"``, one per line,
        ``"supermerge_ids"``, and the eligibility regex its runs were made with,
        ``"boundless_eligible"``, a record), so that an older reader refuses the file rather than
        drop them and encode other ids."""
        return dict(version=BOUNDLESS_VERSION, boundless_eligible=tok.boundless_eligible,
                    supermerge_ids=tok.supermerge_ids.tolist(), supermerges=tok.supermerges.tolist())

    def from_json(self, data: dict, where: str) -> dict:
        return dict(supermerges=expect_optional(data.get("supermerges"), list, where, "supermerges"),
                    supermerge_ids=expect_optional(data.get("supermerge_ids"), list, where, "supermerge_ids"),
                    boundless_eligible=expect_optional(data.get("boundless_eligible"), str, where,
                                                       "boundless_eligible"))

    def tokenizer(self, vocab: Any) -> Tokenizer:
        return Tokenizer(vocab.merges, vocab.pattern, vocab.special_tokens, merge_ids=vocab.merge_ids,
                         byte_ids=vocab.byte_ids, normalize=vocab.normalize, **vocab.extra)


VARIANT = BoundlessBPE()
