"""Encoding speed: bpe_fast against tiktoken and the fast exact encoders on PyPI, same vocabulary,
same text, ids checked identical to tiktoken's.

    python benchmarks/bench_encode.py [--encoding cl100k_base] [--repeats 7] [--threads 2]
                                      [--only once,single,batch,cold] [--fresh] [--peers gigatoken,...]

* once (the headline, first): the job users run when they prepare data: each library in a fresh
  process loads the tokenizer (timed apart) and encodes the text once, never seen before, in
  pieces of ~1 MiB, on one thread and as a batch on --threads (``bench_encode_once.py`` on the
  same text, at most 3 repeats; tiktoken, and of --peers gigatoken, splintr and the other new
  encoders on PyPI, bpe_openai, wordchipper and tokie, those installed). Give it
  corpora unlike each other (``make_corpus.py --kind zipf|code|scripts``, C sources) with --text,
  or run ``bench_encode_once.py`` on several at once.
* The modes below are repeated calls in one process, whose chunks the caches already hold after
  the first: the secondary figures (RESULTS.md).

The text is mix33 (big, tinyshakespeare, code_python and multilingual/*, ~33 MB; see mix33.py),
or --text FILE. Peers that are installed take part, each loading the real vocabulary from the
local file where it can: tiktoken (the reference), gigatoken, fastokens, toktok-rs, quicktok-v1,
splintr-rs (``pip install gigatoken fastokens toktok-rs quicktok-v1 splintr-rs``); --peers
keeps some of them.

* single: one call on the whole text, one thread; each library's list form (tiktoken's
  ``encode_ordinary``) and its array form where it has one (bpe_fast ``encode_to_numpy``,
  gigatoken ``encode``, fastokens ``encode_batch_flat([text])``, toktok ``encode_to_numpy``,
  quicktok ``encode_batch([text], 1)``, splintr ``encode_flat``). The base is gigatoken's array
  (issue 18), else tiktoken's list.
* batch: every line of the text as a document (mix33: 556,637), on --threads threads: lists and
  flat buffers plus offsets (gigatoken's ``encode_batch``, an awkward array, is the base).
* cold: the first call on the whole text in a fresh process (after a small warm-up text that
  loads everything lazily loaded); most libraries keep caches between calls, so repeated calls
  run warm.

gigatoken and fastokens size rayon's thread pool once per process, from RAYON_NUM_THREADS (and
FASTOKENS_BPE_THREADS): this script sets them before any library is imported, to 1 for single
and cold and to --threads for batch, and runs single and batch in processes of their own when
both are asked for.

Same str or fresh str: gigatoken and fastokens read a str through CPython's cached UTF-8 copy,
made on the first call and kept on the str object, so encoding the same str object again costs
them no conversion (bpe_fast converts it every time). By default every call gets the same str,
as issue 18's numbers were measured; --fresh gives every timed call a new str (decoded again
from bytes, outside the timing).

Libraries alternate within each repeat, in an order rotated per repeat; medians are reported.
Times: wall, and CPU: the process's CPU time, all its threads (the machine may be shared, and
CPU time is what the other work on it disturbs least; not the calling thread's alone, because
gigatoken's list form hands even one text to its pool's thread). Ratios are base time / library
time (> 1: faster than the base), on CPU time. Finally bpe_fast's single-thread time is split
into its parts.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from mix33 import corpus_dir, mix33_files  # benchmarks/ is on sys.path

PEERS = ["tiktoken", "gigatoken", "fastokens", "toktok", "quicktok", "splintr"]
ONCE_PEERS = ["gigatoken", "splintr", "bpe_openai", "wordchipper", "tokie"]    # what bench_encode_once.py runs


def set_threads(threads: int) -> None:
    """Size the rayon pools of gigatoken and fastokens: before they are imported."""
    loaded = [name for name in ("gigatoken", "fastokens") if name in sys.modules]
    assert not loaded, f"{loaded} imported before their thread count was set"
    os.environ["RAYON_NUM_THREADS"] = str(threads)
    os.environ["FASTOKENS_BPE_THREADS"] = str(threads)


def mix33_text(corpora: Path) -> str:
    return "".join(f.read_bytes().decode("utf-8") for f in mix33_files(corpora))


def read_text(args) -> str:
    if args.text:
        return Path(args.text).read_bytes().decode("utf-8")
    return mix33_text(corpus_dir(args.corpus_dir))


def load_peers(encoding: str, wanted: list[str]) -> dict:
    """Each installed library's encoder for this encoding, bpe_fast first."""
    import bpe_fast
    from bpe_fast.registry import ENCODINGS, find_vocab_file

    vocab = str(find_vocab_file(f"{encoding}.tiktoken"))
    peers: dict[str, Any] = {"bpe_fast": bpe_fast.load(encoding)}

    def tiktoken_encoding():
        import tiktoken
        import tiktoken.load
        return tiktoken.Encoding(encoding, pat_str=ENCODINGS[encoding].pattern,
                                 special_tokens=ENCODINGS[encoding].special_tokens,
                                 mergeable_ranks=tiktoken.load.load_tiktoken_bpe(vocab))

    makers: dict[str, Callable[[], Any]] = {
        "tiktoken": tiktoken_encoding,
        # gigatoken takes the scheme and the special tokens from the file's name
        "gigatoken": lambda: __import__("gigatoken").Tokenizer.from_tiktoken(vocab),
        "fastokens": lambda: __import__("fastokens").Tokenizer.from_tiktoken(vocab, encoding=encoding),
        "toktok": lambda: __import__("toktok")._encoding(encoding),        # vocabularies built in
        "quicktok": lambda: __import__("quicktok").get_encoding(encoding),  # vocabularies in the wheel
        "splintr": lambda: __import__("splintr").Tokenizer.from_pretrained(encoding),
    }
    for name in wanted:
        if name not in makers:          # the new encoders: in the once mode only
            continue
        try:
            peers[name] = makers[name]()
        except ImportError:
            pass
    return peers


