"""Exports load in their target libraries with identical ids; imports of our exports round-trip;
corrupt vocabulary files get errors that name the file and line."""
from __future__ import annotations

import base64
import functools
import json
import os
import re
from pathlib import Path

import pytest

import bpe_fast
from bpe_fast import Tokenizer, TokenizerFileError, VocabularyError
from bpe_fast.bytelevel import bytes_to_unicode

from .conftest import (corpus_files, corpus_params, need, needs_data, needs_vocabs, read_corpus, shared_path,
                       small_text, vocab_dir, vocab_path)


@functools.cache
def trained(pattern: str) -> Tokenizer:
    corpora = shared_path("corpora")
    files = [corpora / "taylorswift.txt", corpora / "multilingual" / "ru.txt", corpora / "multilingual" / "ja.txt"]
    return bpe_fast.train(files, 2000, pattern=pattern, special_tokens=["<|endoftext|>", "<|pad|>"])


SAMPLE_FILES = ["taylorswift.txt", "the-verdict.txt", "ko.txt", "th.txt", "yo.txt", "ar.txt", "zh.txt"]


def sample_texts() -> list[str]:
    return [read_corpus(p) for p in corpus_files() if p.name in SAMPLE_FILES]


# -- exports load in the target library and give the same ids ------------------------------

@needs_data
@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
def test_tiktoken_export(tmp_path, pattern):
    tiktoken = need("tiktoken")
    tiktoken_load = need("tiktoken.load")
    tok = trained(pattern)
    tok.save(tmp_path / "tok.tiktoken", format="tiktoken")
    ranks = tiktoken_load.load_tiktoken_bpe(str(tmp_path / "tok.tiktoken"))
    enc = tiktoken.Encoding("t", pat_str=tok.pattern, mergeable_ranks=ranks, special_tokens=tok.special_tokens)
    direct = tok.to_tiktoken()
    for text in sample_texts():
        ids = tok.encode(text)
        assert enc.encode(text) == ids and direct.encode(text) == ids
    again = Tokenizer.load(tmp_path / "tok.tiktoken", format="tiktoken", pattern=tok.pattern,
                           special_tokens=tok.special_tokens)
    assert again == tok


@needs_data
@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", None])
def test_huggingface_export(tmp_path, pattern):
    hf = need("tokenizers")
    tok = trained(pattern) if pattern else bpe_fast.train_from_iterator(sample_texts(), 400, pattern=None)
    tok.save(tmp_path / "tokenizer.json", format="huggingface")
    theirs = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    texts = sample_texts() if pattern else [t[:3000] for t in sample_texts()]
    for text in texts:
        assert theirs.encode(text).ids == tok.encode(text)
    if pattern is not None:   # the special tokens are HF added tokens with the same ids
        ids = tok.encode("hello <|endoftext|> world", allowed_special="all")
        assert theirs.encode("hello <|endoftext|> world").ids == ids
    assert Tokenizer.load(tmp_path / "tokenizer.json", format="huggingface") == tok


@needs_vocabs
@needs_data
@pytest.mark.parametrize("path", corpus_params())
def test_huggingface_export_of_cl100k_encodes_every_corpus_alike(tmp_path_factory, path):
    tok, theirs = _cl100k_pair(str(tmp_path_factory.getbasetemp()))
    text = read_corpus(path)
    assert theirs.encode(text).ids == tok.encode_ordinary(text)


@functools.lru_cache(maxsize=1)
def _cl100k_pair(tmp: str):
    hf = need("tokenizers")
    tok = bpe_fast.load("cl100k_base", path=vocab_dir())
    tok.save(f"{tmp}/cl100k.json", format="huggingface")
    return tok, hf.Tokenizer.from_file(f"{tmp}/cl100k.json")


@needs_data
@pytest.mark.parametrize("pattern", ["cl100k", None])
def test_minbpe_round_trip(tmp_path, pattern):
    tok = trained(pattern) if pattern else bpe_fast.train_from_iterator(["hello world " * 30], 270, pattern=None)
    tok.save(tmp_path / "tok", format="minbpe")
    assert Tokenizer.load(tmp_path / "tok.model", format="minbpe") == tok
    model = (tmp_path / "tok.model").read_text().split("\n")
    assert model[0] == "minbpe v1" and model[1] == (tok.pattern or "")
    vocab = (tmp_path / "tok.vocab").read_text()
    assert vocab.count("\n") == tok.n_base and " -> " in vocab


