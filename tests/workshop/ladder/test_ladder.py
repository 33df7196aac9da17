"""The profiling ladder (bpe_fast.workshop.ladder): every rung learns correct merges, and the harness
behind ``bpe-fast profile`` reports what happened -- ties, skips, per-line profiles, chart, JSON.

No timing is asserted: timings are what the harness measures, not what it must produce.
"""
from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast.errors import BpeFastError
from bpe_fast.workshop.ladder import RUNGS, Workload, harness, select
from bpe_fast.workshop.ladder.harness import budget_check, line_profile, run_ladder
from bpe_fast.training.reference import count_pairs, merge_word, train_reference

from ...conftest import examples, need

# Rungs that break ties like the reference (smallest pair), and rungs that share v1's running
# maximum (first top pair in dict order) and must therefore agree with each other exactly.
LIKE_REFERENCE = ("v5", "v6")
LIKE_V1 = ("v1", "v3", "v4")

TEXTS = {
    "nul bytes": "a\x00b\x00\x00c a\x00b \x00\x00\x00\x00 x\x00\x00y \x00",
    "long runs": "aaaa aaaaaaa aaa bbbbbbbb ab ab aaaa aaaaa aaaaaaaaaaaaaaa",
    "unicode": "héllo wörld 日本語 日本 naïve café café ✓✓✓",
    "prose": "the cat sat on the mat; the dog ate the hat, then the cat sat on the dog.",
}


def assert_most_frequent_each_time(merges, word_counts, n_merges):
    """Replay the merges: each must be a most frequent pair at its step (ties allowed), and
    fewer than n_merges only if no pair is left."""
    words, counts = [list(w) for w in word_counts], list(word_counts.values())
    for k, pair in enumerate(merges):
        stats = count_pairs(words, counts)
        assert stats.get(pair, 0) == max(stats.values()), f"merge {k} {pair} is not a most frequent pair"
        words = [merge_word(w, pair, 256 + k) for w in words]
    assert len(merges) == n_merges or not count_pairs(words, counts), "stopped early with pairs left"


def check_rungs(text: str, pattern, n_merges: int) -> None:
    work = Workload.from_text(text, pattern)
    reference = train_reference(work.word_counts, n_merges)
    learned = {name: rung.train(work.chunks, n_merges) for name, rung in RUNGS.items()}
    for name, merges in learned.items():
        assert all(isinstance(a, int) and isinstance(b, int) for a, b in merges), name
        assert_most_frequent_each_time(merges, work.word_counts, n_merges)
    for name in LIKE_REFERENCE:
        assert learned[name] == reference, name
    for name in LIKE_V1:
        assert learned[name] == learned["v1"], name


@pytest.mark.parametrize("name", TEXTS)
@pytest.mark.parametrize("pattern", ["gpt2", "none"])
def test_every_rung_learns_valid_merges(name, pattern):
    check_rungs(TEXTS[name], pattern, 30)


@settings(max_examples=examples(40), deadline=None)
@given(st.text(alphabet="ab \x00é\n", max_size=60), st.integers(1, 12))
def test_every_rung_on_random_text(text, n_merges):
    if text:
        check_rungs(text, "gpt2", n_merges)


def test_merges_are_numbered_from_256():
    merges = RUNGS["v1"].train(["aaaa"], 2)          # "aaaa" -> [256, 256] -> [257]
    assert merges == [(97, 97), (256, 256)]
    assert RUNGS["v1"].train(["\x00\x00\x00"], 5) == [(0, 0), (256, 0)]   # zero bytes are ordinary


def test_harness_explains_a_tie_broken_differently():
    # One chunk, all pairs once: v1 takes the first pair it met, ("z", "y"); the reference the
    # smallest, (" ", "a").
    report = run_ladder(Workload.from_text("zy ab", "none"), 1, "v1,v6", repeats=1, budget=0, log=None)
    v1, v6 = report.results
    assert v1.merges == [(ord("z"), ord("y"))] and v6.merges == [(32, 97)]
    assert v1.merges_agree is False and v6.merges_agree is True
    assert v1.agreement.startswith("ties broken differently: at merge 0")
    assert "both occur 1 times" in v1.agreement and "'z'+'y'" in v1.agreement
    assert "ties differ" in report.table()


