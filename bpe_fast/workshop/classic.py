"""The tokenizers bpe_fast grew out of, from words to bytes: the workshop's first chapter.

1. **Words.** ``WordTokenizer``: a vocabulary of the words of a text (split on punctuation and
   whitespace), with ``<|unk|>`` for every word it has not seen and ``<|endoftext|>`` between
   documents -- the word-level tokenizer of *Build a Large Language Model (From Scratch)*, ch. 2.
2. **Subwords.** Sennrich, Haddow and Birch (2016), "Neural Machine Translation of Rare Words with
   Subword Units": BPE on words whose characters are symbols, with ``</w>`` ending each word.
   ``learn_bpe`` is the paper's loop (ties go to the pair seen first); ``learn_bpe_fast`` learns
   from a word table with bpe_fast's kernel, characters as symbols (ties go to the smallest pair
   of symbol ids); ``segment`` applies the merges to any word.
3. **Bytes.** ``BasicTokenizer``: minbpe's byte-level BPE on the raw text with no split: no
   unknown token, ever. ``bytes_per_token`` measures compression, and ``compare_with_sentencepiece``
   sets it beside sentencepiece's BPE trained on the same text.

Each part is written to be read next to the notebook that uses it
(``notebooks/profiling_workshop.ipynb``); the fast paths are tested against the slow ones.
"""
from __future__ import annotations

import io
import re
from collections import Counter
from dataclasses import dataclass, field
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import regex

from ..training import _kernel
from ..errors import ArgumentError, ArgumentTypeError, EncodingError, InputError, require
from ..tokenizer import Tokenizer
from ..counting.wordtable import WordTable


def _check_text(text, name: str = "text") -> str:
    if not isinstance(text, str):
        raise ArgumentTypeError(f"{name} must be a str, not {type(text).__name__}")
    return text


def _check_count(value, name: str, least: int) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be an integer, got {value!r}")
    if value < least:
        raise ArgumentError(f"{name} must be at least {least}, got {value}")
    return int(value)


# ---------------------------------------------------------------------------------------------
# 1. Words, with an unknown token
# ---------------------------------------------------------------------------------------------

UNK = "<|unk|>"
END_OF_TEXT = "<|endoftext|>"
WORD_SPLIT = r'([,.:;?_!"()\']|--|\s)'          # the notebook's split: punctuation, "--", whitespace
SPACE_BEFORE_PUNCTUATION = r'\s+([,.:;?!"()\'])'  # decode joins with spaces, then removes these


def split_words(text: str) -> list[str]:
    """The words and punctuation marks of ``text``, whitespace dropped."""
    return [item.strip() for item in re.split(WORD_SPLIT, _check_text(text)) if item.strip()]


class WordTokenizer:
    """One id per word: the words of the training text in sorted order, then the special tokens.

    A word the vocabulary does not hold encodes to ``<|unk|>`` (when it is in the vocabulary; an
    ``EncodingError`` otherwise), so decoding loses it: this is the problem subwords solve."""

    def __init__(self, vocab: Mapping[str, int]):
        ids = list(vocab.values())
        if sorted(ids) != list(range(len(ids))):
            raise ArgumentError("vocab must number its tokens 0, 1, 2, ... with no gap or repeat")
        self.str_to_int = dict(vocab)
        self.int_to_str = {i: s for s, i in vocab.items()}

    @classmethod
    def train(cls, text: str, special_tokens: Sequence[str] = (UNK, END_OF_TEXT)) -> WordTokenizer:
        specials = list(special_tokens)
        if isinstance(special_tokens, str) or len(set(specials)) != len(specials):
            raise ArgumentError(f"special_tokens must be a list of distinct strings, got {special_tokens!r}")
        words = sorted(set(split_words(text)) - set(specials))
        return cls({token: i for i, token in enumerate(words + specials)})

    @property
    def vocab_size(self) -> int:
        return len(self.str_to_int)

    def encode(self, text: str) -> list[int]:
        ids = []
        for word in split_words(text):
            if word not in self.str_to_int:
                if UNK not in self.str_to_int:
                    raise EncodingError(f"{word!r} is not in the vocabulary, which has no {UNK} token")
                word = UNK
            ids.append(self.str_to_int[word])
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        words = []
        for i in ids:
            if i not in self.int_to_str:
                raise EncodingError(f"id {i!r} is not in the vocabulary (0..{self.vocab_size - 1})")
            words.append(self.int_to_str[i])
        return re.sub(SPACE_BEFORE_PUNCTUATION, r"\1", " ".join(words))


