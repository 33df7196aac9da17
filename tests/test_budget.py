"""One memory budget for the whole job (bpe_fast/budget.py): the counting's share of it, the
merging's plan against what the kernel really allocates, the one-line refusal before merging
(with the counted table kept for --counts), and the same merges under a budget that fits."""
import dataclasses
import random
import subprocess
import sys

import numpy as np
import pytest

import bpe_fast
from bpe_fast.training import _kernel
from bpe_fast import budget
from bpe_fast.cli import main
from bpe_fast.counting.wordtable import WordTable

from .conftest import small_text

MiB = 1 << 20
# The plan may overstate the kernel's peak allocation, never understate it by more than this
# factor, nor overstate it by more than OVER on tables of any shape (measured on small tables
# here, on 0.3-1 GB corpora in benchmarks/bench_budget.py).
UNDER, OVER = 0.8, 3.0


def random_words(n_words: int, seed: int, alphabet: str = "abcdefghij", longest: int = 12) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choice(alphabet) for _ in range(rng.randint(1, longest))) for _ in range(n_words))


def kernel_peak(table: WordTable, n_merges: int, threads: int) -> int:
    """The most the kernel holds (Trainer.memory(), its own accounting) at the set-up and every
    16 merges."""
    k = _kernel.Trainer(table.symbols, table.offsets, table.counts, n_merges, threads=threads)
    peak = [0]

    def sample(_merges: int = 0) -> None:
        peak[0] = max(peak[0], sum(v for key, v in k.memory().items() if key not in ("tracked", "lists_used")))

    k.count_pairs()
    sample()
    k.learn(sample, 16)
    return peak[0]


TABLES = {
    "small corpus": lambda: small_text() * 3,
    "random words, a long tail": lambda: random_words(40_000, seed=1),
    "few short words, often": lambda: random_words(2_000, seed=2, alphabet="abc", longest=4) * 20,
}


@pytest.mark.parametrize("name", TABLES)
@pytest.mark.parametrize("n_merges", [64, 1024, 4096])
def test_the_plan_is_within_a_stated_factor_of_what_the_kernel_allocates(name, n_merges):
    table = bpe_fast.count_from_iterator([TABLES[name]()], workers=1, progress="none")
    threads = 2
    _, merging = budget.kernel_bytes(table.offsets, table.counts, n_merges, threads)
    measured = kernel_peak(table, n_merges, threads)
    assert UNDER * measured <= merging <= OVER * measured, (merging, measured)


def test_the_plan_counts_the_table_until_it_is_let_go():
    table = bpe_fast.count_from_iterator([random_words(5_000, seed=3)], workers=1, progress="none")
    kept = budget.plan_merging(table, 500, 1, table_freed=False)
    freed = dataclasses.replace(kept, table_freed=True)
    assert kept.table == table.symbols.nbytes + table.offsets.nbytes + table.counts.nbytes
    assert kept.peak == kept.process + max(kept.layout, kept.merging)
    assert freed.peak == freed.process + max(freed.layout, freed.merging - freed.table)
    assert 0 < kept.process and abs(kept.process - budget.resident_bytes()) < 64 * MiB


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(small_text() * 4 + random_words(3_000, seed=4))
    return path


def no_merging(*args, **kwargs):
    raise AssertionError("the merging started")


