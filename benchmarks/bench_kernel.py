"""The training kernel alone on a saved word table: code trees and thread counts, alternating runs.

    python benchmarks/make_corpus.py --size 1G -o /tmp/web-1g.txt
    python -c "import bpe_fast; bpe_fast.count('/tmp/web-1g.txt', pattern='gpt2', lines=True).save('/tmp/web-1g.npz')"
    python benchmarks/bench_kernel.py /tmp/web-1g.npz --vocab-size 32768,65536 --trees OLD,. --threads 1,2

Each run is a fresh interpreter (this script with ``--one``) whose PYTHONPATH is one code tree
(a checkout with its compiled extensions built in place), so an old tree and a new one are
measured on the same table, one run of each after the other, ``--repeats`` times round. The
child times the kernel's set-up (``_kernel.Trainer``: lay the words out, count the pairs) and
its merges (``learn``), and reports the kernel's work counters; the parent adds the CPU time every
other process on the machine used meanwhile (a busy machine makes wall times noisy: compare the
medians, the CPU times and the work counters, which load changes less or not at all). For a
kernel that reports its threads' CPU, the table adds what the merging would take with a core per
thread: the one-thread CPU plus the longest thread of each shared merge. A tree whose kernel has no
``threads`` keyword is run once per round, as one thread. The merges of every run are compared.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from typing import Any

from proctree import run_sampled  # noqa: E402  (benchmarks/ is on sys.path)

RESULT_MARK = "KERNEL_RESULT "


def one(table_path: str, vocab_size: int, threads: int, parallel_from: int) -> None:
    from bpe_fast import WordTable
    from bpe_fast.training import _kernel
    table = WordTable.load(table_path, check=False)
    keywords: dict[str, Any] = {"threads": threads} if threads else {}   # (an old kernel has no threads)
    if threads and parallel_from:
        keywords["parallel_from"] = parallel_from
    t0 = time.perf_counter()
    trainer = _kernel.Trainer(table.symbols, table.offsets, table.counts, vocab_size - 256, **keywords)
    if hasattr(trainer, "count_pairs"):          # the set-up in two steps; an older kernel counts in Trainer()
        trainer.count_pairs()
    t1, cpu1 = time.perf_counter(), time.process_time()
    stats: dict = {}
    merges = trainer.learn(None, 256, stats)
    t2, cpu2 = time.perf_counter(), time.process_time()
    print(RESULT_MARK + json.dumps({"setup_s": t1 - t0, "merges_s": t2 - t1, "merges_cpu_s": cpu2 - cpu1,
                                    "quiet_s": quiet_estimate(stats), "stats": stats,
                                    "merges": hashlib.sha256(merges.tobytes()).hexdigest()[:16]}))


def quiet_estimate(stats: dict) -> float | None:
    """What the merging would take with a core per thread: the main thread's CPU outside the
    shared merges' parts, plus the longest part of each shared merge (None: an old kernel)."""
    if "cpu_longest" not in stats:
        return None
    return stats["cpu_merging"] - stats["thread_cpu"][0] + stats["cpu_longest"]


def has_threads(tree: str) -> bool:
    kernel = os.path.join(tree, "bpe_fast", "training", "_kernel.pyx")      # bpe_fast/_kernel.pyx before 0.3
    if not os.path.exists(kernel):
        kernel = os.path.join(tree, "bpe_fast", "_kernel.pyx")
    return "int threads=" in open(kernel, encoding="utf-8").read()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("table", help="a word table saved by WordTable.save (.npz)")
    ap.add_argument("--vocab-size", default="32768")
    ap.add_argument("--trees", default=".", help="comma-separated code trees (checkouts built in place)")
    ap.add_argument("--threads", default="1,2", help="thread counts for trees whose kernel takes threads")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--parallel-from", type=int, default=0,
                    help="bytes of a merge's list from which the threads share it (default: the kernel's)")
    ap.add_argument("--one", nargs=3, metavar=("TREE", "VOCAB", "THREADS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        one(args.table, int(args.one[1]), int(args.one[2]), args.parallel_from)
        return 0
    trees = [os.path.abspath(t) for t in args.trees.split(",")]
    configs = [(tree, int(v), th) for v in args.vocab_size.split(",") for tree in trees
               for th in ([int(x) for x in args.threads.split(",")] if has_threads(tree) else [0])]
    runs: dict = {c: [] for c in configs}
    for r in range(args.repeats):
        for tree, vocab, threads in configs:
            env = {**os.environ, "PYTHONPATH": tree}
            run = run_sampled([sys.executable, __file__, args.table, "--one", tree, str(vocab), str(threads),
                               "--parallel-from", str(args.parallel_from)], env=env)
            line = next((x for x in run.stdout.splitlines() if x.startswith(RESULT_MARK)), None)
            if run.returncode or line is None:
                print(run.stderr, file=sys.stderr)
                return 1
            result = json.loads(line[len(RESULT_MARK):]) | {"other_s": max(run.other_cpu_s, 0.0),
                                                             "peak_mb": run.peak_tree_mb}
            runs[(tree, vocab, threads)].append(result)
            print(f"round {r + 1} {tree} V={vocab} threads={threads or 'n/a'}: set-up {result['setup_s']:.2f} s, "
                  f"merges {result['merges_s']:.2f} s, peak {run.peak_tree_mb:.0f} MB, "
                  f"other processes {result['other_s']:.1f} s CPU", file=sys.stderr, flush=True)
    report(runs)
    return 0


def report(runs: dict) -> None:
    print("\n| tree | vocab | threads | set-up s | merges s | merges CPU s | merges, quiet estimate s "
          "| runs (set-up + merges) s | peak MB | other CPU s | merges |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---|---|")
    digests: dict[int, set] = {}
    for (tree, vocab, threads), results in runs.items():
        digests.setdefault(vocab, set()).update(r["merges"] for r in results)
        setup = statistics.median(r["setup_s"] for r in results)
        merges = statistics.median(r["merges_s"] for r in results)
        cpu = statistics.median(r["merges_cpu_s"] for r in results)
        quiet = "n/a" if results[0]["quiet_s"] is None else f"{statistics.median(r['quiet_s'] for r in results):.2f}"
        each = ", ".join(f"{r['setup_s'] + r['merges_s']:.2f}" for r in results)
        other = ", ".join(f"{r['other_s']:.1f}" for r in results)
        peak = max(r["peak_mb"] for r in results)
        print(f"| {tree} | {vocab} | {threads or 'n/a'} | {setup:.2f} | {merges:.2f} | {cpu:.2f} | {quiet} | {each} "
              f"| {peak:.0f} | {other} | {results[0]['merges']} |")
    for vocab, found in digests.items():
        print(f"V={vocab}: " + ("every run learned the same merges" if len(found) == 1 else
                                f"MERGES DIFFER between runs: {sorted(found)}"))
    print("\nwork counters (last run of each):")
    for (tree, vocab, threads), results in runs.items():
        print(f"{tree} V={vocab} threads={threads or 'n/a'}: {json.dumps(results[-1]['stats'])}")


if __name__ == "__main__":
    sys.exit(main())
