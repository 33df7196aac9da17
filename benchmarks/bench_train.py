"""Training benchmark: bpe_fast against rustbpe, HF tokenizers and bpeasy on the "mix33" corpus.

    python benchmarks/bench_train.py --repeats 3 --markdown      # from the project root, in its venv

The corpus is big.txt, tinyshakespeare.txt, code_python.txt and multilingual/*.txt (sorted by
name), in that order, from the shared corpora directory: `--corpus-dir DIR`, else
`$BPE_FAST_DATA/corpora`, else `../shared/corpora` beside the project root. Every library gets
the same stream of documents: each file opened as UTF-8 text and read 65536 characters at a time;
the corpus is never held in one string.

Each (library, repeat) runs in a fresh interpreter (this script with `--one LIB`), one after the
other. The child times only its training call, document streaming included. Meanwhile the parent
samples, every 20 ms, the summed VmRSS of the child and all its descendants (found by scanning
the ppid field of /proc/*/stat), so the worker processes of bpe_fast count too; the same sampler
is used for every library. The child also reports its own ru_maxrss, for reference.
Summed RSS counts pages shared between a forked parent and its workers once per process.

Timings are only as good as the machine is idle: the second table gives, per run, the CPU time
of the child's tree, of the sampler, and of every other process on the machine meanwhile (busy
time from /proc/stat minus those two); a large "other" figure means another job competed.

Options: --vocab-size (32768), --repeats (3), --libs bpe_fast,rustbpe,hf,bpeasy, --markdown.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mix33 import corpus_dir, mix33_files  # noqa: E402  (benchmarks/ is on sys.path)
from proctree import run_sampled  # noqa: E402

PROJECT_ROOT = Path(__file__).resolve().parents[1]
LIBS = ("bpe_fast", "rustbpe", "hf", "bpeasy")
PATTERNS = {"bpe_fast": "cl100k", "rustbpe": "cl100k", "bpeasy": "cl100k",
            "hf": "gpt2 (HF ByteLevel; cannot take cl100k)"}
DOC_CHARS = 65536
RESULT_MARK = "BENCH_RESULT "
IMPORT_ERROR_EXIT = 3


# -- corpus -----------------------------------------------------------------------------------
def documents(files: list[Path], stats: dict):
    """Yield each file in pieces of DOC_CHARS characters; counts documents and characters."""
    for path in files:
        with open(path, encoding="utf-8") as fh:
            while piece := fh.read(DOC_CHARS):
                stats["docs"] += 1
                stats["chars"] += len(piece)
                yield piece


# -- the four trainers (child side) ----------------------------------------------------------
def import_trainer(lib: str, cl100k: str):
    """Import lib and return train(docs, vocab_size) -> its vocabulary ({token bytes: rank}).

    cl100k is bpe_fast.CL100K, passed in by the parent so that the other libraries' processes
    do not import bpe_fast (and NumPy) and pay for its memory.
    """
    if lib == "bpe_fast":
        import bpe_fast
        return lambda docs, n: bpe_fast.train_from_iterator(
            docs, n, pattern="cl100k", progress="none").mergeable_ranks()
    if lib == "rustbpe":
        import rustbpe

        def train_rustbpe(docs, n):
            tok = rustbpe.Tokenizer()
            tok.train_from_iterator(docs, n, pattern=cl100k)
            return dict(tok.get_mergeable_ranks())
        return train_rustbpe
    if lib == "hf":
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers

        def train_hf(docs, n):
            tok = Tokenizer(models.BPE())
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            trainer = trainers.BpeTrainer(vocab_size=n, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                          show_progress=False, special_tokens=[])
            tok.train_from_iterator(docs, trainer)
            return tok.get_vocab()  # byte-level unicode strings, not bytes: not compared
        return train_hf
    if lib == "bpeasy":
        import bpeasy
        return lambda docs, n: bpeasy.train_bpe(docs, cl100k, 10**6, n)
    raise ValueError(f"unknown library {lib!r}")


def run_one(lib: str, args, files: list[Path]) -> None:
    """Child process: train once, print one RESULT_MARK line of JSON."""
    t_import = time.perf_counter()
    try:
        train = import_trainer(lib, args.cl100k)
    except ImportError as exc:
        print(f"cannot import {lib}: {exc}", file=sys.stderr)
        sys.exit(IMPORT_ERROR_EXIT)
    import_s = time.perf_counter() - t_import
    stats = {"docs": 0, "chars": 0}
    t0 = time.perf_counter()
    ranks = train(documents(files, stats), args.vocab_size)
    train_s = time.perf_counter() - t0
    if args.ranks_out:
        with open(args.ranks_out, "wb") as fh:
            pickle.dump(ranks, fh)
    kb = 1024
    print(RESULT_MARK + json.dumps({
        "train_s": train_s, "import_s": import_s, "vocab": len(ranks), **stats,
        "maxrss_self_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / kb,
        "maxrss_children_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / kb}), flush=True)


# -- running a child under the process-tree sampler (parent side) -----------------------------
def run_child(lib: str, args, ranks_out: str, sample_s: float) -> dict:
    """Run `--one lib` in a fresh interpreter, sampling its tree's RSS; return its result."""
    cmd = [sys.executable, os.path.abspath(__file__), "--one", lib, "--vocab-size", str(args.vocab_size),
           "--corpus-dir", str(args.corpus_dir), "--ranks-out", ranks_out, "--cl100k", args.cl100k]
    run = run_sampled(cmd, sample_s)
    if run.returncode == IMPORT_ERROR_EXIT:
        return {"import_error": run.stderr.strip()}
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith(RESULT_MARK)]
    if run.returncode != 0 or not lines:
        return {"error": f"exit {run.returncode}: {run.stderr.strip()[-2000:]}"}
    result = json.loads(lines[-1][len(RESULT_MARK):])
    result.update(peak_tree_mb=run.peak_tree_mb, process_s=run.process_s, child_cpu_s=run.child_cpu_s,
                  sampler_cpu_s=run.sampler_cpu_s, other_cpu_s=run.other_cpu_s)
    return result


