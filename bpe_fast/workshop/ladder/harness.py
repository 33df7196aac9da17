"""The harness behind ``bpe-fast profile``: time the rungs, check their merges, draw the chart.

    from bpe_fast.workshop.ladder import Workload
    from bpe_fast.workshop.ladder.harness import run_ladder
    report = run_ladder(Workload.load("big.txt"), n_merges=20)
    print(report.table()); report.plot("ladder.png"); json.dump(report.to_json(), fh)

* Timing: the corpus is split into chunks once, before anything is timed, and every rung gets
  that same list. A rung is timed with ``time.perf_counter`` around ``train(chunks, n)``, with
  no profiler attached, ``repeats`` times (slow rungs too: timed once, a busy machine's pause
  can put v3 behind v1), and more, up to ``CHEAP_REPEATS`` runs, while its runs add up to less
  than ``MIN_TOTAL`` seconds; the median is reported, and the spread (fastest and slowest run)
  beside it, as error bars in the chart. The garbage collector stays on, as it is when anyone
  runs these trainers (and was in the notebook).
* Agreement: each rung's merges are compared with ``bpe_fast.training.reference.train_reference`` on the
  same word counts. When they differ, the first difference is examined: if both pairs had the
  same count there, the rung broke a tie its own way (its ``TIE_RULE`` says how); otherwise it
  is wrong, and the report says so.
* Budget: a rung whose every merge re-reads the corpus (cost "recount") is first timed on one
  merge; if that times the number of merges exceeds ``budget`` seconds, it is skipped with a
  message. v1-v3 are never skipped (nor probed) at the notebook's workload or a smaller one.
* ``line_profiler=True`` runs each rung once more under line_profiler (its hot functions, as the
  notebook's ``%lprun``) and keeps both times: the tracing overhead is part of the lesson.
* Progress: before each rung that may be slow, ``log`` gets the rung and an estimate of its time
  (recounting rungs: one merge timed first, times the merges); after each rung (and each
  line-profiled run, and each sweep) ``on_update`` gets the report so far, so the command line
  writes its JSON and chart as rungs finish, not only at the end.
"""
from __future__ import annotations

import io
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass, field

from ...errors import BpeFastError, require
from ...training.reference import count_pairs, merge_word, train_reference
from . import DEFAULT_CHARS, DEFAULT_MERGES, Rung, Workload, select

DEFAULT_REPEATS = 3           # timed runs of every rung, however slow
CHEAP_REPEATS = 7             # a cheap rung's runs (while they add up to under MIN_TOTAL)
DEFAULT_BUDGET = 300.0        # seconds a rung may take before it is skipped (0: never skip)
MIN_TOTAL = 3.0               # time a rung more than ``repeats`` times while its runs add up to less than this
LINE_PROFILER_OVERHEAD = (3, 9)   # how much slower a rung runs under line_profiler (RESULTS_ladder.md)
ALWAYS_RUN = ("v1", "v2", "v3")   # at the notebook's workload (or smaller), never skipped
SWEEP_MERGES = (1, 2, 5, 10, 20, 50, 100, 200)
SWEEP_LIMIT = 30.0            # seconds one rung's merge sweep may take (estimated)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class RungResult:
    rung: Rung
    seconds: float | None = None             # median of runs, without line_profiler
    runs: list[float] = field(default_factory=list)
    merges: list[tuple[int, int]] | None = None
    estimate: float | None = None            # from the one-merge probe (recounting rungs)
    skipped: str | None = None               # why it did not run
    merges_agree: bool | None = None         # identical to the reference?
    agreement: str = ""                      # ... and if not, why
    speedup: float | None = None             # over v1
    profiled_seconds: float | None = None    # one run under line_profiler
    line_profile: str | None = None          # line_profiler's per-line tables
    sweep: list[tuple[int, float]] = field(default_factory=list)   # (merges, seconds)

    @property
    def name(self) -> str:
        return self.rung.name

    @property
    def spread(self) -> tuple[float, float] | None:
        """(fastest, slowest) of the timed runs; None before any."""
        return (min(self.runs), max(self.runs)) if self.runs else None

    def spread_text(self) -> str:
        """The runs' range, "0.91-1.20" (seconds), or "-" with fewer than two runs."""
        if len(self.runs) < 2:
            return "-"
        low, high = min(self.runs), max(self.runs)
        return f"{low:.3f}-{high:.3f}"

    def measured(self) -> tuple[float, list[tuple[int, int]]]:
        """(median seconds, merges) of a rung that ran: what profiling and sweeping start from."""
        if self.seconds is None or self.merges is None:
            raise ValueError(f"{self.name} was not timed ({self.skipped or 'not run yet'})")
        return self.seconds, self.merges


