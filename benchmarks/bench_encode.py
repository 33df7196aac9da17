"""Encoding speed: bpe_fast against tiktoken and the fast exact encoders on PyPI, same process,
same vocabulary, same text, ids checked identical to tiktoken's.

    python benchmarks/bench_encode.py [--encoding cl100k_base] [--repeats 5] [--threads 2]
                                      [--only single,batch,cold]

The text is mix33 (big, tinyshakespeare, code_python and multilingual/*, ~33 MB; see mix33.py).
Peers that are installed take part: tiktoken (the reference, loading the real .tiktoken file),
toktok-rs, quicktok-v1, splintr-rs (``pip install toktok-rs quicktok-v1 splintr-rs``).

* single: one call on the whole text, one thread; each library's tiktoken-style
  ``encode_ordinary`` (a list of ints), and the array forms where a library has one
  (bpe_fast ``encode_to_numpy``, toktok ``encode_to_numpy``, splintr ``encode_flat``).
* batch: every line of mix33 as a document (556,637 of them), on --threads threads: lists of
  ids (tiktoken ``encode_ordinary_batch``, bpe_fast ``encode_batch``) and flat buffers plus
  offsets (bpe_fast ``encode_batch_to_numpy``, toktok ``encode_batch_to_numpy``, quicktok
  ``encode_batch``, splintr ``encode_batch_flat``).
* cold: the first call on the whole text in a fresh process (after a small warm-up text that
  loads everything lazily loaded). toktok, splintr and bpe_fast keep a cache of merged words
  between calls, so repeated calls (single, batch) run warm; this mode shows the first call.

Libraries alternate within each repeat; medians are reported, and the ratio bpe_fast / peer
(> 1: bpe_fast is faster). Finally bpe_fast's single-thread time is split into its parts.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from mix33 import corpus_dir, mix33_files  # benchmarks/ is on sys.path


def mix33_text(corpora: Path) -> str:
    return "".join(f.read_bytes().decode("utf-8") for f in mix33_files(corpora))


def load_peers(encoding: str) -> dict:
    """Each installed library's encoder for this encoding, bpe_fast first."""
    import bpe_fast
    from bpe_fast.registry import ENCODINGS, find_vocab_file

    peers: dict[str, Any] = {"bpe_fast": bpe_fast.load(encoding)}
    try:
        import tiktoken
        import tiktoken.load
        ranks = tiktoken.load.load_tiktoken_bpe(str(find_vocab_file(f"{encoding}.tiktoken")))
        peers["tiktoken"] = tiktoken.Encoding(encoding, pat_str=ENCODINGS[encoding].pattern,
                                              special_tokens=ENCODINGS[encoding].special_tokens,
                                              mergeable_ranks=ranks)
    except ImportError:
        pass
    for name, make in (("toktok", lambda: __import__("toktok")._encoding(encoding)),
                       ("quicktok", lambda: __import__("quicktok").get_encoding(encoding)),
                       ("splintr", lambda: __import__("splintr").Tokenizer.from_pretrained(encoding))):
        try:
            peers[name] = make()
        except ImportError:
            pass
    return peers


def single_calls(peers: dict) -> dict:
    """name -> (function of the text, kind of result): 'list' or 'array'."""
    calls = {}
    for name, enc in peers.items():
        calls[name] = (enc.encode_ordinary, "list")
    calls["bpe_fast numpy"] = (lambda t: peers["bpe_fast"].encode_to_numpy(t, disallowed_special=()), "array")
    if "toktok" in peers:
        calls["toktok numpy"] = (peers["toktok"].encode_to_numpy, "array")
    if "splintr" in peers:
        calls["splintr flat"] = (lambda t: np.frombuffer(peers["splintr"].encode_flat(t), np.uint32), "array")
    return calls


def batch_calls(peers: dict, threads: int) -> dict:
    """name -> (function of the list of texts, kind): 'lists' or 'flat' ((ids, offsets))."""
    calls = {"bpe_fast": (lambda ts: peers["bpe_fast"].encode_batch(
                 ts, workers=threads, disallowed_special=()), "lists"),
             "bpe_fast numpy": (lambda ts: peers["bpe_fast"].encode_batch_to_numpy(
                 ts, workers=threads, disallowed_special=()), "flat")}
    if "tiktoken" in peers:
        calls["tiktoken"] = (lambda ts: peers["tiktoken"].encode_ordinary_batch(ts, num_threads=threads), "lists")
    if "toktok" in peers:
        calls["toktok numpy"] = (lambda ts: peers["toktok"].encode_batch_to_numpy(ts, threads), "flat")
    if "quicktok" in peers:
        calls["quicktok flat"] = (lambda ts: peers["quicktok"].encode_batch(ts, threads), "flat")
    if "splintr" in peers:   # rayon: all cores, no thread count
        calls["splintr flat"] = (lambda ts: tuple(np.frombuffer(b, t) for b, t in zip(
            peers["splintr"].encode_batch_flat(ts), (np.uint32, np.uint64))), "flat")
    return calls


def as_flat(result, kind: str) -> tuple[np.ndarray, np.ndarray]:
    if kind == "lists":
        offsets = np.zeros(len(result) + 1, np.int64)
        np.cumsum([len(ids) for ids in result], out=offsets[1:])
        return np.fromiter((i for ids in result for i in ids), np.uint32, count=int(offsets[-1])), offsets
    ids, offsets = result
    return np.asarray(ids, np.uint32), np.asarray(offsets, np.int64)


