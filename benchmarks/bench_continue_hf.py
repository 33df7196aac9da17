"""Continued training with Hugging Face's ties: bpe_fast against the bpe-continue package.

    python benchmarks/bench_continue_hf.py --base-corpus ../shared/corpora/big.txt --base-size 8192 \
        --corpus ../shared/corpora/multilingual/ru.txt --merges 2000

bpe-continue (PyPI, Neukiru/bpe-continue) is Hugging Face's BpeTrainer with a mode that starts from
a tokenizer.json's tokens: every base token keeps its id, and ties between pairs of equal count go
to the smallest pair of the file's ids, as BpeTrainer's do to the smallest of its own. Both runs
here read the corpus as Hugging Face's train(files) does, every line a document (bpe_fast:
``lines=True``), with the GPT-2 split of the ByteLevel pre-tokenizer. Two bases, made from
--base-corpus:

* "bpetrainer": BpeTrainer's own tokenizer.json (ByteLevel alphabet, <|endoftext|> first): its ids
  are BpeTrainer's numbering, so bpe-continue's ties are Hugging Face's.
* "bpe_fast ids": the same merges learned by bpe_fast (``tie_break="huggingface"``, the same
  tokenizer) and saved as tokenizer.json with bpe_fast's ids (bytes 0..255 in byte order,
  <|endoftext|> last): bpe-continue then breaks ties by byte order, where Hugging Face's numbering
  puts the bytes in the order of their GPT-2 characters.

--base NAME_OR_FILE adds a third: an existing tokenizer (``gpt2``, any file bpe_fast.load reads),
saved as tokenizer.json with its own ids (GPT-2's number the bytes in Hugging Face's order too).

Each base is continued by bpe-continue, by bpe_fast with ``tie_break="huggingface"`` (ties by the
ids BpeTrainer gives the base's tokens, whatever the file's ids) and by bpe_fast with
``tie_break="bytes"`` (ties by the base's own ids). For each pair of runs it prints how many of the
new merges agree, and at each place where they part, the two merges chosen with their counts at
that point (equal counts: a tie broken differently). --json writes it all.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

import bpe_fast
from bpe_fast.training import continued

SPECIAL = "<|endoftext|>"


def bpetrainer_base(corpus: str, vocab_size: int, folder: Path) -> Path:
    """Hugging Face's BpeTrainer on the corpus's lines, as its documentation trains GPT-2-style BPE."""
    import tokenizers as hf
    tok = hf.Tokenizer(hf.models.BPE())
    tok.pre_tokenizer = hf.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = hf.decoders.ByteLevel()
    tok.train([corpus], hf.trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False, special_tokens=[SPECIAL],
                                               initial_alphabet=hf.pre_tokenizers.ByteLevel.alphabet()))
    path = folder / "bpetrainer-base.json"
    tok.save(str(path))
    return path


def bpe_fast_ids_base(corpus: str, vocab_size: int, folder: Path) -> Path:
    """The same training by bpe_fast, saved with bpe_fast's ids."""
    tok = bpe_fast.train([corpus], vocab_size, pattern="gpt2", tie_break="huggingface", lines=True,
                         special_tokens=[SPECIAL], progress="none")
    path = folder / "bpe_fast-ids-base.json"
    tok.save(path, format="huggingface")
    return path


def given_base(name: str, folder: Path) -> Path:
    """An existing tokenizer as tokenizer.json, its ids as they are."""
    path = folder / "given-base.json"
    bpe_fast.load(name).save(path, format="huggingface")
    return path


def with_bpe_continue(base: Path, corpus: str, vocab_size: int, folder: Path) -> bpe_fast.Tokenizer:
    import bpe_continue
    extended = bpe_continue.continue_training(str(base), files=[corpus], vocab_size=vocab_size, show_progress=False)
    path = folder / f"{base.stem}-bpe-continue.json"
    extended.save(str(path))
    return bpe_fast.load(path)


def with_bpe_fast(base: Path, corpus: str, vocab_size: int, tie_break: str) -> bpe_fast.Tokenizer:
    return bpe_fast.train([corpus], vocab_size, base=bpe_fast.load(base), tie_break=tie_break,
                          lines=True, progress="none")


def continue_three_ways(base: Path, corpus: str, size: int, folder: Path) -> tuple[dict, dict]:
    """The base continued to ``size`` by bpe-continue and by bpe_fast with either tie-break,
    and the seconds each took."""
    trainers = {"bpe-continue": lambda: with_bpe_continue(base, corpus, size, folder),
                "bpe_fast huggingface": lambda: with_bpe_fast(base, corpus, size, "huggingface"),
                "bpe_fast bytes": lambda: with_bpe_fast(base, corpus, size, "bytes")}
    runs, seconds = {}, {}
    for run, train in trainers.items():
        t0 = time.perf_counter()
        runs[run] = train()
        seconds[run] = round(time.perf_counter() - t0, 2)
    return runs, seconds


def new_merges(tok: bpe_fast.Tokenizer, n_base: int) -> list[tuple[bytes, bytes]]:
    return [(tok.token_bytes(a), tok.token_bytes(b)) for a, b in tok.merges[n_base:].tolist()]


