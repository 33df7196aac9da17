"""Counting on a Dask cluster against counting locally, on the same cores (issue 31).

    python benchmarks/bench_cluster.py CORPUS [CORPUS ...] [--workers 2] [--repeats 5]
    python benchmarks/bench_cluster.py --make 300M [--dir /tmp]      # a long-tailed corpus first

Times ``bpe_fast.count(files, workers=W)`` and ``bpe_fast.count(files, client=...)`` on a
``LocalCluster`` of W worker processes of one thread each, alternately (A, B, A, B, ...: on a
shared machine both see the same load), and prints every pair's ratio and their median. The
cluster is started and warmed up once, before the timings (a real cluster is already running).
Both tables are checked equal, in the same order. ``--json`` writes the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import bpe_fast  # noqa: E402


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def own_cpu() -> float:
    """CPU seconds of this process and of its children that have ended (the local count's workers)."""
    return sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
               for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))


def cluster_cpu(client) -> float:
    """CPU seconds of the cluster's worker processes so far (the scheduler runs in this process)."""
    def worker_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    return sum(client.run(worker_cpu).values())


def make_corpus(size: str, folder: str) -> str:
    path = os.path.join(folder, f"mutated-{size}.txt")
    if not os.path.exists(path):
        subprocess.run([sys.executable, str(HERE / "make_corpus.py"), "--size", size, "-o", path], check=True)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="*", help="files to count")
    ap.add_argument("--make", metavar="SIZE", help="make a long-tailed corpus of SIZE (make_corpus.py) and count it")
    ap.add_argument("--dir", default="/tmp", help="where --make writes (default /tmp; kept for the next run)")
    ap.add_argument("--workers", type=int, default=2, help="local workers, and cluster workers of one thread")
    ap.add_argument("--repeats", type=int, default=5, help="pairs of timings (default 5)")
    ap.add_argument("--pattern", default="cl100k")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--tasks-per-thread", type=float, help="override distributed.TASKS_PER_THREAD (experiments)")
    ap.add_argument("--fan-in", type=int, help="override distributed.FAN_IN (experiments)")
    args = ap.parse_args(argv)
    files = list(args.corpus) + ([make_corpus(args.make, args.dir)] if args.make else [])
    if not files:
        ap.error("give a corpus, or --make SIZE")
    from dask.distributed import Client, LocalCluster

    from bpe_fast.counting import distributed
    if args.tasks_per_thread:
        distributed.TASKS_PER_THREAD = args.tasks_per_thread
    if args.fan_in:
        distributed.FAN_IN = args.fan_in
    size = sum(os.path.getsize(f) for f in files)
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=40) as cluster, Client(cluster) as client:
        warm = Path(files[0])
        bpe_fast.count([warm], client=client, pattern=args.pattern, progress="none", block_size=1 << 16)
        locals_, remotes, cpu_local, cpu_remote = [], [], [], []
        for _ in range(args.repeats):
            cpu = own_cpu()
            t_local, local = timed(lambda: bpe_fast.count(files, workers=args.workers, pattern=args.pattern,
                                                          progress="none"))
            cpu_local.append(own_cpu() - cpu)
            cpu = own_cpu() + cluster_cpu(client)
            t_remote, remote = timed(lambda: bpe_fast.count(files, client=client, pattern=args.pattern,
                                                            progress="none"))
            cpu_remote.append(own_cpu() + cluster_cpu(client) - cpu)
            same = all((a == b).all() for a, b in zip(local.arrays(), remote.arrays()))
            if not same:
                print("the cluster's table differs from the local one", file=sys.stderr)
                return 1
            locals_.append(t_local)
            remotes.append(t_remote)
            print(f"local {t_local:6.2f} s   cluster {t_remote:6.2f} s   ratio {t_remote / t_local:.3f}   "
                  f"(CPU s: local {cpu_local[-1]:.1f}, cluster {cpu_remote[-1]:.1f})", flush=True)
            del local, remote
    ratios = [r / loc for r, loc in zip(remotes, locals_)]
    print(f"{size / 1e6:,.0f} MB, {args.workers} workers: median local {statistics.median(locals_):.2f} s, "
          f"cluster {statistics.median(remotes):.2f} s, median ratio {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f}); CPU s median local {statistics.median(cpu_local):.1f}, "
          f"cluster {statistics.median(cpu_remote):.1f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"bytes": size, "workers": args.workers, "local_s": locals_, "cluster_s": remotes,
                       "median_ratio": statistics.median(ratios),
                       "local_cpu_s": cpu_local, "cluster_cpu_s": cpu_remote}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
