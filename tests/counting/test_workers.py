"""Counting the tasks (counting/workers.py: count_tasks, here or in worker processes) gives the
chunks the Splitter finds in the whole text, whatever the block size and the number of workers.
And the workers fail well: interrupted, killed, starved of memory or disk, or fed bad input, the
count ends within a second or two, leaves no worker process nor spill file behind, and says what
happened in one line (the scenarios that need a child process run one, as a user's would)."""
from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
import bpe_fast.counting.workers
from bpe_fast import CL100K, GPT2, O200K
from bpe_fast.cli import main
from bpe_fast.counting.workers import CountConfig, count_tasks
from bpe_fast.counting.inputs import docs_tasks, file_tasks
from bpe_fast.pretokenize.patterns import SUPERWORD
from bpe_fast.pretokenize.splitter import Splitter, chunks_of

from ..conftest import SHARED, corpus_files, examples, small_text

NAMED = [GPT2, CL100K, O200K, SUPERWORD]
IDS = ["gpt2", "cl100k", "o200k", "superword"]
SPECIAL = "<|sep|>"
text_with_specials = st.lists(st.sampled_from(["Hello", " world", "\n", "\r\n", "  ", SPECIAL, "123", "ünï", "'s",
                                               "\u2028", "\t", "!?", "/"]), max_size=30).map("".join)


def whole_counts(text: str, pattern: str) -> Counter:
    return Counter(c.encode("utf-8") for c in chunks_of([text], pattern))


def test_crlf_files_are_cut_into_blocks(tmp_path):
    text = "".join(f"line {i}: some words here.\r\n" for i in range(2000))
    path = tmp_path / "crlf.txt"
    path.write_bytes(text.encode())
    for pattern in NAMED:
        config = CountConfig(Splitter.of(pattern))
        tasks = list(file_tasks(str(path), path.stat().st_size, config.splitter.cut, 4096))
        assert len(tasks) > 10
        assert Counter(count_tasks(tasks, config, workers=1).as_dict()) == whole_counts(text, pattern)


@given(parts=st.lists(st.sampled_from(["ab", "c!!", "x1", " ", "  ", "\n", "<|s|>", "é.", "!"]), max_size=40))
@settings(max_examples=examples(150), deadline=None)
def test_superword_blocks_keep_the_chunks_around_special_tokens(tmp_path_factory, parts):
    """Every block cut the superword splitter allows, where special tokens are cut out: no cut
    inside a token nor beside one (the text the rule reads would change)."""
    text = "".join(parts)
    path = tmp_path_factory.mktemp("sw") / "doc.txt"
    path.write_bytes(text.encode("utf-8"))
    config = CountConfig(Splitter.of(SUPERWORD, ["<|s|>"]))
    tasks = list(file_tasks(str(path), path.stat().st_size, config.splitter.cut, 1))
    got = Counter(count_tasks(tasks, config, workers=1).as_dict())
    assert got == Counter(c.encode() for c in chunks_of([text], SUPERWORD, ["<|s|>"]))


def test_superword_blocks_keep_invalid_bytes_replaced_alike(tmp_path):
    data = b"word!!\xe4\xb8 x1\xffab\xe4\xb8\xadc!!d" * 200
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    config = CountConfig(Splitter.of(SUPERWORD), errors="replace")
    tasks = list(file_tasks(str(path), len(data), config.splitter.cut, 16))
    assert len(tasks) > 100
    whole = data.decode("utf-8", "replace")
    assert Counter(count_tasks(tasks, config, workers=1).as_dict()) == whole_counts(whole, SUPERWORD)


@pytest.mark.parametrize("pattern", NAMED, ids=IDS)
@pytest.mark.parametrize("block_size", [1, 7, 64, 1 << 30])
def test_file_blocks_give_whole_file_counts(tmp_path, pattern, block_size):
    text = ("Hello world!\nIt's 2024.\n\n  indented\r\nλόγος 😀\n/path\n" * 50) + "end  \n"
    path = tmp_path / "doc.txt"
    path.write_bytes(text.encode("utf-8"))
    config = CountConfig(Splitter.of(pattern))
    tasks = list(file_tasks(str(path), path.stat().st_size, config.splitter.cut, block_size))
    assert len(tasks) > 1 or block_size == 1 << 30
    counts = count_tasks(tasks, config, workers=1)
    assert Counter(counts.as_dict()) == whole_counts(text, pattern)


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_workers_do_not_change_counts(workers):
    docs = [f"doc {i}: " + "lorem ipsum dolor " * (i % 7) + "\n" for i in range(3000)]
    config = CountConfig(Splitter.of(CL100K))
    got = count_tasks(docs_tasks(docs, 2000), config, workers=workers).as_dict()
    assert Counter(got) == Counter(c.encode() for c in chunks_of(docs, CL100K))


