"""The workshop: teaching material, kept apart from the library's stages.

- ``classic.py``: the seed notebooks' tokenizers, from words to bytes (a word tokenizer,
  Sennrich et al.'s BPE with ``</w>``, minbpe's basic byte-level BPE beside sentencepiece).
- ``ladder/``: the profiling ladder, one BPE trainer written six ways up to bpe_fast's own
  kernel, and its harness (``bpe-fast profile``).

Both are read next to ``notebooks/profiling_workshop.ipynb``. The workshop may use the library;
no stage of the library imports the workshop (``tests/test_architecture.py`` checks it), so the
teaching code can change without touching what ``import bpe_fast`` loads.
"""
