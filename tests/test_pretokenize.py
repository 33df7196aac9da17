"""One Splitter says what a chunk is, for counting, encoding and encode_corpus alike; input
tasks read themselves; train and train_from_iterator share one path (TrainOptions)."""
from __future__ import annotations

import gzip
import json
import pickle
from collections import Counter
from typing import Any

import pytest
import regex
from hypothesis import given, settings, strategies as st

import bpe_fast
from bpe_fast import ArgumentError, InputError, inputs
from bpe_fast.counting import CountConfig, count_tasks
from bpe_fast.encode_corpus import pieces
from bpe_fast.patterns import CL100K, GPT2, O200K, SUPERWORD
from bpe_fast.pretokenize import NATIVE, REGEX, WHOLE, Splitter
from bpe_fast.trainer import TrainOptions

from .conftest import small_text

SPECIAL = "<|sep|>"


def plain_chunks(text: str, pattern: str | None, specials: list[str], lines: bool) -> list[str]:
    """The chunks spelled out with str methods and regex.findall, not through the Splitter."""
    pieces = [text]
    for token in specials:
        pieces = [part for piece in pieces for part in piece.split(token)]
    if lines:        # a line ends only at "\n" (not at \r or U+2028, as str.splitlines would)
        pieces = [line for piece in pieces for line in regex.findall(r"[^\n]*\n|[^\n]+", piece)]
    pieces = [p for p in pieces if p]
    if pattern is None:
        return pieces
    return [m.group() for piece in pieces for m in regex.finditer(pattern, piece)]


@pytest.mark.parametrize("spelling, name, engine", [
    ("gpt2", "gpt2", NATIVE), ("R50K_BASE", "gpt2", NATIVE), (GPT2, "gpt2", NATIVE),
    ("cl100k_base", "cl100k", NATIVE), (CL100K, "cl100k", NATIVE), ("O200K", "o200k", NATIVE),
    ("superword", "superword", NATIVE), (SUPERWORD, "superword", NATIVE), (r"\w+|\W+", "custom", REGEX),
    (None, "none", WHOLE), ("NONE", "none", WHOLE),
])
def test_a_pattern_is_named_once_whatever_its_spelling(spelling, name, engine):
    splitter = Splitter.of(spelling)
    assert (splitter.name, splitter.engine) == (name, engine)
    assert (splitter.scanner is not None) == (engine == NATIVE)
    assert (splitter.regex is None) == (engine == WHOLE)


text_with_specials = st.lists(st.sampled_from(["Hello", " world", "\n", "\r\n", "  ", SPECIAL, "123", "ünï", "'s",
                                               "\u2028", "\t", "!?", "/"]), max_size=30).map("".join)


@settings(max_examples=150, deadline=None)
@given(text=text_with_specials, pattern=st.sampled_from([GPT2, CL100K, O200K, SUPERWORD, r"\w+|\s+|[^\w\s]+", None]),
       lines=st.booleans())
def test_chunks_are_the_pattern_matches_between_special_tokens_and_lines(text, pattern, lines):
    splitter = Splitter.of(pattern, [SPECIAL], lines)
    assert list(splitter.chunks(text)) == plain_chunks(text, pattern, [SPECIAL], lines)


@settings(max_examples=60, deadline=None)
@given(docs=st.lists(text_with_specials, min_size=1, max_size=6),
       pattern=st.sampled_from([GPT2, CL100K, O200K, SUPERWORD, r"\w+|\s+|[^\w\s]+", None]), lines=st.booleans(),
       as_bytes=st.booleans())
def test_counting_counts_the_splitters_chunks_on_every_engine(docs, pattern, lines, as_bytes):
    splitter = Splitter.of(pattern, [SPECIAL], lines)
    given_docs = [d.encode() for d in docs] if as_bytes else docs
    table = count_tasks(inputs.docs_tasks(given_docs, 64), CountConfig(splitter), workers=1)
    expected = Counter(c.encode() for d in docs for c in splitter.chunks(d))
    assert table.as_dict() == dict(expected)


def test_a_splitter_pickles_without_its_native_parts_and_works_after():
    splitter = Splitter.of("o200k", [SPECIAL])
    assert splitter.scanner is not None                      # made, and cached
    copy = pickle.loads(pickle.dumps(splitter))
    assert copy == splitter and "scanner" not in vars(copy)
    text = "Hello WORLD's<|sep|>123456 x"
    assert list(copy.chunks(text)) == list(splitter.chunks(text)) == plain_chunks(text, O200K, [SPECIAL], False)


def test_the_tokenizer_and_encode_corpus_split_with_the_same_splitter(tmp_path):
    tok = bpe_fast.train_from_iterator([small_text()], 300, pattern="gpt2", progress="none",
                                       special_tokens=[SPECIAL])
    assert tok.splitter == Splitter.of("gpt2") and tok.pattern == GPT2 and tok.pattern_name == "gpt2"
    path = tmp_path / "doc.txt"
    path.write_text("one\ntwo<|sep|>\nthree")
    splitter = Splitter.of(GPT2, [SPECIAL], lines=True)
    assert [text for text, _, _ in pieces([path], splitter)] == ["one\n", "two<|sep|>\n", "three"]


# -- input tasks read themselves -------------------------------------------------------------------

