"""Counting past one machine, on a Dask cluster: ``bpe_fast.count(files, client=client)``.

A count on a cluster is a map and a hash-partitioned reduce, sized from the workers' memory:

- **Map.** The input is planned into tasks of tens to hundreds of MB, in file order (``Plan``,
  ``plan_tasks``): a text file in ranges cut where the pattern allows (``FileRange``: the worker
  finds the 1 MiB blocks inside), a compressed or JSON-lines file whole (read as a stream
  there), a Parquet row group; small files go together. Sizes are guided (the bytes left over
  the cluster's threads), so the first tasks are big and the last small, and only as many
  tasks as threads are out at once (a task sent ahead would wait behind a busy worker). A
  worker counts its task with the native counter, piece by piece, as a local counting worker
  does (``ChunkCounter``), into one table that it returns sorted by (hash, bytes). A table that
  reaches the task's budget (a share of the worker's Dask ``memory_limit``) stops the task: it
  returns what it counted and the rest of its input, which goes out as the next task. So no
  task holds more than its budget, however long the tail of the text.
- **Reduce by hash partition.** Each task's table is cut, on the worker that holds it, into P
  ranges of the 64-bit hash (P set when the first table comes back, from its size per input
  byte, so that one partition of the final table fits half a task's budget). Partition p of
  every task is added up on the cluster (a native k-way merge of sorted tables, ``fan_in`` at a
  time, in a tree): no worker ever holds the whole table.
- **Gather, partition by partition.** The client learns each partition's size, makes the final
  arrays once, and fetches the partitions one at a time in hash order into them: the table is
  never pickled whole, and since each partition is sorted by (hash, bytes) and the ranges are in
  order, the result is the local table exactly, in the same order (``WordTable`` sorted by
  (hash, bytes), counting/workers.py).

Data locality: the workers open the files themselves, by path; only word tables cross the
network (about a sixth of the text's bytes on long-tailed text, far less on ordinary text).
So the paths must mean the same files on every worker: a shared filesystem (NFS, Lustre, a
mounted bucket), or the same copy at the same path on every machine. A task reads consecutive
blocks of one file. Standard input cannot be counted on a cluster.

Faults: a worker that dies (killed, out of memory) loses its tasks and the partitions it held;
Dask runs them again elsewhere (every task is a pure function of the files), so the table is the
same. A task that kills its workers over and over (Dask's ``allowed-failures``) is a one-line
``WorkerError``, as is a cluster that cannot run anything for ``STALL_SECONDS`` (no workers, or
every worker paused over its memory limit): never a hang. Needs ``pip install 'bpe_fast[dask]'``.
"""
from __future__ import annotations

import collections
import contextlib
import itertools
import math
import os
import socket
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ._table import merge_tables
from .workers import CountConfig, chunk_counter
from ..errors import ArgumentError, WorkerError, require
from .inputs import Cut, Piece, Source, TextSource, file_tasks
from .wordtable import WordTable

# (symbols, offsets, counts, hashes) of a table sorted by (hash, bytes), as _table makes them
Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

TASKS_PER_THREAD = 1            # bytes left over this times the threads: the next task (guided sizes)
MIN_TASK_BYTES = 8 << 20        # input bytes of a task, at least (below: scheduling and tables cost)
MAX_TASK_BYTES = 512 << 20      # ... and at most (past it: a lost worker loses much work)
MIN_TABLE_BUDGET = 4 << 20      # bytes a task's table may reach, at least
MAX_TABLE_BUDGET = 1 << 30
NO_LIMIT_BUDGET = 256 << 20     # a task's table budget on workers with no memory limit
# What a task's budget may take of a worker's memory limit, shared by its threads: Dask spills
# its data to disk at 0.6-0.7 of the limit and pauses the worker at 0.8; a task holds its table
# and then its sorted copy, and a merge its inputs and its output.
MEMORY_SHARE = 0.6
TABLE_SHARES = 4
MAX_PARTITIONS = 256
FAN_IN = 32                     # partitions added up at a time, in a tree (one k-way merge each)
STALL_SECONDS = 60.0            # no worker able to run for this long: an error, not a hang
POLL_SECONDS = 1.0              # how often a wait checks on the cluster


