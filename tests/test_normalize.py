"""Unicode normalization (``normalize="nfc"|"nfkc"``) across the stages: one rule for training,
encoding and the formats that can say it. Training on normalized text equals training on text
normalized beforehand; encoding equals Hugging Face's with our tokenizer.json. (Where a file may be
cut under a normalization, and the Unicode facts it rests on: tests/pretokenize/test_splitter.py;
counting normalized: tests/counting/test_corpus.py; word tables: tests/counting/test_wordtable.py.)"""
from __future__ import annotations

import json
import unicodedata
from typing import Any, Literal

import numpy as np
import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import Tokenizer
from bpe_fast.cli import main

from .conftest import corpus_files, examples, need, needs_data, read_corpus, small_text

FORMS: dict[str, Literal["NFC", "NFKC"]] = {"nfc": "NFC", "nfkc": "NFKC"}

# Text that normalization changes: compatibility characters (ligatures, circled and full-width
# forms, fractions), decomposed letters NFC composes, marks after a newline, and the NFKC
# characters that become a space or "/" (U+00A8, U+FF0F) right after a line end.
ODD = ("ﬁne ﬂow ① ② ＡＢＣ ｄｅｆ café cafe\u0301 A\u030a Å \u212b ½ ﬀ x\u00a8y 한국 \u1112\u1161\u11ab "
       "\u1f71\u0345 e\u0301\u0316 =\u0338 \u2460\n\u0301abc\n\u00a8def!\n\uff0fghi\nﬁ\n")
DOCS = [small_text(), ODD * 40, "\n".join(f"{ODD[k:]}{k}" for k in range(0, len(ODD), 7))]


def norm(text: str, form: str) -> str:
    return unicodedata.normalize(FORMS[form], text)


# -- training --------------------------------------------------------------------------------------

@pytest.mark.parametrize("form", ["nfc", "nfkc"])
def test_training_normalized_equals_training_on_normalized_text(form):
    direct = bpe_fast.train_from_iterator(DOCS, 700, normalize=form, workers=1, progress="none")
    before = bpe_fast.train_from_iterator([norm(d, form) for d in DOCS], 700, workers=1, progress="none")
    assert np.array_equal(direct.merges, before.merges) and direct.normalize == form and before.normalize is None
    plain = bpe_fast.train_from_iterator(DOCS, 700, workers=1, progress="none")
    assert not np.array_equal(plain.merges, direct.merges)                  # the normalization mattered


def test_special_tokens_are_found_in_the_normalized_text():
    # Full-width "<" and ">" become "<" and ">" under NFKC: the special token is there after it.
    docs = ["one ＜|endoftext|＞ two <|endoftext|> three"] * 20
    table = bpe_fast.count_from_iterator(docs, special_tokens=["<|endoftext|>"], normalize="nfkc", workers=1,
                                         progress="none")
    assert not [w for w in table.as_dict() if b"endoftext" in w]
    tok = bpe_fast.train_from_iterator(docs, 260, special_tokens=["<|endoftext|>"], normalize="nfkc", workers=1,
                                       progress="none")
    eot = tok.special_tokens["<|endoftext|>"]
    assert tok.encode("a＜|endoftext|＞b", allowed_special="all").count(eot) == 1
    with pytest.raises(bpe_fast.EncodingError, match="special token '<\\|endoftext\\|>' at character 1 .of its NFKC"):
        tok.encode("a＜|endoftext|＞b")


def test_a_special_token_normalization_changes_is_refused():
    with pytest.raises(bpe_fast.ArgumentError, match="'ﬁ' is not in NFKC form .it becomes 'fi'"):
        bpe_fast.train_from_iterator(["text"], 300, special_tokens=["ﬁ"], normalize="nfkc")
    with pytest.raises(bpe_fast.ArgumentError, match="not in NFC form"):
        bpe_fast.count_from_iterator(["text"], special_tokens=["e\u0301"], normalize="nfc")
    with pytest.raises(bpe_fast.VocabularyError, match="'①' is not in NFKC form"):
        Tokenizer([], None, ["①"], normalize="nfkc")
    assert Tokenizer([], None, ["ﬁ"], normalize="nfc").special_tokens == {"ﬁ": 256}   # NFC keeps it


def test_normalize_is_checked_before_anything_is_read():
    def docs():
        raise AssertionError("the corpus was read")
        yield "never"

    bad_values: list[Any] = ["NFD", "nfkd", "lower", 1]         # wrong on purpose
    for bad in bad_values:
        with pytest.raises(bpe_fast.ArgumentError, match="normalize must be None, 'nfc' or 'nfkc'"):
            bpe_fast.train_from_iterator(docs(), 300, normalize=bad)
    assert Tokenizer([], normalize="NFKC").normalize == "nfkc"


