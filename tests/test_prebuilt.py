"""prebuilt.py: what a load derives, saved by one process and read back by the next.

The contract: a tokenizer read back from the cache encodes exactly as one built afresh (checked
against tiktoken itself), a damaged or stale entry is never trusted, and a cache that cannot be
written or is turned off changes nothing but the time.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import bpe_fast
from bpe_fast import prebuilt
from bpe_fast.encoding._encode import MergeEncoder
from bpe_fast.errors import VocabularyError
from bpe_fast.formats import tiktoken as tiktoken_format
from bpe_fast.pretokenize.splitter import _char_classes_of_regex, char_classes

from .conftest import needs_data, needs_vocabs, shared_path, vocab_path
from tests.test_conformance import reference

pytestmark = [needs_vocabs, needs_data]


def _text() -> str:
    """Some of every script in the shared corpora: many tokens of the trie, and the long ones."""
    folder = shared_path("corpora", "multilingual")
    return "".join(p.read_text(encoding="utf-8")[:3000] for p in sorted(folder.iterdir()))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("BPE_FAST_CACHE", str(folder))
    return folder


def _entries(folder, kind: str) -> list:
    return sorted(folder.glob(f"{kind}-*.npz"))


def _must_not_write(key, arrays):
    raise AssertionError(f"{key} was built again, not read back")


def test_a_second_load_reads_back_what_the_first_saved(cache, monkeypatch):
    text = _text()
    first = bpe_fast.load("cl100k_base", path=vocab_path())
    assert first.encode(text) == reference("cl100k_base").encode(text)
    assert len(_entries(cache, "tiktoken")) == 1 and len(_entries(cache, "reachable")) == 1

    monkeypatch.setattr(prebuilt, "write", _must_not_write)
    monkeypatch.setattr(tiktoken_format, "read_tiktoken_ranks", lambda path: pytest.fail("ranks read again"))
    second = bpe_fast.load("cl100k_base", path=vocab_path())
    assert second.encode(text) == reference("cl100k_base").encode(text)
    assert np.array_equal(second.merges, first.merges) and second.special_tokens == first.special_tokens


def test_a_tokenizer_json_s_merges_are_read_back(cache, monkeypatch, tmp_path):
    """A tokenizer.json's merges (each of its tokens spelled out in GPT-2's alphabet and looked up:
    most of loading o200k_base's) are saved by the first load and read back by the next, which
    encodes as tiktoken does."""
    from bpe_fast.formats import huggingface as hf_format
    text = _text()
    path = tmp_path / "cl100k.tokenizer.json"
    bpe_fast.load("cl100k_base", path=vocab_path()).save(path, format="huggingface")
    first = bpe_fast.load(path)
    assert len(_entries(cache, "huggingface")) == 1
    monkeypatch.setattr(prebuilt, "write", _must_not_write)
    monkeypatch.setattr(hf_format, "_hf_merges", lambda *a: pytest.fail("the merges spelled out again"))
    second = bpe_fast.load(path)
    assert second.encode(text, allowed_special="all") == reference("cl100k_base").encode(text, allowed_special="all")
    assert np.array_equal(second.merges, first.merges) and second.special_tokens == first.special_tokens


def test_a_damaged_entry_is_rebuilt(cache):
    text = _text()
    bpe_fast.load("cl100k_base", path=vocab_path()).encode("warm")
    for entry in _entries(cache, "tiktoken") + _entries(cache, "reachable"):
        data = bytearray(entry.read_bytes())
        data[len(data) // 2] ^= 0xFF                    # one bit pattern inside an array
        entry.write_bytes(bytes(data))
    tok = bpe_fast.load("cl100k_base", path=vocab_path())
    assert tok.encode(text) == reference("cl100k_base").encode(text)
    for entry in _entries(cache, "tiktoken") + _entries(cache, "reachable"):    # saved whole again
        assert prebuilt.read(entry.stem) is not None


def test_tables_with_a_right_checksum_but_indices_out_of_range_are_not_trusted(cache):
    text = _text()
    bpe_fast.load("cl100k_base", path=vocab_path()).encode("warm")
    (entry,) = _entries(cache, "reachable")
    arrays = prebuilt.read(entry.stem)
    assert arrays is not None
    slots = arrays["t4"].view(np.int32).reshape(-1, 4).copy()      # key (2 words), node, symbol
    used = np.flatnonzero(slots[:, 0] != -1)
    slots[used[0], 2] = 1 << 30                                     # a node past the end
    prebuilt.write(entry.stem, dict(arrays, t4=slots.view(np.uint8).reshape(-1)))
    tok = bpe_fast.load("cl100k_base", path=vocab_path())
    assert tok.encode(text) == reference("cl100k_base").encode(text)


@pytest.mark.parametrize("damage", ["node", "symbol", "level2", "full", "size"])
def test_the_encoder_checks_tables_it_is_given(damage):
    tok = bpe_fast.Tokenizer([[97, 98], [256, 99], [100, 101]])
    made = MergeEncoder(tok.merges, tok.merge_ids, tok.byte_ids, tok._vocab, {})
    reachable, shorter, level2, node_symbol, trie, bits = made.reachable_tables()
    slots = trie.view(np.int32).reshape(-1, 4).copy()
    used = np.flatnonzero((slots[:, 0] != -1) | (slots[:, 1] != -1))
    if damage == "node":
        slots[used[0], 2] = len(node_symbol)
    elif damage == "symbol":
        node_symbol = node_symbol.copy()
        node_symbol[-1] = len(reachable)
    elif damage == "level2":
        level2 = level2.copy()
        level2[0] = len(node_symbol)
    elif damage == "full":                                  # no free slot: a probe would not end
        slots[:, 0:2] = 7
        slots[:, 2:] = 0
    else:
        shorter = shorter[:-1]
    with pytest.raises(ValueError):
        MergeEncoder(tok.merges, tok.merge_ids, tok.byte_ids, tok._vocab, {},
                     (reachable, shorter, level2, node_symbol, slots.view(np.uint8).reshape(-1), bits))


def test_a_changed_file_is_read_afresh(cache, tmp_path):
    whole = vocab_path("cl100k_base.tiktoken").read_bytes()
    copy = tmp_path / "mine.tiktoken"
    copy.write_bytes(whole)
    assert bpe_fast.Tokenizer.load(copy, format="tiktoken", pattern="cl100k").vocab_size == 100256
    lines = whole.splitlines(keepends=True)
    copy.write_bytes(b"".join(lines[:60000]))              # the same name, other contents
    assert bpe_fast.Tokenizer.load(copy, format="tiktoken", pattern="cl100k").vocab_size == 60000
    assert len(_entries(cache, "tiktoken")) == 2


def test_off_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("BPE_FAST_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    text = _text()
    assert bpe_fast.load("cl100k_base", path=vocab_path()).encode(text) == reference("cl100k_base").encode(text)
    assert prebuilt.cache_folder() is None
    assert not (tmp_path / "xdg").exists() and not (tmp_path / "home").exists()


def test_the_default_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("BPE_FAST_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert prebuilt.cache_folder() == tmp_path / "bpe_fast"


def test_a_cache_that_cannot_be_written_is_not_an_error(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("BPE_FAST_CACHE", str(blocker / "cache"))
    text = _text()
    assert bpe_fast.load("cl100k_base", path=vocab_path()).encode(text) == reference("cl100k_base").encode(text)
    assert list(tmp_path.iterdir()) == [blocker]           # no temporary file left behind either


def test_character_classes_read_back_equal_the_regex_modules(cache):
    char_classes.cache_clear()
    try:
        built = char_classes()                             # built, then saved
        char_classes.cache_clear()
        read = char_classes()                              # read back
    finally:
        char_classes.cache_clear()
    fresh = _char_classes_of_regex()
    assert len(_entries(cache, "classes")) == 1
    for a, b, c in zip(built, read, fresh):
        assert a.dtype == b.dtype == c.dtype and np.array_equal(a, c) and np.array_equal(b, c)


def test_small_vocabularies_are_not_cached(cache):
    bpe_fast.Tokenizer([[97, 98]], pattern="gpt2").encode("abab")
    assert not cache.exists() or not _entries(cache, "reachable")


def test_the_vocabulary_checks_still_name_the_merge():
    with pytest.raises(VocabularyError, match=r"merge 1 is \(256, 300\): its ids must be single bytes"):
        bpe_fast.Tokenizer([[97, 98], [256, 300]], merge_ids=[256, 400])
    with pytest.raises(VocabularyError, match=r"merge 0 is \(97, 4294967394\): its ids must be single bytes"):
        bpe_fast.Tokenizer([[97, (1 << 32) + 98]])           # would wrap to 98 as an int32
    with pytest.raises(VocabularyError, match="merge 1 makes token id 256, which is already b'ab'"):
        bpe_fast.Tokenizer([[97, 98], [98, 99]], merge_ids=[256, 256])
    assert os.environ.get("BPE_FAST_CACHE")                # the suite never writes the user's cache


def test_a_tokenizer_made_in_memory_is_not_cached(cache):
    loaded = bpe_fast.load("cl100k_base", path=vocab_path())
    in_memory = bpe_fast.Tokenizer(loaded.merges, loaded.pattern, merge_ids=loaded.merge_ids,
                                   byte_ids=loaded.byte_ids)
    text = _text()
    assert in_memory.encode(text, disallowed_special=()) == reference("cl100k_base").encode(text)
    assert not _entries(cache, "reachable")                 # no other process would read it back
    loaded.encode("now the loaded one")
    assert len(_entries(cache, "reachable")) == 1


def test_the_folder_is_trimmed_to_its_limit_least_recently_used_first(cache, monkeypatch):
    big = {"a": np.zeros(4096, np.uint8)}
    keys = [prebuilt.key_of("test", str(i)) for i in range(4)]
    prebuilt.write(keys[0], big)
    monkeypatch.setattr(prebuilt, "LIMIT_BYTES", 3 * (cache / f"{keys[0]}.npz").stat().st_size)   # three entries
    for i in range(3):
        prebuilt.write(keys[i], big)
        os.utime(cache / f"{keys[i]}.npz", ns=(i * 10**9, i * 10**9))   # written in order, seconds apart
    assert prebuilt.read(keys[0]) is not None               # read: now the most recently used
    prebuilt.write(keys[3], big)
    assert sorted(p.stem for p in cache.glob("*.npz")) == sorted([keys[0], keys[2], keys[3]])


# -- a cache that is self-describing, and only ever removes its own files (issue 49) ------------------

def test_trimming_removes_only_entries_never_the_users_own_files(cache, monkeypatch):
    monkeypatch.setattr(prebuilt, "LIMIT_BYTES", 1)        # every entry is past the limit
    cache.mkdir()
    mine = {name: cache / name for name in ("results.npz", "notes.txt", "test-1234.npz", ".draft.tmp")}
    for path in mine.values():
        path.write_bytes(b"the user's own")
        os.utime(path, ns=(0, 0))                          # old: the first to go, were they entries
    prebuilt.write(prebuilt.key_of("test", "a"), {"a": np.arange(10)})
    assert all(path.read_bytes() == b"the user's own" for path in mine.values())
    assert sorted(p.name for p in cache.iterdir()) == sorted(mine)         # the entry itself went


def _damage_a_header_digit(entry) -> None:
    """One digit of the merges' shape, in their .npy header inside the .npz: (100000, 2) becomes
    (100000, 1), a valid header that reads half the member (so a reader that stops there never
    reaches the member's checksum)."""
    data = entry.read_bytes()
    assert data.count(b"'shape': (100000, 2)") == 1
    entry.write_bytes(data.replace(b"'shape': (100000, 2)", b"'shape': (100000, 1)"))


def test_an_entry_with_a_damaged_header_is_rebuilt_and_the_file_not_blamed(cache):
    text = _text()
    bpe_fast.load("cl100k_base", path=vocab_path()).encode("warm")
    (entry,) = _entries(cache, "tiktoken")
    _damage_a_header_digit(entry)
    assert prebuilt.read(entry.stem) is None                # the checksum is checked to the member's end
    for _ in range(2):                                      # and every later load works
        assert bpe_fast.load("cl100k_base", path=vocab_path()).encode(text) == reference("cl100k_base").encode(text)
    assert prebuilt.read(entry.stem) is not None            # saved whole again


def test_an_entry_of_another_kind_in_the_character_classes_place_is_rebuilt(cache):
    bpe_fast.load("cl100k_base", path=vocab_path()).encode("warm")
    char_classes.cache_clear()
    try:
        char_classes()
        (classes,) = _entries(cache, "classes")
        (other,) = _entries(cache, "tiktoken")
        classes.write_bytes(other.read_bytes())            # another entry copied over it
        char_classes.cache_clear()
        read = char_classes()
    finally:
        char_classes.cache_clear()
    fresh = _char_classes_of_regex()
    assert all(np.array_equal(a, b) for a, b in zip(read, fresh))
    text = _text()
    assert bpe_fast.load("cl100k_base", path=vocab_path()).encode(text) == reference("cl100k_base").encode(text)


def test_two_entries_swapped_are_not_trusted(cache):
    """Each entry names what it was made from: one encoding's merges under another's key are
    ignored (and rebuilt), never read as that encoding's."""
    text = _text()
    for name in ("cl100k_base", "o200k_base"):
        bpe_fast.load(name, path=vocab_path()).encode("warm")
    first, second = _entries(cache, "tiktoken")
    a, b = first.read_bytes(), second.read_bytes()
    first.write_bytes(b)
    second.write_bytes(a)
    for name in ("cl100k_base", "o200k_base"):
        assert bpe_fast.load(name, path=vocab_path()).encode(text) == reference(name).encode(text), name


def test_entries_are_readable_by_everyone_the_umask_allows(cache):
    old = os.umask(0o022)
    try:
        prebuilt.write(prebuilt.key_of("test", "shared"), {"a": np.arange(3)})
    finally:
        os.umask(old)
    (entry,) = _entries(cache, "test")
    assert entry.stat().st_mode & 0o777 == 0o644


def test_a_cache_folder_written_with_a_tilde_is_under_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BPE_FAST_CACHE", "~/cache")
    monkeypatch.chdir(tmp_path)
    assert prebuilt.cache_folder() == tmp_path / "home" / "cache"
    prebuilt.write(prebuilt.key_of("test", "tilde"), {"a": np.arange(3)})
    assert len(_entries(tmp_path / "home" / "cache", "test")) == 1 and not (tmp_path / "~").exists()


def test_the_temporary_file_of_a_writer_that_died_is_removed(cache):
    cache.mkdir()
    key = prebuilt.key_of("test", "dead")
    dead, alive = cache / f".{key}.k3j2h1.tmp", cache / f".{key}.a1b2c3.tmp"
    for path in (dead, alive):
        path.write_bytes(b"half an entry")
    os.utime(dead, ns=(0, 0))                              # long ago: its writer is gone
    prebuilt.write(prebuilt.key_of("test", "next"), {"a": np.arange(3)})
    assert not dead.exists() and alive.exists()             # one still being written is left alone


def test_an_entry_that_cannot_be_marked_used_is_still_read(cache, monkeypatch):
    # A cache others made, read-only to this user: marking an entry used fails (root would not
    # see it fail, so the refusal is made here), and the entry is read all the same.
    bpe_fast.load("cl100k_base", path=vocab_path()).encode("warm")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(prebuilt.os, "utime", refuse)
    monkeypatch.setattr(prebuilt, "write", _must_not_write)
    tok = bpe_fast.load("cl100k_base", path=vocab_path())
    text = _text()
    assert tok.encode(text) == reference("cl100k_base").encode(text)
