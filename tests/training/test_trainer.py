"""The entry points of training (training/trainer.py): ``train`` (files), ``train_from_iterator``
(documents) and ``train_from_table`` (a word table) build their options once and share one path,
so that files, documents and a table counted before train the same tokenizer; their keywords are
checked by name, before any text is read. (``train_parity``: tests/training/variants/test_parity.py.)"""
from __future__ import annotations

import inspect
from typing import Any

import pytest

import bpe_fast
from bpe_fast.cli import main
from bpe_fast.training.pipeline import TrainReport

from ..conftest import need, small_text

SMALL = [small_text()] * 4


def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


# -- one training path ------------------------------------------------------------------------------

SPECIAL = "<|sep|>"

def test_files_and_iterators_train_the_same_tokenizer_through_one_path(tmp_path):
    docs = [small_text()[i::3] for i in range(3)]
    files = []
    for i, doc in enumerate(docs):
        files.append(tmp_path / f"d{i}.txt")
        files[-1].write_text(doc)
    base = bpe_fast.train_from_iterator(docs, 300, pattern="cl100k", progress="none")
    options: dict[str, Any] = dict(special_tokens=[SPECIAL], base=base, superword_at=340, min_frequency=2,
                                   progress="none")
    from_files = bpe_fast.train(files, [420, 400], workers=1, **options)
    from_docs = bpe_fast.train_from_iterator(docs, [420, 400], workers=1, **options)
    assert from_files == from_docs
    assert [t.vocab_size for t in from_docs] == [420, 400] and from_docs[0].pattern_name == "superword"


def test_a_table_counted_before_trains_what_its_files_train(tmp_path):
    """count, then train_from_table: the tokenizer of train on the same files, with the table's
    pattern, normalization and special tokens (train_from_table takes them from the table)."""
    corpus = write(tmp_path, "c.txt", (small_text() + "<|sep|>") .encode() * 3)
    settings: dict[str, Any] = dict(pattern="gpt2", special_tokens=["<|sep|>"], normalize="nfkc", progress="none")
    table = bpe_fast.count([corpus], workers=1, **settings)
    report = TrainReport()
    from_table = bpe_fast.train_from_table(table, 500, progress="none", report=report)
    assert from_table == bpe_fast.train([corpus], 500, workers=1, **settings)
    assert from_table.pattern_name == "gpt2" and from_table.normalize == "nfkc"
    assert from_table.special_tokens == {"<|sep|>": 499}
    assert report.merges == 500 - 257 and report.vocab_size == 500      # (report= is filled in)


def test_a_table_refuses_another_pattern_and_what_is_no_table():
    table = bpe_fast.count_from_iterator(SMALL, pattern="cl100k", workers=1, progress="none")
    with pytest.raises(bpe_fast.ArgumentError, match="pattern='gpt2': this word table was counted with cl100k"):
        bpe_fast.train_from_table(table, 300, pattern="gpt2")
    assert bpe_fast.train_from_table(table, 300, pattern="cl100k", progress="none").pattern_name == "cl100k"
    with pytest.raises(bpe_fast.ArgumentTypeError, match="train_from_table takes a WordTable .*not dict"):
        bpe_fast.train_from_table(table.as_dict(), 300)  # type: ignore[call-overload]


@pytest.mark.parametrize("call,name", [
    (lambda: bpe_fast.train_from_iterator(["ab"], 300, vocabsize=300),  # type: ignore[call-overload]
     "train_from_iterator() got an unexpected keyword argument 'vocabsize'"),
    (lambda: bpe_fast.train(["c.txt"], 300, batch_chars=10),  # type: ignore[call-overload]
     "train() got an unexpected keyword argument 'batch_chars'"),
    (lambda: bpe_fast.train_from_table(bpe_fast.WordTable.from_words([b"ab"]), 300, workers=2),  # type: ignore[call-overload]
     "train_from_table() got an unexpected keyword argument 'workers'"),
])
def test_a_keyword_an_entry_point_does_not_take_is_a_type_error_naming_it(call, name):
    """Each takes its own keywords (a table is counted: no workers=; files come whole: no batch_chars=)."""
    with pytest.raises(TypeError) as caught:
        call()
    assert str(caught.value) == name


def test_the_signatures_show_every_keyword_with_its_default_and_the_variants_last():
    """help() and inspect show the keywords the functions take, with the options' defaults, the
    variants' keywords after the others; train's docstring tells each variant's keywords."""
    for function in (bpe_fast.train, bpe_fast.train_from_iterator):
        params = inspect.signature(function).parameters
        assert params["min_frequency"].default == 0 and params["tie_break"].default == "bytes"
        assert params["superword"].default == "superbpe" and params["picky"].default is None
        kinds = [p.kind for p in params.values()]
        assert kinds[:2] == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * 2
        assert set(kinds[2:]) == {inspect.Parameter.KEYWORD_ONLY}
        names = list(params)
        assert max(names.index(n) for n in ("pattern", "base", "normalize")) < names.index("superword_at")
    table_params = inspect.signature(bpe_fast.train_from_table).parameters
    assert "picky" in table_params and "superword_at" not in table_params and "workers" not in table_params
    assert "superword_at=T" in (bpe_fast.train.__doc__ or "") and "picky=" in (bpe_fast.train.__doc__ or "")


# -- bad input (from tests/test_bad_input.py) -----------------------------------------------------

def test_empty_corpus(tmp_path):
    path = write(tmp_path, "empty.txt", b"")
    with pytest.raises(bpe_fast.EmptyCorpusError, match="empty.txt hold no text"):
        bpe_fast.train([path], 300)
    with pytest.raises(bpe_fast.EmptyCorpusError, match="empty"):
        bpe_fast.train_from_iterator(["", ""], 300)


def test_options_after_vocab_size_are_keyword_only(tmp_path):
    with pytest.raises(TypeError):
        bpe_fast.train_from_iterator(["abc"], 300, "gpt2")  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        bpe_fast.train([write(tmp_path, "a.txt", b"abc")], 300, "gpt2")  # type: ignore[call-overload]
    table = bpe_fast.WordTable.from_words([b"abc"])
    with pytest.raises(TypeError):
        bpe_fast.train_from_table(table, 300, "gpt2")  # type: ignore[call-overload]


# -- many vocabulary sizes from the command line --------------------------------------------------

def test_cli_trains_several_sizes_and_evaluates_them(tmp_path, capsys):
    need("matplotlib")                                   # --plot needs the [plot] extra
    corpus, held_out = tmp_path / "c.txt", tmp_path / "h.txt"
    corpus.write_text(small_text() * 3)
    held_out.write_text("A held-out text about lighthouses, ledgers and the sea.\n" * 20)
    assert main(["train", str(corpus), "--vocab-size", "300,400,600", "-o", str(tmp_path / "t-{vocab_size}.json"),
                 "--eval", str(held_out), "--plot", str(tmp_path / "sizes.png"), "-q", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    ratios = {}
    for size in (300, 400, 600):
        tok = bpe_fast.load(tmp_path / f"t-{size}.json")
        text = held_out.read_text()
        ratios[size] = len(text.encode()) / len(tok.encode(text))
        assert f"{size:>10,} {ratios[size]:>12.3f}" in out
    assert ratios[300] < ratios[400] < ratios[600]
    assert (tmp_path / "sizes.png").stat().st_size > 1000
    assert main(["train", str(corpus), "--vocab-size", "300,400", "-o", str(tmp_path / "t.json"), "-q"]) == 2
    assert "-o must hold {vocab_size}" in capsys.readouterr().err
