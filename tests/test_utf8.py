"""Python str -> UTF-8 in C (``core/_text.pxd``: ``bpe_to_utf8``, ``bpe_utf8_size``), which the
encoder and the packing of iterator documents use on any str that is not ASCII. With AVX-512
VBMI2 the converter takes 16 code points of any width at a time (a block holding a surrogate one
character at a time; runs of ASCII 64 or 32 at a time in a str of 1 or 2 bytes a character);
elsewhere it takes blocks of 4, 8 or 16 bytes of code points whole when they are all ASCII (or,
for 2-byte code points, all of UTF-8's 2-byte range) and the other blocks one character at a
time. The packer's tests take both routes (``route``). These texts are runs of every width, of
any length, so that every kind of block meets every other at every offset, with surrogates
(pairs and lone ones) across the blocks' edges. Held to Python's own encoder: ``str.encode``,
and for surrogates ``encoding.encoder.utf8`` (tiktoken's fallback)."""
from __future__ import annotations

import functools

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

import bpe_fast
import numpy as np

from bpe_fast.counting._pack import _utf8_wide, pack_documents, utf8_into
from bpe_fast.encoding.encoder import utf8
from .conftest import examples

WIDTHS = {
    "ascii": "ab \n.~\x7f",
    "two": "\x80éÿĀжשّ\u07ff",            # 2 bytes: kind 1 (up to ÿ) and kind 2
    "three": "\u0800中あ\uffff\ue000",     # 3 bytes
    "four": "😀\U0010ffff\U00010000",       # 4 bytes: the str is kind 4
}
SURROGATES = "\ud800\udbff\udc00\udfff"


def runs(alphabets: dict[str, str]):
    run = st.sampled_from(sorted(alphabets.values())).flatmap(lambda a: st.text(alphabet=a, min_size=1, max_size=40))
    return st.lists(run, max_size=12).map("".join)


@pytest.fixture(scope="module", params=[True, False], ids=["wide", "narrow"])
def route(request):
    """Both routes of the packer's converter where this processor has both: 16 code points at a
    time (AVX-512 VBMI2), and the blocks of 4-16 bytes every x86-64 takes. (The encoder's copy
    of the converter takes the first where it can; the code is the same.)"""
    previous = _utf8_wide(request.param)
    try:
        if _utf8_wide() != request.param:
            pytest.skip("this processor has no AVX-512 VBMI2: the wide route is not there to take")
        yield request.param
    finally:
        _utf8_wide(previous)


@functools.cache
def byte_level() -> bpe_fast.Tokenizer:
    """Any byte-level tokenizer: decoding its ids gives back the exact bytes it encoded."""
    return bpe_fast.train_from_iterator(["ab ж中😀 " * 20], 260, progress="none")


@given(text=runs(WIDTHS))
@settings(max_examples=examples(400), deadline=None)
def test_packing_converts_runs_of_every_width_as_str_encode(route, text):
    packed = pack_documents([text, "x" + text])
    assert packed is not None
    data, offsets, _ = packed
    assert data == text.encode() + ("x" + text).encode()
    assert offsets.tolist() == [0, len(text.encode()), len(data)]


@given(text=runs(WIDTHS))
@settings(max_examples=examples(400), deadline=None)
def test_the_converter_writes_nothing_past_the_utf8(route, text):
    """Documents are packed back to back in a buffer of their exact size: a byte written past one
    document's UTF-8 would land past the buffer's end after the last (a block written a word a
    character once did, and corrupted the heap)."""
    size = len(text.encode())
    out = np.full(size + 16, 0xA5, np.uint8)
    assert utf8_into(text, out) == size
    assert out[:size].tobytes() == text.encode()
    assert (out[size:] == 0xA5).all()


@given(text=runs({**WIDTHS, "surrogate": SURROGATES}))
@settings(max_examples=examples(400), deadline=None)
def test_the_encoder_converts_runs_of_every_width_and_surrogates_as_tiktoken_would(text):
    tok = byte_level()
    assert tok.decode_bytes(tok.encode(text)) == utf8(text)


@given(text=runs(WIDTHS), at=st.integers(0, 200))
@settings(max_examples=examples(200), deadline=None)
def test_a_surrogate_anywhere_leaves_the_batch_unpacked(text, at):
    at = min(at, len(text))
    assert pack_documents(["ok", text[:at] + "\udc00" + text[at:]]) is None


@pytest.mark.parametrize("other", ["é", "Ā", "中", "😀"], ids=["latin1", "two-byte", "three-byte", "four-byte"])
def test_long_ascii_runs_in_a_str_of_every_kind(route, other):
    """A str of any kind mostly ASCII (code, markup) has its ASCII runs taken 64 (kind 1), 32
    (kind 2) or 16 (kind 4) code points at a time: runs of every length about those widths, from
    every offset, each between characters of the str's kind."""
    for lead in range(18):
        for run in (15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 129, 200):
            text = other * lead + "".join(chr(33 + (i * 7) % 94) for i in range(run)) + other + "x" * run
            size = len(text.encode())
            out = np.full(size + 16, 0xA5, np.uint8)
            assert utf8_into(text, out) == size
            assert out[:size].tobytes() == text.encode(), (lead, run)
            assert (out[size:] == 0xA5).all()
