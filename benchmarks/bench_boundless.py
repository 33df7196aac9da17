"""BoundlessBPE against plain BPE and SuperBPE at equal vocabulary size: bytes per token on
held-out text, and what each training costs (issue 20).

    python benchmarks/bench_boundless.py --vocab-sizes 8192,16384,32768 --at 0.8
    python benchmarks/bench_boundless.py --cost --sizes 16384:13107,32768:26214 --repeats 3

Bytes per token (the default): ``--text natural``, big.txt and every multilingual/*.txt of the
shared corpora, or ``--text english``, big.txt, tinyshakespeare.txt and the-verdict.txt (English,
as the papers' MiniPile); each file's last 10% (cut at a line end) is held out, the rest is
written to ``--work-dir`` and trained on (each file one document). For each vocab size V: plain BPE
(cl100k), SuperBPE (``superword_at=T``, stage two with patterns.SUPERWORD) and BoundlessBPE
(``superword="boundless", superword_at=T``), T = ``--at`` x V, and BoundlessBPE with
``superword_at="auto"`` (T found by paper 2's interleaving). Prints bytes per token of all the
held-out text (higher is better), the gain over plain, the supermerges' share of the vocabulary
and each training's seconds; then bytes per token per held-out file at the largest V. Every
tokenizer must round-trip every held-out file.

Cost (``--cost``): ``train(files, V)``, ``train(files, V, superword_at=T)``,
``train(files, V, superword="boundless", superword_at=T)`` and the same with
``superword_at="auto"``, each in a fresh process (fresh_training.train_once: its CPU and that of every
other process on the machine meanwhile), alternating, ``--repeats`` times, on the texts ``--texts``
names (by default all): the long-tail slice the work was tuned on (make_corpus.py's mutated kind,
seed 0), each make_corpus.py generator at ``--seed``, all of ``--longtail-size`` (written once
into ``--work-dir``), and the natural text (big.txt + multilingual/*.txt, whole).
Prints median wall seconds, their ratios to plain, median CPU seconds of each process tree, the
stages (bpe_fast's summaries: counting, merging; then runs and supermerging, or SuperBPE's
second counting and merging), the others' CPU and the peak memory.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import bpe_fast
from mix33 import corpus_dir  # noqa: E402  (benchmarks/ is on sys.path)
from fresh_training import alternating, cost_texts, median_of, stage_cells

KINDS = ("plain", "superbpe", "boundless", "auto")
TITLES = {"plain": "plain", "superbpe": "SuperBPE", "boundless": "BoundlessBPE", "auto": "Boundless auto"}


def options_of(kind: str, at: int) -> dict[str, object]:
    """What each kind passes to bpe_fast.train besides the files and the vocab size."""
    options: dict[str, dict[str, object]] = {
        "plain": {}, "superbpe": {"superword_at": at}, "boundless": {"superword_at": at, "superword": "boundless"},
        "auto": {"superword_at": "auto", "superword": "boundless"}}
    return options[kind]


def natural_files(corpora: Path) -> list[Path]:
    return [corpora / "big.txt", *sorted((corpora / "multilingual").glob("*.txt"))]


def english_files(corpora: Path) -> list[Path]:
    return [corpora / "big.txt", corpora / "tinyshakespeare.txt", corpora / "the-verdict.txt"]


def split_held_out(files: list[Path], work_dir: Path) -> tuple[list[Path], dict[str, str]]:
    """Each file's first 90% (to a line end) written to work_dir, and its last 10% by name."""
    work_dir.mkdir(parents=True, exist_ok=True)
    train, held = [], {}
    for path in files:
        text = path.read_bytes().decode("utf-8")
        cut = text.rfind("\n", 0, int(len(text) * 0.9)) + 1 or int(len(text) * 0.9)
        out = work_dir / f"train-{path.name}"
        out.write_text(text[:cut], encoding="utf-8")
        train.append(out)
        held[path.name] = text[cut:]
    return train, held


def train_kind(files: list[Path], vocab: int, at: int, kind: str) -> tuple[bpe_fast.Tokenizer, float]:
    t0 = time.perf_counter()
    if kind == "plain":
        tok = bpe_fast.train(files, vocab, progress="none")
    elif kind == "superbpe":
        tok = bpe_fast.train(files, vocab, superword_at=at, progress="none")
    elif kind == "boundless":
        tok = bpe_fast.train(files, vocab, superword="boundless", superword_at=at, progress="none")
    else:
        tok = bpe_fast.train(files, vocab, superword="boundless", superword_at="auto", progress="none")
    return tok, time.perf_counter() - t0


