"""Encode once: the data-preparation job, each library in a fresh process (issue 30's headline).

    python benchmarks/bench_encode_once.py TEXT... [--encodings cl100k_base,o200k_base]
                                           [--libs bpe_fast,gigatoken,tiktoken] [--repeats 3]
                                           [--modes single,batch] [--threads 2] [--piece 1M]

For every text, encoding, library and mode, a new Python process imports the library, loads the
named tokenizer from the local vocabulary file (timed apart: ``import`` and ``load``), encodes
a short text (``first``: what a user's first call pays, tables built on first use included),
then encodes the text *once*, in pieces of ~1 MiB cut at line ends (``encode``): no piece is
seen twice, so each library's chunk cache starts empty, as in a job that prepares pre-training
data. ``single``: one piece after another on one thread; ``batch``: all pieces in one batch
call on --threads threads. The text is read before the clock starts. Every library's ids are
checked equal to tiktoken's (a hash of all ids, with their count) or the row says "DIFFERENT".

bpe_fast's load may read tables an earlier process saved (bpe_fast/prebuilt.py); the first
repeat of each encoding runs with a cache folder of its own that starts empty, so its load is
the one a user pays once, reported as ``load (first ever)``; later repeats read it back.

Libraries: bpe_fast, gigatoken (``pip install gigatoken``), tiktoken, and the new encoders on PyPI
(``pip install splintr-rs bpe-openai wordchipper tokie``; not in the default --libs): splintr and
bpe_openai with the copy of the vocabulary they carry, wordchipper with the local file put where it
looks for its download, tokie with a tokenizer.json bpe_fast writes from the local file (bpe_openai
refuses a str of 1,000,000 characters or more: its pieces are at most 900,000; its limit of 200,000
ids a call is lifted). Each uses its
fastest form that gives ids (arrays where there are). RAYON_NUM_THREADS is set for the Rust
libraries' pools (1 for single, --threads for batch). Runs alternate between libraries
within a repeat; the table gives medians over repeats of CPU seconds (all threads; the machine
may be shared, and CPU time is least disturbed by others) and wall seconds, and the ratio
gigatoken / bpe_fast on CPU time (> 1: bpe_fast is faster); ``paired``: the same ratio repeat by
repeat (its median and range), steadier on a busy machine.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIBS = ["bpe_fast", "gigatoken", "tiktoken"]
NEW_ENCODERS = ["splintr", "bpe_openai", "wordchipper", "tokie"]     # the "new encoders"

CHILD = r'''
import hashlib, json, os, resource, sys, time
import numpy as np

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

lib, encoding, vocab_file, text_file, mode, threads, piece = sys.argv[1:8]
threads, piece = int(threads), int(piece)
if lib == "bpe_openai":
    piece = min(piece, 900_000)             # it refuses a str of 1,000,000 characters or more
data = open(text_file, encoding="utf-8", newline="").read()
pieces, at = [], 0
while at < len(data):                       # ~piece characters, cut after a line end
    end = data.find("\n", at + piece)
    end = len(data) if end < 0 else end + 1
    pieces.append(data[at:end])
    at = end
del data
times = {}
w0, c0 = time.perf_counter(), cpu()
if lib == "bpe_fast":
    import bpe_fast
elif lib == "gigatoken":
    import gigatoken
elif lib == "tiktoken":
    import tiktoken, tiktoken.load
    from tiktoken_ext import openai_public
else:
    import importlib
    module = importlib.import_module(lib)
w1, c1 = time.perf_counter(), cpu()
if lib == "bpe_fast":
    tok = bpe_fast.load(encoding, path=os.path.dirname(vocab_file))
    first = lambda t: tok.encode_to_numpy(t, disallowed_special=())
    one = lambda t: tok.encode_to_numpy(t, disallowed_special=())
    many = lambda ts: [tok.encode_batch_to_numpy(ts, workers=threads, disallowed_special=())[0]]
elif lib == "gigatoken":
    tok = gigatoken.Tokenizer.from_tiktoken(vocab_file)
    first = one = tok.encode
    many = lambda ts: tok.encode_batch_list(ts, parallel=True)
elif lib == "tiktoken":
    loader = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *a, **k: tiktoken.load.load_tiktoken_bpe(vocab_file)
    tok = tiktoken.Encoding(**getattr(openai_public, encoding)())
    first = one = tok.encode_ordinary
    many = lambda ts: tok.encode_ordinary_batch(ts, num_threads=threads)
elif lib == "splintr":                      # its own copy of the vocabulary (ids checked anyway)
    tok = module.Tokenizer.from_pretrained(encoding)
    first = one = lambda t: np.frombuffer(tok.encode_flat(t), np.uint32)
    many = lambda ts: [np.frombuffer(tok.encode_batch_flat(ts)[0], np.uint32)]
elif lib == "bpe_openai":                   # its own copy of the vocabulary
    tok = module.get_encoding(encoding)
    tok._check_chunk_limit = lambda count: None     # its 200,000 ids a call: a data job has no such limit
    first = one = tok.encode_ordinary
    many = lambda ts: tok.encode_ordinary_batch(ts, num_threads=threads)
elif lib == "wordchipper":                  # the local file, from WORDCHIPPER_CACHE_DIR (set by the parent)
    tok = module.Tokenizer.from_pretrained(encoding)
    first = one = tok.encode
    many = tok.encode_batch
else:                                       # tokie: the tokenizer.json bpe_fast wrote from the local file
    tok = module.Tokenizer.from_json(os.environ["BENCH_TOKIE_JSON"])
    first = one = lambda t: tok.encode(t).ids
    many = lambda ts: [tok.encode_batch_flat(ts)[0]]
w2, c2 = time.perf_counter(), cpu()
first("Hello, world! A first short text.")
w3, c3 = time.perf_counter(), cpu()
if mode == "single":
    out = [one(p) for p in pieces]
else:
    out = many(pieces)
w4, c4 = time.perf_counter(), cpu()
digest, count = hashlib.blake2b(digest_size=16), 0
for ids in out:
    arr = np.asarray(ids, dtype=np.uint32)
    if arr.ndim != 1:
        arr = np.concatenate([np.asarray(x, np.uint32) for x in ids]) if len(ids) else arr.reshape(-1)
    digest.update(arr.tobytes())
    count += len(arr)
print(json.dumps({"import": [w1 - w0, c1 - c0], "load": [w2 - w1, c2 - c1], "first": [w3 - w2, c3 - c2],
                  "encode": [w4 - w3, c4 - c3], "ids": count, "hash": digest.hexdigest()}))
'''


def run_child(lib, encoding, vocab_file, text, mode, threads, piece, cache: str | None) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS=str(1 if mode == "single" else threads))
    env.pop("PYTHONDONTWRITEBYTECODE", None)    # an installed package has its .pyc files: import as users do
    if cache is not None:
        env["BPE_FAST_CACHE"] = cache
        env["WORDCHIPPER_CACHE_DIR"] = str(Path(cache).parent / "wordchipper")
        env["BENCH_TOKIE_JSON"] = str(Path(cache).parent / f"{encoding}.tokenizer.json")
    done = subprocess.run([sys.executable, "-c", CHILD, lib, encoding, str(vocab_file), str(text), mode,
                           str(threads), str(piece)], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{lib} {encoding} {mode} on {text} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def prepare_new_encoders(libs, encoding, vocab_file, scratch: Path) -> None:
    """What two of the new encoders need to read the local vocabulary file, made before any clock
    starts: wordchipper looks for it in its cache folder (openai/NAME/NAME.tiktoken), tokie reads
    Hugging Face's tokenizer.json (written here by bpe_fast from the same file)."""
    if "wordchipper" in libs:
        folder = scratch / "wordchipper" / "openai" / encoding
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(vocab_file, folder / vocab_file.name)
    if "tokie" in libs:
        import bpe_fast
        bpe_fast.load(encoding, path=vocab_file.parent).save(scratch / f"{encoding}.tokenizer.json")


