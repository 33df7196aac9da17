"""The tokenizer's methods that reach the formats, as a mixin of ``Tokenizer`` (``FormatMethods``):

* files, in every format of the table (formats/__init__.py): ``save(path, format=)`` and
  ``Tokenizer.load(path, format=)`` (``bpe_fast.load`` tells the format by the content); and
  ``variant``, the variant whose tokenizer it is, which says which formats can hold it;
* conversions to and from objects in memory, which no file replaces: ``from_ranks``
  (tiktoken's ``{token bytes: rank}``), ``to_dict``/``from_dict`` (bpe_fast's JSON object),
  ``to_tiktoken`` (a ``tiktoken.Encoding``), ``to_transformers`` (a ``PreTrainedTokenizerFast``)
  and ``with_huggingface_ids`` (Hugging Face's numbering);
* each format's reader and writer from before ``save``/``load`` took every format:
  ``from_tiktoken``, ``from_gpt2``, ``from_huggingface``, ``from_minbpe``, ``save_tiktoken``,
  ``save_huggingface``, ``save_minbpe``, ``save_gpt2``. They still work, each with a
  DeprecationWarning naming its replacement.

Like the rest of formats/, this module never imports ``Tokenizer``: the class it is mixed into
makes the tokenizers (``from_vocabulary``).
"""
from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, TypeVar
from collections.abc import Mapping, Sequence

import numpy as np

from .. import arguments
from ..errors import ArgumentTypeError, VocabularyError
from . import bpe_fast_json, gpt2, huggingface, minbpe, tiktoken
from . import read, write
from ._common import Vocabulary, variant_parts

if TYPE_CHECKING:       # for annotations only (types.EllipsisType is Python 3.10+)
    from types import EllipsisType


_Tok = TypeVar("_Tok", bound="FormatMethods")      # the tokenizer class it is mixed into (or a subclass)


def deprecated(old: str, new: str) -> None:
    """Warn that ``Tokenizer.<old>`` is deprecated, naming what replaces it (at the caller's line)."""
    warnings.warn(f"Tokenizer.{old} is deprecated: use {new}", DeprecationWarning, stacklevel=3)


