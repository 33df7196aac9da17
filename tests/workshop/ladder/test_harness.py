"""The ladder's harness (bpe_fast.workshop.ladder.harness): it times every rung, says where a rung's
merges part from the reference's and why (a tie broken otherwise), skips a rung over the time
budget with an estimate, profiles line by line, and draws the chart of what it timed.

No timing is asserted: timings are what the harness measures, not what it must produce.
"""
from __future__ import annotations

import pytest

from bpe_fast.workshop.ladder import RUNGS, Workload, harness
from bpe_fast.workshop.ladder.harness import budget_check, line_profile, run_ladder

from ...conftest import need
from .conftest import TEXTS


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


def test_run_ladder_reports_after_every_rung():
    work = Workload.from_text(TEXTS["prose"], "gpt2")
    updates = []
    run_ladder(work, 5, "v1,v4,v6", repeats=1, log=None,
               on_update=lambda report: updates.append(([r.name for r in report.results], report.complete)))
    assert updates == [(["v1"], False), (["v1", "v4"], False), (["v1", "v4", "v6"], False),
                       (["v1", "v4", "v6"], True)]


def test_line_profile_of_the_kernel_rung_shows_its_python_lines():
    work = Workload.from_text(TEXTS["prose"], "gpt2")
    seconds, text = line_profile(RUNGS["v6"], work.chunks, 5)
    assert seconds > 0 and "train_merges(table.symbols" in text


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


def test_the_charts_two_panels_show_the_same_time_for_the_ladders_run():
    work = Workload.from_text(TEXTS["prose"] * 20, "gpt2")
    report = run_ladder(work, 20, "v1,v6", repeats=1, log=None, sweep=True)
    for r in report.results:
        swept = dict(r.sweep)
        assert swept, f"{r.name} was not swept"
        assert swept[20] == r.seconds          # the bar (left panel) and the point (right panel)
        assert set(swept) == set(harness.sweep_points(20))


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
