"""Parity-aware BPE: ours (bpe_fast.train_parity) against Hugging Face tokenizers'
ParityBpeTrainer and against our plain training on the same text (every language's files as one
corpus), on the shared multilingual corpora (35 files, one language each), ratio mode (every
ratio 1), 16,000 merges, GPT-2 pattern, Hugging Face tie-break. Prints each time, the ratios, and
whether the merges are equal.

    python benchmarks/bench_parity.py [--merges 16000] [--repeat 3] [--variant base|window]

Ours and plain take the best of --repeat runs (interleaved, so load hits both alike);
ParityBpeTrainer runs once. On a loaded machine the ratios move by +-30%: repeat.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import bpe_fast
from bpe_fast.bytelevel import bytes_to_unicode
from bpe_fast.paths import corpora_dir


def hf_parity(docs: list[list[str]], n_merges: int, variant: str) -> tuple[float, list]:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from tokenizers.trainers import ParityBpeTrainer
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = ParityBpeTrainer(num_merges=n_merges, variant=variant, show_progress=False,
                               initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    t0 = time.perf_counter()
    trainer.train_from_iterator(tok, [iter(d) for d in docs], ratio=[1.0] * len(docs))
    seconds = time.perf_counter() - t0
    byte_of = {c: b for b, c in bytes_to_unicode().items()}
    merges = [m if isinstance(m, list) else m.split(" ") for m in json.loads(tok.to_str())["model"]["merges"]]
    return seconds, [(bytes(byte_of[c] for c in a), bytes(byte_of[c] for c in b)) for a, b in merges]


def as_bytes(tok: bpe_fast.Tokenizer) -> list:
    return [(tok.token_bytes(a), tok.token_bytes(b)) for a, b in tok.merges.tolist()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--merges", type=int, default=16000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--variant", default="base", choices=("base", "window"))
    args = parser.parse_args()
    folder = corpora_dir()
    if folder is None:
        raise SystemExit("shared corpora not found: set BPE_FAST_DATA")
    files = sorted((Path(folder) / "multilingual").glob("*.txt"))
    docs = [[f.read_text(encoding="utf-8")] for f in files]     # each file one document, as ours reads it
    vocab = 256 + args.merges
    common: dict = dict(pattern="gpt2", tie_break="huggingface", progress="none")
    best: dict[str, float] = {}
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        ours = bpe_fast.train_parity(docs, vocab, ratio=[1.0] * len(docs), variant=args.variant, **common)
        best["ours"] = min(best.get("ours", 1e9), time.perf_counter() - t0)
        t0 = time.perf_counter()
        bpe_fast.train(files, vocab, **common)
        best["plain"] = min(best.get("plain", 1e9), time.perf_counter() - t0)
    seconds, theirs = hf_parity(docs, args.merges, args.variant)      # (once: it takes 10x as long)
    best["hf"] = seconds
    print(f"{len(files)} languages, {sum(f.stat().st_size for f in files) / 1e6:.1f} MB, {args.merges} merges, "
          f"variant {args.variant}, ratio mode")
    print(f"ours (train_parity) {best['ours']:.2f} s; ParityBpeTrainer {best['hf']:.2f} s; our plain train "
          f"{best['plain']:.2f} s")
    print(f"ours / ParityBpeTrainer = {best['ours'] / best['hf']:.3f} (target <= 0.2); ours / plain = "
          f"{best['ours'] / best['plain']:.2f} (target <= 1.5)")
    print(f"merges equal to ParityBpeTrainer's: {as_bytes(ours) == theirs}")
    report = ours.training_report
    print("ours by stage:", ", ".join(f"{k} {v:.2f} s" for k, v in report.seconds.items()))


if __name__ == "__main__":
    main()
