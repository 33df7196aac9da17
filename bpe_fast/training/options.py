"""The settings of a training run, one type (``TrainOptions``): what the public functions build
once from their keywords, check here, and hand down the pipeline. The variants' settings are
fields here too; each variant checks its own (training/variants/: ``variants.chosen``, which
trainer.py calls right after ``TrainOptions.checked``)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


from .. import arguments
from ..arguments import INT64_MAX, is_int
from ..budget import checked_budget
from .continued import base_special_tokens, check_base
from ..errors import ArgumentError, ArgumentTypeError
from ..pretokenize.patterns import DEFAULT_PATTERN
from ..pretokenize.splitter import Splitter, check_normal_specials, normalization, special_token_list
from ..progress import ProgressOption
from ..progress import check as check_progress
from ..tokenizer import Tokenizer

# Token ids are int32 in the kernel and the encoder: ids 0 .. 2**31 - 2, special tokens included.
MAX_VOCAB_SIZE = 2**31 - 1


# The tie-break rules, by the name ``tie_break=`` and ``--tie-break`` take, with what each means.
TIE_BREAKS = {
    "bytes": "equal counts go to the smallest (left id, right id) with bytes as ids 0..255 (rustbpe, bpeasy); "
             "with a base, by the base's ids",
    "huggingface": "equal counts go to the smallest pair by Hugging Face's ids for the bytes (tokenizers' "
                   "BpeTrainer with ByteLevel); with a base, by the ids BpeTrainer gives its tokens (bytes in "
                   "its order, then merges in rank order: a tokenizer.json's own)",
}


@dataclass(frozen=True)
class TrainOptions:
    """Every setting of a training run but its input, checked once, before any text is read
    (``TrainOptions.checked``). ``vocab_size`` is one size or a tuple of them (one training, to
    the largest, cut to each); ``pattern`` is ``...`` until resolved: the base's, or cl100k;
    ``normalize`` likewise: the base's, or None."""
    vocab_size: int | tuple[int, ...]
    pattern: Any = ...
    normalize: Any = ...
    special_tokens: tuple[str, ...] = ()
    min_frequency: int = 0
    tie_break: str = "bytes"
    base: Tokenizer | None = None
    max_token_length: int | None = None
    # the variants' settings (variants.VariantOptions says what each means; variants.chosen checks them)
    superword_at: int | str | None = None
    superword_pattern: str | None = "superword"
    superword: str = "superbpe"
    boundless_eligible: str | None = None
    progress: ProgressOption = "auto"
    special_ids: Mapping[str, int] | None = None   # ids given with the special tokens (a dict), to honour
    threads: int | None = None     # the kernel's threads (train's workers, at most one per CPU available)
    picky: float | None = None
    memory_budget: int | None = None   # the whole job's peak, counting and merging (budget.py)
    # A table counted for this run, kept when the merging cannot fit the budget, trains it again
    # (--counts); not so for a variant's stage, whose run needs more than that one table.
    counts_reusable: bool = True
    # memory for the layout of a continued training's table, its pages touched ahead of time
    # (continued.layout_memory: superword training's count ahead does it while stage one learns)
    layout_memory: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def checked(cls, vocab_size, **settings) -> TrainOptions:
        if isinstance(vocab_size, list):
            vocab_size = tuple(vocab_size)
        specials = settings.get("special_tokens")
        if isinstance(specials, Mapping):               # tiktoken's style: {token: id}
            settings.update(special_tokens=tuple(specials), special_ids=dict(specials))
        options = cls(vocab_size, **settings)
        options.check()
        return options

    @property
    def sizes(self) -> tuple[int, ...]:
        return self.vocab_size if isinstance(self.vocab_size, tuple) else (self.vocab_size,)

    @property
    def resolved_pattern(self):
        """The pattern the text is split with: as given, else the base's, else cl100k."""
        if self.pattern is not ...:
            return self.pattern
        return self.base.pattern if isinstance(self.base, Tokenizer) else DEFAULT_PATTERN

    @property
    def resolved_normalize(self) -> str | None:
        """The Unicode normalization the text gets before it is split: as given, else the base's."""
        if self.normalize is not ...:
            return self.normalize
        return self.base.normalize if isinstance(self.base, Tokenizer) else None

    def splitter(self) -> Splitter:
        """What a chunk is for these options, resolved once for the count: the pattern and
        normalization (``resolved_*``), and every special token cut out of the text."""
        return Splitter.of(self.resolved_pattern, self.cut_out, normalize=self.resolved_normalize)

    @property
    def cut_out(self) -> list[str]:
        """Every special token cut out of the text when counting: ours and the base's."""
        return [*self.special_tokens, *base_special_tokens(self.base, self.special_tokens)]

    def check(self) -> None:
        """Every argument, for every size; raises ArgumentError naming the one at fault."""
        if not self.sizes:
            raise ArgumentError("vocab_size is an empty list")
        object.__setattr__(self, "special_tokens", special_token_list(self.special_tokens))
        if self.normalize is not ...:
            object.__setattr__(self, "normalize", normalization(self.normalize))
        check_progress(self.progress)
        object.__setattr__(self, "memory_budget", checked_budget(self.memory_budget))
        if self.threads is not None:
            arguments.workers(self.threads)
        for size in self.sizes:
            self._check_size(size)
        self._check_counts()
        if not isinstance(self.tie_break, str) or self.tie_break not in TIE_BREAKS:
            raise ArgumentError(f"tie_break must be one of {tuple(TIE_BREAKS)}, got {self.tie_break!r}")
        if self.max_token_length is not None and not (is_int(self.max_token_length)
                                                      and 1 <= self.max_token_length <= INT64_MAX):
            raise ArgumentError(f"max_token_length must be a positive number of bytes (at most 2**63 - 1), "
                                f"got {self.max_token_length!r}")
        for size in self.sizes:
            check_base(self.base, size)
        if self.special_ids is not None:
            self._check_special_ids()
        check_normal_specials(self.cut_out, self.resolved_normalize, ArgumentError)

    def _check_size(self, size) -> None:
        if not is_int(size):
            raise ArgumentTypeError(f"vocab_size must be an integer, got {size!r}")
        need = 256 + len(self.special_tokens)
        if self.base is None and size < need:
            raise ArgumentError(f"vocab_size={size} is too small: it must be at least {need} "
                                f"(256 byte tokens + {len(self.special_tokens)} special tokens)")
        if size > MAX_VOCAB_SIZE:
            raise ArgumentError(f"vocab_size={size} is too large: token ids are 32-bit, so a vocabulary holds at "
                                f"most {MAX_VOCAB_SIZE:,} tokens, its special tokens included")

    def _check_counts(self) -> None:
        if not is_int(self.min_frequency):
            raise ArgumentTypeError(f"min_frequency must be an integer (a number of occurrences), "
                                    f"got {self.min_frequency!r}")
        if self.min_frequency < 0:
            raise ArgumentError(f"min_frequency must be >= 0, got {self.min_frequency}")

    def _check_special_ids(self) -> None:
        """Special tokens given with ids are honoured when the ids are the top of the vocabulary,
        right after the learned tokens (in any order); other ids would leave learned ids unused
        or clash with them, so they are refused rather than silently renumbered."""
        if len(self.sizes) > 1 or self.base is not None or self.superword_at is not None:
            raise ArgumentError("special_tokens with ids (a dict) need one vocab_size and no base= or superword_at=: "
                                "give them as a list (ids then follow the learned ones, in the order given)")
        ids = list(self.special_ids.values())           # type: ignore[union-attr]
        if not all(is_int(i) for i in ids):
            raise ArgumentTypeError(f"special_tokens ids must be integers, got {dict(self.special_ids or {})}")
        size, k = self.sizes[0], len(ids)
        if sorted(ids) != list(range(size - k, size)):
            raise ArgumentError(f"special_tokens ids {dict(self.special_ids or {})} cannot be honoured: with "
                                f"vocab_size={size} the learned tokens take ids 0..{size - k - 1}, so the {k} special "
                                f"token(s) take ids {size - k}..{size - 1} (in any order); give those ids, or a list")
