"""Counting per core: the CPU time of scan + insert into the native chunk table, one tree against another.

    python benchmarks/make_corpus.py --kind zipf --size 1G -o zipf-1g.txt
    python benchmarks/bench_table.py zipf-1g.txt --mb 128 --pattern gpt2 --rounds 5 --tree old=../old --tree new=.

Each round runs one process per tree, in turn (old, new, old, new, ...), with that tree first on
PYTHONPATH. A process reads the first ``--mb`` MiB of the file (cut after its last newline) into
blocks of about 1 MiB cut after a newline, as counting workers read a file, then counts every
block into one fresh ``ChunkTable`` with ``add_text`` and reports the thread's CPU time for that
(time.thread_time: user + system, so the table's page faults are in it; what other processes
take from the core is not), the wall time, the load average, the number of distinct chunks and
``nbytes``, and a digest of the sorted table (``sorted_arrays``: bytes, offsets, counts and the
64-bit hashes) to check that the trees count the same table byte for byte. ``--scan`` adds the
scanner alone (``Scanner.boundaries`` per block) to each process. The summary gives medians over
the rounds and each tree's ratio to the first.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time


def blocks_of(path: str, mib: int, block: int = 1 << 20) -> list[bytes]:
    with open(path, "rb") as fh:
        data = fh.read(mib << 20)
    data = data[:data.rfind(b"\n") + 1]
    out, i = [], 0
    while i < len(data):
        j = data.find(b"\n", i + block)
        j = len(data) if j < 0 else j + 1
        out.append(data[i:j])
        i = j
    return out


def system_time() -> float:
    """This thread's CPU time in the kernel (page faults), where the OS tells it."""
    try:
        import resource
        return resource.getrusage(resource.RUSAGE_THREAD).ru_stime
    except (ImportError, AttributeError, OSError):
        return 0.0


def child(args) -> None:
    from bpe_fast.counting._table import ChunkTable
    from bpe_fast.pretokenize.splitter import Splitter
    scanner = Splitter.of(args.pattern).scanner
    if scanner is None:
        sys.exit(f"--pattern {args.pattern}: give a pattern with a native scanner (gpt2, cl100k, o200k, superword)")
    if args.no_huge:
        from bpe_fast.counting import _table
        _table._use_huge_pages(False)
    blocks = blocks_of(args.file, args.mb)
    result: dict = {"bytes": sum(map(len, blocks)), "load_before": os.getloadavg()[0]}
    if args.scan:
        start = time.thread_time()
        result["chunks"] = sum(len(scanner.boundaries(b)) for b in blocks)
        result["scan_cpu"] = time.thread_time() - start
    wall, start, system = time.perf_counter(), time.thread_time(), system_time()
    table = ChunkTable()
    for b in blocks:
        table.add_text(scanner, b)
    result["cpu"] = time.thread_time() - start
    result["sys"] = system_time() - system
    result["wall"] = time.perf_counter() - wall
    result["load_after"] = os.getloadavg()[0]
    result["distinct"], result["nbytes"] = len(table), table.nbytes
    if args.digest:
        digest = hashlib.sha256()
        for a in table.sorted_arrays():
            digest.update(a.tobytes())
        result["digest"] = digest.hexdigest()[:16]
    import bpe_fast
    result["module"] = os.path.dirname(bpe_fast.__file__)
    print(json.dumps(result))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--mb", type=int, default=128, help="MiB from the start of the file (default 128)")
    ap.add_argument("--pattern", default="gpt2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tree", action="append", default=[], metavar="NAME=PATH",
                    help="a checkout to time (bpe_fast built in place there); repeat; default: this one. "
                    "NAME=PATH,no-huge: without huge pages (trees that have the switch)")
    ap.add_argument("--scan", action="store_true", help="also time the scanner alone")
    ap.add_argument("--no-digest", dest="digest", action="store_false", help="skip the table digest")
    ap.add_argument("--json", help="append every run to this file (JSON lines)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-huge", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = [t.split("=", 1) for t in args.tree] or [["this", here]]
    runs: dict[str, list[dict]] = {name: [] for name, _ in trees}
    command = [sys.executable, os.path.abspath(__file__), args.file, "--mb", str(args.mb), "--pattern", args.pattern,
               "--child"] + (["--scan"] if args.scan else []) + ([] if args.digest else ["--no-digest"])
    for r in range(args.rounds):
        for name, path in trees:
            path, *flags = path.split(",")
            env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
            out = subprocess.run(command + ["--" + f for f in flags], env=env, capture_output=True, text=True,
                                 check=True).stdout
            run = json.loads(out.strip().splitlines()[-1])
            run.update(tree=name, round=r, file=args.file, mb=args.mb, pattern=args.pattern)
            runs[name].append(run)
            print(f"round {r + 1} {name:>6}: {run['cpu']:.3f} s CPU ({run['sys']:.3f} in the kernel), "
                  f"{run['wall']:.3f} s wall, load "
                  f"{run['load_before']:.1f}-{run['load_after']:.1f}, {run['distinct']:,} distinct, "
                  f"{run['nbytes'] / 2**20:.0f} MiB" + (f", scan {run['scan_cpu']:.3f} s" if args.scan else "")
                  + (f", digest {run['digest']}" if args.digest else ""), flush=True)
            if args.json:
                with open(args.json, "a") as fh:
                    fh.write(json.dumps(run) + "\n")
    first = statistics.median(r["cpu"] for r in runs[trees[0][0]])
    size = runs[trees[0][0]][0]["bytes"]
    print(f"\n{args.file}, first {size / 1e6:.0f} MB, {args.pattern}, medians of {args.rounds} alternating processes")
    print("| tree | CPU s | of which kernel | MB/s per core | vs " + trees[0][0] + " | wall s | B per distinct chunk |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, _ in trees:
        cpu = statistics.median(r["cpu"] for r in runs[name])
        wall = statistics.median(r["wall"] for r in runs[name])
        system = statistics.median(r["sys"] for r in runs[name])
        per = runs[name][0]["nbytes"] / max(runs[name][0]["distinct"], 1)
        print(f"| {name} | {cpu:.3f} | {system:.3f} | {size / 1e6 / cpu:.0f} | {first / cpu:.2f}x | {wall:.3f} | "
              f"{per:.0f} |")
    if args.digest:
        digests = {r["digest"] for rs in runs.values() for r in rs}
        print("tables identical across trees" if len(digests) == 1 else f"TABLES DIFFER: {digests}")


if __name__ == "__main__":
    main()
