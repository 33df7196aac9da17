"""``bpe-fast profile`` (bpe_fast.workshop.ladder.cli): the ladder from the command line, its JSON
of the documented shape, per-line profiles, the chart, progress that says which rung runs, and
bad input as one clear line."""
from __future__ import annotations

import json
import re

import pytest

from ...conftest import need


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


def test_profile_and_train_split_alike_by_default():
    from bpe_fast import cli
    from bpe_fast.pretokenize.patterns import DEFAULT_PATTERN
    parser = cli._parser()
    train = parser.parse_args(["train", "x.txt"])
    profile = parser.parse_args(["profile"])
    assert (train.pattern or DEFAULT_PATTERN) == profile.pattern == "cl100k"


@pytest.mark.slow      # 2.4 s; test_charts draws the ladder's chart in the fast suite
def test_cli_plot_writes_a_png(profile_main, tmp_path):
    need("matplotlib")                                   # --plot needs the [plot] extra
    png = tmp_path / "ladder.png"
    assert profile_main(["profile", "--chars", "2000", "--merges", "4", "--versions", "v1,v5,v6",
                         "--repeats", "1", "--plot", str(png), "-q"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("args, message", [
    (["--chars", "0"], "--chars must be a positive"),
    (["--merges", "0"], "--merges must be a positive"),
    (["--versions", "v1,v9"], "--versions: unknown rung 'v9'"),
    (["--corpus", "no/such/corpus.txt"], "--corpus no/such/corpus.txt: no such file"),
    (["--repeats", "0"], "--repeats must be at least 1"),
    (["--budget", "-1"], "--budget must be >= 0"),
    (["--json", "no/such/dir/out.json"], "--json no/such/dir/out.json: the folder no/such/dir does not exist"),
])
def test_cli_bad_input_is_one_clear_line(profile_main, capsys, args, message):
    assert profile_main(["profile", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bpe-fast profile: error: ") and message in err and "\n" not in err
