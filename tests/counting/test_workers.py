"""Counting gives the same chunks whatever the block size and the number of workers."""
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
from bpe_fast.pretokenize.splitter import Splitter, chunks_of, find_cut, is_safe_cut

from ..conftest import SHARED, corpus_files, examples

NAMED = [GPT2, CL100K, O200K, SUPERWORD]
IDS = ["gpt2", "cl100k", "o200k", "superword"]
LINEY = "ab 1'\n\n\r\n  \t!/\u00a0é😀中\u3000.x"
documents = st.text(alphabet=LINEY, max_size=300)


def whole_counts(text: str, pattern: str) -> Counter:
    return Counter(c.encode("utf-8") for c in chunks_of([text], pattern))


@pytest.mark.parametrize("pattern", NAMED, ids=IDS)
@given(text=documents)
@settings(max_examples=examples(300), deadline=None)
def test_every_safe_cut_keeps_the_chunks(pattern, text):
    """Splitting at *all* safe cuts at once gives exactly the chunks of the whole text."""
    data = text.encode("utf-8")
    cuts = [i for i in range(len(data) + 1) if is_safe_cut(data, i, pattern)]
    pieces = [data[a:b].decode("utf-8") for a, b in zip([0, *cuts], [*cuts, len(data)])]
    assert Counter(c.encode() for c in chunks_of(pieces, pattern)) == whole_counts(text, pattern)


@pytest.mark.parametrize("pattern", NAMED, ids=IDS)
@given(text=st.text(alphabet="ab 1.\r\n\t/é", max_size=200))
@settings(max_examples=examples(300), deadline=None)
def test_crlf_cuts_keep_the_chunks(pattern, text):
    """The same on text made mostly of CRLF line ends (the pattern-specific rules)."""
    data = text.replace("\n", "\r\n").encode("utf-8")
    cuts = [i for i in range(len(data) + 1) if is_safe_cut(data, i, pattern)]
    pieces = [data[a:b].decode("utf-8") for a, b in zip([0, *cuts], [*cuts, len(data)])]
    assert Counter(c.encode() for c in chunks_of(pieces, pattern)) == whole_counts(data.decode(), pattern)


def test_crlf_files_are_cut_into_blocks(tmp_path):
    text = "".join(f"line {i}: some words here.\r\n" for i in range(2000))
    path = tmp_path / "crlf.txt"
    path.write_bytes(text.encode())
    for pattern in NAMED:
        config = CountConfig(Splitter.of(pattern))
        tasks = list(file_tasks(str(path), path.stat().st_size, config.splitter.cut, 4096))
        assert len(tasks) > 10
        assert Counter(count_tasks(tasks, config, workers=1).as_dict()) == whole_counts(text, pattern)


def test_cut_rule_refuses_the_dangerous_places():
    assert find_cut(b"abc\ndef") == 4
    assert find_cut(b"abc \ndef") is None       # gpt2: "\s++$" would take " \n" at a block end
    assert find_cut(b"abc\n def") is None       # the next chunk starts with the space
    assert find_cut(b"abc!\n/def") is None      # o200k: "!\n/" is one chunk
    assert find_cut(b"abc\n\ndef") is None      # gpt2: "\n\n" is two chunks, but one at a block end
    assert find_cut(b"abc\n\ndef\nghi") == 9


# Dense in what the superword rule looks at: letters before digits, pairs of marks, spaces.
superwordy = st.text(alphabet="ab\u00e9\u4e2d 1\u0663!./\n\r\t\u00a0\U0001F600", max_size=200)


@given(text=superwordy)
@settings(max_examples=examples(300), deadline=None)
def test_every_superword_cut_keeps_the_chunks(text):
    data = text.encode("utf-8")
    cuts = [i for i in range(len(data) + 1) if is_safe_cut(data, i, SUPERWORD)]
    pieces = [data[a:b].decode("utf-8") for a, b in zip([0, *cuts], [*cuts, len(data)])]
    assert Counter(c.encode() for c in chunks_of(pieces, SUPERWORD)) == whole_counts(text, SUPERWORD)
    for start in range(len(data) + 1):          # the search finds the first of them from any byte
        assert find_cut(data, start, SUPERWORD) == next((c for c in cuts if c >= start), None)


# Text that NFC/NFKC change: decomposed letters, compatibility forms, a letter NFKC makes a space
# and a mark (U+037A), ASCII letters, digits and marks around them.
normalizable = st.text(alphabet="ae1 !.\u0301\u0308\u037a\ufb01\u2460\u00a8\uff0f\u1112\u1161\n", max_size=120)


@given(text=normalizable, form=st.sampled_from(["nfc", "nfkc"]))
@settings(max_examples=examples(300), deadline=None)
def test_every_normalized_superword_cut_keeps_the_normalized_chunks(text, form):
    """With a normalization, a superword cut must also be a place where normalizing the blocks
    one by one gives the normalized whole, and the chunks of the normalized blocks those of the
    normalized whole: cuts only between ASCII characters (pretokenize._is_superword_cut)."""
    import unicodedata
    data = text.encode("utf-8")
    whole = unicodedata.normalize(form.upper(), text)
    cuts = [i for i in range(len(data) + 1) if is_safe_cut(data, i, SUPERWORD, form)]
    pieces = [unicodedata.normalize(form.upper(), data[a:b].decode("utf-8"))
              for a, b in zip([0, *cuts], [*cuts, len(data)])]
    assert "".join(pieces) == whole
    assert Counter(c.encode() for c in chunks_of(pieces, SUPERWORD)) == whole_counts(whole, SUPERWORD)
    assert not any(data[c - 1] >= 0x80 or data[c] >= 0x80 for c in cuts)


def test_superword_cut_rule_refuses_the_dangerous_places():
    assert find_cut(b"said,\" and", 0, SUPERWORD) == 4      # after a letter, before two marks
    assert find_cut(b"ab\ncd\n", 0, SUPERWORD) is None      # its chunks cross lines: "ab\ncd\n" is one
    assert find_cut(b"a, b.\n", 0, SUPERWORD) is None        # one mark and a space join the chunk
    assert find_cut(b"!!!\n12", 0, SUPERWORD) is None        # no letter before the digits, none after them
    assert find_cut(b"line 12\r\n", 0, SUPERWORD) == 7       # after a digit run: "12" ends there
    assert find_cut(b"a !!", 0, SUPERWORD) == 1              # before a space and two marks: " !!"
    assert find_cut(b"ab !x", 0, SUPERWORD) is None          # a space and one mark join the chunk
    assert find_cut(b"a  b", 0, SUPERWORD) == 1              # before spaces that split: "a", " ", " b"
    assert find_cut(b"a  b", 2, SUPERWORD) is None           # not between them: a block's "  " at its end
    assert find_cut(b"x1", 0, SUPERWORD) == 1
    assert find_cut(b"a!\xff", 0, SUPERWORD) is None         # an invalid byte is no mark
    assert find_cut(b"a 1234", 0, SUPERWORD) is None         # "123" then "4": inside the digit run


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


def test_custom_patterns_read_files_whole(tmp_path):
    path = tmp_path / "doc.txt"
    path.write_text("a b\nc d\n" * 100)
    tasks = list(file_tasks(str(path), path.stat().st_size, Splitter.of(r"\S+|\s+").cut, 8))
    assert len(tasks) == 1 and tasks[0].size == path.stat().st_size


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
