"""The native encoder (encoding/_encode.pyx). Its chunk table (_ChunkCache): chunks of up to 15
bytes as packed keys with up to 4 ids inline, seeded with every token; longer chunks and results
elsewhere. The long-str path: UTF-8 in blocks cut after a newline, lists built from counted ids
(past a million, laid out by bpe_fast). Decoding: every id, and ids that are none.

Every result is checked against tiktoken given the same ranks and pattern (nothing of
bpe_fast's in the oracle), cold (first call: chunks merged and put in the table) and warm (the
same text again: every chunk found there), in every output form.
"""
from __future__ import annotations

import functools
import random
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bpe_fast
from bpe_fast import Tokenizer
from bpe_fast.errors import EncodingError

from ..conftest import need, small_text, vocab_dir, vocab_path


def tiktoken_encoding(*args, **kwargs):
    """tiktoken's Encoding, the oracle (the tests that need it skip without tiktoken)."""
    return need("tiktoken").Encoding(*args, **kwargs)


def oracle(tok: Tokenizer):
    return tiktoken_encoding(f"oracle-{id(tok)}", pat_str=tok.pattern, mergeable_ranks=tok.mergeable_ranks(),
                             special_tokens=tok.special_tokens)


def from_byte_merges(pairs: list[tuple[bytes, bytes]], pattern: str = "cl100k") -> Tokenizer:
    """A tokenizer whose merges are given as byte strings, in rank order (ids 256, 257, ...)."""
    ids = {bytes([b]): b for b in range(256)}
    merges = []
    for left, right in pairs:
        merges.append((ids[left], ids[right]))
        ids[left + right] = 255 + len(merges)
    return Tokenizer(np.array(merges, np.int32), pattern)


@functools.cache
def trained(pattern: str) -> Tokenizer:
    return bpe_fast.train_from_iterator([small_text()], 1200, pattern=pattern, special_tokens=["<|eot|>"])


@functools.cache
def real(name: str) -> Tokenizer:
    return bpe_fast.load(name, path=vocab_path())


def assert_all_forms(tok: Tokenizer, texts: list[str], expected: list[list[int]], workers: int = 2) -> None:
    """Each text alone (list, array, count) and the texts as a batch, twice: cold, then warm."""
    for _ in range(2):
        for text, ids in zip(texts, expected):
            assert tok.encode_ordinary(text) == ids
            assert tok.encode_to_numpy(text, disallowed_special=()).tolist() == ids
            assert tok.count_tokens(text, disallowed_special=()) == len(ids)
        assert tok.encode_ordinary_batch(texts, workers=workers) == expected
        flat, offsets = tok.encode_batch_to_numpy(texts, workers=workers, disallowed_special=())
        assert flat.tolist() == [i for ids in expected for i in ids]
        assert np.diff(offsets).tolist() == [len(ids) for ids in expected]
        assert tok.count_tokens_batch(texts, workers=workers, disallowed_special=()).tolist() == \
            [len(ids) for ids in expected]


def words_of_bytes(sizes: range, count: int, seed: int) -> list[str]:
    """Chunks of the pattern (a space and letters: one chunk each) of exactly these many UTF-8
    bytes, ASCII and not, so that most are no token."""
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz" + "éüñøß" + "жщы" + "中文字"
    out: list[str] = []
    while len(out) < count:
        size = rng.choice(list(sizes))
        word = " "
        while len((word + "x").encode()) <= size:
            word += rng.choice(alphabet)
        while len(word.encode()) < size:
            word += "x"
        if len(word.encode()) == size:
            out.append(word)
    return out


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
def test_chunks_of_15_and_16_bytes_and_around(pattern):
    tok = trained(pattern)
    words = words_of_bytes(range(13, 19), 600, seed=len(pattern))
    sizes = {len(w.encode()) for w in words}
    assert {14, 15, 16, 17} <= sizes
    texts = ["".join(words[i:i + 30]) for i in range(0, len(words), 30)]
    ref = oracle(tok)
    assert_all_forms(tok, texts, [ref.encode_ordinary(t) for t in texts])
    for w in words[:100]:                                   # each chunk alone, through encode_chunk
        assert tok._native.encode_chunk_bytes(w.encode()) == ref.encode_ordinary(w)


