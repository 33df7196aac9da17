"""A coloured view of a text's tokens: ``Tokenizer.visualize(text)`` returns a ``TokenView``.

In a notebook it shows as HTML (``_repr_html_``): one ``<span>`` per token, backgrounds
alternating, the token's id and bytes in its ``title`` (shown on hover), the text HTML-escaped,
special tokens dark and bold. Printed (``str``) it is the text with ANSI background colours
(plain text with ``|`` between tokens when ``NO_COLOR`` is set: ``view.plain()``).

Which characters a token's span shows: those from its offset (tiktoken's, tiktoken_surface.py)
to the next token's. So a character whose bytes several tokens share (a token boundary inside
its UTF-8) is shown once, in the span of the token that completes it; the tokens before it that
hold only part of it get an empty span (in HTML a thin mark, with its title). The spans, joined,
are the text exactly.
"""
from __future__ import annotations

import html
import os
from typing import NamedTuple


# Backgrounds for alternating tokens, as the Tiktokenizer page shows them (HTML, then 256-colour ANSI).
HTML_COLOURS = ["#cfe2ff", "#fff3bf", "#d3f9d8", "#ffd8e1", "#e5dbff"]
ANSI_COLOURS = ["\x1b[30;48;5;153m", "\x1b[30;48;5;229m", "\x1b[30;48;5;158m", "\x1b[30;48;5;217m",
                "\x1b[30;48;5;183m"]
ANSI_SPECIAL = "\x1b[1;97;45m"       # bold white on magenta: no ordinary token looks like it
RESET = "\x1b[0m"
SPECIAL_STYLE = "background:#343a40;color:#fff;font-weight:bold;border-radius:3px"
PARTIAL_STYLE = "border-left:2px solid #868e96"      # a token that completes no character


class TokenSpan(NamedTuple):
    """One token: its id, its bytes, the characters its span shows, and whether it is special."""
    id: int
    token: bytes
    text: str
    special: bool

    @property
    def title(self) -> str:
        """What hovering shows: the id and the bytes (a special token by its name)."""
        return f"{self.id}: {self.token.decode('utf-8')} (special)" if self.special else f"{self.id}: {self.token!r}"


class TokenView:
    """The tokens of one text, to look at: ``spans`` (one ``TokenSpan`` per token, in order),
    ``ids``, ``text``; shown as HTML in a notebook and in colour when printed."""

    def __init__(self, spans: list[TokenSpan], name: str):
        self.spans = spans
        self.name = name

    @property
    def ids(self) -> list[int]:
        return [s.id for s in self.spans]

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.spans)

    def __len__(self) -> int:
        return len(self.spans)

    def __iter__(self):
        return iter(self.spans)

    def _summary(self) -> str:
        return f"{len(self.spans):,} tokens, {len(self.text):,} characters ({self.name})"

    def _repr_html_(self) -> str:
        parts = []
        for k, span in enumerate(self.spans):
            style = (SPECIAL_STYLE if span.special else PARTIAL_STYLE if not span.text
                     else f"background:{HTML_COLOURS[k % len(HTML_COLOURS)]}")
            kind = "token special" if span.special else "token"
            parts.append(f'<span class="{kind}" style="{style}" title="{html.escape(span.title)}">'
                         f"{html.escape(span.text)}</span>")
        return ('<div class="bpe-fast-tokens" style="font-family:monospace;white-space:pre-wrap;'
                f'line-height:1.7">{"".join(parts)}</div>'
                f'<div style="color:#868e96;font-size:smaller">{html.escape(self._summary())}</div>')

    def ansi(self) -> str:
        """The text, each token's characters on its background colour (each line coloured on its
        own, so that no colour runs on past a line end)."""
        out = []
        for k, span in enumerate(self.spans):
            if not span.text:
                continue
            colour = ANSI_SPECIAL if span.special else ANSI_COLOURS[k % len(ANSI_COLOURS)]
            out.append("\n".join(f"{colour}{line}{RESET}" if line else "" for line in span.text.split("\n")))
        return "".join(out)

    def plain(self, sep: str = "|") -> str:
        """The text with ``sep`` between tokens (no colours)."""
        return sep.join(s.text for s in self.spans if s.text)

    def __str__(self) -> str:
        return self.plain() if os.environ.get("NO_COLOR") else self.ansi()

    def __repr__(self) -> str:
        shown = "|".join(repr(s.text)[1:-1] for s in self.spans[:8])
        more = "|..." if len(self.spans) > 8 else ""
        return f"<TokenView {self._summary()}: {shown}{more}; print() it for colours>"


def token_view(tok, text: str, allowed_special, disallowed_special) -> TokenView:
    """The view of ``text``'s tokens (``Tokenizer.visualize``)."""
    ids = tok.encode_to_numpy(text, allowed_special=allowed_special, disallowed_special=disallowed_special)
    table = tok._tokens()
    data = tok.decode_bytes(ids)              # what the ids spell: the text as encoded (normalized)
    shown = data.decode("utf-8")
    offsets = table.offsets(data, ids).tolist() + [len(shown)]
    spans = [TokenSpan(i, table.spelled[i], shown[offsets[k]:offsets[k + 1]], i in table.special_ids)
             for k, i in enumerate(ids.tolist())]
    return TokenView(spans, tok.name)

