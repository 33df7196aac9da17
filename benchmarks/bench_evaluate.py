"""The quality report's cost: ``Tokenizer.evaluate`` against plain encoding of the same files.

    python benchmarks/bench_evaluate.py [--encoding cl100k_base] [--repeats 5] [--workers N]
                                        [--by file] [FILE ...]

Both read the files the same way (bpe_fast.counting.inputs, in blocks and batches of about 4 MB) and
encode every batch with ``encode_batch_to_numpy``; evaluate also counts bytes and words
(a C loop over each text), the ids (a bincount, _measure.pyx) and, at the end, the Rényi entropy and
the unused ids. The files default to mix33 (big, tinyshakespeare, code_python and
multilingual/*, ~33 MB; mix33.py). The two alternate within each repeat (the order swapped
every repeat); medians of wall and process CPU time are printed, and their ratios
(evaluate / plain: 1.0 is free). The first, untimed, run builds the encoder and its caches.
"""
from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

import bpe_fast
from bpe_fast.prepare.corpus import batches, pieces

from mix33 import corpus_dir, mix33_files


def plain(tok, files: list[str], workers: int | None) -> int:
    """Encode the files' batches as ``bpe-fast encode`` reads them; the tokens."""
    splitter = replace(tok.splitter, special_tokens=tuple(tok.special_tokens))
    tokens = 0
    for texts, _, _ in batches(pieces(files, splitter)):
        tokens += len(tok.encode_batch_to_numpy(texts, workers=workers, disallowed_special=())[0])
    return tokens


def timed(run) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = run()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="default: mix33")
    parser.add_argument("--encoding", default="cl100k_base", help="a named encoding or a tokenizer file")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=None, help="encoding threads (default: one per CPU)")
    parser.add_argument("--by", default=None, help="evaluate's by= (file: a group per file)")
    args = parser.parse_args()
    files = args.files or [str(f) for f in mix33_files(corpus_dir())]
    tok = bpe_fast.load(args.encoding)
    runs = {"plain": lambda: plain(tok, files, args.workers),
            "evaluate": lambda: tok.evaluate(files, by=args.by, workers=args.workers, files=True)}
    tokens = runs["plain"]()
    report = runs["evaluate"]()
    assert report.row().tokens == tokens, (report.row().tokens, tokens)      # the same text, the same ids
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for k in range(args.repeats):
        for name in (list(runs) if k % 2 == 0 else list(runs)[::-1]):
            wall, cpu, _ = timed(runs[name])
            times[name].append((wall, cpu))
    size = report.row().bytes
    print(f"{len(files)} files, {size / 1e6:.1f} MB, {tokens:,} tokens ({args.encoding}), "
          f"{args.repeats} repeats, medians")
    medians = {name: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
               for name, t in times.items()}
    for name, (wall, cpu) in medians.items():
        print(f"{name:>9}: wall {wall:.3f} s ({size / wall / 1e6:.0f} MB/s), CPU {cpu:.3f} s")
    print(f"evaluate / plain: wall {medians['evaluate'][0] / medians['plain'][0]:.3f}x, "
          f"CPU {medians['evaluate'][1] / medians['plain'][1]:.3f}x")


if __name__ == "__main__":
    main()
