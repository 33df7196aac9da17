"""What the format tests share: tokenizers trained once (on the shared corpora, and on the small
corpus that is always there), texts to compare ids on, and each format written once."""
from __future__ import annotations

import base64
import functools
from pathlib import Path


import bpe_fast
from bpe_fast import Tokenizer

from ..conftest import corpus_files, read_corpus, shared_path, small_text


@functools.cache
def trained(pattern: str) -> Tokenizer:
    corpora = shared_path("corpora")
    files = [corpora / "taylorswift.txt", corpora / "multilingual" / "ru.txt", corpora / "multilingual" / "ja.txt"]
    return bpe_fast.train(files, 2000, pattern=pattern, special_tokens=["<|endoftext|>", "<|pad|>"])


SAMPLE_FILES = ["taylorswift.txt", "the-verdict.txt", "ko.txt", "th.txt", "yo.txt", "ar.txt", "zh.txt"]


def sample_texts() -> list[str]:
    return [read_corpus(p) for p in corpus_files() if p.name in SAMPLE_FILES]


@functools.cache
def small_trained(pattern: str | None) -> Tokenizer:
    return bpe_fast.train_from_iterator([small_text()], 600, pattern=pattern, workers=1,
                                        special_tokens=["<|endoftext|>", "<|pad|>"])


def tiktoken_lines(ranks: dict[bytes, int]) -> str:
    return "".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranks.items())


BYTES = {bytes([b]): b for b in range(256)}


def every_format(tok: Tokenizer, folder: Path) -> dict[str, Path]:
    """The tokenizer saved in every format; {format: the path bpe_fast.load is given}."""
    (folder / "gpt2").mkdir()
    (folder / "hf").mkdir()
    tok.save(folder / "t.json")
    tok.save(folder / "hf" / "tokenizer.json", format="huggingface")
    tok.save(folder / "t.tiktoken")
    tok.save(folder / "t.model")
    tok.save(folder / "gpt2" / "vocab.bpe")
    return {"bpe_fast": folder / "t.json", "huggingface": folder / "hf" / "tokenizer.json",
            "huggingface folder": folder / "hf", "tiktoken": folder / "t.tiktoken", "minbpe": folder / "t.model",
            "gpt2 encoder.json": folder / "gpt2" / "encoder.json", "gpt2 vocab.bpe": folder / "gpt2" / "vocab.bpe",
            "gpt2 folder": folder / "gpt2"}
