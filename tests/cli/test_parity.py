"""``bpe-fast parity`` (cli/parity.py): one INPUT per language, written as ``train_parity`` learns it;
-o checked before training; a bad --ratio named."""
from __future__ import annotations

import random

import pytest

import bpe_fast
from bpe_fast.cli import main


def synthetic_languages(n: int, words: int, seed: int) -> list[list[str]]:
    """Languages of made-up words over different alphabets (one Latin, others shifted into other
    scripts), with repeated words, so pairs tie and languages compress unevenly."""
    rng = random.Random(seed)
    out = []
    for lang in range(n):
        base = 0x61 if lang == 0 else 0x61 + 0x100 * lang
        vocab = ["".join(chr(base + rng.randrange(6 + lang)) for _ in range(rng.randint(1, 7))) for _ in range(40)]
        out.append([" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 12))) for _ in range(words)])
    return out


def test_cli_parity_writes_what_train_parity_learns(tmp_path, capsys):
    from bpe_fast.cli import main
    langs = synthetic_languages(3, 100, seed=6)
    paths = []
    for k, docs in enumerate(langs):
        path = tmp_path / f"lang{k}.txt"
        path.write_text("\n".join(docs), encoding="utf-8")
        paths.append(str(path))
    out = tmp_path / "tok.json"
    assert main(["parity", *paths, "--vocab-size", "380", "--ratio", "1,2,1", "--variant", "window",
                 "--window-size", "9", "--workers", "1", "--progress", "none", "-o", str(out)]) == 0
    assert "3 languages" in capsys.readouterr().out
    expected = bpe_fast.train_parity(paths, 380, ratio=[1, 2, 1], variant="window", window_size=9, workers=1,
                                     progress="none")
    assert bpe_fast.Tokenizer.load(out) == expected
    assert main(["parity", *paths, "--vocab-size", "380", "--ratio", "1,x,1", "-o", str(tmp_path / "t2.json")]) != 0
    assert "--ratio 1,x,1: give numbers" in capsys.readouterr().err


def test_the_output_is_checked_before_training_and_several_sizes_need_a_placeholder(tmp_path, capsys, monkeypatch):
    paths = []
    for k, docs in enumerate(synthetic_languages(2, 50, seed=7)):
        paths.append(str(tmp_path / f"lang{k}.txt"))
        (tmp_path / f"lang{k}.txt").write_text("\n".join(docs), encoding="utf-8")
    monkeypatch.setattr("bpe_fast.cli.parity.train_parity", lambda *a, **k: pytest.fail("trained before checking -o"))
    assert main(["parity", *paths, "--vocab-size", "300", "-o", str(tmp_path / "no" / "t.json")]) == 2
    assert f"-o {tmp_path / 'no' / 't.json'}: the folder {tmp_path / 'no'} does not exist" in capsys.readouterr().err
    assert main(["parity", *paths, "--vocab-size", "300,320", "-o", str(tmp_path / "t.json")]) == 2
    assert "with several vocabulary sizes, -o must hold {vocab_size}" in capsys.readouterr().err
    assert main(["parity", *paths, "--vocab-size", "300", "-o", paths[0]]) == 2
    assert "is also an input file" in capsys.readouterr().err


def test_memory_budget_is_planned_before_merging_and_refused_in_one_line(tmp_path, capsys, monkeypatch):
    paths = []
    for k, docs in enumerate(synthetic_languages(2, 300, seed=8)):
        paths.append(str(tmp_path / f"lang{k}.txt"))
        (tmp_path / f"lang{k}.txt").write_text("\n".join(docs), encoding="utf-8")
    out = tmp_path / "t.json"
    assert main(["parity", *paths, "--vocab-size", "400", "--workers", "1", "--progress", "none", "-o", str(out),
                 "--memory-budget", "64G"]) == 0
    assert "memory: merging planned to peak at" in capsys.readouterr().out
    assert bpe_fast.Tokenizer.load(out) == bpe_fast.train_parity(paths, 400, workers=1, progress="none")
    monkeypatch.setattr("bpe_fast.training.variants.parity._parity.ParityCorpus",
                        lambda *a, **k: pytest.fail("the corpus was laid out"))
    out.unlink()
    assert main(["parity", *paths, "--vocab-size", "400", "--workers", "1", "--progress", "none", "-o", str(out),
                 "--memory-budget", "8M"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--memory-budget" in err and "8 MiB is too small" in err and "needs about" in err
    assert not out.exists()
