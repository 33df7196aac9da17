"""Word tables: counted once, saved, loaded, added (associatively, with 64-bit counts), spilled
to disk under a memory budget, and trained from as often as one likes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import WordTable
from bpe_fast.training import _kernel
from bpe_fast.counting import wordtable
from bpe_fast.counting._table import ChunkTable, merge_tables
from bpe_fast.budget import resident_bytes
from bpe_fast.cli import main

from ..conftest import examples, small_text, sparse_array, sparse_files

chunk_counts = st.dictionaries(st.binary(min_size=1, max_size=12), st.integers(1, 2**40), max_size=30)


@given(a=chunk_counts, b=chunk_counts, c=chunk_counts)
@settings(max_examples=examples(100), deadline=None)
def test_adding_tables_adds_counts_associatively(a, b, c):
    ta, tb, tc = (WordTable.from_counts(x) for x in (a, b, c))
    expected = {k: a.get(k, 0) + b.get(k, 0) + c.get(k, 0) for k in {*a, *b, *c}}
    assert ((ta + tb) + tc).as_dict() == expected == (ta + (tb + tc)).as_dict()
    assert WordTable.merge([tc, ta, tb]).as_dict() == expected
    assert (ta + tb) == (tb + ta)


def test_counts_beyond_32_bits_add_exactly():
    big = 3 * 2**40
    assert (WordTable.from_counts({b"x": big}) + WordTable.from_counts({b"x": big})).as_dict() == {b"x": 2 * big}


def test_equal_hashes_of_different_chunks_merge_by_bytes():
    """Two chunks whose hashes collide (made so here) stay apart, ordered by bytes."""
    def part(chunks):
        data = b"".join(c for c, _ in chunks)
        offsets = np.cumsum([0] + [len(c) for c, _ in chunks])
        return (np.frombuffer(data, np.uint8), offsets.astype(np.int64),
                np.array([n for _, n in chunks], np.int64), np.full(len(chunks), 7, np.uint64))
    data, offsets, counts, _ = merge_tables([part([(b"b", 1), (b"c", 2)]), part([(b"a", 5), (b"c", 3)])])
    words = [bytes(data[offsets[i]:offsets[i + 1]]) for i in range(len(counts))]
    assert list(zip(words, counts.tolist())) == [(b"a", 5), (b"b", 1), (b"c", 5)]


def test_save_load_round_trip_and_training_from_the_file(tmp_path):
    table = bpe_fast.count_from_iterator([small_text()] * 3, pattern="o200k", special_tokens=["<|endoftext|>"],
                                         workers=1)
    table.save(tmp_path / "t.npz")
    loaded = WordTable.load(tmp_path / "t.npz")
    assert loaded == table and loaded.pattern == bpe_fast.O200K and loaded.special_tokens == ("<|endoftext|>",)
    direct = bpe_fast.train_from_iterator([small_text()] * 3, 500, pattern="o200k", special_tokens=["<|endoftext|>"],
                                          workers=1)
    assert bpe_fast.train_from_table(loaded, 500) == direct      # pattern and specials come from the table


def test_tables_split_differently_do_not_add():
    with pytest.raises(bpe_fast.ArgumentError, match="same pattern"):
        WordTable.from_counts({b"a": 1}, pattern=bpe_fast.GPT2) + WordTable.from_counts({b"a": 1})


@pytest.mark.parametrize("content,message", [
    (b"not a zip", "not a bpe_fast word table"),
    (None, "offsets must start at 0"),
])
def test_damaged_table_files_name_the_file(tmp_path, content, message):
    path = tmp_path / "t.npz"
    if content is None:
        symbols, offsets, counts, hashes = WordTable.from_counts({b"ab": 2, b"c": 1}).sorted_arrays()
        np.savez(path, symbols=symbols, offsets=offsets + 1, counts=counts, hashes=hashes,
                 meta=np.array('{"format": "bpe_fast.counting.wordtable", "version": 1, "pattern": null}'))
    else:
        path.write_bytes(content)
    with pytest.raises(bpe_fast.InputError, match=message) as err:
        WordTable.load(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_tiny_memory_budget_spills_and_changes_nothing(tmp_path, monkeypatch, workers):
    """Workers over budget write sorted parts to disk; the sum is exact."""
    rng = np.random.default_rng(0)
    words = ["".join(rng.choice(list("abcdefghij"), size=rng.integers(3, 9))) for _ in range(60_000)]
    path = tmp_path / "c.txt"
    path.write_text(" ".join(words * 2) + "\n")
    spills = []
    real_spill = bpe_fast.counting.workers.ChunkCounter._spill

    def counted_spill(self) -> str:
        spills.append(1)
        return real_spill(self)

    monkeypatch.setattr(bpe_fast.counting.workers.ChunkCounter, "_spill", counted_spill)
    spilled = bpe_fast.count([path], workers=workers, block_size=20_000, memory_budget=1 << 20)
    if workers == 1:
        assert len(spills) >= 2                    # it spilled on the way (and once more at the end)
    monkeypatch.undo()
    assert spilled == bpe_fast.count([path], workers=1)


def test_chunk_table_keeps_short_and_long_chunks_apart():
    table = ChunkTable()
    for chunk in [b"a", b"a\x00", b"\x00", b"1234567", b"12345678", b"12345678" * 9, b"a"]:
        table.add(chunk)
    assert WordTable.from_native(table).as_dict() == {b"a": 2, b"a\x00": 1, b"\x00": 1, b"1234567": 1,
                                                       b"12345678": 1, b"12345678" * 9: 1}


def test_cli_counts_once_and_trains_from_tables(tmp_path, capsys):
    (tmp_path / "a.txt").write_text(small_text())
    (tmp_path / "b.txt").write_text("another text, quite different from the first one\n" * 30)
    assert main(["count", str(tmp_path / "a.txt"), "-o", str(tmp_path / "a.npz"), "-q"]) == 0
    assert main(["count", str(tmp_path / "b.txt"), "-o", str(tmp_path / "b.npz"), "-q"]) == 0
    assert main(["train", "--counts", str(tmp_path / "a.npz"), "--counts", str(tmp_path / "b.npz"),
                 "--vocab-size", "500", "-o", str(tmp_path / "t.json"), "-q"]) == 0
    direct = bpe_fast.train([tmp_path / "a.txt", tmp_path / "b.txt"], 500, workers=1)
    assert bpe_fast.load(tmp_path / "t.json") == direct
    capsys.readouterr()
    assert main(["train", "--counts", str(tmp_path / "a.npz"), "--pattern", "gpt2", "--vocab-size", "500",
                 "-o", str(tmp_path / "t2.json"), "-q"]) == 2
    assert "--pattern: a word table keeps the pattern" in capsys.readouterr().err


@pytest.mark.parametrize("offsets, counts, fault", [
    ([0, 2, 4], [5, 0], r"every count must be positive, counts\[1\] is 0"),
    ([0, 2, 9], [5, 1], "offsets must start at 0, never fall, and end at the number of bytes"),
    ([0, 3, 2, 4], [1, 1, 1], "offsets must start at 0, never fall"),
    ([0, 4], [1, 1], "offsets must have one entry more than counts"),
])
def test_a_table_built_by_hand_that_is_not_consistent_is_refused_naming_the_fault(offsets, counts, fault):
    table = WordTable(np.frombuffer(b"abcd", np.uint8), offsets=offsets, counts=counts)
    with pytest.raises(bpe_fast.ArgumentError, match=f"train_from_table's table: {fault}"):
        bpe_fast.train_from_table(table, 258)


@sparse_files
def test_a_table_of_more_chunks_than_the_kernel_numbers_is_refused_before_any_pass(tmp_path):
    # The kernel numbers chunks with int32. A table one chunk past that holds 32 GiB of offsets
    # and counts: here sparse files, never read, so the limit must be checked before any pass
    # over them (a pass would read or allocate gigabytes, and the kernel would say ValueError).
    n = wordtable.MAX_TRAIN_CHUNKS + 1
    symbols = sparse_array(tmp_path / "symbols", np.uint8, n)
    offsets = sparse_array(tmp_path / "offsets", np.int64, n + 1)
    counts = sparse_array(tmp_path / "counts", np.int64, n)
    offsets[-1] = n                                  # (one page written)
    table = WordTable(symbols, offsets, counts)
    before = resident_bytes()
    with pytest.raises(bpe_fast.ArgumentError, match=r"train_from_table's table: 2,147,483,647 chunks, more than "
                                                     r"training takes \(2,147,483,646: the kernel numbers chunks"):
        bpe_fast.train_from_table(table, 300, progress="none")
    assert resident_bytes() - before < 64 << 20
    with pytest.raises(ValueError, match="numbers them with int32"):     # the kernel's own limit is this one
        _kernel.check_word_table(symbols, offsets, counts)


def test_a_saved_table_whose_pattern_does_not_compile_is_refused_naming_the_file(tmp_path, capsys):
    WordTable.from_words([b"ab", b"cd", b"ab"], pattern="[a-z]+").save(tmp_path / "t.npz")
    arrays = dict(np.load(tmp_path / "t.npz"))
    arrays["meta"] = np.array(str(arrays["meta"]).replace("[a-z]+", "([a-z"))
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(bpe_fast.InputError, match=r"bad.npz: meta's pattern is not usable: .*does not compile"):
        WordTable.load(tmp_path / "bad.npz")
    assert main(["train", "--counts", str(tmp_path / "bad.npz"), "--vocab-size", "300", "-o",
                 str(tmp_path / "tok.json"), "-q"]) != 0
    assert "bad.npz: meta's pattern is not usable" in capsys.readouterr().err


# -- normalized tables --------------------------------------------------------------------------

# Text that normalization changes: compatibility characters (ligatures, circled and full-width
# forms, fractions), decomposed letters NFC composes, marks after a newline, and the NFKC
# characters that become a space or "/" (U+00A8, U+FF0F) right after a line end.
ODD = ("ﬁne ﬂow ① ② ＡＢＣ ｄｅｆ café cafe\u0301 A\u030a Å \u212b ½ ﬀ x\u00a8y 한국 \u1112\u1161\u11ab "
       "\u1f71\u0345 e\u0301\u0316 =\u0338 \u2460\n\u0301abc\n\u00a8def!\n\uff0fghi\nﬁ\n")
DOCS = [small_text(), ODD * 40, "\n".join(f"{ODD[k:]}{k}" for k in range(0, len(ODD), 7))]


def test_word_tables_record_their_normalization(tmp_path):
    table = bpe_fast.count_from_iterator(DOCS, normalize="nfkc", workers=1, progress="none")
    table.save(tmp_path / "t.npz")
    loaded = WordTable.load(tmp_path / "t.npz")
    assert loaded == table and loaded.normalize == "nfkc" and loaded.meta["version"] == 2
    assert bpe_fast.train_from_table(loaded, 500, progress="none").normalize == "nfkc"
    plain = bpe_fast.count_from_iterator(DOCS, workers=1, progress="none")
    plain.save(tmp_path / "p.npz")
    assert WordTable.load(tmp_path / "p.npz").meta["version"] == 1        # unnormalized tables: as before
    with pytest.raises(bpe_fast.ArgumentError, match="special tokens and normalization.*normalized to NFKC"):
        table + plain                                       # noqa: B018 (the addition is what is tested)
    relabelled = WordTable(*plain.arrays(), plain.pattern, normalize="nfkc")
    assert relabelled != plain and relabelled.as_dict() == plain.as_dict()


# -- counts past int64 refused, not wrapped; damaged files refused before reading them -------------

NEAR_INT64_MAX = 3 << 61            # two of these add up past 2**63 - 1


def test_counts_that_would_add_up_past_int64_are_refused(tmp_path):
    a = bpe_fast.WordTable.from_counts({b"the": NEAR_INT64_MAX, b"cat": 5})
    b = bpe_fast.WordTable.from_counts({b"the": NEAR_INT64_MAX, b"dog": 5})
    for add in (lambda: a + b, lambda: bpe_fast.WordTable.merge([a, b, a])):
        with pytest.raises(bpe_fast.ArgumentError, match=r"chunk b'the' would occur .* past the 64-bit count limit"):
            add()
    unsorted = bpe_fast.WordTable(np.frombuffer(b"thethe", np.uint8), np.array([0, 3, 6]),     # a chunk twice
                                  np.array([NEAR_INT64_MAX, NEAR_INT64_MAX]))
    with pytest.raises(bpe_fast.ArgumentError, match="past the 64-bit count limit"):
        unsorted.sorted()
    a.save(tmp_path / "a.npz")
    b.save(tmp_path / "b.npz")
    with pytest.raises(bpe_fast.ArgumentError, match="b.npz: cannot be added .* past the 64-bit count limit"):
        bpe_fast.WordTable.merge_files([tmp_path / "a.npz", tmp_path / "b.npz"])
    assert main(["train", "--counts", str(tmp_path / "a.npz"), "--counts", str(tmp_path / "b.npz"), "--vocab-size",
                 "300", "-o", str(tmp_path / "t.json"), "-q"]) == 2
    assert (a + bpe_fast.WordTable.from_counts({b"the": 1})).as_dict()[b"the"] == NEAR_INT64_MAX + 1     # in range
    assert (a + bpe_fast.WordTable.from_counts({b"cat": 1})).total_chunks == NEAR_INT64_MAX + 6


def test_the_total_of_counts_past_int64_is_exact():
    table = bpe_fast.WordTable.from_counts({b"the": NEAR_INT64_MAX, b"cat": NEAR_INT64_MAX})
    assert table.total_chunks == 2 * NEAR_INT64_MAX


def saved_table(tmp_path: Path) -> tuple[bpe_fast.WordTable, Path]:
    table = bpe_fast.WordTable.from_counts({b"the": 3, b"cat": 5, b" dog": 1})
    table.save(tmp_path / "t.npz")
    return table, tmp_path / "t.npz"


@pytest.mark.parametrize("claimed", ["(1000000000000,)", "(100000000,)"])
def test_a_word_table_header_claiming_a_huge_array_is_refused_before_allocating(tmp_path, claimed):
    import tracemalloc
    import zipfile
    _, path = saved_table(tmp_path)
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    old, new = b"'shape': (3,), }", f"'shape': {claimed}, }}".encode()
    at = members["counts.npy"].index(old)
    members["counts.npy"] = members["counts.npy"][:at] + new + members["counts.npy"][at + len(new):]   # in the padding
    with zipfile.ZipFile(path, "w") as archive:         # a consistent archive (CRCs right): only the header lies
        for name, content in members.items():
            archive.writestr(name, content)
    tracemalloc.start()
    try:
        with pytest.raises(bpe_fast.InputError, match=r"t.npz: array 'counts' claims shape"):
            bpe_fast.WordTable.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 << 20, f"{peak:,} bytes taken for a damaged header"


def test_a_word_table_with_bad_fields_is_an_input_error_naming_the_file(tmp_path):
    import json

    import numpy as np
    table, path = saved_table(tmp_path)
    arrays = dict(symbols=table.symbols, offsets=table.offsets, counts=table.counts, hashes=table.hashes)
    meta = {"format": "bpe_fast.counting.wordtable", "version": 1, "pattern": None, "special_tokens": []}
    for damage, expected in [(dict(meta=np.array(json.dumps({**meta, "input_bytes": "many"}))), "input_bytes"),
                             (dict(counts=np.int64(3)), "counts must be a 1-D int64 array"),
                             (dict(meta=np.array([1, 2])), "not a bpe_fast word table"),
                             (dict(hashes=np.array(["x"] * 3, dtype=object)), "not a bpe_fast word table")]:
        with open(path, "wb") as fh:
            np.savez(fh, **{**arrays, "meta": np.array(json.dumps(meta)), **damage})
        with pytest.raises(bpe_fast.InputError, match=f"t.npz: .*{expected}"):
            bpe_fast.WordTable.load(path)
