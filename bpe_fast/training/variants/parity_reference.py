"""Parity-aware BPE in plain Python: the oracle ``_parity.pyx`` (through parity.learn_parity) is
tested against, written to be obviously right rather than fast. Each step recounts the chosen
language's pairs from scratch, takes its best pair, and replaces it left to right without
overlap in every language's words (and the dev words).

The language of each step is chosen as Hugging Face's ``ParityBpeTrainer`` (tokenizers 0.23,
``parity_trainer.rs``) chooses it, ported line by line here, on its own (parity.py has the fast
path's copy):

* the first ``global_merges`` steps take the best pair of all languages together;
* ratio mode: the language with the least ``(initial length / length) / ratio`` (first on ties);
* dev mode: the language whose dev text is the most tokens (first on ties); neither: whose
  training text is;
* ``variant="window"``: that choice goes through a moving window of the last ``window_size``
  choices, where a language chosen more than ``alpha / languages`` of the time is passed over;
* a language whose best pair occurs fewer than ``min_count`` times is exhausted (never chosen
  again); training ends when every language is.

Ties between pairs of equal count: ``tie_break="bytes"``, the smallest (left id, right id), as
plain BPE (reference.py); ``"huggingface"``, ParityBpeTrainer's: the largest (left, right) by the
tokens' GPT-2 byte-level strings (``max(stats, key=lambda x: (stats[x], x))`` in the paper's code).
"""
from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence

from ...bytelevel import huggingface_byte_order
from ..reference import merge_word

Words = list[tuple[list[int], int]]        # one language's words: (token ids, count)


_RANK = {b: r for r, b in enumerate(huggingface_byte_order())}


def _hf_key(token: bytes) -> tuple[int, ...]:
    """A token's place among GPT-2 byte-level strings (code point order of its characters)."""
    return tuple(_RANK[b] for b in token)


def select_window(values: Sequence[float], chosen: deque, window_size: int, threshold: float) -> int:
    """ParityBpeTrainer's select_language_window: the best value (largest; first on ties) among
    the languages not passed over, passing over any chosen more than ``threshold`` of the window;
    when every one is passed over, the last."""
    mask = [True] * len(values)
    while True:
        # (ParityBpeTrainer starts from index 0 even when it is passed over: when the languages
        # left are all exhausted, -inf, it then picks 0 again and again, and never returns.
        # Starting from the first language not passed over changes nothing else.)
        best_idx, best_val = mask.index(True), float("-inf")
        for i, v in enumerate(values):
            if mask[i] and v > best_val:
                best_idx, best_val = i, v
        if sum(1 for x in chosen if x == best_idx) / window_size <= threshold:
            return best_idx
        mask[best_idx] = False
        if not any(mask):
            return best_idx


def choose_language(step: int, *, global_merges: int, ratio: Sequence[float] | None, initial: Sequence[int],
                    lengths: Sequence[int], exhausted: set[int], variant: str, chosen: deque,
                    window_size: int, alpha: float) -> int:
    """The language of this step (-1: all languages together), as select_next_language."""
    if step < global_merges:
        return -1
    n = len(lengths)
    threshold = alpha / n
    if ratio is not None:
        adjusted = [(float(initial[i]) / float(lengths[i])) / ratio[i] for i in range(n)]
        if variant == "base":
            best_idx, best_val = 0, float("inf")
            for i, v in enumerate(adjusted):
                if i not in exhausted and v < best_val:
                    best_idx, best_val = i, v
            return best_idx
        values = [float("-inf") if i in exhausted else -v for i, v in enumerate(adjusted)]
    else:
        if variant == "base":
            best_i, best_len = 0, None
            for i, v in enumerate(lengths):
                if i not in exhausted and (best_len is None or v > best_len):
                    best_i, best_len = i, v
            return best_i
        values = [float("-inf") if i in exhausted else float(v) for i, v in enumerate(lengths)]
    idx = select_window(values, chosen, window_size, threshold)
    chosen.append(idx)
    if len(chosen) > window_size:
        chosen.popleft()
    return idx


def train_parity_reference(languages: list[Words], n_merges: int, token_bytes: list[bytes], *,
                           dev: list[Words] | None = None, ratio: Sequence[float] | None = None,
                           variant: str = "base", global_merges: int = 0, window_size: int = 100,
                           alpha: float = 2.0, min_count: int = 1, tie_break: str = "bytes",
                           max_token_length: int | None = None) -> list[tuple[int, int]]:
    """The merges learned from each language's words; merge i makes token ``len(token_bytes) + i``.
    ``token_bytes`` gives each id's bytes (the tie-break "huggingface" compares them); ``dev``
    (one list of words per language) drives the choice when given, else ``ratio``."""
    words = [[(list(w), c) for w, c in lang] for lang in languages]
    dev_words = None if dev is None else [[(list(w), c) for w, c in lang] for lang in dev]
    ratio = None if dev is not None else ratio      # (the dev set wins, as in ParityBpeTrainer's binding)
    names = list(token_bytes)
    n = len(words)

    def length(lang: Words) -> int:
        return sum(len(w) * c for w, c in lang)

    initial = [length(lang) for lang in words]
    chosen: deque = deque()
    exhausted: set[int] = set()
    merges: list[tuple[int, int]] = []
    step = 0
    while step < n_merges and len(exhausted) < n:
        lengths = [length(lang) for lang in (dev_words if dev_words is not None else words)]
        lang = choose_language(step, global_merges=global_merges, ratio=ratio, initial=initial, lengths=lengths,
                               exhausted=exhausted, variant=variant, chosen=chosen, window_size=window_size,
                               alpha=alpha)
        stats: Counter = Counter()
        for i in (range(n) if lang == -1 else [lang]):
            for w, c in words[i]:
                for pair in zip(w, w[1:]):
                    if max_token_length is None or len(names[pair[0]]) + len(names[pair[1]]) <= max_token_length:
                        stats[pair] += c
        if tie_break == "huggingface":
            best = max(stats, key=lambda p: (stats[p], _hf_key(names[p[0]]), _hf_key(names[p[1]])), default=None)
        else:
            best = max(stats, key=lambda p: (stats[p], -p[0], -p[1]), default=None)
        if best is None or stats[best] < min_count:
            if lang == -1:
                break
            exhausted.add(lang)
            continue
        new_id = len(names)
        names.append(names[best[0]] + names[best[1]])
        merges.append(best)
        words = [[(merge_word(w, best, new_id), c) for w, c in lang_words] for lang_words in words]
        if dev_words is not None:
            dev_words = [[(merge_word(w, best, new_id), c) for w, c in lang_words] for lang_words in dev_words]
        step += 1
    return merges
