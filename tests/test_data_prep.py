"""Preparing training data as nanoGPT / nanochat users do (issue 32, items 1, 2, 3, 6 and 12):
`bpe-fast encode -o x.npy` that np.load reads, --append-eot after every document, decoding a
plain .bin written by numpy (--dtype, load_bin(dtype=)), one rule for special tokens' text in
every command that encodes text, and `convert --format huggingface` with the special tokens'
roles for transformers. Ids are cross-checked with tiktoken on the real OpenAI vocabularies."""
from __future__ import annotations

import functools
import io
import json
import sys

import numpy as np
import pytest

import bpe_fast
from bpe_fast.prepare import corpus as ef
from bpe_fast.cli import main
from bpe_fast.errors import ArgumentError, EncodingError

from .conftest import need, small_text, vocab_path

EOT = "<|endoftext|>"
# Text with what tokenizers get wrong: several scripts, emoji, runs of spaces, digits, a tab.
DOCS = ["The quick brown fox jumps over the lazy dog.\n", "Ünïcödé 日本語のテキスト 😀👍🏽  and  spaces\t1234567\n",
        "", "last one, without a newline"]


@functools.cache
def reference(name: str):
    """tiktoken's own Encoding for ``name``, read from the shared vocabulary files."""
    need("tiktoken")
    import tiktoken.load
    import tiktoken_ext.openai_public as openai_public
    local = vocab_path(f"{name}.tiktoken")
    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *args, **kwargs: tiktoken.load.load_tiktoken_bpe(str(local))
    try:
        return tiktoken.Encoding(**getattr(openai_public, name)())
    finally:
        openai_public.load_tiktoken_bpe = original


@functools.cache
def _load_named(name: str, vocabs: str):
    return bpe_fast.load(name, vocabs)


@pytest.fixture(autouse=True)
def named_encodings_read_once(monkeypatch):
    """The commands' `load`, reading each named encoding once for the module (a file as usual)."""
    from bpe_fast.cli import tools as cli_tools
    load = cli_tools.load
    monkeypatch.setattr(cli_tools, "load", lambda spec, vocabs=None: _load_named(spec, vocabs)
                        if spec in bpe_fast.registry.ENCODINGS else load(spec, vocabs))


