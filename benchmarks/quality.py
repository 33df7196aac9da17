"""Quality, measured (issue 20): bytes per token on held-out text, per language, for plain BPE,
SuperBPE, BoundlessBPE and Picky BPE at the same vocabulary sizes; a CSV and a chart.

    python benchmarks/quality.py                       # V = 8192,16384,32768,65536: about a minute
    python benchmarks/quality.py --chart-only          # redraw quality.png from quality.csv

Text: big.txt and multilingual/*.txt of the shared corpora (``--files``, relative to the corpora
folder; ``--corpus-dir``, else $BPE_FAST_DATA/corpora or ../shared/corpora). As in
bench_picky.py and bench_boundless.py, the last 10% of each file (cut at a line end) is held out
and the first 90% is trained on (each file one document; written to ``--work-dir``). A file's
language is its name up to the first "_" or "." (ar.txt and ar_quran_tanzil_simple.txt are both
"ar"); big.txt is English ("en"). A language's bytes per token is its held-out bytes over the
tokens of its held-out files.

Methods, each at every V of ``--vocab-sizes`` (cl100k pattern, ``workers`` processes/threads):

- plain:          ``train(files, V)``: one training to the largest V gives every size (ranks are
                  a prefix), so it is trained once;
- superbpe-<a>:   ``train(files, V, superword_at=T)``, T = a x V for each a of ``--at`` (default
                  0.8 and 0.9: SuperBPE's paper chose t = 180k of 200k, 0.9 V, for its models;
                  stage two with patterns.SUPERWORD);
- boundless-<a>:  ``train(files, V, superword="boundless", superword_at=T)``, the same T;
- boundless-auto: ``superword_at="auto"`` (T found by paper 2's interleaving by count);
- picky-<tau>:    ``train(files, V, picky=tau)`` for each tau of ``--taus`` (default 0.9, the
                  paper's default, and 0.7), also trained once to the largest V for all sizes.

Every tokenizer must round-trip every held-out file. The CSV (``--csv``) has one row per method
and V: bytes per token on all the held-out text, on English, per language (``bpt_<lang>``) and
the gains over plain of the same V (English; the mean over the other languages, each language
counting once; the worst language and its gain); the chart (``--png``) draws the gains against V,
a panel for English and one for the mean of the other languages, and a heat map of each
language's gain at the largest V.
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time
from pathlib import Path

import bpe_fast
from bench_boundless import split_held_out
from bench_picky import files_of
from mix33 import corpus_dir  # noqa: E402  (benchmarks/ is on sys.path)

HERE = Path(__file__).resolve().parent
ENGLISH = "en"
TITLES = {"plain": "plain BPE", "superbpe": "SuperBPE", "boundless": "BoundlessBPE", "picky": "Picky BPE"}
FIELDS = ["method", "vocab", "vocab_made", "T", "train_wall_s", "train_cpu_s", "bytes_all", "tokens_all", "bpt_all",
          "gain_all", "bpt_en", "gain_en", "mean_gain_other", "worst_language", "worst_gain"]


def language_of(path: Path) -> str:
    """"en" for big.txt; else the name up to its first "_" or "." (ru_anna_karenina.txt: "ru")."""
    return ENGLISH if path.name == "big.txt" else path.name.split(".")[0].split("_")[0]


def title(method: str) -> str:
    """"superbpe-0.8": "SuperBPE, T = 0.8 V"; "boundless-auto": 'BoundlessBPE, T = "auto"'."""
    kind, _, setting = method.partition("-")
    name = TITLES.get(kind, kind)
    if kind == "picky":
        return f"{name}, tau {setting}"
    if setting:
        return f"{name}, T = {setting} V" if setting != "auto" else f'{name}, T = "auto"'
    return name


def cpu_seconds() -> float:
    """CPU of this process and of its finished children (the counting workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def transition(method: str, vocab: int) -> int:
    """T of "superbpe-0.8" or "boundless-0.8" at V: int(0.8 x V)."""
    return int(vocab * float(method.partition("-")[2]))


class Trainer:
    """Trains each method at each size once in the run, keeping the tokenizers: plain and Picky
    are trained once to the largest size, which gives the tokenizer of every smaller one."""

    def __init__(self, files: list[Path], sizes: list[int], workers: int):
        self.files, self.sizes, self.workers = files, sorted(sizes), workers
        self.cache: dict[tuple[str, int], tuple[bpe_fast.Tokenizer, float, float]] = {}

    def get(self, method: str, vocab: int) -> tuple[bpe_fast.Tokenizer, float, float]:
        """The tokenizer, and the wall and CPU seconds of the training that made it (for plain
        and Picky: the one training to the largest size that made them all)."""
        if (method, vocab) not in self.cache:
            wall, cpu = time.perf_counter(), cpu_seconds()
            made: dict[int, bpe_fast.Tokenizer]
            kind, _, setting = method.partition("-")
            if kind in ("plain", "picky"):
                picky = float(setting) if kind == "picky" else None
                toks = bpe_fast.train(self.files, self.sizes, picky=picky, progress="none", workers=self.workers)
                made = dict(zip(self.sizes, toks))
            else:
                at: int | str = "auto" if setting == "auto" else transition(method, vocab)
                made = {vocab: bpe_fast.train(self.files, vocab, superword_at=at, superword=kind, progress="none",
                                              workers=self.workers)}
            wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
            for size, tok in made.items():
                self.cache[(method, size)] = (tok, wall, cpu)
        return self.cache[(method, vocab)]

    def made_transition(self, method: str, vocab: int) -> str:
        """T for the superword methods (auto: V less its supermerges); "" for the others."""
        if method.endswith("-auto"):
            return str(vocab - len(self.get(method, vocab)[0].supermerges))
        return str(transition(method, vocab)) if method.startswith(("superbpe-", "boundless-")) else ""


def measure(args) -> list[dict]:
    corpora = corpus_dir(args.corpus_dir)
    files = files_of(corpora, args.files)
    train_files, held = split_held_out(files, Path(args.work_dir) / "quality")
    language = {path.name: language_of(path) for path in files}
    languages = sorted(set(language.values()), key=lambda lang: (lang != ENGLISH, lang))
    held_bytes = {name: len(text.encode("utf-8")) for name, text in held.items()}
    sizes = [int(v) for v in args.vocab_sizes.split(",")]
    ats, taus = args.at.split(","), args.taus.split(",")
    methods = ["plain", *(f"superbpe-{at}" for at in ats), *(f"boundless-{at}" for at in ats), "boundless-auto",
               *(f"picky-{tau}" for tau in taus)]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs; "
          f"workers={args.workers}")
    print(f"{len(files)} files, {len(languages)} languages; training on {sum(p.stat().st_size for p in train_files):,}"
          f" bytes, held out {sum(held_bytes.values()):,} (the last 10% of each file); T = {args.at} x V\n",
          flush=True)
    trainer = Trainer(train_files, sizes, args.workers)
    rows: list[dict] = []
    t0, cpu0 = time.perf_counter(), cpu_seconds()
    for vocab in sizes:
        plain_bpt: dict[str, float] = {}
        for method in methods:
            tok, wall, cpu = trainer.get(method, vocab)
            tokens = {lang: 0 for lang in languages}
            nbytes = {lang: 0 for lang in languages}
            for name, text in held.items():
                ids = tok.encode_ordinary(text)
                if tok.decode(ids) != text:
                    sys.exit(f"round trip failed: {method} at {vocab} on {name}")
                tokens[language[name]] += len(ids)
                nbytes[language[name]] += held_bytes[name]
            bpt = {lang: nbytes[lang] / tokens[lang] for lang in languages}
            bpt["all"] = sum(nbytes.values()) / sum(tokens.values())
            if method == "plain":
                plain_bpt = bpt
            gain = {lang: bpt[lang] / plain_bpt[lang] - 1 for lang in bpt}
            others = [lang for lang in languages if lang != ENGLISH]
            worst = min(others or languages, key=lambda lang: gain[lang])
            row = {"method": method, "vocab": vocab, "vocab_made": tok.vocab_size,
                   "T": trainer.made_transition(method, vocab),
                   "train_wall_s": f"{wall:.2f}", "train_cpu_s": f"{cpu:.2f}", "bytes_all": sum(nbytes.values()),
                   "tokens_all": sum(tokens.values()), "bpt_all": f"{bpt['all']:.4f}", "gain_all": f"{gain['all']:.4f}",
                   "bpt_en": f"{bpt[ENGLISH]:.4f}" if ENGLISH in bpt else "",
                   "gain_en": f"{gain[ENGLISH]:.4f}" if ENGLISH in gain else "",
                   "mean_gain_other": f"{statistics.mean(gain[lang] for lang in others):.4f}" if others else "",
                   "worst_language": worst if method != "plain" else "",
                   "worst_gain": f"{gain[worst]:.4f}" if method != "plain" else "",
                   **{f"bpt_{lang}": f"{bpt[lang]:.4f}" for lang in languages}}
            rows.append(row)
            print(f"V={vocab:>6,} {method:<15} T={row['T']:>6} all {bpt['all']:.3f} ({gain['all']:+.1%}) "
                  f"en {row['bpt_en']} ({gain.get(ENGLISH, 0):+.1%}) others {row['mean_gain_other']} "
                  f"worst {worst} {gain[worst]:+.1%}; trained in {wall:.1f} s ({cpu:.1f} CPU s)", flush=True)
    print(f"\n{len(rows)} rows in {time.perf_counter() - t0:.0f} s, {cpu_seconds() - cpu0:.0f} CPU s of this "
          f"process and its workers; load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return rows


def write_csv(rows: list[dict], path: Path) -> None:
    fields = FIELDS + [k for k in rows[0] if k.startswith("bpt_") and k not in FIELDS]
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def read_csv(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def pct(row: dict, key: str) -> str:
    return f"{float(row[key]):+.1%}" if row[key] else "-"


def markdown_table(rows: list[dict]) -> str:
    """Gains over plain per method and V: English, the mean of the other languages, the worst one."""
    lines = ["| V | method | T | B/token all (gain) | English B/token (gain) | other languages: mean gain | "
             "worst language (gain) |", "|---:|---|---:|---:|---:|---:|---|"]
    for r in rows:
        at = f"{int(r['T']):,}" if r["T"] else "-"
        worst = f"{r['worst_language']} ({pct(r, 'worst_gain')})" if r["worst_language"] else "-"
        english = f"{float(r['bpt_en']):.3f}" if r["bpt_en"] else "-"
        lines.append(f"| {int(r['vocab']):,} | {title(r['method'])} | {at} | "
                     f"{float(r['bpt_all']):.3f} ({pct(r, 'gain_all')}) | "
                     f"{english} ({pct(r, 'gain_en')}) | {pct(r, 'mean_gain_other')} | "
                     f"{worst} |")
    return "\n".join(lines)


COLOURS = {"superbpe": "tab:blue", "boundless": "tab:orange", "picky": "tab:red"}
PAPERS = ("The papers, on English: SuperBPE up to 33% fewer tokens (+49% bytes/token) at V = 200k;\n"
          "BoundlessBPE about +20% bytes/token (V 40k-131k, 1 GB); Picky BPE compresses as BPE does")
HEAT_CAP = 20.0        # percent: the heat map's colours saturate here, so that small losses still show


def style(method: str) -> dict:
    """A colour per kind, a line style per setting: the second T or tau dashed, "auto" green."""
    kind, _, setting = method.partition("-")
    if setting == "auto":
        return {"color": "tab:green", "marker": "s"}
    first = {"superbpe": "0.8", "boundless": "0.8", "picky": "0.9"}
    return {"color": COLOURS.get(kind, "gray"), "marker": "o", "ls": "-" if setting == first.get(kind) else "--"}


def chart(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm

    methods = [m for m in dict.fromkeys(r["method"] for r in rows) if m != "plain"]
    sizes = sorted({int(r["vocab"]) for r in rows})
    by = {(r["method"], int(r["vocab"])): r for r in rows}
    languages = [k[len("bpt_"):] for k in rows[0] if k.startswith("bpt_") and k != "bpt_all"]
    others = [lang for lang in languages if lang != ENGLISH]
    fig = plt.figure(figsize=(13, 10.5))
    grid = fig.add_gridspec(2, 2, height_ratios=[1, 0.8], hspace=0.35, wspace=0.18)
    panels = [(fig.add_subplot(grid[0, 0]), "gain_en", "English (big.txt)")]
    right = fig.add_subplot(grid[0, 1], sharey=panels[0][0])
    panels.append((right, "mean_gain_other", f"Mean of the other {len(others)} languages (each counted once)"))
    for ax, key, heading in panels:
        ax.axhline(0, color="black", lw=1, ls="--", label="plain BPE")
        for method in methods:
            points = [(v, 100 * float(by[(method, v)][key])) for v in sizes if by[(method, v)][key]]
            if points:
                ax.plot(*zip(*points), label=title(method), **style(method))
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [f"{v / 1024:g}k" if v >= 1024 else str(v) for v in sizes])
        ax.minorticks_off()
        ax.set_xlabel("vocabulary size V")
        ax.set_title(heading)
        ax.grid(alpha=0.3)
    panels[0][0].set_ylabel("bytes per token on held-out text: gain over plain BPE (%)")
    panels[0][0].legend(fontsize=8, loc="upper left")
    heat = fig.add_subplot(grid[1, :])
    top = sizes[-1]
    gains = [[100 * (float(by[(m, top)][f"bpt_{lang}"]) / float(by[("plain", top)][f"bpt_{lang}"]) - 1)
              for lang in languages] for m in methods]
    span = min(HEAT_CAP, max(1e-9, max(abs(g) for line in gains for g in line)))
    image = heat.imshow(gains, cmap="RdBu", norm=TwoSlopeNorm(0, -span, span), aspect="auto")
    heat.set_xticks(range(len(languages)), languages, fontsize=8)
    heat.set_yticks(range(len(methods)), [title(m) for m in methods], fontsize=8)
    for i, line in enumerate(gains):
        for j, g in enumerate(line):
            heat.text(j, i, f"{g:+.1f}", ha="center", va="center", fontsize=6.5,
                      color="white" if abs(g) > 0.6 * span else "black")
    heat.set_title(f"Gain over plain BPE per language at V = {top:,} (%; a language's held-out files together; "
                   f"colours saturate at ±{span:.0f})")
    fig.colorbar(image, ax=heat, fraction=0.02, pad=0.01)
    fig.suptitle("Bytes per token on held-out text (the last 10% of each file; trained on the first 90%), cl100k")
    fig.text(0.5, 0.94, PAPERS, ha="center", va="top", fontsize=8.5, color="dimgray")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab-sizes", default="8192,16384,32768,65536")
    ap.add_argument("--at", default="0.8,0.9", help="SuperBPE's and BoundlessBPE's T, fractions of V, comma-separated")
    ap.add_argument("--taus", default="0.9,0.7", help="Picky BPE's thresholds")
    ap.add_argument("--files", default="big.txt,multilingual", help="files or folders in the corpora folder")
    ap.add_argument("--corpus-dir", default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--work-dir", default="/tmp/bpe_fast-bench", help="where the training parts are written")
    ap.add_argument("--csv", default=str(HERE / "quality.csv"))
    ap.add_argument("--png", default=str(HERE / "quality.png"))
    ap.add_argument("--chart-only", action="store_true", help="redraw the chart (and the table) from --csv")
    args = ap.parse_args()
    if args.chart_only:
        rows = read_csv(Path(args.csv))
    else:
        rows = measure(args)
        write_csv(rows, Path(args.csv))
        rows = read_csv(Path(args.csv))
    chart(rows, Path(args.png))
    print(f"\n{markdown_table(rows)}\n\nwrote {args.csv} and {args.png}")


if __name__ == "__main__":
    main()
