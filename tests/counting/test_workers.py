"""Counting the tasks (counting/workers.py: count_tasks, here or in worker processes) gives the
chunks the Splitter finds in the whole text, whatever the block size and the number of workers."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import CL100K, GPT2, O200K
from bpe_fast.counting.workers import CountConfig, count_tasks
from bpe_fast.counting.inputs import docs_tasks, file_tasks
from bpe_fast.pretokenize.patterns import SUPERWORD
from bpe_fast.pretokenize.splitter import Splitter, chunks_of

from ..conftest import SHARED, corpus_files, examples

NAMED = [GPT2, CL100K, O200K, SUPERWORD]
IDS = ["gpt2", "cl100k", "o200k", "superword"]
SPECIAL = "<|sep|>"
text_with_specials = st.lists(st.sampled_from(["Hello", " world", "\n", "\r\n", "  ", SPECIAL, "123", "ünï", "'s",
                                               "\u2028", "\t", "!?", "/"]), max_size=30).map("".join)


def whole_counts(text: str, pattern: str) -> Counter:
    return Counter(c.encode("utf-8") for c in chunks_of([text], pattern))


def test_crlf_files_are_cut_into_blocks(tmp_path):
    text = "".join(f"line {i}: some words here.\r\n" for i in range(2000))
    path = tmp_path / "crlf.txt"
    path.write_bytes(text.encode())
    for pattern in NAMED:
        config = CountConfig(Splitter.of(pattern))
        tasks = list(file_tasks(str(path), path.stat().st_size, config.splitter.cut, 4096))
        assert len(tasks) > 10
        assert Counter(count_tasks(tasks, config, workers=1).as_dict()) == whole_counts(text, pattern)


@given(parts=st.lists(st.sampled_from(["ab", "c!!", "x1", " ", "  ", "\n", "<|s|>", "é.", "!"]), max_size=40))
@settings(max_examples=examples(150), deadline=None)
def test_superword_blocks_keep_the_chunks_around_special_tokens(tmp_path_factory, parts):
    """Every block cut the superword splitter allows, where special tokens are cut out: no cut
    inside a token nor beside one (the text the rule reads would change)."""
    text = "".join(parts)
    path = tmp_path_factory.mktemp("sw") / "doc.txt"
    path.write_bytes(text.encode("utf-8"))
    config = CountConfig(Splitter.of(SUPERWORD, ["<|s|>"]))
    tasks = list(file_tasks(str(path), path.stat().st_size, config.splitter.cut, 1))
    got = Counter(count_tasks(tasks, config, workers=1).as_dict())
    assert got == Counter(c.encode() for c in chunks_of([text], SUPERWORD, ["<|s|>"]))


def test_superword_blocks_keep_invalid_bytes_replaced_alike(tmp_path):
    data = b"word!!\xe4\xb8 x1\xffab\xe4\xb8\xadc!!d" * 200
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    config = CountConfig(Splitter.of(SUPERWORD), errors="replace")
    tasks = list(file_tasks(str(path), len(data), config.splitter.cut, 16))
    assert len(tasks) > 100
    whole = data.decode("utf-8", "replace")
    assert Counter(count_tasks(tasks, config, workers=1).as_dict()) == whole_counts(whole, SUPERWORD)


@pytest.mark.parametrize("pattern", NAMED, ids=IDS)
@pytest.mark.parametrize("block_size", [1, 7, 64, 1 << 30])
def test_file_blocks_give_whole_file_counts(tmp_path, pattern, block_size):
    text = ("Hello world!\nIt's 2024.\n\n  indented\r\nλόγος 😀\n/path\n" * 50) + "end  \n"
    path = tmp_path / "doc.txt"
    path.write_bytes(text.encode("utf-8"))
    config = CountConfig(Splitter.of(pattern))
    tasks = list(file_tasks(str(path), path.stat().st_size, config.splitter.cut, block_size))
    assert len(tasks) > 1 or block_size == 1 << 30
    counts = count_tasks(tasks, config, workers=1)
    assert Counter(counts.as_dict()) == whole_counts(text, pattern)


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_workers_do_not_change_counts(workers):
    docs = [f"doc {i}: " + "lorem ipsum dolor " * (i % 7) + "\n" for i in range(3000)]
    config = CountConfig(Splitter.of(CL100K))
    got = count_tasks(docs_tasks(docs, 2000), config, workers=workers).as_dict()
    assert Counter(got) == Counter(c.encode() for c in chunks_of(docs, CL100K))


def test_special_tokens_are_cut_out_and_never_counted():
    config = CountConfig(Splitter.of(CL100K, ("<|endoftext|>",)))
    got = count_tasks(docs_tasks(["one<|endoftext|>two <|endoftext|>"], 100), config, workers=1).as_dict()
    assert not any(b"endoftext" in chunk for chunk in got)
    assert got == {b"one": 1, b"two": 1, b" ": 1}


pytestmark_data = pytest.mark.skipif(SHARED is None, reason="shared corpora not found (BPE_FAST_DATA or ../shared)")


@pytestmark_data
@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
def test_same_merges_for_workers_and_block_sizes(pattern):
    files = [p for p in corpus_files() if p.name in {"taylorswift.txt", "ja_wagahaiwa_nekodearu.txt", "ru.txt"}]
    runs = [bpe_fast.train(files, 1500, pattern=pattern, workers=w, block_size=b)
            for w, b in [(1, 1 << 30), (2, 4096), (4, 100_000), (2, 1)]]
    for tok in runs[1:]:
        assert np.array_equal(tok.merges, runs[0].merges)
    whole = [p.read_bytes().decode("utf-8") for p in files]  # no newline translation
    assert np.array_equal(bpe_fast.train_from_iterator(whole, 1500, pattern=pattern, workers=1).merges,
                          runs[0].merges)


@pytest.mark.slow      # 2.5-5.5 s of waiting for workers; test_faults kills one in 1.5 s in the fast suite
def test_a_killed_worker_is_an_error_not_a_hang():
    import multiprocessing as mp
    import time

    def docs():
        for i in range(400):
            if i == 50:
                for child in mp.active_children():     # SIGKILL, as the OOM killer would
                    child.kill()
                time.sleep(0.3)
            yield "hello world " * 10

    start = time.monotonic()
    with pytest.raises(bpe_fast.WorkerError, match=r"counting worker \(process \d+\) was killed by SIGKILL "
                                                   r"-- most likely by the system's out-of-memory killer"):
        count_tasks(docs_tasks(docs(), 100), CountConfig(Splitter.of(CL100K)), workers=2)
    assert time.monotonic() - start < 30


def test_a_worker_error_stops_the_reading_early():
    consumed = []

    def docs():
        yield b"\xff not utf-8"
        for i in range(5000):
            consumed.append(i)
            yield "hello world " * 10

    with pytest.raises(bpe_fast.InputError, match="document 0: invalid UTF-8 at byte offset 0"):
        count_tasks(docs_tasks(docs(), 100), CountConfig(Splitter.of(CL100K)), workers=2)
    assert len(consumed) < 1000       # it did not read on to the end


@pytest.mark.filterwarnings("ignore::bpe_fast.VocabSizeWarning")      # learns all there is: each chunk one token
@pytest.mark.parametrize("pattern", ["cl100k", r"\w+|[^\w]+", None])
def test_replaced_surrogates_are_counted_as_the_encoder_encodes_them(pattern):
    """errors="replace": U+FFFD for a lone surrogate, as the encoder and tiktoken make it, not "?"; so a
    tokenizer learns the bytes it will encode (a surrogate pair, as Python may hold it, is one character)."""
    docs = ["ab\ud800cd ab\udcffcd \ud83d\ude00 x?y"] * 20
    tok = bpe_fast.train_from_iterator(docs, 300, pattern=pattern, errors="replace", workers=1, progress="none")
    learned = b"".join(tok.token_bytes(i) for i in range(256, tok.n_base))
    assert "\ufffd".encode() in learned and b"\xf0\x9f\x98\x80" in learned
    counted = bpe_fast.count_from_iterator(docs[:1], pattern=pattern, errors="replace", workers=1, progress="none")
    encoded = tok.decode_bytes(tok.encode(docs[0]))
    replaced = sum(counted.word(i).count("\ufffd".encode()) * int(counted.counts[i]) for i in range(len(counted)))
    assert replaced == encoded.count("\ufffd".encode()) == 2
    assert len(tok.encode(docs[0])) < len(encoded) / 2       # the learned tokens are the ones it encodes with



@settings(max_examples=examples(60), deadline=None)
@given(docs=st.lists(text_with_specials, min_size=1, max_size=6),
       pattern=st.sampled_from([GPT2, CL100K, O200K, SUPERWORD, r"\w+|\s+|[^\w\s]+", None]), lines=st.booleans(),
       as_bytes=st.booleans())
def test_counting_counts_the_splitters_chunks_on_every_engine(docs, pattern, lines, as_bytes):
    splitter = Splitter.of(pattern, [SPECIAL], lines)
    given_docs = [d.encode() for d in docs] if as_bytes else docs
    table = count_tasks(docs_tasks(given_docs, 64), CountConfig(splitter), workers=1)
    expected = Counter(c.encode() for d in docs for c in splitter.chunks(d))
    assert table.as_dict() == dict(expected)
