"""The tokenizer's methods that reach the formats (formats/_methods.py): conversions to and from
objects in memory (tiktoken's ranks, bpe_fast's JSON object, a tiktoken Encoding, transformers,
Hugging Face's numbering), each checked against a vocabulary worked out by hand; and the old
per-format readers and writers, which warn, naming their replacement, and still work."""
from __future__ import annotations

import warnings

import pytest

import bpe_fast
from bpe_fast import Tokenizer, TokenizerFileError

from ..conftest import need

# Two merges, 256 = b"hi" and 257 = b" hi", and <|endoftext|> = 258; TEXT's ids worked out by hand.
TEXT = "hi hi, hé<|endoftext|>"
IDS = [256, 257, ord(","), ord(" "), ord("h"), *"é".encode(), 258]


def tiny() -> Tokenizer:
    return Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])


# -- conversions in memory ---------------------------------------------------------------------------

def test_tiktokens_ranks_give_the_merges_back():
    ranks = {bytes([b]): b for b in range(256)} | {b"hi": 256, b" hi": 257}
    tok = Tokenizer.from_ranks(ranks, "gpt2", {"<|endoftext|>": 258})
    assert tok == tiny() and tok.merges.tolist() == [[104, 105], [32, 256]]
    assert tok.encode(TEXT, allowed_special="all") == IDS and tiny().mergeable_ranks() == ranks


def test_the_json_object_round_trips_and_a_bad_one_names_its_source():
    data = tiny().to_dict()
    assert data["format"] == "bpe_fast.tokenizer" and data["merges"] == [[104, 105], [32, 256]]
    assert Tokenizer.from_dict(data) == tiny()
    with pytest.raises(TokenizerFileError, match="config.json: not a bpe_fast tokenizer file"):
        Tokenizer.from_dict({"format": "other"}, source="config.json")


def test_hugging_faces_numbering_puts_the_special_tokens_then_the_bytes_in_their_characters_order():
    """BpeTrainer's order: the special token is 0; byte b"!" (character "!", the first of GPT-2's
    alphabet) is 1, byte b"\xff" (character "ÿ", the last below U+0100) 188, byte 0 (U+0100) 189;
    the merges follow."""
    hf = tiny().with_huggingface_ids()
    assert hf.special_tokens == {"<|endoftext|>": 0} and hf.encode("!") == [1]
    assert hf.decode_bytes([188, 189]) == b"\xff\x00"           # the last char below U+0100, then U+0100
    assert hf.encode("hi hi") == [257, 258] and hf.decode(hf.encode(TEXT, allowed_special="all")) == TEXT


def test_save_and_load_name_the_files_and_the_format(tmp_path):
    tok = tiny()
    assert tok.save(tmp_path / "t.tiktoken") == [str(tmp_path / "t.tiktoken"), str(tmp_path / "t.tiktoken.json")]
    assert Tokenizer.load(tmp_path / "t.tiktoken", format=None) == tok      # None: told by the content
    assert Tokenizer.load(tmp_path / "t.tiktoken", format="tiktoken") == tok and tok.variant is None
    with pytest.raises(bpe_fast.ArgumentError, match="format 'toml' is not one of bpe_fast, huggingface"):
        Tokenizer.load(tmp_path / "t.tiktoken", format="toml")


def test_to_tiktoken_and_to_transformers_encode_alike():
    tok = tiny()
    need("tiktoken")
    assert tok.to_tiktoken().encode(TEXT, allowed_special="all") == IDS
    need("transformers")
    assert tok.to_transformers(eos_token="<|endoftext|>")(TEXT)["input_ids"] == IDS


# name -> (a call of the old method, the replacement the warning names)
DEPRECATED = {
    "save_tiktoken": (lambda tok, p: tok.save_tiktoken(p / "a.tiktoken"), 'tok.save(path, format="tiktoken")'),
    "from_tiktoken": (lambda tok, p: Tokenizer.from_tiktoken(p / "a.tiktoken", tok.pattern, tok.special_tokens),
                      'Tokenizer.load(path, format="tiktoken"'),
    "save_huggingface": (lambda tok, p: tok.save_huggingface(p / "hf.json"), 'tok.save(path, format="huggingface")'),
    "from_huggingface": (lambda tok, p: Tokenizer.from_huggingface(p / "hf.json"),
                         'Tokenizer.load(path, format="huggingface")'),
    "save_minbpe": (lambda tok, p: tok.save_minbpe(p / "m"), 'tok.save(prefix + ".model")'),
    "from_minbpe": (lambda tok, p: Tokenizer.from_minbpe(p / "m.model"), 'Tokenizer.load(path, format="minbpe")'),
    "save_gpt2": (lambda tok, p: tok.save_gpt2(p / "e.json", p / "v.bpe"), 'tok.save(folder + "/", format="gpt2")'),
    "from_gpt2": (lambda tok, p: Tokenizer.from_gpt2(p / "e.json", p / "v.bpe"),
                  'Tokenizer.load(vocab_bpe, format="gpt2", encoder_json=encoder_json)'),
}


def test_the_old_readers_and_writers_warn_and_still_give_the_same_tokenizer(tmp_path):
    tok = tiny()
    for name, (call, replacement) in DEPRECATED.items():      # in order: each reader after its writer
        with pytest.warns(DeprecationWarning, match=rf"Tokenizer\.{name}\(.*\) is deprecated: use ") as caught:
            got = call(tok, tmp_path)
        assert replacement in str(caught[0].message), name
        assert caught[0].filename == __file__, name            # the warning points at the caller
        if name.startswith("from_"):
            assert got == tok, name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tiktoken", "a.tiktoken.json", "e.json", "hf.json",
                                                           "m.model", "m.vocab", "v.bpe"]


def test_the_replacements_read_what_the_old_writers_wrote(tmp_path):
    tok = tiny()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        tok.save_gpt2(tmp_path / "e.json", tmp_path / "v.bpe")
        tok.save_tiktoken(tmp_path / "a.tiktoken")
    assert Tokenizer.load(tmp_path / "v.bpe", format="gpt2", encoder_json=tmp_path / "e.json") == tok
    assert Tokenizer.load(tmp_path / "a.tiktoken", format=None) == tok == bpe_fast.load(tmp_path / "a.tiktoken")
