"""bpe_fast fits the habits of Hugging Face, transformers, datasets and tiktoken users: the names
they call, the iterators they pass, the ids they expect. Each check is against the other library
itself where it is installed."""
from __future__ import annotations

import json
import warnings

import pytest

import bpe_fast
from bpe_fast import ArgumentError, EncodingError

from .conftest import need, needs_vocabs, small_text

SPECIALS = ["<|endoftext|>", "<|pad|>"]


@pytest.fixture(scope="module")
def docs() -> list[str]:
    text = small_text()
    return [text[i:i + 4000] for i in range(0, len(text), 4000)]


@pytest.fixture(scope="module")
def hf_trained(docs):
    """Hugging Face's BpeTrainer on the documents, as its docs show it (ByteLevel, full alphabet)."""
    hf = need("tokenizers")
    theirs = hf.Tokenizer(hf.models.BPE())
    theirs.pre_tokenizer = hf.pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = hf.trainers.BpeTrainer(vocab_size=600, show_progress=False, special_tokens=SPECIALS,
                                     initial_alphabet=hf.pre_tokenizers.ByteLevel.alphabet())
    theirs.train_from_iterator(docs, trainer)
    return theirs


@pytest.fixture(scope="module")
def ours(docs) -> bpe_fast.Tokenizer:
    return bpe_fast.train_from_iterator(docs, 600, pattern="gpt2", tie_break="huggingface",
                                        special_tokens=SPECIALS, progress="none")


# -- Hugging Face's ids and names -------------------------------------------------------------------

def test_huggingface_numbering_gives_bpetrainers_tokenizer_json_id_for_id(tmp_path, ours, hf_trained):
    ours.with_huggingface_ids().save(tmp_path / "tokenizer.json")
    mine, theirs = json.loads((tmp_path / "tokenizer.json").read_text()), json.loads(hf_trained.to_str())
    assert mine["model"]["vocab"] == theirs["model"]["vocab"]
    assert mine["model"]["merges"] == theirs["model"]["merges"]
    added = [[(t["id"], t["content"]) for t in data["added_tokens"]] for data in (mine, theirs)]
    assert added[0] == added[1]
    text = small_text()[:3000]
    assert ours.with_huggingface_ids().encode(text) == hf_trained.encode(text).ids
    assert ours.with_huggingface_ids().decode(ours.with_huggingface_ids().encode(text)) == text


def test_huggingface_names_answer_as_huggingface_does(tmp_path, ours):
    hf = need("tokenizers")
    ours.save(tmp_path / "tokenizer.json")
    theirs = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert ours.get_vocab() == theirs.get_vocab()
    assert len(ours) == ours.get_vocab_size() == theirs.get_vocab_size() == 600
    for token in ["Ġthe", "<|pad|>", "e", "no such token", "Ġ"]:
        assert ours.token_to_id(token) == theirs.token_to_id(token), token
    for i in [0, 255, 300, 598, 599, 600, 10**6]:
        assert ours.id_to_token(i) == theirs.id_to_token(i), i


@needs_vocabs
def test_a_vocabulary_with_unused_ids_keeps_its_special_ids_in_huggingface(tmp_path, vocabs):
    """cl100k has no id 100256: Hugging Face numbered <|endoftext|> 100256 until the specials were
    in model.vocab too."""
    hf = need("tokenizers")
    cl100k = bpe_fast.load("cl100k_base", vocabs)
    cl100k.save(tmp_path / "tokenizer.json")
    theirs = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    for token, i in cl100k.special_tokens.items():
        assert theirs.token_to_id(token) == i
    assert theirs.encode("hi<|endoftext|>").ids == cl100k.encode("hi<|endoftext|>", allowed_special="all")
    assert bpe_fast.load(tmp_path / "tokenizer.json") == cl100k


# -- transformers ------------------------------------------------------------------------------------