def test_every_kind_of_input_yields_its_documents_as_pieces(tmp_path):
    text = tmp_path / "a.txt"
    text.write_text("first\nsecond\n")
    packed = tmp_path / "b.txt.gz"
    packed.write_bytes(gzip.compress(b"zipped text"))
    records = tmp_path / "c.jsonl"
    records.write_text("\n".join(json.dumps({"body": t}) for t in ["r1", "r2", None]) + "\n")
    found = inputs.sources([text, packed, records], field="body")
    assert [type(s).__name__ for s in found] == ["TextSource", "TextSource", "JsonlSource"]
    got = [(piece.data, piece.starts_document) for s in found for task in s.tasks(None, 1 << 20)
           for piece in task.pieces(keep_null=True)]
    assert got == [(b"first\nsecond\n", True), (b"zipped text", True), ("r1", True), ("r2", True), ("", True)]


def test_a_stream_task_reads_what_the_local_tasks_read(tmp_path):
    records = tmp_path / "c.jsonl.gz"
    records.write_bytes(gzip.compress("".join(json.dumps({"text": f"doc {i}"}) + "\n" for i in range(500)).encode()))
    (source,) = inputs.sources([records])
    (remote,) = source.cluster_tasks(None, 1000)
    local = [p for task in source.tasks(None, 1000) for p in task.pieces()]
    assert list(remote.pieces()) == local and len(local) == 500


def test_an_empty_text_file_is_one_empty_document(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    tasks = list(inputs.sources([empty])[0].tasks(None, 1 << 20))
    assert [p.data for t in tasks for p in t.pieces()] == [b""]


def test_a_read_that_fails_while_counting_names_the_input(tmp_path, monkeypatch):
    path = tmp_path / "disk.txt"
    path.write_text("some text\n" * 100)

    opened = []

    def failing_open(name, mode="r", *args, **kwargs):        # readable when checked, failing when read
        opened.append(name)
        if len(opened) > 1:
            raise OSError(5, "Input/output error")
        return open(name, mode, *args, **kwargs)

    monkeypatch.setattr(inputs, "open", failing_open, raising=False)
    with pytest.raises(InputError, match=r"disk.txt: read failed: Input/output error"):
        bpe_fast.count([path], workers=1, progress="none")


# -- one training path ------------------------------------------------------------------------------

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


def test_train_options_refuse_bad_settings_before_any_text_is_read():
    with pytest.raises(ArgumentError, match="tie_break must be one of"):
        bpe_fast.train(["no-such-file.txt"], 1000, tie_break="random")
    with pytest.raises(ArgumentError, match="superword_at=100 must be"):
        bpe_fast.train_from_iterator(["x"], 1000, superword_at=100)
    options = TrainOptions.checked([512, 1024], special_tokens=["<a>"])
    assert options.sizes == (512, 1024) and options.resolved_pattern == "cl100k"
    assert options.cut_out == ["<a>"]


def test_the_word_table_is_freed_before_the_kernel_counts_the_pairs(monkeypatch):
    """The pair lists and the merging need the most memory: the table and its arrays must be gone
    once the kernel has laid the words out, before it counts the pairs (train keeps no reference);
    the table's hashes, which training does not read, already before the layout."""
    import gc
    import weakref
    from types import SimpleNamespace

    from bpe_fast import _kernel, trainer
    tables: list = []
    alive_when_counting: list[bool] = []
    hashes_at_layout: list[bool] = []
    real_count = trainer.count_docs

    def counting(*args, **kwargs):
        table = real_count(*args, **kwargs)
        assert table.hashes is not None
        tables.append([weakref.ref(table), weakref.ref(table.symbols), weakref.ref(table.offsets),
                       weakref.ref(table.hashes)])
        return table

    class Watched(_kernel.Trainer):
        def __init__(self, *args, **kwargs):
            gc.collect()
            hashes_at_layout.append(tables[-1][3]() is not None)
            super().__init__(*args, **kwargs)

        def count_pairs(self):
            gc.collect()
            alive_when_counting.append(any(ref() is not None for ref in tables[-1]))
            super().count_pairs()

    monkeypatch.setattr(trainer, "count_docs", counting)
    monkeypatch.setattr(trainer, "_kernel", SimpleNamespace(Trainer=Watched))
    tok = bpe_fast.train_from_iterator([small_text()], 400, progress="none")
    assert alive_when_counting and not any(alive_when_counting)       # (learn asks again: counted once)
    assert hashes_at_layout == [False]
    monkeypatch.undo()
    assert tok == bpe_fast.train_from_iterator([small_text()], 400, progress="none")


def test_text_a_custom_pattern_skips_is_kept_not_dropped():
    r"""r"\w+" matches no space or punctuation: those become chunks of their own, in training and
    encoding alike, so decode(encode(text)) == text (tiktoken would drop them)."""
    text = "hello, world! hello again; world... 42?"
    assert list(Splitter.of(r"\w+").chunks(text)) == ["hello", ", ", "world", "! ", "hello", " ", "again", "; ",
                                                      "world", "... ", "42", "?"]
    tok = bpe_fast.train_from_iterator([text] * 20, 270, pattern=r"\w+", progress="none")
    for sample in [text, "  leading and trailing  ", "!!!", ""]:
        assert tok.decode(tok.encode(sample)) == sample
        assert tok.decode(tok.encode_batch([sample])[0]) == sample
    learned = {tok.token_bytes(i) for i in range(256, tok.n_base)}
    assert b", " in learned or b"! " in learned            # the skipped text was counted too