# ---------------------------------------------------------------------------------------------
# 2. Sennrich et al. (2016): BPE on the characters of words, with an end-of-word marker
# ---------------------------------------------------------------------------------------------

END_OF_WORD = "</w>"
WORD_PATTERN = r"\S+"          # a word is a run of non-space characters (as subword-nmt reads text)


def word_vocab(text: str) -> dict[str, int]:
    """``{'l o w </w>': 5, ...}``: each word of ``text`` as its characters and ``</w>``,
    separated by spaces, with its count; words in the order they first occur."""
    counts = Counter(regex.findall(WORD_PATTERN, _check_text(text)))
    return {" ".join([*word, END_OF_WORD]): n for word, n in counts.items()}


def get_stats(vocab: Mapping[str, int]) -> dict[tuple[str, str], int]:
    """How often each pair of adjacent symbols occurs, in the order the pairs are first met."""
    pairs: dict[tuple[str, str], int] = {}
    for word, freq in vocab.items():
        symbols = word.split()
        for pair in zip(symbols, symbols[1:]):
            pairs[pair] = pairs.get(pair, 0) + freq
    return pairs


def merge_vocab(pair: tuple[str, str], vocab: Mapping[str, int]) -> dict[str, int]:
    """Every occurrence of ``pair`` (whole symbols, left to right) joined into one symbol."""
    bigram = re.compile(r"(?<!\S)" + re.escape(" ".join(pair)) + r"(?!\S)")
    return {bigram.sub("".join(pair), word): freq for word, freq in vocab.items()}


TIE_BREAKS = ("first", "smallest")


def learn_bpe(vocab: Mapping[str, int], n_merges: int, tie_break: str = "first") -> list[tuple[str, str]]:
    """The paper's loop: count the pairs, merge the most frequent, ``n_merges`` times (fewer
    when no pair is left). Returns the merges in order, as pairs of symbols.

    Ties: ``"first"`` takes the pair met first (``max`` over a dict keeps the first of equal
    counts), as the paper's code and the notebook do. ``"smallest"`` takes the smallest pair of
    symbol ids as ``learn_bpe_fast`` numbers them (``symbol_ids``), the rule of bpe_fast's kernel.
    """
    _check_vocab(vocab)
    n_merges = _check_count(n_merges, "n_merges", 0)
    if tie_break not in TIE_BREAKS:
        raise ArgumentError(f"tie_break must be one of {TIE_BREAKS}, got {tie_break!r}")
    ids = symbol_ids(word.split()[:-1] for word in vocab)
    merges = []
    for _ in range(n_merges):
        pairs = get_stats(vocab)
        if not pairs:
            break
        if tie_break == "first":
            best = max(pairs, key=pairs.__getitem__)
        else:
            best = min(pairs, key=lambda p: (-pairs[p], ids[p[0]], ids[p[1]]))
        ids["".join(best)] = len(ids)
        vocab = merge_vocab(best, vocab)
        merges.append(best)
    return merges


def _check_vocab(vocab) -> None:
    if not isinstance(vocab, Mapping):
        raise ArgumentTypeError(f"vocab must be a dict {{'l o w {END_OF_WORD}': count}}, not {type(vocab).__name__}")
    for word, freq in vocab.items():
        if not isinstance(word, str) or not word.endswith(" " + END_OF_WORD) \
                or not isinstance(freq, (int, np.integer)) or freq < 1:
            raise ArgumentError(f"vocab entry {word!r}: {freq!r} is not a word's symbols separated by spaces "
                                f"and ending in {END_OF_WORD!r}, with a positive count")