def test_to_transformers_pads_and_encodes_as_we_do(tmp_path, ours):
    transformers = need("transformers")   # not imported by name: mypy would check all 2,500 of its modules
    fast = ours.to_transformers(eos_token="<|endoftext|>", pad_token="<|pad|>")
    texts = ["Hello world, this is a test.", "Hi"]
    batch = fast(texts, padding=True)
    pad = ours.special_tokens["<|pad|>"]
    width = max(len(ours.encode(t)) for t in texts)
    assert batch["input_ids"] == [ours.encode(t) + [pad] * (width - len(ours.encode(t))) for t in texts]
    assert batch["attention_mask"][1] == [1] * len(ours.encode(texts[1])) + [0] * (width - len(ours.encode(texts[1])))
    assert fast.eos_token_id == ours.eot_token and fast.pad_token_id == pad and len(fast) == len(ours)
    fast.save_pretrained(tmp_path / "saved")
    again = transformers.AutoTokenizer.from_pretrained(tmp_path / "saved")
    assert again(texts[0])["input_ids"] == ours.encode(texts[0]) and again.pad_token == "<|pad|>"


def test_to_transformers_refuses_a_role_the_vocabulary_has_no_token_for(ours):
    need("transformers")
    with pytest.raises(ArgumentError, match=r"bos_token='<s>' is not a special token of this tokenizer"):
        ours.to_transformers(bos_token="<s>")


# -- tiktoken's names --------------------------------------------------------------------------------

@needs_vocabs
def test_tiktoken_names_answer_as_tiktoken_does(vocabs):
    tiktoken = need("tiktoken")
    ours = bpe_fast.load("cl100k_base", vocabs)
    theirs = tiktoken.get_encoding("cl100k_base") if _tiktoken_has_it(tiktoken) else ours.to_tiktoken()
    batch = [ours.encode("hello world"), ours.encode("bye"), []]
    assert ours.decode_batch(batch) == theirs.decode_batch(batch)
    assert ours.decode_bytes_batch(batch) == theirs.decode_bytes_batch(batch)
    assert ours.eot_token == theirs.eot_token and ours.n_vocab == theirs.n_vocab


def _tiktoken_has_it(tiktoken) -> bool:
    try:
        tiktoken.get_encoding("cl100k_base")
        return True
    except Exception:          # no network and no cache: build it from our own copy instead
        return False


def test_eot_token_of_a_tokenizer_without_one_says_so():
    tok = bpe_fast.train_from_iterator([small_text()], 300, progress="none")
    with pytest.raises(EncodingError, match="no <|endoftext|> special token"):
        _ = tok.eot_token


# -- training the way HF users train -----------------------------------------------------------------

def test_datasets_batches_and_records_train_like_plain_documents(docs):
    datasets = need("datasets")
    data = datasets.Dataset.from_dict({"text": docs, "id": list(range(len(docs)))})
    plain = bpe_fast.train_from_iterator(docs, 500, progress="none")
    batches = (data[i:i + 3]["text"] for i in range(0, len(data), 3))            # lists of str
    assert bpe_fast.train_from_iterator(batches, 500, progress="none") == plain
    assert bpe_fast.train_from_iterator(iter(data), 500, progress="none") == plain   # records (dicts)
    assert bpe_fast.train_from_iterator(data.iter(batch_size=4), 500, progress="none") == plain  # dicts of lists
    renamed = data.rename_column("text", "body")
    assert bpe_fast.train_from_iterator(iter(renamed), 500, field="body", progress="none") == plain
    with pytest.raises(bpe_fast.InputError, match=r"item 0: a record without the field 'text' \(fields: body, id\)"):
        bpe_fast.train_from_iterator(iter(renamed), 500, progress="none")


def test_length_gives_the_progress_a_total_of_documents():
    text = small_text()
    docs = [text[i:i + 200] for i in range(0, len(text), 200)]
    seen: list[tuple[str, int, int | None]] = []
    bpe_fast.train_from_iterator(iter(docs), 400, length=len(docs), batch_chars=1000,
                                 progress=lambda stage, done, total, _: seen.append((stage, done, total)))
    counting = [(done, total) for stage, done, total in seen if stage == "counting"]
    assert counting[-1] == (len(docs), len(docs)) and all(total == len(docs) for _, total in counting)
    assert len(counting) > 1                      # it moved as documents went, not only at the end


