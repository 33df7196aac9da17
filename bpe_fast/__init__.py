"""bpe_fast: a fast byte-pair-encoding tokenizer trainer.

    import bpe_fast
    tok = bpe_fast.train(["a.txt"], vocab_size=4096, pattern="cl100k")
    tok.encode("hello world"); tok.save("tok.json")

Stages, one module each: patterns/pretokenize -> counting -> wordtable -> _kernel (Cython;
reference.py is the plain-Python oracle) -> tokenizer -> cli.
"""
from .errors import BpeFastError, EmptyCorpusError, InputError
from .patterns import CL100K, GPT2, O200K, PatternError
from .tokenizer import Tokenizer, TokenizerFileError, VocabularyError
from .formats import load
from .trainer import TrainReport, VocabSizeWarning, train, train_from_iterator, train_from_table
from .wordtable import WordTable

__version__ = "0.1.0"

__all__ = [
    "BpeFastError", "EmptyCorpusError", "InputError", "PatternError", "TokenizerFileError", "VocabularyError", "load",
    "VocabSizeWarning", "Tokenizer", "TrainReport", "WordTable", "train", "train_from_iterator",
    "train_from_table", "GPT2", "CL100K", "O200K",
]
