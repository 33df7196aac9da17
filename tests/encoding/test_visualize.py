"""The coloured view of a text's tokens (encoding/visualize.py, ``Tokenizer.visualize``): one span
per token whose characters, joined, are the text exactly; HTML escaped, special tokens apart,
ANSI colours on a terminal and ``|`` between tokens with NO_COLOR. Checked against what the ids'
bytes spell, and against an HTML parser of the standard library."""
from __future__ import annotations

import functools
import html
import re
from html.parser import HTMLParser

import pytest

import bpe_fast

from ..conftest import SMALL_CORPUS, corpus_files, read_corpus, vocab_dir

needs_vocabs = pytest.mark.skipif(vocab_dir() is None, reason="shared vocabularies not found (BPE_FAST_DATA or "
                                                             "../shared)")
MULTILINGUAL = [p for p in corpus_files() if p.parent.name == "multilingual"]
MIXED = "héllo wörld 日本語 🎉🎉 <b>&amp;</b> Ελληνικά\n\tमराठी ﷽ 👩‍👩‍👧"


@functools.cache
def ours(name: str) -> bpe_fast.Tokenizer:
    return bpe_fast.load(name, path=vocab_dir())


@functools.cache
def trained() -> bpe_fast.Tokenizer:
    return bpe_fast.train([SMALL_CORPUS], 400, pattern="cl100k", special_tokens=["<|endoftext|>", "<|pad|>"],
                          progress=False)


class Spans(HTMLParser):
    """The token spans of a view's HTML: (attributes, text) each."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.spans: list[tuple[dict, str]] = []
        self._open: dict | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "span":
            self._open = dict(attrs)
            self.spans.append((self._open, ""))

    def handle_endtag(self, tag):
        if tag == "span":
            self._open = None

    def handle_data(self, data):
        if self._open is not None:
            attrs, text = self.spans[-1]
            self.spans[-1] = (attrs, text + data)


def spans_of(view) -> list[tuple[dict, str]]:
    parser = Spans()
    parser.feed(view._repr_html_())
    return parser.spans


def check_view(tok, text: str) -> None:
    """One span per token; up to each token, the spans spell what the ids' bytes so far spell
    as whole characters (a character split over tokens shows in the span that completes it)."""
    view = tok.visualize(text)
    ids = tok.encode(text, allowed_special="all")
    assert view.ids == ids and view.text == text
    spans = spans_of(view)
    assert len(spans) == len(ids) and "".join(t for _, t in spans) == text
    done = b""
    shown = ""
    for token, (attrs, piece) in zip(ids, spans):
        done += tok.decode_single_token_bytes(token)
        shown += piece
        assert shown == done.decode("utf-8", "ignore")
        assert attrs["title"].startswith(f"{token}: ")
    assert re.sub(r"\x1b\[[0-9;]*m", "", view.ansi()) == text
    assert view.plain("") == text


@needs_vocabs
@pytest.mark.parametrize("path", MULTILINGUAL[::4], ids=[p.name for p in MULTILINGUAL[::4]])
def test_the_view_spells_the_text_token_by_token(path):
    check_view(ours("cl100k_base"), read_corpus(path)[:3000] + MIXED)


def test_the_view_splits_characters_escapes_html_and_shows_special_tokens_apart(monkeypatch):
    tok = trained()
    text = "a <b>&amp;</b> 日本 \"q\" 🎉\nline two<|endoftext|> end"
    check_view(tok, text)
    view = tok.visualize(text)
    markup = view._repr_html_()
    raw = re.findall(r"<span [^>]*>([^<]*)</span>", markup)         # nothing unescaped inside a span
    assert len(raw) == len(view) and "".join(map(html.unescape, raw)) == text
    assert all(re.fullmatch(r"(?:[^&]|&(?:amp|lt|gt|quot|#x27);)*", piece) for piece in raw)
    assert any(not piece for _, piece in spans_of(view))          # a token inside 日 or 🎉: an empty span
    special = [(attrs, piece) for attrs, piece in spans_of(view) if "special" in attrs["class"]]
    assert special == [({"class": "token special", "style": special[0][0]["style"],
                         "title": f"{tok.special_tokens['<|endoftext|>']}: <|endoftext|> (special)"}, "<|endoftext|>")]
    assert len({attrs["style"] for attrs, _ in spans_of(view)}) > 2     # backgrounds alternate
    coloured = re.findall(r"(\x1b\[[0-9;]*m)([^\x1b]*)\x1b\[0m", view.ansi())
    special_codes = {code for code, piece in coloured if piece == "<|endoftext|>"}
    ordinary_codes = {code for code, piece in coloured if piece != "<|endoftext|>"}
    assert len(special_codes) == 1 and not special_codes & ordinary_codes
    assert all("\n" not in piece for _, piece in coloured)              # no colour runs past a line end
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert str(view) == view.ansi()
    monkeypatch.setenv("NO_COLOR", "1")
    assert str(view) == view.plain() and "\x1b" not in repr(view) and "tokens" in repr(view)
    with pytest.raises(bpe_fast.EncodingError):
        tok.visualize(text, allowed_special=set())
