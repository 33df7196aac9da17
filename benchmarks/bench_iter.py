"""Iterators against files: ``train_from_iterator(docs)`` against ``train(files)`` on the same text.

    python benchmarks/bench_iter.py --corpus mix33 --repeats 5
    python benchmarks/bench_iter.py --corpus web-1g.txt --docs lines,pieces --repeats 3

Issue 19 asks that training from an iterator of str documents cost at most 1.25x training from
the files that hold the same text. Both are given the same text two ways (GPT-2 pattern,
Hugging Face's tie-break, vocab 32768, 2 workers, as bench_big's gigabpe task):

* ``lines``: every line a document. Files: ``train([file], V, lines=True)``. Iterator:
  ``train_from_iterator(open(file, encoding="utf-8", newline="\\n"), V)``, the file's lines as
  Python reads them (``newline="\\n"``: untranslated, so the very same text). The word tables
  are equal, and so are the merges (checked).
* ``pieces``: documents of about 64 KiB, cut where bpe_fast's own block reader may cut the
  file (after a newline between non-space characters: ``Splitter.cut``), so no chunk is split;
  the cuts are found before the timed runs, which read and decode the pieces. Files:
  ``train([file], V)`` (the file is one document). The tables are equal.

``--corpus mix33`` means the 33 MB benchmark mix (benchmarks/mix33.py) written into one
temporary file. Each (way, repeat) runs in a fresh interpreter, files and iterator alternating,
timed around the training call; the training's own stage times are reported too (its counting
includes reading the documents from the iterator). The parent samples the process tree's RSS
every 20 ms and reports its CPU time and that of every other process on the machine meanwhile
(benchmarks/proctree.py): on a shared machine compare ratios, not seconds. ``iterate`` is the
time the documents take to read with nothing done to them: the user's iterator's own cost,
which is inside the iterator's wall time and which no trainer can save.
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
from pathlib import Path

from bench_big import agreement  # noqa: E402  (benchmarks/ is on sys.path)
from mix33 import corpus_dir, mix33_files  # noqa: E402
from proctree import run_sampled  # noqa: E402

RESULT_MARK = "BENCH_RESULT "
PIECE_BYTES = 1 << 16
WAYS = ("files", "iterator")


def documents(path: str, docs: str, cuts: list[int]):
    """The file's text as documents: its lines, or its pieces between the byte offsets ``cuts``."""
    if docs == "lines":
        with open(path, encoding="utf-8", newline="\n") as fh:
            yield from fh
        return
    with open(path, "rb") as fh:
        for start, end in zip([0, *cuts], cuts):
            yield fh.read(end - start).decode("utf-8")


def piece_cuts(path: str) -> list[int]:
    """Where the pieces end: about every PIECE_BYTES, where bpe_fast's block reader may cut
    (found once, before any timing: the documents are given, not made, in the timed runs)."""
    from bpe_fast.counting.inputs import file_tasks
    from bpe_fast.pretokenize.splitter import Splitter
    return [t.end for t in file_tasks(path, os.path.getsize(path), Splitter.of("gpt2").cut, PIECE_BYTES)]


def train(way: str, path: str, docs: str, cuts: list[int], vocab_size: int, workers: int):
    import bpe_fast
    if way == "files":
        return bpe_fast.train([path], vocab_size, pattern="gpt2", tie_break="huggingface", lines=docs == "lines",
                              workers=workers, progress="none")
    return bpe_fast.train_from_iterator(documents(path, docs, cuts), vocab_size, pattern="gpt2",
                                        tie_break="huggingface", workers=workers, progress="none")


def run_one(args) -> None:
    cuts = json.loads(Path(args.cuts).read_text()) if args.cuts else []
    if args.one == "iterate":
        start = time.perf_counter()
        n = sum(1 for _ in documents(args.corpus, args.docs, cuts))
        print(RESULT_MARK + json.dumps({"seconds": time.perf_counter() - start, "documents": n}), flush=True)
        return
    start = time.perf_counter()
    tok = train(args.one, args.corpus, args.docs, cuts, args.vocab, args.workers)
    seconds = time.perf_counter() - start
    report = tok.training_report
    with open(args.merges_out, "wb") as fh:
        pickle.dump([tok.token_bytes(i) for i in tok.merge_ids.tolist()], fh)
    print(RESULT_MARK + json.dumps({"seconds": seconds, "stages": report.seconds, "distinct": report.unique_chunks}),
          flush=True)