def quality(args) -> None:
    corpora = corpus_dir(args.corpus_dir)
    files = natural_files(corpora) if args.text == "natural" else english_files(corpora)
    train, held = split_held_out(files, Path(args.work_dir) / f"held-out-{args.text}")
    held_bytes = {name: len(text.encode("utf-8")) for name, text in held.items()}
    total = sum(held_bytes.values())
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    print(f"{args.text} text: training on {sum(p.stat().st_size for p in train):,} bytes in {len(train)} files; "
          f"held out {total:,} bytes (the last 10% of each); T = {args.at:g} x V\n")
    print("| V | T | plain B/token | SuperBPE B/token | BoundlessBPE B/token | Boundless auto B/token | "
          "SuperBPE gain | BoundlessBPE gain | Boundless auto gain | supermerges at T (auto: its T) | "
          "train s plain / SuperBPE / Boundless / auto |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    per_file: dict[str, dict[str, int]] = {}
    for vocab in [int(v) for v in args.vocab_sizes.split(",")]:
        at = int(vocab * args.at)
        counts: dict[str, dict[str, int]] = {}
        seconds: dict[str, float] = {}
        toks: dict[str, bpe_fast.Tokenizer] = {}
        for kind in KINDS:
            tok, seconds[kind] = train_kind(train, vocab, at, kind)
            toks[kind] = tok
            counts[kind] = {}
            for name, text in held.items():
                ids = tok.encode_ordinary(text)
                if tok.decode(ids) != text:
                    sys.exit(f"round trip failed: {kind} at {vocab} on {name}")
                counts[kind][name] = len(ids)
        per_file = {name: {kind: counts[kind][name] for kind in KINDS} for name in held}
        bpt = {kind: total / sum(counts[kind].values()) for kind in KINDS}
        supers, auto = len(toks["boundless"].supermerges), len(toks["auto"].supermerges)
        gains = " | ".join(f"{bpt[k] / bpt['plain'] - 1:+.1%}" for k in KINDS[1:])
        print(f"| {vocab:,} | {at:,} | {' | '.join(f'{bpt[k]:.3f}' for k in KINDS)} | {gains} | "
              f"{supers:,} ({supers / vocab:.1%}); auto {auto:,} ({auto / vocab:.1%}, T = {vocab - auto:,}) | "
              f"{' / '.join(f'{seconds[k]:.1f}' for k in KINDS)} |", flush=True)
    print(f"\nBytes per token per held-out file at V = {vocab:,}:\n")
    print("| file | bytes | plain | SuperBPE | BoundlessBPE | Boundless auto | BoundlessBPE gain | auto gain |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, n in per_file.items():
        b = {kind: held_bytes[name] / n[kind] for kind in KINDS}
        print(f"| {name} | {held_bytes[name]:,} | {' | '.join(f'{b[k]:.3f}' for k in KINDS)} | "
              f"{b['boundless'] / b['plain'] - 1:+.1%} | {b['auto'] / b['plain'] - 1:+.1%} |")
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def cost(args) -> None:
    corpora = corpus_dir(args.corpus_dir)
    kinds = cost_texts(Path(args.work_dir), args.longtail_size, args.seed,
                       [str(p) for p in natural_files(corpora)])
    wanted = args.texts.split(",")
    if not set(wanted) <= set(kinds):
        sys.exit(f"--texts: give some of {', '.join(kinds)}, not {args.texts}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs\n")
    print("| text | MB | V | T | plain s | SuperBPE s (x plain) | Boundless s (x plain) | auto s (x plain) | "
          "CPU s plain / SuperBPE / Boundless / auto (Boundless x plain) | plain stages | Boundless stages | "
          "others' CPU s | peak MB plain / SuperBPE / Boundless / auto |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|---|")
    for kind in wanted:
        files = kinds[kind]()
        megabytes = sum(os.path.getsize(f) for f in files) / 1e6
        for size in args.sizes.split(","):
            vocab, at = (int(x) for x in size.split(":"))
            timed = {k: options_of(k, at) for k in KINDS
                     if not (k == "superbpe" and args.no_superbpe or k == "auto" and args.no_auto)}
            runs: dict[str, list[dict]] = {k: [] for k in KINDS} | alternating(files, vocab, timed, args.repeats)
            wall = {k: median_of(runs[k], "seconds") for k in KINDS}
            cpu = {k: median_of(runs[k], "cpu") for k in KINDS}
            others = sum(r["other_cpu"] for k in runs for r in runs[k])
            peaks = " / ".join(f"{max(r['peak_mb'] for r in runs[k]):,.0f}" if runs[k] else "-" for k in KINDS)
            times = " | ".join(f"{wall[k]:.2f} ({wall[k] / wall['plain']:.2f})" for k in KINDS[1:])
            print(f"| {kind} | {megabytes:.0f} | {vocab:,} | {at:,} | {wall['plain']:.2f} | {times} | "
                  f"{' / '.join(f'{cpu[k]:.2f}' for k in KINDS)} ({cpu['boundless'] / cpu['plain']:.2f}) | "
                  f"{stage_cells(runs['plain'])} | {stage_cells(runs['boundless'])} | {others:.1f} | {peaks} |",
                  flush=True)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab-sizes", default="8192,16384,32768", help="bytes per token: the sizes")
    ap.add_argument("--at", type=float, default=0.8, help="bytes per token: T, a fraction of each size")
    ap.add_argument("--text", choices=("natural", "english"), default="natural", help="bytes per token: the text")
    ap.add_argument("--cost", action="store_true", help="time the three trainings against each other")
    ap.add_argument("--sizes", default="16384:13107", help="cost: V:T pairs, comma-separated")
    ap.add_argument("--repeats", type=int, default=3, help="cost: runs of each, alternating")
    ap.add_argument("--texts", default="long-tail,mutated,zipf,scripts,code,neardup,natural",
                    help="cost: the kinds of text, comma-separated: long-tail (tuned on), "
                         "mutated, zipf, scripts, code, neardup (make_corpus.py at --seed), natural")
    ap.add_argument("--no-superbpe", action="store_true", help="cost: leave SuperBPE out")
    ap.add_argument("--no-auto", action="store_true", help='cost: leave superword_at="auto" out')
    ap.add_argument("--seed", type=int, default=11,
                    help="cost: make_corpus.py's seed for the generators' texts (the long-tail slice is seed 0)")
    ap.add_argument("--longtail-size", default="50M", help="cost: the long-tail slice's size (make_corpus.py)")
    ap.add_argument("--work-dir", default="/tmp/bpe_fast-bench", help="where the long-tail slice and the held-out "
                                                                     "split are kept")
    ap.add_argument("--corpus-dir", default=None)
    args = ap.parse_args()
    cost(args) if args.cost else quality(args)


if __name__ == "__main__":
    main()
