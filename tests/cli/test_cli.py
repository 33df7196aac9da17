"""The CLI's main job: the built-in demo, progress bars on request, summaries."""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

import bpe_fast
from bpe_fast.cli import _parser, main
from bpe_fast.cli.train import DEMO_SAMPLE
from bpe_fast.paths import stdlib_sources

from ..conftest import SMALL_CORPUS, need, needs_vocabs, small_text, vocab_dir, vocab_path


def test_demo_corpus_is_the_standard_library():
    files = stdlib_sources(limit_bytes=1 << 20)
    assert files and all(f.endswith(".py") for f in files)
    assert any(f.endswith("abc.py") for f in stdlib_sources())


def test_demo_says_where_it_writes_first_writes_to_a_temp_folder_and_shows_what_it_learned(
        tmp_path, monkeypatch, capsys):
    (tmp_path / "cwd").mkdir()
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))     # the demo's temp folder goes here
    monkeypatch.setattr("bpe_fast.cli.train.stdlib_sources", lambda: stdlib_sources(limit_bytes=300_000))
    assert main(["train", "--demo", "--vocab-size", "600", "-q"]) == 0
    captured = capsys.readouterr()
    assert list((tmp_path / "cwd").iterdir()) == []             # nothing in the current folder
    first = captured.err.splitlines()[0]                         # said before training, on stderr
    said = re.fullmatch(r"demo: training a 600-token vocabulary on \d+ files of the Python standard library "
                        r"\(.*\); it will be written to (.*demo-tok\.json)", first)
    assert said, first
    written = Path(said.group(1))
    assert written.parent.parent == tmp_path / "tmp" and written.parent.name.startswith("bpe-fast-demo-")
    out = captured.out
    assert f"saved      {written} (bpe_fast)" in out
    tok = bpe_fast.Tokenizer.load(written)
    assert tok.vocab_size == 600
    longest = max((tok.token_bytes(i) for i in tok.merge_ids.tolist()), key=len).decode("utf-8", "replace")
    assert re.search(r"^longest tokens: ", out, re.M)
    shown = longest if longest.strip() else f"{len(longest)} spaces"
    assert shown in out.split("longest tokens: ")[1].splitlines()[0]
    ids = tok.encode_ordinary(DEMO_SAMPLE)
    assert f"-> {len(ids)} tokens for {len(DEMO_SAMPLE)} bytes: " in out
    assert "|".join(tok.decode([i]) for i in ids) in out and f"ids {' '.join(map(str, ids))}" in out
    assert f"bpe-fast show -t {written} " in out


def test_demo_with_output_writes_there_in_the_format_asked(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("bpe_fast.cli.train.stdlib_sources", lambda: stdlib_sources(limit_bytes=200_000))
    assert main(["train", "--demo", "--vocab-size", "500", "-q", "-o", str(tmp_path / "d.tiktoken")]) == 0
    assert f"it will be written to {tmp_path / 'd.tiktoken'}, {tmp_path / 'd.tiktoken.json'}" in capsys.readouterr().err
    assert bpe_fast.load(tmp_path / "d.tiktoken").vocab_size == 500


def test_progress_bars_when_asked(capsys):
    docs = [f"line {i} of text\n" for i in range(2000)]
    bpe_fast.train_from_iterator(docs, 300, progress="bar", workers=1)
    err = capsys.readouterr().err
    assert "counting" in err and "merging" in err and "44/44" in err


def test_off_a_terminal_each_stage_says_one_line_and_draws_no_bar(capsys):
    bpe_fast.train_from_iterator(["some text here " * 20], 260, workers=1)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in lines] == ["bpe_fast counting", "bpe_fast merging"]
    assert "(characters 300, chunks 61, distinct 5)" in lines[0] and "(merges 4)" in lines[1]
    bpe_fast.train_from_iterator(["some text here " * 20], 260, workers=1, progress="none")
    assert capsys.readouterr().err == ""


def test_a_terminal_without_rows_gets_no_bar(monkeypatch):
    from bpe_fast import progress

    class Terminal:
        def isatty(self):
            return True

        def fileno(self):
            return 2

    monkeypatch.setattr(progress.sys, "stderr", Terminal())
    monkeypatch.setattr(progress.os, "get_terminal_size", lambda fd: os.terminal_size((0, 0)))
    assert progress.mode_of("auto") == "summary"
    monkeypatch.setattr(progress.os, "get_terminal_size", lambda fd: os.terminal_size((80, 24)))
    assert progress.mode_of("auto") == "bar"


