"""Counting on a Dask cluster (here a LocalCluster of processes) gives exactly the local table,
through its partitions, tasks stopped at their budget, a killed worker, and workers short of
memory; faults are one-line errors, never a hang."""
from __future__ import annotations

import gzip
import json
import os
import signal
import socket
import string
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import bpe_fast
from bpe_fast.counting import distributed as cluster
from bpe_fast.cli import main
from bpe_fast.counting.workers import CountOptions
from bpe_fast.counting.inputs import sources

from ..conftest import ROOT, need, small_text


@pytest.fixture(scope="module")
def client():
    distributed = need("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=40)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_cluster_counting_equals_local_counting(tmp_path, client):
    (tmp_path / "a.txt").write_text(small_text() * 30)
    with gzip.open(tmp_path / "b.txt.gz", "wt", encoding="utf-8") as fh:
        fh.write("compressed text, read whole on a worker\n" * 200)
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"text": f"record {i} " * 20}) + "\n" for i in range(100)))
    inputs = [tmp_path / "a.txt", tmp_path / "b.txt.gz", tmp_path / "c.jsonl"]
    local = bpe_fast.count(inputs, workers=1)
    remote = bpe_fast.count(inputs, client=client, block_size=4096)
    assert remote == local and remote.input_bytes == local.input_bytes
    tok = bpe_fast.train(inputs, 600, client=client, block_size=4096)
    assert tok == bpe_fast.train(inputs, 600, workers=1)


def test_a_relative_path_means_the_clients_file_on_every_worker(tmp_path, client, monkeypatch):
    # Workers run in folders of their own (a machine's, a service's): a path as the user typed it,
    # relative to the client's folder, is made absolute before it is sent.
    (tmp_path / "a.txt").write_text(small_text() * 10)
    (tmp_path / "elsewhere").mkdir()
    old = client.run(os.getcwd)
    client.run(os.chdir, str(tmp_path / "elsewhere"))
    try:
        monkeypatch.chdir(tmp_path)
        assert bpe_fast.count(["a.txt"], client=client, block_size=4096) == bpe_fast.count(["a.txt"], workers=1)
    finally:
        for address, folder in old.items():
            client.run(os.chdir, folder, workers=[address])


def test_standard_input_cannot_go_to_a_cluster(client):
    with pytest.raises(bpe_fast.InputError, match="a stream cannot be counted on a cluster"):
        bpe_fast.count(["-"], client=client)


def test_a_truncated_zst_is_an_input_error_on_the_cluster(tmp_path, client):
    zstandard = need("zstandard")
    whole = zstandard.ZstdCompressor().compress("".join(f"line {i}\n" for i in range(20_000)).encode())
    (tmp_path / "cut.txt.zst").write_bytes(whole[:len(whole) // 2])
    with pytest.raises(bpe_fast.InputError, match="cut.txt.zst: .*truncated"):
        bpe_fast.count([tmp_path / "cut.txt.zst"], client=client)


def test_cluster_counting_normalizes_as_local_counting(tmp_path, client):
    text = "ﬁne ① ＡＢＣ cafe\u0301 x\u00a8y!\n\uff0fz\n" * 300 + small_text()
    (tmp_path / "a.txt").write_text(text, encoding="utf-8")
    with gzip.open(tmp_path / "b.txt.gz", "wt", encoding="utf-8") as fh:
        fh.write(text)
    inputs = [tmp_path / "a.txt", tmp_path / "b.txt.gz"]
    local = bpe_fast.count(inputs, workers=1, normalize="nfkc")
    remote = bpe_fast.count(inputs, client=client, block_size=512, normalize="nfkc")
    assert remote == local and remote.normalize == "nfkc" and b"fine" in remote.as_dict()


def test_boundless_runs_counted_on_a_cluster_equal_local_ones(tmp_path, client):
    """BoundlessBPE's second pass goes to the cluster too: the units travel in the config."""
    (tmp_path / "a.txt").write_text(small_text() * 30)
    remote = bpe_fast.train([tmp_path / "a.txt"], 530, client=client, superword="boundless", superword_at=500,
                            block_size=4096, progress="none")
    local = bpe_fast.train([tmp_path / "a.txt"], 530, workers=1, superword="boundless", superword_at=500,
                           block_size=4096, progress="none")
    assert remote == local and remote.is_boundless


# -- the plan, the tasks and the partitions, without a cluster ---------------------------------------

def three_inputs(tmp_path, lines: int = 30):
    """A text file (in many blocks), a gzip file and JSON lines (read as streams)."""
    (tmp_path / "a.txt").write_text(small_text() * lines)
    with gzip.open(tmp_path / "b.txt.gz", "wt", encoding="utf-8") as fh:
        fh.write("".join(f"compressed line {i} of text, read whole on a worker\n" for i in range(3000)))
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"text": f"record {i} " * 20}) + "\n" for i in range(30)))
    return [tmp_path / "a.txt", tmp_path / "b.txt.gz", tmp_path / "c.jsonl"]


