"""The counting stage's entry points (counting/corpus.py): ``count`` reads files, folders and
streams, ``count_from_iterator`` documents, each into a word table that is exactly the Counter of
the pattern's matches (regex.findall, per document), which records what it was counted with.
Their arguments are checked before anything is read."""
from __future__ import annotations

import gzip
import unicodedata
from collections import Counter
from typing import Literal

import pytest
import regex

import bpe_fast
from bpe_fast.pretokenize.patterns import CL100K, GPT2, O200K

from ..conftest import SMALL_CORPUS, small_text

# A pattern of no native scanner (the regex module splits), which matches every character.
CUSTOM = r"\w+|\s+|[^\w\s]+"


def findall_counts(texts: list[str], pattern: str | None) -> Counter:
    """The chunks of each text, counted: regex.findall, or the whole text with no pattern."""
    if pattern is None:
        return Counter(text.encode() for text in texts if text)
    return Counter(chunk.encode() for text in texts for chunk in regex.findall(pattern, text))


@pytest.mark.parametrize("pattern", [GPT2, CL100K, O200K, CUSTOM, None], ids=["gpt2", "cl100k", "o200k", "custom",
                                                                            "none"])
@pytest.mark.parametrize("workers,block_size", [(1, 1 << 20), (2, 512)])
def test_count_of_a_file_is_the_counter_of_its_chunks(pattern, workers, block_size):
    text = small_text()
    table = bpe_fast.count(SMALL_CORPUS, pattern=pattern, workers=workers, block_size=block_size, progress="none")
    assert table.as_dict() == dict(findall_counts([text], pattern))
    assert table.total_chunks == sum(findall_counts([text], pattern).values())
    assert table.input_bytes == len(text.encode()) and table.pattern == pattern


def test_count_of_several_files_adds_their_counts(tmp_path):
    texts = ["the cat sat on the mat\n", "the dog sat\n", "the end"]
    paths = [tmp_path / f"{k}.txt" for k in range(len(texts))]
    for path, text in zip(paths, texts):
        path.write_text(text, encoding="utf-8")
    table = bpe_fast.count([str(p) for p in paths], pattern="gpt2", workers=1, progress="none")
    assert table.as_dict() == dict(findall_counts(texts, GPT2))
    assert table.as_dict()[b" sat"] == 2 and table.as_dict()[b"the"] == 3
    assert bpe_fast.count(tmp_path, pattern="gpt2", workers=1, progress="none") == table       # the folder


@pytest.mark.parametrize("pattern", [CL100K, CUSTOM, None], ids=["cl100k", "custom", "none"])
def test_count_from_iterator_counts_each_document_apart(pattern):
    """A chunk never runs across two documents: "ab" then "cd" is two chunks even with no pattern."""
    docs = ["ab", "cd", "ab cd", "", "x" * 40, "ab"]
    table = bpe_fast.count_from_iterator(docs, pattern=pattern, workers=1, progress="none")
    assert table.as_dict() == dict(findall_counts(docs, pattern))
    batched = bpe_fast.count_from_iterator([docs[:3], {"text": docs[3]}, *docs[4:]], pattern=pattern, workers=1,
                                           progress="none")                     # a batch, a record, documents
    assert batched == table


def test_lines_makes_every_line_a_document():
    text = "one two\nthree\n\nfour five six\nlast"
    lines = text.splitlines(keepends=True)
    table = bpe_fast.count_from_iterator([text], pattern=None, lines=True, workers=1, progress="none")
    assert table.as_dict() == dict(Counter(line.encode() for line in lines))


def test_the_table_records_what_it_was_counted_with():
    docs = ["hello<|eot|>world", "hello again"]
    table = bpe_fast.count_from_iterator(docs, pattern="o200k", special_tokens=["<|eot|>"], workers=1,
                                         progress="none")
    assert (table.pattern, table.special_tokens, table.normalize) == (O200K, ("<|eot|>",), None)
    parts = [part for doc in docs for part in doc.split("<|eot|>")]                 # the token is never a chunk
    assert table.as_dict() == dict(findall_counts(parts, O200K))
    assert len(table) == len(findall_counts(parts, O200K))


def recording(calls: list):
    """A progress callable that keeps (stage, done, total) of every call."""
    return lambda stage, done, total, elapsed: calls.append((stage, done, total))


