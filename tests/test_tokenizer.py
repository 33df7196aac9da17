"""The Tokenizer (tokenizer.py): encode and decode round-trip and agree with tiktoken given our
ranks; it pickles; and every public name it had before it was split into a core and two mixins
(issue 47: ``dir(Tokenizer)`` at commit a022696) still works, each called here and its answer
checked against what the tokenizer's vocabulary says (the per-format readers and writers that
``save`` and ``load`` replace: tests/formats/test_methods.py)."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import Tokenizer
from bpe_fast.formats import Vocabulary

from .conftest import corpus_params, examples, need, needs_data, small_text
from .formats.test_methods import DEPRECATED


@pytest.fixture(scope="module")
def trained(corpora) -> Tokenizer:
    files = [corpora / "taylorswift.txt", corpora / "multilingual" / "zh.txt", corpora / "multilingual" / "hi.txt"]
    return bpe_fast.train(files, 3000, pattern="cl100k", special_tokens=["<|endoftext|>", "<|pad|>"])


def as_tiktoken(tok: Tokenizer):
    tiktoken = need("tiktoken")
    return tiktoken.Encoding("bpe_fast-test", pat_str=tok.pattern, mergeable_ranks=tok.mergeable_ranks(),
                             special_tokens=tok.special_tokens)


@needs_data
@pytest.mark.parametrize("path", corpus_params())
def test_round_trip_and_tiktoken_agree_on_every_corpus(trained, path):
    text = path.read_bytes().decode("utf-8")
    ids = trained.encode(text)
    assert trained.decode(ids) == text
    assert ids == as_tiktoken(trained).encode_ordinary(text)


@needs_data
@given(text=st.text(max_size=200))
@settings(max_examples=examples(200), deadline=None)
def test_encode_matches_tiktoken_on_any_text(trained, text):
    enc = as_tiktoken(trained)
    ids = trained.encode_ordinary(text)
    assert ids == enc.encode_ordinary(text)
    assert trained.decode(ids) == text


def test_no_pattern_round_trip_and_long_chunk():
    text = "aaaa bbb aaaa\0\r\n😀 " * 200
    tok = bpe_fast.train_from_iterator([text], 270, pattern=None)
    assert tok.vocab_size == 270
    assert tok.decode(tok.encode(text)) == text
    long = "ab" * 200_000       # one 400 KB chunk: must not go quadratic
    assert tok.decode(tok.encode(long)) == long


def test_special_tokens_follow_the_merges_and_obey_allowed_special():
    docs = [f"hello world number {i} of {i * 7919 % 1000}. " for i in range(500)]
    tok = bpe_fast.train_from_iterator(docs, 300, pattern="gpt2", special_tokens=["<|eot|>"])
    assert len(tok.merges) == 299 - 256
    assert tok.special_tokens == {"<|eot|>": 299} and tok.vocab_size == 300
    with pytest.raises(ValueError, match="special token '<\\|eot\\|>'"):
        tok.encode("hi <|eot|>")
    ids = tok.encode("hi <|eot|>", allowed_special="all")
    assert ids[-1] == 299 and tok.decode(ids) == "hi <|eot|>"
    as_text = tok.encode("hi <|eot|>", disallowed_special=())
    assert 299 not in as_text and tok.decode(as_text) == "hi <|eot|>"


def test_mergeable_ranks_rebuild_the_merges():
    tok = bpe_fast.train_from_iterator(["abracadabra " * 20], 262, pattern="gpt2")
    ranks = tok.mergeable_ranks()
    by_id = {i: b for b, i in ranks.items()}
    for i, (left, right) in enumerate(tok.merges.tolist()):
        assert by_id[256 + i] == by_id[left] + by_id[right]


def test_a_tokenizer_pickles_and_encodes_the_same_in_another_process():
    import pickle
    from concurrent.futures import ProcessPoolExecutor
    tok = bpe_fast.train_from_iterator([small_text()], 500, pattern="gpt2", special_tokens=["<|endoftext|>"])
    text = small_text()[:5000] + "<|endoftext|>"
    expected = tok.encode(text, allowed_special="all")
    copy = pickle.loads(pickle.dumps(tok))
    assert copy == tok and copy.encode(text, allowed_special="all") == expected
    with ProcessPoolExecutor(1) as pool:
        assert pool.submit(_encode_all_special, tok, text).result() == expected


def _encode_all_special(tok, text):
    return tok.encode(text, allowed_special="all")


# -- every public name -----------------------------------------------------------------------------

# dir(Tokenizer) at a022696, public names only (the attributes set in __init__ follow).
NAMES_BEFORE = [
    "boundless_eligible", "count_tokens", "count_tokens_batch", "decode", "decode_batch", "decode_bytes",
    "decode_bytes_batch", "decode_single_token_bytes", "decode_tokens_bytes", "decode_with_offsets", "encode",
    "encode_batch", "encode_batch_to_numpy", "encode_ordinary", "encode_ordinary_batch", "encode_single_token",
    "encode_to_numpy", "encode_with_offsets", "eot_token", "evaluate", "events", "from_dict", "from_gpt2",
    "from_huggingface", "from_minbpe", "from_ranks", "from_tiktoken", "from_vocabulary", "get_vocab",
    "get_vocab_size", "id_to_token", "is_boundless", "is_special_token", "load", "max_token_value",
    "mergeable_ranks", "n_base", "n_vocab", "name", "normalize", "pattern", "pattern_name", "runs_cross_line_ends",
    "save", "save_gpt2", "save_huggingface", "save_minbpe", "save_tiktoken", "special_tokens_set",
    "supermerge_ids", "supermerges", "to_dict", "to_tiktoken", "to_transformers", "token_byte_values",
    "token_bytes", "token_to_id", "truncated", "variant", "visualize", "vocab_size", "with_huggingface_ids",
    "without_supermerges",
]
INSTANCE_NAMES = ["merges", "merge_ids", "byte_ids", "special_tokens", "splitter", "training_report"]

TEXT = "hi hi, hé<|endoftext|>"
HI, SPACE_HI, EOT = 256, 257, 258        # the tokens of two merges, and the special token's id


def tiny() -> Tokenizer:
    return Tokenizer([(104, 105), (32, 256)], "gpt2", ["<|endoftext|>"])


def expected_ids(text: str) -> list[int]:
    """The ids of ``TEXT``'s kind of text, worked out by hand: "hi" and " hi" are tokens, the rest bytes."""
    ids: list[int] = []
    for piece in text.split("<|endoftext|>"):
        rest = piece.encode("utf-8")
        while rest:
            for token, i in ((b" hi", SPACE_HI), (b"hi", HI)):
                if rest.startswith(token):
                    ids.append(i)
                    rest = rest[len(token):]
                    break
            else:
                ids.append(rest[0])
                rest = rest[1:]
        ids.append(EOT)
    return ids[:-1]


