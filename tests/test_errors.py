"""Every error and warning bpe_fast raises on purpose (errors.py): a warning points at the user's
line however deep it is raised; a missing extra is named with the command that installs it; a bad
vocabulary inside a file's block names the file; SIGTERM and SIGHUP raise Terminated so that
clean-ups run, then end the process as they would have; and what bpe_fast raises is a
BpeFastError that code written for tiktoken's errors still catches."""
from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
import warnings

import pytest

import bpe_fast
from bpe_fast import errors
from bpe_fast.errors import MissingExtraError, Terminated, TokenizerFileError, VocabularyError, naming_file, require


# -- warn: at the caller's line ------------------------------------------------------------------------

def deep_inside_bpe_fast():
    """A function whose module is bpe_fast's, as the pipeline's are, that warns two calls down."""
    namespace = {"__name__": "bpe_fast.pretend", "errors": errors}
    exec(textwrap.dedent("""
        def stage():
            errors.warn("something to know", errors.BpeFastWarning)
        def pipeline():
            stage()
    """), namespace)
    return namespace["pipeline"]


def test_a_warning_points_at_the_first_line_outside_bpe_fast():
    pipeline = deep_inside_bpe_fast()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        pipeline()
    [warning] = caught
    assert (warning.filename, warning.lineno) == (__file__, line)
    assert warning.category is errors.BpeFastWarning and str(warning.message) == "something to know"


def test_a_warning_of_training_points_at_the_users_call():
    with pytest.warns(bpe_fast.VocabSizeWarning) as caught:
        line = sys._getframe().f_lineno + 1
        bpe_fast.train_from_iterator(["abcd"], 1000, pattern=None, workers=1, progress="none")
    assert (caught[0].filename, caught[0].lineno) == (__file__, line)


# -- require: an optional package, or the extra that brings it ---------------------------------------

def test_a_missing_extra_is_named_with_the_command_that_installs_it():
    assert require("json", "none", "reading") is __import__("json")
    with pytest.raises(MissingExtraError, match=r"^--plot needs the no_such_package_here package: "
                                                r"pip install 'bpe_fast\[plot\]'$"):
        require("no_such_package_here.pyplot", "plot", "--plot")


def test_an_installed_package_that_cannot_be_imported_says_to_reinstall_it(tmp_path, monkeypatch):
    (tmp_path / "broken_extra").mkdir()
    (tmp_path / "broken_extra" / "__init__.py").write_text("import a_dependency_that_is_gone\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingExtraError, match=r"^Parquet input: broken_extra is installed but cannot be imported "
                                                r"\(No module named 'a_dependency_that_is_gone'\); reinstall it: "
                                                r"pip install --force-reinstall 'bpe_fast\[parquet\]'$"):
        require("broken_extra", "parquet", "Parquet input")
    assert isinstance(MissingExtraError("x"), ImportError)          # `except ImportError` still catches it


# -- naming_file: a bad vocabulary read from a file names the file ------------------------------------

def test_an_error_inside_a_files_block_names_the_file_once():
    with pytest.raises(TokenizerFileError, match=r"^tok.json: merge 3 is bad$"):
        with naming_file("tok.json"):
            raise VocabularyError("merge 3 is bad")
    with pytest.raises(TokenizerFileError, match=r"^tok.json: line 2: bad$"):
        with naming_file("tok.json"):
            raise VocabularyError("tok.json: line 2: bad")          # already named: not twice
    with pytest.raises(VocabularyError, match=r"^merge 3 is bad$") as err:
        with naming_file(None):                                      # made in memory: as it is
            raise VocabularyError("merge 3 is bad")
    assert not isinstance(err.value, TokenizerFileError)


# -- SIGTERM and SIGHUP: clean up, then end as the signal would have -----------------------------------

def run(script: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=60)


def test_sigterm_raises_terminated_the_clean_up_runs_then_the_process_ends_by_the_signal():
    done = run("""
        import os, signal
        from bpe_fast.errors import Terminated, terminating_raises
        try:
            with terminating_raises(redeliver=False):
                os.kill(os.getpid(), signal.SIGHUP)
        except Terminated as exc:
            print("caught", exc.signum == signal.SIGHUP, str(exc), flush=True)
        print("restored", signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, flush=True)
        try:
            with terminating_raises():
                try:
                    os.kill(os.getpid(), signal.SIGTERM)
                except Exception:
                    print("an except Exception took it", flush=True)
                finally:
                    print("cleaned up", flush=True)
        finally:
            print("never here: the signal came back with its default action", flush=True)
    """)
    assert done.stdout.splitlines() == ["caught True stopped by SIGHUP", "restored True", "cleaned up"]
    assert done.returncode == -15 and done.stderr == ""


def test_a_signal_the_caller_ignores_stays_ignored():
    done = run("""
        import os, signal
        from bpe_fast.errors import terminating_raises
        signal.signal(signal.SIGHUP, signal.SIG_IGN)          # as under nohup
        with terminating_raises():
            os.kill(os.getpid(), signal.SIGHUP)
        print("still running")
    """)
    assert done.returncode == 0 and done.stdout == "still running\n"


def test_terminated_is_not_an_exception_so_except_exception_lets_it_through():
    with pytest.raises(Terminated):
        try:
            raise Terminated(15)
        except Exception:
            pytest.fail("except Exception took a Terminated")
    assert str(Terminated(15)) == "stopped by SIGTERM"


# -- every error raised on purpose; a worker forked while signals raise ----------------------------

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and POSIX signals")


def test_every_error_bpe_fast_raises_on_purpose_is_a_bpe_fast_error():
    for call in (lambda: bpe_fast.train_from_iterator(["abc"], 10),
                 lambda: bpe_fast.train_from_iterator("abc", 300),
                 lambda: bpe_fast.train_from_iterator(["abc"], 300, workers=0),
                 lambda: bpe_fast.Tokenizer([[1.5, 3]]),
                 lambda: bpe_fast.Tokenizer([]).decode([300]),
                 lambda: bpe_fast.Tokenizer([], special_tokens=["<s>"]).encode("<s>"),
                 lambda: bpe_fast.load("no-such-encoding")):
        with pytest.raises(bpe_fast.BpeFastError):
            call()


@linux_only
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