# -- the worker side -------------------------------------------------------------------------------

@dataclass(frozen=True)
class FileRange:
    """Bytes start..end of a regular text file (both safe cuts), cut into blocks of
    ``block_size`` by the worker that counts it: the client finds only the few cuts between
    tasks, the workers find the many between blocks, side by side."""
    path: str
    start: int
    end: int
    cut: Cut
    block_size: int

    @property
    def size(self) -> int:
        return self.end - self.start

    def pieces(self) -> Iterator[Piece]:
        for block in file_tasks(self.path, self.end, self.cut, self.block_size, self.start):
            yield from block.pieces()

    def rest(self, piece: Piece, _: int) -> FileRange:
        """The range from ``piece`` (one of its blocks) on."""
        return replace(self, start=piece.offset)


@dataclass(frozen=True)
class Skipping:
    """A unit whose first ``skip`` pieces were counted already (a stream is read again up to there)."""
    unit: Any
    skip: int

    @property
    def size(self) -> int:
        return self.unit.size

    def pieces(self) -> Iterator[Piece]:
        return itertools.islice(self.unit.pieces(), self.skip, None)

    def rest(self, _: Piece, k: int) -> Skipping:
        return Skipping(self.unit, self.skip + k)


def rest_of(unit, piece: Piece, k: int):
    """What is left of ``unit`` from its ``k``-th piece (``piece``) on."""
    return unit.rest(piece, k) if hasattr(unit, "rest") else Skipping(unit, k)


def count_task(units: list, config: CountConfig, budget: int) -> tuple[Arrays, list | None, int]:
    """Run on a cluster worker: count ``units`` (inputs.py tasks, FileRange), piece by piece,
    until the table holds ``budget`` bytes. Returns the table sorted by (hash, bytes), the units
    left to count (None: none) and the table's size in bytes (what the client plans the
    partitions with)."""
    counter = chunk_counter(config)
    table = counter.table
    rest = None
    for i, unit in enumerate(units):
        for k, piece in enumerate(unit.pieces()):
            if table.nbytes > budget and (i, k) != (0, 0):    # full: the rest is another task
                rest = [rest_of(unit, piece, k), *units[i + 1:]]
                break
            counter.add_piece(piece.where, piece.data, piece.offset)
        if rest is not None:
            break
    nbytes = table.nbytes
    arrays = table.sorted_arrays()
    table.clear()
    return arrays, rest, nbytes