class FormatMethods:
    """Files, conversions, and the old per-format readers and writers (see the module docstring).

    The examples use a tokenizer of two merges: 256 is b"hi", 257 b" hi"; 258 is <|endoftext|>.
    """
    if TYPE_CHECKING:               # what the class it is mixed into gives
        merges: np.ndarray
        merge_ids: np.ndarray
        byte_ids: np.ndarray
        supermerges: np.ndarray
        special_tokens: dict[str, int]

        @property
        def pattern(self) -> str | None: ...
        @property
        def normalize(self) -> str | None: ...

        @classmethod
        def from_vocabulary(cls: type[_Tok], vocab: Vocabulary) -> _Tok: ...

    # -- files: every format through the table of formats (formats/__init__.py) --------------
    def save(self, path: str | os.PathLike, format: str | None = None) -> list[str]:
        """Write the tokenizer to ``path`` in ``format``, a name from the table of formats
        (``bpe_fast.formats.names()``: bpe_fast, huggingface, tiktoken, minbpe, gpt2). Without
        ``format`` the name says it where it can (.tiktoken, .model, vocab.bpe, tokenizer.json or
        any name ending in it: Hugging Face's, encoder.json: GPT-2's); any other .json name means
        bpe_fast's JSON. Returns the files written.

        >>> import os, tempfile
        >>> from bpe_fast import Tokenizer
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     [os.path.basename(f) for f in Tokenizer([(104, 105)], "gpt2").save(folder + "/tok.tiktoken")]
        ['tok.tiktoken', 'tok.tiktoken.json']
        """
        return write(self, arguments.path(path, "path"), format)

    @classmethod
    def load(cls: type[_Tok], path: str | os.PathLike, format: str | None = "bpe_fast", **options) -> _Tok:
        """A tokenizer in ``format`` (default: bpe_fast's JSON, what ``save`` writes by default; None:
        the format the file's content says, as ``bpe_fast.load``). A file of another format is
        refused, naming the call that reads it. ``options`` go to the format's reader: a .tiktoken
        file takes ``pattern=`` and ``special_tokens=``, GPT-2's vocab.bpe ``encoder_json=``.

        >>> import os, tempfile
        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     _ = tok.save(folder + "/tok.json")
        ...     Tokenizer.load(folder + "/tok.json") == tok
        True
        """
        return cls.from_vocabulary(read(arguments.path(path, "path"), format, **options))

    @property
    def variant(self):
        """The variant (training/variants/, its ``VARIANT``) whose tokenizer this is; None: plain BPE.
        The formats ask it which of them can hold the tokenizer (``variant_parts``).

        >>> from bpe_fast import Tokenizer
        >>> Tokenizer([(104, 105)], "gpt2").variant is None
        True
        """
        return next((v for v in variant_parts.values() if v.owns(self)), None)

    # -- conversions ------------------------------------------------------------------------
    @classmethod
    def from_ranks(cls: type[_Tok], ranks: Mapping[bytes, int], pattern: str | None = None,
                   special_tokens: Mapping[str, int] | Sequence[str] | None = None) -> _Tok:
        """From tiktoken-style ``{token bytes: rank}``: the merges are recovered from the ranks.

        >>> from bpe_fast import Tokenizer
        >>> ranks = {bytes([b]): b for b in range(256)} | {b"hi": 256, b" hi": 257}
        >>> Tokenizer.from_ranks(ranks, "gpt2").merges.tolist()
        [[104, 105], [32, 256]]
        """
        if not isinstance(ranks, Mapping):
            raise ArgumentTypeError(f"ranks must be a mapping {{token bytes: rank}}, got {type(ranks).__name__}")
        return cls.from_vocabulary(tiktoken.vocabulary_from_ranks(ranks, pattern, special_tokens))

    def to_dict(self) -> dict:
        """The JSON object ``save`` writes (``formats.bpe_fast_json.bpe_fast_dict``).

        >>> from bpe_fast import Tokenizer
        >>> data = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"]).to_dict()
        >>> data["merges"], data["special_tokens"], data["pattern_name"]
        ([[104, 105], [32, 256]], {'<|endoftext|>': 258}, 'gpt2')
        """
        return bpe_fast_json.bpe_fast_dict(self)

    @classmethod
    def from_dict(cls: type[_Tok], data: dict, source: str | None = None) -> _Tok:
        """From ``to_dict``'s object (``formats.bpe_fast_json.bpe_fast_vocabulary``); ``source``
        names it in errors.

        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> Tokenizer.from_dict(tok.to_dict()) == tok
        True
        """
        return cls.from_vocabulary(bpe_fast_json.bpe_fast_vocabulary(data, source))

    def to_tiktoken(self, name: str = "bpe_fast"):
        """A ``tiktoken.Encoding`` (needs ``bpe_fast[tiktoken]``; ``formats.tiktoken.to_tiktoken``).

        >>> from bpe_fast import Tokenizer
        >>> enc = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"]).to_tiktoken()
        >>> enc.encode("hi hi<|endoftext|>", allowed_special="all")
        [256, 257, 258]
        """
        return tiktoken.to_tiktoken(self, name)

    def to_transformers(self, *, eos_token: str | None = None, pad_token: str | None = None,
                        bos_token: str | None = None, unk_token: str | None = None, **kwargs):
        """A ``transformers.PreTrainedTokenizerFast`` (needs ``bpe_fast[transformers]``) with this
        vocabulary and these special tokens in the roles given (each must be a special token of
        this tokenizer), ready for padding, ``save_pretrained`` and a model's training loop.

        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> fast = tok.to_transformers(eos_token="<|endoftext|>")
        >>> fast("hi hi")["input_ids"], fast.eos_token_id
        ([256, 257], 258)
        """
        return huggingface.to_transformers(self, eos_token=eos_token, pad_token=pad_token, bos_token=bos_token,
                                           unk_token=unk_token, **kwargs)

    def with_huggingface_ids(self: _Tok) -> _Tok:
        """The same tokenizer (the same splits and merges, so the same tokens) numbered as Hugging
        Face's BpeTrainer numbers what it learns: special tokens first, then the 256 bytes by
        their GPT-2 characters, then the merges in order. After training with
        ``tie_break="huggingface"`` on the same documents, its tokenizer.json equals BpeTrainer's,
        id for id. Any tokenizer can be renumbered; ids then differ from the original's.

        >>> from bpe_fast import Tokenizer
        >>> hf = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"]).with_huggingface_ids()
        >>> hf.special_tokens, hf.encode("hi hi")
        ({'<|endoftext|>': 0}, [257, 258])
        """
        if len(self.supermerges):
            raise VocabularyError("a BoundlessBPE tokenizer cannot be numbered as Hugging Face's BpeTrainer numbers "
                                  "tokens: BpeTrainer has no supermerges (merges across whole words, in runs)")
        renumber, specials = huggingface.huggingface_ids(self.byte_ids, self.merge_ids, self.special_tokens)
        merges = np.vectorize(renumber.__getitem__, otypes=[np.int64])(self.merges) if len(self.merges) else self.merges
        merge_ids, byte_ids = ([renumber[int(i)] for i in ids] for ids in (self.merge_ids, self.byte_ids))
        return self.from_vocabulary(Vocabulary(merges, self.pattern, specials, merge_ids, byte_ids,
                                               normalize=self.normalize))

    # -- the old readers and writers, one per format (deprecated) -----------------------------
    @classmethod
    def from_tiktoken(cls: type[_Tok], path, pattern: str | None | EllipsisType = ...,
                      special_tokens=None) -> _Tok:
        """Deprecated: use ``Tokenizer.load(path, format="tiktoken", pattern=..., special_tokens=...)``,
        or ``bpe_fast.load(path)`` when its sidecar or name says the pattern.

        >>> import os, tempfile
        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     files = tok.save(os.path.join(folder, "tok.tiktoken"))
        ...     Tokenizer.load(files[0], format="tiktoken") == tok
        True
        """
        deprecated("from_tiktoken(path, pattern, special_tokens)",
                   'Tokenizer.load(path, format="tiktoken", pattern=..., special_tokens=...)')
        path = arguments.path(path, "path")
        return cls.from_vocabulary(tiktoken.read_tiktoken(path, pattern, special_tokens))

    @classmethod
    def from_gpt2(cls: type[_Tok], encoder_json, vocab_bpe) -> _Tok:
        """Deprecated: use ``Tokenizer.load(vocab_bpe, format="gpt2", encoder_json=encoder_json)``,
        or ``bpe_fast.load(folder)`` for a folder holding encoder.json and vocab.bpe.

        >>> import os, tempfile
        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     encoder_json, vocab_bpe = tok.save(folder + "/", format="gpt2")
        ...     Tokenizer.load(vocab_bpe, format="gpt2", encoder_json=encoder_json) == tok
        True
        """
        deprecated("from_gpt2(encoder_json, vocab_bpe)",
                   'Tokenizer.load(vocab_bpe, format="gpt2", encoder_json=encoder_json)')
        return cls.from_vocabulary(gpt2.read_gpt2(arguments.path(encoder_json, "encoder_json"),
                                                  arguments.path(vocab_bpe, "vocab_bpe")))

    @classmethod
    def from_huggingface(cls: type[_Tok], path) -> _Tok:
        """Deprecated: use ``Tokenizer.load(path, format="huggingface")`` or ``bpe_fast.load(path)``.

        >>> import os, tempfile
        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     [path] = tok.save(os.path.join(folder, "tokenizer.json"))
        ...     Tokenizer.load(path, format="huggingface") == tok
        True
        """
        deprecated("from_huggingface(path)", 'Tokenizer.load(path, format="huggingface")')
        return cls.from_vocabulary(huggingface.read_huggingface(arguments.path(path, "path")))

    @classmethod
    def from_minbpe(cls: type[_Tok], path) -> _Tok:
        """Deprecated: use ``Tokenizer.load(path, format="minbpe")`` or ``bpe_fast.load(path)``.

        >>> import os, tempfile
        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     model, vocab = tok.save(os.path.join(folder, "tok.model"))
        ...     Tokenizer.load(model, format="minbpe") == tok
        True
        """
        deprecated("from_minbpe(path)", 'Tokenizer.load(path, format="minbpe")')
        return cls.from_vocabulary(minbpe.read_minbpe(arguments.path(path, "path")))

    def save_tiktoken(self, path) -> list[str]:
        """Deprecated: use ``tok.save(path, format="tiktoken")`` (a name ending in .tiktoken says it).
        Writes the .tiktoken file and its sidecar ``path + ".json"``, whatever the name.

        >>> import os, tempfile
        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     [os.path.basename(f) for f in tok.save(os.path.join(folder, "tok.tiktoken"))]
        ['tok.tiktoken', 'tok.tiktoken.json']
        """
        deprecated("save_tiktoken(path)", 'tok.save(path, format="tiktoken")')
        return tiktoken.write_tiktoken(self, arguments.path(path, "path"))

    def save_huggingface(self, path) -> None:
        """Deprecated: use ``tok.save(path, format="huggingface")`` (a name ending in tokenizer.json says it).

        >>> import os, tempfile
        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     [os.path.basename(f) for f in tok.save(os.path.join(folder, "hf.json"), format="huggingface")]
        ['hf.json']
        """
        deprecated("save_huggingface(path)", 'tok.save(path, format="huggingface")')
        huggingface.write_huggingface(self, arguments.path(path, "path"))

    def save_minbpe(self, prefix) -> None:
        """Deprecated: use ``tok.save(prefix + ".model")``. Writes ``prefix.model`` and ``prefix.vocab``.

        >>> import os, tempfile
        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     [os.path.basename(f) for f in tok.save(os.path.join(folder, "tok.model"))]
        ['tok.model', 'tok.vocab']
        """
        deprecated("save_minbpe(prefix)", 'tok.save(prefix + ".model")')
        minbpe.write_minbpe(self, arguments.path(prefix, "prefix"))

    def save_gpt2(self, encoder_json, vocab_bpe) -> None:
        """Deprecated: use ``tok.save(folder + "/", format="gpt2")`` (encoder.json and vocab.bpe
        in it) or ``tok.save("name_vocab.bpe")`` (name_encoder.json beside it).

        >>> import os, tempfile
        >>> from bpe_fast import Tokenizer
        >>> tok = Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     [os.path.basename(f) for f in tok.save(os.path.join(folder, "tok_vocab.bpe"))]
        ['tok_encoder.json', 'tok_vocab.bpe']
        """
        deprecated("save_gpt2(encoder_json, vocab_bpe)", 'tok.save(folder + "/", format="gpt2")')
        gpt2.write_gpt2(self, arguments.path(encoder_json, "encoder_json"), arguments.path(vocab_bpe, "vocab_bpe"))
