"""Documents from an iterator travel to the counting workers packed, as one UTF-8 buffer and the
offsets of each document: packing, batching and counting them must lose nothing. Each piece is
held to a plain Python version of what it replaces (str.encode, the one-document-at-a-time
batching loop, the reference splitter)."""
from __future__ import annotations

import os
import signal

from collections import Counter
from itertools import accumulate
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import CL100K, GPT2, O200K
from bpe_fast.counting import workers as counting
from bpe_fast.counting._pack import document_ends, pack_documents
from bpe_fast.counting._table import ChunkTable
from bpe_fast.counting.inputs import docs_tasks
from bpe_fast.pretokenize.splitter import Splitter
from ..conftest import examples

# Every UTF-8 width, line ends, spaces the patterns treat apart, and text outside the BMP.
ALPHABET = "ab 1'\n\r\t!/\u00a0é😀中\u3000.x\u0300\U0010fffd"
texts = st.text(alphabet=ALPHABET, max_size=60)
any_text = st.text(max_size=40)                  # all of Unicode but surrogates
documents = st.lists(st.one_of(any_text, any_text.map(str.encode)), max_size=30)


def packed(docs: list) -> tuple[bytes, np.ndarray, bool]:
    result = pack_documents(docs)
    assert result is not None
    return result


def scanner_of(splitter: Splitter):
    assert splitter.scanner is not None
    return splitter.scanner


def table_dict(table: ChunkTable) -> dict[bytes, int]:
    data, offsets, counts, _ = table.sorted_arrays()
    return {data[offsets[i]:offsets[i + 1]].tobytes(): int(counts[i]) for i in range(len(counts))}


@given(docs=documents)
@settings(max_examples=examples(300), deadline=None)
def test_packing_equals_encoding_each_document(docs):
    data, offsets, all_str = packed(docs)
    encoded = [d.encode() if isinstance(d, str) else d for d in docs]
    assert data == b"".join(encoded)
    assert offsets.tolist() == [0, *np.cumsum([len(e) for e in encoded], dtype=np.int64).tolist()]
    assert all_str == all(isinstance(d, str) for d in docs)


@given(docs=st.lists(any_text, max_size=30), kept=st.lists(st.booleans(), min_size=30, max_size=30))
@settings(max_examples=examples(200), deadline=None)
def test_strs_whose_utf8_cpython_keeps_pack_as_their_encoding(docs, kept):
    """Packing reads a str's kept UTF-8 when CPython has it (PyUnicode_AsUTF8 leaves it), the
    code points otherwise: the same bytes either way, in any mix."""
    import ctypes
    as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8AndSize
    as_utf8.restype, as_utf8.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_void_p]
    docs = ["".join([d]) + "\u00e9" for d in docs]          # new strs, none ASCII: no UTF-8 kept yet
    for doc, keep in zip(docs, kept):
        if keep:
            as_utf8(doc, None)
    data, offsets, _ = packed(docs)
    assert data == b"".join(d.encode() for d in docs)
    assert offsets.tolist() == [0, *np.cumsum([len(d.encode()) for d in docs], dtype=np.int64).tolist()]


@given(docs=documents)
@settings(max_examples=examples(100), deadline=None)
def test_document_ends_are_the_running_sum_of_lengths(docs):
    ends = document_ends(docs)
    assert ends is not None and ends.tolist() == list(accumulate(map(len, docs)))


def test_document_ends_leave_batches_records_and_none_to_python():
    for odd in (None, ["a list"], {"text": "a record"}, 5):
        assert document_ends(["plain", odd]) is None


def test_a_surrogate_leaves_a_batch_unpacked_and_other_types_are_refused():
    assert pack_documents(["fine", "a\ud800b"]) is None            # a lone surrogate has no UTF-8
    assert pack_documents(["\ud83d\ude00"]) is None                # nor a pair, as Python may hold one
    assert packed([])[0] == b""
    wrong: Any = ["a", 5]
    with pytest.raises(TypeError, match="document 1 of the batch is int"):
        pack_documents(wrong)


@pytest.mark.parametrize("pattern", [GPT2, CL100K, O200K], ids=["gpt2", "cl100k", "o200k"])
@pytest.mark.parametrize("lines", [False, True])
@given(docs=st.lists(texts, max_size=12))
@settings(max_examples=examples(60), deadline=None)
def test_a_packed_batch_counts_each_document_on_its_own(pattern, lines, docs):
    """One native call over the buffer counts what the reference splitter finds in each document:
    no chunk runs from one document into the next (two documents "a" and "b" are not "ab")."""
    splitter = Splitter.of(pattern, lines=lines)
    data, offsets, _ = packed(docs)
    table = ChunkTable()
    table.add_documents(scanner_of(splitter), data, offsets, lines)
    assert table_dict(table) == Counter(c.encode() for d in docs for c in splitter.chunks(d))