def pair_counts(tok: bpe_fast.Tokenizer, table: bpe_fast.WordTable, pairs: list[tuple[bytes, bytes]]) -> list[int]:
    """How often each pair (of token bytes) occurs in the corpus as ``tok`` encodes it."""
    start, _ = continued.tokenized_by(tok, table)        # each token's id where it starts, in table order
    ids = start[start >= 0]
    lengths = np.array([len(t) if t is not None else 0 for t in tok._vocab], dtype=np.int64)
    ends = np.cumsum(lengths[ids])                       # byte offset where each token ends
    word_of = np.searchsorted(table.offsets, ends, side="left") - 1     # the chunk each token ends in
    same_word = word_of[:-1] == word_of[1:]
    counts = table.counts[word_of[:-1]]
    ranks = tok.mergeable_ranks()
    found = []
    for left, right in pairs:
        hit = same_word & (ids[:-1] == ranks[left]) & (ids[1:] == ranks[right])
        found.append(int(counts[hit].sum()))
    return found


def shown(token: bytes) -> str:
    """A token as text, or as bytes where it is no whole UTF-8 (a piece of a character)."""
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        return repr(token)


def compare(ours: list, theirs: list, reference: bpe_fast.Tokenizer, n_base: int, table, limit: int) -> dict:
    """Where two lists of new merges agree, and why they part at the first ``limit`` places: the
    counts of both merges in the corpus as ``reference`` (the first list's run) has it just
    before (after the first parting, the other run's state is not this one: a count of 0 is a
    pair this run merged earlier)."""
    agree = sum(a == b for a, b in zip(ours, theirs))
    prefix = next((k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    partings = []
    for k in [k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b][:limit]:
        at = reference.truncated(256 + len(reference.special_tokens) + n_base + k)     # the state before merge k
        counts = pair_counts(at, table, [ours[k], theirs[k]])
        partings.append({"merge": k, "first": [shown(x) for x in ours[k]], "first_count": counts[0],
                         "second": [shown(x) for x in theirs[k]], "second_count": counts[1],
                         "tie": counts[0] == counts[1]})
    return {"new_merges": [len(ours), len(theirs)], "same_position": agree, "common_prefix": prefix,
            "same_set": len(set(ours) & set(theirs)), "partings": partings}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-corpus", required=True)
    ap.add_argument("--base", default=None, help="also continue this tokenizer (a named encoding or a file)")
    ap.add_argument("--base-size", type=int, default=8192)
    ap.add_argument("--corpus", required=True, help="the corpus both continue on (every line a document)")
    ap.add_argument("--merges", type=int, default=2000, help="new tokens to learn")
    ap.add_argument("--show", type=int, default=5, help="partings to explain per comparison")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-continue-hf-"))
    table = bpe_fast.count([args.corpus], pattern="gpt2", lines=True, progress="none")
    results: dict = {"base_corpus": args.base_corpus, "base_size": args.base_size, "corpus": args.corpus,
                     "merges": args.merges, "bases": {}}
    makers = [("bpetrainer", bpetrainer_base), ("bpe_fast ids", bpe_fast_ids_base)]
    if args.base:
        makers.append((args.base, lambda *_: given_base(args.base, folder)))
    for name, make in makers:
        base_path = make(args.base_corpus, args.base_size, folder)
        base = bpe_fast.load(base_path)
        n_base = len(base.merges)
        runs, seconds = continue_three_ways(base_path, args.corpus, base.vocab_size + args.merges, folder)
        merges = {run: new_merges(tok, n_base) for run, tok in runs.items()}
        reference = runs["bpe_fast huggingface"]
        results["bases"][name] = {
            "seconds": seconds,
            "vocab_size": {run: tok.vocab_size for run, tok in runs.items()},
            "equal to bpe-continue, ids and all": [run for run, tok in runs.items()
                                                   if run != "bpe-continue" and tok == runs["bpe-continue"]],
            "bpe-continue vs bpe_fast huggingface": compare(merges["bpe_fast huggingface"], merges["bpe-continue"],
                                                            reference, n_base, table, args.show),
            "bpe-continue vs bpe_fast bytes": compare(merges["bpe_fast bytes"], merges["bpe-continue"],
                                                      runs["bpe_fast bytes"], n_base, table, args.show),
        }
        report(name, results["bases"][name])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def report(name: str, result: dict) -> None:
    print(f"\nbase: {name}; seconds {result['seconds']}; vocab sizes {result['vocab_size']}")
    print(f"  equal to bpe-continue's tokenizer (every id, merge and special token): "
          f"{', '.join(result['equal to bpe-continue, ids and all']) or 'none'}")
    for key in ("bpe-continue vs bpe_fast huggingface", "bpe-continue vs bpe_fast bytes"):
        c = result[key]
        print(f"  {key}: {c['same_position']:,} of {c['new_merges'][1]:,} new merges at the same place, "
              f"first {c['common_prefix']:,} identical, {c['same_set']:,} in common as a set")
        for p in c["partings"]:
            print(f"    merge {p['merge']}: bpe_fast {p['first']} ({p['first_count']:,}) vs bpe-continue "
                  f"{p['second']} ({p['second_count']:,}){'  tie' if p['tie'] else ''}")


if __name__ == "__main__":
    main()