def hash_range(table: tuple[Arrays, list | None, int], p: int, parts: int) -> Arrays:
    """Run on the worker that holds a task's table: its chunks whose hash is in range p of
    ``parts`` equal ranges of 2**64 (views, not copies)."""
    symbols, offsets, counts, hashes = table[0]

    def start(q: int) -> int:          # where range q starts: its first hash is >= q * 2**64 / parts
        if q in (0, parts):
            return 0 if q == 0 else len(hashes)
        return int(np.searchsorted(hashes, np.uint64((q << 64) // parts)))
    lo, hi = start(p), start(p + 1)
    return symbols[offsets[lo]:offsets[hi]], offsets[lo:hi + 1] - offsets[lo], counts[lo:hi], hashes[lo:hi]


def add_partitions(*parts: Arrays) -> Arrays:
    """Run on a cluster worker: the sum of tables sorted by (hash, bytes), in one k-way pass."""
    try:
        return merge_tables(list(parts))
    except OverflowError as exc:
        raise ArgumentError(f"word tables cannot be added: {exc}") from None


def partition_size(part: Arrays) -> tuple[int, int]:
    return len(part[2]), len(part[0])


def task_outcome(table: tuple[Arrays, list | None, int]) -> tuple[list | None, int]:
    return table[1], table[2]


# -- the plan --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    """How a count is cut for the cluster it runs on. Task sizes are *guided*: each task takes
    the bytes left over ``TASKS_PER_THREAD`` times the cluster's threads (within MIN/MAX_TASK_BYTES),
    so the first tasks are big (few tables to add up) and the last small (no core waits long for
    the slowest at the end); ``task_bytes`` given: every task that size. ``table_budget``: the
    bytes a task's table may reach (a share of the smallest worker memory limit per thread)."""
    table_budget: int
    threads: int
    task_bytes: int | None = None

    @classmethod
    def of(cls, client, task_bytes: int | None = None, table_budget: int | None = None) -> Plan:
        workers = cluster_workers(client)
        threads = max(sum(w.get("nthreads", 1) for w in workers), 1)
        if table_budget is None:
            table_budget = min((worker_budget(w) for w in workers), default=NO_LIMIT_BUDGET)
        return cls(table_budget, threads, task_bytes)

    def next_size(self, remaining: int) -> int:
        """The input bytes of the next task, with ``remaining`` bytes left to plan."""
        if self.task_bytes is not None:
            return self.task_bytes
        return min(max(int(remaining / (self.threads * TASKS_PER_THREAD)), MIN_TASK_BYTES), MAX_TASK_BYTES)

    def partitions(self, table_bytes: int, counted: int, total: int) -> int:
        """P, from the first task's table (``table_bytes`` for ``counted`` input bytes): enough
        that a partition of the final table, guessed as if every byte of input added as much
        table as the first task's did (an over-estimate: a corpus's table grows slower than it),
        is at most half a task's budget; at least two per thread, so that all of them add up;
        a power of two."""
        guess = table_bytes * total / max(counted, 1)
        want = max(2 * self.threads, math.ceil(2 * guess / self.table_budget))
        return min(1 << max(want - 1, 0).bit_length(), MAX_PARTITIONS)


def cluster_workers(client) -> list[dict]:
    """Every worker's description from the scheduler (dask 2025 lists 5 unless told all;
    the dask 2024 this supports takes no such argument and lists all)."""
    try:
        info = client.scheduler_info(n_workers=-1)
    except TypeError:
        info = client.scheduler_info()
    return list(info["workers"].values())


def worker_budget(worker: dict) -> int:
    """A task's table budget on this worker: a share of what its memory limit leaves above the
    memory it uses now, split among its threads (each runs a task)."""
    limit = worker.get("memory_limit") or 0
    if not limit:
        return NO_LIMIT_BUDGET
    used = worker.get("metrics", {}).get("memory", 0)
    free = MEMORY_SHARE * limit - used
    return int(min(max(free / max(worker.get("nthreads", 1), 1) / TABLE_SHARES, MIN_TABLE_BUDGET), MAX_TABLE_BUDGET))


def plan_tasks(found: list[Source], config: CountConfig, block_size: int, plan: Plan) -> list[list]:
    """The tasks: groups of consecutive units, each of about ``plan.next_size`` bytes. A regular
    text file is cut (only where ``config.cut`` allows) into ranges of the size a task wants
    (``FileRange``: its blocks are found by the worker); any other input is its ``cluster_tasks``
    (a whole compressed or JSON-lines file, a Parquet row group). A group is closed once it holds
    three quarters of its size, so small files go together and no task is a sliver."""
    cut = config.cut
    remaining = sum(source.size or 0 for source in found)
    groups: list[list] = []
    group: list = []
    size = target = 0

    def add(unit) -> None:
        nonlocal group, size, remaining
        group.append(unit)
        size += unit.size
        remaining -= unit.size
        if size >= target * 3 // 4:
            groups.append(group)
            group, size = [], 0

    for source in found:
        if isinstance(source, TextSource) and source.splittable_by_workers and cut is not None and source.size:
            start, end = 0, source.size
            while start < end:
                if not group:
                    target = plan.next_size(remaining)
                want = target - size
                stop = end if end - start <= want * 5 // 4 else next(file_tasks(source.path, end, cut, want, start)).end
                add(FileRange(source.path, start, stop, cut, block_size))
                start = stop
        else:
            for unit in source.cluster_tasks(cut, block_size):
                if not group:
                    target = plan.next_size(remaining)
                add(unit)
    return groups + ([group] if group else [])


# -- the client side -------------------------------------------------------------------------------

def count_on_cluster(client, found: list[Source], config: CountConfig, block_size: int, *,
                     task_bytes: int | None = None, table_budget: int | None = None,
                     partitions: int | None = None, fan_in: int | None = None) -> WordTable:
    """Count every source on the cluster (see the module docstring); ``task_bytes``,
    ``table_budget`` and ``partitions``: planned from the cluster when None."""
    require("dask.distributed", "dask", "counting on a Dask cluster")
    splitter = config.splitter
    for source in found:
        if source.size is None:
            source.cluster_tasks(config.cut, block_size)       # raises: a stream cannot go to a cluster
    # Workers open the files by path, each in a folder of its own: a path relative to this
    # process's folder is made absolute here, where it means what the user typed.
    found = [replace(source, path=os.path.abspath(source.path)) for source in found]
    if not found:
        return WordTable.from_counts({}, splitter.pattern, splitter.special_tokens, normalize=splitter.normalize)
    total = sum(source.size or 0 for source in found)
    config = CountConfig(splitter, config.errors, counting=config.counting)          # no spilling there
    plan = Plan.of(client, task_bytes, table_budget)
    tasks = plan_tasks(found, config, block_size, plan)
    arrays = ClusterCount(client, config, plan, partitions, fan_in or FAN_IN).run(tasks, total)
    return WordTable(*arrays, splitter.pattern, splitter.special_tokens, total, normalize=splitter.normalize)


def counted_bytes(group: list, rest: list | None) -> int:
    """About the input bytes a task counted: its units' less its rest's (a stream stopped
    part way, ``Skipping``, taken as half read)."""
    if rest is None:
        return sum(u.size for u in group)
    partly = rest[0].size // 2 if isinstance(rest[0], Skipping) else 0
    return max(sum(u.size for u in group) - sum(u.size for u in rest) + partly, 1)


class ClusterCount:
    """One count on a cluster, driven from here: tasks out, tables partitioned and added up as
    they come, partitions in. Every wait is short and checks on the cluster (``Watch``)."""

    def __init__(self, client, config: CountConfig, plan: Plan, partitions: int | None, fan_in: int):
        self.client, self.config, self.plan = client, config, plan
        self.parts = partitions
        self.fan_in = max(fan_in, 2)
        self.levels: list[list[list]] = []        # per partition, its sums waiting at each level of the tree
        self.counting: dict = {}                  # tasks counting -> their units
        self.waiting: collections.deque = collections.deque()     # tasks not sent yet
        self.where: list[str] = []                # the workers holding the table being partitioned
        self.finals: list = []                    # the partitions' sums, until fetched
        self.watch = Watch(client)

    def run(self, groups: list[list], total: int) -> Arrays:
        """Count the groups; the final table's arrays. Only the futures of this object's fields
        are held, so whatever the cluster holds is released as soon as it is added up."""
        self.waiting = collections.deque(groups)
        self._fill()
        try:
            while self.counting:
                self._took(self.watch.wait(list(self.counting)), total)
                self._fill()
            self.finals = [self._sum(sum(levels, [])) for levels in self.levels]
            self.levels = []
            return self._gather(self.finals)
        except BaseException:
            with contextlib.suppress(Exception):        # a client already closed: nothing to cancel
                self.client.cancel([*self.counting, *(f for levels in self.levels for level in levels for f in level),
                                    *(f for f in self.finals if f is not None)])
            raise

    def _fill(self, free: list[str] | None = None) -> None:
        """As many tasks out as the cluster has threads, no more: a task sent ahead waits in a
        busy worker's queue while another worker idles (Dask hands each worker a task ahead).
        Each goes, if it may, to one of the ``free`` workers (those whose task just ended):
        sent together, two went to the same worker, and one waited there."""
        free = list(free or [])
        while self.waiting and len(self.counting) < self.plan.threads:
            group = self.waiting.popleft()
            self.counting[self._submit(group, free.pop() if free else None)] = group

    def _took(self, done: list, total: int) -> None:
        """Tasks done: their rest goes out as a task, their table to the partitions. The next
        tasks go out first, so that no worker waits for the round trips here."""
        groups = [self.counting.pop(table) for table in done]
        holders = self.client.who_has(done)
        self._fill([w for table in done for w in holders.get(table.key, ())[:1]])
        outcomes = self.watch.results([self.client.submit(task_outcome, d, pure=False) for d in done])
        for table, group, (rest, table_bytes) in zip(done, groups, outcomes):
            self.where = list(holders.get(table.key, ()))
            if rest is not None:
                self.waiting.appendleft(rest)                # next: it is where the input goes on
            self._partition(table, table_bytes, counted_bytes(group, rest), total)

    def _submit(self, group: list, worker: str | None = None):
        where = dict(workers=[worker], allow_other_workers=True) if worker else {}
        return self.client.submit(count_task, group, self.config, self.plan.table_budget, pure=False, **where)

    def _partition(self, table, table_bytes: int, counted: int, total: int) -> None:
        """Cut a task's table into the partitions, each added to its tree."""
        if self.parts is None:
            self.parts = self.plan.partitions(table_bytes, counted, total)
        if not self.levels:
            self.levels = [[] for _ in range(self.parts)]
        # Where the table is: Dask would rather send a busy worker's table to an idle one than
        # wait, and the whole table would travel; a loose restriction, so that a worker lost
        # meanwhile does not leave the task without one.
        where = dict(workers=self.where, allow_other_workers=True) if self.where else {}
        for p in range(self.parts):
            self._add(p, 0, self.client.submit(hash_range, table, p, self.parts, pure=False, **where))

    def _add(self, p: int, level: int, part) -> None:
        """Partition p's tree: ``fan_in`` sums at a level make one at the next."""
        levels = self.levels[p]
        if len(levels) == level:
            levels.append([])
        levels[level].append(part)
        if len(levels[level]) >= self.fan_in:
            parts, levels[level] = levels[level], []
            self._add(p, level + 1, self._sum(parts))

    def _sum(self, parts: list):
        return parts[0] if len(parts) == 1 else self.client.submit(add_partitions, *parts, pure=False)

    def _gather(self, finals: list) -> Arrays:
        """The partitions, fetched one at a time in hash order into the final arrays."""
        sizes = self.watch.results([self.client.submit(partition_size, f, pure=False) for f in finals])

        def fetched() -> Iterator[Arrays]:
            for i in range(len(finals)):
                part = self.watch.result(finals[i])
                finals[i] = None                             # released on the cluster, and here
                yield part
        return assembled(sizes, fetched())


def assembled(sizes: list[tuple[int, int]], parts: Iterable[Arrays]) -> Arrays:
    """One table of ``parts`` (tables sorted by (hash, bytes), of consecutive hash ranges, whose
    (chunks, bytes) are ``sizes``), copied one by one into arrays made once."""
    n, total = sum(s[0] for s in sizes), sum(s[1] for s in sizes)
    symbols, offsets = np.empty(total, np.uint8), np.empty(n + 1, np.int64)
    counts, hashes = np.empty(n, np.int64), np.empty(n, np.uint64)
    offsets[0] = 0
    k = at = 0
    for part_symbols, part_offsets, part_counts, part_hashes in parts:
        m = len(part_counts)
        symbols[at:at + len(part_symbols)] = part_symbols
        offsets[k + 1:k + m + 1] = part_offsets[1:] + at
        counts[k:k + m], hashes[k:k + m] = part_counts, part_hashes
        k, at = k + m, at + len(part_symbols)
    return symbols, offsets, counts, hashes


class Watch:
    """Waits on the cluster that never hang: a task's error is raised at once (a worker that died
    over and over on one task as a one-line WorkerError), and a cluster that has had no worker
    able to run (none, or every one paused over its memory limit) for ``STALL_SECONDS`` is an
    error."""

    def __init__(self, client):
        self.client = client
        self.stalled_since: float | None = None

    def wait(self, futures: list) -> list:
        """The futures done, once at least one is; a failed one raises its error."""
        from distributed import wait
        while True:
            try:
                done = wait(futures, timeout=POLL_SECONDS, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                self.check_cluster()
                continue
            for future in done:
                if future.status != "finished":
                    self.result(future)                  # raises the task's error
            return list(done)

    def result(self, future):
        """A future's value; waits as ``wait`` does."""
        from distributed import KilledWorker
        if future.status not in ("finished", "error", "cancelled"):
            self.wait([future])
        try:
            return future.result()
        except KilledWorker as exc:
            raise WorkerError(f"counting on the Dask cluster failed: {died_message(exc)}") from None

    def results(self, futures: list) -> list:
        """Every future's value, fetched together once all are done."""
        waiting = set(futures)
        while waiting:
            waiting.difference_update(self.wait(list(waiting)))
        return self.client.gather(futures)

    def check_cluster(self) -> None:
        workers = cluster_workers(self.client)
        if any(w.get("status", "running") == "running" for w in workers):
            self.stalled_since = None
            return
        now = time.monotonic()
        if self.stalled_since is None:
            self.stalled_since = now
        elif now - self.stalled_since > STALL_SECONDS:
            raise WorkerError(stalled_message(workers, now - self.stalled_since))


def died_message(exc: BaseException) -> str:
    said = str(exc).split(". ")[0].splitlines()[0] if str(exc) else type(exc).__name__
    return (f"the workers running one of its tasks died each time, too often to try again (Dask's "
            f"distributed.scheduler.allowed-failures), most likely killed over their memory limit or by the "
            f"system's out-of-memory killer: give the workers more memory, or a smaller block_size (--block-size: "
            f"a block is counted whole) (dask: {said[:160]})")


def stalled_message(workers: list[dict], seconds: float) -> str:
    if not workers:
        return (f"the Dask cluster has had no workers for {seconds:.0f} s: start some "
                f"(dask worker SCHEDULER_ADDRESS), or check that they can reach the scheduler")
    limits = sorted({w.get("memory_limit") or 0 for w in workers})
    shown = ", ".join(f"{limit / 1e6:,.0f} MB" if limit else "none" for limit in limits)
    return (f"every Dask worker ({len(workers)}) has been paused for {seconds:.0f} s, over its memory "
            f"limit's pause threshold (distributed.worker.memory.pause; memory limit {shown}): give the "
            f"workers more memory (dask worker --memory-limit)")


# -- reaching a scheduler --------------------------------------------------------------------------

CONNECT_SECONDS = 3.0           # a scheduler on the network answers a TCP connect well within this
CLIENT_SECONDS = "10s"          # and then dask's handshake


def connect(address: str, name: str = "--scheduler"):
    """A dask.distributed Client of the scheduler at ``address``, or a one-line ArgumentError
    naming it: nothing listening (at once, ``check_reachable``), a malformed address, or
    something there that is no Dask scheduler."""
    distributed = require("dask.distributed", "dask", name)
    check_reachable(address, name)
    try:
        return distributed.Client(address, timeout=CLIENT_SECONDS)
    except (OSError, TimeoutError) as exc:
        raise ArgumentError(f"{name} {address}: cannot connect ({exc})") from None
    except (ValueError, TypeError) as exc:      # dask's word for a malformed address or unknown scheme
        raise ArgumentError(f"{name} {address}: not a scheduler address such as tcp://host:8786 ({exc})") from None
    except Exception as exc:       # a server there that speaks another protocol: dask reads nonsense
        raise ArgumentError(f"{name} {address}: what answers there is no Dask scheduler "
                            f"({type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''})") from None


def check_reachable(address: str, name: str = "--scheduler") -> None:
    """Fail at once, naming ``address``, when nothing listens there: a refused connection at
    once, an unreachable host within ``CONNECT_SECONDS``; dask's Client would wait out its own
    timeout (10 s) first. Only TCP addresses (tcp://, tls://, or host:port) are checked; any
    other (inproc://, ucx://, malformed) is left to dask."""
    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port
    try:
        scheme, location = parse_address(address)
        if scheme not in ("tcp", "tls"):
            return
        host, port = parse_host_port(location)
    except (ValueError, TypeError):
        return                                   # dask's own message says what is wrong with it
    try:
        socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        raise ArgumentError(f"{name} {address}: cannot connect ({reason}): is a Dask scheduler running there "
                            f"(dask scheduler), and is the address right?") from None