def run_alternating(calls: dict, arg, repeats: int, check) -> dict:
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeats):
        for name, (fn, kind) in calls.items():
            start = time.perf_counter()
            result = fn(arg)
            times[name].append(time.perf_counter() - start)
            check(name, result, kind)
            del result
    return {name: statistics.median(ts) for name, ts in times.items()}


def report(title: str, medians: dict, size_mb: float) -> None:
    ours = {k: v for k, v in medians.items() if k.startswith("bpe_fast")}
    print(f"\n{title}")
    print("| library | s | MB/s | " + " | ".join(f"{k} / it" for k in ours) + " |")
    print("|---|---:|---:|" + "---:|" * len(ours))
    for name, t in medians.items():
        print(f"| {name} | {t:.3f} | {size_mb / t:.1f} | " + " | ".join(f"{t / o:.2f}x" for o in ours.values()) + " |")


def cold_child(library: str, encoding: str) -> None:
    fn = single_calls(load_peers(encoding))[library][0]
    fn("warm-up: Hello, world! Ünïcödé 12345 " * 100)
    text = mix33_text(corpus_dir())
    start = time.perf_counter()
    fn(text)
    print(time.perf_counter() - start)


def cold(peers: dict, encoding: str, repeats: int, size_mb: float) -> None:
    times: dict[str, list[float]] = {name: [] for name in peers}
    for _ in range(repeats):
        for name in peers:
            out = subprocess.run([sys.executable, __file__, "--cold-child", name, "--encoding", encoding],
                                 capture_output=True, text=True, check=True)
            times[name].append(float(out.stdout.split()[-1]))
    report(f"cold: first encode_ordinary of the whole text in a fresh process, median of {repeats}",
           {k: statistics.median(v) for k, v in times.items()}, size_mb)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encoding", default="cl100k_base", choices=["cl100k_base", "o200k_base"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", default="single,batch,cold", help="comma-separated modes")
    ap.add_argument("--cold-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cold_child:
        cold_child(args.cold_child, args.encoding)
        return 0
    modes = set(args.only.split(","))
    peers = load_peers(args.encoding)
    text = mix33_text(corpus_dir())
    size_mb = len(text.encode("utf-8")) / 1e6
    checker = "tiktoken" if "tiktoken" in peers else "bpe_fast"
    reference = peers[checker].encode_ordinary(text)
    checked = "tiktoken" if checker == "tiktoken" else "bpe_fast (tiktoken absent)"
    print(f"{args.encoding} on mix33: {size_mb:.1f} MB, {len(reference):,} tokens; ids checked against {checked}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")

    if "cold" in modes:      # first: after the batches, peers' idle thread pools can spin and slow the children
        cold(peers, args.encoding, max(1, args.repeats // 2), size_mb)

    if "single" in modes:
        reference_array = np.array(reference, np.uint32)

        def check_single(name, result, kind):
            same = result == reference if kind == "list" else np.array_equal(result, reference_array)
            assert same, f"{name}: ids differ from the reference"

        medians = run_alternating(single_calls(peers), text, args.repeats, check_single)
        report(f"single thread, whole text, median of {args.repeats}", medians, size_mb)

    if "batch" in modes:
        lines = text.splitlines(keepends=True)
        reference_flat = as_flat(batch_calls(peers, 1)["bpe_fast numpy"][0](lines), "flat")
        if "tiktoken" in peers:
            expected = as_flat(peers["tiktoken"].encode_ordinary_batch(lines, num_threads=args.threads), "lists")
            assert all(np.array_equal(a, b) for a, b in zip(expected, reference_flat)), "batch ids differ from tiktoken"

        def check_batch(name, result, kind):
            ids, offsets = as_flat(result, kind)
            assert np.array_equal(ids, reference_flat[0]) and np.array_equal(offsets, reference_flat[1]), \
                f"{name}: batch ids differ"

        medians = run_alternating(batch_calls(peers, args.threads), lines, args.repeats, check_batch)
        report(f"batch of {len(lines):,} lines, {args.threads} threads, median of {args.repeats}", medians, size_mb)

    if "single" in modes:
        split_time(peers["bpe_fast"], text, args.repeats)
    return 0


def split_time(ours, text: str, repeats: int) -> None:
    """Where bpe_fast's single-thread time goes: the scanner alone, counting (scanner, lookups,
    merging, no ids kept), the uint32 array, the list."""
    import bpe_fast

    data = text.encode("utf-8")
    scanner = bpe_fast.pretokenize.native_scanner(ours.pattern)

    def best(fn):
        return min(timed(fn) for _ in range(repeats))

    scan = best(lambda: scanner.boundaries(data))
    count = best(lambda: ours.count_tokens(text, disallowed_special=()))
    array = best(lambda: ours.encode_to_numpy(text, disallowed_special=()))
    lists = best(lambda: ours.encode_ordinary(text))
    print(f"\nbpe_fast single thread, warm, best of {repeats}: pre-tokenization (native scanner, on bytes) "
          f"{scan:.3f} s; count_tokens (UTF-8, scanner, lookups, merging) {count:.3f} s; "
          f"encode_to_numpy {array:.3f} s; encode_ordinary (list) {lists:.3f} s")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(main())
