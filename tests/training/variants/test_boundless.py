"""BoundlessBPE (superword="boundless", boundless.py): the fast path against the slow reference
(boundless_reference.train_boundless_reference, encode_boundless_reference), hand cases of the definition,
the tokenizer's runs, files and the command line."""
from __future__ import annotations

import json
import pickle
import warnings
from typing import Any

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import Tokenizer
from bpe_fast.pretokenize import patterns
from bpe_fast.cli import main
from bpe_fast.errors import VocabSizeWarning
from bpe_fast.training.variants.boundless_reference import (encode_boundless_reference, phase_one, pretoken_units,
                                                            train_boundless_auto_reference, train_boundless_reference)

from ...conftest import corpus_params, examples, read_corpus, shared_path, small_text

SMALL = [small_text()] * 3


def boundless(docs, vocab_size, at, **kwargs) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabSizeWarning)      # small corpora run out of runs
        return bpe_fast.train_from_iterator(docs, vocab_size, superword="boundless", superword_at=at, workers=1,
                                            progress="none", **kwargs)


def boundless_files(files, vocab_size, at, **kwargs) -> Tokenizer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabSizeWarning)
        return bpe_fast.train(files, vocab_size, superword="boundless", superword_at=at, progress="none", **kwargs)


def pairs(array) -> list[tuple[int, int]]:
    return [tuple(p) for p in np.asarray(array).tolist()]


def training_segmentation(doc: str, pattern: str, merges, segmented: dict, eligible: str) -> list[int]:
    """A document as phase 2 of the reference left it: each pretoken by phase 1, each run as
    its last supermerge left it."""
    encode = phase_one(merges)
    units = pretoken_units(doc, pattern, encode, eligible)
    chunks = regex.findall(bpe_fast.pretokenize.patterns.resolve(pattern), doc)
    out: list[int] = []
    run: list[int] = []
    for chunk, unit in zip([*chunks, None], [*units, None]):
        if unit is not None:
            run.append(unit)
            continue
        out.extend(segmented[tuple(run)] if len(run) >= 2 else run)
        run = []
        if chunk is not None:
            out.extend(encode(chunk.encode()))
    return out


def check_against_reference(docs: list[str], vocab_size: int, at: int, pattern: str = "cl100k",
                            eligible: str = patterns.BOUNDLESS_ELIGIBLE, **kwargs) -> Tokenizer:
    """Fast == reference: the same merges, supermerges and ids; each document encodes to its
    training segmentation, which the reference encoder gives too."""
    tok = boundless(docs, vocab_size, at, pattern=pattern, boundless_eligible=eligible, **kwargs)
    merges, supers, segmented = train_boundless_reference(docs, pattern, at - 256, vocab_size - at,
                                                          eligible=eligible, **kwargs)
    first = 256 + len(merges)                     # at, unless phase 1 ran out of pairs
    assert pairs(tok.merges) == merges
    assert pairs(tok.supermerges) == supers
    assert tok.supermerge_ids.tolist() == list(range(first, first + len(supers)))
    for doc in docs:
        ids = tok.encode(doc)
        assert ids == training_segmentation(doc, pattern, merges, segmented, eligible)
        assert ids == encode_boundless_reference(doc, pattern, merges, supers, first, eligible)
        assert tok.decode(ids) == doc
    return tok


# -- fast == reference --------------------------------------------------------------------------

WORDS = [" the", " of", " a", " one", " cat", " sat", "The", " and", " the", "I", " I", "don", "'t", " é", " naïve",
         ",", ".", "\n", " 12", "7", " ", "  ", "(", "x", " mat", " on", "’s", "_y"]


@given(docs=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map("".join), min_size=1, max_size=6),
       at=st.integers(256, 300), extra=st.integers(0, 60), pattern=st.sampled_from(["cl100k", "gpt2", "o200k"]),
       eligible=st.sampled_from([patterns.BOUNDLESS_ELIGIBLE, patterns.BOUNDLESS_ELIGIBLE_V2]))