def test_a_base_passes_on_its_normalization():
    base = bpe_fast.train_from_iterator(DOCS, 400, normalize="nfkc", workers=1, progress="none")
    more = bpe_fast.train_from_iterator(DOCS, 700, base=base, workers=1, progress="none")
    assert more.normalize == "nfkc"
    assert more == bpe_fast.train_from_iterator(DOCS, 700, normalize="nfkc", workers=1, progress="none")
    assert more.truncated(500).normalize == "nfkc" and more.with_huggingface_ids().normalize == "nfkc"
    other = bpe_fast.train_from_iterator(DOCS, 700, base=base, normalize=None, workers=1, progress="none")
    assert other.normalize is None and other.encode("ﬁ") != more.encode("ﬁ")


# -- encoding --------------------------------------------------------------------------------------

@pytest.mark.parametrize("pattern", ["cl100k", r"\w+|[^\w\s]+|\s+", None])
def test_every_encoding_path_encodes_the_normalized_text(tmp_path, pattern):
    tok = bpe_fast.train_from_iterator(DOCS, 600, pattern=pattern, normalize="nfkc", special_tokens=["<|eot|>"],
                                       workers=1, progress="none")
    plain = Tokenizer(tok.merges, tok.pattern, tok.special_tokens)          # the same, without normalizing
    texts = [ODD, ODD + "<|eot|>" + ODD[::-1], "ﬁ①Ａ\u00a8", ""]
    normal = [norm(t, "nfkc") for t in texts]
    assert [tok.encode(t, allowed_special="all") for t in texts] == [plain.encode(t, allowed_special="all")
                                                                     for t in normal]
    assert [tok.encode_ordinary(t) for t in texts] == [plain.encode_ordinary(t) for t in normal]
    assert tok.encode_batch(texts, allowed_special="all") == plain.encode_batch(normal, allowed_special="all")
    assert tok.encode_ordinary_batch(texts, workers=2) == plain.encode_ordinary_batch(normal)
    assert tok.encode_to_numpy(texts[1], allowed_special="all").tolist() == plain.encode(normal[1],
                                                                                        allowed_special="all")
    ids, offsets = tok.encode_batch_to_numpy(texts, disallowed_special=())
    flat, flat_offsets = plain.encode_batch_to_numpy(normal, disallowed_special=())
    assert ids.tolist() == flat.tolist() and offsets.tolist() == flat_offsets.tolist()
    assert tok.count_tokens(texts[0]) == len(plain.encode(normal[0]))
    assert tok.count_tokens_batch(texts, disallowed_special=()).tolist() == \
        plain.count_tokens_batch(normal, disallowed_special=()).tolist()
    assert [tok.decode(tok.encode(t, allowed_special="all")) for t in texts] == normal    # decode: the normal form
    with pytest.raises(bpe_fast.ArgumentTypeError, match="texts.1. must be a str"):
        tok.encode_batch(["a", 5])  # type: ignore[list-item]