# -- timing ------------------------------------------------------------------------------------
def time_once(rung: Rung, chunks: list[str], n_merges: int) -> tuple[float, list]:
    start = time.perf_counter()
    merges = rung.train(chunks, n_merges)
    return time.perf_counter() - start, merges


def time_rung(rung: Rung, chunks: list[str], n_merges: int, repeats: int) -> tuple[list[float], list]:
    """Run times (``repeats`` of them; more, up to CHEAP_REPEATS, while they add up to under
    MIN_TOTAL seconds) and the merges of the first run."""
    seconds, merges = time_once(rung, chunks, n_merges)
    runs = [seconds]
    while len(runs) < repeats or (len(runs) < CHEAP_REPEATS and sum(runs) < MIN_TOTAL):
        seconds, again = time_once(rung, chunks, n_merges)
        if again != merges:
            raise RuntimeError(f"{rung.name} learned different merges on a second run")
        runs.append(seconds)
    return runs, merges


def is_notebook_workload(workload: Workload, n_merges: int) -> bool:
    return len(workload.text) <= DEFAULT_CHARS and n_merges <= DEFAULT_MERGES


def budget_check(rung: Rung, workload: Workload, n_merges: int, budget: float) -> tuple[float | None, str | None]:
    """(estimated seconds, reason to skip or None).

    Only recounting rungs are probed: each of their merges costs about the same (a full pass
    over the corpus), so n merges take about n times one. Incremental rungs do most of their
    work up front and are never skipped.
    """
    if rung.cost != "recount" or budget <= 0 or n_merges <= 1:
        return None, None
    if rung.name in ALWAYS_RUN and is_notebook_workload(workload, n_merges):
        return None, None
    probe, _ = time_once(rung, workload.chunks, 1)
    estimate = probe * n_merges
    if estimate <= budget:
        return estimate, None
    return estimate, (f"skipped: one merge took {probe:.2f} s, so {n_merges} merges would take about "
                      f"{estimate:,.0f} s, over the budget of {budget:,.0f} s (--budget)")


# -- agreement ---------------------------------------------------------------------------------
def token_bytes(merges: list[tuple[int, int]]) -> list[bytes]:
    """The bytes of every token: 0..255, then one per merge."""
    vocab = [bytes([b]) for b in range(256)]
    for left, right in merges:
        vocab.append(vocab[left] + vocab[right])
    return vocab


def show_pair(pair: tuple[int, int], vocab: list[bytes]) -> str:
    left, right = (vocab[i].decode("utf-8", "replace") if i < len(vocab) else f"<{i}>" for i in pair)
    return f"{pair} = {left!r}+{right!r}"