@needs_vocabs
def test_gpt2_round_trip(tmp_path):
    gpt2 = Tokenizer.load(vocab_path("gpt2_vocab.bpe"), format="gpt2", encoder_json=vocab_path("gpt2_encoder.json"))
    gpt2.save(tmp_path / "vocab.bpe")
    assert Tokenizer.load(tmp_path / "vocab.bpe", format="gpt2", encoder_json=tmp_path / "encoder.json") == gpt2
    assert (tmp_path / "vocab.bpe").read_text(encoding="utf-8").split("\n")[:3] == \
        vocab_path("gpt2_vocab.bpe").read_text(encoding="utf-8").split("\n")[:3]


@needs_vocabs
@pytest.mark.parametrize("name", ["cl100k_base", pytest.param("o200k_base", marks=pytest.mark.slow),  # 200k tokens
                                  "r50k_base", "p50k_base"])
def test_own_format_round_trips_real_vocabularies(tmp_path, name):
    tok = bpe_fast.load(name, path=vocab_dir())
    tok.save(tmp_path / "tok.json")
    assert Tokenizer.load(tmp_path / "tok.json") == tok


def test_bytes_to_unicode_is_gpt2s_table():
    table = bytes_to_unicode()
    assert len(set(table.values())) == 256 and table[ord("A")] == "A" and table[ord(" ")] == "\u0120"


# -- every format round-trips, on the repository's own corpus (no peer library, no shared data) --

@functools.cache
def small_trained(pattern: str | None) -> Tokenizer:
    return bpe_fast.train_from_iterator([small_text()], 600, pattern=pattern, workers=1,
                                        special_tokens=["<|endoftext|>", "<|pad|>"])


FORMATS = {
    "bpe_fast": (lambda tok, p: tok.save(p / "t.json"), lambda tok, p: Tokenizer.load(p / "t.json")),
    "tiktoken": (lambda tok, p: tok.save(p / "t.tiktoken", format="tiktoken"),
                 lambda tok, p: Tokenizer.load(p / "t.tiktoken", format="tiktoken", pattern=tok.pattern,
                                               special_tokens=tok.special_tokens)),
    "huggingface": (lambda tok, p: tok.save(p / "tokenizer.json", format="huggingface"),
                    lambda tok, p: Tokenizer.load(p / "tokenizer.json", format="huggingface")),
    "minbpe": (lambda tok, p: tok.save(p / "t", format="minbpe"),
               lambda tok, p: Tokenizer.load(p / "t.model", format="minbpe")),
    "gpt2": (lambda tok, p: tok.save(p / "vocab.bpe"),
             lambda tok, p: Tokenizer.load(p / "vocab.bpe", format="gpt2", encoder_json=p / "encoder.json")),
}


# GPT-2's two files hold no pattern: they always mean the GPT-2 one.
ROUND_TRIPS = [(f, p) for f in FORMATS for p in ("gpt2", "cl100k", "o200k", None) if f != "gpt2" or p == "gpt2"]


@pytest.mark.parametrize("fmt,pattern", ROUND_TRIPS)
def test_every_format_round_trips(tmp_path, fmt, pattern):
    tok = small_trained(pattern)
    save, load = FORMATS[fmt]
    save(tok, tmp_path)
    again = load(tok, tmp_path)
    assert again == tok and again.mergeable_ranks() == tok.mergeable_ranks()
    text = small_text()
    assert again.encode(text, disallowed_special=()) == tok.encode(text, disallowed_special=())


def test_bpe_fast_json_load_opens_every_format(tmp_path):
    tok = small_trained("cl100k")
    tok.save(tmp_path / "t.json")
    tok.save(tmp_path / "tokenizer.json", format="huggingface")
    tok.save(tmp_path / "t", format="minbpe")
    for name in ("t.json", "tokenizer.json", "t.model"):
        assert bpe_fast.load(tmp_path / name) == tok


