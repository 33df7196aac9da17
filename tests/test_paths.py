"""Where data is found (paths.py): the demo corpus, the shared corpora and vocabularies, and
tiktoken's cache, each looked for where its variables say, in the documented order."""
from __future__ import annotations

from bpe_fast.paths import stdlib_sources


def test_demo_corpus_is_the_standard_library():
    files = stdlib_sources(limit_bytes=1 << 20)
    assert files and all(f.endswith(".py") for f in files)
    assert any(f.endswith("abc.py") for f in stdlib_sources())