def test_results_of_4_and_5_ids_inline_and_spilled():
    """Chunks of at most 15 bytes that are 1 to 12 tokens: up to 4 ids sit in the entry, more
    go to the spill; both found again warm."""
    tok = trained("cl100k")
    ref = oracle(tok)
    rng = random.Random(5)
    by_count: dict[int, list[str]] = {}
    for _ in range(20000):
        word = " " + "".join(rng.choice("qxzjkvwyfbpgmd") for _ in range(rng.randint(1, 14)))
        by_count.setdefault(len(ref.encode_ordinary(word)), []).append(word)
    assert all(len(by_count.get(k, [])) >= 5 for k in (1, 2, 3, 4, 5, 6)), sorted(by_count)
    words = [w for k in sorted(by_count) for w in by_count[k][:40]]
    texts = ["".join(words[i::7]) for i in range(7)]
    assert_all_forms(tok, texts, [ref.encode_ordinary(t) for t in texts])
    stats = tok._native.cache_stats()
    assert stats and max(s["spilled"] for s in stats) > 0


def test_a_chunk_that_is_a_token_is_that_token_even_where_bpe_splits_it():
    """"abcd" is a token, but BPE of its bytes merges "bc" first and stops at [a, bc, d]: the
    whole-token rule (tiktoken's first) must win, in the table's seed (4 bytes) and in the
    table of tokens over 15 bytes (a 16-byte token built the same way); inside longer chunks
    BPE applies."""
    a7 = [(b"a", b"a"), (b"aa", b"aa"), (b"aaaa", b"aa"), (b"aaaaaa", b"a")]
    d7 = [(b"d", b"d"), (b"dd", b"dd"), (b"dddd", b"dd"), (b"dddddd", b"d")]
    parts = [(b"b", b"c"), (b"a", b"b"), (b"c", b"d")] + a7 + d7 + [(b"aaaaaaa", b"b"), (b"c", b"ddddddd")]
    split = from_byte_merges(parts)                     # the same merges but the two last ones
    tok = from_byte_merges(parts + [(b"ab", b"cd"), (b"aaaaaaab", b"cddddddd")])
    ref = oracle(tok)
    short, long = "abcd", "aaaaaaabcddddddd"
    assert len(long) == 16
    bc = split.mergeable_ranks()[b"bc"]
    assert split.encode_ordinary(short) == oracle(split).encode_ordinary(short) == [ord("a"), bc, ord("d")]
    assert len(split.encode_ordinary(long)) == 3           # a7, bc, d7: BPE never makes the token
    for chunk in (short, long):
        assert ref.encode_ordinary(chunk) == [tok.mergeable_ranks()[chunk.encode()]]
    texts = [short, long, f"{short} {long}", short * 3, long * 2, f"x{short}", f"{long}x", " abcd abcd"]
    assert_all_forms(tok, texts, [ref.encode_ordinary(t) for t in texts])
    assert tok.encode_ordinary(short) == [tok.mergeable_ranks()[b"abcd"]]
    assert tok.encode_ordinary(long) == [tok.mergeable_ranks()[long.encode()]]


def test_the_table_starts_afresh_at_its_limit_and_keeps_the_rule():
    """A table held to its smallest limit fills up and starts again from the vocabulary,
    often: the ids stay exact, the whole-token rule included, and the table stays bounded."""
    tok = from_byte_merges([(b"b", b"c"), (b"a", b"b"), (b"c", b"d"), (b"ab", b"cd"), (b"x", b"y")])
    tok._native.set_cache_limit(0)              # as small as the seed allows
    ref = oracle(tok)
    rng = random.Random(7)
    words = [" " + "".join(rng.choice("abcdxyz") for _ in range(rng.randint(1, 15))) for _ in range(6000)]
    texts = ["".join(words[i:i + 200]) + " abcd" for i in range(0, len(words), 200)]
    assert_all_forms(tok, texts, [ref.encode_ordinary(t) for t in texts])
    stats = tok._native.cache_stats()
    assert stats and all(s["bits"] <= s["max_bits"] for s in stats)
    assert max(s["resets"] for s in stats) > 0
    assert tok.encode_ordinary("abcd") == [tok.mergeable_ranks()[b"abcd"]]
    tok._native.clear_caches()
    assert tok._native.cache_stats() == []
    assert tok.encode_ordinary(texts[0]) == ref.encode_ordinary(texts[0])


