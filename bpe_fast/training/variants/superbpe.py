"""SuperBPE (Liu et al. 2025): superword tokens (``train(..., superword_at=T)``; CLI
``--superword-at T``). Stage one is plain BPE with the pattern up to vocab size T; stage two
continues it (continued training, continued.py) to ``vocab_size`` with ``superword_pattern``
(default "superword", patterns.SUPERWORD), whose chunks span words. Its tokenizers are plain
ones that split with the superword pattern: every format holds what they are.

Stage two's table does not depend on stage one (only its layout in the kernel does), so where
a core is spare it is counted on a thread (``CountAhead``) while stage one learns."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ...counting.wordtable import WordTable
from ...errors import ArgumentError, terminating_raises
from ...progress import Deferred, ProgressOption
from ...tokenizer import Tokenizer
from .. import pipeline
from ..continued import layout_memory
from ..pipeline import CountText, TrainReport
from ._variant import Variant

KEYWORDS_HELP = """
    ``superword_at=T`` trains superword tokens, as SuperBPE does: first with ``pattern`` up to
    vocab size T, then on, to ``vocab_size``, with ``superword_pattern`` (default "superword",
    SuperBPE's stage-two rule, patterns.SUPERWORD), whose chunks span words: continued training
    with another pattern. The tokenizer splits text with the superword pattern.
"""


def stages(options: Any) -> tuple[Any, Callable[[Tokenizer], Any]]:
    """SuperBPE's two stages: up to ``superword_at`` with the pattern, then on to ``vocab_size``
    with the superword pattern, continuing from stage one's tokenizer."""
    one = replace(options, vocab_size=int(options.superword_at), superword_at=None)
    return one, lambda stage_one: replace(options, pattern=options.superword_pattern, base=stage_one,
                                          superword_at=None)


def check_superword_at(options: Any, floor: int, top: int, below: str) -> None:
    """superword_at=T: a vocabulary size in floor <= T < top (stage one learns up to it)."""
    at = options.superword_at
    if not (isinstance(at, (int, np.integer)) and not isinstance(at, bool)) or not floor <= at < top:
        raise ArgumentError(f"superword_at={at!r} must be a vocabulary size of at least {floor} "
                            f"and {below} vocab_size: stage one learns up to it, stage two the rest")


class SuperBPE(Variant):
    name = "superbpe"
    title = "SuperBPE"
    summary = "SuperBPE (Liu et al. 2025): stage two continues BPE with superword_pattern, whose chunks span words"
    keywords_help = KEYWORDS_HELP
    held_by = ()                    # (its tokenizers are plain: owns() none)

    def selects(self, options: Any) -> bool:
        return options.superword_at is not None and options.superword == self.name

    def check(self, options: Any) -> None:
        if not self.selects(options):
            return
        if isinstance(options.superword_at, str) and options.superword_at == "auto":
            raise ArgumentError('superword_at="auto" goes with superword="boundless": SuperBPE\'s T is set by hand')
        floor = 256 if options.base is None else options.base.vocab_size + 1
        check_superword_at(options, floor, min(options.sizes), "below")

    def train(self, count_text: CountText, options: Any, input_unit: str, ahead: bool) -> list[Tokenizer]:
        """Stage one to ``superword_at``, then stage two continues from it with the superword
        pattern. With ``ahead``, stage two's table is counted on a thread (its worker processes)
        while stage one learns: they take the cores that stage one's merging, on one thread,
        leaves idle."""
        first, second = stages(options)
        if not ahead:
            [stage_one] = pipeline.train(count_text, first, input_unit)
            return pipeline.train(count_text, second(stage_one), input_unit)
        report = TrainReport(input_unit=input_unit)
        held, first = pipeline.count(count_text, first, report)
        # stage two's count as second() will ask for it: its options differ from these in the
        # pattern and the base, stage one, whose special tokens and normalization are these
        wanted = replace(options, pattern=options.superword_pattern, superword_at=None).splitter()
        counting = CountAhead(count_text, (wanted,), options.progress, touch_layout=True)
        with terminating_raises():          # SIGTERM: the count ahead stops and cleans up first
            try:
                counting.start()
                [stage_one] = pipeline.learn_sizes(held, first, report)
                table, seconds = counting.result()
                layout, counting.layout = counting.layout, None
            except BaseException:
                counting.stop()
                raise
        two = second(stage_one)
        if two.splitter() != wanted:     # (never, as the options are made; were it so: counted again)
            del table
            return pipeline.train(count_text, two, input_unit)
        report = TrainReport(input_unit=input_unit)
        held, two = pipeline.held(table, two, report, seconds)
        two = replace(two, layout_memory=layout)
        del table, layout                   # (held alone: see pipeline.learn_bpe)
        return pipeline.learn_sizes(held, two, report)


class CountAhead:
    """A count on a thread, while the caller's thread goes on (SuperBPE's stage two counted
    during stage one's learning). Its progress is Deferred: shown when ``result`` takes it.
    ``stop`` ends it at its next report (a block counted, or a wait for the workers) and waits
    for it to end: its workers stopped, its spill files removed. Where no thread can be
    started, ``result`` counts then, on the caller's thread."""

    def __init__(self, count_text: CountText, args: tuple, progress: ProgressOption, touch_layout: bool = False):
        self.count_text, self.args, self.shown = count_text, args, progress
        # Counted before the caller asks for the table, the thread touches the pages of the
        # table's layout (continued.layout_memory) until it does: ``layout``, or None.
        self.touch_layout, self.asked = touch_layout, threading.Event()
        self.layout: np.ndarray | None = None
        self.progress = Deferred(progress)
        self.outcome: tuple[WordTable, float] | BaseException | None = None
        self.thread: threading.Thread | None = None
        # waited on instead of Thread.join/is_alive: a join cut by Ctrl-C (CPython 3.11, bpo-45274's
        # clean-up) can mark the thread stopped while it runs; then is_alive() said False, stop()
        # did not wait, the process exited and the daemon thread died before its clean-up (its
        # spill folder, and the parts in it, left behind; issue 34)
        self.began, self.ended = threading.Event(), threading.Event()

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="bpe_fast count ahead", daemon=True)
        try:
            self.thread.start()
        except RuntimeError:        # "can't start new thread": counted after stage one instead
            self.thread = None

    def _run(self) -> None:
        self.began.set()
        t0 = time.perf_counter()
        try:
            table = self.count_text(*self.args, progress=self.progress)
            seconds = time.perf_counter() - t0
            if self.touch_layout and not self.asked.is_set():
                self.layout = layout_memory(table.n_symbols, self.asked)
            self.outcome = (table, seconds)
        except BaseException as error:       # (raised again by result)
            self.outcome = error
        finally:
            self.ended.set()                 # its clean-up done (count_tasks' finally)

    def result(self) -> tuple[WordTable, float]:
        """The table and the seconds it took to count (much of them beside the caller's work)."""
        self.asked.set()
        if self.thread is None:
            t0 = time.perf_counter()
            return self.count_text(*self.args, progress=self.shown), time.perf_counter() - t0
        self.ended.wait()
        outcome, self.outcome = self.outcome, None      # (the table held by the caller alone)
        if isinstance(outcome, BaseException):
            raise outcome
        assert outcome is not None
        self.progress.show()
        return outcome

    def stop(self) -> None:
        """Stop the count and wait for it; another Ctrl-C meanwhile waits too (the count's
        clean-up is short, and would otherwise leave its spill folder behind). A table counted
        already is let go: the traceback on its way to the user (a notebook keeps the last one)
        holds this object."""
        self.progress.stop()
        self.asked.set()
        while self._running():
            try:
                self.ended.wait()
            except KeyboardInterrupt:
                continue
        self.outcome = self.layout = None

    def _running(self) -> bool:
        """Has the thread begun, and not ended? A start() cut short by Ctrl-C may or may not
        have started it: a thread started begins within moments."""
        while True:
            try:
                return (self.thread is not None and not self.ended.is_set()
                        and (self.began.is_set() or self.began.wait(1.0)))
            except KeyboardInterrupt:
                continue


VARIANT = SuperBPE()