def symbol_ids(words: Iterable[Iterable[str]]) -> dict[str, int]:
    """The ids ``learn_bpe_fast`` gives the symbols of ``words`` (each a string of characters,
    or a list of symbols): in code point order, then ``</w>``. The kernel numbers each merge's
    symbol after them, in merge order."""
    alphabet = sorted({symbol for word in words for symbol in word} - {END_OF_WORD})
    return {symbol: i for i, symbol in enumerate(alphabet + [END_OF_WORD])}


def learn_bpe_fast(words: WordTable | Mapping[str, int], n_merges: int) -> list[tuple[str, str]]:
    """``learn_bpe(vocab, n_merges, tie_break="smallest")``, learned by bpe_fast's kernel.

    ``words`` is a word table (``bpe_fast.count(files, pattern=WORD_PATTERN)`` counts one) or a
    vocab as ``learn_bpe`` takes it, each word its characters: ``{'l o w </w>': 5}``. Every
    character is one symbol (any number of distinct characters, not just 256): the kernel is
    given the words already cut into symbols -- its continued-training input -- each symbol one
    slot long, numbered by ``symbol_ids``; new symbols are numbered after them in merge order,
    and ties go to the smallest pair of ids. The kernel knows symbols by id, the loop by their
    text, so they agree as long as no text is made by two different merges ("ab"+"c" and
    "a"+"bc"); merging from characters has not been seen to do that, and the tests check both
    things on real text and on random vocabularies. With the notebook's rule (``"first"``) the
    two agree until the first tie.
    """
    counts = _word_counts(words)
    n_merges = _check_count(n_merges, "n_merges", 0)
    if not counts:
        raise InputError("words holds no word to learn from")
    ids = symbol_ids(counts)
    start = np.fromiter((ids[s] for word in counts for s in (*word, END_OF_WORD)), dtype=np.int32)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(word) + 1 for word in counts])
    trainer = _kernel.Trainer(np.zeros(len(start), dtype=np.uint8),     # the layout's length; ids are in start
                              offsets, np.fromiter(counts.values(), dtype=np.int64, count=len(counts)),
                              n_merges, start=start, token_lengths=np.ones(len(ids), dtype=np.int32),
                              first_id=len(ids))
    names = list(ids)                          # id -> symbol; each merge appends its symbol
    merges = []
    for left, right in trainer.learn():
        merges.append((names[left], names[right]))
        names.append(names[left] + names[right])
    return merges


def _word_counts(words) -> dict[str, int]:
    """``{word: count}`` from a word table or from a ``learn_bpe`` vocab of characters."""
    if isinstance(words, WordTable):
        # bpe_fast keeps the text a pattern skips as chunks of its own (the spaces between
        # WORD_PATTERN's words); Sennrich's BPE learns from the words alone, so they stay out.
        try:
            chunks = ((words.word(i).decode("utf-8"), int(words.counts[i])) for i in range(len(words)))
            return {word: n for word, n in chunks if not word.isspace()}
        except UnicodeDecodeError:
            raise InputError("words: the word table holds chunks that are not UTF-8 text") from None
    _check_vocab(words)
    counts: dict[str, int] = {}
    for word, freq in words.items():
        symbols = word.split()[:-1]
        if any(len(s) != 1 for s in symbols) or END_OF_WORD in symbols:
            raise ArgumentError(f"words: {word!r} is not one character per symbol; learn_bpe_fast starts "
                                f"from characters ({' '.join([*'low', END_OF_WORD])!r})")
        counts["".join(symbols)] = counts.get("".join(symbols), 0) + int(freq)
    return counts


