"""The quality report (quality/report.py, ``Tokenizer.evaluate``, ``bpe-fast eval``): each figure against
an independent count. (Its native measures, bytes, words and id counts: test_measure.py.)

Token counts and ids come from tiktoken itself (built from the shared .tiktoken files, as
test_conformance.py builds it), words from ``str.split()``, bytes from ``str.encode``, the Rényi
entropy from ``collections.Counter`` and ``math`` (and from the published figures of
tokenization-scorer's own tests for a tiny distribution), so nothing of quality/report.py is in the oracle.
"""
from __future__ import annotations

import functools
import json
import math
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast.quality import report as quality
from bpe_fast.errors import ArgumentError, InputError, TokenizerFileError

from ..conftest import (SMALL_CORPUS, corpus_params, examples, need, needs_vocabs, read_corpus, shared_path, small_text,
                       vocab_dir)


def tiktoken_encoding(name: str):
    """tiktoken's own Encoding for a named encoding, from the shared file (test_conformance.py's)."""
    need("tiktoken")
    from tests.test_conformance import reference
    return reference(name)


@functools.cache
def ours(name: str) -> bpe_fast.Tokenizer:
    return bpe_fast.load(name, path=vocab_dir())


def renyi_by_hand(ids, vocabulary: int, alpha: float = 2.5) -> tuple[float, float]:
    """(H_alpha in bits, H_alpha / log2 |V|) with Counter and math, straight from the definition."""
    counts = Counter(ids)
    total = sum(counts.values())
    entropy = math.log2(sum((c / total) ** alpha for c in counts.values())) / (1 - alpha)
    return entropy, entropy / math.log2(vocabulary)


@functools.cache
def tiktoken_vocabulary(name: str) -> frozenset[int]:
    enc = tiktoken_encoding(name)
    return frozenset(enc._mergeable_ranks.values()) | frozenset(enc._special_tokens.values())


def independent_row(name: str, texts: list[str]) -> dict:
    """bytes, words, tokens, unused ids and Rényi figures of tiktoken's encoding ``name`` of the texts."""
    ids = [i for t in texts for i in tiktoken_encoding(name).encode_ordinary(t)]
    vocabulary = tiktoken_vocabulary(name)
    entropy, efficiency = renyi_by_hand(ids, len(vocabulary))
    return dict(bytes=sum(len(t.encode("utf-8")) for t in texts), words=sum(len(t.split()) for t in texts),
                tokens=len(ids), unused=sorted(vocabulary - set(ids)), entropy=entropy, efficiency=efficiency)


def assert_row_is(row: quality.QualityRow, expected: dict) -> None:
    assert (row.bytes, row.words, row.tokens) == (expected["bytes"], expected["words"], expected["tokens"])
    assert row.bytes_per_token == expected["bytes"] / expected["tokens"]
    assert row.tokens_per_word == expected["tokens"] / expected["words"]
    assert row.unused_tokens.tolist() == expected["unused"]
    assert row.renyi_entropy == pytest.approx(expected["entropy"], rel=1e-12)
    assert row.renyi_efficiency == pytest.approx(expected["efficiency"], rel=1e-12)


# -- the Rényi figures ------------------------------------------------------------------------------

def test_renyi_entropy_of_a_tiny_known_distribution():
    # "pick @@ed pick @@l @@ed pick @@les": counts 3, 2, 1, 1. By hand: sum p^2.5 = (3^2.5 + 2^2.5 + 2) / 7^2.5,
    # H = log2 of it / (1 - 2.5); tokenization-scorer's own tests publish 1.653012966845049 and, over the
    # 4 types seen, 0.8265064834225245.
    counts = np.array([3, 0, 2, 1, 1])
    by_hand = math.log2((3 ** 2.5 + 2 ** 2.5 + 2) / 7 ** 2.5) / (1 - 2.5)
    assert quality.renyi_entropy(counts) == pytest.approx(by_hand, rel=1e-12)
    assert quality.renyi_entropy(counts) == pytest.approx(1.653012966845049, rel=1e-9)
    assert quality.renyi_efficiency(counts, 4) == pytest.approx(0.8265064834225245, rel=1e-9)
    assert quality.renyi_efficiency(counts, 16) == pytest.approx(1.653012966845049 / 4, rel=1e-9)


