"""Fault injection: interrupt, kill and starve bpe_fast, and check that it fails well.

Each scenario runs in a child process, as a user's would: it must end within a second or two
of the fault, leave no worker process behind, write no partial output, leave any previous
output intact, and say what happened in one line.
"""
from __future__ import annotations

import contextlib
import errno
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

import numpy as np
import pytest

import bpe_fast
import bpe_fast.cli.count
import bpe_fast.cli.train
import bpe_fast.counting.workers
from bpe_fast.cli import main
from bpe_fast.counting.workers import CountConfig, count_tasks
from bpe_fast.errors import OutputError
from bpe_fast.pretokenize.splitter import Splitter
from bpe_fast.counting.inputs import docs_tasks, file_tasks

from .conftest import SMALL_CORPUS, need, small_text

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


# -- 2. workers: killed, too many, failing in two places --------------------------------------

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

    monkeypatch.setattr("bpe_fast.cli.train.train", must_not_train)
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
    monkeypatch.setattr("bpe_fast.cli.train.train", lambda *a, **k: pytest.fail("trained before checking -o"))
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
        corpus = folder / "corpus.txt"              # the other user may not read the checkout's own copy
        shutil.copyfile(SMALL_CORPUS, corpus)
        corpus.chmod(0o444)

        def save() -> str:
            bpe_fast.Tokenizer([]).save(path)
            return "saved"

        def cli() -> str:
            with contextlib.redirect_stderr(io.StringIO()) as err:
                code = main(["train", str(corpus), "--vocab-size", "300", "-o", str(path), "-q"])
            return f"{code} {err.getvalue()}"

        assert as_another_user(save) == (f"OutputError: {path}: cannot write: permission denied (the file is "
                                         f"read-only; it is left as it was)")
        assert as_another_user(cli) == f"2 bpe-fast train: error: -o {path}: the file is read-only: it cannot be " \
                                       f"replaced\n"
        assert path.read_text() == "precious" and sorted(os.listdir(folder)) == ["corpus.txt", "kept.json"]
    finally:
        shutil.rmtree(folder)


