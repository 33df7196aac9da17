"""One memory budget for the whole job: does ``--memory-budget`` hold, and how close is the plan?

Two measurements (RESULTS.md, "One memory budget"):

* ``tree``: ``bpe-fast train CORPUS --vocab-size V`` without a budget and with each budget, the
  whole process tree's peak PSS sampled every 20 ms (proctree.tree_pss_kb: a forked worker's
  shared pages count once), the plan's predicted peak (the CLI's "memory" line), and whether the
  merges are the same as without a budget. A budget too small must end in the one-line error,
  before merging, with the counted table kept.
* ``kernel``: for each corpus's word table and each vocab size, the kernel's predicted bytes
  (budget.kernel_bytes: layout and merging) against what it allocates (``Trainer.memory()``,
  sampled every 512 merges; the table's own arrays aside).

    python benchmarks/bench_budget.py --make /tmp/budget            # mutated 1 GB, mutated and zipf 300 MB
    python benchmarks/bench_budget.py --corpus /tmp/budget/mutated-1g.txt --budgets 400M,300M tree
    python benchmarks/bench_budget.py --corpus A.txt B.txt --vocab 8192,32768,65536 kernel

Memory, unlike time, hardly depends on the machine's load: one run of each is enough.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from proctree import ProcessTable, tree_pss_kb  # noqa: E402

MiB = 1 << 20


def sampled_pss(cmd: list[str], sample_s: float = 0.02) -> tuple[int, float, str, str]:
    """Run cmd; its return code, its tree's peak PSS (MiB), its stdout and stderr."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        peak, table = 0, ProcessTable()
        while proc.poll() is None:
            peak = max(peak, tree_pss_kb(proc.pid, table))
            time.sleep(sample_s)
        out.seek(0), err.seek(0)
        return proc.returncode, peak / 1024, out.read(), err.read()


def merges_of(path: str):
    import bpe_fast
    return bpe_fast.Tokenizer.load(path).merges


def tree(corpora: list[str], vocab: int, budgets: list[str], workdir: str) -> None:
    print("| corpus | vocab | budget | merging's planned peak MiB | measured peak PSS MiB | measured / budget | "
          "same merges |\n|---|---|---|---|---|---|---|")
    refusals: list[str] = []
    for corpus in corpora:
        name = os.path.basename(corpus)
        runs = {}
        for budget in [None, *budgets]:
            out = os.path.join(workdir, f"tok-{budget or 'none'}.json")
            cmd = [sys.executable, "-m", "bpe_fast", "train", corpus, "--vocab-size", str(vocab), "-o", out, "-q"]
            if budget:
                cmd += ["--memory-budget", budget]
            rc, peak, stdout, stderr = sampled_pss(cmd)
            planned = re.search(r"planned to peak at ([\d,]+) MiB", stdout)
            predicted = planned.group(1) if planned else "-"
            if rc != 0 and budget is None:
                raise SystemExit(f"{name}: training without a budget failed: {stderr.strip()}")
            if rc != 0:
                assert budget is not None
                kept = re.search(r"kept in (\S+?):", stderr)
                ok = kept is not None and os.path.exists(kept.group(1))
                needs = re.search(r"needs about ([\d,]+) MiB", stderr)
                print(f"| {name} | {vocab} | {budget} | {needs.group(1) if needs else '?'} (refused before merging) | "
                      f"{peak:,.0f} | {peak * MiB / parse_size(budget):.2f} | table kept: {ok} |", flush=True)
                refusals.append(stderr.strip())
                if kept is not None and ok:
                    shutil.rmtree(os.path.dirname(kept.group(1)))
                continue
            runs[budget] = merges_of(out)
            same = "" if budget is None else str(len(runs[budget]) == len(runs[None])
                                                  and bool((runs[budget] == runs[None]).all()))
            share = f"{peak * MiB / parse_size(budget):.2f}" if budget else ""
            print(f"| {name} | {vocab} | {budget or 'none'} | {predicted} | {peak:,.0f} | {share} | {same} |",
                  flush=True)
    for line in refusals:
        print(f"\n    {line}")


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def kernel(corpora: list[str], vocabs: list[int], workdir: str) -> None:
    """Counted once per corpus (bpe-fast count), then each vocab size in a fresh process."""
    print("| corpus | words | symbols | vocab | predicted layout MiB | predicted merging MiB | measured peak MiB "
          "| measured / predicted |\n|---|---|---|---|---|---|---|---|")
    for corpus in corpora:
        counts = os.path.join(workdir, "counts.npz")
        subprocess.run([sys.executable, "-m", "bpe_fast", "count", corpus, "-o", counts, "-q"], check=True,
                       stdout=subprocess.DEVNULL)
        for vocab in vocabs:
            row = json.loads(subprocess.run([sys.executable, __file__, "--one", counts, str(vocab)], check=True,
                                            capture_output=True, text=True).stdout)
            print(f"| {os.path.basename(corpus)} | {row['words']:,} | {row['symbols']:,} | {vocab} | "
                  f"{row['layout'] / MiB:,.0f} | {row['merging'] / MiB:,.0f} | {row['measured'] / MiB:,.0f} | "
                  f"{row['measured'] / row['merging']:.2f} |", flush=True)


def one(counts: str, vocab: int) -> None:
    """The kernel's measured and predicted bytes for one table and size (a JSON line)."""
    from bpe_fast import WordTable, budget
    from bpe_fast.training import _kernel
    table = WordTable.load(counts, check=False)
    threads = 2
    layout, merging = budget.kernel_bytes(table.offsets, table.counts, vocab - 256, threads)
    k = _kernel.Trainer(table.symbols, table.offsets, table.counts, vocab - 256, threads=threads)
    words, symbols = len(table), table.n_symbols
    del table
    peak = [0]

    def sample(_m: int = 0) -> None:
        peak[0] = max(peak[0], sum(v for key, v in k.memory().items() if key not in ("tracked", "lists_used")))

    k.count_pairs()
    sample()
    k.learn(sample, 512)
    print(json.dumps(dict(words=words, symbols=symbols, layout=layout, merging=merging, measured=peak[0])))


def make(folder: str) -> list[str]:
    made = []
    for kind, size, seed in (("mutated", "1G", 0), ("mutated", "300M", 2), ("zipf", "300M", 0)):
        path = os.path.join(folder, f"{kind}-{size.lower()}.txt")
        if not os.path.exists(path):
            subprocess.run([sys.executable, os.path.join(HERE, "make_corpus.py"), "--kind", kind, "--size", size,
                            "--seed", str(seed), "-o", path], check=True)
        made.append(path)
    return made


def main() -> None:
    if sys.argv[1:2] == ["--one"]:
        return one(sys.argv[2], int(sys.argv[3]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", nargs="*", choices=["tree", "kernel"], default=[])
    ap.add_argument("--corpus", nargs="+", default=[])
    ap.add_argument("--make", metavar="DIR", help="make the corpora in DIR (kept; delete them after)")
    ap.add_argument("--vocab", default="32768", help="vocab sizes, comma separated (tree: the first)")
    ap.add_argument("--budgets", default="400M,300M")
    args = ap.parse_args()
    corpora = args.corpus or (make(args.make) if args.make else [])
    vocabs = [int(v) for v in args.vocab.split(",")]
    with tempfile.TemporaryDirectory() as workdir:
        if "tree" in args.what:
            tree(corpora, vocabs[0], args.budgets.split(","), workdir)
        if "kernel" in args.what:
            kernel(corpora, vocabs, workdir)


if __name__ == "__main__":
    main()
