"""Parity-aware BPE (bpe_fast.train_parity, variants/parity.py): its merges against Hugging Face
tokenizers' ParityBpeTrainer (tie_break="huggingface", GPT-2 pattern), against the plain-Python
reference (variants/parity_reference.py) on both tie rules, and against plain BPE where the two
must agree; sizes, continued training, files and formats."""
from __future__ import annotations

import random

import pytest

import bpe_fast
from bpe_fast.training.reference import merge_word
from bpe_fast.training.variants.parity import learn_parity
from bpe_fast.training.variants.parity_reference import train_parity_reference

from ...conftest import SMALL_CORPUS, shared_path
from .conftest import FIVE, MODE_IDS, MODES, hf_parity, language_docs, reference_words, tables, with_dev


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


def as_bytes(tok: bpe_fast.Tokenizer) -> list[tuple[bytes, bytes]]:
    return [(tok.token_bytes(a), tok.token_bytes(b)) for a, b in tok.merges.tolist()]


# -- Hugging Face's ParityBpeTrainer -------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_merges_equal_parity_bpe_trainer(mode):
    """With the GPT-2 pattern and tie_break="huggingface", train_parity learns ParityBpeTrainer's
    merges, merge for merge: both variants, ratio, dev set, neither, global merges first."""
    train = [language_docs(name, 20_000) for name in FIVE]
    dev = [language_docs(name, 8_000, skip=20_000) for name in FIVE]
    settings = {k: v for k, v in mode.items() if k != "dev"}
    theirs = hf_parity(train, 800, dev=dev if mode.get("dev") else None, **settings)
    ours = bpe_fast.train_parity(train, 256 + 800, pattern="gpt2", tie_break="huggingface", workers=1,
                                 progress="none", **with_dev(mode, dev))
    assert len(theirs) == 800 and as_bytes(ours) == theirs


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["base", "window"])
def test_merges_equal_parity_bpe_trainer_on_35_languages(variant):
    """Every shared language, one file each, ratio mode: the same 3000 merges as ParityBpeTrainer."""
    files = sorted(shared_path("corpora", "multilingual").glob("*.txt"))
    docs = [f.read_text(encoding="utf-8").split("\n") for f in files]
    ratio = [1.0 + (k % 5) / 4 for k in range(len(docs))]
    theirs = hf_parity(docs, 3000, ratio=ratio, variant=variant, window_size=50)
    ours = bpe_fast.train_parity(docs, 256 + 3000, ratio=ratio, variant=variant, window_size=50, pattern="gpt2",
                                 tie_break="huggingface", progress="none")
    assert as_bytes(ours) == theirs


# -- the reference, on both tie rules ----------------------------------------------------------

@pytest.mark.parametrize("tie_break", ["bytes", "huggingface"])
@pytest.mark.parametrize("mode", MODES[:5], ids=MODE_IDS[:5])
def test_kernel_equals_reference_on_synthetic_languages(mode, tie_break):
    """Made-up languages where ties abound: the incremental corpus learns the reference's
    merges (counts recounted from scratch each step), with either tie rule."""
    langs = synthetic_languages(5, 150, seed=7)
    dev = synthetic_languages(5, 60, seed=8)
    train_t, dev_t = tables(langs), tables(dev)
    ours, _ = learn_parity(train_t, 150, tie_break=tie_break, **with_dev(mode, dev_t))
    theirs = train_parity_reference([reference_words(t) for t in train_t], 150, [bytes([b]) for b in range(256)],
                                    tie_break=tie_break, **with_dev(mode, [reference_words(t) for t in dev_t]))
    assert [tuple(m) for m in ours.tolist()] == theirs
    assert len(theirs) == 150


@pytest.mark.parametrize("tie_break", ["bytes", "huggingface"])
def test_kernel_equals_reference_with_global_merges_min_count_and_max_length(tie_break):
    langs = synthetic_languages(3, 200, seed=3)
    train_t = tables(langs)
    settings = dict(ratio=[1.0, 2.0, 0.5], global_merges=30, variant="window", window_size=7, alpha=1.2,
                    min_count=3, max_token_length=4, tie_break=tie_break)
    ours, _ = learn_parity(train_t, 400, **settings)
    theirs = train_parity_reference([reference_words(t) for t in train_t], 400, [bytes([b]) for b in range(256)],
                                    **settings)
    assert [tuple(m) for m in ours.tolist()] == theirs
    names = [bytes([b]) for b in range(256)]
    for a, b in theirs:
        names.append(names[a] + names[b])
    assert max(len(t) for t in names) <= 4


