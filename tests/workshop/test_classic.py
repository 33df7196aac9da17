"""The seed notebooks' tokenizers (bpe_fast/workshop/classic.py): words, Sennrich's BPE, minbpe's basic BPE.

The expected numbers come from the original notebooks and papers (the issue quotes them), or
are worked out by hand from the rules; fast paths are held to the slow ones."""
from __future__ import annotations

import random
import sys

import pytest

import bpe_fast
from bpe_fast.workshop import classic
from bpe_fast.workshop.classic import END_OF_WORD, UNK, END_OF_TEXT
from bpe_fast.errors import ArgumentError, ArgumentTypeError, EncodingError, InputError
from bpe_fast.paths import shared_corpus, stdlib_root

PAPER_VOCAB = {"l o w </w>": 5, "l o w e r </w>": 2, "n e w e s t </w>": 6, "w i d e s t </w>": 3}
PAPER_FIRST_MERGES = [("e", "s"), ("es", "t"), ("est", "</w>"), ("l", "o"), ("lo", "w")]


def verdict_text() -> str:
    path = shared_corpus("the-verdict.txt")
    if path is None:
        pytest.skip("the-verdict.txt is not in the shared corpora ($BPE_FAST_DATA or ../shared/corpora)")
    return path.read_text(encoding="utf-8")


def heapq_text() -> str:
    """The standard library's heapq.py, which opens with a long essay: text any Python has."""
    return (stdlib_root() / "heapq.py").read_text(encoding="utf-8")


TEXTS = {"heapq.py": heapq_text, "the-verdict.txt": verdict_text}


# -- 1. words -------------------------------------------------------------------------------

def test_word_tokenizer_gives_the_notebooks_numbers_on_the_verdict():
    tok = classic.WordTokenizer.train(verdict_text())
    assert tok.vocab_size == 1130 + 2
    assert tok.str_to_int[UNK] == 1130 and tok.str_to_int[END_OF_TEXT] == 1131
    text = "Hello, do you like tea? <|endoftext|> In the sunlit terraces of the palace."
    ids = tok.encode(text)
    assert ids == [1130, 5, 355, 1126, 628, 975, 10, 1131, 55, 988, 956, 984, 722, 988, 1130, 7]
    assert tok.decode(ids) == "<|unk|>, do you like tea? <|endoftext|> In the sunlit terraces of the <|unk|>."


def test_word_tokenizer_rules_on_a_small_text():
    tok = classic.WordTokenizer.train('The cat -- "sat"; the dog ran!')
    # sorted unique words and marks (capitals sort first), then the special tokens in order
    expected = ['!', '"', '--', ';', 'The', 'cat', 'dog', 'ran', 'sat', 'the', UNK, END_OF_TEXT]
    assert tok.str_to_int == {w: i for i, w in enumerate(expected)}
    assert tok.encode("the bird sat!") == [9, 10, 8, 0]
    assert tok.decode([4, 5, 8, 0, 11]) == "The cat sat! <|endoftext|>"     # no space before "!"
    assert tok.decode(tok.encode("The cat sat; the dog ran!")) == "The cat sat; the dog ran!"


def test_word_tokenizer_errors_name_what_is_wrong():
    no_unk = classic.WordTokenizer.train("a b c", special_tokens=[END_OF_TEXT])
    with pytest.raises(EncodingError, match="'d' is not in the vocabulary"):
        no_unk.encode("a d")
    with pytest.raises(EncodingError, match="id 99"):
        no_unk.decode([0, 99])
    with pytest.raises(ArgumentTypeError, match="text must be a str"):
        no_unk.encode(b"a b")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="special_tokens"):
        classic.WordTokenizer.train("a b", special_tokens=[UNK, UNK])
    with pytest.raises(ArgumentError, match="vocab"):
        classic.WordTokenizer({"a": 0, "b": 2})


# -- 2. Sennrich et al. (2016) ---------------------------------------------------------------

def test_the_papers_example_learns_the_papers_first_merges():
    assert classic.learn_bpe(PAPER_VOCAB, 10)[:5] == PAPER_FIRST_MERGES
    assert classic.segment("lowest", PAPER_FIRST_MERGES) == ["low", "est</w>"]      # by hand
    assert classic.segment("xyz", PAPER_FIRST_MERGES) == ["x", "y", "z", END_OF_WORD]
    assert classic.segment("", PAPER_FIRST_MERGES) == [END_OF_WORD]