def vocab_folder() -> Path:
    for folder in (os.environ.get("BPE_FAST_VOCABS"), HERE.parent.parent / "shared" / "vocabs"):
        if folder and Path(folder, "cl100k_base.tiktoken").is_file():
            return Path(folder)
    raise SystemExit("the OpenAI vocabulary files were not found: set BPE_FAST_VOCABS")


def parse_size(text: str) -> int:
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(float(text.rstrip("KkMmGg")) * scale)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("texts", nargs="+", type=Path, help="UTF-8 text files, each encoded once per run")
    parser.add_argument("--encodings", default="cl100k_base,o200k_base")
    parser.add_argument("--libs", default=",".join(LIBS))
    parser.add_argument("--modes", default="single,batch")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--piece", type=parse_size, default=1 << 20, help="characters per piece (default 1M)")
    args = parser.parse_args()
    libs = [lib for lib in args.libs.split(",") if lib]
    vocabs = vocab_folder()
    missing = [lib for lib in libs if lib not in LIBS + NEW_ENCODERS]
    if missing:
        raise SystemExit(f"--libs: unknown {', '.join(missing)} (known: {', '.join(LIBS + NEW_ENCODERS)})")
    with tempfile.TemporaryDirectory(prefix="bench-once-cache-") as scratch:
        for encoding in args.encodings.split(","):
            vocab_file = vocabs / f"{encoding}.tiktoken"
            prepare_new_encoders(libs, encoding, vocab_file, Path(scratch))
            first_ever = run_child("bpe_fast", encoding, vocab_file, args.texts[0], "single", 1, 1 << 16,
                                   cache=str(Path(scratch) / encoding)) if "bpe_fast" in libs else None
            if first_ever is not None:
                print(f"\n{encoding}: bpe_fast load (first ever, empty cache): {first_ever['load'][0]:.3f} s wall, "
                      f"first call {first_ever['first'][0]:.3f} s")
            for text in args.texts:
                report(encoding, vocab_file, text, libs, args, cache=str(Path(scratch) / encoding))


