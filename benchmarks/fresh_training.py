"""One training in a fresh process, measured whole: what the cost benchmarks of superword
training (bench_superword.py, bench_boundless.py) run for each kind of training they compare.

The child trains with ``bpe_fast.train(files, vocab, progress="none", **options)`` and prints
its seconds, the stage summaries bpe_fast logs ("counting", "merging", once per stage) and the
vocab size; proctree.run_sampled adds the CPU of the child's process tree, the CPU every other
process used meanwhile, and the tree's peak memory.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
import statistics
import subprocess
import sys
from pathlib import Path

from mix33 import PROJECT_ROOT  # noqa: E402  (benchmarks/ is on sys.path)
from proctree import run_sampled

RESULT_MARK = "RESULT "

CHILD = r"""
import json, logging, sys, time
import bpe_fast
stages = []
class Stages(logging.Handler):
    def emit(self, record):
        stages.append(record.args[:2])          # ("counting", seconds), ("merging", seconds), ...
logging.getLogger("bpe_fast").addHandler(Stages())
logging.getLogger("bpe_fast").setLevel(logging.INFO)
files, vocab, options = json.loads(sys.argv[1])
t0 = time.perf_counter()
tok = bpe_fast.train(files, vocab, progress="none", **options)
print("RESULT " + json.dumps({"seconds": time.perf_counter() - t0, "stages": stages, "vocab": tok.vocab_size}))
"""


def train_once(files: list[str], vocab: int, options: dict) -> dict:
    """One training in a fresh process, with the CPU the rest of the machine used meanwhile:
    {seconds, stages, vocab, cpu, other_cpu, peak_mb}."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")])))
    run = run_sampled([sys.executable, "-c", CHILD, json.dumps([files, vocab, options])], sample_s=0.2, env=env)
    lines = [line for line in run.stdout.splitlines() if line.startswith(RESULT_MARK)]
    if run.returncode != 0 or not lines:
        sys.exit(f"training failed: {run.stderr[-2000:]}")
    result = json.loads(lines[-1][len(RESULT_MARK):])
    result.update(cpu=run.child_cpu_s, other_cpu=run.other_cpu_s, peak_mb=run.peak_tree_mb)
    return result


GENERATORS = ("mutated", "zipf", "scripts", "code", "neardup")


def cost_texts(work_dir: Path, size: str, seed: int, natural: list[str]) -> dict:
    """The texts the cost benchmarks can time, name -> a function giving the files: "long-tail" (the
    slice the work was tuned on: mutated, seed 0), each make_corpus.py generator at ``seed`` (text
    not tuned on when the seed is not 0), and "natural" (the shared corpora given)."""
    def generated(kind: str, at_seed: int) -> Callable[[], list[str]]:
        return lambda: [str(longtail_slice(work_dir, size, kind, at_seed))]
    texts = {"long-tail": generated("mutated", 0)}
    texts.update({kind: generated(kind, seed) for kind in GENERATORS})
    texts["natural"] = lambda: natural
    return texts


def alternating(files: list[str], vocab: int, kinds: dict[str, dict], repeats: int) -> dict[str, list[dict]]:
    """Each kind's training (name -> train options) ``repeats`` times, the kinds taking turns so
    that all see the same machine: name -> its runs (train_once's results)."""
    runs: dict[str, list[dict]] = {name: [] for name in kinds}
    for _ in range(repeats):
        for name, options in kinds.items():
            runs[name].append(train_once(files, vocab, options))
    return runs


def median_of(runs: list[dict], field: str) -> float:
    """The median of one field over runs (nan for no runs)."""
    return statistics.median(r[field] for r in runs) if runs else float("nan")


def stage_cells(runs: list[dict]) -> str:
    """The median seconds of each stage summary, in order ("counting 0.65, merging 1.10, ...")."""
    names = [name for name, _ in runs[0]["stages"]]
    return ", ".join(f"{name} {statistics.median(r['stages'][k][1] for r in runs):.2f}"
                     for k, name in enumerate(names))


def longtail_slice(work_dir: Path, size: str, kind: str = "mutated", seed: int = 0) -> Path:
    """make_corpus.py's long-tail text of this kind, size and seed, written once and reused.
    The defaults (mutated, seed 0) are the slice superword training was tuned on; other kinds
    and seeds are text it has not seen."""
    name = f"longtail-{size}.txt" if (kind, seed) == ("mutated", 0) else f"{kind}-s{seed}-{size}.txt"
    path = work_dir / name
    if not path.is_file():
        work_dir.mkdir(parents=True, exist_ok=True)
        done = subprocess.run([sys.executable, str(Path(__file__).parent / "make_corpus.py"), "--size", size,
                               "--kind", kind, "--seed", str(seed), "-o", str(path)], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"make_corpus.py failed: {done.stderr}")
    return path