def test_jupyter_without_ipywidgets_gets_the_text_bar_not_a_warning(monkeypatch):
    from bpe_fast import progress
    monkeypatch.setattr(progress, "_in_notebook", lambda: True)
    monkeypatch.setitem(sys.modules, "ipywidgets", None)          # "not installed"
    import tqdm.std
    assert progress._tqdm_class() is tqdm.std.tqdm


def test_the_merging_time_left_follows_the_falling_cost_of_merges():
    """Merge k costs about k**-0.8 here (a power law, as on real corpora): the average rate would
    say 5x too much at 10%; the estimate is within 20%."""
    from bpe_fast.progress import decaying_eta
    total = 20_000
    cost = [(k + 1) ** -0.8 for k in range(total)]
    elapsed, samples = 0.0, []
    for k, c in enumerate(cost, 1):
        elapsed += c
        if k % 256 == 0:
            samples.append((k, elapsed))
    done, spent = samples[7]                       # 2048 merges, about a tenth
    truth = sum(cost[done:])
    assert abs(decaying_eta(samples, done, total) - truth) < 0.2 * truth
    assert spent / done * (total - done) > 2 * truth         # what the average rate would say


def test_progress_as_json_lines_for_logs(capsys):
    import json
    docs = [f"line {i} of text\n" for i in range(2000)]
    bpe_fast.train_from_iterator(docs, 300, progress="json", workers=1)
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    stages = [line["stage"] for line in lines]
    assert {"counting", "pairs", "merging"} <= set(stages)
    last = [line for line in lines if line["stage"] == "merging"][-1]
    assert last["current"] == last["total"] == 44 and last["elapsed"] >= 0
    assert all(set(line) == {"stage", "current", "total", "elapsed"} | ({"seconds_left"} if line["stage"] == "merging"
                                                                         else set()) for line in lines)


def test_progress_callback_and_the_logger(caplog):
    seen = []
    with caplog.at_level("INFO", logger="bpe_fast"):
        bpe_fast.train_from_iterator([small_text()], 270, workers=1,
                                     progress=lambda stage, done, total, elapsed: seen.append((stage, done, total)))
    assert ("merging", 14, 14) in seen
    pairs = [s for s in seen if s[0] == "pairs"]
    assert pairs and pairs[-1][1] == pairs[-1][2] > 0           # the pair count reports too
    assert any("counting:" in r.message for r in caplog.records)
    assert any("merging:" in r.message and "merges 14" in r.message for r in caplog.records)


def test_a_stage_counted_ahead_reports_when_taken_on_the_main_thread(capsys, caplog):
    """SuperBPE with workers counts stage two while stage one learns; its progress waits: one
    summary line and one log record each, stage by stage in order; a callback is called from
    the main thread only, the count ahead once (done, with its own elapsed time) after stage
    one's merging; JSON gives it one line."""
    import itertools
    import json
    import threading
    docs = [small_text()] * 3
    settings: dict[str, Any] = dict(superword_at=500, workers=2, batch_chars=4000)   # several batches: workers
    with caplog.at_level("INFO", logger="bpe_fast"):
        bpe_fast.train_from_iterator(docs, 700, **settings)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in lines] == ["bpe_fast counting", "bpe_fast merging"] * 2
    assert [r.message.split(":")[0] for r in caplog.records] == ["counting", "merging"] * 2
    assert all(r.threadName == "MainThread" for r in caplog.records)
    seen = []

    def callback(stage, done, total, elapsed):
        seen.append((stage, done, total, elapsed, threading.current_thread() is threading.main_thread()))

    bpe_fast.train_from_iterator(docs, 700, progress=callback, **settings)
    assert all(on_main for *_, on_main in seen)
    runs = [(stage, list(events)) for stage, events in itertools.groupby(seen, key=lambda e: e[0])]
    assert [stage for stage, _ in runs] == ["counting", "pairs", "merging", "counting", "pairs", "merging"]
    [(_, done, total, elapsed, _)] = runs[3][1]
    assert (done, total) == runs[0][1][-1][1:3] and done == sum(map(len, docs)) and elapsed > 0
    bpe_fast.train_from_iterator(docs, 700, progress="json", **settings)
    stages = [json.loads(line)["stage"] for line in capsys.readouterr().err.splitlines()]
    assert [stage for stage, _ in itertools.groupby(stages)][3] == "counting"
    assert stages.count("counting") - stages[:stages.index("merging")].count("counting") == 1