@settings(max_examples=examples(120), deadline=None)
def test_fast_equals_the_reference_on_random_corpora(docs, at, extra, pattern, eligible):
    check_against_reference(docs, at + extra, at, pattern, eligible)


@given(docs=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=30).map("".join), min_size=1, max_size=4),
       extra=st.integers(1, 40), limit=st.integers(2, 12), min_count=st.integers(0, 3))
@settings(max_examples=examples(60), deadline=None)
def test_fast_equals_the_reference_with_a_length_limit_and_a_minimum_count(docs, extra, limit, min_count):
    """max_token_length lays each unit out over its bytes (lengths in bytes); min_frequency stops both phases."""
    at = 280
    tok = boundless(docs, at + extra, at, max_token_length=limit, min_frequency=min_count)
    merges, supers, _ = train_boundless_reference(docs, "cl100k", at - 256, extra, min_count=min_count,
                                                  max_token_length=limit)
    assert pairs(tok.merges) == merges and pairs(tok.supermerges) == supers
    assert all(len(tok.token_bytes(int(i))) <= limit for i in tok.supermerge_ids)


def test_fast_equals_the_reference_on_a_real_slice():
    text = read_corpus(shared_path("corpora", "big.txt"))[:60_000]
    docs = text.split("\n\n")[:200]
    tok = check_against_reference(docs, 700, 450)
    assert len(tok.supermerges) == 250


def test_files_in_blocks_on_two_workers_and_the_regex_route_equal_the_reference(tmp_path):
    """Files cut into blocks (the native scanner, two worker processes) and the same pattern as a
    custom regex (files whole, Python's matches): the runs are the same, hence the tokenizer."""
    text = read_corpus(shared_path("corpora", "the-verdict.txt"))
    path = tmp_path / "verdict.txt"
    path.write_text(text, encoding="utf-8")
    native = bpe_fast.train([path], 900, superword="boundless", superword_at=600, workers=2, block_size=2048,
                            progress="none")
    custom = bpe_fast.train([path], 900, superword="boundless", superword_at=600, pattern=f"(?:{patterns.CL100K})",
                            workers=2, block_size=2048, progress="none")
    merges, supers, _ = train_boundless_reference([text], "cl100k", 344, 300, first_id=600)
    assert pairs(native.supermerges) == supers == pairs(custom.supermerges)
    assert pairs(native.merges) == merges == pairs(custom.merges)
    assert custom.encode(text) == native.encode(text) == encode_boundless_reference(text, "cl100k", merges, supers,
                                                                                     600)


def test_documents_lines_and_special_tokens_end_runs():
    """Runs stay inside a document: iterator documents, lines with lines=True, and the pieces
    between special tokens (also when encoding with the special token allowed)."""
    doc = " of the cat" * 30
    joined = boundless([doc + "<|endoftext|>" + doc], 400, 300, special_tokens=["<|endoftext|>"])
    split = boundless([doc, doc], 400, 300, special_tokens=["<|endoftext|>"])
    assert joined == split
    assert not any(b"<|" in joined.token_bytes(int(i)) for i in joined.supermerge_ids)
    ids = joined.encode(" of<|endoftext|> the", allowed_special="all")
    assert ids == joined.encode(" of") + [joined.special_tokens["<|endoftext|>"]] + joined.encode(" the")
    lines = boundless([" of\n the"] * 50, 300, 262, lines=True, pattern="gpt2")
    whole = boundless([" of", "\n the"] * 50, 300, 262, pattern="gpt2")
    assert pairs(lines.supermerges) == pairs(whole.supermerges)


# -- hand cases of the definition ---------------------------------------------------------------