def test_special_tokens_are_cut_out_and_never_counted():
    config = CountConfig(Splitter.of(CL100K, ("<|endoftext|>",)))
    got = count_tasks(docs_tasks(["one<|endoftext|>two <|endoftext|>"], 100), config, workers=1).as_dict()
    assert not any(b"endoftext" in chunk for chunk in got)
    assert got == {b"one": 1, b"two": 1, b" ": 1}


pytestmark_data = pytest.mark.skipif(SHARED is None, reason="shared corpora not found (BPE_FAST_DATA or ../shared)")


@pytestmark_data
@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
def test_same_merges_for_workers_and_block_sizes(pattern):
    files = [p for p in corpus_files() if p.name in {"taylorswift.txt", "ja_wagahaiwa_nekodearu.txt", "ru.txt"}]
    runs = [bpe_fast.train(files, 1500, pattern=pattern, workers=w, block_size=b)
            for w, b in [(1, 1 << 30), (2, 4096), (4, 100_000), (2, 1)]]
    for tok in runs[1:]:
        assert np.array_equal(tok.merges, runs[0].merges)
    whole = [p.read_bytes().decode("utf-8") for p in files]  # no newline translation
    assert np.array_equal(bpe_fast.train_from_iterator(whole, 1500, pattern=pattern, workers=1).merges,
                          runs[0].merges)


@pytest.mark.slow      # 2.5-5.5 s of waiting for workers; the fast suite kills one in 1.5 s (below)
def test_a_killed_worker_is_an_error_not_a_hang():
    import multiprocessing as mp
    import time

    def docs():
        for i in range(400):
            if i == 50:
                for child in mp.active_children():     # SIGKILL, as the OOM killer would
                    child.kill()
                time.sleep(0.3)
            yield "hello world " * 10

    start = time.monotonic()
    with pytest.raises(bpe_fast.WorkerError, match=r"counting worker \(process \d+\) was killed by SIGKILL "
                                                   r"-- most likely by the system's out-of-memory killer"):
        count_tasks(docs_tasks(docs(), 100), CountConfig(Splitter.of(CL100K)), workers=2)
    assert time.monotonic() - start < 30


def test_a_worker_error_stops_the_reading_early():
    consumed = []

    def docs():
        yield b"\xff not utf-8"
        for i in range(5000):
            consumed.append(i)
            yield "hello world " * 10

    with pytest.raises(bpe_fast.InputError, match="document 0: invalid UTF-8 at byte offset 0"):
        count_tasks(docs_tasks(docs(), 100), CountConfig(Splitter.of(CL100K)), workers=2)
    assert len(consumed) < 1000       # it did not read on to the end


@pytest.mark.filterwarnings("ignore::bpe_fast.VocabSizeWarning")      # learns all there is: each chunk one token
@pytest.mark.parametrize("pattern", ["cl100k", r"\w+|[^\w]+", None])
def test_replaced_surrogates_are_counted_as_the_encoder_encodes_them(pattern):
    """errors="replace": U+FFFD for a lone surrogate, as the encoder and tiktoken make it, not "?"; so a
    tokenizer learns the bytes it will encode (a surrogate pair, as Python may hold it, is one character)."""
    docs = ["ab\ud800cd ab\udcffcd \ud83d\ude00 x?y"] * 20
    tok = bpe_fast.train_from_iterator(docs, 300, pattern=pattern, errors="replace", workers=1, progress="none")
    learned = b"".join(tok.token_bytes(i) for i in range(256, tok.n_base))
    assert "\ufffd".encode() in learned and b"\xf0\x9f\x98\x80" in learned
    counted = bpe_fast.count_from_iterator(docs[:1], pattern=pattern, errors="replace", workers=1, progress="none")
    encoded = tok.decode_bytes(tok.encode(docs[0]))
    replaced = sum(counted.word(i).count("\ufffd".encode()) * int(counted.counts[i]) for i in range(len(counted)))
    assert replaced == encoded.count("\ufffd".encode()) == 2
    assert len(tok.encode(docs[0])) < len(encoded) / 2       # the learned tokens are the ones it encodes with



