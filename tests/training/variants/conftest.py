"""Helpers shared by the tests of parity-aware BPE (test_parity.py, test_parity_reference.py): the
shared corpora's languages, the tables and words they count to, and Hugging Face tokenizers'
ParityBpeTrainer, whose merges both are held to."""
from __future__ import annotations

import json

import pytest

import bpe_fast
from bpe_fast.bytelevel import bytes_to_unicode

from ...conftest import shared_path

FIVE = ["de", "ru", "hi", "zh", "ar"]
MODES: list[dict] = [dict(ratio=[1.0, 1.2, 2.5, 0.8, 1.5]),
         dict(dev=True),
         dict(),
         dict(ratio=[1.0, 1.2, 2.5, 0.8, 1.5], variant="window", window_size=10),
         dict(dev=True, variant="window", window_size=20, alpha=1.5),
         dict(ratio=[1.0] * 5, global_merges=40)]
MODE_IDS = ["ratio", "dev", "neither", "ratio-window", "dev-window", "global"]


def language_docs(name: str, chars: int, skip: int = 0) -> list[str]:
    text = shared_path("corpora", "multilingual", f"{name}.txt").read_text(encoding="utf-8")
    return text[skip:skip + chars].split("\n")


def hf_parity(train: list[list[str]], n_merges: int, dev: list[list[str]] | None = None, **settings) -> list:
    hf = pytest.importorskip("tokenizers", reason="tokenizers is a dev dependency")
    if not hasattr(hf.trainers, "ParityBpeTrainer"):
        pytest.skip("this tokenizers has no ParityBpeTrainer (0.23.3 has it)")
    tok = hf.Tokenizer(hf.models.BPE())
    tok.pre_tokenizer = hf.pre_tokenizers.ByteLevel(add_prefix_space=False)
    ratio = settings.pop("ratio", None)
    trainer = hf.trainers.ParityBpeTrainer(num_merges=n_merges, show_progress=False,
                                           initial_alphabet=hf.pre_tokenizers.ByteLevel.alphabet(), **settings)
    trainer.train_from_iterator(tok, [iter(d) for d in train], dev_iterators=None if dev is None else
                                [iter(d) for d in dev], ratio=ratio)
    byte_of = {c: b for b, c in bytes_to_unicode().items()}
    merges = [m if isinstance(m, list) else m.split(" ") for m in json.loads(tok.to_str())["model"]["merges"]]
    return [(bytes(byte_of[c] for c in a), bytes(byte_of[c] for c in b)) for a, b in merges]


def tables(docs: list[list[str]], pattern: str = "gpt2") -> list[bpe_fast.WordTable]:
    return [bpe_fast.count_from_iterator(d, pattern=pattern, workers=1, progress="none") for d in docs]


def reference_words(table: bpe_fast.WordTable) -> list[tuple[list[int], int]]:
    return [(list(w), c) for w, c in table.as_dict().items()]


def with_dev(mode: dict, dev) -> dict:
    return {**mode, "dev": dev} if mode.get("dev") else mode
