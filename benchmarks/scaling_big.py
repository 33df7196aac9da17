"""Time and peak memory against corpus size, 0.1 GB to 10 GB: bpe_fast, and gigabpe beside it.

    python benchmarks/scaling_big.py --dir big/ --sizes 0.1,0.3,1,3,10 --peer-up-to 3
    python benchmarks/scaling_big.py --plot-only      # redraw scaling_big.png from scaling_big.csv

Makes each corpus with make_corpus.py (web-like long tail, about 6-7 million distinct GPT-2
chunks per GB at 1 GB) unless it is there already, then runs bench_big.py's gigabpe task at
vocab 32768 for each size (bpe_fast: GPT-2 pattern, lines as documents, Hugging Face's
tie-break, 2 processes; gigabpe: 2 threads), each in a fresh process with the whole process
tree's RSS sampled every 20 ms. Writes scaling_big.csv and scaling_big.png beside this script.
"""
from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from pathlib import Path

import bench_big  # noqa: E402  (benchmarks/ is on sys.path)
from charts import library_name, plain_log_axes  # noqa: E402

HERE = Path(__file__).resolve().parent


def corpus(directory: Path, gigabytes: float) -> Path:
    path = directory / f"web-{gigabytes:g}g.txt"
    if not path.exists():
        subprocess.run([sys.executable, str(HERE / "make_corpus.py"), "--size", f"{int(gigabytes * 2**30)}",
                        "-o", str(path)], check=True)
    return path


def merged_with_earlier(rows: list[dict], path: Path) -> list[dict]:
    """This run's rows, and the earlier runs' rows for the (library, size) pairs it did not run."""
    if not path.exists():
        return rows
    earlier = read_rows(path)
    done = {(r["library"], r["gigabytes"]) for r in rows}
    kept = [r for r in earlier if (r["library"], r["gigabytes"]) not in done]
    return sorted(kept + rows, key=lambda r: (r["gigabytes"], r["library"]))


def read_rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return [{k: (v if k == "library" else float(v)) for k, v in row.items()} for row in csv.DictReader(fh)]


def plot(rows: list[dict], path: Path):
    from matplotlib.figure import Figure
    fig = Figure(figsize=(11, 4.2))
    for ax, key, label in ((fig.add_subplot(1, 2, 1), "seconds", "training time, s (log scale)"),
                           (fig.add_subplot(1, 2, 2), "peak_gb", "peak memory of the process tree, GB (log scale)")):
        for lib, style in (("bpe_fast", "o-"), ("gigabpe", "s--")):
            points = [(r["gigabytes"], r[key]) for r in rows if r["library"] == lib]
            if points:
                ax.plot(*zip(*points), style, label=library_name(lib))
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_axes(ax)
        ax.set_xlabel("corpus size, GB (web-like long tail, GPT-2 pattern, vocab 32768)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle("Training on 2 cores: bpe_fast and gigabpe against corpus size")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return fig


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", help="where the corpora are made (needs about the sum of the sizes free); required "
                                   "unless --plot-only")
    ap.add_argument("--plot-only", action="store_true",
                    help="redraw scaling_big.png from scaling_big.csv beside this script; no training")
    ap.add_argument("--sizes", default="0.1,0.3,1,3,10", help="corpus sizes in GB")
    ap.add_argument("--peer-up-to", type=float, default=10, help="run gigabpe up to this size (GB)")
    ap.add_argument("--vocab-size", type=int, default=32768)
    args = ap.parse_args()
    if args.plot_only:
        plot(read_rows(HERE / "scaling_big.csv"), HERE / "scaling_big.png")
        print(f"{HERE.name}/scaling_big.png redrawn from scaling_big.csv")
        return
    if args.dir is None:
        ap.error("--dir is required (where the corpora are made), unless --plot-only")
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for gigabytes in [float(s) for s in args.sizes.split(",")]:
            path = corpus(directory, gigabytes)
            options = argparse.Namespace(task="gigabpe", corpus=str(path), workers=2, repeats=1)
            for lib in ("bpe_fast", "gigabpe"):
                if lib == "gigabpe" and gigabytes > args.peer_up_to:
                    continue
                r = bench_big.measure(lib, args.vocab_size, options, tmp)
                rows.append({"library": lib, "gigabytes": gigabytes, "bytes": path.stat().st_size,
                             "seconds": round(r["seconds"], 2), "peak_gb": round(r["peak_mb"] / 1024, 3),
                             "cpu_s": round(r["cpu_s"], 1)})
                print(rows[-1], flush=True)
    rows = merged_with_earlier(rows, HERE / "scaling_big.csv")
    with open(HERE / "scaling_big.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    plot(rows, HERE / "scaling_big.png")
    print("| GB | library | s | peak GB | CPU s |")
    print("|---:|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['gigabytes']:g} | {r['library']} | {r['seconds']:.1f} | {r['peak_gb']:.2f} | {r['cpu_s']:.0f} |")


if __name__ == "__main__":
    main()