def setup(inputs, **count):
    options = CountOptions.for_files(**count)
    config = options.config(options.splitter("cl100k", (), None))
    return sources([str(p) for p in inputs], "text", "text"), config


def same_arrays(a: bpe_fast.WordTable, b: bpe_fast.WordTable) -> bool:
    """Equal tables in the same order: (hash, bytes), as counting leaves them."""
    return a.hashes is not None and b.hashes is not None and \
        all(np.array_equal(x, y) for x, y in zip(a.sorted_arrays(), b.sorted_arrays()))


def test_tasks_stopped_at_their_budget_and_partitioned_add_up_to_the_local_table(tmp_path):
    """Every task counted in this process, each stopped after a piece or two (a budget of one
    byte) and continued from its rest (a file range from its next block, a stream skipping the
    pieces counted), cut into 5 hash ranges and added up range by range: the local table, in its
    order."""
    inputs = three_inputs(tmp_path)
    found, config = setup(inputs)
    groups = cluster.plan_tasks(found, config, 4096, cluster.Plan(table_budget=1, threads=2, task_bytes=50_000))
    assert len(groups) > 3 and any(isinstance(u, cluster.FileRange) for g in groups for u in g)
    tables, stops = [], 0
    while groups:
        arrays, rest, _ = cluster.count_task(groups.pop(), config, budget=1)
        tables.append((arrays, rest, 0))
        if rest is not None:
            groups.append(rest)
            stops += 1
    assert stops > 10 and any(isinstance(u, cluster.Skipping) for t in tables if t[1] for u in t[1])
    parts = [cluster.add_partitions(*(cluster.hash_range(t, p, 5) for t in tables)) for p in range(5)]
    assert all(len(part[2]) for part in parts)
    merged = bpe_fast.WordTable(*cluster.assembled([cluster.partition_size(p) for p in parts], iter(parts)),
                                config.splitter.pattern)
    local = bpe_fast.count(inputs, workers=1, progress="none")
    assert same_arrays(merged, local)


def test_task_sizes_are_guided_and_partitions_fit_the_budget():
    plan = cluster.Plan(table_budget=100 << 20, threads=4)
    sizes, left = [], 10 << 30
    while left > 0:
        sizes.append(plan.next_size(left))
        left -= sizes[-1]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] == cluster.MAX_TASK_BYTES
    assert sizes[-1] == cluster.MIN_TASK_BYTES and len(sizes) < 60
    # a first task whose table took 50 MB for its 100 MB: 5 GB of table guessed for 10 GB
    parts = plan.partitions(50 << 20, 100 << 20, 10 << 30)
    assert parts & (parts - 1) == 0 and (5 << 30) / parts <= plan.table_budget / 2
    assert plan.partitions(1, 100 << 20, 100 << 20) == 2 * plan.threads


