# cython: language_level=3, linetrace=True, binding=True
"""Rung v3: v1's two hot functions, ``get_stats`` and ``merge``, compiled with Cython.

What it keeps from v1: everything. Same Python lists of Python ints, same dict of tuple pairs,
same list-building merge, same training loop (``v1_dict.train``, called with these two
functions). What it adds: the loop index is a C integer (``Py_ssize_t``) and the arguments are
declared ``list``/``dict``/``tuple``, so indexing and the loop itself are C; every pair, count
and new list is still a Python object, which is why this rung is only a few times faster.

``linetrace=True`` (first line) compiles in line_profiler's hooks, so ``--line-profile`` can
show these lines. With no profiler attached they cost nothing we could measure (see
benchmarks/RESULTS_ladder.md: timed against a copy compiled without them), so this one file is
both the timed and the profiled build.
"""

from .v1_dict import train as v1_train


def get_stats(list ids, dict counts):
    """Add the adjacent pairs of one chunk to ``counts`` (overlaps count: "aaa" has 2)."""
    cdef Py_ssize_t i
    for i in range(len(ids) - 1):
        pair = (ids[i], ids[i + 1])
        counts[pair] = counts.get(pair, 0) + 1


def merge(list ids, tuple pair, idx):
    """A new list: ``ids`` with every non-overlapping ``pair``, left to right, replaced by ``idx``."""
    cdef Py_ssize_t i = 0, n = len(ids)
    left, right = pair
    newids = []
    while i < n:
        if i + 1 < n and ids[i] == left and ids[i + 1] == right:
            newids.append(idx)
            i += 2
        else:
            newids.append(ids[i])
            i += 1
    return newids


def train(chunks, n_merges):
    """v1's training loop (``v1_dict.train``), run with the two compiled functions above."""
    return v1_train(chunks, n_merges, get_stats=get_stats, merge=merge)


TIE_RULE = "as v1 (same loop, same dict): the first top pair in insertion order wins"
HOT = (v1_train, get_stats, merge)  # what --line-profile shows