def test_show_progress_is_a_deprecated_alias_of_progress(docs, capsys):
    with pytest.warns(DeprecationWarning, match="show_progress= is deprecated: use progress="):
        tok = bpe_fast.train_from_iterator(docs, 400, show_progress=False)
    assert tok == bpe_fast.train_from_iterator(docs, 400, progress="none")
    assert capsys.readouterr().err == ""
    with pytest.raises(ArgumentError, match="give progress= or show_progress=, not both"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bpe_fast.train_from_iterator(docs, 400, progress="json", show_progress=True)


# -- special token ids and word tables ---------------------------------------------------------------

def test_special_token_ids_given_as_a_dict_are_honoured(docs):
    tok = bpe_fast.train_from_iterator(docs, 500, special_tokens={"<|pad|>": 499, "<|endoftext|>": 498},
                                       progress="none")
    assert tok.special_tokens == {"<|pad|>": 499, "<|endoftext|>": 498} and tok.vocab_size == 500
    as_list = bpe_fast.train_from_iterator(docs, 500, special_tokens=["<|endoftext|>", "<|pad|>"], progress="none")
    assert tok.merges.tolist() == as_list.merges.tolist()


def test_special_token_ids_that_cannot_be_honoured_are_refused_before_reading():
    with pytest.raises(ArgumentError, match=r"special_tokens ids \{'<\|endoftext\|>': 100\} cannot be honoured: "
                                            r"with vocab_size=500 the learned tokens take ids 0\.\.498"):
        bpe_fast.train(["no-such-file.txt"], 500, special_tokens={"<|endoftext|>": 100})
    with pytest.raises(ArgumentError, match="need one vocab_size"):
        bpe_fast.train_from_iterator(["x"], [400, 500], special_tokens={"<|endoftext|>": 499})


def test_a_word_table_is_not_relabelled_with_another_pattern(docs):
    table = bpe_fast.count_from_iterator(docs, pattern="gpt2", progress="none")
    with pytest.raises(ArgumentError, match="this word table was counted with gpt2"):
        bpe_fast.train_from_table(table, 400, pattern="cl100k")
    assert bpe_fast.train_from_table(table, 400, pattern="r50k_base").pattern_name == "gpt2"   # the same pattern


def test_a_tokenizer_json_that_would_encode_otherwise_is_refused_not_misread(tmp_path, ours):
    ours.save(tmp_path / "tokenizer.json")
    data = json.loads((tmp_path / "tokenizer.json").read_text())
    lowercased = dict(data, normalizer={"type": "Lowercase"})
    (tmp_path / "lower.json").write_text(json.dumps(lowercased))
    with pytest.raises(bpe_fast.TokenizerFileError, match=r"lower.json: normalizer 'Lowercase' is not supported"):
        bpe_fast.load(tmp_path / "lower.json")
    plain = dict(data, added_tokens=[dict(t, special=False) if t["content"] == "<|pad|>" else t
                                     for t in data["added_tokens"]])
    (tmp_path / "plain.json").write_text(json.dumps(plain))
    with pytest.raises(bpe_fast.TokenizerFileError, match=r"plain.json: added_tokens holds 1 token\(s\) that are not "
                                                          r"special, such as '<\|pad\|>'"):
        bpe_fast.load(tmp_path / "plain.json")
    assert bpe_fast.load(tmp_path / "tokenizer.json") == ours


# -- the command line's traps ------------------------------------------------------------------------

@pytest.fixture()
def saved(tmp_path, ours) -> str:
    path = tmp_path / "tok.json"
    ours.save(path)
    return str(path)


def test_decode_takes_the_ids_themselves(saved, ours, capsysbinary):
    from bpe_fast.cli import main
    ids = ours.encode("Hello world, again")
    assert main(["decode", "-t", saved, " ".join(map(str, ids))]) == 0
    assert capsysbinary.readouterr().out == b"Hello world, again"
    assert main(["decode", "-t", saved, json.dumps(ids)]) == 0
    assert capsysbinary.readouterr().out == b"Hello world, again"


@pytest.mark.parametrize("form", ["text", "json", "bin"])
def test_decode_reads_what_encode_writes(tmp_path, saved, form, capsysbinary):
    from bpe_fast.cli import main
    text = small_text()
    (tmp_path / "in.txt").write_text(text)
    out = tmp_path / ("ids.bin" if form == "bin" else f"ids.{form}")
    assert main(["encode", "-t", saved, "--lines", "--format", form, "-o", str(out), str(tmp_path / "in.txt")]) == 0
    capsysbinary.readouterr()
    assert main(["decode", "-t", saved, str(out)]) == 0
    assert capsysbinary.readouterr().out == text.encode()


def test_output_to_a_folder_or_to_standard_output(tmp_path, ours, monkeypatch, capsysbinary):
    from bpe_fast.cli import main
    corpus = tmp_path / "c.txt"
    corpus.write_text(small_text())
    monkeypatch.chdir(tmp_path)
    train = ["train", str(corpus), "--vocab-size", "400", "-q"]
    assert main([*train, "-o", "newdir/"]) == 2
    assert "newdir/: is a folder; give a file name in it" in capsysbinary.readouterr().err.decode()
    assert not (tmp_path / "newdir").exists()
    assert main([*train, "-o", "hf/", "--format", "huggingface"]) == 0
    assert (tmp_path / "hf" / "tokenizer.json").is_file() and not (tmp_path / "hf").is_file()
    capsysbinary.readouterr()
    assert main([*train, "-o", "-"]) == 0
    written = capsysbinary.readouterr()
    assert json.loads(written.out)["format"] == "bpe_fast.tokenizer" and b"saved      standard output" in written.err
    assert not (tmp_path / "-").exists()
    assert main(["count", str(corpus), "-o", "-"]) == 2
    assert b"a word table is a binary .npz file" in capsysbinary.readouterr().err
    assert main(["encode", "-t", "hf/tokenizer.json", "-o", "-", str(corpus)]) == 0
    assert capsysbinary.readouterr().out.split() and not (tmp_path / "-").exists()


def test_a_vocab_size_with_a_thousands_separator_is_refused(tmp_path, capsys):
    from bpe_fast.cli import main
    with pytest.raises(SystemExit):
        main(["train", "x.txt", "--vocab-size", "32,768", "-o", str(tmp_path / "t.json")])
    assert "'32,768' looks like one number with thousands separators: write 32768" in capsys.readouterr().err


def test_stats_reads_every_input_as_encoding_does(tmp_path, saved, ours, capsys):
    import gzip
    from bpe_fast.cli import main
    text = small_text()
    folder = tmp_path / "corpus"
    (folder / ".git" / "objects").mkdir(parents=True)
    (folder / ".git" / "objects" / "pack").write_bytes(b"\x00\x01binary junk")
    (folder / "a.txt").write_text(text)
    (tmp_path / "b.txt.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "c.jsonl").write_text(json.dumps({"text": text}) + "\n")
    assert main(["stats", "-t", saved, str(folder), str(tmp_path / "b.txt.gz"), str(tmp_path / "c.jsonl")]) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()[1:]}
    expected = [f"{len(text.encode()):,}", f"{len(ours.encode(text, disallowed_special=())):,}"]
    assert rows["a.txt"][:2] == rows["b.txt.gz"][:2] == rows["c.jsonl"][:2] == expected
    assert "pack" not in rows                                  # the hidden .git/ is no corpus


def test_a_hidden_folder_is_not_read_as_corpus(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / "doc.txt").write_text("only this text")
    assert bpe_fast.count([tmp_path], progress="none") == bpe_fast.count([tmp_path / "doc.txt"], progress="none")