def test_add_documents_refuses_offsets_outside_the_buffer():
    scanner = scanner_of(Splitter.of(CL100K))
    with pytest.raises(ValueError, match="outside the 3 bytes"):
        ChunkTable().add_documents(scanner, b"abc", np.array([0, 4], np.int64))
    with pytest.raises(ValueError, match="must not decrease"):
        ChunkTable().add_documents(scanner, b"abc", np.array([0, 2, 1, 3], np.int64))


def batches_one_at_a_time(docs, batch_chars):
    """The plain batching loop the packed one replaced: (first index, documents, size) per batch;
    a batch ends with the document that takes it to batch_chars or past."""
    out, batch, size, index = [], [], 0, 0
    for item in docs:
        items = item["text"] if isinstance(item, dict) else item
        for doc in items if isinstance(items, list) else [items]:
            if doc is None:
                continue
            batch.append(doc)
            size += len(doc)
            if size >= batch_chars:
                out.append((index, batch, size))
                index, batch, size = index + len(batch), [], 0
    return out + ([(index, batch, size)] if batch else [])


# An item: a document, a batch (a list; None in it is no document) or a record (None there neither).
item = st.one_of(texts, texts.map(str.encode), st.lists(st.one_of(texts, st.none()), max_size=5),
                 st.fixed_dictionaries({"text": st.one_of(texts, st.none(), st.lists(texts, max_size=4))}))


@given(items=st.lists(item, max_size=80), batch_chars=st.integers(1, 200))
@settings(max_examples=examples(300), deadline=None)
def test_batches_end_where_the_one_at_a_time_loop_ends_them(items, batch_chars):
    got = [(t.first_index, list(t.documents()), t.size, t.count) for t in docs_tasks(items, batch_chars)]
    want = [(i, [d.encode() if isinstance(d, str) else d for d in batch], size, len(batch))
            for i, batch, size in batches_one_at_a_time(items, batch_chars)]
    assert got == want


def test_big_documents_are_not_read_far_ahead():
    taken = []

    def docs():
        for i in range(100):
            taken.append(i)
            yield "x" * 10_000
    tasks = docs_tasks(docs(), 1000)
    next(tasks)
    assert len(taken) <= 2        # items are taken a few at a time, judged by their size so far


@pytest.mark.parametrize("workers", [1, 2])
def test_a_character_split_between_bytes_documents_is_invalid_in_both(workers):
    """b"\\xc3" + b"\\xa9" is "é" once joined, but each document alone is invalid UTF-8."""
    docs = [b"caf\xc3", b"\xa9 ok", "more text"] * 3
    with pytest.raises(bpe_fast.InputError, match=r"document 0: invalid UTF-8 at byte offset 3"):
        bpe_fast.count_from_iterator(docs, workers=workers, batch_chars=10, progress="none")
    table = bpe_fast.count_from_iterator(docs, workers=workers, errors="replace", batch_chars=10, progress="none")
    assert table.as_dict() == {b"caf": 3, "\ufffd".encode(): 6, b" ok": 3, b"more": 3, b" text": 3}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_lone_surrogate_is_named_by_its_document_or_replaced(workers):
    docs = ["fine text"] * 5 + ["bad \udc80 text"] + ["fine text"] * 5
    with pytest.raises(bpe_fast.InputError, match=r"document 5: lone surrogate '\\udc80' at character 4"):
        bpe_fast.count_from_iterator(docs, workers=workers, batch_chars=30, progress="none")
    table = bpe_fast.count_from_iterator(docs, workers=workers, errors="replace", batch_chars=30, progress="none")
    assert table.as_dict()[" \ufffd".encode()] == 1 and table.as_dict()[b"fine"] == 10


@pytest.mark.parametrize("pattern", [GPT2, r"\w+|[^\w]+", None], ids=["native", "regex", "none"])
@pytest.mark.parametrize("specials", [(), ("<|endoftext|>",)])
@pytest.mark.parametrize("lines", [False, True])
def test_every_route_counts_packed_documents_as_the_reference_splits_them(pattern, specials, lines):
    docs: list[Any] = [f"doc {i}: lorem ipsum<|endoftext|>dolor\nsit é中 amet\n\n" * (i % 4) for i in range(300)]
    docs += [d.encode() for d in docs[:50]] + [["in a batch", None], {"text": "in a record"}, {"text": None}]
    splitter = Splitter.of(pattern, specials, lines)
    flat = [d.decode() if isinstance(d, bytes) else d for d in docs[:350]] + ["in a batch", "in a record"]
    want = Counter(c.encode() for d in flat for c in splitter.chunks(d))
    for workers, batch_chars in ((1, 1 << 20), (2, 500)):
        table = bpe_fast.count_from_iterator(docs, pattern=pattern, special_tokens=specials, lines=lines,
                                             workers=workers, batch_chars=batch_chars, progress="none")
        assert Counter(table.as_dict()) == want