IDS = expected_ids(TEXT)


def check_every_name(tok: Tokenizer, tmp_path) -> dict[str, object]:
    """Each name called once; returns what each gave (the checks are in the table below)."""
    plain = TEXT.replace("<|endoftext|>", "")
    got: dict[str, object] = {
        "encode": tok.encode(TEXT, allowed_special="all"),
        "encode_ordinary": tok.encode_ordinary(plain),
        "encode_to_numpy": tok.encode_to_numpy(TEXT, allowed_special="all").tolist(),
        "count_tokens": tok.count_tokens(TEXT, allowed_special="all"),
        "encode_batch": tok.encode_batch([TEXT, "hi"], allowed_special="all", workers=2),
        "encode_ordinary_batch": tok.encode_ordinary_batch([plain, "hi"]),
        "encode_batch_to_numpy": [a.tolist() for a in tok.encode_batch_to_numpy([TEXT, "hi"], allowed_special="all")],
        "count_tokens_batch": tok.count_tokens_batch([TEXT, "hi"], allowed_special="all").tolist(),
        "encode_with_offsets": tok.encode_with_offsets("hi hé"),
        "decode": tok.decode(IDS),
        "decode_bytes": tok.decode_bytes(IDS),
        "decode_batch": tok.decode_batch([IDS, [HI]]),
        "decode_bytes_batch": tok.decode_bytes_batch([IDS, [HI]]),
        "decode_single_token_bytes": tok.decode_single_token_bytes(SPACE_HI),
        "decode_tokens_bytes": tok.decode_tokens_bytes([HI, SPACE_HI, EOT]),
        "decode_with_offsets": tok.decode_with_offsets([HI, SPACE_HI, 104, 195, 169]),
        "encode_single_token": tok.encode_single_token(" hi"),
        "token_bytes": tok.token_bytes(SPACE_HI),
        "token_byte_values": len(tok.token_byte_values()),
        "mergeable_ranks": tok.mergeable_ranks()[b" hi"],
        "is_special_token": (tok.is_special_token(EOT), tok.is_special_token(HI)),
        "eot_token": tok.eot_token,
        "special_tokens_set": tok.special_tokens_set,
        "get_vocab": tok.get_vocab()["Ġhi"],
        "get_vocab_size": tok.get_vocab_size(),
        "token_to_id": tok.token_to_id("Ġhi"),
        "id_to_token": tok.id_to_token(SPACE_HI),
        "vocab_size": tok.vocab_size, "n_vocab": tok.n_vocab, "n_base": tok.n_base,
        "max_token_value": tok.max_token_value,
        "pattern": tok.pattern, "pattern_name": tok.pattern_name, "normalize": tok.normalize,
        "name": tok.name,
        "variant": tok.variant, "is_boundless": tok.is_boundless, "runs_cross_line_ends": tok.runs_cross_line_ends,
        "events": tok.events, "supermerges": tok.supermerges.shape, "supermerge_ids": tok.supermerge_ids.shape,
        "boundless_eligible": tok.boundless_eligible,
        "without_supermerges": tok.without_supermerges() == tok,
        "truncated": tok.truncated(258).encode("hi hi"),
        "with_huggingface_ids": tok.with_huggingface_ids().encode("hi hi"),
        "visualize": tok.visualize("hi hi!").plain(),
        "evaluate": tok.evaluate(["hi hi hi"]).rows[0].tokens,
        "to_dict": Tokenizer.from_dict(tok.to_dict()) == tok,
        "from_dict": Tokenizer.from_dict(tok.to_dict()) == tok,
        "from_vocabulary": Tokenizer.from_vocabulary(Vocabulary(tok.merges, tok.pattern, tok.special_tokens)) == tok,
        "from_ranks": Tokenizer.from_ranks(tok.mergeable_ranks(), tok.pattern, tok.special_tokens) == tok,
        "save": [p.rsplit("/", 1)[-1] for p in tok.save(tmp_path / "t.json")],
        "load": Tokenizer.load(tmp_path / "t.json") == tok,
    }
    return got