def test_a_deferred_stage_shows_one_complete_report_however_long_ago_it_ended(capsys):
    import json
    from bpe_fast.progress import Bar, Deferred
    deferred = Deferred("json")
    with Bar(deferred, "counting", 100, unit="B") as bar:
        bar.advance(60)
        bar.advance(40)
    time.sleep(0.3)                        # longer than JSON lines' spacing
    assert capsys.readouterr().err == ""
    deferred.show()
    [line] = [json.loads(text) for text in capsys.readouterr().err.splitlines()]
    assert line["stage"] == "counting" and line["current"] == line["total"] == 100 and line["elapsed"] >= 0.3


def test_bad_progress_option_is_refused():
    with pytest.raises(bpe_fast.ArgumentError, match="progress must be one of auto, bar, json, none"):
        bpe_fast.train_from_iterator(["text"], 270, progress="fancy")


def test_cli_progress_json(tmp_path):
    import subprocess
    import sys
    corpus = tmp_path / "c.txt"
    corpus.write_text("some words to count and merge\n" * 200)
    proc = subprocess.run([sys.executable, "-m", "bpe_fast", "train", str(corpus), "--vocab-size", "300",
                           "--progress", "json", "-o", str(tmp_path / "t.json")], capture_output=True, text=True)
    assert proc.returncode == 0 and '"stage": "merging"' in proc.stderr



# -- the command line as a user types it ---------------------------------------------------------

def bpe_fast_cli(*args, env=None, stdin: str | None = None, cwd=None) -> subprocess.CompletedProcess:
    """``bpe-fast ARGS...`` in a new process: the installed command (beside this Python), else
    ``python -m bpe_fast``."""
    script = Path(sys.executable).with_name("bpe-fast")
    cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "bpe_fast"]
    return subprocess.run(cmd + [str(a) for a in args], capture_output=True, text=True, input=stdin,
                          env=None if env is None else dict(os.environ, **env), cwd=cwd, timeout=300)


