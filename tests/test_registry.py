"""Opening what a user names (registry.py, ``bpe_fast.load``): a named encoding's files looked for
in the documented order ($BPE_FAST_VOCABS, tiktoken's cache, the shared vocabs/, or only ``path=``)
and checked against the SHA-256 tiktoken publishes; a file or folder in any format; and errors
that say where it looked and what to do."""
from __future__ import annotations

import base64
import os
import shutil

import pytest

import bpe_fast
from bpe_fast import TokenizerFileError
from bpe_fast.formats._named import ENCODINGS
from bpe_fast.paths import tiktoken_cache_file
from bpe_fast.registry import encoding_files, find_vocab_file

from .conftest import needs_vocabs, vocab_path

BYTES = {bytes([b]): b for b in range(256)}


def tiktoken_lines(ranks: dict[bytes, int]) -> str:
    return "".join(f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranks.items())


def no_shared_data(monkeypatch, tmp_path) -> None:
    """As on a machine with no shared data and an empty tiktoken cache: only what the test puts
    in tmp_path is found."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("BPE_FAST_VOCABS", raising=False)
    monkeypatch.delenv("BPE_FAST_DATA", raising=False)
    monkeypatch.setattr("bpe_fast.paths.shared_dir", lambda: None)


def test_unknown_encoding_and_missing_file(tmp_path):
    with pytest.raises(TokenizerFileError, match="cl200k: no such file, and not a named encoding"):
        bpe_fast.load("cl200k")
    with pytest.raises(TokenizerFileError, match="cl100k_base.tiktoken not found"):
        bpe_fast.load("cl100k_base", path=tmp_path)


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


# -- the order of the places looked in ------------------------------------------------------------

def test_the_places_are_looked_in_in_the_documented_order(tmp_path, monkeypatch):
    """$BPE_FAST_VOCABS, then tiktoken's cache, then the shared vocabs/: the error lists them so."""
    (tmp_path / "shared" / "vocabs").mkdir(parents=True)
    monkeypatch.setenv("BPE_FAST_DATA", str(tmp_path / "shared"))
    monkeypatch.setenv("BPE_FAST_VOCABS", str(tmp_path / "mine"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    file = ENCODINGS["o200k_base"].files[0]
    with pytest.raises(bpe_fast.VocabularyNotFoundError) as err:
        bpe_fast.load("o200k_base")
    looked = [tmp_path / "mine" / file.name, tiktoken_cache_file(file.url),
              tmp_path / "shared" / "vocabs" / file.name]
    assert f"(looked in {', '.join(map(str, looked))})" in str(err.value)
    (tmp_path / "given").mkdir()
    with pytest.raises(bpe_fast.VocabularyNotFoundError, match=rf"\(looked in {tmp_path / 'given' / file.name}\)"):
        bpe_fast.load("o200k_base", path=tmp_path / "given")        # path=: only there


@needs_vocabs
def test_the_first_file_found_is_the_one_checked_and_used(tmp_path, monkeypatch):
    """A good file in $BPE_FAST_VOCABS wins over a damaged one in tiktoken's cache; a damaged one
    there is an error naming it, not skipped for a good one further on."""
    file = ENCODINGS["r50k_base"].files[0]
    published = vocab_path(file.name)
    no_shared_data(monkeypatch, tmp_path)
    cached = tiktoken_cache_file(file.url)
    assert cached is not None
    cached.parent.mkdir()
    cached.write_text(tiktoken_lines(BYTES))
    (tmp_path / "mine").mkdir()
    monkeypatch.setenv("BPE_FAST_VOCABS", str(tmp_path / "mine"))
    shutil.copy(published, tmp_path / "mine" / file.name)
    assert encoding_files("r50k_base") == [tmp_path / "mine" / file.name]
    assert bpe_fast.load("r50k_base").encode("Hello, world!") == [15496, 11, 995, 0]
    (tmp_path / "mine" / file.name).write_text(tiktoken_lines(BYTES))
    shutil.copy(published, cached)
    with pytest.raises(TokenizerFileError, match=rf"{tmp_path / 'mine' / file.name}: its SHA-256 is"):
        bpe_fast.load("r50k_base")


@needs_vocabs
def test_gpt2s_two_files_are_found_from_either_file_or_their_folder(tmp_path):
    for name in ("gpt2_encoder.json", "gpt2_vocab.bpe"):
        shutil.copy(vocab_path(name), tmp_path / name)
    expected = [tmp_path / "gpt2_encoder.json", tmp_path / "gpt2_vocab.bpe"]
    for given in (tmp_path, tmp_path / "gpt2_vocab.bpe", tmp_path / "gpt2_encoder.json"):
        assert encoding_files("gpt2", given) == expected
    assert bpe_fast.load("gpt2", path=tmp_path / "gpt2_vocab.bpe").encode("Hello, world!") == [15496, 11, 995, 0]


def test_a_file_is_found_by_its_name_and_a_name_that_is_no_encodings_file_is_refused(tmp_path, monkeypatch):
    no_shared_data(monkeypatch, tmp_path)
    with pytest.raises(TokenizerFileError, match="notes.txt is none of the named encodings' files"):
        find_vocab_file("notes.txt")
    with pytest.raises(bpe_fast.VocabularyNotFoundError, match="p50k_base.tiktoken not found"):
        find_vocab_file("p50k_base.tiktoken", path=tmp_path)


def test_a_folder_holding_a_tokenizer_json_is_opened_as_hugging_face_saves_it(tmp_path):
    tok = bpe_fast.Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])
    tok.save(tmp_path / "tokenizer.json")
    assert bpe_fast.load(tmp_path) == tok == bpe_fast.load(str(tmp_path))
    (tmp_path / "empty").mkdir()
    with pytest.raises(TokenizerFileError, match="empty"):
        bpe_fast.load(tmp_path / "empty")