# -- comparing vocabularies ------------------------------------------------------------------
def load_ranks(path: str) -> dict[bytes, int]:
    with open(path, "rb") as fh:
        return pickle.load(fh)


def first_difference(ranks: dict[bytes, int], ref: dict[bytes, int]) -> str:
    if ranks == ref:
        return "yes"
    mine, theirs = ({i: b for b, i in r.items()} for r in (ranks, ref))
    for i in range(max(len(mine), len(theirs))):
        if mine.get(i) != theirs.get(i):
            return f"no (first difference at id {i}: {mine.get(i)!r} vs {theirs.get(i)!r})"
    return "no"


def agreement(lib: str, ranks: dict, all_ranks: dict) -> str:
    if lib == "hf":
        return "n/a (other pattern)"
    if lib == "rustbpe":
        return "(reference)"
    if "rustbpe" not in all_ranks:
        return "n/a (rustbpe not run)"
    return first_difference(ranks, all_ranks["rustbpe"])


# -- benchmark driver ------------------------------------------------------------------------
def bench_lib(lib: str, args, tmpdir: str) -> dict | None:
    """All repeats of one library; None if it cannot be imported or fails."""
    runs, first_ranks, deterministic = [], None, True
    for rep in range(args.repeats):
        ranks_out = os.path.join(tmpdir, f"{lib}.pickle")
        result = run_child(lib, args, ranks_out, args.sample_ms / 1000)
        if "import_error" in result or "error" in result:
            print(f"skipping {lib}: {result.get('import_error') or result.get('error')}", file=sys.stderr)
            return None
        ranks = load_ranks(ranks_out)
        if first_ranks is None:
            first_ranks = ranks
        deterministic &= ranks == first_ranks
        runs.append(result)
        print(f"  {lib} run {rep + 1}/{args.repeats}: train {result['train_s']:.2f} s, "
              f"peak tree RSS {result['peak_tree_mb']:.0f} MB, CPU {result['child_cpu_s']:.1f} s, "
              f"other processes' CPU {max(result['other_cpu_s'], 0):.1f} s", file=sys.stderr)
    return summarize(runs, first_ranks, deterministic)


def summarize(runs: list[dict], ranks: dict | None, deterministic: bool) -> dict:
    return {
        "wall_s": statistics.median(r["train_s"] for r in runs),
        "rss_mb": max(r["peak_tree_mb"] for r in runs),
        "import_s": statistics.median(r["import_s"] for r in runs),
        "process_s": statistics.median(r["process_s"] for r in runs),
        "maxrss_self_mb": max(r["maxrss_self_mb"] for r in runs),
        "maxrss_children_mb": max(r["maxrss_children_mb"] for r in runs),
        "cpu_s": statistics.median(r["child_cpu_s"] for r in runs),
        "sampler_cpu_s": max(r["sampler_cpu_s"] for r in runs),
        "other_cpu_s": max(r["other_cpu_s"] for r in runs),
        "vocab": runs[0]["vocab"], "docs": runs[0]["docs"], "chars": runs[0]["chars"],
        "ranks": ranks, "deterministic": deterministic,
    }