def test_word_vocab_is_characters_and_end_of_word_in_first_seen_order():
    assert classic.word_vocab("low lower low\tnewest\n") == {"l o w </w>": 2, "l o w e r </w>": 1,
                                                              "n e w e s t </w>": 1}


def test_merging_stops_when_no_pair_is_left():
    merges = classic.learn_bpe({"a b </w>": 2}, 10)
    assert merges == [("a", "b"), ("ab", "</w>")]
    assert classic.learn_bpe_fast({"a b </w>": 2}, 10) == merges


def assert_fast_is_slow_with_smallest_ties(vocab, n_merges) -> None:
    slow = classic.learn_bpe(vocab, n_merges, tie_break="smallest")
    assert classic.learn_bpe_fast(vocab, n_merges) == slow
    # The kernel knows symbols by id, the loop by text: they agree because no text is made twice.
    assert len({"".join(pair) for pair in slow}) == len(slow)


def test_fast_path_equals_the_slow_loop_with_the_kernels_tie_rule_on_the_papers_example():
    assert_fast_is_slow_with_smallest_ties(PAPER_VOCAB, 100)
    # the rules differ at the second merge: (es, t) is met first, (t, </w>) has the smaller ids
    assert classic.learn_bpe_fast(PAPER_VOCAB, 2) == [("e", "s"), ("t", "</w>")]


def test_fast_path_equals_the_slow_loop_on_random_vocabularies():
    rng = random.Random(13)
    for _ in range(400):
        alphabet = rng.choice(["a", "ab", "aab", "abc", "abcdefgh"])    # few letters: many ties, repeats
        words = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 9))) for _ in range(rng.randint(1, 9))}
        vocab = {" ".join([*w, END_OF_WORD]): rng.randint(1, 6) for w in words}
        assert_fast_is_slow_with_smallest_ties(vocab, rng.randint(1, 30))


def test_fast_path_takes_far_more_than_256_characters():
    rng = random.Random(7)
    alphabet = [chr(0x4E00 + i) for i in range(600)]         # CJK ideographs: one symbol each
    text = " ".join("".join(rng.choice(alphabet[:rng.choice([20, 600])]) for _ in range(rng.randint(1, 6)))
                    for _ in range(3000))
    vocab = classic.word_vocab(text)
    assert len({c for word in vocab for c in word.split()[:-1]}) > 256
    assert_fast_is_slow_with_smallest_ties(vocab, 60)


def test_fast_path_on_the_verdict_matches_the_slow_loop_and_the_notebooks_rule_until_a_tie():
    vocab = classic.word_vocab(verdict_text())
    assert_fast_is_slow_with_smallest_ties(vocab, 300)
    # The notebook's rule (first seen) and the kernel's (smallest ids) pick the same pair
    # whenever the best count is not tied; at the first tie the kernel's pick is one of the tied.
    notebook = classic.learn_bpe(vocab, 300)
    fast = classic.learn_bpe_fast(vocab, 300)
    state = dict(vocab)
    for k, pair in enumerate(notebook):
        pairs = classic.get_stats(state)
        tied = {p for p, n in pairs.items() if n == max(pairs.values())}
        if len(tied) > 1:
            assert fast[:k] == notebook[:k] and fast[k] in tied
            break
        state = classic.merge_vocab(pair, state)
    else:
        assert fast == notebook


@pytest.mark.parametrize("name", TEXTS)
def test_fast_path_learns_from_a_word_table_counted_by_bpe_fast(name):
    text = TEXTS[name]()
    table = bpe_fast.count_from_iterator([text], pattern=classic.WORD_PATTERN, workers=1)
    assert classic.learn_bpe_fast(table, 200) == classic.learn_bpe_fast(classic.word_vocab(text), 200)


def test_sennrich_errors_name_the_argument():
    with pytest.raises(ArgumentError, match="tie_break"):
        classic.learn_bpe(PAPER_VOCAB, 3, tie_break="last")
    with pytest.raises(ArgumentError, match="n_merges"):
        classic.learn_bpe_fast(PAPER_VOCAB, -1)
    with pytest.raises(ArgumentError, match="ending in '</w>'"):
        classic.learn_bpe({"low": 5}, 3)
    with pytest.raises(ArgumentError, match="one character per symbol"):
        classic.learn_bpe_fast({"lo w </w>": 5}, 3)
    with pytest.raises(ArgumentTypeError, match="vocab must be a dict"):
        classic.learn_bpe(["l o w </w>"], 3)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="no word"):
        classic.learn_bpe_fast({}, 3)