def test_threads_of_a_batch_each_with_its_own_table():
    """Batches on 1 to 4 threads, texts with chunks of their own and chunks in common, again
    and again (each thread's table grows and is kept between calls): the same ids as one by
    one, and as tiktoken."""
    tok = trained("o200k")
    ref = oracle(tok)
    rng = random.Random(3)
    base = small_text().split()
    texts = []
    for i in range(400):
        words = [rng.choice(base) for _ in range(rng.randint(0, 60))]
        words += [f"w{i}x{rng.randint(0, 10**6)}ü" for _ in range(rng.randint(0, 5))]
        texts.append(" ".join(words) + ("\n" if i % 3 else ""))
    expected = [ref.encode_ordinary(t) for t in texts]
    assert_all_forms(tok, texts, expected, workers=2)
    for workers in (1, 4, 3):
        assert tok.encode_ordinary_batch(texts, workers=workers) == expected
        flat, offsets = tok.encode_batch_to_numpy(texts, workers=workers, disallowed_special=())
        assert flat.tolist() == [i for ids in expected for i in ids]
    assert len(tok._native.cache_stats()) >= 2
    # a batch's workers keep their id buffers for the next batch: a short batch after the long
    # ones, written over what they left, gives its own ids and no others
    flat, offsets = tok.encode_batch_to_numpy(texts[:7], workers=2, disallowed_special=())
    assert flat.tolist() == [i for ids in expected[:7] for i in ids] and offsets[-1] == len(flat)
    assert tok.encode_ordinary_batch(texts[:7], workers=2) == expected[:7]


def long_text(pattern_kind: str, rng: random.Random, chars: int) -> str:
    """Lines whose ends and starts are every case next_cut weighs: a newline after a space,
    after a newline, before a space, before "/", before letters of any script, digits, "'s"."""
    pieces = ["hello", "world", "don't", "Über", "café", "日本語", "Ωμέγα", "123", "4567", "/path", "//x",
              "'s", "  ", " \t", "?!", "😀", "\r", "ab"]
    ends = ["\n", " \n", "\n\n", "\r\n", ".\n", "\n ", "\n/", "\n'", "\t\n", "\n\u3000"]
    out, size = [], 0
    while size < chars:
        piece = rng.choice(pieces) + (rng.choice(ends) if rng.random() < 0.3 else " ")
        out.append(piece)
        size += len(piece)
    text = "".join(out)
    if pattern_kind == "latin1":
        text = text.encode("latin-1", "ignore").decode("latin-1") + "é"
    elif pattern_kind == "ucs2":
        text = text.replace("😀", "€")
    return text


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
@pytest.mark.parametrize("kind", ["latin1", "ucs2", "ucs4"])
def test_long_strs_encoded_in_blocks_as_whole(pattern, kind):
    """Strs of a few hundred thousand characters of each kind (1, 2, 4 bytes per character),
    turned into UTF-8 and encoded in blocks: the same ids as tiktoken on the whole."""
    tok = trained(pattern)
    ref = oracle(tok)
    text = long_text(kind, random.Random(f"{pattern} {kind}"), 300_000)
    widest = max(map(ord, text))
    assert {"latin1": 128 <= widest < 256, "ucs2": 256 <= widest < 65536, "ucs4": widest >= 65536}[kind]
    expected = ref.encode_ordinary(text)
    assert tok.encode_ordinary(text) == expected
    assert tok.encode_to_numpy(text, disallowed_special=()).tolist() == expected
    assert tok.count_tokens(text, disallowed_special=()) == len(expected)
    assert tok.decode(expected) == text


