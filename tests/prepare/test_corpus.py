"""Encoding whole corpora (bpe_fast.encode_files, ``bpe-fast encode``): streamed inputs of every
kind, text / JSON lines / binary outputs, the binary layout read back with NumPy alone."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import bpe_fast
from bpe_fast.prepare import corpus as ef
from bpe_fast.errors import ArgumentError, InputError

from ..conftest import SMALL_CORPUS, need, needs_vocabs, small_text, vocab_dir, vocab_path

BPE = [sys.executable, "-m", "bpe_fast"]


@pytest.fixture(scope="module")
def tok():
    return bpe_fast.train_from_iterator([small_text()], 600, pattern="cl100k", special_tokens=["<|endoftext|>"])


def read_bin(path):
    """The layout the docs promise, read with NumPy alone (not with load_bin)."""
    offsets = np.fromfile(str(path)[:-4] + ".idx" if str(path).endswith(".bin") else str(path) + ".idx", "<i8")
    width = os.path.getsize(path) // offsets[-1] if offsets[-1] else 2
    return np.fromfile(path, {2: "<u2", 4: "<u4"}[width]), offsets


def test_a_text_file_cut_into_many_blocks_encodes_as_one_text(tok, tmp_path, monkeypatch):
    monkeypatch.setattr(ef, "BLOCK_SIZE", 1000)          # many blocks, each cut where the pattern allows
    monkeypatch.setattr(ef, "BATCH_CHARS", 3000)         # and many batches
    out = tmp_path / "c.bin"
    summary = ef.encode_files(tok, [SMALL_CORPUS], out, format="bin", progress="none")
    ids, offsets = read_bin(out)
    assert ids.dtype == np.uint16 and summary["dtype"] == "uint16"
    assert offsets.tolist() == [0, len(ids)]
    assert ids.tolist() == tok.encode_ordinary(small_text())


def test_lines_are_documents_and_decode_back_to_the_file(tok, tmp_path):
    out = tmp_path / "lines.bin"
    ef.encode_files(tok, [SMALL_CORPUS], out, format="bin", lines=True, progress="none")
    ids, offsets = ef.load_bin(out)
    lines = small_text().splitlines(keepends=True)
    assert len(offsets) == len(lines) + 1
    for k in (0, 1, len(lines) // 2, len(lines) - 1):
        assert ids[offsets[k]:offsets[k + 1]].tolist() == tok.encode_ordinary(lines[k])
    assert tok.decode(ids) == small_text()


def test_only_newlines_end_lines(tok, tmp_path):
    text = "one\rstill one\x0cand\u2028one\ntwo\r\nthree"      # \r, form feed, U+2028 end no line
    (tmp_path / "t.txt").write_text(text, encoding="utf-8", newline="")
    out = tmp_path / "t.bin"
    ef.encode_files(tok, [tmp_path / "t.txt"], out, format="bin", lines=True, progress="none")
    ids, offsets = ef.load_bin(out)
    documents = [tok.decode(ids[a:b]) for a, b in zip(offsets[:-1], offsets[1:])]
    assert documents == ["one\rstill one\x0cand\u2028one\n", "two\r\n", "three"]


def test_every_container_gives_the_same_documents(tok, tmp_path):
    docs = ["first document\nwith two lines", "", "Ünïcödé 日本語 <|endoftext|> 😀", "last"]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps({"text": d, "id": i}) + "\n" for i, d in enumerate(docs)))
    with gzip.open(tmp_path / "d.jsonl.gz", "wt") as fh:
        fh.write((tmp_path / "d.jsonl").read_text())
    expected = [tok.encode_ordinary(d) for d in docs]
    for name in ("d.jsonl", "d.jsonl.gz"):
        out = tmp_path / f"{name}.bin"
        ef.encode_files(tok, [tmp_path / name], out, format="bin", progress="none")
        ids, offsets = ef.load_bin(out)
        assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected, name


def test_parquet_values_are_documents(tok, tmp_path):
    pa = need("pyarrow")
    import pyarrow.parquet as pq
    docs = ["one", "two three", "Ünïcödé"]
    pq.write_table(pa.table({"body": docs}), tmp_path / "d.parquet")
    out = tmp_path / "p.txt"
    ef.encode_files(tok, [tmp_path / "d.parquet"], out, column="body", progress="none")
    assert [[int(x) for x in line.split()] for line in out.read_text().splitlines()] == \
        [tok.encode_ordinary(d) for d in docs]


def test_text_and_json_formats_write_a_line_per_document_empty_ones_too(tok, tmp_path):
    (tmp_path / "a.txt").write_text("alpha beta")
    (tmp_path / "empty.txt").write_text("")
    out = tmp_path / "o.jsonl"
    summary = ef.encode_files(tok, [tmp_path / "a.txt", tmp_path / "empty.txt", tmp_path / "a.txt"], out,
                              format="json", progress="none")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == [tok.encode_ordinary("alpha beta"), [], tok.encode_ordinary("alpha beta")]
    assert summary["documents"] == 3


def test_special_tokens_are_text_unless_allowed(tok, tmp_path):
    (tmp_path / "s.txt").write_text("a<|endoftext|>b")
    out = tmp_path / "s.out"
    ef.encode_files(tok, [tmp_path / "s.txt"], out, progress="none")
    assert [int(x) for x in out.read_text().split()] == tok.encode_ordinary("a<|endoftext|>b")
    ef.encode_files(tok, [tmp_path / "s.txt"], out, allowed_special="all", progress="none")
    assert [int(x) for x in out.read_text().split()] == tok.encode("a<|endoftext|>b", allowed_special="all")


@needs_vocabs
def test_a_vocabulary_past_65536_ids_writes_uint32_same_ids_as_tiktoken(tmp_path, corpora):
    tiktoken = need("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    from bpe_fast.registry import ENCODINGS
    spec = ENCODINGS["cl100k_base"]
    theirs = tiktoken.Encoding("cl100k_base", pat_str=spec.pattern, special_tokens=spec.special_tokens,
                               mergeable_ranks=load_tiktoken_bpe(str(vocab_path("cl100k_base.tiktoken"))))
    ours = bpe_fast.load("cl100k_base", path=vocab_dir())
    path = corpora / "multilingual" / sorted(os.listdir(corpora / "multilingual"))[0]
    out = tmp_path / "m.bin"
    ef.encode_files(ours, [path], out, format="bin", progress="none")
    ids, _ = read_bin(out)
    assert ids.dtype == np.uint32
    assert ids.tolist() == theirs.encode_ordinary(path.read_bytes().decode("utf-8"))


def test_bad_input_is_named_and_leaves_no_output(tok, tmp_path):
    (tmp_path / "good.txt").write_text("fine text\n" * 100)
    (tmp_path / "bad.txt").write_bytes(b"ok\n" * 10 + b"\xff broken")
    out = tmp_path / "o.bin"
    with pytest.raises(InputError, match=r"bad.txt: invalid UTF-8 at byte offset 30"):
        ef.encode_files(tok, [tmp_path / "good.txt", tmp_path / "bad.txt"], out, format="bin", progress="none")
    assert not out.exists() and not (tmp_path / "o.idx").exists()
    assert sorted(os.listdir(tmp_path)) == ["bad.txt", "good.txt"]          # no temporary files left
    with pytest.raises(ArgumentError, match="is also an input file"):
        ef.encode_files(tok, [tmp_path / "good.txt"], tmp_path / "good.txt", progress="none")
    assert (tmp_path / "good.txt").read_text() == "fine text\n" * 100
    with pytest.raises(ArgumentError, match="bin format needs an output file"):
        ef.encode_files(tok, [tmp_path / "good.txt"], None, format="bin", progress="none")


def test_cli_writes_a_binary_corpus_and_says_so(tok, tmp_path):
    tok.save(tmp_path / "t.json")
    out = tmp_path / "corpus.bin"
    done = subprocess.run(BPE + ["encode", "-t", str(tmp_path / "t.json"), str(SMALL_CORPUS), "--lines",
                                 "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    ids, offsets = read_bin(out)
    assert f"{len(offsets) - 1:,} documents" in done.stderr and "uint16" in done.stderr
    assert tok.decode(ids) == small_text()
    done = subprocess.run(BPE + ["encode", "-t", str(tmp_path / "t.json"), "--format", "bin"], input="x",
                          capture_output=True, text=True)
    assert done.returncode != 0 and "give -o corpus.bin" in done.stderr


def test_standard_input_is_streamed_in_bounded_memory(tok, tmp_path):
    """80 MB through a pipe: the ids alone would take 160 MB as uint16 and far more as a list."""
    tok.save(tmp_path / "t.json")
    script = (
        "import resource, subprocess, sys\n"
        "line = b'the quick brown fox jumps over the lazy dog, again and again\\n'\n"
        "cmd = [sys.executable, '-m', 'bpe_fast', 'encode', '-t', sys.argv[1], '-o', sys.argv[2],"
        " '--progress', 'none']\n"
        "p = subprocess.Popen(cmd, stdin=subprocess.PIPE)\n"
        "for _ in range(80_000_000 // len(line)):\n"
        "    p.stdin.write(line)\n"
        "p.stdin.close()\n"
        "assert p.wait() == 0\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = tmp_path / "big.bin"
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "t.json"), str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    peak_mb = int(done.stdout.split()[-1]) / 1024
    ids, offsets = read_bin(out)
    line = "the quick brown fox jumps over the lazy dog, again and again\n"
    assert len(offsets) == 2 and len(ids) == tok.count_tokens(line * (80_000_000 // len(line)))
    assert peak_mb < 250, f"peak RSS {peak_mb:.0f} MB for 80 MB of input: not streamed"


def test_null_records_stay_as_empty_documents_so_document_i_is_record_i(tok, tmp_path):
    (tmp_path / "n.jsonl").write_text('{"text": "a"}\n{"text": null}\n{"text": "b"}\n')
    out = tmp_path / "n.txt"
    summary = ef.encode_files(tok, [tmp_path / "n.jsonl"], out, progress="none")
    assert out.read_text().split("\n") == [" ".join(map(str, tok.encode_ordinary("a"))), "",
                                          " ".join(map(str, tok.encode_ordinary("b"))), ""]
    assert summary["documents"] == 3


def test_an_input_that_fails_mid_read_is_named_as_the_input(tok, tmp_path, monkeypatch):
    from bpe_fast.counting import inputs

    class Flaky:                       # a file whose second read fails, as a dying disk's would
        def __init__(self, fh):
            self.fh, self.reads = fh, 0

        def read(self, n):
            self.reads += 1
            if self.reads > 1:
                raise OSError(5, "Input/output error")
            return self.fh.read(n)

        def seek(self, pos):
            return self.fh.seek(pos)

        def close(self):
            self.fh.close()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()

    monkeypatch.setattr(inputs, "open", lambda path, mode: Flaky(open(path, mode)), raising=False)
    monkeypatch.setattr(ef, "BLOCK_SIZE", 1000)
    out = tmp_path / "o.bin"
    with pytest.raises(InputError, match=r"small_corpus.txt: read failed: Input/output error"):
        ef.encode_files(tok, [SMALL_CORPUS], out, format="bin", progress="none")
    assert not out.exists() and not (tmp_path / "o.idx").exists()


# -- .npy files and plain .bin ids (as nanoGPT reads and writes them) --------------------------

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def trained():
    """A small tokenizer with <|endoftext|> and two more special tokens (no vocabularies needed)."""
    return bpe_fast.train_from_iterator([small_text()], 600, pattern="cl100k",
                                        special_tokens=[EOT, "<|pad|>", "<|bos|>"], progress="none")


def test_npy_of_many_batches_with_eot_after_each_line(trained, tmp_path, monkeypatch):
    monkeypatch.setattr(ef, "BATCH_CHARS", 2000)              # many batches, each a header's rewrite away
    text = small_text()
    (tmp_path / "in.txt").write_text(text, encoding="utf-8", newline="")
    summary = ef.encode_files(trained, [tmp_path / "in.txt"], tmp_path / "ids.npy", format="npy", lines=True,
                              append_eot=True, progress="none")
    eot = trained.special_tokens[EOT]
    expected = [i for line in text.splitlines(keepends=True) for i in trained.encode_ordinary(line) + [eot]]
    ids = np.load(tmp_path / "ids.npy")
    assert ids.dtype == np.uint16 and ids.tolist() == expected
    assert summary["tokens"] == len(expected) and summary["files"] == [str(tmp_path / "ids.npy")]


def test_load_bin_dtype_is_checked(trained, tmp_path):
    np.array([1, 2, 3], dtype=np.uint16).tofile(tmp_path / "odd.bin")         # 6 bytes: no whole uint32
    with pytest.raises(InputError, match="odd.bin: 6 bytes is not a whole number of uint32 ids"):
        bpe_fast.load_bin(tmp_path / "odd.bin", dtype="uint32")
    with pytest.raises(InputError, match=r"odd.bin: no odd.idx beside it .* dtype='uint16'"):
        bpe_fast.load_bin(tmp_path / "odd.bin")
    for bad in ("int8", "float32", "nonsense", np.dtype(">u2")):
        with pytest.raises(ArgumentError, match="dtype must be 'uint16' or 'uint32'"):
            bpe_fast.load_bin(tmp_path / "odd.bin", dtype=bad)
    ef.encode_files(trained, [tmp_path / "odd.bin"], tmp_path / "c.bin", format="bin", errors="replace",
                    progress="none")                                           # uint16, with its index
    as_told = bpe_fast.load_bin(tmp_path / "c.bin", dtype=np.uint16)[0]
    assert as_told.dtype == np.uint16 and as_told.tolist() == bpe_fast.load_bin(tmp_path / "c.bin")[0].tolist()
    with pytest.raises(ArgumentError, match="as uint32: its index says uint16"):
        bpe_fast.load_bin(tmp_path / "c.bin", dtype="uint32")


# -- issue 49: binary outputs known by their bytes or their index ----------------------------------

@pytest.mark.parametrize("offsets", [[0, 0], [0, 600, 300, 1000], "ragged"])
def test_an_index_that_does_not_cover_its_corpus_is_refused(tmp_path, offsets):
    (tmp_path / "c.bin").write_bytes(bytes(range(250)) * 8)                    # 2,000 bytes of ids
    if offsets == "ragged":
        (tmp_path / "c.idx").write_bytes(b"\0" * 12)                           # no whole number of int64
    else:
        np.array(offsets, "<i8").tofile(tmp_path / "c.idx")
    with pytest.raises(InputError, match=r"c\.idx: "):
        bpe_fast.load_bin(tmp_path / "c.bin")
    done = subprocess.run([*BPE, "decode", "-t", "gpt2", str(tmp_path / "c.bin")], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == "" and "c.idx" in done.stderr


def test_a_name_that_says_another_format_is_refused_before_encoding(trained, tmp_path):
    for fmt, name in (("npy", "ids.bin"), ("text", "ids.bin"), ("bin", "ids.npy"), ("json", "ids.npy")):
        with pytest.raises(ArgumentError, match=rf"-o .*{name}: a \.\w+ name is for the \w+ format"):
            ef.encode_files(trained, [SMALL_CORPUS], tmp_path / name, format=fmt, progress="none")
        assert not (tmp_path / name).exists()


def test_a_npy_file_is_known_by_its_header_whatever_its_name(trained, tmp_path):
    ef.encode_files(trained, [SMALL_CORPUS], tmp_path / "ids.npy", format="npy", progress="none")
    (tmp_path / "ids.npy").rename(tmp_path / "disguised.bin")
    assert ef.is_npy(tmp_path / "disguised.bin") and not ef.is_npy(SMALL_CORPUS)
    with pytest.raises(InputError, match="disguised.bin: is a NumPy .npy file"):
        bpe_fast.load_bin(tmp_path / "disguised.bin", dtype="uint16")       # its header is no ids
    trained.save(tmp_path / "tok.json")
    decode = [*BPE, "decode", "-t", str(tmp_path / "tok.json"), str(tmp_path / "disguised.bin")]
    done = subprocess.run(decode, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == SMALL_CORPUS.read_text(encoding="utf-8")
    done = subprocess.run([*decode, "--dtype", "uint16"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == "" and "is a NumPy .npy file" in done.stderr


@pytest.mark.skipif(not hasattr(os, "setrlimit") and sys.platform != "linux", reason="needs RLIMIT_FSIZE")
def test_a_failed_write_of_the_ids_names_the_ids_file_and_keeps_both_old_files(trained, tmp_path):
    import resource
    import signal

    def limit():                 # a file-size limit: writing past it fails (EFBIG), as a full disk would
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))
    trained.save(tmp_path / "tok.json")
    for name, data in (("corpus.bin", b"old ids"), ("corpus.idx", b"old index")):
        (tmp_path / name).write_bytes(data)
    big = tmp_path / "big.txt"
    big.write_text(small_text() * 8, encoding="utf-8")        # about 85 KB of uint16 ids: past the limit
    done = subprocess.run([*BPE, "encode", "-t", str(tmp_path / "tok.json"), str(big), "--format", "bin",
                           "-o", str(tmp_path / "corpus.bin")], capture_output=True, text=True, preexec_fn=limit)
    assert done.returncode == 2 and f"{tmp_path / 'corpus.bin'}: cannot write" in done.stderr, done.stderr
    assert (tmp_path / "corpus.bin").read_bytes() == b"old ids"
    assert (tmp_path / "corpus.idx").read_bytes() == b"old index"