TRAIN = ["train", str(SMALL_CORPUS), "--vocab-size", "400", "--pattern", "gpt2", "--special", "<|endoftext|>",
         "--workers", "1", "-q"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> bpe_fast.Tokenizer:
    """What `train` learns on the small corpus, in bpe_fast's JSON."""
    path = tmp_path_factory.mktemp("ref") / "ref.json"
    assert main([*TRAIN, "-o", str(path)]) == 0
    return bpe_fast.load(path)


# (what the user gives -o, other options, the format written, the files written)
OUTPUTS = [
    ("tok.json", [], "bpe_fast", ["tok.json"]),
    ("tokenizer.json", ["--format", "huggingface"], "huggingface", ["tokenizer.json"]),
    ("tok.tiktoken", [], "tiktoken", ["tok.tiktoken", "tok.tiktoken.json"]),
    ("tok.model", [], "minbpe", ["tok.model", "tok.vocab"]),
    ("tok", ["--format", "minbpe"], "minbpe", ["tok.model", "tok.vocab"]),
    ("tok_vocab.bpe", [], "gpt2", ["tok_encoder.json", "tok_vocab.bpe"]),
    ("gpt2tok/", ["--format", "gpt2"], "gpt2", ["gpt2tok/encoder.json", "gpt2tok/vocab.bpe"]),
    ("tok.json", ["--format", "bpe_fast"], "bpe_fast", ["tok.json"]),
]


@pytest.mark.parametrize("output,options,fmt,files", OUTPUTS, ids=[f"{o} {' '.join(x)}" for o, x, _, _ in OUTPUTS])
def test_train_writes_the_format_the_name_or_format_says(tmp_path, capsys, reference, output, options, fmt, files):
    assert main([*TRAIN, "-o", str(tmp_path / output), *options]) == 0
    out = capsys.readouterr().out
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == sorted(files)
    for f in files:
        assert f"saved      {tmp_path / f} ({fmt})" in out
    assert bpe_fast.load(tmp_path / files[0]) == reference
    if output != "tok":
        assert bpe_fast.load(tmp_path / output) == reference
    if fmt == "huggingface":
        hf = need("tokenizers")
        text = small_text()[:2000]
        assert hf.Tokenizer.from_file(str(tmp_path / output)).encode(text).ids == reference.encode(text)


def test_a_trained_tiktoken_file_encodes_from_the_command_line(tmp_path, reference):
    """The issue's case: `bpe-fast encode -t tok.tiktoken` failed (no pattern in the file)."""
    trained = bpe_fast_cli(*TRAIN, "-o", tmp_path / "tok.tiktoken")
    assert trained.returncode == 0, trained.stderr
    text = "Hello there, <|endoftext|> general Kenobi."
    encoded = bpe_fast_cli("encode", "-t", tmp_path / "tok.tiktoken", "--allow-special", stdin=text)
    assert encoded.returncode == 0, encoded.stderr
    assert [int(i) for i in encoded.stdout.split()] == reference.encode(text, allowed_special="all")


def test_the_names_people_type_give_their_format(tmp_path, reference):
    """tokenizer.json is Hugging Face's (as HF users save and load it), encoder.json GPT-2's; an
    explicit --format still wins; any other .json name is bpe_fast's own JSON."""
    hf = need("tokenizers")
    assert main([*TRAIN, "-o", str(tmp_path / "tokenizer.json")]) == 0
    theirs = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    text = small_text()[:2000]
    assert theirs.encode(text).ids == reference.encode(text, allowed_special="all")
    (tmp_path / "sub").mkdir()
    reference.save(tmp_path / "sub" / "tokenizer.json")                    # the Python API the same
    assert hf.Tokenizer.from_file(str(tmp_path / "sub" / "tokenizer.json")).encode(text).ids == theirs.encode(text).ids
    assert main([*TRAIN, "-o", str(tmp_path / "encoder.json")]) == 0
    assert (tmp_path / "vocab.bpe").is_file() and bpe_fast.load(tmp_path / "encoder.json") == reference
    (tmp_path / "own").mkdir()
    assert main([*TRAIN, "-o", str(tmp_path / "own" / "tokenizer.json"), "--format", "bpe_fast"]) == 0
    assert json.loads((tmp_path / "own" / "tokenizer.json").read_text())["format"] == "bpe_fast.tokenizer"
    assert main([*TRAIN, "-o", str(tmp_path / "tok.json")]) == 0
    assert json.loads((tmp_path / "tok.json").read_text())["format"] == "bpe_fast.tokenizer"


def test_several_sizes_in_any_format(tmp_path, capsys):
    args = [*TRAIN[:3], "300,350", *TRAIN[4:]]
    assert main([*args, "-o", str(tmp_path / "tok-{vocab_size}.tiktoken")]) == 0
    assert main([*args, "-o", str(tmp_path / "m-{vocab_size}.model")]) == 0
    assert main([*args, "-o", str(tmp_path / "hf-{vocab_size}.json"), "--format", "huggingface"]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["hf-300.json", "hf-350.json", "m-300.model", "m-300.vocab", "m-350.model", "m-350.vocab",
                     "tok-300.tiktoken", "tok-300.tiktoken.json", "tok-350.tiktoken", "tok-350.tiktoken.json"]
    for size in (300, 350):
        toks = [bpe_fast.load(tmp_path / f"{stem}-{size}{suffix}")
                for stem, suffix in (("tok", ".tiktoken"), ("m", ".model"), ("hf", ".json"))]
        assert toks[0] == toks[1] == toks[2] and toks[0].vocab_size == size


@pytest.mark.parametrize("args,message", [
    (["-o", "tok.model", "--format", "tiktoken"], "tok.model: the name ends in .model, which means the minbpe format, "
                                                  "but the format asked for is tiktoken"),
    (["-o", "tok.json", "--format", "tiktoken"], "the tiktoken format is not JSON; give a name ending in .tiktoken"),
    (["-o", "tok.txt", "--format", "gpt2"], "GPT-2's format is two files, encoder.json and vocab.bpe"),
    (["-o", "vocab.bpe", "--pattern", "cl100k"], "GPT-2's files hold no pattern (every reader splits with GPT-2's), "
                                                 "and this tokenizer splits with cl100k"),
    (["-o", "tok.model", "--special", "a b"], "minbpe's .model holds 'token id' per line"),
])
def test_a_format_that_cannot_be_written_fails_before_training(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("bpe_fast.cli.train.train", lambda *a, **k: pytest.fail("trained before checking -o"))
    assert main([*TRAIN, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bpe-fast train: error: ") and message in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def bases(tmp_path, reference) -> dict[str, str]:
    """Bases to train on from: the reference (its special token after its merges), and one with a special token
    GPT-2's files cannot hold; the named encodings, where their files are."""
    reference.save(tmp_path / "base.json")
    bpe_fast.Tokenizer(reference.merges, bpe_fast.GPT2, ["<s>"]).save(tmp_path / "odd.json")
    return {"reference": str(tmp_path / "base.json"), "odd specials": str(tmp_path / "odd.json"),
            "cl100k_base": "cl100k_base"}


@pytest.mark.parametrize("base,args,message", [
    ("reference", ["--vocab-size", "450", "-o", "x.model"],
     "-o x.model: a minbpe .model file numbers bytes 0..255 and merge m as 256 + m, but the new tokens take ids "
     "after the base's special tokens"),
    ("cl100k_base", ["--vocab-size", "100300", "-o", "x.model"], "but the base's tokens have other ids"),
    (None, ["--vocab-size", "450", "--superword-at", "300", "-o", "x.model"],
     "but superword training's stage two takes ids after stage one's special tokens"),
    ("odd specials", ["--vocab-size", "450", "-o", "x_vocab.bpe"], "'<s>' is not: save as tokenizer.json"),
])
def test_a_result_the_format_cannot_hold_fails_before_training(tmp_path, capsys, monkeypatch, reference, base, args,
                                                               message):
    if base == "cl100k_base" and vocab_dir() is None:
        pytest.skip("needs the named encodings' files")
    base_args = ["--base", bases(tmp_path, reference)[base]] if base else []
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr("bpe_fast.cli.train.train", lambda *a, **k: pytest.fail("trained before checking -o"))
    assert main([*TRAIN[:2], *TRAIN[4:], *base_args, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("base,vocab_size", [("reference", 450), ("gpt2", 50300)])
def test_training_on_from_a_base_splits_with_its_pattern_as_the_api_does(tmp_path, reference, base, vocab_size):
    """Without --pattern, the base's (GPT-2's here), not cl100k: so GPT-2's files can hold the result."""
    if base == "gpt2" and vocab_dir() is None:
        pytest.skip("needs the named encodings' files")
    spec = bases(tmp_path, reference)[base] if base == "reference" else base
    assert main(["train", str(SMALL_CORPUS), "--base", spec, "--vocab-size", str(vocab_size), "--workers", "1", "-q",
                 "-o", str(tmp_path / "out/"), "--format", "gpt2"]) == 0
    api = bpe_fast.train([SMALL_CORPUS], vocab_size, base=bpe_fast.load(spec), workers=1, progress="none")
    assert api.pattern == bpe_fast.GPT2 and bpe_fast.load(tmp_path / "out" / "vocab.bpe") == api


def test_a_word_tables_pattern_is_checked_against_the_format_before_training(tmp_path, capsys, monkeypatch):
    assert main(["count", str(SMALL_CORPUS), "-o", str(tmp_path / "c.npz"), "-q", "--workers", "1"]) == 0
    monkeypatch.setattr("bpe_fast.cli.train.train_from_table",
                        lambda *a, **k: pytest.fail("trained before checking -o"))
    assert main(["train", "--counts", str(tmp_path / "c.npz"), "--vocab-size", "300", "-o",
                 str(tmp_path / "t_vocab.bpe")]) == 2
    assert "this tokenizer splits with cl100k" in capsys.readouterr().err


def test_convert_between_every_format(tmp_path, capsys, reference):
    """bpe_fast JSON -> every format -> every format: the same tokenizer all the way."""
    reference.save(tmp_path / "ref.json")
    formats = [("a.tiktoken", []), ("b.model", []), ("c/", ["--format", "gpt2"]),
               ("d.json", ["--format", "huggingface"]), ("e.json", [])]
    sources = [tmp_path / "ref.json"] + [tmp_path / "from_ref" / target for target, _ in formats]
    for source in sources:
        folder = tmp_path / ("from_ref" if source.name == "ref.json" else f"from_{source.name.replace('.', '_')}")
        folder.mkdir()
        for target, options in formats:
            assert main(["convert", str(source), f"{folder}/{target}", *options]) == 0, (source, target)
            assert bpe_fast.load(folder / target) == reference, (source, target)
    out = capsys.readouterr().out
    assert "read       " in out and "vocab size 400 (143 merges, 1 special), pattern gpt2" in out
    assert re.search(r"^wrote      .*a.tiktoken.json \(tiktoken\)$", out, re.M)


@needs_vocabs
def test_convert_a_named_encoding_and_use_the_result(tmp_path):
    done = bpe_fast_cli("convert", "cl100k_base", tmp_path / "cl100k.tiktoken")
    assert done.returncode == 0, done.stderr
    assert "vocab size 100,277 (100,000 merges, 5 special), pattern cl100k" in done.stdout
    text = "Hello, world! <|endoftext|>"
    encoded = bpe_fast_cli("encode", "-t", tmp_path / "cl100k.tiktoken", "--allow-special", stdin=text)
    assert encoded.returncode == 0, encoded.stderr
    assert [int(i) for i in encoded.stdout.split()] == bpe_fast.load("cl100k_base").encode(text, allowed_special="all")


def test_a_tiktoken_file_without_sidecar_needs_pattern_and_the_cli_says_how(tmp_path, capsys, reference):
    reference.save(tmp_path / "bare.tiktoken")
    (tmp_path / "bare.tiktoken.json").unlink()
    assert main(["show", "-t", str(tmp_path / "bare.tiktoken"), "hello"]) == 2
    err = capsys.readouterr().err
    assert "a .tiktoken file holds no pattern, and there is no sidecar bare.tiktoken.json" in err
    assert f"bpe-fast convert {tmp_path / 'bare.tiktoken'} " in err and "--pattern cl100k" in err
    assert "pattern=" not in err and "Tokenizer." not in err                      # no Python in a CLI message
    assert main(["convert", str(tmp_path / "bare.tiktoken"), str(tmp_path / "t.json"), "--pattern", "gpt2"]) == 0
    again = bpe_fast.load(tmp_path / "t.json")
    assert again.pattern == reference.pattern and again.merges.tolist() == reference.merges.tolist()
    assert main(["convert", str(tmp_path / "t.json"), str(tmp_path / "u.json"), "--pattern", "gpt2"]) == 2
    assert "--pattern gpt2: IN" in capsys.readouterr().err


def test_named_encoding_errors_name_cli_options(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("BPE_FAST_VOCABS", raising=False)
    monkeypatch.setattr("bpe_fast.paths.shared_dir", lambda: None)      # as on a machine without ../shared
    assert main(["show", "-t", "o200k_base", "hello"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bpe-fast show: error: o200k_base.tiktoken not found (looked in ")
    assert "give --vocabs FOLDER" in err and "BPE_FAST_VOCABS" in err and "path=" not in err


def test_a_damaged_file_in_tiktokens_cache_is_an_error_naming_it(tmp_path, monkeypatch):
    from bpe_fast.formats._named import ENCODINGS
    from bpe_fast.paths import tiktoken_cache_file
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))       # looked in before the shared vocabs/
    monkeypatch.delenv("BPE_FAST_VOCABS", raising=False)
    file = ENCODINGS["r50k_base"].files[0]
    damaged = tiktoken_cache_file(file.url)
    assert damaged is not None                                    # caching is on: TIKTOKEN_CACHE_DIR is set
    damaged.write_text("IQ== 0\n")
    done = bpe_fast_cli("encode", "-t", "r50k_base", stdin="hello")
    assert done.returncode == 2
    assert f"{damaged}: its SHA-256 is " in done.stderr and f"not {file.sha256}" in done.stderr


@needs_vocabs
def test_python_load_works_wherever_the_cli_does(tmp_path):
    """`bpe_fast.load("gpt2")` and `-t gpt2` find the same files, also in tiktoken's cache only."""
    from bpe_fast.formats._named import ENCODINGS
    code = ("import bpe_fast, sys; print(' '.join(map(str, bpe_fast.load('gpt2').encode(sys.stdin.read()))))")
    cache = tmp_path / "cache"
    cache.mkdir()
    env = {"TIKTOKEN_CACHE_DIR": str(cache), "BPE_FAST_VOCABS": str(tmp_path / "none")}
    names = subprocess.run([sys.executable, "-c", "from bpe_fast.paths import tiktoken_cache_file as f; "
                            + "; ".join(f"print(f({f.url!r}))" for f in ENCODINGS["gpt2"].files)],
                           env=dict(os.environ, **env), capture_output=True, text=True).stdout.split()
    for f, name in zip(ENCODINGS["gpt2"].files, names):
        shutil.copy(vocab_path(f.name), name)
    cli = bpe_fast_cli("encode", "-t", "gpt2", env=env, stdin="Hello, world!")
    python = subprocess.run([sys.executable, "-c", code], input="Hello, world!", capture_output=True, text=True,
                            env=dict(os.environ, **env))
    assert cli.stdout.split() == python.stdout.split() == ["15496", "11", "995", "0"], (cli.stderr, python.stderr)


# -- --help ----------------------------------------------------------------------------------------

def subcommand_parsers() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


@pytest.mark.parametrize("name", sorted(subcommand_parsers()))
def test_help_shows_every_default_and_every_required_option(name):
    parser = subcommand_parsers()[name]
    text = " ".join(parser.format_help().split())
    for action in parser._actions:
        if not action.option_strings or action.help in (None, argparse.SUPPRESS) or action.default == argparse.SUPPRESS:
            continue
        help_string = parser.formatter_class(prog="x")._get_help_string(action)
        assert help_string is not None
        helped = " ".join((help_string % vars(action)).split())
        assert helped in text
        if action.required:
            assert "required" in helped, (name, action.option_strings)
        elif action.default is not None and not isinstance(action.default, (bool, list)):
            assert "default" in helped.lower(), (name, action.option_strings, helped)


def test_help_says_how_the_format_is_chosen_and_that_json_is_ambiguous():
    text = " ".join(bpe_fast_cli("train", "--help").stdout.split())
    assert (".tiktoken -> tiktoken, .model -> minbpe, .bpe -> gpt2, tokenizer.json -> huggingface, encoder.json -> "
            "gpt2; any other .json name means bpe_fast") in text
    assert "--vocab-size SIZES required (except with --demo" in text
    assert "-t TOKENIZER, --tokenizer TOKENIZER" in " ".join(bpe_fast_cli("show", "--help").stdout.split())
    assert "(required)" in bpe_fast_cli("count", "--help").stdout


# -- show: text, or a file --------------------------------------------------------------------------

def test_show_a_missing_file_is_an_error_and_text_stays_text(tmp_path, capsys, reference):
    reference.save(tmp_path / "t.json")
    tok = ["-t", str(tmp_path / "t.json")]
    for missing in ("notes/chapter1.txt", "NO_SUCH_README.md", "./draft", str(tmp_path / "gone.txt")):
        assert main(["show", *tok, missing]) == 2
        err = capsys.readouterr().err
        assert f"{missing}: no such file (it looks like a file name); to show these characters themselves, " \
               f"give --text" in err
    for text in ("some text", "and/or with spaces", "hello", "a.txt and more"):
        assert main(["show", *tok, "--no-color", text]) == 0
        assert capsys.readouterr().out.splitlines()[0].replace("|", "") == text
    assert main(["show", *tok, "--no-color", "--text", "notes/chapter1.txt"]) == 0
    assert capsys.readouterr().out.splitlines()[0].replace("|", "") == "notes/chapter1.txt"
    (tmp_path / "real.txt").write_text("from a file")
    assert main(["show", *tok, "--no-color", str(tmp_path / "real.txt")]) == 0
    assert capsys.readouterr().out.splitlines()[0].replace("|", "") == "from a file"