@pytest.mark.parametrize("kind", ["ascii", "ucs2"])
def test_strs_with_more_ids_than_encode_reserves_for(kind):
    """A str's ids are reserved at once for one id per 2 ASCII bytes, or one per character
    elsewhere; bytes no merge joins (control characters, CJK the training never saw) give one
    id per byte, more than that, and the buffer grows mid-str: still tiktoken's ids."""
    tok = trained("cl100k")
    rng = random.Random(kind)
    if kind == "ascii":
        text = "".join(rng.choice("\x01\x02\x03\x04\x05\x06") for _ in range(200_000))
        reserved = len(text) // 2 + 64
    else:
        text = "".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(100_000))
        reserved = len(text) + 64
    expected = oracle(tok).encode_ordinary(text)
    assert len(expected) > reserved
    assert tok.encode_to_numpy(text, disallowed_special=()).tolist() == expected
    assert tok.encode_ordinary(text) == expected


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status are Linux's")
def test_room_for_ids_refused_up_front_is_no_error():
    """encode_str reserves room for a str's ids up front, a generous guess (one id per 2 ASCII
    bytes); with the process's address space too small for the guess but not for the ids, the
    ids grow as they come: the str is encoded, not a MemoryError. (Linux: RLIMIT_AS, VmSize.)"""
    child = textwrap.dedent("""
        import resource
        import bpe_fast
        tok = bpe_fast.train_from_iterator([" hello world" * 200], 300, pattern="cl100k")
        text = " hello" * 20_000_000        # 120 MB: a guess of 60M ids (240 MB), 20M ids (80 MB) used
        assert tok.encode_to_numpy(" hello hello", disallowed_special=()).tolist() == [tok.encode(" hello")[0]] * 2
        size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize"))
        resource.setrlimit(resource.RLIMIT_AS, (size + (180 << 20), resource.getrlimit(resource.RLIMIT_AS)[1]))
        ids = tok.encode_to_numpy(text, disallowed_special=())
        print(len(ids), len(set(ids[:1000].tolist())))
    """)
    run = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["20000000", "1"]


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", "o200k"])
@pytest.mark.parametrize("newline", [".\n/", " \n", "\n\n", "\t\n", "\n ", "\r\n", "\n\u3000", "-\n"])
def test_blocks_are_cut_only_where_a_chunk_ends(pattern, newline):
    """Every newline of a long str in one context: where a chunk may go on past the newline
    ("[\\r\\n/]*" takes the "/"), or where what comes before it would be split otherwise at
    the end of the text ("\\s+(?!\\S)"), no block may end there."""
    # The trained vocabulary, and one where "/ab" and "\n\n" are tokens: a chunk cut in two
    # shows in the ids.
    crafted = from_byte_merges([(b"/", b"a"), (b"/a", b"b"), (b"\n", b"\n"), (b" ", b"\n")], pattern)
    for tok in (trained(pattern), crafted):
        ref = oracle(tok)
        text = ("Ünï" + newline + "abc ") * 30000
        expected = ref.encode_ordinary(text)
        assert tok.encode_ordinary(text) == expected
        assert tok.count_tokens(text, disallowed_special=()) == len(expected)


def test_special_tokens_across_blocks():
    """Allowed special tokens anywhere in a long str; a disallowed one only in a late block
    (the error, and no result); special tokens holding a newline (then no blocks: one could
    straddle a cut)."""
    tok = bpe_fast.train_from_iterator([small_text()], 800, pattern="cl100k", special_tokens=["<|eot|>", "<|pad|>"])
    ref = oracle(tok)
    line = "Ünïcödé line with <|eot|> inside\n"
    text = line * 20000
    expected = ref.encode(text, allowed_special={"<|eot|>"})
    assert tok.encode(text, allowed_special={"<|eot|>"}) == expected
    assert tok.encode_to_numpy(text, allowed_special={"<|eot|>"}).tolist() == expected
    late = text + "tail <|pad|> end"
    for encode in (tok.encode, tok.encode_to_numpy, tok.count_tokens):
        with pytest.raises(EncodingError, match="pad"):
            encode(late, allowed_special={"<|eot|>"})
    assert tok.count_tokens(text, allowed_special={"<|eot|>"}) == len(expected)
    tok = bpe_fast.train_from_iterator([small_text()], 800, pattern="cl100k", special_tokens=["<|eot|>", "<|a\nb|>"])
    ref = oracle(tok)
    with pytest.raises(EncodingError, match="a\\\\nb"):
        tok.encode(text + "tail <|a\nb|> end", allowed_special={"<|eot|>"})
    both = ("x <|a\nb|>y\nz " + line) * 5000
    assert tok.encode(both, allowed_special="all") == ref.encode(both, allowed_special="all")
    assert tok.encode_to_numpy(both, allowed_special="all").tolist() == ref.encode(both, allowed_special="all")


