"""Every error and warning bpe_fast raises on purpose, in one place.

Each exception is a ``BpeFastError``: something the user can fix (a file, an argument, a
vocabulary), and its message names the file or argument at fault and what is wrong. The CLI
prints these (and ``OSError``) as one line; any other exception is a bug and keeps its traceback.
Most are also ``ValueError`` (or ``TypeError``), so code written for tiktoken's errors still works.
This module imports nothing from bpe_fast: every other module may import it.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import types
import warnings
from collections.abc import Iterator


class BpeFastError(Exception):
    """Base class: a problem with the input that the user can fix.

    ``cli_message``, when set, is the same message in the command line's words (``--vocabs``
    where Python says ``path=``); ``bpe-fast`` prints it instead of ``str(error)``."""

    def __init__(self, *args, cli_message: str | None = None):
        super().__init__(*args)
        self.cli_message = cli_message


class ArgumentError(BpeFastError, ValueError):
    """A function argument or command-line option out of range: vocab_size, workers, tie_break..."""


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong type: vocab_size="4k", a single str where documents are expected."""


class PatternError(ArgumentError):
    """A pre-tokenization pattern that names no known pattern, does not compile, or matches ""."""


class InputError(BpeFastError, ValueError):
    """A file or document that cannot be read as text: missing, a directory, invalid UTF-8..."""


class EmptyCorpusError(InputError):
    """The input holds no text to learn from."""


class WorkerError(BpeFastError, RuntimeError):
    """Counting failed for want of resources: a worker process killed (most often for lack of
    memory), out of memory, or no room on disk for the counts it spills."""


class MemoryBudgetError(ArgumentError):
    """The memory budget (``memory_budget=``, ``--memory-budget``) cannot hold the merging of this
    word table: said before the merging starts, with what it needs (bpe_fast/budget.py)."""


class VocabularyError(BpeFastError, ValueError):
    """Merges, ids or special tokens that do not make a consistent vocabulary."""


class TokenizerFileError(VocabularyError):
    """A vocabulary or tokenizer file that is not valid: names the file (and line) at fault."""


class VocabularyNotFoundError(TokenizerFileError):
    """A named encoding's file (cl100k_base.tiktoken, ...) is in none of the places looked in."""


class PatternRequiredError(TokenizerFileError):
    """A .tiktoken file holds no pattern: without its sidecar (``x.tiktoken.json``) the pattern
    must be given (``pattern=``; CLI ``--pattern``), as the wrong one would give other ids."""


class OutputError(BpeFastError, OSError):
    """An output file that cannot be written (no such folder, no space left, ...); any file it
    would have replaced is left as it was."""


class EncodingError(BpeFastError, ValueError):
    """Text or ids a tokenizer cannot encode or decode: a disallowed special token, an unknown id."""


class UnknownTokenError(EncodingError, KeyError):
    """An id or a token the vocabulary does not have, where tiktoken raises KeyError
    (``decode_single_token_bytes``, ``encode_single_token``): both a KeyError and an EncodingError."""

    def __str__(self) -> str:          # the message itself, not KeyError's repr of it
        return Exception.__str__(self)


class MissingExtraError(BpeFastError, ImportError):
    """A feature needs an optional package; the message names the extra that installs it."""


class StaleBuildError(BpeFastError, ImportError):
    """In a source checkout, a compiled extension is older than its .pyx or a .pxd it cimports:
    it would run the old code. The message names the module and the command that rebuilds it."""


