"""Progress of the long stages (counting, pair counting, merging): a bar, JSON lines, a callback,
or nothing, as ``progress=`` says; and a one-line summary of each stage on the "bpe_fast" logger.

``progress`` takes:

* ``"auto"`` (the default; also ``None``): a bar when standard error is a terminal or the code
  runs in a Jupyter kernel (tqdm draws a notebook bar there), else nothing;
* ``"bar"`` (also ``True``): a tqdm bar on standard error;
* ``"json"``: one JSON line per update on standard error, ``{"stage": "merging", "current":
  1024, "total": 32512, "elapsed": 1.52}`` (at most a few a second, and one when a stage ends),
  for logs and pipelines with no terminal attached;
* ``"none"`` (also ``False``);
* a callable, called as ``callback(stage, current, total, elapsed)`` (total may be None).
"""
from __future__ import annotations

import json
import logging
import sys
import time
from typing import Callable, Union

ProgressOption = Union[str, bool, None, Callable[[str, int, "int | None", float], None]]
MODES = ("auto", "bar", "json", "none")
JSON_EVERY = 0.25                # seconds between two JSON lines of one stage

log = logging.getLogger("bpe_fast")


def check(progress: ProgressOption) -> ProgressOption:
    """The option, checked before any work: a mode, a bool, None or a callable."""
    if callable(progress) or progress is None or isinstance(progress, bool) or (isinstance(progress, str)
                                                                                 and progress in MODES):
        return progress
    raise _argument_error(f"progress must be one of {', '.join(MODES)}, a bool or a callable, not {progress!r}")


def _argument_error(message: str):
    from .errors import ArgumentError
    return ArgumentError(message)


def mode_of(progress: ProgressOption) -> str | Callable:
    if callable(progress):
        return progress
    if progress is None or progress == "auto":
        return "bar" if sys.stderr.isatty() or _in_notebook() else "none"
    if isinstance(progress, bool):
        return "bar" if progress else "none"
    return progress


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    try:
        return shell is not None and type(shell.get_ipython()).__name__ == "ZMQInteractiveShell"
    except AttributeError:
        return False


class Bar:
    """One stage's progress: ``advance(n)``, ``reach(done)``; use as a context manager."""

    def __init__(self, progress: ProgressOption, stage: str, total: int | None = None, unit: str = "it",
                 unit_scale: bool = False):
        self.mode = mode_of(progress)
        self.stage, self.total, self.done = stage, total, 0
        self.start = self.last_json = time.perf_counter()
        self.bar = None
        if self.mode == "bar":
            from tqdm.auto import tqdm
            self.bar = tqdm(file=sys.stderr, dynamic_ncols=True, total=total, unit=unit, unit_scale=unit_scale,
                            desc=stage)

    @property
    def active(self) -> bool:
        return self.mode != "none"

    def advance(self, n: int) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        elif callable(self.mode):
            self.mode(self.stage, self.done, self.total, time.perf_counter() - self.start)
        elif self.mode == "json" and time.perf_counter() - self.last_json >= JSON_EVERY:
            self._json()

    def reach(self, done: int) -> None:
        self.advance(done - self.done)

    def callback(self, reach: bool = False) -> Callable[[int], None] | None:
        """A function for the stage to call, or None when nothing is reported."""
        if not self.active:
            return None
        return self.reach if reach else self.advance

    def _json(self) -> None:
        self.last_json = time.perf_counter()
        line = {"stage": self.stage, "current": self.done, "total": self.total,
                "elapsed": round(self.last_json - self.start, 3)}
        print(json.dumps(line), file=sys.stderr, flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
        elif self.mode == "json" and exc[0] is None:
            self._json()
        return False


def summary(stage: str, seconds: float, **facts) -> None:
    """A stage's summary on the "bpe_fast" logger (INFO): for logs, whatever ``progress`` is."""
    details = ", ".join(f"{k.replace('_', ' ')} {v:,}" if isinstance(v, int) else f"{k.replace('_', ' ')} {v}"
                        for k, v in facts.items())
    log.info("%s: %.2f s%s", stage, seconds, f" ({details})" if details else "")