@pytest.fixture
def profile_main():
    """bpe_fast.cli.main, which must have the profile subcommand registered."""
    from bpe_fast import cli
    from bpe_fast.workshop.ladder.cli import add_profile_parser

    assert add_profile_parser in cli.SUBCOMMANDS
    return cli.main


def test_cli_json_has_the_documented_shape(profile_main, tmp_path, capsys):
    out = tmp_path / "ladder.json"
    # No --corpus: the built-in corpus (the Python standard library), no download.
    assert profile_main(["profile", "--chars", "4000", "--merges", "6", "--repeats", "1",
                         "--json", str(out), "-q"]) == 0
    data = json.loads(out.read_text())
    assert set(data) >= {"workload", "rungs"}
    assert data["workload"]["chars"] == 4000 and data["workload"]["merges"] == 6
    assert data["workload"]["pattern"] == "cl100k" and "standard library" in data["workload"]["corpus"]
    assert data["complete"] is True
    assert [r["name"] for r in data["rungs"]] == ["v1", "v2", "v3", "v4", "v5", "v6"]
    for rung in data["rungs"]:
        assert isinstance(rung["seconds"], float) and rung["seconds"] > 0
        assert isinstance(rung["speedup"], float)
        assert isinstance(rung["merges_agree"], bool)
        assert len(rung["merges"]) == 6
    assert data["rungs"][0]["speedup"] == 1.0
    table = capsys.readouterr().out
    assert re.search(r"^v6 +\d+\.\d+ +\d+ +(-|\d+\.\d+-\d+\.\d+) +[\d,.]+x +(yes|ties differ)", table, re.M), table
    for rung in data["rungs"]:
        assert rung["seconds_min"] == min(rung["runs"]) <= rung["seconds"] <= max(rung["runs"]) == rung["seconds_max"]


def test_cli_line_profile_prints_per_line_timings(profile_main, capsys):
    assert profile_main(["profile", "--chars", "3000", "--merges", "3", "--versions", "v1,v3",
                         "--line-profile", "--repeats", "1", "-q"]) == 0
    out = capsys.readouterr().out
    assert "with line_profiler" in out and "Line #" in out and "% Time" in out
    # The counting line of v1 and of its Cython twin (v3's .pyx), each with a hit count.
    assert re.search(r"^File: .*v1_dict\.py$", out, re.M) and re.search(r"^File: .*_v3_cython\.pyx$", out, re.M)
    hits = re.findall(r"^\s*\d+\s+(\d+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+counts\[pair\] = counts.get\(pair, 0\) \+ 1",
                      out, re.M)
    assert len(hits) == 2 and all(int(h) > 0 for h in hits), out


@pytest.mark.slow      # 2.5 s; test_cli_json_has_the_documented_shape runs the CLI in the fast suite
def test_cli_says_which_rung_runs_with_an_estimate_and_writes_json_and_chart_as_rungs_finish(
        profile_main, tmp_path, capsys, monkeypatch):
    need("matplotlib")                                   # --plot needs the [plot] extra
    from bpe_fast.workshop.ladder import harness
    out, png = tmp_path / "ladder.json", tmp_path / "ladder.png"
    seen = []
    real = harness.line_profile

    def line_profile_after_the_timed_runs(rung, chunks, n_merges):
        # The timed runs are over, line profiling (the slow part) has not finished: the files
        # must already hold every rung, marked incomplete.
        data = json.loads(out.read_text())
        seen.append((rung.name, data["complete"], [r["name"] for r in data["rungs"]], png.is_file()))
        return real(rung, chunks, n_merges)

    monkeypatch.setattr(harness, "line_profile", line_profile_after_the_timed_runs)
    assert profile_main(["profile", "--chars", "3000", "--merges", "4", "--versions", "v1,v6", "--repeats", "1",
                         "--line-profile", "--json", str(out), "--plot", str(png)]) == 0
    assert seen == [("v1", False, ["v1", "v6"], True), ("v6", False, ["v1", "v6"], True)]
    assert json.loads(out.read_text())["complete"] is True
    err = capsys.readouterr().err
    assert "written as rungs finish" in err
    assert re.search(r"^\[1/2\] v1 \(dict\): 4 merges, about [\d.]+ s \.\.\.$", err, re.M), err  # before it runs
    assert re.search(r"^\[2/2\] v6 \(kernel\): 4 merges \.\.\.$", err, re.M), err
    assert re.search(r"^v1: running under line_profiler, about [\d.]+-[\d.]+ s", err, re.M), err