def warn(message: str, category: type[Warning]) -> None:
    """``warnings.warn``, pointing at the first caller outside bpe_fast: the user's line, however
    deep inside the pipeline the warning is raised."""
    frame: types.FrameType | None = sys._getframe(0)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "bpe_fast":
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def require(module: str, extra: str, purpose: str):
    """Import an optional dependency, or raise MissingExtraError naming the extra:
    ``require("matplotlib", "plot", "--plot")`` -> "--plot needs the matplotlib package: pip
    install 'bpe_fast[plot]'"."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        parts = module.split(".")
        if exc.name is not None and exc.name not in {".".join(parts[:k]) for k in range(1, len(parts) + 1)}:
            raise MissingExtraError(f"{purpose}: {module} is installed but cannot be imported ({exc}); "
                                    f"reinstall it: pip install --force-reinstall 'bpe_fast[{extra}]'") from exc
        raise MissingExtraError(f"{purpose} needs the {parts[0]} package: "
                                f"pip install 'bpe_fast[{extra}]'") from None


class Stopped(BaseException):
    """Raised inside a stage that runs beside another (progress.Deferred) at its next report,
    once its caller has stopped it; caught by that caller, never a user's to see. No
    ``Exception``, as Terminated: no ``except Exception`` on its way may take it for an error."""


class Terminated(BaseException):
    """The process was told to stop (SIGTERM, SIGHUP) while bpe_fast held temporary files or
    worker processes (see ``terminating_raises``). Not a BpeFastError: like KeyboardInterrupt it
    is no ``Exception``, so that ``except Exception`` does not swallow it. The CLI exits with
    128 + ``signum``."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def terminating_raises(redeliver: bool = True) -> Iterator[None]:
    """Within this block, SIGTERM and SIGHUP raise Terminated, so that ``finally`` blocks run
    (removing spill files, stopping workers) where the signal's default action would end the
    process at once and leave them. With ``redeliver``, the signal is sent again once they have
    run, with its default action: the process ends as it would have, only clean (status -signal).
    A signal the caller handles or ignores (nohup) is left alone, and so is every thread but
    the main one (only it may set handlers)."""
    taken = _default_terminating()
    raised: list[int] = []
    owner = os.getpid()

    def handler(signum, frame):
        if os.getpid() != owner:  # a child forked where _ForkGuard could not act: as by default
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        elif not raised:          # once: a second signal must not cut the clean-up short
            raised.append(signum)
            raise Terminated(signum)

    handler.raises_terminated = True      # type: ignore[attr-defined]   # for _ForkGuard
    for signum in taken:
        signal.signal(signum, handler)
    try:
        yield
    except Terminated:
        _restore(taken)
        if redeliver and raised:
            os.kill(os.getpid(), raised[0])      # the default action: the process ends here
        raise
    finally:
        _restore(taken)


class _ForkGuard:
    """While terminating_raises is on, a process forked from the main thread (a counting worker)
    must take SIGTERM and SIGHUP as by default from its first instant: stopped (or stuck, as a
    child of a threaded parent may be) before its own set-up, it must die of SIGTERM. So the
    forking thread holds them back across the fork (a signal then waits, it is not lost), and the
    child sets the default action before it lets them in."""
    blocked = False

    @classmethod
    def before(cls) -> None:
        cls.blocked = _raising_installed() and threading.current_thread() is threading.main_thread()
        if cls.blocked:
            signal.pthread_sigmask(signal.SIG_BLOCK, TERMINATING)

    @classmethod
    def in_parent(cls) -> None:
        if cls.blocked:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, TERMINATING)

    @classmethod
    def in_child(cls) -> None:
        if _raising_installed():
            for signum in TERMINATING:
                signal.signal(signum, signal.SIG_DFL)
        if cls.blocked:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, TERMINATING)


def _raising_installed() -> bool:
    return any(getattr(signal.getsignal(signum), "raises_terminated", False) for signum in TERMINATING)


if hasattr(os, "register_at_fork") and hasattr(signal, "pthread_sigmask"):
    os.register_at_fork(before=_ForkGuard.before, after_in_parent=_ForkGuard.in_parent,
                        after_in_child=_ForkGuard.in_child)


def _default_terminating() -> list[int]:
    if threading.current_thread() is not threading.main_thread():
        return []
    return [signum for signum in TERMINATING if signal.getsignal(signum) == signal.SIG_DFL]


def _restore(taken: list[int]) -> None:
    for signum in taken:
        signal.signal(signum, signal.SIG_DFL)


class BpeFastWarning(UserWarning):
    """Base class of bpe_fast's warnings."""


class VocabSizeWarning(BpeFastWarning):
    """The corpus could not give as many merges as vocab_size asked for."""


@contextlib.contextmanager
def naming_file(path: str | os.PathLike | None) -> Iterator[None]:
    """Within this block, a bad vocabulary, pattern or special-token list becomes a
    TokenizerFileError naming ``path``
    (no-op for None: errors about objects built in memory stay as they are)."""
    if path is None:
        yield
        return
    try:
        yield
    except (VocabularyError, ArgumentError) as exc:       # PatternError is an ArgumentError
        message = str(exc)
        raise TokenizerFileError(message if message.startswith(str(path)) else f"{path}: {message}") from None
