"""Data preparation: whole corpora encoded into token ids for training a model (corpus.py:
``encode_files``, ``load_bin``; ``bpe-fast encode``). It sits above the Tokenizer, whose
encoder it drives over files in bounded memory."""
