"""Bad input gets a clear error naming the file or argument; the CLI never shows a traceback."""
from __future__ import annotations

import io
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import bpe_fast
from bpe_fast.cli import main


def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path




# -- CLI: one line on stderr, exit status 2 ------------------------------------------------

@pytest.mark.parametrize("args,message", [
    (["train", "MISSING.txt", "--vocab-size", "300", "-o", "t.json"], "MISSING.txt: no such file"),
    (["train", "DIR", "--vocab-size", "300", "-o", "t.json"], "the directory holds no files"),
    (["train", "BAD", "--vocab-size", "300", "-o", "t.json"], "invalid UTF-8 at byte offset 2"),
    (["train", "EMPTY", "--vocab-size", "300", "-o", "t.json"], "corpus is empty"),
    (["train", "GOOD", "--vocab-size", "100", "-o", "t.json"], "vocab_size=100 is too small"),
    (["train", "GOOD", "--vocab-size", "300", "--pattern", "([", "-o", "t.json"], "does not compile"),
    (["train", "GOOD", "--vocab-size", "300"], "-o/--output is required"),
    (["train", "--vocab-size", "300", "-o", "t.json"], "no input"),
])
def test_cli_errors_are_one_line(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "DIR").mkdir()
    write(tmp_path, "BAD", b"ok\xff\n")
    write(tmp_path, "EMPTY", b"")
    write(tmp_path, "GOOD", b"some text to learn from\n" * 20)
    assert main(args + ["--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_cli_train_writes_a_loadable_tokenizer_and_a_summary(tmp_path):
    lines = [f"It's test {i} of the CLI, {i * 7919 % 1000} times over.\n" for i in range(300)]
    corpus = write(tmp_path, "c.txt", "".join(lines).encode())
    out = tmp_path / "tok.json"
    proc = subprocess.run([sys.executable, "-m", "bpe_fast", "train", str(corpus), "--vocab-size", "300",
                           "--special", "<|endoftext|>", "--pattern", "gpt2", "-o", str(out)],
                          capture_output=True, text=True, check=True)
    assert proc.stderr == ""          # not a terminal: no progress bars
    for word in ("read", "chunks", "merges", "time", "saved"):
        assert word in proc.stdout
    tok = bpe_fast.Tokenizer.load(out)
    assert tok.vocab_size == 300 and tok.special_tokens == {"<|endoftext|>": 299}
    assert tok.pattern == bpe_fast.GPT2


def test_cli_reports_a_vocab_the_corpus_cannot_give(tmp_path, capsys):
    corpus = write(tmp_path, "c.txt", b"ab ab ab\n")
    assert main(["train", str(corpus), "--vocab-size", "5000", "-o", str(tmp_path / "t.json"), "-q"]) == 0
    captured = capsys.readouterr()
    assert "warning: stopped after" in captured.err and "vocab size 258" in captured.out


# -- patterns are resolved in one place --------------------------------------------------------


def test_cli_names_the_known_patterns(tmp_path, capsys):
    corpus = write(tmp_path, "c.txt", b"some text\n")
    assert main(["train", str(corpus), "--vocab-size", "300", "--pattern", "gpt4", "-o", str(tmp_path / "t.json"),
                 "-q"]) == 2
    err = capsys.readouterr().err
    assert "pattern 'gpt4' is no known pattern name" in err and "cl100k" in err and err.count("\n") == 1
    assert not (tmp_path / "t.json").exists()


def test_the_cli_shows_a_bug_as_a_traceback(tmp_path, monkeypatch):
    """Only the user's errors become one-line messages; a bug keeps its traceback."""
    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr("bpe_fast.cli.train.train", broken)
    corpus = write(tmp_path, "c.txt", b"some text\n")
    with pytest.raises(KeyError, match="a bug"):
        main(["train", str(corpus), "--vocab-size", "300", "-o", str(tmp_path / "t.json"), "-q"])


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


# -- issue 11: found by trying to break it ------------------------------------------------------


@pytest.mark.parametrize("ids", [[1.7], [104, 2.0], [np.float64(104.0)], ["104"], [None]])
def test_decode_refuses_ids_that_are_not_integers(ids):
    tok = bpe_fast.Tokenizer([])
    with pytest.raises(bpe_fast.EncodingError, match=r"token ids must be integers; position \d+ holds"):
        tok.decode(ids)


def test_decode_takes_integers_of_every_kind():
    tok = bpe_fast.Tokenizer([])
    text = b"hi!"
    for ids in (list(text), [np.int64(b) for b in text], np.frombuffer(text, np.uint8),
                np.array(list(text), np.uint64), [True, 104]):
        expected = bytes([1, 104]) if ids[0] is True else text
        assert tok.decode_bytes(ids) == expected
    with pytest.raises(bpe_fast.EncodingError, match="token id 18446744073709551615 .position 1"):
        tok.decode_bytes(np.array([104, 2**64 - 1], np.uint64))


def test_special_tokens_given_as_a_set_are_refused():
    with pytest.raises(bpe_fast.ArgumentTypeError, match="not a set"):
        bpe_fast.train_from_iterator(["abc"], 300, special_tokens={"<a>", "<b>"})  # type: ignore[call-overload]


# -- reliability round 3: found by a hostile probe -----------------------------------------------

HUGE = 10**20


def small_table() -> bpe_fast.WordTable:
    return bpe_fast.WordTable.from_words([b"ab", b"ab", b"abc"])


@pytest.mark.parametrize("call,message", [
    (lambda f: bpe_fast.train([f], HUGE), f"vocab_size={HUGE} is too large: token ids are 32-bit, so a "
                                          f"vocabulary holds at most 2,147,483,647 tokens"),
    (lambda f: bpe_fast.train_from_iterator(["ab ab"], 2**31), "vocab_size=2147483648 is too large"),
    (lambda f: bpe_fast.train_from_table(small_table(), HUGE), "at most 2,147,483,647 tokens"),
    (lambda f: bpe_fast.train([f], 300, max_token_length=HUGE), "max_token_length must be a positive number of "
                                                                "bytes (at most 2**63 - 1)"),
    (lambda f: bpe_fast.train([f, f], 300, workers=HUGE, block_size=4), "workers must be at most 4,096"),
    (lambda f: bpe_fast.train_from_iterator(["ab ab"], 300, workers=HUGE), "workers must be at most 4,096"),
    (lambda f: bpe_fast.Tokenizer([]).encode_batch(["a", "b"], workers=HUGE), "workers must be at most 4,096"),
    (lambda f: bpe_fast.count(f, block_size=HUGE), "block_size must be at most 1,073,741,824"),
    (lambda f: bpe_fast.count(f, memory_budget=HUGE**2), "memory_budget must be a number of bytes from 1 MiB"),
])
def test_huge_numbers_are_an_argument_error_naming_the_argument(tmp_path, call, message):
    corpus = write(tmp_path, "c.txt", b"ab ab abc\n" * 10)
    with pytest.raises(bpe_fast.ArgumentError) as caught:
        call(corpus)
    assert message in str(caught.value)


def run_cli(args: list[str], capsys) -> tuple[int | str | None, str]:
    """bpe-fast's exit status and standard error (argparse's errors exit rather than return)."""
    code: int | str | None
    try:
        code = main(args)
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize("args,message", [
    (["--vocab-size", "1e20"], "argument --vocab-size: 1e20 is too large: token ids are 32-bit, so a vocabulary "
                               "holds at most 2,147,483,647 tokens"),
    (["--vocab-size", "3000000000"], "argument --vocab-size: 3000000000 is too large"),
    (["--vocab-size", "infk"], "argument --vocab-size: 'infk' is not a vocabulary size"),
    (["--vocab-size", "300.5"], "argument --vocab-size: '300.5' is not a vocabulary size"),
    (["--memory-budget", "infG"], "argument --memory-budget: 'INFG' is not a size"),
    (["--memory-budget", "nan"], "argument --memory-budget: 'NAN' is not a size"),
    (["--memory-budget=-5G"], "argument --memory-budget: -5G is out of range: a size is from 1 byte to 8 EiB"),
    (["--memory-budget", "1e30G"], "argument --memory-budget: 1E30G is out of range"),
    (["--max-token-length", str(HUGE)], f"argument --max-token-length: {HUGE} is out of range: 1 to "
                                         f"9,223,372,036,854,775,807 bytes"),
    (["--workers", str(HUGE)], f"argument --workers: {HUGE} is out of range: 1 to 4,096 processes"),
    (["--block-size", str(HUGE)], f"argument --block-size: {HUGE} is out of range: 1 to 1,073,741,824 bytes"),
])
def test_cli_huge_numbers_are_one_line_naming_the_option(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.setattr("bpe_fast.cli.train.train", lambda *a, **k: pytest.fail("trained with a bad number"))
    corpus = write(tmp_path, "c.txt", b"ab ab abc\n")
    if "--vocab-size" not in args:
        args = ["--vocab-size", "300", *args]
    code, err = run_cli(["train", str(corpus), "-o", str(tmp_path / "t.json"), "-q", *args], capsys)
    assert code == 2 and err.startswith("bpe-fast train: error: ") and err.count("\n") == 1, err
    assert message in err


@pytest.mark.parametrize("args,message", [
    (["profile", "--merges", str(HUGE)], "--merges must be a positive number of merges (at most 2,147,483,391"),
    (["profile", "--chars", str(HUGE)], "--chars must be a positive number of characters (at most"),
    (["profile", "--budget", "nan"], "--budget must be >= 0 seconds"),
    (["encode", "-t", "gpt2", "--workers", str(HUGE)], "workers must be at most 4,096"),
])
def test_cli_huge_numbers_of_other_commands(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.setattr("bpe_fast.cli.tools.load", lambda *a: bpe_fast.Tokenizer([]))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"ab")))
    code, err = run_cli(args, capsys)
    assert code == 2 and message in err and err.count("\n") == 1, err


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


@pytest.mark.parametrize("option,message", [("--special", "special token '\\udcff' holds a lone surrogate"),
                                            ("--pattern", "pattern '\\udcff' holds a lone surrogate")])
def test_cli_a_special_token_or_pattern_that_is_no_utf8_is_one_line(tmp_path, capsys, option, message):
    """Bytes of argv that are no UTF-8 reach Python as lone surrogates ("\\udcff")."""
    corpus = write(tmp_path, "c.txt", b"ab ab abc\n")
    code, err = run_cli(["train", str(corpus), "--vocab-size", "300", option, "\udcff", "-o",
                         str(tmp_path / "t.json"), "-q"], capsys)
    assert code == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "t.json").exists()