def segment(word: str, merges: Sequence[tuple[str, str]]) -> list[str]:
    """A word's subwords: its characters and ``</w>``, joined by the learned merges, the
    earliest-learned pair first (as the merges were applied in training)."""
    ranks: dict[tuple[str, ...], int] = {}
    for rank, pair in enumerate(merges):
        ranks.setdefault(tuple(pair), rank)         # pairs read from JSON are lists
    symbols = [*_check_text(word, "word"), END_OF_WORD]
    while len(symbols) > 1:
        best = min(zip(symbols, symbols[1:]), key=lambda p: ranks.get(p, len(ranks)))
        if best not in ranks:
            break
        symbols = _join_pair(symbols, best)
    return symbols


def _join_pair(symbols: list, pair: tuple, joined=None) -> list:
    """``symbols`` with each occurrence of ``pair`` (left to right) replaced by ``joined``
    (default: the two strings concatenated)."""
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(pair[0] + pair[1] if joined is None else joined)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


# ---------------------------------------------------------------------------------------------
# 3. Bytes: minbpe's basic tokenizer, and sentencepiece's BPE beside it
# ---------------------------------------------------------------------------------------------

def get_pair_counts(ids: Sequence[int]) -> dict[tuple[int, int], int]:
    """How often each adjacent pair of ids occurs, in the order first met (minbpe's get_stats)."""
    counts: dict[tuple[int, int], int] = {}
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


class BasicTokenizer:
    """minbpe's BasicTokenizer (karpathy/minbpe, basic.py): byte-level BPE on the raw text, no
    split. The 256 byte values are the first tokens, so any text encodes -- no unknown token.
    Ties go to the pair met first in the text, as minbpe's ``max`` over a dict does."""

    def __init__(self):
        self.merges: dict[tuple[int, int], int] = {}           # (id, id) -> new id, in merge order
        self.vocab: dict[int, bytes] = {i: bytes([i]) for i in range(256)}

    def train(self, text: str, vocab_size: int, verbose: bool = False) -> None:
        """Learn ``vocab_size - 256`` merges from ``text`` (fewer if the text runs out of pairs)."""
        n_merges = _check_count(vocab_size, "vocab_size", 256) - 256
        ids = list(_check_text(text).encode("utf-8"))
        self.merges, self.vocab = {}, {i: bytes([i]) for i in range(256)}     # training starts afresh
        for i in range(n_merges):
            counts = get_pair_counts(ids)
            if not counts:
                break
            pair = max(counts, key=counts.__getitem__)
            new_id = 256 + i
            ids = _join_pair(ids, pair, new_id)
            self.merges[pair] = new_id
            self.vocab[new_id] = self.vocab[pair[0]] + self.vocab[pair[1]]
            if verbose:
                print(f"merge {i + 1}/{n_merges}: {pair} -> {new_id} ({self.vocab[new_id]!r}) "
                      f"had {counts[pair]} occurrences")

    def encode(self, text: str) -> list[int]:
        """The text's bytes, merged: always the present pair that was learned first."""
        ids = list(_check_text(text).encode("utf-8"))
        while len(ids) >= 2:
            counts = get_pair_counts(ids)
            pair = min(counts, key=lambda p: self.merges.get(p, float("inf")))
            if pair not in self.merges:
                break
            ids = _join_pair(ids, pair, self.merges[pair])
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        try:
            data = b"".join(self.vocab[i] for i in ids)
        except (KeyError, TypeError):
            raise EncodingError(f"ids must be token ids 0..{len(self.vocab) - 1}") from None
        return data.decode("utf-8", errors="replace")

    def to_tokenizer(self) -> Tokenizer:
        """The same merges as a bpe_fast ``Tokenizer`` (no split): same ids, native encoding."""
        return Tokenizer(np.array(list(self.merges), dtype=np.int32).reshape(-1, 2), pattern=None)


def bytes_per_token(text: str, ids: Sequence) -> float:
    """Compression: UTF-8 bytes of ``text`` per token of its encoding ``ids``."""
    return len(_check_text(text).encode("utf-8")) / max(len(ids), 1)


