"""The profiling ladder (bpe_fast.workshop.ladder): its rungs, in order, learn correct merges and
agree with each other as their tie rules say; the workload every rung trains on. (The harness
behind ``bpe-fast profile``: test_harness.py; its command line: test_cli.py; each rung: test_v*.py.)

No timing is asserted: timings are what the harness measures, not what it must produce.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpe_fast.errors import BpeFastError
from bpe_fast.workshop.ladder import RUNGS, Workload, read_prefix, select, stdlib_text
from bpe_fast.training.reference import train_reference

from ...conftest import examples
from .conftest import TEXTS, assert_most_frequent_each_time

# Rungs that break ties like the reference (smallest pair), and rungs that share v1's running
# maximum (first top pair in dict order) and must therefore agree with each other exactly.
LIKE_REFERENCE = ("v5", "v6")
LIKE_V1 = ("v1", "v3", "v4")


def check_rungs(text: str, pattern, n_merges: int) -> None:
    work = Workload.from_text(text, pattern)
    reference = train_reference(work.word_counts, n_merges)
    learned = {name: rung.train(work.chunks, n_merges) for name, rung in RUNGS.items()}
    for name, merges in learned.items():
        assert all(isinstance(a, int) and isinstance(b, int) for a, b in merges), name
        assert_most_frequent_each_time(merges, work.word_counts, n_merges)
    for name in LIKE_REFERENCE:
        assert learned[name] == reference, name
    for name in LIKE_V1:
        assert learned[name] == learned["v1"], name


@pytest.mark.parametrize("name", TEXTS)
@pytest.mark.parametrize("pattern", ["gpt2", "none"])
def test_every_rung_learns_valid_merges(name, pattern):
    check_rungs(TEXTS[name], pattern, 30)


@settings(max_examples=examples(40), deadline=None)
@given(st.text(alphabet="ab \x00é\n", max_size=60), st.integers(1, 12))
def test_every_rung_on_random_text(text, n_merges):
    if text:
        check_rungs(text, "gpt2", n_merges)


def test_workload_reads_only_the_prefix_and_rejects_bad_files(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("héllo wörld " * 100, encoding="utf-8")
    work = Workload.load(corpus, chars=11, pattern="gpt2")
    assert work.text == "héllo wörld" and work.chunks == ["héllo", " wörld"]
    assert work.describe()["unique_chunks"] == 2
    (tmp_path / "bad.txt").write_bytes(b"ok \xff\xfe")
    with pytest.raises(BpeFastError, match="not UTF-8"):
        Workload.load(tmp_path / "bad.txt", chars=100)
    with pytest.raises(BpeFastError, match="no such file"):
        Workload.load(tmp_path / "missing.txt")
    with pytest.raises(BpeFastError, match="chars must be a positive"):
        Workload.load(corpus, chars=0)
    with pytest.raises(BpeFastError, match="holds no text"):
        Workload.from_text("", "gpt2")


def test_select_keeps_ladder_order():
    assert [r.name for r in select("v6, v1,v3")] == ["v1", "v3", "v6"]
    with pytest.raises(BpeFastError, match="unknown rung"):
        select("")


def test_every_rung_names_its_idea_its_tie_rule_and_the_functions_line_profile_shows():
    assert list(RUNGS) == ["v1", "v2", "v3", "v4", "v5", "v6"]
    assert [r.cost for r in RUNGS.values()] == ["recount"] * 4 + ["incremental"] * 2
    for rung in RUNGS.values():
        assert rung.idea and rung.tie_rule and callable(rung.impl.train)
        assert rung.hot_functions and all(callable(f) for f in rung.hot_functions)


def test_the_built_in_corpus_and_a_files_prefix_are_read_to_the_characters_asked(tmp_path):
    text, source = stdlib_text(5000)
    assert len(text) == 5000 and source.startswith("Python standard library (")
    (tmp_path / "c.txt").write_text("naïve " * 10, encoding="utf-8")
    assert read_prefix(tmp_path / "c.txt", 8) == "naïve na"
    with pytest.raises(BpeFastError, match="is a directory"):
        read_prefix(tmp_path, 8)
