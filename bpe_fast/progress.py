"""Progress of the long stages (counting, pair counting, merging): a bar, JSON lines, a callback,
or nothing, as ``progress=`` says; and a one-line summary of each stage.

``progress`` takes:

* ``"auto"`` (the default; also ``None``): a bar when standard error is a terminal (one with
  rows and columns) or the code runs in a Jupyter kernel; otherwise (a pipe, a log file, an IDE
  console) one summary line per stage on standard error, so no run is silent;
* ``"bar"`` (also ``True``): a tqdm bar on standard error;
* ``"json"``: one JSON line per update on standard error, ``{"stage": "merging", "current":
  1024, "total": 32512, "elapsed": 1.52}`` (at most a few a second, and one when a stage ends),
  for logs and pipelines with no terminal attached;
* ``"none"`` (also ``False``): nothing;
* a callable, called as ``callback(stage, current, total, elapsed)`` (total may be None).

A stage that runs beside another (SuperBPE's stage-two counting, on a thread while stage one
merges) reports through ``Deferred``: nothing while it runs, its bar and summary once its
result is taken, so two stages never draw at once.

Every stage's summary also goes to the "bpe_fast" logger (INFO), whatever ``progress`` is.

The merging stage's time left is not the average rate's: early merges touch the most frequent
pairs, so each takes far longer than a late one (on mix33 the average rate overestimates by 20x
at 1% done). The time per merge falls roughly as a power law of the merge number, so the
estimate fits that law to the last two doublings of merges (``decaying_eta``), its exponent held
between "each doubling of merges takes as long as the last" and "each merge as long as the last"
(a recount's pause inside one of the two windows would otherwise say 0 s, or 16 min, left).
What is shown is ``SteadyEta``'s: it counts down with the clock and takes a new fit in slowly
(a few seconds' time constant, and at most 2x in one: 1.26x a second), so that bursts of
progress and pauses do not make it jump. JSON lines of the merging carry it as ``seconds_left``.
"""
from __future__ import annotations

import bisect
import importlib.util
import json
import logging
import math
import os
import statistics
import sys
import time
import warnings
from typing import Callable, Union

ProgressOption = Union[str, bool, None, Callable[[str, int, "int | None", float], None], "Deferred"]
MODES = ("auto", "bar", "json", "none")
JSON_EVERY = 0.25                # seconds between two JSON lines of one stage
ETA_EVERY = 0.25                 # seconds between two updates of a time-left estimate
ETA_SMOOTHING = 3.0              # seconds: the time constant a new fit is taken in with (log scale)
ETA_CHANGE_PER_TAU = 2.0         # beyond counting down, an estimate moves at most 2x per time constant
ETA_FLOOR = 1.0                  # seconds: below this, the fit is shown as it is (the stage is ending)

log = logging.getLogger("bpe_fast")


def check(progress: ProgressOption) -> ProgressOption:
    """The option, checked before any work: a mode, a bool, None or a callable."""
    if (isinstance(progress, (Deferred, bool)) or callable(progress) or progress is None
            or (isinstance(progress, str) and progress in MODES)):
        return progress
    raise _argument_error(f"progress must be one of {', '.join(MODES)}, a bool or a callable, not {progress!r}")


def with_alias(progress: ProgressOption, show_progress: bool | None) -> ProgressOption:
    """``progress``, or ``show_progress`` (Hugging Face's keyword, and bpe_fast 0.1's), kept as a
    deprecated alias: True means "bar", False "none"."""
    if show_progress is None:
        return progress
    warnings.warn("show_progress= is deprecated: use progress= ('auto', 'bar', 'json', 'none' or a callable); "
                  "show_progress=True is progress='bar', False is progress='none'", DeprecationWarning, stacklevel=3)
    if progress not in ("auto", None):
        raise _argument_error(f"give progress= or show_progress=, not both (progress={progress!r}, "
                              f"show_progress={show_progress!r})")
    return "bar" if show_progress else "none"


def _argument_error(message: str):
    from .errors import ArgumentError
    return ArgumentError(message)


