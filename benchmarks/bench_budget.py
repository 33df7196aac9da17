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
* ``parity``: parity-aware training, each ``--corpus`` a language (or one corpus cut into
  ``--split`` parts at line ends, each a language), at each vocab size, in two fresh processes:
  the plan's predicted peak (budget.plan_parity_merging) against the process's peak resident
  memory from the plan on (``VmHWM``, reset when the plan is made: the merging's peak, counting
  aside), and ``bpe-fast parity --memory-budget`` under ``/usr/bin/time -v`` (its maximum resident
  set size: the whole run, counting in the process with ``--workers 1``).

    python benchmarks/bench_budget.py --make /tmp/budget            # mutated 1 GB, mutated and zipf 300 MB
    python benchmarks/bench_budget.py --corpus /tmp/budget/mutated-1g.txt --budgets 400M,300M tree
    python benchmarks/bench_budget.py --corpus A.txt B.txt --vocab 8192,32768,65536 kernel
    python benchmarks/bench_budget.py --corpus de.txt hi.txt zh.txt --vocab 8192,32768 parity
    python benchmarks/bench_budget.py --corpus heldout.txt --split 4 --vocab 8192,32768 parity

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


def parity(corpora: list[str], split: int, vocabs: list[int], workdir: str) -> None:
    """Each vocab size in fresh processes: the plan against the merging's peak, and the CLI's run."""
    languages = cut(corpora[0], split, workdir) if split else corpora
    name = (f"{os.path.basename(corpora[0])} in {split} parts" if split
            else " ".join(os.path.basename(c).rsplit(".", 1)[0] for c in corpora))
    print("| languages | MB | vocab | merges | planned peak MiB (process + kernel) | measured merging peak MiB "
          "| measured / planned | whole run, time -v MiB |\n|---|---|---|---|---|---|---|---|")
    megabytes = sum(os.path.getsize(c) for c in languages) / 1e6
    for vocab in vocabs:
        row = json.loads(subprocess.run([sys.executable, __file__, "--one-parity", str(vocab), *languages], check=True,
                                        capture_output=True, text=True).stdout)
        whole = whole_run_rss(languages, vocab, workdir)
        print(f"| {name} | {megabytes:,.1f} | {vocab} | {row['merges']:,} | {row['peak'] / MiB:,.0f} "
              f"({row['process'] / MiB:,.0f} + {row['kernel'] / MiB:,.0f}) | {row['measured'] / MiB:,.0f} | "
              f"{row['measured'] / row['peak']:.2f} | {whole} |", flush=True)


def cut(path: str, parts: int, workdir: str) -> list[str]:
    """``path`` cut into ``parts`` files of about equal size, each ending at a line end."""
    size, out = os.path.getsize(path), []
    with open(path, "rb") as fh:
        for k in range(parts):
            data = fh.read(size * (k + 1) // parts - fh.tell())
            data += fh.readline() if k < parts - 1 else fh.read()
            out.append(os.path.join(workdir, f"part{k}.txt"))
            with open(out[-1], "wb") as part:
                part.write(data)
    return out


def whole_run_rss(languages: list[str], vocab: int, workdir: str) -> str:
    """``bpe-fast parity`` under /usr/bin/time -v: its maximum resident set size (MiB), or why not."""
    if not os.path.exists("/usr/bin/time"):
        return "-"
    out = os.path.join(workdir, "parity.json")
    done = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "bpe_fast", "parity", *languages,
                           "--vocab-size", str(vocab), "-o", out, "--workers", "1", "--progress", "none",
                           "--memory-budget", "64G"], capture_output=True, text=True)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    return f"{int(peak.group(1)) / 1024:,.0f}" if done.returncode == 0 and peak else "failed"


def one_parity(vocab: int, languages: list[str]) -> None:
    """The plan and the peak resident memory from the plan on, for one run (a JSON line)."""
    import bpe_fast
    from bpe_fast import budget
    made = []
    plan_parity_merging = budget.plan_parity_merging

    def planned(*args, **kwargs):
        made.append(plan_parity_merging(*args, **kwargs))
        with open("/proc/self/clear_refs", "w") as fh:       # the peak from here on: the merging's
            fh.write("5")
        return made[-1]

    budget.plan_parity_merging = planned
    tok = bpe_fast.train_parity(languages, vocab, workers=1, progress="none", memory_budget=64 << 30)
    with open("/proc/self/status") as fh:
        peak = re.search(r"VmHWM:\s+(\d+) kB", fh.read())
    assert peak is not None, "no VmHWM in /proc/self/status"
    measured = int(peak.group(1)) * 1024
    plan = made[0]
    print(json.dumps(dict(merges=len(tok.merges), peak=plan.peak, process=plan.process, kernel=plan.kernel,
                          measured=measured)))


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
    if sys.argv[1:2] == ["--one-parity"]:
        return one_parity(int(sys.argv[2]), sys.argv[3:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", nargs="*", choices=["tree", "kernel", "parity"], default=[])
    ap.add_argument("--corpus", nargs="+", default=[])
    ap.add_argument("--make", metavar="DIR", help="make the corpora in DIR (kept; delete them after)")
    ap.add_argument("--vocab", default="32768", help="vocab sizes, comma separated (tree: the first)")
    ap.add_argument("--budgets", default="400M,300M")
    ap.add_argument("--split", type=int, default=0, metavar="K",
                    help="parity: cut the one corpus into K parts, each a language")
    args = ap.parse_args()
    corpora = args.corpus or (make(args.make) if args.make else [])
    vocabs = [int(v) for v in args.vocab.split(",")]
    with tempfile.TemporaryDirectory() as workdir:
        if "tree" in args.what:
            tree(corpora, vocabs[0], args.budgets.split(","), workdir)
        if "kernel" in args.what:
            kernel(corpora, vocabs, workdir)
        if "parity" in args.what:
            parity(corpora, args.split, vocabs, workdir)


if __name__ == "__main__":
    main()
