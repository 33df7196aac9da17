"""Encoding speed: bpe_fast against tiktoken, same process, same vocabulary, same text.

    python benchmarks/bench_encode.py [--encoding cl100k_base] [--repeats 5] [--threads 2]

Encodes mix33 (big, tinyshakespeare, code_python and multilingual/*, ~33 MB) with the real
.tiktoken file loaded by each library itself, single-threaded (one call on the whole text)
and batched (64 KB documents on --threads threads), checks that the ids are identical, and
prints MB/s with medians over --repeats runs, alternating the libraries. It then splits
bpe_fast's single-threaded time into pre-tokenization (the native scanner alone), merging
(whole-chunk lookup, merges, the list of ids) and turning the str into UTF-8.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import bpe_fast
from bpe_fast.registry import ENCODINGS, find_vocab_file
from mix33 import corpus_dir, mix33_files  # benchmarks/ is on sys.path


def mix33_text(corpora: Path) -> str:
    return "".join(f.read_bytes().decode("utf-8") for f in mix33_files(corpora))


def timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encoding", default="cl100k_base", choices=[n for n in ENCODINGS if n != "gpt2"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()

    import tiktoken
    import tiktoken.load

    vocab = find_vocab_file(f"{args.encoding}.tiktoken")
    theirs = tiktoken.Encoding(args.encoding, pat_str=ENCODINGS[args.encoding].pattern,
                               special_tokens=ENCODINGS[args.encoding].special_tokens,
                               mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(vocab)))
    ours = bpe_fast.load(args.encoding, path=vocab)
    text = mix33_text(corpus_dir())
    size_mb = len(text.encode("utf-8")) / 1e6
    docs = [text[i:i + 65536] for i in range(0, len(text), 65536)]

    single = {"tiktoken": [], "bpe_fast": []}
    batch = {"tiktoken": [], "bpe_fast": []}
    for _ in range(args.repeats):
        t, ids_t = timed(theirs.encode_ordinary, text)
        single["tiktoken"].append(t)
        t, ids_b = timed(ours.encode_ordinary, text)
        single["bpe_fast"].append(t)
        assert ids_t == ids_b, "single-threaded ids differ"
        t, batch_t = timed(lambda: theirs.encode_ordinary_batch(docs, num_threads=args.threads))
        batch["tiktoken"].append(t)
        t, batch_b = timed(lambda: ours.encode_batch(docs, workers=args.threads, disallowed_special=()))
        batch["bpe_fast"].append(t)
        assert batch_t == batch_b, "batched ids differ"

    print(f"{args.encoding} on mix33 ({size_mb:.1f} MB, {len(ids_b):,} tokens, ids identical), "
          f"median of {args.repeats}, {args.threads} threads for batches")
    print("| mode | tiktoken MB/s | bpe_fast MB/s | bpe_fast / tiktoken |")
    print("|---|---:|---:|---:|")
    for mode, times in (("single thread", single), (f"batch, {args.threads} threads", batch)):
        t_tk, t_bf = statistics.median(times["tiktoken"]), statistics.median(times["bpe_fast"])
        print(f"| {mode} | {size_mb / t_tk:.1f} | {size_mb / t_bf:.1f} | {t_tk / t_bf:.2f}x |")

    data = text.encode("utf-8")
    scanner = bpe_fast.pretokenize.native_scanner(ours.pattern)
    scan = statistics.median(timed(scanner.boundaries, data)[0] for _ in range(args.repeats))
    native = statistics.median(timed(ours._native.encode_text, data)[0] for _ in range(args.repeats))
    whole = statistics.median(single["bpe_fast"])
    print(f"\nbpe_fast single-thread time, {whole:.2f} s: pre-tokenization (native scanner) {scan:.2f} s "
          f"({scan / whole:.0%}), chunk lookup + merging + the list of ids {native - scan:.2f} s "
          f"({(native - scan) / whole:.0%}), str -> UTF-8 and the Python call {whole - native:.2f} s "
          f"({(whole - native) / whole:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
