"""Whole-process measurements for the benchmarks: run a command, sample the summed VmRSS of its
process tree every few milliseconds, and account for CPU time (its own, and other processes').

The tree is the command and all its descendants (found by scanning the ppid field of
/proc/*/stat), so worker processes count; the same sampler serves every library. Summed RSS
counts pages shared between a forked parent and its workers once per process.
"""
from __future__ import annotations

import os
import resource
import subprocess
import tempfile
import time
from dataclasses import dataclass


def read_ppid(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[1])
    except OSError:  # exited meanwhile
        return None


class ProcessTable:
    """pid -> ppid for every process; each new pid's /proc/<pid>/stat is read only once."""

    def __init__(self):
        self.ppid: dict[int, int | None] = {}

    def children(self) -> dict[int, list[int]]:
        pids = {int(name) for name in os.listdir("/proc") if name.isdigit()}
        self.ppid = {pid: self.ppid[pid] if pid in self.ppid else read_ppid(str(pid)) for pid in pids}
        children: dict[int, list[int]] = {}
        for pid, ppid in self.ppid.items():
            if ppid is not None:            # None: the process ended before its stat was read
                children.setdefault(ppid, []).append(pid)
        return children


def _kb_field(path: str, field: bytes) -> int:
    """The kB figure of the line starting with ``field`` in a /proc file, 0 if the process has
    exited or is a zombie (no such line)."""
    try:
        with open(path, "rb") as fh:
            for line in fh:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def vm_rss_kb(pid: int) -> int:
    return _kb_field(f"/proc/{pid}/status", b"VmRSS:")


def pss_kb(pid: int) -> int:
    """Proportional set size: pages shared between processes (a forked worker's inherited pages,
    shared memory) count once over all of them, split between the sharers."""
    return _kb_field(f"/proc/{pid}/smaps_rollup", b"Pss:")


def _tree_sum(root: int, table: ProcessTable, per_process) -> int:
    children = table.children()
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += per_process(pid)
        stack.extend(children.get(pid, ()))
    return total


def tree_rss_kb(root: int, table: ProcessTable) -> int:
    """Sum of VmRSS over root and all its descendants."""
    return _tree_sum(root, table, vm_rss_kb)


def tree_pss_kb(root: int, table: ProcessTable) -> int:
    """Sum of PSS over root and all its descendants: the tree's own share of memory."""
    return _tree_sum(root, table, pss_kb)


def system_busy_s() -> float:
    """CPU seconds all processes have spent busy since boot (the 'cpu' line of /proc/stat)."""
    with open("/proc/stat") as fh:
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fh.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> tuple[float, float]:
    """CPU seconds of this process, and of its waited-for children (and theirs)."""
    me, kids = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    peak_tree_mb: float      # highest summed VmRSS of the tree
    process_s: float         # start to exit, wall
    child_cpu_s: float       # CPU of the command's tree
    sampler_cpu_s: float     # CPU this sampler used meanwhile
    other_cpu_s: float       # CPU every other process on the machine used meanwhile


def run_sampled(cmd: list[str], sample_s: float = 0.02, env: dict | None = None) -> Run:
    """Run cmd to its end, sampling its process tree's RSS every sample_s seconds."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        busy0, (self0, kids0) = system_busy_s(), own_cpu_s()
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        peak_kb, table = 0, ProcessTable()
        while proc.poll() is None:
            peak_kb = max(peak_kb, tree_rss_kb(proc.pid, table))
            time.sleep(sample_s)
        process_s = time.perf_counter() - t0
        (self1, kids1), busy1 = own_cpu_s(), system_busy_s()
        out.seek(0), err.seek(0)
        stdout, stderr = out.read(), err.read()
    child = kids1 - kids0
    return Run(proc.returncode, stdout, stderr, peak_kb / 1024, process_s, child, self1 - self0,
               busy1 - busy0 - child - (self1 - self0))