def run(args, capsys, monkeypatch, stdin: bytes = b""):
    """``bpe-fast ARGS`` in this process: (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def named(name: str) -> list[str]:
    """-t NAME with the shared vocabularies (the test skips without them)."""
    return ["-t", name, "--vocabs", str(vocab_path())]


@pytest.fixture(scope="module")
def trained():
    """A small tokenizer with <|endoftext|> and two more special tokens (no vocabularies needed)."""
    return bpe_fast.train_from_iterator([small_text()], 600, pattern="cl100k",
                                        special_tokens=[EOT, "<|pad|>", "<|bos|>"], progress="none")


def write_docs(folder, docs=DOCS):
    """Each document in a file of its own, named so that the folder's sorted order is DOCS' order."""
    folder.mkdir()
    for k, doc in enumerate(docs):
        (folder / f"doc{k:02}.txt").write_text(doc, encoding="utf-8", newline="")
    return folder


def assert_one_line_error(code: int, err: str, *parts: str) -> None:
    assert code == 2 and err.count("\n") == 1, err
    for part in parts:
        assert part in err, (part, err)


# -- 1. -o x.npy is a real .npy --------------------------------------------------------------------

@pytest.mark.parametrize("name,dtype", [("r50k_base", np.uint16), ("cl100k_base", np.uint32)])
def test_encode_to_npy_is_what_np_load_reads_with_tiktokens_ids(name, dtype, tmp_path, capsys, monkeypatch):
    text = "".join(DOCS) * 50
    (tmp_path / "in.txt").write_text(text, encoding="utf-8", newline="")
    code, _, err = run(["encode", *named(name), tmp_path / "in.txt", "-o", tmp_path / "x.npy"], capsys, monkeypatch)
    assert code == 0, err
    ids = np.load(tmp_path / "x.npy")
    assert ids.dtype == dtype and ids.ndim == 1
    assert ids.tolist() == reference(name).encode_ordinary(text)
    code, out, _ = run(["decode", *named(name), tmp_path / "x.npy"], capsys, monkeypatch)
    assert code == 0 and out == text


@pytest.mark.parametrize("args,parts", [
    (["--format", "text", "-o", "OUT/x.npy"], ["x.npy", "np.load cannot read", "--format npy"]),
    (["--json", "-o", "OUT/x.npy"], ["x.npy", "--format npy"]),
    (["--format", "bin", "-o", "OUT/x.npy"], ["x.npy", "raw ids with no header", "--format npy"]),
    (["--format", "npy"], ["--format npy", "-o ids.npy"]),
    (["--format", "npy", "-o", "-"], ["--format npy", "-o ids.npy"]),
])
def test_npy_where_it_cannot_be_is_refused(args, parts, trained, tmp_path, capsys, monkeypatch):
    trained.save(tmp_path / "tok.json")
    args = [str(a).replace("OUT", str(tmp_path)) for a in args]
    code, out, err = run(["encode", "-t", tmp_path / "tok.json", *args], capsys, monkeypatch, b"hello")
    assert_one_line_error(code, err, *parts)
    assert out == "" and not (tmp_path / "x.npy").exists()


# -- 2. --append-eot --------------------------------------------------------------------------------

def test_append_eot_after_every_document_of_a_folder_as_nanogpt(tmp_path, capsys, monkeypatch):
    ref = reference("r50k_base")
    folder = write_docs(tmp_path / "docs")
    code, _, err = run(["encode", *named("r50k_base"), folder, "--append-eot", "-o", tmp_path / "train.bin"],
                       capsys, monkeypatch)
    assert code == 0, err
    expected = [ref.encode_ordinary(doc) + [ref.eot_token] for doc in DOCS]      # nanoGPT's prepare.py
    ids, offsets = bpe_fast.load_bin(tmp_path / "train.bin")
    assert ids.dtype == np.uint16 and ids.tolist() == sum(expected, [])
    assert [ids[offsets[k]:offsets[k + 1]].tolist() for k in range(len(DOCS))] == expected
    code, _, _ = run(["encode", *named("r50k_base"), folder, "--append-eot", "-o", tmp_path / "train.npy"],
                     capsys, monkeypatch)
    assert code == 0 and np.load(tmp_path / "train.npy").tolist() == sum(expected, [])


def test_append_eot_after_every_record_of_json_lines_and_parquet(tmp_path, capsys, monkeypatch):
    ref = reference("r50k_base")
    records: list[dict] = [{"text": doc} for doc in DOCS] + [{"text": None}]     # a null one: an empty document
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    expected: list[int] = sum([ref.encode_ordinary(r["text"] or "") + [ref.eot_token] for r in records], [])
    code, _, err = run(["encode", *named("r50k_base"), tmp_path / "d.jsonl", "--append-eot",
                        "-o", tmp_path / "j.bin"], capsys, monkeypatch)
    assert code == 0, err
    ids, offsets = bpe_fast.load_bin(tmp_path / "j.bin")
    assert ids.tolist() == expected and len(offsets) == len(records) + 1
    pa, pq = need("pyarrow"), need("pyarrow.parquet")
    pq.write_table(pa.table({"text": [r["text"] for r in records]}), tmp_path / "d.parquet", row_group_size=2)
    code, out, err = run(["encode", *named("r50k_base"), tmp_path / "d.parquet", "--append-eot", "--json"],
                         capsys, monkeypatch)
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines == [ref.encode_ordinary(r["text"] or "") + [ref.eot_token] for r in records]


def test_a_plain_text_file_is_one_document_with_one_eot(trained, tmp_path, capsys, monkeypatch):
    trained.save(tmp_path / "tok.json")
    text = "".join(DOCS)
    (tmp_path / "a.txt").write_text(text, encoding="utf-8", newline="")
    code, out, _ = run(["encode", "-t", tmp_path / "tok.json", tmp_path / "a.txt", "--append-eot"], capsys, monkeypatch)
    assert code == 0 and [int(i) for i in out.split()] == trained.encode_ordinary(text) + [trained.special_tokens[EOT]]


def test_append_eot_without_an_end_of_text_token_is_refused(tmp_path, capsys, monkeypatch):
    tok = bpe_fast.train_from_iterator([small_text()], 300, pattern="cl100k", special_tokens=["<|pad|>"],
                                       progress="none")
    tok.save(tmp_path / "tok.json")
    code, out, err = run(["encode", "-t", tmp_path / "tok.json", "--append-eot", "-o", tmp_path / "x.bin"],
                         capsys, monkeypatch, b"hello")
    assert_one_line_error(code, err, "--append-eot needs the special token '<|endoftext|>'", "'<|pad|>'",
                          "--special")
    assert not (tmp_path / "x.bin").exists()
    with pytest.raises(ArgumentError, match="append_eot needs the special token"):
        ef.encode_files(tok, [tmp_path / "tok.json"], tmp_path / "y.bin", format="bin", append_eot=True)


# -- 3. decode a plain .bin (numpy's tofile, nanoGPT's prepare.py) -----------------------------------

def test_decode_a_plain_bin_written_by_numpy_with_dtype(tmp_path, capsys, monkeypatch):
    ref = reference("r50k_base")
    text = "".join(DOCS)
    ids = ref.encode_ordinary(text)
    np.array(ids, dtype=np.uint16).tofile(tmp_path / "train.bin")             # as nanoGPT's prepare.py
    code, out, err = run(["decode", *named("r50k_base"), tmp_path / "train.bin"], capsys, monkeypatch)
    assert_one_line_error(code, err, str(tmp_path / "train.bin"), "no train.idx", "--dtype uint16")
    code, out, err = run(["decode", *named("r50k_base"), tmp_path / "train.bin", "--dtype", "uint16"],
                         capsys, monkeypatch)
    assert code == 0 and out == text, err
    loaded, offsets = bpe_fast.load_bin(tmp_path / "train.bin", dtype="uint16")
    assert loaded.tolist() == ids and offsets.tolist() == [0, len(ids)]
    np.array(ids, dtype=np.uint32).tofile(tmp_path / "wide.dat")              # any name, with --dtype
    code, out, _ = run(["decode", *named("r50k_base"), tmp_path / "wide.dat", "--dtype", "uint32"], capsys, monkeypatch)
    assert code == 0 and out == text


# -- 6. one rule for special tokens' text ------------------------------------------------------------

TEXT = "hi<|endoftext|> there"


@pytest.mark.parametrize("command", ["encode", "show", "stats"])
def test_special_tokens_text_is_refused_by_every_command_unless_allowed(command, tmp_path, capsys, monkeypatch):
    ref = reference("r50k_base")
    (tmp_path / "t.txt").write_text(TEXT, encoding="utf-8")
    args = {"encode": ["encode", *named("r50k_base"), tmp_path / "t.txt"],
            "show": ["show", *named("r50k_base"), tmp_path / "t.txt", "--ids", "--no-color"],
            "stats": ["stats", tmp_path / "t.txt", *named("r50k_base")]}[command]
    code, out, err = run(args, capsys, monkeypatch)
    assert_one_line_error(code, err, str(tmp_path / "t.txt"), "'<|endoftext|>'", "--allowed-special",
                          "--disallowed-special none")
    with pytest.raises(ValueError):                  # as tiktoken itself does
        ref.encode(TEXT)
    allowed, as_text = ref.encode(TEXT, allowed_special="all"), ref.encode(TEXT, disallowed_special=())
    for options, ids in ((["--allowed-special", "all"], allowed), (["--allowed-special", EOT], allowed),
                         (["--disallowed-special", "none"], as_text)):
        code, out, err = run([*args, *options], capsys, monkeypatch)
        assert code == 0, err
        if command == "encode":
            assert [int(i) for i in out.split()] == ids
        elif command == "show":
            lines = out.splitlines()
            assert lines[2].split() == [str(i) for i in ids]
            assert lines[0] == "|".join(ref.decode([i]) for i in ids)     # one piece for the token when allowed
        else:
            assert out.splitlines()[1].split()[2] == f"{len(ids):,}"


def test_special_token_options_are_checked(tmp_path, capsys, monkeypatch):
    code, _, err = run(["encode", *named("r50k_base"), "--allowed-special", "<|im_start|>"], capsys, monkeypatch, b"hi")
    assert_one_line_error(code, err, "--allowed-special <|im_start|>", "is not a special token", "<|endoftext|>")
    code, _, err = run(["show", *named("r50k_base"), "--text", "hi", "--disallowed-special", "<|x|>"],
                       capsys, monkeypatch)
    assert_one_line_error(code, err, "--disallowed-special <|x|>", "is not a special token")


def test_the_old_allow_special_flag_still_allows_all(tmp_path, capsys, monkeypatch):
    ref = reference("r50k_base")
    code, out, _ = run(["encode", *named("r50k_base"), "--allow-special"], capsys, monkeypatch, TEXT.encode())
    assert code == 0 and [int(i) for i in out.split()] == ref.encode(TEXT, allowed_special="all")


def test_a_refused_special_token_names_the_record_it_is_in(trained, tmp_path, capsys, monkeypatch):
    docs = ["fine", "also fine", f"not {EOT} fine"]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    trained.save(tmp_path / "tok.json")
    code, out, err = run(["encode", "-t", tmp_path / "tok.json", tmp_path / "d.jsonl", "-o", tmp_path / "x.bin"],
                         capsys, monkeypatch)
    assert_one_line_error(code, err, "d.jsonl, line 3", "'<|endoftext|>'", "--allowed-special")
    assert not (tmp_path / "x.bin").exists()
    with pytest.raises(EncodingError, match=r"d.jsonl, line 3: holds the special token .* allowed_special="):
        ef.encode_files(trained, [tmp_path / "d.jsonl"], tmp_path / "x.bin", format="bin",
                        disallowed_special="all", progress="none")
    summary = ef.encode_files(trained, [tmp_path / "d.jsonl"], tmp_path / "x.bin", format="bin",
                              allowed_special={EOT}, disallowed_special="all", progress="none")
    ids, offsets = bpe_fast.load_bin(tmp_path / "x.bin")
    assert ids[offsets[2]:].tolist() == trained.encode(docs[2], allowed_special={EOT}) and summary["documents"] == 3


# -- 12. convert --format huggingface for transformers, with the special tokens' roles ---------------

@pytest.mark.slow                      # importing transformers: about 3 s
def test_convert_names_the_special_tokens_roles_for_transformers(trained, tmp_path, capsys, monkeypatch):
    transformers = need("transformers")
    trained.save(tmp_path / "tok.json")
    code, out, err = run(["convert", tmp_path / "tok.json", f"{tmp_path}/hf/", "--format", "huggingface",
                          "--eos-token", EOT, "--pad-token", "<|pad|>", "--bos-token", "<|bos|>"], capsys, monkeypatch)
    assert code == 0, err
    for loader in (transformers.AutoTokenizer, transformers.PreTrainedTokenizerFast):
        fast = loader.from_pretrained(str(tmp_path / "hf"))
        assert (fast.eos_token, fast.pad_token, fast.bos_token) == (EOT, "<|pad|>", "<|bos|>")
        assert [fast.eos_token_id, fast.pad_token_id, fast.bos_token_id] == \
            [trained.special_tokens[t] for t in (EOT, "<|pad|>", "<|bos|>")]
        batch = fast(["The quick brown fox", "a"], padding=True)["input_ids"]
        assert batch[0] == trained.encode("The quick brown fox")
        assert batch[1][-1] == trained.special_tokens["<|pad|>"] or batch[1][0] == trained.special_tokens["<|pad|>"]


def test_convert_roles_with_a_name_without_suffix_make_the_folder(trained, tmp_path, capsys, monkeypatch):
    trained.save(tmp_path / "tok.json")
    code, _, err = run(["convert", tmp_path / "tok.json", tmp_path / "hf", "--format", "huggingface",
                        "--eos-token", EOT], capsys, monkeypatch)
    assert code == 0, err
    config = json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["eos_token"] == EOT
    assert bpe_fast.load(tmp_path / "hf").encode("The quick brown fox") == trained.encode("The quick brown fox")


@pytest.mark.parametrize("args,parts", [
    (["OUT/hf/", "--format", "huggingface", "--eos-token", "<|eot|>"],
     ["--eos-token <|eot|>: not a special token of this tokenizer", "'<|endoftext|>'"]),
    (["OUT/tok.tiktoken", "--pad-token", "<|pad|>"], ["--pad-token", "--format huggingface", "not tiktoken"]),
    (["OUT/mine.json", "--format", "huggingface", "--bos-token", "<|bos|>"], ["--bos-token", "give OUT as a folder"]),
])
def test_convert_roles_are_checked(args, parts, trained, tmp_path, capsys, monkeypatch):
    trained.save(tmp_path / "tok.json")
    args = [a.replace("OUT", str(tmp_path)) for a in args]
    code, _, err = run(["convert", tmp_path / "tok.json", *args], capsys, monkeypatch)
    assert_one_line_error(code, err, *parts)
    assert not any((tmp_path / "hf" / name).exists() for name in ("tokenizer.json", "tokenizer_config.json"))