def test_encoding_a_corpus_normalizes_it(tmp_path, capsys):
    tok = bpe_fast.train_from_iterator(DOCS, 600, normalize="nfkc", workers=1, progress="none")
    tok.save(tmp_path / "tok.json")
    text = ODD * 30
    (tmp_path / "in.txt").write_text(text, encoding="utf-8")
    bpe_fast.encode_files(tok, [tmp_path / "in.txt"], tmp_path / "out.bin", format="bin", progress="none")
    ids, offsets = bpe_fast.load_bin(tmp_path / "out.bin")
    assert ids.tolist() == tok.encode(text) and offsets.tolist() == [0, len(ids)]
    assert main(["encode", "-t", str(tmp_path / "tok.json"), str(tmp_path / "in.txt"), "--lines",
                 "--format", "json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines == [tok.encode(line) for line in text.splitlines(keepends=True)]


# -- formats -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nfkc_tok() -> Tokenizer:
    return bpe_fast.train_from_iterator(DOCS, 600, normalize="nfkc", special_tokens=["<|endoftext|>"], workers=1,
                                        progress="none")


@pytest.mark.parametrize("name", ["tok.json", "tokenizer.json", "tok.tiktoken"])
def test_formats_that_can_say_it_keep_the_normalization(tmp_path, nfkc_tok, name):
    nfkc_tok.save(tmp_path / name)
    loaded = bpe_fast.load(tmp_path / name)
    assert loaded == nfkc_tok and loaded.normalize == "nfkc"
    assert loaded.encode(ODD) == nfkc_tok.encode(ODD)


def test_the_json_files_say_it_and_are_version_2_only_then(tmp_path, nfkc_tok):
    nfkc_tok.save(tmp_path / "tok.json")
    nfkc_tok.save(tmp_path / "t.tiktoken")
    nfkc_tok.save(tmp_path / "tokenizer.json")
    for file in ("tok.json", "t.tiktoken.json"):
        data = json.loads((tmp_path / file).read_text(encoding="utf-8"))
        assert (data["version"], data["normalize"]) == (2, "nfkc")
    hf = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    assert hf["normalizer"] == {"type": "NFKC"} and all(t["normalized"] for t in hf["added_tokens"])
    plain = Tokenizer(nfkc_tok.merges, nfkc_tok.pattern)
    plain.save(tmp_path / "plain.json")
    data = json.loads((tmp_path / "plain.json").read_text(encoding="utf-8"))
    assert data["version"] == 1 and "normalize" not in data
    data["version"], data["normalize"] = 2, "nfd"
    (tmp_path / "bad.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(bpe_fast.TokenizerFileError, match="bad.json: normalize must be null, \"nfc\" or \"nfkc\""):
        bpe_fast.load(tmp_path / "bad.json")


def test_a_hugging_face_normalizer_is_read_when_it_is_nfc_or_nfkc(tmp_path, nfkc_tok):
    nfkc_tok.save(tmp_path / "tokenizer.json")
    data = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    for normalizer, expected in [({"type": "NFC"}, "nfc"), (None, None),
                                 ({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "NFKC"}]}, "nfkc")]:
        data["normalizer"] = normalizer
        (tmp_path / "t.json").write_text(json.dumps(data), encoding="utf-8")
        assert bpe_fast.load(tmp_path / "t.json").normalize == expected
    for other, named in [({"type": "Lowercase"}, "Lowercase"), ({"type": "NFD"}, "NFD"),
                         ({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]}, "Lowercase"),
                         ({"type": "Sequence", "normalizers": [{"type": []}]}, "[]"), ({"type": 7}, "7")]:
        data["normalizer"] = other
        (tmp_path / "t.json").write_text(json.dumps(data), encoding="utf-8")
        quoted = f"'{named}'" if named[0].isalpha() else named          # repr: 'NFD', [], 7
        with pytest.raises(bpe_fast.TokenizerFileError, match=f"t.json: normalizer {regex.escape(quoted)} is not"):
            bpe_fast.load(tmp_path / "t.json")


def test_minbpe_and_gpt2_files_cannot_say_it(tmp_path, nfkc_tok, capsys):
    tok = Tokenizer(nfkc_tok.merges, "gpt2", normalize="nfc")
    for name, fmt in (("t.model", None), ("gpt2/", "gpt2")):
        with pytest.raises(bpe_fast.VocabularyError, match="cannot say that text is normalized .NFC."):
            tok.save(tmp_path / name, format=fmt)
    with pytest.raises(bpe_fast.VocabularyError, match="cannot say that text is normalized"):
        tok.save_gpt2(tmp_path / "e.json", tmp_path / "v.bpe")
    assert not list(tmp_path.iterdir())                             # nothing written, no folder made
    corpus = tmp_path / "c.txt"
    corpus.write_bytes(b"invalid UTF-8: \xff")                     # reading it would fail: it is never read
    for out in ("t.model", "vocab.bpe"):
        assert main(["train", str(corpus), "--vocab-size", "300", "--pattern", "gpt2", "--normalize", "nfkc",
                     "-o", str(tmp_path / out)]) == 2
        err = capsys.readouterr().err
        assert "cannot say that text is normalized (NFKC)" in err and "UTF-8" not in err


def test_to_tiktoken_refuses_a_tokenizer_that_normalizes(nfkc_tok):
    need("tiktoken")
    with pytest.raises(bpe_fast.VocabularyError, match="to_tiktoken.*NFKC form.*unicodedata.normalize"):
        nfkc_tok.to_tiktoken()