def test_of_the_and_a_chain():
    docs = [" one of the cat, of the mat." * 20]
    tok = boundless(docs, 300, 290)
    made = {tok.token_bytes(int(i)): (tok.token_bytes(int(a)), tok.token_bytes(int(b)))
            for (a, b), i in zip(tok.supermerges, tok.supermerge_ids)}
    assert made[b" of the"] == (b" of", b" the")
    chained = [t for t, (a, b) in made.items() if b in made or a in made]   # a superword joins again
    assert chained and all(t.startswith(b" ") for t in chained)
    assert tok.encode(" one of the cat") == [tok.encode(" one of the cat")[0]]    # the whole run is one token


@pytest.mark.parametrize("between", [",", "\n", " 7", "."])
def test_a_run_is_broken_by_punctuation_a_newline_or_a_digit(between):
    docs = [f" of{between} the. of the." * 40]
    tok = boundless(docs, 400, 300)
    learned = [tok.token_bytes(int(i)) for i in tok.supermerge_ids]
    assert b" of the" in learned
    assert not any(between.encode() in t for t in learned)
    assert tok.encode(f" of{between} the")[0] == tok.encode(" of")[0]


def test_a_alone_and_I_alone_are_not_eligible_but_space_a_is():
    assert regex.search(patterns.BOUNDLESS_ELIGIBLE, " a") and not regex.search(patterns.BOUNDLESS_ELIGIBLE, "a")
    docs = ["I sat, a sat, I am. a cat. A cat" + " a cat" * 10 + "\nI sat\nI sat\na cat\na cat"] * 10
    tok = boundless(docs, 330, 300)
    learned = [tok.token_bytes(int(i)) for i in tok.supermerge_ids]
    assert b" a cat" in learned
    assert not any(t.startswith((b"I ", b"a ", b"A ")) for t in learned)
    v2 = boundless(docs, 330, 300, boundless_eligible=patterns.BOUNDLESS_ELIGIBLE_V2)
    assert any(v2.token_bytes(int(i)).startswith((b"I ", b"a ")) for i in v2.supermerge_ids)   # \p{L}: they are


def test_a_supermerge_never_joins_partial_words():
    """Every superword is two or more whole pretokens, each one phase-1 token and eligible."""
    text = read_corpus(shared_path("corpora", "tinyshakespeare.txt"))[:300_000]
    tok = boundless([text], 3000, 2000)
    phase = tok.without_supermerges()
    splitter = regex.compile(patterns.CL100K)
    for i in tok.supermerge_ids.tolist():
        pieces = splitter.findall(tok.token_bytes(i).decode())
        assert len(pieces) >= 2
        for piece in pieces:
            assert len(phase.encode(piece)) == 1 and regex.search(patterns.BOUNDLESS_ELIGIBLE, piece)
        assert text.count("".join(pieces)) > 0


def test_boundless_at_vocab_size_is_plain_training():
    plain = bpe_fast.train_from_iterator(SMALL, 500, workers=1, progress="none")
    same = boundless(SMALL, 500, 500)
    assert same == plain and not same.is_boundless
    longer = boundless(SMALL, 530, 500)
    assert longer.truncated(500) == plain and longer.without_supermerges() == plain
    assert longer.truncated(510) == boundless(SMALL, 510, 500)      # supermerges are a prefix too
    assert boundless(SMALL, [510, 530], 500) == [longer.truncated(510), longer]


def test_identical_neighbours_count_as_the_plain_kernel_counts_them():
    """" the the the" holds (" the", " the") twice, as "aaa" holds (a, a) twice in plain BPE;
    Kensho's code would count it once (count == merges done)."""
    tok = boundless([" the the the,"] * 5 + [" of the,"] * 9, 300, 270)
    assert tok.token_bytes(int(tok.supermerge_ids[0])) == b" the the"       # 10 against 9


# -- the tokenizer ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trained():
    text = read_corpus(shared_path("corpora", "big.txt"))[:400_000]
    tok = boundless([text], 2000, 1500)
    merges, supers = pairs(tok.merges), pairs(tok.supermerges)
    return tok, merges, supers