def test_renyi_limits_uniform_single_and_shannon():
    assert quality.renyi_efficiency(np.full(64, 7), 64) == pytest.approx(1.0)      # every token alike: 1
    assert quality.renyi_entropy(np.array([0, 5, 0])) == 0.0                        # one token: no information
    counts = np.array([5, 1, 3, 9])
    p = counts / counts.sum()
    assert quality.renyi_entropy(counts, 1) == pytest.approx(-sum(x * math.log2(x) for x in p))
    assert math.isnan(quality.renyi_entropy(np.zeros(3, np.int64)))


@settings(max_examples=examples(60), deadline=None)
@given(ids=st.lists(st.integers(0, 40), min_size=1, max_size=300), alpha=st.sampled_from([0.5, 2.0, 2.5, 3.0]))
def test_renyi_equals_counter_and_math(ids, alpha):
    entropy, efficiency = renyi_by_hand(ids, 41, alpha)
    counts = np.bincount(ids, minlength=41)
    assert quality.renyi_entropy(counts, alpha) == pytest.approx(entropy, rel=1e-9, abs=1e-12)
    assert quality.renyi_efficiency(counts, 41, alpha) == pytest.approx(efficiency, rel=1e-9, abs=1e-12)


# -- a file cut into blocks (the bytes and words of each text: tests/quality/test_measure.py) ----

def test_a_file_cut_into_blocks_counts_as_the_whole(monkeypatch, tmp_path):
    """Blocks are cut where every tokenizer's pattern allows (here three), so each counts the ids
    of the whole text, and the words across a cut are counted once."""
    text = small_text() * 3
    path = tmp_path / "c.txt"
    path.write_bytes(text.encode())
    toks = {p: bpe_fast.train([SMALL_CORPUS], 400, pattern=p, progress="none") for p in ("cl100k", "gpt2", "o200k")}
    baselines = {"gpt2": toks["gpt2"], "o200k": toks["o200k"]}
    whole = toks["cl100k"].evaluate([path], baselines=baselines)
    monkeypatch.setattr(quality, "BLOCK_SIZE", 997)          # many blocks
    monkeypatch.setattr(quality, "BATCH_CHARS", 3000)        # and many batches
    cut = toks["cl100k"].evaluate([path], baselines=baselines)
    for name, tok in (("tokenizer", toks["cl100k"]), ("gpt2", toks["gpt2"]), ("o200k", toks["o200k"])):
        row = cut.row(tokenizer=name)
        assert (row.bytes, row.words, row.tokens) == (len(text.encode()), len(text.split()),
                                                      len(tok.encode_ordinary(text)))
    assert cut.to_dict() == whole.to_dict()


# -- against tiktoken on the shared corpora -------------------------------------------------------------

@needs_vocabs
@pytest.mark.parametrize("path", corpus_params())
def test_every_figure_equals_tiktokens_count_on_every_corpus(path):
    text = read_corpus(path)
    report = ours("cl100k_base").evaluate(path, baselines={"o200k_base": ours("o200k_base")})
    assert [(r.tokenizer, r.group, r.documents) for r in report.rows] == [("tokenizer", "all", 1),
                                                                          ("o200k_base", "all", 1)]
    assert_row_is(report.row(), independent_row("cl100k_base", [text]))
    assert_row_is(report.row(tokenizer="o200k_base"), independent_row("o200k_base", [text]))
    assert report.bytes_per_token == report.row().bytes_per_token
    assert report.unused_tokens is report.row().unused_tokens


@needs_vocabs
def test_unused_tokens_include_the_special_tokens_and_only_real_ids():
    report = ours("cl100k_base").evaluate(["Hello world <|endoftext|>"], files=False)
    enc = tiktoken_encoding("cl100k_base")
    unused = set(report.unused_tokens.tolist())
    assert set(enc._special_tokens.values()) <= unused                # special tokens' text is encoded as text
    assert not unused & {100256, *range(100261, 100276)}              # no token has these ids in cl100k
    used = set(enc.encode_ordinary("Hello world <|endoftext|>"))
    assert unused == (set(enc._mergeable_ranks.values()) | set(enc._special_tokens.values())) - used


# -- groups --------------------------------------------------------------------------------------------