def mode_of(progress: ProgressOption) -> str | Callable:
    """What the option means here and now: "bar", "summary", "json", "none", the callable, or
    "deferred"."""
    if isinstance(progress, Deferred):
        return "deferred"
    if callable(progress):
        return progress
    if progress is None or progress == "auto":
        return "bar" if _usable_terminal() or _in_notebook() else "summary"
    if isinstance(progress, bool):
        return "bar" if progress else "none"
    return progress


def _usable_terminal() -> bool:
    """Standard error is a terminal with room for a bar (a 0x0 pseudo-terminal, as some CI
    runners and `script` give, would show a bar's every redraw on a line of its own)."""
    try:
        if not sys.stderr.isatty():
            return False
        size = os.get_terminal_size(sys.stderr.fileno())
    except (AttributeError, ValueError, OSError):
        return False
    return size.lines > 0 and size.columns > 0


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    try:
        return shell is not None and type(shell.get_ipython()).__name__ == "ZMQInteractiveShell"
    except AttributeError:
        return False


def _tqdm_class():
    """tqdm's notebook widget in Jupyter when ipywidgets is there, else its text bar (which
    Jupyter shows too; tqdm.auto without ipywidgets warns "IProgress not found" instead)."""
    if _in_notebook() and importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.notebook import tqdm as notebook_tqdm
        return notebook_tqdm
    from tqdm.std import tqdm
    return tqdm


def decaying_eta(samples: list[tuple[int, float]], done: int, total: int) -> float | None:
    """Seconds left when the time per item falls as a power law of the item number: fit the law
    to the time of items done/4..done/2 and done/2..done, and sum it over the items left. None
    until there are enough samples (a few hundred items)."""
    if done < 4 or total <= done:
        return None
    t1 = _window_time(samples, done / 4, done / 2)
    t2 = _window_time(samples, done / 2, done)
    if t1 <= 0 or t2 <= 0:
        return None
    # Time per doubling grows as 2**b. Held to [0, 1]: b = 1 is a constant time per merge, b = 0 a
    # time per merge falling as 1/merge; merges never grow dearer, and the counts they act on fall
    # no faster than Zipf's law. Outside it, a pause in one window (a recount) is all the fit sees.
    b = min(max(math.log2(t2 / t1), 0.0), 1.0)
    ratio = total / done
    if abs(b) < 1e-3:
        return t2 * math.log2(ratio)
    return t2 * (ratio ** b - 1) / (1 - 2 ** -b)


def _window_time(samples: list[tuple[int, float]], low: float, high: float) -> float:
    """The time items low..high took, at their usual pace: the median time per item over the
    sample intervals in the window, times its items, so that one pause (a recount, the process
    held by a busy machine) is not taken for the pace. With few intervals, the plain difference."""
    i = bisect.bisect_left(samples, (low, -math.inf))
    j = min(bisect.bisect_left(samples, (high, -math.inf)), len(samples) - 1)
    part = samples[i:j + 1]
    paces = [(t1 - t0) / (d1 - d0) for (d0, t0), (d1, t1) in zip(part, part[1:]) if d1 > d0]
    pace = statistics.median(paces) if len(paces) >= 3 else 0.0
    if pace <= 0:
        return _time_at(samples, high) - _time_at(samples, low)
    return pace * (part[-1][0] - part[0][0])


def _time_at(samples: list[tuple[int, float]], done: float) -> float:
    """The elapsed time of the first sample at or after ``done`` items."""
    i = bisect.bisect_left(samples, (done, -math.inf))
    return samples[min(i, len(samples) - 1)][1]


def smoothing_time(elapsed: float) -> float:
    """The time constant new estimates are taken in with: ``ETA_SMOOTHING`` seconds, less in a
    stage's first seconds (a third of the time passed), when the first fits are the least sure
    and the estimate must find its scale."""
    return min(ETA_SMOOTHING, max(elapsed, ETA_EVERY) / 3)


