"""Fault injection: interrupt, kill and starve bpe_fast, and check that it fails well.

Each scenario runs in a child process, as a user's would: it must end within a second or two
of the fault, leave no worker process behind, write no partial output, leave any previous
output intact, and say what happened in one line.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest

import bpe_fast
import bpe_fast.cli
from bpe_fast.cli import main
from bpe_fast.counting import CountConfig, count_tasks
from bpe_fast.errors import OutputError
from bpe_fast.pretokenize import Splitter
from bpe_fast.inputs import docs_tasks, file_tasks

from .conftest import SMALL_CORPUS, small_text

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and POSIX signals")


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
    env = {**os.environ, "BPE_FAST_TEST_TAG": tag, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def wait_for_line(proc: subprocess.Popen, text: str, timeout: float = 60) -> None:
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


# -- 1. errors and interrupts while feeding workers: the process exits, nothing is left behind ---

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


def test_sigterm_to_the_parent_alone_takes_the_workers_with_it():
    tag = uuid.uuid4().hex
    proc = start(ENDLESS, tag)
    wait_for_line(proc, "feeding")
    wait_workers(tag, 3)
    os.kill(proc.pid, signal.SIGTERM)          # the parent only, not its process group
    proc.communicate(timeout=10)
    assert_all_gone(tag, within=3)


KERNEL = """
    import numpy as np, bpe_fast, time
    rng = np.random.default_rng(0)
    lengths = rng.integers(4, 16, 1_500_000)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    symbols = rng.integers(97, 97 + 40, int(offsets[-1])).astype(np.int32)
    table = bpe_fast.WordTable(symbols, offsets, np.ones(len(lengths), np.int64))
    print("merging", flush=True)
    start = time.monotonic()
    bpe_fast.train_from_table(table, 60_000, pattern=None, progress="none")
    print("finished after", time.monotonic() - start, flush=True)
"""


def test_ctrl_c_during_merging_stops_within_a_second():
    proc = start(KERNEL, uuid.uuid4().hex)
    wait_for_line(proc, "merging")
    time.sleep(1.5)                             # the kernel is running now (it takes far longer)
    assert proc.poll() is None
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert "finished" not in out, "the kernel ran to its end before the interrupt was seen"
    assert time.monotonic() - sent < 1.5 and "KeyboardInterrupt" in err


# -- 2. workers: killed, too many, failing in two places --------------------------------------

def test_a_killed_worker_is_one_line_naming_the_likely_cause(tmp_path):
    import multiprocessing as mp

    def docs():
        for i in range(400):
            if i == 50:
                for child in mp.active_children():
                    os.kill(child.pid, signal.SIGKILL)
                time.sleep(0.3)
            yield "hello world " * 10

    with pytest.raises(bpe_fast.WorkerError) as err:
        bpe_fast.train_from_iterator(docs(), 300, workers=2, batch_chars=100)
    assert "killed by SIGKILL" in str(err.value) and "--workers" in str(err.value) and "\n" not in str(err.value)


def test_workers_are_never_more_than_the_tasks():
    import multiprocessing as mp
    seen = []
    docs = [f"document {i} " * 50 for i in range(7)]
    count_tasks(docs_tasks(docs, 10), CountConfig(Splitter.of(bpe_fast.CL100K)), workers=1000,
                on_progress=lambda n: seen.append(len(mp.active_children())))
    assert len(seen) == 7 and max(seen) <= 7


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


# -- 3. inputs that change, streams --------------------------------------------------------------

def test_a_file_that_shrinks_while_read_is_an_error(tmp_path):
    path = tmp_path / "shrinks.txt"
    path.write_text("some text on a line\n" * 5000)
    config = CountConfig(Splitter.of(bpe_fast.CL100K))
    tasks = list(file_tasks(str(path), path.stat().st_size, config.splitter.cut, 10_000))
    with open(path, "r+b") as fh:
        fh.truncate(30_000)
    with pytest.raises(bpe_fast.InputError, match="shrinks.txt: the file changed while it was read"):
        count_tasks(tasks, config, workers=1)


def test_a_fifo_is_read_as_a_stream(tmp_path):
    import threading
    text = small_text() * 20
    fifo = tmp_path / "corpus.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(text.encode()))
    writer.start()
    tok = bpe_fast.train([fifo], 500, workers=2, block_size=4096)
    writer.join()
    (tmp_path / "corpus.txt").write_bytes(text.encode())
    assert tok == bpe_fast.train([tmp_path / "corpus.txt"], 500, workers=1)
    assert tok.training_report.input_size == len(text.encode())


def test_standard_input_is_read_as_a_stream(tmp_path):
    text = small_text() * 10
    (tmp_path / "c.txt").write_bytes(text.encode())
    proc = subprocess.run([sys.executable, "-m", "bpe_fast", "train", "-", "--vocab-size", "400", "-o",
                           str(tmp_path / "t.json")], input=text.encode(), capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert bpe_fast.load(tmp_path / "t.json") == bpe_fast.train([tmp_path / "c.txt"], 400)


# -- 4. output: checked first, written whole or not at all -----------------------------------------

def test_output_equal_to_an_input_is_refused_before_reading(tmp_path, monkeypatch, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("precious text\n" * 100)
    before = corpus.read_bytes()

    def must_not_train(*args, **kwargs):
        raise AssertionError("the input was read")

    monkeypatch.setattr("bpe_fast.cli.train", must_not_train)
    assert main(["train", str(corpus), "--vocab-size", "300", "-o", str(corpus), "-q"]) == 2
    assert "is also an input file" in capsys.readouterr().err
    assert main(["train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "no" / "t.json"), "-q"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["train", str(corpus), "--vocab-size", "300", "-o", "/dev/null", "-q"]) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert corpus.read_bytes() == before


FULL_DISK = """
    import resource, signal, sys
    from bpe_fast.cli import main
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)              # writes past the limit fail with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))    # as a disk that fills up would
    sys.exit(main(sys.argv[1:]))