class Referee:
    """Compares merges with the reference and explains the first difference."""

    def __init__(self, workload: Workload, n_merges: int):
        self.word_counts = workload.word_counts
        self.reference = train_reference(self.word_counts, n_merges)
        self._counts_before: dict[int, dict] = {}

    def pair_counts_before(self, k: int) -> dict:
        """Every pair's count after the reference's first k merges (they are the same for
        the rung up to its first difference). Cached: rungs that tie alike ask the same k."""
        if k not in self._counts_before:
            words = [list(w) for w in self.word_counts]
            for i, pair in enumerate(self.reference[:k]):
                words = [merge_word(w, pair, 256 + i) for w in words]
            self._counts_before[k] = count_pairs(words, list(self.word_counts.values()))
        return self._counts_before[k]

    def judge(self, rung: Rung, merges: list[tuple[int, int]]) -> tuple[bool, str]:
        ref = self.reference
        if merges == ref:
            return True, "identical to the reference"
        k = next((i for i, (a, b) in enumerate(zip(merges, ref)) if a != b), min(len(merges), len(ref)))
        if k == len(merges) or k == len(ref):
            return False, f"{rung.name} made {len(merges)} merges, the reference {len(ref)}; the first {k} agree"
        counts = self.pair_counts_before(k)
        vocab = token_bytes(ref[:k])
        mine, theirs = counts.get(merges[k], 0), counts[ref[k]]
        if mine == theirs:
            return False, (f"ties broken differently: at merge {k}, {show_pair(merges[k], vocab)} and "
                           f"{show_pair(ref[k], vocab)} both occur {mine:,} times. {rung.name}: "
                           f"{rung.tie_rule}; the reference takes the smallest (left, right). "
                           f"Later merges follow from a different history.")
        return False, (f"WRONG at merge {k}: {rung.name} chose {show_pair(merges[k], vocab)} "
                       f"({mine:,} occurrences) but {show_pair(ref[k], vocab)} occurs {theirs:,} times")


# -- line_profiler -----------------------------------------------------------------------------
def line_profile(rung: Rung, chunks: list[str], n_merges: int) -> tuple[float, str]:
    """One run under line_profiler with the rung's hot functions: (seconds, per-line tables)."""
    LineProfiler = require("line_profiler", "profile", "line-profiling a rung").LineProfiler

    profiler = LineProfiler()
    for function in rung.hot_functions:
        profiler.add_function(function)
    start = time.perf_counter()
    profiler.runcall(rung.train, chunks, n_merges)
    seconds = time.perf_counter() - start
    out = io.StringIO()
    profiler.print_stats(stream=out, output_unit=1e-3, stripzeros=True)
    return seconds, out.getvalue()


# -- time against number of merges ---------------------------------------------------------------
def sweep_points(n_merges: int) -> list[int]:
    return sorted({m for m in SWEEP_MERGES} | {n_merges})


def merge_sweep(result: RungResult, chunks: list[str], points: list[int], limit: float, log,
                timed_at: int | None = None) -> None:
    """Time the rung at each number of merges, if the whole sweep is estimated to be quick
    (the median of 3 runs per point if that fits in ``limit`` too). At ``timed_at`` merges (the
    ladder's own run) the rung's measured time is reused, so the chart's two panels show the
    same number for it."""
    seconds, merges = result.measured()
    if result.rung.cost == "recount":               # every merge costs about the same
        estimate = seconds / max(len(merges), 1) * sum(points)
    else:  # mostly set-up; allow 3x for points beyond the merges already timed
        estimate = seconds * len(points) * (1 if max(points) <= len(merges) else 3)
    if estimate > limit:
        log(f"  {result.name}: not swept (about {estimate:.0f} s); the chart extrapolates it")
        return
    runs = 3 if 3 * estimate <= limit else 1
    if runs * estimate >= 2:
        log(f"  {result.name}: sweeping{_about(runs * estimate)} ...")
    for m in points:
        if m == timed_at:
            result.sweep.append((m, seconds))
            continue
        result.sweep.append((m, statistics.median(time_once(result.rung, chunks, m)[0] for _ in range(runs))))


# -- the whole ladder --------------------------------------------------------------------------
def check_run_args(n_merges: int, repeats: int, budget: float) -> None:
    if not isinstance(n_merges, int) or n_merges <= 0:
        raise BpeFastError(f"merges must be a positive number, not {n_merges!r}")
    if not isinstance(repeats, int) or repeats <= 0:
        raise BpeFastError(f"repeats must be a positive number, not {repeats!r}")
    if budget < 0:
        raise BpeFastError(f"budget must be >= 0 seconds (0: never skip), not {budget!r}")


def _about(seconds: float | None) -> str:
    return "" if seconds is None else f", about {seconds:,.0f} s" if seconds >= 2 else f", about {seconds:.1f} s"