class SteadyEta:
    """A time-left estimate that does not jump: fed raw estimates (``update(raw, now)``), it
    counts down with the clock and moves toward each new one in log scale with a time constant
    (``smoothing_time``: ``ETA_SMOOTHING`` seconds once the stage has run a few), never faster
    than ``ETA_CHANGE_PER_TAU`` per time constant (beyond the time that passed), and takes at most
    one new estimate each ``ETA_EVERY`` seconds. Below
    ``ETA_FLOOR`` seconds both ways, the raw estimate is shown as it is: the end is near."""

    def __init__(self):
        self.value: float | None = None
        self.at = 0.0

    def update(self, raw: float | None, now: float) -> float | None:
        if self.value is None:
            if raw is not None:
                self.value, self.at = raw, now
            return self.value
        dt = now - self.at
        if raw is None or dt < ETA_EVERY:
            return self.current(now)
        expected = self.value - dt                      # the last estimate, counted down
        if raw < ETA_FLOOR and expected < ETA_FLOOR:
            self.value = raw
        else:
            tau = smoothing_time(now)
            weight = 1 - math.exp(-dt / tau)
            blended = math.exp((1 - weight) * math.log(max(expected, ETA_FLOOR)) + weight * math.log(max(raw, 1e-9)))
            factor = ETA_CHANGE_PER_TAU ** (dt / tau)
            low, high = min(expected, self.value / factor), self.value * factor
            self.value = max(min(max(blended, low), high), 0.0)
        self.at = now
        return self.value

    def due(self, now: float) -> bool:
        """Whether ``update`` at ``now`` would take a new estimate."""
        return self.value is None or now - self.at >= ETA_EVERY

    @staticmethod
    def current_limit(dt: float, now: float) -> float:
        """The most an estimate may grow (or shrink, beyond counting down) in ``dt`` seconds up to ``now``."""
        return ETA_CHANGE_PER_TAU ** (dt / smoothing_time(now))

    def current(self, now: float) -> float | None:
        """The last estimate, counted down to ``now``."""
        return None if self.value is None else max(self.value - (now - self.at), 0.0)


