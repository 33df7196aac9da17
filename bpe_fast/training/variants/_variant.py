"""What a variant is (``Variant``, each variant's module makes one: its ``VARIANT``) and what the
plain pipeline hands it to train with (``Pipeline``). A variant overrides only what it does
differently; every default below is plain BPE's. ``options`` is an options.TrainOptions (typed
Any: options.py imports the table of variants)."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...tokenizer import Tokenizer
    from ...counting.wordtable import WordTable

# (Splitter, a variant's units or None, progress=) -> the corpus's table: of chunks, or of runs
# of units (variants/boundless.py); progress= defaults to the call's
CountText = Callable[..., "WordTable"]


class Pipeline(Protocol):
    """The plain pipeline's stages, as trainer.py hands them to a variant: ``train`` (count, then
    learn every size; it asks the table again, so a stage may be another variant's or plain),
    ``counted`` (count: the table in a list, and the options with its pattern), ``held`` (a table
    counted elsewhere, the same way), ``learn_sizes`` (learn the largest size, cut to each),
    ``report`` (a fresh TrainReport), ``count_args`` (what ``count_text`` takes for some options),
    and the kernel stage's helpers. ``count_text`` is the corpus: a function that counts it."""

    def train(self, count_text: CountText, options: Any, input_unit: str, ahead: bool = False) -> list[Tokenizer]:
        ...

    def counted(self, count_text: CountText, options: Any, report: Any) -> tuple[list, Any]: ...

    def held(self, table: WordTable, options: Any, report: Any, seconds: float) -> tuple[list, Any]: ...

    def learn_sizes(self, held: list, options: Any, report: Any) -> list[Tokenizer]: ...

    def report(self, input_unit: str) -> Any: ...

    def count_args(self, options: Any) -> tuple: ...

    def kernel_ids(self, tie_break: str, base: Tokenizer | None) -> Any: ...

    def check_pair_counts(self, table: WordTable) -> None: ...


class Variant:
    """One variant of BPE training, all it is (see the package's docstring)."""
    name = ""                       # its name: superword= ("superbpe", "boundless"), or its option's
    title = ""                      # in messages: "SuperBPE"
    summary = ""                    # one line: what it trains (--help)
    keywords_help = ""              # its keywords, as train's docstring tells them
    held_by: tuple[str, ...] = ()   # the formats (formats.names()) whose files hold its tokenizers
    json_version: int | None = None     # the bpe_fast JSON version its tokenizers write (None: plain)
    rows = "merges"                 # the field of bpe_fast's JSON its rows are in (Picky BPE: "events")
    json_keys: tuple[str, ...] = ()     # the fields it adds to bpe_fast's JSON (a file that has them is its)

    # -- options ------------------------------------------------------------------------------
    def selects(self, options: Any) -> bool:
        """Do these options train this variant?"""
        return False

    def check(self, options: Any) -> None:
        """Refuse, naming the argument, any of its settings that does not fit the others (the
        options may be completed here, as TrainOptions.check does: ``object.__setattr__``)."""

    # -- training -------------------------------------------------------------------------------
    def train(self, plain: Pipeline, count_text: CountText, options: Any, input_unit: str,
              ahead: bool) -> list[Tokenizer] | None:
        """Its stages over the plain pipeline, a tokenizer per size; None: the plain stages."""
        return None

    def learn(self, plain: Pipeline, table: WordTable, vocab_size: int, options: Any,
              report: Any) -> Tokenizer | None:
        """Its own kernel stage (the table to a tokenizer); None: the plain kernel's."""
        return None

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
