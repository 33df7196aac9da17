"""Time and peak memory against corpus size, 0.1 GB to 10 GB: bpe_fast, and gigabpe beside it;
and the scaling model drawn from them (distinct chunks and memory against corpus size).

    python benchmarks/scaling_big.py --dir big/ --sizes 0.1,0.3,1,3,10 --peer-up-to 3
    python benchmarks/scaling_big.py --dir big/ --kinds mutated,zipf,scripts --vocab-size 65536 --peer-up-to 1
    python benchmarks/scaling_big.py --plot-only      # redraw the charts from scaling_big.csv
    python benchmarks/scaling_big.py --model          # the fitted model, extrapolated (docs/big-corpora.md)

Makes each corpus with make_corpus.py (``--kinds``: mutated, a web-like long tail with about 5
million distinct GPT-2 chunks per GB, files web-Ng.txt; zipf, scripts, code, neardup: KIND-Ng.txt,
seed 0) unless it is there already, then runs bench_big.py's gigabpe task at ``--vocab-size`` for
each size (bpe_fast: GPT-2 pattern, lines as documents, Hugging Face's tie-break, 2 processes;
gigabpe: 2 threads; their merges compared), each in a fresh process with the whole process tree's
RSS sampled every 20 ms. bpe_fast's rows also keep its word table's size (distinct chunks, their
bytes) and its stages' seconds. Writes scaling_big.csv (one row per library, kind, vocab, size;
earlier rows kept) and scaling_big.png (time, peak and distinct chunks against size).
"""
from __future__ import annotations

import argparse
import csv
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import bench_big  # noqa: E402  (benchmarks/ is on sys.path)
from charts import library_name, plain_log_axes  # noqa: E402

HERE = Path(__file__).resolve().parent
CSV = HERE / "scaling_big.csv"
FIELDS = ["library", "kind", "vocab", "gigabytes", "bytes", "seconds", "peak_gb", "cpu_s", "unique_chunks",
          "table_symbols", "counting_s", "merging_s", "merges_agree"]
KEY = ("library", "kind", "vocab", "gigabytes")


def corpus_name(kind: str, gigabytes: float) -> str:
    return f"web-{gigabytes:g}g.txt" if kind == "mutated" else f"{kind}-{gigabytes:g}g.txt"


def corpora(directory: Path, kind: str, sizes: list[float]) -> dict[float, Path]:
    """The kind's corpus of each size: the largest made by make_corpus.py (seed 0), the smaller
    ones its beginnings, cut at a line end (so that the sizes grow as one text read further)."""
    largest = directory / corpus_name(kind, max(sizes))
    if not largest.exists():
        subprocess.run([sys.executable, str(HERE / "make_corpus.py"), "--kind", kind, "--jobs", "2",
                        "--size", f"{int(max(sizes) * 2**30)}", "-o", str(largest)], check=True)
    paths = {}
    for gigabytes in sizes:
        path = directory / corpus_name(kind, gigabytes)
        if not path.exists():
            with open(largest, "rb") as src, open(path, "wb") as out:
                left = int(gigabytes * 2**30)
                while left > 0:
                    block = src.read(min(left, 1 << 24))
                    if len(block) == left:         # the last block: up to its last line end
                        out.write(block[:block.rfind(b"\n") + 1] or block)
                        break
                    out.write(block)
                    left -= len(block)
        paths[gigabytes] = path
    return paths