def test_a_file_is_cut_only_where_the_pattern_allows(tmp_path):
    """The ranges of a file are cut where its local blocks may be: each range ends on a cut
    that file_tasks finds, and they cover the file once."""
    (tmp_path / "a.txt").write_text(small_text() * 50)
    found, config = setup([tmp_path / "a.txt"])
    ranges = [u for g in cluster.plan_tasks(found, config, 4096, cluster.Plan(1 << 20, 2, task_bytes=20_000))
              for u in g]
    assert [r.start for r in ranges[1:]] == [r.end for r in ranges[:-1]]
    assert ranges[0].start == 0 and ranges[-1].end == found[0].size and len(ranges) > 5
    for r in ranges[1:]:
        assert config.cut(open(tmp_path / "a.txt", "rb").read(), r.start) == r.start


# -- on a cluster ------------------------------------------------------------------------------------

def count_there(client, inputs, **plan) -> bpe_fast.WordTable:
    found, config = setup(inputs)
    return cluster.count_on_cluster(client, found, config, 4096, **plan)


def test_many_small_tasks_stopped_and_partitioned_on_the_cluster_give_the_local_table(tmp_path, client):
    inputs = three_inputs(tmp_path, lines=5)[:1]            # the text file: 4 KiB blocks, 20 kB ranges
    local = bpe_fast.count(inputs, workers=1, progress="none")
    distributed = need("distributed")
    with distributed.get_task_stream(client) as stream:
        remote = count_there(client, inputs, task_bytes=20_000, table_budget=1, partitions=3, fan_in=2)
    assert same_arrays(remote, local) and remote.input_bytes == local.input_bytes
    found, config = setup(inputs)
    planned = len(cluster.plan_tasks(found, config, 4096, cluster.Plan(1, 2, task_bytes=20_000)))
    counted = sum(str(t["key"]).startswith("count_task") for t in stream.data)
    assert counted > planned + 1, (counted, planned)          # tasks stopped at their budget, and continued


def test_counting_on_a_cluster_plans_from_its_workers(client):
    plan = cluster.Plan.of(client)
    limits = [w["memory_limit"] for w in client.scheduler_info(n_workers=-1)["workers"].values()]
    assert plan.threads == 2
    assert cluster.MIN_TABLE_BUDGET <= plan.table_budget <= max(limits) * cluster.MEMORY_SHARE / cluster.TABLE_SHARES


class KillOnce:
    """A worker plugin: the first worker to start a task whose key starts with ``prefix`` dies
    there and then (os._exit), once for the whole cluster (a marker file)."""

    def __init__(self, prefix: str, marker: str):
        self.prefix, self.marker = prefix, marker

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing" and str(key).startswith(self.prefix):
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                return
            os._exit(1)


@pytest.mark.slow
@pytest.mark.parametrize("victim", ["count_task", "hash_range", "add_partitions"])
def test_a_worker_killed_mid_count_gives_the_same_table(tmp_path, victim):
    """A worker dies as it starts counting a task, cutting a table into partitions (a task
    pinned, loosely, to that worker), or adding partitions, losing every table it held: Dask
    runs the lost tasks again (on the other worker, or the one the nanny starts), and the table
    is the local one."""
    distributed = need("distributed")
    inputs = three_inputs(tmp_path, lines=20)
    local = bpe_fast.count(inputs, workers=1, progress="none")
    marker = tmp_path / "killed"
    plugin = type("KillOncePlugin", (KillOnce, distributed.WorkerPlugin), {})(victim, str(marker))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as lc, distributed.Client(lc) as c:
        c.register_plugin(plugin)
        remote = count_there(c, inputs, task_bytes=20_000, partitions=2, fan_in=2)
    assert marker.exists(), "no worker was killed"
    assert same_arrays(remote, local)


# -- faults, each in a process of its own with a timeout: a hang fails the test, never the suite ----