def run_ladder(workload: Workload, n_merges: int = DEFAULT_MERGES, versions=None,
               repeats: int = DEFAULT_REPEATS, budget: float = DEFAULT_BUDGET,
               line_profiler: bool = False, sweep: bool = False, sweep_limit: float = SWEEP_LIMIT,
               log=_stderr, on_update=None) -> Report:
    """Time, check (and optionally line-profile and sweep) the chosen rungs on one workload.

    ``sweep`` also times each rung at SWEEP_MERGES merges (for the chart's second panel) when
    that is estimated to take under ``sweep_limit`` seconds; the chart extrapolates the others.
    ``log`` gets progress messages (None: silent): which rung runs, with an estimate of its time
    where one exists. ``on_update(report)`` is called after each step with the report so far
    (``report.complete`` is True on the last call).
    """
    check_run_args(n_merges, repeats, budget)
    rungs = select(versions)
    log = log or (lambda message: None)
    update = on_update or (lambda report: None)
    log(f"reference merges (bpe_fast.training.reference) for {n_merges} merges ...")
    referee = Referee(workload, n_merges)
    report = Report(workload.describe() | {"merges": n_merges}, [], referee.reference)
    for k, rung in enumerate(rungs, 1):
        result = RungResult(rung)
        result.estimate, result.skipped = budget_check(rung, workload, n_merges, budget)
        if result.skipped:
            log(f"{rung.name}: {result.skipped}")
        else:
            estimate = result.estimate
            if estimate is None and rung.cost == "recount" and n_merges > 1:
                estimate = time_once(rung, workload.chunks, 1)[0] * n_merges     # every merge costs alike
            runs = f", {repeats} runs" if repeats > 1 else ""
            log(f"[{k}/{len(rungs)}] {rung.name} ({rung.label}): {n_merges} merges{runs}"
                f"{_about(None if estimate is None else estimate * repeats)} ...")
            result.runs, result.merges = time_rung(rung, workload.chunks, n_merges, repeats)
            result.seconds = statistics.median(result.runs)
            result.merges_agree, result.agreement = referee.judge(rung, result.merges)
            spread = f", {result.spread_text()} s" if len(result.runs) > 1 else ""
            log(f"      {rung.name}: {result.seconds:.3f} s (median of {len(result.runs)}{spread})")
        report.results.append(result)
        report.compute_speedups()
        update(report)
    ran = [r for r in report.results if not r.skipped]
    if line_profiler:
        low, high = LINE_PROFILER_OVERHEAD
        for result in ran:
            seconds, _ = result.measured()
            log(f"{result.name}: running under line_profiler, about {seconds * low:,.1f}-"
                f"{seconds * high:,.1f} s (it slows a rung {low}-{high}x) ...")
            result.profiled_seconds, result.line_profile = line_profile(result.rung, workload.chunks, n_merges)
            update(report)
    if sweep:
        log(f"timing against the number of merges ({', '.join(map(str, sweep_points(n_merges)))}) ...")
        for result in ran:
            merge_sweep(result, workload.chunks, sweep_points(n_merges), sweep_limit, log, timed_at=n_merges)
            update(report)
    report.complete = True
    update(report)
    return report


# -- the report ----------------------------------------------------------------------------------
def _agree_cell(r: RungResult) -> str:
    if r.skipped:
        return "-"
    if r.merges_agree:
        return "yes"
    return "ties differ" if r.agreement.startswith("ties") else "NO"


