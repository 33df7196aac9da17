"""Loading a saved tokenizer and a first encode, each in a fresh process, against gigatoken.

    python benchmarks/bench_load.py [--encodings cl100k_base,o200k_base] [--repeats 5] [--vocabs DIR]

Saves each named encoding in the formats people pass around (a .tiktoken file with its sidecar,
Hugging Face's tokenizer.json, bpe_fast's JSON) into a scratch folder, then times, in a fresh
process each, ``bpe_fast.load(file)`` and a first ``encode`` of a short text, and gigatoken reading
the same file where it can (``Tokenizer.from_tiktoken``, ``Tokenizer.from_json``). bpe_fast's cache
folder (prebuilt.py) is a scratch one that starts empty: the first load ever of each file is given
apart, the later ones read back what it saved. Medians of --repeats, wall seconds; both must give
the same ids for the short text (checked). issue 30: "loading a named or saved tokenizer".
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TEXT = "Hello, world! A first short text, with some words: tokenizer, encoding, ids."

CHILD = r'''
import json, sys, time
lib, kind, path, text = sys.argv[1:5]
t0 = time.perf_counter()
if lib == "bpe_fast":
    import bpe_fast
    t1 = time.perf_counter()
    tok = bpe_fast.load(path)
else:
    import gigatoken
    t1 = time.perf_counter()
    tok = gigatoken.Tokenizer.from_tiktoken(path) if kind == "tiktoken" else \
        gigatoken.Tokenizer.from_json(open(path, encoding="utf-8").read())
t2 = time.perf_counter()
ids = [int(i) for i in tok.encode(text)]
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "first": t3 - t2, "ids": ids}))
'''

FORMATS = {"tiktoken": ("{}.tiktoken", "tiktoken"), "huggingface": ("{}.tokenizer.json", "huggingface"),
           "bpe_fast": ("{}.json", "bpe_fast")}


def run(lib: str, kind: str, path: Path, cache: Path) -> dict | None:
    """One fresh process's times and ids; None where gigatoken cannot read the file (it reads a
    tokenizer.json only when it knows its split pattern: o200k_base's, not cl100k_base's)."""
    env = dict(os.environ, BPE_FAST_CACHE=str(cache))
    done = subprocess.run([sys.executable, "-c", CHILD, lib, kind, str(path), TEXT], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0 and lib == "gigatoken":
        return None
    if done.returncode != 0:
        raise SystemExit(f"{lib} reading {path} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encodings", default="cl100k_base,o200k_base")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--vocabs", type=Path, default=None, help="folder of the .tiktoken files")
    args = parser.parse_args()
    import bpe_fast
    with tempfile.TemporaryDirectory() as scratch:
        folder, cache = Path(scratch), Path(scratch) / "cache"
        for encoding in args.encodings.split(","):
            tok = bpe_fast.load(encoding, path=args.vocabs) if args.vocabs else bpe_fast.load(encoding)
            print(f"\n{encoding}: load + first encode of a short text, wall seconds, medians of {args.repeats}")
            print(f"{'file':<24} {'bpe_fast first ever':>20} {'bpe_fast':>9} {'gigatoken':>10} "
                  f"{'gigatoken/bpe_fast':>19}")
            for kind, (name, fmt) in FORMATS.items():
                path = folder / name.format(encoding)
                tok.save(path, format=fmt)
                first = run("bpe_fast", kind, path, cache)
                ours = [r for r in (run("bpe_fast", kind, path, cache) for _ in range(args.repeats)) if r]
                theirs = [r for r in (run("gigatoken", kind, path, cache) for _ in range(args.repeats)
                                      if kind != "bpe_fast") if r]
                if theirs and theirs[0]["ids"] != ours[0]["ids"]:
                    raise SystemExit(f"{encoding} {kind}: bpe_fast and gigatoken give different ids")
                assert first is not None
                mine = statistics.median(r["load"] + r["first"] for r in ours)
                giga = statistics.median(r["load"] + r["first"] for r in theirs) if theirs else float("nan")
                note = "" if theirs else ("  (gigatoken does not read this file)" if kind != "bpe_fast" else "")
                print(f"{path.name:<24} {first['load'] + first['first']:>20.3f} {mine:>9.3f} {giga:>10.3f} "
                      f"{giga / mine:>19.2f}{note}")


if __name__ == "__main__":
    main()