@pytest.mark.skipif(vocab_dir() is None, reason="shared vocabularies not found (BPE_FAST_DATA or ../shared)")
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_real_vocabularies_at_the_edges_of_the_table(name):
    """cl100k and o200k: chunks of 15 and 16 bytes, results of 4 and 5 ids, tokens of exactly
    15 and 16 bytes, and a long multilingual str, cold and warm."""
    tok = real(name)
    ref = tiktoken_encoding(name, pat_str=tok.pattern, mergeable_ranks=tok.mergeable_ranks(),
                            special_tokens=tok.special_tokens)
    ranks = tok.mergeable_ranks()
    rng = random.Random(11)
    tokens_15_16 = [t.decode() for t in ranks if len(t) in (15, 16) and t.isascii() and t.decode().isprintable()]
    words = words_of_bytes(range(13, 19), 4000, seed=1)
    chosen = [w for w in words if len(ref.encode_ordinary(w)) in (4, 5)][:200]
    assert len(chosen) > 40
    texts = ["".join(rng.sample(words, 40)) for _ in range(20)] + ["".join(chosen)]
    texts += ["\n".join(rng.sample(tokens_15_16, min(200, len(tokens_15_16))))]
    texts += [("Grüße aus Köln, 東京 und Москва. " * 3 + "\n") * 6000]
    assert_all_forms(tok, texts, [ref.encode_ordinary(t) for t in texts])


@pytest.mark.skipif(vocab_dir() is None, reason="shared vocabularies not found (BPE_FAST_DATA or ../shared)")
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_chunks_merged_and_chunks_backtracked_either_side_of_the_limits(name):
    """New chunks of up to 64 or 128 bytes (48 without AVX-512) are merged by tiktoken's rule over
    the small tables of _ranks.pxd, longer ones backtracked (_bpe.pxd): chunks of 1
    to 140 bytes, runs of one letter (every pair ties: the leftmost must win) and words of pairs that
    merge late, against tiktoken, alone (encode_chunk) and in texts, cold and warm."""
    tok = real(name)
    ref = tiktoken_encoding(name, pat_str=tok.pattern, mergeable_ranks=tok.mergeable_ranks(),
                            special_tokens=tok.special_tokens)
    words = words_of_bytes(range(2, 141), 6000, seed=48)
    assert {2, 47, 48, 49, 63, 64, 65, 80, 81, 127, 128, 129, 140} <= {len(w.encode()) for w in words}
    words += [" " + letter * k for letter in "aéж中" for k in range(1, 40)]
    rng = random.Random(48)
    late = [t.decode() for t in list(tok.mergeable_ranks())[-3000:] if t.isascii() and t.decode().isalpha()]
    words += [" " + "".join(rng.sample(late, 4)) for _ in range(300)]        # tokens merged last, joined
    for w in words:
        assert tok._native.encode_chunk_bytes(w.encode()) == ref.encode_ordinary(w), w
    texts = ["".join(rng.sample(words, 50)) for _ in range(40)]
    assert_all_forms(tok, texts, [ref.encode_ordinary(t) for t in texts])
    assert tok._native.merge_longest in ((48, 64) if name == "cl100k_base" else (48, 128))
    for method, longest in (("merge", tok._native.merge_longest), ("merge_scalar", 48)):
        short = [w.encode() for w in words if len(w.encode()) <= longest]   # (merge: with merge_vector
        offsets = np.concatenate([[0], np.cumsum([len(w) for w in short])]).astype(np.int64)  # where the
        expected = [ref.encode_ordinary(w.decode()) for w in short]         # CPU has it)
        ids, counts = tok._native.bpe_chunks(np.frombuffer(b"".join(short), np.uint8), offsets, method)
        assert ids.tolist() == [i for e in expected for i in e], method
        assert counts.tolist() == [len(e) for e in expected], method


def test_bpe_chunks_merge_and_backtrack_agree_with_tiktoken():
    """MergeEncoder.bpe_chunks (benchmarks/bench_new_chunks.py) with each method on the same new
    chunks: merged, backtracked and as encoding chooses, all tiktoken's ids for each chunk."""
    tok = trained("cl100k")
    ref = oracle(tok)
    words = [w.encode() for w in words_of_bytes(range(1, 49), 500, seed=7)]
    offsets = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype(np.int64)
    data = np.frombuffer(b"".join(words), np.uint8)
    expected = [ref.encode_ordinary(w.decode()) for w in words]
    for method in ("auto", "merge", "merge_scalar", "backtrack"):
        ids, counts = tok._native.bpe_chunks(data, offsets, method)
        assert counts.tolist() == [len(e) for e in expected], method
        assert ids.tolist() == [i for e in expected for i in e], method