def single_calls(peers: dict) -> dict:
    """name -> (function of the text, kind of result): 'list' or 'array'."""
    import numpy as np

    ours = peers["bpe_fast"]
    calls = {"bpe_fast array": (lambda t: ours.encode_to_numpy(t, disallowed_special=()), "array"),
             "bpe_fast list": (ours.encode_ordinary, "list")}
    if "gigatoken" in peers:
        giga = peers["gigatoken"]
        calls["gigatoken array"] = (giga.encode, "array")
        calls["gigatoken list"] = (giga.as_tiktoken().encode_ordinary, "list")
    if "fastokens" in peers:
        fast = peers["fastokens"]
        calls["fastokens array"] = (lambda t: np.frombuffer(fast.encode_batch_flat([t])[0], np.uint32), "array")
        calls["fastokens list"] = (lambda t: fast.encode_ordinary(t).ids, "list")
    if "toktok" in peers:
        calls["toktok array"] = (peers["toktok"].encode_to_numpy, "array")
        calls["toktok list"] = (peers["toktok"].encode_ordinary, "list")
    if "quicktok" in peers:
        calls["quicktok array"] = (lambda t: peers["quicktok"].encode_batch([t], 1)[0], "array")
        calls["quicktok list"] = (peers["quicktok"].encode_ordinary, "list")
    if "splintr" in peers:
        calls["splintr array"] = (lambda t: np.frombuffer(peers["splintr"].encode_flat(t), np.uint32), "array")
        calls["splintr list"] = (peers["splintr"].encode_ordinary, "list")
    if "tiktoken" in peers:
        calls["tiktoken list"] = (peers["tiktoken"].encode_ordinary, "list")
    return calls


