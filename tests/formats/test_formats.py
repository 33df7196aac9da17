"""The table of formats (bpe_fast/formats/): a format is one module and one line in the table, and
everything that depends on the format -- bpe_fast.load, Tokenizer.save and .load, the names that
say a format, the CLI's --format -- follows the table. Every format round-trips through it, is
told by its content, and refuses what it cannot hold before writing anything."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import bpe_fast
from bpe_fast import Tokenizer, TokenizerFileError, VocabularyError, formats
from bpe_fast.cli import _parser, main
from bpe_fast.formats import FileKind, Format, Peek, Vocabulary

from ..conftest import SMALL_CORPUS, need, needs_vocabs, small_text, vocab_path
from .conftest import every_format, small_trained

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


# -- every format round-trips, on the repository's own corpus (no peer library, no shared data) --

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


# -- issue 32, item 9: a name ending in tokenizer.json is Hugging Face's -----------------------------

MIXED = "héllo wörld 日本語 🎉🎉 <b>&amp;</b> Ελληνικά\n\tमराठी ﷽ 👩‍👩‍👧"


@pytest.mark.parametrize("name", ["my_tokenizer.json", "gpt-Tokenizer.JSON", "tokenizer.json"])
def test_a_name_ending_in_tokenizer_json_is_written_for_hugging_face(tmp_path, name):
    hf = need("tokenizers")
    tok = small_trained("cl100k")
    assert tok.save(tmp_path / name) == [str(tmp_path / name)]
    assert formats.sniff(tmp_path / name) == "huggingface"
    text = small_text()[:3000] + MIXED + "<|pad|>"
    assert hf.Tokenizer.from_file(str(tmp_path / name)).encode(text).ids == tok.encode(text, allowed_special="all")
    assert bpe_fast.load(tmp_path / name) == tok
    assert formats.format_of_path(tmp_path / name) == "huggingface"       # the CLI's -o too


def test_format_still_wins_and_other_json_names_stay_bpe_fasts(tmp_path):
    tok = small_trained("cl100k")
    tok.save(tmp_path / "my_tokenizer.json", format="bpe_fast")
    assert json.loads((tmp_path / "my_tokenizer.json").read_text())["format"] == "bpe_fast.tokenizer"
    assert bpe_fast.load(tmp_path / "my_tokenizer.json") == tok
    for name in ("tok.json", "tokenizers.json", "tokenizer.json.bak.json"):
        tok.save(tmp_path / name)
        assert formats.sniff(tmp_path / name) == "bpe_fast", name
