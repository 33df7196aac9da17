"""The merging's time left is steady: fed a merging's reports with recount pauses, a busy
machine's holds and noisy merge costs, the estimate a Bar shows never jumps (a stated bound per
update) and stays near the truth; JSON progress lines of a real training's merging carry it as
``seconds_left``."""
from __future__ import annotations

import json
import random

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