def test_decode_of_every_id_and_of_ids_out_of_range():
    tok = small_trained("cl100k")
    for i in range(tok.n_base):
        assert tok.decode_bytes([i]) == tok.token_bytes(i) and len(tok.token_bytes(i)) >= 1
    assert tok.decode([tok.special_tokens["<|pad|>"]]) == "<|pad|>"
    for bad in (-1, tok.vocab_size, 2**40):
        with pytest.raises(bpe_fast.EncodingError, match=f"token id {bad} .* is not in the vocabulary"):
            tok.decode([97, bad])


# -- corrupt input -----------------------------------------------------------------------

def tiktoken_lines(ranks: dict[bytes, int]) -> str:
    return "".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranks.items())


BYTES = {bytes([b]): b for b in range(256)}


@pytest.mark.parametrize("content,message", [
    ("", "no tokens"),
    (tiktoken_lines(BYTES) + "QQ== 300 extra\n", "line 257: expected 'base64-token rank'"),
    (tiktoken_lines(BYTES) + "!!!! 300\n", "line 257: bad base64"),
    (tiktoken_lines(BYTES) + "YWI= 255\n", "line 257: rank 255 was already given on line 256"),
    (tiktoken_lines({**BYTES, b"ab": 256, b"abcd": 257}), r"b'abcd' \(rank 257\) cannot be made by merging"),
    (tiktoken_lines({bytes([b]): b for b in range(255)}), "no token for the single byte b'\\\\xff'"),
])
def test_corrupt_tiktoken_files(tmp_path, content, message):
    path = tmp_path / "bad.tiktoken"
    path.write_text(content)
    with pytest.raises(TokenizerFileError, match=message) as err:
        Tokenizer.load(path, format="tiktoken", pattern="gpt2")
    assert str(path) in str(err.value)


def test_truncated_gpt2_files(tmp_path):
    table = bytes_to_unicode()
    encoder = {table[b]: b for b in range(256)} | {"ab": 256, "abc": 257}
    (tmp_path / "encoder.json").write_text(json.dumps(encoder))
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\na b\n")          # the merge for "abc" is missing
    with pytest.raises(TokenizerFileError, match=r"vocab.bpe: no merge makes 'abc' \(id 257"):
        Tokenizer.load(tmp_path / "vocab.bpe", format="gpt2", encoder_json=tmp_path / "encoder.json")
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\na b\nab\n")
    with pytest.raises(TokenizerFileError, match=r"vocab.bpe, line 3: expected two tokens"):
        Tokenizer.load(tmp_path / "vocab.bpe", format="gpt2", encoder_json=tmp_path / "encoder.json")
    (tmp_path / "encoder.json").write_text(json.dumps(encoder)[:-10])
    with pytest.raises(TokenizerFileError, match=r"encoder.json, line 1: not valid JSON"):
        Tokenizer.load(tmp_path / "vocab.bpe", format="gpt2", encoder_json=tmp_path / "encoder.json")


def test_truncated_minbpe_file(tmp_path):
    (tmp_path / "t.model").write_text("minbpe v1\n\n2\n<a> 300\n")
    with pytest.raises(TokenizerFileError, match=r"t.model, line 5: expected 'token id' for special token 2 of 2"):
        Tokenizer.load(tmp_path / "t.model", format="minbpe")
    (tmp_path / "t.model").write_text("minbpe v1\n\n0\n97 98\n256 999\n")
    with pytest.raises(TokenizerFileError, match=r"t.model: merge 1 is \(256, 999\)"):
        Tokenizer.load(tmp_path / "t.model", format="minbpe")


def test_duplicate_ids_and_colliding_specials():
    with pytest.raises(VocabularyError, match="merge 1 makes token id 256, which is already b'ab'"):
        Tokenizer([[97, 98], [98, 99]], merge_ids=[256, 256])
    with pytest.raises(VocabularyError,
                       match="special token '<s>' has id 256, which is already the learned token b'ab'"):
        Tokenizer([[97, 98]], special_tokens={"<s>": 256})
    with pytest.raises(VocabularyError, match="rank 5 is given to both"):
        Tokenizer.from_ranks({**BYTES, b"ab": 5})