# -- batches through shared memory (counting._Arena), with forked workers ------------------------

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="the shared slots are for forked workers")


@pytest.fixture
def within_a_minute():
    """A slot never given back would leave the parent waiting for one: fail instead of hanging."""
    def timeout(signum, frame):
        raise TimeoutError("the count waited over a minute (a shared slot never freed?)")
    old = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def recording_store(monkeypatch) -> list[int]:
    """The slot of every batch the parent puts in shared memory."""
    stored: list[int] = []
    store = counting._Arena.store

    def counted_store(self, seq, task):
        item = store(self, seq, task)
        stored.append(item.slot)
        return item

    monkeypatch.setattr(counting._Arena, "store", counted_store)
    return stored


@needs_fork
def test_batches_go_through_shared_slots_reused_and_big_ones_through_the_queue(monkeypatch, within_a_minute):
    """Forked workers read packed batches from slots of shared memory: more batches than slots
    means slots are used again once their worker is done, and a batch too big for a slot travels
    through the queue. Both count as the reference splits the text."""
    stored = recording_store(monkeypatch)
    monkeypatch.setattr(counting._Arena, "SLOT_BYTES", 4096)
    docs = [f"doc {i}: lorem ipsum é中 amet " * (1 if i % 100 else 400) for i in range(1000)]
    table = bpe_fast.count_from_iterator(iter(docs), pattern=GPT2, workers=2, batch_chars=300, progress="none")
    splitter = Splitter.of(GPT2)
    assert Counter(table.as_dict()) == Counter(c.encode() for d in docs for c in splitter.chunks(d))
    batches = len(list(docs_tasks(docs, 300)))
    assert 0 < len(stored) < batches                      # the big batches went through the queue
    assert len(stored) > len(set(stored)) and len(set(stored)) <= 2 * 2 + 1   # slots used again


@needs_fork
@pytest.mark.parametrize("route", ["normalize", "boundless"])
def test_the_routes_that_copy_a_slot_count_as_with_one_worker(monkeypatch, within_a_minute, route):
    """Normalization splits a batch document by document (the worker copies the slot's bytes);
    BoundlessBPE's runs scan it whole (a view of the slot). Two workers fed through the slots
    learn what one process learns."""
    stored = recording_store(monkeypatch)
    docs = [f"Cafe\u0301 {i} the cat sat. Ｆｕｌｌ ｗｉｄｔｈ é中 " * (1 + i % 5) for i in range(600)]
    options: dict[str, Any] = ({"normalize": "nfkc"} if route == "normalize"
                               else {"superword": "boundless", "superword_at": 300})
    one, two = (bpe_fast.train_from_iterator(docs, 304, pattern=GPT2, workers=w, batch_chars=2000,
                                             progress="none", **options) for w in (1, 2))
    assert stored and one.merges.tolist() == two.merges.tolist()
    assert one.encode_ordinary(docs[7]) == two.encode_ordinary(docs[7])


def test_files_and_streams_map_no_shared_slots(monkeypatch, tmp_path):
    """Only batches of iterator documents use the slots: a count of files makes none."""
    made: list[int] = []
    monkeypatch.setattr(counting._Arena, "made", classmethod(lambda cls, slots: made.append(slots)))
    path = tmp_path / "text.txt"
    path.write_text("the cat sat on the mat\n" * 20_000)
    table = bpe_fast.count([path], pattern=GPT2, workers=2, block_size=1 << 14, progress="none")
    assert table.total_chunks == 7 * 20_000 and made == []


@needs_fork
def test_a_system_that_will_not_map_the_slots_counts_through_the_queue(monkeypatch):
    def refused(*args, **kwargs):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(counting, "mmap", SimpleNamespace(mmap=refused))      # (only the slots')
    assert counting._Arena.made(5) is None
    docs = [f"doc {i}: lorem ipsum" for i in range(2000)]
    table = bpe_fast.count_from_iterator(iter(docs), pattern=GPT2, workers=2, batch_chars=500, progress="none")
    assert table.total_chunks == sum(1 for d in docs for _ in Splitter.of(GPT2).chunks(d))