def test_bpe_chunks_refuses_what_it_cannot_do():
    tok = trained("cl100k")
    data = np.frombuffer(b"a" * 60, np.uint8)
    with pytest.raises(ValueError, match="method must be"):
        tok._native.bpe_chunks(data, np.array([0, 3], np.int64), "fast")
    with pytest.raises(ValueError, match="chunk 1 is empty"):
        tok._native.bpe_chunks(data, np.array([0, 3, 3], np.int64))
    with pytest.raises(ValueError, match="over 48 bytes"):
        tok._native.bpe_chunks(data, np.array([0, 60], np.int64), "merge_scalar")
    longest = tok._native.merge_longest
    with pytest.raises(ValueError, match=f"over {longest} bytes"):
        tok._native.bpe_chunks(np.frombuffer(b"a" * 200, np.uint8), np.array([0, longest + 1], np.int64), "merge")
    with pytest.raises(ValueError, match="inside data"):
        tok._native.bpe_chunks(data, np.array([0, 61], np.int64))
    ids, counts = tok._native.bpe_chunks(data, np.array([0, 60], np.int64), "auto")   # backtracked
    assert ids.tolist() == oracle(tok).encode_ordinary("a" * 60)


# -- lists of ids past a million: laid out by bpe_fast, a list like any other ------------------------

def test_a_list_of_a_million_ids_and_more_is_a_list_like_any_other():
    """Past a million ids the list's items are laid out by bpe_fast (on huge pages) and each
    int's references added once: the list equals the array, grows, shrinks and is freed as any
    list, and its ints hold exactly one reference per item, given back when it goes."""
    import gc
    import sys

    tok = bpe_fast.train_from_iterator(["zqxw vy zqxw"] * 50, 262, progress="none")
    text = "zqxw vy " * 600_000
    ids = tok.encode_ordinary(text)
    assert len(ids) > 1 << 20 and ids == tok.encode_to_numpy(text).tolist()
    token = ids[1]
    assert token > 256 and ids.count(token) > 1 << 19   # (an int of its own, not a cached small one)
    held, before = ids.count(token), sys.getrefcount(token)
    ids.append(token)
    ids.extend(ids[:1000])
    del ids[:500]
    assert sys.getrefcount(token) - before == ids.count(token) - held or before > 1 << 30
    del ids
    gc.collect()
    assert before - sys.getrefcount(token) == held or before > 1 << 30    # (immortal: counts never move)


# -- decode: every id, and ids that are none --------------------------------------------------------

def test_decode_of_every_id_and_of_ids_out_of_range():
    tok = bpe_fast.train_from_iterator([small_text()], 600, pattern="cl100k", workers=1,
                                       special_tokens=["<|endoftext|>", "<|pad|>"])
    for i in range(tok.n_base):
        assert tok.decode_bytes([i]) == tok.token_bytes(i) and len(tok.token_bytes(i)) >= 1
    assert tok.decode([tok.special_tokens["<|pad|>"]]) == "<|pad|>"
    for bad in (-1, tok.vocab_size, 2**40):
        with pytest.raises(bpe_fast.EncodingError, match=f"token id {bad} .* is not in the vocabulary"):
            tok.decode([97, bad])


def test_decode_of_an_id_beyond_64_bits():
    with pytest.raises(bpe_fast.EncodingError,
                       match=r"token id 1180591620717411303424 \(position 1\) is not in the vocabulary"):
        Tokenizer([]).decode([97, 2**70])


def test_decode_rejects_ids_out_of_range():
    tok = Tokenizer([], pattern="gpt2")
    with pytest.raises(bpe_fast.EncodingError, match=r"token id 256 \(position 1\) is not in the vocabulary"):
        tok.decode([104, 256])


@pytest.mark.parametrize("ids", [[1.7], [104, 2.0], [np.float64(104.0)], ["104"], [None]])
def test_decode_refuses_ids_that_are_not_integers(ids):
    tok = bpe_fast.Tokenizer([])
    with pytest.raises(bpe_fast.EncodingError, match=r"token ids must be integers; position \d+ holds"):
        tok.decode(ids)


def test_decode_takes_integers_of_every_kind():
    tok = bpe_fast.Tokenizer([])
    text = b"hi!"
    for ids in (list(text), [np.int64(b) for b in text], np.frombuffer(text, np.uint8),
                np.array(list(text), np.uint64), [True, 104]):
        expected = bytes([1, 104]) if ids[0] is True else text
        assert tok.decode_bytes(ids) == expected
    with pytest.raises(bpe_fast.EncodingError, match="token id 18446744073709551615 .position 1"):
        tok.decode_bytes(np.array([104, 2**64 - 1], np.uint64))