def test_unknown_encoding_and_missing_file(tmp_path):
    with pytest.raises(TokenizerFileError, match="cl200k: no such file, and not a named encoding"):
        bpe_fast.load("cl200k")
    with pytest.raises(TokenizerFileError, match="cl100k_base.tiktoken not found"):
        bpe_fast.load("cl100k_base", path=tmp_path)


def test_huggingface_special_tokens_listed_in_the_vocab(tmp_path):
    tok = Tokenizer([[97, 98]], pattern="gpt2")
    data = bpe_fast.formats.huggingface.huggingface_json(tok)
    special = "<｜begin▁of▁sentence｜>"          # not spelled in GPT-2's byte alphabet
    data["model"]["vocab"][special] = 300
    data["added_tokens"].append({"id": 300, "content": special, "special": True})
    (tmp_path / "t.json").write_text(json.dumps(data), encoding="utf-8")
    loaded = Tokenizer.load(tmp_path / "t.json", format="huggingface")
    assert loaded.special_tokens == {special: 300} and loaded.merges.tolist() == [[97, 98]]


def test_bad_patterns_and_binary_files_name_the_file(tmp_path):
    (tmp_path / "m.model").write_text("minbpe v1\n(unclosed\n0\n")
    with pytest.raises(TokenizerFileError, match=r"m.model: pattern '\(unclosed' does not compile"):
        Tokenizer.load(tmp_path / "m.model", format="minbpe")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe{\x00")
    with pytest.raises(TokenizerFileError, match=r"bin.json: not UTF-8 text \(byte offset 0\)"):
        bpe_fast.load(tmp_path / "bin.json")


def test_decode_of_an_id_beyond_64_bits():
    with pytest.raises(bpe_fast.EncodingError,
                       match=r"token id 1180591620717411303424 \(position 1\) is not in the vocabulary"):
        Tokenizer([]).decode([97, 2**70])


def test_huggingface_files_that_are_not_bpe_or_miss_merges(tmp_path):
    tok = small_trained("gpt2")
    data = bpe_fast.formats.huggingface.huggingface_json(tok)
    for model in ("x", None, {"type": "WordPiece"}):
        (tmp_path / "t.json").write_text(json.dumps({**data, "model": model}))
        with pytest.raises(TokenizerFileError, match=r"t.json: not a BPE tokenizer.json"):
            Tokenizer.load(tmp_path / "t.json", format="huggingface")
    data["model"]["merges"] = data["model"]["merges"][:-50]          # truncated: 50 tokens have no merge
    (tmp_path / "t.json").write_text(json.dumps(data))
    with pytest.raises(TokenizerFileError, match=r"t.json: model.merges: no merge makes .* 50 tokens lack their merge"):
        Tokenizer.load(tmp_path / "t.json", format="huggingface")


def test_writers_refuse_special_tokens_their_format_cannot_hold(tmp_path):
    tok = bpe_fast.train_from_iterator([small_text()], 300, pattern="gpt2", special_tokens=["[EOS]", "a\nb"],
                                       workers=1)
    with pytest.raises(VocabularyError,
                       match=r"encoder.json can only hold special tokens spelled <\|...\|>.*'\[EOS\]'"):
        tok.save(tmp_path / "vocab.bpe")
    with pytest.raises(VocabularyError, match=r"minbpe's .model .* 'a\\nb' does"):
        tok.save(tmp_path / "t", format="minbpe")
    assert list(tmp_path.iterdir()) == []          # refused before anything was written
    tok.save(tmp_path / "t.json")                  # bpe_fast's JSON and tokenizer.json hold any special
    tok.save(tmp_path / "tokenizer.json", format="huggingface")
    assert bpe_fast.load(tmp_path / "t.json") == tok == bpe_fast.load(tmp_path / "tokenizer.json")


# -- one load: every format told by its content; Tokenizer.load names the loader that fits ------

def every_format(tok: Tokenizer, folder: Path) -> dict[str, Path]:
    """The tokenizer saved in every format; {format: the path bpe_fast.load is given}."""
    (folder / "gpt2").mkdir()
    (folder / "hf").mkdir()
    tok.save(folder / "t.json")
    tok.save(folder / "hf" / "tokenizer.json", format="huggingface")
    tok.save(folder / "t.tiktoken")
    tok.save(folder / "t.model")
    tok.save(folder / "gpt2" / "vocab.bpe")
    return {"bpe_fast": folder / "t.json", "huggingface": folder / "hf" / "tokenizer.json",
            "huggingface folder": folder / "hf", "tiktoken": folder / "t.tiktoken", "minbpe": folder / "t.model",
            "gpt2 encoder.json": folder / "gpt2" / "encoder.json", "gpt2 vocab.bpe": folder / "gpt2" / "vocab.bpe",
            "gpt2 folder": folder / "gpt2"}


def test_bpe_fast_load_detects_every_format(tmp_path):
    tok = small_trained("gpt2")            # the GPT-2 files can hold only the GPT-2 pattern
    for fmt, path in every_format(tok, tmp_path).items():
        again = bpe_fast.load(path)
        assert again == tok, fmt
        assert again.encode(small_text(), disallowed_special=()) == tok.encode(small_text(), disallowed_special=())
    (tmp_path / "str").mkdir()
    for fmt, path in every_format(tok, tmp_path / "str").items():
        assert bpe_fast.load(str(path)) == tok, fmt          # a str path, as a user types it


def test_format_is_told_by_content_not_by_name(tmp_path):
    tok = small_trained("cl100k")
    tok.save(tmp_path / "a.tiktoken")
    (tmp_path / "ranks.txt").write_bytes((tmp_path / "a.tiktoken").read_bytes())
    (tmp_path / "ranks.txt.json").write_bytes((tmp_path / "a.tiktoken.json").read_bytes())
    tok.save(tmp_path / "hf.data", format="huggingface")
    assert bpe_fast.load(tmp_path / "ranks.txt") == tok == bpe_fast.load(tmp_path / "hf.data")


@pytest.mark.parametrize("fmt,loader", [
    ("huggingface", r'Tokenizer\.load\(path, format="huggingface"\)'),
    ("tiktoken", r'Tokenizer\.load\(path, format="tiktoken", pattern=...\)'),
    ("minbpe", r'Tokenizer\.load\(path, format="minbpe"\)'),
    ("gpt2 encoder.json", r'Tokenizer\.load\(vocab_bpe, format="gpt2", encoder_json=encoder_json\)'),
    ("gpt2 vocab.bpe", r'Tokenizer\.load\(vocab_bpe, format="gpt2", encoder_json=encoder_json\)'),
])
def test_tokenizer_load_of_another_format_names_the_loader_that_fits(tmp_path, fmt, loader):
    path = every_format(small_trained("gpt2"), tmp_path)[fmt]
    with pytest.raises(TokenizerFileError, match=rf"not bpe_fast's JSON: open it with bpe_fast\.load\(path\) "
                                                 rf"\(any format\) or {loader}") as err:
        Tokenizer.load(path)
    assert str(path) in str(err.value)


@needs_vocabs
def test_tokenizer_load_of_real_tiktoken_and_gpt2_files_names_the_loader(tmp_path):
    gpt2 = '(vocab_bpe, format="gpt2"'
    for name, loader in (("cl100k_base.tiktoken", '(path, format="tiktoken"'), ("gpt2_encoder.json", gpt2),
                         ("gpt2_vocab.bpe", gpt2)):
        with pytest.raises(TokenizerFileError, match=rf"bpe_fast\.load\(path\) \(any format\) or Tokenizer\.load"
                                                     rf"{re.escape(loader)}"):
            Tokenizer.load(vocab_path(name))


def test_a_sidecar_or_a_lone_gpt2_file_says_what_to_load(tmp_path):
    tok = small_trained("gpt2")
    tok.save(tmp_path / "t.tiktoken")
    with pytest.raises(TokenizerFileError, match=r"t.tiktoken.json: this is the sidecar of a .tiktoken file: "
                                                 r"load t.tiktoken itself"):
        bpe_fast.load(tmp_path / "t.tiktoken.json")
    tok.save(tmp_path / "x_vocab.bpe")
    (tmp_path / "x_encoder.json").unlink()
    with pytest.raises(TokenizerFileError, match=r"x_vocab.bpe: GPT-2's files come in pairs, and .*x_encoder.json "
                                                 r"is not beside it"):
        bpe_fast.load(tmp_path / "x_vocab.bpe")


# -- .tiktoken files keep their pattern and special tokens in a sidecar -------------------------

@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k", None, r"\w+|\s+|[^\w\s]+"])
def test_tiktoken_sidecar_round_trips_pattern_and_specials(tmp_path, pattern):
    tok = bpe_fast.train_from_iterator([small_text()], 400, pattern=pattern, workers=1,
                                       special_tokens=["<|endoftext|>", "<|pad|>"])
    written = tok.save(tmp_path / "t.tiktoken", format="tiktoken")
    assert written == [str(tmp_path / "t.tiktoken"), str(tmp_path / "t.tiktoken.json")]
    side = json.loads((tmp_path / "t.tiktoken.json").read_text())
    assert side == {"format": "bpe_fast.tiktoken-sidecar", "version": 1, "tiktoken_file": "t.tiktoken",
                    "pattern": tok.pattern, "pattern_name": tok.pattern_name,
                    "special_tokens": tok.special_tokens, "n_vocab": tok.vocab_size}
    assert Tokenizer.load(tmp_path / "t.tiktoken", format="tiktoken") == tok == bpe_fast.load(tmp_path / "t.tiktoken")


def test_tiktoken_sidecar_read_by_tiktoken_itself(tmp_path):
    tiktoken_load = need("tiktoken.load")
    tiktoken = need("tiktoken")
    tok = small_trained("cl100k")
    tok.save(tmp_path / "t.tiktoken")
    side = json.loads((tmp_path / "t.tiktoken.json").read_text())
    enc = tiktoken.Encoding("t", pat_str=side["pattern"], special_tokens=side["special_tokens"],
                            mergeable_ranks=tiktoken_load.load_tiktoken_bpe(str(tmp_path / "t.tiktoken")))
    text = small_text() + "<|endoftext|>"
    assert enc.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")


def test_tiktoken_without_sidecar_requires_the_pattern(tmp_path):
    tok = small_trained("o200k")
    tok.save(tmp_path / "t.tiktoken")
    (tmp_path / "t.tiktoken.json").unlink()
    for load in (functools.partial(Tokenizer.load, format="tiktoken"), bpe_fast.load):
        with pytest.raises(bpe_fast.PatternRequiredError,
                           match=r"t.tiktoken: a .tiktoken file holds no pattern, and there is no sidecar "
                                 r"t.tiktoken.json .*pass the pattern it was trained with, e.g. "
                                 r"Tokenizer.load\(.*, format='tiktoken', pattern='cl100k'\)"):
            load(tmp_path / "t.tiktoken")
    again = Tokenizer.load(tmp_path / "t.tiktoken", format="tiktoken", pattern="o200k",
                           special_tokens=tok.special_tokens)
    assert again == tok
    assert Tokenizer.load(tmp_path / "t.tiktoken", format="tiktoken", pattern=None).pattern is None   # "no split", said


def test_explicit_arguments_win_over_the_sidecar_and_a_bad_sidecar_is_named(tmp_path):
    tok = small_trained("cl100k")
    tok.save(tmp_path / "t.tiktoken")
    again = Tokenizer.load(tmp_path / "t.tiktoken", format="tiktoken", pattern="gpt2")
    assert again.pattern == bpe_fast.GPT2 and again.special_tokens == tok.special_tokens  # specials: the sidecar's
    (tmp_path / "t.tiktoken.json").write_text('{"format": "bpe_fast.tiktoken-sidecar", "version": 1, '
                                              '"pattern": 5, "special_tokens": {}}')
    with pytest.raises(TokenizerFileError, match=r"t.tiktoken.json: pattern must be a string, not 5"):
        Tokenizer.load(tmp_path / "t.tiktoken", format="tiktoken")
    (tmp_path / "t.tiktoken.json").write_text('{"pattern": "x"}')
    with pytest.raises(TokenizerFileError, match=r"t.tiktoken.json: not a .tiktoken sidecar"):
        bpe_fast.load(tmp_path / "t.tiktoken")


@needs_vocabs
def test_a_named_encodings_published_file_keeps_its_pattern_without_a_sidecar(tmp_path):
    import shutil
    shutil.copy(vocab_path("r50k_base.tiktoken"), tmp_path / "r50k_base.tiktoken")
    named = bpe_fast.load("r50k_base")
    copied = tmp_path / "r50k_base.tiktoken"
    assert Tokenizer.load(copied, format="tiktoken") == named == bpe_fast.load(copied)
    with open(tmp_path / "r50k_base.tiktoken", "ab") as fh:      # no longer the published file
        fh.write(b"\n")
    with pytest.raises(bpe_fast.PatternRequiredError, match="nor is it a named encoding's published file"):
        Tokenizer.load(tmp_path / "r50k_base.tiktoken", format="tiktoken")


# -- save(path, format): the name says the format where it can ---------------------------------

def test_save_chooses_the_format_by_name_and_refuses_a_contradiction(tmp_path):
    tok = small_trained("gpt2")
    assert tok.save(tmp_path / "a.tiktoken") == [str(tmp_path / "a.tiktoken"), str(tmp_path / "a.tiktoken.json")]
    assert tok.save(tmp_path / "a.model") == [str(tmp_path / "a.model"), str(tmp_path / "a.vocab")]
    assert tok.save(tmp_path / "m_vocab.bpe") == [str(tmp_path / "m_encoder.json"), str(tmp_path / "m_vocab.bpe")]
    assert tok.save(tmp_path / "a.json") == [str(tmp_path / "a.json")]
    assert json.loads((tmp_path / "a.json").read_text())["format"] == "bpe_fast.tokenizer"    # .json: bpe_fast's
    assert "model" in json.loads(open(tok.save(tmp_path / "b.json", format="huggingface")[0]).read())
    with pytest.raises(bpe_fast.ArgumentError, match=r"a.model: the name ends in .model, which means the minbpe "
                                                     r"format, but the format asked for is tiktoken"):
        tok.save(tmp_path / "a.model", format="tiktoken")
    with pytest.raises(bpe_fast.ArgumentError, match=r"GPT-2's format is two files"):
        tok.save(tmp_path / "gpt2.txt", format="gpt2")
    with pytest.raises(bpe_fast.ArgumentError, match=r"format 'sentencepiece' is not one of bpe_fast, huggingface"):
        tok.save(tmp_path / "x", format="sentencepiece")
    with pytest.raises(VocabularyError, match=r"GPT-2's files hold no pattern .* this tokenizer splits with cl100k"):
        small_trained("cl100k").save(tmp_path / "cl_vocab.bpe")
    assert not (tmp_path / "cl_vocab.bpe").exists()


# -- named encodings: tiktoken's cache, published hashes -----------------------------------------

def test_named_encoding_file_in_tiktokens_cache_is_named_as_tiktoken_names_it(tmp_path, monkeypatch):
    import hashlib

    from bpe_fast.formats._named import ENCODINGS
    from bpe_fast.paths import tiktoken_cache_dir, tiktoken_cache_file
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    assert ENCODINGS["cl100k_base"].files[0].url == url
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert tiktoken_cache_file(url) == tmp_path / hashlib.sha1(url.encode()).hexdigest()
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(tmp_path / "gym"))
    assert tiktoken_cache_dir() == tmp_path / "gym"
    monkeypatch.delenv("DATA_GYM_CACHE_DIR")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)            # gettempdir() reads TMPDIR again
    assert tiktoken_cache_dir() == tmp_path / "data-gym-cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")                # tiktoken: caching off
    assert tiktoken_cache_dir() is None


