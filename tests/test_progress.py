"""Progress (progress.py): bars on a terminal, one summary line a stage elsewhere, JSON lines for
logs, a callback, the logger; a stage counted ahead reports from the main thread when taken.

The merging's time left is steady: fed a merging's reports with recount pauses, a busy
machine's holds and noisy merge costs, the estimate a Bar shows never jumps (a stated bound per
update) and stays near the truth; JSON progress lines of a real training's merging carry it as
``seconds_left``."""
from __future__ import annotations

import json
import os
import random
import sys
import time
from typing import Any

import pytest

import bpe_fast
from bpe_fast import progress

from .conftest import small_text

MERGES = 40_000


def merging_reports(seed: int, every: int = 256) -> list[tuple[int, float]]:
    """(merges done, seconds) as the kernel reports them (every 256 merges): each merge costs
    about merge**-0.5 (a power law, as on real corpora) times noise; three recounts pause for
    seconds; every few seconds the process is held (a busy machine) for up to 1.5 s."""
    rng = random.Random(seed)
    recounts = {3_000: 4.5, 12_000: 3.0, 30_000: 2.4}
    t, reports, next_hold = 0.0, [], 5.0
    for k in range(1, MERGES + 1):
        t += 0.2 * k ** -0.5 * rng.uniform(0.6, 1.4) + recounts.get(k, 0.0)
        if t > next_hold:
            t += rng.uniform(0.3, 1.5)
            next_hold = t + rng.uniform(2, 8)
        if k % every == 0 or k == MERGES:
            reports.append((k, t))
    return reports


def shown_estimates(reports, monkeypatch) -> list[tuple[float, float | None]]:
    """(seconds, the time left the Bar shows) after each report, on a clock that follows the reports."""
    clock = [0.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: clock[0])
    shown = []
    with progress.Bar("none", "merging", MERGES, decaying=True) as bar:
        for done, t in reports:
            clock[0] = t
            bar.reach(done)
            shown.append((t, bar.eta()))
    return shown


def test_the_time_left_never_jumps(monkeypatch):
    """Between two reports dt seconds apart, the estimate counts down, and beyond that grows or
    shrinks at most 2x per smoothing time (3 s; a third of the time passed in the first 9 s):
    after 9 s, 1.26x a second. Before, the fit of the last two doublings was shown as it came,
    jumping 10x and more at each recount."""
    for seed in range(5):
        shown = [(t, left) for t, left in shown_estimates(merging_reports(seed), monkeypatch) if left is not None]
        assert len(shown) > 100
        for (t0, old), (t1, new) in zip(shown, shown[1:]):
            dt = t1 - t0
            limit = 2 ** (dt / min(3.0, t1 / 3))
            if old >= 1 and new >= 1:        # (under a second, the end is near: shown as fitted)
                assert new <= old * limit * 1.000001, (seed, t0, old, t1, new)
                assert new >= min(old - dt, old / limit) * 0.999999, (seed, t0, old, t1, new)


def test_the_time_left_stays_near_the_truth(monkeypatch):
    """From a fifth of the run to nine tenths, the estimate is within 3x of the time actually left
    (recounts still to come are not foreseen), and within 1.6x at the median."""
    for seed in range(5):
        reports = merging_reports(seed)
        end = reports[-1][1]
        ratios = []
        for t, left in shown_estimates(reports, monkeypatch):
            if 0.2 * end < t < 0.9 * end:
                assert left is not None
                ratios.append(max(left / (end - t), (end - t) / left))
        assert max(ratios) < 3, (seed, max(ratios))
        assert sorted(ratios)[len(ratios) // 2] < 1.6, seed


def test_json_lines_of_a_real_merging_carry_seconds_left(monkeypatch, capsys):
    monkeypatch.setattr(progress, "JSON_EVERY", 0.0)            # a line at every report (256 merges)
    bpe_fast.train_from_iterator([small_text()], 1500, progress="json", workers=1)
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    merging = [line for line in lines if line["stage"] == "merging"]
    assert len(merging) >= 5 and all("seconds_left" in line for line in merging)
    assert merging[-1]["seconds_left"] == 0 and merging[-1]["current"] == merging[-1]["total"]
    known = [line["seconds_left"] for line in merging[:-1] if line["seconds_left"] is not None]
    assert known and all(left >= 0 for left in known)
    assert all("seconds_left" not in line for line in lines if line["stage"] != "merging")


def test_progress_bars_when_asked(capsys):
    docs = [f"line {i} of text\n" for i in range(2000)]
    bpe_fast.train_from_iterator(docs, 300, progress="bar", workers=1)
    err = capsys.readouterr().err
    assert "counting" in err and "merging" in err and "44/44" in err


def test_off_a_terminal_each_stage_says_one_line_and_draws_no_bar(capsys):
    bpe_fast.train_from_iterator(["some text here " * 20], 260, workers=1)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in lines] == ["bpe_fast counting", "bpe_fast merging"]
    assert "(characters 300, chunks 61, distinct 5)" in lines[0] and "(merges 4)" in lines[1]
    bpe_fast.train_from_iterator(["some text here " * 20], 260, workers=1, progress="none")
    assert capsys.readouterr().err == ""


def test_a_terminal_without_rows_gets_no_bar(monkeypatch):
    from bpe_fast import progress

    class Terminal:
        def isatty(self):
            return True

        def fileno(self):
            return 2

    monkeypatch.setattr(progress.sys, "stderr", Terminal())
    monkeypatch.setattr(progress.os, "get_terminal_size", lambda fd: os.terminal_size((0, 0)))
    assert progress.mode_of("auto") == "summary"
    monkeypatch.setattr(progress.os, "get_terminal_size", lambda fd: os.terminal_size((80, 24)))
    assert progress.mode_of("auto") == "bar"