def measure(way: str, args, out: str) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--one", way, "--corpus", args.corpus, "--docs", args.docs,
           "--vocab", str(args.vocab_size), "--workers", str(args.workers), "--merges-out", out,
           "--cuts", args.cuts]
    run = run_sampled(cmd)
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith(RESULT_MARK)]
    if run.returncode != 0 or not lines:
        sys.exit(f"{way} failed (exit {run.returncode}): {run.stderr.strip()[-3000:]}")
    result = json.loads(lines[-1][len(RESULT_MARK):])
    result.update(peak_mb=run.peak_tree_mb, cpu_s=run.child_cpu_s, other_s=max(run.other_cpu_s, 0.0))
    stages = ", ".join(f"{k} {v:.2f}" for k, v in result.get("stages", {}).items())
    print(f"  {args.docs} {way}: {result['seconds']:.2f} s ({stages}), CPU {run.child_cpu_s:.1f} s, peak "
          f"{run.peak_tree_mb:.0f} MB, other processes {result['other_s']:.1f} s", file=sys.stderr, flush=True)
    return result


def compare(args, tmp: str) -> dict:
    """Files and iterator alternating, args.repeats times each; then the documents read alone."""
    runs: dict[str, list[dict]] = {way: [] for way in (*WAYS, "iterate")}
    outs = {way: os.path.join(tmp, f"{way}.pickle") for way in WAYS}
    for _ in range(args.repeats):
        for way in WAYS:
            runs[way].append(measure(way, args, outs[way]))
    runs["iterate"].append(measure("iterate", args, ""))
    merges = {}
    for way in WAYS:
        with open(outs[way], "rb") as fh:
            merges[way] = pickle.load(fh)
    return {"runs": runs, "agree": agreement(merges["iterator"], merges["files"])}


def median(runs: list[dict], key: str, stage: str | None = None) -> float:
    return statistics.median(r["stages"][stage] if stage else r[key] for r in runs)


def print_row(name: str, docs: str, result: dict) -> None:
    files, it = result["runs"]["files"], result["runs"]["iterator"]
    wall = [median(files, "seconds"), median(it, "seconds")]
    count = [median(files, "", "counting"), median(it, "", "counting")]
    cpu = [median(files, "cpu_s"), median(it, "cpu_s")]
    peak = [max(r["peak_mb"] for r in files), max(r["peak_mb"] for r in it)]
    other = max(r["other_s"] for r in files + it)
    print(f"| {name} | {docs} | {wall[0]:.2f} | {wall[1]:.2f} | **{wall[1] / wall[0]:.2f}x** | {count[0]:.2f} | "
          f"{count[1]:.2f} | {count[1] / count[0]:.2f}x | {cpu[0]:.1f} | {cpu[1]:.1f} | {peak[0]:.0f} | "
          f"{peak[1]:.0f} | {median(result['runs']['iterate'], 'seconds'):.2f} | {other:.1f} | {result['agree']} |",
          flush=True)


def mix33_file(tmp: str) -> str:
    path = os.path.join(tmp, "mix33.txt")
    with open(path, "wb") as out:
        for f in mix33_files(corpus_dir()):
            out.write(f.read_bytes())
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", required=True,
                    help="a UTF-8 text file, or mix33 (the benchmark mix); may be given more than once")
    ap.add_argument("--docs", default="lines,pieces", help="what a document is: lines, pieces, or both (default)")
    ap.add_argument("--vocab-size", type=int, default=32768)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--vocab", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--merges-out", help=argparse.SUPPRESS)
    ap.add_argument("--cuts", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        args.corpus = args.corpus[0]
        return run_one(args)
    print(f"GPT-2 pattern, Hugging Face ties, vocab {args.vocab_size}, {args.workers} workers, {args.repeats} "
          f"repeat(s) alternating: median wall and CPU, max peak tree RSS; ratio = iterator / files\n")
    print("| corpus | documents | files s | iterator s | ratio | counting: files s | iterator s | ratio | "
          "CPU files s | CPU iterator s | peak MB files | peak MB iterator | iterate alone s | other CPU s (max) | "
          "merges (iterator vs files) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for corpus in args.corpus:
            path = mix33_file(tmp) if corpus == "mix33" else corpus
            for docs in args.docs.split(","):
                cuts = os.path.join(tmp, "cuts.json")
                Path(cuts).write_text(json.dumps(piece_cuts(path) if docs == "pieces" else []))
                one = argparse.Namespace(**{**vars(args), "corpus": path, "docs": docs, "cuts": cuts})
                print_row(Path(corpus).name, docs, compare(one, tmp))


if __name__ == "__main__":
    main()
