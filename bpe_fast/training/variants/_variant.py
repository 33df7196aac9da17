"""What a variant is (``Variant``; each variant's module makes one: its ``VARIANT``). The base
class is plain BPE: every default below runs the plain pipeline (training/pipeline.py), and a
variant overrides only what it does differently. ``options`` is a training.options.TrainOptions."""
from __future__ import annotations

from typing import Any

from ...tokenizer import Tokenizer
from .. import pipeline
from ..options import TrainOptions
from ..pipeline import CountText, TrainReport


class Variant:
    """One variant of BPE training, all it is; this base class is plain BPE."""
    name = "plain"                  # its name: superword= ("superbpe", "boundless"), or its option's
    title = "BPE"                   # in messages: "SuperBPE"
    summary = ""                    # one line: what it trains (--help)
    keywords_help = ""              # its keywords, as train's docstring tells them
    held_by: tuple[str, ...] = ()   # the formats (formats.names()) whose files hold its tokenizers
    json_version: int | None = None     # the bpe_fast JSON version its tokenizers write (None: plain)
    rows = "merges"                 # the field of bpe_fast's JSON its rows are in (Picky BPE: "events")
    json_keys: tuple[str, ...] = ()     # the fields it adds to bpe_fast's JSON (a file that has them is its)

    # -- options ------------------------------------------------------------------------------
    def selects(self, options: TrainOptions) -> bool:
        """Do these options train this variant?"""
        return False

    def check(self, options: TrainOptions) -> None:
        """Refuse, naming the argument, any of its settings that does not fit the others (the
        options may be completed here, as TrainOptions.check does: ``object.__setattr__``)."""

    # -- training -------------------------------------------------------------------------------
    def train(self, count_text: CountText, options: TrainOptions, input_unit: str, ahead: bool) -> list[Tokenizer]:
        """A tokenizer per size from the corpus ``count_text`` counts (``ahead``: a later stage's
        text may be counted while an earlier one learns). Plain: count, then learn."""
        return pipeline.train(count_text, options, input_unit, self.learn)

    def learn(self, held: list, vocab_size: int, options: TrainOptions, report: TrainReport) -> Tokenizer:
        """The kernel stage: the table (in ``held``, see pipeline.py) to a tokenizer. Plain: the kernel's."""
        return pipeline.learn_bpe(held, vocab_size, options, report)

    # -- its tokenizers and their files -----------------------------------------------------------
    def owns(self, tok: Any) -> bool:
        """Is ``tok`` one of its tokenizers (not a plain one)?"""
        return False

    def refusal(self, fmt_title: str) -> str:
        """Why ``fmt_title`` (a format not in ``held_by``) cannot hold its tokenizers."""
        return f"{fmt_title} cannot hold a {self.title} tokenizer"

    def json_fields(self, tok: Any) -> dict:
        """What bpe_fast's JSON writes of ``tok`` beside the plain fields (and its version)."""
        return {}

    def from_json(self, data: dict, where: str) -> dict:
        """Its fields of a bpe_fast JSON object, checked (TokenizerFileError naming ``where``), as
        Vocabulary's ``extra``."""
        return {}

    def tokenizer(self, vocab: Any) -> Tokenizer:
        """Its tokenizer, from a vocabulary read from a file (formats.Vocabulary)."""
        raise NotImplementedError(self.name)


PLAIN = Variant()
