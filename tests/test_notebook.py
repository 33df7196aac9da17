"""The workshop notebooks run top to bottom, so they never rot (each in well under a minute).

The outputs checked are facts the notebooks compute: the seed notebook's numbers on The
Verdict (quoted in issue 13), fast paths agreeing with slow ones, exports giving the same ids."""
from __future__ import annotations

from pathlib import Path

import pytest

from bpe_fast.paths import corpora_dir, shared_corpus, vocab_dirs

nbformat = pytest.importorskip("nbformat", reason="the notebook test needs nbformat (pip install -e '.[dev]')")
nbclient = pytest.importorskip("nbclient", reason="the notebook test needs nbclient (pip install -e '.[dev]')")
pytest.importorskip("ipykernel", reason="the notebook test needs ipykernel (pip install -e '.[dev]')")
pytest.importorskip("matplotlib", reason="the notebooks draw: needs the [plot] extra: pip install 'bpe_fast[plot]'")

# Each notebook takes 10-20 s: the full suite runs them, the inner loop (-m "not slow") does not.
pytestmark = pytest.mark.slow
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def run_notebook(name: str) -> list:
    """Execute a notebook in its folder; its code cells' outputs, in order."""
    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError, with the cell and traceback, on any error
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    return outputs


def printed(outputs) -> str:
    return "".join(o.get("text", "") for o in outputs if o.get("name") != "stderr")


def has_chart(outputs) -> bool:
    return any("image/png" in o.get("data", {}) for o in outputs)


@pytest.fixture(scope="module")
def workshop():
    pytest.importorskip("line_profiler", reason="the workshop notebook uses line_profiler")
    pytest.importorskip("sentencepiece",
                        reason="chapter 1 compares with sentencepiece (pip install 'bpe_fast[workshop]')")
    return run_notebook("profiling_workshop.ipynb")


def test_profiling_workshop_notebook_runs(workshop):
    text = printed(workshop)
    assert has_chart(workshop), "the chart was not shown inline"
    assert "slowest to fastest:" in text and "Line #" in text
    # chapter 1: byte-level BPE loses nothing; the fast Sennrich path is the slow one's equal
    assert text.count("decodes back: True") == 2
    assert "same as learn_bpe(tie_break='smallest'): True True" in text
    assert "minbpe basic" in text and "sentencepiece bpe" in text


def test_workshop_first_chapter_gives_the_seed_notebooks_numbers(workshop):
    if shared_corpus("the-verdict.txt") is None:
        pytest.skip("the-verdict.txt is not in the shared corpora: chapter 1 ran on the Zen of Python instead")
    text = printed(workshop)
    assert "vocabulary: 1132 tokens, the last two ['<|unk|>', '<|endoftext|>']" in text
    assert "encoded: [1130, 5, 355, 1126, 628, 975, 10, 1131, 55, 988, 956, 984, 722, 988, 1130, 7]" in text
    assert "decoded: <|unk|>, do you like tea? <|endoftext|> In the sunlit terraces of the <|unk|>." in text
    assert "[('e', 's'), ('es', 't'), ('est', '</w>'), ('l', 'o'), ('lo', 'w'), " in text


def test_big_corpus_notebook_runs():
    corpora = corpora_dir()
    if corpora is None or len(list((corpora / "multilingual").glob("*.txt"))) != 35:
        pytest.skip("the big-corpus tutorial needs the 35 files of the shared corpora's multilingual/ folder")
    for name in ("cl100k_base", "o200k_base"):
        if not any((d / f"{name}.tiktoken").is_file() for d in vocab_dirs()):
            pytest.skip(f"the big-corpus tutorial needs {name}.tiktoken in the shared vocabs/ (or $BPE_FAST_VOCABS)")
    pytest.importorskip("tiktoken", reason="the tutorial exports to tiktoken (pip install -e '.[dev]')")
    pytest.importorskip("tokenizers",
                        reason="the tutorial exports to Hugging Face tokenizers (pip install -e '.[dev]')")
    outputs = run_notebook("big_corpus.ipynb")
    text = printed(outputs)
    assert has_chart(outputs), "the bytes-per-token chart was not shown inline"
    assert "counting in two parts and adding gives the same table: True" in text
    assert "same ids as bpe_fast: tiktoken on 35/35 languages, Hugging Face on 35/35" in text
    assert "round trip through tiktoken: True" in text
    assert text.count(" tokens, ") == 8          # bpe-fast show: four sentences, two tokenizers each