@needs_vocabs
def test_tiktoken_reads_the_file_where_bpe_fast_looks_for_it(tmp_path):
    """Put r50k_base where bpe_fast looks in tiktoken's cache: tiktoken itself must take it from
    there (its download is made to fail), so the two agree on the cache's naming."""
    import shutil
    import subprocess
    import sys

    need("tiktoken")
    from bpe_fast.formats._named import ENCODINGS
    file = ENCODINGS["r50k_base"].files[0]
    cache = tmp_path / "cache"
    cache.mkdir()
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(cache))
    cached = subprocess.run([sys.executable, "-c", "from bpe_fast.paths import tiktoken_cache_file; "
                             f"print(tiktoken_cache_file({file.url!r}))"], env=env, capture_output=True, text=True)
    shutil.copy(vocab_path(file.name), cached.stdout.strip())
    code = ("import tiktoken.load as L\n"
            "def offline(path): raise SystemExit('tiktoken tried to download ' + path)\n"
            "L.read_file = offline\n"
            f"ranks = L.load_tiktoken_bpe({file.url!r}, {file.sha256!r})\n"
            "print(len(ranks))")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "50256", proc.stderr


@needs_vocabs
def test_named_encodings_are_found_in_tiktokens_cache(tmp_path, monkeypatch):
    import shutil

    from bpe_fast.formats._named import ENCODINGS
    from bpe_fast.paths import tiktoken_cache_file
    from bpe_fast.registry import encoding_files
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("BPE_FAST_VOCABS", raising=False)
    for f in ENCODINGS["gpt2"].files + ENCODINGS["r50k_base"].files:
        cached = tiktoken_cache_file(f.url)
        assert cached is not None                     # caching is on: TIKTOKEN_CACHE_DIR is set
        shutil.copy(vocab_path(f.name), cached)
    assert encoding_files("gpt2") == [tiktoken_cache_file(f.url) for f in ENCODINGS["gpt2"].files]
    assert bpe_fast.load("gpt2").encode("Hello, world!") == [15496, 11, 995, 0]
    assert bpe_fast.load("gpt2").mergeable_ranks() == bpe_fast.load("r50k_base").mergeable_ranks()