EXPECTED = {
    "encode": IDS, "encode_to_numpy": IDS, "count_tokens": len(IDS),
    "encode_ordinary": expected_ids(TEXT.replace("<|endoftext|>", "")),
    "encode_batch": [IDS, [HI]], "encode_ordinary_batch": [expected_ids(TEXT.replace("<|endoftext|>", "")), [HI]],
    "encode_batch_to_numpy": [IDS + [HI], [0, len(IDS), len(IDS) + 1]], "count_tokens_batch": [len(IDS), 1],
    "encode_with_offsets": ([HI, 32, 104, 195, 169], [0, 2, 3, 4, 4]),
    "decode": TEXT, "decode_bytes": TEXT.encode("utf-8"), "decode_batch": [TEXT, "hi"],
    "decode_bytes_batch": [TEXT.encode("utf-8"), b"hi"],
    "decode_single_token_bytes": b" hi", "decode_tokens_bytes": [b"hi", b" hi", b"<|endoftext|>"],
    "decode_with_offsets": ("hi hihé", [0, 2, 5, 6, 6]), "encode_single_token": SPACE_HI, "token_bytes": b" hi",
    "token_byte_values": 258, "mergeable_ranks": SPACE_HI, "is_special_token": (True, False), "eot_token": EOT,
    "special_tokens_set": {"<|endoftext|>"}, "get_vocab": SPACE_HI, "get_vocab_size": 259,
    "token_to_id": SPACE_HI, "id_to_token": "Ġhi", "vocab_size": 259, "n_vocab": 259, "n_base": 258,
    "max_token_value": 258, "pattern": bpe_fast.GPT2, "pattern_name": "gpt2", "normalize": None,
    "variant": None, "is_boundless": False, "runs_cross_line_ends": False, "events": None,
    "supermerges": (0, 2), "supermerge_ids": (0,), "boundless_eligible": None, "without_supermerges": True,
    "truncated": [HI, 32, HI], "with_huggingface_ids": [257, 258], "visualize": "hi| hi|!", "evaluate": 3,
    "to_dict": True, "from_dict": True, "from_vocabulary": True, "from_ranks": True, "save": ["t.json"],
    "load": True,
}