@settings(max_examples=examples(60), deadline=None)
@given(docs=st.lists(text_with_specials, min_size=1, max_size=6),
       pattern=st.sampled_from([GPT2, CL100K, O200K, SUPERWORD, r"\w+|\s+|[^\w\s]+", None]), lines=st.booleans(),
       as_bytes=st.booleans())
def test_counting_counts_the_splitters_chunks_on_every_engine(docs, pattern, lines, as_bytes):
    splitter = Splitter.of(pattern, [SPECIAL], lines)
    given_docs = [d.encode() for d in docs] if as_bytes else docs
    table = count_tasks(docs_tasks(given_docs, 64), CountConfig(splitter), workers=1)
    expected = Counter(c.encode() for d in docs for c in splitter.chunks(d))
    assert table.as_dict() == dict(expected)


# -- faults: the workers fail well -----------------------------------------------------------------

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and POSIX signals")

# A child process and its workers, found by a tag in their environment (as tests/training/conftest.py
# finds a training's).


def tagged_processes(tag: str) -> list[int]:
    """Processes whose environment holds BPE_FAST_TEST_TAG=tag: a child and its workers."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if f"BPE_FAST_TEST_TAG={tag}".encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def start(script: str, tag: str, **kwargs) -> subprocess.Popen:
    """The script in a new Python. Ctrl-C in it is a user's: SIGINT as the default, also when the
    tests themselves run with it ignored (a background job of a non-interactive shell does, and
    Python then leaves it ignored, so no KeyboardInterrupt would come)."""
    env = {**os.environ, "BPE_FAST_TEST_TAG": tag, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kwargs)


def wait_for_line(proc: subprocess.Popen, text: str, timeout: float = 60) -> None:
    assert proc.stdout is not None and proc.stderr is not None        # started with stdout and stderr piped
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if text in line:
            return
        if not line and proc.poll() is not None:
            raise AssertionError(f"child ended before printing {text!r}: {proc.stderr.read()}")
    raise AssertionError(f"child did not print {text!r} within {timeout} s")


def assert_all_gone(tag: str, within: float = 3.0) -> None:
    deadline = time.monotonic() + within
    while tagged_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not tagged_processes(tag), "worker processes outlived their parent"


def wait_workers(tag: str, n: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while len(tagged_processes(tag)) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(tagged_processes(tag)) >= n, "the workers did not start"


FAILING_ITERATOR = """
    import bpe_fast, time
    BIG = "the quick brown fox jumps over the lazy dog. " * 45_000      # ~2 MB a document
    def docs():
        for i in range(20):
            if i == 4:
                {fault}          # while big documents are still queued for the workers
            yield BIG
    try:
        bpe_fast.train_from_iterator(docs(), 1000, workers=2)
    except Exception as exc:
        print("caught", type(exc).__name__, str(exc)[:80])
    print("leaving", time.monotonic())
"""


@linux_only
@pytest.mark.parametrize("fault,error", [
    ("raise RuntimeError('the source failed')", "RuntimeError"),
    ("yield 'abc\\ud800' + BIG", "InputError"),
])
def test_a_failing_iterator_ends_the_process(fault, error):
    tag = uuid.uuid4().hex
    proc = start(FAILING_ITERATOR.format(fault=fault), tag)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the process did not exit after the error (a queue's feeder thread hangs it)")
    assert proc.returncode == 0, err
    assert f"caught {error}" in out and "leaving" in out
    assert_all_gone(tag)


ENDLESS = """
    import bpe_fast, itertools
    def docs():
        for i in itertools.count():
            if i == 50:
                print("feeding", flush=True)
            yield f"document {i}: " + "the quick brown fox jumps over the lazy dog. " * 2000
    bpe_fast.train_from_iterator(docs(), 1000, workers=2)