def test_one_language_is_plain_bpe():
    """One language, ties by bytes: parity-aware BPE is plain BPE (and so is any number of
    languages when every merge is global)."""
    text = SMALL_CORPUS.read_text(encoding="utf-8")
    plain = bpe_fast.train_from_iterator([text], 700, pattern="cl100k", workers=1, progress="none")
    one = bpe_fast.train_parity([[text]], 700, pattern="cl100k", workers=1, progress="none")
    assert one == plain
    halves = [[text[: len(text) // 2]], [text[len(text) // 2:]]]
    every_global = bpe_fast.train_parity(halves, 700, global_merges=10**6, pattern="cl100k", workers=1,
                                         progress="none")
    both = bpe_fast.train_from_iterator([text[: len(text) // 2], text[len(text) // 2:]], 700, pattern="cl100k",
                                        workers=1, progress="none")
    assert every_global.merges.tolist() == both.merges.tolist()


# -- sizes, continued training, inputs, formats ------------------------------------------------

def test_many_sizes_are_prefixes_of_the_largest():
    langs = synthetic_languages(3, 200, seed=5)
    sizes = [300, 350, 420]
    many = bpe_fast.train_parity(langs, sizes, ratio=[1, 1, 2], workers=1, progress="none")
    for size, tok in zip(sizes, many):
        alone = bpe_fast.train_parity(langs, size, ratio=[1, 1, 2], workers=1, progress="none")
        assert tok == alone and tok.vocab_size == size


@pytest.mark.parametrize("tie_break", ["bytes", "huggingface"])
def test_continued_training_equals_the_reference_from_the_base_encoding(tie_break):
    """base=: every chunk starts as the base encodes it (its merges applied in rank order), new
    tokens come after the base's ids."""
    text = SMALL_CORPUS.read_text(encoding="utf-8")
    base = bpe_fast.train_from_iterator([text], 300, pattern="gpt2", workers=1, progress="none")
    langs = synthetic_languages(3, 150, seed=11)
    langs[0] = langs[0] + [text[:3000]]
    ours = bpe_fast.train_parity(langs, 420, ratio=[1, 2, 1], base=base, pattern="gpt2", tie_break=tie_break,
                                 workers=1, progress="none")
    assert ours.merges[:len(base.merges)].tolist() == base.merges.tolist()
    words = []
    for t in tables(langs):
        lang = []
        for chunk, c in t.as_dict().items():
            ids = list(chunk)
            for k, (a, b) in enumerate(base.merges.tolist()):
                ids = merge_word(ids, (a, b), 256 + k)
            lang.append((ids, c))
        words.append(lang)
    names = [base.token_bytes(i) for i in range(base.vocab_size)]
    theirs = train_parity_reference(words, 420 - 300, names, ratio=[1, 2, 1], tie_break=tie_break)
    assert ours.merges[len(base.merges):].tolist() == [list(m) for m in theirs]


def test_files_and_named_languages(tmp_path):
    langs = synthetic_languages(3, 100, seed=2)
    paths = []
    for k, docs in enumerate(langs):
        path = tmp_path / f"lang{k}.txt"
        path.write_text("\n".join(docs), encoding="utf-8")
        paths.append(path)
    from_files = bpe_fast.train_parity([str(p) for p in paths], 380, ratio=[1, 1, 1], workers=1, progress="none")
    from_docs = bpe_fast.train_parity([["\n".join(d)] for d in langs], 380,
                                      ratio=[1, 1, 1], workers=1, progress="none")
    named = bpe_fast.train_parity({"a": [paths[0]], "b": [paths[1]], "c": [paths[2]]}, 380, ratio=[1, 1, 1],
                                  workers=1, progress="none")
    assert from_files == from_docs == named
    # a list of file names per language, as train() takes files, is files, not the text of their names
    listed = bpe_fast.train_parity([[str(p)] for p in paths], 380, ratio=[1, 1, 1], workers=1, progress="none")
    assert listed == from_files
    with pytest.raises(bpe_fast.InputError, match="missing.txt: no such file"):
        bpe_fast.train_parity([[str(tmp_path / "missing.txt")], [str(paths[1])]], 380, workers=1, progress="none")


FORMATS = {
    "bpe_fast": (lambda tok, p: tok.save(p / "t.json"), lambda tok, p: bpe_fast.Tokenizer.load(p / "t.json")),
    "tiktoken": (lambda tok, p: tok.save(p / "t.tiktoken", format="tiktoken"),
                 lambda tok, p: bpe_fast.Tokenizer.load(p / "t.tiktoken", format="tiktoken", pattern=tok.pattern,
                                                        special_tokens=tok.special_tokens)),
    "huggingface": (lambda tok, p: tok.save(p / "tokenizer.json", format="huggingface"),
                    lambda tok, p: bpe_fast.Tokenizer.load(p / "tokenizer.json", format="huggingface")),
    "minbpe": (lambda tok, p: tok.save(p / "t", format="minbpe"),
               lambda tok, p: bpe_fast.Tokenizer.load(p / "t.model", format="minbpe")),
    "gpt2": (lambda tok, p: tok.save(p / "vocab.bpe", format="gpt2"),
             lambda tok, p: bpe_fast.Tokenizer.load(p / "vocab.bpe", format="gpt2", encoder_json=p / "encoder.json")),
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_holds_a_parity_tokenizer(tmp_path, fmt):
    langs = synthetic_languages(3, 120, seed=4)
    tok = bpe_fast.train_parity(langs, 400, ratio=[1, 1, 1], pattern="gpt2", workers=1, progress="none")
    save, load = FORMATS[fmt]
    save(tok, tmp_path)
    again = load(tok, tmp_path)
    assert again == tok
    text = " ".join(d for lang in langs for d in lang[:20])
    assert again.encode_ordinary(text) == tok.encode_ordinary(text)


@pytest.mark.parametrize("settings,message", [
    (dict(ratio=[1, 2]), "ratio has 2 values for 3 languages"),
    (dict(ratio=[1, 0, 1]), "ratio[1] must be a positive"),
    (dict(ratio=[1, 1, 1], dev=[["a"], ["b"], ["c"]]), "not both"),
    (dict(variant="windows"), "variant must be one of"),
    (dict(alpha=0), "alpha must be a positive"),
    (dict(window_size=0), "window_size"),
    (dict(dev=[["a"], ["b"]]), "dev must name the same 3 languages"),
])
def test_bad_settings_are_refused_naming_them(settings, message):
    with pytest.raises(bpe_fast.ArgumentError, match=message.replace("[", r"\[").replace("]", r"\]")):
        bpe_fast.train_parity([["x y"], ["z w"], ["q"]], 300, workers=1, progress="none", **settings)


def test_bad_corpora_are_refused():
    with pytest.raises(bpe_fast.ArgumentTypeError, match="one corpus per language"):
        bpe_fast.train_parity("text.txt", 300)
    with pytest.raises(bpe_fast.ArgumentError, match="corpora is empty"):
        bpe_fast.train_parity([], 300)
    with pytest.raises(TypeError, match="unexpected keyword argument 'superword_at'"):
        bpe_fast.train_parity([["a b"]], 300, superword_at=280)


def test_an_empty_language_is_refused_naming_it():
    with pytest.raises(bpe_fast.EmptyCorpusError, match="corpora\\['hi'\\] is empty"):
        bpe_fast.train_parity({"en": ["some text"], "hi": [""]}, 300, ratio=[1, 1], workers=1, progress="none")


def test_stops_early_with_a_warning_when_every_language_is_exhausted():
    with pytest.warns(bpe_fast.VocabSizeWarning, match="no language has a pair left"):
        tok = bpe_fast.train_parity([["ab ab"], ["cd"]], 300, workers=1, progress="none")
    # lengths 5 and 2 bytes: "ab" twice, then " ab"; at 2 and 2 the first language has no pair
    # left (exhausted), so the second's "cd"; then none is left
    assert as_bytes(tok) == [(b"a", b"b"), (b" ", b"ab"), (b"c", b"d")]


@pytest.mark.slow
def test_bench_parity_runs_and_finds_the_merges_equal():
    """benchmarks/bench_parity.py's quick path (300 merges, one run) against this checkout."""
    import os
    import subprocess
    import sys

    from ...conftest import ROOT
    shared_path("corpora", "multilingual")
    pytest.importorskip("tokenizers", reason="tokenizers is a dev dependency")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_parity.py"), "--merges", "300",
                           "--repeat", "1"], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "merges equal to ParityBpeTrainer's: True" in done.stdout, done.stdout
    assert "ours / ParityBpeTrainer = " in done.stdout


def test_the_corpus_keeps_every_languages_pair_counts_exact():
    """_parity.ParityCorpus's invariant, checked directly: after each merge, every language's
    count of every pair is its recount from the words as the merges leave them."""
    from collections import Counter

    from bpe_fast.training.variants.parity import _corpus
    langs = synthetic_languages(3, 80, seed=9)
    train_t = tables(langs)
    corpus = _corpus(train_t, None, [bytes([b]) for b in range(256)], True, False, None, False)
    words = [reference_words(t) for t in train_t]
    rng = random.Random(1)
    for new_id in range(256, 296):
        lang = rng.randrange(3)
        best = corpus.best(lang)
        if best is None:
            continue
        x, y, _ = best
        corpus.merge(x, y)
        words = [[(merge_word(w, (x, y), new_id), c) for w, c in lang_words] for lang_words in words]
        for k, lang_words in enumerate(words):
            recount: Counter = Counter()
            for w, c in lang_words:
                for pair in zip(w, w[1:]):
                    recount[pair] += c
            assert all(corpus.count_of(k, a, b) == n for (a, b), n in recount.items())
            assert corpus.count_of(k, x, y) == 0


def test_copies_of_one_language_hold_as_many_times_its_lists():
    """A merge takes the merged pair's occurrence list of each language and lets it go: four
    copies of one language hold four times the lists of one (each merge kept the emptied lists
    of all its languages but the last, unused, before)."""
    from bpe_fast.training.variants.parity import _corpus
    table = tables([language_docs("de", 20_000)])[0]
    held = []
    for copies in (1, 4):
        corpus = _corpus([table] * copies, None, [bytes([b]) for b in range(256)], True, False, None, False)
        for _ in range(300):
            best = corpus.best(0)
            assert best is not None
            corpus.merge(best[0], best[1])
        held.append(corpus.memory())
    assert held[1]["list_entries"] == 4 * held[0]["list_entries"]
    assert held[1]["lists"] == 4 * held[0]["lists"]


def test_a_vocabulary_past_the_pair_keys_is_refused_before_training():
    with pytest.raises(bpe_fast.ArgumentError, match="pass the pair keys' 32 bits"):
        bpe_fast.train_parity([["ab ab"], ["cd"]], 2**31 - 2, workers=1, progress="none")


def test_window_variant_returns_where_parity_bpe_trainer_never_does():
    """Languages exhausted (min_count) while the rest are passed over by the window: here
    ParityBpeTrainer's select_language_window picks language 0 again and again, never returning
    (tokenizers 0.23.3 ran past a 40 s timeout on these settings); the first language not passed
    over is taken instead, and the training goes on, as the reference does."""
    langs = synthetic_languages(3, 200, seed=3)
    train_t = tables(langs)
    settings: dict = dict(ratio=[1.0, 2.0, 0.5], variant="window", window_size=7, alpha=1.2, min_count=3,
                          tie_break="huggingface")
    ours, _ = learn_parity(train_t, 400, **settings)
    theirs = train_parity_reference([reference_words(t) for t in train_t], 400, [bytes([b]) for b in range(256)],
                                    **settings)
    assert len(theirs) == 400 and [tuple(m) for m in ours.tolist()] == theirs


def _numpy_base_choice(initial, ratio, lengths, exhausted):
    """The base variant's choice as numpy computes it (the chooser before it moved to the kernel)."""
    import numpy as np
    if ratio is not None:
        adjusted = (initial / lengths.astype(np.float64)) / ratio
        adjusted[exhausted] = np.inf
        return int(np.argmin(adjusted))
    return int(np.argmax(np.where(exhausted, -1, lengths)))


def _numpy_window_choice(initial, ratio, lengths, exhausted, in_window, window_size, threshold):
    """select_window's choice as numpy computes it: by falling value (stable), the first with room; else the last."""
    import numpy as np
    values = -((initial / lengths.astype(np.float64)) / ratio) if ratio is not None else lengths.astype(np.float64)
    values[exhausted] = -np.inf
    order = np.argsort(-values, kind="stable").tolist()
    return next((lang for lang in order if in_window[lang] / window_size <= threshold), order[-1])


def test_the_kernels_choice_of_language_is_numpys_on_ties_exhausted_and_full_windows():
    import numpy as np

    from bpe_fast.training.variants import _parity
    rng = np.random.default_rng(7)
    for trial in range(400):
        n = int(rng.integers(1, 9))
        initial = rng.integers(1, 6, n).astype(np.float64) * 10          # (few values: many ties)
        lengths = rng.integers(1, 6, n).astype(np.int64)
        ratio = None if trial % 3 == 0 else rng.choice([0.5, 1.0, 2.0], n)
        exhausted = rng.random(n) < 0.3
        if exhausted.all():
            exhausted[int(rng.integers(n))] = False
        in_window = rng.integers(0, 4, n).astype(np.int64)
        window_size, threshold = int(rng.integers(1, 6)), float(rng.choice([0.25, 0.5, 1.0]))
        ex = exhausted.view(np.uint8)
        assert _parity.least_compressed(initial, ratio, lengths, ex) == \
            _numpy_base_choice(initial, ratio, lengths, exhausted)
        assert _parity.least_compressed_with_room(initial, ratio, lengths, ex, in_window, window_size, threshold) == \
            _numpy_window_choice(initial, ratio, lengths, exhausted, in_window, window_size, threshold)


def test_merge_subtracts_each_languages_fall_from_lengths_as_it_returns_it():
    import numpy as np

    from bpe_fast.training.variants import _parity
    tokens = np.frombuffer(b"abab" b"ab" b"aab", dtype=np.uint8).astype(np.int32)
    offsets = np.array([0, 4, 6, 9], dtype=np.int64)
    counts = np.array([3, 2, 5], dtype=np.int64)
    langs = np.array([0, 1, 1], dtype=np.int32)
    token_bytes = [bytes([b]) for b in range(256)]
    returned = _parity.ParityCorpus(tokens, offsets, counts, langs, 2, token_bytes)
    subtracted = _parity.ParityCorpus(tokens, offsets, counts, langs, 2, token_bytes)
    fall = returned.merge(ord("a"), ord("b"))
    lengths = np.array([100, 100], dtype=np.int64)
    assert subtracted.merge(ord("a"), ord("b"), lengths) is None
    assert fall.tolist() == [6, 7]            # two (a, b) x 3 in language 0; one x 2 and one x 5 in language 1
    assert lengths.tolist() == [94, 93]


# -- issue 49: what the API refuses, as the CLI does ---------------------------------------------

def test_an_empty_dev_text_is_refused_as_an_empty_training_text_is(tmp_path):
    for name, text in (("a.txt", "hello hello hello"), ("b.txt", "ciao ciao"), ("empty.txt", "")):
        (tmp_path / name).write_text(text, encoding="utf-8")
    corpora = [tmp_path / "a.txt", tmp_path / "b.txt"]
    with pytest.raises(bpe_fast.EmptyCorpusError, match=r"dev\['1'\] is empty"):
        bpe_fast.train_parity(corpora, 260, dev=[tmp_path / "a.txt", tmp_path / "empty.txt"], workers=1,
                              progress="none")
    with pytest.raises(bpe_fast.EmptyCorpusError, match=r"corpora\['1'\] is empty"):
        bpe_fast.train_parity([tmp_path / "a.txt", tmp_path / "empty.txt"], 260, workers=1, progress="none")


@pytest.mark.parametrize("setting", [dict(window_size=2**63), dict(global_merges=2**63), dict(window_size=2**70)])
def test_numbers_past_the_kernels_int64_are_refused_naming_them(setting):
    name = next(iter(setting))
    with pytest.raises(bpe_fast.ArgumentError, match=f"{name} must be at most"):
        bpe_fast.train_parity([["hello hello"], ["ciao ciao"]], 260, variant="window", workers=1, progress="none",
                              **setting)