def test_progress_counts_documents_against_length_and_bytes_of_files():
    """With ``length`` the progress counts documents against it; files report bytes against their
    size. Neither changes the table."""
    docs = [f"document {i} of ten" for i in range(10)]
    calls: list[tuple] = []
    by_docs = bpe_fast.count_from_iterator(iter(docs), length=10, workers=1, progress=recording(calls))
    assert by_docs == bpe_fast.count_from_iterator(docs, workers=1, progress="none")
    assert {(stage, total) for stage, _, total in calls} == {("counting", 10)} and calls[-1][1] == 10
    calls.clear()
    bpe_fast.count(SMALL_CORPUS, workers=1, progress=recording(calls))
    size = SMALL_CORPUS.stat().st_size
    assert {total for _, _, total in calls} == {size} and calls[-1][1] == size


# -- normalized: the table of the normalized text, however it is read ----------------------------

FORMS: dict[str, Literal["NFC", "NFKC"]] = {"nfc": "NFC", "nfkc": "NFKC"}

# Text that normalization changes: compatibility characters (ligatures, circled and full-width
# forms, fractions), decomposed letters NFC composes, marks after a newline, and the NFKC
# characters that become a space or "/" (U+00A8, U+FF0F) right after a line end.
ODD = ("ﬁne ﬂow ① ② ＡＢＣ ｄｅｆ café cafe\u0301 A\u030a Å \u212b ½ ﬀ x\u00a8y 한국 \u1112\u1161\u11ab "
       "\u1f71\u0345 e\u0301\u0316 =\u0338 \u2460\n\u0301abc\n\u00a8def!\n\uff0fghi\nﬁ\n")
DOCS = [small_text(), ODD * 40, "\n".join(f"{ODD[k:]}{k}" for k in range(0, len(ODD), 7))]


def norm(text: str, form: str) -> str:
    return unicodedata.normalize(FORMS[form], text)


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", r"\w+|\s+", None])
def test_counting_a_file_in_blocks_equals_the_whole_text_normalized(tmp_path, pattern):
    text = "".join(DOCS[1:]) * 3 + small_text()
    path = tmp_path / "odd.txt"
    path.write_text(text, encoding="utf-8")
    with gzip.open(tmp_path / "odd.txt.gz", "wt", encoding="utf-8") as fh:   # a stream, cut as it is read
        fh.write(text)
    expected = bpe_fast.count_from_iterator([norm(text, "nfkc")], pattern=pattern, workers=1, progress="none")
    for source in (path, tmp_path / "odd.txt.gz"):
        table = bpe_fast.count([source], pattern=pattern, normalize="nfkc", block_size=64, workers=1,
                               progress="none")
        assert table.as_dict() == expected.as_dict() and table.normalize == "nfkc"
    lines = bpe_fast.count([path], pattern=pattern, normalize="nfkc", lines=True, block_size=64, workers=1,
                           progress="none")
    by_line = bpe_fast.count_from_iterator([norm(text, "nfkc")], pattern=pattern, lines=True, workers=1,
                                           progress="none")
    assert lines.as_dict() == by_line.as_dict()


def test_counting_in_worker_processes_normalizes(tmp_path):
    for k in range(4):
        (tmp_path / f"{k}.txt").write_text(ODD * (k + 3), encoding="utf-8")
    files = sorted(tmp_path.glob("*.txt"))
    table = bpe_fast.count(files, normalize="nfc", workers=2, block_size=256, progress="none")
    alone = bpe_fast.count_from_iterator([norm(f.read_text(encoding="utf-8"), "nfc") for f in files], workers=1,
                                         progress="none")
    assert table.as_dict() == alone.as_dict()


# -- arguments: checked before any document is read ------------------------------------------------

def test_single_string_is_not_an_iterator_of_documents():
    with pytest.raises(TypeError, match="wrap it in a list"):
        bpe_fast.train_from_iterator("a long text", 300)


def test_arguments_are_checked_before_any_document_is_read():
    def docs():
        raise AssertionError("the documents were read")
        yield "never"

    with pytest.raises(bpe_fast.ArgumentTypeError, match=r"not a single str/bytes \(wrap it in a list: \[text\]\)"):
        bpe_fast.count_from_iterator("one long text")
    with pytest.raises(bpe_fast.ArgumentTypeError, match="docs must be an iterable of documents .* got int"):
        bpe_fast.count_from_iterator(5)  # type: ignore[arg-type]
    with pytest.raises(bpe_fast.ArgumentError, match="length must be the number of documents .* got -1"):
        bpe_fast.count_from_iterator(docs(), length=-1)
    with pytest.raises(bpe_fast.EmptyCorpusError, match="no input files given"):
        bpe_fast.count([])
