"""Writing files safely (outputs.py): a file appears whole when its writer ends without an error,
or not at all, and the file it replaces stays as it was until then; the command line checks where
it will write before it reads anything (check_output)."""
from __future__ import annotations

import contextlib
import errno
import io
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import bpe_fast
from bpe_fast.cli import main
from bpe_fast.errors import ArgumentError, OutputError
from bpe_fast.outputs import atomic_open, check_output

from .conftest import SMALL_CORPUS, small_text


# -- atomic_open: whole or not at all -----------------------------------------------------------------

def test_the_file_appears_only_when_its_writer_ends(tmp_path):
    path = tmp_path / "new.txt"
    with atomic_open(path) as fh:
        fh.write("first half, ")
        assert not path.exists()                     # meanwhile: nothing at the name
        fh.write("second half")
    assert path.read_text() == "first half, second half"
    assert os.listdir(tmp_path) == ["new.txt"]       # no temporary left beside it


def test_a_writer_that_fails_leaves_the_old_file_whole_and_no_temporary(tmp_path):
    path = tmp_path / "kept.bin"
    path.write_bytes(b"the old contents")
    with pytest.raises(RuntimeError, match="the writer broke"):
        with atomic_open(path, "wb") as fh:
            fh.write(b"half of the new")
            raise RuntimeError("the writer broke")
    assert path.read_bytes() == b"the old contents" and os.listdir(tmp_path) == ["kept.bin"]


def test_an_os_error_while_writing_is_an_output_error_saying_the_old_file_is_unchanged(tmp_path):
    path = tmp_path / "kept.json"
    path.write_text("{}")
    with pytest.raises(OutputError, match=r"kept.json: cannot write: No space left on device \(the file that "
                                          r"was there is unchanged\)$"):
        with atomic_open(path) as fh:
            fh.write("[1, 2")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert path.read_text() == "{}" and os.listdir(tmp_path) == ["kept.json"]
    with pytest.raises(OutputError, match=r"new.json: cannot write: No space left on device$"):
        with atomic_open(tmp_path / "new.json") as fh:               # nothing was there: nothing to keep
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_folder_that_is_not_there_is_an_output_error_naming_the_file(tmp_path):
    with pytest.raises(OutputError, match=r"no/t.json: cannot write here: No such file or directory"):
        with atomic_open(tmp_path / "no" / "t.json") as fh:
            fh.write("x")
    assert isinstance(OutputError("x"), OSError)


# -- check_output: refused before any work ------------------------------------------------------------

def test_an_output_is_refused_naming_the_option_and_why(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("text")
    (tmp_path / "folder").mkdir()
    for path, inputs, problem in [(tmp_path / "folder", [], "is a folder; give a file name"),
                                  (tmp_path / "no" / "t.json", [], f"the folder {tmp_path / 'no'} does not exist"),
                                  (corpus, [corpus], "is also an input file; writing there would destroy it"),
                                  (tmp_path / "folder" / "t.json", [tmp_path], "is inside the input folder")]:
        with pytest.raises(ArgumentError, match=f"^--plot {path}: {problem}"):
            check_output(path, inputs, "--plot")
    assert check_output(tmp_path / "t.json", [corpus, "-"]) == tmp_path / "t.json"
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "folder"]       # its trial temporary file is gone


# -- faults a user meets: -o checked first, written whole or not at all --------------------------

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and POSIX signals")


@linux_only
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


@linux_only
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


@linux_only
def test_an_interrupted_save_leaves_no_partial_file(tmp_path, monkeypatch):
    tok = bpe_fast.train_from_iterator([small_text()], 400, workers=1)
    tok.save(tmp_path / "t.json")
    before = (tmp_path / "t.json").read_bytes()
    other = bpe_fast.train_from_iterator([small_text()], 500, workers=1)
    real_dump = __import__("json").dump

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("json.dump", interrupted)
    for save in (lambda: other.save(tmp_path / "t.json", format="huggingface"),):
        with pytest.raises(KeyboardInterrupt):
            save()
    monkeypatch.setattr("json.dump", real_dump)
    assert (tmp_path / "t.json").read_bytes() == before and len(list(tmp_path.iterdir())) == 1


@linux_only
def test_a_long_valid_output_name_is_written(tmp_path, capsys):
    """A 250-byte name is valid, but ".NAME.xxxxxxxx.tmp" was not: writing failed after training."""
    out = tmp_path / ("t" * 245 + ".json")
    assert main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "--workers", "1", "-o", str(out), "-q"]) == 0
    assert bpe_fast.load(out).vocab_size == 300
    assert [p.name for p in tmp_path.iterdir()] == [out.name]          # no temporary left


@linux_only
def test_a_name_too_long_for_the_file_system_fails_before_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("bpe_fast.cli.train.train", lambda *a, **k: pytest.fail("trained before checking -o"))
    out = tmp_path / ("t" * 300 + ".json")
    assert main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "-o", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "the name is 305 bytes long; this file system takes at most 255" in err and err.count("\n") == 1
    with pytest.raises(OutputError, match="File name too long"):           # the API: an OutputError too
        bpe_fast.Tokenizer([]).save(out)


@linux_only
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


@linux_only
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


@linux_only
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


@linux_only
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


# -- one place checks every output against every input (issue 49) --------------------------------

@pytest.mark.parametrize("command", [
    ["count", "{input}", "-o", "{input}"],
    ["encode", "-t", "{tok}", "{input}", "-o", "{input}"],
    ["train", "{input}", "--vocab-size", "300", "--eval", "{input}", "--plot", "{input}"],
    ["eval", "-t", "{tok}", "{input}", "--plot", "{input}"],
    ["eval", "-t", "{tok}", "{input}", "--plot", "{tok}"],       # the tokenizer's file is an input too
])
def test_no_command_writes_over_an_input(tmp_path, capsys, command):
    from bpe_fast.cli import main
    text = tmp_path / "input.txt"
    text.write_text("hello hello hello\n", encoding="utf-8")
    tok = tmp_path / "tok.json"
    bpe_fast.train_from_iterator(["hello hello hello"], 260, pattern="gpt2", workers=1, progress="none").save(tok)
    before = {path: path.read_bytes() for path in (text, tok)}
    args = [word.format(input=text, tok=tok) for word in command]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is also an input file" in err
    assert {path: path.read_bytes() for path in (text, tok)} == before


def test_check_files_reads_the_roles_a_command_declares(tmp_path):
    import argparse
    from bpe_fast.outputs import Files, check_files
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.txt").write_text("a")
    roles = Files(reads=("inputs",), writes=(("output", "-o"), ("plot", "--plot")))
    fine = argparse.Namespace(inputs=[str(inputs)], output="-", plot=None, file_roles=roles)
    check_files(fine)                                           # standard output, no chart: nothing to check
    inside = argparse.Namespace(inputs=[str(inputs)], output=str(inputs / "out.txt"), plot=None, file_roles=roles)
    with pytest.raises(ArgumentError, match=r"-o .*out\.txt: is inside the input folder"):
        check_files(inside)
    check_files(argparse.Namespace(inputs=[str(inputs)]))      # a command that declares nothing