@dataclass
class Report:
    workload: dict
    results: list[RungResult]
    reference: list[tuple[int, int]]
    speedup_basis: str = "v1"
    complete: bool = False          # False while run_ladder is still running rungs

    def compute_speedups(self) -> None:
        """Speed-up over v1: its measured time, else its estimate if it was skipped."""
        v1 = next((r for r in self.results if r.name == "v1"), None)
        base = v1 and (v1.seconds or v1.estimate)
        if v1 is not None and v1.seconds is None and base:
            self.speedup_basis = "v1 (estimated: skipped)"
        for r in self.results:
            r.speedup = base / r.seconds if base and r.seconds else None

    def headline(self, short: bool = False) -> str:
        """The workload in a line; ``short`` (chart titles): no folders, only the corpus's name."""
        w = self.workload
        corpus = w["corpus"]
        # "Python standard library (46 .py files from <its folder>)" -> without the folder; a path -> its name
        if short:
            corpus = re.sub(r" from [^)]*\)", ")", corpus) if corpus.startswith("Python standard library") \
                else os.path.basename(corpus)
        return (f"{w['chars']:,} characters of {corpus}, pattern {w['pattern']}: {w['chunks']:,} chunks "
                f"({w['unique_chunks']:,} distinct), {w['merges']} merges")

    def table(self) -> str:
        """The results as a text table, with notes on skipped and disagreeing rungs."""
        profiled = any(r.profiled_seconds is not None for r in self.results)
        header = ["rung", "seconds", "runs", "fastest-slowest", f"speed-up over {self.speedup_basis}", "merges agree"]
        if profiled:
            header += ["with line_profiler", "overhead"]
        header.append("idea")
        rows = []
        for r in self.results:
            row = [r.name, f"{r.seconds:.3f}" if r.seconds is not None else "skipped",
                   str(len(r.runs)) if r.runs else "-", r.spread_text(), f"{r.speedup:,.1f}x" if r.speedup else "-",
                   _agree_cell(r)]
            if profiled:
                p = r.profiled_seconds
                row += [f"{p:.3f}" if p is not None else "-", f"{p / r.seconds:.1f}x" if p and r.seconds else "-"]
            rows.append(row + [r.rung.idea])
        widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]
        lines = [self.headline(),
                 "timed without line_profiler, from the same pre-split chunks; seconds = median of the runs "
                 "(fastest-slowest: their spread; runs that overlap do not rank two rungs)", ""]
        lines += ["  ".join(c.rjust(w) if 0 < i < len(header) - 1 and c[:1].isdigit() else c.ljust(w)
                            for i, (c, w) in enumerate(zip(row, widths))).rstrip()
                  for row in [header] + rows]
        vocab = token_bytes(self.reference)
        first = ", ".join(repr(vocab[256 + i].decode("utf-8", "replace")) for i in range(min(8, len(self.reference))))
        lines += ["", f"reference's first merges: {first}"]
        notes = [f"{r.name}: {r.skipped or r.agreement}" for r in self.results if r.skipped or r.merges_agree is False]
        return "\n".join(lines + notes)

    def line_profiles(self) -> str:
        parts = []
        for r in self.results:
            if r.line_profile:
                parts.append(f"===== {r.name} ({r.rung.label}) under line_profiler: {r.profiled_seconds:.3f} s "
                             f"(without: {r.seconds:.3f} s) =====\n{r.line_profile}")
        return "\n".join(parts)

    def to_json(self) -> dict:
        rungs = []
        for r in self.results:
            rungs.append({
                "name": r.name, "seconds": r.seconds, "speedup": r.speedup, "merges_agree": r.merges_agree,
                "label": r.rung.label, "idea": r.rung.idea, "runs": r.runs, "agreement": r.agreement or None,
                "seconds_min": r.spread[0] if r.spread else None, "seconds_max": r.spread[1] if r.spread else None,
                "skipped": r.skipped, "estimated_seconds": r.estimate,
                "seconds_line_profiled": r.profiled_seconds,
                "merges": [list(m) for m in r.merges] if r.merges is not None else None,
                "sweep": [{"merges": m, "seconds": s} for m, s in r.sweep] or None,
            })
        return {"workload": dict(self.workload, timing="time.perf_counter, no profiler attached",
                                 speedup_over=self.speedup_basis),
                "complete": self.complete,
                "rungs": rungs, "reference_merges": [list(m) for m in self.reference]}

    def plot(self, path=None):
        """The workshop chart; saved to ``path`` (PNG) if given. Returns the matplotlib Figure."""
        return draw(self, path)


