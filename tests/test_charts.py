"""The benchmark charts: plain numbers on log axes, every library by its name, no folders in
titles; drawn again from the committed CSVs (``--plot-only``) without training anything."""
from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from .conftest import need

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    need("matplotlib")
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield {name: importlib.import_module(name) for name in ("charts", "scaling", "scaling_big")}
    finally:
        sys.path.remove(str(BENCHMARKS))


def tick_labels(fig) -> list[str]:
    fig.canvas.draw()
    return [t.get_text() for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
            for t in axis.get_ticklabels(which="both") if t.get_visible() and t.get_text()]


def check_readable(fig, names: set[str], series: bool = False) -> None:
    """Plain tick numbers, the libraries by name in every legend (``series``: "library, kind,
    vocab" entries, the libraries the first part), no folders in titles."""
    labels = tick_labels(fig)
    assert labels and all(re.fullmatch(r"[\d,]+(\.\d+)?", t) for t in labels), labels      # 0.5, 2, 1,000
    for ax in fig.axes:
        legend = {t.get_text() for t in ax.get_legend().get_texts()}
        if series:
            assert all(re.fullmatch(r"[^,]+, [^,]+, [\d,]+", entry) for entry in legend), legend
            legend = {entry.split(", ")[0] for entry in legend}
            assert legend <= names and "bpe_fast" in legend, legend
        else:
            assert legend == names, legend
    titles = [ax.get_title() for ax in fig.axes] + [fig._suptitle.get_text() if fig._suptitle else ""]
    assert not any("/" in t for t in titles), titles


def test_plain_numbers(bench):
    plain = bench["charts"].plain
    assert [plain(v) for v in (0.05, 0.1, 0.5, 1, 2, 20, 1000, 100000)] == \
        ["0.05", "0.1", "0.5", "1", "2", "20", "1,000", "100,000"]


def test_scaling_charts_from_the_committed_csvs(bench, tmp_path):
    scaling = bench["scaling"]
    names = {"bpe_fast", "rustbpe", "Hugging Face tokenizers"}
    corpus = scaling.read_csv(BENCHMARKS / "scaling_corpus.csv")
    vocab = scaling.read_csv(BENCHMARKS / "scaling_vocab.csv")
    assert {r["library"] for r in corpus} == {r["library"] for r in vocab} == {"bpe_fast", "rustbpe", "hf"}
    scaling.plot_corpus(corpus, tmp_path)
    scaling.plot_vocab(vocab, tmp_path, "all of mix33")
    for rows, x, png in ((corpus, "corpus_bytes", "scaling_corpus.png"), (vocab, "vocab_size", "scaling_vocab.png")):
        fig = scaling.plot(rows, x, "x", "a title", tmp_path / png)
        check_readable(fig, names)
        assert (tmp_path / png).read_bytes()[:4] == b"\x89PNG"
    labels = tick_labels(scaling.plot(corpus, "corpus_bytes", "x", "t", tmp_path / "c.png"))
    assert {"1", "2", "5", "10", "20"} <= set(labels)    # minor ticks labelled: 1-33 MB has one major in between


def test_scaling_big_chart_from_its_csv(bench, tmp_path):
    big = bench["scaling_big"]
    rows = big.read_rows(BENCHMARKS / "scaling_big.csv")
    fig = big.plot(rows, tmp_path / "big.png")
    check_readable(fig, {"bpe_fast", "gigabpe"}, series=True)
    time_legend = {t.get_text() for t in fig.axes[0].get_legend().get_texts()}
    assert {f"{r['library']}, {r['kind']}, {r['vocab']:,.0f}" for r in rows} == time_legend
    assert {"0.1", "0.2", "0.5", "1", "2", "5", "10"} <= set(tick_labels(fig))


def test_ladder_chart_title_names_no_folder(tmp_path):
    need("matplotlib")
    from bpe_fast.workshop.ladder import Workload
    from bpe_fast.workshop.ladder.harness import run_ladder
    report = run_ladder(Workload.load(None, chars=3000), 3, "v5,v6", repeats=1, log=None)
    assert "/" in report.headline()                               # the table keeps where the text came from
    fig = report.plot(tmp_path / "ladder.png")
    assert "/" not in fig._suptitle.get_text() and "Python standard library (" in fig._suptitle.get_text()
    (tmp_path / "big.txt").write_text("some text to count " * 100)
    report = run_ladder(Workload.load(tmp_path / "big.txt", chars=1000), 3, "v6", repeats=1, log=None)
    assert report.headline(short=True).startswith("1,000 characters of big.txt, pattern cl100k")