"""


def test_a_full_disk_keeps_the_previous_tokenizer(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(small_text() * 5)
    out = tmp_path / "tok.json"
    bpe_fast.train_from_iterator(["tiny"], 257, pattern=None).save(out)
    before = out.read_bytes()
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(FULL_DISK), "train", str(corpus), "--vocab-size",
                           "600", "-o", str(out), "-q"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "cannot write" in proc.stderr and "unchanged" in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt", "tok.json"]      # no temporary left


def test_an_interrupted_save_leaves_no_partial_file(tmp_path, monkeypatch):
    tok = bpe_fast.train_from_iterator([small_text()], 400, workers=1)
    tok.save(tmp_path / "t.json")
    before = (tmp_path / "t.json").read_bytes()
    other = bpe_fast.train_from_iterator([small_text()], 500, workers=1)
    real_dump = __import__("json").dump

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("json.dump", interrupted)
    for save in (lambda: other.save_huggingface(tmp_path / "t.json"),):
        with pytest.raises(KeyboardInterrupt):
            save()
    monkeypatch.setattr("json.dump", real_dump)
    assert (tmp_path / "t.json").read_bytes() == before and len(list(tmp_path.iterdir())) == 1


def test_a_long_valid_output_name_is_written(tmp_path, capsys):
    """A 250-byte name is valid, but ".NAME.xxxxxxxx.tmp" was not: writing failed after training."""
    out = tmp_path / ("t" * 245 + ".json")
    assert main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "--workers", "1", "-o", str(out), "-q"]) == 0
    assert bpe_fast.load(out).vocab_size == 300
    assert [p.name for p in tmp_path.iterdir()] == [out.name]          # no temporary left


def test_a_name_too_long_for_the_file_system_fails_before_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("bpe_fast.cli.train", lambda *a, **k: pytest.fail("trained before checking -o"))
    out = tmp_path / ("t" * 300 + ".json")
    assert main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "the name is 305 bytes long; this file system takes at most 255" in err and err.count("\n") == 1
    with pytest.raises(OutputError, match="File name too long"):           # the API: an OutputError too
        bpe_fast.Tokenizer([]).save(out)


def test_rewriting_a_file_keeps_its_permission_bits(tmp_path):
    tok = bpe_fast.Tokenizer([])
    private = tmp_path / "private.json"
    tok.save(private)
    private.chmod(0o600)
    tok.save(private)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    tok.save(tmp_path / "new.json")              # a new file: 0666 less the umask, as open() makes it
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o666 & ~umask


def as_another_user(action) -> str:
    """What ``action()`` returns (or the error it raises), run in a forked child: as the user nobody
    when this is root, who may write any file (a forked child needs no access to the interpreter)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                                     # the child: never back into pytest
        try:
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            result = action()
        except BaseException as exc:
            result = f"{type(exc).__name__}: {exc}"
        os.write(write, result.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        out = fh.read()
    os.waitpid(pid, 0)
    return out


def test_a_read_only_file_is_not_replaced(tmp_path):
    """As ``open(path, "w")`` would refuse it: the API with an OutputError, the CLI before training."""
    folder = Path(tempfile.mkdtemp())               # beyond tmp_path, which only its owner may enter
    try:
        folder.chmod(0o777)
        path = folder / "kept.json"
        path.write_text("precious")
        path.chmod(0o444)

        def save() -> str:
            bpe_fast.Tokenizer([]).save(path)
            return "saved"

        def cli() -> str:
            with contextlib.redirect_stderr(io.StringIO()) as err:
                code = main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "-o", str(path), "-q"])
            return f"{code} {err.getvalue()}"

        assert as_another_user(save) == (f"OutputError: {path}: cannot write: permission denied (the file is "
                                         f"read-only; it is left as it was)")
        assert as_another_user(cli) == f"2 bpe-fast train: error: -o {path}: the file is read-only: it cannot be " \
                                       f"replaced\n"
        assert path.read_text() == "precious" and os.listdir(folder) == ["kept.json"]
    finally:
        shutil.rmtree(folder)