@given(text=st.lists(st.sampled_from([*"the of and a I’'_ ,.\n12éß", " the", " of the", " and", " which", " was",
                                      " in the", " it"]), max_size=120).map("".join))
@settings(max_examples=examples(200), deadline=None)
def test_encoding_equals_the_reference_encoder(trained, text):
    tok, merges, supers = trained
    ids = tok.encode(text)
    assert ids == encode_boundless_reference(text, "cl100k", merges, supers, 1500)
    assert tok.decode(ids) == text
    assert tok.count_tokens(text) == len(ids) and tok.encode_to_numpy(text).tolist() == ids


def test_long_runs_and_batches(trained):
    """Runs longer than 128 units take the heap; batches on threads give what encode gives."""
    tok, merges, supers = trained
    text = " and the old man said that he was in the house of the king" * 40
    ids = tok.encode(text)
    assert ids == encode_boundless_reference(text, "cl100k", merges, supers, 1500)
    texts = [text, " of the", "", "The end.", text[:500]] * 20
    assert tok.encode_batch(texts, workers=2) == [tok.encode(t) for t in texts]
    flat, offsets = tok.encode_batch_to_numpy(texts, workers=2)
    assert flat.tolist() == [i for t in texts for i in tok.encode(t)]
    assert tok.count_tokens_batch(texts, workers=2).tolist() == [len(tok.encode(t)) for t in texts]
    regex_tok = Tokenizer(tok.merges, f"(?:{patterns.CL100K})", supermerges=tok.supermerges,
                          supermerge_ids=tok.supermerge_ids)
    assert regex_tok.encode(text) == ids and regex_tok.encode_batch(texts, workers=2) == tok.encode_batch(texts)


@pytest.mark.parametrize("path", corpus_params())
def test_round_trip_on_every_shared_corpus(trained, path):
    tok = trained[0]
    text = read_corpus(path)
    assert tok.decode(tok.encode(text)) == text


def test_save_load_and_other_formats_refuse(trained, tmp_path):
    tok = trained[0]
    tok.save(tmp_path / "tok.json")
    back = bpe_fast.load(tmp_path / "tok.json")
    assert back == tok and back.boundless_eligible == patterns.BOUNDLESS_ELIGIBLE
    assert pickle.loads(pickle.dumps(tok)).encode(" of the king") == tok.encode(" of the king")
    for name in ("tok.tiktoken", "tokenizer.json", "tok.model", "vocab.bpe"):
        with pytest.raises(bpe_fast.VocabularyError, match="cannot hold a BoundlessBPE tokenizer"):
            tok.save(tmp_path / name)
    with pytest.raises(bpe_fast.VocabularyError, match="BoundlessBPE"):
        tok.with_huggingface_ids()
    plain = tok.without_supermerges()
    plain.save(tmp_path / "plain.json")
    assb = (tmp_path / "plain.json").read_text()
    assert '"version": 1' in assb and "supermerges" not in assb     # plain files stay as they were


def test_a_version_1_file_with_supermerges_is_read_with_them(trained, tmp_path):
    """bpe_fast writes supermerges as version 4; a version-1 file that has them (made by hand) is
    read with them, as every bpe_fast has read it, never without them."""
    data = trained[0].to_dict()
    assert data["version"] == 4 and data["supermerges"]
    data["version"] = 1
    (tmp_path / "v1.json").write_text(json.dumps(data))
    back = bpe_fast.load(tmp_path / "v1.json")
    assert back == trained[0] and len(back.supermerges) == len(trained[0].supermerges)


