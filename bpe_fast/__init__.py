"""bpe_fast: a fast byte-pair-encoding tokenizer trainer.

    import bpe_fast
    tok = bpe_fast.train(["a.txt"], vocab_size=4096, pattern="cl100k")
    tok.encode("hello world"); tok.save("tok.json")

Stages, one module each: patterns, pretokenize (the Splitter: what a chunk is) -> inputs ->
counting -> wordtable -> _kernel (Cython; reference.py is the plain-Python oracle) -> tokenizer
(formats/ reads and writes its files, one module per format; registry.py names the encodings)
-> cli; trainer.py runs the stages in order (continued.py: training on from a base; variants/:
SuperBPE, BoundlessBPE, Picky BPE and parity-aware BPE, one module each, over the plain stages). errors.py,
arguments.py (the API's argument checks), paths.py and bytelevel.py are leaves any module may use.
There is no import cycle
(``python tests/test_architecture.py`` prints the graph). The workshop (``bpe_fast.workshop``:
the seed notebooks' tokenizers and the profiling ladder) stands apart: no stage imports it.
"""
from . import _build, _moved

_build.check_extensions_are_fresh()    # before any compiled module loads: a stale one would run old code
from ._version import __version__
from .encoding.corpus import encode_files, load_bin
from .errors import UnknownTokenError
from .errors import (ArgumentError, ArgumentTypeError, BpeFastError, BpeFastWarning, EmptyCorpusError,
                     EncodingError, InputError, MemoryBudgetError, MissingExtraError, PatternError,
                     PatternRequiredError, StaleBuildError, TokenizerFileError, VocabSizeWarning, VocabularyError,
                     VocabularyNotFoundError, WorkerError)
from .pretokenize.patterns import CL100K, GPT2, O200K
from .registry import ENCODINGS, load
from .tokenizer import Tokenizer
from .counting.corpus import count, count_from_iterator
from .training.trainer import TrainReport, train, train_from_iterator, train_from_table
from .training.variants.picky import PickyTokenizer
from .training.variants.parity import train_parity
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

_moved.install()                       # the module paths of 0.2 (bpe_fast.trainer, ...) still import


def __getattr__(name: str):
    return _moved.old_attribute(name)  # bpe_fast.picky and bpe_fast.boundless, as after "import bpe_fast" in 0.2