# -- 3. bytes: minbpe's basic tokenizer ------------------------------------------------------

def test_basic_tokenizer_on_minbpes_wikipedia_example():
    # minbpe's tests/test_tokenizer.py: "aaabdaaabac" with 3 merges (Wikipedia's BPE example)
    tok = classic.BasicTokenizer()
    tok.train("aaabdaaabac", 256 + 3)
    assert tok.encode("aaabdaaabac") == [258, 100, 258, 97, 99]
    assert tok.decode(tok.encode("aaabdaaabac")) == "aaabdaaabac"


def test_basic_tokenizer_has_no_unknown_token_and_compresses():
    text = ("the quick brown fox jumps over the lazy dog; " * 20) + "naïve café, 東京, 🙂\n"
    tok = classic.BasicTokenizer()
    tok.train(text, 300)
    assert len(tok.merges) == 44
    unseen = "Zebras ⛵ über ŋ"
    assert tok.decode(tok.encode(unseen)) == unseen                 # every text encodes, whole
    assert tok.decode(tok.encode(text)) == text
    ratio = classic.bytes_per_token(text, tok.encode(text))
    assert ratio == len(text.encode()) / len(tok.encode(text)) and ratio > 3
    assert tok.to_tokenizer().encode_ordinary(text) == tok.encode(text)
    assert tok.to_tokenizer().encode_ordinary(unseen) == tok.encode(unseen)


@pytest.mark.parametrize("name", TEXTS)
def test_basic_tokenizer_agrees_with_bpe_fast_until_the_first_tie(name):
    """bpe_fast with no split is the same algorithm; only ties break differently (minbpe: the
    pair met first; bpe_fast: the smallest pair of ids)."""
    text = TEXTS[name]()[:6000]
    basic = classic.BasicTokenizer()
    basic.train(text, 256 + 120)
    fast = bpe_fast.train_from_iterator([text], 256 + 120, pattern=None, workers=1)
    fast_merges = [tuple(int(i) for i in pair) for pair in fast.merges]
    ids = list(text.encode())
    for k, (pair, new_id) in enumerate(basic.merges.items()):
        counts = classic.get_pair_counts(ids)
        tied = {p for p, n in counts.items() if n == max(counts.values())}
        if len(tied) > 1:
            assert fast_merges[:k] == list(basic.merges)[:k] and fast_merges[k] in tied
            break
        ids = _join(ids, pair, new_id)
    else:
        assert fast_merges == list(basic.merges)


def _join(ids, pair, new_id):
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def test_basic_tokenizer_errors():
    tok = classic.BasicTokenizer()
    with pytest.raises(ArgumentError, match="vocab_size must be at least 256"):
        tok.train("abc", 100)
    with pytest.raises(ArgumentTypeError, match="text must be a str"):
        tok.train(b"abc", 300)  # type: ignore[arg-type]
    with pytest.raises(EncodingError, match="token ids"):
        tok.decode([1000])


# -- sentencepiece beside it -----------------------------------------------------------------

def test_comparison_with_sentencepiece():
    pytest.importorskip("sentencepiece", reason="the comparison needs sentencepiece (pip install 'bpe_fast[workshop]')")
    text = "\n".join(f"the {w} sat on the mat with another {w} and the {w}s ran" for w in
                     ["cat", "dog", "rat", "bat", "hat", "bird", "fish", "frog", "goat", "lamb"] * 8)
    result = classic.compare_with_sentencepiece(text, 330, examples=["the cat sat", "the goats ran"])
    assert set(result.bytes_per_token) == {"minbpe basic", "sentencepiece bpe"}
    basic = classic.BasicTokenizer()
    basic.train(text, 330)
    assert result.bytes_per_token["minbpe basic"] == classic.bytes_per_token(text, basic.encode(text))
    assert all(bpt > 2 for bpt in result.bytes_per_token.values())
    for example, pieces in result.segmentations.items():
        assert "".join(pieces["minbpe basic"]) == example
        assert "".join(pieces["sentencepiece bpe"]).replace("\u2581", " ") == " " + example   # its word marks
    assert "bytes/token" in result.table() and "the goats ran" in result.table()


def test_comparison_says_which_extra_to_install_without_sentencepiece(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentencepiece", None)           # import sentencepiece fails
    with pytest.raises(bpe_fast.MissingExtraError, match=r"bpe_fast\[workshop\]"):
        classic.train_sentencepiece("some text", 300)
