"""One encode path (bpe_fast/encoding/encoder.py): the native encoder and the regex fallback meet
one interface and give the same ids, the same errors and the same batches; a tokenizer's encoder
is built once, on first use, even when threads race for it, and is never pickled."""
from __future__ import annotations

import pickle
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
from bpe_fast import EncodingError, Tokenizer
from bpe_fast.encoding import encoder as encoding
from bpe_fast.encoding.encoder import ChunkEncoder, NativeEncoder, encoder_for

from ..conftest import examples, small_text

SPECIALS = ["<|endoftext|>", "<|pad|>"]


@pytest.fixture(scope="module")
def pair() -> tuple[Tokenizer, Tokenizer]:
    """A trained tokenizer (native: the named pattern), and the same vocabulary with the same
    pattern written so that no native scanner claims it (the regex fallback)."""
    native = bpe_fast.train_from_iterator([small_text()], 600, pattern="cl100k", special_tokens=SPECIALS,
                                          progress="none")
    fallback = Tokenizer(native.merges, f"(?:{native.pattern})", native.special_tokens)
    return native, fallback


def test_each_pattern_gets_its_encoder(pair):
    native, fallback = pair
    assert isinstance(encoder_for(native), NativeEncoder) and isinstance(encoder_for(fallback), ChunkEncoder)
    assert isinstance(encoder_for(Tokenizer([], None)), NativeEncoder)         # no split: native too


texts = st.lists(st.sampled_from(["hi", " there", "<|endoftext|>", "<|pad|>", "123", "\n\n", " ", "é", "😀", "'s",
                                  "\ud800", "ab" * 20]), max_size=12).map("".join) | st.text(max_size=60)


@given(text=texts)
@settings(max_examples=examples(300), deadline=None)
def test_the_fallback_gives_the_native_ids_for_every_output_and_special_rule(pair, text):
    native, fallback = pair
    for tok_args in ({}, {"allowed_special": "all"}, {"allowed_special": {"<|pad|>"}, "disallowed_special": ()},
                     {"disallowed_special": ()}):
        answers: list[object] = []
        for tok in (native, fallback):
            try:
                answers.append((tok.encode(text, **tok_args), tok.encode_to_numpy(text, **tok_args).tolist(),
                                tok.count_tokens(text, **tok_args)))
            except EncodingError as exc:
                answers.append(str(exc))
        assert answers[0] == answers[1], tok_args
    assert native.encode_ordinary(text) == fallback.encode_ordinary(text)


def test_the_fallback_gives_the_native_batches_and_names_the_same_text_at_fault(pair):
    native, fallback = pair
    docs = [small_text()[i:i + 300] for i in range(0, 3000, 300)] + ["", "a<|pad|>b"]
    for tok in (native, fallback):
        assert tok.encode_batch(docs, allowed_special="all", workers=2) == \
            [native.encode(d, allowed_special="all") for d in docs]
        ids, offsets = tok.encode_batch_to_numpy(docs, disallowed_special=(), workers=1)
        assert ids.dtype == np.uint32 and np.diff(offsets).tolist() == [len(native.encode_ordinary(d)) for d in docs]
        assert tok.count_tokens_batch(docs, disallowed_special=()).tolist() == np.diff(offsets).tolist()
        with pytest.raises(EncodingError, match=rf"texts\[{len(docs) - 1}\] contains the special token '<\|pad\|>' "
                                                r"at character 1"):
            tok.encode_batch(docs)
        with pytest.raises(bpe_fast.ArgumentTypeError, match=r"texts\[1\]"):
            tok.encode_batch(["a", b"b"])


def test_supermerges_run_alike_on_both_encoders():
    base = Tokenizer([(104, 105), (32, 256)], "gpt2", supermerges=[(256, 257), (258, 257)])
    fallback = Tokenizer(base.merges, f"(?:{bpe_fast.GPT2})", supermerges=base.supermerges)
    text = "hi hi hi, hi hi\nhi"
    # runs of one-token chunks: [hi, " hi", " hi"] -> 258 -> 259; [" hi", " hi"]: no supermerge joins them
    assert base.encode(text) == fallback.encode(text) == [259, 44, 257, 257, 10, 256]
    assert base.encode_batch([text, "hi hi"]) == fallback.encode_batch([text, "hi hi"])


def test_threads_racing_for_a_new_tokenizers_encoder_wait_for_one_build(monkeypatch, pair):
    native, _ = pair
    tok = Tokenizer(native.merges, native.pattern, native.special_tokens)
    builds = []

    def slow_build(tok):
        builds.append(threading.get_ident())
        time.sleep(0.05)                            # long enough for every thread to arrive meanwhile
        return encoding.build(tok)
    monkeypatch.setattr(Tokenizer, "_make_encoder", slow_build)
    start = threading.Barrier(8)
    results: list[list[int]] = []

    def encode() -> None:
        start.wait()
        results.append(tok.encode("hello world"))
    threads = [threading.Thread(target=encode) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and results == [native.encode("hello world")] * 8


def test_a_pickled_tokenizer_leaves_its_encoder_behind_and_builds_its_own(pair):
    native, fallback = pair
    for tok in (native, fallback):
        built = encoder_for(tok)
        copy = pickle.loads(pickle.dumps(tok))
        assert copy._encoder is None and encoder_for(tok) is built
        assert copy.encode(small_text()[:500]) == tok.encode(small_text()[:500])
        assert encoder_for(copy) is not built


def test_chunks_cut_as_the_splitter_cuts_them():
    for pattern in ("cl100k", r"\w+|\s+", None):
        splitter = Tokenizer([], pattern).splitter
        text = small_text()[:2000] + " tail"
        assert encoding.chunker(splitter)(text) == list(splitter.chunks(text))


@pytest.mark.parametrize("pattern", ["cl100k", r"\w+|\W+"])            # the native encoder and the regex path
def test_str_subclasses_are_text_on_every_encode_path(pattern):
    """tiktoken takes numpy.str_ (a str subclass); so does every encode method."""
    tok = bpe_fast.train_from_iterator(["hi there <s> hi"] * 20, 261, pattern=pattern, special_tokens=["<s>"],
                                       workers=1, progress="none")
    text, ids = np.str_("hi there <s>"), tok.encode("hi there <s>", allowed_special="all")
    assert tok.encode(text, allowed_special="all") == ids and tok.count_tokens(text, allowed_special="all") == len(ids)
    assert tok.encode_to_numpy(text, allowed_special="all").tolist() == ids
    assert tok.encode_ordinary(text) == tok.encode_ordinary(str(text))
    assert tok.encode_batch([text, "hi"], allowed_special="all") == [ids, tok.encode("hi")]
    assert tok.encode_ordinary_batch([text]) == [tok.encode_ordinary(str(text))]
    flat, offsets = tok.encode_batch_to_numpy([text], allowed_special="all")
    assert flat.tolist() == ids and tok.count_tokens_batch([text], allowed_special="all").tolist() == [len(ids)]
