"""OpenAI's named encodings: tiktoken's pattern and special tokens, and the files each needs.

For each file: the address tiktoken downloads it from (tiktoken names its cached copy by the
SHA-1 of that address, see ``paths.tiktoken_cache_dir``) and the SHA-256 tiktoken publishes and
checks (``tiktoken_ext/openai_public.py``); bpe_fast checks the same hash whenever it loads one.
A leaf module (patterns only), so that formats/, registry.py and the CLI can all use it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..pretokenize.patterns import CL100K, GPT2, O200K

BLOB = "https://openaipublic.blob.core.windows.net"


@dataclass(frozen=True)
class EncodingFile:
    name: str          # the file name bpe_fast looks for (cl100k_base.tiktoken, gpt2_vocab.bpe, ...)
    url: str           # where tiktoken downloads it from
    sha256: str        # the hash tiktoken publishes and checks


@dataclass(frozen=True)
class NamedEncoding:
    """One of OpenAI's encodings: tiktoken's pattern and special tokens, and the files it needs."""
    pattern: str
    special_tokens: dict[str, int] = field(default_factory=dict)
    files: tuple[EncodingFile, ...] = ()


def _tiktoken_file(name: str, sha256: str) -> EncodingFile:
    return EncodingFile(f"{name}.tiktoken", f"{BLOB}/encodings/{name}.tiktoken", sha256)


# tiktoken_ext/openai_public.py. "gpt2" is r50k_base read from GPT-2's own two files, whose
# encoder.json holds its special token.
ENCODINGS = {
    "r50k_base": NamedEncoding(GPT2, {"<|endoftext|>": 50256}, (
        _tiktoken_file("r50k_base", "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"),)),
    "p50k_base": NamedEncoding(GPT2, {"<|endoftext|>": 50256}, (
        _tiktoken_file("p50k_base", "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"),)),
    "cl100k_base": NamedEncoding(CL100K, {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258,
                                          "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
                                          "<|endofprompt|>": 100276}, (
        _tiktoken_file("cl100k_base", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),)),
    "o200k_base": NamedEncoding(O200K, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}, (
        _tiktoken_file("o200k_base", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),)),
    "gpt2": NamedEncoding(GPT2, {}, (
        EncodingFile("gpt2_encoder.json", f"{BLOB}/gpt-2/encodings/main/encoder.json",
                     "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"),
        EncodingFile("gpt2_vocab.bpe", f"{BLOB}/gpt-2/encodings/main/vocab.bpe",
                     "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"))),
}


def encoding_of_file(filename: str) -> tuple[str, EncodingFile] | None:
    """(encoding name, file) for one of the named encodings' file names, else None."""
    for name, enc in ENCODINGS.items():
        for f in enc.files:
            if f.name == filename:
                return name, f
    return None