class Bar:
    """One stage's progress: ``advance(n)``, ``reach(done)``; use as a context manager.
    ``decaying=True`` says each item takes less time than the one before (the merging), so the
    time left comes from ``decaying_eta`` instead of the average rate."""

    def __init__(self, progress: ProgressOption, stage: str, total: int | None = None, unit: str = "it",
                 unit_scale: bool = False, decaying: bool = False, start: float | None = None):
        self.deferred = progress if isinstance(progress, Deferred) else None
        self.mode = mode_of(progress)
        self.stage, self.total, self.done = stage, total, 0
        self.unit, self.unit_scale = unit, unit_scale
        self.last_json = time.perf_counter()
        self.start = self.last_json if start is None else start
        self.samples: list[tuple[int, float]] | None = [] if decaying and total else None
        self.steady = SteadyEta()
        self.bar = None
        if self.mode == "bar":
            tqdm = _tqdm_class()
            fmt = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}, {rate_fmt}{postfix}]" if decaying else None
            self.bar = tqdm(file=sys.stderr, dynamic_ncols=True, total=total, unit=unit, unit_scale=unit_scale,
                            desc=stage, bar_format=fmt)
            if start is not None:       # a Deferred stage's, shown when done: its rate from its own start
                self.bar.start_t = time.time() - (time.perf_counter() - start)      # (tqdm times by time.time)

    @property
    def active(self) -> bool:
        return self.mode not in ("none", "summary")

    def advance(self, n: int) -> None:
        self.done += n
        if self.deferred is not None:
            self.deferred.check()
            return
        if self.samples is not None:
            self.samples.append((self.done, time.perf_counter() - self.start))
        if self.bar is not None:
            self._update_bar(n)
        elif callable(self.mode):
            self.mode(self.stage, self.done, self.total, time.perf_counter() - self.start)
        elif self.mode == "json" and time.perf_counter() - self.last_json >= JSON_EVERY:
            self._json()

    def _update_bar(self, n: int) -> None:
        bar = self.bar
        assert bar is not None
        if self.samples is not None:
            left = self.eta()
            bar.set_postfix_str("" if left is None else f"about {_duration(left)} left", refresh=False)
        bar.update(n)

    def eta(self) -> float | None:
        """Seconds left, for a decaying stage (None: not known yet)."""
        if self.samples is None or not self.total:
            return None
        now = time.perf_counter() - self.start
        if not self.steady.due(now):          # the fit costs a pass over a window: only when it is taken
            return self.steady.current(now)
        return self.steady.update(decaying_eta(self.samples, self.done, self.total), now)

    def reach(self, done: int) -> None:
        self.advance(done - self.done)

    def poll(self) -> None:
        """Called while the stage waits: a Deferred stage stopped from outside raises here."""
        if self.deferred is not None:
            self.deferred.check()

    def callback(self, reach: bool = False) -> Callable[[int], None] | None:
        """A function for the stage to call, or None when nothing is reported."""
        if not self.active:
            return None
        return self.reach if reach else self.advance

    def _json(self, ended: bool = False) -> None:
        self.last_json = time.perf_counter()
        line: dict[str, object] = {"stage": self.stage, "current": self.done, "total": self.total,
                                   "elapsed": round(self.last_json - self.start, 3)}
        left = None if ended else self.eta()
        if self.samples is not None:        # a decaying stage (the merging): seconds_left always, null until known
            line["seconds_left"] = 0.0 if ended else None if left is None else round(left, 1)
        if left is not None:
            line["eta"] = round(left, 1)     # the same, by its old name
        print(json.dumps(line), file=sys.stderr, flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.deferred is not None and exc[0] is None:
            self.deferred.bars.append(self)
        if self.bar is not None:
            self.bar.close()
        elif self.mode == "json" and exc[0] is None:
            self._json(ended=True)
        return False


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def summary(stage: str, seconds: float, progress: ProgressOption = "none", **facts) -> None:
    """A stage's summary: on the "bpe_fast" logger (INFO) always, and as one line on standard
    error when ``progress`` resolves to "summary" (auto with no terminal: a pipe, a log); a
    Deferred stage's waits for its ``show``."""
    details = ", ".join(f"{k.replace('_', ' ')} {v:,}" if isinstance(v, int) else f"{k.replace('_', ' ')} {v}"
                        for k, v in facts.items())
    if isinstance(progress, Deferred):
        progress.summaries.append((stage, seconds, details))
    else:
        _summary_out(stage, seconds, details, progress)


def _summary_out(stage: str, seconds: float, details: str, progress: ProgressOption) -> None:
    log.info("%s: %.2f s%s", stage, seconds, f" ({details})" if details else "")   # (args: benchmarks read them)
    if mode_of(progress) == "summary":
        line = f"bpe_fast {stage}: {seconds:.2f} s" + (f" ({details})" if details else "")
        sys.stderr.write(line + "\n")        # one write: whole lines, whatever thread prints
        sys.stderr.flush()


class Deferred:
    """``progress=`` for a stage that runs on another thread beside a stage with the screen
    (the option it wraps): it reports nothing while it runs; ``show()``, called on the main
    thread when the caller takes its result, shows its bars, complete, and its summary line, as
    the wrapped option would have. ``stop()`` ends the stage early: its next report (a block
    counted) or poll (a wait for its workers: ``Bar.poll``) raises Stopped."""

    def __init__(self, progress: ProgressOption):
        self.progress = progress
        self.bars: list[Bar] = []
        self.summaries: list[tuple[str, float, str]] = []
        self._stop = False

    def stop(self) -> None:
        self._stop = True

    def check(self) -> None:
        if self._stop:
            from .errors import Stopped
            raise Stopped()

    def show(self) -> None:
        for done in self.bars:
            with Bar(self.progress, done.stage, done.total, done.unit, done.unit_scale, start=done.start) as bar:
                bar.reach(done.done)
        for stage, seconds, details in self.summaries:
            _summary_out(stage, seconds, details, self.progress)