def test_jupyter_without_ipywidgets_gets_the_text_bar_not_a_warning(monkeypatch):
    from bpe_fast import progress
    monkeypatch.setattr(progress, "_in_notebook", lambda: True)
    monkeypatch.setitem(sys.modules, "ipywidgets", None)          # "not installed"
    import tqdm.std
    assert progress._tqdm_class() is tqdm.std.tqdm


def test_the_merging_time_left_follows_the_falling_cost_of_merges():
    """Merge k costs about k**-0.8 here (a power law, as on real corpora): the average rate would
    say 5x too much at 10%; the estimate is within 20%."""
    from bpe_fast.progress import decaying_eta
    total = 20_000
    cost = [(k + 1) ** -0.8 for k in range(total)]
    elapsed, samples = 0.0, []
    for k, c in enumerate(cost, 1):
        elapsed += c
        if k % 256 == 0:
            samples.append((k, elapsed))
    done, spent = samples[7]                       # 2048 merges, about a tenth
    truth = sum(cost[done:])
    assert abs(decaying_eta(samples, done, total) - truth) < 0.2 * truth
    assert spent / done * (total - done) > 2 * truth         # what the average rate would say


def test_progress_as_json_lines_for_logs(capsys):
    import json
    docs = [f"line {i} of text\n" for i in range(2000)]
    bpe_fast.train_from_iterator(docs, 300, progress="json", workers=1)
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    stages = [line["stage"] for line in lines]
    assert {"counting", "pairs", "merging"} <= set(stages)
    last = [line for line in lines if line["stage"] == "merging"][-1]
    assert last["current"] == last["total"] == 44 and last["elapsed"] >= 0
    assert all(set(line) == {"stage", "current", "total", "elapsed"} | ({"seconds_left"} if line["stage"] == "merging"
                                                                         else set()) for line in lines)


def test_progress_callback_and_the_logger(caplog):
    seen = []
    with caplog.at_level("INFO", logger="bpe_fast"):
        bpe_fast.train_from_iterator([small_text()], 270, workers=1,
                                     progress=lambda stage, done, total, elapsed: seen.append((stage, done, total)))
    assert ("merging", 14, 14) in seen
    pairs = [s for s in seen if s[0] == "pairs"]
    assert pairs and pairs[-1][1] == pairs[-1][2] > 0           # the pair count reports too
    assert any("counting:" in r.message for r in caplog.records)
    assert any("merging:" in r.message and "merges 14" in r.message for r in caplog.records)


def test_a_stage_counted_ahead_reports_when_taken_on_the_main_thread(capsys, caplog):
    """SuperBPE with workers counts stage two while stage one learns; its progress waits: one
    summary line and one log record each, stage by stage in order; a callback is called from
    the main thread only, the count ahead once (done, with its own elapsed time) after stage
    one's merging; JSON gives it one line."""
    import itertools
    import json
    import threading
    docs = [small_text()] * 3
    settings: dict[str, Any] = dict(superword_at=500, workers=2, batch_chars=4000)   # several batches: workers
    with caplog.at_level("INFO", logger="bpe_fast"):
        bpe_fast.train_from_iterator(docs, 700, **settings)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in lines] == ["bpe_fast counting", "bpe_fast merging"] * 2
    assert [r.message.split(":")[0] for r in caplog.records] == ["counting", "merging"] * 2
    assert all(r.threadName == "MainThread" for r in caplog.records)
    seen = []

    def callback(stage, done, total, elapsed):
        seen.append((stage, done, total, elapsed, threading.current_thread() is threading.main_thread()))

    bpe_fast.train_from_iterator(docs, 700, progress=callback, **settings)
    assert all(on_main for *_, on_main in seen)
    runs = [(stage, list(events)) for stage, events in itertools.groupby(seen, key=lambda e: e[0])]
    assert [stage for stage, _ in runs] == ["counting", "pairs", "merging", "counting", "pairs", "merging"]
    [(_, done, total, elapsed, _)] = runs[3][1]
    assert (done, total) == runs[0][1][-1][1:3] and done == sum(map(len, docs)) and elapsed > 0
    bpe_fast.train_from_iterator(docs, 700, progress="json", **settings)
    stages = [json.loads(line)["stage"] for line in capsys.readouterr().err.splitlines()]
    assert [stage for stage, _ in itertools.groupby(stages)][3] == "counting"
    assert stages.count("counting") - stages[:stages.index("merging")].count("counting") == 1


def test_a_deferred_stage_shows_one_complete_report_however_long_ago_it_ended(capsys):
    import json
    from bpe_fast.progress import Bar, Deferred
    deferred = Deferred("json")
    with Bar(deferred, "counting", 100, unit="B") as bar:
        bar.advance(60)
        bar.advance(40)
    time.sleep(0.3)                        # longer than JSON lines' spacing
    assert capsys.readouterr().err == ""
    deferred.show()
    [line] = [json.loads(text) for text in capsys.readouterr().err.splitlines()]
    assert line["stage"] == "counting" and line["current"] == line["total"] == 100 and line["elapsed"] >= 0.3


def test_bad_progress_option_is_refused():
    with pytest.raises(bpe_fast.ArgumentError, match="progress must be one of auto, bar, json, none"):
        bpe_fast.train_from_iterator(["text"], 270, progress="fancy")
