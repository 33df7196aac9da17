"""The native chunk table (_table.ChunkTable) against plain Python: every table it makes must be
exactly the Counter of the pattern's regex matches, in the order part files are merged by
((hash, bytes), with the 64-bit hash written out again here in Python), whatever the chunks'
lengths around the 15 bytes kept in a slot, the probe hash's collisions, the table's growth (in
huge pages or not) and the end of the buffer the chunks are read from."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import CL100K, GPT2, O200K
from bpe_fast.counting._table import ChunkTable, _use_huge_pages, read_part
from bpe_fast.counting.wordtable import WordTable
from bpe_fast.pretokenize.splitter import Splitter, native_scanner

from ..conftest import corpus_params, examples, small_text

M64 = (1 << 64) - 1
SEED, MUL1, MUL2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
INT64_MAX = (1 << 63) - 1
PATTERNS = {"gpt2": GPT2, "cl100k": CL100K, "o200k": O200K}


def mix(x: int) -> int:
    x = ((x ^ (x >> 30)) * MUL1) & M64
    x = ((x ^ (x >> 27)) * MUL2) & M64
    return x ^ (x >> 31)


def hash_bytes(chunk: bytes) -> int:
    """The 64-bit hash tables are sorted and merged by (part files of different processes and
    versions must agree on it): 8 bytes at a time, little-endian, splitmix64's finalizer."""
    n = len(chunk)
    h = SEED ^ ((n * MUL2) & M64)
    i = 0
    while n - i >= 8:
        h = mix(h ^ int.from_bytes(chunk[i:i + 8], "little"))
        i += 8
    if i < n:
        h = mix(h ^ int.from_bytes(chunk[i:], "little") ^ ((n - i) << 56))
    return mix(h)


def expected_arrays(counts: Counter) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A table's arrays from a Counter, made here: sorted by (hash, bytes), empty chunks and zero
    counts left out."""
    items = sorted(((hash_bytes(c), c), n) for c, n in counts.items() if c and n > 0)
    data = np.frombuffer(b"".join(c for (_, c), _ in items), np.uint8)
    offsets = np.cumsum([0] + [len(c) for (_, c), _ in items], dtype=np.int64)
    return (data, offsets, np.array([n for _, n in items], np.int64),
            np.array([h for (h, _), _ in items], np.uint64))


def assert_table(table: ChunkTable, counts: Counter, want: tuple | None = None) -> None:
    """``want``: expected_arrays(counts), when the caller already has it (seconds on big tables)."""
    got, want = table.sorted_arrays(), want or expected_arrays(counts)
    assert len(table) == len(want[2])
    for k, name in enumerate(("bytes", "offsets", "counts", "hashes")):
        assert got[k].dtype == want[k].dtype and np.array_equal(got[k], want[k]), f"{name} differ"


def regex_counts(text: str, pattern: str) -> Counter:
    return Counter(c.encode() for c in regex.findall(pattern, text))


def scanner(name: str):
    sc = Splitter.of(name).scanner
    assert sc is not None
    return sc


def long_tail_text(seed: int, words: int) -> str:
    """Words of 1 to 40 characters over ASCII, two- three- and four-byte letters and digits, so
    that chunks of every length around 7, 8, 15 and 16 bytes are common, most seen once."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyzéßжλ中文字😀ÀÉ0123456789"))
    lengths = rng.integers(1, 41, size=words)
    pieces = letters[rng.integers(0, len(letters), size=int(lengths.sum()))]
    cuts = np.cumsum(lengths)[:-1]
    seps = rng.choice([" ", " ", " ", "\n", ", ", "  ", "'s "], size=words)
    return "".join(w + s for w, s in zip(("".join(p) for p in np.split(pieces, cuts)), seps))


# -- lengths at the edge of the slot: 7, 8, 15, 16 bytes -------------------------------------------

EDGE = [b"a" * n for n in (1, 7, 8, 14, 15, 16, 17, 31, 32, 33)]


def test_chunks_of_every_length_around_the_slot_are_kept_apart():
    """Chunks that differ only in their length, a trailing zero byte, their last byte or a byte
    past 8: a packed key must tell all of them apart."""
    chunks = [*EDGE, b"\x00", b"a\x00", b"a" * 7 + b"\x00", b"a" * 15 + b"\x00", b"a" * 14 + b"\x00",
              b"a" * 8 + b"b" + b"a" * 6, b"a" * 15 + b"b", b"\xff" * 15, b"\xff" * 16, b"\x00" * 15, b"\x00" * 16,
              "ünïcödé wörds".encode(), "中文字中文".encode(), "😀😀😀😀".encode()]
    assert len(set(chunks)) == len(chunks)
    counts: Counter[bytes] = Counter()
    table = ChunkTable()
    for k, chunk in enumerate(chunks):
        for _ in range(k % 3 + 1):
            table.add(chunk)
            counts[chunk] += 1
    table.add(b"a" * 15, 1 << 40)
    counts[b"a" * 15] += 1 << 40
    assert_table(table, counts)
    assert {table.chunk(i) for i in range(1 << 12) if _holds(table, i)} == set(chunks)