SCRIPT = """
import json, sys, time
import dask, distributed
import bpe_fast
from bpe_fast.counting import distributed as cluster
from bpe_fast.cli import main

if __name__ == "__main__":
    settings = json.loads(sys.argv[1])
    dask.config.set(settings.get("dask", {}))
    for name, value in settings.get("module", {}).items():
        setattr(cluster, name, value)
    files = settings["files"]
    local = bpe_fast.count(files, workers=1, progress="none")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50, memory_limit=settings["memory_limit"]) as lc, \\
            distributed.Client(lc) as client:
        # "paused_first": wait until the memory monitor has paused every worker (it first looks
        # ~0.1 s after a worker starts; a small count could finish before that)
        for _ in range(300 if settings.get("paused_first") else 0):
            statuses = [w.get("status") for w in client.scheduler_info()["workers"].values()]
            if len(statuses) == 2 and all(status == "paused" for status in statuses):
                break
            time.sleep(0.1)
        try:
            table = bpe_fast.count(files, client=client, progress="none", **settings.get("count", {}))
        except bpe_fast.BpeFastError as exc:
            print(f"error: {exc}", flush=True)
            sys.exit(3)
        print("same" if table == local else "different", flush=True)
"""


def run_on_cluster(tmp_path, timeout: float, **settings) -> subprocess.CompletedProcess:
    need("distributed")
    script = tmp_path / "on_cluster.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen([sys.executable, str(script), json.dumps(settings)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)      # the cluster's processes too
        proc.communicate()
        pytest.fail(f"counting on the cluster still ran after {timeout} s: a hang")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def unique_words(path, n: int) -> str:
    """n distinct words, ten a line: a table of about 30 bytes a word, as big as such text gets."""
    letters = string.ascii_lowercase

    def word(i: int) -> str:
        return "".join(letters[i // 26 ** k % 26] for k in range(5))
    path.write_text("".join(" ".join(word(i) for i in range(j, min(j + 10, n))) + "\n" for j in range(0, n, 10)))
    return str(path)


@pytest.mark.slow
def test_workers_stay_under_a_memory_limit_the_whole_table_exceeds(tmp_path):
    """3 million distinct words (an 85 MB table) on workers limited to 300 MB, of which Dask
    pauses a worker at 80% and kills it at 95%: the old design (1 MiB tasks, whole tables added
    in a tree) held the whole table and its inputs in one worker and never finished (paused,
    killed, retried: still running after 100 s). Tasks stopped at their budget and tables added
    by partition: the same table."""
    words = unique_words(tmp_path / "words.txt", 3_000_000)
    done = run_on_cluster(tmp_path, 150, files=[words], memory_limit="300MB")
    assert done.returncode == 0 and done.stdout.strip() == "same", done.stdout + done.stderr[-2000:]


@pytest.mark.slow
def test_a_cluster_paused_over_its_memory_limit_is_an_error_not_a_hang(tmp_path):
    """Workers paused from the start (a pause threshold of 10% of their limit): no task can run;
    before, the count waited forever."""
    (tmp_path / "a.txt").write_text(small_text())
    done = run_on_cluster(tmp_path, 90, files=[str(tmp_path / "a.txt")], memory_limit="300MB",
                          dask={"distributed.worker.memory.pause": 0.1}, module={"STALL_SECONDS": 2},
                          paused_first=True)
    assert done.returncode == 3, done.stdout + done.stderr[-2000:]
    assert done.stdout.startswith("error: every Dask worker (2) has been paused for ") and \
        "memory limit 300 MB" in done.stdout and done.stdout.count("\n") == 1, done.stdout


@pytest.mark.slow
def test_a_task_that_kills_its_workers_over_their_memory_limit_is_a_one_line_error(tmp_path):
    """One block too big for a worker's memory (the whole file, block_size 64 MiB): the nanny
    kills the worker each time it counts it; after Dask's allowed failures, a WorkerError of one
    line (before: distributed's KilledWorker and its traceback)."""
    words = unique_words(tmp_path / "words.txt", 3_000_000)
    done = run_on_cluster(tmp_path, 120, files=[words], memory_limit="200MB", count={"block_size": 64 << 20},
                          dask={"distributed.scheduler.allowed-failures": 1})
    assert done.returncode == 3, done.stdout + done.stderr[-2000:]
    assert done.stdout.startswith("error: counting on the Dask cluster failed: the workers running one of its "
                                  "tasks died each time") and done.stdout.count("\n") == 1, done.stdout


# -- the CLI's --scheduler ---------------------------------------------------------------------------

def cli(capsys, *args: str) -> tuple[int, str, float]:
    """The CLI run here: its exit code, standard error and seconds."""
    start = time.monotonic()
    code = main(list(args))
    return code, capsys.readouterr().err, time.monotonic() - start


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_scheduler_address_where_nothing_listens_fails_at_once(tmp_path, capsys):
    """Before: dask's 10 s connect timeout, then the error."""
    need("distributed")
    (tmp_path / "a.txt").write_text("some text\n")
    address = f"tcp://127.0.0.1:{free_port()}"
    code, err, seconds = cli(capsys, "count", str(tmp_path / "a.txt"), "-o", str(tmp_path / "t.npz"),
                             "--scheduler", address)
    assert code == 2 and seconds < 5, (seconds, err)
    assert err.count("\n") == 1 and f"--scheduler {address}: cannot connect (Connection refused)" in err


def test_a_scheduler_address_where_something_else_answers_is_a_one_line_error(tmp_path, capsys):
    """A server that is no Dask scheduler (it sends bytes dask reads as a frame of exabytes):
    before, a MemoryError's traceback."""
    need("distributed")
    (tmp_path / "a.txt").write_text("some text\n")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def answer() -> None:
        for _ in range(5):
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n" * 4)
            conn.close()
    threading.Thread(target=answer, daemon=True).start()
    address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
    try:
        code, err, _ = cli(capsys, "count", str(tmp_path / "a.txt"), "-o", str(tmp_path / "t.npz"),
                           "--scheduler", address)
    finally:
        server.close()
    assert code == 2 and err.count("\n") == 1 and f"--scheduler {address}: what answers there is no Dask " in err, err


@pytest.mark.slow
def test_bench_cluster_compares_cluster_and_local_counting(tmp_path):
    """benchmarks/bench_cluster.py's quick path: one pair of timings, the tables checked equal."""
    need("distributed")
    (tmp_path / "a.txt").write_text(small_text() * 20)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_cluster.py"), str(tmp_path / "a.txt"),
                           "--repeats", "1", "--json", str(tmp_path / "out.json")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads((tmp_path / "out.json").read_text())
    assert figures["workers"] == 2 and len(figures["local_s"]) == len(figures["cluster_s"]) == 1
    assert "median ratio" in done.stdout


@pytest.mark.parametrize("address", ["tcp://[::1", "foo://x", ":::::", "tcp://host:notaport",
                                     pytest.param("tcp://no-such-host.invalid:8786", marks=pytest.mark.slow)])
def test_a_bad_scheduler_is_one_line_naming_it(tmp_path, capsys, monkeypatch, address):
    pytest.importorskip("dask.distributed", reason="--scheduler needs dask: pip install 'bpe_fast[dask]'")
    monkeypatch.setattr("bpe_fast.cli.train.train", lambda *a, **k: pytest.fail("trained without a scheduler"))
    corpus = tmp_path / "c.txt"
    corpus.write_bytes(b"ab ab abc\n")
    code: int | str | None
    try:
        code = main(["train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "t.json"), "-q",
                     "--scheduler", address])
    except SystemExit as exc:                   # (argparse's errors exit rather than return)
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"bpe-fast train: error: --scheduler {address}: ") and err.count("\n") == 1