# -- the chart ---------------------------------------------------------------------------------
def draw(report: Report, path=None):
    """Two panels: seconds per rung (log scale), and seconds against merges for the fast rungs.

    Drawn on a bare Figure with the Agg canvas, so it needs no display and leaves pyplot's
    global state alone (a notebook shows the returned Figure inline).
    """
    require("matplotlib", "plot", "the workshop chart")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    fig = Figure(figsize=(13, 5.2), layout="constrained")
    FigureCanvasAgg(fig)
    per_rung, per_merges = fig.subplots(1, 2)
    _draw_rungs(per_rung, report)
    _draw_merges(per_merges, report)
    plain = FuncFormatter(_plain_number)
    for axis in (per_rung.yaxis, per_merges.xaxis, per_merges.yaxis):    # 0.01, 1, 100: not 10^-2
        axis.set_major_formatter(plain)
    fig.suptitle(report.headline(short=True), fontsize=11)
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def _plain_number(value: float, _position=None) -> str:
    return "" if value <= 0 else f"{value:,.0f}" if value >= 1000 else f"{value:.10g}"


def _draw_rungs(ax, report: Report) -> None:
    results = report.results
    x = list(range(len(results)))
    profiled = [r.profiled_seconds for r in results]
    width = 0.4 if any(profiled) else 0.7
    shift = -width / 2 if any(profiled) else 0.0
    errorbars = False
    for i, r in enumerate(results):
        seconds = r.seconds or r.estimate
        if seconds is None:
            continue
        skipped = r.seconds is None
        ax.bar(i + shift, seconds, width, color="lightgray" if skipped else "tab:blue",
               hatch="//" if skipped else None, label="without line_profiler" if i == 0 else None)
        top = seconds
        if len(r.runs) > 1:                  # the spread: fastest and slowest run around the median
            low, top = min(r.runs), max(r.runs)
            ax.errorbar(i + shift, seconds, yerr=[[seconds - low], [top - seconds]], fmt="none", ecolor="black",
                        capsize=4, linewidth=1, label="fastest-slowest run" if not errorbars else None)
            errorbars = True
        text = f"~{seconds:.3g} s\n(skipped)" if skipped else f"{seconds:.3g} s"
        if r.speedup and not skipped:
            text += f"\n{r.speedup:,.0f}x" if r.speedup >= 10 else f"\n{r.speedup:.1f}x"
        ax.annotate(text, (i + shift, top), ha="center", va="bottom", fontsize=8,
                    xytext=(0, 2), textcoords="offset points")
        if profiled[i]:
            ax.bar(i + width / 2, profiled[i], width, color="tab:orange",
                   label="with line_profiler" if not any(profiled[:i]) else None)
    ax.set_yscale("log")
    ax.set_xticks(x, [f"{r.name}\n{r.rung.label}" for r in results], fontsize=9)
    ax.set_ylabel("seconds (log scale)")
    runs = sorted({len(r.runs) for r in results if r.runs})
    counted = f"median of {runs[0]}" if len(runs) == 1 else f"median of {runs[0]}-{runs[-1]}" if runs else ""
    ax.set_title(f"time per rung, {report.workload['merges']} merges ({counted} runs; speed-up over v1)"
                 if runs and runs != [1] else f"time per rung, {report.workload['merges']} merges (speed-up over v1)")
    ax.margins(y=0.25)
    if any(profiled) or errorbars:
        ax.legend(loc="upper right", fontsize=8)


def _draw_merges(ax, report: Report) -> None:
    points = sweep_points(report.workload["merges"])
    for r in report.results:
        if r.sweep:
            ax.plot(*zip(*r.sweep), marker="o", label=f"{r.name} {r.rung.label}")
        elif r.seconds is not None and r.merges is not None and r.rung.cost == "recount":
            per_merge = r.seconds / max(len(r.merges), 1)
            line, = ax.plot(points, [per_merge * m for m in points], linestyle="--",
                            label=f"{r.name} {r.rung.label} (extrapolated: {per_merge:.2g} s/merge)")
            ax.plot([len(r.merges)], [r.seconds], marker="o", color=line.get_color())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of merges (log scale)")
    ax.set_ylabel("seconds (log scale)")
    ax.set_title("time against merges: recounting grows, incremental barely does")
    ax.grid(True, which="both", alpha=0.3)
    if ax.lines:
        ax.legend(fontsize=8)
