"""load("ORG/NAME"): a Hugging Face hub repository's tokenizer.json, read offline from a hub cache
laid out as huggingface_hub lays it out (blobs, snapshots/<commit>, refs/main), found through the
same environment variables; compared id for id with Hugging Face tokenizers on the same file."""
from __future__ import annotations

import hashlib
import io
import os
import sys

import pytest

import bpe_fast
from bpe_fast import TokenizerFileError
from bpe_fast.formats import _hub as hub
from bpe_fast.cli import main

from ..conftest import need, small_text

REPO = "openai-community/gpt2"
COMMIT = "607a30d783dfa663caf39e06633721c8d4cfcd7e"


@pytest.fixture(scope="module")
def hf_tokenizer_json(tmp_path_factory) -> str:
    """A tokenizer.json written by Hugging Face tokenizers itself (its BpeTrainer, ByteLevel)."""
    hf = need("tokenizers")
    theirs = hf.Tokenizer(hf.models.BPE())
    theirs.pre_tokenizer = hf.pre_tokenizers.ByteLevel(add_prefix_space=False)
    theirs.decoder = hf.decoders.ByteLevel()
    trainer = hf.trainers.BpeTrainer(vocab_size=500, show_progress=False, special_tokens=["<|endoftext|>"],
                                     initial_alphabet=hf.pre_tokenizers.ByteLevel.alphabet())
    text = small_text()
    theirs.train_from_iterator([text[i:i + 4000] for i in range(0, len(text), 4000)], trainer)
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    theirs.save(str(path))
    return path.read_text(encoding="utf-8")


def fake_cache(cache, repo: str, content: str, *, ref: bool = True):
    """The hub cache's documented layout: the file is a blob named by its hash, linked from the snapshot."""
    folder = cache / ("models--" + repo.replace("/", "--"))
    blob = folder / "blobs" / hashlib.sha256(content.encode()).hexdigest()
    blob.parent.mkdir(parents=True)
    blob.write_text(content, encoding="utf-8")
    snapshot = folder / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    os.symlink(os.path.relpath(blob, snapshot), snapshot / "tokenizer.json")
    if ref:
        (folder / "refs").mkdir()
        (folder / "refs" / "main").write_text(COMMIT)
    return folder


@pytest.fixture(params=["huggingface_hub", "layout"])
def finder(request, monkeypatch):
    """Both ways of reading the cache: huggingface_hub's own, and the layout read without it."""
    if request.param == "huggingface_hub":
        need("huggingface_hub")
    else:
        monkeypatch.setattr(hub, "have_huggingface_hub", lambda: False)
    return request.param


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


def same_ids_as_huggingface(tok: bpe_fast.Tokenizer, tokenizer_json: str) -> None:
    hf = need("tokenizers")
    theirs = hf.Tokenizer.from_str(tokenizer_json)
    for text in [small_text()[:5000], "Hello, world! Ünïcödé 日本語 😀", "a <|endoftext|> b"]:
        assert tok.encode(text, allowed_special="all") == theirs.encode(text).ids


def test_a_repo_id_is_read_from_hf_hub_cache(tmp_path, clean_env, monkeypatch, finder, hf_tokenizer_json):
    fake_cache(tmp_path / "cache", REPO, hf_tokenizer_json)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    same_ids_as_huggingface(bpe_fast.load(REPO), hf_tokenizer_json)


def test_hf_home_and_the_default_cache_are_looked_in(tmp_path, clean_env, monkeypatch, finder, hf_tokenizer_json):
    fake_cache(tmp_path / "home" / ".cache" / "huggingface" / "hub", REPO, hf_tokenizer_json)
    same_ids_as_huggingface(bpe_fast.load(REPO), hf_tokenizer_json)             # ~/.cache/huggingface/hub
    fake_cache(tmp_path / "hf_home" / "hub", "org/other", hf_tokenizer_json)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    same_ids_as_huggingface(bpe_fast.load("org/other"), hf_tokenizer_json)


def test_a_snapshot_without_refs_main_is_found(tmp_path, clean_env, monkeypatch, finder, hf_tokenizer_json):
    """What downloading by a commit hash leaves: a snapshot and no refs/main (huggingface_hub's own
    look-up asks refs/main only, so it says nothing is cached)."""
    fake_cache(tmp_path / "cache", REPO, hf_tokenizer_json, ref=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    same_ids_as_huggingface(bpe_fast.load(REPO), hf_tokenizer_json)


def test_a_repo_not_cached_says_where_it_looked_and_how_to_download(tmp_path, clean_env, monkeypatch, finder):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(TokenizerFileError) as error:
        bpe_fast.load(REPO)
    message = str(error.value)
    assert str(tmp_path / "cache" / "models--openai-community--gpt2") in message
    assert f"huggingface-cli download {REPO} tokenizer.json" in message and "\n" not in message


def test_a_local_path_of_the_same_name_wins(tmp_path, clean_env, monkeypatch, hf_tokenizer_json):
    fake_cache(tmp_path / "cache", REPO, hf_tokenizer_json)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    local = bpe_fast.train_from_iterator([small_text()[:20000]], 300, pattern="gpt2", progress="none")
    (tmp_path / REPO).mkdir(parents=True)
    local.save(tmp_path / REPO / "tokenizer.json", format="huggingface")
    assert bpe_fast.load(REPO) == local


def test_the_cli_takes_a_repo_id(tmp_path, clean_env, monkeypatch, capsys, hf_tokenizer_json):
    hf = need("tokenizers")
    fake_cache(tmp_path / "cache", REPO, hf_tokenizer_json)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    text = "Hello, world! Ünïcödé"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode()), encoding="utf-8"))
    assert main(["encode", "-t", REPO]) == 0
    theirs = hf.Tokenizer.from_str(hf_tokenizer_json)
    assert [int(x) for x in capsys.readouterr().out.split()] == theirs.encode(text).ids