def _holds(table: ChunkTable, slot: int) -> bool:
    try:
        table.chunk(slot)
    except IndexError:
        return False
    return True


@pytest.mark.parametrize("length", [7, 8, 15, 16])
def test_chunks_at_the_end_of_the_buffer_are_read_exactly(length):
    """A chunk within 16 bytes of the end of the text is copied, not read 16 bytes at once:
    the bytes past it (here different each time) never enter its key."""
    sc = scanner("gpt2")
    word = "x" * (length - 1)
    for tail in range(0, 20):
        text = f"ab {word}" + "\n" * tail
        table = ChunkTable()
        data = np.frombuffer(text.encode() + b"zzzzzzzzzzzzzzzz", np.uint8)
        table.add_text(sc, data[:len(text.encode())])
        assert_table(table, regex_counts(text, GPT2))


@given(st.lists(st.binary(min_size=1, max_size=40), max_size=60), st.integers(0, 3))
@settings(max_examples=examples(200), deadline=None)
def test_any_chunks_and_counts_equal_a_counter(chunks, repeat):
    table, counts = ChunkTable(), Counter[bytes]()
    for k, chunk in enumerate(chunks):
        n = 1 + (k * repeat) % 5
        table.add(chunk, n)
        counts[chunk] += n
    assert_table(table, counts)
    again = ChunkTable()
    again.add_many(list(chunks))
    assert_table(again, Counter(chunks))


def test_a_bad_item_in_add_many_keeps_what_came_before_it():
    table = ChunkTable()
    with pytest.raises(TypeError):
        table.add_many([b"one", b"two" * 9, "not bytes", b"four"])   # type: ignore[list-item]
    assert_table(table, Counter([b"one", b"two" * 9]))
    table.add_many([b"one"])
    assert_table(table, Counter([b"one", b"one", b"two" * 9]))


# -- real text: the same table as the Counter of the regex's chunks --------------------------------

@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_small_corpus_counts_as_the_regex_splits(name):
    text = small_text()
    table = ChunkTable()
    table.add_text(scanner(name), text.encode())
    assert_table(table, regex_counts(text, PATTERNS[name]))


@pytest.mark.parametrize("path", corpus_params())
def test_shared_corpora_count_as_the_regex_splits(path: Path):
    text = path.read_text(encoding="utf-8")
    for name in ("gpt2", "o200k"):
        table = ChunkTable()
        table.add_text(scanner(name), text.encode())
        assert_table(table, regex_counts(text, PATTERNS[name]))


def test_a_long_tailed_text_counts_as_the_regex_splits_through_many_doublings():
    text = long_tail_text(1, 60_000)
    table = ChunkTable()
    table.add_text(scanner("cl100k"), text.encode())
    counts = regex_counts(text, CL100K)
    assert len(counts) > 50_000                                    # 4,096 slots at first: 4 doublings
    assert_table(table, counts)


# -- collisions in the probe hash -----------------------------------------------------------------

@pytest.mark.parametrize("keep", [0, 1, 0xF, 1 << 63])
def test_a_probe_hash_that_collides_everywhere_still_counts_exactly(keep):
    """keep=0: every chunk probes from slot 0, and every long chunk has the same probe hash, so
    only their bytes tell them apart; the other masks make long runs and many equal hashes. The
    table grows through them all the same."""
    text = long_tail_text(2, 3_000)
    chunks = [c.encode() for c in regex.findall(GPT2, text)] + EDGE + [b"b" * 16, b"c" * 16, b"a" * 15 + b"b"]
    table = ChunkTable()
    table._weaken_probe_hash(keep)
    for chunk in chunks:
        table.add(chunk)
    table.add_text(scanner("gpt2"), text.encode())
    counts = Counter(chunks) + regex_counts(text, GPT2)
    assert len(counts) > 4096 * 3 // 4                           # it grew
    assert_table(table, counts)


def test_the_probe_hash_cannot_change_once_chunks_are_in():
    table = ChunkTable()
    table.add(b"x")
    with pytest.raises(ValueError, match="in use"):
        table._weaken_probe_hash(0)


# -- growth, huge pages, memory -------------------------------------------------------------------

def thp_madvise_available() -> bool:
    try:
        mode = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return False
    return "[always]" in mode or "[madvise]" in mode


@pytest.fixture(scope="module")
def big_long_tail() -> tuple[str, Counter, tuple]:
    """A long-tailed text past 2 MB of slots, its regex counts and their expected arrays: made
    once for the growth tests below (seconds of plain Python each time)."""
    text = long_tail_text(7, 150_000)
    counts = regex_counts(text, GPT2)
    return text, counts, expected_arrays(counts)


