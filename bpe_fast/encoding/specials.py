"""Special tokens in the text to encode, by tiktoken's rule: ``allowed_special`` names those
encoded as their special ids, ``disallowed_special`` those whose text raises an EncodingError
(default: every special token not allowed); any other special token's text is ordinary text.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping

import regex

from ..errors import ArgumentError, ArgumentTypeError, EncodingError
from ..pretokenize.splitter import check_encodable, special_splitter


def is_all(value) -> bool:
    return isinstance(value, str) and value == "all"


def token_set(value, name: str) -> set[str]:
    """The special tokens ``allowed_special`` or ``disallowed_special`` names ("all" aside): a collection of str."""
    if isinstance(value, str):
        raise EncodingError(f"{name} takes \"all\" or a set of special tokens, not one string: "
                            f"write {name}={{{value!r}}}")
    try:
        tokens = set(value)
    except TypeError:
        raise ArgumentTypeError(f"{name} takes \"all\" or a set of special tokens, "
                                f"got {type(value).__name__}") from None
    odd = [t for t in tokens if not isinstance(t, str)]
    if odd:
        raise ArgumentTypeError(f"{name} holds {odd[0]!r}, which is no special token (a str)")
    for token in tokens:
        check_encodable(token, ArgumentError)
    return tokens


def allowed_and_disallowed(special_tokens: Mapping[str, int], allowed_special,
                           disallowed_special) -> tuple[set[str], set[str]]:
    """tiktoken's arguments as (allowed, disallowed) sets of special tokens, checked against the
    tokenizer's ``special_tokens``."""
    everything = set(special_tokens)
    allowed = everything if is_all(allowed_special) else token_set(allowed_special, "allowed_special")
    unknown = allowed - everything
    if unknown:
        raise EncodingError(f"allowed_special names tokens this tokenizer does not have: {sorted(unknown)}")
    if disallowed_special is None:            # tiktoken takes it (any false value) as none disallowed
        return allowed, set()
    if is_all(disallowed_special):
        return allowed, everything - allowed
    return allowed, token_set(disallowed_special, "disallowed_special")


@functools.lru_cache(maxsize=256)
def special_regex(tokens: frozenset[str]) -> regex.Pattern[str]:
    """The regex that finds any of these (one or more) special tokens, longest first; made once per set."""
    found = special_splitter(tokens)
    if found is None:
        raise ValueError("special_regex needs at least one special token")
    return found


def disallowed_error(text: str, disallowed: set[str], normalize: str | None, where: str = "text") -> EncodingError:
    """The error for ``text`` (``where``), which holds a disallowed special token: which one,
    where, and the two ways to encode it."""
    found = special_regex(frozenset(disallowed)).search(text)
    assert found is not None, "called only for a text an encoder found a disallowed special token in"
    normalized = f" (of its {normalize.upper()} form)" if normalize else ""
    return EncodingError(
        f"{where} contains the special token {found.group()!r} at character {found.start()}{normalized}; "
        f"pass allowed_special={{{found.group()!r}}} to encode it as a special token, or "
        f"disallowed_special=() to encode it as text")
