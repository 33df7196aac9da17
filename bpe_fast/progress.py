"""Progress bars for the long stages (counting, merging), shown on a terminal by default."""
from __future__ import annotations

import sys
from typing import Callable


def enabled(show_progress: bool | None) -> bool:
    """None means: when standard error is a terminal."""
    return sys.stderr.isatty() if show_progress is None else bool(show_progress)


class Bar:
    """A tqdm bar on stderr, or nothing; ``advance(n)`` and ``reach(total_so_far)``."""

    def __init__(self, show: bool, **tqdm_options):
        self.bar = None
        if show:
            from tqdm.auto import tqdm
            self.bar = tqdm(file=sys.stderr, dynamic_ncols=True, **tqdm_options)
        self.done = 0

    def advance(self, n: int) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)

    def reach(self, done: int) -> None:
        self.advance(done - self.done)

    def callback(self, reach: bool = False) -> Callable[[int], None] | None:
        """A function for the stage to call, or None when there is no bar."""
        if self.bar is None:
            return None
        return self.reach if reach else self.advance

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