def test_a_budget_too_small_is_one_line_before_merging_and_keeps_the_counts(corpus, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr("bpe_fast.training.pipeline._kernel.Trainer", no_merging)
    out = tmp_path / "tok.json"
    assert main(["train", str(corpus), "--vocab-size", "600", "-o", str(out), "--memory-budget", "8M", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--memory-budget" in err and "8 MiB is too small" in err and "needs about" in err
    assert not out.exists()
    kept = err.split("kept in ")[1].split(":")[0]
    assert WordTable.load(kept) == bpe_fast.count([corpus], progress="none")
    # what the error says to do, as a user would, in a new process (this one has grown since):
    # train from the kept table with the budget it names
    monkeypatch.undo()
    needed = err.split("a budget of ")[1].split(" ")[0]
    done = subprocess.run([sys.executable, "-m", "bpe_fast", "train", "--counts", kept, "--vocab-size", "600",
                           "-o", str(out), "--memory-budget", needed, "-q"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    direct = bpe_fast.train([corpus], 600, progress="none")
    assert np.array_equal(bpe_fast.Tokenizer.load(str(out)).merges, direct.merges)


def test_train_from_table_refuses_before_merging_and_names_no_file(monkeypatch):
    table = bpe_fast.count_from_iterator([random_words(2_000, seed=5)], workers=1, progress="none")
    monkeypatch.setattr("bpe_fast.training.pipeline._kernel.Trainer", no_merging)
    with pytest.raises(bpe_fast.MemoryBudgetError) as caught:
        bpe_fast.train_from_table(table, 400, memory_budget=2 * MiB, progress="none")
    message = str(caught.value)
    assert "\n" not in message and "2 MiB is too small" in message and "kept" not in message


def test_a_variant_refused_keeps_no_table_it_could_not_be_trained_from(corpus, tmp_path, monkeypatch, capsys):
    # SuperBPE's second stage counts the text again with another pattern: a stage-one table given
    # to --counts would train plain BPE, so the error offers no table, only the budget it needs.
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr("bpe_fast.training.pipeline._kernel.Trainer", no_merging)
    out = tmp_path / "tok.json"
    assert main(["train", str(corpus), "--vocab-size", "600", "--superword-at", "500", "-o", str(out),
                 "--memory-budget", "8M", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "8 MiB is too small" in err and "a budget of" in err
    assert "--counts" not in err and "kept" not in err and not list(tmp_path.glob("bpe_fast-kept-*"))


def test_a_budget_that_fits_gives_the_same_merges(corpus):
    budgeted = bpe_fast.train([corpus], 800, memory_budget=budget.resident_bytes() + 512 * MiB, progress="none")
    assert np.array_equal(budgeted.merges, bpe_fast.train([corpus], 800, progress="none").merges)
    plan = budgeted.training_report.memory_plan
    assert plan is not None and plan.kernel > 0 and plan.table_freed      # train() lets its table go


def test_under_a_budget_superword_training_counts_stage_two_after_stage_one(corpus, monkeypatch):
    """The budget plans each stage's peak on its own: stage two is not counted beside stage one's
    kernel (whose plan has no count in it), and the merges are those of the training without it."""
    from bpe_fast.training.variants import superbpe
    started = []
    real_start = superbpe.CountAhead.start

    def start(self) -> None:
        started.append(True)
        real_start(self)
    monkeypatch.setattr(superbpe.CountAhead, "start", start)
    ahead = bpe_fast.train([corpus], 800, superword_at=600, workers=2, progress="none")
    assert started == [True]
    budgeted = bpe_fast.train([corpus], 800, superword_at=600, workers=2, progress="none",
                              memory_budget=budget.resident_bytes() + 512 * MiB)
    assert started == [True] and np.array_equal(budgeted.merges, ahead.merges)


def test_train_from_iterator_takes_the_budget_too():
    docs = [random_words(500, seed=s) for s in range(6)]
    budgeted = bpe_fast.train_from_iterator(docs, 500, memory_budget=budget.resident_bytes() + 512 * MiB,
                                            progress="none")
    assert np.array_equal(budgeted.merges, bpe_fast.train_from_iterator(docs, 500, progress="none").merges)


@pytest.mark.parametrize("total", [64 * MiB, 150 * MiB, 300 * MiB, 400 * MiB, 1 << 30, 16 << 30])
@pytest.mark.parametrize("workers", [1, 2, 8])
def test_the_counting_share_keeps_the_tree_under_the_budget(total, workers):
    n, table = budget.counting_share(total, workers, 64 * MiB)
    assert 1 <= n <= workers and table & (table - 1) == 0 and budget.SPILL_FLOOR <= table <= 64 * MiB
    if table >= budget.SMALLEST_TABLE:
        assert budget.counting_peak(n, table) <= total
    if n < workers:         # a worker was given up only for tables too small to be worth it
        assert budget.counting_share(total, n + 1, 64 * MiB, fixed=True)[1] < budget.SMALLEST_TABLE


def test_workers_given_are_kept_and_their_tables_shrink():
    assert budget.counting_share(100 * MiB, 4, 64 * MiB, fixed=True) == (4, budget.SPILL_FLOOR)
    assert budget.counting_share(100 * MiB, 4, 64 * MiB)[0] < 4


def test_counting_under_a_small_budget_gives_the_same_table(corpus):
    assert bpe_fast.count([corpus], block_size=4096, memory_budget=MiB, progress="none") == \
        bpe_fast.count([corpus], block_size=4096, progress="none")


@pytest.mark.parametrize("workers, total, expected", [
    (None, 150 * MiB, (1, 16 * MiB)),          # too small for two workers' tables: one, with a bigger table
    (2, 150 * MiB, (2, budget.SPILL_FLOOR)),   # workers given: kept, their tables shrink
    (None, 400 * MiB, (2, 64 * MiB)),          # room for both: the default table each
])
def test_the_count_runs_with_its_share(corpus, monkeypatch, workers, total, expected):
    import bpe_fast.counting.workers as counting
    monkeypatch.setattr(counting, "default_workers", lambda: 2)
    monkeypatch.setattr(counting, "default_memory_budget", lambda n: 64 * MiB)
    seen = []
    real = counting._count_here_or_in_workers

    def spy(head, tasks, config, n, *rest):
        seen.append((n, config.memory_budget))
        return real(head, tasks, config, n, *rest)

    monkeypatch.setattr(counting, "_count_here_or_in_workers", spy)
    table = bpe_fast.count([corpus], workers=workers, memory_budget=total, block_size=4096, progress="none")
    assert seen == [expected] and table == bpe_fast.count([corpus], progress="none")


# -- parity-aware training (budget.plan_parity_merging, variants/parity.py) ------------------------

def parity_kernel_peak(tables: list[WordTable], n_merges: int, **settings) -> int:
    """The most the parity corpus holds (ParityCorpus.memory(), its own accounting) once the
    merges are learned: its pairs, heaps and ids only grow."""
    from bpe_fast.training.variants import parity
    captured, real = [], parity._corpus

    def corpus(*args, **kwargs):
        captured.append(real(*args, **kwargs))
        return captured[-1]

    parity._corpus = corpus
    try:
        parity.learn_parity(tables, n_merges, **settings)
    finally:
        parity._corpus = real
    return sum(sum(v for key, v in c.memory().items() if key not in ("pair_ids", "list_entries")) for c in captured)


LANGUAGES = {
    "the small corpus in three parts": lambda: [small_text()[i::3] for i in range(3)],
    "random words, two alphabets": lambda: [random_words(20_000, seed=1), random_words(20_000, 2, "абвгдежзик")],
    "five languages of short words": lambda: [random_words(3_000, s, "ab" + chr(0x3b1 + s), 4) * 10 for s in range(5)],
}
# The plan's parts that the corpus counts itself (not the map's old slots while it grows, nor the
# C heap's blocks) against its count: within these factors on small tables (on 100 MB of text, the
# whole plan against the process's peak: benchmarks/RESULTS.md, "Parity-aware training's memory plan").
# The low end is random words over ten letters, whose merges make more pairs than their few byte
# triples predict (natural text: 0.87 at the least).
PARITY_UNDER, PARITY_OVER = 0.75, 1.5


@pytest.mark.parametrize("name", LANGUAGES)
@pytest.mark.parametrize("n_merges", [64, 1024, 4096])
@pytest.mark.parametrize("global_merges", [0, 100])
def test_the_parity_plan_is_within_a_stated_factor_of_what_its_corpus_holds(name, n_merges, global_merges):
    tables = [bpe_fast.count_from_iterator([doc], workers=1, progress="none") for doc in LANGUAGES[name]()]
    parts = budget.parity_corpus_parts([budget.language_shape(t) for t in tables], n_merges,
                                       global_merges=global_merges)
    predicted = sum(v for key, v in parts.items() if key not in ("map_growth", "allocator"))
    measured = parity_kernel_peak(tables, n_merges, global_merges=global_merges)
    assert PARITY_UNDER * measured <= predicted <= PARITY_OVER * measured, (predicted, measured)


def test_the_shape_counts_each_languages_distinct_byte_pairs_and_triples_within_words():
    table = bpe_fast.count_from_iterator(["ab ab ba abc", "cab abcab"], workers=1, progress="none")
    words = list(table.as_dict())
    pairs = {pair for word in words for pair in zip(word, word[1:])}
    triples = {triple for word in words for triple in zip(word, word[1:], word[2:])}
    for block in (3, 1 << 20):          # (blocks smaller than a word, and one for all)
        shape = budget.language_shape(table, block=block)
        assert (shape.tokens, shape.words) == (table.n_symbols, len(table))
        assert (shape.first_pairs, shape.triples) == (len(pairs), len(triples))


def parity_languages(tmp_path) -> list[str]:
    paths = []
    for k in range(3):
        path = tmp_path / f"lang{k}.txt"
        path.write_text(random_words(4_000, seed=10 + k, alphabet="abcdefgh" if k == 0 else "абвгдежз"[k:]),
                        encoding="utf-8")
        paths.append(str(path))
    return paths


def test_parity_refuses_a_budget_too_small_before_laying_anything_out(tmp_path, monkeypatch):
    monkeypatch.setattr("bpe_fast.training.variants.parity._parity.ParityCorpus", no_merging)
    with pytest.raises(bpe_fast.MemoryBudgetError) as caught:
        bpe_fast.train_parity(parity_languages(tmp_path), 600, memory_budget=8 * MiB, workers=1, progress="none")
    message = str(caught.value)
    assert "\n" not in message and "8 MiB is too small for the merging" in message and "kept" not in message
    needs = int(message.split("needs about ")[1].split(" MiB")[0].replace(",", ""))
    asked = int(message.split("a budget of ")[1].split("M or more")[0])
    assert 8 < needs <= asked


@pytest.mark.parametrize("settings", [{}, {"dev": True}, {"global_merges": 50, "variant": "window"}],
                         ids=["base", "dev", "global-window"])
def test_parity_under_a_budget_that_fits_learns_the_same_merges(tmp_path, settings):
    paths = parity_languages(tmp_path)
    if settings.get("dev"):
        settings = {"dev": paths[::-1]}
    free = bpe_fast.train_parity(paths, 700, workers=1, progress="none", **settings)
    budgeted = bpe_fast.train_parity(paths, 700, workers=1, progress="none",
                                     memory_budget=budget.resident_bytes() + 512 * MiB, **settings)
    assert np.array_equal(budgeted.merges, free.merges)
    plan = budgeted.training_report.memory_plan
    assert plan is not None and plan.kernel > 0 and not plan.table_freed
    assert free.training_report.memory_plan is None


def test_parity_counts_each_language_within_what_the_languages_before_it_leave(tmp_path, monkeypatch):
    from bpe_fast.training.variants import parity
    shares, tables = [], []
    real = parity.count_language

    def spy(corpus, options, counting, progress):
        shares.append(counting["memory_budget"])
        tables.append(real(corpus, options, counting, progress))
        return tables[-1]

    monkeypatch.setattr(parity, "count_language", spy)
    paths = parity_languages(tmp_path)
    total = budget.resident_bytes() + 512 * MiB
    bpe_fast.train_parity(paths[:2], 600, dev=paths[1:], memory_budget=total, workers=1, progress="none")
    held = np.cumsum([0] + [t.nbytes for t in tables[:-1]])
    assert shares == [total - int(h) for h in held]