@needs_vocabs
def test_by_file_gives_each_file_its_row_and_all_of_them_the_sum():
    files = [shared_path("corpora", "multilingual", f"{lang}.txt") for lang in ("de", "ja", "hi")]
    report = ours("cl100k_base").evaluate(files, by="file", name="cl100k", baselines=["r50k_base"],
                                          vocabs=vocab_dir())            # a baseline by its name
    assert report.groups == [str(f) for f in files]
    texts = [read_corpus(f) for f in files]
    for name, row_name in (("cl100k_base", "cl100k"), ("r50k_base", "r50k_base")):
        for f, text in zip(files, texts):
            assert_row_is(report.row(str(f), row_name), independent_row(name, [text]))
        assert_row_is(report.row("all", row_name), independent_row(name, texts))
    assert report.row().documents == 3


def language_records(rng: random.Random) -> list[dict]:
    """Lines of three languages' texts, shuffled together, as records with a "lang" field."""
    records = []
    for lang in ("fr", "ru", "zh"):
        lines = read_corpus(shared_path("corpora", "multilingual", f"{lang}.txt")).splitlines(keepends=True)[:400]
        records += [{"lang": lang, "text": line, "id": k} for k, line in enumerate(lines)]
    rng.shuffle(records)
    return records


@needs_vocabs
def test_by_a_json_lines_field_and_by_a_records_key(tmp_path):
    records = language_records(random.Random(5))
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    tok = ours("o200k_base")
    from_file = tok.evaluate(path, by="lang")
    from_records = tok.evaluate(iter(records), by="lang")        # an iterator: read once
    assert sorted(from_file.groups) == ["fr", "ru", "zh"]
    for lang in ("fr", "ru", "zh"):
        texts = [r["text"] for r in records if r["lang"] == lang]
        assert_row_is(from_file.row(lang), independent_row("o200k_base", texts))
        assert from_file.row(lang).documents == len(texts)
    assert_row_is(from_file.row(), independent_row("o200k_base", [r["text"] for r in records]))
    assert from_records.to_dict() == from_file.to_dict()


def test_by_a_parquet_column(tmp_path):
    pa, pq = need("pyarrow"), need("pyarrow.parquet")
    texts = small_text().splitlines(keepends=True)[:300]
    langs = ["en" if k % 3 else "xx" for k in range(len(texts))]
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"body": texts, "lang": langs}), path, row_group_size=70)
    tok = bpe_fast.train([SMALL_CORPUS], 420, pattern="gpt2", progress="none")
    smaller = tok.truncated(300)
    report = tok.evaluate(path, by="lang", column="body", baselines={"smaller": smaller})
    for lang in ("en", "xx"):
        mine = [t for t, g in zip(texts, langs) if g == lang]
        row = report.row(lang)
        assert (row.documents, row.bytes, row.words) == (len(mine), sum(len(t.encode()) for t in mine),
                                                         sum(len(t.split()) for t in mine))
        assert row.tokens == sum(len(tok.encode_ordinary(t)) for t in mine)
        assert report.row(lang, "smaller").tokens == sum(len(smaller.encode_ordinary(t)) for t in mine)


def test_texts_and_files_give_the_same_report(tmp_path):
    texts = small_text().split("\n\n")[:50]
    tok = bpe_fast.train([SMALL_CORPUS], 350, progress="none")
    from_texts = tok.evaluate(texts)
    assert from_texts.row().documents == len(texts)
    assert from_texts.row().tokens == sum(len(tok.encode_ordinary(t)) for t in texts)
    folder = tmp_path / "docs"
    folder.mkdir()
    for k, t in enumerate(texts):
        (folder / f"{k:03}.txt").write_text(t, encoding="utf-8")
    assert tok.evaluate(folder).to_dict() == from_texts.to_dict()
    assert tok.evaluate(str(folder), by="file").groups == [str(folder / f"{k:03}.txt") for k in range(len(texts))]


# -- the report ------------------------------------------------------------------------------------------

