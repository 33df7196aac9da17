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
from pathlib import Path

import pytest

import bpe_fast
import bpe_fast.cli.count
import bpe_fast.cli.train
import bpe_fast.counting.workers
from bpe_fast.cli import main
from bpe_fast.errors import OutputError

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


# -- 2. workers: killed, too many, failing in two places --------------------------------------


# -- 3. inputs that change, streams --------------------------------------------------------------


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




# -- 8. every worker failing: the earliest task's error, at once ---------------------------------


# -- 9. a worker out of memory or disk: one line naming the cause and the setting that helps -------


# -- 10. word tables: counts past int64 refused, not wrapped ----------------------------------------




# -- 11. JSON nested past what the parser can take: one line naming the file and line -------------

DEEP = 100_000


def test_a_deeply_nested_tokenizer_file_is_a_tokenizer_file_error_naming_the_line(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text('{\n  "model":\n    ' + "[" * DEEP + "]" * DEEP + "\n}\n")
    with pytest.raises(bpe_fast.TokenizerFileError, match="deep.json, line 3: JSON nested more than 100 levels"):
        bpe_fast.load(path)
    assert main(["convert", str(path), str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert "deep.json, line 3" in err and err.count("\n") == 1


# -- 12. Parquet: struct and list columns, fields of structs by dotted paths ------------------------


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