# API misuse: every wrong type or value is a BpeFastError naming the argument (ArgumentTypeError is
# also a TypeError, ArgumentError a ValueError), never a bare TypeError, AttributeError or IndexError.

# Typed Any on purpose: the calls below pass wrong types, which is what they test.
API: Any = bpe_fast
TOK: Any = bpe_fast.Tokenizer([[97, 98]], special_tokens=["<s>"])
TABLE: Any = bpe_fast.WordTable.from_words([b"ab", b"ab", b"abc"])

MISUSE = {
    "train(None)": (lambda: API.train(None, 300), "inputs must be a file name or a list of them"),
    "train(5)": (lambda: API.train(5, 300), "inputs must be a file name or a list of them, got int"),
    "train(tie_break=[])": (lambda: API.train_from_iterator(["a"], 300, tie_break=[]), "tie_break must be one of"),
    "train(special_tokens=5)": (lambda: API.train_from_iterator(["a"], 300, special_tokens=5),
                                "special_tokens must be a list of strings, got int"),
    "train_from_iterator(None)": (lambda: API.train_from_iterator(None, 300), "docs must be an iterable"),
    "train_from_iterator(batch_chars=None)": (lambda: API.train_from_iterator(["a"], 300, batch_chars=None),
                                              "batch_chars must be an integer, got None"),
    "count(None)": (lambda: API.count(None), "inputs must be a file name or a list of them"),
    "count(field=5)": (lambda: API.count(["x.jsonl"], field=5), "field must be a str"),
    "count_from_iterator(5)": (lambda: API.count_from_iterator(5), "docs must be an iterable of documents"),
    "load(None)": (lambda: API.load(None), "name_or_path must be a file name (str or os.PathLike), got NoneType"),
    "load(b'gpt2')": (lambda: API.load(b"gpt2"), "name_or_path must be a file name"),
    "load(path=5)": (lambda: API.load("gpt2", 5), "path must be a file name"),
    "Tokenizer(special_tokens=5)": (lambda: API.Tokenizer([], special_tokens=5), "special_tokens must be a list"),
    "Tokenizer.load(5)": (lambda: API.Tokenizer.load(5), "path must be a file name"),   # not file descriptor 5
    "from_tiktoken(None)": (lambda: API.Tokenizer.from_tiktoken(None, pattern="gpt2"), "path must be"),
    "from_gpt2(None, None)": (lambda: API.Tokenizer.from_gpt2(None, None), "encoder_json must be a file name"),
    "from_huggingface(None)": (lambda: API.Tokenizer.from_huggingface(None), "path must be a file name"),
    "from_minbpe(None)": (lambda: API.Tokenizer.from_minbpe(None), "path must be a file name"),
    "from_ranks(None)": (lambda: API.Tokenizer.from_ranks(None), "ranks must be a mapping"),
    "encode_batch(None)": (lambda: TOK.encode_batch(None), "texts must be a list of str, got NoneType"),
    "encode(allowed_special=None)": (lambda: TOK.encode("a", allowed_special=None), "allowed_special takes \"all\""),
    "encode(disallowed_special=5)": (lambda: TOK.encode("a", disallowed_special=5), "disallowed_special takes"),
    "encode(disallowed_special={5})": (lambda: TOK.encode("a", disallowed_special={5}),
                                       "disallowed_special holds 5, which is no special token"),
    "decode(errors=5)": (lambda: TOK.decode([97], errors=5), "errors must be the name of an error handler"),
    "decode(errors='bogus')": (lambda: TOK.decode([97], errors="bogus"), "errors='bogus' is no error handler"),
    "token_bytes(None)": (lambda: TOK.token_bytes(None), "token must be an integer, got None"),
    "token_bytes(-1)": (lambda: TOK.token_bytes(-1), "token id -1 (position 0) is not in the vocabulary"),
    "save(None)": (lambda: TOK.save(None), "path must be a file name"),
    "truncated(None)": (lambda: TOK.truncated(None), "vocab_size must be an integer, got None"),
    "encode_files(None, ...)": (lambda: API.encode_files(None, ["x"]), "tokenizer must be a Tokenizer"),
    "encode_files(paths=None)": (lambda: API.encode_files(TOK, None), "paths must be a file name or a list"),
    "encode_files(output=5)": (lambda: API.encode_files(TOK, ["x"], 5), "output must be a file name"),
    "encode_files(errors='bogus')": (lambda: API.encode_files(TOK, ["x"], errors="bogus"),
                                     "errors must be one of"),
    "encode_files(progress='bogus')": (lambda: API.encode_files(TOK, ["x"], progress="bogus"), "progress must be"),
    "load_bin(None)": (lambda: API.load_bin(None), "path must be a file name"),
    "load_bin(missing)": (lambda: API.load_bin("no/such.bin"), "no/such.bin: no such file"),
    "WordTable.from_counts(None)": (lambda: API.WordTable.from_counts(None), "counts must be a mapping"),
    "WordTable.from_counts({'a': 1})": (lambda: API.WordTable.from_counts({"a": 1}), "chunks are bytes"),
    "WordTable.from_counts({b'a': -1})": (lambda: API.WordTable.from_counts({b"a": -1}),
                                          "counts[b'a'] must be at least 0, got -1"),
    "WordTable.from_counts({b'a': 1.5})": (lambda: API.WordTable.from_counts({b"a": 1.5}), "must be an integer"),
    "WordTable.from_counts({b'a': 10**20})": (lambda: API.WordTable.from_counts({b"a": 10**20}), "at most"),
    "WordTable.from_words(b'ab')": (lambda: API.WordTable.from_words(b"ab"), "words must be an iterable"),
    "WordTable.from_words(['a'])": (lambda: API.WordTable.from_words(["a"]), "chunks are bytes"),
    "WordTable.merge([None])": (lambda: API.WordTable.merge([None]), "WordTable.merge adds word tables"),
    "WordTable.merge_files([5])": (lambda: API.WordTable.merge_files([5]), "paths[0] must be a file name"),
    "WordTable.word(None)": (lambda: TABLE.word(None), "i must be an integer, got None"),
    "WordTable.word(10**20)": (lambda: TABLE.word(10**20), "i must be at most 1"),
    "WordTable.save(None)": (lambda: TABLE.save(None), "path must be a file name"),
    "WordTable.load(5)": (lambda: API.WordTable.load(5), "path must be a file name"),
    "save_minbpe(None)": (lambda: TOK.save_minbpe(None), "prefix must be a file name"),      # wrote None.model
    "save_tiktoken(None)": (lambda: TOK.save_tiktoken(None), "path must be a file name"),
    "train_from_table(report=5)": (lambda: API.train_from_table(TABLE, 300, report=5), "report must be"),
    "count(client=5)": (lambda: API.count(["x"], client=5), "client must be a dask.distributed Client"),
    "count_from_iterator(lines=array)": (lambda: API.count_from_iterator(["a"], lines=np.array([1, 2])),
                                         "lines must be True or False"),
}


