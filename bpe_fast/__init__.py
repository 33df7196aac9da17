"""bpe_fast: a fast byte-pair-encoding tokenizer trainer.

    import bpe_fast
    tok = bpe_fast.train(["a.txt"], vocab_size=4096, pattern="cl100k")
    tok.encode("hello world"); tok.save("tok.json")

One folder per stage, each with its Python and its Cython side by side (docs/architecture.md):
pretokenize/ (what a chunk is) -> counting/ (chunks counted into a WordTable) -> training/ (the
kernel learns the merges; trainer.py holds the entry points, pipeline.py the stages, variants/
the research variants) -> tokenizer.py and encoding/ (the Tokenizer and its native encoder) ->
formats/ (its files; registry.py names the encodings) -> cli/. core/ holds the native headers
the stages share; errors.py, arguments.py, paths.py, progress.py, outputs.py, bytelevel.py,
budget.py and prebuilt.py are leaves any stage may use. There is no import cycle
(``python tests/test_architecture.py`` prints the graph). The workshop (``bpe_fast.workshop``:
the seed notebooks' tokenizers and the profiling ladder) stands apart: no stage imports it.
"""
from . import _build, _moved

_build.check_extensions_are_fresh()    # before any compiled module loads: a stale one would run old code
from ._version import __version__
from .prepare.corpus import encode_files, load_bin
from .errors import UnknownTokenError
from .errors import (ArgumentError, ArgumentTypeError, BpeFastError, BpeFastWarning, EmptyCorpusError,
                     EncodingError, InputError, MemoryBudgetError, MissingExtraError, PatternError,
                     PatternRequiredError, StaleBuildError, TokenizerFileError, VocabSizeWarning, VocabularyError,
                     VocabularyNotFoundError, WorkerError)
from .pretokenize.patterns import CL100K, GPT2, O200K
from .registry import ENCODINGS, load
from .tokenizer import Tokenizer
from .counting.corpus import count, count_from_iterator
from .training import variants
from .training.trainer import TrainReport, train, train_from_iterator, train_from_table, train_parity
from .training.variants.picky import PickyTokenizer
from .counting.wordtable import WordTable


__all__ = [
    "train", "train_from_iterator", "train_from_table", "count", "count_from_iterator", "load", "Tokenizer",
    "PickyTokenizer", "train_parity",
    "encode_files", "load_bin", "TrainReport", "WordTable",
    "ENCODINGS", "GPT2", "CL100K", "O200K",
    "BpeFastError", "ArgumentError", "ArgumentTypeError", "PatternError", "InputError", "EmptyCorpusError",
    "WorkerError", "MemoryBudgetError", "VocabularyError", "TokenizerFileError", "VocabularyNotFoundError",
    "PatternRequiredError",
    "EncodingError", "BpeFastWarning", "VocabSizeWarning", "MissingExtraError", "StaleBuildError", "__version__",
]
__all__ += ["UnknownTokenError"]

variants.register()                    # the variants' tokenizers, known to formats/ and tokenizer.py
_moved.install()                       # the module paths of 0.2 (bpe_fast.trainer, ...) still import


def __getattr__(name: str):
    return _moved.old_attribute(name)  # bpe_fast.picky and bpe_fast.boundless, as after "import bpe_fast" in 0.2
