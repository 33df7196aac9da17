"""The table of formats (bpe_fast/formats/): a format is one module and one line in the table, and
everything that depends on the format -- bpe_fast.load, Tokenizer.save and .load, the names that
say a format, the CLI's --format -- follows the table."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import bpe_fast
from bpe_fast import Tokenizer, TokenizerFileError, VocabularyError, formats
from bpe_fast.cli import _parser, main
from bpe_fast.formats import FileKind, Format, Peek, Vocabulary

from ..conftest import SMALL_CORPUS, small_text

# -- a toy format, all a format module holds: "toy v1", the pattern, then one merge per line --------

TOY_KIND = FileKind("a toy file", "toy.read(path)")


def toy_sniff(peek: Peek) -> FileKind | None:
    return TOY_KIND if peek.head.startswith(b"toy v1\n") else None


def toy_read(peek: Peek) -> Vocabulary:
    lines = Path(peek.path).read_text(encoding="utf-8").split("\n")
    merges = [[int(i) for i in line.split()] for line in lines[2:] if line]
    return Vocabulary(merges, json.loads(lines[1]), source=str(peek.path))


def toy_write(tok, path) -> None:
    merges = "".join(f"{left} {right}\n" for left, right in tok.merges.tolist())
    Path(path).write_text(f"toy v1\n{json.dumps(tok.pattern)}\n{merges}", encoding="utf-8")


def toy_check_writable(pattern, special_tokens) -> None:
    if special_tokens:
        raise VocabularyError(f"a toy file holds no special tokens, and there are {len(special_tokens)}")


TOY = Format(name="toy", title="a toy file", description="NAME.toy: the pattern and the merges",
             sniff=toy_sniff, read=toy_read, write=toy_write, demo_name="demo-tokenizer.toy", suffixes=(".toy",),
             check_writable=toy_check_writable)


@pytest.fixture
def toy_in_the_table(monkeypatch):
    monkeypatch.setattr(formats, "FORMATS", (*formats.FORMATS, TOY))          # the one line


def toy_tokenizer() -> Tokenizer:
    return bpe_fast.train_from_iterator([small_text()], 400, pattern="gpt2", workers=1)


def test_a_format_in_the_table_is_saved_and_loaded_everywhere(tmp_path, toy_in_the_table):
    tok = toy_tokenizer()
    assert formats.format_of_path(tmp_path / "t.TOY") == "toy"                 # the name says it
    assert tok.save(tmp_path / "t.toy") == [str(tmp_path / "t.toy")]
    assert (tmp_path / "t.toy").read_text().startswith("toy v1\n")
    assert bpe_fast.load(tmp_path / "t.toy") == tok
    (tmp_path / "renamed.json").write_bytes((tmp_path / "t.toy").read_bytes())
    assert formats.sniff(tmp_path / "renamed.json") == "toy"
    assert bpe_fast.load(tmp_path / "renamed.json") == tok                   # told by its content
    with pytest.raises(TokenizerFileError, match=r"t.toy: this is a toy file, not bpe_fast's JSON: open it with "
                                                 r"bpe_fast.load\(path\) \(any format\) or toy.read\(path\)"):
        Tokenizer.load(tmp_path / "t.toy")
    with pytest.raises(VocabularyError, match="a toy file holds no special tokens, and there are 1"):
        formats.check_writable("toy", tok.pattern, ["<|endoftext|>"])


def test_a_format_in_the_table_is_on_the_command_line(tmp_path, toy_in_the_table, capsys, monkeypatch):
    commands = next(a for a in _parser()._actions if a.dest == "command").choices
    assert isinstance(commands, dict)
    train = commands["train"]
    option = next(a for a in train._actions if a.dest == "format")
    assert option.choices == ["bpe_fast", "huggingface", "tiktoken", "minbpe", "gpt2", "toy"]
    text = " ".join(train.format_help().split())
    assert "toy (NAME.toy: the pattern and the merges)" in text and ".bpe -> gpt2, .toy -> toy," in text
    toy_tokenizer().save(tmp_path / "t.toy")
    assert main(["convert", str(tmp_path / "t.toy"), str(tmp_path / "back.json")]) == 0
    assert main(["convert", str(tmp_path / "back.json"), str(tmp_path / "again"), "--format", "toy"]) == 0
    assert "(toy)" in capsys.readouterr().out
    assert bpe_fast.load(tmp_path / "again") == bpe_fast.load(tmp_path / "back.json") == toy_tokenizer()
    monkeypatch.setattr("bpe_fast.cli.train.train", lambda *a, **k: pytest.fail("trained before checking the format"))
    assert main(["train", str(SMALL_CORPUS), "--vocab-size", "300", "--special", "<s>", "-q",
                 "-o", str(tmp_path / "s.toy")]) == 2
    assert "a toy file holds no special tokens" in capsys.readouterr().err


def test_a_format_not_in_the_table_is_unknown(tmp_path, capsys):
    assert formats.format_of_path(tmp_path / "t.toy") == "bpe_fast"
    with pytest.raises(bpe_fast.ArgumentError, match=r"format 'toy' is not one of bpe_fast, huggingface, tiktoken, "
                                                     r"minbpe, gpt2$"):
        toy_tokenizer().save(tmp_path / "t.toy", format="toy")
    with pytest.raises(SystemExit):
        main(["convert", "cl100k_base", str(tmp_path / "t.toy"), "--format", "toy"])
    assert "invalid choice: 'toy'" in capsys.readouterr().err


# -- the table's own rules ------------------------------------------------------------------------

def test_every_format_module_is_in_the_table():
    package = Path(formats.__file__).parent
    modules = {p.stem for p in package.glob("*.py") if not p.stem.startswith("_")}
    assert {fmt.read.__module__.rpartition(".")[2] for fmt in formats.FORMATS} == modules
    assert len(set(formats.names())) == len(formats.FORMATS) == 5


def test_each_file_is_claimed_by_its_own_formats_sniff_only(tmp_path):
    tok = bpe_fast.train_from_iterator([small_text()], 400, pattern="gpt2", workers=1,
                                       special_tokens=["<|endoftext|>"])
    for fmt in formats.FORMATS:
        (tmp_path / fmt.name).mkdir()
        files = tok.save(tmp_path / fmt.name / fmt.demo_name, format=fmt.name)
        for file in files:
            claims = [other.name for other in formats.FORMATS if other.sniff(Peek(file)) is not None]
            for_people = file.endswith(".vocab")              # minbpe's .vocab is not for loading
            assert claims == ([] if for_people else [fmt.name]), file
        assert bpe_fast.load(files[0]) == tok


def test_a_json_file_is_parsed_once(tmp_path, monkeypatch):
    """The sniffs look at the parsed JSON, and the reader takes the same parse: a 200k-token
    tokenizer.json takes a sixth of its loading time to parse."""
    tok = toy_tokenizer()
    tok.save(tmp_path / "tokenizer.json", format="huggingface")
    tok.save(tmp_path / "t.json")
    parses = []
    real_load = json.load

    def counted_load(fh, **kw):
        parses.append(fh.name)
        return real_load(fh, **kw)

    monkeypatch.setattr("json.load", counted_load)
    for name in ("tokenizer.json", "t.json"):
        assert bpe_fast.load(tmp_path / name) == tok
    assert Tokenizer.load(tmp_path / "t.json") == tok
    assert parses == [str(tmp_path / n) for n in ("tokenizer.json", "t.json", "t.json")]


def test_a_file_no_sniff_claims_is_read_in_the_format_its_name_says(tmp_path):
    tok = toy_tokenizer()
    tok.save(tmp_path / "gpt2_vocab.bpe")
    lines = (tmp_path / "gpt2_vocab.bpe").read_text(encoding="utf-8").split("\n")
    (tmp_path / "gpt2_vocab.bpe").write_text("\n".join(lines[1:]), encoding="utf-8")     # no "#version" line
    assert formats.sniff(tmp_path / "gpt2_vocab.bpe") is None
    assert bpe_fast.load(tmp_path / "gpt2_vocab.bpe") == tok
    (tmp_path / "plain").write_text("hello\n")                           # no suffix: bpe_fast's JSON says why
    with pytest.raises(TokenizerFileError, match=r"plain, line 1: not valid JSON"):
        bpe_fast.load(tmp_path / "plain")


def test_a_folder_without_any_formats_files_names_them(tmp_path):
    with pytest.raises(TokenizerFileError, match=r"is a directory holding neither tokenizer.json \(huggingface\) nor "
                                                 r"encoder.json and vocab.bpe \(gpt2\); give a tokenizer file"):
        bpe_fast.load(tmp_path)