def mixed(directory: Path, parts: list[Path]) -> Path:
    """The kinds' largest corpora one after another: one corpus of their summed size."""
    gigabytes = round(sum(p.stat().st_size for p in parts) / 2**30, 2)
    path = directory / f"mix-{gigabytes:g}g.txt"
    if not path.exists():
        with open(path, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    while block := src.read(1 << 24):
                        out.write(block)
    return path


def merged_with_earlier(rows: list[dict], path: Path) -> list[dict]:
    """This run's rows, and the earlier runs' rows for the (library, kind, vocab, size) it did not run."""
    if not path.exists():
        return rows
    done = {tuple(r[k] for k in KEY) for r in rows}
    kept = [r for r in read_rows(path) if tuple(r[k] for k in KEY) not in done]
    return sorted(kept + rows, key=lambda r: (r["kind"], r["vocab"], r["gigabytes"], r["library"]))


def read_rows(path: Path) -> list[dict]:
    """The CSV's rows; rows written before kinds and vocab sizes were kept are mutated at 32768."""
    def value(key: str, text: str):
        if key in ("library", "kind", "merges_agree"):
            return text
        return float(text) if text not in ("", None) else None
    with open(path, newline="") as fh:
        rows = [{k: value(k, v) for k, v in row.items()} for row in csv.DictReader(fh)]
    for r in rows:
        r["kind"] = r.get("kind") or "mutated"
        r["vocab"] = r.get("vocab") or 32768.0
    return rows


def write_rows(rows: list[dict], path: Path) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows({k: ("" if r.get(k) is None else r.get(k)) for k in FIELDS} for r in rows)


def series(rows: list[dict]) -> list[tuple[str, float]]:
    return sorted({(r["kind"], r["vocab"]) for r in rows})


def plot(rows: list[dict], path: Path):
    from matplotlib.figure import Figure
    fig = Figure(figsize=(16, 4.6))
    panels = ((fig.add_subplot(1, 3, 1), "seconds", "training time, s"),
              (fig.add_subplot(1, 3, 2), "peak_gb", "peak memory of the process tree, GB"),
              (fig.add_subplot(1, 3, 3), "unique_chunks", "distinct chunks (bpe_fast's word table)"))
    colours = dict(zip(series(rows), ["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7"]))
    for ax, key, label in panels:
        for (kind, vocab), colour in colours.items():
            for lib, style in (("bpe_fast", "o-"), ("gigabpe", "s--")):
                points = [(r["gigabytes"], r[key]) for r in rows
                          if (r["library"], r["kind"], r["vocab"]) == (lib, kind, vocab) and r.get(key)]
                if points:
                    ax.plot(*zip(*points), style, color=colour,
                            label=f"{library_name(lib)}, {kind}, {vocab:,.0f}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_axes(ax)
        ax.set_xlabel("corpus size, GB (GPT-2 pattern)")
        ax.set_ylabel(label + " (log scale)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Training on 2 cores against corpus size: bpe_fast and gigabpe, make_corpus.py's generators")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return fig


def power_fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """y = a * x**b by least squares on the logs: (a, b)."""
    xs, ys = [math.log(x) for x, _ in points], [math.log(y) for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return math.exp(my - b * mx), b


def line_fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """y = c + k * x by least squares: (c, k)."""
    mx, my = sum(x for x, _ in points) / len(points), sum(y for _, y in points) / len(points)
    k = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return my - k * mx, k


TERABYTE = 1000.0           # GB (the sizes are GiB-based; 1 TB here is 1000 of them)
CORES = 512                 # the cluster of the example: 16 machines of 32 cores


def model(rows: list[dict]) -> None:
    """The scaling model, per kind and vocab size, from bpe_fast's rows: distinct chunks D = a x GB^b
    (Heaps' law, fitted on the logs), the word table's bytes per chunk (at the largest size), the
    peak memory of the whole job against the table's bytes (a line), counting's CPU seconds per GB
    (2 workers' wall x 2) and merging's seconds per GB of table (at the largest size); then all of
    it extrapolated to 1 TB: on this machine (2 cores) and with the counting on a cluster of 512
    cores (the merging stays on one machine, which must hold the peak)."""
    print("| kind | V | sizes GB | D(GB) distinct chunks | B/chunk | peak GB = c + k x table GB | "
          "counting CPU s/GB | merging s/table GB | 1 TB: D | table GB | peak GB | counting h, 2 cores / "
          f"{CORES} cores | merging h |")
    print("|---|---:|---|---|---:|---|---:|---:|---:|---:|---:|---|---:|")
    for kind, vocab in series(rows):
        ours = sorted((r for r in rows if (r["library"], r["kind"], r["vocab"]) == ("bpe_fast", kind, vocab)
                       and r.get("unique_chunks")), key=lambda r: r["gigabytes"])
        if len(ours) < 2 or len({r["gigabytes"] for r in ours}) < 2:
            continue
        a, b = power_fit([(r["gigabytes"], r["unique_chunks"]) for r in ours])
        top = ours[-1]
        chunk_bytes = top["table_symbols"] / top["unique_chunks"]
        c, k = line_fit([(r["table_symbols"] / 1e9, r["peak_gb"]) for r in ours])
        count_cpu = 2 * top["counting_s"] / top["gigabytes"]
        merge_rate = top["merging_s"] / (top["table_symbols"] / 1e9)
        chunks = a * TERABYTE ** b
        table = chunks * chunk_bytes / 1e9
        over = " (over 2**31: refused)" if chunks > 2**31 - 2 else ""
        sizes = ", ".join(f"{r['gigabytes']:g}" for r in ours)
        print(f"| {kind} | {vocab:,.0f} | {sizes} | {a / 1e6:.2f} M x GB^{b:.2f} | {chunk_bytes:.1f} | "
              f"{c:.2f} + {k:.1f} x table | {count_cpu:.1f} | {merge_rate:.0f} | {chunks / 1e9:.2f} G{over} | "
              f"{table:.0f} | {c + k * table:.0f} | {count_cpu * TERABYTE / 2 / 3600:.1f} / "
              f"{count_cpu * TERABYTE / CORES / 3600:.2f} | {merge_rate * table / 3600:.1f} |")


def measure_row(lib: str, kind: str, gigabytes: float, path: Path, vocab: int, tmp: str) -> dict:
    options = argparse.Namespace(task="gigabpe", corpus=str(path), workers=2, repeats=1)
    r = bench_big.measure(lib, vocab, options, tmp)
    table = r.get("table", {})
    stages = table.get("stage_seconds", {})
    return {"library": lib, "kind": kind, "vocab": float(vocab), "gigabytes": gigabytes,
            "bytes": path.stat().st_size, "seconds": round(r["seconds"], 2), "peak_gb": round(r["peak_mb"] / 1024, 3),
            "cpu_s": round(r["cpu_s"], 1), "unique_chunks": table.get("unique_chunks"),
            "table_symbols": table.get("table_symbols"), "counting_s": stages.get("counting"),
            "merging_s": stages.get("merging"), "merges": r["merges"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", help="where the corpora are made (needs about the sum of the sizes free, per kind); "
                                   "required unless --plot-only or --model")
    ap.add_argument("--plot-only", action="store_true", help="redraw scaling_big.png from scaling_big.csv")
    ap.add_argument("--model", action="store_true", help="print the scaling model fitted to scaling_big.csv")
    ap.add_argument("--kinds", default="mutated", help="make_corpus.py kinds, comma-separated")
    ap.add_argument("--sizes", default="0.1,0.3,1,3,10", help="corpus sizes in GB")
    ap.add_argument("--peer-up-to", type=float, default=10, help="run gigabpe up to this size (GB)")
    ap.add_argument("--vocab-size", type=int, default=32768)
    ap.add_argument("--mix", action="store_true",
                    help="then train the kinds' largest corpora one after another as one corpus (three kinds of "
                         "3.3 GB: 10 GB)")
    ap.add_argument("--csv", default=str(CSV), help="the rows' file (the chart is written beside it, .png)")
    args = ap.parse_args()
    table = Path(args.csv)
    if args.plot_only or args.model:
        earlier = read_rows(table)
        model(earlier) if args.model else plot(earlier, table.with_suffix(".png"))
        return
    if args.dir is None:
        ap.error("--dir is required (where the corpora are made), unless --plot-only or --model")
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    sizes = [float(x) for x in args.sizes.split(",")]

    def run(kind: str, gigabytes: float, path: Path, tmp: str) -> None:
        """bpe_fast, and gigabpe up to --peer-up-to, on one corpus; the CSV rewritten after each."""
        found = [measure_row("bpe_fast", kind, gigabytes, path, args.vocab_size, tmp)]
        if gigabytes <= args.peer_up_to:
            found.append(measure_row("gigabpe", kind, gigabytes, path, args.vocab_size, tmp))
            found[0]["merges_agree"] = bench_big.agreement(found[0]["merges"], found[1]["merges"])
        for r in found:
            del r["merges"]
            print(r, flush=True)
        rows.extend(found)
        write_rows(merged_with_earlier(rows, table), table)

    with tempfile.TemporaryDirectory() as tmp:
        largest = []
        for kind in args.kinds.split(","):
            paths = corpora(directory, kind, sizes)
            largest.append(paths[max(sizes)])
            for gigabytes in sizes:
                run(kind, gigabytes, paths[gigabytes], tmp)
        if args.mix:
            path = mixed(directory, largest)
            run("mix:" + "+".join(args.kinds.split(",")), round(path.stat().st_size / 2**30, 2), path, tmp)
    every = merged_with_earlier(rows, table)
    plot(every, table.with_suffix(".png"))
    print("| kind | V | GB | library | s | peak GB | CPU s | distinct chunks | merges |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---|")
    for r in every:
        chunks = f"{r['unique_chunks']:,.0f}" if r.get("unique_chunks") else ""
        print(f"| {r['kind']} | {r['vocab']:,.0f} | {r['gigabytes']:g} | {r['library']} | {r['seconds']:.1f} | "
              f"{r['peak_gb']:.2f} | {r['cpu_s']:.0f} | {chunks} | {r.get('merges_agree') or ''} |")
    model(every)


if __name__ == "__main__":
    main()
