"""Helpers shared by the ladder's tests: a few small texts that stress the rungs, and the check
that a list of merges takes a most frequent pair at every step (ties allowed), whatever the
rung's tie rule."""
from __future__ import annotations

from bpe_fast.training.reference import count_pairs, merge_word

TEXTS = {
    "nul bytes": "a\x00b\x00\x00c a\x00b \x00\x00\x00\x00 x\x00\x00y \x00",
    "long runs": "aaaa aaaaaaa aaa bbbbbbbb ab ab aaaa aaaaa aaaaaaaaaaaaaaa",
    "unicode": "héllo wörld 日本語 日本 naïve café café ✓✓✓",
    "prose": "the cat sat on the mat; the dog ate the hat, then the cat sat on the dog.",
}


def assert_most_frequent_each_time(merges, word_counts, n_merges):
    """Replay the merges: each must be a most frequent pair at its step (ties allowed), and
    fewer than n_merges only if no pair is left."""
    words, counts = [list(w) for w in word_counts], list(word_counts.values())
    for k, pair in enumerate(merges):
        stats = count_pairs(words, counts)
        assert stats.get(pair, 0) == max(stats.values()), f"merge {k} {pair} is not a most frequent pair"
        words = [merge_word(w, pair, 256 + k) for w in words]
    assert len(merges) == n_merges or not count_pairs(words, counts), "stopped early with pairs left"
