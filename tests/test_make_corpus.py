"""benchmarks/make_corpus.py's kinds of long-tailed corpus, made tiny (blocks of 64 KiB): each is
the same for a seed and another for another seed, valid UTF-8 in whole lines, and has the tail
and the traits its docstring advertises."""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import regex

import bpe_fast

from .conftest import ROOT, SHARED

sys.path.insert(0, str(ROOT / "benchmarks"))
import make_corpus  # noqa: E402

KINDS = [pytest.param(k, marks=pytest.mark.skipif(SHARED is None and make_corpus.KINDS[k].needs_data,
                                                  reason="needs the shared corpora"))
         for k in make_corpus.KINDS if k != "mutated"]          # mutated: a 35 MB copy a block; see below


@pytest.fixture(autouse=True, scope="module")
def small_blocks():
    """Blocks of 64 KiB, and languages made from 50,000 characters of each (seconds less)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(make_corpus, "BLOCK", 1 << 16)
        patch.setattr(make_corpus, "LANGUAGE_SAMPLE", 50_000)
        make_corpus.real_languages.cache_clear()
        yield
    make_corpus.real_languages.cache_clear()


def options(**given) -> argparse.Namespace:
    defaults = dict(zipf=1.1, lexicon=30_000_000, real=0.2, typos=0.3, mutate=0.045)
    return argparse.Namespace(**{**defaults, **given})


def make(tmp_path: Path, kind: str, size: int, seed: int = 0, **given) -> bytes:
    out = tmp_path / f"{kind}-{seed}-{size}-{len(given)}.txt"
    make_corpus.write_corpus(out, size, kind, seed, options(**given))
    return out.read_bytes()


@pytest.fixture(scope="module")
def mix33_lines() -> set[bytes]:
    """mix33's lines, and each with its digits made 0 (neardup gives numbers new digits)."""
    lines = make_corpus.mix33_bytes().splitlines()
    return set(lines) | {line.translate(ZEROS) for line in lines}


ZEROS = bytes.maketrans(b"0123456789", b"0000000000")


def distinct_chunks(data: bytes) -> int:
    return len(bpe_fast.count_from_iterator([data], pattern="gpt2", workers=1, progress="none"))


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_is_its_seed_s_text_in_whole_lines_of_utf8(tmp_path, kind):
    first = make(tmp_path, kind, 150_000, seed=1)
    assert first == make(tmp_path, kind, 150_000, seed=1)
    assert first != make(tmp_path, kind, 150_000, seed=2)
    assert 100_000 < len(first) <= 150_000 and first.endswith(b"\n")
    first.decode("utf-8")                                    # valid UTF-8 throughout


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_has_a_long_tail(tmp_path, kind):
    """Distinct chunks keep coming: four times the text gives well over twice the distinct chunks
    (text repeated, as mix33 repeated, would give none new)."""
    small, big = (distinct_chunks(make(tmp_path, kind, size)) for size in (100_000, 400_000))
    assert big > 2.2 * small, (small, big)


def test_zipf_follows_its_exponent(tmp_path):
    """A steeper law repeats the head more: fewer distinct words, a more frequent top word."""
    words = {z: Counter(re.findall(rb"[a-z]+", make(tmp_path, "zipf", 300_000, zipf=z))) for z in (1.05, 1.3)}
    assert len(words[1.3]) < 0.7 * len(words[1.05])
    top = {z: c.most_common(1)[0][1] / sum(c.values()) for z, c in words.items()}
    assert top[1.3] > 1.5 * top[1.05]
    assert make(tmp_path, "zipf", 10_000, lexicon=10_000_000) != make(tmp_path, "zipf", 10_000)


@pytest.mark.skipif(SHARED is None, reason="needs the shared corpora")
def test_scripts_mixes_many_scripts_and_real_lines(tmp_path, mix33_lines):
    data = make(tmp_path, "scripts", 400_000)
    text = data.decode()
    for script in ("Latin", "Cyrillic", "Greek", "Arabic", "Hebrew", "Devanagari", "Bengali", "Tamil", "Han",
                   "Hiragana", "Hangul", "Thai", "Armenian", "Georgian"):
        assert regex.search(rf"\p{{Script={script}}}", text), script
    lines = data.splitlines()
    spliced = sum(line in mix33_lines for line in lines) / len(lines)
    assert 0.1 < spliced < 0.35                              # --real 0.2 of the lines


@pytest.mark.skipif(SHARED is None, reason="needs the shared corpora")
def test_code_holds_hashes_uuids_and_valid_json(tmp_path):
    text = make(tmp_path, "code", 300_000).decode()
    assert re.search(r" sha=[0-9a-f]{40}\n", text)
    assert re.search(r" request_id=[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n", text)
    records = [json.loads(line) for line in text.splitlines() if line.startswith('{"id": ')]
    assert len(records) > 100 and all(r["url"].startswith("https://") and "@" in r["email"] for r in records)
    code = set((make_corpus.corpus_dir() / "code_python.txt").read_text().splitlines())
    assert any(line in code and len(line) > 30 for line in text.splitlines())     # real code spliced in


@pytest.mark.skipif(SHARED is None, reason="needs the shared corpora")
def test_neardup_copies_paragraphs_with_typos(tmp_path, mix33_lines):
    clean, typed = (make(tmp_path, "neardup", 300_000, typos=t) for t in (0.0, 0.3))
    body = [line for line in clean.splitlines() if line and not re.match(rb"(Posted|Last edited|Shared|Reply)", line)]
    assert all(line.translate(ZEROS) in mix33_lines for line in body)     # without typos: real lines, new numbers
    assert distinct_chunks(typed) > 1.1 * distinct_chunks(clean)          # the typos are new chunks
    typed_text = typed.decode()
    footers = re.findall(r"^(?:Posted by|Last edited by|Shared by|Reply from) \S+ on \w+ \d+, 20\d\d \| \d+ views",
                         typed_text, re.M)
    assert len(footers) > 100


def test_lay_out_and_interleave_put_rows_in_order():
    a = make_corpus.Table.of([b"x", b"yy", b""]).take(np.array([1, 0, 2, 1]))
    b = make_corpus.Field.const(b"-", 4, np.array([True, False, True, True]))
    data, lengths = make_corpus.lay_out([a, b])
    assert data.tobytes() == b"yy-x-yy-" and lengths.tolist() == [3, 1, 1, 3]
    parts = [(np.frombuffer(b"aabbb", np.uint8), np.array([2, 3])), (np.frombuffer(b"Z", np.uint8), np.array([1]))]
    assert make_corpus.interleave(parts, np.array([0, 1, 0])).tobytes() == b"aaZbbb"