def test_the_report_prints_a_table_and_converts():
    tok = bpe_fast.train([SMALL_CORPUS], 330, progress="none")
    report = tok.evaluate([{"text": "the goats ran", "g": 1}, {"text": "the cat", "g": "b"}], by="g",
                          baselines={"bytes": tok.truncated(256)})
    lines = str(report).splitlines()
    assert lines[0].split()[:3] == ["group", "tokenizer", "documents"] and len(lines) == 1 + 3 * 2
    assert report.groups == ["1", "b"]                     # a number names its group as JSON writes it
    row = report.row("b", "bytes")
    assert (row.bytes, row.tokens, row.words) == (7, 7, 2) and len(row.unused_tokens) == 256 - len(set(b"the cat"))
    as_dict = report.to_dict()
    assert json.loads(json.dumps(as_dict)) == as_dict and as_dict["rows"][-1]["unused"] == len(row.unused_tokens)
    with pytest.raises(ArgumentError, match="no row for group 'c'"):
        report.row("c")
    pandas = need("pandas")
    frame = report.to_pandas()
    assert isinstance(frame, pandas.DataFrame) and len(frame) == 6 and frame["tokens"].sum() == 2 * sum(
        r.tokens for r in report.rows if r.group == "all")


# -- bad input ------------------------------------------------------------------------------------------

def one_line_error(kind, pattern: str, call) -> None:
    with pytest.raises(kind, match=pattern) as caught:
        call()
    assert "\n" not in str(caught.value)


def test_bad_input_is_a_one_line_error_naming_the_argument(tmp_path):
    tok = bpe_fast.train([SMALL_CORPUS], 300, progress="none")
    one_line_error(InputError, r"missing\.txt: no such file",
                   lambda: tok.evaluate([SMALL_CORPUS, tmp_path / "missing.txt"]))
    # one word that looks like a file name is one: a missing file is reported, not evaluated as text
    one_line_error(InputError, r"^missing\.txt: no such file", lambda: tok.evaluate(["missing.txt"]))
    records = tmp_path / "r.jsonl"
    records.write_text('{"text": "a b", "lang": "en"}\n{"text": "c"}\n')
    one_line_error(InputError, r"r\.jsonl, line 2: no field 'lang'", lambda: tok.evaluate(records, by="lang"))
    one_line_error(ArgumentError, r"by='lang': .*small_corpus\.txt is a text file",
                   lambda: tok.evaluate(SMALL_CORPUS, by="lang"))
    one_line_error(InputError, r"item 0: a record without the field 'lang'",
                   lambda: tok.evaluate([{"text": "x"}], by="lang"))
    one_line_error(ArgumentError, r"by='file' groups files", lambda: tok.evaluate(["some text"], by="file"))
    one_line_error(TokenizerFileError, r"baselines\[1\] = 'no_such_base': no_such_base: no such file",
                   lambda: tok.evaluate(["some text"], baselines=[tok, "no_such_base"]))
    one_line_error(ArgumentError, "share a name", lambda: tok.evaluate(["some text"], baselines={"tokenizer": tok}))




# -- issue 49: JSON without NaN, a group per value -------------------------------------------------

def test_a_figure_of_no_text_is_null_in_the_dict(tmp_path):
    tok = bpe_fast.train_from_iterator(["hello hello hello"], 260, pattern="gpt2", workers=1, progress="none")
    report = tok.evaluate(["", ""])
    assert math.isnan(report.bytes_per_token)                   # the report's own figure: no number
    row = report.to_dict()["rows"][0]
    assert row["bytes_per_token"] is None and row["tokens_per_word"] is None
    json.dumps(report.to_dict(), allow_nan=False)               # and so JSON, as JSON has no NaN


def test_values_that_print_alike_are_groups_of_their_own():
    tok = bpe_fast.train_from_iterator(["a b c d e f"], 260, pattern="gpt2", workers=1, progress="none")
    records = [{"text": "a b", "k": 5}, {"text": "c d e", "k": "5"}, {"text": "e", "k": None},
               {"text": "f f", "k": "null"}, {"text": "g", "k": "en"}, {"text": "h", "k": '"5"'}, {"text": "i", "k": 5}]
    report = tok.evaluate(records, by="k")
    assert report.groups == ["5", '"5"', "null", '"null"', "en", json.dumps('"5"')]
    assert report.row("5").documents == 2 and report.row('"5"').documents == 1       # 5 twice, "5" once
    assert report.row("null").words == 1 and report.row('"null"').words == 2