def test_a_named_encoding_file_that_is_not_the_published_one_is_refused(tmp_path, monkeypatch):
    from bpe_fast.formats._named import ENCODINGS
    from bpe_fast.paths import tiktoken_cache_file
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("BPE_FAST_VOCABS", raising=False)
    damaged = tiktoken_cache_file(ENCODINGS["cl100k_base"].files[0].url)
    assert damaged is not None                        # caching is on: TIKTOKEN_CACHE_DIR is set
    damaged.write_text(tiktoken_lines(BYTES))
    with pytest.raises(TokenizerFileError, match=rf"{damaged}: its SHA-256 is [0-9a-f]{{64}}, not "
                                                 rf"223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"):
        bpe_fast.load("cl100k_base")
    (tmp_path / "vocabs").mkdir()
    (tmp_path / "vocabs" / "o200k_base.tiktoken").write_text(tiktoken_lines(BYTES))
    with pytest.raises(TokenizerFileError, match=r"o200k_base.tiktoken: its SHA-256 is .*, the hash tiktoken "
                                                 r"publishes for o200k_base.tiktoken"):
        bpe_fast.load("o200k_base", path=tmp_path / "vocabs")


def test_a_missing_named_encoding_says_where_it_looked_in_pythons_words(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BPE_FAST_VOCABS", str(tmp_path / "mine"))
    monkeypatch.setattr("bpe_fast.paths.shared_dir", lambda: None)      # as on a machine without ../shared
    with pytest.raises(bpe_fast.VocabularyNotFoundError) as err:
        bpe_fast.load("o200k_base")
    message = str(err.value)
    assert message.startswith(f"o200k_base.tiktoken not found (looked in {tmp_path / 'mine' / 'o200k_base.tiktoken'}, "
                              f"{tmp_path / 'cache'}/")
    assert "pass path=" in message and "--vocabs" not in message
    cli_message = err.value.cli_message or ""
    assert "--vocabs FOLDER" in cli_message and "path=" not in cli_message
    assert "tiktoken.get_encoding('o200k_base')" in message


def test_a_path_that_is_not_a_regular_file_is_named_so(tmp_path):
    """A device or a FIFO exists: "no such file" would send the user looking in the wrong place."""
    fifo = tmp_path / "tok.json"
    os.mkfifo(fifo)
    for path in ("/dev/zero", fifo):
        with pytest.raises(TokenizerFileError, match="not a regular file"):
            bpe_fast.load(path)