def test_arguments_are_checked_before_any_text_is_read():
    with pytest.raises(bpe_fast.ArgumentError, match="needs superword_at"):
        bpe_fast.train_from_iterator(SMALL, 600, superword="boundless")
    with pytest.raises(bpe_fast.ArgumentError, match="superword must be one of"):
        bpe_fast.train_from_iterator(SMALL, 600, superword="picky", superword_at=500)
    with pytest.raises(bpe_fast.ArgumentError, match="does not compile"):
        bpe_fast.train_from_iterator(SMALL, 600, superword="boundless", superword_at=500, boundless_eligible="(")
    with pytest.raises(bpe_fast.ArgumentError, match="goes with"):
        bpe_fast.train_from_iterator(SMALL, 600, boundless_eligible=r"\p{L}")
    with pytest.raises(bpe_fast.ArgumentError, match="tie_break"):
        bpe_fast.train_from_iterator(SMALL, 600, superword="boundless", superword_at=500, tie_break="huggingface")
    base = bpe_fast.train_from_iterator(SMALL, 300, workers=1, progress="none")
    with pytest.raises(bpe_fast.ArgumentError, match="base="):
        bpe_fast.train_from_iterator(SMALL, 600, superword="boundless", superword_at=500, base=base)
    with pytest.raises(bpe_fast.ArgumentError, match="superword_at=700 must be"):
        bpe_fast.train_from_iterator(SMALL, 600, superword="boundless", superword_at=700)
    with pytest.raises(bpe_fast.ArgumentTypeError, match="give a list"):
        bpe_fast.train_from_iterator(iter(SMALL), 600, superword="boundless", superword_at=500)


