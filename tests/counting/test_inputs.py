"""Every input people have gives the word table of the same documents: text, standard input,
pipes, compressed files, JSON lines, Parquet, directories; and bad ones fail naming the file (and
the line or byte): missing, unreadable, damaged, changing while read, not UTF-8. Input tasks read
themselves."""
from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bpe_fast
from bpe_fast import InputError
from bpe_fast.cli import main
from bpe_fast.counting import inputs
from bpe_fast.counting.inputs import classify, file_tasks
from bpe_fast.counting.workers import CountConfig, count_tasks
from bpe_fast.pretokenize.splitter import Splitter

from ..conftest import need, small_text

DOCS = [small_text(), "A second document.\nWith two lines, café and 日本語.\n", "third " * 300,
        "crlf line\r\nand another\r\n"]


def table(inputs, **kwargs):
    return bpe_fast.count(inputs, workers=kwargs.pop("workers", 1), **kwargs)


@pytest.fixture
def text_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(DOCS[0].encode())
    return path


@pytest.mark.parametrize("suffix,opener", [(".gz", gzip.open), (".bz2", bz2.open), (".xz", lzma.open),
                                           (".zst", None)])
@pytest.mark.parametrize("workers,block_size", [(1, 1 << 20), (2, 512)])
def test_compressed_text_gives_the_table_of_the_text(tmp_path, text_file, suffix, opener, workers, block_size):
    path = tmp_path / f"corpus.txt{suffix}"
    data = text_file.read_bytes() * 20
    if opener is None:
        path.write_bytes(need("zstandard").ZstdCompressor().compress(data))
    else:
        with opener(path, "wb") as fh:
            fh.write(data)
    plain = tmp_path / "plain.txt"
    plain.write_bytes(data)
    got = table([path], workers=workers, block_size=block_size)
    assert got == table([plain])
    assert got.input_bytes == path.stat().st_size        # progress counts the bytes read from disk


def test_standard_input_gives_the_table_of_the_file(tmp_path, text_file):
    script = ("import sys, bpe_fast; t = bpe_fast.count('-', workers=2, block_size=300); "
              f"t.save({str(tmp_path / 'stdin.npz')!r})")
    subprocess.run([sys.executable, "-c", script], input=text_file.read_bytes(), check=True)
    assert bpe_fast.WordTable.load(tmp_path / "stdin.npz") == table([text_file])


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".ndjson"])
def test_json_lines_are_documents(tmp_path, suffix):
    path = tmp_path / f"docs{suffix}"
    lines = "".join(json.dumps({"id": i, "text": d}, ensure_ascii=i % 2 == 0) + "\n" for i, d in enumerate(DOCS))
    (gzip.open if suffix.endswith(".gz") else open)(path, "wt", encoding="utf-8").write(lines)
    expected = bpe_fast.count_from_iterator(DOCS, workers=1)
    for workers, block_size in ((1, 1 << 20), (2, 64)):
        assert table([path], workers=workers, block_size=block_size) == expected


def test_json_lines_with_another_field_and_bad_records(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"body": d}) + "\n" for d in DOCS))
    assert table([path], field="body") == bpe_fast.count_from_iterator(DOCS, workers=1)
    with pytest.raises(bpe_fast.InputError, match=r"docs.jsonl, line 1: no field 'text' \(fields: body\)"):
        table([path])
    path.write_text('{"text": "fine"}\n{"text": 3}\n')
    with pytest.raises(bpe_fast.InputError, match=r"docs.jsonl, line 2: field 'text' holds int, not text"):
        table([path])
    path.write_text('{"text": "fine"}\n\n{"text": "cut sh\n')
    with pytest.raises(bpe_fast.InputError, match=r"docs.jsonl, line 3: not valid JSON"):
        table([path])


def test_parquet_values_are_documents(tmp_path):
    pa = need("pyarrow")
    pq = need("pyarrow.parquet")
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"text": DOCS * 3, "n": list(range(12))}), path, row_group_size=5)
    assert table([path], workers=2) == bpe_fast.count_from_iterator(DOCS * 3, workers=1)
    with pytest.raises(bpe_fast.InputError,
                       match=r"docs.parquet: no column 'body'; its columns: text \(string\), n \(int64\)"):
        table([path], column="body")
    with pytest.raises(bpe_fast.InputError, match=r"column 'n' holds int64, not text"):
        table([path], column="n")


