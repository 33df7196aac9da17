"""Scaling study: training time against corpus size and against vocabulary size.

    python benchmarks/scaling.py              # full sweep (from the project root, in its venv)
    python benchmarks/scaling.py --quick      # a small one, for a try
    python benchmarks/scaling.py --plot-only  # redraw the charts from the committed CSVs, no training

Libraries: bpe_fast, and rustbpe and HF tokenizers where installed (a library that cannot be
imported is left out, with a message). bpe_fast and rustbpe split with the cl100k pattern; HF's
ByteLevel pre-tokenizer cannot take it and uses its GPT-2-like split.

Corpus: "mix33" -- big.txt, tinyshakespeare.txt, code_python.txt, then multilingual/*.txt sorted
by name -- from --corpus-dir, else $BPE_FAST_DATA/corpora, else ../shared/corpora beside the
project. Every library gets the same documents: the files read in binary, in pieces of 65,536
bytes (extended to a UTF-8 character boundary) and decoded, stopping once the size of the sweep
point is reached; the corpus is never held in one string.

Sweeps (the full one; --quick is smaller):
* corpus size: 1, 2, 4, 8, 16 MB and the whole of mix33, at vocab size 8192;
* vocab size: 1k, 2k, 4k, 8k, 16k, 32k, 64k, 100k, on the whole of mix33.
Each measurement runs in a fresh interpreter (this script with --one), one after another; the
child times only the training call, document reading included. Results go to benchmarks/out/
(CSV and PNG, git-ignored); after a full sweep the CSVs and the two charts are also copied to
benchmarks/ (scaling_corpus.csv/.png, scaling_vocab.csv/.png), where ``--plot-only`` reads them.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from charts import library_name, plain_log_axes  # noqa: E402  (benchmarks/ is on sys.path)
from mix33 import corpus_dir, mix33_files  # noqa: E402

HERE = Path(__file__).resolve().parent
PROJECT_ROOT = HERE.parent
OUT = HERE / "out"
LIBS = ("bpe_fast", "rustbpe", "hf")
PIECE_BYTES = 65536
MB = 1_000_000
RESULT_MARK = "SCALING_RESULT "
IMPORT_ERROR_EXIT = 3

FULL: dict[str, Any] = {"sizes_mb": [1, 2, 4, 8, 16, None], "size_vocab": 8192,
        "vocabs": [1000, 2000, 4000, 8000, 16000, 32000, 64000, 100000], "vocab_mb": None}
QUICK: dict[str, Any] = {"sizes_mb": [1, 2, 4], "size_vocab": 4096, "vocabs": [1000, 4000, 16000], "vocab_mb": 4}


# -- corpus --------------------------------------------------------------------------------------
def read_piece(fh) -> bytes:
    """Up to PIECE_BYTES bytes, extended to the end of a UTF-8 character."""
    data = fh.read(PIECE_BYTES)
    return data + fh.read(missing_bytes(data)) if data else data


def missing_bytes(data: bytes) -> int:
    """How many bytes the last UTF-8 character of ``data`` still lacks (0 if it is whole)."""
    start = len(data) - 1
    while start > 0 and len(data) - start < 4 and 0x80 <= data[start] < 0xC0:
        start -= 1  # back over continuation bytes to the lead byte
    lead = data[start]
    width = 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return max(0, width - (len(data) - start))


def documents(files: list[Path], limit_bytes: int | None, stats: dict):
    """The corpus as documents of ~64 KB, stopping after limit_bytes (None: all of it)."""
    for path in files:
        with open(path, "rb") as fh:
            while data := read_piece(fh):
                if limit_bytes is not None and stats["bytes"] + len(data) > limit_bytes:
                    data = data[:limit_bytes - stats["bytes"]].decode("utf-8", "ignore").encode("utf-8")
                stats["bytes"] += len(data)
                stats["docs"] += 1
                yield data.decode("utf-8")
                if limit_bytes is not None and stats["bytes"] >= limit_bytes:
                    return


# -- one training run (child side) ------------------------------------------------------------------
def trainer(lib: str):
    """train(docs, vocab_size) -> number of tokens learned, for one library."""
    if lib == "bpe_fast":
        import bpe_fast

        def train_bpe_fast(docs, n):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # VocabSizeWarning when a small corpus runs out of pairs
                return bpe_fast.train_from_iterator(docs, n, pattern="cl100k", progress="none").vocab_size
        return train_bpe_fast
    if lib == "rustbpe":
        import rustbpe
        from bpe_fast import CL100K

        def train_rustbpe(docs, n):
            tok = rustbpe.Tokenizer()
            tok.train_from_iterator(docs, n, pattern=CL100K)
            return tok.vocab_size
        return train_rustbpe
    if lib == "hf":
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers

        def train_hf(docs, n):
            tok = Tokenizer(models.BPE())
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            tok.train_from_iterator(docs, trainers.BpeTrainer(
                vocab_size=n, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                show_progress=False, special_tokens=[]))
            return tok.get_vocab_size()
        return train_hf
    raise ValueError(f"unknown library {lib!r}")


def run_one(lib: str, vocab_size: int, limit_bytes: int | None, files: list[Path]) -> None:
    try:
        train = trainer(lib)
    except ImportError as exc:
        print(f"cannot import {lib}: {exc}", file=sys.stderr)
        sys.exit(IMPORT_ERROR_EXIT)
    stats = {"docs": 0, "bytes": 0}
    start = time.perf_counter()
    learned = train(documents(files, limit_bytes, stats), vocab_size)
    seconds = time.perf_counter() - start
    print(RESULT_MARK + json.dumps({"seconds": seconds, "vocab_learned": learned, **stats}), flush=True)


# -- the sweeps (parent side) ---------------------------------------------------------------------
def measure(lib: str, vocab_size: int, limit_bytes: int | None, args) -> dict | None:
    """Median of args.repeats fresh-process runs; None if the library is not installed."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", lib, "--vocab-size", str(vocab_size),
           "--corpus-dir", str(args.corpus_dir)]
    if limit_bytes is not None:
        cmd += ["--max-bytes", str(limit_bytes)]
    results = []
    for _ in range(args.repeats):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode == IMPORT_ERROR_EXIT:
            return None
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT_MARK)]
        if proc.returncode != 0 or not lines:
            raise RuntimeError(f"{lib} failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
        results.append(json.loads(lines[-1][len(RESULT_MARK):]))
    row = dict(results[0], seconds=statistics.median(r["seconds"] for r in results), runs=len(results))
    return row


def sweep(kind: str, points: list[tuple[int | None, int]], libs: list[str], args) -> list[dict]:
    """Measure every library at every (limit_bytes, vocab_size) point."""
    rows, missing = [], set()
    for limit_bytes, vocab_size in points:
        for lib in libs:
            if lib in missing:
                continue
            result = measure(lib, vocab_size, limit_bytes, args)
            if result is None:
                print(f"{lib} is not installed: left out", file=sys.stderr)
                missing.add(lib)
                continue
            row = {"sweep": kind, "library": lib, "corpus_bytes": result["bytes"], "documents": result["docs"],
                   "vocab_size": vocab_size, "vocab_learned": result["vocab_learned"],
                   "seconds": round(result["seconds"], 4), "runs": result["runs"]}
            print(f"  {kind}: {lib:8s} {row['corpus_bytes'] / MB:7.1f} MB  vocab {vocab_size:6d} "
                  f"-> {row['seconds']:8.2f} s", file=sys.stderr, flush=True)
            rows.append(row)
    return rows


def write_csv(rows: list[dict], path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def read_csv(path: Path) -> list[dict]:
    """Rows as write_csv wrote them, numbers as numbers."""
    with open(path, newline="", encoding="utf-8") as fh:
        return [{k: v if k in ("sweep", "library") else float(v) if k == "seconds" else int(v) for k, v in row.items()}
                for row in csv.DictReader(fh)]


def plot(rows: list[dict], x: str, xlabel: str, title: str, path: Path):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for lib in dict.fromkeys(r["library"] for r in rows):
        mine = [r for r in rows if r["library"] == lib]
        xs = [r[x] / MB if x == "corpus_bytes" else r[x] for r in mine]
        ax.plot(xs, [r["seconds"] for r in mine], marker="o", label=library_name(lib))
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_axes(ax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("training seconds (log scale)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.savefig(path, dpi=110)
    return fig


def plot_corpus(rows: list[dict], folder: Path) -> str:
    vocab = rows[0]["vocab_size"]
    plot(rows, "corpus_bytes", "corpus size, MB (log scale)",
         f"training time against corpus size (mix33 prefixes, vocab {vocab:,})", folder / "scaling_corpus.png")
    return f"vocab size {vocab:,}\n\n" + markdown(rows, "corpus_bytes")


def plot_vocab(rows: list[dict], folder: Path, corpus: str) -> str:
    plot(rows, "vocab_size", "vocab size (log scale)",
         f"training time against vocab size ({corpus}, {rows[0]['corpus_bytes'] / MB:.1f} MB)",
         folder / "scaling_vocab.png")
    return f"{corpus}\n\n" + markdown(rows, "vocab_size")


def plot_only() -> None:
    """Redraw benchmarks/scaling_*.png from benchmarks/scaling_*.csv (no training)."""
    tables = []
    for name in ("scaling_corpus", "scaling_vocab"):
        if not (HERE / f"{name}.csv").is_file():
            sys.exit(f"{HERE.name}/{name}.csv not found: run a full sweep first")
    tables.append(plot_corpus(read_csv(HERE / "scaling_corpus.csv"), HERE))
    tables.append(plot_vocab(read_csv(HERE / "scaling_vocab.csv"), HERE, "all of mix33"))
    print("\n\n".join(tables))
    print(f"charts redrawn in {HERE.name}/ from its CSVs", file=sys.stderr)


def markdown(rows: list[dict], x: str) -> str:
    libs = list(dict.fromkeys(r["library"] for r in rows))
    keys = list(dict.fromkeys(r[x] if x == "vocab_size" else r["corpus_bytes"] for r in rows))
    header = ["corpus MB" if x == "corpus_bytes" else "vocab size"] + [f"{library_name(lib)} s" for lib in libs]
    lines = ["| " + " | ".join(header) + " |", "|" + "---:|" * len(header)]
    for key in keys:
        cells = [f"{key / MB:.1f}" if x == "corpus_bytes" else f"{key:,}"]
        for lib in libs:
            hit = [r for r in rows if r["library"] == lib and r[x] == key]
            cells.append(f"{hit[0]['seconds']:.2f}" if hit else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small sweep (minutes, not tens of minutes)")
    parser.add_argument("--libs", default=",".join(LIBS), help="comma-separated subset of " + ",".join(LIBS))
    parser.add_argument("--repeats", type=int, default=1, help="fresh-process runs per point (median)")
    parser.add_argument("--only", choices=("corpus", "vocab"), help="run one of the two sweeps")
    parser.add_argument("--corpus-dir", help="the shared corpora directory (default: see the docstring)")
    parser.add_argument("--plot-only", action="store_true",
                        help="redraw the charts from benchmarks/scaling_*.csv (written by a full sweep); no training")
    parser.add_argument("--one", choices=LIBS, help=argparse.SUPPRESS)        # child mode
    parser.add_argument("--vocab-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--max-bytes", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.plot_only:
        return args
    args.corpus_dir = corpus_dir(args.corpus_dir)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.plot_only:
        return plot_only()
    files = mix33_files(args.corpus_dir)
    if args.one:
        return run_one(args.one, args.vocab_size, args.max_bytes, files)
    libs = [lib.strip() for lib in args.libs.split(",") if lib.strip()]
    if set(libs) - set(LIBS):
        sys.exit(f"unknown libraries {sorted(set(libs) - set(LIBS))}; choose from {', '.join(LIBS)}")
    plan = QUICK if args.quick else FULL
    OUT.mkdir(exist_ok=True)
    total = sum(f.stat().st_size for f in files)
    print(f"mix33: {len(files)} files, {total:,} bytes, from {os.path.relpath(args.corpus_dir, PROJECT_ROOT)}",
          file=sys.stderr)
    tables, charts = [], []
    if args.only in (None, "corpus"):
        points = [(mb * MB if mb else None, plan["size_vocab"]) for mb in plan["sizes_mb"]]
        rows = sweep("corpus", points, libs, args)
        write_csv(rows, OUT / "scaling_corpus.csv")
        tables.append(plot_corpus(rows, OUT))
        charts += ["scaling_corpus.png", "scaling_corpus.csv"]
    if args.only in (None, "vocab"):
        limit = plan["vocab_mb"] * MB if plan["vocab_mb"] else None
        rows = sweep("vocab", [(limit, v) for v in plan["vocabs"]], libs, args)
        write_csv(rows, OUT / "scaling_vocab.csv")
        corpus = f"first {plan['vocab_mb']} MB of mix33" if limit else "all of mix33"
        tables.append(plot_vocab(rows, OUT, corpus))
        charts += ["scaling_vocab.png", "scaling_vocab.csv"]
    if not args.quick:
        for name in charts:        # only this run's charts and CSVs: never a stale one from benchmarks/out
            shutil.copy(OUT / name, HERE / name)
    print("\n\n".join(tables))
    print(f"\nCSV and PNG in {OUT}" + ("" if args.quick else f"; charts and CSVs copied to {HERE}"), file=sys.stderr)


if __name__ == "__main__":
    main()
