"""GPT-2's byte-level alphabet (bytelevel.py), held to the libraries that define it: tiktoken's
reader of GPT-2's files, Hugging Face's ByteLevel alphabet and GPT-2's ``bytes_to_unicode`` as
transformers keeps it, each where installed; and Hugging Face's trainer's numbering of the bytes."""
from __future__ import annotations

import json

import pytest

from bpe_fast import TokenizerFileError
from bpe_fast.bytelevel import bytes_to_unicode, huggingface_byte_order, str_to_token, token_to_str, unicode_to_bytes

from .conftest import need


def test_bytes_to_unicode_is_gpt2s_table():
    table = bytes_to_unicode()
    assert len(set(table.values())) == 256 and table[ord("A")] == "A" and table[ord(" ")] == "\u0120"


def test_the_alphabet_is_the_one_tiktoken_reads_gpt2s_files_with(tmp_path, monkeypatch):
    """An encoder.json spelling each byte in this alphabet, read by tiktoken's reader of GPT-2's
    files: it must decode every spelling to its byte (its own check asserts so)."""
    load = need("tiktoken.load")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")          # read the files, cache nothing
    (tmp_path / "encoder.json").write_text(json.dumps({token_to_str(bytes([b])): b for b in range(256)}))
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\n")
    ranks = load.data_gym_to_mergeable_bpe_ranks(str(tmp_path / "vocab.bpe"), str(tmp_path / "encoder.json"),
                                                 clobber_one_byte_tokens=True)
    assert ranks == {bytes([b]): b for b in range(256)}


def test_the_alphabet_is_hugging_faces():
    pre_tokenizers = need("tokenizers.pre_tokenizers")
    assert sorted(pre_tokenizers.ByteLevel.alphabet()) == sorted(bytes_to_unicode().values())
    transformers = need("transformers.convert_slow_tokenizer")     # GPT-2's function, as transformers keeps it
    assert transformers.bytes_to_unicode() == bytes_to_unicode()


def test_hugging_faces_trainer_numbers_the_bytes_in_this_order():
    tokenizers = need("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers, trainers
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=256, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    hf.train_from_iterator(["some text"], trainer)
    by_id = sorted(hf.get_vocab().items(), key=lambda item: item[1])
    assert [unicode_to_bytes()[c] for c, _ in by_id] == huggingface_byte_order()


def test_a_token_round_trips_and_a_character_outside_the_alphabet_names_the_file():
    every_byte = bytes(range(256))
    assert str_to_token(token_to_str(every_byte), "x") == every_byte
    assert token_to_str(b" hello\n") == "\u0120hello\u010a"
    with pytest.raises(TokenizerFileError, match=r"vocab.bpe, line 3: 'a€b' has '€', which is not in GPT-2's"):
        str_to_token("a€b", "vocab.bpe, line 3")
