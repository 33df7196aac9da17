"""The benchmark scripts' quick paths still run against the package: nothing else in the suite
runs them, so a change of bpe_fast's internals could leave them behind (mypy found two)."""
from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys

import pytest

import bpe_fast

from .conftest import ROOT, need, needs_data, needs_vocabs, small_text, vocab_dir

BENCHMARKS = ROOT / "benchmarks"


def run_script(name: str, *args: str, **env_vars: str) -> subprocess.CompletedProcess:
    """benchmarks/<name> run with this checkout's bpe_fast (and these environment variables)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               **env_vars)
    return subprocess.run([sys.executable, str(BENCHMARKS / name), *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_bench_huge_table_trains_a_repeated_table_as_the_reference_trains_one_copy():
    # The benchmark's own check, small: S's entries repeated (separate entries) learn the
    # reference's merges on S, each count k times S's; a mismatch exits 1.
    done = run_script("bench_huge_table.py", "--bytes", "2M", "--words", "300", "--longest", "40", "--merges", "15")
    assert done.returncode == 0, done.stderr
    built = re.search(r"big: S x ([\d,]+) =", done.stdout)
    assert built, done.stdout
    k = int(built[1].replace(",", ""))
    assert k > 1 and re.search(rf"^OK: 15 merges equal to the reference's on S, each count {k:,} x S's", done.stdout,
                               re.M), done.stdout


@needs_data
def test_make_corpus_counts_the_distinct_chunks_it_wrote(tmp_path):
    done = run_script("make_corpus.py", "--size", "64K", "-o", str(tmp_path / "web.txt"), "--stats")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^[\d,]+ distinct gpt2 chunks, [\d,]+ per GB$", done.stdout, re.M), done.stdout


def test_stages_refuses_a_pattern_without_a_native_scanner(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("some words to split\n")
    done = run_script("stages.py", str(corpus), "--pattern", r"\w+")
    assert done.returncode == 1
    assert "the stages time the native scanner; give gpt2, cl100k, o200k or superword" in done.stderr, done.stderr


@pytest.mark.slow
def test_bench_continue_hf_compares_with_bpe_continue(tmp_path):
    need("bpe_continue")
    corpus = str(ROOT / "tests" / "data" / "small_corpus.txt")
    done = run_script("bench_continue_hf.py", "--base-corpus", corpus, "--base-size", "400", "--corpus", corpus,
                      "--merges", "200", "--json", str(tmp_path / "out.json"))
    assert done.returncode == 0, done.stderr
    bases = json.loads((tmp_path / "out.json").read_text())["bases"]
    assert bases["bpetrainer"]["equal to bpe-continue, ids and all"] == ["bpe_fast huggingface", "bpe_fast bytes"]
    assert "bpe_fast bytes" in bases["bpe_fast ids"]["equal to bpe-continue, ids and all"]


def test_bench_kernel_compares_thread_counts_on_a_saved_table(tmp_path):
    table = bpe_fast.count_from_iterator([small_text()] * 20, pattern="gpt2", progress="none")
    table.save(tmp_path / "table.npz")
    done = run_script("bench_kernel.py", str(tmp_path / "table.npz"), "--vocab-size", "600", "--trees", str(ROOT),
                      "--threads", "1,2", "--repeats", "1")
    assert done.returncode == 0, done.stderr
    assert "V=600: every run learned the same merges" in done.stdout, done.stdout


def test_stages_splits_the_kernels_time(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(small_text() * 20, encoding="utf-8")
    done = run_script("stages.py", str(corpus), "--pattern", "gpt2", "--vocab-size", "600", "--threads", "2")
    assert done.returncode == 0, done.stderr
    assert "| kernel: first pair count |" in done.stdout and "sequential share of the merging" in done.stdout


def test_bench_table_times_trees_and_checks_their_tables_agree(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(small_text() * 50, encoding="utf-8")
    done = run_script("bench_table.py", str(corpus), "--mb", "1", "--pattern", "cl100k", "--rounds", "1", "--scan",
                      "--tree", f"a={ROOT}", "--tree", f"b={ROOT},no-huge", "--json", str(tmp_path / "runs.jsonl"))
    assert done.returncode == 0, done.stderr
    assert "tables identical across trees" in done.stdout and "| b |" in done.stdout, done.stdout
    runs = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert [r["tree"] for r in runs] == ["a", "b"] and runs[0]["distinct"] == runs[1]["distinct"] > 100


@needs_data
@pytest.mark.slow      # three processes started (make_corpus and two trainings): seconds of waiting
def test_bench_superword_times_superword_against_plain_training(tmp_path):
    done = run_script("bench_superword.py", "--cost", "--texts", "long-tail,zipf", "--seed", "5", "--longtail-size",
                      "64K", "--sizes", "600:400", "--repeats", "1", "--work-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    for text in ("long-tail", "zipf"):      # the tuned slice, and a generator at a seed it was not tuned on
        row = re.search(rf"^\| {text} \| 0 \| 600 \| 400 \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| "
                        r"([\d.]+) / ([\d.]+) \(([\d.]+)\) \|", done.stdout, re.M)
        assert row and float(row[3]) > 0 and float(row[6]) > 0, done.stdout
    assert "counting" in done.stdout and (tmp_path / "longtail-64K.txt").is_file()
    assert (tmp_path / "zipf-s5-64K.txt").is_file()


@needs_data
@pytest.mark.slow      # four processes started (make_corpus and three trainings)
def test_bench_boundless_times_boundless_against_plain_and_superbpe(tmp_path):
    done = run_script("bench_boundless.py", "--cost", "--texts", "long-tail", "--longtail-size", "64K",
                      "--sizes", "700:500", "--repeats", "1", "--work-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    row = re.search(r"^\| long-tail \| 0 \| 700 \| 500 \| ([\d.]+) \| ([\d.]+) \(([\d.]+)\) \| "
                    r"([\d.]+) \(([\d.]+)\) \|", done.stdout, re.M)
    assert row and float(row[5]) > 0, done.stdout
    assert "runs" in done.stdout and "supermerging" in done.stdout


def test_bench_picky_compares_picky_with_plain_training(tmp_path):
    (tmp_path / "multilingual").mkdir()
    text = small_text() * 3
    (tmp_path / "big.txt").write_text(text, encoding="utf-8")
    (tmp_path / "multilingual" / "xx.txt").write_text(text[::-1], encoding="utf-8")
    done = run_script("bench_picky.py", "--corpus-dir", str(tmp_path), "--vocab-sizes", "400", "--taus", "0.6",
                      "--repeats", "1")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^\| 400 \| plain \| [\d.]+ \([\d.]+\) \| 144 \| - \| - \| [\d.]+ \| \+0\.00% \|", done.stdout,
                     re.M), done.stdout
    assert re.search(r"^\| 400 \| 0\.6 \| [\d.]+ \([\d.]+\) \| [\d,]+ \| [\d,]+ \([\d.]+%\) \| [\d,]+ \|",
                     done.stdout, re.M), done.stdout


def test_quality_writes_a_row_per_method_and_size_and_a_chart(tmp_path):
    need("matplotlib")                                   # the chart needs the [plot] extra
    (tmp_path / "multilingual").mkdir()
    text = small_text() * 3
    (tmp_path / "big.txt").write_text(text, encoding="utf-8")
    (tmp_path / "multilingual" / "xx.txt").write_text(text[::-1], encoding="utf-8")
    (tmp_path / "multilingual" / "xx_more.txt").write_text(text.upper(), encoding="utf-8")
    (tmp_path / "multilingual" / "yy.txt").write_text(text.swapcase(), encoding="utf-8")
    out_csv, out_png = tmp_path / "quality.csv", tmp_path / "quality.png"
    done = run_script("quality.py", "--corpus-dir", str(tmp_path), "--vocab-sizes", "400,600", "--at", "0.8,0.9",
                      "--taus", "0.9,0.7", "--workers", "1", "--work-dir", str(tmp_path / "work"),
                      "--csv", str(out_csv), "--png", str(out_png))
    assert done.returncode == 0, done.stderr
    with out_csv.open(newline="") as f:
        rows = list(csv.DictReader(f))
    methods = ["plain", "superbpe-0.8", "superbpe-0.9", "boundless-0.8", "boundless-0.9", "boundless-auto",
               "picky-0.9", "picky-0.7"]
    assert sorted((r["method"], r["vocab"]) for r in rows) == sorted((m, v) for m in methods for v in ("400", "600"))
    assert {k for k in rows[0] if k.startswith("bpt_")} == {"bpt_all", "bpt_en", "bpt_xx", "bpt_yy"}
    assert all(float(r["gain_en"]) == 0 and float(r["mean_gain_other"]) == 0 for r in rows if r["method"] == "plain")
    assert out_png.stat().st_size > 10_000 and out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| 600 | Picky BPE, tau 0.7 | - |" in done.stdout, done.stdout
    redrawn = run_script("quality.py", "--chart-only", "--csv", str(out_csv), "--png", str(tmp_path / "again.png"))
    assert redrawn.returncode == 0 and (tmp_path / "again.png").is_file(), redrawn.stderr

@needs_vocabs
def test_bench_encode_times_single_and_batch_in_processes_of_their_own(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text(small_text() * 5, encoding="utf-8")
    done = run_script("bench_encode.py", "--text", str(text), "--only", "single,batch", "--repeats", "1",
                      "--threads", "2", "--peers", "", "--fresh")
    assert done.returncode == 0, done.stderr
    assert "RAYON_NUM_THREADS=1" in done.stdout and "RAYON_NUM_THREADS=2" in done.stdout, done.stdout
    assert re.search(r"^\| bpe_fast array \| [\d.]+ \| [\d.]+ \|", done.stdout, re.M), done.stdout
    assert re.search(r"^\| bpe_fast flat \| [\d.]+ \| [\d.]+ \|", done.stdout, re.M), done.stdout


@pytest.mark.slow
def test_bench_budget_measures_the_tree_and_the_kernel_plan(tmp_path):
    corpus = tmp_path / "small.txt"
    corpus.write_text(small_text() * 20)
    done = run_script("bench_budget.py", "--corpus", str(corpus), "--vocab", "600", "--budgets", "2G,8M",
                      "tree", "kernel")
    assert done.returncode == 0, done.stderr
    rows = [line.split("|")[1:-1] for line in done.stdout.splitlines() if line.startswith("| small.txt")]
    by_budget = {row[2].strip(): row for row in rows if len(row) == 7}
    assert by_budget["2G"][6].strip() == "True"                   # the same merges under a budget that fits
    assert "refused before merging" in by_budget["8M"][3] and "table kept: True" in by_budget["8M"][6]
    kernel_rows = [row for row in rows if len(row) == 8]
    assert kernel_rows and float(kernel_rows[0][7]) > 0


@pytest.mark.slow
def test_bench_budget_measures_the_parity_plan_against_the_merging_peak(tmp_path):
    corpus = tmp_path / "small.txt"
    corpus.write_text(small_text() * 4)
    done = run_script("bench_budget.py", "--corpus", str(corpus), "--split", "3", "--vocab", "600", "parity")
    assert done.returncode == 0, done.stderr
    rows = [line.split("|")[1:-1] for line in done.stdout.splitlines() if line.startswith("| small.txt in 3 parts")]
    assert len(rows) == 1 and rows[0][2].strip() == "600"
    assert 0.3 < float(rows[0][6]) < 3            # measured / planned: a peak was measured, near the plan


@pytest.mark.slow
@needs_data
def test_scaling_big_makes_prefixes_trains_beside_gigabpe_and_fits_the_model(tmp_path):
    """scaling_big.py's quick path: each kind's smaller corpus is the beginning of its largest, cut
    at a line end; bpe_fast's rows carry the word table and agree with gigabpe's merges; --mix
    trains the kinds one after another; --model fits and extrapolates from the CSV."""
    need("gigabpe")
    table = tmp_path / "rows.csv"
    done = run_script("scaling_big.py", "--dir", str(tmp_path), "--kinds", "zipf,code", "--sizes", "0.002,0.005",
                      "--vocab-size", "600", "--peer-up-to", "0.002", "--mix", "--csv", str(table))
    assert done.returncode == 0, done.stderr
    small, large = (tmp_path / "zipf-0.002g.txt").read_bytes(), (tmp_path / "zipf-0.005g.txt").read_bytes()
    assert large.startswith(small) and small.endswith(b"\n") and len(small) <= 0.002 * 2**30
    mix = (tmp_path / "mix-0.01g.txt").read_bytes()
    assert mix == large + (tmp_path / "code-0.005g.txt").read_bytes()
    with open(table, newline="") as fh:
        rows = list(csv.DictReader(fh))
    ours = [r for r in rows if r["library"] == "bpe_fast"]
    assert {r["kind"] for r in ours} == {"zipf", "code", "mix:zipf+code"} and len(ours) == 5
    counted = bpe_fast.count([str(tmp_path / "zipf-0.005g.txt")], pattern="gpt2", lines=True, progress="none")
    [zipf] = [r for r in ours if r["kind"] == "zipf" and float(r["gigabytes"]) == 0.005]
    assert int(zipf["unique_chunks"]) == len(counted) and int(zipf["table_symbols"]) == counted.n_symbols
    assert all(r["merges_agree"].startswith("all ") for r in ours if float(r["gigabytes"]) == 0.002)
    model = run_script("scaling_big.py", "--model", "--csv", str(table))
    assert model.returncode == 0, model.stderr
    fitted = [line for line in model.stdout.splitlines() if line.startswith(("| zipf |", "| code |"))]
    assert len(fitted) == 2 and all(" x GB^" in line for line in fitted), model.stdout


@needs_vocabs
def test_bench_new_chunks_times_merging_against_backtracking(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text(small_text(), encoding="utf-8")
    done = run_script("bench_new_chunks.py", str(text), "--encodings", "cl100k_base", "--repeats", "1",
                      "--vocabs", str(vocab_dir()))
    assert done.returncode == 0, done.stderr
    # bytes, chunks, then ns of backtrack, merge and merge_scalar, then the two ratios
    assert re.search(r"^\s+1-16\s+[\d,]+\s+[\d,]+\s+[\d,]+\s+[\d,]+\s+[\d.]+\s+[\d.]+$", done.stdout, re.M), \
        done.stdout


@needs_vocabs
def test_bench_encode_headline_is_the_text_encoded_once_in_fresh_processes(tmp_path):
    """bench_encode.py's once mode (issue 30's headline) runs bench_encode_once.py on its text:
    one thread and a batch, each library in a fresh process, ids checked against tiktoken."""
    need("tiktoken")
    text = tmp_path / "text.txt"
    text.write_text(small_text(), encoding="utf-8")
    done = run_script("bench_encode.py", "--text", str(text), "--only", "once", "--repeats", "1", "--peers", "",
                      BPE_FAST_VOCABS=str(vocab_dir()))
    assert done.returncode == 0, done.stderr
    assert re.search(r"text\.txt .* single$", done.stdout, re.M) and re.search(r"batch \(\d+ threads\)$",
                                                                                done.stdout, re.M), done.stdout
    rows = [line for line in done.stdout.splitlines() if line.startswith(("bpe_fast ", "tiktoken "))]
    assert len(rows) == 4 and not any("DIFFERENT" in row for row in rows), done.stdout
    assert "| bpe_fast array |" not in done.stdout      # the repeated-call modes were not asked for


@needs_vocabs
def test_bench_encode_once_checks_ids_against_tiktoken(tmp_path):
    need("tiktoken")
    text = tmp_path / "text.txt"
    text.write_text(small_text(), encoding="utf-8")
    done = run_script("bench_encode_once.py", str(text), "--encodings", "cl100k_base", "--libs", "bpe_fast,tiktoken",
                      "--modes", "single", "--repeats", "1", BPE_FAST_VOCABS=str(vocab_dir()))
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith(("bpe_fast ", "tiktoken "))]
    assert len(rows) == 2 and not any("DIFFERENT" in row for row in rows), done.stdout