def test_the_command_line(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(small_text() * 3, encoding="utf-8")
    code = main(["train", str(corpus), "--vocab-size", "700", "--superword-at", "600", "--superword", "boundless",
                 "-o", str(tmp_path / "tok.tiktoken")])     # refused before training: the format cannot hold it
    assert code == 2 and "cannot hold a BoundlessBPE tokenizer" in capsys.readouterr().err
    assert not (tmp_path / "tok.tiktoken").exists()
    assert main(["train", str(corpus), "--vocab-size", "650", "--superword-at", "600", "--superword", "boundless",
                 "--boundless-eligible", r"\p{L}", "-o", str(tmp_path / "tok.json"), "-q"]) == 0
    out = capsys.readouterr().out
    assert "runs " in out and "supermerges -> vocab size 650" in out
    assert main(["train", str(corpus), "--vocab-size", "650", "--superword-at", "auto", "--superword", "boundless",
                 "-o", str(tmp_path / "auto.json"), "-q"]) == 0
    assert bpe_fast.load(tmp_path / "auto.json") == boundless([read_corpus(corpus)], 650, "auto")
    tok = bpe_fast.load(tmp_path / "tok.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VocabSizeWarning)
        assert tok == bpe_fast.train([corpus], 650, superword="boundless", superword_at=600,
                                     boundless_eligible=r"\p{L}", progress="none")


def test_runs_that_may_hold_a_line_end_keep_files_whole(tmp_path, monkeypatch):
    """Blocks are cut after line ends, where the chunk before holds the "\n": with an
    eligibility that takes such chunks (here every chunk), a run may cross the cut, so neither
    the counting nor encode_files cuts the text; with the default one both do, and agree."""
    from bpe_fast.counting import corpus as count_corpus, workers as counting
    from bpe_fast.prepare import corpus as encode_corpus
    rng = np.random.default_rng(0)
    words = "the cat sat on a mat and then it ran off to see the big dog".split()
    text = "".join(" ".join(rng.choice(words, rng.integers(3, 10))) + "\n" for _ in range(800))
    path = tmp_path / "lines.txt"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(encode_corpus, "BLOCK_SIZE", 1000)
    for eligible, crosses in ((r"[\s\S]", True), (patterns.BOUNDLESS_ELIGIBLE, False)):
        tok = boundless_files([path], 330, 290, boundless_eligible=eligible, workers=2, block_size=1024)
        merges, supers, _ = train_boundless_reference([text], "cl100k", 34, 40, eligible=eligible)
        assert pairs(tok.supermerges) == supers and tok.runs_cross_line_ends == crosses
        ids = tok.encode(text)
        assert ids == encode_boundless_reference(text, "cl100k", merges, supers, 256 + len(merges), eligible)
        encode_corpus.encode_files(tok, [path], tmp_path / "ids.bin", format="bin", progress="none")
        assert np.fromfile(tmp_path / "ids.bin", "<u2").tolist() == ids
    units = bpe_fast.training.variants.boundless.units(tok.without_supermerges(), r"[\s\S]")

    def runs(block_size: int):
        config = counting.make_config("cl100k", (), counting=bpe_fast.training.variants.boundless.RunCounting(units))
        options = counting.CountOptions.for_files(workers=2, progress="none", block_size=block_size)
        return count_corpus.count_inputs([path], config, options)

    assert runs(1024) == runs(1 << 30)
    monkeypatch.setattr(counting.CountConfig, "cut", property(lambda self: self.splitter.cut))
    assert runs(1024) != runs(1 << 30)         # cut after every line end, runs would be split


def test_normalized_training_is_training_on_normalized_text():
    import unicodedata
    docs = ["ﬁne naïve café, the ﬁne café" * 20, " Ｔhe ﬁne cafe\u0301 of the town" * 10]
    normal = [unicodedata.normalize("NFKC", d) for d in docs]
    tok = boundless(docs, 340, 300, normalize="nfkc")
    assert pairs(tok.supermerges) == pairs(boundless(normal, 340, 300).supermerges) != []
    assert tok.encode(docs[0]) == tok.encode(normal[0])


def test_a_boundless_base_is_refused_and_convert_says_why(trained, tmp_path, capsys):
    tok = trained[0]
    with pytest.raises(bpe_fast.ArgumentError, match="without_supermerges"):
        bpe_fast.train_from_iterator(SMALL, tok.vocab_size + 10, base=tok)
    tok.save(tmp_path / "tok.json")
    assert main(["convert", str(tmp_path / "tok.json"), str(tmp_path / "tokenizer.json")]) == 2
    assert "cannot hold a BoundlessBPE tokenizer" in capsys.readouterr().err


# -- superword_at="auto": paper 2's interleaving ------------------------------------------------

@given(docs=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map("".join), min_size=1, max_size=6),
       n=st.integers(0, 120), eligible=st.sampled_from([patterns.BOUNDLESS_ELIGIBLE, patterns.BOUNDLESS_ELIGIBLE_V2]))
@settings(max_examples=examples(100), deadline=None)
def test_auto_equals_paper_twos_loop(docs, n, eligible):
    tok = boundless(docs * 3, 256 + n, "auto", boundless_eligible=eligible)
    merges, supers = train_boundless_auto_reference(docs * 3, "cl100k", n, eligible)
    assert pairs(tok.merges) == merges and pairs(tok.supermerges) == supers
    first = 256 + len(merges)
    assert tok.supermerge_ids.tolist() == list(range(first, first + len(supers)))
    for doc in docs:
        assert tok.encode(doc) == encode_boundless_reference(doc, "cl100k", merges, supers, first, eligible)


def test_auto_finds_the_split_and_each_size_is_its_own_prefix():
    text = read_corpus(shared_path("corpora", "big.txt"))[:300_000]
    sizes = [1000, 1500, 2000]
    toks = boundless([text], sizes, "auto", special_tokens=["<|endoftext|>"])
    for size, tok in zip(sizes, toks):
        assert tok.vocab_size == size and tok.is_boundless
        assert tok == boundless([text], size, "auto", special_tokens=["<|endoftext|>"])
        assert tok.special_tokens["<|endoftext|>"] == 256 + len(tok.merges)        # after the merges kept
        assert tok.supermerge_ids[0] == 257 + len(tok.merges)
    shares = [len(t.supermerges) / t.vocab_size for t in toks]
    assert 0 < shares[0] <= shares[-1] < 0.5
    with pytest.raises(bpe_fast.ArgumentError, match='goes with superword="boundless"'):
        bpe_fast.train_from_iterator(SMALL, 600, superword_at="auto")