def _sentencepiece():
    return require("sentencepiece", "workshop", "the sentencepiece comparison")


# Llama 2's training options, as Karpathy's tokenizer lecture uses them: BPE, no normalization,
# unknown characters fall back to their bytes (so no text is lost, as with byte-level BPE); but
# lines up to 64 KiB (Llama's 4192 bytes would skip a long paragraph), one thread, no log.
SENTENCEPIECE_OPTIONS = dict(
    model_type="bpe", normalization_rule_name="identity", remove_extra_whitespaces=False,
    byte_fallback=True, character_coverage=0.99995, split_digits=True, allow_whitespace_only_pieces=True,
    add_dummy_prefix=True, max_sentence_length=1 << 16, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
    num_threads=1, minloglevel=2,
)


def train_sentencepiece(text: str, vocab_size: int, **options):
    """A sentencepiece BPE model trained on ``text`` (each line a sentence), in memory; a
    ``SentencePieceProcessor``. ``options`` override ``SENTENCEPIECE_OPTIONS``."""
    spm = _sentencepiece()
    lines = [line for line in _check_text(text).splitlines() if line.strip()]
    if not lines:
        raise InputError("text holds no line to train sentencepiece on")
    model = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model,
                                       vocab_size=_check_count(vocab_size, "vocab_size", 1),
                                       **(SENTENCEPIECE_OPTIONS | options))
    except RuntimeError as exc:                 # e.g. "Vocabulary size is too high"
        raise ArgumentError(f"sentencepiece cannot train vocab_size={vocab_size} on this text: {exc}") from None
    return spm.SentencePieceProcessor(model_proto=model.getvalue())


def _piece(token: bytes) -> str:
    """A token as text; one that is not whole characters as its bytes, as sentencepiece shows them."""
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(f"<0x{b:02X}>" for b in token)


@dataclass
class Comparison:
    """Two tokenizers trained on the same text: bytes per token on a text, and how each cuts a
    few examples (a piece that is part of a character shows as its bytes: ``<0xC3>``)."""
    vocab_size: int
    bytes_per_token: dict[str, float] = field(default_factory=dict)
    segmentations: dict[str, dict[str, list[str]]] = field(default_factory=dict)   # example -> name -> pieces

    def table(self) -> str:
        lines = [f"vocab_size {self.vocab_size}: " + ", ".join(f"{name} {bpt:.2f} bytes/token"
                                                              for name, bpt in self.bytes_per_token.items())]
        for example, by_name in self.segmentations.items():
            lines.append(f"\n{example!r}")
            lines += [f"  {name:<18} {len(pieces):>3} tokens  {'|'.join(pieces)}" for name, pieces in by_name.items()]
        return "\n".join(lines)


def compare_with_sentencepiece(text: str, vocab_size: int, examples: Sequence[str] = (),
                               basic: BasicTokenizer | None = None, eval_text: str | None = None) -> Comparison:
    """Train minbpe's basic tokenizer (or take ``basic``, trained already) and sentencepiece's
    BPE on ``text`` at the same ``vocab_size``; measure bytes per token on ``eval_text``
    (default: ``text``) and cut each example with both."""
    if basic is None:
        basic = BasicTokenizer()
        basic.train(text, vocab_size)
    sp = train_sentencepiece(text, vocab_size)
    fast = basic.to_tokenizer()
    eval_text = text if eval_text is None else _check_text(eval_text, "eval_text")
    result = Comparison(vocab_size)
    result.bytes_per_token["minbpe basic"] = bytes_per_token(eval_text, fast.encode_ordinary(eval_text))
    result.bytes_per_token["sentencepiece bpe"] = bytes_per_token(eval_text, sp.encode(eval_text))
    for example in examples:
        result.segmentations[_check_text(example, "example")] = {
            "minbpe basic": [_piece(basic.vocab[i]) for i in fast.encode_ordinary(example)],
            "sentencepiece bpe": sp.encode(example, out_type=str),
        }
    return result
