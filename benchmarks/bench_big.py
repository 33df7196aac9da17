"""Big-corpus training benchmark: bpe_fast against gigabpe and rustbpe on one large text file.

    python benchmarks/make_corpus.py --size 1G -o web-1g.txt
    python benchmarks/bench_big.py --corpus web-1g.txt --task gigabpe --vocab-size 32768,65536
    python benchmarks/bench_big.py --corpus web-1g.txt --task rustbpe --vocab-size 32768

Two tasks, as issue 8 sets them:

* ``gigabpe``: the GPT-2 pattern (Hugging Face's ByteLevel pre-tokenizer), whole files, 2
  threads/processes. gigabpe reads a file as Hugging Face's ``train(files)`` does, each line a
  document; so bpe_fast gets ``train([file], V, pattern="gpt2", tie_break="huggingface",
  lines=True)`` and should learn the same merges; gigabpe: ``train_bpe([file], V,
  pretokenizer="bytelevel", threads=2)``. gigabpe learns ``V - 256 + (bytes never seen)``
  merges (Hugging Face counts only the bytes it saw in the vocabulary); bpe_fast learns
  ``V - 256``; the shorter merge list is compared with the start of the longer one.
* ``rustbpe``: the cl100k pattern, the file given as documents of 65,536 characters to
  ``train_from_iterator`` of both; the vocabularies are compared whole.

Each (library, vocab size, repeat) runs in a fresh interpreter (this script with ``--one``),
one after the other, timed around the training call; the parent samples the summed VmRSS of the
child's whole process tree every 20 ms (benchmarks/proctree.py), so worker processes count.
Prints a table with medians and the ratios to the peer measured in the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import sys
import tempfile
import time

from proctree import run_sampled  # noqa: E402  (benchmarks/ is on sys.path)

RESULT_MARK = "BENCH_RESULT "
DOC_CHARS = 65536
TASKS = {"gigabpe": ("bpe_fast", "gigabpe"), "rustbpe": ("bpe_fast", "rustbpe")}


def documents(path: str):
    with open(path, encoding="utf-8") as fh:
        while piece := fh.read(DOC_CHARS):
            yield piece


def train(lib: str, task: str, corpus: str, vocab_size: int, workers: int) -> tuple[list[bytes], dict]:
    """Train once; the token each merge makes, in merge order, and what bpe_fast's training report
    says of the table (distinct chunks, their bytes, each stage's seconds; nothing for a peer)."""
    if lib == "bpe_fast":
        import bpe_fast
        if task == "gigabpe":
            tok = bpe_fast.train([corpus], vocab_size, pattern="gpt2", tie_break="huggingface", lines=True,
                                 workers=workers, progress="none")
        else:
            tok = bpe_fast.train_from_iterator(documents(corpus), vocab_size, pattern="cl100k", workers=workers,
                                               progress="none")
        report = tok.training_report
        table = {"unique_chunks": report.unique_chunks, "table_symbols": report.table_symbols,
                 "stage_seconds": report.seconds}
        return [tok.token_bytes(i) for i in tok.merge_ids.tolist()], table
    if lib == "gigabpe":
        import gigabpe
        _, merges = gigabpe.train_bpe([corpus], vocab_size, pretokenizer="bytelevel", threads=workers)
        table = {c: b for b, c in _bytes_to_unicode().items()}
        return [bytes(table[c] for c in a + b) for a, b in merges], {}
    if lib == "rustbpe":
        import rustbpe
        from bpe_fast.pretokenize.patterns import CL100K
        tok = rustbpe.Tokenizer()
        tok.train_from_iterator(documents(corpus), vocab_size, pattern=CL100K)
        by_rank = {r: t for t, r in tok.get_mergeable_ranks()}
        return [by_rank[r] for r in sorted(by_rank) if r >= 256], {}
    raise ValueError(lib)


def _bytes_to_unicode() -> dict[int, str]:
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        table[b] = chr(b) if b in printable else chr(256 + extra)
        extra += b not in printable
    return table


def run_one(args) -> None:
    start = time.perf_counter()
    merges, table = train(args.one, args.task, args.corpus, args.vocab, args.workers)
    seconds = time.perf_counter() - start
    with open(args.merges_out, "wb") as fh:
        pickle.dump(merges, fh)
    print(RESULT_MARK + json.dumps({"seconds": seconds, "merges": len(merges), **table}), flush=True)


def measure(lib: str, vocab_size: int, args, tmp: str) -> dict:
    out = os.path.join(tmp, f"{lib}-{vocab_size}.pickle")
    cmd = [sys.executable, os.path.abspath(__file__), "--one", lib, "--task", args.task, "--corpus", args.corpus,
           "--vocab", str(vocab_size), "--workers", str(args.workers), "--merges-out", out]
    runs = []
    for rep in range(args.repeats):
        run = run_sampled(cmd)
        lines = [ln for ln in run.stdout.splitlines() if ln.startswith(RESULT_MARK)]
        if run.returncode != 0 or not lines:
            sys.exit(f"{lib} failed (exit {run.returncode}): {run.stderr.strip()[-3000:]}")
        result = json.loads(lines[-1][len(RESULT_MARK):])
        runs.append({**result, "peak_mb": run.peak_tree_mb, "cpu_s": run.child_cpu_s, "other_s": run.other_cpu_s})
        print(f"  {lib} V={vocab_size} run {rep + 1}: {result['seconds']:.2f} s, peak tree RSS "
              f"{run.peak_tree_mb:.0f} MB, CPU {run.child_cpu_s:.1f} s, "
              f"other processes {max(run.other_cpu_s, 0):.1f} s",
              file=sys.stderr)
    with open(out, "rb") as fh:
        merges = pickle.load(fh)
    return {"seconds": statistics.median(r["seconds"] for r in runs), "peak_mb": max(r["peak_mb"] for r in runs),
            "cpu_s": statistics.median(r["cpu_s"] for r in runs), "merges": merges, "n": runs[0]["merges"],
            "table": {k: runs[0][k] for k in ("unique_chunks", "table_symbols", "stage_seconds") if k in runs[0]}}


def agreement(ours: list[bytes], theirs: list[bytes]) -> str:
    """How much of the two merge orders agree (as the tokens they make)."""
    n = min(len(ours), len(theirs))
    for i in range(n):
        if ours[i] != theirs[i]:
            return f"first {i} of {n} agree (then {ours[i]!r} vs {theirs[i]!r})"
    return f"all {n} agree"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True, help="a UTF-8 text file (benchmarks/make_corpus.py makes one)")
    ap.add_argument("--task", choices=TASKS, default="gigabpe")
    ap.add_argument("--vocab-size", default="32768", help="comma-separated sizes")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--vocab", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--merges-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        return run_one(args)
    size = os.path.getsize(args.corpus)
    print(f"corpus: {os.path.basename(args.corpus)}, {size:,} bytes; task {args.task}; {args.workers} workers; "
          f"{args.repeats} repeat(s), median time, max peak tree RSS")
    print()
    print("| vocab | library | median s | s / peer | peak tree MB | MB / peer | CPU s | merges |")
    print("|---:|---|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for vocab_size in [int(v) for v in args.vocab_size.split(",")]:
            ours_lib, peer_lib = TASKS[args.task]
            ours, peer = (measure(lib, vocab_size, args, tmp) for lib in (ours_lib, peer_lib))
            for lib, r in ((ours_lib, ours), (peer_lib, peer)):
                agree = agreement(ours["merges"], peer["merges"]) if lib == ours_lib else "(peer)"
                print(f"| {vocab_size} | {lib} | {r['seconds']:.2f} | {r['seconds'] / peer['seconds']:.2f}x | "
                      f"{r['peak_mb']:.0f} | {r['peak_mb'] / peer['peak_mb']:.2f}x | {r['cpu_s']:.1f} | "
                      f"{r['n']:,}: {agree} |", flush=True)


if __name__ == "__main__":
    main()
