"""Bad input gets a clear error naming the file or argument; the CLI never shows a traceback.

What is left here after the tests moved to the files of their modules (issue 47): special tokens
given as a set and lone surrogates (pretokenize/splitter.py), a bad --scheduler
(counting/distributed.py)."""
from __future__ import annotations

import pytest

import bpe_fast
from bpe_fast.cli import main


def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


# -- issue 11: found by trying to break it ------------------------------------------------------

def test_special_tokens_given_as_a_set_are_refused():
    with pytest.raises(bpe_fast.ArgumentTypeError, match="not a set"):
        bpe_fast.train_from_iterator(["abc"], 300, special_tokens={"<a>", "<b>"})  # type: ignore[call-overload]


# -- reliability round 3: found by a hostile probe -----------------------------------------------

HUGE = 10**20


def run_cli(args: list[str], capsys) -> tuple[int | str | None, str]:
    """bpe-fast's exit status and standard error (argparse's errors exit rather than return)."""
    code: int | str | None
    try:
        code = main(args)
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize("address", ["tcp://[::1", "foo://x", ":::::", "tcp://host:notaport",
                                     pytest.param("tcp://no-such-host.invalid:8786", marks=pytest.mark.slow)])
def test_a_bad_scheduler_is_one_line_naming_it(tmp_path, capsys, monkeypatch, address):
    pytest.importorskip("dask.distributed", reason="--scheduler needs dask: pip install 'bpe_fast[dask]'")
    monkeypatch.setattr("bpe_fast.cli.train.train", lambda *a, **k: pytest.fail("trained without a scheduler"))
    corpus = write(tmp_path, "c.txt", b"ab ab abc\n")
    code, err = run_cli(["train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "t.json"), "-q",
                         "--scheduler", address], capsys)
    assert code == 2 and err.startswith(f"bpe-fast train: error: --scheduler {address}: ") and err.count("\n") == 1


@pytest.mark.parametrize("make", [
    lambda: bpe_fast.train_from_iterator(["ab ab"], 300, special_tokens=["<s>", "\ud800"]),
    lambda: bpe_fast.count_from_iterator(["ab ab"], special_tokens=["x\udcff"]),
    lambda: bpe_fast.Tokenizer([], special_tokens=["\ud800"]),
    lambda: bpe_fast.Tokenizer([], special_tokens={"\ud800": 256}),
    lambda: bpe_fast.train_from_iterator(["ab ab"], 300, pattern="\\w+|\ud800"),
])
def test_a_special_token_with_a_lone_surrogate_is_refused_when_given(make):
    """Not a UnicodeEncodeError later, when counting, encoding or saving (nor a pattern with one, which
    trained and then could not be saved)."""
    with pytest.raises((bpe_fast.ArgumentError, bpe_fast.VocabularyError), match="holds a lone surrogate"):
        make()


