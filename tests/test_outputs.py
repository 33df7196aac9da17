"""Writing files safely (outputs.py): a file appears whole when its writer ends without an error,
or not at all, and the file it replaces stays as it was until then; the command line checks where
it will write before it reads anything (check_output)."""
from __future__ import annotations

import errno
import os

import pytest

from bpe_fast.errors import ArgumentError, OutputError
from bpe_fast.outputs import atomic_open, check_output


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