"""


@linux_only
def test_ctrl_c_on_an_endless_iterator_stops_at_once():
    tag = uuid.uuid4().hex
    proc = start(ENDLESS, tag)
    wait_for_line(proc, "feeding")
    wait_workers(tag, 3)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("Ctrl-C did not stop training on an endless iterator")
    assert time.monotonic() - sent < 3
    assert "KeyboardInterrupt" in err and proc.returncode != 0
    assert err.count("KeyboardInterrupt") == 1, "the workers should not print tracebacks of their own"
    assert_all_gone(tag)


@linux_only
def test_sigterm_to_the_parent_alone_takes_the_workers_with_it():
    tag = uuid.uuid4().hex
    proc = start(ENDLESS, tag)
    wait_for_line(proc, "feeding")
    wait_workers(tag, 3)
    os.kill(proc.pid, signal.SIGTERM)          # the parent only, not its process group
    proc.communicate(timeout=10)
    assert_all_gone(tag, within=3)


@linux_only
def test_a_killed_worker_is_one_line_naming_the_likely_cause(tmp_path):
    import multiprocessing as mp

    def docs():
        for i in range(400):
            if i == 50:
                for child in mp.active_children():
                    child.kill()                        # SIGKILL
                time.sleep(0.3)
            yield "hello world " * 10

    with pytest.raises(bpe_fast.WorkerError) as err:
        bpe_fast.train_from_iterator(docs(), 300, workers=2, batch_chars=100)
    assert "killed by SIGKILL" in str(err.value) and "--workers" in str(err.value) and "\n" not in str(err.value)


@linux_only
def test_workers_are_never_more_than_the_tasks():
    import multiprocessing as mp
    seen = []
    docs = [f"document {i} " * 50 for i in range(7)]
    count_tasks(docs_tasks(docs, 10), CountConfig(Splitter.of(bpe_fast.CL100K)), workers=1000,
                on_progress=lambda n: seen.append(len(mp.active_children())))
    assert len(seen) == 7 and max(seen) <= 7


@linux_only
def test_the_first_invalid_byte_is_reported_whatever_the_worker_timing(tmp_path):
    # The first fault lies at the end of the first 1 MiB block, the second at the start of the
    # next: the second worker finds its fault first, but the first one in the file is reported.
    line = b"fine text on a line\n"
    good = line * 52_000
    path = tmp_path / "two_faults.txt"
    path.write_bytes(good + b"bad \xff here\n" + line * 500 + b"worse \xfe there\n" + line * 20_000)
    for _ in range(5):
        with pytest.raises(bpe_fast.InputError, match=rf"byte offset {len(good) + 4}\b"):
            bpe_fast.train([path], 300, workers=2, block_size=1 << 20)


def random_words(size: int, seed: int) -> bytes:
    """Text of distinct made-up words: every block makes a table past a 1 MiB budget (spills)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    letters = rng.integers(97, 123, size, dtype=np.uint8)
    letters[rng.integers(0, size, size // 6)] = ord(" ")
    letters[rng.integers(0, size, size // 60)] = ord("\n")          # where blocks may be cut
    return letters.tobytes()


def spill_parts(folder: Path) -> list[Path]:
    return list(folder.glob("bpe_fast-counts-*/*.part"))


def feed_until_spilled(proc: subprocess.Popen, folder: Path, timeout: float = 20) -> None:
    """Write made-up words to the child's standard input until its workers have spilled."""
    deadline, seed = time.monotonic() + timeout, 0
    assert proc.stdin is not None
    while not spill_parts(folder):
        assert time.monotonic() < deadline and proc.poll() is None, "counting did not spill"
        proc.stdin.write(random_words(1 << 18, seed))
        proc.stdin.flush()
        seed += 1
    time.sleep(0.2)                       # mid-count: more parts on their way


COUNT_STDIN_API = "import bpe_fast; bpe_fast.count('-', workers={workers}, memory_budget=1 << 20, progress='none')"


@linux_only
@pytest.mark.parametrize("how,workers,signum", [
    ("cli", 2, signal.SIGTERM), ("cli", 2, signal.SIGHUP), ("api", 2, signal.SIGTERM), ("api", 1, signal.SIGHUP)])
def test_a_terminating_signal_while_counting_leaves_no_spill_files(tmp_path, how, workers, signum):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    tag = uuid.uuid4().hex
    cmd = ([sys.executable, "-m", "bpe_fast", "count", "-", "-o", str(tmp_path / "t.npz"), "--memory-budget", "1M",
            "--workers", str(workers), "-q"] if how == "cli" else
           [sys.executable, "-c", COUNT_STDIN_API.format(workers=workers)])
    env = {**os.environ, "TMPDIR": str(tmp), "BPE_FAST_TEST_TAG": tag}
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        feed_until_spilled(proc, tmp)
        proc.send_signal(signum)
        proc.wait(timeout=10)
    finally:
        proc.kill()
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    assert not list(tmp.glob("bpe_fast-counts-*")), "the spill folder outlived the signal"
    assert_all_gone(tag)
    if how == "cli":
        assert proc.returncode == 128 + signum
        assert err == f"bpe-fast count: stopped by {signal.Signals(signum).name}\n"
    else:                                  # the signal's default action, once the files are gone
        assert proc.returncode == -signum and err == ""
    assert not (tmp_path / "t.npz").exists()


def test_a_clean_up_runs_to_its_end_through_ctrl_c():
    """count_tasks' clean-up (the spill folder removed, the workers stopped) is not cut short by
    a Ctrl-C that comes while it runs: it runs again, whole, then the KeyboardInterrupt is raised."""
    calls: list[int] = []

    def clean_up():
        calls.append(len(calls))
        if len(calls) == 1:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        bpe_fast.counting.workers.uninterrupted(clean_up)
    assert calls == [0, 1]


@linux_only
def test_workers_stopped_before_their_set_up_print_no_traceback(monkeypatch, capfd):
    # The workers are forked while the parent turns SIGTERM into an exception (and inherit its
    # handler); one stopped before its own set-up must die as by default, not raise the parent's.
    real_set_up = bpe_fast.counting.workers._die_with_parent

    def slow_set_up(parent):
        time.sleep(5)
        real_set_up(parent)

    def docs():
        yield from ["some text"] * 4
        time.sleep(0.3)                      # the workers are started (and asleep) by now
        raise RuntimeError("the source failed")

    monkeypatch.setattr("bpe_fast.counting.workers._die_with_parent", slow_set_up)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="the source failed"):
        bpe_fast.count_from_iterator(docs(), workers=3, batch_chars=1, progress="none")
    assert time.monotonic() - start < 3
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Terminated" not in err, err


@linux_only
def test_when_every_worker_fails_the_error_comes_at_once():
    # Thousands of "done" messages wait ahead of the errors; taking them in one at a time (each
    # behind a 0.5 s wait on the full task queue) made the error come 80 s late.
    def docs():
        yield from (f"good text {i}" for i in range(10_000))
        while True:
            yield b"bad \xff"

    start = time.monotonic()
    with pytest.raises(bpe_fast.InputError, match="document 10000: invalid UTF-8"):
        bpe_fast.count_from_iterator(docs(), workers=2, batch_chars=1, progress="none")
    assert time.monotonic() - start < 20      # 4.05 s once on a loaded machine; the defect took 80 s


def slow_first_failure(self, task):
    if task.first_index == 0:
        time.sleep(1.0)                   # the earliest task fails last
    raise bpe_fast.InputError(f"task {task.first_index} failed")


@linux_only
def test_the_earliest_failure_is_raised_as_soon_as_it_is_in(monkeypatch):
    monkeypatch.setattr("bpe_fast.counting.workers.ChunkCounter.run", slow_first_failure)
    start = time.monotonic()
    with pytest.raises(bpe_fast.InputError, match="task 0 failed"):
        bpe_fast.count_from_iterator([f"doc {i}" for i in range(40)], workers=2, batch_chars=1, progress="none")
    assert time.monotonic() - start < 3


def out_of_memory(self, task):
    raise MemoryError


@linux_only
@pytest.mark.parametrize("workers", [1, 2])
def test_out_of_memory_while_counting_is_a_worker_error_naming_the_settings(monkeypatch, workers):
    monkeypatch.setattr("bpe_fast.counting.workers.ChunkCounter.run", out_of_memory)     # forked workers inherit it
    with pytest.raises(bpe_fast.WorkerError) as err:
        bpe_fast.count_from_iterator(["some text"] * 8, workers=workers, batch_chars=1, progress="none")
    message = str(err.value)
    assert "ran out of memory" in message and "--memory-budget" in message and "\n" not in message
    assert ("--workers" in message) == (workers > 1)


class FullDiskTable(bpe_fast.counting.workers.ChunkTable):
    """A table past any budget, whose spills find the disk full."""
    nbytes = 1 << 40

    def write_sorted(self, path, batch=1 << 18):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)


@linux_only
@pytest.mark.parametrize("workers", [1, 2])
def test_a_full_disk_while_spilling_names_the_folder_and_tmpdir(tmp_path, monkeypatch, capsys, workers):
    monkeypatch.setattr("bpe_fast.counting.workers.ChunkTable", FullDiskTable)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))                 # as TMPDIR=tmp_path would
    corpus = tmp_path / "c.txt"
    corpus.write_text(small_text() * 20)
    args = ["count", str(corpus), "-o", str(tmp_path / "t.npz"), "--workers", str(workers), "--block-size", "4096",
            "--memory-budget", "1M", "-q"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}{os.sep}bpe_fast-counts-" in err and "No space left on device" in err and "TMPDIR" in err
    assert err.count("\n") == 1
    assert not list(tmp_path.glob("bpe_fast-counts-*"))