@pytest.mark.parametrize("huge", [True, False])
def test_growth_past_2_mb_in_huge_pages_or_not_gives_the_same_table(huge, big_long_tail):
    text, counts, want = big_long_tail
    previous = _use_huge_pages(huge)
    try:
        table = ChunkTable()
        table.add_text(scanner("gpt2"), text.encode())
        assert len(counts) > 3 * (1 << 16) // 4                     # past 65,536 slots, 2 MB
        assert table.huge_pages == (huge and thp_madvise_available())
        assert_table(table, counts, want)
        table.clear()
        assert len(table) == 0 and not table.huge_pages and table.nbytes == 4096 * 32
        table.add_text(scanner("gpt2"), text.encode())              # and again after clear
        assert_table(table, counts, want)
    finally:
        _use_huge_pages(previous)


@pytest.mark.parametrize("huge", [True, False])
def test_growth_in_place_keeps_clusters_that_wrap_around_the_end(huge, big_long_tail):
    """Probe hashes with their low 8 bits cleared make runs of hundreds of slots from every 256th
    slot, the last of them wrapping past the table's end to its start; the table grows through
    2, 4 and 8 MB that way (in place, where the slots are mapped) and must still find every chunk."""
    text, counts, want = big_long_tail
    previous = _use_huge_pages(huge)
    try:
        table = ChunkTable()
        table._weaken_probe_hash(~0xFF & (2**64 - 1))
        table.add_text(scanner("gpt2"), text.encode())
        assert len(counts) > 3 * (1 << 17) // 4 * 0.8                 # well past 2 MB of slots
        assert_table(table, counts, want)
        table.add_text(scanner("gpt2"), text.encode())                 # every chunk found again
        data, offsets, once, hashes = want                              # the same chunks, each counted twice
        assert_table(table, counts + counts, (data, offsets, once * 2, hashes))
    finally:
        _use_huge_pages(previous)


def test_nbytes_is_the_slots_and_the_long_chunks_bytes():
    table = ChunkTable()
    assert table.nbytes == 4096 * 32
    table.add(b"short")
    assert table.nbytes == 4096 * 32                                # in its slot: no arena
    table.add(b"x" * 16)
    assert 4096 * 32 + 16 <= table.nbytes <= 4096 * 32 + 4096
    for k in range(3072):                                           # 3/4 of 4,096, then it doubles
        table.add(b"%d" % k)
    assert len(table) == 3074 and table.nbytes > 8192 * 32
    per_chunk = (table.nbytes - 4096) / len(table)
    assert 32 * 4 / 3 <= per_chunk <= 32 * 8 / 3 + 1


# -- counts past int64, spills ---------------------------------------------------------------------

def test_text_that_would_take_a_count_past_int64_is_refused_after_counting_the_rest():
    sc = scanner("gpt2")
    table = ChunkTable()
    table.add(b" overflowingly", INT64_MAX)                          # 14 bytes: a short chunk
    table.add(b" overflowinglyoverflowing", INT64_MAX)              # 25 bytes: a long chunk
    table.add(b" the", INT64_MAX - 1)
    text = " the" + long_tail_text(4, 20_000) + " overflowinglyoverflowing the overflowingly"
    with pytest.raises(OverflowError, match="overflowinglyoverflowing"):  # the first; its slot moved as it grew
        table.add_text(sc, text.encode())
    counts = regex_counts(text, GPT2)
    counts[b" overflowinglyoverflowing"] = INT64_MAX
    counts[b" overflowingly"] = INT64_MAX
    counts[b" the"] = INT64_MAX
    assert_table(table, counts)
    with pytest.raises(OverflowError, match=r"b' the' would occur 9,223,372,036,854,775,807 \+ 5"):
        table.add(b" the", 5)


def test_a_table_written_sorted_reads_back_as_its_arrays(tmp_path):
    text = long_tail_text(5, 20_000)
    table = ChunkTable()
    table.add_text(scanner("o200k"), text.encode())
    table.write_sorted(tmp_path / "p.part", batch=1000)
    got, want = read_part(tmp_path / "p.part"), expected_arrays(regex_counts(text, O200K))
    for k in range(4):
        assert np.array_equal(got[k], want[k])


def test_counting_a_long_tailed_file_with_spills_gives_the_regex_table(tmp_path, monkeypatch):
    text = long_tail_text(6, 40_000)
    path = tmp_path / "c.txt"
    path.write_text(text, encoding="utf-8")
    spills = []
    real_spill = bpe_fast.counting.workers.ChunkCounter._spill

    def counted_spill(self) -> str:
        spills.append(self.table.nbytes)
        return real_spill(self)

    monkeypatch.setattr(bpe_fast.counting.workers.ChunkCounter, "_spill", counted_spill)
    table = bpe_fast.count([path], pattern="gpt2", workers=1, block_size=1 << 16, memory_budget=1 << 20,
                           progress="none")
    assert len(spills) >= 3 and max(spills[:-1]) > 1 << 20
    assert table.as_dict() == dict(regex_counts(text, GPT2))


def test_chunk_counts_count_the_scanned_chunks():
    text = "the cat and the hat, the end\n"
    counts = ChunkTable()
    counts.add_text(native_scanner(CL100K), text.encode())
    counts.add(b" the", 2)
    assert WordTable.from_native(counts).as_dict() == {b"the": 1, b" cat": 1, b" and": 1, b" the": 4, b" hat": 1,
                                                       b",": 1, b" end": 1, b"\n": 1}