def batch_calls(peers: dict, threads: int) -> dict:
    """name -> (function of the list of texts, kind): 'lists', 'flat' ((ids, offsets)) or 'awkward'."""
    import numpy as np

    ours = peers["bpe_fast"]
    calls = {"bpe_fast flat": (lambda ts: ours.encode_batch_to_numpy(ts, workers=threads, disallowed_special=()),
                               "flat"),
             "bpe_fast lists": (lambda ts: ours.encode_batch(ts, workers=threads, disallowed_special=()), "lists")}
    if "gigatoken" in peers:     # threads: RAYON_NUM_THREADS (parallel= only turns the pool on)
        calls["gigatoken awkward"] = (lambda ts: peers["gigatoken"].encode_batch(ts, parallel=True), "awkward")
        calls["gigatoken lists"] = (lambda ts: peers["gigatoken"].encode_batch_list(ts, parallel=True), "lists")
    if "fastokens" in peers:     # threads: RAYON_NUM_THREADS / FASTOKENS_BPE_THREADS
        calls["fastokens flat"] = (lambda ts: tuple(np.frombuffer(b, t) for b, t in zip(
            peers["fastokens"].encode_batch_flat(ts), (np.uint32, np.uint64))), "flat")
    if "toktok" in peers:
        calls["toktok flat"] = (lambda ts: peers["toktok"].encode_batch_to_numpy(ts, threads), "flat")
    if "quicktok" in peers:
        calls["quicktok flat"] = (lambda ts: peers["quicktok"].encode_batch(ts, threads), "flat")
    if "splintr" in peers:       # rayon: all cores, no thread count
        calls["splintr flat"] = (lambda ts: tuple(np.frombuffer(b, t) for b, t in zip(
            peers["splintr"].encode_batch_flat(ts), (np.uint32, np.uint64))), "flat")
    if "tiktoken" in peers:
        calls["tiktoken lists"] = (lambda ts: peers["tiktoken"].encode_ordinary_batch(ts, num_threads=threads),
                                   "lists")
    return calls


def as_flat(result, kind: str):
    import numpy as np

    if kind in ("list", "array"):
        return np.asarray(result, np.uint32), None
    if kind == "lists":
        offsets = np.zeros(len(result) + 1, np.int64)
        np.cumsum([len(ids) for ids in result], out=offsets[1:])
        return np.fromiter((i for ids in result for i in ids), np.uint32, count=int(offsets[-1])), offsets
    if kind == "awkward":
        import awkward as ak
        offsets = np.zeros(len(result) + 1, np.int64)
        np.cumsum(np.asarray(ak.num(result, axis=1), np.int64), out=offsets[1:])
        return np.asarray(ak.flatten(result, axis=1), np.uint32), offsets
    ids, offsets = result
    return np.asarray(ids, np.uint32), np.asarray(offsets, np.int64)


def run_alternating(calls: dict, make_arg: Callable[[], Any], repeats: int, check, cpu_clock) -> dict:
    """{name: (wall times, CPU times, first call's wall time)}: a first, checked call each, then
    ``repeats`` rounds in an order rotated per round; make_arg() gives each timed call its
    argument (outside the timing)."""
    first: dict[str, float] = {}
    for name, (fn, kind) in calls.items():
        arg = make_arg()
        start = time.perf_counter()
        result = fn(arg)
        first[name] = time.perf_counter() - start
        check(name, result, kind)
        del result
    wall: dict[str, list[float]] = {name: [] for name in calls}
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            arg = make_arg()
            start, start_cpu = time.perf_counter(), cpu_clock()
            result = calls[name][0](arg)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(cpu_clock() - start_cpu)
            del result
    return {name: (wall[name], cpu[name], first[name]) for name in names}