@pytest.mark.parametrize("call,message", MISUSE.values(), ids=MISUSE.keys())
def test_api_misuse_is_a_bpe_fast_error_naming_the_argument(call, message):
    with pytest.raises(bpe_fast.BpeFastError) as caught:
        call()
    assert message in str(caught.value)


def test_numpy_integers_are_integers_everywhere():
    two = np.int64(2)
    docs = ["the cat sat on the mat"] * 50
    tok = bpe_fast.train_from_iterator(docs, np.int64(266), workers=two, batch_chars=np.int32(100),
                                       memory_budget=np.int64(1 << 30), progress="none")
    assert tok == bpe_fast.train_from_iterator(docs, 266, workers=1, progress="none")
    table = bpe_fast.count_from_iterator(docs, workers=two, batch_chars=100, progress="none")
    assert bpe_fast.train_from_table(table, np.uint16(266), max_token_length=np.int8(20), progress="none") == tok
    assert tok.truncated(np.int64(260)) == tok.truncated(260)
    assert tok.token_bytes(np.int64(97)) == b"a" and table.word(np.int64(-1)) == table.word(len(table) - 1)
    assert tok.encode_batch(["ab"] * 3, workers=two) == [tok.encode("ab")] * 3


@pytest.mark.parametrize("pattern", ["cl100k", r"\w+|\W+"])            # the native encoder and the regex path
def test_str_subclasses_are_text_on_every_encode_path(pattern):
    """tiktoken takes numpy.str_ (a str subclass); so does every encode method."""
    tok = bpe_fast.train_from_iterator(["hi there <s> hi"] * 20, 261, pattern=pattern, special_tokens=["<s>"],
                                       workers=1, progress="none")
    text, ids = np.str_("hi there <s>"), tok.encode("hi there <s>", allowed_special="all")
    assert tok.encode(text, allowed_special="all") == ids and tok.count_tokens(text, allowed_special="all") == len(ids)
    assert tok.encode_to_numpy(text, allowed_special="all").tolist() == ids
    assert tok.encode_ordinary(text) == tok.encode_ordinary(str(text))
    assert tok.encode_batch([text, "hi"], allowed_special="all") == [ids, tok.encode("hi")]
    assert tok.encode_ordinary_batch([text]) == [tok.encode_ordinary(str(text))]
    flat, offsets = tok.encode_batch_to_numpy([text], allowed_special="all")
    assert flat.tolist() == ids and tok.count_tokens_batch([text], allowed_special="all").tolist() == [len(ids)]


def test_disallowed_special_none_means_none_disallowed_as_in_tiktoken():
    assert TOK.encode("<s>", disallowed_special=None) == TOK.encode("<s>", disallowed_special=())