def test_writing_that_fails_after_training_saves_the_result_elsewhere(tmp_path, monkeypatch, capsys):
    """The folder of -o was there when checked, and is gone when training ends: the training is kept."""
    folder = tmp_path / "out"
    folder.mkdir()
    real_train = bpe_fast.cli.train

    def train_then_lose_the_folder(*args, **kwargs):
        result = real_train(*args, **kwargs)
        folder.rmdir()
        return result

    monkeypatch.setattr("bpe_fast.cli.train", train_then_lose_the_folder)
    assert main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "--workers", "1", "-o",
                 str(folder / "t.tiktoken"), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 't.tiktoken'}: cannot write here" in err and err.count("\n") == 1
    saved = Path(re.search(r"saved instead as (\S+\.json)", err).group(1))
    try:
        assert bpe_fast.load(saved) == bpe_fast.train([SMALL_CORPUS], 300, workers=1, progress="none")
    finally:
        shutil.rmtree(saved.parent)


def test_a_word_table_that_cannot_be_written_after_counting_is_saved_elsewhere(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "out"
    folder.mkdir()
    real_count = bpe_fast.cli.count

    def count_then_lose_the_folder(*args, **kwargs):
        table = real_count(*args, **kwargs)
        folder.rmdir()
        return table

    monkeypatch.setattr("bpe_fast.cli.count", count_then_lose_the_folder)
    assert main(["count", str(SMALL_CORPUS), "--workers", "1", "-o", str(folder / "c.npz"), "-q"]) == 2
    err = capsys.readouterr().err
    saved = Path(re.search(r"the word table is saved instead as (\S+\.npz)", err).group(1))
    try:
        assert bpe_fast.WordTable.load(saved) == bpe_fast.count(SMALL_CORPUS, workers=1, progress="none")
    finally:
        shutil.rmtree(saved.parent)


def test_the_plot_is_checked_before_training(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib")
    monkeypatch.setattr("bpe_fast.cli.train", lambda *a, **k: pytest.fail("trained before checking --plot"))
    plot = tmp_path / "no" / "curve.png"
    assert main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "-o", str(tmp_path / "t.json"), "-q",
                 "--eval", str(SMALL_CORPUS), "--plot", str(plot)]) == 2
    assert f"--plot {plot}: the folder {plot.parent} does not exist" in capsys.readouterr().err


def test_a_writer_that_fails_with_a_bug_keeps_its_traceback_and_the_training(tmp_path, monkeypatch, capsys):
    def broken_writer(*args, **kwargs):
        raise KeyError("a bug in a writer")

    monkeypatch.setattr("bpe_fast.cli.write_tokenizer", broken_writer)
    with pytest.raises(KeyError, match="a bug in a writer"):
        main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "--workers", "1", "-o", str(tmp_path / "t.json")])
    saved = Path(re.search(r"saved instead as (\S+\.json)", capsys.readouterr().err).group(1))
    try:
        assert bpe_fast.load(saved).vocab_size == 300
    finally:
        shutil.rmtree(saved.parent)


# -- 5. the command line: no tracebacks for what a user can cause ----------------------------------

def test_huge_min_frequency_is_not_an_overflow(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("ab ab ab\n")
    assert main(["train", str(corpus), "--vocab-size", "300", "--min-frequency", "99999999999999999999",
                 "-o", str(tmp_path / "t.json"), "-q"]) == 0
    assert "stopped after 0 of" in capsys.readouterr().err


def test_a_huge_vocab_size_costs_no_memory(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(small_text())
    script = f"""
        import re, warnings, bpe_fast
        warnings.simplefilter("ignore")
        tok = bpe_fast.train([{str(corpus)!r}], 10**9, workers=1)
        # VmHWM, not ru_maxrss: ru_maxrss keeps the peak of the process before exec (pytest's)
        peak_kb = int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
        print(tok.vocab_size, peak_kb // 1024)
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120)
    vocab, peak_mb = map(int, proc.stdout.split())
    assert 256 < vocab < 5000 and peak_mb < 300, (vocab, peak_mb)


def test_closed_stdout_and_a_reader_that_goes_away(tmp_path):
    tok = bpe_fast.train_from_iterator([small_text()], 400, workers=1)
    tok.save(tmp_path / "t.json")
    big = tmp_path / "big.txt"
    big.write_text(small_text() * 200)
    bpe = [sys.executable, "-m", "bpe_fast"]
    closed = subprocess.run(bpe + ["decode", "-t", str(tmp_path / "t.json")], input="104 105", text=True,
                            capture_output=False, stdout=None, stderr=subprocess.PIPE,
                            preexec_fn=lambda: os.close(1))
    assert closed.returncode == 2 and "standard output is closed" in closed.stderr
    cmd = " ".join(bpe + ["encode", "-t", str(tmp_path / "t.json"), str(big)]) + " | head -c 20"
    piped = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True)
    assert len(piped.stdout) == 20 and "Broken pipe" not in piped.stderr and "Traceback" not in piped.stderr