def test_the_names_checked_are_the_names_before_and_all_are_still_there():
    assert [n for n in NAMES_BEFORE if not hasattr(Tokenizer, n)] == []
    checked = set(EXPECTED) | set(DEPRECATED) | {"name", "to_tiktoken", "to_transformers"}
    assert checked == set(NAMES_BEFORE)


def test_every_name_gives_what_the_vocabulary_says(tmp_path):
    got = check_every_name(tiny(), tmp_path)
    assert {n: got[n] for n in EXPECTED} == EXPECTED
    assert isinstance(got["name"], str) and got["name"].startswith("bpe_fast_gpt2_259_")
    tok = tiny()
    assert [getattr(tok, n) is not None for n in INSTANCE_NAMES] == [True] * 5 + [False]   # no training report


def test_every_name_works_on_a_tokenizer_with_a_custom_pattern_and_after_pickling(tmp_path):
    """The regex fallback (a pattern no native scanner runs) answers as the native encoder does."""
    custom = Tokenizer([(104, 105), (32, 256)], f"(?:{bpe_fast.GPT2})", ["<|endoftext|>"])
    assert custom.splitter.engine == "regex"
    got = check_every_name(pickle.loads(pickle.dumps(custom)), tmp_path)
    expected = dict(EXPECTED, pattern=custom.pattern, pattern_name="custom")
    assert {n: got[n] for n in EXPECTED} == expected


def test_the_variants_tokenizer_class_still_imports_from_its_old_module_with_a_warning():
    import bpe_fast.tokenizer as module
    with pytest.warns(DeprecationWarning, match="bpe_fast.tokenizer.PickyTokenizer moved to "
                                                "bpe_fast.training.variants.picky"):
        old = getattr(module, "PickyTokenizer")     # noqa: B009  (a name mypy cannot see)
    assert old is bpe_fast.PickyTokenizer
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        getattr(module, "Nothing")    # noqa: B009


def test_a_batch_of_arrays_and_counts_on_either_encoder_is_one_array():
    for pattern in ("gpt2", f"(?:{bpe_fast.GPT2})"):
        tok = Tokenizer([(104, 105), (32, 256)], pattern, ["<|endoftext|>"])
        ids, offsets = tok.encode_batch_to_numpy(["hi", "", " hi hi"], workers=2)
        assert ids.dtype == np.uint32 and offsets.dtype == np.int64
        assert tok.count_tokens_batch(["hi", "", " hi hi"]).dtype == np.int64
