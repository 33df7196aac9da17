"""Chart helpers shared by the benchmark scripts: plain numbers on log axes, libraries' names.

Matplotlib labels a log axis 10^0, 10^1 (and minor ticks not at all, or as 6x10^-1); these
helpers write 0.1, 1, 10, 1,000 instead, and label the minor ticks 2 and 5 of each decade too
when the axis spans too few decades to have more than a couple of major ticks.
"""
from __future__ import annotations

import math

# The names the charts show for the libraries the scripts' CSVs name in short.
LIBRARY_NAMES = {
    "bpe_fast": "bpe_fast",
    "rustbpe": "rustbpe",
    "hf": "Hugging Face tokenizers",
    "tokenizers": "Hugging Face tokenizers",
    "gigabpe": "gigabpe",
    "bpeasy": "bpeasy",
    "tiktoken": "tiktoken",
}


def library_name(short: str) -> str:
    return LIBRARY_NAMES.get(short, short)


def plain(value: float, _position=None) -> str:
    """0.05, 0.1, 1, 2.5, 10, 1,000, 100,000: never 1e+05 or 10^5."""
    if value <= 0:
        return ""
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.10g}"


def plain_log_axes(ax, axes: str = "xy") -> None:
    """Plain-number tick labels on the log-scaled axes of ``ax`` ("x", "y" or "xy"); call after
    the data are plotted (the decades spanned decide whether minor ticks get labels)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    for name in axes:
        axis = ax.xaxis if name == "x" else ax.yaxis
        low, high = ax.get_xlim() if name == "x" else ax.get_ylim()
        axis.set_major_locator(LogLocator(base=10))
        axis.set_major_formatter(FuncFormatter(plain))
        axis.set_minor_locator(LogLocator(base=10, subs=(2, 5) if _decades(low, high) < 2.5
                                          else (2, 3, 4, 5, 6, 7, 8, 9)))
        axis.set_minor_formatter(FuncFormatter(plain) if _decades(low, high) < 2.5 else NullFormatter())


def _decades(low: float, high: float) -> float:
    return math.log10(high / low) if low > 0 and high > low else 0.0