def test_inputs_and_outputs_in_a_folder_that_cannot_be_entered_are_named():
    """A file in a folder the user may not enter, a folder that cannot be listed (at the top or
    below), an output there: each named with what is wrong, never a bare [Errno 13], and no file
    of an unlistable subfolder silently left out."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to run the check as the user nobody (root may read any folder)")
    folder = Path(tempfile.mkdtemp())               # beyond tmp_path, which only its owner may enter
    try:
        folder.chmod(0o777)
        (folder / "open.txt").write_text("some text\n")
        (folder / "open.txt").chmod(0o644)
        locked = folder / "locked"
        locked.mkdir(mode=0o700)
        (locked / "a.txt").write_text("hidden text\n")
        open_file, hidden = str(folder / "open.txt"), str(locked / "a.txt")

        def api(inputs) -> str:
            bpe_fast.count(inputs, workers=1, progress="none")
            return "counted"

        def cli(*args: str) -> str:
            with contextlib.redirect_stderr(io.StringIO()) as err:
                code = main([*args, "-q"])
            return f"{code} {err.getvalue()}"

        denied = "cannot be read: Permission denied"
        assert as_another_user(lambda: api([hidden])) == f"InputError: {hidden}: {denied}"
        assert as_another_user(lambda: api([locked])) == f"InputError: {locked}: {denied}"
        assert as_another_user(lambda: api([folder])) == f"InputError: {locked}: {denied}"
        for command in (["count", hidden, "-o", str(folder / "c.npz")],
                        ["train", hidden, "--vocab-size", "300", "-o", str(folder / "t.json")]):
            assert as_another_user(lambda c=command: cli(*c)) == f"2 bpe-fast {command[0]}: error: {hidden}: {denied}\n"
        out = locked / "t.json"
        assert as_another_user(lambda: cli("train", open_file, "--vocab-size", "300", "-o", str(out))) == (
            f"2 bpe-fast train: error: -o {out}: the folder {locked} cannot be entered (permission denied)\n")
    finally:
        shutil.rmtree(folder)


def test_writing_that_fails_after_training_saves_the_result_elsewhere(tmp_path, monkeypatch, capsys):
    """The folder of -o was there when checked, and is gone when training ends: the training is kept."""
    folder = tmp_path / "out"
    folder.mkdir()
    real_train = bpe_fast.cli.train.train

    def train_then_lose_the_folder(*args, **kwargs):
        result = real_train(*args, **kwargs)
        folder.rmdir()
        return result

    monkeypatch.setattr("bpe_fast.cli.train.train", train_then_lose_the_folder)
    assert main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "--workers", "1", "-o",
                 str(folder / "t.tiktoken"), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 't.tiktoken'}: cannot write here" in err and err.count("\n") == 1
    found = re.search(r"saved instead as (\S+\.json)", err)
    assert found is not None, err
    saved = Path(found.group(1))
    try:
        assert bpe_fast.load(saved) == bpe_fast.train([SMALL_CORPUS], 300, workers=1, progress="none")
    finally:
        shutil.rmtree(saved.parent)


def test_a_word_table_that_cannot_be_written_after_counting_is_saved_elsewhere(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "out"
    folder.mkdir()
    real_count = bpe_fast.cli.count.count

    def count_then_lose_the_folder(*args, **kwargs):
        table = real_count(*args, **kwargs)
        folder.rmdir()
        return table

    monkeypatch.setattr("bpe_fast.cli.count.count", count_then_lose_the_folder)
    assert main(["count", str(SMALL_CORPUS), "--workers", "1", "-o", str(folder / "c.npz"), "-q"]) == 2
    err = capsys.readouterr().err
    found = re.search(r"the word table is saved instead as (\S+\.npz)", err)
    assert found is not None, err
    saved = Path(found.group(1))
    try:
        assert bpe_fast.WordTable.load(saved) == bpe_fast.count(SMALL_CORPUS, workers=1, progress="none")
    finally:
        shutil.rmtree(saved.parent)


def test_the_plot_is_checked_before_training(tmp_path, monkeypatch, capsys):
    need("matplotlib")                                   # --plot needs the [plot] extra
    monkeypatch.setattr("bpe_fast.cli.train.train", lambda *a, **k: pytest.fail("trained before checking --plot"))
    plot = tmp_path / "no" / "curve.png"
    assert main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "-o", str(tmp_path / "t.json"), "-q",
                 "--eval", str(SMALL_CORPUS), "--plot", str(plot)]) == 2
    assert f"--plot {plot}: the folder {plot.parent} does not exist" in capsys.readouterr().err


def test_a_writer_that_fails_with_a_bug_keeps_its_traceback_and_the_training(tmp_path, monkeypatch, capsys):
    def broken_writer(*args, **kwargs):
        raise KeyError("a bug in a writer")

    monkeypatch.setattr("bpe_fast.cli.writing.write_tokenizer", broken_writer)
    with pytest.raises(KeyError, match="a bug in a writer"):
        main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "--workers", "1", "-o", str(tmp_path / "t.json")])
    err = capsys.readouterr().err
    found = re.search(r"saved instead as (\S+\.json)", err)
    assert found is not None, err
    saved = Path(found.group(1))
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


# -- 6. damaged compressed input: an error naming the file, never a short text with exit 0 -------

def zst_corpus(tmp_path: Path, frames: int = 1) -> tuple[bytes, bytes]:
    """(text, its zstd stream in ``frames`` frames, as ``zstd`` writes big or piped input)."""
    zstandard = need("zstandard")
    text = "".join(f"line {i} of a compressed corpus\n" for i in range(20_000)).encode()
    step = -(-len(text) // frames)
    return text, b"".join(zstandard.ZstdCompressor().compress(text[i:i + step]) for i in range(0, len(text), step))


@pytest.mark.parametrize("frames", [1, 3])
def test_a_truncated_zst_is_an_input_error_naming_the_file(tmp_path, frames, capsys):
    _, whole = zst_corpus(tmp_path, frames)
    cut = tmp_path / "cut.txt.zst"
    cut.write_bytes(whole[:len(whole) * 2 // 3])          # inside the last frame
    tok = bpe_fast.train_from_iterator([small_text()], 300, workers=1, progress="none")
    truncated = "cut.txt.zst: .*truncated"
    with pytest.raises(bpe_fast.InputError, match=truncated):
        bpe_fast.count([cut], workers=1, progress="none")
    with pytest.raises(bpe_fast.InputError, match=truncated):
        bpe_fast.train([cut], 300, workers=2, block_size=4096, progress="none")
    with pytest.raises(bpe_fast.InputError, match=truncated):
        bpe_fast.encode_files(tok, [cut], tmp_path / "ids.txt", progress="none")
    assert not (tmp_path / "ids.txt").exists()
    assert main(["count", str(cut), "-o", str(tmp_path / "t.npz"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "cut.txt.zst" in err and "truncated" in err and err.count("\n") == 1


def test_zst_frames_are_read_across_and_garbage_is_an_input_error(tmp_path):
    text, whole = zst_corpus(tmp_path, frames=3)
    (tmp_path / "frames.txt.zst").write_bytes(whole)
    (tmp_path / "plain.txt").write_bytes(text)
    assert bpe_fast.count([tmp_path / "frames.txt.zst"], workers=1) == bpe_fast.count([tmp_path / "plain.txt"])
    (tmp_path / "empty.txt.zst").write_bytes(b"")               # no frame: an empty document, as .gz
    assert len(bpe_fast.count([tmp_path / "empty.txt.zst"], workers=1)) == 0
    (tmp_path / "junk.txt.zst").write_bytes(whole + b"not zstd")
    with pytest.raises(bpe_fast.InputError, match="junk.txt.zst: cannot be decompressed as zstd"):
        bpe_fast.count([tmp_path / "junk.txt.zst"], workers=1)


# -- 7. SIGTERM/SIGHUP while counting: the spill files and the workers go, one line, 128 + signal ---

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


# -- 8. every worker failing: the earliest task's error, at once ---------------------------------

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


def test_the_earliest_failure_is_raised_as_soon_as_it_is_in(monkeypatch):
    monkeypatch.setattr("bpe_fast.counting.workers.ChunkCounter.run", slow_first_failure)
    start = time.monotonic()
    with pytest.raises(bpe_fast.InputError, match="task 0 failed"):
        bpe_fast.count_from_iterator([f"doc {i}" for i in range(40)], workers=2, batch_chars=1, progress="none")
    assert time.monotonic() - start < 3


# -- 9. a worker out of memory or disk: one line naming the cause and the setting that helps -------

def out_of_memory(self, task):
    raise MemoryError


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


# -- 10. word tables: counts past int64 refused, not wrapped ----------------------------------------

NEAR_INT64_MAX = 3 << 61            # two of these add up past 2**63 - 1


def test_counts_that_would_add_up_past_int64_are_refused(tmp_path):
    a = bpe_fast.WordTable.from_counts({b"the": NEAR_INT64_MAX, b"cat": 5})
    b = bpe_fast.WordTable.from_counts({b"the": NEAR_INT64_MAX, b"dog": 5})
    for add in (lambda: a + b, lambda: bpe_fast.WordTable.merge([a, b, a])):
        with pytest.raises(bpe_fast.ArgumentError, match=r"chunk b'the' would occur .* past the 64-bit count limit"):
            add()
    unsorted = bpe_fast.WordTable(np.frombuffer(b"thethe", np.uint8), np.array([0, 3, 6]),     # a chunk twice
                                  np.array([NEAR_INT64_MAX, NEAR_INT64_MAX]))
    with pytest.raises(bpe_fast.ArgumentError, match="past the 64-bit count limit"):
        unsorted.sorted()
    a.save(tmp_path / "a.npz")
    b.save(tmp_path / "b.npz")
    with pytest.raises(bpe_fast.ArgumentError, match="b.npz: cannot be added .* past the 64-bit count limit"):
        bpe_fast.WordTable.merge_files([tmp_path / "a.npz", tmp_path / "b.npz"])
    assert main(["train", "--counts", str(tmp_path / "a.npz"), "--counts", str(tmp_path / "b.npz"), "--vocab-size",
                 "300", "-o", str(tmp_path / "t.json"), "-q"]) == 2
    assert (a + bpe_fast.WordTable.from_counts({b"the": 1})).as_dict()[b"the"] == NEAR_INT64_MAX + 1     # in range
    assert (a + bpe_fast.WordTable.from_counts({b"cat": 1})).total_chunks == NEAR_INT64_MAX + 6


def test_the_total_of_counts_past_int64_is_exact():
    table = bpe_fast.WordTable.from_counts({b"the": NEAR_INT64_MAX, b"cat": NEAR_INT64_MAX})
    assert table.total_chunks == 2 * NEAR_INT64_MAX


def saved_table(tmp_path: Path) -> tuple[bpe_fast.WordTable, Path]:
    table = bpe_fast.WordTable.from_counts({b"the": 3, b"cat": 5, b" dog": 1})
    table.save(tmp_path / "t.npz")
    return table, tmp_path / "t.npz"


@pytest.mark.parametrize("claimed", ["(1000000000000,)", "(100000000,)"])
def test_a_word_table_header_claiming_a_huge_array_is_refused_before_allocating(tmp_path, claimed):
    import tracemalloc
    import zipfile
    _, path = saved_table(tmp_path)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    old, new = b"'shape': (3,), }", f"'shape': {claimed}, }}".encode()
    at = members["counts.npy"].index(old)
    members["counts.npy"] = members["counts.npy"][:at] + new + members["counts.npy"][at + len(new):]   # in the padding
    with zipfile.ZipFile(path, "w") as archive:         # a consistent archive (CRCs right): only the header lies
        for name, content in members.items():
            archive.writestr(name, content)
    tracemalloc.start()
    try:
        with pytest.raises(bpe_fast.InputError, match=r"t.npz: array 'counts' claims shape"):
            bpe_fast.WordTable.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 << 20, f"{peak:,} bytes taken for a damaged header"


def test_a_word_table_with_bad_fields_is_an_input_error_naming_the_file(tmp_path):
    import json

    import numpy as np
    table, path = saved_table(tmp_path)
    arrays = dict(symbols=table.symbols, offsets=table.offsets, counts=table.counts, hashes=table.hashes)
    meta = {"format": "bpe_fast.counting.wordtable", "version": 1, "pattern": None, "special_tokens": []}
    for damage, expected in [(dict(meta=np.array(json.dumps({**meta, "input_bytes": "many"}))), "input_bytes"),
                             (dict(counts=np.int64(3)), "counts must be a 1-D int64 array"),
                             (dict(meta=np.array([1, 2])), "not a bpe_fast word table"),
                             (dict(hashes=np.array(["x"] * 3, dtype=object)), "not a bpe_fast word table")]:
        with open(path, "wb") as fh:
            np.savez(fh, **{**arrays, "meta": np.array(json.dumps(meta)), **damage})
        with pytest.raises(bpe_fast.InputError, match=f"t.npz: .*{expected}"):
            bpe_fast.WordTable.load(path)


# -- 11. JSON nested past what the parser can take: one line naming the file and line -------------

DEEP = 100_000


def test_deeply_nested_json_lines_are_an_input_error_naming_the_line(tmp_path, capsys):
    corpus = tmp_path / "deep.jsonl"
    corpus.write_text('{"text": "fine"}\n{"text": ' + "[" * DEEP + "]" * DEEP + "}\n")
    with pytest.raises(bpe_fast.InputError, match="deep.jsonl, line 2: JSON nested too deeply"):
        bpe_fast.count([corpus], workers=1, progress="none")
    assert main(["count", str(corpus), "-o", str(tmp_path / "t.npz"), "--workers", "2", "--block-size", "20",
                 "-q"]) == 2
    err = capsys.readouterr().err
    assert "deep.jsonl, line 2: JSON nested too deeply" in err and err.count("\n") == 1


def test_a_deeply_nested_tokenizer_file_is_a_tokenizer_file_error_naming_the_line(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text('{\n  "model":\n    ' + "[" * DEEP + "]" * DEEP + "\n}\n")
    with pytest.raises(bpe_fast.TokenizerFileError, match="deep.json, line 3: JSON nested more than 100 levels"):
        bpe_fast.load(path)
    assert main(["convert", str(path), str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert "deep.json, line 3" in err and err.count("\n") == 1


# -- 12. Parquet: struct and list columns, fields of structs by dotted paths ------------------------

def nested_parquet(tmp_path: Path) -> Path:
    pa = need("pyarrow")
    pq = need("pyarrow.parquet")
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({
        "meta": pa.array([{"text": "hello world", "n": 1}, None, {"text": "more text", "n": 2},
                          {"text": None, "n": 3}]),
        "tags": pa.array([["a b"], ["c"], [], None]),
        "title": ["one", "two", None, "four"],
    }), path)
    return path


def test_a_struct_column_named_as_text_says_what_the_file_holds(tmp_path, capsys):
    path = nested_parquet(tmp_path)
    holds = (r"its columns: meta \(struct<text: string, n: int64>\), tags \(list<element: string>\), "
             r"title \(string\); text columns: meta.text, title")
    for column, problem in [("meta", r"column 'meta' holds struct<text: string, n: int64>, not text"),
                            ("tags", r"column 'tags' holds list<element: string>, not text"),
                            ("text", r"no column 'text'"), ("meta.n", r"column 'meta.n' holds int64, not text")]:
        with pytest.raises(bpe_fast.InputError, match=rf"nested.parquet: {problem}.*; {holds}"):
            bpe_fast.count([path], column=column, workers=1, progress="none")
    assert main(["count", str(path), "-o", str(tmp_path / "t.npz"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "no column 'text'" in err and "meta.text" in err and err.count("\n") == 1


def test_a_field_of_a_struct_column_is_read_by_its_dotted_path(tmp_path):
    path = nested_parquet(tmp_path)
    assert bpe_fast.count([path], column="meta.text", workers=1) == \
        bpe_fast.count_from_iterator(["hello world", "more text"], workers=1)
    tok = bpe_fast.train_from_iterator([small_text()], 300, workers=1)
    bpe_fast.encode_files(tok, [path], tmp_path / "ids.txt", column="meta.text", progress="none")
    lines = (tmp_path / "ids.txt").read_text().split("\n")[:-1]
    assert [tok.decode([int(i) for i in line.split()]) for line in lines] == ["hello world", "", "more text", ""]


# -- 13. a big file given as a tokenizer: refused from its first bytes, not read whole -------------

def sparse_file(path: Path, head: bytes, size: int) -> Path:
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(size)                    # a hole: no disk, no time
    return path


@pytest.mark.parametrize("name,head,size,problem", [
    ("corpus.jsonl", b'{"text": "a document"}\n{"text": "another"}\n', 900 << 20,
     r", line 2: more JSON after the first"),
    ("corpus.json", b'{"documents": ["a document", ', 2 << 30, r": 2,147,483,648 bytes, far past any tokenizer file"),
    ("corpus.txt", b"plain text, no JSON at all\n" * 4000, 300 << 20, r", line 1: not valid JSON"),
])
def test_a_big_file_given_as_a_tokenizer_is_refused_without_reading_it(tmp_path, capsys, name, head, size, problem):
    import tracemalloc
    path = sparse_file(tmp_path / name, head, size)
    tracemalloc.start()
    start = time.monotonic()
    try:
        with pytest.raises(bpe_fast.TokenizerFileError, match=rf"{name}{problem}"):
            bpe_fast.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - start < 2 and peak < 20 << 20, (time.monotonic() - start, peak)
    assert main(["convert", str(path), str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert name in err and err.count("\n") == 1


# -- 14. an output inside an input folder: refused, or the next run reads it as text -------------------

def test_an_output_inside_an_input_folder_is_refused_before_reading(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    (corpus / "part").mkdir(parents=True)
    (corpus / "a.txt").write_text(small_text())
    for args in (["count", str(corpus), "-o", str(corpus / "counts.npz")],
                 ["train", str(corpus), "--vocab-size", "300", "-o", str(corpus / "part" / "tok.json")],
                 ["train", str(tmp_path), "--vocab-size", "300", "-o", str(corpus / "tok.json")]):
        assert main([*args, "-q"]) == 2
        err = capsys.readouterr().err
        assert "is inside the input folder" in err and "write it elsewhere" in err and err.count("\n") == 1
    tok = bpe_fast.train_from_iterator([small_text()], 300, workers=1)
    with pytest.raises(bpe_fast.ArgumentError, match="is inside the input folder"):
        bpe_fast.encode_files(tok, [corpus], corpus / "ids.txt", progress="none")
    assert sorted(p.name for p in corpus.rglob("*")) == ["a.txt", "part"]
    (tmp_path / "corpus2").mkdir()                 # a sibling whose name starts alike is elsewhere
    assert main(["count", str(corpus), "-o", str(tmp_path / "corpus2" / "counts.npz"), "-q"]) == 0


def test_a_child_forked_while_signals_raise_dies_of_sigterm_at_once():
    # terminate() sent the instant after the fork was lost: the child had the parent's handler
    # until its fork hook ran, and a signal caught then meant nothing once it had reset it.
    import multiprocessing as mp

    from bpe_fast.errors import terminating_raises
    ctx = mp.get_context("fork")
    with terminating_raises():
        for _ in range(30):
            child = ctx.Process(target=time.sleep, args=(30,), daemon=True)
            child.start()
            child.terminate()
            child.join(timeout=3)
            assert child.exitcode == -signal.SIGTERM, "the child outlived SIGTERM"