def ratio(value: float, ref: dict | None, key: str) -> str:
    return f"{value / ref[key]:.2f}x" if ref else "n/a"


def main_rows(results: dict) -> list[list[str]]:
    ref = results.get("rustbpe")
    all_ranks = {lib: r["ranks"] for lib, r in results.items()}
    rows = []
    for lib, r in results.items():
        agree = agreement(lib, r["ranks"], all_ranks)
        if not r["deterministic"]:
            agree += " (repeats differ!)"
        rows.append([lib, PATTERNS[lib], f"{r['wall_s']:.2f}", ratio(r["wall_s"], ref, "wall_s"),
                     f"{r['rss_mb']:.0f}", ratio(r["rss_mb"], ref, "rss_mb"), agree])
    return rows


def extra_rows(results: dict) -> list[list[str]]:
    return [[lib, str(r["vocab"]), f"{r['import_s']:.2f}", f"{r['process_s']:.2f}", f"{r['cpu_s']:.1f}",
             f"{r['maxrss_self_mb']:.0f}", f"{r['maxrss_children_mb']:.0f}",
             f"{r['sampler_cpu_s']:.1f}", f"{max(r['other_cpu_s'], 0):.1f}"] for lib, r in results.items()]


MAIN_HEADER = ["library", "pattern", "median wall s", "wall ratio to rustbpe", "peak tree RSS MB",
               "RSS ratio to rustbpe", "merges agree with rustbpe"]
EXTRA_HEADER = ["library", "vocab", "median import s", "median process s (start to exit)",
                "median CPU s (tree)", "ru_maxrss self MB", "ru_maxrss children MB",
                "sampler CPU s (max)", "other processes' CPU s (max)"]


def format_table(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = [header, ["---"] * len(header)] + rows
        return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)
    widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                     for row in [header] + rows)


def report(results: dict, args, files: list[Path]) -> None:
    first = next(iter(results.values()))
    print(f"mix33: {len(files)} files from {os.path.relpath(args.corpus_dir, PROJECT_ROOT)}, "
          f"{first['docs']} documents, {first['chars']:,} characters; vocab_size {args.vocab_size}; "
          f"{args.repeats} repeats (median wall, max peak RSS); RSS sampled every {args.sample_ms} ms "
          f"over the process tree")
    print()
    print(format_table(MAIN_HEADER, main_rows(results), args.markdown))
    print()
    print(format_table(EXTRA_HEADER, extra_rows(results), args.markdown))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab-size", type=int, default=32768)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--libs", default=",".join(LIBS), help="comma-separated subset of " + ",".join(LIBS))
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--corpus-dir", help="the shared corpora directory (default: see module docstring)")
    parser.add_argument("--sample-ms", type=float, default=20.0, help="RSS sampling interval")
    parser.add_argument("--one", choices=LIBS, help=argparse.SUPPRESS)  # child mode
    parser.add_argument("--ranks-out", help=argparse.SUPPRESS)
    parser.add_argument("--cl100k", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.corpus_dir = corpus_dir(args.corpus_dir)
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    files = mix33_files(args.corpus_dir)
    if args.one:
        return run_one(args.one, args, files)
    libs = [lib.strip() for lib in args.libs.split(",") if lib.strip()]
    unknown = set(libs) - set(LIBS)
    if unknown:
        sys.exit(f"unknown libraries: {sorted(unknown)}; choose from {LIBS}")
    try:  # the project under test; its pattern string is given to every cl100k trainer
        from bpe_fast import CL100K
    except ImportError as exc:
        sys.exit(f"cannot import bpe_fast, whose CL100K pattern every trainer uses: {exc}")
    args.cl100k = CL100K
    results = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        for lib in libs:
            summary = bench_lib(lib, args, tmpdir)
            if summary is not None:
                results[lib] = summary
    if not results:
        sys.exit("no library ran")
    report(results, args, files)


if __name__ == "__main__":
    main()