def test_the_cli_counts_and_trains_normalized(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(DOCS), encoding="utf-8")
    assert main(["count", str(corpus), "--normalize", "nfkc", "-o", str(tmp_path / "c.npz"), "-q"]) == 0
    assert "normalized to NFKC" in capsys.readouterr().out
    assert main(["train", "--counts", str(tmp_path / "c.npz"), "--vocab-size", "500", "-o",
                 str(tmp_path / "a.json"), "-q"]) == 0
    assert main(["train", str(corpus), "--normalize", "nfkc", "--vocab-size", "500", "-o",
                 str(tmp_path / "b.json"), "-q", "--workers", "1"]) == 0
    a, b = Tokenizer.load(tmp_path / "a.json"), Tokenizer.load(tmp_path / "b.json")
    assert a == b and a.normalize == "nfkc"
    assert main(["train", "--counts", str(tmp_path / "c.npz"), "--normalize", "nfc", "--vocab-size", "500",
                 "-o", str(tmp_path / "x.json")]) == 2
    assert "--normalize: a word table keeps the pattern, special tokens and normalization" in capsys.readouterr().err


# -- Hugging Face agrees -------------------------------------------------------------------------

def _hf(tok: Tokenizer, tmp_path):
    tokenizers = need("tokenizers")
    tok.save(tmp_path / "tokenizer.json")
    return tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))


# Characters whose normalization does something, as Python's Unicode and Hugging Face's agree on
# them (both normalize by their own Unicode version; the newest characters could differ).
HYPOTHESIS_CHARS = st.one_of(
    st.sampled_from(list("aeiouAEIOU =<>!?/,.'\n\t 0123456789")),
    st.characters(min_codepoint=0x00A0, max_codepoint=0x024F),      # Latin-1 and Latin Extended
    st.characters(min_codepoint=0x0300, max_codepoint=0x036F),      # combining marks
    st.characters(min_codepoint=0x0370, max_codepoint=0x03FF),      # Greek (tonos, dialytika)
    st.characters(min_codepoint=0x0900, max_codepoint=0x097F),      # Devanagari (nukta: excluded compositions)
    st.characters(min_codepoint=0x1100, max_codepoint=0x11FF),      # Hangul jamo (compose into syllables)
    st.characters(min_codepoint=0x2150, max_codepoint=0x24FF),      # fractions, roman numerals, circled
    st.characters(min_codepoint=0xFB00, max_codepoint=0xFB06),      # ligatures
    st.characters(min_codepoint=0xFF01, max_codepoint=0xFF5E),      # full-width forms
    st.sampled_from(["<|endoftext|>", "＜|endoftext|＞", "\u00a8", "\uff0f", "\u212b", "\u1e9b\u0323"]),
)


@pytest.mark.parametrize("form", ["nfc", "nfkc"])
def test_hugging_face_encodes_our_tokenizer_json_the_same(tmp_path, form):
    tok = bpe_fast.train_from_iterator(DOCS, 700, normalize=form, special_tokens=["<|endoftext|>"], workers=1,
                                       progress="none")
    theirs = _hf(tok, tmp_path)

    @settings(max_examples=examples(200), deadline=None)
    @given(st.lists(HYPOTHESIS_CHARS, max_size=60).map("".join))
    def same_ids(text):
        assert theirs.encode(text).ids == tok.encode(text, allowed_special="all")
        assert theirs.decode(theirs.encode(text).ids, skip_special_tokens=False) == \
            tok.decode(tok.encode(text, allowed_special="all"))

    same_ids()
    for text in DOCS + [ODD[::-1], "<|endoftext|>\u0338 e<|endoftext|>"]:
        assert theirs.encode(text).ids == tok.encode(text, allowed_special="all")


@needs_data
def test_hugging_face_agrees_on_the_multilingual_corpora(tmp_path):
    """One tokenizer trained on a piece of every language (35 files), each encoded alike."""
    texts = {p.name: read_corpus(p)[:30_000] for p in corpus_files() if p.parent.name == "multilingual"}
    assert len(texts) >= 30
    tok = bpe_fast.train_from_iterator(list(texts.values()), 3000, pattern="o200k", normalize="nfkc", workers=1,
                                       progress="none")
    theirs = _hf(tok, tmp_path)
    changed = [name for name, text in texts.items() if norm(text, "nfkc") != text]
    assert len(changed) >= 5                    # the normalization has work to do in several languages
    for name, text in texts.items():
        assert theirs.encode(text).ids == tok.encode(text), name
        assert tok.decode(tok.encode(text)) == norm(text, "nfkc"), name


def test_to_transformers_keeps_the_normalizer(nfkc_tok):
    need("transformers")
    fast = nfkc_tok.to_transformers(eos_token="<|endoftext|>")
    text = ODD + "＜|endoftext|＞"
    assert fast(text)["input_ids"] == nfkc_tok.encode(text, allowed_special="all")