def test_run_ladder_reports_after_every_rung():
    work = Workload.from_text(TEXTS["prose"], "gpt2")
    updates = []
    run_ladder(work, 5, "v1,v4,v6", repeats=1, log=None,
               on_update=lambda report: updates.append(([r.name for r in report.results], report.complete)))
    assert updates == [(["v1"], False), (["v1", "v4"], False), (["v1", "v4", "v6"], False),
                       (["v1", "v4", "v6"], True)]


def test_profile_and_train_split_alike_by_default():
    from bpe_fast import cli
    from bpe_fast.pretokenize.patterns import DEFAULT_PATTERN
    parser = cli._parser()
    train = parser.parse_args(["train", "x.txt"])
    profile = parser.parse_args(["profile"])
    assert (train.pattern or DEFAULT_PATTERN) == profile.pattern == "cl100k"


def test_line_profile_of_the_kernel_rung_shows_its_python_lines():
    work = Workload.from_text(TEXTS["prose"], "gpt2")
    seconds, text = line_profile(RUNGS["v6"], work.chunks, 5)
    assert seconds > 0 and "train_merges(table.symbols" in text


@pytest.mark.slow      # 2.4 s; test_charts draws the ladder's chart in the fast suite
def test_cli_plot_writes_a_png(profile_main, tmp_path):
    need("matplotlib")                                   # --plot needs the [plot] extra
    png = tmp_path / "ladder.png"
    assert profile_main(["profile", "--chars", "2000", "--merges", "4", "--versions", "v1,v5,v6",
                         "--repeats", "1", "--plot", str(png), "-q"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_budget_skips_slow_rungs_with_a_message():
    work = Workload.from_text(TEXTS["prose"] * 20, "gpt2")
    messages: list[str] = []
    report = run_ladder(work, 30, "v1,v4,v6", repeats=1, budget=1e-9, log=messages.append)
    v1, v4, v6 = report.results
    for skipped in (v1, v4):
        assert skipped.seconds is None and skipped.merges is None
        assert skipped.estimate is not None and skipped.estimate > 0
        assert skipped.skipped is not None and "over the budget" in skipped.skipped and "--budget" in skipped.skipped
        assert any(m.startswith(f"{skipped.name}: skipped") for m in messages)
    assert v6.skipped is None and v6.merges_agree is True     # incremental rungs are not probed
    assert report.speedup_basis.startswith("v1 (estimated")  # speed-up against v1's estimate
    rungs = report.to_json()["rungs"]
    assert rungs[0]["seconds"] is None and rungs[0]["skipped"] and rungs[2]["speedup"] > 0
    assert "skipped" in report.table()


def test_budget_never_skips_v1_to_v3_at_the_notebook_workload():
    work = Workload.from_text(TEXTS["prose"], "gpt2")      # smaller than the notebook's
    for name in ("v1", "v2", "v3"):
        assert budget_check(RUNGS[name], work, 20, budget=1e-9) == (None, None)  # not even probed
        assert budget_check(RUNGS[name], work, 21, budget=1e-9)[1] is not None   # beyond it, they may be
    assert budget_check(RUNGS["v4"], work, 20, budget=1e-9)[1] is not None
    assert budget_check(RUNGS["v1"], work, 20, budget=0) == (None, None)          # 0: no budget


@pytest.mark.parametrize("args, message", [
    (["--chars", "0"], "--chars must be a positive"),
    (["--merges", "0"], "--merges must be a positive"),
    (["--versions", "v1,v9"], "--versions: unknown rung 'v9'"),
    (["--corpus", "no/such/corpus.txt"], "--corpus no/such/corpus.txt: no such file"),
    (["--repeats", "0"], "--repeats must be at least 1"),
    (["--budget", "-1"], "--budget must be >= 0"),
    (["--json", "no/such/dir/out.json"], "--json no/such/dir/out.json: directory"),
])
def test_cli_bad_input_is_one_clear_line(profile_main, capsys, args, message):
    assert profile_main(["profile", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bpe-fast profile: error: ") and message in err and "\n" not in err


def test_workload_reads_only_the_prefix_and_rejects_bad_files(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("héllo wörld " * 100, encoding="utf-8")
    work = Workload.load(corpus, chars=11, pattern="gpt2")
    assert work.text == "héllo wörld" and work.chunks == ["héllo", " wörld"]
    assert work.describe()["unique_chunks"] == 2
    (tmp_path / "bad.txt").write_bytes(b"ok \xff\xfe")
    with pytest.raises(BpeFastError, match="not UTF-8"):
        Workload.load(tmp_path / "bad.txt", chars=100)
    with pytest.raises(BpeFastError, match="no such file"):
        Workload.load(tmp_path / "missing.txt")
    with pytest.raises(BpeFastError, match="chars must be a positive"):
        Workload.load(corpus, chars=0)
    with pytest.raises(BpeFastError, match="holds no text"):
        Workload.from_text("", "gpt2")


def test_select_keeps_ladder_order():
    assert [r.name for r in select("v6, v1,v3")] == ["v1", "v3", "v6"]
    with pytest.raises(BpeFastError, match="unknown rung"):
        select("")


def test_the_charts_two_panels_show_the_same_time_for_the_ladders_run():
    work = Workload.from_text(TEXTS["prose"] * 20, "gpt2")
    report = run_ladder(work, 20, "v1,v6", repeats=1, log=None, sweep=True)
    for r in report.results:
        swept = dict(r.sweep)
        assert swept, f"{r.name} was not swept"
        assert swept[20] == r.seconds          # the bar (left panel) and the point (right panel)
        assert set(swept) == set(harness.sweep_points(20))


def test_every_rung_is_timed_repeats_times_even_a_slow_one(monkeypatch):
    """A slow rung timed once is at the mercy of a busy machine (v3 once came out slower than
    v1): every rung is timed ``repeats`` times; the median is its time, the runs' range its spread."""
    import statistics
    monkeypatch.setattr(harness, "MIN_TOTAL", 0.0)          # every rung counts as slow
    work = Workload.from_text(TEXTS["prose"] * 5, "gpt2")
    report = run_ladder(work, 5, "v1,v3,v6", repeats=3, log=None)
    for r in report.results:
        assert len(r.runs) == 3, r.name
        assert r.seconds == statistics.median(r.runs) and r.spread == (min(r.runs), max(r.runs))
        assert r.spread_text() == f"{min(r.runs):.3f}-{max(r.runs):.3f}" and r.spread_text() in report.table()


def test_the_chart_shows_each_rungs_spread_as_error_bars():
    need("matplotlib")
    from matplotlib.container import ErrorbarContainer
    work = Workload.from_text(TEXTS["prose"] * 5, "gpt2")
    report = run_ladder(work, 5, "v1,v4,v6", repeats=3, log=None)
    per_rung = report.plot().axes[0]
    bars = [c for c in per_rung.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == len(report.results)
    for container, r in zip(bars, report.results):
        [(x, low), (_, high)] = container.lines[2][0].get_segments()[0]
        assert low == pytest.approx(min(r.runs)) and high == pytest.approx(max(r.runs))
    assert "fastest-slowest run" in [t.get_text() for t in per_rung.get_legend().get_texts()]
