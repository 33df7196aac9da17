"""Stage 4, encoding: the native encoder (_encode.pyx and its .pxd files), tiktoken's surface
of a Tokenizer (tiktoken_surface.py) and token views (visualize.py). Encoding whole corpora
into token ids for a model's training is data preparation (prepare/)."""
