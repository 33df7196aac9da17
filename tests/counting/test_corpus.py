"""The counting stage's entry points (counting/corpus.py): ``count`` and ``count_from_iterator``."""
from __future__ import annotations

import gzip
import unicodedata
from typing import Literal

import pytest

import bpe_fast

from ..conftest import small_text


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


# -- arguments -------------------------------------------------------------------------------------

def test_single_string_is_not_an_iterator_of_documents():
    with pytest.raises(TypeError, match="wrap it in a list"):
        bpe_fast.train_from_iterator("a long text", 300)