def report(title: str, times: dict, size_mb: float, base: str | None) -> None:
    wall = {k: statistics.median(v[0]) for k, v in times.items()}
    cpu = {k: statistics.median(v[1]) for k, v in times.items()}
    print(f"\n{title}")
    against = base or "-"
    print(f"| library, form | wall s | CPU s | CPU/wall | MB/s (CPU) | vs {against} (CPU) | vs {against} (wall) "
          "| first call s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in times:
        ratios = (f"{cpu[base] / cpu[name]:.2f}x | {wall[base] / wall[name]:.2f}x" if base else " | ")
        print(f"| {name} | {wall[name]:.3f} | {cpu[name]:.3f} | {cpu[name] / wall[name]:.2f} | "
              f"{size_mb / cpu[name]:.1f} | {ratios} | {times[name][2]:.3f} |")


def run_single(args, peers: dict, text: str, size_mb: float) -> None:
    import numpy as np

    reference = np.asarray((peers["tiktoken"] if "tiktoken" in peers else peers["bpe_fast"]).encode_ordinary(text),
                           np.uint32)

    def check(name, result, kind):
        assert np.array_equal(as_flat(result, kind)[0], reference), f"{name}: ids differ from the reference"

    raw = text.encode("utf-8")
    calls = single_calls(peers)
    if not args.tiktoken:
        calls.pop("tiktoken list", None)       # about 2 s a call on mix33: checked, not timed
    times = run_alternating(calls, (lambda: raw.decode("utf-8")) if args.fresh else (lambda: text),
                            args.repeats, check, time.process_time)
    base = "gigatoken array" if "gigatoken array" in times else "tiktoken list" if "tiktoken list" in times else None
    report(f"single thread, whole text ({'a fresh str every call' if args.fresh else 'the same str every call'}), "
           f"median of {args.repeats}", times, size_mb, base)
    split_time(peers["bpe_fast"], text, args.repeats)


def run_batch(args, peers: dict, text: str, size_mb: float) -> None:
    import numpy as np

    lines = text.splitlines(keepends=True)
    raw = [line.encode("utf-8") for line in lines]
    if "tiktoken" in peers:
        reference = as_flat(peers["tiktoken"].encode_ordinary_batch(lines, num_threads=args.threads), "lists")
    else:
        reference = as_flat(peers["bpe_fast"].encode_batch_to_numpy(lines, workers=1, disallowed_special=()), "flat")

    def check(name, result, kind):
        ids, offsets = as_flat(result, kind)
        assert np.array_equal(ids, reference[0]) and np.array_equal(offsets, reference[1]), \
            f"{name}: batch ids differ from the reference"

    calls = batch_calls(peers, args.threads)
    if not args.tiktoken:
        calls.pop("tiktoken lists", None)
    times = run_alternating(calls, (lambda: [b.decode("utf-8") for b in raw]) if args.fresh else (lambda: lines),
                            args.repeats, check, time.process_time)
    base = "gigatoken awkward" if "gigatoken awkward" in times else None
    report(f"batch of {len(lines):,} lines, {args.threads} threads "
           f"({'fresh strs every call' if args.fresh else 'the same strs every call'}), median of {args.repeats}",
           times, size_mb, base)


def cold_child(args) -> None:
    set_threads(1)
    peers = load_peers(args.encoding, [p for p in args.peers if p != "bpe_fast"])
    fn = single_calls(peers)[args.cold_child][0]
    fn("warm-up: Hello, world! Ünïcödé 12345 " * 100)
    text = read_text(args)
    start = time.perf_counter()
    fn(text)
    print(time.perf_counter() - start)


def run_cold(args, names: list[str], size_mb: float) -> None:
    times: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(max(1, args.repeats // 2)):
        for name in names:
            out = subprocess.run([sys.executable, __file__, "--cold-child", name, *child_args(args)],
                                 capture_output=True, text=True, check=True)
            times[name].append(float(out.stdout.split()[-1]))
    median = {name: statistics.median(t) for name, t in times.items()}
    base = "gigatoken array" if "gigatoken array" in median else None
    print(f"\ncold: the first call on the whole text in a fresh process, wall time, median of {len(times[names[0]])}")
    print(f"| library, form | s | MB/s | vs {base or '-'} |")
    print("|---|---:|---:|---:|")
    for name, t in median.items():
        print(f"| {name} | {t:.3f} | {size_mb / t:.1f} | {f'{median[base] / t:.2f}x' if base else ''} |")


def run_once(args) -> None:
    """The headline: bench_encode_once.py on this text (mix33 written to a scratch file if no
    --text), each library in a fresh process, the text encoded once."""
    libs = ["bpe_fast", "tiktoken"] + [p for p in ONCE_PEERS if p in args.peers and importlib.util.find_spec(p)]
    with tempfile.TemporaryDirectory(prefix="bench-encode-once-") as scratch:
        path = Path(args.text) if args.text else Path(scratch) / "mix33.txt"
        if not args.text:
            path.write_text(read_text(args), encoding="utf-8", newline="")
        print(f"once: {args.encoding} on {args.text or 'mix33'}, each library in a fresh process "
              f"(bench_encode_once.py): {', '.join(libs)}", flush=True)
        subprocess.run([sys.executable, str(Path(__file__).with_name("bench_encode_once.py")), str(path),
                        "--encodings", args.encoding, "--libs", ",".join(libs), "--repeats",
                        str(min(args.repeats, 3)), "--threads", str(args.threads)], check=True)


def child_args(args) -> list[str]:
    out = ["--encoding", args.encoding, "--repeats", str(args.repeats), "--threads", str(args.threads),
           "--peers", ",".join(args.peers)]
    out += ["--text", args.text] if args.text else []
    out += ["--corpus-dir", args.corpus_dir] if args.corpus_dir else []
    out += ["--fresh"] if args.fresh else []
    out += ["--tiktoken"] if args.tiktoken else []
    return out


def version(name: str) -> str:
    from importlib import metadata

    distribution = {"bpe_fast": "bpe_fast", "toktok": "toktok-rs", "quicktok": "quicktok-v1",
                    "splintr": "splintr-rs"}.get(name, name)
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return getattr(sys.modules.get(name), "__version__", "?")


def split_time(ours, text: str, repeats: int) -> None:
    """Where bpe_fast's single-thread time goes: the scanner alone, counting (scanner, lookups,
    merging, no ids kept), the uint32 array, the list."""
    import bpe_fast

    data = text.encode("utf-8")
    scanner = bpe_fast.pretokenize.splitter.native_scanner(ours.pattern)

    def best(fn):
        return min(timed(fn) for _ in range(repeats))

    scan = best(lambda: scanner.boundaries(data))
    count = best(lambda: ours.count_tokens(text, disallowed_special=()))
    array = best(lambda: ours.encode_to_numpy(text, disallowed_special=()))
    lists = best(lambda: ours.encode_ordinary(text))
    print(f"\nbpe_fast single thread, warm, best of {repeats}, CPU s: pre-tokenization (native scanner, on bytes, "
          f"boundaries kept) {scan:.3f}; count_tokens (UTF-8, scanner, lookups, no ids kept) {count:.3f}; "
          f"encode_to_numpy {array:.3f}; encode_ordinary (a list) {lists:.3f}")


def timed(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encoding", default="cl100k_base", choices=["cl100k_base", "o200k_base"])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="for batch")
    ap.add_argument("--only", default="once,single,batch,cold",
                    help="comma-separated modes: once (the headline), single, batch, cold")
    ap.add_argument("--fresh", action="store_true", help="a new str (no cached UTF-8) for every timed call")
    ap.add_argument("--peers", default=",".join(PEERS + ONCE_PEERS[2:]),
                    help="comma-separated peers to load, if installed (bpe_openai, wordchipper, tokie: once only)")
    ap.add_argument("--tiktoken", action="store_true", help="time tiktoken too (slow); it checks the ids either way")
    ap.add_argument("--text", help="a UTF-8 file to encode instead of mix33")
    ap.add_argument("--corpus-dir", help="where mix33's files are (default: the shared corpora)")
    ap.add_argument("--cold-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.peers = [p for p in args.peers.split(",") if p]
    if args.cold_child:
        cold_child(args)
        return 0
    unknown = set(args.only.split(",")) - {"once", "cold", "single", "batch"}
    if unknown:
        raise SystemExit(f"--only: unknown mode(s) {', '.join(sorted(unknown))} (known: once, cold, single, batch)")
    if "once" in args.only.split(","):
        run_once(args)
    modes = [m for m in ("cold", "single", "batch") if m in args.only.split(",")]
    if not modes:
        return 0
    if "single" in modes and "batch" in modes:      # rayon's pool is sized once per process
        for mode in ("cold", "single", "batch"):
            if mode in modes:
                subprocess.run([sys.executable, __file__, "--only", mode, *child_args(args)], check=True)
        return 0
    set_threads(args.threads if modes == ["batch"] else 1)
    peers = load_peers(args.encoding, args.peers)
    text = read_text(args)
    size_mb = len(text.encode("utf-8")) / 1e6
    versions = ", ".join(f"{name} {version(name)}" for name in peers)
    print(f"{args.encoding} on {args.text or 'mix33'}: {size_mb:.1f} MB; {versions}; ids checked against "
          f"{'tiktoken' if 'tiktoken' in peers else 'bpe_fast (tiktoken absent)'}; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs; "
          f"RAYON_NUM_THREADS={os.environ['RAYON_NUM_THREADS']}")
    if "cold" in modes:      # first: after the batches, peers' idle thread pools can spin and slow the children
        run_cold(args, [name for name in single_calls(peers) if not name.startswith("tiktoken")], size_mb)
    if "single" in modes:
        run_single(args, peers, text, size_mb)
    if "batch" in modes:
        run_batch(args, peers, text, size_mb)
    print(f"\nload average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
