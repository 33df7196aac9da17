"""Merges equal to rustbpe's and bpeasy's: independent Rust trainers with the same tie-break.

Both take tiktoken's pattern strings and break ties by the smallest (left, right) pair, so on
the same documents all three must learn the same vocabulary, rank for rank.
"""
from __future__ import annotations

import warnings

import pytest

import bpe_fast

from .conftest import SHARED, shared_path

rustbpe = pytest.importorskip("rustbpe", reason="rustbpe is a dev dependency: pip install -e '.[dev]'")
bpeasy = pytest.importorskip("bpeasy", reason="bpeasy is a dev dependency: pip install -e '.[dev]'")

pytestmark = pytest.mark.skipif(SHARED is None, reason="shared corpora not found (BPE_FAST_DATA or ../shared)")

CASES = [  # (corpus, pattern, vocab_size): named patterns, vocab sizes from 300 to 32768
    ("the-verdict.txt", "gpt2", 300),
    ("the-verdict.txt", "o200k", 1000),
    ("taylorswift.txt", "cl100k", 300),
    ("taylorswift.txt", "gpt2", 2000),
    ("taylorswift.txt", "o200k", 5000),
    ("tinyshakespeare.txt", "cl100k", 4096),
    pytest.param("multilingual/ja_wagahaiwa_nekodearu.txt", "o200k", 8192, marks=pytest.mark.slow),
    ("multilingual/hi.txt", "gpt2", 3000),   # runs out of pairs first: all three stop early
    pytest.param("code_python.txt", "o200k", 16384, marks=pytest.mark.slow),     # 2 s each, the
    pytest.param("big.txt", "cl100k", 32768, marks=pytest.mark.slow),            # big corpora
]


def read_docs(name: str) -> list[str]:
    """The file as documents of 64 KB (bytes decoded as they are: no newline translation)."""
    text = shared_path("corpora", name).read_bytes().decode("utf-8")
    return [text[i:i + 65536] for i in range(0, len(text), 65536)]


@pytest.mark.parametrize("corpus,pattern,vocab_size", CASES)
def test_same_vocabulary_as_rustbpe_and_bpeasy(corpus, pattern, vocab_size):
    docs = read_docs(corpus)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tok = bpe_fast.train_from_iterator(docs, vocab_size, pattern=pattern)
    ours = tok.mergeable_ranks()
    assert len(ours) == tok.vocab_size <= vocab_size
    stopped_early = [w for w in caught if issubclass(w.category, bpe_fast.VocabSizeWarning)]
    assert bool(stopped_early) == (tok.vocab_size < vocab_size)

    rust = rustbpe.Tokenizer()
    rust.train_from_iterator(iter(docs), vocab_size, pattern=tok.pattern)
    assert dict(rust.get_mergeable_ranks()) == ours

    assert bpeasy.train_bpe(iter(docs), tok.pattern, 10**6, vocab_size) == ours


HF_CASES = [("the-verdict.txt", 500), ("taylorswift.txt", 3000), ("multilingual/ru.txt", 2000),
            pytest.param("multilingual/ja_wagahaiwa_nekodearu.txt", 6000, marks=pytest.mark.slow),
            pytest.param("tinyshakespeare.txt", 8000, marks=pytest.mark.slow)]


@pytest.mark.parametrize("corpus,vocab_size", HF_CASES)
def test_huggingface_tie_break_reproduces_bpetrainer(tmp_path, corpus, vocab_size):
    """tie_break="huggingface" learns the merges of tokenizers' BpeTrainer with ByteLevel."""
    hf = pytest.importorskip("tokenizers", reason="tokenizers is a dev dependency")
    docs = read_docs(corpus)
    theirs = hf.Tokenizer(hf.models.BPE())
    theirs.pre_tokenizer = hf.pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = hf.trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                     initial_alphabet=hf.pre_tokenizers.ByteLevel.alphabet())
    theirs.train_from_iterator(docs, trainer)
    theirs.save(str(tmp_path / "hf.json"))
    hf_merges = _merges_as_bytes(bpe_fast.Tokenizer.load(tmp_path / "hf.json", format="huggingface"))

    ours = bpe_fast.train_from_iterator(docs, vocab_size, pattern="gpt2", tie_break="huggingface")
    assert _merges_as_bytes(ours) == hf_merges
    by_bytes = bpe_fast.train_from_iterator(docs, vocab_size, pattern="gpt2")
    assert _merges_as_bytes(by_bytes) != hf_merges      # the tie-break really matters here


def _merges_as_bytes(tok: bpe_fast.Tokenizer) -> list[tuple[bytes, bytes]]:
    return [(tok.token_bytes(a), tok.token_bytes(b)) for a, b in tok.merges.tolist()]


@pytest.mark.parametrize("corpus,vocab_size", [("taylorswift.txt", 2000), ("multilingual/ko.txt", 3000),
                                               ("code_python.txt", 5000)])
def test_lines_mode_reproduces_gigabpe_and_huggingface_files(tmp_path, corpus, vocab_size):
    """gigabpe (and Hugging Face's train(files)) read a file line by line: lines=True with the
    Hugging Face tie-break learns their merges from the same file."""
    gigabpe = pytest.importorskip("gigabpe", reason="gigabpe is a dev dependency: pip install -e '.[dev]'")
    path = shared_path("corpora", corpus)
    _, merges = gigabpe.train_bpe([str(path)], vocab_size, pretokenizer="bytelevel", threads=2)
    table = {c: b for b, c in bpe_fast.bytelevel.bytes_to_unicode().items()}
    theirs = [(bytes(table[c] for c in a), bytes(table[c] for c in b)) for a, b in merges]
    ours = bpe_fast.train([path], 256 + len(theirs), pattern="gpt2", tie_break="huggingface", lines=True)
    assert _merges_as_bytes(ours) == theirs
