"""GPT-2's byte-level alphabet: each of the 256 bytes spelled as one printable character.

GPT-2's encoder.json and vocab.bpe, and Hugging Face's ByteLevel tokenizers, write token bytes
in this alphabet; Hugging Face's trainer also numbers the bytes in its code-point order, which
is how ``tie_break="huggingface"`` breaks ties.
"""
from __future__ import annotations

import functools

from .errors import TokenizerFileError


@functools.lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's table: printable bytes stand for themselves, the others for chars from U+0100 up."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@functools.lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


def token_to_str(token: bytes) -> str:
    table = bytes_to_unicode()
    return "".join(table[b] for b in token)


def str_to_token(text: str, where: str) -> bytes:
    """The bytes a string in GPT-2's alphabet spells; ``where`` names the file for errors."""
    table = unicode_to_bytes()
    try:
        return bytes(table[c] for c in text)
    except KeyError as exc:
        raise TokenizerFileError(f"{where}: {text!r} has {exc.args[0]!r}, which is not in GPT-2's "
                                 f"bytes-to-unicode alphabet") from None


def huggingface_byte_order() -> list[int]:
    """The 256 bytes in the order Hugging Face's BpeTrainer numbers them (by their character)."""
    table = bytes_to_unicode()
    return sorted(range(256), key=lambda b: table[b])