def report(encoding, vocab_file, text, libs, args, cache) -> None:
    size = text.stat().st_size
    for mode in args.modes.split(","):
        runs: dict[str, list[dict]] = {lib: [] for lib in libs}
        for r in range(args.repeats):
            for lib in libs[r % len(libs):] + libs[:r % len(libs)]:
                runs[lib].append(run_child(lib, encoding, vocab_file, text, mode, args.threads, args.piece, cache))
        truth = runs.get("tiktoken", runs[libs[0]])[0]
        print(f"\n{encoding}  {text.name} ({size / 1e6:.0f} MB)  {mode}"
              f"{'' if mode == 'single' else f' ({args.threads} threads)'}")
        print(f"{'library':<12} {'import':>7} {'load':>7} {'first':>7} {'encode cpu':>10} {'wall':>7} "
              f"{'MB/s':>6} {'giga/x cpu':>10} {'paired':>17}  ids")
        med = {lib: {part: [statistics.median(r[part][i] for r in runs[lib]) for i in (0, 1)]
                     for part in ("import", "load", "first", "encode")} for lib in libs}
        for lib in libs:
            m, same = med[lib], all(r["hash"] == truth["hash"] and r["ids"] == truth["ids"] for r in runs[lib])
            ratio = med["gigatoken"]["encode"][1] / m["encode"][1] if "gigatoken" in med else float("nan")
            print(f"{lib:<12} {m['import'][0]:>7.3f} {m['load'][0]:>7.3f} {m['first'][0]:>7.3f} "
                  f"{m['encode'][1]:>10.2f} {m['encode'][0]:>7.2f} {size / 1e6 / m['encode'][0]:>6.1f} "
                  f"{ratio:>10.2f} {paired(runs, lib):>17}  {runs[lib][0]['ids']:,}{'' if same else ' DIFFERENT'}")


def paired(runs: dict[str, list[dict]], lib: str) -> str:
    """gigatoken's CPU / lib's, repeat by repeat (the two run one after the other), as the median
    and the range: on a shared machine the load moves both runs of a repeat more alike than runs of
    different repeats, so this is the steadier figure, and its range says how far one repeat can be
    trusted."""
    if "gigatoken" not in runs:
        return "-"
    ratios = [g["encode"][1] / x["encode"][1] for g, x in zip(runs["gigatoken"], runs[lib])]
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


if __name__ == "__main__":
    main()