def test_a_directory_means_its_files_sorted(tmp_path):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    for name, doc in zip(["b.txt", "a.txt", "sub/c.txt.gz"], DOCS):
        (gzip.open if name.endswith(".gz") else open)(tmp_path / "d" / name, "wb").write(doc.encode())
    assert table([tmp_path / "d"]) == bpe_fast.count_from_iterator([DOCS[1], DOCS[0], DOCS[2]], workers=1)


def test_broken_compressed_files_name_the_file(tmp_path):
    path = tmp_path / "broken.txt.gz"
    whole = gzip.compress(small_text().encode() * 5)
    path.write_bytes(whole[:len(whole) // 2])                # cut short
    with pytest.raises(bpe_fast.InputError, match=r"broken.txt.gz: cannot be decompressed as gzip"):
        table([path])
    path = tmp_path / "plain.txt.xz"
    path.write_bytes(b"not xz at all")
    with pytest.raises(bpe_fast.InputError, match=r"plain.txt.xz: cannot be decompressed as xz"):
        table([path])


def test_names_say_what_a_file_holds():
    assert classify("a.txt") == ("text", None)
    assert classify("a.jsonl.zst") == ("jsonl", "zstd")
    assert classify("a.JSONL.GZ") == ("jsonl", "gzip")
    assert classify("a.parquet") == ("parquet", None)
    assert classify("logs.2024.gz") == ("text", "gzip")
    with pytest.raises(bpe_fast.InputError, match="compressed Parquet"):
        classify("a.parquet.gz")


@pytest.mark.parametrize("pattern", [r"\S+|\s+", "none"])
def test_lines_mode_streams_any_pattern_in_blocks(tmp_path, pattern):
    """With lines as documents every "\\n" is a cut, so even a custom pattern is read in blocks."""
    path = tmp_path / "c.txt"
    text = (small_text() + "\n") * 10
    path.write_text(text)
    lines = [line + "\n" for line in text.split("\n")][:-1]
    blocks = table([path], pattern=pattern, lines=True, workers=2, block_size=1000)
    assert blocks == bpe_fast.count_from_iterator(lines, pattern=pattern, workers=1)


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


def test_custom_patterns_read_files_whole(tmp_path):
    path = tmp_path / "doc.txt"
    path.write_text("a b\nc d\n" * 100)
    tasks = list(file_tasks(str(path), path.stat().st_size, Splitter.of(r"\S+|\s+").cut, 8))
    assert len(tasks) == 1 and tasks[0].size == path.stat().st_size


# -- inputs that change, streams -------------------------------------------------------------------

def test_a_file_that_shrinks_while_read_is_an_error(tmp_path):
    path = tmp_path / "shrinks.txt"
    path.write_text("some text on a line\n" * 5000)
    config = CountConfig(Splitter.of(bpe_fast.CL100K))
    tasks = list(file_tasks(str(path), path.stat().st_size, config.splitter.cut, 10_000))
    with open(path, "r+b") as fh:
        fh.truncate(30_000)
    with pytest.raises(bpe_fast.InputError, match="shrinks.txt: the file changed while it was read"):
        count_tasks(tasks, config, workers=1)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes (POSIX)")
def test_a_fifo_is_read_as_a_stream(tmp_path):
    import threading
    text = small_text() * 20
    fifo = tmp_path / "corpus.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(text.encode()))
    writer.start()
    tok = bpe_fast.train([fifo], 500, workers=2, block_size=4096)
    writer.join()
    (tmp_path / "corpus.txt").write_bytes(text.encode())
    assert tok == bpe_fast.train([tmp_path / "corpus.txt"], 500, workers=1)
    assert tok.training_report.input_size == len(text.encode())


def test_standard_input_is_read_as_a_stream(tmp_path):
    text = small_text() * 10
    (tmp_path / "c.txt").write_bytes(text.encode())
    proc = subprocess.run([sys.executable, "-m", "bpe_fast", "train", "-", "--vocab-size", "400", "-o",
                           str(tmp_path / "t.json")], input=text.encode(), capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert bpe_fast.load(tmp_path / "t.json") == bpe_fast.train([tmp_path / "c.txt"], 400)


# -- damaged compressed input: an error naming the file, never a short text ------------------------

def zst_corpus(tmp_path: Path, frames: int = 1) -> tuple[bytes, bytes]:
    """(text, its zstd stream in ``frames`` frames, as ``zstd`` writes big or piped input)."""
    zstandard = need("zstandard")
    text = "".join(f"line {i} of a compressed corpus\n" for i in range(20_000)).encode()
    step = -(-len(text) // frames)
    return text, b"".join(zstandard.ZstdCompressor().compress(text[i:i + step]) for i in range(0, len(text), step))


@pytest.mark.parametrize("frames", [1, 3])
def test_a_truncated_zst_is_an_input_error_naming_the_file(tmp_path, frames, capsys):
    _, whole = zst_corpus(tmp_path, frames)
    cut = tmp_path / "cut.txt.zst"
    cut.write_bytes(whole[:len(whole) * 2 // 3])          # inside the last frame
    tok = bpe_fast.train_from_iterator([small_text()], 300, workers=1, progress="none")
    truncated = "cut.txt.zst: .*truncated"
    with pytest.raises(bpe_fast.InputError, match=truncated):
        bpe_fast.count([cut], workers=1, progress="none")
    with pytest.raises(bpe_fast.InputError, match=truncated):
        bpe_fast.train([cut], 300, workers=2, block_size=4096, progress="none")
    with pytest.raises(bpe_fast.InputError, match=truncated):
        bpe_fast.encode_files(tok, [cut], tmp_path / "ids.txt", progress="none")
    assert not (tmp_path / "ids.txt").exists()
    assert main(["count", str(cut), "-o", str(tmp_path / "t.npz"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "cut.txt.zst" in err and "truncated" in err and err.count("\n") == 1


def test_zst_frames_are_read_across_and_garbage_is_an_input_error(tmp_path):
    text, whole = zst_corpus(tmp_path, frames=3)
    (tmp_path / "frames.txt.zst").write_bytes(whole)
    (tmp_path / "plain.txt").write_bytes(text)
    assert bpe_fast.count([tmp_path / "frames.txt.zst"], workers=1) == bpe_fast.count([tmp_path / "plain.txt"])
    (tmp_path / "empty.txt.zst").write_bytes(b"")               # no frame: an empty document, as .gz
    assert len(bpe_fast.count([tmp_path / "empty.txt.zst"], workers=1)) == 0
    (tmp_path / "junk.txt.zst").write_bytes(whole + b"not zstd")
    with pytest.raises(bpe_fast.InputError, match="junk.txt.zst: cannot be decompressed as zstd"):
        bpe_fast.count([tmp_path / "junk.txt.zst"], workers=1)


# -- JSON nested past what the parser can take; Parquet's struct columns ---------------------------

DEEP = 100_000


def test_deeply_nested_json_lines_are_an_input_error_naming_the_line(tmp_path, capsys):
    corpus = tmp_path / "deep.jsonl"
    corpus.write_text('{"text": "fine"}\n{"text": ' + "[" * DEEP + "]" * DEEP + "}\n")
    with pytest.raises(bpe_fast.InputError, match="deep.jsonl, line 2: JSON nested too deeply"):
        bpe_fast.count([corpus], workers=1, progress="none")
    assert main(["count", str(corpus), "-o", str(tmp_path / "t.npz"), "--workers", "2", "--block-size", "20",
                 "-q"]) == 2
    err = capsys.readouterr().err
    assert "deep.jsonl, line 2: JSON nested too deeply" in err and err.count("\n") == 1


def nested_parquet(tmp_path: Path) -> Path:
    pa = need("pyarrow")
    pq = need("pyarrow.parquet")
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({
        "meta": pa.array([{"text": "hello world", "n": 1}, None, {"text": "more text", "n": 2},
                          {"text": None, "n": 3}]),
        "tags": pa.array([["a b"], ["c"], [], None]),
        "title": ["one", "two", None, "four"],
    }), path)
    return path


def test_a_struct_column_named_as_text_says_what_the_file_holds(tmp_path, capsys):
    path = nested_parquet(tmp_path)
    holds = (r"its columns: meta \(struct<text: string, n: int64>\), tags \(list<element: string>\), "
             r"title \(string\); text columns: meta.text, title")
    for column, problem in [("meta", r"column 'meta' holds struct<text: string, n: int64>, not text"),
                            ("tags", r"column 'tags' holds list<element: string>, not text"),
                            ("text", r"no column 'text'"), ("meta.n", r"column 'meta.n' holds int64, not text")]:
        with pytest.raises(bpe_fast.InputError, match=rf"nested.parquet: {problem}.*; {holds}"):
            bpe_fast.count([path], column=column, workers=1, progress="none")
    assert main(["count", str(path), "-o", str(tmp_path / "t.npz"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "no column 'text'" in err and "meta.text" in err and err.count("\n") == 1


def test_a_field_of_a_struct_column_is_read_by_its_dotted_path(tmp_path):
    path = nested_parquet(tmp_path)
    assert bpe_fast.count([path], column="meta.text", workers=1) == \
        bpe_fast.count_from_iterator(["hello world", "more text"], workers=1)
    tok = bpe_fast.train_from_iterator([small_text()], 300, workers=1)
    bpe_fast.encode_files(tok, [path], tmp_path / "ids.txt", column="meta.text", progress="none")
    lines = (tmp_path / "ids.txt").read_text().split("\n")[:-1]
    assert [tok.decode([int(i) for i in line.split()]) for line in lines] == ["hello world", "", "more text", ""]


# -- bad input: an error naming the file, the document, the byte -----------------------------------

def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_missing_file(tmp_path):
    with pytest.raises(bpe_fast.InputError, match=r"nope\.txt: no such file"):
        bpe_fast.train([tmp_path / "nope.txt"], 300)


def test_empty_directory(tmp_path):
    with pytest.raises(bpe_fast.InputError, match="the directory holds no files"):
        bpe_fast.train([tmp_path], 300)


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux's /proc")
def test_unreadable_file():
    # A file that opens but cannot be read (I/O error at offset 0), even for root.
    with pytest.raises(bpe_fast.InputError, match="/proc/self/mem: cannot be read"):
        bpe_fast.train(["/proc/self/mem"], 300)


@pytest.mark.parametrize("workers,block_size", [(1, 1 << 20), (2, 16)])
def test_invalid_utf8_names_file_and_offset(tmp_path, workers, block_size):
    good = b"hello world\nsecond line\n" * 10
    path = write(tmp_path, "latin1.txt", good + b"caf\xe9 au lait\nmore\n" + good)
    with pytest.raises(bpe_fast.InputError, match=rf"latin1.txt: invalid UTF-8 at byte offset {len(good) + 3}\b"):
        bpe_fast.train([path], 300, workers=workers, block_size=block_size)
    config = CountConfig(Splitter.of(bpe_fast.CL100K), errors="replace")
    tasks = file_tasks(str(path), path.stat().st_size, config.splitter.cut, block_size)
    counts = count_tasks(tasks, config, workers).as_dict()
    assert counts["\ufffd".encode()] == 1 and counts[b"caf"] == 1


def test_invalid_utf8_in_iterator_document():
    with pytest.raises(bpe_fast.InputError, match=r"document 1: invalid UTF-8 at byte offset 1"):
        bpe_fast.train_from_iterator(["fine", b"a\xffb"], 300)


def test_non_text_document():
    with pytest.raises(bpe_fast.InputError, match=r"item 2: expected a document \(str or bytes\), a batch of "
                                                  r"them \(a list\) or a record .*got int"):
        bpe_fast.train_from_iterator(["a", "b", 3], 300)
